//! `World`: this process's rank of an MPI job, with its local manycore
//! runtime and its progress engine; places, remote objects, collectives
//! and the distributed join hang off it.

use crate::engine;
use crate::error::Error;
use crate::place::Place;
use crate::shared::Shared;
use manycore_rt::{IdlePolicy, Runtime};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Configures a [`World`]; see [`World::builder`].
#[derive(Debug, Clone)]
pub struct Builder {
    cores: usize,
    idle: IdlePolicy,
    pin: bool,
    timeout: Option<Duration>,
}

impl Builder {
    /// Cores of the local runtime on every rank (the same on all; checked).
    /// Default 1.
    pub fn cores(mut self, n: usize) -> Self {
        self.cores = n;
        self
    }

    /// The local cores' idle policy. Default `Sleep`: ranks usually share a
    /// machine's CPUs with other ranks, where spinning cores steal time.
    pub fn idle(mut self, policy: IdlePolicy) -> Self {
        self.idle = policy;
        self
    }

    /// Pin the local cores to CPUs. Default off: several ranks on one
    /// machine would pin their core 0 to the same CPU.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Bounds the waits of collectives and of a distributed join's idle
    /// ranks for their partners ([`Error::Timeout`] when it expires).
    /// Default: no bound (a rank that dies aborts the job under MPI).
    ///
    /// Every `Duration` is accepted. `Duration::MAX`, like any bound too
    /// long for an `Instant`, means no bound. `Duration::ZERO` means no
    /// patience: a collective gives up with [`Error::Timeout`] as soon as
    /// its short spin (well under a millisecond) ends without a partner's
    /// part, and a join's root as soon as its result is not in; only ranks
    /// in lockstep get through. Calls are bounded by their callers
    /// ([`Pending::wait_timeout`](crate::Pending::wait_timeout)), not by
    /// this, and so is [`World::finalize`].
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    /// Starts the local runtime and the progress engine, initializes MPI
    /// and checks, with every rank, that all run the same remote functions
    /// with the same number of cores. Collective.
    pub fn init(self) -> Result<World, Error> {
        if self.cores > usize::from(u16::MAX) {
            // A frame names its core in 16 bits, and u16::MAX names the
            // engine place.
            return Err(Error::Runtime(manycore_rt::Error::InvalidConfig(format!(
                "{} cores per rank; a frame can name {}",
                self.cores,
                u16::MAX
            ))));
        }
        let rt = Runtime::builder()
            .cores(self.cores)
            .idle(self.idle)
            .pin(self.pin)
            .name("mpi-core")
            .build()
            .map_err(Error::Runtime)?;
        let (shared, engine) = engine::start(rt, self.timeout)?;
        Ok(World {
            shared,
            engine: Some(engine),
        })
    }
}

/// This process's rank of an MPI job. The value [`World::init`] returns
/// owns the rank: [`finalize`](World::finalize) it (or drop it) to shut the
/// job down, which is collective. [`World::current`] hands out more handles
/// that do not own it.
pub struct World {
    pub(crate) shared: Arc<Shared>,
    engine: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rank", &self.shared.rank)
            .field("size", &self.shared.size)
            .field("cores", &self.shared.cores)
            .field("owner", &self.engine.is_some())
            .finish()
    }
}

impl World {
    /// [`World::builder`]`().init()`.
    pub fn init() -> Result<World, Error> {
        Self::builder().init()
    }

    /// A builder with the defaults (1 core, `Sleep`, unpinned, no timeout).
    pub fn builder() -> Builder {
        Builder {
            cores: 1,
            idle: IdlePolicy::Sleep,
            pin: false,
            timeout: None,
        }
    }

