//! `Core`: the handle through which anyone (a core, an outside thread, an
//! async task) invokes code on one core: `spawn` (async RPC), `call` (an
//! [`Invocation`] to wait on or await: sync RPC and futures), `call_then`
//! (a continuation run on a core the caller names) and `spawn_async`.

use crate::core_loop;
use crate::error::{panicked, InvokeError};
use crate::invocation::Invocation;
use crate::raw::{self, Message};
use crate::runtime::Shared;
use manycore_sync::atomic::Ordering;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A handle to one core of a runtime. Cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Core {
    pub(crate) shared: Arc<Shared>,
    index: usize,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("runtime", &self.shared.id)
            .field("index", &self.index)
            .finish()
    }
}

impl PartialEq for Core {
    fn eq(&self, other: &Self) -> bool {
        self.shared.id == other.shared.id && self.index == other.index
    }
}
impl Eq for Core {}

/// The handle of the core the calling code runs on, or None on a thread that
/// is not a core.
///
/// ```
/// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
/// assert!(manycore_rt::current().is_none());
/// let i = rt.core(1).call(|| manycore_rt::current().unwrap().index()).wait().unwrap();
/// assert_eq!(i, 1);
/// ```
pub fn current() -> Option<Core> {
    core_loop::with_local(|l| l.map(|l| Core::new(l.shared.clone(), l.index)))
}

impl Core {
    pub(crate) fn new(shared: Arc<Shared>, index: usize) -> Self {
        Self { shared, index }
    }

    /// This core's index in its runtime.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The id of the runtime this core belongs to.
    pub fn runtime_id(&self) -> u64 {
        self.shared.id
    }

