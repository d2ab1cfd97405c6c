//! The interpreter: one run of a build script's `main` over the syntax tree, along one path
//! (the choices it makes where a value is unknown are given by a prefix, and recorded).
//!
//! Items are read once into a [`Script`]; each run is a fresh [`Interp`] over it. Every
//! construct outside the modelled subset ends the run with [`Flow::Stop`], naming the
//! construct and the line.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Item, Pat, Stmt};

use super::value::*;
use super::{Budget, Input};
use crate::surface::syntax::mbe::{Edition, MacroRules};

/// Why a run ended early.
#[derive(Debug, Clone)]
pub enum Flow {
    Break(Option<String>, V),
    Continue(Option<String>),
    Return(V),
    /// The script left the modelled subset: the reason, with the place.
    Stop(String),
    /// The script failed (panic, `process::exit` with a non-zero code, `main` returned an
    /// error): cargo stops the build, so nothing this path did is compiled. With where.
    #[allow(dead_code)]
    Fail(String),
    /// `process::exit(0)`: the script ended.
    Exit,
}

pub type R<T> = Result<T, Flow>;

/// A function of the script.
pub struct FnDef {
    pub sig: syn::Signature,
    pub block: syn::Block,
    pub file: usize,
    pub module: usize,
    /// The `Self` type, for methods.
    pub self_ty: Option<Rc<str>>,
}

pub struct StructDef {
    pub name: Rc<str>,
    pub fields: Vec<Rc<str>>,
    pub tuple: bool,
}

pub struct EnumDef {
    pub name: Rc<str>,
    /// Variant name, field names (empty for unit, `0`.. for tuple variants), tuple-like,
    /// explicit discriminant.
    pub variants: Vec<(Rc<str>, Vec<Rc<str>>, bool, Option<i128>)>,
}

#[derive(Clone)]
pub enum ItemDef {
    Fn(Rc<FnDef>),
    Const(Rc<Expr>, usize, usize),
    Static(Rc<Expr>, usize, usize),
    Struct(Rc<StructDef>),
    Enum(Rc<EnumDef>),
    Mod(usize),
    Macro(Rc<MacroRules>),
    Trait,
}

#[derive(Default)]
pub struct Module {
    pub parent: Option<usize>,
    pub items: HashMap<String, ItemDef>,
    /// `use` names: name → path.
    pub uses: HashMap<String, Vec<String>>,
    /// Glob imports: paths.
    pub globs: Vec<Vec<String>>,
    /// Directory where `mod x;` looks.
    pub child_dir: String,
}

/// A build script read into items.
pub struct Script {
    pub files: Vec<String>,
    pub modules: Vec<Module>,
    /// Methods of user types: (type, method) → fn, inherent and trait impls alike; trait
    /// impls are also under (type, "Trait::method").
    pub methods: HashMap<(Rc<str>, String), Rc<FnDef>>,
    /// Trait default methods: method name → fn (for impls that do not override them).
    pub trait_defaults: HashMap<String, Rc<FnDef>>,
    /// Associated constants of user types: (type, name) → (expression, file, module).
    pub consts: HashMap<(Rc<str>, String), (Rc<Expr>, usize, usize)>,
    /// Problems met while reading (unsupported items at places).
    pub problems: Vec<String>,
    pub edition: Edition,
    /// What is parsed while running, kept for every path: keyed by the address of the syntax
    /// it comes from, which the script (or an expansion kept here) owns for the evaluation.
    pub cache: RefCell<Cache>,
}

/// Parsed forms of macro arguments and expansions, and closures, by the address of the
/// syntax node they come from.
#[derive(Default)]
pub struct Cache {
    pub closures: HashMap<usize, Rc<syn::ExprClosure>>,
    pub args: HashMap<usize, Rc<Result<Vec<Expr>, String>>>,
    pub fmt: HashMap<usize, Rc<dyn std::any::Any>>,
    pub expansions: HashMap<(usize, usize), Rc<Result<Expansion, String>>>,
    /// Functions and `macro_rules!` declared inside function bodies, by the item's address.
    pub local_fns: HashMap<usize, Rc<FnDef>>,
    pub local_macros: HashMap<usize, Rc<MacroRules>>,
}

/// A macro's expansion, parsed.
pub enum Expansion {
    Expr(Expr),
    Block(syn::Block),
}

/// What a name resolves to.
#[derive(Clone)]
pub enum Res {
    Item(usize, String, ItemDef),
    Variant(Rc<EnumDef>, usize),
    Method(Rc<FnDef>),
    /// A path outside the script, canonical (`std::env::var`, `autocfg::new`).
    Ext(String),
}

const MAX_MOD_DEPTH: usize = 16;

impl Script {
    /// Read the script's items from `root` (and the module files it declares).
    pub fn load(files: &crate::package::FileTree, root: &str, cfg: &crate::surface::cfg::CfgEnv, edition: Edition) -> Result<Script, String> {
        let mut s = Script { files: Vec::new(), modules: Vec::new(), methods: HashMap::new(), trait_defaults: HashMap::new(), consts: HashMap::new(), problems: Vec::new(), edition, cache: RefCell::new(Cache::default()) };
        let file = parse_file(files, root)?;
        s.files.push(root.to_string());
        s.modules.push(Module { parent: None, child_dir: crate::surface::syntax::paths::dir_of(root).to_string(), ..Module::default() });
        s.add_items(files, cfg, 0, 0, file.items, 0)?;
        Ok(s)
    }

    fn add_items(&mut self, files: &crate::package::FileTree, cfg: &crate::surface::cfg::CfgEnv, m: usize, file: usize, items: Vec<Item>, depth: usize) -> Result<(), String> {
        if depth > MAX_MOD_DEPTH {
            return Err("modules nested too deeply".into());
        }
        for item in items {
            if !attrs_active(item_attrs(&item), cfg) {
                continue;
            }
            match item {
                Item::Fn(f) => {
                    let name = f.sig.ident.to_string();
                    self.modules[m].items.insert(name, ItemDef::Fn(Rc::new(FnDef { sig: f.sig, block: *f.block, file, module: m, self_ty: None })));
                }
                Item::Const(c) => {
                    self.modules[m].items.insert(c.ident.to_string(), ItemDef::Const(Rc::new(*c.expr), file, m));
                }
                Item::Static(st) => {
                    self.modules[m].items.insert(st.ident.to_string(), ItemDef::Static(Rc::new(*st.expr), file, m));
                }
                Item::Struct(st) => {
                    let (fields, tuple) = match &st.fields {
                        syn::Fields::Named(n) => (n.named.iter().map(|f| Rc::from(f.ident.as_ref().unwrap().to_string().as_str())).collect(), false),
                        syn::Fields::Unnamed(u) => ((0..u.unnamed.len()).map(|i| Rc::from(i.to_string().as_str())).collect(), true),
                        syn::Fields::Unit => (Vec::new(), false),
                    };
                    let name: Rc<str> = Rc::from(st.ident.to_string().as_str());
                    self.modules[m].items.insert(st.ident.to_string(), ItemDef::Struct(Rc::new(StructDef { name, fields, tuple })));
                }
                Item::Enum(e) => {
                    let mut variants = Vec::new();
                    let mut next = 0i128;
                    for v in &e.variants {
                        let (fields, tuple) = match &v.fields {
                            syn::Fields::Named(n) => (n.named.iter().map(|f| Rc::from(f.ident.as_ref().unwrap().to_string().as_str())).collect(), false),
                            syn::Fields::Unnamed(u) => ((0..u.unnamed.len()).map(|i| Rc::from(i.to_string().as_str())).collect(), true),
                            syn::Fields::Unit => (Vec::new(), false),
                        };
                        let disc = match &v.discriminant {
                            Some((_, Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }))) => i.base10_parse::<i128>().ok(),
                            _ => None,
                        };
                        let d = disc.unwrap_or(next);
                        next = d + 1;
                        variants.push((Rc::from(v.ident.to_string().as_str()), fields, tuple, Some(d)));
                    }
                    let name: Rc<str> = Rc::from(e.ident.to_string().as_str());
                    self.modules[m].items.insert(e.ident.to_string(), ItemDef::Enum(Rc::new(EnumDef { name, variants })));
                }
                Item::Mod(md) => {
                    let name = md.ident.to_string();
                    let id = self.modules.len();
                    let path_attr = md.attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
                        syn::Meta::NameValue(nv) => match &nv.value {
                            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                            _ => None,
                        },
                        _ => None,
                    });
                    let child_dir = format!("{}{}{}", self.modules[m].child_dir, if self.modules[m].child_dir.is_empty() { "" } else { "/" }, name);
                    self.modules.push(Module { parent: Some(m), child_dir, ..Module::default() });
                    self.modules[m].items.insert(name.clone(), ItemDef::Mod(id));
                    match md.content {
                        Some((_, items)) => self.add_items(files, cfg, id, file, items, depth + 1)?,
                        None => {
                            let dir = self.modules[m].child_dir.clone();
                            let cands: Vec<String> = match &path_attr {
                                Some(p) => vec![crate::surface::syntax::paths::join(crate::surface::syntax::paths::dir_of(&self.files[file]), p).ok_or_else(|| format!("`#[path = {p:?}]` leaves the package"))?],
                                None => vec![format!("{dir}{}{name}.rs", if dir.is_empty() { "" } else { "/" }), format!("{dir}{}{name}/mod.rs", if dir.is_empty() { "" } else { "/" })],
                            };
                            let Some(path) = cands.into_iter().find(|c| files.contains_key(c)) else {
                                return Err(format!("module file of `mod {name};` not found"));
                            };
                            let f = parse_file(files, &path)?;
                            let fid = self.files.len();
                            self.files.push(path.clone());
                            // A file reached by `#[path]` or a `mod.rs` holds its children next to it.
                            if path_attr.is_some() || path.ends_with("/mod.rs") {
                                self.modules[id].child_dir = crate::surface::syntax::paths::dir_of(&path).to_string();
                            }
                            self.add_items(files, cfg, id, fid, f.items, depth + 1)?;
                        }
                    }
                }
                Item::Use(u) => {
                    let mut leaves = Vec::new();
                    flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                    for (path, name) in leaves {
                        match name {
                            Some(n) => {
                                self.modules[m].uses.insert(n, path);
                            }
                            None => self.modules[m].globs.push(path),
                        }
                    }
                }
                Item::Impl(imp) => {
                    let Some(ty) = type_name(&imp.self_ty) else { continue };
                    let ty: Rc<str> = Rc::from(ty.as_str());
                    let tr = imp.trait_.as_ref().and_then(|(_, p, _)| p.segments.last().map(|s| s.ident.to_string()));
                    for ii in imp.items {
                        if let syn::ImplItem::Const(c) = &ii {
                            self.consts.insert((ty.clone(), c.ident.to_string()), (Rc::new(c.expr.clone()), file, m));
                            continue;
                        }
                        if let syn::ImplItem::Fn(f) = ii {
                            if !attrs_active(&f.attrs, cfg) {
                                continue;
                            }
                            let name = f.sig.ident.to_string();
                            let def = Rc::new(FnDef { sig: f.sig, block: f.block, file, module: m, self_ty: Some(ty.clone()) });
                            if let Some(t) = &tr {
                                self.methods.insert((ty.clone(), format!("{t}::{name}")), def.clone());
                            }
                            self.methods.insert((ty.clone(), name), def);
                        }
                    }
                }
                Item::Trait(t) => {
                    for ti in t.items {
                        if let syn::TraitItem::Fn(f) = ti {
                            if let Some(block) = f.default {
                                let name = f.sig.ident.to_string();
                                self.trait_defaults.insert(name, Rc::new(FnDef { sig: f.sig, block, file, module: m, self_ty: None }));
                            }
                        }
                    }
                    self.modules[m].items.insert(t.ident.to_string(), ItemDef::Trait);
                }
                Item::Macro(mac) => {
                    if mac.mac.path.is_ident("macro_rules") {
                        if let Some(id) = &mac.ident {
                            match MacroRules::parse(mac.mac.tokens.clone(), self.edition, false) {
                                Ok(rules) => {
                                    self.modules[m].items.insert(format!("{id}!"), ItemDef::Macro(Rc::new(rules)));
                                }
                                Err(e) => self.problems.push(format!("macro_rules! {id}: {e}")),
                            }
                        }
                    } else if crate::surface::syntax::is_include(&mac.mac.path) {
                        let Some(rel) = crate::surface::syntax::include_literal(&mac.mac.tokens) else {
                            return Err(format!("{}: include! of a computed path", at(&self.files[file], mac.mac.path.span())));
                        };
                        let path = crate::surface::syntax::paths::join(crate::surface::syntax::paths::dir_of(&self.files[file]), &rel)
                            .ok_or_else(|| format!("include!({rel:?}) leaves the package"))?;
                        let f = parse_file(files, &path)?;
                        let fid = self.files.len();
                        self.files.push(path);
                        self.add_items(files, cfg, m, fid, f.items, depth + 1)?;
                    } else {
                        // Items a macro would produce are not known: a call of one is a stop
                        // when it is made.
                        self.problems.push(format!("{}: item macro `{}!`", at(&self.files[file], mac.mac.path.span()), path_text(&mac.mac.path)));
                    }
                }
                Item::ExternCrate(e) => {
                    // `extern crate x as y;`: `y` names the crate `x` (the plain form adds
                    // nothing: dependencies are in the extern prelude).
                    if let Some((_, r)) = &e.rename {
                        let orig = e.ident.to_string();
                        let orig = if orig == "std" || orig == "core" || orig == "alloc" { "std".to_string() } else { orig };
                        self.modules[m].uses.insert(r.to_string(), vec![orig]);
                    }
                }
                Item::Type(t) => {
                    if let Some(n) = type_name(&t.ty) {
                        self.modules[m].uses.insert(t.ident.to_string(), vec!["self".into(), n]);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Resolve `segs` in module `m`.
    pub fn resolve(&self, m: usize, segs: &[String], deps: &BTreeMap<String, String>) -> Option<Res> {
        self.resolve_depth(m, segs, deps, 0)
    }

    fn resolve_depth(&self, m: usize, segs: &[String], deps: &BTreeMap<String, String>, depth: usize) -> Option<Res> {
        if depth > 16 || segs.is_empty() {
            return None;
        }
        let first = segs[0].as_str();
        let (mut module, rest) = match first {
            "crate" => (0, &segs[1..]),
            "self" => (m, &segs[1..]),
            "super" => (self.modules[m].parent?, &segs[1..]),
            "Self" => return None,
            "std" | "core" | "alloc" => return Some(Res::Ext(canonical(segs))),
            _ => (m, segs),
        };
        let mut i = 0;
        while i < rest.len() {
            let name = &rest[i];
            if name == "super" {
                module = self.modules[module].parent?;
                i += 1;
                continue;
            }
            if name == "self" {
                i += 1;
                continue;
            }
            let md = &self.modules[module];
            // A function, constant or static is in the value namespace: a path through it
            // names a module of the same name (`fn env` beside `use std::env`).
            let value_only = |it: &ItemDef| matches!(it, ItemDef::Fn(_) | ItemDef::Const(..) | ItemDef::Static(..));
            if let Some(item) = md.items.get(name.as_str()).filter(|it| !(value_only(it) && i + 1 < rest.len())) {
                match item {
                    ItemDef::Mod(id) => {
                        module = *id;
                        i += 1;
                        if i == rest.len() {
                            return Some(Res::Item(module, name.clone(), item.clone()));
                        }
                        continue;
                    }
                    ItemDef::Enum(e) if i + 1 < rest.len() => {
                        let v = &rest[i + 1];
                        if let Some(k) = e.variants.iter().position(|(n, ..)| **n == **v) {
                            return Some(Res::Variant(e.clone(), k));
                        }
                        return self.assoc(&e.name, v);
                    }
                    ItemDef::Struct(st) if i + 1 < rest.len() => {
                        return self.assoc(&st.name, &rest[i + 1]);
                    }
                    _ => {
                        if i + 1 == rest.len() {
                            return Some(Res::Item(module, name.clone(), item.clone()));
                        }
                        return None;
                    }
                }
            }
            if let Some(path) = md.uses.get(name.as_str()) {
                let mut full: Vec<String> = path.clone();
                full.extend(rest[i + 1..].iter().cloned());
                // A `use` path is relative to its module (2018) or to an extern crate.
                return self.resolve_use(module, &full, deps, depth + 1);
            }
            for g in &md.globs {
                let mut full = g.clone();
                full.extend(rest[i..].iter().cloned());
                if let Some(r) = self.resolve_use(module, &full, deps, depth + 1) {
                    if !matches!(r, Res::Ext(_)) || g.first().is_some_and(|f| matches!(f.as_str(), "std" | "core" | "alloc")) {
                        return Some(r);
                    }
                }
            }
            if i == 0 && module == m {
                // The prelude, and extern crates.
                if let Some(p) = prelude(name) {
                    let mut full: Vec<String> = p.split("::").map(str::to_string).collect();
                    full.extend(rest[1..].iter().cloned());
                    return Some(Res::Ext(full.join("::")));
                }
                if let Some(krate) = deps.get(name.as_str()) {
                    let mut full = vec![krate.clone()];
                    full.extend(rest[1..].iter().cloned());
                    return Some(Res::Ext(full.join("::")));
                }
                if let Some(p) = self.modules[m].parent {
                    // Items of parent modules are not in scope, except through `use`; but
                    // a path at the root of an inline module may name a crate-level item in
                    // edition 2015 code.
                    let _ = p;
                }
            }
            return None;
        }
        Some(Res::Item(module, String::new(), ItemDef::Mod(module)))
    }

    fn resolve_use(&self, m: usize, path: &[String], deps: &BTreeMap<String, String>, depth: usize) -> Option<Res> {
        let first = path.first()?.as_str();
        match first {
            "crate" | "self" | "super" | "std" | "core" | "alloc" => self.resolve_depth(m, path, deps, depth),
            _ => {
                // A module of this one, or an extern crate, or (2015) a crate-root item.
                if self.modules[m].items.contains_key(first) || self.modules[m].uses.contains_key(first) {
                    return self.resolve_depth(m, path, deps, depth);
                }
                if let Some(krate) = deps.get(first) {
                    let mut full = vec![krate.clone()];
                    full.extend(path[1..].iter().cloned());
                    return Some(Res::Ext(full.join("::")));
                }
                if self.modules[0].items.contains_key(first) {
                    return self.resolve_depth(0, path, deps, depth);
                }
                self.resolve_depth(m, path, deps, depth)
            }
        }
    }

    /// An associated function or constant of a user type.
    fn assoc(&self, ty: &Rc<str>, name: &str) -> Option<Res> {
        if let Some(f) = self.methods.get(&(ty.clone(), name.to_string())) {
            return Some(Res::Method(f.clone()));
        }
        let (e, file, module) = self.consts.get(&(ty.clone(), name.to_string()))?;
        Some(Res::Item(*module, format!("{ty}::{name}"), ItemDef::Const(e.clone(), *file, *module)))
    }

    /// A macro visible in module `m` (textual scope is approximated by module nesting).
    pub fn macro_def(&self, m: usize, name: &str) -> Option<Rc<MacroRules>> {
        let key = format!("{name}!");
        let mut cur = Some(m);
        while let Some(i) = cur {
            if let Some(ItemDef::Macro(r)) = self.modules[i].items.get(&key) {
                return Some(r.clone());
            }
            cur = self.modules[i].parent;
        }
        None
    }
}

/// `std::`, `core::` and `alloc::` paths are one.
pub fn canonical(segs: &[String]) -> String {
    let mut v: Vec<&str> = segs.iter().map(String::as_str).collect();
    if matches!(v.first(), Some(&"core") | Some(&"alloc")) {
        v[0] = "std";
    }
    v.join("::")
}

/// Names the prelude (and the `std` root) puts in scope.
fn prelude(name: &str) -> Option<&'static str> {
    Some(match name {
        "Some" => "std::option::Option::Some",
        "None" => "std::option::Option::None",
        "Ok" => "std::result::Result::Ok",
        "Err" => "std::result::Result::Err",
        "Option" => "std::option::Option",
        "Result" => "std::result::Result",
        "String" => "std::string::String",
        "ToString" => "std::string::ToString",
        "ToOwned" => "std::borrow::ToOwned",
        "Vec" => "std::vec::Vec",
        "Box" => "std::boxed::Box",
        "Default" => "std::default::Default",
        "From" => "std::convert::From",
        "Into" => "std::convert::Into",
        "TryFrom" => "std::convert::TryFrom",
        "TryInto" => "std::convert::TryInto",
        "Iterator" => "std::iter::Iterator",
        "IntoIterator" => "std::iter::IntoIterator",
        "AsRef" => "std::convert::AsRef",
        "Clone" => "std::clone::Clone",
        "drop" => "std::mem::drop",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "f32" | "f64" | "char" | "str" | "bool" => {
            return Some(match name {
                "u8" => "std::u8",
                "u16" => "std::u16",
                "u32" => "std::u32",
                "u64" => "std::u64",
                "u128" => "std::u128",
                "usize" => "std::usize",
                "i8" => "std::i8",
                "i16" => "std::i16",
                "i32" => "std::i32",
                "i64" => "std::i64",
                "i128" => "std::i128",
                "isize" => "std::isize",
                "f32" => "std::f32",
                "f64" => "std::f64",
                "char" => "std::char",
                "str" => "std::str",
                _ => "std::bool",
            });
        }
        _ => return None,
    })
}

