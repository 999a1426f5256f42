//! manycore fork-join: lazy on-stack execution with stealing on demand, after
//! Markus Leberecht, *The MuSE System: A Flexible Combination of On-Stack
//! Execution and Work-Stealing*.
//!
//! MuSE calls every subgraph on the stack like a sequential program and pays
//! for parallelism (a heap context, a queue, a migration) only when an idle
//! node actually takes work; a bound, `MAX_SEQUENTIAL`, makes sure the
//! scheduler still polls its messages during long sequential runs. Here:
//!
//! * [`join`]`(a, b)` in the top four levels of a join tree (and at every
//!   tick) writes `b` into a frame on its own stack and links it into the
//!   thread's *latent list*, a chain of stack frames from the innermost
//!   recorded join outwards (plain loads and stores: no atomic
//!   read-modify-write, no fence, no allocation), runs `a`, and then runs `b`
//!   inline if it is still latent; deeper joins are plain calls. Either way,
//!   while nobody steals, it is the sequential program plus a few
//!   instructions. [`Ctx::join`] does the same with the depth carried by
//!   value.
//! * On a manycore runtime ([`attach`], [`StealExt::install`]) the workers are
//!   the runtime's cores; [`ThreadPool`] provides plain threads instead, and
//!   a global pool (started on first use) takes the work of every other
//!   thread, which blocks meanwhile, as in rayon-core.
//! * An idle worker *announces demand* (a bit in a shared word and `HUNGRY`
//!   in its mailbox) and sleeps on its doorbell.
//! * Every so many joins (a *tick*; eight per [`HEARTBEAT_PERIOD`], or
//!   every fixed [`max_sequential`] joins) a busy worker looks at the demand
//!   word and, if a worker is hungry, *promotes* its oldest latent frame (the
//!   biggest piece of work, as in Cilk and MuSE) into that thief's mailbox
//!   and rings its doorbell; between ticks, a recorded join serves demand at
//!   once while the worker is *eager*. Every few ticks the *heartbeat* polls
//!   the worker's messages.
//! * A worker of a [`ThreadPool`] that has waited for work for a while
//!   *kicks* a busy one (a real-time signal, at most every few hundred
//!   microseconds, backing off to 10 ms): its handler promotes latent
//!   frames as a tick would, so that work also leaves a worker that runs a
//!   long loop or blocks inside a join without joining again.
//!   `MANYCORE_KICK=0` turns kicks off.
//! * The owner of a promoted frame, back at its join, takes the frame back if
//!   the thief has not started it yet, otherwise it waits for it while running
//!   work handed to it (the thief serves the waiting owner's demand in turn:
//!   leapfrogging) and polling messages; every spin is bounded.
//! * rayon-core's API: [`join_context`], [`scope`] and [`scope_fifo`] (whose
//!   spawns are stealable as soon as they are spawned, and run inline on
//!   the scope's owner when nobody takes them), [`in_place_scope`],
//!   [`spawn`], [`broadcast`], [`current_num_threads`],
//!   [`current_thread_index`], [`yield_now`]; `install` takes closures that
//!   borrow. The `rayon-core` crate of this workspace re-exports it under
//!   rayon-core's names, so that the `rayon` crate runs on it.
//! * [`ThreadPool::stats`] and [`steal_stats`] count how much work moved
//!   between workers ([`StealStats`]).
//!
//! `src/README.md` describes the protocol, its invariants and why it is
//! correct; `src/loom_tests.rs` model-checks it.
//!
//! # Features
//!
//! * `internals` (off by default): counters and hooks for benches and dev
//!   probes (`probe`, `measure_poll_gaps`, `max_poll_gap`, `current_stats`,
//!   `LATENT_WINDOW`). Not a stable API.
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
//! // Outside a pool or runtime, joins run on the global pool.
//! assert_eq!(fib(10), 55);
//! // `install` may borrow: the caller waits until the closure is done.
//! let v = vec![1, 2, 3];
//! assert_eq!(pool.install(|| v.iter().sum::<i32>()), 6);
//! ```
//!
//! The context-passing form carries the join's depth by value instead of in
//! a thread-local:
//!
//! ```
//! use manycore_steal::{with_ctx, Ctx};
//!
//! fn fib(s: Ctx<'_>, n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = s.join(|s| fib(s, n - 1), |s| fib(s, n - 2));
//!     a + b
//! }
//! assert_eq!(with_ctx(|s| fib(s, 20)), 6765);
//! ```

mod api;
mod join;
mod pool;
mod raw;
#[cfg(not(loom))]
mod rt;
mod scope;
mod thread_pool;

pub use api::{
    broadcast, current_num_threads, current_thread_has_pending_tasks, current_thread_index,
    in_place_scope, in_place_scope_fifo, join_context, max_num_threads, scope, scope_fifo, spawn,
    spawn_broadcast, spawn_fifo, yield_local, yield_now, BroadcastContext, FnContext, Yield,
};
pub use join::{join, with_ctx, Ctx};
pub use pool::{
    max_sequential, set_max_sequential, StealStats, DEFAULT_MAX_SEQUENTIAL, HEARTBEAT_PERIOD,
};
#[cfg(not(loom))]
pub use rt::{attach, steal_stats, StealExt};
pub use scope::{Scope, ScopeFifo};
pub use thread_pool::{
    default_num_threads, GlobalPoolError, ThreadPool, ThreadPoolBuilder, WorkerThread,
};

// Behind `internals`: what benches, probes and tests measure with, not part
// of the crate's API.
#[cfg(feature = "internals")]
pub use join::LATENT_WINDOW;
#[cfg(feature = "internals")]
pub use pool::{max_poll_gap, measure_poll_gaps};
#[cfg(feature = "internals")]
pub mod probe;

#[cfg(all(test, loom))]
mod loom_tests;

/// Steal counters of the pool the calling thread is a worker of, if any
/// (for benches: users have [`ThreadPool::stats`] and [`steal_stats`]).
#[cfg(feature = "internals")]
pub fn current_stats() -> Option<StealStats> {
    pool::current().map(|(p, _)| p.stats())
}

/// Called at a thread's first heartbeat when it is no pool's worker yet: if it
/// is a core of an attached runtime, bind it.
fn attach_current_thread() {
    #[cfg(not(loom))]
    rt::attach_current_thread();
}
