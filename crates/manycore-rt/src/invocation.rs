//! `Invocation<T>`: the caller's end of a cross-core call. It is a
//! `std::future::Future`, and it can also be waited on synchronously, with or
//! without a timeout (the futures and sync RPC of the "Cross-core invocations
//! on the SCC" paper, section III).

use crate::core_loop::{with_local, Waited};
use crate::error::InvokeError;
use crate::outside::Presence;
use crate::raw::Rx;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The pending result of [`Core::call`](crate::Core::call) or
/// [`Core::spawn_async`](crate::Core::spawn_async).
///
/// Dropping it does not cancel the invocation: the result is then dropped on
/// the core that produced it.
#[must_use = "an Invocation does nothing unless waited on or awaited (the call runs anyway)"]
pub struct Invocation<T> {
    c: Rx<T>,
    spin: Duration,
    deadline: Option<Instant>,
    timer_armed: bool,
    /// The outside thread this was made on, which is counted as awake
    /// while it has invocations in flight (`outside::call_begun`).
    maker: Option<Arc<Presence>>,
}

impl<T> Drop for Invocation<T> {
    fn drop(&mut self) {
        if let Some(p) = &self.maker {
            p.call_ended();
        }
    }
}

impl<T> std::fmt::Debug for Invocation<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("finished", &self.c.is_done())
            .finish()
    }
}

impl<T> Invocation<T> {
    pub(crate) fn new(c: Rx<T>, spin: Duration) -> Self {
        let maker = if with_local(|l| l.is_none()) {
            crate::outside::call_begun()
        } else {
            None
        };
        Self {
            c,
            spin,
            deadline: None,
            timer_armed: false,
            maker,
        }
    }

    /// Gives the invocation a timeout: whichever of result and timeout comes
    /// first wins, for `wait` and for `.await` alike. The loser is
    /// deactivated: a late result is dropped on the core that produced it and
    /// counted in [`CoreStats::late_results`](crate::CoreStats::late_results).
    ///
    /// ```
    /// use std::time::Duration;
    /// use manycore_rt::{InvokeError, Runtime};
    /// let rt = Runtime::builder().cores(2).build().unwrap();
    /// let c1 = rt.core(1).clone();
    /// let r = rt.core(0).spawn_async(async move {
    ///     c1.call(|| std::thread::sleep(Duration::from_millis(100))).timeout(Duration::from_millis(2)).await
    /// });
    /// assert_eq!(r.wait().unwrap(), Err(InvokeError::Timeout));
    /// ```
    pub fn timeout(self, d: Duration) -> Self {
        let at = crate::timer::deadline_in(d);
        self.deadline(at)
    }

    /// Gives the invocation an absolute deadline (see [`timeout`](Self::timeout)).
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(self.deadline.map_or(at, |d| d.min(at)));
        self
    }

    /// Gives up: returns the result if it already won, else `Timeout`.
    fn expire(&self) -> Result<T, InvokeError> {
        self.give_up(InvokeError::Timeout)
    }

    /// Gives up with `why`, unless the result already won (then returns
    /// it). A late result is dropped on the core that produces it.
    fn give_up(&self, why: InvokeError) -> Result<T, InvokeError> {
        if self.c.cancel() {
            self.c.take().unwrap_or(Err(InvokeError::Consumed))
        } else {
            Err(why)
        }
    }

    /// True once the result is in.
    pub fn is_finished(&self) -> bool {
        self.c.is_done()
    }

    /// Blocks until the result is in. On a core, the core keeps serving its
    /// own messages and tasks while it waits (so two cores calling each other
    /// cannot deadlock, and a call to the waiting core itself runs while it
    /// waits) and idles by its policy; on any other thread it spins for the
    /// callee's spin budget (bounded) and then parks.
    ///
    /// Code running on a [`Remote`](crate::Remote) object that waits for an
    /// invocation of that same object (directly or through a collective)
    /// gets [`InvokeError::WouldDeadlock`] at once: that invocation can only
    /// run after the waiting code returns.
    pub fn wait(self) -> Result<T, InvokeError> {
        let d = self.deadline;
        self.wait_until(d)
    }

    /// Like [`wait`](Self::wait), but gives up after `timeout` with
    /// [`InvokeError::Timeout`]; the late result is then dropped on its core.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
    /// let slow = rt.core(0).call(|| std::thread::sleep(Duration::from_millis(200)));
    /// assert_eq!(slow.wait_timeout(Duration::from_millis(1)), Err(manycore_rt::InvokeError::Timeout));
    /// ```
    pub fn wait_timeout(self, timeout: Duration) -> Result<T, InvokeError> {
        self.timeout(timeout).wait()
    }

    /// Like [`wait`](Self::wait) with an absolute deadline.
    pub fn wait_deadline(self, deadline: Instant) -> Result<T, InvokeError> {
        self.deadline(deadline).wait()
    }

    fn wait_until(self, deadline: Option<Instant>) -> Result<T, InvokeError> {
        let waited = match with_local(|l| l.map(|l| l.wait_for(&self.c, deadline))) {
            Some(w) => w,
            None if self.wait_on_thread(deadline) => Waited::Done,
            None => Waited::TimedOut,
        };
        match waited {
            Waited::Done => self.c.take().unwrap_or(Err(InvokeError::Consumed)),
            Waited::TimedOut => self.expire(),
            Waited::WouldDeadlock => self.give_up(InvokeError::WouldDeadlock),
        }
    }

    /// An outside thread's wait: spin as the adaptive policy says (counted
    /// as awake while it spins, if its calls in flight do not count it
    /// already; yielding while more threads are awake than CPUs), then
    /// park, uncounted. The thread's gap predictor learns how long its
    /// waits take, asleep or not.
    fn wait_on_thread(&self, deadline: Option<Instant>) -> bool {
        crate::outside::with_gaps(|gaps| {
            let mut budget =
                crate::outside::spin_budget(self.spin.min(crate::outside::SPIN_MAX), gaps);
            while budget.spin() {
                if self.c.is_done() {
                    budget.found();
                    return true;
                }
            }
            let done = self.park(deadline);
            if done {
                budget.found();
            }
            done
        })
    }

    /// Parks the calling thread until the invocation is done or `deadline`
    /// passes.
    fn park(&self, deadline: Option<Instant>) -> bool {
        if crate::outside::with_thread_waker(|w| self.c.register(w)) {
            return true;
        }
        loop {
            if self.c.is_done() {
                return true;
            }
            match deadline {
                None => crate::outside::parked(std::thread::park),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return self.c.is_done();
                    }
                    crate::outside::parked(|| std::thread::park_timeout(d - now));
                }
            }
        }
    }
}

impl<T> Future for Invocation<T> {
    type Output = Result<T, InvokeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.c.is_done() || self.c.register(cx.waker()) {
            return Poll::Ready(self.c.take().unwrap_or(Err(InvokeError::Consumed)));
        }
        // Polled by `block_on` (a synchronous wait) on the stack that holds
        // the object this invocation waits behind: it would never end.
        if crate::coroutine::in_block_on()
            && with_local(|l| l.is_some_and(|l| l.objects.would_deadlock(self.c.id())))
        {
            return Poll::Ready(self.give_up(InvokeError::WouldDeadlock));
        }
        if let Some(at) = self.deadline {
            if Instant::now() >= at {
                return Poll::Ready(self.expire());
            }
            if !self.timer_armed {
                self.timer_armed = true;
                crate::timer::wake_at(at, cx.waker().clone());
            }
        }
        Poll::Pending
    }
}
