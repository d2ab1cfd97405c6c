//! The risk model (docs/review.md): a score per package from its evidence, each point with the
//! reason it was given, the order a reviewer reads the packages in, and the one sentence that
//! names the top risk.
//!
//! The score is a sum of reasons. Gained capabilities weigh by kind (spawning and connecting out
//! most, reading an environment variable least), half again at build time (build code runs on
//! every developer's machine and in CI) and in a patch release (which should not gain any);
//! combinations that make an attack weigh on their own (reading files or the environment *and*
//! connecting out; connecting out *and* spawning). Then what the added lines say (secret-shaped
//! paths, a branch on CI, the clock or the OS next to a gained capability, a binary file the
//! code reads, strings that decode into a URL), the name (a squat of a popular crate), the
//! registry (yanked, not listed), the advisories, provenance, and where the package sits (new
//! and transitive, a direct downgrade). Packages a change adds are grouped under the package
//! that brought them, and a group is read in the order of its riskiest member, so the crate that
//! pulls in four build scripts comes with them, first. Ties go to more evidence, then more
//! lines to audit; the name decides only between packages with the same evidence.
//!
//! Pure: reports in, scores and order out.

use std::collections::BTreeMap;

use super::{CapStatus, FlagKind, PackageReport};
use crate::lockfile::{ChangeKind, SemverBump};
use crate::surface::{Capability, Scope};

/// One reason for points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// Stable kebab-case code (docs/review.md lists them).
    pub code: &'static str,
    pub points: u32,
    /// For people: "reads local data and connects out".
    pub text: String,
}

/// A package's risk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Risk {
    pub score: u32,
    /// Most points first.
    pub reasons: Vec<Reason>,
    /// The changed package it is grouped under (the one that brought it), if any.
    pub group: Option<String>,
    /// The score its group is read by (the riskiest member's).
    pub group_score: u32,
}

/// Points per gained capability, before the build-time and patch-release factors.
pub fn capability_points(c: Capability) -> u32 {
    use Capability::*;
    match c {
        ProcessSpawn => 35,
        NetConnect => 30,
        NetListen => 25,
        DynamicLoad => 25,
        FsWrite => 20,
        Ffi => 12,
        FsRead => 12,
        Unanalyzed => 10,
        BuildScript | BuildProcMacro => 10,
        EnvWrite => 8,
        Asm => 8,
        BuildNative => 8,
        EnvRead => 6,
        Unsafe => 3,
    }
}

fn has_cap(p: &PackageReport, caps: &[Capability]) -> bool {
    p.capabilities.added.iter().any(|d| caps.contains(&d.capability))
}

/// A build-time write whose every finding's hunk speaks of `OUT_DIR`: the one place a build
/// script is meant to write.
fn writes_only_out_dir(d: &super::CapDelta) -> bool {
    d.scope == Scope::Build
        && !d.findings.is_empty()
        && d.findings.iter().all(|e| e.hunk.as_ref().is_some_and(|h| h.text.contains("OUT_DIR") || h.text.contains("out_dir")))
}

