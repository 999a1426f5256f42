//! The runtime: building cores (threads pinned to CPUs of the process's
//! original CPU set), the state they share, and shutdown.

use crate::core::Core;
use crate::core_loop::{self, CoreLocal};
use crate::error::Error;
use crate::mailbox::Mailbox;
use crate::raw::{HandoffTable, Message};
use crate::sparse::Sparse;
use manycore_ring::packed::{Consumer, Producer};
use manycore_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use manycore_sync::CachePadded;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// 16-byte cells per ring slot: a slot holds one message of the largest
/// inline size.
const CELLS_PER_SLOT: usize = 4;

/// How a core waits when it has nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdlePolicy {
    /// Spin on the rings: lowest latency, burns its CPU. Needs a CPU per
    /// core; yields the CPU at every turn while more manycore threads are
    /// awake than the process has CPUs (outside threads waiting too).
    Poll,
    /// Sleep on the doorbell at once (the `hlt` of the papers).
    Sleep,
    /// Spin for at most `spin`, then sleep. The default, with a 50 µs
    /// spin. How long a wait spins adapts to the idle gaps the thread has
    /// seen (about twice the predicted gap; not at all when gaps are longer
    /// than `spin`), and while more manycore threads are awake than the
    /// process has CPUs a spin yields the CPU instead of pausing (see
    /// "Idle policies" in the crate's README). Any duration is accepted:
    /// `Duration::ZERO` sleeps at once, as `Sleep` does, and
    /// `Duration::MAX` never sleeps, as `Poll` does (but is not refused
    /// with more cores than CPUs).
    Hybrid {
        /// How long to spin before sleeping.
        spin: Duration,
    },
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy::Hybrid {
            spin: Duration::from_micros(50),
        }
    }
}

impl IdlePolicy {
    /// The spin budget before sleeping (`Duration::MAX` for `Poll`).
    pub fn spin_budget(&self) -> Duration {
        match *self {
            IdlePolicy::Poll => Duration::MAX,
            IdlePolicy::Sleep => Duration::ZERO,
            IdlePolicy::Hybrid { spin } => spin,
        }
    }
}

/// Called by a core's scheduler whenever it finds no messages and no ready
/// tasks, before it spins or sleeps. Extensions (work stealing) use it.
pub trait IdleHook: Send + Sync + 'static {
    /// Returns true if it found and did work (the core then polls again).
    fn on_idle(&self, core: usize) -> bool;

    /// Whether work for `core` is waiting that `on_idle` would run: asked
    /// by the core's idle loop after it has announced itself as a sleeper
    /// and before it sleeps, so that a producer that published such work
    /// and then called [`Core::wake`](crate::Core::wake) is never missed.
    /// Must not block; the default says no.
    fn pending(&self, _core: usize) -> bool {
        false
    }
}

/// Builds a [`Runtime`]; see [`Runtime::builder`].
#[derive(Debug, Clone)]
pub struct Builder {
    cores: Option<usize>,
    idle: IdlePolicy,
    pin: bool,
    ring_capacity: Option<usize>,
    lanes: usize,
    name: String,
    scheduler: crate::task_queue::Scheduler,
    core_schedulers: Vec<(usize, crate::task_queue::Scheduler)>,
    coroutine_stack: usize,
    spill_limit: usize,
    stack_size: usize,
}

/// Default stack size of a core's thread: the main thread's usual 8 MiB
/// (Rust's spawned threads get 2 MiB), so that code runs as deep on a core
/// as it would on the main thread. Untouched pages cost no memory.
pub const DEFAULT_CORE_STACK: usize = 8 << 20;

