//! The pull-request comment and the job-summary section of one workspace, as markdown.
//!
//! Both are the same document under different budgets: a verdict line first (holds, widened
//! with the program and capability, or why nothing could be checked) with the `fail-on`
//! conditions the workspace trips, then the grants the change adds to the baseline, the widened
//! grants with their evidence (file:line, resolved path, source line), the dependency review as
//! `velaris deps-diff --format markdown` renders it ([`crate::report::render_markdown`]: the
//! headline with coverage and verified counts, the risk-ordered table, capability changes per
//! package with their evidence, flags with theirs, the programs and the baseline, file lists,
//! then diffs), stale grants.
//!
//! The budget keeps, in this order: the verdict, the baseline additions, a line for every
//! widened grant (counted when there are too many); then evidence and the dependency review
//! share what is left. The dependency review's renderer degrades within the room it is given:
//! diffs go first, then file lists, then hunks, then routine rows; its headline, table, flags
//! and capability changes stay. The comment links to the run's summary for the rest.
//!
//! Every string taken from the analysed code, a dependency or the baseline goes through
//! [`crate::text::escape`]: names, paths, versions and source lines into code spans, prose
//! (reasons, what trips a condition) escaped inline, multi-line messages into fenced blocks.

use std::fmt::Write;

use super::budget::{Budget, COMMENT_BUDGET, COMMENT_LIMIT, chars};
use super::review::{State, WorkspaceReport};
use crate::baseline::{Evidence, Subject, Widening};
use crate::gate::{Condition, FailOn, Failure};
use crate::text::escape::{code_span, code_span_in_table, markdown_code_block, markdown_inline};
use crate::report::{self, MarkdownOptions};
use crate::text;
use crate::surface::Scope;

/// What is the same for every workspace of a run.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub event: &'a str,
    pub base: Option<&'a str>,
    pub head: &'a str,
    /// Something to know about the range (a first push, a shallow clone without merge base).
    pub range_note: Option<&'a str>,
    pub fail_on: &'a FailOn,
    pub run_url: Option<&'a str>,
    /// The run reviews several workspaces.
    pub several: bool,
}

const CAVEATS: &str = "https://github.com/velaris/ratchet/blob/main/docs/caveats.md";

/// Room set aside for the "and N more" line of each widening shown.
const NOTE: usize = 200;

/// Longest error message shown, in characters.
const MESSAGE_MAX: usize = 2_000;

/// Longest source line shown, in characters.
const EXCERPT_MAX: usize = 200;

/// What trips a `fail-on` condition, shown under the verdict: at most this many, the rest
/// counted.
const FAILURE_LINES: usize = 5;

fn cut(s: &str, max: usize) -> String {
    if chars(s) <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}

fn subject_md(s: &Subject) -> String {
    format!("{} {}", s.kind(), code_span(s.name()))
}

