//! The packed ring's `unsafe`: records of 16-byte cells, published in batches.
//!
//! **Format.** The ring is an array of `cap` 16-byte cells (a power of two)
//! plus `max_cells - 1` *shadow* cells after the last, where `max_cells` is
//! the number of cells a whole `T` covers (`size_of::<T>()` rounded up to
//! 16). Positions count cells, for ever; a record pushed at position `p`
//! takes `n = value.cells()` positions (`1 ..= max_cells`) and is stored
//! contiguously from cell `p & mask`, running into the shadow cells when it
//! starts near the end instead of wrapping, so that every record is one
//! plain `T`-shaped span of memory and no padding record is ever needed.
//! The next record starts at `p + n`. A small message (a function pointer
//! and a word) is one cell: four to a cache line.
//!
//! **Publication.** The producer writes records past the position it has
//! published (`tail`) and publishes them all at once, with one Release store
//! of `tail` on a line of its own, when its user calls `publish`. The
//! consumer reads `tail` (Acquire) only when its cached copy is used up, and
//! publishes its own position (`head`, Release, on another line) after each
//! record it moves out; the producer reads `head` (Acquire) only when its
//! cached copy says there is no room. So a batch of `k` small records costs
//! one transfer of the `tail` line and `k / 4` transfers of data lines, and
//! the consumer never reads a data line that the producer is still writing
//! (it reads only published cells). This is Lamport's queue with cached
//! indices (as in rtrb) and batched index updates (MCRingBuffer: Patrick P.
//! C. Lee, Tian Bu, Girish Chandranmenon, *A Lock-Free, Cache-Efficient
//! Multi-Core Synchronization Mechanism for Line-Rate Network Traffic
//! Monitoring*).
//!
//! **Room.** The producer writes a push only while `pos + max_cells - head
//! <= cap`: it writes a whole `T` (its trailing cells are garbage past the
//! record and are overwritten by the next record), so it needs room for the
//! largest record whatever this one's size.
//!
//! *Why it is a FIFO that loses nothing, and no cell is touched by both
//! sides at once.* Consumer at `q` reading a record of `m` cells, producer
//! writing at `p`: the consumer reads only published cells, so `q + m <=
//! tail <= p`; the producer writes only while `p + max_cells <= head + cap`
//! and `head <= q` (head is stored after the read), so the two logical
//! ranges `[q, q + m)` and `[p, p + max_cells)` lie in one window of `cap`
//! positions without overlapping. Two spans of one window map to disjoint
//! cells: a span starting at `s` covers cells `s & mask ..` onward without
//! wrapping, and a span can reach the shadow cells only if it starts in the
//! last `max_cells - 1` cells of the array, in which case every position of
//! the window after it maps to cells below its start. The producer's Release
//! of `tail` after its writes and the consumer's Acquire of it before its
//! reads order each record's bytes; the consumer's Release of `head` after
//! its read and the producer's Acquire before its next write order the
//! reuse. Records are read in the order they were written, from the length
//! their first cell gives (`Packed::cells`), so positions stay in step on
//! both sides.

use manycore_sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use manycore_sync::cell::UnsafeCell as Track;
use manycore_sync::{Arc, CachePadded};
use std::cell::UnsafeCell;
use std::fmt;
use std::mem::{size_of, MaybeUninit};
use std::ptr;

use crate::packed::Packed;

/// One 16-byte, 16-aligned cell.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Cell(#[allow(dead_code)] [u64; 2]);

/// Cells a whole `T` covers.
pub(crate) const fn max_cells<T>() -> usize {
    let n = size_of::<T>().div_ceil(size_of::<Cell>());
    if n == 0 {
        1
    } else {
        n
    }
}

/// Four cells on one cache line.
#[repr(C, align(64))]
struct Line(UnsafeCell<MaybeUninit<[Cell; 4]>>);

