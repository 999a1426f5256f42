//! The livelock curve's third design: a tokio task per event. The same
//! device and generator as `manycore_flow::experiments::livelock`
//! (`experiments::device` and `experiments::generate`: a pipe the
//! generator writes 8-byte events into at the offered rate, in bursts
//! every 100 µs, non-blocking: an event that does not fit is dropped at
//! the device) and
//! the same work per event (the experiment's own spin loop and
//! calibration, `experiments::work` and `experiments::calibrate`); a
//! dispatcher thread reads the pipe (blocking reads of up to 64 events)
//! and spawns a task per event on a multi-thread tokio runtime, which
//! does the event's work. Every event is taken in, as in the
//! thread-per-event design, but a task costs no thread of its own.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore_flow::experiments::{calibrate, device, generate, work};

/// One point of the tokio design (the fields of the experiment's
/// `LivelockPoint` that the bench records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Events offered during the period.
    pub offered: u64,
    /// Events the device took.
    pub accepted: u64,
    /// Events whose work completed within the period.
    pub completed: u64,
}

/// Events one read takes at most (as in the experiment).
const BATCH: usize = 64;

/// Offers `rate` events per second, each asking for `work_per_event`, to
/// a tokio runtime of `workers` workers for `period`; counts the work
/// completed within the period.
pub fn livelock_tokio(
    rate: u64,
    work_per_event: Duration,
    period: Duration,
    workers: usize,
) -> Result<Point, String> {
    let iters = calibrate(work_per_event);
    let (rx, tx) = device().map_err(|e| format!("pipe: {e}"))?;
    let mut rx = File::from(rx);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicU64::new(0));
    let handle = rt.handle().clone();
    let (s, k) = (stop.clone(), completed.clone());
    let dispatcher = std::thread::Builder::new()
        .name("flow-bench-dispatch".into())
        .spawn(move || {
            let mut buf = [0u8; 8 * BATCH];
            // Blocking reads; the generator's end closing ends them.
            while let Ok(n) = rx.read(&mut buf) {
                if n == 0 || s.load(Ordering::Relaxed) {
                    break;
                }
                for _ in 0..n / 8 {
                    let (s2, k2) = (s.clone(), k.clone());
                    handle.spawn(async move {
                        if work(iters, &s2) && !s2.load(Ordering::Relaxed) {
                            k2.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            }
        })
        .map_err(|e| format!("dispatcher thread: {e}"))?;
    let (offered, accepted) = generate(&tx, rate, Instant::now() + period);
    stop.store(true, Ordering::Relaxed);
    let done = completed.load(Ordering::Relaxed);
    drop(tx);
    let _ = dispatcher.join();
    // Queued tasks see `stop` at their first step.
    rt.shutdown_timeout(Duration::from_secs(10));
    Ok(Point {
        offered,
        accepted,
        completed: done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_light_load_is_all_done() {
        let p = livelock_tokio(2000, Duration::from_micros(10), Duration::from_millis(50), 2)
            .unwrap();
        assert!(p.offered > 0 && p.accepted <= p.offered, "{p:?}");
        assert!(p.completed <= p.accepted, "{p:?}");
    }
}
