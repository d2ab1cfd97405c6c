//! Source that syn does not parse but rustc compiles: older editions' syntax, repaired at the
//! token level, and, failing that, recovery item by item so that one item syn cannot read
//! does not lose its file.
//!
//! Repairs, each applied where the parse error points and the parse retried (bounded):
//! - a bare trait object (2015 and 2018: `Box<Error + Send>`, `type F = Fn(&T) + Send;`)
//!   gets its `dyn`;
//! - an identifier that later editions made a keyword (2015: `async`, `await`, `dyn`, `try`)
//!   becomes a raw identifier;
//! - an anonymous parameter of a trait method (2015: `fn f(u8);`) gets the pattern `_`.
//!
//! What still does not parse is split into top-level items; each item that parses is kept,
//! each one that does not is returned as tokens (the analyzer scans them and reports the item
//! `unanalyzed`).

use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

use crate::surface::syntax::mbe::Edition;

/// The result of recovering a file.
pub(crate) struct Recovered {
    pub file: syn::File,
    /// Items that still do not parse: where, why, and their tokens.
    pub failed: Vec<(Span, String, TokenStream)>,
}

const MAX_REPAIRS: usize = 64;

/// Parse `ts` as a file, repairing older-edition syntax, then item by item.
pub(crate) fn recover(ts: TokenStream, edition: Edition) -> Recovered {
    let mut ts = ts;
    if edition <= Edition::E2018 {
        for _ in 0..MAX_REPAIRS {
            match syn::parse2::<syn::File>(ts.clone()) {
                Ok(file) => return Recovered { file, failed: Vec::new() },
                Err(e) => match repair(&ts, e.span(), edition) {
                    Some(fixed) => ts = fixed,
                    None => break,
                },
            }
        }
    }
    by_item(ts, edition)
}

/// Split the top level into items and parse each (with the repairs, per item).
fn by_item(ts: TokenStream, edition: Edition) -> Recovered {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let mut attrs = Vec::new();
    let mut start = 0;
    // Inner attributes at the top of the file.
    while let (Some(TokenTree::Punct(p)), Some(TokenTree::Punct(b)), Some(TokenTree::Group(g))) =
        (tts.get(start), tts.get(start + 1), tts.get(start + 2))
    {
        if p.as_char() == '#' && b.as_char() == '!' && g.delimiter() == Delimiter::Bracket {
            let attr: TokenStream = tts[start..start + 3].iter().cloned().collect();
            if let Ok(f) = syn::parse2::<syn::File>(attr) {
                attrs.extend(f.attrs);
            }
            start += 3;
        } else {
            break;
        }
    }
    let mut items = Vec::new();
    let mut failed = Vec::new();
    for chunk in split_items(&tts[start..]) {
        let span = chunk.first().map_or_else(Span::call_site, TokenTree::span);
        let chunk_ts: TokenStream = chunk.iter().cloned().collect();
        match parse_item(chunk_ts.clone(), edition) {
            Ok(item) => items.push(item),
            Err(e) => failed.push((span, e.to_string(), chunk_ts)),
        }
    }
    Recovered { file: syn::File { shebang: None, attrs, items }, failed }
}

fn parse_item(ts: TokenStream, edition: Edition) -> syn::Result<syn::Item> {
    let mut ts = ts;
    let mut first_err = None;
    for _ in 0..MAX_REPAIRS {
        match syn::parse2::<syn::Item>(ts.clone()) {
            Ok(i) => return Ok(i),
            Err(e) => {
                let fixed = if edition <= Edition::E2018 { repair(&ts, e.span(), edition) } else { None };
                first_err.get_or_insert(e);
                match fixed {
                    Some(f) => ts = f,
                    None => break,
                }
            }
        }
    }
    Err(first_err.expect("at least one attempt"))
}

/// Top-level items: a chunk ends at a `;`, or at a `{ .. }` group unless an `=` came first
/// (an initializer, which ends at its `;`).
fn split_items(tts: &[TokenTree]) -> Vec<&[TokenTree]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen_eq = false;
    for (i, tt) in tts.iter().enumerate() {
        let end = match tt {
            TokenTree::Punct(p) if p.as_char() == ';' => true,
            TokenTree::Punct(p) if p.as_char() == '=' && p.spacing() == Spacing::Alone => {
                seen_eq = true;
                false
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                !seen_eq && !matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ';')
            }
            _ => false,
        };
        if end {
            out.push(&tts[start..=i]);
            start = i + 1;
            seen_eq = false;
        }
    }
    if start < tts.len() {
        out.push(&tts[start..]);
    }
    out
}

