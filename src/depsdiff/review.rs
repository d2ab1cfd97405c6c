//! The review's order and its verdicts: which package a reviewer reads first, the headline's
//! categories, what was covered and verified, and what trips each `fail-on` condition (the
//! one place the dependency conditions are decided, for `velaris deps-diff` and the action).
//!
//! Order by risk: integrity and source changes, then gained capabilities (build-time code and
//! writing files, network, spawning, foreign and dynamically loaded code first), then flags,
//! then direct upgrades by semver size, then the rest; packages built for no analysed target
//! last, listed apart.

use std::collections::BTreeSet;

use super::{CapStatus, Coverage, FlagKind, PackageReport, Report, Verification, Verified};
use crate::gate::{self, Condition, FailOn, Failure};
use crate::lockfile::{ChangeKind, SemverBump};

/// A package's place in the review order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Another source or other bytes under one version, or a side that could not be verified.
    Integrity,
    /// Gains capabilities.
    Capabilities,
    /// Flagged.
    Flags,
    /// A direct dependency's version changed.
    Direct,
    Routine,
    /// Built for no analysed target.
    NotBuilt,
}

impl Tier {
    pub fn code(self) -> &'static str {
        match self {
            Tier::Integrity => "integrity",
            Tier::Capabilities => "capabilities",
            Tier::Flags => "flags",
            Tier::Direct => "direct",
            Tier::Routine => "routine",
            Tier::NotBuilt => "not-built",
        }
    }
}

fn semver_rank(s: Option<SemverBump>) -> u8 {
    match s {
        Some(SemverBump::Major) => 0,
        Some(SemverBump::Minor) => 1,
        Some(SemverBump::Patch) => 2,
        _ => 3,
    }
}

fn tier(p: &PackageReport) -> (Tier, u8) {
    if !p.built() {
        return (Tier::NotBuilt, 0);
    }
    let unverifiable = [&p.old, &p.new].into_iter().flatten().any(|s| s.unverified());
    if matches!(p.change, ChangeKind::SourceChanged | ChangeKind::ChecksumChanged) || unverifiable {
        return (Tier::Integrity, 0);
    }
    if let Some(r) = p.capabilities.added.iter().map(|d| super::cap_rank(d.capability, d.scope)).min() {
        return (Tier::Capabilities, r);
    }
    if let Some(r) = p.flags.iter().map(|f| f.kind.rank()).min() {
        return (Tier::Flags, r);
    }
    if !p.placement.direct.is_empty() && matches!(p.change, ChangeKind::Upgraded | ChangeKind::Downgraded) {
        return (Tier::Direct, semver_rank(p.semver));
    }
    (Tier::Routine, 0)
}

/// Sort packages into review order and record each one's tier.
pub fn order(packages: &mut [PackageReport]) {
    for p in packages.iter_mut() {
        p.tier = tier(p).0;
    }
    packages.sort_by(|a, b| {
        let v = |s: &Option<super::Side>| s.as_ref().map(|s| s.package.version.clone());
        (tier(a), &a.name, v(&a.old), v(&a.new)).cmp(&(tier(b), &b.name, v(&b.old), v(&b.new)))
    });
}

/// The headline categories: key, then the phrase for one package and for several.
const CATEGORIES: &[(&str, &str, &str)] = &[
    ("changed source", "changed source", "changed source"),
    ("changed checksum", "changed checksum", "changed checksum"),
    ("unverifiable", "unverifiable", "unverifiable"),
    ("name squat", "imitates a popular name", "imitate popular names"),
    ("secrets", "names secrets", "name secrets"),
    ("advisory", "has an advisory", "have advisories"),
    ("gain capabilities", "gains capabilities", "gain capabilities"),
    ("build network", "goes online at build time", "go online at build time"),
    ("build spawn", "starts processes at build time", "start processes at build time"),
    ("new build script", "new build script", "new build scripts"),
    ("new proc macro", "new proc macro", "new proc macros"),
    ("new native build", "new native build", "new native builds"),
    ("yanked", "yanked", "yanked"),
    ("not in the index", "not in the index", "not in the index"),
    ("new repository", "new repository", "new repositories"),
    ("suspicious lines", "with suspicious lines", "with suspicious lines"),
    ("binary files", "with binary files", "with binary files"),
    ("build script changed", "build script changed", "build scripts changed"),
    ("new dependencies", "adds dependencies", "add dependencies"),
    ("license changed", "changes its license", "change their licenses"),
    ("flagged", "flagged", "flagged"),
    ("unknown", "unknown", "unknown"),
    ("routine", "routine", "routine"),
];

