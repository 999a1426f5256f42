//! What both engines share: a request and its answer, the signal that
//! delivers the answer to the receiver named in the request, the mapping
//! of the kernel's error numbers to [`IoError`], and the counters.

use super::{IoError, IoResult, ReactorStats};
use crate::instance::AnySlot;
use crate::mode::ModeKind;

use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::CachePadded;
use std::collections::VecDeque;

/// A device request and the receiver it was made for.
pub(crate) enum Req {
    /// Read up to `len` bytes.
    Read {
        len: usize,
        to: AnySlot<IoResult<Vec<u8>>>,
    },
    /// Write `data` (or a prefix of it).
    Write {
        data: Vec<u8>,
        to: AnySlot<IoResult<usize>>,
    },
}

/// The two directions of a device; each serves its requests in order, one
/// at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Read = 0,
    Write = 1,
}

impl Req {
    pub(crate) fn dir(&self) -> Dir {
        match self {
            Req::Read { .. } => Dir::Read,
            Req::Write { .. } => Dir::Write,
        }
    }
}

/// What the device did with a request.
pub(crate) enum Answer {
    Read(Vec<u8>),
    Wrote(usize),
    Failed(IoError),
}

/// A device's queues of requests, one per direction.
pub(crate) type Queues = [VecDeque<Req>; 2];

/// The `errno` of a failed system call (`EIO` if it has none).
pub(crate) fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The error a failed system call's `errno` stands for: a broken pipe is
/// the device hanging up ([`IoError::Closed`]); anything else is the
/// device's own error.
pub(crate) fn from_errno(errno: i32) -> IoError {
    match errno {
        libc::EPIPE => IoError::Closed,
        e => IoError::Os(e),
    }
}

/// The answer to `req` from a system call's result (`n >= 0`, or
/// `-errno`) and the buffer it filled: a read of nothing where something
/// was asked is the end of the stream, the device hanging up.
pub(crate) fn outcome(req: &Req, n: i64, buf: Vec<u8>) -> Answer {
    if n < 0 {
        return Answer::Failed(from_errno((-n) as i32));
    }
    match req {
        Req::Read { len, .. } if n == 0 && *len > 0 => Answer::Failed(IoError::Closed),
        Req::Read { .. } => Answer::Read(buf),
        Req::Write { .. } => Answer::Wrote(n as usize),
    }
}

/// What one side counts of the requests it handled (Relaxed: statistics
/// only).
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) requests: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) refused: AtomicU64,
    /// Answered by a thread that served the device (the direct path).
    pub(crate) served: AtomicU64,
}

/// Counters of a reactor (Relaxed: statistics only). The reactor thread
/// counts what it handles in `reactor`; issuers count the requests they
/// handled on their own threads (the direct path, `Port`) in `direct`, on
/// a line of its own, so that neither side's counting takes the other's
/// cache line. Submitters also bump `wakeups`, and answer in `direct` a
/// request made after the reactor stopped.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) devices: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) waits: AtomicU64,
    pub(crate) reactor: Tally,
    pub(crate) direct: CachePadded<Tally>,
}

/// Adds `n` to a counter.
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn snapshot(&self) -> ReactorStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (r, d) = (&self.reactor, &*self.direct);
        let both = |f: fn(&Tally) -> &AtomicU64| l(f(r)) + l(f(d));
        ReactorStats {
            devices: l(&self.devices),
            requests: both(|t| &t.requests),
            completed: both(|t| &t.completed),
            failed: both(|t| &t.failed),
            refused: both(|t| &t.refused),
            wakeups: l(&self.wakeups),
            waits: l(&self.waits),
            direct: l(&d.served),
        }
    }
}

/// Delivers `answer` to the receiver `req` names, as a continuation signal
/// from the device (kernel mode: it may continue to any thread). A refusal
/// (the slot was filled by someone else, the receiver has fired, its
/// runtime shut down) is counted; the answer is dropped.
pub(crate) fn answer(req: Req, answer: Answer, counters: &Tally) {
    // Counted before the signal, so that whoever the signal reaches sees
    // the count (the signal's message orders it).
    add(
        if matches!(answer, Answer::Failed(_)) {
            &counters.failed
        } else {
            &counters.completed
        },
        1,
    );
    let delivered = match (req, answer) {
        (Req::Read { to, .. }, Answer::Read(buf)) => signal(&to, Ok(buf)),
        (Req::Read { to, .. }, Answer::Failed(e)) => signal(&to, Err(e)),
        (Req::Write { to, .. }, Answer::Wrote(n)) => signal(&to, Ok(n)),
        (Req::Write { to, .. }, Answer::Failed(e)) => signal(&to, Err(e)),
        // Not made by the engines (an answer is built for its request by
        // `outcome`); answered rather than dropped all the same.
        (Req::Read { to, .. }, Answer::Wrote(_)) => signal(&to, Err(IoError::Os(libc::EINVAL))),
        (Req::Write { to, .. }, Answer::Read(_)) => signal(&to, Err(IoError::Os(libc::EINVAL))),
    };
    if !delivered {
        add(&counters.refused, 1);
    }
}

fn signal<T: Send + 'static>(to: &AnySlot<T>, v: T) -> bool {
    crate::signal::signal(ModeKind::Kernel, to.node(), to.index(), v).is_ok()
}

/// Answers every request in `queues` (from the front, the first `skip[d]`
/// of direction `d` excepted: those are in flight) with `e`.
pub(crate) fn fail_queued(queues: &mut Queues, skip: [usize; 2], e: IoError, counters: &Tally) {
    for (q, keep) in queues.iter_mut().zip(skip) {
        let rest: Vec<Req> = q.drain(keep.min(q.len())..).collect();
        for r in rest {
            answer(r, Answer::Failed(e), counters);
        }
    }
}
