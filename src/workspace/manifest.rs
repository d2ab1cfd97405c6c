//! Reading one `Cargo.toml` into what the graph needs: identity, targets, dependencies and
//! features. Nothing here runs anything; files are only looked at to auto-discover targets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use toml::{Table, Value};

/// One package manifest, with workspace inheritance applied and targets discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub name: String,
    /// `0.0.0` when the manifest has none (allowed since Cargo 1.75).
    pub version: String,
    /// `2015` when unset.
    pub edition: String,
    pub links: Option<String>,
    /// `package.resolver`, when set.
    pub resolver: Option<String>,
    pub lib: Option<LibTarget>,
    /// Binaries; only discovered from files for packages on disk.
    pub bins: Vec<BinTarget>,
    /// The build script, relative to the package directory.
    pub build: Option<String>,
    pub deps: Vec<DepDecl>,
    /// `[features]` as declared.
    pub features: BTreeMap<String, Vec<String>>,
    /// Cfg names declared expected in `[lints.rust] unexpected_cfgs = { check-cfg = [..] }`
    /// (`cfg(tokio_unstable)` → `tokio_unstable`): cfgs set from outside (a build script,
    /// RUSTFLAGS), which the analysis treats as unknown, analyzing both branches.
    pub check_cfgs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibTarget {
    /// The crate name as code sees it (`-` replaced by `_`).
    pub name: String,
    /// Root file relative to the package directory, `/`-separated.
    pub path: String,
    pub proc_macro: bool,
    /// `crate-type` as declared (`["cdylib", "rlib"]`); empty: the default (`lib`).
    pub crate_types: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinTarget {
    pub name: String,
    pub path: String,
    pub required_features: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DepKind {
    Normal,
    Build,
    Dev,
}

/// One dependency declaration (one entry of one dependency table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepDecl {
    /// The table key: the name features refer to (`dep:x`, `x/f`).
    pub name_in_toml: String,
    /// The real package name (`package = ".."`, else the key).
    pub package: String,
    /// Whether `package = ".."` renames it (the extern name is then the key with `-` → `_`).
    pub renamed: bool,
    pub kind: DepKind,
    /// The `[target.KEY]` key as written: `cfg(windows)` or a triple.
    pub target: Option<String>,
    pub optional: bool,
    pub default_features: bool,
    pub features: Vec<String>,
    pub version_req: Option<String>,
    /// For a path dependency: the directory, resolved against the declaring manifest (or the
    /// workspace root, for an inherited one) when that is on disk, else as written.
    pub path: Option<PathBuf>,
    pub git: Option<String>,
    pub registry: Option<String>,
}

impl DepDecl {
    /// The name code uses for this dependency when it is renamed; otherwise the dependency's
    /// lib name decides (see [`crate::workspace::Unit::deps`]).
    pub fn rename_extern(&self) -> Option<String> {
        self.renamed.then(|| self.name_in_toml.replace('-', "_"))
    }
}

/// One element of a feature list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FeatureValue {
    Feature(String),
    /// `dep:x`
    Dep(String),
    /// `x/f` or, weak, `x?/f`
    DepFeature {
        dep: String,
        feature: String,
        weak: bool,
    },
}

impl FeatureValue {
    pub fn parse(s: &str) -> FeatureValue {
        if let Some(d) = s.strip_prefix("dep:") {
            return FeatureValue::Dep(d.to_string());
        }
        if let Some((dep, feature)) = s.split_once('/') {
            let (dep, weak) = match dep.strip_suffix('?') {
                Some(d) => (d, true),
                None => (dep, false),
            };
            return FeatureValue::DepFeature {
                dep: dep.to_string(),
                feature: feature.to_string(),
                weak,
            };
        }
        FeatureValue::Feature(s.to_string())
    }
}

