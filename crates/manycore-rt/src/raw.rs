//! All of manycore-rt's `unsafe`: the type-erased message record, and the
//! completion cell an invocation's result travels through.

use crate::error::InvokeError;
use manycore_sync::atomic::{AtomicU32, Ordering};
use manycore_sync::cell::UnsafeCell;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;
use std::task::Waker;

/// Bytes of closure a message carries inline; larger closures are boxed.
pub const INLINE_BYTES: usize = 48;

type Payload = MaybeUninit<[usize; INLINE_BYTES / 8]>;

/// An invocation record: a shim pointer plus the closure (inline when it
/// fits). 56 bytes, so that with the ring's 8-byte sequence word a message is
/// exactly one cache line.
pub(crate) struct Message {
    shim: unsafe fn(*mut Payload, bool),
    payload: Payload,
}

const _: () = assert!(size_of::<Message>() == 56);

// SAFETY: every constructor takes an `F: Send`; the payload holds only that F
// (or a Box<F>), so moving the record to another thread moves an F.
unsafe impl Send for Message {}

impl Message {
    /// Wraps a closure. No allocation if `F` is at most [`INLINE_BYTES`] bytes
    /// with alignment at most 8.
    #[inline]
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        let mut payload = Payload::uninit();
        if Self::fits::<F>() {
            // SAFETY: `fits` checked that F's size and alignment fit the payload.
            unsafe { payload.as_mut_ptr().cast::<F>().write(f) };
            Message {
                shim: inline_shim::<F>,
                payload,
            }
        } else {
            let boxed = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits and is aligned in a payload of usizes.
            unsafe { payload.as_mut_ptr().cast::<*mut F>().write(boxed) };
            Message {
                shim: boxed_shim::<F>,
                payload,
            }
        }
    }

    /// True if a closure of type `F` travels inline (no allocation).
    pub(crate) const fn fits<F>() -> bool {
        size_of::<F>() <= INLINE_BYTES && align_of::<F>() <= align_of::<Payload>()
    }

    /// Runs the closure, consuming the message.
    #[inline]
    pub(crate) fn run(self) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: the payload holds the value `shim` expects and it has not been
        // consumed; ManuallyDrop keeps `Drop` from consuming it a second time.
        unsafe { (me.shim)(&mut me.payload, true) }
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: a message not yet run still owns its closure; dropping it once here.
        unsafe { (self.shim)(&mut self.payload, false) }
    }
}

/// # Safety
/// `p` must hold an initialised `F` written by `Message::new`, not yet consumed.
unsafe fn inline_shim<F: FnOnce()>(p: *mut Payload, run: bool) {
    // SAFETY: guaranteed by the caller; the read moves F out and we own it now.
    let f = unsafe { p.cast::<F>().read() };
    if run {
        f()
    }
}

/// # Safety
/// `p` must hold a `Box<F>` pointer written by `Message::new`, not yet consumed.
unsafe fn boxed_shim<F: FnOnce()>(p: *mut Payload, run: bool) {
    // SAFETY: guaranteed by the caller; the pointer came from Box::into_raw.
    let f = unsafe { Box::from_raw(p.cast::<*mut F>().read()) };
    if run {
        f()
    }
}

/// The calling thread's core state: null off the cores, and on a core's
/// thread, while the guard that [`enter_core`] returns lives, the core's
/// `CoreLocal`. A `Cell` of a raw pointer rather than a
/// `RefCell<Option<Rc<_>>>`: a thread-local without a destructor needs no
/// registration check on access, and reading it stores nothing (a
/// `RefCell` borrow writes its flag twice), which matters on every send.
mod current {
    use crate::scheduler::CoreLocal;
    use std::cell::Cell;
    use std::marker::PhantomData;

    thread_local! {
        static CURRENT: Cell<*const CoreLocal> = const { Cell::new(std::ptr::null()) };
    }

