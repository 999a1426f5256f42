//! Collective invocations over multicast trees (section II.C, Figure 1):
//! ateach, reduce and gather over a group of objects spread over cores,
//! results combined at the tree's inner nodes; tree against flat fan-out.
//!
//! cargo run --release -p manycore --example collectives
use manycore::{Group, IdlePolicy, Runtime, Topology};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cores = 16;
    let rt = Runtime::builder()
        .cores(cores)
        .idle(IdlePolicy::Sleep)
        .build()?;
    // One member per core, each holding a partial histogram.
    let members = (0..cores)
        .map(|i| rt.core(i).place(vec![i as u64; 4]))
        .collect::<Result<Vec<_>, _>>()?;
    let tree = Group::new(members);
    let flat = tree.clone().with_topology(Topology::Flat);

    tree.ateach(|h| h[0] += 1)?;
    let total = tree
        .reduce(|h| h.iter().sum::<u64>(), |a, b| a + b)
        .wait()?;
    let firsts = tree.gather(|h| h[0]).wait()?;
    println!("total {total}, first bins in member order {firsts:?}");

    for (name, g) in [("tree (fan-out 4)", &tree), ("flat", &flat)] {
        let t0 = Instant::now();
        let sum = g.reduce(|h| h[1], |a, b| a + b).wait()?;
        println!(
            "{name:>16}: reduce = {sum}, tree depth {}, {:?}",
            g.depth(),
            t0.elapsed()
        );
    }
    Ok(())
}