/// The reasons of one package, most points first.
pub fn reasons(p: &PackageReport) -> Vec<Reason> {
    let mut out: Vec<Reason> = Vec::new();
    let mut add = |code: &'static str, points: u32, text: String| {
        if points > 0 {
            out.push(Reason { code, points, text });
        }
    };
    match p.change {
        ChangeKind::ChecksumChanged => add("checksum-changed", 90, "other bytes under the same version".into()),
        ChangeKind::SourceChanged => add("source-changed", 40, "moved to another source".into()),
        _ => {}
    }
    if [&p.old, &p.new].into_iter().flatten().any(|s| s.unverified()) {
        add("unverifiable", 30, "a side could not be verified".into());
    }
    // Gained capabilities: each capability once, at its most serious scope.
    let factor = match (p.change, p.semver) {
        (ChangeKind::Upgraded | ChangeKind::Downgraded, Some(SemverBump::Patch)) => 1.5,
        (ChangeKind::Upgraded | ChangeKind::Downgraded, Some(SemverBump::Minor)) => 1.25,
        _ => 1.0,
    };
    let mut per_cap: BTreeMap<Capability, (u32, String)> = BTreeMap::new();
    for d in &p.capabilities.added {
        let build = d.scope == Scope::Build && !d.capability.as_str().starts_with("build.");
        let mut pts = capability_points(d.capability) as f64;
        let mut what = d.capability.as_str().to_string();
        if d.capability == Capability::FsWrite && writes_only_out_dir(d) {
            pts = 5.0;
            what.push_str(" under OUT_DIR");
        } else if build {
            pts *= 1.5;
            what.push_str(" at build time");
        }
        let pts = (pts * factor).round() as u32;
        if per_cap.get(&d.capability).is_none_or(|(old, _)| pts > *old) {
            per_cap.insert(d.capability, (pts, what));
        }
    }
    let verb = if p.old.is_some() { "gains" } else { "has" };
    for (pts, what) in per_cap.into_values() {
        add("capability", pts, format!("{verb} {what}"));
    }
    let reads = has_cap(p, &[Capability::FsRead, Capability::EnvRead]);
    let connects = has_cap(p, &[Capability::NetConnect]);
    let spawns = has_cap(p, &[Capability::ProcessSpawn]);
    if reads && connects {
        add("read-and-send", 40, "reads local data and connects out".into());
    }
    if spawns && connects {
        add("download-and-run", 30, "connects out and starts processes".into());
    }
    let acts = has_cap(p, &[Capability::NetConnect, Capability::NetListen, Capability::ProcessSpawn, Capability::FsWrite, Capability::FsRead, Capability::EnvRead, Capability::DynamicLoad]);
    let analysed = matches!(p.capabilities.status, CapStatus::Analysed);
    for f in &p.flags {
        match f.kind {
            FlagKind::SecretAccess => {
                // Each distinct secret named, not each line that names one.
                let kinds = f.message.rsplit_once(": ").map_or(1, |(_, list)| list.split(", ").count()) as u32;
                add("secret-access", 35 + 5 * kinds.saturating_sub(1).min(3), f.message.clone())
            }
            FlagKind::TriggerCondition => add("trigger-condition", if acts { 15 } else { 3 }, f.message.clone()),
            FlagKind::BinaryRead => add("binary-read", if acts || p.has(FlagKind::BuildScript) { 30 } else { 10 }, f.message.clone()),
            FlagKind::NameSquat => add("name-squat", 45, f.message.clone()),
            FlagKind::Yanked => add("yanked", 25, "yanked by its publisher".into()),
            FlagKind::NotInIndex => add("not-in-index", 30, "not listed in the registry index".into()),
            FlagKind::VcsCommitChanged => add("vcs-commit-changed", 25, "the same version names another commit".into()),
            FlagKind::RepositoryChanged => add("repository-changed", 15, "names another repository".into()),
            FlagKind::VcsInfoMissing => add("vcs-info-missing", 8, "no longer says which commit it was published from".into()),
            FlagKind::VcsDirty => add("vcs-dirty", 5, "published from a dirty work tree".into()),
            FlagKind::SuspiciousLines => {
                let decoded = f.evidence.iter().any(|e| e.contains("decodes to"));
                add("suspicious-lines", if decoded { 35 } else { 15 }, if decoded { "strings that decode into a URL or a command".into() } else { "added lines that look like data".into() })
            }
            FlagKind::BinaryFiles => add("binary-files", 8, "adds binary files".into()),
            FlagKind::BuildNetwork => add("build-network", 20, "goes online at build time".into()),
            FlagKind::BuildSpawn => add("build-spawn", 20, "starts processes at build time".into()),
            // Without an analysis, what the manifest says is all there is.
            FlagKind::BuildScript if !analysed => add("build-script", 15, "new build script".into()),
            FlagKind::ProcMacro if !analysed => add("proc-macro", 15, "becomes a proc macro".into()),
            FlagKind::Native if !analysed => add("native", 10, "builds native code".into()),
            FlagKind::BuildScriptChanged => add("build-script-changed", 8, "its build script changed".into()),
            FlagKind::LicenseChanged => add("license-changed", 4, f.message.clone()),
            FlagKind::Advisory | FlagKind::NewDependency | FlagKind::BuildScript | FlagKind::ProcMacro | FlagKind::Native => {}
        }
    }
    for a in &p.advisories.affecting {
        let introduced = p.advisories.introduced.contains(&a.id);
        let mut pts = if a.is_vulnerability() { 30 } else { 12 };
        if matches!(a.severity.as_deref(), Some("high" | "critical")) {
            pts += 10;
        }
        if introduced {
            pts += 10;
        }
        let what = if introduced { format!("goes into {} ({})", a.id, a.kind) } else { format!("affected by {} ({})", a.id, a.kind) };
        add("advisory", pts, what);
    }
    // The new dependencies a version brings.
    let new_built = p.brings.len() as u32;
    if new_built > 0 {
        if p.semver == Some(SemverBump::Patch) {
            add("patch-adds-dependencies", 20, format!("a patch release that brings {}", crate::report::plural(new_built as u64, "new dependency", "new dependencies")));
        } else {
            add("adds-dependencies", 5, format!("brings {}", crate::report::plural(new_built as u64, "new dependency", "new dependencies")));
        }
    }
    let direct = !p.placement.direct.is_empty();
    if p.change == ChangeKind::Added && !direct && p.built() {
        add("new-transitive", 5, "new, and no member asked for it by name".into());
    }
    if direct && p.change == ChangeKind::Downgraded {
        add("direct-downgrade", 8, "a direct dependency goes back to an older version".into());
    }
    if direct && p.change == ChangeKind::Upgraded && p.semver == Some(SemverBump::Major) {
        add("direct-major", 3, "a direct dependency's major upgrade".into());
    }
    if direct && !p.capabilities.added.is_empty() {
        add("direct-gains", 5, "a member calls it directly".into());
    }
    if let CapStatus::Unknown(_) = p.capabilities.status {
        add("unknown", 10, "capabilities unknown".into());
    }
    out.sort_by(|a, b| b.points.cmp(&a.points).then(a.code.cmp(b.code)));
    out
}

