//! The per-crate capability analyzer: from a crate's source alone (nothing is built or run),
//! every place where its compiled code uses a capability.
//!
//! # What is looked at
//!
//! Only what is compiled for the given target and features: the module tree is walked from
//! the target root (`mod x;` → `x.rs` / `x/mod.rs`, the non-mod-rs rule, `#[path]`, inline
//! module directories); files that are not reached (tests/, benches/, examples/, stray files)
//! are not analyzed. Everything under a false `#[cfg]` is skipped (items, impl and trait
//! items, foreign items, statements, expressions, struct-literal fields, variants, match arms,
//! `mod` declarations, `#![cfg]` at the top of a module file), after `#[cfg_attr]` expansion;
//! `cfg_if!` is replaced by its compiled branch (items at module level, statements in
//! bodies). A `mod` whose only `path`s are under `cfg_attr`s that are false because their cfg
//! is set by a build script (rustix's `cfg(linux_raw)`) has every existing alternative
//! analyzed, as one module (a superset). See `loader.rs`.
//!
//! # What counts as a use
//!
//! Paths are resolved like rustc does (`scope.rs`): `use` trees with renames, groups and
//! globs, `self`/`super`/`crate`, `extern crate x as y`, re-exports inside the crate, type
//! aliases, block-level items and imports, local variables shadowing imports. A path that
//! resolves into a dependency goes through that dependency's [`Exports`]. The resolved path
//! is then looked up in the rules (longest prefix).
//!
//! - A path in an expression is a use: calls, function pointers (`let f = std::fs::write;`),
//!   associated functions (`Command::new`), struct literals, `<T>::f`. A `use` item itself is
//!   not (an unused import does nothing).
//! - Types are not uses: a type in a signature, a field, a `let` annotation, a cast, a
//!   generic argument, an `impl` header or a trait bound is not a finding (the value of that
//!   type was obtained somewhere, and that place is). Expressions inside types (array
//!   lengths) are visited. Types *are* used to know the receiver of a method.
//! - Methods: the rules are asked about `type::method` for each method call whose receiver
//!   type is known, and only a rule for exactly that method counts (a type's floor rule, such
//!   as any use of `std::process::Command`, is shown where the value was made). Known: a call of an associated function (`OpenOptions::new()`), a builder chain on it
//!   (each method assumed to return the same type), `?`, a local bound by `let` (from its
//!   initializer or annotation), a parameter with a type, a closure parameter with a type, a
//!   struct field whose name has a single known type crate-wide, a string literal (`str`).
//!   For a receiver of unknown type, the known traits imported in scope are tried
//!   (`use std::net::ToSocketAddrs; x.to_socket_addrs()`).
//! - `extern "ABI" { .. }` (not "Rust"): `ffi` at each foreign fn/static, plus the
//!   capabilities of its symbol (`#[link_name]` or name) unless the item is `pub`: a `pub`
//!   foreign item is an export (the `libc` case), recorded in [`Exports`] as
//!   `path → "extern:SYMBOL"`, and its users get `ffi` plus the symbol's capabilities.
//!   `#[link(..)]` on the block is an `ffi` finding. `extern "C" fn` definitions and
//!   `#[no_mangle]` / `#[export_name]` fns and statics are `ffi`.
//! - `unsafe` blocks, `unsafe fn`, `unsafe impl`, `unsafe trait` are `unsafe`.
//! - `asm!`, `global_asm!`, `naked_asm!` (bare, or a path resolving to `std::arch` /
//!   `core::arch`) are `asm`.
//!
//! # Macros
//!
//! Macro bodies are not a blind spot:
//! - `println!`, `format!`, `write!`, `assert!`, `vec!`, … (std macros whose arguments are
//!   expressions) are parsed as comma-separated expressions and visited like code; if that
//!   fails, their tokens are scanned.
//! - Any other macro invocation (expression, statement or item position) has its token
//!   stream scanned (always, fail closed), and is in addition parsed as expressions or
//!   statements when syn can, for method types and locals.
//! - `macro_rules!` bodies are scanned (both matchers and transcribers; `$name` and
//!   `$name:frag` are skipped, `$crate` is the crate root).
//! - Scanning finds path-shaped token sequences (`a::b::c`, `::a::b`, single identifiers)
//!   and resolves them in the scope of the invocation like written paths (so a single
//!   identifier only counts if an import or glob makes it name something); method chains
//!   after a call of a known type's associated function or on a local of known type;
//!   `unsafe {`, `unsafe fn`, `unsafe impl`, `unsafe trait`; `asm!`-family invocations;
//!   `extern "ABI" fn` and foreign blocks. Literals (strings) and attributes (doc comments
//!   included) are skipped; identifiers right after `.` (methods, fields) and after a
//!   defining keyword (`fn x`, `let x`, `struct X`, `as T`, `impl T`) are not paths. Type
//!   positions in macro bodies cannot be told apart, so there a type *is* counted.
//! - `include!("literal.rs")` is followed (relative to the including file): items in item
//!   position, an expression or items elsewhere. `include!` of anything else (`OUT_DIR`) is
//!   `unanalyzed` ("include! of a generated file").
//! - `env!`, `option_env!`, `include_str!`, `include_bytes!`, `concat!`, `stringify!`, `cfg!`
//!   are inert: they read the build environment or the crate's own files at compile time,
//!   which is not what the program does at run time (not `env.read`).
//! - `cfg_if!` (any path ending in `cfg_if`): branches are parsed here, the first whose
//!   predicate holds (or the `else`) is analyzed as if written in place.
//!
//! # Failing closed
//!
//! - An unparseable `#[cfg]` / `cfg_attr` / `cfg_if!` predicate is treated as true: the code
//!   is analyzed (for `cfg_if!`, that branch is taken and the search for a true branch goes
//!   on, so both are analyzed). No finding is made for it.
//! - A file that fails to parse: one `unanalyzed` finding at the error ("parse error: ..").
//!   A non-UTF-8 file, a missing `mod` file, a missing root, an `include!` that cannot be
//!   followed, a circular module, a `cfg_if!` of unknown shape: `unanalyzed`.
//!
//! # Known gaps
//!
//! Procedural macros' output, `macro_rules!` expansions (only their bodies are scanned, at the
//! definition), trait method calls on values of unknown type beyond `scope::KNOWN_TRAITS`,
//! types flowing through function returns other than builder chains, and glob imports of
//! external modules for names the rules do not know.

