//! Never compiled: `velaris surface` analyzes this program's dependency graph from source.
use std::io::Write;

fn main() -> anyhow::Result<()> {
    let body = reqwest::blocking::get("https://example.org/")?.text()?;
    let n = std::fs::read_dir(".")?.count();
    std::io::stdout().write_all(format!("{n} {}\n", body.len()).as_bytes())?;
    Ok(())
}
