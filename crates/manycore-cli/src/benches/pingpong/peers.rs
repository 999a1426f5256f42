//! The peer rows of the pingpong benchmark: the same round trip and the same
//! one-way stream done without manycore, between two threads pinned to two
//! different CPUs of the original CPU set.
//!
//! * `raw-atomic`: two cache-padded atomics, each side spinning (bounded) on
//!   the other's; the physical limit of a cache-line round trip.
//! * `raw-futex`: the same two words, but each side sleeps on a futex
//!   ([`EventCount`]) until its turn: the sleep/wake round trip.
//! * `std-mpsc`, `crossbeam-channel`: a pair of channels and an echo thread.
//! * `rtrb` and `crossbeam-channel` (bounded) carrying u64s one way.
//!
//! Every row measures on the initiating thread with [`run_batches`], and every
//! wait for the partner is bounded by [`PARTNER_TIMEOUT`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use manycore_sync::{CachePadded, EventCount};

use crate::measure::{
    cpu_pair, join, pin, run_batches, spin_until, spin_until_hot, Plan, Samples, PARTNER_TIMEOUT,
};

/// Runs `partner` on a thread pinned to the second CPU, then `initiator`
/// on one pinned to the first, and waits for both; the initiator's result is
/// the row's, and a failure of either fails the row. The initiator must let
/// the partner know when it is done (a stop flag, or dropping its end of a
/// channel), and every wait of either must be bounded.
fn two_threads(
    what: &str,
    initiator: impl FnOnce() -> Result<Samples, String> + Send + 'static,
    partner: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<Samples, String> {
    let cpus = cpu_pair();
    let cannot = |e| format!("{what}: cannot spawn: {e}");
    let p = std::thread::Builder::new()
        .name(format!("{what}-partner"))
        .spawn(move || {
            pin(cpus.map(|c| c.1));
            partner()
        })
        .map_err(cannot)?;
    let i = std::thread::Builder::new()
        .name(format!("{what}-initiator"))
        .spawn(move || {
            pin(cpus.map(|c| c.0));
            initiator()
        })
        .map_err(cannot)?;
    let r = join(i, what);
    let p = join(p, what);
    let samples = r?;
    p?;
    Ok(samples)
}

/// The words two sides ping-pong on, each on its own cache line.
#[derive(Debug, Default)]
struct Words {
    ping: CachePadded<AtomicU64>,
    pong: CachePadded<AtomicU64>,
    stop: CachePadded<AtomicBool>,
    ping_ec: CachePadded<EventCount>,
    pong_ec: CachePadded<EventCount>,
}

/// The words of one run, for each side.
fn words() -> (Arc<Words>, Arc<Words>) {
    let w = Arc::new(Words::default());
    (w.clone(), w)
}

/// Raw atomic ping-pong: the physical limit.
pub fn raw_atomic(plan: Plan) -> Result<Samples, String> {
    let (w, wp) = words();
    two_threads(
        "raw-atomic",
        move || {
            let mut seq = 0u64;
            let r = run_batches(plan, |n| {
                let t = Instant::now();
                for _ in 0..n {
                    seq += 1;
                    // A locked swap rather than a plain store: it drains the
                    // store buffer at once, so the partner sees it soonest (the
                    // runtime publishes with a fence too; the baseline must be
                    // at least as fast as anything built on it). AcqRel; its
                    // Release half pairs with the partner's Acquire load of `ping`.
                    w.ping.swap(seq, Ordering::AcqRel);
                    // Acquire; pairs with the partner's Release store of `pong`.
                    spin_until_hot("raw-atomic", || w.pong.load(Ordering::Acquire) == seq)?;
                }
                Ok(t.elapsed())
            });
            w.stop.store(true, Ordering::Relaxed);
            r
        },
        move || {
            let w = wp;
            let mut last = 0u64;
            loop {
                let mut next = last;
                spin_until_hot("raw-atomic partner", || {
                    // Acquire; pairs with the initiator's Release store of `ping`.
                    next = w.ping.load(Ordering::Acquire);
                    next != last || w.stop.load(Ordering::Relaxed)
                })?;
                if next == last {
                    return Ok(());
                }
                last = next;
                // Locked swap, as above. AcqRel; its Release half pairs with
                // the initiator's Acquire load of `pong`.
                w.pong.swap(last, Ordering::AcqRel);
            }
        },
    )
}

/// Waits on `ec` (no spinning) until `done()` holds, at most [`PARTNER_TIMEOUT`].
fn futex_wait(ec: &EventCount, what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + PARTNER_TIMEOUT;
    loop {
        if done() {
            return Ok(());
        }
        let key = ec.prepare_wait();
        if done() {
            ec.cancel_wait();
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if !ec.wait_timeout(key, left) && !done() && Instant::now() >= deadline {
            return Err(format!("{what}: partner silent for {PARTNER_TIMEOUT:?}"));
        }
    }
}

/// Raw futex ping-pong: each side sleeps until its turn.
pub fn raw_futex(plan: Plan) -> Result<Samples, String> {
    let (w, wp) = words();
    two_threads(
        "raw-futex",
        move || {
            let mut seq = 0u64;
            let r = run_batches(plan, |n| {
                let t = Instant::now();
                for _ in 0..n {
                    seq += 1;
                    // Release; pairs with the partner's Acquire load of `ping`.
                    w.ping.store(seq, Ordering::Release);
                    w.ping_ec.notify_one(); // fences (SeqCst) before looking for a sleeper
                                            // Acquire; pairs with the partner's Release store of `pong`.
                    futex_wait(&w.pong_ec, "raw-futex", || {
                        w.pong.load(Ordering::Acquire) == seq
                    })?;
                }
                Ok(t.elapsed())
            });
            w.stop.store(true, Ordering::Relaxed);
            w.ping_ec.notify_all();
            r
        },
        move || {
            let w = wp;
            let mut last = 0u64;
            loop {
                let mut next = last;
                futex_wait(&w.ping_ec, "raw-futex partner", || {
                    // Acquire; pairs with the initiator's Release store of `ping`.
                    next = w.ping.load(Ordering::Acquire);
                    next != last || w.stop.load(Ordering::Relaxed)
                })?;
                if next == last {
                    return Ok(());
                }
                last = next;
                // Release; pairs with the initiator's Acquire load of `pong`.
                w.pong.store(last, Ordering::Release);
                w.pong_ec.notify_one();
            }
        },
    )
}

/// A channel pair for the echo rows: what the initiator owns, what the echo owns.
fn echo_round_trips<Tx: Send + 'static, Rx: Send + 'static>(
    what: &'static str,
    plan: Plan,
    (to_echo, from_echo): (Tx, Rx),
    (echo_rx, echo_tx): (Rx, Tx),
    send: fn(&Tx, u64) -> Result<(), ()>,
    recv: fn(&Rx) -> Result<u64, bool>,
) -> Result<Samples, String> {
    let echo = move || -> Result<(), String> {
        loop {
                match recv(&echo_rx) {
                    Ok(v) => {
                        if send(&echo_tx, v + 1).is_err() {
                            return Ok(());
                        }
                    }
                    Err(true) => return Ok(()), // disconnected: the initiator is done
                    Err(false) => {
                        return Err(format!(
                            "{what} echo: partner silent for {PARTNER_TIMEOUT:?}"
                        ))
                    }
                }
        }
    };
    let initiator = move || {
            let mut x = 0u64;
            let r = run_batches(plan, |n| {
                let t = Instant::now();
                for _ in 0..n {
                    send(&to_echo, x).map_err(|_| format!("{what}: echo gone"))?;
                    x = recv(&from_echo)
                        .map_err(|_| format!("{what}: no answer in {PARTNER_TIMEOUT:?}"))?;
                }
                Ok(t.elapsed())
            });
            drop(to_echo);
            r
    };
    two_threads(what, initiator, echo)
}

/// `std::sync::mpsc` round trips through an echo thread.
pub fn std_mpsc(plan: Plan) -> Result<Samples, String> {
    use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
    let (a_tx, a_rx) = channel::<u64>();
    let (b_tx, b_rx) = channel::<u64>();
    echo_round_trips::<Sender<u64>, Receiver<u64>>(
        "std-mpsc",
        plan,
        (a_tx, b_rx),
        (a_rx, b_tx),
        |tx, v| tx.send(v).map_err(|_| ()),
        |rx| match rx.recv_timeout(PARTNER_TIMEOUT) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Disconnected) => Err(true),
            Err(RecvTimeoutError::Timeout) => Err(false),
        },
    )
}

