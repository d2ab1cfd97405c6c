//! `velaris deps-diff`: review a lockfile change end to end.
//!
//! This module owns the pipeline behind the command, from a resolved configuration to a
//! [`Report`]: read the two lockfiles (git revisions or files), diff them, fetch every
//! registry package on both sides through [`crate::registry`] (which checks each sha256 against
//! the lockfile before handing bytes over) and every git package through [`crate::gitdeps`]
//! (at its locked commit, identity checked by the commit id), unpack them in memory with
//! [`crate::package`], compare the trees with [`crate::diff`] and flag what a reviewer must
//! see first ([`flags`]), run the surface engine on the workspace at base and at head to say
//! which packages are built, where they sit and what each change does to capabilities
//! ([`capabilities`]), order the packages by risk ([`review`]), and only then let the fetched
//! bytes into the cache. It renders nothing (see [`crate::report`]) and parses no arguments
//! (see [`crate::cli`]).

pub mod advisories;
mod capabilities;
pub mod flags;
pub mod lockgraph;
pub mod publish;
pub mod review;
pub mod risk;
pub mod signals;
pub mod squat;
mod workspaces;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diff::{DiffOptions, PackageDiff, diff_trees};
use crate::git::{GitError, Repo};
use crate::gitdeps::{self, GitOptions, GitPackage};
use crate::lockfile::{self, Change, ChangeKind, LockError, LockedPackage, Lockfile, SemverBump, SourceKind};
use crate::package::{self, ArchiveError, FileTree, Limits};
use crate::registry::api::{CrateFacts, CratesIoApi, NotChecked};
use crate::registry::{BatchError, FetchOptions, Fetcher, IndexEntry, IndexStatus, Origin, PackageRef};
use crate::surface::engine::{SourceStore, SurfaceError};
use crate::surface::{Capability, Scope};
use crate::workspace::PackageId;

pub use capabilities::{BaselineEffect, BaselineState, CapDelta, Evidence, Placement, ProgramEffect, cap_rank};
pub use flags::{Flag, FlagKind};
pub use review::Tier;

use capabilities::{GraphMode, Side as RunSide};
pub use workspaces::{WorkspaceDir, materialize};

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
    /// The targets what is built is computed for (at least one).
    pub targets: Vec<String>,
    /// Count packages built for none of the targets in the audit cost.
    pub all_targets: bool,
    /// Analyse capabilities (the graph is resolved either way).
    pub capabilities: bool,
    /// A local copy of the RustSec advisory database.
    pub advisory_db: Option<PathBuf>,
    /// Release ages, publishers and `--verify-source`.
    pub publication: publish::Options,
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
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Advisories(#[from] advisories::AdvisoryError),
}

impl DepsDiffError {
    /// Digest mismatches and archives that break the unpacking rules.
    pub fn is_integrity(&self) -> bool {
        match self {
            DepsDiffError::Fetch(b) => b.is_integrity(),
            DepsDiffError::Archive { .. } => true,
            DepsDiffError::Surface(s) => s.is_integrity(),
            _ => false,
        }
    }
}

/// How one side's contents were verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// The `.crate` bytes' sha256 equals the lockfile checksum.
    Sha256 { origin: Origin },
    /// A git package read at the locked commit (the commit id names the whole tree).
    Commit { commit: String, path: String },
    /// Not read, and why.
    Unverifiable(String),
}

/// One side of a package change, as reported.
#[derive(Debug, Clone)]
pub struct Side {
    pub package: LockedPackage,
    pub verification: Verification,
    /// What the registry index says of this version (new registry sides, online only).
    pub index: Option<IndexStatus>,
    /// When the index says this version was published (`pubtime`; new registry sides, online
    /// only, versions published since 2025).
    pub pubtime: Option<String>,
}

impl Side {
    /// The contents were read and verified (by sha256 or by commit id).
    pub fn verified(&self) -> bool {
        !matches!(self.verification, Verification::Unverifiable(_))
    }

    pub fn sha256_verified(&self) -> bool {
        matches!(self.verification, Verification::Sha256 { .. })
    }

    pub fn origin(&self) -> Option<&Origin> {
        match &self.verification {
            Verification::Sha256 { origin } => Some(origin),
            _ => None,
        }
    }

    pub fn unverifiable(&self) -> Option<&str> {
        match &self.verification {
            Verification::Unverifiable(why) => Some(why),
            _ => None,
        }
    }

    /// A workspace member or path dependency: its source is in the repository and is reviewed
    /// with it, so there is nothing to verify and it raises no integrity concern.
    pub fn is_local(&self) -> bool {
        self.package.source_kind() == SourceKind::Local
    }

    /// Could not be verified, and should have been (not a local package).
    pub fn unverified(&self) -> bool {
        !self.verified() && !self.is_local()
    }
}

/// Whether and how a package's capabilities were compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapStatus {
    /// Both sides (those that exist) were analysed.
    Analysed,
    /// Not built for any analysed target: not analysed.
    NotBuilt,
    /// A side could not be read or analysed: never "no change".
    Unknown(String),
    /// The capability analysis was switched off.
    Off,
}

/// What a change does to capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    pub status: CapStatus,
    /// Gained (capability, scope) pairs, most serious first, each with its findings and hunks.
    pub added: Vec<CapDelta>,
    pub removed: Vec<CapDelta>,
    /// A remark, such as "not built at base".
    pub note: Option<String>,
}

/// One package change with its content diff and review.
#[derive(Debug, Clone)]
pub struct PackageReport {
    pub name: String,
    pub change: ChangeKind,
    pub old: Option<Side>,
    pub new: Option<Side>,
    pub semver: Option<SemverBump>,
    /// `None` when a side could not be read.
    pub diff: Option<PackageDiff>,
    /// Lockfiles (by label) in which this change appears.
    pub lockfiles: Vec<String>,
    /// Where the package sits (head's graph; base's for a removed package).
    pub placement: Placement,
    /// What a reviewer must see first, most urgent first.
    pub flags: Vec<Flag>,
    pub capabilities: Capabilities,
    /// Its place in the review order.
    pub tier: Tier,
    /// For a package the change adds: the changed packages whose new version depends on it
    /// where the old one did not (from the lockfiles).
    pub brought_by: Vec<String>,
    /// The packages this change adds that this package brought.
    pub brings: Vec<String>,
    /// A name that imitates a popular crate's (added packages new to the graph).
    pub squat: Option<squat::Squat>,
    /// What the advisory database says of the versions (empty without `--advisory-db`).
    pub advisories: advisories::PackageAdvisories,
    /// The `license` of each side, as the manifests say (`None`: none said, or not read).
    pub license: (Option<String>, Option<String>),
    /// Its score and the reasons for it (docs/review.md).
    pub risk: risk::Risk,
    /// Where its entry is: (lockfile, line of `name = ...`) of the side that exists at head
    /// (at base for a removed package), in the first lockfile it is in.
    pub lock_line: Option<(String, u32)>,
    /// When and by whom the new version was published, and its source compared with its
    /// repository (`--verify-source`).
    pub publication: publish::Publication,
}

impl PackageReport {
    pub fn audit_lines(&self) -> u64 {
        self.diff.as_ref().map_or(0, |d| d.audit_lines)
    }

