//! The I/O path of the CEFOS paper's Figure 4 (Kusakabe, Taniguchi,
//! Amamiya, *A Study of a Continuation-based Fine-grain Multithreaded
//! Operating System CEFOS*), as zero-wait threads, against simulated devices
//! and against real file descriptors:
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
//! * A `sim` device is an ordinary thread (the paper's `virtual_hw_thread`):
//!   it spins for the round-trip time, then delivers the completion as a
//!   continuation signal to the handler instance.
//! * A `pipe` device is a pair of pipes registered with a [`Reactor`]: the
//!   device thread writes the request into one and reads the answer from
//!   the other, naming the handler as the read's receiver. A helper thread
//!   at the far end plays the hardware (blocking reads, a wait of the
//!   round-trip time, a write back). The reactor delivers the read's
//!   completion straight to the handler.
//!
//! `cargo run --release -p manycore-flow --example syscall -- [calls] [rtt_us] [devices] [cores] [sim|pipe|both]`

use manycore_flow::{
    pipe, Device, Exclusion, Gate, GateHold, GateStats, Instance, IoResult, Kernel,
    KernelInterface, Outside, Reactor, Slot, Template, User,
};
use manycore_rt::Runtime;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
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

/// The far end of a pipe device: reads a request, takes `rtt`, answers.
fn pipe_hardware(requests: OwnedFd, answers: OwnedFd, rtt: Duration) {
    let (mut rx, mut tx) = (File::from(requests), File::from(answers));
    let mut b = [0u8; 8];
    while rx.read_exact(&mut b).is_ok() {
        let until = Instant::now() + rtt;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let arg = u64::from_le_bytes(b);
        if tx.write_all(&(arg * 2 + 1).to_le_bytes()).is_err() {
            return;
        }
    }
}

/// A device as its device thread sees it.
#[derive(Clone)]
enum Hardware {
    /// A simulated device's job queue.
    Sim(mpsc::Sender<DeviceJob>),
    /// Two pipes registered with the reactor: requests out, answers in.
    Pipe { out: Arc<Device>, back: Arc<Device> },
}

/// Which devices to run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sim,
    Pipe,
}

struct Report {
    took: Duration,
    entry: GateStats,
    devices: Vec<GateStats>,
}

fn run(
    kind: Kind,
    policy: Exclusion,
    calls: usize,
    rtt: Duration,
    devices: usize,
    cores: usize,
) -> Report {
    let rt = Runtime::builder().cores(cores).build().expect("runtime");
    let reactor = Reactor::new().expect("reactor");
    let core = |i: usize| rt.core(i % cores).clone();

    // Devices and their threads, bottom up.
    let mut device_gates = Vec::new();
    let mut device_threads = Vec::new();
    let mut semaphores: Vec<Template<Request, Kernel>> = Vec::new();
    for d in 0..devices {
        let hw = match kind {
            Kind::Sim => {
                let (jobs, rx) = mpsc::channel::<DeviceJob>();
                device_threads.push(std::thread::spawn(move || device(rx, rtt)));
                Hardware::Sim(jobs)
            }
            Kind::Pipe => {
                let (req_rx, req_tx) = pipe().expect("pipe");
                let (ans_rx, ans_tx) = pipe().expect("pipe");
                device_threads.push(std::thread::spawn(move || {
                    pipe_hardware(req_rx, ans_tx, rtt)
                }));
                Hardware::Pipe {
                    out: Arc::new(reactor.register(req_tx).expect("register")),
                    back: Arc::new(reactor.register(ans_rx).expect("register")),
                }
            }
        };
        let busy = Gate::new(Exclusion::Queue);
        // device_thread: takes the device along until the handler is done,
        // issues the request, and names the handler that gets the data.
        let device_thread = Template::<Request, Kernel>::exclusive(1, &busy, move |ctx, r| {
            let Some(r) = r.into_iter().next() else {
                return;
            };
            let held = ctx.hold_gate();
            let receiver = r.receiver;
            match &hw {
                Hardware::Sim(jobs) => {
                    let handler = Instance::<u64, Kernel>::new(ctx.core(), 1, move |ctx, data| {
                        let _ = ctx.signal(&receiver, data[0]);
                        drop(held); // the next queued request gets the device
                    });
                    if let Ok(h) = handler {
                        let _ = jobs.send((r.arg, h.slot(0)));
                    }
                }
                Hardware::Pipe { out, back } => {
                    // The handler is the answer's receiver: the reactor
                    // signals it when the device has written the data.
                    let handler = Instance::<IoResult<Vec<u8>>, Kernel>::new(
                        ctx.core(),
                        1,
                        move |ctx, data| {
                            let v = match data.into_iter().next() {
                                Some(Ok(b)) if b.len() == 8 => {
                                    u64::from_le_bytes(b.try_into().unwrap_or_default())
                                }
                                _ => u64::MAX, // a device error: the caller sees it
                            };
                            let _ = ctx.signal(&receiver, v);
                            drop(held);
                        },
                    );
                    // Nobody waits for the write's count.
                    let sent = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {});
                    if let (Ok(h), Ok(sent)) = (handler, sent) {
                        back.read(ctx, 8, h.slot(0));
                        out.write(ctx, r.arg.to_le_bytes().to_vec(), sent.slot(0));
                    }
                }
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
    // Closes the pipe devices, which ends their far ends.
    reactor.shutdown();
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |n: usize, d: usize| -> Result<usize, std::num::ParseIntError> {
        args.get(n).map_or(Ok(d), |a| a.parse())
    };
    let (calls, rtt_us, devices, cores) = (
        num(0, 80)?,
        num(1, 4)?,
        num(2, 1)?.max(1),
        num(3, 2)?.max(1),
    );
    let kinds = match args.get(4).map(String::as_str) {
        Some("sim") => vec![Kind::Sim],
        Some("pipe") => vec![Kind::Pipe],
        _ => vec![Kind::Sim, Kind::Pipe],
    };
    let rtt = Duration::from_micros(rtt_us as u64);
    println!(
        "{calls} system calls, device round trip {rtt:?}, {devices} device(s), {cores} core(s)"
    );
    println!(
        "{:<6} {:<18} {:>10} {:>19} {:>13} {:>16} {:>17}",
        "device",
        "gate policy",
        "total",
        "self-continuations",
        "gate queued",
        "device queued",
        "device handoffs"
    );
    for kind in kinds {
        for policy in [Exclusion::SelfContinuation, Exclusion::Queue] {
            let r = run(kind, policy, calls, rtt, devices, cores);
            let dq: u64 = r.devices.iter().map(|s| s.queued).sum();
            let dh: u64 = r.devices.iter().map(|s| s.handoffs).sum();
            let name = match policy {
                Exclusion::SelfContinuation => "self-continuation",
                Exclusion::Queue => "queue",
            };
            let k = match kind {
                Kind::Sim => "sim",
                Kind::Pipe => "pipe",
            };
            println!(
                "{:<6} {:<18} {:>10.2?} {:>19} {:>13} {:>16} {:>17}",
                k, name, r.took, r.entry.self_continuations, r.entry.queued, dq, dh
            );
        }
    }
    Ok(())
}
