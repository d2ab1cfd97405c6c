//! The markdown rendering (what a pull-request comment shows), within a size budget (a GitHub
//! comment holds at most 65,536 characters).
//!
//! What must be seen comes first and is kept: the headline, the table of packages in risk
//! order, every flag, every capability change, the programs and the baseline, what was
//! verified. When that alone is too large, hunks go first, then the table's routine and
//! unbuilt rows are summarised. File lists fill what budget is left, riskiest package first;
//! then, with `--diff`, diffs of the riskiest packages, so that diffs are always dropped before
//! a file list is; diffs of licence and packaging files are never shown.

use std::fmt::Write;

use crate::text::escape::{markdown_code_block, markdown_inline as md};
use crate::text::thousands;
use crate::depsdiff::{BaselineState, CapStatus, PackageReport, Report, Side};
use crate::diff::FileStatus;
use crate::surface::Scope;

#[derive(Debug, Clone, Copy)]
pub struct MarkdownOptions {
    /// Include unified diffs.
    pub diffs: bool,
    /// Size budget in characters for the whole document.
    pub budget: usize,
}

impl Default for MarkdownOptions {
    fn default() -> Self {
        MarkdownOptions { diffs: false, budget: 20_000 }
    }
}

/// Findings listed per gained capability.
const FINDINGS_SHOWN: usize = 5;
/// Evidence items listed per flag.
const FLAG_EVIDENCE_SHOWN: usize = 3;

fn version_cell(p: &PackageReport) -> String {
    let v = |s: &Side| md(&s.package.version.to_string());
    match (&p.old, &p.new) {
        (Some(o), Some(n)) if o.package.version != n.package.version => format!("{} → {}", v(o), v(n)),
        (Some(s), _) | (None, Some(s)) => v(s),
        (None, None) => String::new(),
    }
}

fn verified_cell(p: &PackageReport) -> &'static str {
    let sides: Vec<&Side> = [&p.old, &p.new].into_iter().flatten().collect();
    if sides.iter().all(|s| s.is_local()) {
        "local"
    } else if sides.iter().all(|s| s.sha256_verified()) {
        "✅ sha256"
    } else if sides.iter().all(|s| s.verified()) {
        "✅ commit"
    } else {
        "⚠️ unverifiable"
    }
}

fn where_cell(p: &PackageReport) -> String {
    let pl = &p.placement;
    match pl.built {
        None if !pl.direct.is_empty() => format!("direct ({}), lockfile", md(&pl.direct.join(", "))),
        None if !p.brought_by.is_empty() => format!("↳ brought by {}, lockfile", md(&p.brought_by.join(", "))),
        None if pl.via.len() >= 2 => format!("via {}, lockfile", md(&pl.via[pl.via.len() - 2])),
        None => "graph unknown".into(),
        Some(false) => "not built".into(),
        Some(true) if !pl.direct.is_empty() => format!("direct ({})", md(&pl.direct.join(", "))),
        Some(true) if !p.brought_by.is_empty() => format!("↳ brought by {}", md(&p.brought_by.join(", "))),
        Some(true) if pl.via.len() >= 2 => format!("via {}", md(&pl.via[pl.via.len() - 2])),
        Some(true) => "built".into(),
    }
}

fn what_cell(p: &PackageReport) -> String {
    let mut parts: Vec<String> = Vec::new();
    for d in &p.capabilities.added {
        let c = if d.scope == Scope::Build && !d.capability.as_str().starts_with("build.") {
            format!("**+{}** (build)", d.capability)
        } else {
            format!("**+{}**", d.capability)
        };
        if !parts.contains(&c) {
            parts.push(c);
        }
    }
    for f in &p.flags {
        let c = format!("`{}`", f.kind.code());
        if !parts.contains(&c) {
            parts.push(c);
        }
    }
    if let CapStatus::Unknown(_) = p.capabilities.status {
        parts.push("capabilities unknown".into());
    }
    parts.join(" ")
}

