//! What the runner tells a step through its environment: `GITHUB_*` variables, and the token.
//!
//! This module owns reading them and nothing else. The token is read from `GITHUB_TOKEN` only
//! (never a flag, never a file) into a [`Token`] that has no `Display` and whose `Debug` hides it.

use std::fmt;
use std::path::PathBuf;

/// The token, kept out of every rendering: it is only ever put in an `Authorization` header by
/// [`super::api`].
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn new(s: String) -> Token {
        Token(s)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("GITHUB_REPOSITORY {0:?} is not OWNER/NAME")]
    Repository(String),
    #[error("{name} is not set: `velaris action` runs inside a GitHub Actions job (or set it yourself)")]
    Missing { name: &'static str },
}

/// The runner's environment, as far as the action uses it.
#[derive(Debug, Clone)]
pub struct ActionEnv {
    /// `GITHUB_EVENT_NAME`: `pull_request`, `push`, ...
    pub event_name: String,
    /// `GITHUB_EVENT_PATH`: the webhook payload.
    pub event_path: Option<PathBuf>,
    /// `GITHUB_REPOSITORY`: the owner.
    pub owner: String,
    /// `GITHUB_REPOSITORY`: the name.
    pub repo: String,
    /// `GITHUB_API_URL`, default `https://api.github.com`.
    pub api_url: String,
    /// `GITHUB_GRAPHQL_URL`, default `https://api.github.com/graphql`.
    pub graphql_url: String,
    /// `GITHUB_SERVER_URL`, default `https://github.com`.
    pub server_url: String,
    /// `GITHUB_RUN_ID`.
    pub run_id: Option<String>,
    /// `GITHUB_RUN_ATTEMPT`.
    pub run_attempt: Option<String>,
    /// `GITHUB_WORKSPACE`: the checkout.
    pub workspace: Option<PathBuf>,
    /// `GITHUB_STEP_SUMMARY`: the job summary file of this step.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_OUTPUT`: the step's outputs file.
    pub output: Option<PathBuf>,
    /// `GITHUB_ACTOR`: who triggered the run.
    pub actor: Option<String>,
    /// `RUNNER_TEMP`.
    pub runner_temp: Option<PathBuf>,
    /// `GITHUB_TOKEN`.
    pub token: Option<Token>,
}

fn valid_repo_part(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

impl ActionEnv {
    /// Read from `get` (the process environment in [`ActionEnv::from_process`]). Empty values
    /// count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ActionEnv, EnvError> {
        let get = |k: &str| get(k).filter(|v| !v.is_empty());
        let repository = get("GITHUB_REPOSITORY").ok_or(EnvError::Missing { name: "GITHUB_REPOSITORY" })?;
        let (owner, repo) = repository
            .split_once('/')
            .filter(|(o, r)| valid_repo_part(o) && valid_repo_part(r))
            .ok_or_else(|| EnvError::Repository(repository.clone()))?;
        let trim = |s: String| s.trim_end_matches('/').to_string();
        Ok(ActionEnv {
            event_name: get("GITHUB_EVENT_NAME").ok_or(EnvError::Missing { name: "GITHUB_EVENT_NAME" })?,
            event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            owner: owner.to_string(),
            repo: repo.to_string(),
            api_url: trim(get("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into())),
            graphql_url: trim(get("GITHUB_GRAPHQL_URL").unwrap_or_else(|| "https://api.github.com/graphql".into())),
            server_url: trim(get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into())),
            run_id: get("GITHUB_RUN_ID"),
            run_attempt: get("GITHUB_RUN_ATTEMPT"),
            workspace: get("GITHUB_WORKSPACE").map(PathBuf::from),
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            actor: get("GITHUB_ACTOR"),
            runner_temp: get("RUNNER_TEMP").map(PathBuf::from),
            token: get("GITHUB_TOKEN").map(Token),
        })
    }

    pub fn from_process() -> Result<ActionEnv, EnvError> {
        ActionEnv::from_lookup(|k| std::env::var(k).ok())
    }

    /// `OWNER/NAME`.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// The web page of this run (its summary), when the run is known.
    pub fn run_url(&self) -> Option<String> {
        let id = self.run_id.as_deref()?;
        if !id.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut url = format!("{}/{}/{}/actions/runs/{id}", self.server_url, self.owner, self.repo);
        if let Some(a) = self.run_attempt.as_deref().filter(|a| a.bytes().all(|b| b.is_ascii_digit()) && *a != "1") {
            url.push_str(&format!("/attempts/{a}"));
        }
        Some(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<ActionEnv, EnvError> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ActionEnv::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_run_url() {
        let e = env(&[("GITHUB_REPOSITORY", "velaris/ratchet"), ("GITHUB_EVENT_NAME", "push"), ("GITHUB_RUN_ID", "42"), ("GITHUB_TOKEN", "ghs_abc")])
            .unwrap();
        assert_eq!(e.api_url, "https://api.github.com");
        assert_eq!(e.graphql_url, "https://api.github.com/graphql");
        assert_eq!(e.run_url().as_deref(), Some("https://github.com/velaris/ratchet/actions/runs/42"));
        assert!(!format!("{e:?}").contains("ghs_abc"), "the token never shows in Debug");
    }

    #[test]
    fn a_bad_repository_is_refused() {
        assert!(matches!(env(&[("GITHUB_REPOSITORY", "x/../y"), ("GITHUB_EVENT_NAME", "push")]), Err(EnvError::Repository(_))));
        assert!(matches!(env(&[("GITHUB_REPOSITORY", "x/y")]), Err(EnvError::Missing { .. })));
    }
}
