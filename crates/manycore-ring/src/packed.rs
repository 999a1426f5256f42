//! A single-producer single-consumer ring of *records*: values that take
//! one to four 16-byte cells each, as their first cell says, written by the
//! producer and published in batches.
//!
//! Where [`channel`](crate::channel) gives every message a cache line and
//! publishes it with the message's own sequence word, this ring packs small
//! messages four to a line and publishes with one index store for as many
//! messages as its producer wrote since the last [`Producer::publish`]. A
//! stream of small messages then moves a quarter of a line, and a fraction
//! of an index line, per message. The producer decides when to publish: a
//! record written and not published is invisible to the consumer.
//!
//! ```
//! use manycore_ring::packed::{channel, Packed};
//! use std::mem::MaybeUninit;
//!
//! // A record of one or two cells: the length in its first word.
//! #[derive(Clone, Copy)]
//! #[repr(C)]
//! struct Msg { cells: u64, a: u64, b: MaybeUninit<[u64; 2]> }
//! // SAFETY: `cells_from` reads the first word only; a Msg is 32 bytes and
//! // its second cell is a MaybeUninit, so a copy of its first `cells`
//! // cells is a valid Msg equal to it.
//! unsafe impl Packed for Msg {
//!     unsafe fn cells_from(p: *const Self) -> usize {
//!         // SAFETY: the caller gives a pointer to a Msg whose first cell is written.
//!         unsafe { (*p).cells as usize }
//!     }
//! }
//! let (mut tx, mut rx) = channel::<Msg>(16).unwrap();
//! assert!(tx.try_push(Msg { cells: 1, a: 7, b: MaybeUninit::uninit() }).is_ok());
//! assert!(tx.try_push(Msg { cells: 2, a: 8, b: MaybeUninit::new([9, 10]) }).is_ok());
//! assert!(rx.try_pop().is_none()); // not published yet
//! assert!(tx.publish());
//! assert_eq!(rx.try_pop().unwrap().a, 7);
//! let m = rx.try_pop().unwrap();
//! assert_eq!((m.a, unsafe { m.b.assume_init() }), (8, [9, 10]));
//! assert!(rx.try_pop().is_none());
//! ```
//!
//! The format, the protocol and why it is sound are in the crate's
//! `raw/packed.rs`; the loom model is in `loom_tests.rs`.

pub use crate::raw::packed::{Consumer, Producer};
use crate::{RingError, MAX_CAPACITY};

/// A type whose values travel in a packed ring: its first 16-byte cell
/// tells how many of its cells a value needs.
///
/// # Safety
///
/// - `align_of::<Self>()` is at most 16 and `size_of::<Self>()` at most 64.
/// - `cells_from(p)` reads only the first 16 bytes (or fewer) at `p` and
///   returns, for a value `v` whose first cell is there, a count `n` with
///   `1 <= n <= ceil(size_of::<Self>() / 16)`, the same for every copy of
///   `v`'s first cell.
/// - A `Self` whose first `min(16 n, size_of)` bytes are copied from `v` and
///   whose other bytes are uninitialised is a valid value equal to `v`
///   (those bytes are padding or `MaybeUninit` in `v`), so moving it out of
///   the ring that way moves `v`.
pub unsafe trait Packed: Sized {
    /// How many cells the value whose first cell is at `p` takes.
    ///
    /// # Safety
    /// `p` points to a `Self` whose first cell is initialised (its other
    /// cells may not be).
    unsafe fn cells_from(p: *const Self) -> usize;
}

/// Makes a packed ring of at least `cells` cells (rounded up to a power of
/// two, and to at least twice the cells of a whole `T`).
pub fn channel<T: Packed + Send>(cells: usize) -> Result<(Producer<T>, Consumer<T>), RingError> {
    if cells == 0 || cells > MAX_CAPACITY {
        return Err(RingError::InvalidCapacity(cells));
    }
    const { assert!(std::mem::align_of::<T>() <= 16 && std::mem::size_of::<T>() <= 64) };
    let min = 2 * crate::raw::packed::max_cells::<T>();
    Ok(crate::raw::packed::new_ring(
        cells.next_power_of_two().max(min.next_power_of_two()),
    ))
}
