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
use crate::world::World;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Partials and results that arrived, by (collective, kind, sender).
#[derive(Default)]
pub(crate) struct CollectiveInbox {
    arrived: Mutex<HashMap<(u64, u8, usize), Vec<u8>>>,
    cv: Condvar,
    seq: AtomicU64,
}

impl CollectiveInbox {
    pub(crate) fn deliver(&self, from: usize, h: Header, frame: Vec<u8>) {
        self.arrived
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((h.seq, h.kind as u8, from), frame);
        self.cv.notify_all();
    }

    fn take(
        &self,
        seq: u64,
        kind: Kind,
        from: usize,
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut g = self.arrived.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(f) = g.remove(&(seq, kind as u8, from)) {
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
            g = self
                .cv
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
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
        let f = self
            .shared
            .coll
            .take(seq, kind, from, self.shared.timeout)?;
        Ok(decode(&f[Header::LEN..])?)
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
    /// on every rank. Collective.
    pub fn all_reduce<T, C>(&self, local: T, combine: C) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
        C: Fn(T, T) -> T,
    {
        let seq = self.next_collective();
        let root = self.up(seq, local, &combine)?;
        self.down(seq, root)
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
