//! Unit tests of the protocol pieces: the claim word's verdicts, the
//! turnstile's states (the races are in `loom_tests.rs`), the owner cell's
//! refusals, the counted reference's single free, the slot vector's
//! invariant (a property test), the order and
//! budget of a core's ready stack, and the reactor's choice of backend.

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

/// The owner cell lets in the thread that made it (or first used it) and
/// nobody else, and refuses re-entry.
#[test]
fn owner_cell_lets_in_its_owner_only() {
    use crate::raw::owner_cell::OwnerCell;
    use std::sync::Arc;
    let here = Arc::new(OwnerCell::new_for(true, 1u32));
    assert_eq!(here.with(|v| *v), Some(1));
    assert_eq!(here.with(|_| here.with(|v| *v)), Some(None), "re-entry");
    let h = here.clone();
    let refused = std::thread::spawn(move || h.with(|v| *v)).join().unwrap();
    assert_eq!(refused, None);
    // Unowned: the first thread to use it owns it for good.
    let free = Arc::new(OwnerCell::new_for(false, 2u32));
    let f = free.clone();
    let first = std::thread::spawn(move || f.with(|v| *v += 1))
        .join()
        .unwrap();
    assert_eq!(first, Some(()));
    assert_eq!(free.with(|v| *v), None, "owned by the thread that used it");
    // A panic inside clears the borrow.
    let p = here.clone();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        p.with(|_| panic!("inside"));
    }));
    assert_eq!(here.with(|v| *v), Some(1));
}

/// A `Shared` frees its value once, when the last of its references (made
/// by `pair`, `one` or clones) is dropped.
#[test]
fn shared_frees_once_with_the_last_reference() {
    use crate::raw::shared::Shared;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct D(Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let (a, b) = Shared::pair(D(drops.clone()));
    assert!(Shared::ptr_eq(&a, &b));
    let c = b.clone();
    drop(a);
    drop(b);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    let t = std::thread::spawn(move || drop(c));
    t.join().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    let one = Shared::one(D(drops.clone()));
    let other = Shared::one(D(drops.clone()));
    assert!(!Shared::ptr_eq(&one, &other));
    drop((one, other));
    assert_eq!(drops.load(Ordering::Relaxed), 3);
}

/// A handle dropped beside a reference its thread holds writes the count
/// only when the two are all there is: the value is freed once, with the
/// last reference, whichever drop reads what.
#[test]
fn shared_drop_beside_held_frees_once_with_the_last_reference() {
    use crate::raw::shared::Shared;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct D(Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    // Two references: the handle's drop writes 1, the held one frees.
    let (handle, held) = Shared::pair(D(drops.clone()));
    handle.drop_beside_held(true);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    drop(held);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    // Three: the handle's drop takes one away, the other two free once.
    let (handle, held) = Shared::pair(D(drops.clone()));
    let third = handle.clone();
    handle.drop_beside_held(true);
    drop(held);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    std::thread::spawn(move || drop(third)).join().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    // Not held: an ordinary drop.
    let (handle, held) = Shared::pair(D(drops.clone()));
    handle.drop_beside_held(false);
    drop(held);
    assert_eq!(drops.load(Ordering::Relaxed), 3);
}

mod slot_vec {
    use crate::raw::slot_vec::SlotVec;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A value that counts its drops.
    #[derive(Debug)]
    struct Counted(u32, Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    proptest! {
        /// Against a model (a vector of options): a put is accepted exactly
        /// when the slot exists and is empty, the values come out in slot
        /// order once every slot is written, and every value accepted is
        /// dropped exactly once (by the vector, or by whoever took it),
        /// every value refused is given back.
        #[test]
        fn slot_vec_matches_a_model(
            n in 0usize..=64,
            puts in proptest::collection::vec((0usize..70, any::<u32>()), 0..100),
            finish in any::<bool>(),
        ) {
            let drops = Arc::new(AtomicUsize::new(0));
            let mut model: Vec<Option<u32>> = vec![None; n];
            let mut sv = SlotVec::new(n);
            let mut accepted = 0;
            for (k, v) in puts {
                let ok = k < n && model[k].is_none();
                match sv.put(k, Counted(v, drops.clone())) {
                    Ok(()) => {
                        prop_assert!(ok);
                        model[k] = Some(v);
                        accepted += 1;
                    }
                    Err(back) => {
                        prop_assert!(!ok);
                        prop_assert_eq!(back.0, v);
                        drop(back);
                        accepted += 1;
                    }
                }
                prop_assert_eq!(sv.is_full(), model.iter().all(Option::is_some));
            }
            if finish && sv.is_full() {
                let out = sv.into_inputs().map_err(|_| "full but refused").unwrap();
                let got: Vec<u32> = out.iter().map(|c| c.0).collect();
                let want: Vec<u32> = model.iter().map(|v| v.unwrap()).collect();
                prop_assert_eq!(got, want);
                drop(out);
            } else {
                match sv.into_inputs() {
                    Ok(out) => {
                        prop_assert!(model.iter().all(Option::is_some));
                        drop(out);
                    }
                    Err(back) => {
                        prop_assert!(!model.iter().all(Option::is_some));
                        drop(back);
                    }
                }
            }
            prop_assert_eq!(drops.load(Ordering::Relaxed), accepted);
        }

        /// Slots made full from a vector give the same vector back.
        #[test]
        fn slot_vec_full_round_trips(values in proptest::collection::vec(any::<u32>(), 0..=64)) {
            let sv = SlotVec::full(values.clone());
            prop_assert!(sv.is_full());
            let back = sv.into_inputs().map_err(|_| "full but refused").unwrap();
            prop_assert_eq!(back, values);
        }
    }
}

/// A core's ready stack: instances a body makes ready run after it, the
/// last made ready first (depth-first); past the budget, the rest waits
/// behind the messages the core had queued meanwhile.
#[test]
fn ready_stack_runs_last_in_first_and_yields_past_its_budget() {
    use crate::ready::BUDGET;
    use crate::{Instance, User};
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;

    let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
    let core = rt.core(0).clone();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel::<(usize, Vec<usize>)>();
    let many = 2 * BUDGET + 10;
    let o = order.clone();
    Instance::<(), User>::new(&core, 0, move |ctx, _| {
        for i in 0..many {
            let o = o.clone();
            let _ = ctx.spawn(ctx.core(), move |_| o.lock().unwrap().push(i));
        }
        // Queued behind this body, ahead of the rest of the stack.
        let (o, tx) = (o.clone(), tx.clone());
        let _ = ctx.core().spawn(move || {
            let seen = o.lock().unwrap().clone();
            let _ = tx.send((seen.len(), seen));
        });
    })
    .unwrap();
    let (ran_before, seen) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(ran_before, BUDGET, "the budget, then the queued message");
    let lifo: Vec<usize> = (0..many).rev().take(BUDGET).collect();
    assert_eq!(seen, lifo, "last made ready, first run");
    // And the rest runs all the same (messages later than the first part's
    // ask until it has).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let o = order.clone();
        let (ran, pending) = core
            .call(move || (o.lock().unwrap().len(), crate::pending_here()))
            .wait()
            .unwrap();
        if ran == many {
            assert_eq!(pending, 0);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{ran} of {many} ran");
        std::thread::yield_now();
    }
}