impl Manifest {
    /// The feature map cargo builds: declared features plus the implicit `x = ["dep:x"]` of
    /// each optional dependency that no feature names as `dep:x`.
    pub fn feature_map(&self) -> BTreeMap<String, Vec<FeatureValue>> {
        let mut map: BTreeMap<String, Vec<FeatureValue>> = self
            .features
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.iter().map(|s| FeatureValue::parse(s)).collect(),
                )
            })
            .collect();
        let explicit: BTreeSet<&str> = self
            .features
            .values()
            .flatten()
            .filter_map(|s| s.strip_prefix("dep:"))
            .collect();
        for d in &self.deps {
            if d.optional
                && d.kind != DepKind::Dev
                && !explicit.contains(d.name_in_toml.as_str())
                && !map.contains_key(&d.name_in_toml)
            {
                map.insert(
                    d.name_in_toml.clone(),
                    vec![FeatureValue::Dep(d.name_in_toml.clone())],
                );
            }
        }
        map
    }

    pub fn is_proc_macro(&self) -> bool {
        self.lib.as_ref().is_some_and(|l| l.proc_macro)
    }
}

/// What can be known about a package's files.
pub(crate) enum Files<'a> {
    /// The package directory on disk.
    Disk(&'a Path),
    /// Not on disk: an optional oracle for "does this relative path exist".
    Unknown(Option<&'a dyn Fn(&str) -> bool>),
}

impl Files<'_> {
    /// `None` when it cannot be known.
    fn exists(&self, rel: &str) -> Option<bool> {
        match self {
            Files::Disk(dir) => Some(dir.join(rel).is_file()),
            Files::Unknown(Some(f)) => Some(f(rel)),
            Files::Unknown(None) => None,
        }
    }
    fn dir(&self) -> Option<&Path> {
        match self {
            Files::Disk(d) => Some(d),
            Files::Unknown(_) => None,
        }
    }
}

/// What `[workspace]` offers members for inheritance.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherit {
    pub root: PathBuf,
    pub package: Table,
    pub dependencies: Table,
    pub lints: Table,
}

impl Inherit {
    pub fn from_root(root: &Path, doc: &Table) -> Option<Inherit> {
        let ws = doc.get("workspace")?.as_table()?;
        let get = |k: &str| {
            ws.get(k)
                .and_then(Value::as_table)
                .cloned()
                .unwrap_or_default()
        };
        Some(Inherit {
            root: root.to_path_buf(),
            package: get("package"),
            dependencies: get("dependencies"),
            lints: get("lints"),
        })
    }
}

/// Lexically normalize a path (`a/./b/../c` → `a/c`), without touching the file system.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Why a target's root file is not analyzed when it lies outside its package (`../x.rs`, an
/// absolute path): cargo would compile it, but velaris reads only the package's own files, and
/// says so instead of "not found".
pub(crate) fn outside_package(kind: super::UnitKind, root: &str) -> Option<String> {
    let p = Path::new(root);
    let absolute = p.has_root() || root.as_bytes().get(1) == Some(&b':');
    let escapes = normalize(p).components().next() == Some(Component::ParentDir);
    (absolute || escapes).then(|| {
        let what = match kind {
            super::UnitKind::Lib | super::UnitKind::ProcMacro => "lib",
            super::UnitKind::Bin => "bin",
            super::UnitKind::BuildScript => "build script",
        };
        format!(
            "the {what} path `{}` is outside the package and refused: only the package's own files are analyzed",
            crate::message::clip(root)
        )
    })
}

fn rel_path(s: &str) -> String {
    let s = s.replace('\\', "/");
    let mut s = s.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

fn is_ws_ref(v: &Value) -> bool {
    v.as_table()
        .and_then(|t| t.get("workspace"))
        .and_then(Value::as_bool)
        == Some(true)
}

fn get_str<'t>(t: &'t Table, key: &str, at: &str) -> Result<Option<&'t str>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{at}.{key}` must be a string")),
    }
}

