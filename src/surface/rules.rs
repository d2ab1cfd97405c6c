//! Which std/core/alloc items, methods on known std types and foreign symbols show which
//! capability: the built-in table (`data/rules.toml`, compiled in) plus optional user overlays
//! in the same format. `docs/capabilities.md` lists every built-in rule; a test keeps them in
//! step.
//!
//! Matching:
//! - paths: by `::` segments, the longest matching prefix wins (`std::fs::File::create` beats
//!   `std::fs::File`); a leading `core` or `alloc` segment is read as `std`. A `[[method]]`
//!   rule (`type`, `method`) is also the path `type::method`, so `method(t, m)` is
//!   `path(t::m)`. Paths into a crate listed in `symbol_crates` (`libc`) that no path rule
//!   matches resolve through the symbol table by their last segment: `libc::system` is the
//!   foreign symbol `system`.
//! - overlays: every overlay rule that matches wins over every built-in rule, so an overlay
//!   entry governs its whole subtree (an overlay `std::env` marked safe silences
//!   `std::env::var`); among overlay rules the longest prefix wins.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::OnceLock;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::model::Capability;

/// What a rule says about a resolved path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Using this path shows the capability (the rule's primary one; see
    /// [`Rules::path_all`] for all of them).
    Capability(Capability),
    /// Marked safe by an overlay: stop looking (no finding, even if a broader rule matches).
    Safe,
}

/// The built-in table's source, compiled in.
pub const BUILTIN_RULES_TOML: &str = include_str!("../../data/rules.toml");
/// The origin named in the built-in rules' provenance.
pub const BUILTIN_ORIGIN: &str = "data/rules.toml";
/// The only format version this build reads.
pub const FORMAT_VERSION: i64 = 1;

/// What kind of entry a rule came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleKind {
    /// `[[path]]`.
    Path,
    /// `[[method]]`: `type_path` and `method` (the rule's key is `type_path::method`).
    Method { type_path: String, method: String },
    /// `[[symbol]]`.
    Symbol,
    /// `[[syscall]]`: a system call by its name (`SYS_<name>`), for `syscall(SYS_x, ..)` with
    /// a constant number.
    Syscall,
}

/// One rule, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub kind: RuleKind,
    /// The matched key, canonical (`core`/`alloc` written as `std`): `std::fs::write`,
    /// `std::fs::File::write_all` (a method), `system` (a symbol).
    pub key: String,
    /// In the order written, the primary first. Empty exactly when `safe`.
    pub capabilities: Vec<Capability>,
    /// An overlay's `safe = true`.
    pub safe: bool,
    pub note: Option<String>,
    /// `data/rules.toml` for built-in rules, else the overlay's origin.
    pub origin: String,
    /// 1-based position of the key in `origin`.
    pub line: u32,
    pub column: u32,
}

impl Rule {
    pub fn verdict(&self) -> Verdict {
        match self.capabilities.first() {
            Some(c) if !self.safe => Verdict::Capability(*c),
            _ => Verdict::Safe,
        }
    }
}

/// One parsed rules file.
#[derive(Debug, Default)]
struct Table {
    /// Canonical path (methods as `type::method`) → rule.
    paths: HashMap<String, Rule>,
    symbols: HashMap<String, Rule>,
    syscalls: HashMap<String, Rule>,
    /// `[[returns]]`: function path → the type it returns, for method lookups on the result.
    returns: HashMap<String, String>,
    /// `[[builder]]`: constructor path → the builder whose capability depends on its flags.
    builders: HashMap<String, std::sync::Arc<Builder>>,
    symbol_crates: BTreeSet<String>,
    /// Every rule in file order, for listing.
    order: Vec<Rule>,
}

/// A builder whose capability depends on flags set by method calls (`OpenOptions`): where
/// the analysis cannot see every call made on a value from one of its constructors, the value
/// may have any flags, and `unseen` is added at the constructor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builder {
    /// The builder type (`std::fs::OpenOptions`).
    pub ty: String,
    /// Methods that configure it (their own method rules apply).
    pub methods: BTreeSet<String>,
    /// Methods that use it (`open`): a chain from a constructor through `methods` ending in
    /// one of these is seen whole.
    pub terminal: BTreeSet<String>,
    /// The capabilities a builder with unseen flags may have.
    pub unseen: Vec<Capability>,
}

#[derive(Debug)]
pub struct Rules {
    builtin: &'static Table,
    overlay: Option<Table>,
}

/// Every problem of a rules file, one per line as `origin:line:column: message`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RulesError(pub String);

fn builtin_table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(
        || match parse_table(BUILTIN_RULES_TOML, BUILTIN_ORIGIN, false) {
            Ok(t) => t,
            Err(e) => panic!("the built-in rules are invalid (a unit test checks this):\n{e}"),
        },
    )
}

