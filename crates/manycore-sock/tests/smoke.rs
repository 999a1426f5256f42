//! Public-API smoke tests: echo, EOF, shutdown, timeouts, errors, chunk changes.
use manycore_sock::{Config, Namespace, ShmListener, ShmStream, WaitMode};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

fn checksum(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn echo_private() {
    let addr = Namespace::private().addr(1);
    let l = ShmListener::bind(&addr).unwrap();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 4096];
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            s.write_all(&buf[..n]).unwrap();
        }
    });
    let mut c = ShmStream::connect(&addr).unwrap();
    for size in [1usize, 7, 64, 1000, 70_000, 300_000] {
        let data: Vec<u8> = (0..size).map(|i| (i * 31 + size) as u8).collect();
        let c2 = c.try_clone().unwrap();
        let d2 = data.clone();
        let w = std::thread::spawn(move || (&c2).write_all(&d2).unwrap());
        let mut back = vec![0u8; size];
        c.read_exact(&mut back).unwrap();
        w.join().unwrap();
        assert_eq!(checksum(&back), checksum(&data), "size {size}");
    }
    c.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    t.join().unwrap();
}

#[test]
fn refused_and_in_use() {
    let ns = Namespace::private();
    let e = ShmStream::connect(&ns.addr(9)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    let l = ShmListener::bind(&ns.addr(9)).unwrap();
    assert_eq!(
        ShmListener::bind(&ns.addr(9)).unwrap_err().kind(),
        ErrorKind::AddrInUse
    );
    drop(l);
    let _l2 = ShmListener::bind(&ns.addr(9)).unwrap();
}

#[test]
fn timeouts_and_nonblocking() {
    let ns = Namespace::private();
    let l = ShmListener::bind(&ns.addr(2)).unwrap();
    l.set_nonblocking(true).unwrap();
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    // Nobody accepts: connecting completes all the same (the backlog holds
    // the connection), and reading waits for the accept.
    let pending = ShmStream::connect(&ns.addr(2)).unwrap();
    pending
        .set_read_timeout(Some(Duration::from_millis(30)))
        .unwrap();
    let mut b = [0u8; 4];
    assert_eq!(
        (&pending).read(&mut b).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    l.set_nonblocking(false).unwrap();
    let (first, _) = l.accept().unwrap();
    drop((pending, first));
    let addr = ns.addr(2);
    let t = std::thread::spawn(move || ShmStream::connect(&addr).unwrap());
    let (s, _) = l.accept().unwrap();
    let c = t.join().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
    assert_eq!((&s).read(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    s.set_nonblocking(true).unwrap();
    assert_eq!((&s).read(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    drop(c);
    s.set_nonblocking(false).unwrap();
    assert_eq!((&s).read(&mut b).unwrap(), 0, "EOF after the peer closed");
    assert_eq!((&s).write(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
}

#[test]
fn wait_modes_ping_pong() {
    for mode in [WaitMode::Spin, WaitMode::Sleep, WaitMode::default()] {
        let addr = Namespace::private().addr(3);
        let l = ShmListener::bind_with(
            &addr,
            Config {
                wait_mode: mode,
                ..Config::default()
            },
        )
        .unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 64];
            for _ in 0..200 {
                s.read_exact(&mut b).unwrap();
                s.write_all(&b).unwrap();
            }
        });
        let mut c = ShmStream::connect(&addr).unwrap();
        c.set_wait_mode(mode);
        let mut b = [7u8; 64];
        for i in 0..200 {
            b[0] = i as u8;
            c.write_all(&b).unwrap();
            c.read_exact(&mut b).unwrap();
            assert_eq!(b[0], i as u8);
        }
        t.join().unwrap();
    }
}

#[test]
fn buddy_split_and_merge_mid_stream() {
    // 8 KiB server buffer: each extra connection halves the first one's chunk.
    let addr = Namespace::private().addr(4);
    let cfg = Config {
        buffer_size: 8192,
        ..Config::default()
    };
    let l = ShmListener::bind_with(&addr, cfg).unwrap();
    let a2 = addr.clone();
    let t = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for s in l.incoming().take(6) {
            conns.push(s.unwrap());
        }
        // ShmStream 100 KB on the first connection from the server side, while
        // the other connections come and go.
        let mut first = conns.remove(0);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        first.write_all(&data).unwrap();
        let chunk_after = first.send_chunk();
        drop(conns);
        first.write_all(&data).unwrap();
        (chunk_after, first.send_chunk())
    });
    let mut c = ShmStream::connect(&a2).unwrap();
    let others: Vec<_> = (0..5).map(|_| ShmStream::connect(&a2).unwrap()).collect();
    let mut got = vec![0u8; 200_000];
    c.read_exact(&mut got[..50_000]).unwrap();
    drop(others);
    c.read_exact(&mut got[50_000..]).unwrap();
    let (mid, end) = t.join().unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(checksum(&got[..100_000]), checksum(&data));
    assert_eq!(checksum(&got[100_000..]), checksum(&data));
    assert!(mid < 8192, "split: {mid}");
    assert_eq!(end, 8192, "merged back");
}