fn row(p: &PackageReport) -> String {
    let semver = match p.semver {
        Some(b) if b.is_breaking() => format!(" **{}**", b.as_str()),
        Some(crate::lockfile::SemverBump::None) | None => String::new(),
        Some(b) => format!(" {}", b.as_str()),
    };
    format!(
        "| {} | **{}** | {} | {}{} | {} | {} | {} | {} | {} |\n",
        p.tier.code(),
        md(&p.name),
        version_cell(p),
        p.change.as_str(),
        semver,
        where_cell(p),
        thousands(p.audit_lines()),
        what_cell(p),
        verified_cell(p),
        p.risk.score
    )
}

fn table(report: &Report, collapse: bool) -> String {
    let mut s = String::from("| risk | package | version | change | where | audit | what | checked | score |\n|---|---|---|---|---|---:|---|---|---:|\n");
    let mut collapsed: Vec<&PackageReport> = Vec::new();
    for p in report.packages.iter().filter(|p| p.built() || report.all_targets) {
        if collapse && p.risk.group_score == 0 {
            collapsed.push(p);
        } else {
            s.push_str(&row(p));
        }
    }
    if !collapsed.is_empty() {
        let names: Vec<String> = collapsed.iter().map(|p| md(&p.title())).collect();
        let lines: u64 = collapsed.iter().map(|p| p.audit_lines()).sum();
        let _ = writeln!(
            s,
            "| routine | _{} more: {}_ | | | | {} | | | 0 |",
            collapsed.len(),
            names.join(", "),
            thousands(lines)
        );
    }
    s
}

fn capabilities(report: &Report, hunks: bool, findings_shown: usize) -> String {
    let changed: Vec<&PackageReport> = report
        .packages
        .iter()
        .filter(|p| p.built() && (!p.capabilities.added.is_empty() || !p.capabilities.removed.is_empty() || matches!(p.capabilities.status, CapStatus::Unknown(_))))
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut s = String::from("#### Capability changes\n\n");
    // Unknown packages: each reason once, with the packages it applies to.
    let mut by: Vec<(&str, Vec<String>)> = Vec::new();
    for p in &changed {
        if let CapStatus::Unknown(why) = &p.capabilities.status {
            match by.iter_mut().find(|(w, _)| *w == why.as_str()) {
                Some((_, v)) => v.push(format!("**{}** {}", md(&p.name), version_cell(p))),
                None => by.push((why, vec![format!("**{}** {}", md(&p.name), version_cell(p))])),
            }
        }
    }
    for (why, pkgs) in &by {
        let _ = writeln!(s, "- ⚠️ unknown: {}: {}", md(why), pkgs.join(", "));
    }
    if !by.is_empty() {
        s.push('\n');
    }
    for p in changed {
        let pl = &p.placement;
        let place = if !pl.direct.is_empty() {
            format!(" (direct dependency of {})", md(&pl.direct.join(", ")))
        } else if pl.via.len() >= 2 {
            format!(" (via {})", md(&pl.via.join(" → ")))
        } else {
            String::new()
        };
        if let CapStatus::Unknown(_) = &p.capabilities.status {
            continue;
        }
        let _ = writeln!(s, "**{}** {}{place}\n", md(&p.name), version_cell(p));
        if let Some(n) = &p.capabilities.note {
            let _ = writeln!(s, "_{}_\n", md(n));
        }
        let mut shown: Vec<(&str, (usize, usize))> = Vec::new();
        for d in &p.capabilities.added {
            let verb = if p.old.is_some() { "gains" } else { "has" };
            let scope = if d.scope == Scope::Build { " at build time" } else { "" };
            let _ = writeln!(s, "- 🔴 {verb} `{}`{scope}", d.capability);
            for e in d.findings.iter().take(findings_shown) {
                let f = &e.finding;
                let _ = writeln!(s, "  - `{}:{}:{}` {}", md(&f.file).replace('`', "'"), f.line, f.column, md(&f.path));
                if hunks {
                    let line = f.line as usize;
                    let seen = shown.iter().any(|(file, (a, b))| *file == f.file.as_str() && *a <= line && line <= *b);
                    if let Some(h) = e.hunk.as_ref().filter(|_| !seen) {
                        shown.push((&f.file, h.lines));
                        let block = markdown_code_block("diff", &h.text);
                        for l in block.lines() {
                            let _ = writeln!(s, "    {l}");
                        }
                    }
                }
            }
            if d.findings.len() > findings_shown {
                let _ = writeln!(s, "  - and {} more", thousands((d.findings.len() - findings_shown) as u64));
            }
        }
        for d in &p.capabilities.removed {
            let verb = if p.new.is_some() { "loses" } else { "took away" };
            let scope = if d.scope == Scope::Build { " at build time" } else { "" };
            let _ = writeln!(s, "- 🟢 {verb} `{}`{scope}", d.capability);
        }
        s.push('\n');
    }
    s
}

