//! The programs of a Cargo workspace and the graph of crates compiled into each.
//!
//! Everything comes from `Cargo.lock` and the manifests: nothing is ever run. Cargo is not
//! invoked (a checked-out repository's `.cargo/config.toml` could make such a run execute
//! code), so neither are `rustc`, build scripts or anything a configuration names.
//!
//! [`Workspace::load`] reads the root manifest, the members (and the path packages they
//! reach) from disk, and the lockfile. [`Workspace::resolve`] builds the [`Graph`]: the
//! lockfile fixes which package each dependency is; the manifests say which edges are
//! normal, build or dev (never followed), optional or target-specific; features are unified
//! as cargo's resolver 2 does for `cargo build --workspace` (see [`Workspace::resolve_with`]).

mod error;
mod lock;
mod manifest;
mod resolve;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use toml::{Table, Value};

pub use error::WorkspaceError;
pub use manifest::{BinTarget, DepDecl, DepKind, FeatureValue, LibTarget, Manifest};
pub use resolve::{HasFile, ResolveOptions};

use crate::surface::model::{ProgramKind, Scope};
use error::parse_toml;
pub(crate) use lock::{LockGraph, load_lock};
use manifest::{Files, Inherit, normalize, parse_manifest};

/// One locked package.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackageId {
    pub name: String,
    pub version: String,
    /// The lockfile `source` as written; `None` for members and path packages.
    pub source: Option<String>,
    /// The lockfile checksum (registry packages).
    pub checksum: Option<String>,
}

impl fmt::Display for PackageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.version)?;
        if let Some(s) = &self.source {
            write!(f, " ({s})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnitKind {
    Lib,
    Bin,
    BuildScript,
    ProcMacro,
}

/// The extern name under which a lib or bin unit lists its package's build script.
pub const BUILD_SCRIPT_DEP: &str = "build_script_build";

/// One crate compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub package: PackageId,
    pub kind: UnitKind,
    /// The crate name (`-` replaced by `_`); `build_script_<stem>` for a build script.
    pub crate_name: String,
    /// Root file relative to the package directory, e.g. `src/lib.rs`.
    pub root: String,
    pub features: BTreeSet<String>,
    /// `Build` for build scripts, proc macros and everything they depend on.
    pub scope: Scope,
    /// (extern name as the code sees it, unit index). A lib or bin lists its package's build
    /// script under [`BUILD_SCRIPT_DEP`]; a bin lists its package's lib under the lib's name.
    pub deps: Vec<(String, usize)>,
    /// On disk for members and path packages; `None` for registry and git packages.
    pub package_dir: Option<PathBuf>,
    /// The package's `links` key.
    pub links: Option<String>,
    /// The package's edition (`2015` when unset).
    pub edition: String,
    /// Cfg names the manifest declares as set from outside (`[lints.rust] unexpected_cfgs`
    /// `check-cfg`).
    pub check_cfgs: Vec<String>,
    /// Why the package's manifest could not be read (from `manifest_of`); the unit's deps are
    /// then every lockfile dependency, its root and name cargo's defaults.
    pub error: Option<String>,
}

/// One artifact of a workspace member: a binary, a `cdylib`/`staticlib`/`dylib` library, or
/// the library of a member that has no other artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// A binary's name, else `KIND:LIBNAME` (`cdylib:plugin`).
    pub name: String,
    pub kind: ProgramKind,
    pub package: PackageId,
    pub unit: usize,
}

/// A binary not built because its `required-features` are not all enabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedBin {
    pub name: String,
    pub package: PackageId,
    pub missing: Vec<String>,
}

/// Why a locked package is compiled into nothing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NotBuiltReason {
    /// Declared under `[target.KEY]` and `KEY` (`cfg(windows)`, a triple) is false for the
    /// target (or, for build dependencies, the host).
    Target(String),
    /// An optional dependency that no enabled feature turns on; `feature` is the dependency's
    /// name in the manifest (its implicit feature).
    OptionalOff { feature: String },
    /// Only a dev-dependency (tests, examples, benches), never in a program.
    DevOnly,
    /// Only needed by packages that are not built themselves.
    OnlyVia,
    /// Nothing in the workspace depends on it.
    Unused,
}

