//! Rendering a [`Surface`]: human and `velaris/surface/v2` JSON, and `explain`.
//!
//! Strings that come from analysed code (file names, resolved paths, source lines) are escaped
//! before they reach the terminal.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::model::{Capability, CrateSurface, ProgramSurface, Surface};
use crate::report::escape;

pub const SCHEMA: &str = "velaris/surface/v2";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    target: &'a str,
    /// Each crate's findings once, however many programs compile it.
    crates: Vec<CrateDoc<'a>>,
    programs: Vec<ProgramDoc<'a>>,
}

#[derive(Serialize)]
struct CrateDoc<'a> {
    id: String,
    name: &'a str,
    version: &'a str,
    capabilities: &'a std::collections::BTreeSet<Capability>,
    findings: &'a [super::model::Finding],
    files: &'a [String],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    unloaded: &'a [super::model::Unloaded],
    #[serde(skip_serializing_if = "is_zero")]
    unloaded_count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct ProgramDoc<'a> {
    name: &'a str,
    kind: super::model::ProgramKind,
    package: &'a str,
    capabilities: &'a std::collections::BTreeSet<Capability>,
    crates: Vec<CrateRef<'a>>,
    reached_from_program: &'a [super::model::Reached],
    calls: super::model::CallStats,
}

#[derive(Serialize)]
struct CrateRef<'a> {
    /// The `id` of the entry of `crates` with its findings.
    id: String,
    name: &'a str,
    version: &'a str,
    capabilities: &'a std::collections::BTreeSet<Capability>,
    via: &'a [String],
}

/// The surface as one JSON document (docs/json.md), followed by a newline. A crate's
/// findings, files and coverage are listed once in `crates`, under an `id` (`name version`,
/// then ` #2`, ` #3` for the same crate compiled as other units in some programs); each
/// program lists its crates by `id`, with the dependency path.
pub fn json(surface: &Surface) -> String {
    let mut crates: Vec<CrateDoc> = Vec::new();
    // The details of a crate are shared (one `Arc`) between the programs that compile the
    // same units of it; equal details made apart are merged too.
    let mut ids: BTreeMap<(&str, &str), Vec<(&CrateSurface, String)>> = BTreeMap::new();
    let mut programs = Vec::new();
    for p in &surface.programs {
        let mut refs = Vec::new();
        for c in &p.crates {
            let variants = ids.entry((c.name.as_str(), c.version.as_str())).or_default();
            let same = |o: &CrateSurface| {
                std::sync::Arc::ptr_eq(&o.findings, &c.findings) && std::sync::Arc::ptr_eq(&o.files, &c.files)
                    || (o.findings == c.findings && o.files == c.files && o.unloaded == c.unloaded)
            };
            let id = match variants.iter().find(|(o, _)| same(o)) {
                Some((_, id)) => id.clone(),
                None => {
                    let id = if variants.is_empty() {
                        format!("{} {}", c.name, c.version)
                    } else {
                        format!("{} {} #{}", c.name, c.version, variants.len() + 1)
                    };
                    variants.push((c, id.clone()));
                    crates.push(CrateDoc {
                        id: id.clone(),
                        name: &c.name,
                        version: &c.version,
                        capabilities: &c.capabilities,
                        findings: &c.findings,
                        files: &c.files,
                        unloaded: &c.unloaded,
                        unloaded_count: c.unloaded_count,
                    });
                    id
                }
            };
            refs.push(CrateRef { id, name: &c.name, version: &c.version, capabilities: &c.capabilities, via: &c.via });
        }
        programs.push(ProgramDoc {
            name: &p.name,
            kind: p.kind,
            package: &p.package,
            capabilities: &p.capabilities,
            crates: refs,
            reached_from_program: &p.reached_from_program,
            calls: p.calls,
        });
    }
    crates.sort_by(|a, b| (a.name, a.version, &a.id).cmp(&(b.name, b.version, &b.id)));
    let doc = Doc { schema: SCHEMA, target: &surface.target, crates, programs };
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

/// One section per program: how many crates were analysed, its capabilities and for each
/// the crates that contribute it with their first finding (`verbose`: every finding); then,
/// apart, what build scripts and proc macros do while building (their crates' grants, not
/// the program's).
pub fn human(surface: &Surface, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "target {}", escape::line(&surface.target));
    if surface.programs.is_empty() {
        let _ = writeln!(out, "\nno programs (no binaries, libraries or other artifacts in the workspace)");
    }
    for p in &surface.programs {
        out.push('\n');
        let caps: Vec<&str> = p.capabilities.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(
            out,
            "program {} ({}package {}): {}",
            escape::line(&p.name),
            if p.kind == super::model::ProgramKind::Bin { String::new() } else { format!("{}, ", p.kind.as_str()) },
            escape::line(&p.package),
            if caps.is_empty() { "no capabilities".to_string() } else { caps.join(", ") }
        );
        let with = p.crates.iter().filter(|c| !c.capabilities.is_empty()).count();
        let unanalyzed = p.crates.iter().filter(|c| c.capabilities.contains(&Capability::Unanalyzed)).count();
        let _ = writeln!(
            out,
            "  {} crate{} analysed, {with} with capabilities, {unanalyzed} unanalyzed",
            p.crates.len(),
            if p.crates.len() == 1 { "" } else { "s" }
        );
        // Coverage: the packages' source files no compiled module declares, or declares under
        // a false cfg (the JSON lists them, with why).
        let not_loaded: u64 = p.crates.iter().map(|c| c.unloaded_count).sum();
        if not_loaded > 0 {
            let cfg_false: usize = p.crates.iter().flat_map(|c| c.unloaded.iter()).filter(|u| u.reason == super::model::UnloadedReason::CfgFalse).count();
            let other: usize = p.crates.iter().flat_map(|c| c.unloaded.iter()).filter(|u| u.reason == super::model::UnloadedReason::OtherTarget).count();
            let _ = writeln!(
                out,
                "  {not_loaded} source file{} of these packages not compiled in: {cfg_false} under a false cfg, {other} of other targets (tests, examples, other binaries), the rest declared by no module",
                if not_loaded == 1 { "" } else { "s" }
            );
        }
        // Informational: how far the program's own calls reach into what its dependencies can do.
        let of: usize = p.reached_from_program.iter().map(|r| r.capabilities.len()).sum();
        if p.calls.total > 0 || of > 0 {
            let reached: usize = p.reached_from_program.iter().map(|r| r.reached.len()).sum();
            let _ = writeln!(
                out,
                "  its own code: {} of {} call{} resolved; reaches {reached} of the {of} dependency capabilities calls carry",
                p.calls.resolved,
                p.calls.total,
                if p.calls.total == 1 { "" } else { "s" },
            );
        }
        for &cap in &p.capabilities {
            let _ = writeln!(out, "  {cap}");
            section(&mut out, p, cap, "    ", verbose, |f| f.counts_for_program());
        }
        let build: std::collections::BTreeSet<Capability> = p
            .crates
            .iter()
            .flat_map(|c| c.findings.iter().filter(|f| !f.counts_for_program()).map(|f| f.capability))
            .collect();
        if !build.is_empty() {
            let _ = writeln!(out, "  while building (build scripts and proc macros; granted to their crates, not to the program):");
            for cap in build {
                let _ = writeln!(out, "    {cap}");
                section(&mut out, p, cap, "      ", verbose, |f| !f.counts_for_program());
            }
        }
    }
    out
}

