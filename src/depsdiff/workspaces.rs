//! The workspaces a lockfile change is analysed in: the repository's own workspace at base and
//! at head, or, when the graph cannot be known, a probe workspace that depends on every
//! changed package.
//!
//! A revision's workspace is written from git objects into a temporary directory (manifests,
//! the lockfile and the package sources: `ls-tree` and `cat-file` only, nothing checked out,
//! nothing run); the work tree is used as it is. The probe is a one-package workspace whose
//! lockfile is the compared lockfile plus an entry for the probe, so each changed package is
//! resolved with the dependencies the lockfile locks for it. The lockfile does not say which
//! features each package was built with, only which optional dependencies are on: the probe
//! asks of each changed package every feature that turns on no optional dependency the
//! lockfile leaves out ([`superset_features`]), a superset of what was built, and the engine
//! resolves it with the lockfile leading (what the lockfile does not lock is not built).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::git::Repo;
use crate::lockfile::{LockedPackage, SourceKind};
use crate::package::FILE_CAP;

/// A workspace directory to analyse, kept alive as long as needed.
pub struct WorkspaceDir {
    pub root: PathBuf,
    /// The temporary directory holding it, when velaris wrote it.
    _tmp: Option<tempfile::TempDir>,
}

impl WorkspaceDir {
    pub fn on_disk(root: PathBuf) -> WorkspaceDir {
        WorkspaceDir { root, _tmp: None }
    }
}

/// The most a revision's workspace may take on disk when written out.
const MAX_WORKSPACE_BYTES: u64 = 1 << 30;

/// The package name of the probe.
pub const PROBE: &str = "velaris-deps-diff-probe";

/// The workspace whose root is `dir` (relative to the repository root, `""` for the root) at
/// `commit`, written to a temporary directory: every file below `dir` and below any other
/// directory holding a `Cargo.toml` (path dependencies), regular files only, none larger than
/// the unpacking limit, no `target/`. `Ok(None)` when `dir` has no `Cargo.toml` at `commit`.
pub fn materialize(repo: &Repo, commit: &str, dir: &str) -> Result<Option<WorkspaceDir>, String> {
    let entries = repo.ls_tree(commit).map_err(|e| e.to_string())?;
    let manifest = if dir.is_empty() { "Cargo.toml".to_string() } else { format!("{dir}/Cargo.toml") };
    if !entries.iter().any(|e| e.path == manifest && e.is_file()) {
        return Ok(None);
    }
    let mut roots: BTreeSet<String> = entries
        .iter()
        .filter(|e| e.path == "Cargo.toml" || e.path.ends_with("/Cargo.toml"))
        .map(|e| e.path.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string()))
        .collect();
    roots.insert(dir.to_string());
    let under = |path: &str, root: &str| root.is_empty() || path.starts_with(&format!("{root}/"));
    let wanted: Vec<&crate::git::TreeEntry> = entries
        .iter()
        .filter(|e| e.is_file() && e.size.is_some_and(|s| s <= FILE_CAP))
        .filter(|e| !e.path.split('/').any(|c| c == "target" || c == ".git"))
        .filter(|e| roots.iter().any(|r| under(&e.path, r)))
        .collect();
    let total: u64 = wanted.iter().filter_map(|e| e.size).sum();
    if total > MAX_WORKSPACE_BYTES {
        return Err(format!(
            "its packages hold {} MiB at {}, more than the {} MiB velaris writes out",
            total >> 20,
            &commit[..commit.len().min(12)],
            MAX_WORKSPACE_BYTES >> 20
        ));
    }
    let tmp = tempfile::Builder::new().prefix("velaris-ws-").tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let oids: Vec<String> = wanted.iter().map(|e| e.oid.clone()).collect();
    let blobs = repo.read_blobs(&oids, FILE_CAP).map_err(|e| e.to_string())?;
    for (e, blob) in wanted.iter().zip(blobs) {
        let Some(bytes) = blob else { continue };
        // Git paths are relative and never hold `..`; refuse anything else all the same.
        if e.path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
            continue;
        }
        let path = tmp.path().join(&e.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| format!("{}: {err}", parent.display()))?;
        }
        std::fs::write(&path, bytes).map_err(|err| format!("{}: {err}", path.display()))?;
    }
    let root = if dir.is_empty() { tmp.path().to_path_buf() } else { tmp.path().join(dir) };
    Ok(Some(WorkspaceDir { root, _tmp: Some(tmp) }))
}

