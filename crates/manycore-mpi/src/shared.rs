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
use crate::progress::{Progress, Tuning};
use crate::registry::Registry;
use crate::worker::JoinInbox;
use manycore_rt::Runtime;
use mpi::topology::SimpleCommunicator;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, TryLockError};
use std::thread::Thread;
use std::time::Duration;

/// Work for the engine thread with the world communicator (`World::with_mpi`).
pub(crate) type MpiJob = Box<dyn FnOnce(&mpi::topology::SimpleCommunicator) + Send>;

/// Frames in the outbox at which a sender of one-way frames sends them
/// itself (see `Shared::send`).
const FLUSH_AT: usize = 32;

/// The core number that names a rank's progress engine (`Place::ENGINE`):
/// a call addressed there runs on whichever thread is progressing MPI.
pub(crate) const ENGINE_CORE: usize = usize::MAX;
/// The same in a frame's 16-bit core field.
pub(crate) const ENGINE_CORE_FIELD: u16 = u16::MAX;

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
    /// Unique per world made in this process (from 1).
    id: usize,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) cores: usize,
    pub(crate) rt: Runtime,
    pub(crate) registry: &'static Registry,
    pub(crate) timeout: Option<Duration>,
    /// The rank's MPI state; whoever holds this lock may call MPI.
    pub(crate) mpi: Mutex<Progress>,
    /// The library lets any thread call MPI, one at a time
    /// (`Threading::Serialized` or better); else only the engine does.
    pub(crate) serialized: bool,
    /// [`Tuning`]: its switches as bits, and its poll window.
    tuning: AtomicU8,
    poll_us: AtomicU32,
    engine_spin_us: AtomicU32,
    poll_every: AtomicU32,
    outbox: Mutex<VecDeque<Outgoing>>,
    /// Whether the outbox may hold frames (set under its lock by a push,
    /// cleared under it by a take): a poll that finds it clear skips the
    /// lock.
    queued: AtomicBool,
    /// Frames ever pushed to the outbox, and frames in it now, and whether
    /// one of them expects an answer or answers (is not one-way): written
    /// under the outbox's lock, read without it by the engine, which lets
    /// a stream of one-way frames gather while it is still growing
    /// ([`take_outbox_lazy`](Self::take_outbox_lazy)).
    pushed: AtomicU64,
    outbox_len: AtomicUsize,
    prompt: AtomicBool,
    pub(crate) mpi_jobs: Mutex<VecDeque<MpiJob>>,
    /// Whether `mpi_jobs` may hold a job (the same way).
    pub(crate) jobs_queued: AtomicBool,
    pub(crate) engine: OnceLock<Thread>,
    /// Set once the engine has finalized MPI: nothing can be sent any more.
    pub(crate) engine_gone: AtomicBool,
    /// A thread that polled MPI while it waited gives up and sleeps: the
    /// engine is to poll eagerly again (see [`hand_over`](Self::hand_over)).
    pub(crate) kick: AtomicBool,
    /// Threads polling MPI while they wait ([`Polling`]): while there are
    /// any, the engine keeps out of their way.
    pub(crate) pollers: AtomicUsize,
    /// Threads asleep until a frame from another rank arrives for them (a
    /// call's reply, a collective's partial) after they stopped polling:
    /// while there are any, the idle engine, the one to receive that frame
    /// (no MPI arrival wakes it), sleeps at most a short bound between its
    /// polls ([`Expecting`]).
    pub(crate) expecting: AtomicUsize,
    /// A call to the engine place ran here: a conversation with its caller
    /// is likely on, and the engine polls without yielding for a while.
    pub(crate) conversing: AtomicBool,
    /// Set by `World::finalize`: the engine starts the shutdown protocol.
    pub(crate) stopping: AtomicBool,
    /// Set when the world is dropped by a panicking thread: the engine
    /// aborts the job (a collective shutdown cannot finish without the
    /// other ranks, which may be waiting for this one).
    pub(crate) abort: AtomicBool,
    /// `Shutdown` frames received from other ranks.
    pub(crate) shutdowns: AtomicUsize,
    next_seq: AtomicU64,
    pending: Mutex<HashMap<u64, Arc<Oneshot>, BuildHasherDefault<SeqHasher>>>,
    /// Calls and methods running here whose reply is not yet sent.
    pub(crate) handlers: AtomicUsize,
    pub(crate) objects: ObjectTable,
    pub(crate) join: JoinInbox,
    pub(crate) coll: CollectiveInbox,
    /// Per core, the jobs handed to it in dispatch order
    /// (`dispatch::spawn_ordered`).
    pub(crate) core_jobs: Vec<Mutex<crate::turns::Turns<crate::dispatch::Job>>>,
}

