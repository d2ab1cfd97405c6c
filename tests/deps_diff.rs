//! End-to-end tests of `velaris deps-diff`: the real binary against a registry double on
//! 127.0.0.1, with a temporary CARGO_HOME whose config replaces crates.io with it.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/schema.rs"]
mod schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use registry_double::{RegistryDouble, cargo_home_replacing_crates_io, place_in_cargo_cache, sha256_hex};
use serde_json::Value;

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// One published package: name, version, `.crate` bytes.
struct Pub {
    name: &'static str,
    version: &'static str,
    bytes: Vec<u8>,
}

fn publish(name: &'static str, version: &'static str, files: &[(&str, &str)]) -> Pub {
    Pub { name, version, bytes: archives::crate_bytes(name, version, files) }
}

/// A test world: the registry double, a CARGO_HOME pointing at it, a work directory and an
/// empty velaris cache.
struct World {
    reg: RegistryDouble,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let reg = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&reg.index_url());
        World { reg, home, work: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() }
    }

    fn serve(&self, pubs: &[&Pub]) {
        for p in pubs {
            self.reg.add_crate(p.name, p.version, &p.bytes);
        }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.work.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn cmd(&self) -> Command {
        let mut c = registry_double::velaris_command(self.work.path(), self.home.path(), self.cache.path());
        c.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        Run(self.cmd().args(args).output().unwrap())
    }

    fn files_diff(&self, old: &str, new: &str, extra: &[&str]) -> Run {
        self.write("old.lock", old);
        self.write("new.lock", new);
        let mut args = vec!["deps-diff", "--old", "old.lock", "--new", "new.lock"];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn git(&self, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.work.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn cached_files(&self) -> Vec<PathBuf> {
        walk(self.cache.path())
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
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
    /// The JSON document, checked against docs/deps-diff-v2.schema.json.
    fn json(&self) -> Value {
        assert_eq!(self.code(), 0, "stderr: {}", self.stderr());
        let doc: Value = serde_json::from_str(&self.stdout()).unwrap_or_else(|e| panic!("{e}: {}", self.stdout()));
        schema::assert_valid_v2(&doc);
        doc
    }
    fn expect(&self, code: i32) -> &Self {
        assert_eq!(self.code(), code, "stdout: {}\nstderr: {}", self.stdout(), self.stderr());
        self
    }
}

/// A v3 lockfile with a root package depending on the given registry packages, plus extra
/// raw entries.
fn lockfile(version: u32, pubs: &[&Pub], extra: &str) -> String {
    let mut s = format!("# generated\nversion = {version}\n\n");
    s.push_str("[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n\n");
    for p in pubs {
        s.push_str(&format!(
            "[[package]]\nname = \"{}\"\nversion = \"{}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n\n",
            p.name,
            p.version,
            sha256_hex(&p.bytes)
        ));
    }
    s.push_str(extra);
    s
}

fn pkg<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {doc:#}"))
}

fn lib(n: usize) -> String {
    (0..n).map(|i| format!("pub fn f{i}() -> u32 {{ {i} }}\n")).collect()
}

fn fixture_set() -> (Vec<Pub>, Vec<Pub>) {
    let l3 = lib(3);
    let l5 = lib(5);
    let old = vec![
        publish("up", "1.0.0", &[("Cargo.toml", "[package]\n"), ("src/lib.rs", &l3)]),
        publish("down", "2.1.0", &[("src/lib.rs", &l5)]),
        publish("gone", "0.1.0", &[("src/lib.rs", &l3)]),
        publish("moves", "1.0.0", &[("src/lib.rs", &l3)]),
    ];
    let new = vec![
        publish(
            "up",
            "1.1.0",
            &[("Cargo.toml", "[package]\nname = \"up\"\n"), ("Cargo.toml.orig", "[package]\n"), ("src/lib.rs", &l5), ("src/new.rs", "// new\n")],
        ),
        publish("down", "2.0.0", &[("src/lib.rs", &l3)]),
        publish("fresh", "0.3.0", &[("src/lib.rs", &l5), ("README.md", "hello\n")]),
    ];
    (old, new)
}

#[test]
fn every_change_kind_is_classified_and_counted() {
    let w = World::new();
    let (old, new) = fixture_set();
    w.serve(&old.iter().chain(&new).collect::<Vec<_>>());
    let git_moves = "[[package]]\nname = \"moves\"\nversion = \"1.0.0\"\nsource = \"git+file:///nonexistent/velaris-test/moves?branch=main#0123456789abcdef0123456789abcdef01234567\"\n";
    let old_lock = lockfile(3, &old.iter().collect::<Vec<_>>(), "");
    let new_lock = lockfile(3, &new.iter().collect::<Vec<_>>(), git_moves);
    let doc = w.files_diff(&old_lock, &new_lock, &["--format", "json"]).json();

    assert_eq!(doc["schema"], "velaris/deps-diff/v2");
    let changes: Vec<(String, String)> = doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p["change"].as_str().unwrap().to_string()))
        .collect();
    // v2 lists packages in review order; the source change (an integrity matter) comes first.
    assert_eq!(changes[0].0, "moves");
    let mut changes = changes;
    changes.sort();
    let expect = [
        ("down", "downgraded"),
        ("fresh", "added"),
        ("gone", "removed"),
        ("moves", "source-changed"),
        ("up", "upgraded"),
    ];
    assert_eq!(changes, expect.map(|(a, b)| (a.to_string(), b.to_string())).to_vec());

    let up = pkg(&doc, "up");
    assert_eq!(up["semver"], "minor");
    assert_eq!(up["breaking"], false);
    assert_eq!(up["old"]["verified"], true);
    assert_eq!(up["new"]["verified"], true);
    assert_eq!(up["old"]["origin"], "network");
    assert_eq!(up["new"]["checksum"], sha256_hex(&new[0].bytes));
    // src/lib.rs: 3 -> 5 functions is +2; src/new.rs +1; Cargo.toml.orig +1 counts;
    // the normalized Cargo.toml is packaging and does not.
    assert_eq!(up["files"]["added"], 2);
    assert_eq!(up["files"]["modified"], 2);
    assert_eq!(up["audit_lines"], 4, "{up:#}");

    let fresh = pkg(&doc, "fresh");
    assert_eq!(fresh["old"], Value::Null);
    assert_eq!(fresh["lines"]["added"], 6, "an added package counts all its lines");
    assert_eq!(fresh["audit_lines"], 6);

    let down = pkg(&doc, "down");
    assert_eq!(down["semver"], "minor");
    assert_eq!(down["lines"]["removed"], 2);

    let gone = pkg(&doc, "gone");
    assert_eq!(gone["new"], Value::Null);
    assert_eq!(gone["audit_lines"], 0, "nothing to review in a removal");

    let moves = pkg(&doc, "moves");
    assert_eq!(moves["new"]["verified"], false);
    assert!(moves["new"]["unverifiable"].as_str().unwrap().contains("git"));
    assert_eq!(moves["audit_lines"], Value::Null, "a git side cannot be compared");

    assert_eq!(doc["totals"]["packages"], 5);
    assert_eq!(doc["totals"]["audit_lines"], 4 + 6 + 2);
    assert_eq!(doc["totals"]["unverifiable"], 1);
}

#[test]
fn human_and_markdown_renderings() {
    let w = World::new();
    let (old, new) = fixture_set();
    w.serve(&old.iter().chain(&new).collect::<Vec<_>>());
    let old_lock = lockfile(3, &old.iter().collect::<Vec<_>>(), "");
    let new_lock = lockfile(3, &new.iter().collect::<Vec<_>>(), "");
    // Two files have no head commit: release ages are measured against a fixed time.
    let human = w.files_diff(&old_lock, &new_lock, &["--files", "--as-of", "2026-01-01"]);
    human.expect(0);
    insta::assert_snapshot!("human_files", human.stdout());
    let stat = w.files_diff(&old_lock, &new_lock, &["--stat"]);
    let stat = stat.expect(0).stdout();
    assert!(!stat.contains("src/lib.rs"), "--stat lists no files: {stat}");
    let diff = w.files_diff(&old_lock, &new_lock, &["--diff"]);
    let diff = diff.expect(0).stdout();
    assert!(diff.contains("+++ b/src/new.rs"), "{diff}");
    assert!(diff.contains("+pub fn f4() -> u32 { 4 }"), "{diff}");
    let md = w.files_diff(&old_lock, &new_lock, &["--format", "markdown", "--diff", "--as-of", "2026-01-01"]);
    insta::assert_snapshot!("markdown_diff", md.expect(0).stdout());
}

#[test]
fn lockfile_formats_v1_to_v4_give_the_same_changes() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "a\nb\n")]);
    w.serve(&[&a1, &a2]);
    let v1 = |p: &Pub| {
        format!(
            "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"{n} {v} ({CRATES_IO})\",\n]\n\n\
             [[package]]\nname = \"{n}\"\nversion = \"{v}\"\nsource = \"{CRATES_IO}\"\n\n\
             [metadata]\n\"checksum {n} {v} ({CRATES_IO})\" = \"{sum}\"\n",
            n = p.name,
            v = p.version,
            sum = sha256_hex(&p.bytes)
        )
    };
    let v2 = |p: &Pub| {
        format!(
            "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"{n}\",\n]\n\n\
             [[package]]\nname = \"{n}\"\nversion = \"{v}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{sum}\"\n",
            n = p.name,
            v = p.version,
            sum = sha256_hex(&p.bytes)
        )
    };
    let mut seen = Vec::new();
    for (label, old, new) in [
        ("v1", v1(&a1), v1(&a2)),
        ("v2", v2(&a1), v2(&a2)),
        ("v3", lockfile(3, &[&a1], ""), lockfile(3, &[&a2], "")),
        ("v4", lockfile(4, &[&a1], ""), lockfile(4, &[&a2], "")),
    ] {
        let doc = w.files_diff(&old, &new, &["--format", "json"]).json();
        let a = pkg(&doc, "alpha");
        assert_eq!(a["change"], "upgraded", "{label}");
        assert_eq!(a["old"]["verified"], true, "{label}: v1 checksums come from [metadata]");
        assert_eq!(a["new"]["verified"], true, "{label}");
        assert_eq!(a["lines"]["added"], 1, "{label}");
        seen.push(a["audit_lines"].clone());
    }
    assert!(seen.iter().all(|s| *s == seen[0]));
}

