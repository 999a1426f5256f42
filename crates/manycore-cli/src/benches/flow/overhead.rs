//! The overhead of a fired instance: a chain of firings on one core (each
//! body creates the next instance and signals it), and a stream of
//! cross-core signals against the same signals made on the owner core and
//! a stream of plain `Core::spawn`s.

use std::cell::RefCell;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use manycore::{Core, Runtime};
use manycore_flow::{Ctx, Instance, User};

use crate::measure::PARTNER_TIMEOUT;

/// What a local chain is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// Each body creates an instance with one input on its own core and
    /// signals it (`continue_to`): create, claim, deliver, fire.
    Instance,
    /// Each body starts the next with `Ctx::spawn` on its own core (an
    /// instance with no inputs: create and fire).
    Spawn,
    /// Each closure `Core::spawn`s the next to its own core: the runtime's
    /// local queue alone, the floor under both.
    CoreSpawn,
}

impl Local {
    /// Every kind, in the order the rows run.
    pub const ALL: [Local; 3] = [Local::Instance, Local::Spawn, Local::CoreSpawn];

    /// The record's impl name.
    pub fn name(self) -> &'static str {
        match self {
            Local::Instance => "flow",
            Local::Spawn => "flow-spawn",
            Local::CoreSpawn => "core-spawn",
        }
    }
}

/// Waits for the answer of a chain or stream; a dropped sender means a
/// step could not be made (the runtime refused it).
fn answer<T>(rx: &mpsc::Receiver<T>, what: &str) -> Result<T, String> {
    rx.recv_timeout(PARTNER_TIMEOUT).map_err(|e| match e {
        mpsc::RecvTimeoutError::Timeout => format!("{what}: no answer within {PARTNER_TIMEOUT:?}"),
        mpsc::RecvTimeoutError::Disconnected => format!("{what}: a step was refused"),
    })
}

/// A chain of `n` firings on core 0 of `rt`, timed on the core from
/// before the first to the end of the last.
pub fn local_chain(rt: &Runtime, how: Local, n: u64) -> Result<Duration, String> {
    let (tx, rx) = mpsc::channel::<Duration>();
    let core = rt.core(0).clone();
    let started = match how {
        Local::Instance => Instance::<(), User>::new(&core, 0, move |ctx, _| {
            instance_chain(ctx, n, Instant::now(), tx)
        })
        .map(drop)
        .map_err(|e| e.to_string()),
        Local::Spawn => Instance::<(), User>::new(&core, 0, move |ctx, _| {
            spawn_chain(ctx, n, Instant::now(), tx)
        })
        .map(drop)
        .map_err(|e| e.to_string()),
        Local::CoreSpawn => {
            let c = core.clone();
            core.spawn(move || core_chain(c, n, Instant::now(), tx))
                .map_err(|e| e.to_string())
        }
    };
    started?;
    answer(&rx, "local chain")
}

fn instance_chain(ctx: &Ctx<'_, User>, left: u64, t0: Instant, tx: mpsc::Sender<Duration>) {
    if left == 0 {
        let _ = tx.send(t0.elapsed());
        return;
    }
    // A failure drops `tx` with the body: the caller sees the refusal.
    if let Ok(next) = Instance::<u64, User>::new(ctx.core(), 1, move |ctx, _| {
        instance_chain(ctx, left - 1, t0, tx)
    }) {
        let _ = ctx.continue_to(&next, 0, left);
    }
}

fn spawn_chain(ctx: &Ctx<'_, User>, left: u64, t0: Instant, tx: mpsc::Sender<Duration>) {
    if left == 0 {
        let _ = tx.send(t0.elapsed());
        return;
    }
    let _ = ctx.spawn(ctx.core(), move |ctx| spawn_chain(ctx, left - 1, t0, tx));
}

fn core_chain(core: Core, left: u64, t0: Instant, tx: mpsc::Sender<Duration>) {
    if left == 0 {
        let _ = tx.send(t0.elapsed());
        return;
    }
    let c = core.clone();
    let _ = core.spawn(move || core_chain(c, left - 1, t0, tx));
}

