//! How a thread that is not a core (an "outside" thread: `main`, a std
//! thread) waits for the runtime: its waker, which notes the wake and
//! unparks it; its prediction of how long its waits take; its place in
//! the count of awake threads; and `block_on`. Both `Invocation::wait`
//! and `block_on` spin first, as the adaptive idle policy says (counted
//! as awake while they spin, and while the thread has invocations in
//! flight; see "Idle policies" in the crate's README), and then park,
//! uncounted.

use manycore_sync::{AdaptiveSpin, Awake, GapPredictor};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// An outside thread's waker: notes the wake (for a spinning waiter)
/// and unparks the thread (for a parked one).
struct ThreadWake {
    thread: std::thread::Thread,
    /// Set (SeqCst) by every wake; cleared by `block_on` before each poll.
    woken: AtomicBool,
}
impl Wake for ThreadWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// The longest an outside thread spins before it parks, whatever the
/// policy's budget.
pub(crate) const SPIN_MAX: Duration = Duration::from_millis(1);

/// How long `block_on` on an outside thread spins at most before it
/// parks (it knows no runtime's policy: the default `Hybrid`'s).
const BLOCK_ON_SPIN: Duration = Duration::from_micros(50);

/// An outside thread's place in the count of awake threads
/// (`manycore_sync::Awake`): it is counted while it has invocations in
/// flight (made on it and not dropped yet, wherever they are dropped) and
/// is not parked, whether it spins, waits or runs code of its own
/// meanwhile. A thread that keeps calls in flight while it prepares the
/// next ones needs a CPU as much as a core does; counted only while it
/// spins, it would let idle cores pause in place on the CPUs it needs.
/// The count only chooses between pausing, yielding and sleeping (never
/// whether a wake-up is delivered), so the moments in which two racing
/// updates leave it off by one cost speed, not correctness.
pub(crate) struct Presence {
    /// `calls << 1 | parked`: the invocations made on the thread and not
    /// dropped yet, and whether the thread is parked (or has exited).
    state: AtomicUsize,
}

const PARKED: usize = 1;
const CALL: usize = 2;