#[test]
fn malformed_lockfile_points_at_the_line() {
    let w = World::new();
    let good = lockfile(3, &[], "");
    let bad = "version = 3\n\n[[package]]\nname = \"x\"\nversion = \"not-a-version\"\n";
    let r = w.files_diff(&good, bad, &[]);
    r.expect(2);
    assert!(r.stderr().contains("new.lock:5:11: package \"x\": invalid version"), "{}", r.stderr());
    let broken = "version = 3\n[[package]\n";
    let r = w.files_diff(&good, broken, &[]);
    r.expect(2);
    assert!(r.stderr().contains("new.lock:2:"), "{}", r.stderr());
}

#[test]
fn git_revisions_and_work_tree() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.2.0", &[("src/lib.rs", "a\nb\n")]);
    let a3 = publish("alpha", "2.0.0", &[("src/lib.rs", "c\n")]);
    w.serve(&[&a1, &a2, &a3]);
    w.git(&["init", "-q", "-b", "main"]);
    w.write("Cargo.lock", &lockfile(3, &[&a1], ""));
    w.git(&["add", "Cargo.lock"]);
    w.git(&["commit", "-q", "-m", "one"]);
    w.write("Cargo.lock", &lockfile(3, &[&a2], ""));
    w.git(&["commit", "-q", "-am", "two"]);

    let doc = w.run(&["deps-diff", "HEAD~1..HEAD", "--format", "json"]).json();
    assert_eq!(doc["base"], "HEAD~1");
    assert_eq!(doc["lockfiles"], serde_json::json!(["Cargo.lock"]));
    assert_eq!(pkg(&doc, "alpha")["new"]["version"], "1.2.0");

    // A single revision compares with the work tree.
    w.write("Cargo.lock", &lockfile(3, &[&a3], ""));
    let doc = w.run(&["deps-diff", "HEAD", "--format", "json"]).json();
    assert_eq!(doc["head"], "work tree");
    let a = pkg(&doc, "alpha");
    assert_eq!((a["old"]["version"].as_str(), a["new"]["version"].as_str()), (Some("1.2.0"), Some("2.0.0")));
    assert_eq!(a["semver"], "major");
    assert_eq!(a["breaking"], true);

    let r = w.run(&["deps-diff", "no-such-rev..HEAD"]);
    r.expect(2);
    assert!(r.stderr().contains("unknown revision \"no-such-rev\""), "{}", r.stderr());
}