impl Rules {
    /// The built-in table (data/rules.toml, compiled in), parsed once.
    pub fn builtin() -> &'static Rules {
        static RULES: OnceLock<Rules> = OnceLock::new();
        RULES.get_or_init(|| Rules {
            builtin: builtin_table(),
            overlay: None,
        })
    }

    /// The built-in table plus a user overlay (same format, plus `safe = true` entries);
    /// overlay entries win over built-in ones for the same or a longer path.
    pub fn with_overlay(overlay_toml: &str, origin: &str) -> Result<Rules, RulesError> {
        let overlay = parse_table(overlay_toml, origin, true)?;
        Ok(Rules {
            builtin: builtin_table(),
            overlay: Some(overlay),
        })
    }

    /// The verdict for a fully resolved path (segments, `core`/`alloc` already mapped to
    /// `std` by the caller or not: the table handles both), longest matching prefix wins:
    /// `["std","fs","File","create"]` matches a rule for `std::fs::File::create` and, failing
    /// that, one for `std::fs::File`.
    pub fn path(&self, segments: &[&str]) -> Option<Verdict> {
        self.lookup_path(segments).map(Rule::verdict)
    }

    /// A method called on a value whose type the analyzer knows (e.g. type
    /// `std::fs::OpenOptions`, method `write`). The same as `path(type::method)`.
    pub fn method(&self, type_path: &str, method: &str) -> Option<Verdict> {
        self.lookup_method(type_path, method).map(Rule::verdict)
    }

    /// A foreign symbol (an `extern "C"` item name or its `#[link_name]`), e.g. `system`.
    /// The primary capability; [`Rules::foreign_symbol_all`] gives all of them. `None` for
    /// no rule and for a symbol an overlay marks safe.
    pub fn foreign_symbol(&self, symbol: &str) -> Option<Capability> {
        match self.lookup_symbol(symbol)?.verdict() {
            Verdict::Capability(c) => Some(c),
            Verdict::Safe => None,
        }
    }

    /// Every capability of the rule [`Rules::path`] picks; empty when no rule matches or it
    /// is marked safe.
    pub fn path_all(&self, segments: &[&str]) -> &[Capability] {
        self.lookup_path(segments).map_or(&[], |r| &r.capabilities)
    }

    /// Every capability of the rule [`Rules::method`] picks; empty when none or safe.
    pub fn method_all(&self, type_path: &str, method: &str) -> &[Capability] {
        self.lookup_method(type_path, method)
            .map_or(&[], |r| &r.capabilities)
    }

    /// Every capability of a foreign symbol, the primary first; empty when none or safe.
    pub fn foreign_symbol_all(&self, symbol: &str) -> &[Capability] {
        self.lookup_symbol(symbol).map_or(&[], |r| &r.capabilities)
    }

    /// The rule [`Rules::path`] picks, with its provenance.
    pub fn lookup_path(&self, segments: &[&str]) -> Option<&Rule> {
        let segs = canonical_segments(segments);
        if segs.is_empty() {
            return None;
        }
        if let Some(o) = &self.overlay
            && let Some(r) = self.lookup_in(o, &segs)
        {
            return Some(r);
        }
        self.lookup_in(self.builtin, &segs)
    }

    /// The rule [`Rules::method`] picks, with its provenance. `type_path` may carry a
    /// leading `&`/`&mut` and generic arguments; both are ignored.
    pub fn lookup_method(&self, type_path: &str, method: &str) -> Option<&Rule> {
        let ty = strip_type(type_path);
        let mut segs: Vec<&str> = ty.split("::").map(str::trim).collect();
        segs.push(method.trim());
        self.lookup_path(&segs)
    }

    /// The rule [`Rules::foreign_symbol`] picks, with its provenance.
    pub fn lookup_symbol(&self, symbol: &str) -> Option<&Rule> {
        // `#[link_name = "\u{1}foo"]` asks the linker not to mangle `foo`.
        let symbol = symbol.trim().trim_start_matches('\u{1}');
        if let Some(o) = &self.overlay
            && let Some(r) = o.symbols.get(symbol)
        {
            return Some(r);
        }
        self.builtin.symbols.get(symbol)
    }

    /// The rule for system call `name` (without `SYS_`): a `[[syscall]]` entry, else the
    /// `[[symbol]]` rule of the function of that name (`SYS_openat` is what `openat` does).
    pub fn lookup_syscall(&self, name: &str) -> Option<&Rule> {
        if let Some(o) = &self.overlay
            && let Some(r) = o.syscalls.get(name)
        {
            return Some(r);
        }
        self.builtin.syscalls.get(name).or_else(|| self.lookup_symbol(name))
    }

    /// The builder a constructor path makes (`[[builder]]`); `path` is resolved.
    pub fn builder(&self, path: &str) -> Option<std::sync::Arc<Builder>> {
        if self.builtin.builders.is_empty() && self.overlay.as_ref().is_none_or(|o| o.builders.is_empty()) {
            return None;
        }
        let canon = canonical_segments(&path.split("::").collect::<Vec<_>>()).join("::");
        if let Some(o) = &self.overlay
            && let Some(b) = o.builders.get(&canon)
        {
            return Some(b.clone());
        }
        self.builtin.builders.get(&canon).cloned()
    }

    /// The type a function returns when the rules say (`[[returns]]`); `path` is resolved.
    pub fn returns(&self, path: &str) -> Option<&str> {
        let canon = canonical_segments(&path.split("::").collect::<Vec<_>>()).join("::");
        if let Some(o) = &self.overlay
            && let Some(t) = o.returns.get(&canon)
        {
            return Some(t);
        }
        self.builtin.returns.get(&canon).map(String::as_str)
    }

    /// Every rule, built-in ones first, each table in file order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.builtin
            .order
            .iter()
            .chain(self.overlay.iter().flat_map(|o| o.order.iter()))
    }

    /// Crates whose paths resolve through the symbol table (`libc`, ...).
    pub fn symbol_crates(&self) -> impl Iterator<Item = &str> {
        let mut all: BTreeSet<&str> = self
            .builtin
            .symbol_crates
            .iter()
            .map(String::as_str)
            .collect();
        if let Some(o) = &self.overlay {
            all.extend(o.symbol_crates.iter().map(String::as_str));
        }
        all.into_iter()
    }

    fn is_symbol_crate(&self, name: &str) -> bool {
        self.builtin.symbol_crates.contains(name)
            || self
                .overlay
                .as_ref()
                .is_some_and(|o| o.symbol_crates.contains(name))
    }

    fn lookup_in<'t>(&self, table: &'t Table, segs: &[&str]) -> Option<&'t Rule> {
        let mut key = segs.join("::");
        for k in (1..=segs.len()).rev() {
            if let Some(r) = table.paths.get(&key) {
                return Some(r);
            }
            if k > 1 {
                key.truncate(key.len() - segs[k - 1].len() - 2);
            }
        }
        if segs.len() >= 2 && self.is_symbol_crate(segs[0]) {
            return table.symbols.get(segs[segs.len() - 1]);
        }
        None
    }
}

/// The canonical form of a path: `core::arch::asm` and `alloc::...` read as `std::...`, a
/// leading `::` and raw-identifier prefixes dropped.
pub fn canonical_path(segments: &[&str]) -> String {
    canonical_segments(segments).join("::")
}

fn canonical_segments<'a>(segments: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = segments
        .iter()
        .map(|s| s.trim())
        .map(|s| s.strip_prefix("r#").unwrap_or(s))
        .collect();
    while out.first().is_some_and(|s| s.is_empty()) {
        out.remove(0);
    }
    if let Some(first) = out.first_mut()
        && (*first == "core" || *first == "alloc")
    {
        *first = "std";
    }
    out
}

fn strip_type(type_path: &str) -> &str {
    let mut t = type_path.trim();
    loop {
        let before = t;
        t = t.trim_start_matches('&').trim_start();
        if let Some(rest) = t.strip_prefix("mut ") {
            t = rest.trim_start();
        }
        if let Some(rest) = t.strip_prefix("dyn ") {
            t = rest.trim_start();
        }
        if t == before {
            break;
        }
    }
    match t.find('<') {
        Some(i) => t[..i].trim_end(),
        None => t,
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing and validation

struct Problem {
    span: Range<usize>,
    message: String,
}

struct Ctx<'a> {
    src: &'a str,
    origin: &'a str,
    overlay: bool,
    problems: Vec<Problem>,
}

impl Ctx<'_> {
    fn err(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.problems.push(Problem {
            span,
            message: message.into(),
        });
    }

    fn line_col(&self, offset: usize) -> (u32, u32) {
        line_col(self.src, offset)
    }

    fn render(mut self) -> RulesError {
        self.problems.sort_by_key(|p| p.span.start);
        let mut out = String::new();
        for p in &self.problems {
            let (l, c) = line_col(self.src, p.span.start);
            if !out.is_empty() {
                out.push('\n');
            }
            let _ = write!(out, "{}:{l}:{c}: {}", self.origin, p.message);
        }
        RulesError(out)
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(src: &str, offset: usize) -> (u32, u32) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line as u32, col as u32)
}

