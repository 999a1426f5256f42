//! The reactor: device completions as continuation signals. Every test
//! runs under each backend the kernel offers (epoll always; io_uring where
//! it is allowed). No test asserts on timing; every wait is bounded.

mod common;
use common::{eventually, runtime};
use manycore_flow::{
    eventfd, pipe, timerfd, Backend, FlowError, Instance, IoError, IoResult, Kernel, Outcome,
    Outside, Reactor,
};
use manycore_rt::current;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// The backends this kernel offers.
fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Epoll];
    if Reactor::with_backend(Backend::IoUring).is_ok_and(|r| r.backend() == Backend::IoUring) {
        v.push(Backend::IoUring);
    }
    v
}

fn kernel() -> Outside<Kernel> {
    Outside::new()
}

#[test]
fn the_default_backend_is_epoll_and_io_uring_reports_what_runs() {
    let r = Reactor::new().unwrap();
    assert_eq!(r.backend(), Backend::Epoll);
    assert_eq!(r.stats().devices, 0);
    let u = Reactor::with_backend(Backend::IoUring).unwrap();
    assert!(matches!(u.backend(), Backend::IoUring | Backend::Epoll));
}

#[test]
fn a_completion_reaches_the_named_receiver() {
    for b in backends() {
        let rt = runtime(2);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        // The receiver lives on core 1; another instance there is not named.
        let receiver =
            Instance::<IoResult<Vec<u8>>, Kernel>::new(rt.core(1), 1, move |ctx, data| {
                let on = current().unwrap().index();
                let _ = ctx.signal(&done, (data.into_iter().next().unwrap(), on));
            })
            .unwrap();
        let bystander = Instance::<IoResult<Vec<u8>>, Kernel>::new(rt.core(1), 1, |_, _| {
            panic!("not named by any request")
        })
        .unwrap();
        dev.read(&kernel(), 16, receiver.slot(0));
        File::from(tx).write_all(b"ping").unwrap();
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok((Ok(b"ping".to_vec()), 1)),
            "{b:?}"
        );
        assert!(!bystander.is_complete(), "{b:?}");
        let s = reactor.stats();
        assert_eq!((s.requests, s.completed, s.failed), (1, 1, 0), "{b:?}");
    }
}

#[test]
fn a_write_completes_with_the_count_written() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(tx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.write(&kernel(), b"hello".to_vec(), done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(5)), "{b:?}");
        let mut got = [0u8; 5];
        File::from(rx).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
    }
}

#[test]
fn a_device_that_hangs_up_mid_request_answers_closed() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done);
        eventually("the request to reach the reactor", || {
            reactor.stats().requests == 1
        });
        drop(tx); // the writer goes away: end of stream
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Closed)), "{b:?}");
        // And so does every later read.
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Closed)), "{b:?}");
    }
}

#[test]
fn a_device_error_mid_request_is_delivered_to_the_receiver() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (ours, peer) = UnixStream::pair().unwrap();
        let dev = reactor.register(ours).unwrap();
        // Data the peer never reads: closing it resets the connection.
        let (wrote, w) = Outcome::new(rt.core(0)).unwrap();
        dev.write(&kernel(), b"unread".to_vec(), wrote);
        assert_eq!(w.wait_timeout(WAIT), Ok(Ok(6)), "{b:?}");
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done);
        eventually("the request to reach the reactor", || {
            reactor.stats().requests == 2
        });
        drop(peer);
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok(Err(IoError::Os(libc_econnreset()))),
            "{b:?}"
        );
        assert_eq!(reactor.stats().failed, 1, "{b:?}");
    }
}

/// ECONNRESET on Linux.
fn libc_econnreset() -> i32 {
    std::io::Error::from(std::io::ErrorKind::ConnectionReset)
        .raw_os_error()
        .unwrap_or(104)
}

#[test]
fn a_write_to_a_hung_up_pipe_answers_closed() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        drop(rx);
        let dev = reactor.register(tx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.write(&kernel(), b"lost".to_vec(), done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Closed)), "{b:?}");
    }
}

