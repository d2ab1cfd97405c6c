//! Unit tests of the evaluator on small scripts.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

pub(crate) fn eval_with(files: &[(&str, &str)], features: &[&str], toolchain: &Toolchain, deps: &[&str]) -> Evaluation {
    let tree: FileTree = files.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect();
    let feats: BTreeSet<String> = features.iter().map(|s| s.to_string()).collect();
    let target = CfgEnv::default().with_features(&feats);
    let host = target.for_host_unit();
    let deps: BTreeMap<String, String> = deps.iter().map(|d| (d.to_string(), d.to_string())).collect();
    let root = if tree.contains_key("build.rs") { "build.rs" } else { "build/build.rs" };
    evaluate(&Package {
        name: "demo",
        version: "1.2.3",
        files: &tree,
        root,
        features: &feats,
        links: None,
        target_cfg: &target,
        host_cfg: &host,
        rustflags: Some(&[]),
        toolchain,
        deps,
        edition: Edition::E2021,
        budget: Budget::default(),
    })
}

pub(crate) fn eval(build_rs: &str) -> Evaluation {
    eval_with(&[("build.rs", build_rs)], &[], &Toolchain::default_stable(), &[])
}

#[test]
fn toolchain_files() {
    let t = Toolchain::parse("[toolchain]\nchannel = \"1.85.0\"\ncomponents = [\"clippy\"]\n", "rust-toolchain.toml");
    assert_eq!(t.version_text(), "1.85.0");
    assert_eq!(t.from, "rust-toolchain.toml");
    let t = Toolchain::parse("1.80\n", "rust-toolchain");
    assert_eq!(t.version_text(), "1.80.x");
    let t = Toolchain::parse("[toolchain]\nchannel = \"nightly-2026-01-15\"\n", "rust-toolchain.toml");
    assert_eq!(t.channel.as_deref(), Some("nightly"));
    assert_eq!(t.date.as_deref(), Some("2026-01-15"));
    assert_eq!(t.version_text(), "1.x.x-nightly (2026-01-15)");
    // `stable` is the documented default; `package.rust-version` is not a toolchain.
    assert_eq!(Toolchain::parse("[toolchain]\nchannel = \"stable\"\n", "rust-toolchain.toml").version_text(), "1.95.0");
    assert_eq!(Toolchain::parse("[toolchain]\nchannel = \"my-custom\"\n", "rust-toolchain.toml").version_text(), "unknown");
    assert_eq!(Toolchain::default_stable().from, "default");
}

#[test]
fn version_probe_output_has_unknown_hash_and_date() {
    let out = Toolchain::default_stable().version_output(false, "x86_64-unknown-linux-gnu");
    assert_eq!(value::known_prefix(&out), "rustc 1.95.0 (");
    assert!(out.iter().any(|s| matches!(s, Seg::Hole(Class::Hex))));
    assert!(out.iter().any(|s| matches!(s, Seg::Hole(Class::Date))));
    // An unknown patch level is a hole, not a guess.
    let t = Toolchain::parse("1.80\n", "rust-toolchain");
    let out = t.version_output(false, "x86_64-unknown-linux-gnu");
    assert_eq!(value::known_prefix(&out), "rustc 1.80.");
}

#[test]
fn strings_with_unknown_parts() {
    use value::*;
    let v: Sym = vec![Seg::Lit("rustc 1.95.0 (".into()), Seg::Hole(Class::Hex), Seg::Lit(" ".into()), Seg::Hole(Class::Date), Seg::Lit(")\n".into())];
    assert_eq!(sym_starts_with(&v, "rustc 1"), Some(true));
    assert_eq!(sym_starts_with(&v, "clippy"), Some(false));
    assert_eq!(sym_contains(&v, "nightly"), Some(false), "a hash holds no `n`");
    assert_eq!(sym_contains(&v, "beef"), None, "a hash may hold it");
    assert_eq!(sym_eq(&v, "rustc 1.95.0"), Some(false));
    let (pieces, rest) = sym_split_prefix(&v, &|c| c == '.');
    assert!(!rest);
    assert_eq!(pieces.len(), 3);
    assert_eq!(pieces[1], vec![Seg::Lit("95".into())]);
    // A hole that may hold the separator ends what is known.
    let any: Sym = vec![Seg::Lit("a,b,".into()), Seg::Hole(Class::Any)];
    let (pieces, rest) = sym_split_prefix(&any, &|c| c == ',');
    assert!(rest);
    assert_eq!(pieces, vec![vec![Seg::Lit("a".into())], vec![Seg::Lit("b".into())]]);
    assert_eq!(sym_trim(&any, true, true), None);
}

