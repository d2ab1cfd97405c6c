//! The GitHub Action: `velaris action` on a workflow's runner.
//!
//! This module owns the run of the action from a resolved [`Config`] to an [`Outcome`]: read the
//! event ([`event`]) and the environment ([`env`]), decide which commits to compare ([`range`])
//! and which workspaces to review, review each ([`review`]: the gate, the baseline additions, the
//! dependency review, all through the library's own pipelines), post one comment per pull
//! request and workspace ([`comment`] over [`api`]), write the job summary ([`summary`]),
//! annotations ([`annotations`]), the report file ([`json`]) and the step outputs ([`outputs`]),
//! and compute the exit code from `fail-on` ([`crate::gate`]). [`trusted`] is the fork recipe's
//! `workflow_run` side: it reviews the pull request's head as data, renders and posts the
//! comment itself and sets the commit status a fork cannot forge. It parses no arguments (see
//! the binary's `cli`).
//!
//! Architecture invariants: the token is read only from `GITHUB_TOKEN`, kept in a
//! [`env::Token`] and sent only to the hosts of `GITHUB_API_URL` and `GITHUB_GRAPHQL_URL`; no
//! output, log line, summary or file contains it. A comment's failure (a read-only token, a
//! rate limit) never changes the exit code the review earned. Everything printed to the log
//! that comes from the analysed code is fenced with `::stop-commands::`.

pub mod annotations;
pub mod api;
pub mod budget;
pub mod comment;
pub mod env;
pub mod event;
pub mod json;
pub mod outputs;
pub mod range;
pub mod render;
pub mod review;
pub mod summary;
pub mod trusted;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use annotations::{Annotation, Annotations, Level};
use api::{ApiConfig, ApiError, Client};
use comment::Upserted;
use env::ActionEnv;
use event::{Event, EventKind};
use json::CommentJson;
use review::{Request, State, WorkspaceReport};

use crate::exit_codes;
use crate::gate::{Condition, FailOn};
use crate::git::{GitError, Repo};
use crate::registry::FetchOptions;
use crate::report;
use crate::text::escape;

/// The `schema` of `comments.json`.
pub const COMMENTS_SCHEMA: &str = "velaris/comments/v1";

/// `comments.json`: the comments a `pull_request` run rendered, per workspace.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct CommentsFile {
    pub schema: String,
    pub pull_request: u64,
    pub head_sha: String,
    pub comments: Vec<WorkspaceComment>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct WorkspaceComment {
    pub workspace: String,
    pub body: String,
}

/// The login assumed when the token's identity cannot be read.
pub const DEFAULT_AUTHOR: &str = "github-actions[bot]";

/// The resolved configuration of a run.
#[derive(Debug, Clone)]
pub struct Config {
    pub env: ActionEnv,
    /// Workspaces to review, relative to the repository root; empty: every one with a
    /// baseline at the head, and every one whose `Cargo.lock` the change touches.
    pub workspaces: Vec<String>,
    /// The baseline's path relative to each workspace.
    pub baseline: String,
    /// `--base`: overrides the event's base.
    pub base: Option<String>,
    /// `--head`: must be the checked-out commit.
    pub head: Option<String>,
    /// Post the pull-request comment.
    pub comment: bool,
    /// The login of the token's identity, when GraphQL cannot tell it.
    pub comment_author: Option<String>,
    pub fail_on: FailOn,
    pub target: Option<String>,
    pub fetch: FetchOptions,
    /// Release ages (the `cooldown` input), publishers, for the dependency review.
    pub publication: crate::depsdiff::publish::Options,
    /// Where the report, the comment body and the comments file are written.
    pub out_dir: PathBuf,
    /// `--comments-from`, from the recipe of earlier releases: ignored (with a warning), since
    /// the file is written by a run the pull request controls.
    pub comments_from: Option<PathBuf>,
    pub policy: api::Policy,
    /// Where the repository is looked for when `GITHUB_WORKSPACE` is unset.
    pub cwd: PathBuf,
}

