//! From a workspace on disk to its [`Surface`].
//!
//! This module owns the run: load the workspace and its lockfile, resolve the graph of units each
//! program compiles ([`crate::workspace`]) in rounds, fetching only the packages each round
//! reaches through [`crate::registry`] (sha256-checked against Cargo.lock before a byte is read)
//! or [`crate::gitdeps`] (by commit id), unpack them in memory, analyze
//! every unit in dependency order ([`super::analyze`]), with results cached by (package checksum,
//! features, target, analyzer version), and assemble per-program surfaces. Nothing here builds or
//! runs code, and cargo is never invoked.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::analyze::{self, CrateAnalysis, CrateInput, Edition, Exports};
use super::cache::ResultCache;
use super::cfg::{CfgEnv, Others};
use super::analyze::summary::CARRIED;
use super::model::{CallStats, Capability, CrateSurface, Finding, MAX_UNLOADED, ProgramKind, ProgramSurface, Reached, Scope, Surface, Unloaded, UnloadedReason};
use super::rules::Rules;
use crate::package::{self, FileTree, Limits};
use crate::registry::{BatchError, FetchOptions, Fetcher, PackageRef};
use crate::workspace::{Graph, PackageId, Unit, UnitKind, Workspace};

/// Which analyzer made a result: part of every cache key. The version, and a digest of the
/// analyzer's source (src/surface and data/, taken by build.rs), so that a changed analyzer
/// never reads what an older one cached; the rules in force (the overlay too) are
/// fingerprinted separately.
pub const ANALYZER_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("VELARIS_ANALYZER_DIGEST"));

/// The default target.
pub const DEFAULT_TARGET: &str = "x86_64-unknown-linux-gnu";

/// Name of the rules overlay read from the workspace root.
pub const OVERLAY_FILE: &str = "velaris-rules.toml";

