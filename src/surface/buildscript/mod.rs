//! The build-script evaluator: what a package's build script prints to cargo and writes to
//! OUT_DIR, worked out from its source without running it.
//!
//! This module owns the evaluation: reading the script's items (`mod` files and
//! `include!`d ones of the package too), interpreting `main` over a small explicit subset of
//! Rust and of its library ([`interp`], [`library`], [`fmt`], [`deps`]), and merging what
//! every path through the script produces into an [`Evaluation`]: the files it writes in
//! OUT_DIR, the `rustc-cfg`, `rustc-check-cfg`, `rustc-env`, `rustc-link-*` directives it
//! prints, each with the build.rs lines that produced it. The analyzer reads the generated
//! files like written code ([`include`]), the cfg evaluation takes the cfgs as exact when
//! every one the script can print is known, and the engine turns link directives into
//! `build.native` evidence.
//!
//! Values the evaluation cannot know are kept unknown and followed: the environment outside
//! cargo's variables, compile probes, programs other than the compiler's version probe. A
//! decision that depends on one explores every outcome (each path is a fresh run of the
//! script, the choices made where something was unknown replayed from a prefix); an output
//! is known only when every path agrees on it. The compiler's version comes from the
//! workspace's toolchain file, or [`Toolchain::default_stable`].
//!
//! What this module never does: run a process, read a file outside the package, read the
//! environment velaris runs in, or take more than its deterministic [`Budget`] (steps,
//! paths, bytes written, string and collection sizes; never time). Anything outside the
//! subset stops the evaluation, with the construct and the line as the reason, and what it
//! would have produced stays unknown.

pub(crate) mod deps;
pub(crate) mod fmt;
pub mod include;
pub(crate) mod interp;
pub(crate) mod library;
#[cfg(test)]
mod tests;
pub(crate) mod value;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::package::FileTree;
use crate::surface::syntax::mbe::Edition;
use crate::surface::cfg::CfgEnv;
use value::{Class, Kind, Obj, Seg, Sym, V};

/// The value a script sees for `OUT_DIR`.
pub const OUT_DIR_VALUE: &str = "/$OUT_DIR";
/// The value a script sees for `CARGO_MANIFEST_DIR` (and its working directory).
pub const MANIFEST_DIR_VALUE: &str = "/$CARGO_MANIFEST_DIR";
/// How a generated file is named in findings and in the file tree the analyzer reads:
/// `$OUT_DIR/x.rs`.
pub const GENERATED_PREFIX: &str = "$OUT_DIR/";

/// The most paths one evaluation explores.
pub const MAX_PATHS: usize = 256;

/// What an evaluation may spend, across all its paths.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Expressions evaluated.
    pub steps: u64,
    /// Bytes written to files and stdout.
    pub bytes: usize,
    /// Largest string.
    pub max_string: usize,
    /// Largest collection.
    pub max_items: usize,
    /// Bytes of strings and collection items made, in all (not only those alive): bounds the
    /// memory a script can make the evaluation take.
    pub alloc: usize,
    /// For the script's own `macro_rules!`.
    pub(crate) macros: crate::surface::syntax::mbe::Budget,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            steps: 10_000_000,
            bytes: 64 * 1024 * 1024,
            max_string: 8 * 1024 * 1024,
            max_items: 1_000_000,
            alloc: 256 * 1024 * 1024,
            macros: crate::surface::syntax::mbe::Budget::flat_named(
                ("build-script macro steps", "build-script macro tokens", "build-script macro bytes"),
                1_000_000,
                1_000_000,
                64 * 1024 * 1024,
            ),
        }
    }
}

/// How the evaluation knows an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvEntry {
    /// cargo sets it to this.
    Value(String),
    /// cargo leaves it unset.
    Unset,
    /// Set, to a value that is not known (the name is the origin: `RUSTC`).
    Opaque(String),
    /// Maybe set, to anything (the environment cargo runs in).
    Maybe,
}

/// The compiler the build runs with, as the workspace declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// `stable`, `beta`, `nightly`, or `None` when not known.
    pub channel: Option<String>,
    /// Major, minor, patch; `None` where not known.
    pub version: [Option<u32>; 3],
    /// A nightly's or beta's date, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Where it comes from: `rust-toolchain.toml`, `rust-toolchain`, or `default`.
    pub from: String,
}

impl Toolchain {
    /// The version assumed when the workspace declares none: the current stable release when
    /// this was written, 1.95.0.
    pub fn default_stable() -> Toolchain {
        Toolchain { channel: Some("stable".into()), version: [Some(1), Some(95), Some(0)], date: None, from: "default".into() }
    }

    /// The toolchain of the workspace at `root`: the first `rust-toolchain` or
    /// `rust-toolchain.toml` in it or a parent directory (as rustup looks), else the
    /// default. A file that cannot be read or understood gives an unknown version.
    pub fn for_workspace(root: &Path) -> Toolchain {
        let mut dir = Some(root);
        while let Some(d) = dir {
            for name in ["rust-toolchain", "rust-toolchain.toml"] {
                let p = d.join(name);
                if p.is_file() {
                    return match crate::fsio::read_text(&p, 64 * 1024, "a toolchain file") {
                        Ok(text) => Toolchain::parse(&text, name),
                        Err(_) => Toolchain { channel: None, version: [None; 3], date: None, from: name.to_string() },
                    };
                }
            }
            dir = d.parent();
        }
        Toolchain::default_stable()
    }

