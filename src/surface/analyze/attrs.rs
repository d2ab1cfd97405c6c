//! Attributes the analyzer reads: `cfg`, `cfg_attr` (expanded in place), `path`,
//! `link_name`, `link`, `no_mangle`, `export_name` (also in the 2024 `unsafe(..)` form).

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::{Attribute, Expr, ImplItem, Item, Lit, Meta, Stmt, TraitItem};

use super::oracle::CfgEval;

/// Split a token stream at its top-level commas (groups are single tokens, so nested commas
/// stay inside). Empty trailing parts are dropped.
pub(crate) fn split_commas(ts: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for tt in ts {
        if let TokenTree::Punct(p) = &tt
            && p.as_char() == ','
        {
            out.push(cur.drain(..).collect());
            continue;
        }
        cur.push(tt);
    }
    if !cur.is_empty() {
        out.push(cur.into_iter().collect());
    }
    out
}

/// Replace every `#[cfg_attr(pred, a, b)]` by `#[a] #[b]` when `pred` holds (or cannot be
/// parsed: fail closed), by nothing otherwise. Nested `cfg_attr`s are expanded too.
pub(crate) fn expand_cfg_attr(attrs: &mut Vec<Attribute>, cfg: &dyn CfgEval) {
    if !attrs.iter().any(|a| a.path().is_ident("cfg_attr")) {
        return;
    }
    for _round in 0..8 {
        let mut changed = false;
        let mut out = Vec::with_capacity(attrs.len());
        for attr in attrs.drain(..) {
            let Meta::List(list) = &attr.meta else {
                out.push(attr);
                continue;
            };
            if !list.path.is_ident("cfg_attr") {
                out.push(attr);
                continue;
            }
            changed = true;
            let mut parts = split_commas(list.tokens.clone()).into_iter();
            let Some(pred) = parts.next() else { continue };
            if cfg.eval(&pred) == Some(false) {
                continue;
            }
            for part in parts {
                if let Ok(meta) = syn::parse2::<Meta>(part) {
                    out.push(Attribute {
                        pound_token: attr.pound_token,
                        style: attr.style,
                        bracket_token: attr.bracket_token,
                        meta,
                    });
                }
            }
        }
        *attrs = out;
        if !changed {
            break;
        }
    }
}

/// Whether every `#[cfg(..)]` among `attrs` holds. An unparseable predicate holds (fail
/// closed: the code is analyzed).
pub(crate) fn cfg_holds(attrs: &[Attribute], cfg: &dyn CfgEval) -> bool {
    attrs.iter().all(|a| match &a.meta {
        Meta::List(list) if list.path.is_ident("cfg") => cfg.eval(&list.tokens) != Some(false),
        _ => true,
    })
}

/// A foreign item syn leaves as tokens because of the 2024 `safe` qualifier
/// (`pub safe fn f();` in an `unsafe extern` block): the same item without `safe`. Any other
/// item as it is.
pub(crate) fn unsafe_extern_item(it: &syn::ForeignItem) -> std::borrow::Cow<'_, syn::ForeignItem> {
    let syn::ForeignItem::Verbatim(ts) = it else { return std::borrow::Cow::Borrowed(it) };
    let tts: Vec<TokenTree> = ts.clone().into_iter().collect();
    let Some(i) = tts.iter().position(|t| matches!(t, TokenTree::Ident(id) if id == "safe")) else {
        return std::borrow::Cow::Borrowed(it);
    };
    let rest: proc_macro2::TokenStream = tts.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, t)| t.clone()).collect();
    match syn::parse2::<syn::ForeignItem>(rest) {
        Ok(parsed @ (syn::ForeignItem::Fn(_) | syn::ForeignItem::Static(_))) => std::borrow::Cow::Owned(parsed),
        _ => std::borrow::Cow::Borrowed(it),
    }
}

