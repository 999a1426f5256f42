//! `Node`: one instance in one allocation: the [`Frame`] every handle reads
//! and the owner's [`Pending`] half (slots, count, body, registry entry) in
//! a cell only the owner core's thread can reach. Handles hold it as a
//! `NodeRef` (a counted reference, `raw/shared.rs`), with the value type in
//! their own type. This module is what happens to an instance: it is made,
//! collected by its owner, receives values, fires, runs, or is emptied at
//! shutdown. The protocol is in `README.md` beside this file.

use crate::claims::{Claims, MAX_INPUTS};
use crate::ctx::RawCtx;
use crate::error::FlowError;
use crate::frame::{Frame, NO_ENTRY};
use crate::gate::{Exclusion, GateGuard};
use crate::here;
use crate::mode::ModeKind;
use crate::pending::{Body, Entry, Pending, SELF_CONTINUATION_BOUND};
use crate::percore::PerCore;
use crate::raw::owner_cell::{Owner, OwnerCell};
use crate::raw::shared::{Block, Shared};
use crate::raw::slot_vec::SlotVec;
use crate::ready;
use crate::registry;
use manycore_rt::Core;
use std::any::Any;
use std::cell::RefCell;

/// A counted reference to an instance: what handles, registries, ready
/// stacks, messages and gate queues hold.
pub(crate) type NodeRef = Shared<dyn AnyNode>;

/// An instance with its value and body types erased.
pub(crate) trait AnyNode: Send + Sync + 'static {
    /// The shared record.
    fn frame(&self) -> &Frame;
    /// On the owner: puts the value in `value` (an `Option<T>` of the
    /// instance's `T`) into slot `slot`. `this` is this node's own handle.
    /// `pc` is this thread's context (None if the thread is exiting).
    fn deliver(
        &self,
        pc: Option<&PerCore>,
        this: &NodeRef,
        slot: usize,
        value: &mut dyn Any,
    ) -> Delivered;
    /// On the owner, for a routed delivery: puts the value in `value` (an
    /// `Option<T>`) into slot `slot` and says whether the instance is now
    /// complete. Touches no registry and runs no user code (its caller
    /// holds the registry, and takes the instance out if it completes).
    fn deliver_out(&self, slot: usize, value: &mut dyn Any) -> Filled;
    /// On the owner: fires (runs the body, through the gate if it has one).
    /// `this` is this node's own handle.
    fn start(&self, this: &NodeRef);
    /// On the owner: runs the body with the gate a release handed to it.
    fn resume(&self, guard: GateGuard);
    /// On the owner: takes a node made elsewhere into the registry, unless
    /// it has fired already. `this` is this node's own handle.
    fn collect(&self, this: &NodeRef);
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
    Complete(NodeRef),
    /// The value could not be put in (wrong type, not the owner's thread,
    /// no such slot, the instance dropped at shutdown): it is still in the
    /// `Option` it came in.
    Refused,
}

/// What a routed delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filled {
    /// The value is in; others are still missing.
    Waiting,
    /// The value was the last one: the instance must fire.
    Complete,
    /// The value could not be put in (as for [`Delivered::Refused`]).
    Refused,
}

/// One instance: inputs of type `T`, body `B`.
pub(crate) struct Node<T, B> {
    frame: Frame,
    half: OwnerCell<Pending<T, B>>,
}

/// Creates an instance on core `on` and returns a handle to it. With
/// `given`, every input is there at once (and so with no inputs): it fires
/// (on `on`). Otherwise it waits in `on`'s registry for its signals.
pub(crate) fn create<T: Send + 'static, B: Body<T>>(
    on: &Core,
    mode: ModeKind,
    inputs: usize,
    given: Option<Vec<T>>,
    body: B,
) -> Result<NodeRef, FlowError> {
    // The block first, so that the node is built in it (see `Block`); if
    // `make` refuses, the block goes back.
    let block = Block::new();
    let (node, ready, local) = make(on, mode, inputs, given, body)?;
    // Two references made at once: the handle, and the registry's or the
    // message's.
    let (node, other) = Shared::pair_node_in(block, node);
    if ready {
        fire(on, other, local)?;
        return Ok(node);
    }
    if local {
        // Straight into this core's registry, at the entry `make` recorded.
        let kept = registry::with(|r| r.insert(other));
        debug_assert_eq!(kept.map(Entry::At), Some(node.entry()));
        kept.ok_or(FlowError::Shutdown)?;
        return Ok(node);
    }
    // Made elsewhere: tell the owner to collect it. If the message is
    // dropped unrun (the runtime closed), the guard drops the owner half, so
    // nothing waits on it forever.
    let c = Collect(other);
    on.spawn(move || c.0.collect(&c.0))
        .map_err(|_| FlowError::Shutdown)?;
    Ok(node)
}