    /// Read a toolchain file's text (`[toolchain] channel = "..."`, or a bare channel).
    pub fn parse(text: &str, from: &str) -> Toolchain {
        let channel = match toml::from_str::<toml::Table>(text) {
            Ok(t) => t.get("toolchain").and_then(|x| x.get("channel")).and_then(|c| c.as_str()).map(str::to_string),
            Err(_) => text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string),
        };
        let unknown = Toolchain { channel: None, version: [None; 3], date: None, from: from.to_string() };
        let Some(c) = channel else { return unknown };
        let c = c.trim();
        if c == "stable" || c.starts_with("stable-") {
            return Toolchain { from: from.to_string(), ..Toolchain::default_stable() };
        }
        for ch in ["nightly", "beta"] {
            if let Some(rest) = c.strip_prefix(ch) {
                let date = rest.strip_prefix('-').filter(|d| d.len() >= 10 && d[..10].bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() })).map(|d| d[..10].to_string());
                return Toolchain { channel: Some(ch.to_string()), version: [Some(1), None, None], date, from: from.to_string() };
            }
        }
        let nums: Vec<&str> = c.split(|ch: char| ch == '-').next().unwrap_or("").split('.').collect();
        let n = |i: usize| nums.get(i).and_then(|x| x.parse::<u32>().ok());
        if nums.len() >= 2 && nums.len() <= 3 && n(0).is_some() && n(1).is_some() && (nums.len() == 2 || n(2).is_some()) {
            return Toolchain { channel: Some("stable".into()), version: [n(0), n(1), n(2)], date: None, from: from.to_string() };
        }
        unknown
    }

    /// `1.95.0`, `1.85.x`, `1.x.x-nightly`, or `unknown`.
    pub fn version_text(&self) -> String {
        if self.channel.is_none() {
            return "unknown".into();
        }
        let p = |x: Option<u32>| x.map_or("x".to_string(), |v| v.to_string());
        let mut s = format!("{}.{}.{}", p(self.version[0]), p(self.version[1]), p(self.version[2]));
        if let Some(c) = self.channel.as_deref().filter(|c| *c != "stable") {
            s.push('-');
            s.push_str(c);
        }
        if let Some(d) = &self.date {
            s.push_str(&format!(" ({d})"));
        }
        s
    }

    /// What part of the cache key the toolchain is.
    pub fn fingerprint(&self) -> String {
        format!("toolchain {} from {}", self.version_text(), self.from)
    }

    fn part(&self, i: usize) -> V {
        match self.version[i] {
            Some(v) if self.channel.is_some() => V::Int(v as i128),
            _ => V::unknown("the compiler's version", Kind::Int),
        }
    }

    pub(crate) fn version_obj(&self) -> V {
        V::obj(Obj::Version(self.part(0), self.part(1), self.part(2)))
    }

    pub(crate) fn channel_value(&self) -> V {
        match &self.channel {
            Some(c) => V::str(c),
            None => V::unknown("the compiler's channel", Kind::Str),
        }
    }

    /// What `rustc --version` (`-vV` when `verbose`) prints.
    pub(crate) fn version_output(&self, verbose: bool, host: &str) -> Sym {
        let Some(ch) = &self.channel else { return vec![Seg::Hole(Class::Any)] };
        let num = |x: Option<u32>| match x {
            Some(v) => Seg::Lit(v.to_string()),
            None => Seg::Hole(Class::Int),
        };
        let mut release: Sym = vec![num(self.version[0]), Seg::Lit(".".into()), num(self.version[1]), Seg::Lit(".".into()), num(self.version[2])];
        match ch.as_str() {
            "nightly" => release.push(Seg::Lit("-nightly".into())),
            "beta" => {
                release.push(Seg::Lit("-beta.".into()));
                release.push(Seg::Hole(Class::Int));
            }
            _ => {}
        }
        let date = match &self.date {
            Some(d) => Seg::Lit(d.clone()),
            None => Seg::Hole(Class::Date),
        };
        let mut out: Sym = vec![Seg::Lit("rustc ".into())];
        out.extend(release.iter().cloned());
        out.extend([Seg::Lit(" (".into()), Seg::Hole(Class::Hex), Seg::Lit(" ".into()), date.clone(), Seg::Lit(")\n".into())]);
        if verbose {
            out.extend([Seg::Lit("binary: rustc\ncommit-hash: ".into()), Seg::Hole(Class::Hex), Seg::Lit("\ncommit-date: ".into()), date, Seg::Lit(format!("\nhost: {host}\nrelease: "))]);
            out.extend(release);
            out.extend([Seg::Lit("\nLLVM version: ".into()), Seg::Hole(Class::Version), Seg::Lit("\n".into())]);
        }
        value::normalize(out)
    }
}

