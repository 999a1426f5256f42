//! The manycore rows of the kv benchmark: a runtime of n cores, shard i of
//! the map placed on core i as a `Remote<HashMap<u64, u64>>`, and one of four
//! kinds of client driving it. Every operation is one `Remote::invoke` on the
//! key's shard, written as a user would (`invoke(move |m| m.get(&k).copied())`),
//! waited on with plain `wait()` or `.await`: the row's time bound is kept
//! from outside (see `super::bounded`), not by deadlines on the calls, which
//! would cost a clock read or a timer per call. Clients report to the
//! row's [`Watch`], so that a row stopped for taking too long winds down
//! and shuts its runtime down instead of spinning on for the rest of the run.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use manycore::{Invocation, Remote, Runtime};

pub use crate::idle::Idle;

use super::workload::{
    fold, on_threads, prefill, shard_of, sorted, Map, Measured, Op, Watch, Workload,
};

/// How a client reaches the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Threads that are not cores (the row's own thread and `--clients - 1`
    /// std threads), each `invoke(..).wait()`, one operation at a time.
    OutsideSync,
    /// One closure per core (`core.call`), each `invoke(..).wait()` in a loop.
    CoreBlocking,
    /// One async task per core (`core.spawn_async`), each `invoke(..).await` in a loop.
    CoreAsync,
    /// One outside thread keeping up to `--window` invocations in flight.
    Pipelined,
    /// One outside thread that gathers each shard's operations into
    /// batches of `--batch` and sends each batch as one invocation, keeping
    /// up to `--window` batches in flight: the way to amortise a message
    /// over many operations (a lock-based map pays its lock per operation).
    PipelinedBatch,
}

impl Client {
    /// All five, in table order.
    pub const ALL: [Client; 5] = [
        Client::OutsideSync,
        Client::CoreBlocking,
        Client::CoreAsync,
        Client::Pipelined,
        Client::PipelinedBatch,
    ];
    /// The first part of its case name, and its `--only` group.
    pub fn name(self) -> &'static str {
        match self {
            Client::OutsideSync => "outside-sync",
            Client::CoreBlocking => "core-blocking",
            Client::CoreAsync => "core-async",
            Client::Pipelined => "pipelined",
            Client::PipelinedBatch => "pipelined-batch",
        }
    }
}

/// The shards of a runtime: shard i on core i.
type Shards = Vec<Remote<Map>>;

/// Sends `op` to its shard; the invocation resolves to the op's result.
#[inline]
fn send(shards: &Shards, op: Op) -> Invocation<Option<u64>> {
    let s = &shards[shard_of(op.key(), shards.len())];
    match op {
        Op::Get(k) => s.invoke(move |m: &mut Map| m.get(&k).copied()),
        Op::Put(k, v) => s.invoke(move |m: &mut Map| m.insert(k, v)),
    }
}

/// Synchronous client `c`: its operations one at a time; the checksum of the results.
fn sync_client(shards: &Shards, c: usize, ops: &[Op], watch: &Watch) -> Result<u64, String> {
    let mut sum = 0;
    for (i, &op) in ops.iter().enumerate() {
        watch.tick(c, i)?;
        let r = send(shards, op).wait().map_err(|e| format!("invoke: {e}"))?;
        sum = fold(sum, r);
    }
    Ok(sum)
}

/// How many clients a row of this kind has.
pub fn clients(client: Client, cores: usize, p: Params) -> usize {
    match client {
        Client::OutsideSync => p.clients,
        Client::CoreBlocking | Client::CoreAsync => cores,
        Client::Pipelined | Client::PipelinedBatch => 1,
    }
}

/// How the clients are shaped (beyond their kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Outside threads of [`Client::OutsideSync`].
    pub clients: usize,
    /// Invocations in flight of [`Client::Pipelined`] and
    /// [`Client::PipelinedBatch`].
    pub window: usize,
    /// Operations per invocation of [`Client::PipelinedBatch`].
    pub batch: usize,
}

