//! What a reviewer must see first about one package change, from its two file trees and
//! manifests: a new or changed build script, becoming a proc macro, native builds, new
//! dependencies, provenance (`.cargo_vcs_info.json`, the repository), binary files and added
//! lines that look like encoded payloads. Flags that come from the capability analysis (a
//! build script that gains network or process access) and from the index (yanked) are made by
//! the pipeline; their kinds live here too.
//!
//! No IO and no rendering: trees in, flags with their evidence out. Every kind has a stable
//! kebab-case code ([`FlagKind::code`]), documented in docs/json.md.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use toml::{Table, Value};

use crate::diff::{FileStatus, PackageDiff};
use crate::package::FileTree;

/// Build-dependencies that build or link native code.
pub const NATIVE_BUILD_DEPS: &[&str] =
    &["cc", "cmake", "bindgen", "pkg-config", "autotools", "vcpkg", "nasm-rs", "cxx-build", "system-deps", "metadeps"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlagKind {
    /// A build script appears (or the package, new, has one).
    BuildScript,
    /// The build script changed.
    BuildScriptChanged,
    /// The build script gains network access (build-scope `net.*`).
    BuildNetwork,
    /// The build script gains process spawning (build-scope `process.spawn`).
    BuildSpawn,
    /// The package becomes a proc macro (or, new, is one).
    ProcMacro,
    /// A new `links` key or a new native build-dependency.
    Native,
    /// The registry index marks this version yanked.
    Yanked,
    /// The registry index does not list this version.
    NotInIndex,
    /// The package declares dependencies it did not before.
    NewDependency,
    /// `.cargo_vcs_info.json` says the package was published from a dirty work tree.
    VcsDirty,
    /// The old version had `.cargo_vcs_info.json`, the new one has none.
    VcsInfoMissing,
    /// Same version, another VCS commit (or another path in the repository).
    VcsCommitChanged,
    /// `package.repository` changed.
    RepositoryChanged,
    /// Binary files added or changed.
    BinaryFiles,
    /// Added lines that are very long, high in entropy, or hold an encoded blob, or string
    /// literals that decode or join into a URL or a command.
    SuspiciousLines,
    /// A dependency new to the graph whose name imitates a popular crate's.
    NameSquat,
    /// A RustSec advisory affects the version locked.
    Advisory,
    /// The `license` expression changed.
    LicenseChanged,
    /// Added lines name secret-shaped paths or variables (`.env`, `.ssh`, tokens, ...).
    SecretAccess,
    /// Added lines branch on CI or host variables, the clock or the OS.
    TriggerCondition,
    /// Added code reads a binary file the package ships.
    BinaryRead,
    /// The new version was published less than the cooldown before the head commit.
    Fresh,
    /// Another user (or another workflow) published the new version than the base version.
    PublisherChanged,
    /// Published with an API token where the base version came from trusted publishing, or
    /// where the crate accepts trusted publishing only.
    TrustedPublishingLost,
    /// Published by a user who published no earlier version of the crate.
    PublisherNew,
    /// Published by a trusted-publishing workflow in another repository than the declared one.
    TrustedPublishingRepository,
    /// `--verify-source`: files of the package that its repository does not have at the commit
    /// it names.
    FilesNotInRepository,
    /// `--verify-source`: the commit the package names is in no branch or tag of its repository.
    VcsCommitNotFound,
}

impl FlagKind {
    pub const ALL: &'static [FlagKind] = &[
        FlagKind::BuildScript,
        FlagKind::BuildScriptChanged,
        FlagKind::BuildNetwork,
        FlagKind::BuildSpawn,
        FlagKind::ProcMacro,
        FlagKind::Native,
        FlagKind::Yanked,
        FlagKind::NotInIndex,
        FlagKind::NewDependency,
        FlagKind::VcsDirty,
        FlagKind::VcsInfoMissing,
        FlagKind::VcsCommitChanged,
        FlagKind::RepositoryChanged,
        FlagKind::BinaryFiles,
        FlagKind::SuspiciousLines,
        FlagKind::NameSquat,
        FlagKind::Advisory,
        FlagKind::LicenseChanged,
        FlagKind::SecretAccess,
        FlagKind::TriggerCondition,
        FlagKind::BinaryRead,
        FlagKind::Fresh,
        FlagKind::PublisherChanged,
        FlagKind::TrustedPublishingLost,
        FlagKind::PublisherNew,
        FlagKind::TrustedPublishingRepository,
        FlagKind::FilesNotInRepository,
        FlagKind::VcsCommitNotFound,
    ];

    /// The stable code, in JSON and for `--fail-on`.
    pub fn code(self) -> &'static str {
        match self {
            FlagKind::BuildScript => "build-script",
            FlagKind::BuildScriptChanged => "build-script-changed",
            FlagKind::BuildNetwork => "build-network",
            FlagKind::BuildSpawn => "build-spawn",
            FlagKind::ProcMacro => "proc-macro",
            FlagKind::Native => "native",
            FlagKind::Yanked => "yanked",
            FlagKind::NotInIndex => "not-in-index",
            FlagKind::NewDependency => "new-dependency",
            FlagKind::VcsDirty => "vcs-dirty",
            FlagKind::VcsInfoMissing => "vcs-info-missing",
            FlagKind::VcsCommitChanged => "vcs-commit-changed",
            FlagKind::RepositoryChanged => "repository-changed",
            FlagKind::BinaryFiles => "binary-files",
            FlagKind::SuspiciousLines => "suspicious-lines",
            FlagKind::NameSquat => "name-squat",
            FlagKind::Advisory => "advisory",
            FlagKind::LicenseChanged => "license-changed",
            FlagKind::SecretAccess => "secret-access",
            FlagKind::TriggerCondition => "trigger-condition",
            FlagKind::BinaryRead => "binary-read",
            FlagKind::Fresh => "fresh",
            FlagKind::PublisherChanged => "publisher-changed",
            FlagKind::TrustedPublishingLost => "trusted-publishing-lost",
            FlagKind::PublisherNew => "publisher-new",
            FlagKind::TrustedPublishingRepository => "trusted-publishing-repository",
            FlagKind::FilesNotInRepository => "files-not-in-repository",
            FlagKind::VcsCommitNotFound => "vcs-commit-not-found",
        }
    }

    /// Raised by a new version's publication (its age, its publisher, its source against its
    /// repository: `depsdiff::publish`).
    pub fn is_publication(self) -> bool {
        matches!(
            self,
            FlagKind::Fresh
                | FlagKind::PublisherChanged
                | FlagKind::TrustedPublishingLost
                | FlagKind::PublisherNew
                | FlagKind::TrustedPublishingRepository
                | FlagKind::FilesNotInRepository
                | FlagKind::VcsCommitNotFound
        )
    }

    /// How urgently a reviewer should look, lower first.
    pub fn rank(self) -> u8 {
        match self {
            FlagKind::BuildNetwork | FlagKind::BuildSpawn | FlagKind::SecretAccess | FlagKind::NameSquat => 0,
            FlagKind::BuildScript | FlagKind::ProcMacro | FlagKind::Native | FlagKind::Advisory | FlagKind::BinaryRead => 1,
            FlagKind::Yanked | FlagKind::NotInIndex | FlagKind::RepositoryChanged | FlagKind::VcsCommitChanged => 2,
            FlagKind::SuspiciousLines | FlagKind::BinaryFiles | FlagKind::VcsDirty | FlagKind::VcsInfoMissing => 3,
            FlagKind::BuildScriptChanged | FlagKind::NewDependency | FlagKind::TriggerCondition => 4,
            FlagKind::LicenseChanged => 5,
            FlagKind::TrustedPublishingLost | FlagKind::FilesNotInRepository => 0,
            FlagKind::PublisherNew | FlagKind::TrustedPublishingRepository => 1,
            FlagKind::Fresh | FlagKind::VcsCommitNotFound => 2,
            FlagKind::PublisherChanged => 3,
        }
    }
}

