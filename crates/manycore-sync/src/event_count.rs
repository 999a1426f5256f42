//! `EventCount`: a doorbell on a futex, after Folly's `EventCount` (and the
//! eventcount of Vyukov): waiters announce themselves, re-check their
//! condition, and only then sleep; notifiers publish, fence, and pay for a
//! system call only when somebody has announced.
//!
//! # Protocol
//!
//! ```text
//! waiter                                   notifier
//! key = prepare_wait()                     publish the event (any store)
//!   waiters += 1; fence(SeqCst);           fence(SeqCst)
//!   key = epoch                            if waiters > 0:
//! if condition holds: cancel_wait()            epoch += 1; futex_wake(epoch)
//! else: wait(key)
//!   futex_wait(epoch, key) while epoch == key; waiters -= 1
//! ```
//!
//! The two SeqCst fences order "announce, then re-check" against "publish,
//! then look": either the notifier sees the announcement (and bumps the epoch,
//! so the futex wait cannot sleep on the old key), or the waiter's re-check
//! sees the event. No wakeup is lost; the loom models in `loom_tests.rs`
//! check it.
//!
//! # Sharing
//!
//! `EventCount<Private>` (the default) uses `FUTEX_PRIVATE_FLAG`.
//! [`SharedEventCount`] (`EventCount<Shared>`) omits it, so it works in memory
//! shared between processes. It is `#[repr(C)]`, 8 bytes, and every bit
//! pattern is a valid value: a peer that scribbles on it can cause spurious or
//! missed wakeups, never undefined behaviour. Code that shares one with an
//! untrusted peer must therefore always wait with a timeout.

use crate::atomic::{fence, AtomicU32, Ordering};
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// Whether an [`EventCount`] is used by one process or several.
pub trait Sharing: Send + Sync + 'static + sealed::Sealed {
    /// True for process-private futexes.
    const PRIVATE: bool;
}
mod sealed {
    pub trait Sealed {}
}

/// Process-private sharing (the default).
#[derive(Debug)]
pub enum Private {}
/// Process-shared sharing: for memory mapped by several processes.
#[derive(Debug)]
pub enum Shared {}
impl sealed::Sealed for Private {}
impl sealed::Sealed for Shared {}
impl Sharing for Private {
    const PRIVATE: bool = true;
}
impl Sharing for Shared {
    const PRIVATE: bool = false;
}

/// An event count for memory shared between processes.
pub type SharedEventCount = EventCount<Shared>;

/// The epoch a waiter saw when it announced itself; pass it to `wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a prepared wait must be finished with wait, wait_timeout or cancel_wait"]
pub struct WaitKey(u32);

/// A futex doorbell: see the module docs for the protocol.
#[repr(C)]
pub struct EventCount<S: Sharing = Private> {
    /// The futex word. Bumped (`fetch_add`, Release) by a notifier that saw
    /// `waiters > 0` after its SeqCst fence; loaded with Acquire by a waiter
    /// when it takes its key (pairs with the bump: a key taken after a bump
    /// sees what was published before it) and before every sleep; the
    /// kernel compares it with the key in `FUTEX_WAIT`. Only equality with
    /// a key matters, so it may wrap.
    epoch: AtomicU32,
    /// Threads that announced a wait and have not finished it. Incremented
    /// (Relaxed) by `prepare_wait` before its SeqCst fence; decremented
    /// (Relaxed) by `cancel_wait`, `wait` and `wait_timeout`. Loaded
    /// (Relaxed) by notifiers after their own SeqCst fence, which pairs with
    /// the one in `prepare_wait`.
    waiters: AtomicU32,
    /// Under loom there is no futex: a mutex and condvar stand in for it.
    #[cfg(loom)]
    park: (crate::Mutex<()>, crate::Condvar),
    _sharing: PhantomData<S>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<EventCount<Shared>>() == 8);
#[cfg(not(loom))]
const _: () = assert!(std::mem::align_of::<EventCount<Shared>>() == 4);

