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
//! Expansion is bounded, deterministically (steps, tokens and bytes, never time), by the
//! limits below: matcher work per invocation and per crate; output per invocation and per
//! crate (the work of parsing and visiting it); output the crate holds at once (its memory:
//! what the loader keeps in the module tree, what the visitor holds while it walks an
//! expansion); and the recursion limit (the crate's `#![recursion_limit]`, default 128 as in
//! rustc). An invocation that would pass one is `unanalyzed` with the budget named, its tokens
//! are scanned, and the rest of the crate is analysed. What the crate holds is also counted,
//! as an estimate of memory, against the run's shared account
//! ([`crate::surface::guard::hold`]), so crates analysed side by side do not multiply it.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};

use crate::surface::syntax::mbe::{Budget, DefError, Edition, ExpandError, MacroRules, Size};
use crate::resources::meter::{Limit, Meter, Unit};
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
    /// The most one invocation spent: matcher steps, output tokens and bytes.
    pub max_steps: u64,
    pub max_tokens: u64,
    pub max_bytes: u64,
}

// The limits, measured against the crates of six large applications (ripgrep, fd, starship,
// uv, nushell, helix: 1,700 crate targets; benchmark/results/hostile-*.md). The largest use of
// each, by one crate: matcher steps 31M, output 28M tokens and 94 MB, parsed output 2.0M
// tokens, held output 1.3M tokens (all uom 0.38, a units-of-measure crate built of
// tt-munching macros); by one invocation: 41,000 steps, 303,000 tokens, 1.0 MB (uom). Each
// crate limit lets the largest crate through with room, and costs at most a few seconds of
// one core and a few hundred MiB when a crate spends all of it.

/// Matcher steps of one invocation: every arm tried, every token a fragment takes.
pub(crate) const STEPS_PER_INVOCATION: Limit = Limit::new("macro matcher steps per invocation", Unit::Steps, 1_000_000);
/// Matcher steps of all the invocations of one crate.
pub(crate) const STEPS_PER_CRATE: Limit = Limit::new("macro matcher steps per crate", Unit::Steps, 48_000_000);
/// Output of one invocation.
pub(crate) const TOKENS_PER_INVOCATION: Limit = Limit::new("macro output per invocation", Unit::Tokens, 1_000_000);
pub(crate) const BYTES_PER_INVOCATION: Limit = Limit::new("macro output text per invocation", Unit::Bytes, 16 << 20);
/// Output of all the expansions of one crate: the work of transcribing it.
pub(crate) const TOKENS_PER_CRATE: Limit = Limit::new("macro output per crate", Unit::Tokens, 48_000_000);
pub(crate) const BYTES_PER_CRATE: Limit = Limit::new("macro output text per crate", Unit::Bytes, 192 << 20);
/// Output of all the expansions of one crate that is parsed and analysed as code: what is not
/// passed on to another `macro_rules!` invocation (whose matcher walks it, counted as steps).
/// About a microsecond per token.
pub(crate) const CODE_PER_CRATE: Limit = Limit::new("macro output parsed per crate", Unit::Tokens, 4_000_000);
/// Output one crate holds at once: expansions the loader keeps in the module tree, and those
/// being loaded or visited.
pub(crate) const HELD_TOKENS_PER_CRATE: Limit = Limit::new("macro output held per crate", Unit::Tokens, 2_000_000);
pub(crate) const HELD_BYTES_PER_CRATE: Limit = Limit::new("macro output text held per crate", Unit::Bytes, 32 << 20);
/// Memory a held token takes, as estimated for the run's shared account: the most measured
/// (expansions that declare modules, with their items: 190 bytes a token; statements: 127).
pub(crate) const HELD_TOKEN_MEMORY: u64 = 192;

