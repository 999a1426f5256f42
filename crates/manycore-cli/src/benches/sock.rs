//! `manycore bench sock`: sockets over shared memory (`manycore-sock`) side
//! by side with Unix domain sockets and TCP loopback, between two threads and
//! between two processes, plus a reproduction of Table 1 of "A Lightweight
//! and Resource-aware Socket Emulation Layer for the Intel SCC Processor"
//! (rckSock): one client's ping-pong throughput as the server's 8 KiB buffer
//! is split among more and more connections.
//!
//! Process pairs re-execute the current binary as `manycore __sock-peer ...`
//! ([`peer_main`]). Every measurement is bounded in time; figures are medians
//! over repetitions (p99 over all samples). The rows of one case group (a
//! message size, or streaming, between threads or between processes) run
//! interleaved: repetition by repetition, each on a fresh connection and
//! peer, in an order that rotates from one repetition to the next, so that
//! a change of load on the shared machine reaches every row alike.
//!
//! Records (case × impl, metrics):
//!
//! * `rtt-{64B,1KiB,64KiB}-{threads,procs}` × `manycore-sock-{spin,hybrid,sleep}`,
//!   `unix`, `tcp`: `median`, `p99` (us);
//! * `stream-1MiB-{threads,procs}` × the same and `manycore-sock-hybrid-256KiB`:
//!   `throughput` (MiB/s);
//! * `rtt-64B-procs-async` × `tokio-unix`, `manycore-sock-tokio`: `median`,
//!   `p99` (us); `stream-1MiB-procs-async` × the same: `throughput` (MiB/s).
//!   Both ends on a current-thread tokio runtime of their own process:
//!   tokio's `UnixStream` against manycore-sock's `AsyncShmStream` (default
//!   wait mode, 256 KiB buffers for round trips, 1 MiB for streams);
//!   interleaved with the blocking rows of `rtt-64B-procs` and
//!   `stream-1MiB-procs`;
//! * `table1-clients-N` × `manycore-sock-hybrid`: `throughput` (MiB/s),
//!   `chunk` (B).

