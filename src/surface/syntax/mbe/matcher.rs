//! Matching an invocation against one arm: rustc's macro parser (`macro_parser.rs`), an NFA
//! over the matcher's locations that walks the input one rustc token at a time.
//!
//! As in rustc:
//! - every thread that waits for a token advances on it; a thread at `$x:frag` is a
//!   "black-box" candidate when the token may begin that fragment;
//! - a black-box fragment is parsed only when it is the sole candidate (one black-box thread
//!   and no token thread); anything else with a black-box thread is a local ambiguity, an
//!   error, as is more than one thread at the end;
//! - a fragment that starts but fails to parse is fatal for the invocation (no other arm is
//!   tried), since rustc reports it as an error.
//!
//! Unlike rustc, a delimited group of the matcher is matched by a nested run over the group's
//! contents: a group is one token tree of its level, so the result is the same.
//!
//! Fragments are parsed with syn, inside one `syn` parse of the level's tokens, so a long
//! repetition costs time linear in its length.

use std::rc::Rc;

use proc_macro2::{TokenStream, TokenTree};
use syn::buffer::Cursor;
use syn::parse::{ParseStream, Parser};

use super::Size;
use super::parse::{Arm, Frag, Loc, Op};
use super::tokens::{self, Tok};
use crate::resources::meter::{Exhausted, Limit, Meter, Unit};

/// A matched fragment: its kind, its tokens and their size.
#[derive(Debug)]
pub(crate) struct Fragment {
    pub frag: Frag,
    pub tokens: TokenStream,
    pub size: Size,
}

/// What a variable matched: one fragment, or one match per repetition.
#[derive(Debug, Clone)]
pub(crate) enum Match {
    Single(Rc<Fragment>),
    Seq(Vec<Match>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MatchError {
    /// This arm does not match; the next one may.
    NoMatch,
    /// rustc would report a local ambiguity.
    Ambiguous,
    /// A fragment started but did not parse: rustc stops with an error.
    Fragment(Frag),
    /// A budget of the expansion ran out.
    Budget(Exhausted),
}

/// The budget and settings of one expansion.
pub(crate) struct MatchCx {
    /// Steps: each step of each thread, each location the epsilon moves visit, each token
    /// a fragment takes.
    pub fuel: Meter,
    /// Nested groups being matched.
    pub depth: u32,
}

/// Delimited groups of a matcher nested in one another, as far as the matcher follows them.
pub(crate) const GROUP_DEPTH: Limit = Limit::new("macro matcher group nesting", Unit::Levels, 256);

impl MatchCx {
    fn spend(&mut self, n: u64) -> Result<(), MatchError> {
        self.fuel.charge(n).map_err(MatchError::Budget)
    }
}

enum Ev {
    Bind(u16, Rc<Fragment>),
    Enter,
    Iter,
    Exit(u16),
    /// The events of a delimited group's nested match.
    Sub(Events),
}

struct EvNode {
    ev: Ev,
    prev: Events,
}

// A long repetition makes a long chain: drop it iteratively, not by recursion.
impl Drop for EvNode {
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(rc) = prev {
            match Rc::try_unwrap(rc) {
                Ok(mut node) => prev = node.prev.take(),
                Err(_) => break,
            }
        }
    }
}

/// A thread's events, newest first, shared between threads that forked from one another.
type Events = Option<Rc<EvNode>>;

fn push(ev: &Events, e: Ev) -> Events {
    Some(Rc::new(EvNode { ev: e, prev: ev.clone() }))
}

#[derive(Clone)]
struct Thread {
    idx: usize,
    /// Waiting for the separator of the sequence that ends at `idx`.
    at_sep: bool,
    ev: Events,
}

/// Match `input` against each arm in order (all inside one syn buffer of it); the first arm
/// that matches, and each of its variables' matches (indexed like its `var_names`).
pub(crate) fn match_arms(arms: &[Arm], input: TokenStream, cx: &mut MatchCx) -> Result<(usize, Vec<Option<Match>>), MatchError> {
    let mut result = Err(MatchError::NoMatch);
    let parser = |stream: ParseStream| -> syn::Result<()> {
        // The size of each fragment taken so far, by where it starts and ends: every arm tried
        // binds the same input again.
        let mut sizes: Sizes = Vec::new();
        for (i, arm) in arms.iter().enumerate() {
            let fork = stream.fork();
            match match_level(&arm.matcher, &fork, cx, &mut sizes) {
                Ok(ev) => {
                    result = Ok((i, replay(&ev, &arm.seq_vars, arm.var_names.len())));
                    break;
                }
                Err(MatchError::NoMatch) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        Ok(())
    };
    // Arms ran on forks, so parse2 reports the input as unconsumed: not an error here.
    let _ = parser.parse2(input);
    result
}

/// Fragments measured in one invocation: (start, end, size).
type Sizes<'a> = Vec<(Cursor<'a>, Cursor<'a>, Size)>;

fn match_level<'a>(locs: &[Loc], input: &syn::parse::ParseBuffer<'a>, cx: &mut MatchCx, sizes: &mut Sizes<'a>) -> Result<Events, MatchError> {
    if u64::from(cx.depth) >= GROUP_DEPTH.max {
        return Err(MatchError::Budget(Exhausted { limit: GROUP_DEPTH }));
    }
    cx.depth += 1;
    let r = run(locs, input, cx, sizes);
    cx.depth -= 1;
    r
}

/// The inside of the delimited group at `input`, sharing its buffer.
fn enter<'a>(input: &syn::parse::ParseBuffer<'a>, d: proc_macro2::Delimiter) -> syn::Result<syn::parse::ParseBuffer<'a>> {
    use proc_macro2::Delimiter;
    let content;
    match d {
        Delimiter::Parenthesis => {
            syn::parenthesized!(content in input);
        }
        Delimiter::Brace => {
            syn::braced!(content in input);
        }
        Delimiter::Bracket => {
            syn::bracketed!(content in input);
        }
        Delimiter::None => return Err(input.error("an invisible group is not a matcher group")),
    }
    Ok(content)
}

