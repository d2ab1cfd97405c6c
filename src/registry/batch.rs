//! Fetching a whole set of packages at once, with every failure reported, grouped by kind.

use super::{FetchError, Fetched, Fetcher, PackageRef};

/// Why a batch could not be fetched: every failing package, grouped. Digest mismatches win over
/// everything else, and missing-while-offline over other failures.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{}", list("integrity check failed", .0))]
    Integrity(Vec<FetchError>),
    #[error("{}", list("offline, and these packages are in no cache", .0))]
    Offline(Vec<FetchError>),
    #[error("{}", list("could not fetch packages", .0))]
    Fetch(Vec<FetchError>),
}

/// One line per failure, each with its causes. A failure shared by several packages (cargo
/// configuration that cannot be read, a registry's `config.json`) is said once, with how many
/// packages it stopped.
fn list(head: &str, errors: &[FetchError]) -> String {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for e in errors {
        let text = crate::message::chain(e);
        match lines.iter_mut().find(|(t, _)| *t == text) {
            Some((_, n)) => *n += 1,
            None => lines.push((text, 1)),
        }
    }
    let mut s = format!("{head} ({}):", errors.len());
    for (text, n) in lines {
        s.push_str("\n  ");
        s.push_str(&text);
        if n > 1 {
            s.push_str(&format!(" (for {n} packages)"));
        }
    }
    s
}

impl BatchError {
    pub fn is_integrity(&self) -> bool {
        matches!(self, BatchError::Integrity(_))
    }
}

impl Fetcher {
    /// Every package's verified bytes, in input order, or every failure.
    pub fn fetch_verified(&self, refs: &[PackageRef]) -> Result<Vec<Fetched>, BatchError> {
        let (mut integrity, mut offline, mut other) = (Vec::new(), Vec::new(), Vec::new());
        let mut out = Vec::with_capacity(refs.len());
        for res in self.fetch_all(refs) {
            match res {
                Ok(f) => out.push(f),
                Err(e) if e.is_integrity() => integrity.push(e),
                Err(e @ FetchError::Offline { .. }) => offline.push(e),
                Err(e) => other.push(e),
            }
        }
        if !integrity.is_empty() {
            return Err(BatchError::Integrity(integrity));
        }
        if !offline.is_empty() {
            return Err(BatchError::Offline(offline));
        }
        if !other.is_empty() {
            return Err(BatchError::Fetch(other));
        }
        Ok(out)
    }
}