    /// Built for an analysed target, or the graph is unknown.
    pub fn built(&self) -> bool {
        self.placement.built != Some(false)
    }

    pub fn has(&self, kind: FlagKind) -> bool {
        self.flags.iter().any(|f| f.kind == kind)
    }

    /// "name old -> new", "name version".
    pub fn title(&self) -> String {
        let v = |s: &Option<Side>| s.as_ref().map(|s| s.package.version.to_string());
        match (v(&self.old), v(&self.new)) {
            (Some(o), Some(n)) if o != n => format!("{} {o} -> {n}", self.name),
            (Some(o), Some(_)) => format!("{} {o}", self.name),
            (Some(x), None) | (None, Some(x)) => format!("{} {x}", self.name),
            (None, None) => self.name.clone(),
        }
    }
}

/// How much of the change the capability analysis covered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub enabled: bool,
    /// Changed packages whose capabilities are compared: built ones (all, when the graph is
    /// unknown).
    pub in_scope: usize,
    pub analysed: usize,
    /// "name version" and why, for each in-scope package not analysed.
    pub unknown: Vec<(String, String)>,
}

/// What was verified, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// Registry package sides whose sha256 matched, of all registry sides.
    pub sha256: usize,
    pub sha256_total: usize,
    /// Git package sides read at their locked commit, of all git sides.
    pub commits: usize,
    pub commits_total: usize,
    /// Each side that could not be verified, once: ("name version", why).
    pub unverifiable: Vec<(String, String)>,
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    pub base: String,
    pub head: String,
    /// Each lockfile compared, by label.
    pub lockfiles: Vec<String>,
    /// In review order: by risk (see [`Tier`]), then name.
    pub packages: Vec<PackageReport>,
    /// The lockfiles were two files (`--old`/`--new`), not git revisions.
    pub from_files: bool,
    /// The targets what is built was computed for.
    pub targets: Vec<String>,
    /// Unbuilt packages count in the audit cost.
    pub all_targets: bool,
    /// Lockfiles whose graph is unknown, and why (everything counts for them).
    pub graph_unknown: Vec<(String, String)>,
    pub programs: Vec<ProgramEffect>,
    pub baselines: Vec<BaselineEffect>,
    pub coverage: Coverage,
    pub verified: Verified,
    /// The advisory database used, when one was given.
    pub advisory_db: Option<AdvisoryDbInfo>,
    /// The headline's sentence on the top risk.
    pub top_risk: Option<String>,
    /// What release ages are measured against, the cooldown, and what was asked.
    pub publication: publish::Summary,
}

/// Which advisory database the review used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvisoryDbInfo {
    pub path: String,
    /// Its git commit, when it is a checkout.
    pub commit: Option<String>,
    /// Advisories loaded (withdrawn ones left out).
    pub advisories: usize,
}

impl Report {
    /// The audit cost: lines to review in packages built for an analysed target (all with
    /// `--all-targets`).
    pub fn audit_lines(&self) -> u64 {
        self.packages.iter().filter(|p| self.all_targets || p.built()).map(PackageReport::audit_lines).sum()
    }

    /// Lines in packages built for no analysed target.
    pub fn audit_lines_not_built(&self) -> u64 {
        self.packages.iter().filter(|p| !p.built()).map(PackageReport::audit_lines).sum()
    }

    /// The graph is known for every lockfile.
    pub fn graph_known(&self) -> bool {
        self.graph_unknown.is_empty()
    }
}

struct LockPair {
    label: String,
    old: Lockfile,
    new: Lockfile,
    old_text: Option<String>,
    new_text: Option<String>,
    /// The graphs the two lockfiles record (empty for a side that does not exist).
    old_view: lockgraph::LockView,
    new_view: lockgraph::LockView,
}

impl LockPair {
    fn new(label: String, old: Lockfile, new: Lockfile, old_text: Option<String>, new_text: Option<String>) -> LockPair {
        let view = |t: &Option<String>| t.as_deref().and_then(|t| lockgraph::LockView::parse(t, &label)).unwrap_or_default();
        let (old_view, new_view) = (view(&old_text), view(&new_text));
        LockPair { label, old, new, old_text, new_text, old_view, new_view }
    }
}

/// Where each side's workspace comes from.
enum Sides {
    Files,
    Git { repo: Repo, base: String, head: Option<String> },
}

fn empty_lockfile() -> Lockfile {
    Lockfile { version: 4, packages: Vec::new() }
}

fn parse(text: Option<&str>, origin: &str) -> Result<Lockfile, DepsDiffError> {
    match text {
        Some(t) => Ok(lockfile::parse_lockfile(t, origin)?),
        None => Ok(empty_lockfile()),
    }
}

fn read_file(path: &Path) -> Result<String, DepsDiffError> {
    Ok(crate::fsio::read_text(path, crate::fsio::TEXT_CAP, "a lockfile")?)
}

/// Load the lockfile pairs the input names, with labels for base and head.
fn load(config: &Config) -> Result<(String, String, Vec<LockPair>, Sides), DepsDiffError> {
    match &config.input {
        Input::Files { old, new } => {
            let (o, n) = (old.display().to_string(), new.display().to_string());
            let (ot, nt) = (read_file(old)?, read_file(new)?);
            let pair = LockPair::new(n.clone(), parse(Some(&ot), &o)?, parse(Some(&nt), &n)?, Some(ot), Some(nt));
            Ok((o, n, vec![pair], Sides::Files))
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
                        let full = repo.root().join(&path);
                        // A work-tree lockfile that is a link out of the repository is refused.
                        if full.exists() {
                            crate::fsio::contained(repo.root(), &full)?;
                            Some(read_file(&full)?)
                        } else {
                            None
                        }
                    }
                };
                if old_text.is_none() && new_text.is_none() {
                    return Err(DepsDiffError::Usage(format!(
                        "{path} exists neither at {base} nor at {head_label}"
                    )));
                }
                let old = parse(old_text.as_deref(), &format!("{base}:{path}"))?;
                let new = parse(new_text.as_deref(), &format!("{head_label}:{path}"))?;
                pairs.push(LockPair::new(path, old, new, old_text, new_text));
            }
            let sides = Sides::Git { repo, base: base_commit, head: head_commit };
            Ok((base.clone(), head_label, pairs, sides))
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

fn package_id(p: &LockedPackage) -> PackageId {
    PackageId { name: p.name.clone(), version: p.version.to_string(), source: p.source.clone(), checksum: p.checksum.clone() }
}

fn unverifiable_reason(p: &LockedPackage) -> String {
    match p.source_kind() {
        SourceKind::Git { .. } => "git source: Cargo.lock records no checksum".into(),
        SourceKind::Local => "local path: Cargo.lock records no checksum".into(),
        _ if p.checksum.is_none() => "Cargo.lock records no checksum for it".into(),
        _ => "not fetched".into(),
    }
}

type Key = (String, String, String); // name, version, checksum

/// A change by (name, old "version source", new "version source"), with the lockfiles it is in.
type ChangeMap = BTreeMap<(String, Option<String>, Option<String>), (Change, Vec<String>)>;