/// The crate's expansion budgets, with the limits they are given (tests give small ones).
pub(crate) struct Limits {
    pub steps_per_invocation: Limit,
    pub steps_per_crate: Limit,
    pub tokens_per_invocation: Limit,
    pub bytes_per_invocation: Limit,
    pub tokens_per_crate: Limit,
    pub bytes_per_crate: Limit,
    pub code_per_crate: Limit,
    pub held_tokens: Limit,
    pub held_bytes: Limit,
    /// Not the expander's: the source the crate parses ([`crate::surface::guard`]).
    pub source: Limit,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            steps_per_invocation: STEPS_PER_INVOCATION,
            steps_per_crate: STEPS_PER_CRATE,
            tokens_per_invocation: TOKENS_PER_INVOCATION,
            bytes_per_invocation: BYTES_PER_INVOCATION,
            tokens_per_crate: TOKENS_PER_CRATE,
            bytes_per_crate: BYTES_PER_CRATE,
            code_per_crate: CODE_PER_CRATE,
            held_tokens: HELD_TOKENS_PER_CRATE,
            held_bytes: HELD_BYTES_PER_CRATE,
            source: crate::surface::guard::SOURCE_PER_CRATE,
        }
    }
}

/// What a module an expansion declares holds besides its items (its tables in the module
/// tree, the resolver and the exports), counted as held output of this size.
pub(crate) const MODULE_SIZE: Size = Size { tokens: 32, bytes: 256 };

/// What a crate's expansions spent, by budget (see [`Limits`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub steps_per_invocation: u64,
    pub steps_per_crate: u64,
    pub tokens_per_invocation: u64,
    pub bytes_per_invocation: u64,
    pub tokens_per_crate: u64,
    pub bytes_per_crate: u64,
    pub code_per_crate: u64,
    pub held_tokens: u64,
    pub held_bytes: u64,
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "steps {} tokens {} bytes {} code {} held-tokens {} held-bytes {} invocation-steps {} invocation-tokens {} invocation-bytes {}",
            self.steps_per_crate,
            self.tokens_per_crate,
            self.bytes_per_crate,
            self.code_per_crate,
            self.held_tokens,
            self.held_bytes,
            self.steps_per_invocation,
            self.tokens_per_invocation,
            self.bytes_per_invocation
        )
    }
}

/// The output a crate holds: expansions being loaded or visited (given back when done), and
/// what the loader keeps of them (`kept`, never given back).
struct Held {
    tokens: Meter,
    bytes: Meter,
    kept: Size,
    /// The most held when an expansion was let through: what the limits are checked
    /// against. What the loader keeps of the last expansions may take the meters past it,
    /// by at most one expansion's output.
    checked: Size,
    /// What is held of the run's memory account (see [`Held::lease`]).
    leased: u64,
}

/// The run's memory account is asked in steps of this much, so that expansions do not take
/// its lock one by one.
const LEASE_STEP: u64 = 4 << 20;

impl Held {
    /// Brings what this crate holds of the run's memory account in line with what it holds,
    /// as estimated, in steps of [`LEASE_STEP`].
    fn lease(&mut self) {
        let need = memory(Size { tokens: self.tokens.used(), bytes: self.bytes.used() });
        if need > self.leased {
            let more = (need - self.leased).div_ceil(LEASE_STEP) * LEASE_STEP;
            crate::surface::guard::hold(more);
            self.leased += more;
        } else if self.leased - need >= 2 * LEASE_STEP {
            let less = (self.leased - need) / LEASE_STEP * LEASE_STEP - LEASE_STEP;
            crate::surface::guard::unhold(less);
            self.leased -= less;
        }
    }
}

/// What a crate held at one point: see [`Expander::mark`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    held: Size,
    kept: Size,
}

