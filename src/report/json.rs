//! The `velaris/deps-diff/v2` JSON document, described field by field in docs/json.md and by
//! the JSON Schema in docs/deps-diff-v2.schema.json.
//!
//! Findings are serialized as the surface engine made them (with `hunk` beside them for gained
//! capabilities), so fields the engine adds to findings appear here too.

use serde::Serialize;

use crate::baseline::{Addition, Widening};
use crate::depsdiff::publish::{Publisher, PublisherCheck, SourceCheck};
use crate::depsdiff::{
    BaselineEffect, BaselineState, CapDelta, CapStatus, Flag, PackageReport, ProgramEffect, Report, Side, Verification,
    review,
};
use crate::diff::{FileDiff, VcsInfo};
use crate::lockfile::ChangeKind;
use crate::registry::IndexStatus;
use crate::surface::Finding;

pub const SCHEMA: &str = "velaris/deps-diff/v2";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    base: &'a str,
    head: &'a str,
    lockfiles: &'a [String],
    targets: &'a [String],
    all_targets: bool,
    graph: Graph<'a>,
    verified: Verified<'a>,
    coverage: Coverage<'a>,
    summary: Vec<Category>,
    packages: Vec<Package<'a>>,
    programs: Vec<Program<'a>>,
    baselines: Vec<Baseline<'a>>,
    totals: Totals,
    top_risk: Option<&'a str>,
    advisory_db: Option<AdvisoryDbOut<'a>>,
    publication: PublicationSummaryOut,
}

#[derive(Serialize)]
struct PublicationSummaryOut {
    as_of: String,
    as_of_from: &'static str,
    cooldown_days: u32,
    publisher_asked: bool,
    api_requests: usize,
    publisher_not_checked: usize,
    verify_source: bool,
}

#[derive(Serialize)]
struct PublicationOut<'a> {
    released: Option<ReleasedOut<'a>>,
    fresh: bool,
    publisher: Option<PublisherCheckOut<'a>>,
    source: Option<SourceOut<'a>>,
}

#[derive(Serialize)]
struct ReleasedOut<'a> {
    time: &'a str,
    age_seconds: i64,
    from: &'static str,
}

#[derive(Serialize)]
struct PublisherCheckOut<'a> {
    status: &'static str,
    reason: Option<&'a str>,
    new: Option<PublisherOut<'a>>,
    old: Option<PublisherOut<'a>>,
    trustpub_only: Option<bool>,
    earlier_versions: Option<usize>,
    earlier_users: &'a [String],
}

#[derive(Serialize)]
struct PublisherOut<'a> {
    kind: &'static str,
    login: Option<&'a str>,
    provider: Option<&'a str>,
    repository: Option<&'a str>,
    run: Option<&'a str>,
}

#[derive(Serialize)]
struct SourceOut<'a> {
    status: &'static str,
    reason: Option<&'a str>,
    repository: Option<&'a str>,
    commit: Option<&'a str>,
    files: Option<usize>,
    only_in_package: &'a [String],
    differ: &'a [String],
}

#[derive(Serialize)]
struct AdvisoryDbOut<'a> {
    path: &'a str,
    commit: Option<&'a str>,
    advisories: usize,
}

#[derive(Serialize)]
struct RiskOut<'a> {
    score: u32,
    group: Option<&'a str>,
    group_score: u32,
    reasons: Vec<ReasonOut<'a>>,
}

#[derive(Serialize)]
struct ReasonOut<'a> {
    code: &'static str,
    points: u32,
    text: &'a str,
}

#[derive(Serialize)]
struct SquatOut<'a> {
    resembles: &'a str,
    how: &'static str,
    distance: usize,
}

#[derive(Serialize)]
struct AdvisoriesOut<'a> {
    affecting: Vec<AdvisoryOut<'a>>,
    introduced: &'a [String],
    fixed: Vec<AdvisoryOut<'a>>,
}

#[derive(Serialize)]
struct AdvisoryOut<'a> {
    id: &'a str,
    title: &'a str,
    kind: &'a str,
    severity: Option<&'a str>,
    url: Option<&'a str>,
    patched: &'a [String],
    aliases: &'a [String],
}

#[derive(Serialize)]
struct LicenseOut<'a> {
    old: Option<&'a str>,
    new: Option<&'a str>,
    changed: bool,
}

