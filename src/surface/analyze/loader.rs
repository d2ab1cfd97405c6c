//! From the target root to the module tree of what is compiled.
//!
//! Every file is parsed once (a file reached twice, e.g. by two `#[path]`s, is parsed again:
//! it is compiled twice). Module-level items under a false `#[cfg]` (after `#[cfg_attr]`
//! expansion, which is done in place on them) are dropped here, as are modules whose file
//! starts with a false `#![cfg]`; module-level `cfg_if!` invocations are replaced by the
//! items of their compiled branch, and `include!("literal.rs")` in item position by the
//! included file's items. Nested positions (impl items, statements, expressions, arms, ..)
//! are checked by the visitor as it walks them.

use syn::ext::IdentExt;
use std::collections::HashMap;
use std::rc::Rc;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::Item;

use super::attrs::{self, active};
use super::macros::{self, Expander, MacroDefn, MacroRef, Textual};
use crate::surface::syntax::mbe::Edition;
use super::oracle::CfgEval;
use crate::surface::syntax::paths;
use super::scope::{Ctx, Parts, Resolver, UsePath};
use crate::package::FileTree;
use crate::surface::model::{Capability, Finding, Scope};

pub(crate) type FileId = usize;
pub(crate) type ModId = usize;
pub(crate) const ROOT: ModId = 0;

/// Findings are collected here, already placed in a file.
pub(crate) struct Sink {
    pub scope: Scope,
    pub findings: Vec<Finding>,
    /// The macro whose expansion is being visited: every finding added is from it.
    pub origin: Option<Rc<crate::surface::model::Expansion>>,
}

impl Sink {
    pub fn add(&mut self, capability: Capability, file: &str, span: Span, path: impl Into<String>) {
        self.add_chain(capability, file, span, path, Vec::new());
    }
    /// A finding reached through a dependency's API: `chain` is where it goes (see
    /// [`Finding::chain`]).
    pub fn add_chain(&mut self, capability: Capability, file: &str, span: Span, path: impl Into<String>, chain: Vec<crate::surface::Hop>) {
        let lc = span.start();
        self.findings.push(Finding {
            capability,
            scope: self.scope,
            file: file.to_string(),
            line: (lc.line as u32).max(1),
            column: lc.column as u32 + 1,
            path: path.into(),
            chain,
            expanded_from: self.origin.as_deref().cloned(),
            through_trait: false,
        });
    }
    pub fn add_at(&mut self, capability: Capability, file: &str, line: u32, column: u32, path: impl Into<String>) {
        self.findings.push(Finding {
            capability,
            scope: self.scope,
            file: file.to_string(),
            line: line.max(1),
            column: column.max(1),
            path: path.into(),
            chain: Vec::new(),
            expanded_from: self.origin.as_deref().cloned(),
            through_trait: false,
        });
    }
}

/// An item of a module, the file it was written in, and the `macro_rules!` visible to it.
pub(crate) struct Entry {
    pub file: FileId,
    pub item: Item,
    pub macros: Textual,
    /// The macro whose expansion produced the item, if one did.
    pub origin: Option<Rc<crate::surface::model::Expansion>>,
}

/// A module-level invocation whose macro could not be told while loading (it is named by a
/// path, or through `use`): resolved once the module tree is known.
struct Pending {
    module: ModId,
    file: FileId,
    mac: syn::ItemMacro,
    macros: Textual,
    depth: usize,
}

pub(crate) struct Module {
    pub parent: Option<ModId>,
    /// Names from the crate root, e.g. `["net", "tcp"]`.
    pub path: Vec<String>,
    /// Items, configured-out ones removed; `mod` items are not here (see `children`).
    pub entries: Vec<Entry>,
    /// Child modules by name, with whether they are `pub`.
    pub children: Vec<(String, ModId, bool)>,
    /// Where `mod x;` looks for `x.rs` / `x/mod.rs`.
    pub child_dir: String,
    /// What `#[path]` on a `mod` of this module is relative to.
    pub path_dir: String,
}

pub(crate) struct Loaded {
    /// Package-relative path of each file.
    pub files: Vec<String>,
    pub modules: Vec<Module>,
    /// Module files declared under a false cfg (not loaded).
    pub skipped: Vec<SkippedDecl>,
}

/// Whether a macro path names `cfg_if` (`cfg_if!`, `cfg_if::cfg_if!`) or std's
/// `cfg_select!`: both are expanded by their exact rules, whoever defines them.
pub(crate) fn is_cfg_if(path: &syn::Path) -> bool {
    path.segments.last().is_some_and(|s| s.ident == "cfg_if" || s.ident == "cfg_select")
}

/// The bodies of the arms of a `cfg_select!` that are compiled: the first arm whose
/// predicate holds (`_` always does); an arm whose predicate cannot be evaluated is taken AND
/// the search goes on (fail closed). An arm's body is a `{ .. }` group (an optional `,`
/// after it) or the tokens up to the next `,` (expression position). `Err` when the
/// invocation does not have the shape.
pub(crate) fn cfg_select_branches(ts: TokenStream, cfg: &dyn CfgEval) -> Result<Vec<TokenStream>, ()> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    let mut chosen = Vec::new();
    let mut decided = false;
    while i < toks.len() {
        let mut pred = Vec::new();
        loop {
            match (toks.get(i), toks.get(i + 1)) {
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == '=' && a.spacing() == proc_macro2::Spacing::Joint && b.as_char() == '>' =>
                {
                    i += 2;
                    break;
                }
                (Some(t), _) => {
                    pred.push(t.clone());
                    i += 1;
                }
                (None, _) => return Err(()),
            }
        }
        let body: TokenStream = match toks.get(i) {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                i += 1;
                if matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ',') {
                    i += 1;
                }
                g.stream()
            }
            // A block-like expression (`if .. {} else {}`, `match x {}`, `loop {}`, `unsafe {}`)
            // ends the arm without a comma, as rustc parses it (rusqlite).
            Some(TokenTree::Ident(kw)) if matches!(kw.to_string().as_str(), "if" | "match" | "loop" | "while" | "for" | "unsafe") => {
                let mut body = Vec::new();
                let is_if = kw == "if";
                while let Some(t) = toks.get(i) {
                    i += 1;
                    body.push(t.clone());
                    if matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace) {
                        // `else` continues an `if`: `else { .. }` or `else if ..`.
                        if is_if && matches!(toks.get(i), Some(TokenTree::Ident(e)) if e == "else") {
                            continue;
                        }
                        break;
                    }
                }
                if matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ',') {
                    i += 1;
                }
                body.into_iter().collect()
            }
            Some(_) => {
                let mut body = Vec::new();
                while let Some(t) = toks.get(i) {
                    i += 1;
                    if matches!(t, TokenTree::Punct(p) if p.as_char() == ',') {
                        break;
                    }
                    body.push(t.clone());
                }
                body.into_iter().collect()
            }
            None => return Err(()),
        };
        if pred.is_empty() {
            return Err(());
        }
        if decided {
            continue;
        }
        let wildcard = matches!(pred.as_slice(), [TokenTree::Ident(u)] if u == "_");
        let verdict = if wildcard { Some(true) } else { cfg.eval(&pred.into_iter().collect()) };
        match verdict {
            Some(true) => {
                chosen.push(body);
                decided = true;
            }
            None => chosen.push(body),
            Some(false) => {}
        }
    }
    Ok(chosen)
}

