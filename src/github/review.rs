//! One workspace's review: the gate (the head's surface against the head's baseline), the grants
//! the change adds to the baseline (against the base's baseline), and the dependency review of
//! its lockfile.
//!
//! This module runs the library's pipelines ([`crate::surface::engine::run`],
//! [`crate::baseline::check`], [`crate::depsdiff::run`]), keeps what the renderers and the
//! annotations need, and asks the deciders in [`crate::gate`] and
//! [`crate::depsdiff::review`] which `fail-on` conditions hold. It renders nothing and talks to no API. A failure is kept in the report
//! (with whether it is an integrity failure), so the other workspaces are still reviewed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::baseline::{self, Addition, Baseline, CheckOutcome};
use crate::depsdiff::{self, Input, Report};
use crate::diff::DiffOptions;
use crate::gate::{self, Condition, FailOn, Failure};
use crate::git::Repo;
use crate::registry::FetchOptions;
use crate::surface::engine;
use crate::uses::NewUses;

/// Source lines read for evidence at most, per workspace: each costs a lookup, and for a
/// registry crate an unpack.
const MAX_EXCERPTS: usize = 300;

/// What one workspace is reviewed with.
#[derive(Debug, Clone)]
pub struct Request {
    /// Relative to the repository root, `/`-separated; `.` for the root.
    pub path: String,
    /// The baseline's path relative to the workspace.
    pub baseline: String,
    /// A missing baseline is an error (the workspace was named, or has one at the head);
    /// otherwise the workspace gets the dependency review only.
    pub require_baseline: bool,
    /// The workspace's `Cargo.lock` changed between base and head.
    pub lockfile_changed: bool,
    pub target: Option<String>,
    pub fetch: FetchOptions,
    /// Release ages, publishers and their cooldown for the dependency review.
    pub publication: depsdiff::publish::Options,
    /// Where the head's tree is on disk, standing for the repository root: `None` for the
    /// work tree (the head is the checkout); a directory written from the head commit's git
    /// objects on the `workflow_run` side, where the head is untrusted data (then `fetch`
    /// carries a [`crate::trust::Confinement`], and path packages outside this tree are
    /// refused).
    pub head_tree: Option<PathBuf>,
}

/// Where the gate stands.
#[derive(Debug, Clone)]
pub enum State {
    /// The surface was compared with the baseline.
    Checked(Box<CheckOutcome>),
    /// No baseline here: dependency review only.
    NoBaseline,
    /// The review failed; `integrity` for a digest mismatch or a rejected archive.
    Failed { message: String, integrity: bool },
}

/// A source line behind a finding: (crate, version, file, line).
pub type ExcerptKey = (String, String, String, u32);

/// The review of one workspace.
#[derive(Debug, Clone)]
pub struct WorkspaceReport {
    pub path: String,
    /// The baseline's path relative to the repository root.
    pub baseline_path: String,
    pub state: State,
    /// The target the surface was analysed for.
    pub target: Option<String>,
    /// Grants the head's baseline adds to the base's; `None` when not compared.
    pub additions: Option<Vec<Addition>>,
    /// Why the baselines were not compared, or what to know about the comparison.
    pub additions_note: Option<String>,
    pub deps: Option<Report>,
    /// The dependency review failed: message, integrity.
    pub deps_error: Option<(String, bool)>,
    /// The head's lockfile: path relative to the repository root, and text.
    pub lockfile: Option<(String, String)>,
    /// Source lines of widened findings.
    pub excerpts: BTreeMap<ExcerptKey, String>,
    /// Packages read from disk: (name, version) → directory relative to the repository root.
    pub local_dirs: BTreeMap<(String, String), String>,
    /// The `fail-on` conditions this workspace trips ([`WorkspaceReport::failures`]).
    pub failed: Vec<Failure>,
    /// The capability uses the change adds to the workspace's members; `None` when there is no
    /// base to compare with or no surface.
    pub new_uses: Option<NewUses>,
}

impl WorkspaceReport {
    /// The report of a workspace that could not be reviewed at all.
    pub fn failed_with(req: &Request, message: String) -> WorkspaceReport {
        WorkspaceReport {
            path: req.path.clone(),
            baseline_path: join(&req.path, &req.baseline),
            state: State::Failed { message, integrity: false },
            target: req.target.clone(),
            additions: None,
            additions_note: None,
            deps: None,
            deps_error: None,
            lockfile: None,
            excerpts: BTreeMap::new(),
            local_dirs: BTreeMap::new(),
            failed: Vec::new(),
            new_uses: None,
        }
    }

    pub fn check(&self) -> Option<&CheckOutcome> {
        match &self.state {
            State::Checked(c) => Some(c),
            _ => None,
        }
    }