impl Builder {
    /// Default stack size of coroutines (default 256 KiB; at least 16 KiB).
    pub fn coroutine_stack(mut self, bytes: usize) -> Self {
        self.coroutine_stack = bytes.max(16 * 1024);
        self
    }
    /// The scheduler of every core's task queue (default FIFO).
    pub fn scheduler(mut self, s: crate::task_queue::Scheduler) -> Self {
        self.scheduler = s;
        self
    }
    /// The scheduler of core `i` only (overrides [`Builder::scheduler`]).
    pub fn core_scheduler(mut self, i: usize, s: crate::task_queue::Scheduler) -> Self {
        self.core_schedulers.push((i, s));
        self
    }
    /// Number of cores (default: one per CPU of the process's original CPU set).
    pub fn cores(mut self, n: usize) -> Self {
        self.cores = Some(n);
        self
    }
    /// Idle policy of every core (default [`IdlePolicy::Hybrid`]).
    pub fn idle(mut self, policy: IdlePolicy) -> Self {
        self.idle = policy;
        self
    }
    /// Pin core i to the i-th CPU of the original CPU set (default true).
    /// With more cores than CPUs, core i starts on CPU i mod CPUs and moves
    /// to the next CPU of the set whenever it finds itself starved where it
    /// is (a yield that returned only after milliseconds).
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }
    /// Slots per ring (rounded up to a power of two; default 256 for up to 8
    /// cores, 64 above): a ring holds this many messages of the largest
    /// inline size, and up to four times as many small ones (a slot is four
    /// 16-byte cells). A ring is made when its two ends first talk.
    pub fn ring_capacity(mut self, slots: usize) -> Self {
        self.ring_capacity = Some(slots);
        self
    }
    /// Messages a core may queue toward one destination whose ring is full
    /// (default 1024, at least 1). A core whose queue toward a destination
    /// is full serves its own rings until the queue has room; the policy,
    /// and the one case in which a queue grows past this, are described in
    /// the [crate docs](crate#memory).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// // Small rings and a small spill: core 0 sends 10,000 messages to
    /// // core 1 faster than they run, and serves while it waits for room
    /// // instead of queueing them all.
    /// let rt = manycore_rt::Runtime::builder()
    ///     .cores(2)
    ///     .ring_capacity(4)
    ///     .spill_limit(8)
    ///     .build()
    ///     .unwrap();
    /// let ran = Arc::new(AtomicU64::new(0));
    /// let (c1, r) = (rt.core(1).clone(), ran.clone());
    /// let sent = rt.core(0).call(move || {
    ///     for _ in 0..10_000 {
    ///         let r = r.clone();
    ///         c1.spawn(move || {
    ///             r.fetch_add(1, Ordering::Relaxed);
    ///         })
    ///         .unwrap();
    ///     }
    ///     // In order from one core to another: this runs after them all.
    ///     c1.call(|| ()).wait()
    /// });
    /// assert_eq!(sent.wait(), Ok(Ok(())));
    /// assert_eq!(ran.load(Ordering::Relaxed), 10_000);
    /// ```
    pub fn spill_limit(mut self, messages: usize) -> Self {
        self.spill_limit = messages.max(1);
        self
    }
    /// Rings per core for threads that are not cores (default 4, at least 1).
    pub fn lanes(mut self, lanes: usize) -> Self {
        self.lanes = lanes;
        self
    }
    /// Stack size of each core's thread, in bytes (default
    /// [`DEFAULT_CORE_STACK`], 8 MiB, the main thread's usual size; rounded
    /// up to whole pages). A stack that cannot be had makes `build` fail
    /// with [`Error::Resource`].
    ///
    /// ```
    /// use manycore_rt::{Error, Runtime};
    ///
    /// // Cores whose code recurses deeper than the default allows.
    /// let rt = Runtime::builder().cores(1).stack_size(32 << 20).build().unwrap();
    /// assert_eq!(rt.core(0).call(|| 1 + 1).wait(), Ok(2));
    /// rt.shutdown();
    /// // A stack larger than the address space is a resource error.
    /// let big = Runtime::builder().cores(1).stack_size(usize::MAX).build();
    /// assert!(matches!(big, Err(Error::Resource(_))));
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// Prefix of the core threads' names (default "manycore").
    pub fn name(mut self, prefix: impl Into<String>) -> Self {
        self.name = prefix.into();
        self
    }

    /// Starts the cores.
    pub fn build(self) -> Result<Runtime, Error> {
        let cpus = manycore_sync::cpu::original();
        let n = self.cores.unwrap_or(cpus.len());
        if n == 0 {
            return Err(Error::InvalidConfig(
                "a runtime needs at least one core".into(),
            ));
        }
        if n > 4096 {
            return Err(Error::InvalidConfig(format!(
                "{n} cores is more than the 4096 supported"
            )));
        }
        if self.lanes == 0 {
            return Err(Error::InvalidConfig(
                "at least one lane is needed for outside threads".into(),
            ));
        }
        let oversubscribed = n > cpus.len();
        if oversubscribed && self.idle == IdlePolicy::Poll {
            return Err(Error::InvalidConfig(format!(
                "IdlePolicy::Poll needs a CPU per core, but {n} cores share {} CPUs; use Sleep or Hybrid",
                cpus.len()
            )));
        }
        let cap = self.ring_capacity.unwrap_or(if n <= 8 { 256 } else { 64 });
        if cap == 0 || cap > manycore_ring::MAX_CAPACITY / CELLS_PER_SLOT {
            return Err(Error::InvalidConfig(format!(
                "ring capacity {cap} is out of range"
            )));
        }
        let sources = n + self.lanes;
        let Some(stack_size) = self.stack_size.checked_next_multiple_of(64 * 1024) else {
            return Err(Error::Resource(format!(
                "a core thread's stack of {} bytes is larger than the address space",
                self.stack_size
            )));
        };
        let mut scheds = vec![self.scheduler; n];
        for &(i, sc) in &self.core_schedulers {
            match scheds.get_mut(i) {
                Some(slot) => *slot = sc,
                None => {
                    return Err(Error::InvalidConfig(format!(
                        "core_scheduler({i}): the runtime has {n} cores"
                    )))
                }
            }
        }

        // Rings are made when their two ends first talk (`bind`).
        let lanes = (0..self.lanes)
            .map(|_| {
                CachePadded::new(Mutex::new(Lane {
                    producers: Sparse::default(),
                    sent: 0,
                }))
            })
            .collect();

        let shared = Arc::new(Shared {
            id: manycore_sync::unique_id(),
            n,
            lanes,
            idle: self.idle,
            roam: self.pin && oversubscribed,
            mailboxes: (0..n).map(|_| Mailbox::new(sources)).collect(),
            new_rings: (0..n).map(|_| HandoffTable::new(sources)).collect(),
            ring_capacity: cap,
            rings_made: AtomicU64::new(0),
            stopping_wake: STOPPING_WAKE * n.div_ceil(cpus.len()).max(1) as u32,
            spill_limit: self.spill_limit,
            parked: (0..n).map(|_| Mutex::new(None)).collect(),
            urgent: (0..n)
                .map(|_| Mutex::new(std::collections::VecDeque::new()))
                .collect(),
            states: (0..n)
                .map(|_| CachePadded::new(CoreState::default()))
                .collect(),
            stopping: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            idle_hook: Mutex::new(None),
            hook_gen: AtomicU64::new(0),
            coroutine_stack: self.coroutine_stack,
            name: self.name.clone(),
        });

        // With more cores than CPUs, core i still starts pinned to CPU i mod
        // CPUs (README.md, "Idle policies": where a core yields).
        let pin = self.pin;
        let mut threads = Vec::with_capacity(n);
        let mut result = Ok(());
        for i in 0..n {
            let sh = shared.clone();
            let cpu = cpus[i % cpus.len()];
            let sched = scheds[i];
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .stack_size(stack_size)
                .spawn(move || {
                    if pin {
                        // A failed pin is not fatal: the core still works, only unpinned.
                        let _ = manycore_sync::cpu::pin_current(cpu);
                    }
                    core_loop::run_core(CoreLocal::new(i, sh, sched));
                });
            match spawned {
                Ok(h) => threads.push(h),
                Err(e) => {
                    result = Err(match e.kind() {
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::OutOfMemory => {
                            Error::Resource(format!("could not start core thread {i} of {n}: {e}"))
                        }
                        _ => Error::Spawn(e),
                    });
                    break;
                }
            }
        }
        let rt = Runtime {
            cores: (0..n).map(|i| Core::new(shared.clone(), i)).collect(),
            shared,
            threads: Mutex::new(threads),
        };
        // On a failed spawn, dropping `rt` shuts down the cores that did start.
        result.map(|()| rt)
    }
}

