//! The progress engine: one thread per rank that initializes MPI,
//! progresses it whenever no other thread of the rank does, and finalizes
//! it.
//!
//! It initializes MPI asking for `Threading::Serialized` (any thread may
//! call MPI, one at a time: the rank's progress lock, `Shared::mpi`, makes
//! sure of that; a library that offers only `Funneled` leaves every MPI
//! call to this thread), checks with the other ranks that they run the same
//! function table and the same number of cores, and then loops:
//!
//! 1. if threads of this rank are polling MPI while they wait (a caller
//!    waiting for a reply from an engine place), keep out of their way and
//!    sleep: they receive and send for everyone, and the last of them to
//!    give up wakes the engine;
//! 2. otherwise take the progress lock and poll (`Progress::poll`): send
//!    what is queued, receive and dispatch what arrived, send what that
//!    produced;
//! 3. run a job handed in by `World::with_mpi`, if any (after sending what
//!    was queued before it);
//! 4. when idle: right after running a call on the engine place, poll for
//!    a while (`Tuning::engine_spin_us`; the caller's next message is
//!    usually microseconds away), yielding between polls once `HOT_YIELD`
//!    passed without one, unless a core of this rank is running a call and
//!    may need the CPU; then yield for a while; then sleep with a growing
//!    bound (a push to the outbox or a waiter giving up wakes it at once;
//!    an MPI arrival is seen at the next poll, within the bound, which is
//!    short while a thread of the rank sleeps until a frame arrives for it). One-way frames gathering in the outbox wake it with their
//!    first frame only, and keep its sleeps short (`MIN_PARK`) until it
//!    takes them (`Shared::take_outbox_lazy`).
//!
//! Shutdown is collective and ends only when nothing is left anywhere:
//! each rank tells every other rank it is stopping, and once a rank has
//! heard from all, its engine joins rounds of a sum all-reduce of (frames
//! sent, frames received, work still owed here) while it keeps serving;
//! the first round with sent = received and nothing owed ends every
//! engine at once (counts are taken on entry to a blocking all-reduce,
//! under the progress lock, so every frame counted as received was counted
//! as sent; equal sums mean none is in flight). Then MPI is finalized.

use crate::error::{Error, ThreadLevel};
use crate::header::{Header, Kind};
use crate::progress::Progress;
use crate::registry::{first_difference, Registry};
use crate::shared::{Outgoing, Shared};
use manycore_sync::{AdaptiveSpin, Awake, AwakeGuard, GapPredictor};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// An idle engine yields its CPU in a loop this long after its last work
/// (after its spin, if it spun; yielding, not spinning: on a machine with
/// fewer CPUs than threads, the core that runs a call, or the thread that
/// waits for a reply, needs that CPU), then sleeps, from `MIN_PARK`
/// doubling to `MAX_PARK` (the longest an MPI arrival waits for an idle
/// engine).
const YIELD: Duration = Duration::from_micros(200);
const MIN_PARK: Duration = Duration::from_micros(20);
/// How long the engine polls for a caller's next message without yielding
/// (after that it yields between looks, until `Tuning::engine_spin_us`):
/// the caller may share this engine's CPU, and then its message comes only
/// once this thread lets go of that CPU (a scheduler slice, milliseconds,
/// if it never does).
const HOT_YIELD: Duration = Duration::from_micros(20);
const MAX_PARK: Duration = Duration::from_millis(1);
/// The longest an idle engine sleeps while a thread of its rank sleeps
/// until a frame from another rank arrives for it (`Shared::expecting`):
/// nothing wakes the engine when that frame arrives, and a sleep of
/// `MAX_PARK` there would add up to a millisecond to the wait.
const AWAIT_PARK: Duration = Duration::from_micros(80);

fn level(t: Threading) -> ThreadLevel {
    match t {
        Threading::Single => ThreadLevel::Single,
        Threading::Funneled => ThreadLevel::Funneled,
        Threading::Serialized => ThreadLevel::Serialized,
        Threading::Multiple => ThreadLevel::Multiple,
    }
}

