//! `Frame`: the part of an instance that every holder of a handle reads:
//! where it lives (its owner core), its mode, its number of inputs and its
//! claim word. It is the head of the instance's one allocation (a
//! [`Node`](crate::node::Node)), whose owner half only the owner core
//! touches.

use crate::claims::Claims;
use crate::mode::ModeKind;
use manycore_rt::Core;
use std::sync::Arc;

/// The shared record of one instance.
pub(crate) struct Frame {
    /// The owner core (shared by the frames made on it: `here::owner`).
    pub(crate) owner: Arc<Core>,
    pub(crate) mode: ModeKind,
    pub(crate) inputs: usize,
    pub(crate) claims: Claims,
}