/// The consumer ends of one core's incoming rings, indexed by source.
pub(crate) type Consumers = Sparse<Consumer<Message>>;

/// Messages from outside threads to each core through one lane.
pub(crate) struct Lane {
    /// The producer end of ring (this lane, d), by destination d, for the
    /// destinations this lane has sent to.
    pub(crate) producers: Sparse<Producer<Message>>,
    pub(crate) sent: u64,
}

/// What a core publishes about itself. Every field is written only by that
/// core, with a plain store (a load and a store, not a read-modify-write,
/// for the counters: there is one writer).
#[derive(Default)]
pub(crate) struct CoreState {
    /// `epoch << 1 | idle`. The core stores it with Release when it goes
    /// idle (after a full scan found nothing, with `sent`, `received` and
    /// `urgent_received` stored just before) and when it becomes busy again
    /// (the epoch grows by one, so no busy spell goes unseen). The shutdown's
    /// quiescence check loads it with Acquire, then the counters.
    pub(crate) epoch_idle: AtomicU64,
    /// Messages the core put into rings, as of its last going idle
    /// (Release; Acquire in the quiescence check; Relaxed in `stats`).
    pub(crate) sent: AtomicU64,
    /// Messages the core took from rings, as of its last going idle (as
    /// `sent`).
    pub(crate) received: AtomicU64,
    /// Async task polls run (Relaxed; for `stats`).
    pub(crate) tasks_run: AtomicU64,
    /// Panics caught in code this core ran (Relaxed; for `stats`).
    pub(crate) panics: AtomicU64,
    /// Times the core slept on its doorbell (Relaxed; for `stats`).
    pub(crate) sleeps: AtomicU64,
    /// Nanoseconds the core spent asleep (Relaxed; for `stats`).
    pub(crate) asleep_ns: AtomicU64,
    /// Results that came after their waiter gave up (Relaxed; for `stats`).
    pub(crate) late_results: AtomicU64,
    /// The most messages the core ever held spilled toward one destination
    /// (Relaxed; for the `internals` probe `Runtime::debug_spill`).
    pub(crate) spill_peak: AtomicU64,
    /// Messages the core queued past the spill limit (Relaxed; as above).
    pub(crate) spill_over: AtomicU64,
    /// Urgent invocations the core has taken, as of its last going idle (as
    /// `sent`); the quiescence check compares it with the mailbox's count of
    /// those pushed.
    pub(crate) urgent_received: AtomicU64,
}

