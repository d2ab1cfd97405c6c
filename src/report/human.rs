//! The terminal rendering: the review. A headline (what changed, what was verified, the audit
//! cost), the packages in risk order as a table, then what a reviewer must read: the
//! capability changes with their evidence and hunks, the flags, the programs and the baseline,
//! the packages not built for the target, a one-line stat per package, and what was verified.
//! `--files` adds each package's changed files, `--diff` the diffs.
//!
//! Colour is written as ANSI styles; whether they reach the terminal is decided by the caller's
//! stream (anstream strips them for `--color never`, `NO_COLOR` or a pipe).

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use crate::text::escape;
use crate::text::{plural, thousands};
use crate::depsdiff::{BaselineState, CapStatus, PackageReport, Report, Side, Tier, Verification, review};
use crate::diff::FileStatus;
use crate::lockfile::ChangeKind;
use crate::surface::Scope;

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Headline, table and one line per package.
    Stat,
    /// The review: headline, table, capability changes, flags, programs, stats.
    Review,
    /// The review and each package's changed files.
    Files,
    /// Everything, with unified diffs.
    Diff,
}

#[derive(Debug, Clone, Copy)]
pub struct HumanOptions {
    pub detail: Detail,
}

const BOLD: Style = Style::new().bold();
const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const CYAN: Style = AnsiColor::Cyan.on_default();
const DIM: Style = Style::new().dimmed();

/// Findings shown per gained capability (the JSON has them all).
const FINDINGS_SHOWN: usize = 3;
/// Hunks shown per package.
const HUNKS_SHOWN: usize = 3;
/// Evidence lines shown per flag.
const FLAG_EVIDENCE_SHOWN: usize = 3;

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

fn kind_style(k: ChangeKind) -> Style {
    match k {
        ChangeKind::Added => GREEN,
        ChangeKind::Removed => RED,
        ChangeKind::Upgraded => CYAN,
        ChangeKind::Downgraded | ChangeKind::SourceChanged => YELLOW,
        ChangeKind::ChecksumChanged => RED,
    }
}

fn tier_style(t: Tier) -> Style {
    match t {
        Tier::Integrity | Tier::Capabilities => RED,
        Tier::Flags => YELLOW,
        Tier::Direct => CYAN,
        Tier::Routine | Tier::NotBuilt => DIM,
    }
}

/// "name old -> new", escaped.
fn title(p: &PackageReport) -> String {
    escape::line(&p.title())
}

fn change_cell(p: &PackageReport) -> String {
    let mut s = p.change.as_str().to_string();
    if let Some(b) = p.semver.filter(|b| *b != crate::lockfile::SemverBump::None) {
        s.push_str(&format!(" ({})", b.as_str()));
    }
    s
}

fn where_cell(p: &PackageReport) -> String {
    let pl = &p.placement;
    match pl.built {
        None if !pl.direct.is_empty() => format!("direct ({}), lockfile", pl.direct.join(", ")),
        None if pl.via.len() >= 2 => format!("via {}, lockfile", pl.via[pl.via.len() - 2]),
        None => "graph unknown".to_string(),
        Some(false) => "not built".to_string(),
        Some(true) if !pl.direct.is_empty() => format!("direct ({})", pl.direct.join(", ")),
        Some(true) if pl.via.len() >= 2 => format!("via {}", pl.via[pl.via.len() - 2]),
        Some(true) => "built".to_string(),
    }
}

fn what_cell(p: &PackageReport) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut caps: Vec<String> = Vec::new();
    for d in &p.capabilities.added {
        let c = if d.scope == Scope::Build && !d.capability.as_str().starts_with("build.") {
            format!("+{} (build)", d.capability)
        } else {
            format!("+{}", d.capability)
        };
        if !caps.contains(&c) {
            caps.push(c);
        }
    }
    parts.extend(caps);
    for f in &p.flags {
        if !parts.iter().any(|x| x == f.kind.code()) {
            parts.push(f.kind.code().to_string());
        }
    }
    match &p.capabilities.status {
        CapStatus::Unknown(_) => parts.push("capabilities unknown".into()),
        _ if !p.capabilities.removed.is_empty() && parts.is_empty() => parts.push("loses capabilities".into()),
        _ => {}
    }
    if parts.is_empty() { "-".into() } else { parts.join(" ") }
}

