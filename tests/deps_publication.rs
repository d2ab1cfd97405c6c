//! `velaris deps-diff` on the publication of each new version, end to end: release ages from
//! the index's `pubtime` (the registry double) against the head commit's date, and publishers
//! from crates.io's API (the API double, serving the documented shape), each signal with its
//! benign twin; the API failing every way it can, with every package still reviewed and "not
//! checked" said per package; and `--verify-source` against a local git repository.

#[path = "support/api_double.rs"]
mod api_double;
#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/schema.rs"]
mod schema;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use api_double::{ApiDouble, By, Fault};
use registry_double::{RegistryDouble, cargo_home_replacing_crates_io, sha256_hex};
use serde_json::Value;

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";
/// The head commit's date: release ages are measured against it.
const HEAD_DATE: &str = "2026-07-20T00:00:00Z";

struct Krate {
    name: &'static str,
    version: &'static str,
    bytes: Vec<u8>,
}

fn krate(name: &'static str, version: &'static str, extra_files: &[(&str, &str)]) -> Krate {
    let manifest = format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\nrepository = \"https://github.com/o/{name}\"\n");
    let mut files = vec![("Cargo.toml", manifest.as_str()), ("src/lib.rs", "pub fn f() -> u32 { 1 }\n")];
    files.extend_from_slice(extra_files);
    Krate { name, version, bytes: archives::crate_bytes(name, version, &files) }
}

fn lockfile(crates: &[&Krate]) -> String {
    let mut names: Vec<&str> = crates.iter().map(|k| k.name).collect();
    names.sort();
    let mut s = String::from("version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n");
    for n in &names {
        s.push_str(&format!(" \"{n}\",\n"));
    }
    s.push_str("]\n");
    let mut sorted: Vec<&&Krate> = crates.iter().collect();
    sorted.sort_by_key(|k| k.name);
    for k in sorted {
        s.push_str(&format!(
            "\n[[package]]\nname = \"{}\"\nversion = \"{}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n",
            k.name,
            k.version,
            sha256_hex(&k.bytes)
        ));
    }
    s
}

struct World {
    reg: RegistryDouble,
    api: ApiDouble,
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
    cache: tempfile::TempDir,
}

fn git_env(c: &mut Command, home: &Path, date: &str) {
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date);
}

