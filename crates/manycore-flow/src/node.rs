//! `Node`: one instance in one allocation: the [`Frame`] every handle reads
//! and the owner's [`Pending`] half (slots, count, body, registry entry) in
//! a cell only the owner core's thread can reach. Handles hold it as an
//! `Arc<dyn AnyNode>`, with the value type in their own type; this module
//! is what happens to an instance on its owner core: it is collected,
//! receives values, fires, runs, or is dropped at shutdown. The protocol is
//! in `README.md` beside this file.

use crate::claims::{Claims, MAX_INPUTS};
use crate::ctx::RawCtx;
use crate::error::FlowError;
use crate::frame::Frame;
use crate::gate::{Exclusion, GateGuard};
use crate::here;
use crate::mode::ModeKind;
use crate::pending::{Body, Entry, Pending, SELF_CONTINUATION_BOUND};
use crate::raw::owner_cell::OwnerCell;
use crate::raw::slot_vec::SlotVec;
use crate::ready;
use crate::registry;
use manycore_rt::Core;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// An instance with its value and body types erased.
pub(crate) trait AnyNode: Send + Sync + 'static {
    /// The shared record.
    fn frame(&self) -> &Frame;
    /// On the owner: puts the value in `value` (an `Option<T>` of the
    /// instance's `T`) into slot `slot`. `this` is this node's own handle.
    fn deliver(&self, this: &Arc<dyn AnyNode>, slot: usize, value: &mut dyn Any) -> Delivered;
    /// On the owner: fires (runs the body, through the gate if it has one).
    fn start(self: Arc<Self>);
    /// On the owner: runs the body with the gate a release handed to it.
    fn resume(self: Arc<Self>, guard: GateGuard);
    /// On the owner: takes a node made elsewhere into the registry, unless
    /// it has fired already.
    fn collect(self: Arc<Self>);
    /// Drops the body and the values, if this thread may reach them and the
    /// node is not in a registry (`only_fresh`) or in any case.
    fn clear(&self, only_fresh: bool);
    /// The registry entry (owner only; `Out` elsewhere).
    fn entry(&self) -> Entry;
    /// Records the registry entry (owner only).
    fn set_entry(&self, e: Entry);
}

/// What a delivery did.
pub(crate) enum Delivered {
    /// The value is in; others are still missing.
    Waiting,
    /// The value was the last one: the instance is out of the registry and
    /// must fire (through this handle).
    Complete(Arc<dyn AnyNode>),
    /// The value could not be put in (wrong type, not the owner's thread,
    /// no such slot, the instance dropped at shutdown): it is still in the
    /// `Option` it came in.
    Refused,
}

/// One instance: inputs of type `T`, body `B`.
pub(crate) struct Node<T, B> {
    frame: Frame,
    half: OwnerCell<Pending<T, B>>,
}

/// Creates an instance on core `on`. With `given`, every input is there at
/// once (and so with no inputs): it fires (on `on`). Otherwise it waits in
/// `on`'s registry for its signals.
pub(crate) fn create<T: Send + 'static, B: Body<T>>(
    on: &Core,
    mode: ModeKind,
    inputs: usize,
    given: Option<Vec<T>>,
    body: B,
) -> Result<Arc<dyn AnyNode>, FlowError> {
    if inputs > MAX_INPUTS {
        return Err(FlowError::TooManyInputs { inputs });
    }
    let ready = given.is_some() || inputs == 0;
    let slots = match given {
        Some(v) if v.len() != inputs => {
            return Err(FlowError::InputCount {
                expected: inputs,
                got: v.len(),
            })
        }
        Some(v) => SlotVec::full(v),
        None => SlotVec::new(inputs),
    };
    let claims = if ready {
        Claims::filled(inputs)
    } else {
        Claims::new(inputs)
    };
    let local = here::is(on);
    let half = Pending {
        slots,
        missing: if ready { 0 } else { inputs },
        body: Some(body),
        entry: if ready { Entry::Out } else { Entry::Fresh },
        retries: 0,
    };
    let frame = Frame {
        owner: here::owner(on, local),
        mode,
        inputs,
        claims,
    };
    if ready {
        let node = Node::make(frame, half, local);
        if local {
            ready::push(node.clone());
        } else {
            ready::send(on, node.clone()).map_err(|_| FlowError::Shutdown)?;
        }
        return Ok(node);
    }
    if local {
        // Straight into this core's registry, at the entry it will have.
        let mut parts = Some((frame, half));
        return registry::with(|r| {
            let (frame, mut half) = parts.take()?;
            half.entry = Entry::At(r.next_index());
            let node = Node::make(frame, half, true);
            r.insert(node.clone());
            Some(node)
        })
        .flatten()
        .ok_or(FlowError::Shutdown);
    }
    // Made elsewhere: tell the owner to collect it. If the message is
    // dropped unrun (the runtime closed), the guard drops the owner half, so
    // nothing waits on it forever.
    let node = Node::make(frame, half, false);
    let c = Collect(node.clone());
    on.spawn(move || c.0.clone().collect())
        .map_err(|_| FlowError::Shutdown)?;
    Ok(node)
}

/// A creation message: empties its node if the owner never collected it.
struct Collect(Arc<dyn AnyNode>);

impl Drop for Collect {
    fn drop(&mut self) {
        self.0.clear(true);
    }
}