/// The longest an idle core sleeps while the runtime is stopping, when it
/// has a CPU of its own (`Shared::stopping_wake`).
const STOPPING_WAKE: Duration = Duration::from_millis(1);

/// State shared by all cores of one runtime.
pub(crate) struct Shared {
    pub(crate) id: u64,
    pub(crate) n: usize,
    /// The rings of outside threads, one lane per group of threads.
    pub(crate) lanes: Box<[CachePadded<Mutex<Lane>>]>,
    pub(crate) idle: IdlePolicy,
    /// The cores are pinned and outnumber the CPUs: a core that finds
    /// itself starved on its CPU moves to the next (`core_loop::STARVED`).
    pub(crate) roam: bool,
    pub(crate) mailboxes: Box<[Mailbox]>,
    /// By destination: the consumer ends of rings their senders have made
    /// and not yet seen taken (README.md, "Binding a ring").
    pub(crate) new_rings: Box<[HandoffTable<Consumer<Message>>]>,
    /// Slots of every ring.
    pub(crate) ring_capacity: usize,
    /// Rings made so far (`new_ring`; Relaxed, read only by
    /// `Runtime::debug_rings`): a count that grows with the pairs that
    /// talked, not with the square of the cores.
    pub(crate) rings_made: AtomicU64,
    /// How long an idle core sleeps at most while the runtime is stopping:
    /// [`STOPPING_WAKE`] times the cores that share a CPU (cores / CPUs,
    /// rounded up), so that the cores' wake-ups cost the same whatever
    /// their number. At 1 ms each, 1024 cores on 2
    /// CPUs would ask for a million wake-ups a second: the CPUs never
    /// caught up, a core was always awake, and the quiescence check of
    /// `shutdown` took seconds (minutes at 4096 cores).
    pub(crate) stopping_wake: Duration,
    /// Messages a core may queue toward one destination (`Builder::spill_limit`).
    pub(crate) spill_limit: usize,
    /// Consumers of an exited core, for late senders to drain.
    pub(crate) parked: Box<[Mutex<Option<Consumers>>]>,
    /// The front lane of each core, for urgent invocations.
    pub(crate) urgent: Box<[Mutex<std::collections::VecDeque<Message>>]>,
    pub(crate) states: Box<[CachePadded<CoreState>]>,
    /// Shutdown has begun: outside threads may no longer send (`Shutdown`),
    /// cores keep serving each other. Set once by `Runtime::shutdown`
    /// (SeqCst store, then every doorbell is rung); loaded with Acquire by
    /// outside senders (`send_external`, `call_urgent`) and by a core about
    /// to sleep, which then wakes every millisecond so that the shutdown can
    /// progress.
    pub(crate) stopping: AtomicBool,
    /// The runtime is quiescent and the cores must exit. Set once by
    /// `Runtime::shutdown` after two equal quiescent snapshots (SeqCst store,
    /// then every doorbell is rung); loaded with Acquire by the core loop
    /// (which then exits), by the sleep re-check, and by an outside sender
    /// waiting for room in a full ring (which then gives up).
    pub(crate) closing: AtomicBool,
    /// The idle hook, if one is installed.
    pub(crate) idle_hook: Mutex<Option<Arc<dyn IdleHook>>>,
    /// Bumped (`fetch_add`, Release) by `set_idle_hook` after it stored the
    /// hook; a core loads it with Acquire each idle round and takes a new
    /// copy of the hook (under the mutex) only when it changed.
    pub(crate) hook_gen: AtomicU64,
    pub(crate) coroutine_stack: usize,
    /// Prefix of the core threads' names (`Builder::name`).
    name: String,
}

