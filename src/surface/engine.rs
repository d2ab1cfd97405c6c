//! From a workspace on disk to its [`Surface`].
//!
//! This module owns the run: load the workspace and its lockfile, fetch every registry package
//! through [`crate::registry`] (sha256-checked against Cargo.lock before a byte is read), unpack
//! it in memory, resolve the graph of units each program compiles ([`crate::workspace`]), analyze
//! every unit in dependency order ([`super::analyze`]), with results cached by (package checksum,
//! features, target, analyzer version), and assemble per-program surfaces. Nothing here builds or
//! runs code, and cargo is never invoked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::analyze::{self, CrateAnalysis, CrateInput, Exports};
use super::cache::ResultCache;
use super::cfg::CfgEnv;
use super::model::{Capability, CrateSurface, Finding, ProgramSurface, Scope, Surface};
use super::rules::Rules;
use crate::package::{self, FileTree, Limits};
use crate::registry::{BatchError, FetchOptions, Fetcher, PackageRef};
use crate::workspace::{Graph, PackageId, Unit, UnitKind, Workspace};

/// Bumped whenever the analyzer or the rules change what they find: part of every cache key.
/// Bump the suffix with every change to the analyzer's behaviour; the rules in force are
/// fingerprinted separately.
pub const ANALYZER_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+analyzer-3");

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

/// A registry package's verified `.crate`, kept compressed: it is unpacked again when a unit of
/// it is analyzed, so the whole dependency tree never sits unpacked in memory at once.
struct Crated {
    bytes: Vec<u8>,
    /// The published (normalized) Cargo.toml.
    manifest: Option<String>,
    /// Every file name in the package.
    files: BTreeSet<String>,
}

/// The registry packages of the lockfile, verified and checked against the unpacking rules.
struct Sources {
    crates: BTreeMap<(String, String), Crated>,
    checksums: BTreeMap<(String, String), String>,
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

/// Fetch, verify and unpack every registry package the lockfile names.
fn fetch_sources(config: &Config, ws: &Workspace) -> Result<Sources, SurfaceError> {
    let mut refs = Vec::new();
    for p in ws.lock_packages() {
        if let (Some(source), Some(checksum)) = (&p.source, &p.checksum) {
            if source.starts_with("registry+") || source.starts_with("sparse+") {
                refs.push(PackageRef {
                    name: p.name.clone(),
                    version: p.version.clone(),
                    source: source.clone(),
                    checksum: checksum.clone(),
                });
            }
        }
    }
    let mut sources = Sources { crates: BTreeMap::new(), checksums: BTreeMap::new() };
    if refs.is_empty() {
        return Ok(sources);
    }
    let fetcher = Fetcher::new(&config.root, config.fetch.clone()).map_err(|e| BatchError::Fetch(vec![e]))?;
    let fetched: Vec<(&PackageRef, crate::registry::Fetched)> = refs.iter().zip(fetcher.fetch_verified(&refs)?).collect();
    // Every archive must pass the unpacking rules before anything is cached or analyzed; only
    // the manifest and the file names are kept from this pass.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let checked = crate::depsdiff::parallel_map(&fetched, cpus, |(r, f)| {
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
        let key = (r.name.clone(), r.version.clone());
        sources.checksums.insert(key.clone(), r.checksum.clone());
        sources.crates.insert(key, Crated { bytes: f.bytes, manifest, files });
    }
    Ok(sources)
}

