//! Loom models of the ring and its doorbells: no lost wakeup, no torn or
//! stale fragment, chunk changes at empty moments.
//! Run: RUSTFLAGS="--cfg loom" cargo test -p manycore-sock --release --test loom_ring
//! (sizes are tiny and preemptions bounded to 2 so that each model runs in seconds).
#![cfg(loom)]
use manycore_sock::loom_model::pair;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn full_ring_sleeps_and_wakes() {
    model(|| {
        // 16-byte chunk: one fragment at a time, so the writer must wait for
        // space (and the reader, usually, for data).
        let (mut w, mut r) = pair(16, 16);
        let t = loom::thread::spawn(move || {
            w.write_all(&[7]);
            w.write_all(&[9]);
        });
        let mut buf = [0u8; 2];
        r.read_exact(&mut buf);
        assert_eq!(buf, [7, 9]);
        t.join().unwrap();
    });
}

#[test]
fn chunk_shrinks_mid_stream() {
    model(|| {
        let (mut w, mut r) = pair(32, 32);
        let t = loom::thread::spawn(move || {
            w.write_all(&[1]);
            w.set_chunk(16);
            w.write_all(&[2]);
        });
        let mut buf = [0u8; 2];
        r.read_exact(&mut buf);
        assert_eq!(buf, [1, 2]);
        t.join().unwrap();
    });
}

#[test]
fn deferred_doorbell_at_the_end_of_a_write() {
    model(|| {
        // 128-byte chunk: the second write wraps, so one try_write commits
        // two fragments; the second is below a quarter chunk and is told
        // only by the look at the end of the call.
        let (mut w, mut r) = pair(128, 128);
        let first: Vec<u8> = (0..104).collect();
        let t = loom::thread::spawn(move || {
            w.write_all(&first);
            w.write_all(&[200; 12]);
        });
        let mut buf = [0u8; 116];
        r.read_exact(&mut buf);
        assert!(buf[..104].iter().enumerate().all(|(i, &b)| b == i as u8));
        assert_eq!(buf[104..], [200; 12]);
        t.join().unwrap();
    });
}
