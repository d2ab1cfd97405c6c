//! A test double for crates.io's web API on 127.0.0.1 (std only): `GET /api/v1/crates/{name}`
//! answers the documented shape (`crate` with `repository` and `trustpub_only`, `versions` with
//! `num`, `created_at`, `published_by` and `trustpub_data`), recorded from crates.io's API
//! types. Faults per crate: a status with headers (429 with `Retry-After`), a body that is not
//! JSON, or an answer held back for a while (slow). Every request is recorded with its time and
//! User-Agent. The server stops when dropped.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Who published one version.
#[derive(Clone, Debug)]
pub enum By {
    /// A user's API token.
    User(&'static str),
    /// A GitHub Actions trusted publisher in `owner/repo`.
    GitHub(&'static str),
}

#[derive(Clone, Debug)]
pub enum Fault {
    Status { code: u16, headers: Vec<(String, String)> },
    Garbage,
    Slow(Duration),
}

#[derive(Default)]
struct State {
    /// name → (trustpub_only, versions (num, created_at, by))
    crates: HashMap<String, (bool, Vec<(String, String, By)>)>,
    faults: HashMap<String, Fault>,
    /// (path, when, user agent)
    requests: Vec<(String, Instant, String)>,
}

pub struct ApiDouble {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl ApiDouble {
    pub fn start() -> ApiDouble {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (Arc::clone(&state), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = Arc::clone(&st);
                std::thread::spawn(move || serve(conn, &st));
            }
        });
        ApiDouble { addr, state, stop }
    }

    /// The API root to give velaris (`VELARIS_CRATES_IO_API`).
    pub fn url(&self) -> String {
        format!("http://{}/api/v1/", self.addr)
    }

    /// Registers a version of `name` published at `created_at` by `by`.
    pub fn publish(&self, name: &str, version: &str, created_at: &str, by: By) {
        let mut st = self.state.lock().unwrap();
        st.crates.entry(name.to_string()).or_default().1.push((version.to_string(), created_at.to_string(), by));
    }

    pub fn trustpub_only(&self, name: &str) {
        self.state.lock().unwrap().crates.entry(name.to_string()).or_default().0 = true;
    }

    pub fn fault(&self, name: &str, fault: Fault) {
        self.state.lock().unwrap().faults.insert(name.to_string(), fault);
    }

    /// (path, when, user agent) of every request, in order.
    pub fn requests(&self) -> Vec<(String, Instant, String)> {
        self.state.lock().unwrap().requests.clone()
    }
}

impl Drop for ApiDouble {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn user(login: &str, id: u64) -> String {
    format!(r#"{{"id": {id}, "login": "{login}", "name": null, "avatar": "https://avatars.example/{login}", "url": "https://github.com/{login}"}}"#)
}

fn body(name: &str, only: bool, versions: &[(String, String, By)]) -> String {
    let mut vs: Vec<String> = Vec::new();
    for (i, (num, at, by)) in versions.iter().enumerate().rev() {
        let (published_by, trustpub) = match by {
            By::User(l) => (user(l, 100 + i as u64), "null".to_string()),
            By::GitHub(repo) => ("null".to_string(), format!(r#"{{"provider": "github", "repository": "{repo}", "run_id": "{}", "sha": "{}"}}"#, 9000 + i, "ab".repeat(20))),
        };
        vs.push(format!(
            r#"{{"id": {id}, "crate": "{name}", "num": "{num}", "dl_path": "/api/v1/crates/{name}/{num}/download", "readme_path": "/api/v1/crates/{name}/{num}/readme", "updated_at": "{at}", "created_at": "{at}", "downloads": 10, "features": {{}}, "yanked": false, "yank_message": null, "lib_links": null, "license": "MIT", "links": {{"dependencies": "/api/v1/crates/{name}/{num}/dependencies", "version_downloads": "/api/v1/crates/{name}/{num}/downloads", "authors": "/api/v1/crates/{name}/{num}/authors"}}, "crate_size": 1000, "published_by": {published_by}, "audit_actions": [], "checksum": "{sum}", "rust_version": null, "has_lib": true, "bin_names": [], "edition": "2021", "description": null, "homepage": null, "documentation": null, "repository": null, "trustpub_data": {trustpub}, "linecounts": null}}"#,
            id = i + 1,
            sum = "0".repeat(64)
        ));
    }
    format!(
        r#"{{"crate": {{"id": "{name}", "name": "{name}", "updated_at": "2026-01-01T00:00:00Z", "versions": [], "keywords": [], "categories": [], "badges": [], "created_at": "2020-01-01T00:00:00Z", "downloads": 10, "recent_downloads": 1, "default_version": null, "num_versions": {n}, "yanked": false, "max_version": "0.0.0", "newest_version": "0.0.0", "max_stable_version": null, "description": "d", "homepage": null, "documentation": null, "repository": "https://github.com/o/{name}", "links": {{}}, "exact_match": false, "trustpub_only": {only}}}, "versions": [{v}], "keywords": [], "categories": []}}"#,
        n = versions.len(),
        v = vs.join(", ")
    )
}

fn serve(mut conn: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut agent = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("user-agent") {
                agent = v.trim().to_string();
            }
        }
    }
    let name = path.strip_prefix("/api/v1/crates/").unwrap_or("").to_string();
    let (fault, answer) = {
        let mut st = state.lock().unwrap();
        st.requests.push((path.clone(), Instant::now(), agent));
        let answer = st.crates.get(&name).map(|(only, vs)| body(&name, *only, vs));
        (st.faults.get(&name).cloned(), answer)
    };
    let (code, headers, text) = match (fault, answer) {
        (Some(Fault::Status { code, headers }), _) => (code, headers, r#"{"errors": [{"detail": "no"}]}"#.to_string()),
        (Some(Fault::Garbage), _) => (200, Vec::new(), "<html>maintenance</html>".to_string()),
        (Some(Fault::Slow(d)), Some(a)) => {
            std::thread::sleep(d);
            (200, Vec::new(), a)
        }
        (_, Some(a)) => (200, Vec::new(), a),
        (_, None) => (404, Vec::new(), r#"{"errors": [{"detail": "crate does not exist"}]}"#.to_string()),
    };
    let mut head = format!("HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n", text.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(text.as_bytes());
}