/// Everything an evaluation reads.
pub struct Input<'a> {
    pub files: &'a FileTree,
    /// The build script's root file (`build.rs`).
    pub root: &'a str,
    pub env: BTreeMap<String, EnvEntry>,
    /// The cfgs the build script itself is compiled with (for `cfg!` and `#[cfg]` in it).
    pub host_cfg: &'a CfgEnv,
    pub toolchain: &'a Toolchain,
    pub host: String,
    pub target_os: String,
    pub target_family: String,
    pub target_arch: String,
    pub pointer_width: u32,
    /// The script's dependencies: extern name → crate name.
    pub deps: BTreeMap<String, String>,
    pub edition: Edition,
}

/// A package whose build script is evaluated.
pub struct Package<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub files: &'a FileTree,
    /// The build script's root file.
    pub root: &'a str,
    /// The package's enabled features (what `CARGO_FEATURE_*` says).
    pub features: &'a BTreeSet<String>,
    pub links: Option<&'a str>,
    /// The cfgs of the target the package is built for, with the workspace's flags.
    pub target_cfg: &'a CfgEnv,
    /// The cfgs the build script itself is compiled with.
    pub host_cfg: &'a CfgEnv,
    /// The workspace's rustflags, when known (`CARGO_ENCODED_RUSTFLAGS`).
    pub rustflags: Option<&'a [String]>,
    pub toolchain: &'a Toolchain,
    /// Extern name → crate name of the build script's dependencies.
    pub deps: BTreeMap<String, String>,
    pub edition: Edition,
    /// What the evaluation may spend ([`Budget::default`]).
    pub budget: Budget,
}

