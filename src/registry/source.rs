//! Source resolution: a Cargo.lock `source` string plus cargo configuration → the registry (or
//! local registry) the `.crate` comes from, following cargo's `[source]` replacement rules.
//!
//! Only the `[source]` and `[registries]` tables (index URLs and the crates.io protocol) are
//! copied out of the loaded configuration; tokens and credential providers are never touched.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::error::FetchError;

pub(crate) const CRATES_IO_NAME: &str = "crates-io";
pub(crate) const CRATES_IO_GIT: &str = "https://github.com/rust-lang/crates.io-index";
pub(crate) const CRATES_IO_SPARSE: &str = "sparse+https://index.crates.io/";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Git,
    Sparse,
}

/// A registry's identity, compared like cargo compares `SourceId`s: kind + canonical URL.
#[derive(Clone, Debug)]
pub(crate) struct RegistryId {
    kind: Kind,
    /// As written: `sparse+http(s)://...` for sparse, the bare URL for git indexes.
    url: String,
    canonical: String,
}

impl RegistryId {
    /// Parses a URL as written in config (`[registries.X] index`, `[source.X] registry`):
    /// `sparse+URL` is sparse, `registry+URL` and bare URLs are git indexes.
    fn parse(s: &str) -> Result<Self, String> {
        let (kind, url) = if s.starts_with("sparse+") {
            (Kind::Sparse, s.to_owned())
        } else if let Some(rest) = s.strip_prefix("registry+") {
            (Kind::Git, rest.to_owned())
        } else {
            (Kind::Git, s.to_owned())
        };
        let canonical = tame_index::utils::canonicalize_url(&url)
            .map_err(|e| format!("invalid registry URL `{}`: {e}", crate::message::redact_url(s)))?;
        Ok(RegistryId {
            kind,
            url,
            canonical,
        })
    }

    fn crates_io_git() -> Self {
        Self::parse(CRATES_IO_GIT).expect("valid constant")
    }

    fn crates_io_sparse() -> Self {
        Self::parse(CRATES_IO_SPARSE).expect("valid constant")
    }

    fn same(&self, other: &RegistryId) -> bool {
        self.kind == other.kind && self.canonical == other.canonical
    }

    fn is_crates_io(&self) -> bool {
        self.same(&Self::crates_io_git()) || self.same(&Self::crates_io_sparse())
    }

    /// The URL as cargo hands it to its directory-name hash (`sparse+` kept, `registry+` dropped).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The lockfile-style spelling, for messages.
    fn display(&self) -> String {
        match self.kind {
            Kind::Sparse => self.url.clone(),
            Kind::Git => format!("registry+{}", self.url),
        }
    }
}

#[derive(Clone, Debug)]
enum Location {
    Registry(RegistryId),
    LocalRegistry(PathBuf),
    Directory(PathBuf),
    Git(String),
}

#[derive(Clone, Debug)]
struct SourceDef {
    location: Option<Location>,
    replace_with: Option<String>,
}

/// The cargo configuration files that apply in `cwd`, in cargo's order of discovery:
/// `.cargo/config` and `.cargo/config.toml` in `cwd` and each of its ancestors, then in
/// `cargo_home` (once). Only the ones that exist (as any kind of file) are listed.
pub(crate) fn config_files(cwd: &Path, cargo_home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cwd.ancestors().map(|d| d.join(".cargo")).collect();
    if let Some(home) = cargo_home {
        if !dirs.iter().any(|d| d == home) {
            dirs.push(home.to_path_buf());
        }
    }
    let mut out = Vec::new();
    for d in dirs {
        for name in ["config", "config.toml"] {
            let p = d.join(name);
            if std::fs::symlink_metadata(&p).is_ok() {
                out.push(p);
            }
        }
    }
    out
}

