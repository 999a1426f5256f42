//! `Frame`: the part of an instance that every holder of a handle reads:
//! where it lives (its owner core), its mode, its number of inputs and its
//! claim word. It is the head of the instance's one allocation (a
//! [`Node`](crate::node::Node)), whose owner half only the owner core
//! touches.

use crate::claims::Claims;
use crate::mode::ModeKind;
use manycore_rt::Core;
use manycore_sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The shared record of one instance.
pub(crate) struct Frame {
    /// The owner core; taken out only when the instance is dropped, to be
    /// recycled (`here::recycle`).
    core: Option<Core>,
    pub(crate) mode: ModeKind,
    /// An instance of an exclusive template (one behind a gate).
    pub(crate) exclusive: bool,
    pub(crate) inputs: usize,
    pub(crate) claims: Claims,
    /// The owner core's ready stack holds a reference to the instance. Set
    /// and cleared by the owner core's thread only (`ready.rs`, as it
    /// pushes and takes off), so it is exact when read there; another
    /// thread may read anything, and must not rely on it (a handle's drop
    /// reads it only after checking it runs on the owner, `raw/shared.rs`).
    /// Relaxed: only the owner's own reads matter, which program order
    /// orders.
    stacked: AtomicBool,
    /// The instance's index in its owner core's registry, once it has one
    /// (`NO_ENTRY` before: made on another thread and not collected yet).
    /// Written by the owner core's thread only, when it puts the instance
    /// in its registry; read by a remote sender that has won a slot, which
    /// then names the instance to its owner by (index, address) instead of
    /// sending a counted reference (the README's "routed delivery").
    /// Relaxed: a sender that reads `NO_ENTRY` takes the counted path, and
    /// any other value it can read is the instance's one index for as long
    /// as a won slot is undelivered (the entry changes only after every
    /// slot is delivered).
    entry: AtomicU32,
}

/// No registry index known (see [`Frame::entry`]).
pub(crate) const NO_ENTRY: u32 = u32::MAX;

impl Frame {
    #[inline]
    pub(crate) fn new(
        owner: Core,
        mode: ModeKind,
        exclusive: bool,
        inputs: usize,
        claims: Claims,
        entry: u32,
    ) -> Self {
        Self {
            core: Some(owner),
            mode,
            exclusive,
            inputs,
            claims,
            stacked: AtomicBool::new(false),
            entry: AtomicU32::new(entry),
        }
    }

    /// Marks (or unmarks) the instance as held by its owner's ready stack
    /// (on the owner core's thread only).
    #[inline]
    pub(crate) fn set_stacked(&self, on: bool) {
        self.stacked.store(on, Ordering::Relaxed);
    }

    /// True on the owner core's thread while its ready stack holds the
    /// instance; on any other thread, meaningless.
    #[inline]
    pub(crate) fn stacked(&self) -> bool {
        self.stacked.load(Ordering::Relaxed)
    }

    /// Records the instance's registry index (on the owner core's thread,
    /// as it puts the instance in its registry).
    #[inline]
    pub(crate) fn set_entry(&self, i: u32) {
        self.entry.store(i, Ordering::Relaxed);
    }

    /// The instance's registry index, if its owner has recorded one. Read
    /// by a sender that has won a slot, it is the index the instance stays
    /// at until that slot is delivered.
    #[inline]
    pub(crate) fn entry(&self) -> Option<u32> {
        let i = self.entry.load(Ordering::Relaxed);
        (i != NO_ENTRY).then_some(i)
    }

    /// The owner core.
    #[inline]
    pub(crate) fn owner(&self) -> &Core {
        match &self.core {
            Some(c) => c,
            // Only `take_owner` empties it, from the node's `Drop`, after
            // which nothing reads the frame.
            None => unreachable!("a frame's core is taken only when it is dropped"),
        }
    }

    /// Takes the owner core out (the node is being dropped).
    pub(crate) fn take_owner(&mut self) -> Option<Core> {
        self.core.take()
    }
}