#[derive(Debug, Clone)]
pub struct Config {
    /// The workspace root (the directory holding the root Cargo.toml).
    pub root: PathBuf,
    pub target: String,
    pub fetch: FetchOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum SurfaceError {
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
    #[error(transparent)]
    Fetch(#[from] BatchError),
    #[error("rejected the archive of {name} {version}: {source}")]
    Archive { name: String, version: String, source: Box<package::ArchiveError> },
    #[error("{0}")]
    Config(String),
    #[error("failed to read {path}")]
    Read { path: String, source: std::io::Error },
    #[error(transparent)]
    File(#[from] crate::fsio::FileError),
}

impl SurfaceError {
    pub fn is_integrity(&self) -> bool {
        match self {
            SurfaceError::Fetch(b) => b.is_integrity(),
            SurfaceError::Archive { .. } => true,
            _ => false,
        }
    }
}

/// A package's verified source, kept compressed: it is unpacked again when a unit of it is
/// analyzed, so the whole dependency tree never sits unpacked in memory at once.
pub(crate) struct Crated {
    bytes: Arc<Vec<u8>>,
    /// The published (normalized) Cargo.toml.
    manifest: Option<String>,
    /// Every file name in the package.
    files: BTreeSet<String>,
}

/// Verified package sources, shared by several runs: deps-diff analyses the workspace at base
/// and at head, for each target, and each `.crate` is fetched, checked and unpacked once for
/// all of them. Runs add to it what their graph reaches. Keys are [`SourceStore::key`].
#[derive(Default)]
pub struct SourceStore {
    crates: Mutex<BTreeMap<String, Arc<Crated>>>,
    /// Packages that could not be read (a git source offline, say), with why.
    missing: Mutex<BTreeMap<String, String>>,
    /// How registry packages are fetched; `None`: built from the workspace root's cargo
    /// configuration when first needed.
    fetcher: Mutex<Option<Arc<Fetcher>>>,
}

impl SourceStore {
    pub fn new() -> SourceStore {
        SourceStore::default()
    }

    /// A store that fetches with `fetcher` (and so with the cargo configuration it was made
    /// for) instead of one made for the workspace root.
    pub fn with_fetcher(fetcher: Arc<Fetcher>) -> SourceStore {
        SourceStore { fetcher: Mutex::new(Some(fetcher)), ..SourceStore::default() }
    }

    /// The key of a locked package: its checksum for a registry package, its source, name and
    /// version for a git one; `None` for anything else (members and path packages are read
    /// from disk).
    pub fn key(id: &PackageId) -> Option<String> {
        let source = id.source.as_deref()?;
        if source.starts_with("git+") {
            return Some(format!("{source} {} {}", id.name, id.version));
        }
        if source.starts_with("registry+") || source.starts_with("sparse+") {
            return id.checksum.as_ref().map(|c| c.to_ascii_lowercase());
        }
        None
    }

    /// Add a registry package: `bytes` whose sha256 is `checksum` and that unpacked to `tree`
    /// under every rule. Only the caller can vouch for that; it is not checked again here.
    pub fn insert_verified(&self, checksum: &str, bytes: Arc<Vec<u8>>, tree: &FileTree) {
        let crated = Crated {
            bytes,
            manifest: tree.get("Cargo.toml").and_then(|b| String::from_utf8(b.clone()).ok()),
            files: tree.keys().cloned().collect(),
        };
        self.crates.lock().unwrap().insert(checksum.to_ascii_lowercase(), Arc::new(crated));
    }

    /// Add a git package read at its locked commit: its files and its normalized manifest.
    /// It is packed like a `.crate` in memory, so it is analyzed exactly as a registry package;
    /// files that break the unpacking rules make it missing instead.
    pub fn insert_git(&self, id: &PackageId, files: &FileTree, manifest: String) {
        let Some(key) = SourceStore::key(id) else { return };
        let bytes = pack(&id.name, &id.version, files);
        match unpack(&id.name, &id.version, &bytes) {
            Ok(tree) => {
                let crated = Crated { bytes: Arc::new(bytes), manifest: Some(manifest), files: tree.into_keys().collect() };
                self.crates.lock().unwrap().insert(key, Arc::new(crated));
            }
            Err(e) => self.insert_missing(&key, format!("git source: {e}")),
        }
    }

    /// Record that a package cannot be read, and why; runs then report it `unanalyzed`.
    pub fn insert_missing(&self, key: &str, why: String) {
        self.missing.lock().unwrap().entry(key.to_string()).or_insert(why);
    }

    /// Whether the source of a package is at hand.
    pub fn has(&self, id: &PackageId) -> bool {
        SourceStore::key(id).is_some_and(|k| self.get(&k).is_some())
    }

    /// Why a package's source is not at hand, when it was tried.
    pub fn missing_reason(&self, id: &PackageId) -> Option<String> {
        SourceStore::key(id).and_then(|k| self.missing.lock().unwrap().get(&k).cloned())
    }

    fn get(&self, key: &str) -> Option<Arc<Crated>> {
        self.crates.lock().unwrap().get(key).cloned()
    }

    fn fetcher(&self, root: &Path, opts: &FetchOptions) -> Result<Arc<Fetcher>, SurfaceError> {
        let mut slot = self.fetcher.lock().unwrap();
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let f = Arc::new(Fetcher::new(root, opts.clone()).map_err(|e| BatchError::Fetch(vec![e]))?);
        *slot = Some(f.clone());
        Ok(f)
    }
}

/// A file tree as a `.crate` (gzip'd tar under `NAME-VERSION/`), deterministic.
fn pack(name: &str, version: &str, files: &FileTree) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (path, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        // A name tar cannot hold is left out; the unpacking check sees what was packed.
        let _ = b.append_data(&mut h, format!("{name}-{version}/{path}"), data.as_slice());
    }
    b.into_inner().and_then(|gz| gz.finish()).unwrap_or_default()
}

/// The registry packages of one run's graph, verified and checked against the unpacking rules.
struct Sources {
    /// By store key (the checksum for a registry package, see [`SourceStore::key`]), never by
    /// name and version: a path package or another registry's package of the same name and
    /// version must not be taken for this one, nor get its cached result.
    crates: BTreeMap<String, Arc<Crated>>,
}

fn unpack(name: &str, version: &str, bytes: &[u8]) -> Result<FileTree, SurfaceError> {
    let limits = Limits::for_compressed(bytes.len() as u64);
    package::unpack_crate(bytes, name, version, &limits).map(|u| u.files).map_err(|source| SurfaceError::Archive {
        name: name.to_string(),
        version: version.to_string(),
        source: Box::new(source),
    })
}

fn key_of(p: &PackageId) -> (String, String) {
    (p.name.clone(), p.version.clone())
}

/// Read a package directory on disk into a tree: every regular file below it, except build
/// output and VCS directories, and nothing larger than the unpacking limits would allow.
pub fn read_dir_tree(dir: &Path) -> Result<FileTree, SurfaceError> {
    fn walk(base: &Path, dir: &Path, out: &mut FileTree, depth: usize) -> Result<(), SurfaceError> {
        if depth > 32 {
            return Ok(());
        }
        let rd = std::fs::read_dir(dir).map_err(|source| SurfaceError::Read { path: dir.display().to_string(), source })?;
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let ft = match e.file_type() {
                Ok(t) => t,
                Err(_) => continue,
            };
            let path = e.path();
            if ft.is_dir() {
                if depth == 0 && (name == "target" || name == ".git") {
                    continue;
                }
                if name == ".git" {
                    continue;
                }
                walk(base, &path, out, depth + 1)?;
            } else if ft.is_file() {
                let meta = e.metadata().map_err(|source| SurfaceError::Read { path: path.display().to_string(), source })?;
                if meta.len() > package::FILE_CAP {
                    continue;
                }
                let bytes = crate::fsio::read_bytes(&path, package::FILE_CAP, "a source file")?;
                let rel = path.strip_prefix(base).unwrap_or(&path);
                let rel: Vec<&str> = rel.components().filter_map(|c| c.as_os_str().to_str()).collect();
                out.insert(rel.join("/"), bytes);
            }
        }
        Ok(())
    }
    let mut out = FileTree::new();
    walk(dir, dir, &mut out, 0)?;
    Ok(out)
}

/// Resolve the graph in rounds and fetch only what it reaches: resolve with the manifests at
/// hand (packages not fetched yet are leaves), fetch the batch of packages the round reached,
/// and again, until a round reaches nothing new. Packages the target never compiles (behind
/// `cfg(windows)` on Linux, optional and off, dev-only) are never downloaded.
fn resolve_and_fetch(config: &Config, ws: &Workspace, cfg: &CfgEnv, store: &SourceStore, lockfile_led: bool) -> Result<(Graph, Sources), SurfaceError> {
    loop {
        let asked: Mutex<BTreeMap<String, PackageId>> = Mutex::new(BTreeMap::new());
        let manifest_of = |id: &PackageId| -> Result<String, String> {
            let Some(key) = SourceStore::key(id) else {
                return Err(match id.source.as_deref() {
                    Some(s) if s.starts_with("registry+") || s.starts_with("sparse+") => {
                        format!("{} {}: Cargo.lock records no checksum, so it was not fetched", id.name, id.version)
                    }
                    _ => format!("{} {} is not on disk and not from a registry or git", id.name, id.version),
                });
            };
            if let Some(c) = store.get(&key) {
                return c.manifest.clone().ok_or_else(|| format!("{} {} has no UTF-8 Cargo.toml", id.name, id.version));
            }
            if let Some(why) = store.missing.lock().unwrap().get(&key) {
                return Err(why.clone());
            }
            asked.lock().unwrap().insert(key, id.clone());
            Err(format!("{} {} was not fetched", id.name, id.version))
        };
        let pending = |id: &PackageId| {
            SourceStore::key(id).is_some_and(|k| store.get(&k).is_none() && !store.missing.lock().unwrap().contains_key(&k))
        };
        let target_matches = |key: &str| cfg.matches_target_key(key);
        let has_file = |id: &PackageId, file: &str| {
            SourceStore::key(id).and_then(|k| store.get(&k)).is_some_and(|c| c.files.contains(file))
        };
        let graph = ws.resolve_with(&crate::workspace::ResolveOptions {
            target_matches: &target_matches,
            // Build scripts and proc macros run on the host; velaris analyzes for one target and
            // takes the host to be the same (docs/caveats.md).
            host_matches: None,
            manifest_of: &manifest_of,
            has_file: Some(&has_file),
            pending: Some(&pending),
            lockfile_led,
        })?;
        let asked = asked.into_inner().unwrap();
        if asked.is_empty() {
            let mut sources = Sources { crates: BTreeMap::new() };
            for u in &graph.units {
                if let Some(key) = SourceStore::key(&u.package) {
                    if let Some(c) = store.get(&key) {
                        sources.crates.insert(key, c);
                    }
                }
            }
            return Ok((graph, sources));
        }
        fetch_batch(config, store, asked.into_values().collect())?;
    }
}

/// Fetch, verify and unpack a batch of packages into the store. Registry packages are checked
/// against their lockfile sha256 (any failure stops the run, as for deps-diff); a git package
/// that cannot be had is recorded as missing, and its units are then `unanalyzed`.
fn fetch_batch(config: &Config, store: &SourceStore, ids: Vec<PackageId>) -> Result<(), SurfaceError> {
    let mut refs = Vec::new();
    let mut gits = Vec::new();
    for p in ids {
        match (&p.source, &p.checksum) {
            (Some(s), _) if s.starts_with("git+") => gits.push(p),
            // A source a confined run may not contact: unanalyzed, with why.
            (Some(source), Some(_)) if config.fetch.refusal(source).is_some() => {
                if let (Some(key), Some(why)) = (SourceStore::key(&p), config.fetch.refusal(source)) {
                    store.insert_missing(&key, format!("not fetched: {why}"));
                }
            }
            (Some(source), Some(checksum)) => refs.push(PackageRef {
                name: p.name.clone(),
                version: p.version.clone(),
                source: source.clone(),
                checksum: checksum.clone(),
            }),
            _ => {}
        }
    }
    if !gits.is_empty() {
        let opts = crate::gitdeps::GitOptions { cache_dir: cache_root(&config.fetch), offline: config.fetch.offline };
        let progress = &config.fetch.progress;
        progress.add(crate::progress::Stage::Fetch, gits.len() as u64);
        for id in gits {
            let key = SourceStore::key(&id).expect("git packages have a key");
            let source = id.source.as_deref().unwrap_or_default();
            progress.start(crate::progress::Stage::Fetch, || format!("{} {}", id.name, id.version));
            let fetched = match config.fetch.refusal(source) {
                Some(why) => Err(why),
                None => crate::gitdeps::fetch_package(&opts, source, &id.name, &id.version).map_err(|e| e.to_string()),
            };
            progress.done(crate::progress::Stage::Fetch);
            match fetched {
                Ok(pkg) => store.insert_git(&id, &pkg.files, pkg.manifest),
                Err(e) => store.insert_missing(&key, format!("git source not read: {e}")),
            }
        }
    }
    if refs.is_empty() {
        return Ok(());
    }
    let fetcher = store.fetcher(&config.root, &config.fetch)?;
    let fetched: Vec<(&PackageRef, crate::registry::Fetched)> = refs.iter().zip(fetcher.fetch_verified(&refs)?).collect();
    // Every archive must pass the unpacking rules before anything is cached or analyzed; only
    // the manifest and the file names are kept from this pass.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let checked = crate::resources::parallel_map(&fetched, cpus, |(r, f)| {
        unpack(&r.name, &r.version, &f.bytes).map(|tree| {
            let manifest = tree.get("Cargo.toml").and_then(|b| String::from_utf8(b.clone()).ok());
            (manifest, tree.into_keys().collect::<BTreeSet<String>>())
        })
    });
    for ((r, f), result) in fetched.into_iter().zip(checked) {
        let (manifest, files) = result?;
        if matches!(f.origin, crate::registry::Origin::Network(_)) {
            if let Err(e) = fetcher.store(r, &f.bytes) {
                eprintln!("warning: could not cache {} {}: {}", r.name, r.version, crate::message::chain(&e));
            }
        }
        let crated = Crated { bytes: Arc::new(f.bytes), manifest, files };
        store.crates.lock().unwrap().insert(r.checksum.to_ascii_lowercase(), Arc::new(crated));
    }
    Ok(())
}

