//! What the benches share to measure: the batch driver ([`run_batches`]),
//! with which all pingpong rows are measured the same way (a row supplies
//! `batch(n)`, which performs `n` operations and returns how long they took
//! by its own clock; the driver calibrates `n`, runs repetitions within a
//! time budget, and keeps per-repetition and per-batch figures); timing one
//! call ([`time`]); the CPU an idle runtime burns ([`idle_cpu_ms_per_s`]);
//! the two CPUs two-thread rows pin to; and bounded waiting (every wait for
//! a partner gives up after [`PARTNER_TIMEOUT`] with an error: on a shared
//! VM a partner may be descheduled for milliseconds, never for seconds
//! unless something is wrong).

use std::time::{Duration, Instant};

/// How long any wait for a partner thread may take before the row fails.
pub const PARTNER_TIMEOUT: Duration = Duration::from_secs(5);

/// The time budget of one case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Seconds for all repetitions together.
    pub secs: f64,
    /// Repetitions (at least 1).
    pub reps: usize,
    /// Target length of one batch as a fraction of one repetition's budget.
    pub batch_fraction: f64,
}

impl Plan {
    /// For latency rows: ~1000 short batches per repetition (p99 comes from
    /// them, so a batch should be short enough to show a stall).
    pub fn latency(secs: f64, reps: usize) -> Self {
        Self {
            secs,
            reps: reps.max(1),
            batch_fraction: 0.001,
        }
    }
    /// For throughput rows: ~10 batches per repetition (the end-of-batch
    /// handshake is amortised over many messages).
    pub fn throughput(secs: f64, reps: usize) -> Self {
        Self {
            secs,
            reps: reps.max(1),
            batch_fraction: 0.1,
        }
    }
    /// One of this plan's repetitions as a plan of its own: the same
    /// budget per repetition and the same batch length (for interleaving
    /// the repetitions of several rows).
    pub fn one_rep(&self) -> Self {
        Self {
            secs: self.secs / self.reps.max(1) as f64,
            reps: 1,
            batch_fraction: self.batch_fraction,
        }
    }
    fn rep_budget(&self) -> Duration {
        Duration::from_secs_f64((self.secs / self.reps as f64).max(1e-4))
    }
    fn batch_target(&self) -> Duration {
        let t = self.rep_budget().as_secs_f64() * self.batch_fraction;
        Duration::from_secs_f64(t.clamp(20e-6, 0.1))
    }
}

/// What the driver measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// Nanoseconds per operation, one figure per repetition.
    pub per_rep_ns: Vec<f64>,
    /// Nanoseconds per operation, one figure per batch (all repetitions).
    pub per_batch_ns: Vec<f64>,
    /// Operations performed (calibration included).
    pub ops: u64,
}

impl Samples {
    /// Adds another run's figures (more repetitions of the same row).
    pub fn merge(&mut self, other: Samples) {
        self.per_rep_ns.extend(other.per_rep_ns);
        self.per_batch_ns.extend(other.per_batch_ns);
        self.ops += other.ops;
    }
    /// Median over repetitions, ns per operation.
    pub fn median_ns(&self) -> Option<f64> {
        crate::stats::median(&self.per_rep_ns)
    }
    /// Median of per-batch means, ns per operation: the typical speed while
    /// both sides run (insensitive to a repetition's few long stalls).
    pub fn p50_ns(&self) -> Option<f64> {
        crate::stats::median(&self.per_batch_ns)
    }
    /// 99th percentile of per-batch means, ns per operation.
    pub fn p99_ns(&self) -> Option<f64> {
        crate::stats::p99(&self.per_batch_ns)
    }
    /// Median throughput over repetitions, millions of operations per second.
    pub fn median_mops(&self) -> Option<f64> {
        let per: Vec<f64> = self
            .per_rep_ns
            .iter()
            .filter(|v| **v > 0.0)
            .map(|ns| 1e3 / ns)
            .collect();
        crate::stats::median(&per)
    }
}

/// How long `f` took (its result is kept from the optimiser).
pub fn time<R>(f: impl FnOnce() -> R) -> Duration {
    let t = Instant::now();
    std::hint::black_box(f());
    t.elapsed()
}

/// Process CPU time per second of wall time (ms/s) while whatever `setup`
/// returns is alive (a runtime with nothing to do) and the calling thread
/// sleeps: settle for `settle`, then measure over `window`.
pub fn idle_cpu_ms_per_s<T>(
    settle: Duration,
    window: Duration,
    setup: impl FnOnce() -> Result<T, String>,
) -> Result<f64, String> {
    use manycore_sync::cpu::process_cpu_time;
    let guard = setup()?;
    std::thread::sleep(settle);
    let (c0, t0) = (process_cpu_time(), Instant::now());
    std::thread::sleep(window);
    let (c1, t1) = (process_cpu_time(), Instant::now());
    drop(guard);
    let cpu = c1.saturating_sub(c0).as_secs_f64() * 1e3;
    Ok(cpu / (t1 - t0).as_secs_f64())
}

/// Largest batch the calibration may choose.
const MAX_BATCH: u64 = 1 << 24;