/// What the run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit_code: i32,
    pub widened: bool,
    pub report: Option<PathBuf>,
    pub comment_urls: Vec<String>,
    pub comment_body: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error(transparent)]
    Env(#[from] env::EnvError),
    #[error(transparent)]
    Event(#[from] event::EventError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("{0}")]
    Usage(String),
    #[error("failed to {what}")]
    Io { what: String, source: std::io::Error },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ActionError {
    let what = what.into();
    move |source| ActionError::Io { what, source }
}

/// The token's login: `--comment-author`, else GraphQL `viewer`, else [`DEFAULT_AUTHOR`].
pub(crate) fn identity(client: &Client, given: Option<&str>, log: &mut dyn Write) -> String {
    if let Some(g) = given.filter(|g| !g.is_empty()) {
        return g.to_string();
    }
    match client.viewer_login() {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(log, "velaris: could not read the token's identity ({e}); assuming {DEFAULT_AUTHOR}");
            DEFAULT_AUTHOR.to_string()
        }
    }
}

/// A workspace path as given: relative, `/`-separated, no `..`; `.` for the root.
fn normalize_workspace(p: &str) -> Result<String, ActionError> {
    let p = p.trim().replace('\\', "/");
    if p.starts_with('/') || p.contains(':') {
        return Err(ActionError::Usage(format!("workspace {p:?} must be relative to the repository root")));
    }
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    if parts.contains(&"..") {
        return Err(ActionError::Usage(format!("workspace {p:?} leaves the repository")));
    }
    Ok(if parts.is_empty() { ".".to_string() } else { parts.join("/") })
}

fn parent_dir(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((d, _)) => d.to_string(),
        None => ".".to_string(),
    }
}

/// The workspaces to review, with whether each must have a baseline.
fn workspaces(repo: &Repo, cfg: &Config, base: Option<&str>, head: &str) -> Result<Vec<Request>, ActionError> {
    let baseline = cfg.baseline.trim_start_matches("./").to_string();
    let changed: BTreeSet<String> = match base {
        Some(b) => repo.changed_lockfiles(b, Some(head))?.into_iter().collect(),
        None => BTreeSet::new(),
    };
    let mut wanted: Vec<(String, bool)> = Vec::new();
    if !cfg.workspaces.is_empty() {
        for w in &cfg.workspaces {
            wanted.push((normalize_workspace(w)?, true));
        }
    } else {
        let name = baseline.rsplit('/').next().unwrap_or(&baseline).to_string();
        for p in repo.files_named(head, &name)? {
            let dir = if p == baseline {
                Some(".".to_string())
            } else {
                p.strip_suffix(&format!("/{baseline}")).map(str::to_string)
            };
            if let Some(d) = dir {
                wanted.push((d, true));
            }
        }
        for l in &changed {
            let d = parent_dir(l);
            if !wanted.iter().any(|(w, _)| *w == d) {
                wanted.push((d, false));
            }
        }
        if wanted.is_empty() {
            if repo.read_at(head, "Cargo.toml")?.is_some() {
                wanted.push((".".to_string(), true));
            } else {
                return Err(ActionError::Usage(format!(
                    "no workspace to review: no {baseline} is committed, no Cargo.lock changed and the repository root has no Cargo.toml; name one with `workspace`"
                )));
            }
        }
    }
    wanted.sort();
    wanted.dedup_by(|a, b| a.0 == b.0);
    let fetch = cfg.fetch.clone();
    Ok(wanted
        .into_iter()
        .map(|(path, require)| Request {
            lockfile_changed: changed.contains(&review::join(&path, "Cargo.lock")),
            path,
            baseline: baseline.clone(),
            require_baseline: require,
            target: cfg.target.clone(),
            fetch: fetch.clone(),
            publication: cfg.publication.clone(),
            head_tree: None,
        })
        .collect())
}

/// What the comment of one workspace became.
#[derive(Debug, Clone)]
enum CommentStatus {
    Posted(Upserted),
    Skipped(String),
    Failed(String),
}

impl CommentStatus {
    fn json(&self) -> CommentJson {
        match self {
            CommentStatus::Posted(u) => {
                CommentJson { status: u.posted.verb().into(), url: u.posted.url().map(str::to_string), detail: None }
            }
            CommentStatus::Skipped(d) => CommentJson { status: "skipped".into(), url: None, detail: Some(d.clone()) },
            CommentStatus::Failed(d) => CommentJson { status: "failed".into(), url: None, detail: Some(d.clone()) },
        }
    }
}

