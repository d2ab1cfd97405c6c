//! The lockfile as a graph: every locked package and the packages it depends on.
//!
//! Validation and checksums come from [`crate::lockfile::parse_lockfile`]; the `dependencies`
//! lists (which velaris' model leaves out) are read here from the same text and resolved to
//! package indices the way cargo abbreviates them: `name`, `name version` or
//! `name version (source)`.

use std::path::Path;

use serde::Deserialize;

use super::PackageId;
use super::error::WorkspaceError;
use crate::lockfile::parse_lockfile;

#[derive(Debug, Clone)]
pub(crate) struct LockGraph {
    pub packages: Vec<PackageId>,
    /// Per package: indices of the packages it depends on, in lockfile order.
    pub deps: Vec<Vec<usize>>,
}

#[derive(Deserialize)]
struct RawLock {
    #[serde(default)]
    package: Vec<RawPackage>,
    /// Format v1 kept the root package apart.
    root: Option<RawPackage>,
}

#[derive(Deserialize)]
struct RawPackage {
    name: String,
    version: String,
    source: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

fn strip_fragment(s: &str) -> &str {
    s.split_once('#').map_or(s, |(a, _)| a)
}

pub(crate) fn load_lock(text: &str, path: &Path) -> Result<LockGraph, WorkspaceError> {
    let origin = path.display().to_string();
    let model = parse_lockfile(text, &origin)?;
    let raw: RawLock = toml::from_str(text).map_err(|e| WorkspaceError::Toml {
        origin: origin.clone(),
        at: e.span().map(|s| super::error::line_col(text, s.start)),
        message: e.message().trim().to_string(),
    })?;
    let mut packages: Vec<PackageId> = model
        .packages
        .iter()
        .map(|p| PackageId {
            name: p.name.clone(),
            version: p.version.to_string(),
            source: p.source.clone(),
            checksum: p.checksum.clone(),
        })
        .collect();
    let mut raws: Vec<RawPackage> = raw.package;
    if let Some(root) = raw.root {
        packages.push(PackageId {
            name: root.name.clone(),
            version: root.version.clone(),
            source: root.source.clone(),
            checksum: None,
        });
        raws.push(root);
    }
    debug_assert_eq!(packages.len(), raws.len());
    let stale = |message: String| WorkspaceError::BadLock {
        path: path.to_path_buf(),
        message,
    };
    let mut deps = Vec::with_capacity(raws.len());
    for (i, r) in raws.iter().enumerate() {
        let mut out = Vec::new();
        for d in &r.dependencies {
            let mut parts = d.splitn(3, ' ');
            let name = parts.next().unwrap_or_default();
            let version = parts.next();
            let source = parts
                .next()
                .map(|s| s.trim_start_matches('(').trim_end_matches(')'));
            let found = packages.iter().enumerate().filter(|(_, p)| {
                p.name == name
                    && version.is_none_or(|v| p.version == v)
                    && source.is_none_or(|s| {
                        p.source
                            .as_deref()
                            .is_some_and(|ps| strip_fragment(ps) == strip_fragment(s))
                    })
            });
            let found: Vec<usize> = found.map(|(j, _)| j).collect();
            // With a source, prefer the exact string (a git commit) when there are several.
            let pick = match (found.len(), source) {
                (0, _) => None,
                (1, _) => Some(found[0]),
                (_, Some(s)) => found
                    .iter()
                    .copied()
                    .find(|&j| packages[j].source.as_deref() == Some(s))
                    .or(Some(found[0])),
                // Without a source among several: cargo writes the source of every registry
                // or git package it must tell apart, so this is the one without (a path one).
                (_, None) => found.iter().copied().find(|&j| packages[j].source.is_none()).or(Some(found[0])),
            };
            match pick {
                Some(j) => out.push(j),
                None => {
                    return Err(stale(format!(
                        "package {} {} depends on {d:?}, which the lockfile does not lock",
                        packages[i].name, packages[i].version
                    )));
                }
            }
        }
        deps.push(out);
    }
    Ok(LockGraph { packages, deps })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REG: &str = "registry+https://github.com/rust-lang/crates.io-index";

    #[test]
    fn abbreviated_and_full_dependency_forms() {
        let text = format!(
            r#"version = 3

[[package]]
name = "a"
version = "1.0.0"
source = "{REG}"

[[package]]
name = "a"
version = "2.0.0"
source = "{REG}"

[[package]]
name = "a"
version = "2.0.0"
source = "git+https://example.com/a#abc"

[[package]]
name = "app"
version = "0.1.0"
dependencies = [
 "a 1.0.0",
 "a 2.0.0 (registry+https://github.com/rust-lang/crates.io-index)",
 "a 2.0.0 (git+https://example.com/a#abc)",
 "b",
]

[[package]]
name = "b"
version = "0.1.0"
"#
        );
        let g = load_lock(&text, Path::new("Cargo.lock")).unwrap();
        assert_eq!(g.packages.len(), 5);
        assert_eq!(g.deps[3], vec![0, 1, 2, 4]);
        assert_eq!(
            g.packages[2].source.as_deref(),
            Some("git+https://example.com/a#abc")
        );
    }

    #[test]
    fn dependency_on_an_unlocked_package() {
        // A bare name cargo-lock rejects itself; a version that is not locked is caught here.
        for (dep, what) in [("nope", "nope"), ("b 9.9.9", "\"b 9.9.9\"")] {
            let text = format!(
                "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"{dep}\"]\n\n[[package]]\nname = \"b\"\nversion = \"0.1.0\"\n"
            );
            let e = load_lock(&text, Path::new("x/Cargo.lock"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("malformed lockfile x/Cargo.lock"), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