fn get_bool(t: &Table, keys: &[&str], at: &str) -> Result<Option<bool>, String> {
    for k in keys {
        match t.get(*k) {
            None => continue,
            Some(Value::Boolean(b)) => return Ok(Some(*b)),
            Some(_) => return Err(format!("`{at}.{k}` must be a boolean")),
        }
    }
    Ok(None)
}

fn get_str_list(t: &Table, keys: &[&str], at: &str) -> Result<Vec<String>, String> {
    for k in keys {
        match t.get(*k) {
            None => continue,
            Some(Value::Array(a)) => {
                return a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| format!("`{at}.{k}` must be an array of strings"))
                    })
                    .collect();
            }
            Some(_) => return Err(format!("`{at}.{k}` must be an array of strings")),
        }
    }
    Ok(Vec::new())
}

/// Parse a package manifest. `inherit` is the workspace it belongs to, if any (needed only
/// when it inherits). Errors are messages; the caller names the file.
pub(crate) fn parse_manifest(
    doc: &Table,
    files: &Files<'_>,
    inherit: Option<&Inherit>,
) -> Result<Manifest, String> {
    let raw_pkg = doc
        .get("package")
        .or_else(|| doc.get("project"))
        .ok_or("no `[package]` table (a virtual manifest is not a package)")?
        .as_table()
        .ok_or("`package` must be a table")?;
    // `key.workspace = true`: take the value from `[workspace.package]`.
    let mut pkg = Table::new();
    for (k, v) in raw_pkg {
        if is_ws_ref(v) {
            let from = inherit
                .and_then(|i| i.package.get(k))
                .ok_or_else(|| format!("`package.{k}` is inherited from the workspace, but `[workspace.package]` has no `{k}`"))?;
            pkg.insert(k.clone(), from.clone());
        } else {
            pkg.insert(k.clone(), v.clone());
        }
    }
    let name = get_str(&pkg, "name", "package")?
        .ok_or("`package.name` is missing")?
        .to_string();
    let version = get_str(&pkg, "version", "package")?
        .unwrap_or("0.0.0")
        .to_string();
    let edition = get_str(&pkg, "edition", "package")?
        .unwrap_or("2015")
        .to_string();
    let links = get_str(&pkg, "links", "package")?.map(str::to_string);
    let resolver = get_str(&pkg, "resolver", "package")?.map(str::to_string);

    // [lib]
    let lib_table = match doc.get("lib") {
        None => None,
        Some(Value::Table(t)) => Some(t),
        Some(_) => return Err("`lib` must be a table".into()),
    };
    let autolib = get_bool(&pkg, &["autolib"], "package")?.unwrap_or(true);
    let default_lib_name = name.replace('-', "_");
    let lib = match lib_table {
        Some(t) => Some(LibTarget {
            name: get_str(t, "name", "lib")?
                .map_or(default_lib_name.clone(), |n| n.replace('-', "_")),
            path: get_str(t, "path", "lib")?.map_or("src/lib.rs".to_string(), rel_path),
            proc_macro: get_bool(t, &["proc-macro", "proc_macro"], "lib")?.unwrap_or(false),
            crate_types: match t.get("crate-type").or_else(|| t.get("crate_type")) {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string).ok_or_else(|| "`lib.crate-type` must be an array of strings".to_string()))
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`lib.crate-type` must be an array of strings".into()),
            },
        }),
        // A dependency not on disk is assumed to have its lib where cargo would look.
        None if autolib && files.exists("src/lib.rs").unwrap_or(true) => Some(LibTarget {
            name: default_lib_name,
            path: "src/lib.rs".into(),
            proc_macro: false,
            crate_types: Vec::new(),
        }),
        None => None,
    };

    // Binaries.
    let explicit_bins: Vec<&Table> = match doc.get("bin") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_table()
                    .ok_or_else(|| "`bin` must be an array of tables".to_string())
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`bin` must be an array of tables (`[[bin]]`)".into()),
    };
    // Edition 2015: listing any `[[bin]]` turns discovery off.
    let autobins_default = edition != "2015" || explicit_bins.is_empty();
    let autobins = get_bool(&pkg, &["autobins"], "package")?.unwrap_or(autobins_default);
    let discovered = files
        .dir()
        .map(|d| discover_bins(d, &name))
        .unwrap_or_default();
    let mut bins: Vec<BinTarget> = Vec::new();
    for t in &explicit_bins {
        let bname = get_str(t, "name", "bin")?
            .ok_or("a `[[bin]]` has no `name`")?
            .to_string();
        let path = match get_str(t, "path", "bin")? {
            Some(p) => rel_path(p),
            None => infer_bin_path(&bname, &name, &discovered, files),
        };
        let required_features =
            get_str_list(t, &["required-features", "required_features"], "bin")?;
        bins.push(BinTarget {
            name: bname,
            path,
            required_features,
        });
    }
    if autobins {
        for (bname, path) in &discovered {
            if !bins.iter().any(|b| &b.name == bname || &b.path == path) {
                bins.push(BinTarget {
                    name: bname.clone(),
                    path: path.clone(),
                    required_features: Vec::new(),
                });
            }
        }
    }

    // Build script.
    let build = match pkg.get("build") {
        Some(Value::Boolean(false)) => None,
        Some(Value::Boolean(true)) => Some("build.rs".to_string()),
        Some(Value::String(s)) => Some(rel_path(s)),
        Some(_) => return Err("`package.build` must be a boolean or a path".into()),
        // Unknown files: only `links` (which requires a build script) tells.
        None => match files.exists("build.rs") {
            Some(true) => Some("build.rs".to_string()),
            Some(false) => None,
            None => links.as_ref().map(|_| "build.rs".to_string()),
        },
    };

    // Dependencies.
    let mut deps = Vec::new();
    let tables: [(&[&str], DepKind); 3] = [
        (&["dependencies"], DepKind::Normal),
        (
            &["build-dependencies", "build_dependencies"],
            DepKind::Build,
        ),
        (&["dev-dependencies", "dev_dependencies"], DepKind::Dev),
    ];
    let mut collect = |owner: &Table, target: Option<&str>, at: &str| -> Result<(), String> {
        for (keys, kind) in &tables {
            for key in *keys {
                let Some(v) = owner.get(*key) else { continue };
                let t = v
                    .as_table()
                    .ok_or_else(|| format!("`{at}{key}` must be a table"))?;
                for (dname, spec) in t {
                    let d = parse_dep(dname, spec, *kind, target, files.dir(), inherit)
                        .map_err(|m| format!("dependency `{at}{key}.{dname}`: {m}"))?;
                    deps.push(d);
                }
            }
        }
        Ok(())
    };
    collect(doc, None, "")?;
    if let Some(targets) = doc.get("target") {
        let targets = targets.as_table().ok_or("`target` must be a table")?;
        for (tkey, tv) in targets {
            let tt = tv
                .as_table()
                .ok_or_else(|| format!("`target.{tkey}` must be a table"))?;
            collect(tt, Some(tkey), &format!("target.'{tkey}'."))?;
        }
    }

    // Features.
    let mut features = BTreeMap::new();
    if let Some(f) = doc.get("features") {
        let f = f.as_table().ok_or("`features` must be a table")?;
        for k in f.keys() {
            features.insert(k.clone(), get_str_list(f, &[k.as_str()], "features")?);
        }
    }

    // `[lints]`, or `[workspace.lints]` with `lints.workspace = true`.
    let lints = match doc.get("lints") {
        Some(l) if is_ws_ref(l) => inherit.map(|i| i.lints.clone()),
        Some(Value::Table(t)) => Some(t.clone()),
        _ => None,
    };
    let check_cfgs = lints.as_ref().map(check_cfg_names).unwrap_or_default();

    Ok(Manifest {
        name,
        version,
        edition,
        links,
        resolver,
        lib,
        bins,
        build,
        deps,
        features,
        check_cfgs,
    })
}

