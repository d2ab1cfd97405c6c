//! Reading files at git revisions, with the `git` the runner already has.
//!
//! This module owns every call to `git`: finding the repository, checking that a revision
//! exists, reading a blob at a revision and listing the lockfiles a range changes. Each call reads
//! objects only (`cat-file`, `diff --name-only`, `ls-tree`, `merge-base`), with external diff
//! drivers, text conversion, hooks and fsmonitor switched off, so a checked-out repository cannot
//! make git run its code. The one call that writes is [`Repo::fetch_commit`], which the GitHub
//! Action uses to bring a missing base commit into a shallow checkout; it fetches one commit by
//! its id and updates no ref. `GITHUB_TOKEN` is removed from every git process's environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("{dir} is not inside a git repository")]
    NotARepository { dir: String },
    #[error("unknown revision {rev:?}: {detail}")]
    UnknownRevision { rev: String, detail: String },
    #[error("git {args} failed: {detail}")]
    Failed { args: String, detail: String },
    #[error("{path} at {rev} is not valid UTF-8")]
    NotUtf8 { rev: String, path: String },
}

/// A repository's work tree.
#[derive(Debug, Clone)]
pub struct Repo {
    root: PathBuf,
}

/// Settings that keep git from running anything a repository's configuration names.
const SAFE: &[&str] = &[
    "-c",
    "core.fsmonitor=false",
    "-c",
    "diff.external=",
    "-c",
    "core.hooksPath=/dev/null",
];

fn run(dir: &Path, args: &[&str]) -> Result<Output, GitError> {
    Command::new("git")
        .args(SAFE)
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GITHUB_TOKEN")
        .output()
        .map_err(GitError::Spawn)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

impl Repo {
    /// The repository containing `dir`.
    pub fn discover(dir: &Path) -> Result<Repo, GitError> {
        let o = run(dir, &["rev-parse", "--show-toplevel"])?;
        if !o.status.success() {
            return Err(GitError::NotARepository { dir: dir.display().to_string() });
        }
        let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Ok(Repo { root: PathBuf::from(root) })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The commit a revision names, or an error naming the revision.
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        if rev.starts_with('-') {
            return Err(GitError::UnknownRevision { rev: rev.into(), detail: "not a revision".into() });
        }
        let spec = format!("{rev}^{{commit}}");
        let o = run(&self.root, &["rev-parse", "--verify", "--quiet", "--end-of-options", &spec])?;
        if !o.status.success() {
            let detail = match stderr(&o) {
                s if s.is_empty() => "no such commit in this repository".to_string(),
                s => s,
            };
            return Err(GitError::UnknownRevision { rev: rev.into(), detail });
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    /// The text of `path` (relative to the repository root) at `commit`, `None` if the file does
    /// not exist there.
    pub fn read_at(&self, commit: &str, path: &str) -> Result<Option<String>, GitError> {
        let spec = format!("{commit}:{path}");
        let exists = run(&self.root, &["cat-file", "-e", &spec])?;
        if !exists.status.success() {
            return Ok(None);
        }
        let o = run(&self.root, &["cat-file", "blob", &spec])?;
        if !o.status.success() {
            return Err(GitError::Failed { args: format!("cat-file blob {spec}"), detail: stderr(&o) });
        }
        String::from_utf8(o.stdout)
            .map(Some)
            .map_err(|_| GitError::NotUtf8 { rev: commit.into(), path: path.into() })
    }

    /// Tracked `Cargo.lock` files (paths relative to the root) that differ between `base` and
    /// `head`, or between `base` and the work tree when `head` is `None`.
    pub fn changed_lockfiles(&self, base: &str, head: Option<&str>) -> Result<Vec<String>, GitError> {
        let mut args = vec!["diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-only", "-z", base];
        if let Some(h) = head {
            args.push(h);
        }
        args.extend(["--", ":(glob)**/Cargo.lock"]);
        let o = run(&self.root, &args)?;
        if !o.status.success() {
            return Err(GitError::Failed { args: args.join(" "), detail: stderr(&o) });
        }
        let mut paths: Vec<String> = o
            .stdout
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// Whether `commit` (a full object id) is a commit present in the repository.
    pub fn has_commit(&self, commit: &str) -> Result<bool, GitError> {
        if !is_object_id(commit) {
            return Ok(false);
        }
        let o = run(&self.root, &["cat-file", "-e", &format!("{commit}^{{commit}}")])?;
        Ok(o.status.success())
    }

    /// Whether the repository is a shallow clone.
    pub fn is_shallow(&self) -> Result<bool, GitError> {
        let o = run(&self.root, &["rev-parse", "--is-shallow-repository"])?;
        if !o.status.success() {
            return Err(GitError::Failed { args: "rev-parse --is-shallow-repository".into(), detail: stderr(&o) });
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim() == "true")
    }

    /// The parents `commit` records, first parent first. Read from the commit object itself, so
    /// this works in a shallow clone, where the parents may be absent.
    pub fn parents(&self, commit: &str) -> Result<Vec<String>, GitError> {
        let o = run(&self.root, &["cat-file", "commit", commit])?;
        if !o.status.success() {
            return Err(GitError::UnknownRevision { rev: commit.into(), detail: stderr(&o) });
        }
        let text = String::from_utf8_lossy(&o.stdout);
        Ok(text
            .lines()
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.strip_prefix("parent "))
            .map(|p| p.trim().to_string())
            .collect())
    }

    /// The best common ancestor of two commits, `None` when there is none in the repository (a
    /// shallow clone may not hold it).
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, GitError> {
        let o = run(&self.root, &["merge-base", "--end-of-options", a, b])?;
        if !o.status.success() {
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&o.stdout).trim().to_string()).filter(|s| !s.is_empty()))
    }

    /// Fetch one commit, by its full object id, from `remote`: only that commit when the clone is
    /// shallow. No ref is updated, no tag or submodule is fetched.
    pub fn fetch_commit(&self, remote: &str, commit: &str) -> Result<(), GitError> {
        if !is_object_id(commit) {
            return Err(GitError::UnknownRevision { rev: commit.into(), detail: "not a full commit id".into() });
        }
        let mut args = vec!["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"];
        if self.is_shallow()? {
            args.push("--depth=1");
        }
        args.extend(["--", remote, commit]);
        let o = run(&self.root, &args)?;
        if !o.status.success() {
            return Err(GitError::Failed { args: args.join(" "), detail: stderr(&o) });
        }
        Ok(())
    }

    /// Paths (relative to the root) of the files at `commit` whose file name is `name`.
    pub fn files_named(&self, commit: &str, name: &str) -> Result<Vec<String>, GitError> {
        let o = run(&self.root, &["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit])?;
        if !o.status.success() {
            return Err(GitError::Failed { args: format!("ls-tree -r {commit}"), detail: stderr(&o) });
        }
        let mut paths: Vec<String> = o
            .stdout
            .split(|&b| b == 0)
            .filter_map(|p| std::str::from_utf8(p).ok())
            .filter(|p| *p == name || p.rsplit_once('/').is_some_and(|(_, f)| f == name))
            .map(str::to_string)
            .collect();
        paths.sort();
        Ok(paths)
    }
}

/// A full object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
pub fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The all-zero id GitHub sends as `before` for the first push of a branch.
pub fn is_null_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == b'0')
}
