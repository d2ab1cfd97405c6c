//! From a loaded workspace to its graph of units, with features unified like cargo's
//! resolver 2 for `cargo build --workspace` (no `--features`, no `--target` beyond the one
//! `target_matches` describes).
//!
//! The algorithm follows cargo's `FeatureResolver`:
//! * Features are keyed by (package, for-host). A build-dependency, a proc-macro, and
//!   everything below either, is "for host"; everything else is "normal". Each key collects
//!   the union of the features every path to it asks for.
//! * Each member is activated with its `default` feature (a proc-macro member under both keys,
//!   as cargo does). Activating a package activates its `default` (unless every edge that
//!   reaches it says `default-features = false`), the features the edge lists, and its
//!   non-optional, non-dev, platform-matching dependencies, recursively.
//! * A feature activates its list: `f` (another feature), `dep:x` (the optional dependency
//!   `x`), `x/f` (feature `f` on `x`, enabling `x` if optional, and the implicit feature `x`
//!   if there is one), `x?/f` (feature `f` on `x` only if something else enables `x`, applied
//!   later if it does). An optional dependency no feature names as `dep:x` has the implicit
//!   feature `x = ["dep:x"]`.
//! * Target-specific dependencies are kept when `target_matches(key)` (normal key) or
//!   `host_matches(key)` (build-dependencies and anything for host) says so. Dev-dependencies
//!   are never followed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use super::error::{WorkspaceError, parse_toml};
use super::manifest::{DepDecl, DepKind, FeatureValue, Files, LibTarget, Manifest, parse_manifest};
use super::{BUILD_SCRIPT_DEP, Graph, NotBuilt, NotBuiltReason, PackageId, Program, SkippedBin, Unit, UnitKind, Workspace};
use crate::surface::model::{ProgramKind, Scope};

/// Everything [`Workspace::resolve_with`] needs from its caller.
pub struct ResolveOptions<'a> {
    /// Whether a `[target.KEY]` table applies to the target: `KEY` is `cfg(..)` or a triple,
    /// as written.
    pub target_matches: &'a dyn Fn(&str) -> bool,
    /// The same for the host (build scripts, proc macros and their dependencies); `None`: the
    /// host is the target.
    pub host_matches: Option<&'a dyn Fn(&str) -> bool>,
    /// The `Cargo.toml` text of a package not on disk (registry, git). An error is recorded in
    /// [`Unit::error`].
    pub manifest_of: &'a dyn Fn(&PackageId) -> Result<String, String>,
    /// Whether a file (relative path, `/`-separated) exists in a package not on disk. Used only
    /// where its manifest does not say: an unnormalized or pre-1.81 published manifest leaves
    /// `build.rs` and `src/lib.rs` implicit. `None`: a lib is assumed, and a build script only
    /// when the manifest sets `build` or `links`.
    pub has_file: Option<&'a HasFile<'a>>,
    /// Packages whose manifest is not at hand *yet* (a caller resolving in rounds, fetching
    /// what each round reaches): when `manifest_of` fails for one of these, it is taken as a
    /// leaf, not as "every locked dependency", and listed in [`Graph::pending`]. `None`: no
    /// package is pending.
    pub pending: Option<&'a dyn Fn(&PackageId) -> bool>,
    /// The lockfile leads: a dependency the lockfile does not lock for a package is not in the
    /// graph (a warning), instead of a stale-lockfile error. For a lockfile read without the
    /// manifests that produced it (`deps-diff --old/--new`), where the features each package
    /// was built with are not known and are taken as a superset: whatever that superset enables
    /// beyond what the lockfile locks was not built. Never for a workspace on disk, whose
    /// stale lockfile must stay an error.
    pub lockfile_led: bool,
}

/// See [`ResolveOptions::has_file`].
pub type HasFile<'a> = dyn Fn(&PackageId, &str) -> bool + 'a;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Fk {
    Normal,
    Host,
}

struct PkgData {
    manifest: Manifest,
    feature_map: BTreeMap<String, Vec<FeatureValue>>,
    /// Per declaration: the lockfile package it is.
    edges: Vec<Option<usize>>,
    error: Option<String>,
    dir: Option<PathBuf>,
}

#[derive(Clone, Copy)]
struct Edge {
    decl: usize,
    dep: Option<usize>,
    fk: Fk,
}

