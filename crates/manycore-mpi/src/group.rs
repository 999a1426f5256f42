//! `RemoteGroup<T>`: remote objects on any ranks, invoked together (the
//! one-sided collective invocations of Rotta et al., sections II.B-C:
//! `ateach` and `reduce` over an object group), hierarchically: the caller
//! sends one `GroupMethod` frame per rank that holds members; that rank runs
//! the method on each of its members, each on its object's core, combines
//! their results in member order with the registered combining function
//! (the last member to finish does it, on its core), and replies once; the
//! caller combines the ranks' partials in rank order.
//!
//! Results are combined as encoded bytes on the members' rank: the encoding
//! of a pair `(a, b)` is the encoding of `a` followed by that of `b`, so the
//! combining function's stub is called on the two results laid end to end,
//! without knowing their type.

use crate::codec::{encode_into, CodecError};
use crate::dispatch::panic_message;
use crate::error::CallError;
use crate::function::{MethodFn, RemoteFn};
use crate::header::{Header, Kind};
use crate::object::Remote;
use crate::pending::Pending;
use crate::registry::{Handler, MethodStub, StubResult};
use crate::reply::Reply;
use crate::shared::{Shared, Target};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Remote objects of type `T`, on any ranks and cores, invoked together.
pub struct RemoteGroup<T> {
    members: Vec<Remote<T>>,
}

impl<T> Clone for RemoteGroup<T> {
    fn clone(&self) -> Self {
        RemoteGroup {
            members: self.members.clone(),
        }
    }
}

impl<T> std::fmt::Debug for RemoteGroup<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteGroup")
            .field("members", &self.members.len())
            .finish()
    }
}

/// The pending result of [`RemoteGroup::reduce`]: one reply per rank,
/// combined in rank order when waited for.
#[must_use = "a GroupReduce does nothing unless waited on (the calls run anyway)"]
pub struct GroupReduce<R> {
    parts: Result<Vec<Pending<R>>, CallError>,
    combine: fn((R, R)) -> R,
}

impl<R> std::fmt::Debug for GroupReduce<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupReduce")
            .field("ranks", &self.parts.as_ref().map_or(0, Vec::len))
            .finish()
    }
}

impl<R: DeserializeOwned> GroupReduce<R> {
    /// Waits for every rank's partial and combines them.
    pub fn wait(self) -> Result<R, CallError> {
        self.finish(None)
    }

    /// Like [`wait`](Self::wait), with one deadline for all the ranks:
    /// [`CallError::Timeout`] once it passes (the late replies are
    /// dropped). As for [`Pending::wait_timeout`]: `Duration::ZERO` takes
    /// only what is in, `Duration::MAX` waits without a bound.
    pub fn wait_timeout(self, timeout: Duration) -> Result<R, CallError> {
        self.finish(Instant::now().checked_add(timeout))
    }

    fn finish(self, deadline: Option<Instant>) -> Result<R, CallError> {
        let mut acc: Option<R> = None;
        for p in self.parts? {
            let v = match deadline {
                None => p.wait()?,
                Some(d) => p.wait_timeout(d.saturating_duration_since(Instant::now()))?,
            };
            acc = Some(match acc {
                None => v,
                Some(a) => (self.combine)((a, v)),
            });
        }
        acc.ok_or(CallError::EmptyGroup)
    }
}