    /// Runs `f` on this core, fire and forget (asynchronous RPC). A panic in
    /// `f` is caught and counted; the core lives on. Closures of up to 48
    /// bytes travel inline, with no allocation.
    ///
    /// Called on a core whose queue toward this core is full, it first
    /// serves the calling core until there is room; from another thread,
    /// it waits for room in the thread's ring (see the
    /// [crate docs](crate#memory)).
    ///
    /// Fails only with [`InvokeError::Shutdown`], when called from outside the
    /// runtime after shutdown began.
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), InvokeError> {
        self.send_fn::<true, F>(f)
    }

    /// Runs `f` on this core and returns an [`Invocation`] for its result
    /// (synchronous RPC when waited on, a future when awaited).
    ///
    /// ```
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let inv = rt.core(0).call(|| 6 * 7);
    /// assert_eq!(inv.wait(), Ok(42));
    /// let err = rt.core(1).call(|| -> u32 { panic!("boom") }).wait();
    /// assert_eq!(err, Err(manycore_rt::InvokeError::Panicked("boom".into())));
    /// ```
    pub fn call<T, F>(&self, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (run, inv) = completing(f, self.shared.idle.spin_budget());
        // A failed send drops the message, and the completer inside it
        // resolves the invocation to Shutdown.
        let _ = self.send_fn::<false, _>(run);
        inv
    }

    /// Runs `f` on this core, then runs the continuation `k` with its result
    /// on core `on` (which may be any core of any runtime). Nobody waits.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// rt.core(1).call_then(|| 20 + 1, rt.core(0), move |r| {
    ///     tx.send((manycore_rt::current().unwrap().index(), r)).unwrap();
    /// });
    /// assert_eq!(rx.recv().unwrap(), (0, Ok(21)));
    /// ```
    pub fn call_then<T, F, K>(&self, f: F, on: &Core, k: K)
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
        K: FnOnce(Result<T, InvokeError>) + Send + 'static,
    {
        let on = on.clone();
        let _ = self.send_fn::<false, _>(move || {
            let r = catch_unwind(AssertUnwindSafe(f)).map_err(panicked);
            let _ = on.spawn(move || k(r));
        });
    }

    /// Runs a future to completion as a task on this core (the future is
    /// built here and moved there) and returns an [`Invocation`] for its
    /// output. A task may await invocations on other cores.
    ///
    /// ```
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let c1 = rt.core(1).clone();
    /// let inv = rt.core(0).spawn_async(async move {
    ///     let a = c1.call(|| 2).await.unwrap();
    ///     let b = c1.call(|| 3).await.unwrap();
    ///     a * b
    /// });
    /// assert_eq!(inv.wait(), Ok(6));
    /// ```
    pub fn spawn_async<T, Fut>(&self, fut: Fut) -> Invocation<T>
    where
        T: Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let (completer, rx) = Completer::new();
        let task = async move {
            let r = crate::executor::catch_unwind_future(fut).await;
            completer.complete(r);
        };
        let _ = self.send(Message::new(move || {
            core_loop::with_local(|l| {
                if let Some(l) = l {
                    l.exec.spawn(l, Box::pin(task));
                }
            })
        }));
        Invocation::new(rx, self.shared.idle.spin_budget())
    }

    /// Spawns `f` into this core's scheduler queue with attributes: under
    /// [`Scheduler::Priority`](crate::Scheduler::Priority) higher
    /// [`Priority`](crate::Priority) runs first, under
    /// [`Scheduler::Edf`](crate::Scheduler::Edf) the earliest
    /// [`Deadline`](crate::Deadline), under FIFO arrival order.
    ///
    /// ```
    /// use manycore_rt::{Deadline, Runtime, Scheduler};
    /// use std::time::{Duration, Instant};
    /// let rt = Runtime::builder().cores(1).scheduler(Scheduler::Edf).build().unwrap();
    /// let now = Instant::now();
    /// rt.core(0).spawn_with(Deadline(now + Duration::from_millis(5)), || println!("sooner")).unwrap();
    /// ```
    pub fn spawn_with<F>(
        &self,
        attrs: impl Into<crate::task_queue::TaskAttrs>,
        f: F,
    ) -> Result<(), InvokeError>
    where
        F: FnOnce() + Send + 'static,
    {
        let attrs = attrs.into();
        let task = Message::new(f);
        self.send(Message::new(move || {
            core_loop::with_local(|l| {
                if let Some(l) = l {
                    l.tasks.push(attrs, task);
                }
            })
        }))
    }

    /// [`call`](Self::call) through this core's scheduler queue, with attributes.
    pub fn call_with<T, F>(
        &self,
        attrs: impl Into<crate::task_queue::TaskAttrs>,
        f: F,
    ) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (run, inv) = completing(f, self.shared.idle.spin_budget());
        let _ = self.spawn_with(attrs, run);
        inv
    }

    /// An urgent invocation (the preemptive cross-core invocation of the
    /// "Cross-core invocations on the SCC" paper): it goes to this core's
    /// front lane, ahead of everything queued, and runs at the next
    /// scheduling point, including a [`preempt_point`](crate::preempt_point)
    /// inside a long task.
    pub fn call_urgent<T, F>(&self, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (run, inv) = completing(f, self.shared.idle.spin_budget());
        let m = Message::new(run);
        if !self.shared.stopping.load(Ordering::Acquire) || core_loop::on_core_of(self.shared.id) {
            self.shared.urgent[self.index]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back(m);
            if self.shared.mailboxes[self.index].announce_urgent() {
                self.shared.drain_urgent(self.index);
            }
        }
        inv
    }

    /// Rings this core's doorbell, so that a sleeping core wakes and polls
    /// (and runs its idle hook) once more. Never lost: a notify that arrives
    /// while the core is deciding to sleep stops it from sleeping.
    pub fn notify(&self) {
        self.shared.mailboxes[self.index].notify();
    }

    /// Wakes this core if it sleeps in its idle loop, for work that its
    /// [`IdleHook::pending`](crate::IdleHook::pending) reports: cheaper than
    /// [`notify`](Self::notify) (no store to the core's mailbox line), and
    /// just as safe for such work, because the core's sleep protocol asks the
    /// hook after it has announced itself as a sleeper. Publish the work
    /// first (with a store the hook's `pending` reads), then call this.
    pub fn wake(&self) {
        self.shared.mailboxes[self.index].wake();
    }

    /// Every core of this core's runtime, in index order.
    pub fn peers(&self) -> Vec<Core> {
        (0..self.shared.n)
            .map(|i| Core::new(self.shared.clone(), i))
            .collect()
    }

    /// Sends a message to this core from wherever we are.
    pub(crate) fn send(&self, m: Message) -> Result<(), InvokeError> {
        match self.on_own_core(m, |l, m| l.send(self.index, m)) {
            None => Ok(()),
            Some(m) => self.send_external(m),
        }
    }

    /// Runs `f(local, x)` if the caller is a core of this core's runtime;
    /// otherwise gives `x` back (the caller then goes the outside way).
    #[inline]
    fn on_own_core<X>(&self, x: X, f: impl FnOnce(&core_loop::CoreLocal, X)) -> Option<X> {
        let id = self.shared.id;
        core_loop::with_local(|l| match l {
            Some(l) if l.shared.id == id => {
                f(l, x);
                None
            }
            _ => Some(x),
        })
    }

    /// Sends closure `f` to this core; from a core of our runtime, the
    /// message is built in place in the ring slot.
    ///
    /// Why not `send(Message::new(f))`: a message built on the stack and
    /// then copied into the slot is written with narrow stores and read back
    /// with wide loads. Such a load cannot be forwarded from the store
    /// buffer; it waits until the stores before it reach the cache, and
    /// those include the previous message's slot, whose line the receiver
    /// holds. Every send then waited for a cache-line transfer, as long as
    /// a fence.
    ///
    /// With `DEFER` (fire and forget, from a core), the message may stay
    /// unpublished until the sending core publishes its batch (see
    /// `CoreLocal::send_with`).
    #[inline]
    pub(crate) fn send_fn<const DEFER: bool, F: FnOnce() + Send + 'static>(
        &self,
        f: F,
    ) -> Result<(), InvokeError> {
        if !Message::fits::<F>() {
            return self.send(Message::new(f));
        }
        match self.on_own_core(f, |l, f| l.send_with::<DEFER, F>(self.index, f)) {
            None => Ok(()),
            Some(f) => self.send_external(Message::new(f)),
        }
    }

    /// From a thread that is not one of this runtime's cores: through a lane.
    fn send_external(&self, m: Message) -> Result<(), InvokeError> {
        let sh = &self.shared;
        if sh.stopping.load(Ordering::Acquire) {
            return Err(InvokeError::Shutdown);
        }
        let lane = lane_of_this_thread(sh.lanes.len());
        let src = sh.n + lane;
        let mut pending = Some(m);
        let mut backoff = manycore_sync::Backoff::new();
        loop {
            {
                let mut g = sh.lanes[lane].lock().unwrap_or_else(|e| e.into_inner());
                if g.producers.get(self.index).is_none() {
                    // This lane's first message to this core: make their ring
                    // and hand its consumer end to the core (README.md).
                    let (p, c) = sh.new_ring().ok_or(InvokeError::Shutdown)?;
                    sh.new_rings[self.index]
                        .offer(src, Box::new(c))
                        .map_err(|_| InvokeError::Shutdown)?;
                    g.producers.insert(self.index, p);
                }
                let Some(p) = g.producers.get_mut(self.index) else {
                    return Err(InvokeError::Shutdown);
                };
                if let Some(m) = pending.take() {
                    match p.try_push(m) {
                        Ok(()) => {
                            p.publish();
                            g.sent += 1;
                        }
                        Err(back) => pending = Some(back),
                    }
                }
            }
            if pending.is_none() {
                if sh.mailboxes[self.index].announce(src) {
                    sh.drain_parked(self.index, src);
                }
                return Ok(());
            }
            // Ring full: an outside thread is not a core and cannot spill, so it
            // waits for the core to take messages (bounded steps, sleeping).
            if sh.closing.load(Ordering::Acquire) {
                return Err(InvokeError::Shutdown);
            }
            if backoff.is_completed() {
                std::thread::sleep(std::time::Duration::from_micros(50));
            } else {
                backoff.snooze();
            }
        }
    }
}

