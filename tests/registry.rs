//! Library-level tests of `velaris::registry`: source resolution through cargo configuration,
//! the cache/network order, integrity checks, retries and offline mode. Hermetic: every
//! Fetcher gets an explicit CARGO_HOME, cache dir and an empty environment, and the only
//! server is the in-process registry double on 127.0.0.1.

#[path = "support/registry_double.rs"]
mod registry_double;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use registry_double::{
    CONFIG_PATH, RegistryDouble, cargo_home_replacing_crates_io, place_in_cargo_cache,
    place_in_cargo_cache_with, sha256_hex,
};
use tempfile::TempDir;
use velaris::registry::{FetchError, FetchOptions, Fetcher, Origin, PackageRef};

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// A server, a CARGO_HOME replacing crates.io with it, a velaris cache and a bare cwd.
struct Setup {
    server: RegistryDouble,
    home: TempDir,
    cache: TempDir,
    cwd: TempDir,
}

impl Setup {
    fn new() -> Self {
        let server = RegistryDouble::start();
        let home = cargo_home_replacing_crates_io(&server.index_url());
        Setup {
            server,
            home,
            cache: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    fn opts(&self) -> FetchOptions {
        options(self.home.path(), self.cache.path())
    }

    fn fetcher(&self) -> Fetcher {
        Fetcher::new(self.cwd.path(), self.opts()).unwrap()
    }

    fn offline_fetcher(&self) -> Fetcher {
        Fetcher::new(
            self.cwd.path(),
            FetchOptions {
                offline: true,
                ..self.opts()
            },
        )
        .unwrap()
    }

    /// Registers a crate with the server and returns its crates.io lockfile entry.
    fn publish(&self, name: &str, version: &str, bytes: &[u8]) -> PackageRef {
        self.server.add_crate(name, version, bytes);
        crates_io(name, version, bytes)
    }
}

fn options(home: &Path, cache: &Path) -> FetchOptions {
    FetchOptions {
        cache_dir: Some(cache.to_owned()),
        cargo_home: Some(home.to_owned()),
        env: Some(BTreeMap::new()),
        use_env_proxy: false,
        retry_base: Duration::from_millis(1),
        request_timeout: Duration::from_secs(20),
        jobs: 4,
        ..FetchOptions::default()
    }
}

fn crates_io(name: &str, version: &str, bytes: &[u8]) -> PackageRef {
    PackageRef {
        name: name.to_owned(),
        version: version.to_owned(),
        source: CRATES_IO.to_owned(),
        checksum: sha256_hex(bytes),
    }
}

fn fetch_one(
    fetcher: &Fetcher,
    pkg: &PackageRef,
) -> Result<velaris::registry::Fetched, FetchError> {
    fetcher.fetch_all(std::slice::from_ref(pkg)).pop().unwrap()
}

fn write_project_config(cwd: &Path, toml: &str) {
    std::fs::create_dir_all(cwd.join(".cargo")).unwrap();
    std::fs::write(cwd.join(".cargo/config.toml"), toml).unwrap();
}

#[test]
fn crates_io_replaced_through_config_downloads_from_replacement() {
    let s = Setup::new();
    let pkgs = vec![
        s.publish("serde", "1.0.0", b"serde bytes"),
        s.publish("rand", "0.8.5", b"rand bytes"),
        s.publish("ab", "0.1.0", b"ab bytes"),
    ];
    let results = s.fetcher().fetch_all(&pkgs);
    for (pkg, res) in pkgs.iter().zip(&results) {
        let f = res.as_ref().unwrap();
        let url = s.server.dl_url(&pkg.name, &pkg.version, &pkg.checksum);
        assert_eq!(f.origin, Origin::Network(url));
        assert_eq!(sha256_hex(&f.bytes), pkg.checksum);
        assert_eq!(f.origin.kind(), "network");
    }
    assert_eq!(results[0].as_ref().unwrap().bytes, b"serde bytes");
    // config.json once per registry per run, whatever the concurrency.
    assert_eq!(s.server.count(CONFIG_PATH), 1);
    assert_eq!(
        s.server
            .count(&RegistryDouble::default_dl_path("serde", "1.0.0")),
        1
    );
}

#[test]
fn sparse_crates_io_spelling_is_replaced_too() {
    let s = Setup::new();
    let mut pkg = s.publish("serde", "1.0.0", b"x");
    pkg.source = "sparse+https://index.crates.io/".to_owned();
    assert!(fetch_one(&s.fetcher(), &pkg).is_ok());
}

#[test]
fn dl_template_markers_are_expanded() {
    let s = Setup::new();
    s.server.set_dl_template(
        "{base}/files/{prefix}/{lowerprefix}/{crate}-{version}.crate?sum={sha256-checksum}",
    );
    let pkg = s.publish("MyCrate", "1.2.3", b"my crate");
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    let expected_path = format!(
        "/files/My/Cr/my/cr/MyCrate-1.2.3.crate?sum={}",
        pkg.checksum
    );
    assert_eq!(
        s.server.count(&expected_path),
        1,
        "{:?}",
        s.server.requests()
    );
    // Query values are never shown: they may be credentials.
    assert_eq!(
        f.origin,
        Origin::Network(format!(
            "{}/files/My/Cr/my/cr/MyCrate-1.2.3.crate?sum=***",
            s.server.base_url()
        ))
    );

    let short = s.publish("abc", "0.1.0", b"abc");
    s.server
        .set_dl_template("{base}/files/{prefix}/{crate}/{version}");
    // A new Fetcher reads config.json again (once per registry per *run*).
    fetch_one(&s.fetcher(), &short).unwrap();
    assert_eq!(
        s.server.count("/files/3/a/abc/0.1.0"),
        1,
        "{:?}",
        s.server.requests()
    );
}

#[test]
fn dl_without_markers_gets_cargo_default_suffix() {
    let s = Setup::new();
    s.server.set_dl_template("{base}/plain");
    let pkg = s.publish("serde", "1.0.0", b"plain");
    fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(s.server.count("/plain/serde/1.0.0/download"), 1);
}

#[test]
fn named_registry_from_project_config() {
    let server = RegistryDouble::start();
    let home = tempfile::tempdir().unwrap(); // no config at all
    let cache = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_project_config(
        cwd.path(),
        &format!("[registries.corp]\nindex = \"{}\"\n", server.index_url()),
    );
    server.add_crate("internal", "2.0.0", b"internal");
    let pkg = PackageRef {
        name: "internal".into(),
        version: "2.0.0".into(),
        source: server.index_url(),
        checksum: sha256_hex(b"internal"),
    };
    // The hierarchy is walked from a subdirectory, as cargo does.
    let sub = cwd.path().join("crates/member");
    std::fs::create_dir_all(&sub).unwrap();
    let fetcher = Fetcher::new(&sub, options(home.path(), cache.path())).unwrap();
    let f = fetch_one(&fetcher, &pkg).unwrap();
    assert!(matches!(f.origin, Origin::Network(_)));
    assert_eq!(f.bytes, b"internal");
}

#[test]
fn unnamed_registry_replaced_with_a_named_registry() {
    let server = RegistryDouble::start();
    let home = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write_project_config(
        cwd.path(),
        &format!(
            "[source.upstream]\nregistry = \"sparse+https://upstream.invalid/index/\"\n\
             replace-with = \"corp\"\n\
             [registries.corp]\nindex = \"{}\"\n",
            server.index_url()
        ),
    );
    server.add_crate("lib", "1.0.0", b"mirrored");
    let pkg = PackageRef {
        name: "lib".into(),
        version: "1.0.0".into(),
        source: "sparse+https://upstream.invalid/index/".into(),
        checksum: sha256_hex(b"mirrored"),
    };
    let fetcher = Fetcher::new(cwd.path(), options(home.path(), cache.path())).unwrap();
    assert_eq!(fetch_one(&fetcher, &pkg).unwrap().bytes, b"mirrored");
}

#[test]
fn replace_with_cycle_is_an_error() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[source.crates-io]\nreplace-with = \"a\"\n\
         [source.a]\nregistry = \"sparse+http://127.0.0.1:9/a/\"\nreplace-with = \"b\"\n\
         [source.b]\nregistry = \"sparse+http://127.0.0.1:9/b/\"\nreplace-with = \"crates-io\"\n",
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(cwd.path(), options(home.path(), cache.path())).unwrap();
    let err = fetch_one(&fetcher, &crates_io("serde", "1.0.0", b"x")).unwrap_err();
    assert!(matches!(err, FetchError::Config { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("cycle"), "{msg}");
    assert!(msg.contains("crates-io -> a -> b -> crates-io"), "{msg}");
}

#[test]
fn cargo_cache_hit_makes_no_request() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"cached serde");
    let path = place_in_cargo_cache(
        s.home.path(),
        &s.server.index_url(),
        "serde",
        "1.0.0",
        b"cached serde",
    );
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(f.origin, Origin::CargoCache(path));
    assert_eq!(f.bytes, b"cached serde");
    assert!(s.server.requests().is_empty(), "{:?}", s.server.requests());
}

#[test]
fn cargo_cache_with_legacy_hash_is_found() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"old cargo");
    let path = place_in_cargo_cache_with(
        s.home.path(),
        &s.server.index_url(),
        false,
        "serde",
        "1.0.0",
        b"old cargo",
    );
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(f.origin, Origin::CargoCache(path));
    assert!(s.server.requests().is_empty());
}

