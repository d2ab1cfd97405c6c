//! Where an `include!` points: a literal path relative to the including file, or a path
//! computed at compile time from `concat!`, `env!("OUT_DIR")`, `env!("CARGO_MANIFEST_DIR")`
//! and the variables the build script sets with `cargo:rustc-env`. A file in OUT_DIR is
//! read from the build script's [`Evaluation`], under `$OUT_DIR/`; when it is not known, the
//! reason says why (the `include!` is then `unanalyzed` there).

use proc_macro2::TokenStream;
use syn::Expr;

use super::{Evaluation, GENERATED_PREFIX, MANIFEST_DIR_VALUE, OUT_DIR_VALUE};
use crate::surface::syntax::paths;

/// The start of every reason for an `include!` of OUT_DIR that cannot be read.
pub const GENERATED: &str = "include! of a generated file";

/// The file an `include!` reads: (the path as written or computed, for messages; the name
/// in the package's tree, `None` when a literal path leaves the package), or why it cannot
/// be known.
pub fn target(tokens: &TokenStream, file: &str, build: Option<&Evaluation>) -> Result<(String, Option<String>), String> {
    if let Ok(l) = syn::parse2::<syn::LitStr>(tokens.clone()) {
        let rel = l.value();
        let key = paths::join(paths::dir_of(file), &rel);
        return Ok((rel, key));
    }
    let Some(build) = build else { return Err(GENERATED.to_string()) };
    let expr: Expr = syn::parse2(tokens.clone()).map_err(|_| GENERATED.to_string())?;
    let path = eval(&expr, build, 0).map_err(|why| format!("{GENERATED}: {why}"))?;
    let path = path.replace('\\', "/");
    if let Some(rest) = path.strip_prefix(OUT_DIR_VALUE) {
        let Some(rel) = rest.strip_prefix('/').and_then(|r| paths::join("", r)) else {
            return Err(format!("{GENERATED}: {path} is not a file in OUT_DIR"));
        };
        let key = format!("{GENERATED_PREFIX}{rel}");
        if build.file(&key).is_some() {
            return Ok((key.clone(), Some(key)));
        }
        if let Some(u) = build.unknown_files.iter().find(|u| u.name == key) {
            return Err(format!("{GENERATED}: {key} is not known: {}", u.why));
        }
        if let Some(why) = &build.other_files {
            return Err(format!("{GENERATED}: {key} is not known: {why}"));
        }
        return Err(format!("{GENERATED}: the build script does not write {key}"));
    }
    if let Some(rest) = path.strip_prefix(MANIFEST_DIR_VALUE) {
        let rel = rest.trim_start_matches('/').to_string();
        let key = paths::join("", &rel);
        return Ok((rel, key));
    }
    Err(format!("include! of a file outside the package: {path}"))
}

/// The string a compile-time expression of `include!`'s argument spells.
fn eval(e: &Expr, build: &Evaluation, depth: usize) -> Result<String, String> {
    if depth > 32 {
        return Err("nested too deeply".into());
    }
    match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Ok(s.value()),
        Expr::Group(g) => eval(&g.expr, build, depth + 1),
        Expr::Paren(p) => eval(&p.expr, build, depth + 1),
        Expr::Macro(m) => {
            let name = m.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            let std_path = m.mac.path.segments.len() == 1 || matches!(m.mac.path.segments.first().map(|s| s.ident.to_string()).as_deref(), Some("std" | "core"));
            if !std_path {
                return Err(format!("`{name}!` in its argument"));
            }
            let args = super::interp::parse_args(&m.mac.tokens).map_err(|e| e.to_string())?;
            match name.as_str() {
                "concat" => {
                    let mut s = String::new();
                    for a in &args {
                        s.push_str(&eval(a, build, depth + 1)?);
                    }
                    Ok(s)
                }
                "env" => {
                    let Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(v), .. })) = args.first() else {
                        return Err("`env!` of a computed name".into());
                    };
                    let v = v.value();
                    match v.as_str() {
                        "OUT_DIR" => Ok(OUT_DIR_VALUE.to_string()),
                        "CARGO_MANIFEST_DIR" => Ok(MANIFEST_DIR_VALUE.to_string()),
                        _ => match build.env.iter().find(|x| x.name == v) {
                            Some(x) => match &x.value {
                                Some(val) => Ok(val.clone()),
                                None => Err(format!("env!({v:?}), set by the build script to a value that is not known: {}", x.why.as_deref().unwrap_or(""))),
                            },
                            None => match &build.other_env {
                                Some(why) => Err(format!("env!({v:?}) is not known: {why}")),
                                None => Err(format!("env!({v:?}) is not set by the build script: it comes from the environment the build runs in")),
                            },
                        },
                    }
                }
                _ => Err(format!("`{name}!` in its argument")),
            }
        }
        _ => Err("a computed argument".into()),
    }
}
