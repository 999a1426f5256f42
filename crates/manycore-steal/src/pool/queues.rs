//! Work that does not come from a join: spawned jobs (each worker's deque),
//! jobs injected from outside the pool (the injector), broadcasts (each
//! worker's own queue), and how a worker finds and runs any of it.
//!
//! A join's latent frames move only when their owner promotes them at a
//! tick (MuSE: spawn only on demand). Spawned jobs are different: they
//! outlive the `spawn` call, so they are heap jobs, queued at once where an
//! idle worker can take them:
//!
//! * `Scope::spawn` and `spawn` push onto the spawning worker's deque; the
//!   worker pops its own deque from the back (LIFO, Rayon's order), thieves
//!   take from the front (the oldest job: usually the biggest).
//! * A thread that is no worker of the pool pushes onto the injector (FIFO).
//! * `broadcast` pushes one job onto every worker's broadcast queue, which
//!   only that worker takes from.
//!
//! Every push then wakes a worker that asked for work (`notify_work`):
//!
//! ```text
//! pusher:  push (under the queue's lock); queued += 1; fence(SeqCst); load hungry
//! worker:  hungry |= me; ...; prepare_wait (fence(SeqCst) inside); load queued
//! ```
//!
//! so either the pusher sees the worker's demand bit and rings it, or the
//! worker sees the job before it sleeps (loom: `spawn_wakes_a_sleeping_worker`,
//! `install_from_outside`). A worker that takes a queued job while more are
//! queued wakes the next hungry worker in turn.

use super::{Pool, WorkerShared};
use crate::raw::{self, FifoQueue, JobRef, Local, Stolen};
use manycore_sync::atomic::{fence, Ordering};
use manycore_sync::{Arc, MutexGuard};
use std::collections::VecDeque;

/// Something a worker found to do.
pub(crate) enum Work {
    /// A latent frame handed to it (its mailbox).
    Frame(Stolen),
    /// A queued job.
    Job(JobRef),
}

fn lock(q: &manycore_sync::Mutex<VecDeque<JobRef>>) -> MutexGuard<'_, VecDeque<JobRef>> {
    q.lock().unwrap_or_else(|e| e.into_inner())
}

impl WorkerShared {
    fn has_broadcast(&self) -> bool {
        self.bcast_queued.load(Ordering::Relaxed) != 0
    }

    fn pop_broadcast(&self) -> Option<JobRef> {
        if !self.has_broadcast() {
            return None;
        }
        let mut q = lock(&self.broadcasts);
        let j = q.pop_front();
        if j.is_some() {
            self.bcast_queued.fetch_sub(1, Ordering::Relaxed);
        }
        j
    }
}

impl Pool {
    /// True if a queued job (deques, injector) may be waiting: one load.
    #[inline]
    pub(crate) fn has_queued(&self) -> bool {
        self.queued.load(Ordering::Relaxed) != 0
    }

    /// True if worker `me` has anything to do: a frame in its mailbox, a
    /// queued job, or a broadcast of its own.
    pub(crate) fn has_work(&self, me: usize) -> bool {
        self.has_job(me) || self.has_queued() || self.workers[me].has_broadcast()
    }