#[derive(Serialize)]
struct Graph<'a> {
    known: bool,
    unknown: Vec<Reasoned<'a>>,
}

#[derive(Serialize)]
struct Reasoned<'a> {
    #[serde(rename = "lockfile", skip_serializing_if = "Option::is_none")]
    lockfile: Option<&'a str>,
    #[serde(rename = "package", skip_serializing_if = "Option::is_none")]
    package: Option<&'a str>,
    reason: &'a str,
}

#[derive(Serialize)]
struct Verified<'a> {
    sha256: usize,
    sha256_total: usize,
    commits: usize,
    commits_total: usize,
    unverifiable: Vec<Reasoned<'a>>,
}

#[derive(Serialize)]
struct Coverage<'a> {
    enabled: bool,
    in_scope: usize,
    analysed: usize,
    unknown: Vec<Reasoned<'a>>,
}

#[derive(Serialize)]
struct Category {
    category: &'static str,
    packages: u64,
}

#[derive(Serialize)]
struct Package<'a> {
    name: &'a str,
    change: &'static str,
    tier: &'static str,
    old: Option<Version<'a>>,
    new: Option<Version<'a>>,
    semver: Option<&'static str>,
    breaking: bool,
    built: Option<bool>,
    targets: &'a [String],
    direct: &'a [String],
    via: Option<&'a [String]>,
    not_built: Option<NotBuilt<'a>>,
    flags: Vec<FlagOut<'a>>,
    capabilities: Caps<'a>,
    files: Option<Files>,
    lines: Option<Lines>,
    audit_lines: Option<u64>,
    vcs: Option<Vcs<'a>>,
    lockfiles: &'a [String],
    file_changes: Vec<FileChange<'a>>,
    risk: RiskOut<'a>,
    brought_by: &'a [String],
    brings: &'a [String],
    squat: Option<SquatOut<'a>>,
    advisories: AdvisoriesOut<'a>,
    license: LicenseOut<'a>,
    publication: Option<PublicationOut<'a>>,
}

#[derive(Serialize)]
struct Version<'a> {
    version: String,
    source: Option<&'a str>,
    checksum: Option<&'a str>,
    verified: bool,
    verified_by: Option<&'static str>,
    origin: Option<&'static str>,
    commit: Option<&'a str>,
    path_in_repository: Option<&'a str>,
    unverifiable: Option<&'a str>,
    yanked: Option<bool>,
}

#[derive(Serialize)]
struct NotBuilt<'a> {
    reason: &'a str,
    code: &'static str,
    from: Option<&'a str>,
}

#[derive(Serialize)]
struct FlagOut<'a> {
    code: &'static str,
    message: &'a str,
    evidence: &'a [String],
}

#[derive(Serialize)]
struct Caps<'a> {
    status: &'static str,
    reason: Option<&'a str>,
    note: Option<&'a str>,
    added: Vec<Delta<'a>>,
    removed: Vec<Delta<'a>>,
}

#[derive(Serialize)]
struct Delta<'a> {
    capability: &'static str,
    scope: crate::surface::Scope,
    findings: Vec<FindingOut<'a>>,
    findings_total: usize,
}

#[derive(Serialize)]
struct FindingOut<'a> {
    #[serde(flatten)]
    finding: &'a Finding,
    #[serde(skip_serializing_if = "Option::is_none")]
    hunk: Option<HunkOut<'a>>,
}

#[derive(Serialize)]
struct HunkOut<'a> {
    text: &'a str,
    changed: bool,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    too_large: Option<TooLargeOut<'a>>,
}

/// A file that was not diffed: why, and each side's size and digest.
#[derive(Serialize)]
struct TooLargeOut<'a> {
    reason: &'a str,
    old: Option<SideOut<'a>>,
    new: Option<SideOut<'a>>,
}

#[derive(Serialize)]
struct SideOut<'a> {
    bytes: u64,
    sha256: &'a str,
}

#[derive(Serialize)]
struct Program<'a> {
    lockfile: &'a str,
    name: &'a str,
    package: &'a str,
    status: &'static str,
    target: &'a str,
    gained: Vec<&'static str>,
    lost: Vec<&'static str>,
    evidence: Vec<ProgramEvidence<'a>>,
    evidence_total: usize,
}

#[derive(Serialize)]
struct ProgramEvidence<'a> {
    #[serde(rename = "crate")]
    krate: &'a str,
    version: &'a str,
    via: &'a [String],
    finding: &'a Finding,
}