#[test]
fn every_changed_lockfile_by_default_or_the_one_named() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    let b1 = publish("beta", "0.1.0", &[("src/lib.rs", "x\n")]);
    let b2 = publish("beta", "0.2.0", &[("src/lib.rs", "y\n")]);
    w.serve(&[&a1, &a2, &b1, &b2]);
    w.git(&["init", "-q", "-b", "main"]);
    w.write("Cargo.lock", &lockfile(3, &[&a1], ""));
    w.write("tools/gen/Cargo.lock", &lockfile(3, &[&b1, &a1], ""));
    w.write("untouched/Cargo.lock", &lockfile(3, &[&a1], ""));
    w.git(&["add", "."]);
    w.git(&["commit", "-q", "-m", "one"]);
    w.write("Cargo.lock", &lockfile(3, &[&a2], ""));
    w.write("tools/gen/Cargo.lock", &lockfile(3, &[&b2, &a2], ""));
    w.git(&["commit", "-q", "-am", "two"]);

    let doc = w.run(&["deps-diff", "HEAD~1..HEAD", "--format", "json"]).json();
    assert_eq!(doc["lockfiles"], serde_json::json!(["Cargo.lock", "tools/gen/Cargo.lock"]));
    let alpha = pkg(&doc, "alpha");
    assert_eq!(alpha["lockfiles"], serde_json::json!(["Cargo.lock", "tools/gen/Cargo.lock"]), "one change, two lockfiles");
    assert_eq!(doc["totals"]["packages"], 2);

    let doc = w.run(&["deps-diff", "HEAD~1..HEAD", "--lockfile", "tools/gen/Cargo.lock", "--format", "json"]).json();
    assert_eq!(doc["lockfiles"], serde_json::json!(["tools/gen/Cargo.lock"]));
    assert_eq!(pkg(&doc, "beta")["semver"], "major");
}

