//! All of manycore-ring's `unsafe`: slot storage and the publish/consume protocol.
//!
//! Slot `i` holds a sequence word `seq` (low 32 bits; the high 32 bits are the
//! message tag). For position `p` (a u64 counting every push), slot `p & mask`
//! is free for the producer when `seq == p` and full for the consumer when
//! `seq == p + 1` (all mod 2^32). The consumer frees it for the next lap with
//! `seq = p + capacity`. Initially `seq = i`.

use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::cell::UnsafeCell;
use manycore_sync::Arc;
use std::fmt;
use std::mem::MaybeUninit;

#[repr(C, align(64))]
struct Slot<T> {
    seq: AtomicU64,
    val: UnsafeCell<MaybeUninit<T>>,
}

struct Buffer<T> {
    slots: Box<[Slot<T>]>,
    mask: u64,
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
        // Both ends are gone: drop the messages still in flight. Slot i is full
        // exactly when its sequence is one past a value congruent to i.
        let cap = self.slots.len() as u32;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let s = seq32(slot.seq.load(Ordering::Acquire));
            if s.wrapping_sub(i as u32) % cap == 1 {
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
            seq: AtomicU64::new(i as u64),
            val: UnsafeCell::new(MaybeUninit::uninit()),
        })
        .collect();
    let buf = Arc::new(Buffer {
        slots,
        mask: cap as u64 - 1,
    });
    (
        Producer {
            buf: buf.clone(),
            pos: 0,
        },
        Consumer { buf, pos: 0 },
    )
}

/// The sending end of a ring. Not `Clone`: exactly one producer.
pub struct Producer<T> {
    buf: Arc<Buffer<T>>,
    pos: u64,
}

/// The receiving end of a ring. Not `Clone`: exactly one consumer.
pub struct Consumer<T> {
    buf: Arc<Buffer<T>>,
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

    /// True if the next push would fail (the consumer has not yet freed the slot).
    #[inline]
    pub fn is_full(&self) -> bool {
        let slot = &self.buf.slots[(self.pos & self.buf.mask) as usize];
        seq32(slot.seq.load(Ordering::Relaxed)) != self.pos as u32
    }

    /// Pushes a message with tag 0; gives it back if the ring is full.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        self.try_push_tagged(value, 0)
    }

    /// Pushes a message carrying a 32-bit tag; gives it back if the ring is full.
    #[inline]
    pub fn try_push_tagged(&mut self, value: T, tag: u32) -> Result<(), T> {
        let slot = &self.buf.slots[(self.pos & self.buf.mask) as usize];
        // Acquire; pairs with the Release in `Consumer::try_pop_tagged` that
        // freed this slot, so the consumer's read of the old value happens
        // before our write of the new one.
        if seq32(slot.seq.load(Ordering::Acquire)) != self.pos as u32 {
            return Err(value);
        }
        // SAFETY: seq == pos means the slot is free and owned by the producer
        // until the Release store below hands it to the consumer.
        slot.val.with_mut(|p| unsafe { (*p).write(value) });
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
        // Acquire; pairs with the Release publish in `Producer::try_push_tagged`.
        let word = slot.seq.load(Ordering::Acquire);
        if seq32(word) != self.pos.wrapping_add(1) as u32 {
            return None;
        }
        // SAFETY: seq == pos + 1 means the producer published an initialised
        // value here and will not touch the slot until we free it below.
        let value = slot.val.with(|p| unsafe { (*p).assume_init_read() });
        let free = self.pos.wrapping_add(self.buf.slots.len() as u64);
        // Release; pairs with the Acquire in `Producer::try_push_tagged`: our
        // read of the value happens before the producer overwrites it.
        slot.seq.store(free as u32 as u64, Ordering::Release);
        self.pos = self.pos.wrapping_add(1);
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
