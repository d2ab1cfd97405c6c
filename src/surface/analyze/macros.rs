//! `macro_rules!` in a crate: where each macro is visible, what an invocation names, and its
//! expansion parsed for the position it stands in.
//!
//! Scoping follows rustc:
//! - **Textual scope** ([`Textual`]): a `macro_rules!` is visible after its definition, in the
//!   rest of its module and in the modules declared after it; it stays visible after a
//!   `#[macro_use] mod` that defines it. The loader carries the scope in source order and
//!   stores, with every item, the scope it saw.
//! - **Path scope**: `#[macro_export]` macros live at the crate root (`crate::m!`,
//!   `$crate::m!`, and other crates' `dep::m!`); `use` brings a macro into a module's
//!   namespace (`pub(crate) use m;` of a textual macro, `use dep::m;`, `use crate::m;`).
//! - **`#[macro_use] extern crate dep;`** puts dep's exported macros in every module.
//!
//! A dependency's macros come with its [`Exports`]: the text of their arms, the edition and
//! the marker that `$crate` becomes (an extern name under which the engine passes that
//! crate's exports to every crate that can see its macros), so `$crate::x` resolves in the
//! defining crate as rustc's hygiene makes it do.
//!
//! Expansion is bounded: a [`Budget`] shared by the crate's expansions and a recursion limit
//! (the crate's `#![recursion_limit]`, default 128 as in rustc).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};

use super::mbe::{Budget, DefError, Edition, ExpandError, MacroRules};
use super::{ExportedMacro, Exports};
use crate::surface::model::Expansion;

/// A `macro_rules!` definition, of this crate or of a dependency.
pub(crate) struct MacroDefn {
    pub name: String,
    pub rules: Result<MacroRules, DefError>,
    /// What `$crate` becomes: `crate` here, the defining crate's marker elsewhere.
    pub dollar_crate: Vec<TokenTree>,
    /// How other crates get it: `None` for this crate's own macros until exported.
    pub exported: Option<ExportedMacro>,
    /// The arms as written (for exporting a macro of this crate).
    pub body: TokenStream,
    pub edition: Edition,
    pub local_inner: bool,
    /// Where it is defined: crate, version, file and line.
    pub origin: Option<Rc<Expansion>>,
}

impl MacroDefn {
    /// A definition of this crate.
    pub fn local(name: String, body: TokenStream, edition: Edition, local_inner: bool) -> MacroDefn {
        let rules = MacroRules::parse(body.clone(), edition, local_inner);
        MacroDefn {
            name,
            rules,
            dollar_crate: vec![TokenTree::Ident(Ident::new("crate", Span::call_site()))],
            exported: None,
            body,
            edition,
            local_inner,
            origin: None,
        }
    }

    /// The same definition, defined at `file:line` of the crate being analysed.
    pub fn at(mut self, ex: &Expander, file: &str, line: usize) -> MacroDefn {
        let (krate, version) = ex.crate_id.borrow().clone();
        self.origin = Some(Rc::new(Expansion { name: self.name.clone(), krate, version, file: file.to_string(), line: line.max(1) as u32 }));
        self
    }

    /// How another crate sees this macro: `marker` is what `$crate` becomes there.
    pub fn export(&self, marker: &str) -> ExportedMacro {
        match &self.exported {
            Some(e) => e.clone(),
            None => ExportedMacro {
                rules: self.body.to_string(),
                krate: marker.to_string(),
                edition: self.edition,
                local_inner: self.local_inner,
                origin: self.origin.as_deref().cloned(),
            },
        }
    }
}

pub(crate) type MacroRef = Rc<MacroDefn>;

/// The textual scope: the `macro_rules!` visible at a point, innermost first. Persistent, so
/// every item can keep the scope it saw at the cost of one pointer.
#[derive(Clone, Default)]
pub(crate) struct Textual(Option<Rc<TextualNode>>);

pub(crate) struct TextualNode {
    name: String,
    def: MacroRef,
    prev: Textual,
}

// A crate with thousands of macros makes a long chain: drop it iteratively.
impl Drop for TextualNode {
    fn drop(&mut self) {
        let mut prev = self.prev.0.take();
        while let Some(rc) = prev {
            match Rc::try_unwrap(rc) {
                Ok(mut node) => prev = node.prev.0.take(),
                Err(_) => break,
            }
        }
    }
}