fn caps_md(w: &Widening) -> String {
    w.what()
        .into_iter()
        .map(|(c, api)| match api {
            Some(a) => format!("`{c}` via {}", code_span(a)),
            None => format!("`{c}`"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many uses the change adds to the workspace's members.
fn new_use_count(ws: &WorkspaceReport) -> usize {
    ws.new_uses.as_ref().map_or(0, |n| n.uses.len())
}

fn short_sha(s: &str) -> String {
    if crate::git::is_object_id(s) { s[..12].to_string() } else { s.to_string() }
}

/// The first line after the marker and the title.
pub fn verdict(ws: &WorkspaceReport) -> String {
    let baseline = code_span(&ws.baseline_path);
    match &ws.state {
        State::Failed { integrity: true, .. } => "⛔ **Integrity failure**: a package does not match its checksum or its archive breaks the unpacking rules; nothing it contains was analysed.".into(),
        State::Failed { .. } => "⚠️ **Not checked**: velaris could not review this workspace (below).".into(),
        State::NoBaseline => format!(
            "ℹ️ **No baseline**: there is no {baseline} here, so no grant is checked (`velaris bless` writes one); dependency review only."
        ),
        State::Checked(c) if c.holds => {
            let mut s = format!("✅ **Holds**: the code uses nothing {baseline} does not grant.");
            match new_use_count(ws) {
                0 => {}
                n => s.push_str(&format!(
                    " 🔎 The change adds {} to the workspace's own code, within its grants: review {} (below).",
                    text::plural(n as u64, "capability use", "capability uses"),
                    if n == 1 { "it" } else { "them" }
                )),
            }
            if c.stale() {
                s.push_str(" The baseline is stale: `velaris bless` narrows it.");
            }
            s
        }
        State::Checked(c) => {
            let parts: Vec<String> = c
                .widened
                .iter()
                .take(3)
                .map(|w| {
                    if w.new_subject {
                        format!("new {} uses {}", subject_md(&w.subject), caps_md(w))
                    } else {
                        format!("{} uses {}", subject_md(&w.subject), caps_md(w))
                    }
                })
                .collect();
            let more = c.widened.len().saturating_sub(3);
            let more = match more {
                0 => String::new(),
                1 => ", and 1 more grant".to_string(),
                n => format!(", and {} more grants", text::thousands(n as u64)),
            };
            format!("❌ **Widened**: {}{more}, not granted by {baseline}.", parts.join("; "))
        }
    }
}

fn header(ws: &WorkspaceReport, ctx: &Context<'_>, marker: Option<&str>, level: &str) -> String {
    let mut out = String::new();
    if let Some(m) = marker {
        out.push_str(m);
        out.push('\n');
    }
    let _ = write!(out, "{level} velaris ratchet");
    if ctx.several || ws.path != "." {
        let _ = write!(out, " · {}", code_span(&ws.path));
    }
    out.push_str("\n\n");
    out.push_str(&verdict(ws));
    out.push('\n');
    if let Some(adds) = ws.additions.as_ref().filter(|a| !a.is_empty()) {
        let n: usize = adds.iter().map(|a| a.capabilities.len()).sum();
        let fails = if ctx.fail_on.contains(Condition::BaselineWidened) { " (`fail-on: baseline-widened`)" } else { "" };
        let _ = writeln!(
            out,
            "\n📝 This change adds {} to {}{fails}: review them first (below).",
            text::plural(n as u64, "grant", "grants"),
            code_span(&ws.baseline_path)
        );
    }
    out.push_str(&failures_md(ws));
    if let State::Failed { message, .. } = &ws.state {
        out.push('\n');
        out.push_str(&markdown_code_block("", &cut(message, MESSAGE_MAX)));
    }
    if let Some((message, integrity)) = &ws.deps_error {
        let what = if *integrity { "⛔ **The dependency review found an integrity failure**:" } else { "⚠️ **The dependency review failed**:" };
        let _ = writeln!(out, "\n{what}\n");
        out.push_str(&markdown_code_block("", &cut(message, MESSAGE_MAX)));
    }
    let range = match ctx.base {
        Some(b) => format!("{}..{}", code_span(&short_sha(b)), code_span(&short_sha(ctx.head))),
        None => code_span(&short_sha(ctx.head)),
    };
    let target = ws.target.as_deref().map(|t| format!(" · target {}", code_span(t))).unwrap_or_default();
    let _ = writeln!(out, "\n<sub>{} {range}{target} · fail-on: {}</sub>", markdown_inline(ctx.event), code_span(&ctx.fail_on.to_string()));
    if let Some(n) = ctx.range_note {
        let _ = writeln!(out, "\n_{n}_");
    }
    out
}

/// The `fail-on` conditions the workspace trips, under the verdict: each dependency condition
/// with what trips it (the widened grants and the baseline additions have sections of their
/// own below).
fn failures_md(ws: &WorkspaceReport) -> String {
    if ws.failed.is_empty() {
        return String::new();
    }
    let names: Vec<String> = ws.failed.iter().map(|f| format!("`{}`", f.condition)).collect();
    let mut out = format!("\n🚫 **Fails** `fail-on`: {}.\n", names.join(", "));
    let detailed: Vec<&Failure> = ws.failed.iter().filter(|f| f.condition.is_dependency()).collect();
    if !detailed.is_empty() {
        out.push('\n');
    }
    for f in detailed {
        let shown: Vec<String> = f.what.iter().take(FAILURE_LINES).map(|w| markdown_inline(&cut(w, EXCERPT_MAX))).collect();
        let more = f.what.len().saturating_sub(FAILURE_LINES);
        let more = if more > 0 { format!("; and {} more", text::thousands(more as u64)) } else { String::new() };
        let _ = writeln!(out, "- `{}`: {}{more}", f.condition, shown.join("; "));
    }
    out
}

fn footer(ctx: &Context<'_>, for_comment: bool) -> String {
    let mut parts = vec![format!("velaris {}", env!("CARGO_PKG_VERSION"))];
    if let (true, Some(u)) = (for_comment, ctx.run_url) {
        parts.push(format!("[run summary]({u})"));
    }
    parts.push(format!("[what the analysis can miss]({CAVEATS})"));
    format!("\n---\n<sub>{}</sub>\n", parts.join(" · "))
}

fn additions_section(ws: &WorkspaceReport, b: &mut Budget, cap: usize) -> String {
    let Some(adds) = ws.additions.as_ref().filter(|a| !a.is_empty()) else { return String::new() };
    let mut out = format!("\n#### Grants this change adds to {}\n\n", code_span(&ws.baseline_path));
    if let Some(n) = &ws.additions_note {
        let _ = writeln!(out, "_{}_\n", markdown_inline(n));
    }
    out.push_str("| grant | capability | reason |\n| --- | --- | --- |\n");
    if !b.take(b.size(&out) + NOTE) {
        return String::new();
    }
    let mut used = 0;
    let mut left_out = 0usize;
    for a in adds {
        let who = format!(
            "{} {}{}",
            a.subject.kind(),
            code_span_in_table(a.subject.name()),
            if a.new_subject { " (new)" } else { "" }
        );
        let reason_of = |c: &crate::surface::Capability| {
            a.reasons.get(c).or(a.reason.as_ref()).map(|r| markdown_inline(r)).unwrap_or_else(|| "_no reason given_".into())
        };
        let mut rows: Vec<String> = a.capabilities.iter().map(|c| format!("| {who} | `{c}` | {} |\n", reason_of(c))).collect();
        for (c, apis) in &a.apis {
            rows.extend(apis.iter().map(|api| format!("| {who} | `{c}` via {} | {} |\n", code_span_in_table(api), reason_of(c))));
        }
        rows.extend(a.unpinned.iter().map(|c| format!("| {who} | `{c}` via any API (pin removed) | {} |\n", reason_of(c))));
        for row in rows {
            let n = b.size(&row);
            if used + n <= cap && b.take(n) {
                used += n;
                out.push_str(&row);
            } else {
                left_out += 1;
            }
        }
    }
    if left_out > 0 {
        let _ = writeln!(out, "\n…and {} more {}.", text::thousands(left_out as u64), if left_out == 1 { "added grant" } else { "added grants" });
    }
    out
}

fn widening_head(w: &Widening, ws: &WorkspaceReport) -> String {
    let baseline = code_span(&ws.baseline_path);
    if w.new_subject {
        format!("\n**new {}** is not in {baseline} and uses {}\n\n", subject_md(&w.subject), caps_md(w))
    } else {
        let at = w.at.map(|a| format!(" (entry at line {})", a.line)).unwrap_or_default();
        format!("\n**{}** uses what {baseline} does not grant it{at}: {}\n\n", subject_md(&w.subject), caps_md(w))
    }
}

fn finding_line(e: &Evidence, ws: &WorkspaceReport) -> String {
    let f = &e.finding;
    let mut s = format!(
        "- `{}` in {} at {}: {}",
        f.capability,
        code_span(&format!("{} {}", e.crate_name, e.version)),
        code_span(&format!("{}:{}:{}", f.file, f.line, f.column)),
        code_span(&f.path),
    );
    if f.scope == Scope::Build {
        s.push_str(" (build time)");
    }
    let key = (e.crate_name.clone(), e.version.clone(), f.file.clone(), f.line);
    if let Some(src) = ws.excerpts.get(&key) {
        let _ = write!(s, " — {}", code_span(&cut(src.trim(), EXCERPT_MAX)));
    }
    s.push('\n');
    s
}

fn stale_section(ws: &WorkspaceReport) -> String {
    let Some(c) = ws.check() else { return String::new() };
    let mut out = String::new();
    if let Some(t) = &c.target_mismatch {
        let _ = writeln!(
            out,
            "\n⚠️ The baseline was reviewed for target {}, the code was analysed for {}; `velaris bless` records the new target.",
            code_span(&t.granted),
            code_span(&t.analysed)
        );
    }
    if !c.narrowed.is_empty() {
        let _ = write!(out, "\n<details><summary>Stale grants: {} (<code>velaris bless</code> narrows them)</summary>\n\n", text::thousands(c.narrowed.len() as u64));
        for n in &c.narrowed {
            let mut caps: Vec<String> = n.capabilities.iter().map(|c| format!("`{c}`")).collect();
            for (c, apis) in &n.apis {
                caps.extend(apis.iter().map(|a| format!("`{c}` via {}", code_span(a))));
            }
            if n.gone {
                let _ = writeln!(out, "- {} is gone", subject_md(&n.subject));
            } else {
                let _ = writeln!(out, "- {} no longer uses {}", subject_md(&n.subject), caps.join(", "));
            }
        }
        out.push_str("\n</details>\n");
    }
    out
}

/// One workspace's document under `limit` characters.
fn document(ws: &WorkspaceReport, ctx: &Context<'_>, mut b: Budget, marker: Option<&str>, for_comment: bool, note: Option<&str>) -> String {
    let limit = b.left();
    let mut head = header(ws, ctx, marker, if for_comment { "###" } else { "##" });
    if let Some(n) = note {
        head.push('\n');
        head.push_str(n);
        head.push('\n');
    }
    let foot = footer(ctx, for_comment);
    b.take(b.size(&head) + b.size(&foot));

    let additions = additions_section(ws, &mut b, limit / 4);

    // A line for every widened grant, as far as a quarter of the budget goes.
    let widenings: &[Widening] = ws.check().map(|c| &c.widened[..]).unwrap_or(&[]);
    let title = "\n#### Widened grants\n";
    let mut heads: Vec<(usize, String)> = Vec::new();
    let mut heads_left_out = 0usize;
    if !widenings.is_empty() && b.take(b.size(title) + NOTE) {
        let mut used = 0;
        for (i, w) in widenings.iter().enumerate() {
            let h = widening_head(w, ws);
            let n = b.size(&h) + NOTE;
            if used + n <= limit / 4 && b.take(n) {
                used += n;
                heads.push((i, h));
            } else {
                heads_left_out += 1;
            }
        }
    }

    // The uses the change adds to the members, as far as another quarter goes.
    let mut uses_section = String::new();
    if let Some(nu) = ws.new_uses.as_ref().filter(|n| !n.uses.is_empty() || n.note.is_some()) {
        let intro = crate::baseline::render::new_uses_intro(nu);
        if b.take(b.size(&intro) + NOTE) {
            uses_section.push_str(&intro);
            let mut used = 0;
            let mut shown = 0;
            for u in &nu.uses {
                let l = crate::baseline::render::new_use_line(u);
                let n = b.size(&l);
                if used + n <= limit / 4 && b.take(n) {
                    used += n;
                    shown += 1;
                    uses_section.push_str(&l);
                } else {
                    break;
                }
            }
            if shown < nu.uses.len() {
                let _ = writeln!(
                    uses_section,
                    "- …and {} more: {}",
                    text::thousands((nu.uses.len() - shown) as u64),
                    if for_comment { "the run summary and `velaris check --base` list them" } else { "`velaris check --base` and the report file list them" }
                );
            }
        }
    }

    // Evidence and the dependency review share the rest; the dependency table comes first.
    let lines: Vec<Vec<String>> = heads.iter().map(|(i, _)| widenings[*i].findings.iter().map(|e| finding_line(e, ws)).collect()).collect();
    let evidence_total: usize = lines.iter().flatten().map(|l| b.size(l)).sum();
    let reserve = evidence_total.min(b.left() / 2);
    let mut deps = String::new();
    if let Some(r) = &ws.deps {
        // The review's own renderer keeps its headline, table, capability changes and flags,
        // and drops diffs before file lists, within the room it is given.
        let room = b.left().saturating_sub(reserve + 1);
        let text = format!("\n{}", report::render_markdown(r, &MarkdownOptions { diffs: true, budget: room }));
        if !b.push(&mut deps, &text) {
            let note = format!(
                "\n_The dependency review ({}) did not fit here{}._\n",
                text::plural(r.packages.len() as u64, "package", "packages"),
                if for_comment { ": see the run summary" } else { ": see the report file" }
            );
            b.push(&mut deps, &note);
        }
    }

    // Evidence, a line of each widening in turn.
    let mut shown: Vec<Vec<&str>> = vec![Vec::new(); lines.len()];
    let mut round = 0;
    loop {
        let mut any = false;
        let mut full = false;
        for (k, ls) in lines.iter().enumerate() {
            if let Some(l) = ls.get(round) {
                any = true;
                if b.take(b.size(l)) {
                    shown[k].push(l);
                } else {
                    full = true;
                }
            }
        }
        if !any || full {
            break;
        }
        round += 1;
    }

    let stale = stale_section(ws);
    let stale = if b.take(b.size(&stale)) { stale } else { String::new() };

    let mut out = head;
    out.push_str(&additions);
    if !widenings.is_empty() {
        out.push_str(title);
        for (k, (i, h)) in heads.iter().enumerate() {
            out.push_str(h);
            for l in &shown[k] {
                out.push_str(l);
            }
            let total = widenings[*i].findings.len();
            let left = total - shown[k].len();
            if left > 0 {
                let where_ = match (for_comment, ctx.run_url) {
                    (true, Some(u)) => format!("the [run summary]({u}) and `velaris check` list them"),
                    _ => "`velaris check` and the report file list them all".to_string(),
                };
                let _ = writeln!(out, "- …and {} more {}: {where_}", text::thousands(left as u64), if left == 1 { "finding" } else { "findings" });
            }
        }
        if heads_left_out > 0 {
            let _ = writeln!(
                out,
                "\n…and {} more {}, left out to stay within the size limit.",
                text::thousands(heads_left_out as u64),
                if heads_left_out == 1 { "widened grant" } else { "widened grants" }
            );
        }
    }
    out.push_str(&uses_section);
    out.push_str(&deps);
    out.push_str(&stale);
    out.push_str(&foot);
    out
}

/// The pull-request comment: `marker` first, at most [`COMMENT_BUDGET`] characters (the short
/// form if even that cannot hold it).
pub fn comment(ws: &WorkspaceReport, ctx: &Context<'_>, marker: &str) -> String {
    let doc = document(ws, ctx, Budget::new(COMMENT_BUDGET), Some(marker), true, None);
    if chars(&doc) <= COMMENT_LIMIT { doc } else { short_comment(ws, ctx, marker) }
}

/// The comment reduced to its verdict, the conditions that fail the run and a link to the run's
/// summary, for when GitHub refuses the full one.
pub fn short_comment(ws: &WorkspaceReport, ctx: &Context<'_>, marker: &str) -> String {
    let mut out = format!("{marker}\n### velaris ratchet");
    if ctx.several || ws.path != "." {
        let _ = write!(out, " · {}", code_span(&ws.path));
    }
    let _ = write!(out, "\n\n{}\n{}\nThe full report did not fit in a comment", cut(&verdict(ws), 4_000), failures_md(ws));
    match ctx.run_url {
        Some(u) => {
            let _ = writeln!(out, ": see the [run summary]({u}).");
        }
        None => out.push_str(": see the run's summary.\n"),
    }
    out.push_str(&footer(ctx, true));
    out
}

/// The workspace's section of the job summary, under `limit` bytes; `note` (markdown) goes
/// under the verdict.
pub fn summary(ws: &WorkspaceReport, ctx: &Context<'_>, limit: usize, note: Option<&str>) -> String {
    document(ws, ctx, Budget::bytes(limit), None, false, note)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::baseline::{CheckOutcome, Evidence};
    use crate::surface::{Capability, Finding};

    fn report_with(widened: Vec<Widening>) -> WorkspaceReport {
        WorkspaceReport {
            path: ".".into(),
            baseline_path: "velaris.capabilities".into(),
            state: State::Checked(Box::new(CheckOutcome {
                origin: "velaris.capabilities".into(),
                holds: widened.is_empty(),
                widened,
                narrowed: Vec::new(),
                target_mismatch: None,
            })),
            target: None,
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

    fn crate_widening(i: usize) -> Widening {
        let finding = Finding {
            capability: Capability::NetConnect,
            scope: Scope::Runtime,
            file: "src/lib.rs".into(),
            line: 1,
            column: 1,
            path: "std::net::TcpStream::connect".into(),
            chain: Vec::new(),
            expanded_from: None,
            through_trait: false,
        };
        Widening {
            subject: Subject::Crate(format!("dependency-number-{i:05}")),
            capabilities: BTreeSet::from([Capability::NetConnect]),
            findings: vec![Evidence { crate_name: format!("dependency-number-{i:05}"), version: "1.0.0".into(), finding, via: vec![] }],
            apis: Default::default(),
            new_subject: true,
            at: None,
        }
    }

    fn ctx(fail_on: &FailOn) -> Context<'_> {
        Context { event: "pull_request", base: None, head: "HEAD", range_note: None, fail_on, run_url: Some("https://x/run"), several: false }
    }

    #[test]
    fn too_many_widened_grants_are_counted_within_the_limit() {
        let ws = report_with((0..5_000).map(crate_widening).collect());
        let f = FailOn::widened();
        let body = comment(&ws, &ctx(&f), "<!-- m -->");
        assert!(chars(&body) <= COMMENT_BUDGET, "{}", chars(&body));
        assert!(body.contains(", and 4,997 more grants, not granted"), "the verdict counts: {}", &body[..600]);
        let listed = body.matches("**new crate `dependency-number-").count();
        assert!(listed > 50, "{listed}");
        assert!(body.contains(&format!("…and {} more widened grants, left out", text::thousands((5_000 - listed) as u64))), "the rest is counted");
    }

    #[test]
    fn the_conditions_that_fail_come_under_the_verdict_escaped_and_counted() {
        let mut ws = report_with(Vec::new());
        let what: Vec<String> = (0..7).map(|i| format!("evil{i} 1.0.0: @octocat #1 <img src=x> [x](https://evil.example)")).collect();
        ws.failed = vec![
            Failure { condition: Condition::BaselineWidened, what: vec!["program app: fs.read".into()] },
            Failure { condition: Condition::BuildScript, what },
        ];
        let f = FailOn::parse("baseline-widened build-script").unwrap();
        let body = comment(&ws, &ctx(&f), "<!-- m -->");
        let at = body.find("🚫 **Fails** `fail-on`: `baseline-widened`, `build-script`.\n\n- `build-script`: evil0 1.0.0\\: ").unwrap_or_else(|| panic!("{body}"));
        assert!(at > body.find("**Holds**").unwrap(), "{body}");
        assert!(body.contains("evil4 1.0.0") && !body.contains("evil5 1.0.0") && body.contains("; and 2 more\n"), "{body}");
        assert!(!body.contains("@octocat") && !body.contains("<img") && !body.contains("[x](") && !body.contains("evil.example)"), "{body}");
        assert!(!body.contains("- `baseline-widened`"), "its grants have their own section: {body}");
    }

    #[test]
    fn a_holding_workspace_is_short() {
        let ws = report_with(Vec::new());
        let f = FailOn::widened();
        let body = comment(&ws, &ctx(&f), "<!-- m -->");
        assert!(body.starts_with("<!-- m -->\n### velaris ratchet\n\n✅ **Holds**"), "{body}");
        assert!(!body.contains("Widened grants"));
        assert!(body.ends_with("[what the analysis can miss](https://github.com/velaris/ratchet/blob/main/docs/caveats.md)</sub>\n"), "{body}");
    }
}