fn unanalyzed(file: &str, scope: Scope, why: String) -> Finding {
    Finding { capability: Capability::Unanalyzed, scope, file: file.to_string(), line: 1, column: 1, path: why, chain: Vec::new(), expanded_from: None, through_trait: false }
}

/// Findings that come from what a unit is, not from its code.
fn kind_findings(unit: &Unit, ws: &Workspace) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = |cap: Capability, path: &str| Finding {
        capability: cap,
        scope: Scope::Build,
        file: unit.root.clone(),
        line: 1,
        column: 1,
        path: path.to_string(),
        chain: Vec::new(),
        expanded_from: None,
        through_trait: false,
    };
    match unit.kind {
        UnitKind::BuildScript => {
            out.push(at(Capability::BuildScript, "build script"));
            if ws.links_of(&unit.package).is_some() {
                out.push(at(Capability::BuildNative, "`links` key: links a native library"));
            }
        }
        UnitKind::ProcMacro => out.push(at(Capability::BuildProcMacro, "proc-macro crate")),
        _ => {}
    }
    out
}

const NATIVE_BUILD_DEPS: &[&str] = &["cc", "cmake", "pkg-config", "bindgen", "autotools", "vcpkg", "nasm-rs"];

/// The `--cfg` values of the rustflags cargo would use for the workspace and the target (see
/// [`super::cfg::flags`]).
fn workspace_flags(config: &Config, cfg: &CfgEnv) -> Result<(Vec<cargo_platform::Cfg>, Vec<String>), SurfaceError> {
    let env: Vec<(String, String)> = match &config.fetch.env {
        Some(env) => env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        None => std::env::vars().collect(),
    };
    let cargo_home = config.fetch.cargo_home.clone().or_else(|| {
        match env.iter().find(|(k, v)| k == "CARGO_HOME" && !v.is_empty()) {
            Some((_, h)) => {
                let h = PathBuf::from(h);
                Some(if h.is_absolute() { h } else { config.root.join(h) })
            }
            None => dirs::home_dir().map(|h| h.join(".cargo")),
        }
    });
    let src = super::cfg::flags::FlagSources { cwd: &config.root, cargo_home: cargo_home.as_deref(), env: &env };
    let err = |e: super::cfg::flags::FlagsError| SurfaceError::Config(format!("rustflags: {e}"));
    Ok((super::cfg::flags::workspace_cfgs(&src, cfg).map_err(err)?, super::cfg::flags::workspace_rustflags(&src, cfg).map_err(err)?))
}

