//! Timers: a deadline-ordered queue per core (a binary heap of deadlines and
//! wakers, fired at every scheduling point and bounding the core's sleep),
//! plus one fallback thread for timers registered by threads that are not
//! cores. They drive invocation timeouts and [`sleep`].
//!
//! A heap rather than a hashed wheel: with the few hundred live timers a core
//! holds, `O(log n)` insert and pop cost less than a wheel's cascade, and the
//! earliest deadline, which bounds the sleep, is always at hand.

use crate::core_loop::with_local;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

type Entry = crate::keyed::Keyed<Instant, Waker>;

/// A core's timers.
#[derive(Default)]
pub(crate) struct TimerQueue {
    heap: RefCell<BinaryHeap<Reverse<Entry>>>,
    seq: std::cell::Cell<u64>,
    /// Earliest deadline (None if no timer), read on every poll without borrowing.
    earliest: std::cell::Cell<Option<Instant>>,
}

impl TimerQueue {
    pub(crate) fn add(&self, at: Instant, waker: Waker) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        let mut h = self.heap.borrow_mut();
        h.push(Reverse(Entry {
            key: at,
            seq,
            val: waker,
        }));
        self.earliest.set(h.peek().map(|e| e.0.key));
    }

    /// The earliest deadline, if any.
    #[inline]
    pub(crate) fn next(&self) -> Option<Instant> {
        self.earliest.get()
    }

    /// Wakes every timer due by now; returns how many fired.
    #[inline]
    pub(crate) fn fire(&self) -> usize {
        match self.earliest.get() {
            None => 0,
            Some(_) => self.fire_due(),
        }
    }

    #[cold]
    fn fire_due(&self) -> usize {
        let now = Instant::now();
        if self.earliest.get().is_some_and(|e| e > now) {
            return 0;
        }
        let mut n = 0;
        loop {
            let due = {
                let mut h = self.heap.borrow_mut();
                let d = match h.peek() {
                    Some(e) if e.0.key <= now => h.pop().map(|e| e.0.val),
                    _ => None,
                };
                self.earliest.set(h.peek().map(|e| e.0.key));
                d
            };
            match due {
                Some(w) => {
                    n += 1;
                    w.wake();
                }
                None => return n,
            }
        }
    }

    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *self.heap.borrow_mut());
        self.earliest.set(None);
        drop(all);
    }
}

/// The fallback timer thread for outside threads.
struct Global {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    cv: Condvar,
}

fn global() -> &'static Global {
    static G: OnceLock<&'static Global> = OnceLock::new();
    G.get_or_init(|| {
        let g: &'static Global = Box::leak(Box::new(Global {
            heap: Mutex::new((BinaryHeap::new(), 0)),
            cv: Condvar::new(),
        }));
        let _ = std::thread::Builder::new()
            .name("manycore-timer".into())
            .spawn(move || loop {
                let mut due = Vec::new();
                {
                    let mut h = g.heap.lock().unwrap_or_else(|e| e.into_inner());
                    let now = Instant::now();
                    while h.0.peek().is_some_and(|e| e.0.key <= now) {
                        if let Some(e) = h.0.pop() {
                            due.push(e.0.val);
                        }
                    }
                    if due.is_empty() {
                        let wait = h.0.peek().map(|e| e.0.key.saturating_duration_since(now));
                        match wait {
                            Some(d) => drop(g.cv.wait_timeout(h, d)),
                            None => drop(g.cv.wait(h)),
                        }
                    }
                }
                for w in due {
                    w.wake();
                }
            });
        g
    })
}

/// Arranges for `waker` to be woken at `at`: on the current core's timer
/// queue, or on the fallback timer thread off the cores.
pub(crate) fn wake_at(at: Instant, waker: Waker) {
    let leftover = with_local(|l| match l {
        Some(l) => {
            l.timers.add(at, waker);
            None
        }
        None => Some(waker),
    });
    if let Some(waker) = leftover {
        let g = global();
        let mut h = g.heap.lock().unwrap_or_else(|e| e.into_inner());
        let seq = h.1;
        h.1 += 1;
        h.0.push(Reverse(Entry {
            key: at,
            seq,
            val: waker,
        }));
        drop(h);
        g.cv.notify_one();
    }
}

/// A future that completes at a deadline: `manycore::sleep(d).await`.
/// On a core it uses the core's timers (the core sleeps until then if it has
/// nothing else to do); elsewhere the fallback timer thread.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
/// let t0 = Instant::now();
/// rt.core(0).spawn_async(async { manycore_rt::sleep(Duration::from_millis(5)).await }).wait().unwrap();
/// assert!(t0.elapsed() >= Duration::from_millis(5));
/// ```
///
/// Every duration is accepted: `Duration::ZERO` is ready at once, and a
/// duration too long to add to the clock ends at a deadline so far away
/// (about a century) that it never comes.
pub fn sleep(d: Duration) -> Sleep {
    Sleep {
        at: deadline_in(d),
        armed: false,
    }
}

/// A future that completes at `at` (at once if `at` has passed).
pub fn sleep_until(at: Instant) -> Sleep {
    Sleep { at, armed: false }
}

/// The future returned by [`sleep`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    at: Instant,
    armed: bool,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        if !self.armed {
            self.armed = true;
            wake_at(self.at, cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The deadline `d` from now, saturating (`manycore_sync::deadline_in`).
pub(crate) use manycore_sync::deadline_in;
