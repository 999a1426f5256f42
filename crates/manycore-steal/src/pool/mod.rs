//! The shared side of stealing: the workers' mailboxes and the demand
//! word, promotion, the owner's wait for a stolen job, the tick and the
//! heartbeat, steering, and the thread's binding to its pool.
//!
//! MuSE runs every call on the stack and spawns only on demand, bounding
//! sequential runs by `MAX_SEQUENTIAL` so that the scheduler keeps polling.
//! Here an idle worker announces demand (its bit in the demand word plus
//! `HUNGRY` in its mailbox) and sleeps, and a busy worker, at its ticks
//! (every so many joins) and, while eager, at its recorded joins, looks at
//! the demand word and, if someone is hungry, promotes its oldest latent
//! frame straight into that thief's mailbox; every few ticks its heartbeat
//! polls the scheduler's messages. `README.md` in `src/` describes the
//! protocol; `loom_tests.rs` model-checks it.
//!
//! * [`demand`]: the thief's side (announce, withdraw) and the demand word.
//! * [`promotion`]: the victim's side (serve demand, hand a frame over).
//! * [`wait`]: the owner's side (take a frame back, or wait for it).
//! * [`heartbeat`]: the tick and the heartbeat, `MAX_SEQUENTIAL`.
//! * [`steering`]: keeping a sleeping thief off its victim's CPU.
//! * [`binding`]: which pool a thread is a worker of.
//! * [`stats`] and [`poll_gap`]: counters and poll-gap statistics.
//!
//! The mailbox word itself lives in `raw::mailbox`: it publishes frames.

mod binding;
mod demand;
mod heartbeat;
mod kick;
mod poll_gap;
mod promotion;
mod queues;
mod stats;
mod steering;
mod wait;

#[cfg(feature = "internals")]
pub(crate) use binding::rebind;
pub(crate) use binding::{bind, current, unbind};
pub(crate) use demand::mark_hungry;
pub(crate) use heartbeat::tick;
pub use heartbeat::{max_sequential, set_max_sequential, DEFAULT_MAX_SEQUENTIAL, HEARTBEAT_PERIOD};
#[cfg(all(loom, test))]
pub(crate) use kick::deliver_kick;
#[cfg(not(loom))]
pub(crate) use kick::on_kick;
pub(crate) use kick::Kicker;
#[cfg(feature = "internals")]
pub use poll_gap::{max_poll_gap, measure_poll_gaps};
pub(crate) use promotion::serve_if_hungry;
pub(crate) use queues::{push_broadcast, push_spawn, push_spawn_fifo, worker_of, Work};
pub use stats::StealStats;
pub(crate) use wait::{wait_stolen, wait_until};

use crate::raw::{self, FifoQueue, JobRef, Local, Mailbox, Stolen};
use demand::Demand;
use manycore_sync::atomic::{AtomicBool, AtomicI32, AtomicUsize};
use manycore_sync::{Arc, CachePadded, EventCount, Mutex};
use stats::Counters;
use std::any::Any;
use std::collections::VecDeque;
use std::time::Duration;
use steering::Steer;

/// What the steal protocol needs from the scheduler a worker lives in: the
/// seam between this crate and `manycore-rt` (or the built-in thread pool).
pub(crate) trait Host: Send + Sync + 'static {
    /// Runs pending incoming messages on the calling core (bounded batch).
    fn poll_once(&self) -> usize;
    /// Wakes worker `i` if it sleeps in its idle loop, after a job was put
    /// in its mailbox; never lost, even if `i` is just about to sleep (its
    /// sleep re-check looks at the mailbox after announcing itself).
    fn notify(&self, i: usize);
}

/// A worker's shared state: what other workers touch. Each part sits on a
/// cache line of its own (the mailbox and the event count are padded, and
/// the whole is padded in `Pool::workers`).
#[derive(Debug, Default)]
pub(crate) struct WorkerShared {
    /// `EMPTY`, `HUNGRY`, or the address of a job handed to this worker
    /// (see [`Mailbox`] for its transitions).
    mailbox: Mailbox,
    /// Where this worker sleeps while it waits for a stolen job (and, in the
    /// built-in pool, while idle). Rung by a victim that handed it a job
    /// (`wake`) and by a thief that finished its job (`run_job`); a ring
    /// writes the line only if a sleeper has announced itself.
    pub(crate) ec: CachePadded<EventCount>,
    /// Steering (see [`Pool::steer`]); hints outside the steal protocol.
    steer: Steer,
    /// This worker's counters, written by it alone (a victim counts its own
    /// promotions and reclaims on its own line, not on one all share).
    counters: Counters,
    /// Jobs spawned by this worker (`queues`): it pops the back, thieves
    /// the front.
    deque: Mutex<VecDeque<JobRef>>,
    /// The real jobs behind this worker's `spawn_fifo` indirections.
    fifo: Arc<FifoQueue>,
    /// Jobs for this worker alone (`broadcast`).
    broadcasts: Mutex<VecDeque<JobRef>>,
    /// How many jobs `broadcasts` holds (counted under its lock): one load
    /// tells the worker whether to look.
    bcast_queued: AtomicUsize,
    /// The worker's kernel thread id (0: unknown), for kicks (`kick`).
    /// Stored by the worker when it is bound; a hint for kickers.
    tid: AtomicI32,
    /// Loom models: a kick sent and not yet delivered (`kick`).
    #[cfg(loom)]
    kicked: AtomicBool,
}

