//! `manycore bench sock`: sockets over shared memory (`manycore-sock`) side
//! by side with Unix domain sockets and TCP loopback, between two threads and
//! between two processes, plus a reproduction of Table 1 of "A Lightweight
//! and Resource-aware Socket Emulation Layer for the Intel SCC Processor"
//! (rckSock): one client's ping-pong throughput as the server's 8 KiB buffer
//! is split among more and more connections.
//!
//! Process pairs re-execute the current binary as `manycore __sock-peer ...`
//! ([`peer_main`]). Every measurement is bounded in time; figures are medians
//! over repetitions (p99 over all samples).

use crate::bench::{Bench, Opt, Options};
use crate::progress::Progress;
use crate::record::Record;
use crate::stats::{median, p99};
use manycore_sock::{
    set_client_config, Config, Namespace, ShmListener, ShmStream, SockAddr, WaitMode,
};
use std::io::{self, BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `manycore bench sock`.
pub const BENCH: Bench = Bench {
    name: "sock",
    about: "shared-memory sockets vs Unix and TCP; rckSock Table 1",
    title: "Sockets over shared memory (rckSock)",
    method: "Round trips (`rtt`, 64 B to 64 KiB) and 1 MiB streaming between two processes \
             and two threads, manycore-sock (spin, hybrid, sleep) against Unix domain sockets \
             and TCP loopback; each round-trip case runs --reps repetitions of 2 x --secs / \
             --reps seconds (median of the repetitions' medians, p99 over all samples), each \
             stream moves 256 MiB (32 MiB with --quick) --reps times (median throughput). \
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
    peer: Some(peer_main),
    ..Bench::DEFAULT
};

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

/// Round-trip cases take 2 x their seconds and 10 ms to set up, streams move
/// their bytes at about 2 GiB/s, Table 1 rows take 3 repetitions and 20 ms
/// to set up.
fn expected_secs(o: &Options) -> f64 {
    let mut t = 0.0;
    if wanted(o, "rtt") {
        t += 30.0 * (2.0 * rtt_secs(o) + 0.01);
    }
    if wanted(o, "stream") {
        t += 12.0 * (stream_bytes(o) as f64 * o.reps as f64 / (2u64 << 30) as f64 + 0.01);
    }
    if wanted(o, "table1") {
        t += 8.0 * (3.0 * table1_secs(o) + 0.02);
    }
    t
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

/// Ping-pong: `reps` repetitions of up to `secs` each. Returns (median of
/// the repetitions' medians, p99 over all samples) in microseconds.
fn pingpong<S: Read + Write>(
    s: &mut S,
    size: usize,
    secs: f64,
    reps: usize,
) -> io::Result<(f64, f64)> {
    let mut buf = vec![0x5au8; size];
    for _ in 0..20 {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
    }
    let mut meds = Vec::new();
    let mut all = Vec::new();
    for _ in 0..reps {
        let mut v = Vec::new();
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while v.len() < 5 || (Instant::now() < end && v.len() < 200_000) {
            let t = Instant::now();
            s.write_all(&buf)?;
            s.read_exact(&mut buf)?;
            v.push(t.elapsed().as_secs_f64() * 1e6);
        }
        all.extend_from_slice(&v);
        meds.extend(median(&v));
    }
    let nan = f64::NAN;
    Ok((median(&meds).unwrap_or(nan), p99(&all).unwrap_or(nan)))
}

/// Streams 1 MiB writes: per repetition `total` bytes, waits for the sink's
/// acknowledgement. Returns the median throughput in MiB/s.
fn stream<S: Read + Write>(s: &mut S, total: usize, reps: usize) -> io::Result<f64> {
    let buf = vec![0xa5u8; 1 << 20];
    let mut ack = [0u8; 1];
    let mut v = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let mut sent = 0;
        while sent < total {
            let n = (total - sent).min(buf.len());
            s.write_all(&buf[..n])?;
            sent += n;
        }
        s.read_exact(&mut ack)?;
        v.push(total as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64());
    }
    Ok(median(&v).unwrap_or(f64::NAN))
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Sock(&'static str),
    Unix,
    Tcp,
}

impl Kind {
    fn name(&self) -> String {
        match self {
            Kind::Sock(m) => format!("manycore-sock-{m}"),
            Kind::Unix => "unix".into(),
            Kind::Tcp => "tcp".into(),
        }
    }
}

/// One end of a connected pair, whatever the transport.
trait Stream: Read + Write + Send {}
impl<S: Read + Write + Send> Stream for S {}
type Conn = Box<dyn Stream>;

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
/// buffer size.
fn setup(
    buffer: usize,
    kind: Kind,
    procs: bool,
    role: &'static str,
    arg: usize,
    ns: &Namespace,
    dir: &std::path::Path,
) -> io::Result<(Conn, Other)> {
    let port = PORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = |args: Vec<String>| -> io::Result<Other> {
        Ok(if procs {
            Other::Proc(spawn_peer(&args)?)
        } else {
            Other::Thread(std::thread::spawn(move || peer(&args)))
        })
    };
    let (arg, dir) = (arg.to_string(), dir.display().to_string());
    match kind {
        Kind::Sock(mode) => {
            let wait_mode = mode_of(mode);
            let config = Config {
                wait_mode,
                buffer_size: buffer,
                ..Config::default()
            };
            let l = ShmListener::bind_with(&ns.addr(port), config)?;
            l.set_accept_timeout(Some(IO_TIMEOUT))?;
            let other = start(vec![format!("sock-{role}"), dir, port.to_string(), mode.into(), arg])?;
            let (s, _) = l.accept()?;
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            s.set_write_timeout(Some(IO_TIMEOUT))?;
            Ok((Box::new(s), other))
        }
        Kind::Unix => {
            let path = PathBuf::from(dir).join(format!("unix-{port}"));
            let _ = std::fs::remove_file(&path);
            let l = UnixListener::bind(&path)?;
            let other = start(vec![format!("unix-{role}"), path.display().to_string(), arg])?;
            let (s, _) = l.accept()?;
            let _ = std::fs::remove_file(&path);
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            Ok((Box::new(s), other))
        }
        Kind::Tcp => {
            let l = TcpListener::bind("127.0.0.1:0")?;
            let p = l.local_addr()?.port();
            let other = start(vec![format!("tcp-{role}"), p.to_string(), arg])?;
            let (s, _) = l.accept()?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            Ok((Box::new(s), other))
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
    let secs = rtt_secs(opts);
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
    let sizes: &[usize] = &[64, 1024, 64 << 10];
    for procs in [false, true] {
        let wher = if procs { "procs" } else { "threads" };
        for &size in sizes.iter().filter(|_| wanted(opts, "rtt")) {
            for kind in kinds {
                let case = format!("rtt-{}-{wher}", size_name(size));
                progress.set_message(&format!("sock: {case} {}", kind.name()));
                let r = setup(buffer(256 << 10), kind, procs, "echo", size, &ns, &dir).and_then(
                    |(mut c, other)| {
                        let r = pingpong(&mut c, size, secs / reps as f64 * 2.0, reps);
                        drop(c);
                        other.finish();
                        r
                    },
                );
                match r {
                    Ok((med, p99)) => {
                        out.push(BENCH.record(&case, &kind.name(), "median", med, "us"));
                        out.push(BENCH.record(&case, &kind.name(), "p99", p99, "us"));
                    }
                    Err(e) => progress.println(&format!("sock bench: {case} {}: {e}", kind.name())),
                }
            }
        }
        let total = stream_bytes(opts);
        // manycore-sock streams with 1 MiB endpoint buffers (its socket buffer;
        // "-256KiB" is the default size), Unix and TCP with their defaults.
        let stream_cases = kinds
            .into_iter()
            .map(|k| (k, 1usize << 20, k.name()))
            .chain([(
                Kind::Sock("hybrid"),
                256 << 10,
                "manycore-sock-hybrid-256KiB".to_string(),
            )]);
        for (kind, own, name) in stream_cases.filter(|_| wanted(opts, "stream")) {
            let case = format!("stream-1MiB-{wher}");
            progress.set_message(&format!("sock: {case} {name}"));
            let r =
                setup(buffer(own), kind, procs, "sink", total, &ns, &dir).and_then(|(mut c, other)| {
                    let r = stream(&mut c, total, reps);
                    drop(c);
                    other.finish();
                    r
                });
            match r {
                Ok(t) => out.push(BENCH.record(&case, &name, "throughput", t, "MiB/s")),
                Err(e) => progress.println(&format!("sock bench: {case} {name}: {e}")),
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
fn table1(opts: &Options, ns: &Namespace, dir: &std::path::Path) -> io::Result<Vec<Record>> {
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
                pingpong(&mut s, msg, secs, reps)
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

/// The other end of a pair, in a thread or a peer process: `sock-ROLE DIR
/// PORT MODE N`, `unix-ROLE PATH N` or `tcp-ROLE PORT N` connects and runs
/// ROLE (`echo` of N-byte messages, or `sink` acknowledging every N bytes);
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
    let (transport, serve) = role.split_once('-').unwrap_or_default();
    let conn: Conn = match transport {
        "sock" => {
            let s = ShmStream::connect_timeout(&sock_addr()?, IO_TIMEOUT)?;
            s.set_wait_mode(mode_of(args.get(3).map(String::as_str).unwrap_or("")));
            Box::new(s)
        }
        "unix" => Box::new(UnixStream::connect(
            args.get(1).cloned().unwrap_or_default(),
        )?),
        "tcp" => {
            let s = TcpStream::connect(("127.0.0.1", arg::<u16>(args, 1)?))?;
            s.set_nodelay(true)?;
            Box::new(s)
        }
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown peer role")),
    };
    let n: usize = arg(args, args.len().saturating_sub(1))?;
    match serve {
        "echo" => echo(conn, n),
        "sink" => sink(conn, n),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "unknown peer role")),
    }
}
