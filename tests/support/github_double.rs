//! A test double for the GitHub API: a small HTTP/1.1 server on 127.0.0.1 (std only), laid out
//! as GitHub Enterprise Server is (REST under `/api/v3`, GraphQL at `/api/graphql`), so that a
//! client that forgets the REST prefix or posts GraphQL under it fails here.
//!
//! Serves issue comments (list with `Link` pagination, create, update by PATCH or POST, delete),
//! `GET /repos/O/R/pulls/N`, `GET /repos/O/R/pulls?head=OWNER:BRANCH`, commit statuses
//! (`POST /repos/O/R/statuses/SHA`, recorded), GraphQL `viewer { login }`, and any file registered with
//! [`GithubDouble::serve_file`] (release assets). It behaves as GitHub does where the action
//! depends on it: a body over 65,536 characters is refused with 422, comments carry their
//! author and creation time, a read-only token gets 403 on writes. Faults can be injected per
//! method and path: a status (with headers) N times, a create that is carried out but answered
//! with an error, a dropped connection. Every request is recorded with its headers and body.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

pub const API_PREFIX: &str = "/api/v3";
pub const GRAPHQL_PATH: &str = "/api/graphql";
pub const BOT: &str = "github-actions[bot]";

#[derive(Clone, Debug)]
pub enum Fault {
    Status { code: u16, headers: Vec<(String, String)>, body: String },
    /// Carry the request out, then answer `code` (a create whose answer is lost).
    ApplyThen { code: u16 },
    Close,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path with query, as sent.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// A write to the comments API.
    pub fn is_comment_write(&self) -> bool {
        self.method != "GET" && self.path.contains("/comments")
    }
}

/// A pull request as the double serves it.
#[derive(Clone, Debug)]
pub struct Pull {
    pub head_sha: String,
    /// `OWNER:BRANCH`.
    pub head_label: String,
    pub head_repo: String,
    pub base_sha: String,
    pub state: String,
}

/// A commit status set through the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub sha: String,
    pub state: String,
    pub context: String,
    pub description: String,
    pub target_url: Option<String>,
}

#[derive(Clone, Debug)]
pub struct StoredComment {
    pub id: u64,
    pub issue: u64,
    pub login: String,
    pub body: String,
}

struct State {
    comments: Vec<StoredComment>,
    next_id: u64,
    page_size: usize,
    viewer: Option<String>,
    /// The login the token writes as.
    writer: String,
    read_only: bool,
    pulls: HashMap<u64, Pull>,
    statuses: Vec<Status>,
    faults: HashMap<(String, String), VecDeque<Fault>>,
    files: HashMap<String, Vec<u8>>,
    requests: Vec<Request>,
}

pub struct GithubDouble {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl GithubDouble {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            comments: Vec::new(),
            next_id: 1000,
            page_size: 100,
            viewer: Some(BOT.to_string()),
            writer: BOT.to_string(),
            read_only: false,
            pulls: HashMap::new(),
            statuses: Vec::new(),
            faults: HashMap::new(),
            files: HashMap::new(),
            requests: Vec::new(),
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
                    std::thread::spawn(move || {
                        let _ = serve(conn, addr, &state);
                    });
                }
            })
        };
        GithubDouble { addr, state, stop, handle: Some(handle) }
    }

    pub fn server_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn api_url(&self) -> String {
        format!("http://{}{API_PREFIX}", self.addr)
    }
    pub fn graphql_url(&self) -> String {
        format!("http://{}{GRAPHQL_PATH}", self.addr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A comment already on issue `issue`; returns its id.
    pub fn add_comment(&self, issue: u64, login: &str, body: &str) -> u64 {
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        st.comments.push(StoredComment { id, issue, login: login.into(), body: body.into() });
        id
    }

    pub fn comments(&self, issue: u64) -> Vec<StoredComment> {
        self.lock().comments.iter().filter(|c| c.issue == issue).cloned().collect()
    }

    /// Comments per page at most (GitHub: 100).
    pub fn set_page_size(&self, n: usize) {
        self.lock().page_size = n;
    }

    /// What GraphQL `viewer` answers; `None`: an error.
    pub fn set_viewer(&self, login: Option<&str>) {
        self.lock().viewer = login.map(str::to_string);
    }

    /// The login comments are written as.
    pub fn set_writer(&self, login: &str) {
        self.lock().writer = login.to_string();
    }

    /// Writes answer 403 as for a fork's read-only token.
    pub fn set_read_only(&self) {
        self.lock().read_only = true;
    }

    /// An open pull request from `mallory:feature` whose head is `sha`.
    pub fn set_pull_head(&self, number: u64, sha: &str) {
        self.set_pull(number, Pull { head_sha: sha.into(), head_label: "mallory:feature".into(), head_repo: "mallory/r".into(), base_sha: "0".repeat(40), state: "open".into() });
    }

    pub fn set_pull(&self, number: u64, pull: Pull) {
        self.lock().pulls.insert(number, pull);
    }

    /// Every commit status set, in order.
    pub fn statuses(&self) -> Vec<Status> {
        self.lock().statuses.clone()
    }

    pub fn serve_file(&self, path: &str, bytes: &[u8]) {
        self.lock().files.insert(path.into(), bytes.to_vec());
    }

    /// The next `times` requests `method path` (path without query) get `fault`.
    pub fn fault(&self, method: &str, path: &str, times: usize, fault: Fault) {
        let mut st = self.lock();
        st.faults.entry((method.into(), path.into())).or_default().extend(std::iter::repeat_n(fault, times));
    }

    pub fn fail(&self, method: &str, path: &str, times: usize, code: u16, headers: &[(&str, &str)]) {
        let headers = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.fault(method, path, times, Fault::Status { code, headers, body: json!({"message": "injected"}).to_string() });
    }

    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }

    /// The path of a repository route: `/api/v3/repos/o/r{rest}`.
    pub fn repo_path(&self, rest: &str) -> String {
        format!("{API_PREFIX}/repos/o/r{rest}")
    }
}

