//! The worker of a distributed join: the [`Scheduler`] behind a [`Ctx`] on
//! every rank of a `World::run_join`, and the stealing protocol across
//! ranks (MuSE's, with active messages standing in for SMiLE's):
//!
//! * Rank 0 runs the root task on its stack; every other rank starts idle.
//! * An idle rank (or one whose owner waits for a stolen frame) sends one
//!   `StealRequest` at a time to a victim, round robin over the other ranks.
//! * The engine of the victim queues the request and raises the demand
//!   flag, which the victim's worker reads at its next join (one load); it
//!   then promotes its oldest latent frame, encodes the argument straight
//!   into a `StealTask` frame and ships it, or answers `StealNone`.
//! * The thief runs the task on its stack (its own joins latent in turn) and
//!   sends the result back as a `TaskResult` for the victim's ticket.
//! * The owner, back at a promoted join, waits for that ticket while it
//!   serves thieves, runs tasks it received and asks for more work.
//! * When the root returns, rank 0 sends `JoinDone` with the result to every
//!   rank; they stop asking and return it.
//!
//! Requests and answers carry the join's epoch, so a late answer from an
//! earlier join is recognized and dropped, and a request that reaches a
//! rank not (or no longer) in that join is answered `StealNone` by the
//! engine itself.

use crate::codec::decode;
use crate::dispatch::panic_message;
use crate::error::{CallError, Error};
use crate::function::TaskFn;
use crate::header::{Header, Kind};
use crate::join::{oldest_latent, Ctx, Frame, Scheduler};
use crate::registry::Handler;
use crate::reply::error_frame;
use crate::shared::Shared;
use crate::world::World;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// First pause after a victim had nothing; doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_micros(20);
/// Longest pause between two requests of an idle thief.
const MAX_BACKOFF: Duration = Duration::from_millis(1);
/// Longest sleep while a request is out (a bound, not a timing relied on:
/// every answer wakes the worker).
const MAX_PARK: Duration = Duration::from_millis(5);

/// A task a victim shipped here.
struct Stolen {
    owner: usize,
    ticket: u64,
    func: u32,
    frame: Vec<u8>,
}

#[derive(Default)]
struct Inbox {
    /// The epoch of the join this rank's worker is in.
    active: Option<u64>,
    worker: Option<Thread>,
    /// Thieves waiting for an answer.
    requests: VecDeque<usize>,
    /// Tasks shipped to this rank, not yet run.
    tasks: VecDeque<Stolen>,
    /// Answers (task or none) to this rank's requests, counted.
    answers: u64,
    /// Results of this rank's stolen frames, by ticket.
    results: HashMap<u64, Result<Vec<u8>, CallError>>,
    /// Results of finished joins, by epoch. More than one when rank 0
    /// finished the next join before this rank saw the end of the last
    /// (after a failure, a rank may still be running a task of a join
    /// whose root has already failed).
    done: HashMap<u64, Result<Vec<u8>, CallError>>,
}

impl Inbox {
    fn wake(&self) {
        if let Some(t) = &self.worker {
            t.unpark();
        }
    }
}

/// What this rank's worker did in distributed joins, counted since the
/// world started ([`World::join_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JoinStats {
    /// Latent frames this rank promoted and shipped to a thief.
    pub promoted: u64,
    /// Tasks this rank received from a victim and ran.
    pub stolen: u64,
    /// Steal requests this rank sent.
    pub requests: u64,
    /// Of those, answered with nothing.
    pub refused: u64,
}

#[derive(Default)]
struct Counters {
    promoted: AtomicU64,
    stolen: AtomicU64,
    requests: AtomicU64,
    refused: AtomicU64,
}

/// The rank's end of the stealing protocol, fed by the engine.
#[derive(Default)]
pub(crate) struct JoinInbox {
    counters: Counters,
    inbox: Mutex<Inbox>,
    /// A thief waits. Release by the engine after queueing the request;
    /// Relaxed load at every join (a stale `false` only delays the answer to
    /// the next join; the queue itself is read under the lock).
    demand: AtomicBool,
    epochs: AtomicU64,
    tickets: AtomicU64,
}

