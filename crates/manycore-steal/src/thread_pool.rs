//! A standalone pool of plain threads that steal from each other: the
//! runtime-free host of the protocol, used by the tests, the loom model and
//! programs that do not run a `manycore_rt::Runtime`. Idle workers sleep on
//! their event count (no ticks while idle), exactly as runtime cores sleep
//! on their doorbell.

use crate::pool::{self, Host, Pool, StealStats};
use crate::raw;
use manycore_sync::atomic::{AtomicBool, Ordering};
use manycore_sync::{Arc, Mutex, SpinBudget};
use std::panic::{self, AssertUnwindSafe};
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

/// Configures a [`ThreadPool`].
#[derive(Debug, Clone)]
pub struct ThreadPoolBuilder {
    workers: usize,
    idle_spin: Duration,
    wait_spin: Duration,
    pin: bool,
    max_sequential: u32,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        Self {
            workers: 2,
            idle_spin: Duration::from_micros(50),
            wait_spin: Duration::from_micros(20),
            pin: false,
            max_sequential: 0,
        }
    }
}

impl ThreadPoolBuilder {
    /// Number of workers, counting the thread that calls [`ThreadPool::install`]
    /// (so `workers(1)` starts no thread). Clamped to 1..=64.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.clamp(1, pool::MAX_WORKERS);
        self
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
    /// Pin worker i (i >= 1) to CPU i of the process's original CPU set.
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
    /// Starts the pool's threads.
    pub fn build(self) -> ThreadPool {
        let pool = Arc::new(
            Pool::new(self.workers, Box::new(NoHost), self.wait_spin)
                .with_max_sequential(self.max_sequential),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (1..pool.len())
            .map(|i| {
                let (pool, stop) = (pool.clone(), stop.clone());
                let (spin, pin) = (self.idle_spin, self.pin);
                manycore_sync::thread::spawn(move || {
                    #[cfg(not(loom))]
                    if pin {
                        let cpus = manycore_sync::cpu::original();
                        let _ = manycore_sync::cpu::pin_current(cpus[i % cpus.len()]);
                    }
                    #[cfg(loom)]
                    let _ = pin;
                    idle_loop(&pool, i, &stop, spin);
                })
            })
            .collect();
        ThreadPool {
            pool,
            stop,
            threads,
            entry: Mutex::new(()),
        }
    }
}

fn idle_loop(pool: &Arc<Pool>, me: usize, stop: &AtomicBool, spin: Duration) {
    pool::bind(pool, me);
    let ec = &pool.worker(me).ec;
    loop {
        if Pool::on_idle(pool, me) {
            continue;
        }
        // Acquire; pairs with the Release store in `Drop for ThreadPool`.
        if stop.load(Ordering::Acquire) {
            break;
        }
        let mut budget = SpinBudget::new(if cfg!(loom) { Duration::ZERO } else { spin });
        while budget.spin() {
            if pool.has_job(me) || stop.load(Ordering::Relaxed) {
                break;
            }
        }
        if pool.has_job(me) {
            continue;
        }
        let key = ec.prepare_wait();
        if pool.has_job(me) || stop.load(Ordering::Acquire) {
            ec.cancel_wait();
            continue;
        }
        ec.wait(key);
    }
    if let Some(j) = pool.withdraw(me) {
        // Cannot happen once every install has returned; run it to be safe.
        raw::with_local(|l| pool.run_job(j, l));
    }
    pool::unbind();
}

/// A fork-join pool of plain threads (see the module docs). Work enters with
/// [`ThreadPool::install`], which makes the calling thread worker 0.
#[derive(Debug)]
pub struct ThreadPool {
    pool: Arc<Pool>,
    stop: Arc<AtomicBool>,
    threads: Vec<manycore_sync::thread::JoinHandle<()>>,
    entry: Mutex<()>,
}

impl ThreadPool {
    /// A pool with `workers` workers and default settings.
    pub fn new(workers: usize) -> Self {
        Self::builder().workers(workers).build()
    }

    /// A builder.
    pub fn builder() -> ThreadPoolBuilder {
        ThreadPoolBuilder::default()
    }

    /// Number of workers (including the installing thread).
    pub fn workers(&self) -> usize {
        self.pool.len()
    }

    /// Runs `f` on the calling thread as worker 0 of this pool: joins inside
    /// it can be stolen by the pool's other workers. One install at a time;
    /// from inside the pool, just calls `f`. A panic in `f` propagates.
    pub fn install<R, F>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if matches!(pool::current(), Some((p, _)) if Arc::ptr_eq(&p, &self.pool)) {
            return f();
        }
        let guard = self.entry.lock().unwrap_or_else(|e| e.into_inner());
        let prev = pool::unbind();
        pool::bind(&self.pool, 0);
        // Frames of joins around this call (another pool's) are not this
        // pool's to hand out: hide them for the duration.
        let (head, depth) = raw::with_local(|l| {
            l.last_poll.set(0);
            (l.head.replace(std::ptr::null()), l.depth.replace(0))
        });
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        if let Some(j) = self.pool.withdraw(0) {
            raw::with_local(|l| self.pool.run_job(j, l));
        }
        raw::with_local(|l| {
            l.head.set(head);
            l.depth.set(depth);
        });
        pool::rebind(prev);
        // Unlock before resuming a panic, so the lock is not poisoned.
        drop(guard);
        match r {
            Ok(r) => r,
            Err(p) => panic::resume_unwind(p),
        }
    }

    /// Steal counters since the pool started.
    pub fn stats(&self) -> StealStats {
        self.pool.stats()
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // Release; pairs with the Acquire loads in `idle_loop`.
        self.stop.store(true, Ordering::Release);
        for i in 0..self.pool.len() {
            self.pool.worker(i).ec.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
