//! Each budget of a crate's analysis, tried at what a crate needs (analysed in full, the
//! capability inside the macro found) and one unit below it (`unanalyzed` at the invocation,
//! the budget named, the rest of the crate analysed).

use std::collections::BTreeMap;

use super::macros::{Limits, Usage};
use super::oracle::doubles::{TestCfg, TestRules};
use super::*;

fn analyze_under(files: &[(&str, &str)], limits: Limits) -> (Vec<String>, Usage) {
    let tree: FileTree = files.iter().map(|(p, s)| (p.to_string(), s.as_bytes().to_vec())).collect();
    let deps = BTreeMap::new();
    let unit = Unit { crate_name: "me", files: &tree, root: "src/lib.rs", scope: Scope::Runtime, deps: &deps, edition: Edition::E2021, marker: "__velaris_crate_me", version: "1.0.0", open_sites: false };
    let (out, usage) = analyze_limited(&unit, &TestCfg::linux(&[]), &TestRules::small(), limits, None);
    (out.findings.iter().map(|f| format!("{} {}:{} {}", f.capability, f.file, f.line, f.path)).collect(), usage)
}

/// Code outside every macro: found however the macros fare.
const REST: &str = "pub fn run() { std::process::Command::new(\"sh\"); }\n";

/// An invocation that tries 20 arms, matching the last.
fn arms(invocations: usize) -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! pick {\n");
    for i in 0..20 {
        let body = if i == 19 { "pub fn f() { std::fs::read(\"a\"); }" } else { "" };
        s.push_str(&format!("    (a b c d {i} $x:ident) => {{ {body} }};\n"));
    }
    s.push_str("}\n");
    for i in 0..invocations {
        s.push_str(&format!("mod m{i} {{ pick!(a b c d 19 z); }}\n"));
    }
    s
}

/// One invocation whose output is 50 reads of long strings.
fn repeat() -> String {
    let args: String = (0..50).map(|i| format!("\"{}\" ", "x".repeat(i + 10))).collect();
    format!("{REST}macro_rules! rep {{ ($($x:tt)*) => {{ pub fn f() {{ $( std::fs::read($x); )* }} }} }}\nrep!({args});\n")
}

