//! The fork-safe recipe's second half: comments rendered by a `pull_request` run (whose token is
//! read-only on a fork) are posted by a `workflow_run` run (whose token can write).
//!
//! The `pull_request` run writes `comments.json` (schema `velaris/comments/v1`: the pull
//! request's number, the head commit, each workspace's comment body) and uploads it as an
//! artifact. The `workflow_run` run downloads it and calls `velaris action --comments-from`.
//! The file comes from a run that executed the pull request's workflow, so it is not trusted:
//! it is posted only to the pull request whose head is the commit the finished run ran on (asked
//! of the API, not of the file), each body must open with its workspace's marker and fit in a
//! comment, and the usual author check protects everyone else's comments.

use std::io::Write;

use serde::{Deserialize, Serialize};

use super::api::{ApiConfig, Client};
use super::budget::{COMMENT_LIMIT, chars};
use super::comment::{self, Posted};
use super::event::Event;
use super::{ActionError, Config};

/// The `schema` of the comments file.
pub const SCHEMA: &str = "velaris/comments/v1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CommentsFile {
    pub schema: String,
    pub pull_request: u64,
    pub head_sha: String,
    pub comments: Vec<WorkspaceComment>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WorkspaceComment {
    pub workspace: String,
    pub body: String,
}

fn refuse(why: String) -> ActionError {
    ActionError::Usage(format!("not posting the comments: {why}"))
}

/// Post the comments of `cfg.comments_from` for a `workflow_run` event. Returns the URLs.
pub fn post(cfg: &Config, event: &Event, log: &mut dyn Write) -> Result<Vec<String>, ActionError> {
    let path = cfg.comments_from.as_ref().ok_or_else(|| {
        ActionError::Usage(
            "a workflow_run event posts the comments another run rendered: pass --comments-from with that run's comments.json (the `comments-from` input)".into(),
        )
    })?;
    let text = std::fs::read_to_string(path).map_err(|source| ActionError::Io { what: format!("read {}", path.display()), source })?;
    let file: CommentsFile = serde_json::from_str(&text).map_err(|e| refuse(format!("{} is not a comments file: {e}", path.display())))?;
    if file.schema != SCHEMA {
        return Err(refuse(format!("{} has schema {:?}, expected {SCHEMA:?}", path.display(), file.schema)));
    }
    let run_head = event
        .workflow_run
        .as_ref()
        .and_then(|w| w.head_sha.clone())
        .ok_or_else(|| refuse("the workflow_run payload names no head commit".into()))?;
    if file.head_sha != run_head {
        return Err(refuse(format!("they were rendered for commit {}, the finished run is for {run_head}", crate::report::escape::line(&file.head_sha))));
    }
    for c in &file.comments {
        let m = comment::marker(&c.workspace);
        if !c.body.starts_with(&format!("{m}\n")) {
            return Err(refuse(format!("the comment for workspace {:?} does not open with its marker", crate::report::escape::line(&c.workspace))));
        }
        if chars(&c.body) > COMMENT_LIMIT {
            return Err(refuse(format!("the comment for workspace {:?} is longer than a comment can be", crate::report::escape::line(&c.workspace))));
        }
    }
    let token = cfg.env.token.clone().ok_or_else(|| refuse("GITHUB_TOKEN is not set".into()))?;
    let client = Client::new(ApiConfig {
        api_url: cfg.env.api_url.clone(),
        graphql_url: cfg.env.graphql_url.clone(),
        owner: cfg.env.owner.clone(),
        repo: cfg.env.repo.clone(),
        token,
        policy: cfg.policy.clone(),
    })?;
    let pr_head = client.pull_request_head(file.pull_request)?;
    if pr_head != run_head {
        return Err(refuse(format!(
            "pull request #{}'s head is {pr_head}, not {run_head}, the commit the finished run ran on",
            file.pull_request
        )));
    }
    let me = super::identity(&client, cfg.comment_author.as_deref(), log);
    let mut urls = Vec::new();
    for c in &file.comments {
        let m = comment::marker(&c.workspace);
        let short = format!("{m}\n### velaris ratchet\n\nThe report did not fit in a comment: see the pull request's checks.\n");
        let up = comment::upsert(&client, file.pull_request, &m, &me, &c.body, &short)?;
        let _ = writeln!(log, "velaris: comment {} on #{}", up.posted.verb(), file.pull_request);
        if let Posted::Created { url: Some(u), .. } | Posted::Updated { url: Some(u), .. } | Posted::Unchanged { url: Some(u), .. } = &up.posted {
            urls.push(u.clone());
        }
    }
    Ok(urls)
}
