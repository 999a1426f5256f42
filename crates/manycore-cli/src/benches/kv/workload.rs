//! The kv workload: one global list of operations drawn from a seeded
//! generator (keys uniform over the key space, gets and puts in the chosen
//! mix), the maps from a key to its shard and to its client, and the
//! sequential reference every run is checked against.
//!
//! A key belongs to exactly one client (by a hash independent of the shard
//! hash), and each client runs its operations in their global order. Two
//! operations on one key therefore come from one client, in order, and
//! reach one shard in order (per source and destination, messages are FIFO;
//! a lock serialises the peers), while operations on different keys
//! commute. So whatever the interleaving, the final contents and the sum of
//! the results are those of the sequential run, for any number of clients
//! and shards: that is what makes the runs of different client kinds
//! comparable, and checkable.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use manycore_sync::CachePadded;

/// One shard's map (and a peer's whole map).
pub type Map = HashMap<u64, u64>;

/// One operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Reads a key.
    Get(u64),
    /// Writes a value, returning the old one.
    Put(u64, u64),
}

impl Op {
    /// The key it touches.
    pub fn key(self) -> u64 {
        match self {
            Op::Get(k) | Op::Put(k, _) => k,
        }
    }
    /// Applies it to `m` and returns its result (the value read, or the value replaced).
    pub fn apply(self, m: &mut Map) -> Option<u64> {
        match self {
            Op::Get(k) => m.get(&k).copied(),
            Op::Put(k, v) => m.insert(k, v),
        }
    }
}

/// What the workload is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Operations in all (shared among the clients).
    pub ops: usize,
    /// Keys are uniform over `0..keys`; every key is in the map from the start.
    pub keys: u64,
    /// Percentage of gets (the rest are puts).
    pub get_pct: u32,
    /// Seed of the generator.
    pub seed: u64,
}

/// The seed every run uses (a run is the same workload each repetition).
pub const SEED: u64 = 0x6b76_2d62_656e_6368;

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// splitmix64's finaliser: a bijective mix of the bits of `z`.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `h` scaled onto `0..n` (the high half of `h * n`: no division, no bias to speak of).
fn scale(h: u64, n: u64) -> u64 {
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

/// The shard (core) that holds `key`, of `n`.
pub fn shard_of(key: u64, n: usize) -> usize {
    scale(mix(key), n as u64) as usize
}

/// The client that owns `key`, of `c`: a hash independent of [`shard_of`],
/// so that every client's keys spread over every shard.
pub fn client_of(key: u64, c: usize) -> usize {
    scale(mix(key.wrapping_add(GOLDEN) ^ 0x5851_f42d_4c95_7f2d), c as u64) as usize
}

/// The operations of `spec`, in global order.
pub fn generate(spec: &Spec) -> Vec<Op> {
    let mut state = spec.seed;
    let mut next = || {
        state = state.wrapping_add(GOLDEN);
        mix(state)
    };
    (0..spec.ops)
        .map(|i| {
            let key = scale(next(), spec.keys);
            if scale(next(), 100) < u64::from(spec.get_pct) {
                Op::Get(key)
            } else {
                // Values above the key space: never equal to a prefilled value.
                Op::Put(key, spec.keys + i as u64)
            }
        })
        .collect()
}

/// The initial contents of shard `i` of `n`: every key it holds, mapped to itself.
pub fn prefill(keys: u64, i: usize, n: usize) -> Map {
    let mut m = Map::with_capacity((keys as usize / n.max(1)) * 5 / 4 + 16);
    m.extend((0..keys).filter(|&k| shard_of(k, n) == i).map(|k| (k, k)));
    m
}

/// Folds one result into a client's checksum (a wrapping sum: the order of
/// clients does not matter).
pub fn fold(sum: u64, r: Option<u64>) -> u64 {
    sum.wrapping_add(r.map_or(GOLDEN, |v| mix(v ^ 0x2545_f491_4f6c_dd1d)))
}

/// The workload of a run: its spec, its operations, and the sequential
/// reference result.
#[derive(Debug)]
pub struct Workload {
    /// What it is made of.
    pub spec: Spec,
    /// The operations, in global order.
    pub ops: Vec<Op>,
    /// The sum of all results ([`fold`]) of a sequential run.
    pub checksum: u64,
    /// The final contents of a sequential run, sorted by key.
    pub contents: Vec<(u64, u64)>,
}

impl Workload {
    /// Generates the operations and runs them once, sequentially, for the reference.
    pub fn new(spec: Spec) -> Self {
        let ops = generate(&spec);
        let mut m = prefill(spec.keys, 0, 1);
        let checksum = ops.iter().fold(0, |s, op| fold(s, op.apply(&mut m)));
        Self {
            spec,
            ops,
            checksum,
            contents: sorted(m.into_iter().collect()),
        }
    }

    /// The operations of each of `c` clients, each in global order.
    pub fn partition(&self, c: usize) -> Vec<Arc<[Op]>> {
        let c = c.max(1);
        let mut parts: Vec<Vec<Op>> = (0..c)
            .map(|_| Vec::with_capacity(self.ops.len() / c + 16))
            .collect();
        for &op in &self.ops {
            parts[client_of(op.key(), c)].push(op);
        }
        parts.into_iter().map(Arc::from).collect()
    }

    /// Whether a run computed the reference result; the difference if not.
    pub fn check(&self, m: &Measured) -> Result<(), String> {
        if m.checksum != self.checksum {
            return Err(format!(
                "wrong results: checksum {:#x}, expected {:#x}",
                m.checksum, self.checksum
            ));
        }
        if m.contents != self.contents {
            let diff = m
                .contents
                .iter()
                .zip(&self.contents)
                .filter(|(a, b)| a != b)
                .count();
            return Err(format!(
                "wrong final contents: {} entries, expected {}; {diff} differ",
                m.contents.len(),
                self.contents.len()
            ));
        }
        Ok(())
    }
}

/// `v` sorted by key.
pub fn sorted(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    v
}

/// What one repetition of a row measured, and computed.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// From the first operation sent to the last result in.
    pub elapsed: Duration,
    /// How many clients shared the operations.
    pub clients: usize,
    /// The sum of the results ([`fold`]).
    pub checksum: u64,
    /// The final contents, sorted by key.
    pub contents: Vec<(u64, u64)>,
}