/// Epsilon moves: enter, skip, repeat and leave sequences, until every thread waits for a
/// token (or the end). Also returns how many locations it visited.
fn closure(locs: &[Loc], seeds: Vec<Thread>, seen: &mut Seen) -> (Vec<Thread>, u64) {
    let mut out = Vec::new();
    seen.clear();
    let mut stack: Vec<Thread> = seeds.into_iter().rev().collect();
    let mut visited = 0u64;
    while let Some(t) = stack.pop() {
        visited += 1;
        if !seen.insert(t.idx, t.at_sep) {
            continue;
        }
        if t.at_sep {
            out.push(t);
            continue;
        }
        match &locs[t.idx] {
            Loc::SeqStart { seq, op, end } => {
                let entered = push(&t.ev, Ev::Enter);
                if *op != Op::OneOrMore {
                    stack.push(Thread { idx: end + 1, at_sep: false, ev: push(&entered, Ev::Exit(*seq)) });
                }
                stack.push(Thread { idx: t.idx + 1, at_sep: false, ev: push(&entered, Ev::Iter) });
            }
            Loc::SeqEnd { seq, op, sep, start } => {
                stack.push(Thread { idx: t.idx + 1, at_sep: false, ev: push(&t.ev, Ev::Exit(*seq)) });
                if *op != Op::ZeroOrOne {
                    match sep {
                        Some(_) => stack.push(Thread { idx: t.idx, at_sep: true, ev: t.ev.clone() }),
                        None => stack.push(Thread { idx: start + 1, at_sep: false, ev: push(&t.ev, Ev::Iter) }),
                    }
                }
            }
            _ => out.push(t),
        }
    }
    (out, visited)
}

/// The (location, at separator) pairs one closure has seen. Few, as a rule: a short list,
/// then (past [`Seen::SMALL`]) a stamp per pair, so that neither costs more than the
/// locations visited, and a step's clearing is constant time.
struct Seen {
    small: Vec<(usize, bool)>,
    /// Stamps, two per location, allocated the first time a closure visits many.
    stamps: Vec<u32>,
    now: u32,
    locs: usize,
    big: bool,
}