    /// While it lives, its `CoreLocal` is this thread's core state; dropped
    /// (at the end of the core, or while unwinding out of it), the thread is
    /// no longer a core. It borrows the `CoreLocal`, so the borrow checker
    /// keeps the `CoreLocal` alive and in place for as long as the pointer
    /// can be read.
    #[derive(Debug)]
    pub(crate) struct CoreGuard<'a>(PhantomData<&'a CoreLocal>);

    impl Drop for CoreGuard<'_> {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(std::ptr::null()));
        }
    }

    /// Makes `local` this thread's core state for as long as the returned
    /// guard lives.
    ///
    /// # Safety
    /// Nothing may borrow `local` mutably while the guard lives (it is
    /// handed out as `&CoreLocal` to any code on this thread), and the
    /// guard must stay on this thread's stack (it is not `Send` anyway).
    pub(crate) unsafe fn enter_core(local: &CoreLocal) -> CoreGuard<'_> {
        CURRENT.with(|c| c.set(local));
        CoreGuard(PhantomData)
    }

    /// Runs `f` with this thread's core state, if this thread is a core.
    #[inline]
    pub(crate) fn with_current<R>(f: impl FnOnce(Option<&CoreLocal>) -> R) -> R {
        let p = CURRENT.with(Cell::get);
        // SAFETY: a non-null pointer was set by `enter_core` and is cleared
        // by its guard's drop; the guard borrows the CoreLocal, so the
        // CoreLocal is alive, in place and (by `enter_core`'s contract) not
        // mutably borrowed while the pointer is set. The guard is dropped
        // only by its owner (`run_core`, at its top level or when unwinding
        // out of it), never inside `f`, so the reference, which does not
        // outlive `f`, stays valid while `f` runs.
        f(unsafe { p.as_ref() })
    }
}
pub(crate) use current::{enter_core, with_current};

const DONE: u32 = 1;
const WAITER: u32 = 2;
const CANCELLED: u32 = 4;
/// The waiter's handle is gone (dropped).
const GONE: u32 = 8;
/// The completer finished its slow path (see below).
const FIN: u32 = 16;

/// The meeting point of an invocation's completer (on the callee core) and
/// its single waiter (a thread, a core, or an async task): one allocation,
/// owned jointly by a [`Tx`] (the completer) and an [`Rx`] (the waiter), with
/// no reference count. The state word says who still needs it, and whoever
/// finishes last frees it.
///
/// Protocol (one state word):
/// * completer: write the value; set DONE (`fetch_add`: see `complete`). If neither WAITER nor
///   CANCELLED was set (the fast path), it is finished: it frees the record if
///   GONE was set, else leaves it to the waiter. Otherwise (slow path) it
///   takes the waker (WAITER) or the value it must drop (CANCELLED), then
///   `fetch_or(FIN)`, frees the record if GONE was set, and wakes the waker.
/// * the completer is therefore finished once DONE is set and either neither
///   WAITER nor CANCELLED is, or FIN is. WAITER and CANCELLED are only ever
///   set by the waiter before DONE (a WAITER set after DONE by `register` is
///   cleared again at once, before anything reads it).
/// * waiter: if DONE, take the value. To (re)register: withdraw WAITER by CAS
///   (fails only if DONE arrived), store the waker, `fetch_or(WAITER)`; if that
///   saw DONE, the result is there and nobody will wake us (clear the WAITER).
/// * timeout: `cancel` sets CANCELLED and withdraws WAITER in one CAS, unless
///   DONE is set (then the result won). The completer, seeing CANCELLED, drops
///   the late result itself, on its core.
/// * waiter dropped: frees the record if the completer is finished; else
///   withdraws WAITER (dropping its waker), then `fetch_or(GONE)`, and frees
///   the record if the completer finished meanwhile.
///
/// The waker cell is written by the waiter only while WAITER and DONE are both
/// clear, and read by the completer only after it set DONE with WAITER set, so
/// the two never touch it at once. On the fast path the completer does one
/// atomic read-modify-write and the waiter none. Model-checked in
/// `loom_tests.rs`, where a freed record is poisoned rather than deallocated
/// so that any touch after the free fails the model.
struct Completion<T> {
    state: AtomicU32,
    value: UnsafeCell<Option<Result<T, InvokeError>>>,
    waker: UnsafeCell<Option<Waker>>,
    /// Poison for the loom models (not a loom object: no extra interleavings).
    #[cfg(loom)]
    freed: std::sync::atomic::AtomicBool,
}

