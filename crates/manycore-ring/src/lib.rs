//! A single-producer single-consumer ring of cache-line slots: the message
//! channel of manycore, after Barrelfish's UMP channels on the SCC (Simon
//! Peter, Timothy Roscoe, Andrew Baumann, *Barrelfish on the Intel
//! Single-chip Cloud Computer*: each message one cache line, the receiver
//! polling the line itself) and glommio's SPSC ring.
//!
//! Every slot starts on its own cache line and carries a sequence word. The
//! producer writes the payload, then publishes the slot with a Release store
//! of its sequence; the consumer learns that a slot is full from that word, so
//! **the consumer never reads the producer's index**, and it never writes a
//! slot. It publishes its own position on a line of its own, which the
//! producer caches and re-reads only when its copy says the ring is full: on
//! the fast path the only cache lines that move between cores are the slots,
//! each once per message, one way. The high 32 bits of
//! the sequence word travel with the message as a free *tag* (manycore keeps a
//! Lamport clock or flags there).
//!
//! ```
//! let (mut tx, mut rx) = manycore_ring::channel::<u64>(4).unwrap();
//! assert!(tx.try_push(1).is_ok());
//! tx.try_push_tagged(2, 7).unwrap();
//! assert_eq!(rx.try_pop(), Some(1));
//! assert_eq!(rx.try_pop_tagged(), Some((2, 7)));
//! assert_eq!(rx.try_pop(), None);
//! ```
//!
//! Capacity is a power of two (requests are rounded up; at least 2). With a
//! payload of up to 56 bytes (align at most 8) a slot is exactly one 64-byte line.
//!
//! [`packed`] is the other ring of the crate, the one manycore's runtime
//! sends its messages through: records of one to four 16-byte cells (four
//! small messages to a line), each published by a store of its first word
//! in its own cell, one at a time or a batch at once, as the producer
//! chooses.
//!
//! All of the crate's `unsafe` code is in `raw/` (`raw/mod.rs` for this
//! ring, `raw/packed.rs` for the packed one), with each protocol and why it
//! is sound; the loom models are in `loom_tests.rs`.
//! `examples/spsc.rs` passes values between two threads.

#![warn(missing_docs)]

pub mod packed;
mod raw;

pub use raw::{Consumer, Producer};
use std::fmt;

/// The largest capacity a ring may have.
pub const MAX_CAPACITY: usize = 1 << 30;

/// Why a ring could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingError {
    /// Capacity 0, or above [`MAX_CAPACITY`].
    InvalidCapacity(usize),
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::InvalidCapacity(c) => {
                write!(
                    f,
                    "ring capacity {c} is invalid (must be 1..={MAX_CAPACITY})"
                )
            }
        }
    }
}

impl std::error::Error for RingError {}

/// Makes a ring with room for at least `capacity` messages (rounded up to a
/// power of two, at least 2) and returns its two ends.
pub fn channel<T: Send>(capacity: usize) -> Result<(Producer<T>, Consumer<T>), RingError> {
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(RingError::InvalidCapacity(capacity));
    }
    Ok(raw::new_ring(capacity.next_power_of_two().max(2)))
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(test)]
mod test_rec;

#[cfg(all(test, loom))]
mod loom_tests;
