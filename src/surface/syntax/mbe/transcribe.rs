//! Transcribing an arm's right-hand side with the variables a match bound (rustc's
//! `transcribe.rs`).
//!
//! - `$x` is replaced by what it matched. A fragment parsed by the parser (`expr`, `ty`,
//!   `vis`, `path`, `pat`, `meta`, `literal`, `item`, `block`) is wrapped in an invisible group
//!   (`Delimiter::None`), as rustc keeps it one node: `$e * 2` with `$e = 1 + 1` is
//!   `(1 + 1) * 2`, and an empty `$v:vis` is still one token for the next macro to match.
//!   `tt`, `ident` and `lifetime` fragments are spliced as tokens, and so is `stmt`, which
//!   syn cannot read inside such a group.
//! - `$( .. ) sep op` repeats as many times as the variables inside it that repeat at this
//!   depth (they must agree); a variable bound outside the repetition is reused in each.
//! - `$crate` becomes the given crate-root tokens; a `$name` the matcher did not bind is kept
//!   as is (it belongs to a macro defined by this one).
//! - Tokens written in the macro's body take the invocation's span, so whatever they show is
//!   placed at the invocation; tokens of fragments keep theirs.

use proc_macro2::{Delimiter, Group, Punct, Spacing, Span, TokenStream, TokenTree};

use super::Size;
use super::matcher::Match;
use super::parse::{Frag, Op, TNode};
use super::tokens::leaf_bytes;
use crate::resources::meter::{Exhausted, Meter};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TranscribeError {
    #[error("variable `{0}` is still repeating at this depth")]
    StillRepeating(String),
    #[error("repetition without a variable that repeats at this depth")]
    NoRepetition,
    #[error("variables in one repetition repeat a different number of times")]
    CountMismatch,
    #[error("`+` repetition with no match")]
    EmptyOneOrMore,
    #[error("metavariable expressions (`${{..}}`) are not supported")]
    MetaExpr,
    #[error("{0}")]
    TooLarge(Exhausted),
}

pub(crate) struct TranscribeCx<'a> {
    pub call_site: Span,
    /// What `$crate` becomes.
    pub dollar_crate: &'a [TokenTree],
    /// This expansion's output, in tokens and bytes of text.
    pub tokens: Meter,
    pub bytes: Meter,
    /// The output of all the crate's expansions.
    pub crate_tokens: &'a mut Meter,
    pub crate_bytes: &'a mut Meter,
}

impl TranscribeCx<'_> {
    /// Counts `size` more output against this expansion's limits and the crate's.
    fn spend(&mut self, size: Size) -> Result<(), TranscribeError> {
        self.tokens.charge(size.tokens).map_err(TranscribeError::TooLarge)?;
        self.bytes.charge(size.bytes).map_err(TranscribeError::TooLarge)?;
        self.crate_tokens.charge(size.tokens).map_err(TranscribeError::TooLarge)?;
        self.crate_bytes.charge(size.bytes).map_err(TranscribeError::TooLarge)
    }
}

fn lookup<'m>(binds: &'m [Option<Match>], var: u16, idxs: &[usize]) -> Option<&'m Match> {
    let mut m = binds.get(var as usize)?.as_ref()?;
    for &i in idxs {
        match m {
            Match::Seq(items) => m = items.get(i)?,
            Match::Single(_) => break,
        }
    }
    Some(m)
}

fn vars_in(nodes: &[TNode], out: &mut Vec<u16>) {
    for n in nodes {
        match n {
            TNode::Var(Some(v), _) => out.push(*v),
            TNode::Group(_, inner) | TNode::Rep { body: inner, .. } => vars_in(inner, out),
            _ => {}
        }
    }
}

fn respan(tt: &TokenTree, span: Span) -> TokenTree {
    let mut t = tt.clone();
    t.set_span(span);
    t
}

/// Emit one token written in the macro's body (not a group: see [`level`]).
fn emit(out: &mut Vec<TokenTree>, cx: &mut TranscribeCx, tt: TokenTree) -> Result<(), TranscribeError> {
    cx.spend(Size { tokens: 1, bytes: leaf_bytes(&tt) })?;
    out.push(tt);
    Ok(())
}

pub(crate) fn transcribe(
    nodes: &[TNode],
    binds: &[Option<Match>],
    names: &[String],
    cx: &mut TranscribeCx,
) -> Result<TokenStream, TranscribeError> {
    let mut out = Vec::new();
    let mut idxs = Vec::new();
    level(nodes, binds, names, &mut idxs, &mut out, cx)?;
    Ok(out.into_iter().collect())
}

fn level(
    nodes: &[TNode],
    binds: &[Option<Match>],
    names: &[String],
    idxs: &mut Vec<usize>,
    out: &mut Vec<TokenTree>,
    cx: &mut TranscribeCx,
) -> Result<(), TranscribeError> {
    for n in nodes {
        match n {
            TNode::Tok(tt) => emit(out, cx, respan(tt, cx.call_site))?,
            TNode::Group(d, inner) => {
                cx.spend(Size { tokens: 1, bytes: 2 })?;
                let mut sub = Vec::new();
                level(inner, binds, names, idxs, &mut sub, cx)?;
                let mut g = Group::new(*d, sub.into_iter().collect());
                g.set_span(cx.call_site);
                out.push(TokenTree::Group(g));
            }
            TNode::DollarCrate => {
                for tt in cx.dollar_crate.to_vec() {
                    emit(out, cx, respan(&tt, cx.call_site))?;
                }
            }
            TNode::Var(None, id) => {
                let mut dollar = Punct::new('$', Spacing::Alone);
                dollar.set_span(cx.call_site);
                emit(out, cx, TokenTree::Punct(dollar))?;
                emit(out, cx, respan(&TokenTree::Ident(id.clone()), cx.call_site))?;
            }
            TNode::Var(Some(v), _) => match lookup(binds, *v, idxs) {
                Some(Match::Single(f)) => {
                    // The fragment's whole size, nested groups included: its tokens are
                    // shared, not copied, but whoever parses the output walks all of them.
                    cx.spend(f.size)?;
                    match f.frag {
                        Frag::Tt | Frag::Ident | Frag::Lifetime | Frag::Stmt => out.extend(f.tokens.clone()),
                        _ => {
                            cx.spend(Size { tokens: 1, bytes: 0 })?;
                            out.push(TokenTree::Group(Group::new(Delimiter::None, f.tokens.clone())));
                        }
                    }
                }
                Some(Match::Seq(_)) => return Err(TranscribeError::StillRepeating(names[*v as usize].clone())),
                None => {}
            },
            TNode::Rep { body, sep, op } => {
                let mut vars = Vec::new();
                vars_in(body, &mut vars);
                let mut count = None;
                for v in vars {
                    if let Some(Match::Seq(items)) = lookup(binds, v, idxs) {
                        match count {
                            None => count = Some(items.len()),
                            Some(c) if c != items.len() => return Err(TranscribeError::CountMismatch),
                            _ => {}
                        }
                    }
                }
                let count = count.ok_or(TranscribeError::NoRepetition)?;
                if *op == Op::OneOrMore && count == 0 {
                    return Err(TranscribeError::EmptyOneOrMore);
                }
                for i in 0..count {
                    if i > 0 {
                        for tt in sep {
                            emit(out, cx, respan(tt, cx.call_site))?;
                        }
                    }
                    idxs.push(i);
                    let r = level(body, binds, names, idxs, out, cx);
                    idxs.pop();
                    r?;
                }
            }
            TNode::MetaExpr => return Err(TranscribeError::MetaExpr),
        }
    }
    Ok(())
}
