//! `Graph`: a static dataflow graph of zero-wait threads, checked when it is
//! built (every slot fed exactly once, no cycles, the mode rule on every
//! edge) and run any number of times: each run makes fresh instances of
//! every node (a new colour), places them on cores, feeds the inputs and
//! gathers the outputs in an [`Outcome`].

use crate::claims::MAX_INPUTS;
use crate::ctx::{self, RawCtx};
use crate::error::{BuildError, FlowError};
use crate::instance::AnySlot;
use crate::mode::ModeKind;
use crate::node::{self, NodeRef};
use crate::outcome::Outcome;
use crate::pending::Once;
use crate::raw::inputs::Inputs;
use crate::signal;
use manycore_rt::Core;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A node of a graph under construction; see [`GraphBuilder::node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeId(usize);

impl NodeId {
    /// The node's index (the order nodes were added in).
    pub fn index(self) -> usize {
        self.0
    }
}

type NodeFn<T> = Arc<dyn Fn(&[T]) -> T + Send + Sync>;

struct Node<T> {
    mode: ModeKind,
    inputs: usize,
    f: NodeFn<T>,
    core: Option<usize>,
}

/// Where a node's value goes.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// A slot of another node.
    Node(usize, usize),
    /// An output of the graph.
    Output(usize),
}

/// Builds a [`Graph`] whose values are all of type `T`.
///
/// ```
/// use manycore_flow::GraphBuilder;
/// use manycore_rt::Runtime;
/// use std::time::Duration;
///
/// // (a + b) * (a - b), each operation a zero-wait thread.
/// let mut g = GraphBuilder::<i64>::new();
/// let pass_a = g.node(1, |x| x[0]);
/// let pass_b = g.node(1, |x| x[0]);
/// let sum = g.node(2, |x| x[0] + x[1]);
/// let diff = g.node(2, |x| x[0] - x[1]);
/// let prod = g.node(2, |x| x[0] * x[1]);
/// g.input(pass_a, 0);
/// g.input(pass_b, 0);
/// g.connect(pass_a, sum, 0).connect(pass_b, sum, 1);
/// g.connect(pass_a, diff, 0).connect(pass_b, diff, 1);
/// g.connect(sum, prod, 0).connect(diff, prod, 1);
/// g.output(prod);
/// let graph = g.build()?;
///
/// let rt = Runtime::builder().cores(2).build()?;
/// let out = graph.run(rt.cores(), vec![7, 3])?;
/// assert_eq!(out.wait_timeout(Duration::from_secs(10))?, vec![40]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct GraphBuilder<T> {
    nodes: Vec<Node<T>>,
    edges: Vec<(usize, usize, usize)>,
    inputs: Vec<(usize, usize)>,
    outputs: Vec<usize>,
    /// A node id given to `place` that names no node (reported by `build`).
    unknown: Option<usize>,
}

