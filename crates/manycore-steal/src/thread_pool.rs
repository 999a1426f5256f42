//! Pools of plain threads that steal from each other: [`ThreadPool`], the
//! runtime-free host of the protocol, and the global pool that work from
//! any other thread goes to. Idle workers sleep on their event count (no
//! ticks while idle), exactly as runtime cores sleep on their doorbell.

use crate::pool::{self, Host, PanicHandler, Pool, StealStats};
use crate::raw::{self, Waiter};
use manycore_sync::{Arc, SpinBudget};
use std::any::Any;
use std::fmt;
use std::io;
use std::panic;
use std::time::Duration;

/// The built-in host: no messages to poll; idle workers sleep on the event
/// count that `Pool::wake` already rings.
#[derive(Debug)]
struct NoHost;

impl Host for NoHost {
    fn poll_once(&self) -> usize {
        0
    }
    fn notify(&self, _i: usize) {}
}

// Std's `Arc`: loom's cannot hold unsized values, and these are no part of
// the protocol.
type StartHandler = std::sync::Arc<dyn Fn(usize) + Send + Sync>;
type NameHandler = std::sync::Arc<dyn Fn(usize) -> String + Send + Sync>;

/// Configures a [`ThreadPool`] (Rayon's `ThreadPoolBuilder`, plus this
/// crate's own knobs).
#[derive(Clone)]
pub struct ThreadPoolBuilder {
    workers: usize,
    idle_spin: Duration,
    wait_spin: Duration,
    pin: bool,
    max_sequential: u32,
    stack_size: Option<usize>,
    thread_name: Option<NameHandler>,
    start_handler: Option<StartHandler>,
    exit_handler: Option<StartHandler>,
    panic_handler: Option<PanicHandler>,
    /// Loom models: worker 0 is the thread that calls `install_here`.
    #[cfg(loom)]
    caller_worker: bool,
    /// Loom models: waiting workers kick busy ones (always on otherwise).
    #[cfg(loom)]
    kicks: bool,
}

impl fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("workers", &self.workers)
            .field("idle_spin", &self.idle_spin)
            .field("wait_spin", &self.wait_spin)
            .field("pin", &self.pin)
            .field("max_sequential", &self.max_sequential)
            .field("stack_size", &self.stack_size)
            .finish_non_exhaustive()
    }
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        Self {
            workers: 0,
            idle_spin: Duration::from_micros(50),
            wait_spin: Duration::from_micros(20),
            pin: false,
            max_sequential: 0,
            stack_size: None,
            thread_name: None,
            start_handler: None,
            exit_handler: None,
            panic_handler: None,
            #[cfg(loom)]
            caller_worker: false,
            #[cfg(loom)]
            kicks: false,
        }
    }
}

/// The number of workers a pool gets when none is asked for:
/// `MANYCORE_NUM_THREADS`, else `RAYON_NUM_THREADS` (if set to a positive
/// number), else the size of the process's original CPU set; at most 64.
pub fn default_num_threads() -> usize {
    let env = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
    };
    let n = env("MANYCORE_NUM_THREADS")
        .or_else(|| env("RAYON_NUM_THREADS"))
        .unwrap_or_else(default_cpus);
    n.clamp(1, pool::MAX_WORKERS)
}

#[cfg(not(loom))]
fn default_cpus() -> usize {
    manycore_sync::cpu::original().len().max(1)
}
#[cfg(loom)]
fn default_cpus() -> usize {
    2
}