use crate::bench::{find, ratio, Bench, Cmp, Opt, Options, Target};
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::{median, p99};
use manycore_sock::{
    set_client_config, AsyncShmStream, Config, Namespace, ShmListener, ShmStream, SockAddr,
    WaitMode,
};
use std::future::Future;
use std::io::{self, BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// `manycore bench sock`.
pub const BENCH: Bench = Bench {
    name: "sock",
    about: "shared-memory sockets vs Unix and TCP; rckSock Table 1",
    title: "Sockets over shared memory (rckSock)",
    method: "Round trips (`rtt`, 64 B to 64 KiB) and 1 MiB streaming between two processes \
             and two threads, manycore-sock (spin, hybrid, sleep) against Unix domain sockets \
             and TCP loopback; and between two processes on tokio (cases `-async`: a \
             current-thread runtime in each process, manycore-sock's `AsyncShmStream` against \
             tokio's `UnixStream`, 64 B round trips and 1 MiB streaming). The rows of a case \
             run interleaved, one repetition of each in turn (rotating order), each repetition \
             on a fresh connection and peer. A round-trip repetition lasts 2 x --secs / --reps \
             seconds (median of the repetitions' medians, p99 over all samples), a stream \
             repetition moves 256 MiB (32 MiB with --quick) (median throughput). \
             Table 1: one client's throughput as the server's 8 KiB buffer is split among \
             more connections (chunk size per row), after Table 1 of \"A Lightweight and \
             Resource-aware Socket Emulation Layer for the Intel SCC Processor\".",
    secs: 0.25,
    report_secs: [0.1, 0.1, 0.1],
    repeats: true,
    options: &[
        Opt {
            flag: "--only",
            value: Some("PARTS"),
            help: "run only these parts: rtt, stream, table1 (comma-separated)",
            parse: parse_parts,
        },
        Opt {
            flag: "--buffer",
            value: Some("BYTES"),
            help: "manycore-sock buffer size of every case [default: 256 KiB for\nround trips, 1 MiB (and 256 KiB) for streams]",
            parse: |v| match v.parse::<usize>() {
                Ok(n) if n >= 64 => Ok(vec![n.to_string()]),
                _ => Err("expected a whole number of bytes, at least 64".into()),
            },
        },
    ],
    expected_secs,
    run,
    targets,
    notes,
    peer: Some(peer_main),
    ..Bench::DEFAULT
};

/// The async cases and their impls (see the module docs).
const RTT_ASYNC: &str = "rtt-64B-procs-async";
const STREAM_ASYNC: &str = "stream-1MiB-procs-async";
const TOKIO_UNIX: &str = "tokio-unix";
const SOCK_TOKIO: &str = "manycore-sock-tokio";

/// The parts of the bench `--only` chooses from.
const PARTS: [&str; 3] = ["rtt", "stream", "table1"];

fn parse_parts(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(str::trim)
        .map(|p| match PARTS.contains(&p) {
            true => Ok(p.to_string()),
            false => Err("expected rtt, stream or table1".to_string()),
        })
        .collect()
}

/// Whether `--only` (or its absence) selects `part`.
fn wanted(o: &Options, part: &str) -> bool {
    o.get("--only").is_none_or(|v| v.iter().any(|p| p == part))
}

/// Seconds per round-trip case (the repetitions together take twice this).
fn rtt_secs(o: &Options) -> f64 {
    if o.quick {
        o.secs.min(0.1)
    } else {
        o.secs
    }
}

/// Bytes per stream repetition.
fn stream_bytes(o: &Options) -> usize {
    if o.quick {
        32 << 20
    } else {
        256 << 20
    }
}

/// Round-trip rows (30 blocking, 2 async) take 2 x their seconds and 10 ms
/// per repetition to set up, stream rows (12 and 2) move their bytes at
/// about 2 GiB/s, Table 1 rows take 3 repetitions and 20 ms to set up.
fn expected_secs(o: &Options) -> f64 {
    let mut t = 0.0;
    let setups = 0.01 * o.reps as f64;
    if wanted(o, "rtt") {
        t += 32.0 * (2.0 * rtt_secs(o) + setups);
    }
    if wanted(o, "stream") {
        t += 14.0 * (stream_bytes(o) as f64 * o.reps as f64 / (2u64 << 30) as f64 + setups);
    }
    if wanted(o, "table1") {
        t += 8.0 * (3.0 * table1_secs(o) + 0.02);
    }
    t
}

/// The targets: the async rows' ratios, measured in the same run.
fn targets(recs: &[Record]) -> Vec<Target> {
    let ran = |prefix: &str| recs.iter().any(|r| r.case.starts_with(prefix));
    let mut v = Vec::new();
    if ran("rtt-") {
        let rtt = |imp, metric| find(recs, RTT_ASYNC, imp, metric);
        let mut t = Target::new(
            "manycore-sock-tokio / tokio-unix, 64 B round trip (procs, median)",
            ratio(rtt(SOCK_TOKIO, "median"), rtt(TOKIO_UNIX, "median")),
            "x",
            Cmp::AtMost,
            0.5,
        );
        if let Some(r) = ratio(rtt(SOCK_TOKIO, "p99"), rtt(TOKIO_UNIX, "p99")) {
            t.note = format!(" (p99: {r:.2}x)");
        }
        v.push(t);
    }
    if ran("stream-") {
        let st = |imp| find(recs, STREAM_ASYNC, imp, "throughput");
        v.push(Target::new(
            "manycore-sock-tokio / tokio-unix, 1 MiB streaming (procs)",
            ratio(st(SOCK_TOKIO), st(TOKIO_UNIX)),
            "x",
            Cmp::AtLeast,
            2.0,
        ));
    }
    v
}

/// What tokio costs each transport: the async rows against their blocking
/// counterparts of the same run.
fn notes(recs: &[Record]) -> String {
    let mut s = String::new();
    let pairs = [
        ("rtt-64B-procs", RTT_ASYNC, "median", "64 B round trip"),
        ("stream-1MiB-procs", STREAM_ASYNC, "throughput", "1 MiB streaming"),
    ];
    for (case, acase, metric, what) in pairs {
        let sock = ratio(
            find(recs, acase, SOCK_TOKIO, metric),
            find(recs, case, "manycore-sock-hybrid", metric),
        );
        let unix = ratio(
            find(recs, acase, TOKIO_UNIX, metric),
            find(recs, case, "unix", metric),
        );
        if let (Some(a), Some(b)) = (sock, unix) {
            s.push_str(&format!(
                "- tokio / blocking, {what} (procs): manycore-sock {a:.2}x, unix {b:.2}x\n"
            ));
        }
    }
    s
}

const IO_TIMEOUT: Duration = Duration::from_secs(10);

fn mode_of(name: &str) -> WaitMode {
    match name {
        "spin" => WaitMode::Spin,
        "sleep" => WaitMode::Sleep,
        _ => WaitMode::default(),
    }
}

fn bench_ns() -> (Namespace, PathBuf) {
    // SAFETY-free uid lookup: the owner of /proc/self.
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    let dir = PathBuf::from(format!(
        "/dev/shm/manycore-{uid}-bench-{}",
        std::process::id()
    ));
    (Namespace::dir(&dir), dir)
}

/// Echoes `size`-byte messages until EOF.
fn echo<S: Read + Write>(mut s: S, size: usize) -> io::Result<()> {
    let mut buf = vec![0u8; size];
    loop {
        match s.read_exact(&mut buf) {
            Ok(()) => s.write_all(&buf)?,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// [`echo`] on tokio.
async fn echo_async<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, size: usize) -> io::Result<()> {
    let mut buf = vec![0u8; size];
    loop {
        match s.read_exact(&mut buf).await {
            Ok(_) => s.write_all(&buf).await?,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Reads everything, acknowledging each `total` bytes with one byte.
fn sink<S: Read + Write>(mut s: S, total: usize) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0usize;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        got += n;
        while got >= total {
            got -= total;
            s.write_all(&[1])?;
        }
    }
}

/// [`sink`] on tokio.
async fn sink_async<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, total: usize) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0usize;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        got += n;
        while got >= total {
            got -= total;
            s.write_all(&[1]).await?;
        }
    }
}

/// Round trips to break in a connection before a ping-pong is timed.
const WARM_UP: usize = 20;

/// One ping-pong repetition: round trips of `size` bytes for up to `secs`
/// (at least 5, at most 200,000), after a warm-up. Returns each round
/// trip's time in microseconds.
fn pingpong<S: Read + Write>(s: &mut S, size: usize, secs: f64) -> io::Result<Vec<f64>> {
    let mut buf = vec![0x5au8; size];
    for _ in 0..WARM_UP {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
    }
    let mut v = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while v.len() < 5 || (Instant::now() < end && v.len() < 200_000) {
        let t = Instant::now();
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(v)
}

/// [`pingpong`] on tokio.
async fn pingpong_async<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    size: usize,
    secs: f64,
) -> io::Result<Vec<f64>> {
    let mut buf = vec![0x5au8; size];
    for _ in 0..WARM_UP {
        s.write_all(&buf).await?;
        s.read_exact(&mut buf).await?;
    }
    let mut v = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while v.len() < 5 || (Instant::now() < end && v.len() < 200_000) {
        let t = Instant::now();
        s.write_all(&buf).await?;
        s.read_exact(&mut buf).await?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(v)
}

/// (median of the repetitions' medians, p99 over all samples) of ping-pong
/// repetitions.
fn summarize(reps: &[Vec<f64>]) -> (f64, f64) {
    let meds: Vec<f64> = reps.iter().filter_map(|v| median(v)).collect();
    let all: Vec<f64> = reps.concat();
    let nan = f64::NAN;
    (median(&meds).unwrap_or(nan), p99(&all).unwrap_or(nan))
}

/// One stream repetition: 1 MiB writes, `total` bytes, then the sink's
/// acknowledgement. Returns the throughput in MiB/s.
fn stream<S: Read + Write>(s: &mut S, total: usize) -> io::Result<f64> {
    let buf = vec![0xa5u8; 1 << 20];
    let mut ack = [0u8; 1];
    let t = Instant::now();
    let mut sent = 0;
    while sent < total {
        let n = (total - sent).min(buf.len());
        s.write_all(&buf[..n])?;
        sent += n;
    }
    s.read_exact(&mut ack)?;
    Ok(total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

/// [`stream`] on tokio.
async fn stream_async<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, total: usize) -> io::Result<f64> {
    let buf = vec![0xa5u8; 1 << 20];
    let mut ack = [0u8; 1];
    let t = Instant::now();
    let mut sent = 0;
    while sent < total {
        let n = (total - sent).min(buf.len());
        s.write_all(&buf[..n]).await?;
        sent += n;
    }
    s.read_exact(&mut ack).await?;
    Ok(total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64())
}

/// A current-thread tokio runtime (I/O, and timers when `time`).
fn runtime(time: bool) -> io::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_io();
    if time {
        b.enable_time();
    }
    b.build()
}

/// Runs `f` on a fresh current-thread runtime, giving up after `bound`.
fn on_tokio<T>(bound: Duration, f: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    runtime(true)?.block_on(async {
        tokio::time::timeout(bound, f).await.unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no result after {bound:?}"),
            ))
        })
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Sock(&'static str),
    Unix,
    Tcp,
    /// `AsyncShmStream` on tokio (default wait mode).
    SockTokio,
    /// tokio's `UnixStream`.
    TokioUnix,
}

impl Kind {
    fn name(&self) -> String {
        match self {
            Kind::Sock(m) => format!("manycore-sock-{m}"),
            Kind::Unix => "unix".into(),
            Kind::Tcp => "tcp".into(),
            Kind::SockTokio => SOCK_TOKIO.into(),
            Kind::TokioUnix => TOKIO_UNIX.into(),
        }
    }
}

/// One end of a connected pair, whatever the transport.
trait Stream: Read + Write + Send {}
impl<S: Read + Write + Send> Stream for S {}
type Conn = Box<dyn Stream>;

/// The measuring end of a pair: blocking, or one a tokio row wraps.
enum End {
    Sync(Conn),
    Shm(ShmStream),
    Unix(UnixStream),
}

/// Whatever runs the other end of a pair.
enum Other {
    Thread(std::thread::JoinHandle<io::Result<()>>),
    Proc(Child),
}

impl Other {
    fn finish(self) {
        match self {
            Other::Thread(t) => {
                let _ = t.join();
            }
            Other::Proc(mut c) => {
                let end = Instant::now() + Duration::from_secs(5);
                loop {
                    match c.try_wait() {
                        Ok(Some(_)) => break,
                        Ok(None) if Instant::now() < end => {
                            std::thread::sleep(Duration::from_millis(2))
                        }
                        _ => {
                            let _ = c.kill();
                            let _ = c.wait();
                            break;
                        }
                    }
                }
            }
        }
    }
}

fn spawn_peer(args: &[String]) -> io::Result<Child> {
    Command::new(std::env::current_exe()?)
        .arg(crate::cli::peer_command(&BENCH))
        .args(args)
        .stdin(Stdio::piped())
        .spawn()
}

static PORT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(100);

/// Sets up a connected pair: binds a listener of `kind`, starts the other
/// end ([`peer`], in a thread or, with `procs`, in a peer process) as
/// `role` "echo" (with `arg` = message size) or "sink" (with `arg` = bytes
/// per acknowledgement), and accepts it; `buffer` is the manycore-sock
/// buffer size. The tokio kinds' peers run `role` on tokio ("async-" before
/// their role) and their measuring end comes back unwrapped.
fn setup(
    buffer: usize,
    kind: Kind,
    procs: bool,
    role: &'static str,
    arg: usize,
    ns: &Namespace,
    dir: &Path,
) -> io::Result<(End, Other)> {
    let port = PORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = |args: Vec<String>| -> io::Result<Other> {
        Ok(if procs {
            Other::Proc(spawn_peer(&args)?)
        } else {
            Other::Thread(std::thread::spawn(move || peer(&args)))
        })
    };
    let (arg, dir) = (arg.to_string(), dir.display().to_string());
    let tokio = matches!(kind, Kind::SockTokio | Kind::TokioUnix);
    let role = |transport: &str| match tokio {
        true => format!("async-{transport}-{role}"),
        false => format!("{transport}-{role}"),
    };
    match kind {
        Kind::Sock(_) | Kind::SockTokio => {
            let mode = match kind {
                Kind::Sock(m) => m,
                _ => "hybrid",
            };
            let config = Config {
                wait_mode: mode_of(mode),
                buffer_size: buffer,
                ..Config::default()
            };
            let l = ShmListener::bind_with(&ns.addr(port), config)?;
            l.set_accept_timeout(Some(IO_TIMEOUT))?;
            let other = start(vec![role("sock"), dir, port.to_string(), mode.into(), arg])?;
            let (s, _) = l.accept()?;
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            s.set_write_timeout(Some(IO_TIMEOUT))?;
            Ok((if tokio { End::Shm(s) } else { End::Sync(Box::new(s)) }, other))
        }
        Kind::Unix | Kind::TokioUnix => {
            let path = PathBuf::from(dir).join(format!("unix-{port}"));
            let _ = std::fs::remove_file(&path);
            let l = UnixListener::bind(&path)?;
            let other = start(vec![role("unix"), path.display().to_string(), arg])?;
            let (s, _) = l.accept()?;
            let _ = std::fs::remove_file(&path);
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            Ok((if tokio { End::Unix(s) } else { End::Sync(Box::new(s)) }, other))
        }
        Kind::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0")?;
            let p = l.local_addr()?.port();
            let other = start(vec![role("tcp"), p.to_string(), arg])?;
            let (s, _) = l.accept()?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            Ok((End::Sync(Box::new(s)), other))
        }
    }
}

