//! Property: for random module trees under random cfgs (true, false, unknown), every `.rs`
//! file of the package is either analysed or listed as not compiled with the right reason.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::analyze::{CrateInput, Edition, analyze};
use super::cfg::{CfgEnv, Others};
use super::engine::{LISTING_BYTES, unloaded, unloaded_with};
use super::model::{Scope, UnloadedReason};
use super::rules::Rules;
use crate::package::FileTree;

/// A cfg on a declaration: none, one the target makes true or false, or a name only a build
/// script could set.
#[derive(Debug, Clone, Copy, PartialEq)]
enum C {
    None,
    True,
    False,
    Custom,
}

impl C {
    fn text(self) -> &'static str {
        match self {
            C::None | C::True => "unix",
            C::False => "windows",
            C::Custom => "custom_cfg",
        }
    }
    /// Whether code under it is compiled: `None` = unknown.
    fn value(self, build_script: bool) -> Option<bool> {
        match self {
            C::None | C::True => Some(true),
            C::False => Some(false),
            C::Custom if build_script => None,
            C::Custom => Some(false),
        }
    }
}

/// How a leaf module names its file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Path,
    CfgAttrPath(C),
}

#[derive(Debug, Clone)]
struct Node {
    cfg: C,
    style: Style,
    children: Vec<Node>,
}

fn c() -> impl Strategy<Value = C> {
    prop_oneof![Just(C::None), Just(C::True), Just(C::False), Just(C::Custom)]
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = (c(), prop_oneof![Just(Style::Plain), Just(Style::Path), c().prop_map(Style::CfgAttrPath)])
        .prop_map(|(cfg, style)| Node { cfg, style, children: Vec::new() });
    leaf.prop_recursive(3, 16, 4, |inner| {
        (c(), prop::collection::vec(inner, 1..4)).prop_map(|(cfg, children)| Node { cfg, style: Style::Plain, children })
    })
}

/// What the model says of each file: loaded, or not with which reason.
type Expect = BTreeMap<String, Option<UnloadedReason>>;

/// Write module `n` (named `name`, in directory `dir` whose module file is the parent) and
/// its children; returns the declaration. `live`: every ancestor compiled (true or unknown).
#[allow(clippy::too_many_arguments)]
fn emit(n: &Node, name: &str, dir: &str, live: bool, bs: bool, files: &mut FileTree, expect: &mut Expect, next: &mut usize) -> String {
    let here = live && n.cfg.value(bs) != Some(false);
    let reason = |on: bool| if on { None } else { Some(UnloadedReason::CfgFalse) };
    let mut decl = String::new();
    if n.cfg != C::None {
        decl.push_str(&format!("#[cfg({})]\n", n.cfg.text()));
    }
    let body = |idx: &mut usize| {
        *idx += 1;
        format!("pub fn f{}() {{}}\n", *idx)
    };
    if !n.children.is_empty() {
        let sub = format!("{dir}/{name}");
        let mut text = body(next);
        for (i, ch) in n.children.iter().enumerate() {
            let cname = format!("{name}_{i}");
            text.push_str(&emit(ch, &cname, &sub, here, bs, files, expect, next));
        }
        let file = format!("{sub}/mod.rs");
        files.insert(file.clone(), text.into_bytes());
        expect.insert(file, reason(here));
        decl.push_str(&format!("pub mod {name};\n"));
        return decl;
    }
    let default = format!("{dir}/{name}.rs");
    let alt = format!("{dir}/alt/{name}.rs");
    match n.style {
        Style::Plain => {
            files.insert(default.clone(), body(next).into_bytes());
            expect.insert(default, reason(here));
        }
        Style::Path => {
            decl.push_str(&format!("#[path = \"alt/{name}.rs\"]\n"));
            files.insert(alt.clone(), body(next).into_bytes());
            expect.insert(alt, reason(here));
        }
        Style::CfgAttrPath(p) => {
            decl.push_str(&format!("#[cfg_attr({}, path = \"alt/{name}.rs\")]\n", p.text()));
            files.insert(default.clone(), body(next).into_bytes());
            files.insert(alt.clone(), body(next).into_bytes());
            let v = p.value(bs);
            // The alternative: compiled when its cfg_attr may hold; declared under a false one.
            let alt_reason = if !here || v == Some(false) { Some(UnloadedReason::CfgFalse) } else { None };
            // The default: compiled when the cfg_attr may not hold; otherwise nothing names it.
            let default_reason = if !here {
                Some(UnloadedReason::CfgFalse)
            } else if v == Some(true) {
                Some(UnloadedReason::NotDeclared)
            } else {
                None
            };
            expect.insert(alt, alt_reason);
            expect.insert(default, default_reason);
        }
    }
    decl.push_str(&format!("pub mod {name};\n"));
    decl
}