/// One flag with what shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    pub kind: FlagKind,
    /// One line, for people.
    pub message: String,
    /// The places or items behind it (`build.rs`, `src/data.rs:12: 4,096-character line`, a
    /// dependency name), at most [`MAX_EVIDENCE`].
    pub evidence: Vec<String>,
}

/// Evidence items kept per flag.
pub const MAX_EVIDENCE: usize = 8;

/// What the flags need to know of one side's manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestFacts {
    /// The build script path, when there is one.
    pub build: Option<String>,
    pub links: Option<String>,
    pub proc_macro: bool,
    /// Non-dev dependencies: package name → how it is declared (`build`, `optional`, `target`).
    pub deps: BTreeMap<String, String>,
    pub build_deps: BTreeSet<String>,
    pub repository: Option<String>,
    /// `license`, or `license-file = PATH` when only that is given.
    pub license: Option<String>,
}

impl ManifestFacts {
    /// From a manifest's text and the package's files (an unnormalized manifest leaves
    /// `build.rs` implicit).
    pub fn read(manifest: Option<&str>, tree: &FileTree) -> ManifestFacts {
        let doc: Table = manifest.and_then(|m| toml::from_str(m).ok()).unwrap_or_default();
        let pkg = doc.get("package").or_else(|| doc.get("project")).and_then(Value::as_table);
        let get = |k: &str| pkg.and_then(|p| p.get(k));
        let build = match get("build") {
            Some(Value::Boolean(false)) => None,
            Some(Value::String(s)) => Some(s.trim_start_matches("./").to_string()),
            Some(Value::Boolean(true)) => Some("build.rs".to_string()),
            _ => tree.contains_key("build.rs").then(|| "build.rs".to_string()),
        };
        let lib = doc.get("lib").and_then(Value::as_table);
        let proc_macro = lib
            .and_then(|l| l.get("proc-macro").or_else(|| l.get("proc_macro")))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut facts = ManifestFacts {
            build,
            links: get("links").and_then(Value::as_str).map(str::to_string),
            proc_macro,
            repository: get("repository").and_then(Value::as_str).map(str::to_string),
            license: get("license")
                .and_then(Value::as_str)
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .or_else(|| get("license-file").and_then(Value::as_str).map(|f| format!("license-file = {f}"))),
            ..ManifestFacts::default()
        };
        let mut collect = |t: &Table, target: Option<&str>| {
            for (key, is_build) in [("dependencies", false), ("build-dependencies", true), ("build_dependencies", true)] {
                let Some(deps) = t.get(key).and_then(Value::as_table) else { continue };
                for (name, spec) in deps {
                    let real = spec.get("package").and_then(Value::as_str).unwrap_or(name).to_string();
                    let optional = spec.get("optional").and_then(Value::as_bool).unwrap_or(false);
                    let mut how = Vec::new();
                    if is_build {
                        how.push("build".to_string());
                        facts.build_deps.insert(real.clone());
                    }
                    if optional {
                        how.push("optional".to_string());
                    }
                    if let Some(t) = target {
                        how.push(t.to_string());
                    }
                    facts.deps.entry(real).or_insert_with(|| how.join(", "));
                }
            }
        };
        collect(&doc, None);
        if let Some(targets) = doc.get("target").and_then(Value::as_table) {
            for (key, t) in targets {
                if let Some(t) = t.as_table() {
                    collect(t, Some(key));
                }
            }
        }
        facts
    }
}

