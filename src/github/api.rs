//! The GitHub API client: REST for issue comments and pull requests, GraphQL for the token's
//! own identity, over octocrab (rustls, ring) on a current-thread tokio runtime.
//!
//! This module owns the HTTP side and nothing else: URLs, the token, timeouts, retries,
//! rate limits, pagination and the small wire types it decodes (its own, lenient, rather than
//! octocrab's models). It decides nothing about comments (see [`super::comment`]).
//!
//! - The token is put in the `Authorization` header by octocrab only for requests to the host of
//!   `GITHUB_API_URL` (REST client) or `GITHUB_GRAPHQL_URL` (GraphQL client); a URL of another
//!   host (a pagination link, a redirect) is refused, redirects are not followed, and plain
//!   `http` is accepted only for a loopback host.
//! - Idempotent requests (GET, PATCH, DELETE, GraphQL queries) are retried on 5xx and transport errors with
//!   exponential backoff; any request is retried on a rate limit (429, or 403 with
//!   `x-ratelimit-remaining: 0` or `retry-after`), waiting as `retry-after` or
//!   `x-ratelimit-reset` say. Every wait ends before the client's deadline, so a run spends a
//!   bounded time on GitHub. A POST that failed in a way that may have been applied is not
//!   repeated here: the caller lists again first ([`ApiError::maybe_applied`]).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Method, Uri};
use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::json;

use super::env::Token;
use crate::text::escape;

/// The user agent of every request.
pub const USER_AGENT: &str = concat!("velaris/", env!("CARGO_PKG_VERSION"), " (+https://github.com/velaris/ratchet)");

/// Pages of comments read at most (100 each).
const MAX_PAGES: usize = 100;

/// How the client times out and retries.
#[derive(Debug, Clone)]
pub struct Policy {
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// Requests per call at most, the first included.
    pub attempts: u32,
    /// First backoff; doubles per attempt.
    pub backoff: Duration,
    /// The longest single wait (a longer `retry-after` or reset is reported, not waited for).
    pub max_wait: Duration,
    /// All waiting of the client ends within this time from its creation.
    pub budget: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            attempts: 4,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
            budget: Duration::from_secs(120),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("GitHub refused the request (403 Forbidden): {message}")]
    Forbidden { message: String },
    #[error("GitHub answered 404 Not Found: {message}")]
    NotFound { message: String },
    #[error("GitHub refused the content (422 Unprocessable Entity): {message}")]
    Unprocessable { message: String },
    #[error("GitHub did not accept the token (401 Unauthorized): {message}")]
    Unauthorized { message: String },
    #[error("rate limited by GitHub{}: {message}", until.map(|t| format!(" until {}", clock(t))).unwrap_or_default())]
    RateLimited { until: Option<SystemTime>, message: String },
    #[error("GitHub answered {status}: {message}")]
    Status { status: u16, message: String, maybe_applied: bool },
    #[error("could not reach GitHub: {message}")]
    Transport { message: String, maybe_applied: bool },
    #[error("{0}")]
    Config(String),
    #[error("unexpected answer from GitHub ({what}): {message}")]
    Decode { what: &'static str, message: String },
}

impl ApiError {
    /// The request may have taken effect although it failed (a 5xx, a timeout): a create must
    /// not be repeated before looking whether it happened.
    pub fn maybe_applied(&self) -> bool {
        match self {
            ApiError::Status { maybe_applied, .. } | ApiError::Transport { maybe_applied, .. } => *maybe_applied,
            _ => false,
        }
    }
}

/// `HH:MM:SS UTC` of a time.
fn clock(t: SystemTime) -> String {
    let s = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// The login of a comment's author.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct User {
    pub login: String,
}

/// An issue or pull-request comment, as far as the action reads it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
}

/// A pull request, as far as the `workflow_run` side reads it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullInfo {
    pub number: u64,
    #[serde(default)]
    pub state: Option<String>,
    pub head: PullSide,
    pub base: PullSide,
}

