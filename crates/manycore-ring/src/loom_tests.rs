//! Loom models of the ring: no loss, no duplicate, FIFO, and every message
//! left in flight dropped exactly once, under every interleaving.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p manycore-ring --lib loom_tests
//! ```

#[test]
fn no_loss_no_dup_fifo() {
    loom::model(|| {
        let (mut tx, mut rx) = crate::channel::<u32>(2).unwrap();
        let t = loom::thread::spawn(move || {
            let mut i = 0;
            while i < 3 {
                // The in-place push follows the same protocol: use it for one.
                let pushed = if i == 1 {
                    let mut made = false;
                    let r = tx.try_push_with(|| {
                        made = true;
                        i
                    });
                    // On Err the closure comes back uncalled; drop it to
                    // read `made`.
                    let ok = r.is_ok();
                    drop(r);
                    assert_eq!(ok, made);
                    // try_push_with sends tag 0; the consumer expects i + 10.
                    ok
                } else {
                    tx.try_push_tagged(i, i + 10).is_ok()
                };
                if pushed {
                    i += 1;
                } else {
                    loom::thread::yield_now();
                }
            }
        });
        let mut next = 0;
        while next < 3 {
            match rx.try_pop_tagged() {
                Some((v, tag)) => {
                    assert_eq!(v, next);
                    assert_eq!(tag, if next == 1 { 0 } else { next + 10 });
                    next += 1;
                }
                None => loom::thread::yield_now(),
            }
        }
        t.join().unwrap();
        assert!(rx.try_pop().is_none());
    });
}

#[test]
fn drop_with_messages_in_flight() {
    loom::model(|| {
        let (mut tx, mut rx) = crate::channel::<loom::sync::Arc<()>>(2).unwrap();
        let token = loom::sync::Arc::new(());
        let t2 = token.clone();
        let t = loom::thread::spawn(move || {
            let _ = tx.try_push(t2);
        });
        let _ = rx.try_pop();
        t.join().unwrap();
        drop(rx);
        // Whether or not the consumer saw it, the message was dropped exactly once.
        assert_eq!(loom::sync::Arc::strong_count(&token), 1);
    });
}

use crate::test_rec::Rec;

/// The packed ring's FIFO models, with at most 3 preemptions (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise): unbounded, a model of four
/// records with pending headers runs for many minutes.
fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// Pushes `lens` through `tx`: record `i` is published at once if
/// `now(i)`, pending otherwise (and a pending record is published by the
/// next one published at once, or at the end); whenever the ring is full,
/// what is written is published, or nobody frees room.
fn produce(mut tx: crate::packed::Producer<Rec>, lens: &[u64], now: impl Fn(usize) -> bool) {
    let mut i = 0;
    while i < lens.len() {
        let ok = if now(i) {
            tx.try_push_published_with(|| Rec::new(lens[i], i as u64))
                .is_ok()
        } else {
            tx.try_push(Rec::new(lens[i], i as u64)).is_ok()
        };
        if ok {
            i += 1;
        } else {
            tx.publish();
            loom::thread::yield_now();
        }
    }
    tx.publish();
}

/// Takes `lens.len()` records: each arrives once, in order, with every
/// word of its cells.
fn consume(rx: &mut crate::packed::Consumer<Rec>, lens: &[u64]) {
    let mut next = 0u64;
    while next < lens.len() as u64 {
        match rx.try_pop() {
            Some(r) => {
                assert_eq!((r.id, r.cells()), (next, lens[next as usize]));
                assert_eq!(r.words(), Rec::new(r.cells(), next).words());
                next += 1;
            }
            None => loom::thread::yield_now(),
        }
    }
    assert!(rx.try_pop().is_none());
}

/// Records of 3, 2, 4 and 1 cells through a ring of 8 cells (so that they
/// wrap, run into the shadow cells, and the last one's header lands on a
/// word that held a body word of the first), the first and third pending
/// and published by the one after them: each arrives once, in order,
/// whole. The tracked words show no word read and written by the two
/// sides at once (the header word of the consumer's position excepted,
/// which is atomic), and a header word left holding a body word fails the
/// model.
#[test]
fn packed_batches_fifo_whole() {
    bounded(|| {
        const LENS: [u64; 4] = [3, 2, 4, 1];
        let (tx, mut rx) = crate::packed::channel::<Rec>(8).unwrap();
        let t = loom::thread::spawn(move || produce(tx, &LENS, |i| i % 2 == 1));
        consume(&mut rx, &LENS);
        t.join().unwrap();
    });
}

/// Records each published as it is written (a plain spawn), of 4, 1, 3
/// and 2 cells through 8 cells: the same checks.
#[test]
fn packed_each_published_fifo_whole() {
    bounded(|| {
        const LENS: [u64; 4] = [4, 1, 3, 2];
        let (tx, mut rx) = crate::packed::channel::<Rec>(8).unwrap();
        let t = loom::thread::spawn(move || produce(tx, &LENS, |_| true));
        consume(&mut rx, &LENS);
        t.join().unwrap();
    });
}

/// A record holding a token, for the drop model.
#[repr(C)]
struct Tok {
    head: u64,
    _held: loom::sync::Arc<()>,
}
// SAFETY: the header is 2 (not 0, bit 0 clear); a record is the whole Tok
// (loom's Arc is two words: two cells).
unsafe impl crate::packed::Packed for Tok {
    unsafe fn cells(_: u64) -> usize {
        std::mem::size_of::<Tok>().div_ceil(16)
    }
}

/// Records published, unpublished (published by the producer's drop) and
/// popped concurrently: each is dropped exactly once, by the consumer or
/// with the buffer.
#[test]
fn packed_drop_with_records_in_flight() {
    loom::model(|| {
        let (mut tx, mut rx) = crate::packed::channel::<Tok>(8).unwrap();
        let token = loom::sync::Arc::new(());
        let (a, b) = (token.clone(), token.clone());
        let t = loom::thread::spawn(move || {
            assert!(tx
                .try_push_published_with(|| Tok { head: 2, _held: a })
                .is_ok());
            assert!(tx.try_push(Tok { head: 2, _held: b }).is_ok());
        });
        drop(rx.try_pop());
        t.join().unwrap();
        drop(rx);
        assert_eq!(loom::sync::Arc::strong_count(&token), 1);
    });
}
