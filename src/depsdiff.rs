//! `velaris deps-diff`: review a lockfile change end to end.
//!
//! This module owns the pipeline behind the command, from a resolved configuration to a
//! [`Report`]: read the two lockfiles (git revisions or files), diff them, fetch every
//! registry package on both sides through [`crate::registry`] (which checks each sha256 against
//! the lockfile before handing bytes over), unpack them in memory with [`crate::package`],
//! compare the trees with [`crate::diff`], and only then let the fetched bytes into the cache.
//! It renders nothing (see [`crate::report`]) and parses no arguments (see [`crate::cli`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::diff::{DiffOptions, PackageDiff, diff_trees};
use crate::git::{GitError, Repo};
use crate::lockfile::{self, Change, ChangeKind, LockError, LockedPackage, Lockfile, SemverBump};
use crate::package::{self, ArchiveError, Limits};
use crate::registry::{BatchError, FetchOptions, Fetched, Fetcher, Origin, PackageRef};

/// Where the two lockfiles come from.
#[derive(Debug, Clone)]
pub enum Input {
    /// `BASE..HEAD`, or `BASE..` against the work tree when `head` is `None`.
    Git {
        base: String,
        head: Option<String>,
        /// Lockfile paths relative to the repository root; empty means every tracked
        /// `Cargo.lock` the range changes.
        lockfiles: Vec<String>,
    },
    /// Two files on disk.
    Files { old: PathBuf, new: PathBuf },
}

/// The resolved configuration the pipeline runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub input: Input,
    /// Where cargo configuration is looked up from (and git is run in).
    pub cwd: PathBuf,
    pub fetch: FetchOptions,
    pub diff: DiffOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum DepsDiffError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("failed to read {path}")]
    Read { path: String, source: std::io::Error },
    #[error(transparent)]
    File(#[from] crate::fsio::FileError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Fetch(#[from] BatchError),
    #[error("rejected the archive of {name} {version} from {origin}")]
    Archive { name: String, version: String, origin: String, source: Box<ArchiveError> },
}

impl DepsDiffError {
    /// Digest mismatches and archives that break the unpacking rules.
    pub fn is_integrity(&self) -> bool {
        match self {
            DepsDiffError::Fetch(b) => b.is_integrity(),
            DepsDiffError::Archive { .. } => true,
            _ => false,
        }
    }
}

/// One side of a package change, as reported.
#[derive(Debug, Clone)]
pub struct Side {
    pub package: LockedPackage,
    /// The bytes were fetched and their sha256 matched the lockfile.
    pub verified: bool,
    /// Where the verified bytes came from.
    pub origin: Option<Origin>,
    /// Why the package could not be verified, when it was not.
    pub unverifiable: Option<&'static str>,
}

/// One package change with its content diff.
#[derive(Debug, Clone)]
pub struct PackageReport {
    pub name: String,
    pub change: ChangeKind,
    pub old: Option<Side>,
    pub new: Option<Side>,
    pub semver: Option<SemverBump>,
    /// `None` when neither side could be fetched (git and path packages).
    pub diff: Option<PackageDiff>,
    /// Lockfiles (by label) in which this change appears.
    pub lockfiles: Vec<String>,
}

impl PackageReport {
    pub fn audit_lines(&self) -> u64 {
        self.diff.as_ref().map_or(0, |d| d.audit_lines)
    }
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    pub base: String,
    pub head: String,
    /// Each lockfile compared, by label, with its format versions.
    pub lockfiles: Vec<String>,
    pub packages: Vec<PackageReport>,
    /// The lockfiles were two files (`--old`/`--new`), not git revisions.
    pub from_files: bool,
}

impl Report {
    pub fn audit_lines(&self) -> u64 {
        self.packages.iter().map(PackageReport::audit_lines).sum()
    }
}

struct LockPair {
    label: String,
    old: Lockfile,
    new: Lockfile,
}

fn empty_lockfile() -> Lockfile {
    Lockfile { version: 4, packages: Vec::new() }
}

fn parse(text: Option<String>, origin: &str) -> Result<Lockfile, DepsDiffError> {
    match text {
        Some(t) => Ok(lockfile::parse_lockfile(&t, origin)?),
        None => Ok(empty_lockfile()),
    }
}

fn read_file(path: &Path) -> Result<String, DepsDiffError> {
    Ok(crate::fsio::read_text(path, crate::fsio::TEXT_CAP, "a lockfile")?)
}

