//! The conditions that make a run fail (`fail-on`), parsed in one place.
//!
//! The GitHub Action takes them as its `fail-on` input; `velaris deps-diff --fail-on` is meant to
//! read the same list, so the names are shared: `widened`, `never`, `baseline-widened`, and the
//! dependency-review conditions `new-capability`, `build-script`, `proc-macro`, `native`,
//! `yanked`, `unverifiable`, `unknown`. Which of them a given report can show is the caller's
//! business: [`Condition::evaluated`] says which ones this version decides, so that a condition
//! that cannot be decided yet is reported as such rather than passing silently.
//!
//! Integrity failures (exit code 3) are not a condition: no list can turn them off.

use std::collections::BTreeSet;
use std::fmt;

/// One `fail-on` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// A program or crate uses a capability the head's baseline does not grant.
    Widened,
    /// The change adds grants to the baseline (compared with the base's baseline).
    BaselineWidened,
    /// A changed package gains a capability.
    NewCapability,
    /// A changed package gains or changes a build script.
    BuildScript,
    /// A changed package becomes a proc macro.
    ProcMacro,
    /// A changed package gains `links` or a native build.
    Native,
    /// A package is locked at a yanked version.
    Yanked,
    /// A changed package could not be verified against a checksum.
    Unverifiable,
    /// A changed package's source could not be read.
    Unknown,
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
        }
    }

    /// Whether this version of velaris decides the condition. The others are accepted (the list
    /// stays valid when they arrive) and reported as not evaluated.
    pub fn evaluated(self) -> bool {
        matches!(self, Condition::Widened | Condition::BaselineWidened | Condition::Unverifiable)
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
    #[error("unknown fail-on condition {given:?}; conditions are: never, {}", names())]
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
            let c = Condition::ALL
                .iter()
                .copied()
                .find(|c| c.as_str() == w)
                .ok_or_else(|| FailOnError::Unknown { given: w.to_string() })?;
            conditions.insert(c);
        }
        Ok(FailOn { conditions })
    }

    pub fn contains(&self, c: Condition) -> bool {
        self.conditions.contains(&c)
    }

    pub fn is_never(&self) -> bool {
        self.conditions.is_empty()
    }

    pub fn conditions(&self) -> impl Iterator<Item = Condition> + '_ {
        self.conditions.iter().copied()
    }

    /// The listed conditions this version cannot decide.
    pub fn not_evaluated(&self) -> Vec<Condition> {
        self.conditions.iter().copied().filter(|c| !c.evaluated()).collect()
    }
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
    fn conditions_not_yet_decided_are_named() {
        let f = FailOn::parse("widened build-script yanked").unwrap();
        assert_eq!(f.not_evaluated(), vec![Condition::BuildScript, Condition::Yanked]);
    }
}
