//! manycore-flow: dataflow zero-wait threads on the cores of a
//! [`manycore_rt::Runtime`], after Kusakabe, Taniguchi, Amamiya, *A Study of
//! a Continuation-based Fine-grain Multithreaded Operating System CEFOS*
//! (with the synchronisation counters of Leberecht's MuSE threads).
//!
//! A program is a graph of *zero-wait threads*: bodies that run to
//! completion without ever waiting. A thread *instance* has a slot per
//! input and a synchronisation counter; a *continuation signal*
//! ([`Ctx::continue_to`]) fills a slot and counts down, and the instance
//! *fires* (runs its body, on its core) when the count reaches zero.
//!
//! * [`Instance`]s are created at run time on any core, like the coloured
//!   tokens of dynamic dataflow, from a closure ([`Instance::new`]) or a
//!   reusable [`Template`]. A signal to an instance on the sender's own core
//!   is a plain local operation; to another core, a cross-core invocation.
//! * A slot filled twice, a signal to an instance that has fired, a slot that
//!   does not exist: the sender gets a [`SignalError`] (its value back).
//! * [`GraphBuilder`] builds static graphs, checked when built; recursive
//!   programs (fib, knary) create instances as they go.
//! * Exclusive templates run behind a [`Gate`], with either of the paper's
//!   policies: [`Exclusion::SelfContinuation`] (losers retry) or
//!   [`Exclusion::Queue`] (losers wait in a FIFO queue and each release hands
//!   the gate to exactly one of them).
//! * Thread modes as in FUCE: [`User`], [`KernelInterface`], [`Kernel`]. A
//!   user thread continues to kernel threads only through a kernel-interface
//!   thread: a compile error for typed handles ([`ContinuesTo`]), a
//!   [`BuildError`] in a graph, a [`SignalErrorKind::ModeViolation`] for a
//!   slot whose mode is a value ([`AnySlot`]).
//! * An I/O completion is a continuation signal like any other. A
//!   [`Reactor`] watches file descriptors registered as [`Device`]s (epoll
//!   by default, io_uring where asked for and allowed: [`Backend`]); a
//!   request names its receiver's [`Slot`], and the reactor signals the
//!   answer straight to it, a value or a typed [`IoError`] (the device
//!   failed or hung up, was deregistered, or the reactor shut down). Only
//!   kernel and kernel-interface threads issue requests ([`Issuer`]). A
//!   simulated device can signal a handler through [`Outside`] the same way.
//!
//! The protocol (counter, firing, cross-core path, gate handoff, reactor)
//! and its invariants are in `src/README.md`; `src/loom_tests.rs`
//! model-checks the claim word, the owner cell (who may reach an
//! instance's owner half), the gate and the reactor's sleep handshake.
//!
//! # Features
//!
//! `internals` (off by default) adds the module `experiments`: the paper's
//! experiments (Figures 5 to 11, the receive-livelock curve) and the
//! reactor's probes as functions that return numbers, for benches. Not a
//! stable API.
//!
//! # Unsafe code
//!
//! Every `unsafe` is in the private module `raw`, each with its `SAFETY`
//! argument: the owner cell (an instance's owner half, reachable by its
//! owner core's thread only), the slot vector (input slots filled in any
//! order that become the body's `Inputs` in place), the counted reference to
//! an instance and the per-thread free lists its block comes from,
//! file-descriptor system
//! calls, epoll, and an io_uring that owns the buffers of its operations
//! until the kernel hands them back.
//!
//! # Example
//!
//! Fibonacci as dataflow: each call is an instance; `fib(n)` makes a join
//! instance with two slots, forks two children that continue to it, and the
//! join continues to the caller's slot.
//!
//! ```
//! use manycore_flow::{Ctx, Instance, Outcome, Slot, User};
//! use manycore_rt::Runtime;
//! use std::time::Duration;
//!
//! fn fib(ctx: &Ctx<'_, User>, n: u64, k: Slot<u64>) {
//!     if n < 2 {
//!         let _ = ctx.signal(&k, n);
//!         return;
//!     }
//!     // The join: fires when both children have continued to it.
//!     let Ok(join) = Instance::<u64>::new(ctx.core(), 2, move |ctx, xs| {
//!         let _ = ctx.signal(&k, xs[0] + xs[1]);
//!     }) else { return };
//!     // Children on alternating cores near the root, local further down.
//!     let peers = ctx.core().peers();
//!     for (i, m) in [n - 1, n - 2].into_iter().enumerate() {
//!         let on = if n > 12 { &peers[i % peers.len()] } else { ctx.core() };
//!         let slot = join.slot(i);
//!         let _ = ctx.spawn(on, move |ctx| fib(ctx, m, slot));
//!     }
//! }
//!
//! let rt = Runtime::builder().cores(2).build()?;
//! let (result, out) = Outcome::new(rt.core(0))?;
//! Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| fib(ctx, 20, result))?;
//! assert_eq!(out.wait_timeout(Duration::from_secs(30))?, 6765);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod claims;
mod ctx;
mod error;
#[cfg(feature = "internals")]
pub mod experiments;
mod frame;
mod gate;
mod graph;
mod here;
mod instance;
mod mode;
mod node;
mod outcome;
mod pending;
mod percore;
mod raw;
mod reactor;
mod ready;
mod registry;
mod signal;
mod template;
mod turnstile;

pub use claims::MAX_INPUTS;
pub use ctx::{Ctx, Outside};
pub use error::{BuildError, FlowError, SignalError, SignalErrorKind};
pub use gate::{Exclusion, Gate, GateHold, GateStats};
pub use graph::{Graph, GraphBuilder, NodeId};
pub use instance::{AnySlot, Instance, Slot};
pub use mode::{ContinuesTo, Kernel, KernelInterface, Mode, ModeKind, User};
pub use outcome::Outcome;
pub use raw::inputs::{Inputs, IntoIter as InputsIntoIter};
pub use reactor::{
    eventfd, pipe, timerfd, Backend, Device, IoError, IoResult, Issuer, Reactor, ReactorStats,
};
pub use template::Template;

/// Instances pending (created, not yet fired, or waiting at a gate's queue)
/// on the calling core; 0 off the cores. For tests that check nothing is
/// left behind.
#[doc(hidden)]
pub fn pending_here() -> usize {
    registry::pending_here()
}

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
