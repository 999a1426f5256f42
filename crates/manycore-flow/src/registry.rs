//! `Registry`: a core's table of its pending instances, a thread-local on
//! the core's thread, touched only by that thread. An instance's entry is
//! the reference its owner keeps while it waits for signals (or for a
//! gate); the index is recorded in the instance's owner half.
//!
//! Each entry has a generation, bumped whenever its instance is taken out:
//! (index, generation) is a *route*, which names one instance for as long
//! as it stays in its entry and nothing after (a route that outlives its
//! instance finds another generation, and is refused).
//!
//! It is how shutdown reaches pending instances: when a core's thread
//! exits, its registry empties every instance in it (bodies and values),
//! so whatever waited on those instances (an [`Outcome`](crate::Outcome))
//! learns at once that they will never fire, even while handles to them
//! are still held elsewhere.

use crate::node::{Filled, NodeRef};
use crate::percore::{self, PerCore};
use crate::raw::shared::Shared;

/// Pending instances of one core (`N`: what an entry holds; a model's
/// stand-in in `loom_tests.rs`).
pub(crate) struct Registry<N: Held = NodeRef> {
    entries: Vec<(u32, Option<N>)>,
    free: Vec<u32>,
}

/// What a registry entry holds.
pub(crate) trait Held {
    /// Whether `self` and `other` are the same instance.
    fn same(&self, other: &Self) -> bool;
    /// Empties the instance (its core's thread exits).
    fn empty(self);
}

impl Held for NodeRef {
    fn same(&self, other: &Self) -> bool {
        Shared::ptr_eq(self, other)
    }

    fn empty(self) {
        self.clear(false);
    }
}

/// A route: (index, generation) in one word (see [`Registry::route`]).
#[inline]
pub(crate) fn route(index: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(index)
}

/// A route's index.
#[inline]
pub(crate) fn route_index(route: u64) -> u32 {
    route as u32
}

/// Runs `f` with this thread's registry; None if the thread is exiting (its
/// registry is gone) or the registry is in use further up the stack (never,
/// by construction: no user code runs while it is borrowed).
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> Option<R> {
    percore::with(|pc| with_in(pc, f)).flatten()
}

/// `with`, on the context `pc` the caller holds.
#[inline]
pub(crate) fn with_in<R>(pc: &PerCore, f: impl FnOnce(&mut Registry) -> R) -> Option<R> {
    pc.registry.try_borrow_mut().ok().map(|mut r| f(&mut r))
}

impl<N: Held> Registry<N> {
    /// An empty registry.
    pub(crate) const fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The route the next `insert` will give.
    pub(crate) fn next_route(&self) -> u64 {
        match self.free.last() {
            Some(&i) => route(i, self.entries[i as usize].0),
            None => route(self.entries.len() as u32, 0),
        }
    }

    /// Adds `node`; returns its route (for the node to record; its index is
    /// the low half).
    pub(crate) fn insert(&mut self, node: N) -> u64 {
        match self.free.pop() {
            Some(i) => {
                let e = &mut self.entries[i as usize];
                e.1 = Some(node);
                route(i, e.0)
            }
            None => {
                self.entries.push((0, Some(node)));
                route((self.entries.len() - 1) as u32, 0)
            }
        }
    }

    /// Empties entry `i` (holding an instance) and bumps its generation.
    #[inline]
    fn vacate(&mut self, i: u32) -> Option<N> {
        let e = &mut self.entries[i as usize];
        e.0 = e.0.wrapping_add(1);
        self.free.push(i);
        e.1.take()
    }

    /// Removes and returns the entry at `i` if it is `node`.
    pub(crate) fn take(&mut self, i: u32, node: &N) -> Option<N> {
        let e = self.entries.get(i as usize)?;
        if !e.1.as_ref().is_some_and(|e| e.same(node)) {
            return None;
        }
        self.vacate(i)
    }

    /// A routed delivery: runs `deliver` on the instance that route `r`
    /// names, and if it says the instance is complete, takes the instance
    /// out and returns it (to fire). `Err(())` if the route names no
    /// instance any more (its generation has passed: the instance left
    /// the registry). `deliver` runs no user code (it only stores a
    /// value), so the registry may stay borrowed meanwhile.
    pub(crate) fn deliver_at(
        &mut self,
        r: u64,
        deliver: impl FnOnce(&N) -> Filled,
    ) -> Result<Option<N>, ()> {
        let i = route_index(r);
        let node = match self.entries.get(i as usize) {
            Some(e) if route(i, e.0) == r => e.1.as_ref().ok_or(())?,
            _ => return Err(()),
        };
        if deliver(node) != Filled::Complete {
            return Ok(None);
        }
        Ok(self.vacate(i))
    }

    /// Instances pending here.
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

impl<N: Held> Drop for Registry<N> {
    fn drop(&mut self) {
        // The core's thread is exiting (its runtime shut down): empty every
        // instance still pending here, bodies and values with them. A drop
        // that signals again finds the registry gone (`with` returns None).
        for e in std::mem::take(&mut self.entries)
            .into_iter()
            .filter_map(|e| e.1)
        {
            e.empty();
        }
    }
}

/// Instances pending on the calling core (0 off the cores).
pub(crate) fn pending_here() -> usize {
    with(|r| r.len()).unwrap_or(0)
}
