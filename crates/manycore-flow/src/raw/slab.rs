//! `Slab`: a thread's free lists of heap blocks, one list per size class,
//! so that an instance made and dropped on one core takes the block the
//! last one left instead of a `malloc` and a `free`. Instances
//! (`shared.rs`) are allocated and freed through it.
//!
//! A layout of at most [`MAX`] bytes aligned to at most [`ALIGN`] falls in
//! a class: its size rounded up to a multiple of [`STEP`]. Every block of a
//! class is allocated from the global allocator with the class's own layout
//! (the rounded size, aligned to `ALIGN`), whichever list it passes
//! through, so any block of a class can serve any request of that class
//! and be given back to the global allocator by any thread. Larger or more
//! aligned layouts go to the global allocator as they are.
//!
//! A freed block of a class goes on the freeing thread's list for that
//! class (a block made on one core and dropped on another is kept by the
//! second), unless the list is at its bound: then it goes back to the
//! global allocator. A list is intrusive: a kept block's first word points
//! to the next. When the thread exits its lists give every block back; a
//! block freed after that (by another thread-local's destructor) goes to
//! the global allocator directly.
//!
//! The bound of a class's list is the most blocks of that class the thread
//! has had out at once (taken by its own `alloc` and not yet given back by
//! its own `free`), and at least [`KEEP`]; past its first `KEEP` blocks a
//! list takes one only while the thread's lists hold at most
//! [`KEEP_BYTES`] in all. A
//! core that makes a burst of instances and fires them keeps every block
//! for the next burst, so neither the burst's frees nor the next one's
//! allocations call the allocator; it keeps no more than it had in use
//! itself. A thread that only frees what others made (a consumer) never
//! raises its bound past `KEEP`, so blocks flowing one way between threads
//! do not pile up on the consumer.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};

/// Class sizes are multiples of this many bytes.
pub(crate) const STEP: usize = 32;
/// The number of classes: sizes up to `STEP * CLASSES`.
const CLASSES: usize = 16;
/// The largest size kept in a class.
pub(crate) const MAX: usize = STEP * CLASSES;
/// The largest alignment kept in a class; every class block has it.
pub(crate) const ALIGN: usize = 16;
/// Blocks kept per class and thread whatever the thread's own use.
pub(crate) const KEEP: u32 = 32;
/// Bytes a thread's lists hold in all, past which a list takes no block
/// beyond its first [`KEEP`].
pub(crate) const KEEP_BYTES: usize = 64 << 20;

/// Where blocks come from and go back to: the global allocator, or a
/// test's ledger.
pub(crate) trait Source {
    /// A new block of `layout` (non-zero size).
    fn get(&self, layout: Layout) -> NonNull<u8>;

    /// Gives back a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`get`](Self::get) of this source (or of one that
    /// shares its memory, as every `Global` does) with `layout`, and is
    /// given back once.
    unsafe fn put(&self, p: NonNull<u8>, layout: Layout);
}

/// The global allocator.
#[derive(Clone, Copy, Default)]
pub(crate) struct Global;

impl Source for Global {
    #[inline]
    fn get(&self, layout: Layout) -> NonNull<u8> {
        debug_assert!(layout.size() > 0);
        // SAFETY: `layout` has a non-zero size (every caller passes a class
        // layout, at least `STEP` bytes, or a `Counted` value's, which holds
        // a count).
        let p = unsafe { alloc::alloc(layout) };
        NonNull::new(p).unwrap_or_else(|| alloc::handle_alloc_error(layout))
    }

    #[inline]
    unsafe fn put(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: by the caller's contract, `p` came from `alloc::alloc`
        // with `layout` and is freed once.
        unsafe { alloc::dealloc(p.as_ptr(), layout) }
    }
}

/// The layout a block for `layout` is allocated with, and its class (if it
/// has one).
#[inline]
pub(crate) fn block(layout: Layout) -> (Layout, Option<usize>) {
    if layout.size() > MAX || layout.align() > ALIGN {
        return (layout, None);
    }
    let class = layout.size().saturating_sub(1) / STEP;
    match Layout::from_size_align((class + 1) * STEP, ALIGN) {
        Ok(l) => (l, Some(class)),
        // Unreachable: the size is at most `MAX` and `ALIGN` a power of two.
        Err(_) => (layout, None),
    }
}