fn verification(s: &Side) -> String {
    match &s.verification {
        Verification::Sha256 { origin } => paint(DIM, &format!("sha256 ok ({})", origin.kind())),
        Verification::Commit { commit, .. } => paint(DIM, &format!("verified by commit id {}", escape::line(&short(commit)))),
        Verification::Unverifiable(why) => paint(YELLOW, &format!("unverifiable: {}", escape::line(why))),
    }
}

fn short(s: &str) -> String {
    s.chars().take(12).collect()
}

fn counts(p: &PackageReport) -> String {
    match &p.diff {
        None => paint(YELLOW, "contents not compared"),
        Some(d) => {
            let parts: Vec<String> = [(d.files_added, "added"), (d.files_removed, "removed"), (d.files_modified, "modified")]
                .into_iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, what)| format!("{} {what}", thousands(n)))
                .collect();
            let mut s = format!(
                "{} ({}), lines {} {}, audit {}",
                plural(d.files_added + d.files_removed + d.files_modified, "file", "files"),
                parts.join(", "),
                paint(GREEN, &format!("+{}", thousands(d.lines_added))),
                paint(RED, &format!("-{}", thousands(d.lines_removed))),
                paint(BOLD, &thousands(d.audit_lines)),
            );
            if d.binary_files > 0 {
                let _ = write!(s, ", {}", plural(d.binary_files, "binary file", "binary files"));
            }
            if d.too_large_files > 0 {
                let _ = write!(s, ", {} too large to diff", plural(d.too_large_files, "file", "files"));
            }
            s
        }
    }
}

fn vcs_line(p: &PackageReport) -> Option<String> {
    p.new.as_ref()?;
    let d = p.diff.as_ref()?;
    let sha = |v: &Option<crate::diff::VcsInfo>| match v {
        Some(v) => {
            let sha = v.sha1.as_deref().map_or("unknown commit".to_string(), |s| escape::line(&short(s)));
            if v.dirty { format!("{sha} (dirty)") } else { sha }
        }
        None => "no VCS info".to_string(),
    };
    let dirty = d.new_vcs.as_ref().is_some_and(|v| v.dirty);
    if d.vcs_changed || dirty || (d.old_vcs.is_some() && d.new_vcs.is_none()) {
        let style = if dirty { RED } else { DIM };
        let what = if d.old_vcs.is_some() || p.old.is_some() {
            format!("published from {} -> {}", sha(&d.old_vcs), sha(&d.new_vcs))
        } else {
            format!("published from {}", sha(&d.new_vcs))
        };
        return Some(paint(style, &format!("{what} (the commit .cargo_vcs_info.json says it was packaged from)")));
    }
    None
}

/// The headline: what changed, what was verified, the audit cost.
pub fn headline(report: &Report) -> String {
    let built: Vec<&PackageReport> = report.packages.iter().filter(|p| p.built()).collect();
    let not_built = report.packages.len() - built.len();
    let mut s = format!("{} changed", plural(report.packages.len() as u64, "package", "packages"));
    let cats = review::categories(report);
    if !cats.is_empty() {
        let list: Vec<String> = cats.iter().map(|(n, c)| format!("{n} {}", review::category_phrase(c, *n))).collect();
        let _ = write!(s, ": {}", list.join(", "));
    }
    if not_built > 0 {
        let _ = write!(s, " ({not_built} not built)");
    }
    let v = &report.verified;
    let mut ver = Vec::new();
    if v.sha256_total > 0 {
        ver.push(format!("sha256 verified {} of {}", thousands(v.sha256 as u64), thousands(v.sha256_total as u64)));
    }
    if v.commits_total > 0 {
        ver.push(format!("{} of {} git {} verified by commit id", thousands(v.commits as u64), thousands(v.commits_total as u64), if v.commits_total == 1 { "package" } else { "packages" }));
    }
    if !ver.is_empty() {
        let _ = write!(s, "; {}", ver.join(", "));
    }
    let _ = write!(s, "; audit cost {}", plural(report.audit_lines(), "line", "lines"));
    let nb = report.audit_lines_not_built();
    if not_built > 0 {
        let target = if report.targets.len() == 1 { "this target".to_string() } else { "these targets".to_string() };
        if report.all_targets {
            let _ = write!(s, " (of which {} not built for {target})", thousands(nb));
        } else {
            let _ = write!(s, " (+{} not built for {target})", thousands(nb));
        }
    }
    s
}