fn flags(report: &Report, evidence_shown: usize) -> String {
    let flagged: Vec<&PackageReport> = report.packages.iter().filter(|p| !p.flags.is_empty() && (p.built() || report.all_targets)).collect();
    if flagged.is_empty() && report.packages.iter().all(|p| p.advisories.fixed.is_empty()) {
        return String::new();
    }
    let mut s = String::from("#### Flags\n\n");
    for p in flagged {
        for f in &p.flags {
            // Evidence the message already spells out is not repeated.
            let mut ev: Vec<String> = f.evidence.iter().filter(|e| !f.message.contains(e.as_str())).map(|e| md(e)).collect();
            if ev.len() > evidence_shown {
                let more = ev.len() - evidence_shown;
                ev.truncate(evidence_shown);
                ev.push(format!("and {more} more"));
            }
            let _ = writeln!(
                s,
                "- **{}** {}: `{}` {}{}",
                md(&p.name),
                version_cell(p),
                f.kind.code(),
                md(&f.message),
                if ev.is_empty() { String::new() } else { format!(" ({})", ev.join("; ")) }
            );
        }
    }
    for p in report.packages.iter().filter(|p| !p.advisories.fixed.is_empty()) {
        let ids: Vec<String> = p.advisories.fixed.iter().map(|a| format!("`{}`", a.id.replace('`', "'"))).collect();
        let _ = writeln!(s, "- **{}** {}: fixes {}", md(&p.name), version_cell(p), ids.join(", "));
    }
    s.push('\n');
    s
}