    /// A handle to this process's world (from any thread, e.g. inside a
    /// remote function), if one is running. It does not own the world.
    pub fn current() -> Option<World> {
        Shared::current().map(|shared| World {
            shared,
            engine: None,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.shared.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Cores of the local runtime (the same on every rank).
    pub fn cores(&self) -> usize {
        self.shared.cores
    }

    /// This rank's local runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.shared.rt
    }

    /// The place (rank, core). Calls to a place that does not exist fail
    /// with `NoSuchRank` or `NoSuchCore`. `core` may be
    /// [`Place::ENGINE`]: see [`engine_place`](Self::engine_place).
    pub fn place(&self, rank: usize, core: usize) -> Place {
        Place {
            shared: self.shared.clone(),
            rank,
            core,
        }
    }

    /// The engine place of `rank`: a function called there runs on the
    /// thread that is progressing that rank's MPI when the call arrives (its
    /// progress engine, or a thread of that rank waiting for a message), and
    /// replies at once, without a handoff to a core and back: the shortest
    /// round trip. Like an interrupt handler, such a function must be short
    /// and must not wait: a call it waits for fails with
    /// [`CallError::WouldBlock`](crate::CallError::WouldBlock), a collective
    /// or `with_mpi` with [`Error::WouldBlock`]. Methods of remote objects
    /// run on their object's core, never here.
    pub fn engine_place(&self, rank: usize) -> Place {
        self.place(rank, Place::ENGINE)
    }

    /// How this rank drives MPI now (see [`Tuning`](crate::Tuning)).
    #[doc(hidden)]
    pub fn tuning(&self) -> crate::Tuning {
        self.shared.tuning()
    }

    /// Changes how this rank drives MPI, for benchmarks that compare the
    /// ways in one job. Every rank may choose on its own; frames already
    /// queued keep their order.
    #[doc(hidden)]
    pub fn set_tuning(&self, t: crate::Tuning) {
        self.shared.set_tuning(t);
        self.shared.wake_engine();
    }

    /// Whether threads other than the engine may call MPI here (the
    /// library provides `Threading::Serialized` or better); without it,
    /// waiting threads never progress MPI themselves.
    pub fn waiters_progress(&self) -> bool {
        self.shared.serialized
    }

    /// Runs `f` on the progress engine's thread, holding the rank's
    /// progress lock (so no other thread calls MPI meanwhile), with the
    /// world communicator, and returns its result: raw MPI beside the
    /// runtime's own traffic. Nothing on this rank progresses the crate's
    /// frames while `f` runs, so `f` must not wait for anything that needs
    /// them; a collective MPI call inside `f` must be made by every rank's
    /// `f`. Use tags other than 1 and 2 (the crate's), and no `MPI_ANY_TAG`
    /// receive (it could take the crate's messages). Blocks the calling
    /// thread; fails with [`Error::WouldBlock`] on a thread that is itself
    /// progressing MPI (a function running on the engine place).
    pub fn with_mpi<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mpi::topology::SimpleCommunicator) -> R + Send + 'static,
    {
        if self.shared.engine_gone.load(Ordering::Acquire) {
            return Err(Error::Shutdown);
        }
        if crate::progress::progressing() {
            return Err(Error::WouldBlock);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let mut q = self
                .shared
                .mpi_jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            q.push_back(Box::new(move |c| {
                let _ = tx.send(f(c));
            }));
            self.shared.jobs_queued.store(true, Ordering::Release);
        }
        if self.shared.engine_gone.load(Ordering::Acquire) {
            self.shared
                .mpi_jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        } else if let Some(t) = self.shared.engine.get() {
            t.unpark();
        }
        rx.recv().map_err(|_| Error::Shutdown)
    }

    /// Shuts the job down: waits until no frame is in flight and no call
    /// is owed on any rank, finalizes MPI and stops the local runtime.
    /// Collective. Only the handle from `init` does anything here.
    pub fn finalize(mut self) -> Result<(), Error> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), Error> {
        let Some(engine) = self.engine.take() else {
            return Ok(());
        };
        self.shared.stopping.store(true, Ordering::Release);
        if let Some(t) = self.shared.engine.get() {
            t.unpark();
        }
        let r = engine.join();
        Shared::set_current(None);
        self.shared.rt.shutdown();
        crate::pending::release_kept(&self.shared);
        r.map_err(|_| Error::Shutdown)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if self.engine.is_some() && std::thread::panicking() {
            // Unwinding out of the rank's program: the other ranks may wait
            // for this one in a collective, so a collective shutdown could
            // never end. Abort the job, as MPI does on its own errors.
            self.shared.abort.store(true, Ordering::Release);
            if let Some(t) = self.shared.engine.get() {
                t.unpark();
            }
            if let Some(engine) = self.engine.take() {
                let _ = engine.join();
            }
            return;
        }
        let _ = self.stop();
    }
}