/// Called with the payload of a panic in a `'static` spawned job.
/// (Std's `Arc`: loom's cannot hold unsized values.)
pub(crate) type PanicHandler = std::sync::Arc<dyn Fn(Box<dyn Any + Send>) + Send + Sync>;

/// The workers of one runtime (or built-in pool) that steal from each other.
pub(crate) struct Pool {
    workers: Box<[CachePadded<WorkerShared>]>,
    /// Bit i: worker i is (probably) hungry; see [`Demand`].
    hungry: Demand,
    host: Box<dyn Host>,
    /// How long a waiting owner spins before it sleeps.
    spin: Duration,
    /// This pool's own `MAX_SEQUENTIAL` (0: the process-wide setting).
    max_sequential: u32,
    /// Jobs from threads that are no workers of the pool (FIFO).
    injector: Mutex<VecDeque<JobRef>>,
    /// Jobs on the deques and the injector (at least as many as a taker can
    /// find: counted under the queue's lock); one load tells an idle worker
    /// whether to look.
    queued: CachePadded<AtomicUsize>,
    /// Set when the pool's handle is dropped: idle workers exit once no
    /// queued work is left.
    stop: AtomicBool,
    /// Called with a `'static` spawn's panic; none: the process aborts.
    pub(crate) panic_handler: Option<PanicHandler>,
    /// Whether waiting workers kick busy ones (`kick`): built-in pools
    /// (unless `MANYCORE_KICK=0`); loom models that ask for it.
    pub(crate) kicks: bool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .field("hungry", &self.hungry.peek())
            .finish_non_exhaustive()
    }
}

/// At most this many workers take part in stealing (the demand word's width).
pub(crate) const MAX_WORKERS: usize = 64;

impl Pool {
    pub(crate) fn new(n: usize, host: Box<dyn Host>, spin: Duration) -> Self {
        let n = n.clamp(1, MAX_WORKERS);
        Self {
            workers: (0..n)
                .map(|_| CachePadded::new(WorkerShared::default()))
                .collect(),
            hungry: Demand::new(),
            host,
            spin,
            max_sequential: 0,
            injector: Mutex::new(VecDeque::new()),
            queued: CachePadded::new(AtomicUsize::new(0)),
            stop: AtomicBool::new(false),
            panic_handler: None,
            kicks: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.workers.len()
    }

    pub(crate) fn worker(&self, i: usize) -> &WorkerShared {
        &self.workers[i]
    }

    /// Wakes worker `i` wherever it sleeps: in `wait_stolen` (its event count)
    /// or in its scheduler's idle loop (the host's doorbell).
    pub(crate) fn wake(&self, i: usize) {
        self.workers[i].ec.notify_one();
        self.host.notify(i);
    }

    /// True if a job waits in worker `i`'s mailbox.
    pub(crate) fn has_job(&self, i: usize) -> bool {
        self.workers[i].mailbox.has_job()
    }

    /// Takes the job in worker `me`'s mailbox, if any.
    pub(crate) fn take_job(&self, me: usize) -> Option<Stolen> {
        self.workers[me].mailbox.take()
    }

    /// The idle hook of worker `me`: run a job handed to it, or announce demand.
    /// Returns true if it ran a job.
    pub(crate) fn on_idle(this: &Arc<Self>, me: usize) -> bool {
        bind(this, me);
        let this: &Self = this;
        raw::with_local(|local| {
            if let Some(work) = this.find_work(me) {
                this.run_work(me, work, local);
                true
            } else {
                this.register(me);
                // Steered for a job that was taken back: running now, it
                // may have its full CPU set again (this does not move it).
                this.unsteer_idle(me);
                false
            }
        })
    }

    pub(crate) fn run_job(&self, job: Stolen, local: &Local) {
        self.unsteer_self(local);
        // A piece just stolen is not handed on before this worker's next tick.
        local.eager.set(false);
        // The piece is a tree of its own: its top levels are recorded.
        let depth = local.depth.replace(0);
        let owner = raw::run_stolen(job, local);
        local.depth.set(depth);
        if let Some((_, me)) = local.pool() {
            self.publish_demand(me);
        }
        // The owner sleeps, if at all, on its event count (in `wait_stolen`).
        self.workers[owner].ec.notify_one();
    }
}