/// The warning for a write GitHub refused with 403.
fn forbidden_message(event: &Event, env: &ActionEnv, e: &ApiError) -> String {
    let pr = event.pull_request.as_ref();
    let dependabot = |s: Option<&str>| s.is_some_and(|a| a.eq_ignore_ascii_case("dependabot[bot]"));
    let recipe = "to comment there, review it again from a `workflow_run` workflow, which comments and sets the `velaris ratchet` commit status (docs/action.md, \"Fork pull requests\"); the summary and the exit code are unaffected";
    if dependabot(env.actor.as_deref()) || dependabot(pr.and_then(|p| p.author.as_deref())) {
        format!("velaris could not comment: this pull request is from Dependabot, whose workflow runs get a read-only token ({e}); {recipe}")
    } else if pr.is_some_and(|p| p.from_fork()) {
        format!("velaris could not comment: this pull request comes from a fork, where the workflow's token is read-only ({e}); {recipe}")
    } else {
        format!(
            "velaris could not comment: the token may not write pull-request comments ({e}); give the job `permissions: pull-requests: write`, or set `comment: false`. The summary and the exit code are unaffected"
        )
    }
}

fn post_comments(
    cfg: &Config,
    event: &Event,
    number: u64,
    bodies: &[(String, String, String)],
    ann: &mut Annotations,
    log: &mut dyn Write,
) -> Vec<CommentStatus> {
    let skip_all = |why: &str| bodies.iter().map(|_| CommentStatus::Skipped(why.to_string())).collect();
    let Some(token) = cfg.env.token.clone() else {
        ann.run_message(Level::Warning, "velaris: no comment", "GITHUB_TOKEN is not set, so no comment was posted (the action's `token` input sets it)");
        return skip_all("GITHUB_TOKEN is not set");
    };
    let client = match Client::new(ApiConfig {
        api_url: cfg.env.api_url.clone(),
        graphql_url: cfg.env.graphql_url.clone(),
        owner: cfg.env.owner.clone(),
        repo: cfg.env.repo.clone(),
        token,
        policy: cfg.policy.clone(),
    }) {
        Ok(c) => c,
        Err(e) => {
            ann.run_message(Level::Warning, "velaris: no comment", &format!("velaris could not comment: {e}"));
            return bodies.iter().map(|_| CommentStatus::Failed(e.to_string())).collect();
        }
    };
    let me = identity(&client, cfg.comment_author.as_deref(), log);
    let mut out = Vec::new();
    let mut stop: Option<String> = None;
    for (marker, full, short) in bodies {
        if let Some(why) = &stop {
            out.push(CommentStatus::Skipped(why.clone()));
            continue;
        }
        match comment::upsert(&client, number, marker, &me, full, short) {
            Ok(u) => {
                for (id, who) in &u.foreign {
                    ann.run_message(
                        Level::Notice,
                        "velaris: comment left alone",
                        &format!("comment {id} by {} carries velaris' marker but was not written by {me}; it was left alone", escape::line(who)),
                    );
                }
                let _ = writeln!(log, "velaris: comment {} on #{number}{}", u.posted.verb(), u.posted.url().map(|u| format!(": {u}")).unwrap_or_default());
                out.push(CommentStatus::Posted(u));
            }
            Err(e @ ApiError::Forbidden { .. }) => {
                ann.run_message(Level::Warning, "velaris: no comment (read-only token)", &forbidden_message(event, &cfg.env, &e));
                stop = Some("the token cannot write comments".into());
                out.push(CommentStatus::Failed(e.to_string()));
            }
            Err(e @ ApiError::RateLimited { .. }) => {
                ann.run_message(Level::Warning, "velaris: no comment (rate limit)", &format!("velaris could not comment: {e}; the summary and the exit code are unaffected"));
                stop = Some("rate limited".into());
                out.push(CommentStatus::Failed(e.to_string()));
            }
            Err(e) => {
                ann.run_message(Level::Warning, "velaris: no comment", &format!("velaris could not comment: {e}; the summary and the exit code are unaffected"));
                out.push(CommentStatus::Failed(e.to_string()));
            }
        }
    }
    out
}

