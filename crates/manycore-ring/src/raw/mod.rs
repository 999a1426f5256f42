//! All of manycore-ring's `unsafe`: slot storage and the publish/consume protocol.
//!
//! Slot `i` holds a sequence word `seq` (low 32 bits; the high 32 bits are the
//! message tag). For position `p` (a u64 counting every push), the producer
//! publishes slot `p & mask` with `seq = p + 1` (mod 2^32), and the consumer
//! at position `p` knows the slot is full exactly when `seq == p + 1`: the
//! lap before left `p + 1 - capacity` there. Initially `seq = i + 1 -
//! capacity` (a lap "before" the first).
//!
//! The consumer never writes a slot. It publishes its position `head` on a
//! cache line of its own, and the producer may write position `p` while
//! `p - head < capacity`. The producer keeps a cached copy of `head` and
//! reloads it only when the copy says the ring is full, so on the fast path
//! the producer reads nothing the consumer writes, and the consumer reads only
//! the slot: each slot's line crosses between the cores once per message,
//! instead of bouncing back to the producer when it is freed. This is
//! Lamport's single-producer single-consumer queue (Leslie Lamport, *Proving
//! the Correctness of Multiprocess Programs*) with a cached copy of the other
//! side's index, as in rtrb, and a per-slot full flag, as in FastForward
//! (John Giacomoni, Tipp Moseley, Manish Vachharajani, *FastForward for
//! Efficient Pipeline Parallelism: A Cache-Optimized Concurrent Lock-Free
//! Queue*), so that the consumer never reads the producer's index.
//!
//! *Why it is a FIFO that loses nothing.* The producer writes slot `p &
//! mask` only while `p - head < capacity`, i.e. after the consumer has moved
//! out the value of position `p - capacity` there (its Release of `head`,
//! the producer's Acquire); the consumer reads it only once `seq == p + 1`,
//! i.e. after the producer wrote it (the producer's Release of `seq`, the
//! consumer's Acquire). Each slot thus alternates between the two sides, one
//! owner at a time, and positions are taken in order on both sides. The
//! 32-bit sequence cannot be mistaken across laps: the slot the consumer at
//! `p` looks at holds either `p + 1` (full) or `p + 1 - capacity` (the lap
//! before, or the initial value), and these differ modulo 2^32 because the
//! capacity is at most 2^30.

use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::cell::UnsafeCell;
use manycore_sync::{Arc, CachePadded};
use std::fmt;
use std::mem::MaybeUninit;

#[repr(C, align(64))]
struct Slot<T> {
    /// Low 32 bits: the sequence (`p + 1` once position `p` is published
    /// here); high 32 bits: the message's tag. Stored with Release by the
    /// producer in `Producer::push_with` after writing `val`; pairs with the
    /// Acquire load in `Consumer::try_pop_tagged`, after which the consumer
    /// reads `val`. Only the producer stores it; `is_empty` and `Drop` load
    /// it too (Relaxed as a hint; Acquire with exclusive access).
    seq: AtomicU64,
    /// The message: written by the producer while the slot is its own,
    /// read (moved out) by the consumer once `seq` says it is full.
    val: UnsafeCell<MaybeUninit<T>>,
}

struct Buffer<T> {
    slots: Box<[Slot<T>]>,
    mask: u64,
    /// The consumer's position: every slot before it has been consumed.
    /// Stored with Release by the consumer in `Consumer::try_pop_tagged`
    /// after it moved the value out; pairs with the Acquire load in
    /// `Producer::push_with`, which reloads it only when its cached copy
    /// says the ring is full (`Producer::is_full` loads it Relaxed, as a
    /// hint). On a line of its own, which the consumer alone writes.
    head: CachePadded<AtomicU64>,
}

// SAFETY: the ring moves values of T between exactly two threads; the
// sequence protocol gives each slot to one side at a time, so sharing the
// buffer is sound when T can be sent.
unsafe impl<T: Send> Sync for Buffer<T> {}
// SAFETY: as above; the buffer owns values of T.
unsafe impl<T: Send> Send for Buffer<T> {}

#[inline]
fn seq32(word: u64) -> u32 {
    word as u32
}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        // Both ends are gone: drop the messages still in flight. Slot i was last
        // written for position `seq - 1`; it is full if that position is at or
        // after the consumer's (a never-written slot's position lies a lap
        // before 0, so it is not).
        let cap = self.slots.len() as u32;
        let head = self.head.load(Ordering::Acquire) as u32;
        for slot in self.slots.iter_mut() {
            let written = seq32(slot.seq.load(Ordering::Acquire)).wrapping_sub(1);
            if written.wrapping_sub(head) < cap {
                // SAFETY: a full slot holds an initialised T that nobody else
                // can reach any more (we have &mut self).
                slot.val.with_mut(|p| unsafe { (*p).assume_init_drop() });
            }
        }
    }
}

pub(crate) fn new_ring<T: Send>(cap: usize) -> (Producer<T>, Consumer<T>) {
    debug_assert!(cap.is_power_of_two() && cap >= 2);
    let slots: Box<[Slot<T>]> = (0..cap)
        .map(|i| Slot {
            seq: AtomicU64::new((i as u32).wrapping_add(1).wrapping_sub(cap as u32) as u64),
            val: UnsafeCell::new(MaybeUninit::uninit()),
        })
        .collect();
    let buf = Arc::new(Buffer {
        slots,
        mask: cap as u64 - 1,
        head: CachePadded::new(AtomicU64::new(0)),
    });
    (
        Producer {
            buf: buf.clone(),
            pos: 0,
            head: 0,
        },
        Consumer { buf, pos: 0 },
    )
}