/// Makes a completion record; returns its completer's and its waiter's end.
pub(crate) fn completion<T>() -> (Tx<T>, Rx<T>) {
    let c = Completion {
        state: AtomicU32::new(0),
        value: UnsafeCell::new(None),
        waker: UnsafeCell::new(None),
        #[cfg(loom)]
        freed: std::sync::atomic::AtomicBool::new(false),
    };
    #[cfg(not(loom))]
    let p = match records::take::<Completion<T>>() {
        Some(p) => {
            // SAFETY: `take` gave us an unused block with room and alignment
            // for a Completion<T>.
            unsafe { p.as_ptr().write(c) };
            p
        }
        None => NonNull::from(Box::leak(Box::new(c))),
    };
    // Freed by `free` (under loom, never deallocated but poisoned, so that a
    // touch after the free is caught by `check` instead of being UB).
    #[cfg(loom)]
    let p = NonNull::from(Box::leak(Box::new(c)));
    (Tx { p }, Rx { p })
}

/// Completion records that fit one cache line come from a small per-thread
/// queue of line-sized, line-aligned blocks, oldest first.
///
/// Why not `Box`: the allocator hands the block it was just given back at
/// once, and the waiter then writes (frees, then initialises) a line that
/// the completer wrote a moment ago: on the caller's critical path it waits
/// for that line to come back from the other core. Here a freed block goes
/// to the back of the queue and is taken again only after a few others. A
/// whole line also means no false sharing with whatever the allocator put
/// beside a 56-byte record. `rttq` (call round trip, core 0 -> 1): 171-204
/// ns -> 163-169 ns in interleaved runs. (Also writing to the next block
/// while waiting, to fetch its line early, measured no better.)
#[cfg(not(loom))]
mod records {
    use std::alloc::{alloc, dealloc, Layout};
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::ptr::NonNull;

    /// One cache line.
    const BLOCK: Layout = match Layout::from_size_align(64, 64) {
        Ok(l) => l,
        Err(_) => panic!("64-byte blocks"),
    };
    /// Blocks kept per thread (more are given back to the allocator).
    const KEEP: usize = 16;
    /// Blocks a thread keeps in reserve before it reuses one, so that the
    /// block it takes is not the one it just freed.
    const RESERVE: usize = 2;

    struct Queue(VecDeque<NonNull<u8>>);

    impl Drop for Queue {
        fn drop(&mut self) {
            for p in self.0.drain(..) {
                // SAFETY: every block in the queue came from `alloc(BLOCK)`
                // and is unused.
                unsafe { dealloc(p.as_ptr(), BLOCK) };
            }
        }
    }

    thread_local! {
        static FREE: RefCell<Queue> = const { RefCell::new(Queue(VecDeque::new())) };
    }

    /// True if records of type `R` use the blocks.
    const fn fits<R>() -> bool {
        std::mem::size_of::<R>() <= BLOCK.size() && std::mem::align_of::<R>() <= BLOCK.align()
    }

    /// A block for an `R`: the oldest free one, or a new one. None if `R`
    /// does not fit a block (the caller boxes it).
    #[inline]
    pub(super) fn take<R>() -> Option<NonNull<R>> {
        if !fits::<R>() {
            return None;
        }
        let reused = FREE
            .try_with(|q| {
                let mut q = q.borrow_mut();
                if q.0.len() > RESERVE {
                    q.0.pop_front()
                } else {
                    None
                }
            })
            .ok()
            .flatten();
        let p = match reused {
            Some(p) => p,
            None => {
                // SAFETY: BLOCK has a non-zero size.
                let p = unsafe { alloc(BLOCK) };
                NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(BLOCK))
            }
        };
        Some(p.cast())
    }

    /// Gives back the block of a record of type `R` whose contents were
    /// dropped. Returns false if `R` does not use blocks (the caller frees
    /// it as a Box).
    ///
    /// # Safety
    /// `p` came from [`take::<R>`], and nothing refers to it any more.
    #[inline]
    pub(super) unsafe fn give<R>(p: NonNull<R>) -> bool {
        if !fits::<R>() {
            return false;
        }
        let p = p.cast::<u8>();
        let kept = FREE
            .try_with(|q| {
                let mut q = q.borrow_mut();
                if q.0.len() < KEEP {
                    q.0.push_back(p);
                    true
                } else {
                    false
                }
            })
            .unwrap_or(false);
        if !kept {
            // SAFETY: guaranteed by the caller; blocks come from alloc(BLOCK).
            unsafe { dealloc(p.as_ptr(), BLOCK) };
        }
        true
    }
}

