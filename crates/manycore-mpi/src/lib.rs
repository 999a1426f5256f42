//! manycore across ranks: places, typed active messages, remote objects,
//! hierarchical collectives and a distributed MuSE join, on MPI.
//!
//! A *place* is (rank, core): one core of the manycore runtime of one MPI
//! rank. Remote functions are declared with [`remote_fn!`] and registered
//! at start; a call to another rank travels as a frame (a 32-byte header
//! and the serde-encoded arguments), sent by the calling thread itself or
//! by the rank's *progress engine*, and runs on the named core there. One
//! thread of a rank calls MPI at a time: the engine, or a thread that polls
//! MPI while it waits for a reply.
//! The protocol, the engine and the stealing protocol across ranks are
//! described in `src/README.md`.
//!
//! The papers behind it: the typed message stubs and bulk transfer of
//! Peter, Roscoe, Baumann, *Barrelfish on the Intel Single-chip Cloud
//! Computer*; the remote method invocations and collectives of Rotta,
//! Traue, Prescher, Nolte, *Interrupt-Driven Cross-Core Invocation
//! Mechanisms on the Intel SCC*; and the on-stack execution with work
//! stealing across cluster nodes of Leberecht, *The MuSE System: A Flexible
//! Combination of On-Stack Execution and Work-Stealing*.
//!
//! # At a glance
//!
//! * [`remote_fn!`] declares a remote function and registers it; the
//!   `static` it defines is the typed handle ([`RemoteFn`], [`BulkFn`],
//!   [`MethodFn`], [`TaskFn`]).
//! * `World::init()` starts the rank (runtime, engine, MPI, the registry
//!   check); `world.place(rank, core)` is a `Place`; `place.call(&f, a)`
//!   returns a `Pending<R>` (`wait`, `wait_timeout`, `.await`);
//!   `place.spawn` is one-way; `place.call_bulk` sends [`Bulk`] bytes beside
//!   the arguments (bytes, or a slice of plain numbers:
//!   [`Bulk::from_slice`], [`Bulk::as_slice`]). `world.engine_place(rank)`
//!   is the place where a short function runs on the thread that
//!   progresses that rank's MPI, with no core in between: the shortest
//!   round trip (a caller waiting for it polls MPI itself).
//! * `world.put(core, obj)` returns a `Remote<T>` that carries its rank;
//!   `remote.call(&method, a)` runs a registered method on the object's core;
//!   a `RemoteGroup` of such pointers, on any ranks, is invoked together
//!   (`spawn`, and a `reduce` combined within each rank, then across ranks).
//! * `world.all_reduce`, `reduce`, `broadcast` and the hierarchical
//!   `all_reduce_cores` are collectives (every rank calls them, in order).
//! * `world.run_join(&task, arg)` runs a distributed join; inside,
//!   [`Ctx::join`] runs on the stack and lets idle ranks steal.
//! * `world.finalize()` shuts the job down (collective).
//!
//! # Faults
//!
//! Survivable, reported to the caller as a [`CallError`] while every rank
//! lives on: a remote function, method or stolen task that panics; an
//! unknown function id, a function of the wrong kind or arguments that do
//! not decode (refused by the receiving rank); a place that does not exist;
//! a removed object; a caller's timeout. Ranks running different programs
//! are refused at `World::init` with [`Error::RegistryMismatch`].
//!
//! Fatal, the job is aborted: an error inside MPI (its default error
//! handler aborts), a rank that dies, a panic on the progress engine, and a
//! panic that unwinds out of the thread owning the `World` (a collective
//! shutdown could not finish without the other ranks).
//!
//! # Features
//!
//! Everything that talks to MPI is behind the `mpi` feature (off by
//! default, so the workspace builds where no MPI library is installed).
//! Without it this crate holds the pure parts only: the codec, the function
//! registry, [`remote_fn!`] and the sequential form of the join
//! ([`Ctx::sequential`]); a program written against it runs on one
//! process, every join a pair of plain calls.
//!
//! # Example
//!
//! Run with `mpirun -n 2` (with the `mpi` feature; the example is compiled
//! when the feature is on):
//!
#![cfg_attr(feature = "mpi", doc = "```no_run")]
#![cfg_attr(not(feature = "mpi"), doc = "```ignore")]
//! use manycore_mpi::{remote_fn, Ctx, World};
//!
//! remote_fn! {
//!     fn square(x: u64) -> u64 { x * x }
//! }
//! remote_fn! {
//!     fn fib(cx: Ctx, n: u32) -> u64 {
//!         if n < 2 { return n as u64; }
//!         let (a, b) = cx.join(|cx| fib.run(cx, n - 1), &fib, n - 2);
//!         a + b
//!     }
//! }
//!
//! let world = World::init()?;
//! let other = (world.rank() + 1) % world.size();
//! // A typed active message to core 0 of the next rank.
//! assert_eq!(world.place(other, 0).call(&square, 12).wait()?, 144);
//! // A collective: every core of every rank contributes, combined within
//! // each rank first, then across ranks.
//! let cores = world.all_reduce_cores(|_core| 1u64, |a, b| a + b)?;
//! assert_eq!(cores, (world.size() * world.cores()) as u64);
//! // A distributed join: on the stack first, stolen by idle ranks.
//! assert_eq!(world.run_join(&fib, 25)?, 75025);
//! world.finalize()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The sequential form needs no MPI:
//!
//! ```
//! use manycore_mpi::{remote_fn, Ctx};
//!
//! remote_fn! {
//!     fn fib(cx: Ctx, n: u32) -> u64 {
//!         if n < 2 { return n as u64; }
//!         let (a, b) = cx.join(|cx| fib.run(cx, n - 1), &fib, n - 2);
//!         a + b
//!     }
//! }
//! assert_eq!(fib.run(Ctx::sequential(), 20), 6765);
//! ```

