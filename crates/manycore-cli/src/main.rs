//! The `manycore` command (placeholder until the CLI lands).
mod bench_steal;
mod record;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |f: &str| args.iter().any(|a| a == f);
    if args.first().map(String::as_str) == Some("bench")
        && args.get(1).map(String::as_str) == Some("steal")
    {
        let opts = bench_steal::StealBenchOpts {
            secs: if has("--quick") { 0.3 } else { 1.0 },
            quick: has("--quick"),
        };
        for r in bench_steal::run(&opts) {
            if has("--json") {
                println!("{}", r.to_json());
            } else {
                println!(
                    "{:<34} {:<20} {:<16} {:>12.4} {}",
                    r.case, r.impl_, r.metric, r.value, r.unit
                );
            }
        }
    }
}