/// Loom models only: a completion and a probe that tells whether its record
/// was freed (records are never deallocated under loom).
#[cfg(all(loom, test))]
pub(crate) fn completion_with_probe<T>() -> (Tx<T>, Rx<T>, impl Fn() -> bool) {
    let (tx, rx) = completion::<T>();
    let p = tx.p.as_ptr() as usize;
    let probe = move || {
        // SAFETY: under loom records are never deallocated.
        let c = unsafe { &*(p as *const Completion<T>) };
        c.freed.load(std::sync::atomic::Ordering::Relaxed)
    };
    (tx, rx, probe)
}

/// The completer's end of a completion record.
pub(crate) struct Tx<T> {
    p: NonNull<Completion<T>>,
}

/// The waiter's end of a completion record.
pub(crate) struct Rx<T> {
    p: NonNull<Completion<T>>,
}

// SAFETY: a Tx moves a value of T to the waiter, and the record it points to
// is shared only with the single Rx under the protocol above.
unsafe impl<T: Send> Send for Tx<T> {}
// SAFETY: as for Tx; the value crosses threads once, so T: Send.
unsafe impl<T: Send> Send for Rx<T> {}
// SAFETY: the only method callable through `&Rx` from several threads at once
// is `is_done` (an atomic load); the crate calls the others from the single
// waiter only (an `Invocation` exposes them through `self` or `&mut self`).
unsafe impl<T: Send> Sync for Rx<T> {}

impl<T> Completion<T> {
    #[inline]
    fn check(&self) {
        #[cfg(loom)]
        assert!(
            !self.freed.load(std::sync::atomic::Ordering::Relaxed),
            "completion record touched after it was freed"
        );
    }
}

/// Frees a record whose two ends are both finished with it.
///
/// # Safety
/// `p` came from `completion`, and neither end will touch it again.
unsafe fn free<T>(p: NonNull<Completion<T>>) {
    #[cfg(not(loom))]
    {
        // SAFETY: guaranteed by the caller: the record is initialised and
        // nobody refers to it any more.
        unsafe { std::ptr::drop_in_place(p.as_ptr()) };
        // SAFETY: as above; the block came from `records::take` exactly when
        // a Completion<T> fits one, else from Box::leak.
        if !unsafe { records::give(p) } {
            // SAFETY: from Box::leak, contents already dropped: free the
            // memory only.
            drop(unsafe { Box::from_raw(p.as_ptr().cast::<ManuallyDrop<Completion<T>>>()) });
        }
    }
    #[cfg(loom)]
    {
        // SAFETY: guaranteed by the caller; records are never deallocated under
        // loom, so the reference is valid.
        let c = unsafe { p.as_ref() };
        assert!(
            !c.freed.swap(true, std::sync::atomic::Ordering::Relaxed),
            "completion record freed twice"
        );
        // Drop the contents as a real free would (leak checks see them go).
        // SAFETY: both ends are finished with the record.
        drop(c.value.with_mut(|v| unsafe { (*v).take() }));
        // SAFETY: as above.
        drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
    }
}