fn key(r: &PackageRef) -> Key {
    (r.name.clone(), r.version.clone(), r.checksum.clone())
}

/// A git package by (source, name, version).
type GitKey = (String, String, String);

fn git_key(p: &LockedPackage) -> Option<GitKey> {
    matches!(p.source_kind(), SourceKind::Git { .. }).then(|| (p.source.clone().unwrap_or_default(), p.name.clone(), p.version.to_string()))
}

/// Verified `.crate` bytes, shared with the engine's source store, and where they came from.
struct VerifiedBytes {
    bytes: Arc<Vec<u8>>,
    origin: Origin,
}

/// Everything fetched, by identity.
struct Fetchedset {
    registry: BTreeMap<Key, VerifiedBytes>,
    /// Registry packages a confined run may not fetch, with why.
    refused: BTreeMap<Key, String>,
    git: BTreeMap<GitKey, Result<GitPackage, String>>,
    index: BTreeMap<Key, IndexEntry>,
}

impl Fetchedset {
    fn side(&self, p: &LockedPackage) -> Side {
        let verification = if let Some(f) = package_ref(p).and_then(|r| self.registry.get(&key(&r))) {
            Verification::Sha256 { origin: f.origin.clone() }
        } else if let Some(why) = package_ref(p).and_then(|r| self.refused.get(&key(&r))) {
            Verification::Unverifiable(format!("not fetched: {why}"))
        } else if let Some(g) = git_key(p).and_then(|k| self.git.get(&k)) {
            match g {
                Ok(pkg) => Verification::Commit { commit: pkg.commit.clone(), path: pkg.path.clone() },
                Err(why) => Verification::Unverifiable(why.clone()),
            }
        } else {
            Verification::Unverifiable(unverifiable_reason(p))
        };
        let entry = package_ref(p).and_then(|r| self.index.get(&key(&r)));
        Side { package: p.clone(), verification, index: entry.map(|e| e.status), pubtime: entry.and_then(|e| e.pubtime.clone()) }
    }

    /// The side's file tree and (normalized) manifest, when it was read.
    fn tree(&self, p: &LockedPackage) -> Result<Option<(FileTree, Option<String>)>, DepsDiffError> {
        if let Some(f) = package_ref(p).and_then(|r| self.registry.get(&key(&r))) {
            let tree = unpack(p, f)?;
            let manifest = tree.get("Cargo.toml").and_then(|b| String::from_utf8(b.clone()).ok());
            return Ok(Some((tree, manifest)));
        }
        if let Some(Ok(g)) = git_key(p).and_then(|k| self.git.get(&k)) {
            return Ok(Some((g.files.clone(), Some(g.manifest.clone()))));
        }
        Ok(None)
    }
}

/// The target triple velaris was built for, when the surface engine knows it: the default for
/// `--target`.
pub fn host_target() -> String {
    let arch = std::env::consts::ARCH;
    let triple = match std::env::consts::OS {
        "linux" if cfg!(target_env = "musl") => format!("{arch}-unknown-linux-musl"),
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        "windows" if cfg!(target_env = "gnu") => format!("{arch}-pc-windows-gnu"),
        "windows" => format!("{arch}-pc-windows-msvc"),
        "freebsd" => format!("{arch}-unknown-freebsd"),
        "android" => format!("{arch}-linux-android"),
        _ => String::new(),
    };
    if crate::surface::cfg::known_targets().any(|t| t == triple) {
        triple
    } else {
        crate::surface::engine::DEFAULT_TARGET.to_string()
    }
}

/// Run the pipeline.
pub fn run(config: &Config) -> Result<Report, DepsDiffError> {
    let (base, head, pairs, sides) = load(config)?;

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

    // Every registry package on either side, once; every git package likewise.
    let mut refs: BTreeMap<Key, PackageRef> = BTreeMap::new();
    let mut gits: BTreeSet<GitKey> = BTreeSet::new();
    for (c, _) in changes.values() {
        for p in [&c.old, &c.new].into_iter().flatten() {
            if let Some(r) = package_ref(p) {
                refs.entry(key(&r)).or_insert(r);
            }
            if let Some(k) = git_key(p) {
                gits.insert(k);
            }
        }
    }
    // A confined run fetches only from the sources it was given.
    let refused: BTreeMap<Key, String> =
        refs.iter().filter_map(|(k, r)| config.fetch.refusal(&r.source).map(|why| (k.clone(), why))).collect();
    let refs: Vec<PackageRef> = refs.into_iter().filter(|(k, _)| !refused.contains_key(k)).map(|(_, r)| r).collect();
    let fetcher = Arc::new(Fetcher::new(&config.cwd, config.fetch.clone()).map_err(|e| BatchError::Fetch(vec![e]))?);
    // Who published each new crates.io version: asked while the rest of the review runs (the
    // requests are spaced a second apart).
    let asking = ask_publishers(config, &changes, fetcher.cache_dir());
    let registry: BTreeMap<Key, VerifiedBytes> = if refs.is_empty() {
        BTreeMap::new()
    } else {
        let fetched = fetcher.fetch_verified(&refs)?;
        refs.iter().map(key).zip(fetched.into_iter().map(|f| VerifiedBytes { bytes: Arc::new(f.bytes), origin: f.origin })).collect()
    };
    let git_opts = GitOptions { cache_dir: fetcher.cache_dir().map(Path::to_path_buf), offline: config.fetch.offline };
    let mut git = BTreeMap::new();
    for k in gits {
        if let Some(why) = config.fetch.refusal(&k.0) {
            git.insert(k, Err(format!("git source not read: {why}")));
            continue;
        }
        let r = gitdeps::fetch_package(&git_opts, &k.0, &k.1, &k.2).map_err(|e| {
            if e.is_offline() {
                format!("git source: offline, and not in velaris' git cache ({e})")
            } else {
                format!("git source not read: {e}")
            }
        });
        git.insert(k, r);
    }
    // What the index says of each new registry version (yanked), online only.
    let new_refs: Vec<PackageRef> = {
        let mut seen = BTreeSet::new();
        changes.values().filter_map(|(c, _)| c.new.as_ref().and_then(package_ref)).filter(|r| seen.insert(key(r))).collect()
    };
    let mut index = BTreeMap::new();
    if !config.fetch.offline && !new_refs.is_empty() {
        for (r, entry) in new_refs.iter().zip(fetcher.index_entry_all(&new_refs)) {
            if let Ok(Some(e)) = entry {
                index.insert(key(r), e);
            }
        }
    }
    let fetched = Fetchedset { registry, refused, git, index };

    // Which package names this change adds (to say a new dependency is new to the graph).
    let added_names: BTreeSet<String> =
        changes.values().filter(|(c, _)| c.kind == ChangeKind::Added).map(|(c, _)| c.name.clone()).collect();

    // Unpack, diff and flag, in parallel over changes; trees are dropped as soon as a diff is
    // done, and the verified sources go to the store the engine runs share.
    let store = SourceStore::with_fetcher(fetcher.clone());
    // The engine runs on workspaces, or on a probe when capabilities are asked for.
    let engine_runs = config.capabilities || matches!(sides, Sides::Git { .. });
    let work: Vec<(Change, Vec<String>)> = changes.into_values().collect();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let results = crate::resources::parallel_map(&work, cpus, |(change, labels)| {
        diff_one(change, labels, &fetched, &config.diff, &added_names, engine_runs.then_some(&store))
    });
    let mut packages = Vec::with_capacity(results.len());
    for r in results {
        packages.push(r?);
    }
    // Only now, with every archive accepted, may downloaded bytes enter the cache.
    for r in &refs {
        let f = &fetched.registry[&key(r)];
        if matches!(f.origin, Origin::Network(_)) {
            // A cache that cannot be written costs speed next time, not correctness.
            if let Err(e) = fetcher.store(r, &f.bytes) {
                eprintln!("warning: could not cache {} {}: {}", r.name, r.version, crate::message::chain(&e));
            }
        }
    }

    // The graph and the capabilities, per lockfile.
    let mut graph_unknown = Vec::new();
    let mut programs = Vec::new();
    let mut baselines = Vec::new();
    let mut analysed: BTreeMap<String, (RunSide, RunSide)> = BTreeMap::new();
    for pair in &pairs {
        let changed: Vec<&PackageReport> = packages.iter().filter(|p| p.lockfiles.contains(&pair.label)).collect();
        let (b, h, note, baseline) = analyse_pair(config, pair, &sides, &changed, &store, &fetched)?;
        if let Some(note) = note {
            graph_unknown.push((pair.label.clone(), note));
        }
        if config.capabilities {
            let primary = &config.targets[0];
            programs.extend(capabilities::program_effects(&pair.label, &b, &h, primary));
            if let Some(bl) = baseline {
                baselines.push(capabilities::baseline_effect(&pair.label, &b, &h, bl.text, bl.base_text, bl.origin, &bl.target));
            }
        }
        analysed.insert(pair.label.clone(), (b, h));
    }

    // Each package's place, capability change and remaining flags.
    for p in &mut packages {
        review_one(p, &analysed, &pairs, config, &fetched)?;
    }
    // When and by whom each new version was published.
    let as_of = as_of(config, &sides)?;
    let answers = asking.finish();
    for p in &mut packages {
        publication_of(p, config, &as_of, &answers.facts, &fetched, &git_opts)?;
    }
    // Who brought each added package, names that imitate popular crates, advisories.
    let db = config.advisory_db.as_deref().map(advisories::AdvisoryDb::load).transpose()?;
    relate(&mut packages, &pairs, db.as_ref());
    review::order(&mut packages);
    risk::order(&mut packages, config.all_targets);
    let top_risk = risk::top_sentence(&packages);
    let coverage = review::coverage(&packages, config.capabilities);
    let verified = review::verified(&packages);
    let lockfiles = pairs.iter().map(|p| p.label.clone()).collect();
    let from_files = matches!(config.input, Input::Files { .. });
    Ok(Report {
        base,
        head,
        lockfiles,
        packages,
        from_files,
        targets: config.targets.clone(),
        all_targets: config.all_targets,
        graph_unknown,
        programs,
        baselines,
        coverage,
        verified,
        advisory_db: db.map(|d| AdvisoryDbInfo { path: d.path, commit: d.commit, advisories: d.count }),
        top_risk,
        publication: publish::Summary {
            as_of,
            fresh_days: config.publication.fresh_days,
            publisher_asked: config.publication.api.is_some(),
            api_requests: answers.sent,
            verify_source: config.publication.verify_source,
        },
    })
}

