//! The `manycore` binary: see `manycore --help` and the library docs.

fn main() {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .unwrap_or_else(|a| a.to_string_lossy().into_owned())
        })
        .collect();
    std::process::exit(manycore_cli::main_with_args(&args));
}
