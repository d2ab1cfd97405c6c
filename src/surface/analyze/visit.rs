//! The walk over compiled items that turns uses into findings.

use syn::ext::IdentExt;
use std::borrow::Cow;
use std::rc::Rc;

use proc_macro2::{Delimiter, Spacing, Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, Item, Pat, Stmt, Type};

use super::attrs;
use super::loader::{self, ModId, Sink};
use super::macros::{self, MacroDefn, MacroRef, Textual};
use super::summary::{self, CallGraph};
use super::oracle::{CfgEval, RuleSource};
use super::scope::{Ctx, NameScope, Res, Resolver, Target, UsePath};
use crate::package::FileTree;
use crate::surface::model::{CallStats, Capability, Expansion, Hop};

/// Macros whose arguments are comma-separated expressions (the format string is one).
const EXPR_MACROS: &[&str] = &[
    "print", "println", "eprint", "eprintln", "format", "format_args", "write", "writeln", "panic",
    "assert", "assert_eq", "assert_ne", "debug_assert", "debug_assert_eq", "debug_assert_ne",
    "unreachable", "unimplemented", "todo", "dbg", "vec", "try",
];

/// Macros with nothing to analyze: compile-time values and token quoting.
const INERT_MACROS: &[&str] = &[
    "env", "option_env", "include_str", "include_bytes", "concat", "stringify", "file", "line",
    "column", "module_path", "cfg", "compile_error", "concat_idents", "concat_bytes",
];

const ASM_MACROS: &[&str] = &["asm", "global_asm", "naked_asm"];

/// Keywords after which an identifier is a name being defined, not a use.
const DEF_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "union", "trait", "type", "mod", "let", "mut", "ref", "const", "static",
    "macro_rules", "impl", "as",
];

/// Keywords that never start a path.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "static", "struct", "trait", "true", "type", "union", "use", "where", "while", "yield", "Self",
    "macro_rules", "unsafe", "extern",
];

const MAX_INCLUDE_DEPTH: usize = 16;

pub(crate) struct Analyzer<'a> {
    pub r: &'a Resolver<'a>,
    pub tree: &'a FileTree,
    pub cfg: &'a dyn CfgEval,
    pub rules: &'a dyn RuleSource,
    pub sink: &'a mut Sink,
    pub module: ModId,
    pub file: Rc<str>,
    layers: Vec<NameScope>,
    layer_traits: Vec<Vec<String>>,
    /// Local bindings in scope, innermost last, with their type when known.
    locals: Vec<(String, Option<String>)>,
    includes: Vec<String>,
    /// The `macro_rules!` visible here (textual scope).
    pub macros: Textual,
    /// Nested expansions being visited.
    depth: usize,
    /// The crate's items and their uses, for the summaries.
    pub graph: CallGraph,
    /// The item whose body is being visited.
    cur: Option<usize>,
    /// The type of the `impl` (or the trait) being visited, as a type key.
    self_ty: Option<String>,
    /// The crate's version, for the hops of chains.
    pub version: Rc<str>,
    /// Calls visited, and those whose callee is known.
    pub calls: CallStats,
    /// The directory `#[path]` is relative to inside nested inline modules of a block
    /// (innermost last); empty: the module's own.
    block_dirs: Vec<String>,
    /// Module files declared inside blocks (function bodies, `const` and `static`
    /// initializers) and loaded from there, being visited (innermost last).
    block_files: Vec<String>,
    /// Every file loaded from a block, for the crate's list of analysed files.
    pub extra_files: Vec<String>,
    /// Per function body being visited (innermost last): the local names used other than as
    /// the receiver of a method call (a builder bound to one of them escapes).
    escaping: Vec<std::collections::HashSet<String>>,
    /// Builder constructor calls (by address) whose value is seen whole: a chain to a
    /// terminal method, or a local used only as a receiver.
    seen_builders: Vec<usize>,
    /// Generic parameters in scope with the traits that bound them (innermost last), as
    /// `<dyn>` keys (see `Resolver::dyn_key`).
    bounds: Vec<(String, String)>,
    /// The trait (its id) of the `impl` being visited.
    cur_trait: Option<String>,
    /// The crate's name, version and the current file, as hops share them.
    hop_strs: std::cell::RefCell<(std::sync::Arc<str>, std::sync::Arc<str>, std::sync::Arc<str>)>,
    /// The type `self` has when the `impl`'s type is a generic parameter (a blanket
    /// implementation, `impl<S: Service> Connect for S`): its bounds.
    self_recv: Option<String>,
    /// Places whose call goes on through a trait, for the program step (kept only when
    /// `record_sites`).
    pub open_sites: Vec<summary::OpenSite>,
    pub record_sites: bool,
    /// The crate's implementations of trait methods and provided methods: (open key, item
    /// key, implementing type's id, display, file, line).
    pub impl_entries: Vec<(String, String, String, String, String, u32)>,
    /// Ids of the crate's own types constructed somewhere in its code (struct literals,
    /// tuple-struct and unit-struct values, enum variants).
    pub constructed: std::collections::BTreeSet<String>,
}

/// The most places with calls through traits a crate records.
const MAX_OPEN_SITES: usize = 20_000;

/// Whether evaluating `e` never gives a value (`return`, `break`, `continue`, a panic).
fn diverges(e: &Expr) -> bool {
    match e {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Macro(m) => m.mac.path.segments.last().is_some_and(|s| matches!(s.ident.to_string().as_str(), "panic" | "unreachable" | "todo" | "unimplemented")),
        Expr::Block(b) => b.block.stmts.iter().any(|s| match s {
            syn::Stmt::Expr(e, _) => diverges(e),
            syn::Stmt::Macro(m) => m.mac.path.segments.last().is_some_and(|s| matches!(s.ident.to_string().as_str(), "panic" | "unreachable")),
            _ => false,
        }),
        _ => false,
    }
}

/// Whether pattern `p` binds `name` to the whole value or to the one field of a wrapper
/// (`v`, `Ok(v)`, `Some(v)`).
fn binds_alone(p: &syn::Pat, name: &str) -> bool {
    match p {
        syn::Pat::Ident(i) => i.subpat.is_none() && i.ident.unraw() == name,
        syn::Pat::TupleStruct(t) => t.elems.len() == 1 && binds_alone(&t.elems[0], name),
        _ => false,
    }
}

/// The expression a block ends with, if it gives a value.
fn block_value(b: &syn::Block) -> Option<&Expr> {
    match b.stmts.last()? {
        syn::Stmt::Expr(e, None) => Some(e),
        _ => None,
    }
}

/// Whether a trait id is a path into std, core or alloc.
fn is_std_path(id: &str) -> bool {
    ["std::", "core::", "alloc::"].iter().any(|p| id.starts_with(p))
}

/// For a std trait whose implementations in crates implement only its required methods: the
/// required methods a call of `method` runs (`Write::write_all` runs `write`). `None`: not a
/// method of one of these traits.
fn std_trait_required(id: &str, method: &str) -> Option<&'static [&'static str]> {
    let canon = id.replacen("core::", "std::", 1).replacen("alloc::", "std::", 1);
    let (methods, required): (&[&str], &'static [&'static str]) = match canon.as_str() {
        "std::io::Read" => (
            &["read", "read_vectored", "read_to_end", "read_to_string", "read_exact", "read_buf", "read_buf_exact", "bytes", "chain", "take"],
            &["read"],
        ),
        "std::io::Write" => (&["write", "write_vectored", "write_all", "write_all_vectored", "write_fmt", "flush"], &["write", "flush"]),
        "std::io::BufRead" => (&["fill_buf", "consume", "read_until", "read_line", "lines", "split", "skip_until", "has_data_left"], &["fill_buf", "consume"]),
        "std::io::Seek" => (&["seek", "rewind", "stream_position", "seek_relative"], &["seek"]),
        "std::iter::Iterator" => (&[], &["next"]),
        "std::future::Future" => (&["poll"], &["poll"]),
        "std::fmt::Display" | "std::fmt::Debug" => (&["fmt", "to_string"], &["fmt"]),
        "std::ops::Drop" => (&["drop"], &["drop"]),
        _ => return None,
    };
    // Every method of `Iterator` (its adaptors too) drives `next`.
    (methods.is_empty() || methods.contains(&method)).then_some(required)
}

/// `tokio@1.54.1#crate::io::AsyncRead` → `tokio::io::AsyncRead`; another id as it is.
pub(crate) fn display_id(id: &str) -> String {
    match id.split_once('#') {
        Some((head, key)) => {
            let name = head.split('@').next().unwrap_or(head);
            match key.strip_prefix("crate") {
                Some(rest) => format!("{name}{rest}"),
                None => key.to_string(),
            }
        }
        None => id.to_string(),
    }
}

/// Where a macro invocation stands, which decides what its expansion must parse as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pos {
    Items,
    ImplItems,
    TraitItems,
    /// Inside an `extern "ABI"` block.
    ForeignItems(String),
    Expr,
}

fn first_span(p: &syn::Path) -> Span {
    match &p.leading_colon {
        Some(c) => c.spans[0],
        None => p.segments.first().map_or_else(Span::call_site, |s| s.ident.span()),
    }
}

fn abi_name(abi: &syn::Abi) -> String {
    abi.name.as_ref().map_or_else(|| "C".to_string(), |l| l.value())
}

impl<'a> Analyzer<'a> {
    pub fn new(
        r: &'a Resolver<'a>,
        tree: &'a FileTree,
        cfg: &'a dyn CfgEval,
        rules: &'a dyn RuleSource,
        sink: &'a mut Sink,
    ) -> Self {
        Analyzer {
            r,
            tree,
            cfg,
            rules,
            sink,
            module: 0,
            file: Rc::from(""),
            layers: Vec::new(),
            layer_traits: Vec::new(),
            locals: Vec::new(),
            includes: Vec::new(),
            macros: Textual::default(),
            depth: 0,
            graph: CallGraph::default(),
            cur: None,
            self_ty: None,
            version: Rc::from(""),
            calls: CallStats::default(),
            block_dirs: Vec::new(),
            block_files: Vec::new(),
            extra_files: Vec::new(),
            escaping: Vec::new(),
            seen_builders: Vec::new(),
            bounds: Vec::new(),
            cur_trait: None,
            self_recv: None,
            hop_strs: std::cell::RefCell::new((r.crate_name.into(), "".into(), "".into())),
            open_sites: Vec::new(),
            record_sites: false,
            impl_entries: Vec::new(),
            constructed: std::collections::BTreeSet::new(),
        }
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx { module: self.module, layers: &self.layers }
    }

    fn add(&mut self, cap: Capability, span: Span, path: impl Into<String>) {
        let path = path.into();
        if let Some(i) = self.cur {
            let hop = self.hop(&path, span);
            self.graph.uses(i, cap, vec![hop]);
        }
        let file = self.file.clone();
        self.sink.add(cap, &file, span, path);
    }

    /// A capability reached by calling `path` (another crate's), shown by `chain`.
    fn add_via(&mut self, cap: Capability, span: Span, path: &str, chain: &[Hop]) {
        if let Some(i) = self.cur {
            let hop = self.hop(path, span);
            self.graph.uses(i, cap, summary::chain(hop, chain));
        }
        let file = self.file.clone();
        self.sink.add_chain(cap, &file, span, path, chain.to_vec());
    }

    /// This crate, here: a hop of a chain.
    fn hop(&self, path: &str, span: Span) -> Hop {
        // The crate, version and file of a crate's hops are one string each, shared.
        let mut shared = self.hop_strs.borrow_mut();
        let (krate, version, file) = &mut *shared;
        if **file != *self.file {
            *file = (&*self.file).into();
        }
        if **version != *self.version {
            *version = (&*self.version).into();
        }
        Hop { path: path.into(), krate: krate.clone(), version: version.clone(), file: file.clone(), line: (span.start().line as u32).max(1) }
    }

    /// The crate's item `key` (a summary key) is used here.
    fn use_local(&mut self, key: String, span: Span) {
        if let Some(i) = self.cur {
            let hop = self.hop(&self.r.local_display(&key), span);
            self.graph.calls(i, key, hop);
        }
    }

    /// A dependency's item `rest` (a path inside extern `krate`) is used here: what its
    /// summary says it reaches, at this place.
    fn use_dep(&mut self, krate: &str, rest: &[String], span: Span) -> bool {
        let key = rest.join("::");
        let Some(summary) = self.r.deps().get(krate).and_then(|ex| ex.summaries.get(&key)) else { return false };
        let display = format!("{}::{key}", self.r.crate_display(krate));
        let caps: Vec<(Capability, Vec<Hop>)> = summary.caps.iter().map(|(c, h): (&Capability, &Vec<Hop>)| (*c, h.clone())).collect();
        for (cap, chain) in caps {
            self.add_via(cap, span, &display, &chain);
        }
        // What it calls through traits goes on here: the program resolves it.
        let opens: Vec<(String, Vec<Hop>)> = summary.open.iter().map(|(k, c)| (k.clone(), c.clone())).collect();
        for (k, chain) in opens {
            self.open_at(k, span, &display, &chain);
        }
        true
    }

