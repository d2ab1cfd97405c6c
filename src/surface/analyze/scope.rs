//! Name resolution: per-module scopes built from items and `use` trees, and the resolution
//! of a path (as written in some module, under some block scopes) to what it names.
//!
//! Order for the first segment of a path, as rustc does it: block-level items and imports
//! (innermost block first), then the module's own items and imports, then its glob imports,
//! then the extern prelude (`deps`, `std`, `core`, `alloc`, root `extern crate`s, the crate's
//! own name), then a few std prelude names (only `String`/`str` matter, for method types). So
//! a local `mod fs` or `fn write` shadows anything imported by glob and any extern crate.
//!
//! A glob import of an external module (`use std::fs::*`) cannot be enumerated: a name that
//! is not found otherwise is tried under the glob's prefix, and accepted only if the rules
//! know the resulting path *because of that name* (the path's verdict differs from the one
//! of an unknown name under the same prefix). So `write` becomes `std::fs::write` while
//! `String` stays unresolved.
//!
//! 2015-edition paths: a `use` path (or `::x` path) that fails to resolve from its module
//! is retried from the crate root, which is what it meant in 2015.

use syn::ext::IdentExt;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use syn::{Item, UseTree};

use super::Exports;
use super::loader::{Entry, ModId, Module, ROOT};
use super::macros::{Expander, MacroRef, Textual};
use super::summary::{MAX_SUMMARIES, Summary};
use super::oracle::{CfgEval, RuleSource};

/// A trait's methods (required and provided) and the ids of its supertraits: which calls on
/// a value known by the trait are calls through it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraitShape {
    pub methods: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supers: Vec<String>,
}

/// A path as written: `::a::b` has `leading`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsePath {
    pub leading: bool,
    pub segs: Vec<String>,
}

impl UsePath {
    pub fn from_path(p: &syn::Path) -> UsePath {
        UsePath {
            leading: p.leading_colon.is_some(),
            segs: p.segments.iter().map(|s| s.ident.unraw().to_string()).collect(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum BindKind {
    /// A child module.
    Mod(ModId),
    /// A foreign item; the symbol is its `#[link_name]` or name.
    Foreign(String),
    /// `type X = path;`
    Alias(UsePath),
    /// Any other item defined here.
    Item,
    Import(UsePath),
    /// `extern crate x as name;`: x.
    ExternCrate(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub kind: BindKind,
    pub public: bool,
}

/// The names a module or a block defines or imports.
#[derive(Debug, Default)]
pub(crate) struct NameScope {
    pub names: HashMap<String, Binding>,
    /// A second binding of a name already in `names`, from the other namespace: a function
    /// or its import beside a module of the same name (tokio's `mod write; pub use
    /// self::write::write;`). The last segment of a path in an expression prefers it.
    pub values: HashMap<String, Binding>,
    /// `use path::*`, with whether it is `pub`.
    pub globs: Vec<(UsePath, bool)>,
    /// `use path as _` (traits brought into scope).
    pub anon: Vec<UsePath>,
}

impl NameScope {
    fn insert(&mut self, name: String, b: Binding) {
        use std::collections::hash_map::Entry as E;
        match self.names.entry(name) {
            E::Vacant(v) => {
                v.insert(b);
            }
            // Items defined here win over imports of the same name; the other one is kept as
            // the name's binding in the other namespace.
            E::Occupied(mut o) => {
                let old_import = matches!(o.get().kind, BindKind::Import(_) | BindKind::ExternCrate(_));
                let new_def = !matches!(b.kind, BindKind::Import(_) | BindKind::ExternCrate(_));
                let loser = if old_import && new_def { o.insert(b) } else { b };
                let key = o.key().clone();
                let module_or_type = |k: &BindKind| matches!(k, BindKind::Mod(_) | BindKind::Alias(_) | BindKind::ExternCrate(_));
                if !module_or_type(&loser.kind) {
                    self.values.entry(key).or_insert(loser);
                }
            }
        }
    }

    /// Add what `item` brings into scope. Module items (`mod x`) are added by the caller,
    /// which knows their ids; a `mod` inside a block is a plain item.
    pub fn add_item(&mut self, item: &Item, cfg: &dyn CfgEval) {
        let public = |v: &syn::Visibility| matches!(v, syn::Visibility::Public(_));
        let def = |s: &mut NameScope, ident: &syn::Ident, vis: &syn::Visibility| {
            s.insert(ident.unraw().to_string(), Binding { kind: BindKind::Item, public: public(vis) });
        };
        match item {
            Item::Use(u) => {
                let mut leaves = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                let leading = u.leading_colon.is_some();
                for leaf in leaves {
                    match leaf {
                        UseLeaf::Name(name, segs) => self.insert(
                            name,
                            Binding {
                                kind: BindKind::Import(UsePath { leading, segs }),
                                public: public(&u.vis),
                            },
                        ),
                        UseLeaf::Glob(segs) => self.globs.push((UsePath { leading, segs }, public(&u.vis))),
                        UseLeaf::Anon(segs) => self.anon.push(UsePath { leading, segs }),
                    }
                }
            }
            Item::ExternCrate(e) => {
                let name = e.rename.as_ref().map_or(&e.ident, |(_, r)| r).unraw().to_string();
                if name != "_" {
                    self.insert(
                        name,
                        Binding { kind: BindKind::ExternCrate(e.ident.unraw().to_string()), public: public(&e.vis) },
                    );
                }
            }
            Item::Type(t) => {
                let kind = match &*t.ty {
                    syn::Type::Path(p) if p.qself.is_none() => BindKind::Alias(UsePath::from_path(&p.path)),
                    _ => BindKind::Item,
                };
                self.insert(t.ident.unraw().to_string(), Binding { kind, public: public(&t.vis) });
            }
            Item::ForeignMod(fm) => {
                for fi in &fm.items {
                    let fi = &*super::attrs::unsafe_extern_item(fi);
                    if !super::attrs::holds(super::attrs::foreign_item_attrs(fi), cfg) {
                        continue;
                    }
                    let (ident, attrs, vis) = match fi {
                        syn::ForeignItem::Fn(f) => (&f.sig.ident, &f.attrs, &f.vis),
                        syn::ForeignItem::Static(s) => (&s.ident, &s.attrs, &s.vis),
                        syn::ForeignItem::Type(t) => {
                            def(self, &t.ident, &t.vis);
                            continue;
                        }
                        _ => continue,
                    };
                    let attrs = super::attrs::effective(attrs, cfg);
                    let symbol = super::attrs::str_value(&attrs, "link_name").map_or_else(|| ident.unraw().to_string(), |(s, _)| s);
                    self.insert(ident.unraw().to_string(), Binding { kind: BindKind::Foreign(symbol), public: public(vis) });
                }
            }
            Item::Fn(f) => def(self, &f.sig.ident, &f.vis),
            Item::Struct(s) => def(self, &s.ident, &s.vis),
            Item::Enum(s) => def(self, &s.ident, &s.vis),
            Item::Union(s) => def(self, &s.ident, &s.vis),
            Item::Const(s) => def(self, &s.ident, &s.vis),
            Item::Static(s) => def(self, &s.ident, &s.vis),
            Item::Trait(s) => def(self, &s.ident, &s.vis),
            Item::TraitAlias(s) => def(self, &s.ident, &s.vis),
            Item::Mod(s) => def(self, &s.ident, &s.vis),
            _ => {}
        }
    }
}

/// One name a `use` tree binds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UseLeaf {
    /// `name` → full path.
    Name(String, Vec<String>),
    Glob(Vec<String>),
    /// `as _`
    Anon(Vec<String>),
}

pub(crate) fn flatten_use(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            if n.ident == "self" {
                // `use a::b::{self}` binds `b`.
                if let Some(last) = prefix.last() {
                    out.push(UseLeaf::Name(last.clone(), prefix.clone()));
                }
            } else {
                let mut segs = prefix.clone();
                segs.push(n.ident.unraw().to_string());
                out.push(UseLeaf::Name(n.ident.unraw().to_string(), segs));
            }
        }
        UseTree::Rename(r) => {
            let mut segs = prefix.clone();
            if r.ident != "self" {
                segs.push(r.ident.unraw().to_string());
            }
            if r.rename == "_" {
                out.push(UseLeaf::Anon(segs));
            } else {
                out.push(UseLeaf::Name(r.rename.to_string(), segs));
            }
        }
        UseTree::Glob(_) => out.push(UseLeaf::Glob(prefix.clone())),
        UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Res {
    Module(ModId),
    /// A non-module item of this crate, by its path from the crate root (with any trailing
    /// segments: `["net", "Conn", "open"]`): never a capability of its own; what it reaches
    /// is its summary's.
    Local(Vec<String>),
    /// A foreign item; `display` is its path (`crate::sys::system`, `libc::system`).
    Foreign { symbol: String, display: String },
    /// Into a dependency, resolved through its exports at the end.
    Dep { krate: String, rest: Vec<String> },
    /// A path outside the crates we know the insides of: `std::fs::write`, `libloading::Library`.
    Ext(Vec<String>),
}

/// What a resolved path finally is, for the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Path(Vec<String>),
    Foreign { symbol: String, display: String },
}

/// Traits whose methods the rules know, found by "trait in scope" for receivers of unknown type.
pub(crate) const KNOWN_TRAITS: &[&str] = &[
    "std::net::ToSocketAddrs",
    "std::os::unix::fs::FileExt",
    "std::os::windows::fs::FileExt",
    "std::os::unix::process::CommandExt",
    "std::os::windows::process::CommandExt",
];

const STD_ROOTS: &[&str] = &["std", "core", "alloc", "proc_macro", "test"];

/// What a [`Resolver`] is built from, besides the module tree and the macros.
pub(crate) struct Parts<'a> {
    pub crate_name: &'a str,
    pub deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    pub rules: &'a dyn RuleSource,
    pub cfg: &'a dyn CfgEval,
}

/// A block scope stack for resolution: the module and the blocks around the path.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'l> {
    pub module: ModId,
    pub layers: &'l [NameScope],
}

pub(crate) struct Resolver<'a> {
    pub modules: &'a [Module],
    pub scopes: Vec<NameScope>,
    pub crate_name: &'a str,
    extern_prelude: HashMap<String, Res>,
    deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
    rules: &'a dyn RuleSource,
    pub ex: &'a Expander<'a>,
    memo: Vec<RefCell<HashMap<String, Option<Res>>>>,
    ext_globs: Vec<RefCell<Option<Prefixes>>>,
    traits: Vec<OnceCell<Vec<String>>>,
    busy: RefCell<HashSet<(ModId, String)>>,
    depth: Cell<u32>,
    macro_memo: RefCell<HashMap<(ModId, String), Option<MacroRef>>>,
    /// Field name → the known types of struct fields with that name, crate-wide.
    pub field_types: HashMap<String, Vec<String>>,
    /// (struct key, field name) → the field's type (wrappers such as `Option` looked
    /// through), for `self.field` and other receivers whose struct is known.
    pub struct_fields: HashMap<(String, String), String>,
    /// Function or method key (`crate::a::f`, `crate::a::Client::send`) → the type key of
    /// what it returns, where the signature names one (see [`Resolver::value_type`]).
    pub returns: BTreeMap<String, String>,
    /// The keys of the crate's traits (`crate::io::Journal`).
    pub local_traits: HashSet<String>,
    /// The keys of the crate's structs, enums and unions.
    pub local_types: HashSet<String>,
    /// The crate's traits (by key): their methods, and the ids of their supertraits.
    pub trait_shapes: HashMap<String, TraitShape>,
    /// Associated types of the crate's `impl`s: `{type key}::{Name}` → the type it is
    /// (`crate::Shell::Cmd` → `std::process::Command`), for `Self::Cmd::new` and
    /// `<Shell as Tr>::Cmd::new`.
    pub assoc_types: HashMap<String, String>,
    /// Every type a trait's associated type is in the crate's `impl`s of it:
    /// `{trait key}::{Name}` → types, for `<T as Tr>::Name` with `T` unknown.
    pub trait_assoc: HashMap<String, Vec<String>>,
    /// The keys of the crate's functions and methods written at module level and in `impl`
    /// blocks: a method call on a local type that names none of them comes from a trait.
    pub local_fns: HashSet<String>,
}

