//! The tokio types (feature `tokio`): an echo server on one tokio thread
//! serving 100 clients in other processes (this test binary re-executed),
//! and a stream split between two tasks that stream both ways at once.
#![cfg(feature = "tokio")]
mod common;
use common::*;
use manycore_sock::{AsyncShmListener, AsyncShmStream, Namespace, ShmStream};
use std::io::{Read, Write};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u32 = 9;
const CLIENTS: usize = 100;
const MSG: usize = 40_000;
/// Bounds every wait (none is expected to come near it).
const BOUND: Duration = Duration::from_secs(120);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap()
}

/// A client process: sends its message, closes its writing side, and
/// checks the echo. Exits 0 on success.
#[test]
fn peer() {
    let Some((role, ns)) = child_role() else {
        return;
    };
    assert_eq!(role, "client");
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let data = pattern(seed, MSG);
    let mut s = ShmStream::connect(&ns.addr(PORT)).unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    s.set_write_timeout(Some(BOUND)).unwrap();
    let w = s.try_clone().unwrap();
    let d2 = data.clone();
    let t = std::thread::spawn(move || {
        (&w).write_all(&d2).unwrap();
        w.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    t.join().unwrap();
    assert_eq!(back.len(), MSG);
    assert_eq!(checksum(&back), checksum(&data));
    std::process::exit(0);
}

async fn echo(mut s: AsyncShmStream) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 16 << 10];
    let mut total = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            s.shutdown().await?;
            return Ok(total);
        }
        s.write_all(&buf[..n]).await?;
        total += n as u64;
    }
}

#[test]
fn tokio_echo_server_serves_100_client_processes() {
    let ns = TestNs::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let addr = ns.ns.addr(PORT);
    // Bind before the clients start (they are refused otherwise).
    let rt = runtime();
    let l = rt
        .block_on(async { AsyncShmListener::bind(&addr) })
        .unwrap();
    let server = std::thread::spawn(move || {
        let served = rt.block_on(async move {
            let mut tasks = Vec::new();
            for _ in 0..CLIENTS {
                let (s, _) = l.accept().await?;
                tasks.push(tokio::spawn(echo(s)));
            }
            let mut bytes = 0;
            for t in tasks {
                bytes += t.await.expect("echo task")?;
            }
            Ok::<u64, std::io::Error>(bytes)
        });
        let _ = tx.send(served);
    });
    let mut kids: Vec<Guard> = (0..CLIENTS)
        .map(|i| {
            Guard(spawn(
                "peer",
                "client",
                &ns,
                &[("SEED", (i + 1).to_string())],
            ))
        })
        .collect();
    let served = rx
        .recv_timeout(BOUND)
        .expect("the server did not finish")
        .unwrap();
    assert_eq!(served, (CLIENTS * MSG) as u64);
    for k in kids.iter_mut() {
        assert!(k.0.wait().unwrap().success(), "a client failed");
    }
    server.join().unwrap();
}

#[test]
fn split_stream_streams_both_ways_in_two_tasks() {
    const TOTAL: usize = 1 << 20;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = runtime();
        let r = rt.block_on(async {
            let l = AsyncShmListener::bind(&Namespace::private().addr(0))?;
            let c = AsyncShmStream::connect(&l.local_addr()?)?;
            let (s, _) = l.accept().await?;
            let server = tokio::spawn(echo(s));
            // One task writes, another reads: both wait on one descriptor.
            let (mut rd, mut wr) = tokio::io::split(c);
            let data = pattern(7, TOTAL);
            let d2 = data.clone();
            let writer = tokio::spawn(async move {
                for part in d2.chunks(10_000) {
                    wr.write_all(part).await?;
                }
                wr.shutdown().await?;
                Ok::<_, std::io::Error>(wr)
            });
            let mut back = Vec::with_capacity(TOTAL);
            rd.read_to_end(&mut back).await?;
            let _wr = writer.await.expect("writer")?;
            assert_eq!(server.await.expect("server")?, TOTAL as u64);
            Ok::<_, std::io::Error>(checksum(&back) == checksum(&data) && back.len() == TOTAL)
        });
        let _ = tx.send(r);
    });
    let ok = rx.recv_timeout(BOUND).expect("timed out").unwrap();
    assert!(ok, "echo differs");
}