    /// A call whose callee goes on through a trait (`key`, an open key), shown by `path` and
    /// `chain` (the hops down to the call through the trait; empty: it is here).
    fn open_at(&mut self, key: String, span: Span, path: &str, chain: &[Hop]) {
        if let Some(i) = self.cur {
            let hop = self.hop(path, span);
            self.graph.open(i, key.clone(), summary::chain(hop, chain));
        }
        if self.record_sites && self.open_sites.len() < MAX_OPEN_SITES {
            let lc = span.start();
            self.open_sites.push(summary::OpenSite {
                file: self.file.to_string(),
                line: (lc.line as u32).max(1),
                column: lc.column as u32 + 1,
                path: path.to_string(),
                scope: self.sink.scope,
                key,
                chain: chain.to_vec(),
            });
        }
    }

    /// A method call through a trait: `method` of trait `id` on a value known by its traits.
    /// Only a method the trait (or a supertrait) declares is a call through it (`.clone()`
    /// or `.into()` on it is another trait's or nothing); for the std traits whose provided
    /// methods call the required ones (`write_all` → `write`), the required ones.
    fn open_call(&mut self, id: &str, method: &str, span: Span) {
        let mut keys = Vec::new();
        self.trait_calls(id, method, 0, &mut keys);
        for (tid, m) in keys {
            let path = format!("dyn {}::{m}", display_id(&tid));
            self.open_at(summary::open_key(&tid, &m), span, &path, &[]);
        }
    }

    /// The calls through traits that `method` on a value known by trait `id` makes.
    fn trait_calls(&self, id: &str, method: &str, depth: usize, out: &mut Vec<(String, String)>) {
        if depth > 8 {
            return;
        }
        let shape = match id.split_once('#') {
            Some((_, key)) if self.r.local_trait_id(key) == id => self.r.trait_shapes.get(key).cloned(),
            Some(_) => self.r.deps().values().find_map(|ex| ex.trait_shapes.get(id)).cloned(),
            None => None,
        };
        match shape {
            Some(s) => {
                if s.methods.iter().any(|m| m == method) {
                    out.push((id.to_string(), method.to_string()));
                }
                for sup in &s.supers {
                    self.trait_calls(sup, method, depth + 1, out);
                }
            }
            None => match std_trait_required(id, method) {
                Some(required) => out.extend(required.iter().map(|r| (id.to_string(), r.to_string()))),
                // A trait we know nothing of: the call as written (sound, may resolve to nothing).
                None if !is_std_path(id) => out.push((id.to_string(), method.to_string())),
                None => {}
            },
        }
    }

    /// A value made of a dependency's type (`dep::Loud`, `dep::Kind::A`, `dep::Pair(..)`).
    fn constructs_dep(&mut self, krate: &str, rest: &[String]) {
        let Some(ex) = self.r.deps().get(krate) else { return };
        if ex.type_ids.is_empty() || !rest.last().is_some_and(|l| l.starts_with(|c: char| c.is_ascii_uppercase())) {
            return;
        }
        for n in [rest.len(), rest.len().saturating_sub(1)] {
            if let Some(id) = ex.type_ids.get(&rest[..n].join("::")) {
                self.constructed.insert(id.clone());
            }
        }
    }

    /// A type the crate constructs (its id).
    fn constructs(&mut self, key: &str) {
        if key.starts_with("crate::") {
            let id = self.r.local_trait_id(key);
            self.constructed.insert(id);
        }
    }

    /// The key of item `name` being defined in the current module (a function, a static).
    fn item_key(&self, name: &str) -> String {
        Resolver::local_key(&self.r.local_path(self.module, name))
    }

    /// Run `f` with `key`'s item as the one whose body is visited.
    fn in_item(&mut self, key: String, f: impl FnOnce(&mut Self)) {
        let id = self.graph.item(&key);
        let saved = self.cur.replace(id);
        f(self);
        self.cur = saved;
    }

    fn is_local(&self, name: &str) -> bool {
        self.locals.iter().rev().any(|(n, _)| n == name)
    }

    fn local_type(&self, name: &str) -> Option<String> {
        self.locals.iter().rev().find(|(n, _)| n == name).and_then(|(_, t)| t.clone())
    }

    /// Report what a resolved path shows.
    fn report_target(&mut self, target: Target, span: Span) {
        match target {
            Target::Path(segs) => {
                // A Linux system call number of linux-raw-sys (`__NR_unlinkat`), which rustix's
                // and others' raw system call wrappers are handed: what that call does.
                if segs.len() >= 2
                    && segs[0] == "linux_raw_sys"
                    && let Some(name) = segs[segs.len() - 1].strip_prefix("__NR_")
                {
                    if let Some(caps) = self.rules.syscall(name) {
                        let label = format!("{} (system call {name})", segs.join("::"));
                        for c in caps {
                            self.add(c, span, label.clone());
                        }
                    }
                    return;
                }
                let refs: Vec<&str> = segs.iter().map(String::as_str).collect();
                if let Some(caps) = self.rules.path(&refs) {
                    let p = segs.join("::");
                    for c in caps {
                        self.add(c, span, p.clone());
                    }
                }
            }
            Target::Foreign { symbol, display } => {
                self.add(Capability::Ffi, span, display.clone());
                for c in self.rules.symbol(&symbol) {
                    self.add(c, span, display.clone());
                }
            }
        }
    }

    /// `T::Assoc::rest` where `Assoc` is an associated type of the crate's `impl`s: the
    /// paths it stands for, one per type the associated type can be (`Self::Cmd::new` in
    /// `impl Tr for Shell { type Cmd = Command; }` → `std::process::Command::new`; for a
    /// trait's `<T as Tr>::Cmd` with `T` unknown, every `impl` of `Tr`'s).
    fn through_assoc(&self, up: &UsePath) -> Option<Vec<Vec<String>>> {
        if up.segs.len() < 3
            || (self.r.assoc_types.is_empty()
                && self.r.trait_assoc.is_empty()
                && self.r.deps().values().all(|d| d.assoc_types.is_empty() && d.trait_assoc.is_empty()))
        {
            return None;
        }
        for k in 1..up.segs.len() - 1 {
            let prefix = UsePath { leading: up.leading, segs: up.segs[..k].to_vec() };
            let key = if !up.leading && k == 1 && up.segs[0] == "Self" {
                self.self_ty.clone()
            } else {
                match self.r.resolve(self.ctx(), &prefix, true) {
                    Some(Res::Local(p)) => Some(Resolver::local_key(&p)),
                    Some(r) => match self.r.finalize(r) {
                        Some(Target::Path(p)) => Some(p.join("::")),
                        _ => None,
                    },
                    None => None,
                }
            };
            let Some(key) = key else { continue };
            let assoc = format!("{key}::{}", up.segs[k]);
            let mut targets: Vec<String> = match self.r.assoc_types.get(&assoc) {
                Some(t) => vec![t.clone()],
                None => self.r.trait_assoc.get(&assoc).cloned().unwrap_or_default(),
            };
            // A dependency's type or trait: what its `impl`s export.
            if targets.is_empty()
                && let Some(Res::Dep { krate, rest }) = self.r.resolve(self.ctx(), &prefix, true)
                && let Some(ex) = self.r.deps().get(&krate)
            {
                let dk = format!("{}::{}", rest.join("::"), up.segs[k]);
                let found: Vec<String> = match ex.assoc_types.get(&dk) {
                    Some(t) => vec![t.clone()],
                    None => ex.trait_assoc.get(&dk).cloned().unwrap_or_default(),
                };
                let display = self.r.crate_display(&krate).to_string();
                targets = found
                    .into_iter()
                    .map(|t| match t.strip_prefix("crate::") {
                        Some(tail) => format!("{display}::{tail}"),
                        None => t,
                    })
                    .collect();
            }
            if targets.is_empty() {
                continue;
            }
            return Some(
                targets
                    .into_iter()
                    .map(|t| {
                        let mut segs: Vec<String> = t.split("::").map(str::to_string).collect();
                        segs.extend(up.segs[k + 1..].iter().cloned());
                        segs
                    })
                    .collect(),
            );
        }
        None
    }

    fn report_path(&mut self, up: &UsePath, span: Span) {
        if up.segs.len() == 1 && !up.leading && self.is_local(&up.segs[0]) {
            return;
        }
        if let Some(paths) = self.through_assoc(up) {
            for segs in paths {
                if segs[0] == "crate" {
                    self.use_local(segs.join("::"), span);
                } else {
                    self.type_item(&segs, span);
                }
            }
            return;
        }
        // `Self::f` in an `impl`: the type's associated item.
        if !up.leading
            && up.segs.len() > 1
            && up.segs[0] == "Self"
            && let Some(ty) = self.self_ty.clone()
        {
            let rest = up.segs[1..].join("::");
            if ty.starts_with("crate::") {
                self.use_local(format!("{ty}::{rest}"), span);
            } else {
                let mut segs: Vec<String> = ty.split("::").map(str::to_string).collect();
                segs.extend(up.segs[1..].iter().cloned());
                self.type_item(&segs, span);
            }
            return;
        }
        match self.r.resolve(self.ctx(), up, false) {
            Some(Res::Local(p)) => {
                // A tuple-struct or unit-struct value, or an enum variant: the type is made.
                if p.last().is_some_and(|l| l.starts_with(|c: char| c.is_ascii_uppercase())) {
                    let key = Resolver::local_key(&p);
                    self.constructs(&key);
                    if let Some((parent, _)) = key.rsplit_once("::") {
                        self.constructs(parent);
                    }
                }
                self.use_local(Resolver::local_key(&p), span)
            }
            Some(r) => {
                if let Res::Dep { krate, rest } = &r {
                    self.constructs_dep(krate, rest);
                    self.use_dep(krate, rest, span);
                }
                if let Some(t) = self.r.finalize(r) {
                    self.report_target(t, span);
                }
            }
            // `somecrate::x` where `somecrate` is not a known dependency: fail closed and ask
            // the rules about the path as written (`libloading::Library`, `libc::system`).
            None if up.segs.len() > 1 && self.r.first_unknown(self.ctx(), up) => {
                self.report_target(Target::Path(up.segs.clone()), span);
            }
            None => {}
        }
    }

    /// An item of an external type given by its full path (`reqwest::Client::get`,
    /// `std::net::TcpStream::connect`): a dependency's summary, then the rules.
    fn type_item(&mut self, segs: &[String], span: Span) {
        if let Some(first) = segs.first()
            && let Some(k) = self.r.dep_key_of(first).map(str::to_string)
        {
            self.use_dep(&k, &segs[1..], span);
        }
        self.report_target(Target::Path(segs.to_vec()), span);
    }

    fn report_method(&mut self, ty: &str, method: &str, span: Span) {
        self.report_method_of(ty, method, span, true);
    }

    /// `via_traits`: when the type has no such method the analysis knows (no item of the
    /// crate, no dependency summary, no rule), the method may come from a trait in scope (a
    /// provided method, a std extension trait such as `FileExt`, a type alias or wrapper the
    /// type key stands for): every trait in scope is tried too.
    fn report_method_of(&mut self, ty: &str, method: &str, span: Span, via_traits: bool) {
        // A generic parameter's field type: its bounds here.
        if let Some(p) = ty.strip_prefix("<param>") {
            match self.bound_of(p) {
                Some(k) => return self.report_method_of(&k, method, span, via_traits),
                None => {
                    if via_traits {
                        self.report_trait_method(method, span);
                    }
                    return;
                }
            }
        }
        // A value known by its traits: a call through each of them.
        if let Some(ids) = ty.strip_prefix("<dyn>") {
            for id in ids.split('+').map(str::to_string).collect::<Vec<_>>() {
                self.open_call(&id, method, span);
            }
            return;
        }
        // `self` in a trait's provided method: the trait's own method (a provided one is
        // an item of the crate; any of them may be implemented elsewhere).
        if self.r.local_traits.contains(ty) {
            let id = self.r.local_trait_id(ty);
            self.open_call(&id, method, span);
        }
        let mut known = false;
        if ty.starts_with("crate::") {
            let key = format!("{ty}::{method}");
            known = self.r.local_fns.contains(&key);
            self.use_local(key, span);
        } else {
            if let Some((first, rest)) = ty.split_once("::")
                && let Some(k) = self.r.dep_key_of(first).map(str::to_string)
            {
                let mut segs: Vec<String> = rest.split("::").map(str::to_string).collect();
                segs.push(method.to_string());
                known |= self.use_dep(&k, &segs, span);
            }
            if let Some(caps) = self.rules.method(ty, method) {
                known = true;
                for c in caps {
                    self.add(c, span, format!("{ty}::{method}"));
                }
            }
        }
        if !known && via_traits {
            if self.is_concrete_type(ty) {
                // A struct, enum or std type without such a method of its own: a provided
                // method of a trait in scope, or nothing that does anything (a method
                // with no effects has no summary).
                for t in self.traits_in_scope() {
                    if t != ty {
                        self.report_method_of(&t, method, span, false);
                    }
                }
            } else {
                // What the type key stands for is not known (a type alias, a path the
                // analysis cannot follow): any type implementing a trait in scope that
                // declares the method may be the receiver.
                self.report_trait_method(method, span);
            }
        }
    }