fn parse_file(files: &crate::package::FileTree, path: &str) -> Result<syn::File, String> {
    let bytes = files.get(path).ok_or_else(|| format!("{path} is not in the package"))?;
    crate::surface::guard::admit(bytes).map_err(|r| format!("{path}: {r}"))?;
    let text = std::str::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8"))?;
    syn::parse_file(text).map_err(|e| format!("{path}:{}: parse error: {e}", e.span().start().line))
}

fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Fn(i) => &i.attrs,
        Item::Const(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        _ => &[],
    }
}

/// Whether `#[cfg]` attributes hold. An unknown or unparsable predicate keeps the item (the
/// build script itself is compiled for the host with no build script of its own, so its
/// other names are false, and this is rare).
pub fn attrs_active(attrs: &[syn::Attribute], cfg: &crate::surface::cfg::CfgEnv) -> bool {
    for a in attrs {
        if a.path().is_ident("cfg") {
            if let syn::Meta::List(l) = &a.meta {
                if cfg.eval_tokens(&l.tokens) == Some(false) {
                    return false;
                }
            }
        }
    }
    true
}

/// Leaves of a `use` tree: (path, Some(name)) or (path, None) for a glob.
fn flatten_use(t: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match t {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    out.push((prefix.clone(), Some(last.clone())));
                }
            } else {
                let mut p = prefix.clone();
                p.push(name.clone());
                out.push((p, Some(name)));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            let name = r.ident.to_string();
            if name != "self" {
                p.push(name);
            }
            out.push((p, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// The last segment of a type path (`Render<'a>` → `Render`).
pub fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}

pub fn path_text(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

pub fn at(file: &str, span: Span) -> String {
    format!("{file}:{}", span.start().line)
}

/// A lexical scope.
#[derive(Default)]
pub struct Scope {
    pub vars: RefCell<Vec<(Rc<str>, Rc<RefCell<V>>)>>,
    pub parent: Option<Rc<Scope>>,
}

impl Scope {
    pub fn child(parent: &Rc<Scope>) -> Rc<Scope> {
        Rc::new(Scope { vars: RefCell::new(Vec::new()), parent: Some(parent.clone()) })
    }

    /// [`Scope::get`] by an identifier, without making a string of it.
    pub fn get_id(&self, id: &proc_macro2::Ident) -> Option<Rc<RefCell<V>>> {
        if let Some((_, c)) = self.vars.borrow().iter().rev().find(|(n, _)| *id == **n) {
            return Some(c.clone());
        }
        self.parent.as_ref()?.get_id(id)
    }

    pub fn get(&self, name: &str) -> Option<Rc<RefCell<V>>> {
        if let Some((_, c)) = self.vars.borrow().iter().rev().find(|(n, _)| &**n == name) {
            return Some(c.clone());
        }
        self.parent.as_ref()?.get(name)
    }

    /// Every binding of `name` in this scope and its parents, innermost first.
    pub fn all(&self, name: &str) -> Vec<V> {
        let mut out: Vec<V> = self.vars.borrow().iter().rev().filter(|(n, _)| &**n == name).map(|(_, c)| c.borrow().clone()).collect();
        if let Some(p) = &self.parent {
            out.extend(p.all(name));
        }
        out
    }

    pub fn bind(&self, name: &str, v: V) {
        self.vars.borrow_mut().push((Rc::from(name), Rc::new(RefCell::new(v))));
    }
}

/// One write to stdout or a file: the text and where it was made.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub text: Sym,
    pub origin: Rc<str>,
}

/// A file in OUT_DIR, as a path leaves it.
#[derive(Debug, Clone, Default)]
pub struct OutFile {
    pub chunks: Vec<Chunk>,
}

/// What one run did.
#[derive(Debug, Clone, Default)]
pub struct PathState {
    pub stdout: Vec<Chunk>,
    /// OUT_DIR files by path relative to OUT_DIR.
    pub files: BTreeMap<String, OutFile>,
    /// Directories created in OUT_DIR.
    pub dirs: BTreeSet<String>,
    /// A write to a path that is not known: every file is unknown, with why.
    pub clobbered: Option<String>,
    /// OUT_DIR directories (relative) a compiler run may have written into (`""`: the
    /// package directory).
    pub tainted: Vec<String>,
    /// Open files: their OUT_DIR-relative path.
    pub open: Vec<String>,
    /// Environment variables decided on this path: name → state.
    pub env: HashMap<String, EnvState>,
    /// The choice points met, in order: what was unknown.
    pub choices: Vec<Rc<str>>,
    /// Statics of the script.
    pub statics: HashMap<(usize, String), Rc<RefCell<V>>>,
}

/// An environment variable the evaluation does not know, as decided on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvState {
    Unset,
    Set,
    NotUnicode,
}

/// One run.
pub struct Interp<'a> {
    pub script: &'a Script,
    pub input: &'a Input<'a>,
    pub budget: &'a mut Budget,
    /// Choices to replay, then record.
    pub prefix: &'a [usize],
    pub pos: usize,
    /// New choice points met beyond the prefix: their option counts.
    pub new_choices: Vec<usize>,
    pub st: PathState,
    /// Extern name → crate name of the build script's dependencies.
    pub deps: BTreeMap<String, String>,
    depth: usize,
    /// Current file index (for places in reasons).
    pub file: usize,
    pub module: usize,
    /// The `Self` type of the method being run.
    pub self_ty: Option<Rc<str>>,
    /// The return type of the function being run (for `?` on unknown values).
    ret_option: Vec<bool>,
    /// Functions declared inside function bodies.
    pub local_fns: Vec<Rc<FnDef>>,
    /// `macro_rules!` declared inside function bodies.
    pub local_macros: Vec<(String, Rc<MacroRules>)>,
    /// The innermost scope of the block being run (for `use` in blocks).
    pub scope_now: Option<Rc<Scope>>,
    /// How deeply the script's own macros are expanded inside each other.
    pub macro_depth: usize,
}

/// Deepest call nesting.
const MAX_CALL_DEPTH: usize = 200;

impl<'a> Interp<'a> {
    pub fn new(script: &'a Script, input: &'a Input<'a>, budget: &'a mut Budget, prefix: &'a [usize], deps: BTreeMap<String, String>) -> Self {
        Interp { script, input, budget, prefix, pos: 0, new_choices: Vec::new(), st: PathState::default(), deps, depth: 0, file: 0, module: 0, self_ty: None, ret_option: Vec::new(), local_fns: Vec::new(), local_macros: Vec::new(), scope_now: None, macro_depth: 0 }
    }

