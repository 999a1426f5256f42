//! `Ctx`: what a running body continues through (continuation signals,
//! typed by the mode of the sending thread), and `Outside`: the same for
//! code that is not a body (a main thread, a device, a reactor).

use crate::error::{FlowError, SignalError};
use crate::gate::{GateGuard, GateHold};
use crate::instance::{AnySlot, Instance, Slot};
use crate::mode::{ContinuesTo, Mode, ModeKind};
use crate::node;
use crate::pending::Once;
use crate::raw::inputs::Inputs;
use crate::signal;
use manycore_rt::Core;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

/// The untyped context of a running body.
#[derive(Clone, Copy)]
pub(crate) struct RawCtx<'a> {
    core: &'a Core,
    kind: ModeKind,
    hold: &'a RefCell<Option<GateGuard>>,
}

impl<'a> RawCtx<'a> {
    pub(crate) fn new(
        core: &'a Core,
        kind: ModeKind,
        hold: &'a RefCell<Option<GateGuard>>,
    ) -> Self {
        Self { core, kind, hold }
    }
}

/// The mode as a type; `*const ()` keeps a context on its thread (`!Send`).
type ModeMarker<M> = PhantomData<(fn() -> M, *const ())>;

/// The context of a running body of mode `M`: the thread's continuation
/// signals go through it, and the compiler checks each one against the
/// mode rule ([`ContinuesTo`]).
///
/// ```compile_fail,E0277
/// use manycore_flow::{Ctx, Instance, Kernel, User};
/// fn syscall_directly(ctx: &Ctx<'_, User>, kernel_thread: &Instance<u64, Kernel>) {
///     // A user thread cannot continue to a kernel thread:
///     let _ = ctx.continue_to(kernel_thread, 0, 1);
/// }
/// ```
///
/// ```
/// use manycore_flow::{Ctx, Instance, KernelInterface, User};
/// fn syscall_through_the_gate(ctx: &Ctx<'_, User>, gate: &Instance<u64, KernelInterface>) {
///     let _ = ctx.continue_to(gate, 0, 1);
/// }
/// ```
pub struct Ctx<'a, M: Mode> {
    raw: RawCtx<'a>,
    _m: ModeMarker<M>,
}

impl<M: Mode> fmt::Debug for Ctx<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("core", &self.raw.core.index())
            .field("mode", &self.raw.kind)
            .finish()
    }
}

impl<'a, M: Mode> Ctx<'a, M> {
    pub(crate) fn from_raw(raw: RawCtx<'a>) -> Self {
        Self {
            raw,
            _m: PhantomData,
        }
    }