impl Textual {
    pub fn with(&self, name: String, def: MacroRef) -> Textual {
        Textual(Some(Rc::new(TextualNode { name, def, prev: self.clone() })))
    }

    pub fn get(&self, name: &str) -> Option<MacroRef> {
        let mut cur = self.0.as_ref();
        while let Some(n) = cur {
            if n.name == name {
                return Some(n.def.clone());
            }
            cur = n.prev.0.as_ref();
        }
        None
    }
}

/// Counts, for the analysis report.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stats {
    pub expanded: u64,
    pub failed: u64,
}

/// The crate-wide macro state, shared by the loader, the resolver and the visitor.
pub(crate) struct Expander<'a> {
    deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    pub edition: Edition,
    budget: RefCell<Budget>,
    pub recursion_limit: Cell<usize>,
    dep_cache: RefCell<HashMap<(String, String), Option<MacroRef>>>,
    /// `#[macro_export]` macros: the crate root's macro namespace.
    pub exported: RefCell<BTreeMap<String, MacroRef>>,
    /// `#[macro_use] extern crate`.
    pub macro_use: RefCell<HashMap<String, MacroRef>>,
    /// Per module: textual macros `use`d into its namespace (`pub(crate) use m;`), with
    /// whether the `use` is `pub`.
    pub module_macros: RefCell<Vec<HashMap<String, (MacroRef, bool)>>>,
    pub stats: RefCell<Stats>,
    /// The package's build-script evaluation: the files `include!` may read from OUT_DIR.
    pub build: Option<&'a crate::surface::buildscript::Evaluation>,
    /// The crate being analysed and its version (where its macros are defined).
    pub crate_id: RefCell<(String, String)>,
}

/// The default `#![recursion_limit]`.
pub(crate) const DEFAULT_RECURSION_LIMIT: usize = 128;
/// The most velaris follows, whatever a crate asks for.
pub(crate) const MAX_RECURSION_LIMIT: usize = 1024;

impl<'a> Expander<'a> {
    pub fn new(deps: &'a BTreeMap<String, std::sync::Arc<Exports>>, edition: Edition) -> Self {
        Expander {
            deps,
            edition,
            // Enough for the largest real crates several times over; a crate that exhausts
            // it gets `unanalyzed` at the invocation that did.
            budget: RefCell::new(Budget { steps: 400_000_000, tokens: 40_000_000 }),
            recursion_limit: Cell::new(DEFAULT_RECURSION_LIMIT),
            dep_cache: RefCell::new(HashMap::new()),
            exported: RefCell::new(BTreeMap::new()),
            macro_use: RefCell::new(HashMap::new()),
            module_macros: RefCell::new(Vec::new()),
            stats: RefCell::new(Stats::default()),
            build: None,
            crate_id: RefCell::new((String::new(), String::new())),
        }
    }

    pub fn deps(&self) -> &'a BTreeMap<String, std::sync::Arc<Exports>> {
        self.deps
    }

    /// The macro a dependency exports at `path` (`select`, `macros::m`), parsed once.
    pub fn dep_macro(&self, krate: &str, path: &str) -> Option<MacroRef> {
        let key = (krate.to_string(), path.to_string());
        if let Some(hit) = self.dep_cache.borrow().get(&key) {
            return hit.clone();
        }
        let def = self.deps.get(krate).and_then(|ex| ex.macros.get(path)).map(|em| {
            let body: TokenStream = em.rules.parse().unwrap_or_default();
            let marker = if em.krate.is_empty() { krate.to_string() } else { em.krate.clone() };
            let dollar_crate = match syn::parse_str::<Ident>(&marker) {
                Ok(id) => vec![TokenTree::Ident(id)],
                Err(_) => vec![TokenTree::Ident(Ident::new("crate", Span::call_site()))],
            };
            let rules = MacroRules::parse(body.clone(), em.edition, em.local_inner);
            let name = path.rsplit("::").next().unwrap_or(path).to_string();
            let origin = em.origin.clone().map(|o| Rc::new(Expansion { name: name.clone(), ..o }));
            Rc::new(MacroDefn {
                name,
                rules,
                dollar_crate,
                exported: Some(em.clone()),
                body,
                edition: em.edition,
                local_inner: em.local_inner,
                origin,
            })
        });
        self.dep_cache.borrow_mut().insert(key, def.clone());
        def
    }

    /// Every macro exported at the root of dependency `krate` (for `#[macro_use]`).
    pub fn dep_root_macros(&self, krate: &str) -> Vec<(String, MacroRef)> {
        let Some(ex) = self.deps.get(krate) else { return Vec::new() };
        ex.macros
            .keys()
            .filter(|k| !k.contains("::"))
            .filter_map(|k| self.dep_macro(krate, k).map(|d| (k.clone(), d)))
            .collect()
    }

    /// Expand one invocation of `def`.
    pub fn expand(&self, def: &MacroDefn, mac: &syn::Macro) -> Result<TokenStream, ExpandFailure> {
        let rules = def.rules.as_ref().map_err(|e| ExpandFailure::Definition(e.clone()))?;
        let call_site = call_site(&mac.path);
        let mut budget = self.budget.borrow_mut();
        let r = rules.expand(&mac.tokens, call_site, &def.dollar_crate, &mut budget).map_err(ExpandFailure::Expand);
        let mut stats = self.stats.borrow_mut();
        match &r {
            Ok(_) => stats.expanded += 1,
            Err(e) => {
                stats.failed += 1;
                if std::env::var_os("VELARIS_DEBUG_MACROS").is_some() {
                    eprintln!("macro `{}!` not expanded: {e}\n  input: {}", def.name, mac.tokens);
                }
            }
        }
        r
    }

    pub fn ensure_module(&self, m: usize) {
        let mut mm = self.module_macros.borrow_mut();
        if mm.len() <= m {
            mm.resize_with(m + 1, HashMap::new);
        }
    }

    pub fn module_macro(&self, m: usize, name: &str) -> Option<(MacroRef, bool)> {
        self.module_macros.borrow().get(m).and_then(|t| t.get(name)).cloned()
    }
}

