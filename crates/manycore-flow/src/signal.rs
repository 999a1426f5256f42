//! The continuation signal: a value for one slot of an instance, from a
//! thread of a given mode, claimed on the instance's claim word and
//! delivered on its owner core. The protocol is in `README.md` beside this
//! file.

use crate::claims::Claim;
use crate::error::{SignalError, SignalErrorKind};
use crate::here;
use crate::mode::ModeKind;
use crate::node::{Delivered, NodeRef};
use crate::ready;

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
            // ready stack (or queue, outside a body).
            let mut v = Some(value);
            match node.deliver(node, slot, &mut v) {
                Delivered::Waiting => Ok(()),
                Delivered::Complete(n) => {
                    ready::push(n);
                    Ok(())
                }
                Delivered::Refused => refuse(SignalErrorKind::Shutdown, v),
            }
        }
        Claim::Won => {
            // Remote: a cross-core invocation that delivers on the owner and
            // fires there, in the same message.
            let n = node.clone();
            frame
                .owner()
                .spawn(move || {
                    let mut v = Some(value);
                    if let Delivered::Complete(c) = n.deliver(&n, slot, &mut v) {
                        // `c` (the registry's reference) is this thread's
                        // alone: the message's is dropped beside it, with
                        // no read-modify-write if the two are all there is.
                        n.drop_beside_held(true);
                        ready::run(move || c.start(&c));
                    }
                })
                .or_else(|_| refuse(SignalErrorKind::Shutdown, None))
        }
    }
}
