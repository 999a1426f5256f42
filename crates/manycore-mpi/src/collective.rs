//! Collectives across ranks, hierarchical: a rank first combines what its
//! own cores contribute (within the rank, through the local runtime), then
//! the ranks combine their partials along a binomial tree rooted at rank 0
//! and the result comes back down the same tree (the multicast trees of
//! Rotta et al., section II.C, with ranks as the tree's nodes). Partials
//! travel as `CollectiveUp` frames, results as `CollectiveDown` frames,
//! each tagged with the collective's sequence number: ranks call their
//! collectives in the same order, so the numbers agree without any
//! exchange, and a partial that arrives before its rank reached the
//! collective waits in the inbox.
//!
//! Rank `r`'s subtree covers ranks `[r, r + 2^k)`, where `2^k` is the lowest
//! set bit of `r`, and `r` combines its children in increasing order, so
//! `combine` sees its operands in rank order: it must be associative, not
//! commutative.

use crate::codec::{decode, encode_into};
use crate::error::Error;
use crate::header::{Header, Kind};
use crate::shared::{SeqHasher, Shared};
use crate::world::World;
use manycore_sync::{AdaptiveSpin, GapPredictor};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a rank waiting in a collective yields before it sleeps. Longer
/// than a call's wait: a collective waits for a chain of ranks, each of
/// which may be waiting for a CPU when ranks outnumber them.
const SPIN: Duration = Duration::from_micros(500);

thread_local! {
    /// The gaps this thread's adaptive waits in collectives saw.
    static COLL_GAPS: GapPredictor = GapPredictor::new(SPIN);
}

/// A collective frame's key: (collective, kind, sender).
pub(crate) type Key = (u64, u8, usize);

/// Partials and results that arrived, by (collective, kind, sender). Keys
/// are hashed cheaply (`SeqHasher`): they are few and distinct.
#[derive(Default)]
pub(crate) struct CollectiveInbox {
    arrived: Mutex<HashMap<Key, Vec<u8>, BuildHasherDefault<SeqHasher>>>,
    cv: Condvar,
    /// Threads asleep on `cv` (a delivery notifies only if there are any:
    /// changed under the `arrived` lock, so a delivery after a sleeper's
    /// last look sees it).
    sleepers: AtomicUsize,
    seq: AtomicU64,
}

impl CollectiveInbox {
    pub(crate) fn deliver(&self, from: usize, h: Header, frame: Vec<u8>) {
        let sleepers = {
            let mut g = self.arrived.lock().unwrap_or_else(|e| e.into_inner());
            g.insert((h.seq, h.kind as u8, from), frame);
            self.sleepers.load(Ordering::Relaxed)
        };
        if sleepers > 0 {
            self.cv.notify_all();
        }
    }

