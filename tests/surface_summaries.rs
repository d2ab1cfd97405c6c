//! Per-function summaries carried across crates, end to end: small workspaces of path crates
//! written into a temporary directory, `velaris surface --format json` run on them offline,
//! and the findings of the program's own crate checked (capability, file, line, path, and the
//! chain's hops). Every case has a negative twin: the near-identical program that must not get
//! the capability. Expected lines are found in the fixture sources, never written by hand.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "support/surface_doc.rs"]
mod surface_doc;

/// One crate of a fixture workspace: a library (`src/lib.rs`) and/or a program
/// (`src/main.rs`), with path dependencies on other crates of the fixture.
#[derive(Clone)]
struct Krate {
    name: String,
    deps: Vec<String>,
    lib: Option<String>,
    main: Option<String>,
}

fn lib(name: &str, deps: &[&str], src: &str) -> Krate {
    Krate { name: name.into(), deps: deps.iter().map(|d| d.to_string()).collect(), lib: Some(src.into()), main: None }
}

fn app(deps: &[&str], src: &str) -> Krate {
    Krate { name: "app".into(), deps: deps.iter().map(|d| d.to_string()).collect(), lib: None, main: Some(src.into()) }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A workspace whose members are the crates, each in a directory named after it, depending
/// on one another by `path`; no registry is involved.
struct Fixture {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    cache: tempfile::TempDir,
    /// (crate, file) → text.
    sources: BTreeMap<(String, String), String>,
}

impl Fixture {
    fn new(crates: Vec<Krate>) -> Fixture {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        let mut sources = BTreeMap::new();
        let mut crates = crates;
        crates.sort_by(|a, b| a.name.cmp(&b.name));
        let mut lock = String::from("version = 3\n\n");
        for k in &crates {
            let deps: String = k.deps.iter().map(|d| format!("{d} = {{ path = \"../{d}\" }}\n")).collect();
            write(
                root,
                &format!("{}/Cargo.toml", k.name),
                &format!("[package]\nname = \"{}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}", k.name),
            );
            for (file, text) in [("src/lib.rs", &k.lib), ("src/main.rs", &k.main)] {
                if let Some(text) = text {
                    write(root, &format!("{}/{file}", k.name), text);
                    sources.insert((k.name.clone(), file.to_string()), text.clone());
                }
            }
            let mut deps = k.deps.clone();
            deps.sort();
            lock.push_str(&format!("[[package]]\nname = \"{}\"\nversion = \"0.1.0\"\n", k.name));
            if !deps.is_empty() {
                let list: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
                lock.push_str(&format!("dependencies = [{}]\n", list.join(", ")));
            }
            lock.push('\n');
        }
        write(root, "Cargo.lock", &lock);
        let members: Vec<String> = crates.iter().map(|k| format!("\"{}\"", k.name)).collect();
        write(root, "Cargo.toml", &format!("[workspace]\nmembers = [{}]\nresolver = \"2\"\n", members.join(", ")));
        Fixture { ws, home: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap(), sources }
    }

    /// `velaris surface --format json`, offline, with this fixture's cache (or `cache`).
    fn json_with_cache(&self, cache: &Path) -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_velaris"))
            .args(["surface", "--format", "json", "--offline"])
            .current_dir(self.ws.path())
            .env("CARGO_HOME", self.home.path())
            .env("VELARIS_CACHE_DIR", cache)
            .env("NO_COLOR", "1")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Cycles must terminate: a run that does not end in two minutes fails.
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if start.elapsed() > Duration::from_secs(120) {
                child.kill().unwrap();
                panic!("velaris surface did not finish in 120 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }

    fn json(&self) -> String {
        self.json_with_cache(self.cache.path())
    }

    fn surface(&self) -> Value {
        surface_doc::inline(serde_json::from_str(&self.json()).unwrap())
    }

    /// The 1-based line of `krate`'s `file` holding `needle` (which must be on exactly one).
    fn line(&self, krate: &str, file: &str, needle: &str) -> u64 {
        let text = &self.sources[&(krate.to_string(), file.to_string())];
        let lines: Vec<usize> = text.lines().enumerate().filter(|(_, l)| l.contains(needle)).map(|(i, _)| i + 1).collect();
        assert_eq!(lines.len(), 1, "{needle:?} must be on exactly one line of {krate}/{file}:\n{text}");
        lines[0] as u64
    }
}

fn program(doc: &Value) -> &Value {
    doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == "app").unwrap_or_else(|| panic!("no program app: {doc:#}"))
}

fn krate<'a>(doc: &'a Value, name: &str) -> &'a Value {
    program(doc)["crates"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no crate {name}: {doc:#}"))
}

/// The findings of the program's own crate.
fn own(doc: &Value) -> &Vec<Value> {
    krate(doc, "app")["findings"].as_array().unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect()
}

/// One hop expected in a chain: in `krate`'s src/lib.rs, on the line holding `needle`, a use
/// of a path starting with `path`.
struct H<'a> {
    krate: &'a str,
    needle: &'a str,
    path: &'a str,
}

fn h<'a>(krate: &'a str, needle: &'a str, path: &'a str) -> H<'a> {
    H { krate, needle, path }
}

