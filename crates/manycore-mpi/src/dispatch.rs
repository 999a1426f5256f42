//! What a frame does when it arrives (from another rank through the engine,
//! or from this rank directly): calls and methods go to their core, with a
//! [`Reply`] that answers exactly once; replies complete waiting calls;
//! stealing and collective frames go to their inboxes. Runs on the engine
//! thread (or the sender's, for this rank), so it never runs user code
//! itself: it validates, routes and returns.

use crate::codec::decode;
use crate::error::CallError;
use crate::header::{Header, Kind};
use crate::registry::Handler;
use crate::reply::Reply;
use crate::shared::Shared;
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
        Kind::Reply => {
            let r = if h.has(Header::FAILED) {
                Err(decode::<CallError>(&frame[Header::LEN..])
                    .unwrap_or_else(|e| CallError::Codec(e.0)))
            } else {
                Ok(frame)
            };
            sh.complete(h.seq, r);
        }
        Kind::Free => sh.objects.free(h.object),
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

fn call(sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>, bulk: Option<Vec<u8>>) {
    let reply = Reply::new(sh, from, &h, CallError::Shutdown);
    let Some(entry) = sh.registry.get(h.func) else {
        return reply.send(Err(CallError::UnknownFunction(h.func)));
    };
    let core = usize::from(h.core);
    if core >= sh.cores {
        return reply.send(Err(CallError::NoSuchCore {
            core,
            cores: sh.cores,
        }));
    }
    let job: Box<dyn FnOnce() + Send> = match (entry.handler, bulk) {
        (Handler::Call(f), None) => {
            Box::new(move || run_stub(reply, |out| f(&frame[Header::LEN..], out)))
        }
        (Handler::Bulk(f), Some(b)) => {
            Box::new(move || run_stub(reply, |out| f(&frame[Header::LEN..], b, out)))
        }
        _ => return reply.send(Err(CallError::WrongKind(entry.name.to_string()))),
    };
    // A core that is shutting down drops the job, and its reply answers
    // `Shutdown`.
    let _ = sh.rt.core(core).spawn(job);
}

fn method(sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>) {
    let reply = Reply::new(sh, from, &h, CallError::StaleObject);
    let Some(entry) = sh.registry.get(h.func) else {
        return reply.send(Err(CallError::UnknownFunction(h.func)));
    };
    let Handler::Method(f) = entry.handler else {
        return reply.send(Err(CallError::WrongKind(entry.name.to_string())));
    };
    // The object's table entry runs this on the object's core, or drops it
    // (the reply then answers `StaleObject`).
    sh.objects.invoke(
        h.object,
        Box::new(move |obj| match obj {
            Some(o) => run_stub(reply, |out| f(o, &frame[Header::LEN..], out)),
            None => reply.send(Err(CallError::StaleObject)),
        }),
    );
}
