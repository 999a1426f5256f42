//! Groups and collective invocations over multicast trees (the "Cross-core
//! invocations on the SCC" paper, section II.C and Figure 1): `ateach`
//! propagates one invocation down a k-ary tree of members; `reduce` and
//! `gather` also send results back up, combining them at every inner node (a
//! temporary counting sink on that node's core) rather than all at the root.
//! Every collective carries its group's next generation number, and its sinks
//! are keyed by it, so back-to-back collectives on one group never mix.
//!
//! The tree is laid out like a heap over member indices: member 0 is the
//! root, member i's children are `k*i+1 ..= k*i+k`. `Topology::Flat` makes
//! every other member a child of the root (Seastar's `invoke_on_all` shape).

use crate::core::Completer;
use crate::core_loop::with_local;
use crate::error::{panicked, InvokeError};
use crate::invocation::Invocation;
use crate::object::Remote;
use manycore_sync::atomic::{AtomicU64, Ordering};
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// The shape of a group's multicast tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A k-ary tree: each member forwards to up to `fanout` children.
    Tree {
        /// Children per inner node (at least 1).
        fanout: usize,
    },
    /// The root sends to every other member directly, and every result comes
    /// straight back to it.
    Flat,
}

impl Default for Topology {
    fn default() -> Self {
        Topology::Tree { fanout: 4 }
    }
}

/// (group id, generation, tree node) of one collective's sink.
type SinkKey = (u64, u64, usize);
type LeafFn<T, A> = Box<dyn Fn(usize, Result<&mut T, InvokeError>) -> Acc<A> + Send + Sync>;
type CombineFn<A> = Box<dyn Fn(Acc<A>, Acc<A>) -> Acc<A> + Send + Sync>;

/// Temporary sinks of in-flight collectives on one core, keyed by
/// (group, generation, node).
#[derive(Default)]
pub(crate) struct PendingSinks {
    map: RefCell<HashMap<SinkKey, Box<dyn Any>>>,
}

impl PendingSinks {
    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *self.map.borrow_mut());
        drop(all);
    }
    /// Number of collectives waiting for children here (for `debug_counts`).
    #[cfg(feature = "internals")]
    pub(crate) fn len(&self) -> usize {
        self.map.borrow().len()
    }
}

/// A group of remote objects, invoked together.
///
/// ```
/// use manycore_rt::{Group, Runtime, Topology};
/// let rt = Runtime::builder().cores(2).build().unwrap();
/// let members: Vec<_> = (0..10u64).map(|i| rt.core(i as usize % 2).place(i).unwrap()).collect();
/// let g = Group::new(members);
/// assert_eq!(g.reduce(|x| *x, |a, b| a + b).wait(), Ok(45));
/// assert_eq!(g.gather(|x| *x * 2).wait(), Ok((0..10).map(|i| i * 2).collect()));
/// let flat = g.clone().with_topology(Topology::Flat);
/// assert_eq!(flat.reduce(|x| *x, |a, b| a.max(b)).wait(), Ok(9));
/// // One-sided; a later collective on the same tree sees its effect.
/// g.ateach(|x| *x += 1).unwrap();
/// assert_eq!(g.reduce(|x| *x, |a, b| a + b).wait(), Ok(55));
/// ```
///
/// Ordering: every hop is FIFO per (source, destination), so collectives
/// started from one place over the *same* tree reach each member in the order
/// they were started. Collectives over different topologies take different
/// paths and may overtake each other.
pub struct Group<T> {
    members: Arc<[Remote<T>]>,
    topology: Topology,
    id: u64,
    generation: Arc<AtomicU64>,
}

