//! Program b of the registry-mismatch test: one function more than a.
#[path = "common.rs"]
mod common;

manycore_mpi::remote_fn! {
    fn only_in_b(x: u64) -> u64 { x * 2 }
}

fn main() {
    common::main("only_in_b");
}
