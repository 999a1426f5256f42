//! Messages left in a ring are dropped exactly once when both ends are gone.
use manycore_ring::channel;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn leftovers_dropped_once() {
    for left in 0..=8usize {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = channel::<Counted>(8).unwrap();
        // Go round a few laps first so the slot sequences are not the initial ones.
        for _ in 0..13 {
            tx.try_push(Counted(drops.clone())).ok().unwrap();
            drop(rx.try_pop().unwrap());
        }
        for _ in 0..left {
            assert!(tx.try_push(Counted(drops.clone())).is_ok());
        }
        assert_eq!(drops.load(Ordering::SeqCst), 13);
        drop(tx);
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), 13 + left);
    }
}