impl<T> fmt::Debug for GraphBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("nodes", &self.nodes.len())
            .field("edges", &self.edges)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl<T: Clone + Send + 'static> Default for GraphBuilder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Send + 'static> GraphBuilder<T> {
    /// An empty graph.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            unknown: None,
        }
    }

    /// Adds a user-mode node with `inputs` slots that computes `f` of its
    /// inputs (in slot order) and sends the value along all its out-edges.
    pub fn node<F>(&mut self, inputs: usize, f: F) -> NodeId
    where
        F: Fn(&[T]) -> T + Send + Sync + 'static,
    {
        self.node_in(ModeKind::User, inputs, f)
    }

    /// [`node`](Self::node) in mode `mode`.
    pub fn node_in<F>(&mut self, mode: ModeKind, inputs: usize, f: F) -> NodeId
    where
        F: Fn(&[T]) -> T + Send + Sync + 'static,
    {
        self.nodes.push(Node {
            mode,
            inputs,
            f: Arc::new(f),
            core: None,
        });
        NodeId(self.nodes.len() - 1)
    }

    /// Places `node` on core `core` of the runtime it runs on (checked at
    /// run time). Unplaced nodes go round-robin by index.
    pub fn place(&mut self, node: NodeId, core: usize) -> &mut Self {
        match self.nodes.get_mut(node.0) {
            Some(n) => n.core = Some(core),
            None => self.unknown = Some(node.0),
        }
        self
    }

    /// An edge: `from`'s value fills slot `slot` of `to`.
    pub fn connect(&mut self, from: NodeId, to: NodeId, slot: usize) -> &mut Self {
        self.edges.push((from.0, to.0, slot));
        self
    }

    /// A graph input (fed by the caller of [`Graph::run`], a user-mode
    /// thread) into slot `slot` of `to`. Returns the input's index in
    /// `run`'s values.
    pub fn input(&mut self, to: NodeId, slot: usize) -> usize {
        self.inputs.push((to.0, slot));
        self.inputs.len() - 1
    }

    /// A graph output: `from`'s value. Returns the output's index in the
    /// values a run yields.
    pub fn output(&mut self, from: NodeId) -> usize {
        self.outputs.push(from.0);
        self.outputs.len() - 1
    }

    /// Checks the graph: every node and slot named exists, every slot has
    /// exactly one producer (an edge or an input), every edge keeps the mode
    /// rule (graph inputs come from user mode), there is no cycle and at
    /// least one output.
    pub fn build(self) -> Result<Graph<T>, BuildError> {
        let n = self.nodes.len();
        if let Some(u) = self.unknown {
            return Err(BuildError::NoSuchNode(u));
        }
        let node = |i: usize| (i < n).then_some(i).ok_or(BuildError::NoSuchNode(i));
        for (i, nd) in self.nodes.iter().enumerate() {
            if nd.inputs > MAX_INPUTS {
                return Err(BuildError::TooManyInputs(i));
            }
        }
        let mut fed: Vec<Vec<bool>> = self.nodes.iter().map(|nd| vec![false; nd.inputs]).collect();
        let mut feed = |to: usize, slot: usize| -> Result<(), BuildError> {
            let s = fed[node(to)?]
                .get_mut(slot)
                .ok_or(BuildError::NoSuchSlot { node: to, slot })?;
            if std::mem::replace(s, true) {
                return Err(BuildError::SlotFedTwice { node: to, slot });
            }
            Ok(())
        };
        let mut succ: Vec<Vec<Target>> = vec![Vec::new(); n];
        let mut indegree = vec![0usize; n];
        for &(from, to, slot) in &self.edges {
            node(from)?;
            feed(to, slot)?;
            let (fm, tm) = (self.nodes[from].mode, self.nodes[to].mode);
            if !fm.may_continue_to(tm) {
                return Err(BuildError::ModeViolation {
                    from: Some(from),
                    to,
                    from_mode: fm,
                    to_mode: tm,
                });
            }
            succ[from].push(Target::Node(to, slot));
            indegree[to] += 1;
        }
        for &(to, slot) in &self.inputs {
            feed(to, slot)?;
            let tm = self.nodes[to].mode;
            if !ModeKind::User.may_continue_to(tm) {
                return Err(BuildError::ModeViolation {
                    from: None,
                    to,
                    from_mode: ModeKind::User,
                    to_mode: tm,
                });
            }
        }
        for (i, slots) in fed.iter().enumerate() {
            if let Some(slot) = slots.iter().position(|f| !f) {
                return Err(BuildError::SlotUnfed { node: i, slot });
            }
        }
        if self.outputs.is_empty() {
            return Err(BuildError::NoOutputs);
        }
        for (k, &from) in self.outputs.iter().enumerate() {
            node(from)?;
            succ[from].push(Target::Output(k));
        }
        // Kahn's algorithm: a topological order, or a node on a cycle.
        let mut order = Vec::with_capacity(n);
        let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        while let Some(v) = ready.pop() {
            order.push(v);
            for t in &succ[v] {
                if let Target::Node(w, _) = *t {
                    indegree[w] -= 1;
                    if indegree[w] == 0 {
                        ready.push(w);
                    }
                }
            }
        }
        if let Some(v) = (0..n).find(|&i| indegree[i] > 0) {
            return Err(BuildError::Cycle(v));
        }
        Ok(Graph {
            nodes: self.nodes,
            succ,
            order,
            inputs: self.inputs,
            outputs: self.outputs.len(),
        })
    }
}

