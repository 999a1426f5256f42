//! Rayon's scopes: closures spawned into a scope may borrow from outside it,
//! because the scope does not end (not even by unwinding) before every one
//! of them has run. A spawned closure is a heap job on the spawning worker's
//! deque from the moment it is spawned: an idle worker may steal it at once
//! (the spawn wakes a hungry worker), and if nobody does, the scope's owner
//! runs it inline when it reaches the end of the scope (LIFO, as Rayon).

use super::job::{heap_job_unchecked, FifoQueue, JobRef, Latch, Waiter};
use crate::pool::{self, Pool};
use manycore_sync::atomic::{AtomicUsize, Ordering};
use manycore_sync::{Arc, Mutex};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};

/// Makes a scope invariant in `'scope` (Rayon's marker).
type ScopeMarker<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + Sync + 'scope>;

/// What [`Scope`] and [`ScopeFifo`] share: the pool spawns go to, the count
/// of unfinished work, the first panic.
struct ScopeBase<'scope> {
    pool: Arc<Pool>,
    /// 1 for the scope's body while it runs, plus one per spawned job not
    /// yet finished. The decrement to zero sets `latch`.
    count: AtomicUsize,
    latch: Latch,
    panic: Mutex<Option<Box<dyn Any + Send + 'static>>>,
    /// Invariant in `'scope`, as Rayon's: spawned closures may borrow
    /// anything that outlives the scope.
    _marker: PhantomData<ScopeMarker<'scope>>,
}

impl<'scope> ScopeBase<'scope> {
    fn new(pool: Arc<Pool>, waiter: Waiter) -> Self {
        Self {
            pool,
            count: AtomicUsize::new(1),
            latch: Latch::new(waiter),
            panic: Mutex::new(None),
            _marker: PhantomData,
        }
    }

    /// A job running `f`, counted in the scope until it has run.
    fn job<F: FnOnce() + Send + 'scope>(&self, f: F) -> JobRef {
        // Relaxed: the job is published to other threads by the deque's lock.
        self.count.fetch_add(1, Ordering::Relaxed);
        let this = ScopePtr(self as *const Self);
        let run = move || {
            // SAFETY: the scope outlives its jobs: `run_scope` returns only
            // after `count` reached zero, which needs this job's `complete`.
            let base = unsafe { &*this.get() };
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(f)) {
                base.record(p);
            }
            // SAFETY: as above; this is the job's last touch of the scope.
            unsafe { Self::complete(this.get()) };
        };
        // SAFETY: the job runs before `'scope` ends: the scope waits for it.
        unsafe { heap_job_unchecked(run) }
    }

    fn record(&self, p: Box<dyn Any + Send + 'static>) {
        let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(p);
        }
    }

    /// One unit of the count is done; the last one sets the latch.
    ///
    /// # Safety
    /// `this` is alive, and the caller holds one unit of its count; it does
    /// not touch the scope afterwards.
    unsafe fn complete(this: *const Self) {
        // AcqRel: the jobs' effects (and recorded panics) happen before the
        // owner sees the latch.
        // SAFETY: alive while a unit of its count is held.
        if unsafe { (*this).count.fetch_sub(1, Ordering::AcqRel) } == 1 {
            // SAFETY: the latch is alive until set (the owner waits for it).
            unsafe { Latch::set(&(*this).latch) };
        }
    }

    /// Puts a spawned job on the calling worker's deque if it is a worker of
    /// the scope's pool, else on the pool's injector.
    fn push(&self, job: JobRef) {
        pool::push_spawn(&self.pool, job);
    }
}

/// A raw pointer to a scope, sent to the jobs spawned into it.
struct ScopePtr<T>(*const T);

// SAFETY: the scope is `Sync` (its fields are), and the pointer is used only
// while the scope is alive (see `ScopeBase::job`).
unsafe impl<T: Sync> Send for ScopePtr<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for ScopePtr<T> {}

impl<T> Clone for ScopePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ScopePtr<T> {}

impl<T> ScopePtr<T> {
    // A method, so that closures capture the whole `ScopePtr` (which is
    // `Send`), not its raw field.
    fn get(&self) -> *const T {
        self.0
    }
}

/// A scope in which closures borrowing from outside can be spawned; see
/// [`scope`](crate::scope).
pub struct Scope<'scope> {
    base: ScopeBase<'scope>,
}

/// A scope whose spawns run in FIFO order relative to each other on each
/// worker; see [`scope_fifo`](crate::scope_fifo).
pub struct ScopeFifo<'scope> {
    base: ScopeBase<'scope>,
    /// One queue per worker of the pool (Rayon's scheme, see [`FifoQueue`]).
    fifos: Box<[Arc<FifoQueue>]>,
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("pool", &self.base.pool)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ScopeFifo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeFifo")
            .field("pool", &self.base.pool)
            .finish_non_exhaustive()
    }
}

