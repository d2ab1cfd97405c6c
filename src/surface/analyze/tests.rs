//! End-to-end unit tests of the analyzer against the test doubles (the fixtures in
//! tests/surface_rules.rs run against the real rules and cfg).

use std::collections::BTreeMap;

use super::oracle::doubles::{TestCfg, TestRules};
use super::*;

fn run(files: &[(&str, &str)]) -> Vec<String> {
    let tree: FileTree = files.iter().map(|(p, s)| (p.to_string(), s.as_bytes().to_vec())).collect();
    let deps = BTreeMap::new();
    let unit = Unit { crate_name: "me", files: &tree, root: "src/lib.rs", scope: Scope::Runtime, deps: &deps, edition: Edition::E2021, marker: "__velaris_crate_me", version: "1.0.0", open_sites: false };
    let out = analyze_with(&unit, &TestCfg::linux(&[]), &TestRules::small());
    out.findings.iter().map(|f| format!("{} {}:{}:{} {}", f.capability, f.file, f.line, f.column, f.path)).collect()
}

#[test]
fn paths_methods_and_locals() {
    let got = run(&[(
        "src/lib.rs",
        r#"use std::fs::{self, OpenOptions};
fn a(p: &str) {
    let f = std::fs::write;
    let mut o = OpenOptions::new();
    o.write(true);
    fs::read(p);
}
fn b(write: fn()) { write(); let read = 1; }
"#,
    )]);
    assert_eq!(
        got,
        [
            "fs.read src/lib.rs:4:17 std::fs::OpenOptions::new",
            "fs.read src/lib.rs:6:5 std::fs::read",
            "fs.write src/lib.rs:3:13 std::fs::write",
            "fs.write src/lib.rs:5:7 std::fs::OpenOptions::write",
        ]
    );
}

#[test]
fn macros_unsafe_and_ffi() {
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! m { ($x:expr) => { $crate::inner(::std::process::Command::new($x)) } }
fn c() { println!("{}", std::env::var("X").is_ok()); let s = "std::fs::write"; unsafe {} }
extern "C" { fn system(c: *const u8) -> i32; }
fn d() { some_macro!(std::fs::write, unsafe { 1 }); }
/// std::fs::write in a doc comment
fn e() { core::arch::asm!("nop"); }
fn g() { m!("sh"); }
"#,
    )]);
    // The definition of `m` is not code; its expansion in `g` is, placed at the invocation.
    assert_eq!(
        got,
        [
            "fs.write src/lib.rs:4:22 std::fs::write",
            "process.spawn src/lib.rs:3:14 extern \"C\" fn system",
            "process.spawn src/lib.rs:7:10 std::process::Command::new",
            "env.read src/lib.rs:2:25 std::env::var",
            "ffi src/lib.rs:3:14 extern \"C\" fn system",
            "unsafe src/lib.rs:2:80 unsafe block",
            "unsafe src/lib.rs:4:38 unsafe block",
            "asm src/lib.rs:6:10 asm!",
        ]
    );
}

#[test]
fn token_scanning_corner_cases() {
    let got = run(&[(
        "src/lib.rs",
        r#"use std::fs::write;
macro_rules! m {
    ($write:expr) => { Self::write($write); stringify!(std::fs::write); };
    (x) => { impl std::io::Write for X {} };
}
fn f() { other!(x.write(1), <T>::write, write); }
"#,
    )]);
    // Only the bare `write` at the end of line 6 names the import.
    assert_eq!(got, ["fs.write src/lib.rs:6:41 std::fs::write"]);
}

#[test]
fn long_chains_and_deep_nesting() {
    let chain = ".arg(\"x\")".repeat(3000);
    let parens = format!("{}std::env::var(\"A\"){}", "(".repeat(100), ")".repeat(100));
    let src = format!("fn f() {{ std::process::Command::new(\"ls\"){chain}.spawn(); let _ = {parens}; }}\n");
    let got = run(&[("src/lib.rs", &src)]);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("process.spawn src/lib.rs:1:10 std::process::Command::new"), "{got:?}");
}