/// The free lists of one thread (or, in a test, of one model).
pub(crate) struct Lists<S: Source> {
    /// The first kept block of each class (null: none).
    heads: [Cell<*mut u8>; CLASSES],
    /// Blocks kept in each class.
    lens: [Cell<u32>; CLASSES],
    /// Blocks of each class this thread has out: taken by `alloc` and not
    /// yet given back by `free` here (never below 0: a block made elsewhere
    /// and freed here counts nothing).
    out: [Cell<u32>; CLASSES],
    /// The most blocks of each class this thread has had out at once.
    peak: [Cell<u32>; CLASSES],
    /// Bytes kept in all classes.
    bytes: Cell<usize>,
    source: S,
}

impl<S: Source> Lists<S> {
    /// Empty lists over `source`.
    pub(crate) const fn new(source: S) -> Self {
        Self {
            heads: [const { Cell::new(ptr::null_mut()) }; CLASSES],
            lens: [const { Cell::new(0) }; CLASSES],
            out: [const { Cell::new(0) }; CLASSES],
            peak: [const { Cell::new(0) }; CLASSES],
            bytes: Cell::new(0),
            source,
        }
    }

    /// A block for `layout`: the last one kept in its class, or a new one.
    #[inline]
    pub(crate) fn alloc(&self, layout: Layout) -> NonNull<u8> {
        let (block, class) = block(layout);
        let Some(c) = class else {
            return self.source.get(block);
        };
        let out = self.out[c].get().saturating_add(1);
        self.out[c].set(out);
        if out > self.peak[c].get() {
            self.peak[c].set(out);
        }
        let head = self.heads[c].get();
        let Some(p) = NonNull::new(head) else {
            return self.source.get(block);
        };
        // SAFETY: `p` is the head of class `c`'s list: a block of the class
        // layout (at least `STEP` bytes, aligned to `ALIGN`) that `free` put
        // there after writing the next head into its first word, and that no
        // one else refers to (it was freed). Reading that word is reading
        // what `free` wrote.
        let next = unsafe { p.as_ptr().cast::<*mut u8>().read() };
        self.heads[c].set(next);
        self.lens[c].set(self.lens[c].get() - 1);
        self.bytes.set(self.bytes.get() - block.size());
        p
    }

    /// Whether class `c`'s list, holding `len` blocks of `size` bytes, takes
    /// one more (see the module's docs).
    #[inline]
    fn keeps(&self, c: usize, len: u32, size: usize) -> bool {
        len < KEEP || (len < self.peak[c].get() && self.bytes.get() + size <= KEEP_BYTES)
    }

    /// Takes back a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`alloc`](Self::alloc) of lists over the same source
    /// (or from [`alloc`] of this module) with the same `layout`, nothing
    /// refers to it any more, and it is freed once.
    #[inline]
    pub(crate) unsafe fn free(&self, p: NonNull<u8>, layout: Layout) {
        let (block, class) = block(layout);
        if let Some(c) = class {
            self.out[c].set(self.out[c].get().saturating_sub(1));
            let len = self.lens[c].get();
            if self.keeps(c, len, block.size()) {
                // SAFETY: `p` is a block of class `c` (the caller's
                // contract: it was allocated for `layout`, so with the class
                // layout, at least `STEP` bytes aligned to `ALIGN`), which no
                // one refers to any more: its first word is ours to write.
                unsafe { p.as_ptr().cast::<*mut u8>().write(self.heads[c].get()) };
                self.heads[c].set(p.as_ptr());
                self.lens[c].set(len + 1);
                self.bytes.set(self.bytes.get() + block.size());
                return;
            }
        }
        // SAFETY: `p` came from `source.get(block)` (directly, or through a
        // list, which keeps blocks with their class layout), given back once.
        unsafe { self.source.put(p, block) }
    }

    /// Blocks kept in the class of `layout` (0 for a layout with no class).
    #[cfg(test)]
    pub(crate) fn kept(&self, layout: Layout) -> u32 {
        block(layout).1.map_or(0, |c| self.lens[c].get())
    }
}

impl<S: Source> Drop for Lists<S> {
    fn drop(&mut self) {
        for c in 0..CLASSES {
            let Ok(layout) = Layout::from_size_align((c + 1) * STEP, ALIGN) else {
                continue;
            };
            let mut p = self.heads[c].replace(ptr::null_mut());
            while let Some(b) = NonNull::new(p) {
                // SAFETY: `b` is a kept block of class `c` (see `alloc`):
                // its first word is the next head, written by `free`.
                p = unsafe { b.as_ptr().cast::<*mut u8>().read() };
                // SAFETY: a kept block of class `c` came from the source with
                // the class layout and is off the list now: given back once.
                unsafe { self.source.put(b, layout) };
            }
            self.lens[c].set(0);
        }
        self.bytes.set(0);
    }
}

