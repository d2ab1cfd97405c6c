//! Git dependencies: the package a Cargo.lock `git+URL#COMMIT` source names, read from a bare
//! repository in velaris' cache.
//!
//! This module owns getting a git dependency's files without building, checking out or running
//! anything: the repository is fetched with the runner's `git` into
//! `CACHE/git/db/<hash of the URL>.git` (a bare repository velaris created itself, so no
//! configuration, hook or attribute of the fetched repository applies), the locked commit is
//! looked up by its id (a commit id names its whole tree, so finding it is the identity check),
//! the package is found among the repository's manifests as cargo finds it (the `Cargo.toml`
//! whose `package.name` and version match, workspace inheritance applied), and its files are
//! read from the object database with `ls-tree` and `cat-file`. Submodules are never fetched.
//! With `offline`, the network is never used: a commit not already in the cache is
//! [`GitDepError::Offline`].
//!
//! What it does not own: diffing, analysing or rendering what it returns, and the registry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml::{Table, Value};

use crate::git::{self, GitError, TreeEntry};
use crate::package::{FILE_CAP, FileTree, MIN_TOTAL};

/// Where and how to fetch.
#[derive(Debug, Clone)]
pub struct GitOptions {
    /// velaris' cache directory; git repositories live under `git/db/`. `None`: a temporary
    /// directory for this run only.
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network.
    pub offline: bool,
}

/// A `git+URL?query#COMMIT` lockfile source, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// The repository URL, without the query and the fragment.
    pub url: String,
    /// The locked commit id (hex).
    pub commit: String,
}

impl GitSource {
    /// Parse a lockfile `source`; `None` when it is not a git source.
    pub fn parse(source: &str) -> Option<GitSource> {
        let rest = source.strip_prefix("git+")?;
        let (url, commit) = rest.split_once('#')?;
        let url = url.split_once('?').map_or(url, |(u, _)| u);
        Some(GitSource { url: url.to_string(), commit: commit.to_string() })
    }
}

