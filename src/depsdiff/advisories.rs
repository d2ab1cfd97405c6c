//! RustSec advisories for the versions a lockfile change locks.
//!
//! The database is a local copy of the RustSec advisory database (`--advisory-db DIR`: a git
//! checkout or the unpacked published archive), laid out as `crates/<name>/RUSTSEC-*.md`.
//! Each file is read through [`crate::fsio`] (regular files only, capped) and parsed by the
//! `rustsec` crate, which also decides whether a version is affected (`patched` and
//! `unaffected` ranges); withdrawn advisories are left out. The database's commit is read with
//! git when the directory is the top of a git checkout. Nothing is fetched here.
//!
//! Advisories apply to crates.io packages (the database's scope); a package from another
//! registry or git is not matched by name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::lockfile::{LockedPackage, SourceKind};

/// Bytes read per advisory file at most (real ones are a few KiB).
const ADVISORY_CAP: u64 = 256 * 1024;
/// Advisory files read at most (the database holds about 1,200 crate advisories today).
const MAX_ADVISORIES: usize = 50_000;

#[derive(Debug, thiserror::Error)]
pub enum AdvisoryError {
    #[error("advisory database {path}: {message}")]
    Layout { path: String, message: String },
    #[error(transparent)]
    File(#[from] crate::fsio::FileError),
    #[error("advisory database {path}: failed to read {file}: {message}")]
    Parse { path: String, file: String, message: String },
}

/// One advisory as the review shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvisoryRef {
    pub id: String,
    pub package: String,
    pub title: String,
    /// `vulnerability`, or the informational kind (`unsound`, `unmaintained`, `notice`, ...).
    pub kind: String,
    /// CVSS severity (`low` .. `critical`) when the advisory has a score.
    pub severity: Option<String>,
    pub url: Option<String>,
    /// The `patched` ranges, as written.
    pub patched: Vec<String>,
    pub aliases: Vec<String>,
}

impl AdvisoryRef {
    pub fn is_vulnerability(&self) -> bool {
        self.kind == "vulnerability"
    }
}

/// The loaded database.
pub struct AdvisoryDb {
    /// The directory as given.
    pub path: String,
    /// The commit of the checkout, when it is one.
    pub commit: Option<String>,
    /// Advisories loaded (withdrawn ones excluded).
    pub count: usize,
    by_name: BTreeMap<String, Vec<rustsec::Advisory>>,
}

/// What the database says of one change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageAdvisories {
    /// Affecting the version the change locks (new side; for a removed package, none).
    pub affecting: Vec<AdvisoryRef>,
    /// Of those, the ones the old version was not affected by: this change brings them.
    pub introduced: Vec<String>,
    /// Affecting the old version and not the new one: this change fixes them.
    pub fixed: Vec<AdvisoryRef>,
}

impl AdvisoryDb {
    /// Load `dir`: every `crates/*/*.md` file.
    pub fn load(dir: &Path) -> Result<AdvisoryDb, AdvisoryError> {
        let path = dir.display().to_string();
        let layout = |message: String| AdvisoryError::Layout { path: path.clone(), message };
        let crates = dir.join("crates");
        let read_dir = |d: &Path| -> Result<Vec<std::fs::DirEntry>, AdvisoryError> {
            let mut v: Vec<std::fs::DirEntry> = std::fs::read_dir(d)
                .map_err(|e| layout(format!("cannot list {}: {e}", d.display())))?
                .filter_map(Result::ok)
                .collect();
            v.sort_by_key(|e| e.file_name());
            Ok(v)
        };
        if !crates.is_dir() {
            return Err(layout("no crates/ directory: not a RustSec advisory database (a checkout of rustsec/advisory-db)".into()));
        }
        let mut by_name: BTreeMap<String, Vec<rustsec::Advisory>> = BTreeMap::new();
        let mut count = 0usize;
        let mut files = 0usize;
        for krate in read_dir(&crates)? {
            if !krate.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            for f in read_dir(&krate.path())? {
                let name = f.file_name().to_string_lossy().into_owned();
                if !name.starts_with("RUSTSEC-") || !name.ends_with(".md") || name.starts_with("RUSTSEC-0000-0000") {
                    continue;
                }
                files += 1;
                if files > MAX_ADVISORIES {
                    return Err(layout(format!("more than {MAX_ADVISORIES} advisory files")));
                }
                let text = crate::fsio::read_text(&f.path(), ADVISORY_CAP, "an advisory")?;
                let adv: rustsec::Advisory = text.parse().map_err(|e: rustsec::Error| AdvisoryError::Parse {
                    path: path.clone(),
                    file: format!("crates/{}/{name}", krate.file_name().to_string_lossy()),
                    message: e.to_string().lines().next().unwrap_or_default().to_string(),
                })?;
                if adv.withdrawn() {
                    continue;
                }
                count += 1;
                by_name.entry(adv.metadata.package.to_string()).or_default().push(adv);
            }
        }
        let commit = crate::git::Repo::discover(dir)
            .ok()
            .filter(|r| r.root().canonicalize().ok() == dir.canonicalize().ok())
            .and_then(|r| r.resolve("HEAD").ok());
        Ok(AdvisoryDb { path, commit, count, by_name })
    }