/// The program's own crate has `cap` at the line of src/main.rs holding `call`, by a use of
/// `path`, with exactly the chain `hops`.
fn assert_reaches(fx: &Fixture, doc: &Value, cap: &str, call: &str, path: &str, hops: &[H]) {
    let line = fx.line("app", "src/main.rs", call);
    let all = own(doc);
    let f = all
        .iter()
        .find(|f| f["capability"] == cap && f["line"].as_u64() == Some(line) && f["path"] == path)
        .unwrap_or_else(|| panic!("app must have {cap} at src/main.rs:{line} by {path}; its findings: {all:#?}"));
    assert_eq!(f["file"], "src/main.rs", "{f:#}");
    assert_eq!(f["scope"], "runtime", "{f:#}");
    let chain = f["chain"].as_array().unwrap_or_else(|| panic!("a finding through a dependency has a chain: {f:#}"));
    let got: Vec<(String, String, u64)> = chain
        .iter()
        .map(|h| (h["crate"].as_str().unwrap().to_string(), h["file"].as_str().unwrap().to_string(), h["line"].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, String, u64)> =
        hops.iter().map(|h| (h.krate.to_string(), "src/lib.rs".to_string(), fx.line(h.krate, "src/lib.rs", h.needle))).collect();
    assert_eq!(got, want, "the chain of {cap} at src/main.rs:{line}: {f:#}");
    for (hop, want) in chain.iter().zip(hops) {
        let p = hop["path"].as_str().unwrap();
        assert!(p.starts_with(want.path), "hop path {p:?} should start with {:?}: {f:#}", want.path);
        assert_eq!(hop["version"], "0.1.0", "{f:#}");
    }
}

/// The program's own crate has no `cap` finding at all.
fn assert_not_reached(doc: &Value, cap: &str) {
    let all = own(doc);
    assert!(!all.iter().any(|f| f["capability"] == cap), "app must not have {cap}; its findings: {all:#?}");
}

/// The `reached_from_program` entry of `name`, if any.
fn reached<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    program(doc)["reached_from_program"].as_array().unwrap().iter().find(|r| r["crate"] == name)
}

// ---------------------------------------------------------------------------------------
// 1. Chains across 2, 3, 4 and 5 crates.

const CHAIN: [&str; 4] = ["a", "b", "c", "d"];

/// app -> a -> ... (n crates in all); the last library writes a file unless `pure`. Each
/// library is padded by its depth so that the hops' lines differ.
fn chain_fixture(n: usize, pure: bool) -> Fixture {
    let libs = &CHAIN[..n - 1];
    let mut crates = vec![app(&["a"], "fn main() {\n    let out = \"out.txt\";\n    a::step(out);\n}\n")];
    for (i, name) in libs.iter().enumerate() {
        let body = match libs.get(i + 1) {
            Some(next) => format!("{next}::step(p);"),
            None if pure => "let _ = p.len();".to_string(),
            None => "let _ = std::fs::write(p, b\"data\");".to_string(),
        };
        let deps: Vec<&str> = libs.get(i + 1).into_iter().copied().collect();
        let src = format!("{}pub fn step(p: &str) {{\n    {body}\n}}\n", "// padding\n".repeat(i + 1));
        crates.push(lib(name, &deps, &src));
    }
    Fixture::new(crates)
}

fn check_chain(n: usize) {
    let fx = chain_fixture(n, false);
    let doc = fx.surface();
    let libs = &CHAIN[..n - 1];
    let next_paths: Vec<String> = libs.iter().skip(1).map(|x| format!("{x}::step")).collect();
    let mut hops: Vec<H> = libs.iter().zip(&next_paths).map(|(k, p)| h(k, p.as_str(), p.as_str())).collect();
    hops.push(h(libs[n - 2], "std::fs::write", "std::fs::write"));
    assert_reaches(&fx, &doc, "fs.write", "a::step(out)", "a::step", &hops);
    assert!(strs(&program(&doc)["capabilities"]).contains(&"fs.write".to_string()));
    // Every crate the chain passes through is reached with fs.write.
    for k in libs {
        let r = reached(&doc, k).unwrap_or_else(|| panic!("{k} in reached_from_program: {doc:#}"));
        assert!(strs(&r["reached"]).contains(&"fs.write".to_string()), "{r:#}");
    }

    let twin = chain_fixture(n, true);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert!(!strs(&program(&doc)["capabilities"]).contains(&"fs.write".to_string()), "{doc:#}");
    for k in libs {
        assert!(strs(&krate(&doc, k)["capabilities"]).is_empty(), "{k} is pure: {doc:#}");
    }
}

#[test]
fn chain_across_2_crates() {
    check_chain(2);
}

#[test]
fn chain_across_3_crates() {
    check_chain(3);
}

#[test]
fn chain_across_4_crates() {
    check_chain(4);
}

#[test]
fn chain_across_5_crates() {
    check_chain(5);
}

// ---------------------------------------------------------------------------------------
// 2. Methods on dependency types known from constructors, typed parameters and builders.

const NETDEP: &str = r#"pub struct Client {
    addr: String,
}

impl Client {
    pub fn new() -> Client {
        Client { addr: "127.0.0.1:9".to_string() }
    }

    pub fn send(&self) {
        let _ = std::net::TcpStream::connect(self.addr.as_str());
    }

    pub fn name(&self) -> &str {
        &self.addr
    }
}

pub struct Builder {
    path: String,
}

impl Builder {
    pub fn new() -> Self {
        Builder { path: String::new() }
    }

    pub fn path(mut self, p: &str) -> Self {
        self.path = p.to_string();
        self
    }

    pub fn open(self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }

    pub fn describe(self) -> String {
        self.path
    }
}
"#;

#[test]
fn methods_on_dependency_types_from_constructors_and_params() {
    let fx = Fixture::new(vec![
        lib("netdep", &[], NETDEP),
        app(
            &["netdep"],
            "fn main() {\n    let c = netdep::Client::new();\n    c.send(); // ctor\n    again(&c);\n}\n\nfn again(c: &netdep::Client) {\n    c.send(); // param\n}\n",
        ),
    ]);
    let doc = fx.surface();
    let hops = [h("netdep", "TcpStream::connect", "std::net::TcpStream::connect")];
    assert_reaches(&fx, &doc, "net.connect", "c.send(); // ctor", "netdep::Client::send", &hops);
    assert_reaches(&fx, &doc, "net.connect", "c.send(); // param", "netdep::Client::send", &hops);

    let twin = Fixture::new(vec![
        lib("netdep", &[], NETDEP),
        app(
            &["netdep"],
            "fn main() {\n    let c = netdep::Client::new();\n    c.name();\n    again(&c);\n}\n\nfn again(c: &netdep::Client) {\n    c.name(); // param\n}\n",
        ),
    ]);
    let doc = twin.surface();
    assert_not_reached(&doc, "net.connect");
    assert!(strs(&krate(&doc, "netdep")["capabilities"]).contains(&"net.connect".to_string()), "the dependency itself connects");
}

