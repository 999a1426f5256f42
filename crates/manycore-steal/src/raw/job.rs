//! Jobs that do not live in a join's frame: a type-erased [`JobRef`] (what
//! the spawn deques, the injector and the broadcast queues hold), heap jobs
//! (`spawn`), stack jobs run by another thread while their owner waits
//! (`install`, a join or scope entered from outside a pool, `broadcast`),
//! the latch that tells the owner its job is done, and the FIFO indirection
//! of `spawn_fifo`.
//!
//! Soundness of the stack jobs rests on one rule, kept inside this file: a
//! stack job's owner does not leave [`run_elsewhere`] (not even by
//! unwinding) before the job's latch is set, unless it got the job's
//! [`JobRef`] back unexecuted. A `JobRef` is neither `Clone` nor `Copy`, so
//! getting it back proves that it never ran and never will.

use crate::pool::Pool;
use manycore_sync::atomic::{AtomicBool, Ordering};
use manycore_sync::cell::UnsafeCell;
use manycore_sync::{Arc, Condvar, Mutex};
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::thread::Result as ThreadResult;

/// A job to run once, type-erased: a pointer and the function that runs it.
/// Made only in this module; executing consumes it, so each job runs at most
/// once. Dropping one unexecuted leaks a heap job and leaves a stack job's
/// owner waiting (the pools never drop queued jobs while a handle exists).
#[derive(Debug)]
pub(crate) struct JobRef {
    data: *const (),
    exec: unsafe fn(*const ()),
}

// SAFETY: every constructor below requires the job's closure to be `Send`
// (or holds only `Send` data), so running it on another thread is allowed.
unsafe impl Send for JobRef {}

impl JobRef {
    /// Runs the job (on the calling thread).
    pub(crate) fn execute(self) {
        // SAFETY: `data` is alive until the job has run: a heap job owns its
        // box, a stack job's owner waits for its latch (module docs), a FIFO
        // indirection holds an `Arc` of its queue; and this `JobRef` is
        // consumed here, so the job runs once.
        unsafe { (self.exec)(self.data) }
    }
}

/// A boxed `'static` closure as a job.
pub(crate) fn heap_job<F: FnOnce() + Send + 'static>(f: F) -> JobRef {
    // SAFETY: `F: 'static`, so the closure outlives any delay before it runs.
    unsafe { heap_job_unchecked(f) }
}

/// A boxed closure as a job, whatever its lifetime.
///
/// # Safety
/// The caller makes sure that the job is executed before `'a` ends (a scope
/// waits for every job spawned into it).
pub(super) unsafe fn heap_job_unchecked<'a, F: FnOnce() + Send + 'a>(f: F) -> JobRef {
    unsafe fn exec<F: FnOnce()>(data: *const ()) {
        // SAFETY: `data` came from `Box::into_raw` below, and runs once.
        let f = unsafe { Box::from_raw(data.cast_mut().cast::<F>()) };
        f();
    }
    JobRef {
        data: Box::into_raw(Box::new(f)).cast_const().cast::<()>(),
        exec: exec::<F>,
    }
}

/// The queue behind FIFO spawns (`spawn_fifo`): the real jobs wait here in
/// order, and each push puts an indirection on the LIFO deque that, when
/// run, runs the oldest job here (Rayon's scheme: jobs spawned FIFO run in
/// spawn order relative to each other, whatever order the deque pops them).
#[derive(Debug, Default)]
pub(crate) struct FifoQueue(Mutex<VecDeque<JobRef>>);

impl FifoQueue {
    /// Queues `job` and returns the indirection to put on a deque.
    pub(crate) fn push(this: &Arc<Self>, job: JobRef) -> JobRef {
        unsafe fn exec(data: *const ()) {
            // SAFETY: `data` came from `Arc::into_raw` below, and runs once.
            let q = unsafe { Arc::from_raw(data.cast::<FifoQueue>()) };
            let job = q.0.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            drop(q);
            // Each push adds one job and one indirection, and only an
            // indirection pops: there is always a job here.
            if let Some(job) = job {
                job.execute();
            }
        }
        this.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(job);
        JobRef {
            data: Arc::into_raw(this.clone()).cast::<()>(),
            exec,
        }
    }
}

