//! # manycore
//!
//! A runtime for programming a multicore machine by message passing, the way
//! the many-core papers program the Intel SCC: every core runs its own
//! scheduler, cores share nothing mutable, and they cooperate only through
//! cross-core invocations carried by cache-line message rings with doorbells.
//!
//! * A **core** is a thread pinned to one CPU of the process's original CPU
//!   set. It idles by polling, by sleeping on its doorbell (a futex), or by
//!   spinning briefly and then sleeping ([`IdlePolicy`]).
//! * **Invocations**: [`Core::spawn`] (asynchronous RPC), [`Core::call`]
//!   (an [`Invocation`]: wait on it for synchronous RPC, or `.await` it),
//!   [`Core::call_then`] (a continuation on a core you name), and
//!   [`Core::spawn_async`] (an `async` task on a core).
//! * Panics in invoked code come back as [`InvokeError::Panicked`]; a runtime
//!   that is shut down answers [`InvokeError::Shutdown`]. Nothing hangs.
//!
//! ```
//! use manycore::{Runtime, IdlePolicy, InvokeError};
//!
//! let rt = Runtime::builder().cores(2).idle(IdlePolicy::default()).build()?;
//!
//! // Synchronous RPC.
//! assert_eq!(rt.core(1).call(|| 6 * 7).wait()?, 42);
//!
//! // Core 0 calls core 1 and waits, serving its own messages meanwhile.
//! let c1 = rt.core(1).clone();
//! let r = rt.core(0).call(move || c1.call(|| 1).wait().unwrap() + 1).wait()?;
//! assert_eq!(r, 2);
//!
//! // An async task on core 0 awaiting core 1.
//! let c1 = rt.core(1).clone();
//! let t = rt.core(0).spawn_async(async move { c1.call(|| 20).await.unwrap() + 1 });
//! assert_eq!(t.wait()?, 21);
//!
//! // Panics are errors, and the core lives on.
//! let bad = rt.core(1).call(|| -> i32 { panic!("oops") }).wait();
//! assert_eq!(bad, Err(InvokeError::Panicked("oops".into())));
//!
//! rt.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rest of the cross-core invocation model is here too:
//! [`Remote`] (global object pointers, RMI), [`Group`] (ateach / reduce /
//! gather over multicast trees), [`EventChannel`] and [`EventSink`] (event channels),
//! timeouts on any [`Invocation`] and [`sleep`], coroutines
//! ([`Core::spawn_coroutine`], [`block_on`]), and per-core schedulers
//! ([`Scheduler`]: FIFO, priority, EDF; [`Core::call_urgent`],
//! [`preempt_point`]). `examples/` holds one program per paper section:
//! `rpc`, `rmi`, `channels`, `collectives`, `futures`.
//!
//! Fork-join ([`join`], [`scope`], [`steal`]) and shared-memory sockets
//! ([`sock`]) are here too.
//!
//! The crates underneath are re-exported as modules: [`sync`] (atomics
//! facade, `EventCount`, CPU sets), [`ring`] (the SPSC ring of cache-line
//! slots).

#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use manycore_rt::{
    block_on, current, poll_once, preempt_point, sleep, sleep_until, Builder, EventChannel, Core,
    CoreStats, Deadline, Error, Events, Group, IdleHook, IdlePolicy, Invocation, InvokeError,
    Priority, Remote, Runtime, Scheduler, EventSink, Sleep, TaskAttrs, Topology,
    DEFAULT_COROUTINE_STACK, INLINE_CLOSURE_BYTES,
};

/// Fork-join on the stack, stolen only on demand (MuSE): `join`, `scope`,
/// the context form `with_ctx`/`Ctx::join`, and `StealExt::install`.
pub use manycore_steal as steal;
pub use manycore_steal::{join, scope, with_ctx, Ctx, Scope, StealExt};

/// Sockets over shared memory with buddy-managed buffers (rckSock), in the
/// shape of `std::net`, between threads and processes.
pub use manycore_sock as sock;

/// Synchronisation primitives: CachePadded, Backoff, EventCount, CPU sets.
pub mod sync {
    pub use manycore_sync::*;
}

/// The SPSC ring of cache-line slots that carries messages between cores.
pub mod ring {
    pub use manycore_ring::*;
}
