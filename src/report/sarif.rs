//! The SARIF 2.1.0 rendering of a deps-diff review, for code scanning: each grant the head's
//! baseline lacks (`velaris check` widens) at its entry in `velaris.capabilities`, and each
//! capability a changed package gains at its entry in `Cargo.lock`, with the dependency's own
//! file and line as a related location, and each publication flag (`fresh`, publisher and
//! trusted-publishing changes, files not in the repository) at the package's entry in
//! `Cargo.lock`. Every result has a fingerprint that does not change
//! with line numbers or versions (`velaris/v1`: a sha256 of the rule, the lockfile, the
//! package name, the capability and scope, the dependency's file and resolved path), so a
//! code-scanning alert survives an unrelated edit and a later release.
//!
//! The types are written here for the subset used; the test suite validates every document
//! against the official SARIF 2.1.0 JSON schema (tests/sarif/).

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::depsdiff::{BaselineState, FlagKind, Report};
use crate::surface::Scope;

pub const SARIF_SCHEMA: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool,
    results: Vec<ResultOut>,
    #[serde(skip)]
    _marker: std::marker::PhantomData<&'a ()>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    information_uri: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    short_description: Text,
    help_uri: &'static str,
    default_configuration: Configuration,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultOut {
    rule_id: String,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<Location>,
    partial_fingerprints: std::collections::BTreeMap<&'static str, String>,
    properties: Properties,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Properties {
    #[serde(skip_serializing_if = "Option::is_none")]
    risk_score: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    package: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<u32>,
}

fn fingerprint(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

fn at(uri: &str, line: u32, column: Option<u32>) -> PhysicalLocation {
    PhysicalLocation { artifact_location: ArtifactLocation { uri: uri.to_string() }, region: Region { start_line: line.max(1), start_column: column.filter(|c| *c >= 1) } }
}

/// A repository path as a relative URI reference: `/`-separated, each segment
/// percent-encoded where it must be.
fn uri_path(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            seg.bytes()
                .map(|b| if b.is_ascii_alphanumeric() || b"-._~+@".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn publication_rule_text(k: FlagKind) -> &'static str {
    match k {
        FlagKind::Fresh => "a dependency version published less than the cooldown ago",
        FlagKind::PublisherChanged => "a dependency version published by someone else than the previous one",
        FlagKind::TrustedPublishingLost => "a dependency version published with an API token where trusted publishing was used or required",
        FlagKind::PublisherNew => "a dependency version published by a user who never published the crate before",
        FlagKind::TrustedPublishingRepository => "a dependency version published by a workflow in another repository than the declared one",
        FlagKind::FilesNotInRepository => "a dependency package with files its repository does not have at the commit it names",
        _ => "the commit a dependency package names is not in its repository",
    }
}

/// The review as one SARIF 2.1.0 log, followed by a newline.
pub fn render_sarif(report: &Report) -> String {
    let mut rules: Vec<Rule> = Vec::new();
    let mut rule_index = |id: String, name: String, text: String, level: &'static str| -> usize {
        if let Some(i) = rules.iter().position(|r| r.id == id) {
            return i;
        }
        rules.push(Rule {
            id,
            name,
            short_description: Text { text },
            help_uri: "https://github.com/velaris/ratchet/blob/main/docs/review.md",
            default_configuration: Configuration { level },
        });
        rules.len() - 1
    };
    let mut results = Vec::new();
    // Grants the head's baseline lacks: `velaris check` fails on these.
    for b in &report.baselines {
        let BaselineState::Checked { head, .. } = &b.state else { continue };
        for w in &head.widened {
            let header = format!("{}.{}", w.subject.kind(), w.subject.name());
            let line = b.header_lines.iter().find(|(h, _)| *h == header || h.trim_matches('"') == header).map_or(1, |(_, l)| *l);
            for c in &w.capabilities {
                let id = format!("widened/{}", c.as_str());
                let idx = rule_index(id.clone(), format!("Widened{}", c.as_str().replace(['.', '-'], "_")), format!("uses {}, which the baseline does not grant", c.as_str()), "error");
                let mut fp = std::collections::BTreeMap::new();
                fp.insert("velaris/v1", fingerprint(&[&id, &b.origin, w.subject.kind(), w.subject.name(), c.as_str()]));
                results.push(ResultOut {
                    rule_id: id,
                    rule_index: idx,
                    level: "error",
                    message: Text { text: format!("{} {} uses {}, which {} does not grant: `velaris check` fails", w.subject.kind(), w.subject.name(), c.as_str(), b.origin) },
                    locations: vec![Location { id: None, physical_location: at(&uri_path(&b.origin), line, None), message: None }],
                    related_locations: Vec::new(),
                    partial_fingerprints: fp,
                    properties: Properties { risk_score: None, package: None },
                });
            }
        }
    }
    // Capabilities each changed package gains, at its lockfile entry.
    for p in report.packages.iter().filter(|p| p.built() || report.all_targets) {
        let Some((lockfile, line)) = &p.lock_line else { continue };
        let version = p.new.as_ref().map(|s| s.package.version.to_string()).unwrap_or_default();
        let on_docs_rs = p.new.as_ref().is_some_and(|s| s.package.source_kind() == crate::lockfile::SourceKind::CratesIo);
        for d in &p.capabilities.added {
            let scope = if d.scope == Scope::Build { "build" } else { "runtime" };
            let id = format!("gained/{}", d.capability.as_str());
            let idx = rule_index(
                id.clone(),
                format!("Gained{}", d.capability.as_str().replace(['.', '-'], "_")),
                format!("a dependency change gains {}", d.capability.as_str()),
                "warning",
            );
            let first = d.findings.first().map(|e| &e.finding);
            let mut related = Vec::new();
            for (i, e) in d.findings.iter().take(5).enumerate() {
                let f = &e.finding;
                let uri = if on_docs_rs {
                    format!("https://docs.rs/crate/{}/{}/source/{}", uri_path(&p.name), uri_path(&version), uri_path(&f.file))
                } else {
                    format!("{}/{}", uri_path(&p.name), uri_path(&f.file))
                };
                related.push(Location {
                    id: Some(i),
                    physical_location: at(&uri, f.line, Some(f.column)),
                    message: Some(Text { text: format!("{} {}:{}: {}", p.name, f.file, f.line, f.path) }),
                });
            }
            let verb = if p.old.is_some() { "gains" } else { "has" };
            let place = first.map(|f| format!(" ({}:{} {})", f.file, f.line, f.path)).unwrap_or_default();
            let at_build = if d.scope == Scope::Build { " at build time" } else { "" };
            let mut fp = std::collections::BTreeMap::new();
            fp.insert(
                "velaris/v1",
                fingerprint(&[&id, lockfile, &p.name, scope, first.map_or("", |f| f.file.as_str()), first.map_or("", |f| f.path.as_str())]),
            );
            results.push(ResultOut {
                rule_id: id,
                rule_index: idx,
                level: "warning",
                message: Text { text: format!("{} {verb} {}{at_build}{place}; risk score {}", p.title(), d.capability.as_str(), p.risk.score) },
                locations: vec![Location { id: None, physical_location: at(&uri_path(lockfile), *line, None), message: None }],
                related_locations: related,
                partial_fingerprints: fp,
                properties: Properties { risk_score: Some(p.risk.score), package: Some(p.title()) },
            });
        }
    }
    // What the publication says (fresh, publisher, provenance), at the lockfile entry.
    for p in report.packages.iter().filter(|p| p.built() || report.all_targets) {
        let Some((lockfile, line)) = &p.lock_line else { continue };
        for f in p.flags.iter().filter(|f| f.kind.is_publication()) {
            let id = format!("publication/{}", f.kind.code());
            let level = if matches!(f.kind, FlagKind::TrustedPublishingLost | FlagKind::FilesNotInRepository) { "error" } else { "warning" };
            let name: String = f.kind.code().split('-').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect();
            let idx = rule_index(id.clone(), name, publication_rule_text(f.kind).to_string(), level);
            let mut fp = std::collections::BTreeMap::new();
            fp.insert("velaris/v1", fingerprint(&[&id, lockfile, &p.name]));
            results.push(ResultOut {
                rule_id: id,
                rule_index: idx,
                level,
                message: Text { text: format!("{}: {}; risk score {}", p.title(), f.message, p.risk.score) },
                locations: vec![Location { id: None, physical_location: at(&uri_path(lockfile), *line, None), message: None }],
                related_locations: Vec::new(),
                partial_fingerprints: fp,
                properties: Properties { risk_score: Some(p.risk.score), package: Some(p.title()) },
            });
        }
    }
    let log = Log {
        schema: SARIF_SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver { name: "velaris", version: env!("CARGO_PKG_VERSION"), information_uri: "https://github.com/velaris/ratchet", rules },
            },
            results,
            _marker: std::marker::PhantomData,
        }],
    };
    let mut s = serde_json::to_string_pretty(&log).expect("SARIF serializes");
    s.push('\n');
    s
}
