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
