//! `Registry`: a core's table of its pending instances, a thread-local on
//! the core's thread, touched only by that thread. An instance's entry is
//! the reference its owner keeps while it waits for signals (or for a
//! gate); the index is recorded in the instance's owner half.
//!
//! It is how shutdown reaches pending instances: when a core's thread
//! exits, its registry empties every instance in it (bodies and values),
//! so whatever waited on those instances (an [`Outcome`](crate::Outcome))
//! learns at once that they will never fire, even while handles to them
//! are still held elsewhere.

use crate::node::{Filled, NodeRef};
use crate::percore::{self, PerCore};
use crate::raw::shared::Shared;

/// Pending instances of one core.
pub(crate) struct Registry {
    entries: Vec<Option<NodeRef>>,
    free: Vec<u32>,
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

impl Registry {
    /// An empty registry.
    pub(crate) const fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The index the next `insert` will use.
    pub(crate) fn next_index(&self) -> u32 {
        match self.free.last() {
            Some(&i) => i,
            None => self.entries.len() as u32,
        }
    }

    /// Adds `node`; returns its index (for the node to record).
    pub(crate) fn insert(&mut self, node: NodeRef) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = Some(node);
                i
            }
            None => {
                self.entries.push(Some(node));
                (self.entries.len() - 1) as u32
            }
        }
    }

    /// Removes and returns the entry at `i` if it is `node`.
    pub(crate) fn take(&mut self, i: u32, node: &NodeRef) -> Option<NodeRef> {
        let slot = self.entries.get_mut(i as usize)?;
        if !slot.as_ref().is_some_and(|e| Shared::ptr_eq(e, node)) {
            return None;
        }
        self.free.push(i);
        slot.take()
    }

    /// A routed delivery: runs `deliver` on the instance at `i` if it is
    /// the one at address `addr`, and if it says the instance is complete,
    /// takes the instance out and returns it (to fire). `deliver` runs no
    /// user code (it only stores a value), so the registry may stay
    /// borrowed meanwhile.
    pub(crate) fn deliver_at(
        &mut self,
        i: u32,
        addr: usize,
        deliver: impl FnOnce(&NodeRef) -> Filled,
    ) -> Option<NodeRef> {
        let slot = self.entries.get_mut(i as usize)?;
        let node = slot.as_ref().filter(|e| e.addr() == addr)?;
        if deliver(node) != Filled::Complete {
            return None;
        }
        self.free.push(i);
        slot.take()
    }

    /// Instances pending here.
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // The core's thread is exiting (its runtime shut down): empty every
        // instance still pending here, bodies and values with them. A drop
        // that signals again finds the registry gone (`with` returns None).
        for e in std::mem::take(&mut self.entries).into_iter().flatten() {
            e.clear(false);
        }
    }
}

/// Instances pending on the calling core (0 off the cores).
pub(crate) fn pending_here() -> usize {
    with(|r| r.len()).unwrap_or(0)
}