#[test]
fn a_request_the_fd_refuses_answers_its_errno() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (_rx, tx) = pipe().unwrap();
        let dev = reactor.register(tx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done); // a pipe's write end cannot be read
        let got = out.wait_timeout(WAIT).unwrap();
        assert!(
            matches!(got, Err(IoError::Os(e)) if e == 9 /* EBADF */),
            "{b:?}: {got:?}"
        );
    }
}

#[test]
fn dropping_a_device_deregisters_it_and_answers_deregistered() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done);
        drop(dev);
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok(Err(IoError::Deregistered)),
            "{b:?}"
        );
        eventually("the device to go", || reactor.stats().devices == 0);
        // Its fd is closed: the pipe has no reader any more.
        let tx = File::from(tx);
        eventually("the fd to close", || (&tx).write(b"x").is_err());
    }
}

#[test]
fn many_outstanding_requests_are_answered_in_order_per_device() {
    const DEVICES: usize = 4;
    const PER: usize = 100;
    for b in backends() {
        let rt = runtime(2);
        let reactor = Reactor::with_backend(b).unwrap();
        let mut writers = Vec::new();
        let mut outs = Vec::new();
        for d in 0..DEVICES {
            let (rx, tx) = pipe().unwrap();
            let dev = reactor.register(rx).unwrap();
            for i in 0..PER {
                let (done, out) = Outcome::new(rt.core(i % 2)).unwrap();
                dev.read(&kernel(), 8, done);
                outs.push((d, i, out));
            }
            writers.push((File::from(tx), dev));
        }
        // Eight-byte messages (atomic pipe writes; a read of 8 takes one).
        for i in 0..PER {
            for (d, (w, _)) in writers.iter_mut().enumerate() {
                w.write_all(&((d * PER + i) as u64).to_le_bytes()).unwrap();
            }
        }
        for (d, i, out) in outs {
            let got = out.wait_timeout(WAIT).unwrap().unwrap();
            let v = u64::from_le_bytes(got.try_into().unwrap());
            assert_eq!(v, (d * PER + i) as u64, "{b:?}: device {d}, request {i}");
        }
        let s = reactor.stats();
        assert_eq!(s.requests, (DEVICES * PER) as u64);
        assert_eq!(s.completed, (DEVICES * PER) as u64);
    }
}

#[test]
fn reactor_shutdown_answers_outstanding_requests_with_shutdown() {
    for b in backends() {
        let rt = runtime(2);
        let reactor = Reactor::with_backend(b).unwrap();
        let mut keep = Vec::new();
        let mut outs = Vec::new();
        for i in 0..3 {
            let (rx, tx) = pipe().unwrap();
            let dev = reactor.register(rx).unwrap();
            let (done, out) = Outcome::new(rt.core(i % 2)).unwrap();
            dev.read(&kernel(), 8, done);
            outs.push(out);
            keep.push((dev, tx));
        }
        reactor.shutdown();
        for out in outs {
            assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Shutdown)), "{b:?}");
        }
        // Later requests are answered at once; registrations fail.
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        keep[0].0.read(&kernel(), 8, done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Shutdown)), "{b:?}");
        assert!(reactor.register(pipe().unwrap().0).is_err());
        assert_eq!(reactor.stats().devices, 0);
    }
}

#[test]
fn runtime_shutdown_with_requests_pending_ends_the_wait() {
    for b in backends() {
        let rt = runtime(2);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(1)).unwrap();
        dev.read(&kernel(), 8, done);
        rt.shutdown();
        // The receiver was dropped with its core: the wait ends.
        assert_eq!(out.wait(), Err(FlowError::Shutdown), "{b:?}");
        // The completion that comes later is refused, not a panic or a hang.
        File::from(tx).write_all(b"late").unwrap();
        eventually("the late answer", || reactor.stats().refused == 1);
        drop(dev);
        reactor.shutdown();
    }
}

#[test]
fn a_kernel_thread_issues_a_request_for_a_handler_on_its_core() {
    for b in backends() {
        let rt = runtime(2);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = std::sync::Arc::new(reactor.register(rx).unwrap());
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        let d = dev.clone();
        // The device thread (kernel) names a handler on its own core.
        Instance::<(), Kernel>::new(rt.core(1), 0, move |ctx, _| {
            let handler =
                Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, x| {
                    let on = ctx.core().index();
                    let _ = ctx.signal(&done, (x.into_iter().next().unwrap(), on));
                })
                .unwrap();
            d.read(ctx, 4, handler.slot(0));
        })
        .unwrap();
        File::from(tx).write_all(b"data").unwrap();
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok((Ok(b"data".to_vec()), 1)),
            "{b:?}"
        );
    }
}