/// Analyze every unit; results indexed like `graph.units`.
fn analyze_all(
    config: &Config,
    ws: &Workspace,
    graph: &Graph,
    sources: &Sources,
    rules: &Rules,
    rules_fingerprint: &str,
    disk_trees: &Mutex<BTreeMap<PathBuf, std::sync::Arc<FileTree>>>,
) -> Result<Vec<CrateAnalysis>, SurfaceError> {
    let n = graph.units.len();
    // Dependency order: a unit is analyzed after every unit it depends on (their exports feed it).
    let mut order = Vec::with_capacity(n);
    let mut state = vec![0u8; n];
    fn visit(i: usize, g: &Graph, state: &mut [u8], order: &mut Vec<usize>) {
        if state[i] != 0 {
            return;
        }
        state[i] = 1;
        for &(_, d) in &g.units[i].deps {
            visit(d, g, state, order);
        }
        state[i] = 2;
        order.push(i);
    }
    for i in 0..n {
        visit(i, graph, &mut state, &mut order);
    }
    // Levels for parallelism: a unit's level is one more than its deepest dependency.
    let mut level = vec![0usize; n];
    for &i in &order {
        level[i] = graph.units[i].deps.iter().map(|&(_, d)| level[d] + 1).max().unwrap_or(0);
    }
    let max_level = level.iter().copied().max().unwrap_or(0);
    let cache = ResultCache { dir: cache_root(&config.fetch).map(|d| d.join("surface")), rules: rules_fingerprint.to_string() };
    let results: Vec<Mutex<Option<Done>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let markers: Vec<String> = graph.units.iter().map(marker_of).collect();
    let by_marker: HashMap<&str, usize> = markers.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let base_cfg = CfgEnv::for_target(&config.target, &BTreeSet::new()).map_err(SurfaceError::Config)?;
    let (flags, rustflags) = workspace_flags(config, &base_cfg)?;
    let base_cfg = base_cfg.with_flags(&flags);
    // What build-script evaluations answer compiler probes with.
    let toolchain = super::buildscript::Toolchain::for_workspace(&config.root);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let progress = &config.fetch.progress;
    progress.add(crate::progress::Stage::Analyse, n as u64);
    for lv in 0..=max_level {
        let todo: Vec<usize> = (0..n).filter(|&i| level[i] == lv).collect();
        let err: Mutex<Option<SurfaceError>> = Mutex::new(None);
        // On large-stack threads: deeply nested source must not overflow a stack (guard.rs).
        super::guard::parallel_map(&todo, cpus, |&i| {
            let unit = &graph.units[i];
            let done = |d: usize| results[d].lock().unwrap().clone();
            let mut deps: Vec<(String, Done)> = unit.deps.iter().filter_map(|(name, d)| done(*d).map(|x| (name.clone(), x))).collect();
            // The crates whose macros can expand here, under their markers: what `$crate`
            // in those macros names.
            let mut queue: Vec<String> = deps.iter().flat_map(|(_, d)| d.analysis.exports.macros.values().map(|m| m.krate.clone())).collect();
            let mut seen: BTreeSet<String> = BTreeSet::new();
            while let Some(m) = queue.pop() {
                if !seen.insert(m.clone()) {
                    continue;
                }
                if let Some(x) = by_marker.get(m.as_str()).and_then(|&d| done(d)) {
                    queue.extend(x.analysis.exports.macros.values().map(|mm| mm.krate.clone()));
                    deps.push((m, x));
                }
            }
            let build_root = unit
                .deps
                .iter()
                .find(|(name, _)| name == crate::workspace::BUILD_SCRIPT_DEP)
                .map(|(_, d)| graph.units[*d].root.as_str());
            let build_eval = unit
                .deps
                .iter()
                .find(|(name, _)| name == crate::workspace::BUILD_SCRIPT_DEP)
                .and_then(|(_, d)| done(*d))
                .and_then(|d| d.analysis.build.clone());
            let ctx = UnitCtx { sources, disk_trees, base_cfg: &base_cfg, rules, cache: &cache, target: &config.target, marker: &markers[i], build_root, toolchain: &toolchain, rustflags: &rustflags, build_eval };
            progress.start(crate::progress::Stage::Analyse, || format!("{} {}", unit.package.name, unit.package.version));
            let analysed = analyze_unit(unit, &deps, &ctx);
            progress.done(crate::progress::Stage::Analyse);
            let mut analysis = match analysed {
                Ok(a) => a,
                Err(e) => {
                    *err.lock().unwrap() = Some(e);
                    return;
                }
            };
            analysis.findings.extend(kind_findings(unit, ws));
            // Link directives the build script prints: it links native code.
            if let Some(ev) = analysis.build.clone() {
                for (file, line, text) in ev.link_evidence() {
                    analysis.findings.push(Finding { capability: Capability::BuildNative, scope: Scope::Build, file, line, column: 1, path: text, chain: Vec::new(), expanded_from: None, through_trait: false });
                }
            }
            if unit.kind == UnitKind::BuildScript {
                for &(_, d) in &unit.deps {
                    let dep = &graph.units[d];
                    if NATIVE_BUILD_DEPS.contains(&dep.package.name.as_str()) {
                        analysis.findings.push(Finding {
                            capability: Capability::BuildNative,
                            scope: Scope::Build,
                            file: unit.root.clone(),
                            line: 1,
                            column: 1,
                            path: format!("build-dependency {}: builds native code", dep.package.name),
                            chain: Vec::new(),
                            expanded_from: None,
                            through_trait: false,
                        });
                    }
                }
            }
            analysis.findings.sort();
            analysis.findings.dedup();
            let digest = if analysis.exports_digest.is_empty() { exports_digest(&analysis.exports) } else { analysis.exports_digest.clone() };
            *results[i].lock().unwrap() = Some(Done { analysis: Arc::new(analysis), digest: Arc::from(digest.as_str()) });
        });
        if let Some(e) = err.into_inner().unwrap() {
            return Err(e);
        }
    }
    Ok(results
        .into_iter()
        .map(|m| match m.into_inner().unwrap() {
            Some(d) => Arc::try_unwrap(d.analysis).unwrap_or_else(|a| (*a).clone()),
            None => CrateAnalysis { findings: Vec::new(), ..CrateAnalysis::default() },
        })
        .collect())
}

/// A unit's analysis and the digest of what it exports (for the cache keys of dependents).
#[derive(Clone)]
struct Done {
    analysis: Arc<CrateAnalysis>,
    digest: Arc<str>,
}

fn exports_digest(ex: &Exports) -> String {
    // Streamed into the hash: the JSON of a large crate's exports is never held whole.
    let mut h = Sha256::new();
    if serde_json::to_writer(&mut h, ex).is_err() {
        h = Sha256::new();
    }
    format!("{:x}", h.finalize())
}

/// The identifier `$crate` of a unit's exported macros becomes in the crates that expand
/// them; they find the unit's exports under it.
fn marker_of(unit: &Unit) -> String {
    let mut h = Sha256::new();
    for part in [&unit.package.name, &unit.package.version, unit.package.source.as_deref().unwrap_or(""), &unit.crate_name] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.update(format!("{:?}", unit.kind).as_bytes());
    let d = h.finalize();
    let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("__velaris_crate_{hex}")
}

/// What every unit's analysis shares.
struct UnitCtx<'a> {
    sources: &'a Sources,
    disk_trees: &'a Mutex<BTreeMap<PathBuf, std::sync::Arc<FileTree>>>,
    base_cfg: &'a CfgEnv,
    rules: &'a Rules,
    cache: &'a ResultCache,
    target: &'a str,
    marker: &'a str,
    build_root: Option<&'a str>,
    /// The compiler the build is taken to use (for build-script evaluation).
    toolchain: &'a super::buildscript::Toolchain,
    rustflags: &'a [String],
    /// The evaluation of the unit's package's build script, when it has one.
    build_eval: Option<Arc<super::buildscript::Evaluation>>,
}