/// The crate-wide macro state, shared by the loader, the resolver and the visitor.
pub(crate) struct Expander<'a> {
    deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    pub edition: Edition,
    budget: RefCell<Budget>,
    held: RefCell<Held>,
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
    #[cfg(test)]
    pub fn new(deps: &'a BTreeMap<String, std::sync::Arc<Exports>>, edition: Edition) -> Self {
        Expander::with_limits(deps, edition, Limits::default())
    }

    pub fn with_limits(deps: &'a BTreeMap<String, std::sync::Arc<Exports>>, edition: Edition, l: Limits) -> Self {
        Expander {
            deps,
            edition,
            budget: RefCell::new(Budget {
                steps_per_invocation: l.steps_per_invocation,
                tokens_per_invocation: l.tokens_per_invocation,
                bytes_per_invocation: l.bytes_per_invocation,
                steps: Meter::new(l.steps_per_crate),
                tokens: Meter::new(l.tokens_per_crate),
                bytes: Meter::new(l.bytes_per_crate),
                code: Meter::new(l.code_per_crate),
            }),
            held: RefCell::new(Held { tokens: Meter::new(l.held_tokens), bytes: Meter::new(l.held_bytes), kept: Size::default(), checked: Size::default(), leased: 0 }),
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

    /// Expand one invocation of `def`. The output is held (counted against what the crate
    /// may hold at once) until [`Expander::release_to`] a mark taken before; the loader, which
    /// keeps what it expands for the whole analysis, never releases it.
    ///
    /// `nested`: the invocation stands in the output of another expansion (see
    /// [`Budget::pass_on`]).
    pub fn expand(&self, def: &MacroDefn, mac: &syn::Macro, nested: bool) -> Result<TokenStream, ExpandFailure> {
        let rules = def.rules.as_ref().map_err(|e| ExpandFailure::Definition(e.clone()))?;
        let call_site = call_site(&mac.path);
        let mut budget = self.budget.borrow_mut();
        let steps_before = budget.steps.used();
        let r = rules
            .expand_sized(&mac.tokens, call_site, &def.dollar_crate, &mut budget, nested)
            .and_then(|(ts, size)| self.hold(size).map(|()| (ts, size)))
            .map_err(ExpandFailure::Expand);
        let steps = budget.steps.used() - steps_before;
        drop(budget);
        let mut stats = self.stats.borrow_mut();
        stats.max_steps = stats.max_steps.max(steps);
        if let Ok((_, size)) = &r {
            stats.max_tokens = stats.max_tokens.max(size.tokens);
            stats.max_bytes = stats.max_bytes.max(size.bytes);
        }
        let r = r.map(|(ts, _)| ts);
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

    fn hold(&self, size: Size) -> Result<(), ExpandError> {
        let mut h = self.held.borrow_mut();
        if !h.bytes.fits(size.bytes) {
            return Err(ExpandError::Budget(crate::resources::meter::Exhausted { limit: h.bytes.limit() }));
        }
        h.tokens.charge(size.tokens).map_err(ExpandError::Budget)?;
        h.bytes.charge(size.bytes).map_err(ExpandError::Budget)?;
        h.checked.tokens = h.checked.tokens.max(h.tokens.used());
        h.checked.bytes = h.checked.bytes.max(h.bytes.used());
        h.lease();
        Ok(())
    }

    /// Counts `size` as held for the rest of the analysis: syntax the loader keeps in the
    /// module tree from an expansion. Never fails: it is already in memory; the next
    /// expansion fails if this went past the limit.
    pub fn keep(&self, size: Size) {
        let mut h = self.held.borrow_mut();
        h.tokens.force(size.tokens);
        h.bytes.force(size.bytes);
        h.kept.tokens += size.tokens;
        h.kept.bytes += size.bytes;
        h.lease();
    }

    /// What the crate holds now: a mark to [`Expander::release_to`] later.
    pub fn mark(&self) -> Mark {
        let h = self.held.borrow();
        Mark { held: Size { tokens: h.tokens.used(), bytes: h.bytes.used() }, kept: h.kept }
    }

    /// Gives back what was held since `mark` (expansions no longer held), except what was
    /// kept since.
    pub fn release_to(&self, mark: Mark) {
        let mut h = self.held.borrow_mut();
        let since = |now: u64, then: u64, kept_now: u64, kept_then: u64| now.saturating_sub(then).saturating_sub(kept_now - kept_then);
        let freed = Size {
            tokens: since(h.tokens.used(), mark.held.tokens, h.kept.tokens, mark.kept.tokens),
            bytes: since(h.bytes.used(), mark.held.bytes, h.kept.bytes, mark.kept.bytes),
        };
        h.tokens.release(freed.tokens);
        h.bytes.release(freed.bytes);
        h.lease();
    }

    /// What the crate's expansions spent of each budget (the most one invocation spent, the
    /// most held at once).
    pub fn usage(&self) -> Usage {
        let b = self.budget.borrow();
        let h = self.held.borrow();
        let st = self.stats.borrow();
        Usage {
            steps_per_invocation: st.max_steps,
            steps_per_crate: b.steps.used(),
            tokens_per_invocation: st.max_tokens,
            bytes_per_invocation: st.max_bytes,
            tokens_per_crate: b.tokens.used(),
            bytes_per_crate: b.bytes.used(),
            code_per_crate: b.code.peak(),
            held_tokens: h.checked.tokens,
            held_bytes: h.checked.bytes,
        }
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

/// The size of an item as syntax: each token of it (counted by the spans the parser keeps:
/// every identifier, literal, punctuation and delimiter) and its text, with the tokens it
/// keeps unparsed (macro arguments, attribute arguments, verbatim items).
pub(crate) fn syntax_size(item: &syn::Item) -> Size {
    use syn::visit::Visit;
    struct Count(Size);
    impl Count {
        fn stream(&mut self, ts: &TokenStream) {
            if let Some(s) = crate::surface::syntax::mbe::measure(ts, u64::MAX) {
                self.0.tokens += s.tokens;
                self.0.bytes += s.bytes;
            }
        }
    }
    impl<'ast> Visit<'ast> for Count {
        fn visit_span(&mut self, _: &Span) {
            self.0.tokens += 1;
            self.0.bytes += 1;
        }
        fn visit_ident(&mut self, i: &'ast Ident) {
            self.0.tokens += 1;
            self.0.bytes += crate::surface::syntax::mbe::leaf_bytes(&TokenTree::Ident(i.clone()));
        }
        fn visit_lit(&mut self, l: &'ast syn::Lit) {
            self.0.tokens += 1;
            let token = match l {
                syn::Lit::Str(x) => x.token(),
                syn::Lit::ByteStr(x) => x.token(),
                syn::Lit::CStr(x) => x.token(),
                syn::Lit::Byte(x) => x.token(),
                syn::Lit::Char(x) => x.token(),
                syn::Lit::Int(x) => x.token(),
                syn::Lit::Float(x) => x.token(),
                syn::Lit::Verbatim(x) => x.clone(),
                syn::Lit::Bool(_) | _ => {
                    self.0.bytes += 5;
                    return;
                }
            };
            self.0.bytes += crate::surface::syntax::mbe::leaf_bytes(&TokenTree::Literal(token));
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.stream(&m.tokens);
            syn::visit::visit_macro(self, m);
        }
        fn visit_meta_list(&mut self, m: &'ast syn::MetaList) {
            self.stream(&m.tokens);
            syn::visit::visit_meta_list(self, m);
        }
        fn visit_item(&mut self, i: &'ast syn::Item) {
            if let syn::Item::Verbatim(ts) = i {
                self.stream(ts);
            }
            syn::visit::visit_item(self, i);
        }
    }
    let mut c = Count(Size::default());
    c.visit_item(item);
    c.0
}

/// The memory `size` of held output takes, as estimated for the run's shared account.
fn memory(size: Size) -> u64 {
    size.tokens.saturating_mul(HELD_TOKEN_MEMORY).saturating_add(size.bytes)
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
