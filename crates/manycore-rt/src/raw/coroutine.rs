//! The coroutine the thread is running: its yielder (so that `block_on`
//! deep in nested calls can suspend it), its task's waker, and the fault
//! window of its stack's guard page (for the overflow handler).

use std::task::Waker;

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

/// The guard window of the running coroutine's stack ((0, 0) if none): read
/// by the overflow handler, so a `Cell` read and nothing that allocates or
/// locks.
pub(super) fn running_guard_window() -> (usize, usize) {
    GUARD.try_with(|g| g.get()).unwrap_or((0, 0))
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

/// Which stack the calling code runs on: 0 for the thread's own stack, or
/// a number unique to the running coroutine while it lives (the address of
/// its yielder slot).
pub(crate) fn current_context() -> usize {
    CURRENT_CO
        .try_with(|c| {
            c.borrow()
                .as_ref()
                .map_or(0, |c| std::rc::Rc::as_ptr(&c.yielder) as usize)
        })
        .unwrap_or(0)
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
