//! `Frame`: the part of an instance that every holder of a handle shares:
//! where it lives (its owner core), its mode, its claim word, and how its
//! owner finds the rest of it (the owner's half, a `Pending` in the owner's
//! registry). Handles ([`Instance`](crate::Instance),
//! [`Slot`](crate::Slot)) are `Arc<Frame>` plus types.

use crate::claims::Claims;
use crate::mode::ModeKind;
use crate::pending::AnyPending;
use manycore_rt::Core;
use manycore_sync::atomic::{AtomicU32, Ordering};
use manycore_sync::Mutex;

/// `Frame::index` when the owner's registry does not hold the instance.
pub(crate) const UNREGISTERED: u32 = u32::MAX;

/// The shared record of one instance.
pub(crate) struct Frame {
    pub(crate) owner: Core,
    pub(crate) mode: ModeKind,
    pub(crate) inputs: usize,
    pub(crate) claims: Claims,
    /// The instance's entry in its owner's registry. Read and written only
    /// on the owner core's thread (Relaxed loads and stores: no other thread
    /// touches it, the atomic only makes the frame `Sync`).
    index: AtomicU32,
    /// The owner's half of an instance created from another thread, until
    /// the owner takes it into its registry (when the creation message or
    /// the first signal arrives there, whichever comes first: two messages
    /// from different cores are not ordered).
    inbox: Mutex<Option<Box<dyn AnyPending>>>,
}

impl Frame {
    pub(crate) fn new(owner: Core, mode: ModeKind, inputs: usize, claims: Claims) -> Self {
        Self {
            owner,
            mode,
            inputs,
            claims,
            index: AtomicU32::new(UNREGISTERED),
            inbox: Mutex::new(None),
        }
    }

    /// The registry entry (owner core only).
    pub(crate) fn index(&self) -> u32 {
        self.index.load(Ordering::Relaxed)
    }

    /// Records the registry entry (owner core only).
    pub(crate) fn set_index(&self, i: u32) {
        self.index.store(i, Ordering::Relaxed)
    }

    /// Leaves the owner's half here for the owner to collect.
    pub(crate) fn post(&self, p: Box<dyn AnyPending>) {
        *self.inbox.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
    }

    /// Takes the owner's half out of the inbox, if it is there.
    pub(crate) fn collect(&self) -> Option<Box<dyn AnyPending>> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