/// Errors on widened findings; warnings on flagged packages' lockfile entries; errors for a
/// workspace that could not be reviewed.
fn annotate(ws: &WorkspaceReport, ann: &mut Annotations) {
    let lock_place = |name: &str, version: &str| -> (Option<String>, Option<u32>) {
        match &ws.lockfile {
            Some((path, text)) => match annotations::lockfile_line(text, name, version) {
                Some(l) => (Some(path.clone()), Some(l)),
                None => (None, None),
            },
            None => (None, None),
        }
    };
    match &ws.state {
        State::Failed { message, integrity } => ann.run_message(
            Level::Error,
            if *integrity { "velaris: integrity failure" } else { "velaris: not checked" },
            &format!("workspace {}: {}", ws.path, message),
        ),
        State::Checked(c) => {
            for w in &c.widened {
                for e in &w.findings {
                    let f = &e.finding;
                    let (file, line, col) = match ws.local_dirs.get(&(e.crate_name.clone(), e.version.clone())) {
                        Some(dir) => (Some(review::join(dir, &f.file)), Some(f.line), Some(f.column)),
                        None => {
                            let (p, l) = lock_place(&e.crate_name, &e.version);
                            (p, l, None)
                        }
                    };
                    ann.add(Annotation {
                        level: Level::Error,
                        file,
                        line,
                        col,
                        title: format!("velaris: {} not granted", f.capability),
                        message: format!(
                            "{} {}: {} {} uses {} ({}) at {}:{}; {} does not grant it",
                            w.subject.kind(),
                            w.subject.name(),
                            e.crate_name,
                            e.version,
                            f.capability,
                            f.path,
                            f.file,
                            f.line,
                            ws.baseline_path
                        ),
                    });
                }
            }
        }
        State::NoBaseline => {}
    }
    if let Some((message, integrity)) = &ws.deps_error {
        ann.run_message(
            Level::Error,
            if *integrity { "velaris: integrity failure" } else { "velaris: dependency review failed" },
            &format!("workspace {}: {message}", ws.path),
        );
    }
    // Warnings on the Cargo.lock entry of each package the review flags (those built for an
    // analysed target), in review order: integrity first, then the flags with their codes.
    if let Some(r) = &ws.deps {
        for p in r.packages.iter().filter(|p| p.built() || r.all_targets) {
            let mut parts = Vec::new();
            match p.change {
                crate::lockfile::ChangeKind::SourceChanged => parts.push("moved to another source".to_string()),
                crate::lockfile::ChangeKind::ChecksumChanged => parts.push("other bytes under the same version (another checksum)".to_string()),
                _ => {}
            }
            for s in [&p.old, &p.new].into_iter().flatten().filter(|s| s.unverified()) {
                if let Some(why) = s.unverifiable() {
                    parts.push(format!("{} {} cannot be verified: {why}", p.name, s.package.version));
                }
            }
            for f in &p.flags {
                parts.push(format!("{}: {}", f.kind.code(), f.message));
            }
            if parts.is_empty() {
                continue;
            }
            // A removed package has no entry at head: the warning is about the run.
            let (file, line) = match &p.new {
                Some(n) => lock_place(&p.name, &n.package.version.to_string()),
                None => (None, None),
            };
            ann.add(Annotation {
                level: Level::Warning,
                file,
                line,
                col: None,
                title: format!("velaris: review {}", p.title()),
                message: format!("{}: {}", p.title(), parts.join("; ")),
            });
        }
    }
}

/// The workspace for the log (fenced before printing).
fn log_text(ws: &WorkspaceReport) -> String {
    let mut out = format!("velaris ratchet: workspace {}\n", escape::line(&ws.path));
    match &ws.state {
        State::Checked(c) => out.push_str(&crate::baseline::render::human(c, false)),
        State::NoBaseline => out.push_str(&format!("no {}: dependency review only\n", escape::line(&ws.baseline_path))),
        State::Failed { message, .. } => out.push_str(&format!("error: {}\n", escape::source(message))),
    }
    if let Some(r) = &ws.deps {
        out.push_str(&report::render_human(r, &report::HumanOptions { detail: report::Detail::Stat }));
    }
    if let Some((m, _)) = &ws.deps_error {
        out.push_str(&format!("error: dependency review: {}\n", escape::source(m)));
    }
    for f in &ws.failed {
        out.push_str(&format!("fail-on {}:\n", f.condition));
        for w in &f.what {
            out.push_str(&format!("  {}\n", escape::line(w)));
        }
    }
    out
}

/// The conditions the reports trip, each once, in the order of [`Condition::ALL`].
fn failed_conditions(reports: &[WorkspaceReport]) -> Vec<Condition> {
    let met: BTreeSet<Condition> = reports.iter().flat_map(|r| r.failed.iter().map(|f| f.condition)).collect();
    met.into_iter().collect()
}

fn write_file(path: &Path, text: &str) -> Result<(), ActionError> {
    std::fs::write(path, text).map_err(io(format!("write {}", path.display())))
}