impl dyn AnyNode {
    /// Registers a fresh node in `r` (owner only).
    fn collect_into(self: Arc<Self>, r: &mut registry::Registry) {
        if self.entry() == Entry::Fresh {
            let i = r.insert(self.clone());
            self.set_entry(Entry::At(i));
        }
    }
}

impl<T: Send + 'static, B: Body<T>> Node<T, B> {
    /// The node, its owner half bound to this thread if it is `local`.
    fn make(frame: Frame, half: Pending<T, B>, local: bool) -> Arc<dyn AnyNode> {
        let half = if local {
            OwnerCell::new_here(half)
        } else {
            OwnerCell::new(half)
        };
        Arc::new(Node { frame, half })
    }

    /// Runs the body with the values; `guard` is the gate it holds, if any.
    /// The guard is released when the body returns (or unwinds), unless the
    /// body took it with [`Ctx::hold_gate`](crate::Ctx::hold_gate).
    fn run(&self, guard: Option<GateGuard>) {
        let Some((body, values)) = self.half.with(|h| h.take()).flatten() else {
            return;
        };
        let hold = RefCell::new(guard);
        let raw = RawCtx::new(&self.frame.owner, self.frame.mode, &hold);
        body.run(raw, values);
    }
}

impl<T: Send + 'static, B: Body<T>> AnyNode for Node<T, B> {
    #[inline]
    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn deliver(&self, this: &Arc<dyn AnyNode>, slot: usize, value: &mut dyn Any) -> Delivered {
        let Some(value) = value.downcast_mut::<Option<T>>() else {
            return Delivered::Refused;
        };
        self.half
            .with(|h| {
                if h.body.is_none() {
                    return Delivered::Refused;
                }
                let Some(v) = value.take() else {
                    return Delivered::Refused;
                };
                if let Err(v) = h.slots.put(slot, v) {
                    *value = Some(v);
                    return Delivered::Refused;
                }
                h.missing = h.missing.saturating_sub(1);
                let entry = h.entry;
                if h.missing > 0 {
                    if entry == Entry::Fresh {
                        // Made elsewhere, its creation message not here yet:
                        // a signal overtook it.
                        if let Some(i) = registry::with(|r| r.insert(this.clone())) {
                            h.entry = Entry::At(i);
                        }
                    }
                    return Delivered::Waiting;
                }
                h.entry = Entry::Out;
                let out = match entry {
                    Entry::At(i) => registry::with(|r| r.take(i, this)).flatten(),
                    Entry::Fresh | Entry::Out => None,
                };
                Delivered::Complete(out.unwrap_or_else(|| this.clone()))
            })
            .unwrap_or(Delivered::Refused)
    }

    fn start(self: Arc<Self>) {
        if !B::GATED {
            return self.run(None);
        }
        let gate = self
            .half
            .with(|h| h.body.as_ref().and_then(|b| b.gate()).cloned())
            .flatten();
        let Some(gate) = gate else {
            return self.run(None);
        };
        if let Some(guard) = gate.try_enter() {
            return self.run(Some(guard));
        }
        let retry = self
            .half
            .with(|h| {
                let retry = gate.policy() == Exclusion::SelfContinuation
                    && h.retries < SELF_CONTINUATION_BOUND;
                if retry {
                    h.retries += 1;
                }
                retry
            })
            .unwrap_or(false);
        let this: Arc<dyn AnyNode> = self;
        if retry {
            // The loser continues to its own start, at the back of its
            // core's queue (FUCE's non-priority thread queue).
            gate.note_self_continuation();
            let owner = this.frame().owner.clone();
            let _ = ready::send(&owner, this);
            return;
        }
        // Wait in the registry (so that shutdown finds it) while the gate's
        // queue holds its name.
        let Some(i) = registry::with(|r| r.insert(this.clone())) else {
            return this.clear(false);
        };
        this.set_entry(Entry::At(i));
        if let Some(guard) = gate.enqueue(this.clone()) {
            // Released meanwhile: it is ours after all.
            resume(this, guard);
        }
    }

    fn resume(self: Arc<Self>, guard: GateGuard) {
        self.run(Some(guard))
    }

    fn collect(self: Arc<Self>) {
        let this: Arc<dyn AnyNode> = self;
        if registry::with(|r| this.clone().collect_into(r)).is_none() {
            this.clear(true);
        }
    }

    fn clear(&self, only_fresh: bool) {
        let taken = self.half.with(|h| {
            if only_fresh && h.entry != Entry::Fresh {
                return None;
            }
            Some(h.empty())
        });
        // Dropped here, outside the cell: a body's captures may signal.
        drop(taken);
    }

    fn entry(&self) -> Entry {
        self.half.with(|h| h.entry).unwrap_or(Entry::Out)
    }

    fn set_entry(&self, e: Entry) {
        self.half.with(|h| h.entry = e);
    }
}

/// On the owner core: runs the instance a gate was handed to. If it is gone
/// (dropped at shutdown), the guard drops here and passes the gate on.
pub(crate) fn resume(node: Arc<dyn AnyNode>, guard: GateGuard) {
    let taken = match node.entry() {
        Entry::At(i) => registry::with(|r| r.take(i, &node)).flatten(),
        _ => None,
    };
    match taken {
        Some(n) => ready::run(move || n.resume(guard)),
        None => drop(guard),
    }
}
