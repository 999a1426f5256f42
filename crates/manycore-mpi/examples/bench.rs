//! The MPI side of `manycore bench mpi`: one program, run under `mpirun`,
//! whose rank 0 prints one JSON record per line on stdout
//! (`{"bench":"mpi","case":..,"impl":..,"metric":..,"value":..,"unit":..}`,
//! the record of the `manycore` command) and nothing else; messages go to
//! stderr. Every figure is a median over repetitions, and the rows of a part
//! are interleaved within each repetition, so that load from elsewhere
//! falls on all of them alike.
//!
//! ```text
//! cargo build --release -p manycore-mpi --features mpi --example bench
//! mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 target/release/examples/bench p2p [--quick] [--reps R] [--adaptive] [--idle hybrid|sleep]
//! ```
//!
//! `--adaptive` turns `Tuning::adaptive` on in every row (the idle engine
//! and the waiting threads wait as `manycore_sync::AdaptiveSpin` says);
//! `--idle` sets the local cores' idle policy (else `World`'s default).
//!
//! Parts (and the number of ranks each wants):
//!
//! * `p2p` (2 ranks): round trips of `place.call` against a raw MPI
//!   ping-pong of the same bytes, each way of driving MPI
//!   ([`Tuning`](manycore_mpi::Tuning)) and both kinds of place; message rate
//!   of one-sided spawns against a stream of raw `MPI_Isend`s.
//! * `coll` (4 ranks, 2 cores each): reduce, all-reduce, broadcast and the
//!   hierarchical all-reduce against `MPI_Reduce`, `MPI_Allreduce`,
//!   `MPI_Bcast`; each repetition runs every row four times, in the orders
//!   of a balanced Latin square, so that no row always follows the same
//!   one (rank 0 says on stderr how the rows right after the raw row
//!   compare with the others).
//! * `knary` (1, 2 or 4 ranks): `knary(4, m, i)` for i in 0, 100, 1000,
//!   5000 as a distributed join against the sequential tree on rank 0 (the
//!   MuSE paper's Figure 4), the machine's parallel capacity in the same
//!   job (two busy threads' throughput against one), and on 2 ranks the
//!   speedup by how often a worker polls MPI (Figure 5).
//! * `table2` (2 ranks): `knary(4, m, 1000)` with a busy process on rank
//!   1's CPU (the paper's Table 2), against the sum of the ranks'
//!   throughputs.
//! * `busy CPU` (not under mpirun): spins on CPU until killed (at most 10
//!   minutes); `table2` starts it.
//! * `rtloop [SECS [RANK [engine|core]]]` (2 ranks or more): round trips
//!   from rank 0 for SECS seconds, for a profiler.
//! * `rate [K [core]]` (2 ranks): the message-rate rows of `p2p` alone
//!   (with `core`, spawns to a core only, for a profiler), each
//!   repetition's figures on stderr (no records).
//!
//! Built without the `mpi` feature it only says so.

#[cfg(not(feature = "mpi"))]
fn main() {
    println!("bench is the MPI side of `manycore bench mpi`: build it with --features mpi and run it under mpirun");
}

#[cfg(feature = "mpi")]
fn main() {
    std::process::exit(imp::main());
}

#[cfg(feature = "mpi")]
mod imp {
    use manycore_mpi::mpi;
    use manycore_mpi::mpi::collective::SystemOperation;
    use manycore_mpi::mpi::traits::*;
    use manycore_mpi::{encode, knary, remote_fn, Ctx, Header, Knary, Place, Tuning, World};
    use std::hint::black_box;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// The bound of every wait for another rank.
    const T: Duration = Duration::from_secs(60);
    /// The tag of the raw rows' messages (the crate uses 1 and 2).
    const TAG: mpi::Tag = 77;

    remote_fn! {
        fn echo(x: u64) -> u64 { x }
    }

    /// One-sided messages counted where they land.
    static LANDED: AtomicU64 = AtomicU64::new(0);

    remote_fn! {
        fn bump(_x: u64) -> () { LANDED.fetch_add(1, Ordering::Relaxed); }
    }

    remote_fn! {
        /// How many `bump`s landed since the last call.
        fn landed(_u: ()) -> u64 { LANDED.swap(0, Ordering::Relaxed) }
    }

    /// The argument of every round trip: a `u64` that takes 9 bytes encoded.
    const X: u64 = u64::MAX / 3;

    struct Args {
        part: String,
        quick: bool,
        /// `--adaptive`: every row with `Tuning::adaptive` on.
        adaptive: bool,
        /// `--idle hybrid|sleep`: the cores' idle policy (else the
        /// world's default).
        hybrid: bool,
        sleep: bool,
        reps: usize,
        rest: Vec<String>,
    }

