//! The conditions that make a run fail (`fail-on`): their names, parsing, and what trips each.
//!
//! The GitHub Action's `fail-on` input and `velaris deps-diff --fail-on` read the same list:
//! `never`, `widened`, `baseline-widened`, and the dependency-review conditions
//! `new-capability`, `build-script`, `proc-macro`, `native`, `yanked`, `unverifiable`,
//! `unknown`, `license-change`, `advisory`, `name-squat`, `fresh`. Each condition is decided in one
//! place:
//!
//! - `widened` from a [`CheckOutcome`] (the comparison `velaris check` makes): [`widened`];
//! - `baseline-widened` from the grants a newer baseline adds ([`crate::baseline::additions`]):
//!   [`baseline_widened`];
//! - the dependency conditions ([`Condition::is_dependency`]) from a deps-diff
//!   [`crate::depsdiff::Report`]: [`crate::depsdiff::review::decide`].
//!
//! Integrity failures (exit code 3) are not a condition: no list can turn them off.

use std::collections::BTreeSet;
use std::fmt;

use crate::baseline::{Addition, CheckOutcome};

/// One `fail-on` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// A program or crate uses a capability the head's baseline does not grant.
    Widened,
    /// The change adds grants to the baseline (compared with the base's baseline).
    BaselineWidened,
    /// A changed package gains a capability (an added package: has any).
    NewCapability,
    /// A changed package gains or changes a build script, or its build script gains network
    /// access or process spawning.
    BuildScript,
    /// A changed package becomes a proc macro.
    ProcMacro,
    /// A changed package gains `links` or a native build.
    Native,
    /// A changed package is locked at a version its registry index marks yanked.
    Yanked,
    /// A changed package's side could not be verified (by sha256 or by git commit).
    Unverifiable,
    /// A changed package's capabilities could not be analysed.
    Unknown,
    /// A changed package's `license` expression changed.
    LicenseChange,
    /// A RustSec advisory affects a version the change locks (with `--advisory-db`).
    Advisory,
    /// A dependency new to the graph has a name that imitates a popular crate's.
    NameSquat,
    /// A new version was published less than the cooldown before the head commit.
    Fresh,
}

