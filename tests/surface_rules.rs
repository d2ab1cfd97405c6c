//! Every fixture crate under `fixtures/surface/` through the analyzer, with the built-in
//! rules, for x86_64-unknown-linux-gnu: its `expect.toml` is checked, and its findings are
//! snapshot-tested (one snapshot per fixture and variant), so a rule that fires in the
//! wrong place shows up as a snapshot diff.
//!
//! # `expect.toml`
//!
//! ```toml
//! # One crate at the fixture's root (all optional but must/must_not):
//! name = "demo"            # the crate name code uses; default: the directory name
//! root = "src/lib.rs"      # the target root
//! scope = "runtime"        # or "build"
//! features = ["net"]       # enabled features
//! extern = ["libloading"]  # extern crates visible, exporting nothing we know
//! must = ["fs.write@src/lib.rs:3", "ffi@src/lib.rs:7:5 extern \"C\" fn system"]
//! must_not = ["process.spawn", "fs.write@src/other.rs"]
//! exports = { "sys::system" = "extern:system" }   # must be among the exports
//! edition = "2015"         # the crate's edition (default 2021)
//! build_script = true      # the package has a build script: cfg names the compiler does
//!                          # not set are unknown (default false: they are false)
//! cfgs = ["tokio_unstable"] # `--cfg` values of the workspace's rustflags
//!
//! [[variant]]              # another run of the same crate (snapshot `<case>-<name>`)
//! name = "off"
//! features = []
//! build_script = false     # default: the crate's
//! must = []
//! must_not = ["net.connect"]
//!
//! # Or several crates, analyzed in order, in subdirectories:
//! [[crates]]
//! dir = "a"
//! name = "a"
//! [[crates]]
//! dir = "b"
//! name = "b"
//! deps = ["a", "x=b"]      # earlier crates of this fixture, by name, with their exports
//!                          # (`x=b`: crate b under the extern name x, a rename)
//! must = ["ffi@src/lib.rs:4"]
//! ```
//!
//! A pattern is `CAPABILITY[@FILE[:LINE[:COLUMN]]][ PATH]`; `must`: some finding matches it,
//! `must_not`: none does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use velaris::package::FileTree;
use velaris::surface::analyze::{CrateAnalysis, CrateInput, Edition, Exports, analyze};
use velaris::surface::cfg::{CfgEnv, Others};
use velaris::surface::rules::Rules;
use velaris::surface::{Finding, Scope};

const TARGET: &str = "x86_64-unknown-linux-gnu";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CrateSpec {
    dir: Option<String>,
    name: Option<String>,
    root: Option<String>,
    scope: Option<String>,
    #[serde(default)]
    features: Vec<String>,
    #[serde(default, rename = "extern")]
    externs: Vec<String>,
    #[serde(default)]
    deps: Vec<String>,
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
    #[serde(default)]
    exports: BTreeMap<String, String>,
    /// The crate's edition (default 2021).
    edition: Option<String>,
    /// The package has a build script: other cfg names are unknown.
    #[serde(default)]
    build_script: bool,
    /// `--cfg` values of the workspace's rustflags.
    #[serde(default)]
    cfgs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Variant {
    name: String,
    #[serde(default)]
    features: Vec<String>,
    build_script: Option<bool>,
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(flatten)]
    single: CrateSpec,
    #[serde(default)]
    variant: Vec<Variant>,
    #[serde(default)]
    crates: Vec<CrateSpec>,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/surface")
}

/// Every regular file below `dir`, keyed by its '/'-separated path relative to `dir`.
fn load_tree(dir: &Path) -> FileTree {
    fn walk(base: &Path, dir: &Path, out: &mut FileTree) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap();
                let key = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                if key != "expect.toml" {
                    out.insert(key, std::fs::read(&p).unwrap());
                }
            }
        }
    }
    let mut out = FileTree::new();
    walk(dir, dir, &mut out);
    out
}

struct Pattern {
    text: String,
    capability: String,
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    path: Option<String>,
}

fn pattern(text: &str) -> Pattern {
    let (head, path) = match text.split_once(' ') {
        Some((h, p)) => (h, Some(p.to_string())),
        None => (text, None),
    };
    let (capability, place) = match head.split_once('@') {
        Some((c, p)) => (c, Some(p)),
        None => (head, None),
    };
    capability.parse::<velaris::surface::Capability>().unwrap_or_else(|e| panic!("{text}: {e}"));
    let (mut file, mut line, mut column) = (None, None, None);
    if let Some(place) = place {
        let mut parts = place.split(':');
        file = parts.next().map(str::to_string);
        line = parts.next().map(|l| l.parse().unwrap_or_else(|_| panic!("bad line in {text}")));
        column = parts.next().map(|c| c.parse().unwrap_or_else(|_| panic!("bad column in {text}")));
    }
    Pattern { text: text.to_string(), capability: capability.to_string(), file, line, column, path }
}

