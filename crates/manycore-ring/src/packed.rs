//! A single-producer single-consumer ring of *records*: values that take
//! one to four 16-byte cells each, as their first word (the *header*) says,
//! each published by a store of that header in the cells themselves.
//!
//! Where [`channel`](crate::channel) gives every message a cache line, this
//! ring packs small messages four to a line, and a record is found by the
//! consumer in its own first word, so neither side writes an index the
//! other watches: a stream of small messages moves a quarter of a line per
//! message, whether each is published as it is written
//! ([`Producer::try_push_published_with`]) or a batch at once
//! ([`Producer::try_push`], then [`Producer::publish`]). A record written
//! and not published is invisible to the consumer.
//!
//! ```
//! use manycore_ring::packed::{channel, Packed};
//! use std::mem::MaybeUninit;
//!
//! // A record of one or two cells: the length in its header, shifted past
//! // bit 0 (which a header leaves clear).
//! #[derive(Clone, Copy)]
//! #[repr(C)]
//! struct Msg { head: u64, a: u64, b: MaybeUninit<[u64; 2]> }
//! // SAFETY: `head` is 2 or 4 (never 0, bit 0 clear); a Msg is 32 bytes
//! // and its second cell is a MaybeUninit, so a copy of its first `cells`
//! // cells is a valid Msg equal to it.
//! unsafe impl Packed for Msg {
//!     unsafe fn cells(header: u64) -> usize {
//!         (header >> 1) as usize
//!     }
//! }
//! let (mut tx, mut rx) = channel::<Msg>(16).unwrap();
//! assert!(tx.try_push(Msg { head: 2, a: 7, b: MaybeUninit::uninit() }).is_ok());
//! assert!(tx.try_push(Msg { head: 4, a: 8, b: MaybeUninit::new([9, 10]) }).is_ok());
//! assert!(rx.try_pop().is_none()); // not published yet
//! assert!(tx.publish());
//! assert_eq!(rx.try_pop().unwrap().a, 7);
//! let m = rx.try_pop().unwrap();
//! assert_eq!((m.a, unsafe { m.b.assume_init() }), (8, [9, 10]));
//! assert!(tx.try_push_published_with(|| Msg { head: 2, a: 11, b: MaybeUninit::uninit() }).is_ok());
//! assert_eq!(rx.try_pop().unwrap().a, 11); // published at once
//! assert!(rx.try_pop().is_none());
//! ```
//!
//! The format, the protocol and why it is sound are in the crate's
//! `raw/packed.rs`; the loom models are in `loom_tests.rs`.

pub use crate::raw::packed::{Consumer, Producer};
use crate::{RingError, MAX_CAPACITY};

/// A type whose values travel in a packed ring: its first 8 bytes, its
/// *header*, tell how many of its 16-byte cells a value needs.
///
/// # Safety
///
/// - `align_of::<Self>()` is at most 16, and `size_of::<Self>()` at least 8
///   and at most 64.
/// - The first 8 bytes of every value, read as a `u64`, are initialised,
///   not 0, and have bit 0 clear (a pointer to a table aligned to 2 or
///   more, or a count shifted left, will do): the ring marks a cell with
///   nothing in it by 0, and a record not yet published by bit 0.
/// - `cells(h)`, for the header `h` of a value `v`, returns a count `n`
///   with `1 <= n <= ceil(size_of::<Self>() / 16)`.
/// - A `Self` whose first `min(16 n, size_of)` bytes are copied from `v` and
///   whose other bytes are uninitialised is a valid value equal to `v`
///   (those bytes are padding or `MaybeUninit` in `v`), so moving it out of
///   the ring that way moves `v`.
pub unsafe trait Packed: Sized {
    /// How many cells the value whose header is `header` takes.
    ///
    /// # Safety
    /// `header` is the first 8 bytes of a valid `Self`.
    unsafe fn cells(header: u64) -> usize;
}

/// Makes a packed ring of at least `cells` cells (rounded up to a power of
/// two, and to at least twice the cells of a whole `T`). A push needs room
/// for the largest record and one cell more (the end mark after it).
pub fn channel<T: Packed + Send>(cells: usize) -> Result<(Producer<T>, Consumer<T>), RingError> {
    if cells == 0 || cells > MAX_CAPACITY {
        return Err(RingError::InvalidCapacity(cells));
    }
    const {
        assert!(
            std::mem::align_of::<T>() <= 16
                && std::mem::size_of::<T>() >= 8
                && std::mem::size_of::<T>() <= 64
        )
    };
    let min = 2 * crate::raw::packed::max_cells::<T>();
    Ok(crate::raw::packed::new_ring(
        cells.next_power_of_two().max(min.next_power_of_two()),
    ))
}
