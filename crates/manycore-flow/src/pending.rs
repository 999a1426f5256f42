//! `Pending`: the owner core's half of an instance (its input slots, the
//! count of values still missing, its body), and the three things that
//! happen to it: it is created, it receives continuation signals, it fires.
//! The protocol is in `README.md` beside this file.

use crate::claims::{Claim, Claims, MAX_INPUTS};
use crate::ctx::RawCtx;
use crate::error::{FlowError, SignalError, SignalErrorKind};
use crate::frame::Frame;
use crate::gate::{Exclusion, GateGuard};
use crate::here;
use crate::mode::ModeKind;
use crate::registry;
use crate::template::TemplateInner;
use manycore_rt::Core;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// A body that runs once (a dynamic instance's closure).
pub(crate) type OnceBody<T> = Box<dyn for<'a> FnOnce(RawCtx<'a>, Vec<T>) + Send>;

/// What an instance runs when it fires.
pub(crate) enum Body<T> {
    /// Its own closure.
    Once(OnceBody<T>),
    /// Its template's code (and the template's gate, if it is exclusive).
    Template(Arc<TemplateInner<T>>),
}

/// An owner half, with its value type erased (a registry holds instances of
/// every type).
pub(crate) trait AnyPending: Send + 'static {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Fires: runs the body (through the gate if the template has one).
    fn start(self: Box<Self>);
    /// Runs the body with the gate handed to it by a release.
    fn resume(self: Box<Self>, guard: GateGuard);
}

/// The owner half of an instance with inputs of type `T`.
pub(crate) struct Pending<T> {
    frame: Arc<Frame>,
    slots: Vec<Option<T>>,
    missing: usize,
    body: Body<T>,
    /// Self-continuations in a row (see [`SELF_CONTINUATION_BOUND`]).
    retries: u32,
}

/// Self-continuations in a row after which an instance stops retrying and
/// waits in the gate's queue instead. Nothing in manycore spins without a
/// bound: a gate that is never released would otherwise keep the loser's
/// core busy forever, and `Runtime::shutdown` (which lets work in flight
/// finish) waiting for it. Far above what a gate held for the length of a
/// body or a device round trip costs, so the paper's experiment is
/// unaffected.
pub(crate) const SELF_CONTINUATION_BOUND: u32 = 1 << 16;

/// Creates an instance on core `on`. With `given`, every input is there at
/// once (and so with no inputs): it fires through `on`'s queue. Otherwise it
/// waits in `on`'s registry for its signals.
pub(crate) fn create<T: Send + 'static>(
    on: &Core,
    mode: ModeKind,
    inputs: usize,
    given: Option<Vec<T>>,
    body: Body<T>,
) -> Result<Arc<Frame>, FlowError> {
    if inputs > MAX_INPUTS {
        return Err(FlowError::TooManyInputs { inputs });
    }
    let ready = given.is_some() || inputs == 0;
    let slots: Vec<Option<T>> = match given {
        Some(v) if v.len() != inputs => {
            return Err(FlowError::InputCount {
                expected: inputs,
                got: v.len(),
            })
        }
        Some(v) => v.into_iter().map(Some).collect(),
        None => (0..inputs).map(|_| None).collect(),
    };
    let claims = if ready {
        Claims::filled(inputs)
    } else {
        Claims::new(inputs)
    };
    let frame = Arc::new(Frame::new(on.clone(), mode, inputs, claims));
    let p = Box::new(Pending {
        frame: frame.clone(),
        slots,
        missing: if ready { 0 } else { inputs },
        body,
        retries: 0,
    });
    if ready {
        // A failed spawn drops the closure, and the instance with it.
        on.spawn(move || p.start())
            .map_err(|_| FlowError::Shutdown)?;
    } else if here::is(on) {
        registry::with(|r| r.insert(&frame, p)).ok_or(FlowError::Shutdown)?;
    } else {
        // Leave the owner half in the frame and tell the owner to collect
        // it. If the message is dropped unrun (the runtime closed), the
        // guard drops the owner half, so nothing waits on it forever.
        frame.post(p);
        let collect = Collect(frame.clone());
        on.spawn(move || {
            let c = collect;
            registry::with(|r| r.get(&c.0).is_some());
        })
        .map_err(|_| FlowError::Shutdown)?;
    }
    Ok(frame)
}

/// Drops whatever owner half is still in the frame's inbox.
struct Collect(Arc<Frame>);

impl Drop for Collect {
    fn drop(&mut self) {
        drop(self.0.collect());
    }
}