#[derive(Serialize)]
struct Baseline<'a> {
    lockfile: &'a str,
    origin: &'a str,
    state: &'static str,
    detail: Option<&'a str>,
    target: Option<&'a str>,
    held_at_base: Option<bool>,
    widened: Vec<Widened<'a>>,
    added: Option<Vec<Widened<'a>>>,
}

#[derive(Serialize)]
struct Widened<'a> {
    kind: &'static str,
    name: &'a str,
    capabilities: Vec<&'static str>,
    new_subject: bool,
}

#[derive(Serialize, Default)]
struct Totals {
    packages: u64,
    audit_lines: u64,
    audit_lines_not_built: u64,
    added: u64,
    removed: u64,
    upgraded: u64,
    downgraded: u64,
    source_changed: u64,
    checksum_changed: u64,
    not_built: u64,
    gain_capabilities: u64,
    flagged: u64,
    unverifiable: u64,
}

fn version(s: &Side) -> Version<'_> {
    let (verified_by, commit, path) = match &s.verification {
        Verification::Sha256 { .. } => (Some("sha256"), None, None),
        Verification::Commit { commit, path } => (Some("commit"), Some(commit.as_str()), Some(path.as_str())),
        Verification::Unverifiable(_) => (None, None, None),
    };
    Version {
        version: s.package.version.to_string(),
        source: s.package.source.as_deref(),
        checksum: s.package.checksum.as_deref(),
        verified: s.verified(),
        verified_by,
        origin: s.origin().map(|o| o.kind()),
        commit,
        path_in_repository: path,
        unverifiable: s.unverifiable(),
        yanked: s.index.and_then(|i| match i {
            IndexStatus::Yanked => Some(true),
            IndexStatus::Published => Some(false),
            IndexStatus::NotListed => None,
        }),
    }
}

fn file<'a>(f: &'a FileDiff, o: &JsonOptions) -> FileChange<'a> {
    FileChange {
        path: &f.path,
        status: &f.status,
        binary: f.binary,
        packaging: f.packaging,
        lines: Lines { added: f.lines_added, removed: f.lines_removed },
        patch: f.patch.as_deref().filter(|_| o.patches),
        too_large: f.too_large.as_ref().map(|t| TooLargeOut {
            reason: &t.reason,
            old: f.old_size.zip(t.old_sha256.as_deref()).map(|(bytes, sha256)| SideOut { bytes, sha256 }),
            new: f.new_size.zip(t.new_sha256.as_deref()).map(|(bytes, sha256)| SideOut { bytes, sha256 }),
        }),
    }
}

fn flag(f: &Flag) -> FlagOut<'_> {
    FlagOut { code: f.kind.code(), message: &f.message, evidence: &f.evidence }
}

fn delta(d: &CapDelta) -> Delta<'_> {
    Delta {
        capability: d.capability.as_str(),
        scope: d.scope,
        findings_total: d.findings.len(),
        findings: d
            .findings
            .iter()
            .take(MAX_FINDINGS)
            .map(|e| FindingOut {
                finding: &e.finding,
                hunk: e.hunk.as_ref().map(|h| HunkOut { text: clip(&h.text, MAX_HUNK_BYTES), changed: h.changed }),
            })
            .collect(),
    }
}

/// Findings listed per gained or lost (capability, scope); `findings_total` counts them all.
const MAX_FINDINGS: usize = 100;
/// Bytes of one hunk's text (a minified line can be megabytes).
const MAX_HUNK_BYTES: usize = 4096;
/// Findings listed per program as the evidence of its gains; `evidence_total` counts them all.
const MAX_PROGRAM_EVIDENCE: usize = 100;

/// `s` cut to at most `max` bytes at a character boundary.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What the JSON document holds beyond its bounded default.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonOptions {
    /// Each changed file's unified diff (`patch`): `--diff`.
    pub patches: bool,
}

fn caps(p: &PackageReport) -> Caps<'_> {
    let c = &p.capabilities;
    let (status, reason) = match &c.status {
        CapStatus::Analysed => ("analysed", None),
        CapStatus::NotBuilt => ("not-built", None),
        CapStatus::Unknown(why) => ("unknown", Some(why.as_str())),
        CapStatus::Off => ("off", None),
    };
    Caps {
        status,
        reason,
        note: c.note.as_deref(),
        added: c.added.iter().map(delta).collect(),
        removed: c.removed.iter().map(delta).collect(),
    }
}

