//! `Commands`: how requests reach the reactor thread. A queue behind a
//! mutex, with two flags beside it under the same lock:
//!
//! * `sleeping`: the reactor found the queue empty and is about to wait in
//!   the kernel (or waits there). A submitter that pushes while it is set
//!   clears it and must wake the reactor (an eventfd write, which the
//!   reactor's kernel wait watches; the eventfd's counter is sticky, so a
//!   write before the wait starts makes the wait return at once).
//! * `stopped`: the reactor is shutting down; pushes are refused and the
//!   submitter answers its request itself.
//!
//! Because the flag and the queue change together under the lock, no push
//! is missed: either the reactor's `take` sees the command, or it set
//! `sleeping` before the push, and then the pusher wakes it.

use manycore_sync::atomic::{AtomicBool, Ordering};
use manycore_sync::Mutex;

struct State<C> {
    queue: Vec<C>,
    sleeping: bool,
    stopped: bool,
}

/// The reactor's command queue.
pub(crate) struct Commands<C> {
    state: Mutex<State<C>>,
    /// `stopped`, readable without the lock (set under it, never cleared):
    /// the direct path refuses to start once the reactor has stopped.
    stopped: AtomicBool,
}

/// What a push found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued; the reactor is awake (it will take the command).
    Queued,
    /// Queued; the reactor was asleep: the pusher must wake it.
    QueuedWake,
}

impl<C> Commands<C> {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                queue: Vec::new(),
                sleeping: false,
                stopped: false,
            }),
            stopped: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> manycore_sync::MutexGuard<'_, State<C>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `c`, or gives it back if the reactor has stopped.
    pub(crate) fn push(&self, c: C) -> Result<Pushed, C> {
        let mut s = self.lock();
        if s.stopped {
            return Err(c);
        }
        s.queue.push(c);
        Ok(if std::mem::replace(&mut s.sleeping, false) {
            Pushed::QueuedWake
        } else {
            Pushed::Queued
        })
    }

    /// The reactor: moves every queued command to `out`. With `sleep`, if
    /// there was none, marks the reactor asleep (it then waits in the
    /// kernel, and the next push wakes it). Returns whether a stop was asked.
    pub(crate) fn take(&self, out: &mut Vec<C>, sleep: bool) -> bool {
        let mut s = self.lock();
        out.append(&mut s.queue);
        s.sleeping = sleep && out.is_empty() && !s.stopped;
        s.stopped
    }

    /// The reactor, back from a kernel wait: awake again (pushes need not
    /// wake it).
    pub(crate) fn awake(&self) {
        self.lock().sleeping = false;
    }

    /// Whether a stop was asked (a hint: a stop may be racing the call).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Asks the reactor to stop; returns whether it was asleep (the caller
    /// then wakes it). Later pushes are refused.
    pub(crate) fn stop(&self) -> bool {
        let mut s = self.lock();
        s.stopped = true;
        self.stopped.store(true, Ordering::Relaxed);
        std::mem::replace(&mut s.sleeping, false)
    }
}