impl Shared {
    /// Drops the urgent lane of an exited core.
    pub(crate) fn drain_urgent(&self, dst: usize) {
        let dropped: Vec<Message> = self.urgent[dst]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        drop(dropped);
    }

    /// Makes a ring of `ring_capacity` slots (in cells: four per slot).
    pub(crate) fn new_ring(&self) -> Option<(Producer<Message>, Consumer<Message>)> {
        let ring =
            manycore_ring::packed::channel::<Message>(self.ring_capacity * CELLS_PER_SLOT).ok()?;
        self.rings_made.fetch_add(1, Ordering::Relaxed);
        Some(ring)
    }

    /// Drains ring (src, dst) of an exited core, dropping what was left.
    /// Does nothing if `dst` has not parked its consumers yet: it drains
    /// every ring, bound or only offered, when it does.
    pub(crate) fn drain_parked(&self, dst: usize, src: usize) {
        let mut dropped = Vec::new();
        {
            let mut g = self.parked[dst].lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cs) = g.as_mut() {
                if cs.get(src).is_none() {
                    // Bound after the exit: take it from the table ourselves.
                    if let Some(c) = self.new_rings[dst].take(src) {
                        cs.insert(src, *c);
                    }
                }
                if let Some(c) = cs.get_mut(src) {
                    while let Some(m) = c.try_pop() {
                        dropped.push(m);
                    }
                }
            }
        }
        // Dropped outside the lock: a dropped call wakes its waiter, which may send.
        drop(dropped);
    }

    /// One snapshot for the quiescence check, or None if some core is busy or
    /// messages are in flight.
    fn quiescent_snapshot(&self) -> Option<Vec<u64>> {
        let mut snap = Vec::with_capacity(self.n * 3 + self.lanes.len());
        let (mut sent, mut received) = (0u64, 0u64);
        for (st, mb) in self.states.iter().zip(self.mailboxes.iter()) {
            // Acquire; pairs with the Release stores a core makes on going idle.
            let e = st.epoch_idle.load(Ordering::Acquire);
            if e & 1 == 0 || st.urgent_received.load(Ordering::Acquire) != mb.urgent_pushed() {
                return None;
            }
            let (s, r) = (
                st.sent.load(Ordering::Acquire),
                st.received.load(Ordering::Acquire),
            );
            sent += s;
            received += r;
            snap.extend([e, s, r]);
        }
        for lane in self.lanes.iter() {
            let s = lane.lock().unwrap_or_else(|e| e.into_inner()).sent;
            sent += s;
            snap.push(s);
        }
        (sent == received).then_some(snap)
    }

    fn wake_all(&self) {
        for mb in self.mailboxes.iter() {
            mb.doorbell().notify_all();
        }
    }

    /// Stops outside threads from sending and wakes every core.
    fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake_all();
    }

    /// The cores that are running work or have urgent work waiting.
    fn busy_cores(&self) -> Vec<usize> {
        (0..self.n)
            .filter(|&i| {
                let st = &self.states[i];
                st.epoch_idle.load(Ordering::Acquire) & 1 == 0
                    || st.urgent_received.load(Ordering::Acquire)
                        != self.mailboxes[i].urgent_pushed()
            })
            .collect()
    }

    /// Waits until the runtime is quiescent (two equal quiescent snapshots
    /// 200 µs apart), or until `deadline`; then returns the cores still
    /// busy. Checks at least once, whatever the deadline.
    fn wait_quiescent(&self, deadline: Option<Instant>) -> Result<(), Vec<usize>> {
        let mut pause = Duration::from_micros(20);
        loop {
            if let Some(a) = self.quiescent_snapshot() {
                std::thread::sleep(Duration::from_micros(200));
                if self.quiescent_snapshot().as_ref() == Some(&a) {
                    return Ok(());
                }
            }
            let now = Instant::now();
            if let Some(d) = deadline {
                if now >= d {
                    return Err(self.busy_cores());
                }
                pause = pause.min(d - now);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Tells the cores to exit and joins their threads: all of them, or,
    /// with a `grace`, those that exit within it (the others are detached;
    /// each exits when the code it runs returns). Returns the cores whose
    /// threads were detached.
    fn close_and_join(&self, threads: Vec<JoinHandle<()>>, grace: Option<Duration>) -> Vec<usize> {
        self.closing.store(true, Ordering::SeqCst);
        self.wake_all();
        let mut running = Vec::new();
        match grace {
            None => {
                for h in threads {
                    let _ = h.join();
                }
            }
            Some(g) => {
                let until = crate::timer::deadline_in(g);
                while threads.iter().any(|h| !h.is_finished()) && Instant::now() < until {
                    std::thread::sleep(Duration::from_micros(200));
                }
                for (i, h) in threads.into_iter().enumerate() {
                    if h.is_finished() {
                        let _ = h.join();
                    } else {
                        running.push(i);
                    }
                }
            }
        }
        // The hook may hold core handles (a cycle through this state): drop it.
        drop(
            self.idle_hook
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        running
    }
}

/// A set of cores, each a thread that runs its own scheduler and talks to the
/// others only through message rings.
///
/// ```
/// use manycore_rt::{Runtime, IdlePolicy};
/// let rt = Runtime::builder().cores(2).idle(IdlePolicy::Sleep).build().unwrap();
/// let two = rt.core(1).call(|| 1 + 1).wait().unwrap();
/// assert_eq!(two, 2);
/// rt.shutdown();
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    cores: Vec<Core>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("id", &self.shared.id)
            .field("cores", &self.shared.n)
            .finish()
    }
}

/// Per-core counters; see [`Runtime::stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Messages this core sent to other cores through rings.
    pub sent: u64,
    /// Messages this core received through rings.
    pub received: u64,
    /// Async task polls run.
    pub tasks_run: u64,
    /// Panics caught in code this core ran.
    pub panics: u64,
    /// Times the core went to sleep on its doorbell.
    pub sleeps: u64,
    /// Total time asleep.
    pub asleep: Duration,
    /// Results that arrived after their caller's timeout and were dropped here.
    pub late_results: u64,
}

