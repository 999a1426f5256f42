//! What a frame does when it arrives (from another rank through the engine,
//! or from this rank directly): calls and methods go to their core, with a
//! [`Reply`] that answers exactly once; replies complete waiting calls;
//! stealing and collective frames go to their inboxes. Runs on the thread
//! that progresses MPI (the engine, or a waiting thread; the sender's, for
//! this rank), so it runs user code only for calls addressed to the engine
//! place (`Place::ENGINE`), which must not block; everything else it
//! validates, routes and returns.

use crate::codec::decode;
use crate::error::CallError;
use crate::header::{Header, Kind};
use crate::registry::Handler;
use crate::reply::Reply;
use crate::shared::{Shared, ENGINE_CORE_FIELD};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Handles one frame from rank `from` (with its bulk, if it had one).
pub(crate) fn deliver(sh: &Arc<Shared>, from: usize, frame: Vec<u8>, bulk: Option<Vec<u8>>) {
    let Some(h) = Header::parse(&frame) else {
        return;
    };
    match h.kind {
        Kind::Call => call(sh, from, h, frame, bulk),
        Kind::Method => method(sh, from, h, frame),
        Kind::Reply => reply(sh, h, frame),
        Kind::Free => sh.objects.free(sh, h.object),
        Kind::StealRequest
        | Kind::StealTask
        | Kind::StealNone
        | Kind::TaskResult
        | Kind::JoinDone => sh.join.deliver(sh, from, h, frame),
        Kind::CollectiveUp | Kind::CollectiveDown => sh.coll.deliver(from, h, frame),
        Kind::GroupMethod => crate::group::deliver(sh, from, h, frame),
        Kind::Shutdown => {
            sh.shutdowns.fetch_add(1, Ordering::AcqRel);
        }
        // Batches and announcements are taken apart by `Progress::receive`;
        // one that gets here (inside a batch) is malformed and dropped.
        Kind::Batch | Kind::Large => {}
    }
}

/// A reply (`frame`, header `h` included) completes the call it answers,
/// if that still waits: the waiter gets the frame, or the error it carries.
pub(crate) fn reply(sh: &Shared, h: Header, frame: Vec<u8>) {
    sh.complete(h.seq, reply_result(h, frame));
}

/// What a reply frame (header `h` included) gives its waiter: the frame,
/// or the error it carries.
pub(crate) fn reply_result(h: Header, frame: Vec<u8>) -> Result<Vec<u8>, CallError> {
    if h.has(Header::FAILED) {
        Err(decode::<CallError>(&frame[Header::LEN..]).unwrap_or_else(|e| CallError::Codec(e.0)))
    } else {
        Ok(frame)
    }
}

/// The panic's message, if it was a string.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Runs a stub, turning a panic into [`CallError::Panicked`].
fn run_stub(reply: Reply, stub: impl FnOnce(&mut Vec<u8>) -> Result<(), CallError>) {
    let mut out = reply.buffer();
    let r = match catch_unwind(AssertUnwindSafe(|| stub(&mut out))) {
        Ok(Ok(())) => Ok(out),
        Ok(Err(e)) => Err(e),
        Err(p) => Err(CallError::Panicked(panic_message(&*p))),
    };
    reply.send(r);
}

/// Work for a core.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

fn call(sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>, bulk: Option<Vec<u8>>) {
    if let Some((core, job)) = prepare_call(sh, from, h, frame, bulk) {
        spawn_ordered(sh, core, job);
    }
}

/// Hands `job` to `core` after every job handed to that core before it by
/// any thread of this rank. Frames are dispatched by whoever holds the
/// progress lock (the engine, or a thread polling for its reply), and
/// `manycore_rt` carries each outside thread's messages to a core in a
/// lane of its own, with no order between lanes; so the job waits in the
/// core's queue here, in dispatch order, and the core runs the queue
/// through *turns*, at most one on its way at a time (`turns.rs`: the
/// protocol and its invariants). A turn the core drops unrun (it is
/// shutting down) drops every job queued, whose replies then answer
/// `Shutdown`.
pub(crate) fn spawn_ordered(sh: &Arc<Shared>, core: usize, job: Job) {
    let Some(q) = sh.core_jobs.get(core) else {
        return;
    };
    let send = q.lock().unwrap_or_else(|e| e.into_inner()).push(job);
    if send {
        send_turn(sh, core);
    }
}

fn send_turn(sh: &Arc<Shared>, core: usize) {
    let mut turn = Turn {
        sh: sh.clone(),
        core,
        ran: false,
    };
    // Refused (shutdown): the turn is dropped unrun, with the jobs.
    let _ = sh.rt.core(core).spawn(move || turn.run());
}

