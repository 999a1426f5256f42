//! `Frame`: the part of an instance that every holder of a handle reads:
//! where it lives (its owner core), its mode, its number of inputs and its
//! claim word. It is the head of the instance's one allocation (a
//! [`Node`](crate::node::Node)), whose owner half only the owner core
//! touches.

use crate::claims::Claims;
use crate::mode::ModeKind;
use manycore_rt::Core;

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
        }
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