/// One end of a pull request.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullSide {
    pub sha: String,
    #[serde(default)]
    pub repo: Option<RepoName>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct RepoName {
    pub full_name: String,
}

/// The state of a commit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusState {
    Pending,
    Success,
    Failure,
    Error,
}

impl StatusState {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusState::Pending => "pending",
            StatusState::Success => "success",
            StatusState::Failure => "failure",
            StatusState::Error => "error",
        }
    }
}

/// A query value, percent-encoded (everything but unreserved characters and `:`).
fn query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What the client needs to know.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub api_url: String,
    pub graphql_url: String,
    pub owner: String,
    pub repo: String,
    pub token: Token,
    pub policy: Policy,
}

struct Resp {
    status: u16,
    headers: HeaderMap,
    body: String,
}

/// The client. Every method blocks on the client's own runtime.
pub struct Client {
    rt: tokio::runtime::Runtime,
    rest: Octocrab,
    graphql: Octocrab,
    api: Uri,
    api_base: String,
    graphql_url: String,
    repo_path: String,
    policy: Policy,
    deadline: Instant,
}

fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Parse and check a URL the token will be sent to.
fn endpoint(name: &str, url: &str) -> Result<Uri, ApiError> {
    let uri: Uri = url.parse().map_err(|_| ApiError::Config(format!("{name} {url:?} is not a URL")))?;
    let host = uri.host().ok_or_else(|| ApiError::Config(format!("{name} {url:?} has no host")))?;
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback(host) => Ok(uri),
        _ => Err(ApiError::Config(format!(
            "refusing to send the token to {name} {url:?}: only https (or http to a loopback address) is used"
        ))),
    }
}

fn same_origin(a: &Uri, b: &Uri) -> bool {
    a.scheme_str() == b.scheme_str() && a.authority() == b.authority()
}

