//! Two threads, many laps: no loss, no duplicate, FIFO (spin-then-yield on both sides).
use manycore_ring::channel;

#[test]
fn spsc_fifo_many_laps() {
    const N: u64 = 200_000;
    let (mut tx, mut rx) = channel::<u64>(16).unwrap();
    let t = std::thread::spawn(move || {
        let mut i = 0;
        while i < N {
            match tx.try_push_tagged(i, i as u32) {
                Ok(()) => i += 1,
                Err(_) => std::thread::yield_now(),
            }
        }
    });
    let mut expect = 0;
    while expect < N {
        match rx.try_pop_tagged() {
            Some((v, tag)) => {
                assert_eq!(v, expect);
                assert_eq!(tag, expect as u32);
                expect += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    t.join().unwrap();
    assert!(rx.is_empty());
}
