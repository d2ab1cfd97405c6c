//! The capability surface data model shared by the analyzer, the workspace graph, the
//! renderers and the baseline.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a program, or a crate compiled into it, can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    FsRead,
    FsWrite,
    NetConnect,
    NetListen,
    ProcessSpawn,
    EnvRead,
    EnvWrite,
    Ffi,
    Unsafe,
    Asm,
    DynamicLoad,
    PreMain,
    BuildScript,
    BuildProcMacro,
    BuildNative,
    Unanalyzed,
}

impl Capability {
    pub const ALL: &'static [Capability] = &[
        Capability::FsRead,
        Capability::FsWrite,
        Capability::NetConnect,
        Capability::NetListen,
        Capability::ProcessSpawn,
        Capability::EnvRead,
        Capability::EnvWrite,
        Capability::Ffi,
        Capability::Unsafe,
        Capability::Asm,
        Capability::DynamicLoad,
        Capability::PreMain,
        Capability::BuildScript,
        Capability::BuildProcMacro,
        Capability::BuildNative,
        Capability::Unanalyzed,
    ];

    /// The stable name used in rules, baselines and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::FsRead => "fs.read",
            Capability::FsWrite => "fs.write",
            Capability::NetConnect => "net.connect",
            Capability::NetListen => "net.listen",
            Capability::ProcessSpawn => "process.spawn",
            Capability::EnvRead => "env.read",
            Capability::EnvWrite => "env.write",
            Capability::Ffi => "ffi",
            Capability::Unsafe => "unsafe",
            Capability::Asm => "asm",
            Capability::DynamicLoad => "dynamic-load",
            Capability::PreMain => "pre-main",
            Capability::BuildScript => "build.script",
            Capability::BuildProcMacro => "build.proc-macro",
            Capability::BuildNative => "build.native",
            Capability::Unanalyzed => "unanalyzed",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown capability {0:?}")]
pub struct UnknownCapability(pub String);

impl FromStr for Capability {
    type Err = UnknownCapability;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCapability(s.to_string()))
    }
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// When the code behind a finding runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// In the program.
    Runtime,
    /// At build time: build scripts and proc macros.
    Build,
}

/// One place in the code that shows a capability.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Finding {
    pub capability: Capability,
    pub scope: Scope,
    /// Path of the file relative to the package root, '/'-separated.
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// What the code resolved to: `std::fs::write`, `libc::system`, `extern "C" fn execve`,
    /// `unsafe block`, `asm!`, `parse error: ...`; for a call of a dependency's function that
    /// reaches the capability, that function (`tokio::fs::write`).
    pub path: String,
    /// For a capability reached through a dependency's API: the places it goes through, in
    /// order, each in a dependency's code, the last one where the capability is used
    /// (`tokio 1.54.1 src/fs/write.rs:30 std::fs::write`). Empty for a direct use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<Hop>,
    /// For a finding in code a `macro_rules!` expansion produced: the macro and where it is
    /// defined (the tokens came from there; `file:line` above is the invocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expanded_from: Option<Expansion>,
    /// Found by dispatch resolution: at a workspace member's call whose callee goes on through
    /// a trait, what the implementations the program has may reach (an over-approximation).
    /// Shown with its chain; informational: not part of the crate's grant (the crates whose
    /// code has the capability carry it in theirs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub through_trait: bool,
}

/// The macro whose expansion a finding's code came from, and where it is defined.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Expansion {
    #[serde(rename = "macro")]
    pub name: String,
    #[serde(rename = "crate")]
    pub krate: String,
    pub version: String,
    pub file: String,
    pub line: u32,
}

impl Expansion {
    /// `name! (crate version file:line)`.
    pub fn display(&self) -> String {
        format!("{}! ({} {} {}:{})", self.name, self.krate, self.version, self.file, self.line)
    }
}

/// One step of a [`Finding::chain`]: in `krate` `version`, at `file:line`, `path` is used.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Hop {
    pub path: std::sync::Arc<str>,
    #[serde(rename = "crate")]
    pub krate: std::sync::Arc<str>,
    pub version: std::sync::Arc<str>,
    pub file: std::sync::Arc<str>,
    pub line: u32,
}