/// Creates an instance on core `on` with all its inputs (`given`, or none
/// declared), which fires there; no handle is kept.
pub(crate) fn start<T: Send + 'static, B: Body<T>>(
    on: &Core,
    mode: ModeKind,
    inputs: usize,
    given: Option<Vec<T>>,
    body: B,
) -> Result<(), FlowError> {
    let given = Some(given.unwrap_or_default());
    let block = Block::new();
    let (node, _, local) = make(on, mode, inputs, given, body)?;
    fire(on, Shared::one_node_in(block, node), local)
}

/// A ready instance made on `on`: fired there, after the running body if
/// that is here.
fn fire(on: &Core, node: NodeRef, local: bool) -> Result<(), FlowError> {
    if local {
        ready::push(node);
        Ok(())
    } else {
        ready::send(on, node).map_err(|_| FlowError::Shutdown)
    }
}

/// The instance itself: (node, whether it is ready, whether `on` is here).
/// A local instance that waits is given the registry entry that the next
/// insertion will take (the caller inserts it before anything else can).
#[inline(always)]
fn make<T: Send + 'static, B: Body<T>>(
    on: &Core,
    mode: ModeKind,
    inputs: usize,
    given: Option<Vec<T>>,
    body: B,
) -> Result<(Node<T, B>, bool, bool), FlowError> {
    if inputs > MAX_INPUTS {
        return Err(FlowError::TooManyInputs { inputs });
    }
    if let Some(v) = &given {
        if v.len() != inputs {
            return Err(FlowError::InputCount {
                expected: inputs,
                got: v.len(),
            });
        }
    }
    let ready = given.is_some() || inputs == 0;
    let local = here::is(on);
    let entry = match (ready, local) {
        (true, _) => Entry::Out,
        (false, true) => Entry::At(registry::with(|r| r.next_index()).ok_or(FlowError::Shutdown)?),
        (false, false) => Entry::Fresh,
    };
    // Every thread-local first, the slot buffer (a call to the allocator)
    // last: nothing is called between making the slots and writing the node,
    // so the compiler need not stage them on the stack.
    let owner = here::owner(on, local);
    let cell = Owner::here_if(local);
    let slots = match given {
        Some(v) => SlotVec::full(v),
        None => SlotVec::new(inputs),
    };
    let claims = if ready {
        Claims::filled(inputs)
    } else {
        Claims::new(inputs)
    };
    let node = Node {
        frame: Frame::new(
            owner,
            mode,
            body.gate().is_some(),
            inputs,
            claims,
            match entry {
                Entry::At(i) => i,
                Entry::Fresh | Entry::Out => NO_ENTRY,
            },
        ),
        half: OwnerCell::new_owned(
            cell,
            Pending {
                slots,
                missing: if ready { 0 } else { inputs },
                body: Some(body),
                entry,
                retries: 0,
            },
        ),
    };
    Ok((node, ready, local))
}

/// A creation message: empties its node if the owner never collected it.
struct Collect(NodeRef);

impl Drop for Collect {
    fn drop(&mut self) {
        self.0.clear(true);
    }
}

impl dyn AnyNode {
    /// Registers a fresh node in `r` (owner only).
    fn collect_into(&self, this: &NodeRef, r: &mut registry::Registry) {
        if self.entry() == Entry::Fresh {
            let i = r.insert(this.clone());
            self.set_entry(Entry::At(i));
        }
    }
}

