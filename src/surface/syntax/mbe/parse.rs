//! Parsing a `macro_rules!` definition: its arms, each a matcher compiled to the locations the
//! matcher walks (as rustc's `MatcherLoc`) and a transcriber tree.

use std::collections::HashMap;
use std::rc::Rc;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use super::tokens::{self, Tok};
use super::Edition;

/// A fragment specifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frag {
    Block,
    Expr,
    /// `expr_2021`, and `expr` in crates before edition 2024: no `_`, no `const { }`.
    Expr2021,
    Ident,
    Item,
    Lifetime,
    Literal,
    Meta,
    /// `pat` from edition 2021 on: top-level or-patterns.
    Pat,
    /// `pat_param`, and `pat` before edition 2021.
    PatParam,
    Path,
    Stmt,
    Tt,
    Ty,
    Vis,
}

impl Frag {
    fn parse(s: &str, edition: Edition) -> Option<Frag> {
        Some(match s {
            "block" => Frag::Block,
            "expr" if edition >= Edition::E2024 => Frag::Expr,
            "expr" | "expr_2021" => Frag::Expr2021,
            "ident" => Frag::Ident,
            "item" => Frag::Item,
            "lifetime" => Frag::Lifetime,
            "literal" => Frag::Literal,
            "meta" => Frag::Meta,
            "pat" if edition >= Edition::E2021 => Frag::Pat,
            "pat" | "pat_param" => Frag::PatParam,
            "path" => Frag::Path,
            "stmt" => Frag::Stmt,
            "tt" => Frag::Tt,
            "ty" => Frag::Ty,
            "vis" => Frag::Vis,
            _ => return None,
        })
    }
}

/// `*`, `+`, `?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    ZeroOrMore,
    OneOrMore,
    ZeroOrOne,
}

/// A token a matcher expects (or a separator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokPat(pub Tok);

/// One location of a matcher level (a delimited group is a level of its own).
#[derive(Debug, Clone)]
pub(crate) enum Loc {
    Tok(TokPat),
    Group(Delimiter, Rc<[Loc]>),
    Var { var: u16, frag: Frag },
    /// `$(`: `end` is the index of the matching [`Loc::SeqEnd`].
    SeqStart { seq: u16, op: Op, end: usize },
    /// `)sep op`: `start` is the index of the matching [`Loc::SeqStart`].
    SeqEnd { seq: u16, op: Op, sep: Option<TokPat>, start: usize },
    Eof,
}

/// A transcriber node.
#[derive(Debug, Clone)]
pub(crate) enum TNode {
    Tok(TokenTree),
    Group(Delimiter, Vec<TNode>),
    /// `$name`; `None` when the name is not bound by the arm (copied through as `$name`).
    Var(Option<u16>, proc_macro2::Ident),
    Rep { body: Vec<TNode>, sep: Vec<TokenTree>, op: Op },
    DollarCrate,
    /// `${count(x)}`, `${index()}`, ...: metavariable expressions (not stable Rust).
    MetaExpr,
}

#[derive(Debug)]
pub(crate) struct Arm {
    pub matcher: Rc<[Loc]>,
    pub var_names: Vec<String>,
    /// For each sequence, every variable declared inside it (at any depth).
    pub seq_vars: Vec<Vec<u16>>,
    pub transcriber: Vec<TNode>,
}