fn package<'a>(p: &'a PackageReport, o: &JsonOptions) -> Package<'a> {
    let d = p.diff.as_ref();
    let pl = &p.placement;
    Package {
        name: &p.name,
        change: p.change.as_str(),
        tier: p.tier.code(),
        old: p.old.as_ref().map(version),
        new: p.new.as_ref().map(version),
        semver: p.semver.map(|s| s.as_str()),
        breaking: p.semver.is_some_and(|s| s.is_breaking()),
        built: pl.built,
        targets: &pl.targets,
        direct: &pl.direct,
        via: (!pl.via.is_empty()).then_some(pl.via.as_slice()),
        not_built: pl.not_built.as_ref().map(|(reason, code, from)| NotBuilt { reason, code, from: from.as_deref() }),
        flags: p.flags.iter().map(flag).collect(),
        capabilities: caps(p),
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
        file_changes: d.map(|d| d.files.iter().map(|f| file(f, o)).collect()).unwrap_or_default(),
        risk: RiskOut {
            score: p.risk.score,
            group: p.risk.group.as_deref(),
            group_score: p.risk.group_score,
            reasons: p.risk.reasons.iter().map(|r| ReasonOut { code: r.code, points: r.points, text: &r.text }).collect(),
        },
        brought_by: &p.brought_by,
        brings: &p.brings,
        squat: p.squat.as_ref().map(|s| SquatOut { resembles: &s.resembles, how: s.how, distance: s.distance }),
        advisories: AdvisoriesOut {
            affecting: p.advisories.affecting.iter().map(advisory).collect(),
            introduced: &p.advisories.introduced,
            fixed: p.advisories.fixed.iter().map(advisory).collect(),
        },
        license: LicenseOut {
            old: p.license.0.as_deref(),
            new: p.license.1.as_deref(),
            changed: p.old.is_some() && p.new.is_some() && p.license.0 != p.license.1 && p.diff.is_some(),
        },
        publication: publication(p),
    }
}

fn publisher(p: &Publisher) -> PublisherOut<'_> {
    match p {
        Publisher::Token(login) => PublisherOut { kind: "token", login: login.as_deref(), provider: None, repository: None, run: None },
        Publisher::Trusted { provider, repository, run } => {
            PublisherOut { kind: "trusted", login: None, provider: Some(provider), repository: repository.as_deref(), run: run.as_deref() }
        }
    }
}

fn publication(p: &PackageReport) -> Option<PublicationOut<'_>> {
    let pb = &p.publication;
    if pb.release.is_none() && pb.publisher.is_none() && pb.source.is_none() {
        return None;
    }
    const NONE: &[String] = &[];
    Some(PublicationOut {
        released: pb.release.as_ref().map(|r| ReleasedOut { time: &r.time, age_seconds: r.age, from: r.from }),
        fresh: p.has(crate::depsdiff::FlagKind::Fresh),
        publisher: pb.publisher.as_ref().map(|c| match c {
            PublisherCheck::Checked(x) => PublisherCheckOut {
                status: "checked",
                reason: None,
                new: Some(publisher(&x.new)),
                old: x.old.as_ref().map(publisher),
                trustpub_only: x.trustpub_only,
                earlier_versions: Some(x.earlier_versions),
                earlier_users: &x.earlier_users,
            },
            PublisherCheck::NotChecked(why) => PublisherCheckOut {
                status: "not-checked",
                reason: Some(why),
                new: None,
                old: None,
                trustpub_only: None,
                earlier_versions: None,
                earlier_users: NONE,
            },
        }),
        source: pb.source.as_ref().map(|s| {
            let blank = SourceOut { status: "", reason: None, repository: None, commit: None, files: None, only_in_package: NONE, differ: NONE };
            match s {
                SourceCheck::Matched { repository, commit, files } => {
                    SourceOut { status: "matched", repository: Some(repository), commit: Some(commit), files: Some(*files), ..blank }
                }
                SourceCheck::Unmatched { repository, commit, files, only_in_package, differ } => SourceOut {
                    status: "unmatched",
                    repository: Some(repository),
                    commit: Some(commit),
                    files: Some(*files),
                    only_in_package,
                    differ,
                    ..blank
                },
                SourceCheck::CommitNotFound { repository, commit } => {
                    SourceOut { status: "commit-not-found", repository: Some(repository), commit: Some(commit), ..blank }
                }
                SourceCheck::NotChecked(why) => SourceOut { status: "not-checked", reason: Some(why), ..blank },
            }
        }),
    })
}