fn unanalyzed(file: &str, scope: Scope, why: String) -> Finding {
    Finding { capability: Capability::Unanalyzed, scope, file: file.to_string(), line: 1, column: 1, path: why }
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
    let results: Vec<Mutex<Option<CrateAnalysis>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let base_cfg = CfgEnv::for_target(&config.target, &BTreeSet::new()).map_err(SurfaceError::Config)?;
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for lv in 0..=max_level {
        let todo: Vec<usize> = (0..n).filter(|&i| level[i] == lv).collect();
        let err: Mutex<Option<SurfaceError>> = Mutex::new(None);
        // On large-stack threads: deeply nested source must not overflow a stack (guard.rs).
        super::guard::parallel_map(&todo, cpus, |&i| {
            let unit = &graph.units[i];
            let deps: Vec<(String, Exports)> = unit
                .deps
                .iter()
                .map(|(name, d)| (name.clone(), results[*d].lock().unwrap().as_ref().map(|a| a.exports.clone()).unwrap_or_default()))
                .collect();
            let mut analysis = match analyze_unit(unit, sources, disk_trees, &base_cfg, rules, &deps, &cache, &config.target) {
                Ok(a) => a,
                Err(e) => {
                    *err.lock().unwrap() = Some(e);
                    return;
                }
            };
            analysis.findings.extend(kind_findings(unit, ws));
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
                        });
                    }
                }
            }
            analysis.findings.sort();
            analysis.findings.dedup();
            *results[i].lock().unwrap() = Some(analysis);
        });
        if let Some(e) = err.into_inner().unwrap() {
            return Err(e);
        }
    }
    Ok(results.into_iter().map(|m| m.into_inner().unwrap().unwrap_or_else(|| CrateAnalysis { findings: Vec::new(), exports: Exports::default() })).collect())
}