/// An expander with no dependencies, for unit tests (leaked: tests are short-lived).
#[cfg(test)]
pub(crate) fn test_expander() -> &'static Expander<'static> {
    let deps: &'static BTreeMap<String, std::sync::Arc<Exports>> = Box::leak(Box::new(BTreeMap::new()));
    Box::leak(Box::new(Expander::new(deps, Edition::E2021)))
}

/// Why an invocation of a known macro was not expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandFailure {
    #[error("its definition is not understood: {0}")]
    Definition(DefError),
    #[error("{0}")]
    Expand(ExpandError),
    #[error("the recursion limit ({0}) was reached")]
    Recursion(usize),
    #[error("its expansion does not parse as {what}: {error}")]
    Parse { what: &'static str, error: String },
}

/// Where the tokens of an expansion are placed: the invocation's first path token.
pub(crate) fn call_site(path: &syn::Path) -> Span {
    match &path.leading_colon {
        Some(c) => c.spans[0],
        None => path.segments.first().map_or_else(Span::call_site, |s| s.ident.span()),
    }
}

/// The name of `#[macro_export]` etc. on a `macro_rules!`: (exported, local_inner_macros).
pub(crate) fn export_attrs(attrs: &[syn::Attribute]) -> (bool, bool) {
    for a in attrs {
        if a.path().is_ident("macro_export") {
            let local_inner = match &a.meta {
                syn::Meta::List(l) => l.tokens.to_string().contains("local_inner_macros"),
                _ => false,
            };
            return (true, local_inner);
        }
    }
    (false, false)
}

/// Whether `#[macro_use]` is among `attrs`; `Some(names)` for `#[macro_use(a, b)]`.
pub(crate) fn macro_use(attrs: &[syn::Attribute]) -> Option<Option<Vec<String>>> {
    for a in attrs {
        if a.path().is_ident("macro_use") {
            return Some(match &a.meta {
                syn::Meta::List(l) => Some(
                    l.tokens
                        .clone()
                        .into_iter()
                        .filter_map(|t| match t {
                            TokenTree::Ident(i) => Some(i.to_string()),
                            _ => None,
                        })
                        .collect(),
                ),
                _ => None,
            });
        }
    }
    None
}

/// `#![recursion_limit = "N"]` of the crate root, capped.
pub(crate) fn recursion_limit(attrs: &[syn::Attribute]) -> usize {
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta
            && nv.path.is_ident("recursion_limit")
            && let syn::Expr::Lit(l) = &nv.value
            && let syn::Lit::Str(s) = &l.lit
            && let Ok(n) = s.value().trim().parse::<usize>()
        {
            return n.clamp(1, MAX_RECURSION_LIMIT);
        }
    }
    DEFAULT_RECURSION_LIMIT
}