/// From this size on, a file is lexed first and its data tables emptied before it is parsed.
const LARGE_SOURCE: usize = 128 * 1024;

/// Groups of more tokens than this that hold only literals are data tables.
const TABLE_TOKENS: usize = 64;

/// A large file (generated data: encoding tables, Unicode tables) parsed without the syntax
/// trees of its literal tables: every `[..]`, `(..)` or `{..}` group of more than
/// [`TABLE_TOKENS`] tokens that holds nothing but literals, `,`, `-`, `;` and such groups is
/// emptied first. A literal names no path and calls nothing, so nothing the analysis looks
/// for is lost; a group that is a macro's input (after `!`) is kept as it is. `None` when the
/// file does not parse that way (the caller parses it as usual).
fn parse_large(text: &str) -> Option<syn::File> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.starts_with("#!") && !body[2..].trim_start().starts_with('[') {
        return None;
    }
    let ts: TokenStream = body.parse().ok()?;
    syn::parse2(strip_tables(ts)).ok()
}

fn strip_tables(ts: TokenStream) -> TokenStream {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::with_capacity(tts.len());
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => {
                let macro_input = i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '!');
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let stream = if !macro_input && inner.len() > TABLE_TOKENS && inner.iter().all(is_data) {
                    TokenStream::new()
                } else {
                    strip_tables(g.stream())
                };
                let mut ng = proc_macro2::Group::new(g.delimiter(), stream);
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            other => out.push(other.clone()),
        }
    }
    out.into_iter().collect()
}

fn is_data(tt: &TokenTree) -> bool {
    match tt {
        TokenTree::Literal(_) => true,
        TokenTree::Punct(p) => matches!(p.as_char(), ',' | '-' | ';'),
        TokenTree::Group(g) => g.delimiter() != Delimiter::None && g.stream().into_iter().all(|t| is_data(&t)),
        TokenTree::Ident(i) => i == "true" || i == "false",
    }
}

/// Parse a file's text. A file too deeply nested for the analysis threads' stack is
/// `unanalyzed` (see `surface::guard`). What syn does not parse is recovered (older editions'
/// syntax repaired, then item by item, see `recover.rs`); each item that still does not parse
/// is an `unanalyzed` finding at it, and is kept as tokens for the visitor to scan.
pub(crate) fn parse_source(bytes: &[u8], file: &str, sink: &mut Sink, edition: Edition) -> Option<syn::File> {
    if let Err(refused) = crate::surface::guard::admit(bytes) {
        sink.add_at(Capability::Unanalyzed, file, refused.line, refused.column, refused.to_string());
        return None;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        sink.add_at(Capability::Unanalyzed, file, 1, 1, "source file is not UTF-8");
        return None;
    };
    if bytes.len() >= LARGE_SOURCE
        && let Some(mut f) = parse_large(text)
    {
        compact(&mut f.items);
        return Some(f);
    }
    match syn::parse_file(text) {
        Ok(mut f) => {
            compact(&mut f.items);
            Some(f)
        }
        Err(first) => {
            let body = text.strip_prefix('\u{feff}').unwrap_or(text);
            // A shebang line is not a token.
            let body = match body.strip_prefix("#!") {
                Some(rest) if !rest.trim_start().starts_with('[') => rest.find('\n').map_or("", |n| &rest[n..]),
                _ => body,
            };
            let Ok(ts) = body.parse::<TokenStream>() else {
                sink.add(Capability::Unanalyzed, file, first.span(), format!("parse error: {first}"));
                return None;
            };
            let mut r = super::recover::recover(ts, edition);
            for (span, why, tokens) in r.failed {
                sink.add(Capability::Unanalyzed, file, span, format!("parse error: {why}"));
                r.file.items.push(Item::Verbatim(tokens));
            }
            Some(r.file)
        }
    }
}

/// Drop what the analysis never reads from a parsed file, before it is kept for the whole
/// analysis of the crate (generated bindings hold tens of thousands of items): doc
/// attributes, items only compiled under `cfg(test)` (`#[test]`, `#[bench]` functions), the
/// signatures of foreign functions (their name, visibility and `link_name` are what counts),
/// and the separate `extern` blocks bindgen writes one per function, merged when they have
/// the same ABI and no attributes.
pub(crate) fn compact(items: &mut Vec<Item>) {
    fn no_docs(attrs: &mut Vec<syn::Attribute>) {
        if attrs.iter().any(|a| a.path().is_ident("doc")) {
            attrs.retain(|a| !a.path().is_ident("doc"));
        }
    }
    fn is_test(attrs: &[syn::Attribute]) -> bool {
        attrs.iter().any(|a| {
            let segs = &a.path().segments;
            segs.len() <= 2 && segs.last().is_some_and(|s| s.ident == "test" || s.ident == "bench")
        })
    }
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for mut item in std::mem::take(items) {
        if let Item::Fn(f) = &item
            && is_test(&f.attrs)
        {
            continue;
        }
        if let Some(a) = attrs::item_attrs_mut(&mut item) {
            no_docs(a);
        }
        match &mut item {
            Item::Struct(st) => st.fields.iter_mut().for_each(|f| no_docs(&mut f.attrs)),
            Item::Enum(e) => e.variants.iter_mut().for_each(|v| no_docs(&mut v.attrs)),
            Item::Impl(i) => {
                i.items.retain(|it| !matches!(it, syn::ImplItem::Fn(f) if is_test(&f.attrs)));
                for it in &mut i.items {
                    if let Some(a) = attrs::impl_item_attrs_mut(it) {
                        no_docs(a);
                    }
                }
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &mut m.content {
                    compact(inner);
                }
            }
            Item::ForeignMod(fm) => {
                for fi in &mut fm.items {
                    if let syn::ForeignItem::Fn(f) = fi {
                        no_docs(&mut f.attrs);
                        f.sig.inputs = Default::default();
                        f.sig.output = syn::ReturnType::Default;
                        f.sig.generics = Default::default();
                        f.sig.variadic = None;
                    } else if let Some(a) = attrs::foreign_item_attrs_mut(fi) {
                        no_docs(a);
                    }
                }
                if fm.attrs.is_empty()
                    && let Some(Item::ForeignMod(prev)) = out.last_mut()
                    && prev.attrs.is_empty()
                    && prev.unsafety.is_some() == fm.unsafety.is_some()
                    && abi_text(&prev.abi) == abi_text(&fm.abi)
                {
                    prev.items.append(&mut fm.items);
                    continue;
                }
            }
            _ => {}
        }
        out.push(item);
    }
    out.shrink_to_fit();
    *items = out;
}