#[test]
fn a_regular_file_is_a_device_too() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let path = std::env::temp_dir().join(format!(
            "manycore-flow-reactor-{}-{b:?}",
            std::process::id()
        ));
        std::fs::write(&path, b"file contents").unwrap();
        let dev = reactor.register(File::open(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 4, done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(b"file".to_vec())), "{b:?}");
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 64, done);
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok(Ok(b" contents".to_vec())),
            "{b:?}"
        );
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 64, done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Closed)), "{b:?}");
    }
}

#[test]
fn a_zero_length_read_answers_at_once() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, _tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 0, done);
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(Vec::new())), "{b:?}");
    }
}

#[test]
fn the_last_reactor_handle_dropped_in_a_body_does_not_block_its_core() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, _tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        dev.read(&kernel(), 8, done);
        let (after, later) = Outcome::new(rt.core(0)).unwrap();
        // The body drops the last handle: the shutdown begins, the core
        // goes on, and the outstanding read is answered.
        Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| {
            drop(reactor);
            let _ = ctx.signal(&after, ());
        })
        .unwrap();
        assert_eq!(later.wait_timeout(WAIT), Ok(()), "{b:?}");
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Shutdown)), "{b:?}");
    }
}

#[test]
fn a_reactor_with_nothing_to_do_waits_in_the_kernel() {
    // The epoll reactor polls for a while after work before it sleeps;
    // the poll is bounded: with no traffic it ends up waiting in the
    // kernel, and again after every burst.
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        eventually("an idle reactor waiting in the kernel", || {
            reactor.stats().waits >= 1
        });
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(rx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        // A read that has to wait: the reactor serves it when the data
        // comes (nobody else makes a request that could poll for it).
        dev.read(&kernel(), 8, done);
        // Read before the data: whatever the reactor does meanwhile, it
        // must wait in the kernel once more after serving it.
        let before = reactor.stats().waits;
        File::from(tx).write_all(b"x").unwrap();
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(b"x".to_vec())), "{b:?}");
        eventually("the reactor waiting again after its traffic", || {
            reactor.stats().waits > before
        });
    }
}

#[test]
fn a_request_that_need_not_wait_is_answered_on_its_issuers_thread() {
    // Under epoll a pipe is on the direct path: a write with room in the
    // pipe is made and answered by its issuer, without the reactor
    // thread. io_uring serves every request on the reactor thread.
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let dev = reactor.register(tx).unwrap();
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        let receiver = Instance::<IoResult<usize>, Kernel>::new(rt.core(0), 1, move |ctx, n| {
            let _ = ctx.signal(&done, n.into_iter().next().unwrap());
        })
        .unwrap();
        dev.write(&kernel(), b"direct".to_vec(), receiver.slot(0));
        let s = reactor.stats();
        if b == Backend::Epoll {
            // Answered before `write` returned: the receiver's slot is
            // filled (it fires on its core).
            assert_eq!((s.requests, s.direct, s.completed), (1, 1, 1), "{b:?}");
        }
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(6)), "{b:?}");
        let mut got = [0u8; 6];
        File::from(rx).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"direct");
    }
}

