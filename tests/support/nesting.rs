//! Deeply nested but valid Rust, one generator per shape, with the deepest nesting rustc 1.95
//! accepts for each (measured on x86_64 Linux with rustc's default stack:
//! `rustc --edition 2021 --crate-type lib --emit=metadata`, bisected).
#![allow(dead_code)]

/// (shape, deepest nesting rustc accepts).
pub const SHAPES: &[(&str, usize)] = &[
    ("parens", 1181),
    ("blocks", 778),
    ("brackets", 1034),
    ("generics", 4110),
    ("binary", 5281),
    ("unary", 5379),
    ("closures", 1181),
    ("methods", 5281),
    ("attributes", 4696),
    ("modules", 717),
    ("macro", 10555),
    ("elseif", 12704),
    ("ifs", 717),
    ("casts", 5281),
    ("refs", 2938),
    ("tuples", 1181),
    ("fnptr", 2181),
    ("patterns", 2401),
    ("returns", 1181),
];

/// The depth at which a test compiles `shape` with rustc: nine tenths of the deepest, so that
/// another build of the same rustc, whose frames differ a little, still compiles it; a quarter
/// for the shapes whose type inference takes rustc tens of seconds near the limit.
pub fn compile_depth(shape: &str, depth: usize) -> usize {
    match shape {
        "binary" | "closures" | "refs" => depth / 4,
        _ => depth * 9 / 10,
    }
}

/// More shapes, for the stack bound only: each parses, not all would compile (`x.a.a`, `x??`),
/// and several shapes mixed in one nesting, for the frames between shapes.
pub const MORE: &[&str] = &[
    "fields", "calls", "index", "tries", "assign", "compound", "derefs", "negs", "turbofish", "qself",
    "typerefs", "implfn", "dyns", "structlit", "matches", "arraytypes", "tupleindex", "asyncblocks",
    "mixed", "mixed-types",
];

/// A library file nesting `shape` `n` levels deep.
pub fn source(shape: &str, n: usize) -> String {
    let r = |s: &str, k: usize| s.repeat(k);
    match shape {
        "parens" => format!("pub fn f() -> i32 {{ let _x = {}1{}; 0 }}\n", r("(", n), r(")", n)),
        "blocks" => format!("pub fn f() -> i32 {{ let _x = {}1{}; 0 }}\n", r("{", n), r("}", n)),
        "brackets" => format!("pub fn f() {{ let _x = {}1{}; }}\n", r("[", n), r("]", n)),
        "generics" => format!("pub type T = {}i32{};\n", r("Option<", n), r(">", n)),
        "binary" => format!("pub fn f() -> i32 {{ 1{} }}\n", r(" + 1", n)),
        "unary" => format!("pub fn f() -> bool {{ {}true }}\n", r("!", n)),
        "closures" => format!("pub fn f() {{ let _x = {}1; }}\n", r("|| ", n)),
        "methods" => format!("pub fn f() -> i32 {{ 1i32{} }}\n", r(".abs()", n)),
        "attributes" => format!("#[cfg({}{})]\npub fn f() {{}}\n", r("all(", n), r(")", n)),
        "modules" => format!("{} pub fn f() {{}} {}\n", r("mod a { ", n), r("}", n)),
        "macro" => format!("macro_rules! m {{ ($($t:tt)*) => {{}} }}\nm!({}{});\n", r("(", n), r(")", n)),
        "elseif" => format!("pub fn f(x: bool) -> i32 {{ if x {{ 0 }} {}else {{ 1 }} }}\n", r("else if x { 0 } ", n)),
        "ifs" => format!("pub fn f(x: bool) {{ {}{} }}\n", r("if x { ", n), r("}", n)),
        "casts" => format!("pub fn f() -> i32 {{ 1{} }}\n", r(" as i32", n)),
        "refs" => format!("pub fn f() {{ let _x = {}1; }}\n", r("&", n)),
        "tuples" => format!("pub fn f() {{ let _x = {}1{}; }}\n", r("(", n), r(",)", n)),
        "fnptr" => format!("pub type T = {}i32;\n", r("fn() -> ", n)),
        "patterns" => format!("pub fn f() {{ let {}_x{} = 1; }}\n", r("(", n), r(")", n)),
        "returns" => format!("pub fn f() -> i32 {{ {}1 }}\n", r("return ", n)),
        "fields" => format!("pub fn f(x: X) {{ x{}; }}\n", r(".a", n)),
        "calls" => format!("pub fn f() {{ g{}; }}\n", r("()", n)),
        "index" => format!("pub fn f() {{ a{}; }}\n", r("[0]", n)),
        "tries" => format!("pub fn f() {{ x{}; }}\n", r("?", n)),
        "assign" => format!("pub fn f() {{ {}1; }}\n", r("a = ", n)),
        "compound" => format!("pub fn f() {{ {}1; }}\n", r("a += ", n)),
        "derefs" => format!("pub fn f() {{ let _ = {}x; }}\n", r("*", n)),
        "negs" => format!("pub fn f() {{ let _ = {}1; }}\n", r("- ", n)),
        "turbofish" => format!("pub fn f() {{ g::<{}i32{}(); }}\n", r("Option<", n), r(">", n + 1)),
        "qself" => format!("pub type T = {}X{};\n", r("<", n), r(" as A>::B", n)),
        "typerefs" => format!("pub type T = {}i32;\n", r("&'static ", n)),
        "implfn" => format!("pub fn f() -> {}i32 {{ loop {{}} }}\n", r("impl Fn() -> ", n)),
        "dyns" => format!("pub type T = {}i32{};\n", r("Box<dyn Fn() -> ", n), r(">", n)),
        "structlit" => format!("pub fn f() {{ let _ = {}1{}; }}\n", r("S { a: ", n), r(" }", n)),
        "matches" => format!("pub fn f() {{ {}1{} }}\n", r("match x { _ => ", n), r(" }", n)),
        "arraytypes" => format!("pub type T = {}i32{};\n", r("[", n), r("; 1]", n)),
        "tupleindex" => format!("pub fn f() {{ x{}; }}\n", r(".0", n)),
        "asyncblocks" => format!("pub fn f() {{ let _ = {}1{}; }}\n", r("async { ", n), r(" }", n)),
        // Several shapes in turn, for the frames between them.
        "mixed" => format!("pub fn f() {{ let _x = {}1{}; }}\n", r("( || { [ &", n), r(" ] } )", n)),
        "mixed-types" => format!("pub type T = {}i32{};\n", r("Option<(fn() -> [&'static ", n), r("; 1],)>", n)),
        other => panic!("unknown shape {other}"),
    }
}

/// rustc, if this machine has one.
pub fn rustc() -> Option<std::path::PathBuf> {
    let rustc = std::env::var_os("RUSTC").map(std::path::PathBuf::from).unwrap_or_else(|| "rustc".into());
    let ok = std::process::Command::new(&rustc).arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then_some(rustc)
}

/// Whether `rustc` compiles `src` as a 2021 library (metadata only: parsing, expansion,
/// type and borrow checking).
pub fn rustc_accepts(rustc: &std::path::Path, src: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lib.rs");
    std::fs::write(&file, src).unwrap();
    std::process::Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "lib", "--emit=metadata", "-A", "warnings", "-o"])
        .arg(dir.path().join("out.rmeta"))
        .arg(&file)
        .env_remove("RUST_MIN_STACK")
        .output()
        .is_ok_and(|o| o.status.success())
}