fn valid_names() -> String {
    Capability::ALL
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    v.type_str()
}

const TOP_KEYS: &[&str] = &["version", "symbol_crates", "path", "method", "symbol", "syscall", "returns", "builder"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Path,
    Method,
    Symbol,
    Syscall,
}

impl EntryKind {
    fn table(self) -> &'static str {
        match self {
            EntryKind::Path => "path",
            EntryKind::Method => "method",
            EntryKind::Symbol => "symbol",
            EntryKind::Syscall => "syscall",
        }
    }
    fn keys(self) -> &'static [&'static str] {
        match self {
            EntryKind::Path => &[
                "path",
                "paths",
                "capability",
                "capabilities",
                "safe",
                "note",
            ],
            EntryKind::Method => &[
                "type",
                "method",
                "methods",
                "capability",
                "capabilities",
                "safe",
                "note",
            ],
            EntryKind::Symbol => &[
                "symbol",
                "symbols",
                "capability",
                "capabilities",
                "safe",
                "note",
            ],
            EntryKind::Syscall => &[
                "syscall",
                "syscalls",
                "capability",
                "capabilities",
                "safe",
                "note",
            ],
        }
    }
}

fn parse_table(src: &str, origin: &str, overlay: bool) -> Result<Table, RulesError> {
    let mut cx = Ctx {
        src,
        origin,
        overlay,
        problems: Vec::new(),
    };
    let (doc, errors) = DeTable::parse_recoverable(src);
    if !errors.is_empty() {
        for e in errors {
            let span = e.span().unwrap_or(0..0);
            cx.err(span, format!("TOML syntax: {}", e.message()));
        }
        return Err(cx.render());
    }
    let doc_span = doc.span();
    let doc = doc.into_inner();
    let mut table = Table::default();

    for (k, _) in doc.iter() {
        if !TOP_KEYS.contains(&k.get_ref().as_ref()) {
            cx.err(
                k.span(),
                format!(
                    "unknown key `{}` (expected one of: {})",
                    k.get_ref(),
                    TOP_KEYS.join(", ")
                ),
            );
        }
    }

    match doc.get("version") {
        None if !overlay => cx.err(doc_span.start..doc_span.start, "missing `version = 1`"),
        None => {}
        Some(v) => match v.get_ref() {
            DeValue::Integer(i)
                if i64::from_str_radix(i.as_str(), i.radix()).ok() == Some(FORMAT_VERSION) => {}
            DeValue::Integer(i) => cx.err(
                v.span(),
                format!(
                    "unsupported version {} (this velaris reads version {FORMAT_VERSION})",
                    i.as_str()
                ),
            ),
            other => cx.err(
                v.span(),
                format!("`version` must be an integer, found {}", type_name(other)),
            ),
        },
    }

    if let Some(v) = doc.get("symbol_crates") {
        for (s, span) in string_list(&mut cx, v, "symbol_crates") {
            if is_ident(&s) {
                table.symbol_crates.insert(s);
            } else {
                cx.err(
                    span,
                    format!("`{s}` is not a crate name as written in paths"),
                );
            }
        }
    }

    if let Some(v) = doc.get("returns") {
        parse_returns(&mut cx, &mut table, v);
    }
    if let Some(v) = doc.get("builder") {
        parse_builders(&mut cx, &mut table, v);
    }

    for kind in [EntryKind::Path, EntryKind::Method, EntryKind::Symbol, EntryKind::Syscall] {
        let Some(v) = doc.get(kind.table()) else {
            continue;
        };
        let DeValue::Array(items) = v.get_ref() else {
            cx.err(
                v.span(),
                format!(
                    "`{}` must be an array of tables ([[{}]]), found {}",
                    kind.table(),
                    kind.table(),
                    type_name(v.get_ref())
                ),
            );
            continue;
        };
        for item in items.iter() {
            let DeValue::Table(entry) = item.get_ref() else {
                cx.err(
                    item.span(),
                    format!("[[{}]] entries must be tables", kind.table()),
                );
                continue;
            };
            parse_entry(&mut cx, &mut table, kind, entry, item.span());
        }
    }

    if cx.problems.is_empty() {
        Ok(table)
    } else {
        Err(cx.render())
    }
}