/// The environment cargo gives the build script.
fn cargo_env(p: &Package) -> BTreeMap<String, EnvEntry> {
    use EnvEntry::*;
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: EnvEntry| {
        env.insert(k.to_string(), v);
    };
    set("OUT_DIR", Value(OUT_DIR_VALUE.into()));
    set("CARGO_MANIFEST_DIR", Value(MANIFEST_DIR_VALUE.into()));
    set("CARGO_MANIFEST_PATH", Value(format!("{MANIFEST_DIR_VALUE}/Cargo.toml")));
    set("CARGO_MANIFEST_LINKS", p.links.map_or(Unset, |l| Value(l.to_string())));
    set("CARGO_PKG_NAME", Value(p.name.to_string()));
    set("CARGO_CRATE_NAME", Value("build_script_build".into()));
    set("CARGO_PKG_VERSION", Value(p.version.to_string()));
    let sv = semver::Version::parse(p.version).ok();
    match &sv {
        Some(v) => {
            set("CARGO_PKG_VERSION_MAJOR", Value(v.major.to_string()));
            set("CARGO_PKG_VERSION_MINOR", Value(v.minor.to_string()));
            set("CARGO_PKG_VERSION_PATCH", Value(v.patch.to_string()));
            set("CARGO_PKG_VERSION_PRE", Value(v.pre.to_string()));
        }
        None => {
            for k in ["MAJOR", "MINOR", "PATCH", "PRE"] {
                set(&format!("CARGO_PKG_VERSION_{k}"), Opaque(format!("CARGO_PKG_VERSION_{k}")));
            }
        }
    }
    // Metadata from the manifest; cargo sets each, empty when absent.
    let manifest = p.files.get("Cargo.toml").and_then(|b| std::str::from_utf8(b).ok()).and_then(|t| toml::from_str::<toml::Table>(t).ok());
    let pkg = manifest.as_ref().and_then(|m| m.get("package")).and_then(|x| x.as_table());
    for (var, key) in [
        ("CARGO_PKG_DESCRIPTION", "description"),
        ("CARGO_PKG_HOMEPAGE", "homepage"),
        ("CARGO_PKG_REPOSITORY", "repository"),
        ("CARGO_PKG_LICENSE", "license"),
        ("CARGO_PKG_LICENSE_FILE", "license-file"),
        ("CARGO_PKG_RUST_VERSION", "rust-version"),
        ("CARGO_PKG_README", "readme"),
        ("CARGO_PKG_AUTHORS", "authors"),
    ] {
        let e = match pkg.map(|t| t.get(key)) {
            None => Opaque(var.to_string()),
            Some(None) => Value(String::new()),
            Some(Some(toml::Value::String(s))) => Value(s.clone()),
            Some(Some(toml::Value::Array(a))) if key == "authors" => match a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>() {
                Some(v) => Value(v.join(":")),
                None => Opaque(var.to_string()),
            },
            Some(Some(_)) => Opaque(var.to_string()),
        };
        set(var, e);
    }
    for f in p.features {
        set(&format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_")), Value("1".into()));
    }
    // CARGO_CFG_*: the target's cfgs and the workspace's `--cfg` flags.
    let mut cfgs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in p.target_cfg.cfgs().iter().chain(p.target_cfg.flags()) {
        let (name, val) = match c {
            cargo_platform::Cfg::Name(i) => (i.name.clone(), None),
            cargo_platform::Cfg::KeyPair(i, v) => (i.name.clone(), Some(v.clone())),
        };
        if name == "feature" {
            continue;
        }
        let e = cfgs.entry(name).or_default();
        if let Some(v) = val {
            e.push(v);
        }
    }
    for (name, vals) in cfgs {
        set(&format!("CARGO_CFG_{}", name.to_uppercase()), Value(vals.join(",")));
    }
    // Profile-dependent: not known.
    for k in ["CARGO_CFG_DEBUG_ASSERTIONS", "CARGO_CFG_OVERFLOW_CHECKS"] {
        set(k, Maybe);
    }
    let triple = p.target_cfg.triple().to_string();
    set("TARGET", Value(triple.clone()));
    // velaris takes the host to be the target (docs/caveats.md).
    set("HOST", Value(triple));
    for k in ["NUM_JOBS", "OPT_LEVEL", "DEBUG", "PROFILE", "RUSTC", "RUSTDOC", "CARGO", "CARGO_MAKEFLAGS"] {
        set(k, Opaque(k.to_string()));
    }
    set(
        "CARGO_ENCODED_RUSTFLAGS",
        match p.rustflags {
            Some(f) => Value(f.join("\u{1f}")),
            None => Opaque("CARGO_ENCODED_RUSTFLAGS".into()),
        },
    );
    env
}

fn target_value(cfg: &CfgEnv, key: &str) -> String {
    cfg.cfgs()
        .iter()
        .find_map(|c| match c {
            cargo_platform::Cfg::KeyPair(i, v) if i.name == key => Some(v.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// One directive value with the lines that printed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Printed {
    pub value: String,
    pub origin: Vec<String>,
}

/// A range of lines of a generated file, and the build script lines that wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lines {
    pub from: u32,
    pub to: u32,
    pub origin: Vec<String>,
}

/// A file the script writes in OUT_DIR, known on every path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedFile {
    /// `$OUT_DIR/private.rs`.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    pub lines: Vec<Lines>,
    /// The text (kept in the cache; not in the surface JSON).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
}

/// Something the script may produce whose value is not known, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unknown {
    pub name: String,
    pub why: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CfgOutput {
    /// Every `rustc-cfg` the script can print is known: the set is exact.
    pub exact: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The cfgs printed on every path.
    pub set: Vec<Printed>,
    /// Names printed on some paths only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<Unknown>,
}

/// `rustc-env` directives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvOutput {
    pub name: String,
    /// `None`: not known.
    pub value: Option<String>,
    pub origin: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// `rustc-link-lib`, `rustc-link-search`, `rustc-link-arg*`, `rustc-flags` directives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LinkOutput {
    pub kind: String,
    /// `None`: not known.
    pub value: Option<String>,
    pub origin: Vec<String>,
}

/// What evaluating a build script found: docs/json.md (`build_scripts[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The build script's root file.
    pub script: String,
    /// The compiler version probes were answered with, and where it comes from.
    pub toolchain: String,
    pub toolchain_from: String,
    /// Every path ran to its end within the modelled subset.
    pub complete: bool,
    /// Paths explored.
    pub paths: u32,
    /// Why the evaluation stopped (construct and line), when it did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<String>,
    /// The unknown values the outputs vary with (where the paths split).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Files known on every path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GeneratedFile>,
    /// Files whose content is not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_files: Vec<Unknown>,
    /// Why files other than those listed may exist in OUT_DIR (`None`: no others do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_files: Option<String>,
    pub cfg: CfgOutput,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_cfg: Vec<Printed>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvOutput>,
    /// Why `rustc-env` variables other than those listed may be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_env: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<LinkOutput>,
    /// sha256 of the rest: part of the cache key of the package's other units.
    pub digest: String,
}

impl Evaluation {
    /// An evaluation that could not start (the script does not parse, a module is missing).
    fn not_started(p: &Package, why: String) -> Evaluation {
        let mut e = Evaluation {
            script: p.root.to_string(),
            toolchain: p.toolchain.version_text(),
            toolchain_from: p.toolchain.from.clone(),
            stopped: vec![why.clone()],
            other_files: Some(why.clone()),
            other_env: Some(why.clone()),
            cfg: CfgOutput { exact: false, why: Some(why), ..CfgOutput::default() },
            ..Evaluation::default()
        };
        e.seal();
        e
    }

    fn seal(&mut self) {
        self.digest.clear();
        let mut h = Sha256::new();
        h.update(serde_json::to_string(self).unwrap_or_default().as_bytes());
        self.digest = format!("{:x}", h.finalize());
    }

    /// The cfg set to evaluate the package with: `Some` when exact.
    pub fn exact_cfgs(&self) -> Option<BTreeSet<cargo_platform::Cfg>> {
        if !self.cfg.exact {
            return None;
        }
        self.cfg.set.iter().map(|p| cargo_platform::Cfg::from_str(&p.value).ok()).collect()
    }

