//! Unit tests of the protocol pieces on one thread: the claim word's
//! verdicts, the turnstile's states (the races are in `loom_tests.rs`), and
//! the reactor's choice of backend.

use crate::claims::{Claim, Claims, MAX_INPUTS};
use crate::turnstile::Turnstile;

#[test]
fn claims_tell_filled_from_fired() {
    let c = Claims::new(3);
    assert_eq!(c.claim(1), Claim::Won);
    assert_eq!(c.claim(1), Claim::Filled);
    assert_eq!(c.claim(0), Claim::Won);
    assert!(!c.is_complete());
    assert_eq!(c.claim(2), Claim::Won);
    assert!(c.is_complete());
    for slot in 0..3 {
        assert_eq!(c.claim(slot), Claim::Fired);
    }
}

#[test]
fn claims_at_the_width_limit() {
    let c = Claims::new(MAX_INPUTS);
    for slot in 0..MAX_INPUTS {
        assert!(!c.is_complete());
        assert_eq!(c.claim(slot), Claim::Won);
    }
    assert!(c.is_complete());
    assert_eq!(c.claim(MAX_INPUTS - 1), Claim::Fired);
    let started = Claims::filled(2);
    assert!(started.is_complete());
    assert_eq!(started.claim(0), Claim::Fired);
    assert!(Claims::filled(0).is_complete());
}

#[test]
fn turnstile_states() {
    let t = Turnstile::<u32>::new();
    assert!(!t.is_held());
    assert!(t.try_acquire());
    assert!(!t.try_acquire());
    assert_eq!(t.release(), None);
    assert_eq!(t.acquire_or_enqueue(7), Some(7));
    for w in 1..=5 {
        assert_eq!(t.acquire_or_enqueue(w), None);
        assert_eq!(t.queued(), w as usize);
    }
    assert!(!t.try_acquire(), "no barging past the queue");
    for w in 1..=5 {
        assert_eq!(t.release(), Some(w));
        assert!(t.is_held());
        assert_eq!(t.queued(), 5 - w as usize);
    }
    assert_eq!(t.release(), None);
    assert!(!t.is_held());
    assert!(t.try_acquire());
}

/// `Backend::IoUring` falls back to epoll when io_uring cannot be opened
/// (`EPERM` where it is disabled, `ENOSYS` where it is absent), and the
/// fallback reactor works end to end; `Auto` is epoll, the measured default.
#[test]
fn reactor_io_uring_falls_back_to_epoll() {
    use crate::reactor::{Backend, Reactor};
    use crate::{IoResult, Kernel, Outcome, Outside};
    use std::io::Write;
    use std::time::Duration;

    fn disabled() -> std::io::Result<crate::raw::uring::Ring> {
        Err(std::io::Error::from_raw_os_error(libc::EPERM))
    }
    fn absent() -> std::io::Result<crate::raw::uring::Ring> {
        Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
    }
    assert_eq!(
        Reactor::start(Backend::IoUring, absent).unwrap().backend(),
        Backend::Epoll
    );
    assert_eq!(
        Reactor::start(Backend::Auto, disabled).unwrap().backend(),
        Backend::Epoll
    );
    let reactor = Reactor::start(Backend::IoUring, disabled).unwrap();
    assert_eq!(reactor.backend(), Backend::Epoll);
    let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
    let (rx, tx) = crate::pipe().unwrap();
    let dev = reactor.register(rx).unwrap();
    let (done, out) = Outcome::<IoResult<Vec<u8>>>::new(rt.core(0)).unwrap();
    dev.read(&Outside::<Kernel>::new(), 8, done);
    std::fs::File::from(tx).write_all(b"epoll").unwrap();
    assert_eq!(
        out.wait_timeout(Duration::from_secs(30)),
        Ok(Ok(b"epoll".to_vec()))
    );
}

/// Where the kernel offers io_uring, asking for it gets it; `Auto` is
/// epoll either way.
#[test]
fn reactor_backends_where_the_kernel_offers_io_uring() {
    use crate::reactor::{Backend, Reactor};
    assert_eq!(Reactor::new().unwrap().backend(), Backend::Epoll);
    if crate::raw::uring::Ring::new(8).is_ok() {
        assert_eq!(
            Reactor::with_backend(Backend::IoUring).unwrap().backend(),
            Backend::IoUring
        );
    }
}