impl<'scope> Scope<'scope> {
    /// Spawns `body` into the scope. It is stealable at once: an idle worker
    /// may start it while the spawning code goes on (so the scope's body may
    /// wait for it); if no worker takes it, it runs on the scope's owner when
    /// the body returns, newest spawn first. [`scope`](crate::scope) returns
    /// after it has run.
    pub fn spawn<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let this = ScopePtr(self as *const Self);
        let job = self.base.job(move || {
            // SAFETY: the job runs while the scope is alive (`ScopeBase::job`).
            body(unsafe { &*this.get() })
        });
        self.base.push(job);
    }

    /// Runs `body` once on every worker of the scope's pool (each gets a
    /// [`BroadcastContext`](crate::BroadcastContext)); the scope waits for all.
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&Scope<'scope>, crate::BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        let this = ScopePtr(self as *const Self);
        let body = Arc::new(body);
        let n = self.base.pool.len();
        for i in 0..n {
            let body = body.clone();
            let job = self.base.job(move || {
                // SAFETY: the job runs while the scope is alive.
                body(unsafe { &*this.get() }, crate::BroadcastContext::new(i, n))
            });
            pool::push_broadcast(&self.base.pool, i, job);
        }
    }
}

impl<'scope> ScopeFifo<'scope> {
    /// Spawns `body` into the scope; jobs spawned FIFO from one worker start
    /// in the order they were spawned (see [`Scope::spawn`] for the rest).
    pub fn spawn_fifo<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&ScopeFifo<'scope>) + Send + 'scope,
    {
        let this = ScopePtr(self as *const Self);
        let job = self.base.job(move || {
            // SAFETY: the job runs while the scope is alive (`ScopeBase::job`).
            body(unsafe { &*this.get() })
        });
        match pool::worker_of(&self.base.pool) {
            Some(me) => pool::push_spawn(&self.base.pool, FifoQueue::push(&self.fifos[me], job)),
            // From outside the pool the injector is FIFO already.
            None => self.base.push(job),
        }
    }

    /// As [`Scope::spawn_broadcast`].
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&ScopeFifo<'scope>, crate::BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        let this = ScopePtr(self as *const Self);
        let body = Arc::new(body);
        let n = self.base.pool.len();
        for i in 0..n {
            let body = body.clone();
            let job = self.base.job(move || {
                // SAFETY: the job runs while the scope is alive.
                body(unsafe { &*this.get() }, crate::BroadcastContext::new(i, n))
            });
            pool::push_broadcast(&self.base.pool, i, job);
        }
    }
}

/// Aborts if dropped: a scope must not be freed while its jobs may run.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("manycore-steal: unwinding out of a scope's wait; aborting");
        std::process::abort();
    }
}

/// Runs a scope: `op` on the calling thread, then waits (`wait`, then
/// blocking until the latch is set, whatever `wait` did) until every job
/// spawned into it has run; then resumes the first panic (the body's, else
/// a job's) or returns `op`'s result.
fn run<'scope, S, R>(
    scope: S,
    base: impl Fn(&S) -> &ScopeBase<'scope>,
    op: impl FnOnce(&S) -> R,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> R {
    let r = panic::catch_unwind(AssertUnwindSafe(|| op(&scope)));
    let bomb = AbortOnUnwind;
    let b = base(&scope);
    // SAFETY: the body's unit of the count; the scope stays alive here.
    unsafe { ScopeBase::complete(b) };
    wait(&|| b.latch.probe());
    b.latch.wait_blocking();
    std::mem::forget(bomb);
    let job_panic = b.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (r, job_panic) {
        (Err(p), _) | (Ok(_), Some(p)) => panic::resume_unwind(p),
        (Ok(r), None) => r,
    }
}

/// Runs a [`Scope`] whose spawns go to `pool`; `waiter` wakes the calling
/// thread, `wait` waits (see [`run`]).
pub(crate) fn run_scope<'scope, R>(
    pool: Arc<Pool>,
    waiter: Waiter,
    op: impl FnOnce(&Scope<'scope>) -> R,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> R {
    let scope = Scope {
        base: ScopeBase::new(pool, waiter),
    };
    run(scope, |s| &s.base, op, wait)
}

/// [`run_scope`] for a [`ScopeFifo`].
pub(crate) fn run_scope_fifo<'scope, R>(
    pool: Arc<Pool>,
    waiter: Waiter,
    op: impl FnOnce(&ScopeFifo<'scope>) -> R,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> R {
    let fifos = (0..pool.len())
        .map(|_| Arc::new(FifoQueue::default()))
        .collect();
    let scope = ScopeFifo {
        base: ScopeBase::new(pool, waiter),
        fifos,
    };
    run(scope, |s| &s.base, op, wait)
}