#[test]
fn cargo_cache_of_the_original_registry_is_checked_too() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"from crates.io dir");
    let path = place_in_cargo_cache(
        s.home.path(),
        "sparse+https://index.crates.io/",
        "serde",
        "1.0.0",
        b"from crates.io dir",
    );
    assert!(
        path.to_string_lossy()
            .contains("index.crates.io-1949cf8c6b5b557f")
    );
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(f.origin, Origin::CargoCache(path));
    assert!(s.server.requests().is_empty());
}

#[test]
fn tampered_cargo_cache_is_an_integrity_error_and_no_request_follows() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"genuine");
    let path = place_in_cargo_cache(
        s.home.path(),
        &s.server.index_url(),
        "serde",
        "1.0.0",
        b"evil",
    );
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(err.is_integrity(), "{err}");
    match &err {
        FetchError::Integrity {
            name,
            version,
            expected,
            actual,
            origin,
        } => {
            assert_eq!((name.as_str(), version.as_str()), ("serde", "1.0.0"));
            assert_eq!(expected, &pkg.checksum);
            assert_eq!(actual, &sha256_hex(b"evil"));
            assert_eq!(**origin, Origin::CargoCache(path.clone()));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    for needle in [
        "serde",
        "1.0.0",
        &pkg.checksum,
        &sha256_hex(b"evil"),
        &path.display().to_string(),
    ] {
        assert!(msg.contains(needle), "{msg} lacks {needle}");
    }
    assert!(s.server.requests().is_empty(), "{:?}", s.server.requests());
}

#[test]
fn velaris_cache_hit_makes_no_request() {
    let s = Setup::new();
    let pkg = crates_io("serde", "1.0.0", b"stored");
    let fetcher = s.fetcher();
    fetcher.store(&pkg, b"stored").unwrap();
    let expected = s
        .cache
        .path()
        .join("crates/sha256")
        .join(&pkg.checksum[..2])
        .join(format!("{}.crate", pkg.checksum));
    assert!(expected.is_file());
    let f = fetch_one(&fetcher, &pkg).unwrap();
    assert_eq!(f.origin, Origin::VelarisCache(expected));
    assert_eq!(f.bytes, b"stored");
    assert!(s.server.requests().is_empty());
}

#[test]
fn store_then_offline_fetch_hits_velaris_cache() {
    let s = Setup::new();
    let pkg = s.publish("rand", "0.8.5", b"rand");
    let online = s.fetcher();
    let fetched = fetch_one(&online, &pkg).unwrap();
    assert!(matches!(fetched.origin, Origin::Network(_)));
    online.store(&pkg, &fetched.bytes).unwrap();
    let requests_before = s.server.requests().len();

    let f = fetch_one(&s.offline_fetcher(), &pkg).unwrap();
    assert!(
        matches!(f.origin, Origin::VelarisCache(_)),
        "{:?}",
        f.origin
    );
    assert_eq!(f.bytes, b"rand");
    assert_eq!(s.server.requests().len(), requests_before);
}

#[test]
fn store_refuses_bytes_with_the_wrong_digest() {
    let s = Setup::new();
    let pkg = crates_io("serde", "1.0.0", b"genuine");
    let err = s.fetcher().store(&pkg, b"other").unwrap_err();
    assert!(err.is_integrity());
    assert!(!s.cache.path().join("crates").exists());
}

#[test]
fn tampered_velaris_cache_is_an_integrity_error() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"genuine");
    let path = s
        .cache
        .path()
        .join("crates/sha256")
        .join(&pkg.checksum[..2])
        .join(format!("{}.crate", pkg.checksum));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"corrupted").unwrap();
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(err.is_integrity(), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    // The one command that clears it.
    assert!(
        err.to_string()
            .contains(&format!("remove it with `rm -- {}`", path.display())),
        "{err}"
    );
    assert!(s.server.requests().is_empty());
}

