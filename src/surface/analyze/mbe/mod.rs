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
//! Every expansion runs under a [`Budget`] (matcher steps and output tokens), so no input
//! can make it run away.

mod matcher;
mod parse;
mod tokens;
mod transcribe;

use proc_macro2::{Span, TokenStream, TokenTree};

pub(crate) use matcher::MatchError;
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

/// What an expansion may still spend: matcher steps and produced token trees. Shared by all
/// the expansions of one crate.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub steps: u64,
    pub tokens: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    #[error("no rule of the macro matches")]
    NoArm,
    #[error("local ambiguity in the macro's matcher")]
    Ambiguous,
    #[error("a `{0:?}` fragment did not parse")]
    Fragment(Frag),
    #[error("expansion budget exhausted")]
    Budget,
    #[error("{0}")]
    Transcribe(TranscribeError),
}

impl MacroRules {
    /// Expand one invocation: `input` is what is between the invocation's delimiters,
    /// `call_site` the span body tokens take, `dollar_crate` what `$crate` becomes.
    pub fn expand(
        &self,
        input: &TokenStream,
        call_site: Span,
        dollar_crate: &[TokenTree],
        budget: &mut Budget,
    ) -> Result<TokenStream, ExpandError> {
        let mut cx = matcher::MatchCx { fuel: budget.steps, depth: 0 };
        let r = matcher::match_arms(&self.arms, input.clone(), &mut cx);
        budget.steps = cx.fuel;
        let (i, binds) = match r {
            Ok(m) => m,
            Err(MatchError::NoMatch) => return Err(ExpandError::NoArm),
            Err(MatchError::Ambiguous) => return Err(ExpandError::Ambiguous),
            Err(MatchError::Fragment(f)) => return Err(ExpandError::Fragment(f)),
            Err(MatchError::Budget) => return Err(ExpandError::Budget),
        };
        let arm = &self.arms[i];
        let mut tcx = transcribe::TranscribeCx { call_site, dollar_crate, budget: budget.tokens };
        let out = transcribe::transcribe(&arm.transcriber, &binds, &arm.var_names, &mut tcx);
        budget.tokens = tcx.budget;
        out.map_err(|e| match e {
            TranscribeError::TooLarge => ExpandError::Budget,
            e => ExpandError::Transcribe(e),
        })
    }
}

#[cfg(test)]
mod tests;
