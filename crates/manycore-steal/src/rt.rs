//! Integration with `manycore-rt`: a runtime's cores become the workers of
//! one steal pool. Thieves are idle cores: the runtime calls the pool's
//! [`IdleHook`] when a core finds nothing to do, which runs a job handed to
//! the core or announces demand; a victim's heartbeat polls the core's
//! messages with [`manycore_rt::poll_once`] (MuSE's `MAX_SEQUENTIAL` poll).

use crate::pool::{self, Host, Pool};
use crate::raw;
use manycore_rt::{Core, Error, IdleHook, InvokeError, Runtime};
use std::panic;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

struct RtHost {
    cores: Vec<Core>,
}

impl Host for RtHost {
    fn poll_once(&self) -> usize {
        manycore_rt::poll_once()
    }
    fn notify(&self, i: usize) {
        // Not sticky: the job is already in the mailbox, and the core's
        // sleep re-check asks the hook's `pending` (below) after announcing
        // itself, so a core deciding to sleep sees it or is woken.
        self.cores[i].wake();
    }
}

struct Hook(Arc<Pool>);

impl IdleHook for Hook {
    fn on_idle(&self, core: usize) -> bool {
        core < self.0.len() && Pool::on_idle(&self.0, core)
    }
    fn pending(&self, core: usize) -> bool {
        // A frame handed to the core, or queued jobs (spawns, broadcasts)
        // that it would take in `on_idle`.
        core < self.0.len() && self.0.has_work(core)
    }
}

/// The pools of attached runtimes, by runtime id.
static REGISTRY: Mutex<Vec<(u64, Weak<Pool>)>> = Mutex::new(Vec::new());

fn lookup(id: u64) -> Option<Arc<Pool>> {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.iter()
        .find(|(i, _)| *i == id)
        .and_then(|(_, w)| w.upgrade())
}

/// Makes `rt`'s cores steal from each other: installs the steal pool's idle
/// hook (once; later calls are no-ops). [`StealExt::install`] calls it.
///
/// Fails with [`Error::HookAlreadySet`] if another idle hook is installed.
/// The steal pool lives as long as the runtime keeps its idle hook (the
/// pool holds the runtime's core handles, so in practice until process exit).
pub fn attach(rt: &Runtime) -> Result<(), Error> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|(_, w)| w.strong_count() > 0);
    if reg.iter().any(|(i, _)| *i == rt.id()) {
        return Ok(());
    }
    let host = RtHost {
        cores: rt.cores().to_vec(),
    };
    // An owner waiting for a stolen job spins as briefly as the runtime's
    // idle policy allows, then sleeps.
    let spin = rt
        .idle_policy()
        .spin_budget()
        .min(Duration::from_micros(20));
    let pool = Arc::new(Pool::new(rt.num_cores(), Box::new(host), spin));
    rt.set_idle_hook(Arc::new(Hook(pool.clone())))?;
    reg.push((rt.id(), Arc::downgrade(&pool)));
    Ok(())
}

/// At a thread's first heartbeat: bind it if it is a core of an attached runtime.
pub(crate) fn attach_current_thread() {
    if let Some(core) = manycore_rt::current() {
        if let Some(pool) = lookup(core.runtime_id()) {
            if core.index() < pool.len() {
                pool::bind(&pool, core.index());
            }
        }
    }
}

/// Entering fork-join code on a runtime from outside it.
pub trait StealExt {
    /// Runs `f` on core 0 (attaching the runtime first, see [`attach`]) and
    /// returns its result; `join`s inside can be stolen by the other cores.
    /// From a core of this runtime, runs `f` right here. A panic in `f`
    /// propagates to the caller with its original payload.
    ///
    /// `f` may borrow from the caller: the caller waits until `f` has
    /// finished (also when it panics) before it returns or resumes the
    /// panic. A worker of a [`ThreadPool`](crate::ThreadPool) waits while
    /// running its own pool's work; any other thread blocks.
    ///
    /// From outside, the other cores are woken as `f` is sent, so that they
    /// are up and asking for work by the time `f`'s first joins can hand
    /// them some (on a virtual machine a sleeping core can take tens of
    /// microseconds to run again); with nothing to steal they go back to
    /// sleep after their idle policy's spin.
    ///
    /// # Panics
    /// If the runtime is shut down before `f` runs, or has another idle
    /// hook installed.
    fn install<R, F>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send;
}

impl StealExt for Runtime {
    fn install<R, F>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if let Err(e) = attach(self) {
            panic!("manycore-steal: cannot attach the runtime: {e}");
        }
        if matches!(manycore_rt::current(), Some(c) if c.runtime_id() == self.id()) {
            return f();
        }
        // Wake the other cores now, while core 0 wakes for `f`: a sleeping
        // core can take tens of microseconds to run again (on a virtual
        // machine the vCPU halts), and woken here it is up and looking for
        // work (spinning for its idle policy's budget) by the time `f`'s
        // first join can hand it some, instead of starting to wake only then
        // (docs/notes/2026-11-25-steal-install-wake.md).
        for c in self.cores().iter().skip(1) {
            c.notify();
        }
        let mut failure = None;
        let r = raw::run_elsewhere(
            move || {
                attach_current_thread();
                raw::with_local(|l| l.last_poll.set(0));
                f()
            },
            crate::thread_pool::waiter(),
            |job| {
                // The message holds the job through a handoff: if the
                // runtime drops the message unrun, the job comes back here
                // and is never run.
                let h = raw::Handoff::new(job);
                let h2 = h.clone();
                let inv = self.core(0).call(move || h2.run());
                match inv.wait() {
                    Ok(()) => Ok(()),
                    Err(e) => match h.take_back() {
                        Some(job) => {
                            failure = Some(e);
                            Err(job)
                        }
                        // Taken to run: it sets its latch when done.
                        None => Ok(()),
                    },
                }
            },
            crate::thread_pool::wait,
        );
        match r {
            Some(Ok(r)) => r,
            Some(Err(p)) => panic::resume_unwind(p),
            None => match failure {
                Some(InvokeError::Panicked(m)) => panic!("{m}"),
                Some(e) => panic!("manycore-steal: install failed: {e}"),
                None => panic!("manycore-steal: install failed"),
            },
        }
    }
}

/// Steal counters of an attached runtime (zero if it is not attached).
pub fn steal_stats(rt: &Runtime) -> crate::StealStats {
    lookup(rt.id()).map(|p| p.stats()).unwrap_or_default()
}
