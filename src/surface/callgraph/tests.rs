//! The program step on hand-made analyses: resolution to implementations, the type
//! narrowing, blanket and provided methods, chains through the dispatch hop, bounds.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::surface::analyze::Exports;
use crate::surface::analyze::summary::{ImplSummary, OpenSite, Summary};
use crate::surface::model::Scope;

fn hop(krate: &str, path: &str, line: u32) -> Hop {
    Hop { path: path.into(), krate: krate.into(), version: "1.0.0".into(), file: "src/lib.rs".into(), line }
}

fn caps(c: &[(Capability, Vec<Hop>)]) -> BTreeMap<Capability, Vec<Hop>> {
    c.iter().cloned().collect()
}

fn imp(key: &str, self_ty: &str, display: &str, summary: Summary) -> ImplSummary {
    ImplSummary { key: key.into(), self_ty: self_ty.into(), display: display.into(), file: "src/lib.rs".into(), line: 7, summary: Arc::new(summary) }
}

fn unit(crate_name: &str, impls: Vec<ImplSummary>, constructed: &[&str], trait_ids: &[(&str, &str)]) -> CrateAnalysis {
    let exports = Exports {
        crate_name: crate_name.into(),
        impls,
        trait_ids: trait_ids.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        ..Exports::default()
    };
    CrateAnalysis { exports: Arc::new(exports), constructed: constructed.iter().map(|s| s.to_string()).collect(), ..CrateAnalysis::default() }
}

const SINK: &str = "plug@1.0.0#crate::Sink";

fn site(key: &str) -> OpenSite {
    OpenSite { file: "src/main.rs".into(), line: 3, column: 5, path: "plug::Hub::emit".into(), scope: Scope::Runtime, key: key.into(), chain: vec![hop("plug", "dyn plug::Sink::put", 12)] }
}

#[test]
fn a_call_through_a_trait_reaches_the_constructed_implementations() {
    let write = Summary { caps: caps(&[(Capability::FsWrite, vec![hop("files", "std::fs::write", 9)])]), ..Summary::default() };
    let spawn = Summary { caps: caps(&[(Capability::ProcessSpawn, vec![hop("files", "std::process::Command::new", 20)])]), ..Summary::default() };
    let plug = unit("plug", Vec::new(), &[], &[("Sink", SINK)]);
    let files = unit(
        "files",
        vec![
            imp(&format!("{SINK}::put"), "files@1.0.0#crate::FileSink", "files::FileSink::put", write),
            // Never constructed anywhere: never run.
            imp(&format!("{SINK}::put"), "files@1.0.0#crate::Spawner", "files::Spawner::put", spawn),
        ],
        &["files@1.0.0#crate::FileSink"],
        &[],
    );
    let units = [UnitRef { analysis: &plug, krate: "plug", version: "1.0.0" }, UnitRef { analysis: &files, krate: "files", version: "1.0.0" }];
    let d = Dispatch::new(&units);
    // The key as another crate names the trait (by its path) is the same call.
    let (found, unresolved) = d.findings(&[site("plug::Sink::put")]);
    assert_eq!(unresolved, 0);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!((f.capability, f.line, f.path.as_str()), (Capability::FsWrite, 3, "plug::Hub::emit"));
    let paths: Vec<&str> = f.chain.iter().map(|h| &*h.path).collect();
    assert_eq!(paths, ["dyn plug::Sink::put", "files::FileSink::put", "std::fs::write"]);
    // The reachable grant of an entry whose summary has the open call.
    let entry = Summary { open: [(format!("{SINK}::put"), vec![hop("app", "plug::Hub::emit", 3)])].into_iter().collect(), ..Summary::default() };
    let (reached, unresolved, through) = d.reachable(&[&entry]);
    assert_eq!(reached.into_iter().collect::<Vec<_>>(), [Capability::FsWrite]);
    assert_eq!((unresolved, through), (0, 1));
}

