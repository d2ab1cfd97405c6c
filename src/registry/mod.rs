//! Registry access: turns a Cargo.lock package (name, version, `source`, `checksum`) into the
//! verified bytes of its published `.crate` file, and nothing more.
//!
//! It takes the bytes from the first of: velaris' content-addressed cache (addressed by the
//! checksum itself, so no configuration is needed to look there), cargo's own download cache,
//! a configured `local-registry`, or the network (sparse registries only, with retries, a
//! deadline and a minimum throughput per download, bounded concurrency and a memory budget
//! shared by all downloads). For all but the first, the package's source is resolved the way
//! cargo does (cargo configuration hierarchy, `[source]` replacement chains, `[registries]`);
//! the configuration is read only then, once, and each of its files is checked first (a regular
//! file, TOML, with the line and column of a syntax error). Whatever the origin, the sha256 of the bytes is compared with the Cargo.lock
//! checksum before they are returned; a mismatch is a [`FetchError::Integrity`] error, never
//! a reason to try another origin, and no option turns the check off. Packages without a
//! checksum are not fetched here at all.
//!
//! What it does not own: it never unpacks or parses an archive (and never hands out a byte of
//! one before its digest matched), never runs cargo, rustc, or any program from the inspected
//! repository (cargo configuration is read as data only; the lazily-evaluated host-triple and
//! rustc getters of `cargo_config2` are never called), never clones git indexes, and never
//! looks at, logs or sends registry tokens or credential providers (`cargo_config2` parses
//! them along with the rest of the file; only `[source]` and the `index`/`protocol` keys of
//! `[registries]` are copied out, and the parsed configuration is dropped). URLs in its errors
//! and in [`Origin`] have their user part and query values redacted
//! ([`crate::message::redact_url`]). It only writes to velaris' own cache, and only when the
//! caller says an archive was good ([`Fetcher::store`]).

pub mod api;
mod batch;
mod cache;
mod dl;
mod error;
mod index;
mod net;
mod source;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub use batch::BatchError;
pub use error::{FetchError, Origin};
pub use index::{IndexEntry, IndexStatus};

/// The cargo configuration files cargo reads for `cwd`, highest precedence first: each
/// `.cargo/config.toml` (or `.cargo/config`) from `cwd` up, then `cargo_home`'s.
pub fn config_files_for(cwd: &std::path::Path, cargo_home: Option<&std::path::Path>) -> Vec<PathBuf> {
    source::config_files(cwd, cargo_home)
}

use source::{CargoSources, Resolved, SparseIndex};

/// Default cap for a downloaded or cached `.crate` (and for `config.json`).
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Cap for a registry's `config.json`.
const CONFIG_JSON_MAX_BYTES: u64 = 1024 * 1024;
/// How many characters of a URL messages and origins show.
const URL_MAX: usize = 400;
/// Default for [`FetchOptions::in_flight`].
pub const DEFAULT_IN_FLIGHT: u64 = 256 * 1024 * 1024;

/// How [`Fetcher`] behaves. [`FetchOptions::default`] gives the production settings.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// velaris' cache directory (`--cache-dir`). `None`: env `VELARIS_CACHE_DIR`, else
    /// `dirs::cache_dir()/velaris`; if none of these exists the velaris cache is skipped.
    pub cache_dir: Option<PathBuf>,
    /// No network at all; packages in no cache become [`FetchError::Offline`].
    pub offline: bool,
    /// Concurrent fetches (worker threads). `0` is treated as `1`.
    pub jobs: usize,
    /// Where progress is reported (one bar or line for the whole command; nothing by
    /// default).
    pub progress: crate::progress::Progress,
    /// The workspace analysed is untrusted data: cargo configuration is read from the
    /// confinement's directory instead, and only its sources are fetched from
    /// ([`crate::trust`]). `None`: the workspace's own configuration applies, as for cargo.
    pub confinement: Option<Arc<crate::trust::Confinement>>,
    /// First retry delay; doubles per attempt (plus jitter). Tests shrink it.
    pub retry_base: Duration,
    /// Total requests per URL, first one included.
    pub max_attempts: u32,
    /// Total time for one request, body included; a slower attempt is retried.
    pub request_timeout: Duration,
    /// Longest wait for a response, or for the next byte of a body; a stalled attempt is
    /// retried.
    pub stall_timeout: Duration,
    /// Least average throughput of a body in bytes per second, checked once
    /// `throughput_grace` has passed; a slower attempt is retried.
    pub min_throughput: u64,
    pub throughput_grace: Duration,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Largest accepted `.crate`, downloaded or read from disk.
    pub max_bytes: u64,
    /// Bytes of response bodies all concurrent downloads may hold at once (see
    /// [`crate::resources::budget`]); one download alone may exceed it up to `max_bytes`.
    pub in_flight: u64,
    /// `CARGO_HOME` override. `None`: `CARGO_HOME` from [`Self::env`], else `~/.cargo`.
    pub cargo_home: Option<PathBuf>,
    /// Environment used instead of the process environment for `CARGO_HOME`,
    /// `VELARIS_CACHE_DIR` and cargo's `CARGO_*` configuration overrides. `None`: the process
    /// environment. Tests pass `Some(..)` to stay hermetic.
    pub env: Option<BTreeMap<String, String>>,
    /// Honour `HTTP(S)_PROXY`/`NO_PROXY` (reqwest's default). Tests against 127.0.0.1 set it
    /// to `false` so an ambient proxy cannot interfere.
    pub use_env_proxy: bool,
}

