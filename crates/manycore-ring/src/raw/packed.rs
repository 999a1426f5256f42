//! The packed ring's `unsafe`: records of 16-byte cells, each published by
//! its own header word.
//!
//! **Format.** The ring is an array of `cap` 16-byte cells (a power of two)
//! plus `max_cells - 1` *shadow* cells after the last, where `max_cells` is
//! the number of cells a whole `T` covers (`size_of::<T>()` rounded up to
//! 16); all of it starts zeroed. Positions count cells, for ever; a record
//! pushed at position `p` takes `n = T::cells(header)` positions (`1 ..=
//! max_cells`) and is stored contiguously from cell `p & mask`, running
//! into the shadow cells when it starts near the end instead of wrapping,
//! so that every record is one plain `T`-shaped span of memory and no
//! padding record is ever needed. The next record starts at `p + n`. A
//! small message (a function pointer and a word) is one cell: four to a
//! cache line.
//!
//! **Headers.** The first word of a record is its *header*: the value's own
//! first word (`Packed`: never 0, bit 0 clear). The header word of the cell
//! at the consumer's position is the only word either side accesses
//! atomically, and it says what lies there:
//!
//! - `0`: nothing yet (the *end mark*);
//! - `h | 1`: the first record of a batch, written and not published
//!   (*pending*): the consumer stops here;
//! - `h`: a published record of `T::cells(h)` cells.
//!
//! **Push** at `p`: the producer builds the value, copies its bytes after
//! the header (`[8, min(16 n, size_of::<T>()))`, only the record's own
//! cells: nothing past them is written), stores the end mark `0` into the
//! header word of the next position `p + n` (Relaxed), and then the header
//! of `p`: `h` with Release (a push that publishes at once), or `h | 1`
//! Relaxed (the first record of a batch), or, behind a pending record, `h`
//! Relaxed (the consumer does not pass the pending record, so these are
//! not read before the batch is published). **Publish** stores the batch's
//! first header without its bit, with Release: one store, in the batch's
//! first cell, and the batch becomes visible at once (whoever sees that
//! header sees every record and header written before it). **Pop** at `q`: the consumer loads `q`'s header
//! with Acquire; if it is not a published record (0 or pending) the ring is
//! empty; otherwise it copies the record's cells out, advances by `n` and
//! stores its position `head` (Release, on a line of its own). The producer
//! reads `head` (Acquire) only when its cached copy says there is no room.
//! So a record costs the lines it lies on and no shared index: a stream of
//! one-cell records moves a quarter of a line per message, published one by
//! one or in batches (FastForward's full flag in the data, John Giacomoni,
//! Tipp Moseley, Manish Vachharajani, *FastForward for Efficient Pipeline
//! Parallelism*, with Lamport's cached `head` as in rtrb, and records of
//! several sizes as in Barrelfish's UMP).
//!
//! *Why a batch stores its headers last* (rather than publishing every
//! record as it is written and leaving only the caller's doorbell for the
//! end): a consumer that keeps up looks at the header of its position,
//! which lies on the line the producer is writing; were each record
//! published at once, that line would go back and forth for every record
//! on it. Pending, the consumer sees nothing new until the batch is
//! published and then pulls each line once, after the producer is done
//! with it; and publishing is one store, as with an index, but into the
//! batch's first cell instead of a line of its own.
//!
//! **Room.** The producer pushes only while `pos + max_cells + 1 - head <=
//! cap`: the largest record and the end mark after it.
//!
//! *Why the header word at the consumer's position never lies.* The
//! consumer reaches position `q` either at the start (every word zero) or
//! by reading the record before it, whose header was stored (Release) after
//! the end mark at `q` (program order), and read by the consumer (Acquire);
//! so it sees that end mark or a later store to the word. The only later
//! stores while the consumer is at `q` are the headers of the record pushed
//! at `q` (pending, then published): no record's body covers the header
//! word of a position at or after its own end, because a push copies only
//! its own cells. Whatever the word held in an earlier lap (the header of
//! an older record, or a body word of one) was overwritten by the end mark
//! first. So a published header at `q` is the one of the record pushed at
//! `q` in this lap, and its Release follows every byte of that record.
//!
//! *Why it is a FIFO that loses nothing, and no word is accessed by both
//! sides at once except the header word.* Consumer at `q` reading a record
//! of `m` cells, producer writing at `p`: the consumer reads only published
//! records, so `q + m <= p`; the producer writes only while
//! `p + max_cells + 1 <= head + cap` and `head <= q` (head is stored after the read), so
//! the logical ranges `[q, q + m)` and `[p, p + max_cells]` lie in one
//! window of `cap` positions without overlapping. Two spans of one window
//! map to disjoint cells: a span starting at `s` covers cells `s & mask ..`
//! onward without wrapping, and a span can reach the shadow cells only if
//! it starts in the last `max_cells - 1` cells of the array, in which case
//! every position of the window after it maps to cells below its start. The
//! end mark goes to the cell of `p + n & mask` (never a shadow cell), inside
//! the producer's window. The consumer's Release of `head` after its read
//! and the producer's Acquire before its next write order the reuse of
//! cells a lap later, including the body words that become header words
//! (atomic and plain accesses of one word never overlap in time). Records
//! are read in the order they were written, from the length their header
//! gives, so positions stay in step on both sides. The headers of a batch
//! after its first are stored Relaxed while the consumer waits at the
//! first (pending): it reads them only after the first's Acquire, which
//! orders them.

