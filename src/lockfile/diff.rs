//! Comparing two lockfiles.
//!
//! Packages are matched by name and source identity (crates.io under either protocol is one
//! source; a git source is its URL without the commit), so several versions of one name are
//! paired sensibly: first versions that are semver-compatible with each other, then the rest in
//! version order. What cannot be paired within one source is paired across sources (a
//! source change) and what is left is added or removed.

use std::collections::BTreeMap;

use semver::Version;
use serde::Serialize;

use super::{LockedPackage, Lockfile};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    Added,
    Removed,
    Upgraded,
    Downgraded,
    SourceChanged,
    /// Same name, version and source, but another checksum: other bytes under one name.
    ChecksumChanged,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Upgraded => "upgraded",
            ChangeKind::Downgraded => "downgraded",
            ChangeKind::SourceChanged => "source-changed",
            ChangeKind::ChecksumChanged => "checksum-changed",
        }
    }
}

/// How large a version change is.
///
/// `Major` means semver-incompatible under cargo's rule: the left-most non-zero component
/// changed, so `0.3 -> 0.4` and `0.0.1 -> 0.0.2` are `Major`. Otherwise it names the highest
/// component that changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SemverBump {
    Major,
    Minor,
    Patch,
    PreRelease,
    /// Only build metadata differs.
    Build,
    /// Same version (a source change).
    None,
}

impl SemverBump {
    pub fn between(old: &Version, new: &Version) -> SemverBump {
        let (lo, hi) = if old <= new { (old, new) } else { (new, old) };
        let incompatible = lo.major != hi.major
            || (lo.major == 0 && lo.minor != hi.minor)
            || (lo.major == 0 && lo.minor == 0 && lo.patch != hi.patch);
        if incompatible {
            SemverBump::Major
        } else if lo.minor != hi.minor {
            SemverBump::Minor
        } else if lo.patch != hi.patch {
            SemverBump::Patch
        } else if lo.pre != hi.pre {
            SemverBump::PreRelease
        } else if lo.build != hi.build {
            SemverBump::Build
        } else {
            SemverBump::None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SemverBump::Major => "major",
            SemverBump::Minor => "minor",
            SemverBump::Patch => "patch",
            SemverBump::PreRelease => "pre-release",
            SemverBump::Build => "build",
            SemverBump::None => "none",
        }
    }

    pub fn is_breaking(self) -> bool {
        self == SemverBump::Major
    }
}

/// One package that differs between the two lockfiles.
#[derive(Debug, Clone)]
pub struct Change {
    pub name: String,
    pub kind: ChangeKind,
    pub old: Option<LockedPackage>,
    pub new: Option<LockedPackage>,
    /// For paired changes (upgrade, downgrade, source change).
    pub semver: Option<SemverBump>,
}

/// The compatibility bucket of a version under cargo's caret rule.
fn compat_bucket(v: &Version) -> (u64, u64, u64) {
    match (v.major, v.minor) {
        (0, 0) => (0, 0, v.patch),
        (0, m) => (0, m, 0),
        (m, _) => (m, 0, 0),
    }
}

fn paired(name: &str, old: LockedPackage, new: LockedPackage) -> Change {
    let bump = SemverBump::between(&old.version, &new.version);
    let kind = if old.source_identity() == new.source_identity()
        && old.version == new.version
        && old.source == new.source
        && old.checksum != new.checksum
    {
        ChangeKind::ChecksumChanged
    } else if old.source_identity() != new.source_identity() || old.version == new.version {
        ChangeKind::SourceChanged
    } else if new.version > old.version {
        ChangeKind::Upgraded
    } else {
        ChangeKind::Downgraded
    };
    Change { name: name.to_string(), kind, old: Some(old), new: Some(new), semver: Some(bump) }
}

/// Pair two version-sorted lists: compatible versions first, then the rest in order.
/// Returns the pairs and what was left on each side.
fn pair_versions(
    mut olds: Vec<LockedPackage>,
    mut news: Vec<LockedPackage>,
) -> (Vec<(LockedPackage, LockedPackage)>, Vec<LockedPackage>, Vec<LockedPackage>) {
    olds.sort_by(|a, b| a.version.cmp(&b.version));
    news.sort_by(|a, b| a.version.cmp(&b.version));
    let mut pairs = Vec::new();
    let mut rest_old = Vec::new();
    for o in olds {
        let bucket = compat_bucket(&o.version);
        if let Some(i) = news.iter().position(|n| compat_bucket(&n.version) == bucket) {
            pairs.push((o, news.remove(i)));
        } else {
            rest_old.push(o);
        }
    }
    let n = rest_old.len().min(news.len());
    let left_old = rest_old.split_off(n);
    let left_new = news.split_off(n);
    pairs.extend(rest_old.into_iter().zip(news));
    (pairs, left_old, left_new)
}

