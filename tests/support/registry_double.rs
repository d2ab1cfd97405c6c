//! A test double for a sparse cargo registry: a tiny HTTP/1.1 server on 127.0.0.1 (std only)
//! plus helpers that lay out a temporary `CARGO_HOME` the way cargo would.
//!
//! Serves `GET /index/config.json` (`{"dl": ...}`), each crate's sparse index entry at
//! `/index/<prefix>/<name>` (one line per registered version, with `yanked` as set by
//! [`RegistryDouble::yank`], and `pubtime` as set by [`RegistryDouble::set_pubtime`]), and the `.crate` bytes registered for (name, version) at
//! whatever path the current `dl` template expands to. Every request path
//! is recorded. Faults can be injected per path: answer a status N times, close the connection
//! without answering N times, send the head and then drip the body a few bytes at a time or
//! stall (send nothing more), redirect elsewhere, or serve tampered bytes. The server stops
//! when dropped.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The path of the index config.
pub const CONFIG_PATH: &str = "/index/config.json";

#[derive(Clone, Debug)]
enum Fault {
    Status {
        code: u16,
        headers: Vec<(String, String)>,
    },
    Close,
    /// The head, then the body `chunk` bytes at a time, one chunk every `every`.
    Drip { chunk: usize, every: Duration },
    /// The head (with the real Content-Length), then nothing, until the server stops.
    Stall,
    /// A 302 to this path (or absolute URL).
    Redirect { to: String },
}

#[derive(Default)]
struct State {
    crates: HashMap<(String, String), Vec<u8>>,
    tampered: HashMap<(String, String), Vec<u8>>,
    yanked: std::collections::HashSet<(String, String)>,
    unlisted: std::collections::HashSet<(String, String)>,
    /// `pubtime` per (name, version), as the index writes it.
    pubtimes: HashMap<(String, String), String>,
    faults: HashMap<String, VecDeque<Fault>>,
    /// `dl` value; `{base}` is replaced by `http://127.0.0.1:PORT`.
    dl_template: String,
    /// Overrides the whole body of `config.json` when set.
    config_body: Option<String>,
    requests: Vec<String>,
}