impl NotBuiltReason {
    fn rank(&self) -> u8 {
        match self {
            NotBuiltReason::Target(_) => 0,
            NotBuiltReason::OptionalOff { .. } => 1,
            NotBuiltReason::DevOnly => 2,
            NotBuiltReason::OnlyVia => 3,
            NotBuiltReason::Unused => 4,
        }
    }

    /// A stable kebab-case code: `target`, `optional`, `dev-only`, `only-via`, `unused`.
    pub fn code(&self) -> &'static str {
        match self {
            NotBuiltReason::Target(_) => "target",
            NotBuiltReason::OptionalOff { .. } => "optional",
            NotBuiltReason::DevOnly => "dev-only",
            NotBuiltReason::OnlyVia => "only-via",
            NotBuiltReason::Unused => "unused",
        }
    }
}

impl fmt::Display for NotBuiltReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotBuiltReason::Target(key) => f.write_str(key),
            NotBuiltReason::OptionalOff { .. } => f.write_str("optional, feature off"),
            NotBuiltReason::DevOnly => f.write_str("dev-dependency only"),
            NotBuiltReason::OnlyVia => f.write_str("only needed by packages not built"),
            NotBuiltReason::Unused => f.write_str("nothing in the workspace needs it"),
        }
    }
}

/// A locked package compiled into nothing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotBuilt {
    pub package: PackageId,
    pub reason: NotBuiltReason,
    /// The package whose declaration was not taken (or, for [`NotBuiltReason::OnlyVia`], the
    /// unbuilt package that needs it).
    pub from: Option<PackageId>,
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub units: Vec<Unit>,
    pub programs: Vec<Program>,
    pub skipped: Vec<SkippedBin>,
    /// Things cargo would have warned about or refused that did not stop the resolution.
    pub warnings: Vec<String>,
    /// Every locked package with no unit, with the reason.
    pub not_built: Vec<NotBuilt>,
    /// Packages taken as leaves because their manifest was pending (see
    /// [`ResolveOptions::pending`]); empty when nothing was pending.
    pub pending: Vec<PackageId>,
}

impl Graph {
    /// Every unit reachable from the program's unit (itself included, first), each with one
    /// shortest dependency path: unit indices from the program's unit to it, both ends
    /// included. Breadth-first in dependency order, so deterministic.
    pub fn reachable(&self, program: &Program) -> Vec<(usize, Vec<usize>)> {
        let n = self.units.len();
        if program.unit >= n {
            return Vec::new();
        }
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut order = Vec::new();
        let mut queue = VecDeque::from([program.unit]);
        seen[program.unit] = true;
        while let Some(u) = queue.pop_front() {
            order.push(u);
            for &(_, d) in &self.units[u].deps {
                if d < n && !seen[d] {
                    seen[d] = true;
                    parent[d] = Some(u);
                    queue.push_back(d);
                }
            }
        }
        order
            .into_iter()
            .map(|u| {
                let mut path = vec![u];
                let mut cur = u;
                while let Some(p) = parent[cur] {
                    path.push(p);
                    cur = p;
                }
                path.reverse();
                (u, path)
            })
            .collect()
    }

    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }
}

/// A package whose manifest is on disk: a member or a path dependency.
#[derive(Debug, Clone)]
pub struct LocalPackage {
    pub id: PackageId,
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub member: bool,
}

/// A loaded workspace: its manifests and its lockfile.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    resolver: String,
    /// Members first (root package, then `members` order), then other path packages.
    local: Vec<LocalPackage>,
    lock: LockGraph,
    lock_path: PathBuf,
    /// Lockfile index → index in `local`.
    lock_local: Vec<Option<usize>>,
    /// `links` of every package seen, filled by `resolve` for packages not on disk.
    links: Mutex<BTreeMap<PackageId, Option<String>>>,
}

