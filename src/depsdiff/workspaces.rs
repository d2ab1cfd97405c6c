//! The workspaces a lockfile change is analysed in: the repository's own workspace at base and
//! at head, or, when the graph cannot be known, a probe workspace that depends on every
//! changed package.
//!
//! A revision's workspace is written from git objects into a temporary directory (manifests,
//! the lockfile and the package sources: `ls-tree` and `cat-file` only, nothing checked out,
//! nothing run); the work tree is used as it is. The probe is a one-package workspace whose
//! lockfile is the compared lockfile plus an entry for the probe, so each changed package is
//! resolved with its default features and the dependencies the lockfile locks for it.

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

/// A probe workspace depending on `packages` (registry and git packages of `lock_text`) with
/// their default features. `None` when there is nothing to probe.
pub fn probe(lock_text: &str, packages: &[&LockedPackage]) -> Result<Option<WorkspaceDir>, String> {
    let mut deps = String::new();
    let mut lock_deps = Vec::new();
    let mut seen = BTreeSet::new();
    for p in packages {
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
        deps.push_str(&format!("{key} = {{ package = {}, {spec} }}\n", toml::Value::String(p.name.clone())));
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
