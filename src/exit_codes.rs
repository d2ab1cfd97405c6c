//! The process exit codes: public API, documented in docs/cli.md.
//!
//! Every failure the library reports is classified here, in one place, by looking through the
//! error's chain for the typed errors that mean "integrity".

/// The report was produced (or the ratchet holds).
pub const OK: i32 = 0;
/// Grants widened: a gate failed.
pub const WIDENED: i32 = 1;
/// Usage, configuration or input error.
pub const USAGE: i32 = 2;
/// Integrity failure: a digest mismatch or an archive that breaks the unpacking rules.
pub const INTEGRITY: i32 = 3;

/// The exit code for a failure: integrity errors anywhere in the chain are [`INTEGRITY`],
/// everything else is [`USAGE`].
pub fn for_error(e: &anyhow::Error) -> i32 {
    for cause in e.chain() {
        if let Some(d) = cause.downcast_ref::<crate::depsdiff::DepsDiffError>() {
            if d.is_integrity() {
                return INTEGRITY;
            }
        }
        if let Some(b) = cause.downcast_ref::<crate::registry::BatchError>() {
            if b.is_integrity() {
                return INTEGRITY;
            }
        }
        if let Some(f) = cause.downcast_ref::<crate::registry::FetchError>() {
            if f.is_integrity() {
                return INTEGRITY;
            }
        }
        if let Some(s) = cause.downcast_ref::<crate::surface::engine::SurfaceError>() {
            if s.is_integrity() {
                return INTEGRITY;
            }
        }
        if cause.downcast_ref::<crate::package::ArchiveError>().is_some() {
            return INTEGRITY;
        }
    }
    USAGE
}
