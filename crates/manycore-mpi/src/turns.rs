//! A core's queue of jobs in dispatch order, and its *turns*: what
//! `dispatch::spawn_ordered` keeps per core. Jobs are queued by whichever
//! thread dispatches them (the engine, or a thread polling for its reply),
//! and the core runs them through turns, messages that `manycore_rt`
//! carries to it; the runtime keeps no order between the messages of two
//! sending threads, so the order lives here.
//!
//! Protocol (everything under the queue's mutex):
//!
//! * **push**: queue the job; if no turn is on its way (`scheduled` clear),
//!   set it and send one.
//! * **start** (a turn begins on the core): take the oldest job; if more
//!   wait, keep `scheduled` set and send the next turn (from the core to
//!   itself) before running the job, else clear it.
//! * **drop** (the core discards a turn unrun, at shutdown): clear
//!   `scheduled` and drop every queued job.
//!
//! Invariants: at most one turn is on its way; whenever jobs wait, one is
//! (so every job runs once turns are delivered); jobs leave oldest first,
//! one per turn, so they run in push order. Sending the next turn before
//! running the job keeps a job that waits (its core serving its messages
//! meanwhile) from holding back the jobs behind it, as a turn per job did.
//! A job pushed while none is on its way costs one cross-thread message
//! (a wakeup, if the core sleeps); one pushed while a turn is on its way
//! costs none, and the core sends itself the turns for the rest.

use std::collections::VecDeque;

/// The jobs queued for one core, and whether a turn is on its way.
pub(crate) struct Turns<J> {
    jobs: VecDeque<J>,
    scheduled: bool,
}

impl<J> Default for Turns<J> {
    fn default() -> Self {
        Turns {
            jobs: VecDeque::new(),
            scheduled: false,
        }
    }
}

impl<J> Turns<J> {
    /// Queues `job`; whether the caller must send the core a turn.
    pub(crate) fn push(&mut self, job: J) -> bool {
        self.jobs.push_back(job);
        !std::mem::replace(&mut self.scheduled, true)
    }

    /// A turn starts: the job it runs, and whether the caller must send
    /// the next turn (before running the job).
    pub(crate) fn start(&mut self) -> (Option<J>, bool) {
        let job = self.jobs.pop_front();
        self.scheduled = !self.jobs.is_empty();
        (job, self.scheduled)
    }

    /// The turn on its way was dropped unrun: no turn will run the queued
    /// jobs, which are returned (to be dropped outside the lock).
    pub(crate) fn dropped(&mut self) -> VecDeque<J> {
        self.scheduled = false;
        std::mem::take(&mut self.jobs)
    }
}

#[cfg(test)]
mod tests;
