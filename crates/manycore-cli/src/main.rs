//! The `manycore` command (placeholder until the CLI lands).
mod record;
fn main() {
    let _ = record::Record::new("", "", "", "", 0.0, "");
}