/// Each macro invokes the one before it twice, 6 levels deep, in statement position.
fn doubling() -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! m0 { () => { std::fs::read(\"a\"); }; }\n");
    for i in 1..=6 {
        s.push_str(&format!("macro_rules! m{i} {{ () => {{ m{}!(); m{}!(); }}; }}\n", i - 1, i - 1));
    }
    s.push_str("pub fn f() { m6!(); }\n");
    s
}

/// The same, in item position, each level in modules of its own.
fn doubling_items() -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! m0 { () => { pub fn f() { std::fs::read(\"a\"); } }; }\n");
    for i in 1..=5 {
        s.push_str(&format!("macro_rules! m{i} {{ () => {{ mod a {{ m{}!(); }} mod b {{ m{}!(); }} }}; }}\n", i - 1, i - 1));
    }
    s.push_str("m5!();\n");
    s
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    s.chars().enumerate().fold(String::new(), |mut out, (i, c)| {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
        out
    })
}

type Set = fn(&mut Limits, u64);
type Get = fn(&Usage) -> u64;

/// The budget, how to set it, how much of it a crate spent, and a crate that spends it.
fn cases() -> Vec<(&'static str, Set, Get, String)> {
    vec![
        ("macro matcher steps per invocation", |l, n| l.steps_per_invocation = l.steps_per_invocation.with_max(n), |u| u.steps_per_invocation, arms(1)),
        ("macro matcher steps per crate", |l, n| l.steps_per_crate = l.steps_per_crate.with_max(n), |u| u.steps_per_crate, arms(3)),
        ("macro output per invocation", |l, n| l.tokens_per_invocation = l.tokens_per_invocation.with_max(n), |u| u.tokens_per_invocation, repeat()),
        ("macro output text per invocation", |l, n| l.bytes_per_invocation = l.bytes_per_invocation.with_max(n), |u| u.bytes_per_invocation, repeat()),
        ("macro output per crate", |l, n| l.tokens_per_crate = l.tokens_per_crate.with_max(n), |u| u.tokens_per_crate, doubling()),
        ("macro output text per crate", |l, n| l.bytes_per_crate = l.bytes_per_crate.with_max(n), |u| u.bytes_per_crate, doubling()),
        ("macro output parsed per crate", |l, n| l.code_per_crate = l.code_per_crate.with_max(n), |u| u.code_per_crate, doubling()),
        ("macro output held per crate", |l, n| l.held_tokens = l.held_tokens.with_max(n), |u| u.held_tokens, doubling()),
        ("macro output text held per crate", |l, n| l.held_bytes = l.held_bytes.with_max(n), |u| u.held_bytes, doubling()),
        ("macro output held per crate", |l, n| l.held_tokens = l.held_tokens.with_max(n), |u| u.held_tokens, doubling_items()),
    ]
}

#[test]
fn each_budget_at_what_a_crate_needs_and_one_below() {
    for (what, set, get, src) in cases() {
        let files = [("src/lib.rs", src.as_str())];
        let (full, usage) = analyze_under(&files, Limits::default());
        let need = get(&usage);
        assert!(need > 1, "{what}: {usage}");
        assert!(full.iter().any(|f| f.starts_with("fs.read ")), "{what}: {full:?}");
        assert!(!full.iter().any(|f| f.starts_with("unanalyzed")), "{what}: {full:?}");

        // Just enough: the same findings.
        let mut at = Limits::default();
        set(&mut at, need);
        let (got, _) = analyze_under(&files, at);
        assert_eq!(got, full, "{what} at {need}");

        // One less: the invocation that ran out is unanalyzed, with the budget named, and the
        // code outside the macros is analysed.
        let mut below = Limits::default();
        set(&mut below, need - 1);
        let (got, _) = analyze_under(&files, below);
        let named = format!("the {what} budget ({} ", thousands(need - 1));
        let limit = got.iter().find(|f| f.starts_with("unanalyzed") && f.contains(&named));
        assert!(limit.is_some_and(|f| f.contains("not expanded: the ")), "{what} at {}: {got:?}", need - 1);
        assert!(got.iter().any(|f| f.starts_with("process.spawn src/lib.rs:1 ")), "{what}: {got:?}");
    }
}

#[test]
fn the_source_a_crate_parses_is_bounded() {
    let lib = format!("{REST}mod more;\n");
    let more = "pub fn g() { std::fs::read(\"a\"); }\n";
    let files = [("src/lib.rs", lib.as_str()), ("src/more.rs", more)];
    let need = (lib.len() + more.len()) as u64;
    let with = |n: u64| Limits { source: crate::surface::guard::SOURCE_PER_CRATE.with_max(n), ..Limits::default() };
    let (full, _) = analyze_under(&files, with(need));
    assert!(full.iter().any(|f| f == "fs.read src/more.rs:1 std::fs::read"), "{full:?}");
    assert!(!full.iter().any(|f| f.starts_with("unanalyzed")), "{full:?}");
    let (got, _) = analyze_under(&files, with(need - 1));
    assert!(
        got.iter().any(|f| f.starts_with("unanalyzed src/more.rs:1 ") && f.contains("the source parsed per crate budget")),
        "{got:?}"
    );
    assert!(got.iter().any(|f| f.starts_with("process.spawn src/lib.rs:1 ")), "{got:?}");
    assert!(!got.iter().any(|f| f.starts_with("fs.read")), "{got:?}");
}

#[test]
fn what_a_crate_spends_does_not_depend_on_anything_but_its_source() {
    for (what, _, _, src) in cases() {
        let files = [("src/lib.rs", src.as_str())];
        let (a, ua) = analyze_under(&files, Limits::default());
        let (b, ub) = analyze_under(&files, Limits::default());
        assert_eq!((a, ua), (b, ub), "{what}");
    }
}

#[test]
fn arguments_passed_on_to_another_macro_are_not_counted_as_parsed() {
    // A tt-muncher: each step passes the rest of its input on; only the final output is code.
    let src = format!(
        "{REST}macro_rules! munch {{ (@done $($out:tt)*) => {{ pub fn f() {{ $($out)* }} }}; (@acc [$($out:tt)*] $x:literal $($rest:tt)*) => {{ munch!(@acc [$($out)* std::fs::read($x);] $($rest)*); }}; (@acc [$($out:tt)*]) => {{ munch!(@done $($out)*); }}; }}\nmunch!(@acc [] {});\n",
        (0..40).map(|i| format!("\"{i}\"")).collect::<Vec<_>>().join(" ")
    );
    let (found, usage) = analyze_under(&[("src/lib.rs", &src)], Limits::default());
    assert!(found.iter().any(|f| f.starts_with("fs.read ")), "{found:?}");
    // Every step's output is counted as output, but the parsed part is about the final
    // function, not the sum of the steps.
    assert!(usage.tokens_per_crate > 10 * usage.code_per_crate, "{usage}");
}