struct Resolver<'w, 'o> {
    ws: &'w Workspace,
    opts: &'o ResolveOptions<'o>,
    data: Vec<Option<Rc<PkgData>>>,
    features: HashMap<(usize, Fk), BTreeSet<String>>,
    deps_on: HashMap<(usize, Fk), BTreeSet<String>>,
    processed: HashSet<(usize, Fk)>,
    deferred: HashMap<(usize, Fk, String), BTreeSet<String>>,
    warnings: BTreeSet<String>,
    /// Packages taken as leaves because their manifest is pending.
    pending: BTreeSet<usize>,
    /// How deeply feature activation recurses now (see [`MAX_ACTIVATION_DEPTH`]).
    depth: usize,
}

/// How deeply features and dependencies may activate one another before a manifest is refused:
/// far more than any real chain, few enough that a hostile one cannot exhaust the stack.
const MAX_ACTIVATION_DEPTH: usize = 20_000;

fn source_kind_matches(decl: &DepDecl, source: Option<&str>) -> bool {
    match source {
        None => decl.path.is_some(),
        Some(s) if s.starts_with("git+") => decl.git.is_some(),
        Some(_) => decl.path.is_none() && decl.git.is_none(),
    }
}

impl<'w, 'o> Resolver<'w, 'o> {
    fn stale(&self, message: String) -> WorkspaceError {
        WorkspaceError::StaleLock {
            path: self.ws.lock_path.clone(),
            message,
        }
    }