thread_local! {
    /// This outside thread's lane number before the modulo (set on first use).
    static LANE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// The lane this (outside) thread always uses, so its messages stay in order.
fn lane_of_this_thread(lanes: usize) -> usize {
    LANE.with(|c| {
        if c.get() == usize::MAX {
            c.set(manycore_sync::unique_id() as usize);
        }
        c.get() % lanes
    })
}

/// Wraps `f` so that running it (on any core) completes a new invocation
/// with its result, or with `Panicked` if it panics; returns both halves.
/// Dropping the wrapper unrun resolves the invocation to `Shutdown`.
pub(crate) fn completing<T, F>(
    f: F,
    spin: std::time::Duration,
) -> (impl FnOnce() + Send + 'static, Invocation<T>)
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (completer, rx) = Completer::new();
    let run = move || {
        let r = catch_unwind(AssertUnwindSafe(f)).map_err(panicked);
        completer.complete(r);
    };
    (run, Invocation::new(rx, spin))
}

/// The callee's end of an invocation: completes it, or, if dropped unrun
/// (the runtime shut down), resolves it to `Shutdown`.
pub(crate) struct Completer<T>(raw::Tx<T>);

impl<T> Completer<T> {
    /// A new invocation: its completer and the waiter's end.
    pub(crate) fn new() -> (Self, raw::Rx<T>) {
        let (tx, rx) = raw::completion();
        (Completer(tx), rx)
    }

    pub(crate) fn complete(self, r: Result<T, InvokeError>) {
        if !self.0.complete(r) {
            crate::core_loop::note_late_result();
        }
    }
}