impl Condition {
    pub const ALL: &'static [Condition] = &[
        Condition::Widened,
        Condition::BaselineWidened,
        Condition::NewCapability,
        Condition::BuildScript,
        Condition::ProcMacro,
        Condition::Native,
        Condition::Yanked,
        Condition::Unverifiable,
        Condition::Unknown,
        Condition::LicenseChange,
        Condition::Advisory,
        Condition::NameSquat,
        Condition::Fresh,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Condition::Widened => "widened",
            Condition::BaselineWidened => "baseline-widened",
            Condition::NewCapability => "new-capability",
            Condition::BuildScript => "build-script",
            Condition::ProcMacro => "proc-macro",
            Condition::Native => "native",
            Condition::Yanked => "yanked",
            Condition::Unverifiable => "unverifiable",
            Condition::Unknown => "unknown",
            Condition::LicenseChange => "license-change",
            Condition::Advisory => "advisory",
            Condition::NameSquat => "name-squat",
            Condition::Fresh => "fresh",
        }
    }

    pub fn parse(s: &str) -> Option<Condition> {
        Condition::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// Decided by the dependency review of a lockfile change, not by the ratchet.
    pub fn is_dependency(self) -> bool {
        !matches!(self, Condition::Widened | Condition::BaselineWidened)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What fails the run: a set of conditions, or nothing (`never`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailOn {
    conditions: BTreeSet<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FailOnError {
    #[error("unknown condition {given:?} in fail-on; conditions are: never, {}", names())]
    Unknown { given: String },
    #[error("`never` cannot be combined with other fail-on conditions")]
    NeverWithOthers,
    #[error("the fail-on list is empty; use `never` to never fail")]
    Empty,
}

fn names() -> String {
    Condition::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

impl FailOn {
    /// Fail on widened grants only: the default.
    pub fn widened() -> FailOn {
        FailOn { conditions: BTreeSet::from([Condition::Widened]) }
    }

    /// Never fail (integrity failures still do).
    pub fn never() -> FailOn {
        FailOn { conditions: BTreeSet::new() }
    }

    /// Parse a list separated by commas, spaces or newlines: `widened, baseline-widened`.
    pub fn parse(s: &str) -> Result<FailOn, FailOnError> {
        let words: Vec<&str> = s.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            return Err(FailOnError::Empty);
        }
        if words.contains(&"never") {
            return if words.iter().all(|w| *w == "never") { Ok(FailOn::never()) } else { Err(FailOnError::NeverWithOthers) };
        }
        let mut conditions = BTreeSet::new();
        for w in words {
            conditions.insert(Condition::parse(w).ok_or_else(|| FailOnError::Unknown { given: w.to_string() })?);
        }
        Ok(FailOn { conditions })
    }

    pub fn contains(&self, c: Condition) -> bool {
        self.conditions.contains(&c)
    }

    pub fn is_never(&self) -> bool {
        self.conditions.is_empty()
    }

    /// This list with `c` added (the action's `cooldown` adds `fresh`).
    pub fn with(mut self, c: Condition) -> FailOn {
        self.conditions.insert(c);
        self
    }

    pub fn conditions(&self) -> impl Iterator<Item = Condition> + '_ {
        self.conditions.iter().copied()
    }

    /// The listed conditions that `decide` says hold, in the order of [`Condition::ALL`], each
    /// with what trips it; `decide` answers one line per thing that trips the condition.
    pub fn failures(&self, mut decide: impl FnMut(Condition) -> Vec<String>) -> Vec<Failure> {
        self.conditions()
            .filter_map(|condition| {
                let what = decide(condition);
                (!what.is_empty()).then_some(Failure { condition, what })
            })
            .collect()
    }
}

/// A `fail-on` condition that holds, with what trips it: one line each, plain text (callers
/// escape it for where it goes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub condition: Condition,
    pub what: Vec<String>,
}

/// What trips `widened`: each program or crate that uses a capability the baseline does not
/// grant, `program app: process.spawn`, or an API its pins do not list, `crate app: fs.write
/// via std::fs::remove_dir_all`.
pub fn widened(outcome: &CheckOutcome) -> Vec<String> {
    outcome.widened.iter().map(|w| format!("{} {}: {}", w.subject.kind(), w.subject.name(), w.summary())).collect()
}

/// What trips `baseline-widened`: each grant a newer baseline adds, `program app: process.spawn`
/// (`(new)` for an entry the older baseline did not have), with the APIs pins add or no longer
/// restrict.
pub fn baseline_widened(added: &[Addition]) -> Vec<String> {
    added
        .iter()
        .map(|a| (a, a.summary()))
        .filter(|(_, s)| !s.is_empty())
        .map(|(a, s)| format!("{} {}{}: {s}", a.subject.kind(), a.subject.name(), if a.new_subject { " (new)" } else { "" }))
        .collect()
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_never() {
            return f.write_str("never");
        }
        let names: Vec<&str> = self.conditions.iter().map(|c| c.as_str()).collect();
        f.write_str(&names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_in_any_separator() {
        let f = FailOn::parse("widened, baseline-widened\nunverifiable").unwrap();
        assert!(f.contains(Condition::Widened) && f.contains(Condition::BaselineWidened) && f.contains(Condition::Unverifiable));
        assert_eq!(f.to_string(), "widened, baseline-widened, unverifiable");
        assert!(FailOn::parse("never").unwrap().is_never());
        assert_eq!(FailOn::parse("widened").unwrap(), FailOn::widened());
    }

    #[test]
    fn every_name_round_trips() {
        for c in Condition::ALL {
            assert_eq!(FailOn::parse(c.as_str()).unwrap().conditions().collect::<Vec<_>>(), vec![*c]);
        }
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(matches!(FailOn::parse("widened,sometimes"), Err(FailOnError::Unknown { .. })));
        assert_eq!(FailOn::parse("never widened"), Err(FailOnError::NeverWithOthers));
        assert_eq!(FailOn::parse(" , "), Err(FailOnError::Empty));
        let msg = FailOn::parse("x").unwrap_err().to_string();
        assert!(msg.contains("baseline-widened") && msg.contains("never"), "{msg}");
    }

    #[test]
    fn failures_keep_only_conditions_that_hold_in_order() {
        let f = FailOn::parse("yanked, widened build-script").unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let failed = f.failures(|c| {
            asked.borrow_mut().push(c);
            if c == Condition::Widened { Vec::new() } else { vec![format!("{c} trips")] }
        });
        assert_eq!(*asked.borrow(), vec![Condition::Widened, Condition::BuildScript, Condition::Yanked]);
        assert_eq!(failed.iter().map(|f| f.condition).collect::<Vec<_>>(), vec![Condition::BuildScript, Condition::Yanked]);
        assert_eq!(failed[0].what, vec!["build-script trips".to_string()]);
        assert!(FailOn::never().failures(|_| vec!["x".into()]).is_empty());
    }

    #[test]
    fn only_the_ratchet_conditions_are_not_the_dependency_reviews() {
        let dep: Vec<&str> = Condition::ALL.iter().filter(|c| c.is_dependency()).map(|c| c.as_str()).collect();
        assert_eq!(
            dep,
            ["new-capability", "build-script", "proc-macro", "native", "yanked", "unverifiable", "unknown", "license-change", "advisory", "name-squat", "fresh"]
        );
    }
}