/// Checks one cargo configuration file before `cargo_config2` reads it: a regular file of
/// reasonable size, UTF-8, valid TOML. The error names the file, and the line, column and
/// reason of a syntax error.
pub(crate) fn check_config_file(path: &Path) -> Result<(), FetchError> {
    let cfg_err = |message: String| FetchError::Config { message };
    let text = crate::fsio::read_text(path, crate::fsio::TEXT_CAP, "a cargo configuration file")
        .map_err(|e| cfg_err(crate::message::chain(&e)))?;
    if let Err(e) = toml::from_str::<toml::Table>(&text) {
        let place = match e.span() {
            Some(span) => {
                let (line, column) = crate::fsio::line_column(&text.as_bytes()[..span.start.min(text.len())]);
                format!(":{line}:{column}")
            }
            None => String::new(),
        };
        return Err(cfg_err(format!(
            "{}{place}: invalid TOML: {}",
            path.display(),
            e.message().trim()
        )));
    }
    Ok(())
}

/// What resolution produced for one package.
#[derive(Clone, Debug)]
pub(crate) enum Resolved {
    Registry {
        /// Source name after replacement (for messages), when it has one.
        name: Option<String>,
        /// Registry identities whose cargo cache directories may hold the file, most likely
        /// first: the effective registry, then the original one (and both crates.io spellings
        /// when crates.io is involved).
        cache_ids: Vec<RegistryId>,
        /// How to download, or why it is impossible (checked only after the caches).
        download: Result<SparseIndex, String>,
        /// The effective source, lockfile-style, for messages.
        effective: String,
    },
    LocalRegistry {
        path: PathBuf,
    },
}

/// A downloadable sparse index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SparseIndex {
    /// `http(s)://.../` with a trailing slash; `config.json` lives right under it.
    pub(crate) base: String,
}

impl SparseIndex {
    fn from_id(id: &RegistryId) -> Result<Self, String> {
        let bare = id.url.strip_prefix("sparse+").unwrap_or(&id.url);
        if !(bare.starts_with("https://") || bare.starts_with("http://")) {
            return Err(format!(
                "sparse index `{}` is not an http(s) URL; only http(s) sparse registries are supported",
                id.url
            ));
        }
        let mut base = bare.to_owned();
        if !base.ends_with('/') {
            base.push('/');
        }
        Ok(SparseIndex { base })
    }

    pub(crate) fn config_url(&self) -> String {
        format!("{}config.json", self.base)
    }
}

/// The parts of cargo configuration that matter for source resolution.
#[derive(Clone, Debug)]
pub(crate) struct CargoSources {
    sources: BTreeMap<String, SourceDef>,
    /// `[registries.NAME] index`, parsed (entries without an index are skipped).
    registries: BTreeMap<String, RegistryId>,
    /// Source id → `[source]` name, like cargo's `id2name` (crates.io is built in).
    id2name: Vec<(RegistryId, String)>,
}