/// `crossbeam-channel` (bounded(1), the usual rendezvous-ish ping-pong) round
/// trips through an echo thread.
pub fn crossbeam(plan: Plan) -> Result<Samples, String> {
    use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
    let (a_tx, a_rx) = bounded::<u64>(1);
    let (b_tx, b_rx) = bounded::<u64>(1);
    echo_round_trips::<Sender<u64>, Receiver<u64>>(
        "crossbeam-channel",
        plan,
        (a_tx, b_rx),
        (a_rx, b_tx),
        |tx, v| tx.send_timeout(v, PARTNER_TIMEOUT).map_err(|_| ()),
        |rx| match rx.recv_timeout(PARTNER_TIMEOUT) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Disconnected) => Err(true),
            Err(RecvTimeoutError::Timeout) => Err(false),
        },
    )
}

/// Capacity of the one-way peer queues (u64 slots).
pub const STREAM_CAPACITY: usize = 1024;

/// Counters a one-way consumer publishes.
#[derive(Debug, Default)]
struct Stream {
    received: CachePadded<AtomicU64>,
    sum: CachePadded<AtomicU64>,
}

/// A value that fills one cache line (the item of `rtrb-line`).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct Line(u64, [u64; 7]);

/// What a one-way stream moves: u64s, or one u64 per cache line.
pub trait Item: Send + 'static {
    /// The item carrying `v`.
    fn new(v: u64) -> Self;
    /// The value it carries.
    fn value(&self) -> u64;
}
impl Item for u64 {
    fn new(v: u64) -> Self {
        v
    }
    fn value(&self) -> u64 {
        *self
    }
}
impl Item for Line {
    fn new(v: u64) -> Self {
        Line(v, [0; 7])
    }
    fn value(&self) -> u64 {
        self.0
    }
}