fn none_frame(epoch: u64) -> Vec<u8> {
    let mut h = Header::new(Kind::StealNone);
    h.seq = epoch;
    h.frame(0)
}

impl JoinInbox {
    fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A stealing frame arrived from `from`.
    pub(crate) fn deliver(&self, sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>) {
        let mut g = self.lock();
        match h.kind {
            Kind::StealRequest => {
                if g.active == Some(h.seq) {
                    g.requests.push_back(from);
                    self.demand.store(true, Ordering::Release);
                    g.wake();
                } else {
                    drop(g);
                    sh.send(from, none_frame(h.seq), None);
                }
            }
            Kind::StealTask => {
                if g.active == Some(h.object) {
                    g.tasks.push_back(Stolen {
                        owner: from,
                        ticket: h.seq,
                        func: h.func,
                        frame,
                    });
                    g.answers += 1;
                    g.wake();
                } else {
                    // Only after a failed join: the owner must not wait.
                    drop(g);
                    let mut r = Header::new(Kind::TaskResult);
                    r.seq = h.seq;
                    sh.send(from, error_frame(r, &CallError::Shutdown), None);
                }
            }
            Kind::StealNone if g.active == Some(h.seq) => {
                g.answers += 1;
                g.wake();
            }
            Kind::TaskResult if g.active.is_some() => {
                g.results.insert(h.seq, result_of(&h, frame));
                g.wake();
            }
            Kind::JoinDone => {
                g.done.insert(h.seq, result_of(&h, frame));
                g.wake();
            }
            _ => {}
        }
    }
}

/// The frame, or the error it carries.
fn result_of(h: &Header, frame: Vec<u8>) -> Result<Vec<u8>, CallError> {
    if h.has(Header::FAILED) {
        Err(decode(&frame[Header::LEN..]).unwrap_or_else(|e| CallError::Codec(e.0)))
    } else {
        Ok(frame)
    }
}

/// One rank's worker for one join (lives on the caller's stack).
struct Worker<'s> {
    sh: &'s Arc<Shared>,
    epoch: u64,
    /// A request of ours is unanswered.
    outstanding: Cell<bool>,
    answers_seen: Cell<u64>,
    next_victim: Cell<usize>,
    backoff: Cell<Duration>,
    next_request: Cell<Instant>,
    /// Joins until this worker next polls MPI itself (see `demand`).
    until_poll: Cell<u32>,
    /// `Tuning::poll_every` when the join began.
    poll_every: u32,
}

impl Scheduler for Worker<'_> {
    fn demand(&self) -> bool {
        // MuSE's MAX_SEQUENTIAL: every so many joins, look at the network
        // ourselves, so that a steal request reaches a busy victim as soon
        // as that, not when the victim's engine next wakes.
        if self.poll_every > 0 {
            let left = self.until_poll.get();
            if left <= 1 {
                self.until_poll.set(self.poll_every);
                self.sh.progress_once();
            } else {
                self.until_poll.set(left - 1);
            }
        }
        self.sh.join.demand.load(Ordering::Relaxed)
    }

    fn serve(&self, top: Option<&Frame<'_>>) {
        loop {
            let thief = {
                let mut g = self.sh.join.lock();
                let t = g.requests.pop_front();
                if g.requests.is_empty() {
                    self.sh.join.demand.store(false, Ordering::Relaxed);
                }
                t
            };
            let Some(thief) = thief else { break };
            let frame = oldest_latent(top).and_then(|f| {
                let ticket = self.ticket();
                let mut h = Header::new(Kind::StealTask);
                h.seq = ticket;
                h.object = self.epoch;
                let mut frame = h.frame(64);
                let id = f.promote(ticket, &mut frame)?;
                Header::set_func(&mut frame, id);
                self.count(|c| &c.promoted);
                Some(frame)
            });
            let frame = frame.unwrap_or_else(|| none_frame(self.epoch));
            self.sh.send(thief, frame, None);
        }
    }

    fn wait_stolen(&self, ticket: u64, top: Option<&Frame<'_>>) -> Result<Vec<u8>, CallError> {
        loop {
            if let Some(r) = self.sh.join.lock().results.remove(&ticket) {
                return r;
            }
            self.step(top);
        }
    }

    fn ticket(&self) -> u64 {
        self.sh.join.tickets.fetch_add(1, Ordering::Relaxed)
    }
}