/// The packages that differ between `old` and `new`, sorted by name, then old version, then
/// new version.
pub fn diff_lockfiles(old: &Lockfile, new: &Lockfile) -> Vec<Change> {
    type Side = BTreeMap<String, Vec<LockedPackage>>;
    let group = |l: &Lockfile| {
        let mut m: Side = BTreeMap::new();
        for p in &l.packages {
            m.entry(p.name.clone()).or_default().push(p.clone());
        }
        m
    };
    let (mut a, mut b) = (group(old), group(new));
    let names: std::collections::BTreeSet<String> = a.keys().chain(b.keys()).cloned().collect();
    let mut changes = Vec::new();
    for name in names {
        let mut olds = a.remove(&name).unwrap_or_default();
        let mut news = b.remove(&name).unwrap_or_default();
        // Identical entries are unchanged: same version and the same source (crates.io under
        // either protocol is one source; a git source must also name the same commit).
        let same = |o: &LockedPackage, n: &LockedPackage| {
            o.version == n.version
                && o.checksum == n.checksum
                && (o.source == n.source || (o.is_registry() && o.source_identity() == n.source_identity()))
        };
        olds.retain(|o| {
            if let Some(i) = news.iter().position(|n| same(o, n)) {
                news.remove(i);
                false
            } else {
                true
            }
        });
        // The same version under one name in another place is a move (or other bytes), and
        // pairs before any version change does.
        let mut moved = Vec::new();
        olds.retain(|o| {
            if let Some(i) = news.iter().position(|n| n.version == o.version) {
                moved.push((o.clone(), news.remove(i)));
                false
            } else {
                true
            }
        });
        changes.extend(moved.into_iter().map(|(o, n)| paired(&name, o, n)));
        // Within each source identity.
        let mut by_source: BTreeMap<String, (Vec<LockedPackage>, Vec<LockedPackage>)> = BTreeMap::new();
        for o in olds {
            by_source.entry(o.source_identity()).or_default().0.push(o);
        }
        for n in news {
            by_source.entry(n.source_identity()).or_default().1.push(n);
        }
        let (mut left_old, mut left_new) = (Vec::new(), Vec::new());
        for (_, (o, n)) in by_source {
            let (pairs, lo, ln) = pair_versions(o, n);
            changes.extend(pairs.into_iter().map(|(o, n)| paired(&name, o, n)));
            left_old.extend(lo);
            left_new.extend(ln);
        }
        // Across sources: a package that moved.
        let (pairs, lo, ln) = pair_versions(left_old, left_new);
        changes.extend(pairs.into_iter().map(|(o, n)| paired(&name, o, n)));
        changes.extend(lo.into_iter().map(|o| Change {
            name: name.clone(),
            kind: ChangeKind::Removed,
            old: Some(o),
            new: None,
            semver: None,
        }));
        changes.extend(ln.into_iter().map(|n| Change {
            name: name.clone(),
            kind: ChangeKind::Added,
            old: None,
            new: Some(n),
            semver: None,
        }));
    }
    changes.sort_by(|x, y| {
        let v = |p: &Option<LockedPackage>| p.as_ref().map(|p| p.version.clone());
        (&x.name, v(&x.old), v(&x.new)).cmp(&(&y.name, v(&y.old), v(&y.new)))
    });
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, v: &str, source: Option<&str>) -> LockedPackage {
        LockedPackage {
            name: name.into(),
            version: v.parse().unwrap(),
            source: source.map(str::to_string),
            checksum: None,
        }
    }
    const CIO: Option<&str> = Some("registry+https://github.com/rust-lang/crates.io-index");
    const SPARSE_CIO: Option<&str> = Some("sparse+https://index.crates.io/");
    const OTHER: Option<&str> = Some("sparse+https://mirror.example/index/");

    fn lock(p: Vec<LockedPackage>) -> Lockfile {
        Lockfile { version: 3, packages: p }
    }

    fn kinds(c: &[Change]) -> Vec<(String, &'static str)> {
        c.iter().map(|c| (c.name.clone(), c.kind.as_str())).collect()
    }

    #[test]
    fn each_change_kind() {
        let old = lock(vec![
            pkg("same", "1.0.0", CIO),
            pkg("up", "1.0.0", CIO),
            pkg("down", "2.1.0", CIO),
            pkg("gone", "0.1.0", CIO),
            pkg("moved", "1.0.0", CIO),
            pkg("g", "0.1.0", Some("git+https://example.com/g#aaa")),
        ]);
        let new = lock(vec![
            pkg("same", "1.0.0", SPARSE_CIO),
            pkg("up", "1.2.0", CIO),
            pkg("down", "2.0.0", CIO),
            pkg("fresh", "3.0.0", CIO),
            pkg("moved", "1.0.0", OTHER),
            pkg("g", "0.1.0", Some("git+https://example.com/g#bbb")),
        ]);
        let c = diff_lockfiles(&old, &new);
        assert_eq!(
            kinds(&c),
            vec![
                ("down".into(), "downgraded"),
                ("fresh".into(), "added"),
                ("g".into(), "source-changed"),
                ("gone".into(), "removed"),
                ("moved".into(), "source-changed"),
                ("up".into(), "upgraded"),
            ]
        );
        assert_eq!(c[5].semver, Some(SemverBump::Minor));
    }

    #[test]
    fn same_version_elsewhere_pairs_before_a_version_change() {
        let old = lock(vec![pkg("ii", "1.0.0", CIO)]);
        let new = lock(vec![pkg("ii", "1.0.0", Some("git+https://evil.example/ii#abc")), pkg("ii", "2.0.0", CIO)]);
        let c = diff_lockfiles(&old, &new);
        assert_eq!(kinds(&c), vec![("ii".into(), "added"), ("ii".into(), "source-changed")]);
        assert_eq!(c[0].new.as_ref().unwrap().version.to_string(), "2.0.0");
    }

    #[test]
    fn other_bytes_under_the_same_version_are_a_change() {
        let mut a = pkg("dd", "1.0.0", CIO);
        a.checksum = Some("a".repeat(64));
        let mut b = a.clone();
        b.checksum = Some("b".repeat(64));
        let c = diff_lockfiles(&lock(vec![a]), &lock(vec![b]));
        assert_eq!(kinds(&c), vec![("dd".into(), "checksum-changed")]);
    }

    #[test]
    fn crates_io_protocols_are_one_source() {
        let old = lock(vec![pkg("a", "1.0.0", CIO)]);
        let new = lock(vec![pkg("a", "1.0.1", SPARSE_CIO)]);
        let c = diff_lockfiles(&old, &new);
        assert_eq!(kinds(&c), vec![("a".into(), "upgraded")]);
    }

    #[test]
    fn several_versions_of_one_name_pair_by_compatibility() {
        let old = lock(vec![pkg("s", "0.8.1", CIO), pkg("s", "1.0.3", CIO), pkg("s", "2.0.0", CIO)]);
        let new = lock(vec![pkg("s", "1.0.9", CIO), pkg("s", "0.8.5", CIO), pkg("s", "3.0.0", CIO)]);
        let c = diff_lockfiles(&old, &new);
        let pairs: Vec<_> = c
            .iter()
            .map(|c| (c.old.as_ref().unwrap().version.to_string(), c.new.as_ref().unwrap().version.to_string()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("0.8.1".to_string(), "0.8.5".to_string()),
                ("1.0.3".to_string(), "1.0.9".to_string()),
                ("2.0.0".to_string(), "3.0.0".to_string()),
            ]
        );
        assert_eq!(c[2].semver, Some(SemverBump::Major));
        assert!(c.iter().all(|c| c.kind == ChangeKind::Upgraded));
    }

    #[test]
    fn extra_version_is_added_not_paired_across_majors_needlessly() {
        let old = lock(vec![pkg("s", "1.0.0", CIO)]);
        let new = lock(vec![pkg("s", "1.0.0", CIO), pkg("s", "2.0.0", CIO)]);
        let c = diff_lockfiles(&old, &new);
        assert_eq!(kinds(&c), vec![("s".into(), "added")]);
    }

    #[test]
    fn semver_rules() {
        let b = |a: &str, b: &str| SemverBump::between(&a.parse().unwrap(), &b.parse().unwrap());
        assert_eq!(b("1.2.3", "2.0.0"), SemverBump::Major);
        assert_eq!(b("1.2.3", "1.3.0"), SemverBump::Minor);
        assert_eq!(b("1.2.3", "1.2.4"), SemverBump::Patch);
        assert_eq!(b("0.3.1", "0.4.0"), SemverBump::Major);
        assert_eq!(b("0.3.1", "0.3.2"), SemverBump::Patch);
        assert_eq!(b("0.0.1", "0.0.2"), SemverBump::Major);
        assert_eq!(b("1.0.0-alpha.1", "1.0.0-alpha.2"), SemverBump::PreRelease);
        assert_eq!(b("1.0.0+a", "1.0.0+b"), SemverBump::Build);
        assert_eq!(b("2.0.0", "1.9.0"), SemverBump::Major);
        assert!(SemverBump::Major.is_breaking() && !SemverBump::Minor.is_breaking());
    }
}
