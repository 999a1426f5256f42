//! Probe `crossq`: a stream of cross-core operations from core 0 to core 1
//! (the bench's `cross` part), split into the sender's loop and the whole
//! stream, for several ways of sending:
//!
//! * `flow`: `continue_to(&receiver, 0, k)` then the handle dropped (the
//!   bench's flow row);
//! * `flow-keep`: the same, the handles dropped after the timing;
//! * `move`: a `Core::spawn` carrying the receiver's handle, which core 1
//!   reads and drops (no signal; core 0 never touches the instance);
//! * `move-read`: the same, after reading the receiver's claim word on
//!   core 0 (`is_complete`);
//! * `move-clone`: a `Core::spawn` carrying a clone of the receiver's
//!   handle (one read-modify-write of its count on core 0);
//! * `spawn`: a plain `Core::spawn` (the bench's core-spawn row);
//! * `local`: the `flow` loop run on core 1 itself (local signals to the
//!   same pre-made instances): what core 1 pays to deliver, fire and free
//!   them, with no cross-core traffic.
//!
//! `drops` (as WAY) runs apart: the handles of `N` instances that core 0
//! has signalled (and core 1 has fired) dropped on core 0, timed until core
//! 1 has run a message sent after them; it prints ns per handle.
//!
//! `cargo run --release -p manycore-probes --bin crossq -- [N=100000] [REPS=7] [WAY | drops]`
//!
//! Prints, per way, the median over the repetitions of ns per operation of
//! the sender's loop and of the whole stream (first send to last arrival),
//! the stream's minimum (on a loaded machine, the repetition that ran with
//! both cores to itself) and its mean (stalls included, as in the bench's
//! rows). The bench's `cross` rows run batches of about 57 000 signals
//! (160 000 spawns) at `--secs 1 --reps 5` on a quiet machine: `N = 57000`
//! is the bench's length.
//!
//! Seen on the project's 2-vCPU VM (load 6, N = 5 000 to 50 000): spawn
//! 15-17 ns, local 59-61 ns, flow 159-450 ns (stream); figures and reading
//! in `docs/notes/2026-11-25-flow-cross.md`.

use std::cell::RefCell;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use manycore_flow::{Instance, User};
use manycore_probes::{arg, arg_str};
use manycore_rt::Runtime;

thread_local! {
    static LEFT: RefCell<Option<(u64, mpsc::Sender<Instant>)>> = const { RefCell::new(None) };
}

fn arrive() {
    LEFT.with(|l| {
        let mut l = l.borrow_mut();
        if let Some((left, _)) = l.as_mut() {
            *left -= 1;
            if *left == 0 {
                if let Some((_, tx)) = l.take() {
                    let _ = tx.send(Instant::now());
                }
            }
        }
    });
}

const WAYS: [&str; 7] = [
    "flow",
    "flow-keep",
    "move",
    "move-read",
    "move-clone",
    "spawn",
    "local",
];

/// Core `c1` expects `n` arrivals (the last one sends its time on the
/// returned channel); with `instances`, it also makes the `n` instances,
/// each of one input, whose firing is an arrival.
fn expect_arrivals(
    c1: &manycore_rt::Core,
    n: u64,
    instances: bool,
) -> (Vec<Instance<u64, User>>, mpsc::Receiver<Instant>) {
    let (done_tx, done_rx) = mpsc::channel();
    let on1 = c1.clone();
    let receivers = c1
        .call(move || {
            LEFT.with(|l| *l.borrow_mut() = Some((n, done_tx)));
            if !instances {
                return Vec::new();
            }
            (0..n)
                .map(|_| Instance::<u64, User>::new(&on1, 1, |_, _| arrive()).unwrap())
                .collect::<Vec<_>>()
        })
        .wait()
        .unwrap();
    (receivers, done_rx)
}

