//! `Claims`: the arbitration half of an instance's synchronisation counter
//! (the CEFOS/FUCE firing rule, with MuSE's per-thread counters): one bit
//! per input slot, set on the owner core when a signal's value for the
//! slot arrives there. The first signal to set a bit is delivered; any
//! later one for the same slot is refused (`Filled`, or `Fired` once every
//! bit is set). The owner's half (a plain count of values still missing,
//! see `pending.rs`) fires the instance when it reaches zero.
//!
//! Only the owner core's thread writes the word (local signals run there,
//! remote ones are messages that claim there), so a claim is a plain load
//! and store. The word is atomic only so that any thread may read it
//! (`Instance::is_complete`, a snapshot).

use manycore_sync::atomic::{AtomicU64, Ordering};

/// The most inputs an instance can have: one bit each in a 64-bit word.
pub const MAX_INPUTS: usize = 64;

/// What a sender's claim on a slot found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The slot was free and is now this sender's to deliver.
    Won,
    /// Another sender filled the slot before.
    Filled,
    /// Every slot was filled before: the instance has fired (or fires).
    Fired,
}

/// The claim word of one instance.
pub(crate) struct Claims {
    word: AtomicU64,
    full: u64,
}

impl Claims {
    /// Claims for `inputs` slots (at most [`MAX_INPUTS`]), none filled.
    #[inline]
    pub(crate) fn new(inputs: usize) -> Self {
        debug_assert!(inputs <= MAX_INPUTS);
        let full = if inputs >= 64 {
            u64::MAX
        } else {
            (1u64 << inputs) - 1
        };
        Self {
            word: AtomicU64::new(0),
            full,
        }
    }

    /// Claims with every slot filled (an instance started with all its
    /// inputs, or with none declared).
    #[inline]
    pub(crate) fn filled(inputs: usize) -> Self {
        let c = Self::new(inputs);
        c.word.store(c.full, Ordering::Relaxed);
        c
    }

    /// Claims slot `slot` (< the number of inputs), on the owner core's
    /// thread only: a plain load and store (Relaxed; no other thread
    /// writes the word, and the owner's claims are ordered by its program
    /// order). The values travel to the owner through messages
    /// (release/acquire in the ring), never through this word.
    #[inline]
    pub(crate) fn claim(&self, slot: usize) -> Claim {
        let bit = 1u64 << slot;
        let w = self.word.load(Ordering::Relaxed);
        if w & bit == 0 {
            self.word.store(w | bit, Ordering::Relaxed);
            Claim::Won
        } else if w == self.full {
            Claim::Fired
        } else {
            Claim::Filled
        }
    }

    /// Whether every slot has been claimed.
    pub(crate) fn is_complete(&self) -> bool {
        self.word.load(Ordering::Relaxed) == self.full
    }
}
