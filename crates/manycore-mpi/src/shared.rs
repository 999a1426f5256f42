//! `Shared`: the state of one rank that the engine, the cores, the callers
//! and the worker of a distributed join share: the local runtime, the
//! registry, the outbox the engine drains, the table of calls waiting for
//! replies, the remote-object table, and the inboxes of joins and
//! collectives. Everything a frame does on arrival starts in `dispatch`.

use crate::collective::CollectiveInbox;
use crate::error::CallError;
use crate::header::{Header, Kind};
use crate::object::ObjectTable;
use crate::pending::{Oneshot, Pending};
use crate::registry::Registry;
use crate::worker::JoinInbox;
use manycore_rt::Runtime;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::Thread;
use std::time::Duration;

/// Work for the engine thread with the world communicator (`World::with_mpi`).
pub(crate) type MpiJob = Box<dyn FnOnce(&mpi::topology::SimpleCommunicator) + Send>;

/// Where an invocation goes and what it runs there.
pub(crate) struct Target {
    pub(crate) rank: usize,
    pub(crate) core: usize,
    pub(crate) kind: Kind,
    pub(crate) func: Result<u32, CallError>,
    pub(crate) object: u64,
}

impl Target {
    /// A registered function on (rank, core).
    pub(crate) fn call(rank: usize, core: usize, func: Result<u32, CallError>) -> Self {
        Target {
            rank,
            core,
            kind: Kind::Call,
            func,
            object: 0,
        }
    }
}

/// A frame (and perhaps its bulk) on its way to another rank.
pub(crate) struct Outgoing {
    pub(crate) to: usize,
    pub(crate) frame: Vec<u8>,
    pub(crate) bulk: Option<Vec<u8>>,
}

pub(crate) struct Shared {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) cores: usize,
    pub(crate) rt: Runtime,
    pub(crate) registry: &'static Registry,
    pub(crate) timeout: Option<Duration>,
    outbox: Mutex<VecDeque<Outgoing>>,
    pub(crate) mpi_jobs: Mutex<VecDeque<MpiJob>>,
    pub(crate) engine: OnceLock<Thread>,
    /// Set once the engine has finalized MPI: nothing can be sent any more.
    pub(crate) engine_gone: AtomicBool,
    /// Set by `World::finalize`: the engine starts the shutdown protocol.
    pub(crate) stopping: AtomicBool,
    /// Set when the world is dropped by a panicking thread: the engine
    /// aborts the job (a collective shutdown cannot finish without the
    /// other ranks, which may be waiting for this one).
    pub(crate) abort: AtomicBool,
    /// `Shutdown` frames received from other ranks.
    pub(crate) shutdowns: AtomicUsize,
    next_seq: AtomicU64,
    pending: Mutex<HashMap<u64, Arc<Oneshot>>>,
    /// Calls and methods running here whose reply is not yet sent.
    pub(crate) handlers: AtomicUsize,
    pub(crate) objects: ObjectTable,
    pub(crate) join: JoinInbox,
    pub(crate) coll: CollectiveInbox,
}

static CURRENT: RwLock<Option<Arc<Shared>>> = RwLock::new(None);

impl Shared {
    pub(crate) fn new(
        rank: usize,
        size: usize,
        rt: Runtime,
        registry: &'static Registry,
        timeout: Option<Duration>,
    ) -> Self {
        Shared {
            rank,
            size,
            cores: rt.num_cores(),
            rt,
            registry,
            timeout,
            outbox: Mutex::new(VecDeque::new()),
            mpi_jobs: Mutex::new(VecDeque::new()),
            engine: OnceLock::new(),
            engine_gone: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            shutdowns: AtomicUsize::new(0),
            next_seq: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            handlers: AtomicUsize::new(0),
            objects: ObjectTable::default(),
            join: JoinInbox::default(),
            coll: CollectiveInbox::default(),
        }
    }

    /// The world of this process, if one is running.
    pub(crate) fn current() -> Option<Arc<Shared>> {
        CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_current(s: Option<Arc<Shared>>) {
        *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// Sends a frame to `to`: on this rank straight to `dispatch`, to
    /// another through the engine. Order per (sender thread, destination)
    /// is kept: the outbox is FIFO and MPI does not overtake.
    pub(crate) fn send(self: &Arc<Self>, to: usize, frame: Vec<u8>, bulk: Option<Vec<u8>>) {
        if to == self.rank {
            crate::dispatch::deliver(self, to, frame, bulk);
            return;
        }
        self.outbox
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Outgoing { to, frame, bulk });
        if let Some(t) = self.engine.get() {
            t.unpark();
        }
    }

    /// Moves the outbox's frames into `into` (the engine's batch).
    pub(crate) fn take_outbox(&self, into: &mut VecDeque<Outgoing>) {
        let mut q = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut *q, into);
    }

    /// Work this rank still owes or awaits (the shutdown protocol ends when
    /// it is zero on every rank and no frame is in flight).
    pub(crate) fn busy(&self) -> u64 {
        let outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner()).len();
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner()).len();
        (outbox + pending + self.handlers.load(Ordering::Acquire)) as u64
    }

    fn check_place(&self, rank: usize, core: usize) -> Result<(), CallError> {
        if rank >= self.size {
            return Err(CallError::NoSuchRank {
                rank,
                size: self.size,
            });
        }
        if core >= self.cores {
            return Err(CallError::NoSuchCore {
                core,
                cores: self.cores,
            });
        }
        Ok(())
    }

    /// Sends an invocation to `to` (`Call` or `Method`): `encode` appends
    /// the arguments after the header. Returns the reply's slot and
    /// sequence number unless it is one-way.
    pub(crate) fn invoke(
        self: &Arc<Self>,
        to: Target,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), crate::codec::CodecError>,
        bulk: Option<Vec<u8>>,
        one_way: bool,
    ) -> Result<Option<(u64, Arc<Oneshot>)>, CallError> {
        if self.engine_gone.load(Ordering::Acquire) {
            return Err(CallError::Shutdown);
        }
        self.check_place(to.rank, to.core)?;
        let mut h = Header::new(to.kind);
        h.core = to.core as u16;
        h.func = to.func?;
        h.seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        h.object = to.object;
        if bulk.is_some() {
            h.flags |= Header::BULK;
        }
        if one_way {
            h.flags |= Header::ONE_WAY;
        }
        let mut frame = h.frame(64);
        encode(&mut frame)?;
        let slot = if one_way {
            None
        } else {
            let slot = Arc::new(Oneshot::default());
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(h.seq, slot.clone());
            Some((h.seq, slot))
        };
        self.send(to.rank, frame, bulk);
        Ok(slot)
    }

    /// [`invoke`](Self::invoke) for a caller that waits.
    pub(crate) fn call<R>(
        self: &Arc<Self>,
        to: Target,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), crate::codec::CodecError>,
        bulk: Option<Vec<u8>>,
    ) -> Pending<R> {
        match self.invoke(to, encode, bulk, false) {
            Ok(Some((seq, slot))) => Pending::new(slot, seq, Some(self.clone())),
            Ok(None) => Pending::failed(CallError::Consumed),
            Err(e) => Pending::failed(e),
        }
    }

    /// A reply arrived: completes the waiting call (if it still waits).
    pub(crate) fn complete(&self, seq: u64, r: Result<Vec<u8>, CallError>) {
        let slot = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&seq);
        if let Some(slot) = slot {
            slot.complete(r);
        }
    }

    /// The caller gave up (timeout): a late reply is dropped.
    pub(crate) fn forget(&self, seq: u64) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&seq);
    }
}