use manycore_sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use manycore_sync::cell::UnsafeCell as Track;
use manycore_sync::{Arc, CachePadded};
use std::cell::UnsafeCell;
use std::fmt;
use std::mem::{size_of, ManuallyDrop, MaybeUninit};
use std::ptr;

use crate::packed::Packed;

/// The bit of a header word that marks a record written and not published.
const PENDING: u64 = 1;

/// Under loom, the value a cell's header word takes when a record's body
/// covers it: a header that would read as published, so that a consumer
/// that took a body word for a header fails the model (`Buffer::header`).
#[cfg(loom)]
const BODY: u64 = 0xB0D7_0000_0000_0000;

/// True if a header word holds a published record.
#[inline(always)]
fn published(h: u64) -> bool {
    h != 0 && h & PENDING == 0
}

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
    /// whole cache lines, so that every line holds four cells; zeroed.
    lines: Box<[Line]>,
    /// Under loom: the header word of every cell (loom cannot make an
    /// atomic of plain memory); a push that covers a cell's header word
    /// with its body stores `BODY` there.
    #[cfg(loom)]
    heads: Box<[AtomicU64]>,
    /// Under loom: one tracked cell per 8-byte word, touched by every plain
    /// read or write of the word (and by the end mark's store and the
    /// consumer's header load), so that the model sees any overlap of the
    /// two sides.
    #[cfg(loom)]
    track: Box<[Track<()>]>,
    mask: u64,
    /// The consumer's position: every record before it has been moved out.
    /// Stored (Release) by the consumer after each record; loaded (Acquire)
    /// by the producer when its cached copy says there is no room.
    head: CachePadded<AtomicU64>,
    _t: std::marker::PhantomData<T>,
}

// SAFETY: values of T move between exactly two threads; the header
// protocol gives each cell to one side at a time (module docs).
unsafe impl<T: Send> Sync for Buffer<T> {}
// SAFETY: as above; the buffer owns the values of T in flight.
unsafe impl<T: Send> Send for Buffer<T> {}

/// Copies the bytes of a `T`'s first `N` cells after its header word (at
/// most to the end of the `T`).
///
/// # Safety
/// `src` must be readable and `dst` writable for that many bytes past 8.
#[inline(always)]
unsafe fn copy_body<T, const N: usize>(src: *const u8, dst: *mut u8) {
    let bytes = const {
        if N * 16 < size_of::<T>() {
            N * 16 - 8
        } else {
            size_of::<T>() - 8
        }
    };
    // SAFETY: guaranteed by the caller.
    unsafe { ptr::copy_nonoverlapping(src.add(8), dst.add(8), bytes) };
}