#[test]
fn blanket_and_provided_methods_are_always_candidates_and_open_calls_chain_on() {
    let inner = "files@1.0.0#crate::Backend::flush";
    let provided = Summary { open: [(inner.to_string(), vec![hop("plug", "dyn files::Backend::flush", 4)])].into_iter().collect(), ..Summary::default() };
    let flush = Summary { caps: caps(&[(Capability::NetConnect, vec![hop("files", "std::net::TcpStream::connect", 30)])]), ..Summary::default() };
    let plug = unit("plug", vec![imp(&format!("{SINK}::put"), "<default>", "plug::Sink::put", provided)], &[], &[]);
    let files = unit("files", vec![imp(inner, "*", "files::{impl}::flush", flush)], &[], &[]);
    let units = [UnitRef { analysis: &plug, krate: "plug", version: "1.0.0" }, UnitRef { analysis: &files, krate: "files", version: "1.0.0" }];
    let d = Dispatch::new(&units);
    let (found, _) = d.findings(&[site(&format!("{SINK}::put"))]);
    assert_eq!(found.iter().map(|f| f.capability).collect::<Vec<_>>(), [Capability::NetConnect]);
    assert_eq!(&*found[0].chain.last().unwrap().path, "std::net::TcpStream::connect");
    assert!(found[0].chain.iter().any(|h| &*h.path == "files::{impl}::flush"), "{:#?}", found[0].chain);
}

#[test]
fn bounds_make_a_call_unresolved_never_nothing() {
    let write = Summary { caps: caps(&[(Capability::FsWrite, vec![hop("files", "std::fs::write", 9)])]), ..Summary::default() };
    let many: Vec<ImplSummary> = (0..MAX_CALLEES + 3).map(|i| imp(&format!("{SINK}::put"), "*", &format!("files::T{i}::put"), write.clone())).collect();
    let files = unit("files", many, &[], &[]);
    let units = [UnitRef { analysis: &files, krate: "files", version: "1.0.0" }];
    let d = Dispatch::new(&units);
    let (found, unresolved) = d.findings(&[site(&format!("{SINK}::put"))]);
    assert_eq!(unresolved, 1, "the bound is said");
    assert_eq!(found.len(), 1, "and what was followed is kept");
    let truncated = Summary { open_truncated: true, ..Summary::default() };
    assert_eq!(d.reachable(&[&truncated]).1, 1);
}

#[test]
fn the_work_of_a_programs_resolution_is_bounded_and_a_call_past_it_is_unresolved() {
    // A chain of calls through traits: T0::go's implementation calls T1::go, and so on; the
    // last one writes. Each step looks at one implementation and the one call it makes.
    let write = Summary { caps: caps(&[(Capability::FsWrite, vec![hop("files", "std::fs::write", 9)])]), ..Summary::default() };
    let key = |i: usize| format!("files@1.0.0#crate::T{i}::go");
    let mut impls = Vec::new();
    for i in 0..40 {
        let s = Summary { open: [(key(i + 1), vec![hop("files", &format!("dyn files::T{}::go", i + 1), 3)])].into_iter().collect(), ..Summary::default() };
        impls.push(imp(&key(i), "*", &format!("files::{{impl}}::go{i}"), s));
    }
    impls.push(imp(&key(40), "*", "files::{impl}::go40", write));
    let files = unit("files", impls, &[], &[]);
    let units = [UnitRef { analysis: &files, krate: "files", version: "1.0.0" }];
    // 40 implementations with one call each, and the last: 81 steps.
    let d = Dispatch::with_steps(&units, STEPS.with_max(81));
    let (found, unresolved) = d.findings(&[site(&key(0))]);
    assert_eq!(unresolved, 0);
    assert_eq!(found.iter().map(|f| f.capability).collect::<Vec<_>>(), [Capability::FsWrite]);
    assert_eq!(d.steps(), 81);
    // One step fewer: the write is not reached, and the call says so.
    let d = Dispatch::with_steps(&units, STEPS.with_max(80));
    let (found, unresolved) = d.findings(&[site(&key(0))]);
    assert_eq!((found.len(), unresolved), (0, 1));
    // Every later call of the program is unresolved too, never "reaches nothing".
    let entry = Summary { open: [(key(5), vec![hop("app", "main", 3)])].into_iter().collect(), ..Summary::default() };
    assert_eq!(d.reachable(&[&entry]).1, 1);
}