impl CargoSources {
    pub(crate) fn from_config(config: &cargo_config2::Config) -> Result<Self, FetchError> {
        let cfg_err = |message: String| FetchError::Config { message };

        let crates_io_git_protocol = config
            .registries
            .get(CRATES_IO_NAME)
            .and_then(|r| r.protocol.as_ref())
            .is_some_and(|p| matches!(p, cargo_config2::RegistriesProtocol::Git));
        let crates_io_id = if crates_io_git_protocol {
            RegistryId::crates_io_git()
        } else {
            RegistryId::crates_io_sparse()
        };

        let mut registries = BTreeMap::new();
        for (name, value) in &config.registries {
            // Only `index` and `protocol` are read; `token`/`credential-provider` never are.
            if let Some(index) = &value.index {
                let id = RegistryId::parse(index)
                    .map_err(|e| cfg_err(format!("registries.{name}.index: {e}")))?;
                registries.insert(name.clone(), id);
            }
        }

        let mut sources = BTreeMap::new();
        let mut id2name: Vec<(RegistryId, String)> = vec![
            (RegistryId::crates_io_git(), CRATES_IO_NAME.to_owned()),
            (RegistryId::crates_io_sparse(), CRATES_IO_NAME.to_owned()),
        ];
        for (name, value) in &config.source {
            let mut locations = Vec::new();
            if let Some(registry) = &value.registry {
                let id = RegistryId::parse(registry)
                    .map_err(|e| cfg_err(format!("source.{name}.registry: {e}")))?;
                locations.push(Location::Registry(id));
            }
            if let Some(path) = &value.local_registry {
                locations.push(Location::LocalRegistry(path.clone()));
            }
            if let Some(path) = &value.directory {
                locations.push(Location::Directory(path.clone()));
            }
            if let Some(git) = &value.git {
                locations.push(Location::Git(git.clone()));
            }
            if locations.len() > 1 {
                return Err(cfg_err(format!(
                    "more than one source location specified for `source.{name}`"
                )));
            }
            let mut location = locations.pop();
            if name == CRATES_IO_NAME && location.is_none() {
                location = Some(Location::Registry(crates_io_id.clone()));
            }
            if let Some(Location::Registry(id)) = &location {
                if let Some((_, other)) = id2name
                    .iter()
                    .find(|(known, other)| known.same(id) && other != CRATES_IO_NAME)
                {
                    return Err(cfg_err(format!(
                        "source `{name}` defines source {}, but that source is already defined by `{other}`",
                        id.display()
                    )));
                }
                // A user definition of crates.io's URL takes the name over, as in cargo.
                id2name.retain(|(known, _)| !known.same(id));
                id2name.push((id.clone(), name.clone()));
            }
            sources.insert(
                name.clone(),
                SourceDef {
                    location,
                    replace_with: value.replace_with.clone(),
                },
            );
        }

        Ok(CargoSources {
            sources,
            registries,
            id2name,
        })
    }

    /// Resolves a Cargo.lock `source` string for package `name` `version`.
    pub(crate) fn resolve(
        &self,
        name: &str,
        version: &str,
        source: &str,
    ) -> Result<Resolved, FetchError> {
        let unsupported = |source_id: &str, reason: String| FetchError::UnsupportedSource {
            name: name.to_owned(),
            version: version.to_owned(),
            source_id: source_id.to_owned(),
            reason,
        };
        let original = if source.starts_with("registry+") || source.starts_with("sparse+") {
            RegistryId::parse(source).map_err(|e| unsupported(source, e))?
        } else if source.starts_with("git+") {
            return Err(unsupported(
                source,
                "git dependencies have no published .crate file".to_owned(),
            ));
        } else if source.starts_with("path+") || source.is_empty() {
            return Err(unsupported(
                source,
                "path dependencies have no published .crate file".to_owned(),
            ));
        } else {
            return Err(unsupported(source, "unrecognised source kind".to_owned()));
        };

        // The source name cargo would look up for replacement: `[source]` entries (and the
        // built-in crates-io) by URL, else a `[registries]` entry with that index.
        let start = self
            .id2name
            .iter()
            .find(|(id, _)| id.same(&original))
            .map(|(_, n)| n.clone())
            .or_else(|| {
                self.registries
                    .iter()
                    .find(|(_, id)| id.same(&original))
                    .map(|(n, _)| n.clone())
            });

        let (effective, effective_name) = match &start {
            None => (Location::Registry(original.clone()), None),
            Some(start) => self.follow(start, &original, source)?,
        };

        match effective {
            Location::Registry(id) => {
                let mut cache_ids = Vec::new();
                for id in [&id, &original] {
                    cache_ids.push(id.clone());
                    if id.is_crates_io() {
                        cache_ids.push(RegistryId::crates_io_sparse());
                        cache_ids.push(RegistryId::crates_io_git());
                    }
                }
                let download = match id.kind {
                    Kind::Sparse => SparseIndex::from_id(&id),
                    // crates.io serves the same files whichever protocol cargo is set to.
                    Kind::Git if id.is_crates_io() => {
                        SparseIndex::from_id(&RegistryId::crates_io_sparse())
                    }
                    Kind::Git => Err(format!(
                        "`{}` is a git index; only sparse registries (`sparse+https://...`) are \
                         supported for downloads (git indexes are never cloned)",
                        id.url
                    )),
                };
                Ok(Resolved::Registry {
                    name: effective_name,
                    cache_ids,
                    download,
                    effective: id.display(),
                })
            }
            Location::LocalRegistry(path) => Ok(Resolved::LocalRegistry { path }),
            Location::Directory(path) => Err(unsupported(
                source,
                format!(
                    "it is replaced by the directory source {} (vendored, unpacked sources hold \
                     no .crate archive); directory sources are not supported",
                    path.display()
                ),
            )),
            Location::Git(url) => Err(unsupported(
                source,
                format!("it is replaced by the git source `{url}`, which has no .crate archives"),
            )),
        }
    }

