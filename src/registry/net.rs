//! The HTTP side: one lazily built blocking client, retries with backoff, capped bodies.

use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::sync::{Once, OnceLock};
use std::thread;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Client;

/// Upper bound for a server's `Retry-After`.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

pub(crate) const USER_AGENT: &str = concat!(
    "velaris/",
    env!("CARGO_PKG_VERSION"),
    " (+https://github.com/velaris/ratchet)"
);

#[derive(Clone, Debug)]
pub(crate) struct NetConfig {
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) retry_base: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) use_env_proxy: bool,
}

/// Why a GET failed for good.
#[derive(Debug)]
pub(crate) enum HttpFailure {
    NotFound,
    /// A non-success status that was not retried or still failed after the last attempt.
    Status {
        status: u16,
        attempts: u32,
    },
    /// Connection error, timeout, truncated body… after the last attempt.
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

impl HttpFailure {
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            HttpFailure::NotFound => Some(404),
            HttpFailure::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn message(&self) -> String {
        fn tries(n: u32) -> String {
            if n == 1 {
                "1 attempt".to_owned()
            } else {
                format!("{n} attempts")
            }
        }
        match self {
            HttpFailure::NotFound => "404 Not Found".to_owned(),
            HttpFailure::Status { status, attempts } => {
                let reason = StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                let hint = if *status == 401 || *status == 403 {
                    " (the registry requires authentication, which velaris does not support)"
                } else {
                    ""
                };
                format!("status {status} {reason}{hint} after {}", tries(*attempts))
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

pub(crate) struct Net {
    cfg: NetConfig,
    client: OnceLock<Result<Client, String>>,
}

impl Net {
    pub(crate) fn new(cfg: NetConfig) -> Self {
        Net {
            cfg,
            client: OnceLock::new(),
        }
    }

    /// The client, built on first use (never in offline mode).
    fn client(&self) -> Result<&Client, HttpFailure> {
        self.client
            .get_or_init(|| {
                static PROVIDER: Once = Once::new();
                PROVIDER.call_once(|| {
                    // Err means another provider is already installed, which is fine.
                    let _ = rustls::crypto::ring::default_provider().install_default();
                });
                let mut builder = Client::builder()
                    .user_agent(USER_AGENT)
                    .connect_timeout(self.cfg.connect_timeout)
                    .timeout(self.cfg.request_timeout);
                if !self.cfg.use_env_proxy {
                    builder = builder.no_proxy();
                }
                builder.build().map_err(|e| error_chain(&e))
            })
            .as_ref()
            .map_err(|m| HttpFailure::Client(m.clone()))
    }

    /// GETs `url`, retrying 5xx, 429, connection errors, timeouts and broken bodies with
    /// exponential backoff and jitter, up to `max_attempts` requests in total.
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
        let resp = match client.get(url).send() {
            Ok(r) => r,
            Err(e) if e.is_builder() || e.is_redirect() => {
                return Attempt::Fatal(HttpFailure::Transport {
                    message: error_chain(&e),
                    attempts,
                });
            }
            Err(e) => {
                return Attempt::Retry {
                    failure: HttpFailure::Transport {
                        message: error_chain(&e),
                        attempts,
                    },
                    after: None,
                };
            }
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Attempt::Fatal(HttpFailure::NotFound);
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
                },
                after,
            };
        }
        if !status.is_success() {
            return Attempt::Fatal(HttpFailure::Status {
                status: status.as_u16(),
                attempts,
            });
        }
        if resp.content_length().is_some_and(|len| len > cap) {
            return Attempt::Fatal(HttpFailure::TooLarge { limit: cap });
        }
        let mut body = Vec::new();
        match resp.take(cap + 1).read_to_end(&mut body) {
            Ok(_) if body.len() as u64 > cap => {
                Attempt::Fatal(HttpFailure::TooLarge { limit: cap })
            }
            Ok(_) => Attempt::Done(body),
            Err(e) => Attempt::Retry {
                failure: HttpFailure::Transport {
                    message: format!("reading the response body failed: {}", error_chain(&e)),
                    attempts,
                },
                after: None,
            },
        }
    }
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

/// An error with its `source()` chain, `: `-separated (reqwest's Display alone is terse).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
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