fn publication_summary(r: &Report) -> PublicationSummaryOut {
    let s = &r.publication;
    PublicationSummaryOut {
        as_of: chrono::DateTime::<chrono::Utc>::from_timestamp(s.as_of.time, 0).map_or_else(String::new, |d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        as_of_from: s.as_of.from.code(),
        cooldown_days: s.fresh_days,
        publisher_asked: s.publisher_asked,
        api_requests: s.api_requests,
        publisher_not_checked: r.packages.iter().filter(|p| matches!(p.publication.publisher, Some(PublisherCheck::NotChecked(_)))).count(),
        verify_source: s.verify_source,
    }
}

fn advisory(a: &crate::depsdiff::advisories::AdvisoryRef) -> AdvisoryOut<'_> {
    AdvisoryOut {
        id: &a.id,
        title: &a.title,
        kind: &a.kind,
        severity: a.severity.as_deref(),
        url: a.url.as_deref(),
        patched: &a.patched,
        aliases: &a.aliases,
    }
}

fn program(p: &ProgramEffect) -> Program<'_> {
    Program {
        lockfile: &p.lockfile,
        name: &p.name,
        package: &p.package,
        status: p.status,
        target: &p.target,
        gained: p.gained.iter().map(|c| c.as_str()).collect(),
        lost: p.lost.iter().map(|c| c.as_str()).collect(),
        evidence: p
            .evidence
            .iter()
            .take(MAX_PROGRAM_EVIDENCE)
            .map(|(k, v, f, via)| ProgramEvidence { krate: k, version: v, via, finding: f })
            .collect(),
        evidence_total: p.evidence.len(),
    }
}

fn widened(w: &Widening) -> Widened<'_> {
    Widened {
        kind: w.subject.kind(),
        name: w.subject.name(),
        capabilities: w.capabilities.iter().map(|c| c.as_str()).collect(),
        new_subject: w.new_subject,
    }
}

fn added(a: &Addition) -> Widened<'_> {
    Widened {
        kind: a.subject.kind(),
        name: a.subject.name(),
        capabilities: a.capabilities.iter().map(|c| c.as_str()).collect(),
        new_subject: a.new_subject,
    }
}

fn baseline(b: &BaselineEffect) -> Baseline<'_> {
    let mut out = Baseline {
        lockfile: &b.lockfile,
        origin: &b.origin,
        state: "missing",
        detail: None,
        target: None,
        held_at_base: None,
        widened: Vec::new(),
        added: b.added.as_ref().map(|a| a.iter().map(added).collect()),
    };
    match &b.state {
        BaselineState::Missing => {}
        BaselineState::Malformed(e) => {
            out.state = "malformed";
            out.detail = Some(e);
        }
        BaselineState::Unknown(e) => {
            out.state = "unknown";
            out.detail = Some(e);
        }
        BaselineState::Checked { target, head, held_at_base } => {
            out.state = if head.holds { "holds" } else { "widened" };
            out.target = Some(target);
            out.held_at_base = *held_at_base;
            out.widened = head.widened.iter().map(widened).collect();
        }
    }
    out
}

/// The report as one JSON document, followed by a newline: bounded (no patches; findings,
/// program evidence and hunks capped, with totals).
pub fn render_json(report: &Report) -> String {
    render_json_with(report, &JsonOptions::default())
}