#[test]
fn cargo_cache_is_used_first_and_checked() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    w.serve(&[&a1, &a2]);
    let index = w.reg.index_url();
    place_in_cargo_cache(w.home.path(), &index, "alpha", "1.0.0", &a1.bytes);
    place_in_cargo_cache(w.home.path(), &index, "alpha", "1.0.1", &a2.bytes);
    let (old, new) = (lockfile(3, &[&a1], ""), lockfile(3, &[&a2], ""));
    let doc = w.files_diff(&old, &new, &["--format", "json"]).json();
    assert_eq!(pkg(&doc, "alpha")["old"]["origin"], "cargo-cache");
    assert!(w.reg.requests().iter().all(|r| !r.contains("/dl/")), "{:?}", w.reg.requests());

    // A tampered file in cargo's cache is an integrity failure, not a cue to download.
    let path = place_in_cargo_cache(w.home.path(), &index, "alpha", "1.0.1", b"not the published bytes");
    let r = w.files_diff(&old, &new, &[]);
    r.expect(3);
    let err = r.stderr();
    assert!(err.contains("alpha") && err.contains("1.0.1"), "{err}");
    assert!(err.contains(&sha256_hex(&a2.bytes)), "names the expected digest: {err}");
    assert!(err.contains(&sha256_hex(b"not the published bytes")), "names the actual digest: {err}");
    assert!(err.contains(&path.display().to_string()), "names where the bytes came from: {err}");
    assert_eq!(w.reg.count("/dl/alpha/1.0.1/download"), 0, "no fallback to the network");
}

