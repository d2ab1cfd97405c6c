//! Parsing a Cargo.lock into the packages it locks.
//!
//! `cargo-lock` is the model (it knows formats v1 to v4, including v1's `[metadata]` checksums).
//! Before handing the text to it, a span-aware pass over the same TOML checks every package entry,
//! so that a malformed lockfile is reported at its line and column, with every problem found, not
//! only the first.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::Deserialize;
use toml::Spanned;

use crate::message::clip;

/// A parsed lockfile: its format version and its packages, in file order.
#[derive(Debug, Clone)]
pub struct Lockfile {
    /// Lockfile format version (1 to 4).
    pub version: u32,
    pub packages: Vec<LockedPackage>,
}

/// One `[[package]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedPackage {
    pub name: String,
    pub version: semver::Version,
    /// The `source` string as cargo wrote it (`registry+URL`, `sparse+URL`, `git+URL#rev`);
    /// `None` for workspace members and path dependencies.
    pub source: Option<String>,
    /// Lower-case hex sha256 of the published `.crate`, for registry packages.
    pub checksum: Option<String>,
}

/// What kind of place a package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceKind {
    /// crates.io, whichever protocol the lockfile names.
    CratesIo,
    /// Another registry, by its index URL including the `registry+`/`sparse+` prefix.
    Registry(String),
    /// A git repository: the URL without the `#commit` fragment, and the commit.
    Git { url: String, commit: Option<String> },
    /// No source: a workspace member or a path dependency.
    Local,
}

/// crates.io under either protocol, with or without a trailing slash.
fn is_crates_io(s: &str) -> bool {
    let s = s.trim_end_matches('/');
    s == CRATES_IO_GIT || s == CRATES_IO_SPARSE.trim_end_matches('/')
}

pub(crate) const CRATES_IO_GIT: &str = "registry+https://github.com/rust-lang/crates.io-index";
pub(crate) const CRATES_IO_SPARSE: &str = "sparse+https://index.crates.io/";

impl LockedPackage {
    pub fn source_kind(&self) -> SourceKind {
        match self.source.as_deref() {
            None => SourceKind::Local,
            Some(s) if is_crates_io(s) => SourceKind::CratesIo,
            Some(s) if s.starts_with("path+") => SourceKind::Local,
            Some(s) if s.starts_with("git+") => {
                let (url, commit) = match s.split_once('#') {
                    Some((u, c)) => (u.to_string(), Some(c.to_string())),
                    None => (s.to_string(), None),
                };
                SourceKind::Git { url, commit }
            }
            Some(s) => SourceKind::Registry(s.to_string()),
        }
    }

    /// The identity used to match one package across two lockfiles: the source without the
    /// part that changes on an update (a git commit).
    pub fn source_identity(&self) -> String {
        match self.source_kind() {
            SourceKind::CratesIo => "crates-io".to_string(),
            SourceKind::Registry(url) => url,
            SourceKind::Git { url, .. } => url,
            SourceKind::Local => "local".to_string(),
        }
    }

    /// A short human label for the source.
    pub fn source_label(&self) -> String {
        match self.source_kind() {
            SourceKind::CratesIo => "crates.io".to_string(),
            SourceKind::Registry(url) => url,
            SourceKind::Git { url, commit } => match commit {
                Some(c) => format!("{url}#{}", c.chars().take(12).collect::<String>()),
                None => url,
            },
            SourceKind::Local => "local path".to_string(),
        }
    }

    pub fn is_registry(&self) -> bool {
        matches!(self.source_kind(), SourceKind::CratesIo | SourceKind::Registry(_))
    }
}

/// A malformed lockfile: every problem found, each at its line and column.
#[derive(Debug, thiserror::Error)]
pub struct LockError {
    /// The name the file is known by in messages (a path, or `REV:path`).
    pub origin: String,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone)]