fn read(path: &Path) -> Result<String, WorkspaceError> {
    Ok(crate::fsio::read_text(path, crate::fsio::TEXT_CAP, "a manifest")?)
}

fn str_list(t: &Table, key: &str, origin: &str) -> Result<Vec<String>, WorkspaceError> {
    match t.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| WorkspaceError::Manifest {
                        origin: origin.to_string(),
                        message: format!("`workspace.{key}` must be an array of strings"),
                    })
            })
            .collect(),
        Some(_) => Err(WorkspaceError::Manifest {
            origin: origin.to_string(),
            message: format!("`workspace.{key}` must be an array of strings"),
        }),
    }
}

/// The `[workspace]` a package outside ours belongs to, for its inheritance: its own root
/// manifest, `package.workspace`, or the nearest ancestor with a `[workspace]` table.
/// Unreadable ancestors are skipped: they only matter if the package inherits.
fn find_inherit(dir: &Path, doc: &Table) -> Option<Inherit> {
    if let Some(i) = Inherit::from_root(dir, doc) {
        return Some(i);
    }
    let explicit = doc
        .get("package")
        .and_then(|p| p.get("workspace"))
        .and_then(Value::as_str);
    let try_dir = |d: &Path| -> Option<Inherit> {
        let text = crate::fsio::read_text(&d.join("Cargo.toml"), crate::fsio::TEXT_CAP, "a manifest").ok()?;
        let doc: Table = toml::from_str(&text).ok()?;
        Inherit::from_root(d, &doc)
    };
    if let Some(w) = explicit {
        return try_dir(&normalize(&dir.join(w)));
    }
    let mut cur = dir.parent();
    while let Some(d) = cur {
        if let Some(i) = try_dir(d) {
            return Some(i);
        }
        cur = d.parent();
    }
    None
}

fn has_glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The root of the workspace a directory belongs to, found the way cargo finds it: the
/// nearest `Cargo.toml` at or above `start`; if it is not itself a workspace root, the nearest
/// directory above it whose `Cargo.toml` has a `[workspace]` listing it as a member (or the
/// one its `package.workspace` names); otherwise the package's own directory.
pub fn find_root(start: &Path) -> Result<PathBuf, WorkspaceError> {
    let start = std::path::absolute(start).map(|p| normalize(&p)).unwrap_or_else(|_| start.to_path_buf());
    let Some(nearest) = start.ancestors().find(|d| d.join("Cargo.toml").symlink_metadata().is_ok()) else {
        return Err(WorkspaceError::NoManifest { start, explicit: false });
    };
    let manifest = nearest.join("Cargo.toml");
    let text = read(&manifest)?;
    let doc = parse_toml(&text, &manifest.display().to_string())?;
    if doc.contains_key("workspace") {
        return Ok(nearest.to_path_buf());
    }
    if let Some(ws) = doc.get("package").and_then(|p| p.get("workspace")).and_then(Value::as_str) {
        return Ok(normalize(&nearest.join(ws)));
    }
    for dir in nearest.ancestors().skip(1) {
        let m = dir.join("Cargo.toml");
        if !m.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&m) else { continue };
        let Ok(doc) = text.parse::<Table>() else { continue };
        if !doc.contains_key("workspace") {
            continue;
        }
        // The nearest workspace above decides: a member of it, or a package of its own.
        return Ok(if lists_member(dir, &doc, nearest) { dir.to_path_buf() } else { nearest.to_path_buf() });
    }
    Ok(nearest.to_path_buf())
}

