//! End to end: a workspace with two programs and a handful of fixture dependencies served by
//! the registry double; `velaris surface`, `explain`, and the ratchet (`bless`, `check`, `fmt`).

#[path = "support/archives.rs"]
mod archives;
#[path = "support/surface_doc.rs"]
mod surface_doc;
#[path = "support/registry_double.rs"]
mod registry_double;

use std::path::Path;
use std::process::{Command, Output};

use registry_double::{RegistryDouble, cargo_home_replacing_crates_io, sha256_hex};
use serde_json::Value;

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

struct Dep {
    name: &'static str,
    version: &'static str,
    files: Vec<(&'static str, String)>,
    deps: Vec<&'static str>,
}

fn manifest(name: &str, version: &str, deps: &str, build_deps: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n\n[dependencies]\n{deps}\n[build-dependencies]\n{build_deps}"
    )
}

fn registry_deps() -> Vec<Dep> {
    vec![
        Dep {
            name: "netlib",
            version: "1.0.0",
            files: vec![
                ("Cargo.toml", manifest("netlib", "1.0.0", "", "")),
                ("src/lib.rs", "pub fn get() {\n    let _ = std::net::TcpStream::connect(\"example.com:80\");\n}\n".into()),
            ],
            deps: vec![],
        },
        Dep {
            name: "fslib",
            version: "0.4.2",
            files: vec![
                ("Cargo.toml", manifest("fslib", "0.4.2", "", "")),
                ("src/lib.rs", "pub use std::fs::write as put;\n\npub fn size(p: &str) -> u64 {\n    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)\n}\n".into()),
                ("tests/t.rs", "#[test]\nfn t() { std::process::Command::new(\"true\"); }\n".into()),
            ],
            deps: vec![],
        },
        Dep {
            name: "spawner",
            version: "2.1.0",
            files: vec![
                ("Cargo.toml", manifest("spawner", "2.1.0", "", "cc = \"1\"\n")),
                ("build.rs", "fn main() {\n    let _ = std::env::var(\"OUT_DIR\");\n    cc::compile();\n}\n".into()),
                ("src/lib.rs", "pub fn run() {\n    let _ = std::process::Command::new(\"ls\").status();\n}\n".into()),
            ],
            deps: vec!["cc"],
        },
        Dep {
            name: "cc",
            version: "1.2.0",
            files: vec![
                ("Cargo.toml", manifest("cc", "1.2.0", "", "")),
                ("src/lib.rs", "pub fn compile() {\n    let _ = std::process::Command::new(\"gcc\").status();\n}\n".into()),
            ],
            deps: vec![],
        },
    ]
}

