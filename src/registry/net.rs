//! The HTTP side: one lazily built blocking client, retries with backoff, bodies read in
//! chunks under a deadline, a minimum throughput and a memory budget shared by every download.
//!
//! reqwest's blocking client applies its timeout to each read, so on its own a server that
//! drips one byte a second never times out. Here that timeout is only the stall limit (no byte
//! at all for that long); the total time of an attempt and its average throughput are checked
//! after every chunk, and a download that is too slow is retried like a stalled one.

use std::hash::{BuildHasher, Hasher};
use std::io::{ErrorKind, Read};
use std::sync::{Once, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::Client;

use crate::resources::budget::Budget;
use crate::message;

/// Upper bound for a server's `Retry-After`.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

/// Bytes read from a response at a time.
const CHUNK: usize = 64 * 1024;

pub(crate) const USER_AGENT: &str = concat!(
    "velaris/",
    env!("CARGO_PKG_VERSION"),
    " (+https://github.com/velaris/ratchet)"
);

#[derive(Clone, Debug)]
pub(crate) struct NetConfig {
    pub(crate) connect_timeout: Duration,
    /// Total time of one attempt, body included.
    pub(crate) request_timeout: Duration,
    /// Longest wait for the response head or for any byte of the body.
    pub(crate) stall_timeout: Duration,
    /// Least average throughput of a body, in bytes per second, once `throughput_grace` passed.
    pub(crate) min_throughput: u64,
    pub(crate) throughput_grace: Duration,
    pub(crate) retry_base: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) use_env_proxy: bool,
    /// Bytes of response bodies held by all downloads at once.
    pub(crate) in_flight: u64,
}

/// Why a GET failed for good.
#[derive(Debug)]
pub(crate) enum HttpFailure {
    /// 404; `final_url` when a redirect led there from another URL.
    NotFound { final_url: Option<String> },
    /// A non-success status that was not retried or still failed after the last attempt.
    Status {
        status: u16,
        attempts: u32,
        final_url: Option<String>,
    },
    /// Connection error, stall, deadline, too slow, truncated body… after the last attempt.
    Transport {
        message: String,
        attempts: u32,
    },
    TooLarge {
        limit: u64,
    },
    /// The client could not be built (TLS setup).
    Client(String),
}

fn tries(n: u32) -> String {
    if n == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{n} attempts")
    }
}

fn redirected(final_url: &Option<String>) -> String {
    match final_url {
        Some(u) => format!(" (redirected to {})", message::redact_url(u)),
        None => String::new(),
    }
}

impl HttpFailure {
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            HttpFailure::NotFound { .. } => Some(404),
            HttpFailure::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            HttpFailure::NotFound { final_url } => format!("404 Not Found{}", redirected(final_url)),
            HttpFailure::Status { status, attempts, final_url } => {
                let reason = StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                let hint = if *status == 401 || *status == 403 {
                    " (the registry requires authentication, which velaris does not support)"
                } else {
                    ""
                };
                format!("status {status} {reason}{hint}{} after {}", redirected(final_url), tries(*attempts))
            }
            HttpFailure::Transport { message, attempts } => {
                format!("{message} (after {})", tries(*attempts))
            }
            HttpFailure::TooLarge { limit } => format!("response is larger than {limit} bytes"),
            HttpFailure::Client(m) => format!("cannot build the HTTP client: {m}"),
        }
    }
}

enum Attempt {
    Done(Vec<u8>),
    Retry {
        failure: HttpFailure,
        after: Option<Duration>,
    },
    Fatal(HttpFailure),
}