    /// Features the script turns on with `rustc-cfg=feature="x"`, on every path.
    pub fn features(&self) -> BTreeSet<String> {
        self.cfg
            .set
            .iter()
            .filter_map(|p| match cargo_platform::Cfg::from_str(&p.value) {
                Ok(cargo_platform::Cfg::KeyPair(i, v)) if i.name == "feature" => Some(v),
                _ => None,
            })
            .collect()
    }

    /// A known generated file by its tree name (`$OUT_DIR/x.rs`).
    pub fn file(&self, name: &str) -> Option<&GeneratedFile> {
        self.files.iter().find(|f| f.path == name)
    }

    /// Add the known generated files to a package's tree, under `$OUT_DIR/`.
    pub fn add_to(&self, tree: &mut FileTree) {
        for f in &self.files {
            tree.insert(f.path.clone(), f.content.clone().into_bytes());
        }
    }

    /// The record shown in the surface JSON: the same without the files' text.
    pub fn record(&self) -> Evaluation {
        let mut r = self.clone();
        for f in &mut r.files {
            f.content.clear();
        }
        r
    }

    /// `rustc-link-*` directives as (file, line, text) places, for `build.native`.
    pub fn link_evidence(&self) -> Vec<(String, u32, String)> {
        let mut out = Vec::new();
        for l in &self.link {
            let text = format!("cargo:{}={}", l.kind, l.value.as_deref().unwrap_or("(a value the evaluation does not know)"));
            for o in &l.origin {
                if let Some((f, n)) = o.rsplit_once(':') {
                    out.push((f.to_string(), n.parse().unwrap_or(1), text.clone()));
                }
            }
        }
        out
    }
}

/// What one path produced, read from its state.
#[derive(Default)]
struct PathOut {
    cfgs: BTreeMap<String, BTreeSet<String>>,
    cfg_unknown: Option<String>,
    check: BTreeMap<String, BTreeSet<String>>,
    env: BTreeMap<String, (Option<String>, BTreeSet<String>)>,
    env_unknown: Option<String>,
    links: BTreeMap<(String, Option<String>), BTreeSet<String>>,
    files: BTreeMap<String, Result<(String, Vec<BTreeSet<String>>), String>>,
    other_files: Option<String>,
    failed: bool,
}