    /// Follows `replace-with` from `start`; returns the final location and its source name.
    fn follow(
        &self,
        start: &str,
        original: &RegistryId,
        source: &str,
    ) -> Result<(Location, Option<String>), FetchError> {
        let mut chain = vec![start.to_owned()];
        let mut seen: HashSet<&str> = HashSet::from([start]);
        let mut cur: &str = start;
        loop {
            match self.sources.get(cur) {
                Some(def) => match &def.replace_with {
                    Some(next) => {
                        chain.push(next.clone());
                        if !seen.insert(next.as_str()) {
                            return Err(FetchError::Config {
                                message: format!(
                                    "detected a cycle of `replace-with` sources while resolving \
                                     `{source}`: {}",
                                    chain.join(" -> ")
                                ),
                            });
                        }
                        cur = next;
                    }
                    None => {
                        return match &def.location {
                            Some(loc) => Ok((loc.clone(), Some(cur.to_owned()))),
                            None if cur == start => {
                                Ok((Location::Registry(original.clone()), Some(cur.to_owned())))
                            }
                            None => Err(FetchError::Config {
                                message: format!(
                                    "no source location specified for `source.{cur}`, need \
                                     `registry`, `local-registry`, `directory`, or `git` defined"
                                ),
                            }),
                        };
                    }
                },
                None if cur == start => {
                    return Ok((Location::Registry(original.clone()), Some(cur.to_owned())));
                }
                None => {
                    // A `replace-with` target may also name a `[registries]` entry.
                    return match self.registries.get(cur) {
                        Some(id) => Ok((Location::Registry(id.clone()), Some(cur.to_owned()))),
                        None => Err(FetchError::Config {
                            message: format!(
                                "could not find a configured source with the name `{cur}` when \
                                 attempting to lookup `{start}` (replace-with chain: {})",
                                chain.join(" -> ")
                            ),
                        }),
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(toml: &str) -> CargoSources {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), toml).unwrap();
        let opts = cargo_config2::ResolveOptions::default()
            .env(std::iter::empty::<(String, String)>())
            .cargo_home(Some(home));
        let cfg = cargo_config2::Config::load_with_options(dir.path(), opts).unwrap();
        CargoSources::from_config(&cfg).unwrap()
    }

    fn registry(r: Resolved) -> (Option<String>, Result<SparseIndex, String>, Vec<String>) {
        match r {
            Resolved::Registry {
                name,
                download,
                cache_ids,
                ..
            } => (
                name,
                download,
                cache_ids.iter().map(|i| i.url().to_owned()).collect(),
            ),
            other => panic!("unexpected {other:?}"),
        }
    }

    const GIT_CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

    #[test]
    fn crates_io_defaults_to_sparse() {
        let s = sources("");
        for src in [GIT_CRATES_IO, CRATES_IO_SPARSE] {
            let (name, dl, ids) = registry(s.resolve("a", "1.0.0", src).unwrap());
            assert_eq!(name.as_deref(), Some("crates-io"));
            assert_eq!(
                dl.unwrap().config_url(),
                "https://index.crates.io/config.json"
            );
            assert!(ids.contains(&CRATES_IO_SPARSE.to_owned()));
            assert!(ids.contains(&CRATES_IO_GIT.to_owned()));
        }
    }

    #[test]
    fn replacement_chain_to_named_registry() {
        let s = sources(
            "[source.crates-io]\nreplace-with = \"mirror\"\n\
             [source.mirror]\nreplace-with = \"corp\"\n\
             [registries.corp]\nindex = \"sparse+https://corp.example/index\"\n",
        );
        let (name, dl, ids) = registry(s.resolve("a", "1.0.0", GIT_CRATES_IO).unwrap());
        assert_eq!(name.as_deref(), Some("corp"));
        assert_eq!(dl.unwrap().base, "https://corp.example/index/");
        assert_eq!(ids[0], "sparse+https://corp.example/index");
    }

    #[test]
    fn unnamed_url_replaced_through_source_registry() {
        let s = sources(
            "[source.upstream]\nregistry = \"sparse+https://up.example/\"\nreplace-with = \"m\"\n\
             [source.m]\nregistry = \"sparse+https://m.example/\"\n",
        );
        let (name, dl, _) = registry(
            s.resolve("a", "1.0.0", "sparse+https://up.example/")
                .unwrap(),
        );
        assert_eq!(name.as_deref(), Some("m"));
        assert_eq!(dl.unwrap().base, "https://m.example/");
    }

    #[test]
    fn cycle_is_an_error() {
        let s = sources(
            "[source.crates-io]\nreplace-with = \"a\"\n\
             [source.a]\nregistry = \"sparse+https://a.example/\"\nreplace-with = \"b\"\n\
             [source.b]\nregistry = \"sparse+https://b.example/\"\nreplace-with = \"a\"\n",
        );
        let err = s.resolve("x", "1.0.0", GIT_CRATES_IO).unwrap_err();
        assert!(err.to_string().contains("cycle"), "{err}");
        assert!(
            err.to_string().contains("crates-io -> a -> b -> a"),
            "{err}"
        );
    }

    #[test]
    fn unknown_replacement_name_is_an_error() {
        let s = sources("[source.crates-io]\nreplace-with = \"nope\"\n");
        let err = s.resolve("x", "1.0.0", GIT_CRATES_IO).unwrap_err();
        assert!(matches!(err, FetchError::Config { .. }), "{err}");
    }

    #[test]
    fn git_index_is_unsupported_for_download() {
        let s = sources("");
        let (_, dl, _) = registry(
            s.resolve("a", "1.0.0", "registry+https://git.example/index")
                .unwrap(),
        );
        assert!(dl.unwrap_err().contains("only sparse registries"));
    }

    #[test]
    fn directory_git_and_path_sources_are_unsupported() {
        let s = sources(
            "[source.crates-io]\nreplace-with = \"vendored\"\n[source.vendored]\ndirectory = \"vendor\"\n",
        );
        let err = s.resolve("a", "1.0.0", GIT_CRATES_IO).unwrap_err();
        assert!(matches!(err, FetchError::UnsupportedSource { .. }), "{err}");
        assert!(err.to_string().contains("directory"), "{err}");
        for src in ["git+https://github.com/x/y#abc", "path+file:///x"] {
            let err = s.resolve("a", "1.0.0", src).unwrap_err();
            assert!(matches!(err, FetchError::UnsupportedSource { .. }), "{err}");
        }
    }

    #[test]
    fn local_registry_is_resolved() {
        let s = sources(
            "[source.crates-io]\nreplace-with = \"local\"\n[source.local]\nlocal-registry = \"/srv/reg\"\n",
        );
        match s.resolve("a", "1.0.0", GIT_CRATES_IO).unwrap() {
            Resolved::LocalRegistry { path } => assert_eq!(path, PathBuf::from("/srv/reg")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn crates_io_git_protocol_still_downloads_via_sparse() {
        let s = sources("[registries.crates-io]\nprotocol = \"git\"\n");
        let (_, dl, _) = registry(s.resolve("a", "1.0.0", GIT_CRATES_IO).unwrap());
        assert_eq!(dl.unwrap().base, "https://index.crates.io/");
    }
}