#[test]
fn tampered_download_is_an_integrity_error_naming_the_url() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"genuine");
    s.server.tamper("serde", "1.0.0", b"malicious");
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    let url = s.server.dl_url("serde", "1.0.0", &pkg.checksum);
    match &err {
        FetchError::Integrity { origin, actual, .. } => {
            assert_eq!(**origin, Origin::Network(url.clone()));
            assert_eq!(actual, &sha256_hex(b"malicious"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&url), "{err}");
    // One request, no retry or fallback after a mismatch, nothing cached.
    assert_eq!(
        s.server
            .count(&RegistryDouble::default_dl_path("serde", "1.0.0")),
        1
    );
    assert!(!s.cache.path().join("crates").exists());
}

#[test]
fn service_unavailable_twice_then_success() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"eventually");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.fail_next(&path, 2, 503);
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(f.bytes, b"eventually");
    assert_eq!(s.server.count(&path), 3);
}

#[test]
fn too_many_requests_with_retry_after_is_retried() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"slow down");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server
        .fail_next_with_headers(&path, 1, 429, &[("Retry-After", "0")]);
    assert!(fetch_one(&s.fetcher(), &pkg).is_ok());
    assert_eq!(s.server.count(&path), 2);
}

#[test]
fn closed_connection_is_retried() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"after a hiccup");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.close_next(&path, 1);
    let f = fetch_one(&s.fetcher(), &pkg).unwrap();
    assert_eq!(f.bytes, b"after a hiccup");
    assert_eq!(s.server.count(&path), 2);
}