/// Run the action.
pub fn run(cfg: &Config, log: &mut dyn Write) -> Result<Outcome, ActionError> {
    let event = event::read(&cfg.env.event_name, cfg.env.event_path.as_deref())?;
    std::fs::create_dir_all(&cfg.out_dir).map_err(io(format!("create {}", cfg.out_dir.display())))?;

    if event.kind == EventKind::WorkflowRun {
        return trusted::run(cfg, &event, log);
    }
    if event.kind == EventKind::Push && event.deleted {
        let _ = writeln!(log, "velaris: the push deleted the branch; nothing to check");
        return nothing_to_do(cfg);
    }

    let dir = cfg.env.workspace.clone().unwrap_or_else(|| cfg.cwd.clone());
    let repo = Repo::discover(&dir)?;
    let range = range::resolve(&repo, &event, cfg.base.as_deref(), cfg.head.as_deref(), log)?;
    let requests = workspaces(&repo, cfg, range.base.as_deref(), &range.head)?;
    let mut reports = Vec::new();
    for r in &requests {
        let _ = writeln!(log, "velaris: reviewing workspace {}", escape::line(&r.path));
        reports.push(review::review(&repo, range.base.as_deref(), &range.head, r, &cfg.fail_on));
    }
    let pr = match event.kind {
        EventKind::PullRequest | EventKind::PullRequestTarget => event.pull_request.as_ref().map(|p| p.number),
        _ => None,
    };
    publish(cfg, &event, pr, &range, &reports, None, log)
}

/// The outputs of a run that checked nothing.
pub(crate) fn nothing_to_do(cfg: &Config) -> Result<Outcome, ActionError> {
    if let Some(p) = &cfg.env.output {
        outputs::write_outputs(p, &[("widened", "false"), ("report", ""), ("comment-url", ""), ("comment-body", "")])
            .map_err(io("write the step outputs"))?;
    }
    Ok(Outcome { exit_code: exit_codes::OK, widened: false, report: None, comment_urls: Vec::new(), comment_body: None })
}

/// What the run's verdict is reported on besides the exit code: a commit status on the
/// reviewed head, set by the `workflow_run` side (see [`trusted`]).
pub(crate) struct StatusTarget<'a> {
    pub client: &'a Client,
    pub sha: &'a str,
    pub context: &'a str,
}

