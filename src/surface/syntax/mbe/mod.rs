//! `macro_rules!` by example: parse a definition, match an invocation against its arms in
//! order, transcribe the first arm that matches. This module only turns tokens into tokens;
//! which macro a path names, where its output goes and what it shows are the analyzer's.
//!
//! It follows rustc's `rustc_expand::mbe`: the same matcher semantics (an NFA over the
//! matcher, black-box fragments parsed only when unambiguous, rustc's glued tokens for `tt`
//! and literal tokens), the same transcription rules (repetition counts, `$crate`, unbound
//! `$x` kept). Fragments are parsed with syn. Not supported: metavariable expressions
//! (`${count(x)}`, unstable), `macro` 2.0 items (unstable), and hygiene (a local variable a
//! macro introduces is visible to the code around it, which only matters for shadowing).
//!
//! Every expansion runs under a [`Budget`] (matcher steps, and output in tokens and bytes, for
//! the invocation and for the crate), so no input can make it run away; the budgets count
//! work, never time, so an expansion fails the same way on every machine.

mod matcher;
mod parse;
mod tokens;
mod transcribe;

use proc_macro2::{Span, TokenStream, TokenTree};

use crate::resources::meter::{Exhausted, Limit, Meter};

pub(crate) use matcher::MatchError;
pub(crate) use tokens::{leaf_bytes, measure};
pub(crate) use parse::{DefError, Frag, MacroRules};
pub(crate) use transcribe::TranscribeError;

/// The edition of the crate that defines a macro (fragment semantics depend on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Edition {
    #[serde(rename = "2015")]
    E2015,
    #[serde(rename = "2018")]
    E2018,
    #[default]
    #[serde(rename = "2021")]
    E2021,
    #[serde(rename = "2024")]
    E2024,
}

impl Edition {
    /// From a manifest's `edition` (absent means 2015).
    pub fn from_manifest(s: Option<&str>) -> Edition {
        match s {
            None | Some("2015") => Edition::E2015,
            Some("2018") => Edition::E2018,
            Some("2021") => Edition::E2021,
            Some(_) => Edition::E2024,
        }
    }
}

/// The limits of one expansion, and what the crate's expansions have spent so far (matcher
/// steps and output, in tokens and in bytes of text). Shared by all the expansions of one
/// crate: [`MacroRules::expand`] takes what it spends from the crate's meters, and fails with
/// the budget named when one expansion would pass its own limits or the crate's.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    /// Matcher steps of one invocation (every arm tried, fragments parsed).
    pub steps_per_invocation: Limit,
    /// Output of one invocation.
    pub tokens_per_invocation: Limit,
    pub bytes_per_invocation: Limit,
    /// Matcher steps of the crate.
    pub steps: Meter,
    /// Output of all the crate's expansions, in tokens and in bytes of text.
    pub tokens: Meter,
    pub bytes: Meter,
    /// Output of the crate's expansions that is parsed as code: all of it, except the
    /// arguments of the `macro_rules!` invocations it holds, which their matcher walks
    /// instead (and counts as steps). See [`Budget::pass_on`].
    pub code: Meter,
}

impl Budget {
    /// An invocation found in an expansion matched, binding fragments of `size`: those tokens
    /// are walked by the matcher (and counted as steps), not parsed as code.
    pub fn pass_on(&mut self, size: Size) {
        self.code.release(size.tokens);
    }
}

impl Budget {
    /// A budget with the same limit for one invocation and for the crate (tests).
    #[cfg(test)]
    pub fn flat(steps: u64, tokens: u64) -> Budget {
        Budget::flat_named(("test steps", "test tokens", "test bytes"), steps, tokens, u64::MAX)
    }

    /// A budget with the same limits for one invocation and for all (the build-script
    /// evaluator's own macros), named for messages.
    pub fn flat_named(names: (&'static str, &'static str, &'static str), steps: u64, tokens: u64, bytes: u64) -> Budget {
        use crate::resources::meter::Unit;
        let s = Limit::new(names.0, Unit::Steps, steps);
        let t = Limit::new(names.1, Unit::Tokens, tokens);
        let b = Limit::new(names.2, Unit::Bytes, bytes);
        Budget {
            steps_per_invocation: s,
            tokens_per_invocation: t,
            bytes_per_invocation: b,
            steps: Meter::new(s),
            tokens: Meter::new(t),
            bytes: Meter::new(b),
            code: Meter::new(t),
        }
    }
}

/// The size of some output: token trees (a group and each token in it count) and bytes of
/// text (each token as written, two for a group's delimiters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Size {
    pub tokens: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    #[error("no rule of the macro matches")]
    NoArm,
    #[error("local ambiguity in the macro's matcher")]
    Ambiguous,
    #[error("a `{0:?}` fragment did not parse")]
    Fragment(Frag),
    #[error("{0}")]
    Budget(Exhausted),
    #[error("{0}")]
    Transcribe(TranscribeError),
}