/// The engine's verdict on the thread level the MPI library provides:
/// refused below `Funneled` (the engine thread, which initialized MPI, must
/// be able to call it while the rank's other threads run); else whether
/// waiting threads may call MPI themselves, one at a time (`Serialized` or
/// better).
fn check_level(provided: ThreadLevel) -> Result<bool, Error> {
    if provided < ThreadLevel::Funneled {
        return Err(Error::ThreadLevel {
            required: ThreadLevel::Funneled,
            provided,
        });
    }
    Ok(provided >= ThreadLevel::Serialized)
}

/// Starts the engine with `rt` as this rank's runtime and waits until MPI
/// is up and the ranks agree; returns the rank's shared state.
pub(crate) fn start(
    rt: manycore_rt::Runtime,
    timeout: Option<Duration>,
) -> Result<(Arc<Shared>, JoinHandle<()>), Error> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("manycore-mpi-engine".into())
        .spawn(move || engine_main(rt, timeout, tx))
        .map_err(Error::Spawn)?;
    match rx.recv() {
        Ok(Ok(sh)) => Ok((sh, h)),
        Ok(Err(e)) => {
            let _ = h.join();
            Err(e)
        }
        Err(_) => {
            let _ = h.join();
            Err(Error::Shutdown)
        }
    }
}

fn engine_main(
    rt: manycore_rt::Runtime,
    timeout: Option<Duration>,
    tx: mpsc::Sender<Result<Arc<Shared>, Error>>,
) {
    let Some((universe, provided)) = mpi::initialize_with_threading(Threading::Serialized) else {
        let _ = tx.send(Err(Error::AlreadyInitialized));
        return;
    };
    let serialized = match check_level(level(provided)) {
        Ok(serialized) => serialized,
        Err(e) => {
            // Every rank links the same library, so every rank refuses.
            let _ = tx.send(Err(e));
            return;
        }
    };
    let world = universe.world();
    let registry = match agree(&world, rt.num_cores()) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let sh = Arc::new(Shared::new(rank, size, rt, registry, timeout, serialized));
    let _ = sh.engine.set(std::thread::current());
    // Before the first frame is dispatched: remote functions may ask for
    // the world the moment they run.
    Shared::set_current(Some(sh.clone()));
    if tx.send(Ok(sh.clone())).is_err() {
        Shared::set_current(None);
        return;
    }
    if catch_unwind(AssertUnwindSafe(|| run(&sh, &world))).is_err() {
        // The other ranks would wait for this one forever.
        eprintln!("manycore-mpi: the progress engine of rank {rank} panicked; aborting the job");
        world.abort(70);
    }
    // (Already set under the progress lock when the engine ended normally.)
    sh.engine_gone.store(true, Ordering::Release);
    // Jobs handed in too late: dropping them tells their callers.
    sh.mpi_jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    // `universe` drops here: MPI_Finalize.
}

/// Checks that every rank has the same function table and core count.
/// Collective; every rank reaches the same verdict.
fn agree(world: &SimpleCommunicator, cores: usize) -> Result<&'static Registry, Error> {
    let size = world.size() as usize;
    let reg = Registry::global();
    let (hash, dup) = match &reg {
        Ok(r) => (r.hash(), 0),
        Err(_) => (0, 1),
    };
    let mine = [hash, cores as u64, dup];
    let mut all = vec![0u64; 3 * size];
    world.all_gather_into(&mine[..], &mut all[..]);
    let rows: Vec<&[u64]> = all.chunks(3).collect();
    if let Some(r) = rows.iter().position(|x| x[2] != 0) {
        return Err(Error::DuplicateFunction(match &reg {
            Err(name) => name.clone(),
            Ok(_) => format!("(a name duplicated on rank {r})"),
        }));
    }
    let reg = reg.map_err(Error::DuplicateFunction)?;
    if rows.iter().any(|x| x[0] != rows[0][0]) {
        let tables = gather_tables(world, &reg.table());
        let r = (1..size).find(|&r| rows[r][0] != rows[0][0]).unwrap_or(0);
        let (function, on_first) = first_difference(&tables[0], &tables[r])
            .unwrap_or_else(|| ("(same names, hash differs)".into(), true));
        let (present_on, absent_on) = if on_first { (0, r) } else { (r, 0) };
        return Err(Error::RegistryMismatch {
            function,
            present_on,
            absent_on,
        });
    }
    if rows.iter().any(|x| x[1] != rows[0][1]) {
        return Err(Error::CoreMismatch {
            cores: rows.iter().map(|x| x[1] as usize).collect(),
        });
    }
    Ok(reg)
}