/// The turn on its way to a core at its queue of jobs ([`spawn_ordered`]).
struct Turn {
    sh: Arc<Shared>,
    core: usize,
    ran: bool,
}

impl Turn {
    fn run(&mut self) {
        self.ran = true;
        let (job, more) = self.sh.core_jobs[self.core]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start();
        if more {
            send_turn(&self.sh, self.core);
        }
        if let Some(job) = job {
            job();
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.ran {
            let jobs = self.sh.core_jobs[self.core]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .dropped();
            // Outside the lock: a job's reply sends its fallback.
            drop(jobs);
        }
    }
}

/// Validates a call and returns the job that runs it on its core; a call
/// to the engine place runs here and now, and a refused one is answered
/// here (`None` then).
fn prepare_call(
    sh: &Arc<Shared>,
    from: usize,
    h: Header,
    frame: Vec<u8>,
    bulk: Option<Vec<u8>>,
) -> Option<(usize, Job)> {
    if h.core == ENGINE_CORE_FIELD {
        call_here(sh, from, h, &frame[Header::LEN..], bulk);
        return None;
    }
    let reply = Reply::new(sh, from, &h, CallError::Shutdown);
    let Some(entry) = sh.registry.get(h.func) else {
        reply.send(Err(CallError::UnknownFunction(h.func)));
        return None;
    };
    let core = usize::from(h.core);
    if core >= sh.cores {
        reply.send(Err(CallError::NoSuchCore {
            core,
            cores: sh.cores,
        }));
        return None;
    }
    let job: Job = match (entry.handler, bulk) {
        (Handler::Call(f), None) => {
            Box::new(move || run_stub(reply, |out| f(&frame[Header::LEN..], out)))
        }
        (Handler::Bulk(f), Some(b)) => {
            Box::new(move || run_stub(reply, |out| f(&frame[Header::LEN..], b, out)))
        }
        _ => {
            reply.send(Err(CallError::WrongKind(entry.name.to_string())));
            return None;
        }
    };
    Some((core, job))
}

/// A call to the engine place, with its arguments `args`: runs here, on
/// the thread that progresses MPI (or the local caller), and replies at
/// once.
pub(crate) fn call_here(
    sh: &Arc<Shared>,
    from: usize,
    h: Header,
    args: &[u8],
    bulk: Option<Vec<u8>>,
) {
    // Not counted as work in progress: the reply is sent (or handed to the
    // poll that runs this, which sends it under the progress lock) before
    // this returns, so no shutdown count can fall in between. No `Reply`
    // either: nothing here can drop the call unanswered (a panic is
    // caught), so the frame is made and sent straight away.
    let one_way = h.has(Header::ONE_WAY);
    let answer = |r: Result<Vec<u8>, CallError>| {
        if one_way {
            return;
        }
        let frame = match r {
            Ok(frame) => frame,
            Err(e) => {
                let mut rh = Header::new(Kind::Reply);
                rh.seq = h.seq;
                crate::reply::error_frame(rh, &e)
            }
        };
        sh.send(from, frame, None);
    };
    let Some(entry) = sh.registry.get(h.func) else {
        return answer(Err(CallError::UnknownFunction(h.func)));
    };
    sh.conversing.store(true, Ordering::Relaxed);
    let mut out = if one_way {
        Vec::new()
    } else {
        let mut rh = Header::new(Kind::Reply);
        rh.seq = h.seq;
        rh.frame(64)
    };
    let r = match (entry.handler, bulk) {
        (Handler::Call(f), None) => catch_unwind(AssertUnwindSafe(|| f(args, &mut out))),
        (Handler::Bulk(f), Some(b)) => catch_unwind(AssertUnwindSafe(|| f(args, b, &mut out))),
        _ => return answer(Err(CallError::WrongKind(entry.name.to_string()))),
    };
    answer(match r {
        Ok(Ok(())) => Ok(out),
        Ok(Err(e)) => Err(e),
        Err(p) => Err(CallError::Panicked(panic_message(&*p))),
    });
}

/// Handles the frames of one batch from `from` (`batch[r]` for each range
/// `r` of `frames`), in order. A run of calls for cores goes to each core
/// as one message that runs them all, straight from the batch: the
/// progress thread only routes them, and the core decodes, runs and
/// replies. The run ends before any other frame, so that everything this
/// rank receives from one rank still takes effect in the order sent.
pub(crate) fn deliver_batch(
    sh: &Arc<Shared>,
    from: usize,
    batch: Vec<u8>,
    frames: Vec<std::ops::Range<usize>>,
) {
    let batch = Arc::new(batch);
    let mut run: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for r in frames {
        match Header::parse(&batch[r.clone()]) {
            Some(h)
                if h.kind == Kind::Call
                    && h.core != ENGINE_CORE_FIELD
                    && usize::from(h.core) < sh.cores
                    && !h.has(Header::BULK) =>
            {
                run.push((usize::from(h.core), r));
            }
            _ => {
                hand_over(sh, from, &batch, &mut run);
                deliver(sh, from, batch[r].to_vec(), None);
            }
        }
    }
    hand_over(sh, from, &batch, &mut run);
}

/// Sends each core its calls of `run` (ranges of `batch`), in order, as
/// one message.
fn hand_over(
    sh: &Arc<Shared>,
    from: usize,
    batch: &Arc<Vec<u8>>,
    run: &mut Vec<(usize, std::ops::Range<usize>)>,
) {
    while !run.is_empty() {
        let core = run[0].0;
        let mut mine = Vec::new();
        let mut rest = Vec::new();
        for (c, r) in run.drain(..) {
            if c == core {
                mine.push(r);
            } else {
                rest.push((c, r));
            }
        }
        *run = rest;
        // Counted in progress now, each until its reply is sent (or its
        // fallback, if the core drops the run unrun).
        sh.handlers.fetch_add(mine.len(), Ordering::AcqRel);
        let calls = Run {
            sh: sh.clone(),
            from,
            batch: batch.clone(),
            counted: mine.len(),
            calls: mine.into_iter(),
        };
        spawn_ordered(sh, core, Box::new(move || calls.run()));
    }
}

/// Calls of one batch for one core, already counted in progress (all of
/// them until the run is done, when it stops counting them at once).
struct Run {
    sh: Arc<Shared>,
    from: usize,
    batch: Arc<Vec<u8>>,
    counted: usize,
    calls: std::vec::IntoIter<std::ops::Range<usize>>,
}

impl Run {
    fn run(mut self) {
        // The output of one-way calls, dropped (one buffer for them all).
        let mut dropped = Vec::new();
        for r in self.calls.by_ref() {
            let frame = &self.batch[r];
            let Some(h) = Header::parse(frame) else {
                continue;
            };
            if h.has(Header::ONE_WAY) {
                // Nobody hears back (a `Reply` would answer nobody): run
                // the stub with no reply to make, its failure staying here.
                if let Some(Handler::Call(f)) = self.sh.registry.get(h.func).map(|e| e.handler) {
                    dropped.clear();
                    let _ =
                        catch_unwind(AssertUnwindSafe(|| f(&frame[Header::LEN..], &mut dropped)));
                }
                continue;
            }
            let reply = Reply::adopt(&self.sh, self.from, &h, CallError::Shutdown);
            match self.sh.registry.get(h.func).map(|e| (e, e.handler)) {
                Some((_, Handler::Call(f))) => run_stub(reply, |out| f(&frame[Header::LEN..], out)),
                Some((e, _)) => reply.send(Err(CallError::WrongKind(e.name.to_string()))),
                None => reply.send(Err(CallError::UnknownFunction(h.func))),
            }
        }
    }
}

impl Drop for Run {
    /// Calls not run (the core dropped the run) answer `Shutdown`; then
    /// none of the run's calls counts as in progress any more.
    fn drop(&mut self) {
        for r in self.calls.by_ref() {
            if let Some(h) = Header::parse(&self.batch[r]) {
                drop(Reply::adopt(&self.sh, self.from, &h, CallError::Shutdown));
            }
        }
        self.sh.handlers.fetch_sub(self.counted, Ordering::AcqRel);
    }
}

fn method(sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>) {
    let reply = Reply::new(sh, from, &h, CallError::StaleObject);
    let Some(entry) = sh.registry.get(h.func) else {
        return reply.send(Err(CallError::UnknownFunction(h.func)));
    };
    let Handler::Method(f) = entry.handler else {
        return reply.send(Err(CallError::WrongKind(entry.name.to_string())));
    };
    // The object's table entry runs this on the object's core, after the
    // jobs dispatched to that core before it, or drops it (the reply then
    // answers `StaleObject`).
    sh.objects.invoke(
        sh,
        h.object,
        Box::new(move |obj| match obj {
            Some(o) => run_stub(reply, |out| f(o, &frame[Header::LEN..], out)),
            None => reply.send(Err(CallError::StaleObject)),
        }),
    );
}
