//! The reactor's probes: a round trip through two pipes and an echo
//! thread (latency), and reads streaming from pipes a feeder keeps full
//! (completions per second), each under a given backend.

use crate::{pipe, Backend, Device, FlowError, Instance, IoResult, Kernel, Reactor};
use manycore_rt::Runtime;
use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

fn io_err(_: std::io::Error) -> FlowError {
    FlowError::Shutdown
}

/// The result of [`reactor_round_trip`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundTrip {
    /// The backend measured.
    pub backend: Backend,
    /// Round trips made.
    pub rounds: usize,
    /// Time for all of them.
    pub total: Duration,
}

/// `rounds` round trips, one after the other: a kernel thread on a core
/// writes 8 bytes to a pipe device and reads 8 bytes from another; an echo
/// thread (blocking reads and writes) sends them back; the read's receiver
/// starts the next round. Each round is two requests, two completions, and
/// a wakeup of the echo thread. Waits at most 60 s (`Err(Timeout)`).
pub fn reactor_round_trip(backend: Backend, rounds: usize) -> Result<RoundTrip, FlowError> {
    let rt = Runtime::builder()
        .cores(1)
        .build()
        .map_err(|_| FlowError::Shutdown)?;
    let reactor = Reactor::with_backend(backend).map_err(io_err)?;
    let (to_echo_rx, to_echo_tx) = pipe().map_err(io_err)?;
    let (from_echo_rx, from_echo_tx) = pipe().map_err(io_err)?;
    let echo = std::thread::spawn(move || {
        let (mut rx, mut tx) = (File::from(to_echo_rx), File::from(from_echo_tx));
        let mut b = [0u8; 8];
        while rx.read_exact(&mut b).is_ok() && tx.write_all(&b).is_ok() {}
    });
    let out = Arc::new(reactor.register(to_echo_tx).map_err(io_err)?);
    let back = Arc::new(reactor.register(from_echo_rx).map_err(io_err)?);
    let (tx, rx) = mpsc::channel();
    let t = Instant::now();
    let (o, b) = (out.clone(), back.clone());
    Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| round(ctx, o, b, 0, rounds, tx))?;
    let r = rx.recv_timeout(Duration::from_secs(60));
    let total = t.elapsed();
    drop((out, back));
    reactor.shutdown();
    rt.shutdown();
    let _ = echo.join();
    match r {
        Ok(()) => Ok(RoundTrip {
            backend: reactor.backend(),
            rounds,
            total,
        }),
        Err(_) => Err(FlowError::Timeout),
    }
}

fn round(
    ctx: &crate::Ctx<'_, Kernel>,
    out: Arc<Device>,
    back: Arc<Device>,
    i: usize,
    rounds: usize,
    done: mpsc::Sender<()>,
) {
    if i == rounds {
        let _ = done.send(());
        return;
    }
    let (o, b) = (out.clone(), back.clone());
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, _| {
        round(ctx, o, b, i + 1, rounds, done)
    });
    let ack = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {});
    if let (Ok(r), Ok(a)) = (receiver, ack) {
        back.read(ctx, 8, r.slot(0));
        out.write(ctx, (i as u64).to_le_bytes().to_vec(), a.slot(0));
    }
}

/// The result of [`reactor_stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// The backend measured.
    pub backend: Backend,
    /// Pipe devices read.
    pub devices: usize,
    /// The period counted.
    pub period: Duration,
    /// Read requests completed in the period.
    pub completions: u64,
    /// Bytes they carried.
    pub bytes: u64,
}

/// Bytes asked for by each read of [`reactor_stream`].
pub const STREAM_READ: usize = 64;

/// Reads of [`STREAM_READ`] bytes from `devices` pipes that feeder threads
/// keep full, one request outstanding per device, each receiver (a kernel
/// thread on one core) making the next request: the completions per second
/// the reactor sustains. Counts during `period`, after a warm-up of a tenth
/// of it.
pub fn reactor_stream(
    backend: Backend,
    devices: usize,
    period: Duration,
) -> Result<Stream, FlowError> {
    let rt = Runtime::builder()
        .cores(1)
        .build()
        .map_err(|_| FlowError::Shutdown)?;
    let reactor = Reactor::with_backend(backend).map_err(io_err)?;
    let (completions, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let mut feeders = Vec::new();
    let mut devs = Vec::new();
    for _ in 0..devices.max(1) {
        let (rx, tx) = pipe().map_err(io_err)?;
        feeders.push(std::thread::spawn(move || {
            let mut tx = File::from(tx);
            let block = [7u8; 4096];
            while tx.write_all(&block).is_ok() {}
        }));
        let dev = Arc::new(reactor.register(rx).map_err(io_err)?);
        let (d, c, b, s) = (
            dev.clone(),
            completions.clone(),
            bytes.clone(),
            stop.clone(),
        );
        Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| stream(ctx, d, c, b, s))?;
        devs.push(dev);
    }
    std::thread::sleep(period / 10);
    let (c0, b0) = (
        completions.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed),
    );
    std::thread::sleep(period);
    let (c1, b1) = (
        completions.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed),
    );
    stop.store(true, Ordering::Relaxed);
    let backend = reactor.backend();
    // Closing the read ends ends the feeders (their writes fail).
    drop(devs);
    reactor.shutdown();
    rt.shutdown();
    for f in feeders {
        let _ = f.join();
    }
    Ok(Stream {
        backend,
        devices: devices.max(1),
        period,
        completions: c1 - c0,
        bytes: b1 - b0,
    })
}

fn stream(
    ctx: &crate::Ctx<'_, Kernel>,
    dev: Arc<Device>,
    completions: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    if stop.load(Ordering::Relaxed) {
        return;
    }
    let d = dev.clone();
    let receiver = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
        if let Some(Ok(data)) = got.first() {
            completions.fetch_add(1, Ordering::Relaxed);
            bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
            stream(ctx, d, completions, bytes, stop);
        }
    });
    if let Ok(r) = receiver {
        dev.read(ctx, STREAM_READ, r.slot(0));
    }
}