/// What tokens of an invocation that is not expanded hide from the analysis: a `mod x;`
/// (a whole file) or an `include!`.
pub(crate) fn hidden_code(ts: &TokenStream) -> Option<String> {
    let tts: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => {
                if let Some(h) = hidden_code(&g.stream()) {
                    return Some(h);
                }
            }
            TokenTree::Ident(id) if id == "mod" => {
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Punct(p))) = (tts.get(i + 1), tts.get(i + 2))
                    && p.as_char() == ';'
                {
                    return Some(format!("`mod {name};`"));
                }
            }
            TokenTree::Ident(id) if id == "include" => {
                if matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
                    return Some("`include!`".to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether a macro path names the `paste` crate's `paste!` (`paste!`, `paste::paste!`, and
/// its older names `paste::item!` / `paste::expr!`), or the same in `pastey`, its maintained
/// fork with the same syntax; expanded by its exact rule.
pub(crate) fn is_paste(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [n] => n == "paste",
        [k, n] => matches!(k.as_str(), "paste" | "pastey") && matches!(n.as_str(), "paste" | "item" | "expr"),
        _ => false,
    }
}

/// `paste!`'s rule: every `[< .. >]` becomes one identifier, the concatenation of the
/// identifiers, literals and `_`s inside, each optionally changed by `:lower`, `:upper`,
/// `:snake` or `:camel`.
pub(crate) fn paste(ts: &TokenStream) -> Result<TokenStream, String> {
    use proc_macro2::{Delimiter, Group};
    let mut out = Vec::new();
    for tt in ts.clone() {
        match tt {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let is_paste = matches!(inner.first(), Some(TokenTree::Punct(p)) if p.as_char() == '<')
                    && matches!(inner.last(), Some(TokenTree::Punct(p)) if p.as_char() == '>')
                    && inner.len() >= 3;
                // `#[..]`, or `#![..]`.
                let after_hash = match out.as_slice() {
                    [.., TokenTree::Punct(h), TokenTree::Punct(b)] if h.as_char() == '#' && b.as_char() == '!' => true,
                    [.., TokenTree::Punct(h)] => h.as_char() == '#',
                    _ => false,
                };
                if is_paste {
                    out.push(TokenTree::Ident(paste_ident(&inner[1..inner.len() - 1], g.span())?));
                } else if let Some(doc) = after_hash.then(|| paste_doc(&inner)).flatten() {
                    let mut ng = Group::new(Delimiter::Bracket, doc);
                    ng.set_span(g.span());
                    out.push(TokenTree::Group(ng));
                } else {
                    let mut ng = Group::new(Delimiter::Bracket, paste(&g.stream())?);
                    ng.set_span(g.span());
                    out.push(TokenTree::Group(ng));
                }
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), paste(&g.stream())?);
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            other => out.push(other),
        }
    }
    Ok(out.into_iter().collect())
}

/// paste's documentation rule: in `#[doc = a b c]`, the parts after `=` (strings, identifiers,
/// `[< >]` pastes, other literals) are joined into one string. `None`: not such an attribute,
/// or one with other parts, which paste leaves alone.
fn paste_doc(inner: &[TokenTree]) -> Option<TokenStream> {
    let (TokenTree::Ident(name), TokenTree::Punct(eq)) = (inner.first()?, inner.get(1)?) else { return None };
    if name != "doc" || eq.as_char() != '=' || inner.len() < 4 {
        return None;
    }
    let mut text = String::new();
    for part in &inner[2..] {
        match part {
            TokenTree::Literal(l) => match syn::parse_str::<syn::LitStr>(&l.to_string()) {
                Ok(s) => text.push_str(&s.value()),
                Err(_) => text.push_str(&l.to_string()),
            },
            TokenTree::Ident(id) => text.push_str(&id.to_string()),
            TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket => {
                let seg: Vec<TokenTree> = g.stream().into_iter().collect();
                if seg.len() < 3 {
                    return None;
                }
                text.push_str(&paste_ident(&seg[1..seg.len() - 1], g.span()).ok()?.to_string());
            }
            // An invisible group from a transcribed fragment (`$Target`): its text, a string's
            // value.
            TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::None => {
                let inner = g.stream().to_string();
                match syn::parse_str::<syn::LitStr>(&inner) {
                    Ok(l) => text.push_str(&l.value()),
                    Err(_) => text.push_str(&inner),
                }
            }
            // Anything else (`concat!(..)`, `include_str!`): not paste's rule; left as it is.
            _ => return None,
        }
    }
    let mut lit = proc_macro2::Literal::string(&text);
    lit.set_span(eq.span());
    Some([inner[0].clone(), inner[1].clone(), TokenTree::Literal(lit)].into_iter().collect())
}