fn once(rt: &Runtime, way: &'static str, n: u64) -> (Duration, Duration) {
    let (c0, c1) = (rt.core(0).clone(), rt.core(1).clone());
    let (receivers, done_rx) = expect_arrivals(&c1, n, way != "spawn");
    let (tx, rx) = mpsc::channel();
    let from = if way == "local" { c1.clone() } else { c0 };
    Instance::<(), User>::new(&from, 0, move |ctx, _| {
        let mut kept = Vec::new();
        let t0 = Instant::now();
        match way {
            "flow" | "local" => {
                for (k, r) in receivers.into_iter().enumerate() {
                    let _ = ctx.continue_to(&r, 0, k as u64);
                }
            }
            "flow-keep" => {
                for (k, r) in receivers.iter().enumerate() {
                    let _ = ctx.continue_to(r, 0, k as u64);
                }
                kept = receivers;
            }
            "move" => {
                for r in receivers {
                    let _ = c1.spawn(move || {
                        std::hint::black_box(r.is_complete());
                        drop(r);
                        arrive()
                    });
                }
            }
            "move-read" => {
                for r in receivers {
                    std::hint::black_box(r.is_complete());
                    let _ = c1.spawn(move || {
                        drop(r);
                        arrive()
                    });
                }
            }
            "move-clone" => {
                for r in receivers.iter() {
                    let r = r.clone();
                    let _ = c1.spawn(move || {
                        drop(r);
                        arrive()
                    });
                }
                kept = receivers;
            }
            _ => {
                for k in 0..n {
                    let _ = c1.spawn(move || {
                        std::hint::black_box(k);
                        arrive()
                    });
                }
            }
        }
        let t1 = Instant::now();
        let _ = tx.send((t0, t1));
        drop(kept);
    })
    .unwrap();
    let (t0, t1) = rx.recv().unwrap();
    let t2 = done_rx.recv_timeout(Duration::from_secs(60)).unwrap();
    (t1 - t0, t2.saturating_duration_since(t0))
}

/// The handles of `n` fired instances dropped on core 0, timed until core
/// 1 has run what core 0 sent after them.
fn drops_once(rt: &Runtime, n: u64) -> f64 {
    let (c0, c1) = (rt.core(0).clone(), rt.core(1).clone());
    let (receivers, done_rx) = expect_arrivals(&c1, n, true);
    let (tx, rx) = mpsc::channel();
    Instance::<(), User>::new(&c0, 0, move |ctx, _| {
        for (k, r) in receivers.iter().enumerate() {
            let _ = ctx.continue_to(r, 0, k as u64);
        }
        let _ = tx.send(receivers);
    })
    .unwrap();
    let receivers = rx.recv().unwrap();
    done_rx.recv_timeout(Duration::from_secs(60)).unwrap();
    let (t_tx, t_rx) = mpsc::channel();
    let t_tx2 = t_tx.clone();
    Instance::<(), User>::new(&c0, 0, move |_, _| {
        let _ = t_tx.send(Instant::now());
        drop(receivers);
    })
    .unwrap();
    let c1b = c1.clone();
    Instance::<(), User>::new(&c0, 0, move |_, _| {
        let _ = c1b.spawn(move || {
            let _ = t_tx2.send(Instant::now());
        });
    })
    .unwrap();
    let t1 = t_rx.recv().unwrap();
    let t2 = t_rx.recv().unwrap();
    (t2 - t1).as_nanos() as f64 / n as f64
}

fn main() {
    if arg_str(3).is_some_and(|w| w == "drops") {
        let n: u64 = arg(1, 100_000);
        let rt = Runtime::builder().cores(2).build().unwrap();
        let mut v: Vec<f64> = (0..arg(2, 7)).map(|_| drops_once(&rt, n)).collect();
        v.sort_by(f64::total_cmp);
        println!(
            "drops: median {:.1} ns, min {:.1} ns per handle",
            v[v.len() / 2],
            v[0]
        );
        rt.shutdown();
        return;
    }
    let n: u64 = arg(1, 100_000);
    let reps: usize = arg(2, 7);
    let rt = Runtime::builder().cores(2).build().unwrap();
    let mut s: Vec<(Vec<f64>, Vec<f64>)> = WAYS.iter().map(|_| Default::default()).collect();
    for _ in 0..reps {
        for (i, w) in WAYS.iter().enumerate() {
            if arg_str(3).is_some_and(|only| only != *w) {
                continue;
            }
            let (a, b) = once(&rt, w, n);
            s[i].0.push(a.as_nanos() as f64 / n as f64);
            s[i].1.push(b.as_nanos() as f64 / n as f64);
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (w, (a, b)) in WAYS.iter().zip(s.iter_mut()) {
        if a.is_empty() {
            continue;
        }
        // The mean over the repetitions is what the bench's rows read (each
        // repetition's figure there is its batches' total time over their
        // total count): stalls count in it, as they do not in the minimum.
        let mean = b.iter().sum::<f64>() / b.len() as f64;
        let (sa, sb) = (med(a), med(b));
        println!(
            "{w:10} send loop {sa:8.1} ns/op   stream {sb:8.1} ns/op   (stream min {:.1}, mean {mean:.1})",
            b[0]
        );
    }
    rt.shutdown();
}