#[allow(clippy::too_many_arguments)]
fn analyze_unit(
    unit: &Unit,
    sources: &Sources,
    disk_trees: &Mutex<BTreeMap<PathBuf, std::sync::Arc<FileTree>>>,
    base_cfg: &CfgEnv,
    rules: &Rules,
    deps: &[(String, Exports)],
    cache: &ResultCache,
    target: &str,
) -> Result<CrateAnalysis, SurfaceError> {
    if let Some(err) = &unit.error {
        return Ok(CrateAnalysis { findings: vec![unanalyzed(&unit.root, unit.scope, err.clone())], exports: Exports::default() });
    }
    // Only registry packages are cached: their checksum names their source for good.
    let cache_key = sources.checksums.get(&key_of(&unit.package)).map(|c| cache.key(c, unit, target, deps));
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
    } else if let Some(c) = sources.crates.get(&key_of(&unit.package)) {
        std::sync::Arc::new(unpack(&unit.package.name, &unit.package.version, &c.bytes)?)
    } else {
        let why = match unit.package.source.as_deref() {
            Some(s) if s.starts_with("git+") => "git source: no checksum in Cargo.lock, not fetched".to_string(),
            _ => "package source not available".to_string(),
        };
        return Ok(CrateAnalysis { findings: vec![unanalyzed(&unit.root, unit.scope, why)], exports: Exports::default() });
    };
    let cfg = base_cfg.with_features(&unit.features);
    let dep_map: BTreeMap<String, Exports> = deps.iter().cloned().collect();
    let input = CrateInput {
        crate_name: &unit.crate_name,
        files: &tree,
        root: &unit.root,
        cfg: &cfg,
        scope: unit.scope,
        deps: &dep_map,
        rules,
    };
    // An analyzer bug on one crate must not pass for "no capability" nor stop the run: the
    // crate is reported unanalyzed, which the ratchet counts like any capability.
    let analysis = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyze::analyze(&input))) {
        Ok(a) => {
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
                exports: Exports::default(),
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
    /// Verified `.crate` bytes of registry packages.
    crates: BTreeMap<(String, String), Vec<u8>>,
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

/// Run the whole analysis.
pub fn run(config: &Config) -> Result<Analysis, SurfaceError> {
    let ws = Workspace::load(&config.root)?;
    let overlay_path = config.root.join(OVERLAY_FILE);
    let mut fingerprint = Sha256::new();
    fingerprint.update(super::rules::BUILTIN_RULES_TOML.as_bytes());
    let owned_rules;
    let rules: &Rules = if overlay_path.exists() {
        let text = crate::fsio::read_text(&overlay_path, crate::fsio::TEXT_CAP, "a rules overlay")?;
        fingerprint.update([0]);
        fingerprint.update(text.as_bytes());
        owned_rules = Rules::with_overlay(&text, OVERLAY_FILE).map_err(|e| SurfaceError::Config(e.to_string()))?;
        &owned_rules
    } else {
        Rules::builtin()
    };
    let cfg = CfgEnv::for_target(&config.target, &BTreeSet::new()).map_err(SurfaceError::Config)?;
    let sources = fetch_sources(config, &ws)?;
    let graph = {
    let manifest_of = |id: &PackageId| -> Result<String, String> {
            let c = sources.crates.get(&key_of(id)).ok_or_else(|| format!("{} {} was not fetched", id.name, id.version))?;
            c.manifest.clone().ok_or_else(|| format!("{} {} has no UTF-8 Cargo.toml", id.name, id.version))
        };
        let target_matches = |key: &str| cfg.matches_target_key(key);
        let has_file = |id: &PackageId, file: &str| sources.crates.get(&key_of(id)).is_some_and(|c| c.files.contains(file));
        ws.resolve_with(&crate::workspace::ResolveOptions {
            target_matches: &target_matches,
            // Build scripts and proc macros run on the host; velaris analyzes for one target and
            // takes the host to be the same (docs/caveats.md).
            host_matches: None,
            manifest_of: &manifest_of,
            has_file: Some(&has_file),
        })?
    };
    let disk_trees = Mutex::new(BTreeMap::new());
    let rules_fingerprint = format!("{:x}", fingerprint.finalize());
    let analyses = analyze_all(config, &ws, &graph, &sources, rules, &rules_fingerprint, &disk_trees)?;
    let surface = assemble(&graph, &analyses, &config.target);
    let disk = disk_trees.into_inner().unwrap();
    let mut trees: BTreeMap<(String, String), std::sync::Arc<FileTree>> = BTreeMap::new();
    for unit in &graph.units {
        let key = key_of(&unit.package);
        if let Some(dir) = &unit.package_dir {
            if let Some(t) = disk.get(dir) {
                trees.insert(key, t.clone());
            }
        }
    }
    let crates = sources.crates.into_iter().map(|(k, c)| (k, c.bytes)).collect();
    Ok(Analysis { surface, trees, crates })
}

/// Per-program surfaces from the per-unit analyses.
pub fn assemble(graph: &Graph, analyses: &[CrateAnalysis], target: &str) -> Surface {
    let mut programs = Vec::new();
    for prog in &graph.programs {
        // Crates by (name, version): findings of all their units (lib, build script).
        let mut crates: BTreeMap<(String, String), CrateSurface> = BTreeMap::new();
        for (unit_idx, path) in graph.reachable(prog) {
            let unit = &graph.units[unit_idx];
            let a = &analyses[unit_idx];
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
            let entry = crates.entry(key).or_insert_with(|| CrateSurface {
                name: unit.package.name.clone(),
                version: unit.package.version.clone(),
                capabilities: BTreeSet::new(),
                findings: Vec::new(),
                via: via.clone(),
            });
            if via.len() < entry.via.len() {
                entry.via = via;
            }
            entry.findings.extend(a.findings.iter().cloned());
        }
        let mut list: Vec<CrateSurface> = crates
            .into_values()
            .filter_map(|mut c| {
                c.findings.sort();
                c.findings.dedup();
                c.capabilities = c.findings.iter().map(|f| f.capability).collect();
                (!c.capabilities.is_empty()).then_some(c)
            })
            .collect();
        list.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        let capabilities = list
            .iter()
            .flat_map(|c| c.findings.iter().filter(|f| f.counts_for_program()).map(|f| f.capability))
            .collect();
        programs.push(ProgramSurface {
            name: prog.name.clone(),
            package: prog.package.name.clone(),
            capabilities,
            crates: list,
        });
    }
    programs.sort_by(|a, b| (&a.name, &a.package).cmp(&(&b.name, &b.package)));
    Surface { target: target.to_string(), programs }
}