#[test]
fn system_calls_by_constant_number() {
    let got = run(&[(
        "src/lib.rs",
        r#"extern "C" { fn syscall(n: i64, ...) -> i64; }
const SYS_getrandom: i64 = 59;
unsafe fn f(n: i64) {
    syscall(libc::SYS_futex, 0);
    syscall(libc::SYS_execve as i64, 0);
    syscall(n);
    syscall(libc::SYS_mystery);
    syscall(SYS_getrandom, 0);
}
"#,
    )]);
    let mine: Vec<&String> = got.iter().filter(|f| !f.starts_with("unsafe ")).collect();
    assert_eq!(
        mine,
        [
            "process.spawn src/lib.rs:5:5 me::syscall(SYS_execve)",
            "ffi src/lib.rs:1:14 extern \"C\" fn syscall",
            "ffi src/lib.rs:4:5 me::syscall(SYS_futex)",
            "ffi src/lib.rs:5:5 me::syscall(SYS_execve)",
            "ffi src/lib.rs:6:5 me::syscall",
            "ffi src/lib.rs:7:5 me::syscall(SYS_mystery)",
            "ffi src/lib.rs:8:5 me::syscall(SYS_getrandom)",
            "unanalyzed src/lib.rs:1:14 extern \"C\" fn syscall",
            "unanalyzed src/lib.rs:6:5 me::syscall",
            "unanalyzed src/lib.rs:7:5 me::syscall(SYS_mystery): a system call no rule knows",
            // The crate's own constant could hold any number (59 is execve's): not trusted.
            "unanalyzed src/lib.rs:8:5 me::syscall(SYS_getrandom): a system call number that is not the C library's constant",
        ]
    );
}

#[test]
fn a_dependency_glob_does_not_hide_crates_or_std() {
    // wasm_bindgen's prelude re-exports the `wasm_bindgen` proc macro: a glob import of it
    // must not make `std::..` or `wasm_bindgen::..` paths resolve into the prelude.
    let tree: FileTree = [(
        "src/lib.rs".to_string(),
        b"use wasm_bindgen::prelude::*;\npub fn f() { std::fs::write(\"a\", \"b\"); let _ = read(\"x\"); }\n".to_vec(),
    )]
    .into_iter()
    .collect();
    let mut deps = BTreeMap::new();
    let aliases = [
        ("prelude::wasm_bindgen", "wasm_bindgen_macro::wasm_bindgen"),
        ("prelude::read", "std::fs::read"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    deps.insert("wasm_bindgen".to_string(), std::sync::Arc::new(Exports { aliases, ..Exports::default() }));
    let unit = Unit { crate_name: "me", files: &tree, root: "src/lib.rs", scope: Scope::Runtime, deps: &deps, edition: Edition::E2021, marker: "m", version: "1.0.0", open_sites: false };
    let out = analyze_with(&unit, &TestCfg::linux(&[]), &TestRules::small());
    let got: Vec<String> = out.findings.iter().map(|f| format!("{} {}:{} {}", f.capability, f.line, f.column, f.path)).collect();
    assert_eq!(got, ["fs.read 2:48 std::fs::read", "fs.write 2:14 std::fs::write"]);
}

#[test]
fn block_like_fragments_end_their_statement_as_rustc_parses_them() {
    // http's `probe_loop!`, icu_normalizer's `decomposing_normalize_to!`, cpufeatures'
    // `__unless_target_features!`: an `expr` or
    // `block` fragment that is a block, followed by more statements without a `;`.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! probe {
    ($label:tt: $i:ident < $len:expr, $body:expr) => {
        $label: loop {
            if $i < $len {
                $body
                $i += 1;
            } else {
                $i = 0;
            }
        }
    };
}
macro_rules! method {
    ($name:ident, $prolog:block, $fast:block) => {
        pub fn $name(&self) {
            $prolog
            let _x = 1;
            $fast
        }
    };
}
macro_rules! unless {
    ($($tf:tt),+ => $body:expr) => {{
        #[cfg(not(all($(target_feature = $tf,)*)))]
        {
            #[cfg(not(target_os = "none"))]
            $body

            #[cfg(target_os = "none")]
            false
        }
        #[cfg(all($(target_feature = $tf,)*))]
        true
    }};
}
pub fn g() -> bool {
    unless!("sha", "sse2" => { std::fs::read("/etc/hosts").is_ok() })
}
pub struct S;
impl S {
    method!(go, { std::fs::write("a", "b").ok(); }, { std::process::Command::new("sh"); });
}
pub fn f(mut i: usize) {
    probe!('p: i < 3, {
        std::env::var("X").ok();
        if i == 2 { break 'p; }
    });
}
"#,
    )]);
    assert!(got.iter().any(|f| f.starts_with("fs.write src/lib.rs:41:") && f.ends_with("std::fs::write")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("process.spawn src/lib.rs:41:")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:45:") && f.ends_with("std::env::var")), "{got:?}");
    // cpufeatures' `__unless_target_features!`: the block after an attribute.
    assert!(got.iter().any(|f| f.starts_with("fs.read src/lib.rs:37:") && f.ends_with("std::fs::read")), "{got:?}");
    assert!(!got.iter().any(|f| f.starts_with("unanalyzed")), "{got:?}");
}

/// Analyze `dep` (crate `dep`), then `me` with `dep` as its dependency; `me`'s findings with
/// their chains.
fn run_two(dep: &str, me: &str) -> Vec<String> {
    let rules = TestRules::small();
    let cfg = TestCfg::linux(&[]);
    let dep_tree: FileTree = [("src/lib.rs".to_string(), dep.as_bytes().to_vec())].into_iter().collect();
    let none = BTreeMap::new();
    let unit = Unit { crate_name: "dep", files: &dep_tree, root: "src/lib.rs", scope: Scope::Runtime, deps: &none, edition: Edition::E2021, marker: "__velaris_crate_dep", version: "1.0.0", open_sites: false };
    let dep_out = analyze_with(&unit, &cfg, &rules);
    let deps: BTreeMap<String, std::sync::Arc<Exports>> = [("dep".to_string(), dep_out.exports)].into_iter().collect();
    let tree: FileTree = [("src/lib.rs".to_string(), me.as_bytes().to_vec())].into_iter().collect();
    let unit = Unit { crate_name: "me", files: &tree, root: "src/lib.rs", scope: Scope::Runtime, deps: &deps, edition: Edition::E2021, marker: "__velaris_crate_me", version: "0.1.0", open_sites: false };
    let out = analyze_with(&unit, &cfg, &rules);
    out.findings
        .iter()
        .map(|f| {
            let chain: Vec<String> = f.chain.iter().map(|h| format!("{}@{}", h.path, h.line)).collect();
            format!("{} {} {}", f.capability, f.line, [vec![f.path.clone()], chain].concat().join(" -> "))
        })
        .collect()
}

const CLIENT_CRATE: &str = r#"pub mod client {
    pub struct Client;
    pub struct ClientBuilder;
    pub struct Request;
    impl Client {
        pub fn builder() -> ClientBuilder { ClientBuilder }
        pub fn get(&self, _u: &str) -> Request { Request }
        pub fn head(&self, _u: &str) -> Self { Client }
    }
    impl ClientBuilder {
        pub fn build(self) -> Result<Client, ()> { Ok(Client) }
    }
    impl Request {
        pub fn send(self) { let _ = std::fs::write("log", "sent"); }
    }
}
pub use client::{Client, ClientBuilder};
pub fn connect() -> Client { Client }
"#;

