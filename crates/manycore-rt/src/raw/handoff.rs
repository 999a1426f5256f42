//! A table of one-shot hand-off cells, one per source, through which a
//! sender gives a receiver the consumer end of a ring it has just made (the
//! channels bound on demand of Barrelfish on the SCC). A cell is filled at
//! most once, by its source, and emptied at most once, by whoever takes it
//! (the receiver, or after the receiver's exit whoever holds its
//! parked-consumer lock); the table frees what nobody took.
//!
//! Cells live in chunks allocated on first use, so a table for `len`
//! sources costs one pointer per `CHUNK` sources until someone binds: the
//! memory grows with the pairs that talk, not with the square of the cores.
//! A count of the offers not taken yet lets a receiver with none pending
//! look at one word. The protocol around it (the receiver's discovery
//! through its active-sender bitmap and its sleep re-check) is in the
//! crate's `README.md`.

use manycore_sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::marker::PhantomData;
use std::ptr;

/// Cells per chunk (two under loom, to keep the models small).
#[cfg(not(loom))]
const CHUNK: usize = 64;
#[cfg(loom)]
const CHUNK: usize = 2;

struct Chunk<T> {
    /// Null while empty. Stored once with Release by the cell's source in
    /// `offer` (a CAS from null), after the value was boxed; pairs with the
    /// Acquire swap in `take`, which empties it.
    cells: [AtomicPtr<T>; CHUNK],
}

/// One receiver's table; see the module docs.
pub(crate) struct HandoffTable<T> {
    /// The chunks, null until a source of that chunk first offers. Set once
    /// by a CAS from null (Release: the chunk's cells were initialised
    /// before; Acquire on failure: the winner's chunk is used instead);
    /// loaded with Acquire by everyone who looks at a cell.
    chunks: Box<[AtomicPtr<Chunk<T>>]>,
    /// Values offered and not taken yet. Bumped (Relaxed) by `offer`
    /// *before* it fills the cell, and lowered (Relaxed) by `take` after it
    /// emptied one, so it is never below the number of full cells (the
    /// cell's Release/Acquire orders the bump before the lowering). Read by
    /// `has_offer`, so that a receiver with nothing pending looks at one
    /// word instead of every cell.
    pending: AtomicUsize,
    /// The table owns boxed values of T.
    _owns: PhantomData<Box<T>>,
}

// SAFETY: the table hands boxed values of T from one thread to another;
// each value is taken by exactly one thread (the swap in `take`).
unsafe impl<T: Send> Send for HandoffTable<T> {}
// SAFETY: as above; shared access only goes through atomics.
unsafe impl<T: Send> Sync for HandoffTable<T> {}

impl<T> HandoffTable<T> {
    /// A table for sources `0..len`, with no chunk allocated.
    pub(crate) fn new(len: usize) -> Self {
        Self {
            chunks: (0..len.div_ceil(CHUNK))
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            pending: AtomicUsize::new(0),
            _owns: PhantomData,
        }
    }