#[test]
fn tampered_download_fails_with_3_and_is_not_cached() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    w.serve(&[&a1, &a2]);
    w.reg.tamper("alpha", "1.0.1", &archives::crate_bytes("alpha", "1.0.1", &[("src/lib.rs", "evil\n")]));
    let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &["--format", "json"]);
    r.expect(3);
    assert!(r.stdout().is_empty(), "no report on an integrity failure");
    assert!(r.stderr().contains("/dl/alpha/1.0.1/download"), "names the URL: {}", r.stderr());
    assert!(w.cached_files().is_empty(), "nothing cached: {:?}", w.cached_files());
}

#[test]
fn hostile_archives_are_rejected_without_writing() {
    use archives::Hostile;
    // Size rules need limits too large to reach quickly at their real values; the package
    // tests cover them with small limits, and `gzip_bomb_is_stopped` below with real ones.
    let kinds: Vec<(Hostile, &str)> =
        Hostile::ALL.iter().filter(|k| !k.needs_small_limits()).map(|&k| (k, k.expected_rule())).collect();
    assert!(kinds.len() >= 15);
    for (kind, rule) in kinds {
        let w = World::new();
        let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
        let bytes = archives::hostile(kind, "alpha", "1.0.1");
        let a2 = Pub { name: "alpha", version: "1.0.1", bytes };
        w.serve(&[&a1, &a2]);
        let before = walk(w.work.path());
        let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &[]);
        r.expect(3);
        assert!(r.stderr().contains(rule), "{rule}: {}", r.stderr());
        assert!(r.stderr().contains("alpha 1.0.1"), "{rule}: {}", r.stderr());
        let after = walk(w.work.path());
        assert_eq!(after.len(), before.len() + 2, "{rule}: only the two lockfiles were written");
        assert!(w.cached_files().is_empty(), "{rule}: a rejected archive is not cached: {:?}", w.cached_files());
    }
}

#[test]
fn server_errors_are_retried() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    w.serve(&[&a1, &a2]);
    let path = RegistryDouble::default_dl_path("alpha", "1.0.1");
    w.reg.fail_next(&path, 2, 503);
    let doc = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &["--format", "json"]).json();
    assert_eq!(pkg(&doc, "alpha")["new"]["verified"], true);
    assert_eq!(w.reg.count(&path), 3);
}

#[test]
fn not_found_is_reported_plainly() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    w.serve(&[&a1]);
    let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &[]);
    r.expect(2);
    assert!(r.stderr().contains("alpha") && r.stderr().contains("1.0.1"), "{}", r.stderr());
    assert_eq!(w.reg.count(&RegistryDouble::default_dl_path("alpha", "1.0.1")), 1, "a 404 is not retried");
}

#[test]
fn offline_uses_caches_and_names_what_is_missing() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "b\n")]);
    let b1 = publish("beta", "0.1.0", &[("src/lib.rs", "x\n")]);
    w.serve(&[&a1, &a2, &b1]);
    let (old, new) = (lockfile(3, &[&a1], ""), lockfile(3, &[&a2, &b1], ""));
    let r = w.files_diff(&old, &new, &["--offline"]);
    r.expect(2);
    for needle in ["alpha 1.0.0", "alpha 1.0.1", "beta 0.1.0", "offline"] {
        assert!(r.stderr().contains(needle), "{needle}: {}", r.stderr());
    }
    assert!(w.reg.requests().is_empty(), "offline means no request at all");

    // Online once fills velaris' cache; offline then works with no request.
    w.files_diff(&old, &new, &[]).expect(0);
    let n = w.reg.requests().len();
    assert_eq!(w.cached_files().len(), 3);
    let doc = w.files_diff(&old, &new, &["--offline", "--format", "json"]).json();
    assert_eq!(pkg(&doc, "beta")["new"]["origin"], "velaris-cache");
    assert_eq!(w.reg.requests().len(), n);
}

