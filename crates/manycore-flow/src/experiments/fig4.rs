//! The I/O path of the paper's Figure 4 as zero-wait threads, with
//! simulated devices (the paper's `virtual_hw_thread`: a thread that spins
//! for the device's round-trip time, then signals the handler):
//!
//! ```text
//! sender (user) -> gate (kernel-interface, exclusive) -> syscall (kernel)
//!   -> semaphore (kernel) -> device (kernel, exclusive per device)
//!   ~~ simulated device, round trip `rtt` ~~> handler (kernel) -> receiver (user)
//! ```
//!
//! The gate holds its gate until the request reaches its device's
//! semaphore; the device thread holds its device until the handler has the
//! data. `examples/syscall.rs` is the same program, written out for
//! reading.

use crate::{
    Ctx, Exclusion, Gate, GateHold, GateStats, Instance, Kernel, KernelInterface, Outside, Slot,
    Template, User,
};
use manycore_rt::Core;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A system call on its way through the kernel.
pub(crate) struct Request {
    /// The call's number (here: which device).
    call: usize,
    arg: u64,
    /// The user thread that receives the result.
    receiver: Slot<u64, User>,
    /// The kernel entry gate, held until the request reaches its semaphore.
    entry: Option<GateHold>,
}

type DeviceJob = (u64, Slot<u64, Kernel>);

/// Spins for `rtt` per request, then signals the completion to the
/// request's handler. Ends when its job queue closes or `closed` is set.
fn simulated_device(jobs: mpsc::Receiver<DeviceJob>, rtt: Duration, closed: Arc<AtomicBool>) {
    let irq = Outside::<Kernel>::new();
    loop {
        match jobs.recv_timeout(Duration::from_millis(10)) {
            Ok((arg, handler)) => {
                let until = Instant::now() + rtt;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                let _ = irq.signal(&handler, arg * 2 + 1);
            }
            Err(mpsc::RecvTimeoutError::Timeout) if !closed.load(Ordering::Relaxed) => {}
            Err(_) => return,
        }
    }
}

/// The kernel side of Figure 4 (gate, syscall, semaphores, devices) on a
/// runtime's cores.
pub(crate) struct Kernel4 {
    caller: Caller,
    entry: Gate,
    device_threads: Vec<JoinHandle<()>>,
    closed: Arc<AtomicBool>,
}

/// How senders make system calls (cheap to clone into receivers).
#[derive(Clone)]
pub(crate) struct Caller {
    gate_thread: Template<Request, KernelInterface>,
    devices: usize,
}

impl Kernel4 {
    /// Builds the kernel side: `devices` simulated devices of round trip
    /// `rtt`; device `d`'s threads run on core `d + 1` (mod the cores), the
    /// gate and syscall threads on the sender's core.
    pub(crate) fn new(cores: &[Core], policy: Exclusion, devices: usize, rtt: Duration) -> Self {
        let core = |i: usize| cores[i % cores.len()].clone();
        let mut device_threads = Vec::new();
        let closed = Arc::new(AtomicBool::new(false));
        let mut semaphores: Vec<Template<Request, Kernel>> = Vec::new();
        for d in 0..devices {
            let (jobs, rx) = mpsc::channel::<DeviceJob>();
            device_threads.push({
                let closed = closed.clone();
                std::thread::spawn(move || simulated_device(rx, rtt, closed))
            });
            let busy = Gate::new(Exclusion::Queue);
            let device_thread = Template::<Request, Kernel>::exclusive(1, &busy, move |ctx, r| {
                let Some(r) = r.into_iter().next() else {
                    return;
                };
                let held = ctx.hold_gate();
                let receiver = r.receiver;
                let handler = Instance::<u64, Kernel>::new(ctx.core(), 1, move |ctx, data| {
                    let _ = ctx.signal(&receiver, data[0]);
                    drop(held);
                });
                if let Ok(h) = handler {
                    let _ = jobs.send((r.arg, h.slot(0)));
                }
            });
            let on = core(d + 1);
            semaphores.push(Template::<Request, Kernel>::new(1, move |ctx, r| {
                let Some(mut r) = r.into_iter().next() else {
                    return;
                };
                drop(r.entry.take());
                if let Ok(dev) = device_thread.instance(&on) {
                    let _ = ctx.continue_to(&dev, 0, r);
                }
            }));
        }
        let semaphores = Arc::new(semaphores);
        let syscall = Template::<Request, Kernel>::new(1, move |ctx, r| {
            let Some(r) = r.into_iter().next() else {
                return;
            };
            let s = &semaphores[r.call % semaphores.len()];
            if let Ok(sem) = s.instance(ctx.core()) {
                let _ = ctx.continue_to(&sem, 0, r);
            }
        });
        let entry = Gate::new(policy);
        let gate_thread =
            Template::<Request, KernelInterface>::exclusive(1, &entry, move |ctx, r| {
                let Some(mut r) = r.into_iter().next() else {
                    return;
                };
                r.entry = ctx.hold_gate();
                if let Ok(sys) = syscall.instance(ctx.core()) {
                    let _ = ctx.continue_to(&sys, 0, r);
                }
            });
        Self {
            caller: Caller {
                gate_thread,
                devices,
            },
            entry,
            device_threads,
            closed,
        }
    }

    /// The senders' side.
    pub(crate) fn caller(&self) -> Caller {
        self.caller.clone()
    }

    /// Ends the simulated devices (bounded: they look at `closed` every
    /// 10 ms) and returns the entry gate's counters.
    pub(crate) fn finish(self) -> GateStats {
        self.closed.store(true, Ordering::Relaxed);
        let stats = self.entry.stats();
        drop(self.caller);
        for h in self.device_threads {
            let _ = h.join();
        }
        stats
    }
}

impl Caller {
    /// A sender's system call `i`: continues to a fresh gate instance on
    /// the sender's core; `receiver` gets `2 i + 1`.
    pub(crate) fn call(&self, ctx: &Ctx<'_, User>, i: u64, receiver: Slot<u64, User>) {
        let Ok(gate) = self.gate_thread.instance(ctx.core()) else {
            return;
        };
        let req = Request {
            call: i as usize % self.devices,
            arg: i,
            receiver,
            entry: None,
        };
        let _ = ctx.continue_to(&gate, 0, req);
    }
}