    /// The advisories affecting one locked package.
    pub fn affecting(&self, p: &LockedPackage) -> Vec<AdvisoryRef> {
        if p.source_kind() != SourceKind::CratesIo {
            return Vec::new();
        }
        let Some(list) = self.by_name.get(&p.name) else { return Vec::new() };
        let mut out: Vec<AdvisoryRef> = list
            .iter()
            .filter(|a| a.versions.is_vulnerable(&p.version))
            .map(|a| AdvisoryRef {
                id: a.id().to_string(),
                package: p.name.clone(),
                title: a.title().to_string(),
                kind: match &a.metadata.informational {
                    None => "vulnerability".to_string(),
                    Some(i) => i.as_str().to_string(),
                },
                severity: a.severity().map(|s| s.as_str().to_string()),
                url: a.metadata.url.as_ref().map(|u| u.to_string()),
                patched: a.versions.patched().iter().map(|r| r.to_string()).collect(),
                aliases: a.metadata.aliases.iter().map(|x| x.to_string()).collect(),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// What the database says of a change from `old` to `new`.
    pub fn for_change(&self, old: Option<&LockedPackage>, new: Option<&LockedPackage>) -> PackageAdvisories {
        let before = old.map(|o| self.affecting(o)).unwrap_or_default();
        let after = new.map(|n| self.affecting(n)).unwrap_or_default();
        let introduced = after.iter().filter(|a| old.is_some() && !before.iter().any(|b| b.id == a.id)).map(|a| a.id.clone()).collect();
        let fixed = if new.is_some() { before.into_iter().filter(|b| !after.iter().any(|a| a.id == b.id)).collect() } else { Vec::new() };
        PackageAdvisories { affecting: after, introduced, fixed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, v: &str) -> LockedPackage {
        LockedPackage {
            name: name.into(),
            version: semver::Version::parse(v).unwrap(),
            source: Some("registry+https://github.com/rust-lang/crates.io-index".into()),
            checksum: None,
        }
    }

    #[test]
    fn the_fixture_database_matches_versions() {
        let db = AdvisoryDb::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/advisory-db"))).unwrap();
        assert!(db.count >= 3, "{}", db.count);
        // A downgrade into RUSTSEC-2025-0023: introduced by the change.
        let a = db.for_change(Some(&pkg("tokio", "1.44.2")), Some(&pkg("tokio", "1.40.0")));
        assert_eq!(a.affecting.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["RUSTSEC-2025-0023"]);
        assert_eq!(a.introduced, ["RUSTSEC-2025-0023"]);
        assert_eq!(a.affecting[0].kind, "unsound");
        // The upgrade back fixes it.
        let a = db.for_change(Some(&pkg("tokio", "1.40.0")), Some(&pkg("tokio", "1.44.2")));
        assert!(a.affecting.is_empty());
        assert_eq!(a.fixed.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["RUSTSEC-2025-0023"]);
        // Another registry's package of the same name is not matched.
        let mut other = pkg("tokio", "1.40.0");
        other.source = Some("sparse+https://mirror.example/index/".into());
        assert!(db.affecting(&other).is_empty());
        // A withdrawn advisory never applies.
        assert!(db.affecting(&pkg("withdrawn-example", "0.1.0")).is_empty());
    }

    #[test]
    fn a_directory_that_is_not_a_database_is_refused() {
        let e = AdvisoryDb::load(Path::new(env!("CARGO_MANIFEST_DIR"))).err().unwrap();
        assert!(e.to_string().contains("no crates/ directory"), "{e}");
    }
}
