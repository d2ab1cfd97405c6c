//! Which commits a run compares: the head is always the checked-out commit (the surface is read
//! from the work tree); the base comes from `--base`, else from the event.
//!
//! - `pull_request`: the checkout is usually the merge commit GitHub prepared (`refs/pull/N/merge`),
//!   whose first parent is the base; comparing with that parent shows exactly what the pull
//!   request changes. When the checkout is the pull request's head itself, the base is the merge
//!   base of the payload's base and the head (what the pull request's diff on GitHub shows).
//! - `pull_request_target`: the checkout must contain the pull request (its head or merge); the
//!   default checkout of that event is the base branch, which would review nothing.
//! - `merge_group`: `base_sha`; `push`: `before` (none for the first push of a branch).
//! - A base commit missing from a shallow checkout is fetched from `origin` by its id; if that
//!   fails, the error names the `fetch-depth` that fixes it.

use std::io::Write;

use super::event::{Event, EventKind};
use super::ActionError;
use crate::git::{Repo, is_object_id};

/// The commits of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The commit to compare with; `None` when there is none (a first push, a manual run).
    pub base: Option<String>,
    /// The checked-out commit.
    pub head: String,
    /// What a reader should know about the comparison.
    pub note: Option<String>,
}

const FETCH_DEPTH_FIX: &str = "set `fetch-depth: 0` on actions/checkout";

/// Resolve the range of a run. `base` and `head` are `--base` and `--head`.
pub fn resolve(repo: &Repo, event: &Event, base: Option<&str>, head: Option<&str>, log: &mut dyn Write) -> Result<Range, ActionError> {
    let checkout = repo.resolve("HEAD")?;
    if let Some(h) = head {
        let given = repo.resolve(h)?;
        if given != checkout {
            return Err(ActionError::Usage(format!(
                "--head {h} is {given}, but the checkout is {checkout}: velaris reads the checked-out tree, so check out the commit to review (actions/checkout `ref:`)"
            )));
        }
    }
    let mut note = None;
    let mut want_merge_base = false;
    let mut base_rev: Option<String> = base.map(str::to_string);
    if base_rev.is_none() {
        base_rev = event.base.clone();
        if let (EventKind::PullRequest | EventKind::PullRequestTarget, Some(pr)) = (&event.kind, &event.pull_request) {
            let parents = repo.parents(&checkout)?;
            let pr_head = pr.head_sha.as_deref();
            if pr_head == Some(checkout.as_str()) {
                want_merge_base = true;
            } else if parents.len() == 2 && pr_head == Some(parents[1].as_str()) {
                // The merge commit: its first parent is the base it was merged onto.
                base_rev = Some(parents[0].clone());
            } else if event.kind == EventKind::PullRequestTarget {
                return Err(ActionError::Usage(format!(
                    "pull_request_target checks out the base branch ({checkout}), not pull request #{}: there is nothing of the pull request to review. \
                     Run velaris on `pull_request`, and for fork pull requests post the comment from a `workflow_run` workflow (docs/action.md, \"Fork pull requests\")",
                    pr.number
                )));
            } else {
                note = Some(format!(
                    "The checkout ({}) is neither the pull request's head nor its merge commit; what is reviewed is the checkout.",
                    &checkout[..12.min(checkout.len())]
                ));
            }
        }
        if event.kind == EventKind::Push && event.first_push {
            note = Some("The first push of a branch has nothing before it: the ratchet is checked, the baseline and the dependencies are not compared.".into());
        }
    }
    let Some(rev) = base_rev else {
        return Ok(Range { base: None, head: checkout, note });
    };
    if is_object_id(&rev) && !repo.has_commit(&rev)? {
        let shallow = repo.is_shallow()?;
        let _ = writeln!(log, "velaris: the base commit {rev} is not in the checkout{}; fetching it from origin", if shallow { " (a shallow clone)" } else { "" });
        if let Err(e) = repo.fetch_commit("origin", &rev) {
            return Err(ActionError::Usage(format!(
                "the base commit {rev} is not in the checkout and could not be fetched from origin ({e}): {FETCH_DEPTH_FIX}"
            )));
        }
    }
    let mut base_commit = repo.resolve(&rev).map_err(|e| {
        ActionError::Usage(format!("the base {rev} cannot be read ({e}): {FETCH_DEPTH_FIX}"))
    })?;
    if want_merge_base {
        match repo.merge_base(&base_commit, &checkout)? {
            Some(mb) => base_commit = mb,
            None => {
                note = Some(format!(
                    "No merge base of the base and the head is in this shallow checkout, so the head is compared with the base branch as it is now; {FETCH_DEPTH_FIX} for the pull request's own changes only."
                ))
            }
        }
    }
    Ok(Range { base: Some(base_commit), head: checkout, note })
}