    fn id(&self, i: usize) -> &'w PackageId {
        &self.ws.lock.packages[i]
    }

    fn load_manifest(&self, i: usize) -> (Manifest, Option<String>, Option<PathBuf>) {
        if let Some(l) = self.ws.lock_local[i] {
            let lp = &self.ws.local[l];
            return (lp.manifest.clone(), None, Some(lp.dir.clone()));
        }
        let id = self.id(i);
        let parsed = (self.opts.manifest_of)(id).and_then(|text| {
            let origin = format!("{} {} Cargo.toml", id.name, id.version);
            let doc = parse_toml(&text, &origin).map_err(|e| e.to_string())?;
            let oracle = self.opts.has_file.map(|f| move |rel: &str| f(id, rel));
            let files = match &oracle {
                Some(o) => Files::Unknown(Some(o)),
                None => Files::Unknown(None),
            };
            let m = parse_manifest(&doc, &files, None).map_err(|e| format!("{origin}: {e}"))?;
            if m.name != id.name {
                return Err(format!(
                    "{origin}: the manifest is for package {:?}",
                    m.name
                ));
            }
            Ok(m)
        });
        match parsed {
            Ok(m) => (m, None, None),
            Err(e) => {
                // Not fetched yet: a leaf for this round. Unknown manifest: every locked
                // dependency, as a plain normal one.
                let pending = self.opts.pending.is_some_and(|p| p(id));
                let lock_deps: &[usize] = if pending { &[] } else { &self.ws.lock.deps[i] };
                let deps = lock_deps
                    .iter()
                    .map(|&d| {
                        let name = self.id(d).name.clone();
                        DepDecl {
                            name_in_toml: name.clone(),
                            package: name,
                            renamed: false,
                            kind: DepKind::Normal,
                            target: None,
                            optional: false,
                            default_features: true,
                            features: Vec::new(),
                            version_req: Some(format!("={}", self.id(d).version)),
                            path: None,
                            git: None,
                            registry: None,
                        }
                    })
                    .collect();
                let m = Manifest {
                    name: id.name.clone(),
                    version: id.version.clone(),
                    edition: "2015".into(),
                    links: None,
                    resolver: None,
                    lib: Some(LibTarget {
                        name: id.name.replace('-', "_"),
                        path: "src/lib.rs".into(),
                        proc_macro: false,
                        crate_types: Vec::new(),
                    }),
                    bins: Vec::new(),
                    build: None,
                    deps,
                    features: BTreeMap::new(),
                    check_cfgs: Vec::new(),
                };
                (m, Some(e), None)
            }
        }
    }

    fn data(&mut self, i: usize) -> Rc<PkgData> {
        if let Some(d) = &self.data[i] {
            return d.clone();
        }
        let (manifest, error, dir) = self.load_manifest(i);
        if error.is_some() && self.opts.pending.is_some_and(|p| p(self.id(i))) {
            self.pending.insert(i);
        }
        let lock_deps = &self.ws.lock.deps[i];
        let packages = &self.ws.lock.packages;
        let edges = manifest
            .deps
            .iter()
            .map(|decl| {
                let cands: Vec<usize> = lock_deps
                    .iter()
                    .copied()
                    .filter(|&d| packages[d].name == decl.package)
                    .collect();
                if cands.len() <= 1 {
                    return cands.first().copied();
                }
                let req = decl
                    .version_req
                    .as_deref()
                    .and_then(|r| semver::VersionReq::parse(r).ok());
                let by_req: Vec<usize> = cands
                    .iter()
                    .copied()
                    .filter(|&c| {
                        req.as_ref().is_none_or(|r| {
                            semver::Version::parse(&packages[c].version)
                                .is_ok_and(|v| r.matches(&v))
                        })
                    })
                    .collect();
                let pool = if by_req.is_empty() { &cands } else { &by_req };
                pool.iter()
                    .copied()
                    .find(|&c| source_kind_matches(decl, packages[c].source.as_deref()))
                    .or(pool.first().copied())
            })
            .collect();
        let feature_map = manifest.feature_map();
        let d = Rc::new(PkgData {
            manifest,
            feature_map,
            edges,
            error,
            dir,
        });
        self.data[i] = Some(d.clone());
        d
    }

    fn is_proc_macro(&mut self, i: usize) -> bool {
        self.data(i).manifest.is_proc_macro()
    }

    /// The dependencies of `pkg` under `fk`: non-dev, platform-matching, each with the key its
    /// package is built under. An unlocked non-optional one is an error; an unlocked optional
    /// one has `dep: None` (an error only if it gets enabled).
    fn deps(&mut self, pkg: usize, fk: Fk) -> Result<Vec<Edge>, WorkspaceError> {
        let d = self.data(pkg);
        let mut out = Vec::new();
        for (i, decl) in d.manifest.deps.iter().enumerate() {
            if decl.kind == DepKind::Dev {
                continue;
            }
            if let Some(key) = &decl.target {
                let host = decl.kind == DepKind::Build || fk == Fk::Host;
                let matches = if host {
                    self.opts.host_matches.unwrap_or(self.opts.target_matches)
                } else {
                    self.opts.target_matches
                };
                if !matches(key) {
                    continue;
                }
            }
            let Some(dep) = d.edges[i] else {
                if decl.optional {
                    out.push(Edge {
                        decl: i,
                        dep: None,
                        fk,
                    });
                    continue;
                }
                self.skip_unlocked(pkg, decl)?;
                continue;
            };
            let dep_fk = match fk {
                Fk::Host => Fk::Host,
                Fk::Normal if decl.kind == DepKind::Build || self.is_proc_macro(dep) => Fk::Host,
                Fk::Normal => Fk::Normal,
            };
            out.push(Edge {
                decl: i,
                dep: Some(dep),
                fk: dep_fk,
            });
        }
        Ok(out)
    }

    fn unlocked(&self, pkg: usize, decl: &DepDecl) -> WorkspaceError {
        let id = self.id(pkg);
        self.stale(format!(
            "{} {} depends on {:?}, which the lockfile does not lock for it",
            id.name, id.version, decl.package
        ))
    }

    /// A dependency the lockfile does not lock: an error, or, when the lockfile leads, a
    /// warning and no edge (`Ok(())`: the caller skips it).
    fn skip_unlocked(&mut self, pkg: usize, decl: &DepDecl) -> Result<(), WorkspaceError> {
        if !self.opts.lockfile_led {
            return Err(self.unlocked(pkg, decl));
        }
        let id = self.id(pkg);
        self.warnings.insert(format!(
            "{} {} depends on {:?}, which the lockfile does not lock for it: not built",
            id.name, id.version, decl.package
        ));
        Ok(())
    }

    fn decl(&mut self, pkg: usize, i: usize) -> DepDecl {
        self.data(pkg).manifest.deps[i].clone()
    }

    fn fvs_from_dep(&mut self, dep: usize, decl: &DepDecl) -> Vec<FeatureValue> {
        let mut fvs: Vec<FeatureValue> = decl
            .features
            .iter()
            .map(|f| FeatureValue::parse(f))
            .collect();
        if decl.default_features && self.data(dep).feature_map.contains_key("default") {
            fvs.push(FeatureValue::Feature("default".into()));
        }
        fvs
    }

    fn activate_pkg(
        &mut self,
        pkg: usize,
        fk: Fk,
        fvs: &[FeatureValue],
    ) -> Result<(), WorkspaceError> {
        self.features.entry((pkg, fk)).or_default();
        for fv in fvs {
            self.activate_fv(pkg, fk, fv)?;
        }
        if !self.processed.insert((pkg, fk)) {
            return Ok(());
        }
        for e in self.deps(pkg, fk)? {
            let decl = self.decl(pkg, e.decl);
            if decl.optional {
                continue;
            }
            // Non-optional dependencies are locked (or, when the lockfile leads, left out).
            let Some(dep) = e.dep else { continue };
            let fvs = self.fvs_from_dep(dep, &decl);
            self.activate_pkg(dep, e.fk, &fvs)?;
        }
        Ok(())
    }

    fn activate_fv(&mut self, pkg: usize, fk: Fk, fv: &FeatureValue) -> Result<(), WorkspaceError> {
        if self.depth >= MAX_ACTIVATION_DEPTH {
            let id = self.id(pkg);
            return Err(WorkspaceError::Manifest {
                origin: format!("{} {}", crate::message::clip(&id.name), crate::message::clip(&id.version)),
                message: format!(
                    "features and optional dependencies enable one another more than {MAX_ACTIVATION_DEPTH} levels deep; refusing to follow them"
                ),
            });
        }
        self.depth += 1;
        let r = match fv {
            FeatureValue::Feature(f) => self.activate_rec(pkg, fk, f),
            FeatureValue::Dep(d) => self.activate_dependency(pkg, fk, d),
            FeatureValue::DepFeature { dep, feature, weak } => {
                self.activate_dep_feature(pkg, fk, dep, feature, *weak)
            }
        };
        self.depth -= 1;
        r
    }

    fn activate_rec(&mut self, pkg: usize, fk: Fk, feature: &str) -> Result<(), WorkspaceError> {
        if !self
            .features
            .entry((pkg, fk))
            .or_default()
            .insert(feature.to_string())
        {
            return Ok(());
        }
        let d = self.data(pkg);
        let Some(fvs) = d.feature_map.get(feature) else {
            if d.error.is_none() {
                let id = self.id(pkg);
                self.warnings.insert(format!(
                    "{} {} has no feature {feature:?}, which is requested of it",
                    id.name, id.version
                ));
            }
            return Ok(());
        };
        for fv in fvs {
            self.activate_fv(pkg, fk, fv)?;
        }
        Ok(())
    }

    fn activate_dependency(
        &mut self,
        pkg: usize,
        fk: Fk,
        dep_name: &str,
    ) -> Result<(), WorkspaceError> {
        self.deps_on
            .entry((pkg, fk))
            .or_default()
            .insert(dep_name.to_string());
        let to_enable = self.deferred.remove(&(pkg, fk, dep_name.to_string()));
        for e in self.deps(pkg, fk)? {
            let decl = self.decl(pkg, e.decl);
            if decl.name_in_toml != dep_name {
                continue;
            }
            let Some(dep) = e.dep else {
                self.skip_unlocked(pkg, &decl)?;
                continue;
            };
            for f in to_enable.iter().flatten() {
                self.activate_fv(dep, e.fk, &FeatureValue::parse(f))?;
            }
            let fvs = self.fvs_from_dep(dep, &decl);
            self.activate_pkg(dep, e.fk, &fvs)?;
        }
        Ok(())
    }

    fn activate_dep_feature(
        &mut self,
        pkg: usize,
        fk: Fk,
        dep_name: &str,
        feature: &str,
        weak: bool,
    ) -> Result<(), WorkspaceError> {
        for e in self.deps(pkg, fk)? {
            let decl = self.decl(pkg, e.decl);
            if decl.name_in_toml != dep_name {
                continue;
            }
            if decl.optional {
                let on = self
                    .deps_on
                    .get(&(pkg, fk))
                    .is_some_and(|s| s.contains(dep_name));
                if weak && !on {
                    self.deferred
                        .entry((pkg, fk, dep_name.to_string()))
                        .or_default()
                        .insert(feature.to_string());
                    continue;
                }
                self.activate_fv(pkg, fk, &FeatureValue::Dep(dep_name.to_string()))?;
                if !weak && self.data(pkg).feature_map.contains_key(dep_name) {
                    self.activate_rec(pkg, fk, dep_name)?;
                }
            }
            let Some(dep) = e.dep else {
                self.skip_unlocked(pkg, &decl)?;
                continue;
            };
            self.activate_fv(dep, e.fk, &FeatureValue::parse(feature))?;
        }
        Ok(())
    }

    /// The dependencies actually compiled: non-optional ones and enabled optional ones.
    fn active_deps(
        &mut self,
        pkg: usize,
        fk: Fk,
        kind: DepKind,
    ) -> Result<Vec<(DepDecl, usize, Fk)>, WorkspaceError> {
        let on = self.deps_on.get(&(pkg, fk)).cloned().unwrap_or_default();
        let mut out = Vec::new();
        for e in self.deps(pkg, fk)? {
            let decl = self.decl(pkg, e.decl);
            if decl.kind != kind || (decl.optional && !on.contains(&decl.name_in_toml)) {
                continue;
            }
            let Some(dep) = e.dep else {
                self.skip_unlocked(pkg, &decl)?;
                continue;
            };
            out.push((decl, dep, e.fk));
        }
        Ok(out)
    }

    /// Why each locked package that got no unit is not built: the declaration of a built
    /// package that was not taken (a target table that does not match, an optional dependency
    /// no enabled feature turns on, a dev-dependency), else the unbuilt package that needs it,
    /// else nothing in the workspace needs it.
    fn not_built(&mut self, units: &[Unit]) -> Result<Vec<NotBuilt>, WorkspaceError> {
        let n = self.ws.lock.packages.len();
        let mut built = vec![false; n];
        for u in units {
            if let Some(i) = self.ws.lock.packages.iter().position(|p| *p == u.package) {
                built[i] = true;
            }
        }
        let mut reason: Vec<Option<(NotBuiltReason, usize)>> = vec![None; n];
        let mut keys: Vec<(usize, Fk)> = self.processed.iter().copied().collect();
        keys.sort();
        for (pkg, fk) in keys {
            let d = self.data(pkg);
            let on = self.deps_on.get(&(pkg, fk)).cloned().unwrap_or_default();
            for (i, decl) in d.manifest.deps.iter().enumerate() {
                let Some(dep) = d.edges[i] else { continue };
                if built[dep] {
                    continue;
                }
                let why = if decl.kind == DepKind::Dev {
                    NotBuiltReason::DevOnly
                } else if let Some(key) = decl.target.as_ref().filter(|key| {
                    let host = decl.kind == DepKind::Build || fk == Fk::Host;
                    let matches = if host {
                        self.opts.host_matches.unwrap_or(self.opts.target_matches)
                    } else {
                        self.opts.target_matches
                    };
                    !matches(key)
                }) {
                    NotBuiltReason::Target(key.clone())
                } else if decl.optional && !on.contains(&decl.name_in_toml) {
                    NotBuiltReason::OptionalOff { feature: decl.name_in_toml.clone() }
                } else {
                    continue;
                };
                // The most telling reason wins: a target table, then a feature, then dev.
                let better = match &reason[dep] {
                    None => true,
                    Some((old, _)) => why.rank() < old.rank(),
                };
                if better {
                    reason[dep] = Some((why, pkg));
                }
            }
        }
        // What only unbuilt packages need is not built either.
        let mut changed = true;
        while changed {
            changed = false;
            for p in 0..n {
                if built[p] || reason[p].is_none() {
                    continue;
                }
                for &dep in &self.ws.lock.deps[p] {
                    if !built[dep] && reason[dep].is_none() {
                        reason[dep] = Some((NotBuiltReason::OnlyVia, p));
                        changed = true;
                    }
                }
            }
        }
        let mut out = Vec::new();
        for p in 0..n {
            if built[p] {
                continue;
            }
            let (why, from) = match reason[p].take() {
                Some((why, from)) => (why, Some(self.ws.lock.packages[from].clone())),
                None => (NotBuiltReason::Unused, None),
            };
            out.push(NotBuilt { package: self.ws.lock.packages[p].clone(), reason: why, from });
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum UnitKey {
    Lib(usize, Fk),
    BuildScript(usize, Fk),
    Bin(usize, String),
}

struct Builder<'r, 'w, 'o> {
    r: &'r mut Resolver<'w, 'o>,
    units: Vec<Unit>,
    index: HashMap<UnitKey, usize>,
}

impl Builder<'_, '_, '_> {
    fn new_unit(
        &mut self,
        key: UnitKey,
        pkg: usize,
        kind: UnitKind,
        crate_name: String,
        root: String,
        fk: Fk,
    ) -> usize {
        let d = self.r.data(pkg);
        let features = self.r.features.get(&(pkg, fk)).cloned().unwrap_or_default();
        let scope = if fk == Fk::Host || kind == UnitKind::BuildScript {
            Scope::Build
        } else {
            Scope::Runtime
        };
        let i = self.units.len();
        let error = d.error.clone().or_else(|| super::manifest::outside_package(kind, &root));
        self.units.push(Unit {
            package: self.r.id(pkg).clone(),
            kind,
            crate_name,
            root,
            features,
            scope,
            deps: Vec::new(),
            package_dir: d.dir.clone(),
            links: d.manifest.links.clone(),
            edition: d.manifest.edition.clone(),
            check_cfgs: d.manifest.check_cfgs.clone(),
            error,
        });
        self.index.insert(key, i);
        i
    }

    fn push_dep(&mut self, unit: usize, name: String, dep: usize) {
        let deps = &mut self.units[unit].deps;
        if !deps.iter().any(|(n, d)| *n == name && *d == dep) {
            deps.push((name, dep));
        }
    }

    /// The build script edge and the normal dependency edges of a lib or bin of `pkg`.
    fn link_deps(&mut self, unit: usize, pkg: usize, fk: Fk) -> Result<(), WorkspaceError> {
        if let Some(bs) = self.build_script(pkg, fk)? {
            self.push_dep(unit, BUILD_SCRIPT_DEP.to_string(), bs);
        }
        for (decl, dep, dep_fk) in self.r.active_deps(pkg, fk, DepKind::Normal)? {
            self.edge(unit, pkg, &decl, dep, dep_fk)?;
        }
        Ok(())
    }

    fn edge(
        &mut self,
        unit: usize,
        pkg: usize,
        decl: &DepDecl,
        dep: usize,
        dep_fk: Fk,
    ) -> Result<(), WorkspaceError> {
        match self.lib(dep, dep_fk)? {
            Some(u) => {
                let name = decl
                    .rename_extern()
                    .unwrap_or_else(|| self.units[u].crate_name.clone());
                self.push_dep(unit, name, u);
            }
            None => {
                let (a, b) = (self.r.id(pkg), self.r.id(dep));
                self.r.warnings.insert(format!(
                    "{} {} depends on {} {}, which has no library; the dependency is ignored",
                    a.name, a.version, b.name, b.version
                ));
            }
        }
        Ok(())
    }

    fn lib(&mut self, pkg: usize, fk: Fk) -> Result<Option<usize>, WorkspaceError> {
        let key = UnitKey::Lib(pkg, fk);
        if let Some(&i) = self.index.get(&key) {
            return Ok(Some(i));
        }
        let d = self.r.data(pkg);
        let Some(lib) = &d.manifest.lib else {
            return Ok(None);
        };
        let kind = if lib.proc_macro {
            UnitKind::ProcMacro
        } else {
            UnitKind::Lib
        };
        let u = self.new_unit(key, pkg, kind, lib.name.clone(), lib.path.clone(), fk);
        self.link_deps(u, pkg, fk)?;
        Ok(Some(u))
    }

    fn build_script(&mut self, pkg: usize, fk: Fk) -> Result<Option<usize>, WorkspaceError> {
        let key = UnitKey::BuildScript(pkg, fk);
        if let Some(&i) = self.index.get(&key) {
            return Ok(Some(i));
        }
        let d = self.r.data(pkg);
        let Some(path) = &d.manifest.build else {
            return Ok(None);
        };
        let stem = path
            .rsplit('/')
            .next()
            .unwrap_or(path)
            .trim_end_matches(".rs")
            .replace(['-', '.'], "_");
        let u = self.new_unit(
            key,
            pkg,
            UnitKind::BuildScript,
            format!("build_script_{stem}"),
            path.clone(),
            fk,
        );
        for (decl, dep, dep_fk) in self.r.active_deps(pkg, fk, DepKind::Build)? {
            self.edge(u, pkg, &decl, dep, dep_fk)?;
        }
        Ok(Some(u))
    }

    fn bin(&mut self, pkg: usize, name: &str, path: &str) -> Result<usize, WorkspaceError> {
        let u = self.new_unit(
            UnitKey::Bin(pkg, name.to_string()),
            pkg,
            UnitKind::Bin,
            name.replace('-', "_"),
            path.to_string(),
            Fk::Normal,
        );
        let lib_fk = if self.r.is_proc_macro(pkg) {
            Fk::Host
        } else {
            Fk::Normal
        };
        if let Some(bs) = self.build_script(pkg, Fk::Normal)? {
            self.push_dep(u, BUILD_SCRIPT_DEP.to_string(), bs);
        }
        if let Some(l) = self.lib(pkg, lib_fk)? {
            let lname = self.units[l].crate_name.clone();
            self.push_dep(u, lname, l);
        }
        self.link_deps(u, pkg, Fk::Normal)?;
        Ok(u)
    }

    /// The `required-features` of a bin not enabled: `f`, or `x/f` (`x` enabled with `f`).
    fn missing_features(
        &mut self,
        pkg: usize,
        required: &[String],
    ) -> Result<Vec<String>, WorkspaceError> {
        let own = self
            .r
            .features
            .get(&(pkg, Fk::Normal))
            .cloned()
            .unwrap_or_default();
        let mut missing = Vec::new();
        for rf in required {
            let ok = match FeatureValue::parse(rf) {
                FeatureValue::Feature(f) => own.contains(&f),
                FeatureValue::Dep(d) => self
                    .r
                    .deps_on
                    .get(&(pkg, Fk::Normal))
                    .is_some_and(|s| s.contains(&d)),
                FeatureValue::DepFeature { dep, feature, .. } => {
                    let active = self.r.active_deps(pkg, Fk::Normal, DepKind::Normal)?;
                    active.iter().any(|(decl, d, dfk)| {
                        decl.name_in_toml == dep
                            && self
                                .r
                                .features
                                .get(&(*d, *dfk))
                                .is_some_and(|s| s.contains(&feature))
                    })
                }
            };
            if !ok {
                missing.push(rf.clone());
            }
        }
        Ok(missing)
    }
}