    fn args() -> Result<Args, String> {
        let mut a = Args {
            part: String::new(),
            quick: false,
            adaptive: false,
            hybrid: false,
            sleep: false,
            reps: 0,
            rest: Vec::new(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(x) = it.next() {
            match x.as_str() {
                "--quick" => a.quick = true,
                "--adaptive" => a.adaptive = true,
                "--idle" => match it.next().as_deref() {
                    Some("hybrid") => a.hybrid = true,
                    Some("sleep") => a.sleep = true,
                    _ => return Err("--idle needs hybrid or sleep".into()),
                },
                "--reps" => {
                    a.reps = it
                        .next()
                        .and_then(|v| v.parse().ok())
                        .filter(|&r| (1..=100).contains(&r))
                        .ok_or("--reps needs a number from 1 to 100")?
                }
                _ if a.part.is_empty() => a.part = x,
                _ => a.rest.push(x),
            }
        }
        if a.reps == 0 {
            a.reps = if a.quick { 3 } else { 5 };
        }
        Ok(a)
    }

    /// `--adaptive`: set on every tuning a row chooses.
    static ADAPTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// `w.set_tuning(t)`, with `Tuning::adaptive` as `--adaptive` says.
    fn tune(w: &World, t: Tuning) {
        w.set_tuning(Tuning {
            adaptive: ADAPTIVE.load(Ordering::Relaxed),
            ..t
        });
    }

    /// One record on stdout (rank 0 only).
    fn rec(w: &World, case: &str, imp: &str, metric: &str, value: f64, unit: &str) {
        if w.rank() != 0 {
            return;
        }
        let v = if value.is_finite() {
            format!("{value}")
        } else {
            "null".into()
        };
        println!(
            "{{\"bench\":\"mpi\",\"case\":{},\"impl\":{},\"metric\":{},\"value\":{v},\"unit\":{}}}",
            q(case),
            q(imp),
            q(metric),
            q(unit)
        );
    }

    /// A JSON string (the names here are plain ASCII).
    fn q(s: &str) -> String {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }

    /// The median (the mean of the middle two for an even count), as the
    /// `manycore` command computes it.
    fn median(v: &[f64]) -> f64 {
        let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    fn barrier(w: &World) -> Result<(), String> {
        w.all_reduce(0u8, |a, _| a)
            .map(|_| ())
            .map_err(|e| format!("barrier: {e}"))
    }

    /// The largest of every rank's `v`.
    fn max_over_ranks(w: &World, v: f64) -> Result<f64, String> {
        w.all_reduce(v, f64::max)
            .map_err(|e| format!("all_reduce: {e}"))
    }

    pub fn main() -> i32 {
        // A remote panic is reported as an error; keep it to one line.
        std::panic::set_hook(Box::new(|info| eprintln!("bench: panic: {info}")));
        let a = match args() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("bench: {e}");
                return 2;
            }
        };
        if a.part == "busy" {
            return busy(&a);
        }
        let cores = if a.part == "coll" { 2 } else { 1 };
        ADAPTIVE.store(a.adaptive, Ordering::Relaxed);
        let mut b = World::builder().cores(cores).timeout(T);
        if a.hybrid {
            b = b.idle(manycore_rt::IdlePolicy::default());
        } else if a.sleep {
            b = b.idle(manycore_rt::IdlePolicy::Sleep);
        }
        let world = match b.init() {
            Ok(w) => w,
            Err(e) => {
                eprintln!("bench: World::init: {e}");
                return 1;
            }
        };
        tune(&world, Tuning::DEFAULT);
        if world.rank() == 0 && !world.waiters_progress() {
            eprintln!(
                "bench: the MPI library offers no Serialized threading: only the engines progress"
            );
        }
        let r = match a.part.as_str() {
            "p2p" => p2p(&world, &a),
            "coll" => coll(&world, &a),
            "knary" => knary_part(&world, &a),
            "table2" => table2(&world, &a),
            "rtloop" => rtloop(&world, &a),
            "rate" => rate(&world, &a),
            p => Err(format!(
                "unknown part '{p}' (expected p2p, coll, knary, table2, rtloop, rate or busy)"
            )),
        };
        if let Err(e) = &r {
            eprintln!("bench: rank {}: {}: {e}", world.rank(), a.part);
        }
        let failed = world.all_reduce(u8::from(r.is_err()), u8::max).unwrap_or(1);
        if world.finalize().is_err() {
            return 1;
        }
        i32::from(failed)
    }

    // ---- p2p: round trips and message rate ------------------------------

    /// A call's round trip, one way of driving MPI.
    struct CallRow {
        name: &'static str,
        engine_place: bool,
        tuning: Tuning,
    }

    const CALL_ROWS: [CallRow; 5] = [
        CallRow {
            name: "call-engine",
            engine_place: true,
            tuning: Tuning::DEFAULT,
        },
        CallRow {
            name: "call-engine/spin-100us",
            engine_place: true,
            tuning: Tuning {
                poll_us: 100,
                engine_spin_us: 100,
                ..Tuning::DEFAULT
            },
        },
        CallRow {
            name: "call-engine/engine-only",
            engine_place: true,
            tuning: Tuning::ENGINE_ONLY,
        },
        CallRow {
            name: "call-core",
            engine_place: false,
            tuning: Tuning::DEFAULT,
        },
        CallRow {
            name: "call-core/engine-only",
            engine_place: false,
            tuning: Tuning::ENGINE_ONLY,
        },
    ];

    /// Round trips of a conversation: the mean, and the median of the
    /// single round trips (which a few long stalls of a shared machine do
    /// not move), in microseconds.
    #[derive(Clone, Copy)]
    struct Trips {
        mean: f64,
        median: f64,
    }

    impl Trips {
        fn of(samples: &mut [f64], total: Duration) -> Trips {
            Trips {
                mean: total.as_secs_f64() * 1e6 / samples.len().max(1) as f64,
                median: median(samples),
            }
        }
    }

    /// `n` raw ping-pongs between ranks 0 and 1, on the engine threads:
    /// `out` bytes there, `back` bytes back.
    fn raw_pingpong(w: &World, n: u32, out: usize, back: usize) -> Result<Trips, String> {
        let me = w.rank();
        w.with_mpi(move |c| {
            if me > 1 {
                return Trips {
                    mean: 0.0,
                    median: 0.0,
                };
            }
            let peer = c.process_at_rank(1 - me as i32);
            let (mut a, mut b) = (vec![7u8; out], vec![9u8; back]);
            let mut samples = Vec::with_capacity(n as usize);
            // Ten rounds of warm-up.
            let t = Instant::now();
            for k in 0..n + 10 {
                let t0 = Instant::now();
                if me == 0 {
                    peer.send_with_tag(&a[..], TAG);
                    peer.receive_into_with_tag(&mut b[..], TAG);
                } else {
                    peer.receive_into_with_tag(&mut a[..], TAG);
                    peer.send_with_tag(&b[..], TAG);
                }
                if k >= 10 {
                    samples.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            Trips::of(&mut samples, t.elapsed())
        })
        .map_err(|e| format!("with_mpi: {e}"))
    }

    /// The same ping-pong received as the crate receives: a non-blocking
    /// send and a poll of `MPI_Improbe` then `MPI_Mrecv` into a fresh
    /// vector (`probe`), or a receive posted before the send and polled
    /// with `MPI_Test` (`posted`).
    fn raw_pingpong_as(w: &World, n: u32, out: usize, posted: bool) -> Result<Trips, String> {
        use manycore_mpi::mpi::point_to_point::MatchedReceiveVec;
        let me = w.rank();
        w.with_mpi(move |c| {
            if me > 1 {
                return Trips {
                    mean: 0.0,
                    median: 0.0,
                };
            }
            let peer = c.process_at_rank(1 - me as i32);
            let a = vec![7u8; out];
            let mut b = vec![0u8; out];
            let mut samples = Vec::with_capacity(n as usize);
            let recv = |b: &mut Vec<u8>| {
                if posted {
                    mpi::request::scope(|sc| {
                        let mut r = peer.immediate_receive_into_with_tag(sc, &mut b[..], TAG);
                        loop {
                            match r.test() {
                                Ok(_) => break,
                                Err(again) => r = again,
                            }
                        }
                    });
                } else {
                    loop {
                        if let Some(m) = c.any_process().immediate_matched_probe_with_tag(TAG) {
                            *b = m.matched_receive_vec::<u8>().0;
                            break;
                        }
                    }
                }
            };
            let send = || {
                mpi::request::scope(|sc| {
                    let mut r = peer.immediate_send_with_tag(sc, &a[..], TAG);
                    loop {
                        match r.test() {
                            Ok(_) => break,
                            Err(again) => r = again,
                        }
                    }
                });
            };
            let t = Instant::now();
            for k in 0..n + 10 {
                let t0 = Instant::now();
                if me == 0 {
                    send();
                    recv(&mut b);
                } else {
                    recv(&mut b);
                    send();
                }
                if k >= 10 {
                    samples.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            black_box(&b);
            Trips::of(&mut samples, t.elapsed())
        })
        .map_err(|e| format!("with_mpi: {e}"))
    }

    /// Calls of `echo` on `p` from this thread, up to `n` of them or for
    /// `budget`.
    fn calls(p: &Place, n: u32, budget: Duration) -> Result<Trips, String> {
        for _ in 0..10 {
            p.call(&echo, X)
                .wait_timeout(T)
                .map_err(|e| e.to_string())?;
        }
        let mut samples = Vec::with_capacity(n.min(1 << 20) as usize);
        let t = Instant::now();
        while samples.len() < n as usize && (samples.len() < 20 || t.elapsed() < budget) {
            let t0 = Instant::now();
            let r = p
                .call(&echo, X)
                .wait_timeout(T)
                .map_err(|e| e.to_string())?;
            samples.push(t0.elapsed().as_secs_f64() * 1e6);
            if r != X {
                return Err(format!("echo returned {r}"));
            }
        }
        Ok(Trips::of(&mut samples, t.elapsed()))
    }

    /// `rtloop [SECS [RANK [engine|core]]]`: calls of `echo` from rank 0 on
    /// RANK's engine place (or core 0) for SECS seconds (default 5, rank 1),
    /// for a profiler; prints the mean and median round trip to stderr.
    fn rtloop(w: &World, a: &Args) -> Result<(), String> {
        let secs: f64 = a.rest.first().and_then(|s| s.parse().ok()).unwrap_or(5.0);
        let to: usize = a.rest.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
        barrier(w)?;
        if w.rank() == 0 {
            let p = match a.rest.get(2).map(String::as_str) {
                Some("core") => w.place(to, 0),
                _ => w.engine_place(to),
            };
            let t = calls(&p, u32::MAX, Duration::from_secs_f64(secs))?;
            eprintln!(
                "rtloop: {:.3} us per round trip, median {:.3} us",
                t.mean, t.median
            );
        }
        barrier(w)
    }

    /// Messages per second (millions) of `k` raw `MPI_Isend`s of `size`
    /// bytes from rank 0 to rank 1, in windows of [`WINDOW`], as OSU's
    /// message-rate test sends them: the sender waits for a window's sends,
    /// the receiver posts a window's receives, waits for them and
    /// acknowledges the window.
    fn raw_stream(w: &World, k: usize, size: usize) -> Result<f64, String> {
        let me = w.rank();
        w.with_mpi(move |c| {
            if me > 1 {
                return 0.0;
            }
            let peer = c.process_at_rank(1 - me as i32);
            let mut ack = [0u8; 1];
            let windows = k.div_ceil(WINDOW);
            if me == 1 {
                let mut bufs = vec![vec![0u8; size]; WINDOW];
                for _ in 0..windows {
                    mpi::request::multiple_scope(WINDOW, |scope, coll| {
                        for b in bufs.iter_mut() {
                            coll.add(peer.immediate_receive_into_with_tag(scope, &mut b[..], TAG));
                        }
                        let mut done = Vec::with_capacity(WINDOW);
                        coll.wait_all(&mut done);
                    });
                    peer.send_with_tag(&ack[..], TAG);
                }
                return 0.0;
            }
            let buf = vec![3u8; size];
            let t = Instant::now();
            for _ in 0..windows {
                mpi::request::multiple_scope(WINDOW, |scope, coll| {
                    for _ in 0..WINDOW {
                        coll.add(peer.immediate_send_with_tag(scope, &buf[..], TAG));
                    }
                    let mut done = Vec::with_capacity(WINDOW);
                    coll.wait_all(&mut done);
                });
                peer.receive_into_with_tag(&mut ack[..], TAG);
            }
            (windows * WINDOW) as f64 / t.elapsed().as_secs_f64() / 1e6
        })
        .map_err(|e| format!("with_mpi: {e}"))
    }

    /// Sends in flight at once in the raw stream.
    const WINDOW: usize = 64;

    /// Messages per second (millions) of `k` spawns of `bump` on `p`, until
    /// a call behind them on the same place says all of them landed.
    fn spawns(p: &Place, k: usize) -> Result<f64, String> {
        let t = Instant::now();
        for i in 0..k {
            p.spawn(&bump, i as u64).map_err(|e| e.to_string())?;
        }
        let n = p
            .call(&landed, ())
            .wait_timeout(T)
            .map_err(|e| e.to_string())?;
        let rate = k as f64 / t.elapsed().as_secs_f64() / 1e6;
        if n != k as u64 {
            return Err(format!("{n} of {k} spawns landed"));
        }
        Ok(rate)
    }

    /// A spawn stream, one way of driving MPI.
    struct SpawnRow {
        name: &'static str,
        engine_place: bool,
        tuning: Tuning,
    }

    const SPAWN_ROWS: [SpawnRow; 4] = [
        SpawnRow {
            name: "spawn-engine",
            engine_place: true,
            tuning: Tuning::DEFAULT,
        },
        SpawnRow {
            name: "spawn-engine/no-batching",
            engine_place: true,
            tuning: Tuning {
                coalesce: false,
                ..Tuning::DEFAULT
            },
        },
        SpawnRow {
            name: "spawn-engine/engine-only",
            engine_place: true,
            tuning: Tuning::ENGINE_ONLY,
        },
        SpawnRow {
            name: "spawn-core",
            engine_place: false,
            tuning: Tuning::DEFAULT,
        },
    ];

    /// `rate [K]`: only the message-rate rows of `p2p` (the raw stream,
    /// spawns to the engine place and to a core), interleaved in each
    /// repetition, K spawns each (default 100000); prints each
    /// repetition's rates and their ratios to the raw stream on stderr.
    fn rate(w: &World, a: &Args) -> Result<(), String> {
        if w.size() != 2 {
            return Err(format!("rate wants 2 ranks, not {}", w.size()));
        }
        let k: usize = a
            .rest
            .first()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100_000);
        // `rate K core`: spawns to a core only (for a profiler).
        if a.rest.get(1).map(String::as_str) == Some("core") {
            for _ in 0..a.reps {
                barrier(w)?;
                if w.rank() == 0 {
                    let r = spawns(&w.place(1, 0), k)?;
                    eprintln!("rate: spawn-core {r:.2} Mmsg/s");
                }
                barrier(w)?;
            }
            return Ok(());
        }
        let spawn_size = Header::LEN + encode(&0u64).map_err(|e| e.0)?.len();
        let (mut eng, mut core) = (Vec::new(), Vec::new());
        for rep in 0..a.reps {
            barrier(w)?;
            let raw = raw_stream(w, k, spawn_size)?;
            let mut r = [0.0; 2];
            for (i, engine_place) in [true, false].into_iter().enumerate() {
                barrier(w)?;
                if w.rank() == 0 {
                    let p = if engine_place {
                        w.engine_place(1)
                    } else {
                        w.place(1, 0)
                    };
                    r[i] = spawns(&p, k)?;
                }
                barrier(w)?;
            }
            if w.rank() == 0 {
                eprintln!(
                    "rate {rep}: raw {raw:.2} Mmsg/s, spawn-engine {:.2} ({:.2}x), spawn-core {:.2} ({:.2}x)",
                    r[0],
                    r[0] / raw,
                    r[1],
                    r[1] / raw
                );
                eng.push(r[0] / raw);
                core.push(r[1] / raw);
            }
        }
        if w.rank() == 0 {
            eprintln!(
                "rate: median spawn-engine {:.2}x, spawn-core {:.2}x of the raw stream",
                median(&eng),
                median(&core)
            );
        }
        Ok(())
    }

    fn p2p(w: &World, a: &Args) -> Result<(), String> {
        if w.size() != 2 {
            return Err(format!("p2p wants 2 ranks, not {}", w.size()));
        }
        let out = Header::LEN + encode(&X).map_err(|e| e.0)?.len();
        let back = out; // the reply carries the same u64
        let spawn_size = Header::LEN + encode(&0u64).map_err(|e| e.0)?.len();
        let (n_raw, n_call, budget) = if a.quick {
            (2000, 2000, Duration::from_millis(40))
        } else {
            (10_000, 10_000, Duration::from_millis(150))
        };
        let k = if a.quick { 20_000 } else { 100_000 };
        let mut rt: Vec<Vec<Trips>> = vec![Vec::new(); 3 + CALL_ROWS.len()];
        let mut rate: Vec<Vec<f64>> = vec![Vec::new(); 1 + SPAWN_ROWS.len()];
        for _ in 0..a.reps {
            barrier(w)?;
            rt[0].push(raw_pingpong(w, n_raw, out, back)?);
            rt[CALL_ROWS.len() + 1].push(raw_pingpong_as(w, n_raw, out, false)?);
            rt[CALL_ROWS.len() + 2].push(raw_pingpong_as(w, n_raw, out, true)?);
            for (i, row) in CALL_ROWS.iter().enumerate() {
                tune(w, row.tuning);
                barrier(w)?;
                if w.rank() == 0 {
                    let p = if row.engine_place {
                        w.engine_place(1)
                    } else {
                        w.place(1, 0)
                    };
                    rt[i + 1]
                        .push(calls(&p, n_call, budget).map_err(|e| format!("{}: {e}", row.name))?);
                }
                barrier(w)?;
                tune(w, Tuning::default());
            }
            barrier(w)?;
            rate[0].push(raw_stream(w, k, spawn_size)?);
            for (i, row) in SPAWN_ROWS.iter().enumerate() {
                tune(w, row.tuning);
                barrier(w)?;
                if w.rank() == 0 {
                    let p = if row.engine_place {
                        w.engine_place(1)
                    } else {
                        w.place(1, 0)
                    };
                    rate[i + 1].push(spawns(&p, k).map_err(|e| format!("{}: {e}", row.name))?);
                }
                barrier(w)?;
                tune(w, Tuning::default());
            }
        }
        let case = format!("round_trip {out}B");
        let names = std::iter::once("raw-mpi")
            .chain(CALL_ROWS.iter().map(|r| r.name))
            .chain(["raw-mpi/probe", "raw-mpi/posted"]);
        for (name, v) in names.zip(&rt) {
            let med: Vec<f64> = v.iter().map(|t| t.median).collect();
            let mean: Vec<f64> = v.iter().map(|t| t.mean).collect();
            rec(w, &case, name, "median", median(&med), "us");
            rec(w, &case, name, "mean", median(&mean), "us");
        }
        let case = format!("message_rate {spawn_size}B");
        rec(w, &case, "raw-mpi", "median", median(&rate[0]), "Mmsg/s");
        for (i, row) in SPAWN_ROWS.iter().enumerate() {
            rec(w, &case, row.name, "median", median(&rate[i + 1]), "Mmsg/s");
        }
        Ok(())
    }

    // ---- coll: collectives over 4 ranks x 2 cores -----------------------

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Op {
        Reduce,
        AllReduce,
        Broadcast,
        AllReduceCores,
    }

    impl Op {
        fn name(self) -> &'static str {
            match self {
                Op::Reduce => "reduce",
                Op::AllReduce => "allreduce",
                Op::Broadcast => "broadcast",
                Op::AllReduceCores => "allreduce_cores",
            }
        }
    }

    /// Time (us) per operation of `k` raw MPI collectives `op` of one u64
    /// (MPI_Allreduce for the hierarchical one) on this rank: from a barrier
    /// to the end of a closing MPI_Allreduce, which every rank leaves only
    /// once every rank has done its part of all `k`.
    fn raw_coll(w: &World, op: Op, k: usize) -> Result<f64, String> {
        let me = w.rank() as u64;
        w.with_mpi(move |c| {
            let root = c.process_at_rank(0);
            let x = me + 1;
            let mut y = 0u64;
            c.barrier();
            let t = Instant::now();
            for i in 0..k {
                match op {
                    Op::Reduce => {
                        if me == 0 {
                            root.reduce_into_root(&x, &mut y, SystemOperation::sum());
                        } else {
                            root.reduce_into(&x, SystemOperation::sum());
                        }
                    }
                    Op::AllReduce | Op::AllReduceCores => {
                        c.all_reduce_into(&x, &mut y, SystemOperation::sum());
                    }
                    Op::Broadcast => {
                        let mut v = if me == 0 { i as u64 } else { 0 };
                        root.broadcast_into(&mut v);
                        y = y.wrapping_add(v);
                    }
                }
            }
            let mut z = 0u64;
            c.all_reduce_into(&y, &mut z, SystemOperation::sum());
            let us = t.elapsed().as_secs_f64() * 1e6 / k as f64;
            black_box(z);
            us
        })
        .map_err(|e| format!("with_mpi: {e}"))
    }

    /// The same for `k` of manycore's collectives `op`, closed by one of
    /// its all-reduces.
    fn mc_coll(w: &World, op: Op, k: usize) -> Result<f64, String> {
        let e = |e: manycore_mpi::Error| e.to_string();
        // A tenth as many untimed first (after the raw row, the engines
        // may be asleep).
        for i in 0..k / 10 + 1 {
            mc_op(w, op, i)?;
        }
        barrier(w)?;
        let t = Instant::now();
        for i in 0..k {
            mc_op(w, op, i)?;
        }
        w.all_reduce(0u64, |a, b| a + b).map_err(e)?;
        Ok(t.elapsed().as_secs_f64() * 1e6 / k as f64)
    }

    /// One of manycore's collectives `op`, checked.
    fn mc_op(w: &World, op: Op, i: usize) -> Result<(), String> {
        let me = w.rank() as u64;
        let n = w.size() as u64;
        let e = |e: manycore_mpi::Error| e.to_string();
        {
            match op {
                Op::Reduce => {
                    let r = w.reduce(me + 1, |a, b| a + b).map_err(e)?;
                    if me == 0 && r != Some(n * (n + 1) / 2) {
                        return Err(format!("reduce gave {r:?}"));
                    }
                }
                Op::AllReduce => {
                    let r = w.all_reduce(me + 1, |a, b| a + b).map_err(e)?;
                    if r != n * (n + 1) / 2 {
                        return Err(format!("all_reduce gave {r}"));
                    }
                }
                Op::Broadcast => {
                    let r = w.broadcast((me == 0).then_some(i as u64)).map_err(e)?;
                    if r != i as u64 {
                        return Err(format!("broadcast gave {r}"));
                    }
                }
                Op::AllReduceCores => {
                    let r = w
                        .all_reduce_cores(|c| c as u64 + 1, |a, b| a + b)
                        .map_err(e)?;
                    let k = w.cores() as u64;
                    if r != n * k * (k + 1) / 2 {
                        return Err(format!("all_reduce_cores gave {r}"));
                    }
                }
            }
        }
        Ok(())
    }

    fn coll(w: &World, a: &Args) -> Result<(), String> {
        let ops = [Op::Reduce, Op::AllReduce, Op::Broadcast, Op::AllReduceCores];
        let k = if a.quick { 300 } else { 1000 };
        // raw MPI, then manycore with each tuning.
        let tunings = [
            ("manycore", Tuning::default()),
            (
                "manycore/waiters-poll",
                Tuning {
                    coll_poll: true,
                    ..Tuning::DEFAULT
                },
            ),
            ("manycore/engine-only", Tuning::ENGINE_ONLY),
        ];
        // Row 0 is raw MPI, row j + 1 the tuning j.
        let rows = 1 + tunings.len();
        let mut v: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); rows]; ops.len()];
        // The same samples split by whether the row ran right after the raw
        // row ([1]) or not ([0]), for the position summary on stderr.
        let mut split: Vec<Vec<[Vec<f64>; 2]>> = vec![vec![Default::default(); rows]; ops.len()];
        // Warm-up.
        for &op in &ops {
            raw_coll(w, op, 10)?;
            mc_coll(w, op, 10)?;
        }
        // Each repetition is `rows` rounds in the orders of a balanced Latin
        // square (`balanced_order`): every row runs once in every position
        // and right after each other row once, so no row always follows the
        // raw one (a row there read slower than the same tuning later in
        // the job). Every sample goes into its row's median.
        for _ in 0..a.reps {
            for round in 0..rows {
                for (i, &op) in ops.iter().enumerate() {
                    let mut prev = usize::MAX;
                    for pos in 0..rows {
                        let row = balanced_order(rows, round, pos);
                        let t = if row == 0 {
                            raw_coll(w, op, k)?
                        } else {
                            tune(w, tunings[row - 1].1);
                            let t = mc_coll(w, op, k);
                            tune(w, Tuning::default());
                            t?
                        };
                        let t = max_over_ranks(w, t)?;
                        v[i][row].push(t);
                        split[i][row][usize::from(prev == 0)].push(t);
                        prev = row;
                    }
                }
            }
        }
        if w.rank() == 0 {
            for (i, &op) in ops.iter().enumerate() {
                let raw = median(&v[i][0]);
                let mut line = format!("bench: coll {} positions (raw {raw:.3} us):", op.name());
                for (j, (name, _)) in tunings.iter().enumerate() {
                    let [later, after] = &split[i][j + 1];
                    line += &format!(
                        " {name} {:.2}x after raw ({}), {:.2}x later ({});",
                        median(after) / raw,
                        after.len(),
                        median(later) / raw,
                        later.len()
                    );
                }
                eprintln!("{line}");
            }
        }
        let shape = format!("{}x{}", w.size(), w.cores());
        for (i, &op) in ops.iter().enumerate() {
            let case = format!("{} {shape}", op.name());
            let baseline = if op == Op::AllReduceCores {
                "raw-mpi-allreduce"
            } else {
                "raw-mpi"
            };
            rec(w, &case, baseline, "median", median(&v[i][0]), "us");
            for (j, (name, _)) in tunings.iter().enumerate() {
                rec(w, &case, name, "median", median(&v[i][j + 1]), "us");
            }
        }
        Ok(())
    }