    /// The frame of collective `seq` of `kind` from `from`, once it is
    /// here. The engine receives it: waiting threads here do not poll MPI
    /// themselves, because a collective waits for other ranks' threads,
    /// which (when ranks outnumber CPUs) need the CPU more than another
    /// poller does, and measured so, the engine polling alone was faster
    /// (`docs/notes/2026-11-25-mpi-round-trip.md`). The waiter yields for a
    /// while (a partner's partial usually arrives within microseconds),
    /// then sleeps.
    fn take(
        &self,
        sh: &Arc<Shared>,
        (seq, kind, from): (u64, Kind, usize),
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, Error> {
        let key = (seq, kind as u8, from);
        let lock = || self.arrived.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = lock().remove(&key) {
            return Ok(f);
        }
        if crate::progress::progressing() {
            return Err(Error::WouldBlock);
        }
        let coll_poll = sh.tuning().coll_poll;
        if coll_poll {
            // One poll before anything else: the frame is often in MPI's
            // hands already (its sender ran ahead), and then this costs no
            // clock read and no count among the pollers.
            match crate::progress::poll_for_collective(sh, key) {
                Some(Ok(f)) => return Ok(f),
                Some(Err(true)) => {
                    if let Some(f) = lock().remove(&key) {
                        return Ok(f);
                    }
                }
                _ => {}
            }
        }
        let start = Instant::now();
        let deadline = timeout.and_then(|t| start.checked_add(t));
        let polling = if coll_poll { sh.polling() } else { None };
        if polling.is_none() {
            // The engine may be asleep after a quiet spell: it is to poll
            // eagerly from now. (A thread that polls itself leaves the
            // engine asleep: it would only step aside again.)
            sh.hand_over();
        }
        if polling.is_none() && sh.tuning().adaptive {
            // As this thread's recent waits say: pausing, or yielding while
            // the process has more awake threads than CPUs, counted as
            // awake; then asleep below.
            let found = COLL_GAPS.with(|gaps| {
                let mut w = AdaptiveSpin::counted(SPIN, gaps);
                while w.spin() {
                    if let Some(f) = lock().remove(&key) {
                        w.found();
                        return Some(f);
                    }
                }
                None
            });
            if let Some(f) = found {
                return Ok(f);
            }
        } else {
            loop {
                if let Some(f) = lock().remove(&key) {
                    return Ok(f);
                }
                if start.elapsed() >= SPIN {
                    break;
                }
                if polling.is_some() {
                    match crate::progress::poll_for_collective(sh, key) {
                        // This poll received the frame itself.
                        Some(Ok(f)) => return Ok(f),
                        // A poll that received something looks in the
                        // inbox again at once: the frame may be among it.
                        Some(Err(true)) => continue,
                        _ => {}
                    }
                }
                std::thread::yield_now();
            }
        }
        if polling.is_some() {
            drop(polling);
            sh.hand_over();
        }
        // Asleep from here: the engine, which receives the partial, keeps
        // its own sleeps short meanwhile.
        let _expecting = sh.expect();
        let mut g = lock();
        loop {
            if let Some(f) = g.remove(&key) {
                return Ok(f);
            }
            let wait = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::Timeout("a collective's partner rank"));
                    }
                    d - now
                }
                None => Duration::from_secs(1),
            };
            self.sleepers.fetch_add(1, Ordering::Relaxed);
            g = self
                .cv
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl World {
    fn coll_send<T: Serialize>(&self, to: usize, seq: u64, kind: Kind, v: &T) -> Result<(), Error> {
        let mut h = Header::new(kind);
        h.seq = seq;
        let mut f = h.frame(32);
        encode_into(&mut f, v)?;
        self.shared.send(to, f, None);
        Ok(())
    }

    fn coll_take<T: DeserializeOwned>(
        &self,
        seq: u64,
        kind: Kind,
        from: usize,
    ) -> Result<T, Error> {
        let sh = &self.shared;
        let f = sh.coll.take(sh, (seq, kind, from), sh.timeout)?;
        let v = decode(&f[Header::LEN..]);
        crate::header::recycle(f);
        Ok(v?)
    }

    fn up<T: Serialize + DeserializeOwned>(
        &self,
        seq: u64,
        local: T,
        combine: &impl Fn(T, T) -> T,
    ) -> Result<Option<T>, Error> {
        let (r, n) = (self.shared.rank, self.shared.size);
        let mut acc = local;
        let mut mask = 1;
        while mask < n {
            if r & mask != 0 {
                self.coll_send(r - mask, seq, Kind::CollectiveUp, &acc)?;
                return Ok(None);
            }
            if r + mask < n {
                let child: T = self.coll_take(seq, Kind::CollectiveUp, r + mask)?;
                acc = combine(acc, child);
            }
            mask <<= 1;
        }
        Ok(Some(acc))
    }

    fn down<T: Serialize + DeserializeOwned>(&self, seq: u64, root: Option<T>) -> Result<T, Error> {
        let (r, n) = (self.shared.rank, self.shared.size);
        // The lowest set bit of r (for rank 0, past the highest rank).
        let low = if r == 0 {
            n.next_power_of_two()
        } else {
            r & r.wrapping_neg()
        };
        let v = match root {
            Some(v) => v,
            None => self.coll_take(seq, Kind::CollectiveDown, r - low)?,
        };
        let mut mask = low >> 1;
        while mask > 0 {
            if r + mask < n {
                self.coll_send(r + mask, seq, Kind::CollectiveDown, &v)?;
            }
            mask >>= 1;
        }
        Ok(v)
    }

    fn next_collective(&self) -> u64 {
        self.shared.coll.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Combines every rank's `local` in rank order; the result on rank 0,
    /// `None` elsewhere. Collective (every rank calls it, in the same order
    /// as its other collectives).
    pub fn reduce<T, C>(&self, local: T, combine: C) -> Result<Option<T>, Error>
    where
        T: Serialize + DeserializeOwned,
        C: Fn(T, T) -> T,
    {
        let seq = self.next_collective();
        self.up(seq, local, &combine)
    }

    /// Rank 0's `value` on every rank (`value` is ignored elsewhere).
    /// Collective.
    pub fn broadcast<T>(&self, value: Option<T>) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
    {
        let seq = self.next_collective();
        let root = if self.shared.rank == 0 {
            Some(value.ok_or(Error::Codec("broadcast: rank 0 gave no value".into()))?)
        } else {
            None
        };
        self.down(seq, root)
    }

    /// Combines every rank's `local` in rank order and returns the result
    /// on every rank. Collective. With a power-of-two number of ranks it
    /// takes log2(ranks) rounds of pairwise exchanges (recursive doubling,
    /// as MPI_Allreduce does for short values); otherwise up the tree and
    /// back down it, twice as many steps.
    pub fn all_reduce<T, C>(&self, local: T, combine: C) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
        C: Fn(T, T) -> T,
    {
        let seq = self.next_collective();
        if self.shared.size.is_power_of_two() {
            return self.doubling(seq, local, &combine);
        }
        let root = self.up(seq, local, &combine)?;
        self.down(seq, root)
    }

    /// Recursive doubling: in round k, rank r swaps its partial with rank
    /// r ^ 2^k. Before the round r's partial covers the ranks of its block
    /// of 2^k (in rank order), the partner's the adjacent block, so the
    /// lower block's partial goes first and the result stays in rank order.
    fn doubling<T: Serialize + DeserializeOwned>(
        &self,
        seq: u64,
        local: T,
        combine: &impl Fn(T, T) -> T,
    ) -> Result<T, Error> {
        let (r, n) = (self.shared.rank, self.shared.size);
        let mut acc = local;
        let mut mask = 1;
        while mask < n {
            let partner = r ^ mask;
            // The key (collective, kind, sender) differs in every round:
            // each round has its own partner.
            self.coll_send(partner, seq, Kind::CollectiveUp, &acc)?;
            let theirs: T = self.coll_take(seq, Kind::CollectiveUp, partner)?;
            acc = if partner < r {
                combine(theirs, acc)
            } else {
                combine(acc, theirs)
            };
            mask <<= 1;
        }
        Ok(acc)
    }

    /// The hierarchical all-reduce: `map(core)` runs on every core of every
    /// rank; each rank combines its cores' values in core order, then the
    /// ranks combine theirs in rank order; every rank gets the result.
    /// Collective.
    pub fn all_reduce_cores<T, M, C>(&self, map: M, combine: C) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        M: Fn(usize) -> T + Send + Sync + 'static,
        C: Fn(T, T) -> T,
    {
        let local = self.reduce_cores(map, &combine)?;
        self.all_reduce(local, combine)
    }

    /// The within-rank level: `map` on every local core at once, combined
    /// in core order.
    fn reduce_cores<T, M, C>(&self, map: M, combine: &C) -> Result<T, Error>
    where
        T: Send + 'static,
        M: Fn(usize) -> T + Send + Sync + 'static,
        C: Fn(T, T) -> T,
    {
        let map = std::sync::Arc::new(map);
        let calls: Vec<_> = self
            .shared
            .rt
            .cores()
            .iter()
            .map(|c| {
                let (map, i) = (map.clone(), c.index());
                c.call(move || map(i))
            })
            .collect();
        let mut acc: Option<T> = None;
        for c in calls {
            let v = c.wait().map_err(|e| match e {
                manycore_rt::InvokeError::Panicked(m) => {
                    Error::Task(crate::error::CallError::Panicked(m))
                }
                _ => Error::Shutdown,
            })?;
            acc = Some(match acc {
                None => v,
                Some(a) => combine(a, v),
            });
        }
        acc.ok_or(Error::Shutdown)
    }
}