impl FetchOptions {
    /// Why a package of lockfile source `source` may not be fetched in this run, or `None`.
    pub fn refusal(&self, source: &str) -> Option<String> {
        self.confinement.as_ref().and_then(|c| c.refusal(source))
    }
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            cache_dir: None,
            offline: false,
            jobs: 8,
            progress: crate::progress::Progress::none(),
            confinement: None,
            retry_base: Duration::from_millis(250),
            max_attempts: 4,
            request_timeout: Duration::from_secs(120),
            stall_timeout: Duration::from_secs(30),
            min_throughput: 16 * 1024,
            throughput_grace: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            max_bytes: DEFAULT_MAX_BYTES,
            in_flight: DEFAULT_IN_FLIGHT,
            cargo_home: None,
            env: None,
            use_env_proxy: true,
        }
    }
}

/// A Cargo.lock package to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageRef {
    pub name: String,
    pub version: String,
    /// The lockfile `source`, e.g. `registry+https://github.com/rust-lang/crates.io-index`.
    pub source: String,
    /// The lockfile `checksum`: sha256 of the `.crate`, hex.
    pub checksum: String,
}

/// Verified `.crate` bytes and where they came from.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub origin: Origin,
}

/// One registry's `dl` template, or why it could not be had, computed once.
type DlTemplateCell = Arc<OnceLock<Result<String, FetchError>>>;

/// Fetches verified `.crate` files. Cheap to share across threads (`&Fetcher` is `Sync`).
pub struct Fetcher {
    opts: FetchOptions,
    cwd: PathBuf,
    cargo_home: Option<PathBuf>,
    cache_dir: Option<PathBuf>,
    /// cargo configuration, loaded when a package first needs it.
    sources: OnceLock<Result<CargoSources, FetchError>>,
    net: net::Net,
    /// `dl` template per index base URL, fetched once per run (concurrent askers wait).
    dl_templates: Mutex<HashMap<String, DlTemplateCell>>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cargo_home", &self.cargo_home)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.opts.offline)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher that reads cargo configuration as cargo would when run in `cwd`
    /// (`cwd/.cargo/config.toml` and upward, then `$CARGO_HOME/config.toml`, then `CARGO_*`
    /// environment variables), when a package first needs it. Runs no program and touches no
    /// network. Removes the temporary files killed runs left in velaris' cache.
    pub fn new(cwd: &Path, opts: FetchOptions) -> Result<Fetcher, FetchError> {
        let env_var = |key: &str| -> Option<String> {
            match &opts.env {
                Some(env) => env.get(key).cloned(),
                None => std::env::var(key).ok(),
            }
            .filter(|v| !v.is_empty())
        };

        let cargo_home = opts
            .cargo_home
            .clone()
            .or_else(|| match env_var("CARGO_HOME") {
                Some(h) => {
                    let h = PathBuf::from(h);
                    Some(if h.is_absolute() { h } else { cwd.join(h) })
                }
                None => cargo_config2::home_dir().map(|h| h.join(".cargo")),
            });

        let cache_dir = opts
            .cache_dir
            .clone()
            .or_else(|| env_var("VELARIS_CACHE_DIR").map(PathBuf::from))
            .or_else(|| dirs::cache_dir().map(|d| d.join("velaris")));
        if let Some(dir) = &cache_dir {
            crate::fsio::sweep_cache_temps(dir);
        }

        let net = net::Net::new(net::NetConfig {
            connect_timeout: opts.connect_timeout,
            request_timeout: opts.request_timeout,
            stall_timeout: opts.stall_timeout,
            min_throughput: opts.min_throughput,
            throughput_grace: opts.throughput_grace,
            retry_base: opts.retry_base,
            max_attempts: opts.max_attempts,
            use_env_proxy: opts.use_env_proxy,
            in_flight: opts.in_flight,
        });

        // An untrusted workspace's own cargo configuration is never read.
        let cwd = match &opts.confinement {
            Some(c) => c.cargo_config_dir.clone(),
            None => cwd.to_path_buf(),
        };
        Ok(Fetcher {
            opts,
            cwd,
            cargo_home,
            cache_dir,
            sources: OnceLock::new(),
            net,
            dl_templates: Mutex::new(HashMap::new()),
        })
    }