/// `expand_cfg_attr` then `cfg_holds`.
pub(crate) fn active(attrs: &mut Vec<Attribute>, cfg: &dyn CfgEval) -> bool {
    expand_cfg_attr(attrs, cfg);
    cfg_holds(attrs, cfg)
}

/// The string value of `#[name = "..."]` (or `#[unsafe(name = "...")]`).
pub(crate) fn str_value(attrs: &[Attribute], name: &str) -> Option<(String, Span)> {
    attrs.iter().find_map(|a| {
        let meta = unwrap_unsafe(&a.meta)?;
        match &meta {
            Meta::NameValue(nv) if nv.path.is_ident(name) => match &nv.value {
                Expr::Lit(l) => match &l.lit {
                    Lit::Str(s) => Some((s.value(), a.pound_token.span)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    })
}

/// `#[name]` or `#[unsafe(name)]` present.
pub(crate) fn has_flag(attrs: &[Attribute], name: &str) -> Option<Span> {
    attrs.iter().find_map(|a| match unwrap_unsafe(&a.meta)? {
        Meta::Path(p) if p.is_ident(name) => Some(a.pound_token.span),
        _ => None,
    })
}

/// `unsafe(inner)` → inner; anything else as is.
fn unwrap_unsafe(meta: &Meta) -> Option<Meta> {
    match meta {
        Meta::List(l) if l.path.is_ident("unsafe") => syn::parse2::<Meta>(l.tokens.clone()).ok(),
        m => Some(m.clone()),
    }
}

/// The `name = ".."` of each `#[link(..)]`, with the attribute's position; `None` for a
/// `#[link]` without a name.
pub(crate) fn links(attrs: &[Attribute]) -> Vec<(Option<String>, Span)> {
    let mut out = Vec::new();
    for a in attrs {
        let Meta::List(list) = &a.meta else { continue };
        if !list.path.is_ident("link") {
            continue;
        }
        let mut name = None;
        for part in split_commas(list.tokens.clone()) {
            if let Ok(Meta::NameValue(nv)) = syn::parse2::<Meta>(part)
                && nv.path.is_ident("name")
                && let Expr::Lit(l) = &nv.value
                && let Lit::Str(s) = &l.lit
            {
                name = Some(s.value());
            }
        }
        out.push((name, a.pound_token.span));
    }
    out
}

/// Whether the cfgs of `attrs` hold, without modifying them (`cfg_attr` expanded on a copy
/// when there is one).
pub(crate) fn holds(attrs: &[Attribute], cfg: &dyn CfgEval) -> bool {
    if attrs.iter().any(|a| a.path().is_ident("cfg_attr")) {
        let mut v = attrs.to_vec();
        return active(&mut v, cfg);
    }
    cfg_holds(attrs, cfg)
}

/// `attrs` with `cfg_attr` expanded (borrowed when there is none).
pub(crate) fn effective<'a>(attrs: &'a [Attribute], cfg: &dyn CfgEval) -> std::borrow::Cow<'a, [Attribute]> {
    if attrs.iter().any(|a| a.path().is_ident("cfg_attr")) {
        let mut v = attrs.to_vec();
        expand_cfg_attr(&mut v, cfg);
        return std::borrow::Cow::Owned(v);
    }
    std::borrow::Cow::Borrowed(attrs)
}

macro_rules! attrs_accessors {
    ($name:ident, $name_mut:ident, $ty:ty, [$($variant:path),* $(,)?]) => {
        #[allow(dead_code)]
        pub(crate) fn $name(node: &$ty) -> &[Attribute] {
            match node {
                $($variant(i) => &i.attrs,)*
                _ => &[],
            }
        }
        #[allow(dead_code)]
        pub(crate) fn $name_mut(node: &mut $ty) -> Option<&mut Vec<Attribute>> {
            match node {
                $($variant(i) => Some(&mut i.attrs),)*
                _ => None,
            }
        }
    };
}

attrs_accessors!(item_attrs, item_attrs_mut, Item, [
    Item::Const, Item::Enum, Item::ExternCrate, Item::Fn, Item::ForeignMod, Item::Impl,
    Item::Macro, Item::Mod, Item::Static, Item::Struct, Item::Trait, Item::TraitAlias,
    Item::Type, Item::Union, Item::Use,
]);
attrs_accessors!(impl_item_attrs, impl_item_attrs_mut, ImplItem, [
    ImplItem::Const, ImplItem::Fn, ImplItem::Type, ImplItem::Macro,
]);
attrs_accessors!(trait_item_attrs, trait_item_attrs_mut, TraitItem, [
    TraitItem::Const, TraitItem::Fn, TraitItem::Type, TraitItem::Macro,
]);
attrs_accessors!(foreign_item_attrs, foreign_item_attrs_mut, syn::ForeignItem, [
    syn::ForeignItem::Fn, syn::ForeignItem::Static, syn::ForeignItem::Type, syn::ForeignItem::Macro,
]);
attrs_accessors!(expr_attrs, expr_attrs_mut, Expr, [
    Expr::Array, Expr::Assign, Expr::Async, Expr::Await, Expr::Binary, Expr::Block, Expr::Break,
    Expr::Call, Expr::Cast, Expr::Closure, Expr::Const, Expr::Continue, Expr::Field,
    Expr::ForLoop, Expr::Group, Expr::If, Expr::Index, Expr::Infer, Expr::Let, Expr::Lit,
    Expr::Loop, Expr::Macro, Expr::Match, Expr::MethodCall, Expr::Paren, Expr::Path,
    Expr::Range, Expr::RawAddr, Expr::Reference, Expr::Repeat, Expr::Return, Expr::Struct,
    Expr::Try, Expr::TryBlock, Expr::Tuple, Expr::Unary, Expr::Unsafe, Expr::While, Expr::Yield,
]);

pub(crate) fn stmt_attrs(stmt: &Stmt) -> &[Attribute] {
    match stmt {
        Stmt::Local(l) => &l.attrs,
        Stmt::Item(i) => item_attrs(i),
        Stmt::Expr(e, _) => expr_attrs(e),
        Stmt::Macro(m) => &m.attrs,
    }
}

#[cfg(test)]
mod tests {
    use super::super::oracle::doubles::TestCfg;
    use super::*;

    fn attrs(src: &str) -> Vec<Attribute> {
        let item: syn::ItemFn = syn::parse_str(&format!("{src} fn f() {{}}")).unwrap();
        item.attrs
    }

    #[test]
    fn cfg_and_cfg_attr() {
        let cfg = TestCfg::linux(&["net"]);
        assert!(active(&mut attrs("#[cfg(unix)]"), &cfg));
        assert!(!active(&mut attrs("#[cfg(windows)]"), &cfg));
        assert!(active(&mut attrs("#[cfg(feature = \"net\")]"), &cfg));
        assert!(!active(&mut attrs("#[cfg(all(unix, feature = \"fs\"))]"), &cfg));
        // Unparseable: fail closed.
        assert!(active(&mut attrs("#[cfg(?what)]"), &cfg));
        let mut a = attrs("#[cfg_attr(unix, path = \"u.rs\")] #[cfg_attr(windows, path = \"w.rs\")]");
        assert!(active(&mut a, &cfg));
        assert_eq!(str_value(&a, "path").unwrap().0, "u.rs");
        let mut a = attrs("#[cfg_attr(unix, cfg(windows))]");
        assert!(!active(&mut a, &cfg));
        let mut a = attrs("#[cfg_attr(unix, cfg_attr(unix, no_mangle))]");
        assert!(active(&mut a, &cfg));
        assert!(has_flag(&a, "no_mangle").is_some());
        assert!(has_flag(&attrs("#[unsafe(no_mangle)]"), "no_mangle").is_some());
        assert_eq!(
            str_value(&attrs("#[unsafe(export_name = \"x\")]"), "export_name").unwrap().0,
            "x"
        );
    }
}