#[test]
fn persistent_server_errors_give_up_after_max_attempts() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"never");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.fail_next(&path, 100, 500);
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    match &err {
        FetchError::Download { status, name, url, .. } => {
            assert_eq!(*status, Some(500));
            assert_eq!(name, "serde");
            assert_eq!(url, &s.server.dl_url("serde", "1.0.0", &pkg.checksum));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("4 attempts"), "{err}");
    assert!(err.to_string().starts_with("cannot download serde 1.0.0 from http://127.0.0.1:"), "{err}");
    assert_eq!(s.server.count(&path), 4);
}

#[test]
fn not_found_is_reported_after_one_request() {
    let s = Setup::new();
    let pkg = crates_io("ghost", "0.0.1", b"unpublished"); // not registered with the server
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    let url = s.server.dl_url("ghost", "0.0.1", &pkg.checksum);
    match &err {
        FetchError::NotFound { name, url: u, .. } => {
            assert_eq!(name, "ghost");
            assert_eq!(u, &url);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("not found in registry"), "{err}");
    assert_eq!(
        s.server
            .count(&RegistryDouble::default_dl_path("ghost", "0.0.1")),
        1
    );
}

#[test]
fn other_client_errors_are_not_retried() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"forbidden");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.fail_next(&path, 5, 403);
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(
        matches!(
            err,
            FetchError::Download {
                status: Some(403),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(s.server.count(&path), 1);
}

#[test]
fn failing_registry_config_is_fetched_once_and_reported_for_every_package() {
    let s = Setup::new();
    s.server.fail_next(CONFIG_PATH, 100, 503);
    let pkgs = vec![
        s.publish("a", "1.0.0", b"a"),
        s.publish("b", "1.0.0", b"b"),
        s.publish("c", "1.0.0", b"c"),
    ];
    let results = s.fetcher().fetch_all(&pkgs);
    for r in &results {
        let err = r.as_ref().unwrap_err();
        assert!(matches!(err, FetchError::Http { .. }), "{err}");
        assert!(err.to_string().contains("config.json"), "{err}");
    }
    assert_eq!(s.server.count(CONFIG_PATH), 4); // one run of max_attempts, not one per package
    // Reported for the batch: said once, with how many packages it stopped.
    let err = s.fetcher().fetch_verified(&pkgs).unwrap_err().to_string();
    assert_eq!(err.matches("config.json").count(), 1, "{err}");
    assert!(err.contains("(for 3 packages)"), "{err}");
}

#[test]
fn a_malformed_cargo_config_is_named_with_line_and_reason() {
    let s = Setup::new();
    write_project_config(
        s.cwd.path(),
        "[source.crates-io]\nreplace-with = \"x\"\n\n[source.x]\nregistry = = \"sparse+http://h/\"\n",
    );
    let pkgs = vec![s.publish("a", "1.0.0", b"a"), s.publish("b", "1.0.0", b"b")];
    let err = s.fetcher().fetch_verified(&pkgs).unwrap_err().to_string();
    let file = s.cwd.path().join(".cargo/config.toml");
    assert!(
        err.contains(&format!("{}:5:12: invalid TOML", file.display())),
        "{err}"
    );
    assert!(err.contains("(for 2 packages)"), "{err}");
    assert!(s.server.requests().is_empty());
}

#[test]
fn offline_with_everything_in_velaris_cache_does_not_read_cargo_config() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"cached");
    s.fetcher().store(&pkg, b"cached").unwrap();
    // Broken in every way: not TOML, and the CARGO_HOME one is a directory.
    write_project_config(s.cwd.path(), "this is = = not toml");
    std::fs::remove_file(s.home.path().join("config.toml")).unwrap();
    std::fs::create_dir(s.home.path().join("config.toml")).unwrap();
    let f = fetch_one(&s.offline_fetcher(), &pkg).unwrap();
    assert!(matches!(f.origin, Origin::VelarisCache(_)), "{:?}", f.origin);
    // A package that is not cached needs the configuration, and says what is wrong with it.
    let other = s.publish("rand", "0.8.5", b"r");
    let err = fetch_one(&s.offline_fetcher(), &other).unwrap_err();
    assert!(matches!(err, FetchError::Config { .. }), "{err}");
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[cfg(unix)]
#[test]
fn special_files_in_config_and_cache_are_refused_not_read() {
    // A FIFO at the project's cargo configuration.
    let s = Setup::new();
    std::fs::create_dir_all(s.cwd.path().join(".cargo")).unwrap();
    mkfifo(&s.cwd.path().join(".cargo/config.toml"));
    let pkg = s.publish("serde", "1.0.0", b"x");
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err().to_string();
    assert!(err.contains("config.toml is a FIFO (named pipe), not a regular file"), "{err}");

    // A FIFO, /dev/zero (through a link) and a directory at velaris cache entries.
    let s = Setup::new();
    let entry = |p: &PackageRef| {
        let path = s
            .cache
            .path()
            .join("crates/sha256")
            .join(&p.checksum[..2])
            .join(format!("{}.crate", p.checksum));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        path
    };
    let a = s.publish("a", "1.0.0", b"a");
    let b = s.publish("b", "1.0.0", b"b");
    let c = s.publish("c", "1.0.0", b"c");
    mkfifo(&entry(&a));
    std::os::unix::fs::symlink("/dev/zero", entry(&b)).unwrap();
    std::fs::create_dir(entry(&c)).unwrap();
    let results = s.fetcher().fetch_all(&[a, b, c]);
    let msgs: Vec<String> = results
        .into_iter()
        .map(|r| r.unwrap_err().to_string())
        .collect();
    assert!(msgs[0].contains("is a FIFO (named pipe), not a regular file"), "{msgs:?}");
    assert!(msgs[1].contains("is a character device, not a regular file"), "{msgs:?}");
    assert!(msgs[2].contains("is a directory, not a regular file"), "{msgs:?}");
    assert!(s.server.requests().is_empty());
}

#[test]
fn offline_missing_packages_are_each_reported() {
    let s = Setup::new();
    let pkgs = vec![
        s.publish("serde", "1.0.0", b"s"),
        s.publish("rand", "0.8.5", b"r"),
    ];
    let results = s.offline_fetcher().fetch_all(&pkgs);
    for (pkg, r) in pkgs.iter().zip(&results) {
        match r {
            Err(FetchError::Offline { name, version }) => {
                assert_eq!((name, version), (&pkg.name, &pkg.version));
            }
            other => panic!("{other:?}"),
        }
        assert!(r.as_ref().unwrap_err().is_offline());
    }
    assert!(s.server.requests().is_empty());
}

#[test]
fn offline_still_uses_cargo_cache() {
    let s = Setup::new();
    let pkg = crates_io("serde", "1.0.0", b"local");
    place_in_cargo_cache(
        s.home.path(),
        &s.server.index_url(),
        "serde",
        "1.0.0",
        b"local",
    );
    let f = fetch_one(&s.offline_fetcher(), &pkg).unwrap();
    assert!(matches!(f.origin, Origin::CargoCache(_)));
}

#[test]
fn directory_source_is_unsupported() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[source.crates-io]\nreplace-with = \"vendored-sources\"\n\
         [source.vendored-sources]\ndirectory = \"vendor\"\n",
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(cwd.path(), options(home.path(), cache.path())).unwrap();
    let err = fetch_one(&fetcher, &crates_io("serde", "1.0.0", b"x")).unwrap_err();
    assert!(matches!(err, FetchError::UnsupportedSource { .. }), "{err}");
    assert!(err.to_string().contains("directory source"), "{err}");
}