#[test]
fn include_targets() {
    let tokens = |s: &str| s.parse::<proc_macro2::TokenStream>().unwrap();
    let e = eval("fn main() { let o = std::env::var(\"OUT_DIR\").unwrap(); std::fs::write(format!(\"{o}/x.rs\"), \"fn f() {}\").unwrap(); println!(\"cargo:rustc-env=GEN={o}/x.rs\"); }");
    assert!(e.complete, "{e:?}");
    let t = |s: &str| include::target(&tokens(s), "src/lib.rs", Some(&e));
    assert_eq!(t("\"gen/a.rs\"").unwrap().1.as_deref(), Some("src/gen/a.rs"));
    assert_eq!(t("concat!(env!(\"OUT_DIR\"), \"/x.rs\")").unwrap().1.as_deref(), Some("$OUT_DIR/x.rs"));
    assert_eq!(t("concat!(env!(\"OUT_DIR\"), \"/\", \"x.rs\")").unwrap().1.as_deref(), Some("$OUT_DIR/x.rs"));
    assert_eq!(t("env!(\"GEN\")").unwrap().1.as_deref(), Some("$OUT_DIR/x.rs"));
    assert_eq!(t("concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/y.rs\")").unwrap().1.as_deref(), Some("src/y.rs"));
    let err = t("concat!(env!(\"OUT_DIR\"), \"/other.rs\")").unwrap_err();
    assert!(err.starts_with("include! of a generated file: the build script does not write $OUT_DIR/other.rs"), "{err}");
    assert!(t("env!(\"NOPE\")").unwrap_err().contains("env!(\"NOPE\") is not set by the build script"));
    // Without an evaluation: as before.
    assert_eq!(include::target(&tokens("concat!(env!(\"OUT_DIR\"), \"/x.rs\")"), "src/lib.rs", None).unwrap_err(), "include! of a generated file");
}

#[test]
fn a_panicking_path_does_not_count() {
    // The build fails where the variable is unset: only the other path is compiled.
    let e = eval("fn main() { let v = std::env::var(\"MODE\").expect(\"set MODE\"); if v.is_empty() { panic!() } println!(\"cargo:rustc-cfg=moded\"); }");
    assert!(e.complete, "{e:?}");
    assert!(e.cfg.exact, "{e:?}");
    assert_eq!(e.cfg.set.iter().map(|c| c.value.as_str()).collect::<Vec<_>>(), ["moded"]);
}

#[test]
fn printing_unknown_text_makes_every_directive_unknown() {
    let e = eval("fn main() { println!(\"{}\", std::env::var(\"X\").unwrap_or_default()); }");
    assert!(!e.cfg.exact);
    assert!(e.other_env.is_some());
    // Any link directive may be among it: build.native evidence at the line that prints it.
    let e = eval("fn main() {\n    let x = 1;\n    println!(\"{}\", std::env::var(\"X\").unwrap_or_default());\n}");
    assert_eq!(e.link.iter().map(|l| (l.kind.as_str(), l.value.clone(), l.origin.clone())).collect::<Vec<_>>(), [("rustc-link-lib", None, vec!["build.rs:3".to_string()])]);
    assert_eq!(e.link_evidence().iter().map(|(f, l, _)| (f.as_str(), *l)).collect::<Vec<_>>(), [("build.rs", 3)]);
    // A warning with an unknown number in it is still only a warning.
    let e = eval("fn main() { let n: u32 = std::env::var(\"N\").ok().and_then(|v| v.parse().ok()).unwrap_or(3); println!(\"cargo:warning=n is {n}\"); }");
    assert!(e.cfg.exact, "{e:?}");
    // `map_or`/`unwrap_or` of an unknown value has its default's type: a bool prints no line.
    let e = eval("fn main() { let v = std::env::var(\"V\").unwrap_or_default(); let n = v.split('-').nth(1).map_or(false, |s| s.starts_with(\"dev\")); println!(\"cargo:warning=nightly={n}\"); }");
    assert!(e.cfg.exact && e.link.is_empty(), "{e:?}");
    // Its twin, whose default is a string, may print any directive.
    let e = eval("fn main() { let v = std::env::var(\"V\").unwrap_or_default(); let n = v.split('-').nth(1).map_or(String::new(), |s| s.to_string()); println!(\"cargo:warning=nightly={n}\"); }");
    assert!(!e.cfg.exact && !e.link.is_empty(), "{e:?}");
}