/// Who waits for a [`Latch`], and how to wake it.
#[derive(Debug)]
pub(crate) enum Waiter {
    /// A worker of `pool`, waiting while it runs other work of its pool; it
    /// sleeps on its event count, which [`Pool::wake`] rings.
    Worker { pool: Arc<Pool>, me: usize },
    /// A thread that is no worker: it blocks on the condition variable.
    Thread { done: Mutex<bool>, cv: Condvar },
}

impl Waiter {
    /// A waiter for a thread that is no worker.
    pub(crate) fn thread() -> Self {
        Self::Thread {
            done: Mutex::new(false),
            cv: Condvar::new(),
        }
    }
}

/// Set once, when a job (or the last job of a scope) is done; then wakes its
/// waiter. The waiter may free the latch as soon as it sees it set, so
/// [`Latch::set`] touches it no more after that point.
#[derive(Debug)]
pub(crate) struct Latch {
    set: AtomicBool,
    waiter: Waiter,
}

impl Latch {
    pub(crate) fn new(waiter: Waiter) -> Self {
        Self {
            set: AtomicBool::new(false),
            waiter,
        }
    }

    /// True once set; the job's effects are then visible.
    pub(crate) fn probe(&self) -> bool {
        match &self.waiter {
            // Acquire; pairs with the Release store in `set`.
            Waiter::Worker { .. } => self.set.load(Ordering::Acquire),
            // Under the lock: the setter still uses the latch after its
            // store to `set`, until it unlocks.
            Waiter::Thread { done, .. } => *done.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Sets the latch and wakes the waiter.
    ///
    /// # Safety
    /// `this` is alive when the call starts (its waiter has not seen it set);
    /// it may be freed by the waiter once set, and is not touched after that.
    pub(super) unsafe fn set(this: *const Self) {
        // SAFETY: alive until the waiter sees it set, per the contract.
        match unsafe { &(*this).waiter } {
            Waiter::Worker { pool, me } => {
                // Copied out before the store: the latch may be gone after it.
                let (pool, me) = (pool.clone(), *me);
                // Release; pairs with the Acquire in `probe`.
                // SAFETY: still alive, as above.
                unsafe { (*this).set.store(true, Ordering::Release) };
                pool.wake(me);
            }
            Waiter::Thread { done, cv } => {
                // The waiter reads `done` under the lock, so it cannot see it
                // and free the latch before this guard is released, after
                // the notification.
                let mut g = done.lock().unwrap_or_else(|e| e.into_inner());
                *g = true;
                cv.notify_all();
                drop(g);
            }
        }
    }

    /// Blocks until set (the fallback of every wait, and the whole wait of
    /// a thread that is no worker). Each sleep is bounded.
    pub(crate) fn wait_blocking(&self) {
        match &self.waiter {
            Waiter::Worker { .. } => {
                while !self.probe() {
                    manycore_sync::thread::yield_now();
                }
            }
            Waiter::Thread { done, cv } => {
                let mut g = done.lock().unwrap_or_else(|e| e.into_inner());
                while !*g {
                    #[cfg(loom)]
                    {
                        g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
                    }
                    #[cfg(not(loom))]
                    {
                        g = cv
                            .wait_timeout(g, std::time::Duration::from_millis(10))
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                }
            }
        }
    }
}

/// A closure on its owner's stack, run by another thread.
struct StackJob<F, R> {
    latch: Latch,
    f: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<ThreadResult<R>>>,
}

impl<F, R> StackJob<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    /// # Safety
    /// The job stays alive until its latch is set, and the `JobRef` is
    /// executed at most once (it is not `Clone`).
    unsafe fn as_job_ref(&self) -> JobRef {
        unsafe fn exec<F, R>(data: *const ())
        where
            F: FnOnce() -> R + Send,
            R: Send,
        {
            // SAFETY: the owner keeps the job alive until the latch is set.
            let job = unsafe { &*data.cast::<StackJob<F, R>>() };
            // SAFETY: the executing thread owns `f` and `result` until it
            // sets the latch (the owner reads `result` only after seeing it
            // set), and the job runs once.
            let f = job.f.with_mut(|p| unsafe { (*p).take() });
            let r = match f {
                Some(f) => panic::catch_unwind(AssertUnwindSafe(f)),
                None => return,
            };
            // SAFETY: as above.
            job.result.with_mut(|p| unsafe { *p = Some(r) });
            // SAFETY: alive until this very call sets it.
            unsafe { Latch::set(&job.latch) };
        }
        JobRef {
            data: (self as *const Self).cast::<()>(),
            exec: exec::<F, R>,
        }
    }
}

/// Aborts the process if dropped: a stack job that another thread may still
/// run must not be freed by unwinding out of its owner.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("manycore-steal: unwinding out of a wait for a stack job; aborting");
        std::process::abort();
    }
}