/// "capabilities: N of M changed packages analysed ..."
fn coverage_line(report: &Report) -> Option<String> {
    let c = &report.coverage;
    if !c.enabled {
        return Some("capabilities: not analysed (--no-capabilities)".into());
    }
    let mut s = format!(
        "capabilities: {} of {} analysed for {}",
        c.analysed,
        plural(c.in_scope as u64, "changed package", "changed packages"),
        escape::line(&report.targets.join(", "))
    );
    if !c.unknown.is_empty() {
        let _ = write!(s, "; {} unknown", thousands(c.unknown.len() as u64));
    }
    Some(s)
}

/// Render the report for a terminal.
pub fn render_human(report: &Report, opts: &HumanOptions) -> String {
    let mut out = String::new();
    let what = if report.from_files {
        format!("{} -> {}", escape::line(&report.base), escape::line(&report.head))
    } else if report.lockfiles.is_empty() {
        format!("{}..{} (no lockfile changed)", escape::line(&report.base), escape::line(&report.head))
    } else {
        format!("{}..{} ({})", escape::line(&report.base), escape::line(&report.head), escape::line(&report.lockfiles.join(", ")))
    };
    let _ = writeln!(out, "{} {what}", paint(BOLD, "deps-diff"));
    let _ = writeln!(out, "{}", paint(BOLD, &headline(report)));
    if report.packages.is_empty() {
        let _ = writeln!(out, "no package changes");
        return out;
    }
    if let Some(top) = &report.top_risk {
        let _ = writeln!(out, "{}", paint(RED, &escape::line(top)));
    }
    if let Some(c) = coverage_line(report) {
        let _ = writeln!(out, "{c}");
    }
    if let Some(l) = super::publication::summary_line(report) {
        let _ = writeln!(out, "{}", escape::line(&l));
    }
    for (l, why) in &report.graph_unknown {
        let _ = writeln!(out, "{}", paint(YELLOW, &format!("graph unknown for {}: {}", escape::line(l), escape::line(why))));
    }

    // The table, in review order; packages not built come in their own section.
    let rows: Vec<&PackageReport> = report.packages.iter().filter(|p| report.all_targets || p.built()).collect();
    if !rows.is_empty() {
        out.push('\n');
        let cells: Vec<[String; 5]> = rows
            .iter()
            .map(|p| {
                let name = if p.risk.group.is_some() { format!("↳ {}", title(p)) } else { title(p) };
                [p.risk.score.to_string(), name, change_cell(p), escape::line(&where_cell(p)), thousands(p.audit_lines())]
            })
            .collect();
        let w = |i: usize| cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0).max([4, 7, 6, 5, 5][i]);
        let (w0, w1, w2, w3, w4) = (w(0), w(1), w(2), w(3), w(4));
        let _ = writeln!(
            out,
            "{}",
            paint(DIM, &format!("{:>w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {:>w4$}  {}", "risk", "package", "change", "where", "audit", "what"))
        );
        for (p, c) in rows.iter().zip(&cells) {
            let _ = writeln!(
                out,
                "{}  {}  {}  {:<w3$}  {:>w4$}  {}",
                paint(tier_style(p.tier), &format!("{:>w0$}", c[0])),
                paint(BOLD, &format!("{:<w1$}", c[1])),
                paint(kind_style(p.change), &format!("{:<w2$}", c[2])),
                c[3],
                c[4],
                escape::line(&what_cell(p))
            );
        }
    }
    if opts.detail != Detail::Stat {
        capability_section(&mut out, report);
        unknown_section(&mut out, report);
        flag_section(&mut out, report);
        advisory_and_licence_section(&mut out, report);
        program_section(&mut out, report);
    }
    not_built_section(&mut out, report);
    package_section(&mut out, report, opts);
    verified_section(&mut out, report);
    out
}

