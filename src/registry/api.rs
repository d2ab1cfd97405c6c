//! The crates.io web API, for what the index does not carry: who published each version (a
//! user's API token, or a trusted-publishing workflow and its repository), when, and whether
//! the crate accepts trusted publishing only.
//!
//! It asks only about the crates it is given (the changed ones), one request a crate
//! (`GET {api}/crates/{name}`, whose answer lists every version with `published_by` and
//! `trustpub_data`), within crates.io's crawler policy: a User-Agent that names velaris and
//! where to reach its authors, at most one request a second from this process (requests are
//! spaced, never sent in parallel), a time limit per request and a cap on the requests of one
//! run. A 429 stops all further requests of the run (whatever its `Retry-After`), and so do a
//! connection that could not be made and two time-outs in a row: crates.io is not asked again
//! until the next run.
//! Every crate not answered carries the reason ([`NotChecked`]), never an empty answer.
//!
//! What a version says of its publisher never changes, so answers are cached in velaris'
//! cache (`api/crates-io/<name>.json`, written atomically, only the fields used) and a cached
//! answer is used whenever it lists every version asked about. Offline, only the cache is read.
//!
//! What it does not own: deciding what a publisher change means (`depsdiff::publish`), the
//! index, and downloads. It never sends a token or credentials: the API is read anonymously.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// crates.io's API root.
pub const CRATES_IO_API: &str = "https://crates.io/api/v1/";

/// Largest answer read: the crates with the most versions answer a few MiB.
const MAX_BODY: u64 = 24 * 1024 * 1024;
/// The cache file format.
const CACHE_FORMAT: u32 = 1;

/// How the API is asked.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The API root, ending in `/` (`https://crates.io/api/v1/`).
    pub base_url: String,
    /// Least time between two requests (crates.io's policy: one second).
    pub min_interval: Duration,
    /// Requests one run may send; crates past it are not checked.
    pub max_requests: usize,
    /// Total time for one request, body included.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// velaris' cache directory (answers go under `api/crates-io/`); `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    /// Read the cache only.
    pub offline: bool,
    /// Honour `HTTP(S)_PROXY`/`NO_PROXY`; tests against 127.0.0.1 turn it off.
    pub use_env_proxy: bool,
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            base_url: CRATES_IO_API.to_string(),
            min_interval: Duration::from_secs(1),
            max_requests: 60,
            timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(5),
            cache_dir: None,
            offline: false,
            use_env_proxy: true,
        }
    }
}

/// What crates.io says of a crate, as far as the review uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrateFacts {
    pub name: String,
    /// The crate accepts trusted publishing only (`null` in older answers).
    pub trustpub_only: Option<bool>,
    /// Every version the answer listed.
    pub versions: Vec<VersionFacts>,
}

impl CrateFacts {
    pub fn version(&self, num: &str) -> Option<&VersionFacts> {
        self.versions.iter().find(|v| v.num == num)
    }
}

/// One version's publication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionFacts {
    pub num: String,
    /// When it was published (RFC 3339, as the API says it).
    pub created_at: String,
    /// The login of the user whose token published it (`None`: not recorded, or published by
    /// a trusted-publishing workflow).
    pub published_by: Option<String>,
    /// The trusted-publishing workflow that published it.
    pub trustpub: Option<TrustPub>,
}

/// A trusted-publishing workflow (`trustpub_data`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustPub {
    /// `github`, `gitlab`, or what a newer API says.
    pub provider: String,
    /// `owner/repo` (GitHub) or the project path (GitLab).
    pub repository: Option<String>,
    /// The workflow run (GitHub) or job (GitLab).
    pub run: Option<String>,
    pub sha: Option<String>,
}

/// Why a crate's publishers were not checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotChecked(pub String);

#[derive(Default)]
struct State {
    last: Option<Instant>,
    sent: usize,
    /// Time-outs in a row.
    unreachable: u32,
    /// Why no more requests are sent this run.
    stopped: Option<String>,
}

