//! The terminal rendering. Colour is written as ANSI styles; whether they reach the terminal is
//! decided by the caller's stream (anstream strips them for `--color never`, `NO_COLOR` or a
//! pipe).

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use super::escape;
use super::{plural, thousands};
use crate::depsdiff::{PackageReport, Report, Side};
use crate::diff::FileStatus;
use crate::lockfile::ChangeKind;

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// One line per package.
    Stat,
    /// Packages and their changed files with line counts.
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

fn verification(s: &Side) -> String {
    match (&s.origin, s.unverifiable) {
        (Some(o), _) => paint(DIM, &format!("sha256 ok ({})", o.kind())),
        (None, Some(why)) => paint(YELLOW, &format!("unverifiable: {why}")),
        (None, None) => paint(YELLOW, "not fetched"),
    }
}

fn headline(p: &PackageReport) -> String {
    let name = escape::line(&p.name);
    let v = |s: &Side| s.package.version.to_string();
    let mut line = format!("{} ", paint(kind_style(p.change), &format!("{:<14}", p.change.as_str())));
    match (&p.old, &p.new) {
        (Some(o), Some(n)) => {
            let _ = write!(line, "{} {} -> {}", paint(BOLD, &name), v(o), v(n));
            if let Some(b) = p.semver {
                let tag = if b.is_breaking() { paint(RED, b.as_str()) } else { b.as_str().to_string() };
                let _ = write!(line, " ({tag})");
            }
            if o.package.source_identity() != n.package.source_identity() || p.change == ChangeKind::SourceChanged {
                let _ = write!(
                    line,
                    "  {} -> {}",
                    escape::line(&o.package.source_label()),
                    escape::line(&n.package.source_label())
                );
            } else {
                let _ = write!(line, "  {}", escape::line(&n.package.source_label()));
            }
        }
        (Some(s), None) | (None, Some(s)) => {
            let _ = write!(line, "{} {}  {}", paint(BOLD, &name), v(s), escape::line(&s.package.source_label()));
        }
        (None, None) => {}
    }
    line
}

/// "name old -> new" without colour, for diff separators.
fn headline_plain(p: &PackageReport) -> String {
    let v = |s: &Option<Side>| s.as_ref().map(|s| s.package.version.to_string());
    let name = escape::line(&p.name);
    match (v(&p.old), v(&p.new)) {
        (Some(o), Some(n)) => format!("{name} {o} -> {n}"),
        (Some(x), None) | (None, Some(x)) => format!("{name} {x}"),
        (None, None) => name,
    }
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
            if d.timed_out {
                s.push_str(", diff approximated (time limit)");
            }
            s
        }
    }
}

fn vcs_line(p: &PackageReport) -> Option<String> {
    let d = p.diff.as_ref()?;
    let short = |v: &Option<crate::diff::VcsInfo>| match v {
        Some(v) => {
            let sha = v.sha1.as_deref().map_or("unknown commit".to_string(), |s| escape::line(&s.chars().take(12).collect::<String>()));
            if v.dirty { format!("{sha} (dirty)") } else { sha }
        }
        None => "no VCS info".to_string(),
    };
    let dirty = d.new_vcs.as_ref().is_some_and(|v| v.dirty);
    if d.vcs_changed || dirty {
        let style = if dirty { RED } else { DIM };
        return Some(paint(style, &format!("published from {} -> {}", short(&d.old_vcs), short(&d.new_vcs))));
    }
    None
}

/// Render the report for a terminal.
pub fn render_human(report: &Report, opts: &HumanOptions) -> String {
    let mut out = String::new();
    let total = report.packages.len() as u64;
    let what = if report.from_files {
        format!("{} -> {}", escape::line(&report.base), escape::line(&report.head))
    } else if report.lockfiles.is_empty() {
        format!("{}..{} (no lockfile changed)", escape::line(&report.base), escape::line(&report.head))
    } else {
        format!(
            "{}..{} ({})",
            escape::line(&report.base),
            escape::line(&report.head),
            escape::line(&report.lockfiles.join(", "))
        )
    };
    let mut kinds: Vec<String> = Vec::new();
    for k in [
        ChangeKind::Added,
        ChangeKind::Removed,
        ChangeKind::Upgraded,
        ChangeKind::Downgraded,
        ChangeKind::SourceChanged,
        ChangeKind::ChecksumChanged,
    ] {
        let n = report.packages.iter().filter(|p| p.change == k).count();
        if n > 0 {
            kinds.push(format!("{n} {}", k.as_str()));
        }
    }
    let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
    let _ = writeln!(
        out,
        "{} {what}: {} changed{kinds}, audit cost {}",
        paint(BOLD, "deps-diff"),
        plural(total, "package", "packages"),
        paint(BOLD, &plural(report.audit_lines(), "line", "lines")),
    );
    if report.packages.is_empty() {
        let _ = writeln!(out, "no package changes");
        return out;
    }
    for p in &report.packages {
        out.push('\n');
        let _ = writeln!(out, "{}", headline(p));
        let indent = " ".repeat(15);
        let _ = writeln!(out, "{indent}{}", counts(p));
        for s in [&p.old, &p.new].into_iter().flatten() {
            if !s.verified {
                let _ = writeln!(out, "{indent}{} {}: {}", escape::line(&p.name), s.package.version, verification(s));
            }
        }
        if let Some(v) = vcs_line(p) {
            let _ = writeln!(out, "{indent}{v}");
        }
        if report.lockfiles.len() > 1 {
            let _ = writeln!(out, "{indent}{}", paint(DIM, &format!("in {}", escape::line(&p.lockfiles.join(", ")))));
        }
        if opts.detail == Detail::Stat {
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
            let _ = writeln!(
                out,
                "{indent}  {mark} {:>7} {:>7}  {}{}",
                paint(GREEN, &format!("+{}", f.lines_added)),
                paint(RED, &format!("-{}", f.lines_removed)),
                escape::line(&f.path),
                paint(DIM, &note)
            );
        }
        if opts.detail == Detail::Diff {
            for f in &d.files {
                if let Some(patch) = &f.patch {
                    out.push('\n');
                    let _ = writeln!(out, "{}", paint(CYAN, &format!("── {}: {}", headline_plain(p), escape::line(&f.path))));
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
    out
}