/// One side of a change, as the flags see it.
pub struct SideFacts<'a> {
    pub tree: &'a FileTree,
    pub manifest: ManifestFacts,
}

/// The tree-based flags of one change. `same_version`: the two sides claim the same version
/// (a checksum or source change), so another VCS commit is news. `added_names`: packages this
/// lockfile change adds, to say which new dependencies are new to the graph as well.
pub fn tree_flags(
    old: Option<&SideFacts<'_>>,
    new: Option<&SideFacts<'_>>,
    diff: Option<&PackageDiff>,
    same_version: bool,
    added_names: &BTreeSet<String>,
) -> Vec<Flag> {
    let mut out = Vec::new();
    let Some(new) = new else { return out };
    let nm = &new.manifest;
    let om = old.map(|o| &o.manifest);
    let file_stat = |path: &str| -> String {
        diff.and_then(|d| d.files.iter().find(|f| f.path == path))
            .map(|f| format!("{path} (+{} -{})", f.lines_added, f.lines_removed))
            .unwrap_or_else(|| path.to_string())
    };

    // Build script.
    match (om.and_then(|m| m.build.as_ref()), &nm.build) {
        (None, Some(b)) => out.push(Flag {
            kind: FlagKind::BuildScript,
            message: if old.is_some() {
                format!("new build script {b}: it runs on every build")
            } else {
                format!("has a build script {b}: it runs on every build")
            },
            evidence: vec![file_stat(b)],
        }),
        (Some(_), Some(b)) => {
            // The script itself, or a file beside it when it lives in a directory of its own.
            let bdir = dir_of(b);
            let changed = diff.is_some_and(|d| {
                d.files.iter().any(|f| f.path == *b || (!bdir.is_empty() && f.path.starts_with(&format!("{bdir}/"))))
            });
            if changed {
                out.push(Flag {
                    kind: FlagKind::BuildScriptChanged,
                    message: format!("build script {b} changed"),
                    evidence: vec![file_stat(b)],
                });
            }
        }
        _ => {}
    }

    // Proc macro.
    if nm.proc_macro && !om.is_some_and(|m| m.proc_macro) {
        out.push(Flag {
            kind: FlagKind::ProcMacro,
            message: if old.is_some() {
                "becomes a proc macro: its code runs inside the compiler".to_string()
            } else {
                "is a proc macro: its code runs inside the compiler".to_string()
            },
            evidence: vec!["Cargo.toml: [lib] proc-macro = true".to_string()],
        });
    }

    // Native code.
    let mut native = Vec::new();
    if let Some(l) = &nm.links {
        if om.and_then(|m| m.links.as_ref()) != Some(l) {
            native.push(format!("Cargo.toml: links = {l:?}"));
        }
    }
    for d in &nm.build_deps {
        if NATIVE_BUILD_DEPS.contains(&d.as_str()) && !om.is_some_and(|m| m.build_deps.contains(d)) {
            native.push(format!("build-dependency {d}"));
        }
    }
    if !native.is_empty() {
        out.push(Flag {
            kind: FlagKind::Native,
            message: format!("{} native code: {}", if old.is_some() { "starts building or linking" } else { "builds or links" }, native.join(", ")),
            evidence: native,
        });
    }

    // New dependencies (only meaningful against an old version).
    if let Some(om) = om {
        let fresh: Vec<String> = nm
            .deps
            .iter()
            .filter(|(d, _)| !om.deps.contains_key(*d))
            .map(|(d, how)| {
                let mut s = d.clone();
                let mut notes = Vec::new();
                if !how.is_empty() {
                    notes.push(how.clone());
                }
                if added_names.contains(d) {
                    notes.push("added by this change".to_string());
                }
                if !notes.is_empty() {
                    s.push_str(&format!(" ({})", notes.join("; ")));
                }
                s
            })
            .collect();
        if !fresh.is_empty() {
            out.push(Flag {
                kind: FlagKind::NewDependency,
                message: format!("pulls in {}: {}", crate::text::plural(fresh.len() as u64, "new dependency", "new dependencies"), fresh.join(", ")),
                evidence: fresh.into_iter().take(MAX_EVIDENCE).collect(),
            });
        }
    }

    // Provenance.
    if let Some(d) = diff {
        if d.new_vcs.as_ref().is_some_and(|v| v.dirty) {
            out.push(Flag {
                kind: FlagKind::VcsDirty,
                message: "published from a work tree with uncommitted changes (.cargo_vcs_info.json: dirty)".to_string(),
                evidence: vec![".cargo_vcs_info.json".to_string()],
            });
        }
        if d.old_vcs.is_some() && d.new_vcs.is_none() && new.tree.get(".cargo_vcs_info.json").is_none() {
            out.push(Flag {
                kind: FlagKind::VcsInfoMissing,
                message: "no longer says which commit it was published from (.cargo_vcs_info.json missing; the old version had it)".to_string(),
                evidence: vec![".cargo_vcs_info.json".to_string()],
            });
        }
        // Another commit is news only for the same version; for an upgrade it is expected.
        if same_version && d.vcs_changed {
            let sha = |v: &Option<crate::diff::VcsInfo>| v.as_ref().and_then(|v| v.sha1.clone()).unwrap_or_else(|| "unknown".into());
            out.push(Flag {
                kind: FlagKind::VcsCommitChanged,
                message: format!(
                    "the same version now says it was published from another commit ({} -> {})",
                    short(&sha(&d.old_vcs)),
                    short(&sha(&d.new_vcs))
                ),
                evidence: vec![".cargo_vcs_info.json".to_string()],
            });
        }
    }
    if let Some(om) = om {
        if om.license != nm.license {
            let show = |l: &Option<String>| l.clone().unwrap_or_else(|| "none".to_string());
            out.push(Flag {
                kind: FlagKind::LicenseChanged,
                message: format!("license changed: {} -> {}", show(&om.license), show(&nm.license)),
                evidence: vec![format!("Cargo.toml: license = {:?}", show(&nm.license))],
            });
        }
    }
    if let (Some(o), Some(n)) = (om.and_then(|m| m.repository.as_ref()), &nm.repository) {
        if norm_repo(o) != norm_repo(n) {
            out.push(Flag {
                kind: FlagKind::RepositoryChanged,
                message: format!("repository changed: {o} -> {n}"),
                evidence: vec![format!("Cargo.toml: repository = {n:?}")],
            });
        }
    }

    // Files.
    if let Some(d) = diff {
        let bins: Vec<String> = d
            .files
            .iter()
            .filter(|f| f.binary && f.status != FileStatus::Removed)
            .map(|f| format!("{} ({} bytes)", f.path, f.new_size.unwrap_or(0)))
            .collect();
        if !bins.is_empty() {
            out.push(Flag {
                kind: FlagKind::BinaryFiles,
                message: format!("{} added or changed", crate::text::plural(bins.len() as u64, "binary file", "binary files")),
                evidence: bins.into_iter().take(MAX_EVIDENCE).collect(),
            });
        }
        let lines = suspicious_lines(old.map(|o| o.tree), new.tree, d);
        if !lines.is_empty() {
            out.push(Flag {
                kind: FlagKind::SuspiciousLines,
                message: format!(
                    "{} that look like data rather than code (very long, high entropy or encoded)",
                    crate::text::plural(lines.len() as u64, "added line", "added lines")
                ),
                evidence: lines.into_iter().take(MAX_EVIDENCE).collect(),
            });
        }
    }
    out.sort_by_key(|f| (f.kind.rank(), f.kind));
    out
}