    /// `x.await` calls `IntoFuture::into_future` on `x` and polls what it gives: a type with
    /// its own `into_future` (axum's `Serve`) or `poll` runs them here. A value known only by
    /// its traits is polled through them; one of unknown type was made by a call seen where
    /// it was made (an `async fn`, an `async` block).
    fn awaited(&mut self, a: &syn::ExprAwait) {
        let Some(t) = self.type_of(&a.base) else { return };
        let span = a.await_token.span;
        if t.starts_with("<dyn>") || t.starts_with("<param>") {
            self.report_method_of(&t, "poll", span, false);
            return;
        }
        self.report_method_of(&t, "into_future", span, false);
        self.report_method_of(&t, "poll", span, false);
    }

    /// Whether a type key names a type the analysis knows as one (a struct, enum or union of
    /// the crate or a dependency, a std type), not an alias or a path it cannot follow.
    fn is_concrete_type(&self, ty: &str) -> bool {
        if is_std_path(ty) || !ty.contains("::") {
            return true;
        }
        if ty.starts_with("crate::") {
            return self.r.local_types.contains(ty);
        }
        match ty.split_once("::") {
            Some((first, rest)) => self.r.dep_key_of(first).and_then(|k| self.r.deps().get(k)).is_some_and(|ex| ex.type_ids.contains_key(rest)),
            None => false,
        }
    }

    /// A method on a receiver of unknown type: the known traits in scope.
    fn report_trait_method(&mut self, method: &str, span: Span) {
        for t in self.traits_in_scope() {
            self.report_method_of(&t, method, span, false);
            // The receiver may be any type implementing the trait: a call through it when
            // the trait declares the method (`open_call` opens nothing otherwise).
            if let Some(id) = self.trait_id_of_key(&t) {
                self.open_call(&id, method, span);
            }
        }
    }

    /// The id of a trait given by its key in scope (`crate::..` for the crate's own, a
    /// resolved path for another's).
    fn trait_id_of_key(&self, key: &str) -> Option<String> {
        if key.starts_with("crate::") {
            return self.r.local_traits.contains(key).then(|| self.r.local_trait_id(key));
        }
        if let Some((first, rest)) = key.split_once("::")
            && let Some(k) = self.r.dep_key_of(first)
            && let Some(id) = self.r.deps().get(k).and_then(|ex| ex.trait_ids.get(rest))
        {
            return Some(id.clone());
        }
        Some(key.to_string())
    }

    fn traits_in_scope(&self) -> Vec<String> {
        let mut traits: Vec<String> = self.r.module_traits(self.module).to_vec();
        for t in self.layer_traits.iter().flatten() {
            if !traits.contains(t) {
                traits.push(t.clone());
            }
        }
        traits
    }

    /// The type of an expression, as far as method lookups care: locals with a known type,
    /// calls of associated functions of a type (`OpenOptions::new()`), builder chains (a method
    /// on a known type is assumed to return it), string literals, fields of known type.
    fn type_of(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none() => {
                self.local_type(&p.path.segments[0].ident.unraw().to_string())
            }
            // A value wrapped (`Some(x)`, `Ok(x)`, `Box::new(x)`, `Arc::new(x)`): types are keys
            // with the wrappers looked through.
            Expr::Call(c) if is_wrapper_call(&c.func) && c.args.len() == 1 => self.type_of(&c.args[0]),
            Expr::Call(c) => match &*c.func {
                // `Self::new()` in an `impl`: what it is declared to return, else the type.
                Expr::Path(f)
                    if f.qself.is_none()
                        && f.path.segments.len() == 2
                        && f.path.segments[0].ident == "Self"
                        && self.self_ty.is_some() =>
                {
                    let ty = self.self_ty.clone()?;
                    let name = f.path.segments[1].ident.unraw().to_string();
                    Some(self.method_return(&ty, &name).unwrap_or(ty))
                }
                Expr::Path(f) if f.qself.is_none() => self.fn_result(&f.path),
                Expr::Path(f) => {
                    let q = f.qself.as_ref()?;
                    (q.position == 0).then(|| self.r.type_key(self.ctx(), &q.ty)).flatten()
                }
                _ => None,
            },
            // What the method is declared to return; else a builder chain: a method on a
            // known type is assumed to return it (`.unwrap()`, `.await` and `?` keep it too).
            Expr::MethodCall(m) => {
                if let Some(t) = self.combinator_type(m) {
                    return Some(t);
                }
                let recv = self.type_of(&m.receiver)?;
                Some(self.method_return(&recv, &m.method.unraw().to_string()).unwrap_or(recv))
            }
            Expr::Try(t) => self.type_of(&t.expr),
            Expr::Paren(p) => self.type_of(&p.expr),
            Expr::Group(g) => self.type_of(&g.expr),
            Expr::Reference(r) => self.type_of(&r.expr),
            Expr::Await(a) => self.type_of(&a.base),
            Expr::Lit(l) if matches!(l.lit, syn::Lit::Str(_)) => Some("str".to_string()),
            Expr::Macro(m) if crate::surface::syntax::is_std_macro(&m.mac.path, "format") => Some("std::string::String".into()),
            Expr::Field(f) => {
                let member = match &f.member {
                    syn::Member::Named(n) => n.unraw().to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                // The field of a struct whose type is known (`self.std`), else a field name
                // with one type crate-wide.
                if let Some(base) = self.type_of(&f.base)
                    && let Some(t) = self.r.struct_fields.get(&(base, member.clone()))
                {
                    return Some(t.clone());
                }
                match self.r.field_types.get(&member) {
                    Some(v) if v.len() == 1 => Some(v[0].clone()),
                    _ => None,
                }
            }
            // `match builder.build() { Ok(v) => v, Err(e) => return .. }`: the type of the
            // arms that give a value (an arm giving back its own binding gives the
            // scrutinee's, wrappers looked through).
            Expr::Match(m) => m.arms.iter().filter(|a| !diverges(&a.body)).find_map(|a| match (&a.pat, strip_expr(&a.body)) {
                (pat, Expr::Path(p)) if p.path.get_ident().is_some_and(|i| binds_alone(pat, &i.unraw().to_string())) => self.type_of(&m.expr),
                (_, body) => self.type_of(body),
            }),
            Expr::If(i) => match &i.else_branch {
                Some((_, e)) => block_value(&i.then_branch).and_then(|v| self.type_of(v)).or_else(|| self.type_of(e)),
                None => None,
            },
            Expr::Block(b) => block_value(&b.block).and_then(|v| self.type_of(v)),
            Expr::Unsafe(b) => block_value(&b.block).and_then(|v| self.type_of(v)),
            _ => None,
        }
    }

    /// The type an `Option`/`Result`/iterator combinator gives its result: `x.map(Path::new)`
    /// is what `Path::new` returns, `x.and_then(|v| File::open(v))` what the closure's body
    /// is (types are keys with `Option` and `Result` looked through).
    fn combinator_type(&self, m: &syn::ExprMethodCall) -> Option<String> {
        let name = m.method.unraw().to_string();
        if !matches!(name.as_str(), "map" | "and_then" | "then" | "then_some" | "map_or_else" | "or_else" | "unwrap_or_else" | "get_or_insert_with") {
            return None;
        }
        let f = m.args.last()?;
        match f {
            Expr::Closure(c) => self.type_of(&c.body),
            Expr::Path(p) if p.qself.is_none() => self.fn_result(&p.path),
            _ if name == "then_some" => self.type_of(f),
            _ => None,
        }
    }

    /// What calling the function `path` names returns, as a type key: declared, from the
    /// rules, or the type of an associated function (`Path::new` → `std::path::Path`).
    fn fn_result(&self, path: &syn::Path) -> Option<String> {
        let up = UsePath::from_path(path);
        let res = self.r.resolve(self.ctx(), &up, true);
        let declared = match &res {
            Some(Res::Local(p)) => self.r.returns.get(&Resolver::local_key(p)).cloned(),
            Some(Res::Dep { krate, rest }) => self.dep_return(krate, &rest.join("::")),
            _ => None,
        };
        if declared.is_some() {
            return declared;
        }
        let returned = match res.and_then(|r| self.r.finalize(r)) {
            Some(Target::Path(segs)) => self.rules.returns(&segs.join("::")),
            _ => None,
        };
        returned.or_else(|| self.r.assoc_type(self.ctx(), &up))
    }

    /// What method `method` of type `ty` (a type key) is declared to return: the crate's own
    /// signatures, a dependency's exported ones, the rules' `[[returns]]`.
    fn method_return(&self, ty: &str, method: &str) -> Option<String> {
        if ty.starts_with("crate::") {
            return self.r.returns.get(&format!("{ty}::{method}")).cloned();
        }
        if let Some((first, rest)) = ty.split_once("::")
            && let Some(k) = self.r.dep_key_of(first)
            && let Some(t) = self.dep_return(k, &format!("{rest}::{method}"))
        {
            return Some(t);
        }
        self.rules.returns(&format!("{ty}::{method}"))
    }

    /// What a dependency's public function or method `key` returns, as a type key here.
    fn dep_return(&self, krate: &str, key: &str) -> Option<String> {
        let t = self.r.deps().get(krate)?.returns.get(key)?;
        Some(match t.strip_prefix("crate::") {
            Some(tail) => format!("{}::{tail}", self.r.crate_display(krate)),
            None => t.clone(),
        })
    }

    fn bind_pat(&mut self, p: &Pat, ty: Option<String>) {
        match p {
            Pat::Ident(pi) => {
                self.locals.push((pi.ident.unraw().to_string(), ty));
                if let Some((_, sub)) = &pi.subpat {
                    self.bind_pat(sub, None);
                }
            }
            Pat::Type(pt) => {
                let t = self.r.type_key(self.ctx(), &pt.ty).or(ty);
                self.bind_pat(&pt.pat, t);
            }
            Pat::Reference(r) => self.bind_pat(&r.pat, ty),
            Pat::Paren(x) => self.bind_pat(&x.pat, ty),
            Pat::Tuple(t) => t.elems.iter().for_each(|e| self.bind_pat(e, None)),
            // `Some(x)`, `Ok(x)`, `Err(x)`: types are keys with those wrappers looked
            // through, so `x` has the type of the value matched.
            Pat::TupleStruct(t)
                if t.elems.len() == 1
                    && t.path.segments.last().is_some_and(|s| s.ident == "Some" || s.ident == "Ok") =>
            {
                self.bind_pat(&t.elems[0], ty)
            }
            Pat::TupleStruct(t) => t.elems.iter().for_each(|e| self.bind_pat(e, None)),
            Pat::Slice(t) => t.elems.iter().for_each(|e| self.bind_pat(e, None)),
            Pat::Or(t) => t.cases.iter().for_each(|e| self.bind_pat(e, None)),
            Pat::Struct(s) => s.fields.iter().for_each(|f| self.bind_pat(&f.pat, None)),
            _ => {}
        }
    }

