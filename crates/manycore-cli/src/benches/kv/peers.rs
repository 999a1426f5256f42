//! The peer rows of the kv benchmark: one map shared by T std threads,
//! behind a `Mutex`, an `RwLock` (gets under the read lock), or a `DashMap`
//! (a sharded map of locks). The threads are the clients: the row's own
//! thread and T - 1 others, each running its operations one at a time.

use std::sync::{Mutex, RwLock};

use dashmap::DashMap;

use super::workload::{fold, on_threads, prefill, sorted, Map, Measured, Op, Watch, Workload};

/// A peer implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// `Mutex<HashMap<u64, u64>>`.
    Mutex,
    /// `RwLock<HashMap<u64, u64>>`.
    RwLock,
    /// `dashmap::DashMap<u64, u64>`.
    DashMap,
}

impl Peer {
    /// All three, in table order.
    pub const ALL: [Peer; 3] = [Peer::Mutex, Peer::RwLock, Peer::DashMap];
    /// The impl of its records.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Mutex => "std-mutex",
            Peer::RwLock => "std-rwlock",
            Peer::DashMap => "dashmap",
        }
    }
}

/// A map several threads share.
trait Shared: Sync {
    fn apply(&self, op: Op) -> Option<u64>;
    fn contents(&self) -> Vec<(u64, u64)>;
}

fn poisoned<T>(e: std::sync::PoisonError<T>) -> T {
    e.into_inner()
}

impl Shared for Mutex<Map> {
    fn apply(&self, op: Op) -> Option<u64> {
        op.apply(&mut self.lock().unwrap_or_else(poisoned))
    }
    fn contents(&self) -> Vec<(u64, u64)> {
        let m = self.lock().unwrap_or_else(poisoned);
        m.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

impl Shared for RwLock<Map> {
    fn apply(&self, op: Op) -> Option<u64> {
        match op {
            Op::Get(k) => self.read().unwrap_or_else(poisoned).get(&k).copied(),
            Op::Put(k, v) => self.write().unwrap_or_else(poisoned).insert(k, v),
        }
    }
    fn contents(&self) -> Vec<(u64, u64)> {
        let m = self.read().unwrap_or_else(poisoned);
        m.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

impl Shared for DashMap<u64, u64> {
    fn apply(&self, op: Op) -> Option<u64> {
        match op {
            Op::Get(k) => self.get(&k).map(|r| *r),
            Op::Put(k, v) => self.insert(k, v),
        }
    }
    fn contents(&self) -> Vec<(u64, u64)> {
        self.iter().map(|r| (*r.key(), *r.value())).collect()
    }
}

/// One repetition of a peer row with `threads` threads; the clients
/// report to `watch`.
pub fn run(peer: Peer, threads: usize, w: &Workload, watch: &Watch) -> Result<Measured, String> {
    let initial = prefill(w.spec.keys, 0, 1);
    match peer {
        Peer::Mutex => drive(&Mutex::new(initial), threads, w, watch),
        Peer::RwLock => drive(&RwLock::new(initial), threads, w, watch),
        Peer::DashMap => drive(&initial.into_iter().collect::<DashMap<_, _>>(), threads, w, watch),
    }
}

/// Runs the clients on `threads` threads (this one among them), timed from
/// the first one's start to the last one's end.
fn drive(
    map: &impl Shared,
    threads: usize,
    w: &Workload,
    watch: &Watch,
) -> Result<Measured, String> {
    let parts = w.partition(threads);
    let (elapsed, checksum) = on_threads(&parts, |c, ops| {
        let mut sum = 0;
        for (i, &op) in ops.iter().enumerate() {
            watch.tick(c, i)?;
            sum = fold(sum, map.apply(op));
        }
        Ok(sum)
    })?;
    Ok(Measured {
        elapsed,
        clients: parts.len(),
        checksum,
        contents: sorted(map.contents()),
    })
}