    /// Pushes a spawned job onto worker `me`'s deque and wakes a hungry worker.
    pub(crate) fn push_local(&self, me: usize, job: JobRef) {
        {
            let mut q = lock(&self.workers[me].deque);
            q.push_back(job);
            // Counted under the lock, so `queued` is never below the number
            // of jobs that a taker could find.
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        self.notify_work(me);
    }

    /// Pushes a job from outside the pool onto the injector and wakes a
    /// hungry worker.
    pub(crate) fn inject(&self, job: JobRef) {
        {
            let mut q = lock(&self.injector);
            q.push_back(job);
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        self.notify_work(usize::MAX);
    }

    /// Pushes a job for worker `i` alone and wakes it.
    pub(crate) fn push_broadcast(&self, i: usize, job: JobRef) {
        {
            let w = &self.workers[i];
            let mut q = lock(&w.broadcasts);
            q.push_back(job);
            w.bcast_queued.fetch_add(1, Ordering::Relaxed);
        }
        // After the push (the lock's release), then the fence inside: pairs
        // with the worker's `prepare_wait` before it re-checks its queue.
        self.wake(i);
    }

    /// After a push: wakes one worker that asked for work (other than `me`).
    /// A worker about to sleep either is seen here or sees the job (module
    /// docs).
    fn notify_work(&self, me: usize) {
        // SeqCst; pairs with the fence in the worker's `prepare_wait`, after
        // it announced its demand (Dekker: one of us sees the other).
        fence(Ordering::SeqCst);
        let mine = if me < 64 { 1u64 << me } else { 0 };
        let hint = self.hungry.peek() & !mine;
        if hint != 0 {
            let t = hint.trailing_zeros() as usize;
            if t < self.workers.len() {
                self.workers[t].ec.notify_one_after_fence();
                self.host.notify(t);
            }
        }
    }

    /// Pops worker `me`'s newest spawned job.
    pub(crate) fn pop_local(&self, me: usize) -> Option<JobRef> {
        if !self.has_queued() {
            return None;
        }
        let mut q = lock(&self.workers[me].deque);
        let j = q.pop_back();
        if j.is_some() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        j
    }

    /// Whether worker `me`'s deque holds a job.
    pub(crate) fn has_local(&self, me: usize) -> bool {
        self.has_queued() && !lock(&self.workers[me].deque).is_empty()
    }

    /// Takes the oldest job of another worker's deque, then of the injector.
    fn steal_or_inject(&self, me: usize) -> Option<JobRef> {
        if !self.has_queued() {
            return None;
        }
        let n = self.workers.len();
        let start = if me < n { me + 1 } else { 0 };
        for k in 0..n {
            let i = (start + k) % n;
            if i == me {
                continue;
            }
            let mut q = lock(&self.workers[i].deque);
            if let Some(j) = q.pop_front() {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                return Some(j);
            }
        }
        let mut q = lock(&self.injector);
        let j = q.pop_front();
        if j.is_some() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        j
    }

    /// What worker `me` should do next, if anything: a frame handed to it,
    /// its own newest spawn, a broadcast for it, another worker's oldest
    /// spawn, an injected job (Rayon's order, the mailbox first: its owner
    /// waits for it).
    pub(crate) fn find_work(&self, me: usize) -> Option<Work> {
        if let Some(f) = self.take_job(me) {
            return Some(Work::Frame(f));
        }
        if let Some(j) = self.pop_local(me) {
            return Some(Work::Job(j));
        }
        if let Some(j) = self.workers[me].pop_broadcast() {
            return Some(Work::Job(j));
        }
        let j = self.steal_or_inject(me)?;
        if self.has_queued() {
            // More where this came from: the next hungry worker may take it.
            self.notify_work(me);
        }
        Some(Work::Job(j))
    }

    /// Only worker `me`'s own spawns (`yield_local`).
    pub(crate) fn find_local_work(&self, me: usize) -> Option<Work> {
        self.pop_local(me).map(Work::Job)
    }

    /// Runs what [`find_work`](Self::find_work) found, on worker `me`.
    pub(crate) fn run_work(&self, me: usize, work: Work, local: &Local) {
        match work {
            Work::Frame(f) => {
                local.last_poll.set(0);
                self.run_job(f, local);
            }
            Work::Job(j) => {
                // Not asking for work while running this: a frame handed
                // over meanwhile would wait until the job is done.
                if let Some(f) = self.withdraw(me) {
                    local.last_poll.set(0);
                    self.run_job(f, local);
                }
                self.unsteer_self(local);
                local.last_poll.set(0);
                // A job is the root of a tree of its own: its top levels
                // are recorded, and its first recorded join serves a
                // hungry worker at once. Otherwise a worker whose last act
                // was a stolen piece (which disarmed eager serving) keeps
                // the whole tree of an `install` to itself until its first
                // tick or a kick, while the others sleep: a tree of a few
                // long leaves (rayon's `par_iter` over 10^7 items on two
                // workers: three joins) never ticks, and a worker that went
                // to sleep when nobody was busy is not woken to kick.
                local.eager.set(true);
                let depth = local.depth.replace(0);
                j.execute();
                local.depth.set(depth);
            }
        }
    }

    /// Makes the pool's workers finish their queued work and exit.
    pub(crate) fn terminate(&self) {
        self.stop.store(true, Ordering::Release);
        for i in 0..self.workers.len() {
            self.wake(i);
        }
    }

    /// True once [`terminate`](Self::terminate) ran.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// The calling thread's index in `pool`, if it is a worker of it.
pub(crate) fn worker_of(pool: &Arc<Pool>) -> Option<usize> {
    raw::with_local(|l| match l.pool() {
        Some((p, me)) if std::ptr::eq(p, Arc::as_ptr(pool)) => Some(me),
        _ => None,
    })
}

/// Pushes a spawned job: onto the calling worker's deque if it is a worker
/// of `pool`, else onto `pool`'s injector.
pub(crate) fn push_spawn(pool: &Arc<Pool>, job: JobRef) {
    match worker_of(pool) {
        Some(me) => pool.push_local(me, job),
        None => pool.inject(job),
    }
}

/// Pushes a job for worker `i` of `pool` alone.
pub(crate) fn push_broadcast(pool: &Arc<Pool>, i: usize, job: JobRef) {
    pool.push_broadcast(i, job);
}

/// A FIFO spawn onto the calling worker of `pool` (Rayon's `spawn_fifo`
/// from a worker), or onto the injector.
pub(crate) fn push_spawn_fifo(pool: &Arc<Pool>, job: JobRef) {
    match worker_of(pool) {
        Some(me) => {
            let ind = FifoQueue::push(&pool.workers[me].fifo, job);
            pool.push_local(me, ind);
        }
        None => pool.inject(job),
    }
}
