//! Deeply nested valid Rust: everything rustc accepts is analyzed, on the analysis threads'
//! stack, and what is deeper than the analysis can take becomes `unanalyzed` for that file
//! while the run goes on. Nothing here may abort the process.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/nesting.rs"]
mod nesting;
#[path = "support/surface_doc.rs"]
mod surface_doc;
#[path = "support/registry_double.rs"]
mod registry_double;

use std::collections::{BTreeMap, BTreeSet};

use velaris::package::FileTree;
use velaris::surface::analyze::{Edition, CrateInput, analyze};
use velaris::surface::cfg::CfgEnv;
use velaris::surface::guard;
use velaris::surface::rules::Rules;
use velaris::surface::{Capability, Finding, Scope};

/// The findings of a crate made of `files`, analyzed the way `velaris surface` does: on an
/// analysis thread.
fn analyze_files(files: &[(&str, String)]) -> Vec<Finding> {
    let tree: FileTree = files.iter().map(|(p, s)| (p.to_string(), s.clone().into_bytes())).collect();
    let cfg = CfgEnv::for_target("x86_64-unknown-linux-gnu", &BTreeSet::new()).unwrap();
    let deps = BTreeMap::new();
    let input = CrateInput {
        crate_name: "deep",
        files: &tree,
        root: "src/lib.rs",
        cfg: &cfg,
        scope: Scope::Runtime,
        deps: &deps,
        rules: Rules::builtin(),
        edition: Edition::E2021,
        marker: "__velaris_crate_deep",
        version: "1.0.0",
        open_sites: false,
    };
    guard::parallel_map(&[()], 1, |_| analyze(&input).findings).pop().unwrap()
}

fn unanalyzed(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.capability == Capability::Unanalyzed).collect()
}

#[test]
fn every_shape_at_the_depth_rustc_accepts_is_analyzed() {
    for &(shape, depth) in nesting::SHAPES {
        let src = nesting::source(shape, depth);
        let (estimate, _) = guard::estimate(src.as_bytes());
        assert!(
            estimate <= guard::STACK_LIMIT,
            "{shape} at {depth}: estimated {estimate} bytes of stack, over {}",
            guard::STACK_LIMIT
        );
        let findings = analyze_files(&[("src/lib.rs", src)]);
        assert!(unanalyzed(&findings).is_empty(), "{shape} at {depth}: {findings:?}");
    }
}

/// The deepest nesting of `shape` whose estimate is within `limit`.
fn deepest_admitted(shape: &str, limit: u64) -> usize {
    let fits = |d: usize| guard::estimate(nesting::source(shape, d).as_bytes()).0 <= limit;
    let (mut lo, mut hi) = (1, 2);
    while fits(hi) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    lo
}

/// The estimate is an upper bound: whatever it admits, an analysis thread's stack holds, with
/// every frame of a debug build. Checked with a margin of 1.5 instead of the 4 of production
/// (an estimate of up to 8 MiB admitted on threads of 12 MiB), so that a weight well below what
/// a shape uses aborts this test with a stack overflow, and on small stacks, so that it takes
/// seconds: the estimate grows linearly with depth, and a small stack leaves less room for the
/// frames below the analysis than the real one.
#[test]
fn the_deepest_nesting_the_guard_admits_fits_the_stack() {
    let (stack, limit) = (12 * 1024 * 1024, 8 * 1024 * 1024);
    for shape in nesting::SHAPES.iter().map(|s| s.0).chain(nesting::MORE.iter().copied()) {
        let depth = deepest_admitted(shape, limit);
        let run = |d: usize| {
            let tree: FileTree = [("src/lib.rs".to_string(), nesting::source(shape, d).into_bytes())].into();
            let cfg = CfgEnv::for_target("x86_64-unknown-linux-gnu", &BTreeSet::new()).unwrap();
            let deps = BTreeMap::new();
            let input = CrateInput {
                crate_name: "deep",
                files: &tree,
                root: "src/lib.rs",
                cfg: &cfg,
                scope: Scope::Runtime,
                deps: &deps,
                rules: Rules::builtin(),
                edition: Edition::E2021,
                marker: "__velaris_crate_deep",
                version: "1.0.0",
                open_sites: false,
            };
            guard::parallel_map_with_limit(&[()], 1, stack, Some(limit), |_| analyze(&input).findings).pop().unwrap()
        };
        let findings = run(depth);
        assert!(unanalyzed(&findings).is_empty(), "{shape} at {depth}: {findings:?}");
        assert_eq!(unanalyzed(&run(depth + 1)).len(), 1, "{shape} at {}", depth + 1);
    }
}

/// On the real analysis threads, the guard admits at least what rustc accepts.
#[test]
fn the_guard_admits_every_depth_rustc_accepts() {
    for &(shape, rustc_depth) in nesting::SHAPES {
        let depth = deepest_admitted(shape, guard::STACK_LIMIT);
        assert!(depth >= rustc_depth, "{shape}: admits {depth}, rustc accepts {rustc_depth}");
    }
}