    /// The row at position `pos` of round `round` of a balanced Latin
    /// square of `n` rows (Williams): round 0 is 0, 1, n-1, 2, n-2, ...,
    /// round r adds r (mod n). For even `n`, over `n` rounds every row is
    /// in every position once and follows every other row exactly once.
    fn balanced_order(n: usize, round: usize, pos: usize) -> usize {
        let first = if pos == 0 {
            0
        } else if pos % 2 == 1 {
            pos.div_ceil(2)
        } else {
            n - pos / 2
        };
        (first + round) % n
    }

    // ---- knary: MuSE Figure 4, and the machine's capacity ---------------

    /// `n` steps of busy work the optimizer cannot remove.
    fn spin_work(n: u64) -> u64 {
        let mut x = 0u64;
        for j in 0..n {
            x = black_box(x.wrapping_mul(31).wrapping_add(j));
        }
        x
    }

    /// S_cap, as `manycore bench steal` measures it: the time of one spin
    /// loop over the time of two at once on two threads, per loop.
    fn capacity(iters: u64) -> f64 {
        let one = || {
            std::thread::spawn(move || {
                let t = Instant::now();
                black_box(spin_work(iters));
                t.elapsed().as_secs_f64()
            })
        };
        let t1 = one().join().unwrap_or(f64::NAN);
        let start = Instant::now();
        let (a, b) = (one(), one());
        let _ = (a.join(), b.join());
        let t2 = start.elapsed().as_secs_f64();
        t1 / (t2 / 2.0)
    }

