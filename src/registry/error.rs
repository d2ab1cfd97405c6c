//! The error type of [`crate::registry`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a `.crate` file's bytes came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// cargo's own download cache (`$CARGO_HOME/registry/cache/<index-dir>/NAME-VERSION.crate`).
    CargoCache(PathBuf),
    /// velaris' content-addressed cache (`<cache-dir>/crates/sha256/xx/<digest>.crate`).
    VelarisCache(PathBuf),
    /// A `local-registry` source (`<dir>/NAME-VERSION.crate`) that cargo config points at.
    LocalRegistry(PathBuf),
    /// Downloaded from this URL.
    Network(String),
}

impl Origin {
    /// A short stable label: `cargo-cache`, `velaris-cache`, `local-registry` or `network`.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::CargoCache(_) => "cargo-cache",
            Origin::VelarisCache(_) => "velaris-cache",
            Origin::LocalRegistry(_) => "local-registry",
            Origin::Network(_) => "network",
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::CargoCache(p) => write!(f, "cargo cache file {}", p.display()),
            Origin::VelarisCache(p) => write!(f, "velaris cache file {}", p.display()),
            Origin::LocalRegistry(p) => write!(f, "local registry file {}", p.display()),
            Origin::Network(url) => write!(f, "{url}"),
        }
    }
}

/// Why a package's `.crate` could not be produced.
///
/// Cloneable so that a registry-level failure (its `config.json`) can be reported for every
/// package of that registry.
#[derive(thiserror::Error, Debug, Clone)]
#[non_exhaustive]
pub enum FetchError {
    /// The bytes do not hash to the Cargo.lock checksum. Never retried elsewhere.
    #[error(
        "integrity check failed for {name} {version}: Cargo.lock expects sha256 {expected}, \
         but the bytes from {origin} hash to {actual}{}",
        clear_hint(origin)
    )]
    Integrity {
        name: String,
        version: String,
        expected: String,
        actual: String,
        /// Boxed to keep `FetchError` small (clippy's `result_large_err`).
        origin: Box<Origin>,
    },
    /// Offline mode and the package is in no local cache.
    #[error("{name} {version} is not in any local cache and the network is disabled (offline)")]
    Offline { name: String, version: String },
    /// The registry answered 404 for the package's download URL.
    #[error("{name} {version} not found in registry: {url} answered 404 Not Found")]
    NotFound {
        name: String,
        version: String,
        url: String,
    },
    /// A download that failed (status, transport, stall, deadline, too slow), after the
    /// retries were used up.
    #[error("cannot download {name} {version} from {url}: {message}")]
    Download {
        name: String,
        version: String,
        url: String,
        status: Option<u16>,
        message: String,
    },
    /// Any other HTTP failure (a registry's `config.json`), after the retries were used up.
    #[error("HTTP request to {url} failed: {message}")]
    Http {
        url: String,
        status: Option<u16>,
        message: String,
    },
    /// A body (or local file) larger than the configured cap.
    #[error("{what} is larger than the {limit}-byte limit")]
    TooLarge { what: String, limit: u64 },
    /// The package's source (after replacement) is something this module cannot fetch from.
    #[error("cannot fetch {name} {version} from `{source_id}`: {reason}")]
    UnsupportedSource {
        name: String,
        version: String,
        source_id: String,
        reason: String,
    },
    /// The package reference itself is unusable (no/invalid checksum, invalid name or version).
    #[error("invalid package {name} {version}: {reason}")]
    InvalidPackage {
        name: String,
        version: String,
        reason: String,
    },
    /// Cargo configuration could not be loaded or is inconsistent (e.g. a `replace-with` cycle).
    #[error("cargo configuration: {message}")]
    Config { message: String },
    /// A registry's `config.json` is unusable.
    #[error("registry {index}: {message}")]
    Registry { index: String, message: String },
    /// A filesystem error.
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A local file (a cache entry, a local registry's `.crate`) that could not be read.
    #[error(transparent)]
    File { source: Arc<crate::fsio::FileError> },
}

/// For a corrupted cache file: the one command that clears it.
fn clear_hint(origin: &Origin) -> String {
    match origin {
        Origin::CargoCache(p) | Origin::VelarisCache(p) => format!(
            "; the cache file is corrupted or was tampered with: remove it with `rm -- {}` and run again to fetch it anew",
            shell_quote(&p.display().to_string())
        ),
        _ => String::new(),
    }
}

/// `s` quoted for a POSIX shell.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl FetchError {
    /// `true` for a checksum mismatch: the caller must treat the package as tampered with.
    pub fn is_integrity(&self) -> bool {
        matches!(self, FetchError::Integrity { .. })
    }

    /// `true` when the package is missing only because the network is disabled.
    pub fn is_offline(&self) -> bool {
        matches!(self, FetchError::Offline { .. })
    }

    /// A file that could not be read (not a regular file, unreadable, not found).
    pub(crate) fn file(e: crate::fsio::FileError) -> Self {
        FetchError::File { source: Arc::new(e) }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        FetchError::Io {
            action,
            path: path.into(),
            source: Arc::new(source),
        }
    }
}
