//! Every call that takes a timeout accepts every `Duration`: `MAX` means
//! "no practical limit" (a saturated deadline), never a panic; `ZERO` is
//! `InvalidInput` everywhere, as std's sockets refuse it. An expired read or
//! write timeout is `WouldBlock`, as from std's `UnixStream` on Linux. No
//! test waits on a `MAX` timeout: each wait ends by data, EOF or
//! non-blocking mode.
use manycore_sock::{Config, Namespace, ShmListener, ShmStream, WaitMode};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

const SHORT: Duration = Duration::from_millis(20);

fn pair() -> (ShmListener, ShmStream, ShmStream) {
    let addr = Namespace::private().addr(0);
    let l = ShmListener::bind(&addr).unwrap();
    let c = ShmStream::connect(&l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    (l, c, s)
}

#[test]
fn zero_is_invalid_input_everywhere() {
    let (l, c, _s) = pair();
    let kind = |r: std::io::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        kind(c.set_read_timeout(Some(Duration::ZERO))),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(c.set_write_timeout(Some(Duration::ZERO))),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(l.set_accept_timeout(Some(Duration::ZERO))),
        ErrorKind::InvalidInput
    );
    let e = ShmStream::connect_timeout(&l.local_addr().unwrap(), Duration::ZERO).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // Nothing was changed by the refused calls.
    assert_eq!(c.read_timeout().unwrap(), None);
    assert_eq!(c.write_timeout().unwrap(), None);
    assert_eq!(l.accept_timeout().unwrap(), None);
}

#[test]
fn max_is_accepted_everywhere() {
    let (l, c, s) = pair();
    c.set_read_timeout(Some(Duration::MAX)).unwrap();
    c.set_write_timeout(Some(Duration::MAX)).unwrap();
    s.set_read_timeout(Some(Duration::MAX)).unwrap();
    s.set_write_timeout(Some(Duration::MAX)).unwrap();
    l.set_accept_timeout(Some(Duration::MAX)).unwrap();
    assert_eq!(c.read_timeout().unwrap(), Some(Duration::MAX));
    assert_eq!(l.accept_timeout().unwrap(), Some(Duration::MAX));
    // Read, write, peek and accept with a MAX timeout, each finding what
    // it waits for already there.
    (&c).write_all(b"ping").unwrap();
    let mut b = [0u8; 4];
    assert_eq!(s.peek(&mut b).unwrap(), 4);
    (&s).read_exact(&mut b).unwrap();
    assert_eq!(&b, b"ping");
    let c2 = ShmStream::connect_timeout(&l.local_addr().unwrap(), Duration::MAX).unwrap();
    let (s2, _) = l.accept().unwrap();
    // A MAX-timeout read that waits ends by EOF.
    drop(c2);
    s2.set_read_timeout(Some(Duration::MAX)).unwrap();
    assert_eq!((&s2).read(&mut b).unwrap(), 0);
    // A MAX-timeout read on a connection still in the backlog ends by the
    // accept (in another thread; any order of the two is fine).
    let c3 = ShmStream::connect(&l.local_addr().unwrap()).unwrap();
    c3.set_read_timeout(Some(Duration::MAX)).unwrap();
    let l2 = l.try_clone().unwrap();
    let t = std::thread::spawn(move || {
        let (mut s3, _) = l2.accept().unwrap();
        s3.write_all(b"x").unwrap();
    });
    assert_eq!((&c3).read(&mut b).unwrap(), 1);
    t.join().unwrap();
}

#[test]
fn expired_timeouts_are_would_block() {
    let (l, c, s) = pair();
    let mut b = [0u8; 4];
    c.set_read_timeout(Some(SHORT)).unwrap();
    assert_eq!((&c).read(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(c.peek(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    l.set_accept_timeout(Some(SHORT)).unwrap();
    assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    // Fill the peer's view of our ring until a write times out.
    s.set_write_timeout(Some(SHORT)).unwrap();
    let chunk = vec![1u8; 64 << 10];
    let e = loop {
        if let Err(e) = (&s).write(&chunk) {
            break e;
        }
    };
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    // A connection still in the backlog: its read times out the same way.
    let c2 = ShmStream::connect(&l.local_addr().unwrap()).unwrap();
    c2.set_read_timeout(Some(SHORT)).unwrap();
    assert_eq!(
        (&c2).read(&mut b).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
}

#[test]
fn hybrid_spins_of_zero_and_max_still_exchange_messages() {
    // The spin budget of `WaitMode::Hybrid` takes every `Duration`: ZERO
    // sleeps at once, MAX spins until what it waits for comes (the
    // adaptive budget then tops out at 4.3 s). Given through the
    // listener's `Config.wait_mode` (accept and the accepted stream) and
    // `set_wait_mode` (the connector), each side waits for the other in
    // turn, and a read timeout still expires: a spin stops at the deadline.
    const ROUNDS: u32 = 50;
    for spin in [Duration::ZERO, Duration::MAX] {
        let mode = WaitMode::Hybrid { spin };
        let config = Config {
            wait_mode: mode,
            ..Config::default()
        };
        let l = ShmListener::bind_with(&Namespace::private().addr(0), config).unwrap();
        let addr = l.local_addr().unwrap();
        // `accept` waits, per the mode, for a connector that comes later.
        let client = std::thread::spawn(move || {
            let c = ShmStream::connect(&addr).unwrap();
            c.set_wait_mode(mode);
            assert_eq!(c.wait_mode(), mode);
            let mut b = [0u8; 4];
            for i in 0..ROUNDS {
                (&c).read_exact(&mut b).unwrap();
                assert_eq!(u32::from_le_bytes(b), i);
                (&c).write_all(&(i + 1).to_le_bytes()).unwrap();
            }
            c
        });
        let (s, _) = l.accept().unwrap();
        assert_eq!(s.wait_mode(), mode, "{spin:?}");
        let mut b = [0u8; 4];
        for i in 0..ROUNDS {
            (&s).write_all(&i.to_le_bytes()).unwrap();
            (&s).read_exact(&mut b).unwrap();
            assert_eq!(u32::from_le_bytes(b), i + 1, "{spin:?}");
        }
        let c = client.join().unwrap();
        s.set_read_timeout(Some(SHORT)).unwrap();
        assert_eq!(
            (&s).read(&mut b).unwrap_err().kind(),
            ErrorKind::WouldBlock,
            "{spin:?}"
        );
        drop(c);
        assert_eq!((&s).read(&mut b).unwrap(), 0, "{spin:?}: EOF");
    }
}
