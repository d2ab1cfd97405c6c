//! Every fixture package under `fixtures/buildscript/`: its build script is evaluated (never
//! run), and its library analysed with what the evaluation found, as the engine does. Each
//! case states what the evaluation must find in `expect.toml`, and most have a negative twin
//! that leaves the modelled subset and must stay `unanalyzed` or unknown.
//!
//! # `expect.toml`
//!
//! ```toml
//! features = ["std"]         # the package's enabled features
//! deps = ["autocfg"]         # the build script's dependencies (extern names)
//! toolchain = "1.50.0"       # the workspace's toolchain file channel (default: none)
//! steps = 100000             # the evaluation's step budget (default: the engine's)
//! complete = true            # every path ran to its end
//! stopped = "build.rs:6: …"  # a stop reason contains this
//! files = ["$OUT_DIR/x.rs"]  # exactly the files known
//! unknown_files = ["$OUT_DIR/y.rs"]
//! cfg_exact = true
//! cfgs = ["foo"]             # exactly the cfgs known set
//! links = ["rustc-link-lib=z"]   # exactly the link directives
//! env = { X = "v" }          # `rustc-env` values known
//! content = { "$OUT_DIR/x.rs" = "prefix of the text" }
//! origin = { "$OUT_DIR/x.rs:2" = "build.rs:9" }   # the line's origin includes this
//! must = ["process.spawn@$OUT_DIR/x.rs:2"]        # findings of the library
//! must_not = ["unanalyzed"]
//!
//! [[variant]]                # the same package with other settings
//! name = "old"
//! toolchain = "1.50.0"
//! ```
//!
//! A finding pattern is `CAPABILITY[@FILE[:LINE]][ PATH-PREFIX]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use velaris::package::FileTree;
use velaris::surface::analyze::{CrateInput, Edition, analyze_built};
use velaris::surface::buildscript::{Budget, Evaluation, Package, Toolchain, cfg_others, evaluate};
use velaris::surface::cfg::CfgEnv;
use velaris::surface::rules::Rules;
use velaris::surface::{Finding, Scope};

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    name: String,
    #[serde(default)]
    features: Vec<String>,
    #[serde(default)]
    deps: Vec<String>,
    toolchain: Option<String>,
    steps: Option<u64>,
    complete: Option<bool>,
    stopped: Option<String>,
    files: Option<Vec<String>>,
    unknown_files: Option<Vec<String>>,
    cfg_exact: Option<bool>,
    cfgs: Option<Vec<String>>,
    links: Option<Vec<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    content: BTreeMap<String, String>,
    #[serde(default)]
    origin: BTreeMap<String, String>,
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
    #[serde(default)]
    variant: Vec<Expect>,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/buildscript")
}

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

/// Evaluate the fixture's build script and analyse its library with the result.
fn run(tree: &FileTree, e: &Expect) -> (Evaluation, Vec<Finding>) {
    let features: BTreeSet<String> = e.features.iter().cloned().collect();
    let target = CfgEnv::default().with_features(&features);
    let host = target.for_host_unit();
    let toolchain = match &e.toolchain {
        Some(t) => Toolchain::parse(&format!("[toolchain]\nchannel = {t:?}\n"), "rust-toolchain.toml"),
        None => Toolchain::default_stable(),
    };
    let mut budget = Budget::default();
    if let Some(s) = e.steps {
        budget.steps = s;
    }
    let eval = evaluate(&Package {
        name: "fixture",
        version: "1.2.3",
        files: tree,
        root: "build.rs",
        features: &features,
        links: None,
        target_cfg: &target,
        host_cfg: &host,
        rustflags: Some(&[]),
        toolchain: &toolchain,
        deps: e.deps.iter().map(|d| (d.clone(), d.clone())).collect(),
        edition: Edition::E2021,
        budget,
    });
    let cfg = target.clone().with_others(cfg_others(Some(&eval)));
    let mut lib_tree = tree.clone();
    eval.add_to(&mut lib_tree);
    let deps = BTreeMap::new();
    let input = CrateInput {
        crate_name: "fixture",
        files: &lib_tree,
        root: "src/lib.rs",
        cfg: &cfg,
        scope: Scope::Runtime,
        deps: &deps,
        rules: Rules::builtin(),
        edition: Edition::E2021,
        marker: "__velaris_crate_fixture",
        version: "1.2.3",
        open_sites: false,
    };
    let a = analyze_built(&input, Some(&eval));
    (eval, a.findings)
}

fn matches(pattern: &str, f: &Finding) -> bool {
    let (head, path) = match pattern.split_once(' ') {
        Some((h, p)) => (h, Some(p)),
        None => (pattern, None),
    };
    let (cap, place) = match head.split_once('@') {
        Some((c, p)) => (c, Some(p)),
        None => (head, None),
    };
    if f.capability.as_str() != cap {
        return false;
    }
    if let Some(place) = place {
        let (file, line) = match place.rsplit_once(':') {
            Some((f, l)) if l.parse::<u32>().is_ok() => (f, Some(l.parse::<u32>().unwrap())),
            _ => (place, None),
        };
        if f.file != file || line.is_some_and(|l| l != f.line) {
            return false;
        }
    }
    path.is_none_or(|p| f.path.starts_with(p))
}