/// What release ages are measured against: `--as-of`, else the head commit's date, else now.
fn as_of(config: &Config, sides: &Sides) -> Result<publish::AsOf, DepsDiffError> {
    use publish::{AsOf, AsOfFrom};
    if let Some(t) = config.publication.as_of {
        return Ok(AsOf { time: t, from: AsOfFrom::Given });
    }
    if let Sides::Git { repo, head: Some(h), .. } = sides {
        return Ok(AsOf { time: repo.commit_time(h)?, from: AsOfFrom::HeadCommit(h.clone()) });
    }
    Ok(AsOf { time: publish::now(), from: AsOfFrom::Now })
}

/// The crates.io packages whose publishers are asked: each crate's new and old versions.
fn publisher_questions(changes: &ChangeMap) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (c, _) in changes.values() {
        let Some(new) = c.new.as_ref().filter(|p| package_ref(p).is_some() && p.source_kind() == SourceKind::CratesIo) else { continue };
        let versions = out.entry(c.name.clone()).or_default();
        versions.insert(new.version.to_string());
        if let Some(old) = c.old.as_ref().filter(|p| p.source_kind() == SourceKind::CratesIo) {
            versions.insert(old.version.to_string());
        }
    }
    out
}

/// crates.io's answers, by crate name.
struct Answers {
    facts: BTreeMap<String, Result<CrateFacts, NotChecked>>,
    sent: usize,
}

/// The publisher questions under way on their own thread.
struct Asking(Option<std::thread::JoinHandle<Answers>>);

impl Asking {
    fn finish(self) -> Answers {
        let none = || Answers { facts: BTreeMap::new(), sent: 0 };
        self.0.map_or_else(none, |h| h.join().unwrap_or_else(|_| none()))
    }
}

fn ask_publishers(config: &Config, changes: &ChangeMap, cache_dir: Option<&Path>) -> Asking {
    let Some(opts) = &config.publication.api else { return Asking(None) };
    let questions = publisher_questions(changes);
    if questions.is_empty() {
        return Asking(None);
    }
    let mut opts = opts.clone();
    opts.cache_dir = cache_dir.map(Path::to_path_buf);
    opts.offline |= config.fetch.offline;
    opts.use_env_proxy &= config.fetch.use_env_proxy;
    let api = CratesIoApi::new(opts);
    Asking(Some(std::thread::spawn(move || {
        let mut facts = BTreeMap::new();
        for (name, versions) in questions {
            let need: Vec<&str> = versions.iter().map(String::as_str).collect();
            facts.insert(name.clone(), api.crate_facts(&name, &need));
        }
        Answers { facts, sent: api.sent() }
    })))
}

