//! `Claims`: the shared half of an instance's synchronisation counter (the
//! CEFOS/FUCE firing rule, with MuSE's per-thread counters): one bit per
//! input slot, set by the sender that fills the slot. Setting a bit is the
//! right, and the duty, to deliver that slot's value to the instance's
//! owner core; the owner's half (a plain count of values still missing, see
//! `pending.rs`) fires the instance when it reaches zero.
//!
//! The bit is what lets a sender on any core learn at once, with a typed
//! error, that it filled a slot twice or signalled an instance that has all
//! its inputs: exactly one `fetch_or` finds each bit clear.

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

    /// Claims slot `slot` (< the number of inputs).
    ///
    /// Relaxed: the claim only arbitrates between senders, and the single
    /// modification order of the word is enough for that (exactly one
    /// `fetch_or` sees the bit clear). The value itself travels to the owner
    /// through a message (release/acquire in the ring) or stays on the
    /// owner's own thread, never through this word.
    ///
    /// Only the claimed bit of the old word is looked at, so the claim is
    /// one locked bit-test-and-set, not a compare-and-swap loop. A loser
    /// then reads the word to tell `Fired` from `Filled`: the word only
    /// gains bits, so a loser that happens after the firing (after every
    /// claim) reads it full.
    #[inline]
    pub(crate) fn claim(&self, slot: usize) -> Claim {
        let bit = 1u64 << slot;
        if self.word.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            Claim::Won
        } else if self.word.load(Ordering::Relaxed) == self.full {
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
