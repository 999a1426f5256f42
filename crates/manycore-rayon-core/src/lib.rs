//! rayon-core's public API, implemented by `manycore-steal`: lazy on-stack
//! fork-join after Markus Leberecht, *The MuSE System: A Flexible
//! Combination of On-Stack Execution and Work-Stealing*. Every `join` runs
//! on the stack like a sequential call, and work moves to another thread
//! only when an idle worker asks for it.
//!
//! Patch it in place of the real `rayon-core` and the `rayon` crate's
//! parallel iterators run on manycore unchanged (the crate's README shows
//! the lines):
//!
//! ```toml
//! [patch.crates-io]
//! rayon-core = { path = "path/to/manycore/crates/manycore-rayon-core" }
//! ```
//!
//! Differences from rayon-core, all at the edges:
//!
//! * A pool has at most [`max_num_threads`] (64) workers; more are clamped.
//! * [`ThreadPoolBuilder::use_current_thread`] is not supported: `build`
//!   then fails with an error whose `io::ErrorKind` is `Unsupported`.
//! * [`ThreadPoolBuilder::breadth_first`] is accepted and ignored (it is
//!   deprecated in rayon-core too).
//! * `MANYCORE_NUM_THREADS` is read before `RAYON_NUM_THREADS`.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::io;

pub use manycore_steal::{
    broadcast, current_num_threads, current_thread_has_pending_tasks, current_thread_index,
    in_place_scope, in_place_scope_fifo, join, join_context, max_num_threads, scope, scope_fifo,
    spawn, spawn_broadcast, spawn_fifo, yield_local, yield_now, BroadcastContext, FnContext, Scope,
    ScopeFifo, Yield,
};

/// A pool of worker threads (rayon-core's `ThreadPool`), built with
/// [`ThreadPoolBuilder`].
pub struct ThreadPool {
    inner: manycore_steal::ThreadPool,
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.inner.current_num_threads())
            .finish_non_exhaustive()
    }
}

impl ThreadPool {
    /// Deprecated in rayon-core: use [`ThreadPoolBuilder::build`].
    #[deprecated(note = "Use `ThreadPoolBuilder::build`")]
    #[allow(deprecated)]
    pub fn new(configuration: Configuration) -> Result<ThreadPool, Box<dyn Error>> {
        configuration.build()
    }

    /// Runs `op` on a worker of this pool; the caller waits (see
    /// `manycore_steal::ThreadPool::install`).
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.inner.install(op)
    }

    /// Runs `op` on every worker of this pool; returns the results in order.
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        self.inner.broadcast(op)
    }

    /// The number of workers of this pool.
    #[inline]
    pub fn current_num_threads(&self) -> usize {
        self.inner.current_num_threads()
    }

    /// The calling thread's index if it is a worker of this pool.
    #[inline]
    pub fn current_thread_index(&self) -> Option<usize> {
        self.inner.current_thread_index()
    }

    /// Whether the calling worker of this pool has queued spawns.
    #[inline]
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        self.inner.current_thread_has_pending_tasks()
    }

    /// [`join`] in this pool.
    pub fn join<A, B, RA, RB>(&self, oper_a: A, oper_b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.inner.join(oper_a, oper_b)
    }

    /// [`scope`] in this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.inner.scope(op)
    }

    /// [`scope_fifo`] in this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.inner.scope_fifo(op)
    }

    /// [`in_place_scope`] whose spawns go to this pool.
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        self.inner.in_place_scope(op)
    }

    /// [`in_place_scope_fifo`] whose spawns go to this pool.
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        self.inner.in_place_scope_fifo(op)
    }

    /// [`spawn`] into this pool.
    pub fn spawn<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner.spawn(op)
    }

    /// [`spawn_fifo`] into this pool.
    pub fn spawn_fifo<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.inner.spawn_fifo(op)
    }

    /// [`spawn_broadcast`] on this pool.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        self.inner.spawn_broadcast(op)
    }

    /// [`yield_now`] if the calling thread is a worker of this pool.
    pub fn yield_now(&self) -> Option<Yield> {
        self.inner.yield_now()
    }

    /// [`yield_local`] if the calling thread is a worker of this pool.
    pub fn yield_local(&self) -> Option<Yield> {
        self.inner.yield_local()
    }
}