fn abi_text(a: &syn::Abi) -> Option<String> {
    a.name.as_ref().map(|n| n.value())
}

/// The bodies of the branches of a `cfg_if!` that are compiled: the first branch whose
/// predicate holds, or the `else`; a branch whose predicate cannot be parsed is taken AND
/// the search goes on (fail closed). `Err` when the invocation does not have the shape.
pub(crate) fn cfg_if_branches(ts: TokenStream, cfg: &dyn CfgEval) -> Result<Vec<TokenStream>, ()> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    let mut chosen = Vec::new();
    let mut decided = false;
    let ident_at = |i: usize, s: &str| matches!(toks.get(i), Some(TokenTree::Ident(id)) if id == s);
    let group_at = |i: usize, d: Delimiter| match toks.get(i) {
        Some(TokenTree::Group(g)) if g.delimiter() == d => Some(g.stream()),
        _ => None,
    };
    loop {
        if !ident_at(i, "if") {
            return Err(());
        }
        if !matches!(toks.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '#') {
            return Err(());
        }
        let attr = group_at(i + 2, Delimiter::Bracket).ok_or(())?;
        let body = group_at(i + 3, Delimiter::Brace).ok_or(())?;
        let mut at: Vec<TokenTree> = attr.into_iter().collect();
        let pred = match at.as_mut_slice() {
            [TokenTree::Ident(c), TokenTree::Group(g)] if c == "cfg" => g.stream(),
            _ => return Err(()),
        };
        if !decided {
            match cfg.eval(&pred) {
                Some(true) => {
                    chosen.push(body);
                    decided = true;
                }
                None => chosen.push(body),
                Some(false) => {}
            }
        }
        i += 4;
        if i == toks.len() {
            return Ok(chosen);
        }
        if !ident_at(i, "else") {
            return Err(());
        }
        i += 1;
        if ident_at(i, "if") {
            continue;
        }
        let body = group_at(i, Delimiter::Brace).ok_or(())?;
        if i + 1 != toks.len() {
            return Err(());
        }
        if !decided {
            chosen.push(body);
        }
        return Ok(chosen);
    }
}

fn parse_items(ts: TokenStream) -> syn::Result<Vec<Item>> {
    syn::parse::Parser::parse2(
        |input: syn::parse::ParseStream| {
            let mut items = Vec::new();
            // Inner attributes are allowed at the top of a branch.
            input.call(syn::Attribute::parse_inner)?;
            while !input.is_empty() {
                items.push(input.parse()?);
            }
            Ok(items)
        },
        ts,
    )
}

/// The compiled branch bodies of a `cfg_if!`; a shape problem is a finding (the invocation
/// is then left for token scanning).
pub(crate) fn cfg_if_bodies(mac: &syn::Macro, cfg: &dyn CfgEval, file: &str, sink: &mut Sink) -> Option<Vec<TokenStream>> {
    let select = mac.path.segments.last().is_some_and(|s| s.ident == "cfg_select");
    let branches = if select { cfg_select_branches(mac.tokens.clone(), cfg) } else { cfg_if_branches(mac.tokens.clone(), cfg) };
    match branches {
        Ok(b) => Some(b),
        Err(()) => {
            sink.add(
                Capability::Unanalyzed,
                file,
                mac.bang_token.span,
                if select { "cfg_select! of an unknown shape (scanned as tokens)" } else { "cfg_if! of an unknown shape (scanned as tokens)" },
            );
            None
        }
    }
}

/// Whether a `cfg_if!`/`cfg_select!` has the shape of the real one.
fn cfg_if_shape(mac: &syn::Macro, cfg: &dyn CfgEval) -> bool {
    let select = mac.path.segments.last().is_some_and(|s| s.ident == "cfg_select");
    if select { cfg_select_branches(mac.tokens.clone(), cfg).is_ok() } else { cfg_if_branches(mac.tokens.clone(), cfg).is_ok() }
}

/// Expand a module-level `cfg_if!` into its compiled items.
pub(crate) fn expand_cfg_if(mac: &syn::Macro, cfg: &dyn CfgEval, file: &str, sink: &mut Sink) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    for b in cfg_if_bodies(mac, cfg, file, sink)? {
        match parse_items(b) {
            Ok(mut v) => items.append(&mut v),
            Err(e) => sink.add(Capability::Unanalyzed, file, e.span(), format!("parse error in cfg_if! branch: {e}")),
        }
    }
    Some(items)
}

/// Expand a `cfg_if!` in statement position (cfg-if's branches are token trees, so they may
/// hold statements there) into its compiled statements.
pub(crate) fn expand_cfg_if_stmts(mac: &syn::Macro, cfg: &dyn CfgEval, file: &str, sink: &mut Sink) -> Option<Vec<syn::Stmt>> {
    let mut stmts = Vec::new();
    for b in cfg_if_bodies(mac, cfg, file, sink)? {
        match syn::parse::Parser::parse2(syn::Block::parse_within, b) {
            Ok(mut v) => stmts.append(&mut v),
            Err(e) => sink.add(Capability::Unanalyzed, file, e.span(), format!("parse error in cfg_if! branch: {e}")),
        }
    }
    Some(stmts)
}

/// Three-valued "and": false wins, then unknown.
fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), x) | (x, Some(true)) => x,
        (None, None) => None,
    }
}

