//! An endpoint: one region plus its private bookkeeping (rckSock's per-core
//! MPB with its buddy system, section 3.4). A listener owns one; each process
//! has one client endpoint per namespace for its outgoing connections. The
//! sending ring of every connection lives in its sender's endpoint.

use crate::buddy::BuddyAllocator;
use crate::layout::{Layout, FLAG_CLOSED, KIND_CLIENT};
use crate::namespace::Namespace;
use crate::raw;
use crate::region::Shm;
use crate::ring::{RingRef, TxState};
use manycore_sync::atomic::{AtomicU32, Ordering};
use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// How we learn that the peer endpoint is gone.
#[derive(Debug)]
pub(crate) enum Liveness {
    /// The connection's Unix socket (kept open for the connection's life):
    /// it hangs up once every copy of the peer's end is closed, i.e. the
    /// peer dropped the connection or its process died (even by SIGKILL).
    Socket(OwnedFd),
    /// Never goes away (waits on our own endpoint).
    Never,
}

impl Liveness {
    pub fn dead(&self) -> bool {
        match self {
            Liveness::Socket(fd) => raw::hung_up(fd),
            Liveness::Never => false,
        }
    }
}

/// One sending ring owned by this endpoint.
#[derive(Debug)]
pub(crate) struct TxSlot {
    pub idx: u32,
    pub base: u32,
    /// Block size the buddy allocator currently grants (shrinks on a split,
    /// grows on a merge). Stored Relaxed under the endpoint lock (`alloc`,
    /// `free_locked`); loaded Relaxed by the ring's writer as the chunk it
    /// should use, which it applies only at an empty moment. Nothing else is
    /// published through it.
    pub alloc: AtomicU32,
    /// The chunk the ring may still hold unread data in, `[base,
    /// base + extent)`. Stored with Release when the writer starts using a
    /// new chunk (`apply_locked`, `publish_extent`), after the ring drained;
    /// pairs with the Acquire in `blocker`, so a neighbour's new ring takes
    /// over the freed space only after the reader's copies out of it.
    pub extent: AtomicU32,
    pub tx: Mutex<TxState>,
    /// The connection's peer, once connected: a ring whose reader died will
    /// never drain, so its shrink need not wait for it.
    pub live: OnceLock<Arc<Liveness>>,
}

#[derive(Debug)]
struct Zombie {
    slot: Arc<TxSlot>,
    peer: Arc<Liveness>,
}

#[derive(Debug)]
struct EpState {
    buddy: BuddyAllocator,
    slots: Vec<Option<Arc<TxSlot>>>,
    zombies: Vec<Zombie>,
}

/// A region and the private bookkeeping of its buffer space.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub shm: Arc<Shm>,
    st: Mutex<EpState>,
}

/// Endpoint parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EpParams {
    pub buffer: usize,
    pub min_chunk: u32,
    pub max_conns: u32,
}