impl Presence {
    fn counted(state: usize) -> bool {
        state >= CALL && state & PARKED == 0
    }
    /// Counted with more than one call in flight: whatever call a core
    /// answers, the thread still waits for another (`outside_waiting`).
    fn pipelined(state: usize) -> bool {
        state >= 2 * CALL && state & PARKED == 0
    }
    /// Applies `f` to the state; moves the thread in or out of the count
    /// if that changed whether it is counted.
    fn update(&self, f: impl Fn(usize) -> usize) {
        let old = self
            .state
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| Some(f(s)))
            .unwrap_or_else(|s| s);
        match (Self::counted(old), Self::counted(f(old))) {
            // The guards are forgotten: the count is moved by hand. A
            // presence's transitions alternate in the order of its RMWs,
            // so its moves cancel out in pairs; two racing updaters (the
            // thread and a drop elsewhere) may apply theirs in the other
            // order, a moment off by one.
            (false, true) => std::mem::forget(Awake::enter()),
            (true, false) => std::mem::forget(Awake::leave()),
            _ => {}
        }
        match (Self::pipelined(old), Self::pipelined(f(old))) {
            (false, true) => {
                WAITING.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                WAITING.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    /// An invocation made on this presence's thread was dropped.
    pub(crate) fn call_ended(&self) {
        self.update(|s| s.saturating_sub(CALL) | (s & PARKED));
    }
}

/// Outside threads not parked with more than one call in flight (a
/// pipelining client): the process-wide hint an idle core reads
/// to linger rather than sleep (`outside_waiting`). Two racing updates may
/// leave it off by one for a moment, like `Awake`: a hint, never a rule of
/// the wake-up protocol.
static WAITING: AtomicIsize = AtomicIsize::new(0);

/// Whether some outside thread is not parked and has more than one call
/// in flight: its next call is likely soon, and a core that sleeps now makes that call
/// pay a wake-up.
#[inline]
pub(crate) fn outside_waiting() -> bool {
    WAITING.load(Ordering::Relaxed) > 0
}

/// Cores lingering for outside threads: at most one per waiting thread.
static LINGERING: AtomicIsize = AtomicIsize::new(0);

/// A core's lingering place for an idle stretch (README.md, "Idle
/// policies"): taken when the stretch first lingers, if fewer cores linger
/// than outside threads wait, and given back by `end` (work came, or the
/// core slept) or on drop.
#[derive(Default)]
pub(crate) struct Linger(Option<std::time::Instant>);

impl Linger {
    /// Whether the idle stretch goes on lingering: an outside thread waits,
    /// this core holds a place (or takes one now), and it has lingered for
    /// less than `max`. The place is kept when `max` has passed, until `end`.
    pub(crate) fn go_on(&mut self, max: std::time::Duration) -> bool {
        if !outside_waiting() || (self.0.is_none() && !Self::take_place()) {
            return false;
        }
        let now = std::time::Instant::now();
        now.duration_since(*self.0.get_or_insert(now)) < max
    }

    /// Gives the place back, if this core holds one.
    pub(crate) fn end(&mut self) {
        if self.0.take().is_some() {
            LINGERING.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Takes a place if fewer cores linger than outside threads wait.
    fn take_place() -> bool {
        let w = WAITING.load(Ordering::Relaxed);
        LINGERING
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                (l < w).then_some(l + 1)
            })
            .is_ok()
    }
}

impl Drop for Linger {
    fn drop(&mut self) {
        self.end();
    }
}

/// This thread's presence, shared with the invocations made on it.
struct ThreadPresence(Arc<Presence>);

impl Drop for ThreadPresence {
    /// An exited thread is not counted, whatever it has in flight.
    fn drop(&mut self) {
        self.0.update(|s| s | PARKED);
    }
}

thread_local! {
    static PRESENCE: ThreadPresence = ThreadPresence(Arc::new(Presence {
        state: AtomicUsize::new(0),
    }));
    static THREAD_WAKE: Arc<ThreadWake> = Arc::new(ThreadWake {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    static THREAD_WAKER: Waker = THREAD_WAKE.with(|t| Waker::from(t.clone()));
    /// An outside thread's prediction of how long its waits take.
    static OUTSIDE_GAPS: GapPredictor = GapPredictor::new(Duration::from_micros(50));
}

/// An invocation is made on this outside thread: the thread is counted
/// as awake from its first one in flight. Returns the presence that the
/// invocation's drop hands back (`Presence::call_ended`).
pub(crate) fn call_begun() -> Option<Arc<Presence>> {
    PRESENCE
        .try_with(|p| {
            p.0.update(|s| s + CALL);
            p.0.clone()
        })
        .ok()
}

/// Whether this thread is counted as awake by its calls in flight (a wait
/// then need not count itself).
fn present() -> bool {
    PRESENCE
        .try_with(|p| p.0.state.load(Ordering::Relaxed) >= CALL)
        .unwrap_or(false)
}

/// The spin budget of a wait on this outside thread: counted as awake
/// while it spins, unless the thread's calls in flight count it already.
pub(crate) fn spin_budget(max: Duration, gaps: &GapPredictor) -> AdaptiveSpin<'_> {
    if present() {
        AdaptiveSpin::new(max, gaps)
    } else {
        AdaptiveSpin::counted(max, gaps)
    }
}

/// Runs `park` (a blocking park of this thread) uncounted.
pub(crate) fn parked<R>(park: impl FnOnce() -> R) -> R {
    let p = PRESENCE.try_with(|p| p.0.clone()).ok();
    if let Some(p) = &p {
        p.update(|s| s | PARKED);
    }
    let r = park();
    if let Some(p) = &p {
        p.update(|s| s & !PARKED);
    }
    r
}

/// A waker that unparks the calling thread (one per thread, made once).
pub(crate) fn thread_waker() -> Waker {
    THREAD_WAKER.with(Waker::clone)
}

/// `block_on` on an outside thread: poll; when pending, spin as the
/// adaptive policy says (counted as awake) until the waker fires, then
/// park.
pub(crate) fn block_on_thread<F: Future>(mut fut: Pin<&mut F>) -> F::Output {
    let waker = thread_waker();
    let mut cx = Context::from_waker(&waker);
    THREAD_WAKE.with(|t| {
        OUTSIDE_GAPS.with(|gaps| {
            let mut budget = spin_budget(BLOCK_ON_SPIN, gaps);
            loop {
                t.woken.store(false, Ordering::SeqCst);
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
                loop {
                    if t.woken.load(Ordering::SeqCst) {
                        budget.found();
                        break;
                    }
                    if !budget.spin() {
                        // A wake since the flag was cleared left an unpark
                        // token: `park` then returns at once.
                        parked(std::thread::park);
                        budget.slept();
                    }
                }
            }
        })
    })
}

/// Runs `f` with this thread's waker.
pub(crate) fn with_thread_waker<R>(f: impl FnOnce(&Waker) -> R) -> R {
    THREAD_WAKER.with(f)
}

/// Runs `f` with this thread's gap predictor.
pub(crate) fn with_gaps<R>(f: impl FnOnce(&GapPredictor) -> R) -> R {
    OUTSIDE_GAPS.with(f)
}
