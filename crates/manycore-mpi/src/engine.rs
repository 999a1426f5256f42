//! The progress engine: one thread per rank that owns every MPI call.
//!
//! It initializes MPI asking for `Threading::Funneled` (only the thread
//! that initialized MPI calls it, which is exactly this design: the engine
//! initializes, calls and finalizes; nobody else touches MPI), checks with
//! the other ranks that they run the same function table and the same
//! number of cores, and then loops:
//!
//! 1. drain the outbox: each frame (and its bulk, as a second message) goes
//!    out with a non-blocking send from its own buffer;
//! 2. reclaim the buffers of sends that completed;
//! 3. run a job handed in by `World::with_mpi`, if any;
//! 4. receive what arrived (matched probe, then a receive into a vector of
//!    the exact size) and hand each frame to `dispatch`;
//! 5. when idle, yield for a while, then sleep with a growing bound
//!    (a push to the outbox wakes it at once; an MPI arrival is seen at the
//!    next poll, within the bound).
//!
//! Shutdown is collective and ends only when nothing is left anywhere:
//! each rank tells every other rank it is stopping, and once a rank has
//! heard from all, its engine joins rounds of a sum all-reduce of (frames
//! sent, frames received, work still owed here) while it keeps serving;
//! the first round with sent = received and nothing owed ends every
//! engine at once (counts are taken on entry to a blocking all-reduce, so
//! every frame counted as received was counted as sent; equal sums mean
//! none is in flight). Then MPI is finalized.

use crate::dispatch;
use crate::error::{Error, ThreadLevel};
use crate::header::{Header, Kind};
use crate::raw::OwnedSend;
use crate::registry::{first_difference, Registry};
use crate::shared::Shared;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Threading;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Tag;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The tag of frames.
const FRAME_TAG: Tag = 1;
/// The tag of bulk messages (each follows its frame from the same rank).
const BULK_TAG: Tag = 2;
/// Frames received per loop before the outbox gets its turn again.
const MAX_BATCH: usize = 64;
/// An idle engine yields its CPU in a loop this long after its last work
/// (not a pure spin: on a machine with fewer CPUs than threads, the core
/// that runs the call, or the caller that waits for the reply, needs that
/// CPU), then
/// sleeps, from `MIN_PARK` doubling to `MAX_PARK` (the longest an MPI
/// arrival waits for an idle engine).
const YIELD: Duration = Duration::from_micros(200);
const MIN_PARK: Duration = Duration::from_micros(20);
const MAX_PARK: Duration = Duration::from_millis(1);

fn level(t: Threading) -> ThreadLevel {
    match t {
        Threading::Single => ThreadLevel::Single,
        Threading::Funneled => ThreadLevel::Funneled,
        Threading::Serialized => ThreadLevel::Serialized,
        Threading::Multiple => ThreadLevel::Multiple,
    }
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
    let Some((universe, provided)) = mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = tx.send(Err(Error::AlreadyInitialized));
        return;
    };
    let provided = level(provided);
    if provided < ThreadLevel::Funneled {
        // Every rank links the same library, so every rank refuses.
        let _ = tx.send(Err(Error::ThreadLevel {
            required: ThreadLevel::Funneled,
            provided,
        }));
        return;
    }
    let world = universe.world();
    let registry = match agree(&world, rt.num_cores()) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let sh = Arc::new(Shared::new(rank, size, rt, registry, timeout));
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

/// The bulk message that follows a frame from `from`: the sender posted it
/// right after the frame, so it is on its way; keep our own sends moving
/// while waiting (the sender may be waiting for one of them).
fn receive_bulk(world: &SimpleCommunicator, from: usize, inflight: &mut Vec<OwnedSend>) -> Vec<u8> {
    let src = world.process_at_rank(from as i32);
    loop {
        if let Some(m) = src.immediate_matched_probe_with_tag(BULK_TAG) {
            return m.matched_receive_vec::<u8>().0;
        }
        inflight.retain_mut(|s| !s.test());
        std::hint::spin_loop();
    }
}

fn run(sh: &Arc<Shared>, world: &SimpleCommunicator) {
    let mut batch = VecDeque::new();
    let mut inflight: Vec<OwnedSend> = Vec::new();
    let (mut sent, mut received) = (0u64, 0u64);
    let mut announced = false;
    let mut last_work = Instant::now();
    let mut park = MIN_PARK;
    loop {
        let mut worked = false;
        sh.take_outbox(&mut batch);
        for o in batch.drain(..) {
            let dest = world.process_at_rank(o.to as i32);
            inflight.push(OwnedSend::post(&dest, o.frame, FRAME_TAG));
            if let Some(b) = o.bulk {
                inflight.push(OwnedSend::post(&dest, b, BULK_TAG));
            }
            sent += 1;
            worked = true;
        }
        inflight.retain_mut(|s| !s.test());
        let job = sh
            .mpi_jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        if let Some(job) = job {
            job(world);
            worked = true;
        }
        for _ in 0..MAX_BATCH {
            let Some(m) = world
                .any_process()
                .immediate_matched_probe_with_tag(FRAME_TAG)
            else {
                break;
            };
            let (frame, status) = m.matched_receive_vec::<u8>();
            let from = status.source_rank() as usize;
            received += 1;
            worked = true;
            let bulk = match Header::parse(&frame) {
                Some(h) if h.has(Header::BULK) => Some(receive_bulk(world, from, &mut inflight)),
                _ => None,
            };
            dispatch::deliver(sh, from, frame, bulk);
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
                    let dest = world.process_at_rank(r as i32);
                    inflight.push(OwnedSend::post(
                        &dest,
                        Header::new(Kind::Shutdown).frame(0),
                        FRAME_TAG,
                    ));
                    sent += 1;
                }
                continue;
            }
            if sh.shutdowns.load(Ordering::Acquire) + 1 >= sh.size {
                let mine = [sent, received, sh.busy()];
                let mut sum = [0u64; 3];
                world.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::sum());
                if sum[0] == sum[1] && sum[2] == 0 {
                    break;
                }
            }
        }
        if worked {
            last_work = Instant::now();
            park = MIN_PARK;
            continue;
        }
        let idle = last_work.elapsed();
        if idle < YIELD {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(park);
            park = (park * 2).min(MAX_PARK);
        }
    }
    for s in inflight {
        s.wait();
    }
}