/// Score every package, group the packages a change adds under the package that brought them,
/// and sort into the order a reviewer reads them: built packages by their group's score, each
/// group's introducer first; packages built for no analysed target last (unless
/// `all_targets`).
pub fn order(packages: &mut Vec<PackageReport>, all_targets: bool) {
    for p in packages.iter_mut() {
        let reasons = reasons(p);
        p.risk = Risk { score: reasons.iter().map(|r| r.points).sum(), reasons, group: None, group_score: 0 };
    }
    // The root each added package is grouped under: follow who brought it to a changed package
    // that was not itself brought (bounded by the number of packages).
    let names: BTreeMap<String, usize> = packages.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
    let parent = |i: usize| -> Option<usize> {
        let p = &packages[i];
        if p.change != ChangeKind::Added {
            return None;
        }
        p.brought_by.iter().filter_map(|b| names.get(b).copied()).find(|&j| j != i)
    };
    let mut root: Vec<usize> = (0..packages.len()).collect();
    for (i, r) in root.iter_mut().enumerate() {
        let mut cur = i;
        for _ in 0..packages.len() {
            match parent(cur) {
                Some(j) if j != i => cur = j,
                _ => break,
            }
        }
        *r = cur;
    }
    let mut group_score: BTreeMap<usize, (u32, u32)> = BTreeMap::new();
    for (i, p) in packages.iter().enumerate() {
        if !(p.built() || all_targets) {
            continue;
        }
        let g = group_score.entry(root[i]).or_default();
        g.0 = g.0.max(p.risk.score);
        g.1 += p.risk.score;
    }
    for (i, p) in packages.iter_mut().enumerate() {
        let (gs, _) = group_score.get(&root[i]).copied().unwrap_or((p.risk.score, p.risk.score));
        p.risk.group_score = gs.max(p.risk.score);
        if root[i] != i {
            p.risk.group = Some(String::new());
        }
    }
    let root_names: Vec<String> = root.iter().map(|&r| packages[r].name.clone()).collect();
    for (i, p) in packages.iter_mut().enumerate() {
        if p.risk.group.is_some() {
            p.risk.group = Some(root_names[i].clone());
        }
    }
    let mut idx: Vec<usize> = (0..packages.len()).collect();
    let key = |i: usize| {
        let p = &packages[i];
        let r = root[i];
        let last = !(p.built() || all_targets);
        let (gmax, gsum) = group_score.get(&r).copied().unwrap_or((p.risk.score, p.risk.score));
        let v = |s: &Option<super::Side>| s.as_ref().map(|s| s.package.version.clone());
        (
            last,
            std::cmp::Reverse(gmax),
            std::cmp::Reverse(gsum),
            packages[r].name.clone(),
            r != i,
            std::cmp::Reverse(p.risk.score),
            std::cmp::Reverse(p.risk.reasons.len()),
            std::cmp::Reverse(p.audit_lines()),
            p.name.clone(),
            v(&p.old),
            v(&p.new),
        )
    };
    idx.sort_by_key(|&i| key(i));
    let mut slots: Vec<Option<PackageReport>> = std::mem::take(packages).into_iter().map(Some).collect();
    *packages = idx.into_iter().map(|i| slots[i].take().expect("each index once")).collect();
}

/// The headline's sentence on the top risk: "Top risk: `faster_log` 0.1.0 (new, brought by
/// `logkit`): reads `.ssh`, ...". `None` when nothing scores.
pub fn top_sentence(packages: &[PackageReport]) -> Option<String> {
    let mut best: Option<&PackageReport> = None;
    for p in packages.iter().filter(|p| p.built()) {
        if best.is_none_or(|b| p.risk.score > b.risk.score) {
            best = Some(p);
        }
    }
    let p = best.filter(|p| p.risk.score > 0)?;
    let mut place = Vec::new();
    match p.change {
        ChangeKind::Added => place.push("new".to_string()),
        ChangeKind::Upgraded | ChangeKind::Downgraded => {
            let what = if p.change == ChangeKind::Upgraded { "upgrade" } else { "downgrade" };
            place.push(match p.semver {
                Some(s) => format!("{} {what}", s.as_str()),
                None => what.to_string(),
            });
        }
        other => place.push(other.as_str().to_string()),
    }
    if !p.placement.direct.is_empty() {
        place.push(format!("direct dependency of {}", p.placement.direct.join(", ")));
    } else if let Some(b) = p.brought_by.first() {
        place.push(format!("brought by {b}"));
    } else if p.placement.via.len() >= 2 {
        place.push(format!("via {}", p.placement.via[p.placement.via.len() - 2]));
    }
    let mut what: Vec<String> = Vec::new();
    for r in &p.risk.reasons {
        if what.len() >= 4 {
            break;
        }
        if !what.contains(&r.text) {
            what.push(r.text.clone());
        }
    }
    Some(format!("Top risk: {} ({}): {} (score {}).", p.title(), place.join(", "), what.join("; "), p.risk.score))
}
