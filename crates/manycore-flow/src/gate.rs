//! `Gate`: mutual exclusion for exclusive thread templates, with both
//! policies of Kusakabe, Taniguchi, Amamiya, *A Study of a Continuation-based
//! Fine-grain Multithreaded Operating System CEFOS* (sections 2.1.2 and 4):
//!
//! * [`Exclusion::SelfContinuation`]: an instance that finds the gate taken
//!   continues to its own start (at the back of its core's queue) and tries
//!   again: FUCE's hardware mechanism, whose retries fill the thread queue.
//! * [`Exclusion::Queue`]: it waits in the gate's FIFO software queue, and a
//!   release hands the gate to exactly one waiter: CEFOS's remedy.
//!
//! The lock word and queue are a `Turnstile`; this module adds statistics,
//! the guard that releases, and the dispatch of the next holder to its core.

use crate::node::{self, NodeRef};
use crate::turnstile::Turnstile;
use manycore_sync::atomic::{AtomicU64, Ordering};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::Arc;

/// How a gate treats an instance that finds it taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exclusion {
    /// The instance re-signals itself and retries later (a busy wait through
    /// its core's queue). Counted in [`GateStats::self_continuations`].
    /// Bounded, as every spin in manycore: after 65536 retries in a row an
    /// instance waits in the gate's queue instead (so a gate that is never
    /// released cannot keep a core busy, and a shutdown waiting, forever).
    SelfContinuation,
    /// The instance waits in the gate's FIFO queue; each release hands the
    /// gate to the first waiter. Counted in [`GateStats::queued`].
    Queue,
}

/// Counters of a gate (each a snapshot; Relaxed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateStats {
    /// Bodies that ran holding the gate.
    pub runs: u64,
    /// Retries by instances that found the gate taken
    /// ([`Exclusion::SelfContinuation`]).
    pub self_continuations: u64,
    /// Instances that waited in the queue ([`Exclusion::Queue`]).
    pub queued: u64,
    /// Releases that handed the gate straight to a waiter.
    pub handoffs: u64,
}

/// A gate in front of exclusive thread templates: at most one instance of
/// the templates that share it runs at a time. Cheap to clone (a shared
/// handle); see [`Template::exclusive`](crate::Template::exclusive).
///
/// "Runs" lasts from the instance's start to the end of its body, or, if
/// the body takes the gate along with [`Ctx::hold_gate`](crate::Ctx::hold_gate),
/// until that [`GateHold`] is released: a semaphore held across a device's
/// round trip, as in the paper's Figure 4.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

struct GateInner {
    policy: Exclusion,
    turnstile: Turnstile<NodeRef>,
    runs: AtomicU64,
    self_continuations: AtomicU64,
    queued: AtomicU64,
    handoffs: AtomicU64,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("policy", &self.inner.policy)
            .field("held", &self.is_held())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Adds one to a statistics counter (an RMW, on contended paths and once
/// per exclusive run).
fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Gate {
    /// A free gate with `policy`.
    pub fn new(policy: Exclusion) -> Self {
        Self {
            inner: Arc::new(GateInner {
                policy,
                turnstile: Turnstile::new(),
                runs: AtomicU64::new(0),
                self_continuations: AtomicU64::new(0),
                queued: AtomicU64::new(0),
                handoffs: AtomicU64::new(0),
            }),
        }
    }

    /// The gate's policy.
    pub fn policy(&self) -> Exclusion {
        self.inner.policy
    }

    /// The gate's counters.
    pub fn stats(&self) -> GateStats {
        let i = &self.inner;
        GateStats {
            runs: i.runs.load(Ordering::Relaxed),
            self_continuations: i.self_continuations.load(Ordering::Relaxed),
            queued: i.queued.load(Ordering::Relaxed),
            handoffs: i.handoffs.load(Ordering::Relaxed),
        }
    }

    /// Whether an instance holds the gate right now (a snapshot).
    pub fn is_held(&self) -> bool {
        self.inner.turnstile.is_held()
    }

    /// Instances waiting in the queue right now (a snapshot; always 0 under
    /// [`Exclusion::SelfContinuation`], whose losers wait in their cores'
    /// queues instead).
    pub fn waiting(&self) -> usize {
        self.inner.turnstile.queued()
    }

    /// Takes the gate if it is free.
    pub(crate) fn try_enter(&self) -> Option<GateGuard> {
        self.inner
            .turnstile
            .try_acquire()
            .then(|| GateGuard::new(self.clone()))
    }

    /// Takes the gate for `node`, or queues `node` for a later handoff.
    pub(crate) fn enqueue(&self, node: NodeRef) -> Option<GateGuard> {
        match self.inner.turnstile.acquire_or_enqueue(node) {
            Some(_) => Some(GateGuard::new(self.clone())),
            None => {
                bump(&self.inner.queued);
                None
            }
        }
    }

    pub(crate) fn note_self_continuation(&self) {
        bump(&self.inner.self_continuations);
    }
}

/// The gate, held: dropping it releases the gate (and hands it to the next
/// waiter, if there is one).
pub(crate) struct GateGuard {
    gate: Option<Gate>,
}

impl GateGuard {
    fn new(gate: Gate) -> Self {
        bump(&gate.inner.runs);
        Self { gate: Some(gate) }
    }
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        if let Some(g) = self.gate.take() {
            release(g);
        }
    }
}

/// A gate taken along by a body ([`Ctx::hold_gate`](crate::Ctx::hold_gate)):
/// the gate stays held until this is released or dropped, on any thread.
pub struct GateHold {
    _guard: GateGuard,
}

impl GateHold {
    pub(crate) fn new(guard: GateGuard) -> Self {
        Self { _guard: guard }
    }

    /// Releases the gate (the same as dropping the hold).
    pub fn release(self) {}
}

impl fmt::Debug for GateHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GateHold").finish_non_exhaustive()
    }
}

thread_local! {
    /// A release is running on this thread.
    static RELEASING: Cell<bool> = const { Cell::new(false) };
    /// Releases that came up while one was running.
    static DEFERRED: RefCell<Vec<Gate>> = const { RefCell::new(Vec::new()) };
}

/// Releases `gate`. A handoff whose dispatch fails (the waiter's runtime is
/// shutting down) drops the new holder's guard, which releases again: such
/// nested releases are deferred to the outer one's loop, so a long queue of
/// waiters that can no longer run is walked without growing the stack.
fn release(gate: Gate) {
    match RELEASING.try_with(|r| r.replace(true)) {
        Ok(true) => {
            let mut g = Some(gate);
            let _ = DEFERRED.try_with(|d| d.borrow_mut().extend(g.take()));
            if let Some(g) = g {
                release_one(g);
            }
            return;
        }
        Ok(false) => {}
        // This thread is exiting: no loop to defer to.
        Err(_) => return release_one(gate),
    }
    let mut next = Some(gate);
    while let Some(g) = next {
        release_one(g);
        next = DEFERRED.try_with(|d| d.borrow_mut().pop()).ok().flatten();
    }
    let _ = RELEASING.try_with(|r| r.set(false));
}

/// One release: frees the gate or hands it to the next waiter, dispatched
/// to the waiter's owner core.
fn release_one(gate: Gate) {
    let Some(node) = gate.inner.turnstile.release() else {
        return;
    };
    bump(&gate.inner.handoffs);
    let guard = GateGuard::new(gate);
    let owner = node.frame().owner().clone();
    // A failed spawn drops the closure and the guard in it: released again.
    let _ = owner.spawn(move || node::resume(node, guard));
}