/// One package's publication: its release age, its publishers, its source against its
/// repository; and the flags they raise.
fn publication_of(
    p: &mut PackageReport,
    config: &Config,
    as_of: &publish::AsOf,
    facts: &BTreeMap<String, Result<CrateFacts, NotChecked>>,
    fetched: &Fetchedset,
    git_opts: &GitOptions,
) -> Result<(), DepsDiffError> {
    use publish::{PublisherCheck, SourceCheck};
    let Some(new) = p.new.as_ref().filter(|s| package_ref(&s.package).is_some()) else { return Ok(()) };
    let version = new.package.version.to_string();
    let crates_io = new.package.source_kind() == SourceKind::CratesIo;
    let answer = facts.get(&p.name);
    let version_facts = answer.and_then(|a| a.as_ref().ok()).and_then(|f| f.version(&version));
    let mut publication = publish::Publication {
        release: publish::release(new.pubtime.as_deref(), version_facts, as_of),
        ..Default::default()
    };
    publication.publisher = Some(if !crates_io {
        PublisherCheck::NotChecked("not a crates.io package: only crates.io's publishers are asked".into())
    } else if config.publication.api.is_none() {
        PublisherCheck::NotChecked("not asked (--no-publisher)".into())
    } else {
        match answer {
            Some(Ok(f)) => {
                let old = p.old.as_ref().filter(|o| o.package.source_kind() == SourceKind::CratesIo).map(|o| o.package.version.to_string());
                match publish::publishers(f, &version, old.as_deref()) {
                    Some(found) => PublisherCheck::Checked(found),
                    None => PublisherCheck::NotChecked(format!("crates.io's API does not list {version}")),
                }
            }
            Some(Err(e)) => PublisherCheck::NotChecked(e.0.clone()),
            None => PublisherCheck::NotChecked("not asked".into()),
        }
    });
    // The package is read again only where its manifest or files are needed: a trusted
    // publisher's repository is compared with the declared one, and `--verify-source`.
    let trusted = matches!(&publication.publisher, Some(PublisherCheck::Checked(c)) if !c.new.is_token());
    let tree = if config.publication.verify_source || trusted { fetched.tree(&new.package)? } else { None };
    let declared = tree.as_ref().and_then(|(t, m)| flags::ManifestFacts::read(m.as_deref(), t).repository);
    if config.publication.verify_source {
        publication.source = Some(match (&tree, p.diff.as_ref().and_then(|d| d.new_vcs.as_ref()), &declared) {
            (None, _, _) => SourceCheck::NotChecked("the package could not be read".into()),
            (Some(_), None, _) => SourceCheck::NotChecked("the package records no commit (.cargo_vcs_info.json)".into()),
            (Some(_), Some(v), _) if v.sha1.is_none() => SourceCheck::NotChecked("the package records no commit (.cargo_vcs_info.json)".into()),
            (Some(_), Some(_), None) => SourceCheck::NotChecked("the manifest declares no repository".into()),
            (Some((files, _)), Some(v), Some(repo)) => {
                let url = publish::fetch_url(repo);
                let commit = v.sha1.clone().unwrap_or_default();
                match gitdeps::tree_at(git_opts, &url, &commit) {
                    Ok(entries) => {
                        let tree: Vec<(String, String)> = entries.into_iter().filter(|e| e.is_file()).map(|e| (e.path, e.oid)).collect();
                        publish::compare_source(files, &tree, v.path_in_vcs.as_deref().unwrap_or(""), &url, &commit)
                    }
                    Err(gitdeps::GitDepError::NoCommit { .. }) => SourceCheck::CommitNotFound { repository: url, commit },
                    Err(e) => SourceCheck::NotChecked(format!("{url} could not be read: {}", one_line(&e))),
                }
            }
        });
    }
    p.flags.extend(publish::flags(&p.name, &version, &publication, declared.as_deref(), config.publication.fresh_days, as_of));
    p.flags.sort_by_key(|f| (f.kind.rank(), f.kind));
    p.publication = publication;
    Ok(())
}

/// The signals of the added lines as flags (hidden strings join the suspicious lines).
fn signal_flags(flags: &mut Vec<Flag>, found: &[signals::Signal]) {
    use signals::SignalKind;
    let ev = |s: &signals::Signal| format!("{}:{}: {}: {}", s.file, s.line, s.what, s.text);
    for (kind, flag, verb) in [
        (SignalKind::Secret, FlagKind::SecretAccess, "name secret-shaped paths or variables"),
        (SignalKind::Trigger, FlagKind::TriggerCondition, "check conditions an attack waits for (CI, host, clock, OS)"),
        (SignalKind::BinaryRead, FlagKind::BinaryRead, "read a binary file the package ships"),
    ] {
        let these: Vec<&signals::Signal> = found.iter().filter(|s| s.kind == kind).collect();
        if these.is_empty() {
            continue;
        }
        let mut whats: Vec<&str> = Vec::new();
        for s in &these {
            if !whats.contains(&s.what.as_str()) {
                whats.push(&s.what);
            }
        }
        // One evidence item per line, with everything found on it.
        let mut lines: Vec<(&str, u32, Vec<&str>, &str)> = Vec::new();
        for s in &these {
            match lines.iter_mut().find(|(f, l, _, _)| *f == s.file.as_str() && *l == s.line) {
                Some(e) => e.2.push(&s.what),
                None => lines.push((&s.file, s.line, vec![&s.what], &s.text)),
            }
        }
        flags.push(Flag {
            kind: flag,
            message: format!("added lines {verb}: {}", whats.join(", ")),
            evidence: lines.iter().map(|(f, l, w, t)| format!("{f}:{l}: {}: {t}", w.join(", "))).take(flags::MAX_EVIDENCE).collect(),
        });
    }
    let hidden: Vec<String> = found.iter().filter(|s| s.kind == SignalKind::Hidden).map(ev).collect();
    if !hidden.is_empty() {
        match flags.iter_mut().find(|f| f.kind == FlagKind::SuspiciousLines) {
            Some(f) => {
                let mut ev = hidden;
                ev.append(&mut f.evidence);
                ev.truncate(flags::MAX_EVIDENCE);
                f.evidence = ev;
                f.message = format!("{}; string literals that decode or join into a URL or a command", f.message);
            }
            None => flags.push(Flag {
                kind: FlagKind::SuspiciousLines,
                message: "string literals that decode or join into a URL or a command".to_string(),
                evidence: hidden.into_iter().take(flags::MAX_EVIDENCE).collect(),
            }),
        }
    }
    flags.sort_by_key(|f| (f.kind.rank(), f.kind));
}

/// The line of `name = "NAME"` of the entry locking NAME at VERSION.
fn entry_line(text: &str, name: &str, version: &str) -> Option<u32> {
    let lines: Vec<&str> = text.lines().collect();
    let want_name = format!("name = {}", toml::Value::String(name.to_string()));
    let want_version = format!("version = {}", toml::Value::String(version.to_string()));
    (0..lines.len()).find(|&i| lines[i].trim() == want_name && lines.get(i + 1).is_some_and(|l| l.trim() == want_version)).map(|i| i as u32 + 1)
}