/// The headline category of one built package: the first that applies.
pub fn category(p: &PackageReport) -> &'static str {
    match p.change {
        ChangeKind::SourceChanged => return "changed source",
        ChangeKind::ChecksumChanged => return "changed checksum",
        _ => {}
    }
    if [&p.old, &p.new].into_iter().flatten().any(|s| s.unverified()) {
        return "unverifiable";
    }
    for (kind, key) in [(FlagKind::NameSquat, "name squat"), (FlagKind::SecretAccess, "secrets"), (FlagKind::Advisory, "advisory")] {
        if p.has(kind) {
            return key;
        }
    }
    if !p.capabilities.added.is_empty() {
        return "gain capabilities";
    }
    for (kind, key) in [
        (FlagKind::BuildNetwork, "build network"),
        (FlagKind::BuildSpawn, "build spawn"),
        (FlagKind::BuildScript, "new build script"),
        (FlagKind::ProcMacro, "new proc macro"),
        (FlagKind::Native, "new native build"),
        (FlagKind::Yanked, "yanked"),
        (FlagKind::NotInIndex, "not in the index"),
        (FlagKind::RepositoryChanged, "new repository"),
        (FlagKind::SuspiciousLines, "suspicious lines"),
        (FlagKind::BinaryFiles, "binary files"),
        (FlagKind::BuildScriptChanged, "build script changed"),
        (FlagKind::NewDependency, "new dependencies"),
        (FlagKind::LicenseChanged, "license changed"),
    ] {
        if p.has(kind) {
            return key;
        }
    }
    if !p.flags.is_empty() {
        return "flagged";
    }
    match p.capabilities.status {
        CapStatus::Unknown(_) => "unknown",
        _ => "routine",
    }
}

/// A category as the headline says it for `n` packages: "1 gains capabilities", "2 gain
/// capabilities".
pub fn category_phrase(category: &str, n: u64) -> &'static str {
    CATEGORIES
        .iter()
        .find(|(k, _, _)| *k == category)
        .map_or("", |(_, one, many)| if n == 1 { one } else { many })
}