pub struct RegistryDouble {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl RegistryDouble {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            dl_template: "{base}/dl/{crate}/{version}/download".to_owned(),
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let state = Arc::clone(&state);
                    let stop = Arc::clone(&stop);
                    std::thread::spawn(move || {
                        let _ = serve(conn, addr, &state, &stop);
                    });
                }
            })
        };
        RegistryDouble {
            addr,
            state,
            stop,
            handle: Some(handle),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `sparse+http://127.0.0.1:PORT/index/`, as written in cargo config and lockfiles.
    pub fn index_url(&self) -> String {
        format!("sparse+http://{}/index/", self.addr)
    }

    /// Registers the published bytes of (name, version).
    pub fn add_crate(&self, name: &str, version: &str, bytes: &[u8]) {
        self.lock()
            .crates
            .insert((name.to_owned(), version.to_owned()), bytes.to_vec());
    }

    /// Marks (name, version) yanked in its index entry.
    pub fn yank(&self, name: &str, version: &str) {
        self.lock().yanked.insert((name.to_owned(), version.to_owned()));
    }

    /// Gives (name, version) a `pubtime` in its index entry (RFC 3339).
    pub fn set_pubtime(&self, name: &str, version: &str, pubtime: &str) {
        self.lock().pubtimes.insert((name.to_owned(), version.to_owned()), pubtime.to_owned());
    }

    /// Leaves (name, version) out of its index entry (it can still be downloaded).
    pub fn unlist(&self, name: &str, version: &str) {
        self.lock().unlisted.insert((name.to_owned(), version.to_owned()));
    }

    /// The path of a crate's index entry, by cargo's rule (an implementation independent of
    /// velaris').
    pub fn index_path(name: &str) -> String {
        let n = name.to_lowercase();
        let dir = match n.len() {
            1 => "1".to_owned(),
            2 => "2".to_owned(),
            3 => format!("3/{}", &n[..1]),
            _ => format!("{}/{}", &n[..2], &n[2..4]),
        };
        format!("/index/{dir}/{n}")
    }

    /// Serves `bytes` instead of the registered ones for (name, version).
    pub fn tamper(&self, name: &str, version: &str, bytes: &[u8]) {
        self.lock()
            .tampered
            .insert((name.to_owned(), version.to_owned()), bytes.to_vec());
    }

    /// Sets the `dl` template; `{base}` stands for `http://127.0.0.1:PORT`.
    pub fn set_dl_template(&self, template: &str) {
        self.lock().dl_template = template.to_owned();
    }

    /// Replaces the whole `config.json` body.
    pub fn set_config_body(&self, body: &str) {
        self.lock().config_body = Some(body.to_owned());
    }

    /// Answers `status` (empty body) the next `times` requests for `path`.
    pub fn fail_next(&self, path: &str, times: usize, status: u16) {
        self.fail_next_with_headers(path, times, status, &[]);
    }

    pub fn fail_next_with_headers(
        &self,
        path: &str,
        times: usize,
        status: u16,
        headers: &[(&str, &str)],
    ) {
        let fault = Fault::Status {
            code: status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        self.push_faults(path, times, fault);
    }

    /// Reads the request and closes the connection without answering, the next `times` times.
    pub fn close_next(&self, path: &str, times: usize) {
        self.push_faults(path, times, Fault::Close);
    }

    /// Sends the head, then the body `chunk` bytes every `every`, the next `times` times.
    pub fn drip_next(&self, path: &str, times: usize, chunk: usize, every: Duration) {
        self.push_faults(path, times, Fault::Drip { chunk, every });
    }

    /// Sends the head and then nothing more (the connection stays open), the next `times` times.
    pub fn stall_next(&self, path: &str, times: usize) {
        self.push_faults(path, times, Fault::Stall);
    }

    /// Answers a 302 redirect to `to` (a path on this server, or a URL), the next `times` times.
    pub fn redirect_next(&self, path: &str, times: usize, to: &str) {
        self.push_faults(path, times, Fault::Redirect { to: to.to_owned() });
    }

    fn push_faults(&self, path: &str, times: usize, fault: Fault) {
        let mut state = self.lock();
        let queue = state.faults.entry(path.to_owned()).or_default();
        queue.extend(std::iter::repeat_n(fault, times));
    }

    /// Every request path (with query), in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    /// How many requests hit `path`.
    pub fn count(&self, path: &str) -> usize {
        self.lock().requests.iter().filter(|p| *p == path).count()
    }

    /// The path a download of (name, version) takes with the default template.
    pub fn default_dl_path(name: &str, version: &str) -> String {
        format!("/dl/{name}/{version}/download")
    }

    /// The full URL of a download under the current template.
    pub fn dl_url(&self, name: &str, version: &str, checksum: &str) -> String {
        let state = self.lock();
        let base = self.base_url();
        expand(
            &state.dl_template.replace("{base}", &base),
            name,
            version,
            checksum,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for RegistryDouble {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Unblock accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn serve(
    conn: TcpStream,
    addr: SocketAddr,
    state: &Mutex<State>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line)? == 0 {
        return Ok(()); // the Drop wake-up, or a client that gave up
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();

    let mut pace = None;
    let (status, headers, body) = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        st.requests.push(path.clone());
        let fault = st.faults.get_mut(&path).and_then(VecDeque::pop_front);
        match fault {
            Some(Fault::Close) => return Ok(()), // drop without a byte of answer
            Some(Fault::Status { code, headers }) => (code, headers, Vec::new()),
            Some(Fault::Redirect { to }) => {
                let location = if to.starts_with('/') { format!("http://{addr}{to}") } else { to };
                (302, vec![("Location".to_owned(), location)], Vec::new())
            }
            Some(f @ (Fault::Drip { .. } | Fault::Stall)) => {
                pace = Some(f);
                respond(&st, addr, &path)
            }
            None if method != "GET" => (405, Vec::new(), Vec::new()),
            None => respond(&st, addr, &path),
        }
    };

    let mut out = conn;
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()?;
    match pace {
        Some(Fault::Drip { chunk, every }) => {
            for part in body.chunks(chunk.max(1)) {
                if stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                std::thread::sleep(every);
                out.write_all(part)?;
                out.flush()?;
            }
            Ok(())
        }
        Some(_) => {
            // Stall: hold the connection open, sending nothing, until the server stops.
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(())
        }
        None => {
            out.write_all(&body)?;
            out.flush()
        }
    }
}

fn respond(st: &State, addr: SocketAddr, path: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let base = format!("http://{addr}");
    let json = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    if path == CONFIG_PATH {
        let body = match &st.config_body {
            Some(body) => body.clone(),
            None => format!(
                "{{\"dl\": {}}}",
                json_string(&st.dl_template.replace("{base}", &base))
            ),
        };
        return (200, json, body.into_bytes());
    }
    if path.starts_with("/index/") {
        let name = path.rsplit('/').next().unwrap_or("");
        let mut versions: Vec<(&String, &Vec<u8>)> = st
            .crates
            .iter()
            .filter(|((n, v), _)| {
                n.to_lowercase() == name && RegistryDouble::index_path(n) == path && !st.unlisted.contains(&(n.clone(), v.clone()))
            })
            .map(|((_, v), b)| (v, b))
            .collect();
        if versions.is_empty() {
            return (404, Vec::new(), b"not found".to_vec());
        }
        versions.sort();
        let mut body = String::new();
        for (v, bytes) in versions {
            let real = st.crates.keys().find(|(n, vv)| n.to_lowercase() == name && vv == v).map(|(n, _)| n.clone()).unwrap_or_default();
            let yanked = st.yanked.contains(&(real.clone(), v.clone()));
            let pubtime = st.pubtimes.get(&(real.clone(), v.clone())).map(|t| format!(",\"pubtime\":{}", json_string(t))).unwrap_or_default();
            body.push_str(&format!(
                "{{\"name\":{},\"vers\":{},\"deps\":[],\"cksum\":\"{}\",\"features\":{{}},\"yanked\":{yanked}{pubtime}}}\n",
                json_string(&real),
                json_string(v),
                sha256_hex(bytes)
            ));
        }
        return (200, Vec::new(), body.into_bytes());
    }
    let template = st.dl_template.replace("{base}", &base);
    for ((name, version), bytes) in &st.crates {
        let checksum = sha256_hex(bytes);
        let url = expand(&template, name, version, &checksum);
        if url.strip_prefix(&base) == Some(path) {
            let key = (name.clone(), version.clone());
            let body = st.tampered.get(&key).unwrap_or(bytes).clone();
            return (200, Vec::new(), body);
        }
    }
    (404, Vec::new(), b"not found".to_vec())
}

/// An independent implementation of cargo's `dl` markers, to cross-check velaris'.
fn expand(template: &str, name: &str, version: &str, checksum: &str) -> String {
    let markers = [
        "{crate}",
        "{version}",
        "{prefix}",
        "{lowerprefix}",
        "{sha256-checksum}",
    ];
    if !markers.iter().any(|m| template.contains(m)) {
        return format!("{template}/{name}/{version}/download");
    }
    let prefix = match name.len() {
        1 => "1".to_owned(),
        2 => "2".to_owned(),
        3 => format!("3/{}", &name[..1]),
        _ => format!("{}/{}", &name[..2], &name[2..4]),
    };
    template
        .replace("{crate}", name)
        .replace("{version}", version)
        .replace("{prefix}", &prefix)
        .replace("{lowerprefix}", &prefix.to_lowercase())
        .replace("{sha256-checksum}", checksum)
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The built `velaris` run in `dir` with `cargo_home` (see [`cargo_home_replacing_crates_io`])
/// and `cache` as its cache directory, without colour, without any proxy from the environment
/// (nothing a test runs can reach past 127.0.0.1) and not as a CI job.
pub fn velaris_command(dir: &std::path::Path, cargo_home: &std::path::Path, cache: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_velaris"));
    c.current_dir(dir)
        .env("CARGO_HOME", cargo_home)
        .env("VELARIS_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        // The rustflags cargo would use decide cfgs: none from the test's environment.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        // crates.io's API is never asked from a test: nothing listens on port 1, so each
        // publisher is "not checked" (tests of the publisher checks point this at a double).
        .env("VELARIS_CRATES_IO_API", "http://127.0.0.1:1/api/v1/")
        // Not a CI job unless a test says so: progress stays off on a pipe.
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS");
    c
}

/// A temporary `CARGO_HOME` whose `config.toml` replaces crates.io with `index_url`
/// (a `sparse+http://...` URL) under the source name `velaris-test`.
pub fn cargo_home_replacing_crates_io(index_url: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"velaris-test\"\n\
             [source.velaris-test]\nregistry = \"{index_url}\"\n"
        ),
    )
    .unwrap();
    home
}

/// cargo's cache directory for `registry_url` (as written in config, e.g. `sparse+http://...`)
/// under `cargo_home`, using cargo ≥ 1.85's stable hash (`stable = true`) or the legacy one.
pub fn cargo_cache_dir(cargo_home: &Path, registry_url: &str, stable: bool) -> PathBuf {
    let dir = tame_index::utils::url_to_local_dir(registry_url, stable).unwrap();
    cargo_home.join("registry").join("cache").join(dir.dir_name)
}

/// Places `bytes` where cargo would have cached `name-version.crate` from `registry_url`
/// (stable hash); returns the file's path.
pub fn place_in_cargo_cache(
    cargo_home: &Path,
    registry_url: &str,
    name: &str,
    version: &str,
    bytes: &[u8],
) -> PathBuf {
    place_in_cargo_cache_with(cargo_home, registry_url, true, name, version, bytes)
}

pub fn place_in_cargo_cache_with(
    cargo_home: &Path,
    registry_url: &str,
    stable: bool,
    name: &str,
    version: &str,
    bytes: &[u8],
) -> PathBuf {
    let dir = cargo_cache_dir(cargo_home, registry_url, stable);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{version}.crate"));
    std::fs::write(&path, bytes).unwrap();
    path
}