/// [`render_json`] with `opts`: `patches` adds each changed file's unified diff.
pub fn render_json_with(report: &Report, opts: &JsonOptions) -> String {
    let mut totals = Totals::default();
    for p in &report.packages {
        totals.packages += 1;
        if p.built() || report.all_targets {
            totals.audit_lines += p.audit_lines();
        }
        if !p.built() {
            totals.audit_lines_not_built += p.audit_lines();
            totals.not_built += 1;
        }
        match p.change {
            ChangeKind::Added => totals.added += 1,
            ChangeKind::Removed => totals.removed += 1,
            ChangeKind::Upgraded => totals.upgraded += 1,
            ChangeKind::Downgraded => totals.downgraded += 1,
            ChangeKind::SourceChanged => totals.source_changed += 1,
            ChangeKind::ChecksumChanged => totals.checksum_changed += 1,
        }
        totals.gain_capabilities += u64::from(!p.capabilities.added.is_empty());
        totals.flagged += u64::from(!p.flags.is_empty());
        totals.unverifiable += [&p.old, &p.new].into_iter().flatten().filter(|s| s.unverified()).count() as u64;
    }
    let doc = Doc {
        schema: SCHEMA,
        base: &report.base,
        head: &report.head,
        lockfiles: &report.lockfiles,
        targets: &report.targets,
        all_targets: report.all_targets,
        graph: Graph {
            known: report.graph_known(),
            unknown: report
                .graph_unknown
                .iter()
                .map(|(l, r)| Reasoned { lockfile: Some(l), package: None, reason: r })
                .collect(),
        },
        verified: Verified {
            sha256: report.verified.sha256,
            sha256_total: report.verified.sha256_total,
            commits: report.verified.commits,
            commits_total: report.verified.commits_total,
            unverifiable: report
                .verified
                .unverifiable
                .iter()
                .map(|(p, r)| Reasoned { lockfile: None, package: Some(p), reason: r })
                .collect(),
        },
        coverage: Coverage {
            enabled: report.coverage.enabled,
            in_scope: report.coverage.in_scope,
            analysed: report.coverage.analysed,
            unknown: report
                .coverage
                .unknown
                .iter()
                .map(|(p, r)| Reasoned { lockfile: None, package: Some(p), reason: r })
                .collect(),
        },
        summary: review::categories(report).into_iter().map(|(n, c)| Category { category: c, packages: n }).collect(),
        packages: report.packages.iter().map(|p| package(p, opts)).collect(),
        programs: report.programs.iter().map(program).collect(),
        baselines: report.baselines.iter().map(baseline).collect(),
        totals,
        top_risk: report.top_risk.as_deref(),
        advisory_db: report.advisory_db.as_ref().map(|d| AdvisoryDbOut { path: &d.path, commit: d.commit.as_deref(), advisories: d.advisories }),
        publication: publication_summary(report),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("report serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::depsdiff::{Capabilities, Coverage, Placement, Tier, Verified, advisories::PackageAdvisories, risk::Risk};
    use crate::diff::{DiffOptions, diff_trees};

    /// What the GitHub Action embeds (`render_json`) carries no patch, even when the review
    /// asked for them for its comment; `--diff` (`patches: true`) does.
    #[test]
    fn patches_only_when_asked() {
        let tree: crate::package::FileTree = [("src/lib.rs".to_string(), b"pub fn new_code() {}\n".to_vec())].into_iter().collect();
        let diff = diff_trees(None, Some(&tree), &DiffOptions { want_patch: true, ..DiffOptions::default() });
        assert!(diff.files[0].patch.is_some());
        let p = PackageReport {
            name: "fresh".into(),
            change: ChangeKind::Added,
            old: None,
            new: None,
            semver: None,
            diff: Some(diff),
            lockfiles: vec!["Cargo.lock".into()],
            placement: Placement::default(),
            flags: Vec::new(),
            capabilities: Capabilities { status: CapStatus::Off, added: Vec::new(), removed: Vec::new(), note: None },
            tier: Tier::Routine,
            brought_by: Vec::new(),
            brings: Vec::new(),
            squat: None,
            advisories: PackageAdvisories::default(),
            license: (None, None),
            risk: Risk::default(),
            lock_line: None,
            publication: Default::default(),
        };
        let report = Report {
            base: "a".into(),
            head: "b".into(),
            lockfiles: vec!["Cargo.lock".into()],
            packages: vec![p],
            from_files: true,
            targets: vec!["x86_64-unknown-linux-gnu".into()],
            all_targets: false,
            graph_unknown: Vec::new(),
            programs: Vec::new(),
            baselines: Vec::new(),
            coverage: Coverage::default(),
            verified: Verified::default(),
            advisory_db: None,
            top_risk: None,
            publication: Default::default(),
        };
        let bounded: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
        assert!(bounded["packages"][0]["file_changes"][0].get("patch").is_none(), "{bounded:#}");
        let full: serde_json::Value = serde_json::from_str(&render_json_with(&report, &JsonOptions { patches: true })).unwrap();
        assert!(full["packages"][0]["file_changes"][0]["patch"].as_str().unwrap().contains("+pub fn new_code()"));
    }
}