#[test]
fn the_shapes_are_rust_that_rustc_compiles() {
    let Some(rustc) = nesting::rustc() else {
        eprintln!("no rustc on this machine: the shapes are not compiled");
        return;
    };
    let failed: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = nesting::SHAPES
            .chunks(nesting::SHAPES.len().div_ceil(2))
            .map(|chunk| {
                let rustc = &rustc;
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&(shape, depth)| (shape, nesting::compile_depth(shape, depth)))
                        .filter(|&(shape, depth)| !nesting::rustc_accepts(rustc, &nesting::source(shape, depth)))
                        .map(|(shape, depth)| format!("{shape} at {depth}"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failed.is_empty(), "rustc rejects: {failed:?}");
}

#[test]
fn deeper_than_the_analysis_can_take_is_unanalyzed_there_and_the_rest_is_analyzed() {
    let lib = "mod deep;\npub fn run() { let _ = std::process::Command::new(\"sh\"); }\n".to_string();
    for (shape, depth) in [("parens", 40_000), ("binary", 200_000), ("generics", 20_000), ("macro", 60_000)] {
        let deep = nesting::source(shape, depth);
        let findings = analyze_files(&[("src/lib.rs", lib.clone()), ("src/deep.rs", deep)]);
        let un = unanalyzed(&findings);
        assert_eq!(un.len(), 1, "{shape}: {findings:?}");
        assert_eq!(un[0].file, "src/deep.rs", "{shape}");
        assert!(un[0].path.starts_with("nested too deeply to analyze safely"), "{shape}: {}", un[0].path);
        assert!(
            findings.iter().any(|f| f.capability == Capability::ProcessSpawn && f.file == "src/lib.rs"),
            "{shape}: the rest of the crate is analyzed: {findings:?}"
        );
    }
}

#[test]
fn a_source_file_over_the_size_limit_is_unanalyzed() {
    let huge = format!("pub fn f() {{}}{}\n", " ".repeat(guard::MAX_SOURCE_BYTES));
    let findings = analyze_files(&[("src/lib.rs", "mod huge;\n".into()), ("src/huge.rs", huge)]);
    let un = unanalyzed(&findings);
    assert_eq!(un.len(), 1, "{findings:?}");
    assert_eq!(un[0].file, "src/huge.rs");
    assert!(un[0].path.contains("larger than the 4194304-byte limit"), "{}", un[0].path);
}

/// End to end, through the registry double: one dependency nests deeper than rustc accepts,
/// another exactly as deep as it does; `velaris surface` exits 0, names the crate and file it
/// could not analyze, and analyzes the rest.
#[test]
fn surface_names_the_crate_and_file_and_goes_on() {
    let reg = registry_double::RegistryDouble::start();
    let home = registry_double::cargo_home_replacing_crates_io(&reg.index_url());
    let ws = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let manifest = |name: &str| format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\nedition = \"2021\"\n");
    let deep_src = nesting::source("parens", 40_000);
    let ok_src = nesting::source("macro", 10_555);
    let deps: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "deep",
            vec![
                ("Cargo.toml", manifest("deep")),
                ("src/lib.rs", "mod nested;\npub fn run() { let _ = std::net::TcpStream::connect(\"h:1\"); }\n".into()),
                ("src/nested.rs", deep_src),
            ],
        ),
        (
            "fine",
            vec![
                ("Cargo.toml", manifest("fine")),
                ("src/lib.rs", "mod nested;\npub fn run() { let _ = std::fs::read(\"x\"); }\n".into()),
                ("src/nested.rs", ok_src),
            ],
        ),
    ];
    let mut lock = String::from("version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"deep\", \"fine\"]\n");
    for (name, files) in &deps {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let bytes = archives::crate_bytes(name, "1.0.0", &files);
        reg.add_crate(name, "1.0.0", &bytes);
        lock.push_str(&format!(
            "\n[[package]]\nname = \"{name}\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"\n",
            registry_double::sha256_hex(&bytes)
        ));
    }
    std::fs::write(ws.path().join("Cargo.lock"), lock).unwrap();
    std::fs::write(
        ws.path().join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ndeep = \"1\"\nfine = \"1\"\n",
    )
    .unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/main.rs"), "fn main() { deep::run(); fine::run(); }\n").unwrap();

    let out = registry_double::velaris_command(ws.path(), home.path(), cache.path())
        .args(["surface", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = surface_doc::inline(serde_json::from_slice(&out.stdout).unwrap());
    let krate = |name: &str| {
        doc["programs"][0]["crates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {doc:#}"))
            .clone()
    };
    let deep = krate("deep");
    let caps: Vec<&str> = deep["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(caps, ["net.connect", "unanalyzed"], "{deep:#}");
    let un = deep["findings"].as_array().unwrap().iter().find(|f| f["capability"] == "unanalyzed").unwrap();
    assert_eq!(un["file"], "src/nested.rs");
    assert!(un["path"].as_str().unwrap().starts_with("nested too deeply"), "{un}");
    let fine = krate("fine");
    let caps: Vec<&str> = fine["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(caps, ["fs.read"], "{fine:#}");
}