/// Load the lockfile pairs the input names, with labels for base and head.
fn load(config: &Config) -> Result<(String, String, Vec<LockPair>), DepsDiffError> {
    match &config.input {
        Input::Files { old, new } => {
            let (o, n) = (old.display().to_string(), new.display().to_string());
            let pair = LockPair {
                label: n.clone(),
                old: parse(Some(read_file(old)?), &o)?,
                new: parse(Some(read_file(new)?), &n)?,
            };
            Ok((o, n, vec![pair]))
        }
        Input::Git { base, head, lockfiles } => {
            let repo = Repo::discover(&config.cwd)?;
            let base_commit = repo.resolve(base)?;
            let head_commit = head.as_deref().map(|h| repo.resolve(h)).transpose()?;
            let paths = if lockfiles.is_empty() {
                repo.changed_lockfiles(&base_commit, head_commit.as_deref())?
            } else {
                lockfiles.clone()
            };
            let head_label = head.clone().unwrap_or_else(|| "work tree".to_string());
            let mut pairs = Vec::new();
            for path in paths {
                let old_text = repo.read_at(&base_commit, &path)?;
                let new_text = match &head_commit {
                    Some(c) => repo.read_at(c, &path)?,
                    None => {
                        // A work-tree lockfile that is a link out of the repository is refused.
                        let full = repo.root().join(&path);
                        crate::fsio::contained(repo.root(), &full)?;
                        if full.exists() { Some(read_file(&full)?) } else { None }
                    }
                };
                if old_text.is_none() && new_text.is_none() {
                    return Err(DepsDiffError::Usage(format!(
                        "{path} exists neither at {base} nor at {head_label}"
                    )));
                }
                let old = parse(old_text, &format!("{base}:{path}"))?;
                let new = parse(new_text, &format!("{head_label}:{path}"))?;
                pairs.push(LockPair { label: path, old, new });
            }
            Ok((base.clone(), head_label, pairs))
        }
    }
}

fn package_ref(p: &LockedPackage) -> Option<PackageRef> {
    if !p.is_registry() {
        return None;
    }
    Some(PackageRef {
        name: p.name.clone(),
        version: p.version.to_string(),
        source: p.source.clone()?,
        checksum: p.checksum.clone()?,
    })
}

fn unverifiable_reason(p: &LockedPackage) -> Option<&'static str> {
    match p.source_kind() {
        lockfile::SourceKind::Git { .. } => Some("git source: Cargo.lock records no checksum"),
        lockfile::SourceKind::Local => Some("local path: Cargo.lock records no checksum"),
        _ if p.checksum.is_none() => Some("Cargo.lock records no checksum for it"),
        _ => None,
    }
}

type Key = (String, String, String); // name, version, checksum

/// A change by (name, old "version source", new "version source"), with the lockfiles it is in.
type ChangeMap = BTreeMap<(String, Option<String>, Option<String>), (Change, Vec<String>)>;

fn key(r: &PackageRef) -> Key {
    (r.name.clone(), r.version.clone(), r.checksum.clone())
}

/// Run the pipeline.
pub fn run(config: &Config) -> Result<Report, DepsDiffError> {
    let (base, head, pairs) = load(config)?;

    // Changes across all lockfiles; one change found in several lockfiles is one review.
    let mut changes: ChangeMap = BTreeMap::new();
    for pair in &pairs {
        for c in lockfile::diff_lockfiles(&pair.old, &pair.new) {
            // The checksum is part of the identity: the same version with other bytes in
            // another lockfile is another package to verify.
            let id = |p: &Option<LockedPackage>| {
                p.as_ref().map(|p| {
                    format!("{} {} {}", p.version, p.source.as_deref().unwrap_or(""), p.checksum.as_deref().unwrap_or(""))
                })
            };
            let k = (c.name.clone(), id(&c.old), id(&c.new));
            changes.entry(k).or_insert_with(|| (c, Vec::new())).1.push(pair.label.clone());
        }
    }

    // Every registry package on either side, once.
    let mut refs: BTreeMap<Key, PackageRef> = BTreeMap::new();
    for (c, _) in changes.values() {
        for p in [&c.old, &c.new].into_iter().flatten() {
            if let Some(r) = package_ref(p) {
                refs.entry(key(&r)).or_insert(r);
            }
        }
    }
    let refs: Vec<PackageRef> = refs.into_values().collect();
    let (fetcher, fetched) = if refs.is_empty() {
        (None, BTreeMap::new())
    } else {
        let (f, map) = fetch(config, &refs)?;
        (Some(f), map)
    };

    // Unpack and diff, in parallel over changes; trees are dropped as soon as a diff is done.
    let work: Vec<(Change, Vec<String>)> = changes.into_values().collect();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let results = parallel_map(&work, cpus, |(change, labels)| {
        report_one(change, labels, &fetched, &config.diff)
    });
    let mut packages = Vec::with_capacity(results.len());
    for r in results {
        packages.push(r?);
    }
    // Only now, with every archive accepted, may downloaded bytes enter the cache.
    if let Some(fetcher) = &fetcher {
        for r in &refs {
            let f = &fetched[&key(r)];
            if matches!(f.origin, Origin::Network(_)) {
                // A cache that cannot be written costs speed next time, not correctness.
                if let Err(e) = fetcher.store(r, &f.bytes) {
                    eprintln!("warning: could not cache {} {}: {}", r.name, r.version, crate::message::chain(&e));
                }
            }
        }
    }
    // Sorted by name, then versions in semver order (the map above sorted by strings).
    packages.sort_by(|a, b| {
        let v = |s: &Option<Side>| s.as_ref().map(|s| s.package.version.clone());
        (&a.name, v(&a.old), v(&a.new)).cmp(&(&b.name, v(&b.old), v(&b.new)))
    });
    let lockfiles = pairs.iter().map(|p| p.label.clone()).collect();
    let from_files = matches!(config.input, Input::Files { .. });
    Ok(Report { base, head, lockfiles, packages, from_files })
}