impl EpParams {
    pub fn layout(&self) -> io::Result<Layout> {
        let max = (self.buffer / self.min_chunk.max(1) as usize).min(u32::MAX as usize) as u32;
        Layout::new(self.max_conns.min(max).max(1), self.buffer, self.min_chunk).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "manycore-sock: bad buffer parameters",
            )
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Endpoint {
    pub fn create(name: &str, kind: u32, p: EpParams) -> io::Result<Arc<Endpoint>> {
        let layout = p.layout()?;
        let shm = Shm::create(name, kind, layout)?;
        let buddy = BuddyAllocator::new(layout.data_size as u32, layout.min_chunk)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(Arc::new(Endpoint {
            shm,
            st: Mutex::new(EpState {
                buddy,
                slots: vec![None; layout.nslots as usize],
                zombies: Vec::new(),
            }),
        }))
    }

    /// Grants a new sending ring: a slot and a buddy block. Splits the largest
    /// block in use if nothing is free (its owner shrinks at its next empty moment).
    pub fn alloc(&self) -> io::Result<Arc<TxSlot>> {
        let mut st = lock(&self.st);
        self.reap_locked(&mut st);
        let idx = st.slots.iter().position(Option::is_none).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "manycore-sock: no free connection slot",
            )
        })?;
        let g = st.buddy.alloc(idx as u64).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "manycore-sock: buffer space exhausted",
            )
        })?;
        let mut victim = None;
        if let Some((owner, size)) = g.split {
            if let Some(v) = st.slots.get(owner as usize).and_then(Clone::clone) {
                v.alloc.store(size, Ordering::Relaxed);
                victim = Some(v);
            }
        }
        let slot = self
            .shm
            .slot(idx as u32)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
        slot.prod.head.store(0, Ordering::Relaxed);
        slot.prod.reset.store(0, Ordering::Relaxed);
        slot.prod.flags.store(0, Ordering::Relaxed);
        slot.prod.want_tail.store(0, Ordering::Relaxed);
        slot.cons.tail.store(0, Ordering::Relaxed);
        slot.cons.flags.store(0, Ordering::Relaxed);
        let ts = Arc::new(TxSlot {
            idx: idx as u32,
            base: g.off,
            alloc: AtomicU32::new(g.size),
            extent: AtomicU32::new(g.size),
            tx: Mutex::new(TxState::new(g.size)),
            live: OnceLock::new(),
        });
        st.slots[idx] = Some(ts.clone());
        drop(st);
        if let Some(v) = victim {
            self.try_apply(&v);
        }
        Ok(ts)
    }

    /// Frees a slot whose connection never came up.
    pub fn free_now(&self, s: &TxSlot) {
        let mut st = lock(&self.st);
        Self::free_locked(&mut st, s.idx);
    }

    fn free_locked(st: &mut EpState, idx: u32) {
        if st.slots.get(idx as usize).is_some_and(Option::is_some) {
            if let Some(grown) = st.buddy.free(idx as u64) {
                for (o, size) in grown {
                    if let Some(Some(s)) = st.slots.get(o as usize) {
                        s.alloc.store(size, Ordering::Relaxed);
                    }
                }
            }
            st.slots[idx as usize] = None;
        }
    }

    /// A closed connection's ring stays allocated until the peer has said it
    /// reads no more (or died): then its space merges back.
    pub fn retire(&self, slot: Arc<TxSlot>, peer: Arc<Liveness>) {
        let mut st = lock(&self.st);
        st.zombies.push(Zombie { slot, peer });
        self.reap_locked(&mut st);
    }

    /// Frees retired rings whose peers have acknowledged the close (the
    /// consumer line's flags are non-zero; garbage counts as "done") or died.
    fn reap_locked(&self, st: &mut EpState) {
        let mut i = 0;
        while i < st.zombies.len() {
            let z = &st.zombies[i];
            let idx = z.slot.idx;
            // Acquire; pairs with the reader's Release store of its close flag.
            let acked = self
                .shm
                .slot(idx)
                .is_none_or(|s| s.cons.flags.load(Ordering::Acquire) != 0);
            if acked || z.peer.dead() {
                Self::free_locked(st, idx);
                st.zombies.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// If `v`'s ring is idle, applies its new chunk size now.
    pub fn try_apply(&self, v: &TxSlot) {
        let Ok(mut tx) = v.tx.try_lock() else { return };
        let Some(r) = RingRef::new(&*self.shm, v.idx, v.base) else {
            return;
        };
        self.apply_locked(v, &mut tx, &r);
    }

    /// Under `v.tx`: if the ring is empty, restart it at offset 0 with the
    /// granted chunk and publish the new extent.
    pub fn apply_locked(&self, v: &TxSlot, tx: &mut TxState, r: &RingRef<'_, Shm>) {
        let desired = v.alloc.load(Ordering::Relaxed);
        if tx.chunk == desired || tx.broken {
            return;
        }
        // Acquire; pairs with the reader's Release store of `tail`: every
        // byte it read is copied out before we hand the space to a neighbour.
        let t = r.slot.cons.tail.load(Ordering::Acquire);
        if t != tx.head {
            // A valid tail (monotonic, never past head) may allow a shrink
            // in place: the unread data already lies below the new end.
            if t >= tx.tail && t <= tx.head {
                tx.tail = t;
                if crate::ring::shrink_in_place(tx, desired) {
                    // Release; pairs with the Acquire in `blocker`.
                    v.extent.store(desired, Ordering::Release);
                    return;
                }
            }
            if !v.live.get().is_some_and(|l| l.dead()) {
                return;
            }
            // Nobody will read what is left: restart within the new chunk.
        } else {
            tx.tail = t;
        }
        tx.woff = 0;
        tx.chunk = desired;
        // Relaxed: published by the next Release store of `head`.
        r.slot.prod.reset.store(tx.head, Ordering::Relaxed);
        // Release; pairs with the Acquire in `blocker`.
        v.extent.store(desired, Ordering::Release);
    }

    /// Publishes the chunk the writer now uses (after `try_write`).
    pub fn publish_extent(v: &TxSlot, chunk: u32) {
        if v.extent.load(Ordering::Relaxed) != chunk {
            // Release; pairs with the Acquire in `blocker`.
            v.extent.store(chunk, Ordering::Release);
        }
    }

    /// A ring whose possibly-unread data overlaps `s`'s block, if any.
    pub fn blocker(&self, s: &TxSlot) -> Option<Arc<TxSlot>> {
        let mut st = lock(&self.st);
        self.reap_locked(&mut st);
        let lo = s.base as u64;
        let hi = lo + s.alloc.load(Ordering::Relaxed) as u64;
        for o in st.slots.iter().flatten() {
            if o.idx == s.idx {
                continue;
            }
            let olo = o.base as u64;
            // Acquire; pairs with the Release stores of `extent`.
            let ohi = olo + o.extent.load(Ordering::Acquire) as u64;
            if olo < hi && lo < ohi {
                return Some(o.clone());
            }
        }
        None
    }

    /// Marks the slot's writer side closed (EOF for the reader).
    pub fn close_tx(&self, s: &TxSlot) {
        if let Some(slot) = self.shm.slot(s.idx) {
            // Release; pairs with the Acquire in `writer_closed`: all data
            // committed before the close is visible to a reader that sees it.
            slot.prod.flags.store(FLAG_CLOSED, Ordering::Release);
            slot.prod.data_ec.notify_all();
            slot.cons.space_ec.notify_all();
        }
    }
}

/// The process's client endpoint for `ns` (created on first use, dropped with
/// its last connection) and its sequence number (its name is `c<pid>-<seq>`).
pub(crate) fn client_endpoint(ns: &Namespace) -> io::Result<(Arc<Endpoint>, u32)> {
    type Reg = Mutex<HashMap<Namespace, (Weak<Endpoint>, u32)>>;
    static REG: OnceLock<Reg> = OnceLock::new();
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let mut reg = lock(REG.get_or_init(Default::default));
    if let Some((ep, seq)) = reg.get(ns).and_then(|(w, s)| Some((w.upgrade()?, *s))) {
        return Ok((ep, seq));
    }
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = format!("c{}-{}", raw::getpid(), seq);
    let ep = Endpoint::create(&name, KIND_CLIENT, crate::config::client_params())?;
    reg.insert(ns.clone(), (Arc::downgrade(&ep), seq));
    Ok((ep, seq))
}