/// A git dependency's package, read at its locked commit.
#[derive(Debug, Clone)]
pub struct GitPackage {
    /// The package's files, relative to its directory (what cargo would compile from).
    pub files: FileTree,
    /// Its `Cargo.toml` with workspace inheritance applied (what the graph needs).
    pub manifest: String,
    /// The package's directory in the repository (`""` for the root).
    pub path: String,
    pub commit: String,
    /// Files left out: symlinks, submodules, and files past the size limits.
    pub skipped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum GitDepError {
    #[error("git source {source_id:?} is not a `git+URL#COMMIT` source")]
    BadSource { source_id: String },
    #[error("git source URL {url:?} is refused: {why}")]
    RefusedUrl { url: String, why: &'static str },
    #[error("locked commit {commit:?} is not a full commit id")]
    BadCommit { commit: String },
    #[error("commit {commit} of {url} is not in velaris' git cache and the network is disabled (offline)")]
    Offline { url: String, commit: String },
    #[error("could not fetch {url}: {detail}")]
    Fetch { url: String, detail: String },
    #[error("{url} has no commit {commit}")]
    NoCommit { url: String, commit: String },
    #[error("no package {name} {version} at commit {commit} of {url}{}", found_note(.found))]
    NoPackage { url: String, commit: String, name: String, version: String, found: Vec<String> },
    #[error("failed to prepare velaris' git cache {path}: {source}")]
    Cache { path: String, source: std::io::Error },
    #[error(transparent)]
    Git(#[from] GitError),
}

fn found_note(found: &[String]) -> String {
    if found.is_empty() { String::new() } else { format!(" (found: {})", found.join(", ")) }
}

impl GitDepError {
    pub fn is_offline(&self) -> bool {
        matches!(self, GitDepError::Offline { .. })
    }
}

/// URL schemes git may use for a dependency. Anything else (notably `ext::`, which runs a
/// command, and option-like strings) is refused before git sees it.
fn check_url(url: &str) -> Result<(), GitDepError> {
    let refuse = |why| Err(GitDepError::RefusedUrl { url: url.to_string(), why });
    if url.starts_with('-') {
        return refuse("it starts with '-'");
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return refuse("it contains whitespace or control characters");
    }
    const SCHEMES: &[&str] = &["https://", "http://", "ssh://", "git://", "file://"];
    if !SCHEMES.iter().any(|s| url.starts_with(s)) {
        return refuse("only https, http, ssh, git and file URLs are fetched");
    }
    Ok(())
}

fn check_commit(commit: &str) -> Result<(), GitDepError> {
    let ok = (commit.len() == 40 || commit.len() == 64) && commit.bytes().all(|b| b.is_ascii_hexdigit());
    if ok { Ok(()) } else { Err(GitDepError::BadCommit { commit: commit.to_string() }) }
}

/// Only the transports named in [`check_url`], fsck on every object received, no submodules.
const FETCH_SAFE: &[&str] = &[
    "-c",
    "protocol.allow=never",
    "-c",
    "protocol.https.allow=always",
    "-c",
    "protocol.http.allow=always",
    "-c",
    "protocol.ssh.allow=always",
    "-c",
    "protocol.git.allow=always",
    "-c",
    "protocol.file.allow=always",
    "-c",
    "transfer.fsckObjects=true",
    "-c",
    "fetch.recurseSubmodules=false",
    "-c",
    "submodule.recurse=false",
];

fn git_in(db: &Path) -> std::process::Command {
    let parent = db.parent().unwrap_or(db);
    let mut c = git::command(parent);
    c.arg("--git-dir").arg(db);
    c
}

fn has_commit(db: &Path, commit: &str) -> bool {
    git_in(db)
        .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn fetch(db: &Path, url: &str, refspecs: &[&str]) -> Result<(), String> {
    let o = git_in(db)
        .args(FETCH_SAFE)
        .args(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--"])
        .arg(url)
        .args(refspecs)
        .output()
        .map_err(|e| format!("could not run git: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
    }
}

/// The bare repository for `url` in the cache, holding `commit` (fetched unless present).
fn repository(opts: &GitOptions, scratch: &Path, src: &GitSource) -> Result<PathBuf, GitDepError> {
    let hash = format!("{:x}", Sha256::digest(src.url.as_bytes()));
    let base = opts.cache_dir.clone().unwrap_or_else(|| scratch.to_path_buf());
    let db = base.join("git").join("db").join(format!("{}.git", &hash[..24]));
    if db.join("HEAD").is_file() && has_commit(&db, &src.commit) {
        return Ok(db);
    }
    if opts.offline {
        return Err(GitDepError::Offline { url: src.url.clone(), commit: src.commit.clone() });
    }
    if !db.join("HEAD").is_file() {
        std::fs::create_dir_all(&db).map_err(|source| GitDepError::Cache { path: db.display().to_string(), source })?;
        let o = git::command(&db)
            .args(["init", "--quiet", "--bare", "."])
            .output()
            .map_err(|e| GitDepError::Git(GitError::Spawn(e)))?;
        if !o.status.success() {
            return Err(GitDepError::Fetch {
                url: src.url.clone(),
                detail: format!("git init: {}", String::from_utf8_lossy(&o.stderr).trim()),
            });
        }
    }
    // The commit by id first (most servers allow it); else every branch and tag.
    let by_id = fetch(&db, &src.url, &[&src.commit]);
    if !has_commit(&db, &src.commit) {
        let all = fetch(&db, &src.url, &["+refs/heads/*:refs/velaris/heads/*", "+refs/tags/*:refs/velaris/tags/*"]);
        if !has_commit(&db, &src.commit) {
            return match (by_id, all) {
                (_, Err(detail)) => Err(GitDepError::Fetch { url: src.url.clone(), detail }),
                _ => Err(GitDepError::NoCommit { url: src.url.clone(), commit: src.commit.clone() }),
            };
        }
    }
    Ok(db)
}

/// Fetch (or find in the cache) the package `name` `version` of the git source `source`.
pub fn fetch_package(opts: &GitOptions, source: &str, name: &str, version: &str) -> Result<GitPackage, GitDepError> {
    let src = GitSource::parse(source).ok_or_else(|| GitDepError::BadSource { source_id: source.to_string() })?;
    check_url(&src.url)?;
    check_commit(&src.commit)?;
    let scratch = tempfile::tempdir().map_err(|source| GitDepError::Cache { path: "a temporary directory".into(), source })?;
    let db = repository(opts, scratch.path(), &src)?;
    let parent = db.parent().unwrap_or(&db).to_path_buf();
    let entries = git::ls_tree(&parent, Some(&db), &src.commit)?;
    let found = find_package(&parent, &db, &entries, name, version)?;
    let Some((dir, manifest)) = found.0 else {
        return Err(GitDepError::NoPackage {
            url: src.url.clone(),
            commit: src.commit.clone(),
            name: name.to_string(),
            version: version.to_string(),
            found: found.1,
        });
    };
    let (files, skipped) = read_package(&parent, &db, &entries, &dir)?;
    Ok(GitPackage { files, manifest, path: dir, commit: src.commit, skipped })
}

/// Every file of the tree at `commit` of the repository at `url`, fetched into (or found in)
/// velaris' git cache as for a git dependency: what `--verify-source` compares a published
/// package with.
pub fn tree_at(opts: &GitOptions, url: &str, commit: &str) -> Result<Vec<TreeEntry>, GitDepError> {
    check_url(url)?;
    check_commit(commit)?;
    let src = GitSource { url: url.to_string(), commit: commit.to_string() };
    let scratch = tempfile::tempdir().map_err(|source| GitDepError::Cache { path: "a temporary directory".into(), source })?;
    let db = repository(opts, scratch.path(), &src)?;
    let parent = db.parent().unwrap_or(&db).to_path_buf();
    Ok(git::ls_tree(&parent, Some(&db), commit)?)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Directories cargo does not look into for packages.
fn skipped_dir(path: &str) -> bool {
    path.split('/').rev().skip(1).any(|c| c.starts_with('.') || c == "target")
}

type Found = (Option<(String, String)>, Vec<String>);

/// The package directory and normalized manifest of `name` `version`; otherwise the packages of
/// that name that were found, for the message.
fn find_package(parent: &Path, db: &Path, entries: &[TreeEntry], name: &str, version: &str) -> Result<Found, GitDepError> {
    let manifests: Vec<&TreeEntry> = entries
        .iter()
        .filter(|e| e.is_file() && (e.path == "Cargo.toml" || e.path.ends_with("/Cargo.toml")) && !skipped_dir(&e.path))
        .filter(|e| e.size.is_some_and(|s| s <= 1 << 20))
        .collect();
    let oids: Vec<String> = manifests.iter().map(|e| e.oid.clone()).collect();
    let texts = git::read_blobs(parent, Some(db), &oids, 1 << 20)?;
    let docs: BTreeMap<String, Table> = manifests
        .iter()
        .zip(texts)
        .filter_map(|(e, t)| {
            let text = String::from_utf8(t?).ok()?;
            let doc: Table = toml::from_str(&text).ok()?;
            Some((dir_of(&e.path).to_string(), doc))
        })
        .collect();
    let mut found = Vec::new();
    let mut best: Option<(String, String)> = None;
    for (dir, doc) in &docs {
        let Some(pkg) = doc.get("package").and_then(Value::as_table) else { continue };
        if pkg.get("name").and_then(Value::as_str) != Some(name) {
            continue;
        }
        let ws = workspace_of(dir, doc, &docs);
        let normalized = normalize(doc, ws);
        let v = normalized
            .get("package")
            .and_then(|p| p.get("version"))
            .and_then(Value::as_str)
            .unwrap_or("0.0.0")
            .to_string();
        found.push(format!("{name} {v} in {}", if dir.is_empty() { "/" } else { dir }));
        // Several matches: the shallowest directory, then the first in path order.
        let depth = |d: &str| if d.is_empty() { 0 } else { d.matches('/').count() + 1 };
        if v == version && best.as_ref().is_none_or(|(b, _)| depth(dir) < depth(b)) {
            best = Some((dir.clone(), toml::to_string(&normalized).unwrap_or_default()));
        }
    }
    Ok((best, found))
}

/// The `[workspace]` table a package inherits from: its own, or the nearest ancestor's.
fn workspace_of<'a>(dir: &str, doc: &'a Table, docs: &'a BTreeMap<String, Table>) -> Option<&'a Table> {
    if let Some(ws) = doc.get("workspace").and_then(Value::as_table) {
        return Some(ws);
    }
    let mut cur = dir;
    while !cur.is_empty() {
        cur = dir_of(cur);
        if let Some(ws) = docs.get(cur).and_then(|d| d.get("workspace")).and_then(Value::as_table) {
            return Some(ws);
        }
    }
    None
}

fn is_ws_ref(v: &Value) -> bool {
    v.as_table().and_then(|t| t.get("workspace")).and_then(Value::as_bool) == Some(true)
}

/// Apply `[workspace.package]` and `[workspace.dependencies]` inheritance, as `cargo package`
/// would before publishing; the `[workspace]` table itself is dropped.
fn normalize(doc: &Table, ws: Option<&Table>) -> Table {
    let mut out = doc.clone();
    out.remove("workspace");
    let Some(ws) = ws else { return out };
    let ws_pkg = ws.get("package").and_then(Value::as_table);
    let ws_deps = ws.get("dependencies").and_then(Value::as_table);
    if let Some(Value::Table(pkg)) = out.get_mut("package") {
        for (k, v) in pkg.iter_mut() {
            if is_ws_ref(v) {
                if let Some(from) = ws_pkg.and_then(|p| p.get(k.as_str())) {
                    *v = from.clone();
                }
            }
        }
    }
    let fix_deps = |t: &mut Table| {
        for key in ["dependencies", "build-dependencies", "build_dependencies", "dev-dependencies", "dev_dependencies"] {
            let Some(Value::Table(deps)) = t.get_mut(key) else { continue };
            for (name, spec) in deps.iter_mut() {
                if !is_ws_ref(spec) {
                    continue;
                }
                let Some(base) = ws_deps.and_then(|d| d.get(name.as_str())) else { continue };
                let mut merged = match base {
                    Value::String(v) => {
                        let mut m = Table::new();
                        m.insert("version".into(), Value::String(v.clone()));
                        m
                    }
                    Value::Table(b) => b.clone(),
                    _ => continue,
                };
                let member = spec.as_table().cloned().unwrap_or_default();
                for (k, v) in member {
                    match k.as_str() {
                        "workspace" => {}
                        "features" => {
                            let mut all = merged.get("features").and_then(Value::as_array).cloned().unwrap_or_default();
                            for f in v.as_array().cloned().unwrap_or_default() {
                                if !all.contains(&f) {
                                    all.push(f);
                                }
                            }
                            merged.insert("features".into(), Value::Array(all));
                        }
                        _ => {
                            merged.insert(k, v);
                        }
                    }
                }
                *spec = Value::Table(merged);
            }
        }
    };
    fix_deps(&mut out);
    if let Some(Value::Table(targets)) = out.get_mut("target") {
        for (_, t) in targets.iter_mut() {
            if let Value::Table(t) = t {
                fix_deps(t);
            }
        }
    }
    out
}

/// The files of the package in `dir`: everything below it except nested packages, `target/`
/// and hidden VCS directories; symlinks, submodules and oversized files are listed as skipped.
fn read_package(parent: &Path, db: &Path, entries: &[TreeEntry], dir: &str) -> Result<(FileTree, Vec<String>), GitDepError> {
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let nested: Vec<String> = entries
        .iter()
        .filter(|e| e.path.ends_with("/Cargo.toml") || e.path == "Cargo.toml")
        .map(|e| dir_of(&e.path).to_string())
        .filter(|d| d != dir && (prefix.is_empty() || d.starts_with(&prefix)))
        .map(|d| format!("{d}/"))
        .collect();
    let mut want = Vec::new();
    let mut skipped = Vec::new();
    let mut total = 0u64;
    for e in entries {
        let Some(rel) = e.path.strip_prefix(&prefix) else { continue };
        if nested.iter().any(|n| e.path.starts_with(n.as_str())) {
            continue;
        }
        let first = rel.split('/').next().unwrap_or("");
        if first == "target" || first == ".git" {
            continue;
        }
        if !e.is_file() {
            skipped.push(format!("{rel} ({})", if e.mode == "160000" { "submodule" } else { "symlink" }));
            continue;
        }
        let size = e.size.unwrap_or(0);
        if size > FILE_CAP || total + size > MIN_TOTAL {
            skipped.push(format!("{rel} (too large)"));
            continue;
        }
        total += size;
        want.push((rel.to_string(), e.oid.clone()));
    }
    let oids: Vec<String> = want.iter().map(|(_, o)| o.clone()).collect();
    let blobs = git::read_blobs(parent, Some(db), &oids, FILE_CAP)?;
    let mut files = FileTree::new();
    for ((rel, _), blob) in want.into_iter().zip(blobs) {
        match blob {
            Some(b) => {
                files.insert(rel, b);
            }
            None => skipped.push(format!("{rel} (too large)")),
        }
    }
    Ok((files, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_and_urls_are_checked() {
        let s = GitSource::parse("git+https://example.com/r.git?branch=main#0123456789abcdef0123456789abcdef01234567").unwrap();
        assert_eq!(s.url, "https://example.com/r.git");
        assert_eq!(s.commit, "0123456789abcdef0123456789abcdef01234567");
        assert!(GitSource::parse("registry+https://x").is_none());
        assert!(check_url("ext::sh -c touch% /tmp/pwned").is_err());
        assert!(check_url("--upload-pack=touch /tmp/x").is_err());
        assert!(check_url("https://example.com/x y").is_err());
        assert!(check_url("https://example.com/x").is_ok());
        assert!(check_url("file:///srv/git/x.git").is_ok());
        assert!(check_commit("abc").is_err());
        assert!(check_commit(&"a".repeat(40)).is_ok());
    }

    #[test]
    fn inheritance_is_applied() {
        let root: Table = toml::from_str(
            "[workspace]\nmembers=[\"a\"]\n[workspace.package]\nversion = \"1.2.3\"\nedition = \"2021\"\n\
             [workspace.dependencies]\nserde = { version = \"1\", default-features = false }\nlog = \"0.4\"\n",
        )
        .unwrap();
        let member: Table = toml::from_str(
            "[package]\nname = \"a\"\nversion.workspace = true\nedition.workspace = true\n\
             [dependencies]\nserde = { workspace = true, features = [\"derive\"], optional = true }\nlog.workspace = true\n",
        )
        .unwrap();
        let mut docs = BTreeMap::new();
        docs.insert(String::new(), root);
        docs.insert("a".to_string(), member.clone());
        let ws = workspace_of("a", &member, &docs);
        let n = normalize(&member, ws);
        assert_eq!(n["package"]["version"].as_str(), Some("1.2.3"));
        let serde = n["dependencies"]["serde"].as_table().unwrap();
        assert_eq!(serde["version"].as_str(), Some("1"));
        assert_eq!(serde["optional"].as_bool(), Some(true));
        assert_eq!(serde["default-features"].as_bool(), Some(false));
        assert_eq!(n["dependencies"]["log"]["version"].as_str(), Some("0.4"));
    }
}
