//! Two threads passing values through one ring.
//!
//! ```sh
//! cargo run --release -p manycore-ring --example spsc
//! ```
//!
//! The producer pushes the numbers `0..N`, each with a tag (here the
//! number's parity); the consumer pops them and checks that they arrive
//! complete and in order. The ring never blocks: `try_push` hands a value
//! back when the ring is full and `try_pop` returns `None` when it is
//! empty, so each side waits with a bounded [`Backoff`] (spin, then yield
//! the CPU) and retries.

use manycore_ring::channel;
use manycore_sync::Backoff;

const N: u64 = 1_000_000;

fn main() {
    let (mut tx, mut rx) = channel::<u64>(64).expect("a valid capacity");
    println!("ring of {} slots, {N} values", tx.capacity());

    let producer = std::thread::spawn(move || {
        let mut backoff = Backoff::new();
        for i in 0..N {
            let mut value = i;
            // The ring is full: wait for the consumer, then push again.
            while let Err(back) = tx.try_push_tagged(value, (i % 2) as u32) {
                value = back;
                backoff.snooze();
            }
            backoff.reset();
        }
        tx.pushed()
    });

    let mut backoff = Backoff::new();
    let mut expected = 0;
    let mut odd = 0;
    while expected < N {
        match rx.try_pop_tagged() {
            Some((value, tag)) => {
                assert_eq!(value, expected, "values arrive in order");
                assert_eq!(tag as u64, value % 2, "the tag travels with its value");
                odd += tag as u64;
                expected += 1;
                backoff.reset();
            }
            // The ring is empty: wait for the producer.
            None => backoff.snooze(),
        }
    }

    let pushed = producer.join().expect("the producer does not panic");
    assert_eq!(pushed, rx.popped());
    assert!(rx.try_pop().is_none());
    println!(
        "received {} values in order, {odd} of them odd",
        rx.popped()
    );
}