fn check(label: &str, tree: &FileTree, e: &Expect) -> Vec<String> {
    let (eval, findings) = run(tree, e);
    let mut problems = Vec::new();
    let mut p = |s: String| problems.push(format!("{label}: {s}\n  evaluation: {}", serde_json::to_string(&eval.record()).unwrap()));
    if let Some(c) = e.complete {
        if eval.complete != c {
            p(format!("complete is {}, not {c}", eval.complete));
        }
    }
    if let Some(s) = &e.stopped {
        if !eval.stopped.iter().any(|x| x.contains(s.as_str())) {
            p(format!("no stop reason contains {s:?}"));
        }
    }
    if let Some(files) = &e.files {
        let got: Vec<&str> = eval.files.iter().map(|f| f.path.as_str()).collect();
        if got != files.iter().map(String::as_str).collect::<Vec<_>>() {
            p(format!("files {got:?}, not {files:?}"));
        }
    }
    if let Some(files) = &e.unknown_files {
        let got: Vec<&str> = eval.unknown_files.iter().map(|f| f.name.as_str()).collect();
        if got != files.iter().map(String::as_str).collect::<Vec<_>>() {
            p(format!("unknown files {got:?}, not {files:?}"));
        }
    }
    if let Some(x) = e.cfg_exact {
        if eval.cfg.exact != x {
            p(format!("cfg exact is {}, not {x}", eval.cfg.exact));
        }
    }
    if let Some(cfgs) = &e.cfgs {
        let got: Vec<&str> = eval.cfg.set.iter().map(|c| c.value.as_str()).collect();
        if got != cfgs.iter().map(String::as_str).collect::<Vec<_>>() {
            p(format!("cfgs {got:?}, not {cfgs:?}"));
        }
    }
    if let Some(links) = &e.links {
        let mut got: Vec<String> = eval.link.iter().map(|l| format!("{}={}", l.kind, l.value.as_deref().unwrap_or("?"))).collect();
        got.sort();
        let mut want = links.clone();
        want.sort();
        if got != want {
            p(format!("links {got:?}, not {want:?}"));
        }
    }
    for (k, v) in &e.env {
        if !eval.env.iter().any(|x| x.name == *k && x.value.as_deref() == Some(v)) {
            p(format!("rustc-env {k}={v} not known"));
        }
    }
    for (f, prefix) in &e.content {
        match eval.file(f) {
            Some(g) if g.content.starts_with(prefix.as_str()) => {}
            other => p(format!("{f} does not start with {prefix:?}: {:?}", other.map(|g| &g.content))),
        }
    }
    for (at, want) in &e.origin {
        let (file, line) = at.rsplit_once(':').unwrap();
        let line: u32 = line.parse().unwrap();
        let ok = eval.file(file).is_some_and(|g| g.lines.iter().any(|l| l.from <= line && line <= l.to && l.origin.iter().any(|o| o == want)));
        if !ok {
            p(format!("{at} has no origin {want}"));
        }
    }
    for m in &e.must {
        if !findings.iter().any(|f| matches(m, f)) {
            p(format!("no finding matches {m:?}; findings: {:?}", findings.iter().map(|f| format!("{} {}:{} {}", f.capability, f.file, f.line, f.path)).collect::<Vec<_>>()));
        }
    }
    for m in &e.must_not {
        for f in findings.iter().filter(|f| matches(m, f)) {
            p(format!("must_not {m:?} matches {} {}:{} {}", f.capability, f.file, f.line, f.path));
        }
    }
    // Deterministic: a second evaluation is the same, digest included.
    let (again, _) = run(tree, e);
    if again != eval {
        p("a second evaluation differs".to_string());
    }
    problems
}

fn run_fixture(case: &str) {
    let dir = fixtures_dir().join(case);
    let text = std::fs::read_to_string(dir.join("expect.toml")).unwrap();
    let expect: Expect = toml::from_str(&text).unwrap_or_else(|e| panic!("{case}/expect.toml: {e}"));
    let tree = load_tree(&dir);
    let mut problems = check(case, &tree, &expect);
    for v in &expect.variant {
        let mut merged = expect.clone();
        merged.variant.clear();
        if !v.features.is_empty() {
            merged.features = v.features.clone();
        }
        merged.toolchain = v.toolchain.clone().or(merged.toolchain);
        merged.complete = v.complete.or(merged.complete);
        merged.cfg_exact = v.cfg_exact.or(merged.cfg_exact);
        merged.cfgs = v.cfgs.clone().or(merged.cfgs);
        merged.files = v.files.clone().or(merged.files);
        merged.must = v.must.clone();
        merged.must_not = v.must_not.clone();
        problems.extend(check(&format!("{case}/{}", v.name), &tree, &merged));
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
    autocfg_probe,
    autocfg_version,
    budget_loop,
    compile_probe,
    gen_cfg_env,
    gen_cfg_false,
    gen_constant,
    gen_from_curl,
    link_lib,
    link_none,
    loop_env,
    loop_writeln,
    package_file,
    pkg_version,
    read_outside,
    rustc_env_include,
    rustc_env_unknown,
    rustc_probe,
    user_env,
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
    assert_eq!(on_disk, listed, "fixtures/buildscript/ and the fixtures! list differ");
}