/// A parsed `macro_rules!` definition.
#[derive(Debug)]
pub(crate) struct MacroRules {
    pub arms: Vec<Arm>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DefError {
    #[error("invalid macro_rules! definition: {0}")]
    Invalid(&'static str),
    #[error("unknown fragment specifier `{0}`")]
    UnknownFragment(String),
}

struct MatcherBuilder {
    vars: HashMap<String, u16>,
    var_names: Vec<String>,
    /// Innermost-last stack of the sequences being compiled.
    open_seqs: Vec<u16>,
    seq_vars: Vec<Vec<u16>>,
    edition: Edition,
}

impl MatcherBuilder {
    fn level(&mut self, tts: &[TokenTree]) -> Result<Rc<[Loc]>, DefError> {
        let mut out = Vec::new();
        self.seq(tts, &mut out)?;
        out.push(Loc::Eof);
        Ok(out.into())
    }

    fn seq(&mut self, tts: &[TokenTree], out: &mut Vec<Loc>) -> Result<(), DefError> {
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    out.push(Loc::Group(g.delimiter(), self.level(&inner)?));
                    i += 1;
                }
                TokenTree::Punct(p) if p.as_char() == '$' => match tts.get(i + 1) {
                    Some(TokenTree::Ident(name)) if name != "crate" => {
                        let frag = match (tts.get(i + 2), tts.get(i + 3)) {
                            (Some(TokenTree::Punct(c)), Some(TokenTree::Ident(f))) if c.as_char() == ':' => f,
                            _ => return Err(DefError::Invalid("missing fragment specifier")),
                        };
                        let frag = Frag::parse(&frag.to_string(), self.edition)
                            .ok_or_else(|| DefError::UnknownFragment(frag.to_string()))?;
                        let n = name.to_string();
                        let n = n.strip_prefix("r#").map_or(n.clone(), str::to_string);
                        if self.vars.contains_key(&n) {
                            return Err(DefError::Invalid("duplicate matcher binding"));
                        }
                        let var = u16::try_from(self.var_names.len()).map_err(|_| DefError::Invalid("too many bindings"))?;
                        self.vars.insert(n.clone(), var);
                        self.var_names.push(n);
                        for s in &self.open_seqs {
                            self.seq_vars[*s as usize].push(var);
                        }
                        out.push(Loc::Var { var, frag });
                        i += 4;
                    }
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                        let (sep, op, used) = sep_and_op(&tts[i + 2..])?;
                        let seq = u16::try_from(self.seq_vars.len()).map_err(|_| DefError::Invalid("too many repetitions"))?;
                        self.seq_vars.push(Vec::new());
                        let start = out.len();
                        out.push(Loc::SeqStart { seq, op, end: 0 });
                        self.open_seqs.push(seq);
                        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                        self.seq(&inner, out)?;
                        self.open_seqs.pop();
                        let end = out.len();
                        out.push(Loc::SeqEnd { seq, op, sep, start });
                        if let Loc::SeqStart { end: e, .. } = &mut out[start] {
                            *e = end;
                        }
                        i += 2 + used;
                    }
                    // `$crate` or a lone `$` are plain tokens.
                    _ => {
                        let (t, n) = tokens::next(tts, i).expect("token");
                        out.push(Loc::Tok(TokPat(t)));
                        i += n;
                    }
                },
                _ => {
                    let (t, n) = tokens::next(tts, i).expect("token");
                    out.push(Loc::Tok(TokPat(t)));
                    i += n;
                }
            }
        }
        Ok(())
    }
}

/// After `$( .. )`: an optional separator token and the repetition operator. Returns how
/// many token trees they took.
fn sep_and_op(tts: &[TokenTree]) -> Result<(Option<TokPat>, Op, usize), DefError> {
    let op_of = |t: &Tok| match t {
        Tok::Punct(p) if p == "*" => Some(Op::ZeroOrMore),
        Tok::Punct(p) if p == "+" => Some(Op::OneOrMore),
        Tok::Punct(p) if p == "?" => Some(Op::ZeroOrOne),
        _ => None,
    };
    let (first, n1) = tokens::next(tts, 0).ok_or(DefError::Invalid("expected a repetition operator"))?;
    if let Some(op) = op_of(&first) {
        return Ok((None, op, n1));
    }
    if matches!(first, Tok::Group(_)) {
        return Err(DefError::Invalid("a delimiter cannot be a separator"));
    }
    let (second, n2) = tokens::next(tts, n1).ok_or(DefError::Invalid("expected a repetition operator"))?;
    match op_of(&second) {
        Some(Op::ZeroOrOne) => Err(DefError::Invalid("`?` takes no separator")),
        Some(op) => Ok((Some(TokPat(first)), op, n1 + n2)),
        None => Err(DefError::Invalid("expected `*`, `+` or `?`")),
    }
}

