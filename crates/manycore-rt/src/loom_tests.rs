//! Loom models of manycore-rt's protocols (see `README.md` beside this
//! file), against the real `Mailbox`, ring, `EventCount` and completion
//! record. Run:
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release -p manycore-rt --lib loom_tests`

use crate::error::InvokeError;
use crate::mailbox::Mailbox;
use crate::raw::{completion_with_probe, HandoffTable, Message};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use manycore_ring::Consumer;
use std::sync::Arc;
use std::task::{Wake, Waker};

/// The receiver's side of the sleep protocol, for source 1: poll while its
/// bit is set; to sleep, clear bits (and fence), announce,
/// re-scan every ring, then wait; after a wakeup or a cancelled sleep, scan
/// every ring. Returns the first message.
fn receive_or_sleep(mb: &Mailbox, rx: &mut manycore_ring::packed::Consumer<Message>) -> Message {
    let mut full_scan = false;
    loop {
        if full_scan || mb.word(0) & 0b10 != 0 {
            if let Some(v) = rx.try_pop() {
                return v;
            }
        }
        mb.clear_and_fence();
        let key = mb.prepare_sleep();
        if !rx.is_empty() {
            mb.doorbell().cancel_wait();
            full_scan = true;
            continue;
        }
        mb.doorbell().wait(key);
        full_scan = true;
    }
}

/// The receiver's loop as in `core_loop`: poll by active bits; to sleep,
/// clear bits, announce, re-scan every ring, then wait; after a wakeup or a
/// cancelled sleep, scan every ring. The sender writes two messages into
/// the packed ring (the first deferred), publishes them at once and
/// announces. The messages must always be received (loom reports a deadlock
/// otherwise).
#[test]
fn doorbell_no_lost_wakeup() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(2));
        let (mut tx, mut rx) = manycore_ring::packed::channel::<Message>(8).unwrap();
        let mb2 = mb.clone();
        let t = thread::spawn(move || {
            assert!(tx.try_push(Message::new(|| ())).is_ok());
            assert!(tx.try_push(Message::new(|| ())).is_ok());
            assert!(tx.publish());
            assert!(!mb2.announce(1));
        });
        receive_or_sleep(&mb, &mut rx).run();
        assert!(rx.try_pop().is_some());
        t.join().unwrap();
    });
}

/// One sender announces two messages, one after the other, against a
/// receiver that takes the first and sleeps again for the second: the
/// second announce may find the doorbell rung (by the first, for the
/// receiver's earlier sleep) and skip its wake; the receiver's re-arm in
/// `prepare_sleep` must then see the second message, or the sender the
/// re-armed doorbell. Both messages are received. (Preemptions bounded,
/// to keep the model small.)
#[test]
fn doorbell_rung_once_per_sleep_no_lost_wakeup() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(2));
        let (mut tx, mut rx) = manycore_ring::packed::channel::<Message>(8).unwrap();
        let mb2 = mb.clone();
        let t = thread::spawn(move || {
            for _ in 0..2 {
                assert!(tx.try_push(Message::new(|| ())).is_ok());
                assert!(tx.publish());
                assert!(!mb2.announce(1));
            }
        });
        receive_or_sleep(&mb, &mut rx).run();
        receive_or_sleep(&mb, &mut rx).run();
        t.join().unwrap();
    });
}

/// `Mailbox::wake` (not sticky) against a receiver whose sleep re-check
/// looks at work published elsewhere (an idle hook's `pending`): the
/// publisher stores, then wakes; the receiver announces, re-checks, waits.
#[test]
fn wake_for_pending_work_no_lost_wakeup() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(1));
        let work = loom::sync::Arc::new(AtomicBool::new(false));
        let (mb2, work2) = (mb.clone(), work.clone());
        let t = thread::spawn(move || {
            work2.store(true, Ordering::Relaxed);
            mb2.wake();
        });
        loop {
            if work.load(Ordering::Relaxed) {
                break;
            }
            let key = mb.doorbell().prepare_wait();
            if work.load(Ordering::Relaxed) {
                mb.doorbell().cancel_wait();
                break;
            }
            mb.doorbell().wait(key);
        }
        t.join().unwrap();
    });
}

/// A sender whose bit is still set skips the `fetch_or`; the receiver's
/// periodic clear-and-rescan must still find its message.
#[test]
fn sticky_bit_cleared_concurrently() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(1));
        let (mut tx, mut rx) = manycore_ring::packed::channel::<Message>(8).unwrap();
        // Bit already set from earlier traffic.
        assert!(tx.try_push(Message::new(|| ())).is_ok());
        tx.publish();
        mb.announce(0);
        assert!(rx.try_pop().is_some());
        let mb2 = mb.clone();
        let t = thread::spawn(move || {
            assert!(tx.try_push(Message::new(|| ())).is_ok());
            tx.publish();
            mb2.announce(0);
        });
        // Receiver clears stale bits and rescans, as `refresh_bits` does.
        mb.clear_and_fence();
        let seen_in_scan = rx.try_pop().is_some();
        t.join().unwrap();
        if !seen_in_scan {
            // Then the sender must have seen the cleared bit and set it again.
            assert_ne!(
                mb.word(0) & 1,
                0,
                "message stranded: bit clear and scan missed it"
            );
            assert!(rx.try_pop().is_some());
        }
    });
}

/// A waker that raises a flag (the waiter spins on it with `yield_now`: loom
/// cannot model an unpark that lands while the waiter is already joining).
#[derive(Default)]
struct FlagWake {
    woken: AtomicBool,
}
impl Wake for FlagWake {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::Release);
    }
}

/// Waits until `w` was woken.
fn wait_woken(w: &FlagWake) {
    while !w.woken.load(Ordering::Acquire) {
        thread::yield_now();
    }
}

/// The completion against a waiter that registers (twice, with different
/// wakers) and parks: the result always arrives, exactly once, and the record
/// is freed exactly once, after both ends are done with it.
#[test]
fn completion_against_waiter() {
    loom::model(|| {
        let (tx, rx, freed) = completion_with_probe::<u32>();
        let t = thread::spawn(move || tx.complete(Ok(5)));
        let (f1, f2) = (Arc::new(FlagWake::default()), Arc::new(FlagWake::default()));
        let (w1, w2) = (Waker::from(f1.clone()), Waker::from(f2.clone()));
        // The waker registered last is woken, unless the result was there.
        if !rx.register(&w1) && !rx.register(&w2) {
            wait_woken(&f2);
        }
        assert_eq!(rx.take(), Some(Ok(5)));
        assert_eq!(rx.take(), None);
        drop(rx);
        assert!(t.join().unwrap());
        assert!(freed(), "the record leaked");
    });
}

/// A timeout racing the result: the waiter withdraws; whichever order, the
/// completer never touches a withdrawn waker, the result is either taken or
/// dropped by the completer, and the record is freed once.
#[test]
fn timeout_races_result() {
    loom::model(|| {
        let (tx, rx, freed) = completion_with_probe::<loom::sync::Arc<()>>();
        let token = loom::sync::Arc::new(());
        let tok2 = token.clone();
        let t = thread::spawn(move || tx.complete(Ok(tok2)));
        let w = Waker::from(Arc::new(FlagWake::default()));
        let done_at_register = rx.register(&w);
        // The timeout fires: whichever came first wins.
        let result_won = rx.cancel();
        let r = if result_won { rx.take() } else { None };
        drop(rx);
        let delivered = t.join().unwrap();
        if done_at_register {
            assert!(result_won && r.is_some());
        }
        // Exactly one side keeps the result: the waiter (result won) or the
        // completer, which drops it (timeout won).
        assert_eq!(result_won, delivered);
        drop(r);
        assert!(freed(), "the record leaked");
        assert_eq!(
            loom::sync::Arc::strong_count(&token),
            1,
            "the result leaked"
        );
        let _ = Err::<(), _>(InvokeError::Timeout);
    });
}

/// The waiter goes away (an `Invocation` dropped unwaited, perhaps with a
/// waker registered) while the result arrives: whoever finishes last frees the
/// record, exactly once, and nothing touches it afterwards (the poisoned
/// record fails the model otherwise). The result is dropped, not leaked.
#[test]
fn waiter_dropped_races_completion() {
    loom::model(|| {
        let (tx, rx, freed) = completion_with_probe::<loom::sync::Arc<()>>();
        let token = loom::sync::Arc::new(());
        let tok2 = token.clone();
        let t = thread::spawn(move || tx.complete(Ok(tok2)));
        let w = Waker::from(Arc::new(FlagWake::default()));
        let _ = rx.register(&w);
        drop(rx);
        assert!(t.join().unwrap());
        assert!(freed(), "the record leaked");
        assert_eq!(
            loom::sync::Arc::strong_count(&token),
            1,
            "the result leaked"
        );
    });
}

/// A completer dropped unrun (runtime shut down) resolves the waiter to
/// `Shutdown`, racing the waiter's registration.
#[test]
fn completer_dropped_resolves_shutdown() {
    loom::model(|| {
        let (tx, rx, freed) = completion_with_probe::<u32>();
        let t = thread::spawn(move || drop(tx));
        let f = Arc::new(FlagWake::default());
        if !rx.register(&Waker::from(f.clone())) {
            wait_woken(&f);
        }
        assert_eq!(rx.take(), Some(Err(InvokeError::Shutdown)));
        drop(rx);
        t.join().unwrap();
        assert!(freed(), "the record leaked");
    });
}

/// A receiver's view of its rings while they are bound on demand, as in
/// `core_loop/inbox.rs`: the consumers it has taken, and how many.
struct Rings {
    taken: Vec<Option<Consumer<u32>>>,
    adopted: usize,
}

impl Rings {
    fn new(sources: usize) -> Self {
        Self {
            taken: (0..sources).map(|_| None).collect(),
            adopted: 0,
        }
    }

    /// `drain_ring`'s cold path: a bit is set for a source whose ring this
    /// receiver does not have; take it if it was offered.
    fn adopt(&mut self, table: &HandoffTable<Consumer<u32>>, src: usize) {
        if self.taken[src].is_none() {
            if let Some(c) = table.take(src) {
                self.taken[src] = Some(*c);
                self.adopted += 1;
            }
        }
    }

    /// `adopt_all`: take every ring offered and not taken yet.
    fn adopt_all(&mut self, table: &HandoffTable<Consumer<u32>>) {
        table.take_each(|src, c| {
            self.taken[src] = Some(*c);
            self.adopted += 1;
        });
    }

    /// `has_work`'s look at the rings: a ring offered and not taken yet
    /// counts.
    fn has_work(&self, table: &HandoffTable<Consumer<u32>>) -> bool {
        table.has_offer() || self.taken.iter().flatten().any(|c| !c.is_empty())
    }

    fn pop(&mut self, src: usize) -> Option<u32> {
        self.taken[src].as_mut().and_then(|c| c.try_pop())
    }
}

/// A sender's first message to a receiver: it makes the ring, offers its
/// consumer end in the receiver's table, pushes, and announces. The
/// receiver polls by bits (taking a ring it lacks on a set bit), and sleeps
/// by the protocol (clear bits, announce, re-check, which counts a ring
/// offered and not taken yet as work; after waking, take every new ring and
/// scan). The message is always received: no lost wakeup, no ring missed.
#[test]
fn lazy_ring_first_message_no_lost_wakeup() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(2));
        let table = loom::sync::Arc::new(HandoffTable::<Consumer<u32>>::new(2));
        let (mb2, table2) = (mb.clone(), table.clone());
        let t = thread::spawn(move || {
            let (mut tx, rx) = manycore_ring::channel::<u32>(2).unwrap();
            assert!(table2.offer(1, Box::new(rx)).is_ok());
            tx.try_push(7).unwrap();
            assert!(!mb2.announce(1));
            tx
        });
        let mut rings = Rings::new(2);
        let mut full_scan = false;
        let got = loop {
            if full_scan {
                rings.adopt_all(&table);
            }
            if full_scan || mb.word(0) & 0b10 != 0 {
                rings.adopt(&table, 1);
                if let Some(v) = rings.pop(1) {
                    break v;
                }
            }
            mb.clear_and_fence();
            let key = mb.prepare_sleep();
            if rings.has_work(&table) {
                mb.doorbell().cancel_wait();
                full_scan = true;
                continue;
            }
            mb.doorbell().wait(key);
            full_scan = true;
        };
        assert_eq!(got, 7);
        drop(t.join().unwrap());
        assert_eq!(rings.adopted, 1);
        assert!(table.take(1).is_none(), "a ring was taken twice");
    });
}

/// Two senders' first messages against the receiver's poll and sleep loop
/// (as in the model above): a ring taken by a scan before its sender's
/// offer is complete never hides the other sender's ring. Both messages
/// are received. (Preemptions bounded, to keep the model small.)
#[test]
fn two_first_messages_no_lost_wakeup() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(2));
        let table = loom::sync::Arc::new(HandoffTable::<Consumer<u32>>::new(2));
        let senders: Vec<_> = (0..2)
            .map(|src| {
                let (mb, table) = (mb.clone(), table.clone());
                thread::spawn(move || {
                    let (mut tx, rx) = manycore_ring::channel::<u32>(2).unwrap();
                    assert!(table.offer(src, Box::new(rx)).is_ok());
                    tx.try_push(src as u32).unwrap();
                    assert!(!mb.announce(src));
                    tx
                })
            })
            .collect();
        let mut rings = Rings::new(2);
        let mut got = [false; 2];
        let mut full_scan = false;
        while !(got[0] && got[1]) {
            if full_scan {
                rings.adopt_all(&table);
            }
            let bits = mb.word(0);
            for src in 0..2 {
                if full_scan || bits & (1 << src) != 0 {
                    rings.adopt(&table, src);
                    if let Some(v) = rings.pop(src) {
                        got[v as usize] = true;
                    }
                }
            }
            if got[0] && got[1] {
                break;
            }
            mb.clear_and_fence();
            let key = mb.prepare_sleep();
            if rings.has_work(&table) {
                mb.doorbell().cancel_wait();
                full_scan = true;
                continue;
            }
            mb.doorbell().wait(key);
            full_scan = true;
        }
        for t in senders {
            drop(t.join().unwrap());
        }
    });
}

/// Two senders bind their first rings to one receiver at once, into the
/// same chunk of its table (one of them allocates the chunk, the other's
/// allocation loses the race and is freed): neither offer is lost, and the
/// receiver then takes each ring exactly once and sees both messages. (The
/// receiver's discovery racing a sender is the model above.)
#[test]
fn two_senders_bind_into_one_chunk() {
    loom::model(|| {
        let table = loom::sync::Arc::new(HandoffTable::<Consumer<u32>>::new(2));
        let senders: Vec<_> = (0..2)
            .map(|src| {
                let table = table.clone();
                thread::spawn(move || {
                    let (mut tx, rx) = manycore_ring::channel::<u32>(2).unwrap();
                    tx.try_push(src as u32 + 10).unwrap();
                    assert!(table.offer(src, Box::new(rx)).is_ok());
                    tx
                })
            })
            .collect();
        let producers: Vec<_> = senders.into_iter().map(|t| t.join().unwrap()).collect();
        let mut rings = Rings::new(2);
        rings.adopt_all(&table);
        assert_eq!(rings.adopted, 2);
        assert_eq!(rings.pop(0), Some(10));
        assert_eq!(rings.pop(1), Some(11));
        assert!(!table.has_offer());
        drop(producers);
    });
}

/// A sender binds its first ring to a receiver that is exiting: the
/// receiver closes its mailbox, then (under its parked-consumer lock) takes
/// and drains every ring offered; the sender publishes, announces, and if
/// it sees `closed`, drains its own ring under that lock, taking it from
/// the table if the receiver has parked without it. The message is drained
/// exactly once, by one of them (`Shared::drain_parked`, `exit_core`).
#[test]
fn late_binder_after_close_is_drained_once() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(1));
        let table = loom::sync::Arc::new(HandoffTable::<Consumer<u32>>::new(1));
        // The receiver's parked consumers: None until it has parked.
        let parked = loom::sync::Arc::new(loom::sync::Mutex::new(None::<Rings>));
        let drained = loom::sync::Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let (mb2, table2, parked2, drained2) =
            (mb.clone(), table.clone(), parked.clone(), drained.clone());
        let t = thread::spawn(move || {
            let (mut tx, rx) = manycore_ring::channel::<u32>(2).unwrap();
            assert!(table2.offer(0, Box::new(rx)).is_ok());
            tx.try_push(3).unwrap();
            if mb2.announce(0) {
                let mut g = parked2.lock().unwrap();
                if let Some(rings) = g.as_mut() {
                    rings.adopt(&table2, 0);
                    while rings.pop(0).is_some() {
                        drained2.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            tx
        });
        mb.close();
        {
            let mut g = parked.lock().unwrap();
            let mut rings = Rings::new(1);
            rings.adopt_all(&table);
            while rings.pop(0).is_some() {
                drained.fetch_add(1, Ordering::Relaxed);
            }
            *g = Some(rings);
        }
        drop(t.join().unwrap());
        assert_eq!(
            drained.load(Ordering::Relaxed),
            1,
            "the message was lost or run twice"
        );
    });
}