/// The crates with findings of `cap` that `keep` keeps: the first finding of each (all of
/// them with `verbose`).
fn section(out: &mut String, p: &ProgramSurface, cap: Capability, indent: &str, verbose: bool, keep: impl Fn(&super::model::Finding) -> bool) {
    for c in crates_with(p, cap) {
        let findings: Vec<_> = c.findings.iter().filter(|f| f.capability == cap && keep(f)).collect();
        let Some(first) = findings.first() else { continue };
        let scope = match first.scope {
            super::model::Scope::Runtime => "",
            super::model::Scope::Build => " [build]",
        };
        let more = if findings.len() > 1 && !verbose { format!(" (+{} more)", findings.len() - 1) } else { String::new() };
        let _ = writeln!(
            out,
            "{indent}{}{scope}: {}:{}:{} {}{more}",
            crate_label(c),
            escape::line(&first.file),
            first.line,
            first.column,
            escape::line(&first.path_and_chain())
        );
        if verbose {
            for f in &findings[1..] {
                let _ = writeln!(out, "{indent}  {}:{}:{} {}", escape::line(&f.file), f.line, f.column, escape::line(&f.path_and_chain()));
            }
        }
    }
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
            // Through a dependency's API: each hop, down to where the capability is used.
            for h in &f.chain {
                let _ = writeln!(out, "      -> {}", escape::line(&h.display()));
            }
            if let Some(e) = &f.expanded_from {
                let _ = writeln!(out, "      in the expansion of {}", escape::line(&e.display()));
            }
            if let Some(src) = excerpt(&c.name, &c.version, &f.file, f.line) {
                let _ = writeln!(out, "  {:>5} | {}", f.line, escape::source(src.trim_end()));
            }
        }
    }
    out
}