fn capability_section(out: &mut String, report: &Report) {
    let changed: Vec<&PackageReport> = report
        .packages
        .iter()
        .filter(|p| p.built() && (!p.capabilities.added.is_empty() || !p.capabilities.removed.is_empty() || matches!(p.capabilities.status, CapStatus::Unknown(_))))
        .collect();
    if changed.is_empty() {
        if report.coverage.enabled && report.coverage.in_scope > 0 {
            let _ = writeln!(out, "\n{}", paint(BOLD, "Capability changes: none in the packages analysed"));
        }
        return;
    }
    let _ = writeln!(out, "\n{}", paint(BOLD, "Capability changes"));
    for p in changed {
        let mut head = format!("  {}", paint(BOLD, &title(p)));
        let pl = &p.placement;
        if !pl.direct.is_empty() {
            let _ = write!(head, " (direct dependency of {})", escape::line(&pl.direct.join(", ")));
        } else if pl.via.len() >= 2 {
            let _ = write!(head, " (via {})", escape::line(&pl.via.join(" -> ")));
        }
        if let CapStatus::Unknown(_) = &p.capabilities.status {
            continue;
        }
        let _ = writeln!(out, "{head}");
        if let Some(n) = &p.capabilities.note {
            let _ = writeln!(out, "    {}", paint(DIM, &escape::line(n)));
        }
        let mut hunks = 0;
        // Each part of a file once: a finding inside a hunk already shown shows no other.
        let mut shown_hunks: Vec<(&str, (usize, usize))> = Vec::new();
        for d in &p.capabilities.added {
            let scope = if d.scope == Scope::Build { " at build time" } else { "" };
            let verb = if p.old.is_some() { "gains" } else { "has" };
            let _ = writeln!(out, "    {} {}{scope}", paint(RED, &format!("+ {verb} {}", d.capability)), paint(DIM, &format!("({})", plural(d.findings.len() as u64, "finding", "findings"))));
            for e in d.findings.iter().take(FINDINGS_SHOWN) {
                let f = &e.finding;
                let _ = writeln!(
                    out,
                    "      {}:{}:{} {}",
                    escape::line(&f.file),
                    f.line,
                    f.column,
                    escape::line(&f.path)
                );
                if let Some(h) = &e.hunk {
                    let line = f.line as usize;
                    let seen = shown_hunks.iter().any(|(file, (a, b))| *file == f.file.as_str() && *a <= line && line <= *b);
                    if hunks < HUNKS_SHOWN && !seen {
                        hunks += 1;
                        shown_hunks.push((&f.file, h.lines));
                        for l in h.text.lines() {
                            let style = if l.starts_with('+') {
                                GREEN
                            } else if l.starts_with('-') {
                                RED
                            } else if l.starts_with("@@") {
                                CYAN
                            } else {
                                DIM
                            };
                            let _ = writeln!(out, "        {}", paint(style, &escape::source(l)));
                        }
                    }
                }
            }
            if d.findings.len() > FINDINGS_SHOWN {
                let _ = writeln!(out, "      {}", paint(DIM, &format!("and {} more (--format json lists them all)", thousands((d.findings.len() - FINDINGS_SHOWN) as u64))));
            }
        }
        for d in &p.capabilities.removed {
            let scope = if d.scope == Scope::Build { " at build time" } else { "" };
            let verb = if p.new.is_some() { "loses" } else { "took away" };
            let _ = writeln!(out, "    {}{scope}", paint(GREEN, &format!("- {verb} {}", d.capability)));
        }
    }
}

