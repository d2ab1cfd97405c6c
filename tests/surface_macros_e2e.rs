//! End to end, against the registry double: small look-alikes of the patterns real crates use
//! to hide code from a reader that does not expand macros (tokio's cfg macros declaring
//! modules, mio's `syscall!`, exported macros using `$crate`), cfgs set by build scripts or
//! declared with `check-cfg`, and edition-2015 syntax (signal-hook-registry's bare trait
//! object). Each world has its negative twin: the same crates with the feature off.

#[path = "support/archives.rs"]
mod archives;
#[path = "support/surface_doc.rs"]
mod surface_doc;
#[path = "support/registry_double.rs"]
mod registry_double;
#[path = "support/world.rs"]
mod world;

use serde_json::Value;
use world::{Pkg, World, ok};

const LIBC: &str = r#"
#![allow(non_camel_case_types, non_upper_case_globals)]
pub type c_int = i32;
pub type c_long = i64;
pub const SYS_futex: c_long = 202;
pub const SYS_execve: c_long = 59;
extern "C" {
    pub fn connect(fd: c_int, addr: *const u8, len: u32) -> c_int;
    pub fn bind(fd: c_int, addr: *const u8, len: u32) -> c_int;
    pub fn getpid() -> c_int;
    pub fn syscall(num: c_long, ...) -> c_long;
}
"#;

const MIOLIKE: &str = r#"
macro_rules! syscall {
    ($fn: ident ( $($arg: expr),* $(,)* ) ) => {{
        let res = unsafe { libc::$fn($($arg, )*) };
        if res == -1 { Err(std::io::Error::last_os_error()) } else { Ok(res) }
    }};
}

pub fn connect(fd: i32) -> std::io::Result<i32> {
    syscall!(connect(fd, std::ptr::null(), 0))
}

pub fn listen(fd: i32) -> std::io::Result<i32> {
    syscall!(bind(fd, std::ptr::null(), 0,))
}

pub fn pid() -> std::io::Result<i32> {
    syscall!(getpid())
}

pub fn wake(addr: *const u32) {
    unsafe { libc::syscall(libc::SYS_futex, addr, 1) };
}
"#;

const RT_LIB: &str = r#"
#[macro_use]
mod macros;

cfg_fs! {
    pub mod fs;
}

cfg_net! {
    pub mod net;
}

cfg_process! {
    pub mod process;
}

#[cfg(rt_unstable)]
pub mod unstable;

#[doc(hidden)]
pub mod __private {
    pub use std::process::Command;
}
"#;

