//! The continuation signal: a value for one slot of an instance, from a
//! thread of a given mode, claimed on the instance's claim word and
//! delivered on its owner core. The protocol is in `README.md` beside this
//! file.

use crate::claims::Claim;
use crate::error::{SignalError, SignalErrorKind};
use crate::frame::NO_ENTRY;
use crate::here;
use crate::instance::Dest;
use crate::mode::ModeKind;
use crate::node::{Delivered, Filled, NodeRef};
use crate::percore;
use crate::ready;
use crate::refusal;
use crate::registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A continuation signal from a thread of mode `from`: value `value` for
/// slot `slot` of the instance `node` (whose inputs are of type `T`).
#[inline]
pub(crate) fn signal<T: Send + 'static>(
    from: ModeKind,
    node: &NodeRef,
    dest: &Dest,
    slot: usize,
    value: T,
) -> Result<(), SignalError<T>> {
    signal_tallied(from, node, dest, slot, value, None)
}

/// [`signal`], with a counter that the owner bumps if it refuses the
/// signal (remote only: a local refusal is the `Err`), besides the
/// runtime's log.
#[inline]
pub(crate) fn signal_tallied<T: Send + 'static>(
    from: ModeKind,
    node: &NodeRef,
    dest: &Dest,
    slot: usize,
    value: T,
    tally: Option<&Arc<AtomicU64>>,
) -> Result<(), SignalError<T>> {
    let refuse = |kind, value| Err(SignalError::new(kind, slot, value));
    // The checks and the choice read the handle's copy (`Dest`), not the
    // frame: a remote sender reads nothing of the instance's block.
    if slot >= dest.inputs {
        return refuse(SignalErrorKind::NoSuchSlot, Some(value));
    }
    if !from.may_continue_to(dest.mode) {
        let kind = SignalErrorKind::ModeViolation {
            from,
            to: dest.mode,
        };
        return refuse(kind, Some(value));
    }
    if !here::is_at(dest.rt, dest.core) {
        // Remote: one message; the owner claims the slot when it arrives,
        // and records a refusal there (`refusal.rs`).
        return send(node, dest, slot, value, tally)
            .or_else(|_| refuse(SignalErrorKind::Shutdown, None));
    }
    let frame = node.frame();
    // Local: the claim and the delivery are plain operations on this core;
    // the firing goes on its ready stack (or queue, outside a body).
    match frame.claims.claim(slot) {
        Claim::Filled => refuse(SignalErrorKind::AlreadyFilled, Some(value)),
        Claim::Fired => refuse(SignalErrorKind::Fired, Some(value)),
        Claim::Won => {
            // One visit to the core's context: the registry, then the
            // ready stack.
            let mut v = Some(value);
            let done = percore::with(|pc| match node.deliver(Some(pc), node, slot, &mut v) {
                Delivered::Waiting => true,
                Delivered::Complete(n) => {
                    if let Some(n) = ready::push_in(pc, n) {
                        ready::send_home(n);
                    }
                    true
                }
                Delivered::Refused => false,
            });
            match done {
                Some(true) => Ok(()),
                // The thread is exiting (its context gone): delivered
                // without a registry, fired by a message.
                None => match node.deliver(None, node, slot, &mut v) {
                    Delivered::Waiting => Ok(()),
                    Delivered::Complete(n) => {
                        ready::push(n);
                        Ok(())
                    }
                    Delivered::Refused => refuse(SignalErrorKind::Shutdown, v),
                },
                Some(false) => refuse(SignalErrorKind::Shutdown, v),
            }
        }
    }
}

/// A remote signal: a cross-core invocation that claims the slot on the
/// owner, delivers and fires there, in the same message. The sender reads
/// the frame (owner, route) and writes nothing of the instance. Out of
/// line, so that the local path above stays small where it is inlined.
#[inline(never)]
fn send<T: Send + 'static>(
    node: &NodeRef,
    dest: &Dest,
    slot: usize,
    value: T,
    tally: Option<&Arc<AtomicU64>>,
) -> Result<(), manycore_rt::InvokeError> {
    let go = move |owner: &manycore_rt::Core| send_to(owner, node, dest, slot, value, tally);
    // The owner's `Core` from this thread's table of peers, by index; the
    // frame's only off the runtime's cores.
    here::with_peer(dest.rt, dest.core, go).unwrap_or_else(|go| go(node.frame().owner()))
}