struct Buffer<T> {
    /// `cap + max_cells - 1` cells (the ring and its shadow cells), in
    /// whole cache lines, so that every line holds four cells.
    lines: Box<[Line]>,
    /// Under loom: one tracked cell per cell, touched over every span that
    /// is read or written, so that the model sees any overlap of the two
    /// sides.
    #[cfg(loom)]
    track: Box<[Track<()>]>,
    mask: u64,
    /// The producer's published position: every record before it is fully
    /// written. Stored (Release) by `Producer::publish`; loaded (Acquire) by
    /// the consumer when its cached copy is used up.
    tail: CachePadded<AtomicU64>,
    /// The consumer's position: every record before it has been moved out.
    /// Stored (Release) by the consumer after each record; loaded (Acquire)
    /// by the producer when its cached copy says there is no room.
    head: CachePadded<AtomicU64>,
    _t: std::marker::PhantomData<T>,
}

// SAFETY: values of T move between exactly two threads; the head/tail
// protocol gives each cell to one side at a time (module docs).
unsafe impl<T: Send> Sync for Buffer<T> {}
// SAFETY: as above; the buffer owns the values of T in flight.
unsafe impl<T: Send> Send for Buffer<T> {}

/// Copies the first `N` cells of a `T` (at most the whole `T`).
///
/// # Safety
/// `src` must be readable and `dst` writable for that many bytes.
#[inline(always)]
unsafe fn copy_cells<T, const N: usize>(src: *const u8, dst: *mut u8) {
    let bytes = const {
        if N * 16 < size_of::<T>() {
            N * 16
        } else {
            size_of::<T>()
        }
    };
    // SAFETY: guaranteed by the caller.
    unsafe { ptr::copy_nonoverlapping(src, dst, bytes) };
}

impl<T: Packed> Buffer<T> {
    #[inline(always)]
    fn span(&self, pos: u64) -> *mut u8 {
        let i = (pos & self.mask) as usize;
        // Cell `i`, by a pointer derived from the whole array (spans of up
        // to `max_cells` from it stay inside it: the shadow cells); the
        // bytes are inside `UnsafeCell`s, so writing through it is allowed.
        let base = UnsafeCell::raw_get(
            self.lines
                .as_ptr()
                .cast::<UnsafeCell<MaybeUninit<[Cell; 4]>>>(),
        );
        base.cast::<u8>().wrapping_add(i * size_of::<Cell>())
    }

    /// Under loom, registers a read or write of cells `[pos, pos + n)`.
    #[inline(always)]
    fn track(&self, _pos: u64, _n: usize, _write: bool) {
        #[cfg(loom)]
        {
            let i = (_pos & self.mask) as usize;
            for t in &self.track[i..i + _n] {
                if _write {
                    t.with_mut(|_| ());
                } else {
                    t.with(|_| ());
                }
            }
        }
    }

    /// Moves the record at `pos` out. Returns it and its length in cells.
    ///
    /// # Safety
    /// A record pushed at `pos` must be published and not yet read.
    #[inline(always)]
    unsafe fn read(&self, pos: u64) -> (T, usize) {
        let mut v = MaybeUninit::<T>::uninit();
        // SAFETY: as ours; `v` is a place for a T.
        let n = unsafe { self.read_into(pos, &mut v) };
        // SAFETY: `Packed`'s contract: a T whose first `n` cells are copied
        // from a valid value (the rest uninitialised) is that value.
        (unsafe { v.assume_init() }, n)
    }

    /// Moves the record at `pos` into `v` (which then holds it: the record
    /// is valid there by `Packed`'s contract). Returns its length in cells.
    ///
    /// # Safety
    /// A record pushed at `pos` must be published and not yet read.
    #[inline(always)]
    unsafe fn read_into(&self, pos: u64, v: &mut MaybeUninit<T>) -> usize {
        let src = self.span(pos);
        self.track(pos, 1, false);
        // SAFETY: the record is published (caller), so its first cell is
        // written, and `Packed`'s contract lets a T be asked its length
        // from its first cell alone.
        let n = unsafe { T::cells_from(src.cast::<T>()) };
        debug_assert!(n >= 1 && n <= max_cells::<T>());
        self.track(pos, n, false);
        let dst = v.as_mut_ptr().cast::<u8>();
        // Copies of a size known at compile time (not a call to memcpy of a
        // variable length, whose wide stores the first loads of the value
        // cannot be forwarded from).
        // SAFETY: the record's `n` cells are published and ours to read;
        // each copy stays within them and within `v`.
        unsafe {
            match n {
                1 => copy_cells::<T, 1>(src, dst),
                2 => copy_cells::<T, 2>(src, dst),
                3 => copy_cells::<T, 3>(src, dst),
                _ => copy_cells::<T, 4>(src, dst),
            }
        }
        n
    }
}