const MAX_DEPTH: u32 = 48;

/// External path prefixes (of glob imports), shared.
type Prefixes = Rc<Vec<Vec<String>>>;

fn module_scope(m: &Module, cfg: &dyn CfgEval) -> NameScope {
    let mut s = NameScope::default();
    for (name, id, public) in &m.children {
        s.insert(name.clone(), Binding { kind: BindKind::Mod(*id), public: *public });
    }
    for Entry { item, .. } in &m.entries {
        s.add_item(item, cfg);
    }
    s
}

/// The generic parameter among `params` a field's type is, through references, `Box`,
/// `Arc`, `Rc`, `Option`, `Mutex`, `RefCell` and `Pin` (`inner: Box<C>` → `C`).
fn generic_param_of(ty: &syn::Type, params: &HashSet<String>) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => generic_param_of(&r.elem, params),
        syn::Type::Paren(p) => generic_param_of(&p.elem, params),
        syn::Type::Group(g) => generic_param_of(&g.elem, params),
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if p.path.segments.len() == 1 && params.contains(&last.ident.unraw().to_string()) {
                return Some(last.ident.unraw().to_string());
            }
            if matches!(last.ident.to_string().as_str(), "Box" | "Arc" | "Rc" | "Option" | "Mutex" | "RwLock" | "RefCell" | "Pin") {
                let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
                let Some(syn::GenericArgument::Type(inner)) = a.args.first() else { return None };
                return generic_param_of(inner, params);
            }
            None
        }
        _ => None,
    }
}

fn is_type_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase()) || s == "str"
}

impl<'a> Resolver<'a> {
    pub fn new(
        modules: &'a [Module],
        crate_name: &'a str,
        deps: &'a BTreeMap<String, std::sync::Arc<Exports>>,
        rules: &'a dyn RuleSource,
        cfg: &'a dyn CfgEval,
        ex: &'a Expander<'a>,
    ) -> Self {
        let scopes: Vec<NameScope> = modules.iter().map(|m| module_scope(m, cfg)).collect();
        let mut extern_prelude = HashMap::new();
        for s in STD_ROOTS {
            extern_prelude.insert(s.to_string(), Res::Ext(vec![s.to_string()]));
        }
        if !deps.contains_key(crate_name) {
            extern_prelude.insert(crate_name.to_string(), Res::Module(ROOT));
        }
        for k in deps.keys() {
            extern_prelude.insert(k.clone(), Res::Dep { krate: k.clone(), rest: Vec::new() });
        }
        let n = modules.len();
        let mut r = Resolver {
            modules,
            scopes,
            crate_name,
            extern_prelude,
            deps,
            rules,
            ex,
            memo: (0..n).map(|_| RefCell::new(HashMap::new())).collect(),
            ext_globs: (0..n).map(|_| RefCell::new(None)).collect(),
            traits: (0..n).map(|_| OnceCell::new()).collect(),
            busy: RefCell::new(HashSet::new()),
            depth: Cell::new(0),
            macro_memo: RefCell::new(HashMap::new()),
            field_types: HashMap::new(),
            struct_fields: HashMap::new(),
            returns: BTreeMap::new(),
            local_traits: HashSet::new(),
            local_types: HashSet::new(),
            trait_shapes: HashMap::new(),
            assoc_types: HashMap::new(),
            trait_assoc: HashMap::new(),
            local_fns: HashSet::new(),
        };
        // Root `extern crate x as y;` also enter the extern prelude.
        let roots: Vec<(String, String)> = r.scopes[ROOT]
            .names
            .iter()
            .filter_map(|(n, b)| match &b.kind {
                BindKind::ExternCrate(x) => Some((n.clone(), x.clone())),
                _ => None,
            })
            .collect();
        for (name, x) in roots {
            let target = r.extern_crate(&x);
            r.extern_prelude.insert(name, target);
        }
        let (fields, by_struct) = r.collect_field_types(cfg);
        r.field_types = fields;
        r.struct_fields = by_struct;
        let (mut traits, mut types, mut fns) = (HashSet::new(), HashSet::new(), HashSet::new());
        r.returns = r.collect_returns(cfg, &mut traits, &mut types, &mut fns);
        r.local_traits = traits;
        r.local_types = types;
        r.local_fns = fns;
        let (assoc, by_trait) = r.collect_assoc_types(cfg);
        r.assoc_types = assoc;
        r.trait_assoc = by_trait;
        r.trait_shapes = r.collect_trait_shapes(cfg);
        r
    }