impl ThreadPoolBuilder {
    /// A builder with default settings (Rayon's `ThreadPoolBuilder::new`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker threads; 0 (the default) means
    /// [`default_num_threads`]. Clamped to 64 (the demand word's width).
    pub fn num_threads(mut self, n: usize) -> Self {
        self.workers = n.min(pool::MAX_WORKERS);
        self
    }
    /// Same as [`num_threads`](Self::num_threads).
    pub fn workers(self, n: usize) -> Self {
        self.num_threads(n)
    }
    /// How long an idle worker spins before it sleeps (0: sleep at once).
    pub fn idle_spin(mut self, d: Duration) -> Self {
        self.idle_spin = d;
        self
    }
    /// How long an owner waiting for a stolen job spins before it sleeps.
    pub fn wait_spin(mut self, d: Duration) -> Self {
        self.wait_spin = d;
        self
    }
    /// Pin worker i to CPU i of the process's original CPU set.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }
    /// This pool's own `MAX_SEQUENTIAL`: its workers tick (serve demand) and
    /// poll every `n` joins; 0 (the default) follows the process-wide
    /// [`set_max_sequential`](crate::set_max_sequential).
    pub fn max_sequential(mut self, n: u32) -> Self {
        self.max_sequential = n;
        self
    }
    /// Stack size of the worker threads (the default: std's).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }
    /// Names worker thread i `f(i)`.
    pub fn thread_name<F>(mut self, f: F) -> Self
    where
        F: Fn(usize) -> String + Send + Sync + 'static,
    {
        self.thread_name = Some(std::sync::Arc::new(f));
        self
    }
    /// Called on each worker thread, with its index, when it starts.
    pub fn start_handler<F>(mut self, f: F) -> Self
    where
        F: Fn(usize) + Send + Sync + 'static,
    {
        self.start_handler = Some(std::sync::Arc::new(f));
        self
    }
    /// Called on each worker thread, with its index, before it exits.
    pub fn exit_handler<F>(mut self, f: F) -> Self
    where
        F: Fn(usize) + Send + Sync + 'static,
    {
        self.exit_handler = Some(std::sync::Arc::new(f));
        self
    }
    /// Called with the payload of a panic in a job started by `spawn` (whose
    /// panic has nowhere else to go). Without one, such a panic aborts the
    /// process, as in Rayon.
    pub fn panic_handler<F>(mut self, f: F) -> Self
    where
        F: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(std::sync::Arc::new(f));
        self
    }

    /// Starts the pool's threads.
    ///
    /// # Panics
    /// If a thread cannot be started (see [`try_build`](Self::try_build)).
    pub fn build(self) -> ThreadPool {
        self.try_build()
            .unwrap_or_else(|e| panic!("manycore-steal: cannot start a worker thread: {e}"))
    }

    /// Starts the pool's threads, each with `std::thread::Builder`.
    pub fn try_build(self) -> io::Result<ThreadPool> {
        self.build_with(|w| {
            #[cfg(not(loom))]
            {
                let mut b = std::thread::Builder::new();
                if let Some(name) = w.name() {
                    b = b.name(name.to_owned());
                }
                if let Some(s) = w.stack_size() {
                    b = b.stack_size(s);
                }
                b.spawn(move || w.run()).map(drop)
            }
            #[cfg(loom)]
            {
                // Loom's threads must be joined before a model ends.
                Err(io::Error::other(w.index().to_string()))
            }
        })
    }

    /// Builds the pool, starting each worker with `spawn`, which must run
    /// [`WorkerThread::run`] on a new thread (Rayon's `spawn_handler`).
    pub fn build_with<S>(self, mut spawn: S) -> io::Result<ThreadPool>
    where
        S: FnMut(WorkerThread) -> io::Result<()>,
    {
        let n = if self.workers == 0 {
            default_num_threads()
        } else {
            self.workers
        };
        let mut p =
            Pool::new(n, Box::new(NoHost), self.wait_spin).with_max_sequential(self.max_sequential);
        p.panic_handler = self.panic_handler.clone();
        #[cfg(not(loom))]
        {
            p.kicks = raw::kicks_enabled();
        }
        #[cfg(loom)]
        {
            p.kicks = self.kicks;
        }
        let pool = Arc::new(p);
        #[cfg(loom)]
        let mut threads = Vec::new();
        for i in 0..pool.len() {
            let w = WorkerThread {
                pool: pool.clone(),
                index: i,
                name: self.thread_name.as_ref().map(|f| f(i)),
                stack_size: self.stack_size,
                idle_spin: self.idle_spin,
                pin: self.pin,
                start: self.start_handler.clone(),
                exit: self.exit_handler.clone(),
            };
            #[cfg(loom)]
            {
                let _ = &mut spawn;
                if !(self.caller_worker && i == 0) {
                    threads.push(manycore_sync::thread::spawn(move || w.run()));
                }
            }
            #[cfg(not(loom))]
            {
                // Stops the threads already started if `spawn` fails or
                // unwinds.
                let guard = TerminateOnDrop(&pool);
                spawn(w)?;
                std::mem::forget(guard);
            }
        }
        Ok(ThreadPool {
            pool,
            #[cfg(loom)]
            threads,
        })
    }

    /// Loom models of the join protocol: worker 0 gets no thread; the
    /// model's thread becomes worker 0 in [`ThreadPool::install_here`]
    /// (one thread fewer to interleave).
    #[cfg(all(loom, test))]
    pub(crate) fn caller_is_worker0(mut self) -> Self {
        self.caller_worker = true;
        self
    }

    /// Loom models: waiting workers kick busy ones.
    #[cfg(all(loom, test))]
    pub(crate) fn kicking(mut self) -> Self {
        self.kicks = true;
        self
    }

    /// Makes this configuration the global pool's (the pool that `join`,
    /// `scope` and the rest use from threads that are no workers). Fails if
    /// the global pool already exists.
    #[cfg(not(loom))]
    pub fn build_global(self) -> Result<(), GlobalPoolError> {
        if GLOBAL.get().is_some() {
            return Err(GlobalPoolError::AlreadyInitialized);
        }
        self.try_build()
            .map_err(GlobalPoolError::Io)
            .and_then(set_global)
    }

    /// [`build_global`](Self::build_global), starting each worker with
    /// `spawn` (see [`build_with`](Self::build_with)).
    #[cfg(not(loom))]
    pub fn build_global_with<S>(self, spawn: S) -> Result<(), GlobalPoolError>
    where
        S: FnMut(WorkerThread) -> io::Result<()>,
    {
        if GLOBAL.get().is_some() {
            return Err(GlobalPoolError::AlreadyInitialized);
        }
        self.build_with(spawn)
            .map_err(GlobalPoolError::Io)
            .and_then(set_global)
    }
}

