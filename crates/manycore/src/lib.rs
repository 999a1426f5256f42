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
//!   that is shut down answers [`InvokeError::Shutdown`]; a wait that can
//!   be seen never to end answers [`InvokeError::WouldDeadlock`]; and
//!   [`Runtime::shutdown_timeout`] always returns. What can still wait for
//!   ever (code that never returns, for one) is listed in the `manycore-rt`
//!   crate's documentation.
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
//! gather over multicast trees), [`EventChannel`] and [`EventSink`] (event
//! channels), timeouts on any [`Invocation`] and [`sleep`], coroutines
//! ([`Core::spawn_coroutine`], [`block_on`]), and per-core schedulers
//! ([`Scheduler`]: FIFO, priority, EDF; [`Core::call_urgent`],
//! [`preempt_point`]). `examples/` holds one program per paper section:
//! `rpc`, `rmi`, `channels`, `collectives`, `futures`, and `fork_join`.
//!
//! # Where things live
//!
//! The crate root holds the runtime: cores, invocations, objects, groups,
//! event channels, timers. The other mechanisms are modules, the way `std`
//! keeps `std::thread` and `std::net` apart:
//!
//! * [`steal`]: fork-join on the stack, stolen only on demand (MuSE):
//!   [`steal::join`], [`steal::scope`], the context form [`steal::with_ctx`],
//!   [`steal::ThreadPool`], and [`steal::StealExt::install`] to run a
//!   fork-join computation on a runtime's cores.
//! * [`sock`]: sockets in the shape of `std::net` over shared memory
//!   (rckSock): [`sock::ShmListener`], [`sock::ShmStream`].
//! * [`flow`]: dataflow graphs of run-to-completion (zero-wait) threads with
//!   synchronisation counters, exclusive threads behind gates, and FUCE's
//!   thread modes (CEFOS).
//! * `mpi` (cargo feature `mpi`): places across the ranks of an MPI job,
//!   typed active messages, remote objects and collectives across ranks, and
//!   MuSE's distributed join.
//! * [`sync`] (the atomics facade, `EventCount`, CPU sets) and [`ring`] (the
//!   SPSC ring of cache-line slots) are the layers underneath.
//!
//! Names follow `std` and do not collide with what users import beside them:
//! the event-channel types are `EventChannel`/`EventSink` (not `Sink`, which
//! is `futures::Sink`), the socket types `ShmStream`/`ShmListener` (as
//! `UnixStream`/`UnixListener`; `Stream` is `futures::Stream`), and the
//! fork-join `Scope` is `steal::Scope` (as `std::thread::Scope`), so nothing
//! is exported twice.
//!
//! # Fork-join on a runtime's cores
//!
//! ```
//! use manycore::steal::{join, StealExt};
//! use manycore::Runtime;
//!
//! fn fib(n: u64) -> u64 {
//!     if n < 2 {
//!         return n;
//!     }
//!     let (a, b) = join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//!
//! let rt = Runtime::builder().cores(2).build()?;
//! // The cores steal from each other only when one of them is idle.
//! assert_eq!(rt.install(|| fib(25)), 75025);
//! rt.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The papers each module follows are listed, with what each became, in
//! `docs/papers.md` at the root of the repository.

#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use manycore_rt::{
    batch_spawns, block_on, current, poll_once, preempt_point, sleep, sleep_until, Builder, Core,
    CoreStats, Deadline, Error, EventChannel, EventSink, Events, Group, IdleHook, IdlePolicy,
    Invocation, InvokeError, Priority, Remote, Runtime, Scheduler, ShutdownError, Sleep, TaskAttrs,
    Topology, DEFAULT_CORE_STACK, DEFAULT_COROUTINE_STACK, INLINE_CLOSURE_BYTES,
};

#[doc(inline)]
pub use manycore_steal as steal;

#[doc(inline)]
pub use manycore_sock as sock;

#[doc(inline)]
pub use manycore_flow as flow;

#[cfg(feature = "mpi")]
#[doc(inline)]
pub use manycore_mpi as mpi;

#[doc(inline)]
pub use manycore_sync as sync;

#[doc(inline)]
pub use manycore_ring as ring;
