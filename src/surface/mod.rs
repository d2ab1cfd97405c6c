//! The capability surface: what every program of a workspace can do, from source alone.
//!
//! - [`model`]: the data (capabilities, findings, per-program and per-crate surfaces).
//! - [`rules`]: the table mapping std, core, alloc and libc items to capabilities
//!   (data/rules.toml, compiled in) and the user overlay.
//! - [`cfg`]: target and feature cfg evaluation.
//! - [`syntax`]: what the analysis and the build-script evaluator share: the `macro_rules!`
//!   engine, package-relative paths, std macro names.
//! - [`analyze`]: one crate's findings, from its source tree.
//! - [`buildscript`]: what a package's build script prints and writes, evaluated from its
//!   source without running it.
//! - [`guard`]: what source may be parsed (nesting depth, size) and the large-stack threads
//!   analysis runs on.
//! - [`engine`]: the whole run, from a workspace on disk to its [`Surface`]; `cache` keeps
//!   its per-unit results, each entry tagged and checked on read.
//! - [`render`]: human, JSON and `explain` output.
//!
//! Architecture invariant: nothing here builds or runs the code it reads, and cargo is never
//! invoked.

pub mod analyze;
pub mod buildscript;
mod cache;
pub mod callgraph;
#[cfg(test)]
mod coverage_props;
pub mod cfg;
pub mod engine;
pub mod guard;
pub mod model;
pub mod render;
pub mod rules;
pub(crate) mod syntax;

pub use model::{CallStats, Capability, CrateSurface, Finding, Hop, ProgramKind, ProgramSurface, Reached, Scope, Surface, Unloaded, UnloadedReason};
