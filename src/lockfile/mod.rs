//! Cargo.lock loading and lockfile diffs.
//!
//! This module owns reading a `Cargo.lock` (formats v1 to v4, through `cargo-lock`), reporting a
//! malformed one with the line and column of the problem, and comparing two of them: which
//! packages were added, removed, upgraded, downgraded or moved to another source, and how large
//! each version change is in semver terms. It does no IO beyond what its caller hands it (text
//! and a name for messages) and knows nothing of registries or package contents.

mod diff;
mod load;

pub use diff::{Change, ChangeKind, SemverBump, diff_lockfiles};
pub use load::{LockError, LockedPackage, Lockfile, SourceKind, parse_lockfile};