#[test]
fn package_text_is_escaped_before_the_terminal() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "a\n// \u{1b}[2J\u{202e}hidden\n"), ("src/\u{202e}x\u{E0041}.rs", "x\n")]);
    w.serve(&[&a1, &a2]);
    let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &["--diff", "--color", "always"]);
    let out = r.expect(0).stdout();
    assert!(out.contains("\\u{1b}[2J\\u{202e}hidden"), "{out}");
    assert!(out.contains("src/\\u{202e}x\\u{e0041}.rs"), "{out}");
    assert!(!out.contains("\u{202e}") && !out.contains("\u{E0041}"), "raw format characters leaked");
    let md = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &["--format", "markdown"]);
    assert!(!md.expect(0).stdout().contains('\u{1b}'));

    // A control character in a file name (a newline could forge diff lines) is refused.
    let w = World::new();
    let a3 = publish("alpha", "1.0.2", &[("src/lib.rs", "a\n"), ("src/x\n+++ b/y.rs", "x\n")]);
    w.serve(&[&a1, &a3]);
    let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a3], ""), &["--diff"]);
    r.expect(3);
    assert!(r.stderr().contains("bad-name"), "{}", r.stderr());
}

#[test]
fn a_nul_byte_does_not_hide_rust_code_from_the_audit() {
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "a\n"), ("src/evil.rs", "// \0\nfn steal() {}\n"), ("logo.bin", "\0\0")]);
    w.serve(&[&a1, &a2]);
    let doc = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &["--format", "json"]).json();
    let a = pkg(&doc, "alpha");
    assert_eq!(a["audit_lines"], 2, "{a:#}");
    assert_eq!(a["files"]["binary"], 1, "only the non-Rust file is binary");
}

