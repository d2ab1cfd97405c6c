//! action.yml: parsed (serde_norway), checked for what the runner and zizmor cannot see (every
//! input declared is used and every input used is declared, inputs reach scripts through `env:`
//! only, every script runs under `bash --noprofile --norc`), and its composite steps run as the
//! runner runs them: each `run:` written to a file and started with the step's `shell`, its
//! `env:` expressions evaluated, `GITHUB_OUTPUT` read back between steps. `uses:` steps (the
//! cache) are not run. The install step is run against a release double on 127.0.0.1, with a
//! manifest written by .github/release/update-manifest.sh, and with a stand-in `cargo` that
//! records its arguments (building velaris inside a test would take minutes).
#![cfg(unix)]

#[path = "support/github_double.rs"]
mod github_double;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use github_double::GithubDouble;
use serde_norway::Value;

const TOKEN: &str = "ghs_CompositeSecret42";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn action() -> Value {
    serde_norway::from_str(&std::fs::read_to_string(root().join("action.yml")).unwrap()).unwrap()
}

fn steps(a: &Value) -> Vec<Value> {
    a["runs"]["steps"].as_sequence().unwrap().clone()
}

fn str_of(v: &Value) -> Option<&str> {
    v.as_str()
}

/// Every `${{ ... }}` expression in a string.
fn expressions(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("${{") {
        let end = rest[i..].find("}}").map(|e| i + e).expect("closed expression");
        out.push(rest[i + 3..end].trim().to_string());
        rest = &rest[end + 2..];
    }
    out
}

