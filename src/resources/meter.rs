//! Deterministic budgets for the engines that read attacker-controlled input: how much work
//! (steps, iterations) and how much output (tokens, bytes, set sizes) one piece of analysis may
//! spend, so that no input can make velaris run away with the CPU or the memory of the machine.
//!
//! A [`Limit`] names what it counts and how much of it is allowed; a [`Meter`] spends against
//! one. Running out is an [`Exhausted`] error that names the limit, which the engine turns into
//! `unanalyzed` at the place it was working on, and goes on with the rest.
//!
//! Budgets count steps, tokens and bytes, never time: the same input spends the same amounts
//! on every machine, however busy, so the output (and every cached result) is the same
//! everywhere. Memory shared by concurrent analyses is a different matter, bounded by
//! [`crate::resources::budget`], which only ever makes a job wait and never changes what it finds.
//!
//! Using it in an engine:
//!
//! ```
//! use velaris::resources::meter::{Limit, Meter, Unit};
//!
//! /// Iterations of one build script's loops.
//! const LOOP_STEPS: Limit = Limit::new("build-script loop iterations", Unit::Steps, 1_000_000);
//!
//! let mut m = Meter::new(LOOP_STEPS);
//! for _ in 0..10 {
//!     m.charge(1).expect("well within the limit");
//! }
//! assert_eq!(m.used(), 10);
//! let err = Meter::new(Limit::new("string bytes", Unit::Bytes, 4)).charge(5).unwrap_err();
//! assert_eq!(err.to_string(), "the string bytes budget (4 bytes) is exhausted");
//! ```
//!
//! A meter that holds what is live (memory that is given back) uses [`Meter::release`]; one
//! that counts work only ever charges. [`Meter::peak`] is the most ever held at once.

use std::fmt;

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Units of work: matcher steps, loop iterations, fixpoint rounds.
    Steps,
    /// Token trees.
    Tokens,
    /// Bytes (of text, or of memory as estimated).
    Bytes,
    /// Elements of a collection (callees in a set, files in a listing).
    Items,
    /// Levels of nesting or recursion.
    Levels,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Steps => "steps",
            Unit::Tokens => "tokens",
            Unit::Bytes => "bytes",
            Unit::Items => "items",
            Unit::Levels => "levels",
        }
    }
}

/// One named budget: what it counts, in which unit, and how much is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What is counted, as users read it in a finding: "macro output per crate".
    pub what: &'static str,
    pub unit: Unit,
    pub max: u64,
}

impl Limit {
    pub const fn new(what: &'static str, unit: Unit, max: u64) -> Limit {
        Limit { what, unit, max }
    }

    /// The same limit with another maximum (tests use small ones).
    pub const fn with_max(self, max: u64) -> Limit {
        Limit { max, ..self }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} budget ({} {})", self.what, thousands(self.max), self.unit.name())
    }
}

/// A budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{limit} is exhausted")]
pub struct Exhausted {
    pub limit: Limit,
}

/// Spending against one [`Limit`].
#[derive(Debug, Clone)]
pub struct Meter {
    limit: Limit,
    used: u64,
    peak: u64,
}

impl Meter {
    pub const fn new(limit: Limit) -> Meter {
        Meter { limit, used: 0, peak: 0 }
    }

    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Spends `n`, or spends nothing and fails when that would go past the limit.
    pub fn charge(&mut self, n: u64) -> Result<(), Exhausted> {
        match self.used.checked_add(n) {
            Some(u) if u <= self.limit.max => {
                self.used = u;
                self.peak = self.peak.max(u);
                Ok(())
            }
            _ => Err(Exhausted { limit: self.limit }),
        }
    }

    /// Spends `n` even past the limit: for what is already spent and only needs counting
    /// (the next [`Meter::charge`] then fails).
    pub fn force(&mut self, n: u64) {
        self.used = self.used.saturating_add(n);
        self.peak = self.peak.max(self.used);
    }

    /// Whether `n` more would fit.
    pub fn fits(&self, n: u64) -> bool {
        self.used.checked_add(n).is_some_and(|u| u <= self.limit.max)
    }

    /// Gives back `n` (memory that is no longer held).
    pub fn release(&mut self, n: u64) {
        self.used = self.used.saturating_sub(n);
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn remaining(&self) -> u64 {
        self.limit.max.saturating_sub(self.used)
    }

    /// The most ever spent at once.
    pub fn peak(&self) -> u64 {
        self.peak
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_up_to_the_limit_and_not_past_it() {
        let mut m = Meter::new(Limit::new("x", Unit::Tokens, 10));
        assert!(m.charge(4).is_ok());
        assert!(m.charge(6).is_ok());
        let e = m.charge(1).unwrap_err();
        assert_eq!(e.limit.max, 10);
        // A failed charge spends nothing.
        assert_eq!(m.used(), 10);
        assert!(m.charge(u64::MAX).is_err());
        m.release(7);
        assert_eq!(m.used(), 3);
        m.force(20);
        assert_eq!((m.used(), m.peak()), (23, 23));
        assert!(m.charge(0).is_err());
        m.release(20);
        assert!(m.fits(7) && !m.fits(8));
        assert_eq!(m.peak(), 23);
        assert_eq!(m.remaining(), 7);
    }

    #[test]
    fn names_the_budget() {
        let l = Limit::new("macro output per crate", Unit::Tokens, 4_000_000);
        assert_eq!(Exhausted { limit: l }.to_string(), "the macro output per crate budget (4,000,000 tokens) is exhausted");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(0), "0");
    }
}