pub struct Problem {
    /// 1-based line and column; `None` when the problem has no single place.
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed lockfile {}", self.origin)?;
        for p in &self.problems {
            match p.at {
                Some((line, col)) => write!(f, "\n  {}:{line}:{col}: {}", self.origin, p.message)?,
                None => write!(f, "\n  {}: {}", self.origin, p.message)?,
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct RawLock {
    version: Option<Spanned<toml::Value>>,
    #[serde(default)]
    package: Vec<Spanned<RawPackage>>,
}

#[derive(Deserialize)]
struct RawPackage {
    name: Option<Spanned<String>>,
    version: Option<Spanned<String>>,
    source: Option<Spanned<String>>,
    checksum: Option<Spanned<String>>,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, col)
}

/// Byte offsets of line starts, for line numbers in linear time over a whole file.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut v = vec![0];
        v.extend(text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i + 1));
        Lines(v)
    }
    fn at(&self, text: &str, span: Range<usize>) -> Option<(usize, usize)> {
        let offset = span.start.min(text.len());
        let line = self.0.partition_point(|&start| start <= offset);
        let start = self.0[line - 1];
        Some((line, text[start..offset].chars().count() + 1))
    }
}

fn at(text: &str, span: Range<usize>) -> Option<(usize, usize)> {
    Some(line_col(text, span.start))
}