impl Hop {
    /// `path (crate version file:line)`.
    pub fn display(&self) -> String {
        format!("{} ({} {} {}:{})", self.path, self.krate, self.version, self.file, self.line)
    }
}

impl Finding {
    /// The finding's path and its chain, as one line: `tokio::fs::write -> std::fs::write
    /// (tokio 1.54.1 src/fs/write.rs:106)`.
    pub fn path_and_chain(&self) -> String {
        let mut s = self.path.clone();
        for h in &self.chain {
            s.push_str(" -> ");
            s.push_str(&h.display());
        }
        if let Some(e) = &self.expanded_from {
            s.push_str(" [in the expansion of ");
            s.push_str(&e.display());
            s.push(']');
        }
        if self.through_trait {
            s.push_str(" [through a trait: informational, not in the grant]");
        }
        s
    }

    /// Whether the finding is part of what the program itself can do: run-time findings, and
    /// the build-time kinds (`build.script`, `build.proc-macro`, `build.native`) that say the
    /// program's build runs code. What a build script or proc macro does while building is the
    /// crate's, kept in its crate grant, not granted to the program at run time.
    pub fn counts_for_program(&self) -> bool {
        self.scope == Scope::Runtime
            || matches!(self.capability, Capability::BuildScript | Capability::BuildProcMacro | Capability::BuildNative)
    }

    /// Whether the finding is part of its crate's and program's grants: every finding but
    /// those dispatch resolution made at a member's calls ([`Finding::through_trait`]).
    pub fn granted(&self) -> bool {
        !self.through_trait
    }
}

/// One crate's contribution to a program. The findings, files and coverage list are shared
/// (`Arc`) between the programs that compile the same units of the crate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrateSurface {
    pub name: String,
    pub version: String,
    pub capabilities: BTreeSet<Capability>,
    pub findings: Arc<Vec<Finding>>,
    /// Package names from the program's package to this crate, both included.
    pub via: Vec<String>,
    /// The source files analysed, package-relative and sorted: what the compiler compiles of
    /// the crate for this target and features (every unit of it: library, binaries, build
    /// script).
    #[serde(default)]
    pub files: Arc<Vec<String>>,
    /// The package's `.rs` files that were not analysed, each with why (at most
    /// [`MAX_UNLOADED`] of them, sorted): the check that nothing compiled was dropped.
    #[serde(default, skip_serializing_if = "is_empty_arc")]
    pub unloaded: Arc<Vec<Unloaded>>,
    /// How many `.rs` files were not analysed in all (`unloaded` may hold fewer).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unloaded_count: u64,
    /// What evaluating the package's build script found: the files it writes in OUT_DIR
    /// (with the build.rs lines that wrote each line), the cfgs, environment variables and
    /// link directives it prints (docs/json.md). One per build-script unit in the program; shared
    /// like `findings`.
    #[serde(default, skip_serializing_if = "is_empty_arc")]
    pub build_scripts: Arc<Vec<crate::surface::buildscript::Evaluation>>,
}

fn is_empty_arc<T>(v: &Arc<Vec<T>>) -> bool {
    v.is_empty()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most files a crate's `unloaded` list holds.
pub const MAX_UNLOADED: usize = 1000;

/// A source file of a package that is not compiled into the program, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Unloaded {
    pub file: String,
    pub reason: UnloadedReason,
    /// For `cfg-false`: the predicate and the declaration's place (`#[cfg(windows)] at
    /// src/lib.rs:12`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Why a package's `.rs` file was not analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnloadedReason {
    /// A module declaration names it under a cfg that is false for the target and features.
    CfgFalse,
    /// Under `tests/`, `benches/` or `examples/`, or another binary of the package: a target
    /// that is not compiled into this program.
    OtherTarget,
    /// No module of any compiled target declares it (and no `include!` reads it).
    NotDeclared,
}