#[test]
fn git_index_of_an_alternative_registry_is_unsupported() {
    let s = Setup::new();
    let pkg = PackageRef {
        source: "registry+https://git.example.invalid/index".into(),
        ..crates_io("corp", "1.0.0", b"corp")
    };
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(matches!(err, FetchError::UnsupportedSource { .. }), "{err}");
    assert!(err.to_string().contains("only sparse registries"), "{err}");
    assert!(s.server.requests().is_empty());
}

#[test]
fn local_registry_source_is_read_and_verified() {
    let home = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"local\"\n[source.local]\nlocal-registry = \"{}\"\n",
            local.path().display()
        ),
    )
    .unwrap();
    std::fs::write(local.path().join("serde-1.0.0.crate"), b"local serde").unwrap();
    std::fs::write(local.path().join("rand-0.8.5.crate"), b"tampered").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(
        cwd.path(),
        FetchOptions {
            offline: true,
            ..options(home.path(), cache.path())
        },
    )
    .unwrap();
    let results = fetcher.fetch_all(&[
        crates_io("serde", "1.0.0", b"local serde"),
        crates_io("rand", "0.8.5", b"genuine"),
        crates_io("absent", "1.0.0", b"absent"),
    ]);
    let f = results[0].as_ref().unwrap();
    assert_eq!(
        f.origin,
        Origin::LocalRegistry(local.path().join("serde-1.0.0.crate"))
    );
    assert!(results[1].as_ref().unwrap_err().is_integrity());
    assert!(matches!(
        results[2].as_ref().unwrap_err(),
        FetchError::NotFound { .. }
    ));
}

