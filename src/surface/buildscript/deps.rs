//! Build dependencies whose answers the evaluation knows: the ones that ask the compiler
//! its version (`version_check`, `rustc_version`, `semver` values, `autocfg`'s
//! `probe_rustc_version`), answered from the toolchain ([`super::Toolchain`]), and
//! `autocfg`'s `emit`/`rerun` helpers. A compile probe (`autocfg`'s `probe_path`,
//! `probe_type`, `probe_expression`, ...) asks whether some code compiles with the compiler
//! at hand, which only running it could tell: its answer is unknown, so the cfg it would set
//! is. Any other call into a build dependency (`cc`, `bindgen`, `pkg-config`) is a stop.

use std::rc::Rc;

use proc_macro2::Span;

use super::interp::{Flow, Interp, R};
use super::value::*;

fn mangle(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn print(it: &mut Interp, line: String, span: Span) {
    let at: Rc<str> = Rc::from(it.at(span).as_str());
    it.write_stdout(vec![Seg::Lit(format!("{line}\n"))], at);
}

fn str_arg(it: &Interp, args: &[V], i: usize, span: Span) -> R<String> {
    match args.get(i).map(deref) {
        Some(V::Str(s)) => Ok(s.to_string()),
        _ => Err(Flow::Stop(format!("{}: an argument that is not a known string", it.at(span)))),
    }
}

fn int_arg(it: &Interp, args: &[V], i: usize, span: Span) -> R<i128> {
    match args.get(i).map(deref) {
        Some(V::Int(n)) => Ok(n),
        _ => Err(Flow::Stop(format!("{}: an argument that is not a known integer", it.at(span)))),
    }
}

/// Parse `1.2.3` (or `1.2`) into a version value.
fn parse_version(s: &str) -> Option<V> {
    let core = s.trim().split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let a: i128 = parts.next()?.parse().ok()?;
    let b: i128 = parts.next().unwrap_or("0").parse().ok()?;
    let c: i128 = parts.next().unwrap_or("0").parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(V::obj(Obj::Version(V::Int(a), V::Int(b), V::Int(c))))
}

/// A constant of a modelled dependency (`rustc_version::Channel::Nightly`): `None` when the
/// path is not one.
pub fn value(path: &str) -> Option<V> {
    let chan = |c: &str| Some(V::obj(Obj::Channel(V::str(c))));
    match path {
        "rustc_version::Channel::Dev" => chan("dev"),
        "rustc_version::Channel::Nightly" => chan("nightly"),
        "rustc_version::Channel::Beta" => chan("beta"),
        "rustc_version::Channel::Stable" => chan("stable"),
        _ => None,
    }
}

/// A call of a function of a build dependency.
pub fn call(it: &mut Interp, path: &str, args: Vec<V>, span: Span, _hint: Option<&syn::Type>) -> R<V> {
    let tc = it.input.toolchain;
    let version = tc.version_obj();
    match path {
        "autocfg::new" => return Ok(V::obj(Obj::AutoCfg)),
        "autocfg::AutoCfg::new" | "autocfg::AutoCfg::with_dir" => return Ok(V::ok(V::obj(Obj::AutoCfg))),
        "autocfg::emit" => {
            let c = str_arg(it, &args, 0, span)?;
            print(it, format!("cargo:rustc-cfg={c}"), span);
            return Ok(V::Unit);
        }
        "autocfg::emit_possibility" => {
            let c = str_arg(it, &args, 0, span)?;
            print(it, format!("cargo:rustc-check-cfg=cfg({c})"), span);
            return Ok(V::Unit);
        }
        "autocfg::rerun_path" | "autocfg::rerun_env" => return Ok(V::Unit),
        "version_check::Version::read" => return Ok(V::some(version)),
        "version_check::Version::parse" => {
            let s = str_arg(it, &args, 0, span)?;
            return Ok(V::Option(parse_version(&s).map(Rc::new)));
        }
        "version_check::Version::from_mmp" => {
            let (a, b, c) = (int_arg(it, &args, 0, span)?, int_arg(it, &args, 1, span)?, int_arg(it, &args, 2, span)?);
            return Ok(V::obj(Obj::Version(V::Int(a), V::Int(b), V::Int(c))));
        }
        "version_check::Channel::read" => return Ok(V::some(V::obj(Obj::Channel(tc.channel_value())))),
        "version_check::Date::read" | "version_check::triple" | "version_check::is_min_date" | "version_check::is_max_date" | "version_check::is_exact_date" => {
            return Ok(V::unknown("the compiler's release date", Kind::Any));
        }
        "version_check::is_min_version" | "version_check::is_max_version" | "version_check::is_exact_version" => {
            let s = str_arg(it, &args, 0, span)?;
            let Some(want) = parse_version(&s) else { return Ok(V::Option(None)) };
            let o = value_cmp(&version, &want);
            let r = match o {
                Some(o) => V::Bool(match path {
                    "version_check::is_min_version" => o != std::cmp::Ordering::Less,
                    "version_check::is_max_version" => o != std::cmp::Ordering::Greater,
                    _ => o == std::cmp::Ordering::Equal,
                }),
                None => V::unknown("the compiler's version", Kind::Bool),
            };
            return Ok(V::some(r));
        }
        "version_check::is_feature_flaggable" => return Ok(V::some(features_allowed(&tc.channel_value()))),
        "version_check::supports_feature" => {
            return Ok(match features_allowed(&tc.channel_value()) {
                V::Bool(false) => V::some(V::Bool(false)),
                _ => V::unknown(&format!("whether the compiler supports a feature ({})", it.at(span)), Kind::Any),
            });
        }
        "rustc_version::version" => return Ok(V::ok(version)),
        "rustc_version::version_meta" => return Ok(V::ok(V::obj(Obj::VersionMeta))),
        "rustc_version::Version::parse" | "semver::Version::parse" => {
            let s = str_arg(it, &args, 0, span)?;
            return Ok(match parse_version(&s) {
                Some(v) => V::ok(v),
                None => V::err(V::obj(Obj::Error(Rc::from("invalid version")))),
            });
        }
        "rustc_version::Version::new" | "semver::Version::new" => {
            let (a, b, c) = (int_arg(it, &args, 0, span)?, int_arg(it, &args, 1, span)?, int_arg(it, &args, 2, span)?);
            return Ok(V::obj(Obj::Version(V::Int(a), V::Int(b), V::Int(c))));
        }
        _ => {}
    }
    if let Some(v) = value(path) {
        return Ok(v);
    }
    let krate = path.split("::").next().unwrap_or(path);
    let what = if matches!(krate, "cc" | "cmake" | "bindgen" | "pkg_config" | "vcpkg" | "autotools" | "nasm_rs" | "cxx_build") {
        format!("`{path}` (native code is built)")
    } else {
        format!("a call of `{path}`")
    };
    it.stop(span, what)
}

/// Nightly and dev compilers take `#![feature]`; the others do not.
fn features_allowed(channel: &V) -> V {
    match deref(channel) {
        V::Str(s) => V::Bool(matches!(s.as_str(), "nightly" | "dev")),
        _ => V::unknown("the compiler's channel", Kind::Bool),
    }
}

/// A method of a modelled dependency's value.
pub fn method(it: &mut Interp, o: Rc<Obj>, name: &str, args: Vec<V>, span: Span, _hint: Option<&syn::Type>) -> R<V> {
    let at = it.at(span);
    match &*o {
        Obj::AutoCfg => {
            let tc = it.input.toolchain;
            let probe = |what: String| V::unknown(&format!("the autocfg probe `{what}` at {at}"), Kind::Bool);
            match name {
                "probe_rustc_version" | "emit_rustc_version" => {
                    let (maj, min) = (int_arg(it, &args, 0, span)?, int_arg(it, &args, 1, span)?);
                    let want = V::obj(Obj::Version(V::Int(maj), V::Int(min), V::Int(0)));
                    let have = tc.version_obj();
                    let ok = match value_cmp(&have, &want) {
                        Some(o) => V::Bool(o != std::cmp::Ordering::Less),
                        None => {
                            // The patch level does not matter for `major.minor`.
                            let (V::Obj(h), V::Obj(w)) = (&have, &want) else { unreachable!() };
                            match (&**h, &**w) {
                                (Obj::Version(a, b, _), Obj::Version(c, d, _)) => match value_cmp(&V::Tuple(Rc::new(vec![a.clone(), b.clone()])), &V::Tuple(Rc::new(vec![c.clone(), d.clone()]))) {
                                    Some(o) => V::Bool(o != std::cmp::Ordering::Less),
                                    None => V::unknown("the compiler's version", Kind::Bool),
                                },
                                _ => V::unknown("the compiler's version", Kind::Bool),
                            }
                        }
                    };
                    if name == "probe_rustc_version" {
                        return Ok(ok);
                    }
                    let cfg = format!("rustc_{maj}_{min}");
                    print(it, format!("cargo:rustc-check-cfg=cfg({cfg})"), span);
                    if it.decide(&ok, span)? {
                        print(it, format!("cargo:rustc-cfg={cfg}"), span);
                    }
                    Ok(V::Unit)
                }
                "probe_sysroot_crate" | "probe_path" | "probe_trait" | "probe_type" | "probe_expression" | "probe_constant" => {
                    let x = str_arg(it, &args, 0, span)?;
                    Ok(probe(format!("{name}({x:?})")))
                }
                "probe_raw" => Ok(V::unknown(&format!("the autocfg probe `probe_raw` at {at}"), Kind::Any)),
                "emit_sysroot_crate" | "emit_has_path" | "emit_has_trait" | "emit_has_type" | "emit_path_cfg" | "emit_trait_cfg" | "emit_type_cfg" | "emit_expression_cfg" | "emit_constant_cfg" => {
                    let x = str_arg(it, &args, 0, span)?;
                    let cfg = match name {
                        "emit_sysroot_crate" | "emit_has_path" | "emit_has_trait" | "emit_has_type" => format!("has_{}", mangle(&x)),
                        _ => str_arg(it, &args, 1, span)?,
                    };
                    let probe_name = match name {
                        "emit_sysroot_crate" => "probe_sysroot_crate",
                        "emit_has_path" | "emit_path_cfg" => "probe_path",
                        "emit_has_trait" | "emit_trait_cfg" => "probe_trait",
                        "emit_has_type" | "emit_type_cfg" => "probe_type",
                        "emit_expression_cfg" => "probe_expression",
                        _ => "probe_constant",
                    };
                    print(it, format!("cargo:rustc-check-cfg=cfg({cfg})"), span);
                    let ok = probe(format!("{probe_name}({x:?})"));
                    if it.decide(&ok, span)? {
                        print(it, format!("cargo:rustc-cfg={cfg}"), span);
                    }
                    Ok(V::Unit)
                }
                "no_std" => Ok(V::Bool(false)),
                "set_no_std" | "set_edition" => Ok(V::Unit),
                "edition" => Ok(V::Option(None)),
                _ => it.stop(span, format!("`AutoCfg::{name}`")),
            }
        }
        Obj::Version(a, b, c) => match name {
            "at_least" | "at_most" | "exactly" => {
                let s = str_arg(it, &args, 0, span)?;
                let Some(want) = parse_version(&s) else { return Ok(V::Bool(false)) };
                Ok(match value_cmp(&V::Obj(o.clone()), &want) {
                    Some(ord) => V::Bool(match name {
                        "at_least" => ord != std::cmp::Ordering::Less,
                        "at_most" => ord != std::cmp::Ordering::Greater,
                        _ => ord == std::cmp::Ordering::Equal,
                    }),
                    None => V::unknown("the compiler's version", Kind::Bool),
                })
            }
            "to_mmp" => Ok(V::Tuple(Rc::new(vec![a.clone(), b.clone(), c.clone()]))),
            _ => it.stop(span, format!("method `{name}` of a version")),
        },
        Obj::Channel(c) => {
            let is = |want: &[&str]| match deref(c) {
                V::Str(s) => V::Bool(want.contains(&s.as_str())),
                _ => V::unknown("the compiler's channel", Kind::Bool),
            };
            match name {
                "is_nightly" => Ok(is(&["nightly"])),
                "is_beta" => Ok(is(&["beta"])),
                "is_stable" => Ok(is(&["stable"])),
                "is_dev" => Ok(is(&["dev"])),
                "supports_features" => Ok(is(&["nightly", "dev"])),
                _ => it.stop(span, format!("method `{name}` of a channel")),
            }
        }
        Obj::VersionMeta => it.stop(span, format!("method `{name}` of rustc_version's VersionMeta")),
        _ => it.stop(span, format!("method `{name}`")),
    }
}