    /// The knary sizes: (m, [i]).
    fn knary_sizes(a: &Args) -> (u32, [u32; 4]) {
        (if a.quick { 8 } else { 10 }, [0, 100, 1000, 5000])
    }

    /// Times the sequential tree on rank 0 (the others wait) and the
    /// distributed join on every rank, once each. (Ts, Tn) in ms on rank 0,
    /// and the tasks stolen in the join (all ranks).
    fn ts_tn(w: &World, p: Knary) -> Result<(f64, f64, u64), String> {
        let e = |e: manycore_mpi::Error| e.to_string();
        let mut ts = 0.0;
        if w.rank() == 0 {
            let t = Instant::now();
            let r = knary.run(Ctx::sequential(), black_box(p));
            ts = t.elapsed().as_secs_f64() * 1e3;
            if r != p.nodes() {
                return Err(format!("sequential knary gave {r}"));
            }
        }
        barrier(w)?;
        let before = w.join_stats().stolen;
        let t = Instant::now();
        let r = w.run_join(&knary, p).map_err(e)?;
        let tn = t.elapsed().as_secs_f64() * 1e3;
        if r != p.nodes() {
            return Err(format!(
                "knary {p:?} on {} ranks gave {r}, want {}",
                w.size(),
                p.nodes()
            ));
        }
        let stolen = w.join_stats().stolen - before;
        let stolen = w.all_reduce(stolen, |a, b| a + b).map_err(e)?;
        barrier(w)?;
        Ok((ts, tn, stolen))
    }