/// Runs each of `fs` on another thread while the caller waits: `push` hands
/// the jobs over (returning a job unexecuted, with `Err`, proves that it will
/// never run), and `wait` waits for them (given a probe that is true once
/// all are done), usually doing other work meanwhile. Returns each job's
/// result, or `None` for a job that `push` gave back.
///
/// Sound whatever `push` and `wait` do: every job that was not given back is
/// waited for here (blocking, after `wait`) before this returns, and if
/// `push` or `wait` unwinds the process aborts.
pub(crate) fn run_all_elsewhere<F, R>(
    fs: Vec<F>,
    mut waiter: impl FnMut() -> Waiter,
    push: impl FnOnce(Vec<JobRef>) -> Vec<Result<(), JobRef>>,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> Vec<Option<ThreadResult<R>>>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let jobs: Box<[StackJob<F, R>]> = fs
        .into_iter()
        .map(|f| StackJob {
            latch: Latch::new(waiter()),
            f: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(None),
        })
        .collect();
    let bomb = AbortOnUnwind;
    // SAFETY: `jobs` is not dropped before every job's latch is set or its
    // `JobRef` came back (below, and `bomb` aborts on unwinding).
    let refs = jobs.iter().map(|j| unsafe { j.as_job_ref() }).collect();
    let pushed = push(refs);
    let mut taken: Vec<bool> = pushed.iter().map(Result::is_ok).collect();
    taken.resize(jobs.len(), true);
    drop(pushed);
    wait(&|| jobs.iter().zip(&taken).all(|(j, &t)| !t || j.latch.probe()));
    for (j, &t) in jobs.iter().zip(&taken) {
        if t {
            j.latch.wait_blocking();
        }
    }
    std::mem::forget(bomb);
    jobs.iter()
        .zip(&taken)
        .map(|(j, &t)| {
            // SAFETY: the latch is set (seen with Acquire, or under the lock),
            // so the executing thread is done with `result`.
            t.then(|| j.result.with_mut(|p| unsafe { (*p).take() }))
                .flatten()
        })
        .collect()
}

/// [`run_all_elsewhere`] for one job.
pub(crate) fn run_elsewhere<F, R>(
    f: F,
    waiter: Waiter,
    push: impl FnOnce(JobRef) -> Result<(), JobRef>,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> Option<ThreadResult<R>>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mut waiter = Some(waiter);
    run_all_elsewhere(
        vec![f],
        || waiter_take(&mut waiter),
        |mut refs| vec![push(refs.pop().expect("one job"))],
        wait,
    )
    .pop()
    .flatten()
}

fn waiter_take(w: &mut Option<Waiter>) -> Waiter {
    w.take().unwrap_or_else(Waiter::thread)
}

/// A job handed to a scheduler that may drop it unrun (a runtime shutting
/// down): whoever takes it out first, the runner or the owner taking it back,
/// decides whether it runs.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct Handoff(Mutex<Option<JobRef>>);

#[cfg(not(loom))]
impl Handoff {
    pub(crate) fn new(job: JobRef) -> Arc<Self> {
        Arc::new(Self(Mutex::new(Some(job))))
    }

    /// Runs the job unless it was taken back.
    pub(crate) fn run(&self) {
        let job = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(job) = job {
            job.execute();
        }
    }

    /// Takes the job back if it has not been taken to run.
    pub(crate) fn take_back(&self) -> Option<JobRef> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
