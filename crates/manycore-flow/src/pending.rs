//! `Pending`: the owner core's half of an instance: its input slots, the
//! count of values still missing, its body, and where it is in its owner's
//! registry. It lives inside the instance's allocation, in a cell only the
//! owner core's thread can reach (`raw/owner_cell.rs`). The protocol is in
//! `README.md` beside this file.

use crate::ctx::RawCtx;
use crate::gate::Gate;
use crate::raw::inputs::Inputs;
use crate::raw::slot_vec::SlotVec;
use crate::template::TemplateInner;
use std::sync::Arc;

/// What an instance runs when it fires: a closure of its own, or its
/// template's code (and the template's gate, if it is exclusive).
pub(crate) trait Body<T>: Send + 'static {
    /// Whether instances with this body may have a gate (known per type, so
    /// that a closure's firing never looks).
    const GATED: bool;
    /// The gate, if any.
    fn gate(&self) -> Option<&Gate>;
    /// Runs the body with the values in slot order.
    fn run(self, raw: RawCtx<'_>, values: Inputs<T>);
}

/// A dynamic instance's closure.
pub(crate) struct Once<F>(pub(crate) F);

impl<T, F> Body<T> for Once<F>
where
    F: for<'a> FnOnce(RawCtx<'a>, Inputs<T>) + Send + 'static,
{
    const GATED: bool = false;

    fn gate(&self) -> Option<&Gate> {
        None
    }

    #[inline]
    fn run(self, raw: RawCtx<'_>, values: Inputs<T>) {
        (self.0)(raw, values)
    }
}

impl<T: Send + 'static> Body<T> for Arc<TemplateInner<T>> {
    const GATED: bool = true;

    fn gate(&self) -> Option<&Gate> {
        self.gate.as_ref()
    }

    fn run(self, raw: RawCtx<'_>, values: Inputs<T>) {
        (self.body)(raw, values)
    }
}

/// Where an owner half is, for its owner's registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Made on another thread and not collected by its owner yet.
    Fresh,
    /// In the owner's registry, at this index.
    At(u32),
    /// Out of the registry: ready to run, running, ran, or dropped.
    Out,
}

/// The owner half of an instance with inputs of type `T` and body `B`.
pub(crate) struct Pending<T, B> {
    pub(crate) slots: SlotVec<T>,
    pub(crate) missing: usize,
    /// `None` once the instance has run (or was dropped at shutdown).
    pub(crate) body: Option<B>,
    pub(crate) entry: Entry,
    /// Self-continuations in a row (see [`SELF_CONTINUATION_BOUND`]).
    pub(crate) retries: u32,
}

/// Self-continuations in a row after which an instance stops retrying and
/// waits in the gate's queue instead. Nothing in manycore spins without a
/// bound: a gate that is never released would otherwise keep the loser's
/// core busy forever, and `Runtime::shutdown` (which lets work in flight
/// finish) waiting for it. Far above what a gate held for the length of a
/// body or a device round trip costs, so the paper's experiment is
/// unaffected.
pub(crate) const SELF_CONTINUATION_BOUND: u32 = 1 << 16;

impl<T, B> Pending<T, B> {
    /// Takes the body and the values out to run them; `None` if the body is
    /// gone or a value is missing (neither happens to an instance that
    /// fires by the protocol).
    pub(crate) fn take(&mut self) -> Option<(B, Inputs<T>)> {
        if !self.slots.is_full() {
            return None;
        }
        let body = self.body.take()?;
        let slots = std::mem::replace(&mut self.slots, SlotVec::new(0));
        self.entry = Entry::Out;
        match slots.into_inputs() {
            Ok(v) => Some((body, v)),
            Err(_) => None,
        }
    }

    /// Puts the value in `value` into slot `slot`: `Some(missing)`, the
    /// inputs still missing after it, or `None` with the value left in
    /// `value` (the body is gone, there is no value, or the slot is taken
    /// or out of range).
    #[inline]
    pub(crate) fn put(&mut self, slot: usize, value: &mut Option<T>) -> Option<usize> {
        self.body.as_ref()?;
        let v = value.take()?;
        if let Err(v) = self.slots.put(slot, v) {
            *value = Some(v);
            return None;
        }
        self.missing = self.missing.saturating_sub(1);
        Some(self.missing)
    }

    /// Takes everything the instance holds, to be dropped by the caller
    /// (after the cell is released: dropping a body runs user code).
    pub(crate) fn empty(&mut self) -> (Option<B>, SlotVec<T>) {
        self.entry = Entry::Out;
        (
            self.body.take(),
            std::mem::replace(&mut self.slots, SlotVec::new(0)),
        )
    }
}