#[test]
fn a_ping_pong_through_two_pipes_keeps_every_round_in_order() {
    // Two kernel threads on one core bounce a counter through two pipes;
    // every read and write is a device request. Under epoll most are
    // served on the core's thread (a write's issuer polls for the edge it
    // made), the rest by the reactor: none is lost, none answered twice.
    const ROUNDS: u64 = 500;
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (p1r, p1w) = pipe().unwrap();
        let (p2r, p2w) = pipe().unwrap();
        let reg = |fd| std::sync::Arc::new(reactor.register(fd).unwrap());
        let (a_out, a_in, b_in, b_out) = (reg(p1w), reg(p2r), reg(p1r), reg(p2w));
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| echo(ctx, b_in, b_out)).unwrap();
        Instance::<(), Kernel>::new(rt.core(0), 0, move |ctx, _| ping(ctx, a_out, a_in, 0, done))
            .unwrap();
        assert_eq!(out.wait_timeout(WAIT), Ok(Ok(ROUNDS)), "{b:?}");
        let s = reactor.stats();
        // Each round: A's write and read, B's read and write, each
        // answered once with its value. After the last round A's handles
        // go (pipe 1's write end closes), and B's next read may already
        // have been answered with the end of the stream.
        assert!(s.completed >= 4 * ROUNDS, "{b:?}: {s:?}");
        assert!(s.failed <= 1, "{b:?}: {s:?}");
        // None answered twice: B's last read is the one not completed.
        assert!(s.requests <= s.completed + 1, "{b:?}: {s:?}");
        if b == Backend::IoUring {
            assert_eq!(s.direct, 0, "{b:?}: {s:?}");
        }
        reactor.shutdown();
    }

    type Dev = std::sync::Arc<manycore_flow::Device>;

    /// B: reads pipe 1 and writes what it read to pipe 2, for ever.
    fn echo(ctx: &manycore_flow::Ctx<'_, Kernel>, inp: Dev, out: Dev) {
        let i2 = inp.clone();
        let r = Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
            let Some(Ok(data)) = got.into_iter().next() else {
                return;
            };
            let ack = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {}).unwrap();
            out.write(ctx, data, ack.slot(0));
            echo(ctx, i2, out);
        })
        .unwrap();
        inp.read(ctx, 8, r.slot(0));
    }

    /// A: writes `i` to pipe 1 and expects it back on pipe 2.
    fn ping(
        ctx: &manycore_flow::Ctx<'_, Kernel>,
        out: Dev,
        inp: Dev,
        i: u64,
        done: manycore_flow::Slot<Result<u64, String>, manycore_flow::User>,
    ) {
        if i == ROUNDS {
            let _ = ctx.signal(&done, Ok(i));
            return;
        }
        let (o2, i2) = (out.clone(), inp.clone());
        let r =
            Instance::<IoResult<Vec<u8>>, Kernel>::new(ctx.core(), 1, move |ctx, got| {
                match got.into_iter().next() {
                    Some(Ok(v)) if v == i.to_le_bytes() => ping(ctx, o2, i2, i + 1, done),
                    other => {
                        let _ = ctx.signal(&done, Err(format!("round {i}: {other:?}")));
                    }
                }
            })
            .unwrap();
        let ack = Instance::<IoResult<usize>, Kernel>::new(ctx.core(), 1, |_, _| {}).unwrap();
        inp.read(ctx, 8, r.slot(0));
        out.write(ctx, i.to_le_bytes().to_vec(), ack.slot(0));
    }
}

/// Writes of the given sizes into one pipe (some wait for room, parked
/// behind others), then reads of the given sizes (cycled; some wait for
/// data) until every byte is back: the bytes read are the bytes written,
/// in order, and the writes' counts add up to them.
fn stream_keeps_its_order(b: Backend, chunks: &[usize], reads: &[usize]) {
    let rt = runtime(2);
    let reactor = Reactor::with_backend(b).unwrap();
    let (rx, tx) = pipe().unwrap();
    let (wdev, rdev) = (reactor.register(tx).unwrap(), reactor.register(rx).unwrap());
    let mut sent = Vec::new();
    let mut wrote = Vec::new();
    for (i, &len) in chunks.iter().enumerate() {
        // At most 4096 bytes: a pipe takes such a write whole or not at all.
        let chunk: Vec<u8> = (0..len).map(|k| (i * 31 + k) as u8).collect();
        sent.extend_from_slice(&chunk);
        let (done, out) = Outcome::new(rt.core(i % 2)).unwrap();
        wdev.write(&kernel(), chunk, done);
        wrote.push(out);
    }
    let mut got = Vec::new();
    // Each read's answer is awaited before the next is made, so the
    // reads' order is the stream's.
    for (i, &len) in reads.iter().cycle().enumerate() {
        if got.len() >= sent.len() {
            break;
        }
        let (done, out) = Outcome::new(rt.core(i % 2)).unwrap();
        rdev.read(&kernel(), len, done);
        got.extend(out.wait_timeout(WAIT).unwrap().unwrap());
    }
    let counts: usize = wrote
        .into_iter()
        .map(|o| o.wait_timeout(WAIT).unwrap().unwrap())
        .sum();
    assert_eq!(counts, sent.len(), "{b:?}");
    assert_eq!(got, sent, "{b:?}");
}