/// One repetition of a manycore row: a fresh runtime of `cores` cores with
/// policy `idle`, the shards placed and filled, the clients' operations
/// timed, the final contents read back, the runtime shut down. The clients
/// report to `watch` (client numbers: `0..`[`clients`]).
pub fn run(
    client: Client,
    cores: usize,
    idle: Idle,
    w: &Workload,
    p: Params,
    watch: &Arc<Watch>,
) -> Result<Measured, String> {
    let rt = Runtime::builder()
        .cores(cores)
        .idle(idle.policy())
        .build()
        .map_err(|e| format!("cannot build the runtime: {e}"))?;
    let keys = w.spec.keys;
    let shards: Shards = (0..cores)
        .map(|i| {
            rt.core(i)
                .place_with(move || prefill(keys, i, cores))
                .map_err(|e| format!("place shard {i}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let (elapsed, clients, checksum) = match client {
        Client::OutsideSync => {
            let parts = w.partition(clients(client, cores, p));
            let (elapsed, sum) =
                on_threads(&parts, |c, ops| sync_client(&shards, c, ops, watch))?;
            (elapsed, parts.len(), sum)
        }
        Client::CoreBlocking => {
            let parts = w.partition(clients(client, cores, p));
            let t0 = Instant::now();
            let invs: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(i, ops)| {
                    let (shards, watch) = (shards.clone(), watch.clone());
                    rt.core(i).call(move || sync_client(&shards, i, &ops, &watch))
                })
                .collect();
            let sum = collect(invs)?;
            (t0.elapsed(), cores, sum)
        }
        Client::CoreAsync => {
            let parts = w.partition(clients(client, cores, p));
            let t0 = Instant::now();
            let invs: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(i, ops)| {
                    let (shards, watch) = (shards.clone(), watch.clone());
                    rt.core(i).spawn_async(async move {
                        let mut sum = 0;
                        for (j, &op) in ops.iter().enumerate() {
                            watch.tick(i, j)?;
                            let r = send(&shards, op)
                                .await
                                .map_err(|e| format!("invoke: {e}"))?;
                            sum = fold(sum, r);
                        }
                        Ok(sum)
                    })
                })
                .collect();
            let sum = collect(invs)?;
            (t0.elapsed(), cores, sum)
        }
        Client::Pipelined => {
            let window = p.window.max(1);
            let mut q: VecDeque<Invocation<Option<u64>>> = VecDeque::with_capacity(window);
            let mut sum = 0;
            let t0 = Instant::now();
            for (i, &op) in w.ops.iter().enumerate() {
                watch.tick(0, i)?;
                if q.len() == window {
                    if let Some(inv) = q.pop_front() {
                        sum = fold(sum, inv.wait().map_err(|e| format!("invoke: {e}"))?);
                    }
                }
                q.push_back(send(&shards, op));
            }
            for inv in q {
                sum = fold(sum, inv.wait().map_err(|e| format!("invoke: {e}"))?);
            }
            (t0.elapsed(), 1, sum)
        }
        Client::PipelinedBatch => {
            let t0 = Instant::now();
            let sum = batched_client(&shards, &w.ops, p, watch)?;
            (t0.elapsed(), 1, sum)
        }
    };
    let mut contents = Vec::with_capacity(keys as usize);
    for s in &shards {
        let part = s
            .invoke(|m: &mut Map| m.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>())
            .wait()
            .map_err(|e| format!("read back: {e}"))?;
        contents.extend(part);
    }
    rt.shutdown();
    Ok(Measured {
        elapsed,
        clients,
        checksum,
        contents: sorted(contents),
    })
}

/// The batched pipelined client: each shard's operations gather in a batch
/// of `p.batch`; a full batch goes out as one invocation that applies its
/// operations in order and returns their folded results, with at most
/// `p.window` batches in flight (the oldest is waited for first). Order per
/// key holds: a key's operations go to one shard, in one batch or in
/// batches sent one after another from this thread (FIFO per sender and
/// object). The partial batches go out at the end.
fn batched_client(shards: &Shards, ops: &[Op], p: Params, watch: &Watch) -> Result<u64, String> {
    let (size, window) = (p.batch.max(1), p.window.max(1));
    let mut pending: Vec<Vec<Op>> = (0..shards.len()).map(|_| Vec::with_capacity(size)).collect();
    let mut q: VecDeque<Invocation<u64>> = VecDeque::with_capacity(window);
    let mut sum = 0u64;
    let mut ship = |s: usize, batch: Vec<Op>, sum: &mut u64| -> Result<(), String> {
        if q.len() == window {
            if let Some(inv) = q.pop_front() {
                *sum = sum.wrapping_add(inv.wait().map_err(|e| format!("invoke: {e}"))?);
            }
        }
        q.push_back(shards[s].invoke(move |m: &mut Map| {
            batch.iter().fold(0, |acc, op| fold(acc, op.apply(m)))
        }));
        Ok(())
    };
    for (i, &op) in ops.iter().enumerate() {
        watch.tick(0, i)?;
        let s = shard_of(op.key(), shards.len());
        pending[s].push(op);
        if pending[s].len() == size {
            let batch = std::mem::replace(&mut pending[s], Vec::with_capacity(size));
            ship(s, batch, &mut sum)?;
        }
    }
    for (s, batch) in pending.into_iter().enumerate() {
        if !batch.is_empty() {
            ship(s, batch, &mut sum)?;
        }
    }
    for inv in q {
        sum = sum.wrapping_add(inv.wait().map_err(|e| format!("invoke: {e}"))?);
    }
    Ok(sum)
}

/// Waits for every client on a core; the sum of their checksums.
fn collect(invs: Vec<Invocation<Result<u64, String>>>) -> Result<u64, String> {
    let mut sum = 0u64;
    for inv in invs {
        let r = inv.wait().map_err(|e| format!("client: {e}"))?;
        sum = sum.wrapping_add(r?);
    }
    Ok(sum)
}