/// [`copy_body`] for a record of `n` cells: copies of a size known at
/// compile time (not a call to memcpy of a variable length, whose wide
/// stores the first loads of the value cannot be forwarded from).
///
/// # Safety
/// As `copy_body`, for `n` cells (1 to 4).
#[inline(always)]
unsafe fn copy_cells<T>(n: usize, src: *const u8, dst: *mut u8) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        match n {
            1 => copy_body::<T, 1>(src, dst),
            2 => copy_body::<T, 2>(src, dst),
            3 => copy_body::<T, 3>(src, dst),
            _ => copy_body::<T, 4>(src, dst),
        }
    }
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

    /// The header word of the cell of position `pos`.
    #[inline(always)]
    fn header(&self, pos: u64) -> &AtomicU64 {
        #[cfg(not(loom))]
        {
            // SAFETY: the cell's first 8 bytes are inside the allocation,
            // 16-aligned, initialised (zeroed at creation, then written
            // whole), and live as long as `self`; they are accessed
            // atomically only through this function, and plain accesses
            // of them (a record's body) never overlap an atomic one in
            // time (module docs).
            unsafe { AtomicU64::from_ptr(self.span(pos).cast::<u64>()) }
        }
        #[cfg(loom)]
        {
            &self.heads[(pos & self.mask) as usize]
        }
    }

    /// Under loom, registers a plain read or write of the words `words`
    /// (counted from the first word of the cell of `pos`).
    #[inline(always)]
    fn track(&self, _pos: u64, _words: std::ops::Range<usize>, _write: bool) {
        #[cfg(loom)]
        {
            let i = 2 * (_pos & self.mask) as usize;
            for (w, t) in self.track[i + _words.start..i + _words.end]
                .iter()
                .enumerate()
            {
                if _write {
                    t.with_mut(|_| ());
                } else {
                    t.with(|_| ());
                }
                // A body word over a later cell's header word.
                let w = _words.start + w;
                if _write && w > 0 && w % 2 == 0 {
                    self.heads[(i + w) / 2].store(BODY, Ordering::Relaxed);
                }
            }
        }
    }

    /// The consumer's look at the header of `pos` (Acquire or Relaxed).
    #[inline(always)]
    fn load_header(&self, pos: u64, order: Ordering) -> u64 {
        self.track(pos, 0..1, false);
        let h = self.header(pos).load(order);
        #[cfg(loom)]
        assert_ne!(h, BODY, "a body word read as a header");
        h
    }

    /// Moves the published record at `pos`, whose header is `h`, into `v`
    /// (which then holds it: the record is valid there by `Packed`'s
    /// contract). Returns its length in cells.
    ///
    /// # Safety
    /// `h` is the header of a published record at `pos`, loaded with
    /// Acquire (or with exclusive access), not yet read.
    #[inline(always)]
    unsafe fn read_into(&self, pos: u64, h: u64, v: &mut MaybeUninit<T>) -> usize {
        // SAFETY: `h` is the first word of a valid T (caller).
        let n = unsafe { T::cells(h) };
        debug_assert!(n >= 1 && n <= max_cells::<T>());
        self.track(pos, 1..2 * n, false);
        let dst = v.as_mut_ptr().cast::<u8>();
        // SAFETY: `v` has room for a T (at least 8 bytes: `Packed`); the
        // record's `n` cells are published and ours to read; the copy
        // stays within them and within `v`.
        unsafe {
            dst.cast::<u64>().write_unaligned(h);
            copy_cells::<T>(n, self.span(pos), dst);
        }
        n
    }

    /// Moves the published record at `pos`, whose header is `h`, out.
    ///
    /// # Safety
    /// As `read_into`.
    #[inline(always)]
    unsafe fn read(&self, pos: u64, h: u64) -> (T, usize) {
        let mut v = MaybeUninit::<T>::uninit();
        // SAFETY: as ours.
        let n = unsafe { self.read_into(pos, h, &mut v) };
        // SAFETY: `Packed`'s contract: a T whose first `n` cells are copied
        // from a valid value (the rest uninitialised) is that value.
        (unsafe { v.assume_init() }, n)
    }
}