#[test]
fn other_bytes_under_one_version_are_fetched_and_shown() {
    let w = World::new();
    let real = publish("dd", "1.0.0", &[("src/lib.rs", "a\n")]);
    let other = publish("dd", "1.0.0", &[("src/lib.rs", "a\n"), ("build.rs", "fn main() {}\n")]);
    // One registry can serve one set of bytes per version: serve the second as the tampered
    // copy, so fetching it fails its lockfile digest and the run stops with 3.
    w.serve(&[&real]);
    w.reg.tamper("dd", "1.0.0", &other.bytes);
    let r = w.files_diff(&lockfile(3, &[&real], ""), &lockfile(3, &[&other], ""), &[]);
    r.expect(3);
    assert!(r.stderr().contains("dd 1.0.0"), "{}", r.stderr());
    // With both sets of bytes in velaris' content-addressed cache, both verify and the
    // change is shown as what it is.
    let w = World::new();
    for p in [&real, &other] {
        let hex = sha256_hex(&p.bytes);
        let dir = w.cache.path().join("crates/sha256").join(&hex[..2]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{hex}.crate")), &p.bytes).unwrap();
    }
    let doc = w.files_diff(&lockfile(3, &[&real], ""), &lockfile(3, &[&other], ""), &["--offline", "--format", "json"]).json();
    let d = pkg(&doc, "dd");
    assert_eq!(d["change"], "checksum-changed");
    assert_eq!(d["old"]["verified"], true);
    assert_eq!(d["new"]["verified"], true);
    assert_eq!(d["file_changes"][0]["path"], "build.rs");
}

#[test]
fn usage_errors_exit_2() {
    let w = World::new();
    w.run(&["deps-diff", "--old", "x.lock"]).expect(2);
    w.run(&["deps-diff", "a...b"]).expect(2);
    let r = w.run(&["deps-diff", "HEAD"]);
    r.expect(2);
    assert!(r.stderr().contains("not inside a git repository"), "{}", r.stderr());
    let r = w.run(&["deps-diff", "--old", "missing.lock", "--new", "missing2.lock"]);
    r.expect(2);
    assert!(r.stderr().contains("missing.lock"), "{}", r.stderr());
}

/// A real gzip bomb against the real limits: six 100 MiB files of zeros compress to well under
/// a megabyte and unpack past max(512 MiB, 20 x compressed).
#[test]
fn gzip_bomb_is_stopped_at_the_real_limit() {
    use std::io::Read;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    {
        let mut b = tar::Builder::new(&mut gz);
        for i in 0..6 {
            let mut h = tar::Header::new_gnu();
            h.set_size(100 << 20);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            let zeros = std::io::repeat(0).take(100 << 20);
            b.append_data(&mut h, format!("alpha-1.0.1/src/z{i}.rs"), zeros).unwrap();
        }
        b.finish().unwrap();
    }
    let bytes = gz.finish().unwrap();
    assert!(bytes.len() < (600 << 20) / 20, "the bomb must beat the 20x ratio");
    let w = World::new();
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n")]);
    let a2 = Pub { name: "alpha", version: "1.0.1", bytes };
    w.serve(&[&a1, &a2]);
    let r = w.files_diff(&lockfile(3, &[&a1], ""), &lockfile(3, &[&a2], ""), &[]);
    r.expect(3);
    assert!(r.stderr().contains("too-large"), "{}", r.stderr());
    assert!(w.cached_files().is_empty());
}

#[test]
fn a_file_too_large_to_diff_is_shown_with_its_digests_and_its_twin_is_diffed() {
    // One line of 9 MiB changed in one byte (past the 8 MiB limit of a file diff), and a
    // shorter one changed the same way.
    let w = World::new();
    let big_old = "a".repeat(9 << 20);
    let mut big_new = big_old.clone();
    big_new.replace_range(4096..4097, "b");
    let small_old = "a".repeat(2000);
    let mut small_new = small_old.clone();
    small_new.replace_range(1000..1001, "b");
    let a1 = publish("alpha", "1.0.0", &[("src/lib.rs", "a\n"), ("data/big.txt", &big_old), ("data/small.txt", &small_old)]);
    let a2 = publish("alpha", "1.0.1", &[("src/lib.rs", "a\n"), ("data/big.txt", &big_new), ("data/small.txt", &small_new)]);
    w.serve(&[&a1, &a2]);
    let (old, new) = (lockfile(3, &[&a1], ""), lockfile(3, &[&a2], ""));
    let doc = w.files_diff(&old, &new, &["--format", "json", "--diff"]).json();
    let files = pkg(&doc, "alpha")["file_changes"].as_array().unwrap().clone();
    let big = files.iter().find(|f| f["path"] == "data/big.txt").unwrap();
    assert_eq!(big["too_large"]["reason"], "larger than the 8,388,608-byte limit of a file diff");
    assert_eq!(big["too_large"]["old"]["bytes"], 9 << 20);
    assert_eq!(big["too_large"]["old"]["sha256"], sha256_hex(big_old.as_bytes()));
    assert_eq!(big["too_large"]["new"]["sha256"], sha256_hex(big_new.as_bytes()));
    assert_eq!(big["lines"]["added"], 1);
    assert_eq!(big["lines"]["removed"], 1);
    assert!(big.get("patch").is_none(), "{big}");
    let small = files.iter().find(|f| f["path"] == "data/small.txt").unwrap();
    assert!(small.get("too_large").is_none(), "{small}");
    assert!(small["patch"].as_str().unwrap().starts_with("--- a/data/small.txt\n+++ b/data/small.txt\n@@ -1 +1 @@\n"));

    let human = w.files_diff(&old, &new, &["--diff"]).expect(0).stdout();
    assert!(human.contains("data/big.txt (too large to diff: every line counted)"), "{human}");
    assert!(human.contains(&format!("  new: 9,437,184 bytes, sha256 {}", sha256_hex(big_new.as_bytes()))), "{human}");
    assert!(human.contains("1 file too large to diff"), "{human}");
    let md = w.files_diff(&old, &new, &["--format", "markdown", "--diff"]).expect(0).stdout();
    assert!(md.contains(&format!("sha256 `{}`", sha256_hex(big_old.as_bytes()))), "{md}");
}