impl<S: Sharing> Default for EventCount<S> {
    fn default() -> Self {
        Self::make()
    }
}

impl<S: Sharing> fmt::Debug for EventCount<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCount")
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .field("waiters", &self.waiters.load(Ordering::Relaxed))
            .field("private", &S::PRIVATE)
            .finish()
    }
}

impl EventCount<Private> {
    /// A new process-private event count with no waiters.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::make()
    }
    /// A new process-private event count with no waiters.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::make()
    }
}

impl EventCount<Shared> {
    /// A new process-shared event count with no waiters (to be moved into, or
    /// written over, shared memory: all-zero bytes are the same value).
    #[cfg(not(loom))]
    pub const fn new_shared() -> Self {
        Self::make()
    }
    /// A new process-shared event count with no waiters.
    #[cfg(loom)]
    pub fn new_shared() -> Self {
        Self::make()
    }
}

impl<S: Sharing> EventCount<S> {
    #[cfg(not(loom))]
    const fn make() -> Self {
        Self {
            epoch: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            _sharing: PhantomData,
        }
    }
    #[cfg(loom)]
    fn make() -> Self {
        Self {
            epoch: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            park: (crate::Mutex::new(()), crate::Condvar::new()),
            _sharing: PhantomData,
        }
    }

    /// Announces that the caller is about to wait. The caller must re-check its
    /// condition after this and then call exactly one of [`wait`](Self::wait),
    /// [`wait_timeout`](Self::wait_timeout) or [`cancel_wait`](Self::cancel_wait).
    #[inline]
    pub fn prepare_wait(&self) -> WaitKey {
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // SeqCst; pairs with the fence a notifier runs between publishing its
        // event and loading `waiters` (Dekker: one of us sees the other).
        fence(Ordering::SeqCst);
        // Acquire; pairs with the Release epoch bump in `notify`, so that a
        // key taken after a bump also sees the event published before it.
        WaitKey(self.epoch.load(Ordering::Acquire))
    }