/// A continuation signal from a thread of mode `from`: value `value` for
/// slot `slot` of the instance `frame`.
pub(crate) fn signal<T: Send + 'static>(
    from: ModeKind,
    frame: &Arc<Frame>,
    slot: usize,
    value: T,
) -> Result<(), SignalError<T>> {
    let refuse = |kind, value| Err(SignalError::new(kind, slot, value));
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
        Claim::Won if here::is(&frame.owner) => {
            // Local: a plain operation on this core's registry.
            deliver(frame, slot, value, false).or_else(|v| refuse(SignalErrorKind::Shutdown, v))
        }
        Claim::Won => {
            // Remote: a cross-core invocation that delivers on the owner.
            let f = frame.clone();
            frame
                .owner
                .spawn(move || {
                    let _ = deliver(&f, slot, value, true);
                })
                .or_else(|_| refuse(SignalErrorKind::Shutdown, None))
        }
    }
}

/// On the owner core: puts `value` into its slot and, if it was the last
/// one missing, fires the instance: `inline`, right here (we run as the
/// owner's message already), otherwise through the owner's queue (we run
/// inside a body; a chain of local firings must not grow the stack).
/// Gives the value back if the instance is not here (its core is exiting).
fn deliver<T: Send + 'static>(
    frame: &Frame,
    slot: usize,
    value: T,
    inline: bool,
) -> Result<(), Option<T>> {
    let mut value = Some(value);
    let fired = registry::with(|r| {
        let done = {
            let p = r.get(frame)?.as_any_mut().downcast_mut::<Pending<T>>()?;
            *p.slots.get_mut(slot)? = value.take();
            p.missing = p.missing.saturating_sub(1);
            p.missing == 0
        };
        Some(if done { r.take(frame) } else { None })
    })
    .flatten();
    match fired {
        None => Err(value),
        Some(None) => Ok(()),
        Some(Some(p)) if inline => {
            p.start();
            Ok(())
        }
        Some(Some(p)) => {
            // To our own core: its local queue (a failed spawn means the
            // core is exiting; the instance is dropped with the closure).
            let _ = frame.owner.spawn(move || p.start());
            Ok(())
        }
    }
}

impl<T: Send + 'static> Pending<T> {
    /// Runs the body; `guard` is the gate it holds, if any. The guard is
    /// released when the body returns (or unwinds), unless the body took it
    /// with [`Ctx::hold_gate`](crate::Ctx::hold_gate).
    fn run(self, guard: Option<GateGuard>) {
        let Pending {
            frame, slots, body, ..
        } = self;
        let values: Vec<T> = slots.into_iter().flatten().collect();
        let hold = RefCell::new(guard);
        let raw = RawCtx::new(&frame.owner, frame.mode, &hold);
        match body {
            Body::Once(f) => f(raw, values),
            Body::Template(t) => (t.body)(raw, values),
        }
    }
}

impl<T: Send + 'static> AnyPending for Pending<T> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn start(mut self: Box<Self>) {
        let gate = match &self.body {
            Body::Template(t) => t.gate.clone(),
            Body::Once(_) => None,
        };
        let Some(gate) = gate else {
            return (*self).run(None);
        };
        if let Some(guard) = gate.try_enter() {
            return (*self).run(Some(guard));
        }
        match gate.policy() {
            Exclusion::SelfContinuation if self.retries < SELF_CONTINUATION_BOUND => {
                // The loser continues to its own start, at the back of its
                // core's queue (FUCE's non-priority thread queue).
                self.retries += 1;
                gate.note_self_continuation();
                let owner = self.frame.owner.clone();
                let _ = owner.spawn(move || self.start());
            }
            _ => {
                // Wait in the registry (so that shutdown finds it) while the
                // gate's queue holds its name.
                let frame = self.frame.clone();
                if registry::with(|r| r.insert(&frame, self)).is_none() {
                    return;
                }
                if let Some(guard) = gate.enqueue(frame.clone()) {
                    // Released meanwhile: it is ours after all.
                    if let Some(p) = registry::with(|r| r.take(&frame)).flatten() {
                        p.resume(guard);
                    }
                }
            }
        }
    }

    fn resume(self: Box<Self>, guard: GateGuard) {
        (*self).run(Some(guard))
    }
}

/// On the owner core: runs the instance `frame` that a gate was handed to.
/// If it is gone (dropped at shutdown), the guard drops here and passes the
/// gate on.
pub(crate) fn resume(frame: Arc<Frame>, guard: GateGuard) {
    match registry::with(|r| r.take(&frame)).flatten() {
        Some(p) => p.resume(guard),
        None => drop(guard),
    }
}
