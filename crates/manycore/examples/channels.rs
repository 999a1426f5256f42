//! Event channels and sinks (section III.C): the emitter knows only the
//! channel; the sink's core decides the reaction. A handler sink, an async
//! task woken per event, and a counting sink that fires once.
//!
//! cargo run --release -p manycore --example channels
use manycore::{current, Runtime};
use std::sync::mpsc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder().cores(2).build()?;
    let (tx, rx) = mpsc::channel();

    // A handler sink on core 1.
    let tx1 = tx.clone();
    let log = rt.core(1).sink(move |e: String| {
        tx1.send(format!("core {} logged {e}", current().unwrap().index()))
            .unwrap()
    })?;
    log.emit("hello".into())?;
    println!("{}", rx.recv()?);

    // An async task on core 0, woken for each event.
    let tx2 = tx.clone();
    let summer = rt.core(0).sink_task(move |mut events| async move {
        let mut total = 0u64;
        loop {
            let e: u64 = events.recv().await;
            if e == 0 {
                break;
            }
            total += e;
        }
        tx2.send(format!("async sink summed {total}")).unwrap();
    })?;
    for e in [5, 10, 20, 0] {
        summer.emit(e)?;
    }
    println!("{}", rx.recv()?);

    // A counting sink: fires once after 3 events (the collective helper).
    let tx3 = tx.clone();
    let three = rt.core(1).counting_sink(3, move |v: Vec<&'static str>| {
        tx3.send(format!("counting sink got {v:?}")).unwrap()
    })?;
    // Emitted from both cores.
    let t = three.clone();
    rt.core(0).call(move || t.emit("from core 0")).wait()??;
    three.emit("from main")?;
    three.emit("from main again")?;
    println!("{}", rx.recv()?);
    Ok(())
}
