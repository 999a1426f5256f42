//! The record type the packed ring's tests and loom models push: it
//! carries a word per cell it takes, so that a torn or overlapping record
//! is seen.

/// A record of the packed ring: `cells` cells (1 to 4), an id, and up to
/// six more words, each derived from the id, in the cells it takes.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Rec {
    pub(crate) cells: u64,
    pub(crate) id: u64,
    more: std::mem::MaybeUninit<[u64; 6]>,
}

// SAFETY: `cells_from` reads the first word; `cells` is kept in 1..=4 and
// a Rec is 64 bytes, so its words past `cells` cells are never read (they
// are a MaybeUninit).
unsafe impl crate::packed::Packed for Rec {
    unsafe fn cells_from(p: *const Self) -> usize {
        // SAFETY: the caller gives a Rec whose first cell is written.
        unsafe { (*p).cells as usize }
    }
}

impl Rec {
    pub(crate) fn new(cells: u64, id: u64) -> Self {
        let mut more = [0u64; 6];
        for (k, w) in more.iter_mut().enumerate() {
            *w = id.wrapping_mul(31).wrapping_add(k as u64);
        }
        Rec {
            cells,
            id,
            more: std::mem::MaybeUninit::new(more),
        }
    }

    /// The words this record carries (those of its own cells).
    pub(crate) fn words(&self) -> Vec<u64> {
        let n = (self.cells as usize * 2 - 2).min(6);
        let p = self.more.as_ptr().cast::<u64>();
        // SAFETY: the first `n` words of `more` lie in the record's cells,
        // which the ring copied from an initialised value.
        (0..n).map(|k| unsafe { p.add(k).read() }).collect()
    }
}