impl Runtime {
    /// A builder with the defaults: one core per CPU, hybrid idling, pinning on.
    pub fn builder() -> Builder {
        Builder {
            cores: None,
            idle: IdlePolicy::default(),
            pin: true,
            ring_capacity: None,
            lanes: 4,
            name: "manycore".into(),
            scheduler: Default::default(),
            core_schedulers: Vec::new(),
            coroutine_stack: crate::coroutine::DEFAULT_COROUTINE_STACK,
            spill_limit: 1024,
            stack_size: DEFAULT_CORE_STACK,
        }
    }

    /// A unique id of this runtime within the process.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Number of cores.
    pub fn num_cores(&self) -> usize {
        self.shared.n
    }

    /// The idle policy the cores use.
    pub fn idle_policy(&self) -> IdlePolicy {
        self.shared.idle
    }

    /// Handle of core `i`.
    ///
    /// # Panics
    /// If `i >= num_cores()`, like slice indexing; use [`Runtime::try_core`] to check.
    pub fn core(&self, i: usize) -> &Core {
        match self.cores.get(i) {
            Some(c) => c,
            None => panic!(
                "core index {i} out of range: the runtime has {} cores",
                self.cores.len()
            ),
        }
    }

    /// Handle of core `i`, or None if there is no such core.
    pub fn try_core(&self, i: usize) -> Option<&Core> {
        self.cores.get(i)
    }