/// What relates packages to one another and to the outside: which changed package brought
/// each added one (lockfile edges), the new-dependency flag's wording from that, name-squats of
/// packages new to the graph, and advisories.
fn relate(packages: &mut [PackageReport], pairs: &[LockPair], db: Option<&advisories::AdvisoryDb>) {
    let added: BTreeSet<String> = packages.iter().filter(|p| p.change == ChangeKind::Added).map(|p| p.name.clone()).collect();
    let mut brought: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut at_base: BTreeSet<String> = BTreeSet::new();
    for pair in pairs {
        for (dep, by) in lockgraph::brought_by(&pair.old_view, &pair.new_view, &added) {
            let e = brought.entry(dep).or_default();
            for b in by {
                if !e.contains(&b) {
                    e.push(b);
                }
            }
        }
        at_base.extend(pair.old.packages.iter().map(|p| p.name.clone()));
    }
    let built: BTreeMap<String, bool> = packages.iter().filter(|p| p.change == ChangeKind::Added).map(|p| (p.name.clone(), p.built())).collect();
    let mut brings: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (dep, by) in &brought {
        for b in by {
            brings.entry(b.clone()).or_default().push(dep.clone());
        }
    }
    for p in packages.iter_mut() {
        p.lock_line = pairs.iter().filter(|pair| p.lockfiles.contains(&pair.label)).find_map(|pair| {
            let (text, side) = match (&p.new, &p.old) {
                (Some(n), _) => (pair.new_text.as_deref()?, n),
                (None, Some(o)) => (pair.old_text.as_deref()?, o),
                (None, None) => return None,
            };
            entry_line(text, &side.package.name, &side.package.version.to_string()).map(|l| (pair.label.clone(), l))
        });
        if p.change == ChangeKind::Added {
            p.brought_by = brought.get(&p.name).cloned().unwrap_or_default();
            p.brought_by.sort();
            if !at_base.contains(&p.name) {
                if let Some(s) = squat::resembles(&p.name) {
                    p.flags.push(Flag {
                        kind: FlagKind::NameSquat,
                        message: format!("new to the graph, and its name is {}", s.describe()),
                        evidence: vec![format!("resembles {}", s.resembles)],
                    });
                    p.squat = Some(s);
                }
            }
        }
        if p.new.is_some() {
            let mut b: Vec<String> = brings.get(&p.name).cloned().unwrap_or_default();
            b.sort();
            b.dedup();
            // Only what is built counts as brought (with the graph unknown, everything is).
            p.brings = b.into_iter().filter(|d| built.get(d).copied().unwrap_or(true)).collect();
        }
        if let Some(f) = p.flags.iter_mut().find(|f| f.kind == FlagKind::NewDependency) {
            let declared = f.evidence.len();
            f.message = if p.brings.is_empty() {
                format!(
                    "declares {} none of which is new to the build (already in the graph, optional and off, or for other targets)",
                    crate::text::plural(declared as u64, "new dependency,", "new dependencies,")
                )
            } else {
                let more = declared.saturating_sub(p.brings.len());
                format!(
                    "brings {} new to the build: {}{}",
                    crate::text::plural(p.brings.len() as u64, "dependency", "dependencies"),
                    p.brings.join(", "),
                    if more > 0 { format!(" (and declares {more} more that are not)") } else { String::new() }
                )
            };
        }
        if let Some(db) = db {
            let a = db.for_change(p.old.as_ref().map(|s| &s.package), p.new.as_ref().map(|s| &s.package));
            if !a.affecting.is_empty() {
                let ev: Vec<String> = a
                    .affecting
                    .iter()
                    .map(|x| {
                        let intro = if a.introduced.contains(&x.id) { "; this change goes into it" } else { "" };
                        format!("{} ({}{}): {}{intro}", x.id, x.kind, x.severity.as_ref().map(|s| format!(", {s}")).unwrap_or_default(), x.title)
                    })
                    .collect();
                let ids: Vec<&str> = a.affecting.iter().map(|x| x.id.as_str()).collect();
                p.flags.push(Flag {
                    kind: FlagKind::Advisory,
                    message: format!("{} affects the version locked: {}", crate::text::plural(ids.len() as u64, "advisory", "advisories"), ids.join(", ")),
                    evidence: ev.into_iter().take(flags::MAX_EVIDENCE).collect(),
                });
            }
            p.advisories = a;
        }
        p.flags.sort_by_key(|f| (f.kind.rank(), f.kind));
    }
}

/// A workspace's baseline at head (and at base), where it is, and the target it is checked for.
struct BaselineInput {
    text: Option<String>,
    base_text: Option<String>,
    origin: String,
    target: String,
}

/// Run the engine for one lockfile at base and at head: the repository's workspace when both
/// revisions have one that resolves, else a probe of the changed packages.
fn analyse_pair(
    config: &Config,
    pair: &LockPair,
    sides: &Sides,
    changed: &[&PackageReport],
    store: &SourceStore,
    fetched: &Fetchedset,
) -> Result<(RunSide, RunSide, Option<String>, Option<BaselineInput>), DepsDiffError> {
    let dir = workspaces::dir_of_lockfile(&pair.label);
    let mut note: Option<String> = None;
    // Base and head workspaces; a workspace that appears (or disappears) in the range has one
    // side only, and the other side builds nothing.
    let mut dirs: Option<(Option<WorkspaceDir>, Option<WorkspaceDir>)> = None;
    match sides {
        Sides::Files => note = Some("two lockfiles without manifests: what each target builds is unknown, every package counts; where each package sits comes from the lockfiles' own dependency lists".into()),
        Sides::Git { repo, base, head } => {
            let base_dir = workspaces::materialize(repo, base, dir);
            let head_dir = match head {
                Some(h) => workspaces::materialize(repo, h, dir),
                None => Ok(workspaces::has_manifest(repo.root(), dir).then(|| WorkspaceDir::on_disk(repo.root().join(dir)))),
            };
            match (base_dir, head_dir) {
                (Err(e), _) | (_, Err(e)) => {
                    note = Some(format!("the workspace could not be read from git ({e}): the graph is unknown, every package counts"));
                }
                (Ok(Some(b)), Ok(Some(h))) => dirs = Some((Some(b), Some(h))),
                // The workspace and its lockfile are new at head, or gone at head.
                (Ok(None), Ok(Some(h))) if pair.old_text.is_none() => dirs = Some((None, Some(h))),
                (Ok(Some(b)), Ok(None)) if pair.new_text.is_none() => dirs = Some((Some(b), None)),
                _ => {
                    let where_ = if dir.is_empty() { "the repository root".to_string() } else { dir.to_string() };
                    note = Some(format!("no Cargo.toml beside {} in {where_} on both sides: the graph is unknown, every package counts", pair.label));
                }
            }
        }
    }
    // The baseline velaris check would use, and the target it would check; the base's
    // baseline, to say which grants the change adds.
    let baseline: Option<BaselineInput> = dirs.as_ref().and_then(|(b, h)| {
        let h = h.as_ref()?;
        let text = std::fs::read_to_string(h.root.join(crate::baseline::FILE_NAME)).ok();
        let base_text = b.as_ref().and_then(|b| std::fs::read_to_string(b.root.join(crate::baseline::FILE_NAME)).ok());
        let origin = if dir.is_empty() { crate::baseline::FILE_NAME.to_string() } else { format!("{dir}/{}", crate::baseline::FILE_NAME) };
        let target = text.as_deref().and_then(capabilities::baseline_target).unwrap_or_else(|| config.targets[0].clone());
        Some(BaselineInput { text, base_text, origin, target })
    });
    let mut targets = config.targets.clone();
    if let Some(BaselineInput { text: Some(_), target: t, .. }) = &baseline {
        if config.capabilities && !targets.contains(t) {
            targets.push(t.clone());
        }
    }
    if let Some((b, h)) = dirs {
        let runs = |d: &Option<WorkspaceDir>| match d {
            Some(d) => capabilities::run_side(d, &targets, &config.fetch, store, config.capabilities, false),
            None => Ok(Vec::new()),
        };
        let (base_runs, head_runs) = (runs(&b), runs(&h));
        match (base_runs, head_runs) {
            (Ok(br), Ok(hr)) => {
                let side = |runs| RunSide { mode: GraphMode::Workspace, runs, error: None };
                return Ok((side(br), side(hr), None, baseline));
            }
            (Err(e), _) | (_, Err(e)) if e.is_integrity() => return Err(e.into()),
            (Err(e), _) | (_, Err(e)) => {
                note = Some(format!("the workspace could not be resolved ({}): the graph is unknown, every package counts", one_line(&e)));
            }
        }
    }
    // The probe: each changed package with the superset of features its lockfile entry allows,
    // resolved with the lockfile leading.
    if !config.capabilities {
        return Ok((RunSide::empty(GraphMode::Probe, None), RunSide::empty(GraphMode::Probe, None), note, None));
    }
    let probe_side = |text: Option<&str>, view: &lockgraph::LockView, pick: fn(&PackageReport) -> Option<&Side>| -> Result<RunSide, DepsDiffError> {
        let Some(text) = text else { return Ok(RunSide::empty(GraphMode::Probe, None)) };
        let mut deps = Vec::new();
        for s in changed.iter().filter_map(|p| pick(p)).filter(|s| s.verified()) {
            let features = match (fetched.tree(&s.package)?, view.dep_names(&s.package)) {
                (Some((_, Some(manifest))), Some(locked)) => workspaces::superset_features(&manifest, &locked),
                _ => None,
            };
            deps.push(workspaces::ProbeDep { package: &s.package, features });
        }
        let dir = match workspaces::probe(text, &deps) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(RunSide::empty(GraphMode::Probe, None)),
            Err(e) => return Ok(RunSide::empty(GraphMode::Probe, Some(e))),
        };
        // Messages name the lockfile compared, not the probe's temporary copy of it.
        let clean = |e: &dyn std::fmt::Display| {
            one_line(e).replace(&dir.root.join("Cargo.lock").display().to_string(), &pair.label).replace(&dir.root.display().to_string(), "the probe")
        };
        match capabilities::run_side(&dir, &config.targets, &config.fetch, store, true, true) {
            Ok(runs) => Ok(RunSide { mode: GraphMode::Probe, runs, error: None }),
            Err(e) if e.is_integrity() => Err(e.into()),
            Err(e) => Ok(RunSide::empty(GraphMode::Probe, Some(clean(&e)))),
        }
    };
    let b = probe_side(pair.old_text.as_deref(), &pair.old_view, |p| p.old.as_ref())?;
    let h = probe_side(pair.new_text.as_deref(), &pair.new_view, |p| p.new.as_ref())?;
    Ok((b, h, note, None))
}