#[test]
fn reads_and_writes_on_the_direct_path_keep_the_streams_order() {
    // About 70 KB into a 64 KB pipe: the last writes wait for room.
    let chunks: Vec<usize> = (0..200).map(|i| (i * 37) % 700 + 1).collect();
    let reads: Vec<usize> = (0..50).map(|i| (i * 53) % 900 + 1).collect();
    for b in backends() {
        stream_keeps_its_order(b, &chunks, &reads);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]
    #[test]
    fn any_stream_of_reads_and_writes_keeps_its_order(
        chunks in proptest::collection::vec(1usize..4096, 1..40),
        reads in proptest::collection::vec(1usize..8192, 1..20),
    ) {
        for b in backends() {
            stream_keeps_its_order(b, &chunks, &reads);
        }
    }
}

#[test]
fn a_write_to_a_pipe_whose_read_end_is_a_device_answers_its_parked_read() {
    // Both ends registered: under epoll the writer serves the read end
    // itself after its write (taking no edge), and whoever takes the edge
    // later finds nothing left to do. Each request answered once.
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let (r, w) = (reactor.register(rx).unwrap(), reactor.register(tx).unwrap());
        for round in 0..50u8 {
            let (got, g) = Outcome::new(rt.core(0)).unwrap();
            let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
            r.read(&kernel(), 8, got);
            w.write(&kernel(), vec![round; 3], wrote);
            assert_eq!(n.wait_timeout(WAIT), Ok(Ok(3)), "{b:?}");
            assert_eq!(g.wait_timeout(WAIT), Ok(Ok(vec![round; 3])), "{b:?}");
        }
        let s = reactor.stats();
        assert_eq!((s.requests, s.completed, s.failed), (100, 100, 0), "{b:?}");
    }
}

#[test]
fn a_read_end_whose_writer_device_is_dropped_mid_request_answers_closed() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let (rx, tx) = pipe().unwrap();
        let (r, w) = (reactor.register(rx).unwrap(), reactor.register(tx).unwrap());
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        w.write(&kernel(), b"last".to_vec(), wrote);
        assert_eq!(n.wait_timeout(WAIT), Ok(Ok(4)), "{b:?}");
        let (got, g) = Outcome::new(rt.core(0)).unwrap();
        r.read(&kernel(), 4, got);
        assert_eq!(g.wait_timeout(WAIT), Ok(Ok(b"last".to_vec())), "{b:?}");
        // A read parked on the emptied pipe, then its writer goes.
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        r.read(&kernel(), 8, done);
        drop(w);
        assert_eq!(out.wait_timeout(WAIT), Ok(Err(IoError::Closed)), "{b:?}");
    }
}

#[test]
fn an_edge_no_issuer_takes_is_served_once_the_issuers_stop_polling() {
    // An issuer whose writes go through polls the epoll instance while a
    // read is parked. Data for the parked read that comes after the last
    // of those polls (from a writer outside the reactor) is served by the
    // reactor thread: a read that waits for such an edge keeps it in the
    // instance.
    let rt = runtime(1);
    let reactor = Reactor::with_backend(Backend::Epoll).unwrap();
    let (xr, xw) = pipe().unwrap();
    let (yr, yw) = pipe().unwrap();
    let x = reactor.register(xr).unwrap();
    let y = reactor.register(yw).unwrap();
    let (done, out) = Outcome::new(rt.core(0)).unwrap();
    x.read(&kernel(), 8, done);
    const WRITES: u64 = 200;
    for _ in 0..WRITES {
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        y.write(&kernel(), b"y".to_vec(), wrote);
        assert_eq!(n.wait_timeout(WAIT), Ok(Ok(1)));
    }
    File::from(xw).write_all(b"x").unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(Ok(b"x".to_vec())));
    // Nobody but the reactor thread took the edge: the writes alone were
    // answered on the issuer's thread (the parked read was tried there
    // once, before it parked).
    let s = reactor.stats();
    assert_eq!(
        (s.requests, s.completed, s.direct),
        (WRITES + 1, WRITES + 1, WRITES)
    );
    let mut got = vec![0u8; WRITES as usize];
    File::from(yr).read_exact(&mut got).unwrap();
}