/// The headline's categories with counts, in a fixed order; built packages only.
pub fn categories(report: &Report) -> Vec<(u64, &'static str)> {
    let mut out: Vec<(u64, &'static str)> = Vec::new();
    for p in report.packages.iter().filter(|p| p.built()) {
        let c = category(p);
        match out.iter_mut().find(|(_, l)| *l == c) {
            Some(e) => e.0 += 1,
            None => out.push((1, c)),
        }
    }
    let rank = |c: &str| CATEGORIES.iter().position(|(k, _, _)| *k == c).unwrap_or(usize::MAX);
    out.sort_by_key(|(_, c)| rank(c));
    out
}

/// How much of the change the capability analysis covered.
pub fn coverage(packages: &[PackageReport], enabled: bool) -> Coverage {
    let mut c = Coverage { enabled, ..Coverage::default() };
    if !enabled {
        return c;
    }
    for p in packages {
        match &p.capabilities.status {
            CapStatus::Analysed => {
                c.in_scope += 1;
                c.analysed += 1;
            }
            CapStatus::Unknown(why) => {
                c.in_scope += 1;
                c.unknown.push((p.title(), why.clone()));
            }
            CapStatus::NotBuilt | CapStatus::Off => {}
        }
    }
    c
}

/// What was verified, and how; each unverifiable side once.
pub fn verified(packages: &[PackageReport]) -> Verified {
    let mut v = Verified::default();
    let mut seen = BTreeSet::new();
    for s in packages.iter().flat_map(|p| [&p.old, &p.new]).flatten() {
        let id = (s.package.name.clone(), s.package.version.to_string(), s.package.source.clone(), s.package.checksum.clone());
        if !seen.insert(id) {
            continue;
        }
        match &s.verification {
            Verification::Sha256 { .. } => {
                v.sha256 += 1;
                v.sha256_total += 1;
            }
            Verification::Commit { .. } => {
                v.commits += 1;
                v.commits_total += 1;
            }
            Verification::Unverifiable(_) if s.is_local() => {}
            Verification::Unverifiable(why) => {
                if s.package.is_registry() {
                    v.sha256_total += 1;
                } else if s.package.source.as_deref().is_some_and(|x| x.starts_with("git+")) {
                    v.commits_total += 1;
                }
                v.unverifiable.push((format!("{} {}", s.package.name, s.package.version), why.clone()));
            }
        }
    }
    v
}

/// What trips `condition` in the report, one line each; empty when it does not hold. This is
/// where every `fail-on` condition is decided for a deps-diff report: the dependency conditions
/// from the packages (those built for no analysed target count only with `--all-targets`),
/// `widened` and `baseline-widened` from each lockfile's baseline, with the same comparisons
/// as `velaris check` and the GitHub Action ([`crate::gate::widened`],
/// [`crate::gate::baseline_widened`]).
pub fn decide(report: &Report, condition: Condition) -> Vec<String> {
    let in_scope = |p: &&PackageReport| report.all_targets || p.built();
    let mut what: Vec<String> = Vec::new();
    match condition {
        Condition::Widened => {
            for b in &report.baselines {
                if let super::BaselineState::Checked { head, .. } = &b.state {
                    what.extend(gate::widened(head));
                }
            }
        }
        Condition::BaselineWidened => {
            for b in &report.baselines {
                if let Some(added) = &b.added {
                    what.extend(gate::baseline_widened(added));
                }
            }
        }
        Condition::NewCapability => {
            for p in report.packages.iter().filter(in_scope) {
                if !p.capabilities.added.is_empty() {
                    let mut caps: Vec<&str> = Vec::new();
                    for d in &p.capabilities.added {
                        if !caps.contains(&d.capability.as_str()) {
                            caps.push(d.capability.as_str());
                        }
                    }
                    what.push(format!("{}: {}", p.title(), caps.join(", ")));
                }
            }
        }
        Condition::BuildScript
        | Condition::ProcMacro
        | Condition::Native
        | Condition::Yanked
        | Condition::LicenseChange
        | Condition::Advisory
        | Condition::NameSquat
        | Condition::Fresh => {
            let kinds = flag_kinds(condition);
            for p in report.packages.iter().filter(in_scope) {
                if let Some(f) = p.flags.iter().find(|f| kinds.contains(&f.kind)) {
                    what.push(format!("{}: {}", p.title(), f.message));
                }
            }
        }
        Condition::Unverifiable => {
            for (pkg, why) in &report.verified.unverifiable {
                what.push(format!("{pkg}: {why}"));
            }
        }
        Condition::Unknown => {
            for (pkg, why) in &report.coverage.unknown {
                what.push(format!("{pkg}: {why}"));
            }
        }
    }
    what
}

/// The flags that trip a flag condition (`build-script`, `proc-macro`, `native`, `yanked`,
/// `license-change`, `advisory`, `name-squat`).
pub fn flag_kinds(condition: Condition) -> &'static [FlagKind] {
    match condition {
        Condition::BuildScript => &[FlagKind::BuildScript, FlagKind::BuildScriptChanged, FlagKind::BuildNetwork, FlagKind::BuildSpawn],
        Condition::ProcMacro => &[FlagKind::ProcMacro],
        Condition::Native => &[FlagKind::Native],
        Condition::Yanked => &[FlagKind::Yanked],
        Condition::LicenseChange => &[FlagKind::LicenseChanged],
        Condition::Advisory => &[FlagKind::Advisory],
        Condition::NameSquat => &[FlagKind::NameSquat],
        Condition::Fresh => &[FlagKind::Fresh],
        _ => &[],
    }
}

/// Each condition of `fail_on` that the report trips, with what trips it.
pub fn failures(report: &Report, fail_on: &FailOn) -> Vec<Failure> {
    fail_on.failures(|c| decide(report, c))
}