/// Runs `batch` under `plan`: a warm-up of three single operations, a
/// calibration that picks `n` so that a batch takes about the plan's batch
/// target, then `plan.reps` repetitions, each running batches of `n` until its
/// share of the budget is spent (at least one batch each).
pub fn run_batches(
    plan: Plan,
    mut batch: impl FnMut(u64) -> Result<Duration, String>,
) -> Result<Samples, String> {
    let target = plan.batch_target().as_secs_f64();
    let mut s = Samples::default();
    // Warm-up: the first operations also wait for the partner thread to be
    // scheduled (tens of ms on a loaded VM), so they say nothing about n.
    for _ in 0..3 {
        batch(1)?;
        s.ops += 1;
    }
    // Calibration: double n until the *fastest* per-operation time seen so
    // far says a batch of n reaches the target; a batch slowed by a stall
    // does not stop the doubling early.
    let mut n = 1u64;
    let mut best = f64::INFINITY;
    let calib_start = Instant::now();
    loop {
        let t = batch(n)?.as_secs_f64();
        s.ops += n;
        best = best.min(t / n as f64);
        if best * n as f64 >= target
            || n >= MAX_BATCH
            || calib_start.elapsed() > plan.rep_budget() * 2
        {
            break;
        }
        n *= 2;
    }
    if best > 0.0 && best.is_finite() {
        n = ((target / best).ceil() as u64).clamp(1, MAX_BATCH);
    }
    for _ in 0..plan.reps {
        let start = Instant::now();
        let (mut ops, mut time) = (0u64, Duration::ZERO);
        loop {
            let t = batch(n)?;
            ops += n;
            s.ops += n;
            time += t;
            s.per_batch_ns.push(t.as_secs_f64() * 1e9 / n as f64);
            if start.elapsed() >= plan.rep_budget() {
                break;
            }
        }
        s.per_rep_ns.push(time.as_secs_f64() * 1e9 / ops as f64);
    }
    Ok(s)
}

/// Spins (with `spin_loop`) until `done()` holds; gives up with an error
/// naming `what` after [`PARTNER_TIMEOUT`]. The clock is not read on the fast
/// path (a clock read can cost more than a cache-line round trip on a VM): only
/// after the first 4096 checks, and then once every 1024.
#[inline]
pub fn spin_until(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    for _ in 0..4096 {
        if done() {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    loop {
        for _ in 0..1024 {
            if done() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > PARTNER_TIMEOUT {
            return Err(format!("{what}: partner silent for {PARTNER_TIMEOUT:?}"));
        }
    }
}

/// Like [`spin_until`], but without the `pause` hint on the hot path: the
/// raw-atomic baseline must be the physical limit, and on a virtual machine
/// tight `pause` loops can trigger pause-loop exits (the hypervisor
/// deschedules the vCPU), which would make the baseline slower than the
/// code it is the limit for. Still bounded: the clock is read every 64 Ki
/// polls and the wait fails after [`PARTNER_TIMEOUT`].
pub fn spin_until_hot(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let start = Instant::now();
    loop {
        for _ in 0..65536 {
            if done() {
                return Ok(());
            }
        }
        if start.elapsed() > PARTNER_TIMEOUT {
            return Err(format!("{what}: partner silent for {PARTNER_TIMEOUT:?}"));
        }
        std::hint::spin_loop();
    }
}

/// The two CPUs the rows pin their two threads to: the first two of the
/// process's original CPU set, or `None` when it has fewer than two (then
/// nothing is pinned).
pub fn cpu_pair() -> Option<(usize, usize)> {
    match manycore_sync::cpu::original() {
        [a, b, ..] => Some((*a, *b)),
        _ => None,
    }
}

/// How many CPUs the process's original CPU set has.
pub fn cpu_count() -> usize {
    manycore_sync::cpu::original().len()
}

/// Pins the calling thread to `cpu` if there is one; a failure to pin is not
/// fatal (the figure is still measured, only less stable).
pub fn pin(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let _ = manycore_sync::cpu::pin_current(c);
    }
}

/// Joins a thread whose result is a `Result<T, String>`, turning a panic into an error.
pub fn join<T>(h: std::thread::JoinHandle<Result<T, String>>, what: &str) -> Result<T, String> {
    h.join().map_err(|_| format!("{what}: thread panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_counts_and_reps() {
        let plan = Plan::latency(0.02, 3);
        let mut calls = 0;
        let s = run_batches(plan, |n| {
            calls += 1;
            // A fake clock: 100 ns per operation.
            Ok(Duration::from_nanos(100 * n))
        })
        .unwrap();
        assert_eq!(s.per_rep_ns.len(), 3);
        assert!(s.per_batch_ns.len() >= 3);
        assert!(s.per_rep_ns.iter().all(|v| (*v - 100.0).abs() < 1e-6));
        assert!((s.median_ns().unwrap() - 100.0).abs() < 1e-6);
        assert!((s.p99_ns().unwrap() - 100.0).abs() < 1e-6);
        assert!((s.median_mops().unwrap() - 10.0).abs() < 1e-9);
        assert!(calls > 0);
    }

    #[test]
    fn one_rep_plans_merge_like_one_plan() {
        let plan = Plan::latency(0.03, 3);
        let one = plan.one_rep();
        assert_eq!(one.reps, 1);
        assert_eq!(one.rep_budget(), plan.rep_budget());
        assert_eq!(one.batch_target(), plan.batch_target());
        let mut all = Samples::default();
        for k in 1..=3u64 {
            // Repetition k runs at k * 100 ns per operation.
            let s = run_batches(one, |n| Ok(Duration::from_nanos(100 * k * n))).unwrap();
            assert_eq!(s.per_rep_ns.len(), 1);
            all.merge(s);
        }
        assert_eq!(all.per_rep_ns.len(), 3);
        assert!((all.median_ns().unwrap() - 200.0).abs() < 1e-6);
        assert!(all.ops > 3);
    }

    #[test]
    fn driver_propagates_errors() {
        let r = run_batches(Plan::latency(0.01, 2), |_| Err("boom".to_string()));
        assert_eq!(r, Err("boom".to_string()));
    }

    #[test]
    fn spin_until_succeeds() {
        let mut i = 0;
        assert!(spin_until("x", || {
            i += 1;
            i > 10
        })
        .is_ok());
    }
}
