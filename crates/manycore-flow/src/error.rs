//! Error types: [`SignalError`] for a continuation signal the target refused,
//! [`FlowError`] for creating instances and waiting for outcomes,
//! [`BuildError`] for a static graph that breaks a rule.

use crate::mode::ModeKind;
use std::fmt;

/// Why a continuation signal was refused; see [`SignalError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignalErrorKind {
    /// The slot was filled already (each slot takes exactly one value).
    AlreadyFilled,
    /// The instance has all its inputs: it has fired, or fires with the
    /// inputs it has. A signal to any of its slots is refused.
    Fired,
    /// The instance has no slot with this index.
    NoSuchSlot,
    /// The sender's mode may not continue to the target's mode (a user
    /// thread continuing directly to a kernel thread).
    ModeViolation {
        /// The sender's mode.
        from: ModeKind,
        /// The target's mode.
        to: ModeKind,
    },
    /// The target's runtime is shut down (or shutting down): the signal
    /// cannot be delivered.
    Shutdown,
}

/// A continuation signal the target instance refused. The sender sees it as
/// the `Err` of `continue_to` / `signal`, together with the value it tried to
/// send (except after [`Shutdown`](SignalErrorKind::Shutdown) from outside
/// the runtime, where the value went down with the message).
pub struct SignalError<T> {
    kind: SignalErrorKind,
    slot: usize,
    value: Option<T>,
}

impl<T> SignalError<T> {
    pub(crate) fn new(kind: SignalErrorKind, slot: usize, value: Option<T>) -> Self {
        Self { kind, slot, value }
    }

    /// Why the signal was refused.
    pub fn kind(&self) -> SignalErrorKind {
        self.kind
    }

    /// The slot the signal was for.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The value the signal carried, given back.
    pub fn into_value(self) -> Option<T> {
        self.value
    }
}

impl<T> fmt::Debug for SignalError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignalError")
            .field("kind", &self.kind)
            .field("slot", &self.slot)
            .field("value", &self.value.as_ref().map(|_| ".."))
            .finish()
    }
}

impl<T> fmt::Display for SignalError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.slot;
        match self.kind {
            SignalErrorKind::AlreadyFilled => write!(f, "slot {s} is filled already"),
            SignalErrorKind::Fired => write!(f, "signal to slot {s} of an instance that has fired"),
            SignalErrorKind::NoSuchSlot => write!(f, "the instance has no slot {s}"),
            SignalErrorKind::ModeViolation { from, to } => {
                write!(f, "a {from} thread may not continue to a {to} thread")
            }
            SignalErrorKind::Shutdown => write!(f, "signal to slot {s}: the runtime is shut down"),
        }
    }
}

impl<T> std::error::Error for SignalError<T> {}

/// What can go wrong creating instances, running graphs, or waiting for an
/// [`Outcome`](crate::Outcome).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlowError {
    /// The runtime is shut down, or shut down while the awaited instances
    /// were still pending (they are dropped, never run).
    Shutdown,
    /// A bounded wait ran out first.
    Timeout,
    /// A body panicked (the message is the panic's payload, if a string).
    /// The core that ran it lives on.
    Panicked(String),
    /// More inputs than an instance can have ([`MAX_INPUTS`](crate::MAX_INPUTS)).
    TooManyInputs {
        /// The inputs asked for.
        inputs: usize,
    },
    /// A number of values that does not match the number of inputs.
    InputCount {
        /// The inputs declared.
        expected: usize,
        /// The values given.
        got: usize,
    },
    /// A placement names a core the runtime does not have.
    NoSuchCore {
        /// The index asked for.
        index: usize,
        /// The cores there are.
        cores: usize,
    },
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowError::Shutdown => f.write_str("the runtime is shut down"),
            FlowError::Timeout => f.write_str("the wait timed out"),
            FlowError::Panicked(m) => write!(f, "a thread body panicked: {m}"),
            FlowError::TooManyInputs { inputs } => write!(
                f,
                "{inputs} inputs; an instance has at most {}",
                crate::MAX_INPUTS
            ),
            FlowError::InputCount { expected, got } => {
                write!(f, "{got} values for {expected} inputs")
            }
            FlowError::NoSuchCore { index, cores } => {
                write!(f, "no core {index}: the runtime has {cores}")
            }
        }
    }
}

impl std::error::Error for FlowError {}

/// A static graph that breaks a rule; see
/// [`GraphBuilder::build`](crate::GraphBuilder::build). Nodes are named by
/// their [`NodeId`](crate::NodeId) index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// An edge or input names a node that does not exist.
    NoSuchNode(usize),
    /// An edge or input names a slot the node does not have.
    NoSuchSlot {
        /// The node.
        node: usize,
        /// The slot.
        slot: usize,
    },
    /// Two producers feed one slot (it would be filled twice).
    SlotFedTwice {
        /// The node.
        node: usize,
        /// The slot.
        slot: usize,
    },
    /// Nothing feeds a slot (the node would never fire).
    SlotUnfed {
        /// The node.
        node: usize,
        /// The slot.
        slot: usize,
    },
    /// An edge from a thread to one its mode may not continue to. `from` is
    /// `None` for a graph input (the user-mode caller).
    ModeViolation {
        /// The producing node (`None`: a graph input).
        from: Option<usize>,
        /// The consuming node.
        to: usize,
        /// The producer's mode.
        from_mode: ModeKind,
        /// The consumer's mode.
        to_mode: ModeKind,
    },
    /// The edges form a cycle through this node: a zero-wait thread would
    /// have to fire again.
    Cycle(usize),
    /// A node with more inputs than [`MAX_INPUTS`](crate::MAX_INPUTS).
    TooManyInputs(usize),
    /// The graph has no outputs (nothing to wait for).
    NoOutputs,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NoSuchNode(n) => write!(f, "no node {n}"),
            BuildError::NoSuchSlot { node, slot } => write!(f, "node {node} has no slot {slot}"),
            BuildError::SlotFedTwice { node, slot } => {
                write!(f, "slot {slot} of node {node} has two producers")
            }
            BuildError::SlotUnfed { node, slot } => {
                write!(f, "slot {slot} of node {node} has no producer")
            }
            BuildError::ModeViolation {
                from,
                to,
                from_mode,
                to_mode,
            } => {
                match from {
                    Some(n) => write!(f, "node {n} ({from_mode})")?,
                    None => write!(f, "a graph input ({from_mode})")?,
                }
                write!(f, " may not continue to node {to} ({to_mode})")
            }
            BuildError::Cycle(n) => write!(f, "the graph has a cycle through node {n}"),
            BuildError::TooManyInputs(n) => {
                write!(f, "node {n} has more than {} inputs", crate::MAX_INPUTS)
            }
            BuildError::NoOutputs => f.write_str("the graph has no outputs"),
        }
    }
}

impl std::error::Error for BuildError {}