/// The shared buffer, owning the records left in it when both ends are gone.
struct Shared<T: Packed>(Buffer<T>);

impl<T: Packed> Drop for Shared<T> {
    fn drop(&mut self) {
        // Both ends are gone and the producer published everything it wrote
        // (its Drop publishes): drop the records from head to the end mark.
        let b = &self.0;
        let mut pos = b.head.load(Ordering::Acquire);
        loop {
            let h = b.load_header(pos, Ordering::Acquire);
            if !published(h) {
                break;
            }
            // SAFETY: a published record, not read; nobody else can reach
            // the buffer (we are its last owner).
            let (v, n) = unsafe { b.read(pos, h) };
            drop(v);
            pos = pos.wrapping_add(n as u64);
        }
    }
}

pub(crate) fn new_ring<T: Packed + Send>(cap: usize) -> (Producer<T>, Consumer<T>) {
    debug_assert!(cap.is_power_of_two() && cap > max_cells::<T>());
    let len = cap + max_cells::<T>() - 1;
    let buf = Arc::new(Shared(Buffer {
        lines: (0..len.div_ceil(4))
            .map(|_| Line(UnsafeCell::new(MaybeUninit::zeroed())))
            .collect(),
        #[cfg(loom)]
        heads: (0..len).map(|_| AtomicU64::new(0)).collect(),
        #[cfg(loom)]
        track: (0..2 * len).map(|_| Track::new(())).collect(),
        mask: cap as u64 - 1,
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
        Consumer { buf, pos: 0 },
    )
}

/// The sending end of a packed ring. Not `Clone`: exactly one producer.
pub struct Producer<T: Packed> {
    buf: Arc<Shared<T>>,
    /// The next position to write.
    pos: u64,
    /// Every record before this position is published.
    published: u64,
    /// The consumer's position as last read (never ahead of the real one).
    head: u64,
}

/// The receiving end of a packed ring. Not `Clone`: exactly one consumer.
pub struct Consumer<T: Packed> {
    buf: Arc<Shared<T>>,
    /// The next position to read.
    pos: u64,
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

    /// The most a push may find used: room for the largest record and
    /// the end mark after it.
    #[inline(always)]
    fn room(&self) -> u64 {
        self.buf.0.mask - max_cells::<T>() as u64
    }

    /// True if the next push would fail: fewer free cells than the largest
    /// record and the end mark take.
    #[inline]
    pub fn is_full(&self) -> bool {
        let room = self.room();
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

    /// Writes the value `make` returns unpublished, if there is room;
    /// otherwise gives `make` back uncalled.
    #[inline(always)]
    pub fn try_push_with<F: FnOnce() -> T>(&mut self, make: F) -> Result<(), F> {
        self.push::<false, F>(make)
    }

    /// Writes the value `make` returns and publishes it at once, with every
    /// record written before it, if there is room; otherwise gives `make`
    /// back uncalled (and publishes nothing).
    #[inline(always)]
    pub fn try_push_published_with<F: FnOnce() -> T>(&mut self, make: F) -> Result<(), F> {
        if self.pos != self.published {
            self.push::<false, F>(make)?;
            self.publish();
            return Ok(());
        }
        self.push::<true, F>(make)?;
        self.published = self.pos;
        Ok(())
    }

    /// The one push: `PUBLISH` stores the header published (Release),
    /// otherwise pending (Relaxed).
    #[inline(always)]
    fn push<const PUBLISH: bool, F: FnOnce() -> T>(&mut self, make: F) -> Result<(), F> {
        let b = &self.buf.0;
        let room = self.room();
        if self.pos.wrapping_sub(self.head) > room {
            // Acquire; pairs with the consumer's Release of `head`: its reads
            // of the cells we are about to reuse happen before our writes.
            self.head = b.head.load(Ordering::Acquire);
            if self.pos.wrapping_sub(self.head) > room {
                return Err(make);
            }
        }
        let v = ManuallyDrop::new(make());
        let src = (&raw const *v).cast::<u8>();
        // SAFETY: a T has at least 8 bytes and its first 8 are its header,
        // initialised (`Packed`).
        let h = unsafe { src.cast::<u64>().read_unaligned() };
        debug_assert!(published(h));
        // SAFETY: `h` is the first word of a valid T.
        let n = unsafe { T::cells(h) };
        debug_assert!(n >= 1 && n <= max_cells::<T>());
        b.track(self.pos, 1..2 * n, true);
        // SAFETY: pos + max_cells + 1 - head <= cap: the cells of
        // `[pos, pos + n]` are free (module docs) and ours until we publish
        // them; the copy stays inside the record's cells and inside `v`.
        // The value is moved into the ring (`v` is not dropped).
        unsafe { copy_cells::<T>(n, src, b.span(self.pos)) };
        let next = self.pos.wrapping_add(n as u64);
        b.track(next, 0..1, true);
        // The end mark: whatever the next position's header word held (a
        // body word of an older record) is not read as a header.
        b.header(next).store(0, Ordering::Relaxed);
        if self.pos != self.published {
            // Behind a pending record, which the consumer does not pass
            // before the batch is published: the header as it will be read
            // (Relaxed; `publish`'s Release orders it).
            b.header(self.pos).store(h, Ordering::Relaxed);
        } else if PUBLISH {
            // Release; pairs with the consumer's Acquire of the header: the
            // record's body and the end mark are visible to whoever sees it.
            b.header(self.pos).store(h, Ordering::Release);
        } else {
            // The first record of a batch: pending until `publish`.
            b.header(self.pos).store(h | PENDING, Ordering::Relaxed);
        }
        self.pos = next;
        Ok(())
    }

    /// Publishes every record written so far. True if there was any.
    #[inline]
    pub fn publish(&mut self) -> bool {
        if self.pos == self.published {
            return false;
        }
        let b = &self.buf.0;
        // Our own store: the batch's first header, pending.
        let h = b.header(self.published).load(Ordering::Relaxed) & !PENDING;
        // Release; pairs with the consumer's Acquire of the header: every
        // record of the batch (their headers too) is visible to whoever
        // sees this one.
        b.header(self.published).store(h, Ordering::Release);
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
        !published(self.buf.0.load_header(self.pos, Ordering::Relaxed))
    }

    /// Moves the oldest published record into `slot`, if there is one:
    /// true if it did (`slot` then holds an initialised `T`, which the
    /// caller owns). Lets the caller use the record where it lies instead of
    /// moving it again.
    #[inline]
    pub fn try_pop_into(&mut self, slot: &mut MaybeUninit<T>) -> bool {
        let b = &self.buf.0;
        // Acquire; pairs with the Release of the header by the producer.
        let h = b.load_header(self.pos, Ordering::Acquire);
        if !published(h) {
            return false;
        }
        // SAFETY: a published record at pos, loaded with Acquire, not read.
        let n = unsafe { b.read_into(self.pos, h, slot) };
        self.pos = self.pos.wrapping_add(n as u64);
        // Release; as in `try_pop`.
        b.head.store(self.pos, Ordering::Release);
        true
    }

    /// Moves the oldest published record out.
    #[inline]
    pub fn try_pop(&mut self) -> Option<T> {
        let b = &self.buf.0;
        // Acquire; pairs with the Release of the header by the producer.
        let h = b.load_header(self.pos, Ordering::Acquire);
        if !published(h) {
            return None;
        }
        // SAFETY: a published record at pos, loaded with Acquire, not read.
        let (v, n) = unsafe { b.read(self.pos, h) };
        self.pos = self.pos.wrapping_add(n as u64);
        // Release; pairs with the producer's Acquire of `head`: our read of
        // the record happens before the producer reuses its cells.
        b.head.store(self.pos, Ordering::Release);
        Some(v)
    }
}