    /// The cargo configuration's sources, loaded on first use: every configuration file is
    /// checked (a regular file, valid TOML, with the place of a syntax error), then read by
    /// `cargo_config2`.
    fn sources(&self) -> Result<&CargoSources, FetchError> {
        self.sources.get_or_init(|| self.load_sources()).as_ref().map_err(Clone::clone)
    }

    fn load_sources(&self) -> Result<CargoSources, FetchError> {
        let cwd = self.cwd.as_path();
        for file in source::config_files(cwd, self.cargo_home.as_deref()) {
            source::check_config_file(&file)?;
        }
        let env: Vec<(OsString, OsString)> = match &self.opts.env {
            Some(env) => env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            None => std::env::vars_os().collect(),
        };
        // `cargo`/`rustc` point nowhere and the host triple is pinned: should anything ever
        // ask cargo_config2 for a lazily computed value, it fails instead of running a program.
        let resolve = cargo_config2::ResolveOptions::default()
            .env(env)
            .cargo_home(self.cargo_home.clone())
            .cargo("/nonexistent/velaris-never-runs-cargo")
            .rustc(cargo_config2::PathAndArgs::new(
                "/nonexistent/velaris-never-runs-rustc",
            ))
            .host_triple("unknown-unknown-unknown");
        let config = cargo_config2::Config::load_with_options(cwd, resolve).map_err(|e| {
            FetchError::Config {
                message: format!(
                    "cannot load cargo configuration for {}: {}",
                    cwd.display(),
                    crate::message::chain(&e)
                ),
            }
        })?;
        let sources = CargoSources::from_config(&config)?;
        drop(config);
        Ok(sources)
    }

    /// The most bytes of response bodies that were held at once so far.
    pub fn peak_in_flight(&self) -> u64 {
        self.net.peak_in_flight()
    }

    /// The `CARGO_HOME` whose download cache is consulted.
    pub fn cargo_home(&self) -> Option<&Path> {
        self.cargo_home.as_deref()
    }