/// A block for `layout` from this thread's lists (or the global allocator,
/// if the thread is exiting).
#[inline]
pub(crate) fn alloc(layout: Layout) -> NonNull<u8> {
    crate::percore::with(|pc| pc.lists.alloc(layout)).unwrap_or_else(|| Global.get(block(layout).0))
}

/// Takes back a block from [`alloc`].
///
/// # Safety
///
/// `p` came from [`alloc`] with `layout` (on any thread), nothing refers to
/// it any more, and it is freed once.
#[inline]
pub(crate) unsafe fn free(p: NonNull<u8>, layout: Layout) {
    let mut p = Some(p);
    crate::percore::with(|pc| {
        if let Some(p) = p.take() {
            // SAFETY: the caller's contract; every thread's lists are over
            // the global allocator, as `alloc`'s fallback is.
            unsafe { pc.lists.free(p, layout) }
        }
    });
    if let Some(p) = p {
        // SAFETY: the caller's contract: `p` was allocated (by a list or the
        // fallback above) with the block layout of `layout`.
        unsafe { Global.put(p, block(layout).0) }
    }
}

/// The free lists against a model, with a source that keeps a ledger.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::{self as slab, Lists, Source, ALIGN, KEEP, KEEP_BYTES, MAX, STEP};
    use proptest::prelude::*;
    use std::alloc::Layout;
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::ptr::NonNull;
    use std::rc::Rc;

    /// A source that keeps a ledger of the blocks it handed out: giving
    /// back a block it does not have out (twice, or never handed out), or
    /// with another layout, fails the test.
    #[derive(Clone, Default)]
    struct Ledger(Rc<RefCell<HashMap<usize, Layout>>>);

    impl Source for Ledger {
        fn get(&self, layout: Layout) -> NonNull<u8> {
            let p = slab::Global.get(layout);
            let old = self.0.borrow_mut().insert(p.as_ptr() as usize, layout);
            assert!(old.is_none(), "the allocator handed out a live block");
            p
        }

        unsafe fn put(&self, p: NonNull<u8>, layout: Layout) {
            let had = self.0.borrow_mut().remove(&(p.as_ptr() as usize));
            assert_eq!(had, Some(layout), "a block given back twice or mismatched");
            // SAFETY: the ledger had it out with this layout, from `Global`.
            unsafe { slab::Global.put(p, layout) }
        }
    }

    /// Layouts that fall in a class and some that do not (too large, too
    /// aligned).
    fn layout() -> impl Strategy<Value = Layout> {
        prop_oneof![
            4 => (1usize..=MAX, prop_oneof![Just(8usize), Just(16)]),
            1 => (MAX + 1..4 * MAX, Just(8usize)),
            1 => (1usize..256, Just(64usize)),
        ]
        .prop_map(|(size, align)| Layout::from_size_align(size, align).unwrap())
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc(Layout),
        /// A block allocated by another thread's lists (to be freed here).
        AllocElsewhere(Layout),
        /// Frees the live block at this index (modulo the number live).
        Free(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => layout().prop_map(Op::Alloc),
            1 => layout().prop_map(Op::AllocElsewhere),
            4 => any::<usize>().prop_map(Op::Free),
        ]
    }

    /// One class of the model: the stack of kept blocks, the blocks this
    /// thread has out, and the most it had out at once.
    #[derive(Default)]
    struct Class {
        kept: Vec<usize>,
        out: u32,
        peak: u32,
    }

    proptest! {
        /// Against a model (per class, the stack of kept blocks and the
        /// count of blocks out): an allocation takes the last block kept in
        /// its class, or a new one; no block is handed out while it is live;
        /// a free keeps the block if its class holds fewer than `KEEP`, or
        /// fewer than the most this thread had out at once while all lists
        /// hold at most `KEEP_BYTES`, else gives it back (a block made by
        /// other lists counts as nothing out); and once the lists are
        /// dropped every block has gone back to the source exactly once (the
        /// ledger is empty, and a second give-back fails).
        #[test]
        fn slab_matches_a_model(ops in proptest::collection::vec(op(), 0..400)) {
            let ledger = Ledger::default();
            let lists = Lists::new(ledger.clone());
            let elsewhere = Lists::new(ledger.clone());
            let mut model: HashMap<usize, Class> = HashMap::new();
            let mut bytes = 0usize;
            let mut live: Vec<(NonNull<u8>, Layout)> = Vec::new();
            for op in ops {
                match op {
                    Op::Alloc(l) | Op::AllocElsewhere(l) => {
                        let here = matches!(op, Op::Alloc(_));
                        let (block, class) = slab::block(l);
                        prop_assert!(block.size() >= l.size() && block.align() >= l.align());
                        if class.is_some() {
                            prop_assert_eq!(block.align(), ALIGN);
                            prop_assert_eq!(block.size() % STEP, 0);
                        }
                        let mut want = None;
                        if let (Some(c), true) = (class, here) {
                            let m = model.entry(c).or_default();
                            want = m.kept.pop();
                            if want.is_some() {
                                bytes -= block.size();
                            }
                            m.out += 1;
                            m.peak = m.peak.max(m.out);
                        }
                        let p = if here { lists.alloc(l) } else { elsewhere.alloc(l) };
                        if let Some(w) = want {
                            prop_assert_eq!(p.as_ptr() as usize, w, "not the last kept");
                        }
                        prop_assert!(
                            live.iter().all(|(q, _)| *q != p),
                            "a block handed out twice"
                        );
                        prop_assert!(ledger.0.borrow().get(&(p.as_ptr() as usize)) == Some(&block));
                        // The block is usable in full.
                        // SAFETY: `p` is a fresh block of at least `l.size()`
                        // bytes, ours alone.
                        unsafe { p.as_ptr().write_bytes(0xa5, l.size()) };
                        live.push((p, l));
                    }
                    Op::Free(i) => {
                        if live.is_empty() {
                            continue;
                        }
                        let (p, l) = live.swap_remove(i % live.len());
                        let (block, class) = slab::block(l);
                        let before = lists.kept(l);
                        // SAFETY: `p` came from `lists.alloc(l)` or
                        // `elsewhere.alloc(l)` (lists over the same source)
                        // and is freed once (it leaves `live` here).
                        unsafe { lists.free(p, l) };
                        let kept = class.is_some_and(|c| {
                            let m = model.entry(c).or_default();
                            m.out = m.out.saturating_sub(1);
                            let len = m.kept.len() as u32;
                            len < KEEP || (len < m.peak && bytes + block.size() <= KEEP_BYTES)
                        });
                        if kept {
                            let c = class.unwrap();
                            model.entry(c).or_default().kept.push(p.as_ptr() as usize);
                            bytes += block.size();
                            prop_assert_eq!(lists.kept(l), before + 1);
                            prop_assert!(ledger.0.borrow().contains_key(&(p.as_ptr() as usize)));
                        } else {
                            prop_assert_eq!(lists.kept(l), before);
                            prop_assert!(!ledger.0.borrow().contains_key(&(p.as_ptr() as usize)));
                        }
                    }
                }
                for (&c, m) in &model {
                    prop_assert_eq!(lists.kept(Layout::from_size_align((c + 1) * STEP, ALIGN).unwrap()), m.kept.len() as u32);
                    prop_assert!(
                        m.kept.len() <= (KEEP.max(m.peak)) as usize,
                        "class {} over its bound", c
                    );
                }
            }
            // Whatever is still live goes back through the lists too.
            for (p, l) in live.drain(..) {
                // SAFETY: as above.
                unsafe { lists.free(p, l) };
            }
            drop(lists);
            drop(elsewhere);
            prop_assert!(ledger.0.borrow().is_empty(), "blocks never given back");
        }
    }

    /// The thread's own lists: a block freed on one thread and allocated on
    /// another, and blocks freed after reuse, all end up consistent (the
    /// global allocator would abort on a double free).
    #[test]
    fn blocks_cross_threads() {
        let l = Layout::from_size_align(200, 8).unwrap();
        let made: Vec<usize> = (0..3 * KEEP as usize)
            .map(|_| slab::alloc(l).as_ptr() as usize)
            .collect();
        std::thread::spawn(move || {
            for p in made {
                // SAFETY: each came from `slab::alloc(l)`, freed once.
                unsafe { slab::free(NonNull::new(p as *mut u8).unwrap(), l) };
            }
            let again = slab::alloc(l);
            // SAFETY: as above.
            unsafe { slab::free(again, l) };
        })
        .join()
        .unwrap();
    }
}
