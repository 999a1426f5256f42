//! The distributed join's context, after Leberecht, *The MuSE System: A
//! Flexible Combination of On-Stack Execution and Work-Stealing*: every task
//! runs on the stack first, like a sequential call; its second half waits,
//! *latent*, in a frame on the same stack; only when another rank runs dry
//! and asks is the oldest latent frame *promoted*: its arguments are
//! serialized and shipped, and the owner, back at its join, waits for the
//! result message instead of running it.
//!
//! The frames form a list on the stack, from the innermost join outwards,
//! linked by shared references (the [`Ctx`] passed down carries the
//! innermost), so that a promotion can reach the oldest frame without
//! anything leaving the stack and without `unsafe`. A join that nobody
//! steals from costs one frame on the stack and one load of the demand flag:
//! no allocation, no atomic read-modify-write, no message.
//!
//! Without a distributed scheduler ([`Ctx::sequential`], or any program run
//! without the `mpi` feature) a join is two plain calls.

// The scheduler side (frames, promotion, tickets) is driven by the MPI
// engine's worker; without the `mpi` feature only the sequential join uses
// this module.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use crate::codec::{decode, encode_into};
use crate::error::CallError;
use crate::function::TaskFn;
use crate::header::Header;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::{Cell, RefCell};

/// The context of a task of a distributed join: where its latent frames
/// live and who serves steal requests. `Copy`; pass it down by value.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    sched: Option<&'a dyn Scheduler>,
    top: Option<&'a Frame<'a>>,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("distributed", &self.sched.is_some())
            .field("depth", &depth(self.top))
            .finish()
    }
}

/// One latent half of a join, linked to the frames of the joins around it.
pub(crate) struct Frame<'a> {
    parent: Option<&'a Frame<'a>>,
    latent: &'a dyn Latent,
}

/// What a promotion produced: the task's function id and its encoded
/// arguments (appended to the buffer the scheduler passed in).
pub(crate) trait Latent {
    /// Whether the frame's task is still here to be run or promoted.
    fn is_latent(&self) -> bool;
    /// Promotes the frame under `ticket`: appends its encoded arguments to
    /// `out` and returns its function id, or `None` (and leaves the frame
    /// latent) if it cannot travel.
    fn promote(&self, ticket: u64, out: &mut Vec<u8>) -> Option<u32>;
}

/// The distributed side of a join, implemented by the MPI engine's worker.
pub(crate) trait Scheduler {
    /// Whether a thief waits for an answer (one load; asked at every join).
    fn demand(&self) -> bool;
    /// Answers waiting thieves: promotes the oldest latent frames reachable
    /// from `top`, or tells them there is nothing.
    fn serve(&self, top: Option<&Frame<'_>>);
    /// Waits for the result of the frame promoted under `ticket`, serving
    /// thieves and running work meanwhile. `Ok` holds the result frame: the
    /// encoded value starts after its [`Header`](crate::Header).
    fn wait_stolen(&self, ticket: u64, top: Option<&Frame<'_>>) -> Result<Vec<u8>, CallError>;
    /// A fresh ticket for a promotion.
    fn ticket(&self) -> u64;
}

fn depth(mut f: Option<&Frame<'_>>) -> usize {
    let mut d = 0;
    while let Some(x) = f {
        d += 1;
        f = x.parent;
    }
    d
}

/// The oldest (outermost) frame reachable from `top` that is still latent:
/// the biggest piece of work, as in Cilk and MuSE.
pub(crate) fn oldest_latent<'a>(mut f: Option<&'a Frame<'a>>) -> Option<&'a Frame<'a>> {
    let mut oldest = None;
    while let Some(x) = f {
        if x.latent.is_latent() {
            oldest = Some(x);
        }
        f = x.parent;
    }
    oldest
}

impl<'a> Frame<'a> {
    /// See [`Latent::promote`].
    pub(crate) fn promote(&self, ticket: u64, out: &mut Vec<u8>) -> Option<u32> {
        self.latent.promote(ticket, out)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Latent,
    Promoted(u64),
    Taken,
}

struct Slot<'f, B, RB> {
    state: Cell<State>,
    arg: RefCell<Option<B>>,
    task: &'f TaskFn<B, RB>,
}

impl<B: Serialize, RB> Latent for Slot<'_, B, RB> {
    fn is_latent(&self) -> bool {
        self.state.get() == State::Latent
    }

    fn promote(&self, ticket: u64, out: &mut Vec<u8>) -> Option<u32> {
        if self.state.get() != State::Latent {
            return None;
        }
        let id = self.task.id().ok()?;
        let arg = self.arg.borrow();
        let len = out.len();
        if encode_into(out, arg.as_ref()?).is_err() {
            out.truncate(len);
            return None;
        }
        drop(arg);
        self.arg.borrow_mut().take();
        self.state.set(State::Promoted(ticket));
        Some(id)
    }
}

impl Ctx<'static> {
    /// A context with no distributed scheduler: every join runs both halves
    /// on the calling thread, one after the other.
    pub fn sequential() -> Self {
        Ctx {
            sched: None,
            top: None,
        }
    }
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(sched: &'a dyn Scheduler, top: Option<&'a Frame<'a>>) -> Self {
        Ctx {
            sched: Some(sched),
            top,
        }
    }

    /// Whether joins in this context can be stolen by other ranks.
    pub fn is_distributed(&self) -> bool {
        self.sched.is_some()
    }

    /// Runs `a` here and `task(b)` after it, unless another rank has stolen
    /// `task(b)` meanwhile; returns both results. `a` runs on the stack;
    /// `task(b)` waits latent in a frame on the stack and costs nothing
    /// more unless it is stolen, when its argument is serialized, shipped,
    /// run by the thief, and its result comes back as a message.
    ///
    /// A panic in `a` propagates (after `task(b)` is no longer needed: a
    /// late result of a stolen `task(b)` is dropped). A panic in a stolen
    /// `task(b)` panics here, with the remote message.
    pub fn join<RA, B, RB>(
        self,
        a: impl for<'b> FnOnce(Ctx<'b>) -> RA,
        task: &TaskFn<B, RB>,
        b: B,
    ) -> (RA, RB)
    where
        B: Serialize,
        RB: DeserializeOwned,
    {
        let Some(sched) = self.sched else {
            let ra = a(self);
            return (ra, task.run(self, b));
        };
        let slot = Slot {
            state: Cell::new(State::Latent),
            arg: RefCell::new(Some(b)),
            task,
        };
        let frame = Frame {
            parent: self.top,
            latent: &slot,
        };
        if sched.demand() {
            sched.serve(Some(&frame));
        }
        let ra = a(Ctx::new(sched, Some(&frame)));
        match slot.state.replace(State::Taken) {
            State::Latent => {
                let b = slot.arg.borrow_mut().take();
                match b {
                    Some(b) => (ra, task.run(self, b)),
                    None => unreachable!("a latent frame holds its argument"),
                }
            }
            State::Promoted(ticket) => match sched.wait_stolen(ticket, self.top) {
                Ok(frame) => match decode(frame.get(Header::LEN..).unwrap_or_default()) {
                    Ok(rb) => (ra, rb),
                    Err(e) => panic!("stolen task {}: result: {e}", task.name()),
                },
                Err(e) => panic!("stolen task {} failed: {e}", task.name()),
            },
            State::Taken => unreachable!("a join takes its frame once"),
        }
    }
}

#[cfg(test)]
mod tests;