/// Packages whose capabilities are unknown, each reason once with the packages it applies to.
fn unknown_section(out: &mut String, report: &Report) {
    let mut by: Vec<(&str, Vec<String>)> = Vec::new();
    for p in report.packages.iter().filter(|p| p.built()) {
        if let CapStatus::Unknown(why) = &p.capabilities.status {
            match by.iter_mut().find(|(w, _)| *w == why.as_str()) {
                Some((_, v)) => v.push(title(p)),
                None => by.push((why, vec![title(p)])),
            }
        }
    }
    if by.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", paint(BOLD, "Capabilities unknown"));
    for (why, pkgs) in by {
        let _ = writeln!(out, "  {} {}", paint(YELLOW, &format!("{}:", escape::line(why))), pkgs.join(", "));
    }
}

fn flag_section(out: &mut String, report: &Report) {
    let flagged: Vec<&PackageReport> = report.packages.iter().filter(|p| p.built() && !p.flags.is_empty()).collect();
    if flagged.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", paint(BOLD, "Flags"));
    for p in flagged {
        let _ = writeln!(out, "  {}", paint(BOLD, &title(p)));
        for f in &p.flags {
            let _ = writeln!(out, "    {} {}", paint(YELLOW, &format!("[{}]", f.kind.code())), escape::line(&f.message));
            // Evidence the message already spells out is not repeated.
            let ev: Vec<&String> = f.evidence.iter().filter(|e| !f.message.contains(e.as_str())).collect();
            for e in ev.iter().take(FLAG_EVIDENCE_SHOWN) {
                let _ = writeln!(out, "      {}", paint(DIM, &escape::line(e)));
            }
            if ev.len() > FLAG_EVIDENCE_SHOWN {
                let _ = writeln!(out, "      {}", paint(DIM, &format!("and {} more", thousands((ev.len() - FLAG_EVIDENCE_SHOWN) as u64))));
            }
        }
    }
}

/// Advisories a change fixes, the database used, and the licences of new packages.
fn advisory_and_licence_section(out: &mut String, report: &Report) {
    let fixed: Vec<&PackageReport> = report.packages.iter().filter(|p| !p.advisories.fixed.is_empty()).collect();
    let _ = writeln!(out, "\n{} {}", paint(BOLD, "Advisories:"), escape::line(&super::advisory_db_line(report)));
    for p in fixed {
        let ids: Vec<&str> = p.advisories.fixed.iter().map(|a| a.id.as_str()).collect();
        let _ = writeln!(out, "  {} {}", paint(GREEN, &format!("{} fixes", title(p))), escape::line(&ids.join(", ")));
    }
    if let Some(l) = super::new_licences(report) {
        let _ = writeln!(out, "{} {}", paint(BOLD, "Licences of new packages:"), escape::line(&l));
    }
}