fn analyze_unit(unit: &Unit, deps: &[(String, Done)], ctx: &UnitCtx) -> Result<CrateAnalysis, SurfaceError> {
    let UnitCtx { sources, disk_trees, base_cfg, rules, cache, target, .. } = *ctx;
    if let Some(err) = &unit.error {
        return Ok(CrateAnalysis { findings: vec![unanalyzed(&unit.root, unit.scope, err.clone())], ..CrateAnalysis::default() });
    }
    // Only registry packages are cached: their checksum names their source for good.
    let digests: Vec<(String, String)> = deps.iter().map(|(n, d)| (n.clone(), d.digest.to_string())).collect();
    // The cfgs the unit is compiled under. Names the compiler does not set are unknown in a
    // package with a build script (it may set any, however it prints it), false elsewhere;
    // the workspace's `--cfg` flags are true, except on the host side, which they may not
    // reach.
    let mut cfg = base_cfg.with_features(&unit.features);
    if unit.scope == Scope::Build {
        cfg = cfg.for_host_unit();
    }
    // With an evaluation of the build script, the cfgs it sets are exact when every one it
    // can print is known (see `buildscript`), and the features it turns on are on.
    let build_eval = ctx.build_eval.as_deref().filter(|_| unit.kind != UnitKind::BuildScript);
    let others = if ctx.build_root.is_some() && unit.kind != UnitKind::BuildScript { super::buildscript::cfg_others(build_eval) } else { Others::False };
    if let Some(ev) = build_eval {
        let extra = ev.features();
        if !extra.is_subset(&unit.features) {
            cfg = cfg.with_features(&unit.features.union(&extra).cloned().collect());
        }
    }
    let host_cfg = cfg.clone();
    let cfg = cfg.with_others(others);
    // The store key of a package read from the store; a package on disk is never cached.
    let store_key = SourceStore::key(&unit.package).filter(|k| unit.package_dir.is_none() && sources.crates.contains_key(k));
    let mut keyed_target = format!("{target}\n{}", cfg.fingerprint());
    if unit.kind == UnitKind::BuildScript {
        // What the evaluation answers probes with, and sees as CARGO_ENCODED_RUSTFLAGS.
        keyed_target.push_str(&format!("\n{}\nrustflags {:?}", ctx.toolchain.fingerprint(), ctx.rustflags));
    }
    if let Some(ev) = build_eval {
        keyed_target.push_str(&format!("\nbuild script {}", ev.digest));
    }
    let cache_key = store_key.as_deref().map(|c| cache.key(c, unit, &keyed_target, &digests));
    if let Some(hit) = cache_key.as_deref().and_then(|k| cache.get(k)) {
        return Ok(hit);
    }
    let tree: std::sync::Arc<FileTree> = if let Some(dir) = &unit.package_dir {
        let mut trees = disk_trees.lock().unwrap();
        match trees.get(dir) {
            Some(t) => t.clone(),
            None => {
                let t = std::sync::Arc::new(read_dir_tree(dir)?);
                trees.insert(dir.clone(), t.clone());
                t
            }
        }
    } else if let Some(c) = store_key.as_deref().and_then(|k| sources.crates.get(k)) {
        let mut t = unpack(&unit.package.name, &unit.package.version, &c.bytes)?;
        if let Some(ev) = build_eval {
            ev.add_to(&mut t);
        }
        std::sync::Arc::new(t)
    } else {
        let why = match unit.package.source.as_deref() {
            Some(s) if s.starts_with("git+") => "git source: no checksum in Cargo.lock, not fetched".to_string(),
            _ => "package source not available".to_string(),
        };
        return Ok(CrateAnalysis { findings: vec![unanalyzed(&unit.root, unit.scope, why)], ..CrateAnalysis::default() });
    };
    // A package on disk is shared by its units: the generated files go into a copy.
    let tree = match build_eval {
        Some(ev) if unit.package_dir.is_some() && !ev.files.is_empty() => {
            let mut t = (*tree).clone();
            ev.add_to(&mut t);
            std::sync::Arc::new(t)
        }
        _ => tree,
    };
    let dep_map: BTreeMap<String, std::sync::Arc<Exports>> = deps.iter().map(|(n, d)| (n.clone(), d.analysis.exports.clone())).collect();
    let input = CrateInput {
        crate_name: &unit.crate_name,
        files: &tree,
        root: &unit.root,
        cfg: &cfg,
        scope: unit.scope,
        deps: &dep_map,
        rules,
        edition: Edition::from_manifest(Some(&unit.edition)),
        marker: ctx.marker,
        version: &unit.package.version,
        // The workspace's own code (and path packages): the program step resolves its calls
        // through traits into findings.
        open_sites: unit.package_dir.is_some(),
    };
    // An analyzer bug on one crate must not pass for "no capability" nor stop the run: the
    // crate is reported unanalyzed, which the ratchet counts like any capability.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut a = analyze::analyze_built(&input, build_eval);
        if unit.kind == UnitKind::BuildScript {
            let target_cfg = base_cfg.with_features(&unit.features);
            let script_deps: BTreeMap<String, String> = deps
                .iter()
                .filter(|(n, _)| !n.starts_with("__velaris_crate_"))
                .map(|(n, d)| (n.clone(), if d.analysis.exports.crate_name.is_empty() { n.clone() } else { d.analysis.exports.crate_name.clone() }))
                .collect();
            a.build = Some(Arc::new(super::buildscript::evaluate(&super::buildscript::Package {
                name: &unit.package.name,
                version: &unit.package.version,
                files: &tree,
                root: &unit.root,
                features: &unit.features,
                links: unit.links.as_deref(),
                target_cfg: &target_cfg,
                host_cfg: &host_cfg,
                rustflags: Some(ctx.rustflags),
                toolchain: ctx.toolchain,
                deps: script_deps,
                edition: Edition::from_manifest(Some(&unit.edition)),
                budget: super::buildscript::Budget::default(),
            })));
        }
        a
    }));
    let analysis = match caught {
        Ok(mut a) => {
            a.exports_digest = exports_digest(&a.exports);
            if let Some(k) = &cache_key {
                cache.put(k, &a);
            }
            a
        }
        // Not cached: the failure belongs to this velaris, not to the package.
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            CrateAnalysis {
                findings: vec![unanalyzed(&unit.root, unit.scope, format!("analyzer failure: {msg}"))],
                ..CrateAnalysis::default()
            }
        }
    };
    Ok(analysis)
}

