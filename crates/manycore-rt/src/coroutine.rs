//! Coroutines: stackful tasks that may block inside nested calls (the
//! "Cross-core invocations on the SCC" paper, section IV.A), on corosensei.
//! To the core's executor a coroutine is one more task with one `poll`
//! (resume) entry, like an async task; inside it, [`block_on`] suspends the
//! coroutine, not the core, until a future (an `Invocation`, a `sleep`, ...)
//! is ready.
//!
//! Each coroutine has its own stack (default 256 KiB, set per runtime with
//! `Builder::coroutine_stack` or per call) with a guard page below it: an
//! overflow faults on the guard page and can never overwrite other memory;
//! the fault is reported as "coroutine stack overflow" and the process
//! aborts, as Rust does for thread stacks (see `raw::overflow`).

use crate::core::{Completer, Core};
use crate::core_loop::with_local;
use crate::error::{panicked, InvokeError};
use crate::invocation::Invocation;
use crate::raw::{self, CoCtx};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Default coroutine stack size.
pub const DEFAULT_COROUTINE_STACK: usize = 256 * 1024;

type Co<T> = Coroutine<(), (), Result<T, InvokeError>, DefaultStack>;

struct CoroutineTask<T> {
    co: Co<T>,
    yielder: Rc<raw::YielderSlot>,
    bounds: (usize, usize),
    completer: Option<Completer<T>>,
}

impl<T> Future for CoroutineTask<T> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let ctx = CoCtx {
            yielder: this.yielder.clone(),
            waker: cx.waker().clone(),
            bounds: this.bounds,
        };
        let prev = raw::enter_coroutine(ctx);
        let r = catch_unwind(AssertUnwindSafe(|| this.co.resume(())));
        raw::leave_coroutine(prev);
        let out = match r {
            Ok(CoroutineResult::Yield(())) => return Poll::Pending,
            Ok(CoroutineResult::Return(v)) => v,
            Err(p) => Err(panicked(p)),
        };
        if let Some(c) = this.completer.take() {
            c.complete(out);
        }
        Poll::Ready(())
    }
}

impl Core {
    /// Runs `f` as a coroutine on this core: it may call [`block_on`] at any
    /// depth of nested calls, suspending only itself.
    ///
    /// ```
    /// use manycore_rt::{block_on, Runtime};
    /// let rt = Runtime::builder().cores(2).build().unwrap();
    /// let c1 = rt.core(1).clone();
    /// fn deep(c: &manycore_rt::Core, depth: u32) -> u32 {
    ///     if depth == 0 { return block_on(c.call(|| 1)).unwrap(); }
    ///     deep(c, depth - 1) + 1
    /// }
    /// assert_eq!(rt.core(0).spawn_coroutine(move || deep(&c1, 3)).wait(), Ok(4));
    /// ```
    pub fn spawn_coroutine<T, F>(&self, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn_coroutine_with_stack(0, f)
    }

    /// [`spawn_coroutine`](Self::spawn_coroutine) with a stack of `stack_bytes`
    /// (0: the runtime's default). A stack that cannot be mapped, whatever
    /// the size asked for (`usize::MAX` included), gives
    /// `Err(InvokeError::Resource)`.
    pub fn spawn_coroutine_with_stack<T, F>(&self, stack_bytes: usize, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (completer, rx) = Completer::new();
        let default = self.shared.coroutine_stack;
        let _ = self.spawn(move || {
            let size = if stack_bytes == 0 {
                default
            } else {
                stack_bytes
            };
            let stack = match new_stack(size) {
                Ok(s) => s,
                Err(e) => {
                    return completer.complete(Err(InvokeError::Resource(format!(
                        "coroutine stack of {size} bytes: {e}"
                    ))))
                }
            };
            raw::overflow::install();
            let bounds = raw::overflow::guard_window(&stack);
            let yielder = Rc::new(raw::YielderSlot::default());
            let y2 = yielder.clone();
            let co: Co<T> =
                Coroutine::with_stack(stack, move |y: &corosensei::Yielder<(), ()>, ()| {
                    y2.set(y);
                    catch_unwind(AssertUnwindSafe(f)).map_err(panicked)
                });
            let task = CoroutineTask {
                co,
                yielder,
                bounds,
                completer: Some(completer),
            };
            with_local(|l| {
                if let Some(l) = l {
                    l.exec.spawn(l, Box::pin(task));
                }
            });
        });
        Invocation::new(rx, self.shared.idle.spin_budget())
    }
}

thread_local! {
    /// Set while `block_on` polls its future: an invocation polled then is
    /// waited for synchronously by the stack that polls it.
    static IN_BLOCK_ON: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True while `block_on` polls its future on this thread.
pub(crate) fn in_block_on() -> bool {
    IN_BLOCK_ON.with(|b| b.get())
}

/// Polls `fut` as `block_on` does, marked as a synchronous wait.
pub(crate) fn poll_blocking<F: Future>(fut: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_BLOCK_ON.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(IN_BLOCK_ON.with(|b| b.replace(true)));
    fut.poll(cx)
}

/// Maps a coroutine stack of `size` bytes (and its guard page). A size
/// whose rounding up to whole pages would overflow is refused here, since
/// the stack allocator would panic on it; any other failure (no address
/// space, no memory) comes back as the allocator's error.
fn new_stack(size: usize) -> std::io::Result<DefaultStack> {
    // Room for the guard page and the rounding, with any page size up to
    // 1 MiB.
    if size.checked_add(2 << 20).is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "larger than the address space",
        ));
    }
    match catch_unwind(|| DefaultStack::new(size)) {
        Ok(r) => r,
        Err(p) => {
            crate::error::drop_payload(p);
            Err(std::io::Error::other(
                "the stack allocator refused the size",
            ))
        }
    }
}

/// Waits for a future. Inside a coroutine, suspends the coroutine (the core
/// runs other work meanwhile). On a core outside any coroutine, keeps the
/// core serving its messages while waiting. On any other thread, parks.
///
/// An [`Invocation`] of a [`Remote`](crate::Remote) object, waited for this
/// way by code running on that same object, resolves at once to
/// [`InvokeError::WouldDeadlock`], as with [`Invocation::wait`].
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Some(waker) = raw::coroutine_waker() {
            let mut cx = Context::from_waker(&waker);
            if let Poll::Ready(v) = poll_blocking(fut.as_mut(), &mut cx) {
                return v;
            }
            raw::suspend_coroutine();
            continue;
        }
        let on_core = with_local(|l| l.map(|l| l.block_on_step(&mut fut)));
        match on_core {
            Some(Some(v)) => return v,
            Some(None) => continue,
            None => return crate::outside::block_on_thread(fut),
        }
    }
}