/// Fetch every package; any digest mismatch stops the run, and so does any other failure
/// (every failing package is named, not only the first).
fn fetch(config: &Config, refs: &[PackageRef]) -> Result<(Fetcher, BTreeMap<Key, Fetched>), DepsDiffError> {
    let fetcher = Fetcher::new(&config.cwd, config.fetch.clone()).map_err(|e| BatchError::Fetch(vec![e]))?;
    let fetched = fetcher.fetch_verified(refs)?;
    let map = refs.iter().map(key).zip(fetched).collect();
    Ok((fetcher, map))
}

fn unpack(p: &LockedPackage, f: &Fetched) -> Result<package::FileTree, DepsDiffError> {
    let limits = Limits::for_compressed(f.bytes.len() as u64);
    package::unpack_crate(&f.bytes, &p.name, &p.version.to_string(), &limits)
        .map(|u| u.files)
        .map_err(|source| DepsDiffError::Archive {
            name: p.name.clone(),
            version: p.version.to_string(),
            origin: f.origin.to_string(),
            source: Box::new(source),
        })
}

fn side<'a>(p: &LockedPackage, fetched: &'a BTreeMap<Key, Fetched>) -> (Side, Option<&'a Fetched>) {
    let f = package_ref(p).and_then(|r| fetched.get(&key(&r)));
    let s = Side {
        package: p.clone(),
        verified: f.is_some(),
        origin: f.map(|f| f.origin.clone()),
        unverifiable: if f.is_some() { None } else { unverifiable_reason(p) },
    };
    (s, f)
}

fn report_one(
    change: &Change,
    labels: &[String],
    fetched: &BTreeMap<Key, Fetched>,
    opts: &DiffOptions,
) -> Result<PackageReport, DepsDiffError> {
    let old = change.old.as_ref().map(|p| side(p, fetched));
    let new = change.new.as_ref().map(|p| side(p, fetched));
    let old_tree = match &old {
        Some((s, Some(f))) => Some(unpack(&s.package, f)?),
        _ => None,
    };
    let new_tree = match &new {
        Some((s, Some(f))) => Some(unpack(&s.package, f)?),
        _ => None,
    };
    // A diff needs every side that exists to be readable: a git package on one side of a
    // source change cannot be compared, and is not shown as if it were all new.
    let complete = old.as_ref().is_none_or(|(_, f)| f.is_some()) && new.as_ref().is_none_or(|(_, f)| f.is_some());
    let diff = if complete && (old_tree.is_some() || new_tree.is_some()) {
        Some(diff_trees(old_tree.as_ref(), new_tree.as_ref(), opts))
    } else {
        None
    };
    Ok(PackageReport {
        name: change.name.clone(),
        change: change.kind,
        old: old.map(|(s, _)| s),
        new: new.map(|(s, _)| s),
        semver: change.semver,
        diff,
        lockfiles: labels.to_vec(),
    })
}

/// Map `f` over `items` on up to `jobs` threads, keeping the order.
pub(crate) fn parallel_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let workers = jobs.min(items.len()).max(1);
    let done: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= items.len() {
                            break out;
                        }
                        out.push((i, f(&items[i])));
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
    });
    for (i, r) in done.into_iter().flatten() {
        slots[i] = Some(r);
    }
    slots.into_iter().map(|r| r.expect("every item mapped")).collect()
}
