//! Asynchronous and synchronous RPC between cores (the cross-core invocation
//! paper, section III.A): fire-and-forget spawns, calls waited on, calls
//! awaited from a task, and a continuation.
//!
//! cargo run --release -p manycore --example rpc
use manycore::{current, IdlePolicy, Runtime};
use std::sync::mpsc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::default())
        .build()?;

    // Asynchronous RPC: runs on core 1, nobody waits.
    let (tx, rx) = mpsc::channel();
    rt.core(1).spawn(move || {
        tx.send(format!("hello from core {}", current().unwrap().index()))
            .unwrap()
    })?;
    println!("{}", rx.recv()?);

    // Synchronous RPC from the main thread.
    println!("core 0 says 6*7 = {}", rt.core(0).call(|| 6 * 7).wait()?);

    // A core calling another core.
    let c1 = rt.core(1).clone();
    let hops = rt
        .core(0)
        .call(move || c1.call(|| current().unwrap().index()).wait().unwrap())
        .wait()?;
    println!("core 0 asked core 1 its index: {hops}");

    // A continuation: compute on core 1, continue on core 0.
    let (tx, rx) = mpsc::channel();
    rt.core(1).call_then(
        || (1..=100u64).sum::<u64>(),
        rt.core(0),
        move |r| {
            tx.send((current().unwrap().index(), r)).unwrap();
        },
    );
    let (on, sum) = rx.recv()?;
    println!("continuation on core {on} got {sum:?}");

    for (i, s) in rt.stats().iter().enumerate() {
        println!("core {i}: {s:?}");
    }
    rt.shutdown();
    Ok(())
}