    /// Withdraws an announcement made by [`prepare_wait`](Self::prepare_wait).
    #[inline]
    pub fn cancel_wait(&self) {
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// Sleeps until notified after `key` was taken (returns at once if that
    /// already happened).
    pub fn wait(&self, key: WaitKey) {
        while self.epoch.load(Ordering::Acquire) == key.0 {
            self.sleep(key.0, None);
        }
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// Like [`wait`](Self::wait) but gives up after `timeout`. Returns true if
    /// notified, false on timeout. Every `Duration` is accepted: one whose
    /// deadline an `Instant` cannot hold (`Duration::MAX`) waits as
    /// [`wait`](Self::wait) does.
    pub fn wait_timeout(&self, key: WaitKey, timeout: Duration) -> bool {
        let Some(deadline) = std::time::Instant::now().checked_add(timeout) else {
            self.wait(key);
            return true;
        };
        let mut notified = true;
        while self.epoch.load(Ordering::Acquire) == key.0 {
            let now = std::time::Instant::now();
            if now >= deadline {
                notified = false;
                break;
            }
            if !self.sleep(key.0, Some(deadline - now)) {
                notified = self.epoch.load(Ordering::Acquire) != key.0;
                break;
            }
        }
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        notified
    }

    /// Wakes one waiter, if any has announced. Runs its own SeqCst fence, so
    /// call it after publishing the event.
    #[inline]
    pub fn notify_one(&self) -> bool {
        fence(Ordering::SeqCst);
        self.notify_one_after_fence()
    }

    /// Wakes all waiters that have announced. Runs its own SeqCst fence.
    #[inline]
    pub fn notify_all(&self) -> bool {
        fence(Ordering::SeqCst);
        self.notify_all_after_fence()
    }

    /// [`notify_one`](Self::notify_one) for a caller that has already run
    /// `fence(SeqCst)` after publishing (one fence can serve several checks).
    #[inline]
    pub fn notify_one_after_fence(&self) -> bool {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.bump_and_wake(1);
        true
    }

    /// [`notify_all`](Self::notify_all) for a caller that has already fenced.
    #[inline]
    pub fn notify_all_after_fence(&self) -> bool {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.bump_and_wake(i32::MAX);
        true
    }

    /// True if somebody has announced a wait (a hint; load it after a fence).
    #[inline]
    pub fn has_waiters(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) != 0
    }

    #[cold]
    fn bump_and_wake(&self, n: i32) {
        // Release; pairs with the Acquire epoch loads of waiters.
        self.epoch.fetch_add(1, Ordering::Release);
        self.wake(n);
    }

    #[cfg(not(loom))]
    fn sleep(&self, key: u32, timeout: Option<Duration>) -> bool {
        crate::raw::futex_wait(&self.epoch, key, timeout, S::PRIVATE)
    }
    #[cfg(not(loom))]
    fn wake(&self, n: i32) {
        crate::raw::futex_wake(&self.epoch, n, S::PRIVATE);
    }

    // Under loom there is no futex: a mutex and condvar stand in for it. A
    // timed sleep is modelled as "may time out at once", which is allowed.
    #[cfg(loom)]
    fn sleep(&self, key: u32, timeout: Option<Duration>) -> bool {
        if timeout.is_some() {
            return false;
        }
        let mut g = self.park.0.lock().unwrap();
        while self.epoch.load(Ordering::Acquire) == key {
            g = self.park.1.wait(g).unwrap();
        }
        true
    }
    #[cfg(loom)]
    fn wake(&self, _n: i32) {
        drop(self.park.0.lock().unwrap());
        self.park.1.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn notify_without_waiters_is_free() {
        let ec = EventCount::new();
        assert!(!ec.notify_one());
        assert!(!ec.has_waiters());
    }

    #[test]
    fn wait_returns_after_notify() {
        for _ in 0..200 {
            let ec = Arc::new(EventCount::new());
            let flag = Arc::new(AtomicBool::new(false));
            let (e2, f2) = (ec.clone(), flag.clone());
            let t = std::thread::spawn(move || {
                f2.store(true, Ordering::Relaxed);
                e2.notify_all();
            });
            loop {
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                let k = ec.prepare_wait();
                if flag.load(Ordering::Relaxed) {
                    ec.cancel_wait();
                    break;
                }
                ec.wait(k);
            }
            t.join().unwrap();
            assert!(!ec.has_waiters());
        }
    }

    #[test]
    fn wait_timeout_times_out() {
        let ec = SharedEventCount::new_shared();
        let k = ec.prepare_wait();
        let t = std::time::Instant::now();
        assert!(!ec.wait_timeout(k, Duration::from_millis(20)));
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert!(!ec.has_waiters());
    }

    #[test]
    fn stale_key_returns_at_once() {
        let ec = EventCount::new();
        let k = ec.prepare_wait();
        let k2 = ec.prepare_wait();
        assert!(ec.notify_all());
        ec.wait(k);
        assert!(ec.wait_timeout(k2, Duration::from_secs(10)));
    }

    #[test]
    fn wait_timeout_zero_returns_at_once() {
        let ec = EventCount::new();
        let k = ec.prepare_wait();
        assert!(!ec.wait_timeout(k, Duration::ZERO));
        assert!(!ec.has_waiters());
    }

    #[test]
    fn wait_timeout_max_waits_for_the_notify() {
        let ec = Arc::new(EventCount::new());
        let k = ec.prepare_wait();
        let e2 = ec.clone();
        let t = std::thread::spawn(move || e2.notify_all());
        assert!(ec.wait_timeout(k, Duration::MAX));
        t.join().unwrap();
        assert!(!ec.has_waiters());
        let k = ec.prepare_wait();
        ec.notify_one();
        assert!(ec.wait_timeout(k, Duration::MAX));
    }
}