    /// The type a parameter's methods are looked up on: its type with wrappers looked through
    /// (`Option<File>` → `File`), or, for a generic parameter or `impl Trait` bounded by a
    /// conversion trait (`P: AsRef<Path>`, `impl Into<PathBuf>`, `Borrow<T>`,
    /// `Deref<Target = T>`), the type it converts to (`path.as_ref().metadata()`).
    fn param_type(&self, ty: &Type, conv: &[(String, String)]) -> Option<String> {
        match ty {
            Type::Reference(r) => return self.param_type(&r.elem, conv),
            Type::Paren(p) => return self.param_type(&p.elem, conv),
            Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.unraw().to_string();
                if let Some((_, t)) = conv.iter().find(|(n, _)| *n == name) {
                    return Some(t.clone());
                }
                if let Some(t) = self.bound_of(&name) {
                    return Some(t);
                }
            }
            Type::ImplTrait(it) => {
                if let Some(t) = it.bounds.iter().find_map(|b| self.conversion_target(b)) {
                    return Some(t);
                }
            }
            _ => {}
        }
        self.r.value_type(self.ctx(), ty, self.self_ty.as_deref(), 0)
    }

    /// The `<dyn>` key of generic parameter `name` in scope, if its bounds name traits.
    fn bound_of(&self, name: &str) -> Option<String> {
        self.bounds.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    }

    /// The trait bounds of generics (parameters and `where` clauses), pushed on the scope
    /// stack; returns how many were pushed.
    fn push_bounds(&mut self, g: &syn::Generics) -> usize {
        let mut found: Vec<(String, String)> = Vec::new();
        for p in g.type_params() {
            if let Some(k) = self.r.dyn_key(self.ctx(), &p.bounds) {
                found.push((p.ident.unraw().to_string(), k));
            }
        }
        if let Some(w) = &g.where_clause {
            for pred in &w.predicates {
                if let syn::WherePredicate::Type(pt) = pred
                    && let Type::Path(tp) = &pt.bounded_ty
                    && tp.qself.is_none()
                    && tp.path.segments.len() == 1
                    && let Some(k) = self.r.dyn_key(self.ctx(), &pt.bounds)
                {
                    let name = tp.path.segments[0].ident.unraw().to_string();
                    match found.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, prev)) => {
                            prev.push('+');
                            prev.push_str(k.trim_start_matches("<dyn>"));
                        }
                        None => found.push((name, k)),
                    }
                }
            }
        }
        let n = found.len();
        self.bounds.extend(found);
        n
    }

    /// The type a conversion-trait bound converts to (`AsRef<Path>` → `std::path::Path`).
    fn conversion_target(&self, b: &syn::TypeParamBound) -> Option<String> {
        let syn::TypeParamBound::Trait(t) = b else { return None };
        let last = t.path.segments.last()?;
        let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
        let inner = a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) if matches!(last.ident.to_string().as_str(), "AsRef" | "AsMut" | "Borrow" | "BorrowMut" | "Into") => Some(t),
            syn::GenericArgument::AssocType(at) if last.ident == "Deref" && at.ident == "Target" => Some(&at.ty),
            _ => None,
        })?;
        self.r.value_type(self.ctx(), inner, self.self_ty.as_deref(), 0)
    }

    /// Generic parameters bounded by a conversion trait, with the type they convert to.
    fn conversions(&self, g: &syn::Generics) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for p in &g.params {
            if let syn::GenericParam::Type(tp) = p
                && let Some(t) = tp.bounds.iter().find_map(|b| self.conversion_target(b))
            {
                out.push((tp.ident.unraw().to_string(), t));
            }
        }
        if let Some(w) = &g.where_clause {
            for pred in &w.predicates {
                if let syn::WherePredicate::Type(pt) = pred
                    && let Type::Path(tp) = &pt.bounded_ty
                    && tp.qself.is_none()
                    && tp.path.segments.len() == 1
                    && let Some(t) = pt.bounds.iter().find_map(|b| self.conversion_target(b))
                {
                    out.push((tp.path.segments[0].ident.unraw().to_string(), t));
                }
            }
        }
        out
    }

    fn fn_body(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let saved = std::mem::take(&mut self.locals);
        let pushed = self.push_bounds(&sig.generics);
        let conv = self.conversions(&sig.generics);
        for input in &sig.inputs {
            match input {
                syn::FnArg::Typed(pt) => {
                    let t = self.param_type(&pt.ty, &conv);
                    self.bind_pat(&pt.pat, t);
                }
                syn::FnArg::Receiver(_) => self.locals.push(("self".to_string(), self.self_recv.clone().or_else(|| self.self_ty.clone()))),
            }
        }
        self.escaping.push(escaping_names(block));
        let marks = self.seen_builders.len();
        self.visit_block(block);
        self.seen_builders.truncate(marks);
        self.escaping.pop();
        self.bounds.truncate(self.bounds.len() - pushed);
        self.locals = saved;
    }

    /// The builder a call's function makes (`OpenOptions::new`), if the rules know one.
    fn builder_of(&self, func: &Expr) -> Option<std::sync::Arc<crate::surface::rules::Builder>> {
        let Expr::Path(p) = func else { return None };
        if p.qself.is_some() {
            return None;
        }
        let up = UsePath::from_path(&p.path);
        let target = match self.r.resolve(self.ctx(), &up, false) {
            Some(Res::Local(_)) => return None,
            Some(r) => self.r.finalize(r),
            None => None,
        };
        match target {
            Some(Target::Path(segs)) => self.rules.builder(&segs.join("::")),
            _ => None,
        }
    }

    /// The constructor call at the root of a chain (`OpenOptions::new()` in
    /// `OpenOptions::new().write(true)?`), if the root is a builder's.
    fn builder_root<'e>(&self, e: &'e Expr) -> Option<(&'e syn::ExprCall, std::sync::Arc<crate::surface::rules::Builder>)> {
        let mut e = e;
        loop {
            match e {
                Expr::MethodCall(m) => e = &m.receiver,
                Expr::Try(t) => e = &t.expr,
                Expr::Paren(p) => e = &p.expr,
                Expr::Await(a) => e = &a.base,
                Expr::Call(c) => return self.builder_of(&c.func).map(|b| (c, b)),
                _ => return None,
            }
        }
    }

    /// `unsafe fn`, `extern "C" fn`, `#[no_mangle]` / `#[export_name]`.
    /// `unsafe fn`; a function exported under a C symbol (`#[no_mangle]`, `#[export_name]`)
    /// is `ffi`, and one whose symbol is a C library function's interposes it, said in the
    /// path. An `extern "C" fn` that is not exported is a Rust function with a C calling
    /// convention (a callback handed to C): not a foreign call, no finding.
    fn fn_findings(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature) {
        let name = sig.ident.unraw().to_string();
        if let Some(u) = &sig.unsafety {
            self.add(Capability::Unsafe, u.span, format!("unsafe fn {name}"));
        }
        let Some((label, symbol)) = self.export_attr(attrs, &name) else { return };
        let abi = sig.abi.as_ref().map(abi_name).filter(|a| a != "Rust");
        let what = match abi {
            Some(abi) => format!("{label} extern \"{abi}\" fn {name}"),
            None => format!("{label} fn {name}"),
        };
        let what = if self.is_c_library_symbol(&symbol) { format!("{what} (interposes the C library's `{symbol}`)") } else { what };
        self.add(Capability::Ffi, sig.fn_token.span, what);
    }

    /// Whether `symbol` names a function of the C library: a foreign item some dependency
    /// exports (libc's), or a symbol the rules know.
    fn is_c_library_symbol(&self, symbol: &str) -> bool {
        let target = format!("extern:{symbol}");
        !self.rules.symbol(symbol).is_empty() || self.r.ex.deps().values().any(|ex| ex.aliases.get(symbol) == Some(&target))
    }

    /// Whether an item is a test or a benchmark (`#[test]`, `#[tokio::test]`, `#[bench]`):
    /// rustc compiles it only under `cfg(test)`.
    fn is_test_item(attrs: &[syn::Attribute]) -> bool {
        attrs.iter().any(|a| {
            let segs = &a.path().segments;
            segs.len() <= 2 && segs.last().is_some_and(|s| s.ident == "test" || s.ident == "bench")
        })
    }

    /// `#[no_mangle]` or `#[export_name = ".."]`: the attribute as written and the symbol.
    fn export_attr(&self, attrs: &[syn::Attribute], name: &str) -> Option<(String, String)> {
        let attrs = &*attrs::effective(attrs, self.cfg);
        if attrs::has_flag(attrs, "no_mangle").is_some() {
            return Some(("#[no_mangle]".to_string(), name.to_string()));
        }
        attrs::str_value(attrs, "export_name").map(|(n, _)| (format!("#[export_name = \"{n}\"]"), n))
    }

    fn with_locals_scope(&mut self, f: impl FnOnce(&mut Self)) {
        let mark = self.locals.len();
        f(self);
        self.locals.truncate(mark);
    }

    /// Visit items parsed from somewhere else (a macro body, an included file) in place.
    fn visit_loose_items(&mut self, items: Vec<Item>) {
        let stmts: Vec<Stmt> = items.into_iter().map(Stmt::Item).collect();
        self.visit_stmts(&stmts);
    }

    /// A block's statements: configured-out ones skipped, statement macros expanded
    /// (`macro_rules!` ones, `cfg_if!`, `cfg_select!`), the block's items in scope for all of
    /// them, each statement visited with the `macro_rules!` visible at it.
    fn visit_stmts(&mut self, stmts: &[Stmt]) {
        if !stmts.iter().any(|s| stmt_macro(s).is_some()) {
            let refs: Vec<&Stmt> = stmts.iter().collect();
            return self.visit_stmts_plain(&refs, None);
        }
        let saved = self.macros.clone();
        let mut scope = self.macros.clone();
        let mut out = Vec::with_capacity(stmts.len());
        // The expansions are held until the block has been visited.
        let mark = self.r.ex.mark();
        let origin = self.sink.origin.clone();
        self.expand_stmts(stmts.iter().map(Cow::Borrowed).collect(), &mut scope, &mut out, 0, &origin);
        let refs: Vec<&Stmt> = out.iter().map(|(s, _, _)| s.as_ref()).collect();
        let scopes: Vec<(Textual, Option<Rc<Expansion>>)> = out.iter().map(|(_, t, o)| (t.clone(), o.clone())).collect();
        self.visit_stmts_plain(&refs, Some(&scopes));
        self.sink.origin = origin;
        drop(scopes);
        drop(refs);
        drop(out);
        self.r.ex.release_to(mark);
        self.macros = saved;
    }

    /// Statement macros expanded in place (recursively), each statement with the textual
    /// macro scope it sees; statements that are not macros are borrowed, not copied.
    /// `origin`: the macro whose expansion these statements come from.
    #[allow(clippy::type_complexity)]
    fn expand_stmts<'s>(
        &mut self,
        stmts: Vec<Cow<'s, Stmt>>,
        scope: &mut Textual,
        out: &mut Vec<(Cow<'s, Stmt>, Textual, Option<Rc<Expansion>>)>,
        depth: usize,
        origin: &Option<Rc<Expansion>>,
    ) {
        for s in stmts {
            let Some(mac) = stmt_macro(&s) else {
                out.push((s, scope.clone(), origin.clone()));
                continue;
            };
            if !attrs::holds(attrs::stmt_attrs(&s), self.cfg) {
                continue;
            }
            if let Stmt::Item(Item::Macro(im)) = &*s
                && mac.path.is_ident("macro_rules")
            {
                if let Some(name) = &im.ident {
                    let name = name.unraw().to_string();
                    let line = im.ident.as_ref().map_or(1, |i| i.span().start().line);
                    let def = MacroDefn::local(name.clone(), mac.tokens.clone(), self.r.ex.edition, false).at(self.r.ex, &self.file, line);
                    *scope = scope.with(name, std::rc::Rc::new(def));
                }
                continue;
            }
            let limit = self.r.ex.recursion_limit.get();
            if loader::is_cfg_if(&mac.path) && self.depth + depth < limit {
                let file = self.file.clone();
                if let Some(inner) = loader::expand_cfg_if_stmts(mac, self.cfg, &file, self.sink) {
                    self.expand_stmts(inner.into_iter().map(Cow::Owned).collect(), scope, out, depth + 1, origin);
                    continue;
                }
                out.push((s, scope.clone(), origin.clone()));
                continue;
            }
            self.macros = scope.clone();
            let Some(def) = self.resolve_macro(&mac.path) else {
                if macros::is_paste(&mac.path) && self.depth + depth < limit {
                    match macros::paste(&mac.tokens).map_err(|e| e.to_string()).and_then(|t| macros::parse_stmts(t).map_err(|e| e.to_string())) {
                        Ok(inner) => self.expand_stmts(inner.into_iter().map(Cow::Owned).collect(), scope, out, depth + 1, origin),
                        Err(e) => self.fail(mac, "paste", e, mac.tokens.clone()),
                    }
                    continue;
                }
                // A built-in or unknown macro: visited as it is.
                out.push((s, scope.clone(), origin.clone()));
                continue;
            };
            if self.depth + depth >= limit {
                self.fail(mac, &def.name, macros::ExpandFailure::Recursion(limit).to_string(), mac.tokens.clone());
                continue;
            }
            let expanded = match self.r.ex.expand(&def, mac, self.depth + depth > 0) {
                Ok(t) => t,
                Err(e) => {
                    self.fail(mac, &def.name, e.to_string(), mac.tokens.clone());
                    continue;
                }
            };
            match macros::parse_stmts(expanded.clone()) {
                Ok(inner) => {
                    let inner_origin = def.origin.clone().or_else(|| origin.clone());
                    self.expand_stmts(inner.into_iter().map(Cow::Owned).collect(), scope, out, depth + 1, &inner_origin)
                }
                Err(e) => self.fail(mac, &def.name, e.to_string(), expanded),
            }
        }
    }

    fn visit_stmts_plain(&mut self, stmts: &[&Stmt], scopes: Option<&[(Textual, Option<Rc<Expansion>>)]>) {
        let pushed = self.push_layer(stmts);
        self.with_locals_scope(|this| {
            for (i, s) in stmts.iter().enumerate() {
                if let Some(sc) = scopes {
                    this.macros = sc[i].0.clone();
                    this.sink.origin = sc[i].1.clone();
                }
                this.visit_stmt(s);
            }
        });
        if pushed {
            self.pop_layer();
        }
    }

    fn resolve_macro(&self, path: &syn::Path) -> Option<MacroRef> {
        self.r.resolve_macro(self.ctx(), &UsePath::from_path(path), &self.macros)
    }

    /// A macro that could not be expanded: `unanalyzed` at the invocation, and its tokens
    /// (or the expansion that did not parse) scanned.
    fn fail(&mut self, mac: &syn::Macro, name: &str, why: String, scan: TokenStream) {
        self.add(Capability::Unanalyzed, macros::call_site(&mac.path), format!("macro `{name}!` not expanded: {why}"));
        self.scan_tokens(scan, false);
    }

    /// Expand an invocation of `def` and visit what it produces as code of position `pos`.
    fn expand_and_visit(&mut self, mac: &syn::Macro, def: &MacroDefn, pos: Pos) {
        let limit = self.r.ex.recursion_limit.get();
        if self.depth >= limit {
            return self.fail(mac, &def.name, macros::ExpandFailure::Recursion(limit).to_string(), mac.tokens.clone());
        }
        let mark = self.r.ex.mark();
        let out = match self.r.ex.expand(def, mac, self.depth > 0) {
            Ok(t) => t,
            Err(e) => return self.fail(mac, &def.name, e.to_string(), mac.tokens.clone()),
        };
        let inner = def.origin.clone().or_else(|| self.sink.origin.clone());
        let saved = std::mem::replace(&mut self.sink.origin, inner);
        self.visit_expansion(mac, &def.name, out, pos);
        self.sink.origin = saved;
        self.r.ex.release_to(mark);
    }

    /// Visit what an expansion of `name!` produced, parsed for the position it stands in; a
    /// failure to parse is `unanalyzed` at the invocation, the tokens scanned.
    fn visit_expansion(&mut self, mac: &syn::Macro, name: &str, out: TokenStream, pos: Pos) {
        self.depth += 1;
        let parsed = match &pos {
            Pos::Expr => match macros::parse_expr(out.clone()) {
                Ok(e) => {
                    self.visit_expr(&e);
                    Ok(())
                }
                // A block-like expansion (`{ let x = ..; x }` without the braces) is still code.
                Err(e) => macros::parse_stmts(out.clone()).map(|st| self.visit_stmts(&st)).map_err(|_| e),
            },
            // A `mod x;` among the items is loaded where it stands (see `visit_item_mod`).
            Pos::Items => macros::parse_items(out.clone()).map(|items| self.visit_loose_items(items)),
            Pos::ImplItems => macros::parse_impl_items(out.clone()).map(|items| items.iter().for_each(|i| self.visit_impl_item(i))),
            Pos::TraitItems => macros::parse_trait_items(out.clone()).map(|items| items.iter().for_each(|i| self.visit_trait_item(i))),
            Pos::ForeignItems(abi) => {
                let abi = abi.clone();
                macros::parse_foreign_items(out.clone()).map(|items| items.iter().for_each(|i| self.foreign_item(&abi, i)))
            }
        };
        self.depth -= 1;
        if let Err(e) = parsed {
            self.fail(mac, name, e.to_string(), out);
        }
    }

    /// `mod x;` inside a block: every file it is in some configuration, parsed and visited
    /// in place, with its own `mod` items relative to it.
    fn load_block_mod(&mut self, m: &syn::ItemMod, name: &str, dir: &str) {
        let files = loader::ModFiles::of(&m.attrs, self.cfg);
        let c = loader::mod_candidates(&files, dir, dir, name, self.tree);
        let span = m.mod_token.span;
        for p in &c.outside {
            self.add(Capability::Unanalyzed, span, format!("module file of `mod {name}` is outside the package and refused (#[path = {p:?}])"));
        }
        if c.existing.is_empty() {
            if c.outside.is_empty() {
                let tried: Vec<String> = c.tried.iter().map(|(t, _)| t.clone()).collect();
                self.add(Capability::Unanalyzed, span, format!("module file of `mod {name}` not found (tried {})", tried.join(", ")));
            }
            return;
        }
        for (target, via_path) in c.existing {
            if self.block_files.len() >= MAX_INCLUDE_DEPTH || self.block_files.contains(&target) || self.includes.contains(&target) {
                self.add(Capability::Unanalyzed, span, format!("circular module `mod {name}` ({target})"));
                continue;
            }
            let Some(bytes) = self.tree.get(&target) else { continue };
            let Some(mut parsed) = loader::parse_source(bytes, &target, self.sink, self.r.ex.edition) else { continue };
            if !attrs::active(&mut parsed.attrs, self.cfg) {
                continue;
            }
            self.extra_files.push(target.clone());
            let child = crate::surface::syntax::paths::child_dir(&target, crate::surface::syntax::paths::is_mod_rs(&target, via_path));
            let saved_file = std::mem::replace(&mut self.file, Rc::from(target.as_str()));
            let saved_locals = std::mem::take(&mut self.locals);
            self.block_files.push(target);
            self.block_dirs.push(child);
            self.visit_loose_items(parsed.items);
            self.block_dirs.pop();
            self.block_files.pop();
            self.locals = saved_locals;
            self.file = saved_file;
        }
    }

    fn include(&mut self, mac: &syn::Macro) {
        let span = first_span(&mac.path);
        let (rel, target) = match crate::surface::buildscript::include::target(&mac.tokens, &self.file, self.r.ex.build) {
            Ok(t) => t,
            Err(why) => {
                self.add(Capability::Unanalyzed, span, why);
                return;
            }
        };
        let Some((target, bytes)) = target.and_then(|t| self.tree.get(&t).map(|b| (t, b))) else {
            self.add(Capability::Unanalyzed, span, format!("include! of a missing file: {rel}"));
            return;
        };
        if self.includes.len() >= MAX_INCLUDE_DEPTH || self.includes.contains(&target) {
            self.add(Capability::Unanalyzed, span, format!("include! cycle: {rel}"));
            return;
        }
        let saved = std::mem::replace(&mut self.file, Rc::from(target.as_str()));
        self.includes.push(target.clone());
        match std::str::from_utf8(bytes).ok().and_then(|t| syn::parse_str::<Expr>(t).ok()) {
            Some(e) => self.visit_expr(&e),
            None => {
                if let Some(f) = loader::parse_source(bytes, &target, self.sink, self.r.ex.edition) {
                    self.visit_loose_items(f.items);
                }
            }
        }
        self.includes.pop();
        self.file = saved;
    }

    /// Every macro invocation: a `macro_rules!` is expanded; a built-in is read by its own
    /// rule; anything else (a proc macro, a macro velaris cannot see) has its tokens scanned,
    /// and is `unanalyzed` when they hide a module or an `include!`.
    fn macro_call(&mut self, mac: &syn::Macro, pos: Pos) {
        let Some(last) = mac.path.segments.last() else { return };
        let name = last.ident.unraw().to_string();
        if mac.path.is_ident("macro_rules") {
            return;
        }
        if let Some(def) = self.resolve_macro(&mac.path) {
            return self.expand_and_visit(mac, &def, pos);
        }
        if macros::is_paste(&mac.path) {
            match macros::paste(&mac.tokens) {
                Ok(out) if self.depth < self.r.ex.recursion_limit.get() => return self.visit_expansion(mac, "paste", out, pos),
                Ok(_) => return self.fail(mac, "paste", macros::ExpandFailure::Recursion(self.r.ex.recursion_limit.get()).to_string(), mac.tokens.clone()),
                Err(e) => return self.fail(mac, "paste", e, mac.tokens.clone()),
            }
        }
        let item_position = pos != Pos::Expr;
        if loader::is_cfg_if(&mac.path) && !item_position {
            let file = self.file.clone();
            if let Some(bodies) = loader::cfg_if_bodies(mac, self.cfg, &file, self.sink) {
                for b in bodies {
                    match macros::parse_expr(b.clone()) {
                        Ok(e) => self.visit_expr(&e),
                        Err(_) => match macros::parse_stmts(b.clone()) {
                            Ok(st) => self.visit_stmts(&st),
                            Err(_) => self.scan_tokens(b, false),
                        },
                    }
                }
                return;
            }
        }
        let std_path = mac.path.segments.len() == 1 || crate::surface::syntax::is_std_macro(&mac.path, &name);
        if ASM_MACROS.contains(&name.as_str()) && self.is_asm_path(&mac.path) {
            self.add(Capability::Asm, first_span(&mac.path), format!("{name}!"));
            self.scan_tokens(mac.tokens.clone(), false);
            return;
        }
        if std_path && name == "include" {
            self.include(mac);
            return;
        }
        if std_path && INERT_MACROS.contains(&name.as_str()) {
            return;
        }
        if std_path && EXPR_MACROS.contains(&name.as_str()) {
            match mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
                Ok(exprs) => exprs.iter().for_each(|e| self.visit_expr(e)),
                Err(_) => self.scan_tokens(mac.tokens.clone(), false),
            }
            return;
        }
        // Unknown macro: the tokens always (fail closed), and whatever syn understands.
        if let Some(hidden) = macros::hidden_code(&mac.tokens) {
            self.add(
                Capability::Unanalyzed,
                macros::call_site(&mac.path),
                format!("macro `{name}!` not expanded (no `macro_rules!` of that name is visible) and its tokens declare {hidden}"),
            );
        }
        self.scan_tokens(mac.tokens.clone(), false);
        if !item_position
            && let Ok(exprs) = mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            exprs.iter().for_each(|e| self.visit_expr(e));
            return;
        }
        if let Ok(stmts) = mac.parse_body_with(syn::Block::parse_within) {
            self.visit_stmts(&stmts);
        }
    }

    fn is_asm_path(&self, p: &syn::Path) -> bool {
        if p.segments.len() == 1 {
            return true;
        }
        let up = UsePath::from_path(p);
        match self.r.resolve(self.ctx(), &up, false).and_then(|r| self.r.finalize(r)) {
            Some(Target::Path(segs)) => {
                segs.len() == 3 && (segs[0] == "std" || segs[0] == "core") && segs[1] == "arch"
            }
            _ => false,
        }
    }

    /// Scan a token stream for what it would show if compiled: paths (`a::b::c`, resolved
    /// like written code), method chains on known types, `unsafe`, `asm!`, `extern "ABI"`.
    /// `dollar`: a `macro_rules!` body, where `$name` fragments are skipped and `$crate` is
    /// the crate root.
    pub fn scan_tokens(&mut self, ts: TokenStream, dollar: bool) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut claimed = vec![false; toks.len()];
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => {
                    self.scan_tokens(g.stream(), dollar);
                    i += 1;
                }
                TokenTree::Literal(_) => i += 1,
                TokenTree::Punct(p) => {
                    let c = p.as_char();
                    if c == '#' {
                        // Attributes (doc comments included) are not uses.
                        let mut j = i + 1;
                        if matches!(toks.get(j), Some(TokenTree::Punct(b)) if b.as_char() == '!') {
                            j += 1;
                        }
                        if let Some(TokenTree::Group(g)) = toks.get(j)
                            && g.delimiter() == Delimiter::Bracket
                        {
                            i = j + 1;
                            // `#[wasm_bindgen] extern "C" { .. }` imports JavaScript on wasm;
                            // elsewhere its items are stubs: no foreign call.
                            if self.is_wasm_bindgen_attr(&g.stream())
                                && matches!(toks.get(i), Some(TokenTree::Ident(e)) if e == "extern")
                                && self.cfg.eval(&"target_arch = \"wasm32\"".parse().unwrap_or_default()) != Some(true)
                            {
                                let mut k = i + 1;
                                while k < toks.len() && !matches!(&toks[k], TokenTree::Group(b) if b.delimiter() == Delimiter::Brace) {
                                    k += 1;
                                }
                                i = (k + 1).min(toks.len());
                            }
                            continue;
                        }
                        i += 1;
                    } else if c == '$' && dollar {
                        match toks.get(i + 1) {
                            Some(TokenTree::Ident(id)) if id == "crate" => {
                                i = self.scan_path(&toks, i + 1, &mut claimed);
                            }
                            Some(TokenTree::Ident(_)) => {
                                i += 2;
                                // `$x:frag` in a matcher.
                                if let (Some(TokenTree::Punct(colon)), Some(TokenTree::Ident(_))) = (toks.get(i), toks.get(i + 1))
                                    && colon.as_char() == ':'
                                    && colon.spacing() == Spacing::Alone
                                {
                                    i += 2;
                                }
                            }
                            _ => i += 1,
                        }
                    } else if c == ':'
                        && p.spacing() == Spacing::Joint
                        && matches!(toks.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == ':')
                        && matches!(toks.get(i + 2), Some(TokenTree::Ident(_)))
                        && leading_allowed(i.checked_sub(1).map(|k| &toks[k]))
                    {
                        i = self.scan_path(&toks, i, &mut claimed);
                    } else {
                        i += 1;
                    }
                }
                TokenTree::Ident(id) => {
                    let s = id.to_string();
                    let prev = i.checked_sub(1).map(|k| &toks[k]);
                    let after_dot = matches!(prev, Some(TokenTree::Punct(p)) if p.as_char() == '.');
                    let after_def = matches!(prev, Some(TokenTree::Ident(k)) if DEF_KEYWORDS.contains(&k.to_string().as_str()));
                    if after_dot {
                        if !claimed[i] && matches!(toks.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis) {
                            self.report_trait_method(&s, id.span());
                        }
                        i += 1;
                        continue;
                    }
                    match s.as_str() {
                        "unsafe" => {
                            self.scan_unsafe(&toks, i);
                            i += 1;
                            continue;
                        }
                        "extern" => {
                            i = self.scan_extern(&toks, i, dollar);
                            continue;
                        }
                        _ => {}
                    }
                    let bang = matches!(toks.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                    if bang {
                        if ASM_MACROS.contains(&s.as_str()) {
                            self.add(Capability::Asm, id.span(), format!("{s}!"));
                        }
                        i += 2;
                        // The arguments of an inert macro (`stringify!(..)`) are not code.
                        if INERT_MACROS.contains(&s.as_str()) && matches!(toks.get(i), Some(TokenTree::Group(_))) {
                            i += 1;
                        }
                        continue;
                    }
                    if after_def || after_colons(&toks, i) {
                        // A name being defined, or the rest of a path we do not look at
                        // (`Self::x`, `<T>::x`): skip the whole path.
                        i = skip_path(&toks, i);
                        continue;
                    }
                    if KEYWORDS.contains(&s.as_str()) && s != "self" {
                        i += 1;
                        continue;
                    }
                    i = self.scan_path(&toks, i, &mut claimed);
                }
            }
        }
    }

    /// Whether an attribute's tokens are `wasm_bindgen` (a path ending in it), with or
    /// without arguments.
    fn is_wasm_bindgen_attr(&self, ts: &TokenStream) -> bool {
        let mut last = None;
        for t in ts.clone() {
            match t {
                TokenTree::Ident(i) => last = Some(i.to_string()),
                TokenTree::Punct(p) if p.as_char() == ':' => {}
                _ => break,
            }
        }
        last.as_deref() == Some("wasm_bindgen")
    }

    /// A path starting at `toks[start]` (an identifier, `$crate` or `::`): report it and any
    /// method chain after a call of it. Returns the index after the path.
    fn scan_path(&mut self, toks: &[TokenTree], start: usize, claimed: &mut [bool]) -> usize {
        let mut j = start;
        let mut up = UsePath { leading: false, segs: Vec::new() };
        let mut span = None;
        if let TokenTree::Punct(_) = &toks[j] {
            up.leading = true;
            span = Some(toks[j].span());
            j += 2;
        }
        while let Some(TokenTree::Ident(id)) = toks.get(j) {
            let mut s = id.to_string();
            if s == "crate" && j > 0 && matches!(&toks[j - 1], TokenTree::Punct(p) if p.as_char() == '$') {
                s = "$crate".to_string();
            }
            span.get_or_insert(id.span());
            up.segs.push(s);
            j += 1;
            let colons = matches!((toks.get(j), toks.get(j + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':');
            if colons && matches!(toks.get(j + 2), Some(TokenTree::Ident(_))) {
                j += 2;
            } else {
                break;
            }
        }
        let Some(span) = span else { return start + 1 };
        if up.segs.is_empty() {
            return j.max(start + 1);
        }
        // A macro path (`a::b!`) is not a value.
        if matches!(toks.get(j), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
            return j + 1;
        }
        if up.segs == ["self"] {
            return j;
        }
        let local = up.segs.len() == 1 && !up.leading && self.is_local(&up.segs[0]);
        let mut ty = None;
        let is_call = matches!(toks.get(j), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
        if local {
            ty = self.local_type(&up.segs[0]);
        } else {
            self.report_path(&up, span);
            if is_call {
                ty = self.r.assoc_type(self.ctx(), &up);
            }
        }
        if let Some(ty) = ty {
            // `.method(..)` links, with `?` between them.
            let mut k = if is_call { j + 1 } else { j };
            loop {
                while matches!(toks.get(k), Some(TokenTree::Punct(p)) if p.as_char() == '?') {
                    k += 1;
                }
                let dot = matches!(toks.get(k), Some(TokenTree::Punct(p)) if p.as_char() == '.');
                let (Some(TokenTree::Ident(m)), Some(TokenTree::Group(g))) = (toks.get(k + 1), toks.get(k + 2)) else { break };
                if !dot || g.delimiter() != Delimiter::Parenthesis {
                    break;
                }
                claimed[k + 1] = true;
                self.report_method(&ty, &m.to_string(), m.span());
                k += 3;
            }
        }
        j
    }

    fn scan_unsafe(&mut self, toks: &[TokenTree], i: usize) {
        let span = toks[i].span();
        match (toks.get(i + 1), toks.get(i + 2)) {
            (Some(TokenTree::Group(g)), _) if g.delimiter() == Delimiter::Brace => {
                self.add(Capability::Unsafe, span, "unsafe block");
            }
            (Some(TokenTree::Ident(k)), Some(TokenTree::Ident(n))) if k == "fn" => {
                self.add(Capability::Unsafe, span, format!("unsafe fn {n}"));
            }
            (Some(TokenTree::Ident(k)), Some(TokenTree::Ident(n))) if k == "trait" => {
                self.add(Capability::Unsafe, span, format!("unsafe trait {n}"));
            }
            (Some(TokenTree::Ident(k)), _) if k == "impl" => self.add(Capability::Unsafe, span, "unsafe impl"),
            _ => {}
        }
    }

    /// `extern "ABI" fn name`, `extern "ABI" { fn name(); }` (foreign items: `ffi` and, unless
    /// `pub`, the symbol's capabilities). Returns the next index.
    fn scan_extern(&mut self, toks: &[TokenTree], i: usize, dollar: bool) -> usize {
        let mut j = i + 1;
        let abi = match toks.get(j) {
            Some(TokenTree::Literal(l)) => {
                j += 1;
                syn::parse2::<syn::LitStr>(TokenTree::Literal(l.clone()).into()).map_or_else(|_| "C".to_string(), |s| s.value())
            }
            Some(TokenTree::Ident(id)) if id == "crate" => return i + 2,
            _ => "C".to_string(),
        };
        if abi == "Rust" {
            return j;
        }
        match (toks.get(j), toks.get(j + 1)) {
            (Some(TokenTree::Ident(f)), Some(TokenTree::Ident(n))) if f == "fn" => {
                self.add(Capability::Ffi, f.span(), format!("extern \"{abi}\" fn {n}"));
                j + 2
            }
            (Some(TokenTree::Group(g)), _) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for (k, t) in inner.iter().enumerate() {
                    let TokenTree::Ident(kw) = t else { continue };
                    if kw != "fn" && kw != "static" {
                        continue;
                    }
                    let mut n = k + 1;
                    if matches!(inner.get(n), Some(TokenTree::Ident(m)) if m == "mut") {
                        n += 1;
                    }
                    let Some(TokenTree::Ident(name)) = inner.get(n) else { continue };
                    let public = k > 0 && matches!(&inner[k - 1], TokenTree::Ident(p) if p == "pub");
                    let what = if kw == "fn" { "fn" } else { "static" };
                    let label = format!("extern \"{abi}\" {what} {name}");
                    self.add(Capability::Ffi, kw.span(), label.clone());
                    if !public {
                        for c in self.rules.symbol(&name.to_string()) {
                            self.add(c, kw.span(), label.clone());
                        }
                    }
                }
                self.scan_tokens(g.stream(), dollar);
                j + 1
            }
            _ => j,
        }
    }

    /// `dlsym(RTLD_DEFAULT, ..)` / `dlsym(RTLD_NEXT, ..)` looks a symbol up among the code
    /// already loaded: `ffi`, not `dynamic-load`. `false` for any other handle.
    fn dlsym_call(&mut self, c: &syn::ExprCall, path: &syn::Path, display: &str) -> bool {
        let Some(h) = first_arg_path(c) else { return false };
        let Some(last) = h.path.segments.last() else { return false };
        let handle = last.ident.unraw().to_string();
        if handle != "RTLD_DEFAULT" && handle != "RTLD_NEXT" {
            return false;
        }
        let span = first_span(path);
        self.add(Capability::Ffi, span, format!("{display}({handle}): a symbol lookup"));
        // A constant name: what that symbol does (`dlsym(RTLD_DEFAULT, c"system")` is
        // `system`'s process.spawn); another name is only a foreign call.
        if let Some(name) = c.args.iter().nth(1).and_then(const_c_string) {
            let label = format!("{display}({handle}, \"{name}\")");
            for cap in self.rules.symbol(&name) {
                self.add(cap, span, label.clone());
            }
        }
        true
    }

    /// `libc::write(1 | 2 | STDOUT_FILENO | STDERR_FILENO, ..)` (and `writev`): a write to
    /// the standard output or error the process inherited, not to a file it opened.
    fn std_stream_write(&mut self, c: &syn::ExprCall, symbol: &str, path: &syn::Path, display: &str) -> bool {
        if !matches!(symbol, "write" | "writev") {
            return false;
        }
        let std_fd = match c.args.first().map(strip_casts) {
            Some(Expr::Lit(l)) => matches!(&l.lit, syn::Lit::Int(i) if matches!(i.base10_digits(), "1" | "2")),
            Some(Expr::Path(p)) => p.path.segments.last().is_some_and(|s| s.ident == "STDOUT_FILENO" || s.ident == "STDERR_FILENO"),
            _ => false,
        };
        if !std_fd {
            return false;
        }
        self.add(Capability::Ffi, first_span(path), format!("{display} to the standard output or error"));
        true
    }

    /// The value of a condition that is `cfg!(..)` or `!cfg!(..)`, when known.
    fn cfg_condition(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Macro(m) if crate::surface::syntax::is_std_macro(&m.mac.path, "cfg") => self.cfg.eval(&m.mac.tokens),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => self.cfg_condition(&u.expr).map(|v| !v),
            Expr::Paren(p) => self.cfg_condition(&p.expr),
            Expr::Group(g) => self.cfg_condition(&g.expr),
            _ => None,
        }
    }

    /// Calls read by their arguments: `dlsym` with a pseudo-handle (see `dlsym_call`), and
    /// `syscall(SYS_x, ..)` (libc's, or a foreign `syscall`) with a constant number: `ffi` and
    /// what system call x does, instead of the `unanalyzed` of a raw system call. `false`
    /// when the call is not that.
    fn special_call(&mut self, c: &syn::ExprCall) -> bool {
        let Expr::Path(p) = &*c.func else { return false };
        if p.qself.is_some() {
            return false;
        }
        let up = UsePath::from_path(&p.path);
        let target = match self.r.resolve(self.ctx(), &up, false) {
            Some(r) => self.r.finalize(r),
            None if up.segs.len() > 1 && self.r.first_unknown(self.ctx(), &up) => Some(Target::Path(up.segs.clone())),
            None => None,
        };
        let (symbol, display) = match &target {
            Some(Target::Foreign { symbol, display }) => (symbol.clone(), display.clone()),
            Some(Target::Path(segs)) if segs.len() == 2 && segs[0] == "libc" => (segs[1].clone(), segs.join("::")),
            _ => return false,
        };
        if symbol == "dlsym" {
            return self.dlsym_call(c, &p.path, &display);
        }
        if self.std_stream_write(c, &symbol, &p.path, &display) {
            return true;
        }
        if symbol != "syscall" {
            return false;
        }
        let Some(np) = first_arg_path(c) else { return false };
        let Some(last) = np.path.segments.last() else { return false };
        let last = last.ident.unraw().to_string();
        let Some(name) = last.strip_prefix("SYS_").or_else(|| last.strip_prefix("__NR_")) else { return false };
        let span = first_span(&p.path);
        let label = format!("{display}(SYS_{name})");
        self.add(Capability::Ffi, span, label.clone());
        // The name says which call only where the C library defines it (`libc::SYS_x`, also
        // imported or re-exported): a constant of the crate's own, a parameter or another
        // crate's constant could be named `SYS_getrandom` and hold execve's number.
        let up = UsePath::from_path(&np.path);
        let from_libc = match self.r.resolve(self.ctx(), &up, false) {
            Some(r) => matches!(self.r.finalize(r), Some(Target::Path(segs)) if segs.first().is_some_and(|f| f == "libc")),
            None => !self.is_local(&last) && up.segs.len() > 1 && up.segs[0] == "libc",
        };
        if !from_libc {
            self.add(Capability::Unanalyzed, span, format!("{label}: a system call number that is not the C library's constant"));
            return true;
        }
        match self.rules.syscall(name) {
            Some(caps) => caps.into_iter().for_each(|cap| self.add(cap, span, label.clone())),
            None => self.add(Capability::Unanalyzed, span, format!("{label}: a system call no rule knows")),
        }
        true
    }

    /// One item of an `extern "ABI"` block: `ffi`, and unless it is `pub` (an export, as in
    /// `libc`, whose users get the symbol's capabilities through `Exports`) what the symbol
    /// does.
    fn foreign_item(&mut self, abi: &str, it: &syn::ForeignItem) {
        let it = &*attrs::unsafe_extern_item(it);
        if !attrs::holds(attrs::foreign_item_attrs(it), self.cfg) {
            return;
        }
        let (what, ident, attrs, vis, span) = match it {
            syn::ForeignItem::Fn(f) => ("fn", &f.sig.ident, &f.attrs, &f.vis, f.sig.fn_token.span),
            syn::ForeignItem::Static(s) => ("static", &s.ident, &s.attrs, &s.vis, s.static_token.span),
            syn::ForeignItem::Macro(m) => return self.macro_call(&m.mac, Pos::ForeignItems(abi.to_string())),
            syn::ForeignItem::Verbatim(ts) => return self.scan_tokens(ts.clone(), false),
            _ => return,
        };
        let attrs = attrs::effective(attrs, self.cfg);
        let symbol = attrs::str_value(&attrs, "link_name").map_or_else(|| ident.unraw().to_string(), |(s, _)| s);
        let label = format!("extern \"{abi}\" {what} {symbol}");
        self.add(Capability::Ffi, span, label.clone());
        if !matches!(vis, syn::Visibility::Public(_)) {
            for c in self.rules.symbol(&symbol) {
                self.add(c, span, label.clone());
            }
        }
    }

    /// Whether an item runs without being called: a `static` in a section the loader runs
    /// (`#[link_section = ".init_array"]`, what `#[ctor]` expands to), or an item marked
    /// `#[ctor]`/`#[dtor]`. The attribute as written.
    fn pre_main_attr(&self, attrs: &[syn::Attribute]) -> Option<String> {
        let attrs = attrs::effective(attrs, self.cfg);
        if let Some((sec, _)) = attrs::str_value(&attrs, "link_section")
            && is_init_section(&sec)
        {
            return Some(format!("#[link_section = {sec:?}]"));
        }
        attrs.iter().find_map(|a| {
            let last = a.path().segments.last()?.ident.to_string();
            (matches!(last.as_str(), "ctor" | "dtor") && a.path().segments.len() <= 2).then(|| format!("#[{last}]"))
        })
    }

    /// Push a block scope for the items of `stmts`, if any.
    fn push_layer(&mut self, stmts: &[&Stmt]) -> bool {
        let mut layer = NameScope::default();
        let mut any = false;
        for s in stmts {
            if let Stmt::Item(item) = *s
                && !matches!(item, Item::Macro(_) | Item::Impl(_))
                && attrs::holds(attrs::item_attrs(item), self.cfg)
            {
                layer.add_item(item, self.cfg);
                any = true;
            }
        }
        if !any {
            return false;
        }
        let traits = self.r.traits_of(self.ctx(), &layer);
        self.layers.push(layer);
        self.layer_traits.push(traits);
        true
    }

    fn pop_layer(&mut self) {
        self.layers.pop();
        self.layer_traits.pop();
    }
}

