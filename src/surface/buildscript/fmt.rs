//! Macros in build scripts: `println!` (what cargo reads), `format!`, `write!`/`writeln!`,
//! `panic!` and the assertions, `vec!`, `concat!`, `cfg!`, `env!`, `include_str!`,
//! `matches!`, and the script's own `macro_rules!`; and the formatting machinery they share
//! (`{}`, `{:?}`, `{:#?}`, widths, fills, radixes), user `Display`/`Debug` impls included.

use std::cell::RefCell;
use std::rc::Rc;

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, Token};

use super::interp::{Flow, Interp, R, Scope, parse_args};
use super::value::*;

/// A macro's parsed arguments, kept in the script's cache (so the syntax in them stays put).
pub struct MacroArgs(Rc<Result<Vec<Expr>, String>>);

impl std::ops::Deref for MacroArgs {
    type Target = [Expr];
    fn deref(&self) -> &[Expr] {
        match &*self.0 {
            Ok(v) => v,
            Err(_) => &[],
        }
    }
}

/// A formatting macro's arguments, and the pieces of its format string when it is a literal.
struct FmtParsed {
    args: Vec<FmtArg>,
    pieces: std::cell::OnceCell<Result<Vec<Piece>, String>>,
}

/// One argument of a formatting macro: `expr` or `name = expr`.
struct FmtArg {
    name: Option<String>,
    expr: Expr,
}

impl Parse for FmtArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(syn::Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let name: syn::Ident = input.parse()?;
            let _: Token![=] = input.parse()?;
            let expr: Expr = input.parse()?;
            return Ok(FmtArg { name: Some(name.to_string()), expr });
        }
        Ok(FmtArg { name: None, expr: input.parse()? })
    }
}

fn parse_fmt_args(tokens: &TokenStream) -> syn::Result<Vec<FmtArg>> {
    use syn::parse::Parser;
    let p = syn::punctuated::Punctuated::<FmtArg, Token![,]>::parse_terminated;
    Ok(p.parse2(tokens.clone())?.into_iter().collect())
}

/// A format spec: `{arg:spec}`.
#[derive(Default, Clone)]
struct Spec {
    fill: char,
    align: Option<char>,
    plus: bool,
    alt: bool,
    zero: bool,
    width: Option<Count>,
    precision: Option<Count>,
    ty: String,
}

#[derive(Clone)]
enum Count {
    Lit(usize),
    Arg(ArgRef),
}

#[derive(Clone)]
enum ArgRef {
    Next,
    Index(usize),
    Name(String),
}

enum Piece {
    Lit(String),
    Arg(ArgRef, Spec),
}

fn parse_format(s: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                lit.push('{');
                i += 2;
                continue;
            }
            let close = chars[i..].iter().position(|&x| x == '}').ok_or("an unclosed `{` in a format string")? + i;
            let inner: String = chars[i + 1..close].iter().collect();
            if !lit.is_empty() {
                out.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            let (arg, spec) = match inner.split_once(':') {
                Some((a, s)) => (a.trim().to_string(), s.to_string()),
                None => (inner.trim().to_string(), String::new()),
            };
            let arg = arg_ref(&arg);
            out.push(Piece::Arg(arg, parse_spec(&spec)?));
            i = close + 1;
        } else if c == '}' {
            if chars.get(i + 1) == Some(&'}') {
                lit.push('}');
                i += 2;
                continue;
            }
            return Err("an unmatched `}` in a format string".into());
        } else {
            lit.push(c);
            i += 1;
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

fn arg_ref(s: &str) -> ArgRef {
    if s.is_empty() {
        ArgRef::Next
    } else if let Ok(n) = s.parse::<usize>() {
        ArgRef::Index(n)
    } else {
        ArgRef::Name(s.to_string())
    }
}

fn parse_count(s: &str) -> Option<Count> {
    if let Some(a) = s.strip_suffix('$') {
        return Some(Count::Arg(arg_ref(a)));
    }
    s.parse::<usize>().ok().map(Count::Lit)
}

fn parse_spec(s: &str) -> Result<Spec, String> {
    let mut spec = Spec { fill: ' ', ..Spec::default() };
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '^');
    if chars.len() >= 2 && is_align(chars[1]) {
        spec.fill = chars[0];
        spec.align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        spec.align = Some(chars[0]);
        i = 1;
    }
    if chars.get(i) == Some(&'+') {
        spec.plus = true;
        i += 1;
    } else if chars.get(i) == Some(&'-') {
        i += 1;
    }
    if chars.get(i) == Some(&'#') {
        spec.alt = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') && !chars.get(i + 1).is_some_and(|c| *c == '$') {
        spec.zero = true;
        i += 1;
    }
    let rest: String = chars[i..].iter().collect();
    let (before_prec, prec) = match rest.split_once('.') {
        Some((a, b)) => (a.to_string(), Some(b.to_string())),
        None => (rest.clone(), None),
    };
    // width then type (the type is a suffix of letters and `?`).
    let split = |s: &str| -> (String, String) {
        let t = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '$' || c.is_ascii_alphabetic() && false);
        let idx = s.len() - t.len();
        (s[..idx].to_string(), t.to_string())
    };
    match prec {
        None => {
            let (w, t) = split_width_type(&before_prec);
            if !w.is_empty() {
                spec.width = Some(parse_count(&w).ok_or_else(|| format!("format width `{w}`"))?);
            }
            spec.ty = t;
        }
        Some(p) => {
            if !before_prec.is_empty() {
                spec.width = Some(parse_count(&before_prec).ok_or_else(|| format!("format width `{before_prec}`"))?);
            }
            let (pn, t) = if let Some(r) = p.strip_prefix('*') {
                ("*".to_string(), r.to_string())
            } else {
                split_width_type(&p)
            };
            let _ = split;
            spec.precision = Some(if pn == "*" { Count::Arg(ArgRef::Next) } else { parse_count(&pn).ok_or_else(|| format!("format precision `{pn}`"))? });
            spec.ty = t;
        }
    }
    if !matches!(spec.ty.as_str(), "" | "?" | "x" | "X" | "o" | "b" | "e" | "E" | "x?" | "X?") {
        return Err(format!("format type `{}`", spec.ty));
    }
    Ok(spec)
}

