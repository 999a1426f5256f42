//! Progress: what turns queued frames into MPI sends and MPI arrivals into
//! dispatches. Each rank has one [`Progress`] behind a mutex
//! (`Shared::mpi`); the thread that holds the lock is the only one calling
//! MPI. The library is initialized with `Threading::Serialized`, which
//! promises exactly that (any thread, one MPI call at a time), so the lock
//! may be held by the progress engine or by any thread that would otherwise
//! wait: a caller waiting for its reply, a rank waiting in a collective.
//! Such a thread receives and dispatches whatever arrives, its own reply
//! among it, with no handoff to the engine and back; a thread that sends
//! posts its frame itself when the lock is free. When the library offers
//! only `Funneled`, the engine alone takes the lock.
//!
//! Frames queued in the outbox for the same rank leave as one MPI message
//! (a `Batch` frame) when [`Tuning::coalesce`] is on: the receiver splits it
//! and dispatches the frames in order, so a stream of one-way messages costs
//! one MPI send and one receive per batch, not per frame.

use crate::awaiting::Awaiting;
use crate::collective::Key;
use crate::dispatch;
use crate::error::CallError;
use crate::header::{Header, Kind};
use crate::pending::Oneshot;
use crate::raw::{OwnedRecv, OwnedSend};
use crate::shared::{Outgoing, Shared, ENGINE_CORE_FIELD};
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Tag;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The tag of frames (and batches of frames).
pub(crate) const FRAME_TAG: Tag = 1;
/// The tag of bulk messages (each follows its frame from the same rank).
pub(crate) const BULK_TAG: Tag = 2;
/// Frames received per poll before the outbox gets its turn again.
const MAX_BATCH: usize = 64;
/// The longest message sent with the frame tag: frames arrive into
/// receives of this size posted in advance (a longer frame is announced by
/// a `Large` frame and follows on the bulk tag), and batches stay within it.
const SMALL: usize = 4096;
/// The longest batch. Below `SMALL` by room for MPI's own headers: Open
/// MPI's shared-memory transport sends a message eagerly only while it fits
/// 4 KiB *with* its headers (`btl_vader_eager_limit`); a longer one goes by
/// rendezvous, a handshake with the sender and a copy by system call
/// (CMA), several times the cost of an eager message and a wait for the
/// sender's progress besides.
const BATCH: usize = SMALL - 128;
/// Receives kept posted.
const POSTED: usize = 8;
/// Tests for a message, at most, in one poll by a thread that expects one
/// within microseconds (a waiter polling for its reply, an engine that
/// just served the engine place) while none has arrived: each costs one
/// MPI call, where a whole poll costs the lock and the outbox besides.
pub(crate) const SPIN_TESTS: u32 = 32;