/// The API client of one run. `&CratesIoApi` is shared by the threads of a run; its requests
/// are sent one at a time.
pub struct CratesIoApi {
    opts: ApiOptions,
    client: OnceLock<Result<reqwest::blocking::Client, String>>,
    state: Mutex<State>,
}

/// A crate name as crates.io allows it (and so safe in a URL path).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl CratesIoApi {
    pub fn new(opts: ApiOptions) -> CratesIoApi {
        CratesIoApi { opts, client: OnceLock::new(), state: Mutex::new(State::default()) }
    }

    /// Requests sent so far.
    pub fn sent(&self) -> usize {
        self.lock().sent
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cache_path(&self, name: &str) -> Option<PathBuf> {
        self.opts.cache_dir.as_ref().map(|d| d.join("api").join("crates-io").join(format!("{}.json", name.to_ascii_lowercase())))
    }

    fn cached(&self, name: &str, need: &[&str]) -> Option<CrateFacts> {
        #[derive(Deserialize)]
        struct File {
            format: u32,
            facts: CrateFacts,
        }
        let path = self.cache_path(name)?;
        let bytes = crate::fsio::read_bytes_if_exists(&path, MAX_BODY, "a cached API answer").ok()??;
        let file: File = serde_json::from_slice(&bytes).ok()?;
        (file.format == CACHE_FORMAT && need.iter().all(|v| file.facts.version(v).is_some())).then_some(file.facts)
    }

    fn store(&self, facts: &CrateFacts) {
        let (Some(root), Some(path)) = (self.opts.cache_dir.as_ref(), self.cache_path(&facts.name)) else { return };
        let body = serde_json::json!({ "format": CACHE_FORMAT, "facts": facts });
        // A cache that cannot be written costs a request next time, not correctness.
        let _ = crate::fsio::write_cache_file(root, &path, body.to_string().as_bytes());
    }

    /// What crates.io says of `name`, listing at least the versions `need`: from the cache when
    /// it has them all, else one request.
    pub fn crate_facts(&self, name: &str, need: &[&str]) -> Result<CrateFacts, NotChecked> {
        if !valid_name(name) {
            return Err(NotChecked(format!("{name:?} is not a crates.io crate name")));
        }
        if let Some(f) = self.cached(name, need) {
            return Ok(f);
        }
        if self.opts.offline {
            return Err(NotChecked("offline, and crates.io's answer is not in velaris' cache".into()));
        }
        let facts = self.request(name)?;
        let missing: Vec<&str> = need.iter().copied().filter(|v| facts.version(v).is_none()).collect();
        if !missing.is_empty() {
            return Err(NotChecked(format!("crates.io's API does not list {} {}", name, missing.join(", "))));
        }
        self.store(&facts);
        Ok(facts)
    }

    fn client(&self) -> Result<&reqwest::blocking::Client, NotChecked> {
        self.client
            .get_or_init(|| {
                super::net::install_crypto_provider();
                let mut b = reqwest::blocking::Client::builder()
                    .user_agent(super::net::USER_AGENT)
                    .connect_timeout(self.opts.connect_timeout)
                    .timeout(self.opts.timeout)
                    .redirect(reqwest::redirect::Policy::limited(3));
                if !self.opts.use_env_proxy {
                    b = b.no_proxy();
                }
                b.build().map_err(|e| crate::message::chain(&e))
            })
            .as_ref()
            .map_err(|e| NotChecked(format!("no HTTP client: {e}")))
    }

    /// One request, spaced from the previous one; the state lock is held throughout, so the
    /// requests of concurrent callers are serialized too.
    fn request(&self, name: &str) -> Result<CrateFacts, NotChecked> {
        let mut st = self.lock();
        if let Some(why) = &st.stopped {
            return Err(NotChecked(why.clone()));
        }
        if st.sent >= self.opts.max_requests {
            return Err(NotChecked(format!("the run's request budget for crates.io's API ({} requests) is spent", self.opts.max_requests)));
        }
        if let Some(last) = st.last {
            let next = last + self.opts.min_interval;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
        let client = self.client()?;
        let url = format!("{}crates/{name}", self.opts.base_url);
        st.sent += 1;
        let answer = client.get(&url).header("Accept", "application/json").send();
        st.last = Some(Instant::now());
        let resp = match answer {
            Ok(r) => r,
            Err(e) => {
                let (connect, timeout) = (e.is_connect(), e.is_timeout());
                // The innermost cause says what happened ("Connection refused"); the layers
                // above it only name the client's stages.
                let e = e.without_url();
                let mut root: &dyn std::error::Error = &e;
                while let Some(next) = root.source() {
                    root = next;
                }
                let why = crate::message::redact(&root.to_string()).into_owned();
                if connect && !timeout {
                    // Nothing listens there, or the name does not resolve: asking again
                    // cannot help this run.
                    let msg = format!("crates.io's API is unreachable ({why}); not asked again this run");
                    st.stopped = Some(msg.clone());
                    return Err(NotChecked(msg));
                }
                st.unreachable = if timeout { st.unreachable + 1 } else { 0 };
                let msg = if timeout {
                    format!("crates.io's API did not answer within {} s", self.opts.timeout.as_secs_f32())
                } else {
                    format!("crates.io's answer broke off ({why})")
                };
                if st.unreachable >= 2 {
                    st.stopped = Some(format!("{msg} twice in a row; not asked again this run"));
                }
                return Err(NotChecked(msg));
            }
        };
        st.unreachable = 0;
        let status = resp.status().as_u16();
        if status == 429 {
            let after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(|v| v.trim().chars().take(40).collect::<String>());
            let why = match after {
                Some(a) => format!("crates.io's API asked velaris to slow down (429, Retry-After: {a}); not asked again this run"),
                None => "crates.io's API asked velaris to slow down (429); not asked again this run".to_string(),
            };
            st.stopped = Some(why.clone());
            return Err(NotChecked(why));
        }
        if status == 404 {
            return Err(NotChecked(format!("crates.io's API does not know {name}")));
        }
        if !(200..300).contains(&status) {
            return Err(NotChecked(format!("crates.io's API answered {status}")));
        }
        drop(st);
        let body = read_capped(resp).map_err(|e| NotChecked(format!("crates.io's answer could not be read: {e}")))?;
        parse(name, &body).map_err(|e| NotChecked(format!("crates.io's answer is not the documented JSON ({e})")))
    }
}

fn read_capped(resp: reqwest::blocking::Response) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut body = Vec::new();
    resp.take(MAX_BODY + 1).read_to_end(&mut body)?;
    if body.len() as u64 > MAX_BODY {
        return Err(std::io::Error::other(format!("larger than {MAX_BODY} bytes")));
    }
    Ok(body)
}

