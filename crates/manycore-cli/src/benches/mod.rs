//! Every benchmark, one module each; each module's `BENCH` is its entry in
//! [`ALL`]. The order of the list is the order of `manycore bench --help`
//! and of the sections of `manycore report`.
//!
//! Adding a benchmark: write `x.rs` here with `pub const BENCH: Bench`, and
//! add `x` to the list below.

use crate::bench::Bench;

macro_rules! benches {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every benchmark, in report order.
        pub const ALL: &[&Bench] = &[$(&$module::BENCH),*];
    };
}

benches![pingpong, invoke, reduce, sched, sock, steal, flow, kv, mpi];

/// The benchmark called `name`.
pub fn find(name: &str) -> Option<&'static Bench> {
    ALL.iter().copied().find(|b| b.name == name)
}

/// The names of all benchmarks, comma-separated (for messages).
pub fn names() -> String {
    ALL.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module in this folder is listed exactly once, under its own
    /// name, and no two benches share a name.
    #[test]
    fn registry_lists_every_bench_once() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/benches");
        let mut modules: Vec<String> = std::fs::read_dir(&dir)
            .expect("src/benches")
            .filter_map(|e| {
                let p = e.ok()?.path();
                let stem = p.file_stem()?.to_str()?.to_string();
                (stem != "mod").then_some(stem)
            })
            .collect();
        modules.sort();
        let mut names: Vec<&str> = ALL.iter().map(|b| b.name).collect();
        names.sort();
        assert_eq!(names, modules);
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a name listed twice");
        for b in ALL {
            assert!(!b.about.is_empty() && !b.title.is_empty(), "{}", b.name);
            // One line of `manycore --help` each.
            assert!(b.about.chars().count() <= 63, "{}", b.name);
            assert_eq!(find(b.name).map(|f| f.title), Some(b.title));
        }
    }
}