/// The hasher of the table of calls waiting for replies: its keys are
/// sequence numbers, distinct and dense, so one multiplication spreads
/// them well enough (SipHash would cost more than the rest of the lookup).
#[derive(Default)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

static CURRENT: RwLock<Option<Arc<Shared>>> = RwLock::new(None);

/// Sequence numbers a thread takes from `Shared::next_seq` at a time.
const SEQ_BLOCK: u64 = 64;

thread_local! {
    /// This thread's block of sequence numbers: (the world it belongs to,
    /// the next number, the end of the block).
    static SEQ: std::cell::Cell<(usize, u64, u64)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// A thread polling MPI while it waits (counted in `Shared::pollers` until
/// dropped).
pub(crate) struct Polling<'a>(&'a Shared);

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        self.0.pollers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A thread asleep until a frame from another rank arrives for it
/// (counted in `Shared::expecting` until dropped).
pub(crate) struct Expecting<'a>(&'a Shared);

impl Drop for Expecting<'_> {
    fn drop(&mut self) {
        self.0.expecting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Shared {
    pub(crate) fn new(
        rank: usize,
        size: usize,
        rt: Runtime,
        registry: &'static Registry,
        timeout: Option<Duration>,
        serialized: bool,
    ) -> Self {
        let cores = rt.num_cores();
        static WORLDS: AtomicUsize = AtomicUsize::new(1);
        let sh = Shared {
            id: WORLDS.fetch_add(1, Ordering::Relaxed),
            rank,
            size,
            cores,
            rt,
            registry,
            timeout,
            mpi: Mutex::new(Progress::default()),
            serialized,
            tuning: AtomicU8::new(0),
            poll_us: AtomicU32::new(0),
            engine_spin_us: AtomicU32::new(0),
            poll_every: AtomicU32::new(0),
            outbox: Mutex::new(VecDeque::new()),
            queued: AtomicBool::new(false),
            pushed: AtomicU64::new(0),
            outbox_len: AtomicUsize::new(0),
            prompt: AtomicBool::new(false),
            mpi_jobs: Mutex::new(VecDeque::new()),
            jobs_queued: AtomicBool::new(false),
            engine: OnceLock::new(),
            engine_gone: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            pollers: AtomicUsize::new(0),
            expecting: AtomicUsize::new(0),
            conversing: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            shutdowns: AtomicUsize::new(0),
            next_seq: AtomicU64::new(1),
            pending: Mutex::new(HashMap::default()),
            handlers: AtomicUsize::new(0),
            objects: ObjectTable::default(),
            join: JoinInbox::default(),
            coll: CollectiveInbox::default(),
            core_jobs: (0..cores).map(|_| Mutex::default()).collect(),
        };
        sh.set_tuning(Tuning::default());
        sh
    }

    /// How this rank drives MPI now.
    pub(crate) fn tuning(&self) -> Tuning {
        let b = self.tuning.load(Ordering::Relaxed);
        Tuning {
            waiters_progress: b & 1 != 0,
            direct_send: b & 2 != 0,
            coalesce: b & 4 != 0,
            coll_poll: b & 8 != 0,
            adaptive: b & 16 != 0,
            poll_us: self.poll_us.load(Ordering::Relaxed),
            engine_spin_us: self.engine_spin_us.load(Ordering::Relaxed),
            poll_every: self.poll_every.load(Ordering::Relaxed),
        }
    }

    /// Changes how this rank drives MPI (takes effect at once; frames
    /// already queued keep their order). Without `Serialized` threading,
    /// waiters and senders never call MPI whatever the tuning says.
    pub(crate) fn set_tuning(&self, t: Tuning) {
        let b = u8::from(t.waiters_progress)
            | u8::from(t.direct_send) << 1
            | u8::from(t.coalesce) << 2
            | u8::from(t.coll_poll) << 3
            | u8::from(t.adaptive) << 4;
        self.tuning.store(b, Ordering::Relaxed);
        self.poll_us.store(t.poll_us, Ordering::Relaxed);
        self.engine_spin_us
            .store(t.engine_spin_us, Ordering::Relaxed);
        self.poll_every.store(t.poll_every, Ordering::Relaxed);
    }

    /// How long an idle engine polls without yielding.
    pub(crate) fn engine_spin(&self) -> Duration {
        Duration::from_micros(u64::from(self.engine_spin_us.load(Ordering::Relaxed)))
    }

    /// How long a waiter that polls MPI itself polls before it sleeps.
    pub(crate) fn poll_window(&self) -> Duration {
        Duration::from_micros(u64::from(self.poll_us.load(Ordering::Relaxed)))
    }

    /// A waiting thread stops polling MPI and sleeps until its message is
    /// dispatched: the engine, which backed off while the waiter polled,
    /// polls eagerly again from now (as after work of its own).
    pub(crate) fn hand_over(&self) {
        self.kick.store(true, Ordering::Release);
        self.wake_engine();
    }

    /// Counts the calling thread among those asleep until a frame from
    /// another rank arrives for them, and wakes the engine, which is to
    /// receive it and so keeps its sleeps short until then.
    pub(crate) fn expect(&self) -> Expecting<'_> {
        self.expecting.fetch_add(1, Ordering::AcqRel);
        self.wake_engine();
        Expecting(self)
    }

    /// Wakes the progress engine.
    pub(crate) fn wake_engine(&self) {
        if let Some(t) = self.engine.get() {
            t.unpark();
        }
    }

    /// The progress lock, if this thread may take it now: the library lets
    /// any thread call MPI, nobody else holds it, and MPI is still up.
    pub(crate) fn try_progress(&self) -> Option<MutexGuard<'_, Progress>> {
        if !self.serialized {
            return None;
        }
        let g = match self.mpi.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        if self.engine_gone.load(Ordering::Acquire) {
            return None;
        }
        Some(g)
    }

    /// Whether a waiting thread may poll MPI itself (the tuning says so
    /// and the library lets any thread call MPI).
    pub(crate) fn may_poll(&self) -> bool {
        self.serialized && self.tuning.load(Ordering::Relaxed) & 1 != 0
    }

    /// Marks the calling thread as polling MPI while it waits, if it may
    /// (the tuning says so and the library lets any thread call MPI);
    /// `None` if it must leave progress to the engine.
    pub(crate) fn polling(&self) -> Option<Polling<'_>> {
        if !self.serialized || !self.tuning().waiters_progress {
            return None;
        }
        self.pollers.fetch_add(1, Ordering::AcqRel);
        Some(Polling(self))
    }

    /// One round of progress by a thread that waits for a message (a reply,
    /// a collective's partial): `Some(whether anything happened)` if it
    /// could take the progress lock, `None` if it must leave progress to
    /// whoever holds it (or to the engine).
    pub(crate) fn progress_once(self: &Arc<Self>) -> Option<bool> {
        self.progress_for(None)
    }

    /// [`progress_once`](Self::progress_once) for a thread that waits for
    /// `done` (its reply slot's flag): the poll ends as soon as it is set.
    pub(crate) fn progress_for(self: &Arc<Self>, done: Option<&AtomicBool>) -> Option<bool> {
        // `waiters_progress`, without reading the whole tuning.
        if self.tuning.load(Ordering::Relaxed) & 1 == 0 {
            return None;
        }
        let mut p = self.try_progress()?;
        Some(p.poll_for(
            self,
            &SimpleCommunicator::world(),
            done,
            if done.is_some() {
                crate::progress::SPIN_TESTS
            } else {
                0
            },
        ))
    }

    /// The world of this process, if one is running.
    pub(crate) fn current() -> Option<Arc<Shared>> {
        CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_current(s: Option<Arc<Shared>>) {
        *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// Sends a frame to `to`: on this rank straight to `dispatch`; to
    /// another, posted by this thread if the progress lock is free (and the
    /// tuning says so), else queued for whoever progresses next (the engine
    /// is woken). One-way frames are queued when coalescing is on, so that
    /// a stream of them leaves in batches. Order per (sender thread,
    /// destination) is kept: the outbox is FIFO, a direct send first sends
    /// what the outbox holds, and MPI does not overtake.
    pub(crate) fn send(self: &Arc<Self>, to: usize, frame: Vec<u8>, bulk: Option<Vec<u8>>) {
        if to == self.rank {
            crate::dispatch::deliver(self, to, frame, bulk);
            return;
        }
        let mut o = Outgoing { to, frame, bulk };
        // Inside a poll on this thread (a reply of a function it runs): the
        // poll sends it when the function returns.
        o = match crate::progress::defer(o) {
            Ok(()) => return,
            Err(o) => o,
        };
        let t = self.tuning();
        let one_way = o.frame.get(1).is_some_and(|f| f & Header::ONE_WAY != 0);
        if t.direct_send && !(t.coalesce && one_way) {
            match self.send_direct(o) {
                Ok(()) => return,
                Err(back) => o = back,
            }
        }
        let lazy = t.coalesce && one_way;
        let queued = {
            let mut q = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
            q.push_back(o);
            let n = q.len();
            if !lazy {
                self.prompt.store(true, Ordering::Relaxed);
            }
            self.outbox_len.store(n, Ordering::Relaxed);
            self.pushed
                .store(self.pushed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            self.queued.store(true, Ordering::Release);
            n
        };
        // A stream of one-way frames: every so many, the sender packs and
        // posts them itself if it can, instead of leaving it all to the
        // engine (on a small machine, one thread fewer that needs a CPU).
        if t.direct_send && queued >= FLUSH_AT && self.flush_outbox() {
            return;
        }
        // A one-way frame joining others wakes nobody: the engine, woken
        // by the first, sends them once the stream pauses (or the sender
        // does, every `FLUSH_AT` frames, or before it waits).
        if !lazy || queued == 1 || queued >= FLUSH_AT {
            self.wake_engine();
        }
    }

    /// Sends what the outbox holds from this thread, if it can take the
    /// progress lock; whether it did (and nothing is left in flight).
    fn flush_outbox(self: &Arc<Self>) -> bool {
        let Some(mut p) = self.try_progress() else {
            return false;
        };
        p.drain(self, &SimpleCommunicator::world());
        p.reclaim();
        !p.sending()
    }

    /// Posts `o` from this thread if it can take the progress lock.
    fn send_direct(self: &Arc<Self>, o: Outgoing) -> Result<(), Outgoing> {
        let Some(mut p) = self.try_progress() else {
            return Err(o);
        };
        let comm = SimpleCommunicator::world();
        // What was queued before this frame leaves before it.
        p.send(self, &comm, o);
        self.after_send(p);
        Ok(())
    }

    /// Ends a send made under the progress lock `p`: reclaims what MPI has
    /// finished and, only if a send is still in flight, wakes the engine
    /// after the lock is released. A short send is usually done at once:
    /// then the engine need not be woken (a wakeup is a system call here,
    /// and a thread that may preempt a spinning one there).
    fn after_send(&self, mut p: MutexGuard<'_, Progress>) {
        p.reclaim();
        let sending = p.sending();
        drop(p);
        if sending {
            // A send MPI has not finished needs progress: the engine's.
            self.wake_engine();
        }
    }

    /// Whether the outbox may hold frames (a hint: see `take_outbox`).
    pub(crate) fn queued(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    /// Moves the outbox's frames into `into` (only under the progress lock,
    /// which keeps the order of direct sends and queued frames).
    pub(crate) fn take_outbox(&self, into: &mut VecDeque<Outgoing>) {
        // A push by this thread is seen (program order); one by another
        // thread racing with this look is seen at the next poll, and its
        // pusher woke the engine.
        if !self.queued.load(Ordering::Acquire) {
            return;
        }
        let mut q = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        into.append(&mut q);
        self.outbox_len.store(0, Ordering::Relaxed);
        self.prompt.store(false, Ordering::Relaxed);
        self.queued.store(false, Ordering::Relaxed);
    }

    /// [`take_outbox`](Self::take_outbox) for the engine, which leaves a
    /// stream of one-way frames to gather while it grows: it takes them
    /// only once no frame was pushed since its last look (`seen`, the push
    /// count it saw then), or once they fill a batch's worth, or when one
    /// of them is not one-way, or at shutdown. A sender that goes on to
    /// wait sends them itself (its next call or collective goes after
    /// them), and the engine does not sleep while frames wait here, so a
    /// frame lingers at most until the stream pauses for one engine poll.
    pub(crate) fn take_outbox_lazy(&self, into: &mut VecDeque<Outgoing>, seen: &mut u64) {
        if !self.queued.load(Ordering::Acquire) {
            return;
        }
        let pushed = self.pushed.load(Ordering::Relaxed);
        if pushed != *seen
            && !self.prompt.load(Ordering::Relaxed)
            && self.outbox_len.load(Ordering::Relaxed) < FLUSH_AT
            && !self.stopping.load(Ordering::Relaxed)
        {
            *seen = pushed;
            return;
        }
        self.take_outbox(into);
    }

    /// The next job for `World::with_mpi`, if any.
    pub(crate) fn take_job(&self) -> Option<MpiJob> {
        if !self.jobs_queued.load(Ordering::Acquire) {
            return None;
        }
        let mut q = self.mpi_jobs.lock().unwrap_or_else(|e| e.into_inner());
        let job = q.pop_front();
        if q.is_empty() {
            self.jobs_queued.store(false, Ordering::Relaxed);
        }
        job
    }

    /// Work this rank still owes or awaits (the shutdown protocol ends when
    /// it is zero on every rank and no frame is in flight).
    pub(crate) fn busy(&self) -> u64 {
        let outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner()).len();
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner()).len();
        (outbox + pending + self.handlers.load(Ordering::Acquire)) as u64
    }

    /// A sequence number unique on this rank for the process's life: from
    /// a block of [`SEQ_BLOCK`] that this thread took from `next_seq` (one
    /// shared read-modify-write per block, not per call). The block is
    /// tagged with the world it came from (`id`), so a thread never uses
    /// numbers of an earlier world.
    fn next_seq(&self) -> u64 {
        let me = self.id;
        SEQ.try_with(|c| {
            let (world, next, end) = c.get();
            if world == me && next < end {
                c.set((world, next + 1, end));
                return next;
            }
            let start = self.next_seq.fetch_add(SEQ_BLOCK, Ordering::Relaxed);
            c.set((me, start + 1, start + SEQ_BLOCK));
            start
        })
        .unwrap_or_else(|_| self.next_seq.fetch_add(1, Ordering::Relaxed))
    }

    fn check_place(&self, rank: usize, core: usize) -> Result<(), CallError> {
        if rank >= self.size {
            return Err(CallError::NoSuchRank {
                rank,
                size: self.size,
            });
        }
        if core >= self.cores && core != ENGINE_CORE {
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
        h.core = if to.core == ENGINE_CORE {
            ENGINE_CORE_FIELD
        } else {
            to.core as u16
        };
        h.func = to.func?;
        h.seq = self.next_seq();
        h.object = to.object;
        if bulk.is_some() {
            h.flags |= Header::BULK;
        }
        if one_way {
            h.flags |= Header::ONE_WAY;
        }
        let mut frame = h.frame(64);
        encode(&mut frame)?;
        if one_way {
            self.send(to.rank, frame, bulk);
            return Ok(None);
        }
        let mut o = Outgoing {
            to: to.rank,
            frame,
            bulk,
        };
        if to.rank != self.rank {
            // Posted by this thread, the call waits in the progress lock's
            // own table (no lock of its own to take, here or on reply).
            o = match self.call_direct(o, h.seq, to.core == ENGINE_CORE) {
                Ok(slot) => return Ok(Some((h.seq, slot))),
                Err(back) => back,
            };
        }
        let slot = Oneshot::for_this_thread();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(h.seq, slot.clone());
        self.send(o.to, o.frame, o.bulk);
        Ok(Some((h.seq, slot)))
    }

    /// Posts the call `o` (sequence number `seq`) from this thread if it
    /// can take the progress lock, and registers the slot its reply goes
    /// into in [`Progress`]'s table of waiting calls under that lock:
    /// whoever receives the reply holds the same lock, so the slot is
    /// taken and registered after the send, off the caller's critical
    /// path, and still before anyone can receive the reply. `spin`: the
    /// caller is about to poll MPI itself for the reply (a call to an
    /// engine place), so the send is left for its polls to reclaim and the
    /// engine is not woken. Gives the call back if this thread may not
    /// post it.
    fn call_direct(
        self: &Arc<Self>,
        o: Outgoing,
        seq: u64,
        spin: bool,
    ) -> Result<Arc<Oneshot>, Outgoing> {
        let t = self.tuning();
        if !t.direct_send || crate::progress::progressing() {
            return Err(o);
        }
        let Some(mut p) = self.try_progress() else {
            return Err(o);
        };
        // A short frame alone (sent eagerly by MPI) to a caller that polls
        // for its reply at once: its polls reclaim the send, and the
        // engine stays out of the way meanwhile.
        let quiet = spin && t.waiters_progress && o.bulk.is_none() && o.frame.len() <= 1024;
        let comm = SimpleCommunicator::world();
        p.send(self, &comm, o);
        // Under the lock still: the reply cannot have been received yet.
        let slot = Oneshot::for_this_thread();
        p.await_reply(seq, slot.clone());
        if quiet {
            return Ok(slot);
        }
        self.after_send(p);
        Ok(slot)
    }

    /// [`invoke`](Self::invoke) for a caller that waits.
    pub(crate) fn call<R>(
        self: &Arc<Self>,
        to: Target,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), crate::codec::CodecError>,
        bulk: Option<Vec<u8>>,
    ) -> Pending<R> {
        let spin = to.core == ENGINE_CORE;
        match self.invoke(to, encode, bulk, false) {
            Ok(Some((seq, slot))) => {
                Pending::new(slot, seq, Some(crate::pending::world_handle(self)), spin)
            }
            Ok(None) => Pending::failed(CallError::Consumed),
            Err(e) => Pending::failed(e),
        }
    }

    /// A reply arrived: completes the waiting call (if it still waits). A
    /// reply for a call not in this table, received by a thread that
    /// progresses MPI, may be for a call waiting in [`Progress`]'s table:
    /// it is left for the poll to settle (`Progress::settle`).
    pub(crate) fn complete(&self, seq: u64, r: Result<Vec<u8>, CallError>) {
        let slot = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&seq);
        if let Some(slot) = slot {
            slot.complete(r);
        } else if crate::progress::progressing() {
            crate::progress::unmatched(seq, r);
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
