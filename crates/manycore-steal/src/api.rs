//! Rayon-core's API on the lazy engine: `join_context`, scopes, `spawn`,
//! `broadcast`, the thread queries and `yield_now`. Everything here enters
//! the pool the calling thread is a worker of, or the global pool from any
//! other thread (injecting the work and blocking, as rayon-core does).

use crate::join::{count_unrecorded, LATENT_WINDOW};
use crate::pool::{self, Pool, Work};
use crate::raw::{self, Scope, ScopeFifo};
use crate::thread_pool::{self as tp, current_or_global, in_worker};
use manycore_sync::Arc;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};

/// What [`join_context`] tells each closure.
#[derive(Debug, Clone, Copy)]
pub struct FnContext {
    migrated: bool,
}

impl FnContext {
    /// True if the closure runs on another thread than the one that called
    /// `join_context` (it was stolen, or the join came from outside a pool).
    #[inline]
    pub fn migrated(&self) -> bool {
        self.migrated
    }
}

/// [`join`](crate::join), telling each closure whether it was migrated to
/// another thread (Rayon's parallel iterators split more finely when work
/// migrates).
#[inline]
pub fn join_context<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let here = FnContext { migrated: false };
    let unrecorded = raw::with_local_flat(|local| count_unrecorded(local, local.depth.get()));
    if unrecorded {
        return raw::join_unrecorded((), |()| a(here), |()| b(here));
    }
    join_context_recorded(a, b)
}

#[inline(never)]
fn join_context_recorded<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    if raw::with_local_flat(|local| local.pool.get().is_null()) {
        return join_context_outside(a, b);
    }
    join_context_bound(a, b, false)
}

/// The join of [`join_context`] on a worker; `injected`: the join came from
/// outside the pool, so both closures count as migrated.
#[inline(always)]
fn join_context_bound<A, B, RA, RB>(a: A, b: B, injected: bool) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let here = FnContext { migrated: injected };
    raw::with_local_flat(|local| {
        let depth = local.depth.get();
        if count_unrecorded(local, depth) {
            return raw::join_unrecorded((), |()| a(here), |()| b(here));
        }
        let _depth = (depth < LATENT_WINDOW).then(|| raw::DepthGuard::enter(local, depth));
        raw::join(
            local,
            || a(here),
            move |stolen| {
                b(FnContext {
                    migrated: stolen || injected,
                })
            },
        )
    })
}

#[cold]
#[inline(never)]
fn join_context_outside<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    match crate::join::outside_pool() {
        Some(p) => tp::run_on(&p, move || join_context_bound(a, b, true)),
        None if pool::current().is_some() => join_context_bound(a, b, false),
        None => {
            let here = FnContext { migrated: false };
            raw::join_unrecorded((), |()| a(here), |()| b(here))
        }
    }
}

/// Creates a scope in the current pool (the global one from outside any
/// pool, where the whole scope runs on a worker while the caller blocks),
/// runs `op` in it and returns its result once every closure spawned into
/// it has run. Spawned closures may borrow from outside the scope; each is
/// stealable from the moment it is spawned, and runs inline on the scope's
/// owner when no idle worker takes it (newest first). A panic in `op` or in
/// a spawned closure propagates after all have finished (the body's first,
/// else the first recorded).
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match current_or_global() {
        Some(p) => in_worker(&p.clone(), || in_place_scope_in(p, op)),
        None => in_place_scope_here(op),
    }
}

/// [`scope`] whose spawns (with [`ScopeFifo::spawn_fifo`]) start in the
/// order they were spawned, per worker.
pub fn scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    match current_or_global() {
        Some(p) => in_worker(&p.clone(), || in_place_scope_fifo_in(p, op)),
        None => in_place_scope_fifo_here(op),
    }
}

/// [`scope`], but `op` runs on the calling thread whatever it is; spawns go
/// to the current pool (the global one from outside any pool).
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    match current_or_global() {
        Some(p) => in_place_scope_in(p, op),
        None => in_place_scope_here(op),
    }
}