fn size_name(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}MiB", n >> 20)
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{}KiB", n >> 10)
    } else {
        format!("{n}B")
    }
}

/// What one repetition of a row does.
#[derive(Clone, Copy)]
enum Work {
    /// Ping-pong of `size`-byte messages for `secs`.
    Rtt { size: usize, secs: f64 },
    /// Streams `total` bytes.
    Stream { total: usize },
}

/// One row of a case group: its record names, what it runs, and its
/// figures so far (per repetition: round-trip times, or one throughput).
struct Row {
    case: String,
    name: String,
    kind: Kind,
    buffer: usize,
    reps: Vec<Vec<f64>>,
    failed: bool,
}

impl Row {
    fn new(case: &str, name: String, kind: Kind, buffer: usize) -> Self {
        Row {
            case: case.into(),
            name,
            kind,
            buffer,
            reps: Vec::new(),
            failed: false,
        }
    }
}

/// One repetition of `row` on a fresh connection and peer.
fn one_rep(row: &Row, work: Work, procs: bool, ns: &Namespace, dir: &Path) -> io::Result<Vec<f64>> {
    let (role, arg) = match work {
        Work::Rtt { size, .. } => ("echo", size),
        Work::Stream { total } => ("sink", total),
    };
    // Bounds a tokio repetition (blocking ones time out per call).
    let bound = match work {
        Work::Rtt { secs, .. } => Duration::from_secs_f64(secs) + IO_TIMEOUT,
        Work::Stream { .. } => 3 * IO_TIMEOUT,
    };
    async fn run_async<S: AsyncRead + AsyncWrite + Unpin>(
        s: &mut S,
        work: Work,
    ) -> io::Result<Vec<f64>> {
        match work {
            Work::Rtt { size, secs } => pingpong_async(s, size, secs).await,
            Work::Stream { total } => Ok(vec![stream_async(s, total).await?]),
        }
    }
    let (end, other) = setup(row.buffer, row.kind, procs, role, arg, ns, dir)?;
    let r = match end {
        End::Sync(mut c) => {
            let r = match work {
                Work::Rtt { size, secs } => pingpong(&mut c, size, secs),
                Work::Stream { total } => stream(&mut c, total).map(|t| vec![t]),
            };
            drop(c);
            r
        }
        End::Shm(s) => on_tokio(bound, async move {
            run_async(&mut AsyncShmStream::new(s)?, work).await
        }),
        End::Unix(s) => on_tokio(bound, async move {
            s.set_nonblocking(true)?;
            run_async(&mut tokio::net::UnixStream::from_std(s)?, work).await
        }),
    };
    other.finish();
    r
}

