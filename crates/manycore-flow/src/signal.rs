//! The continuation signal: a value for one slot of an instance, from a
//! thread of a given mode, claimed on the instance's claim word and
//! delivered on its owner core. The protocol is in `README.md` beside this
//! file.

use crate::claims::Claim;
use crate::error::{SignalError, SignalErrorKind};
use crate::here;
use crate::mode::ModeKind;
use crate::node::{Delivered, NodeRef};
use crate::percore;
use crate::ready;
use crate::registry;

/// A continuation signal from a thread of mode `from`: value `value` for
/// slot `slot` of the instance `node` (whose inputs are of type `T`).
#[inline]
pub(crate) fn signal<T: Send + 'static>(
    from: ModeKind,
    node: &NodeRef,
    slot: usize,
    value: T,
) -> Result<(), SignalError<T>> {
    let refuse = |kind, value| Err(SignalError::new(kind, slot, value));
    let frame = node.frame();
    if slot >= frame.inputs {
        return refuse(SignalErrorKind::NoSuchSlot, Some(value));
    }
    if !from.may_continue_to(frame.mode) {
        let kind = SignalErrorKind::ModeViolation {
            from,
            to: frame.mode,
        };
        return refuse(kind, Some(value));
    }
    match frame.claims.claim(slot) {
        Claim::Filled => refuse(SignalErrorKind::AlreadyFilled, Some(value)),
        Claim::Fired => refuse(SignalErrorKind::Fired, Some(value)),
        Claim::Won if here::is(frame.owner()) => {
            // Local: a plain operation on this core; the firing goes on its
            // ready stack (or queue, outside a body). One visit to the
            // core's context: the registry, then the ready stack; a firing
            // the stack does not take comes back as `Complete`, to be sent.
            let mut v = Some(value);
            let got = percore::with(|pc| match node.deliver(Some(pc), node, slot, &mut v) {
                Delivered::Complete(n) => match ready::push_in(pc, n) {
                    Some(n) => Delivered::Complete(n),
                    None => Delivered::Waiting,
                },
                other => other,
            })
            // The thread is exiting (its context gone): delivered without
            // a registry, fired by a message.
            .unwrap_or_else(|| node.deliver(None, node, slot, &mut v));
            match got {
                Delivered::Waiting => Ok(()),
                Delivered::Complete(n) => {
                    ready::send_home(n);
                    Ok(())
                }
                Delivered::Refused => refuse(SignalErrorKind::Shutdown, v),
            }
        }
        Claim::Won => send(node, slot, value).or_else(|_| refuse(SignalErrorKind::Shutdown, None)),
    }
}

/// A won slot's remote delivery: a cross-core invocation that delivers on
/// the owner and fires there, in the same message. Out of line, so that
/// the local path above stays small where it is inlined.
#[inline(never)]
fn send<T: Send + 'static>(
    node: &NodeRef,
    slot: usize,
    value: T,
) -> Result<(), manycore_rt::InvokeError> {
    let frame = node.frame();
    let owner = frame.owner();
    match frame.entry() {
        // Routed: the instance waits in its owner's registry at `i`, and
        // stays there until this slot is delivered, so (index, address)
        // names it there and the message needs no counted reference (no
        // read-modify-write of the count here, none on the owner).
        Some(i) => {
            let addr = node.addr();
            owner.spawn(move || deliver_routed(i, addr, slot, value))
        }
        // Not yet in a registry (made elsewhere, not collected): the
        // message carries a counted reference.
        None => {
            let n = node.clone();
            owner.spawn(move || {
                let mut v = Some(value);
                let got = percore::with(|pc| n.deliver(Some(pc), &n, slot, &mut v));
                let got = got.unwrap_or_else(|| n.deliver(None, &n, slot, &mut v));
                if let Delivered::Complete(c) = got {
                    // `c` (the registry's reference) is this thread's
                    // alone: the message's is dropped beside it, with no
                    // read-modify-write if the two are all there is.
                    n.drop_beside_held(true);
                    ready::run(move || c.start(&c));
                }
            })
        }
    }
}

/// On the owner core: a routed delivery of `value` to slot `slot` of the
/// instance at registry index `i` and address `addr`. The sender won the
/// slot while the instance was registered there, and an instance leaves
/// its registry only once every slot is delivered (or when its core's
/// thread exits, after which no message runs there), so the entry is that
/// instance; a mismatch (impossible by the protocol) drops the value, as a
/// delivery to an instance emptied at shutdown does. The instance stays in
/// its entry while it waits; the delivery that completes it takes it out,
/// and the registry's reference runs it.
fn deliver_routed<T: Send + 'static>(i: u32, addr: usize, slot: usize, value: T) {
    let mut v = Some(value);
    // One visit to the core's context: the registry, then the drain.
    percore::with(|pc| {
        let complete = registry::with_in(pc, |r| {
            r.deliver_at(i, addr, |n| n.deliver_out(slot, &mut v))
        });
        if let Some(n) = complete.flatten() {
            ready::run_in(pc, move || n.start(&n));
        }
    });
    // A value refused (never, by the protocol) is dropped here, outside
    // the registry.
    drop(v);
}
