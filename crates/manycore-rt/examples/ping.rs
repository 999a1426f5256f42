//! A first program: a runtime of two cores, and the three ways to run code
//! on a core.
//!
//! * `spawn` runs a closure on a core and forgets it (asynchronous RPC);
//! * `call` runs a closure on a core and hands back an `Invocation` to wait
//!   on (synchronous RPC) or to `.await`;
//! * `spawn_async` runs a future as a task on a core; the task may await
//!   calls to other cores without blocking its own.
//!
//! A core that waits (here core 0, waiting for core 1 inside a call) keeps
//! serving its own messages meanwhile, so cores that call each other do not
//! deadlock.
//!
//! `cargo run -p manycore-rt --example ping`
use manycore_rt::{IdlePolicy, Runtime};
use std::sync::mpsc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two cores that spin briefly, then sleep, when they have nothing to do.
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::default())
        .build()?;
    let (ping, pong) = (rt.core(0).clone(), rt.core(1).clone());

    // Fire and forget: core 1 reports back through a channel.
    let (tx, rx) = mpsc::channel();
    pong.spawn(move || {
        let here = manycore_rt::current().map(|c| c.index());
        tx.send(here).expect("main is listening");
    })?;
    println!("spawn ran on core {:?}", rx.recv()?);

    // A call from this thread to core 0, which itself calls core 1 and
    // waits for it: a ping and its pong.
    let pong2 = pong.clone();
    let reply = ping
        .call(move || {
            let answer = pong2.call(|| "pong").wait().expect("core 1 answers");
            format!("ping -> {answer}")
        })
        .wait()?;
    println!("call: {reply}");

    // An async task on core 0 that awaits two calls to core 1.
    let task = ping.spawn_async(async move {
        let a = pong.call(|| 20).await.expect("core 1 answers");
        let b = pong.call(|| 22).await.expect("core 1 answers");
        a + b
    });
    println!("async task: {}", task.wait()?);

    rt.shutdown();
    Ok(())
}