/// Render, post and write everything about `reports`: the comments (on pull request `pr`),
/// the log and annotations, the exit code, the commit status (`status`), the summary, the
/// report files and the step outputs.
pub(crate) fn publish(
    cfg: &Config,
    event: &Event,
    pr: Option<u64>,
    range: &range::Range,
    reports: &[WorkspaceReport],
    status: Option<StatusTarget<'_>>,
    log: &mut dyn Write,
) -> Result<Outcome, ActionError> {
    let run_url = cfg.env.run_url();
    let ctx = render::Context {
        event: event.kind.name(),
        base: range.base.as_deref(),
        head: &range.head,
        range_note: range.note.as_deref(),
        fail_on: &cfg.fail_on,
        run_url: run_url.as_deref(),
        several: reports.len() > 1,
    };
    let mut ann = Annotations::default();

    // The comments.
    let bodies: Vec<(String, String, String)> = reports
        .iter()
        .map(|ws| {
            let m = comment::marker(&ws.path);
            (m.clone(), render::comment(ws, &ctx, &m), render::short_comment(ws, &ctx, &m))
        })
        .collect();
    let statuses: Vec<CommentStatus> = match (pr, cfg.comment) {
        (_, false) => bodies.iter().map(|_| CommentStatus::Skipped("comment: false".into())).collect(),
        (None, true) => {
            let why = match event.kind {
                EventKind::MergeGroup => "a merge group has no pull request to comment on".to_string(),
                ref k => format!("a {} event has no pull request to comment on", k.name()),
            };
            bodies.iter().map(|_| CommentStatus::Skipped(why.clone())).collect()
        }
        (Some(number), true) => post_comments(cfg, event, number, &bodies, &mut ann, log),
    };

    // The log, fenced; annotations after it.
    let mut text = String::new();
    for ws in reports {
        text.push_str(&log_text(ws));
    }
    if let Some(n) = &range.note {
        text.push_str(&format!("note: {n}\n"));
    }
    annotations::write_fenced(log, &text).map_err(io("write the log"))?;
    for ws in reports {
        annotate(ws, &mut ann);
    }

    // Exit code.
    let failed = failed_conditions(reports);
    let exit_code = if reports.iter().any(|r| r.integrity_failure()) {
        exit_codes::INTEGRITY
    } else if reports.iter().any(|r| r.failed()) {
        exit_codes::USAGE
    } else if !failed.is_empty() {
        exit_codes::WIDENED
    } else {
        exit_codes::OK
    };
    let widened = reports.iter().any(|r| r.widened());

    // The verdict as a commit status, which nothing the pull request runs can set.
    if let Some(st) = status {
        let (state, description) = trusted::verdict(reports, &failed, exit_code);
        match st.client.set_status(st.sha, state, st.context, &description, run_url.as_deref()) {
            Ok(()) => {
                let _ = writeln!(log, "velaris: commit status {:?} of {} set to {}", st.context, st.sha, state.as_str());
            }
            Err(e) => ann.run_message(
                Level::Error,
                "velaris: no commit status",
                &format!("velaris could not set the commit status {:?} of {} ({e}); a branch protection rule that requires it keeps the pull request blocked", st.context, st.sha),
            ),
        }
    }
    ann.write(log).map_err(io("write the annotations"))?;

    // The summary: each workspace its share.
    if let Some(p) = &cfg.env.step_summary {
        let mut s = summary::Summary::open(p);
        let share = s.left() / reports.len().max(1);
        for (ws, st) in reports.iter().zip(&statuses) {
            let note = match st {
                CommentStatus::Posted(u) => u.posted.url().map(|url| format!("[Pull-request comment]({url}) {}.", u.posted.verb())),
                CommentStatus::Failed(d) => Some(format!("No pull-request comment: {}", escape::code_span(d))),
                CommentStatus::Skipped(_) => None,
            };
            let section = render::summary(ws, &ctx, share.saturating_sub(400), note.as_deref());
            s.append(&section).map_err(io(format!("write {}", p.display())))?;
        }
    }

    // Files.
    let report_path = cfg.out_dir.join("report.json");
    let body_path = cfg.out_dir.join("comment.md");
    let docs: Vec<(WorkspaceReport, CommentJson)> = reports.iter().cloned().zip(statuses.iter().map(CommentStatus::json)).collect();
    let run = json::RunJson {
        event: event.kind.name(),
        pull_request: pr,
        base: range.base.as_deref(),
        head: &range.head,
        fail_on: cfg.fail_on.conditions().map(|c| c.to_string()).collect(),
        failed_conditions: failed.iter().map(|c| c.to_string()).collect(),
        exit_code,
    };
    write_file(&report_path, &json::render(&run, &docs))?;
    write_file(&body_path, &bodies.iter().map(|b| b.1.as_str()).collect::<Vec<_>>().join("\n---\n\n"))?;
    // `comments.json` (`velaris/comments/v1`), kept for workflows that upload it. velaris
    // itself never reads it back: on a fork it is the fork's to forge.
    if let (Some(number), Some(p)) = (pr, event.pull_request.as_ref()) {
        let file = CommentsFile {
            schema: COMMENTS_SCHEMA.into(),
            pull_request: number,
            head_sha: p.head_sha.clone().unwrap_or_default(),
            comments: reports.iter().zip(&bodies).map(|(ws, b)| WorkspaceComment { workspace: ws.path.clone(), body: b.1.clone() }).collect(),
        };
        let mut text = serde_json::to_string_pretty(&file).expect("the comments file serializes");
        text.push('\n');
        write_file(&cfg.out_dir.join("comments.json"), &text)?;
    }
    let urls: Vec<String> = statuses
        .iter()
        .filter_map(|s| match s {
            CommentStatus::Posted(u) => u.posted.url().map(str::to_string),
            _ => None,
        })
        .collect();
    if let Some(p) = &cfg.env.output {
        let report_s = report_path.display().to_string();
        let body_s = body_path.display().to_string();
        outputs::write_outputs(
            p,
            &[
                ("widened", if widened { "true" } else { "false" }),
                ("report", &report_s),
                ("comment-url", urls.first().map(String::as_str).unwrap_or("")),
                ("comment-body", &body_s),
            ],
        )
        .map_err(io(format!("write {}", p.display())))?;
    }
    Ok(Outcome { exit_code, widened, report: Some(report_path), comment_urls: urls, comment_body: Some(body_path) })
}
