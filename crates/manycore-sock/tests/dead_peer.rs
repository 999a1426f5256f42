//! A peer process SIGKILLed while this side waits without blocking: on
//! the readiness descriptor under plain poll(2), as an event loop other
//! than tokio would use it, and (feature `tokio`) in a pending
//! `AsyncShmStream` read or write or `AsyncShmListener::accept`, on a
//! current-thread and a multi-thread runtime. The wait must end with the
//! error a blocking call gives (`ConnectionReset` for a read once the data
//! is drained, `BrokenPipe` for a write), and a task must not spin on the
//! way. The test binary re-executes itself as the peer.
mod common;
use common::*;
use manycore_sock::{ShmListener, ShmStream};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

const PORT: u32 = 31;
/// The port of a peer that listens (we connect to it).
const PEER_PORT: u32 = 32;
/// Bounds every wait: none is expected to come near it, it only turns a
/// hang into a failure.
const BOUND: Duration = Duration::from_secs(30);
const HELLO: &[u8] = b"hello";

/// The peer's entry point: does nothing unless started by a parent test.
/// Every role then holds its stream until it is killed.
#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    let _keep = match role.as_str() {
        // Connects, writes `HELLO`, never reads.
        "write-then-wait" => {
            let mut s = ShmStream::connect(&ns.addr(PORT)).unwrap();
            s.write_all(HELLO).unwrap();
            Some(s)
        }
        // Listens, accepts one, writes `HELLO`, never reads.
        "serve-then-wait" => {
            let l = ShmListener::bind(&ns.addr(PEER_PORT)).unwrap();
            let (mut s, _) = l.accept().unwrap();
            s.write_all(HELLO).unwrap();
            Some(s)
        }
        // Listens and never accepts: our connection stays in its backlog.
        "bind-and-wait" => {
            let l = ShmListener::bind(&ns.addr(PEER_PORT)).unwrap();
            std::thread::sleep(Duration::from_secs(60));
            drop(l);
            None
        }
        // Connects and exits 0 once accepted (reads EOF or anything).
        "connect" => {
            let s = ShmStream::connect(&ns.addr(PORT)).unwrap();
            s.set_read_timeout(Some(BOUND)).unwrap();
            let _ = (&s).read(&mut [0u8; 1]);
            std::process::exit(0);
        }
        other => panic!("unknown role {other}"),
    };
    std::thread::sleep(Duration::from_secs(60));
    std::process::exit(0);
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < BOUND, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn readable(fd: &impl AsFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let r = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as i32) };
    r > 0
}