fn program_section(out: &mut String, report: &Report) {
    if report.programs.is_empty() && report.baselines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", paint(BOLD, "Programs"));
    let multi = report.lockfiles.len() > 1;
    for p in &report.programs {
        let name = if multi { format!("{} ({})", p.name, p.lockfile) } else { p.name.clone() };
        let mut parts = Vec::new();
        if p.status != "changed" {
            parts.push(p.status.to_string());
        }
        if !p.gained.is_empty() {
            parts.push(format!("gains {}", p.gained.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")));
        }
        if !p.lost.is_empty() {
            parts.push(format!("loses {}", p.lost.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")));
        }
        let _ = writeln!(out, "  {}: {} {}", paint(BOLD, &escape::line(&name)), escape::line(&parts.join("; ")), paint(DIM, &format!("({})", p.target)));
        let mut shown = std::collections::BTreeSet::new();
        for (k, v, f, via) in &p.evidence {
            if shown.insert(f.capability) {
                let _ = writeln!(
                    out,
                    "    {} from {} {} ({}:{} {}) via {}",
                    f.capability,
                    escape::line(k),
                    escape::line(v),
                    escape::line(&f.file),
                    f.line,
                    escape::line(&f.path),
                    escape::line(&via.join(" -> "))
                );
            }
        }
    }
    if report.programs.is_empty() && report.coverage.enabled && report.graph_known() {
        let _ = writeln!(out, "  no program gains or loses a capability");
    }
    for b in &report.baselines {
        let origin = escape::line(&b.origin);
        let line = match &b.state {
            BaselineState::Missing => paint(DIM, &format!("{origin}: none committed; nothing to compare with")),
            BaselineState::Malformed(e) => paint(YELLOW, &format!("{origin}: malformed, `velaris check` would stop: {}", escape::line(e))),
            BaselineState::Unknown(e) => paint(YELLOW, &format!("{origin}: not checked: {}", escape::line(e))),
            BaselineState::Checked { target, head, held_at_base } if head.holds => {
                paint(GREEN, &format!("{origin}: holds at head ({target}); `velaris check` passes{}", if *held_at_base == Some(false) { " (it failed at base)" } else { "" }))
            }
            BaselineState::Checked { target, head, held_at_base } => {
                let when = match held_at_base {
                    Some(true) => "this change widens it",
                    Some(false) => "already widened at base",
                    None => "widened at head",
                };
                let mut s = paint(RED, &format!("{origin}: {when} ({target}); `velaris check` fails:"));
                for w in &head.widened {
                    let caps: Vec<&str> = w.capabilities.iter().map(|c| c.as_str()).collect();
                    let new = if w.new_subject { " (no entry)" } else { "" };
                    let _ = write!(s, "\n    {} {}{new}: {}", w.subject.kind(), escape::line(w.subject.name()), caps.join(", "));
                }
                s
            }
        };
        let _ = writeln!(out, "  {line}");
    }
}

fn not_built_section(out: &mut String, report: &Report) {
    let nb: Vec<&PackageReport> = report.packages.iter().filter(|p| !p.built()).collect();
    if nb.is_empty() {
        return;
    }
    let counted = if report.all_targets { "counted in the audit cost (--all-targets)" } else { "not in the audit cost; --all-targets counts them" };
    let _ = writeln!(
        out,
        "\n{} {}",
        paint(BOLD, &format!("Not built for {}", escape::line(&report.targets.join(", ")))),
        paint(DIM, &format!("({counted})"))
    );
    for p in nb {
        let why = p
            .placement
            .not_built
            .as_ref()
            .map(|(r, code, from)| super::not_built_text(r, code, from.as_deref()))
            .unwrap_or_else(|| "not in the graph".into());
        let flags: Vec<&str> = p.flags.iter().map(|f| f.kind.code()).collect();
        let _ = writeln!(
            out,
            "  {}  {}  {}  {}{}",
            paint(BOLD, &title(p)),
            p.change.as_str(),
            escape::line(&why),
            plural(p.audit_lines(), "line", "lines"),
            if flags.is_empty() { String::new() } else { format!("  [{}]", flags.join(", ")) }
        );
    }
}

fn package_section(out: &mut String, report: &Report, opts: &HumanOptions) {
    let _ = writeln!(out, "\n{}", paint(BOLD, "Packages"));
    for p in &report.packages {
        let source = match (&p.old, &p.new) {
            (Some(o), Some(n)) if o.package.source_identity() != n.package.source_identity() || p.change == ChangeKind::SourceChanged => {
                format!("{} -> {}", escape::line(&o.package.source_label()), escape::line(&n.package.source_label()))
            }
            (_, Some(s)) | (Some(s), None) => escape::line(&s.package.source_label()),
            (None, None) => String::new(),
        };
        let _ = writeln!(out, "  {}  {}  {}", paint(BOLD, &title(p)), paint(DIM, &source), counts(p));
        let indent = "    ";
        for s in [&p.old, &p.new].into_iter().flatten() {
            if s.is_local() {
                let _ = writeln!(out, "{indent}{} {}: {}", escape::line(&p.name), s.package.version, paint(DIM, "local package (its source is in the repository)"));
            } else if !s.sha256_verified() {
                let _ = writeln!(out, "{indent}{} {}: {}", escape::line(&p.name), s.package.version, verification(s));
            }
        }
        if let Some(v) = vcs_line(p) {
            let _ = writeln!(out, "{indent}{v}");
        }
        if let Some(l) = super::publication::line(p, true) {
            let style = if super::publication::flagged(p) { RED } else { DIM };
            let _ = writeln!(out, "{indent}{}", paint(style, &escape::line(&l)));
        }
        if report.lockfiles.len() > 1 {
            let _ = writeln!(out, "{indent}{}", paint(DIM, &format!("in {}", escape::line(&p.lockfiles.join(", ")))));
        }
        if !matches!(opts.detail, Detail::Files | Detail::Diff) {
            continue;
        }
        let Some(d) = &p.diff else { continue };
        for f in &d.files {
            let mark = match f.status {
                FileStatus::Added => paint(GREEN, "A"),
                FileStatus::Removed => paint(RED, "D"),
                FileStatus::Modified => paint(YELLOW, "M"),
            };
            let mut note = String::new();
            if f.binary {
                note.push_str(" (binary)");
            }
            if f.packaging {
                note.push_str(" (packaging, not counted)");
            }
            if f.too_large.is_some() {
                note.push_str(" (too large to diff: every line counted)");
            }
            let _ = writeln!(
                out,
                "{indent}  {mark} {:>7} {:>7}  {}{}",
                paint(GREEN, &format!("+{}", thousands(f.lines_added))),
                paint(RED, &format!("-{}", thousands(f.lines_removed))),
                escape::line(&f.path),
                paint(DIM, &note)
            );
        }
        if opts.detail == Detail::Diff {
            for f in &d.files {
                if let Some(t) = &f.too_large {
                    out.push('\n');
                    let _ = writeln!(out, "{}", paint(CYAN, &format!("── {}: {}", title(p), escape::line(&f.path))));
                    let _ = writeln!(out, "too large to diff: {}", escape::line(&t.reason));
                    for (side, size, sha) in [("old", f.old_size, &t.old_sha256), ("new", f.new_size, &t.new_sha256)] {
                        if let (Some(size), Some(sha)) = (size, sha) {
                            let _ = writeln!(out, "  {side}: {} bytes, sha256 {sha}", thousands(size));
                        }
                    }
                }
                if let Some(patch) = &f.patch {
                    out.push('\n');
                    let _ = writeln!(out, "{}", paint(CYAN, &format!("── {}: {}", title(p), escape::line(&f.path))));
                    for l in patch.lines() {
                        let style = if l.starts_with("+++") || l.starts_with("---") {
                            BOLD
                        } else if l.starts_with('+') {
                            GREEN
                        } else if l.starts_with('-') {
                            RED
                        } else if l.starts_with("@@") {
                            CYAN
                        } else {
                            Style::new()
                        };
                        let _ = writeln!(out, "{}", paint(style, &escape::source(l)));
                    }
                }
            }
        }
    }
}

fn verified_section(out: &mut String, report: &Report) {
    let v = &report.verified;
    let mut parts = Vec::new();
    if v.sha256_total > 0 {
        parts.push(format!(
            "sha256 of {} of {} .crate files matched Cargo.lock before they were read",
            v.sha256, v.sha256_total
        ));
    }
    if v.commits_total > 0 {
        parts.push(format!(
            "{} of {} git packages read at the commit Cargo.lock locks (verified by commit id)",
            v.commits, v.commits_total
        ));
    }
    if parts.is_empty() {
        parts.push("no package contents to verify".into());
    }
    let _ = writeln!(out, "\n{} {}", paint(BOLD, "Verified:"), parts.join("; "));
    for (pkg, why) in &v.unverifiable {
        let _ = writeln!(out, "  {} {}: {}", paint(YELLOW, "unverifiable"), escape::line(pkg), escape::line(why));
    }
}
