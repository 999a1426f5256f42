//! `Template`: a thread template, the code of a zero-wait thread with a
//! declared number of inputs, from which instances are made (many at once,
//! on any cores: simultaneous invocations of one code segment, like the
//! colours of a dynamic dataflow machine). An exclusive template runs behind
//! a [`Gate`]: at most one of its instances at a time.

use crate::ctx::{Ctx, RawCtx};
use crate::error::FlowError;
use crate::gate::Gate;
use crate::instance::Instance;
use crate::mode::{Mode, User};
use crate::node;
use crate::raw::inputs::Inputs;
use manycore_rt::Core;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A template's code, with its type erased to the untyped context.
pub(crate) type SharedBody<T> = Box<dyn for<'a> Fn(RawCtx<'a>, Inputs<T>) + Send + Sync>;

/// What all instances of a template share.
pub(crate) struct TemplateInner<T> {
    pub(crate) inputs: usize,
    pub(crate) body: SharedBody<T>,
    pub(crate) gate: Option<Gate>,
}

/// A thread template with inputs of type `T` whose instances run in mode
/// `M`. Cheap to clone.
///
/// ```
/// use manycore_flow::{Outcome, Template, User};
/// use manycore_rt::Runtime;
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cores(2).build()?;
/// let (result, out) = Outcome::new(rt.core(0))?;
/// let square = Template::<u64, User>::new(1, move |ctx, x| {
///     let _ = ctx.signal(&result, x[0] * x[0]);
/// });
/// square.start(rt.core(1), vec![12])?; // all inputs given: fires at once
/// assert_eq!(out.wait_timeout(Duration::from_secs(10))?, 144);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Template<T, M: Mode = User> {
    inner: Arc<TemplateInner<T>>,
    _m: PhantomData<fn() -> M>,
}

impl<T, M: Mode> Clone for Template<T, M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            _m: PhantomData,
        }
    }
}

impl<T, M: Mode> fmt::Debug for Template<T, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Template")
            .field("mode", &M::KIND)
            .field("inputs", &self.inner.inputs)
            .field("gate", &self.inner.gate)
            .finish()
    }
}

impl<T: Send + 'static, M: Mode> Template<T, M> {
    /// A template whose instances have `inputs` slots (at most
    /// [`MAX_INPUTS`](crate::MAX_INPUTS), checked when an instance is made)
    /// and run `body` with their values, in slot order.
    pub fn new<F>(inputs: usize, body: F) -> Self
    where
        F: Fn(&Ctx<'_, M>, Inputs<T>) + Send + Sync + 'static,
    {
        Self::with_gate(inputs, None, body)
    }

    /// An exclusive template: its instances (and those of every template
    /// sharing `gate`) run one at a time, under the gate's policy.
    ///
    /// ```
    /// use manycore_flow::{Exclusion, Gate, Template, User};
    /// let gate = Gate::new(Exclusion::Queue);
    /// let critical = Template::<u32, User>::exclusive(1, &gate, |_ctx, x| {
    ///     // at most one instance is here at any time
    ///     let _ = x;
    /// });
    /// assert!(critical.gate().is_some());
    /// ```
    pub fn exclusive<F>(inputs: usize, gate: &Gate, body: F) -> Self
    where
        F: Fn(&Ctx<'_, M>, Inputs<T>) + Send + Sync + 'static,
    {
        Self::with_gate(inputs, Some(gate.clone()), body)
    }

    fn with_gate<F>(inputs: usize, gate: Option<Gate>, body: F) -> Self
    where
        F: Fn(&Ctx<'_, M>, Inputs<T>) + Send + Sync + 'static,
    {
        let body: SharedBody<T> =
            Box::new(move |raw: RawCtx<'_>, xs: Inputs<T>| body(&Ctx::from_raw(raw), xs));
        Self {
            inner: Arc::new(TemplateInner { inputs, body, gate }),
            _m: PhantomData,
        }
    }

    /// A new instance on core `on`, waiting for its inputs (with none
    /// declared, it fires at once).
    pub fn instance(&self, on: &Core) -> Result<Instance<T, M>, FlowError> {
        node::create(on, M::KIND, self.inner.inputs, None, self.inner.clone())
            .map(Instance::from_node)
    }

    /// A new instance on core `on` with all its inputs: it fires at once.
    /// Fails with [`FlowError::InputCount`] unless there is one value per
    /// input.
    pub fn start(&self, on: &Core, values: Vec<T>) -> Result<(), FlowError> {
        node::start(
            on,
            M::KIND,
            self.inner.inputs,
            Some(values),
            self.inner.clone(),
        )
    }

    /// The number of inputs of each instance.
    pub fn inputs(&self) -> usize {
        self.inner.inputs
    }

    /// The gate, if the template is exclusive.
    pub fn gate(&self) -> Option<&Gate> {
        self.inner.gate.as_ref()
    }
}
