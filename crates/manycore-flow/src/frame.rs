//! `Frame`: the part of an instance that every holder of a handle reads:
//! where it lives (its owner core), its mode, its number of inputs and its
//! claim word. It is the head of the instance's one allocation (a
//! [`Node`](crate::node::Node)), whose owner half only the owner core
//! touches.

use crate::claims::Claims;
use crate::mode::ModeKind;
use manycore_rt::Core;
use manycore_sync::atomic::{AtomicBool, Ordering};

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
}

impl Frame {
    #[inline]
    pub(crate) fn new(
        owner: Core,
        mode: ModeKind,
        exclusive: bool,
        inputs: usize,
        claims: Claims,
    ) -> Self {
        Self {
            core: Some(owner),
            mode,
            exclusive,
            inputs,
            claims,
            stacked: AtomicBool::new(false),
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
