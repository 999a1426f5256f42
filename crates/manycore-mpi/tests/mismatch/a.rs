//! Program a of the registry-mismatch test; see `common.rs`.
#[path = "common.rs"]
mod common;

fn main() {
    common::main("only_in_b");
}
