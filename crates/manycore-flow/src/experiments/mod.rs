//! The paper's experiments (Kusakabe, Taniguchi, Amamiya, *A Study of a
//! Continuation-based Fine-grain Multithreaded Operating System CEFOS*,
//! sections 3 and 4) and the reactor's probes, as plain functions that
//! return numbers, for benches to call and print. Nothing here prints.
//!
//! Only with the `internals` feature: not a stable API. Each function
//! builds its own runtime (default idle policy) and tears it down; runs
//! are as short as their `period` says.
//!
//! * [`fig5`]: system calls completed in a fixed period through the
//!   Figure 4 program, for (devices, cores) and a simulated device round
//!   trip (Figure 5).
//! * [`fig7_11`]: total time and self-continuations for a batch of
//!   concurrent system calls, under self-continuation or the software
//!   queue (Figures 7 to 11).
//! * [`livelock`]: useful work completed as the offered event rate rises
//!   past capacity, for the flow design (a completion needs a named
//!   receiver) and a thread-per-event blocking design (Figure 6).
//! * [`reactor_round_trip`], [`reactor_stream`]: the reactor's latency and
//!   throughput per backend (the measurements behind [`Backend::Auto`]).

mod fig4;
mod livelock;
mod probe;

pub use livelock::{calibrate, device, generate, livelock, work, Design, LivelockPoint};
pub use probe::{reactor_round_trip, reactor_stream, RoundTrip, Stream, STREAM_READ};

use crate::{Backend, Exclusion, FlowError, Instance, User};
use fig4::{Caller, Kernel4};
use manycore_rt::Runtime;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// One point of Figure 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fig5Point {
    /// Simulated devices.
    pub devices: usize,
    /// Cores of the runtime.
    pub cores: usize,
    /// The devices' round trip.
    pub rtt: Duration,
    /// The period counted.
    pub period: Duration,
    /// System calls completed in the period.
    pub completed: u64,
}

/// Concurrent senders per device in [`fig5`]: enough to keep a device's
/// queue non-empty while its previous request travels through the kernel.
pub const FIG5_SENDERS_PER_DEVICE: usize = 4;

fn runtime(cores: usize) -> Result<Runtime, FlowError> {
    Runtime::builder()
        .cores(cores)
        .build()
        .map_err(|_| FlowError::Shutdown)
}

/// Figure 5: the Figure 4 program with `devices` simulated devices of round
/// trip `rtt` on `cores` cores, under the software queue at the gate, fed
/// by [`FIG5_SENDERS_PER_DEVICE`] senders per device in a closed loop (each
/// makes its next call when its receiver has the last one's result). Counts
/// the calls completed during `period`, after a warm-up of a tenth of it.
pub fn fig5(
    devices: usize,
    cores: usize,
    rtt: Duration,
    period: Duration,
) -> Result<Fig5Point, FlowError> {
    let (devices, cores) = (devices.max(1), cores.max(1));
    let rt = runtime(cores)?;
    let kernel = Kernel4::new(rt.cores(), Exclusion::Queue, devices, rtt);
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let senders = devices * FIG5_SENDERS_PER_DEVICE;
    for s in 0..senders {
        let (caller, done, stop) = (kernel.caller(), done.clone(), stop.clone());
        Instance::<(), User>::new(rt.core(s % cores), 0, move |ctx, _| {
            closed_loop(ctx, caller, s as u64, senders as u64, done, stop)
        })?;
    }
    std::thread::sleep(period / 10);
    let c0 = done.load(Ordering::Relaxed);
    std::thread::sleep(period);
    let c1 = done.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    rt.shutdown();
    kernel.finish();
    Ok(Fig5Point {
        devices,
        cores,
        rtt,
        period,
        completed: c1 - c0,
    })
}

/// A sender in a closed loop: call `i`; its receiver counts the result and
/// makes call `i + stride`, until `stop`.
fn closed_loop(
    ctx: &crate::Ctx<'_, User>,
    caller: Caller,
    i: u64,
    stride: u64,
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    let c = caller.clone();
    let receiver = Instance::<u64, User>::new(ctx.core(), 1, move |ctx, _| {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        done.fetch_add(1, Ordering::Relaxed);
        closed_loop(ctx, c, i + stride, stride, done, stop);
    });
    if let Ok(r) = receiver {
        caller.call(ctx, i, r.slot(0));
    }
}

/// One point of Figures 7 to 11.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatePoint {
    /// The gate's policy.
    pub policy: Exclusion,
    /// Concurrent system calls.
    pub calls: usize,
    /// Time from the first call to the last result (Figures 7, 11; divide
    /// by `calls` for Figure 8).
    pub total: Duration,
    /// Self-continuations at the entry gate (Figure 10; divide by `calls`
    /// for Figure 9).
    pub self_continuations: u64,
    /// Calls that waited in the gate's software queue.
    pub queued: u64,
}

/// Figures 7 to 11: `calls` system calls made at once (a sender each,
/// round-robin over the cores) through the Figure 4 program, with the entry
/// gate under `policy`. Waits at most 60 s for the results
/// (`Err(Timeout)` then).
pub fn fig7_11(
    policy: Exclusion,
    calls: usize,
    rtt: Duration,
    devices: usize,
    cores: usize,
) -> Result<GatePoint, FlowError> {
    let (devices, cores) = (devices.max(1), cores.max(1));
    let rt = runtime(cores)?;
    let kernel = Kernel4::new(rt.cores(), policy, devices, rtt);
    let (tx, rx) = mpsc::channel::<u64>();
    let t = Instant::now();
    for i in 0..calls {
        let (caller, tx) = (kernel.caller(), tx.clone());
        Instance::<(), User>::new(rt.core(i % cores), 0, move |ctx, _| {
            let receiver = Instance::<u64, User>::new(ctx.core(), 1, move |_, data| {
                let _ = tx.send(data[0]);
            });
            if let Ok(r) = receiver {
                caller.call(ctx, i as u64, r.slot(0));
            }
        })?;
    }
    drop(tx);
    let deadline = t + Duration::from_secs(60);
    let mut got = 0;
    while got < calls {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(_) => got += 1,
            Err(_) => break,
        }
    }
    let total = t.elapsed();
    rt.shutdown();
    let stats = kernel.finish();
    if got < calls {
        return Err(FlowError::Timeout);
    }
    Ok(GatePoint {
        policy,
        calls,
        total,
        self_continuations: stats.self_continuations,
        queued: stats.queued,
    })
}

/// The backends this kernel offers, for the probes ([`Backend::Epoll`]
/// always, [`Backend::IoUring`] where it opens).
pub fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Epoll];
    if crate::Reactor::with_backend(Backend::IoUring).is_ok_and(|r| r.backend() == Backend::IoUring)
    {
        v.push(Backend::IoUring);
    }
    v
}