impl<T> Clone for Group<T> {
    fn clone(&self) -> Self {
        Self {
            members: self.members.clone(),
            topology: self.topology,
            id: self.id,
            generation: self.generation.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Group<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("members", &self.members.len())
            .field("topology", &self.topology)
            .finish()
    }
}

type Acc<A> = Result<A, InvokeError>;
type Finish<A> = Box<dyn FnOnce(Acc<(A, u32)>) + Send>;

struct Plan<T, A> {
    members: Arc<[Remote<T>]>,
    fanout: usize,
    key: (u64, u64),
    leaf: LeafFn<T, A>,
    combine: CombineFn<A>,
    finish: Mutex<Option<Finish<A>>>,
    one_sided: bool,
    /// The completion record the collective's caller waits on (0 if
    /// nobody waits): a member queued behind an object that the waiting
    /// stack holds makes that wait a deadlock (`WouldDeadlock`).
    wait_id: usize,
}

struct Pending<A> {
    remaining: usize,
    acc: Option<Acc<A>>,
    hops: u32,
}

impl<T: 'static> Group<T> {
    /// A group of `members` (any cores, several per core allowed), with a
    /// tree of fan-out 4.
    pub fn new(members: Vec<Remote<T>>) -> Self {
        Self {
            members: members.into(),
            topology: Topology::default(),
            id: manycore_sync::unique_id(),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The same members with another topology (a `Tree` fan-out of 0 counts as 1).
    pub fn with_topology(mut self, topology: Topology) -> Self {
        self.topology = match topology {
            Topology::Tree { fanout } => Topology::Tree {
                fanout: fanout.max(1),
            },
            Topology::Flat => Topology::Flat,
        };
        self
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True if the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members, in order.
    pub fn members(&self) -> &[Remote<T>] {
        &self.members
    }

    /// The generation the next collective will carry.
    ///
    /// Only with the `internals` feature: for tests that check that every
    /// collective takes a generation of its own.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    fn fanout(&self) -> usize {
        match self.topology {
            Topology::Tree { fanout } => fanout,
            Topology::Flat => self.members.len().saturating_sub(1).max(1),
        }
    }

    /// Depth of the tree (edges from the root to the deepest member).
    pub fn depth(&self) -> u32 {
        let (n, k) = (self.members.len(), self.fanout());
        let mut d = 0;
        let mut i = n.saturating_sub(1);
        while i > 0 {
            i = (i - 1) / k;
            d += 1;
        }
        d
    }

    /// Runs `f` on every member, one-sided, propagating down the tree.
    pub fn ateach<F>(&self, f: F) -> Result<(), InvokeError>
    where
        F: Fn(&mut T) + Send + Sync + 'static,
    {
        if self.members.is_empty() {
            return Ok(());
        }
        let plan: Arc<Plan<T, ()>> = Arc::new(Plan {
            members: self.members.clone(),
            fanout: self.fanout(),
            key: (self.id, self.generation.fetch_add(1, Ordering::Relaxed)),
            leaf: Box::new(move |_, obj| {
                if let Ok(o) = obj {
                    f(o);
                }
                Ok(())
            }),
            combine: Box::new(|a, _| a),
            finish: Mutex::new(None),
            one_sided: true,
            wait_id: 0,
        });
        start(plan)
    }

    /// Maps every member and combines the results along the tree
    /// (`combine` must be associative). A failing member gives
    /// `Err(InvokeError::Member { index, .. })` naming the lowest failing
    /// index; the other members still complete.
    pub fn reduce<R, M, C>(&self, map: M, combine: C) -> Invocation<R>
    where
        R: Send + 'static,
        M: Fn(&mut T) -> R + Send + Sync + 'static,
        C: Fn(R, R) -> R + Send + Sync + 'static,
    {
        self.reduce_then(map, combine, |(r, _)| r)
    }

    /// [`reduce`](Self::reduce) that also returns the number of hops on the
    /// critical path (the depth the collective actually reached).
    ///
    /// Only with the `internals` feature: for benches and tests that check
    /// the tree's depth.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn reduce_measured<R, M, C>(&self, map: M, combine: C) -> Invocation<(R, u32)>
    where
        R: Send + 'static,
        M: Fn(&mut T) -> R + Send + Sync + 'static,
        C: Fn(R, R) -> R + Send + Sync + 'static,
    {
        self.reduce_then(map, combine, |x| x)
    }

    fn reduce_then<R, B, M, C, P>(&self, map: M, combine: C, post: P) -> Invocation<B>
    where
        R: Send + 'static,
        B: Send + 'static,
        M: Fn(&mut T) -> R + Send + Sync + 'static,
        C: Fn(R, R) -> R + Send + Sync + 'static,
        P: FnOnce((R, u32)) -> B + Send + 'static,
    {
        self.collect(
            move |i, obj| leaf_apply(i, obj, &map),
            move |a, b| match (a, b) {
                (Ok(a), Ok(b)) => Ok(combine(a, b)),
                (a, b) => lowest_error(a, b),
            },
            post,
        )
    }

    /// Maps every member and returns the results in member order.
    pub fn gather<R, M>(&self, map: M) -> Invocation<Vec<R>>
    where
        R: Send + 'static,
        M: Fn(&mut T) -> R + Send + Sync + 'static,
    {
        if self.members.is_empty() {
            let (completer, rx) = Completer::new();
            completer.complete(Ok(Vec::new()));
            return Invocation::new(rx, std::time::Duration::ZERO);
        }
        self.collect(
            move |i, obj| leaf_apply(i, obj, &map).map(|r| vec![(i, r)]),
            |a, b| match (a, b) {
                (Ok(mut a), Ok(b)) => {
                    a.extend(b);
                    Ok(a)
                }
                (a, b) => lowest_error(a, b),
            },
            |(mut v, _): (Vec<(usize, R)>, u32)| {
                v.sort_by_key(|e| e.0);
                v.into_iter().map(|e| e.1).collect()
            },
        )
    }

    fn collect<A, B, L, C, P>(&self, leaf: L, combine: C, post: P) -> Invocation<B>
    where
        A: Send + 'static,
        B: Send + 'static,
        P: FnOnce((A, u32)) -> B + Send + 'static,
        L: Fn(usize, Result<&mut T, InvokeError>) -> Acc<A> + Send + Sync + 'static,
        C: Fn(Acc<A>, Acc<A>) -> Acc<A> + Send + Sync + 'static,
    {
        let (completer, rx) = Completer::new();
        let spin = self.members.first().map_or(std::time::Duration::ZERO, |m| {
            m.core().shared.idle.spin_budget()
        });
        if self.members.is_empty() {
            completer.complete(Err(InvokeError::EmptyGroup));
            return Invocation::new(rx, spin);
        }
        let wait_id = rx.id();
        let plan = Arc::new(Plan {
            members: self.members.clone(),
            fanout: self.fanout(),
            key: (self.id, self.generation.fetch_add(1, Ordering::Relaxed)),
            leaf: Box::new(leaf),
            combine: Box::new(combine),
            finish: Mutex::new(Some({
                Box::new(move |r: Acc<(A, u32)>| completer.complete(r.map(post))) as Finish<A>
            })),
            one_sided: false,
            wait_id,
        });
        let _ = start(plan);
        Invocation::new(rx, spin)
    }
}

fn leaf_apply<T, R>(
    i: usize,
    obj: Result<&mut T, InvokeError>,
    map: &(dyn Fn(&mut T) -> R + Send + Sync),
) -> Acc<R> {
    match obj {
        Ok(o) => catch_unwind(AssertUnwindSafe(|| map(o))).map_err(|p| InvokeError::Member {
            index: i,
            error: Box::new(panicked(p)),
        }),
        Err(e) => Err(InvokeError::Member {
            index: i,
            error: Box::new(e),
        }),
    }
}

fn lowest_error<A>(a: Acc<A>, b: Acc<A>) -> Acc<A> {
    let idx = |e: &InvokeError| match e {
        InvokeError::Member { index, .. } => *index,
        _ => usize::MAX,
    };
    match (a, b) {
        (Err(x), Err(y)) => Err(if idx(&y) < idx(&x) { y } else { x }),
        (Err(x), _) | (_, Err(x)) => Err(x),
        (Ok(a), Ok(_)) => Ok(a),
    }
}

fn start<T: 'static, A: Send + 'static>(plan: Arc<Plan<T, A>>) -> Result<(), InvokeError> {
    let root = plan.members[0].clone();
    let wait_id = plan.wait_id;
    root.with_object_for(wait_id, move |obj| run_node(&plan, 0, 0, obj))
}

/// On member `node`'s core, with its object: map, forward to the children,
/// and either deliver (leaf) or leave a pending sink for the children.
fn run_node<T: 'static, A: Send + 'static>(
    plan: &Arc<Plan<T, A>>,
    node: usize,
    hops: u32,
    obj: Result<&mut T, InvokeError>,
) {
    let mine = (plan.leaf)(node, obj);
    let n = plan.members.len();
    let first = node * plan.fanout + 1;
    let kids = first.min(n)..(first + plan.fanout).min(n);
    if kids.is_empty() {
        if !plan.one_sided {
            deliver(plan.clone(), node, mine, hops);
        }
        return;
    }
    if !plan.one_sided {
        let key = (plan.key.0, plan.key.1, node);
        let p: Box<dyn Any> = Box::new(Pending {
            remaining: kids.len(),
            acc: Some(mine),
            hops,
        });
        with_local(|l| {
            if let Some(l) = l {
                l.pending.map.borrow_mut().insert(key, p);
            }
        });
    }
    for child in kids {
        let plan2 = plan.clone();
        let sent = plan.members[child].with_object_for(plan.wait_id, move |obj| {
            run_node(&plan2, child, hops + 1, obj)
        });
        if sent.is_err() && !plan.one_sided {
            // The child's core is gone: count it as a failed member.
            accept(
                plan.clone(),
                node,
                Err(InvokeError::Member {
                    index: child,
                    error: Box::new(InvokeError::Shutdown),
                }),
                hops + 1,
            );
        }
    }
}

/// Sends a subtree's result to its parent's core (or finishes at the root).
fn deliver<T: 'static, A: Send + 'static>(
    plan: Arc<Plan<T, A>>,
    node: usize,
    r: Acc<A>,
    hops: u32,
) {
    if node == 0 {
        let done = plan.finish.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(finish) = done {
            finish(r.map(|a| (a, hops)));
        }
        return;
    }
    let parent = (node - 1) / plan.fanout;
    let core = plan.members[parent].core().clone();
    let _ = core.spawn(move || accept(plan, parent, r, hops));
}

/// At a parent's pending sink: combine a child's result; when the last
/// child has reported, pass the subtree's result up.
fn accept<T: 'static, A: Send + 'static>(plan: Arc<Plan<T, A>>, node: usize, r: Acc<A>, hops: u32) {
    let key = (plan.key.0, plan.key.1, node);
    let finished = with_local(|l| {
        let l = l?;
        let mut map = l.pending.map.borrow_mut();
        let p = map.get_mut(&key)?.downcast_mut::<Pending<A>>()?;
        let acc = p.acc.take().unwrap_or(Err(InvokeError::Consumed));
        p.acc = Some((plan.combine)(acc, r));
        p.hops = p.hops.max(hops);
        p.remaining -= 1;
        if p.remaining == 0 {
            let p = map.remove(&key)?.downcast::<Pending<A>>().ok()?;
            Some((p.acc.unwrap_or(Err(InvokeError::Consumed)), p.hops))
        } else {
            None
        }
    });
    if let Some((acc, hops)) = finished {
        deliver(plan, node, acc, hops);
    }
}