#[cfg(not(loom))]
fn set_global(p: ThreadPool) -> Result<(), GlobalPoolError> {
    // Another thread may have won meanwhile: this pool then just stops.
    GLOBAL
        .set(p)
        .map_err(|_| GlobalPoolError::AlreadyInitialized)
}

/// Terminates a pool being built if its building fails.
#[cfg(not(loom))]
struct TerminateOnDrop<'a>(&'a Pool);

#[cfg(not(loom))]
impl Drop for TerminateOnDrop<'_> {
    fn drop(&mut self) {
        self.0.terminate();
    }
}

/// Why [`ThreadPoolBuilder::build_global`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum GlobalPoolError {
    /// The global pool was already started (by an earlier `build_global`,
    /// or lazily by work from outside any pool).
    AlreadyInitialized,
    /// A worker thread could not be started.
    Io(io::Error),
}

impl fmt::Display for GlobalPoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyInitialized => {
                f.write_str("the global thread pool has already been initialized")
            }
            Self::Io(e) => write!(f, "cannot start a worker thread: {e}"),
        }
    }
}

impl std::error::Error for GlobalPoolError {}

/// A worker thread to start (see [`ThreadPoolBuilder::build_with`]).
pub struct WorkerThread {
    pool: Arc<Pool>,
    index: usize,
    name: Option<String>,
    stack_size: Option<usize>,
    idle_spin: Duration,
    pin: bool,
    start: Option<StartHandler>,
    exit: Option<StartHandler>,
}

impl fmt::Debug for WorkerThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerThread")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("stack_size", &self.stack_size)
            .finish_non_exhaustive()
    }
}

impl WorkerThread {
    /// The worker's index in its pool.
    pub fn index(&self) -> usize {
        self.index
    }
    /// The name the builder gave it, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// The stack size the builder asked for, if any.
    pub fn stack_size(&self) -> Option<usize> {
        self.stack_size
    }
    /// Runs the worker on the calling thread until its pool is dropped and
    /// no queued work is left.
    pub fn run(self) {
        #[cfg(not(loom))]
        if self.pin {
            let cpus = manycore_sync::cpu::original();
            let _ = manycore_sync::cpu::pin_current(cpus[self.index % cpus.len()]);
        }
        #[cfg(loom)]
        let _ = self.pin;
        // A handler that panics goes to the panic handler (or aborts the
        // process), as in rayon-core; the worker runs on either way, so a
        // later `broadcast` still finds every worker.
        let handler = |h: &Option<StartHandler>| {
            if let Some(h) = h {
                if let Err(p) = panic::catch_unwind(panic::AssertUnwindSafe(|| h(self.index))) {
                    crate::api::handle_panic(&self.pool, p);
                }
            }
        };
        handler(&self.start);
        idle_loop(&self.pool, self.index, self.idle_spin);
        handler(&self.exit);
    }
}