fn dir_of(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// A repository URL reduced to what names the repository: on the well-known forges the host
/// and the first two path segments (`/tree/master/sub` and `.git` dropped), elsewhere the URL
/// without scheme, `www.`, `.git` and trailing slashes.
pub(crate) fn norm_repo(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    let s = s.split_once("://").map_or(s.as_str(), |(_, r)| r).trim_start_matches("www.");
    let s = s.split(['?', '#']).next().unwrap_or(s).trim_end_matches('/');
    let mut parts: Vec<&str> = s.split('/').filter(|p| !p.is_empty()).collect();
    if parts.first().is_some_and(|h| ["github.com", "gitlab.com", "codeberg.org", "bitbucket.org", "sr.ht", "git.sr.ht"].contains(h)) {
        parts.truncate(3);
    }
    parts.join("/").trim_end_matches(".git").to_string()
}

/// Files whose long or dense lines are expected and not a way into a build: prose, images as
/// text, other ecosystems' lockfiles.
fn data_by_nature(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let ext = file.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(ext, "md" | "markdown" | "rst" | "adoc" | "svg" | "html" | "htm" | "css")
        || matches!(file.as_str(), "package-lock.json" | "yarn.lock" | "pnpm-lock.yaml" | "cargo.lock" | "poetry.lock")
        || file.starts_with("license")
        || file.starts_with("licence")
        || file.starts_with("changelog")
}

/// Added lines (lines of the new file not in the old one) that look like payloads, as
/// `path:line: why`.
fn suspicious_lines(old: Option<&FileTree>, new: &FileTree, diff: &PackageDiff) -> Vec<String> {
    let mut out = Vec::new();
    for f in &diff.files {
        if f.binary || f.packaging || f.status == FileStatus::Removed || data_by_nature(&f.path) {
            continue;
        }
        let Some(text) = new.get(&f.path).and_then(|b| std::str::from_utf8(b).ok()) else { continue };
        // Every concern needs 100 bytes or more: most files have no such line at all.
        if !text.lines().any(|l| l.len() >= SHORTEST_CONCERN) {
            continue;
        }
        let old_lines: HashSet<&str> = old
            .and_then(|t| t.get(&f.path))
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(|t| t.lines().filter(|l| l.len() >= SHORTEST_CONCERN).collect())
            .unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.len() < SHORTEST_CONCERN || old_lines.contains(line) {
                continue;
            }
            if let Some(why) = line_concern(line) {
                out.push(format!("{}:{}: {why}: {}", f.path, i + 1, clip_line(line)));
            }
        }
    }
    out
}