/// Runs the rows of one case group interleaved: `reps` rounds, each one
/// repetition of every row, starting one row later each round. A row that
/// fails is reported and left out from then on.
fn run_group(
    rows: &mut [Row],
    work: Work,
    procs: bool,
    reps: usize,
    ns: &Namespace,
    dir: &Path,
    progress: &Progress,
) {
    let n = rows.len();
    for rep in 0..reps {
        for i in 0..n {
            let row = &mut rows[(i + rep) % n];
            if row.failed {
                continue;
            }
            progress.set_message(&format!("sock: {} {} ({}/{reps})", row.case, row.name, rep + 1));
            match one_rep(row, work, procs, ns, dir) {
                Ok(v) => row.reps.push(v),
                Err(e) => {
                    progress.println(&format!("sock bench: {} {}: {e}", row.case, row.name));
                    row.failed = true;
                }
            }
        }
    }
}

/// Runs every part of the bench (or those `--only` names).
fn run(opts: &Options, progress: &Progress) -> Vec<Record> {
    let mut out = Vec::new();
    let (ns, dir) = bench_ns();
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
    }) {
        progress.println(&format!("sock bench: cannot create {}: {e}", dir.display()));
        return out;
    }
    let reps = opts.reps.max(1);
    let secs = rtt_secs(opts) / reps as f64 * 2.0;
    // `--buffer`, or the case's own size.
    let buffer = |own: usize| {
        opts.get("--buffer")
            .and_then(|v| v.first()?.parse().ok())
            .unwrap_or(own)
    };
    let kinds = [
        Kind::Sock("spin"),
        Kind::Sock("hybrid"),
        Kind::Sock("sleep"),
        Kind::Unix,
        Kind::Tcp,
    ];
    let tokio_kinds = [Kind::TokioUnix, Kind::SockTokio];
    let sizes: &[usize] = &[64, 1024, 64 << 10];
    for procs in [false, true] {
        let wher = if procs { "procs" } else { "threads" };
        for &size in sizes.iter().filter(|_| wanted(opts, "rtt")) {
            let case = format!("rtt-{}-{wher}", size_name(size));
            let own = buffer(256 << 10);
            let mut rows: Vec<Row> = kinds
                .iter()
                .map(|k| Row::new(&case, k.name(), *k, own))
                .collect();
            if procs && size == 64 {
                rows.extend(
                    tokio_kinds
                        .iter()
                        .map(|k| Row::new(RTT_ASYNC, k.name(), *k, own)),
                );
            }
            run_group(&mut rows, Work::Rtt { size, secs }, procs, reps, &ns, &dir, progress);
            for r in rows.iter().filter(|r| !r.failed) {
                let (med, p99) = summarize(&r.reps);
                out.push(BENCH.record(&r.case, &r.name, "median", med, "us"));
                out.push(BENCH.record(&r.case, &r.name, "p99", p99, "us"));
            }
        }
        if wanted(opts, "stream") {
            // manycore-sock streams with 1 MiB endpoint buffers (its socket
            // buffer; "-256KiB" is the default size), Unix and TCP with
            // their defaults.
            let case = format!("stream-1MiB-{wher}");
            let mut rows: Vec<Row> = kinds
                .iter()
                .map(|k| Row::new(&case, k.name(), *k, buffer(1 << 20)))
                .collect();
            rows.push(Row::new(
                &case,
                "manycore-sock-hybrid-256KiB".into(),
                Kind::Sock("hybrid"),
                buffer(256 << 10),
            ));
            if procs {
                rows.extend(
                    tokio_kinds
                        .iter()
                        .map(|k| Row::new(STREAM_ASYNC, k.name(), *k, buffer(1 << 20))),
                );
            }
            let work = Work::Stream {
                total: stream_bytes(opts),
            };
            run_group(&mut rows, work, procs, reps, &ns, &dir, progress);
            for r in rows.iter().filter(|r| !r.failed) {
                if let Some(t) = median(&r.reps.concat()) {
                    out.push(BENCH.record(&r.case, &r.name, "throughput", t, "MiB/s"));
                }
            }
        }
    }
    if wanted(opts, "table1") {
        progress.set_message("sock: table1");
        match table1(opts, &ns, &dir) {
            Ok(mut v) => out.append(&mut v),
            Err(e) => progress.println(&format!("sock bench: table1: {e}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// Seconds per repetition of a Table 1 row.
fn table1_secs(o: &Options) -> f64 {
    if o.quick {
        0.05
    } else {
        o.secs.max(0.1)
    }
}

/// rckSock Table 1: the server's 8 KiB buffer is split among 1..65 connections
/// (filler clients in a peer process); the newest connection, which holds the
/// smallest buddy, runs a ping-pong. Reports its throughput and chunk size.
fn table1(opts: &Options, ns: &Namespace, dir: &Path) -> io::Result<Vec<Record>> {
    let mut out = Vec::new();
    let port = PORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let addr = ns.addr(port);
    let server_buf = 8192;
    let l = ShmListener::bind_with(
        &addr,
        Config {
            buffer_size: server_buf,
            min_chunk: 64,
            ..Config::default()
        },
    )?;
    l.set_accept_timeout(Some(IO_TIMEOUT))?;
    // The measured client has its own undivided 8 KiB buffer, as a core's MPB.
    set_client_config(Config {
        buffer_size: server_buf,
        ..Config::default()
    });
    let mut fill = spawn_peer(&[
        "sock-fillers".into(),
        dir.display().to_string(),
        port.to_string(),
    ])?;
    let mut fill_in = fill
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no stdin"))?;
    let mut fillers = Vec::new();
    let msg = if opts.quick { 8 << 10 } else { 64 << 10 };
    let reps = 3;
    let secs = table1_secs(opts);
    let result = (|| -> io::Result<()> {
        for n in [1usize, 2, 3, 5, 9, 17, 33, 65] {
            // n - 1 idle fillers, then the measured client (the newest: smallest chunk).
            writeln!(fill_in, "{}", n - 1)?;
            fill_in.flush()?;
            while fillers.len() < n - 1 {
                fillers.push(l.accept()?.0);
            }
            let a = addr.clone();
            let client = std::thread::spawn(move || -> io::Result<(f64, f64)> {
                let mut s = ShmStream::connect_timeout(&a, IO_TIMEOUT)?;
                s.set_read_timeout(Some(IO_TIMEOUT))?;
                let v = (0..reps)
                    .map(|_| pingpong(&mut s, msg, secs))
                    .collect::<io::Result<Vec<_>>>()?;
                Ok(summarize(&v))
            });
            let (srv, _) = l.accept()?;
            srv.set_read_timeout(Some(IO_TIMEOUT))?;
            let chunk = srv.send_chunk();
            let echo_t = std::thread::spawn(move || echo(srv, msg));
            let (med_us, _) = client
                .join()
                .map_err(|_| io::Error::other("client panicked"))??;
            let _ = echo_t.join();
            let case = format!("table1-clients-{n}");
            let mibs = 2.0 * msg as f64 / (1 << 20) as f64 / (med_us / 1e6);
            out.push(BENCH.record(
                &case,
                "manycore-sock-hybrid",
                "throughput",
                mibs,
                "MiB/s",
            ));
            out.push(BENCH.record(
                &case,
                "manycore-sock-hybrid",
                "chunk",
                chunk as f64,
                "B",
            ));
        }
        Ok(())
    })();
    drop(fill_in);
    drop(fillers);
    let _ = fill.wait();
    set_client_config(Config::default());
    result.map(|_| out)
}


/// The process-pair peer: `manycore __sock-peer <role> <args...>`. Returns the
/// process exit code.
pub fn peer_main(args: &[String]) -> i32 {
    match peer(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("__sock-peer {args:?}: {e}");
            1
        }
    }
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> io::Result<T> {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("bad argument {i}")))
}

/// Runs `serve` (echo or sink, with `n`) on a current-thread tokio runtime
/// over the stream `wrap` makes (within the runtime).
fn serve_on_tokio<S: AsyncRead + AsyncWrite + Unpin>(
    wrap: impl FnOnce() -> io::Result<S>,
    serve: &str,
    n: usize,
) -> io::Result<()> {
    runtime(false)?.block_on(async move {
        let s = wrap()?;
        match serve {
            "echo" => echo_async(s, n).await,
            "sink" => sink_async(s, n).await,
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown peer role")),
        }
    })
}

/// The other end of a pair, in a thread or a peer process: `sock-ROLE DIR
/// PORT MODE N`, `unix-ROLE PATH N` or `tcp-ROLE PORT N` connects and runs
/// ROLE (`echo` of N-byte messages, or `sink` acknowledging every N bytes);
/// `async-sock-ROLE ...` and `async-unix-ROLE ...` do the same on a
/// current-thread tokio runtime (`AsyncShmStream`, tokio's `UnixStream`);
/// `sock-fillers DIR PORT` holds as many idle connections as each line on
/// stdin asks for (Table 1).
fn peer(args: &[String]) -> io::Result<()> {
    let role = args.first().map(String::as_str).unwrap_or("");
    let sock_addr = || -> io::Result<SockAddr> {
        Ok(Namespace::dir(args.get(1).cloned().unwrap_or_default()).addr(arg(args, 2)?))
    };
    if role == "sock-fillers" {
        let addr = sock_addr()?;
        let mut conns = Vec::new();
        for line in io::stdin().lock().lines() {
            let want: usize = line?.trim().parse().unwrap_or(0);
            while conns.len() < want {
                conns.push(ShmStream::connect_timeout(&addr, IO_TIMEOUT)?);
            }
        }
        return Ok(());
    }
    let (on_tokio, role) = match role.strip_prefix("async-") {
        Some(r) => (true, r),
        None => (false, role),
    };
    let (transport, serve) = role.split_once('-').unwrap_or_default();
    let n: usize = arg(args, args.len().saturating_sub(1))?;
    let conn: Conn = match transport {
        "sock" => {
            let s = ShmStream::connect_timeout(&sock_addr()?, IO_TIMEOUT)?;
            s.set_wait_mode(mode_of(args.get(3).map(String::as_str).unwrap_or("")));
            if on_tokio {
                return serve_on_tokio(|| AsyncShmStream::new(s), serve, n);
            }
            Box::new(s)
        }
        "unix" => {
            let s = UnixStream::connect(args.get(1).cloned().unwrap_or_default())?;
            if on_tokio {
                s.set_nonblocking(true)?;
                return serve_on_tokio(|| tokio::net::UnixStream::from_std(s), serve, n);
            }
            Box::new(s)
        }
        "tcp" if !on_tokio => {
            let s = TcpStream::connect(("127.0.0.1", arg::<u16>(args, 1)?))?;
            s.set_nodelay(true)?;
            Box::new(s)
        }
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown peer role")),
    };
    match serve {
        "echo" => echo(conn, n),
        "sink" => sink(conn, n),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown peer role")),
    }
}
