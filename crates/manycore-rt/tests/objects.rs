//! Remote objects, groups and collectives, event channels.
use manycore_rt::{current, debug_counts, Group, IdlePolicy, InvokeError, Runtime, Topology};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

#[test]
fn remote_invoke_spawn_remove_stale() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let r = rt.core(1).place(vec![1u32]).unwrap();
    assert_eq!(r.core().index(), 1);
    r.spawn(|v| v.push(2)).unwrap();
    assert_eq!(
        r.invoke(|v| (current().unwrap().index(), v.clone())).wait(),
        Ok((1, vec![1, 2]))
    );
    // A panic inside an invocation leaves the object in place.
    assert!(matches!(
        r.invoke(|_| -> () { panic!("x") }).wait(),
        Err(InvokeError::Panicked(_))
    ));
    assert_eq!(r.invoke(|v| v.len()).wait(), Ok(2));
    let r2 = r.clone();
    assert_eq!(r.remove().wait(), Ok(vec![1, 2]));
    assert_eq!(r2.invoke(|v| v.len()).wait(), Err(InvokeError::StaleObject));
    assert_eq!(r2.remove().wait(), Err(InvokeError::StaleObject));
    // The slot is reused with a new generation: the old pointer stays stale.
    let r3 = rt.core(1).place(vec![9u32]).unwrap();
    assert_eq!(r2.invoke(|v| v.len()).wait(), Err(InvokeError::StaleObject));
    assert_eq!(r3.invoke(|v| v[0]).wait(), Ok(9));
    r3.free().unwrap();
    assert_eq!(rt.core(1).call(debug_counts).wait(), Ok((0, 0)));
}

#[test]
fn reentrant_invocations_queue_on_the_object() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let obj = rt.core(0).place(Vec::<u32>::new()).unwrap();
    let o2 = obj.clone();
    // While the first invocation runs (and serves messages in a nested wait),
    // a second one for the same object arrives: it is queued, and runs after
    // the first, in order; it is never reported stale.
    let second = Arc::new(std::sync::Mutex::new(None));
    let s2 = second.clone();
    obj.invoke(move |v| {
        v.push(1);
        *s2.lock().unwrap() = Some(o2.invoke(|v| {
            v.push(3);
            v.clone()
        }));
        // Let the core serve its queue; the queued invocation must not run yet.
        manycore_rt::poll_once();
        v.push(2);
    })
    .wait()
    .unwrap();
    let inv = second.lock().unwrap().take().unwrap();
    assert_eq!(inv.wait(), Ok(vec![1, 2, 3]));
}

/// Invocations that queued behind a busy object keep their place: one that
/// arrives from the same source after the object is released, but before the
/// queued ones ran, runs after them (per-source FIFO holds for objects too).
#[test]
fn queued_invocations_are_not_overtaken_after_release() {
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let obj = rt.core(0).place(Vec::<u32>::new()).unwrap();
    let queued = Arc::new(AtomicUsize::new(0));
    let sent_last = Arc::new(AtomicBool::new(false));
    let (q, s) = (queued.clone(), sent_last.clone());
    // The first invocation serves the core until the next two arrived (and
    // queued on the busy object), then waits, without serving, until the
    // fourth is in the ring: that one is taken from the ring right after the
    // first returns, before the queued two had their turn.
    obj.spawn(move |v| {
        v.push(1);
        let t = Instant::now();
        while q.load(Ordering::SeqCst) < 2 && t.elapsed() < Duration::from_secs(20) {
            if manycore_rt::poll_once() == 0 {
                std::thread::yield_now();
            }
        }
        while !s.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(20) {
            std::thread::yield_now();
        }
    })
    .unwrap();
    for i in [2u32, 3] {
        let q = queued.clone();
        obj.spawn(move |v| v.push(i)).unwrap();
        // Counted once the core took it from the ring (it ran or queued).
        rt.core(0)
            .spawn(move || {
                q.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    let t = Instant::now();
    while queued.load(Ordering::SeqCst) < 2 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(1));
    }
    obj.spawn(|v| v.push(4)).unwrap();
    sent_last.store(true, Ordering::SeqCst);
    assert_eq!(obj.invoke(|v| v.clone()).wait(), Ok(vec![1, 2, 3, 4]));
}

/// `free` on a busy object takes its turn in the queue: what queued before it
/// still sees the object, what queued after it finds it stale.
#[test]
fn free_queues_behind_the_running_invocation() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    let obj = rt.core(0).place(10u32).unwrap();
    let o2 = obj.clone();
    let (before, after) = obj
        .invoke(move |v| {
            *v += 1;
            let before = o2.invoke(|v| *v);
            o2.free().unwrap();
            let after = o2.invoke(|v| *v);
            manycore_rt::poll_once();
            (before, after)
        })
        .wait()
        .unwrap();
    assert_eq!(before.wait(), Ok(11));
    assert_eq!(after.wait(), Err(InvokeError::StaleObject));
    assert_eq!(obj.invoke(|v| *v).wait(), Err(InvokeError::StaleObject));
    assert_eq!(
        rt.core(0).call(manycore_rt::debug_counts).wait(),
        Ok((0, 0))
    );
}

#[test]
fn object_place_with_needs_no_send() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    let r = rt.core(0).place_with(|| std::rc::Rc::new(5)).unwrap();
    assert_eq!(r.invoke(|rc| **rc + 1).wait(), Ok(6));
    r.free().unwrap();
}

