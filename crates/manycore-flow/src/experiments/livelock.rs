//! Receive livelock (the paper's Figure 6, after Mogul and Ramakrishnan):
//! events arrive at a device faster than the machine can do the work they
//! ask for. What matters is the useful work completed, and whether it
//! holds up past capacity or collapses.
//!
//! The device is a pipe; a generator thread writes 8-byte events into it
//! at the offered rate (in bursts, non-blocking: an event that does not fit
//! in the pipe is dropped at the device, like a full NIC ring). Each event
//! asks for `work` of computation.
//!
//! * [`Design::Flow`]: on each core, a kernel thread reads a batch of
//!   events from the device through the reactor; its receiver does the
//!   batch's work and only then makes the next read. A completion needs a
//!   named receiver, so the device is read only as fast as the cores can
//!   work: excess events stay in the pipe and are dropped there, costing
//!   the cores nothing.
//! * [`Design::ThreadPerEvent`]: a dispatcher thread reads the device with
//!   blocking reads and starts a thread per event, which does the work:
//!   every event is taken in eagerly, as an interrupt-driven kernel would.
//!   Live threads are capped at [`THREAD_CAP`] (events beyond are dropped)
//!   so that the machine survives the experiment.

use crate::{pipe, FlowError, Instance, IoResult, Kernel, Reactor};
use manycore_rt::Runtime;
use manycore_sync::deadline_in;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The design under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Design {
    /// Zero-wait threads, completions to named receivers (see the module).
    Flow,
    /// A blocking dispatcher and a thread per event.
    ThreadPerEvent,
}

/// Live worker threads at most in [`Design::ThreadPerEvent`].
pub const THREAD_CAP: usize = 1024;

/// Events one read takes at most.
const BATCH: usize = 64;

/// One point of the livelock curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivelockPoint {
    /// The design.
    pub design: Design,
    /// Offered events per second.
    pub offered_rate: u64,
    /// Events offered during the period.
    pub offered: u64,
    /// Events the device took (the rest did not fit and were dropped).
    pub accepted: u64,
    /// Events whose work completed within the period: the useful work.
    pub completed: u64,
    /// Events the design took in but turned away (thread cap).
    pub rejected: u64,
    /// The period.
    pub period: Duration,
}

/// The unit of work of an event: spins for about `iters` steps, giving up
/// if `stop` is set (checked every 4096 steps); true if the work was done.
/// Public for the bench's other designs, which must do the same work.
pub fn work(iters: u64, stop: &AtomicBool) -> bool {
    let mut acc = 0u64;
    for i in 0..iters {
        acc = std::hint::black_box(acc.wrapping_mul(6364136223846793005).wrapping_add(i));
        if i % 4096 == 0 && stop.load(Ordering::Relaxed) {
            return false;
        }
    }
    std::hint::black_box(acc);
    true
}

/// Steps of [`work`] per `d`, measured here (a few milliseconds): the
/// fastest of five probes, so that a probe slowed by another thread (which
/// would make every event's work shorter than `d`) does not count.
pub fn calibrate(d: Duration) -> u64 {
    let stop = AtomicBool::new(false);
    let probe = 200_000u64;
    let per = (0..5)
        .map(|_| {
            let t = Instant::now();
            work(probe, &stop);
            t.elapsed().as_nanos().max(1) as f64 / probe as f64
        })
        .fold(f64::INFINITY, f64::min);
    (d.as_nanos() as f64 / per).max(1.0) as u64
}

fn io_err(_: std::io::Error) -> FlowError {
    FlowError::Shutdown
}

/// Offers `rate` events per second, each asking for `work` of computation,
/// to `design` with `cores` cores (the flow design's runtime; the
/// thread-per-event design's threads are the kernel's to schedule), for
/// `period`, and counts the useful work done.
pub fn livelock(
    design: Design,
    rate: u64,
    work_per_event: Duration,
    period: Duration,
    cores: usize,
) -> Result<LivelockPoint, FlowError> {
    let iters = calibrate(work_per_event);
    let (rx, tx) = device().map_err(io_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicU64::new(0));
    let rejected = Arc::new(AtomicU64::new(0));
    let consumer = match design {
        Design::Flow => Consumer::flow(rx, cores, iters, &stop, &completed)?,
        Design::ThreadPerEvent => Consumer::threads(rx, iters, &stop, &completed, &rejected),
    };
    // A period that does not fit the clock (`Duration::MAX`) runs for a century.
    let (offered, accepted) = generate(&tx, rate, deadline_in(period));
    stop.store(true, Ordering::Relaxed);
    let done = completed.load(Ordering::Relaxed);
    drop(tx);
    consumer.finish();
    Ok(LivelockPoint {
        design,
        offered_rate: rate,
        offered,
        accepted,
        completed: done,
        rejected: rejected.load(Ordering::Relaxed),
        period,
    })
}

/// The experiment's device: a pipe (read end, write end) whose write end
/// is non-blocking, so that an event that does not fit is dropped at the
/// device.
pub fn device() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (rx, tx) = pipe()?;
    crate::raw::fd::set_nonblocking(tx.as_fd(), true)?;
    Ok((rx, tx))
}

