//! Loom models of manycore-rt's protocols, against the real `Mailbox`,
//! ring, `EventCount` and `Completion`.
//! Run: RUSTFLAGS="--cfg loom" cargo test -p manycore-rt --release --lib loom

use crate::error::InvokeError;
use crate::mailbox::Mailbox;
use crate::raw::Completion;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::sync::Arc;
use std::task::{Wake, Waker};

/// The receiver's loop as in `scheduler.rs`: poll by active bits; to sleep,
/// clear bits, announce, re-scan every ring, then wait; after a wakeup or a
/// cancelled sleep, scan every ring. The sender publishes and announces. The
/// message must always be received (loom reports a deadlock otherwise).
#[test]
fn doorbell_no_lost_wakeup() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(2));
        let (mut tx, mut rx) = manycore_ring::channel::<u32>(2).unwrap();
        let mb2 = mb.clone();
        let t = thread::spawn(move || {
            tx.try_push(7).unwrap();
            assert!(!mb2.announce(1));
        });
        let mut got = None;
        let mut full_scan = false;
        while got.is_none() {
            if full_scan || mb.word(0) & 0b10 != 0 {
                got = rx.try_pop();
                if got.is_some() {
                    break;
                }
            }
            mb.clear_and_fence();
            let key = mb.doorbell().prepare_wait();
            if !rx.is_empty() {
                mb.doorbell().cancel_wait();
                full_scan = true;
                continue;
            }
            mb.doorbell().wait(key);
            full_scan = true;
        }
        assert_eq!(got, Some(7));
        t.join().unwrap();
    });
}

/// A sender whose bit is still set skips the `fetch_or`; the receiver's
/// periodic clear-and-rescan must still find its message.
#[test]
fn sticky_bit_cleared_concurrently() {
    loom::model(|| {
        let mb = loom::sync::Arc::new(Mailbox::new(1));
        let (mut tx, mut rx) = manycore_ring::channel::<u32>(2).unwrap();
        // Bit already set from earlier traffic.
        tx.try_push(1).unwrap();
        mb.announce(0);
        assert_eq!(rx.try_pop(), Some(1));
        let mb2 = mb.clone();
        let t = thread::spawn(move || {
            tx.try_push(2).unwrap();
            mb2.announce(0);
        });
        // Receiver clears stale bits and rescans, as `refresh_bits` does.
        mb.clear_and_fence();
        let seen_in_scan = rx.try_pop();
        t.join().unwrap();
        if seen_in_scan.is_none() {
            // Then the sender must have seen the cleared bit and set it again.
            assert_ne!(
                mb.word(0) & 1,
                0,
                "message stranded: bit clear and scan missed it"
            );
            assert_eq!(rx.try_pop(), Some(2));
        }
    });
}

struct FlagWake {
    woken: loom::sync::Arc<AtomicBool>,
    thread: thread::Thread,
}
impl Wake for FlagWake {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// The completion against a waiter that registers (twice, with different
/// wakers) and parks: the result always arrives, exactly once.
#[test]
fn completion_against_waiter() {
    loom::model(|| {
        let c = loom::sync::Arc::new(Completion::<u32>::new());
        let c2 = c.clone();
        let t = thread::spawn(move || c2.complete(Ok(5)));
        let w1 = Waker::from(Arc::new(FlagWake {
            woken: Default::default(),
            thread: thread::current(),
        }));
        let w2 = Waker::from(Arc::new(FlagWake {
            woken: Default::default(),
            thread: thread::current(),
        }));
        if !c.register(&w1) && !c.register(&w2) {
            while !c.is_done() {
                thread::park();
            }
        }
        assert_eq!(c.take(), Some(Ok(5)));
        assert_eq!(c.take(), None);
        t.join().unwrap();
    });
}

/// A timeout racing the result: the waiter withdraws; whichever order, the
/// completer never touches a withdrawn waker and the result is either taken
/// or dropped with the completion.
#[test]
fn timeout_races_result() {
    loom::model(|| {
        let c = loom::sync::Arc::new(Completion::<loom::sync::Arc<()>>::new());
        let token = loom::sync::Arc::new(());
        let (c2, tok2) = (c.clone(), token.clone());
        let t = thread::spawn(move || c2.complete(Ok(tok2)));
        let woken = loom::sync::Arc::new(AtomicBool::new(false));
        let w = Waker::from(Arc::new(FlagWake {
            woken: woken.clone(),
            thread: thread::current(),
        }));
        let done_at_register = c.register(&w);
        // The timeout fires: whichever came first wins.
        let result_won = c.cancel();
        let r = if result_won { c.take() } else { None };
        let delivered = t.join().unwrap();
        if done_at_register {
            assert!(result_won && r.is_some());
        }
        // Exactly one side keeps the result: the waiter (result won) or the
        // completer, which drops it (timeout won).
        assert_eq!(result_won, delivered);
        drop(r);
        drop(c);
        assert_eq!(
            loom::sync::Arc::strong_count(&token),
            1,
            "the result leaked"
        );
        let _ = Err::<(), _>(InvokeError::Timeout);
    });
}
