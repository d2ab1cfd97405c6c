//! Crates built to exhaust the machine that analyses them, as dependencies of a program, against
//! the real binary: the analysis stops at a deterministic budget, reports `unanalyzed` at the
//! invocation with the budget named, analyses the rest of the crate, and writes the same bytes
//! whatever the cache holds and however much memory the run may use. Each shape has its
//! negative twin, the same macros at a size well within the budgets, analysed in full.
//! (Their peak memory and time are measured in benchmark/hostile.sh, not here.)

#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/world.rs"]
mod world;

use serde_json::Value;
use world::{Pkg, World, ok};

/// Code outside the macros, line 1 of every crate here: found however the macros fare.
const REST: &str = "pub fn run() { std::process::Command::new(\"sh\"); }\n";

/// Each macro invokes the one before it twice, `levels` deep, invoked once in a function
/// (statement position): 2^levels reads.
fn doubling_statements(levels: usize) -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! m0 { () => { let _ = std::fs::read(\"a\"); }; }\n");
    for i in 1..=levels {
        s.push_str(&format!("macro_rules! m{i} {{ () => {{ m{}!(); m{}!(); }}; }}\n", i - 1, i - 1));
    }
    s.push_str(&format!("pub fn f() {{ m{levels}!(); }}\n"));
    s
}

/// The same at module level: every level declares two modules.
fn doubling_items(levels: usize) -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! m0 { () => { pub fn f() { let _ = std::fs::read(\"a\"); } }; }\n");
    for i in 1..=levels {
        s.push_str(&format!("macro_rules! m{i} {{ () => {{ mod a {{ m{}!(); }} mod b {{ m{}!(); }} }}; }}\n", i - 1, i - 1));
    }
    s.push_str(&format!("m{levels}!();\n"));
    s
}

/// A macro of 1,000 arms, each taking an expression then a marker, invoked with an expression
/// of about 12,000 tokens and the marker of arm `arm`: every arm before it parses the whole
/// expression again before it fails.
fn many_arms(arm: usize) -> String {
    let mut s = String::from(REST);
    s.push_str("macro_rules! pick {\n");
    for i in 0..1000 {
        s.push_str(&format!("    ($e:expr ; k{i}) => {{ pub fn f{i}() {{ let _ = std::fs::read($e); }} }};\n"));
    }
    s.push_str("}\n");
    let expr: Vec<String> = (0..4000).map(|i| format!("x{i}")).collect();
    s.push_str(&format!("pick!({} ; k{arm});\n", expr.join(" + ")));
    s
}

fn evil(name: &str, lib: &str) -> Pkg {
    let m = format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\nedition = \"2021\"\n");
    Pkg::new(name, "1.0.0", &[("Cargo.toml", &m), ("src/lib.rs", lib)], &[])
}

fn app(deps: &[&str]) -> Pkg {
    let lines: String = deps.iter().map(|d| format!("{d} = \"1\"\n")).collect();
    let m = format!("[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{lines}");
    let main: String = format!("fn main() {{ {} }}\n", deps.iter().map(|d| format!("{d}::run();")).collect::<String>());
    Pkg::new("app", "0.1.0", &[("Cargo.toml", &m), ("src/main.rs", &main)], deps)
}

fn surface_json(w: &World, extra: &[&str]) -> String {
    let mut args = vec!["surface", "--format", "json"];
    args.extend_from_slice(extra);
    ok(&w.run(&args))
}

/// The findings of crate `name` in program `app`, as `capability file:line path`.
fn findings(doc: &str, name: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(doc).unwrap();
    let p = doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == "app").unwrap();
    let r = p["crates"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{name} in {p:#}"));
    // Programs refer to each crate's details by id (velaris/surface/v2).
    let c = doc["crates"].as_array().unwrap().iter().find(|c| c["id"] == r["id"]).unwrap_or_else(|| panic!("{} in crates", r["id"]));
    c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}:{} {}", f["capability"].as_str().unwrap(), f["file"].as_str().unwrap(), f["line"], f["path"].as_str().unwrap()))
        .collect()
}

fn unanalyzed(found: &[String]) -> Vec<&String> {
    found.iter().filter(|f| f.starts_with("unanalyzed")).collect()
}

#[test]
fn doubling_macros_30_levels_deep_stop_at_the_budget_and_16_levels_are_analysed_in_full() {
    let w = World::new(vec![evil("evil", &doubling_statements(30))], vec![app(&["evil"])]);
    let found = findings(&surface_json(&w, &[]), "evil");
    let why = unanalyzed(&found);
    assert!(!why.is_empty(), "{found:?}");
    // At the invocation, the budget named.
    assert!(
        why.iter().all(|f| f.starts_with("unanalyzed src/lib.rs:33 macro `m") && f.ends_with("not expanded: the macro output held per crate budget (2,000,000 tokens) is exhausted")),
        "{why:?}"
    );
    // The rest of the crate, and the reads expanded before the budget ran out.
    assert!(found.contains(&"process.spawn src/lib.rs:1 std::process::Command::new".to_string()), "{found:?}");
    assert!(found.contains(&"fs.read src/lib.rs:33 std::fs::read".to_string()), "{found:?}");

    // Its twin: 2^16 reads (its expansions hold 1.4 million tokens at the most).
    let w = World::new(vec![evil("evil", &doubling_statements(16))], vec![app(&["evil"])]);
    let found = findings(&surface_json(&w, &[]), "evil");
    assert!(unanalyzed(&found).is_empty(), "{found:?}");
    assert!(found.contains(&"fs.read src/lib.rs:19 std::fs::read".to_string()), "{found:?}");
}

#[test]
fn an_invocation_that_would_take_too_many_matcher_steps_stops_there() {
    let w = World::new(vec![evil("evil", &many_arms(999))], vec![app(&["evil"])]);
    let found = findings(&surface_json(&w, &[]), "evil");
    assert_eq!(
        unanalyzed(&found),
        ["unanalyzed src/lib.rs:1004 macro `pick!` not expanded: the macro matcher steps per invocation budget (1,000,000 steps) is exhausted"],
        "{found:?}"
    );
    assert!(found.contains(&"process.spawn src/lib.rs:1 std::process::Command::new".to_string()), "{found:?}");
    assert!(!found.iter().any(|f| f.starts_with("fs.read")), "{found:?}");

    // Its twin: the same invocation naming the fifth arm.
    let w = World::new(vec![evil("evil", &many_arms(4))], vec![app(&["evil"])]);
    let found = findings(&surface_json(&w, &[]), "evil");
    assert!(unanalyzed(&found).is_empty(), "{found:?}");
    assert!(found.contains(&"fs.read src/lib.rs:1004 std::fs::read".to_string()), "{found:?}");
}

#[test]
fn the_same_bytes_cold_warm_and_under_a_small_memory_account() {
    // Two hostile crates in one graph, and a third that is ordinary.
    let ordinary = evil("plain", &format!("{REST}pub fn g() {{ let _ = std::fs::read(\"a\"); }}\n"));
    let registry = vec![evil("evila", &doubling_items(30)), evil("evilb", &many_arms(999)), ordinary];
    let w = World::new(registry, vec![app(&["evila", "evilb", "plain"])]);
    let cold = surface_json(&w, &[]);
    assert!(!unanalyzed(&findings(&cold, "evila")).is_empty(), "{cold}");
    assert!(!unanalyzed(&findings(&cold, "evilb")).is_empty(), "{cold}");
    assert!(
        findings(&cold, "evila")
            .iter()
            .any(|f| f.contains("not expanded: the macro output held per crate budget (2,000,000 tokens) is exhausted")),
        "{cold}"
    );
    assert!(unanalyzed(&findings(&cold, "plain")).is_empty(), "{cold}");
    // Cached results are the same bytes.
    let cached = std::fs::read_dir(w.cache.path().join("surface")).map(|d| d.count()).unwrap_or(0);
    assert!(cached >= 3, "results cached: {cached}");
    assert_eq!(surface_json(&w, &[]), cold, "warm");
    // A cold run whose crates must wait for one another (an account of 1 MiB, from the
    // environment: one crate at a time) finds the same.
    std::fs::remove_dir_all(w.cache.path().join("surface")).unwrap();
    let out = registry_double::velaris_command(w.ws.path(), w.home.path(), w.cache.path())
        .args(["surface", "--format", "json"])
        .env("VELARIS_ANALYSIS_MEMORY", "1MiB")
        .output()
        .unwrap();
    assert_eq!(ok(&out), cold, "cold, one crate at a time");
}

#[test]
fn the_memory_account_is_a_size() {
    let w = World::new(vec![], vec![app(&[])]);
    ok(&w.run(&["surface", "--analysis-memory", "512MiB"]));
    let out = w.run(&["surface", "--analysis-memory", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"lots\" is not a size"), "{err}");
}