impl UnloadedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnloadedReason::CfgFalse => "cfg-false",
            UnloadedReason::OtherTarget => "other-target",
            UnloadedReason::NotDeclared => "not-declared",
        }
    }
}

/// What kind of artifact a program is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramKind {
    /// A binary target.
    #[default]
    Bin,
    /// A `cdylib` library: a plugin, a Python or Node extension, a shared object for C.
    Cdylib,
    /// A `staticlib` library, linked into a C program.
    Staticlib,
    /// A Rust `dylib`.
    Dylib,
    /// The library of a member with no other artifact: whatever its public items reach.
    Lib,
    /// A proc-macro member: runs in the builds of the crates that use it.
    ProcMacro,
}

impl ProgramKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProgramKind::Bin => "bin",
            ProgramKind::Cdylib => "cdylib",
            ProgramKind::Staticlib => "staticlib",
            ProgramKind::Dylib => "dylib",
            ProgramKind::Lib => "lib",
            ProgramKind::ProcMacro => "proc-macro",
        }
    }
}

/// One program (a binary, a shared or static library, a library-only member) and everything
/// compiled into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramSurface {
    /// A binary's name; for another artifact `KIND:NAME` with the library's name
    /// (`cdylib:plugin`, `lib:core_utils`), so it never collides with a binary's.
    pub name: String,
    #[serde(default)]
    pub kind: ProgramKind,
    pub package: String,
    /// What the program can do at run time, plus the `build.*` kinds when its build runs code
    /// (see [`Finding::counts_for_program`]); build-time findings stay with their crates.
    pub capabilities: BTreeSet<Capability>,
    /// Every crate compiled into the program (an empty `capabilities` when it shows none),
    /// sorted by name then version.
    pub crates: Vec<CrateSurface>,
    /// Informational, not gated: for every dependency with run-time capabilities that calls
    /// can carry, which of them the program's own code reaches through resolved calls (the
    /// chains of its findings), sorted by name then version.
    #[serde(default)]
    pub reached_from_program: Vec<Reached>,
    /// The calls in the program's own code (its bin and lib), and how many name a known callee.
    #[serde(default)]
    pub calls: CallStats,
    /// Informational, not gated: what the program's entry points reach through resolved
    /// calls, calls through traits included (see [`Reachable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reachable: Option<Reachable>,
}

/// A program's reachable grant: what its entry points (a binary's `main`, a library's public
/// items) and the code that runs without a call reach through resolved calls, calls through
/// traits resolved to the program's implementations; beside the union the gate uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reachable {
    /// The kinds calls carry (file system, network, processes, environment, `ffi`,
    /// `dynamic-load`) that are reached, plus `pre-main` and the `build.*` kinds of the union
    /// (code that runs without a call).
    pub capabilities: BTreeSet<Capability>,
    /// Calls that could not be resolved: the program's own calls whose callee is not known,
    /// and calls through traits where a bound was hit.
    pub unresolved: u64,
    /// Calls through traits resolved on the way.
    pub through_traits: u64,
}

/// One dependency's capabilities, and those of them the program's own code reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reached {
    #[serde(rename = "crate")]
    pub krate: String,
    pub version: String,
    /// The crate's run-time capabilities of the kinds calls carry (file system, network,
    /// processes, environment, FFI, dynamic loading).
    pub capabilities: BTreeSet<Capability>,
    /// Those of them a chain from the program's own code passes through this crate with.
    pub reached: BTreeSet<Capability>,
}

/// How many of a crate's calls name a known callee (a function or method of the crate, of
/// a dependency or of std): how much of its code a reachability analysis could follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallStats {
    pub total: u64,
    pub resolved: u64,
}

/// Every program of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Surface {
    /// The target triple the analysis was made for.
    pub target: String,
    pub programs: Vec<ProgramSurface>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = BTreeSet::new();
        for c in Capability::ALL {
            assert_eq!(c.as_str().parse::<Capability>().unwrap(), *c);
            assert!(seen.insert(c.as_str()));
        }
        assert_eq!(seen.len(), 16);
        assert!("fs.exec".parse::<Capability>().is_err());
    }
}