/// A package the probe depends on, and the features it asks of it: `None` for its default
/// features, else exactly these (without `default` unless listed).
pub struct ProbeDep<'a> {
    pub package: &'a LockedPackage,
    pub features: Option<Vec<String>>,
}

/// A probe workspace depending on `packages` (registry and git packages of `lock_text`), each
/// with the features given. `None` when there is nothing to probe.
pub fn probe(lock_text: &str, packages: &[ProbeDep<'_>]) -> Result<Option<WorkspaceDir>, String> {
    let mut deps = String::new();
    let mut lock_deps = Vec::new();
    let mut seen = BTreeSet::new();
    for d in packages {
        let p = d.package;
        let Some(source) = &p.source else { continue };
        let spec = match p.source_kind() {
            SourceKind::CratesIo | SourceKind::Registry(_) => format!("version = \"={}\"", p.version),
            SourceKind::Git { url, .. } => {
                let url = url.trim_start_matches("git+");
                let url = url.split_once('?').map_or(url, |(u, _)| u);
                format!("git = {}", toml::Value::String(url.to_string()))
            }
            SourceKind::Local => continue,
        };
        if !seen.insert((p.name.clone(), p.version.to_string(), source.clone())) {
            continue;
        }
        let key = format!("d{}", lock_deps.len());
        let features = match &d.features {
            None => String::new(),
            Some(list) => {
                let list: Vec<String> = list.iter().map(|f| toml::Value::String(f.clone()).to_string()).collect();
                format!(", default-features = false, features = [{}]", list.join(", "))
            }
        };
        deps.push_str(&format!("{key} = {{ package = {}, {spec}{features} }}\n", toml::Value::String(p.name.clone())));
        lock_deps.push(format!("{} {} ({source})", p.name, p.version));
    }
    if lock_deps.is_empty() {
        return Ok(None);
    }
    let tmp = tempfile::Builder::new().prefix("velaris-probe-").tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let root = tmp.path().to_path_buf();
    let manifest = format!(
        "[package]\nname = \"{PROBE}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n\n[dependencies]\n{deps}"
    );
    let mut lock = lock_text.to_string();
    if !lock.ends_with('\n') {
        lock.push('\n');
    }
    lock.push_str(&format!("\n[[package]]\nname = \"{PROBE}\"\nversion = \"0.0.0\"\ndependencies = [\n"));
    for d in &lock_deps {
        lock.push_str(&format!(" {},\n", toml::Value::String(d.clone())));
    }
    lock.push_str("]\n");
    let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).map_err(|e| format!("{rel}: {e}"));
    write("Cargo.toml", &manifest)?;
    write("lib.rs", "")?;
    write("Cargo.lock", &lock)?;
    Ok(Some(WorkspaceDir { root, _tmp: Some(tmp) }))
}