mod attrs;
pub(crate) mod loader;
mod macros;
mod oracle;
mod recover;
pub(crate) mod summary;
pub(crate) mod scope;
mod visit;

use std::collections::BTreeMap;
use std::rc::Rc;

use syn::visit::Visit;

use crate::package::FileTree;
use crate::surface::cfg::CfgEnv;
use crate::surface::model::{Finding, Scope};
use crate::surface::rules::Rules;

pub use crate::surface::syntax::mbe::Edition;

/// One compilation target of a crate, to analyze.
pub struct CrateInput<'a> {
    /// The name code uses for the crate (`serde_json`): a first path segment with this name
    /// (not shadowed by a dependency of that name) is the crate root, and local foreign items
    /// are shown as `NAME::path`.
    pub crate_name: &'a str,
    pub files: &'a FileTree,
    /// The target root: "src/lib.rs", "src/main.rs", "src/bin/x.rs", "build.rs".
    pub root: &'a str,
    /// Target cfgs plus this crate's enabled features.
    pub cfg: &'a CfgEnv,
    /// Runtime, or Build for build scripts and proc-macro crates.
    pub scope: Scope,
    /// Extern crate names visible to this crate (renames applied) → what they export; plus,
    /// under their markers, every crate whose macros can reach this one (what `$crate` in
    /// those macros names).
    pub deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    pub rules: &'a Rules,
    /// The crate's edition (fragment specifiers and keywords depend on it).
    pub edition: Edition,
    /// What `$crate` in this crate's exported macros becomes in other crates: an identifier
    /// under which those crates find this one's exports in their `deps`.
    pub marker: &'a str,
    /// The package version (shown in the chains of findings in other crates).
    pub version: &'a str,
    /// Record the places whose calls go on through traits (for a workspace member: the
    /// program step resolves them into findings).
    pub open_sites: bool,
}