/// Every rank's function table, by rank (an all-gather of variable size).
fn gather_tables(world: &SimpleCommunicator, mine: &str) -> Vec<String> {
    let size = world.size() as usize;
    let len = mine.len() as i32;
    let mut lens = vec![0i32; size];
    world.all_gather_into(&len, &mut lens[..]);
    let displs: Vec<i32> = lens
        .iter()
        .scan(0, |acc, &l| {
            let d = *acc;
            *acc += l;
            Some(d)
        })
        .collect();
    let total: i32 = lens.iter().sum();
    let mut buf = vec![0u8; total as usize];
    {
        let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
        world.all_gather_varcount_into(mine.as_bytes(), &mut part);
    }
    (0..size)
        .map(|r| {
            let (d, l) = (displs[r] as usize, lens[r] as usize);
            String::from_utf8_lossy(&buf[d..d + l]).into_owned()
        })
        .collect()
}

fn run(sh: &Arc<Shared>, world: &SimpleCommunicator) {
    let mut announced = false;
    // Idle polls since the last work (no clock read while spinning), and
    // when that work was.
    let mut idle_polls = 0u32;
    let mut last_work = Instant::now();
    // The last work included a call on the engine place.
    let mut conversing = false;
    // Polling for the caller's next message (see below).
    let mut hot = false;
    let mut park = MIN_PARK;
    // With `Tuning::adaptive`: the idle engine's gaps, its wait after the
    // conversation spin, and its count among the process's awake threads
    // while it spins for a caller.
    let gaps = GapPredictor::new(YIELD);
    let mut wait: Option<AdaptiveSpin<'_>> = None;
    let mut awake: Option<AwakeGuard> = None;
    loop {
        let mut worked = false;
        if sh.kick.load(Ordering::Relaxed) && sh.kick.swap(false, Ordering::Acquire) {
            // A waiter stopped polling: its message is ours to receive.
            idle_polls = 0;
            last_work = Instant::now();
            park = MIN_PARK;
        }
        let urgent = sh.jobs_queued.load(Ordering::Acquire)
            || sh.stopping.load(Ordering::Acquire)
            || sh.abort.load(Ordering::Acquire);
        if sh.pollers.load(Ordering::Acquire) > 0 && !urgent {
            // Threads of this rank poll MPI while they wait: they receive
            // and send for everyone; competing for the lock (and a CPU, and
            // preempting them on every wakeup) would only delay them. The
            // last of them to stop polling without its message wakes us.
            std::thread::park_timeout(MAX_PARK);
            continue;
        }
        let Some(mut p) = lock(sh) else {
            // A waiting thread progresses MPI for now; look again later.
            std::thread::park_timeout(park);
            park = (park * 2).min(MAX_PARK);
            continue;
        };
        // While conversing with a caller, a poll that finds nothing tests
        // again a few times before it lets go of the lock.
        let spins = if hot { crate::progress::SPIN_TESTS } else { 0 };
        worked |= p.poll_engine(sh, world, spins);
        if let Some(job) = sh.take_job() {
            // Frames queued before the job was (by the thread that handed
            // it in, say) leave before it runs: it may wait, in a raw MPI
            // collective, for ranks that wait for those frames.
            p.drain(sh, world);
            job(world);
            worked = true;
        }
        if sh.abort.load(Ordering::Acquire) {
            eprintln!(
                "manycore-mpi: rank {} dropped its world while panicking; aborting the job",
                sh.rank
            );
            world.abort(71);
        }
        if sh.stopping.load(Ordering::Acquire) {
            if !announced {
                announced = true;
                for r in (0..sh.size).filter(|&r| r != sh.rank) {
                    let frame = Header::new(Kind::Shutdown).frame(0);
                    p.post(
                        world,
                        Outgoing {
                            to: r,
                            frame,
                            bulk: None,
                        },
                    );
                }
                continue;
            }
            if sh.shutdowns.load(Ordering::Acquire) + 1 >= sh.size {
                // Counted on entry to the all-reduce, under the progress
                // lock: nobody on this rank sends while we are inside it.
                let mine = [
                    p.sent,
                    p.received,
                    sh.busy() + (p.backlogged() + p.awaited()) as u64,
                ];
                let mut sum = [0u64; 3];
                world.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
                if sum[0] == sum[1] && sum[2] == 0 {
                    p.finish();
                    // Under the lock: no thread calls MPI after this.
                    sh.engine_gone.store(true, Ordering::Release);
                    break;
                }
            }
        }
        drop(p);
        if worked {
            idle_polls = 0;
            park = MIN_PARK;
            if let Some(w) = wait.as_mut() {
                w.found();
            }
            conversing = sh.conversing.swap(false, Ordering::Relaxed);
            hot = conversing && sh.handlers.load(Ordering::Relaxed) == 0;
            continue;
        }
        if idle_polls == 0 {
            last_work = Instant::now();
        }
        idle_polls = idle_polls.saturating_add(1);
        // The clock is read every 16th idle poll.
        if idle_polls % 16 != 0 {
            std::hint::spin_loop();
            continue;
        }
        hot = false;
        let idle = last_work.elapsed();
        let spin = if conversing {
            sh.engine_spin()
        } else {
            Duration::ZERO
        };
        let adaptive = sh.tuning().adaptive;
        if idle < spin && sh.handlers.load(Ordering::Relaxed) == 0 {
            // This engine just ran a call on the engine place, and nothing
            // here runs a call on a core (which might need this CPU): poll
            // again at once, as MPI's own blocking calls do; the caller's
            // next message is usually microseconds away. (Adaptive: counted
            // as awake, and yielding while the process has more awake
            // threads than CPUs.)
            hot = true;
            if adaptive {
                awake.get_or_insert_with(Awake::enter);
            }
            if (adaptive && Awake::crowded()) || (!adaptive && idle >= HOT_YIELD) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        awake = None;
        if adaptive {
            // Spin (pausing, or yielding when crowded) as long as this
            // engine's recent gaps say pays, then sleep.
            let w = wait.get_or_insert_with(|| AdaptiveSpin::counted(YIELD, &gaps));
            if !w.spin() {
                std::thread::park_timeout(if sh.queued() {
                    MIN_PARK
                } else {
                    bounded(sh, park)
                });
                park = (park * 2).min(MAX_PARK);
                w.slept();
            }
        } else if idle < spin + YIELD {
            std::thread::yield_now();
        } else if sh.queued() {
            // One-way frames gather in the outbox while their sender adds
            // more (`Shared::take_outbox_lazy`): look again soon, without
            // taking a CPU meanwhile (the sender sends a full batch itself).
            std::thread::park_timeout(MIN_PARK);
        } else {
            std::thread::park_timeout(bounded(sh, park));
            park = (park * 2).min(MAX_PARK);
        }
    }
}

/// The idle engine's sleep `park`, bounded by `AWAIT_PARK` while a thread
/// of this rank sleeps until a frame from another rank arrives for it.
fn bounded(sh: &Shared, park: Duration) -> Duration {
    if sh.expecting.load(Ordering::Acquire) > 0 {
        park.min(AWAIT_PARK)
    } else {
        park
    }
}

/// The progress lock for the engine: taken if free (or if only the engine
/// ever takes it); `None` while a waiting thread holds it.
fn lock(sh: &Shared) -> Option<std::sync::MutexGuard<'_, Progress>> {
    match sh.mpi.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests;
