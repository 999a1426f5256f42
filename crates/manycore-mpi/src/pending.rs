//! `Pending<T>`: the caller's end of a remote call, like manycore-rt's
//! `Invocation<T>`: a `std::future::Future`, and also waitable, with or
//! without a timeout. On a core of the local runtime, `wait` keeps the core
//! serving its own messages (so a call that comes back to this core while
//! it waits still runs); on any other thread it parks.

use crate::codec::decode;
use crate::error::CallError;
use crate::header::Header;
use crate::shared::Shared;
use manycore_sync::{AdaptiveSpin, GapPredictor};
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// A waiter yields its CPU in a loop this long before it sleeps: a reply
/// from another rank takes tens of microseconds, and a futex sleep and
/// wakeup costs as much again; yielding rather than spinning lets the
/// threads that produce the reply (engines, cores) run on a machine with
/// fewer CPUs than threads.
const SPIN: Duration = Duration::from_micros(100);

/// The longest a waiting thread sleeps between two looks at its slot: a
/// bound, in case a wakeup is lost to a race with registration, not a
/// timing the protocol relies on.
const MAX_PARK: Duration = Duration::from_millis(5);
/// How long a waiter polls MPI for its reply without yielding; then it
/// yields between looks, until its poll window ends.
const POLL_YIELD: Duration = Duration::from_micros(20);

#[derive(Default)]
struct SlotState {
    /// The reply frame (header included) or the failure.
    value: Option<Result<Vec<u8>, CallError>>,
    waker: Option<Waker>,
    taken: bool,
}

/// Where a reply lands: written once by whoever delivers it, read once.
/// The flag mirrors "a value was stored" for waiters that poll.
#[derive(Default)]
pub(crate) struct Oneshot(Mutex<SlotState>, AtomicBool);

thread_local! {
    /// The gaps this thread's adaptive waits for calls to cores saw.
    static WAIT_GAPS: GapPredictor = GapPredictor::new(SPIN);
    /// This thread's reply slot, kept for its next call once nobody else
    /// holds it (see [`Oneshot::for_this_thread`]).
    static MINE: RefCell<Option<Arc<Oneshot>>> = const { RefCell::new(None) };
    /// References to reply slots whose call this thread settled itself
    /// (it received the reply while polling for it): dropped at its next
    /// call, after that call's send, rather than between the reply and
    /// the caller's return (each drop is an atomic read-modify-write).
    static LATER: RefCell<Vec<Arc<Oneshot>>> = const { RefCell::new(Vec::new()) };
    /// A handle on the world of this thread's last settled call, kept for
    /// its next `Pending` (a reference count moved, not taken and given
    /// back, per call).
    static WORLD: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
}

/// References kept in [`LATER`] at most; more are dropped at once.
const LATER_MAX: usize = 8;

/// Drops `slot` (a reference to a reply slot whose call this thread
/// settled) at this thread's next call, after its send.
pub(crate) fn drop_later(slot: Arc<Oneshot>) {
    let _ = LATER.try_with(move |l| {
        let mut l = l.borrow_mut();
        if l.len() < LATER_MAX {
            l.push(slot);
        }
    });
}

/// A handle on `sh` for a `Pending`: the one this thread kept from its last
/// settled call if it is of the same world, else a new one.
pub(crate) fn world_handle(sh: &Arc<Shared>) -> Arc<Shared> {
    WORLD
        .try_with(|w| w.borrow_mut().take())
        .ok()
        .flatten()
        .filter(|w| Arc::ptr_eq(w, sh))
        .unwrap_or_else(|| sh.clone())
}

/// Gives back what this thread kept of `sh`'s calls (its last world
/// handle and the slot references waiting for its next call): a thread
/// that finalizes its world keeps no reference to it.
pub(crate) fn release_kept(sh: &Arc<Shared>) {
    let kept = WORLD
        .try_with(|w| {
            let mut w = w.borrow_mut();
            if w.as_ref().is_some_and(|k| Arc::ptr_eq(k, sh)) {
                w.take()
            } else {
                None
            }
        })
        .ok()
        .flatten();
    drop(kept);
    let _ = LATER.try_with(|l| l.borrow_mut().clear());
}