fn git(dir: &Path, home: &Path, date: &str, args: &[&str]) -> String {
    let mut c = Command::new("git");
    c.args(args).current_dir(dir);
    git_env(&mut c, home, date);
    let o = c.output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

impl World {
    /// A workspace whose head commit (dated [`HEAD_DATE`]) moves `base` to `head`.
    fn new(base: &[&Krate], head: &[&Krate]) -> World {
        let reg = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&reg.index_url());
        let w = World { reg, api: ApiDouble::start(), home, repo: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() };
        for k in base.iter().chain(head) {
            w.reg.add_crate(k.name, k.version, &k.bytes);
        }
        let root = w.repo.path();
        let deps: String = base.iter().map(|k| format!("{} = \"{}\"\n", k.name, k.version.split('.').next().unwrap())).collect();
        std::fs::write(root.join("Cargo.toml"), format!("[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("Cargo.lock"), lockfile(base)).unwrap();
        let g = |args: &[&str], date: &str| git(root, w.home.path(), date, args);
        g(&["init", "-q", "-b", "main"], HEAD_DATE);
        g(&["add", "-A"], HEAD_DATE);
        g(&["commit", "-q", "-m", "base"], "2026-01-01T00:00:00Z");
        std::fs::write(root.join("Cargo.lock"), lockfile(head)).unwrap();
        g(&["add", "-A"], HEAD_DATE);
        g(&["commit", "-q", "-m", "bump"], HEAD_DATE);
        w
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = registry_double::velaris_command(self.repo.path(), self.home.path(), self.cache.path());
        c.env("VELARIS_CRATES_IO_API", self.api.url());
        git_env(&mut c, self.home.path(), HEAD_DATE);
        let mut all = vec!["deps-diff", "HEAD~1..HEAD", "--no-capabilities"];
        all.extend_from_slice(args);
        c.args(&all).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let o = self.run(&all);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        schema::assert_valid_v2(&doc);
        doc
    }
}

fn pkg<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name} not in {doc:#}"))
}

fn codes(p: &Value) -> Vec<&str> {
    p["flags"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect()
}

fn reasons(p: &Value) -> Vec<&str> {
    p["risk"]["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect()
}

const PUBLICATION_FLAGS: &[&str] =
    &["fresh", "publisher-changed", "trusted-publishing-lost", "publisher-new", "trusted-publishing-repository", "files-not-in-repository", "vcs-commit-not-found"];

fn publication_codes(p: &Value) -> Vec<&str> {
    codes(p).into_iter().filter(|c| PUBLICATION_FLAGS.contains(c)).collect()
}

/// Each signal beside its benign twin.
struct Signals {
    base: Vec<Krate>,
    head: Vec<Krate>,
}

fn signals() -> Signals {
    let names = ["fresh-token", "routine", "tp-lost", "tp-kept", "changed", "tp-other"];
    Signals {
        base: names.iter().map(|n| krate(n, "1.0.0", &[])).collect(),
        head: names.iter().map(|n| krate(n, "1.0.1", &[("src/more.rs", "pub fn g() {}\n")])).collect(),
    }
}

fn serve_signals(w: &World) {
    let idx = |name: &str, v: &str, t: &str| w.reg.set_pubtime(name, v, t);
    let api = &w.api;
    // A patch published two hours before the head commit with alice's token; its twin, 90 days.
    idx("fresh-token", "1.0.1", "2026-07-19T22:00:00Z");
    api.publish("fresh-token", "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
    api.publish("fresh-token", "1.0.1", "2026-07-19T22:00:00Z", By::User("alice"));
    idx("routine", "1.0.1", "2026-04-21T00:00:00Z");
    api.publish("routine", "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
    api.publish("routine", "1.0.1", "2026-04-21T00:00:00Z", By::User("alice"));
    // Trusted publishing lost to a newcomer's token; its twin keeps the workflow.
    for (name, by) in [("tp-lost", By::User("mallory")), ("tp-kept", By::GitHub("o/tp-kept"))] {
        idx(name, "1.0.1", "2026-05-01T00:00:00Z");
        let repo = if name == "tp-lost" { "o/tp-lost" } else { "o/tp-kept" };
        api.publish(name, "1.0.0", "2026-01-10T00:00:00Z", By::GitHub(repo));
        api.publish(name, "1.0.1", "2026-05-01T00:00:00Z", by);
    }
    // Another user, who has published this crate before: changed, not new.
    api.publish("changed", "0.9.0", "2025-01-10T00:00:00Z", By::User("bob"));
    api.publish("changed", "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
    api.publish("changed", "1.0.1", "2026-05-01T00:00:00Z", By::User("bob"));
    // A workflow in another repository than the manifest's.
    api.publish("tp-other", "1.0.0", "2026-01-10T00:00:00Z", By::GitHub("evil/tp-other"));
    api.publish("tp-other", "1.0.1", "2026-05-01T00:00:00Z", By::GitHub("evil/tp-other"));
}

#[test]
fn each_signal_and_its_benign_twin() {
    let s = signals();
    let w = World::new(&s.base.iter().collect::<Vec<_>>(), &s.head.iter().collect::<Vec<_>>());
    serve_signals(&w);
    let doc = w.json(&[]);
    assert_eq!(doc["publication"]["as_of"], HEAD_DATE);
    assert_eq!(doc["publication"]["as_of_from"], "head-commit");
    assert_eq!(doc["publication"]["cooldown_days"], 7);
    assert_eq!(doc["publication"]["publisher_not_checked"], 0);
    let expect: &[(&str, &[&str])] = &[
        ("fresh-token", &["fresh"]),
        ("routine", &[]),
        ("tp-lost", &["trusted-publishing-lost", "publisher-new"]),
        ("tp-kept", &[]),
        ("changed", &["publisher-changed"]),
        ("tp-other", &["trusted-publishing-repository"]),
    ];
    for (name, want) in expect {
        assert_eq!(publication_codes(pkg(&doc, name)), *want, "{name}: {:#}", pkg(&doc, name));
    }
    let fresh = pkg(&doc, "fresh-token");
    assert_eq!(fresh["publication"]["released"]["age_seconds"], 7200);
    assert_eq!(fresh["publication"]["released"]["from"], "index");
    assert_eq!(fresh["publication"]["publisher"]["new"]["login"], "alice");
    assert_eq!(reasons(fresh), ["fresh", "fresh-token-patch"]);
    assert_eq!(pkg(&doc, "tp-kept")["publication"]["publisher"]["new"]["repository"], "o/tp-kept");
    // The fresh, token-published patch ranks above the routine upgrades.
    let order: Vec<&str> = doc["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    let at = |n: &str| order.iter().position(|x| *x == n).unwrap();
    assert!(at("fresh-token") < at("routine") && at("fresh-token") < at("tp-kept"), "{order:?}");
    assert!(pkg(&doc, "fresh-token")["risk"]["score"].as_u64() > pkg(&doc, "routine")["risk"]["score"].as_u64());

    // One request a crate, a second apart at least, each naming velaris.
    let reqs = w.api.requests();
    assert_eq!(reqs.len(), 6, "{reqs:?}");
    for pair in reqs.windows(2) {
        assert!(pair[1].1.duration_since(pair[0].1) >= Duration::from_millis(990), "requests closer than a second: {reqs:?}");
    }
    assert!(reqs.iter().all(|r| r.2.starts_with("velaris/") && r.2.contains("github.com/velaris/ratchet")), "{reqs:?}");

    // The cooldown gate names the age; the twin with a shorter cooldown passes.
    let gate = w.run(&["--fail-on", "fresh"]);
    assert_eq!(gate.status.code(), Some(1));
    let err = String::from_utf8_lossy(&gate.stderr);
    assert!(err.contains("--fail-on fresh") && err.contains("fresh-token 1.0.0 -> 1.0.1") && err.contains("published 2 hours before the head commit"), "{err}");
    assert!(!err.contains("routine"), "{err}");
    let short = w.run(&["--fail-on", "fresh", "--cooldown", "0"]);
    assert_eq!(short.status.code(), Some(0), "{}", String::from_utf8_lossy(&short.stderr));
    // A longer cooldown catches the 80-day-old routine release too.
    let long = w.json(&["--cooldown", "120"]);
    assert_eq!(publication_codes(pkg(&long, "routine")), ["fresh"]);
    // --as-of moves the reference time.
    let later = w.json(&["--as-of", "2026-08-01"]);
    assert_eq!(later["publication"]["as_of_from"], "as-of");
    assert!(publication_codes(pkg(&later, "fresh-token")).is_empty());

    // Every answer came from velaris' cache on these runs: no request since the first.
    assert_eq!(w.api.requests().len(), 6);
    assert_eq!(later["publication"]["api_requests"], 0);
    // Offline, the cache still answers.
    let offline = w.json(&["--offline"]);
    assert_eq!(publication_codes(pkg(&offline, "tp-lost")), ["trusted-publishing-lost", "publisher-new"]);

    // Markdown, human and SARIF carry the same signals.
    let md = String::from_utf8(w.run(&["--format", "markdown"]).stdout).unwrap();
    assert!(md.contains("#### Publication") && md.contains("Release ages against the head commit"), "{md}");
    assert!(md.contains("**fresh-token** 1.0.0 → 1.0.1: published 2 hours before by alice \\(API token\\)"), "{md}");
    assert!(md.contains("`trusted-publishing-lost`"), "{md}");
    let human = String::from_utf8(w.run(&[]).stdout).unwrap();
    assert!(human.contains("published 2 hours before by alice (API token)"), "{human}");
    let sarif: Value = serde_json::from_slice(&w.run(&["--format", "sarif"]).stdout).unwrap();
    schema::assert_valid_sarif(&sarif);
    let rules: Vec<&str> = sarif["runs"][0]["results"].as_array().unwrap().iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    for r in ["publication/fresh", "publication/trusted-publishing-lost", "publication/publisher-new", "publication/publisher-changed", "publication/trusted-publishing-repository"] {
        assert!(rules.contains(&r), "{r} not in {rules:?}");
    }
}

#[test]
fn a_crate_that_accepts_trusted_publishing_only_and_a_token_release() {
    let (b, h) = (krate("strict", "1.0.0", &[]), krate("strict", "1.0.1", &[]));
    let (b2, h2) = (krate("relaxed", "1.0.0", &[]), krate("relaxed", "1.0.1", &[]));
    let w = World::new(&[&b, &b2], &[&h, &h2]);
    for name in ["strict", "relaxed"] {
        w.api.publish(name, "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
        w.api.publish(name, "1.0.1", "2026-05-01T00:00:00Z", By::User("alice"));
    }
    w.api.trustpub_only("strict");
    let doc = w.json(&[]);
    assert_eq!(publication_codes(pkg(&doc, "strict")), ["trusted-publishing-lost"]);
    assert!(publication_codes(pkg(&doc, "relaxed")).is_empty());
    // No pubtime in the index: the release time is crates.io's.
    assert_eq!(pkg(&doc, "strict")["publication"]["released"]["from"], "api");
}

/// The review of `n` upgraded crates whose API answers fail as `fault` says (for the first).
fn failing(fault: Option<Fault>) -> (World, Value) {
    let (b1, h1, b2, h2) = (krate("one", "1.0.0", &[]), krate("one", "1.0.1", &[]), krate("two", "1.0.0", &[]), krate("two", "1.0.1", &[]));
    let w = World::new(&[&b1, &b2], &[&h1, &h2]);
    for name in ["one", "two"] {
        w.api.publish(name, "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
        w.api.publish(name, "1.0.1", "2026-05-01T00:00:00Z", By::User("mallory"));
    }
    if let Some(f) = fault {
        w.api.fault("one", f);
    }
    let doc = w.json(&[]);
    (w, doc)
}

fn publisher(doc: &Value, name: &str) -> (String, String) {
    let p = &pkg(doc, name)["publication"]["publisher"];
    (p["status"].as_str().unwrap().to_string(), p["reason"].as_str().unwrap_or("").to_string())
}

#[test]
fn rate_limited_unreachable_or_garbage_is_not_checked_per_package_and_nothing_is_lost() {
    // 429 with Retry-After: that crate and every later one is not checked; no more requests.
    let retry = Fault::Status { code: 429, headers: vec![("Retry-After".into(), "30".into())] };
    let (w, doc) = failing(Some(retry));
    assert_eq!(doc["packages"].as_array().unwrap().len(), 2, "the review is complete");
    for name in ["one", "two"] {
        let (status, why) = publisher(&doc, name);
        assert_eq!(status, "not-checked");
        assert!(why.contains("429, Retry-After: 30"), "{why}");
        assert!(publication_codes(pkg(&doc, name)).is_empty());
    }
    assert_eq!(w.api.requests().len(), 1, "nothing asked after a 429");
    assert_eq!(doc["publication"]["publisher_not_checked"], 2);

    // Garbage: that crate is not checked, the next one is.
    let (_, doc) = failing(Some(Fault::Garbage));
    assert!(publisher(&doc, "one").1.contains("not the documented JSON"), "{:?}", publisher(&doc, "one"));
    assert_eq!(publisher(&doc, "two").0, "checked");
    assert_eq!(publication_codes(pkg(&doc, "two")), ["publisher-new", "publisher-changed"]);

    // A server error: likewise, and said.
    let (_, doc) = failing(Some(Fault::Status { code: 503, headers: Vec::new() }));
    assert!(publisher(&doc, "one").1.contains("answered 503"));
    assert_eq!(publisher(&doc, "two").0, "checked");

    // The benign twin: no fault, both checked.
    let (_, doc) = failing(None);
    assert_eq!((publisher(&doc, "one").0, publisher(&doc, "two").0), ("checked".to_string(), "checked".to_string()));

    // Nothing listening: every package says so, and the markdown names each one.
    let (b, h) = (krate("one", "1.0.0", &[]), krate("one", "1.0.1", &[]));
    let w = World::new(&[&b], &[&h]);
    let mut c = registry_double::velaris_command(w.repo.path(), w.home.path(), w.cache.path());
    git_env(&mut c, w.home.path(), HEAD_DATE);
    let o = c.args(["deps-diff", "HEAD~1..HEAD", "--no-capabilities", "--format", "markdown"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.contains("Publisher not checked for **one** 1.0.0 → 1.0.1: crates.io's API is unreachable"), "{md}");
    // Offline with nothing cached: not checked, and said why.
    let doc = w.json(&["--offline"]);
    assert!(publisher(&doc, "one").1.contains("offline"), "{:?}", publisher(&doc, "one"));
    // Not asked at all.
    let doc = w.json(&["--no-publisher"]);
    assert_eq!(publisher(&doc, "one"), ("not-checked".to_string(), "not asked (--no-publisher)".to_string()));
}

#[test]
fn a_slow_api_is_not_checked_within_the_time_limit() {
    use velaris::depsdiff::{self, Input, publish};
    use velaris::registry::api::ApiOptions;
    let (b, h) = (krate("one", "1.0.0", &[]), krate("one", "1.0.1", &[]));
    let w = World::new(&[&b], &[&h]);
    w.api.publish("one", "1.0.0", "2026-01-10T00:00:00Z", By::User("alice"));
    w.api.publish("one", "1.0.1", "2026-05-01T00:00:00Z", By::User("alice"));
    w.api.fault("one", Fault::Slow(Duration::from_secs(5)));
    let env = [("CARGO_HOME".to_string(), w.home.path().display().to_string())].into_iter().collect();
    let api = ApiOptions { base_url: w.api.url(), timeout: Duration::from_millis(500), use_env_proxy: false, ..ApiOptions::default() };
    let config = depsdiff::Config {
        input: Input::Git { base: "HEAD~1".into(), head: Some("HEAD".into()), lockfiles: Vec::new() },
        cwd: w.repo.path().to_path_buf(),
        fetch: velaris::registry::FetchOptions { cache_dir: Some(w.cache.path().to_path_buf()), env: Some(env), use_env_proxy: false, ..Default::default() },
        diff: Default::default(),
        targets: vec!["x86_64-unknown-linux-gnu".into()],
        all_targets: false,
        capabilities: false,
        advisory_db: None,
        publication: publish::Options { api: Some(api), ..publish::Options::default() },
    };
    let started = std::time::Instant::now();
    let report = depsdiff::run(&config).unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "the request was not cut at its limit");
    assert_eq!(report.packages.len(), 1);
    match &report.packages[0].publication.publisher {
        Some(publish::PublisherCheck::NotChecked(why)) => assert!(why.contains("did not answer within 0.5 s"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn verify_source_lists_files_only_in_the_package() {
    // The repository the packages name, at one commit.
    let home = tempfile::tempdir().unwrap();
    let upstream = tempfile::tempdir().unwrap();
    let u = upstream.path();
    let g = |args: &[&str]| git(u, home.path(), HEAD_DATE, args);
    g(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(u.join("crates/honest/src")).unwrap();
    std::fs::create_dir_all(u.join("crates/tarball/src")).unwrap();
    let lib = "pub fn f() -> u32 { 1 }\n";
    let manifest = |name: &str| format!("[package]\nname = \"{name}\"\nversion = \"1.0.1\"\nedition = \"2021\"\nrepository = \"file://{}\"\n", u.display());
    for name in ["honest", "tarball"] {
        std::fs::write(u.join(format!("crates/{name}/Cargo.toml")), manifest(name)).unwrap();
        std::fs::write(u.join(format!("crates/{name}/src/lib.rs")), lib).unwrap();
    }
    std::fs::write(u.join("README.md"), "readme\n").unwrap();
    g(&["add", "-A"]);
    g(&["commit", "-q", "-m", "release"]);
    let commit = g(&["rev-parse", "HEAD"]);
    let published = |name: &'static str, extra: &[(&str, &str)]| {
        let vcs = format!("{{\"git\": {{\"sha1\": \"{commit}\"}}, \"path_in_vcs\": \"crates/{name}\"}}");
        let orig = manifest(name);
        let normalized = format!("{orig}# normalized\n");
        let mut files = vec![
            ("Cargo.toml", normalized.as_str()),
            ("Cargo.toml.orig", orig.as_str()),
            (".cargo_vcs_info.json", vcs.as_str()),
            ("src/lib.rs", lib),
            ("README.md", "readme\n"),
        ];
        files.extend_from_slice(extra);
        Krate { name, version: "1.0.1", bytes: archives::crate_bytes(name, "1.0.1", &files) }
    };
    let honest = published("honest", &[]);
    let tarball = published("tarball", &[("src/payload.rs", "pub fn steal() {}\n")]);
    let (b1, b2) = (krate("honest", "1.0.0", &[]), krate("tarball", "1.0.0", &[]));
    let w = World::new(&[&b1, &b2], &[&honest, &tarball]);
    let doc = w.json(&["--verify-source", "--no-publisher"]);
    let h = &pkg(&doc, "honest")["publication"]["source"];
    assert_eq!(h["status"], "matched", "{h:#}");
    assert_eq!(h["files"], 3);
    assert!(publication_codes(pkg(&doc, "honest")).is_empty());
    let t = pkg(&doc, "tarball");
    assert_eq!(t["publication"]["source"]["status"], "unmatched");
    assert_eq!(t["publication"]["source"]["only_in_package"], serde_json::json!(["src/payload.rs"]));
    assert_eq!(publication_codes(t), ["files-not-in-repository"]);
    assert!(reasons(t).contains(&"files-not-in-repository"));
    // Without the flag, nothing is fetched and nothing said.
    assert!(pkg(&w.json(&["--no-publisher"]), "tarball")["publication"]["source"].is_null());
    // A commit the repository does not have.
    let ghost = {
        let vcs = format!("{{\"git\": {{\"sha1\": \"{}\"}}, \"path_in_vcs\": \"crates/ghost\"}}", "1".repeat(40));
        let m = manifest("ghost").replace("1.0.1", "1.0.1");
        Krate { name: "ghost", version: "1.0.1", bytes: archives::crate_bytes("ghost", "1.0.1", &[("Cargo.toml", &m), (".cargo_vcs_info.json", &vcs), ("src/lib.rs", lib)]) }
    };
    let b = krate("ghost", "1.0.0", &[]);
    let w = World::new(&[&b], &[&ghost]);
    let doc = w.json(&["--verify-source", "--no-publisher"]);
    assert_eq!(publication_codes(pkg(&doc, "ghost")), ["vcs-commit-not-found"]);
}
