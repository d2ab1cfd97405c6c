//! The action's report file, `velaris/action/v1` (docs/json.md): everything the run found,
//! per workspace, embedding the `velaris/check/v1` and `velaris/deps-diff/v2` documents as
//! those commands print them, and the `fail-on` conditions each workspace trips.

use serde::Serialize;
use serde_json::Value;

use super::review::{State, WorkspaceReport};
use crate::baseline::{Addition, Subject};
use crate::surface::Capability;

/// The `schema` of the report.
pub const SCHEMA: &str = "velaris/action/v1";

/// What happened to a workspace's comment.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CommentJson {
    /// `created`, `updated`, `unchanged`, `skipped`, `failed`.
    pub status: String,
    pub url: Option<String>,
    pub detail: Option<String>,
}

/// The run as a whole.
#[derive(Debug, Clone)]
pub struct RunJson<'a> {
    pub event: &'a str,
    pub pull_request: Option<u64>,
    pub base: Option<&'a str>,
    pub head: &'a str,
    pub fail_on: Vec<String>,
    pub failed_conditions: Vec<String>,
    pub exit_code: i32,
}

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    event: &'a str,
    pull_request: Option<u64>,
    base: Option<&'a str>,
    head: &'a str,
    widened: bool,
    exit_code: i32,
    fail_on: &'a [String],
    failed: &'a [String],
    workspaces: Vec<WsDoc<'a>>,
}

#[derive(Serialize)]
struct WsDoc<'a> {
    path: &'a str,
    baseline: &'a str,
    status: &'static str,
    error: Option<&'a str>,
    target: Option<&'a str>,
    check: Option<Value>,
    baseline_added: Option<Vec<AddDoc<'a>>>,
    baseline_note: Option<&'a str>,
    deps_diff: Option<Value>,
    deps_diff_error: Option<&'a str>,
    failed: Vec<FailedDoc<'a>>,
    comment: &'a CommentJson,
}

#[derive(Serialize)]
struct FailedDoc<'a> {
    condition: &'static str,
    what: &'a [String],
}

#[derive(Serialize)]
struct AddDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    program: Option<&'a str>,
    #[serde(rename = "crate", skip_serializing_if = "Option::is_none")]
    krate: Option<&'a str>,
    capabilities: Vec<Capability>,
    new: bool,
    reason: Option<&'a str>,
    reasons: std::collections::BTreeMap<&'a str, &'a str>,
}

/// `holds`, `widened`, `no-baseline`, `error`, `integrity`.
pub fn status(ws: &WorkspaceReport) -> &'static str {
    match &ws.state {
        State::Failed { integrity: true, .. } => "integrity",
        State::Failed { .. } => "error",
        State::NoBaseline => "no-baseline",
        State::Checked(c) if c.holds => "holds",
        State::Checked(_) => "widened",
    }
}

fn add_doc(a: &Addition) -> AddDoc<'_> {
    let (program, krate) = match &a.subject {
        Subject::Program(n) => (Some(n.as_str()), None),
        Subject::Crate(n) => (None, Some(n.as_str())),
    };
    AddDoc {
        program,
        krate,
        capabilities: a.capabilities.iter().copied().collect(),
        new: a.new_subject,
        reason: a.reason.as_deref(),
        reasons: a.reasons.iter().map(|(c, r)| (c.as_str(), r.as_str())).collect(),
    }
}

/// The report document, pretty, with a final newline.
pub fn render(run: &RunJson<'_>, workspaces: &[(WorkspaceReport, CommentJson)]) -> String {
    let docs = workspaces
        .iter()
        .map(|(ws, comment)| WsDoc {
            path: &ws.path,
            baseline: &ws.baseline_path,
            status: status(ws),
            error: match &ws.state {
                State::Failed { message, .. } => Some(message.as_str()),
                _ => None,
            },
            target: ws.target.as_deref(),
            // As `velaris check --base BASE --format json` prints it: with the uses the change
            // adds to the members.
            check: ws.check().map(|c| {
                let view = crate::baseline::render::View { new_uses: ws.new_uses.as_ref(), ..Default::default() };
                serde_json::from_str(&crate::baseline::render::json_with(c, &view)).expect("the check document is JSON")
            }),
            baseline_added: ws.additions.as_ref().map(|a| a.iter().map(add_doc).collect()),
            baseline_note: ws.additions_note.as_deref(),
            deps_diff: ws.deps.as_ref().map(|r| serde_json::from_str(&crate::report::render_json(r)).expect("the deps-diff document is JSON")),
            deps_diff_error: ws.deps_error.as_ref().map(|e| e.0.as_str()),
            failed: ws.failed.iter().map(|f| FailedDoc { condition: f.condition.as_str(), what: &f.what }).collect(),
            comment,
        })
        .collect();
    let doc = Doc {
        schema: SCHEMA,
        event: run.event,
        pull_request: run.pull_request,
        base: run.base,
        head: run.head,
        widened: workspaces.iter().any(|(w, _)| w.widened()),
        exit_code: run.exit_code,
        fail_on: &run.fail_on,
        failed: &run.failed_conditions,
        workspaces: docs,
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("the report serializes");
    s.push('\n');
    s
}