/// Why a pool could not be built.
#[derive(Debug)]
pub struct ThreadPoolBuildError {
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    GlobalPoolAlreadyInitialized,
    IOError(io::Error),
}

impl ThreadPoolBuildError {
    fn new(kind: ErrorKind) -> Self {
        Self { kind }
    }
}

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::GlobalPoolAlreadyInitialized => {
                f.write_str("The global thread pool has already been initialized.")
            }
            ErrorKind::IOError(e) => e.fmt(f),
        }
    }
}

impl Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.kind {
            ErrorKind::GlobalPoolAlreadyInitialized => None,
            ErrorKind::IOError(e) => Some(e),
        }
    }
}

impl From<manycore_steal::GlobalPoolError> for ThreadPoolBuildError {
    fn from(e: manycore_steal::GlobalPoolError) -> Self {
        match e {
            manycore_steal::GlobalPoolError::Io(e) => Self::new(ErrorKind::IOError(e)),
            _ => Self::new(ErrorKind::GlobalPoolAlreadyInitialized),
        }
    }
}

/// A worker thread to start, handed to a [`ThreadPoolBuilder::spawn_handler`].
pub struct ThreadBuilder {
    inner: manycore_steal::WorkerThread,
    name: Option<String>,
}

impl fmt::Debug for ThreadBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl ThreadBuilder {
    /// The worker's index in its pool.
    pub fn index(&self) -> usize {
        self.inner.index()
    }
    /// The name the builder gave it, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// The stack size the builder asked for, if any.
    pub fn stack_size(&self) -> Option<usize> {
        self.inner.stack_size()
    }
    /// Runs the worker on the calling thread until the pool is dropped.
    pub fn run(self) {
        self.inner.run()
    }
}

mod spawn {
    use super::ThreadBuilder;
    use std::io;

    /// How a builder starts its threads (rayon-core's `ThreadSpawn`).
    pub trait ThreadSpawn {
        #[doc(hidden)]
        fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()>;
        #[doc(hidden)]
        fn is_default() -> bool {
            false
        }
    }

    /// Starts threads with `std::thread::Builder`.
    #[derive(Debug, Default)]
    pub struct DefaultSpawn;

    impl ThreadSpawn for DefaultSpawn {
        fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
            let mut b = std::thread::Builder::new();
            if let Some(name) = thread.name() {
                b = b.name(name.to_owned());
            }
            if let Some(size) = thread.stack_size() {
                b = b.stack_size(size);
            }
            b.spawn(move || thread.run()).map(drop)
        }
        fn is_default() -> bool {
            true
        }
    }

    /// Starts threads with a user's closure.
    #[derive(Debug)]
    pub struct CustomSpawn<F>(pub(super) F);

    impl<F> ThreadSpawn for CustomSpawn<F>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
            (self.0)(thread)
        }
    }
}

use spawn::{CustomSpawn, DefaultSpawn, ThreadSpawn};

type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;
type StartHandler = dyn Fn(usize) + Send + Sync;
type ExitHandler = dyn Fn(usize) + Send + Sync;

/// Configures a [`ThreadPool`] or the global pool (rayon-core's builder).
pub struct ThreadPoolBuilder<S = DefaultSpawn> {
    num_threads: usize,
    use_current_thread: bool,
    panic_handler: Option<Box<PanicHandler>>,
    get_thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    stack_size: Option<usize>,
    start_handler: Option<Box<StartHandler>>,
    exit_handler: Option<Box<ExitHandler>>,
    spawn_handler: S,
    breadth_first: bool,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        Self {
            num_threads: 0,
            use_current_thread: false,
            panic_handler: None,
            get_thread_name: None,
            stack_size: None,
            start_handler: None,
            exit_handler: None,
            spawn_handler: DefaultSpawn,
            breadth_first: false,
        }
    }
}