impl Worker<'_> {
    fn count(&self, which: impl Fn(&Counters) -> &AtomicU64) {
        // Relaxed: statistics, read after the join.
        which(&self.sh.join.counters).fetch_add(1, Ordering::Relaxed);
    }

    /// One round of being useful with nothing of its own to run: serve
    /// thieves, run a task that arrived, ask a victim, or sleep until an
    /// answer or the next request is due.
    fn step(&self, top: Option<&Frame<'_>>) {
        if self.demand() {
            self.serve(top);
        }
        let (task, answers) = {
            let mut g = self.sh.join.lock();
            (g.tasks.pop_front(), g.answers)
        };
        let now = Instant::now();
        if answers != self.answers_seen.get() {
            self.answers_seen.set(answers);
            self.outstanding.set(false);
            if task.is_none() {
                self.count(|c| &c.refused);
                // The victim had nothing: ask the next one a little later.
                let b = self.backoff.get();
                self.next_request.set(now + b);
                self.backoff.set((b * 2).min(MAX_BACKOFF));
            }
        }
        if let Some(t) = task {
            self.backoff.set(MIN_BACKOFF);
            self.next_request.set(now);
            self.count(|c| &c.stolen);
            self.run_stolen(t, top);
            return;
        }
        if !self.outstanding.get() && self.sh.size > 1 && now >= self.next_request.get() {
            let victim = self.victim();
            let mut h = Header::new(Kind::StealRequest);
            h.seq = self.epoch;
            self.outstanding.set(true);
            self.count(|c| &c.requests);
            self.sh.send(victim, h.frame(0), None);
            // The answer comes through our engine, perhaps asleep after a
            // quiet spell: it is to poll eagerly from now.
            self.sh.hand_over();
            return;
        }
        let park = if self.outstanding.get() {
            MAX_PARK
        } else {
            self.next_request.get().saturating_duration_since(now)
        };
        let quiet = {
            let g = self.sh.join.lock();
            g.tasks.is_empty() && g.answers == answers && g.requests.is_empty()
        };
        if quiet {
            std::thread::park_timeout(park.min(MAX_PARK));
        }
    }

    fn victim(&self) -> usize {
        let (me, n) = (self.sh.rank, self.sh.size);
        let i = self.next_victim.get();
        self.next_victim.set(i + 1);
        (me + 1 + i % (n - 1)) % n
    }

    /// Runs a task shipped here, on this stack, and sends its result home.
    fn run_stolen(&self, t: Stolen, top: Option<&Frame<'_>>) {
        let mut h = Header::new(Kind::TaskResult);
        h.seq = t.ticket;
        let mut out = h.frame(64);
        let r = match self.sh.registry.get(t.func).map(|e| (e, e.handler)) {
            Some((_, Handler::Task(f))) => {
                let cx = Ctx::new(self, top);
                match catch_unwind(AssertUnwindSafe(|| {
                    f(cx, &t.frame[Header::LEN..], &mut out)
                })) {
                    Ok(r) => r,
                    Err(p) => Err(CallError::Panicked(panic_message(&*p))),
                }
            }
            Some((e, _)) => Err(CallError::WrongKind(e.name.to_string())),
            None => Err(CallError::UnknownFunction(t.func)),
        };
        let frame = match r {
            Ok(()) => out,
            Err(e) => error_frame(h, &e),
        };
        self.sh.send(t.owner, frame, None);
    }
}

impl World {
    /// What this rank's worker did in the distributed joins so far.
    pub fn join_stats(&self) -> JoinStats {
        let c = &self.shared.join.counters;
        JoinStats {
            promoted: c.promoted.load(Ordering::Relaxed),
            stolen: c.stolen.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
        }
    }