#[test]
fn declared_return_types_carry_method_calls_across_crates() {
    // `builder()` returns another type, `build()` a Result of a third, `get()` a fourth:
    // each step's declared type, not the receiver's, is what the next method is looked up on.
    let got = run_two(
        CLIENT_CRATE,
        "pub fn a() -> Result<(), ()> {\n    dep::Client::builder().build()?.get(\"u\").send();\n    Ok(())\n}\npub fn b() {\n    let c = dep::connect();\n    c.get(\"u\").send();\n}\n",
    );
    assert!(got.contains(&"fs.write 2 dep::client::Request::send -> std::fs::write@14".to_string()), "{got:?}");
    assert!(got.contains(&"fs.write 7 dep::client::Request::send -> std::fs::write@14".to_string()), "{got:?}");
}

#[test]
fn a_method_of_the_receiver_type_that_is_not_declared_there_carries_nothing() {
    // The twin: `head()` returns `Self`, and `Client` has no `send`; nothing is reached.
    let got = run_two(CLIENT_CRATE, "pub fn a() {\n    dep::Client::builder().build().unwrap().head(\"u\").get;\n    let c = dep::connect().head(\"u\");\n    c.send();\n}\n");
    assert!(got.iter().all(|f| !f.starts_with("fs.write")), "{got:?}");
}