    /// Run `main`.
    pub fn run_main(&mut self) -> R<()> {
        let Some(ItemDef::Fn(main)) = self.script.modules[0].items.get("main").cloned() else {
            return Err(Flow::Stop("the build script has no `fn main`".into()));
        };
        match self.call_fn(&main, Vec::new(), None) {
            Ok(V::Result(Err(_))) => Err(Flow::Fail("`main` returned an error".into())),
            Ok(_) | Err(Flow::Exit) => Ok(()),
            Err(Flow::Return(_)) => Ok(()),
            Err(f) => Err(f),
        }
    }

    /// Where `span` is, as `file:line`.
    pub fn at(&self, span: Span) -> String {
        at(&self.script.files[self.file], span)
    }

    pub fn stop<T>(&self, span: Span, what: impl std::fmt::Display) -> R<T> {
        Err(Flow::Stop(format!("{}: {what}", self.at(span))))
    }

    /// Spend one step of the budget.
    pub fn step(&mut self, span: Span) -> R<()> {
        self.work(1, span)
    }

    /// Spend `n` steps: work a library call does in one go (walking a collection).
    pub fn work(&mut self, n: u64, span: Span) -> R<()> {
        if self.budget.steps < n {
            self.budget.steps = 0;
            return self.stop(span, "the evaluation's step budget is spent");
        }
        self.budget.steps -= n;
        Ok(())
    }

    /// A choice among `n` outcomes of something unknown (`what`): replayed from the prefix,
    /// or the first one, with the others left to explore.
    pub fn choose(&mut self, n: usize, what: &str) -> usize {
        if self.st.choices.len() < 1024 {
            self.st.choices.push(Rc::from(what));
        }
        if n <= 1 {
            return 0;
        }
        if self.pos < self.prefix.len() {
            let c = self.prefix[self.pos];
            self.pos += 1;
            return c.min(n - 1);
        }
        self.pos += 1;
        self.new_choices.push(n);
        0
    }

    /// Decide an unknown boolean.
    pub fn decide(&mut self, v: &V, span: Span) -> R<bool> {
        match deref(v) {
            V::Bool(b) => Ok(b),
            V::Unknown(u) => {
                let what = format!("{} ({})", u.origin, self.at(span));
                Ok(self.choose(2, &what) == 0)
            }
            other => self.stop(span, format!("a condition that is {}", other.kind_name())),
        }
    }

    // ---- functions ----