/// One-way throughput over an `rtrb` SPSC ring of u64: the producer pushes
/// `n` values (spinning, bounded, while the ring is full) and then waits until
/// the consumer has counted them. The consumer publishes its count whenever
/// it finds the ring empty.
pub fn rtrb_stream(plan: Plan) -> Result<Samples, String> {
    rtrb_items::<u64>(plan)
}

/// [`rtrb_stream`] with one u64 per 64-byte item: every message moves its own
/// cache line, as a manycore message does. The ceiling of any design that
/// moves one message per line between these two CPUs.
pub fn rtrb_line_stream(plan: Plan) -> Result<Samples, String> {
    rtrb_items::<Line>(plan)
}

fn rtrb_items<T: Item>(plan: Plan) -> Result<Samples, String> {
    let (mut prod, mut cons) = rtrb::RingBuffer::<T>::new(STREAM_CAPACITY);
    let st = Arc::new(Stream::default());
    let st2 = st.clone();
    let consumer = move || {
            let (mut count, mut sum) = (0u64, 0u64);
            let mut idle_since: Option<Instant> = None;
            loop {
                match cons.pop() {
                    Ok(v) => {
                        count += 1;
                        sum = sum.wrapping_add(v.value());
                        idle_since = None;
                    }
                    Err(_) => {
                        st2.sum.store(sum, Ordering::Relaxed);
                        // Release; pairs with the producer's Acquire load.
                        st2.received.store(count, Ordering::Release);
                        if cons.is_abandoned() && cons.is_empty() {
                            return Ok(());
                        }
                        let since = *idle_since.get_or_insert_with(Instant::now);
                        if since.elapsed() > PARTNER_TIMEOUT {
                            return Err(format!(
                                "rtrb consumer: producer silent for {PARTNER_TIMEOUT:?}"
                            ));
                        }
                        std::hint::spin_loop();
                    }
                }
            }
    };
    let producer = move || {
            let mut sent = 0u64;
            run_batches(plan, |n| {
                let t = Instant::now();
                for i in 0..n {
                    let mut v = T::new(i);
                    loop {
                        match prod.push(v) {
                            Ok(()) => break,
                            Err(rtrb::PushError::Full(back)) => {
                                v = back;
                                spin_until("rtrb", || !prod.is_full())?;
                            }
                        }
                    }
                }
                sent += n;
                spin_until("rtrb", || st.received.load(Ordering::Acquire) >= sent)?;
                Ok(t.elapsed())
            })
    };
    two_threads("rtrb", producer, consumer)
}