fn check(roots: &[Node], bs: bool, strays: usize) -> Result<(), TestCaseError> {
    let mut files = FileTree::new();
    let mut expect = Expect::new();
    let mut next = 0;
    let mut lib = String::new();
    for (i, n) in roots.iter().enumerate() {
        lib.push_str(&emit(n, &format!("m{i}"), "src", true, bs, &mut files, &mut expect, &mut next));
    }
    files.insert("src/lib.rs".into(), lib.into_bytes());
    expect.insert("src/lib.rs".into(), None);
    for k in 0..strays {
        files.insert(format!("src/stray_{k}.rs"), b"fn s() {}".to_vec());
        expect.insert(format!("src/stray_{k}.rs"), Some(UnloadedReason::NotDeclared));
    }
    files.insert("tests/it.rs".into(), b"#[test] fn t() {}".to_vec());
    expect.insert("tests/it.rs".into(), Some(UnloadedReason::OtherTarget));
    let others = if bs { Others::Unknown } else { Others::False };
    let cfg = CfgEnv::default().with_others(others);
    let deps = BTreeMap::new();
    let input = CrateInput {
        crate_name: "t",
        files: &files,
        root: "src/lib.rs",
        cfg: &cfg,
        scope: Scope::Runtime,
        deps: &deps,
        rules: Rules::builtin(),
        edition: Edition::from_manifest(Some("2021")),
        marker: "__velaris_crate_t",
        version: "1.0.0",
        open_sites: false,
    };
    let a = analyze(&input);
    prop_assert!(a.findings.iter().all(|f| f.capability != super::Capability::Unanalyzed), "{:?}", a.findings);
    let all: Vec<String> = files.keys().cloned().collect();
    let loaded: BTreeSet<String> = a.files.iter().cloned().collect();
    let skipped: BTreeMap<String, String> = a.skipped.iter().map(|s| (s.file.clone(), s.detail.clone())).collect();
    let (list, count) = unloaded(&all, &loaded, &skipped);
    let got: Expect = all
        .iter()
        .map(|f| (f.clone(), list.iter().find(|u| &u.file == f).map(|u| u.reason)))
        .collect();
    prop_assert_eq!(count as usize, list.len());
    prop_assert_eq!(got, expect);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]
    #[test]
    fn every_file_is_loaded_or_listed_with_its_reason(roots in prop::collection::vec(node(), 1..4), bs in any::<bool>(), strays in 0usize..3) {
        check(&roots, bs, strays)?;
    }
}

#[test]
fn the_model_agrees_on_a_hand_made_tree() {
    let leaf = |cfg, style| Node { cfg, style, children: Vec::new() };
    let roots = vec![
        Node { cfg: C::False, style: Style::Plain, children: vec![leaf(C::None, Style::Path), leaf(C::True, Style::Plain)] },
        leaf(C::Custom, Style::CfgAttrPath(C::Custom)),
        leaf(C::None, Style::CfgAttrPath(C::False)),
        leaf(C::None, Style::CfgAttrPath(C::True)),
    ];
    for bs in [false, true] {
        check(&roots, bs, 2).unwrap();
    }
}

#[test]
fn a_package_of_100000_files_is_listed_within_bounds() {
    // 100,000 files not compiled, under a module skipped by a false cfg: the count is exact,
    // the list holds the first MAX_UNLOADED, each with its reason.
    let mut all: Vec<String> = (0..100_000).map(|i| format!("src/gen/m{i:06}.rs")).collect();
    all.push("src/lib.rs".into());
    all.sort();
    let loaded: BTreeSet<String> = ["src/lib.rs".to_string()].into();
    let skipped: BTreeMap<String, String> = [("src/gen.rs".to_string(), "cfg(any()) at src/lib.rs:1".to_string())].into();
    let (list, count) = unloaded(&all, &loaded, &skipped);
    assert_eq!(count, 100_000);
    assert_eq!(list.len(), super::model::MAX_UNLOADED);
    assert!(list.iter().all(|u| u.reason == UnloadedReason::CfgFalse && u.detail == "under src/gen.rs, cfg(any()) at src/lib.rs:1"), "{:?}", &list[..3]);
    // Its twin just under the list's size: every file listed.
    let few: Vec<String> = all.iter().take(super::model::MAX_UNLOADED).cloned().collect();
    let (list, count) = unloaded(&few, &loaded, &skipped);
    assert_eq!((list.len() as u64, count), (count, super::model::MAX_UNLOADED as u64));
}

#[test]
fn the_search_for_a_skipped_module_above_deep_files_is_bounded() {
    // Files 200 directories deep under a skipped module: each looks up its 200 directories.
    let deep = |i: usize| format!("src/gen/{}f{i}.rs", "d/".repeat(200));
    let all: Vec<String> = (0..10).map(deep).collect();
    let loaded = BTreeSet::new();
    let skipped: BTreeMap<String, String> = [("src/gen/mod.rs".to_string(), "cfg(any()) at src/lib.rs:1".to_string())].into();
    // What the ten searches read: each directory of each file, from the deepest up to src/gen.
    let need: u64 = all.iter().map(|f| {
        let mut dir = f.as_str();
        let mut n = 0;
        while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            n += dir.len() as u64 + 1;
            if dir == "src/gen" {
                break;
            }
        }
        n
    }).sum();
    let (list, _) = unloaded_with(&all, &loaded, &skipped, LISTING_BYTES.with_max(need));
    assert!(list.iter().all(|u| u.reason == UnloadedReason::CfgFalse), "{list:?}");
    // One byte fewer: the last file's search stops, and it is still listed, as not declared.
    let (list, count) = unloaded_with(&all, &loaded, &skipped, LISTING_BYTES.with_max(need - 1));
    assert_eq!((list.len(), count), (10, 10));
    assert_eq!(list.iter().filter(|u| u.reason == UnloadedReason::NotDeclared).count(), 1, "{list:?}");
    assert!(need < LISTING_BYTES.max);
}