/// When and by whom each new version was published; packages whose publisher was not checked
/// are named under each reason. `collapse`: only the packages with a publication flag get a
/// line.
fn publication(report: &Report, collapse: bool) -> String {
    use super::publication as pb;
    let Some(summary) = pb::summary_line(report) else { return String::new() };
    let mut s = format!("#### Publication

{}.

", md(&capitalized(&summary)));
    let (mut quiet, mut unknown) = (0usize, 0usize);
    for p in &report.packages {
        let Some(line) = pb::line(p, false) else { continue };
        if pb::only_unknown_time(p) {
            unknown += 1;
            continue;
        }
        if collapse && !pb::flagged(p) {
            quiet += 1;
            continue;
        }
        let mark = if pb::flagged(p) { "⚠️ " } else { "" };
        let _ = writeln!(s, "- {mark}**{}** {}: {}", md(&p.name), version_cell(p), md(&line));
    }
    if quiet > 0 {
        let _ = writeln!(s, "- and {} without a publication flag", crate::text::plural(quiet as u64, "package", "packages"));
    }
    if unknown > 0 {
        let _ = writeln!(s, "- Release time unknown for {} (the index records none)", crate::text::plural(unknown as u64, "package", "packages"));
    }
    for (why, who) in pb::not_checked(report) {
        let names: Vec<String> = who.iter().map(|p| format!("**{}** {}", md(&p.name), version_cell(p))).collect();
        let _ = writeln!(s, "- Publisher not checked for {}: {}", names.join(", "), md(&why));
    }
    s.push('\n');
    s
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn programs(report: &Report) -> String {
    if report.programs.is_empty() && report.baselines.is_empty() {
        return String::new();
    }
    let mut s = String::from("#### Programs\n\n");
    for p in &report.programs {
        let mut parts = Vec::new();
        if p.status != "changed" {
            parts.push(p.status.to_string());
        }
        if !p.gained.is_empty() {
            parts.push(format!("gains {}", p.gained.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")));
        }
        if !p.lost.is_empty() {
            parts.push(format!("loses {}", p.lost.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")));
        }
        let mut from = std::collections::BTreeSet::new();
        for (k, _, f, _) in &p.evidence {
            from.insert(format!("`{}` from {}", f.capability, md(k)));
        }
        let from = if from.is_empty() { String::new() } else { format!(" ({})", from.into_iter().collect::<Vec<_>>().join(", ")) };
        let _ = writeln!(s, "- **{}**: {}{from}", md(&p.name), parts.join("; "));
    }
    for b in &report.baselines {
        let origin = md(&b.origin);
        let line = match &b.state {
            BaselineState::Missing => format!("`{}`: none committed", b.origin.replace('`', "'")),
            BaselineState::Malformed(e) => format!("⚠️ {origin} is malformed: {}", md(e)),
            BaselineState::Unknown(e) => format!("⚠️ {origin} not checked: {}", md(e)),
            BaselineState::Checked { target, head, .. } if head.holds => format!("✅ {origin} holds at head ({}): `velaris check` passes", md(target)),
            BaselineState::Checked { target, head, held_at_base } => {
                let list: Vec<String> = head
                    .widened
                    .iter()
                    .map(|w| format!("\n  - {} **{}**: {}", w.subject.kind(), md(w.subject.name()), w.capabilities.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")))
                    .collect();
                let when = if *held_at_base == Some(true) { "this change widens" } else { "head widens" };
                format!("❌ {when} {origin} ({}): `velaris check` fails:{}", md(target), list.concat())
            }
        };
        let _ = writeln!(s, "- {line}");
    }
    s.push('\n');
    s
}

fn not_built(report: &Report, collapse: bool) -> String {
    let nb: Vec<&PackageReport> = report.packages.iter().filter(|p| !p.built()).collect();
    if nb.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "<details><summary>{} not built for {} ({} lines, {})</summary>\n\n",
        nb.len(),
        md(&report.targets.join(", ")),
        thousands(report.audit_lines_not_built()),
        if report.all_targets { "counted with --all-targets" } else { "not in the audit cost" }
    );
    if collapse {
        let names: Vec<String> = nb.iter().map(|p| md(&p.title())).collect();
        let _ = writeln!(s, "{}\n", names.join(", "));
    } else {
        s.push_str("| package | version | change | why | audit |\n|---|---|---|---|---:|\n");
        for p in nb {
            let why = p
                .placement
                .not_built
                .as_ref()
                .map(|(r, code, from)| md(&super::not_built_text(r, code, from.as_deref())))
                .unwrap_or_else(|| "not in the graph".into());
            let _ = writeln!(s, "| {} | {} | {} | {} | {} |", md(&p.name), version_cell(p), p.change.as_str(), why, thousands(p.audit_lines()));
        }
        s.push('\n');
    }
    s.push_str("</details>\n\n");
    s
}

fn verified(report: &Report) -> String {
    let v = &report.verified;
    let mut parts = Vec::new();
    if v.sha256_total > 0 {
        parts.push(format!("sha256 of {} of {} `.crate` files matched `Cargo.lock` before they were read", thousands(v.sha256 as u64), thousands(v.sha256_total as u64)));
    }
    if v.commits_total > 0 {
        parts.push(format!("{} of {} git packages read at their locked commit", thousands(v.commits as u64), thousands(v.commits_total as u64)));
    }
    let mut s = String::new();
    if !parts.is_empty() {
        let _ = writeln!(s, "**Verified:** {}.", parts.join("; "));
    }
    for (pkg, why) in &v.unverifiable {
        let _ = writeln!(s, "- ⚠️ unverifiable: {}: {}", md(pkg), md(why));
    }
    let _ = writeln!(s, "\n**Advisories:** {}.", md(&super::advisory_db_line(report)));
    if let Some(l) = super::new_licences(report) {
        let _ = writeln!(s, "\n**Licences of new packages:** {}.", md(&l));
    }
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// Files of a new package listed by name.
const NEW_FILES_SHOWN: usize = 6;

/// A crate name or version in a URL path: only the characters they may hold pass.
fn url_part(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+')).collect()
}

/// Licence and packaging files: listed, never worth a diff in a comment.
fn not_worth_a_diff(path: &str, packaging: bool) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path).to_ascii_uppercase();
    packaging || ["LICENSE", "LICENCE", "COPYING", "NOTICE", "COPYRIGHT", "UNLICENSE", "AUTHORS"].iter().any(|p| file.starts_with(p))
}

fn details(p: &PackageReport, diffs: bool) -> Option<String> {
    let d = p.diff.as_ref()?;
    // A removed package needs no review; a new one is all new: no diff, its largest files and
    // a link to its source.
    let n = p.new.as_ref()?;
    if d.files.is_empty() {
        return None;
    }
    if p.old.is_none() {
        let mut files: Vec<&crate::diff::FileDiff> = d.files.iter().filter(|f| !f.packaging).collect();
        files.sort_by(|a, b| b.lines_added.cmp(&a.lines_added).then(a.path.cmp(&b.path)));
        let shown: Vec<String> = files.iter().take(NEW_FILES_SHOWN).map(|f| format!("{} ({})", md(&f.path), thousands(f.lines_added))).collect();
        let more = files.len().saturating_sub(NEW_FILES_SHOWN);
        let link = if n.package.source_kind() == crate::lockfile::SourceKind::CratesIo {
            format!(" [source](https://docs.rs/crate/{}/{}/source/)", url_part(&p.name), url_part(&n.package.version.to_string()))
        } else {
            String::new()
        };
        return Some(format!(
            "<details><summary>{} {}: new, {} files, {} lines</summary>\n\nLargest files: {}{}.{link}\n\n</details>\n\n",
            md(&p.name),
            version_cell(p),
            thousands(d.files.len() as u64),
            thousands(d.audit_lines),
            shown.join(", "),
            if more > 0 { format!(", and {more} more") } else { String::new() },
        ));
    }
    let mut section = format!("<details><summary>{} {}</summary>\n\n", md(&p.name), version_cell(p));
    if d.vcs_changed || d.new_vcs.as_ref().is_some_and(|v| v.dirty) {
        let sha = |v: &Option<crate::diff::VcsInfo>| {
            v.as_ref()
                .map(|v| {
                    let s = v.sha1.clone().unwrap_or_else(|| "unknown".into());
                    format!("{}{}", md(&s.chars().take(12).collect::<String>()), if v.dirty { " (dirty)" } else { "" })
                })
                .unwrap_or_else(|| "none".into())
        };
        let _ = writeln!(
            section,
            "Published from commit {} → {} (the commit `.cargo_vcs_info.json` says the package was made from)\n",
            sha(&d.old_vcs),
            sha(&d.new_vcs)
        );
    }
    section.push_str("| | file | + | − |\n|---|---|---:|---:|\n");
    for f in &d.files {
        let mark = match f.status {
            FileStatus::Added => "A",
            FileStatus::Removed => "D",
            FileStatus::Modified => "M",
        };
        let note = match (f.binary, f.packaging, f.too_large.is_some()) {
            (true, _, _) => " (binary)",
            (_, true, _) => " (packaging)",
            (_, _, true) => " (too large to diff)",
            _ => "",
        };
        let _ = writeln!(section, "| {mark} | {}{note} | {} | {} |", md(&f.path), thousands(f.lines_added), thousands(f.lines_removed));
    }
    section.push('\n');
    if diffs {
        for f in &d.files {
            if not_worth_a_diff(&f.path, f.packaging) {
                continue;
            }
            if let Some(patch) = &f.patch {
                section.push_str(&markdown_code_block("diff", patch));
            }
            if let Some(t) = &f.too_large {
                let side = |size: Option<u64>, sha: &Option<String>| match (size, sha) {
                    (Some(n), Some(s)) => format!("{n} bytes, sha256 `{s}`"),
                    _ => "absent".to_string(),
                };
                let _ = writeln!(
                    section,
                    "{} is too large to diff ({}): old {}, new {}.\n",
                    md(&f.path),
                    md(&t.reason),
                    side(f.old_size, &t.old_sha256),
                    side(f.new_size, &t.new_sha256)
                );
            }
        }
    }
    section.push_str("</details>\n\n");
    Some(section)
}

/// Render the report as markdown.
pub fn render_markdown(report: &Report, opts: &MarkdownOptions) -> String {
    // A commit id is shortened as git shortens it for people; names and paths stay whole.
    let label = |s: &str| {
        let s = if crate::git::is_object_id(s) { &s[..12] } else { s };
        crate::text::escape::line(s).replace('`', "'")
    };
    let mut head = format!(
        "### Dependency review `{}{}{}`\n\n",
        label(&report.base),
        if report.from_files { " → " } else { ".." },
        label(&report.head),
    );
    let _ = writeln!(head, "**{}**\n", md(&super::human::headline(report)));
    if report.packages.is_empty() {
        return head;
    }
    if let Some(top) = &report.top_risk {
        let _ = writeln!(head, "🔺 {}\n", md(top));
    }
    if report.coverage.enabled {
        let c = &report.coverage;
        let _ = writeln!(
            head,
            "Capabilities: {} of {} changed packages analysed for {}{}.\n",
            c.analysed,
            c.in_scope,
            md(&report.targets.join(", ")),
            if c.unknown.is_empty() { String::new() } else { format!("; {} unknown", thousands(c.unknown.len() as u64)) }
        );
    }
    for (l, why) in &report.graph_unknown {
        let _ = writeln!(head, "⚠️ Graph unknown for {}: {}\n", md(l), md(why));
    }

    // What must be seen, least degraded first.
    let build = |hunks: bool, shown: usize, collapse: bool| {
        let mut s = head.clone();
        s.push_str(&table(report, collapse));
        s.push('\n');
        s.push_str(&capabilities(report, hunks, if shown == 1 { 1 } else { FINDINGS_SHOWN }));
        s.push_str(&flags(report, if shown == 1 { 1 } else { FLAG_EVIDENCE_SHOWN }));
        s.push_str(&publication(report, collapse));
        s.push_str(&programs(report));
        s.push_str(&not_built(report, collapse));
        s.push_str(&verified(report));
        s
    };
    let mut out = build(true, 0, false);
    let mut note = None;
    if out.len() > opts.budget {
        out = build(false, 0, false);
        note = Some("hunks");
    }
    if out.len() > opts.budget {
        out = build(false, 1, false);
        note = Some("hunks, findings and evidence past the first of each");
    }
    if out.len() > opts.budget {
        out = build(false, 1, true);
        note = Some("hunks, findings and evidence past the first of each, rows of packages without risk");
    }
    if let Some(what) = note {
        let _ = writeln!(out, "_Left out to stay within {} characters: {what}; `velaris deps-diff` shows them._\n", thousands(opts.budget as u64));
    }
    // File lists with what is left, riskiest first; with `--diff`, each listed package's diff
    // with its list while the budget lasts (new packages never get one). A package whose diff
    // does not fit keeps its list.
    let mut used = out.len();
    let mut omitted = 0usize;
    let mut diffs_left_out = 0usize;
    let mut sections = String::new();
    for p in &report.packages {
        let Some(list) = details(p, false) else { continue };
        let full = if opts.diffs { details(p, true).filter(|f| f.len() > list.len()) } else { None };
        match full {
            Some(f) if used + f.len() + 400 <= opts.budget => {
                used += f.len();
                sections.push_str(&f);
                continue;
            }
            Some(_) => diffs_left_out += 1,
            None => {}
        }
        if used + list.len() + 400 > opts.budget {
            omitted += 1;
            continue;
        }
        used += list.len();
        sections.push_str(&list);
    }
    out.push_str(&sections);
    if diffs_left_out > 0 {
        let _ = writeln!(
            out,
            "_Diffs of {} left out to stay within {} characters; `velaris deps-diff --diff` in a terminal shows every diff._\n",
            crate::text::plural(diffs_left_out as u64, "package", "packages"),
            thousands(opts.budget as u64)
        );
    }
    if omitted > 0 {
        let _ = writeln!(
            out,
            "_{omitted} package file lists left out to stay within {} characters; run `velaris deps-diff --files` locally for all of them._",
            thousands(opts.budget as u64)
        );
    }
    out
}