impl<S> fmt::Debug for ThreadPoolBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let closure = |o: bool| if o { "Some(<closure>)" } else { "None" };
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("use_current_thread", &self.use_current_thread)
            .field("get_thread_name", &closure(self.get_thread_name.is_some()))
            .field("panic_handler", &closure(self.panic_handler.is_some()))
            .field("stack_size", &self.stack_size)
            .field("start_handler", &closure(self.start_handler.is_some()))
            .field("exit_handler", &closure(self.exit_handler.is_some()))
            .field("breadth_first", &self.breadth_first)
            .finish()
    }
}

impl ThreadPoolBuilder {
    /// A builder with default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a pool whose threads are scoped: `wrapper` runs on each new
    /// thread (and must call [`ThreadBuilder::run`]), `with_pool` gets the
    /// pool, and all threads have exited when this returns.
    pub fn build_scoped<W, F, R>(self, wrapper: W, with_pool: F) -> Result<R, ThreadPoolBuildError>
    where
        W: Fn(ThreadBuilder) + Sync,
        F: FnOnce(&ThreadPool) -> R,
    {
        std::thread::scope(|s| {
            let wrapper = &wrapper;
            let pool = self
                .spawn_handler(|thread| {
                    let mut b = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        b = b.name(name.to_owned());
                    }
                    if let Some(size) = thread.stack_size() {
                        b = b.stack_size(size);
                    }
                    b.spawn_scoped(s, move || wrapper(thread)).map(drop)
                })
                .build()?;
            let r = with_pool(&pool);
            drop(pool);
            Ok(r)
        })
    }
}

impl<S> ThreadPoolBuilder<S> {
    /// Starts the pool's threads with `spawn` instead of std's builder.
    pub fn spawn_handler<F>(self, spawn: F) -> ThreadPoolBuilder<CustomSpawn<F>>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        ThreadPoolBuilder {
            spawn_handler: CustomSpawn(spawn),
            num_threads: self.num_threads,
            use_current_thread: self.use_current_thread,
            panic_handler: self.panic_handler,
            get_thread_name: self.get_thread_name,
            stack_size: self.stack_size,
            start_handler: self.start_handler,
            exit_handler: self.exit_handler,
            breadth_first: self.breadth_first,
        }
    }

    /// Names thread i `closure(i)`.
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.get_thread_name = Some(Box::new(closure));
        self
    }

    /// Number of threads; 0 (the default) means `MANYCORE_NUM_THREADS`,
    /// `RAYON_NUM_THREADS` or the process's CPUs. At most 64.
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = num_threads;
        self
    }

    /// Not supported here: `build` fails (`io::ErrorKind::Unsupported`).
    pub fn use_current_thread(mut self) -> Self {
        self.use_current_thread = true;
        self
    }

    /// Called with the payload of a panic in a spawned job; without one such
    /// a panic aborts the process.
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Box::new(panic_handler));
        self
    }

    /// Stack size of the worker threads.
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.stack_size = Some(stack_size);
        self
    }

    /// Accepted and ignored (deprecated in rayon-core).
    #[deprecated(note = "use a `scope_fifo` or `spawn_fifo` instead")]
    pub fn breadth_first(mut self) -> Self {
        self.breadth_first = true;
        self
    }

    /// Called on each thread, with its index, when it starts.
    pub fn start_handler<H>(mut self, start_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.start_handler = Some(Box::new(start_handler));
        self
    }

    /// Called on each thread, with its index, before it exits.
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.exit_handler = Some(Box::new(exit_handler));
        self
    }

    /// The number of threads a pool built now would get.
    fn get_num_threads(&self) -> usize {
        if self.num_threads > 0 {
            self.num_threads.min(max_num_threads())
        } else {
            manycore_steal::default_num_threads()
        }
    }

    /// The manycore builder, and the spawner.
    #[allow(clippy::type_complexity)]
    fn into_parts(
        self,
    ) -> Result<
        (
            manycore_steal::ThreadPoolBuilder,
            S,
            Option<Box<dyn FnMut(usize) -> String>>,
        ),
        ThreadPoolBuildError,
    > {
        if self.use_current_thread {
            return Err(ThreadPoolBuildError::new(ErrorKind::IOError(
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "manycore's rayon-core does not support use_current_thread",
                ),
            )));
        }
        let n = self.get_num_threads();
        let mut b = manycore_steal::ThreadPoolBuilder::new().num_threads(n);
        if let Some(s) = self.stack_size {
            b = b.stack_size(s);
        }
        if let Some(h) = self.start_handler {
            b = b.start_handler(h);
        }
        if let Some(h) = self.exit_handler {
            b = b.exit_handler(h);
        }
        if let Some(h) = self.panic_handler {
            b = b.panic_handler(h);
        }
        Ok((b, self.spawn_handler, self.get_thread_name))
    }
}