/// Whether a link section is one whose function pointers the loader calls without `main`
/// calling them: ELF `.init_array`, `.preinit_array`, `.fini_array`, `.ctors`, `.dtors`
/// (with a priority suffix or not), Mach-O `__DATA,__mod_init_func`/`__mod_term_func`,
/// Windows `.CRT$X..` (C initializers, terminators, TLS callbacks).
pub(crate) fn is_init_section(name: &str) -> bool {
    let n = name.trim();
    [".init_array", ".preinit_array", ".fini_array", ".ctors", ".dtors"].iter().any(|p| n == *p || n.starts_with(&format!("{p}.")))
        || n.contains("__mod_init_func")
        || n.contains("__mod_term_func")
        || n.starts_with(".CRT$X")
}

/// `p` without its type ascription (`x: T`).
fn strip_pat_type(p: &Pat) -> &Pat {
    match p {
        Pat::Type(t) => strip_pat_type(&t.pat),
        other => other,
    }
}

/// `e` without parentheses and `?` around it.
fn strip_expr(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_expr(&p.expr),
        Expr::Group(g) => strip_expr(&g.expr),
        Expr::Try(t) => strip_expr(&t.expr),
        other => other,
    }
}

/// The names a function body uses other than as the receiver of a method call (`x.m()`,
/// `(&mut x).m()`): where a value bound to one of them may go elsewhere. Identifiers in
/// macro arguments count (the macro may move the value).
fn escaping_names(block: &syn::Block) -> std::collections::HashSet<String> {
    struct V(std::collections::HashSet<String>);
    fn receiver_ident(e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p.qself.is_none() && p.path.segments.len() == 1,
            Expr::Reference(r) => receiver_ident(&r.expr),
            Expr::Paren(p) => receiver_ident(&p.expr),
            _ => false,
        }
    }
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if !receiver_ident(&m.receiver) {
                self.visit_expr(&m.receiver);
            }
            for a in &m.args {
                self.visit_expr(a);
            }
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                self.0.insert(p.path.segments[0].ident.unraw().to_string());
            }
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            fn idents(ts: TokenStream, out: &mut std::collections::HashSet<String>) {
                for t in ts {
                    match t {
                        TokenTree::Ident(i) => {
                            out.insert(i.unraw().to_string());
                        }
                        TokenTree::Group(g) => idents(g.stream(), out),
                        _ => {}
                    }
                }
            }
            idents(m.tokens.clone(), &mut self.0);
        }
    }
    let mut v = V(std::collections::HashSet::new());
    v.visit_block(block);
    v.0
}