    /// All core handles, in index order.
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// Installs the idle hook (once per runtime).
    pub fn set_idle_hook(&self, hook: Arc<dyn IdleHook>) -> Result<(), Error> {
        {
            let mut g = self
                .shared
                .idle_hook
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if g.is_some() {
                return Err(Error::HookAlreadySet);
            }
            *g = Some(hook);
        }
        // Release; pairs with the Acquire in each core's hook cache.
        self.shared.hook_gen.fetch_add(1, Ordering::Release);
        for mb in self.shared.mailboxes.iter() {
            mb.notify();
        }
        Ok(())
    }

    /// Counters of every core, in index order.
    pub fn stats(&self) -> Vec<CoreStats> {
        self.shared
            .states
            .iter()
            .map(|s| CoreStats {
                sent: s.sent.load(Ordering::Relaxed),
                received: s.received.load(Ordering::Relaxed),
                tasks_run: s.tasks_run.load(Ordering::Relaxed),
                panics: s.panics.load(Ordering::Relaxed),
                sleeps: s.sleeps.load(Ordering::Relaxed),
                asleep: Duration::from_nanos(s.asleep_ns.load(Ordering::Relaxed)),
                late_results: s.late_results.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// For each core: (the most messages it ever held spilled toward one
    /// destination, the messages it queued past the spill limit).
    ///
    /// Only with the `internals` feature: a probe for tests, not an API.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn debug_spill(&self) -> Vec<(u64, u64)> {
        self.shared
            .states
            .iter()
            .map(|s| {
                (
                    s.spill_peak.load(Ordering::Relaxed),
                    s.spill_over.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// Rings made so far, between cores and from outside threads' lanes
    /// to cores: one per pair that has talked.
    ///
    /// Only with the `internals` feature: a probe for tests, not an API.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn debug_rings(&self) -> u64 {
        self.shared.rings_made.load(Ordering::Relaxed)
    }

    /// True once shutdown has begun.
    pub fn is_shut_down(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }

    /// Stops accepting work from outside, lets the work in flight finish
    /// (cores keep serving each other until every core is idle and no message
    /// is in flight), then stops and joins the cores. Messages that arrive
    /// after that are dropped, and their invocations fail with
    /// [`InvokeError::Shutdown`](crate::InvokeError::Shutdown). Idempotent.
    ///
    /// It waits as long as the cores have work: code that never returns,
    /// or work that keeps sending itself more work, keeps it waiting. Use
    /// [`shutdown_timeout`](Self::shutdown_timeout) to bound the wait.
    ///
    /// Called from one of this runtime's own cores, it only begins the
    /// shutdown (a core cannot wait for itself); dropping the runtime
    /// finishes it, there or elsewhere.
    pub fn shutdown(&self) {
        self.shared.begin_shutdown();
        if core_loop::on_core_of(self.shared.id) {
            return;
        }
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if threads.is_empty() {
            return;
        }
        let _ = self.shared.wait_quiescent(None);
        self.shared
            .close_and_join(std::mem::take(&mut *threads), None);
    }

    /// [`shutdown`](Self::shutdown), waiting at most `timeout` (any
    /// duration: `Duration::MAX` waits as long as `shutdown`) for the work
    /// in flight to finish. If it does not, the cores are told to exit at
    /// once: what they had queued is dropped (those invocations fail with
    /// `Shutdown`), and a core exits as soon as the code it runs returns.
    /// The error names the cores that were still busy, and those whose
    /// threads had not exited 100 ms later (they exit when their code
    /// returns; nothing waits for them).
    ///
    /// It checks for quiescence at least once (a fraction of a
    /// millisecond), even with a zero timeout. Called from one of this
    /// runtime's own cores, it only begins the shutdown, as `shutdown`
    /// does, and reports that core as busy.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// rt.core(1).call(|| 2 + 2).wait().unwrap();
    /// assert_eq!(rt.shutdown_timeout(Duration::from_secs(10)), Ok(()));
    /// ```
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<(), ShutdownError> {
        let deadline = crate::timer::deadline_in(timeout);
        self.shared.begin_shutdown();
        if let Some(i) =
            core_loop::with_local(|l| l.filter(|l| l.shared.id == self.shared.id).map(|l| l.index))
        {
            return Err(ShutdownError {
                busy: vec![i],
                running: vec![i],
            });
        }
        // Another thread may be shutting the runtime down (and holding the
        // threads): wait for it until the deadline only.
        let mut threads = loop {
            match self.threads.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        let busy = self.shared.busy_cores();
                        return Err(ShutdownError {
                            running: busy.clone(),
                            busy,
                        });
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        };
        if threads.is_empty() {
            return Ok(());
        }
        let threads = std::mem::take(&mut *threads);
        let grace = Duration::from_millis(100);
        match self.shared.wait_quiescent(Some(deadline)) {
            Ok(()) => {
                // Quiescent; but a timer may still wake a task that runs for
                // ever: wait for the threads until the deadline (and the
                // grace) only.
                let left = deadline.saturating_duration_since(Instant::now());
                let running = self
                    .shared
                    .close_and_join(threads, Some(left.saturating_add(grace)));
                if running.is_empty() {
                    Ok(())
                } else {
                    Err(ShutdownError {
                        busy: running.clone(),
                        running,
                    })
                }
            }
            Err(busy) => {
                let running = self.shared.close_and_join(threads, Some(grace));
                Err(ShutdownError { busy, running })
            }
        }
    }

    /// Drop on one of this runtime's own cores: the core cannot wait for
    /// itself, so a thread of its own finishes the shutdown once every
    /// core (this one too, when its current work returns) is idle. If no
    /// thread can be started, the cores are told to exit at once.
    fn finish_elsewhere(&self) {
        self.shared.begin_shutdown();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        if threads.is_empty() {
            return;
        }
        let shared = self.shared.clone();
        let (tx, rx) = std::sync::mpsc::channel::<Vec<JoinHandle<()>>>();
        let started = std::thread::Builder::new()
            .name(format!("{}-stop", self.shared.name))
            .spawn(move || {
                if let Ok(threads) = rx.recv() {
                    let _ = shared.wait_quiescent(None);
                    shared.close_and_join(threads, None);
                }
            });
        match started {
            Ok(_) => {
                let _ = tx.send(threads);
            }
            Err(_) => {
                // Detached: every core exits at its next look at `closing`.
                self.shared.close_and_join(threads, Some(Duration::ZERO));
            }
        }
    }
}

/// What [`Runtime::shutdown_timeout`] reports when the work in flight did
/// not finish in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownError {
    busy: Vec<usize>,
    running: Vec<usize>,
}

impl ShutdownError {
    /// The cores that were running work, or had work waiting, when the time
    /// ran out (in index order; empty if the only work left was in flight
    /// between cores).
    pub fn busy_cores(&self) -> &[usize] {
        &self.busy
    }

    /// The cores whose threads had not exited when `shutdown_timeout`
    /// returned: each was running code that had not returned (it exits
    /// when it does).
    pub fn running_cores(&self) -> &[usize] {
        &self.running
    }
}

impl std::fmt::Display for ShutdownError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shutdown timed out with cores {:?} busy", self.busy)?;
        if !self.running.is_empty() {
            write!(f, "; cores {:?} are still running code", self.running)?;
        }
        Ok(())
    }
}

impl std::error::Error for ShutdownError {}

impl Drop for Runtime {
    /// [`Runtime::shutdown`]; on one of this runtime's own cores, the
    /// shutdown is finished by a thread of its own once that core's current
    /// work returns (the runtime's threads all end then).
    fn drop(&mut self) {
        if core_loop::on_core_of(self.shared.id) {
            self.finish_elsewhere();
        } else {
            self.shutdown();
        }
    }
}