    /// Runs `task(arg)` as a distributed join over every rank and returns
    /// its result on every rank. Collective: every rank calls it, in the
    /// same order as its other collectives, from one thread (which becomes
    /// the rank's worker; the local runtime's cores are not used by the
    /// join itself). Rank 0 runs the root on its stack; the other ranks
    /// steal (`arg` matters on rank 0 only).
    ///
    /// A panic in the root or in a stolen task gives `Err(Error::Task)` on
    /// every rank, and the world lives on.
    pub fn run_join<A, R>(&self, task: &TaskFn<A, R>, arg: A) -> Result<R, Error>
    where
        A: Serialize + DeserializeOwned,
        R: Serialize + DeserializeOwned,
    {
        let sh = &self.shared;
        let epoch = sh.join.epochs.fetch_add(1, Ordering::Relaxed) + 1;
        {
            let mut g = sh.join.lock();
            g.active = Some(epoch);
            g.worker = Some(std::thread::current());
        }
        let w = Worker {
            sh,
            epoch,
            outstanding: Cell::new(false),
            answers_seen: Cell::new(0),
            next_victim: Cell::new(0),
            backoff: Cell::new(MIN_BACKOFF),
            next_request: Cell::new(Instant::now()),
            until_poll: Cell::new(1),
            poll_every: sh.tuning().poll_every,
        };
        w.answers_seen.set(sh.join.lock().answers);
        let r = if sh.rank == 0 {
            self.run_root(&w, task, arg)
        } else {
            self.wait_root(&w)
        };
        self.leave_join(epoch);
        r
    }

    fn run_root<A, R>(&self, w: &Worker<'_>, task: &TaskFn<A, R>, arg: A) -> Result<R, Error>
    where
        R: Serialize,
    {
        let r = catch_unwind(AssertUnwindSafe(|| task.run(Ctx::new(w, None), arg)))
            .map_err(|p| CallError::Panicked(panic_message(&*p)));
        let mut h = Header::new(Kind::JoinDone);
        h.seq = w.epoch;
        let (frame, r) = match r {
            Ok(v) => {
                let mut f = h.frame(64);
                match crate::codec::encode_into(&mut f, &v) {
                    Ok(()) => (f, Ok(v)),
                    Err(e) => {
                        let e = CallError::from(e);
                        (error_frame(h, &e), Err(Error::Task(e)))
                    }
                }
            }
            Err(e) => (error_frame(h, &e), Err(Error::Task(e))),
        };
        for rank in 1..self.shared.size {
            self.shared.send(rank, frame.clone(), None);
        }
        r
    }

    fn wait_root<R: DeserializeOwned>(&self, w: &Worker<'_>) -> Result<R, Error> {
        let started = Instant::now();
        loop {
            {
                let done = self.shared.join.lock().done.remove(&w.epoch);
                if let Some(r) = done {
                    let frame = r.map_err(Error::Task)?;
                    return Ok(decode(&frame[Header::LEN..])?);
                }
            }
            if let Some(t) = self.shared.timeout {
                if started.elapsed() > t {
                    return Err(Error::Timeout("the root of a distributed join"));
                }
            }
            w.step(None);
        }
    }

    /// Leaves the join: answers whoever still asks, hands back tasks that
    /// can no longer run (only after a failure), forgets results.
    fn leave_join(&self, epoch: u64) {
        let sh = &self.shared;
        let (requests, tasks) = {
            let mut g = sh.join.lock();
            g.active = None;
            g.worker = None;
            g.results.clear();
            g.done.retain(|&e, _| e > epoch);
            sh.join.demand.store(false, Ordering::Relaxed);
            (
                std::mem::take(&mut g.requests),
                std::mem::take(&mut g.tasks),
            )
        };
        for thief in requests {
            sh.send(thief, none_frame(epoch), None);
        }
        for t in tasks {
            let mut h = Header::new(Kind::TaskResult);
            h.seq = t.ticket;
            sh.send(t.owner, error_frame(h, &CallError::Shutdown), None);
        }
    }
}