    pub fn call_fn(&mut self, f: &Rc<FnDef>, args: Vec<V>, self_val: Option<V>) -> R<V> {
        if self.depth >= MAX_CALL_DEPTH {
            return self.stop(f.sig.ident.span(), "calls nested too deeply");
        }
        let scope = Rc::new(Scope::default());
        let mut args = args.into_iter();
        for input in &f.sig.inputs {
            match input {
                syn::FnArg::Receiver(_) => {
                    let v = match self_val.clone() {
                        Some(v) => v,
                        None => args.next().unwrap_or(V::Unit),
                    };
                    scope.bind("self", v);
                }
                syn::FnArg::Typed(t) => {
                    let v = args.next().unwrap_or(V::Unit);
                    let saved = (self.file, self.module);
                    self.file = f.file;
                    self.module = f.module;
                    let r = self.bind_pat(&t.pat, v, &scope, true);
                    (self.file, self.module) = saved;
                    match r {
                        Ok(true) => {}
                        Ok(false) => return self.stop(t.pat.span(), "a refutable parameter pattern"),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        let saved = (self.file, self.module, self.self_ty.clone());
        self.file = f.file;
        self.module = f.module;
        self.self_ty = f.self_ty.clone().or(saved.2.clone());
        self.depth += 1;
        self.ret_option.push(returns_option(&f.sig.output));
        let r = self.eval_block(&f.block, &scope);
        self.ret_option.pop();
        self.depth -= 1;
        (self.file, self.module, self.self_ty) = saved;
        match r {
            Ok(v) => Ok(v),
            Err(Flow::Return(v)) => Ok(v),
            Err(Flow::Break(..)) | Err(Flow::Continue(_)) => Err(Flow::Stop("`break` outside a loop".into())),
            Err(e) => Err(e),
        }
    }

    pub fn call_closure(&mut self, c: &Rc<Closure>, args: Vec<V>) -> R<V> {
        if self.depth >= MAX_CALL_DEPTH {
            return self.stop(c.code.body.span(), "calls nested too deeply");
        }
        let scope = Scope::child(&c.scope);
        let saved = (self.file, self.module);
        self.file = c.file;
        self.module = c.module;
        // A closure called with one tuple where it takes several parameters is not Rust; one
        // parameter taking a tuple is.
        let mut args = args.into_iter();
        for p in &c.code.inputs {
            let v = args.next().unwrap_or(V::Unit);
            match self.bind_pat(p, v, &scope, true) {
                Ok(true) => {}
                Ok(false) => {
                    (self.file, self.module) = saved;
                    return self.stop(p.span(), "a refutable closure parameter");
                }
                Err(e) => {
                    (self.file, self.module) = saved;
                    return Err(e);
                }
            }
        }
        self.depth += 1;
        let r = self.eval_expr(&c.code.body, &scope);
        self.depth -= 1;
        (self.file, self.module) = saved;
        match r {
            Err(Flow::Return(v)) => Ok(v),
            other => other,
        }
    }

    /// Call a callable value.
    pub fn call_value(&mut self, f: &V, args: Vec<V>, span: Span) -> R<V> {
        match deref(f) {
            V::Closure(c) => self.call_closure(&c, args),
            V::Fn(r) => match &*r {
                FnRef::Local(i) => {
                    let f = self.local_fns[*i].clone();
                    self.call_fn(&f, args, None)
                }
                FnRef::User { module, name } => match self.script.modules[*module].items.get(&**name) {
                    Some(ItemDef::Fn(def)) => {
                        let def = def.clone();
                        self.call_fn(&def, args, None)
                    }
                    _ => self.stop(span, format!("call of `{name}`")),
                },
                FnRef::Path(p) => {
                    let p = p.clone();
                    self.call_ext(&p, args, span, None)
                }
            },
            V::Adt(a) if a.fields.is_empty() && a.variant.is_some() => {
                // A tuple variant used as a function (`.map(Some)` has its own path).
                Ok(V::Adt(Rc::new(Adt { ty: a.ty.clone(), variant: a.variant.clone(), fields: args.into_iter().enumerate().map(|(i, v)| (Rc::from(i.to_string().as_str()), v)).collect(), tuple: true })))
            }
            other => self.stop(span, format!("a call of {}", other.kind_name())),
        }
    }

    // ---- blocks and statements ----

    pub fn eval_block(&mut self, b: &syn::Block, parent: &Rc<Scope>) -> R<V> {
        let scope = Scope::child(parent);
        let saved = self.scope_now.replace(scope.clone());
        let r = self.eval_stmts(b, &scope);
        self.scope_now = saved;
        r
    }

    fn eval_stmts(&mut self, b: &syn::Block, scope: &Rc<Scope>) -> R<V> {
        let scope = scope.clone();
        // Items declared in the block are visible in it.
        let mut last = V::Unit;
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            last = V::Unit;
            match s {
                Stmt::Local(l) => self.eval_local(l, &scope)?,
                Stmt::Item(item) => self.local_item(item, &scope)?,
                Stmt::Expr(e, semi) => {
                    if !attrs_active(expr_attrs(e), self.input.host_cfg) {
                        continue;
                    }
                    let v = self.eval_expr(e, &scope)?;
                    if semi.is_none() && i + 1 == n {
                        last = v;
                    }
                }
                Stmt::Macro(m) => {
                    if !attrs_active(&m.attrs, self.input.host_cfg) {
                        continue;
                    }
                    let v = self.eval_macro(&m.mac, &scope, m.semi_token.is_none())?;
                    if m.semi_token.is_none() && i + 1 == n {
                        last = v;
                    }
                }
            }
        }
        Ok(last)
    }

    fn local_item(&mut self, item: &Item, scope: &Rc<Scope>) -> R<()> {
        match item {
            Item::Const(c) => {
                let v = self.eval_expr(&c.expr, scope)?;
                scope.bind(&c.ident.to_string(), v);
                Ok(())
            }
            Item::Static(st) if matches!(st.mutability, syn::StaticMutability::None) => {
                let v = self.eval_expr(&st.expr, scope)?;
                scope.bind(&st.ident.to_string(), v);
                Ok(())
            }
            Item::Use(u) => {
                // A `use` in a block: its paths, resolved where they are used.
                let mut leaves = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                for (path, name) in leaves {
                    let key = match name {
                        Some(n) => format!("use {n}"),
                        None => "use *".to_string(),
                    };
                    scope.bind(&key, V::string(path.join("::")));
                }
                Ok(())
            }
            Item::Fn(f) => {
                if !attrs_active(&f.attrs, self.input.host_cfg) {
                    return Ok(());
                }
                let key = f as *const syn::ItemFn as usize;
                let (file, module) = (self.file, self.module);
                let def = self.script.cache.borrow_mut().local_fns.entry(key).or_insert_with(|| Rc::new(FnDef { sig: f.sig.clone(), block: (*f.block).clone(), file, module, self_ty: None })).clone();
                self.local_fns.push(def);
                scope.bind(&format!("fn {}", f.sig.ident), V::Int(self.local_fns.len() as i128 - 1));
                Ok(())
            }
            Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                if let Some(id) = &m.ident {
                    let key = m as *const syn::ItemMacro as usize;
                    let cached = self.script.cache.borrow().local_macros.get(&key).cloned();
                    let rules = match cached {
                        Some(r) => r,
                        None => match MacroRules::parse(m.mac.tokens.clone(), self.script.edition, false) {
                            Ok(rules) => {
                                let r = Rc::new(rules);
                                self.script.cache.borrow_mut().local_macros.insert(key, r.clone());
                                r
                            }
                            Err(e) => return self.stop(m.mac.path.span(), format!("macro_rules! {id}: {e}")),
                        },
                    };
                    self.local_macros.push((id.to_string(), rules));
                }
                Ok(())
            }
            Item::Struct(_) | Item::Enum(_) | Item::Impl(_) | Item::Static(_) | Item::Macro(_) | Item::Mod(_) | Item::Trait(_) => self.stop(item.span(), "an item declared inside a function"),
            _ => Ok(()),
        }
    }

    fn eval_local(&mut self, l: &syn::Local, scope: &Rc<Scope>) -> R<()> {
        if !attrs_active(&l.attrs, self.input.host_cfg) {
            return Ok(());
        }
        let Some(init) = &l.init else {
            // `let x;`: assigned later.
            let mut names = Vec::new();
            pat_names(&l.pat, &mut names);
            for n in names {
                scope.bind(&n, V::Unit);
            }
            return Ok(());
        };
        let hint = pat_type(&l.pat);
        let v = self.eval_expr_hint(&init.expr, scope, hint.as_ref())?;
        let v = match hint.as_ref() {
            Some(t) => self.coerce(v, t),
            None => v,
        };
        match self.bind_pat(&l.pat, v, scope, false)? {
            true => Ok(()),
            false => match &init.diverge {
                Some((_, els)) => {
                    let v = self.eval_expr(els, scope)?;
                    let _ = v;
                    self.stop(els.span(), "a `let ... else` whose else block does not diverge")
                }
                None => self.stop(l.pat.span(), "a refutable `let` pattern"),
            },
        }
    }

    // ---- patterns ----

    /// Bind `pat` to `v`: `Ok(false)` when it does not match. Where the match depends on an
    /// unknown value, a choice is made. `irrefutable`: a parameter (a mismatch is a stop).
    pub fn bind_pat(&mut self, pat: &Pat, v: V, scope: &Rc<Scope>, irrefutable: bool) -> R<bool> {
        let mut binds: Vec<(String, V)> = Vec::new();
        let ok = self.match_pat(pat, &v, &mut binds, irrefutable)?;
        if ok {
            for (n, v) in binds {
                scope.bind(&n, v);
            }
        }
        Ok(ok)
    }

    pub fn match_pat(&mut self, pat: &Pat, v: &V, binds: &mut Vec<(String, V)>, irrefutable: bool) -> R<bool> {
        self.step(pat.span())?;
        match pat {
            Pat::Wild(_) | Pat::Rest(_) => Ok(true),
            Pat::Ident(pi) => {
                let name = pi.ident.to_string();
                // A unit variant or a constant (named in upper case, as rustc expects): a value
                // to compare with, not a binding.
                if pi.subpat.is_none() && pi.by_ref.is_none() && pi.mutability.is_none() && name.starts_with(|c: char| c.is_uppercase()) {
                    if let Some(r) = self.resolve_segs(std::slice::from_ref(&name), self.scope_now.clone().as_ref()) {
                        let constant = matches!(r, Res::Variant(..) | Res::Item(_, _, ItemDef::Const(..)))
                            || matches!(&r, Res::Ext(p) if p == "std::option::Option::None");
                        if constant {
                            let want = self.path_value_res(&r, pat.span())?;
                            return self.eq_choice(v, &want, pat.span());
                        }
                    }
                }
                if let Some((_, sub)) = &pi.subpat {
                    if !self.match_pat(sub, v, binds, irrefutable)? {
                        return Ok(false);
                    }
                }
                binds.push((name, v.clone()));
                Ok(true)
            }
            Pat::Reference(r) => self.match_pat(&r.pat, &deref(v), binds, irrefutable),
            Pat::Paren(p) => self.match_pat(&p.pat, v, binds, irrefutable),
            Pat::Type(t) => self.match_pat(&t.pat, v, binds, irrefutable),
            Pat::Lit(l) => {
                let want = self.eval_lit(&l.lit);
                let want = if matches!(deref(v), V::Bytes(_)) { want } else { want };
                self.eq_choice(v, &want, pat.span())
            }
            Pat::Range(r) => {
                let lo = match &r.start {
                    Some(e) => Some(self.eval_expr(e, &Rc::new(Scope::default()))?),
                    None => None,
                };
                let hi = match &r.end {
                    Some(e) => Some(self.eval_expr(e, &Rc::new(Scope::default()))?),
                    None => None,
                };
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let v = deref(v);
                if let V::Unknown(u) = &v {
                    let what = format!("{} ({})", u.origin, self.at(pat.span()));
                    return Ok(self.choose(2, &what) == 0);
                }
                let ge = lo.map(|l| value_cmp(&v, &l).map(|o| o != std::cmp::Ordering::Less)).unwrap_or(Some(true));
                let le = hi.map(|h| value_cmp(&v, &h).map(|o| if inclusive { o != std::cmp::Ordering::Greater } else { o == std::cmp::Ordering::Less })).unwrap_or(Some(true));
                match (ge, le) {
                    (Some(a), Some(b)) => Ok(a && b),
                    _ => self.stop(pat.span(), "a range pattern on a value that is not a number"),
                }
            }
            Pat::Or(o) => {
                for case in &o.cases {
                    let mut b = Vec::new();
                    if self.match_pat(case, v, &mut b, false)? {
                        binds.extend(b);
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Pat::Tuple(t) => {
                let v = deref(v);
                let items: Vec<V> = match &v {
                    V::Tuple(items) => items.to_vec(),
                    V::Unknown(u) => vec![V::Unknown(u.clone()); t.elems.len()],
                    V::Unit if t.elems.is_empty() => Vec::new(),
                    other => return self.stop(pat.span(), format!("a tuple pattern on {}", other.kind_name())),
                };
                self.match_seq(t.elems.iter().collect(), &items, binds, irrefutable, pat.span())
            }
            Pat::Slice(s) => {
                let v = deref(v);
                let items: Vec<V> = match &v {
                    V::Vec(items) => items.to_vec(),
                    V::Bytes(b) => b.iter().map(|x| V::Int(*x as i128)).collect(),
                    other => return self.stop(pat.span(), format!("a slice pattern on {}", other.kind_name())),
                };
                self.match_seq(s.elems.iter().collect(), &items, binds, irrefutable, pat.span())
            }
            Pat::TupleStruct(ts) => {
                let name = ts.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                let v = deref(v);
                let res = self.resolve_pat_path(&ts.path);
                match (&v, name.as_str(), res.as_ref()) {
                    (V::Unknown(u), _, _) => {
                        // The shape is not known: this arm may match or not.
                        let what = format!("{} ({})", u.origin, self.at(pat.span()));
                        if irrefutable || self.choose(2, &what) == 0 {
                            for p in &ts.elems {
                                self.match_pat(p, &V::Unknown(u.clone()), binds, irrefutable)?;
                            }
                            Ok(true)
                        } else {
                            Ok(false)
                        }
                    }
                    (V::Option(o), "Some", _) => match o {
                        Some(x) => self.match_seq(ts.elems.iter().collect(), &[(**x).clone()], binds, irrefutable, pat.span()),
                        None => Ok(false),
                    },
                    (V::Result(r), "Ok", _) => match r {
                        Ok(x) => self.match_seq(ts.elems.iter().collect(), &[(**x).clone()], binds, irrefutable, pat.span()),
                        Err(_) => Ok(false),
                    },
                    (V::Result(r), "Err", _) => match r {
                        Err(x) => self.match_seq(ts.elems.iter().collect(), &[(**x).clone()], binds, irrefutable, pat.span()),
                        Ok(_) => Ok(false),
                    },
                    (V::Obj(o), _, _) => match (&**o, name.as_str()) {
                        (Obj::VarError(k), n) => Ok(**k == *n),
                        _ => self.stop(pat.span(), format!("pattern `{name}(..)` on a library value")),
                    },
                    (V::Adt(a), _, Some(Res::Variant(e, k))) => {
                        if a.ty != e.name || a.variant.as_deref() != Some(&*e.variants[*k].0) {
                            return Ok(false);
                        }
                        let items: Vec<V> = a.fields.iter().map(|(_, v)| v.clone()).collect();
                        self.match_seq(ts.elems.iter().collect(), &items, binds, irrefutable, pat.span())
                    }
                    (V::Adt(a), _, Some(Res::Item(_, _, ItemDef::Struct(s)))) => {
                        if a.ty != s.name {
                            return Ok(false);
                        }
                        let items: Vec<V> = a.fields.iter().map(|(_, v)| v.clone()).collect();
                        self.match_seq(ts.elems.iter().collect(), &items, binds, irrefutable, pat.span())
                    }
                    (V::Option(_), "None", _) | (V::Result(_), _, _) | (V::Option(_), _, _) => Ok(false),
                    _ => self.stop(pat.span(), format!("pattern `{name}(..)` on {}", v.kind_name())),
                }
            }
            Pat::Struct(ps) => {
                let v = deref(v);
                let res = self.resolve_pat_path(&ps.path);
                let a = match &v {
                    V::Adt(a) => a.clone(),
                    V::Unknown(u) => {
                        let what = format!("{} ({})", u.origin, self.at(pat.span()));
                        if irrefutable || self.choose(2, &what) == 0 {
                            for f in &ps.fields {
                                self.match_pat(&f.pat, &V::Unknown(u.clone()), binds, irrefutable)?;
                            }
                            return Ok(true);
                        }
                        return Ok(false);
                    }
                    other => return self.stop(pat.span(), format!("a struct pattern on {}", other.kind_name())),
                };
                match res {
                    Some(Res::Variant(e, k)) => {
                        if a.ty != e.name || a.variant.as_deref() != Some(&*e.variants[k].0) {
                            return Ok(false);
                        }
                    }
                    Some(Res::Item(_, _, ItemDef::Struct(s))) => {
                        if a.ty != s.name {
                            return Ok(false);
                        }
                    }
                    _ if self.self_ty.as_deref() == Some(&*a.ty) => {}
                    _ => return self.stop(pat.span(), "a struct pattern of a type the script does not define"),
                }
                for f in &ps.fields {
                    let fname = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    let Some((_, fv)) = a.fields.iter().find(|(n, _)| **n == *fname) else {
                        return self.stop(pat.span(), format!("field `{fname}` not in the value"));
                    };
                    if !self.match_pat(&f.pat, fv, binds, irrefutable)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Pat::Path(pp) => {
                let r = self.resolve_pat_path(&pp.path);
                let Some(r) = r else {
                    return self.stop(pat.span(), format!("pattern `{}`", path_text(&pp.path)));
                };
                let want = self.path_value_res(&r, pat.span())?;
                self.eq_choice(v, &want, pat.span())
            }
            Pat::Const(_) | Pat::Macro(_) | Pat::Verbatim(_) => self.stop(pat.span(), "this kind of pattern"),
            _ => self.stop(pat.span(), "this kind of pattern"),
        }
    }

    fn match_seq(&mut self, pats: Vec<&Pat>, items: &[V], binds: &mut Vec<(String, V)>, irrefutable: bool, span: Span) -> R<bool> {
        let rest = pats.iter().position(|p| matches!(p, Pat::Rest(_)) || matches!(p, Pat::Ident(pi) if matches!(pi.subpat.as_ref().map(|(_, s)| &**s), Some(Pat::Rest(_)))));
        match rest {
            None => {
                if pats.len() != items.len() {
                    return Ok(false);
                }
                for (p, v) in pats.iter().zip(items) {
                    if !self.match_pat(p, v, binds, irrefutable)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Some(r) => {
                let after = pats.len() - r - 1;
                if items.len() < r + after {
                    return Ok(false);
                }
                for (p, v) in pats[..r].iter().zip(items) {
                    if !self.match_pat(p, v, binds, irrefutable)? {
                        return Ok(false);
                    }
                }
                if let Pat::Ident(pi) = pats[r] {
                    binds.push((pi.ident.to_string(), V::vec(items[r..items.len() - after].to_vec())));
                }
                for (p, v) in pats[r + 1..].iter().zip(&items[items.len() - after..]) {
                    if !self.match_pat(p, v, binds, irrefutable)? {
                        return Ok(false);
                    }
                }
                let _ = span;
                Ok(true)
            }
        }
    }

    fn resolve_pat_path(&self, p: &syn::Path) -> Option<Res> {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.first().map(String::as_str) == Some("Self") {
            let ty = self.self_ty.clone()?;
            let mut full = vec![ty.to_string()];
            full.extend(segs[1..].iter().cloned());
            return self.script.resolve(self.module, &full, &self.deps).or_else(|| self.script.resolve(0, &full, &self.deps));
        }
        self.resolve_segs(&segs, self.scope_now.as_ref())
    }

    /// Resolve a path in the current module, through the `use`s of the enclosing blocks.
    pub fn resolve_segs(&self, segs: &[String], scope: Option<&Rc<Scope>>) -> Option<Res> {
        if let Some(scope) = scope {
            if let Some(c) = scope.get(&format!("use {}", segs[0])) {
                if let V::Str(p) = &*c.borrow() {
                    let mut full: Vec<String> = p.split("::").map(str::to_string).collect();
                    full.extend(segs[1..].iter().cloned());
                    return self.script.resolve(self.module, &full, &self.deps);
                }
            }
        }
        if let Some(r) = self.script.resolve(self.module, segs, &self.deps) {
            return Some(r);
        }
        let scope = scope?;
        for g in scope.all("use *") {
            if let V::Str(p) = g {
                let mut full: Vec<String> = p.split("::").map(str::to_string).collect();
                full.extend(segs.iter().cloned());
                if let Some(r) = self.script.resolve(self.module, &full, &self.deps) {
                    return Some(r);
                }
            }
        }
        None
    }

    /// `v == want` as a pattern test: a choice when unknown.
    fn eq_choice(&mut self, v: &V, want: &V, span: Span) -> R<bool> {
        match value_eq(v, want) {
            Some(b) => Ok(b),
            None => {
                let what = match deref(v) {
                    V::Unknown(u) => format!("{} ({})", u.origin, self.at(span)),
                    _ => format!("a value with unknown parts ({})", self.at(span)),
                };
                Ok(self.choose(2, &what) == 0)
            }
        }
    }

    // ---- expressions ----

    pub fn eval_expr(&mut self, e: &Expr, scope: &Rc<Scope>) -> R<V> {
        self.eval_expr_hint(e, scope, None)
    }

    pub fn eval_expr_hint(&mut self, e: &Expr, scope: &Rc<Scope>, hint: Option<&syn::Type>) -> R<V> {
        self.step(e.span())?;
        match e {
            Expr::Lit(l) => Ok(self.eval_lit(&l.lit)),
            Expr::Paren(p) => self.eval_expr_hint(&p.expr, scope, hint),
            Expr::Group(g) => self.eval_expr_hint(&g.expr, scope, hint),
            Expr::Path(p) => self.eval_path(&p.path, scope, e.span()),
            Expr::Block(b) => {
                if b.label.is_some() {
                    let label = b.label.as_ref().map(|l| l.name.ident.to_string());
                    match self.eval_block(&b.block, scope) {
                        Err(Flow::Break(l, v)) if l == label => Ok(v),
                        other => other,
                    }
                } else {
                    self.eval_block(&b.block, scope)
                }
            }
            Expr::Unsafe(u) => self.eval_block(&u.block, scope),
            Expr::Const(c) => self.eval_block(&c.block, scope),
            Expr::Reference(r) => {
                if r.mutability.is_some() {
                    if let Some(p) = self.place_of(&r.expr, scope)? {
                        return Ok(V::Ref(Rc::new(p)));
                    }
                }
                let v = self.eval_expr_hint(&r.expr, scope, hint)?;
                Ok(v)
            }
            Expr::Unary(u) => {
                let v = self.eval_expr(&u.expr, scope)?;
                match u.op {
                    syn::UnOp::Deref(_) => Ok(deref(&v)),
                    syn::UnOp::Not(_) => match deref(&v) {
                        V::Bool(b) => Ok(V::Bool(!b)),
                        V::Int(i) => Ok(V::Int(!i)),
                        V::Unknown(u) => Ok(V::Unknown(u)),
                        other => self.stop(e.span(), format!("`!` on {}", other.kind_name())),
                    },
                    syn::UnOp::Neg(_) => match deref(&v) {
                        V::Int(i) => Ok(V::Int(-i)),
                        V::Float(f) => Ok(V::Float(-f)),
                        V::Unknown(u) => Ok(V::Unknown(u)),
                        other => self.stop(e.span(), format!("`-` on {}", other.kind_name())),
                    },
                    _ => self.stop(e.span(), "this unary operator"),
                }
            }
            Expr::Binary(b) => self.eval_binary(b, scope),
            Expr::Assign(a) => {
                let v = self.eval_expr(&a.right, scope)?;
                self.assign(&a.left, v, scope)?;
                Ok(V::Unit)
            }
            Expr::If(i) => {
                let cond_scope = Scope::child(scope);
                let c = self.eval_cond(&i.cond, &cond_scope)?;
                if c {
                    self.eval_block(&i.then_branch, &cond_scope)
                } else if let Some((_, els)) = &i.else_branch {
                    self.eval_expr_hint(els, scope, hint)
                } else {
                    Ok(V::Unit)
                }
            }
            Expr::Let(_) => {
                let s = Scope::child(scope);
                let c = self.eval_cond(e, &s)?;
                Ok(V::Bool(c))
            }
            Expr::Match(m) => {
                let v = self.eval_expr(&m.expr, scope)?;
                let choices_before = self.st.choices.len();
                for arm in &m.arms {
                    let arm_scope = Scope::child(scope);
                    let mut binds = Vec::new();
                    if !self.match_pat(&arm.pat, &v, &mut binds, false)? {
                        continue;
                    }
                    for (n, v) in binds {
                        arm_scope.bind(&n, v);
                    }
                    if let Some((_, guard)) = &arm.guard {
                        let g = self.eval_expr(guard, &arm_scope)?;
                        if !self.decide(&g, guard.span())? {
                            continue;
                        }
                    }
                    return self.eval_expr_hint(&arm.body, &arm_scope, hint);
                }
                // A match is exhaustive: when choices about unknown values led here, they are
                // not a path the script can take; without any, the model is wrong here.
                if self.st.choices.len() > choices_before {
                    Err(Flow::Fail(format!("{}: no arm of a `match` matches (not a possible path)", self.at(e.span()))))
                } else {
                    self.stop(e.span(), "a `match` no arm of which matches the value as modelled")
                }
            }
            Expr::While(w) => {
                let label = w.label.as_ref().map(|l| l.name.ident.to_string());
                loop {
                    self.step(e.span())?;
                    let s = Scope::child(scope);
                    if !self.eval_cond(&w.cond, &s)? {
                        break;
                    }
                    match self.eval_block(&w.body, &s) {
                        Ok(_) => {}
                        Err(Flow::Break(l, _)) if l.is_none() || l == label => break,
                        Err(Flow::Continue(l)) if l.is_none() || l == label => continue,
                        Err(f) => return Err(f),
                    }
                }
                Ok(V::Unit)
            }
            Expr::Loop(l) => {
                let label = l.label.as_ref().map(|l| l.name.ident.to_string());
                loop {
                    self.step(e.span())?;
                    match self.eval_block(&l.body, scope) {
                        Ok(_) => {}
                        Err(Flow::Break(lb, v)) if lb.is_none() || lb == label => return Ok(v),
                        Err(Flow::Continue(lb)) if lb.is_none() || lb == label => continue,
                        Err(f) => return Err(f),
                    }
                }
            }
            Expr::ForLoop(f) => {
                let label = f.label.as_ref().map(|l| l.name.ident.to_string());
                let it = self.eval_expr(&f.expr, scope)?;
                // A range is counted through, not made into a list.
                let items: Box<dyn Iterator<Item = V>> = match deref(&it) {
                    V::Range(Some(a), Some(b), incl) => Box::new((a..if incl { b + 1 } else { b }).map(V::Int)),
                    _ => Box::new(self.into_items(it, f.expr.span())?.into_iter()),
                };
                for item in items {
                    self.step(e.span())?;
                    let s = Scope::child(scope);
                    if !self.bind_pat(&f.pat, item, &s, true)? {
                        return self.stop(f.pat.span(), "a refutable `for` pattern");
                    }
                    match self.eval_block(&f.body, &s) {
                        Ok(_) => {}
                        Err(Flow::Break(l, _)) if l.is_none() || l == label => break,
                        Err(Flow::Continue(l)) if l.is_none() || l == label => continue,
                        Err(fl) => return Err(fl),
                    }
                }
                Ok(V::Unit)
            }
            Expr::Break(b) => {
                let v = match &b.expr {
                    Some(x) => self.eval_expr(x, scope)?,
                    None => V::Unit,
                };
                Err(Flow::Break(b.label.as_ref().map(|l| l.ident.to_string()), v))
            }
            Expr::Continue(c) => Err(Flow::Continue(c.label.as_ref().map(|l| l.ident.to_string()))),
            Expr::Return(r) => {
                let v = match &r.expr {
                    Some(x) => self.eval_expr(x, scope)?,
                    None => V::Unit,
                };
                Err(Flow::Return(v))
            }
            Expr::Try(t) => {
                let v = self.eval_expr_hint(&t.expr, scope, None)?;
                self.try_op(v, t.span())
            }
            Expr::Tuple(t) => {
                if t.elems.is_empty() {
                    return Ok(V::Unit);
                }
                let mut items = Vec::new();
                for x in &t.elems {
                    items.push(self.eval_expr(x, scope)?);
                }
                Ok(V::Tuple(Rc::new(items)))
            }
            Expr::Array(a) => {
                let mut items = Vec::new();
                for x in &a.elems {
                    items.push(self.eval_expr(x, scope)?);
                }
                Ok(V::vec(items))
            }
            Expr::Repeat(r) => {
                let v = self.eval_expr(&r.expr, scope)?;
                let n = self.eval_expr(&r.len, scope)?;
                let V::Int(n) = deref(&n) else { return self.stop(e.span(), "an array length that is not known") };
                self.new_items(n.max(0) as usize, e.span())?;
                Ok(V::vec(vec![v; n.max(0) as usize]))
            }
            Expr::Index(ix) => {
                let base = self.eval_expr(&ix.expr, scope)?;
                let idx = self.eval_expr(&ix.index, scope)?;
                self.index(base, idx, ix.span())
            }
            Expr::Field(f) => {
                let base = self.eval_expr(&f.base, scope)?;
                self.field(&base, &f.member, f.span())
            }
            Expr::Range(r) => {
                let lo = match &r.start {
                    Some(x) => Some(self.eval_expr(x, scope)?),
                    None => None,
                };
                let hi = match &r.end {
                    Some(x) => Some(self.eval_expr(x, scope)?),
                    None => None,
                };
                let int = |v: Option<V>| -> Result<Option<i128>, ()> {
                    match v.map(|v| deref(&v)) {
                        None => Ok(None),
                        Some(V::Int(i)) => Ok(Some(i)),
                        Some(V::Char(c)) => Ok(Some(c as i128)),
                        _ => Err(()),
                    }
                };
                match (int(lo), int(hi)) {
                    (Ok(a), Ok(b)) => Ok(V::Range(a, b, matches!(r.limits, syn::RangeLimits::Closed(_)))),
                    _ => Ok(V::unknown("a range with bounds that are not known", Kind::Any)),
                }
            }
            Expr::Closure(c) => {
                let code = self.script.cache.borrow_mut().closures.entry(c as *const syn::ExprClosure as usize).or_insert_with(|| Rc::new(c.clone())).clone();
                Ok(V::Closure(Rc::new(Closure { code, scope: scope.clone(), file: self.file, module: self.module })))
            }
            Expr::Struct(s) => self.eval_struct_lit(s, scope),
            Expr::Call(c) => self.eval_call(c, scope, hint),
            Expr::MethodCall(m) => self.eval_method_call(m, scope, hint),
            Expr::Macro(m) => self.eval_macro(&m.mac, scope, true),
            Expr::Cast(c) => {
                let v = self.eval_expr(&c.expr, scope)?;
                self.cast(v, &c.ty, c.span())
            }
            _ => self.stop(e.span(), format!("this expression (`{}`)", clip(&quote::ToTokens::to_token_stream(e).to_string()))),
        }
    }

    /// A condition: a boolean expression or a `let` chain; bindings go into `scope`.
    fn eval_cond(&mut self, e: &Expr, scope: &Rc<Scope>) -> R<bool> {
        match e {
            Expr::Let(l) => {
                let v = self.eval_expr(&l.expr, scope)?;
                let mut binds = Vec::new();
                if self.match_pat(&l.pat, &v, &mut binds, false)? {
                    for (n, v) in binds {
                        scope.bind(&n, v);
                    }
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
            Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) && contains_let(e) => {
                if !self.eval_cond(&b.left, scope)? {
                    return Ok(false);
                }
                self.eval_cond(&b.right, scope)
            }
            Expr::Paren(p) => self.eval_cond(&p.expr, scope),
            _ => {
                let v = self.eval_expr(e, scope)?;
                self.decide(&v, e.span())
            }
        }
    }

    fn try_op(&mut self, v: V, span: Span) -> R<V> {
        match deref(&v) {
            V::Option(Some(x)) => Ok((*x).clone()),
            V::Option(None) => Err(Flow::Return(V::Option(None))),
            V::Result(Ok(x)) => Ok((*x).clone()),
            V::Result(Err(e)) => Err(Flow::Return(V::Result(Err(e)))),
            V::Unknown(u) => {
                let what = format!("{} ({})", u.origin, self.at(span));
                if self.choose(2, &what) == 0 {
                    Ok(V::Unknown(u.clone()))
                } else if self.ret_option.last().copied().unwrap_or(false) {
                    Err(Flow::Return(V::Option(None)))
                } else {
                    Err(Flow::Return(V::err(V::Unknown(u))))
                }
            }
            other => self.stop(span, format!("`?` on {}", other.kind_name())),
        }
    }

    fn eval_binary(&mut self, b: &syn::ExprBinary, scope: &Rc<Scope>) -> R<V> {
        use syn::BinOp::*;
        let span = b.span();
        match b.op {
            And(_) | Or(_) => {
                let l = self.eval_expr(&b.left, scope)?;
                let lb = match deref(&l) {
                    V::Bool(x) => Some(x),
                    V::Unknown(_) => None,
                    other => return self.stop(span, format!("`&&`/`||` on {}", other.kind_name())),
                };
                let is_and = matches!(b.op, And(_));
                match lb {
                    Some(x) if x != is_and => return Ok(V::Bool(x)),
                    Some(_) => {
                        let r = self.eval_expr(&b.right, scope)?;
                        return Ok(match deref(&r) {
                            V::Bool(y) => V::Bool(y),
                            V::Unknown(u) => V::Unknown(u),
                            other => return self.stop(span, format!("`&&`/`||` on {}", other.kind_name())),
                        });
                    }
                    None => {
                        // Short-circuit on an unknown left side: the right side runs or not.
                        let taken = self.decide(&l, b.left.span())?;
                        if taken != is_and {
                            return Ok(V::Bool(taken));
                        }
                        let r = self.eval_expr(&b.right, scope)?;
                        return Ok(deref(&r));
                    }
                }
            }
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_) | BitXorAssign(_) | BitAndAssign(_) | BitOrAssign(_) | ShlAssign(_) | ShrAssign(_) => {
                let cur = self.eval_expr(&b.left, scope)?;
                let r = self.eval_expr(&b.right, scope)?;
                let op = match b.op {
                    AddAssign(_) => "+",
                    SubAssign(_) => "-",
                    MulAssign(_) => "*",
                    DivAssign(_) => "/",
                    RemAssign(_) => "%",
                    BitXorAssign(_) => "^",
                    BitAndAssign(_) => "&",
                    BitOrAssign(_) => "|",
                    ShlAssign(_) => "<<",
                    _ => ">>",
                };
                let v = self.arith(op, cur, r, span)?;
                self.assign(&b.left, v, scope)?;
                return Ok(V::Unit);
            }
            _ => {}
        }
        let l = self.eval_expr(&b.left, scope)?;
        let r = self.eval_expr(&b.right, scope)?;
        let op = match b.op {
            Add(_) => "+",
            Sub(_) => "-",
            Mul(_) => "*",
            Div(_) => "/",
            Rem(_) => "%",
            BitXor(_) => "^",
            BitAnd(_) => "&",
            BitOr(_) => "|",
            Shl(_) => "<<",
            Shr(_) => ">>",
            Eq(_) => "==",
            Ne(_) => "!=",
            Lt(_) => "<",
            Le(_) => "<=",
            Gt(_) => ">",
            Ge(_) => ">=",
            _ => return self.stop(span, "this operator"),
        };
        self.arith(op, l, r, span)
    }

    pub fn arith(&mut self, op: &str, l: V, r: V, span: Span) -> R<V> {
        let (l, r) = (deref(&l), deref(&r));
        let unknown = |kind: Kind, l: &V, r: &V| -> V {
            let origin = match (l, r) {
                (V::Unknown(u), _) | (_, V::Unknown(u)) => u.origin.clone(),
                _ => Rc::from("a value with unknown parts"),
            };
            V::Unknown(Rc::new(Unknown { origin, kind }))
        };
        match op {
            "==" | "!=" => {
                self.work(size_of_value(&l, 1 << 20).min(size_of_value(&r, 1 << 20)) as u64, span)?;
                return Ok(match value_eq(&l, &r) {
                    Some(b) => V::Bool(if op == "==" { b } else { !b }),
                    None => unknown(Kind::Bool, &l, &r),
                });
            }
            "<" | "<=" | ">" | ">=" => {
                if matches!(l, V::Unknown(_)) || matches!(r, V::Unknown(_)) || matches!(l, V::Sym(_)) || matches!(r, V::Sym(_)) {
                    return Ok(unknown(Kind::Bool, &l, &r));
                }
                let Some(o) = value_cmp(&l, &r).or_else(|| self.variant_order(&l, &r)) else {
                    if has_unknown(&l) || has_unknown(&r) {
                        return Ok(unknown(Kind::Bool, &l, &r));
                    }
                    return self.stop(span, format!("comparing {} with {}", l.kind_name(), r.kind_name()));
                };
                use std::cmp::Ordering::*;
                return Ok(V::Bool(match op {
                    "<" => o == Less,
                    "<=" => o != Greater,
                    ">" => o == Greater,
                    _ => o != Less,
                }));
            }
            _ => {}
        }
        match (&l, &r) {
            (V::Unknown(_), _) | (_, V::Unknown(_)) => {
                if op == "+" && (l.is_stringy() || r.is_stringy()) {
                    let (Some(a), Some(b)) = (segs_of(&l), segs_of(&r)) else { return Ok(unknown(Kind::Str, &l, &r)) };
                    let mut s = a;
                    s.extend(b);
                    return Ok(V::from_segs(s));
                }
                Ok(unknown(Kind::Int, &l, &r))
            }
            (V::Int(a), V::Int(b)) => {
                let (a, b) = (*a, *b);
                let v = match op {
                    "+" => a.checked_add(b),
                    "-" => a.checked_sub(b),
                    "*" => a.checked_mul(b),
                    "/" => a.checked_div(b),
                    "%" => a.checked_rem(b),
                    "^" => Some(a ^ b),
                    "&" => Some(a & b),
                    "|" => Some(a | b),
                    "<<" => u32::try_from(b).ok().filter(|s| *s < 127).and_then(|s| a.checked_shl(s)),
                    ">>" => u32::try_from(b).ok().filter(|s| *s < 127).map(|s| a >> s),
                    _ => None,
                };
                match v {
                    Some(v) => Ok(V::Int(v)),
                    None if op == "/" || op == "%" => Err(Flow::Fail(format!("{}: division by zero", self.at(span)))),
                    None => self.stop(span, "arithmetic out of range"),
                }
            }
            (V::Float(_), _) | (_, V::Float(_)) => {
                let f = |v: &V| match v {
                    V::Float(f) => Some(*f),
                    V::Int(i) => Some(*i as f64),
                    _ => None,
                };
                let (Some(a), Some(b)) = (f(&l), f(&r)) else { return self.stop(span, "arithmetic on these values") };
                Ok(V::Float(match op {
                    "+" => a + b,
                    "-" => a - b,
                    "*" => a * b,
                    "/" => a / b,
                    "%" => a % b,
                    _ => return self.stop(span, "this operator on floats"),
                }))
            }
            (V::Bool(a), V::Bool(b)) => Ok(V::Bool(match op {
                "^" => a ^ b,
                "&" => *a && *b,
                "|" => *a || *b,
                _ => return self.stop(span, "this operator on booleans"),
            })),
            _ if op == "+" && l.is_stringy() => {
                let (Some(a), Some(b)) = (segs_of(&l), segs_of(&r)) else { return self.stop(span, "`+` on these values") };
                let mut s = a;
                s.extend(b);
                self.check_sym(&s, span)?;
                Ok(V::from_segs(s))
            }
            _ => self.stop(span, format!("`{op}` on {} and {}", l.kind_name(), r.kind_name())),
        }
    }

    /// Two values of one enum of the script, ordered by their variants (as `derive(PartialOrd)`
    /// does), and by their fields for one variant.
    fn variant_order(&self, l: &V, r: &V) -> Option<std::cmp::Ordering> {
        let (V::Adt(a), V::Adt(b)) = (l, r) else { return None };
        if a.ty != b.ty {
            return None;
        }
        let def = self.script.modules.iter().find_map(|m| match m.items.get(&*a.ty) {
            Some(ItemDef::Enum(e)) => Some(e.clone()),
            _ => None,
        })?;
        let pos = |v: &Option<Rc<str>>| def.variants.iter().position(|(n, ..)| Some(n) == v.as_ref());
        match pos(&a.variant)?.cmp(&pos(&b.variant)?) {
            std::cmp::Ordering::Equal => {
                let xs: Vec<V> = a.fields.iter().map(|(_, v)| v.clone()).collect();
                let ys: Vec<V> = b.fields.iter().map(|(_, v)| v.clone()).collect();
                value_cmp(&V::Tuple(Rc::new(xs)), &V::Tuple(Rc::new(ys)))
            }
            o => Some(o),
        }
    }

    pub fn check_len(&mut self, n: usize, span: Span) -> R<()> {
        if n > self.budget.max_items {
            return self.stop(span, format!("a collection of more than {} items", self.budget.max_items));
        }
        Ok(())
    }

    /// A collection of `n` new items: within the size limit, and counted as made.
    pub fn new_items(&mut self, n: usize, span: Span) -> R<()> {
        self.check_len(n, span)?;
        self.spend(n.saturating_mul(std::mem::size_of::<V>()), span)
    }

    pub fn check_sym(&mut self, s: &[Seg], span: Span) -> R<()> {
        let n: usize = s.iter().map(|x| if let Seg::Lit(l) = x { l.len() } else { 1 }).sum();
        if n > self.budget.max_string {
            return self.stop(span, format!("a string of more than {} bytes", self.budget.max_string));
        }
        self.spend(n, span)
    }

    /// Count `n` bytes made against the allocation budget.
    pub fn spend(&mut self, n: usize, span: Span) -> R<()> {
        if n > self.budget.alloc {
            self.budget.alloc = 0;
            return self.stop(span, "the evaluation's budget of memory is spent");
        }
        self.budget.alloc -= n;
        Ok(())
    }

    fn eval_lit(&mut self, l: &syn::Lit) -> V {
        match l {
            syn::Lit::Str(s) => V::string(s.value()),
            syn::Lit::ByteStr(b) => V::Bytes(Rc::new(b.value())),
            syn::Lit::CStr(c) => V::Bytes(Rc::new(c.value().into_bytes())),
            syn::Lit::Byte(b) => V::Int(b.value() as i128),
            syn::Lit::Char(c) => V::Char(c.value()),
            syn::Lit::Int(i) => i.base10_parse::<i128>().map(V::Int).unwrap_or_else(|_| V::unknown("an integer literal out of range", Kind::Int)),
            syn::Lit::Float(f) => f.base10_parse::<f64>().map(V::Float).unwrap_or(V::Float(0.0)),
            syn::Lit::Bool(b) => V::Bool(b.value),
            _ => V::unknown("a literal", Kind::Any),
        }
    }

    fn eval_path(&mut self, p: &syn::Path, scope: &Rc<Scope>, span: Span) -> R<V> {
        if p.segments.len() == 1 && p.leading_colon.is_none() {
            if let Some(c) = scope.get_id(&p.segments[0].ident) {
                return Ok(c.borrow().clone());
            }
            let name = p.segments[0].ident.to_string();
            if let Some(c) = scope.get(&format!("fn {name}")) {
                if let V::Int(i) = &*c.borrow() {
                    return Ok(V::Fn(Rc::new(FnRef::Local(*i as usize))));
                }
            }
        }
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.first().map(String::as_str) == Some("Self") {
            let Some(ty) = self.self_ty.clone() else { return self.stop(span, "`Self` outside an impl") };
            let mut full = vec![ty.to_string()];
            full.extend(segs[1..].iter().cloned());
            if full.len() == 1 {
                // A unit struct's value.
                return Ok(V::Adt(Rc::new(Adt { ty, variant: None, fields: Vec::new(), tuple: false })));
            }
            let r = self.script.resolve(self.module, &full, &self.deps).or_else(|| self.script.resolve(0, &full, &self.deps));
            let Some(r) = r else { return self.stop(span, format!("`{}`", segs.join("::"))) };
            return self.path_value_res(&r, span);
        }
        let r = if p.leading_colon.is_some() {
            if segs.first().is_some_and(|f| matches!(f.as_str(), "std" | "core" | "alloc")) {
                Some(Res::Ext(canonical(&segs)))
            } else {
                self.deps.get(&segs[0]).map(|k| {
                    let mut full = vec![k.clone()];
                    full.extend(segs[1..].iter().cloned());
                    Res::Ext(full.join("::"))
                })
            }
        } else {
            self.resolve_segs(&segs, Some(scope))
        };
        let Some(r) = r else {
            return self.stop(span, format!("`{}`, which the script does not define", segs.join("::")));
        };
        self.path_value_res(&r, span)
    }

    /// The value a resolved path names.
    pub fn path_value_res(&mut self, r: &Res, span: Span) -> R<V> {
        match r {
            Res::Item(m, name, item) => match item {
                ItemDef::Fn(_) => Ok(V::Fn(Rc::new(FnRef::User { module: *m, name: Rc::from(name.as_str()) }))),
                ItemDef::Const(e, file, module) => {
                    let key = (*module, format!("const {name}"));
                    if let Some(c) = self.st.statics.get(&key) {
                        return Ok(c.borrow().clone());
                    }
                    let (e, file, module) = (e.clone(), *file, *module);
                    // An associated constant (`Type::NAME`) sees `Self`.
                    let ty = name.rsplit_once("::").map(|(t, _)| Rc::<str>::from(t));
                    let saved = (self.file, self.module, self.self_ty.clone());
                    self.file = file;
                    self.module = module;
                    if ty.is_some() {
                        self.self_ty = ty;
                    }
                    let v = self.eval_expr(&e, &Rc::new(Scope::default()));
                    (self.file, self.module, self.self_ty) = saved;
                    let v = v?;
                    self.st.statics.insert(key, Rc::new(RefCell::new(v.clone())));
                    Ok(v)
                }
                ItemDef::Static(..) => {
                    let c = self.static_cell(*m, name, span)?;
                    let v = c.borrow().clone();
                    Ok(v)
                }
                ItemDef::Struct(s) => {
                    if s.fields.is_empty() && !s.tuple {
                        Ok(V::Adt(Rc::new(Adt { ty: s.name.clone(), variant: None, fields: Vec::new(), tuple: false })))
                    } else {
                        Ok(V::Fn(Rc::new(FnRef::Path(Rc::from(format!("struct {}", s.name).as_str())))))
                    }
                }
                _ => self.stop(span, format!("`{name}` used as a value")),
            },
            Res::Variant(e, k) => {
                let (vname, fields, tuple, disc) = &e.variants[*k];
                if fields.is_empty() {
                    let _ = disc;
                    Ok(V::Adt(Rc::new(Adt { ty: e.name.clone(), variant: Some(vname.clone()), fields: Vec::new(), tuple: false })))
                } else if *tuple {
                    Ok(V::Fn(Rc::new(FnRef::Path(Rc::from(format!("variant {}::{}", e.name, vname).as_str())))))
                } else {
                    self.stop(span, "a struct variant used as a value")
                }
            }
            Res::Method(f) => {
                let name = f.sig.ident.to_string();
                let ty = f.self_ty.clone().unwrap_or_else(|| Rc::from(""));
                Ok(V::Fn(Rc::new(FnRef::Path(Rc::from(format!("method {ty}::{name}").as_str())))))
            }
            Res::Ext(p) => self.ext_value(p, span),
        }
    }

    pub fn static_cell(&mut self, m: usize, name: &str, span: Span) -> R<Rc<RefCell<V>>> {
        let key = (m, name.to_string());
        if let Some(c) = self.st.statics.get(&key) {
            return Ok(c.clone());
        }
        let Some(ItemDef::Static(e, file, module)) = self.script.modules[m].items.get(name).cloned() else {
            return self.stop(span, format!("static `{name}`"));
        };
        let saved = (self.file, self.module);
        self.file = file;
        self.module = module;
        let v = self.eval_expr(&e, &Rc::new(Scope::default()));
        (self.file, self.module) = saved;
        let c = Rc::new(RefCell::new(v?));
        self.st.statics.insert(key, c.clone());
        Ok(c)
    }

    fn eval_struct_lit(&mut self, s: &syn::ExprStruct, scope: &Rc<Scope>) -> R<V> {
        let segs: Vec<String> = s.path.segments.iter().map(|x| x.ident.to_string()).collect();
        let (ty, variant, names): (Rc<str>, Option<Rc<str>>, Vec<Rc<str>>) = if segs.len() == 1 && segs[0] == "Self" {
            let Some(ty) = self.self_ty.clone() else { return self.stop(s.span(), "`Self` outside an impl") };
            let def = self.script.resolve(self.module, &[ty.to_string()], &self.deps).or_else(|| self.script.resolve(0, &[ty.to_string()], &self.deps));
            match def {
                Some(Res::Item(_, _, ItemDef::Struct(d))) => (ty, None, d.fields.clone()),
                _ => (ty, None, Vec::new()),
            }
        } else {
            match self.resolve_pat_path(&s.path) {
                Some(Res::Item(_, _, ItemDef::Struct(d))) => (d.name.clone(), None, d.fields.clone()),
                Some(Res::Variant(e, k)) => (e.name.clone(), Some(e.variants[k].0.clone()), e.variants[k].1.clone()),
                _ => return self.stop(s.span(), format!("struct `{}`, which the script does not define", segs.join("::"))),
            }
        };
        let mut fields: Vec<(Rc<str>, V)> = Vec::new();
        for f in &s.fields {
            let name = match &f.member {
                syn::Member::Named(i) => i.to_string(),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            let v = self.eval_expr(&f.expr, scope)?;
            fields.push((Rc::from(name.as_str()), v));
        }
        if let Some(rest) = &s.rest {
            let base = self.eval_expr(rest, scope)?;
            if let V::Adt(b) = deref(&base) {
                for (n, v) in &b.fields {
                    if !fields.iter().any(|(x, _)| x == n) {
                        fields.push((n.clone(), v.clone()));
                    }
                }
            }
        }
        // Field order as declared.
        if !names.is_empty() {
            fields.sort_by_key(|(n, _)| names.iter().position(|x| x == n).unwrap_or(usize::MAX));
        }
        Ok(V::Adt(Rc::new(Adt { ty, variant, fields, tuple: false })))
    }

    fn eval_call(&mut self, c: &syn::ExprCall, scope: &Rc<Scope>, hint: Option<&syn::Type>) -> R<V> {
        let span = c.span();
        // A path call: resolve the path first (a local closure shadows).
        if let Expr::Path(p) = &*c.func {
            let is_local = p.path.segments.len() == 1 && scope.get(&p.path.segments[0].ident.to_string()).is_some();
            if !is_local {
                let mut args = Vec::new();
                for a in &c.args {
                    args.push(self.eval_expr(a, scope)?);
                }
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                // Turbofish / qualified self type (`<T>::f`) carries the type for some calls.
                let turbofish = p.path.segments.iter().find_map(|s| match &s.arguments {
                    syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| if let syn::GenericArgument::Type(t) = g { Some(t.clone()) } else { None }),
                    _ => None,
                });
                let hint = turbofish.as_ref().or(hint);
                if let Some(q) = &p.qself {
                    // `<T as Trait>::f(x)`: the trait method on the first argument.
                    let name = segs.last().cloned().unwrap_or_default();
                    let _ = q;
                    if let Some(first) = args.first().cloned() {
                        let rest = args[1..].to_vec();
                        return self.call_method_value(first, None, &name, rest, span, hint);
                    }
                    return self.stop(span, format!("`<..>::{name}`"));
                }
                let r = if segs.first().map(String::as_str) == Some("Self") {
                    let Some(ty) = self.self_ty.clone() else { return self.stop(span, "`Self` outside an impl") };
                    let mut full = vec![ty.to_string()];
                    full.extend(segs[1..].iter().cloned());
                    self.script.resolve(self.module, &full, &self.deps).or_else(|| self.script.resolve(0, &full, &self.deps))
                } else if p.path.leading_colon.is_some() {
                    if segs.first().is_some_and(|f| matches!(f.as_str(), "std" | "core" | "alloc")) {
                        Some(Res::Ext(canonical(&segs)))
                    } else {
                        self.deps.get(&segs[0]).map(|k| {
                            let mut full = vec![k.clone()];
                            full.extend(segs[1..].iter().cloned());
                            Res::Ext(full.join("::"))
                        })
                    }
                } else if segs.len() == 1 && scope.get(&format!("fn {}", segs[0])).is_some() {
                    let v = scope.get(&format!("fn {}", segs[0])).unwrap().borrow().clone();
                    let V::Int(i) = v else { return self.stop(span, "a local function") };
                    let f = self.local_fns[i as usize].clone();
                    return self.call_fn(&f, args, None);
                } else {
                    self.resolve_segs(&segs, Some(scope))
                };
                return match r {
                    Some(Res::Item(m, name, ItemDef::Fn(_))) => {
                        let f = match self.script.modules[m].items.get(&name) {
                            Some(ItemDef::Fn(f)) => f.clone(),
                            _ => unreachable!(),
                        };
                        self.call_fn(&f, args, None)
                    }
                    Some(Res::Item(_, _, ItemDef::Struct(s))) => {
                        Ok(V::Adt(Rc::new(Adt { ty: s.name.clone(), variant: None, fields: args.into_iter().enumerate().map(|(i, v)| (Rc::from(i.to_string().as_str()), v)).collect(), tuple: true })))
                    }
                    Some(Res::Variant(e, k)) => Ok(V::Adt(Rc::new(Adt { ty: e.name.clone(), variant: Some(e.variants[k].0.clone()), fields: args.into_iter().enumerate().map(|(i, v)| (Rc::from(i.to_string().as_str()), v)).collect(), tuple: true }))),
                    Some(Res::Method(f)) => {
                        // `Type::method(recv, args)` or an associated function.
                        let takes_self = matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
                        if takes_self {
                            let mut it = args.into_iter();
                            let recv = it.next().unwrap_or(V::Unit);
                            self.call_fn(&f, it.collect(), Some(recv))
                        } else {
                            self.call_fn(&f, args, None)
                        }
                    }
                    Some(Res::Ext(path)) => self.call_ext(&path, args, span, hint),
                    Some(Res::Item(_, name, _)) => self.stop(span, format!("a call of `{name}`")),
                    None => {
                        // A method of a user type named through a type the resolver did not
                        // see (`Self::f` in a trait default).
                        self.stop(span, format!("a call of `{}`, which the script does not define", segs.join("::")))
                    }
                };
            }
        }
        let f = self.eval_expr(&c.func, scope)?;
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.eval_expr(a, scope)?);
        }
        self.call_value(&f, args, span)
    }

    fn eval_method_call(&mut self, m: &syn::ExprMethodCall, scope: &Rc<Scope>, hint: Option<&syn::Type>) -> R<V> {
        let name = m.method.to_string();
        let span = m.method.span();
        let turbofish = m.turbofish.as_ref().and_then(|t| t.args.iter().find_map(|g| if let syn::GenericArgument::Type(t) = g { Some(t.clone()) } else { None }));
        let hint = turbofish.as_ref().or(hint);
        // The receiver as a place when the method may change it.
        let place = if super::library::mutating(&name) { self.place_of(&m.receiver, scope)? } else { None };
        let recv = match &place {
            Some(p) => deref_place(p),
            None => {
                // Hints pass through `.unwrap()`-like calls to the call that makes the value.
                let inner_hint = if matches!(name.as_str(), "unwrap" | "expect" | "unwrap_or" | "unwrap_or_default" | "unwrap_or_else" | "ok" | "into") { hint } else { None };
                self.eval_expr_hint(&m.receiver, scope, inner_hint)?
            }
        };
        let mut args = Vec::new();
        for a in &m.args {
            args.push(self.eval_expr(a, scope)?);
        }
        self.call_method_value(recv, place, &name, args, span, hint)
    }

    /// A method call on a value (and the place it is in, for mutating methods).
    pub fn call_method_value(&mut self, recv: V, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
        // Through references to the place they point at.
        let (recv, place) = match (&recv, place) {
            (V::Ref(p), _) => (deref_place(p), Some((**p).clone())),
            (_, pl) => (recv, pl),
        };
        // Growing a string or a list in place: without a second reference to the value, so
        // that it is not copied on every push.
        if let Some(p) = &place {
            let fast = matches!((name, &recv), ("push" | "push_str" | "pop", V::Str(_) | V::Vec(_) | V::Bytes(_)) | ("insert", V::Map(..)));
            if fast {
                drop(recv);
                if let Some(v) = self.push_in_place(p, name, args.first().cloned().unwrap_or(V::Unit), args.get(1).cloned().unwrap_or(V::Unit), span)? {
                    return Ok(v);
                }
                let recv = deref_place(p);
                return super::library::method(self, recv, place, name, args, span, hint);
            }
        }
        // A method of a user type.
        if let V::Adt(a) = &recv {
            let key = (a.ty.clone(), name.to_string());
            if let Some(f) = self.script.methods.get(&key).cloned() {
                let self_val = match (&place, f.sig.inputs.first()) {
                    (Some(p), Some(syn::FnArg::Receiver(r))) if r.mutability.is_some() => V::Ref(Rc::new(p.clone())),
                    _ => recv.clone(),
                };
                return self.call_fn(&f, args, Some(self_val));
            }
            if let Some(f) = self.script.trait_defaults.get(name).cloned() {
                return self.call_fn(&f, args, Some(recv.clone()));
            }
        }
        super::library::method(self, recv, place, name, args, span, hint)
    }

    /// `push`/`push_str`/`pop` on a string or a list, `insert` into a map, held at `p`,
    /// changed in place: `None` when it is not that case.
    pub fn push_in_place(&mut self, p: &Place, name: &str, arg: V, args2: V, span: Span) -> R<Option<V>> {
        let arg = deref(&arg);
        let (max_s, max_n) = (self.budget.max_string, self.budget.max_items);
        let grow = match &arg {
            V::Str(a) => a.len(),
            _ => std::mem::size_of::<V>() * 2,
        };
        self.spend(grow, span)?;
        let mut done = false;
        let mut ret = V::Unit;
        let arg2 = deref(&args2);
        self.modify_place(p, span, &mut |slot| {
            match (slot, name, &arg) {
                (V::Vec(v), "pop", _) => ret = V::Option(Rc::make_mut(v).pop().map(Rc::new)),
                (V::Str(s), "pop", _) => ret = V::Option(Rc::make_mut(s).pop().map(|c| Rc::new(V::Char(c)))),
                (V::Bytes(b), "pop", _) => ret = V::Option(Rc::make_mut(b).pop().map(|c| Rc::new(V::Int(c as i128)))),
                (V::Map(m, set), "insert", k) => {
                    let Some(key) = key_of(k) else { return Ok(()) };
                    let set = *set;
                    let m = Rc::make_mut(m);
                    if m.len() + 1 > max_n {
                        return Err(format!("a collection of more than {max_n} items"));
                    }
                    let old = m.insert(key, (k.clone(), if set { V::Unit } else { arg2.clone() }));
                    ret = if set { V::Bool(old.is_none()) } else { V::Option(old.map(|(_, v)| Rc::new(v))) };
                }
                (V::Str(s), "push_str", V::Str(a)) => {
                    if s.len() + a.len() > max_s {
                        return Err(format!("a string of more than {max_s} bytes"));
                    }
                    Rc::make_mut(s).push_str(a);
                }
                (V::Str(s), "push", V::Char(c)) => {
                    if s.len() + 4 > max_s {
                        return Err(format!("a string of more than {max_s} bytes"));
                    }
                    Rc::make_mut(s).push(*c);
                }
                (V::Vec(v), "push", x) => {
                    if v.len() + 1 > max_n {
                        return Err(format!("a collection of more than {max_n} items"));
                    }
                    Rc::make_mut(v).push(x.clone());
                }
                (V::Bytes(b), "push", V::Int(i)) if (0..256).contains(i) => {
                    if b.len() + 1 > max_n {
                        return Err(format!("a collection of more than {max_n} items"));
                    }
                    Rc::make_mut(b).push(*i as u8);
                }
                _ => return Ok(()),
            }
            done = true;
            Ok(())
        })?;
        Ok(done.then_some(ret))
    }

    /// The place an expression denotes, when it is one.
    pub fn place_of(&mut self, e: &Expr, scope: &Rc<Scope>) -> R<Option<Place>> {
        match e {
            Expr::Path(p) if p.path.segments.len() == 1 && p.qself.is_none() => {
                let name = p.path.segments[0].ident.to_string();
                if let Some(c) = scope.get_id(&p.path.segments[0].ident) {
                    // A variable holding a reference is the place it points at.
                    let v = c.borrow().clone();
                    if let V::Ref(inner) = v {
                        return Ok(Some((*inner).clone()));
                    }
                    return Ok(Some(Place::Var(c)));
                }
                // A static.
                if let Some(Res::Item(m, n, ItemDef::Static(..))) = self.script.resolve(self.module, &[name], &self.deps) {
                    let c = self.static_cell(m, &n, e.span())?;
                    return Ok(Some(Place::Var(c)));
                }
                Ok(None)
            }
            Expr::Field(f) => {
                let Some(base) = self.place_of(&f.base, scope)? else { return Ok(None) };
                let name = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                // Through a reference held in the field's parent.
                let base = match deref_place(&base) {
                    V::Ref(inner) => (*inner).clone(),
                    _ => base,
                };
                Ok(Some(Place::Field(Rc::new(base), Rc::from(name.as_str()))))
            }
            Expr::Index(ix) => {
                let Some(base) = self.place_of(&ix.expr, scope)? else { return Ok(None) };
                let base = match deref_place(&base) {
                    V::Ref(inner) => (*inner).clone(),
                    _ => base,
                };
                let i = self.eval_expr(&ix.index, scope)?;
                match (deref_place(&base), deref(&i)) {
                    (V::Vec(_), V::Int(i)) if i >= 0 => Ok(Some(Place::Index(Rc::new(base), i as usize))),
                    (V::Adt(a), i) => {
                        // `IndexMut` of a user type.
                        if let Some(f) = self.script.methods.get(&(a.ty.clone(), "index_mut".to_string())).cloned() {
                            let r = self.call_fn(&f, vec![i], Some(V::Ref(Rc::new(base))))?;
                            if let V::Ref(p) = r {
                                return Ok(Some((*p).clone()));
                            }
                        }
                        self.stop(e.span(), "an index into a user type")
                    }
                    _ => Ok(None),
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let v = self.eval_expr(&u.expr, scope)?;
                match v {
                    V::Ref(p) => Ok(Some((*p).clone())),
                    _ => self.place_of(&u.expr, scope),
                }
            }
            Expr::Paren(p) => self.place_of(&p.expr, scope),
            Expr::MethodCall(mc) if matches!(mc.method.to_string().as_str(), "unwrap" | "borrow_mut" | "as_mut" | "get_mut" | "last_mut" | "first_mut" | "index_mut") => {
                let v = self.eval_expr(e, scope)?;
                match v {
                    V::Ref(p) => Ok(Some((*p).clone())),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    pub fn assign(&mut self, target: &Expr, v: V, scope: &Rc<Scope>) -> R<()> {
        if let Expr::Infer(_) = target {
            return Ok(());
        }
        if let Expr::Tuple(t) = target {
            let items = match deref(&v) {
                V::Tuple(items) => items.to_vec(),
                other => return self.stop(target.span(), format!("destructuring {}", other.kind_name())),
            };
            for (e, x) in t.elems.iter().zip(items) {
                self.assign(e, x, scope)?;
            }
            return Ok(());
        }
        match self.place_of(target, scope)? {
            Some(p) => self.write_place(&p, v, target.span()),
            None => self.stop(target.span(), "an assignment to this place"),
        }
    }

    /// Write `v` into place `p`.
    pub fn write_place(&mut self, p: &Place, v: V, span: Span) -> R<()> {
        self.modify_place(p, span, &mut |slot| {
            *slot = v.clone();
            Ok(())
        })
    }

    /// Change the value in place `p` with `f`.
    pub fn modify_place(&mut self, p: &Place, span: Span, f: &mut dyn FnMut(&mut V) -> Result<(), String>) -> R<()> {
        match p {
            Place::Var(c) => {
                let mut slot = c.borrow_mut();
                if let V::Ref(inner) = &*slot {
                    let inner = inner.clone();
                    drop(slot);
                    return self.modify_place(&inner, span, f);
                }
                f(&mut slot).map_err(|e| Flow::Stop(format!("{}: {e}", self.at(span))))
            }
            Place::Field(parent, name) => {
                let name = name.clone();
                self.modify_place(parent, span, &mut |pv| {
                    let mut cur = std::mem::replace(pv, V::Unit);
                    let r = match &mut cur {
                        // A child's stdin handle is not kept.
                        V::Obj(o) if matches!(&**o, Obj::Child(_)) && &*name == "stdin" => {
                            let mut tmp = V::Unit;
                            f(&mut tmp)
                        }
                        V::Adt(a) => {
                            let a = Rc::make_mut(a);
                            match a.fields.iter_mut().find(|(n, _)| *n == name) {
                                Some((_, slot)) => f(slot),
                                None => Err(format!("no field `{name}`")),
                            }
                        }
                        V::Tuple(t) => {
                            let t = Rc::make_mut(t);
                            match name.parse::<usize>().ok().and_then(|i| t.get_mut(i)) {
                                Some(slot) => f(slot),
                                None => Err(format!("no field `{name}`")),
                            }
                        }
                        other => Err(format!("field `{name}` of {}", other.kind_name())),
                    };
                    *pv = cur;
                    r
                })
            }
            Place::Index(parent, i) => {
                let i = *i;
                self.modify_place(parent, span, &mut |pv| {
                    let mut cur = std::mem::replace(pv, V::Unit);
                    let r = match &mut cur {
                        V::Vec(v) => {
                            let v = Rc::make_mut(v);
                            match v.get_mut(i) {
                                Some(slot) => f(slot),
                                None => Err(format!("index {i} out of bounds")),
                            }
                        }
                        other => Err(format!("an index into {}", other.kind_name())),
                    };
                    *pv = cur;
                    r
                })
            }
            Place::MapKey(parent, k) => {
                let k = k.clone();
                self.modify_place(parent, span, &mut |pv| {
                    let mut cur = std::mem::replace(pv, V::Unit);
                    let r = match &mut cur {
                        V::Map(m, _) => {
                            let m = Rc::make_mut(m);
                            match m.get_mut(&k) {
                                Some((_, slot)) => f(slot),
                                None => Err("a key not in the map".to_string()),
                            }
                        }
                        other => Err(format!("a key of {}", other.kind_name())),
                    };
                    *pv = cur;
                    r
                })
            }
        }
    }

    pub fn index(&mut self, base: V, idx: V, span: Span) -> R<V> {
        let base = deref(&base);
        let idx = deref(&idx);
        match (&base, &idx) {
            (V::Unknown(u), _) | (_, V::Unknown(u)) => Ok(V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Any }))),
            (V::Vec(v), V::Int(i)) => match usize::try_from(*i).ok().and_then(|i| v.get(i)) {
                Some(x) => Ok(x.clone()),
                None => Err(Flow::Fail(format!("{}: index out of bounds", self.at(span)))),
            },
            (V::Bytes(b), V::Int(i)) => match usize::try_from(*i).ok().and_then(|i| b.get(i)) {
                Some(x) => Ok(V::Int(*x as i128)),
                None => Err(Flow::Fail(format!("{}: index out of bounds", self.at(span)))),
            },
            (V::Vec(v), V::Range(a, b, incl)) => {
                let (a, b) = range_bounds(*a, *b, *incl, v.len());
                match v.get(a..b) {
                    Some(s) => Ok(V::vec(s.to_vec())),
                    None => Err(Flow::Fail(format!("{}: range out of bounds", self.at(span)))),
                }
            }
            (V::Bytes(v), V::Range(a, b, incl)) => {
                let (a, b) = range_bounds(*a, *b, *incl, v.len());
                match v.get(a..b) {
                    Some(s) => Ok(V::Bytes(Rc::new(s.to_vec()))),
                    None => Err(Flow::Fail(format!("{}: range out of bounds", self.at(span)))),
                }
            }
            (V::Str(s), V::Range(a, b, incl)) => {
                let (a, b) = range_bounds(*a, *b, *incl, s.len());
                match s.get(a..b) {
                    Some(t) => Ok(V::str(t)),
                    None => Err(Flow::Fail(format!("{}: string slice out of bounds", self.at(span)))),
                }
            }
            (V::Sym(s), V::Range(a, b, incl)) => {
                // Slicing within the known prefix.
                let pre = known_prefix(s);
                let (a2, b2) = range_bounds(*a, *b, *incl, usize::MAX);
                if b.is_some() && b2 <= pre.len() {
                    return match pre.get(a2..b2) {
                        Some(t) => Ok(V::str(t)),
                        None => Err(Flow::Fail(format!("{}: string slice out of bounds", self.at(span)))),
                    };
                }
                Ok(V::unknown("a slice of a string with unknown parts", Kind::Str))
            }
            (V::Map(m, _), k) => {
                let Some(key) = key_of(k) else { return self.stop(span, "a map key that is not known") };
                match m.get(&key) {
                    Some((_, v)) => Ok(v.clone()),
                    None => Err(Flow::Fail(format!("{}: key not in map", self.at(span)))),
                }
            }
            (V::Adt(a), _) => {
                if let Some(f) = self.script.methods.get(&(a.ty.clone(), "index".to_string())).cloned() {
                    let r = self.call_fn(&f, vec![idx.clone()], Some(base.clone()))?;
                    return Ok(deref(&r));
                }
                self.stop(span, "an index into a user type")
            }
            _ => self.stop(span, format!("an index into {} with {}", base.kind_name(), idx.kind_name())),
        }
    }

    pub fn field(&mut self, base: &V, member: &syn::Member, span: Span) -> R<V> {
        let name = match member {
            syn::Member::Named(i) => i.to_string(),
            syn::Member::Unnamed(i) => i.index.to_string(),
        };
        match deref(base) {
            V::Adt(a) => match a.fields.iter().find(|(n, _)| **n == *name) {
                Some((_, v)) => Ok(v.clone()),
                None => self.stop(span, format!("field `{name}`")),
            },
            V::Tuple(t) => match name.parse::<usize>().ok().and_then(|i| t.get(i)) {
                Some(v) => Ok(v.clone()),
                None => self.stop(span, format!("field `{name}`")),
            },
            V::Obj(o) => match (&*o, name.as_str()) {
                (Obj::Output { stdout, .. }, "stdout") => Ok(stdout.clone()),
                (Obj::Output { stderr, .. }, "stderr") => Ok(stderr.clone()),
                (Obj::Output { success, .. }, "status") => Ok(V::obj(Obj::Status(success.clone()))),
                (Obj::Version(a, ..), "major") => Ok(a.clone()),
                (Obj::Version(_, b, _), "minor") => Ok(b.clone()),
                (Obj::Version(_, _, c), "patch") => Ok(c.clone()),
                (Obj::VersionMeta, "channel") => Ok(V::obj(Obj::Channel(self.input.toolchain.channel_value()))),
                (Obj::VersionMeta, "semver") => Ok(self.input.toolchain.version_obj()),
                (Obj::Version(..), "pre") => Ok(V::str("")),
                (Obj::Child(_), "stdin") => Ok(V::some(V::obj(Obj::ChildStdin))),
                _ => self.stop(span, format!("field `{name}` of a library value")),
            },
            V::Unknown(u) => Ok(V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Any }))),
            other => self.stop(span, format!("field `{name}` of {}", other.kind_name())),
        }
    }

    /// What a `for` loop iterates over.
    pub fn into_items(&mut self, v: V, span: Span) -> R<Vec<V>> {
        match deref(&v) {
            V::Range(a, b, incl) => {
                let Some(a) = a else { return self.stop(span, "a range without a start") };
                let Some(b) = b else { return self.stop(span, "an endless range") };
                let end = if incl { b + 1 } else { b };
                let n = (end - a).max(0);
                self.new_items(n as usize, span)?;
                Ok((a..end).map(V::Int).collect())
            }
            V::Vec(items) => Ok(items.to_vec()),
            V::Bytes(b) => Ok(b.iter().map(|x| V::Int(*x as i128)).collect()),
            V::Iter(it) => {
                let items: Vec<V> = it.borrow_mut().drain(..).collect();
                if items.last().is_some_and(is_rest) {
                    return self.stop(span, "a loop over an unknown number of items");
                }
                Ok(items)
            }
            V::Option(o) => Ok(o.map(|x| (*x).clone()).into_iter().collect()),
            V::Map(m, set) => Ok(m.values().map(|(k, v)| if set { k.clone() } else { V::Tuple(Rc::new(vec![k.clone(), v.clone()])) }).collect()),
            V::Result(Ok(x)) => Ok(vec![(*x).clone()]),
            V::Result(Err(_)) => Ok(Vec::new()),
            V::Unknown(u) => self.stop(span, format!("a loop over values that depend on {}", u.origin)),
            other => self.stop(span, format!("a loop over {}", other.kind_name())),
        }
    }

    fn cast(&mut self, v: V, ty: &syn::Type, span: Span) -> R<V> {
        let t = type_name(ty).unwrap_or_default();
        let v = deref(&v);
        let bits = |t: &str| -> Option<(u32, bool)> {
            Some(match t {
                "u8" => (8, false),
                "u16" => (16, false),
                "u32" => (32, false),
                "u64" => (64, false),
                "usize" => (self.input.pointer_width, false),
                "u128" => (128, false),
                "i8" => (8, true),
                "i16" => (16, true),
                "i32" => (32, true),
                "i64" => (64, true),
                "isize" => (self.input.pointer_width, true),
                "i128" => (128, true),
                _ => return None,
            })
        };
        match (&v, t.as_str()) {
            (V::Unknown(_), _) => Ok(v),
            (V::Int(i), t) if bits(t).is_some() => Ok(V::Int(truncate(*i, bits(t).unwrap()))),
            (V::Char(c), t) if bits(t).is_some() => Ok(V::Int(truncate(*c as i128, bits(t).unwrap()))),
            (V::Bool(b), t) if bits(t).is_some() => Ok(V::Int(*b as i128)),
            (V::Float(f), t) if bits(t).is_some() => Ok(V::Int(truncate(*f as i128, bits(t).unwrap()))),
            (V::Int(i), "f32" | "f64") => Ok(V::Float(*i as f64)),
            (V::Float(_), "f32" | "f64") => Ok(v),
            (V::Int(i), "char") => Ok(V::Char(char::from_u32(*i as u32).unwrap_or('\u{fffd}'))),
            (V::Adt(a), t) if bits(t).is_some() && a.variant.is_some() => {
                // An enum's discriminant.
                let def = self.script.resolve(self.module, &[a.ty.to_string()], &self.deps).or_else(|| self.script.resolve(0, &[a.ty.to_string()], &self.deps));
                if let Some(Res::Item(_, _, ItemDef::Enum(e))) = def {
                    if let Some((_, _, _, Some(d))) = e.variants.iter().find(|(n, ..)| Some(n) == a.variant.as_ref()) {
                        return Ok(V::Int(*d));
                    }
                }
                self.stop(span, "a cast of an enum the script does not define")
            }
            _ => self.stop(span, format!("a cast of {} to `{t}`", v.kind_name())),
        }
    }

    /// Make a value fit a declared type: strings stay strings; a collected list becomes a
    /// string when a `String` is wanted.
    pub fn coerce(&mut self, v: V, ty: &syn::Type) -> V {
        let t = type_name(ty).unwrap_or_default();
        match (&v, t.as_str()) {
            // An unknown value of a declared type: of that kind.
            (V::Unknown(u), t) if u.kind == Kind::Any && super::library::int_bits(t, 64).is_some() => V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Int })),
            (V::Unknown(u), "bool") if u.kind == Kind::Any => V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Bool })),
            (V::Unknown(u), "String") if u.kind == Kind::Any => V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Str })),
            (V::Iter(_), "String") | (V::Vec(_), "String") => {
                let items = match &v {
                    V::Iter(it) => it.borrow().iter().cloned().collect::<Vec<_>>(),
                    V::Vec(x) => x.to_vec(),
                    _ => Vec::new(),
                };
                let mut segs = Vec::new();
                for x in items {
                    match deref(&x) {
                        V::Char(c) => segs.push(Seg::Lit(c.to_string())),
                        other => match segs_of(&other) {
                            Some(s) => segs.extend(s),
                            None => return v,
                        },
                    }
                }
                V::from_segs(segs)
            }
            _ => v,
        }
    }
}

