//! The I/O path of the CEFOS paper's Figure 4 (Kusakabe, Taniguchi,
//! Amamiya, *A Study of a Continuation-based Fine-grain Multithreaded
//! Operating System CEFOS*), as zero-wait threads against simulated devices:
//!
//! ```text
//! sender (user) -> gate (kernel-interface, exclusive) -> syscall (kernel)
//!   -> semaphore (kernel) -> device (kernel, exclusive: one request per
//!   device at a time) ~~ simulated device, round trip RTT ~~>
//!   handler (kernel) -> receiver (user)
//! ```
//!
//! * A sender continues to the gate with the call number, its argument and
//!   the slot of its receiver. It may not continue to a kernel thread
//!   directly: the typed handles make that a compile error.
//! * The gate lets one request into the kernel at a time: it holds its gate
//!   until the request is queued at its device's semaphore. Under
//!   `self-continuation`, a request that finds the gate taken re-signals
//!   itself and retries (FUCE's mechanism); under `queue`, it waits in the
//!   gate's FIFO software queue (CEFOS's remedy). The run prints how many
//!   self-continuations each policy cost, as the paper's Figures 9 and 10.
//! * The device thread holds its device until the handler has the data:
//!   the device's gate is the paper's semaphore with its request queue, and
//!   a release hands the device to the next queued request (6-3).
//! * The simulated device is an ordinary thread (the paper's
//!   `virtual_hw_thread`): it spins for the round-trip time, then delivers
//!   the completion as a continuation signal to the handler instance.
//!
//! `cargo run --release -p manycore-flow --example syscall -- [calls] [rtt_us] [devices] [cores]`

use manycore_flow::{
    Exclusion, Gate, GateHold, GateStats, Instance, Kernel, KernelInterface, Outside, Slot,
    Template, User,
};
use manycore_rt::Runtime;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A system call on its way through the kernel.
struct Request {
    /// The call number (here: which device).
    call: usize,
    arg: u64,
    /// The user thread that receives the result.
    receiver: Slot<u64, User>,
    /// The kernel entry gate, held until the request reaches its semaphore.
    entry: Option<GateHold>,
}

/// What the device thread hands the simulated device: the argument and the
/// handler instance's slot for the completion.
type DeviceJob = (u64, Slot<u64, Kernel>);

/// A simulated device: spins for `rtt` per request, then signals the
/// completion to the request's handler, as a kernel-mode continuation.
fn device(jobs: mpsc::Receiver<DeviceJob>, rtt: Duration) {
    let irq = Outside::<Kernel>::new();
    for (arg, handler) in jobs {
        let until = Instant::now() + rtt;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let _ = irq.signal(&handler, arg * 2 + 1);
    }
}

struct Report {
    took: Duration,
    entry: GateStats,
    devices: Vec<GateStats>,
}

