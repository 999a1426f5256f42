//! The record type the packed ring's tests and loom models push: it
//! carries a word per cell it takes, so that a torn or overlapping record
//! is seen.

/// A record of the packed ring: a header (its length in cells, 1 to 4,
/// shifted past bit 0), an id, and up to six more words, each derived from
/// the id, in the cells it takes.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Rec {
    head: u64,
    pub(crate) id: u64,
    more: std::mem::MaybeUninit<[u64; 6]>,
}

// SAFETY: the header is `cells << 1` with `cells` in 1..=4 (never 0, bit 0
// clear); a Rec is 64 bytes, so its words past `cells` cells are never
// read (they are a MaybeUninit).
unsafe impl crate::packed::Packed for Rec {
    unsafe fn cells(header: u64) -> usize {
        (header >> 1) as usize
    }
}

impl Rec {
    pub(crate) fn new(cells: u64, id: u64) -> Self {
        let mut more = [0u64; 6];
        for (k, w) in more.iter_mut().enumerate() {
            *w = id.wrapping_mul(31).wrapping_add(k as u64);
        }
        assert!((1..=4).contains(&cells));
        Rec {
            head: cells << 1,
            id,
            more: std::mem::MaybeUninit::new(more),
        }
    }

    /// Its length in cells.
    pub(crate) fn cells(&self) -> u64 {
        self.head >> 1
    }

    /// The words this record carries (those of its own cells).
    pub(crate) fn words(&self) -> Vec<u64> {
        let n = (self.cells() as usize * 2 - 2).min(6);
        let p = self.more.as_ptr().cast::<u64>();
        // SAFETY: the first `n` words of `more` lie in the record's cells,
        // which the ring copied from an initialised value.
        (0..n).map(|k| unsafe { p.add(k).read() }).collect()
    }
}