#[test]
fn paste_and_its_fork_pastey_join_identifiers() {
    // av-scenechange's `cpu_function_lookup_table!`: a macro that re-invokes itself through
    // `pastey::item!` with `[<$name _$key>]` identifiers as `expr` fragments.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! table {
    ($name:ident, [$(($key:ident, $value:expr)),*]) => {
        pub fn $name() { $( let _ = $value; let _ = stringify!($key); )* }
    };
    ($name:ident, [$($key:ident),*]) => {
        pastey::item! { table!($name, [$(($key, [<$name _ $key>])),*]); }
    };
}
#[allow(non_snake_case)]
fn PUT_SSE() { std::fs::write("a", "b").ok(); }
table!(PUT, [SSE]);
paste::paste! { fn [<get_ env>]() { std::env::var("X").ok(); } }
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:12:")), "{got:?}");
}

#[test]
fn a_path_attribute_out_of_the_package_is_refused_and_said_so() {
    let got = run(&[("src/lib.rs", "#[path = \"../../outside.rs\"]\nmod o;\n#[path = \"missing.rs\"]\nmod m;\n")]);
    assert!(got.iter().any(|f| f.starts_with("unanalyzed src/lib.rs:2:") && f.contains("`mod o` is outside the package and refused")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("unanalyzed src/lib.rs:4:") && f.contains("`mod m` not found (tried src/missing.rs)")), "{got:?}");
}

#[test]
fn local_inner_macros_prefixes_macro_calls_only() {
    // bitflags 1.x: `#[macro_export(local_inner_macros)]` with `if !first` and `a != b` in
    // its body, and an inner call that must become `$crate::inner!`.
    let got = run(&[(
        "src/lib.rs",
        r#"#[macro_export]
macro_rules! inner { () => { std::env::var("X").ok() }; }
#[macro_export(local_inner_macros)]
macro_rules! outer {
    () => {
        pub struct S { bits: u8 }
        impl S {
            pub fn f(&self, first: bool) {
                if !first && self.bits != 0 { inner!(); }
            }
        }
    };
}
outer!();
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:14:")), "{got:?}");
}

#[test]
fn a_doc_comment_matches_a_raw_string_doc_attribute() {
    // zerocopy 0.7's `safety_comment!`: rustc sees `/// SAFETY:` as `#[doc = r" SAFETY:"]`.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! safety_comment {
    (#[doc = r" SAFETY:"] $($(#[$attr:meta])* $macro:ident!$args:tt;)*) => {
        $($(#[$attr])* $macro!$args;)*
    };
}
macro_rules! open { ($p:expr) => { pub fn f() { std::fs::read($p).ok(); } }; }
safety_comment! {
    /// SAFETY:
    /// Reading is fine.
    open!("x");
}
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("fs.read src/lib.rs:10:")), "{got:?}");
}

#[test]
fn a_crates_own_cfg_if_of_another_shape_is_expanded_by_its_rules() {
    // sysinfo's `cfg_if!` takes several `if #[cfg] {..} else {..}` chains in one call; the
    // modules it declares are loaded.
    let got = run(&[
        (
            "src/lib.rs",
            r#"macro_rules! cfg_if {
    (if #[cfg($c:meta)] { $($i:item)* } $(if $($rest:tt)+)?) => {
        $(#[cfg($c)] $i)*
        $(cfg_if! { if $($rest)+ })?
    };
}
cfg_if! {
    if #[cfg(unix)] { mod linux; }
    if #[cfg(unix)] { pub fn h() {} }
}
"#,
        ),
        ("src/linux.rs", "pub fn r() { std::fs::read(\"/proc/x\").ok(); }\n"),
    ]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("fs.read src/linux.rs:1:")), "{got:?}");
}

#[test]
fn a_path_fragment_with_generic_arguments_is_an_expression_path_too() {
    // syn's `parse_macro_input!(attr with Punctuated<Meta, Token![,]>::parse_terminated)`.
    let got = run(&[(
        "src/lib.rs",
        r#"pub struct R<A>(A);
impl<A> R<A> { pub fn read(_: &str) { std::fs::read("x").ok(); } }
macro_rules! call { ($p:path) => { $p("x") }; }
macro_rules! ty { ($p:path) => { pub type T = $p; }; }
pub fn f() { call!(R<u8>::read); }
ty!(R<Vec<u8>>);
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
}

#[test]
fn a_cfg_select_arm_that_is_block_like_needs_no_comma() {
    // rusqlite 0.40's error.rs.
    let got = run(&[(
        "src/lib.rs",
        r#"pub fn f(x: bool) -> usize {
    cfg_select! {
        unix => if x { std::fs::read("a").map(|v| v.len()).unwrap_or(0) } else { 2 }
        _ => 3,
    }
}
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("fs.read src/lib.rs:3:")), "{got:?}");
}

#[test]
fn paste_joins_the_parts_of_a_doc_attribute() {
    // rmcp's `builder!`: `#[doc = "Create a new [`" $Target "`] builder."]` inside paste!.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! builder {
    ($Target:ident) => {
        pastey::paste! {
            #[doc = "Create a new [`" $Target "`] builder."]
            pub fn [<$Target:snake _builder>]() { std::env::var("X").ok(); }
        }
    };
}
builder!(ServerCapabilities);
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:9:")), "{got:?}");
}

#[test]
fn a_known_receiver_type_without_the_method_falls_back_to_the_traits_in_scope() {
    // A declared return type that is an alias or a wrapper: the method comes from a std
    // extension trait in scope, as it did when the type was unknown.
    let got = run(&[(
        "src/lib.rs",
        r#"use std::os::unix::fs::FileExt;
pub type Sink = std::fs::File;
fn sink() -> Sink { todo!() }
fn shared() -> std::sync::Arc<std::sync::Mutex<std::fs::File>> { todo!() }
pub fn f() {
    let _ = sink().write_at(b"x", 0);
    let _ = shared().lock().unwrap().write_at(b"y", 0);
}
"#,
    )]);
    assert!(got.iter().any(|f| f.starts_with("fs.write src/lib.rs:6:")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("fs.write src/lib.rs:7:")), "{got:?}");
}

#[test]
fn a_block_fragment_passed_to_an_inner_macro_stays_one_piece() {
    // Unwrapping block-like fragments at statement starts must not reach into the arguments
    // of an inner macro call: `inner!($b)` must still take its `$e:expr` arm.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! inner { ({ $($t:tt)* }) => {}; ($e:expr) => { $e }; }
macro_rules! outer { ($a:block, $b:block) => { $a drop(0); inner!($b); }; }
pub fn f() { outer!({}, { std::process::Command::new("sh"); }); }
"#,
    )]);
    assert!(got.iter().any(|f| f.starts_with("process.spawn src/lib.rs:3:")), "{got:?}");
}