/// The shared buffer, owning the records left in it when both ends are gone.
struct Shared<T: Packed>(Buffer<T>);

impl<T: Packed> Drop for Shared<T> {
    fn drop(&mut self) {
        // Both ends are gone and the producer published everything it wrote
        // (its Drop publishes): drop the records from head to tail.
        let b = &self.0;
        let tail = b.tail.load(Ordering::Acquire);
        let mut pos = b.head.load(Ordering::Acquire);
        while pos != tail {
            // SAFETY: every record from head to tail is published and was
            // not read; nobody else can reach the buffer (we are its last
            // owner).
            let (v, n) = unsafe { b.read(pos) };
            drop(v);
            pos = pos.wrapping_add(n as u64);
        }
    }
}

pub(crate) fn new_ring<T: Packed + Send>(cap: usize) -> (Producer<T>, Consumer<T>) {
    debug_assert!(cap.is_power_of_two() && cap >= max_cells::<T>());
    let len = cap + max_cells::<T>() - 1;
    let buf = Arc::new(Shared(Buffer {
        lines: (0..len.div_ceil(4))
            .map(|_| Line(UnsafeCell::new(MaybeUninit::uninit())))
            .collect(),
        #[cfg(loom)]
        track: (0..len).map(|_| Track::new(())).collect(),
        mask: cap as u64 - 1,
        tail: CachePadded::new(AtomicU64::new(0)),
        head: CachePadded::new(AtomicU64::new(0)),
        _t: std::marker::PhantomData,
    }));
    (
        Producer {
            buf: buf.clone(),
            pos: 0,
            published: 0,
            head: 0,
        },
        Consumer {
            buf,
            pos: 0,
            tail: 0,
        },
    )
}

/// The sending end of a packed ring. Not `Clone`: exactly one producer.
pub struct Producer<T: Packed> {
    buf: Arc<Shared<T>>,
    /// The next position to write.
    pos: u64,
    /// The position last published (`tail`).
    published: u64,
    /// The consumer's position as last read (never ahead of the real one).
    head: u64,
}

/// The receiving end of a packed ring. Not `Clone`: exactly one consumer.
pub struct Consumer<T: Packed> {
    buf: Arc<Shared<T>>,
    /// The next position to read.
    pos: u64,
    /// The producer's published position as last read.
    tail: u64,
}