/// A checked static graph; see [`GraphBuilder`].
pub struct Graph<T> {
    nodes: Vec<Node<T>>,
    succ: Vec<Vec<Target>>,
    order: Vec<usize>,
    inputs: Vec<(usize, usize)>,
    outputs: usize,
}

impl<T> fmt::Debug for Graph<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.len())
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl<T: Clone + Send + 'static> Graph<T> {
    /// Number of inputs a run takes.
    pub fn inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Number of outputs a run yields.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Runs the graph once on `cores` (a runtime's [`cores`](manycore_rt::Runtime::cores)):
    /// one fresh instance per node on its core, the outputs gathered by a
    /// sink on the first core. The outcome yields the outputs in order, or
    /// `Err(Panicked)` if a node panicked, or `Err(Shutdown)`.
    pub fn run(&self, cores: &[Core], inputs: Vec<T>) -> Result<Outcome<Vec<T>>, FlowError> {
        if inputs.len() != self.inputs.len() {
            return Err(FlowError::InputCount {
                expected: self.inputs.len(),
                got: inputs.len(),
            });
        }
        let place = |i: usize| -> Result<&Core, FlowError> {
            let index = self.nodes[i].core.unwrap_or(i % cores.len().max(1));
            cores.get(index).ok_or(FlowError::NoSuchCore {
                index,
                cores: cores.len(),
            })
        };
        let home = cores
            .first()
            .ok_or(FlowError::NoSuchCore { index: 0, cores: 0 })?;
        for i in 0..self.nodes.len() {
            place(i)?;
        }
        let (tx, outcome) = Outcome::channel();
        let done = tx.clone();
        let sink = node::create(
            home,
            ModeKind::User,
            self.outputs,
            None,
            Once(move |_: RawCtx<'_>, xs: Inputs<T>| {
                let _ = done.send(Ok(xs.into_vec()));
            }),
        )?;
        // Successors first, so that each node's targets exist when it is made
        // (a node without inputs fires at once).
        let mut frames: Vec<Option<NodeRef>> = vec![None; self.nodes.len()];
        for &v in self.order.iter().rev() {
            let targets: Vec<AnySlot<T>> = self.succ[v]
                .iter()
                .filter_map(|t| match *t {
                    Target::Node(w, s) => frames[w].clone().map(|f| AnySlot::new(f, s)),
                    Target::Output(k) => Some(AnySlot::new(sink.clone(), k)),
                })
                .collect();
            let nd = &self.nodes[v];
            let f = nd.f.clone();
            let fail = tx.clone();
            let body = Once(move |raw: RawCtx<'_>, xs: Inputs<T>| {
                match catch_unwind(AssertUnwindSafe(|| f(&xs))) {
                    Ok(y) => send_all(raw, &targets, y),
                    Err(p) => {
                        let _ = fail.send(Err(FlowError::Panicked(panic_message(&*p))));
                    }
                }
            });
            frames[v] = Some(node::create(place(v)?, nd.mode, nd.inputs, None, body)?);
        }
        drop(tx);
        for ((to, slot), value) in self.inputs.iter().zip(inputs) {
            if let Some(frame) = &frames[*to] {
                signal::signal(ModeKind::User, frame, *slot, value)
                    .map_err(|_| FlowError::Shutdown)?;
            }
        }
        Ok(outcome)
    }
}

/// Sends `y` to every target (cloned for all but the last).
fn send_all<T: Clone + Send + 'static>(raw: RawCtx<'_>, targets: &[AnySlot<T>], y: T) {
    if let Some((last, rest)) = targets.split_last() {
        for t in rest {
            let _ = ctx::signal_any_raw(raw, t, y.clone());
        }
        let _ = ctx::signal_any_raw(raw, last, y);
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