/// What a crate exports that leads outside of it: public path inside the crate (`write`,
/// `fs::write`, `sys::system`; a glob re-export of an external module as `prefix::*` or `*`)
/// → resolved target (`std::fs::write`, `extern:system`, `std::fs` for a glob, or a path into
/// another crate such as `libloading::Library`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exports {
    pub aliases: BTreeMap<String, String>,
    /// `macro_rules!` other crates can invoke, by path inside the crate (`#[macro_export]`
    /// ones at the root: `select`, `info`; `pub use` ones where they are re-exported).
    #[serde(default)]
    pub macros: BTreeMap<String, ExportedMacro>,
    /// The crate name (a renamed dependency is known to the rules by this name).
    #[serde(default)]
    pub crate_name: String,
    /// What the crate's public functions, methods and statics reach, by public path
    /// (`fs::write`, `net::TcpListener::bind`): callers get it at their call site.
    /// Serialized with each summary once and an index of its paths.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "summary::shared_map")]
    pub summaries: BTreeMap<String, std::sync::Arc<summary::Summary>>,
    /// What the crate's public functions and methods return, by public path: one of its own
    /// types as `crate::` and a public path of it, another type as it resolved
    /// (`std::fs::File`). Callers use it to know the type of a result they call methods on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub returns: BTreeMap<String, String>,
    /// The crate's public traits, by public path: a caller that imports one may call its
    /// provided methods on values of any type.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub traits: std::collections::BTreeSet<String>,
    /// Associated types of the crate's `impl`s, by the public path of the implementing type
    /// and the name (`Shell::Cmd` → `std::process::Command`); a type of the crate's own as
    /// `crate::` and a public path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub assoc_types: BTreeMap<String, String>,
    /// For each public trait's associated type (`Launcher::Cmd`), every type the crate's
    /// `impl`s give it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trait_assoc: BTreeMap<String, Vec<String>>,
    /// The crate's public traits by public path → their id across crates
    /// (`NAME@VERSION#crate::..`): what a call through the trait in another crate names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trait_ids: BTreeMap<String, String>,
    /// The crate's public structs, enums and unions by public path → their id: a crate that
    /// makes a value of one (`dep::Loud`) tells the program's type analysis.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub type_ids: BTreeMap<String, String>,
    /// The crate's public traits by id: their methods and supertraits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trait_shapes: BTreeMap<String, scope::TraitShape>,
    /// The crate's implementations of trait methods (and the traits' provided methods) that
    /// reach something: what a call through the trait anywhere in the program may run.
    /// Serialized with each summary once (see [`summary::shared_impls`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "summary::shared_impls")]
    pub impls: Vec<summary::ImplSummary>,
}

/// A macro as another crate sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExportedMacro {
    /// The arms, as source text.
    pub rules: String,
    /// What `$crate` becomes: the defining crate's marker (see [`CrateInput::marker`]).
    pub krate: String,
    pub edition: Edition,
    /// `#[macro_export(local_inner_macros)]`.
    #[serde(default)]
    pub local_inner: bool,
    /// Where the macro is defined (for the `expanded_from` of findings in its expansions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::surface::model::Expansion>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CrateAnalysis {
    /// Sorted (by the derived order of [`Finding`]) and deduplicated.
    pub findings: Vec<Finding>,
    /// Shared: every dependent's analysis reads it.
    pub exports: std::sync::Arc<Exports>,
    /// The source files analysed (package-relative, sorted): the module tree as compiled,
    /// with the modules macros declare and the files `include!` reads.
    #[serde(default)]
    pub files: Vec<String>,
    /// The crate's calls, and how many name a known callee.
    #[serde(default)]
    pub calls: crate::surface::model::CallStats,
    /// Module files the crate declares under a cfg that is false here (not analysed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
    /// Places whose call goes on through a trait (recorded for workspace members only): the
    /// program step adds what the implementations in the program reach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_sites: Vec<summary::OpenSite>,
    /// Ids of the crate's types constructed somewhere in it (the program step's type
    /// analysis: an implementation for a type never made is never run).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub constructed: std::collections::BTreeSet<String>,
    /// What the unit's entry reaches: a binary's `main`, a library's public items together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<std::sync::Arc<summary::Summary>>,
    /// What the items that run without being called (pre-main) reach together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<std::sync::Arc<summary::Summary>>,
    /// The sha256 of `exports` as JSON, part of dependents' cache keys: kept with a cached
    /// result so that a warm run does not serialize every crate's exports again. Empty until
    /// the engine sets it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exports_digest: String,
    /// For a build script: what evaluating it found (the engine sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<std::sync::Arc<crate::surface::buildscript::Evaluation>>,
}

