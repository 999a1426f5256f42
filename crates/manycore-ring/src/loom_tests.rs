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

/// Records of 3, 2, 4 and 1 cells through a ring of 8 cells (so that they
/// wrap and run into the shadow cells), published in two batches (and
/// whenever the producer finds the ring full): each arrives once, in
/// order, whole; the tracked cells show no cell touched by both sides at
/// once.
#[test]
fn packed_batches_fifo_whole() {
    loom::model(|| {
        let (mut tx, mut rx) = crate::packed::channel::<Rec>(8).unwrap();
        const LENS: [u64; 4] = [3, 2, 4, 1];
        let t = loom::thread::spawn(move || {
            let mut i = 0;
            while i < LENS.len() {
                if tx.try_push(Rec::new(LENS[i], i as u64)).is_ok() {
                    if i == 1 || i == LENS.len() - 1 {
                        tx.publish();
                    }
                    i += 1;
                } else {
                    // Full: what is written must go out, or nobody frees room.
                    tx.publish();
                    loom::thread::yield_now();
                }
            }
        });
        let mut next = 0u64;
        while next < LENS.len() as u64 {
            match rx.try_pop() {
                Some(r) => {
                    assert_eq!((r.id, r.cells), (next, LENS[next as usize]));
                    assert_eq!(r.words(), Rec::new(r.cells, next).words());
                    next += 1;
                }
                None => loom::thread::yield_now(),
            }
        }
        t.join().unwrap();
        assert!(rx.try_pop().is_none());
    });
}

/// One-cell record holding a token, for the drop model.
struct Tok {
    _held: loom::sync::Arc<()>,
}
// SAFETY: 8 bytes, one cell, always; `cells_from` reads nothing.
unsafe impl crate::packed::Packed for Tok {
    unsafe fn cells_from(_: *const Self) -> usize {
        1
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
            assert!(tx.try_push(Tok { _held: a }).is_ok());
            tx.publish();
            assert!(tx.try_push(Tok { _held: b }).is_ok());
        });
        drop(rx.try_pop());
        t.join().unwrap();
        drop(rx);
        assert_eq!(loom::sync::Arc::strong_count(&token), 1);
    });
}
