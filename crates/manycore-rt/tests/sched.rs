//! Schedulers (FIFO, priority, EDF), urgent invocations and preemption points.
use manycore_rt::{Deadline, IdlePolicy, Priority, Runtime, Scheduler};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

/// Queues tasks while core 0 is held busy, then releases it and records the
/// order in which the queued tasks run.
fn run_order(sched: Scheduler, tasks: Vec<(Priority, Option<Duration>, u32)>) -> Vec<u32> {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .scheduler(sched)
        .build()
        .unwrap();
    let gate = Arc::new(Barrier::new(2));
    let g = gate.clone();
    // Hold the core inside a task until every task is queued.
    rt.core(0)
        .spawn(move || {
            g.wait();
            g.wait();
        })
        .unwrap();
    gate.wait();
    let (tx, rx) = mpsc::channel();
    let base = Instant::now() + Duration::from_secs(10);
    let n = tasks.len();
    for (p, d, id) in tasks {
        let tx = tx.clone();
        let attrs = manycore_rt::TaskAttrs {
            priority: p,
            deadline: d.map(|d| Deadline(base + d)),
        };
        rt.core(0)
            .spawn_with(attrs, move || tx.send(id).unwrap())
            .unwrap();
    }
    // The wrappers are in the ring; release the core: it enqueues them all
    // in the same poll round before running the first.
    gate.wait();
    (0..n)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect()
}

#[test]
fn fifo_priority_edf_orders() {
    let ms = Duration::from_millis;
    let tasks = vec![
        (Priority(1), Some(ms(30)), 1),
        (Priority(5), Some(ms(20)), 2),
        (Priority(3), Some(ms(10)), 3),
        (Priority(5), None, 4),
        (Priority(0), Some(ms(5)), 5),
    ];
    assert_eq!(
        run_order(Scheduler::Fifo, tasks.clone()),
        vec![1, 2, 3, 4, 5]
    );
    // Priority: highest first, FIFO among equals (2 before 4).
    assert_eq!(
        run_order(Scheduler::Priority, tasks.clone()),
        vec![2, 4, 3, 1, 5]
    );
    // EDF: earliest deadline first, no deadline last.
    assert_eq!(run_order(Scheduler::Edf, tasks), vec![5, 3, 2, 1, 4]);
}

#[test]
fn per_core_scheduler_and_bad_index() {
    let rt = Runtime::builder()
        .cores(2)
        .core_scheduler(1, Scheduler::Edf)
        .build()
        .unwrap();
    assert_eq!(rt.core(1).call_with(Priority(3), || 7).wait(), Ok(7));
    assert!(Runtime::builder()
        .cores(2)
        .core_scheduler(5, Scheduler::Edf)
        .build()
        .is_err());
}

#[test]
fn urgent_calls_overtake_queued_work() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let gate = Arc::new(Barrier::new(2));
    let g = gate.clone();
    rt.core(0)
        .spawn(move || {
            g.wait();
            g.wait();
        })
        .unwrap();
    gate.wait();
    for i in 0..20 {
        let tx = tx.clone();
        rt.core(0)
            .spawn_with(Priority(0), move || tx.send(i).unwrap())
            .unwrap();
    }
    let txu = tx.clone();
    let urgent = rt.core(0).call_urgent(move || txu.send(100).unwrap());
    gate.wait();
    urgent.wait().unwrap();
    let order: Vec<i32> = (0..21)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    assert_eq!(order[0], 100, "urgent ran first: {order:?}");
    assert_eq!(&order[1..], &(0..20).collect::<Vec<_>>()[..]);
}

#[test]
fn preempt_point_runs_urgent_work_inside_a_long_task() {
    let rt = Runtime::builder()
        .cores(1)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel::<&'static str>();
    let started = Arc::new(Barrier::new(2));
    let s2 = started.clone();
    let tx2 = tx.clone();
    let long = rt.core(0).call(move || {
        s2.wait();
        // A long computation with scheduling points; it ends only once the
        // urgent call has run inside it.
        let t0 = Instant::now();
        let mut ran_urgent = false;
        while t0.elapsed() < Duration::from_secs(30) {
            if manycore_rt::preempt_point() {
                ran_urgent = true;
                break;
            }
            std::hint::spin_loop();
        }
        tx2.send("long done").unwrap();
        ran_urgent
    });
    started.wait();
    let txu = tx.clone();
    let u = rt.core(0).call_urgent(move || txu.send("urgent").unwrap());
    assert_eq!(long.wait(), Ok(true));
    u.wait().unwrap();
    assert_eq!(rx.recv().unwrap(), "urgent");
    assert_eq!(rx.recv().unwrap(), "long done");
    // Off the cores, a preemption point does nothing.
    assert!(!manycore_rt::preempt_point());
}
