//! All of manycore-steal's `unsafe` code: the stack frame of a latent job
//! (`frame`), the per-thread chain of recorded frames, MuSE's on-stack
//! contexts linked through the stack (`local`, `join`), promotion of the
//! oldest latent frame, the mailbox that publishes it (`mailbox`), running
//! it on a thief, and the unrecorded join's unwinding guard (`unrecorded`);
//! jobs that live outside a join's frame (`job`: heap jobs, stack jobs run
//! by another thread while their owner waits, latches) and Rayon's scopes
//! (`scope`), whose spawned closures borrow from the scope's owner; and the
//! kick's signal and handler (`kick`), which promotes latent frames on a
//! worker that a waiting worker interrupted.
//! `README.md` in `src/` describes the protocol.
//!
//! Invariants the `SAFETY` comments below rely on:
//!
//! * **L1 (liveness).** A frame lives in the stack frame of its `join` call,
//!   which does not return (nor unwind) before `a` has returned and `b` has
//!   run or been collected. The thread-local head `Local::head` points to a
//!   frame only while that frame's `a` runs, and a frame's `prev` is the head
//!   it replaced (an older frame further up the same stack, or null), so
//!   every chain a thread walks from its head consists of live frames.
//! * **L2 (ownership).** Only the owning thread reads or writes the chain and
//!   the frames' `prev` and `thief` fields, and only the owner moves `state`
//!   away from `LATENT`; `owner` is written by the owner before publication
//!   and only read after it. `Local` is `!Sync` and never leaves its thread.
//! * **P (promotion).** A promoted frame has `state != LATENT`. From the
//!   successful publication of its address (`Mailbox::offer`, a Release CAS
//!   into a thief's mailbox) until either the owner takes it back out of
//!   that mailbox (`Mailbox::reclaim`) or the thief's Release store of
//!   `DONE`, the thread that took it out of the mailbox (`Mailbox::take`,
//!   Acquire; it holds a `Stolen`) owns the closure `b` and the result slot;
//!   the owner touches neither, and does not leave `join` until it has taken
//!   the job back or seen `DONE` (Acquire). The mailbox word leaves the job's
//!   address once, by one of the two CASes, so exactly one side runs `b`.
//! * **B (binding).** `Local::pool` is null or points to the pool that the
//!   thread-local binding (`pool::binding`) holds an `Arc` of; both change
//!   together. Where the binding may change while a join on the thread holds
//!   a `&Pool` taken from `Local::pool` (`ThreadPool::install`, the
//!   promotion probe), the replaced `Arc` is kept until it is put back, so
//!   the pool outlives the borrow.
//! * **S (stack jobs and scopes).** A stack job's owner does not leave
//!   `run_elsewhere` (nor unwind out of it: it aborts) before the job's
//!   latch is set, unless the job's `JobRef` came back unexecuted; a scope
//!   does not end before its count of unfinished work reached zero. The one
//!   that sets a latch copies what it needs to wake the waiter before the
//!   waiter can see it set, and touches it no more.
//! * **K (kicks).** The kick handler (`kick`) runs on the thread whose chain
//!   it walks, so L2 holds; it acts only while `Local::masked` is clear
//!   (a serve, which promotes and puts back frames itself, and a change of
//!   the binding set it), and then only on frames that are linked: `link`
//!   stores the head after the frame is written and `unlink` restores it
//!   before the join loads `state` (compiler fences; a signal lands between
//!   two instructions, and a thread sees its own stores in program order).
//!   A frame the handler promoted is therefore one the join finds promoted.

mod frame;
mod job;
mod join;
mod kick;
mod local;
mod mailbox;
mod scope;
mod unrecorded;

pub(crate) use frame::{
    is_done, is_started, oldest_latent, promote, run_stolen, unpromote, JobHeader,
};
#[cfg(not(loom))]
pub(crate) use job::Handoff;
pub(crate) use job::{heap_job, run_all_elsewhere, run_elsewhere, FifoQueue, JobRef, Waiter};
pub(crate) use join::join;
#[cfg(not(loom))]
pub(crate) use kick::{enabled as kicks_enabled, kick};
pub(crate) use local::{set_pool, with_local, with_local_flat, DepthGuard, Local};
pub(crate) use mailbox::{Mailbox, Stolen, EMPTY, HUNGRY};
pub(crate) use scope::{run_scope, run_scope_fifo};
pub use scope::{Scope, ScopeFifo};
pub(crate) use unrecorded::join_unrecorded;