#[test]
fn a_request_parked_alone_while_the_reactor_defers_is_served() {
    // Every parked request a read that writers feed (both ends of its
    // pipe are devices): an issuer's polls keep the reactor thread out of
    // the epoll instance. A read then parked on a pipe whose writer is
    // outside the reactor waits for an edge that only a poll or the
    // reactor takes: it brings the reactor back, and is served.
    let rt = runtime(1);
    let reactor = Reactor::with_backend(Backend::Epoll).unwrap();
    let (r1, w1) = pipe().unwrap();
    let (r2, w2) = pipe().unwrap();
    let (xr, xw) = pipe().unwrap();
    let reg = |fd: std::os::fd::OwnedFd| reactor.register(fd).unwrap();
    let (r1, w1, r2, w2, x) = (reg(r1), reg(w1), reg(r2), reg(w2), reg(xr));
    let (held, h) = Outcome::new(rt.core(0)).unwrap();
    r2.read(&kernel(), 8, held);
    for round in 0..200u32 {
        let (got, g) = Outcome::new(rt.core(0)).unwrap();
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        r1.read(&kernel(), 8, got);
        w1.write(&kernel(), round.to_le_bytes().to_vec(), wrote);
        assert_eq!(n.wait_timeout(WAIT), Ok(Ok(4)));
        assert_eq!(g.wait_timeout(WAIT), Ok(Ok(round.to_le_bytes().to_vec())));
    }
    let (done, out) = Outcome::new(rt.core(0)).unwrap();
    x.read(&kernel(), 8, done);
    File::from(xw).write_all(b"x").unwrap();
    assert_eq!(out.wait_timeout(WAIT), Ok(Ok(b"x".to_vec())));
    let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
    w2.write(&kernel(), b"held".to_vec(), wrote);
    assert_eq!(n.wait_timeout(WAIT), Ok(Ok(4)));
    assert_eq!(h.wait_timeout(WAIT), Ok(Ok(b"held".to_vec())));
    let s = reactor.stats();
    assert_eq!((s.requests, s.completed, s.failed), (403, 403, 0));
}

#[test]
fn a_write_to_an_eventfd_device_answers_its_parked_read() {
    // One eventfd, registered once, read and written through the same
    // device: under epoll the writer serves the parked read itself after
    // its write (taking no edge). Each request answered once, with the
    // count written.
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let e = reactor.register(eventfd().unwrap()).unwrap();
        for round in 1..=50u64 {
            let (got, g) = Outcome::new(rt.core(0)).unwrap();
            let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
            e.read(&kernel(), 8, got);
            e.write(&kernel(), round.to_ne_bytes().to_vec(), wrote);
            assert_eq!(n.wait_timeout(WAIT), Ok(Ok(8)), "{b:?}");
            assert_eq!(
                g.wait_timeout(WAIT),
                Ok(Ok(round.to_ne_bytes().to_vec())),
                "{b:?}"
            );
        }
        let s = reactor.stats();
        assert_eq!((s.requests, s.completed, s.failed), (100, 100, 0), "{b:?}");
    }
}

#[test]
fn an_eventfd_written_from_outside_answers_a_read_parked_after_fed_rounds() {
    // After fed rounds (the eventfd counts as fed), a write made on a
    // dup of the eventfd, outside the reactor, still reaches a parked read.
    let rt = runtime(1);
    let reactor = Reactor::with_backend(Backend::Epoll).unwrap();
    let fd = eventfd().unwrap();
    let outside = File::from(fd.try_clone().unwrap());
    let e = reactor.register(fd).unwrap();
    for round in 1..=20u64 {
        let (got, g) = Outcome::new(rt.core(0)).unwrap();
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        e.read(&kernel(), 8, got);
        e.write(&kernel(), round.to_ne_bytes().to_vec(), wrote);
        assert_eq!(n.wait_timeout(WAIT), Ok(Ok(8)));
        assert_eq!(g.wait_timeout(WAIT), Ok(Ok(round.to_ne_bytes().to_vec())));
    }
    let (got, g) = Outcome::new(rt.core(0)).unwrap();
    e.read(&kernel(), 8, got);
    (&outside).write_all(&7u64.to_ne_bytes()).unwrap();
    assert_eq!(g.wait_timeout(WAIT), Ok(Ok(7u64.to_ne_bytes().to_vec())));
}