#[test]
fn methods_on_dependency_builders() {
    let fx = Fixture::new(vec![
        lib("netdep", &[], NETDEP),
        app(&["netdep"], "fn main() {\n    let text = netdep::Builder::new().path(\"x\").open();\n    println!(\"{text}\");\n}\n"),
    ]);
    let doc = fx.surface();
    assert_reaches(
        &fx,
        &doc,
        "fs.read",
        ".open()",
        "netdep::Builder::open",
        &[h("netdep", "std::fs::read_to_string", "std::fs::read_to_string")],
    );

    let twin = Fixture::new(vec![
        lib("netdep", &[], NETDEP),
        app(&["netdep"], "fn main() {\n    let text = netdep::Builder::new().path(\"x\").describe();\n    println!(\"{text}\");\n}\n"),
    ]);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.read");
    assert!(strs(&krate(&doc, "netdep")["capabilities"]).contains(&"fs.read".to_string()));
}

/// The receiver's type known from an imported constructor, a `let` annotation and a field.
#[test]
fn methods_on_dependency_types_from_imports_annotations_and_fields() {
    let main = |m: &str| {
        format!(
            "use netdep::Client;\n\nstruct App {{\n    client: netdep::Client,\n}}\n\nimpl App {{\n    fn run(&self) {{\n        self.client.{m}(); // field\n    }}\n}}\n\nfn main() {{\n    let c = Client::new();\n    c.{m}(); // imported\n    let d: netdep::Client = make();\n    d.{m}(); // annotated\n    App {{ client: make() }}.run();\n}}\n\nfn make() -> netdep::Client {{\n    netdep::Client::new()\n}}\n"
        )
    };
    let fx = Fixture::new(vec![lib("netdep", &[], NETDEP), app(&["netdep"], &main("send"))]);
    let doc = fx.surface();
    let hops = [h("netdep", "TcpStream::connect", "std::net::TcpStream::connect")];
    for call in ["// imported", "// annotated", "// field"] {
        assert_reaches(&fx, &doc, "net.connect", call, "netdep::Client::send", &hops);
    }

    let twin = Fixture::new(vec![lib("netdep", &[], NETDEP), app(&["netdep"], &main("name"))]);
    assert_not_reached(&twin.surface(), "net.connect");
}

/// A method of a middle crate's type that calls another crate: app -> mid::Conn::open ->
/// low::dial -> std.
#[test]
fn dependency_methods_that_call_further_dependencies() {
    let mid = |body: &str| {
        format!("pub struct Conn;\n\nimpl Conn {{\n    pub fn new() -> Conn {{\n        Conn\n    }}\n\n    pub fn open(&self) {{\n        {body}\n    }}\n}}\n")
    };
    let low = "pub fn dial() {\n    let _ = std::net::TcpStream::connect(\"127.0.0.1:9\");\n}\n\npub fn idle() {}\n";
    let main = "fn main() {\n    mid::Conn::new().open();\n}\n";
    let fx = Fixture::new(vec![lib("low", &[], low), lib("mid", &["low"], &mid("low::dial();")), app(&["mid"], main)]);
    let doc = fx.surface();
    assert_reaches(
        &fx,
        &doc,
        "net.connect",
        ".open()",
        "mid::Conn::open",
        &[h("mid", "low::dial", "low::dial"), h("low", "TcpStream::connect", "std::net::TcpStream::connect")],
    );

    let twin = Fixture::new(vec![lib("low", &[], low), lib("mid", &["low"], &mid("low::idle();")), app(&["mid"], main)]);
    assert_not_reached(&twin.surface(), "net.connect");
}

// ---------------------------------------------------------------------------------------
// 3. Re-exported functions: a local item and another crate's, through a middle crate.

const MID: &str = "mod inner {
    pub fn write_all(p: &str) {
        let _ = std::fs::write(p, b\"all\");
    }

    pub fn count(p: &str) -> usize {
        p.len()
    }
}

pub use inner::write_all;
pub use inner::count;
pub use other::f;
pub use other::g;
";

const OTHER: &str = "pub fn f() {
    let _ = std::process::Command::new(\"ls\").status();
}

pub fn g() -> u32 {
    7
}
";

#[test]
fn reexported_functions() {
    let fx = Fixture::new(vec![
        lib("other", &[], OTHER),
        lib("mid", &["other"], MID),
        app(&["mid"], "fn main() {\n    mid::write_all(\"out\");\n    mid::f();\n}\n"),
    ]);
    let doc = fx.surface();
    assert_reaches(&fx, &doc, "fs.write", "mid::write_all", "mid::write_all", &[h("mid", "std::fs::write", "std::fs::write")]);
    assert_reaches(&fx, &doc, "process.spawn", "mid::f()", "mid::f", &[h("other", "Command::new", "std::process::Command")]);

    let twin = Fixture::new(vec![
        lib("other", &[], OTHER),
        lib("mid", &["other"], MID),
        app(&["mid"], "fn main() {\n    mid::count(\"out\");\n    mid::g();\n}\n"),
    ]);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert_not_reached(&doc, "process.spawn");
}