/// The experiment's generator: writes 8-byte events into `tx` at `rate`
/// until `until`, in bursts every 100 µs; returns (offered, accepted).
pub fn generate(tx: impl AsFd, rate: u64, until: Instant) -> (u64, u64) {
    let start = Instant::now();
    let (mut offered, mut accepted) = (0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        let now = Instant::now();
        if now >= until {
            return (offered, accepted);
        }
        let due = (now - start).as_secs_f64() * rate as f64;
        let n = (due as u64).saturating_sub(offered).min(8192);
        if n > 0 {
            buf.clear();
            for k in 0..n {
                buf.extend_from_slice(&(offered + k).to_le_bytes());
            }
            offered += n;
            // A partial write takes whole events only (8-byte writes into a
            // pipe with room are whole); the rest are dropped.
            if let Ok(w) = crate::raw::fd::write(tx.as_fd(), &buf) {
                accepted += (w / 8) as u64;
            }
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

enum Consumer {
    Flow {
        rt: Runtime,
        reactor: Reactor,
    },
    Threads {
        dispatcher: std::thread::JoinHandle<()>,
        live: Arc<AtomicUsize>,
    },
}

impl Consumer {
    fn flow(
        rx: OwnedFd,
        cores: usize,
        iters: u64,
        stop: &Arc<AtomicBool>,
        completed: &Arc<AtomicU64>,
    ) -> Result<Self, FlowError> {
        let rt = Runtime::builder()
            .cores(cores.max(1))
            .build()
            .map_err(|_| FlowError::Shutdown)?;
        let reactor = Reactor::new().map_err(io_err)?;
        let dev = Arc::new(reactor.register(rx).map_err(io_err)?);
        for c in rt.cores() {
            let (d, s, k) = (dev.clone(), stop.clone(), completed.clone());
            Instance::<(), Kernel>::new(c, 0, move |ctx, _| receive(ctx, d, iters, s, k))?;
        }
        Ok(Consumer::Flow { rt, reactor })
    }

    fn threads(
        rx: OwnedFd,
        iters: u64,
        stop: &Arc<AtomicBool>,
        completed: &Arc<AtomicU64>,
        rejected: &Arc<AtomicU64>,
    ) -> Self {
        let live = Arc::new(AtomicUsize::new(0));
        let (s, k, r, l) = (
            stop.clone(),
            completed.clone(),
            rejected.clone(),
            live.clone(),
        );
        let dispatcher = std::thread::spawn(move || {
            let mut rx = File::from(rx);
            let mut buf = [0u8; 8 * BATCH];
            // Blocking reads; the generator's end closing ends them.
            while let Ok(n) = rx.read(&mut buf) {
                if n == 0 || s.load(Ordering::Relaxed) {
                    break;
                }
                for _ in 0..n / 8 {
                    if l.load(Ordering::Relaxed) >= THREAD_CAP {
                        r.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    l.fetch_add(1, Ordering::Relaxed);
                    let (s2, k2, l2) = (s.clone(), k.clone(), l.clone());
                    let spawned =
                        std::thread::Builder::new()
                            .stack_size(64 * 1024)
                            .spawn(move || {
                                if work(iters, &s2) && !s2.load(Ordering::Relaxed) {
                                    k2.fetch_add(1, Ordering::Relaxed);
                                }
                                l2.fetch_sub(1, Ordering::Relaxed);
                            });
                    if spawned.is_err() {
                        l.fetch_sub(1, Ordering::Relaxed);
                        r.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        Consumer::Threads { dispatcher, live }
    }

    /// Stops the consumer and waits (bounded) for its threads.
    fn finish(self) {
        match self {
            Consumer::Flow { rt, reactor } => {
                reactor.shutdown();
                rt.shutdown();
            }
            Consumer::Threads { dispatcher, live } => {
                let _ = dispatcher.join();
                // Workers see `stop` within 4096 steps.
                let end = Instant::now() + Duration::from_secs(10);
                while live.load(Ordering::Relaxed) > 0 && Instant::now() < end {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

/// A core's receive loop: read a batch, do its work, then read again.
fn receive(
    ctx: &crate::Ctx<'_, Kernel>,
    dev: Arc<crate::Device>,
    iters: u64,
    stop: Arc<AtomicBool>,
    completed: Arc<AtomicU64>,
) {
    if stop.load(Ordering::Relaxed) {
        return;
    }
    let d = dev.clone();
    let handler = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        let Some(Ok(events)) = got.into_iter().next() else {
            return;
        };
        for _ in 0..events.len() / 8 {
            if work(iters, &stop) && !stop.load(Ordering::Relaxed) {
                completed.fetch_add(1, Ordering::Relaxed);
            }
        }
        receive(ctx, d, iters, stop, completed);
    });
    if let Ok(h) = handler {
        dev.read(ctx, 8 * BATCH, h.slot(0));
    }
}