    /// Each trait's methods and supertraits.
    fn collect_trait_shapes(&self, cfg: &dyn CfgEval) -> HashMap<String, TraitShape> {
        let mut out = HashMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            let ctx = Ctx { module: m, layers: &[] };
            for e in &module.entries {
                let Item::Trait(t) = &e.item else { continue };
                let key = Self::local_key(&self.local_path(m, &t.ident.unraw().to_string()));
                let methods: Vec<String> = t
                    .items
                    .iter()
                    .filter_map(|it| match it {
                        syn::TraitItem::Fn(f) if super::attrs::holds(&f.attrs, cfg) => Some(f.sig.ident.unraw().to_string()),
                        _ => None,
                    })
                    .collect();
                let supers: Vec<String> = t
                    .supertraits
                    .iter()
                    .filter_map(|b| match b {
                        syn::TypeParamBound::Trait(tb) => self.trait_id(ctx, &tb.path),
                        _ => None,
                    })
                    .collect();
                out.insert(key, TraitShape { methods, supers });
            }
        }
        out
    }

    /// The associated types of the crate's `impl`s, by implementing type and by trait.
    #[allow(clippy::type_complexity)]
    fn collect_assoc_types(&self, cfg: &dyn CfgEval) -> (HashMap<String, String>, HashMap<String, Vec<String>>) {
        let mut by_type = HashMap::new();
        let mut by_trait: HashMap<String, Vec<String>> = HashMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            let ctx = Ctx { module: m, layers: &[] };
            for e in &module.entries {
                let Item::Impl(i) = &e.item else { continue };
                let self_key = self.type_key(ctx, &i.self_ty);
                let trait_key = i.trait_.as_ref().and_then(|(_, p, _)| self.trait_key(ctx, p));
                for it in &i.items {
                    let syn::ImplItem::Type(t) = it else { continue };
                    if !super::attrs::holds(&t.attrs, cfg) {
                        continue;
                    }
                    let Some(target) = self.value_type(ctx, &t.ty, self_key.as_deref(), 0) else { continue };
                    let name = t.ident.unraw().to_string();
                    if let Some(k) = &self_key {
                        by_type.insert(format!("{k}::{name}"), target.clone());
                    }
                    if let Some(tk) = &trait_key {
                        let v = by_trait.entry(format!("{tk}::{name}")).or_default();
                        if !v.contains(&target) {
                            v.push(target);
                        }
                    }
                }
            }
        }
        for v in by_trait.values_mut() {
            v.sort();
        }
        (by_type, by_trait)
    }

    /// A value known only by the traits it implements (`dyn Service`, `impl Read`, a generic
    /// parameter `C: Connect`): `<dyn>` and the traits' ids ([`Resolver::trait_id`]) joined
    /// by `+`. Auto traits and lifetimes are left out; `None` with no trait left.
    pub fn dyn_key(&self, ctx: Ctx, bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>) -> Option<String> {
        let ids: Vec<String> = bounds
            .iter()
            .filter_map(|b| match b {
                syn::TypeParamBound::Trait(t) => {
                    let last = t.path.segments.last()?.ident.to_string();
                    if matches!(last.as_str(), "Send" | "Sync" | "Unpin" | "Sized" | "Copy" | "UnwindSafe" | "RefUnwindSafe") {
                        return None;
                    }
                    self.trait_id(ctx, &t.path)
                }
                _ => None,
            })
            .collect();
        (!ids.is_empty()).then(|| format!("<dyn>{}", ids.join("+")))
    }

    /// What a trait is called across crates: for the crate's own, `NAME@VERSION#` and its key
    /// (`tokio@1.54.1#crate::io::async_read::AsyncRead`); for a dependency's, the id the
    /// dependency exports for that public path, else the path it resolved to
    /// (`std::io::Write`).
    pub fn trait_id(&self, ctx: Ctx, path: &syn::Path) -> Option<String> {
        let up = UsePath::from_path(path);
        match self.resolve(ctx, &up, true)? {
            Res::Local(segs) => Some(self.local_trait_id(&Self::local_key(&segs))),
            Res::Dep { krate, rest } => {
                let public = rest.join("::");
                if let Some(id) = self.deps.get(&krate).and_then(|ex| ex.trait_ids.get(&public)) {
                    return Some(id.clone());
                }
                match self.finalize(Res::Dep { krate: krate.clone(), rest })? {
                    Target::Path(segs) => Some(segs.join("::")),
                    _ => None,
                }
            }
            r => match self.finalize(r)? {
                Target::Path(segs) => Some(segs.join("::")),
                _ => None,
            },
        }
    }

    /// The id of a local trait (or type) key: `NAME@VERSION#crate::..`.
    pub fn local_trait_id(&self, key: &str) -> String {
        let (name, version) = self.ex.crate_id.borrow().clone();
        format!("{name}@{version}#{key}")
    }

    /// The ids of the crate's public types, by public path (for [`Exports::type_ids`]).
    pub fn export_type_ids(&self) -> BTreeMap<String, String> {
        let local: BTreeMap<String, String> = self.local_types.iter().map(|t| (t.clone(), self.local_trait_id(t))).collect();
        let mut out = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local, &mut out, &mut HashSet::new(), &|ex: &Exports| &ex.type_ids);
        out
    }

    /// The ids of the crate's public traits, by public path (for [`Exports::trait_ids`]).
    pub fn export_trait_ids(&self) -> BTreeMap<String, String> {
        let local: BTreeMap<String, String> = self.local_traits.iter().map(|t| (t.clone(), self.local_trait_id(t))).collect();
        let mut out = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local, &mut out, &mut HashSet::new(), &|ex: &Exports| &ex.trait_ids);
        out
    }

    /// The key of a trait named by `path`: `crate::..` for the crate's own, the resolved
    /// path for another crate's or std's.
    pub fn trait_key(&self, ctx: Ctx, path: &syn::Path) -> Option<String> {
        let up = UsePath::from_path(path);
        match self.resolve(ctx, &up, true)? {
            Res::Local(segs) => Some(Self::local_key(&segs)),
            r => match self.finalize(r)? {
                Target::Path(segs) => Some(segs.join("::")),
                _ => None,
            },
        }
    }

    /// What the crate's functions and methods return, by their keys, where the signature
    /// names a type (module-level functions and `impl` blocks); and its traits' keys.
    fn collect_returns(&self, cfg: &dyn CfgEval, traits: &mut HashSet<String>, types: &mut HashSet<String>, fns: &mut HashSet<String>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            let ctx = Ctx { module: m, layers: &[] };
            for e in &module.entries {
                match &e.item {
                    Item::Trait(t) => {
                        traits.insert(Self::local_key(&self.local_path(m, &t.ident.unraw().to_string())));
                    }
                    Item::Struct(x) => {
                        types.insert(Self::local_key(&self.local_path(m, &x.ident.unraw().to_string())));
                    }
                    Item::Enum(x) => {
                        types.insert(Self::local_key(&self.local_path(m, &x.ident.unraw().to_string())));
                    }
                    Item::Union(x) => {
                        types.insert(Self::local_key(&self.local_path(m, &x.ident.unraw().to_string())));
                    }
                    Item::Fn(f) => {
                        let key = Self::local_key(&self.local_path(m, &f.sig.ident.unraw().to_string()));
                        if let Some(t) = self.return_type(ctx, &f.sig.output, None) {
                            out.insert(key.clone(), t);
                        }
                        fns.insert(key);
                    }
                    Item::Impl(i) => {
                        let Some(ty) = self.type_key(ctx, &i.self_ty) else { continue };
                        for it in &i.items {
                            let syn::ImplItem::Fn(f) = it else { continue };
                            if !super::attrs::holds(&f.attrs, cfg) {
                                continue;
                            }
                            let key = format!("{ty}::{}", f.sig.ident.unraw());
                            if let Some(t) = self.return_type(ctx, &f.sig.output, Some(&ty)) {
                                out.insert(key.clone(), t);
                            }
                            fns.insert(key);
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The type key of a function's result, if the signature names one.
    pub fn return_type(&self, ctx: Ctx, output: &syn::ReturnType, self_ty: Option<&str>) -> Option<String> {
        match output {
            syn::ReturnType::Type(_, ty) => self.value_type(ctx, ty, self_ty, 0),
            syn::ReturnType::Default => None,
        }
    }

    /// The type methods are called on when a value of type `ty` is used: `Self` is the
    /// `impl`'s type, and the wrappers that `?`, `.await`, `.unwrap()`, `.lock()` or
    /// auto-deref take off (`Result<T, E>`, `Option<T>`, `Box<T>`, `Arc<T>`, `Rc<T>`,
    /// `Poll<T>`, `Mutex<T>`, `RwLock<T>`, `RefCell<T>`, `Pin<T>`, any `Result<T>` alias) are
    /// looked through to `T`.
    pub fn value_type(&self, ctx: Ctx, ty: &syn::Type, self_ty: Option<&str>, depth: u8) -> Option<String> {
        if depth > 4 {
            return None;
        }
        match ty {
            syn::Type::Reference(r) => self.value_type(ctx, &r.elem, self_ty, depth + 1),
            syn::Type::Paren(p) => self.value_type(ctx, &p.elem, self_ty, depth + 1),
            syn::Type::Group(g) => self.value_type(ctx, &g.elem, self_ty, depth + 1),
            // `dyn Trait`, `impl Trait`: a type known by its traits only (see `dyn_key`).
            syn::Type::TraitObject(t) => self.dyn_key(ctx, &t.bounds),
            syn::Type::ImplTrait(t) => self.dyn_key(ctx, &t.bounds),
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?;
                if p.path.segments.len() == 1 && last.ident == "Self" {
                    return self_ty.map(str::to_string);
                }
                if matches!(
                    last.ident.to_string().as_str(),
                    "Result" | "Option" | "Box" | "Arc" | "Rc" | "Poll" | "Mutex" | "RwLock" | "RefCell" | "Pin" | "ManuallyDrop"
                ) {
                    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
                    let Some(syn::GenericArgument::Type(inner)) = a.args.first() else { return None };
                    return self.value_type(ctx, inner, self_ty, depth + 1);
                }
                self.type_key(ctx, ty)
            }
            _ => None,
        }
    }

    fn extern_crate(&self, x: &str) -> Res {
        if x == "self" {
            return Res::Module(ROOT);
        }
        if self.deps.contains_key(x) {
            return Res::Dep { krate: x.to_string(), rest: Vec::new() };
        }
        if STD_ROOTS.contains(&x) {
            return Res::Ext(vec![x.to_string()]);
        }
        Res::Dep { krate: x.to_string(), rest: Vec::new() }
    }

    #[allow(clippy::type_complexity)]
    fn collect_field_types(&self, cfg: &dyn CfgEval) -> (HashMap<String, Vec<String>>, HashMap<(String, String), String>) {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        let mut by_struct = HashMap::new();
        for (m, module) in self.modules.iter().enumerate() {
            for e in &module.entries {
                let Item::Struct(s) = &e.item else { continue };
                let ctx = Ctx { module: m, layers: &[] };
                let key = Self::local_key(&self.local_path(m, &s.ident.unraw().to_string()));
                let params: HashSet<String> = s.generics.type_params().map(|p| p.ident.unraw().to_string()).collect();
                for (i, f) in s.fields.iter().enumerate().filter(|(_, f)| super::attrs::holds(&f.attrs, cfg)) {
                    let name = f.ident.as_ref().map_or_else(|| i.to_string(), |n| n.unraw().to_string());
                    if let Some(t) = self.value_type(ctx, &f.ty, Some(&key), 0) {
                        by_struct.insert((key.clone(), name.clone()), t);
                    } else if let Some(p) = generic_param_of(&f.ty, &params) {
                        // A field of a generic parameter's type: its bounds where it is used
                        // (`impl<C: Connect> Client<C>`), see the visitor.
                        by_struct.insert((key.clone(), name.clone()), format!("<param>{p}"));
                    }
                    if f.ident.is_none() {
                        continue;
                    }
                    if let Some(t) = self.type_key(ctx, &f.ty) {
                        let v = out.entry(name).or_default();
                        if !v.contains(&t) {
                            v.push(t);
                        }
                    }
                }
            }
        }
        (out, by_struct)
    }

    /// The canonical path of a named type (`&mut OpenOptions` → `std::fs::OpenOptions`), for
    /// method lookups. Glob imports are tried speculatively here.
    pub fn type_key(&self, ctx: Ctx, ty: &syn::Type) -> Option<String> {
        match ty {
            syn::Type::Reference(r) => self.type_key(ctx, &r.elem),
            syn::Type::Paren(p) => self.type_key(ctx, &p.elem),
            syn::Type::Group(g) => self.type_key(ctx, &g.elem),
            syn::Type::Path(p) if p.qself.is_none() => {
                let up = UsePath::from_path(&p.path);
                match self.resolve(ctx, &up, true)? {
                    // A type of this crate: its summary key (`crate::net::Conn`).
                    Res::Local(segs) => segs.last().is_some_and(|s| is_type_name(s)).then(|| Self::local_key(&segs)),
                    r => match self.finalize(r)? {
                        Target::Path(segs) if segs.last().is_some_and(|s| is_type_name(s)) => Some(segs.join("::")),
                        _ => None,
                    },
                }
            }
            _ => None,
        }
    }

    /// The type an associated function belongs to, when `path` is `Type::function` for a
    /// type outside the crate (`OpenOptions::new` → `std::fs::OpenOptions`).
    pub fn assoc_type(&self, ctx: Ctx, path: &UsePath) -> Option<String> {
        let r = self.resolve(ctx, path, true)?;
        if let Res::Local(segs) = &r {
            return (segs.len() >= 2 && is_type_name(&segs[segs.len() - 2])).then(|| Self::local_key(&segs[..segs.len() - 1]));
        }
        match self.finalize(r)? {
            Target::Path(segs) if segs.len() >= 2 && is_type_name(&segs[segs.len() - 2]) => {
                Some(segs[..segs.len() - 1].join("::"))
            }
            _ => None,
        }
    }

    fn parent(&self, m: ModId) -> Option<ModId> {
        self.modules[m].parent
    }

    /// Resolve a path. `spec`: also accept speculative glob candidates for type names.
    pub fn resolve(&self, ctx: Ctx, path: &UsePath, spec: bool) -> Option<Res> {
        if self.depth.get() > MAX_DEPTH || path.segs.is_empty() {
            return None;
        }
        self.depth.set(self.depth.get() + 1);
        let r = self.resolve_inner(ctx, path, spec);
        self.depth.set(self.depth.get() - 1);
        r
    }

    fn resolve_inner(&self, ctx: Ctx, path: &UsePath, spec: bool) -> Option<Res> {
        let segs = &path.segs;
        let first = segs[0].as_str();
        let (mut cur, mut i) = if path.leading {
            match self.extern_prelude.get(first) {
                Some(r) => (r.clone(), 1),
                None => self.lookup_in(ROOT, segs, spec)?,
            }
        } else {
            match first {
                "crate" | "$crate" => (Res::Module(ROOT), 1),
                "self" => (Res::Module(ctx.module), 1),
                "super" => (Res::Module(self.parent(ctx.module)?), 1),
                "Self" => return None,
                _ => self.lookup_first(ctx, segs, spec)?,
            }
        };
        while i < segs.len() {
            let (next, used) = self.step(cur, &segs[i..], spec)?;
            cur = next;
            i += used;
        }
        Some(cur)
    }

    fn step(&self, cur: Res, segs: &[String], spec: bool) -> Option<(Res, usize)> {
        let seg = &segs[0];
        Some(match cur {
            Res::Module(m) => match seg.as_str() {
                "super" => (Res::Module(self.parent(m)?), 1),
                "self" => (Res::Module(m), 1),
                _ => return self.lookup_in(m, segs, spec),
            },
            Res::Local(mut p) => {
                p.push(seg.clone());
                (Res::Local(p), 1)
            }
            Res::Foreign { .. } => return None,
            Res::Dep { krate, mut rest } => {
                rest.push(seg.clone());
                (Res::Dep { krate, rest }, 1)
            }
            Res::Ext(mut p) => {
                p.push(seg.clone());
                (Res::Ext(p), 1)
            }
        })
    }

    fn lookup_first(&self, ctx: Ctx, segs: &[String], spec: bool) -> Option<(Res, usize)> {
        let name = segs[0].as_str();
        for i in (0..ctx.layers.len()).rev() {
            let layer = &ctx.layers[i];
            let inner = Ctx { module: ctx.module, layers: &ctx.layers[..i] };
            if let Some(b) = layer.names.get(name) {
                // An import in a block may name items of the same block.
                let here = Ctx { module: ctx.module, layers: &ctx.layers[..=i] };
                return Some((self.binding_res(here, b, name)?, 1));
            }
            for (g, _) in &layer.globs {
                if let Some(r) = self.glob_candidate(inner, g, segs, spec) {
                    return Some(r);
                }
            }
        }
        if let Some(r) = self.lookup_in(ctx.module, segs, false) {
            return Some(r);
        }
        if let Some(r) = self.extern_prelude.get(name) {
            return Some((r.clone(), 1));
        }
        if spec && let Some(r) = self.lookup_in(ctx.module, segs, true) {
            return Some(r);
        }
        match name {
            "String" => Some((Res::Ext(vec!["std".into(), "string".into(), "String".into()]), 1)),
            "str" => Some((Res::Ext(vec!["str".into()]), 1)),
            _ => None,
        }
    }

    /// Whether the first segment of `path` names nothing (not a local name, import, glob
    /// candidate, extern crate or keyword): the analyzer then reads the path as external.
    pub fn first_unknown(&self, ctx: Ctx, path: &UsePath) -> bool {
        let Some(first) = path.segs.first() else { return false };
        if path.leading {
            return !self.extern_prelude.contains_key(first) && self.lookup_in(ROOT, &path.segs, false).is_none();
        }
        !matches!(first.as_str(), "crate" | "$crate" | "self" | "super" | "Self")
            && self.lookup_first(ctx, &path.segs[..1], false).is_none()
    }

    /// A glob import in a block.
    fn glob_candidate(&self, ctx: Ctx, g: &UsePath, segs: &[String], spec: bool) -> Option<(Res, usize)> {
        match self.resolve(ctx, g, false)? {
            Res::Module(m) => self.lookup_in(m, segs, spec),
            Res::Ext(p) => self.ext_glob(&p, segs, spec),
            Res::Dep { krate, rest } if !self.extern_prelude.contains_key(&segs[0]) => {
                let mut full = rest.clone();
                full.push(segs[0].clone());
                self.dep_has(&krate, &full).then_some((Res::Dep { krate, rest: full }, 1))
            }
            _ => None,
        }
    }

    /// Whether dependency `krate` is known to export `path`: an exported alias at exactly that
    /// path, a module under which it exports something, or a name under one of its glob
    /// exports that the rules know. Not any path under an exported item: a glob import of
    /// the dependency brings only what it has.
    fn dep_has(&self, krate: &str, path: &[String]) -> bool {
        let Some(ex) = self.deps.get(krate) else { return false };
        let key = path.join("::");
        if ex.aliases.contains_key(&key) {
            return true;
        }
        let prefix = format!("{key}::");
        if ex.aliases.range(prefix.clone()..).next().is_some_and(|(k, _)| k.starts_with(&prefix)) {
            return true;
        }
        let (parent, _) = path.split_at(path.len().saturating_sub(1));
        let gkey = if parent.is_empty() { "*".to_string() } else { format!("{}::*", parent.join("::")) };
        match ex.aliases.get(&gkey) {
            Some(t) if !t.starts_with("extern:") => {
                let mut full: Vec<String> = t.split("::").map(str::to_string).collect();
                let blen = full.len();
                full.push(path[path.len() - 1].clone());
                self.specific(&full, blen)
            }
            _ => false,
        }
    }

    /// `segs` under an external glob prefix `p`: accepted when the rules know the path
    /// because of these segments; with `spec`, also a type name (for method lookups).
    fn ext_glob(&self, p: &[String], segs: &[String], spec: bool) -> Option<(Res, usize)> {
        let mut full: Vec<String> = p.to_vec();
        full.extend(segs.iter().cloned());
        if self.specific(&full, p.len()) {
            return Some((Res::Ext(full), segs.len()));
        }
        if spec && is_type_name(&segs[0]) {
            let mut one = p.to_vec();
            one.push(segs[0].clone());
            return Some((Res::Ext(one), 1));
        }
        None
    }

    /// Whether the rules' verdict on `full` depends on its segments after `prefix_len`.
    pub fn specific(&self, full: &[String], prefix_len: usize) -> bool {
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let Some(v) = self.rules.path(&refs) else { return false };
        let mut probe: Vec<&str> = refs[..prefix_len].to_vec();
        probe.push("\u{0}");
        self.rules.path(&probe) != Some(v)
    }

    /// Look `segs[0]` up among the names of module `m` (and, failing that, its globs).
    fn lookup_in(&self, m: ModId, segs: &[String], spec: bool) -> Option<(Res, usize)> {
        // The last segment of a path in an expression: a function before a module of the same
        // name.
        if segs.len() == 1
            && !spec
            && let Some(b) = self.scopes[m].values.get(&segs[0])
            && let Some(r) = self.binding_res(Ctx { module: m, layers: &[] }, b, &segs[0])
        {
            return Some((r, 1));
        }
        if let Some(r) = self.lookup_exact(m, &segs[0]) {
            return Some((r, 1));
        }
        for p in self.ext_globs(m).iter() {
            if let Some(r) = self.ext_glob(p, segs, spec) {
                return Some(r);
            }
        }
        None
    }

    /// The external prefixes of `m`'s glob imports. While they are being computed (the
    /// resolution of a glob path may come back here), there are none.
    fn ext_globs(&self, m: ModId) -> Prefixes {
        if let Some(v) = self.ext_globs[m].borrow().as_ref() {
            return v.clone();
        }
        if self.scopes[m].globs.is_empty() {
            let v = Rc::new(Vec::new());
            *self.ext_globs[m].borrow_mut() = Some(v.clone());
            return v;
        }
        *self.ext_globs[m].borrow_mut() = Some(Rc::new(Vec::new()));
        let v: Vec<Vec<String>> = self.scopes[m]
            .globs
            .iter()
            .filter_map(|(g, _)| match self.resolve(Ctx { module: m, layers: &[] }, g, false) {
                Some(Res::Ext(p)) => Some(p),
                _ => None,
            })
            .collect();
        let v = Rc::new(v);
        *self.ext_globs[m].borrow_mut() = Some(v.clone());
        v
    }

    /// `name` among the items and imports of module `m`, and the globs into local modules
    /// and dependencies. Memoized.
    pub fn lookup_exact(&self, m: ModId, name: &str) -> Option<Res> {
        if let Some(r) = self.memo[m].borrow().get(name) {
            return r.clone();
        }
        let key = (m, name.to_string());
        if !self.busy.borrow_mut().insert(key.clone()) {
            return None;
        }
        let r = self.lookup_exact_uncached(m, name);
        self.busy.borrow_mut().remove(&key);
        self.memo[m].borrow_mut().insert(name.to_string(), r.clone());
        r
    }

    fn lookup_exact_uncached(&self, m: ModId, name: &str) -> Option<Res> {
        let ctx = Ctx { module: m, layers: &[] };
        if let Some(b) = self.scopes[m].names.get(name) {
            return self.binding_res(ctx, b, name);
        }
        for (g, _) in &self.scopes[m].globs {
            match self.resolve(ctx, g, false) {
                Some(Res::Module(gm)) if gm != m => {
                    if let Some(r) = self.lookup_exact(gm, name) {
                        return Some(r);
                    }
                }
                // A name a dependency's glob brings in: only one the dependency is known to
                // export, and never one that would shadow a crate (`use wasm_bindgen::prelude::*`
                // brings the `wasm_bindgen` macro, which does not hide the crate `wasm_bindgen`
                // from paths, nor `std`).
                Some(Res::Dep { krate, mut rest }) if !self.extern_prelude.contains_key(name) => {
                    rest.push(name.to_string());
                    if self.dep_has(&krate, &rest) {
                        return Some(Res::Dep { krate, rest });
                    }
                }
                _ => {}
            }
        }
        // The root has the injected `extern crate std;` (and `core`).
        if m == ROOT && (name == "std" || name == "core") {
            return Some(Res::Ext(vec![name.to_string()]));
        }
        None
    }

    /// The path of item `name` of module `m` from the crate root.
    pub fn local_path(&self, m: ModId, name: &str) -> Vec<String> {
        let mut p = self.modules[m].path.clone();
        p.push(name.to_string());
        p
    }

    /// The key of a local item in the summaries: `crate::` and its path.
    pub fn local_key(p: &[String]) -> String {
        let mut k = String::from("crate");
        for s in p {
            k.push_str("::");
            k.push_str(s);
        }
        k
    }

    /// What a local key looks like to other crates: the crate's name for `crate`.
    pub fn local_display(&self, key: &str) -> String {
        match key.strip_prefix("crate") {
            Some(rest) => format!("{}{rest}", self.crate_name),
            None => key.to_string(),
        }
    }

    /// The dependencies this crate sees, by extern name or marker.
    pub fn deps(&self) -> &BTreeMap<String, std::sync::Arc<Exports>> {
        self.deps
    }

    /// The extern name (or marker) under which the crate named `name` (as `crate_display`
    /// gives it) is among the dependencies.
    pub fn dep_key_of(&self, name: &str) -> Option<&str> {
        if self.deps.contains_key(name) {
            return self.deps.get_key_value(name).map(|(k, _)| k.as_str());
        }
        self.deps.iter().find(|(_, ex)| ex.crate_name == name).map(|(k, _)| k.as_str())
    }

    fn module_display(&self, m: ModId, name: &str) -> String {
        let mut parts = vec![self.crate_name.to_string()];
        parts.extend(self.modules[m].path.iter().cloned());
        parts.push(name.to_string());
        parts.join("::")
    }

    fn binding_res(&self, ctx: Ctx, b: &Binding, name: &str) -> Option<Res> {
        match &b.kind {
            BindKind::Mod(id) => Some(Res::Module(*id)),
            BindKind::Item => Some(Res::Local(self.local_path(ctx.module, name))),
            BindKind::Foreign(symbol) => Some(Res::Foreign {
                symbol: symbol.clone(),
                display: self.module_display(ctx.module, name),
            }),
            BindKind::Alias(p) => Some(
                self.resolve(Ctx { module: ctx.module, layers: &[] }, p, false)
                    .unwrap_or_else(|| Res::Local(self.local_path(ctx.module, name))),
            ),
            BindKind::ExternCrate(x) => Some(self.extern_crate(x)),
            BindKind::Import(p) => {
                if let Some(r) = self.resolve(ctx, p, false) {
                    return Some(r);
                }
                // 2015: `use` paths are relative to the crate root.
                let first = p.segs.first().map(String::as_str);
                if ctx.module != ROOT && !p.leading && !matches!(first, Some("crate" | "self" | "super" | "$crate")) {
                    return self.resolve(Ctx { module: ROOT, layers: &[] }, p, false);
                }
                None
            }
        }
    }

    /// The alias of `rest` (a path inside dependency `krate`) in its exports: the longest
    /// prefix that is exported, or a glob export at its parent.
    fn dep_alias(&self, krate: &str, rest: &[String]) -> Option<Target> {
        let ex = self.deps.get(krate)?;
        for k in (1..=rest.len()).rev() {
            let key = rest[..k].join("::");
            if let Some(t) = ex.aliases.get(&key) {
                return target_of(t, &rest[k..], &format!("{}::{key}", self.crate_display(krate)));
            }
            let gkey = if k == 1 { "*".to_string() } else { format!("{}::*", rest[..k - 1].join("::")) };
            if let Some(t) = ex.aliases.get(&gkey) {
                let base: Vec<String> = t.split("::").map(str::to_string).collect();
                let blen = base.len();
                let mut full = base;
                full.extend(rest[k - 1..].iter().cloned());
                if !t.starts_with("extern:") && self.specific(&full, blen) {
                    return Some(Target::Path(full));
                }
            }
        }
        None
    }

    /// The target of a resolution, for the rules.
    pub fn finalize(&self, r: Res) -> Option<Target> {
        match r {
            Res::Module(_) | Res::Local(_) => None,
            Res::Foreign { symbol, display } => Some(Target::Foreign { symbol, display }),
            Res::Ext(p) => Some(Target::Path(p)),
            Res::Dep { krate, rest } => Some(self.dep_alias(&krate, &rest).unwrap_or_else(|| {
                let mut p = vec![self.crate_display(&krate).to_string()];
                p.extend(rest);
                Target::Path(p)
            })),
        }
    }

    /// The name of the crate behind an extern name: its package's crate name, so that a
    /// renamed dependency (`dl = { package = "libloading" }`) and a `$crate` marker read as
    /// the crate the rules know.
    pub fn crate_display<'k>(&'k self, krate: &'k str) -> &'k str {
        match self.deps.get(krate) {
            Some(ex) if !ex.crate_name.is_empty() => &ex.crate_name,
            _ => krate,
        }
    }

    /// The `macro_rules!` a macro path names: the textual scope `macros` first (a single
    /// name), then the macro namespace of the path's module (macros `use`d there, `use`
    /// imports of macros, globs, `#[macro_export]` ones at the root, a dependency's exported
    /// ones), then `#[macro_use] extern crate`s. `None`: no `macro_rules!` (a built-in, a
    /// proc macro, or unknown).
    pub fn resolve_macro(&self, ctx: Ctx, path: &UsePath, macros: &Textual) -> Option<MacroRef> {
        let segs = &path.segs;
        if segs.len() == 1 && !path.leading {
            let name = segs[0].as_str();
            if let Some(d) = macros.get(name) {
                return Some(d);
            }
            for i in (0..ctx.layers.len()).rev() {
                if let Some(b) = ctx.layers[i].names.get(name)
                    && let BindKind::Import(p) = &b.kind
                    && let Some(d) = self.macro_import(Ctx { module: ctx.module, layers: &ctx.layers[..=i] }, p, 0)
                {
                    return Some(d);
                }
            }
            if let Some(d) = self.module_macro(ctx.module, name, 0) {
                return Some(d);
            }
            return self.ex.macro_use.borrow().get(name).cloned();
        }
        let (last, prefix) = segs.split_last()?;
        let res = self.resolve(ctx, &UsePath { leading: path.leading, segs: prefix.to_vec() }, false)?;
        self.macro_in(res, last, 0)
    }

    fn macro_in(&self, res: Res, name: &str, depth: u32) -> Option<MacroRef> {
        match res {
            Res::Module(m) => self.module_macro(m, name, depth + 1),
            Res::Dep { krate, mut rest } => {
                rest.push(name.to_string());
                self.ex.dep_macro(&krate, &rest.join("::"))
            }
            _ => None,
        }
    }

    /// `name` in module `m`'s macro namespace. Memoized; a cycle of globs finds nothing.
    fn module_macro(&self, m: ModId, name: &str, depth: u32) -> Option<MacroRef> {
        if depth > 16 {
            return None;
        }
        let key = (m, name.to_string());
        if let Some(hit) = self.macro_memo.borrow().get(&key) {
            return hit.clone();
        }
        if !self.busy.borrow_mut().insert((m, format!("!{name}"))) {
            return None;
        }
        let r = self.module_macro_uncached(m, name, depth);
        self.busy.borrow_mut().remove(&(m, format!("!{name}")));
        self.macro_memo.borrow_mut().insert(key, r.clone());
        r
    }

    fn module_macro_uncached(&self, m: ModId, name: &str, depth: u32) -> Option<MacroRef> {
        if let Some((d, _)) = self.ex.module_macro(m, name) {
            return Some(d);
        }
        let ctx = Ctx { module: m, layers: &[] };
        if let Some(b) = self.scopes[m].names.get(name)
            && let BindKind::Import(p) = &b.kind
            && let Some(d) = self.macro_import(ctx, p, depth)
        {
            return Some(d);
        }
        if m == ROOT
            && let Some(d) = self.ex.exported.borrow().get(name)
        {
            return Some(d.clone());
        }
        for (g, _) in &self.scopes[m].globs {
            match self.resolve(ctx, g, false) {
                Some(Res::Module(gm)) if gm != m => {
                    if let Some(d) = self.module_macro(gm, name, depth + 1) {
                        return Some(d);
                    }
                }
                Some(r @ Res::Dep { .. }) => {
                    if let Some(d) = self.macro_in(r, name, depth) {
                        return Some(d);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The macro a `use` path names (a path of two segments or more; `use m;` of a textual
    /// macro is recorded by the loader).
    fn macro_import(&self, ctx: Ctx, p: &UsePath, depth: u32) -> Option<MacroRef> {
        let (last, prefix) = p.segs.split_last()?;
        if prefix.is_empty() {
            // `use dep;`-style imports of a crate are not macros; `use ::m` neither.
            return None;
        }
        let prefix = UsePath { leading: p.leading, segs: prefix.to_vec() };
        let res = self.resolve(ctx, &prefix, false).or_else(|| {
            // 2015: `use` paths are relative to the crate root.
            (ctx.module != ROOT && !p.leading).then(|| self.resolve(Ctx { module: ROOT, layers: &[] }, &prefix, false)).flatten()
        })?;
        self.macro_in(res, last, depth)
    }

    /// The traits imported in `scope` whose methods the analysis knows: the known std ones
    /// (see [`KNOWN_TRAITS`]), the crate's own and its dependencies' public ones.
    pub fn traits_of(&self, ctx: Ctx, scope: &NameScope) -> Vec<String> {
        let mut out = Vec::new();
        let imports = scope
            .names
            .values()
            .filter_map(|b| match &b.kind {
                BindKind::Import(p) => Some(p),
                _ => None,
            })
            .chain(scope.anon.iter());
        for p in imports {
            let r = self.resolve(ctx, p, false);
            // The crate's own traits and its dependencies' public ones: their provided
            // methods have summaries.
            let own = match &r {
                Some(Res::Local(segs)) => Some(Self::local_key(segs)).filter(|k| self.local_traits.contains(k)),
                Some(Res::Dep { krate, rest }) => self
                    .deps
                    .get(krate)
                    .filter(|ex| ex.traits.contains(&rest.join("::")))
                    .map(|_| format!("{}::{}", self.crate_display(krate), rest.join("::"))),
                _ => None,
            };
            if let Some(k) = own {
                if !out.contains(&k) {
                    out.push(k);
                }
                continue;
            }
            if let Some(Target::Path(segs)) = r.and_then(|r| self.finalize(r)) {
                let s = segs.join("::");
                if KNOWN_TRAITS.contains(&s.as_str()) && !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        for (g, _) in &scope.globs {
            if let Some(Res::Ext(p)) = self.resolve(ctx, g, false) {
                let prefix = p.join("::");
                for t in KNOWN_TRAITS {
                    if t.rsplit_once("::").is_some_and(|(pre, _)| pre == prefix) && !out.iter().any(|o| o == t) {
                        out.push(t.to_string());
                    }
                }
            }
        }
        out
    }

    pub fn module_traits(&self, m: ModId) -> &[String] {
        self.traits[m].get_or_init(|| self.traits_of(Ctx { module: m, layers: &[] }, &self.scopes[m]))
    }

    /// Module `m`'s public names (both namespaces), sorted.
    fn public_bindings(&self, m: ModId) -> Vec<(&String, &Binding)> {
        let mut names: Vec<(&String, &Binding)> =
            self.scopes[m].names.iter().chain(self.scopes[m].values.iter()).filter(|(_, b)| b.public).collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        names
    }

    /// What the crate exports: every `pub` path reachable from the root through `pub` modules
    /// and re-exports that names something outside the crate (an external path or a foreign
    /// item), a glob re-export of an external module as `prefix::*`; and its macros:
    /// `#[macro_export]` ones at the root, and those `pub use` makes visible at a path.
    /// `marker` is what `$crate` in this crate's macros becomes in other crates.
    pub fn exports(&self, marker: &str, local: &BTreeMap<String, std::sync::Arc<Summary>>) -> Exports {
        let mut aliases = BTreeMap::new();
        let mut seen = HashSet::new();
        self.export_walk(ROOT, "", 0, &mut aliases, &mut seen);
        let mut macros = BTreeMap::new();
        for (name, def) in self.ex.exported.borrow().iter() {
            macros.insert(name.clone(), def.export(marker));
        }
        let mut seen = HashSet::new();
        self.export_macros(ROOT, "", 0, marker, &mut macros, &mut seen);
        let mut summaries = BTreeMap::new();
        self.export_map(ROOT, "", 0, local, &mut summaries, &mut HashSet::new(), &|ex: &Exports| &ex.summaries);
        let returns = self.export_returns();
        static NO_TRAITS: BTreeMap<String, ()> = BTreeMap::new();
        let local_traits: BTreeMap<String, ()> = self.local_traits.iter().map(|t| (t.clone(), ())).collect();
        let mut public_traits = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local_traits, &mut public_traits, &mut HashSet::new(), &|_: &Exports| &NO_TRAITS);
        let (assoc_types, trait_assoc) = self.export_assoc();
        let trait_ids = self.export_trait_ids();
        // A dependency's trait re-exported (`pub use tower_service::Service`) is a trait at
        // this path too: its provided methods' summaries come through the re-export.
        let traits = public_traits.into_keys().chain(trait_ids.keys().cloned()).collect();
        let type_ids = self.export_type_ids();
        // The shapes of the traits public here, the crate's own and those it re-exports.
        let public_ids: HashSet<&String> = trait_ids.values().collect();
        let mut trait_shapes: BTreeMap<String, TraitShape> = self
            .trait_shapes
            .iter()
            .map(|(k, v)| (self.local_trait_id(k), v.clone()))
            .filter(|(id, _)| public_ids.contains(id))
            .collect();
        for ex in self.deps.values() {
            for (id, shape) in &ex.trait_shapes {
                if public_ids.contains(id) {
                    trait_shapes.entry(id.clone()).or_insert_with(|| shape.clone());
                }
            }
        }
        Exports {
            aliases,
            macros,
            crate_name: self.crate_name.to_string(),
            summaries,
            returns,
            traits,
            assoc_types,
            trait_assoc,
            trait_ids,
            type_ids,
            trait_shapes,
            impls: Vec::new(),
        }
    }

    /// The associated types other crates can name, by public paths (see
    /// [`Exports::assoc_types`]); a local target type by its shortest public path, a private
    /// one left out.
    #[allow(clippy::type_complexity)]
    fn export_assoc(&self) -> (BTreeMap<String, String>, BTreeMap<String, Vec<String>>) {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        static NONE_V: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if self.assoc_types.is_empty() && self.trait_assoc.is_empty() {
            return (BTreeMap::new(), BTreeMap::new());
        }
        let mut locals: BTreeMap<String, String> = BTreeMap::new();
        for t in self.assoc_types.values().chain(self.trait_assoc.values().flatten()) {
            if t.starts_with("crate::") {
                locals.insert(t.clone(), t.clone());
            }
        }
        let mut public_types = BTreeMap::new();
        self.export_map(ROOT, "", 0, &locals, &mut public_types, &mut HashSet::new(), &|_: &Exports| &NONE);
        let mut by_type: HashMap<String, String> = HashMap::new();
        for (public, t) in public_types {
            let e = by_type.entry(t).or_insert_with(|| public.clone());
            if (public.len(), &public) < (e.len(), e) {
                *e = public;
            }
        }
        let publish = |t: &String| -> Option<String> {
            if t.starts_with("crate::") { by_type.get(t).map(|p| format!("crate::{p}")) } else { Some(t.clone()) }
        };
        let local: BTreeMap<String, String> = self.assoc_types.iter().filter_map(|(k, t)| Some((k.clone(), publish(t)?))).collect();
        let mut assoc = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local, &mut assoc, &mut HashSet::new(), &|_: &Exports| &NONE);
        let by_trait: BTreeMap<String, Vec<String>> = self
            .trait_assoc
            .iter()
            .map(|(k, ts)| (k.clone(), ts.iter().filter_map(publish).collect::<Vec<_>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let mut traits = BTreeMap::new();
        self.export_map(ROOT, "", 0, &by_trait, &mut traits, &mut HashSet::new(), &|_: &Exports| &NONE_V);
        (assoc, traits)
    }

    /// What the public functions and methods return, by public path, as other crates can use
    /// it: a type of this crate by one of its public paths (`crate::` and the path), another
    /// type as it resolved (`std::fs::File`). A private type is left out.
    fn export_returns(&self) -> BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        let local_types: BTreeMap<String, String> =
            self.returns.values().filter(|t| t.starts_with("crate::")).map(|t| (t.clone(), t.clone())).collect();
        let mut public_types = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local_types, &mut public_types, &mut HashSet::new(), &|_: &Exports| &NONE);
        // Local type → its shortest public path.
        let mut by_type: HashMap<&str, &str> = HashMap::new();
        for (public, t) in &public_types {
            let e = by_type.entry(t.as_str()).or_insert(public.as_str());
            if (public.len(), public.as_str()) < (e.len(), *e) {
                *e = public.as_str();
            }
        }
        let local: BTreeMap<String, String> = self
            .returns
            .iter()
            .filter_map(|(f, t)| {
                let t = if t.starts_with("crate::") { format!("crate::{}", by_type.get(t.as_str())?) } else { t.clone() };
                Some((f.clone(), t))
            })
            .collect();
        let mut out = BTreeMap::new();
        self.export_map(ROOT, "", 0, &local, &mut out, &mut HashSet::new(), &|_: &Exports| &NONE);
        out
    }

    /// A map of local items (summaries, return types) by the crate's public paths: public functions, statics and
    /// constants, the methods of public types, and what is re-exported (local items under
    /// their new name, a dependency's under the re-export's).
    #[allow(clippy::too_many_arguments)]
    fn export_map<V: Clone>(
        &self,
        m: ModId,
        prefix: &str,
        depth: usize,
        local: &BTreeMap<String, V>,
        out: &mut BTreeMap<String, V>,
        seen: &mut HashSet<(ModId, String)>,
        of_dep: &dyn Fn(&Exports) -> &BTreeMap<String, V>,
    ) {
        const MAX_EXPORT_DEPTH: usize = 8;
        if depth > MAX_EXPORT_DEPTH || out.len() >= MAX_SUMMARIES || !seen.insert((m, prefix.to_string())) {
            return;
        }
        let join = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") };
        let ctx = Ctx { module: m, layers: &[] };
        // A local item at `key`, public as `public`: its summary and its members'.
        let put_local = |key: &str, public: &str, out: &mut BTreeMap<String, V>| {
            if let Some(s) = local.get(key) {
                out.entry(public.to_string()).or_insert_with(|| s.clone());
            }
            let sub = format!("{key}::");
            for (k, s) in local.range(sub.clone()..).take_while(|(k, _)| k.starts_with(&sub)) {
                if out.len() >= MAX_SUMMARIES {
                    break;
                }
                out.entry(format!("{public}::{}", &k[sub.len()..])).or_insert_with(|| s.clone());
            }
        };
        for (name, b) in self.public_bindings(m) {
            let key = join(name);
            match self.binding_res(ctx, b, name) {
                Some(Res::Module(c)) => self.export_map(c, &key, depth + 1, local, out, seen, of_dep),
                Some(Res::Local(p)) => put_local(&Self::local_key(&p), &key, out),
                Some(Res::Dep { krate, rest }) => self.export_dep_map(&krate, &rest, &key, out, of_dep),
                _ => {}
            }
        }
        for (g, public) in &self.scopes[m].globs {
            if !public {
                continue;
            }
            match self.resolve(ctx, g, false) {
                Some(Res::Module(c)) => self.export_map(c, prefix, depth + 1, local, out, seen, of_dep),
                Some(Res::Dep { krate, rest }) => self.export_dep_map(&krate, &rest, prefix, out, of_dep),
                _ => {}
            }
        }
    }

    /// A re-export of `krate::rest` as `key`: the dependency's summaries at and below it.
    fn export_dep_map<V: Clone>(
        &self,
        krate: &str,
        rest: &[String],
        key: &str,
        out: &mut BTreeMap<String, V>,
        of_dep: &dyn Fn(&Exports) -> &BTreeMap<String, V>,
    ) {
        let Some(ex) = self.deps.get(krate) else { return };
        let base = rest.join("::");
        let under = |k: &str| -> Option<String> {
            if base.is_empty() {
                return Some(if key.is_empty() { k.to_string() } else { format!("{key}::{k}") });
            }
            let sub = if k == base { "" } else { k.strip_prefix(&base)?.strip_prefix("::")? };
            Some(match (key.is_empty(), sub.is_empty()) {
                (_, true) => key.to_string(),
                (true, false) => sub.to_string(),
                (false, false) => format!("{key}::{sub}"),
            })
        };
        for (k, s) in of_dep(ex) {
            if out.len() >= MAX_SUMMARIES {
                break;
            }
            if let Some(nk) = under(k).filter(|nk| !nk.is_empty()) {
                out.entry(nk).or_insert_with(|| s.clone());
            }
        }
    }

    fn export_macros(
        &self,
        m: ModId,
        prefix: &str,
        depth: usize,
        marker: &str,
        out: &mut BTreeMap<String, super::ExportedMacro>,
        seen: &mut HashSet<(ModId, String)>,
    ) {
        const MAX_EXPORT_DEPTH: usize = 8;
        if depth > MAX_EXPORT_DEPTH || out.len() > 100_000 || !seen.insert((m, prefix.to_string())) {
            return;
        }
        let join = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") };
        let ctx = Ctx { module: m, layers: &[] };
        if let Some(table) = self.ex.module_macros.borrow().get(m) {
            for (name, (def, public)) in table {
                if *public {
                    out.entry(join(name)).or_insert_with(|| def.export(marker));
                }
            }
        }
        let mut names: Vec<(&String, &Binding)> = self.scopes[m].names.iter().filter(|(_, b)| b.public).collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        for (name, b) in names {
            match &b.kind {
                BindKind::Mod(c) => self.export_macros(*c, &join(name), depth + 1, marker, out, seen),
                BindKind::Import(p) => {
                    if let Some(def) = self.macro_import(ctx, p, 0) {
                        out.entry(join(name)).or_insert_with(|| def.export(marker));
                    }
                }
                _ => {}
            }
        }
        for (g, public) in &self.scopes[m].globs {
            if !public {
                continue;
            }
            match self.resolve(ctx, g, false) {
                Some(Res::Module(c)) => self.export_macros(c, prefix, depth + 1, marker, out, seen),
                Some(Res::Dep { krate, rest }) => {
                    let Some(ex) = self.deps.get(&krate) else { continue };
                    let base = rest.join("::");
                    for (k, v) in &ex.macros {
                        let sub = if base.is_empty() { Some(k.as_str()) } else { k.strip_prefix(&base).and_then(|s| s.strip_prefix("::")) };
                        if let Some(sub) = sub {
                            out.entry(join(sub)).or_insert_with(|| v.clone());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn export_walk(
        &self,
        m: ModId,
        prefix: &str,
        depth: usize,
        out: &mut BTreeMap<String, String>,
        seen: &mut HashSet<(ModId, String)>,
    ) {
        const MAX_EXPORT_DEPTH: usize = 8;
        const MAX_EXPORTS: usize = 200_000;
        if depth > MAX_EXPORT_DEPTH || out.len() > MAX_EXPORTS || !seen.insert((m, prefix.to_string())) {
            return;
        }
        let join = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") };
        let ctx = Ctx { module: m, layers: &[] };
        for (name, b) in self.public_bindings(m) {
            let key = join(name);
            match self.binding_res(ctx, b, name) {
                Some(Res::Module(c)) => self.export_walk(c, &key, depth + 1, out, seen),
                Some(Res::Foreign { symbol, .. }) => {
                    out.entry(key).or_insert_with(|| format!("extern:{symbol}"));
                }
                Some(Res::Ext(p)) => {
                    out.entry(key).or_insert_with(|| p.join("::"));
                }
                Some(Res::Dep { krate, rest }) => self.export_dep(&krate, &rest, &key, out),
                _ => {}
            }
        }
        for (g, public) in &self.scopes[m].globs {
            if !public {
                continue;
            }
            match self.resolve(ctx, g, false) {
                Some(Res::Module(c)) => self.export_walk(c, prefix, depth + 1, out, seen),
                Some(Res::Ext(p)) => {
                    out.entry(join("*")).or_insert_with(|| p.join("::"));
                }
                Some(Res::Dep { krate, rest }) => {
                    let Some(ex) = self.deps.get(&krate) else { continue };
                    let base = rest.join("::");
                    for (k, v) in &ex.aliases {
                        let sub = if base.is_empty() {
                            Some(k.as_str())
                        } else {
                            k.strip_prefix(&base).and_then(|s| s.strip_prefix("::"))
                        };
                        if let Some(sub) = sub {
                            out.entry(join(sub)).or_insert_with(|| v.clone());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A re-export of `krate::rest` as `key`: the dependency's aliases below it, re-rooted.
    fn export_dep(&self, krate: &str, rest: &[String], key: &str, out: &mut BTreeMap<String, String>) {
        let base = rest.join("::");
        if let Some(ex) = self.deps.get(krate) {
            for (k, v) in &ex.aliases {
                let sub = if base.is_empty() {
                    Some(k.as_str())
                } else if k == &base {
                    Some("")
                } else {
                    k.strip_prefix(&base).and_then(|s| s.strip_prefix("::"))
                };
                if let Some(sub) = sub {
                    let nk = if sub.is_empty() { key.to_string() } else { format!("{key}::{sub}") };
                    out.entry(nk).or_insert_with(|| v.clone());
                }
            }
        }
        if !out.contains_key(key) && !rest.is_empty() {
            let t = match self.finalize(Res::Dep { krate: krate.to_string(), rest: rest.to_vec() }) {
                Some(Target::Foreign { symbol, .. }) => format!("extern:{symbol}"),
                Some(Target::Path(p)) => p.join("::"),
                None => return,
            };
            out.insert(key.to_string(), t);
        }
    }
}

/// An alias target (`std::fs::write`, `extern:system`) plus the segments after the alias.
fn target_of(t: &str, tail: &[String], display: &str) -> Option<Target> {
    if let Some(sym) = t.strip_prefix("extern:") {
        return tail.is_empty().then(|| Target::Foreign { symbol: sym.to_string(), display: display.to_string() });
    }
    let mut p: Vec<String> = t.split("::").map(str::to_string).collect();
    p.extend(tail.iter().cloned());
    Some(Target::Path(p))
}

#[cfg(test)]
mod tests {
    use super::super::loader::Loader;
    use super::super::macros::test_expander;
    use super::super::oracle::doubles::{TestCfg, TestRules};
    use super::*;
    use crate::package::FileTree;
    use crate::surface::model::Scope;

    fn use_leaves(src: &str) -> Vec<UseLeaf> {
        let u: syn::ItemUse = syn::parse_str(src).unwrap();
        let mut out = Vec::new();
        flatten_use(&u.tree, &mut Vec::new(), &mut out);
        out
    }

    fn v(s: &str) -> Vec<String> {
        s.split("::").map(str::to_string).collect()
    }

    #[test]
    fn use_trees_flatten() {
        assert_eq!(use_leaves("use std::fs::write as w;"), [UseLeaf::Name("w".into(), v("std::fs::write"))]);
        assert_eq!(
            use_leaves("use std::{fs::{self, File}, io::*, process::Command as _};"),
            [
                UseLeaf::Name("fs".into(), v("std::fs")),
                UseLeaf::Name("File".into(), v("std::fs::File")),
                UseLeaf::Glob(v("std::io")),
                UseLeaf::Anon(v("std::process::Command")),
            ]
        );
        assert_eq!(use_leaves("use std::fs::{self as f};"), [UseLeaf::Name("f".into(), v("std::fs"))]);
        assert_eq!(use_leaves("use super::*;"), [UseLeaf::Glob(v("super"))]);
    }

    struct Fixture {
        loaded: super::super::loader::Loaded,
        deps: BTreeMap<String, std::sync::Arc<Exports>>,
        rules: TestRules,
        cfg: TestCfg,
    }

    fn fixture(files: &[(&str, &str)], deps: &[(&str, &[(&str, &str)])]) -> Fixture {
        let tree: FileTree = files.iter().map(|(p, s)| (p.to_string(), s.as_bytes().to_vec())).collect();
        let cfg = TestCfg::linux(&[]);
        let deps: BTreeMap<String, std::sync::Arc<Exports>> = deps
            .iter()
            .map(|(k, al)| {
                let aliases = al.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
                (k.to_string(), std::sync::Arc::new(Exports { aliases, ..Exports::default() }))
            })
            .collect();
        let rules = TestRules::small();
        let parts = Parts { crate_name: "me", deps: &deps, rules: &rules, cfg: &cfg };
        let (loaded, sink) = Loader::new(&tree, &cfg, Scope::Runtime, test_expander()).load("src/lib.rs", &parts);
        assert!(sink.findings.is_empty(), "{:?}", sink.findings);
        Fixture { loaded, deps, rules: TestRules::small(), cfg }
    }

    impl Fixture {
        fn resolver(&self) -> Resolver<'_> {
            Resolver::new(&self.loaded.modules, "me", &self.deps, &self.rules, &self.cfg, test_expander())
        }
        fn module(&self, path: &str) -> ModId {
            let want: Vec<String> = if path.is_empty() { vec![] } else { v(path) };
            self.loaded.modules.iter().position(|m| m.path == want).unwrap()
        }
    }

    fn resolve_in(r: &Resolver, m: ModId, path: &str) -> Option<Target> {
        let (leading, p) = match path.strip_prefix("::") {
            Some(p) => (true, p),
            None => (false, path),
        };
        let up = UsePath { leading, segs: v(p) };
        r.resolve(Ctx { module: m, layers: &[] }, &up, false).and_then(|x| r.finalize(x))
    }

    fn path(s: &str) -> Option<Target> {
        Some(Target::Path(v(s)))
    }

    #[test]
    fn resolution_follows_scopes() {
        let f = fixture(
            &[(
                "src/lib.rs",
                r#"
                use std::fs::write as w;
                use std::{process::{self, Command}};
                mod fs { pub fn write() {} }
                pub mod a { pub use std::process::Command; pub use super::b::*; }
                mod b { pub use std::env::var; }
                mod c { use crate::a::Command; use super::fs; use std::fs::*; fn f() {} }
                mod d { fn w() {} }
                extern crate std as mystd;
                type Cmd = std::process::Command;
                "#,
            )],
            &[],
        );
        let r = f.resolver();
        let root = f.module("");
        assert_eq!(resolve_in(&r, root, "w"), path("std::fs::write"));
        assert_eq!(resolve_in(&r, root, "process::exit"), path("std::process::exit"));
        assert_eq!(resolve_in(&r, root, "Command::new"), path("std::process::Command::new"));
        assert_eq!(resolve_in(&r, root, "::std::fs::read"), path("std::fs::read"));
        assert_eq!(resolve_in(&r, root, "mystd::env::var"), path("std::env::var"));
        assert_eq!(resolve_in(&r, root, "Cmd::new"), path("std::process::Command::new"));
        // The local module `fs` shadows std's.
        assert_eq!(resolve_in(&r, root, "fs::write"), None);
        assert_eq!(resolve_in(&r, root, "crate::a::Command"), path("std::process::Command"));
        assert_eq!(resolve_in(&r, root, "a::var"), path("std::env::var"), "glob re-export");
        let c = f.module("c");
        assert_eq!(resolve_in(&r, c, "Command"), path("std::process::Command"), "pub use chain");
        assert_eq!(resolve_in(&r, c, "fs::write"), None, "use super::fs is the local one");
        // `use std::fs::*`: names the rules know are tried under the glob, others are not.
        assert_eq!(resolve_in(&r, c, "read"), path("std::fs::read"));
        assert_eq!(resolve_in(&r, c, "f"), None);
        assert_eq!(resolve_in(&r, c, "Unknown"), None);
        assert_eq!(resolve_in(&r, c, "std::env::var"), path("std::env::var"));
        // A local fn `w` is not the import of the root.
        assert_eq!(resolve_in(&r, f.module("d"), "w"), None);
        assert_eq!(resolve_in(&r, f.module("d"), "super::w"), path("std::fs::write"));
    }

    #[test]
    fn dependencies_and_exports() {
        let f = fixture(
            &[(
                "src/lib.rs",
                r#"
                pub use dep::write;
                pub use std::process::Command;
                pub mod sys { extern "C" { pub fn system(c: *const u8) -> i32; #[link_name = "getenv"] pub fn ge(); fn private(); } }
                pub use self::inner::*;
                mod inner { pub use std::env::var; pub fn local() {} }
                pub use std::fs::*;
                pub use dep::nested as n;
                "#,
            )],
            &[("dep", &[("write", "std::fs::write"), ("nested::sys::system", "extern:system")])],
        );
        let r = f.resolver();
        assert_eq!(resolve_in(&r, ROOT, "dep::write"), path("std::fs::write"));
        assert_eq!(
            resolve_in(&r, ROOT, "dep::nested::sys::system"),
            Some(Target::Foreign { symbol: "system".into(), display: "dep::nested::sys::system".into() })
        );
        assert_eq!(resolve_in(&r, ROOT, "dep::other"), path("dep::other"));
        assert_eq!(
            resolve_in(&r, ROOT, "sys::system"),
            Some(Target::Foreign { symbol: "system".into(), display: "me::sys::system".into() })
        );
        let ex = r.exports("__velaris_crate_me", &BTreeMap::new());
        let got: Vec<String> = ex.aliases.iter().map(|(k, v)| format!("{k} -> {v}")).collect();
        assert_eq!(
            got,
            [
                "* -> std::fs",
                "Command -> std::process::Command",
                "n -> dep::nested",
                "n::sys::system -> extern:system",
                "sys::ge -> extern:getenv",
                "sys::system -> extern:system",
                "var -> std::env::var",
                "write -> std::fs::write",
            ]
        );
        // A crate using this one through its exports.
        let mut deps = BTreeMap::new();
        deps.insert("me".to_string(), std::sync::Arc::new(ex));
        let g = Fixture { deps, ..fixture(&[("src/lib.rs", "use me::*;")], &[]) };
        let r2 = Resolver::new(&g.loaded.modules, "other", &g.deps, &g.rules, &g.cfg, test_expander());
        assert_eq!(resolve_in(&r2, ROOT, "me::write"), path("std::fs::write"));
        assert_eq!(resolve_in(&r2, ROOT, "me::read"), path("std::fs::read"), "glob export");
        assert_eq!(resolve_in(&r2, ROOT, "var"), path("std::env::var"), "glob import of a dep");
        assert_eq!(resolve_in(&r2, ROOT, "me::Unknown"), path("me::Unknown"));
    }

    #[test]
    fn cycles_terminate() {
        let f = fixture(
            &[(
                "src/lib.rs",
                "mod a { pub use super::b::*; } mod b { pub use super::a::*; } use a::x; pub use self as me;",
            )],
            &[],
        );
        let r = f.resolver();
        assert_eq!(resolve_in(&r, ROOT, "x"), None);
        assert_eq!(resolve_in(&r, ROOT, "a::nothing"), None);
        let _ = r.exports("__velaris_crate_me", &BTreeMap::new());
    }
}
