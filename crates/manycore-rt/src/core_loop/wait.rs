//! Waiting on a core for one thing (an invocation's result, a future)
//! while the core keeps serving its own messages, and idles by its policy
//! when there is nothing to serve.

use super::{CoreLocal, CLEAR_EVERY, WAIT_LOOKS};
use crate::raw::Rx;
use manycore_sync::atomic::Ordering;
use manycore_sync::AdaptiveSpin;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Instant;

/// How a wait on a core ended.
pub(crate) enum Waited {
    /// The result is in.
    Done,
    /// The deadline passed first.
    TimedOut,
    /// The result can only come after the waiting code returns.
    WouldDeadlock,
}

impl CoreLocal {
    /// One step of `block_on` on a core outside any coroutine: poll the
    /// future; if pending, serve the core once, and sleep (by the idle
    /// policy) if there was nothing to do and the future has not been woken.
    pub(crate) fn block_on_step<F: std::future::Future>(
        &self,
        fut: &mut std::pin::Pin<&mut F>,
    ) -> Option<F::Output> {
        struct Flag {
            /// Set by the future's waker (SeqCst), cleared by this loop
            /// before each poll of the future: a wake during the poll keeps
            /// the loop from sleeping.
            woken: manycore_sync::atomic::AtomicBool,
            /// Rings the core's doorbell, in case the core sleeps.
            inner: Waker,
        }
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.wake_by_ref()
            }
            fn wake_by_ref(self: &Arc<Self>) {
                self.woken.store(true, Ordering::SeqCst);
                self.inner.wake_by_ref();
            }
        }
        let flag = Arc::new(Flag {
            woken: manycore_sync::atomic::AtomicBool::new(false),
            inner: self.idle.waker.clone(),
        });
        let waker = Waker::from(flag.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let mut budget = AdaptiveSpin::new(self.shared.idle.spin_budget(), &self.idle.gaps);
        self.publish_deferred();
        loop {
            flag.woken.store(false, Ordering::SeqCst);
            if let std::task::Poll::Ready(v) =
                crate::coroutine::poll_blocking(fut.as_mut(), &mut cx)
            {
                return Some(v);
            }
            loop {
                if flag.woken.load(Ordering::SeqCst) {
                    budget.found();
                    break;
                }
                if self.poll() > 0 {
                    budget.found();
                    continue;
                }
                if budget.spin() {
                    continue;
                }
                self.sleep(&|| flag.woken.load(Ordering::SeqCst), None);
                budget.slept();
            }
        }
    }

    /// Waits (on this core) until `c` completes, serving this core's own
    /// messages meanwhile, or `deadline` passes, or the wait is seen never
    /// to end (the invocation is queued behind an object that this very
    /// stack has borrowed).
    pub(crate) fn wait_for<T>(&self, c: &Rx<T>, deadline: Option<Instant>) -> Waited {
        self.publish_deferred();
        let mut budget = AdaptiveSpin::new(self.shared.idle.spin_budget(), &self.idle.gaps);
        let mut empty = 0u32;
        loop {
            // Look at the completion several times per poll: each look is one
            // load of a line this core holds until the completer writes it,
            // while a poll costs many loads. A result is seen within a few
            // loads of its arrival instead of half a poll later on average.
            for _ in 0..WAIT_LOOKS {
                if c.is_done() {
                    budget.found();
                    return Waited::Done;
                }
            }
            if self.poll() > 0 {
                budget.found();
                continue;
            }
            if c.is_done() {
                budget.found();
                return Waited::Done;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Waited::TimedOut;
            }
            // Nothing left to run here: if the invocation waits behind an
            // object this stack holds, it cannot run before we return.
            if self.objects.would_deadlock(c.id()) {
                return Waited::WouldDeadlock;
            }
            empty = empty.wrapping_add(1);
            if empty % CLEAR_EVERY == 0 {
                self.refresh_bits();
            }
            if budget.spin() {
                continue;
            }
            if c.register(&self.idle.waker) {
                budget.found();
                return Waited::Done;
            }
            self.sleep(&|| c.is_done(), deadline);
            budget.slept();
        }
    }
}