/// Every `path` a `mod`'s attributes can give it, in order, plain or under (nested)
/// `cfg_attr`s, each with whether it is active: true, false, or unknown (an unknown
/// predicate, or one that does not parse).
fn path_attrs(attrs: &[syn::Attribute], cfg: &dyn CfgEval) -> Vec<(Option<bool>, String)> {
    fn meta(m: &syn::Meta, state: Option<bool>, cfg: &dyn CfgEval, depth: usize, out: &mut Vec<(Option<bool>, String)>) {
        match m {
            syn::Meta::NameValue(nv) if nv.path.is_ident("path") => {
                if let syn::Expr::Lit(l) = &nv.value
                    && let syn::Lit::Str(s) = &l.lit
                {
                    out.push((state, s.value()));
                }
            }
            syn::Meta::List(list) if list.path.is_ident("cfg_attr") && depth < 16 => {
                let mut parts = attrs::split_commas(list.tokens.clone()).into_iter();
                let Some(pred) = parts.next() else { return };
                let state = and3(state, cfg.eval(&pred));
                for part in parts {
                    if let Ok(m) = syn::parse2::<syn::Meta>(part) {
                        meta(&m, state, cfg, depth + 1, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for a in attrs {
        meta(&a.meta, Some(true), cfg, 0, &mut out);
    }
    out
}

/// The files an out-of-line `mod` may be, from its `path` attributes: rustc takes the first
/// active one, else the default file. With unknown predicates every configuration counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModFiles {
    /// `path` values that are the module's file in some configuration, in order.
    paths: Vec<String>,
    /// Whether no `path` is active in some configuration (the default `x.rs`/`x/mod.rs`).
    default: bool,
    /// `path` values under a `cfg_attr` that is false: declared, not compiled.
    off: Vec<String>,
    /// The `cfg`/`cfg_attr` attributes as written (for the coverage list).
    text: String,

}

impl ModFiles {
    pub(crate) fn of(attrs: &[syn::Attribute], cfg: &dyn CfgEval) -> ModFiles {
        let found = path_attrs(attrs, cfg);
        let mut out = ModFiles { default: true, ..ModFiles::default() };
        if found.iter().any(|(s, _)| *s == Some(false)) {
            out.text = cfg_text(attrs);
        }
        for (state, p) in found {
            match state {
                Some(true) => {
                    out.paths.push(p);
                    out.default = false;
                    break;
                }
                None => out.paths.push(p),
                Some(false) => out.off.push(p),
            }
        }
        out
    }
}

/// Where an out-of-line `mod` may be.
pub(crate) struct ModCandidates {
    /// Every file tried: each possible `#[path]` (true) and the default files (false).
    pub tried: Vec<(String, bool)>,
    /// Those that exist, one default at most (rustc takes the first of `x.rs`, `x/mod.rs`).
    pub existing: Vec<(String, bool)>,
    /// `path` values that lead out of the package.
    pub outside: Vec<String>,
}

/// The files a `mod name;` with these `path` possibilities is, in some configuration:
/// `path`s are relative to `path_dir`, the default files to `child_dir`.
pub(crate) fn mod_candidates(files: &ModFiles, path_dir: &str, child_dir: &str, name: &str, tree: &FileTree) -> ModCandidates {
    let mut tried: Vec<(String, bool)> = Vec::new();
    let mut outside: Vec<String> = Vec::new();
    for p in &files.paths {
        match paths::join(path_dir, p) {
            Some(t) => tried.push((t, true)),
            None => outside.push(p.clone()),
        }
    }
    let defaults = paths::module_candidates(child_dir, name);
    if files.default {
        tried.extend(defaults.iter().map(|d| (d.clone(), false)));
    }
    let mut existing: Vec<(String, bool)> = Vec::new();
    for (c, via_path) in &tried {
        if !via_path && existing.iter().any(|(e, p)| !p && defaults.contains(e)) {
            continue;
        }
        if tree.contains_key(c.as_str()) && !existing.iter().any(|(e, _)| e == c) {
            existing.push((c.clone(), *via_path));
        }
    }
    ModCandidates { tried, existing, outside }
}

/// A module file the crate declares but does not compile for the target: the declaration is
/// under a false cfg.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkippedDecl {
    /// The package-relative file the declaration names.
    pub file: String,
    /// The cfg that is false, as written (`cfg(windows)`).
    pub predicate: String,
    /// Where the declaration is: `src/lib.rs:12`.
    pub at: String,
}

/// The text of the attributes that decide whether an item is compiled (`#[cfg(windows)]`).
fn cfg_text(attrs: &[syn::Attribute]) -> String {
    let parts: Vec<String> = attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::List(l) if l.path.is_ident("cfg") || l.path.is_ident("cfg_attr") => {
                let name = if l.path.is_ident("cfg") { "cfg" } else { "cfg_attr" };
                let bang = if matches!(a.style, syn::AttrStyle::Inner(_)) { "!" } else { "" };
                Some(format!("#{bang}[{name}({})]", l.tokens))
            }
            _ => None,
        })
        .collect();
    if parts.is_empty() { "#[cfg(..)]".to_string() } else { parts.join(" ") }
}

/// Builds the module tree.
pub(crate) struct Loader<'a> {
    tree: &'a FileTree,
    cfg: &'a dyn CfgEval,
    ex: &'a Expander<'a>,
    pub sink: Sink,
    files: Vec<String>,
    file_ids: HashMap<String, FileId>,
    modules: Vec<Module>,
    /// Files of the modules being loaded, innermost last (circular `#[path]`s).
    stack: Vec<String>,
    pending: Vec<Pending>,
    /// Expansions being loaded: what they leave in the module tree is held for the whole
    /// analysis and counted as such (see [`Expander::keep`]).
    expanding: usize,
    /// Declarations of module files under a false cfg.
    skipped: Vec<SkippedDecl>,
    /// The macro whose expansion is being loaded (innermost).
    origin: Option<Rc<crate::surface::model::Expansion>>,
}

const MAX_MODULE_DEPTH: usize = 64;

impl<'a> Loader<'a> {
    pub fn new(tree: &'a FileTree, cfg: &'a dyn CfgEval, scope: Scope, ex: &'a Expander<'a>) -> Self {
        Loader {
            tree,
            cfg,
            ex,
            sink: Sink { scope, findings: Vec::new(), origin: None },
            files: Vec::new(),
            file_ids: HashMap::new(),
            modules: Vec::new(),
            stack: Vec::new(),
            pending: Vec::new(),
            expanding: 0,
            skipped: Vec::new(),
            origin: None,
        }
    }

    pub fn file_id(&mut self, path: &str) -> FileId {
        if let Some(id) = self.file_ids.get(path) {
            return *id;
        }
        self.files.push(path.to_string());
        self.file_ids.insert(path.to_string(), self.files.len() - 1);
        self.files.len() - 1
    }

    /// Load the crate whose root file is `root`: the module tree with every module-level
    /// macro invocation expanded that can be. `resolve` builds a resolver over a module tree
    /// (for invocations named by path, resolved once the tree is known).
    pub fn load(mut self, root: &str, parts: &Parts) -> (Loaded, Sink) {
        let dir = paths::dir_of(root).to_string();
        self.modules.push(Module {
            parent: None,
            path: Vec::new(),
            entries: Vec::new(),
            children: Vec::new(),
            child_dir: dir.clone(),
            path_dir: dir,
        });
        self.ex.ensure_module(ROOT);
        let fid = self.file_id(root);
        match self.tree.get(root) {
            None => self.sink.add_at(Capability::Unanalyzed, root, 1, 1, "target root file not found"),
            Some(bytes) => {
                if let Some(mut file) = parse_source(bytes, root, &mut self.sink, self.ex.edition)
                    && active(&mut file.attrs, self.cfg)
                {
                    self.ex.recursion_limit.set(macros::recursion_limit(&file.attrs));
                    self.stack.push(root.to_string());
                    self.load_items(ROOT, fid, file.items, Textual::default(), 0);
                    self.stack.pop();
                }
            }
        }
        self.resolve_pending(parts);
        (Loaded { files: self.files, modules: self.modules, skipped: self.skipped }, self.sink)
    }

    /// Resolve the invocations left for later with the module tree known, expand those that
    /// name a macro, and repeat while that makes progress (expansions can declare modules and
    /// imports that later resolutions need). What stays unresolved is left for the visitor.
    fn resolve_pending(&mut self, parts: &Parts) {
        for _round in 0..16 {
            if self.pending.is_empty() {
                break;
            }
            let pending = std::mem::take(&mut self.pending);
            let found: Vec<Option<MacroRef>> = {
                let r = Resolver::new(&self.modules, parts.crate_name, parts.deps, parts.rules, parts.cfg, self.ex);
                pending
                    .iter()
                    .map(|p| {
                        let up = UsePath::from_path(&p.mac.mac.path);
                        r.resolve_macro(Ctx { module: p.module, layers: &[] }, &up, &p.macros)
                    })
                    .collect()
            };
            let mut progress = false;
            let mut unresolved = Vec::new();
            for (p, def) in pending.into_iter().zip(found) {
                match def {
                    Some(def) => {
                        progress = true;
                        self.expand_items(p.module, p.file, p.mac, &def, p.macros, p.depth);
                    }
                    None => unresolved.push(p),
                }
            }
            unresolved.append(&mut self.pending);
            self.pending = unresolved;
            if !progress {
                break;
            }
        }
        for p in std::mem::take(&mut self.pending) {
            self.modules[p.module].entries.push(Entry { file: p.file, item: Item::Macro(p.mac), macros: p.macros, origin: None });
        }
    }

    /// Early resolution, while loading: the textual scope, `#[macro_use]` crates, and paths
    /// that need no module tree (`crate::m` for a macro exported so far, `dep::m`).
    fn resolve_early(&self, path: &syn::Path, scope: &Textual) -> Option<MacroRef> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.unraw().to_string()).collect();
        match segs.as_slice() {
            [name] if path.leading_colon.is_none() => {
                scope.get(name).or_else(|| self.ex.macro_use.borrow().get(name).cloned())
            }
            [k, name] if k == "crate" && path.leading_colon.is_none() => self.ex.exported.borrow().get(name).cloned(),
            [k, name] if self.ex.deps().contains_key(k) => self.ex.dep_macro(k, name),
            _ => None,
        }
    }

    fn push_entry(&mut self, m: ModId, fid: FileId, item: Item, scope: &Textual) {
        if self.expanding > 0 {
            self.ex.keep(macros::syntax_size(&item));
        }
        self.modules[m].entries.push(Entry { file: fid, item, macros: scope.clone(), origin: self.origin.clone() });
    }

    /// Expand a module-level invocation of `def` and load what it produces. A failure is an
    /// `unanalyzed` finding at the invocation, and its tokens (or the expansion that did not
    /// parse) are left for the visitor to scan.
    fn expand_items(&mut self, m: ModId, fid: FileId, mac: syn::ItemMacro, def: &MacroDefn, scope: Textual, depth: usize) -> Textual {
        let file = self.files[fid].clone();
        let span = macros::call_site(&mac.mac.path);
        let name = def.name.clone();
        let fail = |this: &mut Self, why: String, scan: TokenStream| {
            this.sink.add(Capability::Unanalyzed, &file, span, format!("macro `{name}!` not expanded: {why}"));
            this.push_entry(m, fid, Item::Verbatim(scan), &scope);
        };
        if depth >= self.ex.recursion_limit.get() {
            fail(self, macros::ExpandFailure::Recursion(self.ex.recursion_limit.get()).to_string(), mac.mac.tokens.clone());
            return scope;
        }
        // The expansion is held while it is loaded; what it leaves in the module tree stays
        // held (`push_entry`).
        let mark = self.ex.mark();
        let out = match self.ex.expand(def, &mac.mac, depth > 0) {
            Ok(t) => t,
            Err(e) => {
                fail(self, e.to_string(), mac.mac.tokens.clone());
                return scope;
            }
        };
        self.expanding += 1;
        let scope = match macros::parse_items(out.clone()) {
            Ok(items) => {
                let scope2 = scope.clone();
                let inner = def.origin.clone().or_else(|| self.origin.clone());
                let saved = std::mem::replace(&mut self.origin, inner);
                let after = self.load_items(m, fid, items, scope2, depth + 1);
                self.origin = saved;
                after
            }
            Err(e) => {
                fail(self, e.to_string(), out);
                scope
            }
        };
        self.expanding -= 1;
        self.ex.release_to(mark);
        scope
    }

    /// Expand the macro invocations inside an `extern` block that resolve now, so the
    /// foreign items they declare are names of the module.
    fn expand_foreign(&mut self, fm: &mut syn::ItemForeignMod, fid: FileId, scope: &Textual, depth: usize) {
        if depth >= self.ex.recursion_limit.get() || !fm.items.iter().any(|i| matches!(i, syn::ForeignItem::Macro(_))) {
            return;
        }
        let mut out = Vec::with_capacity(fm.items.len());
        for it in std::mem::take(&mut fm.items) {
            let syn::ForeignItem::Macro(fmac) = &it else {
                out.push(it);
                continue;
            };
            let Some(def) = self.resolve_early(&fmac.mac.path, scope) else {
                out.push(it);
                continue;
            };
            match self.ex.expand(&def, &fmac.mac, depth > 0).and_then(macros::parse_foreign_items) {
                Ok(items) => {
                    let mut inner = syn::ItemForeignMod { attrs: Vec::new(), unsafety: None, abi: fm.abi.clone(), brace_token: fm.brace_token, items };
                    self.expand_foreign(&mut inner, fid, scope, depth + 1);
                    out.extend(inner.items);
                }
                // Left for the visitor, which reports it.
                Err(_) => out.push(it),
            }
        }
        fm.items = out;
    }

    /// [`Loader::load_items`] of a file just parsed: its items are source, counted by the
    /// source budget, not held macro output, even when an expansion declared the module.
    fn load_parsed(&mut self, m: ModId, fid: FileId, items: Vec<Item>, scope: Textual, depth: usize) -> Textual {
        let expanding = std::mem::replace(&mut self.expanding, 0);
        let scope = self.load_items(m, fid, items, scope, depth);
        self.expanding = expanding;
        scope
    }

    fn load_items(&mut self, m: ModId, fid: FileId, items: Vec<Item>, mut scope: Textual, depth: usize) -> Textual {
        // A `paste!` is paste's unless a `macro_rules!` of that name is in scope.
        fn resolve_none(l: &Loader, mac: &syn::ItemMacro, scope: &Textual) -> bool {
            l.resolve_early(&mac.mac.path, scope).is_none()
        }
        let file = self.files[fid].clone();
        for mut item in items {
            let mod_files = match &item {
                Item::Mod(m) if m.content.is_none() => ModFiles::of(&m.attrs, self.cfg),
                _ => ModFiles::default(),
            };
            if let Some(a) = attrs::item_attrs_mut(&mut item)
                && !attrs::holds(a, self.cfg)
            {
                if let Item::Mod(im) = &item {
                    self.record_skipped(m, &file, im, None);
                }
                continue;
            }
            if let Some(a) = attrs::item_attrs_mut(&mut item) {
                attrs::expand_cfg_attr(a, self.cfg);
            }
            match item {
                Item::Macro(mac) if mac.ident.is_some() && mac.mac.path.is_ident("macro_rules") => {
                    let name = mac.ident.as_ref().map(|i| i.unraw().to_string()).unwrap_or_default();
                    let (exported, local_inner) = macros::export_attrs(&mac.attrs);
                    let line = mac.ident.as_ref().map_or(1, |i| i.span().start().line);
                    let def = Rc::new(MacroDefn::local(name.clone(), mac.mac.tokens.clone(), self.ex.edition, local_inner).at(self.ex, &file, line));
                    if exported {
                        self.ex.exported.borrow_mut().insert(name.clone(), def.clone());
                    }
                    scope = scope.with(name, def);
                }
                // A `cfg_if` the crate defines itself (sysinfo's takes several chains in one
                // call) means what its `macro_rules!` says, whatever its shape; another one
                // (cfg-if's) of a shape not cfg-if's, too.
                Item::Macro(mac)
                    if mac.ident.is_none()
                        && is_cfg_if(&mac.mac.path)
                        && self
                            .resolve_early(&mac.mac.path, &scope)
                            .is_some_and(|d| d.exported.is_none() || !cfg_if_shape(&mac.mac, self.cfg)) =>
                {
                    let def = self.resolve_early(&mac.mac.path, &scope).expect("resolved in the guard");
                    scope = self.expand_items(m, fid, mac, &def, scope, depth);
                }
                Item::Macro(mac) if mac.ident.is_none() && is_cfg_if(&mac.mac.path) => {
                    match expand_cfg_if(&mac.mac, self.cfg, &file, &mut self.sink) {
                        Some(items) => scope = self.load_items(m, fid, items, scope, depth),
                        None => self.push_entry(m, fid, Item::Macro(mac), &scope),
                    }
                }
                Item::Macro(mac) if mac.ident.is_none() && macros::is_paste(&mac.mac.path) && resolve_none(self, &mac, &scope) => {
                    match macros::paste(&mac.mac.tokens).and_then(|t| macros::parse_items(t).map_err(|e| e.to_string())) {
                        Ok(items) if depth < self.ex.recursion_limit.get() => scope = self.load_items(m, fid, items, scope, depth + 1),
                        // The visitor reports it, with the reason.
                        Ok(_) | Err(_) => self.push_entry(m, fid, Item::Macro(mac), &scope),
                    }
                }
                Item::Macro(mac) if mac.ident.is_none() && crate::surface::syntax::is_include(&mac.mac.path) => {
                    scope = self.include_items(m, &file, &mac.mac, scope, depth);
                }
                Item::Macro(mac) if mac.ident.is_none() => match self.resolve_early(&mac.mac.path, &scope) {
                    Some(def) => scope = self.expand_items(m, fid, mac, &def, scope, depth),
                    None => self.pending.push(Pending { module: m, file: fid, mac, macros: scope.clone(), depth }),
                },
                Item::Mod(im) => scope = self.load_mod(m, fid, im, mod_files, scope, depth),
                Item::Use(u) => {
                    // `use m;` / `pub(crate) use m as n;` of a textual macro puts it in the
                    // module's macro namespace.
                    let mut leaves = Vec::new();
                    super::scope::flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                    for leaf in leaves {
                        if let super::scope::UseLeaf::Name(alias, segs) = leaf
                            && segs.len() == 1
                            && u.leading_colon.is_none()
                            && let Some(def) = scope.get(&segs[0])
                        {
                            let public = matches!(u.vis, syn::Visibility::Public(_));
                            self.ex.module_macros.borrow_mut()[m].insert(alias, (def, public));
                        }
                    }
                    self.push_entry(m, fid, Item::Use(u), &scope);
                }
                Item::ExternCrate(e) => {
                    if let Some(names) = macros::macro_use(&e.attrs) {
                        let krate = e.ident.unraw().to_string();
                        for (name, def) in self.ex.dep_root_macros(&krate) {
                            if names.as_ref().is_none_or(|n| n.contains(&name)) {
                                self.ex.macro_use.borrow_mut().insert(name, def);
                            }
                        }
                    }
                    self.push_entry(m, fid, Item::ExternCrate(e), &scope);
                }
                Item::ForeignMod(mut fm) => {
                    self.expand_foreign(&mut fm, fid, &scope, depth);
                    self.push_entry(m, fid, Item::ForeignMod(fm), &scope);
                }
                other => self.push_entry(m, fid, other, &scope),
            }
        }
        scope
    }

    fn include_items(&mut self, m: ModId, file: &str, mac: &syn::Macro, scope: Textual, depth: usize) -> Textual {
        let span = mac.path.segments.first().map_or_else(Span::call_site, |s| s.ident.span());
        let (rel, target) = match crate::surface::buildscript::include::target(&mac.tokens, file, self.ex.build) {
            Ok(t) => t,
            Err(why) => {
                self.sink.add(Capability::Unanalyzed, file, span, why);
                return scope;
            }
        };
        let Some((target, bytes)) = target.and_then(|t| self.tree.get(&t).map(|b| (t, b))) else {
            self.sink.add(Capability::Unanalyzed, file, span, format!("include! of a missing file: {rel}"));
            return scope;
        };
        if self.stack.len() > MAX_MODULE_DEPTH || self.stack.contains(&target) {
            self.sink.add(Capability::Unanalyzed, file, span, format!("include! cycle: {rel}"));
            return scope;
        }
        let fid = self.file_id(&target);
        match parse_source(bytes, &target, &mut self.sink, self.ex.edition) {
            Some(f) => {
                self.stack.push(target);
                let scope = self.load_parsed(m, fid, f.items, scope, depth);
                self.stack.pop();
                scope
            }
            None => scope,
        }
    }

    /// Load `target` into the existing module `id` (for path alternatives). The module's
    /// directories become those of the first file.
    fn load_module_file(&mut self, id: ModId, target: &str, path_attr: bool, scope: Textual, depth: usize, at: &str) -> Textual {
        if self.stack.len() > MAX_MODULE_DEPTH || self.stack.iter().any(|s| s == target) {
            return scope;
        }
        let Some(mut parsed) = parse_source(&self.tree[target], target, &mut self.sink, self.ex.edition) else { return scope };
        if !active(&mut parsed.attrs, self.cfg) {
            self.skipped.push(SkippedDecl { file: target.to_string(), predicate: cfg_text(&parsed.attrs), at: at.to_string() });
            return scope;
        }
        // Each file's own `mod x;` items are relative to it.
        let mod_rs = paths::is_mod_rs(target, path_attr);
        self.modules[id].child_dir = paths::child_dir(target, mod_rs);
        self.modules[id].path_dir = paths::dir_of(target).to_string();
        let tfid = self.file_id(target);
        self.stack.push(target.to_string());
        let scope = self.load_parsed(id, tfid, parsed.items, scope, depth);
        self.stack.pop();
        scope
    }

    fn new_module(&mut self, parent: ModId, name: String, child_dir: String, path_dir: String, public: bool) -> ModId {
        let mut path = self.modules[parent].path.clone();
        path.push(name.clone());
        self.modules.push(Module {
            parent: Some(parent),
            path,
            entries: Vec::new(),
            children: Vec::new(),
            child_dir,
            path_dir,
        });
        let id = self.modules.len() - 1;
        if self.expanding > 0 {
            self.ex.keep(macros::MODULE_SIZE);
        }
        self.ex.ensure_module(id);
        self.modules[parent].children.push((name, id, public));
        id
    }

    /// A `mod` under a false cfg: the files it (and, for an inline module, the out-of-line
    /// modules inside it) would name are recorded, with the predicate, for the coverage list.
    fn record_skipped(&mut self, parent: ModId, file: &str, im: &syn::ItemMod, inherited: Option<(&str, &str)>) {
        let line = im.mod_token.span.start().line;
        let pred_owned = cfg_text(&im.attrs);
        let (pred, base_dir, child_dir) = match inherited {
            Some((p, dir)) => (p.to_string(), dir.to_string(), dir.to_string()),
            None => (pred_owned, self.modules[parent].path_dir.clone(), self.modules[parent].child_dir.clone()),
        };
        let name = im.ident.unraw().to_string();
        let at = format!("{file}:{line}");
        let paths = path_attrs(&im.attrs, self.cfg);
        match &im.content {
            None => {
                let mut files: Vec<String> = paths.iter().filter_map(|(_, p)| paths::join(&base_dir, p)).collect();
                files.extend(paths::module_candidates(&child_dir, &name));
                for f in files {
                    self.skipped.push(SkippedDecl { file: f, predicate: pred.clone(), at: at.clone() });
                }
            }
            Some((_, items)) => {
                let dir = match paths.first() {
                    Some((_, p)) => paths::join(&base_dir, p),
                    None => paths::join(&child_dir, &name),
                };
                let Some(dir) = dir else { return };
                for it in items {
                    if let Item::Mod(inner) = it {
                        self.record_skipped(parent, file, inner, Some((&pred, &dir)));
                    }
                }
            }
        }
    }

    /// Load a `mod`; returns the textual scope after it: the scope at its end with
    /// `#[macro_use]`, else the scope before it.
    fn load_mod(&mut self, parent: ModId, fid: FileId, im: syn::ItemMod, files: ModFiles, scope: Textual, depth: usize) -> Textual {
        let keep = macros::macro_use(&im.attrs).is_some();
        let after = |inner: Textual| if keep { inner } else { scope.clone() };
        let name = im.ident.unraw().to_string();
        let public = matches!(im.vis, syn::Visibility::Public(_));
        let path_attr = attrs::str_value(&im.attrs, "path").map(|(p, _)| p);
        let file = self.files[fid].clone();
        if let Some((_, items)) = im.content {
            let base = &self.modules[parent];
            // A directory out of the package: no file can be found under it, so a `mod x;`
            // inside is reported as not found, never looked up at the package root instead.
            const OUTSIDE: &str = "\u{0}outside the package";
            let dir = match &path_attr {
                Some(p) => paths::join(&base.path_dir, p).unwrap_or_else(|| OUTSIDE.to_string()),
                None => paths::join(&base.child_dir, &name).unwrap_or_else(|| OUTSIDE.to_string()),
            };
            let id = self.new_module(parent, name, dir.clone(), dir, public);
            let inner = self.load_items(id, fid, items, scope.clone(), depth);
            return after(inner);
        }
        let at = format!("{file}:{}", im.mod_token.span.start().line);
        let base = &self.modules[parent];
        let ModCandidates { tried: candidates, mut existing, outside } =
            mod_candidates(&files, &base.path_dir, &base.child_dir, &name, self.tree);
        for p in &files.off {
            if let Some(f) = paths::join(&base.path_dir, p) {
                self.skipped.push(SkippedDecl { file: f, predicate: files.text.clone(), at: at.clone() });
            }
        }
        for p in &outside {
            // `#[path]` leading out of the package (`../../x.rs`, an absolute path): cargo
            // would compile that file, but only the package's own files are read.
            self.sink.add(
                Capability::Unanalyzed,
                &file,
                im.mod_token.span,
                format!("module file of `mod {name}` is outside the package and refused (#[path = {p:?}])"),
            );
        }
        if existing.is_empty() {
            if outside.is_empty() {
                let tried: Vec<String> = candidates.iter().map(|(c, _)| c.clone()).collect();
                let why = if tried.iter().any(|c| c.starts_with('\u{0}')) {
                    format!("module file of `mod {name}` not found: the enclosing module's #[path] leads outside the package")
                } else {
                    format!("module file of `mod {name}` not found (tried {})", tried.join(", "))
                };
                self.sink.add(Capability::Unanalyzed, &file, im.mod_token.span, why);
            }
            let dir = paths::join(&base.child_dir, &name).unwrap_or_default();
            self.new_module(parent, name, dir.clone(), dir, public);
            return scope;
        }
        if existing.len() > 1 {
            // Several files, each the module in some configuration: all of them, as one
            // module (a superset).
            let dir = paths::join(&base.child_dir, &name).unwrap_or_default();
            let id = self.new_module(parent, name, dir.clone(), dir, public);
            let mut inner = scope.clone();
            for (target, via_path) in existing {
                inner = self.load_module_file(id, &target, via_path, inner, depth, &at);
            }
            return after(inner);
        }
        let (target, via_path) = existing.pop().expect("one file");
        if self.stack.len() > MAX_MODULE_DEPTH || self.stack.contains(&target) {
            self.sink.add(
                Capability::Unanalyzed,
                &file,
                im.mod_token.span,
                format!("circular module `mod {name}` ({target})"),
            );
            return scope;
        }
        let bytes = &self.tree[&target];
        let Some(mut parsed) = parse_source(bytes, &target, &mut self.sink, self.ex.edition) else {
            // Keep the module, empty, so its name still shadows extern crates.
            let dir = paths::child_dir(&target, paths::is_mod_rs(&target, via_path));
            self.new_module(parent, name, dir.clone(), dir, public);
            return scope;
        };
        if !active(&mut parsed.attrs, self.cfg) {
            self.skipped.push(SkippedDecl { file: target.clone(), predicate: cfg_text(&parsed.attrs), at });
            return scope;
        }
        let mod_rs = paths::is_mod_rs(&target, via_path);
        let child_dir = paths::child_dir(&target, mod_rs);
        let path_dir = paths::dir_of(&target).to_string();
        let id = self.new_module(parent, name, child_dir, path_dir, public);
        let tfid = self.file_id(&target);
        self.stack.push(target);
        let inner = self.load_parsed(id, tfid, parsed.items, scope.clone(), depth);
        self.stack.pop();
        after(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::super::oracle::doubles::{TestCfg, TestRules};
    use super::*;
    use std::collections::BTreeMap;

    fn tree(files: &[(&str, &str)]) -> FileTree {
        files.iter().map(|(p, s)| (p.to_string(), s.as_bytes().to_vec())).collect()
    }

    fn load(files: &[(&str, &str)], root: &str) -> (Vec<String>, Vec<Finding>, Loaded) {
        let t = tree(files);
        let cfg = TestCfg::linux(&[]);
        let rules = TestRules::small();
        let deps = BTreeMap::new();
        let parts = Parts { crate_name: "me", deps: &deps, rules: &rules, cfg: &cfg };
        let (loaded, sink) = Loader::new(&t, &cfg, Scope::Runtime, macros::test_expander()).load(root, &parts);
        let mods = loaded
            .modules
            .iter()
            .map(|m| {
                let files: Vec<&str> = m.entries.iter().map(|e| loaded.files[e.file].as_str()).collect();
                format!("crate::{} {:?}", m.path.join("::"), files)
            })
            .collect();
        (mods, sink.findings, loaded)
    }

    #[test]
    fn large_files_lose_their_literal_tables_and_nothing_else() {
        let table: String = (0..40_000).map(|i| format!("{i}, ")).collect();
        let pairs: String = (0..2_000).map(|i| format!("({i}, '{}'), ", char::from(b'a' + (i % 26) as u8))).collect();
        let args: String = (0..100).map(|i| format!("{i}, ")).collect();
        let src = format!(
            "pub static T: [u32; 40000] = [{table}];\nstatic P: &[(u32, char)] = &[{pairs}];\nm!({args});\npub fn f() {{ std::fs::write(\"a\", \"b\").unwrap(); }}\nstatic Q: [fn(); 1] = [g]; fn g() {{}}\n"
        );
        assert!(src.len() >= LARGE_SOURCE);
        let f = parse_large(&src).expect("parses");
        let text = quote_items(&f);
        assert!(!text.contains("39999"), "the table is gone");
        assert!(text.contains("m ! (0 , 1 ,"), "a macro's input is kept");
        assert!(text.contains("std :: fs :: write"), "code is kept");
        assert!(text.contains("[g]"), "a group with a path is not a table");
        // The line numbers of what follows a table do not move.
        let syn::Item::Fn(func) = &f.items[3] else { panic!("{:?}", f.items[3]) };
        assert_eq!(func.sig.fn_token.span.start().line, 4);
    }

    fn quote_items(f: &syn::File) -> String {
        use quote::ToTokens;
        f.items.iter().map(|i| i.to_token_stream().to_string()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn module_files_follow_rustc() {
        let (mods, findings, _) = load(
            &[
                ("src/lib.rs", "mod a; mod b; #[path = \"elsewhere/c.rs\"] mod c; mod inl { mod d; } mod gone;"),
                ("src/a.rs", "mod x; fn a() {}"),
                ("src/a/x.rs", "fn x() {}"),
                ("src/b/mod.rs", "mod y; fn b() {}"),
                ("src/b/y.rs", "fn y() {}"),
                ("src/elsewhere/c.rs", "mod z; fn c() {}"),
                ("src/elsewhere/z.rs", "fn z() {}"),
                ("src/inl/d.rs", "fn d() {}"),
                ("src/x.rs", "fn not_reached() {}"),
            ],
            "src/lib.rs",
        );
        assert_eq!(
            mods,
            [
                "crate:: []",
                "crate::a [\"src/a.rs\"]",
                "crate::a::x [\"src/a/x.rs\"]",
                "crate::b [\"src/b/mod.rs\"]",
                "crate::b::y [\"src/b/y.rs\"]",
                "crate::c [\"src/elsewhere/c.rs\"]",
                "crate::c::z [\"src/elsewhere/z.rs\"]",
                "crate::inl []",
                "crate::inl::d [\"src/inl/d.rs\"]",
                "crate::gone []",
            ]
        );
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].capability, Capability::Unanalyzed);
        assert!(findings[0].path.contains("src/gone.rs, src/gone/mod.rs"), "{}", findings[0].path);
        assert_eq!((findings[0].line, findings[0].column), (1, 68));
    }

    #[test]
    fn path_inside_inline_module_of_non_mod_rs_file() {
        let (mods, findings, _) = load(
            &[
                ("src/lib.rs", "mod a;"),
                ("src/a.rs", "mod inline { #[path = \"other.rs\"] mod inner; }"),
                ("src/a/inline/other.rs", "fn o() {}"),
            ],
            "src/lib.rs",
        );
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(mods.last().unwrap(), "crate::a::inline::inner [\"src/a/inline/other.rs\"]");
    }

    #[test]
    fn cfg_on_mod_and_cfg_attr_path() {
        let (mods, findings, _) = load(
            &[
                (
                    "src/lib.rs",
                    "#[cfg(windows)] mod w; #[cfg_attr(unix, path = \"u.rs\")] #[cfg_attr(windows, path = \"w.rs\")] mod sys; mod off;",
                ),
                ("src/u.rs", "fn u() {}"),
                ("src/off.rs", "#![cfg(windows)] fn off() {}"),
            ],
            "src/lib.rs",
        );
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(mods, ["crate:: []", "crate::sys [\"src/u.rs\"]"]);
    }

    #[test]
    fn cfg_if_picks_the_first_true_branch() {
        let cfg = TestCfg::linux(&[]);
        let src: TokenStream =
            "if #[cfg(windows)] { fn a() {} } else if #[cfg(unix)] { fn b() {} } else { fn c() {} }"
                .parse()
                .unwrap();
        let picked = cfg_if_branches(src, &cfg).unwrap();
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].to_string(), "fn b () { }");
        let src: TokenStream = "if #[cfg(?)] { fn a() {} } else { fn c() {} }".parse().unwrap();
        assert_eq!(cfg_if_branches(src, &cfg).unwrap().len(), 2, "unparseable: both");
        assert!(cfg_if_branches("fn x() {}".parse().unwrap(), &cfg).is_err());
    }

    #[test]
    fn parse_errors_and_include() {
        let (_, findings, loaded) = load(
            &[
                ("src/lib.rs", "include!(\"gen/items.rs\"); include!(concat!(env!(\"OUT_DIR\"), \"/x.rs\")); mod bad;"),
                ("src/gen/items.rs", "fn included() {}"),
                ("src/bad.rs", "fn (\n"),
            ],
            "src/lib.rs",
        );
        let paths: Vec<_> = findings.iter().map(|f| format!("{}:{} {}", f.file, f.line, f.path)).collect();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(paths[0].starts_with("src/lib.rs:1 include! of a generated file"));
        assert!(paths[1].starts_with("src/bad.rs:1 parse error"), "{paths:?}");
        assert_eq!(loaded.files[loaded.modules[0].entries[0].file], "src/gen/items.rs");
    }
}
