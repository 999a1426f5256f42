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

/// A one-cell record of the packed ring that counts its drops.
struct PCounted(Arc<AtomicUsize>);
impl Drop for PCounted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
// SAFETY: 8 bytes, one cell, always; the header is the Arc's pointer (not
// 0, aligned to 8: bit 0 clear).
unsafe impl manycore_ring::packed::Packed for PCounted {
    unsafe fn cells(_: u64) -> usize {
        1
    }
}

#[test]
fn packed_leftovers_dropped_once() {
    for (pre, left, publish) in [0usize, 3, 13]
        .into_iter()
        .flat_map(|p| (0..=8usize).map(move |l| (p, l)))
        .flat_map(|(p, l)| [(p, l, false), (p, l, true)])
    {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = manycore_ring::packed::channel::<PCounted>(8).unwrap();
        for _ in 0..pre {
            assert!(tx.try_push(PCounted(drops.clone())).is_ok());
            tx.publish();
            drop(rx.try_pop().unwrap());
        }
        for _ in 0..left.min(4) {
            assert!(tx.try_push(PCounted(drops.clone())).is_ok());
        }
        if publish {
            tx.publish();
        }
        assert_eq!(drops.load(Ordering::SeqCst), pre);
        // Unpublished records are published by the producer's drop and
        // dropped with the buffer.
        drop(tx);
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), pre + left.min(4));
    }
}