    fn knary_part(w: &World, a: &Args) -> Result<(), String> {
        let (m, is) = knary_sizes(a);
        let n = w.size();
        let imp = format!("ranks-{n}");
        let cap_iters = if a.quick { 20_000_000 } else { 60_000_000 };
        // The capacity in this job, beside knary(4, m, 1000), on rank 0
        // while the other ranks wait (asleep).
        let mut caps = Vec::new();
        for i in is {
            let p = Knary::new(4, m, i);
            if p.nodes() * u64::from(i) < 100_000_000 {
                ts_tn(w, p)?; // warm-up (the long trees warm themselves)
            }
            let (mut ts, mut tn, mut ratio, mut stolen) = (vec![], vec![], vec![], vec![]);
            for _ in 0..a.reps {
                let (s, t, st) = ts_tn(w, p)?;
                ts.push(s);
                tn.push(t);
                ratio.push(s / t);
                stolen.push(st as f64);
                if i == 1000 {
                    if w.rank() == 0 {
                        caps.push(capacity(cap_iters));
                    }
                    barrier(w)?;
                }
            }
            let case = format!("knary(4,{m},{i})");
            rec(w, &case, &imp, "Ts", median(&ts), "ms");
            rec(w, &case, &imp, "Tn", median(&tn), "ms");
            rec(w, &case, &imp, "speedup", median(&ratio), "ratio");
            rec(w, &case, &imp, "stolen", median(&stolen), "count");
            rec(w, &case, &imp, "nodes", p.nodes() as f64, "count");
        }
        rec(w, "capacity", &imp, "S_cap", median(&caps), "ratio");
        // Figure 5: how often a worker polls the network itself (MuSE's
        // MAX_SEQUENTIAL), on knary(4, m, 1000), interleaved; on 2 ranks.
        if n == 2 {
            let p = Knary::new(4, m, 1000);
            let every = [0u32, 10, 100, 1000, 10_000];
            let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); every.len()];
            for _ in 0..a.reps {
                for (k, &e) in every.iter().enumerate() {
                    tune(
                        w,
                        Tuning {
                            poll_every: e,
                            ..Tuning::DEFAULT
                        },
                    );
                    let r = ts_tn(w, p);
                    tune(w, Tuning::DEFAULT);
                    let (s, t, _) = r?;
                    ratio[k].push(s / t);
                }
            }
            let case = format!("fig5 knary(4,{m},1000)");
            for (k, &e) in every.iter().enumerate() {
                let name = format!("ranks-{n}/poll-every-{e}");
                rec(w, &case, &name, "speedup", median(&ratio[k]), "ratio");
            }
        }
        Ok(())
    }

    // ---- table2: a busy process beside rank 1 ---------------------------

    /// `busy CPU`: spins pinned to CPU until killed, or for 10 minutes.
    fn busy(a: &Args) -> i32 {
        if let Some(cpu) = a.rest.first().and_then(|c| c.parse().ok()) {
            let _ = manycore_sync::cpu::pin_current(cpu);
        }
        let end = Instant::now() + Duration::from_secs(600);
        while Instant::now() < end {
            black_box(spin_work(1_000_000));
        }
        0
    }

    /// Spin steps per second of this thread over `d`.
    fn spin_rate(d: Duration) -> f64 {
        let t = Instant::now();
        let mut n = 0u64;
        while t.elapsed() < d {
            black_box(spin_work(10_000));
            n += 10_000;
        }
        n as f64 / t.elapsed().as_secs_f64()
    }

    fn table2(w: &World, a: &Args) -> Result<(), String> {
        if w.size() != 2 {
            return Err(format!("table2 wants 2 ranks, not {}", w.size()));
        }
        let (m, _) = knary_sizes(a);
        let p = Knary::new(4, m, 1000);
        // Rank 0's worker on the first CPU, rank 1's and the busy process
        // on the second (as the paper's load shares one node's CPU).
        let cpus = manycore_sync::cpu::original();
        let cpu = cpus
            .get(w.rank().min(cpus.len().saturating_sub(1)))
            .copied();
        if let Some(c) = cpu {
            let _ = manycore_sync::cpu::pin_current(c);
        }
        let d = Duration::from_millis(if a.quick { 30 } else { 100 });
        let e = |e: manycore_mpi::Error| e.to_string();
        ts_tn(w, p)?; // warm-up
        let (mut ts, mut t2, mut ratio, mut ideal) = (vec![], vec![], vec![], vec![]);
        for _ in 0..a.reps {
            // Sequential, unloaded: Ts and rank 0's solo throughput.
            barrier(w)?;
            let solo = if w.rank() == 0 { spin_rate(d) } else { 0.0 };
            barrier(w)?;
            let mut child = None;
            if w.rank() == 1 {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let mut cmd = std::process::Command::new(exe);
                cmd.arg("busy");
                if let Some(c) = cpu {
                    cmd.arg(c.to_string());
                }
                child = Some(cmd.spawn().map_err(|e| format!("busy process: {e}"))?);
            }
            let r = (|| {
                barrier(w)?;
                std::thread::sleep(Duration::from_millis(5));
                // The throughputs under load, both ranks at once.
                let loaded = spin_rate(d);
                let sum = w.all_reduce(loaded, |x, y| x + y).map_err(e)?;
                let before = Instant::now();
                let r = w.run_join(&knary, p).map_err(e)?;
                let t = before.elapsed().as_secs_f64() * 1e3;
                if r != p.nodes() {
                    return Err(format!("knary gave {r}"));
                }
                Ok((sum, t))
            })();
            if let Some(mut c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
            let (sum, t) = r?;
            barrier(w)?;
            let mut seq = 0.0;
            if w.rank() == 0 {
                let t0 = Instant::now();
                black_box(knary.run(Ctx::sequential(), black_box(p)));
                seq = t0.elapsed().as_secs_f64() * 1e3;
            }
            barrier(w)?;
            ts.push(seq);
            t2.push(t);
            ratio.push(seq / t);
            ideal.push(sum / solo);
        }
        let case = format!("table2 knary(4,{m},1000) +1 busy");
        let s = median(&ratio);
        let s_max = median(&ideal);
        rec(w, &case, "ranks-2", "Ts", median(&ts), "ms");
        rec(w, &case, "ranks-2", "T2", median(&t2), "ms");
        rec(w, &case, "ranks-2", "speedup", s, "ratio");
        rec(w, &case, "ideal", "S_max", s_max, "ratio");
        rec(w, &case, "ideal", "S_max_paper", 1.5, "ratio");
        rec(w, &case, "ranks-2", "utilized", s / s_max, "ratio");
        Ok(())
    }
}