/// `e` without casts, parentheses and groups around it.
fn strip_casts(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(x) => strip_casts(&x.expr),
        Expr::Paren(x) => strip_casts(&x.expr),
        Expr::Group(x) => strip_casts(&x.expr),
        other => other,
    }
}

/// A C string given as a constant: `c"name"`, `b"name\0"`, `"name\0"`, through `.as_ptr()`,
/// `.cast()`, casts, references and `CStr::from_bytes_with_nul(..).unwrap()`; the name
/// without its terminating NUL.
fn const_c_string(e: &Expr) -> Option<String> {
    let text = match strip_casts(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::CStr(c) => c.value().to_str().ok()?.to_string(),
            syn::Lit::ByteStr(b) => String::from_utf8(b.value()).ok()?,
            syn::Lit::Str(s) => s.value(),
            _ => return None,
        },
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "as_ptr" | "cast" | "unwrap" | "expect" | "as_bytes" | "as_c_str") => {
            return const_c_string(&m.receiver);
        }
        Expr::Reference(r) => return const_c_string(&r.expr),
        Expr::Call(c) if c.args.len() == 1 => return const_c_string(&c.args[0]),
        _ => return None,
    };
    let name = text.strip_suffix('\0').unwrap_or(&text);
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then(|| name.to_string())
}

