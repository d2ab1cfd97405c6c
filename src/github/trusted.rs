//! The fork recipe's trusted side: a `workflow_run` job, with a token that can write, reviews
//! the pull request's head itself, as data, and reports it.
//!
//! A pull request from a fork runs its `pull_request` workflow with a read-only token, and runs
//! the workflow as the fork wrote it: everything that run produces (its exit code, its
//! artifacts, any `comments.json`) is the fork's to forge. So this side takes nothing from it.
//! When that run completes, GitHub starts the `workflow_run` workflow of the base branch, whose
//! payload names the head commit; this side:
//!
//! 1. finds the open pull request whose head is that commit, asking the API (never a file);
//! 2. reads the head commit's objects into the checkout of the base branch (fetched from
//!    `origin` by id when missing) and writes each workspace from them into a temporary
//!    directory: nothing is checked out, and the checkout must not be the head;
//! 3. reviews it as the `pull_request` side would, confined ([`crate::trust::Confinement`]):
//!    cargo configuration is read from the base's checkout, never from the head's
//!    `.cargo/config.toml`; the rules overlay is the base's; packages are fetched only from
//!    the sources the base's lockfiles use; path packages outside the head's tree are refused;
//! 4. renders the comment itself (every value from the head escaped, as for any review) and
//!    posts it, and sets the commit status `velaris ratchet` on the head: the verdict a branch
//!    protection rule can require, which no workflow of the fork can set.
//!
//! velaris never builds or runs what it reads, so reading the head is safe when velaris is the
//! only thing that reads it; the head is never written where a later step of the job could
//! run it (the work tree stays the base's).

use std::io::Write;

use super::annotations::{Annotations, Level};
use super::api::{ApiConfig, Client, PullInfo, StatusState};
use super::event::{Event, WorkflowRun};
use super::range::Range;
use super::review::{self, WorkspaceReport};
use super::{ActionError, Config, Outcome, StatusTarget};
use crate::gate::Condition;
use crate::git::{Repo, is_object_id};
use crate::text::escape;
use crate::trust::Confinement;

/// The commit status context the verdict is reported under.
pub const STATUS_CONTEXT: &str = "velaris ratchet";

fn usage(s: impl Into<String>) -> ActionError {
    ActionError::Usage(s.into())
}

/// The status context: one per set of workspaces, so that matrix jobs over several workspaces
/// report side by side.
fn context(cfg: &Config) -> String {
    if cfg.workspaces.is_empty() {
        STATUS_CONTEXT.to_string()
    } else {
        let mut w: Vec<&str> = cfg.workspaces.iter().map(|s| s.trim()).collect();
        w.sort();
        format!("{STATUS_CONTEXT} ({})", w.join(", "))
    }
}

/// The open pull request of this repository whose head is `head`, asked of the API: the
/// pull requests the payload links the run to, else those whose head is the run's branch.
fn find_pull(client: &Client, cfg: &Config, run: &WorkflowRun, head: &str) -> Result<Option<PullInfo>, ActionError> {
    let this = cfg.env.repository();
    let mut candidates: Vec<PullInfo> = Vec::new();
    for n in &run.pull_requests {
        candidates.push(client.pull_request(*n)?);
    }
    if candidates.is_empty() {
        if let (Some(branch), Some(repo)) = (&run.head_branch, &run.head_repo) {
            let owner = repo.split('/').next().unwrap_or_default();
            candidates = client.pulls_by_head(&format!("{owner}:{branch}"))?;
        }
    }
    Ok(candidates.into_iter().find(|p| {
        p.head.sha == head
            && p.state.as_deref().is_none_or(|s| s == "open")
            && p.base.repo.as_ref().is_none_or(|r| r.full_name.eq_ignore_ascii_case(&this))
    }))
}

/// Fetch `commit` from `origin` unless the repository has it.
fn ensure_commit(repo: &Repo, commit: &str, what: &str, log: &mut dyn Write) -> Result<(), ActionError> {
    if repo.has_commit(commit)? {
        return Ok(());
    }
    let _ = writeln!(log, "velaris: fetching the {what} {commit} from origin");
    repo.fetch_commit("origin", commit).map_err(|e| {
        usage(format!(
            "the {what} {commit} is not in the checkout and could not be fetched from origin ({e}); check out the base repository with `fetch-depth: 0`"
        ))
    })
}

/// The package sources every lockfile of `base` uses: what a confined review may fetch from.
fn base_sources(repo: &Repo, base: &str, c: &mut Confinement) -> Result<(), ActionError> {
    for path in repo.files_named(base, "Cargo.lock")? {
        let Some(text) = repo.read_at(base, &path)? else { continue };
        // A base lockfile that does not parse allows nothing more (the review says why).
        if let Ok(lock) = crate::lockfile::parse_lockfile(&text, &path) {
            for p in &lock.packages {
                if let Some(s) = &p.source {
                    c.allow(s);
                }
            }
        }
    }
    Ok(())
}