/// Read what a path printed and wrote.
fn path_out(st: &interp::PathState) -> PathOut {
    let mut out = PathOut::default();
    // Lines of stdout with the places that printed them.
    let mut lines: Vec<(Sym, BTreeSet<String>)> = Vec::new();
    let mut cur: Sym = Vec::new();
    let mut cur_origin: BTreeSet<String> = BTreeSet::new();
    let mut any_hole: Option<String> = None;
    // The places that print text that may hold any directive (a `link` origin is a place).
    let mut hole_origin: BTreeSet<String> = BTreeSet::new();
    for c in &st.stdout {
        for seg in &c.text {
            match seg {
                Seg::Lit(l) => {
                    let mut parts = l.split('\n').peekable();
                    while let Some(p) = parts.next() {
                        if !p.is_empty() {
                            cur.push(Seg::Lit(p.to_string()));
                            cur_origin.insert(c.origin.to_string());
                        }
                        if parts.peek().is_some() {
                            cur_origin.insert(c.origin.to_string());
                            lines.push((value::normalize(std::mem::take(&mut cur)), std::mem::take(&mut cur_origin)));
                        }
                    }
                }
                Seg::Hole(class) => {
                    if class.may_contain('\n') {
                        any_hole.get_or_insert_with(|| format!("{} prints text the evaluation does not know", c.origin));
                        hole_origin.insert(c.origin.to_string());
                    }
                    cur.push(seg.clone());
                    cur_origin.insert(c.origin.to_string());
                }
            }
        }
    }
    if !cur.is_empty() {
        lines.push((value::normalize(cur), cur_origin));
    }
    if let Some(why) = any_hole {
        out.cfg_unknown = Some(why.clone());
        out.env_unknown = Some(why.clone());
        out.links.entry(("rustc-link-lib".into(), None)).or_default().extend(hole_origin);
    }
    for (line, origin) in lines {
        let text = match fmt::literal(&line) {
            Some(t) => t,
            None => {
                let pre = value::known_prefix(&line).to_string();
                let at = origin.iter().next().cloned().unwrap_or_default();
                let why = format!("{at} prints a directive with parts the evaluation does not know");
                let rest = pre.strip_prefix("cargo::").or_else(|| pre.strip_prefix("cargo:"));
                let Some(rest) = rest else {
                    if "cargo::".starts_with(&pre) || pre.is_empty() {
                        out.cfg_unknown.get_or_insert(why.clone());
                        out.env_unknown.get_or_insert(why.clone());
                        out.links.entry(("rustc-link-lib".into(), None)).or_default().extend(origin.clone());
                    }
                    continue;
                };
                match rest.split_once('=') {
                    None => {
                        out.cfg_unknown.get_or_insert(why.clone());
                        out.env_unknown.get_or_insert(why.clone());
                        out.links.entry(("rustc-link-lib".into(), None)).or_default().extend(origin.clone());
                    }
                    Some(("rustc-cfg", _)) => {
                        out.cfg_unknown.get_or_insert(why);
                    }
                    Some(("rustc-env", v)) => match v.split_once('=') {
                        Some((k, _)) => {
                            out.env.insert(k.to_string(), (None, origin));
                        }
                        None => {
                            out.env_unknown.get_or_insert(why);
                        }
                    },
                    Some((k, _)) if k.starts_with("rustc-link") || k == "rustc-flags" || k == "rustc-cdylib-link-arg" => {
                        out.links.entry((k.to_string(), None)).or_default().extend(origin);
                    }
                    Some(_) => {}
                }
                continue;
            }
        };
        let (rest, new) = if let Some(r) = text.strip_prefix("cargo::") {
            (r, true)
        } else if let Some(r) = text.strip_prefix("cargo:") {
            (r, false)
        } else {
            continue;
        };
        let Some((key, val)) = rest.split_once('=') else {
            if new {
                out.failed = true;
            }
            continue;
        };
        match key {
            "rustc-cfg" => match cargo_platform::Cfg::from_str(val) {
                Ok(c) => {
                    out.cfgs.entry(c.to_string()).or_default().extend(origin);
                }
                // rustc refuses it: the build fails.
                Err(_) => out.failed = true,
            },
            "rustc-check-cfg" => {
                out.check.entry(val.to_string()).or_default().extend(origin);
            }
            "rustc-env" => match val.split_once('=') {
                Some((k, v)) => {
                    let e = out.env.entry(k.to_string()).or_insert((Some(v.to_string()), BTreeSet::new()));
                    e.0 = Some(v.to_string());
                    e.1.extend(origin);
                }
                None => out.failed = true,
            },
            "rustc-flags" => {
                let words: Vec<&str> = val.split_whitespace().collect();
                let mut i = 0;
                while i < words.len() {
                    let (kind, v) = match words[i] {
                        "-l" => ("rustc-link-lib", words.get(i + 1).copied()),
                        "-L" => ("rustc-link-search", words.get(i + 1).copied()),
                        w if w.starts_with("-l") => ("rustc-link-lib", Some(&w[2..])),
                        w if w.starts_with("-L") => ("rustc-link-search", Some(&w[2..])),
                        _ => {
                            i += 1;
                            continue;
                        }
                    };
                    if matches!(words[i], "-l" | "-L") {
                        i += 1;
                    }
                    i += 1;
                    out.links.entry((kind.to_string(), v.map(str::to_string))).or_default().extend(origin.clone());
                }
            }
            k if k.starts_with("rustc-link") || k == "rustc-cdylib-link-arg" => {
                out.links.entry((k.to_string(), Some(val.to_string()))).or_default().extend(origin);
            }
            "error" if new => out.failed = true,
            "warning" | "rerun-if-changed" | "rerun-if-env-changed" | "metadata" => {}
            _ if new => out.failed = true,
            _ => {}
        }
    }
    // Files.
    if let Some(c) = &st.clobbered {
        out.other_files = Some(c.clone());
    } else if !st.tainted.is_empty() {
        let mut tainted = st.tainted.clone();
        tainted.sort();
        tainted.dedup();
        let dirs: Vec<String> = tainted.iter().map(|t| if t.is_empty() { "the package directory".to_string() } else { format!("{GENERATED_PREFIX}{t}") }).collect();
        out.other_files = Some(format!("a compiler run writes files in {}", dirs.join(", ")));
    }
    for (name, f) in &st.files {
        let r = if let Some(c) = &st.clobbered {
            Err(c.clone())
        } else if st.tainted.iter().any(|t| !t.is_empty() && (name == t || name.starts_with(&format!("{t}/")))) {
            Err("a compiler run writes in its directory".to_string())
        } else {
            let mut text = String::new();
            let mut per_line: Vec<BTreeSet<String>> = vec![BTreeSet::new()];
            let mut unknown = None;
            for ch in &f.chunks {
                match fmt::literal(&ch.text) {
                    Some(t) => {
                        let parts: Vec<&str> = t.split('\n').collect();
                        let last = parts.len() - 1;
                        for (i, part) in parts.iter().enumerate() {
                            if i > 0 {
                                per_line.push(BTreeSet::new());
                            }
                            // A line gets the origin of what wrote its text or its newline.
                            if !part.is_empty() || i < last {
                                per_line.last_mut().unwrap().insert(ch.origin.to_string());
                            }
                        }
                        text.push_str(&t);
                    }
                    None => {
                        unknown.get_or_insert(format!("{} writes text the evaluation does not know", ch.origin));
                    }
                }
            }
            if text.ends_with('\n') {
                per_line.pop();
            }
            match unknown {
                Some(w) => Err(w),
                None => Ok((text, per_line)),
            }
        };
        out.files.insert(name.clone(), r);
    }
    out
}

