//! The event that started the run, read from its webhook payload (`GITHUB_EVENT_PATH`).
//!
//! Only the fields the action uses are read, each optional, so a payload that GitHub extends or
//! trims does not break the run: which commits to compare, which pull request to comment on,
//! and whether the pull request comes from a fork or from Dependabot (whose tokens are
//! read-only).

use serde::Deserialize;

/// The events the action knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    PullRequest,
    PullRequestTarget,
    MergeGroup,
    Push,
    WorkflowDispatch,
    /// The second half of the fork-safe recipe: post comments another run rendered.
    WorkflowRun,
    Other(String),
}

impl EventKind {
    pub fn from_name(name: &str) -> EventKind {
        match name {
            "pull_request" => EventKind::PullRequest,
            "pull_request_target" => EventKind::PullRequestTarget,
            "merge_group" => EventKind::MergeGroup,
            "push" => EventKind::Push,
            "workflow_dispatch" => EventKind::WorkflowDispatch,
            "workflow_run" => EventKind::WorkflowRun,
            other => EventKind::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            EventKind::PullRequest => "pull_request",
            EventKind::PullRequestTarget => "pull_request_target",
            EventKind::MergeGroup => "merge_group",
            EventKind::Push => "push",
            EventKind::WorkflowDispatch => "workflow_dispatch",
            EventKind::WorkflowRun => "workflow_run",
            EventKind::Other(s) => s,
        }
    }
}

/// A pull request, as the payload describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// `OWNER/NAME` of the head repository; `None` when it was deleted.
    pub head_repo: Option<String>,
    /// `OWNER/NAME` of the base repository.
    pub base_repo: Option<String>,
    /// Who opened it.
    pub author: Option<String>,
}

impl PullRequest {
    /// The head is in another repository: the workflow's token is read-only.
    pub fn from_fork(&self) -> bool {
        match (&self.head_repo, &self.base_repo) {
            (Some(h), Some(b)) => !h.eq_ignore_ascii_case(b),
            // A deleted head repository is a fork that was removed.
            (None, Some(_)) => true,
            _ => false,
        }
    }
}

/// The `workflow_run` that finished, for the trusted side of the fork recipe. Every field is
/// GitHub's, not the finished run's (which may have run a fork's workflow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    pub head_sha: Option<String>,
    /// The event that started that run (`pull_request`).
    pub event: Option<String>,
    /// The branch the run was for, in the head repository.
    pub head_branch: Option<String>,
    /// `OWNER/NAME` of the repository the head is in (a fork's).
    pub head_repo: Option<String>,
    /// The pull requests GitHub links the run to (empty for a fork's).
    pub pull_requests: Vec<u64>,
}