/// Renamed and glob re-exports.
#[test]
fn renamed_and_glob_reexports() {
    let mid = "mod inner {\n    pub fn write_all(p: &str) {\n        let _ = std::fs::write(p, b\"all\");\n    }\n\n    pub fn count(p: &str) -> usize {\n        p.len()\n    }\n}\n\npub mod glob {\n    pub use crate::inner::*;\n}\n\npub use inner::write_all as put;\npub use inner::count as tally;\npub use other::f as launch;\npub use other::g as seven;\n";
    let run = |main: &str| Fixture::new(vec![lib("other", &[], OTHER), lib("mid", &["other"], mid), app(&["mid"], main)]);
    let fx = run("fn main() {\n    mid::put(\"a\");\n    mid::glob::write_all(\"b\");\n    mid::launch();\n}\n");
    let doc = fx.surface();
    let write_hops = [h("mid", "std::fs::write", "std::fs::write")];
    assert_reaches(&fx, &doc, "fs.write", "mid::put", "mid::put", &write_hops);
    assert_reaches(&fx, &doc, "fs.write", "mid::glob::write_all", "mid::glob::write_all", &write_hops);
    assert_reaches(&fx, &doc, "process.spawn", "mid::launch", "mid::launch", &[h("other", "Command::new", "std::process::Command")]);

    let twin = run("fn main() {\n    mid::tally(\"a\");\n    mid::glob::count(\"b\");\n    mid::seven();\n}\n");
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert_not_reached(&doc, "process.spawn");
}

// ---------------------------------------------------------------------------------------
// 4. Statics and constants holding function pointers.

const HOOKS: &str = "fn spawn_it(cmd: &str) {
    let _ = std::process::Command::new(cmd).status();
}

fn log_it(msg: &str) {
    let _ = msg.len();
}

pub static HOOK: fn(&str) = spawn_it;
pub const RUN: fn(&str) = spawn_it;
pub static QUIET: fn(&str) = log_it;
pub const QUIET_RUN: fn(&str) = log_it;
";

#[test]
fn statics_and_consts_holding_fn_pointers() {
    let fx = Fixture::new(vec![
        lib("hooks", &[], HOOKS),
        app(&["hooks"], "fn main() {\n    (hooks::HOOK)(\"x\");\n    let f = hooks::RUN;\n    f(\"y\");\n}\n"),
    ]);
    let doc = fx.surface();
    // The chain starts at the initializer, which names spawn_it, then goes into spawn_it.
    let static_hops = [h("hooks", "static HOOK", "hooks::spawn_it"), h("hooks", "Command::new", "std::process::Command")];
    let const_hops = [h("hooks", "const RUN", "hooks::spawn_it"), h("hooks", "Command::new", "std::process::Command")];
    assert_reaches(&fx, &doc, "process.spawn", "(hooks::HOOK)", "hooks::HOOK", &static_hops);
    assert_reaches(&fx, &doc, "process.spawn", "hooks::RUN", "hooks::RUN", &const_hops);

    let twin = Fixture::new(vec![
        lib("hooks", &[], HOOKS),
        app(&["hooks"], "fn main() {\n    (hooks::QUIET)(\"x\");\n    let f = hooks::QUIET_RUN;\n    f(\"y\");\n}\n"),
    ]);
    let doc = twin.surface();
    assert_not_reached(&doc, "process.spawn");
    assert!(strs(&krate(&doc, "hooks")["capabilities"]).contains(&"process.spawn".to_string()));
}

// ---------------------------------------------------------------------------------------
// 5. and 8. Precision per function; reached_from_program.

const STORE: &str = "fn write_file(p: &str, data: &str) {
    let _ = std::fs::write(p, data);
}

fn mix(acc: u32, b: u8) -> u32 {
    acc.wrapping_mul(31).wrapping_add(b as u32)
}

pub fn save(p: &str, data: &str) {
    write_file(p, data);
}

pub fn checksum(data: &str) -> u32 {
    data.bytes().fold(7, mix)
}
";

fn store_fixture(main: &str) -> Fixture {
    Fixture::new(vec![lib("store", &[], STORE), app(&["store"], main)])
}

#[test]
fn precision_is_per_function_not_per_crate() {
    let fx = store_fixture("fn main() {\n    store::save(\"out\", \"x\");\n}\n");
    let doc = fx.surface();
    assert_reaches(
        &fx,
        &doc,
        "fs.write",
        "store::save",
        "store::save",
        &[h("store", "    write_file(p, data);", "store::write_file"), h("store", "std::fs::write", "std::fs::write")],
    );

    let twin = store_fixture("fn main() {\n    println!(\"{}\", store::checksum(\"x\"));\n}\n");
    let doc = twin.surface();
    assert!(own(&doc).is_empty(), "calling the pure function gives nothing: {:#?}", own(&doc));
    assert!(strs(&krate(&doc, "store")["capabilities"]).contains(&"fs.write".to_string()));
}

#[test]
fn reached_from_program_names_what_the_program_reaches() {
    let pure = store_fixture("fn main() {\n    println!(\"{}\", store::checksum(\"x\"));\n}\n");
    let doc = pure.surface();
    let r = reached(&doc, "store").unwrap_or_else(|| panic!("store has fs.write: {doc:#}"));
    assert_eq!(r["version"], "0.1.0");
    assert_eq!(strs(&r["capabilities"]), ["fs.write"], "{r:#}");
    assert!(strs(&r["reached"]).is_empty(), "the program only calls the pure function: {r:#}");
    let calls = &program(&doc)["calls"];
    let (total, resolved) = (calls["total"].as_u64().unwrap(), calls["resolved"].as_u64().unwrap());
    assert!(total >= resolved && resolved > 0, "{calls:#}");

    let capable = store_fixture("fn main() {\n    store::save(\"out\", \"x\");\n    let n = store::checksum(\"x\");\n    println!(\"{n}\");\n}\n");
    let doc = capable.surface();
    let r = reached(&doc, "store").unwrap();
    assert_eq!(strs(&r["capabilities"]), ["fs.write"], "{r:#}");
    assert_eq!(strs(&r["reached"]), ["fs.write"], "{r:#}");
    let calls = &program(&doc)["calls"];
    let (total, resolved) = (calls["total"].as_u64().unwrap(), calls["resolved"].as_u64().unwrap());
    assert!(total >= resolved && resolved >= 2, "both store calls resolve: {calls:#}");
    // The program's own crate is not listed.
    assert!(reached(&doc, "app").is_none());
}