#[test]
fn an_eventfd_device_that_errs_or_goes_mid_request_answers_the_receiver() {
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let e = reactor.register(eventfd().unwrap()).unwrap();
        // A write of the one value an eventfd refuses, and a read shorter
        // than its counter: the errno reaches the receiver.
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        e.write(&kernel(), u64::MAX.to_ne_bytes().to_vec(), wrote);
        assert_eq!(
            n.wait_timeout(WAIT),
            Ok(Err(IoError::Os(libc_einval()))),
            "{b:?}"
        );
        let (wrote, n) = Outcome::new(rt.core(0)).unwrap();
        e.write(&kernel(), 1u64.to_ne_bytes().to_vec(), wrote);
        assert_eq!(n.wait_timeout(WAIT), Ok(Ok(8)), "{b:?}");
        let (got, g) = Outcome::new(rt.core(0)).unwrap();
        e.read(&kernel(), 4, got);
        assert_eq!(
            g.wait_timeout(WAIT),
            Ok(Err(IoError::Os(libc_einval()))),
            "{b:?}"
        );
        // Drain it, then a read parked on it (fed: written through the
        // device) while the device goes.
        let (got, g) = Outcome::new(rt.core(0)).unwrap();
        e.read(&kernel(), 8, got);
        assert_eq!(
            g.wait_timeout(WAIT),
            Ok(Ok(1u64.to_ne_bytes().to_vec())),
            "{b:?}"
        );
        let (done, out) = Outcome::new(rt.core(0)).unwrap();
        e.read(&kernel(), 8, done);
        drop(e);
        assert_eq!(
            out.wait_timeout(WAIT),
            Ok(Err(IoError::Deregistered)),
            "{b:?}"
        );
    }
}

/// EINVAL on Linux.
fn libc_einval() -> i32 {
    22
}

#[test]
fn a_timerfd_is_a_device_too() {
    // A one-shot timer answers one read with one expiry; a periodic one
    // answers each read with the expiries since the last; ZERO expires at
    // once and MAX never (its read is answered by the device's drop).
    for b in backends() {
        let rt = runtime(1);
        let reactor = Reactor::with_backend(b).unwrap();
        let expiries = |dev: &manycore_flow::Device| {
            let (done, out) = Outcome::new(rt.core(0)).unwrap();
            dev.read(&kernel(), 8, done);
            out
        };
        let count = |r: Result<IoResult<Vec<u8>>, _>| match r {
            Ok(Ok(bytes)) => u64::from_ne_bytes(bytes.try_into().unwrap()),
            other => panic!("{b:?}: {other:?}"),
        };
        let once = reactor
            .register(timerfd(Duration::from_millis(1), None).unwrap())
            .unwrap();
        assert_eq!(count(expiries(&once).wait_timeout(WAIT)), 1, "{b:?}");
        let now = reactor
            .register(timerfd(Duration::ZERO, None).unwrap())
            .unwrap();
        assert_eq!(count(expiries(&now).wait_timeout(WAIT)), 1, "{b:?}");
        let tick = Duration::from_millis(2);
        let periodic = reactor
            .register(timerfd(tick, Some(tick)).unwrap())
            .unwrap();
        let mut seen = 0;
        while seen < 3 {
            let n = count(expiries(&periodic).wait_timeout(WAIT));
            assert!(n >= 1, "{b:?}");
            seen += n;
        }
        let never = reactor
            .register(timerfd(Duration::MAX, Some(Duration::MAX)).unwrap())
            .unwrap();
        let pending = expiries(&never);
        drop(never);
        assert!(
            pending.wait_timeout(WAIT) == Ok(Err(IoError::Deregistered)),
            "{b:?}: a read of a timer that never expires is answered when its device goes"
        );
    }
}