/// [`in_place_scope`] for a [`ScopeFifo`].
pub fn in_place_scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    match current_or_global() {
        Some(p) => in_place_scope_fifo_in(p, op),
        None => in_place_scope_fifo_here(op),
    }
}

pub(crate) fn in_place_scope_in<'scope, OP, R>(pool: Arc<Pool>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    raw::run_scope(pool, tp::waiter(), op, tp::wait)
}

pub(crate) fn in_place_scope_fifo_in<'scope, OP, R>(pool: Arc<Pool>, op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    raw::run_scope_fifo(pool, tp::waiter(), op, tp::wait)
}

/// Under loom with no pool: a private one-worker pool for the scope.
#[cfg(loom)]
fn in_place_scope_here<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let p = crate::ThreadPool::new(1);
    let r = in_place_scope_in(p.pool().clone(), op);
    drop(p);
    r
}
#[cfg(not(loom))]
fn in_place_scope_here<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    in_place_scope_in(crate::thread_pool::global().pool().clone(), op)
}
#[cfg(loom)]
fn in_place_scope_fifo_here<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    let p = crate::ThreadPool::new(1);
    let r = in_place_scope_fifo_in(p.pool().clone(), op);
    drop(p);
    r
}
#[cfg(not(loom))]
fn in_place_scope_fifo_here<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    in_place_scope_fifo_in(crate::thread_pool::global().pool().clone(), op)
}

/// Starts `f` in the current pool (the global one from outside any pool)
/// and returns at once. A worker pushes it onto its own deque (it may run
/// it itself later, newest first, if nobody steals it). A panic in `f` goes
/// to the pool's panic handler, or aborts the process if it has none.
pub fn spawn<F>(f: F)
where
    F: FnOnce() + Send + 'static,
{
    if let Some(p) = current_or_global() {
        spawn_in(&p, f, false);
    }
}

/// [`spawn`], but jobs spawned FIFO from one worker start in the order they
/// were spawned.
pub fn spawn_fifo<F>(f: F)
where
    F: FnOnce() + Send + 'static,
{
    if let Some(p) = current_or_global() {
        spawn_in(&p, f, true);
    }
}

pub(crate) fn spawn_in<F>(pool: &Arc<Pool>, f: F, fifo: bool)
where
    F: FnOnce() + Send + 'static,
{
    let keep = pool.clone();
    let job = raw::heap_job(move || {
        if let Err(p) = panic::catch_unwind(AssertUnwindSafe(f)) {
            handle_panic(&keep, p);
        }
    });
    if fifo {
        pool::push_spawn_fifo(pool, job);
    } else {
        pool::push_spawn(pool, job);
    }
}

/// What a panic that nobody waits for becomes (a spawned job's, or a
/// worker's start or exit handler's): the pool's panic handler gets it, and
/// without one, or if the handler panics too, the process aborts, as in
/// rayon-core.
pub(crate) fn handle_panic(pool: &Pool, p: Box<dyn Any + Send>) {
    match &pool.panic_handler {
        Some(h) => {
            if panic::catch_unwind(AssertUnwindSafe(|| h(p))).is_err() {
                eprintln!("manycore-steal: the panic handler panicked; aborting");
                std::process::abort();
            }
        }
        None => {
            eprintln!("manycore-steal: a spawned job or a start or exit handler panicked and the pool has no panic handler; aborting");
            std::process::abort();
        }
    }
}

/// What a [`broadcast`] closure is told: which worker runs it, of how many.
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    _marker: PhantomData<&'a mut ()>,
}

impl BroadcastContext<'_> {
    pub(crate) fn new(index: usize, num_threads: usize) -> Self {
        Self {
            index,
            num_threads,
            _marker: PhantomData,
        }
    }
    /// The index of the worker running this call.
    #[inline]
    pub fn index(&self) -> usize {
        self.index
    }
    /// The number of workers (and so of calls).
    #[inline]
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl fmt::Debug for BroadcastContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcastContext")
            .field("index", &self.index)
            .field("num_threads", &self.num_threads)
            .finish()
    }
}