    /// velaris' cache directory, if one could be determined.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// Fetches every package, `jobs` at a time; results are in input order.
    pub fn fetch_all(&self, pkgs: &[PackageRef]) -> Vec<Result<Fetched, FetchError>> {
        let progress = &self.opts.progress;
        progress.add(crate::progress::Stage::Fetch, pkgs.len() as u64);
        let slots: Vec<Mutex<Option<Result<Fetched, FetchError>>>> =
            pkgs.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let workers = self.opts.jobs.max(1).min(pkgs.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(pkg) = pkgs.get(i) else { break };
                        progress.start(crate::progress::Stage::Fetch, || format!("{} {}", pkg.name, pkg.version));
                        let result = self.fetch(pkg);
                        *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                        progress.done(crate::progress::Stage::Fetch);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .expect("every package was fetched")
            })
            .collect()
    }

    /// Fetches one package (what each [`Self::fetch_all`] worker does).
    pub fn fetch(&self, pkg: &PackageRef) -> Result<Fetched, FetchError> {
        let checksum = validate(pkg)?;
        // What messages echo of the package: clipped (a version may be 100 KB long).
        let shown = PackageRef {
            name: crate::message::clip(&pkg.name).into_owned(),
            version: crate::message::clip(&pkg.version).into_owned(),
            ..pkg.clone()
        };
        self.fetch_checked(pkg, &shown, checksum)
    }

    fn fetch_checked(&self, pkg: &PackageRef, shown: &PackageRef, checksum: String) -> Result<Fetched, FetchError> {
        let file_name = format!("{}-{}.crate", pkg.name, pkg.version);

        // a. velaris' content-addressed cache: no configuration needed to look there.
        if let Some(root) = &self.cache_dir {
            let path = cache::velaris_cache_path(root, &checksum);
            if let Some(bytes) = cache::read_file_capped(&path, self.opts.max_bytes)? {
                return verified(pkg, &checksum, bytes, Origin::VelarisCache(path));
            }
        }

        // A confined run contacts only the sources it was given, and reads no other cache
        // through a configuration it does not trust.
        if let Some(reason) = self.opts.refusal(&pkg.source) {
            return Err(FetchError::UnsupportedSource {
                name: shown.name.clone(),
                version: shown.version.clone(),
                source_id: crate::message::redact_url(&pkg.source),
                reason,
            });
        }

        let resolved = self.sources()?.resolve(&pkg.name, &pkg.version, &pkg.source)?;

        // b. cargo's download cache.
        if let (Resolved::Registry { cache_ids, .. }, Some(home)) = (&resolved, &self.cargo_home) {
            let root = home.join("registry").join("cache");
            for dir in cache::cargo_cache_dir_names(cache_ids) {
                let path = root.join(dir).join(&file_name);
                if let Some(bytes) = cache::read_file_capped(&path, self.opts.max_bytes)? {
                    return verified(pkg, &checksum, bytes, Origin::CargoCache(path));
                }
            }
        }

        match resolved {
            // c. a configured local registry (local files, allowed offline).
            Resolved::LocalRegistry { path } => {
                let path = path.join(&file_name);
                match cache::read_file_capped(&path, self.opts.max_bytes)? {
                    Some(bytes) => verified(pkg, &checksum, bytes, Origin::LocalRegistry(path)),
                    None => Err(FetchError::NotFound {
                        name: shown.name.clone(),
                        version: shown.version.clone(),
                        url: path.display().to_string(),
                    }),
                }
            }
            // d. the network.
            Resolved::Registry {
                download,
                effective,
                name,
                ..
            } => {
                if self.opts.offline {
                    return Err(FetchError::Offline {
                        name: shown.name.clone(),
                        version: shown.version.clone(),
                    });
                }
                let index = download.map_err(|reason| FetchError::UnsupportedSource {
                    name: shown.name.clone(),
                    version: shown.version.clone(),
                    source_id: crate::message::redact_url(&effective),
                    reason: crate::message::redact(&match &name {
                        Some(n) => format!("{reason} (source `{n}` after replacement)"),
                        None => reason,
                    })
                    .into_owned(),
                })?;
                let dl = self.dl_template(&index)?;
                let url = dl::download_url(&dl, &pkg.name, &pkg.version, &checksum);
                let shown_url = crate::message::clip_to(&crate::message::redact_url(&url), URL_MAX).into_owned();
                match self.net.get(&url, self.opts.max_bytes) {
                    Ok(bytes) => verified(pkg, &checksum, bytes, Origin::Network(shown_url)),
                    Err(net::HttpFailure::NotFound { final_url }) => Err(FetchError::NotFound {
                        name: shown.name.clone(),
                        version: shown.version.clone(),
                        url: match final_url {
                            Some(f) => format!(
                                "{shown_url} (redirected to {})",
                                crate::message::clip_to(&crate::message::redact_url(&f), URL_MAX)
                            ),
                            None => shown_url,
                        },
                    }),
                    Err(net::HttpFailure::TooLarge { limit }) => Err(FetchError::TooLarge {
                        what: format!("the download of {} {} from {shown_url}", shown.name, shown.version),
                        limit,
                    }),
                    Err(failure) => Err(FetchError::Download {
                        name: shown.name.clone(),
                        version: shown.version.clone(),
                        status: failure.status(),
                        message: failure.message(),
                        url: shown_url,
                    }),
                }
            }
        }
    }

    /// Stores `bytes` in velaris' cache under `pkg.checksum`, atomically, after checking the
    /// digest (a mismatch is a [`FetchError::Integrity`] error and nothing is written). Call it
    /// only once the archive was unpacked successfully. Without a cache directory it is a no-op.
    pub fn store(&self, pkg: &PackageRef, bytes: &[u8]) -> Result<(), FetchError> {
        let checksum = validate(pkg)?;
        let Some(root) = &self.cache_dir else {
            return Ok(());
        };
        let path = cache::velaris_cache_path(root, &checksum);
        let actual = cache::sha256_hex(bytes);
        if actual != checksum {
            return Err(FetchError::Integrity {
                name: pkg.name.clone(),
                version: pkg.version.clone(),
                expected: checksum,
                actual,
                origin: Box::new(Origin::VelarisCache(path)),
            });
        }
        cache::write_atomic(root, &path, bytes)
    }

    /// The `dl` template of a sparse index, from its `config.json`, once per run.
    fn dl_template(&self, index: &SparseIndex) -> Result<String, FetchError> {
        let cell = {
            let mut map = self.dl_templates.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(map.entry(index.base.clone()).or_default())
        };
        cell.get_or_init(|| self.load_dl_template(index)).clone()
    }

    fn load_dl_template(&self, index: &SparseIndex) -> Result<String, FetchError> {
        let url = index.config_url();
        let shown = crate::message::redact_url(&url);
        let registry_err = |message: String| FetchError::Registry {
            index: crate::message::redact_url(&format!("sparse+{}", index.base)),
            message,
        };
        let body = match self.net.get(&url, CONFIG_JSON_MAX_BYTES) {
            Ok(body) => body,
            Err(failure) => {
                return Err(FetchError::Http {
                    status: failure.status(),
                    message: format!("fetching the registry configuration: {}", failure.message()),
                    url: shown,
                });
            }
        };
        #[derive(serde::Deserialize)]
        struct IndexConfig {
            dl: String,
        }
        let config: IndexConfig = serde_json::from_slice(&body)
            .map_err(|e| registry_err(format!("invalid {shown}: {e}")))?;
        if !(config.dl.starts_with("https://") || config.dl.starts_with("http://")) {
            return Err(registry_err(format!(
                "`dl` in {shown} is not an http(s) URL: {}",
                crate::message::redact(&crate::message::clip(&config.dl))
            )));
        }
        Ok(config.dl)
    }
}