impl Drop for GithubDouble {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn read_body(reader: &mut BufReader<TcpStream>, headers: &[(String, String)]) -> std::io::Result<Vec<u8>> {
    let get = |n: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone());
    if let Some(len) = get("content-length").and_then(|v| v.trim().parse::<usize>().ok()) {
        let mut buf = vec![0; len];
        reader.read_exact(&mut buf)?;
        return Ok(buf);
    }
    if get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        let mut out = Vec::new();
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                reader.read_line(&mut end)?;
                return Ok(out);
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            out.extend_from_slice(&chunk[..n]);
        }
    }
    Ok(Vec::new())
}

fn serve(conn: TcpStream, addr: SocketAddr, state: &Mutex<State>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    conn.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line)? == 0 {
        return Ok(());
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let body = String::from_utf8_lossy(&read_body(&mut reader, &headers)?).into_owned();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let full = parts.next().unwrap_or("").to_string();
    let path = full.split('?').next().unwrap_or("").to_string();

    let (status, extra, out) = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        st.requests.push(Request { method: method.clone(), path: full.clone(), headers: headers.clone(), body: body.clone() });
        let fault = st.faults.get_mut(&(method.clone(), path.clone())).and_then(VecDeque::pop_front);
        match fault {
            Some(Fault::Close) => return Ok(()),
            Some(Fault::Status { code, headers, body }) => (code, headers, body.into_bytes()),
            Some(Fault::ApplyThen { code }) => {
                let _ = route(&mut st, addr, &method, &full, &body);
                (code, Vec::new(), json!({"message": "Server Error"}).to_string().into_bytes())
            }
            None => route(&mut st, addr, &method, &full, &body),
        }
    };
    let mut out_conn = conn;
    let mut head = format!("HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\n", reason(status), out.len());
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out_conn.write_all(head.as_bytes())?;
    out_conn.write_all(&out)?;
    out_conn.flush()
}

fn created_at(id: u64) -> String {
    format!("2026-01-01T{:02}:{:02}:{:02}Z", id / 3600 % 24, id / 60 % 60, id % 60)
}

fn comment_json(c: &StoredComment, server: &str) -> Value {
    json!({
        "id": c.id,
        "node_id": "IC_x",
        "body": c.body,
        "user": {"login": c.login, "id": 41898282, "type": if c.login.ends_with("[bot]") { "Bot" } else { "User" }},
        "html_url": format!("{server}/o/r/pull/{}#issuecomment-{}", c.issue, c.id),
        "created_at": created_at(c.id),
        "updated_at": created_at(c.id),
        "author_association": "NONE",
    })
}

type Answer = (u16, Vec<(String, String)>, Vec<u8>);

fn json_answer(code: u16, v: Value) -> Answer {
    (code, vec![("Content-Type".into(), "application/json; charset=utf-8".into())], v.to_string().into_bytes())
}

fn query_param(full: &str, name: &str) -> Option<usize> {
    let q = full.split_once('?')?.1;
    q.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).and_then(|v| v.parse().ok())
}