impl Seen {
    const SMALL: usize = 16;

    fn new(locs: usize) -> Seen {
        Seen { small: Vec::new(), stamps: Vec::new(), now: 0, locs, big: false }
    }

    fn clear(&mut self) {
        self.small.clear();
        self.big = false;
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamps.fill(0);
            self.now = 1;
        }
    }

    fn insert(&mut self, idx: usize, at_sep: bool) -> bool {
        if !self.big {
            if self.small.contains(&(idx, at_sep)) {
                return false;
            }
            if self.small.len() < Self::SMALL {
                self.small.push((idx, at_sep));
                return true;
            }
            // Many: move to the stamps.
            if self.stamps.is_empty() {
                self.stamps = vec![0; 2 * self.locs];
            }
            self.big = true;
            let now = self.now;
            for &(i, s) in &self.small {
                self.stamps[2 * i + usize::from(s)] = now;
            }
        }
        let slot = &mut self.stamps[2 * idx + usize::from(at_sep)];
        let new = *slot != self.now;
        *slot = self.now;
        new
    }
}

/// The rustc token at `c`, how many token trees it takes, and those token trees.
fn peek(c: Cursor) -> Option<(Tok, usize, Vec<TokenTree>)> {
    let mut tts = Vec::with_capacity(3);
    let mut cur = c;
    while tts.len() < 3 {
        let Some((tt, next)) = cur.token_tree() else { break };
        let punct = matches!(tt, TokenTree::Punct(_));
        tts.push(tt);
        if !punct {
            break;
        }
        cur = next;
    }
    let (tok, n) = tokens::next(&tts, 0)?;
    tts.truncate(n);
    Some((tok, n, tts))
}

fn advance(input: ParseStream, n: usize) {
    let _ = input.step(|c| {
        let mut rest: Cursor = *c;
        for _ in 0..n {
            match rest.token_tree() {
                Some((_, next)) => rest = next,
                None => break,
            }
        }
        Ok(((), rest))
    });
}

/// rustc's `nonterminal_may_begin_with`.
fn may_begin(frag: Frag, t: &Tok) -> bool {
    use proc_macro2::Delimiter;
    match frag {
        Frag::Expr => (tokens::can_begin_expr(t) || matches!(t, Tok::Ident(s) if s == "_")) && !matches!(t, Tok::Ident(s) if s == "let"),
        Frag::Expr2021 => tokens::can_begin_expr(t) && !matches!(t, Tok::Ident(s) if s == "let" || s == "const"),
        Frag::Ty => tokens::can_begin_type(t),
        Frag::Ident => matches!(t, Tok::Ident(s) if s != "_"),
        Frag::Literal => tokens::can_begin_literal(t),
        Frag::Vis => match t {
            Tok::Punct(p) if p == "," => true,
            Tok::Ident(_) => true,
            Tok::Group(Delimiter::None) => true,
            _ => tokens::can_begin_type(t),
        },
        Frag::Block => matches!(t, Tok::Group(Delimiter::Brace | Delimiter::None) | Tok::Lifetime(_)),
        Frag::Path | Frag::Meta => matches!(t, Tok::Ident(_) | Tok::Group(Delimiter::None)) || matches!(t, Tok::Punct(p) if p == "::"),
        Frag::Pat => tokens::can_begin_pattern(t, true),
        Frag::PatParam => tokens::can_begin_pattern(t, false),
        Frag::Lifetime => matches!(t, Tok::Lifetime(_)),
        // The level's end stands for a closing delimiter.
        Frag::Tt | Frag::Item | Frag::Stmt => true,
    }
}