/// Parse a Cargo.lock. `origin` names the file in messages.
pub fn parse_lockfile(text: &str, origin: &str) -> Result<Lockfile, LockError> {
    let fail = |problems: Vec<Problem>| LockError { origin: origin.to_string(), problems };
    let raw: RawLock = match toml::from_str(text) {
        Ok(raw) => raw,
        Err(e) => {
            let place = e.span().and_then(|s| at(text, s));
            let message = e.message().trim().to_string();
            return Err(fail(vec![Problem { at: place, message }]));
        }
    };
    let mut problems = Vec::new();
    let version = match &raw.version {
        None => 1,
        Some(v) => match v.get_ref().as_integer() {
            Some(n @ 1..=4) => n as u32,
            _ => {
                problems.push(Problem {
                    at: at(text, v.span()),
                    message: format!("unsupported lockfile version {}, expected 1 to 4", clip(&v.get_ref().to_string())),
                });
                0
            }
        },
    };
    let lines = Lines::new(text);
    let at = |text: &str, span: Range<usize>| lines.at(text, span);
    let mut seen = std::collections::HashMap::new();
    for pkg in &raw.package {
        let here = at(text, pkg.span());
        let p = pkg.get_ref();
        let Some(name) = &p.name else {
            problems.push(Problem { at: here, message: "package entry has no `name`".into() });
            continue;
        };
        let Some(ver) = &p.version else {
            problems.push(Problem {
                at: here,
                message: format!("package {:?} has no `version`", clip(name.get_ref())),
            });
            continue;
        };
        if let Err(e) = semver::Version::parse(ver.get_ref()) {
            problems.push(Problem {
                at: at(text, ver.span()),
                message: format!("package {:?}: invalid version {:?}: {e}", clip(name.get_ref()), clip(ver.get_ref())),
            });
        }
        if let Some(src) = &p.source {
            let s = src.get_ref();
            if !["registry+", "sparse+", "git+", "path+"].iter().any(|k| s.starts_with(k)) {
                problems.push(Problem {
                    at: at(text, src.span()),
                    message: format!("package {:?}: unknown source kind {:?}", clip(name.get_ref()), clip(s)),
                });
            }
        }
        if let Some(sum) = &p.checksum {
            let s = sum.get_ref();
            if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                problems.push(Problem {
                    at: at(text, sum.span()),
                    message: format!("package {:?}: checksum is not a sha256 hex digest", clip(name.get_ref())),
                });
            }
        }
        let key = (name.get_ref().clone(), ver.get_ref().clone(), p.source.as_ref().map(|s| s.get_ref().clone()));
        if let Some(first) = seen.insert(key, here) {
            let (l, _) = first.unwrap_or((0, 0));
            problems.push(Problem {
                at: here,
                message: format!(
                    "package {:?} {} is locked twice (first at line {l})",
                    clip(name.get_ref()),
                    clip(ver.get_ref())
                ),
            });
        }
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    let model = cargo_lock::Lockfile::from_str(text)
        .map_err(|e| fail(vec![Problem { at: None, message: e.to_string() }]))?;
    // Source strings are taken as written (cargo-lock's rendering drops a git commit); the
    // model contributes the checksums a v1 lockfile keeps in `[metadata]`.
    let v1_sums: std::collections::HashMap<(String, String), String> = model
        .packages
        .iter()
        .filter_map(|p| {
            let sum = p.checksum.as_ref()?.to_string().to_ascii_lowercase();
            Some(((p.name.as_str().to_string(), p.version.to_string()), sum))
        })
        .collect();
    let packages = raw
        .package
        .into_iter()
        .map(|p| {
            let p = p.into_inner();
            let name = p.name.map(Spanned::into_inner).unwrap_or_default();
            let version_text = p.version.map(Spanned::into_inner).unwrap_or_default();
            let checksum = p
                .checksum
                .map(|c| c.into_inner().to_ascii_lowercase())
                .or_else(|| v1_sums.get(&(name.clone(), version_text.clone())).cloned());
            LockedPackage {
                version: semver::Version::parse(&version_text).expect("validated above"),
                name,
                source: p.source.map(Spanned::into_inner),
                checksum,
            }
        })
        .collect();
    Ok(Lockfile { version, packages })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V3: &str = r#"version = 3

[[package]]
name = "a"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "0000000000000000000000000000000000000000000000000000000000000001"

[[package]]
name = "app"
version = "0.1.0"
dependencies = ["a"]
"#;

    #[test]
    fn parses_v3() {
        let l = parse_lockfile(V3, "Cargo.lock").unwrap();
        assert_eq!(l.version, 3);
        assert_eq!(l.packages.len(), 2);
        let a = &l.packages[0];
        assert_eq!(a.source_kind(), SourceKind::CratesIo);
        assert_eq!(a.checksum.as_deref().unwrap().len(), 64);
        assert_eq!(l.packages[1].source_kind(), SourceKind::Local);
    }

    #[test]
    fn syntax_error_points_at_line() {
        let bad = V3.replace("name = \"app\"", "name = \"app");
        let e = parse_lockfile(&bad, "Cargo.lock").unwrap_err();
        assert_eq!(e.problems.len(), 1);
        assert_eq!(e.problems[0].at.unwrap().0, 10, "{e}");
    }

    #[test]
    fn every_bad_entry_is_reported_with_its_line() {
        let bad = V3
            .replace("version = \"1.0.0\"", "version = \"1.x\"")
            .replace("0000000000000000000000000000000000000000000000000000000000000001", "xyz");
        let e = parse_lockfile(&bad, "Cargo.lock").unwrap_err();
        let lines: Vec<usize> = e.problems.iter().map(|p| p.at.unwrap().0).collect();
        assert_eq!(lines, vec![5, 7], "{e}");
        let text = e.to_string();
        assert!(text.contains("Cargo.lock:5:11: package \"a\": invalid version"), "{text}");
    }

    #[test]
    fn duplicate_entry_is_an_error() {
        let dup = format!("{V3}\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n");
        let e = parse_lockfile(&dup, "L").unwrap_err();
        assert!(e.to_string().contains("locked twice (first at line 9)"), "{e}");
    }

    #[test]
    fn unsupported_version() {
        let e = parse_lockfile("version = 9\n", "L").unwrap_err();
        assert_eq!(e.problems[0].at, Some((1, 11)));
    }

    #[test]
    fn git_identity_ignores_commit() {
        let p = LockedPackage {
            name: "g".into(),
            version: "1.0.0".parse().unwrap(),
            source: Some("git+https://example.com/g?branch=main#abc123".into()),
            checksum: None,
        };
        assert_eq!(p.source_identity(), "git+https://example.com/g?branch=main");
        assert!(!p.is_registry());
    }

    #[test]
    fn line_col_math() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