/// The result of a run: the surface, and the sources it was derived from (for excerpts).
pub struct Analysis {
    pub surface: Surface,
    /// Packages read from disk.
    trees: BTreeMap<(String, String), std::sync::Arc<FileTree>>,
    /// Verified `.crate` bytes of registry packages (and packed git packages).
    crates: BTreeMap<(String, String), Arc<Vec<u8>>>,
}

impl Analysis {
    /// Line `line` (1-based) of `file` in package `name` `version`, when the source is at hand.
    pub fn source_line(&self, name: &str, version: &str, file: &str, line: u32) -> Option<String> {
        let key = (name.to_string(), version.to_string());
        let unpacked;
        let tree: &FileTree = match self.trees.get(&key) {
            Some(t) => t,
            None => {
                unpacked = unpack(name, version, self.crates.get(&key)?).ok()?;
                &unpacked
            }
        };
        let bytes = tree.get(file)?;
        let text = String::from_utf8_lossy(bytes);
        text.lines().nth((line as usize).checked_sub(1)?).map(str::to_string)
    }
}

/// velaris' cache directory, resolved as the registry module resolves it.
fn cache_root(opts: &FetchOptions) -> Option<PathBuf> {
    opts.cache_dir
        .clone()
        .or_else(|| std::env::var_os("VELARIS_CACHE_DIR").filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| dirs::cache_dir().map(|d| d.join("velaris")))
}

/// A run's whole result, for callers that need more than the surface (deps-diff).
pub struct Detailed {
    pub analysis: Analysis,
    /// The graph the workspace resolved to for the target.
    pub graph: Graph,
    /// The findings of each unit of `graph`, indexed like `graph.units`.
    pub findings: Vec<Vec<Finding>>,
    /// The workspace's members.
    pub members: Vec<PackageId>,
}

/// Run the whole analysis.
pub fn run(config: &Config) -> Result<Analysis, SurfaceError> {
    Ok(run_with(config, &SourceStore::new())?.analysis)
}

/// Resolve the graph for the target, fetching what it reaches into `store`, without analysing
/// anything; with the workspace's members.
pub fn graph_with(config: &Config, store: &SourceStore) -> Result<(Graph, Vec<PackageId>), SurfaceError> {
    let ws = Workspace::load(&config.root)?;
    let cfg = CfgEnv::for_target(&config.target, &BTreeSet::new()).map_err(SurfaceError::Config)?;
    let (graph, _) = resolve_and_fetch(config, &ws, &cfg, store, false)?;
    Ok((graph, ws.members().map(|m| m.id.clone()).collect()))
}

/// Run the whole analysis with sources from (and added to) `store`, and keep the graph and
/// every unit's findings.
pub fn run_with(config: &Config, store: &SourceStore) -> Result<Detailed, SurfaceError> {
    run_resolved(config, store, false)
}

/// [`run_with`] on a workspace whose lockfile leads
/// ([`crate::workspace::ResolveOptions::lockfile_led`]): what the lockfile does not lock is not
/// built, instead of an error. For the probe workspace `deps-diff --old/--new` writes around
/// two lockfiles, never for a workspace on disk.
pub fn run_lockfile_led(config: &Config, store: &SourceStore) -> Result<Detailed, SurfaceError> {
    run_resolved(config, store, true)
}

fn run_resolved(config: &Config, store: &SourceStore, lockfile_led: bool) -> Result<Detailed, SurfaceError> {
    let ws = Workspace::load(&config.root)?;
    let overlay_path = config.root.join(OVERLAY_FILE);
    let mut fingerprint = Sha256::new();
    fingerprint.update(super::rules::BUILTIN_RULES_TOML.as_bytes());
    let owned_rules;
    // A confined (untrusted) workspace's own overlay is never read: the confinement's is used.
    let overlay = match &config.fetch.confinement {
        Some(c) => c.rules_overlay.clone(),
        None if overlay_path.exists() => Some(crate::fsio::read_text(&overlay_path, crate::fsio::TEXT_CAP, "a rules overlay")?),
        None => None,
    };
    let rules: &Rules = if let Some(text) = overlay {
        fingerprint.update([0]);
        fingerprint.update(text.as_bytes());
        owned_rules = Rules::with_overlay(&text, OVERLAY_FILE).map_err(|e| SurfaceError::Config(e.to_string()))?;
        &owned_rules
    } else {
        Rules::builtin()
    };
    let cfg = CfgEnv::for_target(&config.target, &BTreeSet::new()).map_err(SurfaceError::Config)?;
    let (graph, sources) = resolve_and_fetch(config, &ws, &cfg, store, lockfile_led)?;
    let disk_trees = Mutex::new(BTreeMap::new());
    let rules_fingerprint = format!("{:x}", fingerprint.finalize());
    let analyses = analyze_all(config, &ws, &graph, &sources, rules, &rules_fingerprint, &disk_trees)?;
    let disk = disk_trees.into_inner().unwrap();
    let package_files = |u: &Unit| -> Option<Vec<String>> {
        let names: Vec<String> = match &u.package_dir {
            Some(dir) => disk.get(dir)?.keys().cloned().collect(),
            None => sources.crates.get(&SourceStore::key(&u.package)?)?.files.iter().cloned().collect(),
        };
        Some(names.into_iter().filter(|f| f.ends_with(".rs")).collect())
    };
    let surface = assemble_with(&graph, &analyses, &config.target, &package_files);
    let mut trees: BTreeMap<(String, String), std::sync::Arc<FileTree>> = BTreeMap::new();
    for unit in &graph.units {
        let key = key_of(&unit.package);
        if let Some(dir) = &unit.package_dir {
            if let Some(t) = disk.get(dir) {
                trees.insert(key, t.clone());
            }
        }
    }
    let findings = analyses.into_iter().map(|a| a.findings).collect();
    let crates = graph
        .units
        .iter()
        .filter(|u| u.package_dir.is_none())
        .filter_map(|u| Some((key_of(&u.package), sources.crates.get(&SourceStore::key(&u.package)?)?.bytes.clone())))
        .collect();
    let members = ws.members().map(|m| m.id.clone()).collect();
    Ok(Detailed { analysis: Analysis { surface, trees, crates }, graph, findings, members })
}

/// Per-program surfaces from the per-unit analyses.
pub fn assemble(graph: &Graph, analyses: &[CrateAnalysis], target: &str) -> Surface {
    assemble_with(graph, analyses, target, &|_| None)
}

