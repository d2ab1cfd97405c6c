//! A workspace on disk whose registry dependencies are served by the registry double: the
//! packages, their `.crate` files, a `Cargo.lock` with their checksums, a `CARGO_HOME` whose
//! config replaces crates.io with the double, and a velaris cache directory.

#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use super::archives;
use super::registry_double::{RegistryDouble, cargo_home_replacing_crates_io, sha256_hex};

pub const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// A package: its files (`Cargo.toml` among them) and the names of the packages it depends on.
pub struct Pkg {
    pub name: String,
    pub version: String,
    pub files: Vec<(String, String)>,
    pub deps: Vec<String>,
}

impl Pkg {
    pub fn new(name: &str, version: &str, files: &[(&str, &str)], deps: &[&str]) -> Pkg {
        Pkg {
            name: name.into(),
            version: version.into(),
            files: files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect(),
            deps: deps.iter().map(|d| d.to_string()).collect(),
        }
    }
}

pub struct World {
    pub reg: RegistryDouble,
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
    pub cache: tempfile::TempDir,
}

pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

impl World {
    /// `registry` packages are published to the double; `members` are workspace members in
    /// directories named after them.
    pub fn new(registry: Vec<Pkg>, members: Vec<Pkg>) -> World {
        let reg = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&reg.index_url());
        let w = World { reg, home, ws: tempfile::tempdir().unwrap(), cache: tempfile::tempdir().unwrap() };
        let root = w.ws.path();
        let mut lock = String::from("version = 3\n\n");
        let deps_line = |deps: &[String]| {
            if deps.is_empty() {
                String::new()
            } else {
                format!("dependencies = [{}]\n", deps.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", "))
            }
        };
        let mut all: Vec<&Pkg> = registry.iter().chain(members.iter()).collect();
        all.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        for p in all {
            let is_member = members.iter().any(|m| std::ptr::eq(m, p));
            if is_member {
                lock.push_str(&format!("[[package]]\nname = \"{}\"\nversion = \"{}\"\n{}\n", p.name, p.version, deps_line(&p.deps)));
                for (rel, text) in &p.files {
                    write(root, &format!("{}/{rel}", p.name), text);
                }
            } else {
                let files: Vec<(&str, &str)> = p.files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                let bytes = archives::crate_bytes(&p.name, &p.version, &files);
                w.reg.add_crate(&p.name, &p.version, &bytes);
                lock.push_str(&format!(
                    "[[package]]\nname = \"{}\"\nversion = \"{}\"\nsource = \"{CRATES_IO}\"\nchecksum = \"{}\"\n{}\n",
                    p.name,
                    p.version,
                    sha256_hex(&bytes),
                    deps_line(&p.deps)
                ));
            }
        }
        write(root, "Cargo.lock", &lock);
        let names: Vec<String> = members.iter().map(|m| format!("\"{}\"", m.name)).collect();
        write(root, "Cargo.toml", &format!("[workspace]\nmembers = [{}]\nresolver = \"2\"\n", names.join(", ")));
        w
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_in(self.ws.path(), args)
    }

    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Output {
        super::registry_double::velaris_command(dir, self.home.path(), self.cache.path())
            .args(args)
            .output()
            .unwrap()
    }
}

pub fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