/// Compress per-line origins into ranges (at most 2,000; the lines after those share the
/// last range).
fn ranges(per_line: &[BTreeSet<String>]) -> Vec<Lines> {
    let mut out: Vec<Lines> = Vec::new();
    for (i, o) in per_line.iter().enumerate() {
        let origin: Vec<String> = o.iter().cloned().collect();
        let n = i as u32 + 1;
        let full = out.len() >= 2000;
        if let Some(l) = out.last_mut() {
            if l.origin == origin {
                l.to = n;
                continue;
            }
            if full {
                l.origin.extend(origin);
                l.origin.sort();
                l.origin.dedup();
                l.to = n;
                continue;
            }
        }
        out.push(Lines { from: n, to: n, origin });
    }
    out
}

/// Evaluate a package's build script.
///
/// Like [`crate::surface::analyze::analyze`], this releases proc-macro2's span table of the
/// thread when it is done: no span made on this thread before the call may be used after it.
pub fn evaluate(p: &Package) -> Evaluation {
    let e = evaluate_inner(p);
    proc_macro2::extra::invalidate_current_thread_spans();
    e
}

fn evaluate_inner(p: &Package) -> Evaluation {
    let script = match interp::Script::load(p.files, p.root, p.host_cfg, p.edition) {
        Ok(s) => s,
        Err(e) => return Evaluation::not_started(p, e),
    };
    let input = Input {
        files: p.files,
        root: p.root,
        env: cargo_env(p),
        host_cfg: p.host_cfg,
        toolchain: p.toolchain,
        host: p.target_cfg.triple().to_string(),
        target_os: target_value(p.target_cfg, "target_os"),
        target_family: target_value(p.target_cfg, "target_family"),
        target_arch: target_value(p.target_cfg, "target_arch"),
        pointer_width: target_value(p.target_cfg, "target_pointer_width").parse().unwrap_or(64),
        deps: p.deps.clone(),
        edition: p.edition,
    };
    let mut budget = p.budget.clone();
    let mut queue: Vec<Vec<usize>> = vec![Vec::new()];
    let mut outs: Vec<PathOut> = Vec::new();
    let mut stops: BTreeSet<String> = BTreeSet::new();
    let mut depends: Vec<String> = Vec::new();
    let mut paths = 0u32;
    let mut links_seen: BTreeMap<(String, Option<String>), BTreeSet<String>> = BTreeMap::new();
    let mut aborted: Option<String> = None;
    let mut first_failure: Option<String> = None;
    while let Some(prefix) = queue.pop() {
        if paths as usize >= MAX_PATHS {
            aborted = Some(format!("the outputs depend on more than {MAX_PATHS} combinations of values the evaluation does not know"));
            break;
        }
        paths += 1;
        let mut it = interp::Interp::new(&script, &input, &mut budget, &prefix, p.deps.clone());
        let r = it.run_main();
        let taken = it.pos;
        let new = std::mem::take(&mut it.new_choices);
        let st = std::mem::take(&mut it.st);
        drop(it);
        // The other options of each new choice point.
        let base = prefix.len();
        for (j, n) in new.iter().enumerate().rev() {
            for k in (1..*n).rev() {
                let mut np = prefix.clone();
                np.resize(base + j, 0);
                np.push(k);
                queue.push(np);
            }
        }
        let _ = taken;
        for c in &st.choices {
            if depends.len() < 20 && !depends.iter().any(|d| **d == **c) {
                depends.push(c.to_string());
            }
        }
        match r {
            Err(interp::Flow::Fail(why)) => {
                first_failure.get_or_insert(why);
            }
            Err(interp::Flow::Stop(why)) => {
                let o = path_out(&st);
                for (k, v) in o.links {
                    links_seen.entry(k).or_default().extend(v);
                }
                stops.insert(why);
            }
            Err(other) => {
                stops.insert(format!("{other:?}"));
            }
            Ok(()) => {
                let o = path_out(&st);
                if o.failed {
                    first_failure.get_or_insert_with(|| "a directive cargo refuses".to_string());
                    continue;
                }
                for (k, v) in &o.links {
                    links_seen.entry(k.clone()).or_default().extend(v.iter().cloned());
                }
                outs.push(o);
            }
        }
        if budget.steps == 0 {
            aborted.get_or_insert_with(|| "the evaluation's step budget is spent".to_string());
            break;
        }
    }
    let mut e = Evaluation {
        script: p.root.to_string(),
        toolchain: p.toolchain.version_text(),
        toolchain_from: p.toolchain.from.clone(),
        paths,
        depends_on: depends,
        link: links_seen.into_iter().map(|((kind, value), o)| LinkOutput { kind, value, origin: o.into_iter().collect() }).collect(),
        ..Evaluation::default()
    };
    let mut stopped: Vec<String> = stops.into_iter().take(10).collect();
    if let Some(a) = aborted {
        stopped.insert(0, a);
    }
    if outs.is_empty() && stopped.is_empty() {
        stopped.push(format!("every path through the script fails ({})", first_failure.unwrap_or_default()));
    }
    if !stopped.is_empty() {
        let why = format!("the evaluation stopped: {}", stopped[0]);
        e.stopped = stopped;
        e.complete = false;
        e.cfg = CfgOutput { exact: false, why: Some(why.clone()), ..CfgOutput::default() };
        e.other_files = Some(why.clone());
        e.other_env = Some(why);
        e.seal();
        return e;
    }
    e.complete = true;
    let n = outs.len();
    let varies = || {
        if e.depends_on.is_empty() { String::new() } else { format!(" (it depends on {})", e.depends_on.iter().take(4).cloned().collect::<Vec<_>>().join(", ")) }
    };
    let varies_text = varies();
    // Files.
    let names: BTreeSet<String> = outs.iter().flat_map(|o| o.files.keys().cloned()).collect();
    for name in names {
        let shown = format!("{GENERATED_PREFIX}{name}");
        let mut known: Option<(String, Vec<BTreeSet<String>>)> = None;
        let mut why: Option<String> = None;
        for o in &outs {
            match o.files.get(&name) {
                None => {
                    why.get_or_insert(format!("written on some paths only{varies_text}"));
                }
                Some(Err(w)) => {
                    why.get_or_insert(w.clone());
                }
                Some(Ok((text, per_line))) => match &mut known {
                    None => known = Some((text.clone(), per_line.clone())),
                    Some((t, lines)) => {
                        if t != text {
                            why.get_or_insert(format!("its text differs between paths{varies_text}"));
                        } else {
                            for (a, b) in lines.iter_mut().zip(per_line) {
                                a.extend(b.iter().cloned());
                            }
                        }
                    }
                },
            }
        }
        match (why, known) {
            (None, Some((text, per_line))) => {
                let mut h = Sha256::new();
                h.update(text.as_bytes());
                e.files.push(GeneratedFile { path: shown, sha256: format!("{:x}", h.finalize()), bytes: text.len() as u64, lines: ranges(&per_line), content: text });
            }
            (Some(w), _) => e.unknown_files.push(Unknown { name: shown, why: w }),
            (None, None) => {}
        }
    }
    e.other_files = outs.iter().find_map(|o| o.other_files.clone());
    // Cfgs.
    let all: BTreeSet<String> = outs.iter().flat_map(|o| o.cfgs.keys().cloned()).collect();
    let cfg_unknown = outs.iter().find_map(|o| o.cfg_unknown.clone());
    for c in &all {
        let on = outs.iter().filter(|o| o.cfgs.contains_key(c)).count();
        if on == n {
            let origin: BTreeSet<String> = outs.iter().flat_map(|o| o.cfgs[c].iter().cloned()).collect();
            e.cfg.set.push(Printed { value: c.clone(), origin: origin.into_iter().collect() });
        } else {
            e.cfg.unknown.push(Unknown { name: c.clone(), why: format!("printed on some paths only{varies_text}") });
        }
    }
    e.cfg.exact = cfg_unknown.is_none() && e.cfg.unknown.is_empty();
    e.cfg.why = cfg_unknown.or_else(|| e.cfg.unknown.first().map(|u| format!("cfg {}: {}", u.name, u.why)));
    let checks: BTreeMap<String, BTreeSet<String>> = outs.iter().flat_map(|o| o.check.iter().map(|(k, v)| (k.clone(), v.clone()))).fold(BTreeMap::new(), |mut m, (k, v)| {
        m.entry(k).or_insert_with(BTreeSet::new).extend(v);
        m
    });
    e.check_cfg = checks.into_iter().map(|(value, o)| Printed { value, origin: o.into_iter().collect() }).collect();
    // Environment.
    let keys: BTreeSet<String> = outs.iter().flat_map(|o| o.env.keys().cloned()).collect();
    for k in keys {
        let vals: Vec<Option<&(Option<String>, BTreeSet<String>)>> = outs.iter().map(|o| o.env.get(&k)).collect();
        let origin: Vec<String> = vals.iter().flatten().flat_map(|(_, o)| o.iter().cloned()).collect::<BTreeSet<_>>().into_iter().collect();
        let first = vals[0].and_then(|(v, _)| v.clone());
        let same = vals.iter().all(|v| v.is_some_and(|(x, _)| x.is_some() && *x == first));
        if same {
            e.env.push(EnvOutput { name: k, value: first, origin, why: None });
        } else {
            let why = if vals.iter().any(|v| v.is_none()) { format!("set on some paths only{varies_text}") } else { format!("its value is not known{varies_text}") };
            e.env.push(EnvOutput { name: k, value: None, origin, why: Some(why) });
        }
    }
    e.other_env = outs.iter().find_map(|o| o.env_unknown.clone());
    e.seal();
    e
}

/// What the analysis of a unit needs from its package's build-script evaluation, checked
/// and in force: `None` when the package has no evaluation.
pub fn cfg_others(eval: Option<&Evaluation>) -> crate::surface::cfg::Others {
    match eval.and_then(|e| e.exact_cfgs()) {
        Some(set) => crate::surface::cfg::Others::Exact(set.into_iter().filter(|c| !crate::surface::cfg::is_compiler_name(crate::surface::cfg::cfg_name(c))).collect()),
        None => crate::surface::cfg::Others::Unknown,
    }
}
