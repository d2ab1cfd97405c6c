//! A package's sparse index entry: what the registry says about a version beyond its bytes:
//! whether it is yanked, and when it was published (`pubtime`, which crates.io records for
//! versions published since 2025).
//!
//! The index is the effective registry's after source replacement, as for downloads. Nothing
//! here is trusted for integrity: the `.crate` bytes are checked against Cargo.lock, not
//! against the index.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::source::Resolved;
use super::{FetchError, Fetcher, PackageRef, net};

/// Largest index entry read (the biggest crates.io entries are a few MiB).
const INDEX_ENTRY_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The path of a crate's entry under a sparse index, as cargo computes it.
pub(crate) fn entry_path(name: &str) -> String {
    let n = name.to_ascii_lowercase();
    match n.len() {
        1 => format!("1/{n}"),
        2 => format!("2/{n}"),
        3 => format!("3/{}/{n}", &n[..1]),
        _ => format!("{}/{}/{n}", &n[..2], &n[2..4]),
    }
}

/// What the index says of one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexStatus {
    Yanked,
    Published,
    /// The entry has no such version.
    NotListed,
}

/// What the index says of one version: its status, and when it was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub status: IndexStatus,
    /// `pubtime` as the index writes it (RFC 3339), when it records one; `None` for a version
    /// it does not list.
    pub pubtime: Option<String>,
}

impl Fetcher {
    /// The index's word on `pkg`'s version; `Ok(None)` when it cannot be asked (offline, a
    /// local registry, a registry that cannot be downloaded from) or the index has no entry.
    pub fn index_status(&self, pkg: &PackageRef) -> Result<Option<IndexStatus>, FetchError> {
        Ok(self.index_entry(pkg)?.map(|e| e.status))
    }

    /// [`Self::index_status`] with the version's publication time.
    pub fn index_entry(&self, pkg: &PackageRef) -> Result<Option<IndexEntry>, FetchError> {
        if self.opts.offline || self.opts.refusal(&pkg.source).is_some() {
            return Ok(None);
        }
        let resolved = self.sources()?.resolve(&pkg.name, &pkg.version, &pkg.source)?;
        let Resolved::Registry { download: Ok(index), .. } = resolved else {
            return Ok(None);
        };
        let url = format!("{}{}", index.base, entry_path(&pkg.name));
        let body = match self.net.get(&url, INDEX_ENTRY_MAX_BYTES) {
            Ok(b) => b,
            Err(net::HttpFailure::NotFound { .. }) => return Ok(None),
            Err(failure) => {
                return Err(FetchError::Http { status: failure.status(), message: failure.message(), url });
            }
        };
        #[derive(serde::Deserialize)]
        struct Line {
            vers: String,
            #[serde(default)]
            yanked: bool,
            #[serde(default)]
            pubtime: Option<String>,
        }
        for line in body.split(|&b| b == b'\n') {
            let Ok(l) = serde_json::from_slice::<Line>(line) else { continue };
            if l.vers == pkg.version {
                let status = if l.yanked { IndexStatus::Yanked } else { IndexStatus::Published };
                return Ok(Some(IndexEntry { status, pubtime: l.pubtime }));
            }
        }
        Ok(Some(IndexEntry { status: IndexStatus::NotListed, pubtime: None }))
    }

    /// [`Self::index_entry`] for every package, `jobs` at a time; results in input order.
    pub fn index_entry_all(&self, pkgs: &[PackageRef]) -> Vec<Result<Option<IndexEntry>, FetchError>> {
        type Slot = Mutex<Option<Result<Option<IndexEntry>, FetchError>>>;
        let slots: Vec<Slot> = pkgs.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let workers = self.opts.jobs.max(1).min(pkgs.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(pkg) = pkgs.get(i) else { break };
                        let r = self.index_entry(pkg);
                        *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()).expect("every package was asked"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_paths_follow_cargo() {
        assert_eq!(super::entry_path("a"), "1/a");
        assert_eq!(super::entry_path("ab"), "2/ab");
        assert_eq!(super::entry_path("abc"), "3/a/abc");
        assert_eq!(super::entry_path("Serde"), "se/rd/serde");
    }
}
