//! Reading files at git revisions, with the `git` the runner already has.
//!
//! This module owns every call to `git`: finding the repository, checking that a revision
//! exists, reading a blob at a revision, listing a revision's files and the lockfiles a range
//! changes. Each call reads objects only (`cat-file`, `ls-tree`, `diff --name-only`,
//! `merge-base`), with external diff drivers, text conversion, hooks and fsmonitor switched off,
//! so a checked-out repository cannot make git run its code. The one call here that writes is
//! [`Repo::fetch_commit`], which the GitHub Action uses to bring a missing base commit into a
//! shallow checkout; it fetches one commit by its id and updates no ref. Fetching git
//! dependencies into velaris' cache is [`crate::gitdeps`]; it runs git through [`command`] with
//! the same settings. `GITHUB_TOKEN` is removed from every git process's environment.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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
    #[error("git cat-file: {0}")]
    Batch(String),
}

/// One file of a tree, as `git ls-tree -r -l` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// `100644`, `100755` (regular files), `120000` (symlink), `160000` (submodule).
    pub mode: String,
    pub oid: String,
    /// Blob size; `None` for submodules.
    pub size: Option<u64>,
    /// Relative to the tree's root, `/`-separated as git stores it.
    pub path: String,
}

impl TreeEntry {
    pub fn is_file(&self) -> bool {
        self.mode == "100644" || self.mode == "100755"
    }
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

/// `git` with the settings that keep it from running anything a repository configures, in
/// `dir`. Callers add their arguments.
pub(crate) fn command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.args(SAFE)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    c
}

fn run(dir: &Path, args: &[&str]) -> Result<Output, GitError> {
    command(dir).args(args).output().map_err(GitError::Spawn)
}

/// Every file of the tree of `commit` (recursively), in the repository git finds from `dir`
/// (`git_dir` names a bare repository instead).
pub(crate) fn ls_tree(dir: &Path, git_dir: Option<&Path>, commit: &str) -> Result<Vec<TreeEntry>, GitError> {
    let mut c = command(dir);
    if let Some(g) = git_dir {
        c.arg("--git-dir").arg(g);
    }
    let spec = format!("{commit}^{{tree}}");
    let o = c.args(["ls-tree", "-r", "-l", "-z", "--full-tree", &spec]).output().map_err(GitError::Spawn)?;
    if !o.status.success() {
        return Err(GitError::Failed { args: format!("ls-tree -r {spec}"), detail: stderr(&o) });
    }
    let mut out = Vec::new();
    for rec in o.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        // `<mode> SP <type> SP <oid> SP+ <size> TAB <path>`
        let Some((meta, path)) = rec.split_once('\t') else { continue };
        let mut parts = meta.split_whitespace();
        let (Some(mode), Some(_kind), Some(oid), Some(size)) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        out.push(TreeEntry {
            mode: mode.to_string(),
            oid: oid.to_string(),
            size: size.parse().ok(),
            path: path.to_string(),
        });
    }
    Ok(out)
}

/// The contents of the blobs `oids`, in order, through one `git cat-file --batch`. A blob
/// larger than `cap` is not read: its slot is `None`.
pub(crate) fn read_blobs(
    dir: &Path,
    git_dir: Option<&Path>,
    oids: &[String],
    cap: u64,
) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = command(dir);
    if let Some(g) = git_dir {
        c.arg("--git-dir").arg(g);
    }
    let mut child = c
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(GitError::Spawn)?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let list: String = oids.iter().map(|o| format!("{o}\n")).collect();
    // Feed the list from another thread so a full stdout pipe cannot deadlock us.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(list.as_bytes());
    });
    let mut reader = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut out = Vec::with_capacity(oids.len());
    let bad = |m: String| GitError::Batch(m);
    for oid in oids {
        let mut header = String::new();
        if reader.read_line(&mut header).map_err(|e| bad(e.to_string()))? == 0 {
            return Err(bad(format!("no answer for {oid}")));
        }
        let mut parts = header.split_whitespace();
        let (Some(_), Some(kind)) = (parts.next(), parts.next()) else {
            return Err(bad(format!("unexpected answer {header:?}")));
        };
        if kind == "missing" {
            return Err(bad(format!("object {oid} is missing")));
        }
        let size: u64 = parts.next().and_then(|s| s.parse().ok()).ok_or_else(|| bad(format!("unexpected answer {header:?}")))?;
        let mut body = Vec::with_capacity(size.min(cap) as usize);
        (&mut reader).take(size).read_to_end(&mut body).map_err(|e| bad(e.to_string()))?;
        let mut nl = [0u8; 1];
        reader.read_exact(&mut nl).map_err(|e| bad(e.to_string()))?;
        out.push((size <= cap).then_some(body));
    }
    let _ = feeder.join();
    let _ = child.wait();
    Ok(out)
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

    /// Every file of the tree at `commit`.
    pub fn ls_tree(&self, commit: &str) -> Result<Vec<TreeEntry>, GitError> {
        ls_tree(&self.root, None, commit)
    }

    /// The contents of blobs by object id (see [`TreeEntry::oid`]); `None` past `cap` bytes.
    pub fn read_blobs(&self, oids: &[String], cap: u64) -> Result<Vec<Option<Vec<u8>>>, GitError> {
        read_blobs(&self.root, None, oids, cap)
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

    /// When `commit` was committed (its committer time, seconds since the Unix epoch), read
    /// from the commit object.
    pub fn commit_time(&self, commit: &str) -> Result<i64, GitError> {
        let o = run(&self.root, &["cat-file", "commit", commit])?;
        if !o.status.success() {
            return Err(GitError::UnknownRevision { rev: commit.into(), detail: stderr(&o) });
        }
        let text = String::from_utf8_lossy(&o.stdout);
        text.lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix("committer "))
            .and_then(|c| c.rsplitn(3, ' ').nth(1).and_then(|t| t.parse().ok()))
            .ok_or_else(|| GitError::Failed { args: format!("cat-file commit {commit}"), detail: "no committer time in the commit".into() })
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
