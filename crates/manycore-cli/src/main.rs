//! The `manycore` command (placeholder until the CLI lands).
mod bench_sock;
mod record;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // Process-pair peer of `bench sock` (hidden).
        Some("__sock-peer") => std::process::exit(bench_sock::peer_main(&args[1..])),
        Some("bench") if args.get(1).map(String::as_str) == Some("sock") => {
            let json = args.iter().any(|a| a == "--json");
            let quick = args.iter().any(|a| a == "--quick");
            let secs = args
                .iter()
                .position(|a| a == "--secs")
                .and_then(|i| args.get(i + 1))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.25);
            let recs = bench_sock::run(&bench_sock::SockBenchOpts { secs, quick });
            if json {
                for r in &recs {
                    println!("{}", r.to_json());
                }
            } else {
                bench_sock::print_table(&recs);
            }
        }
        _ => {
            eprintln!("usage: manycore bench sock [--json] [--quick] [--secs S]");
            std::process::exit(2);
        }
    }
}