#[test]
fn results_keep_input_order_under_concurrency() {
    let s = Setup::new();
    let mut pkgs = Vec::new();
    for i in 0..24 {
        let name = format!("crate{i}");
        let bytes = format!("bytes of {name}").into_bytes();
        if i % 5 == 3 {
            pkgs.push(crates_io(&name, "1.0.0", &bytes)); // missing from the server
        } else {
            pkgs.push(s.publish(&name, "1.0.0", &bytes));
        }
    }
    let fetcher = Fetcher::new(
        s.cwd.path(),
        FetchOptions {
            jobs: 6,
            ..s.opts()
        },
    )
    .unwrap();
    let results = fetcher.fetch_all(&pkgs);
    assert_eq!(results.len(), pkgs.len());
    for (i, (pkg, r)) in pkgs.iter().zip(&results).enumerate() {
        if i % 5 == 3 {
            assert!(matches!(r, Err(FetchError::NotFound { .. })), "{i}: {r:?}");
        } else {
            let f = r.as_ref().unwrap();
            assert_eq!(f.bytes, format!("bytes of {}", pkg.name).into_bytes());
        }
    }
    assert_eq!(s.server.count(CONFIG_PATH), 1);
}

#[test]
fn package_without_checksum_is_not_fetched() {
    let s = Setup::new();
    let mut pkg = s.publish("serde", "1.0.0", b"x");
    pkg.checksum.clear();
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(matches!(err, FetchError::InvalidPackage { .. }), "{err}");
    assert!(s.server.requests().is_empty());
}

