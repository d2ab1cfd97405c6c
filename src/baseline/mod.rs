//! The capability baseline: `velaris.capabilities`, the reviewed grants that turn a capability
//! surface into a CI gate (a ratchet).
//!
//! - [`parse`] reads a baseline and reports every problem at once, each at its line and column.
//! - [`check`] compares a [`Surface`] with a baseline: what widened (fails the gate) and what
//!   narrowed (stale grants; `--strict` makes them fail, see [`CheckOutcome::stale`]).
//! - [`bless`] writes the baseline that grants exactly the current surface, keeping the
//!   reviewers' reasons and comments of every entry that remains; [`bless_with`] also pins the
//!   APIs of chosen crates (`bless --pin-apis`).
//! - [`fmt`] puts a valid baseline in canonical form, comments kept.
//! - [`write_atomic`] replaces the file on disk without ever leaving it half written.
//! - [`render`] shows a [`CheckOutcome`] for a terminal, as markdown or as JSON.
//! - [`additions`] lists the grants one baseline adds to another (what a change to the file
//!   asks reviewers to approve).
//!
//! The format is described in docs/baseline-format.md.
//!
//! Architecture invariant: no IO except in [`write_atomic`]; text in, text out.

mod check;
mod delta;
mod layout;
mod parse;
pub mod render;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use check::{CheckOutcome, Evidence, Narrowing, TargetMismatch, Widening, check};
pub use delta::{Addition, additions};
pub use layout::pinnable;
pub use write::write_atomic;

use crate::surface::{Capability, Surface};

/// The file name of the baseline, at the workspace root.
pub const FILE_NAME: &str = "velaris.capabilities";

/// The format version this velaris reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A place in the baseline file: 1-based line and column (the column counts characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// What a grant is for: a program (binary target, by name) or a crate (by name, all versions).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    Program(String),
    Crate(String),
}

impl Subject {
    /// `program` or `crate`: the table the subject lives in.
    pub fn kind(&self) -> &'static str {
        match self {
            Subject::Program(_) => "program",
            Subject::Crate(_) => "crate",
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Subject::Program(n) | Subject::Crate(n) => n,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.kind(), self.name())
    }
}

/// One `[program.NAME]` or `[crate.NAME]` entry.
///
/// Equality compares what is granted, not where the file says it: locations are ignored.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// Programs only: the package that defines the binary. Informational; not checked.
    pub package: Option<String>,
    pub capabilities: BTreeSet<Capability>,
    /// Why the entry is granted what it is, as a whole.
    pub reason: Option<String>,
    /// Why one capability is granted, per capability (each one is in `capabilities`).
    pub reasons: BTreeMap<Capability, String>,
    /// Where the entry's name is written.
    pub at: Location,
    /// Where each capability is written in the `capabilities` list.
    pub capability_at: BTreeMap<Capability, Location>,
    /// Crates only: the APIs the crate may use for a capability (`[crate.NAME.apis]`,
    /// `"fs.write" = ["std::fs::write"]`). A capability listed here is granted through those
    /// APIs only; a capability not listed, through any.
    pub apis: BTreeMap<Capability, BTreeSet<String>>,
    /// Where each capability's API list is written.
    pub apis_at: BTreeMap<Capability, Location>,
}

impl Grant {
    /// Whether `api` may be used for `cap`: granted, and pinned to a list that holds it (or not
    /// pinned at all).
    pub fn allows_api(&self, cap: Capability, api: &str) -> bool {
        self.capabilities.contains(&cap) && self.apis.get(&cap).is_none_or(|list| list.contains(api))
    }
}

impl PartialEq for Grant {
    fn eq(&self, other: &Self) -> bool {
        self.package == other.package
            && self.capabilities == other.capabilities
            && self.reason == other.reason
            && self.reasons == other.reasons
            && self.apis == other.apis
    }
}

impl Eq for Grant {}

/// A parsed baseline.
///
/// Equality compares what is granted, not where the file says it or what it is called: the
/// origin and every location are ignored.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The name the file is known by in messages.
    pub origin: String,
    /// The format version (always [`FORMAT_VERSION`] once parsed).
    pub version: u32,
    /// The target triple the grants were reviewed for; `None` when the file names none.
    pub target: Option<String>,
    pub programs: BTreeMap<String, Grant>,
    pub crates: BTreeMap<String, Grant>,
}

impl PartialEq for Baseline {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
            && self.target == other.target
            && self.programs == other.programs
            && self.crates == other.crates
    }
}

impl Eq for Baseline {}

impl Baseline {
    /// The grant of a subject, if the baseline has one.
    pub fn grant(&self, subject: &Subject) -> Option<&Grant> {
        match subject {
            Subject::Program(n) => self.programs.get(n),
            Subject::Crate(n) => self.crates.get(n),
        }
    }
}

/// One problem of a malformed baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

/// A malformed baseline: every problem found, sorted by place.
#[derive(Debug, Clone, thiserror::Error)]
pub struct BaselineError {
    /// The name the file is known by in messages.
    pub origin: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for BaselineError {
    /// One `origin:line:col: message` line per problem.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}:{}:{}: {}", self.origin, p.line, p.column, p.message)?;
        }
        Ok(())
    }
}

/// Parse a baseline. `origin` names the file in messages. Every problem is reported, each at
/// its line and column: TOML syntax (the first syntax error only, since what follows it cannot
/// be read reliably), duplicate tables and keys, unknown keys, wrong types, unknown or repeated
/// capabilities, reasons for capabilities not granted, a missing or unsupported `version`.
pub fn parse(text: &str, origin: &str) -> Result<Baseline, BaselineError> {
    parse::parse(text, origin)
}

/// The baseline text that grants exactly `surface`.
///
/// With an `existing` baseline, every entry that remains keeps its `reason`, its `reasons` for
/// capabilities still granted, and the reviewers' comments attached to it; entries no longer in
/// the surface are dropped with their comments, new ones are added; the result is in canonical
/// order and layout. Blessing an unchanged surface returns `existing` byte for byte when it is
/// already canonical. An `existing` text that is not TOML is ignored (the result is a fresh
/// file): callers that must not lose such a file call [`parse`] first and stop on its error.
/// `None` gives a fresh file with a header comment.
pub fn bless(existing: Option<&str>, surface: &Surface) -> String {
    bless_with(existing, surface, &BlessOptions::default())
}

/// What [`bless_with`] does besides granting the surface.
#[derive(Debug, Clone, Default)]
pub struct BlessOptions {
    /// Pin the APIs of these crates (`bless --pin-apis`: the workspace's members): each
    /// capability they use is granted through the APIs they use for it today, and a new API
    /// is then a widening. Crates whose entry already pins APIs keep pinning them, refreshed
    /// from the surface, with or without this option.
    pub pin_apis: BTreeSet<String>,
}

/// [`bless`] with options.
pub fn bless_with(existing: Option<&str>, surface: &Surface, opts: &BlessOptions) -> String {
    let old = existing.and_then(layout::Doc::read);
    layout::Doc::bless(old, surface, &opts.pin_apis).render()
}

/// The canonical form of a valid baseline: entries sorted by name, capabilities in canonical
/// order, one layout; comments kept with the entry, key or capability they are attached to.
pub fn fmt(text: &str, origin: &str) -> Result<String, BaselineError> {
    parse::parse(text, origin)?;
    let doc = layout::Doc::read(text).ok_or_else(|| BaselineError {
        origin: origin.to_string(),
        problems: vec![Problem { line: 1, column: 1, message: "not a TOML document".into() }],
    })?;
    Ok(doc.render())
}
