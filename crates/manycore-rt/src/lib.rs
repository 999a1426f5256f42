//! manycore-rt: cores that share nothing and cooperate through cross-core
//! invocations carried by cache-line message rings with doorbells.
//!
//! This follows Barrelfish on the SCC (Peter, Schüpbach, Menzi, Roscoe et
//! al.: message channels, a notification bitmap, interrupt-driven wakeup)
//! and the "Cross-core invocations on the SCC" paper (asynchronous and
//! synchronous calls, futures, continuations, remote objects, collectives,
//! event channels, per-core scheduling). A *core* is a thread pinned to one
//! CPU of the process's original CPU set; it runs its own scheduler and
//! idles by polling, sleeping, or both. The message and sleep protocol, its
//! invariants and why they hold are in `src/README.md`.
//!
//! ```
//! use manycore_rt::{Runtime, IdlePolicy};
//!
//! let rt = Runtime::builder().cores(2).idle(IdlePolicy::default()).build()?;
//! // Fire and forget (asynchronous RPC).
//! rt.core(1).spawn(|| println!("hello from core 1"))?;
//! // Synchronous RPC: wait for the result.
//! let sum = rt.core(0).call(|| (1..=10).sum::<u32>()).wait()?;
//! assert_eq!(sum, 55);
//! // A core calling another core, waiting while it keeps serving its own messages.
//! let c1 = rt.core(1).clone();
//! let r = rt.core(0).call(move || c1.call(|| 41).wait().unwrap() + 1).wait()?;
//! assert_eq!(r, 42);
//! rt.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is promised, and what can still wait for ever
//!
//! * Messages from one source (a core, or one outside thread) to one core
//!   run in the order sent.
//! * A panic in invoked code comes back as [`InvokeError::Panicked`],
//!   whatever its payload, and the core lives on.
//! * An invocation that cannot run because the runtime shut down resolves
//!   to [`InvokeError::Shutdown`].
//! * A wait that can be seen never to end is an error, or does not happen:
//!   a core that waits for a call to itself runs the call while it waits;
//!   code running on a [`Remote`] object that waits (with
//!   [`Invocation::wait`] or [`block_on`]) for an invocation of that same
//!   object gets [`InvokeError::WouldDeadlock`] at once.
//! * Every `Duration` and `Instant` is accepted wherever a timeout,
//!   deadline or sleep is: zero means now, `Duration::MAX` means never.
//! * [`Runtime::shutdown_timeout`] returns after its timeout, one
//!   quiescence check and at most 100 ms more, and the runtime is then
//!   shut down. A runtime dropped on one of its own cores ends all its
//!   threads once that core's current work returns.
//!
//! What can still wait for ever is what no runtime can end from outside:
//!
//! * code that never returns (a loop, a blocking call on something that
//!   never comes) keeps its core, and whoever waits for it without a
//!   timeout, waiting; [`Runtime::shutdown`] and dropping a runtime wait
//!   for it too (`shutdown_timeout` reports it instead);
//! * work that keeps creating work for ever keeps `shutdown` and drop
//!   waiting (`shutdown_timeout` stops it);
//! * a wait without a timeout in a cycle that runs through other cores (an
//!   object on core 0 waiting for one on core 1 whose code waits for the
//!   first object) is not detected;
//! * a future that never completes (`sleep(Duration::MAX)`) is never ready,
//!   and off the cores `park_current(Duration::MAX)` sleeps for good;
//! * an outside thread whose ring to a core is full waits until the core
//!   makes room, or the runtime closes;
//! * inside a [`batch_spawns`] scope, code that waits for a spawn's effect
//!   by other means than the runtime (a spin on an atomic, a `std` channel)
//!   may wait for ever: the scope defers the spawn's publication, which is
//!   what it is for. Outside a scope every spawn is visible at once.
//!
//! # Memory
//!
//! A runtime costs little until its cores talk: the ring between two cores
//! is made when the first message goes from one to the other, so memory
//! grows with the pairs of cores that talk rather than with the square of
//! the cores (a runtime of 1024 cores is mostly its threads' stacks).
//!
//! What a core queues toward another core whose ring is full is bounded by
//! [`Builder::spill_limit`] (1024 messages per destination by default). A
//! core that reaches the limit serves its own messages (runs what arrives,
//! as a core waiting for a result does) until the destination has taken
//! some, so two cores flooding each other cannot deadlock; in that one
//! respect `spawn` and `call` from a core can wait. One case goes past the
//! limit instead of waiting: a message that the core runs while it serves
//! that way, and that itself sends toward a full queue whose receiver does
//! not consume for a millisecond (the stack would otherwise grow, or two
//! such cores deadlock). Threads that are not cores wait for room in their
//! ring, a bounded sleep at a time. The queue of messages a core sends to
//! itself, its task queue and its async tasks are not bounded. The
//! protocol is in `src/README.md`.
//!
//! # Unsafe code
//!
//! Every abstraction built on `unsafe` is in the private module `raw`, one
//! file per thing it makes safe. Outside it there are two `unsafe` blocks,
//! each with its `SAFETY` argument: the core loop entering a core (it calls
//! raw's `enter`, whose contract the loop's own structure keeps), and the
//! object table lending an object in place while its slot is marked busy
//! (`object.rs`).
//!
//! # Features
//!
//! `internals` (off by default) adds items that exist for tests, benches
//! and probes, not for users: `debug_counts`, `Runtime::debug_spill`,
//! `Runtime::debug_rings`, `Group::reduce_measured` and `Group::generation`. They are not a stable API.

#![warn(missing_docs)]

mod channel;
mod core;
mod core_loop;
mod coroutine;
mod error;
mod executor;
mod group;
mod invocation;
mod keyed;
mod mailbox;
mod object;
mod outside;
mod raw;
mod runtime;
mod sparse;
mod spill;
mod task_queue;
mod timer;

pub use crate::core::{current, Core};
pub use channel::{EventChannel, EventSink, Events};
#[cfg(feature = "internals")]
pub use core_loop::debug_counts;
pub use core_loop::{batch_spawns, park_current, poll_once, preempt_point};
pub use coroutine::{block_on, DEFAULT_COROUTINE_STACK};
pub use error::{Error, InvokeError};
pub use group::{Group, Topology};
pub use invocation::Invocation;
pub use object::Remote;
pub use runtime::{
    Builder, CoreStats, IdleHook, IdlePolicy, Runtime, ShutdownError, DEFAULT_CORE_STACK,
};
pub use task_queue::{Deadline, Priority, Scheduler, TaskAttrs};
pub use timer::{sleep, sleep_until, Sleep};

/// Bytes of closure that travel inline in a message (larger ones are boxed).
pub const INLINE_CLOSURE_BYTES: usize = raw::INLINE_BYTES;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