// ---------------------------------------------------------------------------------------
// 6. Cycles: mutual recursion in a dependency.

fn cycle_fixture(spawn: bool) -> Fixture {
    let spawn_line = if spawn { "    let _ = std::process::Command::new(\"true\").status();\n" } else { "    let _ = n;\n" };
    let src = format!(
        "pub fn ping(n: u32) {{\n    if n > 0 {{\n        pong(n - 1);\n    }}\n}}\n\npub fn pong(n: u32) {{\n    if n > 0 {{\n        ping(n - 1);\n    }}\n    pong_again(n);\n}}\n\nfn pong_again(n: u32) {{\n    if n > 1 {{\n        pong_again(n - 1);\n        pong(n - 2);\n    }}\n{spawn_line}}}\n"
    );
    Fixture::new(vec![lib("cyc", &[], &src), app(&["cyc"], "fn main() {\n    cyc::ping(3);\n}\n")])
}

#[test]
fn mutual_recursion_in_a_dependency_terminates() {
    let fx = cycle_fixture(true);
    let doc = fx.surface();
    assert_reaches(
        &fx,
        &doc,
        "process.spawn",
        "cyc::ping",
        "cyc::ping",
        &[
            h("cyc", "        pong(n - 1);", "cyc::pong"),
            h("cyc", "    pong_again(n);", "cyc::pong_again"),
            h("cyc", "Command::new", "std::process::Command"),
        ],
    );

    let twin = cycle_fixture(false);
    let doc = twin.surface();
    assert_not_reached(&doc, "process.spawn");
    assert!(own(&doc).is_empty(), "{:#?}", own(&doc));
}

// ---------------------------------------------------------------------------------------
// 7. Traits implemented by dependency types.

const TRAITS: &str = "pub trait Store {
    fn save(&self, data: &str);
}

pub struct Disk;

impl Disk {
    pub fn new() -> Disk {
        Disk
    }
}

impl Store for Disk {
    fn save(&self, data: &str) {
        let _ = std::fs::write(\"store.txt\", data);
    }
}

pub struct Memory;

impl Memory {
    pub fn new() -> Memory {
        Memory
    }
}

impl Store for Memory {
    fn save(&self, data: &str) {
        let _ = data.len();
    }
}
";

#[test]
fn trait_methods_of_dependency_types() {
    let main = |ty: &str| {
        format!(
            "use traits::Store;\n\nfn main() {{\n    let s = traits::{ty}::new();\n    s.save(\"a\");\n    keep(&s);\n}}\n\nfn keep(s: &traits::{ty}) {{\n    s.save(\"b\");\n}}\n"
        )
    };
    let fx = Fixture::new(vec![lib("traits", &[], TRAITS), app(&["traits"], &main("Disk"))]);
    let doc = fx.surface();
    let hops = [h("traits", "std::fs::write", "std::fs::write")];
    assert_reaches(&fx, &doc, "fs.write", "s.save(\"a\")", "traits::Disk::save", &hops);
    assert_reaches(&fx, &doc, "fs.write", "s.save(\"b\")", "traits::Disk::save", &hops);

    let twin = Fixture::new(vec![lib("traits", &[], TRAITS), app(&["traits"], &main("Memory"))]);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert!(strs(&krate(&doc, "traits")["capabilities"]).contains(&"fs.write".to_string()));
}

#[test]
fn fully_qualified_trait_calls_on_dependency_types() {
    let main = |ty: &str| {
        format!("fn main() {{\n    let s = traits::{ty}::new();\n    <traits::{ty} as traits::Store>::save(&s, \"a\");\n}}\n")
    };
    let fx = Fixture::new(vec![lib("traits", &[], TRAITS), app(&["traits"], &main("Disk"))]);
    let doc = fx.surface();
    assert_reaches(&fx, &doc, "fs.write", "as traits::Store", "traits::Disk::save", &[h("traits", "std::fs::write", "std::fs::write")]);

    let twin = Fixture::new(vec![lib("traits", &[], TRAITS), app(&["traits"], &main("Memory"))]);
    assert_not_reached(&twin.surface(), "fs.write");
}

/// A dependency whose trait `Journal` has a provided method `flush` that writes a file (or,
/// for the twin, does not); `File` implements `Journal` without overriding `flush`.
fn journal(writes: bool) -> Krate {
    let body = if writes { "let _ = std::fs::write(\"j.log\", self.name());" } else { "let _ = self.name();" };
    let src = format!(
        "pub trait Journal {{\n    fn name(&self) -> String;\n\n    fn flush(&self) {{\n        {body}\n    }}\n}}\n\npub struct File;\n\nimpl File {{\n    pub fn new() -> File {{\n        File\n    }}\n}}\n\nimpl Journal for File {{\n    fn name(&self) -> String {{\n        String::new()\n    }}\n}}\n"
    );
    lib("journal", &[], &src)
}

/// Called by the trait's path, the provided method is found (this works today).
#[test]
fn provided_trait_methods_called_by_path() {
    let main = "fn main() {\n    let j = journal::File::new();\n    journal::Journal::flush(&j);\n    <journal::File as journal::Journal>::flush(&j);\n}\n";
    let fx = Fixture::new(vec![journal(true), app(&["journal"], main)]);
    let doc = fx.surface();
    let hops = [h("journal", "std::fs::write", "std::fs::write")];
    assert_reaches(&fx, &doc, "fs.write", "journal::Journal::flush(&j)", "journal::Journal::flush", &hops);
    assert_reaches(&fx, &doc, "fs.write", "<journal::File as", "journal::Journal::flush", &hops);

    let twin = Fixture::new(vec![journal(false), app(&["journal"], main)]);
    assert_not_reached(&twin.surface(), "fs.write");
}

/// `main` calls `Journal::flush` with method syntax at `j.flush()`: the app reaches fs.write
/// there, the chain ending at the provided method's write; and nothing when it writes nothing.
fn assert_provided_method_reached(main: &str) {
    let fx = Fixture::new(vec![journal(true), app(&["journal"], main)]);
    let doc = fx.surface();
    let f = own(&doc)
        .iter()
        .find(|f| f["capability"] == "fs.write")
        .unwrap_or_else(|| panic!("app must reach fs.write through Journal::flush: {:#?}", own(&doc)));
    assert_eq!((f["file"].as_str(), f["line"].as_u64()), (Some("src/main.rs"), Some(fx.line("app", "src/main.rs", "j.flush()"))), "{f:#}");
    let last = f["chain"].as_array().and_then(|c| c.last()).unwrap_or_else(|| panic!("{f:#}"));
    assert_eq!((last["crate"].as_str(), last["line"].as_u64()), (Some("journal"), Some(fx.line("journal", "src/lib.rs", "std::fs::write"))), "{f:#}");

    let twin = Fixture::new(vec![journal(false), app(&["journal"], main)]);
    assert_not_reached(&twin.surface(), "fs.write");
}

/// A provided method called with method syntax on a receiver of a known dependency type that
/// does not override it: `File::flush` is the trait's `Journal::flush`.
#[test]
fn provided_trait_methods_called_on_dependency_types() {
    assert_provided_method_reached("use journal::Journal;\n\nfn main() {\n    let j = journal::File::new();\n    j.flush();\n}\n");
}

/// A provided method called on a generic receiver bounded by the dependency's trait.
#[test]
fn provided_trait_methods_called_on_generic_receivers() {
    assert_provided_method_reached(
        "use journal::Journal;\n\nfn main() {\n    flush_it(&journal::File::new());\n}\n\nfn flush_it<J: Journal>(j: &J) {\n    j.flush();\n}\n",
    );
}

// ---------------------------------------------------------------------------------------
// 8b. Calls through traits: trait objects, generics, `impl Trait`, resolved over the
// program's graph (the dispatch hop shows in the chain).

const PLUG: &str = "pub trait Sink {
    fn put(&self, s: &str);
}