/// Whether the `[workspace]` of `root`'s manifest `doc` has `dir` among its members (its
/// `members` globs, less `exclude`).
fn lists_member(root: &Path, doc: &Table, dir: &Path) -> bool {
    let Some(ws) = doc.get("workspace").and_then(Value::as_table) else { return false };
    let list = |k: &str| -> Vec<String> {
        ws.get(k).and_then(Value::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
    };
    let matches = |pattern: &str| -> bool {
        let full = root.join(pattern);
        if !has_glob_meta(pattern) {
            return normalize(&full) == dir;
        }
        glob::Pattern::new(&full.to_string_lossy()).is_ok_and(|p| p.matches_path(dir))
    };
    let excluded = list("exclude").iter().any(|e| dir.starts_with(normalize(&root.join(e))));
    !excluded && list("members").iter().any(|m| matches(m))
}

impl Workspace {
    /// Load the workspace whose root manifest is `root/Cargo.toml`, and `root/Cargo.lock`.
    pub fn load(root: &Path) -> Result<Workspace, WorkspaceError> {
        let root = std::path::absolute(root)
            .map(|r| normalize(&r))
            .unwrap_or_else(|_| root.to_path_buf());
        let root_manifest = root.join("Cargo.toml");
        let origin = root_manifest.display().to_string();
        let text = read(&root_manifest)?;
        let doc = parse_toml(&text, &origin)?;
        let bad = |message: String| WorkspaceError::Manifest {
            origin: origin.clone(),
            message,
        };
        let ws_table = match doc.get("workspace") {
            None => None,
            Some(Value::Table(t)) => Some(t),
            Some(_) => return Err(bad("`workspace` must be a table".into())),
        };
        let root_pkg = doc.get("package").or_else(|| doc.get("project"));
        if ws_table.is_none() {
            match root_pkg {
                None => {
                    return Err(bad(
                        "neither `[package]` nor `[workspace]`: not a cargo manifest".into(),
                    ));
                }
                Some(p) => {
                    if let Some(w) = p.get("workspace").and_then(Value::as_str) {
                        return Err(bad(format!(
                            "this package belongs to the workspace at {w:?}; load that workspace's root instead"
                        )));
                    }
                }
            }
        }
        let inherit = Inherit::from_root(&root, &doc);
        let empty = Table::new();
        let ws = ws_table.unwrap_or(&empty);
        let excludes: Vec<PathBuf> = str_list(ws, "exclude", &origin)?
            .iter()
            .map(|e| normalize(&root.join(e)))
            .collect();
        let excluded = |dir: &Path| dir != root && excludes.iter().any(|e| dir.starts_with(e));

        // Member directories, in order.
        let mut member_dirs: Vec<PathBuf> = Vec::new();
        if root_pkg.is_some() {
            member_dirs.push(root.clone());
        }
        let root_str = root
            .to_str()
            .ok_or_else(|| bad("the workspace path is not UTF-8".into()))?;
        for pattern in str_list(ws, "members", &origin)? {
            if has_glob_meta(&pattern) {
                let full = format!(
                    "{}/{}",
                    glob::Pattern::escape(root_str),
                    pattern.trim_start_matches("./")
                );
                let paths = glob::glob(&full).map_err(|e| WorkspaceError::Glob {
                    origin: origin.clone(),
                    pattern: pattern.clone(),
                    message: e.msg.to_string(),
                })?;
                let mut found: Vec<PathBuf> = paths.flatten().map(|p| normalize(&p)).collect();
                found.sort();
                // Like cargo, a glob match without a manifest is not a member.
                member_dirs.extend(found.into_iter().filter(|p| p.join("Cargo.toml").is_file()));
            } else {
                member_dirs.push(normalize(&root.join(&pattern)));
            }
        }
        let mut seen = BTreeSet::new();
        member_dirs.retain(|d| !excluded(d) && seen.insert(d.clone()));

        // Load members, then every path package they reach (members too when inside the root).
        let mut local: Vec<LocalPackage> = Vec::new();
        let mut queue: VecDeque<(PathBuf, bool)> =
            member_dirs.into_iter().map(|d| (d, true)).collect();
        // Patched/replaced path packages are local, never members.
        for (key, section) in [("patch", true), ("replace", false)] {
            let Some(t) = doc.get(key).and_then(Value::as_table) else {
                continue;
            };
            let entries: Vec<&Table> = if section {
                t.values()
                    .filter_map(Value::as_table)
                    .flat_map(|reg| reg.values().filter_map(Value::as_table))
                    .collect()
            } else {
                t.values().filter_map(Value::as_table).collect()
            };
            for e in entries {
                if let Some(p) = e.get("path").and_then(Value::as_str) {
                    queue.push_back((normalize(&root.join(p)), false));
                }
            }
        }
        let mut loaded: BTreeMap<PathBuf, usize> = BTreeMap::new();
        while let Some((dir, member)) = queue.pop_front() {
            if let Some(&i) = loaded.get(&dir) {
                local[i].member |= member;
                continue;
            }
            let mpath = dir.join("Cargo.toml");
            let morigin = mpath.display().to_string();
            let (mdoc, own_inherit);
            let this_inherit = if dir == root {
                mdoc = doc.clone();
                inherit.as_ref()
            } else {
                let mtext = read(&mpath)?;
                mdoc = parse_toml(&mtext, &morigin)?;
                own_inherit = if member {
                    inherit.clone()
                } else {
                    find_inherit(&dir, &mdoc)
                };
                own_inherit.as_ref()
            };
            let manifest =
                parse_manifest(&mdoc, &Files::Disk(&dir), this_inherit).map_err(|message| {
                    WorkspaceError::Manifest {
                        origin: morigin.clone(),
                        message,
                    }
                })?;
            for d in &manifest.deps {
                if let Some(p) = &d.path {
                    // Only an explicit `[workspace]` takes in the path packages below it.
                    let child_member =
                        member && ws_table.is_some() && p.starts_with(&root) && !excluded(p);
                    queue.push_back((p.clone(), child_member));
                }
            }
            let id = PackageId {
                name: manifest.name.clone(),
                version: manifest.version.clone(),
                source: None,
                checksum: None,
            };
            loaded.insert(dir.clone(), local.len());
            local.push(LocalPackage {
                id,
                dir,
                manifest,
                member,
            });
        }
        // Members first, keeping discovery order within each group.
        let mut order: Vec<usize> = (0..local.len()).collect();
        order.sort_by_key(|&i| !local[i].member);
        let local: Vec<LocalPackage> = order.into_iter().map(|i| local[i].clone()).collect();

        let resolver = ws
            .get("resolver")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                local
                    .first()
                    .filter(|p| p.dir == root)
                    .and_then(|p| p.manifest.resolver.clone())
            })
            .unwrap_or_else(|| {
                match local
                    .first()
                    .filter(|p| p.dir == root)
                    .map(|p| p.manifest.edition.as_str())
                {
                    Some("2024") => "3".into(),
                    Some("2021") => "2".into(),
                    _ => "1".into(),
                }
            });

        // The lockfile.
        let lock_path = root.join("Cargo.lock");
        // A lockfile that is a link out of the workspace is refused, not read.
        crate::fsio::contained(&root, &lock_path)?;
        let lock_text = match crate::fsio::read_text(&lock_path, crate::fsio::TEXT_CAP, "a lockfile") {
            Ok(t) => t,
            Err(e) if e.is_not_found() => {
                return Err(WorkspaceError::MissingLockfile {
                    path: lock_path,
                    root,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let lock = lock::load_lock(&lock_text, &lock_path)?;
        let lock_local: Vec<Option<usize>> = lock
            .packages
            .iter()
            .map(|p| {
                if p.source.is_some() {
                    return None;
                }
                local
                    .iter()
                    .position(|l| l.id.name == p.name && l.id.version == p.version)
            })
            .collect();
        for (i, l) in local.iter().enumerate() {
            if l.member && !lock_local.contains(&Some(i)) {
                return Err(WorkspaceError::StaleLock {
                    path: lock_path,
                    message: format!(
                        "workspace member {} {} is not in it",
                        l.id.name, l.id.version
                    ),
                });
            }
        }
        let links = local
            .iter()
            .map(|l| (l.id.clone(), l.manifest.links.clone()))
            .collect();
        Ok(Workspace {
            root,
            resolver,
            local,
            lock,
            lock_path,
            lock_local,
            links: Mutex::new(links),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The resolver the workspace asks for (`1`, `2`, `3`); features are always unified with
    /// resolver 2's rules, and the graph warns when that differs from what was asked.
    pub fn resolver(&self) -> &str {
        &self.resolver
    }

    pub fn members(&self) -> impl Iterator<Item = &LocalPackage> {
        self.local.iter().filter(|l| l.member)
    }

    /// Members and the path packages they reach, as read from disk.
    pub fn local_packages(&self) -> &[LocalPackage] {
        &self.local
    }

    /// Every package of the lockfile, in its order.
    pub fn lock_packages(&self) -> &[PackageId] {
        &self.lock.packages
    }

    /// The `links` key of a package: known for packages on disk after `load`, for the others
    /// after `resolve` has read their manifests. Prefer [`Unit::links`].
    pub fn links_of(&self, id: &PackageId) -> Option<String> {
        let map = self.links.lock().unwrap_or_else(|e| e.into_inner());
        map.get(id).cloned().flatten().or_else(|| {
            map.iter()
                .find(|(k, _)| {
                    k.name == id.name && k.version == id.version && k.source == id.source
                })
                .and_then(|(_, v)| v.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_found_as_cargo_finds_it() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\nexclude = [\"crates/own\"]\n");
        w("crates/a/Cargo.toml", "[package]\nname = \"a\"\n");
        w("crates/own/Cargo.toml", "[package]\nname = \"own\"\n");
        w("tools/x/Cargo.toml", "[package]\nname = \"x\"\nworkspace = \"../..\"\n");
        w("other/Cargo.toml", "[package]\nname = \"other\"\n");
        std::fs::create_dir_all(root.join("crates/a/src/deep")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(find_root(&root.join("crates/a/src/deep")).unwrap(), root, "a member, from deep inside");
        assert_eq!(find_root(&root.join("crates/own")).unwrap(), root.join("crates/own"), "excluded: its own");
        assert_eq!(find_root(&root.join("tools/x")).unwrap(), root, "package.workspace");
        assert_eq!(find_root(&root.join("other")).unwrap(), root.join("other"), "not listed: its own");
        assert_eq!(find_root(&root).unwrap(), root);
    }

    fn unit(name: &str, deps: &[usize]) -> Unit {
        Unit {
            package: PackageId {
                name: name.into(),
                version: "1.0.0".into(),
                source: None,
                checksum: None,
            },
            kind: UnitKind::Lib,
            crate_name: name.into(),
            root: "src/lib.rs".into(),
            features: BTreeSet::new(),
            scope: Scope::Runtime,
            deps: deps.iter().map(|&d| (format!("d{d}"), d)).collect(),
            package_dir: None,
            links: None,
            edition: "2021".into(),
            check_cfgs: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn reachable_is_bfs_with_shortest_paths() {
        // 0 -> 1 -> 2 -> 3, 0 -> 3
        let g = Graph {
            units: vec![
                unit("a", &[1, 3]),
                unit("b", &[2]),
                unit("c", &[3]),
                unit("d", &[]),
            ],
            programs: vec![],
            ..Default::default()
        };
        let p = Program {
            name: "a".into(),
            kind: ProgramKind::Bin,
            package: g.units[0].package.clone(),
            unit: 0,
        };
        let r = g.reachable(&p);
        assert_eq!(
            r,
            vec![
                (0, vec![0]),
                (1, vec![0, 1]),
                (3, vec![0, 3]),
                (2, vec![0, 1, 2])
            ]
        );
    }

    #[test]
    fn error_messages_place_toml_errors() {
        let e = parse_toml("[package]\nname = \"x\nversion = 1\n", "a/Cargo.toml").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("a/Cargo.toml:2:"), "{s}");
        assert!(s.contains("invalid toml"), "{s}");
    }
}