/// An error on one line: a batch of fetch failures lists every package under a first line that
/// counts them; the report needs that gist.
fn one_line(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    first.trim_end_matches(':').to_string()
}

fn unpack(p: &LockedPackage, f: &VerifiedBytes) -> Result<FileTree, DepsDiffError> {
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

/// Diff and flag one change from its trees; hand the verified sources to the store.
fn diff_one(
    change: &Change,
    labels: &[String],
    fetched: &Fetchedset,
    opts: &DiffOptions,
    added_names: &BTreeSet<String>,
    store: Option<&SourceStore>,
) -> Result<PackageReport, DepsDiffError> {
    let old = change.old.as_ref().map(|p| fetched.side(p));
    let new = change.new.as_ref().map(|p| fetched.side(p));
    let old_tree = change.old.as_ref().map(|p| fetched.tree(p)).transpose()?.flatten();
    let new_tree = change.new.as_ref().map(|p| fetched.tree(p)).transpose()?.flatten();
    for (p, t) in [(&change.old, &old_tree), (&change.new, &new_tree)] {
        if let (Some(store), Some(p), Some((tree, manifest))) = (store, p, t) {
            let id = package_id(p);
            if let Some(f) = package_ref(p).and_then(|r| fetched.registry.get(&key(&r))) {
                if !store.has(&id) {
                    store.insert_verified(p.checksum.as_deref().unwrap_or_default(), f.bytes.clone(), tree);
                }
            } else if let Some(m) = manifest {
                if !store.has(&id) {
                    store.insert_git(&id, tree, m.clone());
                }
            }
        }
    }
    // A diff needs every side that exists to be readable: a git package on one side of a
    // source change that could not be read is not shown as if it were all new.
    let complete = old.as_ref().is_none_or(Side::verified) && new.as_ref().is_none_or(Side::verified);
    let diff = if complete && (old_tree.is_some() || new_tree.is_some()) {
        Some(diff_trees(old_tree.as_ref().map(|t| &t.0), new_tree.as_ref().map(|t| &t.0), opts))
    } else {
        None
    };
    fn facts(t: &Option<(FileTree, Option<String>)>) -> Option<flags::SideFacts<'_>> {
        t.as_ref().map(|(tree, m)| flags::SideFacts { tree, manifest: flags::ManifestFacts::read(m.as_deref(), tree) })
    }
    let (of, nf) = (facts(&old_tree), facts(&new_tree));
    let same_version = matches!(change.kind, ChangeKind::ChecksumChanged | ChangeKind::SourceChanged)
        && change.old.as_ref().map(|p| &p.version) == change.new.as_ref().map(|p| &p.version);
    let mut flags = if complete { flags::tree_flags(of.as_ref(), nf.as_ref(), diff.as_ref(), same_version, added_names) } else { Vec::new() };
    if let (true, Some((tree, _))) = (complete, &new_tree) {
        signal_flags(&mut flags, &signals::scan(old_tree.as_ref().map(|t| &t.0), tree));
    }
    if let Some(s) = &new {
        match s.index {
            Some(IndexStatus::Yanked) => flags.push(Flag {
                kind: FlagKind::Yanked,
                message: format!("{} is yanked in the registry index: its publisher withdrew it", s.package.version),
                evidence: vec![format!("index entry of {}: \"yanked\": true", change.name)],
            }),
            Some(IndexStatus::NotListed) => flags.push(Flag {
                kind: FlagKind::NotInIndex,
                message: format!("the registry index does not list {}", s.package.version),
                evidence: vec![format!("index entry of {}", change.name)],
            }),
            _ => {}
        }
    }
    Ok(PackageReport {
        name: change.name.clone(),
        change: change.kind,
        old,
        new,
        semver: change.semver,
        diff,
        lockfiles: labels.to_vec(),
        placement: Placement::default(),
        flags,
        capabilities: Capabilities { status: CapStatus::Off, added: Vec::new(), removed: Vec::new(), note: None },
        tier: Tier::Routine,
        brought_by: Vec::new(),
        brings: Vec::new(),
        squat: None,
        advisories: advisories::PackageAdvisories::default(),
        license: (of.as_ref().and_then(|f| f.manifest.license.clone()), nf.as_ref().and_then(|f| f.manifest.license.clone())),
        risk: risk::Risk::default(),
        lock_line: None,
        publication: publish::Publication::default(),
    })
}

/// Lines of context around a finding's hunk.
const HUNK_CONTEXT: usize = 3;
/// Gained findings per package given a hunk (the rest keep their place only).
const MAX_HUNKS: usize = 24;