/// Runs `op` once on every worker of the current pool (the global one from
/// outside any pool) and returns the results in worker order. A worker runs
/// its call when it next looks for work. A panic propagates after all calls
/// have finished.
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    match current_or_global() {
        Some(p) => broadcast_in(&p, op),
        None => vec![op(BroadcastContext::new(0, 1))],
    }
}

pub(crate) fn broadcast_in<OP, R>(pool: &Arc<Pool>, op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    let n = pool.len();
    let op = &op;
    let fs: Vec<_> = (0..n)
        .map(|i| move || op(BroadcastContext::new(i, n)))
        .collect();
    let results = raw::run_all_elsewhere(
        fs,
        tp::waiter,
        |jobs| {
            for (i, j) in jobs.into_iter().enumerate() {
                pool::push_broadcast(pool, i, j);
            }
            (0..n).map(|_| Ok(())).collect()
        },
        tp::wait,
    );
    let mut out = Vec::with_capacity(n);
    let mut first_panic = None;
    for r in results {
        match r {
            Some(Ok(r)) => out.push(r),
            Some(Err(p)) => {
                first_panic.get_or_insert(p);
            }
            None => unreachable!("every broadcast job runs"),
        }
    }
    if let Some(p) = first_panic {
        panic::resume_unwind(p);
    }
    out
}

/// Starts `op` on every worker of the current pool (the global one from
/// outside any pool) and returns at once; panics go to the pool's panic
/// handler (or abort).
pub fn spawn_broadcast<OP>(op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    if let Some(p) = current_or_global() {
        spawn_broadcast_in(&p, op);
    }
}

pub(crate) fn spawn_broadcast_in<OP>(pool: &Arc<Pool>, op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    let op = Arc::new(op);
    let n = pool.len();
    for i in 0..n {
        let (op, keep) = (op.clone(), pool.clone());
        let job = raw::heap_job(move || {
            let r = panic::catch_unwind(AssertUnwindSafe(|| op(BroadcastContext::new(i, n))));
            if let Err(p) = r {
                handle_panic(&keep, p);
            }
        });
        pool::push_broadcast(pool, i, job);
    }
}

/// The number of workers of the current pool (the global one, started if
/// need be, from outside any pool).
pub fn current_num_threads() -> usize {
    current_or_global().map_or(1, |p| p.len())
}

/// The calling thread's index in the pool it is a worker of, if any.
pub fn current_thread_index() -> Option<usize> {
    raw::with_local(|l| l.pool().map(|(_, me)| me))
}

/// Whether the calling worker has spawned jobs queued on its own deque
/// (`None`: not a worker).
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    pool::current().map(|(p, me)| p.has_local(me))
}

/// The most workers a pool can have here: 64 (the width of the demand word).
pub fn max_num_threads() -> usize {
    pool::MAX_WORKERS
}

/// What [`yield_now`] and [`yield_local`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yield {
    /// Ran one pending job.
    Executed,
    /// Found nothing to run.
    Idle,
}

/// On a worker: runs one pending job of its pool, if any (a frame handed to
/// it, a spawned, broadcast or injected job). `None` on other threads.
pub fn yield_now() -> Option<Yield> {
    yield_with(|p, me| p.find_work(me))
}

/// On a worker: runs one job from its own deque, if any. `None` on other
/// threads.
pub fn yield_local() -> Option<Yield> {
    yield_with(|p, me| p.find_local_work(me))
}

fn yield_with(find: impl FnOnce(&Pool, usize) -> Option<Work>) -> Option<Yield> {
    let (p, me) = pool::current()?;
    Some(raw::with_local(|l| match find(&p, me) {
        Some(w) => {
            p.run_work(me, w, l);
            Yield::Executed
        }
        None => Yield::Idle,
    }))
}