/// The `.rs` files of a package that no unit compiled into the program analysed, with why:
/// declared under a false cfg (with the predicate), another target of the package (tests,
/// benches, examples, other binaries), or declared nowhere. At most [`MAX_UNLOADED`], and the
/// count of all.
///
/// Bounded for any package (up to 100,000 files with names of up to 4 KiB): one pass over
/// the names, reasons only for the files listed, and the search for a skipped module whose
/// directory holds a file reads at most [`LISTING_BYTES`] of names in all; past it a file is
/// listed as `not-declared` instead (the file is listed either way).
pub(crate) fn unloaded(all: &[String], loaded: &BTreeSet<String>, skipped: &BTreeMap<String, String>) -> (Vec<Unloaded>, u64) {
    unloaded_with(all, loaded, skipped, LISTING_BYTES)
}

/// The names [`unloaded`] may read while it looks for the skipped module above a file.
pub(crate) const LISTING_BYTES: crate::resources::meter::Limit = crate::resources::meter::Limit::new("coverage listing", crate::resources::meter::Unit::Bytes, 64 << 20);

pub(crate) fn unloaded_with(all: &[String], loaded: &BTreeSet<String>, skipped: &BTreeMap<String, String>, limit: crate::resources::meter::Limit) -> (Vec<Unloaded>, u64) {
    // The directory a skipped module file's children sit in (`src/kv` for `src/kv.rs` and
    // `src/kv/mod.rs`), with that file.
    let mut dirs: HashMap<&str, (&str, &str)> = HashMap::new();
    for (k, d) in skipped {
        let dir = k.strip_suffix("/mod.rs").or_else(|| k.strip_suffix(".rs"));
        if let Some(dir) = dir {
            // `mod.rs` first, as before: the first candidate of the deepest directory wins.
            let e = dirs.entry(dir).or_insert((k.as_str(), d.as_str()));
            if k.ends_with("/mod.rs") {
                *e = (k.as_str(), d.as_str());
            }
        }
    }
    let mut meter = crate::resources::meter::Meter::new(limit);
    let mut out = Vec::new();
    let mut count = 0u64;
    for f in all {
        if loaded.contains(f) {
            continue;
        }
        count += 1;
        if out.len() >= MAX_UNLOADED {
            continue;
        }
        let (reason, detail) = if let Some(d) = skipped.get(f) {
            (UnloadedReason::CfgFalse, d.clone())
        } else if let Some((m, d)) = under_skipped(f, &dirs, &mut meter) {
            // In the directory of a module file that is itself not compiled: its children.
            (UnloadedReason::CfgFalse, format!("under {m}, {d}"))
        } else if ["tests/", "benches/", "examples/", "src/bin/"].iter().any(|p| f.starts_with(p)) || f == "src/main.rs" {
            (UnloadedReason::OtherTarget, String::new())
        } else {
            (UnloadedReason::NotDeclared, String::new())
        };
        out.push(Unloaded { file: f.clone(), reason, detail });
    }
    (out, count)
}

/// The skipped module file whose directory holds `f` (`src/arch/aarch64/mod.rs` for
/// `src/arch/aarch64/neon/x.rs`; `src/kv.rs` for `src/kv/key.rs`), with its detail: the
/// deepest such directory. Each directory looked up is charged to `meter`.
fn under_skipped<'a>(f: &str, dirs: &HashMap<&str, (&'a str, &'a str)>, meter: &mut crate::resources::meter::Meter) -> Option<(&'a str, &'a str)> {
    if dirs.is_empty() {
        return None;
    }
    let mut dir = f;
    while let Some(i) = dir.rfind('/') {
        dir = &dir[..i];
        meter.charge(dir.len() as u64 + 1).ok()?;
        if let Some(&(k, d)) = dirs.get(dir).filter(|(k, _)| *k != f) {
            return Some((k, d));
        }
    }
    None
}

