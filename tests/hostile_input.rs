//! The real binary against broken and hostile input: special files and links wherever a path
//! is read, credentials in registry URLs, leftovers of killed runs, and the errors that must
//! say what is wrong (once, with the place, without echoing megabytes).

#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use registry_double::{RegistryDouble, sha256_hex};

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// A workspace with one program using one registry dependency, a CARGO_HOME whose config
/// replaces crates.io with the registry double, and an empty velaris cache.
struct World {
    reg: RegistryDouble,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    cache: tempfile::TempDir,
    netlib: Vec<u8>,
}

/// Writes a regular file at `rel`, replacing whatever is there (a link is not followed).
fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&p);
    std::fs::write(&p, text).unwrap();
    p
}

impl World {
    fn new() -> World {
        World::with_index(|reg| reg.index_url())
    }

    /// `index` gives the registry URL written in cargo's configuration.
    fn with_index(index: impl Fn(&RegistryDouble) -> String) -> World {
        let reg = RegistryDouble::start();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "[source.crates-io]\nreplace-with = \"mirror\"\n[source.mirror]\nregistry = \"{}\"\n",
                index(&reg)
            ),
        )
        .unwrap();
        let netlib = archives::crate_bytes(
            "netlib",
            "1.0.0",
            &[
                ("Cargo.toml", "[package]\nname = \"netlib\"\nversion = \"1.0.0\"\nedition = \"2021\"\n"),
                ("src/lib.rs", "pub fn get() { let _ = std::net::TcpStream::connect(\"h:80\"); }\n"),
            ],
        );
        reg.add_crate("netlib", "1.0.0", &netlib);
        let w = World { reg, home, ws: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap(), netlib };
        let root = w.ws.path();
        write(root, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nnetlib = \"1\"\n");
        write(root, "src/main.rs", "fn main() { netlib::get(); }\n");
        write(root, "Cargo.lock", &w.lock());
        w
    }

    fn lock(&self) -> String {
        format!(
            "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"netlib\"]\n\n[[package]]\nname = \"netlib\"\nversion = \"1.0.0\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n",
            sha256_hex(&self.netlib)
        )
    }

    fn cmd(&self) -> Command {
        let mut c = registry_double::velaris_command(self.ws.path(), self.home.path(), self.cache.path());
        c.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .stdin(Stdio::null());
        c
    }

    /// Runs velaris; a run that hangs (a FIFO read) is killed after 60 s and fails the test.
    fn run(&self, args: &[&str]) -> Out {
        let mut child = self.cmd().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("velaris {args:?} hangs");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Out(child.wait_with_output().unwrap())
    }

    fn git(&self, args: &[&str]) {
        let o = Command::new("git")
            .args(args)
            .current_dir(self.ws.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

struct Out(Output);

impl Out {
    fn code(&self) -> Option<i32> {
        self.0.status.code()
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    fn all(&self) -> String {
        format!("{}{}", self.stdout(), self.stderr())
    }
    #[track_caller]
    fn ok(&self) -> String {
        assert_eq!(self.code(), Some(0), "stdout: {}\nstderr: {}", self.stdout(), self.stderr());
        self.stdout()
    }
    /// Exit 2 with `needle` in the error.
    #[track_caller]
    fn refused(&self, needle: &str) {
        assert_eq!(self.code(), Some(2), "stdout: {}\nstderr: {}", self.stdout(), self.stderr());
        assert!(self.stderr().contains(needle), "{needle:?} not in: {}", self.stderr());
    }
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(target, at).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Special files wherever a path is read

#[cfg(unix)]
#[test]
fn fifos_devices_and_directories_are_refused_wherever_a_path_is_read() {
    const FIFO: &str = "is a FIFO (named pipe), not a regular file";
    let w = World::new();
    let root = w.ws.path().to_path_buf();
    let good = write(&root, "good.lock", &w.lock());
    let fifo = root.join("pipe");
    mkfifo(&fifo);
    let (fifo_s, good_s) = (fifo.to_str().unwrap(), good.to_str().unwrap());

    // --old / --new.
    w.run(&["deps-diff", "--old", fifo_s, "--new", good_s]).refused(FIFO);
    w.run(&["deps-diff", "--old", good_s, "--new", "/dev/zero"]).refused("/dev/zero is a character device");
    w.run(&["deps-diff", "--old", root.to_str().unwrap(), "--new", good_s]).refused("is a directory, not a regular file");

    // The workspace's Cargo.lock, manifest and rules overlay.
    let lock = root.join("Cargo.lock");
    mkfifo(&lock);
    w.run(&["surface"]).refused(FIFO);
    // A device is only reachable through a link, and a link out of the workspace is refused.
    link(Path::new("/dev/zero"), &lock);
    w.run(&["surface"]).refused("leads outside");
    write(&root, "Cargo.lock", &w.lock());
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    mkfifo(&root.join("Cargo.toml"));
    w.run(&["surface"]).refused(FIFO);
    write(&root, "Cargo.toml", &manifest);
    mkfifo(&root.join("velaris-rules.toml"));
    w.run(&["surface"]).refused(FIFO);
    std::fs::remove_file(root.join("velaris-rules.toml")).unwrap();

    // The baseline, for every command that reads it.
    mkfifo(&root.join("velaris.capabilities"));
    for cmd in ["check", "bless", "fmt"] {
        w.run(&[cmd]).refused(FIFO);
    }
    std::fs::remove_file(root.join("velaris.capabilities")).unwrap();

    // The project's cargo configuration.
    std::fs::create_dir_all(root.join(".cargo")).unwrap();
    mkfifo(&root.join(".cargo/config.toml"));
    w.run(&["surface"]).refused(FIFO);
    std::fs::remove_file(root.join(".cargo/config.toml")).unwrap();

    // An analysis cache entry: refused, and the result recomputed.
    w.run(&["surface"]).ok();
    let entry = std::fs::read_dir(w.cache.path().join("surface")).unwrap().next().unwrap().unwrap().path();
    mkfifo(&entry);
    let o = w.run(&["surface", "--offline"]);
    o.ok();
    assert!(o.stderr().contains(FIFO), "{}", o.stderr());
}

// ---------------------------------------------------------------------------------------------
// Links out of the repository

#[cfg(unix)]
#[test]
fn links_out_of_the_repository_are_refused() {
    let w = World::new();
    let root = w.ws.path().to_path_buf();
    let outside = tempfile::tempdir().unwrap();

    // The workspace's Cargo.lock.
    let elsewhere = write(outside.path(), "Cargo.lock", &w.lock());
    link(&elsewhere, &root.join("Cargo.lock"));
    w.run(&["surface"]).refused("leads outside");

    // The work tree's Cargo.lock in a git range.
    write(&root, "Cargo.lock", &w.lock());
    w.git(&["init", "-q"]);
    w.git(&["add", "-A"]);
    w.git(&["commit", "-q", "-m", "one"]);
    link(&elsewhere, &root.join("Cargo.lock"));
    w.run(&["deps-diff", "HEAD"]).refused("leads outside");
    write(&root, "Cargo.lock", &w.lock());

    // velaris.capabilities: neither read nor written through the link.
    let secret = write(outside.path(), "target.txt", "do not overwrite\n");
    link(&secret, &root.join("velaris.capabilities"));
    for cmd in ["bless", "check", "fmt"] {
        w.run(&[cmd]).refused("leads outside");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "do not overwrite\n");

    // A link that stays inside the workspace is followed.
    std::fs::remove_file(root.join("velaris.capabilities")).unwrap();
    std::fs::create_dir(root.join("policy")).unwrap();
    write(&root, "policy/velaris.capabilities", "version = 1\n");
    link(Path::new("policy/velaris.capabilities"), &root.join("velaris.capabilities"));
    w.run(&["bless"]).ok();
    assert!(std::fs::read_to_string(root.join("policy/velaris.capabilities")).unwrap().contains("[crate.netlib]"));
    assert!(std::fs::symlink_metadata(root.join("velaris.capabilities")).unwrap().file_type().is_symlink());
}

// ---------------------------------------------------------------------------------------------
// Credentials in registry URLs

#[test]
fn credentials_in_registry_urls_are_never_printed() {
    const PASSWORD: &str = "hunter2-PASSWORD";
    const TOKEN: &str = "tok-SECRET-123";
    let w = World::with_index(|reg| format!("sparse+http://alice:{PASSWORD}@127.0.0.1:{}/index/", reg.port()));
    w.reg.set_dl_template(&format!("{{base}}/dl/{{crate}}/{{version}}/download?token={TOKEN}"));
    let root = w.ws.path().to_path_buf();
    let old = write(&root, "old.lock", "version = 3\n");
    let new = root.join("Cargo.lock");
    let (old_s, new_s) = (old.to_str().unwrap(), new.to_str().unwrap());
    let dl_path = format!("/dl/netlib/1.0.0/download?token={TOKEN}");
    let mut seen = String::new();
    let mut check = |what: &str, o: Out| {
        let all = o.all();
        assert!(!all.contains(PASSWORD) && !all.contains(TOKEN), "{what} printed a credential:\n{all}");
        seen.push_str(&all);
    };

    // Failures first, with nothing cached: 404, 500s, a stall, a digest mismatch, config.json.
    w.reg.fail_next(&dl_path, 1, 404);
    check("404", w.run(&["deps-diff", "--old", old_s, "--new", new_s]));
    w.reg.fail_next(&dl_path, 10, 500);
    check("500", w.run(&["surface"]));
    w.reg.fail_next(registry_double::CONFIG_PATH, 10, 503);
    check("config.json", w.run(&["check"]));
    w.reg.tamper("netlib", "1.0.0", b"evil");
    check("integrity", w.run(&["deps-diff", "--old", old_s, "--new", new_s, "--format", "json"]));
    w.reg.add_crate("netlib", "1.0.0", &w.netlib);
    w.reg.redirect_next(&dl_path, 1, &format!("/gone?token={TOKEN}"));
    check("redirect", w.run(&["surface", "--format", "json"]));
    check("offline", w.run(&["surface", "--offline"]));

    // Then every command and format, succeeding (downloads name their URL as their origin).
    w.reg.tamper("netlib", "1.0.0", &w.netlib);
    for format in ["human", "markdown", "json"] {
        check(format, w.run(&["deps-diff", "--old", old_s, "--new", new_s, "--diff", "--format", format]));
    }
    check("surface", w.run(&["surface"]));
    check("surface json", w.run(&["surface", "--format", "json", "-v"]));
    check("explain", w.run(&["explain", "app", "net.connect"]));
    check("bless", w.run(&["bless"]));
    check("fmt", w.run(&["fmt", "--check"]));
    for format in ["human", "markdown", "json"] {
        check(format, w.run(&["check", "--format", format]));
    }
    // The runs did reach the registry and did show where things came from, redacted.
    assert!(seen.contains("http://***@127.0.0.1"), "{seen}");
    assert!(seen.contains("token=***"), "{seen}");
}

// ---------------------------------------------------------------------------------------------
// Leftovers of killed runs

#[test]
fn temporary_files_of_a_killed_bless_are_removed_by_the_next_run() {
    let w = World::new();
    let root = w.ws.path().to_path_buf();
    w.run(&["bless"]).ok();
    // What `kill -9` during bless leaves: the temporary file write_atomic names.
    let (prefix, suffix) = velaris::fsio::baseline_temp_affixes(velaris::baseline::FILE_NAME);
    let leftover = write(&root, &format!("{prefix}Ab12Cd{suffix}"), "version = 1\n# half written");
    let unrelated = write(&root, ".velaris.capabilities.notes", "mine");
    for cmd in ["check", "fmt", "bless"] {
        std::fs::write(&leftover, "x").unwrap();
        w.run(&[cmd]).ok();
        assert!(!leftover.exists(), "{cmd} left {}", leftover.display());
    }
    assert!(unrelated.exists());

    // The cache's temporary files of a run that is gone.
    let tmp = velaris::fsio::cache_temp_dir(w.cache.path());
    std::fs::create_dir_all(&tmp).unwrap();
    let stale = write(&tmp, "velaris-999999999-x1y2z3.tmp", "partial .crate");
    w.run(&["surface"]).ok();
    assert!(!stale.exists());
}

// ---------------------------------------------------------------------------------------------
// Errors that say what is wrong

#[test]
fn errors_say_what_and_where_once_and_briefly() {
    let w = World::new();
    let root = w.ws.path().to_path_buf();
    let good = write(&root, "good.lock", &w.lock());
    let good_s = good.to_str().unwrap();

    // A missing file: its cause once.
    let o = w.run(&["deps-diff", "--old", "/nonexistent/x.lock", "--new", good_s]);
    o.refused("/nonexistent/x.lock does not exist");
    assert_eq!(o.stderr().matches("No such file").count() + o.stderr().matches("does not exist").count(), 1, "{}", o.stderr());

    // Invalid UTF-8: the byte offset, line and column.
    let mut bytes = w.lock().into_bytes();
    bytes.splice(20..20, [0xff, 0xfe]);
    let bad = root.join("bad.lock");
    std::fs::write(&bad, bytes).unwrap();
    w.run(&["deps-diff", "--old", bad.to_str().unwrap(), "--new", good_s])
        .refused("is not valid UTF-8: invalid byte at offset 20 (line 3, column 8)");

    // A 100 KB version string is not echoed whole.
    let huge = w.lock().replace("version = \"1.0.0\"", &format!("version = \"1.0.0-{}\"", "x".repeat(100_000)));
    let huge = write(&root, "huge.lock", &huge);
    let o = w.run(&["deps-diff", "--old", good_s, "--new", huge.to_str().unwrap()]);
    assert_eq!(o.code(), Some(2), "{}", o.stderr());
    assert!(o.stderr().len() < 3_000, "{} bytes of error", o.stderr().len());
    assert!(o.stderr().contains("more characters)"), "{}", o.stderr());

    // A malformed cargo configuration: its file, line and reason.
    write(&root, ".cargo/config.toml", "[source.crates-io]\nreplace-with = \"x\"\n[source.x\n");
    w.run(&["surface"]).refused(&format!("{}:3:10: invalid TOML", root.join(".cargo/config.toml").display()));
    std::fs::remove_file(root.join(".cargo/config.toml")).unwrap();

    // A bin or build script outside the package is said to be outside and refused.
    write(&root, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"../build.rs\"\n\n[[bin]]\nname = \"app\"\npath = \"../outside/main.rs\"\n\n[dependencies]\nnetlib = \"1\"\n");
    let doc: serde_json::Value = serde_json::from_str(&w.run(&["surface", "--format", "json"]).ok()).unwrap();
    let text = doc.to_string();
    assert!(text.contains("the bin path `../outside/main.rs` is outside the package and refused"), "{doc:#}");
    assert!(text.contains("the build script path `../build.rs` is outside the package and refused"), "{doc:#}");
}

// ---------------------------------------------------------------------------------------------
// Manifests that would make a recursive walk overflow the stack

#[test]
fn hostile_manifests_are_refused_or_read_without_aborting() {
    let w = World::new();
    let root = w.ws.path().to_path_buf();
    let base = "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nnetlib = \"1\"\n";

    // A target key nested 100,000 levels deep: taken as a key that does not parse.
    let n = 100_000;
    let key = format!("cfg({}unix{})", "all(".repeat(n), ")".repeat(n));
    write(&root, "Cargo.toml", &format!("{base}\n[target.'{key}'.dependencies]\nnetlib = \"1\"\n"));
    w.run(&["surface"]).ok();

    // Features that enable one another 200,000 levels deep.
    let chain: String = (0..200_000).map(|i| format!("f{i} = [\"f{}\"]\n", i + 1)).collect();
    write(&root, "Cargo.toml", &format!("{base}\n[features]\ndefault = [\"f0\"]\n{chain}f200000 = []\n"));
    let o = w.run(&["surface"]);
    o.refused("app 0.1.0: features and optional dependencies enable one another more than 20000 levels deep");
}