/// The commit status for the reviews: `failure` when a `fail-on` condition holds, `error` when a
/// workspace could not be reviewed, else `success`; the description says which and why.
pub(crate) fn verdict(reports: &[WorkspaceReport], failed: &[Condition], exit_code: i32) -> (StatusState, String) {
    if exit_code == crate::exit_codes::INTEGRITY {
        return (StatusState::Failure, "integrity failure: a package does not match its checksum".into());
    }
    if reports.iter().any(|r| r.failed()) {
        let n = reports.iter().filter(|r| r.failed()).count();
        return (StatusState::Error, format!("could not review {}: see the run", crate::text::plural(n as u64, "workspace", "workspaces")));
    }
    if !failed.is_empty() {
        let what: Vec<String> = reports.iter().flat_map(|r| r.failed.iter().flat_map(|f| f.what.iter().cloned())).collect();
        let names: Vec<&str> = failed.iter().map(|c| c.as_str()).collect();
        return (StatusState::Failure, format!("fails {}: {}", names.join(", "), what.join("; ")));
    }
    // What passes but a reviewer must still look at: grants the change gives itself, new uses.
    let grants: usize = reports.iter().filter_map(|r| r.additions.as_ref()).flatten().map(|a| a.summary().split(", ").count()).sum();
    let uses: usize = reports.iter().filter_map(|r| r.new_uses.as_ref()).map(|n| n.uses.len()).sum();
    let mut review = Vec::new();
    if grants > 0 {
        review.push(format!("adds {} to the baseline", crate::text::plural(grants as u64, "grant", "grants")));
    }
    if uses > 0 {
        review.push(crate::text::plural(uses as u64, "new capability use", "new capability uses"));
    }
    let d = if review.is_empty() { "holds: nothing widened".to_string() } else { format!("holds; to review: {}", review.join(", ")) };
    (StatusState::Success, d)
}

/// Review the head of the pull request a finished `pull_request` run was for, and report it.
pub fn run(cfg: &Config, event: &Event, log: &mut dyn Write) -> Result<Outcome, ActionError> {
    let wr = event.workflow_run.as_ref().ok_or_else(|| usage("the workflow_run payload names no run"))?;
    let mut ann = Annotations::default();
    if cfg.comments_from.is_some() {
        ann.run_message(
            Level::Warning,
            "velaris: comments-from ignored",
            "`comments-from` is ignored: a file from the pull request's run is written by a workflow the pull request controls, so velaris reviews the pull request itself and posts only what it rendered (docs/action.md, \"Fork pull requests\")",
        );
    }
    if let Some(e) = wr.event.as_deref().filter(|e| *e != "pull_request") {
        let _ = writeln!(log, "velaris: the finished run was started by {}, not by a pull request; nothing to review", escape::line(e));
        ann.write(log).map_err(super::io("write the annotations"))?;
        return super::nothing_to_do(cfg);
    }
    if cfg.head.is_some() {
        return Err(usage("--head does not apply to workflow_run: the head is the commit the finished run was for"));
    }
    let head = wr.head_sha.clone().filter(|h| is_object_id(h)).ok_or_else(|| usage("the workflow_run payload names no head commit"))?;
    let token = cfg.env.token.clone().ok_or_else(|| {
        usage("GITHUB_TOKEN is not set: the workflow_run side asks the API which pull request to review, comments and sets the commit status (the action's `token` input)")
    })?;
    let client = Client::new(ApiConfig {
        api_url: cfg.env.api_url.clone(),
        graphql_url: cfg.env.graphql_url.clone(),
        owner: cfg.env.owner.clone(),
        repo: cfg.env.repo.clone(),
        token,
        policy: cfg.policy.clone(),
    })?;
    let Some(pr) = find_pull(&client, cfg, wr, &head)? else {
        let _ = writeln!(log, "velaris: no open pull request of {} has head {head} (it moved on, or was closed); nothing to review", cfg.env.repository());
        ann.write(log).map_err(super::io("write the annotations"))?;
        return super::nothing_to_do(cfg);
    };
    let dir = cfg.env.workspace.clone().unwrap_or_else(|| cfg.cwd.clone());
    let repo = Repo::discover(&dir).map_err(|e| {
        usage(format!(
            "{e}: the workflow_run side reads the pull request into a checkout of the base repository; check it out first (actions/checkout with `fetch-depth: 0`, no `ref:`)"
        ))
    })?;
    let checkout = repo.resolve("HEAD")?;
    if checkout == head {
        return Err(usage(format!(
            "the checkout is the pull request's head ({head}): on the workflow_run side check out the base branch only (actions/checkout without `ref:`); velaris reads the head from git objects, so nothing of it is on disk for a later step to run"
        )));
    }
    let context = context(cfg);
    let status = |state: StatusState, description: &str| client.set_status(&head, state, &context, description, cfg.env.run_url().as_deref());
    if let Err(e) = status(StatusState::Pending, "reviewing the pull request") {
        ann.run_message(Level::Warning, "velaris: no commit status", &format!("velaris could not set the pending commit status ({e})"));
    }
    let mut out = Vec::new();
    ann.write(&mut out).map_err(super::io("write the annotations"))?;
    log.write_all(&out).map_err(super::io("write the log"))?;
    let reviewed = review_head(cfg, event, &repo, &client, &pr, &head, &context, log);
    if let Err(e) = &reviewed {
        // The pending status must not stay: the run ended without a verdict.
        let _ = status(StatusState::Error, &format!("not reviewed: {e}"));
    }
    reviewed
}