/// A module file declared under a false cfg: `file`, and `detail` (the predicate and where
/// the declaration is).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct SkippedFile {
    pub file: String,
    pub detail: String,
}

/// Analyze one crate target.
///
/// Spans are tracked by proc-macro2 in a per-thread source map that only grows; this
/// function releases it when it is done (`proc_macro2::extra::invalidate_current_thread_spans`),
/// so no proc-macro2 span created on this thread before the call may be used after it.
pub fn analyze(input: &CrateInput) -> CrateAnalysis {
    analyze_built(input, None)
}

/// [`analyze`], with the package's build-script evaluation: `include!` of a file it writes in
/// OUT_DIR reads that file, which must be in `input.files` under `$OUT_DIR/`
/// ([`crate::surface::buildscript::Evaluation::add_to`]).
pub fn analyze_built(input: &CrateInput, build: Option<&crate::surface::buildscript::Evaluation>) -> CrateAnalysis {
    let out = analyze_with_build(
        &Unit {
            crate_name: input.crate_name,
            files: input.files,
            root: input.root,
            scope: input.scope,
            deps: input.deps,
            edition: input.edition,
            marker: input.marker,
            version: input.version,
            open_sites: input.open_sites,
        },
        input.cfg,
        input.rules,
        build,
    );
    proc_macro2::extra::invalidate_current_thread_spans();
    out
}

/// What [`analyze_with`] needs besides the two oracles.
pub(crate) struct Unit<'a> {
    pub crate_name: &'a str,
    pub files: &'a FileTree,
    pub root: &'a str,
    pub scope: Scope,
    pub deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    pub edition: Edition,
    pub marker: &'a str,
    pub version: &'a str,
    pub open_sites: bool,
}

#[cfg(test)]
fn analyze_with(u: &Unit, cfg: &dyn oracle::CfgEval, rules: &dyn oracle::RuleSource) -> CrateAnalysis {
    analyze_limited(u, cfg, rules, macros::Limits::default(), None).0
}

fn analyze_with_build(u: &Unit, cfg: &dyn oracle::CfgEval, rules: &dyn oracle::RuleSource, build: Option<&crate::surface::buildscript::Evaluation>) -> CrateAnalysis {
    analyze_limited(u, cfg, rules, macros::Limits::default(), build).0
}