/// Every string in a YAML value, with the path to it.
fn strings(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path.to_string(), s.clone())),
        Value::Sequence(s) => {
            for (i, x) in s.iter().enumerate() {
                strings(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Mapping(m) => {
            for (k, x) in m {
                strings(x, &format!("{path}.{}", k.as_str().unwrap_or("?")), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_input_declared_is_used_and_every_input_used_is_declared() {
    let a = action();
    let declared: BTreeSet<String> = a["inputs"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap().to_string()).collect();
    let mut all = Vec::new();
    strings(&a["runs"], "runs", &mut all);
    strings(&a["outputs"], "outputs", &mut all);
    let mut used = BTreeSet::new();
    for (_, s) in &all {
        for e in expressions(s) {
            for word in e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')) {
                if let Some(name) = word.strip_prefix("inputs.") {
                    used.insert(name.to_string());
                }
            }
        }
    }
    assert_eq!(declared, used, "declared inputs vs inputs used");
    assert!(declared.len() >= 10, "{declared:?}");
    // Each declared input has a description and a default; `token` defaults to the workflow's.
    for (k, v) in a["inputs"].as_mapping().unwrap() {
        assert!(v["description"].as_str().is_some_and(|d| !d.is_empty()), "{k:?}");
        assert!(v.get("default").is_some(), "{k:?} has no default");
    }
    assert_eq!(a["inputs"]["token"]["default"].as_str(), Some("${{ github.token }}"));
}

#[test]
fn inputs_reach_scripts_through_env_only_and_outputs_come_from_velaris() {
    let a = action();
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    let mut ids = BTreeSet::new();
    for s in steps(&a) {
        if let Some(id) = str_of(&s["id"]) {
            ids.insert(id.to_string());
        }
        if let Some(run) = str_of(&s["run"]) {
            assert!(!run.contains("${{"), "an expression inside run: {run}");
            let shell = str_of(&s["shell"]).unwrap_or("");
            assert!(shell.starts_with("bash --noprofile --norc ") && shell.ends_with(" {0}"), "{shell}");
        } else {
            let uses = str_of(&s["uses"]).expect("a step runs a script or uses an action");
            let (_, rev) = uses.split_once('@').unwrap();
            assert!(rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()), "{uses} is pinned to a commit");
        }
    }
    // The token reaches velaris as GITHUB_TOKEN in the one step that runs it, and nowhere else.
    let with_token: Vec<Value> = steps(&a).into_iter().filter(|s| s["env"].get("GITHUB_TOKEN").is_some()).collect();
    assert_eq!(with_token.len(), 1);
    assert_eq!(with_token[0]["env"]["GITHUB_TOKEN"].as_str(), Some("${{ inputs.token }}"));
    assert_eq!(with_token[0]["id"].as_str(), Some("run"));
    // Outputs are the run step's, which `velaris action` writes.
    let outputs: BTreeMap<String, String> = a["outputs"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().to_string(), v["value"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(outputs.keys().cloned().collect::<Vec<_>>(), ["comment-body", "comment-url", "report", "widened"]);
    for (k, v) in &outputs {
        assert_eq!(v, &format!("${{{{ steps.run.outputs.{k} }}}}"));
    }
    assert!(ids.contains("run") && ids.contains("install") && ids.contains("plan"));
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn host_target() -> (&'static str, &'static str, &'static str) {
    match std::env::consts::ARCH {
        "aarch64" => ("Linux", "ARM64", "aarch64-unknown-linux-gnu"),
        _ => ("Linux", "X64", "x86_64-unknown-linux-gnu"),
    }
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A runner for the composite action's steps.
struct Runner {
    gh: GithubDouble,
    /// A copy of the action as a workflow would fetch it.
    action: tempfile::TempDir,
    temp: tempfile::TempDir,
    repo: tempfile::TempDir,
    fake_bin: tempfile::TempDir,
    base: String,
    head: String,
    inputs: BTreeMap<String, String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
}

struct StepRun {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Runner {
    fn new() -> Runner {
        let r = Runner {
            gh: GithubDouble::start(),
            action: tempfile::tempdir().unwrap(),
            temp: tempfile::tempdir().unwrap(),
            repo: tempfile::tempdir().unwrap(),
            fake_bin: tempfile::tempdir().unwrap(),
            base: String::new(),
            head: String::new(),
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
        };
        // The action's files, as `uses: velaris/ratchet@...` would fetch them.
        let a = r.action.path();
        for f in ["action.yml", "Cargo.toml", "Cargo.lock"] {
            std::fs::copy(root().join(f), a.join(f)).unwrap();
        }
        for d in ["src", "data"] {
            std::os::unix::fs::symlink(root().join(d), a.join(d)).unwrap();
        }
        std::fs::create_dir_all(a.join(".github/release")).unwrap();
        for f in ["manifest.txt", "update-manifest.sh"] {
            std::fs::copy(root().join(".github/release").join(f), a.join(".github/release").join(f)).unwrap();
        }
        // A stand-in cargo: records its arguments and "installs" the velaris under test.
        let log = r.fake_bin.path().join("cargo.log");
        write(
            r.fake_bin.path(),
            "cargo",
            &format!(
                "#!/bin/sh\necho \"$@\" >> '{}'\npwd >> '{}.cwd'\nroot=''\nwhile [ $# -gt 0 ]; do if [ \"$1\" = --root ]; then root=\"$2\"; fi; shift; done\nmkdir -p \"$root/bin\" && cp '{}' \"$root/bin/velaris\"\n",
                log.display(),
                log.display(),
                env!("CARGO_BIN_EXE_velaris")
            ),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(r.fake_bin.path().join("cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
        r
    }

    /// A repository with a baseline on main and a pull request that spawns a process.
    fn repository(&mut self) {
        let o = self.repo.path();
        git(o, &["init", "-q"]);
        write(o, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
        write(o, "Cargo.lock", "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n");
        write(o, "src/main.rs", "fn main() {\n    let _ = std::fs::read(\"x\");\n}\n");
        let b = Command::new(env!("CARGO_BIN_EXE_velaris")).args(["bless", "--offline"]).current_dir(o).output().unwrap();
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        git(o, &["add", "-A"]);
        git(o, &["commit", "-qm", "base"]);
        self.base = git(o, &["rev-parse", "HEAD"]);
        git(o, &["checkout", "-qb", "feature"]);
        write(o, "src/main.rs", "fn main() {\n    let _ = std::fs::read(\"x\");\n    let _ = std::process::Command::new(\"sh\");\n}\n");
        git(o, &["commit", "-qam", "spawn"]);
        self.head = git(o, &["rev-parse", "HEAD"]);
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.fake_bin.path().join("cargo.log")).unwrap_or_default()
    }

    /// The value of one `${{ }}` expression.
    fn eval(&self, e: &str, a: &Value) -> String {
        if let Some(name) = e.strip_prefix("inputs.") {
            if let Some(v) = self.inputs.get(name) {
                return v.clone();
            }
            let default = a["inputs"][name]["default"].as_str().unwrap_or_else(|| panic!("input {name} is not declared"));
            return self.subst(default, a);
        }
        if let Some(rest) = e.strip_prefix("steps.") {
            let (id, out) = rest.split_once(".outputs.").unwrap();
            return self.outputs.get(id).and_then(|o| o.get(out)).cloned().unwrap_or_default();
        }
        match e {
            "github.token" => TOKEN.to_string(),
            "github.action_path" => self.action.path().display().to_string(),
            other => panic!("the runner double cannot evaluate ${{{{ {other} }}}}"),
        }
    }

    fn subst(&self, s: &str, a: &Value) -> String {
        let mut out = s.to_string();
        for e in expressions(s) {
            let v = self.eval(&e, a);
            out = out.replacen(&format!("${{{{ {e} }}}}"), &v, 1);
        }
        out
    }

    /// Run the step with `id` as the runner would.
    fn step(&mut self, id: &str) -> StepRun {
        let a = action();
        let step = steps(&a).into_iter().find(|s| s["id"].as_str() == Some(id)).unwrap();
        let script = self.temp.path().join(format!("{id}.sh"));
        std::fs::write(&script, step["run"].as_str().unwrap()).unwrap();
        let shell = step["shell"].as_str().unwrap().replace("{0}", &script.display().to_string());
        let mut words = shell.split_whitespace();
        let output = self.temp.path().join(format!("output-{id}"));
        let _ = std::fs::remove_file(&output);
        let (os, arch, _) = host_target();
        let event = self.temp.path().join("event.json");
        let payload = std::fs::read_to_string(root().join("fixtures/github/events/pull_request.json"))
            .unwrap()
            .replace("@BASE_SHA@", &self.base)
            .replace("@HEAD_SHA@", &self.head)
            .replace("@BEFORE_SHA@", &self.base);
        std::fs::write(&event, payload).unwrap();
        let mut cmd = Command::new(words.next().unwrap());
        cmd.args(words)
            .current_dir(self.repo.path())
            .env_clear()
            .env("PATH", format!("{}:{}", self.fake_bin.path().display(), std::env::var("PATH").unwrap_or_default()))
            .env("HOME", self.temp.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", arch)
            .env("RUNNER_TEMP", self.temp.path())
            .env("GITHUB_ACTION_PATH", self.action.path())
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", self.temp.path().join("summary.md"))
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &event)
            .env("GITHUB_REPOSITORY", "o/r")
            .env("GITHUB_WORKSPACE", self.repo.path())
            .env("GITHUB_API_URL", self.gh.api_url())
            .env("GITHUB_GRAPHQL_URL", self.gh.graphql_url())
            .env("GITHUB_SERVER_URL", self.gh.server_url())
            .env("GITHUB_RUN_ID", "77")
            .env("VELARIS_CACHE_DIR", self.temp.path().join("cache"));
        if let Some(env) = step["env"].as_mapping() {
            for (k, v) in env {
                cmd.env(k.as_str().unwrap(), self.subst(v.as_str().unwrap(), &a));
            }
        }
        let o = cmd.output().unwrap();
        let text = std::fs::read_to_string(&output).unwrap_or_default();
        let mut outs = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if let Some((k, delim)) = l.split_once("<<") {
                let mut v = Vec::new();
                for x in lines.by_ref() {
                    if x == delim {
                        break;
                    }
                    v.push(x);
                }
                outs.insert(k.to_string(), v.join("\n"));
            } else if let Some((k, v)) = l.split_once('=') {
                outs.insert(k.to_string(), v.to_string());
            }
        }
        self.outputs.insert(id.to_string(), outs);
        StepRun {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    fn out(&self, id: &str, name: &str) -> String {
        self.outputs.get(id).and_then(|o| o.get(name)).cloned().unwrap_or_default()
    }

    /// Publish the velaris under test as this version's release asset for the host, and write
    /// the manifest with the release script.
    fn release(&self, served: &[u8]) {
        let (_, _, target) = host_target();
        let tag = format!("v{}", version());
        let asset = format!("velaris-{tag}-{target}");
        let real = std::fs::read(env!("CARGO_BIN_EXE_velaris")).unwrap();
        use sha2::Digest;
        let digest: String = sha2::Sha256::digest(&real).iter().map(|b| format!("{b:02x}")).collect();
        let mut sums = String::new();
        for t in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "x86_64-apple-darwin", "aarch64-apple-darwin", "x86_64-pc-windows-msvc"] {
            let exe = if t.contains("windows") { ".exe" } else { "" };
            let d = if t == target { digest.clone() } else { format!("{:064x}", t.len()) };
            sums.push_str(&format!("{d}  velaris-{tag}-{t}{exe}\n"));
        }
        let sums_path = self.temp.path().join("SHA256SUMS");
        std::fs::write(&sums_path, sums).unwrap();
        let o = Command::new("bash")
            .arg(self.action.path().join(".github/release/update-manifest.sh"))
            .args([tag.as_str(), sums_path.to_str().unwrap()])
            .env("RELEASE_URL", format!("{}/releases/download", self.gh.server_url()))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        self.gh.serve_file(&format!("/releases/download/{tag}/{asset}"), served);
    }
}

#[test]
fn the_release_script_refuses_a_tag_that_is_not_the_crate_version() {
    let r = Runner::new();
    let sums = r.temp.path().join("SHA256SUMS");
    std::fs::write(&sums, "").unwrap();
    let o = Command::new("bash").arg(r.action.path().join(".github/release/update-manifest.sh")).args(["v999.0.0", sums.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new("bash")
        .arg(r.action.path().join(".github/release/update-manifest.sh"))
        .args([format!("v{}", version()).as_str(), sums.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "a SHA256SUMS without the assets is refused");
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no sha256"));
}

#[test]
fn the_composite_action_installs_the_checked_release_binary_and_runs() {
    let mut r = Runner::new();
    r.repository();
    r.release(&std::fs::read(env!("CARGO_BIN_EXE_velaris")).unwrap());
    let manifest = std::fs::read_to_string(r.action.path().join(".github/release/manifest.txt")).unwrap();
    assert!(manifest.contains(&format!("version {}", version())), "{manifest}");
    assert!(manifest.lines().filter(|l| !l.starts_with('#')).count() == 7, "version, url, five targets: {manifest}");

    let plan = r.step("plan");
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert_eq!(r.out("plan", "prebuilt"), "true");
    let install = r.step("install");
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    let bin = r.out("install", "bin");
    assert!(bin.starts_with(&r.temp.path().display().to_string()) && Path::new(&bin).is_file(), "{bin}");
    assert_eq!(r.cargo_calls(), "", "nothing was built");

    r.inputs.insert("workspace".into(), "  .  \n\n".into());
    let run = r.step("run");
    assert_eq!(run.code, 1, "the gate fails on the widening: {}{}", run.stdout, run.stderr);
    assert_eq!(r.out("run", "widened"), "true");
    assert!(Path::new(&r.out("run", "report")).is_file());
    assert!(r.out("run", "comment-url").contains("/o/r/pull/7#issuecomment-"), "{:?}", r.outputs);
    let body = std::fs::read_to_string(r.out("run", "comment-body")).unwrap();
    assert!(body.contains("**Widened**"), "{body}");
    // The token went to the API as the input's value (and not with the download), and into
    // no output.
    for q in r.gh.requests() {
        let expected = if q.path.starts_with("/api/") { Some(format!("Bearer {TOKEN}")) } else { None };
        assert_eq!(q.header("authorization").map(str::to_string), expected, "{} {}", q.method, q.path);
    }
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
    assert!(r.outputs.values().flat_map(|o| o.values()).all(|v| !v.contains(TOKEN)));
}

#[test]
fn a_download_that_does_not_match_the_manifest_is_refused() {
    let mut r = Runner::new();
    r.repository();
    r.release(b"#!/bin/sh\necho pwned\n");
    assert_eq!(r.step("plan").code, 0);
    let install = r.step("install");
    assert_eq!(install.code, 1, "{}{}", install.stdout, install.stderr);
    assert!(install.stdout.contains("::error title=velaris: download rejected::"), "{}", install.stdout);
    let bin = Path::new(&r.out("plan", "root")).join("bin/velaris");
    assert!(!bin.exists(), "nothing is installed");
}

#[test]
fn without_a_release_the_action_builds_from_its_source_once() {
    let mut r = Runner::new();
    r.repository();
    // The checkout configures cargo and rustup; the build of velaris must not read either.
    write(r.repo.path(), ".cargo/config.toml", "[build]\nrustc-wrapper = \"/nonexistent/pwn\"\n");
    write(r.repo.path(), "rust-toolchain.toml", "[toolchain]\npath = \"/nonexistent/toolchain\"\n");
    // The committed manifest has no binaries yet: the source is built with cargo install.
    assert_eq!(r.step("plan").code, 0);
    assert_eq!(r.out("plan", "prebuilt"), "false");
    assert!(r.out("plan", "key").starts_with(&format!("velaris-bin-Linux-{}-{}-", host_target().1, version())));
    let install = r.step("install");
    assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
    let root_dir = r.out("plan", "root");
    assert_eq!(
        r.cargo_calls().trim(),
        format!("install --locked --path {} --root {root_dir} --force", r.action.path().display())
    );
    let cwd = std::fs::read_to_string(r.fake_bin.path().join("cargo.log.cwd")).unwrap();
    assert_eq!(
        std::fs::canonicalize(cwd.trim()).unwrap(),
        std::fs::canonicalize(r.temp.path()).unwrap(),
        "cargo runs in RUNNER_TEMP, not in the checkout"
    );
    // A cache that restored the binary: no build.
    std::fs::remove_file(r.fake_bin.path().join("cargo.log")).unwrap();
    let again = r.step("install");
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.contains(&format!("velaris {} from the cache", version())), "{}", again.stdout);
    assert_eq!(r.cargo_calls(), "");
    r.inputs.insert("comment".into(), "false".into());
    r.inputs.insert("fail-on".into(), "never".into());
    let run = r.step("run");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(r.out("run", "widened"), "true");
    assert!(r.gh.requests().iter().all(|q| !q.is_comment_write()));
}

#[test]
fn the_documented_workflows_are_the_validated_files() {
    // .ci/run validates docs/examples/*.yml; docs/action.md must show exactly those.
    let doc = std::fs::read_to_string(root().join("docs/action.md")).unwrap();
    let mut shown = 0;
    for e in std::fs::read_dir(root().join("docs/examples")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(doc.contains(&format!("```yaml\n{text}```\n")), "docs/action.md does not show {}", p.display());
        let wf: Value = serde_norway::from_str(&text).unwrap();
        assert!(wf["jobs"].as_mapping().is_some_and(|j| !j.is_empty()), "{}", p.display());
        shown += 1;
    }
    assert_eq!(doc.matches("```yaml\n").count(), shown, "every yaml block in docs/action.md is a validated example");
}