#[test]
fn every_path_is_bounded() {
    // Many independent unknowns: the evaluation stops at its path budget, with the reason.
    let mut body = String::new();
    for i in 0..12 {
        body.push_str(&format!("if std::env::var_os(\"V{i}\").is_some() {{ println!(\"cargo:rustc-cfg=c{i}\"); }}\n"));
    }
    let e = eval(&format!("fn main() {{ {body} }}"));
    assert!(!e.complete);
    assert!(e.stopped[0].contains("more than 256 combinations"), "{:?}", e.stopped);
}

#[test]
fn functions_and_modules_share_a_name() {
    // `fn env` is a value; `env::var` goes through the module `use std::env` names.
    let e = eval("use std::env;\nfn env(n: &str) -> Option<String> { env::var(n).ok() }\nfn main() { if env(\"TARGET\").is_some() { println!(\"cargo:rustc-cfg=has_target\"); } }");
    assert!(e.cfg.exact, "{e:?}");
    assert_eq!(e.cfg.set.iter().map(|c| c.value.as_str()).collect::<Vec<_>>(), ["has_target"]);
}

#[test]
fn memory_made_is_bounded_not_only_memory_kept() {
    // Each string is within the size limit and dropped at once; together they pass the
    // budget of memory made.
    let e = eval("fn main() { for _ in 0..300 { let s = \"x\".repeat(1 << 20); assert!(s.len() > 0); } println!(\"cargo:rustc-cfg=done\"); }");
    assert!(!e.complete, "{e:?}");
    assert!(e.stopped[0].contains("budget of memory is spent"), "{:?}", e.stopped);
    // Its twin makes a tenth of it and is evaluated.
    let e = eval("fn main() { for _ in 0..30 { let s = \"x\".repeat(1 << 20); assert!(s.len() > 0); } println!(\"cargo:rustc-cfg=done\"); }");
    assert!(e.complete && e.cfg.exact, "{e:?}");
}

#[test]
fn a_library_call_costs_as_much_as_it_walks() {
    // A hundred walks of a million items: few steps of the script, many of the library.
    let e = eval("fn main() { let v = vec![0u8; 1_000_000]; for _ in 0..100 { if v.contains(&1) { println!(\"cargo:rustc-cfg=one\"); } } }");
    assert!(!e.complete, "{e:?}");
    assert!(e.stopped[0].contains("step budget is spent"), "{:?}", e.stopped);
    let e = eval("fn main() { let v = vec![0u8; 1_000]; for _ in 0..100 { if v.contains(&1) { println!(\"cargo:rustc-cfg=one\"); } } }");
    assert!(e.complete && e.cfg.exact, "{e:?}");
}

#[test]
fn a_macro_expanding_into_itself_stops() {
    // On a thread with the stack analysis runs on (guard.rs), as the engine does.
    let run = |src: &'static str| std::thread::Builder::new().stack_size(crate::surface::guard::STACK_SIZE).spawn(move || eval(src)).unwrap().join().unwrap();
    let e = run("macro_rules! m { () => { m!() } }\nfn main() { m!(); println!(\"cargo:rustc-cfg=done\"); }");
    assert!(!e.complete, "{e:?}");
    assert!(e.stopped[0].contains("too deeply"), "{:?}", e.stopped);
}