/// What the payload says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub pull_request: Option<PullRequest>,
    /// The commit to compare with: the pull request's or merge group's base, the push's
    /// `before`. `None` for a first push (GitHub sends an all-zero `before`) and for events
    /// without one.
    pub base: Option<String>,
    /// The commit under review as the payload names it (`after`, `head_sha`).
    pub head: Option<String>,
    /// A push that created the branch: there is nothing before it.
    pub first_push: bool,
    /// A push that deleted the branch: there is nothing to check.
    pub deleted: bool,
    pub workflow_run: Option<WorkflowRun>,
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("failed to read the event payload {path}: {message}")]
    Read { path: String, message: String },
    #[error("the event payload {path} is not valid JSON: {source}")]
    Json { path: String, source: serde_json::Error },
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload {
    pull_request: Option<RawPull>,
    merge_group: Option<RawMergeGroup>,
    before: Option<String>,
    after: Option<String>,
    created: Option<bool>,
    deleted: Option<bool>,
    workflow_run: Option<RawWorkflowRun>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPull {
    number: Option<u64>,
    base: Option<RawRef>,
    head: Option<RawRef>,
    user: Option<RawUser>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRef {
    sha: Option<String>,
    repo: Option<RawRepo>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRepo {
    full_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawUser {
    login: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMergeGroup {
    base_sha: Option<String>,
    head_sha: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawWorkflowRun {
    head_sha: Option<String>,
    event: Option<String>,
    head_branch: Option<String>,
    head_repository: Option<RawRepo>,
    pull_requests: Option<Vec<RawNumber>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNumber {
    number: Option<u64>,
}

/// Read the payload of event `name` from `path`. Without a payload (a local run), the event has
/// only its kind.
pub fn read(name: &str, path: Option<&std::path::Path>) -> Result<Event, EventError> {
    let text = match path {
        Some(p) => crate::fsio::read_text(p, crate::fsio::TEXT_CAP, "an event payload").map_err(|e| EventError::Read { path: p.display().to_string(), message: crate::message::chain(&e) })?,
        None => "{}".to_string(),
    };
    parse(name, &text).map_err(|source| EventError::Json {
        path: path.map(|p| p.display().to_string()).unwrap_or_default(),
        source,
    })
}

/// Parse the payload text of event `name`.
pub fn parse(name: &str, text: &str) -> Result<Event, serde_json::Error> {
    let kind = EventKind::from_name(name);
    let p: Payload = serde_json::from_str(text)?;
    let pull_request = match (&kind, p.pull_request) {
        (EventKind::PullRequest | EventKind::PullRequestTarget, Some(pr)) => pr.number.map(|number| PullRequest {
            number,
            base_sha: pr.base.as_ref().and_then(|b| b.sha.clone()),
            head_sha: pr.head.as_ref().and_then(|h| h.sha.clone()),
            head_repo: pr.head.as_ref().and_then(|h| h.repo.as_ref()).and_then(|r| r.full_name.clone()),
            base_repo: pr.base.as_ref().and_then(|b| b.repo.as_ref()).and_then(|r| r.full_name.clone()),
            author: pr.user.and_then(|u| u.login),
        }),
        _ => None,
    };
    let mut event = Event {
        kind: kind.clone(),
        base: None,
        head: None,
        first_push: false,
        deleted: false,
        workflow_run: None,
        pull_request,
    };
    match kind {
        EventKind::PullRequest | EventKind::PullRequestTarget => {
            if let Some(pr) = &event.pull_request {
                event.base = pr.base_sha.clone();
                event.head = pr.head_sha.clone();
            }
        }
        EventKind::MergeGroup => {
            if let Some(mg) = p.merge_group {
                event.base = mg.base_sha;
                event.head = mg.head_sha;
            }
        }
        EventKind::Push => {
            let before = p.before.filter(|b| !b.is_empty());
            event.first_push = p.created.unwrap_or(false) || before.as_deref().is_some_and(crate::git::is_null_id);
            event.deleted = p.deleted.unwrap_or(false) || p.after.as_deref().is_some_and(crate::git::is_null_id);
            event.base = before.filter(|b| !crate::git::is_null_id(b));
            event.head = p.after.filter(|a| !crate::git::is_null_id(a));
        }
        EventKind::WorkflowRun => {
            event.workflow_run = p.workflow_run.map(|w| WorkflowRun {
                head_sha: w.head_sha,
                event: w.event,
                head_branch: w.head_branch,
                head_repo: w.head_repository.and_then(|r| r.full_name),
                pull_requests: w.pull_requests.unwrap_or_default().into_iter().filter_map(|n| n.number).collect(),
            });
        }
        EventKind::WorkflowDispatch | EventKind::Other(_) => {}
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_from_a_fork() {
        let e = parse(
            "pull_request",
            r#"{"number": 7, "pull_request": {"number": 7, "user": {"login": "dependabot[bot]"},
                "base": {"sha": "aaa", "repo": {"full_name": "o/r"}},
                "head": {"sha": "bbb", "repo": {"full_name": "someone/r"}}}}"#,
        )
        .unwrap();
        let pr = e.pull_request.unwrap();
        assert_eq!((pr.number, e.base.as_deref(), e.head.as_deref()), (7, Some("aaa"), Some("bbb")));
        assert!(pr.from_fork());
        assert_eq!(pr.author.as_deref(), Some("dependabot[bot]"));
    }

    #[test]
    fn first_push_and_deletion() {
        let zeros = "0".repeat(40);
        let first = parse("push", &format!(r#"{{"before": "{zeros}", "after": "{}", "created": true}}"#, "a".repeat(40))).unwrap();
        assert!(first.first_push && first.base.is_none() && first.head.is_some());
        let gone = parse("push", &format!(r#"{{"before": "{}", "after": "{zeros}", "deleted": true}}"#, "a".repeat(40))).unwrap();
        assert!(gone.deleted && gone.head.is_none());
    }

    #[test]
    fn workflow_run_names_the_head_and_how_to_find_its_pull_request() {
        let e = parse(
            "workflow_run",
            r#"{"workflow_run": {"event": "pull_request", "head_sha": "abc", "head_branch": "feature",
                "head_repository": {"full_name": "mallory/r"}, "pull_requests": [{"number": 7}, {"x": 1}]}}"#,
        )
        .unwrap();
        let w = e.workflow_run.unwrap();
        assert_eq!((w.head_sha.as_deref(), w.event.as_deref(), w.head_branch.as_deref()), (Some("abc"), Some("pull_request"), Some("feature")));
        assert_eq!((w.head_repo.as_deref(), w.pull_requests), (Some("mallory/r"), vec![7]));
        assert!(e.pull_request.is_none(), "a workflow_run payload names no pull request to trust");
    }

    #[test]
    fn merge_group_and_unknown_fields() {
        let e = parse("merge_group", r#"{"merge_group": {"base_sha": "b", "head_sha": "h", "extra": [1]}, "x": null}"#).unwrap();
        assert_eq!((e.base.as_deref(), e.head.as_deref()), (Some("b"), Some("h")));
        assert!(e.pull_request.is_none());
        let d = parse("workflow_dispatch", "{}").unwrap();
        assert_eq!(d.kind, EventKind::WorkflowDispatch);
    }
}