/// The directory of a lockfile path relative to the repository root (`""` for the root).
pub fn dir_of_lockfile(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Whether `dir` (relative to the repository root) holds a `Cargo.toml` in the work tree.
pub fn has_manifest(root: &Path, dir: &str) -> bool {
    root.join(dir).join("Cargo.toml").is_file()
}

/// Every feature of a package whose activation, within the package, turns on no optional
/// dependency outside `locked` (the package names its lockfile entry depends on): a superset of
/// the features the lockfile was resolved with, since a feature that was on would have locked
/// what it turns on. `default` is in it when it qualifies. `None` when the manifest does not
/// parse (the probe then asks for the default features).
pub fn superset_features(manifest: &str, locked: &BTreeSet<String>) -> Option<Vec<String>> {
    use std::collections::BTreeMap;
    let doc: toml::Table = toml::from_str(manifest).ok()?;
    // Optional dependencies by the name features use, with the package each one is.
    let mut optional: BTreeMap<String, String> = BTreeMap::new();
    let mut tables: Vec<&toml::Table> = Vec::new();
    for key in ["dependencies", "build-dependencies"] {
        if let Some(t) = doc.get(key).and_then(|v| v.as_table()) {
            tables.push(t);
        }
    }
    if let Some(targets) = doc.get("target").and_then(|v| v.as_table()) {
        for t in targets.values().filter_map(|v| v.as_table()) {
            for key in ["dependencies", "build-dependencies"] {
                if let Some(t) = t.get(key).and_then(|v| v.as_table()) {
                    tables.push(t);
                }
            }
        }
    }
    for t in tables {
        for (name, spec) in t {
            let Some(spec) = spec.as_table() else { continue };
            if spec.get("optional").and_then(|v| v.as_bool()) == Some(true) {
                let package = spec.get("package").and_then(|v| v.as_str()).unwrap_or(name);
                optional.insert(name.clone(), package.to_string());
            }
        }
    }
    let mut features: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(t) = doc.get("features").and_then(|v| v.as_table()) {
        for (name, list) in t {
            let values = list.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default();
            features.insert(name.clone(), values);
        }
    }
    // An optional dependency no feature names as `dep:x` has the implicit feature `x`.
    let named: BTreeSet<String> = features.values().flatten().filter_map(|v| v.strip_prefix("dep:")).map(str::to_string).collect();
    for dep in optional.keys() {
        if !named.contains(dep) && !features.contains_key(dep) {
            features.insert(dep.clone(), vec![format!("dep:{dep}")]);
        }
    }
    let dep_ok = |dep: &str| optional.get(dep).is_none_or(|pkg| locked.contains(pkg));
    // A feature qualifies when everything it activates does; cycles are allowed by cargo and
    // count as qualifying along the cycle (a memo marks a feature in progress as fine).
    fn ok(
        f: &str,
        features: &BTreeMap<String, Vec<String>>,
        dep_ok: &dyn Fn(&str) -> bool,
        memo: &mut BTreeMap<String, bool>,
        depth: usize,
    ) -> bool {
        if let Some(&v) = memo.get(f) {
            return v;
        }
        if depth > 256 {
            return false;
        }
        memo.insert(f.to_string(), true);
        let mut good = true;
        for v in features.get(f).into_iter().flatten() {
            let fine = if let Some(dep) = v.strip_prefix("dep:") {
                dep_ok(dep)
            } else if let Some((dep, _)) = v.split_once('/') {
                // `x?/f` only applies when something else turns `x` on.
                dep.ends_with('?') || dep_ok(dep)
            } else if features.contains_key(v.as_str()) {
                ok(v, features, dep_ok, memo, depth + 1)
            } else {
                dep_ok(v)
            };
            if !fine {
                good = false;
                break;
            }
        }
        memo.insert(f.to_string(), good);
        good
    }
    let mut memo = BTreeMap::new();
    let out: Vec<String> = features.keys().filter(|f| ok(f, &features, &dep_ok, &mut memo, 0)).cloned().collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_superset_leaves_out_features_that_need_what_is_not_locked() {
        let m = r#"
[package]
name = "predicates"
version = "3.1.3"

[dependencies]
difflib = { version = "0.4", optional = true }
regex = { version = "1", optional = true }
float = { package = "float-cmp", version = "0.10", optional = true }
anstyle = "1"

[features]
default = ["diff", "regex", "float-cmp", "normalize-line-endings"]
diff = ["dep:difflib"]
float-cmp = ["dep:float"]
normalize-line-endings = []
color = ["anstyle/std", "regex?/unicode"]
"#;
        // The lockfile locks regex and float-cmp for it, not difflib: `diff` was off, so was
        // `default`.
        let f = superset_features(m, &set(&["regex", "float-cmp", "anstyle"])).unwrap();
        assert_eq!(f, ["color", "float-cmp", "normalize-line-endings", "regex"]);
        // Everything locked: every feature, `default` included.
        let f = superset_features(m, &set(&["regex", "float-cmp", "anstyle", "difflib"])).unwrap();
        assert_eq!(f, ["color", "default", "diff", "float-cmp", "normalize-line-endings", "regex"]);
        assert_eq!(superset_features("not toml [", &set(&[])), None);
    }
}