    /// The chunk of source `i`, allocating it if `make` and it is missing.
    fn chunk(&self, i: usize, make: bool) -> Option<&Chunk<T>> {
        let slot = self.chunks.get(i / CHUNK)?;
        // Acquire; pairs with the Release CAS below (the cells are initialised).
        let mut p = slot.load(Ordering::Acquire);
        if p.is_null() {
            if !make {
                return None;
            }
            let fresh = Box::into_raw(Box::new(Chunk {
                cells: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            }));
            // Release: publishes the initialised cells; Acquire on failure:
            // we read the winner's cells.
            match slot.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => p = fresh,
                Err(winner) => {
                    // SAFETY: `fresh` came from Box::into_raw just above and
                    // was never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    p = winner;
                }
            }
        }
        // SAFETY: a published chunk is freed only in `drop`, which has
        // `&mut self`; it lives as long as `&self`.
        Some(unsafe { &*p })
    }

    /// Source `i` offers `v`. Returns it back if `i` is out of range or the
    /// cell is already full (each source offers once).
    pub(crate) fn offer(&self, i: usize, v: Box<T>) -> Result<(), Box<T>> {
        let Some(chunk) = self.chunk(i, true) else {
            return Err(v);
        };
        let p = Box::into_raw(v);
        // Counted before the cell is filled: a taker that sees the cell
        // (Acquire, below) sees the count, so the count never goes below the
        // full cells. Relaxed: the cell carries the ordering.
        self.pending.fetch_add(1, Ordering::Relaxed);
        // Release; pairs with the Acquire swap in `take`: the value is
        // visible to whoever takes it.
        match chunk.cells[i % CHUNK].compare_exchange(
            ptr::null_mut(),
            p,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => Ok(()),
            Err(_) => {
                self.pending.fetch_sub(1, Ordering::Relaxed);
                // SAFETY: `p` came from Box::into_raw just above and was not
                // published.
                Err(unsafe { Box::from_raw(p) })
            }
        }
    }

    /// True if some cell holds a value nobody took yet. One load when
    /// nothing is pending; otherwise a look at the cells of the chunks in
    /// use (an offer counted but whose cell is not filled yet does not
    /// count: its sender has not published its ring, let alone a message).
    pub(crate) fn has_offer(&self) -> bool {
        if self.pending.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.chunks.iter().any(|slot| {
            // Acquire; pairs with the Release CAS in `chunk`.
            let p = slot.load(Ordering::Acquire);
            // SAFETY: a published chunk lives as long as `&self` (see `chunk`).
            !p.is_null()
                && unsafe { &*p }
                    .cells
                    .iter()
                    .any(|c| !c.load(Ordering::Relaxed).is_null())
        })
    }

    /// Takes what source `i` offered, if it did and nobody took it yet.
    pub(crate) fn take(&self, i: usize) -> Option<Box<T>> {
        let cell = &self.chunk(i, false)?.cells[i % CHUNK];
        if cell.load(Ordering::Relaxed).is_null() {
            return None;
        }
        // Acquire; pairs with the Release CAS in `offer`. The swap makes
        // this taker the value's only owner.
        let p = cell.swap(ptr::null_mut(), Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        self.pending.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: a non-null cell holds a pointer from Box::into_raw in
        // `offer`, and the swap gave it to us alone.
        Some(unsafe { Box::from_raw(p) })
    }

    /// Takes every value offered and not yet taken, in source order (one
    /// load if nothing is pending).
    pub(crate) fn take_each(&self, mut f: impl FnMut(usize, Box<T>)) {
        if self.pending.load(Ordering::Relaxed) == 0 {
            return;
        }
        for (c, slot) in self.chunks.iter().enumerate() {
            if slot.load(Ordering::Acquire).is_null() {
                continue;
            }
            for j in 0..CHUNK {
                let i = c * CHUNK + j;
                if let Some(v) = self.take(i) {
                    f(i, v);
                }
            }
        }
    }
}

impl<T> Drop for HandoffTable<T> {
    fn drop(&mut self) {
        for slot in self.chunks.iter() {
            // Acquire; pairs with the Release CAS in `chunk` (`&mut self`
            // already excludes everyone else: this only keeps loom's
            // view of the cells' initialisation in order).
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: a published chunk came from Box::into_raw in `chunk`;
            // `&mut self` means nobody else can reach it.
            let chunk = unsafe { Box::from_raw(p) };
            for cell in chunk.cells.iter() {
                // Acquire; pairs with the Release CAS in `offer`.
                let v = cell.load(Ordering::Acquire);
                if !v.is_null() {
                    // SAFETY: a full cell holds a pointer from Box::into_raw
                    // in `offer` that nobody took.
                    drop(unsafe { Box::from_raw(v) });
                }
            }
        }
    }
}