#![warn(missing_docs)]

#[cfg(feature = "mpi")]
mod awaiting;
mod codec;
#[cfg(feature = "mpi")]
mod collective;
#[cfg(feature = "mpi")]
mod dispatch;
#[cfg(feature = "mpi")]
mod engine;
mod error;
mod function;
#[cfg(feature = "mpi")]
mod group;
mod header;
mod join;
mod knary;
mod macros;
#[cfg(feature = "mpi")]
mod object;
#[cfg(feature = "mpi")]
mod pending;
#[cfg(feature = "mpi")]
mod place;
#[cfg(feature = "mpi")]
mod progress;
#[cfg(feature = "mpi")]
mod raw;
mod registry;
#[cfg(feature = "mpi")]
mod reply;
#[cfg(feature = "mpi")]
mod shared;
mod stub;
#[cfg(feature = "mpi")]
mod turns;
#[cfg(feature = "mpi")]
mod worker;
#[cfg(feature = "mpi")]
mod world;

/// The `bytemuck` crate, whose [`Pod`](bytemuck::Pod) types a [`Bulk`]
/// carries as plain data.
pub use bytemuck;
pub use codec::{decode, encode, Bulk, CodecError};
pub use error::{CallError, Error, ThreadLevel};
pub use function::{BulkFn, MethodFn, RemoteFn, TaskFn};
pub use header::{Header, Kind};
pub use join::Ctx;
pub use knary::{knary, Knary};
pub use registry::Registry;

#[cfg(feature = "mpi")]
pub use group::{GroupReduce, RemoteGroup};
/// The `mpi` crate (rsmpi) this crate is built on, for
/// [`World::with_mpi`].
#[cfg(feature = "mpi")]
pub use mpi;
#[cfg(feature = "mpi")]
pub use object::Remote;
#[cfg(feature = "mpi")]
pub use pending::Pending;
#[cfg(feature = "mpi")]
pub use place::Place;
#[cfg(feature = "mpi")]
#[doc(hidden)]
pub use progress::Tuning;
#[cfg(feature = "mpi")]
pub use worker::JoinStats;
#[cfg(feature = "mpi")]
pub use world::{Builder, World};

/// Not public API: what [`remote_fn!`] expands to.
#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{Entry, Handler};
    pub use crate::stub::{bulk, call, method, task};
    pub use inventory;
}
