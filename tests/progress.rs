//! Progress on stderr, as a person or a CI log sees it: a bar redrawn in place on a terminal (a
//! pty here), a line every few seconds in CI, nothing with `--quiet`, nothing for JSON written
//! to a pipe, and never a byte of it on stdout.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/world.rs"]
mod world;

use world::{Pkg, World};

fn lib(name: &str, body: &str) -> Pkg {
    let manifest = format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\nedition = \"2021\"\n");
    Pkg::new(name, "1.0.0", &[("Cargo.toml", &manifest), ("src/lib.rs", body)], &[])
}

/// A program with three registry dependencies, so there is something to fetch and analyse.
fn world() -> World {
    let deps = ["alpha", "beta", "gamma"];
    let mut manifest = "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n".to_string();
    for d in deps {
        manifest.push_str(&format!("{d} = \"1\"\n"));
    }
    World::new(
        deps.iter().map(|d| lib(d, "pub fn f() { let _ = std::fs::read(\"x\"); }\n")).collect(),
        vec![Pkg::new("app", "0.1.0", &[("Cargo.toml", &manifest), ("src/main.rs", "fn main() { alpha::f(); }\n")], &deps)],
    )
}

fn run(w: &World, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = registry_double::velaris_command(w.ws.path(), w.home.path(), w.cache.path());
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn ci_gets_a_line_every_interval_for_the_whole_run_and_stdout_stays_the_report() {
    let w = world();
    let o = run(&w, &["surface"], &[("CI", "true"), ("VELARIS_PROGRESS_INTERVAL", "0")]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("velaris: ")).collect();
    assert!(lines.len() > 3, "{err}");
    // One count for the whole run: fetched grows to 3 of 3 across resolution rounds and never
    // starts again at 0; then the analysis, naming the crate at hand.
    assert!(lines.iter().any(|l| l.contains("fetched 3 of 3 crates")), "{err}");
    assert!(!lines.iter().skip_while(|l| !l.contains("fetched 3 of 3")).any(|l| l.contains("fetched 0 of")), "{err}");
    assert!(lines.iter().any(|l| l.contains("analysed ") && (l.contains("; now alpha 1.0.0") || l.contains("; now app 0.1.0"))), "{err}");
    let last = lines.last().unwrap();
    assert!(last.starts_with("velaris: done: fetched 3 of 3 crates, analysed ") && last.contains(" of "), "{last}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("target ") && !out.contains("velaris: "), "{out}");

    // Warm, with the default interval of a few seconds: a short run prints nothing.
    let o = run(&w, &["surface"], &[("CI", "true")]);
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

#[test]
fn quiet_json_on_a_pipe_and_plain_pipes_are_silent() {
    let w = world();
    for (args, env) in [
        (&["--quiet", "surface"][..], &[("CI", "true"), ("VELARIS_PROGRESS_INTERVAL", "0")][..]),
        (&["surface", "--format", "json"][..], &[("CI", "true"), ("VELARIS_PROGRESS_INTERVAL", "0")][..]),
        (&["surface"][..], &[("VELARIS_PROGRESS_INTERVAL", "0")][..]),
    ] {
        let _ = std::fs::remove_dir_all(w.cache.path().join("crates"));
        let o = run(&w, args, env);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{args:?} {env:?}");
    }
    // --quiet silences notes too, never errors.
    let o = run(&w, &["--quiet", "bless"], &[]);
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned()), (Some(0), String::new()));
    let o = run(&w, &["bless"], &[]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is up to date"));
    let o = run(&w, &["--quiet", "check", "--target", "no-such-triple"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: "));
}

#[cfg(unix)]
#[test]
fn a_terminal_gets_a_bar_redrawn_in_place_and_stdout_gets_none_of_it() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let w = world();
    let (mut master, slave) = unsafe {
        let (mut m, mut s) = (0, 0);
        let ws = libc::winsize { ws_row: 24, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
        assert_eq!(libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws), 0);
        (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    };
    let mut c = registry_double::velaris_command(w.ws.path(), w.home.path(), w.cache.path());
    c.args(["surface"]).env("TERM", "xterm").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::from(slave));
    let child = c.spawn().unwrap();
    // The terminal's side is read while the command runs, so a full pty never blocks it.
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        seen
    });
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    drop(c);
    let seen = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    assert!(seen.contains("fetched") && seen.contains("analysed"), "{seen:?}");
    assert!(seen.contains('\u{1b}') || seen.contains('\r'), "redrawn in place: {seen:?}");
    assert!(!seen.contains("velaris: "), "not the CI lines: {seen:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("target ") && !out.contains('\u{1b}') && !out.contains("fetched"), "{out}");
}