const RT_MACROS: &str = r#"
macro_rules! cfg_fs {
    ($($item:item)*) => { $( #[cfg(feature = "fs")] $item )* }
}
macro_rules! cfg_net {
    ($($item:item)*) => { $( #[cfg(feature = "net")] $item )* }
}
macro_rules! cfg_process {
    ($($item:item)*) => { $( #[cfg(feature = "process")] $item )* }
}

#[macro_export]
macro_rules! shell {
    ($cmd:expr) => {
        $crate::__private::Command::new("sh").arg("-c").arg($cmd).status()
    };
}
"#;

fn rtlike() -> Pkg {
    let manifest = r#"[package]
name = "rtlike"
version = "1.0.0"
edition = "2021"

[features]
fs = []
net = ["dep:miolike"]
process = []

[dependencies]
miolike = { version = "1", optional = true }

[lints.rust]
unexpected_cfgs = { level = "warn", check-cfg = ['cfg(rt_unstable)'] }
"#;
    Pkg::new(
        "rtlike",
        "1.0.0",
        &[
            ("Cargo.toml", manifest),
            ("src/lib.rs", RT_LIB),
            ("src/macros.rs", RT_MACROS),
            ("src/fs.rs", "pub fn write(p: &str, d: &[u8]) -> std::io::Result<()> {\n    std::fs::write(p, d)\n}\n"),
            ("src/net.rs", "pub fn dial(fd: i32) -> std::io::Result<i32> {\n    miolike::connect(fd)\n}\n"),
            ("src/process.rs", "pub fn run(c: &str) {\n    let _ = std::process::Command::new(c).status();\n}\n"),
            ("src/unstable.rs", "pub fn tweak() {\n    unsafe { std::env::set_var(\"RT_TWEAK\", \"1\") };\n}\n"),
        ],
        &["miolike"],
    )
}

fn libc() -> Pkg {
    Pkg::new("libc", "0.2.0", &[("Cargo.toml", "[package]\nname = \"libc\"\nversion = \"0.2.0\"\n"), ("src/lib.rs", LIBC)], &[])
}

fn miolike() -> Pkg {
    let m = "[package]\nname = \"miolike\"\nversion = \"1.0.0\"\nedition = \"2021\"\n\n[dependencies]\nlibc = \"0.2\"\n";
    Pkg::new("miolike", "1.0.0", &[("Cargo.toml", m), ("src/lib.rs", MIOLIKE)], &["libc"])
}

fn cfgbuild() -> Pkg {
    let m = "[package]\nname = \"cfgbuild\"\nversion = \"1.0.0\"\nedition = \"2021\"\n";
    let build = "fn main() {\n    println!(\"cargo:rustc-check-cfg=cfg(has_sockets)\");\n    println!(\"cargo:rustc-cfg=has_sockets\");\n}\n";
    let lib = "#[cfg(has_sockets)]\npub fn serve() {\n    let _ = std::net::TcpListener::bind(\"0.0.0.0:0\");\n}\n\n#[cfg(not(has_sockets))]\npub fn serve() {\n    let _ = std::fs::read(\"/dev/null\");\n}\n";
    Pkg::new("cfgbuild", "1.0.0", &[("Cargo.toml", m), ("build.rs", build), ("src/lib.rs", lib)], &[])
}

fn oldsig() -> Pkg {
    // No `edition`: 2015.
    let m = "[package]\nname = \"oldsig\"\nversion = \"1.4.8\"\n";
    let lib = "type Action = Fn(&u8) + Send + Sync;\n\npub struct Slot {\n    pub action: Box<Action>,\n}\n\npub fn signal_name() -> Option<String> {\n    std::env::var(\"SIG\").ok()\n}\n";
    Pkg::new("oldsig", "1.4.8", &[("Cargo.toml", m), ("src/lib.rs", lib)], &[])
}

fn pure() -> Pkg {
    let m = "[package]\nname = \"pure\"\nversion = \"3.0.0\"\nedition = \"2021\"\n";
    Pkg::new("pure", "3.0.0", &[("Cargo.toml", m), ("src/lib.rs", "pub fn add(a: u8, b: u8) -> u8 {\n    a + b\n}\n")], &[])
}

fn app(features: &str, main: &str) -> Pkg {
    let m = format!(
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrtlike = {{ version = \"1\", features = [{features}] }}\ncfgbuild = \"1\"\noldsig = \"1\"\npure = \"3\"\n"
    );
    Pkg::new("app", "0.1.0", &[("Cargo.toml", &m), ("src/main.rs", main)], &["cfgbuild", "oldsig", "pure", "rtlike"])
}

fn surface(w: &World) -> Value {
    surface_doc::inline(serde_json::from_str(&ok(&w.run(&["surface", "--format", "json"]))).unwrap())
}

fn krate<'a>(doc: &'a Value, program: &str, name: &str) -> Option<&'a Value> {
    let p = doc["programs"].as_array().unwrap().iter().find(|p| p["name"] == program)?;
    p["crates"].as_array().unwrap().iter().find(|c| c["name"] == name)
}

fn caps(c: Option<&Value>) -> Vec<String> {
    c.map(|c| c["capabilities"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn findings(c: Option<&Value>, cap: &str) -> Vec<String> {
    c.map(|c| {
        c["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["capability"] == cap)
            .map(|f| format!("{}:{} {}", f["file"].as_str().unwrap(), f["line"], f["path"].as_str().unwrap()))
            .collect()
    })
    .unwrap_or_default()
}

#[test]
fn modules_in_cfg_macros_exported_macros_build_cfgs_and_2015_code_are_seen() {
    let main = "fn main() {\n    let _ = rtlike::shell!(\"ls\");\n    cfgbuild::serve();\n}\n";
    let w = World::new(vec![rtlike(), miolike(), libc(), cfgbuild(), oldsig(), pure()], vec![app("\"fs\", \"process\"", main)]);
    let doc = surface(&w);

    let rt = krate(&doc, "app", "rtlike");
    assert_eq!(findings(rt, "fs.write"), ["src/fs.rs:2 std::fs::write"], "{doc:#}");
    assert_eq!(findings(rt, "process.spawn"), ["src/process.rs:2 std::process::Command::new", "src/process.rs:2 std::process::Command::status"]);
    // A cfg declared with check-cfg but set by nothing (no build script, no rustflags) is
    // false, as rustc has it; the file it declares is listed as not compiled, with why.
    assert!(findings(rt, "env.write").is_empty(), "{doc:#}");
    let unloaded: Vec<String> = rt.unwrap()["unloaded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| format!("{} {} {}", u["file"].as_str().unwrap(), u["reason"].as_str().unwrap(), u["detail"].as_str().unwrap_or("")))
        .collect();
    assert!(unloaded.contains(&"src/unstable.rs cfg-false #[cfg(rt_unstable)] at src/lib.rs:18".to_string()), "{unloaded:?}");
    assert!(unloaded.iter().any(|u| u.starts_with("src/net.rs cfg-false")), "{unloaded:?}");
    // The files analysed are the module tree as compiled, the modules the macros declare
    // included, and no more.
    let files: Vec<&str> = rt.unwrap()["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(files, ["src/fs.rs", "src/lib.rs", "src/macros.rs", "src/process.rs"]);
    // The `net` feature is off: its module and miolike are not compiled.
    assert!(!caps(rt).contains(&"net.connect".to_string()));
    assert!(krate(&doc, "app", "miolike").is_none());

    // The exported macro expands in the program, `$crate` naming rtlike.
    let own = krate(&doc, "app", "app");
    assert!(findings(own, "process.spawn").contains(&"src/main.rs:2 std::process::Command::new".to_string()), "{own:#?}");

    // cfgbuild's build script sets `has_sockets`: both branches are analyzed.
    let cb = krate(&doc, "app", "cfgbuild");
    assert_eq!(findings(cb, "net.listen"), ["src/lib.rs:3 std::net::TcpListener::bind"]);
    assert_eq!(findings(cb, "fs.read"), ["src/lib.rs:8 std::fs::read"]);

    // Edition-2015 syntax: analyzed, nothing unanalyzed.
    let old = krate(&doc, "app", "oldsig");
    assert_eq!(caps(old), ["env.read"]);
    for c in ["rtlike", "cfgbuild", "oldsig", "app"] {
        assert!(findings(krate(&doc, "app", c), "unanalyzed").is_empty(), "{c}: {doc:#}");
    }

    // A crate analysed and found clean is listed, with no capabilities.
    let pure = krate(&doc, "app", "pure").expect("every compiled crate is listed");
    assert_eq!((pure["version"].as_str(), caps(Some(pure)).len()), (Some("3.0.0"), 0));

    // The workspace's rustflags set `rt_unstable` for every crate: its module is compiled
    // now, and the cached result of the run before is not reused for it.
    world::write(w.ws.path(), ".cargo/config.toml", "[build]\nrustflags = [\"--cfg\", \"rt_unstable\"]\n");
    let doc = surface(&w);
    let rt = krate(&doc, "app", "rtlike");
    assert_eq!(findings(rt, "env.write"), ["src/unstable.rs:2 std::env::set_var"], "{doc:#}");
}

#[test]
fn syscall_macros_and_constant_system_calls() {
    let main = "fn main() {\n    let _ = rtlike::net::dial(3);\n}\n";
    let w = World::new(vec![rtlike(), miolike(), libc(), cfgbuild(), oldsig(), pure()], vec![app("\"net\"", main)]);
    let doc = surface(&w);
    let mio = krate(&doc, "app", "miolike");
    assert_eq!(findings(mio, "net.connect"), ["src/lib.rs:10 libc::connect"], "{doc:#}");
    assert_eq!(findings(mio, "net.listen"), ["src/lib.rs:14 libc::bind"]);
    // `getpid` through the same macro shows only ffi; the futex system call is harmless.
    assert!(findings(mio, "ffi").contains(&"src/lib.rs:22 libc::syscall(SYS_futex)".to_string()), "{mio:#?}");
    assert!(findings(mio, "unanalyzed").is_empty(), "{mio:#?}");
    // The negative twin of the first world: no fs module, no process module.
    let rt = krate(&doc, "app", "rtlike");
    assert!(findings(rt, "fs.write").is_empty() && findings(rt, "process.spawn").is_empty(), "{rt:#?}");
}