impl<T: Send + 'static, B: Body<T>> Node<T, B> {
    /// Runs the body with the values; `guard` is the gate it holds, if any.
    /// The guard is released when the body returns (or unwinds), unless the
    /// body took it with [`Ctx::hold_gate`](crate::Ctx::hold_gate).
    fn run(&self, guard: Option<GateGuard>) {
        let Some((body, values)) = self.half.with(|h| h.take()).flatten() else {
            return;
        };
        // What an exclusive body makes ready goes through the core's queue.
        let _gated = guard.as_ref().map(|_| ready::UnderGate::enter());
        let hold = RefCell::new(guard);
        let raw = RawCtx::new(self.frame.owner(), self.frame.mode, &hold);
        body.run(raw, values);
    }
}

impl<T, B> Drop for Node<T, B> {
    fn drop(&mut self) {
        if let Some(core) = self.frame.take_owner() {
            here::recycle(core);
        }
    }
}

impl<T: Send + 'static, B: Body<T>> AnyNode for Node<T, B> {
    #[inline]
    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn deliver(
        &self,
        pc: Option<&PerCore>,
        this: &NodeRef,
        slot: usize,
        value: &mut dyn Any,
    ) -> Delivered {
        let Some(value) = value.downcast_mut::<Option<T>>() else {
            return Delivered::Refused;
        };
        self.half
            .with(|h| {
                let Some(missing) = h.put(slot, value) else {
                    return Delivered::Refused;
                };
                let entry = h.entry;
                if missing > 0 {
                    if entry == Entry::Fresh {
                        // Made elsewhere, its creation message not here yet:
                        // a signal overtook it.
                        let put =
                            pc.and_then(|pc| registry::with_in(pc, |r| r.insert(this.clone())));
                        if let Some(i) = put {
                            h.entry = Entry::At(i);
                            self.frame.set_entry(i);
                        }
                    }
                    return Delivered::Waiting;
                }
                h.entry = Entry::Out;
                let out = match entry {
                    Entry::At(i) => pc
                        .and_then(|pc| registry::with_in(pc, |r| r.take(i, this)))
                        .flatten(),
                    Entry::Fresh | Entry::Out => None,
                };
                Delivered::Complete(out.unwrap_or_else(|| this.clone()))
            })
            .unwrap_or(Delivered::Refused)
    }

    fn deliver_out(&self, slot: usize, value: &mut dyn Any) -> Filled {
        let Some(value) = value.downcast_mut::<Option<T>>() else {
            return Filled::Refused;
        };
        self.half
            .with(|h| match h.put(slot, value) {
                None => Filled::Refused,
                Some(0) => {
                    h.entry = Entry::Out;
                    Filled::Complete
                }
                Some(_) => Filled::Waiting,
            })
            .unwrap_or(Filled::Refused)
    }

    fn start(&self, this: &NodeRef) {
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
        if retry {
            // The loser continues to its own start, at the back of its
            // core's queue (FUCE's non-priority thread queue).
            gate.note_self_continuation();
            let _ = ready::send(self.frame.owner(), this.clone());
            return;
        }
        // Wait in the registry (so that shutdown finds it) while the gate's
        // queue holds its name.
        let Some(i) = registry::with(|r| r.insert(this.clone())) else {
            return self.clear(false);
        };
        self.set_entry(Entry::At(i));
        if let Some(guard) = gate.enqueue(this.clone()) {
            // Released meanwhile: it is ours after all.
            resume(this.clone(), guard);
        }
    }

    fn resume(&self, guard: GateGuard) {
        self.run(Some(guard))
    }

    fn collect(&self, this: &NodeRef) {
        if registry::with(|r| this.collect_into(this, r)).is_none() {
            self.clear(true);
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
        if let Entry::At(i) = e {
            self.frame.set_entry(i);
        }
        self.half.with(|h| h.entry = e);
    }
}

/// On the owner core: runs the instance a gate was handed to. If it is gone
/// (dropped at shutdown), the guard drops here and passes the gate on.
pub(crate) fn resume(node: NodeRef, guard: GateGuard) {
    let taken = match node.entry() {
        Entry::At(i) => registry::with(|r| r.take(i, &node)).flatten(),
        _ => None,
    };
    match taken {
        Some(n) => ready::run(move || n.resume(guard)),
        None => drop(guard),
    }
}