impl Pattern {
    fn matches(&self, f: &Finding) -> bool {
        f.capability.as_str() == self.capability
            && self.file.as_ref().is_none_or(|x| *x == f.file)
            && self.line.is_none_or(|x| x == f.line)
            && self.column.is_none_or(|x| x == f.column)
            && self.path.as_ref().is_none_or(|x| *x == f.path)
    }
}

fn human(f: &Finding) -> String {
    let scope = match f.scope {
        Scope::Runtime => "runtime",
        Scope::Build => "build",
    };
    format!("{} {} {}:{}:{} {}", f.capability, scope, f.file, f.line, f.column, f.path)
}

/// Check `must`/`must_not`/`exports`; the problems, one per line.
fn check(label: &str, a: &CrateAnalysis, must: &[String], must_not: &[String], exports: &BTreeMap<String, String>) -> Vec<String> {
    let mut problems = Vec::new();
    for m in must {
        let p = pattern(m);
        if !a.findings.iter().any(|f| p.matches(f)) {
            problems.push(format!("{label}: no finding matches must {:?}", p.text));
        }
    }
    for m in must_not {
        let p = pattern(m);
        for f in a.findings.iter().filter(|f| p.matches(f)) {
            problems.push(format!("{label}: must_not {:?} matches {}", p.text, human(f)));
        }
    }
    for (k, v) in exports {
        if a.exports.aliases.get(k) != Some(v) {
            problems.push(format!("{label}: export {k} -> {v} missing (have {:?})", a.exports.aliases.get(k)));
        }
    }
    problems
}

fn render(sections: &[(String, &CrateAnalysis)]) -> String {
    let mut out = String::new();
    for (title, a) in sections {
        if sections.len() > 1 {
            out.push_str(&format!("## crate {title}\n"));
        }
        out.push_str("# findings: capability scope file:line:column path\n");
        for f in &a.findings {
            out.push_str(&human(f));
            out.push('\n');
        }
        if !a.exports.aliases.is_empty() {
            out.push_str("# exports\n");
            for (k, v) in &a.exports.aliases {
                out.push_str(&format!("{k} -> {v}\n"));
            }
        }
        out.push_str("# json\n");
        out.push_str(&serde_json::to_string_pretty(&a.findings).unwrap());
        out.push('\n');
    }
    out
}

fn scope_of(s: &Option<String>) -> Scope {
    match s.as_deref() {
        None | Some("runtime") => Scope::Runtime,
        Some("build") => Scope::Build,
        Some(other) => panic!("unknown scope {other:?}"),
    }
}

fn run_crate(
    tree: &FileTree,
    spec: &CrateSpec,
    default_name: &str,
    features: &[String],
    build_script: bool,
    deps: BTreeMap<String, std::sync::Arc<Exports>>,
) -> CrateAnalysis {
    let features: BTreeSet<String> = features.iter().cloned().collect();
    let flags: Vec<cargo_platform::Cfg> = spec.cfgs.iter().map(|c| c.parse().unwrap()).collect();
    let others = if build_script { Others::Unknown } else { Others::False };
    let cfg = CfgEnv::for_target(TARGET, &features).unwrap().with_flags(&flags).with_others(others);
    let mut deps = deps;
    for e in &spec.externs {
        deps.entry(e.clone()).or_default();
    }
    let name = spec.name.clone().unwrap_or_else(|| default_name.replace('-', "_"));
    let marker = marker(&name);
    let input = CrateInput {
        crate_name: &name,
        files: tree,
        root: spec.root.as_deref().unwrap_or("src/lib.rs"),
        cfg: &cfg,
        scope: scope_of(&spec.scope),
        deps: &deps,
        rules: Rules::builtin(),
        edition: Edition::from_manifest(Some(spec.edition.as_deref().unwrap_or("2021"))),
        marker: &marker,
        version: "1.0.0",
        open_sites: true,
    };
    let a = analyze(&input);
    // Sorted and deduplicated, as promised.
    let mut sorted = a.findings.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, a.findings, "findings are sorted and unique");
    a
}

/// What `$crate` in a fixture crate's exported macros becomes (the engine derives it from
/// the package identity).
fn marker(name: &str) -> String {
    format!("__velaris_crate_{name}")
}