impl<T> Tx<T> {
    /// Stores the result and wakes a registered waiter. Returns false if the
    /// waiter had given up (the result was then dropped here, on this thread).
    pub(crate) fn complete(self, r: Result<T, InvokeError>) -> bool {
        let p = self.p;
        std::mem::forget(self);
        // SAFETY: the record lives until both ends are finished, and this end
        // is not finished until below.
        let c = unsafe { p.as_ref() };
        c.check();
        // SAFETY: only the completer writes the value, once, and the waiter
        // reads it only after observing DONE, which is set after this write.
        // The cell still holds the `None` it was made with, so it is
        // overwritten without being read (and dropped) first: a read would
        // fetch the line shared, and the write after it would then fetch it
        // again, exclusive; a bare write fetches it once (the waiter's core
        // holds it: this is the one line transfer of the result's way back).
        c.value.with_mut(|v| unsafe { v.write(Some(r)) });
        // AcqRel: Release publishes the value to the waiter's Acquire load of
        // DONE; Acquire pairs with the Release of `register` so the waker
        // stored before WAITER is visible here, and with `Rx::drop`'s GONE.
        //
        // An add, not an or: only this completer sets DONE, once, so the bit
        // is clear here and adding it is setting it. On x86 `fetch_or` with
        // its old value is a load and a `lock cmpxchg` loop: the load fetches
        // the waiter's line shared, then the cmpxchg fetches it again,
        // exclusive (perf put 64% of `complete` on that load); `fetch_add`
        // is one `lock xadd`, one fetch of the line.
        let prev = c.state.fetch_add(DONE, Ordering::AcqRel);
        if prev & (WAITER | CANCELLED) == 0 {
            if prev & GONE != 0 {
                // SAFETY: the waiter is gone and we are finished.
                unsafe { free(p) };
            }
            return true;
        }
        // Slow path: the waiter registered a waker, or gave up. Until FIN, the
        // waiter does not free the record.
        let late = prev & CANCELLED != 0;
        let (value, waker) = if late {
            // SAFETY: the waiter cancelled before DONE, so it never reads the
            // value: it is ours to drop.
            (c.value.with_mut(|v| unsafe { (*v).take() }), None)
        } else {
            // SAFETY: WAITER was set when we set DONE; from then on the waiter
            // never writes the waker cell (it only writes with both bits clear).
            (None, c.waker.with_mut(|w| unsafe { (*w).take() }))
        };
        // AcqRel: Release ends our use of the record before the waiter frees
        // it; Acquire pairs with `Rx::drop`'s GONE if we are to free it.
        // An add sets FIN as an or would: only we set it, once (see DONE).
        let prev = c.state.fetch_add(FIN, Ordering::AcqRel);
        if prev & GONE != 0 {
            // SAFETY: the waiter is gone and we are finished.
            unsafe { free(p) };
        }
        drop(value);
        if let Some(w) = waker {
            w.wake();
        }
        !late
    }
}

impl<T> Drop for Tx<T> {
    /// A completer dropped unrun (the runtime shut down) resolves the
    /// invocation to `Shutdown`.
    fn drop(&mut self) {
        let tx = Tx { p: self.p };
        tx.complete(Err(InvokeError::Shutdown));
    }
}

impl<T> Rx<T> {
    fn c(&self) -> &Completion<T> {
        // SAFETY: the record lives until both ends are finished; this end is
        // finished only in Drop.
        let c = unsafe { self.p.as_ref() };
        c.check();
        c
    }