impl Oneshot {
    /// An empty slot for a call this thread makes: the slot of its last
    /// call, emptied, if nothing holds that any more (the reply is in and
    /// its `Pending` is gone, or its call was forgotten and no late reply
    /// is being delivered into it); else a new one. A thread that waits
    /// for one call at a time so allocates no slot per call.
    pub(crate) fn for_this_thread() -> Arc<Oneshot> {
        // The references this thread's settled calls left behind go first
        // (its last slot is unique again once they are gone).
        let _ = LATER.try_with(|l| l.borrow_mut().clear());
        MINE.with(|m| {
            let mut m = m.borrow_mut();
            if let Some(slot) = m.as_mut() {
                // Unique: only this cache refers to it, so nothing can
                // complete it any more.
                if let Some(s) = Arc::get_mut(slot) {
                    *s = Oneshot::default();
                    return slot.clone();
                }
            }
            let slot = Arc::new(Oneshot::default());
            *m = Some(slot.clone());
            slot
        })
    }

    /// The flag set once the reply (or the failure) is in.
    pub(crate) fn done_flag(&self) -> &AtomicBool {
        &self.1
    }

    pub(crate) fn complete(&self, r: Result<Vec<u8>, CallError>) {
        let waker = {
            let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if s.value.is_some() || s.taken {
                return;
            }
            s.value = Some(r);
            self.1.store(true, Ordering::Release);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether the reply (or the failure) is in (or was taken).
    fn is_done(&self) -> bool {
        self.1.load(Ordering::Acquire)
    }

    /// Registers `w` to be woken on completion; true if already complete.
    fn register(&self, w: &Waker) -> bool {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.value.is_some() || s.taken {
            return true;
        }
        match &s.waker {
            Some(old) if old.will_wake(w) => {}
            _ => s.waker = Some(w.clone()),
        }
        false
    }

    fn take(&self) -> Option<Result<Vec<u8>, CallError>> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let v = s.value.take();
        if v.is_some() {
            s.taken = true;
        }
        v
    }
}

struct ThreadWake(std::thread::Thread);

impl Wake for ThreadWake {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

struct CoreWake(manycore_rt::Core);

impl Wake for CoreWake {
    fn wake(self: Arc<Self>) {
        self.0.notify();
    }
}

/// The pending result of a remote call: `.wait()`, `.wait_timeout(d)`, or
/// `.await`. Dropping it does not cancel the call; its reply is dropped.
#[must_use = "a Pending does nothing unless waited on or awaited (the call runs anyway)"]
pub struct Pending<T> {
    /// Always `Some` until dropped (a settled call's reference is then
    /// kept for the thread's next call, [`drop_later`]).
    slot: Option<Arc<Oneshot>>,
    seq: u64,
    shared: Option<Arc<Shared>>,
    /// The reply comes from a progress thread with no other thread in
    /// between (a call to an engine place): wait polling without yielding.
    spin: bool,
    /// The waiter received its reply itself and took it past the slot
    /// (`progress::take_own`): nothing is left to forget.
    settled: bool,
    /// A settled call's world handle may be kept for the thread's next
    /// call ([`world_handle`]; not on a core, whose thread-locals must not
    /// outlive its runtime holding the world).
    keep_world: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("seq", &self.seq)
            .field("finished", &self.slot().is_done())
            .finish()
    }
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        if self.settled {
            // Taken past the slot on this thread: the slot and the world's
            // handle wait here for this thread's next call (nothing
            // refers to the call any more).
            if let Some(slot) = self.slot.take() {
                drop_later(slot);
            }
            if let Some(s) = self.shared.take().filter(|_| self.keep_world) {
                let _ = WORLD.try_with(move |w| {
                    let mut w = w.borrow_mut();
                    if w.is_none() {
                        *w = Some(s);
                    }
                });
            }
            return;
        }
        if let Some(s) = &self.shared {
            if !self.slot().is_done() {
                s.forget(self.seq);
            }
        }
    }
}

impl<T> Pending<T> {
    pub(crate) fn new(
        slot: Arc<Oneshot>,
        seq: u64,
        shared: Option<Arc<Shared>>,
        spin: bool,
    ) -> Self {
        Pending {
            slot: Some(slot),
            seq,
            shared,
            spin,
            settled: false,
            keep_world: false,
            _t: PhantomData,
        }
    }

    /// A call that failed before it was sent.
    pub(crate) fn failed(e: CallError) -> Self {
        let slot = Arc::new(Oneshot::default());
        slot.complete(Err(e));
        Self::new(slot, 0, None, false)
    }