/// Place one package in the graph, compare its capabilities, and add the flags that come from
/// them.
fn review_one(
    p: &mut PackageReport,
    analysed: &BTreeMap<String, (RunSide, RunSide)>,
    pairs: &[LockPair],
    config: &Config,
    fetched: &Fetchedset,
) -> Result<(), DepsDiffError> {
    let sides: Vec<&(RunSide, RunSide)> = p.lockfiles.iter().filter_map(|l| analysed.get(l)).collect();
    // Placement: head's graph for what exists at head, base's for what was removed.
    let mut placement = Placement::default();
    for (b, h) in &sides {
        let (side, pkg) = match (&p.new, &p.old) {
            (Some(n), _) => (h, &n.package),
            (None, Some(o)) => (b, &o.package),
            (None, None) => continue,
        };
        let pl = capabilities::placement(side, pkg);
        placement = merge_placement(placement, pl);
    }
    // Without a workspace graph, where it sits comes from the lockfile's own edges.
    if placement.built.is_none() {
        for pair in pairs.iter().filter(|pair| p.lockfiles.contains(&pair.label)) {
            let (view, pkg) = match (&p.new, &p.old) {
                (Some(n), _) => (&pair.new_view, &n.package),
                (None, Some(o)) => (&pair.old_view, &o.package),
                (None, None) => continue,
            };
            for d in view.direct(pkg) {
                if !placement.direct.contains(&d) {
                    placement.direct.push(d);
                }
            }
            let via = view.via(pkg);
            if !via.is_empty() && (placement.via.is_empty() || via.len() < placement.via.len()) {
                placement.via = via;
            }
        }
        placement.direct.sort();
    }
    p.placement = placement;

    if !config.capabilities {
        p.capabilities.status = CapStatus::Off;
        return Ok(());
    }
    if !p.built() {
        p.capabilities.status = CapStatus::NotBuilt;
        return Ok(());
    }
    // Without a workspace, a member's or path package's source is nowhere to be read: a
    // lockfile holds none.
    let probed = sides.iter().any(|(b, h)| b.mode == GraphMode::Probe || h.mode == GraphMode::Probe);
    if probed && [&p.old, &p.new].into_iter().flatten().any(|s| s.is_local()) {
        p.capabilities.status = CapStatus::Unknown(
            "a workspace member or path package: without its workspace's graph its source is not analysed (`deps-diff BASE..HEAD` reads it from the revisions)".into(),
        );
        return Ok(());
    }
    // Unreadable sides are unknown, never "no change" (local packages are read from disk).
    for s in [&p.old, &p.new].into_iter().flatten().filter(|s| !s.is_local()) {
        if let Some(why) = s.unverifiable() {
            p.capabilities.status = CapStatus::Unknown(format!("{} {}: {why}", p.name, s.package.version));
            return Ok(());
        }
    }
    let mut old_f = BTreeSet::new();
    let mut new_f = BTreeSet::new();
    let (mut old_seen, mut new_seen) = (false, false);
    let mut probe = false;
    for (b, h) in &sides {
        for (side, s, acc, seen) in [(b, &p.old, &mut old_f, &mut old_seen), (h, &p.new, &mut new_f, &mut new_seen)] {
            let Some(s) = s else { continue };
            if let Some(e) = &side.error {
                p.capabilities.status = CapStatus::Unknown(format!("the capability analysis failed: {e}"));
                return Ok(());
            }
            probe |= side.mode == GraphMode::Probe;
            if let Some(f) = capabilities::findings_of(side, &s.package) {
                acc.extend(f);
                *seen = true;
            }
        }
    }
    // A side that exists but was not analysed is unknown, never "no change"; only an old
    // version the workspace did not build at base is legitimately empty.
    let missing = |s: &Option<Side>, seen: bool| s.as_ref().filter(|_| !seen).map(|s| s.package.version.to_string());
    if let Some(v) = missing(&p.new, new_seen).or_else(|| if probe { missing(&p.old, old_seen) } else { None }) {
        p.capabilities.status = CapStatus::Unknown(format!("{} {v} is not in the graph that was analysed", p.name));
        return Ok(());
    }
    if p.old.is_some() && !old_seen {
        p.capabilities.note = Some("not built at base: everything it does now is new to the build".into());
    }
    let (mut added, removed) = capabilities::delta(&old_f, &new_f);
    // The hunk each gained finding appears in.
    if !added.is_empty() {
        if let Some(n) = &p.new {
            let new_tree = fetched.tree(&n.package)?.map(|t| t.0);
            let old_tree = match &p.old {
                Some(o) => fetched.tree(&o.package)?.map(|t| t.0),
                None => None,
            };
            let mut given = 0;
            // What a unit is (a build script, a proc macro, `links`) has no line to show.
            for d in added.iter_mut().filter(|d| !d.capability.as_str().starts_with("build.")) {
                for e in &mut d.findings {
                    if given >= MAX_HUNKS {
                        break;
                    }
                    let text = |t: &Option<FileTree>| {
                        t.as_ref().and_then(|t| t.get(&e.finding.file)).and_then(|b| String::from_utf8(b.clone()).ok())
                    };
                    if let Some(new_text) = text(&new_tree) {
                        e.hunk = crate::diff::hunk_around(
                            text(&old_tree).as_deref(),
                            &new_text,
                            e.finding.line as usize,
                            HUNK_CONTEXT,
                            &crate::diff::DiffLimits::default(),
                        );
                        given += 1;
                    }
                }
            }
        }
    }
    // A build script that gains the network or process spawning.
    for (caps, kind, what) in [
        (&[Capability::NetConnect, Capability::NetListen][..], FlagKind::BuildNetwork, "opens network connections at build time"),
        (&[Capability::ProcessSpawn][..], FlagKind::BuildSpawn, "starts processes at build time"),
    ] {
        let ev: Vec<String> = added
            .iter()
            .filter(|d| d.scope == Scope::Build && caps.contains(&d.capability))
            .flat_map(|d| d.findings.iter())
            .map(|e| format!("{}:{}:{} {}", e.finding.file, e.finding.line, e.finding.column, e.finding.path))
            .collect();
        if !ev.is_empty() {
            let message = if p.old.is_some() { format!("now {what}") } else { what.to_string() };
            p.flags.push(Flag { kind, message, evidence: ev.into_iter().take(flags::MAX_EVIDENCE).collect() });
        }
    }
    p.flags.sort_by_key(|f| (f.kind.rank(), f.kind));
    p.capabilities.status = CapStatus::Analysed;
    p.capabilities.added = added;
    p.capabilities.removed = removed;
    Ok(())
}

fn merge_placement(a: Placement, b: Placement) -> Placement {
    if a == Placement::default() {
        return b;
    }
    let built = match (a.built, b.built) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (None, _) | (_, None) => None,
        _ => Some(false),
    };
    let mut targets = a.targets;
    targets.extend(b.targets.into_iter().filter(|t| !targets.contains(t)).collect::<Vec<_>>());
    let mut direct = a.direct;
    direct.extend(b.direct);
    direct.sort();
    direct.dedup();
    let via = match (a.via.is_empty(), b.via.is_empty()) {
        (false, false) if b.via.len() < a.via.len() => b.via,
        (true, _) => b.via,
        _ => a.via,
    };
    let not_built = if built == Some(false) { a.not_built.or(b.not_built) } else { None };
    Placement { built, targets, direct, via, not_built }
}
