//! Futures, continuations and timeouts (section III.A): awaiting calls from
//! a task on another core, continuing on a named core, racing a result
//! against a timeout, and the three task types (activity, protothread,
//! coroutine) side by side.
//!
//! cargo run --release -p manycore --example futures
use manycore::{block_on, current, sleep, InvokeError, Runtime};
use std::sync::mpsc;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder().cores(2).build()?;
    let c1 = rt.core(1).clone();

    // A protothread (async task) on core 0 awaiting core 1, with timeouts.
    let c = c1.clone();
    let out = rt
        .core(0)
        .spawn_async(async move {
            let fast = c.call(|| 1).timeout(Duration::from_secs(1)).await;
            let slow = c
                .call(|| std::thread::sleep(Duration::from_millis(50)))
                .timeout(Duration::from_millis(5))
                .await;
            sleep(Duration::from_millis(1)).await;
            (fast, slow)
        })
        .wait()?;
    println!("fast call: {:?}; slow call: {:?}", out.0, out.1);
    assert_eq!(out.1, Err(InvokeError::Timeout));

    // A continuation: compute on core 1, continue on core 0.
    let (tx, rx) = mpsc::channel();
    c1.call_then(
        || 6 * 7,
        rt.core(0),
        move |r| tx.send((current().unwrap().index(), r)).unwrap(),
    );
    println!("continuation ran on core {:?}", rx.recv()?);

    // A coroutine on core 0 blocking inside nested calls.
    let c = c1.clone();
    fn nested(c: &manycore::Core, depth: u32) -> u32 {
        if depth == 0 {
            block_on(c.call(|| 100)).unwrap()
        } else {
            nested(c, depth - 1) + 1
        }
    }
    println!(
        "coroutine three calls deep: {:?}",
        rt.core(0).spawn_coroutine(move || nested(&c, 3)).wait()?
    );

    for (i, s) in rt.stats().iter().enumerate() {
        println!(
            "core {i}: {} received, {} late results dropped",
            s.received, s.late_results
        );
    }
    Ok(())
}
