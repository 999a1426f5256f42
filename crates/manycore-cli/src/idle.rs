//! The manycore idle policies a bench runs, by name (`--idle`), shared by
//! every bench that measures each policy.

use crate::bench::Options;
use manycore::IdlePolicy;

/// A manycore idle policy, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Spin (lowest latency, burns the CPU; needs a CPU per core).
    Poll,
    /// Sleep on the doorbell at once.
    Sleep,
    /// Spin adaptively for at most the default budget, then sleep (the
    /// runtime's default).
    Hybrid,
}

impl Idle {
    /// All three, in table order.
    pub const ALL: [Idle; 3] = [Idle::Poll, Idle::Sleep, Idle::Hybrid];
    /// `poll`, `sleep`, `hybrid`.
    pub fn name(self) -> &'static str {
        match self {
            Idle::Poll => "poll",
            Idle::Sleep => "sleep",
            Idle::Hybrid => "hybrid",
        }
    }
    /// The impl name in records: `manycore-poll`, ...
    pub fn impl_name(self) -> &'static str {
        match self {
            Idle::Poll => "manycore-poll",
            Idle::Sleep => "manycore-sleep",
            Idle::Hybrid => "manycore-hybrid",
        }
    }
    /// Parses a name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.name() == s)
    }
    /// The runtime's policy (`Hybrid` with the runtime's default budget).
    pub fn policy(self) -> IdlePolicy {
        match self {
            Idle::Poll => IdlePolicy::Poll,
            Idle::Sleep => IdlePolicy::Sleep,
            Idle::Hybrid => IdlePolicy::default(),
        }
    }
}

/// `--idle LIST`: names of idle policies or `all`, comma-separated; in
/// order, each once.
pub fn parse_list(v: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for part in v.split(',').map(str::trim) {
        let add: Vec<Idle> = match part {
            "all" => Idle::ALL.to_vec(),
            p => vec![Idle::from_name(p).ok_or("expected poll, sleep, hybrid or all")?],
        };
        for a in add {
            if !out.iter().any(|o| o == a.name()) {
                out.push(a.name().to_string());
            }
        }
    }
    Ok(out)
}

/// The idle policies a run measures (`--idle`, or all), in table order.
pub fn chosen(o: &Options) -> Vec<Idle> {
    o.get("--idle").map_or_else(
        || Idle::ALL.to_vec(),
        |v| {
            Idle::ALL
                .into_iter()
                .filter(|i| v.iter().any(|n| n == i.name()))
                .collect()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_in_order_each_once() {
        assert_eq!(parse_list("sleep,poll,sleep").unwrap(), ["sleep", "poll"]);
        assert_eq!(parse_list("all").unwrap(), ["poll", "sleep", "hybrid"]);
        assert_eq!(
            parse_list("sleep,all").unwrap(),
            ["sleep", "poll", "hybrid"]
        );
        assert!(parse_list("spin").is_err());
    }
}
