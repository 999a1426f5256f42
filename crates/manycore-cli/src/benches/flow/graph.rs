//! One graph in four systems: a binary reduction tree of depth `d`
//! (2^(d+1) - 1 nodes, 2^d leaves). Every node is a task that the system
//! schedules; a leaf produces its index, an internal node the sum of its
//! two children; the root's value is the sum of 0..2^d.
//!
//! * flow: a node is an instance with no inputs (`Ctx::spawn`); an
//!   internal node makes a join instance with two slots that continues to
//!   its parent's slot, and starts its two children with the join's slots
//!   (children on alternating cores in the top levels, local below);
//!   instances fired: every node and every join.
//! * rayon: a node is a `rayon::scope` task; an internal node allocates a
//!   join record (a count and a sum) which the second child to deliver
//!   passes up.
//! * dagx: the same tree built as a static DAG (a task per node, each
//!   internal one depending on its two children), run by a tokio
//!   multi-thread runtime; timed with its construction.
//! * tokio: a node is a task (`tokio::spawn`) on a multi-thread runtime
//!   that spawns its two children and awaits their handles.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manycore::{Core, Runtime};
use dagx::Task;
use manycore_flow::{Ctx, Instance, Outcome, Slot, User};

/// Nodes of a tree of depth `depth`.
pub fn nodes(depth: u32) -> u64 {
    (1u64 << (depth + 1)) - 1
}

/// Instances the flow version fires: every node, and a join per internal node.
pub fn flow_instances(depth: u32) -> u64 {
    nodes(depth) + (1u64 << depth) - 1
}

/// The root's value: the sum of the leaves' indices 0..2^depth.
pub fn expected_sum(depth: u32) -> u64 {
    let l = 1u64 << depth;
    l * (l - 1) / 2
}

/// Subtrees of at most this depth stay on their core in the flow version;
/// above it, a node's two children go to alternating cores (as in the
/// crate's fib example).
pub const SPREAD: u32 = 12;

/// The flow version on `rt`'s cores; `Err` if the root's value does not
/// arrive within `limit`.
pub fn run_flow(rt: &Runtime, depth: u32, spread: u32, limit: Duration) -> Result<u64, String> {
    let cores: Arc<[Core]> = rt.cores().into();
    let (k, out) = Outcome::new(rt.core(0)).map_err(|e| e.to_string())?;
    Instance::<(), User>::new(rt.core(0), 0, move |ctx, _| {
        flow_node(ctx, &cores, spread, depth, 0, k)
    })
    .map_err(|e| e.to_string())?;
    out.wait_timeout(limit).map_err(|e| e.to_string())
}

/// A node above the spread depth: children on alternating cores.
fn flow_node(
    ctx: &Ctx<'_, User>,
    cores: &Arc<[Core]>,
    spread: u32,
    depth: u32,
    idx: u64,
    k: Slot<u64>,
) {
    if depth <= spread {
        return flow_local(ctx, depth, idx, k);
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), 2, move |ctx, xs| {
        let _ = ctx.signal(&k, xs[0] + xs[1]);
    }) else {
        return;
    };
    for i in 0..2u64 {
        let on = &cores[(ctx.core().index() + i as usize) % cores.len()];
        let (slot, cs) = (join.slot(i as usize), cores.clone());
        let _ = ctx.spawn(on, move |ctx| {
            flow_node(ctx, &cs, spread, depth - 1, idx * 2 + i, slot)
        });
    }
}

/// A node of a subtree that stays on its core.
fn flow_local(ctx: &Ctx<'_, User>, depth: u32, idx: u64, k: Slot<u64>) {
    if depth == 0 {
        let _ = ctx.signal(&k, idx);
        return;
    }
    let Ok(join) = Instance::<u64>::new(ctx.core(), 2, move |ctx, xs| {
        let _ = ctx.signal(&k, xs[0] + xs[1]);
    }) else {
        return;
    };
    for i in 0..2u64 {
        let slot = join.slot(i as usize);
        let _ = ctx.spawn(ctx.core(), move |ctx| {
            flow_local(ctx, depth - 1, idx * 2 + i, slot)
        });
    }
}

/// Where a rayon node delivers its value.
#[derive(Clone)]
enum Up {
    Root(Arc<AtomicU64>),
    Parent(Arc<Join>),
}

/// An internal node's join in the rayon version.
struct Join {
    pending: AtomicU32,
    sum: AtomicU64,
    up: Up,
}

/// Delivers `v`; the second child to arrive at a join passes the sum up.
fn deliver(mut up: Up, mut v: u64) {
    loop {
        match up {
            Up::Root(r) => {
                r.store(v, Ordering::Release);
                return;
            }
            Up::Parent(j) => {
                j.sum.fetch_add(v, Ordering::Relaxed);
                // AcqRel: the last child sees the other child's addition.
                if j.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                    return;
                }
                v = j.sum.load(Ordering::Relaxed);
                up = j.up.clone();
            }
        }
    }
}

