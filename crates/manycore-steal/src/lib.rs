//! manycore fork-join: lazy on-stack execution with stealing on demand, after
//! Leberecht, *The MuSE System: A Flexible Combination of On-Stack Execution
//! and Work-Stealing* (`shared/papers/muse-on-stack-work-stealing.txt`).
//!
//! MuSE calls every subgraph on the stack like a sequential program and pays
//! for parallelism (a heap context, a queue, a migration) only when an idle
//! node actually takes work; a bound, `MAX_SEQUENTIAL`, makes sure the
//! scheduler still polls its messages during long sequential runs. Here:
//!
//! * [`join`]`(a, b)` writes `b` into a frame on its own stack and links it
//!   into the thread's *latent list* (plain loads and stores: no atomic
//!   read-modify-write, no fence, no allocation), runs `a`, and then runs `b`
//!   inline if it is still latent: the sequential program plus a few stores.
//! * An idle worker *announces demand* (a bit in a shared word and `HUNGRY`
//!   in its mailbox) and sleeps on its doorbell.
//! * Every [`max_sequential`] joins a busy worker's *heartbeat* polls its
//!   messages and, if a worker is hungry, *promotes* its oldest latent frame
//!   (the biggest piece of work, as in Cilk and MuSE) into that thief's
//!   mailbox and rings its doorbell.
//! * The owner of a promoted frame, back at its join, takes the frame back if
//!   the thief has not started it yet, otherwise it waits for it while running
//!   work handed to it (the thief serves the waiting owner's demand in turn:
//!   leapfrogging) and polling messages; every spin is bounded.
//!
//! `README.md` beside this file describes the protocol; `tests/loom.rs`
//! model-checks it.
//!
//! # Example
//!
//! ```
//! use manycore_steal::{join, ThreadPool};
//!
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//!
//! let pool = ThreadPool::new(2);
//! assert_eq!(pool.install(|| fib(20)), 6765);
//! // Outside a pool or runtime, join simply runs sequentially.
//! assert_eq!(fib(10), 55);
//! ```
//!
//! The context-passing form saves the thread-local lookup on every join:
//!
//! ```
//! use manycore_steal::{with_ctx, Ctx};
//!
//! fn fib(s: &Ctx<'_>, n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = s.join(|s| fib(s, n - 1), |s| fib(s, n - 2));
//!     a + b
//! }
//! assert_eq!(with_ctx(|s| fib(s, 20)), 6765);
//! ```

mod pool;
#[doc(hidden)]
pub mod probe;
mod raw;
#[cfg(not(loom))]
mod rt;
mod scope;
mod thread_pool;

pub use pool::{
    max_poll_gap, max_sequential, measure_poll_gaps, set_max_sequential, StealStats,
    DEFAULT_MAX_SEQUENTIAL,
};
#[cfg(not(loom))]
pub use rt::{attach, steal_stats, StealExt};
pub use scope::{scope, Scope};
pub use thread_pool::{ThreadPool, ThreadPoolBuilder};

use raw::Local;

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// Rayon's semantics: both closures always run; if either panics, the panic
/// propagates after both have finished (`a`'s wins if both panic). On a
/// worker (a manycore core, or inside [`ThreadPool::install`]) `b` is latent
/// work that an idle worker may steal; anywhere else the two run one after
/// the other on the calling thread.
#[inline]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    raw::with_local(|l| raw::join(l, move |_: &Local| a(), move |_: &Local| b()))
}

/// The context-passing form of [`join`] (as in `chili`): a handle on the
/// calling worker's latent list, passed down the recursion so that each join
/// skips the thread-local lookup. Not `Send`: it belongs to one thread.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    local: &'a Local,
}

impl Ctx<'_> {
    /// [`join`], passing each closure the context of the worker that runs it.
    #[inline]
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Ctx<'_>) -> RA + Send,
        B: FnOnce(&Ctx<'_>) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        raw::join(
            self.local,
            move |l: &Local| a(&Ctx { local: l }),
            move |l: &Local| b(&Ctx { local: l }),
        )
    }
}

/// Runs `f` with the calling thread's [`Ctx`].
#[inline]
pub fn with_ctx<R>(f: impl FnOnce(&Ctx<'_>) -> R) -> R {
    raw::with_local(|l| f(&Ctx { local: l }))
}

/// Called at a thread's first heartbeat when it is no pool's worker yet: if it
/// is a core of an attached runtime, bind it.
fn attach_current_thread() {
    #[cfg(not(loom))]
    rt::attach_current_thread();
}