/// A `path` fragment is parsed type-style (`R<u8>::read`) and substituted as one path node,
/// valid in an expression too; written out as tokens it must say `R::<u8>::read` there, which
/// is also valid where a type is expected.
fn turbofish(ts: TokenStream) -> TokenStream {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(tts.len() + 2);
    let mut angle = 0usize;
    for (i, tt) in tts.iter().enumerate() {
        if let TokenTree::Punct(p) = tt {
            match p.as_char() {
                '<' => {
                    let after_ident = matches!(i.checked_sub(1).and_then(|j| tts.get(j)), Some(TokenTree::Ident(_)));
                    if angle == 0 && after_ident {
                        let mut a = proc_macro2::Punct::new(':', proc_macro2::Spacing::Joint);
                        a.set_span(p.span());
                        let mut b = proc_macro2::Punct::new(':', proc_macro2::Spacing::Alone);
                        b.set_span(p.span());
                        out.push(TokenTree::Punct(a));
                        out.push(TokenTree::Punct(b));
                    }
                    angle += 1;
                }
                // `->` inside `Fn(A) -> B` is not a closing angle.
                '>' if !matches!(out.last(), Some(TokenTree::Punct(q)) if q.as_char() == '-' && q.spacing() == proc_macro2::Spacing::Joint) => {
                    angle = angle.saturating_sub(1);
                }
                _ => {}
            }
        }
        out.push(tt.clone());
    }
    out.into_iter().collect()
}

/// The token trees from `start` up to (not including) `end`, at one level.
fn between(start: Cursor, end: Cursor) -> TokenStream {
    let mut out = Vec::new();
    let mut c = start;
    while c < end {
        match c.token_tree() {
            Some((tt, next)) => {
                out.push(tt);
                c = next;
            }
            None => break,
        }
    }
    out.into_iter().collect()
}

/// `let pat (: ty)? (= expr (else block)?)?` without the `;`: rustc's `stmt` fragment.
fn parse_let(input: ParseStream) -> syn::Result<()> {
    input.parse::<syn::Token![let]>()?;
    syn::Pat::parse_single(input)?;
    if input.peek(syn::Token![:]) {
        input.parse::<syn::Token![:]>()?;
        input.parse::<syn::Type>()?;
    }
    if input.peek(syn::Token![=]) {
        input.parse::<syn::Token![=]>()?;
        input.parse::<syn::Expr>()?;
        if input.peek(syn::Token![else]) {
            input.parse::<syn::Token![else]>()?;
            input.parse::<syn::Block>()?;
        }
    }
    Ok(())
}

/// Parse one black-box fragment at `input`; its tokens.
fn parse_fragment(frag: Frag, input: ParseStream, tok: &Tok, n: usize, tts: Vec<TokenTree>) -> Option<TokenStream> {
    match frag {
        Frag::Tt | Frag::Ident | Frag::Lifetime => {
            advance(input, n);
            return Some(tts.into_iter().collect());
        }
        Frag::Literal => {
            // `-`? literal (or `true` / `false`, or a fragment an outer expansion made).
            if matches!(tok, Tok::Punct(p) if p == "-") {
                let start = input.cursor();
                let (_, next) = start.token_tree()?;
                let (lit, after) = next.token_tree()?;
                if !matches!(lit, TokenTree::Literal(_)) {
                    return None;
                }
                let out = between(start, after);
                advance(input, 2);
                return Some(out);
            }
            advance(input, n);
            return Some(tts.into_iter().collect());
        }
        _ => {}
    }
    let start = input.cursor();
    let ok = match frag {
        Frag::Expr | Frag::Expr2021 => input.parse::<syn::Expr>().is_ok(),
        Frag::Ty => input.parse::<syn::Type>().is_ok(),
        Frag::Pat => syn::Pat::parse_multi_with_leading_vert(input).is_ok(),
        Frag::PatParam => syn::Pat::parse_single(input).is_ok(),
        Frag::Path => {
            // A type path may end in parenthesized arguments (`FnMut(St::Item) -> U`), which
            // syn reads only as a trait bound.
            use syn::parse::discouraged::Speculative;
            let fork = input.fork();
            match fork.parse::<syn::TraitBound>() {
                Ok(b) if b.lifetimes.is_none() && matches!(b.modifier, syn::TraitBoundModifier::None) && b.paren_token.is_none() => {
                    input.advance_to(&fork);
                    true
                }
                _ => input.parse::<syn::Path>().is_ok(),
            }
        }
        Frag::Meta => input.parse::<syn::Meta>().is_ok(),
        Frag::Vis => input.parse::<syn::Visibility>().is_ok(),
        Frag::Block => input.parse::<syn::Block>().is_ok(),
        Frag::Item => input.parse::<syn::Item>().is_ok(),
        Frag::Stmt => {
            if input.peek(syn::Token![;]) {
                // `;` alone is an (empty) statement.
                input.parse::<syn::Token![;]>().is_ok()
            } else if input.peek(syn::Token![let]) {
                parse_let(input).is_ok()
            } else if input.fork().parse::<syn::Item>().is_ok() {
                input.parse::<syn::Item>().is_ok()
            } else {
                input.parse::<syn::Expr>().is_ok()
            }
        }
        Frag::Tt | Frag::Ident | Frag::Lifetime | Frag::Literal => unreachable!(),
    };
    ok.then(|| unwrap_invisible(between(start, input.cursor())))
}