/// The documented shape of `GET /api/v1/crates/{name}`, the fields used.
pub(crate) fn parse(name: &str, body: &[u8]) -> Result<CrateFacts, serde_json::Error> {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(rename = "crate")]
        krate: Krate,
        versions: Vec<Version>,
    }
    #[derive(Deserialize)]
    struct Krate {
        #[serde(default)]
        trustpub_only: Option<bool>,
    }
    #[derive(Deserialize)]
    struct Version {
        num: String,
        created_at: String,
        #[serde(default)]
        published_by: Option<User>,
        #[serde(default)]
        trustpub_data: Option<serde_json::Map<String, serde_json::Value>>,
    }
    #[derive(Deserialize)]
    struct User {
        login: String,
    }
    let a: Answer = serde_json::from_slice(body)?;
    let s = |m: &serde_json::Map<String, serde_json::Value>, k: &str| m.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let versions = a
        .versions
        .into_iter()
        .map(|v| VersionFacts {
            num: v.num,
            created_at: v.created_at,
            published_by: v.published_by.map(|u| u.login),
            trustpub: v.trustpub_data.map(|m| TrustPub {
                provider: s(&m, "provider").unwrap_or_else(|| "unknown".into()),
                repository: s(&m, "repository").or_else(|| s(&m, "project_path")),
                run: s(&m, "run_id").or_else(|| s(&m, "job_id")),
                sha: s(&m, "sha"),
            }),
        })
        .collect();
    Ok(CrateFacts { name: name.to_string(), trustpub_only: a.krate.trustpub_only, versions })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented answer's shape (fields trimmed), one token and one trusted publish.
    const ANSWER: &str = r#"{
      "crate": {"id": "demo", "name": "demo", "repository": "https://github.com/o/demo", "trustpub_only": false},
      "versions": [
        {"id": 2, "crate": "demo", "num": "1.0.1", "created_at": "2026-07-18T23:05:13.123456Z", "yanked": false,
         "published_by": null,
         "trustpub_data": {"provider": "github", "repository": "o/demo", "run_id": "1234", "sha": "abc"}},
        {"id": 1, "crate": "demo", "num": "1.0.0", "created_at": "2025-01-02T03:04:05Z", "yanked": false,
         "published_by": {"id": 7, "login": "alice", "name": "Alice", "avatar": "", "url": "https://github.com/alice"},
         "trustpub_data": null}
      ],
      "keywords": [], "categories": []
    }"#;

    #[test]
    fn the_documented_answer_is_read() {
        let f = parse("demo", ANSWER.as_bytes()).unwrap();
        assert_eq!(f.trustpub_only, Some(false));
        let new = f.version("1.0.1").unwrap();
        assert_eq!(new.published_by, None);
        let tp = new.trustpub.as_ref().unwrap();
        assert_eq!((tp.provider.as_str(), tp.repository.as_deref(), tp.run.as_deref()), ("github", Some("o/demo"), Some("1234")));
        let old = f.version("1.0.0").unwrap();
        assert_eq!(old.published_by.as_deref(), Some("alice"));
        assert!(old.trustpub.is_none());
        // GitLab's shape names a project path and a job.
        let gl = ANSWER.replace(r#""repository": "o/demo", "run_id": "1234""#, r#""project_path": "g/demo", "job_id": "9""#).replace("\"github\"", "\"gitlab\"");
        let tp = parse("demo", gl.as_bytes()).unwrap().version("1.0.1").unwrap().trustpub.clone().unwrap();
        assert_eq!((tp.provider.as_str(), tp.repository.as_deref(), tp.run.as_deref()), ("gitlab", Some("g/demo"), Some("9")));
    }

    #[test]
    fn garbage_is_an_error_not_an_empty_answer() {
        for body in ["", "null", "<html>", r#"{"crate": {}}"#, r#"{"versions": []}"#, r#"{"crate": {}, "versions": [{"num": 1}]}"#] {
            assert!(parse("demo", body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn names_outside_crates_io_rules_are_never_requested() {
        let api = CratesIoApi::new(ApiOptions { base_url: "http://127.0.0.1:9/".into(), ..ApiOptions::default() });
        for bad in ["", "../x", "a/b", "a?b", "é"] {
            assert!(api.crate_facts(bad, &[]).unwrap_err().0.contains("not a crates.io crate name"));
        }
        assert_eq!(api.sent(), 0);
    }

    #[test]
    fn the_cache_answers_only_for_the_versions_it_lists() {
        let dir = tempfile::tempdir().unwrap();
        let api = CratesIoApi::new(ApiOptions { cache_dir: Some(dir.path().to_path_buf()), offline: true, ..ApiOptions::default() });
        api.store(&parse("demo", ANSWER.as_bytes()).unwrap());
        assert!(api.crate_facts("demo", &["1.0.0", "1.0.1"]).is_ok());
        assert!(api.crate_facts("Demo", &["1.0.1"]).is_ok());
        let e = api.crate_facts("demo", &["1.0.2"]).unwrap_err();
        assert!(e.0.contains("offline"), "{e}");
        assert_eq!(api.sent(), 0);
    }
}