thread_local! {
    /// This thread holds the progress lock (it is inside [`Progress::poll`],
    /// perhaps running a function addressed to the engine place): it must
    /// not wait for anything that needs MPI progress, which only it could
    /// make.
    static PROGRESSING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is progressing MPI (and so must not block on
/// a message).
pub(crate) fn progressing() -> bool {
    PROGRESSING.with(Cell::get)
}

thread_local! {
    /// Frames sent by code that runs inside [`Progress::poll`] (a function
    /// on the engine place replying, a steal request answered): the poll
    /// sends them itself when that code returns, without the outbox.
    static DEFERRED: RefCell<Vec<Outgoing>> = const { RefCell::new(Vec::new()) };
}

/// What a reply gives its waiter: the reply frame, or the failure.
type ReplyResult = Result<Vec<u8>, CallError>;

thread_local! {
    /// Replies dispatched inside a poll on this thread that `Shared`'s
    /// table of waiting calls did not know: the poll looks them up in its
    /// own table ([`Progress::settle`]) before it goes on.
    static UNMATCHED: RefCell<Vec<(u64, ReplyResult)>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The reply this thread received for the call it polls for, taken
    /// past its slot ([`take_own`]).
    static OWN: RefCell<Option<(u64, ReplyResult)>> = const { RefCell::new(None) };
}

thread_local! {
    /// The collective frame this thread waits for while it polls, as the
    /// collective inbox keys it (collective, kind, sender), and the frame
    /// once this thread received it itself ([`poll_for_collective`]).
    static COLL_WANT: Cell<Option<Key>> = const { Cell::new(None) };
    static COLL_OWN: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Whether the frame `h` from `from` is the collective frame this thread
/// polls for.
fn wanted_here(h: &Header, from: usize) -> bool {
    matches!(h.kind, Kind::CollectiveUp | Kind::CollectiveDown)
        && COLL_WANT.try_with(Cell::get).ok().flatten() == Some((h.seq, h.kind as u8, from))
}

/// One poll by a thread waiting in a collective for the frame `key`
/// (collective, kind, sender): `Some` if it could take the progress lock,
/// holding the frame if this poll received it (it stops receiving then;
/// the frame skips the collective inbox), else whether anything happened.
pub(crate) fn poll_for_collective(sh: &Arc<Shared>, key: Key) -> Option<Result<Vec<u8>, bool>> {
    COLL_WANT.with(|w| w.set(Some(key)));
    let worked = sh.progress_once();
    COLL_WANT.with(|w| w.set(None));
    let own = COLL_OWN.with(|o| o.borrow_mut().take());
    match (own, worked) {
        (Some(f), _) => Some(Ok(f)),
        (None, Some(w)) => Some(Err(w)),
        (None, None) => None,
    }
}

/// The reply to call `seq` if this thread received it itself while polling
/// for it: the waiter takes it here, without its slot's lock.
pub(crate) fn take_own(seq: u64) -> Option<ReplyResult> {
    OWN.try_with(|o| {
        let mut o = o.borrow_mut();
        match &*o {
            Some((s, _)) if *s == seq => o.take().map(|(_, r)| r),
            _ => None,
        }
    })
    .ok()
    .flatten()
}

/// Leaves the reply to call `seq` for this thread's poll to settle.
pub(crate) fn unmatched(seq: u64, r: ReplyResult) {
    let _ = UNMATCHED.try_with(move |u| u.borrow_mut().push((seq, r)));
}

/// Whether replies wait to be settled on this thread.
fn has_unmatched() -> bool {
    UNMATCHED
        .try_with(|u| !u.borrow().is_empty())
        .unwrap_or(false)
}

/// Sends `o` from inside a poll on this thread, if this thread is polling;
/// gives it back otherwise.
pub(crate) fn defer(o: Outgoing) -> Result<(), Outgoing> {
    if !progressing() {
        return Err(o);
    }
    DEFERRED.with(|d| d.borrow_mut().push(o));
    Ok(())
}

/// How a rank drives MPI; switchable at run time so that a benchmark can
/// compare the ways in one job ([`World::set_tuning`](crate::World::set_tuning)).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// A thread waiting for a reply or a collective takes the progress lock
    /// and polls MPI itself (else only the engine does).
    pub waiters_progress: bool,
    /// A thread that sends a frame posts it itself when the lock is free
    /// (else every frame goes through the outbox and the engine).
    pub direct_send: bool,
    /// Frames queued for the same rank leave as one MPI message; one-way
    /// frames are queued (not sent directly) so that they can be batched.
    pub coalesce: bool,
    /// How long (microseconds) a waiting thread that can poll MPI itself
    /// keeps polling before it sleeps and hands progress to the engine (a
    /// collective polls at least 500 us).
    pub poll_us: u32,
    /// How long (microseconds) an idle engine polls without yielding after
    /// its last work (unless a core of its rank runs a call), before it
    /// yields for a while and then sleeps.
    pub engine_spin_us: u32,
    /// The worker of a distributed join polls MPI itself once every this
    /// many joins (0, the default: never, the engine alone receives steal
    /// requests): MuSE's `MAX_SEQUENTIAL`, the longest run of on-stack
    /// calls between two looks at the network. Measured on knary, no
    /// setting beat the engine alone clearly.
    pub poll_every: u32,
    /// A thread waiting in a collective polls MPI itself (with a yield
    /// between polls) instead of leaving it to the engine.
    pub coll_poll: bool,
    /// The idle engine, a thread waiting for a call to a core and a thread
    /// waiting in a collective wait as `manycore_sync::AdaptiveSpin` says
    /// (a budget from each thread's predicted idle gap; pausing, or
    /// yielding while more manycore threads of the process are awake than
    /// it has CPUs, each counting itself), instead of yielding for a fixed
    /// while.
    pub adaptive: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

impl Tuning {
    /// The default: waiters progress, senders post, one-way frames batch.
    pub const DEFAULT: Tuning = Tuning {
        waiters_progress: true,
        direct_send: true,
        coalesce: true,
        poll_us: 1000,
        engine_spin_us: 1000,
        poll_every: 0,
        coll_poll: false,
        adaptive: false,
    };

    /// The engine does everything: the protocol before waiters progressed.
    pub const ENGINE_ONLY: Tuning = Tuning {
        waiters_progress: false,
        direct_send: false,
        coalesce: false,
        poll_us: 100,
        engine_spin_us: 0,
        poll_every: 0,
        coll_poll: false,
        adaptive: false,
    };
}

/// MPI messages in flight at most; frames beyond wait in the backlog and
/// leave as room frees up (packed into batches when coalescing is on). Open
/// MPI slows down badly with thousands of sends pending.
const MAX_INFLIGHT: usize = 64;

/// The rank's MPI state; see the module docs.
#[derive(Default)]
pub(crate) struct Progress {
    /// Sends MPI has not finished with, oldest first.
    inflight: VecDeque<OwnedSend>,
    /// Frames waiting for room among the sends in flight, per destination
    /// rank, in order.
    backlog: Vec<VecDeque<Outgoing>>,
    /// Frames in the backlog.
    backlogged: usize,
    /// The destination the backlog serves first next time (round robin).
    next_dest: usize,
    /// Frames sent and received (a batch counts its frames): the shutdown
    /// protocol compares their sums.
    pub(crate) sent: u64,
    pub(crate) received: u64,
    /// Scratch: the outbox's frames being taken.
    batch: VecDeque<Outgoing>,
    /// The outbox's push count when the engine last left its frames to
    /// gather (`Shared::take_outbox_lazy`).
    seen: u64,
    /// Receives posted in advance, oldest (first to match) first.
    posted: VecDeque<OwnedRecv>,
    /// Receive buffers to post again (of messages already handled).
    spare: Vec<Vec<u8>>,
    /// Calls waiting for replies that their caller posted itself (under
    /// this lock, see `Shared::call_direct`), by sequence number: whoever
    /// receives a reply holds this lock too, so neither side takes a lock
    /// of its own for the table.
    waiting: Awaiting<Arc<Oneshot>>,
}

impl Progress {
    /// Whether sends are in flight or waiting for room.
    pub(crate) fn sending(&self) -> bool {
        !self.inflight.is_empty() || self.backlogged > 0
    }

    /// Frames waiting for room (work still owed, for the shutdown count).
    pub(crate) fn backlogged(&self) -> usize {
        self.backlogged
    }

    /// Calls waiting in this table for their replies (work still awaited,
    /// for the shutdown count). A call whose caller gave up stays until its
    /// late reply is in: every call is answered exactly once.
    pub(crate) fn awaited(&self) -> usize {
        self.waiting.len()
    }

    /// Registers `slot` for the reply to the call `seq`, which the caller
    /// posts before it lets go of this lock.
    pub(crate) fn await_reply(&mut self, seq: u64, slot: Arc<Oneshot>) {
        self.waiting.insert(seq, slot);
    }

    /// Completes the calls of this table whose replies were dispatched by
    /// the generic path (inside a batch, or after a bulk) and so were not
    /// found in `Shared`'s table.
    fn settle(&mut self) {
        let Ok(mut u) = UNMATCHED.try_with(|u| std::mem::take(&mut *u.borrow_mut())) else {
            return;
        };
        for (seq, r) in u.drain(..) {
            // Not here either: its caller gave up, and it is dropped.
            if let Some(slot) = self.waiting.remove(seq) {
                slot.complete(r);
            }
        }
        let _ = UNMATCHED.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.is_empty() {
                *slot = u;
            }
        });
    }

    /// Posts one frame (and its bulk) now.
    pub(crate) fn post(&mut self, comm: &SimpleCommunicator, o: Outgoing) {
        let dest = comm.process_at_rank(o.to as i32);
        if o.frame.len() > SMALL {
            let mut h = Header::new(Kind::Large);
            h.seq = o.frame.len() as u64;
            self.inflight
                .push_back(OwnedSend::post(&dest, h.frame(0), FRAME_TAG));
            self.inflight
                .push_back(OwnedSend::post(&dest, o.frame, BULK_TAG));
        } else {
            self.inflight
                .push_back(OwnedSend::post(&dest, o.frame, FRAME_TAG));
        }
        if let Some(b) = o.bulk {
            self.inflight.push_back(OwnedSend::post(&dest, b, BULK_TAG));
        }
        self.sent += 1;
    }

    /// Sends `o` after whatever is queued for its rank: at once if there is
    /// room, else from the backlog later.
    pub(crate) fn send(&mut self, sh: &Shared, comm: &SimpleCommunicator, o: Outgoing) {
        self.take(sh);
        if self.backlogged == 0 && self.inflight.len() < MAX_INFLIGHT {
            // Nothing queued to go first, nothing to batch it with: the
            // usual case of a call or a reply, posted without the backlog.
            self.post(comm, o);
            return;
        }
        self.enqueue(o);
        self.pump(comm, sh.tuning().coalesce);
    }

    /// Sends what the outbox holds, after what is queued, as far as there
    /// is room. Whether anything is (or still waits to be) sent.
    pub(crate) fn drain(&mut self, sh: &Shared, comm: &SimpleCommunicator) -> bool {
        self.take(sh);
        self.pump_backlog(sh, comm)
    }

    /// [`drain`](Self::drain) for the engine: a stream of one-way frames
    /// still growing is left to gather (`Shared::take_outbox_lazy`).
    pub(crate) fn drain_lazy(&mut self, sh: &Shared, comm: &SimpleCommunicator) -> bool {
        if sh.queued() {
            let mut seen = self.seen;
            sh.take_outbox_lazy(&mut self.batch, &mut seen);
            self.seen = seen;
            self.enqueue_batch();
        }
        self.pump_backlog(sh, comm)
    }

    /// The common end of both drains: sends what the backlog holds; true
    /// if anything went out or is still waiting.
    fn pump_backlog(&mut self, sh: &Shared, comm: &SimpleCommunicator) -> bool {
        if self.backlogged == 0 {
            return false;
        }
        let before = self.sent;
        self.pump(comm, sh.tuning().coalesce);
        self.sent != before || self.backlogged > 0
    }

    fn enqueue_batch(&mut self) {
        let mut batch = std::mem::take(&mut self.batch);
        for o in batch.drain(..) {
            self.enqueue(o);
        }
        self.batch = batch;
    }

    /// Moves the outbox's frames into the backlog.
    fn take(&mut self, sh: &Shared) {
        if !sh.queued() {
            return;
        }
        sh.take_outbox(&mut self.batch);
        self.enqueue_batch();
    }

    fn enqueue(&mut self, o: Outgoing) {
        if self.backlog.len() <= o.to {
            self.backlog.resize_with(o.to + 1, VecDeque::new);
        }
        self.backlog[o.to].push_back(o);
        self.backlogged += 1;
    }

    /// Sends from the backlog while there is room, the ranks in turn; runs
    /// of frames for one rank as batches if `coalesce`.
    fn pump(&mut self, comm: &SimpleCommunicator, coalesce: bool) {
        self.reclaim();
        let ranks = self.backlog.len();
        let mut idle = 0;
        while self.backlogged > 0 && self.inflight.len() < MAX_INFLIGHT && idle < ranks {
            let to = self.next_dest % ranks;
            self.next_dest = to + 1;
            let Some(o) = self.backlog[to].pop_front() else {
                idle += 1;
                continue;
            };
            idle = 0;
            self.backlogged -= 1;
            // A lone frame (nothing after it for the same rank that could
            // join it) leaves as itself: no pack to build and copy out of.
            let alone = !self.backlog[to].front().is_some_and(|g| {
                g.bulk.is_none() && Header::LEN + 8 + o.frame.len() + g.frame.len() <= BATCH
            });
            if !coalesce || alone || o.bulk.is_some() || Header::LEN + 4 + o.frame.len() > BATCH {
                self.post(comm, o);
                continue;
            }
            // A batch: this frame and those after it for the same rank that
            // fit, up to one with bulk (which must follow them alone).
            let mut pack = Header::new(Kind::Batch).frame(BATCH - Header::LEN);
            let mut n = 0u64;
            let mut next = Some(o);
            while let Some(f) = next.take() {
                pack.extend_from_slice(&(f.frame.len() as u32).to_le_bytes());
                pack.extend_from_slice(&f.frame);
                // Copied: back to this thread's pool, for the next frame a
                // sender here encodes (no allocation per one-way frame).
                crate::header::recycle(f.frame);
                n += 1;
                let fits = self.backlog[to]
                    .front()
                    .is_some_and(|g| g.bulk.is_none() && pack.len() + 4 + g.frame.len() <= BATCH);
                if fits {
                    next = self.backlog[to].pop_front();
                    self.backlogged -= 1;
                }
            }
            self.flush(comm, to, pack, n);
        }
    }

    /// Sends a pack of `n` frames to `to` (a lone frame as itself).
    fn flush(&mut self, comm: &SimpleCommunicator, to: usize, mut pack: Vec<u8>, n: u64) {
        if n == 1 {
            let frame = pack[Header::LEN + 4..].to_vec();
            self.post(
                comm,
                Outgoing {
                    to,
                    frame,
                    bulk: None,
                },
            );
            return;
        }
        pack[8..16].copy_from_slice(&n.to_le_bytes());
        let dest = comm.process_at_rank(to as i32);
        self.inflight
            .push_back(OwnedSend::post(&dest, pack, FRAME_TAG));
        self.sent += n;
    }

    /// Frees the buffers of sends that completed (oldest first, up to the
    /// first that has not).
    pub(crate) fn reclaim(&mut self) {
        while let Some(s) = self.inflight.front_mut() {
            if !s.test() {
                break;
            }
            self.inflight.pop_front();
        }
    }

    /// Waits for every send in flight and withdraws the posted receives
    /// (shutdown: nothing is in flight any more).
    pub(crate) fn finish(&mut self) {
        for s in self.inflight.drain(..) {
            s.wait();
        }
        for r in self.posted.drain(..) {
            r.cancel();
        }
        self.spare.clear();
    }

    /// Receives up to [`MAX_BATCH`] messages and dispatches their frames;
    /// stops early once `done` says so (a waiter's reply is in: its thread
    /// has better things to do than test for more). With nothing there,
    /// tests up to `spins` more times. Whether any arrived.
    pub(crate) fn receive(
        &mut self,
        sh: &Arc<Shared>,
        comm: &SimpleCommunicator,
        done: Option<&AtomicBool>,
        spins: u32,
    ) -> bool {
        let mut any = false;
        for _ in 0..MAX_BATCH {
            // Receives are kept posted, from the buffers of messages
            // already handled first (a receive that completed is posted
            // again only here, before the next test: the thread whose
            // reply came in leaves without posting it).
            while self.posted.len() < POSTED {
                let buf = self.spare.pop().unwrap_or_else(|| vec![0; SMALL]);
                self.posted.push_back(OwnedRecv::post(comm, buf, FRAME_TAG));
            }
            // Messages match posted receives in the order they were posted,
            // so the oldest completes first: in-order, per sender.
            let mut got = self.posted.front_mut().and_then(OwnedRecv::test);
            // Nothing yet: a thread that expects a message within
            // microseconds tests again, up to `spins` times, holding the
            // lock (each test is then one MPI call, not a whole poll), as
            // long as nothing waits to be sent.
            let mut left = if any { 0 } else { spins };
            let mut reclaimed = false;
            while got.is_none() && left > 0 && !sh.queued() {
                left -= 1;
                if reclaimed {
                    std::hint::spin_loop();
                } else {
                    // While nothing has arrived, free what our sends are
                    // done with (a caller's own call, left to its polls):
                    // here it costs nothing, after the reply it would
                    // delay the caller.
                    reclaimed = true;
                    self.reclaim();
                }
                got = self.posted.front_mut().and_then(OwnedRecv::test);
            }
            let Some((from, n, buf)) = got else {
                break;
            };
            self.posted.pop_front();
            any = true;
            let msg = &buf[..n.min(buf.len())];
            match Header::parse(msg) {
                // A call to the engine place runs straight from the
                // receive buffer (nothing keeps its frame).
                Some(h)
                    if h.kind == Kind::Call
                        && h.core == ENGINE_CORE_FIELD
                        && !h.has(Header::BULK) =>
                {
                    self.received += 1;
                    dispatch::call_here(sh, from, h, &msg[Header::LEN..], None);
                    // The reply first, then the receive again.
                    self.send_deferred(sh, comm);
                    self.spare.push(buf);
                }
                // A reply completes its call straight from the receive
                // buffer (only its bytes are copied out, for the waiter).
                Some(h) if h.kind == Kind::Reply && !h.has(Header::BULK) => {
                    self.received += 1;
                    let frame = crate::header::copied(msg);
                    self.spare.push(buf);
                    match self.waiting.remove(h.seq) {
                        // The reply this thread polls for (its slot's flag is
                        // the one it waits on): it keeps it for itself, and
                        // stops receiving.
                        Some(slot)
                            if done.is_some_and(|d| std::ptr::eq(d, slot.done_flag()))
                                && OWN.try_with(|_| ()).is_ok() =>
                        {
                            let r = dispatch::reply_result(h, frame);
                            OWN.with(|o| *o.borrow_mut() = Some((h.seq, r)));
                            // Dropped at this thread's next call, after its
                            // send: not between the reply and the return.
                            crate::pending::drop_later(slot);
                            break;
                        }
                        Some(slot) => slot.complete(dispatch::reply_result(h, frame)),
                        None => dispatch::reply(sh, h, frame),
                    }
                }
                // The collective frame this thread polls for: it keeps it
                // (past the inbox's lock and table), and stops receiving.
                Some(h) if wanted_here(&h, from) => {
                    self.received += 1;
                    let frame = crate::header::copied(msg);
                    self.spare.push(buf);
                    COLL_OWN.with(|o| *o.borrow_mut() = Some(frame));
                    COLL_WANT.with(|w| w.set(None));
                    break;
                }
                _ => {
                    let frame = crate::header::copied(msg);
                    self.spare.push(buf);
                    self.handle(sh, comm, from, frame);
                    self.send_deferred(sh, comm);
                }
            }
            if has_unmatched() {
                self.settle();
            }
            if done.is_some_and(|d| d.load(Ordering::Acquire)) {
                break;
            }
        }
        any
    }

    /// Sends what the frames just dispatched sent (replies first of all).
    fn send_deferred(&mut self, sh: &Shared, comm: &SimpleCommunicator) {
        let mut d = DEFERRED.with(|d| std::mem::take(&mut *d.borrow_mut()));
        if d.is_empty() {
            return;
        }
        if d.len() == 1 {
            // One frame (a reply, usually): as `send` does.
            if let Some(o) = d.pop() {
                self.send(sh, comm, o);
            }
        } else {
            self.take(sh);
            for o in d.drain(..) {
                self.enqueue(o);
            }
            self.pump(comm, sh.tuning().coalesce);
        }
        // Keep the vector's allocation for the next time.
        DEFERRED.with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.is_empty() {
                *slot = d;
            }
        });
    }

    /// Dispatches what one message from `from` holds.
    fn handle(&mut self, sh: &Arc<Shared>, comm: &SimpleCommunicator, from: usize, frame: Vec<u8>) {
        match Header::parse(&frame) {
            Some(h) if h.kind == Kind::Batch => {
                // Where each frame lies in the batch (`seq` counts them).
                let mut frames = Vec::with_capacity((h.seq as usize).min(SMALL / 4));
                let mut at = Header::LEN;
                while let Some(len) = frame.get(at..at + 4) {
                    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                    let start = at + 4;
                    if start + len > frame.len() {
                        break;
                    }
                    frames.push(start..start + len);
                    at = start + len;
                }
                self.received += frames.len() as u64;
                dispatch::deliver_batch(sh, from, frame, frames);
            }
            Some(h) if h.kind == Kind::Large => {
                // The frame itself is the next bulk-tagged message.
                let frame = self.receive_tagged(comm, from);
                if Header::parse(&frame).is_some_and(|h| h.kind != Kind::Large) {
                    self.handle(sh, comm, from, frame);
                }
            }
            Some(h) if h.has(Header::BULK) => {
                self.received += 1;
                let bulk = self.receive_tagged(comm, from);
                dispatch::deliver(sh, from, frame, Some(bulk));
            }
            _ => {
                self.received += 1;
                dispatch::deliver(sh, from, frame, None);
            }
        }
    }

    /// The next bulk-tagged message from `from` (a bulk, or a long frame):
    /// the sender posted it right after the frame that announced it, so it
    /// is on its way; keep our own sends moving while waiting (the sender
    /// may be waiting for one of them).
    fn receive_tagged(&mut self, comm: &SimpleCommunicator, from: usize) -> Vec<u8> {
        let src = comm.process_at_rank(from as i32);
        loop {
            if let Some(m) = src.immediate_matched_probe_with_tag(BULK_TAG) {
                return m.matched_receive_vec::<u8>().0;
            }
            for s in self.inflight.iter_mut() {
                s.test();
            }
            std::hint::spin_loop();
        }
    }

    /// One round: send what is queued, receive and dispatch what arrived,
    /// send what that produced (replies of functions run here), free
    /// finished sends. Whether anything happened. A thread that expects a
    /// message soon tests for one up to `spins` more times while none has
    /// arrived (and nothing waits to be sent); one waiting for `done` (its
    /// reply slot's flag) stops receiving as soon as that is set.
    pub(crate) fn poll_for(
        &mut self,
        sh: &Arc<Shared>,
        comm: &SimpleCommunicator,
        done: Option<&AtomicBool>,
        spins: u32,
    ) -> bool {
        self.poll_with(sh, comm, done, spins, Self::drain)
    }

    /// [`poll_for`](Self::poll_for) for the engine: a stream of one-way
    /// frames still growing in the outbox is left to gather
    /// ([`drain_lazy`](Self::drain_lazy)).
    pub(crate) fn poll_engine(
        &mut self,
        sh: &Arc<Shared>,
        comm: &SimpleCommunicator,
        spins: u32,
    ) -> bool {
        self.poll_with(sh, comm, None, spins, Self::drain_lazy)
    }

    /// One poll, sending with `drain`: send, receive, send what the
    /// received frames queued, reclaim.
    fn poll_with(
        &mut self,
        sh: &Arc<Shared>,
        comm: &SimpleCommunicator,
        done: Option<&AtomicBool>,
        spins: u32,
        drain: fn(&mut Self, &Shared, &SimpleCommunicator) -> bool,
    ) -> bool {
        let _mark = Mark::new();
        let mut worked = drain(self, sh, comm);
        if self.receive(sh, comm, done, spins) {
            worked = true;
            drain(self, sh, comm);
        }
        self.reclaim();
        worked
    }
}

/// Marks the thread as progressing until dropped (also when a dispatch
/// unwinds).
struct Mark(bool);

impl Mark {
    fn new() -> Self {
        Mark(PROGRESSING.with(|p| p.replace(true)))
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        PROGRESSING.with(|p| p.set(self.0));
    }
}