/// A fragment that is exactly one invisible group (a fragment an outer expansion made,
/// matched again): its inside, as rustc passes the same node on rather than nesting it.
fn unwrap_invisible(ts: TokenStream) -> TokenStream {
    let mut it = ts.clone().into_iter();
    match (it.next(), it.next()) {
        (Some(TokenTree::Group(g)), None) if g.delimiter() == proc_macro2::Delimiter::None => g.stream(),
        _ => ts,
    }
}

fn run<'a>(locs: &[Loc], input: &syn::parse::ParseBuffer<'a>, cx: &mut MatchCx, sizes: &mut Sizes<'a>) -> Result<Events, MatchError> {
    let mut threads = vec![Thread { idx: 0, at_sep: false, ev: None }];
    let mut seen = Seen::new(locs.len());
    loop {
        let (threads_now, visited) = closure(locs, std::mem::take(&mut threads), &mut seen);
        cx.spend(threads_now.len() as u64 + visited + 1)?;
        let Some((tok, n, tts)) = peek(input.cursor()) else {
            let mut done = threads_now.iter().filter(|t| !t.at_sep && matches!(locs[t.idx], Loc::Eof));
            let first = done.next();
            if done.next().is_some() {
                return Err(MatchError::Ambiguous);
            }
            return first.map(|t| t.ev.clone()).ok_or(MatchError::NoMatch);
        };
        let mut next = Vec::new();
        let mut bb: Vec<(Thread, Frag, u16)> = Vec::new();
        for t in threads_now {
            if t.at_sep {
                if let Loc::SeqEnd { sep: Some(s), start, .. } = &locs[t.idx]
                    && s.0 == tok
                {
                    next.push(Thread { idx: start + 1, at_sep: false, ev: push(&t.ev, Ev::Iter) });
                }
                continue;
            }
            match &locs[t.idx] {
                Loc::Tok(p) => {
                    if p.0 == tok {
                        next.push(Thread { idx: t.idx + 1, ..t });
                    }
                }
                Loc::Group(d, inner) => {
                    if let Tok::Group(gd) = &tok
                        && gd == d
                    {
                        let fork = input.fork();
                        let Ok(content) = enter(&fork, *d) else { continue };
                        match match_level(inner, &content, cx, sizes) {
                            Ok(sub) => next.push(Thread { idx: t.idx + 1, at_sep: false, ev: push(&t.ev, Ev::Sub(sub)) }),
                            Err(MatchError::NoMatch) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Loc::Var { var, frag } => {
                    if may_begin(*frag, &tok) {
                        bb.push((t.clone(), *frag, *var));
                    }
                }
                Loc::Eof => {}
                Loc::SeqStart { .. } | Loc::SeqEnd { .. } => unreachable!("closure resolves sequences"),
            }
        }
        match (next.len(), bb.len()) {
            (0, 0) => return Err(MatchError::NoMatch),
            (_, 0) => {
                advance(input, n);
                threads = next;
            }
            (0, 1) => {
                let (t, frag, var) = bb.pop().expect("one");
                let start = input.cursor();
                // A token or two that are not a group (`tt`, `ident`, `lifetime`): measured
                // from the tokens at hand.
                let leaves = (!matches!(tok, Tok::Group(_))).then(|| Size { tokens: n as u64, bytes: tts.iter().map(tokens::leaf_bytes).sum() });
                let mut tokens = parse_fragment(frag, input, &tok, n, tts).ok_or(MatchError::Fragment(frag))?;
                // What the fragment took is work (the parser walked it), and its size is what
                // each use of it in the transcription adds to the output.
                let exhausted = || MatchError::Budget(Exhausted { limit: cx.fuel.limit() });
                let end = input.cursor();
                let known = sizes.iter().find(|(s, e, _)| *s == start && *e == end).map(|x| x.2);
                let mut size = match (leaves, known) {
                    (Some(size), _) if matches!(frag, Frag::Tt | Frag::Ident | Frag::Lifetime) => size,
                    (_, Some(size)) => size,
                    _ => {
                        let size = tokens::measure_between(start, Some(end), cx.fuel.remaining()).ok_or_else(exhausted)?;
                        sizes.push((start, end, size));
                        size
                    }
                };
                if frag == Frag::Path {
                    tokens = turbofish(tokens);
                    // With the `::`s it may add (a path is short).
                    size = tokens::measure(&tokens, cx.fuel.remaining()).ok_or_else(exhausted)?;
                }
                cx.spend(size.tokens)?;
                let f = Rc::new(Fragment { frag, tokens, size });
                threads = vec![Thread { idx: t.idx + 1, at_sep: false, ev: push(&t.ev, Ev::Bind(var, f)) }];
            }
            _ => return Err(MatchError::Ambiguous),
        }
    }
}

/// The events in order (oldest first), groups' events inlined.
fn flatten<'a>(ev: &'a Events, out: &mut Vec<&'a Ev>) {
    let mut list = Vec::new();
    let mut cur = ev.as_ref();
    while let Some(node) = cur {
        list.push(node);
        cur = node.prev.as_ref();
    }
    for node in list.into_iter().rev() {
        match &node.ev {
            Ev::Sub(sub) => flatten(sub, out),
            e => out.push(e),
        }
    }
}

/// Build each variable's match from a successful thread's events.
fn replay(ev: &Events, seq_vars: &[Vec<u16>], nvars: usize) -> Vec<Option<Match>> {
    let mut order = Vec::new();
    flatten(ev, &mut order);
    let mut root: Vec<Option<Match>> = vec![None; nvars];
    // Each open sequence: its iterations, each a list of (variable, match).
    let mut stack: Vec<Vec<Vec<(u16, Match)>>> = Vec::new();
    for e in order {
        match e {
            Ev::Bind(v, f) => {
                let m = Match::Single(f.clone());
                match stack.last_mut().and_then(|s| s.last_mut()) {
                    Some(iter) => iter.push((*v, m)),
                    None => root[*v as usize] = Some(m),
                }
            }
            Ev::Enter => stack.push(Vec::new()),
            Ev::Iter => {
                if let Some(s) = stack.last_mut() {
                    s.push(Vec::new());
                }
            }
            Ev::Exit(seq) => {
                let Some(mut iters) = stack.pop() else { continue };
                for &v in &seq_vars[*seq as usize] {
                    let items: Vec<Match> = iters
                        .iter_mut()
                        .map(|it| match it.iter().position(|(x, _)| *x == v) {
                            Some(p) => it.swap_remove(p).1,
                            None => Match::Seq(Vec::new()),
                        })
                        .collect();
                    let m = Match::Seq(items);
                    match stack.last_mut().and_then(|s| s.last_mut()) {
                        Some(iter) => iter.push((v, m)),
                        None => root[v as usize] = Some(m),
                    }
                }
            }
            Ev::Sub(_) => unreachable!("flattened"),
        }
    }
    root
}