#[test]
fn a_crates_own_cfg_if_is_expanded_by_its_rules_even_in_cfg_ifs_shape() {
    // A crate's `macro_rules! cfg_if` that compiles both branches: rustc uses it, so both are
    // compiled, and both are analysed.
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! cfg_if {
    (if #[cfg($c:meta)] { $($a:item)* } else { $($b:item)* }) => { $($a)* $($b)* };
}
cfg_if! {
    if #[cfg(windows)] { pub fn w() { std::env::var("A").ok(); } }
    else { pub fn u() {} }
}
"#,
    )]);
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:5:")), "{got:?}");
}

#[test]
fn a_syscall_number_is_taken_at_its_name_only_from_the_c_library() {
    let got = run(&[(
        "src/lib.rs",
        r#"extern "C" { fn syscall(n: i64, ...) -> i64; }
#[allow(non_snake_case)]
pub unsafe fn run(SYS_getrandom: i64) -> i64 { syscall(SYS_getrandom) }
pub unsafe fn other() -> i64 { syscall(otherdep::SYS_getrandom) }
"#,
    )]);
    assert!(got.iter().any(|f| f.starts_with("unanalyzed src/lib.rs:3:") && f.contains("not the C library's constant")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("unanalyzed src/lib.rs:4:") && f.contains("not the C library's constant")), "{got:?}");
}

#[test]
fn paste_leaves_a_doc_attribute_it_cannot_join_alone() {
    let got = run(&[(
        "src/lib.rs",
        r#"macro_rules! mk {
    ($t:ident) => {
        paste::paste! {
            #[doc = concat!("A ", stringify!($t))]
            pub fn [<f_ $t>]() { std::env::var("X").ok(); }
        }
    };
}
mk!(one);
"#,
    )]);
    assert!(got.iter().all(|f| !f.starts_with("unanalyzed")), "{got:?}");
    assert!(got.iter().any(|f| f.starts_with("env.read src/lib.rs:9:")), "{got:?}");
}

#[test]
fn an_inline_module_whose_path_leads_out_of_the_package_finds_no_file_at_the_root() {
    let got = run(&[
        ("src/lib.rs", "#[path = \"../../elsewhere\"]\nmod a {\n    mod b;\n}\n"),
        ("b.rs", "pub fn decoy() {}\n"),
    ]);
    assert!(got.iter().any(|f| f.starts_with("unanalyzed src/lib.rs:3:") && f.contains("`mod b` not found")), "{got:?}");
}