fn group(rt: &Runtime, n: usize) -> Group<u64> {
    Group::new(
        (0..n as u64)
            .map(|i| rt.core(i as usize % rt.num_cores()).place(i).unwrap())
            .collect(),
    )
}

#[test]
fn reduce_gather_ateach_tree_and_flat() {
    let rt = Runtime::builder()
        .cores(3)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    for n in [1usize, 2, 5, 16, 48] {
        for topo in [
            Topology::Tree { fanout: 4 },
            Topology::Tree { fanout: 2 },
            Topology::Flat,
        ] {
            let g = group(&rt, n).with_topology(topo);
            let sum: u64 = (0..n as u64).sum();
            assert_eq!(g.reduce(|x| *x, |a, b| a + b).wait(), Ok(sum));
            assert_eq!(
                g.gather(|x| *x).wait(),
                Ok((0..n as u64).collect::<Vec<_>>())
            );
            let (_, hops) = g.reduce_measured(|x| *x, |a, b| a + b).wait().unwrap();
            assert_eq!(hops, g.depth(), "n={n} {topo:?}");
            g.ateach(|x| *x += 100).unwrap();
            // Per-source FIFO: the gather sent after ateach sees its effect on every member.
            assert_eq!(
                g.gather(|x| *x).wait().unwrap().iter().sum::<u64>(),
                sum + 100 * n as u64
            );
        }
    }
    // No pending sinks are left behind.
    for c in rt.cores() {
        assert_eq!(c.call(debug_counts).wait().unwrap().1, 0);
    }
}

#[test]
fn tree_depth_for_48_members_is_logarithmic() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let g = group(&rt, 48);
    // A logarithmic tree stays within ceil(log4(48)) + 1 = 4 hops; a 4-ary
    // heap tree over 48 members has depth 3.
    let (_, hops) = g.reduce_measured(|x| *x, |a, b| a.max(b)).wait().unwrap();
    assert!(hops <= 4, "{hops}");
    assert_eq!(hops, 3);
    assert_eq!(g.clone().with_topology(Topology::Flat).depth(), 1);
}

#[test]
fn generations_keep_concurrent_collectives_apart() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let g = group(&rt, 20);
    let g0 = g.generation();
    // Many collectives in flight at once on the same group, different results.
    let invs: Vec<_> = (0..50u64)
        .map(|k| g.reduce(move |x| *x * k, |a, b| a + b))
        .collect();
    let sum: u64 = (0..20).sum();
    for (k, inv) in invs.into_iter().enumerate() {
        assert_eq!(inv.wait(), Ok(sum * k as u64));
    }
    assert_eq!(g.generation(), g0 + 50);
}

#[test]
fn panic_in_a_member_names_it_and_others_complete() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let g = group(&rt, 10);
    let touched = Arc::new(AtomicUsize::new(0));
    let t = touched.clone();
    let r = g
        .reduce(
            move |x| {
                t.fetch_add(1, Ordering::SeqCst);
                if *x == 7 || *x == 3 {
                    panic!("member {x} failed");
                }
                *x
            },
            |a, b| a + b,
        )
        .wait();
    match r {
        Err(InvokeError::Member { index, error }) => {
            assert_eq!(index, 3);
            assert_eq!(*error, InvokeError::Panicked("member 3 failed".into()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(touched.load(Ordering::SeqCst), 10, "every member ran");
    // A stale member is named too. (The free comes from this thread and the
    // gather's message to member 5 from another core: nothing orders the
    // two, so wait until the free has run.)
    g.members()[5].free().unwrap();
    g.members()[5].core().call(|| ()).wait().unwrap();
    let r = g.gather(|x| *x).wait();
    assert!(
        matches!(r, Err(InvokeError::Member { index: 5, ref error }) if **error == InvokeError::StaleObject),
        "{r:?}"
    );
    // Empty groups.
    let e: Group<u64> = Group::new(vec![]);
    assert_eq!(
        e.reduce(|x| *x, |a, b| a + b).wait(),
        Err(InvokeError::EmptyGroup)
    );
    assert_eq!(e.gather(|x| *x).wait(), Ok(vec![]));
}

#[test]
fn channels_handler_task_and_counting() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let (tx, rx) = mpsc::channel();
    let ch = rt
        .core(1)
        .sink(move |e: (usize, u32)| tx.send(e).unwrap())
        .unwrap();
    // Emitted from a core and from outside; per-source order holds.
    let ch2 = ch.clone();
    rt.core(0)
        .call(move || {
            for i in 0..100 {
                ch2.emit((0, i)).unwrap();
            }
        })
        .wait()
        .unwrap();
    let mut last = None;
    for _ in 0..100 {
        let (src, i) = rx.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(src, 0);
        assert_eq!(last.map_or(0, |l| l + 1), i);
        last = Some(i);
    }
    ch.close().unwrap();
    ch.emit((9, 9)).unwrap(); // dropped: the sink is gone
    assert_eq!(rt.core(1).call(debug_counts).wait(), Ok((0, 0)));

    let (tx, rx) = mpsc::channel();
    let ct = rt
        .core(0)
        .counting_sink(5, move |v: Vec<u32>| tx.send(v).unwrap())
        .unwrap();
    for i in 0..7 {
        ct.emit(i).unwrap();
    }
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(20)).unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    assert!(
        rx.recv_timeout(Duration::from_millis(50)).is_err(),
        "fires once"
    );
}