/// Whether a call's function wraps its one argument in a type the analysis looks through
/// (`Some`, `Ok`, `Box::new`, `Arc::new`, `Rc::new`, `Mutex::new`, `RefCell::new`, ...).
fn is_wrapper_call(f: &Expr) -> bool {
    let Expr::Path(p) = f else { return false };
    if p.qself.is_some() {
        return false;
    }
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.unraw().to_string()).collect();
    match segs.as_slice() {
        [one] => one == "Some" || one == "Ok",
        [.., ty, f] => {
            f == "new" && matches!(ty.as_str(), "Box" | "Arc" | "Rc" | "Mutex" | "RwLock" | "RefCell" | "Cell" | "Pin" | "ManuallyDrop")
                || (ty == "Option" && f == "Some")
                || (ty == "Result" && f == "Ok")
        }
        _ => false,
    }
}

/// A call's first argument when it is a path, through casts and parentheses
/// (`libc::SYS_futex as i64`, `(RTLD_DEFAULT)`).
fn first_arg_path(c: &syn::ExprCall) -> Option<&syn::ExprPath> {
    let mut e = c.args.first()?;
    loop {
        match e {
            Expr::Cast(x) => e = &x.expr,
            Expr::Paren(x) => e = &x.expr,
            Expr::Group(x) => e = &x.expr,
            Expr::Path(p) => return Some(p),
            _ => return None,
        }
    }
}

/// The macro invocation a statement is, if any (a definition included).
fn stmt_macro(s: &Stmt) -> Option<&syn::Macro> {
    match s {
        Stmt::Macro(m) => Some(&m.mac),
        Stmt::Item(Item::Macro(m)) => Some(&m.mac),
        Stmt::Expr(Expr::Macro(m), None) => Some(&m.mac),
        _ => None,
    }
}

/// Whether `::` after `prev` starts a path (`::std::x`) rather than continuing one
/// (`Vec::<u8>::new`, `Self::x`).
fn leading_allowed(prev: Option<&TokenTree>) -> bool {
    match prev {
        None => true,
        Some(TokenTree::Ident(id)) => KEYWORDS.contains(&id.to_string().as_str()) && id != "Self",
        Some(TokenTree::Punct(p)) => p.as_char() != '>',
        Some(_) => false,
    }
}

/// Whether the identifier at `i` follows `::` (it continues a path).
fn after_colons(toks: &[TokenTree], i: usize) -> bool {
    i >= 2
        && matches!(&toks[i - 1], TokenTree::Punct(p) if p.as_char() == ':')
        && matches!(&toks[i - 2], TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
}

/// The index after the path `ident (:: ident)*` starting at `i`.
fn skip_path(toks: &[TokenTree], mut i: usize) -> usize {
    i += 1;
    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(_))) =
        (toks.get(i), toks.get(i + 1), toks.get(i + 2))
    {
        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' {
            i += 3;
        } else {
            break;
        }
    }
    i
}

