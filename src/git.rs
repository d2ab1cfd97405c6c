//! Reading files at git revisions, with the `git` the runner already has.
//!
//! This module owns every call to `git`: finding the repository, checking that a revision
//! exists, reading a blob at a revision and listing the lockfiles a range changes. Each call reads
//! objects only (`cat-file`, `diff --name-only`), with external diff drivers, text conversion and
//! fsmonitor hooks switched off, so a checked-out repository cannot make git run its code.

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
    #[error("{path} at {rev} is not valid UTF-8: invalid byte at offset {offset} (line {line}, column {column})")]
    NotUtf8 { rev: String, path: String, offset: usize, line: usize, column: usize },
    #[error("{path} at {rev} is {size} bytes, larger than the {limit}-byte limit for a lockfile")]
    TooLarge { rev: String, path: String, size: u64, limit: u64 },
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
        .env_remove("GIT_EXTERNAL_DIFF")
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
        // The size first: a huge blob is refused before it is read into memory.
        let size = run(&self.root, &["cat-file", "-s", &spec])?;
        let size: u64 = String::from_utf8_lossy(&size.stdout).trim().parse().unwrap_or(0);
        if size > crate::fsio::TEXT_CAP {
            return Err(GitError::TooLarge { rev: commit.into(), path: path.into(), size, limit: crate::fsio::TEXT_CAP });
        }
        let o = run(&self.root, &["cat-file", "blob", &spec])?;
        if !o.status.success() {
            return Err(GitError::Failed { args: format!("cat-file blob {spec}"), detail: stderr(&o) });
        }
        String::from_utf8(o.stdout).map(Some).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let (line, column) = crate::fsio::line_column(&e.as_bytes()[..offset]);
            GitError::NotUtf8 { rev: commit.into(), path: path.into(), offset, line, column }
        })
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
}