#[test]
fn hostile_names_never_reach_paths_or_urls() {
    let s = Setup::new();
    let pkg = PackageRef {
        name: "../../etc".into(),
        ..crates_io("x", "1.0.0", b"x")
    };
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(matches!(err, FetchError::InvalidPackage { .. }), "{err}");
    assert!(s.server.requests().is_empty());
}

#[test]
fn invalid_registry_config_json_is_reported() {
    let s = Setup::new();
    s.server.set_config_body("{\"api\": \"nope\"}");
    let pkg = s.publish("serde", "1.0.0", b"x");
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    assert!(matches!(err, FetchError::Registry { .. }), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Slow, stalled and redirected downloads; memory in flight.

/// Options with short limits, so that a test of a deadline takes a second, not minutes.
fn impatient(s: &Setup) -> FetchOptions {
    FetchOptions {
        stall_timeout: Duration::from_millis(400),
        request_timeout: Duration::from_secs(3),
        min_throughput: 2_000,
        throughput_grace: Duration::from_millis(300),
        max_attempts: 3,
        ..s.opts()
    }
}

#[test]
fn a_dripping_server_is_too_slow_retried_then_named_with_its_url() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", &[7u8; 4000]);
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    // 10 bytes every 50 ms: 200 bytes/s, a tenth of the minimum.
    s.server.drip_next(&path, 100, 10, Duration::from_millis(50));
    let start = std::time::Instant::now();
    let fetcher = Fetcher::new(s.cwd.path(), impatient(&s)).unwrap();
    let err = fetch_one(&fetcher, &pkg).unwrap_err();
    let elapsed = start.elapsed();
    match &err {
        FetchError::Download {
            name, version, url, ..
        } => {
            assert_eq!((name.as_str(), version.as_str()), ("serde", "1.0.0"));
            assert_eq!(url, &s.server.dl_url("serde", "1.0.0", &pkg.checksum));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("too slow"), "{msg}");
    assert!(msg.contains("below the minimum of 2000 bytes/s"), "{msg}");
    assert!(msg.contains("3 attempts"), "{msg}");
    assert_eq!(s.server.count(&path), 3);
    // Bounded: a whole drip would take 20 s per attempt.
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
}

#[test]
fn a_stalled_server_is_retried_then_named_with_its_url() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"never sent");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.stall_next(&path, 100);
    let fetcher = Fetcher::new(s.cwd.path(), impatient(&s)).unwrap();
    let err = fetch_one(&fetcher, &pkg).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FetchError::Download { .. }), "{err:?}");
    assert!(msg.contains("cannot download serde 1.0.0 from http://127.0.0.1:"), "{msg}");
    assert!(msg.contains("stalled"), "{msg}");
    assert_eq!(s.server.count(&path), 3);
}