impl<'ast> Visit<'ast> for Analyzer<'_> {
    // Nothing in attributes is a use (doc comments, derives, cfgs).
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}
    // Paths are handled where they are values; in types, bounds, patterns, visibility: not uses.
    fn visit_path(&mut self, _: &'ast syn::Path) {}
    fn visit_generics(&mut self, _: &'ast syn::Generics) {}
    fn visit_pat(&mut self, _: &'ast Pat) {}
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}
    fn visit_item_extern_crate(&mut self, _: &'ast syn::ItemExternCrate) {}

    /// Types are not uses, except the expressions inside them (array lengths).
    fn visit_type(&mut self, t: &'ast Type) {
        match t {
            Type::Array(a) => {
                self.visit_type(&a.elem);
                self.visit_expr(&a.len);
            }
            Type::Slice(s) => self.visit_type(&s.elem),
            Type::Reference(r) => self.visit_type(&r.elem),
            Type::Ptr(p) => self.visit_type(&p.elem),
            Type::Paren(p) => self.visit_type(&p.elem),
            Type::Group(g) => self.visit_type(&g.elem),
            Type::Tuple(t) => t.elems.iter().for_each(|e| self.visit_type(e)),
            _ => {}
        }
    }

    fn visit_item(&mut self, i: &'ast Item) {
        if !attrs::holds(attrs::item_attrs(i), self.cfg) {
            return;
        }
        match i {
            Item::Verbatim(ts) => self.scan_tokens(ts.clone(), false),
            _ => visit::visit_item(self, i),
        }
    }

    /// Only modules inside blocks (function bodies, `const` and `static` initializers) and
    /// expansions there get here: module-level ones are the loader's. An inline one is
    /// visited in place; an out-of-line one (`#[path = "x.rs"] mod x;`) is loaded from the
    /// directory rustc takes (the enclosing module's, then each inline module's name).
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.unraw().to_string();
        let dir = self.block_dirs.last().cloned().unwrap_or_else(|| self.r.modules[self.module].path_dir.clone());
        let Some((_, items)) = &m.content else {
            return self.load_block_mod(m, &name, &dir);
        };
        let inner = match attrs::str_value(&attrs::effective(&m.attrs, self.cfg), "path") {
            Some((p, _)) => crate::surface::syntax::paths::join(&dir, &p),
            None => crate::surface::syntax::paths::join(&dir, &name),
        };
        let saved = std::mem::take(&mut self.locals);
        self.block_dirs.push(inner.unwrap_or_else(|| "\u{0}outside the package".to_string()));
        let items: Vec<Item> = items.clone();
        self.visit_loose_items(items);
        self.block_dirs.pop();
        self.locals = saved;
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if Self::is_test_item(&f.attrs) {
            return;
        }
        let key = self.item_key(&f.sig.ident.unraw().to_string());
        let pre_main = self.pre_main_attr(&f.attrs);
        self.in_item(key.clone(), |this| {
            this.fn_findings(&f.attrs, &f.sig);
            if let Some(what) = &pre_main {
                this.add(Capability::PreMain, f.sig.fn_token.span, format!("{what} fn {}", f.sig.ident));
            }
            this.fn_body(&f.sig, &f.block);
        });
        if pre_main.is_some() {
            self.graph.root(&key);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let name = f.sig.ident.unraw().to_string();
        let key = match &self.self_ty {
            Some(ty) => format!("{ty}::{name}"),
            None => self.item_key(&format!("{{impl}}::{name}")),
        };
        self.in_item(key, |this| {
            this.fn_findings(&f.attrs, &f.sig);
            this.fn_body(&f.sig, &f.block);
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        let name = f.sig.ident.unraw().to_string();
        let key = match &self.self_ty {
            Some(ty) => format!("{ty}::{name}"),
            None => self.item_key(&format!("{{trait}}::{name}")),
        };
        self.in_item(key, |this| {
            this.fn_findings(&f.attrs, &f.sig);
            if let Some(b) = &f.default {
                this.fn_body(&f.sig, b);
            }
        });
    }

    fn visit_impl_item_const(&mut self, c: &'ast syn::ImplItemConst) {
        let name = c.ident.unraw().to_string();
        let key = match &self.self_ty {
            Some(ty) => format!("{ty}::{name}"),
            None => self.item_key(&format!("{{impl}}::{name}")),
        };
        self.in_item(key, |this| this.visit_expr(&c.expr));
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        let key = self.item_key(&c.ident.unraw().to_string());
        self.in_item(key, |this| this.visit_expr(&c.expr));
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        if !attrs::holds(attrs::impl_item_attrs(i), self.cfg) {
            return;
        }
        match i {
            syn::ImplItem::Verbatim(ts) => self.scan_tokens(ts.clone(), false),
            syn::ImplItem::Macro(m) => self.macro_call(&m.mac, Pos::ImplItems),
            _ => visit::visit_impl_item(self, i),
        }
    }

    fn visit_trait_item(&mut self, i: &'ast syn::TraitItem) {
        if !attrs::holds(attrs::trait_item_attrs(i), self.cfg) {
            return;
        }
        match i {
            syn::TraitItem::Verbatim(ts) => self.scan_tokens(ts.clone(), false),
            syn::TraitItem::Macro(m) => self.macro_call(&m.mac, Pos::TraitItems),
            _ => visit::visit_trait_item(self, i),
        }
    }

    /// The methods of an `impl` are items of its type (`crate::net::Conn::open`, or
    /// `std::net::TcpStream::frob` for a local trait implemented for a std type), whatever the
    /// trait: a caller that knows the receiver's type reaches them by name.
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if let Some(u) = &i.unsafety {
            self.add(Capability::Unsafe, u.span, "unsafe impl");
        }
        let ty = self.r.type_key(self.ctx(), &i.self_ty);
        let pushed = self.push_bounds(&i.generics);
        let trait_id = i.trait_.as_ref().and_then(|(_, p, _)| self.r.trait_id(self.ctx(), p));
        let saved_trait = std::mem::replace(&mut self.cur_trait, trait_id.clone());
        let recv = match (&ty, &*i.self_ty) {
            (None, Type::Path(tp)) if tp.qself.is_none() && tp.path.segments.len() == 1 => self.bound_of(&tp.path.segments[0].ident.unraw().to_string()),
            _ => None,
        };
        let saved_recv = std::mem::replace(&mut self.self_recv, recv);
        let saved = std::mem::replace(&mut self.self_ty, ty.clone());
        for it in &i.items {
            self.visit_impl_item(it);
            // A trait method's implementation: a call through the trait may run it.
            if let (Some(tid), syn::ImplItem::Fn(f)) = (&trait_id, it)
                && attrs::holds(&f.attrs, self.cfg)
            {
                let name = f.sig.ident.unraw().to_string();
                let key = match &ty {
                    Some(t) => format!("{t}::{name}"),
                    None => self.item_key(&format!("{{impl}}::{name}")),
                };
                let self_id = match &ty {
                    Some(t) if t.starts_with("crate::") => self.r.local_trait_id(t),
                    Some(t) => t.clone(),
                    None => "*".to_string(),
                };
                let display = self.r.local_display(&key);
                let line = (f.sig.fn_token.span.start().line as u32).max(1);
                let open = summary::open_key(tid, &name);
                self.graph.implements(open.clone(), key.clone(), display.clone(), self_id.clone());
                self.impl_entries.push((open, key, self_id, display, self.file.to_string(), line));
            }
        }
        self.self_ty = saved;
        self.cur_trait = saved_trait;
        self.self_recv = saved_recv;
        self.bounds.truncate(self.bounds.len() - pushed);
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if let Some(u) = &t.unsafety {
            self.add(Capability::Unsafe, u.span, format!("unsafe trait {}", t.ident));
        }
        let key = self.item_key(&t.ident.unraw().to_string());
        let id = self.r.local_trait_id(&key);
        let saved = self.self_ty.replace(key.clone());
        let pushed = self.push_bounds(&t.generics);
        // `Self` in the trait's own methods is any implementation of it.
        self.bounds.push(("Self".to_string(), format!("<dyn>{id}")));
        for it in &t.items {
            self.visit_trait_item(it);
            // A provided method: what a call through the trait runs where it is not
            // overridden.
            if let syn::TraitItem::Fn(f) = it
                && f.default.is_some()
                && attrs::holds(&f.attrs, self.cfg)
            {
                let name = f.sig.ident.unraw().to_string();
                let item = format!("{key}::{name}");
                let display = self.r.local_display(&item);
                let line = (f.sig.fn_token.span.start().line as u32).max(1);
                let open = summary::open_key(&id, &name);
                self.graph.implements(open.clone(), item.clone(), display.clone(), "<default>".to_string());
                self.impl_entries.push((open, item, "<default>".to_string(), display, self.file.to_string(), line));
            }
        }
        self.bounds.truncate(self.bounds.len() - pushed - 1);
        self.self_ty = saved;
    }

    /// A static is an item too: a caller that uses it (a function pointer it holds, say)
    /// reaches what its initializer does.
    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        let key = self.item_key(&s.ident.unraw().to_string());
        let pre_main = self.pre_main_attr(&s.attrs);
        self.in_item(key.clone(), |this| {
            if let Some((p, _)) = this.export_attr(&s.attrs, &s.ident.unraw().to_string()) {
                this.add(Capability::Ffi, s.static_token.span, format!("{p} static {}", s.ident));
            }
            if let Some(what) = &pre_main {
                this.add(Capability::PreMain, s.static_token.span, format!("{what} static {}", s.ident));
            }
            this.visit_expr(&s.expr);
        });
        if pre_main.is_some() {
            self.graph.root(&key);
        }
    }


    fn visit_item_foreign_mod(&mut self, fm: &'ast syn::ItemForeignMod) {
        let abi = abi_name(&fm.abi);
        if abi == "Rust" {
            return;
        }
        // `#[wasm_bindgen] extern "C" { .. }` imports JavaScript on wasm; off wasm the
        // attribute makes the items stubs that panic: no foreign call.
        let wasm_bindgen = fm.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "wasm_bindgen"));
        if wasm_bindgen && self.cfg.eval(&"target_arch = \"wasm32\"".parse().unwrap_or_default()) != Some(true) {
            return;
        }
        for (name, span) in attrs::links(&attrs::effective(&fm.attrs, self.cfg)) {
            let p = match name {
                Some(n) => format!("#[link(name = \"{n}\")]"),
                None => "#[link]".to_string(),
            };
            self.add(Capability::Ffi, span, p);
        }
        for it in &fm.items {
            self.foreign_item(&abi, it);
        }
    }

    /// A `macro_rules!` definition is not code: what it shows is found where it expands.
    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        if !m.mac.path.is_ident("macro_rules") {
            self.macro_call(&m.mac, Pos::Items);
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.macro_call(m, Pos::Expr);
    }

    fn visit_stmt(&mut self, s: &'ast Stmt) {
        if attrs::holds(attrs::stmt_attrs(s), self.cfg) {
            visit::visit_stmt(self, s);
        }
    }

    fn visit_variant(&mut self, v: &'ast syn::Variant) {
        if attrs::holds(&v.attrs, self.cfg)
            && let Some((_, e)) = &v.discriminant
        {
            self.visit_expr(e);
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if !attrs::holds(attrs::expr_attrs(e), self.cfg) {
            return;
        }
        match e {
            Expr::Verbatim(ts) => self.scan_tokens(ts.clone(), false),
            _ => visit::visit_expr(self, e),
        }
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        self.awaited(a);
        visit::visit_expr_await(self, a);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if !attrs::holds(&c.attrs, self.cfg) {
            return;
        }
        self.calls.total += 1;
        if let Expr::Path(p) = &*c.func
            && p.qself.is_none()
        {
            let up = UsePath::from_path(&p.path);
            let local_var = up.segs.len() == 1 && self.is_local(&up.segs[0]);
            if !local_var && (self.r.resolve(self.ctx(), &up, false).is_some() || (up.segs[0] == "Self" && self.self_ty.is_some())) {
                self.calls.resolved += 1;
            }
        }
        if self.special_call(c) {
            for a in &c.args {
                self.visit_expr(a);
            }
            return;
        }
        // A builder whose flags are not all seen (held in a field, a collection, returned,
        // passed on) may have any: what the rules say it may then do, at the constructor.
        let addr = c as *const syn::ExprCall as usize;
        let seen = match self.seen_builders.iter().position(|&a| a == addr) {
            // Each mark is for the visit that follows it: an address is not trusted again
            // (a tree parsed from an expansion is dropped, and its memory reused).
            Some(i) => {
                self.seen_builders.remove(i);
                true
            }
            None => false,
        };
        if !seen
            && let Some(b) = self.builder_of(&c.func)
            && let Expr::Path(p) = &*c.func
        {
            let span = first_span(&p.path);
            for cap in b.unseen.clone() {
                self.add(cap, span, format!("{} (its flags are not all seen where it is used)", b.ty));
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_unsafe(&mut self, u: &'ast syn::ExprUnsafe) {
        self.add(Capability::Unsafe, u.unsafe_token.span, "unsafe block");
        self.visit_block(&u.block);
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(q) = &p.qself {
            // `<T>::f` names T's f; `<T as Trait>::f` names Trait's f (and T's).
            let mut by_type = false;
            if let Type::Path(tp) = &*q.ty
                && tp.qself.is_none()
            {
                let mut up = UsePath::from_path(&tp.path);
                let skip = q.position;
                up.segs.extend(p.path.segments.iter().skip(skip).map(|s| s.ident.unraw().to_string()));
                // `<Shell as Tr>::Cmd::new`: Shell's own `Cmd`, not every impl's.
                by_type = self.through_assoc(&up).is_some();
                self.report_path(&up, first_span(&tp.path));
            }
            if q.position > 0 && !by_type {
                self.report_path(&UsePath::from_path(&p.path), first_span(&p.path));
            }
            return;
        }
        self.report_path(&UsePath::from_path(&p.path), first_span(&p.path));
    }

    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if s.qself.is_none() {
            let up = UsePath::from_path(&s.path);
            // A value of the type is made here (for the program's type analysis).
            if up.segs.len() == 1 && up.segs[0] == "Self" {
                if let Some(t) = self.self_ty.clone() {
                    self.constructs(&t);
                }
            } else {
                match self.r.resolve(self.ctx(), &up, true) {
                    Some(Res::Local(p)) => {
                        let key = Resolver::local_key(&p);
                        self.constructs(&key);
                        // An enum variant: the enum.
                        if let Some((parent, _)) = key.rsplit_once("::") {
                            self.constructs(parent);
                        }
                    }
                    Some(Res::Dep { krate, rest }) => self.constructs_dep(&krate, &rest),
                    _ => {}
                }
            }
            self.report_path(&up, first_span(&s.path));
        }
        for f in &s.fields {
            if attrs::holds(&f.attrs, self.cfg) {
                self.visit_expr(&f.expr);
            }
        }
        if let Some(r) = &s.rest {
            self.visit_expr(r);
        }
    }

    /// A whole method chain at once (linear in its length): the type of its root, then each
    /// link, innermost first, looked up on that type (the builder guess), then the root and
    /// the arguments.
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let mut chain: Vec<&'ast syn::ExprMethodCall> = vec![m];
        let mut root: &'ast Expr = &m.receiver;
        loop {
            match root {
                Expr::MethodCall(inner) if attrs::holds(&inner.attrs, self.cfg) => {
                    chain.push(inner);
                    root = &inner.receiver;
                }
                Expr::Try(t) if t.attrs.is_empty() => root = &t.expr,
                Expr::Paren(p) if p.attrs.is_empty() => root = &p.expr,
                Expr::Await(a) if a.attrs.is_empty() => {
                    self.awaited(a);
                    root = &a.base;
                }
                _ => break,
            }
        }
        // A builder's chain from its constructor through its methods to a terminal one
        // (`OpenOptions::new().read(true).open(p)`): its flags are all seen.
        if let Expr::Call(c) = strip_expr(root)
            && let Some(b) = self.builder_of(&c.func)
            && {
                // Innermost first: configuring methods up to a terminal one; what follows the
                // terminal call is on its result.
                let mut ok = false;
                for l in chain.iter().rev() {
                    let n = l.method.unraw().to_string();
                    if b.terminal.contains(&n) {
                        ok = true;
                        break;
                    }
                    if !b.methods.contains(&n) {
                        break;
                    }
                }
                ok
            }
        {
            self.seen_builders.push(c as *const syn::ExprCall as usize);
        }
        // Each link's receiver: what the previous method is declared to return, else the
        // same type (a builder chain).
        let mut ty = self.type_of(root);
        self.calls.total += chain.len() as u64;
        if ty.is_some() {
            self.calls.resolved += chain.len() as u64;
        }
        for link in chain.iter().rev() {
            let name = link.method.unraw().to_string();
            if let Some(t) = self.combinator_type(link) {
                // The link itself is a std combinator; what follows is on what it produced.
                ty = Some(t);
                continue;
            }
            match &ty {
                Some(t) => {
                    self.report_method(t, &name, link.method.span());
                    if let Some(next) = self.method_return(t, &name) {
                        ty = Some(next);
                    }
                }
                None => self.report_trait_method(&name, link.method.span()),
            }
        }
        self.visit_expr(root);
        for link in chain.iter().rev() {
            for a in &link.args {
                self.visit_expr(a);
            }
        }
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.visit_stmts(&b.stmts);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        let mut ty = None;
        // `let o = OpenOptions::new()..;` with `o` used only as a receiver: every flag set on
        // it is a method call the visitor sees.
        if let Some(init) = &l.init
            && let Pat::Ident(pi) = strip_pat_type(&l.pat)
            && !self.escaping.last().is_some_and(|e| e.contains(&pi.ident.unraw().to_string()))
            && let Some((root, _)) = self.builder_root(&init.expr)
        {
            self.seen_builders.push(root as *const syn::ExprCall as usize);
        }
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if let Some((_, d)) = &init.diverge {
                self.visit_expr(d);
            }
            ty = self.type_of(&init.expr);
        }
        self.bind_pat(&l.pat, ty);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        self.with_locals_scope(|this| {
            for p in &c.inputs {
                this.bind_pat(p, None);
            }
            this.visit_expr(&c.body);
        });
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.with_locals_scope(|this| {
            this.bind_pat(&f.pat, None);
            this.visit_block(&f.body);
        });
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        if !attrs::holds(&a.attrs, self.cfg) {
            return;
        }
        self.with_locals_scope(|this| {
            this.bind_pat(&a.pat, None);
            if let Some((_, g)) = &a.guard {
                this.visit_expr(g);
            }
            this.visit_expr(&a.body);
        });
    }

    /// `if cfg!(..)`: the branch the target does not compile in is dead code, not visited.
    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        let known = self.cfg_condition(&i.cond);
        if known != Some(false) {
            self.with_locals_scope(|this| {
                this.visit_expr(&i.cond);
                this.visit_block(&i.then_branch);
            });
        }
        if known != Some(true)
            && let Some((_, e)) = &i.else_branch
        {
            self.visit_expr(e);
        }
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.with_locals_scope(|this| {
            this.visit_expr(&w.cond);
            this.visit_block(&w.body);
        });
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.visit_expr(&l.expr);
        let ty = self.type_of(&l.expr);
        self.bind_pat(&l.pat, ty);
    }
}