#[inline(always)]
fn send_to<T: Send + 'static>(
    owner: &manycore_rt::Core,
    node: &NodeRef,
    dest: &Dest,
    slot: usize,
    value: T,
    tally: Option<&Arc<AtomicU64>>,
) -> Result<(), manycore_rt::InvokeError> {
    let route = match dest.route {
        NO_ENTRY => node.frame().entry(),
        r => Some(r),
    };
    match route {
        // Routed: the instance was put in its owner's registry under this
        // route; the owner finds it there if it is still there (the same
        // generation), and refuses the signal otherwise. No counted
        // reference: no read-modify-write of the count here or there.
        // (A message without a counter is one the runtime need not drop
        // unrun: no drop glue.)
        Some(r) => match tally {
            None => owner.spawn(move || deliver_routed(r, slot, value, None)),
            Some(t) => {
                let t = t.clone();
                owner.spawn(move || deliver_routed(r, slot, value, Some(t)))
            }
        },
        // Not yet in a registry (made elsewhere, not collected): the
        // message carries a counted reference.
        None => {
            let (n, tally) = (node.clone(), tally.cloned());
            owner.spawn(move || deliver_counted(n, slot, value, tally))
        }
    }
}

/// On the owner core: a remote signal refused; counted in `tally` (the
/// sender's counter, if it gave one) and logged.
fn refused<T: Send + 'static>(
    kind: SignalErrorKind,
    slot: usize,
    value: Option<T>,
    tally: Option<Arc<AtomicU64>>,
) {
    if let Some(t) = tally {
        t.fetch_add(1, Ordering::Relaxed);
    }
    refusal::record(kind, slot, value);
}

/// The refusal a lost claim makes.
fn refusal_of(c: Claim) -> Option<SignalErrorKind> {
    match c {
        Claim::Won => None,
        Claim::Filled => Some(SignalErrorKind::AlreadyFilled),
        Claim::Fired => Some(SignalErrorKind::Fired),
    }
}

/// On the owner core: a remote signal that carries a counted reference.
fn deliver_counted<T: Send + 'static>(
    n: NodeRef,
    slot: usize,
    value: T,
    tally: Option<Arc<AtomicU64>>,
) {
    if let Some(kind) = refusal_of(n.frame().claims.claim(slot)) {
        return refused(kind, slot, Some(value), tally);
    }
    let mut v = Some(value);
    let got = percore::with(|pc| n.deliver(Some(pc), &n, slot, &mut v));
    let got = got.unwrap_or_else(|| n.deliver(None, &n, slot, &mut v));
    if let Delivered::Complete(c) = got {
        // `c` (the registry's reference) is this thread's alone: the
        // message's is dropped beside it, with no read-modify-write if the
        // two are all there is.
        n.drop_beside_held(true);
        ready::run(move || c.start(&c));
    }
}

/// On the owner core: a routed delivery of `value` to slot `slot` of the
/// instance that route `r` (registry index and generation) names. If the
/// entry has another generation, the instance has left the registry (every
/// slot delivered: it fired; or it fired and waits for a gate under a new
/// route): refused, `Fired`. Otherwise the slot is claimed here (the claim
/// word is the owner's alone) and, if won, the value delivered to the
/// instance in its entry; the delivery that completes it takes it out, and
/// the registry's reference runs it.
fn deliver_routed<T: Send + 'static>(r: u64, slot: usize, value: T, tally: Option<Arc<AtomicU64>>) {
    let mut v = Some(value);
    let mut refusal = None;
    // One visit to the core's context: the registry, then the drain.
    percore::with(|pc| {
        let got = registry::with_in(pc, |reg| {
            reg.deliver_at(r, |n| match refusal_of(n.frame().claims.claim(slot)) {
                None => n.deliver_out(slot, &mut v),
                kind => {
                    refusal = kind;
                    Filled::Refused
                }
            })
        });
        match got {
            Some(Ok(Some(n))) => ready::run_in(pc, move || n.start(&n)),
            Some(Err(())) => refusal = Some(SignalErrorKind::Fired),
            _ => {}
        }
    });
    match refusal {
        Some(kind) => refused(kind, slot, v.take(), tally),
        // A value not delivered otherwise (the instance emptied at
        // shutdown) is dropped here, outside the registry.
        None => drop(v),
    }
}