    /// True once the result is stored.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        // Acquire; pairs with the Release half of `fetch_or(DONE)` in `complete`.
        self.c().state.load(Ordering::Acquire) & DONE != 0
    }

    /// Takes the result. Returns None if not done yet or already taken.
    /// Single waiter only.
    pub(crate) fn take(&self) -> Option<Result<T, InvokeError>> {
        if !self.is_done() {
            return None;
        }
        // SAFETY: DONE was observed with Acquire, so the completer's write is
        // visible and finished; the single waiter is the only reader (a late
        // result, which the completer drops, is never taken: `cancel` reports
        // whether the result won).
        self.c().value.with_mut(|v| unsafe { (*v).take() })
    }

    /// Registers `waker` to be woken on completion. Returns true if the result
    /// is already there (then nothing will be woken). Single waiter only.
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        let c = self.c();
        let s = c.state.load(Ordering::Acquire);
        if s & DONE != 0 {
            return true;
        }
        if s & WAITER != 0 {
            // Withdraw the old registration; fails only if DONE arrived meanwhile.
            // Acquire on failure; pairs with the completer's Release.
            if c.state
                .compare_exchange(s, s & !WAITER, Ordering::Acquire, Ordering::Acquire)
                .is_err()
            {
                return true;
            }
        }
        // SAFETY: WAITER is clear and we are the only waiter, so the completer
        // will not touch the waker cell unless it sees the WAITER we set below.
        c.waker.with_mut(|w| unsafe { *w = Some(waker.clone()) });
        // AcqRel: Release hands the waker to the completer's Acquire `fetch_or`;
        // Acquire lets us read the value if DONE is already set.
        if c.state.fetch_or(WAITER, Ordering::AcqRel) & DONE != 0 {
            // The completer took its fast path without seeing our WAITER: take
            // the bit back so the state says the completer is finished.
            c.state.fetch_and(!WAITER, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// The waiter gives up (timeout). Returns true if the result had already
    /// arrived (the result wins; take it), false if the invocation is now
    /// deactivated (the completer will drop the late result). Single waiter.
    pub(crate) fn cancel(&self) -> bool {
        let c = self.c();
        let mut s = c.state.load(Ordering::Acquire);
        loop {
            if s & DONE != 0 {
                return true;
            }
            // AcqRel: Release so the completer's Acquire `fetch_or` sees the
            // withdrawal; Acquire (also on failure) to read the value if DONE won.
            match c.state.compare_exchange(
                s,
                (s | CANCELLED) & !WAITER,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if s & WAITER != 0 {
            // SAFETY: we withdrew WAITER before DONE, so the completer will never
            // touch the waker cell: it is ours to empty.
            drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
        }
        false
    }
}

/// True if the completer is finished with a record in state `s`.
#[inline]
fn completer_finished(s: u32) -> bool {
    s & DONE != 0 && (s & (WAITER | CANCELLED) == 0 || s & FIN != 0)
}

impl<T> Drop for Rx<T> {
    fn drop(&mut self) {
        let c = self.c();
        // Acquire; pairs with the completer's Release (DONE or FIN).
        let mut s = c.state.load(Ordering::Acquire);
        if completer_finished(s) {
            // SAFETY: the completer is finished and so are we.
            unsafe { free(self.p) };
            return;
        }
        if s & WAITER != 0 && s & DONE == 0 {
            // Withdraw our registration (fails only if DONE arrived).
            match c
                .state
                .compare_exchange(s, s & !WAITER, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: WAITER withdrawn before DONE: the completer will
                    // never touch the waker cell.
                    drop(c.waker.with_mut(|w| unsafe { (*w).take() }));
                }
                Err(now) => s = now,
            }
            if completer_finished(s) {
                // SAFETY: as above.
                unsafe { free(self.p) };
                return;
            }
        }
        // AcqRel: Release so that everything we did is done before the
        // completer frees; Acquire to free it ourselves if it finished first.
        let prev = c.state.fetch_or(GONE, Ordering::AcqRel);
        if completer_finished(prev) {
            // SAFETY: the completer finished before it could see GONE, so it
            // will not free; we are last.
            unsafe { free(self.p) };
        }
    }
}

/// Where a running coroutine keeps its yielder, so that `block_on` deep in
/// nested calls can suspend it.
#[derive(Default)]
pub(crate) struct YielderSlot(std::cell::Cell<*const corosensei::Yielder<(), ()>>);

impl YielderSlot {
    /// Called once by the coroutine body with its own yielder, which lives on
    /// the coroutine's stack for as long as the coroutine does.
    pub(crate) fn set(&self, y: &corosensei::Yielder<(), ()>) {
        self.0.set(y as *const _);
    }
}

/// The coroutine the current thread is running, while it runs.
pub(crate) struct CoCtx {
    pub(crate) yielder: std::rc::Rc<YielderSlot>,
    pub(crate) waker: Waker,
    /// Fault-address window of its guard page (see `overflow`).
    pub(crate) bounds: (usize, usize),
}

thread_local! {
    static CURRENT_CO: std::cell::RefCell<Option<CoCtx>> = const { std::cell::RefCell::new(None) };
    static GUARD: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Marks `ctx` as the running coroutine; returns the one it interrupts.
pub(crate) fn enter_coroutine(ctx: CoCtx) -> Option<CoCtx> {
    GUARD.with(|g| g.set(ctx.bounds));
    CURRENT_CO.with(|c| c.borrow_mut().replace(ctx))
}

/// Restores the coroutine that was running before (or none).
pub(crate) fn leave_coroutine(prev: Option<CoCtx>) {
    GUARD.with(|g| g.set(prev.as_ref().map_or((0, 0), |p| p.bounds)));
    CURRENT_CO.with(|c| *c.borrow_mut() = prev);
}

/// The waker of the running coroutine's task, if in a coroutine.
pub(crate) fn coroutine_waker() -> Option<Waker> {
    CURRENT_CO.with(|c| c.borrow().as_ref().map(|c| c.waker.clone()))
}

/// Suspends the running coroutine back to its core's executor.
pub(crate) fn suspend_coroutine() {
    let y = CURRENT_CO.with(|c| c.borrow().as_ref().map(|c| c.yielder.0.get()));
    if let Some(y) = y.filter(|y| !y.is_null()) {
        // SAFETY: the pointer was set by this coroutine's body to its own
        // yielder, which lives on the coroutine's stack while the coroutine
        // exists; CURRENT_CO holds it only while that coroutine is being
        // resumed on this thread, which is exactly when we are running on its
        // stack. No RefCell borrow is held across the suspension.
        unsafe { (*y).suspend(()) }
    }
}

/// Coroutine stack overflow reporting: a SIGSEGV/SIGBUS handler (on the
/// alternate signal stack std gives every thread) that recognises a fault
/// just below the running coroutine's stack, prints a clear message and
/// aborts. Anything else goes to the handler that was there before.
pub(crate) mod overflow {
    use std::sync::Once;

    /// Bytes below a coroutine stack's limit counted as its guard window.
    const WINDOW: usize = 64 * 1024;

    static mut OLD: [std::mem::MaybeUninit<libc::sigaction>; 2] =
        [std::mem::MaybeUninit::uninit(); 2];
    static INSTALL: Once = Once::new();

    /// The fault-address window for a stack: its guard page (the lowest page
    /// of the mapping; corosensei's `limit()` is the mapping's start) and a
    /// margin below it, for frames large enough to jump the guard.
    pub(crate) fn guard_window(stack: &corosensei::stack::DefaultStack) -> (usize, usize) {
        use corosensei::stack::Stack;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let limit = stack.limit().get();
        (limit.saturating_sub(WINDOW), limit + page)
    }

    /// Installs the handler once per process.
    pub(crate) fn install() {
        INSTALL.call_once(|| {
            for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
                // SAFETY: sigaction is plain data; all-zero is a valid empty set.
                let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
                act.sa_sigaction = handler as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                // SAFETY: `OLD[i]` is written once here, under `Once`, before
                // the handler that reads it is installed; `act` is valid.
                unsafe {
                    let old = (*std::ptr::addr_of_mut!(OLD))[i].as_mut_ptr();
                    libc::sigaction(sig, &act, old);
                }
            }
        });
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        let (lo, hi) = super::GUARD.try_with(|g| g.get()).unwrap_or((0, 0));
        if addr >= lo && addr < hi {
            let msg = b"manycore: coroutine stack overflow: the coroutine ran past the guard page of its stack; \
give it a larger stack (Builder::coroutine_stack or Core::spawn_coroutine_with_stack)\n";
            // SAFETY: write(2) and abort are async-signal-safe; msg is valid.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::abort();
            }
        }
        let i = if sig == libc::SIGSEGV { 0 } else { 1 };
        // SAFETY: OLD[i] was initialised by `install` before this handler
        // could run. We chain to it as the kernel would have called it.
        unsafe {
            let old = (*std::ptr::addr_of!(OLD))[i].assume_init_ref();
            if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
                // Restore it and return: the fault repeats under the default.
                libc::sigaction(sig, old, std::ptr::null_mut());
            } else if old.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                f(sig);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The results of everyday calls travel in one-line blocks (if this fails,
    /// the record grew and such calls went back to the allocator).
    #[test]
    fn common_records_fit_a_block() {
        assert!(
            size_of::<Completion<u64>>() <= 64,
            "{}",
            size_of::<Completion<u64>>()
        );
        assert!(size_of::<Completion<()>>() <= 64);
        assert!(size_of::<Completion<String>>() <= 64);
        assert!(size_of::<Completion<[u64; 16]>>() > 64);
    }

    /// Records of both kinds (blocks and boxes), completed and dropped in
    /// either order, on either thread: every value arrives, nothing is freed
    /// twice (a double free would abort the test process).
    #[test]
    fn records_are_reused_safely_across_threads() {
        for round in 0..200u64 {
            let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) = (0..8).map(|_| completion()).unzip();
            let big: Vec<_> = (0..8).map(|_| completion::<[u64; 16]>()).collect();
            let t = std::thread::spawn(move || {
                for (i, tx) in txs.into_iter().enumerate() {
                    tx.complete(Ok(round * 100 + i as u64));
                }
            });
            // Drop every other waiter early: its completer may then free the
            // record, on the other thread.
            let kept: Vec<(usize, Rx<u64>)> = rxs
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 1)
                .collect();
            t.join().unwrap();
            for (i, rx) in kept {
                assert_eq!(rx.take(), Some(Ok(round * 100 + i as u64)));
            }
            for (i, (tx, rx)) in big.into_iter().enumerate() {
                tx.complete(Ok([i as u64; 16]));
                assert_eq!(rx.take(), Some(Ok([i as u64; 16])));
            }
        }
    }
}
