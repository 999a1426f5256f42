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
    for (pre, left) in [0usize, 3, 13]
        .into_iter()
        .flat_map(|p| (0..=8usize).map(move |l| (p, l)))
    {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = channel::<Counted>(8).unwrap();
        // Go round some laps first (or none: never-written slots must not count).
        for _ in 0..pre {
            tx.try_push(Counted(drops.clone())).ok().unwrap();
            drop(rx.try_pop().unwrap());
        }
        for _ in 0..left {
            assert!(tx.try_push(Counted(drops.clone())).is_ok());
        }
        assert_eq!(drops.load(Ordering::SeqCst), pre);
        drop(tx);
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), pre + left);
    }
}