/// A line as evidence: trimmed, and clipped to 100 characters.
pub fn clip_line(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() > 100 { format!("{}…", t.chars().take(99).collect::<String>()) } else { t.to_string() }
}

/// No line shorter than this (in bytes) can be a concern: the shortest rule is a 100-character
/// run.
const SHORTEST_CONCERN: usize = 100;

/// Why one line looks like data rather than code, if it does.
pub fn line_concern(line: &str) -> Option<String> {
    if line.len() < SHORTEST_CONCERN {
        return None;
    }
    let len = line.chars().count();
    if let Some(why) = encoded_run(line) {
        return Some(why);
    }
    if len >= 1000 {
        return Some(format!("{}-character line", crate::text::thousands(len as u64)));
    }
    // A long run without whitespace that is as dense as random text: a key or compressed data.
    // A URL is an address, not a payload (a mailing-list link in a doc comment is dense too).
    if let Some(token) = line.split_whitespace().filter(|t| t.chars().count() >= 100 && !t.contains("://")).max_by_key(|t| t.len()) {
        let h = entropy(token);
        if h >= 5.3 {
            return Some(format!("{}-character string at {h:.1} bits per character", token.chars().count()));
        }
    }
    None
}

/// A run of base64 or hex characters, or of `\xNN` escapes, long enough to hide a payload.
fn encoded_run(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let (mut best_b64, mut best_hex) = (0usize, 0usize);
    let (mut run_b64, mut run_hex) = (0usize, 0usize);
    let (mut has_digit, mut has_upper, mut has_lower) = (false, false, false);
    let mut mixed = false;
    for &c in b {
        let is_b64 = c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'=' || c == b'-' || c == b'_';
        if is_b64 {
            run_b64 += 1;
            has_digit |= c.is_ascii_digit();
            has_upper |= c.is_ascii_uppercase();
            has_lower |= c.is_ascii_lowercase();
            if run_b64 > best_b64 {
                best_b64 = run_b64;
                mixed = has_digit && has_upper && has_lower;
            }
        } else {
            run_b64 = 0;
            (has_digit, has_upper, has_lower) = (false, false, false);
        }
        if c.is_ascii_hexdigit() {
            run_hex += 1;
            best_hex = best_hex.max(run_hex);
        } else {
            run_hex = 0;
        }
    }
    if best_hex >= 128 {
        return Some(format!("{best_hex} hex digits in a row"));
    }
    if best_b64 >= 160 && mixed {
        return Some(format!("{best_b64}-character base64-like run"));
    }
    let escapes = line.matches("\\x").count();
    if escapes >= 48 {
        return Some(format!("{escapes} \\x escapes"));
    }
    None
}