/// The path (indices through groups) to the token that starts at `at`; a group's closing
/// delimiter is its path followed by [`CLOSE`].
fn find(ts: &TokenStream, at: proc_macro2::LineColumn) -> Option<Vec<usize>> {
    for (i, tt) in ts.clone().into_iter().enumerate() {
        if tt.span().start() == at {
            return Some(vec![i]);
        }
        if let TokenTree::Group(g) = &tt {
            if let Some(mut p) = find(&g.stream(), at) {
                p.insert(0, i);
                return Some(p);
            }
            if g.span_close().start() == at {
                return Some(vec![i, CLOSE]);
            }
        }
    }
    None
}

/// In a path from [`find`]: the closing delimiter of the group before it.
const CLOSE: usize = usize::MAX;

/// Apply `f` to the token list of the group that holds the token at `path`, with that
/// token's index; rebuild the stream.
fn edit(ts: &TokenStream, path: &[usize], f: &mut dyn FnMut(&mut Vec<TokenTree>, usize) -> bool) -> Option<TokenStream> {
    let mut tts: Vec<TokenTree> = ts.clone().into_iter().collect();
    if path.len() == 1 {
        return f(&mut tts, path[0]).then(|| tts.into_iter().collect());
    }
    let TokenTree::Group(g) = tts.get(path[0])? else { return None };
    let inner = edit(&g.stream(), &path[1..], f)?;
    let mut ng = Group::new(g.delimiter(), inner);
    ng.set_span(g.span());
    tts[path[0]] = TokenTree::Group(ng);
    Some(tts.into_iter().collect())
}