    pub fn widened(&self) -> bool {
        self.check().is_some_and(|c| !c.holds)
    }

    pub fn integrity_failure(&self) -> bool {
        matches!(self.state, State::Failed { integrity: true, .. }) || self.deps_error.as_ref().is_some_and(|e| e.1)
    }

    pub fn failed(&self) -> bool {
        matches!(self.state, State::Failed { .. }) || self.deps_error.is_some()
    }

    /// The conditions of `fail_on` this workspace trips: `widened` from the gate (the head's
    /// surface against the head's baseline), `baseline-widened` from the grants the change adds
    /// to the baseline, and every dependency condition as the dependency review decides it
    /// ([`depsdiff::review::decide`], the same decision as `velaris deps-diff --fail-on`).
    pub fn failures(&self, fail_on: &FailOn) -> Vec<Failure> {
        fail_on.failures(|c| match c {
            Condition::Widened => self.check().map(gate::widened).unwrap_or_default(),
            Condition::BaselineWidened => self.additions.as_deref().map(gate::baseline_widened).unwrap_or_default(),
            c => self.deps.as_ref().map(|r| depsdiff::review::decide(r, c)).unwrap_or_default(),
        })
    }
}

/// `a/b` joined the way paths inside a git tree are written (`.` is the root).
pub fn join(dir: &str, rel: &str) -> String {
    if dir == "." || dir.is_empty() { rel.to_string() } else { format!("{dir}/{rel}") }
}

fn read_work_tree(path: &Path, cap: u64, what: &'static str) -> Result<Option<String>, String> {
    match crate::fsio::read_text(path, cap, what) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(crate::message::chain(&e)),
    }
}

fn relative_to(root: &Path, dir: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    let dir = std::fs::canonicalize(dir).ok()?;
    let rel = dir.strip_prefix(&root).ok()?;
    let s = rel.to_str()?.replace('\\', "/");
    Some(if s.is_empty() { ".".to_string() } else { s })
}