fn route(st: &mut State, addr: SocketAddr, method: &str, full: &str, body: &str) -> Answer {
    let server = format!("http://{addr}");
    let path = full.split('?').next().unwrap_or("");
    if path == GRAPHQL_PATH && method == "POST" {
        return match &st.viewer {
            Some(l) if body.contains("viewer") => json_answer(200, json!({"data": {"viewer": {"login": l}}})),
            _ => json_answer(200, json!({"errors": [{"message": "Resource not accessible by integration"}]})),
        };
    }
    if let Some(bytes) = st.files.get(path) {
        return (200, vec![("Content-Type".into(), "application/octet-stream".into())], bytes.clone());
    }
    let by_name = format!("{API_PREFIX}/repos/o/r/");
    let by_id = format!("{API_PREFIX}/repositories/1/");
    let Some(rest) = path.strip_prefix(&by_name).or_else(|| path.strip_prefix(&by_id)) else {
        return json_answer(404, json!({"message": "Not Found"}));
    };
    let seg: Vec<&str> = rest.split('/').collect();
    let write = method != "GET";
    if write && st.read_only {
        return json_answer(403, json!({"message": "Resource not accessible by integration"}));
    }
    let text_of = |body: &str| serde_json::from_str::<Value>(body).ok().and_then(|v| v["body"].as_str().map(str::to_string));
    match (method, seg.as_slice()) {
        ("GET", ["issues", n, "comments"]) => {
            let issue: u64 = n.parse().unwrap_or(0);
            let per = query_param(full, "per_page").unwrap_or(30).min(st.page_size).max(1);
            let page = query_param(full, "page").unwrap_or(1).max(1);
            let all: Vec<&StoredComment> = st.comments.iter().filter(|c| c.issue == issue).collect();
            let items: Vec<Value> = all.iter().skip((page - 1) * per).take(per).map(|c| comment_json(c, &server)).collect();
            let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
            if page * per < all.len() {
                // As GitHub does: the next page under the repository's id, not its name.
                headers.push((
                    "Link".into(),
                    format!(
                        "<{server}{API_PREFIX}/repositories/1/issues/{issue}/comments?per_page={per}&page={}>; rel=\"next\", <{server}{API_PREFIX}/repositories/1/issues/{issue}/comments?per_page={per}&page=99>; rel=\"last\"",
                        page + 1
                    ),
                ));
            }
            (200, headers, Value::Array(items).to_string().into_bytes())
        }
        ("POST", ["issues", n, "comments"]) => {
            let Some(text) = text_of(body) else { return json_answer(400, json!({"message": "Problems parsing JSON"})) };
            if text.chars().count() > 65_536 {
                return json_answer(
                    422,
                    json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}]}),
                );
            }
            st.next_id += 1;
            let c = StoredComment { id: st.next_id, issue: n.parse().unwrap_or(0), login: st.writer.clone(), body: text };
            let v = comment_json(&c, &server);
            st.comments.push(c);
            json_answer(201, v)
        }
        ("PATCH" | "POST", ["issues", "comments", id]) => {
            let Some(text) = text_of(body) else { return json_answer(400, json!({"message": "Problems parsing JSON"})) };
            if text.chars().count() > 65_536 {
                return json_answer(422, json!({"message": "Validation Failed", "errors": [{"message": "body is too long (maximum is 65536 characters)"}]}));
            }
            let id: u64 = id.parse().unwrap_or(0);
            match st.comments.iter_mut().find(|c| c.id == id) {
                Some(c) => {
                    c.body = text;
                    let v = comment_json(c, &server);
                    json_answer(200, v)
                }
                None => json_answer(404, json!({"message": "Not Found"})),
            }
        }
        ("DELETE", ["issues", "comments", id]) => {
            let id: u64 = id.parse().unwrap_or(0);
            let before = st.comments.len();
            st.comments.retain(|c| c.id != id);
            if st.comments.len() < before { (204, Vec::new(), Vec::new()) } else { json_answer(404, json!({"message": "Not Found"})) }
        }
        ("GET", ["pulls", n]) => match st.pulls.get(&n.parse().unwrap_or(0)) {
            Some(p) => json_answer(200, pull_json(n.parse().unwrap_or(0), p)),
            None => json_answer(404, json!({"message": "Not Found"})),
        },
        ("GET", ["pulls"]) => {
            let q = full.split_once('?').map_or("", |(_, q)| q);
            let param = |name: &str| q.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).map(percent_decode);
            let head = param("head");
            let state = param("state").unwrap_or_else(|| "open".into());
            let mut list: Vec<(&u64, &Pull)> =
                st.pulls.iter().filter(|(_, p)| head.as_deref().is_none_or(|h| h == p.head_label) && (state == "all" || p.state == state)).collect();
            list.sort_by_key(|(n, _)| **n);
            json_answer(200, Value::Array(list.into_iter().map(|(n, p)| pull_json(*n, p)).collect()))
        }
        ("POST", ["statuses", sha]) => {
            let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let state = v["state"].as_str().unwrap_or_default().to_string();
            if !["pending", "success", "failure", "error"].contains(&state.as_str()) {
                return json_answer(422, json!({"message": "Validation Failed"}));
            }
            let s = Status {
                sha: sha.to_string(),
                state,
                context: v["context"].as_str().unwrap_or("default").to_string(),
                description: v["description"].as_str().unwrap_or_default().to_string(),
                target_url: v["target_url"].as_str().map(str::to_string),
            };
            st.statuses.push(s.clone());
            json_answer(201, json!({"state": s.state, "context": s.context, "description": s.description}))
        }
        _ => json_answer(404, json!({"message": "Not Found"})),
    }
}

fn pull_json(n: u64, p: &Pull) -> Value {
    json!({
        "number": n,
        "state": p.state,
        "head": {"sha": p.head_sha, "label": p.head_label, "repo": {"full_name": p.head_repo}},
        "base": {"sha": p.base_sha, "label": "o:main", "repo": {"full_name": "o/r"}},
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
