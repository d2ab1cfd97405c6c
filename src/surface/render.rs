//! Rendering a [`Surface`]: human and `velaris/surface/v2` JSON, and `explain`.
//!
//! Strings that come from analysed code (file names, resolved paths, source lines) are escaped
//! before they reach the terminal.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::model::{Capability, CrateSurface, Finding, ProgramSurface, Scope, Surface};
use crate::text::{escape, plural, thousands};

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
    /// What its build scripts were evaluated to (docs/json.md).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    build_scripts: &'a [crate::surface::buildscript::Evaluation],
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
    #[serde(skip_serializing_if = "Option::is_none")]
    reachable: Option<&'a super::model::Reachable>,
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
                    || (o.findings == c.findings && o.files == c.files && o.unloaded == c.unloaded && o.build_scripts == c.build_scripts)
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
                        build_scripts: &c.build_scripts,
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
            reachable: p.reachable.as_ref(),
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
        let with = p.crates.iter().filter(|c| !c.capabilities.is_empty()).count() as u64;
        let unanalyzed = p.crates.iter().filter(|c| c.capabilities.contains(&Capability::Unanalyzed)).count() as u64;
        let _ = writeln!(
            out,
            "  {} analysed, {} with capabilities, {} unanalyzed",
            plural(p.crates.len() as u64, "crate", "crates"),
            thousands(with),
            thousands(unanalyzed),
        );
        // Coverage: the packages' source files no compiled module declares, or declares under
        // a false cfg (the JSON lists them, with why).
        let not_loaded: u64 = p.crates.iter().map(|c| c.unloaded_count).sum();
        if not_loaded > 0 {
            let cfg_false = p.crates.iter().flat_map(|c| c.unloaded.iter()).filter(|u| u.reason == super::model::UnloadedReason::CfgFalse).count() as u64;
            let other = p.crates.iter().flat_map(|c| c.unloaded.iter()).filter(|u| u.reason == super::model::UnloadedReason::OtherTarget).count() as u64;
            let _ = writeln!(
                out,
                "  {} of these packages not compiled in: {} under a false cfg, {} of other targets (tests, examples, other binaries), the rest declared by no module (`--format json` lists them)",
                plural(not_loaded, "source file", "source files"),
                thousands(cfg_false),
                thousands(other),
            );
        }
        // Informational: how far the program's own calls reach into what its dependencies can do.
        let of: usize = p.reached_from_program.iter().map(|r| r.capabilities.len()).sum();
        if p.calls.total > 0 || of > 0 {
            let reached: usize = p.reached_from_program.iter().map(|r| r.reached.len()).sum();
            let _ = writeln!(
                out,
                "  its own code: {} of {} resolved; reaches {} of the {} dependency capabilities calls carry",
                thousands(p.calls.resolved),
                plural(p.calls.total, "call", "calls"),
                thousands(reached as u64),
                thousands(of as u64),
            );
        }
        // Informational, not gated: what its entry points reach, calls through traits
        // resolved over the program.
        if let Some(r) = &p.reachable {
            let caps: Vec<&str> = r.capabilities.iter().map(|c| c.as_str()).collect();
            let _ = writeln!(
                out,
                "  reachable from its entry points: {} ({} through traits resolved, {} unresolved; the grant checked is the union above)",
                if caps.is_empty() { "nothing".to_string() } else { caps.join(", ") },
                plural(r.through_traits, "call", "calls"),
                thousands(r.unresolved),
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
        let more = if findings.len() > 1 && !verbose { format!(" (+{} more)", thousands(findings.len() as u64 - 1)) } else { String::new() };
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

/// The source excerpt callback of the explain renderings: `(crate, version, file, line)` to the
/// source line, when the source is at hand.
pub type Excerpt<'a> = &'a dyn Fn(&str, &str, &str, u32) -> Option<String>;

fn scope_word(f: &Finding) -> &'static str {
    match f.scope {
        Scope::Runtime => "runtime",
        Scope::Build => "build",
    }
}

/// One finding with its chain and source line, as `explain` shows it.
fn explain_finding(out: &mut String, name: &str, version: &str, f: &Finding, excerpt: Excerpt) {
    let _ = writeln!(
        out,
        "  {}:{}:{}  {}  [{}]",
        escape::line(&f.file),
        f.line,
        f.column,
        escape::line(&f.path),
        scope_word(f)
    );
    // Through a dependency's API: each hop, down to where the capability is used.
    for h in &f.chain {
        let _ = writeln!(out, "      -> {}", escape::line(&h.display()));
    }
    if let Some(e) = &f.expanded_from {
        let _ = writeln!(out, "      in the expansion of {}", escape::line(&e.display()));
    }
    if f.through_trait {
        let _ = writeln!(out, "      through a trait: every implementation the program makes (informational, not in the grant)");
    }
    if let Some(src) = excerpt(name, version, &f.file, f.line) {
        let _ = writeln!(out, "  {:>5} | {}", f.line, escape::source(src.trim_end()));
    }
}

/// The crates of `p` with findings of `cap` that `keep` keeps, each with those findings.
fn findings_of(p: &ProgramSurface, cap: Capability, keep: impl Fn(&Finding) -> bool) -> Vec<(&CrateSurface, Vec<&Finding>)> {
    let mut by_crate: BTreeMap<(&str, &str), (&CrateSurface, Vec<&Finding>)> = BTreeMap::new();
    for c in crates_with(p, cap) {
        let fs: Vec<&Finding> = c.findings.iter().filter(|f| f.capability == cap && keep(f)).collect();
        if !fs.is_empty() {
            by_crate.insert((c.name.as_str(), c.version.as_str()), (c, fs));
        }
    }
    by_crate.into_values().collect()
}

/// Every finding behind `cap` in `program`, with a source excerpt and the dependency path:
/// what counts for the program (as `surface` and the baseline count it), then, apart, what
/// build scripts and proc macros of its crates do with `cap` while building (their crates'
/// grants, not the program's). `excerpt(crate, version, file, line)` returns the source line
/// when it is available.
pub fn explain(p: &ProgramSurface, cap: Capability, excerpt: Excerpt) -> String {
    let mut out = String::new();
    let counted = findings_of(p, cap, |f| f.counts_for_program());
    let building = findings_of(p, cap, |f| !f.counts_for_program());
    let name = escape::line(&p.name);
    if counted.is_empty() && building.is_empty() {
        let _ = writeln!(out, "program {name} does not have {cap}");
        return out;
    }
    let total = |list: &[(&CrateSurface, Vec<&Finding>)]| list.iter().map(|(_, f)| f.len() as u64).sum::<u64>();
    if counted.is_empty() {
        let _ = writeln!(out, "program {name} does not have {cap} itself; its build does:");
    } else {
        let _ = writeln!(
            out,
            "program {name} has {cap} through {} ({}):",
            plural(counted.len() as u64, "crate", "crates"),
            plural(total(&counted), "finding", "findings")
        );
    }
    for (c, findings) in &counted {
        out.push('\n');
        let via: Vec<String> = c.via.iter().map(|v| escape::line(v)).collect();
        let _ = writeln!(out, "{}  (via {})", crate_label(c), via.join(" -> "));
        for f in findings {
            explain_finding(&mut out, &c.name, &c.version, f, excerpt);
        }
    }
    if !building.is_empty() {
        let _ = writeln!(
            out,
            "\nwhile building (build scripts and proc macros; granted to their crates, not to the program): {} through {}",
            plural(total(&building), "finding", "findings"),
            plural(building.len() as u64, "crate", "crates"),
        );
        for (c, findings) in &building {
            out.push('\n');
            let via: Vec<String> = c.via.iter().map(|v| escape::line(v)).collect();
            let _ = writeln!(out, "{}  (via {})", crate_label(c), via.join(" -> "));
            for f in findings {
                explain_finding(&mut out, &c.name, &c.version, f, excerpt);
            }
        }
    }
    out
}

/// Every finding behind `cap` in crate `name`, all its versions and every program that
/// compiles it in, as its `[crate.NAME]` grant counts them (build-time findings included): for
/// each version the programs, the shortest dependency path, then each finding with its chain
/// and source line.
pub fn explain_crate(surface: &Surface, name: &str, cap: Capability, excerpt: Excerpt) -> String {
    let mut out = String::new();
    // Per version: the findings (each once), the shortest `via`, the programs.
    type Version<'a> = (std::collections::BTreeSet<&'a Finding>, Vec<String>, std::collections::BTreeSet<&'a str>);
    let mut versions: BTreeMap<&str, Version> = BTreeMap::new();
    for p in &surface.programs {
        for c in p.crates.iter().filter(|c| c.name == name) {
            let slot = versions.entry(c.version.as_str()).or_insert_with(|| (Default::default(), c.via.clone(), Default::default()));
            if (c.via.len(), &c.via) < (slot.1.len(), &slot.1) {
                slot.1 = c.via.clone();
            }
            slot.2.insert(p.name.as_str());
            slot.0.extend(c.findings.iter().filter(|f| f.capability == cap));
        }
    }
    let shown = escape::line(name);
    let total: u64 = versions.values().map(|v| v.0.len() as u64).sum();
    if total == 0 {
        let _ = writeln!(out, "crate {shown} does not have {cap}");
        return out;
    }
    let with: Vec<&str> = versions.iter().filter(|(_, v)| !v.0.is_empty()).map(|(k, _)| *k).collect();
    let _ = writeln!(
        out,
        "crate {shown} has {cap} ({} in {}):",
        plural(total, "finding", "findings"),
        plural(with.len() as u64, "version", "versions")
    );
    for (version, (findings, via, programs)) in versions.iter().filter(|(_, v)| !v.0.is_empty()) {
        out.push('\n');
        let via: Vec<String> = via.iter().map(|v| escape::line(v)).collect();
        let programs: Vec<String> = programs.iter().map(|p| escape::line(p)).collect();
        let _ = writeln!(
            out,
            "{shown} {}  (in {}: {}; via {})",
            escape::line(version),
            if programs.len() == 1 { "program" } else { "programs" },
            programs.join(", "),
            via.join(" -> ")
        );
        for f in findings {
            explain_finding(&mut out, name, version, f, excerpt);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::surface::model::{CallStats, ProgramSurface};

    fn f(cap: Capability, scope: Scope, file: &str, line: u32, path: &str) -> Finding {
        Finding { capability: cap, scope, file: file.into(), line, column: 5, path: path.into(), chain: Vec::new(), expanded_from: None, through_trait: false }
    }

    fn c(name: &str, version: &str, via: &[&str], findings: Vec<Finding>) -> CrateSurface {
        CrateSurface {
            name: name.into(),
            version: version.into(),
            capabilities: findings.iter().map(|f| f.capability).collect(),
            findings: findings.into(),
            via: via.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn p(name: &str, crates: Vec<CrateSurface>) -> ProgramSurface {
        ProgramSurface {
            name: name.into(),
            package: name.into(),
            capabilities: crates.iter().flat_map(|c| c.findings.iter().filter(|f| f.counts_for_program() && f.granted()).map(|f| f.capability)).collect(),
            crates,
            reached_from_program: Vec::new(),
            calls: CallStats { total: 90_535, resolved: 13_396 },
            ..Default::default()
        }
    }

    /// `app` writes a file; `tokio` (two versions) writes files at run time; `cc`'s build script
    /// writes while building.
    fn surface() -> Surface {
        let tokio1 = c("tokio", "1.0.0", &["app", "tokio"], vec![f(Capability::FsWrite, Scope::Runtime, "src/fs/write.rs", 106, "std::fs::write")]);
        let tokio2 = c("tokio", "2.0.0", &["app", "web", "tokio"], vec![f(Capability::FsWrite, Scope::Runtime, "src/fs.rs", 7, "std::fs::write")]);
        let build = c("gen", "0.1.0", &["app", "gen"], vec![f(Capability::FsWrite, Scope::Build, "build.rs", 3, "std::fs::write"), f(Capability::BuildScript, Scope::Build, "build.rs", 1, "build script")]);
        let app = c("app", "0.1.0", &["app"], vec![f(Capability::FsWrite, Scope::Runtime, "src/main.rs", 2, "std::fs::write")]);
        Surface {
            target: "x86_64-unknown-linux-gnu".into(),
            programs: vec![p("app", vec![app, build, tokio1.clone(), tokio2]), p("tool", vec![tokio1])],
        }
    }

    fn no_source(_: &str, _: &str, _: &str, _: u32) -> Option<String> {
        None
    }

    #[test]
    fn a_program_explains_what_counts_for_it_and_its_build_apart() {
        let s = surface();
        let text = explain(&s.programs[0], Capability::FsWrite, &no_source);
        assert!(text.starts_with("program app has fs.write through 3 crates (3 findings):\n"), "the build script's crate is not counted: {text}");
        let building = text.find("while building").unwrap_or_else(|| panic!("{text}"));
        assert!(text[building..].contains("1 finding through 1 crate") && text[building..].contains("gen 0.1.0"), "{text}");
        assert!(!text[..building].contains("gen 0.1.0"), "{text}");
        let only_build = explain(&s.programs[0], Capability::BuildScript, &no_source);
        assert!(only_build.starts_with("program app has build.script through 1 crate (1 finding)"), "{only_build}");
    }

    #[test]
    fn a_crate_is_explained_over_its_versions_and_programs() {
        let s = surface();
        let text = explain_crate(&s, "tokio", Capability::FsWrite, &|n, v, file, line| Some(format!("// {n} {v} {file}:{line}")));
        assert!(text.starts_with("crate tokio has fs.write (2 findings in 2 versions):\n"), "{text}");
        assert!(text.contains("tokio 1.0.0  (in programs: app, tool; via app -> tokio)"), "{text}");
        assert!(text.contains("tokio 2.0.0  (in program: app; via app -> web -> tokio)"), "{text}");
        assert!(text.contains("  src/fs/write.rs:106:5  std::fs::write  [runtime]\n    106 | // tokio 1.0.0 src/fs/write.rs:106"), "{text}");
        // Build-time findings are the crate's grant: they are listed.
        let generated = explain_crate(&s, "gen", Capability::FsWrite, &no_source);
        assert!(generated.contains("build.rs:3:5  std::fs::write  [build]"), "{generated}");
        assert_eq!(explain_crate(&s, "tokio", Capability::NetConnect, &no_source), "crate tokio does not have net.connect\n");
        assert_eq!(explain_crate(&s, "nope", Capability::FsWrite, &no_source), "crate nope does not have fs.write\n");
    }

    #[test]
    fn numbers_have_one_format() {
        let text = human(&surface(), false);
        assert!(text.contains("its own code: 13,396 of 90,535 calls resolved"), "{text}");
        let caps: BTreeSet<Capability> = surface().programs[0].capabilities.clone();
        assert!(caps.contains(&Capability::BuildScript));
    }
}