    /// The core this body runs on (its instance's owner).
    pub fn core(&self) -> &'a Core {
        self.raw.core
    }

    /// The mode this body runs in.
    pub fn mode(&self) -> ModeKind {
        self.raw.kind
    }

    /// The continuation signal: fills slot `slot` of `to` with `value` and
    /// counts down its synchronisation counter; the instance fires when the
    /// count reaches zero. A plain local operation if `to` lives on this
    /// core, a cross-core invocation otherwise. Refused with a
    /// [`SignalError`] (value given back) if the slot is filled already, the
    /// instance has fired, or there is no such slot.
    pub fn continue_to<U: Send + 'static, N: Mode>(
        &self,
        to: &Instance<U, N>,
        slot: usize,
        value: U,
    ) -> Result<(), SignalError<U>>
    where
        M: ContinuesTo<N>,
    {
        signal::signal(self.raw.kind, to.node(), slot, value)
    }

    /// [`continue_to`](Self::continue_to) the slot `to` names.
    pub fn signal<U: Send + 'static, N: Mode>(
        &self,
        to: &Slot<U, N>,
        value: U,
    ) -> Result<(), SignalError<U>>
    where
        M: ContinuesTo<N>,
    {
        signal::signal(self.raw.kind, to.node(), to.index(), value)
    }

    /// [`signal`](Self::signal) to a slot whose mode is known only at run
    /// time: the mode rule is checked here, and a violation is refused with
    /// [`SignalErrorKind::ModeViolation`](crate::SignalErrorKind::ModeViolation).
    pub fn signal_any<U: Send + 'static>(
        &self,
        to: &AnySlot<U>,
        value: U,
    ) -> Result<(), SignalError<U>> {
        signal::signal(self.raw.kind, to.node(), to.index(), value)
    }

    /// Starts a new thread of the same mode with no inputs on core `on`
    /// (this one for a local fork): it fires at once.
    pub fn spawn<F>(&self, on: &Core, body: F) -> Result<(), FlowError>
    where
        F: FnOnce(&Ctx<'_, M>) + Send + 'static,
    {
        let body = Once(move |raw: RawCtx<'_>, _: Inputs<()>| body(&Ctx::from_raw(raw)));
        node::start(on, M::KIND, 0, None, body)
    }

    /// Takes this body's gate along, so that it stays held after the body
    /// returns, until the [`GateHold`] is released or dropped (by a later
    /// thread, on any core). `None` if the body holds no gate (its template
    /// is not exclusive) or the gate was taken already.
    pub fn hold_gate(&self) -> Option<GateHold> {
        self.raw.hold.borrow_mut().take().map(GateHold::new)
    }
}

/// Continuation signals from code that is not a thread body: a main thread
/// feeding inputs, a device delivering a completion to its handler thread.
/// The sender names the mode it acts in; the same rule as for bodies applies.
///
/// ```
/// use manycore_flow::{Instance, Kernel, Outcome, Outside, User};
/// use manycore_rt::Runtime;
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cores(1).build()?;
/// let (done, out) = Outcome::<u64>::new(rt.core(0))?;
/// // A kernel handler thread that passes the device's data to the user.
/// let handler = Instance::<u64, Kernel>::new(rt.core(0), 1, move |ctx, data| {
///     let _ = ctx.signal(&done, data[0]);
/// })?;
/// // The device (here: this thread) issues the completion as a signal.
/// Outside::<Kernel>::new().continue_to(&handler, 0, 42)?;
/// assert_eq!(out.wait_timeout(Duration::from_secs(10))?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Outside<M: Mode> {
    _m: PhantomData<fn() -> M>,
}

impl<M: Mode> fmt::Debug for Outside<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outside").field("mode", &M::KIND).finish()
    }
}

impl<M: Mode> Default for Outside<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Mode> Outside<M> {
    /// Signals as a thread of mode `M`.
    pub fn new() -> Self {
        Self { _m: PhantomData }
    }

    /// See [`Ctx::continue_to`].
    pub fn continue_to<U: Send + 'static, N: Mode>(
        &self,
        to: &Instance<U, N>,
        slot: usize,
        value: U,
    ) -> Result<(), SignalError<U>>
    where
        M: ContinuesTo<N>,
    {
        signal::signal(M::KIND, to.node(), slot, value)
    }

    /// See [`Ctx::signal`].
    pub fn signal<U: Send + 'static, N: Mode>(
        &self,
        to: &Slot<U, N>,
        value: U,
    ) -> Result<(), SignalError<U>>
    where
        M: ContinuesTo<N>,
    {
        signal::signal(M::KIND, to.node(), to.index(), value)
    }

    /// See [`Ctx::signal_any`].
    pub fn signal_any<U: Send + 'static>(
        &self,
        to: &AnySlot<U>,
        value: U,
    ) -> Result<(), SignalError<U>> {
        signal::signal(M::KIND, to.node(), to.index(), value)
    }
}

/// A signal from a body whose mode is a value (graph nodes).
pub(crate) fn signal_any_raw<U: Send + 'static>(
    raw: RawCtx<'_>,
    to: &AnySlot<U>,
    value: U,
) -> Result<(), SignalError<U>> {
    signal::signal(raw.kind, to.node(), to.index(), value)
}
