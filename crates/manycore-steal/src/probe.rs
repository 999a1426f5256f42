//! Micro-measurements of protocol steps that the public API cannot isolate
//! (the paper's Table 1): used by `manycore bench steal`. Not a stable API.

use crate::pool::{self, Host, Pool};
use manycore_sync::Arc;
use std::hint::black_box;
use std::time::{Duration, Instant};

struct Quiet;
impl Host for Quiet {
    fn poll_once(&self) -> usize {
        0
    }
    fn notify(&self, _i: usize) {}
}

/// Average cost of promoting a latent frame into a hungry worker's mailbox
/// (demand claim, unlink, publishing CAS, doorbell check) plus taking it back
/// when the thief never started it, in excess of a join whose heartbeat finds
/// no demand. Measured on the calling thread over `iters` joins.
pub fn promotion_cost(iters: u32) -> Duration {
    let p = Arc::new(Pool::new(2, Box::new(Quiet), Duration::ZERO).with_max_sequential(1));
    let prev = pool::unbind();
    pool::bind(&p, 0);
    let run = |hungry: bool| {
        let t = Instant::now();
        for i in 0..iters {
            // A heartbeat at every join, whatever came back unstolen before.
            crate::raw::with_local(|l| {
                l.beat.set(0);
                l.backoff.set(1);
            });
            if hungry {
                p.register(1);
            }
            black_box(crate::join(|| black_box(i), || black_box(i)));
        }
        t.elapsed()
    };
    let _ = run(true);
    let base = run(false);
    let with = run(true);
    let promoted = p.stats().promotions;
    pool::rebind(prev);
    debug_assert!(promoted >= u64::from(iters), "every join promoted");
    with.saturating_sub(base) / iters.max(1)
}