impl<T: 'static> RemoteGroup<T> {
    /// A group of these members (in this order).
    pub fn new(members: Vec<Remote<T>>) -> Self {
        RemoteGroup { members }
    }

    /// The members, in order.
    pub fn members(&self) -> &[Remote<T>] {
        &self.members
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Runs `m(a)` on every member, one-sided (the paper's `ateach`).
    pub fn spawn<A: Serialize, R>(&self, m: &MethodFn<T, A, R>, a: A) -> Result<(), CallError> {
        let sh = Shared::current().ok_or(CallError::Shutdown)?;
        for r in &self.members {
            sh.invoke(r.target(m.id()), |out| encode_into(out, &a), None, true)?;
        }
        Ok(())
    }

    /// Runs `m(a)` on every member and combines the results with
    /// `combine`: within each rank in member order, on that rank, then the
    /// ranks' results in rank order, here. `combine` must be associative;
    /// it must also be commutative unless the members are listed rank by
    /// rank. A member that fails (panics, or was removed) fails the whole
    /// reduction with the error of its rank's first failing member.
    pub fn reduce<A: Serialize, R: DeserializeOwned>(
        &self,
        m: &MethodFn<T, A, R>,
        a: A,
        combine: &RemoteFn<(R, R), R>,
    ) -> GroupReduce<R> {
        GroupReduce {
            parts: self.send_reduce(m.id(), combine.id(), &a),
            combine: combine.body(),
        }
    }

    fn send_reduce<A: Serialize, R>(
        &self,
        method: Result<u32, CallError>,
        combine: Result<u32, CallError>,
        a: &A,
    ) -> Result<Vec<Pending<R>>, CallError> {
        if self.members.is_empty() {
            return Err(CallError::EmptyGroup);
        }
        let sh = Shared::current().ok_or(CallError::Shutdown)?;
        let (method, combine) = (method?, combine?);
        let mut by_rank: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for r in &self.members {
            by_rank.entry(r.rank()).or_default().push(r.object);
        }
        Ok(by_rank
            .into_iter()
            .map(|(rank, objects)| {
                let to = Target {
                    rank,
                    core: 0,
                    kind: Kind::GroupMethod,
                    func: Ok(method),
                    object: u64::from(combine),
                };
                sh.call(
                    to,
                    |out| {
                        encode_into(out, &objects)?;
                        encode_into(out, a)
                    },
                    None,
                )
            })
            .collect())
    }
}

/// One member's encoded result, or why it has none.
type Outcome = Result<Vec<u8>, CallError>;

/// The receiving rank's side of a `GroupMethod` frame: the members' results
/// as they come in, and the reply to send when the last one is in.
struct Gather {
    frame: Vec<u8>,
    args: usize,
    method: MethodStub,
    combine: fn(&[u8], &mut Vec<u8>) -> StubResult,
    /// By member: `None` until that member's part reported.
    results: Mutex<Vec<Option<Outcome>>>,
    left: AtomicUsize,
    reply: Mutex<Option<Reply>>,
}

/// One member's part; if the object's queue drops it unrun (the object is
/// gone), it reports `StaleObject`.
struct Part {
    gather: Arc<Gather>,
    index: usize,
    done: bool,
}

impl Part {
    fn run(mut self, obj: Option<&mut dyn Any>) {
        let g = &self.gather;
        let r = match obj {
            None => Err(CallError::StaleObject),
            Some(o) => {
                let mut out = Vec::new();
                match catch_unwind(AssertUnwindSafe(|| {
                    (g.method)(o, &g.frame[g.args..], &mut out)
                })) {
                    Ok(Ok(())) => Ok(out),
                    Ok(Err(e)) => Err(e),
                    Err(p) => Err(CallError::Panicked(panic_message(&*p))),
                }
            }
        };
        self.done = true;
        self.gather.finish(self.index, r);
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        if !self.done {
            self.gather.finish(self.index, Err(CallError::StaleObject));
        }
    }
}

impl Gather {
    fn finish(&self, index: usize, r: Outcome) {
        let all = {
            let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
            results[index] = Some(r);
            // AcqRel: the last decrement sees every other member's result
            // (they are also under the lock; this orders the count).
            if self.left.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            std::mem::take(&mut *results)
        };
        let Some(reply) = self.reply.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let mut acc: Option<Vec<u8>> = None;
        for r in all {
            let v = match r {
                Some(Ok(v)) => v,
                Some(Err(e)) => return reply.send(Err(e)),
                None => return reply.send(Err(CallError::StaleObject)),
            };
            acc = Some(match acc {
                None => v,
                Some(mut a) => {
                    a.extend_from_slice(&v);
                    let mut out = Vec::new();
                    match catch_unwind(AssertUnwindSafe(|| (self.combine)(&a, &mut out))) {
                        Ok(Ok(())) => out,
                        Ok(Err(e)) => return reply.send(Err(e)),
                        Err(p) => return reply.send(Err(CallError::Panicked(panic_message(&*p)))),
                    }
                }
            });
        }
        let mut frame = reply.buffer();
        frame.extend_from_slice(&acc.unwrap_or_default());
        reply.send(Ok(frame));
    }
}

/// Handles a `GroupMethod` frame from rank `from`.
pub(crate) fn deliver(sh: &Arc<Shared>, from: usize, h: Header, frame: Vec<u8>) {
    let reply = Reply::new(sh, from, &h, CallError::StaleObject);
    let function = |id: u64| {
        u32::try_from(id)
            .ok()
            .and_then(|id| sh.registry.get(id).map(|e| (id, e)))
            .ok_or(CallError::UnknownFunction(id as u32))
    };
    let (method, combine) = match (function(u64::from(h.func)), function(h.object)) {
        (Ok((_, m)), Ok((_, c))) => match (m.handler, c.handler) {
            (Handler::Method(m), Handler::Call(c)) => (m, c),
            (Handler::Method(_), _) => return reply.send(Err(CallError::WrongKind(c.name.into()))),
            _ => return reply.send(Err(CallError::WrongKind(m.name.into()))),
        },
        (Err(e), _) | (_, Err(e)) => return reply.send(Err(e)),
    };
    let mut rest = &frame[Header::LEN..];
    let objects: Vec<u64> = match crate::codec::decode_prefix(&mut rest) {
        Ok(o) => o,
        Err(CodecError(e)) => return reply.send(Err(CallError::Codec(e))),
    };
    if objects.is_empty() {
        return reply.send(Err(CallError::EmptyGroup));
    }
    let args = frame.len() - rest.len();
    let gather = Arc::new(Gather {
        frame,
        args,
        method,
        combine,
        results: Mutex::new((0..objects.len()).map(|_| None).collect()),
        left: AtomicUsize::new(objects.len()),
        reply: Mutex::new(Some(reply)),
    });
    for (index, object) in objects.into_iter().enumerate() {
        let part = Part {
            gather: gather.clone(),
            index,
            done: false,
        };
        sh.objects
            .invoke(sh, object, Box::new(move |o| part.run(o)));
    }
}
