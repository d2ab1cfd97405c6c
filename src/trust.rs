//! A workspace analysed as untrusted data: what velaris still takes from it, and what it takes
//! from a trusted place instead.
//!
//! velaris never builds or runs what it reads, so reading a hostile workspace is safe in
//! itself. Its configuration is another matter: `.cargo/config.toml` says where packages are
//! downloaded from (a `[source]` replacement pointing at an attacker's server), and the rules
//! overlay `velaris-rules.toml` can mark any API safe. When the workspace comes from someone the
//! run must not trust (the GitHub Action's `workflow_run` side, which analyses a fork's pull
//! request with a token that can write), a [`Confinement`] replaces both: cargo configuration is
//! read as from a trusted directory (the base's checkout), the overlay is the base's, and only
//! the package sources the base already uses are fetched from. Every other source is refused
//! before any request is made; what cannot be fetched is reported, never taken as clean.
//!
//! The confinement travels in [`crate::registry::FetchOptions`], which every pipeline that
//! fetches already carries; the registry, the git dependency fetcher and the surface engine
//! consult it.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// crates.io under its two protocols: one source.
const CRATES_IO: &[&str] = &["registry+https://github.com/rust-lang/crates.io-index", "sparse+https://index.crates.io/"];

/// What an untrusted workspace is analysed with instead of its own configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Lockfile sources that may be fetched, by [`source_key`]: crates.io, and those added
    /// with [`Confinement::allow`].
    sources: BTreeSet<String>,
    /// Cargo configuration is read as cargo would read it in this directory (and its parents,
    /// then `CARGO_HOME`), never in the analysed workspace.
    pub cargo_config_dir: PathBuf,
    /// The rules overlay in force instead of the workspace's `velaris-rules.toml`: the
    /// trusted side's text, or `None` for the built-in rules alone.
    pub rules_overlay: Option<String>,
}

/// A lockfile `source` without what does not name the place it comes from: the `?branch=..`
/// and `#commit` of a git source (the repository is the place), a trailing `/`; crates.io's two
/// spellings are one.
pub fn source_key(source: &str) -> String {
    let mut s = source.split('#').next().unwrap_or(source);
    if s.starts_with("git+") {
        s = s.split('?').next().unwrap_or(s);
    }
    let s = s.trim_end_matches('/');
    if CRATES_IO.iter().any(|c| c.trim_end_matches('/') == s) {
        return "crates.io".to_string();
    }
    s.to_string()
}

impl Confinement {
    pub fn new(cargo_config_dir: PathBuf, rules_overlay: Option<String>) -> Confinement {
        Confinement { sources: BTreeSet::from(["crates.io".to_string()]), cargo_config_dir, rules_overlay }
    }

    /// Let packages of `source` (a lockfile `source`, a git one with or without its commit)
    /// be fetched.
    pub fn allow(&mut self, source: &str) {
        self.sources.insert(source_key(source));
    }

    pub fn allows(&self, source: &str) -> bool {
        self.sources.contains(&source_key(source))
    }

    /// Why a package of `source` is not fetched, or `None` when it may be.
    pub fn refusal(&self, source: &str) -> Option<String> {
        if self.allows(source) {
            return None;
        }
        Some(format!(
            "its source {} is not one the base revision uses; packages of the analysed change are fetched only from those",
            crate::message::clip_to(&crate::message::redact_url(source), 200)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_compared_by_place() {
        let mut c = Confinement::new(PathBuf::from("/base"), None);
        assert!(c.allows("registry+https://github.com/rust-lang/crates.io-index"));
        assert!(c.allows("sparse+https://index.crates.io/"));
        assert!(!c.allows("sparse+https://evil.example/index/"));
        assert!(!c.allows("git+https://github.com/o/dep?branch=main#0123"));
        c.allow("git+https://github.com/o/dep?branch=main#0123");
        assert!(c.allows("git+https://github.com/o/dep?branch=main#4567"), "another commit of the same repository");
        assert!(c.allows("git+https://github.com/o/dep?branch=other#4567"), "the repository is the place");
        assert!(!c.allows("git+https://github.com/o/dep2#4567"));
        c.allow("sparse+https://mirror.example/index/");
        assert!(c.allows("sparse+https://mirror.example/index"));
        let why = c.refusal("sparse+https://user:secret@evil.example/index/").unwrap();
        assert!(!why.contains("secret"), "{why}");
    }
}