/// The cfg names of `rust.unexpected_cfgs.check-cfg` in a `[lints]` table. Lenient: a
/// malformed entry is skipped (rustc would warn, not fail).
fn check_cfg_names(lints: &Table) -> Vec<String> {
    let Some(Value::Table(uc)) = lints.get("rust").and_then(|r| r.get("unexpected_cfgs")) else { return Vec::new() };
    let Some(Value::Array(list)) = uc.get("check-cfg") else { return Vec::new() };
    let mut out: Vec<String> = list
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|s| s.trim().strip_prefix("cfg(").map(str::trim_start))
        .filter_map(|s| {
            let name: String = s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            (!name.is_empty() && name != "feature").then_some(name)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `src/main.rs`, `src/bin/*.rs`, `src/bin/*/main.rs`, sorted by name.
fn discover_bins(dir: &Path, package: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if dir.join("src/main.rs").is_file() {
        out.insert(package.to_string(), "src/main.rs".to_string());
    }
    let Ok(rd) = std::fs::read_dir(dir.join("src/bin")) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let fname = e.file_name();
        let Some(fname) = fname.to_str() else {
            continue;
        };
        let path = e.path();
        if path.is_file() {
            if let Some(stem) = fname.strip_suffix(".rs") {
                out.entry(stem.to_string())
                    .or_insert(format!("src/bin/{fname}"));
            }
        } else if path.is_dir() && path.join("main.rs").is_file() {
            out.entry(fname.to_string())
                .or_insert(format!("src/bin/{fname}/main.rs"));
        }
    }
    out
}

fn infer_bin_path(
    bin: &str,
    package: &str,
    discovered: &BTreeMap<String, String>,
    files: &Files<'_>,
) -> String {
    if let Some(p) = discovered.get(bin) {
        return p.clone();
    }
    let mut candidates = vec![
        format!("src/bin/{bin}.rs"),
        format!("src/bin/{bin}/main.rs"),
    ];
    if bin == package {
        candidates.insert(0, "src/main.rs".to_string());
    }
    for c in &candidates {
        if files.exists(c) == Some(true) {
            return c.clone();
        }
    }
    candidates.swap_remove(0)
}

fn parse_dep(
    key: &str,
    spec: &Value,
    kind: DepKind,
    target: Option<&str>,
    pkg_dir: Option<&Path>,
    inherit: Option<&Inherit>,
) -> Result<DepDecl, String> {
    let mut d = DepDecl {
        name_in_toml: key.to_string(),
        package: key.to_string(),
        renamed: false,
        kind,
        target: target.map(str::to_string),
        optional: false,
        default_features: true,
        features: Vec::new(),
        version_req: None,
        path: None,
        git: None,
        registry: None,
    };
    let t = match spec {
        Value::String(req) => {
            d.version_req = Some(req.clone());
            return Ok(d);
        }
        Value::Table(t) => t,
        _ => return Err("must be a version string or a table".into()),
    };
    let member_df = get_bool(t, &["default-features", "default_features"], "dependency")?;
    if get_bool(t, &["workspace"], "dependency")? == Some(true) {
        let inherit = inherit.ok_or("`workspace = true`, but the package is in no workspace")?;
        let base = inherit.dependencies.get(key).ok_or_else(|| {
            format!("`workspace = true`, but `[workspace.dependencies]` has no `{key}`")
        })?;
        if is_ws_ref(base) {
            return Err("`[workspace.dependencies]` entries cannot themselves inherit".into());
        }
        let mut base = parse_dep(key, base, kind, target, Some(&inherit.root), None)?;
        base.optional = get_bool(t, &["optional"], "dependency")?.unwrap_or(false);
        for f in get_str_list(t, &["features"], "dependency")? {
            if !base.features.contains(&f) {
                base.features.push(f);
            }
        }
        // A member can add default features the workspace entry turned off, not remove them.
        base.default_features = base.default_features || member_df == Some(true);
        return Ok(base);
    }
    if let Some(p) = get_str(t, "package", "dependency")? {
        d.package = p.to_string();
        d.renamed = true;
    }
    d.optional = get_bool(t, &["optional"], "dependency")?.unwrap_or(false);
    d.default_features = member_df.unwrap_or(true);
    d.features = get_str_list(t, &["features"], "dependency")?;
    d.version_req = get_str(t, "version", "dependency")?.map(str::to_string);
    d.path = get_str(t, "path", "dependency")?.map(|p| match pkg_dir {
        Some(dir) => normalize(&dir.join(p)),
        None => PathBuf::from(p),
    });
    d.git = get_str(t, "git", "dependency")?.map(str::to_string);
    d.registry = get_str(t, "registry", "dependency")?.map(str::to_string);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, String> {
        let doc: Table = toml::from_str(text).unwrap();
        parse_manifest(&doc, &Files::Unknown(None), None)
    }

    #[test]
    fn feature_values() {
        assert_eq!(FeatureValue::parse("dep:x"), FeatureValue::Dep("x".into()));
        assert_eq!(
            FeatureValue::parse("x?/f"),
            FeatureValue::DepFeature {
                dep: "x".into(),
                feature: "f".into(),
                weak: true
            }
        );
        assert_eq!(
            FeatureValue::parse("x/f"),
            FeatureValue::DepFeature {
                dep: "x".into(),
                feature: "f".into(),
                weak: false
            }
        );
        assert_eq!(
            FeatureValue::parse("std"),
            FeatureValue::Feature("std".into())
        );
    }

    #[test]
    fn implicit_features_hidden_by_dep_syntax() {
        let m = parse(
            r#"
[package]
name = "p"
version = "1.0.0"
[dependencies]
a = { version = "1", optional = true }
b = { version = "1", optional = true }
[features]
useb = ["dep:b"]
"#,
        )
        .unwrap();
        let fm = m.feature_map();
        assert_eq!(fm.get("a"), Some(&vec![FeatureValue::Dep("a".into())]));
        assert!(!fm.contains_key("b"));
    }

    #[test]
    fn dependency_forms() {
        let m = parse(
            r#"
[package]
name = "my-pkg"
version = "1.0.0"
links = "z"
[lib]
proc_macro = true
[dependencies]
plain = "1.2"
renamed-dep = { package = "real-name", version = "2", default-features = false, features = ["x"] }
[target.'cfg(windows)'.build-dependencies]
w = "1"
"#,
        )
        .unwrap();
        assert_eq!(m.lib.as_ref().unwrap().name, "my_pkg");
        assert!(m.is_proc_macro());
        assert_eq!(
            m.build.as_deref(),
            Some("build.rs"),
            "links implies a build script"
        );
        let r = m
            .deps
            .iter()
            .find(|d| d.name_in_toml == "renamed-dep")
            .unwrap();
        assert_eq!(r.package, "real-name");
        assert_eq!(r.rename_extern().as_deref(), Some("renamed_dep"));
        assert!(!r.default_features);
        let w = m.deps.iter().find(|d| d.name_in_toml == "w").unwrap();
        assert_eq!(
            (w.kind, w.target.as_deref()),
            (DepKind::Build, Some("cfg(windows)"))
        );
    }

    #[test]
    fn inheritance_errors_are_clear() {
        let e = parse("[package]\nname = \"p\"\nversion.workspace = true\n").unwrap_err();
        assert!(e.contains("`[workspace.package]` has no `version`"), "{e}");
        let e = parse("[package]\nname = \"p\"\n[dependencies]\nx = { workspace = true }\n")
            .unwrap_err();
        assert!(e.contains("in no workspace"), "{e}");
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }
}