#[test]
fn a_download_that_keeps_going_hits_its_deadline() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", &[1u8; 200_000]);
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    // 2,000 bytes every 20 ms: fast enough for the minimum, too slow to finish in time.
    s.server.drip_next(&path, 100, 2_000, Duration::from_millis(20));
    let fetcher = Fetcher::new(
        s.cwd.path(),
        FetchOptions {
            request_timeout: Duration::from_millis(600),
            // Only the deadline can end these attempts, however loaded the machine is.
            stall_timeout: Duration::from_secs(10),
            min_throughput: 1,
            max_attempts: 2,
            ..impatient(&s)
        },
    )
    .unwrap();
    let err = fetch_one(&fetcher, &pkg).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("did not finish within 0.6 s"), "{msg}");
    assert!(msg.contains("of 200000"), "{msg}");
    assert_eq!(s.server.count(&path), 2);
}

#[test]
fn one_slow_attempt_is_retried_and_the_next_one_succeeds() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", &[3u8; 4000]);
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.drip_next(&path, 1, 10, Duration::from_millis(50));
    let fetcher = Fetcher::new(s.cwd.path(), impatient(&s)).unwrap();
    let f = fetch_one(&fetcher, &pkg).unwrap();
    assert_eq!(f.bytes.len(), 4000);
    assert_eq!(s.server.count(&path), 2);
}

#[test]
fn a_redirect_that_ends_in_404_names_the_final_url() {
    let s = Setup::new();
    let pkg = s.publish("serde", "1.0.0", b"moved away");
    let path = RegistryDouble::default_dl_path("serde", "1.0.0");
    s.server.redirect_next(&path, 1, "/moved/serde-1.0.0.crate");
    let err = fetch_one(&s.fetcher(), &pkg).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FetchError::NotFound { .. }), "{err:?}");
    assert!(
        msg.contains(&format!(
            "(redirected to {}/moved/serde-1.0.0.crate)",
            s.server.base_url()
        )),
        "{msg}"
    );
}

#[test]
fn bodies_in_flight_share_one_memory_budget() {
    let s = Setup::new();
    let size = 400_000;
    let pkgs: Vec<PackageRef> = (0..6)
        .map(|i| {
            let bytes = vec![i as u8; size];
            let name = format!("big{i}");
            let p = s.publish(&name, "1.0.0", &bytes);
            // Slow enough that all six would be in flight at once without a budget.
            s.server.drip_next(
                &RegistryDouble::default_dl_path(&name, "1.0.0"),
                1,
                50_000,
                Duration::from_millis(15),
            );
            p
        })
        .collect();
    let budget = 500_000;
    let fetcher = Fetcher::new(
        s.cwd.path(),
        FetchOptions {
            jobs: 6,
            in_flight: budget,
            ..s.opts()
        },
    )
    .unwrap();
    for r in fetcher.fetch_all(&pkgs) {
        assert_eq!(r.unwrap().bytes.len(), size);
    }
    let peak = fetcher.peak_in_flight();
    // Over the budget only by what one lone download holds; six at once would be 2.4 MB.
    assert!(peak <= budget + size as u64, "peak {peak}");
    assert!(peak >= size as u64, "peak {peak}");
}