/// One-way throughput over a bounded `crossbeam-channel` of u64 (same
/// protocol as [`rtrb_stream`], with blocking send and receive).
pub fn crossbeam_stream(plan: Plan) -> Result<Samples, String> {
    use crossbeam_channel::{bounded, RecvTimeoutError, TryRecvError};
    let (tx, rx) = bounded::<u64>(STREAM_CAPACITY);
    let st = Arc::new(Stream::default());
    let st2 = st.clone();
    let consumer = move || {
            let (mut count, mut sum) = (0u64, 0u64);
            loop {
                match rx.try_recv() {
                    Ok(v) => {
                        count += 1;
                        sum = sum.wrapping_add(v);
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return Ok(()),
                    Err(TryRecvError::Empty) => {}
                }
                st2.sum.store(sum, Ordering::Relaxed);
                // Release; pairs with the producer's Acquire load.
                st2.received.store(count, Ordering::Release);
                match rx.recv_timeout(PARTNER_TIMEOUT) {
                    Ok(v) => {
                        count += 1;
                        sum = sum.wrapping_add(v);
                    }
                    Err(RecvTimeoutError::Disconnected) => return Ok(()),
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(format!(
                            "crossbeam consumer: producer silent for {PARTNER_TIMEOUT:?}"
                        ))
                    }
                }
            }
    };
    let producer = move || {
            let mut sent = 0u64;
            let r = run_batches(plan, |n| {
                let t = Instant::now();
                for i in 0..n {
                    tx.send_timeout(i, PARTNER_TIMEOUT).map_err(|_| {
                        format!("crossbeam-channel: consumer stuck for {PARTNER_TIMEOUT:?}")
                    })?;
                }
                sent += n;
                wait_count(&st.received, sent, "crossbeam-channel")?;
                Ok(t.elapsed())
            });
            drop(tx);
            r
    };
    two_threads("crossbeam-channel", producer, consumer)
}

/// Waits until `counter >= target`: spins briefly, then yields (the consumer
/// may be asleep in a blocking receive and need the CPU time).
fn wait_count(counter: &AtomicU64, target: u64, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + PARTNER_TIMEOUT;
    let mut spins = 0u32;
    // Acquire; pairs with the consumer's Release store.
    while counter.load(Ordering::Acquire) < target {
        if spins < 1000 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            if Instant::now() >= deadline {
                return Err(format!("{what}: consumer silent for {PARTNER_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Smoke tests: each row runs briefly and returns samples. No timing checks.
    fn tiny() -> Plan {
        Plan::latency(0.01, 1)
    }

    #[test]
    fn rows_run() {
        for (name, f) in [
            (
                "raw-atomic",
                raw_atomic as fn(Plan) -> Result<Samples, String>,
            ),
            ("raw-futex", raw_futex),
            ("std-mpsc", std_mpsc),
            ("crossbeam", crossbeam),
            ("rtrb", rtrb_stream),
            ("crossbeam-stream", crossbeam_stream),
        ] {
            let s = f(tiny()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.per_rep_ns.len(), 1, "{name}");
            assert!(s.ops > 0, "{name}");
        }
    }
}