/// [`assemble`], with the `.rs` files of each unit's package (for each crate's `unloaded`
/// list; `None`: not listed).
pub fn assemble_with(graph: &Graph, analyses: &[CrateAnalysis], target: &str, package_files: &dyn Fn(&Unit) -> Option<Vec<String>>) -> Surface {
    let mut programs = Vec::new();
    // What each set of units of a crate shows, shared between programs.
    #[allow(clippy::type_complexity)]
    let mut shared: HashMap<Vec<usize>, (BTreeSet<Capability>, Arc<Vec<Finding>>, Arc<Vec<String>>, Arc<Vec<Unloaded>>, u64, Arc<Vec<crate::surface::buildscript::Evaluation>>)> =
        HashMap::new();
    for prog in &graph.programs {
        // Crates by (name, version): findings of all their units (lib, build script).
        let mut crates: BTreeMap<(String, String), (Vec<String>, Vec<usize>)> = BTreeMap::new();
        // What the program's own code reaches of its dependencies, by (crate, version).
        let mut reached: BTreeMap<(String, String), BTreeSet<Capability>> = BTreeMap::new();
        let mut calls = CallStats::default();
        let mut lib_names: BTreeMap<(String, String), String> = BTreeMap::new();
        // Per crate: the files its units skipped (under a false cfg), and its package's files.
        let mut skipped: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
        let mut pkg_files: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        // What the program itself can do.
        let mut capabilities: BTreeSet<Capability> = BTreeSet::new();
        let mut units_in: Vec<usize> = Vec::new();
        for (unit_idx, path) in graph.reachable(prog) {
            let unit = &graph.units[unit_idx];
            let a = &analyses[unit_idx];
            units_in.push(unit_idx);
            if matches!(unit.kind, UnitKind::Lib | UnitKind::ProcMacro) {
                lib_names.insert(key_of(&unit.package), unit.crate_name.clone());
            }
            if unit.package == prog.package && matches!(unit.kind, UnitKind::Lib | UnitKind::Bin) {
                calls.total += a.calls.total;
                calls.resolved += a.calls.resolved;
                for f in a.findings.iter().filter(|f| f.scope == Scope::Runtime) {
                    for h in &f.chain {
                        // Hops name the crate as the code does (its lib's crate name).
                        reached.entry((h.krate.to_string(), h.version.to_string())).or_default().insert(f.capability);
                    }
                }
            }
            // A program's own bin and lib both belong to its package.
            let key = (unit.package.name.clone(), unit.package.version.clone());
            let via: Vec<String> = {
                let mut v: Vec<String> = Vec::new();
                for &u in &path {
                    let name = graph.units[u].package.name.clone();
                    if v.last() != Some(&name) {
                        v.push(name);
                    }
                }
                v
            };
            let entry = crates.entry(key).or_insert_with(|| (via.clone(), Vec::new()));
            if via.len() < entry.0.len() {
                entry.0 = via;
            }
            entry.1.push(unit_idx);
            // A proc macro's own code (not its build script's) runs in the builds that use it:
            // for a proc-macro program, that is what it does.
            let own_build = prog.kind == ProgramKind::ProcMacro && unit.kind != UnitKind::BuildScript && unit.scope == Scope::Build;
            capabilities.extend(a.findings.iter().filter(|f| f.counts_for_program() || own_build).map(|f| f.capability));
            let key = key_of(&unit.package);
            let sk = skipped.entry(key.clone()).or_default();
            for s in &a.skipped {
                sk.entry(s.file.clone()).or_insert_with(|| s.detail.clone());
            }
            if !pkg_files.contains_key(&key)
                && let Some(files) = package_files(unit)
            {
                pkg_files.insert(key, files);
            }
        }
        // Calls through traits, resolved over the program's graph: findings at the places in
        // the workspace's own code whose calls go on through a trait, and what the program's
        // entry points reach.
        let refs: Vec<super::callgraph::UnitRef> = units_in
            .iter()
            .map(|&u| super::callgraph::UnitRef { analysis: &analyses[u], krate: &graph.units[u].crate_name, version: &graph.units[u].package.version })
            .collect();
        let dispatch = super::callgraph::Dispatch::new(&refs);
        let mut dispatched: BTreeMap<(String, String), Vec<Finding>> = BTreeMap::new();
        let mut unresolved = calls.total.saturating_sub(calls.resolved);
        for &u in &units_in {
            let unit = &graph.units[u];
            if unit.package_dir.is_none() || analyses[u].open_sites.is_empty() {
                continue;
            }
            let (found, bounded) = dispatch.findings(&analyses[u].open_sites);
            if unit.package == prog.package {
                unresolved += bounded;
            }
            for f in &found {
                if unit.package == prog.package && f.scope == Scope::Runtime {
                    for h in &f.chain {
                        reached.entry((h.krate.to_string(), h.version.to_string())).or_default().insert(f.capability);
                    }
                }
            }
            // Informational: the capabilities are those of the crates whose code has them,
            // already in the union.
            dispatched.entry(key_of(&unit.package)).or_default().extend(found);
        }
        let reachable = {
            let mut sums: Vec<&super::analyze::summary::Summary> = Vec::new();
            if let Some(e) = &analyses[prog.unit].entry {
                sums.push(e);
            }
            let mut pre_main = false;
            for &u in &units_in {
                if let Some(r) = &analyses[u].roots {
                    sums.push(r);
                    pre_main = true;
                }
            }
            let (mut reached_caps, bounded, through) = dispatch.reachable(&sums);
            reached_caps.retain(|c| CARRIED.contains(c));
            if pre_main || capabilities.contains(&Capability::PreMain) {
                reached_caps.insert(Capability::PreMain);
            }
            for c in [Capability::BuildScript, Capability::BuildProcMacro, Capability::BuildNative] {
                if capabilities.contains(&c) {
                    reached_caps.insert(c);
                }
            }
            super::model::Reachable { capabilities: reached_caps, unresolved: unresolved + bounded, through_traits: through }
        };
        if std::env::var_os("VELARIS_DEBUG_BUDGETS").is_some() {
            eprintln!("budgets: program {}: dispatch {} of {}", prog.name, dispatch.steps(), super::callgraph::STEPS.max);
        }
        // Every crate compiled into the program, clean ones too: "analysed and clean" is not
        // "not in the graph". What a set of units shows is computed once for every program
        // that compiles it.
        let mut list: Vec<CrateSurface> = crates
            .into_iter()
            .map(|((name, version), (via, mut units))| {
                units.sort_unstable();
                let d = shared
                    .entry(units.clone())
                    .or_insert_with(|| {
                        let mut findings: Vec<Finding> = units.iter().flat_map(|&u| analyses[u].findings.iter().cloned()).collect();
                        findings.sort();
                        findings.dedup();
                        let mut files: Vec<String> = units.iter().flat_map(|&u| analyses[u].files.iter().cloned()).collect();
                        files.sort();
                        files.dedup();
                        let key = (name.clone(), version.clone());
                        let (list, count) = match pkg_files.get(&key) {
                            Some(all) => {
                                let loaded: BTreeSet<String> = files.iter().cloned().collect();
                                unloaded(all, &loaded, skipped.get(&key).unwrap_or(&BTreeMap::new()))
                            }
                            None => (Vec::new(), 0),
                        };
                        let capabilities = findings.iter().map(|f| f.capability).collect();
                        // What its build scripts were evaluated to, without the generated text.
                        let mut builds: Vec<crate::surface::buildscript::Evaluation> = Vec::new();
                        for r in units.iter().filter_map(|&u| analyses[u].build.as_ref()).map(|ev| ev.record()) {
                            if !builds.contains(&r) {
                                builds.push(r);
                            }
                        }
                        (capabilities, Arc::new(findings), Arc::new(files), Arc::new(list), count, Arc::new(builds))
                    })
                    .clone();
                let (mut capabilities, mut findings) = (d.0, d.1);
                // This program's calls through traits in the workspace's code: its own.
                if let Some(extra) = dispatched.get(&(name.clone(), version.clone())).filter(|e| !e.is_empty()) {
                    let mut all: Vec<Finding> = findings.iter().cloned().chain(extra.iter().cloned()).collect();
                    all.sort();
                    all.dedup();
                    capabilities = all.iter().filter(|f| !f.through_trait).map(|f| f.capability).collect();
                    findings = Arc::new(all);
                }
                CrateSurface { name, version, capabilities, findings, via, files: d.2, unloaded: d.3, unloaded_count: d.4, build_scripts: d.5 }
            })
            .collect();
        list.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        let reached_from_program = list
            .iter()
            .filter(|c| (c.name.as_str(), c.version.as_str()) != (prog.package.name.as_str(), prog.package.version.as_str()))
            .filter_map(|c| {
                let capabilities: BTreeSet<Capability> = c
                    .findings
                    .iter()
                    .filter(|f| f.scope == Scope::Runtime && CARRIED.contains(&f.capability))
                    .map(|f| f.capability)
                    .collect();
                if capabilities.is_empty() {
                    return None;
                }
                let got = lib_names
                    .get(&(c.name.clone(), c.version.clone()))
                    .and_then(|lib| reached.get(&(lib.clone(), c.version.clone())))
                    .cloned()
                    .unwrap_or_default();
                Some(Reached {
                    krate: c.name.clone(),
                    version: c.version.clone(),
                    reached: got.intersection(&capabilities).copied().collect(),
                    capabilities,
                })
            })
            .collect();
        programs.push(ProgramSurface {
            reachable: Some(reachable),
            name: prog.name.clone(),
            kind: prog.kind,
            package: prog.package.name.clone(),
            capabilities,
            crates: list,
            reached_from_program,
            calls,
        });
    }
    programs.sort_by(|a, b| (&a.name, &a.package).cmp(&(&b.name, &b.package)));
    Surface { target: target.to_string(), programs }
}
