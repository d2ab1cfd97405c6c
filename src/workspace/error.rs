//! What can go wrong loading a workspace or resolving its graph.

use std::path::PathBuf;

use crate::lockfile::LockError;

fn no_manifest_message(start: &std::path::Path, explicit: bool) -> String {
    if explicit {
        format!(
            "no Cargo.toml in {}: --workspace names the directory that holds the workspace's root Cargo.toml and Cargo.lock",
            start.display()
        )
    } else {
        format!(
            "no Cargo.toml in {} or any directory above it: run velaris inside a Cargo workspace, or name one with --workspace DIR",
            start.display()
        )
    }
}

/// A workspace that cannot be loaded or resolved. Every message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot read {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    File(#[from] crate::fsio::FileError),
    /// A manifest that is not valid TOML; `at` is the 1-based line and column.
    #[error("{}: invalid toml: {message}", place(.origin, *.at))]
    Toml {
        origin: String,
        at: Option<(usize, usize)>,
        message: String,
    },
    /// A manifest that is valid TOML but not a valid Cargo manifest.
    #[error("{origin}: {message}")]
    Manifest { origin: String, message: String },
    #[error(
        "no lockfile at {}: velaris reads Cargo.lock and never runs cargo; create it with `cargo generate-lockfile` in {} and retry",
        .path.display(),
        .root.display()
    )]
    MissingLockfile { path: PathBuf, root: PathBuf },
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A lockfile that parses but does not hold together.
    #[error("malformed lockfile {}: {message}", .path.display())]
    BadLock { path: PathBuf, message: String },
    /// The lockfile does not lock something the manifests require.
    #[error(
        "{}: lockfile is out of date: {message}; update it with `cargo generate-lockfile` (or `cargo update`) and retry",
        .path.display()
    )]
    StaleLock { path: PathBuf, message: String },
    /// No `Cargo.toml` where velaris looked for a workspace.
    #[error("{}", no_manifest_message(.start, *.explicit))]
    NoManifest { start: PathBuf, explicit: bool },
    #[error("{origin}: invalid workspace member pattern {pattern:?}: {message}")]
    Glob {
        origin: String,
        pattern: String,
        message: String,
    },
}

fn place(origin: &str, at: Option<(usize, usize)>) -> String {
    match at {
        Some((line, col)) => format!("{origin}:{line}:{col}"),
        None => origin.to_string(),
    }
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let col = before.rfind('\n').map_or(before.chars().count(), |nl| {
        before[nl + 1..].chars().count()
    }) + 1;
    (line, col)
}

/// Parse TOML text into a table, reporting syntax errors at their line and column.
pub(crate) fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, WorkspaceError> {
    toml::from_str::<toml::Table>(text).map_err(|e| WorkspaceError::Toml {
        origin: origin.to_string(),
        at: e.span().map(|s| line_col(text, s.start)),
        message: e.message().trim().to_string(),
    })
}
