//! `Instance`: a handle to one instance of a zero-wait thread (a coloured
//! token's frame of dynamic dataflow), and `Slot` / `AnySlot`: the name of
//! one of its input slots, the continuation a producer is handed.

use crate::ctx::{Ctx, RawCtx};
use crate::error::FlowError;
use crate::mode::{Mode, ModeKind, User};
use crate::node::{self, NodeRef};
use crate::pending::Once;
use crate::raw::inputs::Inputs;
use crate::raw::shared::Handle;
use manycore_rt::Core;
use std::fmt;
use std::marker::PhantomData;

/// A handle to an instance with inputs of type `T`, running in mode `M`
/// once it fires. Cheap to clone, `Send + Sync`; the instance lives on one
/// core (its owner) and fires there when all its slots are filled.
///
/// ```
/// use manycore_flow::{Instance, Outcome, Outside, User};
/// use manycore_rt::Runtime;
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cores(2).build()?;
/// let (result, out) = Outcome::new(rt.core(0))?;
/// // An instance on core 1 with two inputs: it fires when both are there.
/// let add = Instance::<u64, User>::new(rt.core(1), 2, move |ctx, xs| {
///     let _ = ctx.signal(&result, xs[0] + xs[1]);
/// })?;
/// let me = Outside::<User>::new();
/// me.continue_to(&add, 0, 40)?;
/// me.continue_to(&add, 1, 2)?;
/// assert_eq!(out.wait_timeout(Duration::from_secs(10))?, 42);
/// // Slot 1 was filled: the sender sees it.
/// let err = me.continue_to(&add, 1, 7).unwrap_err();
/// assert_eq!(err.kind(), manycore_flow::SignalErrorKind::Fired);
/// assert_eq!(err.into_value(), Some(7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Instance<T, M: Mode = User> {
    node: Handle,
    _t: PhantomData<fn(T) -> M>,
}

impl<T, M: Mode> Clone for Instance<T, M> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            _t: PhantomData,
        }
    }
}

impl<T, M: Mode> fmt::Debug for Instance<T, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance")
            .field("core", &self.node.frame().owner().index())
            .field("mode", &self.node.frame().mode)
            .field("inputs", &self.node.frame().inputs)
            .field("complete", &self.node.frame().claims.is_complete())
            .finish()
    }
}

impl<T: Send + 'static, M: Mode> Instance<T, M> {
    /// A new instance on core `on` with `inputs` slots (at most
    /// [`MAX_INPUTS`](crate::MAX_INPUTS)) that runs `body` once, with the
    /// values of its slots in slot order (an [`Inputs`]), when all of them
    /// are filled. With
    /// no inputs it fires at once. Created from `on` itself, it is a local
    /// operation; from anywhere else it is a message to `on`.
    pub fn new<F>(on: &Core, inputs: usize, body: F) -> Result<Self, FlowError>
    where
        F: FnOnce(&Ctx<'_, M>, Inputs<T>) + Send + 'static,
    {
        let body = Once(move |raw: RawCtx<'_>, xs: Inputs<T>| body(&Ctx::from_raw(raw), xs));
        node::create(on, M::KIND, inputs, None, body).map(Self::from_node)
    }
}

impl<T, M: Mode> Instance<T, M> {
    pub(crate) fn from_node(node: NodeRef) -> Self {
        Self {
            node: Handle::new(node),
            _t: PhantomData,
        }
    }

    pub(crate) fn node(&self) -> &NodeRef {
        &self.node
    }

    /// The name of slot `index` (not checked here: a signal to a slot the
    /// instance does not have is refused with
    /// [`SignalErrorKind::NoSuchSlot`](crate::SignalErrorKind::NoSuchSlot)).
    pub fn slot(&self, index: usize) -> Slot<T, M> {
        Slot {
            node: (*self.node).clone(),
            index,
            _t: PhantomData,
        }
    }

    /// The number of input slots.
    pub fn inputs(&self) -> usize {
        self.node.frame().inputs
    }

    /// The core the instance lives on.
    pub fn core(&self) -> &Core {
        self.node.frame().owner()
    }

    /// The instance's mode.
    pub fn mode(&self) -> ModeKind {
        self.node.frame().mode
    }

    /// Whether every slot has been filled (by signals sent so far; the
    /// instance fires, or has fired). A snapshot.
    pub fn is_complete(&self) -> bool {
        self.node.frame().claims.is_complete()
    }
}

/// The name of one input slot of an instance of mode `M`: a continuation to
/// hand to a producer (a child's result slot, a receiver thread passed in a
/// system call, the target of a device completion).
pub struct Slot<T, M: Mode = User> {
    node: NodeRef,
    index: usize,
    _t: PhantomData<fn(T) -> M>,
}

impl<T, M: Mode> Clone for Slot<T, M> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            index: self.index,
            _t: PhantomData,
        }
    }
}

impl<T, M: Mode> fmt::Debug for Slot<T, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("core", &self.node.frame().owner().index())
            .field("mode", &self.node.frame().mode)
            .field("index", &self.index)
            .finish()
    }
}

impl<T, M: Mode> Slot<T, M> {
    pub(crate) fn node(&self) -> &NodeRef {
        &self.node
    }

    /// The slot's index in its instance.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The instance the slot belongs to.
    pub fn instance(&self) -> Instance<T, M> {
        Instance::from_node(self.node.clone())
    }

    /// The same slot with its mode a value rather than a type (checked when
    /// signalled).
    pub fn erase(self) -> AnySlot<T> {
        AnySlot {
            node: self.node,
            index: self.index,
            _t: PhantomData,
        }
    }
}

/// A [`Slot`] whose instance's mode is a value, checked against the
/// sender's mode when signalled ([`Ctx::signal_any`]).
pub struct AnySlot<T> {
    node: NodeRef,
    index: usize,
    _t: PhantomData<fn(T)>,
}

impl<T> Clone for AnySlot<T> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            index: self.index,
            _t: PhantomData,
        }
    }
}

impl<T> fmt::Debug for AnySlot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnySlot")
            .field("core", &self.node.frame().owner().index())
            .field("mode", &self.node.frame().mode)
            .field("index", &self.index)
            .finish()
    }
}

impl<T> AnySlot<T> {
    pub(crate) fn new(node: NodeRef, index: usize) -> Self {
        Self {
            node,
            index,
            _t: PhantomData,
        }
    }

    pub(crate) fn node(&self) -> &NodeRef {
        &self.node
    }

    /// The slot's index in its instance.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The mode of the slot's instance.
    pub fn mode(&self) -> ModeKind {
        self.node.frame().mode
    }

    /// The core the slot's instance lives on.
    pub fn core(&self) -> &Core {
        self.node.frame().owner()
    }

    /// The typed slot, if the instance's mode is `M`.
    pub fn typed<M: Mode>(self) -> Option<Slot<T, M>> {
        (self.node.frame().mode == M::KIND).then(|| Slot {
            node: self.node,
            index: self.index,
            _t: PhantomData,
        })
    }
}
