//! The `cores-1024` group: what a runtime of 1024 cores costs to build and
//! to hold, and that it works: `cores(1024)` with the Sleep policy, one call
//! from core 0 to every other core and back, the process's resident memory
//! (VmRSS) before, after building and after the calls. A ring between two
//! cores is made when they first talk, so memory grows with the cores and
//! the pairs that talked, not with the square of the cores: building costs
//! each core its thread and its few shared structures, and the calls add
//! one ring per core (core 0 to it) and the pages its first task touches.
//! A guard reads `MemAvailable` first and skips the group when the
//! estimate does not fit comfortably.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use manycore::{IdlePolicy, Runtime};

/// Cores of the runtime.
pub const CORES: usize = 1024;

/// Resident bytes a core costs once built, measured: about 10 KiB (its
/// thread's touched stack and bookkeeping, its mailbox, state and handoff
/// table), 9.5 to 10.6 KiB per core at 256, 1024 and 4096 cores.
const BYTES_PER_CORE: f64 = 10.5 * 1024.0;

/// Resident bytes the calls add per core, measured: its ring from core 0
/// (64 slots of 64 bytes, the index lines, the allocation's overhead) and
/// what its first task touches, 10.6 to 10.8 KiB per core at 256, 1024
/// and 4096 cores.
const BYTES_PER_CALLED_CORE: f64 = 10.8 * 1024.0;

/// The guard: the estimate times this, plus [`GUARD_SLACK_MIB`], must be available.
const GUARD_FACTOR: f64 = 1.25;
/// See [`GUARD_FACTOR`].
pub const GUARD_SLACK_MIB: f64 = 512.0;

/// Estimated memory of an n-core runtime after the group's calls, MiB:
/// linear in the cores (about 21 MiB at 1024).
pub fn estimate_mib(n: usize) -> f64 {
    n as f64 * (BYTES_PER_CORE + BYTES_PER_CALLED_CORE) / (1024.0 * 1024.0)
}

/// Memory the guard asks for, MiB, given the estimate.
pub fn guard_mib(estimate: f64) -> f64 {
    estimate * GUARD_FACTOR + GUARD_SLACK_MIB
}

/// A `kB` field of a `/proc` file, in MiB.
fn proc_kib(path: &str, field: &str) -> Option<f64> {
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}

/// The process's resident memory (VmRSS), MiB.
pub fn rss_mib() -> Option<f64> {
    proc_kib("/proc/self/status", "VmRSS:")
}

/// The machine's available memory (MemAvailable), MiB.
pub fn mem_available_mib() -> Option<f64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}

/// What the group found, phase by phase.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// VmRSS before building, MiB.
    Before(f64),
    /// Build time, and VmRSS after it.
    Built(Duration, f64),
    /// The build failed: the OS error code if there was one, and the message.
    BuildFailed(Option<i32>, String),
    /// The calls' time, and VmRSS after them.
    Called(Duration, f64),
    /// The calls failed.
    CallsFailed(String),
    /// Shutdown time, and VmRSS after it.
    ShutDown(Duration, f64),
}

/// Runs the group on a thread of its own and reports each phase as it
/// ends; a phase that takes longer than `bound` ends the report (the
/// thread is left behind, with whatever it holds). Returns the phases seen
/// and whether the last one stalled.
pub fn run(bound: Duration) -> (Vec<Phase>, bool) {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("kv-cores-1024".into())
        .spawn(move || phases(CORES, bound, &|p| drop(tx.send(p))));
    if let Err(e) = spawned {
        return (vec![Phase::BuildFailed(e.raw_os_error(), e.to_string())], false);
    }
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(bound) {
            Ok(p) => {
                let last = matches!(
                    p,
                    Phase::ShutDown(..) | Phase::BuildFailed(..) | Phase::CallsFailed(_)
                );
                seen.push(p);
                if last {
                    return (seen, false);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => return (seen, true),
            // The thread ended without a last phase: it panicked.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                seen.push(Phase::CallsFailed("the group's thread panicked".into()));
                return (seen, false);
            }
        }
    }
}

/// The phases, reported through `report` (an n-core runtime; `CORES` in the bench).
pub fn phases(n: usize, bound: Duration, report: &dyn Fn(Phase)) {
    report(Phase::Before(rss_mib().unwrap_or(f64::NAN)));
    let t = Instant::now();
    let rt = match Runtime::builder().cores(n).idle(IdlePolicy::Sleep).build() {
        Ok(rt) => rt,
        Err(e) => {
            let code = match &e {
                manycore::Error::Spawn(io) => io.raw_os_error(),
                _ => None,
            };
            return report(Phase::BuildFailed(code, e.to_string()));
        }
    };
    report(Phase::Built(t.elapsed(), rss_mib().unwrap_or(f64::NAN)));
    let others: Vec<_> = rt.cores()[1..].to_vec();
    let t = Instant::now();
    let r = rt
        .core(0)
        .call(move || {
            for c in &others {
                let i = c.index();
                let back = c.call(move || i).wait().map_err(|e| format!("core {i}: {e}"))?;
                if back != i {
                    return Err(format!("core {i} answered {back}"));
                }
            }
            Ok(())
        })
        .wait_timeout(bound);
    let el = t.elapsed();
    match r {
        Ok(Ok(())) => report(Phase::Called(el, rss_mib().unwrap_or(f64::NAN))),
        Ok(Err(e)) => return report(Phase::CallsFailed(e)),
        Err(e) => return report(Phase::CallsFailed(format!("core 0: {e}"))),
    }
    let t = Instant::now();
    rt.shutdown();
    drop(rt);
    report(Phase::ShutDown(t.elapsed(), rss_mib().unwrap_or(f64::NAN)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_linear_and_the_guard_fits_a_small_machine() {
        let e = estimate_mib(CORES);
        assert!((estimate_mib(2 * CORES) - 2.0 * e).abs() < 1e-9, "linear in cores");
        assert!((16.0..64.0).contains(&e), "{e} MiB for {CORES} cores");
        assert!(guard_mib(e) < 1024.0, "the guard asks {} MiB", guard_mib(e));
    }
}
