//! Rendering a [`Surface`]: human and `velaris/surface/v1` JSON, and `explain`.
//!
//! Strings that come from analysed code (file names, resolved paths, source lines) are escaped
//! before they reach the terminal.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::model::{Capability, CrateSurface, ProgramSurface, Surface};
use crate::report::escape;

pub const SCHEMA: &str = "velaris/surface/v1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    target: &'a str,
    programs: &'a [ProgramSurface],
}

/// The surface as one JSON document (docs/json.md), followed by a newline.
pub fn json(surface: &Surface) -> String {
    let doc = Doc { schema: SCHEMA, target: &surface.target, programs: &surface.programs };
    let mut s = serde_json::to_string_pretty(&doc).expect("surface serializes");
    s.push('\n');
    s
}

fn crates_with(p: &ProgramSurface, cap: Capability) -> Vec<&CrateSurface> {
    p.crates.iter().filter(|c| c.capabilities.contains(&cap)).collect()
}

fn crate_label(c: &CrateSurface) -> String {
    format!("{} {}", escape::line(&c.name), escape::line(&c.version))
}

/// One section per program: its capabilities, and for each the crates that contribute it
/// with their first finding; `verbose` lists every finding.
pub fn human(surface: &Surface, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "target {}", escape::line(&surface.target));
    if surface.programs.is_empty() {
        let _ = writeln!(out, "\nno programs (no binary targets in the workspace)");
    }
    for p in &surface.programs {
        out.push('\n');
        let caps: Vec<&str> = p.capabilities.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(
            out,
            "program {} (package {}): {}",
            escape::line(&p.name),
            escape::line(&p.package),
            if caps.is_empty() { "no capabilities".to_string() } else { caps.join(", ") }
        );
        for &cap in &p.capabilities.iter().copied().collect::<Vec<_>>() {
            let crates = crates_with(p, cap);
            let _ = writeln!(out, "  {cap}");
            for c in crates {
                let findings: Vec<_> = c.findings.iter().filter(|f| f.capability == cap).collect();
                let first = findings[0];
                let scope = match first.scope {
                    super::model::Scope::Runtime => "",
                    super::model::Scope::Build => " [build]",
                };
                let more = if findings.len() > 1 && !verbose { format!(" (+{} more)", findings.len() - 1) } else { String::new() };
                let _ = writeln!(
                    out,
                    "    {}{scope}: {}:{}:{} {}{more}",
                    crate_label(c),
                    escape::line(&first.file),
                    first.line,
                    first.column,
                    escape::line(&first.path)
                );
                if verbose {
                    for f in &findings[1..] {
                        let _ = writeln!(out, "      {}:{}:{} {}", escape::line(&f.file), f.line, f.column, escape::line(&f.path));
                    }
                }
            }
        }
    }
    out
}

/// Every finding behind `cap` in `program`, with a source excerpt and the dependency path.
/// `excerpt(crate, version, file, line)` returns the source line when it is available.
pub fn explain(
    p: &ProgramSurface,
    cap: Capability,
    excerpt: &dyn Fn(&str, &str, &str, u32) -> Option<String>,
) -> String {
    let mut out = String::new();
    let crates = crates_with(p, cap);
    if crates.is_empty() {
        let _ = writeln!(out, "program {} does not have {cap}", escape::line(&p.name));
        return out;
    }
    let total: usize = crates.iter().map(|c| c.findings.iter().filter(|f| f.capability == cap).count()).sum();
    let _ = writeln!(
        out,
        "program {} has {cap} through {} crate{} ({} finding{}):",
        escape::line(&p.name),
        crates.len(),
        if crates.len() == 1 { "" } else { "s" },
        total,
        if total == 1 { "" } else { "s" }
    );
    let mut by_crate: BTreeMap<String, &CrateSurface> = BTreeMap::new();
    for c in crates {
        by_crate.insert(format!("{} {}", c.name, c.version), c);
    }
    for c in by_crate.values() {
        out.push('\n');
        let via: Vec<String> = c.via.iter().map(|v| escape::line(v)).collect();
        let _ = writeln!(out, "{}  (via {})", crate_label(c), via.join(" -> "));
        for f in c.findings.iter().filter(|f| f.capability == cap) {
            let scope = match f.scope {
                super::model::Scope::Runtime => "runtime",
                super::model::Scope::Build => "build",
            };
            let _ = writeln!(
                out,
                "  {}:{}:{}  {}  [{scope}]",
                escape::line(&f.file),
                f.line,
                f.column,
                escape::line(&f.path)
            );
            if let Some(src) = excerpt(&c.name, &c.version, &f.file, f.line) {
                let _ = writeln!(out, "  {:>5} | {}", f.line, escape::source(src.trim_end()));
            }
        }
    }
    out
}