struct World {
    reg: RegistryDouble,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    cache: tempfile::TempDir,
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

impl World {
    fn new() -> World {
        let reg = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&reg.index_url());
        let w = World { reg, home, ws: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() };
        let root = w.ws.path();
        let mut lock = String::from("version = 3\n\n");
        let mut deps = registry_deps();
        deps.sort_by_key(|d| d.name);
        for d in &deps {
            let files: Vec<(&str, &str)> = d.files.iter().map(|(p, t)| (*p, t.as_str())).collect();
            let bytes = archives::crate_bytes(d.name, d.version, &files);
            w.reg.add_crate(d.name, d.version, &bytes);
            lock.push_str(&format!(
                "[[package]]\nname = \"{}\"\nversion = \"{}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n",
                d.name,
                d.version,
                sha256_hex(&bytes)
            ));
            if !d.deps.is_empty() {
                lock.push_str(&format!("dependencies = [{}]\n", d.deps.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ")));
            }
            lock.push('\n');
        }
        lock.push_str("[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"fslib\", \"netlib\"]\n\n");
        lock.push_str("[[package]]\nname = \"tool\"\nversion = \"0.1.0\"\ndependencies = [\"fslib\", \"spawner\"]\n");
        write(root, "Cargo.lock", &lock);
        write(root, "Cargo.toml", "[workspace]\nmembers = [\"app\", \"tool\"]\nresolver = \"2\"\n");
        write(root, "app/Cargo.toml", &manifest("app", "0.1.0", "netlib = \"1\"\nfslib = \"0.4\"\n", ""));
        write(root, "app/src/main.rs", "fn main() {\n    netlib::get();\n    let _ = fslib::put(\"out.txt\", \"x\");\n}\n");
        write(root, "tool/Cargo.toml", &manifest("tool", "0.1.0", "spawner = \"2\"\nfslib = \"0.4\"\n", ""));
        write(root, "tool/src/main.rs", "fn main() {\n    spawner::run();\n    println!(\"{}\", fslib::size(\"x\"));\n}\n");
        w
    }

    fn run(&self, args: &[&str]) -> Output {
        registry_double::velaris_command(self.ws.path(), self.home.path(), self.cache.path())
            .args(args)
            .output()
            .unwrap()
    }
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn program<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name}: {doc:#}"))
}

fn caps(v: &Value) -> Vec<String> {
    v["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect()
}

fn krate<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["crates"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{name} in {p:#}"))
}

#[test]
fn per_program_surfaces_with_evidence_and_build_scope() {
    let w = World::new();
    let raw: Value = serde_json::from_str(&ok(&w.run(&["surface", "--format", "json"]))).unwrap();
    assert_eq!(raw["schema"], "velaris/surface/v2");
    // Each crate's findings are listed once, whatever number of programs compile it.
    let ids: Vec<&str> = raw["crates"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "{raw:#}");
    assert!(raw["programs"][0]["crates"][0].get("findings").is_none(), "programs refer to crates by id");
    let doc = surface_doc::inline(raw);
    assert_eq!(doc["target"], "x86_64-unknown-linux-gnu");

    let app = program(&doc, "app");
    assert_eq!(app["package"], "app");
    assert_eq!(caps(app), ["fs.read", "fs.write", "net.connect"].iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{app:#}");
    // The program's own package holds the re-exported std::fs::write it calls, and what it
    // reaches through netlib's API, with the chain as evidence.
    let own = krate(app, "app");
    assert_eq!(caps(own), vec!["fs.write", "net.connect"]);
    let f = own["findings"].as_array().unwrap().iter().find(|f| f["capability"] == "fs.write").unwrap();
    assert_eq!((f["file"].as_str(), f["line"].as_u64(), f["scope"].as_str()), (Some("src/main.rs"), Some(3), Some("runtime")));
    assert_eq!(f["path"], "std::fs::write");
    let via = own["findings"].as_array().unwrap().iter().find(|f| f["capability"] == "net.connect").unwrap();
    assert_eq!((via["file"].as_str(), via["line"].as_u64(), via["path"].as_str()), (Some("src/main.rs"), Some(2), Some("netlib::get")));
    assert_eq!(
        via["chain"],
        serde_json::json!([{"path": "std::net::TcpStream::connect", "crate": "netlib", "version": "1.0.0", "file": "src/lib.rs", "line": 2}])
    );
    let net = krate(app, "netlib");
    assert_eq!(net["via"], serde_json::json!(["app", "netlib"]));
    assert_eq!(net["findings"][0]["line"], 2);
    // fslib's tests/ directory is not compiled into the program.
    assert!(!caps(krate(app, "fslib")).contains(&"process.spawn".to_string()));

    let tool = program(&doc, "tool");
    let tc = caps(tool);
    for c in ["process.spawn", "build.script", "build.native", "fs.read"] {
        assert!(tc.contains(&c.to_string()), "{c}: {tc:?}");
    }
    assert!(!tc.contains(&"net.connect".to_string()));
    // spawner's build script reads the environment while building; the program does not.
    assert!(!tc.contains(&"env.read".to_string()), "{tc:?}");
    let sp = krate(tool, "spawner");
    let scopes: Vec<(String, String)> = sp["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["capability"].as_str().unwrap().to_string(), f["scope"].as_str().unwrap().to_string()))
        .collect();
    assert!(scopes.contains(&("process.spawn".into(), "runtime".into())), "{scopes:?}");
    assert!(scopes.contains(&("env.read".into(), "build".into())), "{scopes:?}");
    assert!(scopes.contains(&("build.script".into(), "build".into())), "{scopes:?}");
    assert!(scopes.contains(&("build.native".into(), "build".into())), "a cc build-dependency: {scopes:?}");
    let cc = krate(tool, "cc");
    assert_eq!(cc["via"], serde_json::json!(["tool", "spawner", "cc"]));
    assert!(cc["findings"].as_array().unwrap().iter().all(|f| f["scope"] == "build"), "{cc:#}");

    // Human output names the same things.
    let human = ok(&w.run(&["surface"]));
    assert!(human.contains("program app (package app): fs.read, fs.write, net.connect"), "{human}");
    assert!(human.contains("netlib 1.0.0: src/lib.rs:2:"), "{human}");
    assert!(human.contains("  3 crates analysed, 3 with capabilities, 0 unanalyzed"), "{human}");
    // app calls netlib::get (through to its connect) and fslib::put (std::fs::write itself):
    // both resolve, and of netlib's net.connect and fslib's fs.read only the first is reached.
    let app_part = &human[human.find("program app").unwrap()..human.find("program tool").unwrap()];
    assert!(app_part.contains("  its own code: 2 of 2 calls resolved; reaches 1 of the 2 dependency capabilities calls carry"), "{human}");
    // tool calls spawner::run and fslib::size: both crates' capabilities are reached.
    let tool_part = &human[human.find("program tool").unwrap()..];
    assert!(tool_part.contains("  its own code: 2 of 2 calls resolved; reaches 2 of the 2 dependency capabilities calls carry"), "{human}");
    // What cc does while building is shown apart from what the program does.
    let tool_part = &human[human.find("program tool").unwrap()..];
    let building = &tool_part[tool_part.find("while building").expect("a build section")..];
    assert!(building.contains("process.spawn\n      cc 1.2.0 [build]: src/lib.rs:2:"), "{human}");
    assert!(building.contains("env.read\n      spawner 2.1.0 [build]: build.rs:2:"), "{human}");
}

#[test]
fn explain_shows_every_finding_with_an_excerpt() {
    let w = World::new();
    let out = ok(&w.run(&["explain", "tool", "process.spawn"]));
    assert!(out.contains("program tool has process.spawn"), "{out}");
    assert!(out.contains("spawner 2.1.0  (via tool -> spawner)"), "{out}");
    assert!(out.contains("std::process::Command"), "{out}");
    assert!(out.contains("let _ = std::process::Command::new(\"ls\").status();"), "{out}");
    let no = w.run(&["explain", "app", "process.spawn"]);
    assert!(ok(&no).contains("does not have process.spawn"));
    let bad = w.run(&["explain", "app", "fs.exec"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn results_are_cached_and_a_second_run_fetches_nothing() {
    let w = World::new();
    let first = ok(&w.run(&["surface", "--format", "json"]));
    let n = w.reg.requests().len();
    let second = ok(&w.run(&["surface", "--format", "json", "--offline"]));
    assert_eq!(first, second);
    assert_eq!(w.reg.requests().len(), n);
    assert!(w.cache.path().join("surface").is_dir());
}

#[test]
fn a_tampered_dependency_stops_the_analysis() {
    let w = World::new();
    w.reg.tamper("netlib", "1.0.0", &archives::crate_bytes("netlib", "1.0.0", &[("src/lib.rs", "pub fn get() {}\n")]));
    let o = w.run(&["surface"]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_repository_cannot_make_velaris_run_code() {
    let w = World::new();
    let marker = w.ws.path().join("MARKER");
    let script = w.ws.path().join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(
        w.ws.path(),
        ".cargo/config.toml",
        &format!("[build]\nrustc = \"{0}\"\nrustc-wrapper = \"{0}\"\n", script.display()),
    );
    ok(&w.run(&["surface"]));
    ok(&w.run(&["bless"]));
    assert!(!marker.exists(), "a configured rustc or wrapper ran");
}

#[test]
fn the_ratchet_holds_widens_and_narrows() {
    let w = World::new();
    let root = w.ws.path();
    // No baseline yet: an error naming bless.
    let o = w.run(&["check"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("velaris bless"));

    ok(&w.run(&["bless"]));
    let text = std::fs::read_to_string(root.join("velaris.capabilities")).unwrap();
    assert!(text.contains("[program.app]"), "{text}");
    ok(&w.run(&["check"]));
    ok(&w.run(&["fmt", "--check"]));
    // Out of canonical order: `fmt --check` fails and shows the change as a diff.
    std::fs::write(root.join("velaris.capabilities"), text.replacen("[program.app]", "\n\n[program.app]", 1)).unwrap();
    let o = w.run(&["fmt", "--check"]);
    assert_eq!(o.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&o.stdout);
    assert!(diff.starts_with("--- velaris.capabilities\n+++ velaris.capabilities (canonical)\n@@"), "{diff}");
    assert!(diff.lines().any(|l| l == "-"), "{diff}");
    std::fs::write(root.join("velaris.capabilities"), &text).unwrap();

    // A reviewer's comment survives a bless.
    let commented = text.replacen("[program.app]", "# reviewed: app only saves its output\n[program.app]", 1);
    std::fs::write(root.join("velaris.capabilities"), &commented).unwrap();
    ok(&w.run(&["bless"]));
    assert!(std::fs::read_to_string(root.join("velaris.capabilities")).unwrap().contains("# reviewed: app only saves its output"));

    // Widening: app now spawns a process.
    write(root, "app/src/main.rs", "fn main() {\n    netlib::get();\n    let _ = fslib::put(\"out.txt\", \"x\");\n    let _ = std::process::Command::new(\"sh\");\n}\n");
    let o = w.run(&["check", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["schema"], "velaris/check/v1");
    assert_eq!(doc["holds"], false);
    let widened = doc["widened"].as_array().unwrap();
    assert!(widened.iter().any(|x| x["program"] == "app"), "{doc:#}");
    assert!(widened.iter().any(|x| x["crate"] == "app"), "{doc:#}");
    let human = w.run(&["check"]);
    assert_eq!(human.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&human.stdout).contains("src/main.rs:4"), "{}", String::from_utf8_lossy(&human.stdout));

    // A capability a dependency's build script already had (spawner reads the environment
    // while building) does not cover the program doing it at run time.
    ok(&w.run(&["bless"]));
    write(root, "tool/src/main.rs", "fn main() {\n    spawner::run();\n    println!(\"{}\", fslib::size(\"x\"));\n    let _ = std::env::var(\"HOME\");\n}\n");
    let o = w.run(&["check", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stdout));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tool = doc["widened"].as_array().unwrap().iter().find(|x| x["program"] == "tool").unwrap_or_else(|| panic!("tool widened: {doc:#}"));
    assert_eq!(tool["capabilities"], serde_json::json!(["env.read"]));
    write(root, "tool/src/main.rs", "fn main() {\n    spawner::run();\n    println!(\"{}\", fslib::size(\"x\"));\n}\n");

    // Narrowing: back to the original, and netlib no longer used: passes, says bless.
    ok(&w.run(&["bless"]));
    write(root, "app/src/main.rs", "fn main() {\n    let _ = fslib::put(\"out.txt\", \"x\");\n}\n");
    let o = w.run(&["check"]);
    let out = ok(&o);
    assert!(out.contains("velaris bless") || String::from_utf8_lossy(&o.stderr).contains("velaris bless"), "{out}");
    let strict = w.run(&["check", "--strict"]);
    assert_eq!(strict.status.code(), Some(1));
}

#[test]
fn the_workspace_is_found_from_any_directory_inside_it() {
    let w = World::new();
    let from_root = ok(&w.run(&["surface", "--format", "json"]));
    let sub = w.ws.path().join("app/src");
    let o = Command::new(env!("CARGO_BIN_EXE_velaris"))
        .args(["surface", "--format", "json"])
        .current_dir(&sub)
        .env("CARGO_HOME", w.home.path())
        .env("VELARIS_CACHE_DIR", w.cache.path())
        .output()
        .unwrap();
    assert_eq!(ok(&o), from_root, "from a member's subdirectory, the same workspace");
    // Outside any workspace: the error says what to do, once.
    let outside = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_velaris")).arg("surface").current_dir(outside.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("or name one with --workspace DIR"), "{err}");
    let bad = w.run(&["surface", "--workspace", "app/src"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("--workspace names the directory"), "{err}");
}

/// Only what the target graph compiles is downloaded: a dependency behind `cfg(windows)` is
/// fetched when analysing for Windows and never for Linux.
#[test]
fn packages_the_target_never_compiles_are_not_downloaded() {
    let w = World::new();
    let root = w.ws.path();
    let win = archives::crate_bytes(
        "winlib",
        "0.3.0",
        &[("Cargo.toml", "[package]\nname = \"winlib\"\nversion = \"0.3.0\"\n"), ("src/lib.rs", "pub fn w() {}\n")],
    );
    w.reg.add_crate("winlib", "0.3.0", &win);
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap().replace(
        "dependencies = [\"fslib\", \"netlib\"]",
        "dependencies = [\"fslib\", \"netlib\", \"winlib\"]",
    );
    let lock = format!(
        "{lock}\n[[package]]\nname = \"winlib\"\nversion = \"0.3.0\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n",
        sha256_hex(&win)
    );
    write(root, "Cargo.lock", &lock);
    let app = std::fs::read_to_string(root.join("app/Cargo.toml")).unwrap();
    write(root, "app/Cargo.toml", &format!("{app}\n[target.'cfg(windows)'.dependencies]\nwinlib = \"0.3\"\n"));
    let dl = RegistryDouble::default_dl_path("winlib", "0.3.0");
    ok(&w.run(&["surface", "--format", "json"]));
    assert_eq!(w.reg.count(&dl), 0, "{:?}", w.reg.requests());
    assert!(w.reg.count(&RegistryDouble::default_dl_path("netlib", "1.0.0")) == 1);
    ok(&w.run(&["surface", "--format", "json", "--target", "x86_64-pc-windows-msvc"]));
    assert_eq!(w.reg.count(&dl), 1);
}

/// A path package with the name and version of a registry package in the same graph is its
/// own package: analysed from disk, never given the registry package's source or cached result.
#[test]
fn a_path_package_named_like_a_registry_package_is_analysed_as_itself() {
    let w = World::new();
    let root = w.ws.path();
    write(root, "vendor/netlib/Cargo.toml", &manifest("netlib", "1.0.0", "", ""));
    write(root, "vendor/netlib/src/lib.rs", "pub fn get() {\n    let _ = std::process::Command::new(\"curl\").status();\n}\n");
    write(root, "tool/Cargo.toml", &manifest("tool", "0.1.0", "spawner = \"2\"\nfslib = \"0.4\"\nnetlib = { path = \"../vendor/netlib\" }\n", ""));
    write(root, "tool/src/main.rs", "fn main() {\n    netlib::get();\n    spawner::run();\n}\n");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let lock = lock
        .replace("dependencies = [\"fslib\", \"netlib\"]", &format!("dependencies = [\"fslib\", \"netlib 1.0.0 ({CRATES_IO})\"]"))
        .replace("dependencies = [\"fslib\", \"spawner\"]", "dependencies = [\"fslib\", \"netlib 1.0.0\", \"spawner\"]");
    write(root, "Cargo.lock", &format!("{lock}\n[[package]]\nname = \"netlib\"\nversion = \"1.0.0\"\n"));
    // Twice: the second run has the registry netlib's result in the cache.
    for run in 0..2 {
        let doc: Value = surface_doc::inline(serde_json::from_str(&ok(&w.run(&["surface", "--format", "json"]))).unwrap());
        let vendored = krate(program(&doc, "tool"), "netlib");
        assert_eq!(caps(vendored), ["process.spawn"], "run {run}: {vendored:#}");
        assert_eq!(vendored["findings"][0]["file"], "src/lib.rs", "run {run}");
        let registry = krate(program(&doc, "app"), "netlib");
        assert_eq!(caps(registry), ["net.connect"], "run {run}: {registry:#}");
    }
}

/// The analysis cache entry of `crate_name`'s library (the one whose result names `needle`).
fn cache_entry(w: &World, needle: &str) -> std::path::PathBuf {
    let dir = w.cache.path().join("surface");
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(needle)))
        .collect();
    assert_eq!(found.len(), 1, "{needle} in {found:?}");
    found.pop().unwrap()
}

#[test]
fn tampered_truncated_or_swapped_cache_entries_are_never_used() {
    let w = World::new();
    let root = w.ws.path();
    ok(&w.run(&["bless"]));
    // The reviewed baseline does not grant netlib its network access: check fails.
    let text = std::fs::read_to_string(root.join("velaris.capabilities")).unwrap();
    let narrowed = text.replace("[crate.netlib]\ncapabilities = [\n    \"net.connect\",\n]", "[crate.netlib]\ncapabilities = []");
    assert_ne!(narrowed, text, "{text}");
    std::fs::write(root.join("velaris.capabilities"), &narrowed).unwrap();
    assert_eq!(w.run(&["check"]).status.code(), Some(1));

    let entry = cache_entry(&w, "TcpStream::connect");
    let good = std::fs::read(&entry).unwrap();
    let good_text = String::from_utf8(good.clone()).unwrap();
    let (head, _) = good_text.split_once('\n').unwrap();
    let other = std::fs::read_dir(w.cache.path().join("surface"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != entry)
        .unwrap();
    let empty = format!("{head}\n{{\"findings\":[],\"exports\":{{\"aliases\":{{}}}}}}");
    for (what, bytes) in [
        ("tampered", empty.into_bytes()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("swapped", std::fs::read(&other).unwrap()),
    ] {
        std::fs::write(&entry, &bytes).unwrap();
        let o = w.run(&["check", "--offline"]);
        assert_eq!(o.status.code(), Some(1), "{what}: a {what} entry must not turn the gate green");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("ignoring the analysis cache entry"), "{what}: {err}");
        assert!(err.contains(&entry.display().to_string()), "{what}: {err}");
        // The entry was recomputed and stored again, tag and all.
        assert_eq!(std::fs::read(&entry).unwrap(), good, "{what}");
    }
}