/// Checks a package reference before any lookup; returns the lowercase checksum.
///
/// Names and versions end up in file names and URLs, so they are restricted to what cargo
/// itself accepts for registry packages (alphanumerics, `-`, `_`; a semver version).
fn validate(pkg: &PackageRef) -> Result<String, FetchError> {
    // Echoed back in the message: clipped, so a 100 KB version string is not.
    let invalid = |reason: String| FetchError::InvalidPackage {
        name: crate::message::clip(&pkg.name).into_owned(),
        version: crate::message::clip(&pkg.version).into_owned(),
        reason,
    };
    if pkg.checksum.is_empty() {
        return Err(invalid(
            "Cargo.lock records no checksum, so the download cannot be verified".to_owned(),
        ));
    }
    let checksum = pkg.checksum.to_ascii_lowercase();
    if checksum.len() != 64 || !checksum.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(format!(
            "checksum `{}` is not a 64-digit hex sha256",
            crate::message::clip(&pkg.checksum)
        )));
    }
    if pkg.name.is_empty()
        || !pkg
            .name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid("not a valid crate name".to_owned()));
    }
    if semver::Version::parse(&pkg.version).is_err() {
        return Err(invalid("not a valid semver version".to_owned()));
    }
    Ok(checksum)
}

/// Returns the bytes only if their sha256 is the expected one.
fn verified(
    pkg: &PackageRef,
    expected: &str,
    bytes: Vec<u8>,
    origin: Origin,
) -> Result<Fetched, FetchError> {
    let actual = cache::sha256_hex(&bytes);
    if actual != expected {
        return Err(FetchError::Integrity {
            name: crate::message::clip(&pkg.name).into_owned(),
            version: crate::message::clip(&pkg.version).into_owned(),
            expected: expected.to_owned(),
            actual,
            origin: Box::new(origin),
        });
    }
    Ok(Fetched { bytes, origin })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, version: &str, checksum: &str) -> PackageRef {
        PackageRef {
            name: name.into(),
            version: version.into(),
            source: source::CRATES_IO_SPARSE.into(),
            checksum: checksum.into(),
        }
    }

    #[test]
    fn validation() {
        let sum = "A".repeat(64);
        assert_eq!(
            validate(&pkg("serde", "1.0.0", &sum)).unwrap(),
            "a".repeat(64)
        );
        for bad in [
            pkg("serde", "1.0.0", ""),
            pkg("serde", "1.0.0", "abc"),
            pkg("../x", "1.0.0", &sum),
            pkg("x", "1.0", &sum),
            pkg("x", "1.0.0/../..", &sum),
        ] {
            assert!(
                matches!(validate(&bad), Err(FetchError::InvalidPackage { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn integrity_message_names_everything() {
        let p = pkg("serde", "1.0.0", &"0".repeat(64));
        let err = verified(
            &p,
            &"0".repeat(64),
            b"x".to_vec(),
            Origin::Network("https://h/x".into()),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(err.is_integrity());
        for needle in [
            "serde",
            "1.0.0",
            &"0".repeat(64),
            &cache::sha256_hex(b"x"),
            "https://h/x",
        ] {
            assert!(msg.contains(needle), "{msg} lacks {needle}");
        }
    }
}