impl Workspace {
    /// The graph of `cargo build --workspace` for the target `target_matches` describes (the
    /// host taken to be the same). See [`Workspace::resolve_with`].
    pub fn resolve(
        &self,
        target_matches: &dyn Fn(&str) -> bool,
        manifest_of: &dyn Fn(&PackageId) -> Result<String, String>,
    ) -> Result<Graph, WorkspaceError> {
        self.resolve_with(&ResolveOptions {
            target_matches,
            host_matches: None,
            manifest_of,
            has_file: None,
            pending: None,
            lockfile_led: false,
        })
    }

    /// The graph of `cargo build --workspace`: a unit per (package, lib/build script, normal or
    /// for-host) compiled, a program per member binary whose `required-features` are enabled.
    pub fn resolve_with(&self, opts: &ResolveOptions<'_>) -> Result<Graph, WorkspaceError> {
        let mut r = Resolver {
            ws: self,
            opts,
            data: vec![None; self.lock.packages.len()],
            features: HashMap::new(),
            deps_on: HashMap::new(),
            processed: HashSet::new(),
            deferred: HashMap::new(),
            warnings: BTreeSet::new(),
            pending: BTreeSet::new(),
            depth: 0,
        };
        if self.resolver == "1" {
            r.warnings.insert(
                "the workspace uses feature resolver 1 (set `resolver = \"2\"` or edition 2021); features were computed with resolver 2's rules, which can enable fewer than cargo would"
                    .into(),
            );
        }
        let members: Vec<usize> = self
            .local
            .iter()
            .enumerate()
            .filter(|(_, l)| l.member)
            .filter_map(|(li, _)| self.lock_local.iter().position(|&x| x == Some(li)))
            .collect();
        for &m in &members {
            let fvs: Vec<FeatureValue> = if r.data(m).feature_map.contains_key("default") {
                vec![FeatureValue::Feature("default".into())]
            } else {
                Vec::new()
            };
            if r.is_proc_macro(m) {
                r.activate_pkg(m, Fk::Normal, &fvs)?;
                r.activate_pkg(m, Fk::Host, &fvs)?;
            } else {
                r.activate_pkg(m, Fk::Normal, &fvs)?;
            }
        }

        let mut b = Builder {
            r: &mut r,
            units: Vec::new(),
            index: HashMap::new(),
        };
        let mut programs = Vec::new();
        let mut skipped = Vec::new();
        for &m in &members {
            let fk = if b.r.is_proc_macro(m) {
                Fk::Host
            } else {
                Fk::Normal
            };
            let lib_unit = b.lib(m, fk)?;
            let lib_target = b.r.data(m).manifest.lib.clone();
            let bins = b.r.data(m).manifest.bins.clone();
            // The library as an artifact of its own: each shared, static or Rust dynamic
            // library it is built as; and, for a member that ships nothing else, the library
            // itself (its public items are what users of it reach).
            if let (Some(lu), Some(lt)) = (lib_unit, &lib_target) {
                let package = b.r.id(m).clone();
                let mut kinds: Vec<ProgramKind> = Vec::new();
                for t in &lt.crate_types {
                    let k = match t.as_str() {
                        "cdylib" => ProgramKind::Cdylib,
                        "staticlib" => ProgramKind::Staticlib,
                        "dylib" => ProgramKind::Dylib,
                        _ => continue,
                    };
                    if !kinds.contains(&k) {
                        kinds.push(k);
                    }
                }
                if kinds.is_empty() && bins.is_empty() {
                    kinds.push(if lt.proc_macro { ProgramKind::ProcMacro } else { ProgramKind::Lib });
                }
                for kind in kinds {
                    programs.push(Program { name: format!("{}:{}", kind.as_str(), lt.name), kind, package: package.clone(), unit: lu });
                }
            }
            for bin in bins {
                let missing = b.missing_features(m, &bin.required_features)?;
                let package = b.r.id(m).clone();
                if !missing.is_empty() {
                    skipped.push(SkippedBin {
                        name: bin.name.clone(),
                        package,
                        missing,
                    });
                    continue;
                }
                let unit = b.bin(m, &bin.name, &bin.path)?;
                programs.push(Program {
                    name: bin.name.clone(),
                    kind: ProgramKind::Bin,
                    package,
                    unit,
                });
            }
        }
        let units = b.units;
        let not_built = r.not_built(&units)?;
        {
            let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
            for u in &units {
                links
                    .entry(u.package.clone())
                    .or_insert_with(|| u.links.clone());
            }
        }
        let pending = r.pending.iter().map(|&i| self.lock.packages[i].clone()).collect();
        Ok(Graph {
            units,
            programs,
            skipped,
            warnings: r.warnings.into_iter().collect(),
            not_built,
            pending,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const REG: &str = "registry+https://github.com/rust-lang/crates.io-index";

    fn sum(n: u8) -> String {
        format!("{n:064x}")
    }

    /// Two versions of one crate (one renamed), a build-dependency on one of them, and a
    /// duplicate target-specific declaration that adds a feature.
    #[test]
    fn versions_are_told_apart_by_requirement() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            "Cargo.toml",
            r#"[package]
name = "app"
version = "0.1.0"
edition = "2021"

[dependencies]
a = "1"
a2 = { package = "a", version = "2" }

[target.'cfg(unix)'.dependencies]
a = { version = "1", features = ["u"] }

[build-dependencies]
a = "2.0"
"#,
        );
        write(root, "src/main.rs", "fn main() {}\n");
        write(root, "build.rs", "fn main() {}\n");
        write(
            root,
            "Cargo.lock",
            &format!(
                r#"version = 3

[[package]]
name = "a"
version = "1.4.0"
source = "{REG}"
checksum = "{}"

[[package]]
name = "a"
version = "2.1.0"
source = "{REG}"
checksum = "{}"

[[package]]
name = "app"
version = "0.1.0"
dependencies = [
 "a 1.4.0",
 "a 2.1.0",
]
"#,
                sum(1),
                sum(2)
            ),
        );
        let ws = Workspace::load(root).unwrap();
        let manifest_of = |id: &PackageId| {
            Ok(format!(
                "[package]\nname = \"a\"\nversion = \"{}\"\n[features]\nu = []\ndefault = []\n",
                id.version
            ))
        };
        let unix = |k: &str| k == "cfg(unix)";
        let g = ws.resolve(&unix, &manifest_of).unwrap();
        let bin = &g.units[g.programs[0].unit];
        let dep = |n: &str| {
            bin.deps
                .iter()
                .find(|(x, _)| x == n)
                .map(|(_, d)| &g.units[*d])
                .unwrap()
        };
        assert_eq!(dep("a").package.version, "1.4.0");
        assert_eq!(
            dep("a").features,
            BTreeSet::from(["default".to_string(), "u".to_string()])
        );
        assert_eq!(dep("a2").package.version, "2.1.0");
        assert_eq!(dep("a2").scope, Scope::Runtime);
        let bs = dep(BUILD_SCRIPT_DEP);
        let (_, host_a) = &bs.deps[0];
        assert_eq!(
            (
                g.units[*host_a].package.version.as_str(),
                g.units[*host_a].scope
            ),
            ("2.1.0", Scope::Build)
        );
        assert_eq!(
            bin.deps.iter().filter(|(n, _)| n == "a").count(),
            1,
            "one edge for two declarations"
        );

        // Not unix: the feature the target table adds is gone.
        let g = ws.resolve(&|_| false, &manifest_of).unwrap();
        let bin = &g.units[g.programs[0].unit];
        let a = bin
            .deps
            .iter()
            .find(|(x, _)| x == "a")
            .map(|(_, d)| &g.units[*d])
            .unwrap();
        assert_eq!(a.features, BTreeSet::from(["default".to_string()]));
    }

    #[test]
    fn unknown_feature_is_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n[dependencies]\nb = { path = \"b\", features = [\"nope\"] }\n",
        );
        write(root, "src/main.rs", "fn main() {}\n");
        write(
            root,
            "b/Cargo.toml",
            "[package]\nname = \"b\"\nversion = \"0.1.0\"\n",
        );
        write(root, "b/src/lib.rs", "");
        write(
            root,
            "Cargo.lock",
            "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"b\"]\n\n[[package]]\nname = \"b\"\nversion = \"0.1.0\"\n",
        );
        let ws = Workspace::load(root).unwrap();
        assert_eq!(ws.resolver(), "1");
        let g = ws.resolve(&|_| false, &|_| Err("none".into())).unwrap();
        assert!(
            g.warnings
                .iter()
                .any(|w| w.contains("b 0.1.0 has no feature \"nope\"")),
            "{:?}",
            g.warnings
        );
        assert!(
            g.warnings.iter().any(|w| w.contains("resolver 1")),
            "{:?}",
            g.warnings
        );
    }
}