/// The sending end of a ring. Not `Clone`: exactly one producer.
pub struct Producer<T> {
    buf: Arc<Buffer<T>>,
    /// The next position to push (counts every push).
    pos: u64,
    /// The consumer's position as last read (never ahead of the real one).
    head: u64,
}

/// The receiving end of a ring. Not `Clone`: exactly one consumer.
pub struct Consumer<T> {
    buf: Arc<Buffer<T>>,
    /// The next position to pop (counts every pop).
    pos: u64,
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("pos", &self.pos)
            .field("capacity", &self.capacity())
            .finish()
    }
}
impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("pos", &self.pos)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl<T> Producer<T> {
    /// How many messages the ring holds.
    pub fn capacity(&self) -> usize {
        self.buf.slots.len()
    }

    /// True if the next push would fail (the consumer has not yet taken the
    /// message a lap before it).
    #[inline]
    pub fn is_full(&self) -> bool {
        let cap = self.buf.slots.len() as u64;
        self.pos.wrapping_sub(self.head) >= cap
            && self.pos.wrapping_sub(self.buf.head.load(Ordering::Relaxed)) >= cap
    }

    /// Pushes a message with tag 0; gives it back if the ring is full.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        self.try_push_tagged(value, 0)
    }

    /// Pushes a message carrying a 32-bit tag; gives it back if the ring is full.
    #[inline]
    pub fn try_push_tagged(&mut self, value: T, tag: u32) -> Result<(), T> {
        self.push_with(move || value, tag)
            .map_err(|give_back| give_back())
    }

    /// Pushes the value `make` returns, built in place in the slot (no copy
    /// through the caller's stack on the way), if there is room; otherwise
    /// gives `make` back uncalled.
    ///
    /// ```
    /// let (mut tx, mut rx) = manycore_ring::channel::<[u64; 4]>(2).unwrap();
    /// assert!(tx.try_push_with(|| [1, 2, 3, 4]).is_ok());
    /// assert!(tx.try_push_with(|| [5; 4]).is_ok());
    /// assert!(tx.try_push_with(|| [6; 4]).is_err()); // full: not called
    /// assert_eq!(rx.try_pop(), Some([1, 2, 3, 4]));
    /// ```
    #[inline]
    pub fn try_push_with<F: FnOnce() -> T>(&mut self, make: F) -> Result<(), F> {
        self.push_with(make, 0)
    }

    /// The one push: the value `make` returns, tagged, built in the slot.
    #[inline(always)]
    fn push_with<F: FnOnce() -> T>(&mut self, make: F, tag: u32) -> Result<(), F> {
        let cap = self.buf.slots.len() as u64;
        if self.pos.wrapping_sub(self.head) >= cap {
            // Acquire; pairs with the Release store of `head` in
            // `Consumer::try_pop_tagged`, so the consumer's read of the
            // previous value happens before our write of the new one.
            self.head = self.buf.head.load(Ordering::Acquire);
            if self.pos.wrapping_sub(self.head) >= cap {
                return Err(make);
            }
        }
        let slot = &self.buf.slots[(self.pos & self.buf.mask) as usize];
        // SAFETY: pos - head < capacity means the consumer has taken the value
        // this slot held a lap ago (or it never held one); the slot is ours
        // until the Release store below hands it to the consumer.
        slot.val.with_mut(|p| unsafe { (*p).write(make()) });
        let next = self.pos.wrapping_add(1);
        // Release; pairs with the Acquire in `Consumer::try_pop_tagged`: the
        // payload written above is visible to whoever sees this sequence.
        slot.seq.store(
            ((tag as u64) << 32) | (next as u32 as u64),
            Ordering::Release,
        );
        self.pos = next;
        Ok(())
    }

    /// How many messages have been pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pos
    }
}

impl<T> Consumer<T> {
    /// How many messages the ring holds.
    pub fn capacity(&self) -> usize {
        self.buf.slots.len()
    }

    /// True if there is no message to pop right now.
    #[inline]
    pub fn is_empty(&self) -> bool {
        let slot = &self.buf.slots[(self.pos & self.buf.mask) as usize];
        seq32(slot.seq.load(Ordering::Relaxed)) != self.pos.wrapping_add(1) as u32
    }

    /// Pops the oldest message.
    #[inline]
    pub fn try_pop(&mut self) -> Option<T> {
        self.try_pop_tagged().map(|(v, _)| v)
    }

    /// Pops the oldest message with its tag.
    #[inline]
    pub fn try_pop_tagged(&mut self) -> Option<(T, u32)> {
        let slot = &self.buf.slots[(self.pos & self.buf.mask) as usize];
        // Acquire; pairs with the Release publish in `Producer::push_with`.
        let word = slot.seq.load(Ordering::Acquire);
        if seq32(word) != self.pos.wrapping_add(1) as u32 {
            return None;
        }
        // SAFETY: seq == pos + 1 means the producer published an initialised
        // value here and will not touch the slot until `head` passes it below.
        let value = slot.val.with(|p| unsafe { (*p).assume_init_read() });
        self.pos = self.pos.wrapping_add(1);
        // Release; pairs with the Acquire load of `head` in
        // `Producer::push_with`: our read of the value happens before
        // the producer overwrites it. A store to our own line: it moves to the
        // producer's cache only when the producer finds its copy full.
        self.buf.head.store(self.pos, Ordering::Release);
        Some((value, (word >> 32) as u32))
    }

    /// Pops up to `max` messages, oldest first, handing each to `f`; returns how many.
    #[inline]
    pub fn pop_batch(&mut self, max: usize, mut f: impl FnMut(T)) -> usize {
        let mut n = 0;
        while n < max {
            match self.try_pop() {
                Some(v) => {
                    f(v);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// How many messages have been popped so far.
    pub fn popped(&self) -> u64 {
        self.pos
    }
}

pub(crate) mod packed;
