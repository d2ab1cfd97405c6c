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
        // Code that runs without being called, before main: what a dropper wants.
        PreMain => 25,
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
        && d.findings.iter().all(|e| {
            e.hunk.as_ref().is_some_and(|h| (h.text.contains("OUT_DIR") || h.text.contains("out_dir")) && !h.text.contains("../") && !h.text.contains("/.."))
        })
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
            what.push_str(if d.capability == Capability::FsWrite { " at build time, outside OUT_DIR" } else { " at build time" });
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
            FlagKind::Fresh => {
                let day = p.publication.release.as_ref().is_some_and(|r| r.age < 86_400);
                add("fresh", if day { 25 } else { 15 }, f.message.clone());
                if super::publish::fresh_token_patch(p.change, p.semver, &p.publication, true) {
                    add("fresh-token-patch", 20, "a fresh patch release published with an API token".into());
                }
            }
            FlagKind::TrustedPublishingLost => add("trusted-publishing-lost", 40, f.message.clone()),
            FlagKind::TrustedPublishingRepository => add("trusted-publishing-repository", 35, f.message.clone()),
            FlagKind::PublisherNew => add("publisher-new", 25, f.message.clone()),
            FlagKind::PublisherChanged => add("publisher-changed", 10, f.message.clone()),
            FlagKind::FilesNotInRepository => {
                // Code or a manifest the repository does not have is what a tarball-only
                // backdoor needs; a generated README is not.
                let code = f.evidence.iter().any(|e| {
                    let path = e.split(": ").next().unwrap_or(e);
                    path.ends_with(".rs") || path.starts_with("Cargo.toml") || path == "build.rs"
                });
                add("files-not-in-repository", if code { 40 } else { 10 }, f.message.clone())
            }
            FlagKind::VcsCommitNotFound => add("vcs-commit-not-found", 20, f.message.clone()),
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
            add("patch-adds-dependencies", 20, format!("a patch release that brings {}", crate::text::plural(new_built as u64, "new dependency", "new dependencies")));
        } else {
            add("adds-dependencies", 5, format!("brings {}", crate::text::plural(new_built as u64, "new dependency", "new dependencies")));
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
/// package followed by what it brought (riskiest branch first); packages built for no analysed
/// target last (unless `all_targets`).
pub fn order(packages: &mut Vec<PackageReport>, all_targets: bool) {
    for p in packages.iter_mut() {
        let reasons = reasons(p);
        p.risk = Risk { score: reasons.iter().map(|r| r.points).sum(), reasons, group: None, group_score: 0 };
    }
    let n = packages.len();
    let shown = |p: &PackageReport| p.built() || all_targets;
    // Who each added package hangs under: the first package that brought it and is in the
    // report, as long as that does not close a cycle.
    let index: BTreeMap<&str, usize> = packages.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        let p = &packages[i];
        if p.change != ChangeKind::Added {
            continue;
        }
        // Unbuilt packages group among themselves, apart from the built ones.
        let Some(j) = p.brought_by.iter().filter_map(|b| index.get(b.as_str()).copied()).find(|&j| j != i && shown(&packages[j]) == shown(p)) else {
            continue;
        };
        // Walk up from j: a cycle back to i leaves i a root.
        let mut cur = Some(j);
        let mut steps = 0;
        while let Some(c) = cur {
            if c == i || steps > n {
                break;
            }
            cur = parent[c];
            steps += 1;
        }
        if cur.is_none() {
            parent[i] = Some(j);
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in parent.iter().enumerate() {
        if let Some(j) = *p {
            children[j].push(i);
        }
    }
    // Per subtree: (max score, total score, reasons, audit lines), for ordering branches.
    fn agg(i: usize, packages: &[PackageReport], children: &[Vec<usize>], memo: &mut Vec<Option<(u32, u32, usize, u64)>>) -> (u32, u32, usize, u64) {
        if let Some(a) = memo[i] {
            return a;
        }
        let p = &packages[i];
        let mut a = (p.risk.score, p.risk.score, p.risk.reasons.len(), p.audit_lines());
        memo[i] = Some(a);
        for &c in &children[i] {
            let b = agg(c, packages, children, memo);
            a = (a.0.max(b.0), a.1 + b.1, a.2 + b.2, a.3 + b.3);
        }
        memo[i] = Some(a);
        a
    }
    let mut memo = vec![None; n];
    let aggs: Vec<(u32, u32, usize, u64)> = (0..n).map(|i| agg(i, packages, &children, &mut memo)).collect();
    let v = |s: &Option<super::Side>| s.as_ref().map(|s| s.package.version.clone());
    let key = |i: usize| {
        let p = &packages[i];
        let (gmax, gsum, greasons, glines) = aggs[i];
        (
            !shown(p),
            std::cmp::Reverse(gmax),
            std::cmp::Reverse(gsum),
            std::cmp::Reverse(greasons),
            std::cmp::Reverse(glines),
            p.name.clone(),
            v(&p.old),
            v(&p.new),
        )
    };
    for c in children.iter_mut() {
        c.sort_by_key(|&i| key(i));
    }
    let mut roots: Vec<usize> = (0..n).filter(|&i| parent[i].is_none()).collect();
    roots.sort_by_key(|&i| key(i));
    let mut seq = Vec::with_capacity(n);
    let mut root_of = vec![0usize; n];
    for &r in &roots {
        let mut stack = vec![r];
        while let Some(i) = stack.pop() {
            root_of[i] = r;
            seq.push(i);
            stack.extend(children[i].iter().rev());
        }
    }
    let names: Vec<String> = packages.iter().map(|p| p.name.clone()).collect();
    for i in 0..n {
        packages[i].risk.group_score = aggs[root_of[i]].0;
        packages[i].risk.group = (root_of[i] != i).then(|| names[root_of[i]].clone());
    }
    let mut slots: Vec<Option<PackageReport>> = std::mem::take(packages).into_iter().map(Some).collect();
    *packages = seq.into_iter().map(|i| slots[i].take().expect("each index once")).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::depsdiff::{CapDelta, Capabilities, Evidence, Placement, Side, Tier, Verification, advisories::PackageAdvisories};
    use crate::lockfile::LockedPackage;
    use crate::registry::Origin;
    use crate::surface::Finding;

    fn side(name: &str, v: &str) -> Side {
        Side {
            package: LockedPackage {
                name: name.into(),
                version: semver::Version::parse(v).unwrap(),
                source: Some("registry+https://github.com/rust-lang/crates.io-index".into()),
                checksum: Some("0".repeat(64)),
            },
            verification: Verification::Sha256 { origin: Origin::Network("x".into()) },
            index: None,
            pubtime: None,
        }
    }

    fn gain(c: Capability, scope: Scope) -> CapDelta {
        let finding = Finding { capability: c, scope, file: "src/lib.rs".into(), line: 1, column: 1, path: "p".into(), chain: Vec::new(), expanded_from: None, through_trait: false };
        CapDelta { capability: c, scope, findings: vec![Evidence { finding, hunk: None }] }
    }

    fn pkg(name: &str, change: ChangeKind, gains: Vec<CapDelta>) -> PackageReport {
        let (old, new, semver) = match change {
            ChangeKind::Added => (None, Some(side(name, "1.0.0")), None),
            ChangeKind::Downgraded => (Some(side(name, "1.0.1")), Some(side(name, "1.0.0")), Some(SemverBump::Patch)),
            _ => (Some(side(name, "1.0.0")), Some(side(name, "1.0.1")), Some(SemverBump::Patch)),
        };
        PackageReport {
            name: name.into(),
            change,
            old,
            new,
            semver,
            diff: None,
            lockfiles: vec!["Cargo.lock".into()],
            placement: Placement { built: Some(true), ..Placement::default() },
            flags: Vec::new(),
            capabilities: Capabilities { status: CapStatus::Analysed, added: gains, removed: Vec::new(), note: None },
            tier: Tier::Routine,
            brought_by: Vec::new(),
            brings: Vec::new(),
            squat: None,
            advisories: PackageAdvisories::default(),
            license: (None, None),
            risk: Risk::default(),
            lock_line: None,
            publication: Default::default(),
        }
    }

    fn names(v: &[PackageReport]) -> Vec<&str> {
        v.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn reading_files_outranks_reading_a_variable_whatever_the_names() {
        let mut v = vec![
            pkg("aaa-color", ChangeKind::Upgraded, vec![gain(Capability::EnvRead, Scope::Runtime)]),
            pkg("zzz-files", ChangeKind::Upgraded, vec![gain(Capability::FsRead, Scope::Runtime)]),
        ];
        order(&mut v, false);
        assert_eq!(names(&v), ["zzz-files", "aaa-color"]);
        // Reading and sending is worth more than both parts.
        let both = reasons(&pkg("x", ChangeKind::Added, vec![gain(Capability::FsRead, Scope::Runtime), gain(Capability::NetConnect, Scope::Runtime)]));
        assert!(both.iter().any(|r| r.code == "read-and-send"), "{both:?}");
        // Build time and a patch release weigh more than the same gain at run time in a new package.
        let build = reasons(&pkg("b", ChangeKind::Upgraded, vec![gain(Capability::ProcessSpawn, Scope::Build)]))[0].points;
        let run = reasons(&pkg("r", ChangeKind::Added, vec![gain(Capability::ProcessSpawn, Scope::Runtime)]))[0].points;
        assert!(build > run, "{build} {run}");
    }

    #[test]
    fn a_new_dependency_comes_first_with_what_it_brought_under_it() {
        let mut http = pkg("http", ChangeKind::Upgraded, Vec::new());
        http.brings = vec!["curl".into()];
        let mut curl = pkg("curl", ChangeKind::Added, vec![gain(Capability::NetConnect, Scope::Runtime)]);
        curl.brought_by = vec!["http".into()];
        curl.brings = vec!["curl-sys".into()];
        let mut sys = pkg("curl-sys", ChangeKind::Added, vec![gain(Capability::BuildScript, Scope::Build), gain(Capability::ProcessSpawn, Scope::Build)]);
        sys.brought_by = vec!["curl".into()];
        let mut cc = pkg("cc", ChangeKind::Added, vec![gain(Capability::ProcessSpawn, Scope::Build)]);
        cc.brought_by = vec!["curl-sys".into()];
        // Scores between the introducers and their riskiest new dependencies.
        let middle = pkg("middle", ChangeKind::Upgraded, vec![gain(Capability::FsRead, Scope::Runtime), gain(Capability::EnvRead, Scope::Runtime)]);
        let mut v = vec![cc, middle, sys, curl, http];
        order(&mut v, false);
        let n = names(&v);
        assert!(v[4].risk.score > v[0].risk.score, "middle scores more than http on its own");
        assert!(v[2].risk.score > v[4].risk.score, "but less than curl-sys, which http brought");
        assert_eq!(n, ["http", "curl", "curl-sys", "cc", "middle"], "each package before what it brought");
        assert!(v.iter().filter(|p| p.name != "http" && p.name != "middle").all(|p| p.risk.group.as_deref() == Some("http")));
        assert!(v.iter().find(|p| p.name == "http").unwrap().risk.reasons.iter().any(|r| r.code == "patch-adds-dependencies"));
    }

    #[test]
    fn a_fresh_token_published_patch_outranks_routine_upgrades() {
        use crate::depsdiff::publish::{Publication, Publisher, PublisherCheck, Publishers, Release};
        let publication = |by: Publisher, age: i64| Publication {
            release: Some(Release { time: "t".into(), age, from: "index" }),
            publisher: Some(PublisherCheck::Checked(Publishers { new: by, old: None, trustpub_only: Some(false), earlier_versions: 3, earlier_users: vec!["alice".into()], earlier_trusted: 0 })),
            source: None,
        };
        let fresh = |p: &mut PackageReport| p.flags.push(crate::depsdiff::Flag { kind: FlagKind::Fresh, message: "fresh".into(), evidence: Vec::new() });
        let mut token = pkg("zz-token", ChangeKind::Upgraded, Vec::new());
        token.publication = publication(Publisher::Token(Some("alice".into())), 2 * 3600);
        fresh(&mut token);
        // Its twins: the same release from a trusted-publishing workflow, and an old one.
        let mut trusted = pkg("aa-trusted", ChangeKind::Upgraded, Vec::new());
        trusted.publication = publication(Publisher::Trusted { provider: "github".into(), repository: Some("o/r".into()), run: None }, 2 * 3600);
        fresh(&mut trusted);
        let mut routine = pkg("aa-routine", ChangeKind::Upgraded, vec![gain(Capability::Unsafe, Scope::Runtime)]);
        routine.publication = publication(Publisher::Token(Some("alice".into())), 90 * 86_400);
        let mut v = vec![routine, trusted, token];
        order(&mut v, false);
        assert_eq!(names(&v), ["zz-token", "aa-trusted", "aa-routine"]);
        let codes: Vec<&str> = v[0].risk.reasons.iter().map(|r| r.code).collect();
        assert_eq!(codes, ["fresh", "fresh-token-patch"]);
        assert!(!v[1].risk.reasons.iter().any(|r| r.code == "fresh-token-patch"));
    }

    #[test]
    fn a_package_not_built_never_outranks_a_direct_downgrade() {
        let mut down = pkg("down", ChangeKind::Downgraded, Vec::new());
        down.placement.direct = vec!["app".into()];
        let mut unbuilt = pkg("winonly", ChangeKind::Upgraded, Vec::new());
        unbuilt.placement.built = Some(false);
        unbuilt.flags.push(crate::depsdiff::Flag { kind: FlagKind::NewDependency, message: String::new(), evidence: vec!["x".into()] });
        let mut v = vec![unbuilt, down];
        order(&mut v, false);
        assert_eq!(names(&v), ["down", "winonly"]);
        assert!(v[0].risk.reasons.iter().any(|r| r.code == "direct-downgrade"));
        assert_eq!(v[1].risk.score, 0, "declared dependencies that bring nothing new score nothing");
    }

    #[test]
    fn ties_go_to_evidence_then_lines_never_to_the_name() {
        let a = pkg("aaa", ChangeKind::Upgraded, vec![gain(Capability::FsRead, Scope::Runtime)]);
        let mut b = pkg("bbb", ChangeKind::Upgraded, vec![gain(Capability::FsRead, Scope::Runtime)]);
        let again = b.capabilities.added[0].findings[0].clone();
        b.capabilities.added[0].findings.push(again);
        // Same score, same reasons: the one with more lines to audit first.
        b.diff = Some(crate::diff::diff_trees(None, Some(&[("src/lib.rs".to_string(), b"a\nb\n".to_vec())].into_iter().collect()), &crate::diff::DiffOptions::default()));
        let mut v = vec![a, b];
        order(&mut v, false);
        assert_eq!(v[0].risk.score, v[1].risk.score);
        assert_eq!(names(&v), ["bbb", "aaa"]);
    }

    #[test]
    fn a_build_write_outside_out_dir_is_not_an_out_dir_write() {
        let mut d = gain(Capability::FsWrite, Scope::Build);
        d.findings[0].hunk = Some(crate::diff::Hunk { text: "+ std::fs::write(format!(\"{out_dir}/gen.rs\"), x);\n".into(), changed: true, lines: (1, 1) });
        assert!(writes_only_out_dir(&d));
        d.findings[0].hunk = Some(crate::diff::Hunk { text: "+ std::fs::write(format!(\"{out_dir}/../../../liblzma.o\"), x);\n".into(), changed: true, lines: (1, 1) });
        assert!(!writes_only_out_dir(&d));
    }
}