/// `12$x` → ("12$", "x"); `w$` → ("w$", ""); `x` → ("", "x").
fn split_width_type(s: &str) -> (String, String) {
    if let Some(d) = s.find('$') {
        return (s[..=d].to_string(), s[d + 1..].to_string());
    }
    let n = s.chars().take_while(|c| c.is_ascii_digit()).count();
    (s[..n].to_string(), s[n..].to_string())
}

impl<'a> Interp<'a> {
    /// Evaluate a macro invocation.
    pub fn eval_macro(&mut self, mac: &syn::Macro, scope: &Rc<Scope>, _tail: bool) -> R<V> {
        let span = mac.path.span();
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let std_path = mac.path.segments.len() == 1 || matches!(mac.path.segments.first().map(|s| s.ident.to_string()).as_deref(), Some("std" | "core" | "alloc"));
        if mac.path.segments.len() == 1 {
            if let Some(rules) = self.local_macros.iter().rev().find(|(n, _)| *n == name).map(|(_, r)| r.clone()) {
                return self.expand_user(&rules, mac, scope);
            }
            if let Some(rules) = self.script.macro_def(self.module, &name) {
                return self.expand_user(&rules, mac, scope);
            }
        }
        if !std_path {
            return self.stop(span, format!("macro `{}!`", super::interp::path_text(&mac.path)));
        }
        let at: Rc<str> = Rc::from(self.at(span).as_str());
        match name.as_str() {
            "println" | "print" => {
                let mut s = if mac.tokens.is_empty() { Vec::new() } else { self.format(&mac.tokens, scope, span)? };
                if name == "println" {
                    s.push(Seg::Lit("\n".into()));
                }
                self.write_stdout(normalize(s), at);
                Ok(V::Unit)
            }
            "eprintln" | "eprint" => {
                if !mac.tokens.is_empty() {
                    self.format(&mac.tokens, scope, span)?;
                }
                Ok(V::Unit)
            }
            "format" | "format_args" => {
                let s = self.format(&mac.tokens, scope, span)?;
                Ok(V::from_segs(s))
            }
            "write" | "writeln" => {
                let parsed = self.fmt_parsed(&mac.tokens, span)?;
                let Some(dst) = parsed.args.first() else { return self.stop(span, format!("`{name}!` without a destination")) };
                let _ = dst;
                let mut s = if parsed.args.len() > 1 { self.format_parsed(&parsed, 1, scope, span)? } else { Vec::new() };
                if name == "writeln" {
                    s.push(Seg::Lit("\n".into()));
                }
                self.write_to(&parsed.args[0].expr, normalize(s), scope, at)
            }
            "panic" | "unreachable" | "todo" | "unimplemented" => Err(Flow::Fail(format!("{at}: {name}!"))),
            "assert" | "debug_assert" => {
                let args = self.macro_args(&mac.tokens, span)?;
                let Some(c) = args.first() else { return Ok(V::Unit) };
                let v = self.eval_expr(c, scope)?;
                match deref(&v) {
                    V::Bool(false) => Err(Flow::Fail(format!("{at}: assertion failed"))),
                    // Unknown: the paths on which it fails end the build; the others go on.
                    _ => Ok(V::Unit),
                }
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                let args = self.macro_args(&mac.tokens, span)?;
                if args.len() < 2 {
                    return self.stop(span, format!("`{name}!` with fewer than two arguments"));
                }
                let a = self.eval_expr(&args[0], scope)?;
                let b = self.eval_expr(&args[1], scope)?;
                let eq = value_eq(&a, &b);
                let want = name.ends_with("_eq");
                match eq {
                    Some(x) if x != want => Err(Flow::Fail(format!("{at}: assertion failed"))),
                    _ => Ok(V::Unit),
                }
            }
            "vec" => {
                let key = (&mac.tokens as *const TokenStream as usize, 0usize);
                let cached = self.script.cache.borrow().expansions.get(&key).cloned();
                let parsed = match cached {
                    Some(p) => p,
                    None => {
                        let t = &mac.tokens;
                        let p = match syn::parse2::<syn::ExprRepeat>(quote::quote!([#t])) {
                            Ok(r) => Ok(super::interp::Expansion::Expr(Expr::Repeat(r))),
                            Err(_) => match syn::parse2::<syn::ExprArray>(quote::quote!([#t])) {
                                Ok(a) => Ok(super::interp::Expansion::Expr(Expr::Array(a))),
                                Err(e) => Err(e.to_string()),
                            },
                        };
                        let p = Rc::new(p);
                        self.script.cache.borrow_mut().expansions.insert(key, p.clone());
                        p
                    }
                };
                match &*parsed {
                    Ok(super::interp::Expansion::Expr(e)) => return self.eval_expr(e, scope),
                    Ok(_) => {}
                    Err(e) => return self.stop(span, format!("`vec!`: {e}")),
                }
                let args = self.macro_args(&mac.tokens, span)?;
                let mut items = Vec::new();
                for a in args.iter() {
                    items.push(self.eval_expr(a, scope)?);
                }
                Ok(V::vec(items))
            }
            "concat" => {
                let args = self.macro_args(&mac.tokens, span)?;
                let mut segs = Vec::new();
                for a in args.iter() {
                    let v = self.eval_expr(a, scope)?;
                    segs.extend(self.display(&v, span)?);
                }
                Ok(V::from_segs(segs))
            }
            "stringify" => Ok(V::string(mac.tokens.to_string())),
            "cfg" => Ok(match self.input.host_cfg.eval_tokens(&mac.tokens) {
                Some(b) => V::Bool(b),
                None => V::unknown(&format!("cfg!({})", super::interp::clip(&mac.tokens.to_string())), Kind::Bool),
            }),
            "env" | "option_env" => {
                let args = self.macro_args(&mac.tokens, span)?;
                let Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) = args.first() else {
                    return self.stop(span, format!("`{name}!` of a computed name"));
                };
                match (self.compile_env(&s.value()), name.as_str()) {
                    (Ok(Some(v)), "env") => Ok(v),
                    (Ok(None), "env") => Err(Flow::Fail(format!("{at}: env!({:?}) is not set when the build script is compiled", s.value()))),
                    (Err(()), "env") => Ok(V::unknown(&format!("env {} when the build script is compiled", s.value()), Kind::Str)),
                    (Ok(v), _) => Ok(V::Option(v.map(Rc::new))),
                    (Err(()), _) => Ok(V::unknown(&format!("env {} when the build script is compiled", s.value()), Kind::Any)),
                }
            }
            "include_str" | "include_bytes" => {
                let args = self.macro_args(&mac.tokens, span)?;
                let Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) = args.first() else {
                    return self.stop(span, format!("`{name}!` of a computed path"));
                };
                let dir = crate::surface::syntax::paths::dir_of(&self.script.files[self.file]).to_string();
                let Some(path) = crate::surface::syntax::paths::join(&dir, &s.value()) else {
                    return self.stop(span, format!("`{name}!` of a file outside the package"));
                };
                let Some(bytes) = self.input.files.get(&path) else {
                    return self.stop(span, format!("`{name}!` of {path}, which is not in the package"));
                };
                if name == "include_bytes" {
                    Ok(V::Bytes(Rc::new(bytes.clone())))
                } else {
                    match std::str::from_utf8(bytes) {
                        Ok(t) => Ok(V::str(t)),
                        Err(_) => self.stop(span, format!("include_str! of {path}, which is not UTF-8")),
                    }
                }
            }
            "matches" => {
                struct M {
                    e: Expr,
                    p: syn::Pat,
                    g: Option<Expr>,
                }
                impl Parse for M {
                    fn parse(input: ParseStream) -> syn::Result<Self> {
                        let e: Expr = input.parse()?;
                        let _: Token![,] = input.parse()?;
                        let p = syn::Pat::parse_multi_with_leading_vert(input)?;
                        let g = if input.peek(Token![if]) {
                            let _: Token![if] = input.parse()?;
                            Some(input.parse()?)
                        } else {
                            None
                        };
                        let _: Option<Token![,]> = input.parse()?;
                        Ok(M { e, p, g })
                    }
                }
                let key = &mac.tokens as *const TokenStream as usize;
                let cached = self.script.cache.borrow().fmt.get(&key).cloned();
                let any = match cached {
                    Some(a) => a,
                    None => {
                        let m: Result<M, String> = syn::parse2(mac.tokens.clone()).map_err(|e| e.to_string());
                        let a: Rc<dyn std::any::Any> = Rc::new(m);
                        self.script.cache.borrow_mut().fmt.insert(key, a.clone());
                        a
                    }
                };
                let Some(Ok(m)) = any.downcast_ref::<Result<M, String>>() else { return self.stop(span, "`matches!` of an unknown shape") };
                let v = self.eval_expr(&m.e, scope)?;
                let s = Scope::child(scope);
                if !self.bind_pat(&m.p, v, &s, false)? {
                    return Ok(V::Bool(false));
                }
                match &m.g {
                    Some(g) => {
                        let gv = self.eval_expr(g, &s)?;
                        Ok(deref(&gv))
                    }
                    None => Ok(V::Bool(true)),
                }
            }
            "cfg_aliases" if self.deps.values().any(|c| c == "cfg_aliases") => self.cfg_aliases(&mac.tokens, span),
            "line" => Ok(V::Int(span.start().line as i128)),
            "column" => Ok(V::Int(span.start().column as i128 + 1)),
            "file" => Ok(V::str(&self.script.files[self.file])),
            "module_path" => Ok(V::str("build_script_build")),
            "dbg" => {
                let args = self.macro_args(&mac.tokens, span)?;
                match args.first() {
                    Some(a) => self.eval_expr(a, scope),
                    None => Ok(V::Unit),
                }
            }
            _ => self.stop(span, format!("macro `{name}!`")),
        }
    }

    /// `cfg_aliases! { name: { predicate }, .. }` (the `cfg_aliases` crate): each alias is
    /// set when its predicate holds for the target cfgs and features cargo passes
    /// (`CARGO_CFG_*`, `CARGO_FEATURE_*`), earlier aliases usable in later predicates.
    fn cfg_aliases(&mut self, tokens: &TokenStream, span: Span) -> R<V> {
        use proc_macro2::TokenTree;
        let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
        let mut aliases: Vec<(String, V)> = Vec::new();
        let mut i = 0;
        while i < tts.len() {
            let (TokenTree::Ident(name), Some(TokenTree::Punct(colon)), Some(TokenTree::Group(g))) = (&tts[i], tts.get(i + 1), tts.get(i + 2)) else {
                return self.stop(span, "`cfg_aliases!` input of an unknown shape");
            };
            if colon.as_char() != ':' {
                return self.stop(span, "`cfg_aliases!` input of an unknown shape");
            }
            i += 3;
            if matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ',') {
                i += 1;
            }
            let Some(expr) = crate::surface::cfg::parse_tokens(&g.stream()) else {
                return self.stop(span, format!("`cfg_aliases!` predicate of `{name}`"));
            };
            let v = self.cfg_alias_value(&expr, &aliases, span)?;
            let name = name.to_string();
            let at: Rc<str> = Rc::from(self.at(span).as_str());
            self.write_stdout(vec![Seg::Lit(format!("cargo:rustc-check-cfg=cfg({name})\n"))], at.clone());
            if self.decide(&v, span)? {
                self.write_stdout(vec![Seg::Lit(format!("cargo:rustc-cfg={name}\n"))], at);
                aliases.push((name, V::Bool(true)));
            } else {
                aliases.push((name, V::Bool(false)));
            }
        }
        Ok(V::Unit)
    }

    fn cfg_alias_value(&mut self, e: &cargo_platform::CfgExpr, aliases: &[(String, V)], span: Span) -> R<V> {
        use cargo_platform::{Cfg, CfgExpr};
        Ok(match e {
            CfgExpr::True => V::Bool(true),
            CfgExpr::False => V::Bool(false),
            CfgExpr::Not(x) => match self.cfg_alias_value(x, aliases, span)? {
                V::Bool(b) => V::Bool(!b),
                u => u,
            },
            CfgExpr::All(xs) | CfgExpr::Any(xs) => {
                let all = matches!(e, CfgExpr::All(_));
                let mut unknown = None;
                for x in xs {
                    match self.cfg_alias_value(x, aliases, span)? {
                        V::Bool(b) if b != all => return Ok(V::Bool(b)),
                        V::Bool(_) => {}
                        u => unknown = Some(u),
                    }
                }
                unknown.unwrap_or(V::Bool(all))
            }
            CfgExpr::Value(c) => {
                let (name, want) = match c {
                    Cfg::Name(i) => (i.name.clone(), None),
                    Cfg::KeyPair(i, v) => (i.name.clone(), Some(v.clone())),
                };
                if want.is_none() {
                    if let Some((_, v)) = aliases.iter().rev().find(|(n, _)| *n == name) {
                        return Ok(v.clone());
                    }
                }
                let var = if name == "feature" {
                    format!("CARGO_FEATURE_{}", want.clone().unwrap_or_default().to_uppercase().replace('-', "_"))
                } else {
                    format!("CARGO_CFG_{}", name.to_uppercase())
                };
                let got = self.call_ext("std::env::var", vec![V::string(var)], span, None)?;
                match got {
                    V::Result(Err(_)) => V::Bool(false),
                    V::Result(Ok(v)) => match (deref(&v), &want) {
                        (_, None) => V::Bool(true),
                        // CARGO_FEATURE_X is set exactly when the feature is on.
                        _ if name == "feature" => V::Bool(true),
                        (V::Str(s), Some(w)) => V::Bool(s.split(',').any(|x| x == w)),
                        (other, _) => match other {
                            V::Unknown(u) => V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Bool })),
                            _ => V::unknown("a cfg value", Kind::Bool),
                        },
                    },
                    other => other,
                }
            }
        })
    }

    fn expand_user(&mut self, rules: &crate::surface::syntax::mbe::MacroRules, mac: &syn::Macro, scope: &Rc<Scope>) -> R<V> {
        let span = mac.path.span();
        if self.macro_depth >= 128 {
            return self.stop(span, "macros expanded inside each other too deeply");
        }
        self.macro_depth += 1;
        let r = self.expand_user_inner(rules, mac, scope);
        self.macro_depth -= 1;
        r
    }

    fn expand_user_inner(&mut self, rules: &crate::surface::syntax::mbe::MacroRules, mac: &syn::Macro, scope: &Rc<Scope>) -> R<V> {
        let span = mac.path.span();
        let dollar_crate = [proc_macro2::TokenTree::Ident(proc_macro2::Ident::new("crate", span))];
        // An invocation expands the same way every time: its parsed expansion is kept (and
        // the syntax in it with it).
        let key = (mac as *const syn::Macro as usize, rules as *const crate::surface::syntax::mbe::MacroRules as usize);
        let cached = self.script.cache.borrow().expansions.get(&key).cloned();
        let parsed = match cached {
            Some(p) => p,
            None => {
                let out = rules.expand_sized(&mac.tokens, span, &dollar_crate, &mut self.budget.macros, false).map(|(ts, _)| ts).map_err(|e| Flow::Stop(format!("{}: macro `{}!` not expanded: {e}", self.at(span), super::interp::path_text(&mac.path))))?;
                let p = match syn::parse2::<Expr>(out.clone()) {
                    Ok(e) => Ok(super::interp::Expansion::Expr(e)),
                    Err(_) => syn::parse2::<syn::Block>(quote::quote!({ #out })).map(super::interp::Expansion::Block).map_err(|e| e.to_string()),
                };
                let p = Rc::new(p);
                self.script.cache.borrow_mut().expansions.insert(key, p.clone());
                p
            }
        };
        match &*parsed {
            Ok(super::interp::Expansion::Expr(e)) => self.eval_expr(e, scope),
            // Statements of the expansion run in the caller's scope (a `let` a macro makes is
            // hygienic, but the items it names are the caller's).
            Ok(super::interp::Expansion::Block(b)) => self.eval_block(b, scope),
            Err(e) => self.stop(span, format!("the expansion of `{}!` does not parse: {e}", super::interp::path_text(&mac.path))),
        }
    }

    /// Append to stdout.
    pub fn write_stdout(&mut self, text: Sym, origin: Rc<str>) {
        let n: usize = text.iter().map(|s| if let Seg::Lit(l) = s { l.len() } else { 1 }).sum();
        self.budget.bytes = self.budget.bytes.saturating_sub(n);
        self.st.stdout.push(super::interp::Chunk { text, origin });
    }

    /// `write!(dst, ..)`.
    fn write_to(&mut self, dst: &Expr, text: Sym, scope: &Rc<Scope>, at: Rc<str>) -> R<V> {
        let place = self.place_of(dst, scope)?;
        let v = match &place {
            Some(p) => deref_place(p),
            None => self.eval_expr(dst, scope)?,
        };
        let v = deref(&v);
        match &v {
            V::Obj(o) => match &**o {
                Obj::File(h) => {
                    self.write_file_handle(*h, text, at, dst.span())?;
                    Ok(V::ok(V::Unit))
                }
                Obj::Stdout => {
                    self.write_stdout(text, at);
                    Ok(V::ok(V::Unit))
                }
                Obj::Stderr | Obj::ChildStdin => Ok(V::ok(V::Unit)),
                Obj::Formatter(buf, _) => {
                    buf.borrow_mut().extend(text);
                    Ok(V::ok(V::Unit))
                }
                _ => self.stop(dst.span(), "`write!` to this value"),
            },
            V::Str(_) | V::Sym(_) => {
                let Some(p) = place else { return self.stop(dst.span(), "`write!` to a string that is not a variable") };
                let max = self.budget.max_string;
                self.modify_place(&p, dst.span(), &mut |slot| {
                    let mut s = segs_of(slot).unwrap_or_default();
                    s.extend(text.iter().cloned());
                    let n: usize = s.iter().map(|x| if let Seg::Lit(l) = x { l.len() } else { 1 }).sum();
                    if n > max {
                        return Err(format!("a string of more than {max} bytes"));
                    }
                    *slot = V::from_segs(s);
                    Ok(())
                })?;
                Ok(V::ok(V::Unit))
            }
            V::Bytes(_) | V::Vec(_) => {
                let Some(p) = place else { return self.stop(dst.span(), "`write!` to a buffer that is not a variable") };
                let Some(lit) = literal(&text) else { return self.stop(dst.span(), "text with unknown parts written to a byte buffer") };
                self.modify_place(&p, dst.span(), &mut |slot| {
                    let mut b: Vec<u8> = match slot {
                        V::Bytes(b) => (**b).clone(),
                        V::Vec(v) => v.iter().filter_map(|x| if let V::Int(i) = x { Some(*i as u8) } else { None }).collect(),
                        _ => Vec::new(),
                    };
                    b.extend_from_slice(lit.as_bytes());
                    *slot = V::Bytes(Rc::new(b));
                    Ok(())
                })?;
                Ok(V::ok(V::Unit))
            }
            other => self.stop(dst.span(), format!("`write!` to {}", other.kind_name())),
        }
    }

    /// A macro's arguments as comma-separated expressions, parsed once.
    pub fn macro_args(&mut self, tokens: &TokenStream, span: Span) -> R<MacroArgs> {
        let key = tokens as *const TokenStream as usize;
        let cached = self.script.cache.borrow().args.get(&key).cloned();
        let r = match cached {
            Some(r) => r,
            None => {
                let r = Rc::new(parse_args(tokens).map_err(|e| e.to_string()));
                self.script.cache.borrow_mut().args.insert(key, r.clone());
                r
            }
        };
        match &*r {
            Ok(_) => Ok(MacroArgs(r)),
            Err(e) => self.stop(span, e.clone()),
        }
    }

    /// A formatting macro's arguments and format string, parsed once.
    fn fmt_parsed(&mut self, tokens: &TokenStream, span: Span) -> R<Rc<FmtParsed>> {
        let key = tokens as *const TokenStream as usize;
        let cached = self.script.cache.borrow().fmt.get(&key).cloned();
        let any = match cached {
            Some(a) => a,
            None => {
                let parsed: Result<FmtParsed, String> = parse_fmt_args(tokens).map_err(|e| e.to_string()).map(|args| FmtParsed { args, pieces: std::cell::OnceCell::new() });
                let a: Rc<dyn std::any::Any> = Rc::new(parsed.map(Rc::new));
                self.script.cache.borrow_mut().fmt.insert(key, a.clone());
                a
            }
        };
        match any.downcast_ref::<Result<Rc<FmtParsed>, String>>() {
            Some(Ok(p)) => Ok(p.clone()),
            Some(Err(e)) => self.stop(span, e.clone()),
            None => self.stop(span, "a macro of an unknown shape"),
        }
    }

    /// The text of `format!`-like arguments.
    pub fn format(&mut self, tokens: &TokenStream, scope: &Rc<Scope>, span: Span) -> R<Sym> {
        let parsed = self.fmt_parsed(tokens, span)?;
        self.format_parsed(&parsed, 0, scope, span)
    }

    /// Format with `parsed.args[first..]`: the format string and its arguments.
    fn format_parsed(&mut self, parsed: &FmtParsed, first: usize, scope: &Rc<Scope>, span: Span) -> R<Sym> {
        let args = &parsed.args[first..];
        let Some(head) = args.first() else { return Ok(Vec::new()) };
        let literal_pieces = |s: &syn::LitStr| parse_format(&s.value());
        let owned;
        let pieces: &Vec<Piece> = match &head.expr {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => match parsed.pieces.get_or_init(|| literal_pieces(s)) {
                Ok(p) => p,
                Err(e) => return self.stop(span, e.clone()),
            },
            Expr::Macro(m) => {
                let v = self.eval_macro(&m.mac, scope, false)?;
                match v {
                    V::Str(s) => {
                        owned = parse_format(&s).map_err(|e| Flow::Stop(format!("{}: {e}", self.at(span))))?;
                        &owned
                    }
                    _ => return self.stop(span, "a format string that is not a literal"),
                }
            }
            _ => return self.stop(span, "a format string that is not a literal"),
        };
        let mut positional = Vec::new();
        let mut named: Vec<(String, V)> = Vec::new();
        for a in &args[1..] {
            let v = self.eval_expr(&a.expr, scope)?;
            match &a.name {
                Some(n) => named.push((n.clone(), v)),
                None => positional.push(v),
            }
        }
        let mut next = 0usize;
        let mut out: Sym = Vec::new();
        for p in pieces {
            match p {
                Piece::Lit(l) => out.push(Seg::Lit(l.clone())),
                Piece::Arg(r, spec) => {
                    let v = self.fmt_arg(r, &mut next, &positional, &named, scope, span)?;
                    let width = match &spec.width {
                        Some(Count::Lit(n)) => Some(*n),
                        Some(Count::Arg(a)) => {
                            let w = self.fmt_arg(a, &mut next, &positional, &named, scope, span)?;
                            match deref(&w) {
                                V::Int(n) => Some(n.max(0) as usize),
                                _ => return self.stop(span, "a format width that is not known"),
                            }
                        }
                        None => None,
                    };
                    let precision = match &spec.precision {
                        Some(Count::Lit(n)) => Some(*n),
                        Some(Count::Arg(a)) => {
                            let w = self.fmt_arg(a, &mut next, &positional, &named, scope, span)?;
                            match deref(&w) {
                                V::Int(n) => Some(n.max(0) as usize),
                                _ => return self.stop(span, "a format precision that is not known"),
                            }
                        }
                        None => None,
                    };
                    let s = self.render(&v, spec, width, precision, span)?;
                    out.extend(s);
                }
            }
        }
        let out = normalize(out);
        self.check_sym(&out, span)?;
        Ok(out)
    }

    fn fmt_arg(&mut self, r: &ArgRef, next: &mut usize, positional: &[V], named: &[(String, V)], scope: &Rc<Scope>, span: Span) -> R<V> {
        match r {
            ArgRef::Next => {
                let v = positional.get(*next).cloned();
                *next += 1;
                v.ok_or_else(|| Flow::Stop(format!("{}: a format string with more `{{}}` than arguments", self.at(span))))
            }
            ArgRef::Index(i) => positional.get(*i).cloned().ok_or_else(|| Flow::Stop(format!("{}: format argument {i} missing", self.at(span)))),
            ArgRef::Name(n) => {
                if let Some((_, v)) = named.iter().find(|(x, _)| x == n) {
                    return Ok(v.clone());
                }
                if let Some(c) = scope.get(n) {
                    return Ok(c.borrow().clone());
                }
                let path: syn::Path = syn::parse_str(n).map_err(|_| Flow::Stop(format!("{}: format argument `{n}`", self.at(span))))?;
                let e = Expr::Path(syn::ExprPath { attrs: Vec::new(), qself: None, path });
                self.eval_expr(&e, scope)
            }
        }
    }

    /// One argument formatted by its spec.
    fn render(&mut self, v: &V, spec: &Spec, width: Option<usize>, precision: Option<usize>, span: Span) -> R<Sym> {
        let v = deref(v);
        let mut body: Sym = match spec.ty.as_str() {
            "" => {
                if let (Some(p), V::Float(f)) = (precision, &v) {
                    vec![Seg::Lit(format!("{f:.p$}"))]
                } else {
                    let mut s = self.display_alt(&v, spec.alt, span)?;
                    if let (Some(p), Some(Seg::Lit(l))) = (precision, s.first()) {
                        if s.len() == 1 {
                            s = vec![Seg::Lit(l.chars().take(p).collect())];
                        }
                    }
                    s
                }
            }
            "?" | "x?" | "X?" => self.debug(&v, spec.alt, 0, span)?,
            t => match &v {
                V::Int(i) => {
                    let i = *i;
                    let (neg, mag) = (i < 0, i.unsigned_abs());
                    let digits = match t {
                        "x" => format!("{mag:x}"),
                        "X" => format!("{mag:X}"),
                        "o" => format!("{mag:o}"),
                        "b" => format!("{mag:b}"),
                        "e" => format!("{:e}", i as f64),
                        _ => format!("{:E}", i as f64),
                    };
                    let prefix = if spec.alt {
                        match t {
                            "x" | "X" => "0x",
                            "o" => "0o",
                            "b" => "0b",
                            _ => "",
                        }
                    } else {
                        ""
                    };
                    let sign = if neg { "-" } else if spec.plus { "+" } else { "" };
                    if spec.zero {
                        let w = width.unwrap_or(0).min(self.budget.max_string);
                        let body_len = sign.len() + prefix.len() + digits.len();
                        let zeros = "0".repeat(w.saturating_sub(body_len));
                        return Ok(vec![Seg::Lit(format!("{sign}{prefix}{zeros}{digits}"))]);
                    }
                    vec![Seg::Lit(format!("{sign}{prefix}{digits}"))]
                }
                V::Unknown(_) => vec![Seg::Hole(Class::Any)],
                _ => return self.stop(span, format!("format `{{:{t}}}` of {}", v.kind_name())),
            },
        };
        if spec.ty.is_empty() && (spec.plus || spec.zero) {
            if let V::Int(i) = v {
                let sign = if i < 0 { "-" } else if spec.plus { "+" } else { "" };
                let digits = i.unsigned_abs().to_string();
                if spec.zero {
                    let w = width.unwrap_or(0).min(self.budget.max_string);
                    let zeros = "0".repeat(w.saturating_sub(sign.len() + digits.len()));
                    return Ok(vec![Seg::Lit(format!("{sign}{zeros}{digits}"))]);
                }
                body = vec![Seg::Lit(format!("{sign}{digits}"))];
            }
        }
        let Some(w) = width else { return Ok(body) };
        if w > self.budget.max_string {
            return self.stop(span, format!("a format width of more than {} bytes", self.budget.max_string));
        }
        let Some(lit) = literal(&body) else {
            // Padding of text with unknown parts: its length is not known.
            return Ok(vec![Seg::Hole(Class::Any)]);
        };
        let n = lit.chars().count();
        if n >= w {
            return Ok(body);
        }
        let pad = w - n;
        let default_right = matches!(v, V::Int(_) | V::Float(_));
        let fill = spec.fill.to_string();
        let s = match spec.align.unwrap_or(if default_right { '>' } else { '<' }) {
            '<' => format!("{lit}{}", fill.repeat(pad)),
            '>' => format!("{}{lit}", fill.repeat(pad)),
            _ => format!("{}{lit}{}", fill.repeat(pad / 2), fill.repeat(pad - pad / 2)),
        };
        Ok(vec![Seg::Lit(s)])
    }

    /// `{}` of a value.
    pub fn display(&mut self, v: &V, span: Span) -> R<Sym> {
        self.display_alt(v, false, span)
    }

    fn display_alt(&mut self, v: &V, alt: bool, span: Span) -> R<Sym> {
        let v = deref(v);
        Ok(match &v {
            V::Str(s) => vec![Seg::Lit(s.to_string())],
            V::Sym(s) => (**s).clone(),
            V::Int(i) => vec![Seg::Lit(i.to_string())],
            V::Float(f) => vec![Seg::Lit(f.to_string())],
            V::Char(c) => vec![Seg::Lit(c.to_string())],
            V::Bool(b) => vec![Seg::Lit(b.to_string())],
            V::Unknown(u) => match u.kind {
                Kind::Int => vec![Seg::Hole(Class::Int)],
                Kind::Bool => vec![Seg::Hole(Class::Bool)],
                _ => vec![Seg::Hole(Class::Any)],
            },
            V::Adt(a) => {
                let Some(f) = self.script.methods.get(&(a.ty.clone(), "Display::fmt".to_string())).cloned() else {
                    return self.stop(span, format!("`{{}}` of `{}`, which has no `Display` impl in the script", a.ty));
                };
                self.call_user_fmt(&f, v.clone(), alt)?
            }
            V::Obj(o) => match &**o {
                Obj::Version(a, b, c) => {
                    let mut s = self.display(a, span)?;
                    s.push(Seg::Lit(".".into()));
                    s.extend(self.display(b, span)?);
                    s.push(Seg::Lit(".".into()));
                    s.extend(self.display(c, span)?);
                    s
                }
                Obj::Channel(c) => self.display(c, span)?,
                Obj::IoError(k) => vec![Seg::Lit(format!("{k}"))],
                Obj::VarError(k) if &**k == "NotPresent" => vec![Seg::Lit("environment variable not found".into())],
                Obj::VarError(_) => vec![Seg::Lit("environment variable was not valid unicode".into())],
                Obj::Error(e) => vec![Seg::Lit(e.to_string())],
                _ => return self.stop(span, "`{}` of a library value"),
            },
            other => return self.stop(span, format!("`{{}}` of {}", other.kind_name())),
        })
    }

    fn call_user_fmt(&mut self, f: &Rc<super::interp::FnDef>, v: V, alt: bool) -> R<Sym> {
        let buf = Rc::new(RefCell::new(Vec::new()));
        let fmt = V::obj(Obj::Formatter(buf.clone(), alt));
        let r = self.call_fn(f, vec![fmt], Some(v))?;
        if let V::Result(Err(_)) = r {
            return Err(Flow::Fail("a `fmt` implementation returned an error".into()));
        }
        let out = buf.borrow().clone();
        Ok(normalize(out))
    }

    /// `{:?}` (`{:#?}` when `alt`) of a value, at indentation `ind`.
    pub fn debug(&mut self, v: &V, alt: bool, ind: usize, span: Span) -> R<Sym> {
        let v = deref(v);
        let lit = |s: String| vec![Seg::Lit(s)];
        Ok(match &v {
            V::Str(s) => lit(format!("{:?}", &**s)),
            V::Sym(s) => {
                let mut out = vec![Seg::Lit("\"".into())];
                for seg in s.iter() {
                    match seg {
                        Seg::Lit(l) => {
                            let q = format!("{l:?}");
                            out.push(Seg::Lit(q[1..q.len() - 1].to_string()));
                        }
                        Seg::Hole(Class::Any) => out.push(Seg::Hole(Class::Any)),
                        h => out.push(h.clone()),
                    }
                }
                out.push(Seg::Lit("\"".into()));
                normalize(out)
            }
            V::Int(i) => lit(i.to_string()),
            V::Float(f) => lit(format!("{f:?}")),
            V::Char(c) => lit(format!("{c:?}")),
            V::Bool(b) => lit(b.to_string()),
            V::Unit => lit("()".into()),
            V::Bytes(b) => lit(format!("{:?}", &**b)),
            V::Unknown(_) => vec![Seg::Hole(Class::Any)],
            V::Vec(items) => {
                let items = items.to_vec();
                self.debug_seq("", "[", "]", &items, alt, ind, span)?
            }
            V::Tuple(items) => {
                let items = items.to_vec();
                self.debug_seq("", "(", ")", &items, alt, ind, span)?
            }
            V::Option(None) => lit("None".into()),
            V::Option(Some(x)) => self.debug_seq("Some", "(", ")", &[(**x).clone()], alt, ind, span)?,
            V::Result(Ok(x)) => self.debug_seq("Ok", "(", ")", &[(**x).clone()], alt, ind, span)?,
            V::Result(Err(x)) => self.debug_seq("Err", "(", ")", &[(**x).clone()], alt, ind, span)?,
            V::Adt(a) => {
                if let Some(f) = self.script.methods.get(&(a.ty.clone(), "Debug::fmt".to_string())).cloned() {
                    return self.call_user_fmt_at(&f, v.clone(), alt, ind);
                }
                let name = a.variant.clone().unwrap_or_else(|| a.ty.clone());
                let items: Vec<V> = a.fields.iter().map(|(_, v)| v.clone()).collect();
                if a.fields.is_empty() {
                    lit(name.to_string())
                } else if a.tuple {
                    self.debug_seq(&name, "(", ")", &items, alt, ind, span)?
                } else {
                    let names: Vec<Rc<str>> = a.fields.iter().map(|(n, _)| n.clone()).collect();
                    self.debug_struct(&name, &names, &items, alt, ind, span)?
                }
            }
            V::Obj(o) => match &**o {
                Obj::VarError(k) => lit(k.to_string()),
                Obj::IoError(k) => lit(format!("Kind({k})")),
                Obj::Version(..) => self.display(&v, span)?,
                _ => return self.stop(span, "`{:?}` of a library value"),
            },
            V::Map(m, set) => {
                let mut out = vec![Seg::Lit("{".into())];
                for (i, (k, val)) in m.values().enumerate() {
                    if i > 0 {
                        out.push(Seg::Lit(", ".into()));
                    }
                    out.extend(self.debug(k, alt, ind, span)?);
                    if !set {
                        out.push(Seg::Lit(": ".into()));
                        out.extend(self.debug(val, alt, ind, span)?);
                    }
                }
                out.push(Seg::Lit("}".into()));
                if alt {
                    return self.stop(span, "`{:#?}` of a map");
                }
                normalize(out)
            }
            other => return self.stop(span, format!("`{{:?}}` of {}", other.kind_name())),
        })
    }

    fn call_user_fmt_at(&mut self, f: &Rc<super::interp::FnDef>, v: V, alt: bool, ind: usize) -> R<Sym> {
        let s = self.call_user_fmt(f, v, alt)?;
        Ok(indent(s, ind))
    }

    fn debug_seq(&mut self, name: &str, open: &str, close: &str, items: &[V], alt: bool, ind: usize, span: Span) -> R<Sym> {
        let mut out = vec![Seg::Lit(format!("{name}{open}"))];
        if items.is_empty() {
            out.push(Seg::Lit(close.into()));
            return Ok(normalize(out));
        }
        if alt {
            out.push(Seg::Lit("\n".into()));
            for x in items {
                out.push(Seg::Lit("    ".repeat(ind + 1)));
                out.extend(self.debug(x, alt, ind + 1, span)?);
                out.push(Seg::Lit(",\n".into()));
            }
            out.push(Seg::Lit(format!("{}{close}", "    ".repeat(ind))));
        } else {
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(Seg::Lit(", ".into()));
                }
                out.extend(self.debug(x, alt, ind, span)?);
            }
            out.push(Seg::Lit(close.into()));
        }
        Ok(normalize(out))
    }

    fn debug_struct(&mut self, name: &str, names: &[Rc<str>], items: &[V], alt: bool, ind: usize, span: Span) -> R<Sym> {
        let mut out = vec![Seg::Lit(format!("{name} {{"))];
        if alt {
            out.push(Seg::Lit("\n".into()));
            for (n, x) in names.iter().zip(items) {
                out.push(Seg::Lit(format!("{}{n}: ", "    ".repeat(ind + 1))));
                out.extend(self.debug(x, alt, ind + 1, span)?);
                out.push(Seg::Lit(",\n".into()));
            }
            out.push(Seg::Lit(format!("{}}}", "    ".repeat(ind))));
        } else {
            for (i, (n, x)) in names.iter().zip(items).enumerate() {
                out.push(Seg::Lit(if i == 0 { format!(" {n}: ") } else { format!(", {n}: ") }));
                out.extend(self.debug(x, alt, ind, span)?);
            }
            out.push(Seg::Lit(" }".into()));
        }
        Ok(normalize(out))
    }

    /// Methods of `Formatter` and the debug builders.
    pub fn formatter_method(&mut self, o: &Obj, place: Option<&Place>, name: &str, args: Vec<V>, span: Span) -> R<V> {
        match (o, name) {
            (Obj::Formatter(buf, _), "write_str") => {
                let s = args.first().and_then(segs_of).unwrap_or_default();
                buf.borrow_mut().extend(s);
                Ok(V::ok(V::Unit))
            }
            (Obj::Formatter(_, alt), "alternate") => Ok(V::Bool(*alt)),
            (Obj::Formatter(buf, alt), "debug_struct" | "debug_tuple" | "debug_list" | "debug_set") => {
                let nm = args.first().and_then(|a| a.as_str().map(Rc::from)).unwrap_or_else(|| Rc::from(""));
                let kind = match name {
                    "debug_struct" => 0,
                    "debug_tuple" => 1,
                    "debug_list" => 2,
                    _ => 3,
                };
                Ok(V::obj(Obj::DebugBuilder { out: buf.clone(), alt: *alt, kind, name: nm, fields: Vec::new() }))
            }
            (Obj::DebugBuilder { out, alt, kind, name: nm, fields }, "field" | "entry") => {
                let (fname, val) = if *kind == 0 {
                    (args.first().and_then(|a| a.as_str().map(Rc::from)), args.get(1).cloned().unwrap_or(V::Unit))
                } else {
                    (None, args.first().cloned().unwrap_or(V::Unit))
                };
                let s = self.debug(&val, *alt, 1, span)?;
                let mut fields = fields.clone();
                fields.push((fname, s));
                let nb = V::obj(Obj::DebugBuilder { out: out.clone(), alt: *alt, kind: *kind, name: nm.clone(), fields });
                if let Some(p) = place {
                    self.write_place(p, nb.clone(), span)?;
                }
                Ok(nb)
            }
            (Obj::DebugBuilder { out, alt, kind, name: nm, fields }, "finish" | "finish_non_exhaustive") => {
                let mut s: Sym = Vec::new();
                let (open, close) = match kind {
                    0 => (" {", "}"),
                    1 => ("(", ")"),
                    2 => ("[", "]"),
                    _ => ("{", "}"),
                };
                s.push(Seg::Lit(format!("{nm}{open}")));
                if !fields.is_empty() {
                    if *alt {
                        s.push(Seg::Lit("\n".into()));
                        for (n, v) in fields {
                            s.push(Seg::Lit("    ".into()));
                            if let Some(n) = n {
                                s.push(Seg::Lit(format!("{n}: ")));
                            }
                            s.extend(v.iter().cloned());
                            s.push(Seg::Lit(",\n".into()));
                        }
                        s.push(Seg::Lit(close.into()));
                    } else {
                        for (i, (n, v)) in fields.iter().enumerate() {
                            let sep = if i == 0 { if *kind == 0 { " " } else { "" } } else { ", " };
                            s.push(Seg::Lit(sep.into()));
                            if let Some(n) = n {
                                s.push(Seg::Lit(format!("{n}: ")));
                            }
                            s.extend(v.iter().cloned());
                        }
                        s.push(Seg::Lit(if *kind == 0 { format!(" {close}") } else { close.to_string() }));
                    }
                } else if *kind == 0 {
                    s = vec![Seg::Lit(nm.to_string())];
                } else if *kind == 1 {
                    s = vec![Seg::Lit(nm.to_string())];
                } else {
                    s.push(Seg::Lit(close.into()));
                }
                out.borrow_mut().extend(s);
                Ok(V::ok(V::Unit))
            }
            _ => self.stop(span, format!("`Formatter::{name}`")),
        }
    }
}

/// Re-indent a nested pretty-printed text.
fn indent(s: Sym, ind: usize) -> Sym {
    if ind == 0 {
        return s;
    }
    let pad = format!("\n{}", "    ".repeat(ind));
    normalize(s.into_iter().map(|seg| match seg {
        Seg::Lit(l) => Seg::Lit(l.replace('\n', &pad)),
        h => h,
    }).collect())
}

/// The text, when it has no unknown parts.
pub fn literal(s: &[Seg]) -> Option<String> {
    let mut out = String::new();
    for x in s {
        match x {
            Seg::Lit(l) => out.push_str(l),
            Seg::Hole(_) => return None,
        }
    }
    Some(out)
}

/// Split `dst, rest..` at the first top-level comma.
#[allow(dead_code)]
fn split_first_arg(tokens: &TokenStream) -> Option<(TokenStream, TokenStream)> {
    let tts: Vec<proc_macro2::TokenTree> = tokens.clone().into_iter().collect();
    let i = tts.iter().position(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','));
    match i {
        Some(i) => Some((tts[..i].iter().cloned().collect(), tts[i + 1..].iter().cloned().collect())),
        None if !tts.is_empty() => Some((tts.into_iter().collect(), TokenStream::new())),
        None => None,
    }
}
