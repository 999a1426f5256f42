//! Shared by the two programs of the registry-mismatch test: the same
//! functions, except that program b declares one more. Run together as one
//! job (`mpirun -n 1 a --expect-mismatch : -n 1 b --expect-mismatch`), the
//! ranks must refuse to start and name that function.

use manycore_mpi::{remote_fn, Error, World};

remote_fn! {
    pub fn shared_by_both(x: u64) -> u64 { x + 1 }
}

pub fn main(extra: &str) {
    let expect = std::env::args().any(|a| a == "--expect-mismatch");
    match World::init() {
        Err(Error::RegistryMismatch {
            function,
            present_on,
            absent_on,
        }) => {
            println!("refused at init: `{function}` on rank {present_on}, not on rank {absent_on}");
            let ok = function.contains(extra) && present_on != absent_on;
            println!("{} passed, {} failed", u8::from(ok), u8::from(!ok));
            std::process::exit(if ok { 0 } else { 1 });
        }
        Err(e) => {
            println!("init failed otherwise: {e}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
        Ok(w) => {
            let size = w.size();
            w.finalize().expect("finalize");
            if expect {
                println!("no mismatch detected across {size} ranks");
                println!("0 passed, 1 failed");
                std::process::exit(1);
            }
            println!("one program alone: nothing to compare (run it with its twin)");
            println!("0 passed, 0 failed, 1 skipped");
        }
    }
}