fn transcriber(tts: &[TokenTree], vars: &HashMap<String, u16>) -> Result<Vec<TNode>, DefError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                out.push(TNode::Group(g.delimiter(), transcriber(&inner, vars)?));
                i += 1;
            }
            TokenTree::Punct(p) if p.as_char() == '$' => match tts.get(i + 1) {
                Some(TokenTree::Ident(id)) if id == "crate" => {
                    out.push(TNode::DollarCrate);
                    i += 2;
                }
                Some(TokenTree::Ident(id)) => {
                    let n = id.to_string();
                    let n = n.strip_prefix("r#").map_or(n.clone(), str::to_string);
                    out.push(TNode::Var(vars.get(&n).copied(), id.clone()));
                    i += 2;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    let mut sep = Vec::new();
                    let rest = &tts[i + 2..];
                    let (first, n1) = tokens::next(rest, 0).ok_or(DefError::Invalid("expected a repetition operator"))?;
                    let is_op = |t: &Tok| matches!(t, Tok::Punct(p) if p == "*" || p == "+" || p == "?");
                    let (op_tok, used) = if is_op(&first) {
                        (first, n1)
                    } else {
                        let (second, n2) = tokens::next(rest, n1).ok_or(DefError::Invalid("expected a repetition operator"))?;
                        if !is_op(&second) {
                            return Err(DefError::Invalid("expected `*`, `+` or `?`"));
                        }
                        sep.extend(rest[..n1].iter().cloned());
                        (second, n1 + n2)
                    };
                    let op = match op_tok {
                        Tok::Punct(p) if p == "*" => Op::ZeroOrMore,
                        Tok::Punct(p) if p == "+" => Op::OneOrMore,
                        _ => Op::ZeroOrOne,
                    };
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    out.push(TNode::Rep { body: transcriber(&inner, vars)?, sep, op });
                    i += 2 + used;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                    out.push(TNode::MetaExpr);
                    i += 2;
                }
                _ => {
                    out.push(TNode::Tok(tts[i].clone()));
                    i += 1;
                }
            },
            tt => {
                out.push(TNode::Tok(tt.clone()));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `#[macro_export(local_inner_macros)]`: a bare `name!` in the transcriber means
/// `$crate::name!`.
fn local_inner(nodes: &mut Vec<TNode>) {
    let mut i = 0;
    while i < nodes.len() {
        let punct_at = |nodes: &[TNode], k: Option<usize>, c: char| {
            matches!(k.and_then(|k| nodes.get(k)), Some(TNode::Tok(TokenTree::Punct(p))) if p.as_char() == c)
        };
        // A macro call: `name ! (..)` or `name ! $args`, not `if !x` nor `a != b`.
        let bang = matches!(nodes.get(i + 1), Some(TNode::Tok(TokenTree::Punct(p))) if p.as_char() == '!' && p.spacing() == proc_macro2::Spacing::Alone)
            && matches!(nodes.get(i + 2), Some(TNode::Group(..) | TNode::Var(..)));
        let after_colons = punct_at(nodes, i.checked_sub(1), ':');
        let after_dollar = punct_at(nodes, i.checked_sub(1), '$');
        match &mut nodes[i] {
            TNode::Group(_, inner) | TNode::Rep { body: inner, .. } => local_inner(inner),
            TNode::Tok(TokenTree::Ident(id))
                if bang && !after_colons && !after_dollar && id != "macro_rules" && !super::tokens::reserved(&id.to_string()) =>
            {
                let span = id.span();
                let mut colon = proc_macro2::Punct::new(':', proc_macro2::Spacing::Joint);
                colon.set_span(span);
                let mut colon2 = proc_macro2::Punct::new(':', proc_macro2::Spacing::Alone);
                colon2.set_span(span);
                nodes.insert(i, TNode::DollarCrate);
                nodes.insert(i + 1, TNode::Tok(TokenTree::Punct(colon)));
                nodes.insert(i + 2, TNode::Tok(TokenTree::Punct(colon2)));
                i += 3;
            }
            _ => {}
        }
        i += 1;
    }
}

impl MacroRules {
    /// Parse the body of `macro_rules! name { .. }` (the arms).
    pub fn parse(body: TokenStream, edition: Edition, local_inner_macros: bool) -> Result<MacroRules, DefError> {
        let tts: Vec<TokenTree> = body.into_iter().collect();
        let mut arms = Vec::new();
        let mut i = 0;
        while i < tts.len() {
            let (TokenTree::Group(m), Some(TokenTree::Punct(eq)), Some(TokenTree::Punct(gt)), Some(TokenTree::Group(t))) =
                (&tts[i], tts.get(i + 1), tts.get(i + 2), tts.get(i + 3))
            else {
                return Err(DefError::Invalid("expected `(matcher) => {transcriber}`"));
            };
            if eq.as_char() != '=' || gt.as_char() != '>' {
                return Err(DefError::Invalid("expected `=>`"));
            }
            let mut b = MatcherBuilder {
                vars: HashMap::new(),
                var_names: Vec::new(),
                open_seqs: Vec::new(),
                seq_vars: Vec::new(),
                edition,
            };
            let mtts: Vec<TokenTree> = m.stream().into_iter().collect();
            let matcher = b.level(&mtts)?;
            let ttts: Vec<TokenTree> = t.stream().into_iter().collect();
            let mut transcriber = transcriber(&ttts, &b.vars)?;
            if local_inner_macros {
                local_inner(&mut transcriber);
            }
            arms.push(Arm { matcher, var_names: b.var_names, seq_vars: b.seq_vars, transcriber });
            i += 4;
            match tts.get(i) {
                None => break,
                Some(TokenTree::Punct(p)) if p.as_char() == ';' => i += 1,
                _ => return Err(DefError::Invalid("expected `;` between arms")),
            }
        }
        if arms.is_empty() {
            return Err(DefError::Invalid("no arms"));
        }
        Ok(MacroRules { arms })
    }
}
