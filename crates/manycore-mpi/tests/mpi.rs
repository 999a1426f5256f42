//! The MPI tests: one program, run on every rank by `run-tests.sh` under
//! `mpirun -n 1`, `-n 2` and `-n 4` (and alone, as a one-rank world, by
//! `cargo test --features mpi`), then once more with the world's timeout at
//! each end of `Duration` (`--world-timeout=zero|max`). MPI is initialized
//! once per process, so the cases run in sequence in one world, in the same
//! order on every rank (several are collective); every wait is bounded.
//! Rank 0 prints the verdict agreed by all ranks.

use manycore_mpi::mpi::collective::{CommunicatorCollectives, SystemOperation};
use manycore_mpi::{
    knary, remote_fn, Bulk, CallError, Ctx, Error, Knary, Place, Remote, RemoteGroup, Tuning, World,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The bound of every wait in these tests.
const T: Duration = Duration::from_secs(30);

remote_fn! {
    fn square(x: u64) -> u64 { x * x }
}

remote_fn! {
    /// Where it ran: (rank, core).
    fn whereami(_u: ()) -> (usize, usize) {
        let w = World::current().expect("a world");
        (w.rank(), manycore_rt::current().expect("on a core").index())
    }
}

remote_fn! {
    fn fails(msg: String) -> u64 { panic!("{msg}") }
}

remote_fn! {
    /// Calls `square(x)` on core 0 of rank `to` from the core it runs on,
    /// and waits there (the core keeps serving meanwhile).
    fn relay(to_x: (usize, u64)) -> u64 {
        let w = World::current().expect("a world");
        w.place(to_x.0, 0).call(&square, to_x.1).wait_timeout(T).expect("relayed") + 1
    }
}

remote_fn! {
    /// The length and a checksum of the bulk bytes, and the pointer-free
    /// evidence that they arrived whole.
    fn digest(seed: u64, data: Bulk) -> (usize, u64) {
        let sum = data.0.iter().fold(seed, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
        (data.0.len(), sum)
    }
}

/// A remote object.
#[derive(Debug, Default, PartialEq)]
struct Counter {
    total: u64,
    adds: u64,
}

remote_fn! {
    fn add(c: &mut Counter, by: u64) -> u64 {
        c.total += by;
        c.adds += 1;
        c.total
    }
}

remote_fn! {
    fn read(c: &mut Counter, _u: ()) -> (u64, u64) { (c.total, c.adds) }
}

remote_fn! {
    /// Makes a counter on the rank it runs on and returns the pointer.
    fn make_counter(start: u64) -> Remote<Counter> {
        let w = World::current().expect("a world");
        w.put(w.cores() - 1, Counter { total: start, adds: 0 }).expect("put")
    }
}

remote_fn! {
    fn total(c: &mut Counter, _u: ()) -> u64 { c.total }
}

remote_fn! {
    fn label(c: &mut Counter, _u: ()) -> String { format!("{}.", c.total) }
}

remote_fn! {
    fn explode(_c: &mut Counter, _u: ()) -> u64 { panic!("group member") }
}

remote_fn! {
    fn sum_pair(p: (u64, u64)) -> u64 { p.0 + p.1 }
}

remote_fn! {
    fn concat(p: (String, String)) -> String { p.0 + &p.1 }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Boom {
    depth: u32,
    at: u32,
}

remote_fn! {
    /// A tree of joins with one panicking leaf.
    fn boom_tree(cx: Ctx, b: Boom) -> u64 {
        if b.depth == 0 {
            if b.at == 0 { panic!("leaf says no") }
            return 1;
        }
        let l = Boom { depth: b.depth - 1, at: b.at };
        let r = Boom { depth: b.depth - 1, at: b.at.wrapping_sub(1 << (b.depth - 1)) };
        let (x, y) = cx.join(|cx| boom_tree.run(cx, l), &boom_tree, r);
        x + y
    }
}

remote_fn! {
    /// Long arguments and a long result: frames longer than a posted
    /// receive.
    fn reversed(v: Vec<u8>) -> Vec<u8> { v.iter().rev().copied().collect() }
}

remote_fn! {
    /// Typed bulk: the `u64`s seen in place (no copy), multiplied by
    /// `scale`, and whether the copying view agrees.
    fn scale_u64(scale: u64, data: Bulk) -> Result<Vec<u64>, String> {
        let xs = data.as_slice::<u64>().map_err(|e| e.to_string())?;
        if data.to_vec::<u64>().map_err(|e| e.to_string())? != xs {
            return Err("as_slice and to_vec disagree".into());
        }
        Ok(xs.iter().map(|x| x.wrapping_mul(scale)).collect())
    }
}

remote_fn! {
    /// Typed bulk: the `f64`s back as they came (bit for bit, through the
    /// codec of the result), and their sum.
    fn echo_f64(_u: (), data: Bulk) -> Result<(Vec<f64>, f64), String> {
        let xs = data.as_slice::<f64>().map_err(|e| e.to_string())?;
        Ok((xs.to_vec(), xs.iter().sum()))
    }
}

remote_fn! {
    /// A long argument beside bulk bytes.
    fn long_and_bulk(pad: Vec<u8>, data: Bulk) -> (usize, usize) { (pad.len(), data.0.len()) }
}

remote_fn! {
    /// Where it ran: the rank, and whether on a core.
    fn where_engine(_u: ()) -> (usize, bool) {
        let w = World::current().expect("a world");
        (w.rank(), manycore_rt::current().is_some())
    }
}

remote_fn! {
    /// Waits for a call to core 0 of rank `to`: on an engine place of
    /// another rank that must fail (only the waiting thread could receive
    /// the reply).
    fn nested(to: usize) -> Result<u64, CallError> {
        let w = World::current().expect("a world");
        w.place(to, 0).call(&square, 2).wait_timeout(T)
    }
}

/// What `append` received, by sending rank.
static LOG: Mutex<Option<HashMap<usize, Vec<u64>>>> = Mutex::new(None);

remote_fn! {
    fn append(from_i: (usize, u64)) -> () {
        let mut g = LOG.lock().unwrap();
        g.get_or_insert_with(HashMap::new).entry(from_i.0).or_default().push(from_i.1);
    }
}

remote_fn! {
    fn take_log(from: usize) -> Vec<u64> {
        let mut g = LOG.lock().unwrap();
        g.get_or_insert_with(HashMap::new).remove(&from).unwrap_or_default()
    }
}

/// Opened by `open_gate`, passed by one `held` call or method each.
static GATE: AtomicBool = AtomicBool::new(false);

/// Waits (bounded by `T`) until the gate is opened, and closes it behind
/// itself; whether it was opened.
fn pass_gate() -> bool {
    let start = Instant::now();
    while !GATE.swap(false, Ordering::AcqRel) {
        if start.elapsed() > T {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

remote_fn! {
    /// Answers only once its rank's gate is opened: a call not yet
    /// answered for as long as the caller likes.
    fn held(_u: ()) -> bool { pass_gate() }
}

remote_fn! {
    /// `held` as a method: the counter's total, once the gate is opened.
    fn held_total(c: &mut Counter, _u: ()) -> u64 {
        if pass_gate() { c.total } else { u64::MAX }
    }
}

remote_fn! {
    /// Opens its rank's gate (short: called on the engine place).
    fn open_gate(_u: ()) -> () { GATE.store(true, Ordering::Release); }
}

/// A remote object that records what its method received, in order.
#[derive(Debug, Default)]
struct Trail(Vec<u64>);

remote_fn! {
    fn trail_push(t: &mut Trail, i: u64) -> () { t.0.push(i); }
}

remote_fn! {
    fn trail_take(t: &mut Trail, _u: ()) -> Vec<u64> { std::mem::take(&mut t.0) }
}

fn ensure(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

fn calls(w: &World) -> Result<(), String> {
    for rank in 0..w.size() {
        for core in 0..w.cores() {
            let p = w.place(rank, core);
            let x = (w.rank() * 100 + rank * 10 + core) as u64;
            let r = p
                .call(&square, x)
                .wait_timeout(T)
                .map_err(|e| e.to_string())?;
            ensure(r == x * x, format!("square({x}) on {p:?} = {r}"))?;
            let at = p
                .call(&whereami, ())
                .wait_timeout(T)
                .map_err(|e| e.to_string())?;
            ensure(at == (rank, core), format!("{p:?} ran at {at:?}"))?;
        }
    }
    // Many calls in flight at once, then waited in reverse.
    let next = (w.rank() + 1) % w.size();
    let ps: Vec<_> = (0..200u64)
        .map(|i| w.place(next, i as usize % w.cores()).call(&square, i))
        .collect();
    for (i, p) in ps.into_iter().enumerate().rev() {
        let r = p.wait_timeout(T).map_err(|e| e.to_string())?;
        ensure(r == (i * i) as u64, format!("in flight: square({i}) = {r}"))?;
    }
    // One-way: nobody waits, nothing comes back.
    w.place(next, 0)
        .spawn(&square, 3)
        .map_err(|e| e.to_string())?;
    // A core that calls another rank and waits for it.
    let prev = (w.rank() + w.size() - 1) % w.size();
    let r = w.place(next, 0).call(&relay, (prev, 7)).wait_timeout(T);
    ensure(r == Ok(50), format!("relay: {r:?}"))?;
    // Re-entrant: our core 0 waits for the next rank's relay, which calls
    // back into our core 0; the waiting core serves that call meanwhile.
    let me = w.rank();
    let back = w.place(next, 0);
    let r = w
        .runtime()
        .core(0)
        .call(move || back.call(&relay, (me, 6)).wait_timeout(T))
        .wait_timeout(T)
        .map_err(|e| e.to_string())?;
    ensure(r == Ok(37), format!("re-entrant relay: {r:?}"))?;
    // Awaited as a future on a local core.
    let p = w.place(next, 0);
    let r = w
        .runtime()
        .core(0)
        .spawn_async(async move { p.call(&square, 9).await })
        .wait_timeout(T)
        .map_err(|e| e.to_string())?;
    ensure(r == Ok(81), format!("awaited: {r:?}"))
}

/// The same calls with the engine doing all of MPI (the protocol before
/// waiting threads polled MPI themselves).
fn calls_engine_only(w: &World) -> Result<(), String> {
    w.set_tuning(Tuning::ENGINE_ONLY);
    let r = calls(w);
    w.set_tuning(Tuning::default());
    r
}

/// The same calls and the collectives with the idle engine and the waiting
/// threads waiting adaptively (`Tuning::adaptive`).
fn adaptive_waits(w: &World) -> Result<(), String> {
    w.set_tuning(Tuning {
        adaptive: true,
        ..Tuning::DEFAULT
    });
    let r = calls(w).and_then(|()| collectives(w));
    w.set_tuning(Tuning::default());
    r
}

/// Engine places, frames longer than a posted receive, and the order of
/// one-way messages.
fn engine_place(w: &World) -> Result<(), String> {
    let me = w.rank();
    let next = (me + 1) % w.size();
    let c = |e: CallError| e.to_string();
    for rank in 0..w.size() {
        let p = w.engine_place(rank);
        ensure(p.core() == Place::ENGINE, "engine place's core")?;
        let r = p.call(&square, 9).wait_timeout(T).map_err(c)?;
        ensure(r == 81, format!("square on {p:?}: {r}"))?;
        let at = p.call(&where_engine, ()).wait_timeout(T).map_err(c)?;
        ensure(at == (rank, false), format!("{p:?} ran at {at:?}"))?;
    }
    // Waiting for a call from an engine place of another rank is refused.
    let r = w
        .engine_place(next)
        .call(&nested, me)
        .wait_timeout(T)
        .map_err(c)?;
    if next == me {
        ensure(r == Ok(4), format!("nested, local: {r:?}"))?;
    } else {
        ensure(r == Err(CallError::WouldBlock), format!("nested: {r:?}"))?;
    }
    // Frames longer than a posted receive, both ways, to a core and to an
    // engine place, with and without bulk.
    let long: Vec<u8> = (0..100_000u32)
        .map(|i| (i * 13 + me as u32) as u8)
        .collect();
    let want: Vec<u8> = long.iter().rev().copied().collect();
    for p in [w.place(next, 0), w.engine_place(next)] {
        let r = p.call(&reversed, long.clone()).wait_timeout(T).map_err(c)?;
        ensure(r == want, format!("long frames on {p:?}"))?;
        let r = p
            .call_bulk(&long_and_bulk, long.clone(), vec![7u8; 50_000])
            .wait_timeout(T)
            .map_err(c)?;
        ensure(
            r == (100_000, 50_000),
            format!("long frame and bulk on {p:?}: {r:?}"),
        )?;
    }
    // One-way messages take effect in the order sent (batched on the way).
    for p in [w.place(next, 0), w.engine_place(next)] {
        for i in 0..2000u64 {
            p.spawn(&append, (me, i)).map_err(c)?;
        }
        let log = p.call(&take_log, me).wait_timeout(T).map_err(c)?;
        ensure(
            log == (0..2000).collect::<Vec<_>>(),
            format!(
                "spawns to {p:?}: {} landed, in order: {}",
                log.len(),
                log.windows(2).all(|w| w[0] < w[1])
            ),
        )?;
    }
    Ok(())
}

fn bulk(w: &World) -> Result<(), String> {
    let next = (w.rank() + 1) % w.size();
    for len in [0usize, 1, 4096, 3 << 20] {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + w.rank()) as u8).collect();
        let want = data
            .iter()
            .fold(5u64, |a, &b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
        let r = w
            .place(next, 0)
            .call_bulk(&digest, 5, data)
            .wait_timeout(T)
            .map_err(|e| e.to_string())?;
        ensure(r == (len, want), format!("bulk of {len}: {r:?}"))?;
    }
    Ok(())
}

/// Slices of plain numbers as bulk, viewed as typed slices there; a
/// wrongly sized buffer is an error there, not undefined behaviour.
fn typed_bulk(w: &World) -> Result<(), String> {
    let c = |e: CallError| e.to_string();
    let me = w.rank() as u64;
    let next = (w.rank() + 1) % w.size();
    for p in [w.place(next, 0), w.engine_place(next)] {
        for len in [0usize, 1, 1000, 1 << 18] {
            let xs: Vec<u64> = (0..len as u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ me)
                .collect();
            let want: Vec<u64> = xs.iter().map(|x| x.wrapping_mul(3)).collect();
            let r = p
                .call_bulk(&scale_u64, 3, Bulk::from_slice(&xs))
                .wait_timeout(T)
                .map_err(c)?;
            ensure(
                r.as_ref() == Ok(&want),
                format!("u64 bulk of {len} on {p:?}: {:?}", r.map(|v| v.len())),
            )?;
            let fs: Vec<f64> = (0..len)
                .map(|i| (i as f64 + me as f64) * 0.25 - 7.5)
                .collect();
            let (back, sum) = p
                .call_bulk(&echo_f64, (), Bulk::from_slice(&fs))
                .wait_timeout(T)
                .map_err(c)??;
            let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            ensure(
                bits(&back) == bits(&fs) && sum == fs.iter().sum::<f64>(),
                format!("f64 bulk of {len} on {p:?}: {} back, sum {sum}", back.len()),
            )?;
        }
        // Nine bytes are not a whole number of u64: refused by the
        // function, and the rank lives on.
        let r = p
            .call_bulk(&scale_u64, 1, vec![0u8; 9])
            .wait_timeout(T)
            .map_err(c)?;
        ensure(
            r.as_ref().is_err_and(|e| e.contains("whole number")),
            format!("9 bytes as u64 on {p:?}: {r:?}"),
        )?;
    }
    Ok(())
}

fn faults(w: &World) -> Result<(), String> {
    let next = (w.rank() + 1) % w.size();
    let p = w.place(next, 0);
    let r = p.call(&fails, "on purpose".to_string()).wait_timeout(T);
    ensure(
        r == Err(CallError::Panicked("on purpose".into())),
        format!("a panic there: {r:?}"),
    )?;
    // The rank and its core live on.
    ensure(
        p.call(&square, 4).wait_timeout(T) == Ok(16),
        "alive after a panic",
    )?;
    let r = p.call_raw(u32::MAX - 1, &[]).wait_timeout(T);
    ensure(
        r == Err(CallError::UnknownFunction(u32::MAX - 1)),
        format!("an unknown id: {r:?}"),
    )?;
    // A method sent as a function is refused there by kind.
    let r = p
        .call_raw(add.id().map_err(|e| e.to_string())?, &[])
        .wait_timeout(T);
    ensure(
        matches!(r, Err(CallError::WrongKind(_))),
        format!("wrong kind: {r:?}"),
    )?;
    // Garbage arguments: refused by the codec there.
    let r = p
        .call_raw(square.id().map_err(|e| e.to_string())?, &[0xff; 3])
        .wait_timeout(T);
    ensure(
        matches!(r, Err(CallError::Codec(_))),
        format!("bad args: {r:?}"),
    )?;
    let r = w.place(w.size(), 0).call(&square, 1).wait_timeout(T);
    ensure(
        matches!(r, Err(CallError::NoSuchRank { .. })),
        format!("no rank: {r:?}"),
    )?;
    let r = w.place(0, w.cores()).call(&square, 1).wait_timeout(T);
    ensure(
        matches!(r, Err(CallError::NoSuchCore { .. })),
        format!("no core: {r:?}"),
    )?;
    ensure(
        p.call(&square, 5).wait_timeout(T) == Ok(25),
        "alive at the end",
    )
}

/// `Duration::ZERO` and `Duration::MAX` as the bound of a wait: ZERO on a
/// call not yet answered is the caller's (survivable) timeout, and the
/// next call works; ZERO on an answered call, and MAX, give the answer.
/// Each rank holds a call on the next rank until it opens that rank's gate.
fn durations(w: &World) -> Result<(), String> {
    let c = |e: CallError| e.to_string();
    let next = (w.rank() + 1) % w.size();
    let core = w.place(next, 0);
    let gate = w.engine_place(next);
    let open_later = move || {
        let gate = gate.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            gate.call(&open_gate, ()).wait_timeout(T)
        })
    };
    // Pending::wait_timeout(ZERO): the call is held there, so not answered.
    let r = core.call(&held, ()).wait_timeout(Duration::ZERO);
    ensure(r == Err(CallError::Timeout), format!("held, ZERO: {r:?}"))?;
    w.engine_place(next)
        .call(&open_gate, ())
        .wait_timeout(T)
        .map_err(c)?;
    // The late reply is dropped; the next call to that core works.
    let r = core.call(&square, 6).wait_timeout(T);
    ensure(r == Ok(36), format!("after a ZERO timeout: {r:?}"))?;
    // ZERO on an answered call: the answer.
    let p = core.call(&square, 7);
    let start = Instant::now();
    while !p.is_finished() && start.elapsed() < T {
        std::thread::sleep(Duration::from_millis(1));
    }
    let r = p.wait_timeout(Duration::ZERO);
    ensure(r == Ok(49), format!("answered, ZERO: {r:?}"))?;
    // MAX: no bound (an `Instant` cannot hold it); the answer once opened.
    let p = core.call(&held, ());
    let opener = open_later();
    let r = p.wait_timeout(Duration::MAX);
    let opened = opener.join().map_err(|_| "opener panicked")?;
    ensure(
        r == Ok(true) && opened == Ok(()),
        format!("held, MAX: {r:?}, {opened:?}"),
    )?;
    // GroupReduce::wait_timeout, on a group of one object of the next rank.
    let obj: Remote<Counter> = core.call(&make_counter, 40).wait_timeout(T).map_err(c)?;
    let g = RemoteGroup::new(vec![obj]);
    let r = g
        .reduce(&held_total, (), &sum_pair)
        .wait_timeout(Duration::ZERO);
    ensure(
        r == Err(CallError::Timeout),
        format!("group held, ZERO: {r:?}"),
    )?;
    w.engine_place(next)
        .call(&open_gate, ())
        .wait_timeout(T)
        .map_err(c)?;
    let r = g.reduce(&total, (), &sum_pair).wait_timeout(T);
    ensure(r == Ok(40), format!("group after a ZERO timeout: {r:?}"))?;
    let r = g.reduce(&held_total, (), &sum_pair);
    let opener = open_later();
    let r = r.wait_timeout(Duration::MAX);
    let opened = opener.join().map_err(|_| "opener panicked")?;
    ensure(
        r == Ok(40) && opened == Ok(()),
        format!("group held, MAX: {r:?}, {opened:?}"),
    )?;
    let r = RemoteGroup::<Counter>::new(vec![])
        .reduce(&total, (), &sum_pair)
        .wait_timeout(Duration::ZERO);
    ensure(
        r == Err(CallError::EmptyGroup),
        format!("no members, ZERO: {r:?}"),
    )?;
    obj.free().map_err(c)
}

fn objects(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    // Rank 0's counter, known to everyone; everyone adds rank + 1.
    let mine = w.put(0, Counter::default()).map_err(|e| e.to_string())?;
    let c0: Remote<Counter> = w.broadcast(Some(mine)).map_err(e)?;
    ensure(c0.rank() == 0, format!("broadcast pointer: {c0:?}"))?;
    let r = c0.call(&add, w.rank() as u64 + 1).wait_timeout(T);
    ensure(r.is_ok(), format!("add: {r:?}"))?;
    w.all_reduce(0u8, |a, _| a).map_err(e)?; // a barrier: every add is done
    let n = w.size() as u64;
    let r = c0.call(&read, ()).wait_timeout(T);
    ensure(
        r == Ok((n * (n + 1) / 2, n)),
        format!("counter total: {r:?}"),
    )?;
    w.all_reduce(0u8, |a, _| a).map_err(e)?;
    if w.rank() == 0 {
        let c = w.remove(&c0).map_err(|e| e.to_string())?;
        ensure(c.adds == n, format!("removed: {c:?}"))?;
    }
    w.all_reduce(0u8, |a, _| a).map_err(e)?;
    let r = c0.call(&read, ()).wait_timeout(T);
    ensure(
        r == Err(CallError::StaleObject),
        format!("after remove: {r:?}"),
    )?;
    // An object made on the next rank by a remote function.
    let next = (w.rank() + 1) % w.size();
    let c: Remote<Counter> = w
        .place(next, 0)
        .call(&make_counter, 10)
        .wait_timeout(T)
        .map_err(|e| e.to_string())?;
    ensure(
        c.rank() == next && c.core() == w.cores() - 1,
        format!("made: {c:?}"),
    )?;
    c.spawn(&add, 5).map_err(|e| e.to_string())?;
    let r = c.call(&add, 1).wait_timeout(T);
    ensure(
        r == Ok(16),
        format!("one-way then call on one object: {r:?}"),
    )?;
    ensure(
        w.remove(&c) == Err(CallError::NotLocal) || next == w.rank(),
        "remove of another rank's object",
    )?;
    c.free().map_err(|e| e.to_string())?;
    let r = c.call(&read, ()).wait_timeout(T);
    ensure(
        r == Err(CallError::StaleObject),
        format!("after free: {r:?}"),
    )
}

/// Methods and group methods from one rank take effect on an object in
/// the order sent, although the receiving rank's engine and a thread of
/// that rank polling for its own reply both dispatch them.
fn method_order(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let c = |e: CallError| e.to_string();
    let me = w.rank();
    let next = (me + 1) % w.size();
    let mine = w.put(0, Trail::default()).map_err(c)?;
    let all: Vec<Remote<Trail>> = w
        .all_reduce(vec![mine], |mut a, b| {
            a.extend(b);
            a
        })
        .map_err(e)?;
    let t = all[next];
    let g = RemoteGroup::new(vec![t]);
    for (how, group) in [("methods", false), ("group methods", true)] {
        for i in 0..2000u64 {
            if group {
                g.spawn(&trail_push, i).map_err(c)?;
            } else {
                t.spawn(&trail_push, i).map_err(c)?;
            }
            if i % 50 == 49 {
                // Polls for its reply, dispatching what arrives here
                // meanwhile (the previous rank's methods) in the engine's
                // stead.
                let r = w.engine_place(next).call(&square, 3).wait_timeout(T);
                ensure(r == Ok(9), format!("square between {how}: {r:?}"))?;
            }
        }
        let log = t.call(&trail_take, ()).wait_timeout(T).map_err(c)?;
        ensure(
            log == (0..2000).collect::<Vec<_>>(),
            format!(
                "{how} to {t:?}: {} landed, in order: {}",
                log.len(),
                log.windows(2).all(|w| w[0] < w[1])
            ),
        )?;
    }
    w.all_reduce(0u8, |a, _| a).map_err(e)?; // nobody invokes `mine` now
    w.remove(&mine).map_err(c)?;
    Ok(())
}

fn groups(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let c = |e: CallError| e.to_string();
    let (rank, cores) = (w.rank(), w.cores());
    let mine = (0..cores)
        .map(|core| {
            w.put(
                core,
                Counter {
                    total: (rank * 10 + core) as u64,
                    adds: 0,
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(c)?;
    // Every rank's counters, rank by rank.
    let all: Vec<Remote<Counter>> = w
        .all_reduce(mine.clone(), |mut a, b| {
            a.extend(b);
            a
        })
        .map_err(e)?;
    let g = RemoteGroup::new(all);
    ensure(g.len() == w.size() * cores, format!("members: {}", g.len()))?;
    let want: u64 = (0..w.size())
        .flat_map(|r| (0..cores).map(move |k| (r * 10 + k) as u64))
        .sum();
    let r = g.reduce(&total, (), &sum_pair).wait_timeout(T);
    ensure(r == Ok(want), format!("group sum: {r:?}, want {want}"))?;
    // Member order, rank by rank: combine need not commute.
    let labels: String = (0..w.size())
        .flat_map(|r| (0..cores).map(move |k| format!("{}.", r * 10 + k)))
        .collect();
    let r = g.reduce(&label, (), &concat).wait_timeout(T);
    ensure(r.as_ref() == Ok(&labels), format!("group order: {r:?}"))?;
    let r = g.reduce(&explode, (), &sum_pair).wait_timeout(T);
    ensure(
        r == Err(CallError::Panicked("group member".into())),
        format!("a panicking member: {r:?}"),
    )?;
    w.all_reduce(0u8, |a, _| a).map_err(e)?;
    if rank == 0 {
        // ateach, then a reduction from the same thread: sees every add.
        g.spawn(&add, 1).map_err(c)?;
        let r = g.reduce(&total, (), &sum_pair).wait_timeout(T);
        let n = g.len() as u64;
        ensure(r == Ok(want + n), format!("after ateach: {r:?}"))?;
    }
    w.all_reduce(0u8, |a, _| a).map_err(e)?;
    // A removed member fails the reduction; the others are unharmed.
    let gone = w.put(0, Counter::default()).map_err(c)?;
    w.remove(&gone).map_err(c)?;
    let mut with_gone = mine.clone();
    with_gone.push(gone);
    let r = RemoteGroup::new(with_gone)
        .reduce(&total, (), &sum_pair)
        .wait_timeout(T);
    ensure(
        r == Err(CallError::StaleObject),
        format!("a removed member: {r:?}"),
    )?;
    let r = RemoteGroup::<Counter>::new(vec![])
        .reduce(&total, (), &sum_pair)
        .wait_timeout(T);
    ensure(
        r == Err(CallError::EmptyGroup),
        format!("no members: {r:?}"),
    )?;
    w.all_reduce(0u8, |a, _| a).map_err(e)?;
    for m in &mine {
        w.remove(m).map_err(c)?;
    }
    Ok(())
}

fn collectives(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let (r, n) = (w.rank() as u64, w.size() as u64);
    let sum = w.all_reduce(r, |a, b| a + b).map_err(e)?;
    ensure(sum == n * (n - 1) / 2, format!("all_reduce sum {sum}"))?;
    // Not commutative: operands come in rank order.
    let s = w.all_reduce(r.to_string(), |a, b| a + &b).map_err(e)?;
    let want: String = (0..n).map(|i| i.to_string()).collect();
    ensure(s == want, format!("rank order: {s}"))?;
    let red = w
        .reduce(vec![r], |mut a, b| {
            a.extend(b);
            a
        })
        .map_err(e)?;
    ensure(
        (w.rank() == 0) == red.is_some()
            && red
                .as_ref()
                .is_none_or(|v| *v == (0..n).collect::<Vec<_>>()),
        format!("reduce: {red:?}"),
    )?;
    let b = w
        .broadcast((w.rank() == 0).then(|| "from zero".to_string()))
        .map_err(e)?;
    ensure(b == "from zero", format!("broadcast: {b}"))?;
    let cores = w
        .all_reduce_cores(|c| (c as u64 + 1, 1u64), |a, b| (a.0 + b.0, a.1 + b.1))
        .map_err(e)?;
    let k = w.cores() as u64;
    ensure(
        cores == (n * k * (k + 1) / 2, n * k),
        format!("hierarchical: {cores:?}"),
    )
}

/// Collectives back to back, calls to cores between them (the engine
/// must serve again between the collectives), and a rank late to a
/// reduce, an all-reduce and a broadcast (its partners yield, then sleep
/// until their partial is delivered), with the engine receiving the
/// partials and with the waiters polling MPI themselves (`coll_poll`).
fn collectives_stream(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    let c = |e: CallError| e.to_string();
    let (r, n) = (w.rank() as u64, w.size() as u64);
    let next = (w.rank() + 1) % w.size();
    for poll in [false, true] {
        w.set_tuning(Tuning {
            coll_poll: poll,
            ..Tuning::DEFAULT
        });
        for i in 0..2000u64 {
            let red = w.reduce(r + i, |a, b| a + b).map_err(e)?;
            if w.rank() == 0 {
                let want = n * (n - 1) / 2 + n * i;
                ensure(red == Some(want), format!("reduce {i}: {red:?}"))?;
            }
            if i % 250 == 0 {
                let v = w
                    .place(next, 1)
                    .call(&square, i)
                    .wait_timeout(T)
                    .map_err(c)?;
                ensure(v == i * i, format!("call between collectives: {v}"))?;
                let s = w.all_reduce(r, |a, b| a + b).map_err(e)?;
                ensure(s == n * (n - 1) / 2, format!("all_reduce {i}: {s}"))?;
            }
        }
        for late in [0, w.size() - 1] {
            if w.rank() == late {
                std::thread::sleep(Duration::from_millis(3));
            }
            let red = w.reduce(r, |a, b| a + b).map_err(e)?;
            ensure(
                (w.rank() == 0) == red.is_some() && red.is_none_or(|v| v == n * (n - 1) / 2),
                format!("late reduce: {red:?}"),
            )?;
            if w.rank() == late {
                std::thread::sleep(Duration::from_millis(3));
            }
            let s = w.all_reduce(r, |a, b| a + b).map_err(e)?;
            ensure(s == n * (n - 1) / 2, format!("late all_reduce: {s}"))?;
            let b = w.broadcast((w.rank() == 0).then_some(7u64)).map_err(e)?;
            ensure(b == 7, format!("broadcast: {b}"))?;
        }
    }
    w.set_tuning(Tuning::default());
    Ok(())
}

fn distributed_join(w: &World) -> Result<(), String> {
    let e = |e: Error| e.to_string();
    for p in [
        Knary::new(4, 6, 200),
        Knary::new(3, 7, 50),
        Knary::new(2, 1, 0),
    ] {
        let r = w.run_join(&knary, p).map_err(e)?;
        ensure(
            r == p.nodes(),
            format!("knary {p:?} = {r}, want {}", p.nodes()),
        )?;
        ensure(r == knary.run(Ctx::sequential(), p), "same as sequential")?;
    }
    // A panicking leaf fails the join on every rank; the world lives on.
    let r = w.run_join(&boom_tree, Boom { depth: 6, at: 45 });
    ensure(
        matches!(&r, Err(Error::Task(_))),
        format!("a panicking leaf: {r:?}"),
    )?;
    let r = w
        .run_join(&boom_tree, Boom { depth: 6, at: 1000 })
        .map_err(e)?;
    ensure(r == 64, format!("after the failure: {r}"))
}

type Case = (&'static str, fn(&World) -> Result<(), String>);

/// Set on rank 1 by rank 0 in `world_timeout_zero`.
static LET_GO: AtomicBool = AtomicBool::new(false);

remote_fn! {
    fn let_go(_u: ()) -> () { LET_GO.store(true, Ordering::Release); }
}

/// `Builder::timeout(Duration::ZERO)` (alone, `--world-timeout=zero`):
/// accepted; a collective gives up at once on a partner whose part is not
/// already there, with `Error::Timeout`; calls are bounded by their
/// callers, not by it, and `finalize` is not bounded by it.
fn world_timeout_zero(w: &World) -> Result<(), String> {
    let barrier = || {
        w.with_mpi(|c| c.barrier())
            .map_err(|e| format!("barrier: {e}"))
    };
    if w.size() == 1 {
        // No partner to wait for: a collective of one rank completes.
        let s = w
            .all_reduce(5u64, |a, b| a + b)
            .map_err(|e| e.to_string())?;
        ensure(s == 5, format!("all_reduce alone: {s}"))?;
        println!("world_timeout_zero: a late partner needs 2 ranks; skipped on 1 rank");
    } else {
        // Rank 1 enters the reduce only once rank 0, its root, has left
        // it: rank 0 cannot have its part in time.
        if w.rank() == 1 {
            let start = Instant::now();
            while !LET_GO.load(Ordering::Acquire) && start.elapsed() < T {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let r = w.reduce(w.rank() as u64, |a, b| a + b);
        if w.rank() == 0 {
            let go = w.engine_place(1).call(&let_go, ()).wait_timeout(T);
            ensure(
                matches!(r, Err(Error::Timeout(_))) && go.is_ok(),
                format!("root of a reduce, its partner late: {r:?} ({go:?})"),
            )?;
        }
        barrier()?;
    }
    let next = (w.rank() + 1) % w.size();
    let r = w.place(next, 0).call(&square, 8).wait_timeout(T);
    ensure(r == Ok(64), format!("a call after: {r:?}"))
}

/// Every rank's verdict on a case, for rank 0 to report: by a collective of
/// this crate, or (`raw`, when the world's timeout is zero and such a
/// collective need not wait for a late rank) by a blocking MPI one, which
/// only counts the failures.
fn verdicts(world: &World, r: &Result<(), String>, raw: bool) -> Vec<Option<String>> {
    if !raw {
        return world
            .all_reduce(vec![r.clone().err()], |mut a, b| {
                a.extend(b);
                a
            })
            .expect("verdicts");
    }
    let failed = i32::from(r.is_err());
    let n = world
        .with_mpi(move |c| {
            let mut n = 0i32;
            c.all_reduce_into(&failed, &mut n, SystemOperation::sum());
            n
        })
        .expect("verdicts");
    (0..n)
        .map(|_| Some("failed on some rank (see stderr)".to_string()))
        .collect()
}

fn main() {
    // Several cases panic on purpose: one line each, no backtrace.
    std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
    // `--world-timeout=zero|max`: the world's timeout at the ends of
    // `Duration`, with the cases below (a world per process: one run each).
    let edge = std::env::args().find_map(|a| a.strip_prefix("--world-timeout=").map(str::to_owned));
    let timeout = match edge.as_deref() {
        None => Duration::from_secs(60),
        Some("zero") => Duration::ZERO,
        Some("max") => Duration::MAX,
        Some(other) => panic!("--world-timeout={other}: zero or max"),
    };
    let world = World::builder()
        .cores(2)
        .timeout(timeout)
        .init()
        .expect("World::init");
    let all: [Case; 14] = [
        ("calls", calls),
        ("calls_engine_only", calls_engine_only),
        ("adaptive_waits", adaptive_waits),
        ("engine_place", engine_place),
        ("bulk", bulk),
        ("typed_bulk", typed_bulk),
        ("faults", faults),
        ("durations", durations),
        ("objects", objects),
        ("method_order", method_order),
        ("groups", groups),
        ("collectives", collectives),
        ("collectives_stream", collectives_stream),
        ("distributed_join", distributed_join),
    ];
    let cases: Vec<Case> = match edge.as_deref() {
        None => all.to_vec(),
        // No bound: what waits for partners, and the waits of callers.
        Some("max") => all
            .into_iter()
            .filter(|(n, _)| ["collectives", "durations", "distributed_join"].contains(n))
            .collect(),
        Some(_) => vec![("world_timeout_zero", world_timeout_zero)],
    };
    let raw = edge.as_deref() == Some("zero");
    let mut cases_failed = 0u64;
    for &(name, case) in &cases {
        let r = catch_unwind(AssertUnwindSafe(|| case(&world)))
            .unwrap_or_else(|_| Err("panicked".into()));
        // Every rank's verdict, so rank 0 reports them all.
        let verdicts = verdicts(&world, &r, raw);
        if let Err(m) = &r {
            eprintln!("rank {}: {name}: {m}", world.rank());
        }
        if verdicts.iter().any(Option::is_some) {
            cases_failed += 1;
        }
        if world.rank() == 0 {
            let bad: Vec<_> = verdicts
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_ref().map(|m| format!("rank {i}: {m}")))
                .collect();
            if bad.is_empty() {
                println!("test {name} ... ok ({} ranks)", world.size());
            } else {
                println!("test {name} ... FAILED: {}", bad.join("; "));
            }
        }
    }
    let size = world.size();
    let rank = world.rank();
    world.finalize().expect("finalize");
    if rank == 0 {
        println!("all {size} ranks finalized");
        println!(
            "{} passed, {} failed",
            cases.len() as u64 - cases_failed,
            cases_failed
        );
    }
    if cases_failed > 0 {
        std::process::exit(1);
    }
}