fn idle_loop(pool: &Arc<Pool>, me: usize, spin: Duration) {
    pool::bind(pool, me);
    let ec = &pool.worker(me).ec;
    let mut kicker = pool::Kicker::new(std::time::Instant::now());
    loop {
        if Pool::on_idle(pool, me) {
            kicker.reset(std::time::Instant::now());
            continue;
        }
        // Exit once the handle is gone and nothing is left to run here.
        if pool.stopping() && !pool.has_work(me) {
            break;
        }
        let mut budget = SpinBudget::new(if cfg!(loom) { Duration::ZERO } else { spin });
        while budget.spin() {
            if pool.has_job(me) || pool.has_queued() || pool.stopping() {
                break;
            }
        }
        if pool.has_work(me) {
            continue;
        }
        let key = ec.prepare_wait();
        if pool.has_work(me) || pool.stopping() {
            ec.cancel_wait();
            continue;
        }
        pool.sleep_kicking(me, key, &mut kicker, None);
    }
    if let Some(j) = pool.withdraw(me) {
        // Cannot happen once every install has returned; run it to be safe.
        raw::with_local(|l| pool.run_job(j, l));
    }
    pool::unbind();
}

/// A fork-join pool of plain threads (see the module docs). Work enters with
/// [`ThreadPool::install`] and the other methods, from any thread.
pub struct ThreadPool {
    pool: Arc<Pool>,
    #[cfg(loom)]
    threads: Vec<manycore_sync::thread::JoinHandle<()>>,
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("workers", &self.pool.len())
            .finish_non_exhaustive()
    }
}

#[cfg(not(loom))]
static GLOBAL: std::sync::OnceLock<ThreadPool> = std::sync::OnceLock::new();

/// The global pool, started on first use (see [`default_num_threads`]).
#[cfg(not(loom))]
pub(crate) fn global() -> &'static ThreadPool {
    GLOBAL.get_or_init(|| ThreadPoolBuilder::new().build())
}

/// The pool the calling thread is a worker of, else the global one (none
/// under loom, whose models build their own).
pub(crate) fn current_or_global() -> Option<Arc<Pool>> {
    if let Some((p, _)) = pool::current() {
        return Some(p);
    }
    #[cfg(not(loom))]
    return Some(global().pool.clone());
    #[cfg(loom)]
    None
}

/// How the calling thread waits for work it handed to another thread: a
/// worker (of any pool) waits while running its own pool's work, other
/// threads block.
pub(crate) fn waiter() -> Waiter {
    match pool::current() {
        Some((pool, me)) => Waiter::Worker { pool, me },
        None => Waiter::thread(),
    }
}

/// Waits as [`waiter`] says: `done` is the probe `raw` hands over.
pub(crate) fn wait(done: &dyn Fn() -> bool) {
    raw::with_local(|l| {
        if l.pool().is_some() {
            pool::wait_until(l, done);
        }
    });
}

/// Runs `f` on a worker of `pool` while the calling thread waits (see
/// [`waiter`]); resumes its panic.
pub(crate) fn run_on<R, F>(pool: &Pool, f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let r = raw::run_elsewhere(
        f,
        waiter(),
        |job| {
            pool.inject(job);
            Ok(())
        },
        wait,
    );
    match r {
        Some(Ok(r)) => r,
        Some(Err(p)) => panic::resume_unwind(p),
        None => unreachable!("the injector runs every job"),
    }
}

/// Runs `f` on a worker of `pool` (right here if the calling thread is one).
pub(crate) fn in_worker<R, F>(pool: &Arc<Pool>, f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if pool::worker_of(pool).is_some() {
        f()
    } else {
        run_on(pool, f)
    }
}