/// Installs rustls' ring provider once per process, before any client is built.
pub(crate) fn install_crypto_provider() {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Err means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub(crate) struct Net {
    cfg: NetConfig,
    client: OnceLock<Result<Client, String>>,
    budget: Budget,
}

impl Net {
    pub(crate) fn new(cfg: NetConfig) -> Self {
        let budget = Budget::new(cfg.in_flight);
        Net {
            cfg,
            client: OnceLock::new(),
            budget,
        }
    }

    /// The most response-body bytes held at once so far.
    pub(crate) fn peak_in_flight(&self) -> u64 {
        self.budget.peak()
    }

    /// The client, built on first use (never in offline mode).
    fn client(&self) -> Result<&Client, HttpFailure> {
        self.client
            .get_or_init(|| {
                install_crypto_provider();
                // The blocking client's timeout applies to the head and to each read: it is
                // the stall limit. The total time is checked while reading (`attempt`).
                let mut builder = Client::builder()
                    .user_agent(USER_AGENT)
                    .connect_timeout(self.cfg.connect_timeout)
                    .timeout(self.cfg.stall_timeout.min(self.cfg.request_timeout));
                if !self.cfg.use_env_proxy {
                    builder = builder.no_proxy();
                }
                builder.build().map_err(|e| error_chain(&e))
            })
            .as_ref()
            .map_err(|m| HttpFailure::Client(m.clone()))
    }

    /// GETs `url`, retrying 5xx, 429, connection errors, stalls, timeouts, too slow and broken
    /// bodies with exponential backoff and jitter, up to `max_attempts` requests in total.
    pub(crate) fn get(&self, url: &str, cap: u64) -> Result<Vec<u8>, HttpFailure> {
        let client = self.client()?;
        let max = self.cfg.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            match self.attempt(client, url, cap, attempt) {
                Attempt::Done(bytes) => return Ok(bytes),
                Attempt::Fatal(failure) => return Err(failure),
                Attempt::Retry { failure, after } => {
                    if attempt >= max {
                        return Err(failure);
                    }
                    let backoff = backoff(self.cfg.retry_base, attempt);
                    let wait = after.map_or(backoff, |a| a.min(RETRY_AFTER_CAP).max(backoff));
                    thread::sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    fn attempt(&self, client: &Client, url: &str, cap: u64, attempts: u32) -> Attempt {
        let start = Instant::now();
        let transport = |message: String| Attempt::Retry {
            failure: HttpFailure::Transport { message, attempts },
            after: None,
        };
        let mut resp = match client.get(url).send() {
            Ok(r) => r,
            Err(e) if e.is_builder() || e.is_redirect() => {
                return Attempt::Fatal(HttpFailure::Transport {
                    message: error_chain(&e.without_url()),
                    attempts,
                });
            }
            Err(e) if e.is_timeout() => {
                return transport(format!(
                    "no response within {} (stalled)",
                    secs(self.cfg.stall_timeout.min(self.cfg.request_timeout))
                ));
            }
            Err(e) => return transport(error_chain(&e.without_url())),
        };
        let status = resp.status();
        let final_url = (resp.url().as_str() != url).then(|| resp.url().to_string());
        if status == StatusCode::NOT_FOUND {
            return Attempt::Fatal(HttpFailure::NotFound { final_url });
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            let after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Attempt::Retry {
                failure: HttpFailure::Status {
                    status: status.as_u16(),
                    attempts,
                    final_url,
                },
                after,
            };
        }
        if !status.is_success() {
            return Attempt::Fatal(HttpFailure::Status {
                status: status.as_u16(),
                attempts,
                final_url,
            });
        }
        let declared = resp.content_length();
        if declared.is_some_and(|len| len > cap) {
            return Attempt::Fatal(HttpFailure::TooLarge { limit: cap });
        }

        // The body, chunk by chunk: counted against the cap and the shared budget, timed
        // against the deadline and the minimum throughput. Time spent waiting for the budget
        // is not the server's and does not count.
        let mut lease = self.budget.lease();
        let mut waited = Duration::ZERO;
        let initial = declared.unwrap_or(0).min(cap).min(CHUNK as u64 * 16);
        let mut body: Vec<u8> = Vec::with_capacity(usize::try_from(initial).unwrap_or(0));
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = match resp.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => {
                    return transport(format!(
                        "the server sent nothing for {} after {} bytes (stalled)",
                        secs(self.cfg.stall_timeout.min(self.cfg.request_timeout)),
                        body.len()
                    ));
                }
                Err(e) => {
                    return transport(format!("reading the response body failed: {}", error_chain(&e)));
                }
            };
            if (body.len() + n) as u64 > cap {
                return Attempt::Fatal(HttpFailure::TooLarge { limit: cap });
            }
            waited += lease.grow(n as u64);
            body.extend_from_slice(&chunk[..n]);
            let elapsed = start.elapsed().saturating_sub(waited);
            if elapsed > self.cfg.request_timeout {
                return transport(format!(
                    "the download did not finish within {} ({} bytes received{})",
                    secs(self.cfg.request_timeout),
                    body.len(),
                    declared.map(|d| format!(" of {d}")).unwrap_or_default()
                ));
            }
            if elapsed > self.cfg.throughput_grace {
                let rate = body.len() as f64 / elapsed.as_secs_f64();
                if rate < self.cfg.min_throughput as f64 {
                    return transport(format!(
                        "too slow: {} bytes in {}, below the minimum of {} bytes/s",
                        body.len(),
                        secs(elapsed),
                        self.cfg.min_throughput
                    ));
                }
            }
        }
        if let Some(len) = declared {
            if body.len() as u64 != len {
                return transport(format!("the body ended after {} of {len} bytes", body.len()));
            }
        }
        Attempt::Done(body)
    }
}

/// Whether a read failed because reqwest's per-read timeout (the stall limit) ran out.
fn is_timeout(e: &std::io::Error) -> bool {
    if e.kind() == ErrorKind::TimedOut {
        return true;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|r| r as _);
    while let Some(err) = cur {
        if err.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_timeout)
            || err.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == ErrorKind::TimedOut)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A duration for messages: `1.5 s`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// `base * 2^(attempt-1)` plus up to 25 % random jitter.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << (attempt - 1).min(16));
    let jitter_range = exp.as_nanos() / 4;
    let jitter = if jitter_range == 0 {
        0
    } else {
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        u128::from(random) % jitter_range
    };
    exp + Duration::from_nanos(u64::try_from(jitter).unwrap_or(u64::MAX))
}

/// An error with its `source()` chain, each cause once (reqwest's Display alone is terse).
fn error_chain(e: &dyn std::error::Error) -> String {
    message::redact(&message::chain(e)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let base = Duration::from_millis(250);
        for (attempt, ms) in [(1, 250u64), (2, 500), (3, 1000), (4, 2000)] {
            let d = backoff(base, attempt);
            assert!(d >= Duration::from_millis(ms), "{attempt}: {d:?}");
            assert!(d <= Duration::from_millis(ms + ms / 4), "{attempt}: {d:?}");
        }
        assert_eq!(backoff(Duration::ZERO, 3), Duration::ZERO);
    }

    #[test]
    fn user_agent_names_the_project() {
        assert!(USER_AGENT.starts_with("velaris/"));
        assert!(USER_AGENT.ends_with("(+https://github.com/velaris/ratchet)"));
    }
}