/// [`analyze_with`] under other limits (tests), with what the crate spent of each.
fn analyze_limited(
    u: &Unit,
    cfg: &dyn oracle::CfgEval,
    rules: &dyn oracle::RuleSource,
    limits: macros::Limits,
    build: Option<&crate::surface::buildscript::Evaluation>,
) -> (CrateAnalysis, macros::Usage) {
    crate::surface::guard::begin_crate_with(limits.source);
    let mut ex = macros::Expander::with_limits(u.deps, u.edition, limits);
    ex.build = build;
    *ex.crate_id.borrow_mut() = (u.crate_name.to_string(), u.version.to_string());
    let parts = scope::Parts { crate_name: u.crate_name, deps: u.deps, rules, cfg };
    let (loaded, mut sink) = loader::Loader::new(u.files, cfg, u.scope, &ex).load(u.root, &parts);
    let resolver = scope::Resolver::new(&loaded.modules, u.crate_name, u.deps, rules, cfg, &ex);
    let file_names: Vec<Rc<str>> = loaded.files.iter().map(|f| Rc::from(f.as_str())).collect();
    let (graph, calls, extra_files, open_sites, impl_entries, mut constructed) = {
        let mut a = visit::Analyzer::new(&resolver, u.files, cfg, rules, &mut sink);
        a.version = Rc::from(u.version);
        a.record_sites = u.open_sites;
        for (m, module) in loaded.modules.iter().enumerate() {
            a.module = m;
            for entry in &module.entries {
                a.file = file_names[entry.file].clone();
                a.macros = entry.macros.clone();
                a.sink.origin = entry.origin.clone();
                a.visit_item(&entry.item);
                a.sink.origin = None;
            }
        }
        (
            std::mem::take(&mut a.graph),
            a.calls,
            std::mem::take(&mut a.extra_files),
            std::mem::take(&mut a.open_sites),
            std::mem::take(&mut a.impl_entries),
            std::mem::take(&mut a.constructed),
        )
    };
    // Types made by derive macros (`Default`, `Deserialize`, ...) are constructed by code the
    // analysis does not see: count them as constructed.
    for module in &loaded.modules {
        for e in &module.entries {
            let (attrs_of, ident) = match &e.item {
                syn::Item::Struct(x) => (&x.attrs, &x.ident),
                syn::Item::Enum(x) => (&x.attrs, &x.ident),
                syn::Item::Union(x) => (&x.attrs, &x.ident),
                _ => continue,
            };
            if constructs_by_derive(attrs_of) {
                let key = scope::Resolver::local_key(&resolver.local_path(loaded.modules.iter().position(|m| std::ptr::eq(m, module)).unwrap_or(0), &ident.to_string()));
                constructed.insert(resolver.local_trait_id(&key));
            }
        }
    }
    let mut graph = graph;
    graph.constructs(constructed.clone());
    let roots: Vec<String> = graph.roots().to_vec();
    // Shared: a summary is exported under each public path of its item, and re-exported by
    // dependents.
    let summaries: BTreeMap<String, std::sync::Arc<summary::Summary>> =
        graph.solve().into_iter().map(|(k, v)| (k, std::sync::Arc::new(v))).collect();
    if std::env::var_os("VELARIS_DEBUG_BUDGETS").is_some() {
        eprintln!("budgets: {} {} {}: source {} {}", u.crate_name, u.version, u.root, crate::surface::guard::crate_source(), ex.usage());
    }
    let mut exports = resolver.exports(u.marker, &summaries);
    // Every implementation of a trait method that reaches something: a call through the
    // trait anywhere in the program may run it.
    let mut impls: Vec<summary::ImplSummary> = impl_entries
        .into_iter()
        .filter_map(|(key, item, self_ty, display, file, line)| {
            let s = summaries.get(&item)?;
            Some(summary::ImplSummary { key, self_ty, display, file, line, summary: s.clone() })
        })
        .collect();
    impls.sort_by(|a, b| (&a.key, &a.self_ty, &a.display).cmp(&(&b.key, &b.self_ty, &b.display)));
    impls.dedup_by(|a, b| a.key == b.key && a.self_ty == b.self_ty && a.display == b.display);
    exports.impls = impls;
    // What runs: a binary's `main`; a library's public items; and, in any crate, items that
    // run without being called.
    let entry = if !u.open_sites {
        None
    } else if summaries.contains_key("crate::main") && !u.root.ends_with("lib.rs") {
        summaries.get("crate::main").cloned()
    } else {
        Some(std::sync::Arc::new(summary::merge(exports.summaries.values().map(|s| &**s))))
    };
    let root_summary = summary::merge(roots.iter().filter_map(|r| summaries.get(r)).map(|s| &**s));
    let roots = (!root_summary.caps.is_empty() || !root_summary.open.is_empty()).then(|| std::sync::Arc::new(root_summary));
    let mut findings = sink.findings;
    findings.sort();
    findings.dedup();
    let mut files = loaded.files;
    files.extend(extra_files);
    files.sort();
    files.dedup();
    let usage = ex.usage();
    let mut skipped: Vec<SkippedFile> =
        loaded.skipped.into_iter().map(|d| SkippedFile { file: d.file, detail: format!("{} at {}", d.predicate, d.at) }).collect();
    skipped.sort();
    skipped.dedup_by(|a, b| a.file == b.file);
    let analysis = CrateAnalysis {
        findings,
        exports: std::sync::Arc::new(exports),
        files,
        calls,
        skipped,
        exports_digest: String::new(),
        open_sites,
        constructed,
        entry,
        roots,
        build: None,
    };
    (analysis, usage)
}

/// Whether a type's derives make values of it (`Default`, `Deserialize`, `FromStr`, ... :
/// generated code the analysis does not see); the ones that only read a value do not.
fn constructs_by_derive(attrs: &[syn::Attribute]) -> bool {
    const READ_ONLY: &[&str] = &["Debug", "Clone", "Copy", "PartialEq", "Eq", "Hash", "PartialOrd", "Ord", "Serialize", "Error", "Display"];
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        let mut any = false;
        let _ = a.parse_nested_meta(|m| {
            let last = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            if !READ_ONLY.contains(&last.as_str()) {
                any = true;
            }
            Ok(())
        });
        any
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod budget_tests;