/// Review one workspace. `base` and `head` are commits; the head is the checked-out work tree.
/// `fail_on` decides [`WorkspaceReport::failed`].
pub fn review(repo: &Repo, base: Option<&str>, head: &str, req: &Request, fail_on: &FailOn) -> WorkspaceReport {
    let tree: PathBuf = req.head_tree.clone().unwrap_or_else(|| repo.root().to_path_buf());
    let dir: PathBuf = if req.path == "." { tree.clone() } else { tree.join(&req.path) };
    let baseline_path = join(&req.path, &req.baseline);
    let mut report = WorkspaceReport {
        path: req.path.clone(),
        baseline_path: baseline_path.clone(),
        state: State::NoBaseline,
        target: req.target.clone(),
        additions: None,
        additions_note: None,
        deps: None,
        deps_error: None,
        lockfile: None,
        excerpts: BTreeMap::new(),
        local_dirs: BTreeMap::new(),
        failed: Vec::new(),
        new_uses: None,
    };
    let lock_rel = join(&req.path, "Cargo.lock");
    if let Ok(Some(text)) = read_work_tree(&dir.join("Cargo.lock"), crate::fsio::TEXT_CAP, "a lockfile") {
        report.lockfile = Some((lock_rel.clone(), text));
    }

    // The gate: the head's surface against the head's baseline.
    let head_baseline = match read_work_tree(&dir.join(&req.baseline), crate::fsio::BASELINE_CAP, "a baseline") {
        Err(message) => Err(message),
        Ok(None) if req.require_baseline => Err(format!(
            "no baseline at {baseline_path}: run `velaris bless` in the workspace to write one from the current surface, review it, and commit it"
        )),
        Ok(None) => Ok(None),
        Ok(Some(text)) => baseline::parse(&text, &baseline_path).map(Some).map_err(|e| e.to_string()),
    };
    match head_baseline {
        Err(message) => report.state = State::Failed { message, integrity: false },
        Ok(None) => {}
        Ok(Some(head_b)) => {
            gate(&mut report, &dir, &tree, repo, base, &head_b, req);
            compare_baselines(&mut report, repo, base, &head_b);
        }
    }

    // The dependency review of the workspace's lockfile.
    if let (Some(base), true) = (base, req.lockfile_changed) {
        let config = depsdiff::Config {
            input: Input::Git { base: base.to_string(), head: Some(head.to_string()), lockfiles: vec![lock_rel] },
            // git runs in the repository; a confined run reads cargo configuration from the
            // confinement's directory whatever this is.
            cwd: if req.head_tree.is_some() { repo.root().to_path_buf() } else { dir.clone() },
            fetch: req.fetch.clone(),
            diff: DiffOptions { context: 3, want_patch: true, ..DiffOptions::default() },
            // The target the gate checked (the `target` input, else the baseline's), so that
            // the review and the gate speak of the same build.
            targets: vec![report.target.clone().unwrap_or_else(|| engine::DEFAULT_TARGET.to_string())],
            all_targets: false,
            capabilities: true,
            advisory_db: None,
            publication: req.publication.clone(),
        };
        match depsdiff::run(&config) {
            Ok(r) => report.deps = Some(r),
            Err(e) => report.deps_error = Some((error_chain(&e), e.is_integrity())),
        }
    }
    report.failed = report.failures(fail_on);
    report
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// Refuse a workspace written from untrusted git objects whose members or path packages lie
/// outside the tree (`path = "/home/runner/..."`): on the trusted side nothing outside the
/// head's tree is read as its code.
fn confined_to(tree: &Path, root: &Path) -> Result<(), String> {
    let tree = std::fs::canonicalize(tree).map_err(|e| format!("failed to find {}: {e}", tree.display()))?;
    let ws = crate::workspace::Workspace::load(root).map_err(|e| crate::message::chain(&e))?;
    for p in ws.local_packages() {
        let dir = std::fs::canonicalize(&p.dir).unwrap_or_else(|_| p.dir.clone());
        if !dir.starts_with(&tree) {
            return Err(format!(
                "package {} is read from {}, outside the pull request's tree: the workflow_run side reads nothing of the pull request's code outside it",
                crate::text::escape::line(&p.id.name),
                crate::text::escape::line(&p.dir.display().to_string())
            ));
        }
    }
    Ok(())
}

fn gate(report: &mut WorkspaceReport, dir: &Path, tree: &Path, repo: &Repo, base: Option<&str>, head_b: &Baseline, req: &Request) {
    // The grants were reviewed for the baseline's target: check that one unless told otherwise.
    let target = req.target.clone().or_else(|| head_b.target.clone()).unwrap_or_else(|| engine::DEFAULT_TARGET.to_string());
    report.target = Some(target.clone());
    let root = match std::fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => {
            report.state = State::Failed { message: format!("failed to find the workspace {}: {e}", report.path), integrity: false };
            return;
        }
    };
    if req.head_tree.is_some() {
        if let Err(message) = confined_to(tree, &root) {
            report.state = State::Failed { message, integrity: false };
            return;
        }
    }
    let analysis = match engine::run(&engine::Config { root: root.clone(), target: target.clone(), fetch: req.fetch.clone() }) {
        Ok(a) => a,
        Err(e) => {
            report.state = State::Failed { message: error_chain(&e), integrity: e.is_integrity() };
            return;
        }
    };
    let outcome = baseline::check(head_b, &analysis.surface);
    for w in &outcome.widened {
        for e in &w.findings {
            if report.excerpts.len() >= MAX_EXCERPTS {
                break;
            }
            let key = (e.crate_name.clone(), e.version.clone(), e.finding.file.clone(), e.finding.line);
            if report.excerpts.contains_key(&key) {
                continue;
            }
            if let Some(l) = analysis.source_line(&e.crate_name, &e.version, &e.finding.file, e.finding.line) {
                report.excerpts.insert(key, l);
            }
        }
    }
    if let Ok(ws) = crate::workspace::Workspace::load(&root) {
        for p in ws.local_packages() {
            if let Some(rel) = relative_to(tree, &p.dir) {
                report.local_dirs.insert((p.id.name.clone(), p.id.version.clone()), rel);
            }
        }
    }
    // What the change adds to the members' own uses, granted or not.
    if let Some(base) = base {
        let dir_in_repo = if report.path == "." { String::new() } else { report.path.clone() };
        let since = base[..base.len().min(12)].to_string();
        report.new_uses = Some(crate::uses::added_since(repo, base, &dir_in_repo, &since, &root, &analysis.surface, &target, &req.fetch));
    }
    report.state = State::Checked(Box::new(outcome));
}

fn compare_baselines(report: &mut WorkspaceReport, repo: &Repo, base: Option<&str>, head_b: &Baseline) {
    let Some(base) = base else {
        report.additions_note = Some("no base commit to compare the baseline with".into());
        return;
    };
    match repo.read_at(base, &report.baseline_path) {
        Err(e) => report.additions_note = Some(format!("could not read the base's baseline: {e}")),
        Ok(None) => {
            report.additions = Some(baseline::additions(None, head_b));
            report.additions_note = Some("the base has no baseline: every grant is new".into());
        }
        Ok(Some(text)) => match baseline::parse(&text, &format!("{}@base", report.baseline_path)) {
            Ok(b) => report.additions = Some(baseline::additions(Some(&b), head_b)),
            Err(e) => {
                report.additions_note = Some(format!("the base's baseline does not parse, so additions are not shown: {e}"))
            }
        },
    }
}