/// How many values make up `v`, counted up to `cap`: the work of walking it.
pub fn size_of_value(v: &V, cap: usize) -> usize {
    fn go(v: &V, left: &mut usize) {
        if *left == 0 {
            return;
        }
        *left -= 1;
        match v {
            V::Vec(items) | V::Tuple(items) => items.iter().for_each(|x| go(x, left)),
            V::Adt(a) => a.fields.iter().for_each(|(_, x)| go(x, left)),
            V::Map(m, _) => m.values().for_each(|(k, x)| {
                go(k, left);
                go(x, left)
            }),
            V::Option(Some(x)) | V::Result(Ok(x)) | V::Result(Err(x)) => go(x, left),
            V::Str(s) => *left = left.saturating_sub(s.len() / 64),
            V::Bytes(b) => *left = left.saturating_sub(b.len() / 64),
            _ => {}
        }
    }
    let mut left = cap;
    go(v, &mut left);
    cap - left
}

/// Whether a value has unknown parts.
fn has_unknown(v: &V) -> bool {
    match deref(v) {
        V::Unknown(_) | V::Sym(_) => true,
        V::Tuple(t) | V::Vec(t) => t.iter().any(has_unknown),
        V::Option(Some(x)) => has_unknown(&x),
        V::Result(Ok(x)) | V::Result(Err(x)) => has_unknown(&x),
        V::Adt(a) => a.fields.iter().any(|(_, x)| has_unknown(x)),
        V::Obj(o) => match &*o {
            Obj::Version(a, b, c) => has_unknown(a) || has_unknown(b) || has_unknown(c),
            Obj::Channel(c) => has_unknown(c),
            _ => false,
        },
        _ => false,
    }
}