fn rayon_node(s: &rayon::Scope<'_>, depth: u32, idx: u64, up: Up) {
    if depth == 0 {
        return deliver(up, idx);
    }
    let j = Arc::new(Join {
        pending: AtomicU32::new(2),
        sum: AtomicU64::new(0),
        up,
    });
    for i in 0..2u64 {
        let j = j.clone();
        s.spawn(move |s| rayon_node(s, depth - 1, idx * 2 + i, Up::Parent(j)));
    }
}

/// The rayon version on `pool`.
pub fn run_rayon(pool: &rayon::ThreadPool, depth: u32) -> u64 {
    let root = Arc::new(AtomicU64::new(u64::MAX));
    let r = root.clone();
    pool.install(|| rayon::scope(|s| s.spawn(move |s| rayon_node(s, depth, 0, Up::Root(r)))));
    root.load(Ordering::Acquire)
}

type BoxedNode = Pin<Box<dyn Future<Output = u64> + Send>>;

fn tokio_node(depth: u32, idx: u64) -> BoxedNode {
    Box::pin(async move {
        if depth == 0 {
            return idx;
        }
        let a = tokio::spawn(tokio_node(depth - 1, idx * 2));
        let b = tokio::spawn(tokio_node(depth - 1, idx * 2 + 1));
        // A failed child poisons the sum (the caller checks it).
        let a = a.await.unwrap_or(u64::MAX);
        a.saturating_add(b.await.unwrap_or(u64::MAX))
    })
}

/// The tokio version on `rt`.
pub fn run_tokio(rt: &tokio::runtime::Runtime, depth: u32) -> u64 {
    rt.block_on(async move { tokio::spawn(tokio_node(depth, 0)).await })
        .unwrap_or(u64::MAX)
}

/// A leaf of the dagx tree.
struct Leaf(u64);

#[dagx::task]
impl Leaf {
    async fn run(&self) -> u64 {
        self.0
    }
}

/// An internal node of the dagx tree.
struct Add;

#[dagx::task]
impl Add {
    async fn run(a: &u64, b: &u64) -> u64 {
        a + b
    }
}

/// The dagx version, run by `rt`: the root's value and how long building
/// the DAG took (within the whole).
pub fn run_dagx(rt: &tokio::runtime::Runtime, depth: u32) -> Result<(u64, Duration), String> {
    let t = Instant::now();
    let dag = dagx::DagRunner::new();
    let mut layer: Vec<dagx::TaskHandle<u64>> = (0..1u64 << depth)
        .map(|i| dagx::TaskHandle::from(dag.add_task(Leaf(i))))
        .collect();
    while layer.len() > 1 {
        layer = layer
            .chunks(2)
            .map(|p| dag.add_task(Add).depends_on((&p[0], &p[1])))
            .collect();
    }
    let build = t.elapsed();
    let root = layer[0];
    rt.block_on(dag.run(|fut| {
        tokio::spawn(fut);
    }))
    .map_err(|e| format!("dagx: {e}"))?;
    let v = dag.get(root).map_err(|e| format!("dagx: {e}"))?;
    Ok((v, build))
}

/// A tokio multi-thread runtime with `workers` workers.
pub fn tokio_runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// A rayon pool of `workers` threads.
pub fn rayon_pool(workers: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers.max(1))
        .build()
        .map_err(|e| format!("rayon pool: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree of 1023 nodes gives the same sum in all four systems, with
    /// the flow version spread over two cores and kept on one.
    #[test]
    fn every_system_sums_the_tree() {
        let depth = 9;
        assert_eq!(nodes(depth), 1023);
        assert_eq!(flow_instances(depth), 1023 + 511);
        let want = expected_sum(depth);
        assert_eq!(want, (0..512u64).sum::<u64>());
        let rt = Runtime::builder().cores(2).build().unwrap();
        for spread in [3, SPREAD] {
            let got = run_flow(&rt, depth, spread, Duration::from_secs(30));
            assert_eq!(got, Ok(want), "spread {spread}");
        }
        rt.shutdown();
        assert_eq!(run_rayon(&rayon_pool(2).unwrap(), depth), want);
        let t = tokio_runtime(2).unwrap();
        assert_eq!(run_tokio(&t, depth), want);
        assert_eq!(run_dagx(&t, depth).map(|r| r.0), Ok(want));
        // A tree of one node.
        assert_eq!(run_rayon(&rayon_pool(1).unwrap(), 0), 0);
        assert_eq!(run_dagx(&t, 0).map(|r| r.0), Ok(0));
    }
}