/// The receiving core's end of a stream: how many arrivals are still to
/// come, and where to report the time of the last one. A thread-local of
/// the receiving core, so that an arrival touches no shared line.
struct Sink {
    left: u64,
    done: mpsc::Sender<Instant>,
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// One arrival on the receiving core.
fn arrive() {
    SINK.with(|s| {
        let mut s = s.borrow_mut();
        let last = match s.as_mut() {
            Some(k) => {
                k.left -= 1;
                k.left == 0
            }
            None => false,
        };
        if last {
            if let Some(k) = s.take() {
                let _ = k.done.send(Instant::now());
            }
        }
    });
}

/// What a stream of the `cross` part sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cross {
    /// Continuation signals from core 0 to instances waiting on core 1.
    Signal,
    /// The same signals to the same kind of instances, made on core 1
    /// itself: the owner's share of a signal (deliver, fire, free), with
    /// nothing crossing cores.
    Local,
    /// Plain `Core::spawn`s from core 0 to core 1.
    CoreSpawn,
}

impl Cross {
    /// Every kind, in the order the rows run (the ratio row divides the
    /// first by the last).
    pub const ALL: [Cross; 3] = [Cross::Signal, Cross::Local, Cross::CoreSpawn];

    /// The record's impl name.
    pub fn name(self) -> &'static str {
        match self {
            Cross::Signal => "flow-signal",
            Cross::Local => "flow-local",
            Cross::CoreSpawn => "core-spawn",
        }
    }
}

/// A stream of `n` operations to core 1 of `rt`: continuation signals to
/// instances waiting on core 1 (created there beforehand, untimed), sent
/// from core 0 ([`Cross::Signal`]) or from core 1 itself
/// ([`Cross::Local`]), or plain `Core::spawn`s from core 0 of a closure
/// carrying the same value. Timed from the first send to the last arrival
/// on core 1.
pub fn cross_stream(rt: &Runtime, how: Cross, n: u64) -> Result<Duration, String> {
    let (c0, c1) = (rt.core(0).clone(), rt.core(1).clone());
    let (done_tx, done_rx) = mpsc::channel::<Instant>();
    let on1 = c1.clone();
    let flow = how != Cross::CoreSpawn;
    let receivers = c1
        .call(move || {
            SINK.with(|s| {
                *s.borrow_mut() = Some(Sink {
                    left: n,
                    done: done_tx,
                })
            });
            if !flow {
                return Ok(Vec::new());
            }
            (0..n)
                .map(|_| Instance::<u64, User>::new(&on1, 1, |_, _| arrive()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())
        })
        .timeout(PARTNER_TIMEOUT)
        .wait()
        .map_err(|e| format!("arming core 1: {e}"))??;
    let (start_tx, start_rx) = mpsc::channel::<Instant>();
    let from = if how == Cross::Local { c1.clone() } else { c0 };
    let started = Instance::<(), User>::new(&from, 0, move |ctx, _| {
        let t0 = Instant::now();
        if flow {
            for (k, r) in receivers.into_iter().enumerate() {
                let _ = ctx.continue_to(&r, 0, k as u64);
            }
        } else {
            for k in 0..n {
                let _ = c1.spawn(move || {
                    std::hint::black_box(k);
                    arrive()
                });
            }
        }
        let _ = start_tx.send(t0);
    });
    started.map_err(|e| e.to_string())?;
    let t0 = answer(&start_rx, "cross-core stream (sender)")?;
    let t1 = answer(&done_rx, "cross-core stream (receiver)")?;
    Ok(t1.saturating_duration_since(t0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_and_streams_complete() {
        let rt = Runtime::builder().cores(2).build().unwrap();
        for how in Local::ALL {
            assert!(local_chain(&rt, how, 1000).is_ok(), "{how:?}");
        }
        for how in Cross::ALL {
            assert!(cross_stream(&rt, how, 1000).is_ok(), "{how:?}");
        }
        rt.shutdown();
    }
}