fn string_list(
    cx: &mut Ctx<'_>,
    v: &Spanned<DeValue<'_>>,
    key: &str,
) -> Vec<(String, Range<usize>)> {
    match v.get_ref() {
        DeValue::Array(items) => {
            let mut out = Vec::new();
            for item in items.iter() {
                match item.get_ref() {
                    DeValue::String(s) => out.push((s.to_string(), item.span())),
                    other => cx.err(
                        item.span(),
                        format!("`{key}` items must be strings, found {}", type_name(other)),
                    ),
                }
            }
            if out.is_empty() && items.is_empty() {
                cx.err(v.span(), format!("`{key}` is empty"));
            }
            out
        }
        other => {
            cx.err(
                v.span(),
                format!(
                    "`{key}` must be an array of strings, found {}",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    }
}

fn one_string(
    cx: &mut Ctx<'_>,
    v: &Spanned<DeValue<'_>>,
    key: &str,
) -> Option<(String, Range<usize>)> {
    match v.get_ref() {
        DeValue::String(s) => Some((s.to_string(), v.span())),
        other => {
            cx.err(
                v.span(),
                format!("`{key}` must be a string, found {}", type_name(other)),
            );
            None
        }
    }
}

/// `one` or `many` (exactly one of them) as a list of strings.
fn one_or_many(
    cx: &mut Ctx<'_>,
    entry: &DeTable<'_>,
    entry_span: &Range<usize>,
    table: &str,
    one: &str,
    many: &str,
) -> Vec<(String, Range<usize>)> {
    match (entry.get(one), entry.get(many)) {
        (Some(a), Some(_)) => {
            cx.err(
                a.span(),
                format!("[[{table}]] has both `{one}` and `{many}`: use one"),
            );
            Vec::new()
        }
        (Some(a), None) => one_string(cx, a, one).into_iter().collect(),
        (None, Some(m)) => string_list(cx, m, many),
        (None, None) => {
            cx.err(
                entry_span.clone(),
                format!("[[{table}]] needs `{one}` or `{many}`"),
            );
            Vec::new()
        }
    }
}

fn parse_entry(
    cx: &mut Ctx<'_>,
    table: &mut Table,
    kind: EntryKind,
    entry: &DeTable<'_>,
    entry_span: Range<usize>,
) {
    let name = kind.table();
    for (k, _) in entry.iter() {
        if !kind.keys().contains(&k.get_ref().as_ref()) {
            cx.err(
                k.span(),
                format!(
                    "unknown key `{}` in [[{name}]] (expected one of: {})",
                    k.get_ref(),
                    kind.keys().join(", ")
                ),
            );
        }
    }

    // Capabilities / safe.
    let safe = match entry.get("safe") {
        None => false,
        Some(v) => match v.get_ref() {
            DeValue::Boolean(b) => {
                // The built-in table lists harmless system calls (a number is not a name:
                // it must say which do nothing the capabilities cover), and exceptions to a
                // broader rule (`std::fs::File::from` under `std::fs::File`), each with why.
                if *b && !cx.overlay && kind != EntryKind::Syscall && !entry.contains_key("note") {
                    cx.err(
                        v.span(),
                        "`safe = true` in the built-in table needs a `note` saying why (an exception to a broader rule)",
                    );
                }
                *b
            }
            other => {
                cx.err(
                    v.span(),
                    format!("`safe` must be a boolean, found {}", type_name(other)),
                );
                false
            }
        },
    };
    let mut caps: Vec<Capability> = Vec::new();
    let cap_strings = match (entry.get("capability"), entry.get("capabilities")) {
        (Some(a), Some(_)) => {
            cx.err(
                a.span(),
                format!("[[{name}]] has both `capability` and `capabilities`: use one"),
            );
            Vec::new()
        }
        (Some(a), None) => one_string(cx, a, "capability").into_iter().collect(),
        (None, Some(m)) => string_list(cx, m, "capabilities"),
        (None, None) => {
            if !safe {
                cx.err(
                    entry_span.clone(),
                    format!(
                        "[[{name}]] needs `capability = \"..\"`, `capabilities = [..]`{}",
                        if cx.overlay { " or `safe = true`" } else { "" }
                    ),
                );
            }
            Vec::new()
        }
    };
    for (s, span) in cap_strings {
        match s.parse::<Capability>() {
            Ok(c) if caps.contains(&c) => cx.err(span, format!("capability `{c}` listed twice")),
            Ok(c) => caps.push(c),
            Err(_) => cx.err(
                span,
                format!("unknown capability `{s}` (valid: {})", valid_names()),
            ),
        }
    }
    if safe && (entry.contains_key("capability") || entry.contains_key("capabilities")) {
        let span = entry
            .get("capability")
            .or_else(|| entry.get("capabilities"))
            .map_or(entry_span.clone(), |v| v.span());
        cx.err(span, "a `safe = true` entry cannot also name a capability");
    }
    let note = entry
        .get("note")
        .and_then(|v| one_string(cx, v, "note"))
        .map(|(s, _)| s);

    // Keys.
    let mut keys: Vec<(String, RuleKind, Range<usize>)> = Vec::new();
    match kind {
        EntryKind::Path => {
            for (p, span) in one_or_many(cx, entry, &entry_span, name, "path", "paths") {
                match parse_path(&p) {
                    Ok(canon) => keys.push((canon, RuleKind::Path, span)),
                    Err(m) => cx.err(span, m),
                }
            }
        }
        EntryKind::Method => {
            let ty = match entry.get("type") {
                Some(v) => one_string(cx, v, "type").and_then(|(t, span)| match parse_path(&t) {
                    Ok(c) => Some(c),
                    Err(m) => {
                        cx.err(span, m);
                        None
                    }
                }),
                None => {
                    cx.err(entry_span.clone(), "[[method]] needs `type = \"..\"`");
                    None
                }
            };
            let methods = one_or_many(cx, entry, &entry_span, name, "method", "methods");
            for (m, span) in methods {
                if !is_ident(&m) {
                    cx.err(span, format!("`{m}` is not a method name"));
                    continue;
                }
                if let Some(ty) = &ty {
                    keys.push((
                        format!("{ty}::{m}"),
                        RuleKind::Method {
                            type_path: ty.clone(),
                            method: m,
                        },
                        span,
                    ));
                }
            }
        }
        EntryKind::Syscall => {
            for (s, span) in one_or_many(cx, entry, &entry_span, name, "syscall", "syscalls") {
                if !is_ident(&s) || s.starts_with("SYS_") {
                    cx.err(span, format!("`{s}` is not a system call name (the name without `SYS_`, such as `execve`)"));
                } else {
                    keys.push((s, RuleKind::Syscall, span));
                }
            }
        }
        EntryKind::Symbol => {
            for (s, span) in one_or_many(cx, entry, &entry_span, name, "symbol", "symbols") {
                if s.is_empty() || s.contains(char::is_whitespace) || s.contains("::") {
                    cx.err(
                        span,
                        format!("`{s}` is not a symbol name (a bare name such as `system`)"),
                    );
                } else {
                    keys.push((s, RuleKind::Symbol, span));
                }
            }
        }
    }

    if !safe && caps.is_empty() {
        // Already reported above; don't add half-formed rules.
        return;
    }
    for (key, rk, span) in keys {
        let (line, column) = cx.line_col(span.start);
        let rule = Rule {
            kind: rk,
            key: key.clone(),
            capabilities: if safe { Vec::new() } else { caps.clone() },
            safe,
            note: note.clone(),
            origin: cx.origin.to_string(),
            line,
            column,
        };
        let map = match kind {
            EntryKind::Symbol => &mut table.symbols,
            EntryKind::Syscall => &mut table.syscalls,
            EntryKind::Path | EntryKind::Method => &mut table.paths,
        };
        if let Some(first) = map.get(&key) {
            let what = match (&first.kind, &rule.kind) {
                (RuleKind::Method { .. }, RuleKind::Path)
                | (RuleKind::Path, RuleKind::Method { .. }) => {
                    " (a [[method]] rule is also the path `type::method`)"
                }
                _ => "",
            };
            let msg = format!(
                "duplicate rule for `{key}`: first at {}:{}{what}",
                first.line, first.column
            );
            cx.err(span, msg);
            continue;
        }
        map.insert(key, rule.clone());
        table.order.push(rule);
    }
}

/// `[[returns]]`: `path` or `paths`, and `type`. Type information, not a capability: a
/// function whose result is of another type than the one it belongs to
/// (`std::fs::File::options` returns a `std::fs::OpenOptions`), so that methods called on
/// the result are looked up on the right type.
fn parse_returns(cx: &mut Ctx<'_>, table: &mut Table, v: &toml::Spanned<DeValue<'_>>) {
    let DeValue::Array(items) = v.get_ref() else {
        cx.err(v.span(), "`returns` must be an array of tables ([[returns]])");
        return;
    };
    for item in items.iter() {
        let DeValue::Table(entry) = item.get_ref() else {
            cx.err(item.span(), "[[returns]] entries must be tables");
            continue;
        };
        let span = item.span();
        for (k, _) in entry.iter() {
            if !["path", "paths", "type"].contains(&k.get_ref().as_ref()) {
                cx.err(k.span(), format!("unknown key `{}` in [[returns]] (expected one of: path, paths, type)", k.get_ref()));
            }
        }
        let ty = match entry.get("type") {
            Some(t) => one_string(cx, t, "type").and_then(|(t, sp)| match parse_path(&t) {
                Ok(c) => Some(c),
                Err(m) => {
                    cx.err(sp, m);
                    None
                }
            }),
            None => {
                cx.err(span.clone(), "[[returns]] needs `type = \"..\"`");
                None
            }
        };
        for (p, sp) in one_or_many(cx, entry, &span, "returns", "path", "paths") {
            match (parse_path(&p), &ty) {
                (Ok(canon), Some(t)) => {
                    table.returns.insert(canon, t.clone());
                }
                (Err(m), _) => cx.err(sp, m),
                _ => {}
            }
        }
    }
}

/// `[[builder]]`: `type`, `constructors`, `methods`, `terminal`, and `capability` or
/// `capabilities` (what a value whose flags are not all seen may do).
fn parse_builders(cx: &mut Ctx<'_>, table: &mut Table, v: &toml::Spanned<DeValue<'_>>) {
    const KEYS: &[&str] = &["type", "constructors", "methods", "terminal", "capability", "capabilities", "note"];
    let DeValue::Array(items) = v.get_ref() else {
        cx.err(v.span(), "`builder` must be an array of tables ([[builder]])");
        return;
    };
    for item in items.iter() {
        let DeValue::Table(entry) = item.get_ref() else {
            cx.err(item.span(), "[[builder]] entries must be tables");
            continue;
        };
        let span = item.span();
        for (k, _) in entry.iter() {
            if !KEYS.contains(&k.get_ref().as_ref()) {
                cx.err(k.span(), format!("unknown key `{}` in [[builder]] (expected one of: {})", k.get_ref(), KEYS.join(", ")));
            }
        }
        let ty = match entry.get("type").and_then(|t| one_string(cx, t, "type")) {
            Some((t, sp)) => match parse_path(&t) {
                Ok(c) => Some(c),
                Err(m) => {
                    cx.err(sp, m);
                    None
                }
            },
            None => {
                cx.err(span.clone(), "[[builder]] needs `type = \"..\"`");
                None
            }
        };
        let list = |cx: &mut Ctx<'_>, key: &str| -> Vec<(String, Range<usize>)> {
            match entry.get(key) {
                Some(v) => string_list(cx, v, key),
                None => {
                    cx.err(span.clone(), format!("[[builder]] needs `{key} = [..]`"));
                    Vec::new()
                }
            }
        };
        let ctors = list(cx, "constructors");
        let methods: BTreeSet<String> = list(cx, "methods").into_iter().map(|(m, _)| m).collect();
        let terminal: BTreeSet<String> = list(cx, "terminal").into_iter().map(|(m, _)| m).collect();
        let caps: Vec<(String, Range<usize>)> = match (entry.get("capability"), entry.get("capabilities")) {
            (Some(a), None) => one_string(cx, a, "capability").into_iter().collect(),
            (None, Some(m)) => string_list(cx, m, "capabilities"),
            _ => {
                cx.err(span.clone(), "[[builder]] needs one of `capability` or `capabilities`");
                Vec::new()
            }
        };
        let mut unseen = Vec::new();
        for (c, sp) in caps {
            match c.parse::<Capability>() {
                Ok(c) => unseen.push(c),
                Err(_) => cx.err(sp, format!("unknown capability `{c}` (valid: {})", valid_names())),
            }
        }
        let Some(ty) = ty else { continue };
        let b = std::sync::Arc::new(Builder { ty, methods, terminal, unseen });
        for (c, sp) in ctors {
            match parse_path(&c) {
                Ok(canon) => {
                    table.builders.insert(canon, b.clone());
                }
                Err(m) => cx.err(sp, m),
            }
        }
    }
}

fn is_ident(s: &str) -> bool {
    let s = s.strip_prefix("r#").unwrap_or(s);
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// Validate and canonicalize `a::b::c`.
fn parse_path(p: &str) -> Result<String, String> {
    let trimmed = p.trim();
    let body = trimmed.strip_prefix("::").unwrap_or(trimmed);
    let segs: Vec<&str> = body.split("::").collect();
    if body.is_empty() || segs.iter().any(|s| !is_ident(s.trim())) {
        return Err(format!(
            "`{p}` is not a path (identifiers separated by `::`, e.g. `std::fs::write`{})",
            if p.contains('-') {
                "; crate names are written with `_`"
            } else {
                ""
            }
        ));
    }
    Ok(canonical_path(&segs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(p: &str) -> Vec<&str> {
        p.split("::").collect()
    }

    fn cap(p: &str) -> Option<Verdict> {
        Rules::builtin().path(&segs(p))
    }

    use Capability::*;

    #[test]
    fn builtin_table_is_valid() {
        let t = parse_table(BUILTIN_RULES_TOML, BUILTIN_ORIGIN, false);
        if let Err(e) = &t {
            panic!("{e}");
        }
        let rules = Rules::builtin();
        let mut seen = BTreeSet::new();
        for r in rules.rules() {
            if r.safe {
                // Harmless system calls, and exceptions to a broader rule, each with its note.
                assert!(r.kind == RuleKind::Syscall || r.note.is_some(), "built-in rule {} is safe without a note", r.key);
                continue;
            }
            assert!(!r.capabilities.is_empty(), "{}", r.key);
            for c in &r.capabilities {
                // Round-trips through its name: a real Capability.
                assert_eq!(c.as_str().parse::<Capability>().unwrap(), *c);
            }
            let ns = if r.kind == RuleKind::Symbol {
                "symbol"
            } else {
                "path"
            };
            assert!(seen.insert((ns, r.key.clone())), "duplicate {}", r.key);
            if r.kind != RuleKind::Symbol {
                assert!(
                    !r.key.starts_with("core::") && !r.key.starts_with("alloc::"),
                    "{}",
                    r.key
                );
            }
        }
        assert!(rules.rules().count() > 300);
        // Every capability name in the raw file parses (the table refuses others, but say so).
        for line in BUILTIN_RULES_TOML.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("capability = ") {
                let name = rest.trim_matches('"');
                assert!(name.parse::<Capability>().is_ok(), "{name}");
            }
        }
    }

    #[test]
    fn longest_prefix_and_core_alloc() {
        assert_eq!(cap("std::fs::write"), Some(Verdict::Capability(FsWrite)));
        assert_eq!(
            cap("std::fs::File::create"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            cap("std::fs::File::open"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(cap("std::fs::File"), Some(Verdict::Capability(FsRead)));
        assert_eq!(
            cap("std::fs::File::try_clone"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            cap("std::fs::File::set_len"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(cap("std::fs"), None);
        assert_eq!(cap("std::fs::Permissions"), None);
        assert_eq!(
            cap("std::fs::writer"),
            None,
            "segments, not string prefixes"
        );
        assert_eq!(
            cap("std::process::Command::new"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(
            cap("std::process::Command"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(cap("std::process::Child"), None);
        assert_eq!(cap("core::arch::asm"), Some(Verdict::Capability(Asm)));
        assert_eq!(cap("std::arch::asm"), Some(Verdict::Capability(Asm)));
        assert_eq!(
            cap("core::arch::global_asm"),
            Some(Verdict::Capability(Asm))
        );
        assert_eq!(
            cap("::core::arch::naked_asm"),
            Some(Verdict::Capability(Asm))
        );
        assert_eq!(cap("core::arch::x86_64::_rdtsc"), None);
        assert_eq!(cap("std::env::var"), Some(Verdict::Capability(EnvRead)));
        assert_eq!(cap("std::env::args"), None);
        assert_eq!(
            cap("std::env::set_var"),
            Some(Verdict::Capability(EnvWrite))
        );
        assert_eq!(
            cap("std::env::current_exe"),
            Some(Verdict::Capability(EnvRead))
        );
        assert_eq!(
            cap("std::net::TcpListener::bind"),
            Some(Verdict::Capability(NetListen))
        );
        assert_eq!(
            cap("std::net::TcpStream::connect"),
            Some(Verdict::Capability(NetConnect))
        );
        assert_eq!(cap("std::net::TcpStream"), None);
        assert_eq!(
            cap("libloading::Library::new"),
            Some(Verdict::Capability(DynamicLoad))
        );
        assert_eq!(
            cap("std::os::unix::process::CommandExt::exec"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(cap("std::os::unix::fs::PermissionsExt"), None);
        assert_eq!(Rules::builtin().path(&[]), None);
        assert_eq!(canonical_path(&["alloc", "vec", "Vec"]), "std::vec::Vec");
        assert_eq!(canonical_path(&["", "r#core", "fs"]), "std::fs");
    }

    #[test]
    fn several_capabilities() {
        let r = Rules::builtin();
        assert_eq!(r.path_all(&segs("std::fs::copy")), &[FsWrite, FsRead]);
        assert_eq!(
            r.path(&segs("std::fs::copy")),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            r.path_all(&segs("std::os::unix::net::UnixListener::bind")),
            &[NetListen, FsWrite]
        );
        assert_eq!(
            r.path_all(&segs("std::os::unix::net::UnixListener")),
            &[NetListen]
        );
        assert_eq!(r.foreign_symbol("open"), Some(FsRead));
        assert_eq!(r.foreign_symbol_all("open"), &[FsRead, FsWrite]);
        assert_eq!(r.foreign_symbol_all("openat"), &[FsRead, FsWrite]);
        assert_eq!(r.foreign_symbol_all("fopen"), &[FsRead, FsWrite]);
        assert_eq!(r.foreign_symbol_all("creat"), &[FsWrite]);
        assert_eq!(r.foreign_symbol_all("nosuchthing"), &[] as &[Capability]);
        assert_eq!(
            r.path_all(&segs("std::fs::Permissions")),
            &[] as &[Capability]
        );
    }

    #[test]
    fn methods() {
        let r = Rules::builtin();
        let m = |t, m| r.method(t, m);
        assert_eq!(
            m("std::fs::OpenOptions", "write"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            m("std::fs::OpenOptions", "append"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            m("std::fs::OpenOptions", "read"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            m("std::fs::OpenOptions", "open"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            m("core::fs::OpenOptions", "create"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            m("&mut std::fs::File", "write_all"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(
            m("std::fs::File", "read_to_end"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            m("std::path::Path", "exists"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            m("&std::path::PathBuf", "is_dir"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(m("std::path::Path", "join"), None);
        assert_eq!(
            m("std::net::UdpSocket", "send_to"),
            Some(Verdict::Capability(NetConnect))
        );
        assert_eq!(m("std::net::UdpSocket", "recv_from"), None);
        assert_eq!(
            m("std::net::TcpListener", "accept"),
            Some(Verdict::Capability(NetListen))
        );
        assert_eq!(
            m("std::process::Command", "arg"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(
            m("str", "to_socket_addrs"),
            Some(Verdict::Capability(NetConnect))
        );
        assert_eq!(m("std::vec::Vec<u8>", "push"), None);
        // A method rule is also a UFCS path.
        assert_eq!(
            cap("std::path::Path::exists"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            cap("std::os::unix::fs::FileExt::write_at"),
            Some(Verdict::Capability(FsWrite))
        );
        let rule = r.lookup_method("std::fs::File", "set_len").unwrap();
        assert_eq!(rule.origin, BUILTIN_ORIGIN);
        assert!(rule.line > 1);
        assert_eq!(
            rule.kind,
            RuleKind::Method {
                type_path: "std::fs::File".into(),
                method: "set_len".into()
            }
        );
    }

    #[test]
    fn symbols_and_symbol_crates() {
        let r = Rules::builtin();
        for (s, c) in [
            ("system", ProcessSpawn),
            ("execve", ProcessSpawn),
            ("posix_spawnp", ProcessSpawn),
            ("connect", NetConnect),
            ("getaddrinfo", NetConnect),
            ("listen", NetListen),
            ("accept4", NetListen),
            ("unlink", FsWrite),
            ("stat", FsRead),
            ("getenv", EnvRead),
            ("setenv", EnvWrite),
            ("dlopen", DynamicLoad),
            ("syscall", Unanalyzed),
        ] {
            assert_eq!(r.foreign_symbol(s), Some(c), "{s}");
        }
        assert_eq!(r.foreign_symbol("\u{1}system"), Some(ProcessSpawn));
        assert_eq!(r.foreign_symbol("malloc"), None);
        assert_eq!(cap("libc::system"), Some(Verdict::Capability(ProcessSpawn)));
        assert_eq!(r.path_all(&segs("libc::open")), &[FsRead, FsWrite]);
        assert_eq!(cap("libc::c_int"), None);
        assert_eq!(cap("libc"), None);
        assert_eq!(
            cap("windows_sys::Win32::System::Threading::CreateProcessW"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(cap("notlibc::system"), None);
        assert_eq!(
            r.symbol_crates().collect::<Vec<_>>(),
            ["libc", "winapi", "windows_sys"]
        );
    }

    #[test]
    fn overlay_safe_and_custom_paths() {
        let overlay = r#"
symbol_crates = ["mysys"]

[[path]]
path = "mycorp_fs::write_atomic"
capability = "fs.write"

[[path]]
paths = ["mycorp_proc::run_git", "std::env::var"]
safe = true
note = "reviewed wrapper"

[[path]]
path = "std::fs"
capability = "fs.read"

[[method]]
type = "mycorp_net::Client"
method = "get"
capabilities = ["net.connect", "env.read"]

[[symbol]]
symbol = "system"
safe = true

[[symbol]]
symbol = "my_spawn"
capability = "process.spawn"
"#;
        let r = Rules::with_overlay(overlay, "velaris.toml").unwrap();
        assert_eq!(
            cap_in(&r, "mycorp_fs::write_atomic"),
            Some(Verdict::Capability(FsWrite))
        );
        assert_eq!(cap_in(&r, "mycorp_proc::run_git"), Some(Verdict::Safe));
        assert_eq!(
            cap_in(&r, "mycorp_proc::run_git::inner"),
            Some(Verdict::Safe)
        );
        assert_eq!(cap_in(&r, "std::env::var"), Some(Verdict::Safe));
        assert_eq!(r.path_all(&segs("std::env::var")), &[] as &[Capability]);
        assert_eq!(
            cap_in(&r, "std::env::var_os"),
            Some(Verdict::Capability(EnvRead))
        );
        // The overlay governs its subtree: `std::fs` beats the built-in `std::fs::write`.
        assert_eq!(
            cap_in(&r, "std::fs::write"),
            Some(Verdict::Capability(FsRead))
        );
        assert_eq!(
            r.method_all("mycorp_net::Client", "get"),
            &[NetConnect, EnvRead]
        );
        assert_eq!(
            r.method("mycorp_net::Client", "get"),
            Some(Verdict::Capability(NetConnect))
        );
        assert_eq!(r.foreign_symbol("system"), None);
        assert_eq!(r.lookup_symbol("system").unwrap().verdict(), Verdict::Safe);
        assert_eq!(cap_in(&r, "libc::system"), Some(Verdict::Safe));
        assert_eq!(r.foreign_symbol("execve"), Some(ProcessSpawn));
        assert_eq!(
            cap_in(&r, "mysys::my_spawn"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        assert_eq!(
            cap_in(&r, "mysys::execve"),
            Some(Verdict::Capability(ProcessSpawn))
        );
        let rule = r.lookup_path(&segs("mycorp_fs::write_atomic")).unwrap();
        assert_eq!(
            (rule.origin.as_str(), rule.line, rule.column),
            ("velaris.toml", 5, 8)
        );
        // The built-in table is untouched.
        assert_eq!(cap("std::env::var"), Some(Verdict::Capability(EnvRead)));
        assert!(r.rules().count() > Rules::builtin().rules().count());
    }

    fn cap_in(r: &Rules, p: &str) -> Option<Verdict> {
        r.path(&segs(p))
    }

    #[test]
    fn overlay_errors_all_at_once_with_positions() {
        let overlay = "version = 1
bogus = 3

[[path]]
path = \"a::b\"
capability = \"fs.exec\"

[[path]]
path = \"a::b\"
capability = \"fs.read\"

[[path]]
path = \"not a path\"
capability = \"fs.read\"

[[path]]
path = \"c::d\"

[[path]]
path = \"e::f\"
safe = true
capability = \"fs.read\"

[[symbol]]
symbols = [\"x\", \"x\"]
capabilities = [\"env.read\", \"env.read\", 3]

[[method]]
method = \"m\"
capability = \"fs.read\"
colour = \"red\"
";
        let err = Rules::with_overlay(overlay, "velaris.toml").unwrap_err().0;
        let lines: Vec<&str> = err.lines().collect();
        let expect = [
            "velaris.toml:2:1: unknown key `bogus`",
            "velaris.toml:6:14: unknown capability `fs.exec` (valid: fs.read, fs.write, net.connect, net.listen, process.spawn, env.read, env.write, ffi, unsafe, asm, dynamic-load, pre-main, build.script, build.proc-macro, build.native, unanalyzed)",
            "velaris.toml:13:8: `not a path` is not a path",
            "needs `capability = \"..\"`, `capabilities = [..]` or `safe = true`",
            "velaris.toml:22:14: a `safe = true` entry cannot also name a capability",
            "velaris.toml:25:17: duplicate rule for `x`: first at 25:12",
            "velaris.toml:26:29: capability `env.read` listed twice",
            "velaris.toml:26:41: `capabilities` items must be strings, found integer",
            "[[method]] needs `type = \"..\"`",
            "velaris.toml:31:1: unknown key `colour` in [[method]]",
        ];
        for e in expect {
            assert!(
                lines.iter().any(|l| l.contains(e)),
                "missing {e:?} in\n{err}"
            );
        }
        // `a::b` was never added (its capability was invalid), so no duplicate for it.
        assert!(!err.contains("duplicate rule for `a::b`"), "{err}");
        // Sorted by position.
        let positions: Vec<(u32, u32)> = lines
            .iter()
            .map(|l| {
                let mut it = l.split(':').skip(1);
                (
                    it.next().unwrap().parse().unwrap(),
                    it.next().unwrap().parse().unwrap(),
                )
            })
            .collect();
        assert!(positions.is_sorted(), "{err}");
    }

    #[test]
    fn overlay_syntax_errors_and_versions() {
        let err = Rules::with_overlay("[[path]\npath = 1", "o.toml")
            .unwrap_err()
            .0;
        assert!(err.starts_with("o.toml:1:"), "{err}");
        assert!(err.contains("TOML syntax"), "{err}");
        let err = Rules::with_overlay("version = 2", "o.toml").unwrap_err().0;
        assert_eq!(
            err,
            "o.toml:1:11: unsupported version 2 (this velaris reads version 1)"
        );
        let err = Rules::with_overlay("path = \"x\"", "o.toml").unwrap_err().0;
        assert!(err.contains("must be an array of tables"), "{err}");
        let err = Rules::with_overlay(
            "[[path]]\npath = \"my-crate::f\"\ncapability = \"ffi\"",
            "o.toml",
        )
        .unwrap_err()
        .0;
        assert!(err.contains("crate names are written with `_`"), "{err}");
        // An empty overlay is fine.
        assert!(Rules::with_overlay("", "o.toml").is_ok());
        // The built-in table may not carry `safe`.
        let err = parse_table(
            "version = 1\n[[path]]\npath = \"a\"\nsafe = true",
            "b.toml",
            false,
        )
        .unwrap_err()
        .0;
        assert!(err.contains("needs a `note`"), "{err}");
        // With its reason, an exception to a broader rule is allowed.
        assert!(parse_table("version = 1\n[[path]]\npath = \"a\"\nsafe = true\nnote = \"why\"", "b.toml", false).is_ok());
        let err = parse_table("", "b.toml", false).unwrap_err().0;
        assert!(err.contains("missing `version = 1`"), "{err}");
    }

    #[test]
    fn duplicate_between_path_and_method() {
        let overlay = "[[path]]\npath = \"a::T::m\"\ncapability = \"ffi\"\n\n[[method]]\ntype = \"a::T\"\nmethod = \"m\"\ncapability = \"ffi\"\n";
        let err = Rules::with_overlay(overlay, "o.toml").unwrap_err().0;
        assert!(err.contains("o.toml:7:10: duplicate rule for `a::T::m`: first at 2:8 (a [[method]] rule is also the path `type::method`)"), "{err}");
        let overlay = "[[path]]\npath = \"core::x\"\ncapability = \"ffi\"\n[[path]]\npath = \"std::x\"\ncapability = \"ffi\"\n";
        let err = Rules::with_overlay(overlay, "o.toml").unwrap_err().0;
        assert!(err.contains("duplicate rule for `std::x`"), "{err}");
    }

    // ------------------------------------------------------------------ docs/capabilities.md

    /// The rule tables of one capability's section of docs/capabilities.md.
    fn doc_tables(cap: Capability) -> String {
        let rules: Vec<&Rule> = Rules::builtin()
            .rules()
            .filter(|r| r.capabilities.contains(&cap))
            .collect();
        // "also fs.write; reads the source, writes the destination"
        let notes = |r: &Rule| {
            let others: Vec<&str> = r
                .capabilities
                .iter()
                .filter(|c| **c != cap)
                .map(|c| c.as_str())
                .collect();
            let mut n = Vec::new();
            if !others.is_empty() {
                n.push(format!("also {}", others.join(", ")));
            }
            n.extend(r.note.clone());
            n.join("; ")
        };
        let mut out = String::new();
        let paths: Vec<&&Rule> = rules.iter().filter(|r| r.kind == RuleKind::Path).collect();
        if !paths.is_empty() {
            out.push_str("| Path (and everything under it) | Notes |\n|---|---|\n");
            for r in paths {
                let _ = writeln!(out, "| `{}` | {} |", r.key, notes(r));
            }
            out.push('\n');
        }
        // Methods grouped by type (and notes), in file order.
        let mut groups: Vec<(String, Vec<String>, String)> = Vec::new();
        for r in &rules {
            if let RuleKind::Method { type_path, method } = &r.kind {
                let n = notes(r);
                match groups.iter_mut().find(|g| g.0 == *type_path && g.2 == n) {
                    Some(g) => g.1.push(method.clone()),
                    None => groups.push((type_path.clone(), vec![method.clone()], n)),
                }
            }
        }
        if !groups.is_empty() {
            out.push_str("| Methods on a value of type | Methods | Notes |\n|---|---|---|\n");
            for (t, ms, n) in groups {
                let ms: Vec<String> = ms.iter().map(|m| format!("`{m}`")).collect();
                let _ = writeln!(out, "| `{t}` | {} | {n} |", ms.join(", "));
            }
            out.push('\n');
        }
        let mut sym_groups: Vec<(Vec<String>, String)> = Vec::new();
        for r in &rules {
            if r.kind == RuleKind::Symbol {
                let n = notes(r);
                match sym_groups.iter_mut().find(|g| g.1 == n) {
                    Some(g) => g.0.push(r.key.clone()),
                    None => sym_groups.push((vec![r.key.clone()], n)),
                }
            }
        }
        let syscalls: Vec<String> = rules.iter().filter(|r| r.kind == RuleKind::Syscall).map(|r| format!("`SYS_{}`", r.key)).collect();
        if !syscalls.is_empty() {
            let _ = writeln!(out, "System calls by constant number (`libc::syscall(SYS_<name>, ..)`; a name not listed here takes the rule of the foreign symbol of that name): {}\n", syscalls.join(", "));
        }
        if !sym_groups.is_empty() {
            out.push_str("Foreign symbols (also `libc::<name>`, `windows_sys::..::<name>`, `winapi::..::<name>`):\n\n");
            for (syms, n) in sym_groups {
                let syms: Vec<String> = syms.iter().map(|s| format!("`{s}`")).collect();
                let _ = write!(out, "- {}", syms.join(", "));
                if !n.is_empty() {
                    let _ = write!(out, " ({n})");
                }
                out.push('\n');
            }
            out.push('\n');
        }
        out
    }

    /// `cargo test --lib surface::rules::tests::print_doc_tables -- --ignored --nocapture`
    /// prints the tables for docs/capabilities.md.
    #[test]
    #[ignore]
    fn print_doc_tables() {
        for c in Capability::ALL {
            println!("## {c}\n\n{}", doc_tables(*c));
        }
    }

    fn doc_sections() -> Vec<(String, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/capabilities.md");
        let doc = std::fs::read_to_string(path).expect("docs/capabilities.md");
        let mut sections: Vec<(String, String)> = Vec::new();
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                sections.push((h.trim().to_string(), String::new()));
            } else if let Some(s) = sections.last_mut() {
                s.1.push_str(line);
                s.1.push('\n');
            }
        }
        sections
    }

    #[test]
    fn docs_list_every_harmless_system_call() {
        let sections = doc_sections();
        let text = &sections.iter().find(|s| s.0 == "unanalyzed").expect("## unanalyzed").1;
        let missing: Vec<&str> = Rules::builtin()
            .rules()
            .filter(|r| r.kind == RuleKind::Syscall && r.safe)
            .filter(|r| !text.contains(&format!("`SYS_{}`", r.key)))
            .map(|r| r.key.as_str())
            .collect();
        assert!(missing.is_empty(), "docs/capabilities.md (## unanalyzed) does not list: {missing:?}");
    }

    #[test]
    fn docs_list_every_rule_under_its_capabilities() {
        let sections = doc_sections();
        let names: Vec<&str> = sections.iter().map(|s| s.0.as_str()).collect();
        let mut at = 0;
        for c in Capability::ALL {
            let i = names
                .iter()
                .position(|n| *n == c.as_str())
                .unwrap_or_else(|| panic!("docs/capabilities.md has no `## {c}` section"));
            assert!(i >= at, "`## {c}` is out of the order of Capability::ALL");
            at = i;
        }
        let section = |c: Capability| &sections.iter().find(|s| s.0 == c.as_str()).unwrap().1;
        let mut missing = Vec::new();
        for r in Rules::builtin().rules() {
            for c in &r.capabilities {
                let text = section(*c);
                let found = match &r.kind {
                    RuleKind::Path | RuleKind::Symbol => text.contains(&format!("`{}`", r.key)),
                    RuleKind::Syscall => text.contains(&format!("`SYS_{}`", r.key)),
                    RuleKind::Method { type_path, method } => text.lines().any(|l| {
                        l.starts_with(&format!("| `{type_path}` |"))
                            && l.contains(&format!("`{method}`"))
                    }),
                };
                if !found {
                    missing.push(format!("{} in `## {c}`", r.key));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs/capabilities.md does not list (run the ignored print_doc_tables test):\n{}",
            missing.join("\n")
        );
    }
}
