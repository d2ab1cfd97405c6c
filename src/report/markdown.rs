//! The markdown rendering: a summary table, then one collapsible section per package with its
//! changed files and, when asked, its diffs, within a size budget (a GitHub comment holds at
//! most 65,536 characters).

use std::fmt::Write;

use super::escape::{markdown_code_block, markdown_inline as md};
use super::thousands;
use crate::depsdiff::{PackageReport, Report, Side};
use crate::diff::FileStatus;

#[derive(Debug, Clone, Copy)]
pub struct MarkdownOptions {
    /// Include unified diffs.
    pub diffs: bool,
    /// Size budget in characters for the whole document.
    pub budget: usize,
}

impl Default for MarkdownOptions {
    fn default() -> Self {
        MarkdownOptions { diffs: false, budget: 60_000 }
    }
}

fn version_cell(p: &PackageReport) -> String {
    let v = |s: &Side| md(&s.package.version.to_string());
    match (&p.old, &p.new) {
        (Some(o), Some(n)) => format!("{} → {}", v(o), v(n)),
        (Some(s), None) | (None, Some(s)) => v(s),
        (None, None) => String::new(),
    }
}

fn verified_cell(p: &PackageReport) -> &'static str {
    let sides: Vec<&Side> = [&p.old, &p.new].into_iter().flatten().collect();
    if sides.iter().all(|s| s.verified) { "✅ sha256" } else { "⚠️ unverifiable" }
}

/// Render the report as markdown.
pub fn render_markdown(report: &Report, opts: &MarkdownOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Dependency changes `{}{}{}`\n\n{} changed in {}; audit cost **{}** lines.\n",
        super::escape::line(&report.base).replace('`', "'"),
        if report.from_files { " → " } else { ".." },
        super::escape::line(&report.head).replace('`', "'"),
        super::plural(report.packages.len() as u64, "package", "packages"),
        if report.lockfiles.is_empty() { "no lockfile".to_string() } else { md(&report.lockfiles.join(", ")) },
        thousands(report.audit_lines())
    );
    if report.packages.is_empty() {
        return out;
    }
    out.push_str("| package | change | version | semver | files | lines | audit | checked |\n");
    out.push_str("|---|---|---|---|---:|---:|---:|---|\n");
    let mut rows_left_out = 0usize;
    for p in &report.packages {
        if out.len() + 400 > opts.budget {
            rows_left_out += 1;
            continue;
        }
        let (files, lines, audit) = match &p.diff {
            Some(d) => (
                (d.files_added + d.files_removed + d.files_modified).to_string(),
                format!("+{} −{}", thousands(d.lines_added), thousands(d.lines_removed)),
                thousands(d.audit_lines),
            ),
            None => ("–".into(), "–".into(), "–".into()),
        };
        let semver = match p.semver {
            Some(b) if b.is_breaking() => format!("**{}**", b.as_str()),
            Some(b) => b.as_str().to_string(),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&p.name),
            p.change.as_str(),
            version_cell(p),
            semver,
            files,
            lines,
            audit,
            verified_cell(p)
        );
    }
    if rows_left_out > 0 {
        let _ = writeln!(out, "| _{rows_left_out} more packages left out to stay within the size budget_ | | | | | | | |");
    }
    out.push('\n');
    let mut omitted = 0usize;
    for p in &report.packages {
        let Some(d) = &p.diff else { continue };
        if d.files.is_empty() {
            continue;
        }
        let mut section = format!("<details><summary>{} {}</summary>\n\n", md(&p.name), version_cell(p));
        for s in [&p.old, &p.new].into_iter().flatten() {
            if let Some(why) = s.unverifiable {
                let _ = writeln!(section, "⚠️ {} {}: {}\n", md(&p.name), md(&s.package.version.to_string()), md(why));
            }
        }
        if d.vcs_changed || d.new_vcs.as_ref().is_some_and(|v| v.dirty) {
            let sha = |v: &Option<crate::diff::VcsInfo>| {
                v.as_ref()
                    .map(|v| {
                        let s = v.sha1.clone().unwrap_or_else(|| "unknown".into());
                        format!("{}{}", md(&s.chars().take(12).collect::<String>()), if v.dirty { " (dirty)" } else { "" })
                    })
                    .unwrap_or_else(|| "none".into())
            };
            let _ = writeln!(section, "Published from commit {} → {}\n", sha(&d.old_vcs), sha(&d.new_vcs));
        }
        section.push_str("| | file | + | − |\n|---|---|---:|---:|\n");
        for f in &d.files {
            let mark = match f.status {
                FileStatus::Added => "A",
                FileStatus::Removed => "D",
                FileStatus::Modified => "M",
            };
            let note = match (f.binary, f.packaging) {
                (true, _) => " (binary)",
                (_, true) => " (packaging)",
                _ => "",
            };
            let _ = writeln!(section, "| {mark} | {}{note} | {} | {} |", md(&f.path), f.lines_added, f.lines_removed);
        }
        section.push('\n');
        if opts.diffs {
            for f in &d.files {
                if let Some(patch) = &f.patch {
                    section.push_str(&markdown_code_block("diff", patch));
                }
            }
        }
        section.push_str("</details>\n\n");
        if out.len() + section.len() + 200 > opts.budget {
            omitted += 1;
            continue;
        }
        out.push_str(&section);
    }
    if omitted > 0 {
        let _ = writeln!(
            out,
            "_{omitted} package sections left out to stay within {} characters; run `velaris deps-diff` locally for all of them._",
            thousands(opts.budget as u64)
        );
    }
    out
}
