//! The `velaris/deps-diff/v1` JSON document, described field by field in docs/json.md. Kept
//! for one release behind `--schema v1`: packages sorted by name, `verified` meaning a sha256
//! match only, and none of v2's review fields.

use serde::Serialize;

use crate::depsdiff::{PackageReport, Report, Side, Verification};
use crate::diff::{FileDiff, VcsInfo};
use crate::lockfile::ChangeKind;

pub const SCHEMA_V1: &str = "velaris/deps-diff/v1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    base: &'a str,
    head: &'a str,
    lockfiles: &'a [String],
    packages: Vec<Package<'a>>,
    totals: Totals,
}

#[derive(Serialize)]
struct Package<'a> {
    name: &'a str,
    change: &'static str,
    old: Option<Version<'a>>,
    new: Option<Version<'a>>,
    semver: Option<&'static str>,
    breaking: bool,
    files: Option<Files>,
    lines: Option<Lines>,
    audit_lines: Option<u64>,
    vcs: Option<Vcs<'a>>,
    lockfiles: &'a [String],
    file_changes: Vec<FileChange<'a>>,
}

#[derive(Serialize)]
struct Version<'a> {
    version: String,
    source: Option<&'a str>,
    checksum: Option<&'a str>,
    verified: bool,
    origin: Option<String>,
    unverifiable: Option<String>,
}

#[derive(Serialize)]
struct Files {
    added: u64,
    removed: u64,
    modified: u64,
    binary: u64,
}

#[derive(Serialize)]
struct Lines {
    added: u64,
    removed: u64,
}

#[derive(Serialize)]
struct Vcs<'a> {
    old: Option<&'a VcsInfo>,
    new: Option<&'a VcsInfo>,
    changed: bool,
}

#[derive(Serialize)]
struct FileChange<'a> {
    path: &'a str,
    status: &'a crate::diff::FileStatus,
    binary: bool,
    packaging: bool,
    lines: Lines,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct Totals {
    packages: u64,
    audit_lines: u64,
    added: u64,
    removed: u64,
    upgraded: u64,
    downgraded: u64,
    source_changed: u64,
    checksum_changed: u64,
    /// Package sides that could not be verified (no checksum in the lockfile).
    unverifiable: u64,
}

fn version(s: &Side) -> Version<'_> {
    Version {
        version: s.package.version.to_string(),
        source: s.package.source.as_deref(),
        checksum: s.package.checksum.as_deref(),
        verified: s.sha256_verified(),
        origin: s.origin().map(|o| o.kind().to_string()),
        unverifiable: match &s.verification {
            Verification::Sha256 { .. } => None,
            Verification::Commit { commit, .. } => {
                Some(format!("git source: Cargo.lock records no checksum (read at commit {commit})"))
            }
            Verification::Unverifiable(why) => Some(why.clone()),
        },
    }
}

fn file(f: &FileDiff) -> FileChange<'_> {
    FileChange {
        path: &f.path,
        status: &f.status,
        binary: f.binary,
        packaging: f.packaging,
        lines: Lines { added: f.lines_added, removed: f.lines_removed },
        patch: f.patch.as_deref(),
    }
}

fn package(p: &PackageReport) -> Package<'_> {
    let d = p.diff.as_ref();
    Package {
        name: &p.name,
        change: p.change.as_str(),
        old: p.old.as_ref().map(version),
        new: p.new.as_ref().map(version),
        semver: p.semver.map(|s| s.as_str()),
        breaking: p.semver.is_some_and(|s| s.is_breaking()),
        files: d.map(|d| Files {
            added: d.files_added,
            removed: d.files_removed,
            modified: d.files_modified,
            binary: d.binary_files,
        }),
        lines: d.map(|d| Lines { added: d.lines_added, removed: d.lines_removed }),
        audit_lines: d.map(|d| d.audit_lines),
        vcs: d.and_then(|d| {
            (d.old_vcs.is_some() || d.new_vcs.is_some()).then_some(Vcs {
                old: d.old_vcs.as_ref(),
                new: d.new_vcs.as_ref(),
                changed: d.vcs_changed,
            })
        }),
        lockfiles: &p.lockfiles,
        file_changes: d.map(|d| d.files.iter().map(file).collect()).unwrap_or_default(),
    }
}

/// The report as one v1 JSON document, followed by a newline.
pub fn render_json_v1(report: &Report) -> String {
    let mut totals = Totals::default();
    // v1 lists packages by name, then versions.
    let mut packages: Vec<&PackageReport> = report.packages.iter().collect();
    packages.sort_by(|a, b| {
        let v = |s: &Option<Side>| s.as_ref().map(|s| s.package.version.clone());
        (&a.name, v(&a.old), v(&a.new)).cmp(&(&b.name, v(&b.old), v(&b.new)))
    });
    for p in &packages {
        totals.packages += 1;
        totals.audit_lines += p.audit_lines();
        match p.change {
            ChangeKind::Added => totals.added += 1,
            ChangeKind::Removed => totals.removed += 1,
            ChangeKind::Upgraded => totals.upgraded += 1,
            ChangeKind::Downgraded => totals.downgraded += 1,
            ChangeKind::SourceChanged => totals.source_changed += 1,
            ChangeKind::ChecksumChanged => totals.checksum_changed += 1,
        }
        totals.unverifiable += [&p.old, &p.new].into_iter().flatten().filter(|s| !s.sha256_verified()).count() as u64;
    }
    let doc = Doc {
        schema: SCHEMA_V1,
        base: &report.base,
        head: &report.head,
        lockfiles: &report.lockfiles,
        packages: packages.into_iter().map(package).collect(),
        totals,
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("report serializes");
    s.push('\n');
    s
}