fn run_fixture(case: &str) {
    let dir = fixtures_dir().join(case);
    let text = std::fs::read_to_string(dir.join("expect.toml")).unwrap_or_else(|e| panic!("{case}/expect.toml: {e}"));
    let expect: Expect = toml::from_str(&text).unwrap_or_else(|e| panic!("{case}/expect.toml: {e}"));
    let mut problems = Vec::new();
    let mut snapshots: Vec<(String, String)> = Vec::new();
    if expect.crates.is_empty() {
        let tree = load_tree(&dir);
        let spec = &expect.single;
        let a = run_crate(&tree, spec, case, &spec.features, spec.build_script, BTreeMap::new());
        problems.extend(check(case, &a, &spec.must, &spec.must_not, &spec.exports));
        snapshots.push((case.to_string(), render(&[(case.to_string(), &a)])));
        for v in &expect.variant {
            let label = format!("{case}-{}", v.name);
            let a = run_crate(&tree, spec, case, &v.features, v.build_script.unwrap_or(spec.build_script), BTreeMap::new());
            problems.extend(check(&label, &a, &v.must, &v.must_not, &BTreeMap::new()));
            snapshots.push((label.clone(), render(&[(label, &a)])));
        }
    } else {
        assert!(expect.variant.is_empty(), "{case}: variants are for single-crate fixtures");
        let mut done: BTreeMap<String, CrateAnalysis> = BTreeMap::new();
        let mut order = Vec::new();
        for spec in &expect.crates {
            let sub = spec.dir.clone().unwrap_or_else(|| panic!("{case}: [[crates]] needs dir"));
            let tree = load_tree(&dir.join(&sub));
            // `name` or `extern_name=name` (a dependency renamed in Cargo.toml).
            let mut deps: BTreeMap<String, std::sync::Arc<Exports>> = spec
                .deps
                .iter()
                .map(|d| {
                    let (ext, d) = d.split_once('=').unwrap_or((d, d));
                    (ext.to_string(), done.get(d).unwrap_or_else(|| panic!("{case}: dep {d} not analyzed before")).exports.clone())
                })
                .collect();
            // Every crate analyzed before, under its marker (as the engine passes those whose
            // macros can reach this one).
            for (n, a) in &done {
                deps.insert(marker(n), a.exports.clone());
            }
            let a = run_crate(&tree, spec, &sub, &spec.features, spec.build_script, deps);
            problems.extend(check(&format!("{case}/{sub}"), &a, &spec.must, &spec.must_not, &spec.exports));
            let name = spec.name.clone().unwrap_or(sub);
            order.push(name.clone());
            done.insert(name, a);
        }
        let sections: Vec<(String, &CrateAnalysis)> = order.iter().map(|n| (n.clone(), &done[n])).collect();
        snapshots.push((case.to_string(), render(&sections)));
    }
    for (name, text) in &snapshots {
        insta::assert_snapshot!(name.as_str(), text);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

macro_rules! fixtures {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                run_fixture(stringify!($case));
            }
        )*
        const LISTED: &[&str] = &[$(stringify!($case)),*];
    };
}

fixtures! {
    asm_in_string,
    asm_macro,
    block_scope_use,
    build_script,
    build_script_cfg_path,
    cfg_unknown_path,
    cfg_unknown_names,
    rustflags_cfg,
    builder_return_type,
    cfg_attr_path,
    cfg_if_branches,
    cfg_macro_branch,
    cfg_select_branches,
    cfg_unix,
    cfg_windows_only,
    cross_crate_reexport,
    dlsym_lookup,
    doc_comment_path,
    dynamic_load,
    edition2015_syntax,
    env_args,
    env_set_var,
    env_var_read,
    extern_crate_rename,
    extern_private_system,
    extern_pub_export,
    feature_gated,
    fn_pointer,
    fn_pointer_safe,
    fully_qualified,
    fully_qualified_local,
    glob_import,
    glob_import_other,
    include_literal,
    include_out_dir,
    link_name_other,
    link_name_rename,
    local_mod_fs,
    local_var_shadow,
    macro_declares_modules,
    macro_dollar_crate_across_crates,
    macro_fail_closed,
    macro_fragment_path,
    macro_items_impls_uses,
    macro_rules_command,
    macro_rules_print,
    macro_scoping,
    missing_mod_file,
    no_mangle_export,
    non_mod_rs_nesting,
    non_utf8,
    open_options_read,
    open_options_write,
    open_options_escape,
    option_combinators,
    assoc_types,
    assoc_types_across,
    block_modules,
    pre_main,
    field_by_struct,
    precision_twins,
    parse_error,
    paste_identifiers,
    path_attr_module,
    path_exists,
    path_join_only,
    raw_identifiers,
    reexport_chain,
    reexport_chain_local,
    rename_import,
    rename_local_fn,
    renamed_dependency,
    signature_types,
    std_fs_write,
    struct_field_file,
    struct_field_vec,
    tcp_connect,
    tcp_listen,
    test_functions,
    tests_examples_dirs,
    trait_in_scope,
    type_alias,
    undeclared_file,
    unknown_macro_tokens,
    unsafe_block,
    unsafe_extern_safe_items,
    unsafe_in_string,
}

#[test]
fn every_fixture_is_listed() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = LISTED.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "fixtures/surface/ and the fixtures! list differ");
}
