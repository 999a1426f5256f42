//! Synchronisation primitives for manycore, and the facade through which its
//! lock-free protocols reach atomics.
//!
//! * [`atomic`], [`cell`], [`thread`], [`Arc`], [`Mutex`]: a facade that is
//!   `std` normally and `loom` under `--cfg loom` (the pattern of tokio's
//!   `loom/` module), so every lock-free protocol written against it can be
//!   model-checked.
//! * [`CachePadded`]: keeps a value on its own cache line(s).
//! * [`Backoff`], [`SpinBudget`] and [`AdaptiveSpin`]: bounded spinning, the
//!   last adapting to the gaps it sees and to how many threads are awake
//!   ([`Awake`]). Nothing in manycore spins
//!   without a bound: on a virtual machine the partner may not be running.
//! * [`EventCount`]: a futex-backed doorbell (Folly's EventCount protocol) with a
//!   process-private and a process-shared flavour ([`SharedEventCount`]).
//! * [`cpu`]: the process's original CPU set, read once before `main`, and
//!   thread pinning.
//!
//! # Who uses std's atomics directly
//!
//! The facade is a convention, not a wall. The manycore-ring and manycore-sock
//! libraries take every atomic they use from [`atomic`], including the words of
//! manycore-sock's shared-memory layouts: outside loom those are std's
//! atomics on memory that another process maps (lock-free, so they work
//! across processes). This crate names std's atomics directly only where
//! loom must not see them: the futex calls (never built under loom) and
//! [`unique_id`]. Code that no loom model covers
//! (process-wide settings and counters, tests, examples) may use std's
//! atomics directly; `grep -rn std::sync::atomic crates` lists it.
//!
//! # Example
//!
//! A doorbell between two threads (`examples/doorbell.rs` builds a
//! ping-pong of two mailboxes on it):
//!
//! ```
//! use manycore_sync::{EventCount, atomic::{AtomicBool, Ordering, fence}};
//! use std::sync::Arc;
//!
//! let ec = Arc::new(EventCount::new());
//! let flag = Arc::new(AtomicBool::new(false));
//! let (ec2, flag2) = (ec.clone(), flag.clone());
//! let t = std::thread::spawn(move || {
//!     flag2.store(true, Ordering::Relaxed);
//!     fence(Ordering::SeqCst); // publish, then look for sleepers
//!     ec2.notify_all_after_fence();
//! });
//! loop {
//!     if flag.load(Ordering::Relaxed) { break; }
//!     let key = ec.prepare_wait(); // announce, fence inside
//!     if flag.load(Ordering::Relaxed) { ec.cancel_wait(); break; }
//!     ec.wait(key);
//! }
//! t.join().unwrap();
//! ```

#![warn(missing_docs)]

mod adaptive_spin;
mod backoff;
mod cache_padded;
pub mod cpu;
mod deadline;
mod event_count;
mod raw;

#[cfg(all(test, loom))]
mod loom_tests;

pub use adaptive_spin::{AdaptiveSpin, AsleepGuard, Awake, AwakeGuard, GapPredictor};
pub use backoff::{Backoff, SpinBudget};
pub use cache_padded::CachePadded;
pub use deadline::deadline_in;
pub use event_count::{EventCount, Private, Shared, SharedEventCount, Sharing, WaitKey};

/// Atomics: `std::sync::atomic` normally, `loom::sync::atomic` under `--cfg loom`.
pub mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::{
        fence, AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8,
        AtomicUsize,
    };
    pub use std::sync::atomic::Ordering;
    #[cfg(not(loom))]
    pub use std::sync::atomic::{
        fence, AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8,
        AtomicUsize,
    };

    /// A hint to the CPU (or to loom's scheduler) that this thread is spinning.
    #[inline]
    pub fn spin_loop() {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        std::hint::spin_loop();
    }
}

/// Threads: `std::thread` normally, `loom::thread` under `--cfg loom`.
pub mod thread {
    #[cfg(loom)]
    pub use loom::thread::{current, spawn, yield_now, JoinHandle, Thread};
    #[cfg(not(loom))]
    pub use std::thread::{current, spawn, yield_now, JoinHandle, Thread};
}

#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so that loom can
/// check every access for data races.
pub mod cell {
    #[cfg(loom)]
    pub use loom::cell::UnsafeCell;

    /// `std::cell::UnsafeCell` behind loom's `with`/`with_mut` API.
    #[cfg(not(loom))]
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        /// Wraps a value.
        #[inline]
        pub const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }
        /// Unwraps the value.
        #[inline]
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    #[cfg(not(loom))]
    impl<T: ?Sized> UnsafeCell<T> {
        /// Gives `f` a shared raw pointer to the contents.
        #[inline]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        /// Gives `f` a mutable raw pointer to the contents.
        #[inline]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// A process-wide unique, increasing number (never 0). Not part of any
/// protocol, so it uses std's atomics even under loom.
pub fn unique_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