impl<T: Packed> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("packed::Producer")
            .field("pos", &self.pos)
            .field("published", &self.published)
            .field("capacity", &self.capacity())
            .finish()
    }
}
impl<T: Packed> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("packed::Consumer")
            .field("pos", &self.pos)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl<T: Packed> Producer<T> {
    /// Cells in the ring.
    pub fn capacity(&self) -> usize {
        self.buf.0.mask as usize + 1
    }

    /// True if the next push would fail: fewer free cells than the largest
    /// record takes.
    #[inline]
    pub fn is_full(&self) -> bool {
        let room = self.capacity() as u64 - max_cells::<T>() as u64;
        self.pos.wrapping_sub(self.head) > room
            && self
                .pos
                .wrapping_sub(self.buf.0.head.load(Ordering::Relaxed))
                > room
    }

    /// Writes `value` unpublished; gives it back if there is no room.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), T> {
        self.try_push_with(move || value)
            .map_err(|give_back| give_back())
    }

    /// Writes the value `make` returns, built in place in the ring,
    /// unpublished, if there is room; otherwise gives `make` back uncalled.
    #[inline(always)]
    pub fn try_push_with<F: FnOnce() -> T>(&mut self, make: F) -> Result<(), F> {
        let b = &self.buf.0;
        let room = b.mask + 1 - max_cells::<T>() as u64;
        if self.pos.wrapping_sub(self.head) > room {
            // Acquire; pairs with the consumer's Release of `head`: its reads
            // of the cells we are about to reuse happen before our writes.
            self.head = b.head.load(Ordering::Acquire);
            if self.pos.wrapping_sub(self.head) > room {
                return Err(make);
            }
        }
        b.track(self.pos, max_cells::<T>(), true);
        let dst = b.span(self.pos).cast::<T>();
        // SAFETY: pos + max_cells - head <= cap: the `max_cells` cells from
        // `pos` are free (module docs) and ours until we publish them; the
        // span is inside the allocation and 16-aligned (T's alignment is at
        // most 16: `Packed`'s contract).
        unsafe { dst.write(make()) };
        // SAFETY: just written.
        let n = unsafe { T::cells_from(dst) };
        debug_assert!(n >= 1 && n <= max_cells::<T>());
        self.pos = self.pos.wrapping_add(n as u64);
        Ok(())
    }

    /// Publishes every record written so far. True if there was any.
    #[inline]
    pub fn publish(&mut self) -> bool {
        if self.pos == self.published {
            return false;
        }
        // Release; pairs with the consumer's Acquire of `tail`: the records
        // written before are visible to whoever sees the new tail.
        self.buf.0.tail.store(self.pos, Ordering::Release);
        self.published = self.pos;
        true
    }

    /// Cells written and not yet published.
    #[inline]
    pub fn unpublished(&self) -> usize {
        self.pos.wrapping_sub(self.published) as usize
    }
}

impl<T: Packed> Drop for Producer<T> {
    fn drop(&mut self) {
        // Whatever was written is delivered (or dropped with the buffer).
        self.publish();
    }
}

impl<T: Packed> Consumer<T> {
    /// Cells in the ring.
    pub fn capacity(&self) -> usize {
        self.buf.0.mask as usize + 1
    }

    /// True if no published record is waiting.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == self.tail && self.pos == self.buf.0.tail.load(Ordering::Relaxed)
    }

    /// Moves the oldest published record into `slot`, if there is one:
    /// true if it did (`slot` then holds an initialised `T`, which the
    /// caller owns). Lets the caller use the record where it lies instead of
    /// moving it again.
    #[inline]
    pub fn try_pop_into(&mut self, slot: &mut MaybeUninit<T>) -> bool {
        let b = &self.buf.0;
        if self.pos == self.tail {
            // Acquire; pairs with the Release in `Producer::publish`.
            self.tail = b.tail.load(Ordering::Acquire);
            if self.pos == self.tail {
                return false;
            }
        }
        // SAFETY: pos != tail: a published record starts at pos, not read yet.
        let n = unsafe { b.read_into(self.pos, slot) };
        self.pos = self.pos.wrapping_add(n as u64);
        // Release; as in `try_pop`.
        b.head.store(self.pos, Ordering::Release);
        true
    }

    /// Moves the oldest published record out.
    #[inline]
    pub fn try_pop(&mut self) -> Option<T> {
        let b = &self.buf.0;
        if self.pos == self.tail {
            // Acquire; pairs with the Release in `Producer::publish`.
            self.tail = b.tail.load(Ordering::Acquire);
            if self.pos == self.tail {
                return None;
            }
        }
        // SAFETY: pos != tail: a published record starts at pos, not read yet.
        let (v, n) = unsafe { b.read(self.pos) };
        self.pos = self.pos.wrapping_add(n as u64);
        // Release; pairs with the producer's Acquire of `head`: our read of
        // the record happens before the producer reuses its cells.
        b.head.store(self.pos, Ordering::Release);
        Some(v)
    }
}