impl MacroRules {
    /// Expand one invocation: `input` is what is between the invocation's delimiters,
    /// `call_site` the span body tokens take, `dollar_crate` what `$crate` becomes.
    #[cfg(test)]
    pub fn expand(
        &self,
        input: &TokenStream,
        call_site: Span,
        dollar_crate: &[TokenTree],
        budget: &mut Budget,
    ) -> Result<TokenStream, ExpandError> {
        self.expand_sized(input, call_site, dollar_crate, budget, false).map(|(ts, _)| ts)
    }

    /// [`MacroRules::expand`], with the size of the output. `nested`: the invocation is in
    /// the output of another, whose code it then takes out of [`Budget::code`]
    /// (see [`Budget::pass_on`]).
    pub fn expand_sized(
        &self,
        input: &TokenStream,
        call_site: Span,
        dollar_crate: &[TokenTree],
        budget: &mut Budget,
        nested: bool,
    ) -> Result<(TokenStream, Size), ExpandError> {
        // The invocation's own limit, or what the crate has left if that is less: whichever
        // is smaller is the one named when it runs out.
        let own = Meter::new(budget.steps_per_invocation);
        let mut cx = matcher::MatchCx { fuel: own, depth: 0 };
        if budget.steps.remaining() < budget.steps_per_invocation.max {
            cx.fuel = Meter::new(budget.steps.limit().with_max(budget.steps.remaining()));
        }
        let r = matcher::match_arms(&self.arms, input.clone(), &mut cx);
        if let (true, Ok((_, binds))) = (nested, &r) {
            budget.pass_on(bound_size(binds));
        }
        let spent = cx.fuel.used();
        if budget.steps.charge(spent).is_err() {
            // Cannot happen (the fuel was at most what was left); spend it all regardless.
            let rest = budget.steps.remaining();
            let _ = budget.steps.charge(rest);
        }
        let (i, binds) = match r {
            Ok(m) => m,
            Err(MatchError::NoMatch) => return Err(ExpandError::NoArm),
            Err(MatchError::Ambiguous) => return Err(ExpandError::Ambiguous),
            Err(MatchError::Fragment(f)) => return Err(ExpandError::Fragment(f)),
            Err(MatchError::Budget(e)) => return Err(ExpandError::Budget(crate_named(e, &budget.steps))),
        };
        let arm = &self.arms[i];
        let mut tcx = transcribe::TranscribeCx {
            call_site,
            dollar_crate,
            tokens: Meter::new(budget.tokens_per_invocation),
            bytes: Meter::new(budget.bytes_per_invocation),
            crate_tokens: &mut budget.tokens,
            crate_bytes: &mut budget.bytes,
        };
        let out = transcribe::transcribe(&arm.transcriber, &binds, &arm.var_names, &mut tcx);
        let size = Size { tokens: tcx.tokens.used(), bytes: tcx.bytes.used() };
        match out {
            Ok(ts) => {
                budget.code.charge(size.tokens).map_err(ExpandError::Budget)?;
                Ok((ts, size))
            }
            Err(TranscribeError::TooLarge(e)) => Err(ExpandError::Budget(e)),
            Err(e) => Err(ExpandError::Transcribe(e)),
        }
    }
}

/// The size of every fragment a match bound: the tokens of the input it passes on (all but
/// the tokens the matcher names, such as `@acc` and delimiters).
fn bound_size(binds: &[Option<matcher::Match>]) -> Size {
    fn add(m: &matcher::Match, out: &mut Size) {
        match m {
            matcher::Match::Single(f) => {
                out.tokens = out.tokens.saturating_add(f.size.tokens);
                out.bytes = out.bytes.saturating_add(f.size.bytes);
            }
            matcher::Match::Seq(items) => items.iter().for_each(|i| add(i, out)),
        }
    }
    let mut out = Size::default();
    binds.iter().flatten().for_each(|m| add(m, &mut out));
    out
}

/// An exhausted fuel meter that stood for what the crate had left names the crate's limit.
fn crate_named(e: Exhausted, crate_steps: &Meter) -> Exhausted {
    if e.limit.what == crate_steps.limit().what { Exhausted { limit: crate_steps.limit() } } else { e }
}

#[cfg(test)]
mod tests;