/// Writes until a non-blocking write would block (the peer never reads).
fn fill(s: &ShmStream) {
    let chunk = vec![7u8; 16 << 10];
    loop {
        match (&*s).write(&chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn polled_descriptor_becomes_readable_and_reports_the_death() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = Guard(spawn("peer", "write-then-wait", &ns, &[]));
    let (s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    let _fd = s.as_fd();
    let mut buf = [0u8; 64];
    let mut got = 0;
    while got < HELLO.len() {
        match (&s).read(&mut buf[got..]) {
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(readable(&s, BOUND), "no doorbell for data")
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(&buf[..got], HELLO);
    // Both directions armed: nothing to read, no room to write.
    assert_eq!(
        (&s).read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    fill(&s);
    kill9(&mut child.0);
    assert!(readable(&s, BOUND), "no wake-up for the death");
    assert_eq!(
        (&s).read(&mut buf).unwrap_err().kind(),
        ErrorKind::ConnectionReset
    );
    assert_eq!((&s).write(&buf).unwrap_err().kind(), ErrorKind::BrokenPipe);
    // A hang-up is a state: the descriptor stays readable, and every call
    // reports the death again (a level-triggered loop does not spin on
    // `WouldBlock`).
    assert!(readable(&s, Duration::ZERO));
    assert_eq!(
        (&s).read(&mut buf).unwrap_err().kind(),
        ErrorKind::ConnectionReset
    );
}

#[test]
fn polled_reader_drains_the_data_before_the_death() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = Guard(spawn("peer", "write-then-wait", &ns, &[]));
    let (s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    let _fd = s.as_fd();
    // The data is committed (the peer wrote it before we could see it)...
    let mut one = [0u8; 1];
    wait_until("the peer wrote", || s.peek(&mut one).is_ok());
    // ...and the peer dies with it unread: we get it, then the reset.
    kill9(&mut child.0);
    assert!(readable(&s, BOUND));
    let mut buf = [0u8; 64];
    assert_eq!((&s).read(&mut buf).unwrap(), HELLO.len());
    assert_eq!(
        (&s).read(&mut buf).unwrap_err().kind(),
        ErrorKind::ConnectionReset
    );
}

#[test]
fn unpolled_nonblocking_calls_report_the_death() {
    let ns = TestNs::new();
    let l = ShmListener::bind(&ns.ns.addr(PORT)).unwrap();
    let mut child = Guard(spawn("peer", "write-then-wait", &ns, &[]));
    let (s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    let mut got = 0;
    let t = Instant::now();
    while got < HELLO.len() {
        match (&s).read(&mut buf[got..]) {
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock && t.elapsed() < BOUND => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("{e}"),
        }
    }
    fill(&s);
    kill9(&mut child.0);
    // Nobody polls the descriptor: the calls probe the peer themselves,
    // now and then.
    let t = Instant::now();
    let e = loop {
        match (&s).read(&mut buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock && t.elapsed() < BOUND => {
                std::thread::sleep(Duration::from_millis(1))
            }
            r => break r.unwrap_err(),
        }
    };
    assert_eq!(e.kind(), ErrorKind::ConnectionReset);
    assert_eq!((&s).write(&buf).unwrap_err().kind(), ErrorKind::BrokenPipe);
}

#[cfg(feature = "tokio")]
mod tokio_types {
    use super::*;
    use manycore_sock::{AsyncShmListener, AsyncShmStream};
    use std::future::Future;
    use std::io;
    use std::panic::AssertUnwindSafe;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Most polls a future that waits for one event may take: a pending
    /// call is polled once, then once per wake-up (the death, and maybe
    /// a doorbell before it). Many more would mean a task that wakes
    /// itself, i.e. spins.
    const MOST_POLLS: u32 = 20;

    /// Connects to the peer's listener once it is bound.
    fn connect_to_peer(ns: &TestNs) -> ShmStream {
        wait_until("the peer bound", || {
            ns.dir.join(format!("p{PEER_PORT}")).exists()
        });
        let t = Instant::now();
        loop {
            match ShmStream::connect(&ns.ns.addr(PEER_PORT)) {
                Ok(s) => return s,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused && t.elapsed() < BOUND => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[derive(Clone, Copy, Debug)]
    enum Flavor {
        CurrentThread,
        MultiThread,
    }

    fn runtime(f: Flavor) -> tokio::runtime::Runtime {
        match f {
            Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Flavor::MultiThread => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(2);
                b
            }
        }
        .enable_io()
        .build()
        .unwrap()
    }

    /// Runs `body` on a runtime of flavour `f` in a thread of its own, and
    /// fails if it has not finished within `BOUND` (a task stuck in a poll
    /// would hold the runtime's thread: no timer could fire on it).
    fn bounded<T: Send + 'static, Fut: Future<Output = T>>(
        f: Flavor,
        body: impl FnOnce() -> Fut + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = runtime(f);
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(body())));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(BOUND) {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => panic!("{f:?}: still waiting {BOUND:?} after the peer died"),
        }
    }

    /// Polls `fut`, and calls `on_pending(i)` after its `i`-th `Pending`
    /// (0 first); yields the output and how often it was polled.
    struct WhenPending<F, P> {
        fut: Pin<Box<F>>,
        on_pending: P,
        pendings: u32,
        polls: u32,
    }

    impl<F: Future, P: FnMut(u32) + Unpin> Future for WhenPending<F, P> {
        type Output = (F::Output, u32);
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = &mut *self;
            this.polls += 1;
            match this.fut.as_mut().poll(cx) {
                Poll::Ready(r) => Poll::Ready((r, this.polls)),
                Poll::Pending => {
                    (this.on_pending)(this.pendings);
                    this.pendings += 1;
                    Poll::Pending
                }
            }
        }
    }

    fn when_pending<F: Future, P: FnMut(u32) + Unpin>(fut: F, on_pending: P) -> WhenPending<F, P> {
        WhenPending {
            fut: Box::pin(fut),
            on_pending,
            pendings: 0,
            polls: 0,
        }
    }

    /// `fut`, with the peer `child` SIGKILLed once `fut` is pending: its
    /// output (checked not to have spun).
    async fn kill_while_pending<T>(fut: impl Future<Output = T>, child: Guard) -> T {
        let mut child = Some(child);
        let mut killed = None;
        let (r, polls) = when_pending(fut, |_| {
            if let Some(mut c) = child.take() {
                kill9(&mut c.0);
                killed = Some(Instant::now());
            }
        })
        .await;
        if let Some(t) = killed {
            eprintln!("saw the death after {:?}, {polls} polls", t.elapsed());
        }
        assert!(polls <= MOST_POLLS, "polled {polls} times: a spinning task");
        r
    }

    /// Accepts the peer and reads its `HELLO`.
    async fn accept_hello(l: &AsyncShmListener) -> io::Result<AsyncShmStream> {
        let (mut s, _) = l.accept().await?;
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).await?;
        assert_eq!(&buf, HELLO);
        Ok(s)
    }

    /// Our pending read on an accepted stream whose peer dies.
    fn read_pending(f: Flavor) {
        let ns = TestNs::new();
        let e = bounded(f, move || async move {
            let l = AsyncShmListener::bind(&ns.ns.addr(PORT))?;
            let child = Guard(spawn("peer", "write-then-wait", &ns, &[]));
            let mut s = accept_hello(&l).await?;
            let mut buf = [0u8; 64];
            let r = kill_while_pending(s.read(&mut buf), child).await;
            Ok::<_, io::Error>(r.unwrap_err().kind())
        })
        .unwrap();
        assert_eq!(e, ErrorKind::ConnectionReset);
    }

    #[test]
    fn read_pending_current_thread() {
        read_pending(Flavor::CurrentThread);
    }

    #[test]
    fn read_pending_multi_thread() {
        read_pending(Flavor::MultiThread);
    }

    /// Our pending write, on a full ring the peer never drains, whose
    /// peer dies.
    fn write_pending(f: Flavor) {
        let ns = TestNs::new();
        let e = bounded(f, move || async move {
            let l = AsyncShmListener::bind(&ns.ns.addr(PORT))?;
            let child = Guard(spawn("peer", "write-then-wait", &ns, &[]));
            let mut s = accept_hello(&l).await?;
            // More than the ring holds: the write goes pending once full.
            let big = vec![3u8; 4 * s.get_ref().send_chunk() as usize];
            let r = kill_while_pending(s.write_all(&big), child).await;
            Ok::<_, io::Error>(r.unwrap_err().kind())
        })
        .unwrap();
        assert_eq!(e, ErrorKind::BrokenPipe);
    }

    #[test]
    fn write_pending_current_thread() {
        write_pending(Flavor::CurrentThread);
    }

    #[test]
    fn write_pending_multi_thread() {
        write_pending(Flavor::MultiThread);
    }

    /// One current-thread runtime connects (to a peer's listener) and
    /// accepts (a peer's connection); both streams' reads are pending when
    /// both peers die.
    #[test]
    fn connector_and_acceptor_on_one_thread() {
        let ns = TestNs::new();
        let (a, b) = bounded(Flavor::CurrentThread, move || async move {
            let l = AsyncShmListener::bind(&ns.ns.addr(PORT))?;
            let server = Guard(spawn("peer", "serve-then-wait", &ns, &[]));
            let client = Guard(spawn("peer", "write-then-wait", &ns, &[]));
            let mut c = AsyncShmStream::new(connect_to_peer(&ns))?;
            let mut s = accept_hello(&l).await?;
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).await?;
            assert_eq!(&buf, HELLO);
            let ta = tokio::spawn(async move {
                let mut buf = [0u8; 64];
                kill_while_pending(c.read(&mut buf), server).await
            });
            let tb = tokio::spawn(async move {
                let mut buf = [0u8; 64];
                kill_while_pending(s.read(&mut buf), client).await
            });
            let a = ta.await.expect("connector task").unwrap_err().kind();
            let b = tb.await.expect("acceptor task").unwrap_err().kind();
            Ok::<_, io::Error>((a, b))
        })
        .unwrap();
        assert_eq!(a, ErrorKind::ConnectionReset);
        assert_eq!(b, ErrorKind::ConnectionReset);
    }

    /// A connector whose connection waits in the backlog of a listener
    /// that dies: its pending read gets `ConnectionReset` (as a blocking
    /// one does), its pending write on a full ring `BrokenPipe`.
    #[test]
    fn connector_in_the_backlog_when_the_listener_dies() {
        for write in [false, true] {
            let ns = TestNs::new();
            let e = bounded(Flavor::CurrentThread, move || async move {
                let listener = Guard(spawn("peer", "bind-and-wait", &ns, &[]));
                let mut c = AsyncShmStream::new(connect_to_peer(&ns))?;
                let r = if write {
                    let big = vec![3u8; 4 * c.get_ref().send_chunk() as usize];
                    kill_while_pending(c.write_all(&big), listener).await
                } else {
                    let mut buf = [0u8; 64];
                    kill_while_pending(c.read(&mut buf), listener)
                        .await
                        .map(drop)
                };
                Ok::<_, io::Error>(r.unwrap_err().kind())
            })
            .unwrap();
            let want = match write {
                true => ErrorKind::BrokenPipe,
                false => ErrorKind::ConnectionReset,
            };
            assert_eq!(e, want, "write: {write}");
        }
    }

    /// A pending `accept` is not concerned by its connectors' deaths: one
    /// killed between connecting and posting its request (held there by
    /// the `internals` hook) is skipped, without a spin, and the next
    /// connector is accepted.
    #[test]
    fn accept_pending_while_a_connector_dies() {
        let ns = TestNs::new();
        let ok = bounded(Flavor::CurrentThread, move || async move {
            let l = AsyncShmListener::bind(&ns.ns.addr(PORT))?;
            let marker = ns.dir.join("paused");
            let hook = (
                "MANYCORE_SOCK_TEST_HOOK",
                format!("pause={}", marker.display()),
            );
            let mut dying = None;
            let mut good = None;
            let (r, polls) = when_pending(l.accept(), |i| match i {
                // Nobody there: a connector connects and stops before its
                // request; accept takes it into its pending set next.
                0 => {
                    dying = Some(Guard(spawn(
                        "peer",
                        "connect",
                        &ns,
                        std::slice::from_ref(&hook),
                    )));
                    wait_until("connector paused", || marker.exists());
                }
                // It is pending there: it dies; a good connector follows.
                1 => {
                    if let Some(mut d) = dying.take() {
                        kill9(&mut d.0);
                    }
                    good = Some(Guard(spawn("peer", "connect", &ns, &[])));
                }
                _ => {}
            })
            .await;
            assert!(polls <= MOST_POLLS, "polled {polls} times: a spinning task");
            let (s, peer) = r?;
            let good = good.expect("the good connector");
            assert_eq!(peer.pid, good.0.id());
            drop(s);
            let mut good = good;
            Ok::<_, io::Error>(good.0.wait()?.success())
        })
        .unwrap();
        assert!(ok, "the good connector failed");
    }
}