fn punct(tt: Option<&TokenTree>, c: char) -> bool {
    matches!(tt, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// One repair at the token the error points at, or `None`.
fn repair(ts: &TokenStream, span: Span, edition: Edition) -> Option<TokenStream> {
    let path = find(ts, span.start())?;
    if path.last() == Some(&CLOSE) {
        return anonymous_params(ts, &path, edition);
    }
    edit(ts, &path, &mut |tts, i| {
        match &tts[i] {
            // 2015 identifiers that are keywords later.
            TokenTree::Ident(id)
                if edition == Edition::E2015 && matches!(id.to_string().as_str(), "async" | "await" | "dyn" | "try") =>
            {
                tts[i] = TokenTree::Ident(Ident::new_raw(&id.to_string(), id.span()));
                true
            }
            // A bare `Fn(..)` trait object: syn stops at the parenthesized arguments.
            TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis && matches!(tts.get(i.wrapping_sub(1)), Some(TokenTree::Ident(_))) => {
                match type_start(tts, i + 1) {
                    Some(j) => {
                        tts.insert(j, TokenTree::Ident(Ident::new("dyn", tts[j].span())));
                        true
                    }
                    None => false,
                }
            }
            // A bare trait object: `Path + Bound`.
            TokenTree::Punct(p) if p.as_char() == '+' => match type_start(tts, i) {
                Some(j) => {
                    tts.insert(j, TokenTree::Ident(Ident::new("dyn", tts[j].span())));
                    true
                }
                None => false,
            },
            _ => false,
        }
    })
    .or_else(|| anonymous_params(ts, &path, edition))
}

/// The index where the type that ends right before `tts[plus]` starts: a path with generic
/// arguments, or `Fn(..) -> R` sugar. `None` if it is not such a type, or already `dyn`.
fn type_start(tts: &[TokenTree], plus: usize) -> Option<usize> {
    let mut j = plus;
    loop {
        let k = j.checked_sub(1)?;
        match &tts[k] {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => {
                // `Fn(A, B)`: the group follows the trait name.
                if !matches!(tts.get(k.wrapping_sub(1)), Some(TokenTree::Ident(_))) {
                    return None;
                }
                j = k;
            }
            TokenTree::Punct(p) if p.as_char() == '>' => {
                // `-> R` return type of Fn sugar, or `<..>` generic arguments.
                if punct(tts.get(k.wrapping_sub(1)), '-') {
                    return None;
                }
                let mut depth = 0i32;
                let mut m = k;
                loop {
                    match &tts[m] {
                        TokenTree::Punct(p) if p.as_char() == '>' && !punct(tts.get(m.wrapping_sub(1)), '-') => depth += 1,
                        TokenTree::Punct(p) if p.as_char() == '<' => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                    m = m.checked_sub(1)?;
                }
                j = m;
            }
            TokenTree::Ident(id) => {
                let s = id.to_string();
                if s == "dyn" || s == "impl" {
                    return None;
                }
                // A return type `Fn(A) -> R`: keep going past `->` and the arguments.
                if punct(tts.get(k.wrapping_sub(1)), '>') && punct(tts.get(k.wrapping_sub(2)), '-') {
                    j = k - 2;
                    continue;
                }
                j = k;
                // `a::b`
                if punct(tts.get(j.wrapping_sub(1)), ':') && punct(tts.get(j.wrapping_sub(2)), ':') {
                    j -= 2;
                    continue;
                }
                return Some(j);
            }
            _ => return None,
        }
    }
}

/// 2015 trait methods with parameters that are only a type (`fn f(u8, &str);`): give each
/// such parameter the pattern `_`.
fn anonymous_params(ts: &TokenStream, path: &[usize], edition: Edition) -> Option<TokenStream> {
    if edition != Edition::E2015 || path.len() < 2 {
        return None;
    }
    // The error points into the parameter list: edit that group's tokens.
    let (group_path, _) = path.split_at(path.len() - 1);
    let (outer, last) = group_path.split_at(group_path.len() - 1);
    let idx = last[0];
    let rebuild = |tts: &mut Vec<TokenTree>, _i: usize| -> bool {
        let TokenTree::Group(g) = &tts[idx] else { return false };
        if g.delimiter() != Delimiter::Parenthesis {
            return false;
        }
        let params: Vec<TokenTree> = g.stream().into_iter().collect();
        let mut out: Vec<TokenTree> = Vec::new();
        let mut changed = false;
        for part in params.split(|t| punct(Some(t), ',')) {
            if !out.is_empty() {
                out.push(TokenTree::Punct(Punct::new(',', Spacing::Alone)));
            }
            let has_colon = part.iter().enumerate().any(|(k, t)| {
                punct(Some(t), ':') && !punct(part.get(k + 1), ':') && !punct(part.get(k.wrapping_sub(1)), ':')
            });
            let is_self = part.iter().any(|t| matches!(t, TokenTree::Ident(id) if id == "self"));
            if !part.is_empty() && !has_colon && !is_self {
                out.push(TokenTree::Ident(Ident::new("_", part[0].span())));
                out.push(TokenTree::Punct(Punct::new(':', Spacing::Alone)));
                changed = true;
            }
            out.extend(part.iter().cloned());
        }
        if !changed {
            return false;
        }
        let mut ng = Group::new(Delimiter::Parenthesis, out.into_iter().collect());
        ng.set_span(g.span());
        tts[idx] = TokenTree::Group(ng);
        true
    };
    if outer.is_empty() {
        let mut tts: Vec<TokenTree> = ts.clone().into_iter().collect();
        let f = rebuild;
        return f(&mut tts, idx).then(|| tts.into_iter().collect());
    }
    let f = rebuild;
    edit(ts, &[outer, &[idx]].concat(), &mut |tts, i| f(tts, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(src: &str, edition: Edition) -> (Vec<String>, usize) {
        let r = recover(src.parse().unwrap(), edition);
        let names = r
            .file
            .items
            .iter()
            .map(|i| match i {
                syn::Item::Type(t) => format!("type {}", t.ident),
                syn::Item::Fn(f) => format!("fn {}", f.sig.ident),
                syn::Item::Trait(t) => format!("trait {}", t.ident),
                syn::Item::Struct(s) => format!("struct {}", s.ident),
                syn::Item::Static(s) => format!("static {}", s.ident),
                _ => "other".to_string(),
            })
            .collect();
        (names, r.failed.len())
    }

    #[test]
    fn bare_trait_objects_get_dyn() {
        let src = "type Action = Fn(&siginfo_t) + Send + Sync; fn f(x: Box<Error + Send>) {} type G = Arc<Fn(u8) -> u8 + Send>; struct S { a: Box<::std::error::Error + Send> }";
        assert_eq!(items(src, Edition::E2015), (vec!["type Action".into(), "fn f".into(), "type G".into(), "struct S".into()], 0));
        // Not in 2021, where it is an error: item-by-item recovery instead (syn reads the two
        // inside generic arguments, not the two `Fn(..)` ones).
        assert_eq!(items(src, Edition::E2021), (vec!["fn f".into(), "struct S".into()], 2));
    }

    #[test]
    fn old_keywords_and_anonymous_parameters() {
        let src = "fn async() {} fn f() { let dyn = 1; try!(x); } trait T { fn g(u8, &str); fn h(&self, u8) -> u8; }";
        assert_eq!(items(src, Edition::E2015), (vec!["fn r#async".into(), "fn f".into(), "trait T".into()], 0));
    }

    #[test]
    fn one_bad_item_does_not_lose_the_file() {
        let src = "#![allow(x)] fn a() {} fn b(x: ) {} static S: T = T { x: 1 }; struct C;";
        let r = recover(src.parse().unwrap(), Edition::E2021);
        assert_eq!(r.file.attrs.len(), 1);
        assert_eq!(r.file.items.len(), 3, "a, S and C survive");
        assert_eq!(r.failed.len(), 1);
        assert!(r.failed[0].2.to_string().starts_with("fn b"));
    }
}