    /// The reply's slot (`slot` is `None` only once dropped).
    fn slot(&self) -> &Oneshot {
        self.slot
            .as_deref()
            .expect("a Pending's slot is gone only once it is dropped")
    }

    /// True once the reply (or the failure) is in.
    pub fn is_finished(&self) -> bool {
        self.slot().is_done()
    }
}

impl<T: DeserializeOwned> Pending<T> {
    /// Blocks until the reply is in. See the module docs for what a core
    /// does meanwhile.
    pub fn wait(self) -> Result<T, CallError> {
        self.wait_within(None)
    }

    /// Like [`wait`](Self::wait), but gives up after `timeout` with
    /// [`CallError::Timeout`]; the late reply is then dropped, and the
    /// place serves later calls as usual. `Duration::ZERO` returns the
    /// reply if it is in (or arrives during the first polls), else the
    /// timeout at once; `Duration::MAX` (like any bound too long for an
    /// `Instant`) waits without a bound, as `wait` does.
    pub fn wait_timeout(self, timeout: Duration) -> Result<T, CallError> {
        self.wait_within(Some(timeout))
    }

    /// Waits at most `timeout`, counted from the first look at the clock:
    /// a caller that polls for its reply reads the clock only once its
    /// first polls found nothing (a reply that comes within them costs no
    /// clock read; the bound starts a few microseconds late).
    fn wait_within(mut self, timeout: Option<Duration>) -> Result<T, CallError> {
        if self.slot().is_done() {
            return self.finish();
        }
        if crate::progress::progressing() {
            // This thread holds the progress lock (a function addressed to
            // the engine place waits for a call): only it could receive
            // the reply.
            return Err(CallError::WouldBlock);
        }
        let on_core = manycore_rt::current();
        // Made when first needed: most waits end while polling.
        let mut waker: Option<Waker> = None;
        let mut waker = || -> Waker {
            waker
                .get_or_insert_with(|| match &on_core {
                    Some(core) => Waker::from(Arc::new(CoreWake(core.clone()))),
                    None => Waker::from(Arc::new(ThreadWake(std::thread::current()))),
                })
                .clone()
        };
        // Polling MPI ourselves, we poll for the world's window; else we
        // yield for a while, so that whoever produces the reply can run.
        // Only for a reply that the peer's progress thread sends at once
        // (a call to an engine place): a call that a core must run takes
        // microseconds more, which a thread of this rank polling MPI would
        // only take from that core (ranks often share a machine's CPUs).
        // It polls MPI until it hands progress over to the engine; it is
        // counted among the rank's pollers (which the engine keeps out of
        // the way of) only from its second poll on: most replies come
        // within the first, whose thread holds the progress lock anyway,
        // and a count taken and given back is two read-modify-writes, one
        // of them between the reply and the caller's return.
        let mut polling = match &self.shared {
            Some(s) => self.spin && s.may_poll(),
            None => false,
        };
        let mut counted = None;
        let window = match (polling, &self.shared) {
            (true, Some(s)) => s.poll_window(),
            _ => SPIN,
        };
        // Read at the first look at the clock (below), for the end of the
        // spin and for the deadline.
        let mut spin_until: Option<Instant> = None;
        let mut deadline: Option<Instant> = None;
        let mut handed_over = false;
        // Once asleep: counted among the threads the engine receives for
        // (it keeps its own sleeps short meanwhile).
        let mut _expecting = None;
        // With `Tuning::adaptive`, a waiter that does not poll MPI waits as
        // its thread's recent gaps say (pausing, or yielding while the
        // process has more awake threads than CPUs), counted as awake.
        let adaptive = !polling
            && on_core.is_none()
            && self.shared.as_ref().is_some_and(|s| s.tuning().adaptive);
        if adaptive {
            let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
            return WAIT_GAPS.with(|gaps| {
                let mut w = AdaptiveSpin::counted(SPIN, gaps);
                while w.spin() {
                    if self.slot().is_done() {
                        w.found();
                        return self.finish();
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                }
                let r = self.park_until(deadline, &mut waker);
                w.found();
                r
            });
        }
        let mut polls = 0u32;
        loop {
            if self.slot().is_done() {
                return self.finish();
            }
            // Poll MPI ourselves if we can: the reply is then received and
            // completed on this thread, with no engine in between.
            if let (true, Some(s)) = (polling, &self.shared) {
                s.progress_for(Some(self.slot().done_flag()));
                if let Some(r) = crate::progress::take_own(self.seq) {
                    self.settled = true;
                    self.keep_world = on_core.is_none();
                    return Self::result(r);
                }
                if counted.is_none() {
                    counted = s.polling();
                }
            }
            if self.slot().is_done() {
                return self.finish();
            }
            // The clock is read every 16th poll while spinning.
            polls = polls.wrapping_add(1);
            if polling && polls % 16 != 0 {
                continue;
            }
            let now = Instant::now();
            let spin_until = *spin_until.get_or_insert_with(|| {
                deadline = timeout.and_then(|t| now.checked_add(t));
                now + window
            });
            if now < spin_until && deadline.is_none_or(|d| now < d) {
                let served = on_core.is_some() && manycore_rt::poll_once() > 0;
                // Polling for a reply that only the peer's progress thread
                // produces, we keep the CPU, as MPI's own blocking calls
                // do, for a while; then we yield between looks: the peer's
                // thread may share our CPU, and would otherwise run only
                // when the scheduler preempts us (a slice, milliseconds,
                // every call). Not polling, we yield it to whoever
                // produces the reply.
                let polled_long = polling && now + window >= spin_until + POLL_YIELD;
                if (!polling || polled_long) && !served {
                    std::thread::yield_now();
                }
                continue;
            }
            if !handed_over {
                // From now on the engine progresses for us.
                handed_over = true;
                polling = false;
                if counted.take().is_some() {
                    if let Some(s) = &self.shared {
                        s.hand_over();
                    }
                }
                _expecting = self.shared.as_ref().map(|s| s.expect());
            }
            let park = match deadline {
                Some(d) => {
                    if now >= d {
                        return if self.slot().is_done() {
                            self.finish()
                        } else {
                            Err(CallError::Timeout)
                        };
                    }
                    (d - now).min(MAX_PARK)
                }
                None => MAX_PARK,
            };
            if on_core.is_some() {
                if manycore_rt::poll_once() == 0 && !self.slot().register(&waker()) {
                    manycore_rt::park_current(park);
                }
            } else if !self.slot().register(&waker()) {
                std::thread::park_timeout(park);
            }
        }
    }

    /// Parks this (non-core) thread until the reply is in or `deadline`.
    fn park_until(
        &self,
        deadline: Option<Instant>,
        waker: &mut impl FnMut() -> Waker,
    ) -> Result<T, CallError> {
        loop {
            if self.slot().is_done() {
                return self.finish();
            }
            let park = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(CallError::Timeout);
                    }
                    (d - now).min(MAX_PARK)
                }
                None => MAX_PARK,
            };
            if !self.slot().register(&waker()) {
                std::thread::park_timeout(park);
            }
        }
    }

    fn finish(&self) -> Result<T, CallError> {
        match self.slot().take() {
            None => Err(CallError::Consumed),
            Some(r) => Self::result(r),
        }
    }

    /// The value a reply carries (the reply frame or the failure).
    fn result(r: Result<Vec<u8>, CallError>) -> Result<T, CallError> {
        match r {
            Err(e) => Err(e),
            Ok(frame) => {
                let r = decode(&frame[Header::LEN.min(frame.len())..]);
                crate::header::recycle(frame);
                Ok(r?)
            }
        }
    }
}

impl<T: DeserializeOwned> Future for Pending<T> {
    type Output = Result<T, CallError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.slot().register(cx.waker()) {
            Poll::Ready(self.finish())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use manycore_rt::Runtime;

    fn world() -> Arc<Shared> {
        let rt = Runtime::builder().cores(1).build().unwrap();
        let registry: &'static Registry =
            Box::leak(Box::new(Registry::from_entries(vec![]).unwrap()));
        Arc::new(Shared::new(0, 1, rt, registry, None, false))
    }

    #[test]
    fn a_finalizing_thread_keeps_nothing_of_its_world() {
        let (mine, other) = (world(), world());
        WORLD.with(|w| *w.borrow_mut() = Some(mine.clone()));
        assert_eq!(Arc::strong_count(&mine), 2);
        // Another world's release leaves this one's handle kept.
        release_kept(&other);
        assert_eq!(Arc::strong_count(&mine), 2);
        release_kept(&mine);
        assert_eq!(Arc::strong_count(&mine), 1);
        mine.rt.shutdown();
        other.rt.shutdown();
    }
}