impl<S: ThreadSpawn> ThreadPoolBuilder<S> {
    /// Builds the pool.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        let (b, mut spawn, mut name) = self.into_parts()?;
        b.build_with(|w| spawn.spawn(thread_builder(w, &mut name)))
            .map(|inner| ThreadPool { inner })
            .map_err(|e| ThreadPoolBuildError::new(ErrorKind::IOError(e)))
    }

    /// Makes this configuration the global pool's; fails if the global pool
    /// already exists (it starts on first use).
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        let (b, mut spawn, mut name) = self.into_parts()?;
        b.build_global_with(|w| spawn.spawn(thread_builder(w, &mut name)))
            .map_err(ThreadPoolBuildError::from)
    }
}

/// Names a worker as it is started (in index order, as rayon-core does: a
/// naming closure that panics leaves the threads before it started).
#[allow(clippy::type_complexity)]
fn thread_builder(
    inner: manycore_steal::WorkerThread,
    name: &mut Option<Box<dyn FnMut(usize) -> String>>,
) -> ThreadBuilder {
    let name = name.as_mut().map(|f| f(inner.index()));
    ThreadBuilder { inner, name }
}

/// Deprecated in rayon-core: use [`ThreadPoolBuilder`].
#[deprecated(note = "Use `ThreadPoolBuilder`")]
#[derive(Default)]
pub struct Configuration {
    builder: ThreadPoolBuilder,
}

#[allow(deprecated)]
impl fmt::Debug for Configuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.builder.fmt(f)
    }
}

#[allow(deprecated)]
impl Configuration {
    /// A configuration with default settings.
    pub fn new() -> Configuration {
        Configuration::default()
    }
    /// Builds a pool.
    pub fn build(self) -> Result<ThreadPool, Box<dyn Error + 'static>> {
        self.builder.build().map_err(Box::from)
    }
    /// See [`ThreadPoolBuilder::thread_name`].
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.builder = self.builder.thread_name(closure);
        self
    }
    /// See [`ThreadPoolBuilder::num_threads`].
    pub fn num_threads(mut self, num_threads: usize) -> Configuration {
        self.builder = self.builder.num_threads(num_threads);
        self
    }
    /// See [`ThreadPoolBuilder::panic_handler`].
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Configuration
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.builder = self.builder.panic_handler(panic_handler);
        self
    }
    /// See [`ThreadPoolBuilder::stack_size`].
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.builder = self.builder.stack_size(stack_size);
        self
    }
    /// Ignored, as [`ThreadPoolBuilder::breadth_first`].
    pub fn breadth_first(mut self) -> Self {
        self.builder = self.builder.breadth_first();
        self
    }
    /// See [`ThreadPoolBuilder::start_handler`].
    pub fn start_handler<H>(mut self, start_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.start_handler(start_handler);
        self
    }
    /// See [`ThreadPoolBuilder::exit_handler`].
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Configuration
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.exit_handler(exit_handler);
        self
    }
}

/// Deprecated in rayon-core: use [`ThreadPoolBuilder::build_global`].
#[deprecated(note = "use `ThreadPoolBuilder::build_global`")]
#[allow(deprecated)]
pub fn initialize(config: Configuration) -> Result<(), Box<dyn Error>> {
    config.builder.build_global().map_err(Box::from)
}
