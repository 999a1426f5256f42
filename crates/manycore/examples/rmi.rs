//! Remote method invocation on global object pointers (the cross-core
//! invocation paper, section III.B): an object lives on one core, a
//! `Remote<T>` names it from anywhere, invocations run on its core.
//!
//! cargo run --release -p manycore --example rmi
use manycore::{current, InvokeError, Runtime};
use std::collections::HashMap;

#[derive(Default)]
struct Directory {
    entries: HashMap<String, u32>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder().cores(2).build()?;
    // The directory lives on core 1; only the pointer travels.
    let dir = rt.core(1).place(Directory::default())?;
    println!("placed {dir:?}");

    // Invocations from the main thread and from core 0 run on core 1, in order per sender.
    dir.spawn(|d| {
        d.entries.insert("alpha".into(), 1);
    })?;
    let d2 = dir.clone();
    rt.core(0)
        .call(move || {
            d2.spawn(|d| {
                d.entries.insert("beta".into(), 2);
            })
        })
        .wait()??;
    let (n, on) = dir
        .invoke(|d| (d.entries.len(), current().unwrap().index()))
        .wait()?;
    println!("directory has {n} entries, answered on core {on}");

    // Removing the object returns it; the pointer then goes stale.
    let d = dir.remove().wait()?;
    println!("removed: {:?}", d.entries.keys().collect::<Vec<_>>());
    assert_eq!(
        dir.invoke(|d| d.entries.len()).wait(),
        Err(InvokeError::StaleObject)
    );
    println!(
        "a stale pointer is an error, not a crash: {}",
        InvokeError::StaleObject
    );
    Ok(())
}
