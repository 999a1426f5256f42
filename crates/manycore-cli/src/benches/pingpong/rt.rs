//! The manycore rows of the pingpong benchmark: a runtime with 2 cores per
//! row, core 0 driving core 1. The whole measuring loop ([`run_batches`])
//! runs inside one call on core 0, so the main thread only parks while it
//! waits: a main thread spinning on a short outer call per batch would steal
//! one of the two CPUs from the cores it measures.

use std::cell::Cell;
use std::time::{Duration, Instant};

use manycore::{Core, Runtime};

use crate::measure::{run_batches, Plan, Samples, PARTNER_TIMEOUT};
use super::Idle;

/// A 2-core runtime with idle policy `i`, pinned.
fn runtime(i: Idle) -> Result<Runtime, String> {
    Runtime::builder()
        .cores(2)
        .idle(i.policy())
        .pin(true)
        .build()
        .map_err(|e| format!("{}: cannot build the runtime: {e}", i.impl_name()))
}

/// How long a whole row may take before it gives up: its budget, the
/// calibration (up to two repetitions' worth), and a partner timeout.
fn row_timeout(plan: Plan) -> Duration {
    Duration::from_secs_f64(plan.secs * 2.0) + PARTNER_TIMEOUT
}

/// Runs `batch` under `plan` ([`run_batches`]) on core 0 of a fresh 2-core
/// runtime with policy `i`, with core 1 as the partner; waits for it
/// (bounded by [`row_timeout`]) and shuts the runtime down.
fn on_core0(
    i: Idle,
    plan: Plan,
    mut batch: impl FnMut(&Core, &str, u64) -> Result<Duration, String> + Send + 'static,
) -> Result<Samples, String> {
    let rt = runtime(i)?;
    let c1 = rt.core(1).clone();
    let name = i.impl_name();
    let s = rt
        .core(0)
        .call(move || run_batches(plan, |n| batch(&c1, name, n)))
        .wait_timeout(row_timeout(plan))
        .map_err(|e| format!("{name}: {e}"));
    rt.shutdown();
    s?
}

/// Round trips of `core1.call(move || x + 1).wait()` from a task on core 0.
pub fn round_trip(i: Idle, plan: Plan) -> Result<Samples, String> {
    on_core0(i, plan, |c1, name, n| {
            let t = Instant::now();
            let mut x = 0u64;
            for _ in 0..n {
                x = c1
                    .call(move || x + 1)
                    .wait()
                    .map_err(|e| format!("{name}: call: {e}"))?;
            }
            let el = t.elapsed();
            if x != n {
                return Err(format!("{name}: calls returned {x}, expected {n}"));
            }
            Ok(el)
    })
}

thread_local! {
    /// Sum of the payloads the spawned closures carried (per core thread).
    static SUM: Cell<u64> = const { Cell::new(0) };
    /// How many spawned closures ran on this core thread.
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

/// One-way throughput: `n` fire-and-forget `spawn`s from core 0 to core 1,
/// inside one `batch_spawns` scope (published in batches, as a stream
/// would be written), or with `plain` outside any scope (each spawn
/// published as it is made, the default),
/// each adding its captured u64 into a core-local sum; the end of a batch is
/// a `call` to core 1 that returns (and resets) the count and the sum.
pub fn spawn_stream(i: Idle, plain: bool, plan: Plan) -> Result<Samples, String> {
    on_core0(i, plan, move |c1, name, n| spawn_batch(c1, name, n, plain))
}

/// One batch of [`spawn_stream`], run on core 0: `n` spawns to `c1` (each
/// published at once if `plain`, else inside one `batch_spawns` scope),
/// then the call that checks the count and the sum; the time from the
/// first spawn to the call's answer. Public for the probe `packq`, which
/// times exactly this against rtrb.
pub fn spawn_batch(c1: &Core, name: &str, n: u64, plain: bool) -> Result<Duration, String> {
    let t = Instant::now();
    let stream = || {
        for v in 0..n {
            c1.spawn(move || {
                SUM.with(|s| s.set(s.get().wrapping_add(v)));
                COUNT.with(|c| c.set(c.get() + 1));
            })
            .map_err(|e| format!("{name}: spawn: {e}"))?;
        }
        Ok::<(), String>(())
    };
    if plain {
        stream()?;
    } else {
        manycore::batch_spawns(stream)?;
    }
    let (count, sum) = c1
        .call(|| (COUNT.with(|c| c.replace(0)), SUM.with(|s| s.replace(0))))
        .wait()
        .map_err(|e| format!("{name}: final call: {e}"))?;
    let el = t.elapsed();
    let want = n.wrapping_mul(n.wrapping_sub(1)) / 2;
    if count != n || sum != want {
        return Err(format!(
            "{name}: core 1 ran {count} closures (sum {sum}), expected {n} (sum {want})"
        ));
    }
    Ok(el)
}

/// A 2-core runtime with nothing to do (for the idle-CPU row).
pub fn idle_runtime(i: Idle) -> Result<Runtime, String> {
    runtime(i)
}