#[allow(clippy::too_many_arguments)]
fn review_head(
    cfg: &Config,
    event: &Event,
    repo: &Repo,
    client: &Client,
    pr: &PullInfo,
    head: &str,
    context: &str,
    log: &mut dyn Write,
) -> Result<Outcome, ActionError> {
    ensure_commit(repo, head, "pull request's head", log)?;
    let base_tip = cfg.base.clone().unwrap_or_else(|| pr.base.sha.clone());
    if is_object_id(&base_tip) {
        ensure_commit(repo, &base_tip, "base", log)?;
    }
    let base_tip = repo.resolve(&base_tip)?;
    // What the pull request itself changes: from where it branched off.
    let (base, note) = match repo.merge_base(&base_tip, head)? {
        Some(mb) => (mb, None),
        None => (
            base_tip.clone(),
            Some("No merge base of the base and the head is in this checkout, so the head is compared with the base branch as it is now; set `fetch-depth: 0` for the pull request's own changes only.".to_string()),
        ),
    };
    let range = Range { base: Some(base.clone()), head: head.to_string(), note };
    let _ = writeln!(log, "velaris: reviewing pull request #{} at {head}, as data, against {base}", pr.number);

    let mut requests = super::workspaces(repo, cfg, Some(&base), head)?;
    let mut trees = Vec::new();
    let mut reports = Vec::new();
    for r in &mut requests {
        let rel = if r.path == "." { String::new() } else { r.path.clone() };
        // Configuration from the base: the base's checkout for cargo, the base's overlay.
        let config_dir = {
            let d = repo.root().join(&rel);
            if d.is_dir() { d } else { repo.root().to_path_buf() }
        };
        let overlay = repo.read_at(&base, &review::join(&r.path, crate::surface::engine::OVERLAY_FILE))?;
        let mut confinement = Confinement::new(config_dir, overlay);
        base_sources(repo, &base, &mut confinement)?;
        r.fetch.confinement = Some(std::sync::Arc::new(confinement));
        let _ = writeln!(log, "velaris: reviewing workspace {}", escape::line(&r.path));
        match crate::depsdiff::materialize(repo, head, &rel) {
            Ok(Some(t)) => {
                // The tree's root stands for the repository's: `t.root` is the workspace in it.
                let root = if rel.is_empty() { t.root.clone() } else { strip_suffix(&t.root, &rel) };
                r.head_tree = Some(root);
                reports.push(review::review(repo, Some(&base), head, r, &cfg.fail_on));
                trees.push(t);
            }
            Ok(None) => reports.push(WorkspaceReport::failed_with(r, format!("{} has no Cargo.toml at the head", escape::line(&r.path)))),
            Err(e) => reports.push(WorkspaceReport::failed_with(r, format!("the head's workspace could not be read from git: {e}"))),
        }
    }
    let outcome = super::publish(cfg, event, Some(pr.number), &range, &reports, Some(StatusTarget { client, sha: head, context }), log);
    drop(trees);
    outcome
}

/// `/tmp/velaris-ws-x/svc/a` without `svc/a`: the directory standing for the repository root.
fn strip_suffix(path: &std::path::Path, rel: &str) -> std::path::PathBuf {
    let mut p = path.to_path_buf();
    for _ in rel.split('/').filter(|s| !s.is_empty()) {
        p.pop();
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_root_is_the_workspace_without_its_path() {
        assert_eq!(strip_suffix(std::path::Path::new("/tmp/w/svc/a"), "svc/a"), std::path::Path::new("/tmp/w"));
        assert_eq!(strip_suffix(std::path::Path::new("/tmp/w"), ""), std::path::Path::new("/tmp/w"));
    }
}