pub struct Hub {
    sink: Box<dyn Sink>,
}

impl Hub {
    pub fn new(sink: Box<dyn Sink>) -> Hub {
        Hub { sink }
    }

    pub fn emit(&self) {
        self.sink.put(\"event\");
    }
}

pub fn run<S: Sink>(s: &S) {
    s.put(\"run\");
}

pub fn with<F: FnOnce()>(f: F) {
    f()
}

pub trait Store {
    fn save(&self) {
        let _ = std::fs::write(\"db\", \"x\");
    }
}

pub fn persist<S: Store>(s: &S) {
    s.save();
}
";

/// `files`: `FileSink` writes a file when it is put to, `Quiet` does nothing; `made` says
/// which of them `files` itself constructs (for `sink()` and `open()`).
fn files(made: &str) -> Krate {
    let src = format!(
        "pub struct FileSink;

impl plug::Sink for FileSink {{
    fn put(&self, s: &str) {{
        let _ = std::fs::write(\"log\", s);
    }}
}}

pub struct Quiet;

impl plug::Sink for Quiet {{
    fn put(&self, _s: &str) {{}}
}}

pub fn sink() -> Box<dyn plug::Sink> {{
    Box::new({made})
}}

pub fn open() -> impl plug::Sink {{
    {made}
}}

pub struct Disk;

impl plug::Store for Disk {{}}
"
    );
    lib("files", &["plug"], &src)
}

/// The program's own finding of `cap` at the line of main.rs holding `call`: its chain's
/// paths.
fn chain_paths(fx: &Fixture, doc: &Value, cap: &str, call: &str) -> Option<Vec<String>> {
    let line = fx.line("app", "src/main.rs", call);
    own(doc)
        .iter()
        .find(|f| f["capability"] == cap && f["line"].as_u64() == Some(line))
        .map(|f| f["chain"].as_array().map(|c| c.iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()).unwrap_or_default())
}

fn reachable(doc: &Value) -> Vec<String> {
    strs(&program(doc)["reachable"]["capabilities"])
}

#[test]
fn a_trait_object_stored_in_a_struct_and_called_later() {
    let main = "fn main() {\n    let hub = plug::Hub::new(files::sink());\n    hub.emit();\n}\n";
    let fx = Fixture::new(vec![lib("plug", &[], PLUG), files("FileSink"), app(&["plug", "files"], main)]);
    let doc = fx.surface();
    let hops = [h("plug", "self.sink.put", "dyn plug::Sink::put"), h("files", "fn put(&self, s: &str)", "files::FileSink::put"), h("files", "std::fs::write(\"log\"", "std::fs::write")];
    // The dispatch hop is at the implementation's `fn`; the write in its body.
    let fx_line = |k: &str, n: &str| fx.line(k, "src/lib.rs", n);
    let f = own(&doc).iter().find(|f| f["capability"] == "fs.write").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(f["path"], "plug::Hub::emit");
    // What dispatch finds at the program's own call is shown, informational: the grant of
    // `app` is what its code does; `files`, whose code writes, carries fs.write.
    assert_eq!(f["through_trait"], true, "{f:#}");
    assert!(!strs(&krate(&doc, "app")["capabilities"]).contains(&"fs.write".to_string()), "{doc:#}");
    assert!(strs(&krate(&doc, "files")["capabilities"]).contains(&"fs.write".to_string()), "{doc:#}");
    assert_eq!(f["line"].as_u64(), Some(fx.line("app", "src/main.rs", "hub.emit()")));
    let got: Vec<(String, u64, String)> = f["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["crate"].as_str().unwrap().to_string(), h["line"].as_u64().unwrap(), h["path"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, u64, String)> = hops.iter().map(|x| (x.krate.to_string(), fx_line(x.krate, x.needle), x.path.to_string())).collect();
    assert_eq!(got, want, "{f:#}");
    assert!(reachable(&doc).contains(&"fs.write".to_string()), "{:#}", program(&doc)["reachable"]);

    // The twin: the sink made is the quiet one; `FileSink` is never constructed.
    let twin = Fixture::new(vec![lib("plug", &[], PLUG), files("Quiet"), app(&["plug", "files"], main)]);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert!(!reachable(&doc).contains(&"fs.write".to_string()));
    // The union still has it: files' code writes.
    assert!(strs(&krate(&doc, "files")["capabilities"]).contains(&"fs.write".to_string()));
}

#[test]
fn a_generic_function_reaches_only_the_implementations_constructed() {
    let main = |ty: &str| format!("fn main() {{\n    plug::run(&files::{ty});\n}}\n");
    let fx = Fixture::new(vec![lib("plug", &[], PLUG), files("Quiet"), app(&["plug", "files"], &main("FileSink"))]);
    let doc = fx.surface();
    let paths = chain_paths(&fx, &doc, "fs.write", "plug::run").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(paths, ["dyn plug::Sink::put", "files::FileSink::put", "std::fs::write"]);

    // Only the quiet implementation is ever made: the generic call writes nothing.
    let twin = Fixture::new(vec![lib("plug", &[], PLUG), files("Quiet"), app(&["plug", "files"], &main("Quiet"))]);
    assert_not_reached(&twin.surface(), "fs.write");
}

#[test]
fn impl_trait_returned_across_crates() {
    let main = "fn main() {\n    let s = files::open();\n    s.put(\"x\");\n}\n";
    let fx = Fixture::new(vec![lib("plug", &[], PLUG), files("FileSink"), app(&["plug", "files"], main)]);
    let doc = fx.surface();
    let paths = chain_paths(&fx, &doc, "fs.write", "s.put").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(paths, ["files::FileSink::put", "std::fs::write"]);
    let twin = Fixture::new(vec![lib("plug", &[], PLUG), files("Quiet"), app(&["plug", "files"], main)]);
    assert_not_reached(&twin.surface(), "fs.write");
}

#[test]
fn closures_passed_to_a_dependency_and_called_there() {
    let main = |body: &str| format!("fn main() {{\n    plug::with(|| {{\n        {body}\n    }});\n}}\n");
    let fx = Fixture::new(vec![lib("plug", &[], PLUG), app(&["plug"], &main("let _ = std::fs::remove_file(\"x\");"))]);
    let doc = fx.surface();
    let line = fx.line("app", "src/main.rs", "remove_file");
    assert!(own(&doc).iter().any(|f| f["capability"] == "fs.write" && f["line"].as_u64() == Some(line)), "{doc:#}");
    assert!(reachable(&doc).contains(&"fs.write".to_string()));
    let twin = Fixture::new(vec![lib("plug", &[], PLUG), app(&["plug"], &main("let _ = 1 + 1;"))]);
    let doc = twin.surface();
    assert_not_reached(&doc, "fs.write");
    assert!(!reachable(&doc).contains(&"fs.write".to_string()));
}

#[test]
fn provided_methods_reached_through_a_generic_call() {
    let main = "fn main() {\n    plug::persist(&files::Disk);\n}\n";
    let fx = Fixture::new(vec![lib("plug", &[], PLUG), files("Quiet"), app(&["plug", "files"], main)]);
    let doc = fx.surface();
    let paths = chain_paths(&fx, &doc, "fs.write", "plug::persist").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(paths, ["dyn plug::Store::save", "plug::Store::save", "std::fs::write"]);
    let pure = PLUG.replace("let _ = std::fs::write(\"db\", \"x\");", "let _ = 1;");
    let twin = Fixture::new(vec![lib("plug", &[], &pure), files("Quiet"), app(&["plug", "files"], main)]);
    assert_not_reached(&twin.surface(), "fs.write");
}

#[test]
fn blanket_implementations_are_candidates() {
    let blanket = |body: &str| {
        lib(
            "blanket",
            &[],
            &format!("pub trait Loggable {{\n    fn log(&self);\n}}\n\nimpl<T: std::fmt::Display> Loggable for T {{\n    fn log(&self) {{\n        {body}\n    }}\n}}\n\npub fn log_it<L: Loggable>(l: &L) {{\n    l.log();\n}}\n"),
        )
    };
    let main = "fn main() {\n    blanket::log_it(&5u32);\n}\n";
    let fx = Fixture::new(vec![blanket("let _ = std::fs::write(\"log\", self.to_string());"), app(&["blanket"], main)]);
    let doc = fx.surface();
    assert!(chain_paths(&fx, &doc, "fs.write", "log_it").is_some(), "{doc:#}");
    let twin = Fixture::new(vec![blanket("let _ = self.to_string();"), app(&["blanket"], main)]);
    assert_not_reached(&twin.surface(), "fs.write");
}

#[test]
fn the_reachable_grant_is_what_main_reaches() {
    // `tools` can spawn and connect; main only calls the function that connects.
    let tools = lib(
        "tools",
        &[],
        "pub fn dial() {\n    let _ = std::net::TcpStream::connect(\"a:1\");\n}\n\npub fn shell() {\n    let _ = std::process::Command::new(\"sh\");\n}\n",
    );
    let fx = Fixture::new(vec![tools, app(&["tools"], "fn main() {\n    tools::dial();\n}\n")]);
    let doc = fx.surface();
    let union = strs(&program(&doc)["capabilities"]);
    assert!(union.contains(&"process.spawn".to_string()) && union.contains(&"net.connect".to_string()), "{union:?}");
    let r = reachable(&doc);
    assert!(r.contains(&"net.connect".to_string()), "{r:?}");
    assert!(!r.contains(&"process.spawn".to_string()), "{r:?}");
    assert_eq!(program(&doc)["reachable"]["unresolved"], 0);
}

// ---------------------------------------------------------------------------------------
// 9. Determinism.

#[test]
fn output_is_byte_identical_across_runs() {
    let fx = Fixture::new(vec![
        lib("a", &["b"], "pub fn step(p: &str) {\n    b::step(p);\n}\n"),
        lib("b", &[], "pub fn step(p: &str) {\n    let _ = std::fs::write(p, b\"x\");\n}\n"),
        lib("netdep", &[], NETDEP),
        lib("store", &[], STORE),
        lib("hooks", &[], HOOKS),
        app(
            &["a", "netdep", "store", "hooks"],
            "fn main() {\n    a::step(\"o\");\n    let c = netdep::Client::new();\n    c.send();\n    store::save(\"p\", \"q\");\n    (hooks::HOOK)(\"x\");\n}\n",
        ),
    ]);
    let first = fx.json();
    let second = fx.json();
    assert_eq!(first, second, "a second run (warm cache) gives the same bytes");
    let fresh = tempfile::tempdir().unwrap();
    let third = fx.json_with_cache(fresh.path());
    assert_eq!(first, third, "a run with an empty cache gives the same bytes");
    // And it is not trivially empty: the program's crate has chains.
    let doc: Value = surface_doc::inline(serde_json::from_str(&first).unwrap());
    assert!(own(&doc).iter().filter(|f| f["chain"].is_array()).count() >= 4, "{:#?}", own(&doc));
}

/// `svc` declares the trait, `facade` re-exports it (as `tower` does `tower_service`'s
/// `Service`), `client` calls it on a field whose type is an alias (`Layered<T> = T`, as
/// reqwest's `LayeredService`) and constructs `made`.
fn facade_graph(made: &str, main: &str) -> Fixture {
    let svc = lib("svc", &[], "pub trait Service {\n    fn call(&mut self, r: &str);\n}\n");
    let facade = lib("facade", &["svc"], "pub use svc::Service;\n");
    let client = format!(
        "use facade::Service;

type Layered<T> = T;

pub struct Conn;

impl Service for Conn {{
    fn call(&mut self, r: &str) {{
        let _ = std::net::TcpStream::connect(r);
    }}
}}

pub struct Quiet;

impl Service for Quiet {{
    fn call(&mut self, _r: &str) {{}}
}}

pub struct Client {{
    inner: Layered<{made}>,
}}

pub fn build() -> Result<Client, ()> {{
    Ok(Client {{ inner: {made} }})
}}

impl Client {{
    pub fn send(&mut self) {{
        self.inner.call(\"example.com:80\");
    }}
}}
"
    );
    Fixture::new(vec![svc, facade, lib("client", &["facade"], &client), app(&["client"], main)])
}

/// A trait named through a crate that re-exports it, called on a value whose type is an
/// alias, reached from a local bound by a `match` arm: the call goes on through the trait
/// and resolves to the implementation the program constructs.
#[test]
fn a_reexported_trait_called_on_an_alias_typed_field() {
    let main = "fn main() {\n    let mut c = match client::build() {\n        Ok(c) => c,\n        Err(_) => return,\n    };\n    c.send();\n}\n";
    let fx = facade_graph("Conn", main);
    let doc = fx.surface();
    let paths = chain_paths(&fx, &doc, "net.connect", "c.send()").unwrap_or_else(|| panic!("{doc:#}"));
    assert!(paths.iter().any(|p| p == "dyn svc::Service::call"), "{paths:?}");
    assert!(paths.iter().any(|p| p.ends_with("Conn::call")), "{paths:?}");
    assert!(reachable(&doc).contains(&"net.connect".to_string()), "{doc:#}");
    // Only the quiet implementation is made: nothing connects.
    let twin = facade_graph("Quiet", main);
    let doc = twin.surface();
    assert_not_reached(&doc, "net.connect");
    assert!(!reachable(&doc).contains(&"net.connect".to_string()), "{doc:#}");
}

/// `x.await` runs `IntoFuture::into_future` (axum's `serve(..).await`): what it does is
/// at the `.await`; the same value never awaited does nothing.
#[test]
fn awaiting_a_value_runs_its_into_future() {
    let srv = lib(
        "srv",
        &[],
        "pub struct Serve {
    addr: String,
}

pub fn serve(addr: &str) -> Serve {
    Serve { addr: addr.to_string() }
}

impl std::future::IntoFuture for Serve {
    type Output = ();
    type IntoFuture = std::future::Ready<()>;

    fn into_future(self) -> Self::IntoFuture {
        let _ = std::net::TcpListener::bind(&self.addr);
        std::future::ready(())
    }
}
",
    );
    let main = |body: &str| format!("async fn run() {{\n    {body}\n}}\n\nfn main() {{\n    let _ = run();\n}}\n");
    let fx = Fixture::new(vec![srv.clone(), app(&["srv"], &main("srv::serve(\"0.0.0.0:80\").await;"))]);
    let doc = fx.surface();
    let paths = chain_paths(&fx, &doc, "net.listen", ".await").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(paths, ["std::net::TcpListener::bind"], "{doc:#}");
    let twin = Fixture::new(vec![srv, app(&["srv"], &main("let _s = srv::serve(\"0.0.0.0:80\");"))]);
    assert_not_reached(&twin.surface(), "net.listen");
}