/// GitHub's error message in a body (`{"message": ...}`), escaped and cut short.
fn message_of(body: &str) -> String {
    #[derive(Deserialize)]
    struct Msg {
        message: Option<String>,
        errors: Option<serde_json::Value>,
    }
    let text = match serde_json::from_str::<Msg>(body) {
        Ok(Msg { message: Some(m), errors }) => match errors {
            Some(e) if !e.is_null() => format!("{m} ({e})"),
            _ => m,
        },
        _ => body.trim().to_string(),
    };
    let text = if text.is_empty() { "no message".to_string() } else { text };
    let cut: String = text.chars().take(300).collect();
    escape::line(&cut)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// How long GitHub asks to wait: `retry-after` (seconds), else until `x-ratelimit-reset` (epoch
/// seconds) when the remaining quota is 0.
pub(crate) fn rate_limit_wait(h: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(secs) = header(h, "retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(secs));
    }
    if header(h, "x-ratelimit-remaining") == Some("0") {
        let reset = header(h, "x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok())?;
        let at = UNIX_EPOCH + Duration::from_secs(reset);
        return Some(at.duration_since(now).unwrap_or(Duration::ZERO) + Duration::from_secs(1));
    }
    None
}

fn is_rate_limited(status: u16, h: &HeaderMap) -> bool {
    status == 429
        || (status == 403 && (header(h, "x-ratelimit-remaining") == Some("0") || header(h, "retry-after").is_some()))
}

/// The `rel="next"` URL of a `Link` header.
pub(crate) fn next_link(h: &HeaderMap) -> Option<String> {
    let link = header(h, "link")?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim();
            p == "rel=\"next\"" || p == "rel=next"
        });
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

fn octo_error(e: &octocrab::Error) -> String {
    // Only the first line: some variants append a backtrace.
    let mut s = match e {
        octocrab::Error::Service { source, .. } => source.to_string(),
        octocrab::Error::Reqwest { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    if let Some(i) = s.find('\n') {
        s.truncate(i);
    }
    escape::line(&s)
}

impl Client {
    pub fn new(cfg: ApiConfig) -> Result<Client, ApiError> {
        let api = endpoint("GITHUB_API_URL", &cfg.api_url)?;
        let graphql = endpoint("GITHUB_GRAPHQL_URL", &cfg.graphql_url)?;
        // The ring provider, as for the registry client (reqwest is built without one).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ApiError::Config(format!("cannot start the HTTP runtime: {e}")))?;
        let policy = cfg.policy.clone();
        let build = |base: &Uri| -> Result<Octocrab, ApiError> {
            let mut http = reqwest::Client::builder()
                .connect_timeout(policy.connect_timeout)
                .timeout(policy.request_timeout)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(USER_AGENT);
            if base.host().is_some_and(is_loopback) {
                http = http.no_proxy();
            }
            let http = http.build().map_err(|e| ApiError::Config(format!("cannot build the HTTP client: {e}")))?;
            // The token goes to `base`'s host only: octocrab adds it for the base and upload
            // hosts, and both are `base`.
            Octocrab::builder()
                .base_uri(base.clone())
                .and_then(|b| b.upload_uri(base.clone()))
                .map(|b| {
                    b.personal_token(cfg.token.expose().to_string())
                        .add_header(http::header::ACCEPT, "application/vnd.github+json".into())
                        .add_header(http::HeaderName::from_static("x-github-api-version"), "2022-11-28".into())
                })
                .and_then(|b| b.build_with_reqwest(http))
                .map_err(|e| ApiError::Config(format!("cannot build the GitHub client: {}", octo_error(&e))))
        };
        // octocrab's service spawns onto the runtime it is built in.
        let (rest, gql) = {
            let _guard = rt.enter();
            (build(&api)?, build(&graphql)?)
        };
        Ok(Client {
            rt,
            rest,
            graphql: gql,
            api_base: cfg.api_url.trim_end_matches('/').to_string(),
            api,
            graphql_url: cfg.graphql_url,
            repo_path: format!("/repos/{}/{}", cfg.owner, cfg.repo),
            deadline: Instant::now() + policy.budget,
            policy,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}{path}", self.api_base, self.repo_path)
    }

    async fn send_once(&self, graphql: bool, method: &Method, url: &str, body: Option<&serde_json::Value>) -> Result<Resp, octocrab::Error> {
        let c = if graphql { &self.graphql } else { &self.rest };
        let res = match *method {
            Method::GET => c._get(url).await?,
            Method::POST => c._post(url, body).await?,
            Method::PATCH => c._patch(url, body).await?,
            Method::DELETE => c._delete(url, None::<&()>).await?,
            _ => unreachable!("only GET, POST, PATCH and DELETE are sent"),
        };
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let body = c.body_to_string(res).await?;
        Ok(Resp { status, headers, body })
    }

    /// Wait before the next attempt, if the budget allows it.
    fn may_wait(&self, wait: Duration) -> bool {
        wait <= self.policy.max_wait && Instant::now() + wait < self.deadline
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.policy.backoff.saturating_mul(1 << (attempt - 1).min(16));
        // Up to a quarter more, so that parallel jobs spread out.
        let jitter = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(attempt);
            h.finish() % 1000
        };
        exp + exp.mul_f64(jitter as f64 / 4000.0)
    }

    /// One call: sends, retries as the policy says, classifies the answer. `idempotent`: the
    /// request may be repeated after a 5xx or a transport error (reads, updates, deletes, a
    /// GraphQL query), unlike a create.
    async fn call(&self, graphql: bool, method: Method, url: &str, body: Option<&serde_json::Value>) -> Result<Resp, ApiError> {
        let idempotent = method != Method::POST || graphql;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.policy.attempts.max(1);
            match self.send_once(graphql, &method, url, body).await {
                Err(e) => {
                    let wait = self.backoff(attempt);
                    if idempotent && !last && self.may_wait(wait) {
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(ApiError::Transport { message: octo_error(&e), maybe_applied: !idempotent });
                }
                Ok(r) if (200..300).contains(&r.status) => return Ok(r),
                Ok(r) if is_rate_limited(r.status, &r.headers) => {
                    // A rate-limited request was not carried out: any method may be repeated.
                    let wait = rate_limit_wait(&r.headers, SystemTime::now()).unwrap_or_else(|| self.backoff(attempt));
                    if !last && self.may_wait(wait) {
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    let until = rate_limit_wait(&r.headers, SystemTime::now()).map(|w| SystemTime::now() + w);
                    return Err(ApiError::RateLimited { until, message: message_of(&r.body) });
                }
                Ok(r) if r.status >= 500 => {
                    let wait = rate_limit_wait(&r.headers, SystemTime::now()).unwrap_or_else(|| self.backoff(attempt));
                    if idempotent && !last && self.may_wait(wait) {
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(ApiError::Status { status: r.status, message: message_of(&r.body), maybe_applied: !idempotent });
                }
                Ok(r) => {
                    let message = message_of(&r.body);
                    return Err(match r.status {
                        401 => ApiError::Unauthorized { message },
                        403 => ApiError::Forbidden { message },
                        404 => ApiError::NotFound { message },
                        422 => ApiError::Unprocessable { message },
                        status => ApiError::Status { status, message, maybe_applied: false },
                    });
                }
            }
        }
    }

    fn block<T>(&self, f: impl std::future::Future<Output = Result<T, ApiError>>) -> Result<T, ApiError> {
        self.rt.block_on(f)
    }

    fn decode<T: serde::de::DeserializeOwned>(what: &'static str, body: &str) -> Result<T, ApiError> {
        serde_json::from_str(body).map_err(|e| ApiError::Decode { what, message: escape::line(&e.to_string()) })
    }

    /// The login of the token's own identity, from GraphQL `viewer { login }` (REST `/user`
    /// answers 403 for a workflow's token).
    pub fn viewer_login(&self) -> Result<String, ApiError> {
        #[derive(Deserialize)]
        struct Data {
            data: Option<Viewer>,
        }
        #[derive(Deserialize)]
        struct Viewer {
            viewer: Option<User>,
        }
        let query = json!({"query": "query { viewer { login } }"});
        let r = self.block(self.call(true, Method::POST, &self.graphql_url, Some(&query)))?;
        let d: Data = Self::decode("viewer", &r.body)?;
        d.data
            .and_then(|d| d.viewer)
            .map(|u| u.login)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| ApiError::Decode { what: "viewer", message: message_of(&r.body) })
    }

    /// Every comment of issue or pull request `number`, oldest first, all pages.
    pub fn list_comments(&self, number: u64) -> Result<Vec<Comment>, ApiError> {
        self.block(async {
            let mut url = self.url(&format!("/issues/{number}/comments?per_page=100"));
            let mut all = Vec::new();
            for _ in 0..MAX_PAGES {
                let r = self.call(false, Method::GET, &url, None).await?;
                let page: Vec<Comment> = Self::decode("comment list", &r.body)?;
                all.extend(page);
                let Some(next) = next_link(&r.headers) else { return Ok(all) };
                let uri: Uri = next.parse().map_err(|_| ApiError::Decode { what: "pagination link", message: escape::line(&next) })?;
                if !same_origin(&uri, &self.api) {
                    return Err(ApiError::Config(format!(
                        "the next page of comments is on another host ({}); not following it",
                        escape::line(uri.authority().map(|a| a.as_str()).unwrap_or("none"))
                    )));
                }
                url = next;
            }
            Ok(all)
        })
    }

    pub fn create_comment(&self, number: u64, body: &str) -> Result<Comment, ApiError> {
        let url = self.url(&format!("/issues/{number}/comments"));
        let r = self.block(self.call(false, Method::POST, &url, Some(&json!({ "body": body }))))?;
        Self::decode("created comment", &r.body)
    }

    pub fn update_comment(&self, id: u64, body: &str) -> Result<Comment, ApiError> {
        let url = self.url(&format!("/issues/comments/{id}"));
        let r = self.block(self.call(false, Method::PATCH, &url, Some(&json!({ "body": body }))))?;
        Self::decode("updated comment", &r.body)
    }

    pub fn delete_comment(&self, id: u64) -> Result<(), ApiError> {
        let url = self.url(&format!("/issues/comments/{id}"));
        match self.block(self.call(false, Method::DELETE, &url, None)) {
            // Already gone (a retried delete that had gone through): what was wanted.
            Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Pull request `number`.
    pub fn pull_request(&self, number: u64) -> Result<PullInfo, ApiError> {
        let url = self.url(&format!("/pulls/{number}"));
        let r = self.block(self.call(false, Method::GET, &url, None))?;
        Self::decode::<PullInfo>("pull request", &r.body)
    }

    /// The open pull requests whose head is `label` (`OWNER:BRANCH`), first page.
    pub fn pulls_by_head(&self, label: &str) -> Result<Vec<PullInfo>, ApiError> {
        let url = self.url(&format!("/pulls?state=open&per_page=100&head={}", query_value(label)));
        let r = self.block(self.call(false, Method::GET, &url, None))?;
        Self::decode::<Vec<PullInfo>>("pull request list", &r.body)
    }

    /// Set the commit status `context` of `sha`. `description` is cut to GitHub's 140
    /// characters.
    pub fn set_status(&self, sha: &str, state: StatusState, context: &str, description: &str, target_url: Option<&str>) -> Result<(), ApiError> {
        if !crate::git::is_object_id(sha) {
            return Err(ApiError::Config(format!("{} is not a commit id", escape::line(sha))));
        }
        let description: String = if description.chars().count() > 140 {
            description.chars().take(139).collect::<String>() + "…"
        } else {
            description.to_string()
        };
        let mut body = json!({"state": state.as_str(), "context": context, "description": description});
        if let Some(u) = target_url {
            body["target_url"] = json!(u);
        }
        let url = self.url(&format!("/statuses/{sha}"));
        self.block(self.call(false, Method::POST, &url, Some(&body)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn next_link_is_found_among_others() {
        let h = headers(&[(
            "link",
            r#"<https://api.github.com/repositories/1/issues/2/comments?page=3>; rel="next", <https://api.github.com/repositories/1/issues/2/comments?page=9>; rel="last""#,
        )]);
        assert_eq!(next_link(&h).as_deref(), Some("https://api.github.com/repositories/1/issues/2/comments?page=3"));
        assert_eq!(next_link(&headers(&[("link", r#"<https://x/?page=1>; rel="prev""#)])), None);
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    #[test]
    fn waits_follow_retry_after_then_reset() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(rate_limit_wait(&headers(&[("retry-after", "7")]), now), Some(Duration::from_secs(7)));
        let reset = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1010")]);
        assert_eq!(rate_limit_wait(&reset, now), Some(Duration::from_secs(11)));
        assert_eq!(rate_limit_wait(&headers(&[("x-ratelimit-remaining", "5"), ("x-ratelimit-reset", "1010")]), now), None);
        assert!(is_rate_limited(403, &reset));
        assert!(!is_rate_limited(403, &headers(&[("x-ratelimit-remaining", "12")])));
        assert!(is_rate_limited(429, &HeaderMap::new()));
    }

    #[test]
    fn the_token_goes_to_https_or_loopback_only() {
        assert!(endpoint("GITHUB_API_URL", "https://api.github.com").is_ok());
        assert!(endpoint("GITHUB_API_URL", "http://127.0.0.1:8080/api/v3").is_ok());
        assert!(endpoint("GITHUB_API_URL", "http://[::1]:8080").is_ok());
        let e = endpoint("GITHUB_API_URL", "http://ghe.example.com/api/v3").unwrap_err();
        assert!(e.to_string().contains("refusing"), "{e}");
        assert!(endpoint("GITHUB_API_URL", "ftp://x").is_err());
    }

    #[test]
    fn error_messages_are_escaped_and_short() {
        let m = message_of("{\"message\": \"Resource not accessible by integration\\u001b[31m\"}");
        assert_eq!(m, "Resource not accessible by integration\\u{1b}[31m");
        assert_eq!(message_of(&"x".repeat(1000)).len(), 300);
        assert_eq!(clock(UNIX_EPOCH + Duration::from_secs(3 * 3600 + 4 * 60 + 5)), "03:04:05 UTC");
    }
}
