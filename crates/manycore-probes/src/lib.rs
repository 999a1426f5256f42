//! What the dev probes in `src/bin/` share: reading their knobs (positional
//! arguments and environment variables), the runtime most of them use, and
//! the kv probes' workload (`kv`).
//! The workloads and statistics come from `manycore_cli`, so a probe times
//! exactly what `manycore bench` times. See `README.md` for the probes.

pub mod kv;

use std::str::FromStr;
use std::time::Duration;

use manycore_rt::{IdlePolicy, Runtime};

pub use manycore_cli::stats::{median, percentile};

/// The `i`-th command-line argument (1 is the first after the program
/// name) parsed as a `T`, or `default` when it is absent. Exits with a
/// message when it is there but does not parse.
pub fn arg<T: FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("argument {i}: cannot parse '{s}'");
            std::process::exit(2)
        }),
    }
}

/// The `i`-th command-line argument as text, if given.
pub fn arg_str(i: usize) -> Option<String> {
    std::env::args().nth(i)
}

/// Whether the environment variable `name` is set (to anything).
pub fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

/// The environment variable `name` parsed as a `T`, if set and valid.
pub fn env_num<T: FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The hybrid idle policy the benches use: spin 50 µs, then sleep.
pub fn hybrid() -> IdlePolicy {
    IdlePolicy::Hybrid {
        spin: Duration::from_micros(50),
    }
}

/// A runtime of `cores` cores with idle policy `idle`, pinned if `PIN` is
/// set, with `CAP` ring slots if set (the runtime's default otherwise).
pub fn runtime(cores: usize, idle: IdlePolicy) -> Runtime {
    let mut b = Runtime::builder()
        .cores(cores)
        .idle(idle)
        .pin(env_set("PIN"));
    if let Some(cap) = env_num("CAP") {
        b = b.ring_capacity(cap);
    }
    b.build().expect("runtime")
}

/// [`runtime`] with the hybrid policy and manycore-steal attached.
pub fn steal_runtime(cores: usize) -> Runtime {
    let rt = runtime(cores, hybrid());
    manycore_steal::attach(&rt).expect("attach");
    rt
}

/// The smallest and the median of `v` (NaN for none).
pub fn min_median(v: &[f64]) -> (f64, f64) {
    let min = v.iter().copied().fold(f64::NAN, f64::min);
    (min, median(v).unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_median() {
        assert_eq!(min_median(&[3.0, 1.0, 2.0]), (1.0, 2.0));
        let (min, med) = min_median(&[]);
        assert!(min.is_nan() && med.is_nan());
        assert_eq!(arg(99, 7u32), 7);
    }
}
