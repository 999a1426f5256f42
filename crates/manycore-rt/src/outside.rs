//! How a thread that is not a core (an "outside" thread: `main`, a std
//! thread) waits for the runtime: its waker, which notes the wake and
//! unparks it; its prediction of how long its waits take; and `block_on`.
//! Both `Invocation::wait` and `block_on` spin first, as the adaptive
//! idle policy says (counted as awake while they spin; see "Idle
//! policies" in the crate's README), and then park.

use manycore_sync::{AdaptiveSpin, GapPredictor};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
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

thread_local! {
    static THREAD_WAKE: Arc<ThreadWake> = Arc::new(ThreadWake {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    static THREAD_WAKER: Waker = THREAD_WAKE.with(|t| Waker::from(t.clone()));
    /// An outside thread's prediction of how long its waits take.
    static OUTSIDE_GAPS: GapPredictor = GapPredictor::new(Duration::from_micros(50));
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
            let mut budget = AdaptiveSpin::counted(BLOCK_ON_SPIN, gaps);
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
                        std::thread::park();
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