fn paste_ident(parts: &[TokenTree], span: Span) -> Result<Ident, String> {
    let mut name = String::new();
    let mut i = 0;
    while i < parts.len() {
        let mut piece = match &parts[i] {
            TokenTree::Ident(id) => id.to_string().trim_start_matches("r#").to_string(),
            TokenTree::Literal(l) => {
                let s = l.to_string();
                s.strip_prefix('"').and_then(|x| x.strip_suffix('"')).map_or(s.clone(), str::to_string)
            }
            TokenTree::Punct(p) if p.as_char() == '_' => "_".to_string(),
            TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::None => g.stream().to_string().replace(' ', ""),
            other => return Err(format!("paste!: unexpected `{other}` inside `[< >]`")),
        };
        i += 1;
        // `:lower` and friends apply to the segment before them.
        while let (Some(TokenTree::Punct(c)), Some(TokenTree::Ident(m))) = (parts.get(i), parts.get(i + 1)) {
            if c.as_char() != ':' {
                break;
            }
            piece = match m.to_string().as_str() {
                "lower" => piece.to_lowercase(),
                "upper" => piece.to_uppercase(),
                "snake" => snake(&piece),
                "camel" => camel(&piece),
                other => return Err(format!("paste!: unknown modifier `:{other}`")),
            };
            i += 2;
        }
        name.push_str(&piece);
    }
    syn::parse_str::<Ident>(&name).map(|mut id| {
        id.set_span(span);
        id
    })
    .map_err(|_| format!("paste!: `{name}` is not an identifier"))
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() && i > 0 && !out.ends_with('_') {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

fn camel(s: &str) -> String {
    s.split('_').filter(|p| !p.is_empty()).map(|p| {
        let mut c = p.chars();
        c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
    }).collect()
}

/// Parse an expansion with `p`; if that fails, once more with the block-like fragments at
/// statement starts unwrapped (see [`unwrap_block_like`]).
fn parse_expansion<T>(ts: TokenStream, p: impl Fn(syn::parse::ParseStream) -> syn::Result<T>) -> syn::Result<T> {
    match syn::parse::Parser::parse2(&p, ts.clone()) {
        Ok(v) => Ok(v),
        Err(e) => {
            let mut changed = false;
            let again = unwrap_block_like(ts, &mut changed);
            if !changed {
                return Err(e);
            }
            syn::parse::Parser::parse2(&p, again).map_err(|_| e)
        }
    }
}

/// Where rustc parses an interpolated expression that is block-like (`{ .. }`, `if`, `match`,
/// `loop`, `while`, `for`, `unsafe { .. }`, a labelled loop) at the start of a statement, it
/// ends the statement without a `;`, as written code does: `$body $i += 1;` with
/// `$body = { .. }` is two statements. syn sees the invisible group and asks for a `;`. This
/// unwraps such groups (in every nested group too) where the next token cannot continue the
/// expression (the end, `;`, an identifier, a literal, a `{ }` or invisible group, `#`, a
/// label), which parses as rustc does.
pub(crate) fn unwrap_block_like(ts: TokenStream, changed: &mut bool) -> TokenStream {
    unwrap_in(ts, true, changed)
}

/// `stmts`: the stream is a statement list (the expansion itself, or a `{ }` body); inside
/// parentheses and brackets nothing starts a statement, but braces within may.
fn unwrap_in(ts: TokenStream, stmts: bool, changed: &mut bool) -> TokenStream {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(tts.len());
    let mut boundary = stmts;
    // An outer attribute (`#[cfg(..)]`) at a statement start keeps it one.
    let mut attr = false;
    for (i, tt) in tts.iter().enumerate() {
        let after_attr = std::mem::take(&mut attr);
        match tt {
            // The arguments of a macro call are its input, passed on as they are: a fragment
            // in them stays one opaque piece, as rustc keeps it.
            TokenTree::Group(g) if matches!(out.last(), Some(TokenTree::Punct(p)) if p.as_char() == '!') && g.delimiter() != Delimiter::None => {
                boundary = false;
                out.push(tt.clone());
            }
            TokenTree::Group(g) => {
                let inner = unwrap_in(g.stream(), g.delimiter() == Delimiter::Brace, changed);
                if g.delimiter() == Delimiter::None && boundary && ends_statement(tts.get(i + 1)) && is_block_like(&inner) {
                    *changed = true;
                    out.extend(inner);
                    boundary = true;
                    continue;
                }
                boundary = g.delimiter() == Delimiter::Brace || (after_attr && g.delimiter() == Delimiter::Bracket);
                let mut ng = Group::new(g.delimiter(), inner);
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            TokenTree::Punct(p) => {
                attr = boundary && p.as_char() == '#';
                boundary = p.as_char() == ';' || attr;
                out.push(tt.clone());
            }
            _ => {
                boundary = false;
                out.push(tt.clone());
            }
        }
    }
    out.into_iter().collect()
}

fn ends_statement(next: Option<&TokenTree>) -> bool {
    match next {
        None | Some(TokenTree::Ident(_)) | Some(TokenTree::Literal(_)) => true,
        Some(TokenTree::Group(g)) => matches!(g.delimiter(), Delimiter::Brace | Delimiter::None),
        Some(TokenTree::Punct(p)) => matches!(p.as_char(), ';' | '#' | '\''),
    }
}

fn is_block_like(ts: &TokenStream) -> bool {
    let first = ts.clone().into_iter().next();
    let plausible = match &first {
        Some(TokenTree::Group(g)) => g.delimiter() == Delimiter::Brace,
        Some(TokenTree::Ident(i)) => matches!(i.to_string().as_str(), "if" | "match" | "loop" | "while" | "for" | "unsafe"),
        Some(TokenTree::Punct(p)) => p.as_char() == '\'',
        _ => false,
    };
    plausible
        && matches!(
            syn::parse2::<syn::Expr>(ts.clone()),
            Ok(syn::Expr::Block(_)
                | syn::Expr::If(_)
                | syn::Expr::Match(_)
                | syn::Expr::Loop(_)
                | syn::Expr::While(_)
                | syn::Expr::ForLoop(_)
                | syn::Expr::Unsafe(_))
        )
}

fn parse_all<T>(ts: TokenStream, what: &'static str, f: impl Fn(syn::parse::ParseStream) -> syn::Result<T>) -> Result<Vec<T>, ExpandFailure> {
    parse_expansion(
        ts,
        |input: syn::parse::ParseStream| {
            let mut out = Vec::new();
            while !input.is_empty() {
                // A stray `;` after an item-position expansion is allowed.
                if input.peek(syn::Token![;]) {
                    input.parse::<syn::Token![;]>()?;
                    continue;
                }
                out.push(f(input)?);
            }
            Ok(out)
        },
    )
    .map_err(|e| ExpandFailure::Parse { what, error: e.to_string() })
}

pub(crate) fn parse_items(ts: TokenStream) -> Result<Vec<syn::Item>, ExpandFailure> {
    parse_all(ts, "items", |i| i.parse())
}

pub(crate) fn parse_impl_items(ts: TokenStream) -> Result<Vec<syn::ImplItem>, ExpandFailure> {
    parse_all(ts, "impl items", |i| i.parse())
}

pub(crate) fn parse_trait_items(ts: TokenStream) -> Result<Vec<syn::TraitItem>, ExpandFailure> {
    parse_all(ts, "trait items", |i| i.parse())
}

pub(crate) fn parse_foreign_items(ts: TokenStream) -> Result<Vec<syn::ForeignItem>, ExpandFailure> {
    parse_all(ts, "foreign items", |i| i.parse())
}

pub(crate) fn parse_stmts(ts: TokenStream) -> Result<Vec<syn::Stmt>, ExpandFailure> {
    parse_expansion(ts, syn::Block::parse_within)
        .map_err(|e| ExpandFailure::Parse { what: "statements", error: e.to_string() })
}

/// An expansion in expression position: one expression (a trailing `;` is ignored, as rustc
/// does with a warning).
pub(crate) fn parse_expr(ts: TokenStream) -> Result<syn::Expr, ExpandFailure> {
    parse_expansion(ts, |input: syn::parse::ParseStream| {
        let e: syn::Expr = input.parse()?;
        if input.peek(syn::Token![;]) {
            input.parse::<syn::Token![;]>()?;
        }
        Ok(e)
    })
    .map_err(|e| ExpandFailure::Parse { what: "an expression", error: e.to_string() })
}