/// Shannon entropy of the line's characters, in bits per character.
fn entropy(line: &str) -> f64 {
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    let mut n = 0usize;
    for c in line.chars().filter(|c| !c.is_whitespace()) {
        *counts.entry(c).or_default() += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    counts.values().map(|&k| {
        let p = k as f64 / n as f64;
        -p * p.log2()
    }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{DiffOptions, diff_trees};

    fn tree(files: &[(&str, &str)]) -> FileTree {
        files.iter().map(|(p, c)| (p.to_string(), c.as_bytes().to_vec())).collect()
    }

    fn flags(old: &[(&str, &str)], new: &[(&str, &str)]) -> Vec<Flag> {
        let (o, n) = (tree(old), tree(new));
        let d = diff_trees(Some(&o), Some(&n), &DiffOptions::default());
        let of = SideFacts { tree: &o, manifest: ManifestFacts::read(o.get("Cargo.toml").and_then(|b| std::str::from_utf8(b).ok()), &o) };
        let nf = SideFacts { tree: &n, manifest: ManifestFacts::read(n.get("Cargo.toml").and_then(|b| std::str::from_utf8(b).ok()), &n) };
        tree_flags(Some(&of), Some(&nf), Some(&d), false, &BTreeSet::from(["evil".to_string()]))
    }

    fn codes(f: &[Flag]) -> Vec<&'static str> {
        f.iter().map(|f| f.kind.code()).collect()
    }

    const M: &str = "[package]\nname = \"p\"\nversion = \"1.0.0\"\n";

    #[test]
    fn build_script_links_and_proc_macro() {
        let f = flags(&[("Cargo.toml", M), ("src/lib.rs", "")], &[("Cargo.toml", &format!("{M}links = \"z\"\n[build-dependencies]\ncc = \"1\"\n")), ("build.rs", "fn main() {}\n"), ("src/lib.rs", "")]);
        assert_eq!(codes(&f), ["build-script", "native", "new-dependency"], "cc is a new build-dependency too");
        assert!(f[1].evidence.iter().any(|e| e.contains("links")) && f[1].evidence.iter().any(|e| e.contains("cc")));
        let f = flags(&[("Cargo.toml", M)], &[("Cargo.toml", &format!("{M}[lib]\nproc-macro = true\n"))]);
        assert_eq!(codes(&f), ["proc-macro"]);
        let f = flags(&[("Cargo.toml", M), ("build.rs", "fn main() {}\n")], &[("Cargo.toml", M), ("build.rs", "fn main() { x(); }\n")]);
        assert_eq!(codes(&f), ["build-script-changed"]);
        // Unchanged build script: no flag.
        let f = flags(&[("Cargo.toml", M), ("build.rs", "a\n"), ("src/lib.rs", "1\n")], &[("Cargo.toml", M), ("build.rs", "a\n"), ("src/lib.rs", "2\n")]);
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn new_dependencies_say_if_the_change_adds_them() {
        let f = flags(&[("Cargo.toml", &format!("{M}[dependencies]\nlog = \"0.4\"\n"))], &[("Cargo.toml", &format!("{M}[dependencies]\nlog = \"0.4\"\nevil = \"0.1\"\n[target.'cfg(unix)'.dependencies]\nnix = \"1\"\n[dev-dependencies]\ntestonly = \"1\"\n"))]);
        assert_eq!(codes(&f), ["new-dependency"]);
        assert_eq!(f[0].evidence, ["evil (added by this change)", "nix (cfg(unix))"]);
    }

    #[test]
    fn provenance_and_repository() {
        let vcs = |sha: &str, dirty: bool| format!("{{\"git\": {{\"sha1\": \"{sha}\", \"dirty\": {dirty}}}, \"path_in_vcs\": \"\"}}");
        let f = flags(&[("Cargo.toml", &format!("{M}repository = \"https://github.com/a/p\"\n")), (".cargo_vcs_info.json", &vcs("aaa", false))], &[("Cargo.toml", &format!("{M}repository = \"https://github.com/evil/p\"\n")), (".cargo_vcs_info.json", &vcs("bbb", true))]);
        assert_eq!(codes(&f), ["repository-changed", "vcs-dirty"]);
        let f = flags(&[("Cargo.toml", M), (".cargo_vcs_info.json", &vcs("aaa", false))], &[("Cargo.toml", M)]);
        assert_eq!(codes(&f), ["vcs-info-missing"]);
        // The same repository written another way is no change.
        assert_eq!(norm_repo("https://github.com/clap-rs/clap/tree/master/clap_lex"), norm_repo("https://github.com/clap-rs/clap"));
        assert_eq!(norm_repo("https://www.GitHub.com/a/b.git/"), norm_repo("https://github.com/a/b"));
        assert_ne!(norm_repo("https://github.com/alexcrichton/rustc-demangle"), norm_repo("https://github.com/rust-lang/rustc-demangle"));
    }

    #[test]
    fn payload_lines_are_found_and_code_is_not() {
        let blob = "QmFzZTY0IGVuY29kZWQgcGF5bG9hZCBoaWRkZW4gaW4gYSBjcmF0ZQ".repeat(6);
        assert!(line_concern(&format!("const P: &str = \"{blob}\";")).unwrap().contains("base64"));
        assert!(line_concern(&format!("let k = \"{}\";", "9f".repeat(80))).unwrap().contains("hex"));
        assert!(line_concern(&"\\x41".repeat(60)).unwrap().contains("escapes"));
        assert!(line_concern(&"x".repeat(1200)).unwrap().contains("1,200-character"));
        for code in [
            "    pub fn connect_with_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {",
            "//! This crate provides a fast, safe and convenient implementation of the thing that everybody needs.",
            "        assert_eq!(parse(\"1970-01-01T00:00:00Z\").unwrap(), DateTime::<Utc>::from_timestamp(0, 0).unwrap());",
            "static TABLE: [u8; 16] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f];",
        ] {
            assert_eq!(line_concern(code), None, "{code}");
        }
        // A key-like string: dense, no whitespace.
        let key = "kT9#qZ2!mB7$vR4^xL1&nW8*pC5(yH3)jF6_sD0+gA-uE=oI{tY}rU[eO]wQ|zX;cV:bN<mK>lJ?hG/fD.aS,".repeat(2);
        assert!(line_concern(&format!("static K: &str = \"{key}\";")).unwrap().contains("bits per character"));
        let f = flags(&[("src/lib.rs", "fn a() {}\n")], &[("src/lib.rs", &format!("fn a() {{}}\nconst P: &str = \"{blob}\";\n"))]);
        assert_eq!(codes(&f), ["suspicious-lines"]);
        assert!(f[0].evidence[0].starts_with("src/lib.rs:2: "), "{:?}", f[0].evidence);
        // Prose and other ecosystems' lockfiles are not looked at.
        let f = flags(&[("README.md", "a\n")], &[("README.md", &format!("a\n{blob}\n")), ("web/package-lock.json", &format!("\"integrity\": \"sha512-{blob}\"\n"))]);
        assert!(f.is_empty(), "{f:?}");
    }
}