impl Measured {
    /// Nanoseconds per operation of one client: the time over the
    /// operations per client.
    pub fn ns_per_op(&self, ops: usize) -> f64 {
        self.elapsed.as_secs_f64() * 1e9 / (ops as f64 / self.clients.max(1) as f64)
    }
    /// Millions of operations per second, all clients together.
    pub fn mops(&self, ops: usize) -> f64 {
        ops as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e6
    }
}

/// The error of a client that saw the stop flag.
pub const STOPPED: &str = "stopped: the row ran out of time";

/// A row's stop flag and its clients' progress. Every 64 operations a
/// client publishes how far it got (a store to a line of its own) and looks
/// at the flag (a load of a line nobody writes until the row is stopped):
/// a row stopped for taking too long winds down, and says how far it got.
#[derive(Debug)]
pub struct Watch {
    stop: AtomicBool,
    done: Box<[CachePadded<AtomicUsize>]>,
}

impl Watch {
    /// A watch for `clients` clients.
    pub fn new(clients: usize) -> Self {
        Self {
            stop: AtomicBool::new(false),
            done: (0..clients.max(1))
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    /// Client `c` is about to run its operation `i`: `Err` once stopped.
    #[inline]
    pub fn tick(&self, c: usize, i: usize) -> Result<(), String> {
        if i % 64 == 0 {
            if let Some(d) = self.done.get(c) {
                d.store(i, Ordering::Relaxed);
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(STOPPED.into());
            }
        }
        Ok(())
    }

    /// Tells the clients to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Operations the clients had started, to within 64 per client.
    pub fn done(&self) -> usize {
        self.done.iter().map(|d| d.load(Ordering::Relaxed)).sum()
    }
}

/// Runs `client(c, part)` for every part `c` on a thread of its own (part 0
/// on the calling thread), released together; returns the wall time from
/// the first client's start to the last one's end (each client reads the
/// clock itself: with more threads than CPUs, some may run before the
/// calling thread is scheduled again), and the sum of their checksums.
pub fn on_threads(
    parts: &[Arc<[Op]>],
    client: impl Fn(usize, &[Op]) -> Result<u64, String> + Sync,
) -> Result<(Duration, u64), String> {
    let barrier = Barrier::new(parts.len());
    let timed = |c: usize| -> Result<(Instant, Instant, u64), String> {
        barrier.wait();
        let t0 = Instant::now();
        let sum = client(c, &parts[c])?;
        Ok((t0, Instant::now(), sum))
    };
    let spans = std::thread::scope(|s| {
        let others: Vec<_> = (1..parts.len())
            .map(|c| {
                let timed = &timed;
                s.spawn(move || timed(c))
            })
            .collect();
        let mut spans = vec![timed(0)];
        for h in others {
            spans.push(
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".to_string())),
            );
        }
        spans
    });
    let (mut first, mut last, mut sum) = (None::<Instant>, None::<Instant>, 0u64);
    for span in spans {
        let (a, b, x) = span?;
        first = Some(first.map_or(a, |f| f.min(a)));
        last = Some(last.map_or(b, |l| l.max(b)));
        sum = sum.wrapping_add(x);
    }
    match (first, last) {
        (Some(a), Some(b)) => Ok((b - a, sum)),
        _ => Err("no clients".into()),
    }
}