fn run(policy: Exclusion, calls: usize, rtt: Duration, devices: usize, cores: usize) -> Report {
    let rt = Runtime::builder().cores(cores).build().expect("runtime");
    let core = |i: usize| rt.core(i % cores).clone();

    // Devices and their threads, bottom up.
    let mut device_gates = Vec::new();
    let mut device_threads = Vec::new();
    let mut semaphores: Vec<Template<Request, Kernel>> = Vec::new();
    for d in 0..devices {
        let (jobs, rx) = mpsc::channel::<DeviceJob>();
        device_threads.push(std::thread::spawn(move || device(rx, rtt)));
        let busy = Gate::new(Exclusion::Queue);
        // device_thread: takes the device along until the handler is done,
        // issues the request, and names the handler that gets the data.
        let device_thread = Template::<Request, Kernel>::exclusive(1, &busy, move |ctx, r| {
            let Some(r) = r.into_iter().next() else {
                return;
            };
            let held = ctx.hold_gate();
            let receiver = r.receiver;
            let handler = Instance::<u64, Kernel>::new(ctx.core(), 1, move |ctx, data| {
                let _ = ctx.signal(&receiver, data[0]);
                drop(held); // the next queued request gets the device
            });
            if let Ok(h) = handler {
                let _ = jobs.send((r.arg, h.slot(0)));
            }
        });
        device_gates.push(busy);
        // semaphore_thread: continues to the device thread; if the device is
        // busy, the device's gate queues the request.
        let on = core(d + 1);
        semaphores.push(Template::<Request, Kernel>::new(1, move |ctx, r| {
            let Some(mut r) = r.into_iter().next() else {
                return;
            };
            drop(r.entry.take()); // in the kernel: the next call may enter
            if let Ok(dev) = device_thread.instance(&on) {
                let _ = ctx.continue_to(&dev, 0, r);
            }
        }));
    }
    let semaphores = Arc::new(semaphores);
    // syscall_thread: the system call's body, for its device.
    let syscall = Template::<Request, Kernel>::new(1, move |ctx, r| {
        let Some(r) = r.into_iter().next() else {
            return;
        };
        let s = &semaphores[r.call % semaphores.len()];
        if let Ok(sem) = s.instance(ctx.core()) {
            let _ = ctx.continue_to(&sem, 0, r);
        }
    });
    // gate_thread: the entry from user space; exclusive under `policy`.
    let entry = Gate::new(policy);
    let gate_thread = Template::<Request, KernelInterface>::exclusive(1, &entry, move |ctx, r| {
        let Some(mut r) = r.into_iter().next() else {
            return;
        };
        r.entry = ctx.hold_gate();
        if let Ok(sys) = syscall.instance(ctx.core()) {
            let _ = ctx.continue_to(&sys, 0, r);
        }
    });

    // Senders (user threads), created dynamically, one per call, each with
    // its receiver.
    let (done, results) = mpsc::channel::<(usize, u64)>();
    let t = Instant::now();
    for i in 0..calls {
        let done = done.clone();
        let gate_thread = gate_thread.clone();
        let on = core(i);
        let sender = Instance::<(), User>::new(&on, 0, move |ctx, _| {
            let Ok(receiver) = Instance::<u64, User>::new(ctx.core(), 1, move |_ctx, data| {
                let _ = done.send((i, data[0]));
            }) else {
                return;
            };
            let Ok(gate) = gate_thread.instance(ctx.core()) else {
                return;
            };
            let call = i % devices;
            let req = Request {
                call,
                arg: i as u64,
                receiver: receiver.slot(0),
                entry: None,
            };
            let _ = ctx.continue_to(&gate, 0, req);
        });
        sender.expect("sender");
    }
    let mut seen = vec![false; calls];
    for _ in 0..calls {
        let (i, data) = results
            .recv_timeout(Duration::from_secs(60))
            .expect("a system call completed");
        assert_eq!(data, i as u64 * 2 + 1);
        seen[i] = true;
    }
    let took = t.elapsed();
    assert!(seen.iter().all(|&s| s));
    rt.shutdown();
    drop(gate_thread);
    for h in device_threads {
        h.join().expect("device thread");
    }
    Report {
        took,
        entry: entry.stats(),
        devices: device_gates.iter().map(Gate::stats).collect(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let arg = |n: usize, d: usize| args.get(n).copied().unwrap_or(d);
    let (calls, rtt_us, devices, cores) =
        (arg(0, 80), arg(1, 4), arg(2, 1).max(1), arg(3, 2).max(1));
    let rtt = Duration::from_micros(rtt_us as u64);
    println!(
        "{calls} system calls, device round trip {rtt:?}, {devices} device(s), {cores} core(s)"
    );
    println!(
        "{:<18} {:>10} {:>19} {:>13} {:>16} {:>17}",
        "gate policy",
        "total",
        "self-continuations",
        "gate queued",
        "device queued",
        "device handoffs"
    );
    for policy in [Exclusion::SelfContinuation, Exclusion::Queue] {
        let r = run(policy, calls, rtt, devices, cores);
        let dq: u64 = r.devices.iter().map(|s| s.queued).sum();
        let dh: u64 = r.devices.iter().map(|s| s.handoffs).sum();
        let name = match policy {
            Exclusion::SelfContinuation => "self-continuation",
            Exclusion::Queue => "queue",
        };
        println!(
            "{:<18} {:>10.2?} {:>19} {:>13} {:>16} {:>17}",
            name, r.took, r.entry.self_continuations, r.entry.queued, dq, dh
        );
    }
    Ok(())
}
