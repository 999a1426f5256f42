//! An `EventCount` doorbell between two threads.
//!
//! ```sh
//! cargo run --release -p manycore-sync --example doorbell
//! ```
//!
//! The main thread posts jobs into a one-value mailbox and rings the
//! worker's doorbell; the worker sleeps on it while the mailbox is empty,
//! takes each job, and rings the main thread's doorbell with the answer.
//! Both sides follow the protocol of `EventCount`: publish, then notify
//! (which fences); to wait, announce (`prepare_wait`), re-check the
//! condition, and only then sleep. A notifier makes a system call only when
//! somebody has announced a wait, and no wake-up is ever lost.
//!
//! It also prints the CPUs the process started with
//! (`manycore_sync::cpu::original`), which pinning a thread does not shrink.

use manycore_sync::atomic::{AtomicU64, Ordering};
use manycore_sync::{cpu, EventCount};
use std::sync::Arc;

/// An empty mailbox.
const EMPTY: u64 = 0;
/// The job that tells the worker to stop.
const STOP: u64 = u64::MAX;

/// A one-value mailbox with a doorbell.
#[derive(Debug, Default)]
struct Mailbox {
    value: AtomicU64,
    bell: EventCount,
}

impl Mailbox {
    /// Posts a value (the mailbox must be empty) and wakes a sleeping taker.
    fn post(&self, v: u64) {
        // Release: whoever takes `v` sees what was written before it.
        self.value.store(v, Ordering::Release);
        self.bell.notify_one(); // fence(SeqCst), then wake only if announced
    }

    /// Takes the value, sleeping on the doorbell while there is none.
    fn take(&self) -> u64 {
        loop {
            // Acquire; pairs with the Release in `post`.
            let v = self.value.swap(EMPTY, Ordering::Acquire);
            if v != EMPTY {
                return v;
            }
            let key = self.bell.prepare_wait(); // announce, fence(SeqCst)
            if self.value.load(Ordering::Relaxed) != EMPTY {
                self.bell.cancel_wait(); // it came meanwhile: do not sleep
                continue;
            }
            self.bell.wait(key); // returns at once if notified since `key`
        }
    }
}

fn main() {
    println!("this process may run on CPUs {:?}", cpu::original());

    let jobs = Arc::new(Mailbox::default());
    let answers = Arc::new(Mailbox::default());
    let (jobs2, answers2) = (jobs.clone(), answers.clone());
    let worker = std::thread::spawn(move || loop {
        match jobs2.take() {
            STOP => break,
            n => answers2.post(n * n),
        }
    });

    for n in 1..=5u64 {
        jobs.post(n);
        let answer = answers.take();
        assert_eq!(answer, n * n);
        println!("{n} squared is {answer}");
    }
    jobs.post(STOP);
    worker.join().expect("the worker does not panic");
}