fn truncate(i: i128, (bits, signed): (u32, bool)) -> i128 {
    if bits >= 128 {
        return i;
    }
    let mask = (1i128 << bits) - 1;
    let u = i & mask;
    if signed && u >> (bits - 1) & 1 == 1 { u - (1i128 << bits) } else { u }
}

pub fn range_bounds(a: Option<i128>, b: Option<i128>, incl: bool, len: usize) -> (usize, usize) {
    let a = a.unwrap_or(0).max(0) as usize;
    let b = match b {
        Some(b) => (if incl { b + 1 } else { b }).max(0) as usize,
        None => len,
    };
    (a, b)
}

fn returns_option(out: &syn::ReturnType) -> bool {
    match out {
        syn::ReturnType::Type(_, t) => type_name(t).as_deref() == Some("Option"),
        _ => false,
    }
}

fn contains_let(e: &Expr) -> bool {
    match e {
        Expr::Let(_) => true,
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => contains_let(&b.left) || contains_let(&b.right),
        Expr::Paren(p) => contains_let(&p.expr),
        _ => false,
    }
}

fn pat_names(p: &Pat, out: &mut Vec<String>) {
    match p {
        Pat::Ident(i) => out.push(i.ident.to_string()),
        Pat::Type(t) => pat_names(&t.pat, out),
        Pat::Tuple(t) => t.elems.iter().for_each(|x| pat_names(x, out)),
        _ => {}
    }
}

fn pat_type(p: &Pat) -> Option<syn::Type> {
    match p {
        Pat::Type(t) => Some((*t.ty).clone()),
        _ => None,
    }
}

pub fn expr_attrs(e: &Expr) -> &[syn::Attribute] {
    match e {
        Expr::Block(b) => &b.attrs,
        Expr::If(i) => &i.attrs,
        Expr::Call(c) => &c.attrs,
        Expr::MethodCall(m) => &m.attrs,
        Expr::Macro(m) => &m.attrs,
        Expr::Match(m) => &m.attrs,
        Expr::ForLoop(f) => &f.attrs,
        Expr::Assign(a) => &a.attrs,
        _ => &[],
    }
}

/// Clip text shown in a reason.
pub fn clip(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
}

/// Parse tokens of a macro's input as comma-separated expressions.
pub fn parse_args(tokens: &TokenStream) -> Result<Vec<Expr>, syn::Error> {
    use syn::parse::Parser;
    let p = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
    Ok(p.parse2(tokens.clone())?.into_iter().collect())
}