impl ThreadPool {
    /// A pool with `workers` worker threads and default settings.
    pub fn new(workers: usize) -> Self {
        Self::builder().workers(workers).build()
    }

    /// A builder.
    pub fn builder() -> ThreadPoolBuilder {
        ThreadPoolBuilder::default()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.pool.len()
    }

    /// Number of workers (Rayon's name).
    pub fn current_num_threads(&self) -> usize {
        self.pool.len()
    }

    /// The calling thread's index if it is a worker of this pool.
    pub fn current_thread_index(&self) -> Option<usize> {
        pool::worker_of(&self.pool)
    }

    /// Whether the calling worker of this pool has spawned jobs queued on its
    /// deque (`None`: not a worker of this pool).
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        pool::worker_of(&self.pool).map(|me| self.pool.has_local(me))
    }

    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Runs `f` on a worker of this pool and returns its result; joins,
    /// scopes and spawns inside run in this pool. `f` may borrow from the
    /// caller: the caller waits until `f` has finished (a worker of another
    /// pool runs its own pool's work meanwhile; any other thread blocks),
    /// also when `f` panics, and then resumes the panic. From a worker of
    /// this pool, just calls `f`.
    pub fn install<R, F>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        in_worker(&self.pool, f)
    }

    /// Loom models: runs `f` on the calling thread as worker 0 (see
    /// [`ThreadPoolBuilder::caller_is_worker0`]).
    #[cfg(all(loom, test))]
    pub(crate) fn install_here<R>(&self, f: impl FnOnce() -> R) -> R {
        let prev = pool::unbind();
        pool::bind(&self.pool, 0);
        let r = panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        if let Some(j) = self.pool.withdraw(0) {
            raw::with_local(|l| self.pool.run_job(j, l));
        }
        pool::unbind();
        drop(prev);
        r.unwrap_or_else(|p| panic::resume_unwind(p))
    }

    /// [`join`](crate::join) in this pool.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(|| crate::join(a, b))
    }

    /// [`scope`](crate::scope) in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope(op))
    }

    /// [`scope_fifo`](crate::scope_fifo) in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| crate::scope_fifo(op))
    }

    /// [`in_place_scope`](crate::in_place_scope) whose spawns go to this pool.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::Scope<'scope>) -> R,
    {
        crate::api::in_place_scope_in(self.pool.clone(), op)
    }

    /// [`in_place_scope_fifo`](crate::in_place_scope_fifo) whose spawns go to
    /// this pool.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&crate::ScopeFifo<'scope>) -> R,
    {
        crate::api::in_place_scope_fifo_in(self.pool.clone(), op)
    }

    /// [`spawn`](crate::spawn) into this pool.
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        crate::api::spawn_in(&self.pool, f, false);
    }

    /// [`spawn_fifo`](crate::spawn_fifo) into this pool.
    pub fn spawn_fifo<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        crate::api::spawn_in(&self.pool, f, true);
    }

    /// [`broadcast`](crate::broadcast) on this pool's workers.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(crate::BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        crate::api::broadcast_in(&self.pool, op)
    }

    /// [`spawn_broadcast`](crate::spawn_broadcast) on this pool's workers.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(crate::BroadcastContext<'_>) + Send + Sync + 'static,
    {
        crate::api::spawn_broadcast_in(&self.pool, op)
    }

    /// [`yield_now`](crate::yield_now) if the calling thread is a worker of
    /// this pool, else `None`.
    pub fn yield_now(&self) -> Option<crate::Yield> {
        pool::worker_of(&self.pool)?;
        crate::yield_now()
    }

    /// [`yield_local`](crate::yield_local) if the calling thread is a worker
    /// of this pool, else `None`.
    pub fn yield_local(&self) -> Option<crate::Yield> {
        pool::worker_of(&self.pool)?;
        crate::yield_local()
    }

    /// Steal counters since the pool started.
    pub fn stats(&self) -> StealStats {
        self.pool.stats()
    }
}

impl Drop for ThreadPool {
    /// Tells the workers to exit once they have run all queued work (jobs
    /// spawned into the pool still run); does not wait for them (Rayon's
    /// behaviour), except under loom, whose threads must be joined.
    fn drop(&mut self) {
        self.pool.terminate();
        #[cfg(loom)]
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
