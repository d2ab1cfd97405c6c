//! Showing a [`CheckOutcome`]: for a terminal, as markdown (a pull-request comment), as JSON.
//!
//! Names, versions, file names and resolved paths come from the analysed code: they are escaped
//! for the terminal ([`escape::line`]) and for markdown ([`escape::markdown_inline`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use anstyle::{AnsiColor, Style};
use serde::Serialize;

use super::{CheckOutcome, Evidence, Narrowing, Subject, Widening};
use crate::text::{escape, thousands};
use crate::surface::{Capability, Scope};
use crate::uses::{NewUses, Use};

/// The `schema` of [`json`].
pub const SCHEMA: &str = "velaris/check/v1";

/// Findings shown per widened capability without `explain`.
const FIRST_FINDINGS: usize = 1;
/// Findings listed per widening in markdown.
const MARKDOWN_FINDINGS: usize = 50;

const BOLD: Style = Style::new().bold();
const RED: Style = AnsiColor::Red.on_default().bold();
const YELLOW: Style = AnsiColor::Yellow.on_default().bold();
const CYAN: Style = AnsiColor::Cyan.on_default().bold();
const DIM: Style = Style::new().dimmed();

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

fn cap_list(caps: &BTreeSet<Capability>) -> String {
    caps.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

fn subject_line(s: &Subject) -> String {
    format!("{} `{}`", s.kind(), escape::line(s.name()))
}

fn subject_md(s: &Subject) -> String {
    format!("{} **{}**", s.kind(), escape::markdown_inline(s.name()))
}

fn place(e: &Evidence) -> String {
    format!("{}:{}:{}", e.finding.file, e.finding.line, e.finding.column)
}

fn scope_note(e: &Evidence) -> &'static str {
    match e.finding.scope {
        Scope::Runtime => "",
        Scope::Build => " (build time)",
    }
}

fn widened_count(o: &CheckOutcome) -> String {
    let n = o.widened.len() as u64;
    format!("{} {}", thousands(n), if n == 1 { "grant" } else { "grants" })
}

/// What a rendering shows besides the outcome.
#[derive(Debug, Clone, Copy, Default)]
pub struct View<'a> {
    /// Every finding with its dependency path (`velaris check`), not the first per capability.
    pub explain: bool,
    /// `--strict`: a stale baseline fails, and the verdict says so.
    pub strict: bool,
    /// The capability uses the change adds to the workspace's members (`check --base`).
    pub new_uses: Option<&'a NewUses>,
}

/// Whether the gate passes under `view`: nothing widened, and not stale under `--strict`.
pub fn passes(o: &CheckOutcome, view: &View) -> bool {
    o.holds && !(view.strict && o.stale())
}

/// The command that lists every finding of one widened capability.
fn explain_hint(s: &Subject, cap: Capability) -> String {
    match s {
        Subject::Program(n) => format!("`velaris explain {} {cap}`", escape::line(n)),
        Subject::Crate(n) => format!("`velaris explain --crate {} {cap}`", escape::line(n)),
    }
}

/// `crate x no longer uses ffi; program y is gone`: what makes a baseline stale, in one line.
fn stale_summary(o: &CheckOutcome) -> String {
    let mut parts: Vec<String> = o.narrowed.iter().map(|n| format!("{} {}", subject_line(&n.subject), narrowing_text(n))).collect();
    if let Some(t) = &o.target_mismatch {
        parts.push(format!("it names target {}, the code was analysed for {}", escape::line(&t.granted), escape::line(&t.analysed)));
    }
    const SHOWN: usize = 3;
    let more = parts.len().saturating_sub(SHOWN);
    parts.truncate(SHOWN);
    let mut s = parts.join("; ");
    if more > 0 {
        s.push_str(&format!("; and {} more", thousands(more as u64)));
    }
    s
}

fn narrowing_text(n: &Narrowing) -> String {
    if n.gone {
        return "is gone".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    if !n.capabilities.is_empty() {
        parts.push(cap_list(&n.capabilities));
    }
    for (c, apis) in &n.apis {
        parts.extend(apis.iter().map(|a| format!("{c} via {}", escape::line(a))));
    }
    format!("no longer uses {}", parts.join(", "))
}

/// The terminal rendering. `explain` lists every finding with its dependency path; without it
/// each widened capability shows its first finding and a count of the others.
pub fn human(o: &CheckOutcome, explain: bool) -> String {
    human_with(o, &View { explain, ..View::default() })
}

/// The terminal rendering under `view`: the widenings, warnings and notes, the uses the change
/// adds (when asked), and last the verdict, which says what failed.
pub fn human_with(o: &CheckOutcome, view: &View) -> String {
    let explain = view.explain;
    let origin = escape::line(&o.origin);
    let mut out = String::new();
    for w in &o.widened {
        human_widening(&mut out, w, &origin, explain);
    }
    if let Some(t) = &o.target_mismatch {
        let _ = writeln!(
            out,
            "{}: {origin} was reviewed for target {}, the code was analysed for {}; `velaris bless` records the new target",
            paint(YELLOW, "warning"),
            escape::line(&t.granted),
            escape::line(&t.analysed),
        );
    }
    for n in &o.narrowed {
        let at = n.at.map(|a| format!(" at {origin}:{a}")).unwrap_or_default();
        let what = if n.gone {
            let granted = if n.capabilities.is_empty() { "nothing".to_string() } else { cap_list(&n.capabilities) };
            format!("is gone (it was granted {granted}{at}); `velaris bless` removes its entry")
        } else {
            format!("{}{at}; `velaris bless` narrows the grant", narrowing_text(n))
        };
        let _ = writeln!(out, "{}: {} {what}", paint(CYAN, "note"), subject_line(&n.subject));
    }
    if let Some(nu) = view.new_uses {
        human_new_uses(&mut out, nu);
    }
    if !o.holds {
        let _ = writeln!(
            out,
            "{}: {} widened; if they are intended, run `velaris bless` and commit {origin} for review with the change",
            paint(RED, "failed"),
            widened_count(o),
        );
    } else if view.strict && o.stale() {
        let _ = writeln!(
            out,
            "{}: --strict and {origin} is stale ({}): run `velaris bless` to narrow it, and commit it",
            paint(RED, "failed"),
            stale_summary(o),
        );
    } else {
        let _ = write!(out, "{}: the code uses nothing {origin} does not grant", paint(BOLD, "holds"));
        if o.stale() {
            let _ = write!(out, " (the file is stale: run `velaris bless` to narrow it)");
        }
        out.push('\n');
    }
    out
}

fn use_place(u: &Use) -> String {
    format!("{}:{}:{}", u.finding.file, u.finding.line, u.finding.column)
}

fn human_new_uses(out: &mut String, nu: &NewUses) {
    let since = escape::line(&nu.since);
    if let Some(note) = &nu.note {
        let _ = writeln!(out, "{}: new uses since {since} not listed: {}", paint(CYAN, "note"), escape::line(note));
        return;
    }
    if nu.uses.is_empty() {
        let _ = writeln!(out, "{}: the workspace's members use nothing new since {since}", paint(CYAN, "note"));
        return;
    }
    let n = nu.uses.len() as u64;
    let _ = writeln!(
        out,
        "{}: {} {} the members add since {since} (each granted or not, a reviewer should see it):",
        paint(YELLOW, "new uses"),
        thousands(n),
        if n == 1 { "capability use" } else { "capability uses" }
    );
    for u in &nu.uses {
        let item = u.item.as_deref().map(|i| format!(" in {}", escape::line(i))).unwrap_or_default();
        let scope = match u.finding.scope {
            Scope::Runtime => "",
            Scope::Build => " (build time)",
        };
        let _ = writeln!(
            out,
            "  {}  {} {}  {}{item}  {}{scope}",
            u.finding.capability,
            escape::line(&u.krate),
            escape::line(&u.version),
            escape::line(&use_place(u)),
            escape::line(&u.finding.path_and_chain()),
        );
        if let Some(src) = &u.source {
            let _ = writeln!(out, "  {:>7} | {}", u.finding.line, escape::source(src));
        }
    }
}

fn human_widening(out: &mut String, w: &Widening, origin: &str, explain: bool) {
    let what = escape::line(&w.summary());
    if w.new_subject {
        let _ = writeln!(
            out,
            "{}: new {} is not in {origin} and uses: {what}",
            paint(RED, "error"),
            subject_line(&w.subject)
        );
    } else {
        let verb = if w.capabilities.is_empty() { "uses APIs" } else { "uses capabilities" };
        let _ = writeln!(
            out,
            "{}: {} {verb} {origin} does not grant: {what}",
            paint(RED, "error"),
            subject_line(&w.subject)
        );
        if let Some(at) = w.at {
            let _ = writeln!(out, "  {} {origin}:{at}", paint(DIM, "-->"));
        }
    }
    let what = w.what();
    let label_of = |c: Capability, api: Option<&str>| match api {
        Some(a) => format!("{c} via {}", escape::line(a)),
        None => c.to_string(),
    };
    let width = what.iter().map(|(c, a)| label_of(*c, *a).chars().count()).max().unwrap_or(0);
    for (cap, api) in what {
        let label_text = label_of(cap, api);
        let findings: Vec<&Evidence> = w
            .findings
            .iter()
            .filter(|e| e.finding.capability == cap && api.is_none_or(|a| e.finding.path == a))
            .filter(|e| api.is_some() || w.capabilities.contains(&e.finding.capability))
            .collect();
        if findings.is_empty() {
            let _ = writeln!(out, "  {label_text:<width$}  {}", paint(DIM, "(no finding recorded)"));
            continue;
        }
        let shown = if explain { findings.len() } else { findings.len().min(FIRST_FINDINGS) };
        for (i, e) in findings.iter().take(shown).enumerate() {
            let label = if i == 0 { label_text.as_str() } else { "" };
            let _ = writeln!(
                out,
                "  {label:<width$}  {} {}  {}  {}{}",
                escape::line(&e.crate_name),
                escape::line(&e.version),
                escape::line(&place(e)),
                escape::line(&e.finding.path_and_chain()),
                scope_note(e),
            );
            if explain && !e.via.is_empty() {
                let via: Vec<String> = e.via.iter().map(|v| escape::line(v)).collect();
                let _ = writeln!(out, "  {:<width$}    {} {}", "", paint(DIM, "via"), via.join(" -> "));
            }
        }
        if shown < findings.len() {
            let _ = writeln!(
                out,
                "  {:<width$}  {}",
                "",
                paint(DIM, &format!("and {} more ({} lists them)", thousands((findings.len() - shown) as u64), explain_hint(&w.subject, cap)))
            );
        }
    }
}

/// The markdown rendering, for a pull-request comment.
pub fn markdown(o: &CheckOutcome) -> String {
    markdown_with(o, &View::default())
}

/// The markdown rendering under `view`.
pub fn markdown_with(o: &CheckOutcome, view: &View) -> String {
    let md = escape::markdown_inline;
    let origin = md(&o.origin);
    let mut out = String::new();
    if o.holds && !(view.strict && o.stale()) {
        let _ = writeln!(out, "### ✅ Capabilities: {origin} holds\n");
        let _ = writeln!(out, "The code uses nothing the baseline does not grant.");
    } else if o.holds {
        let _ = writeln!(out, "### ❌ Capabilities: {origin} is stale (`--strict`)\n");
        let _ = writeln!(out, "Nothing widened, but the baseline grants what is no longer used: run `velaris bless` to narrow it.");
    } else {
        let _ = writeln!(out, "### ❌ Capabilities: {} widened\n", widened_count(o));
        let _ = writeln!(out, "| subject | not granted | |");
        let _ = writeln!(out, "| --- | --- | --- |");
        for w in &o.widened {
            let mut caps: Vec<String> = w.capabilities.iter().map(|c| format!("`{c}`")).collect();
            for (c, apis) in &w.apis {
                caps.extend(apis.iter().map(|a| format!("`{c}` via {}", escape::code_span_in_table(a))));
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                subject_md(&w.subject),
                caps.join(", "),
                if w.new_subject { "new" } else { "" }
            );
        }
        for w in &o.widened {
            let _ = writeln!(
                out,
                "\n<details><summary>{} {}: {}</summary>\n",
                w.subject.kind(),
                md(w.subject.name()),
                md(&w.summary())
            );
            if w.findings.is_empty() {
                let _ = writeln!(out, "No finding recorded.");
            } else {
                let _ = writeln!(out, "| capability | crate | where | resolved to | via |");
                let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
                for e in w.findings.iter().take(MARKDOWN_FINDINGS) {
                    let via: Vec<String> = e.via.iter().map(|v| md(v)).collect();
                    let _ = writeln!(
                        out,
                        "| `{}`{} | {} {} | {} | {} | {} |",
                        e.finding.capability,
                        scope_note(e),
                        md(&e.crate_name),
                        md(&e.version),
                        md(&place(e)),
                        md(&e.finding.path_and_chain()),
                        via.join(" → "),
                    );
                }
                if w.findings.len() > MARKDOWN_FINDINGS {
                    let _ = writeln!(out, "\nand {} more findings.", thousands((w.findings.len() - MARKDOWN_FINDINGS) as u64));
                }
            }
            let _ = writeln!(out, "\n</details>");
        }
        let _ = writeln!(
            out,
            "\nIf these are intended, run `velaris bless` and commit {origin} with the change, for review."
        );
    }
    if let Some(t) = &o.target_mismatch {
        let _ = writeln!(
            out,
            "\n⚠️ The baseline was reviewed for target {}, the code was analysed for {}; `velaris bless` records the new target.",
            md(&t.granted),
            md(&t.analysed),
        );
    }
    if !o.narrowed.is_empty() {
        let _ = writeln!(out, "\n**Stale grants** (`velaris bless` narrows them):\n");
        for n in &o.narrowed {
            let _ = writeln!(out, "- {} {}", subject_md(&n.subject), md(&narrowing_text(n)));
        }
    }
    if let Some(nu) = view.new_uses {
        out.push_str(&new_uses_markdown(nu, usize::MAX));
    }
    out
}

/// The section listing the uses a change adds, in markdown, at most `max` of them (the rest
/// counted).
pub fn new_uses_markdown(nu: &NewUses, max: usize) -> String {
    let mut out = new_uses_intro(nu);
    for u in nu.uses.iter().take(max) {
        out.push_str(&new_use_line(u));
    }
    if nu.uses.len() > max {
        let _ = writeln!(out, "- …and {} more", thousands((nu.uses.len() - max) as u64));
    }
    out
}

/// The heading and first line of the new uses section (empty when there is nothing to say).
pub fn new_uses_intro(nu: &NewUses) -> String {
    let mut out = String::new();
    let since = escape::code_span(&nu.since);
    if let Some(note) = &nu.note {
        let _ = writeln!(out, "\n#### New capability uses\n\n_Not listed: {}_", escape::markdown_inline(note));
        return out;
    }
    if nu.uses.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n#### New capability uses\n\nWhat the workspace's own code does in {} more {} than at {since}, granted or not (file, API, chain):\n",
        thousands(nu.uses.len() as u64),
        if nu.uses.len() == 1 { "place" } else { "places" },
    );
    out
}

/// One new use as a markdown list item.
pub fn new_use_line(u: &Use) -> String {
    let f = &u.finding;
    let mut s = format!(
        "- `{}` in {} at {}{}: {}",
        f.capability,
        escape::code_span(&format!("{} {}", u.krate, u.version)),
        escape::code_span(&use_place(u)),
        u.item.as_deref().map(|i| format!(" (in {})", escape::code_span(i))).unwrap_or_default(),
        escape::code_span(&f.path_and_chain()),
    );
    if f.scope == Scope::Build {
        s.push_str(" (build time)");
    }
    if let Some(src) = &u.source {
        let cut: String = src.chars().take(200).collect();
        let _ = write!(s, " — {}", escape::code_span(&cut));
    }
    s.push('\n');
    s
}

#[derive(Serialize)]
struct JsonOutcome<'a> {
    schema: &'static str,
    holds: bool,
    stale: bool,
    /// `--strict` was given: a stale baseline fails.
    strict: bool,
    /// The gate's verdict: `holds`, and not `stale` under `--strict`.
    passed: bool,
    widened: Vec<JsonWidening<'a>>,
    narrowed: Vec<JsonNarrowing<'a>>,
    target_mismatch: Option<JsonTarget<'a>>,
    /// `check --base`: the capability uses the members add; `null` when not asked.
    new_uses: Option<JsonNewUses<'a>>,
}

#[derive(Serialize)]
struct JsonNewUses<'a> {
    since: &'a str,
    /// Why the uses could not be listed; then `uses` is empty.
    note: Option<&'a str>,
    uses: Vec<JsonUse<'a>>,
}

#[derive(Serialize)]
struct JsonUse<'a> {
    #[serde(rename = "crate")]
    krate: &'a str,
    version: &'a str,
    capability: Capability,
    scope: Scope,
    file: &'a str,
    line: u32,
    column: u32,
    path: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    chain: &'a [crate::surface::Hop],
    item: Option<&'a str>,
    source: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonTarget<'a> {
    baseline: &'a str,
    surface: &'a str,
}

#[derive(Serialize)]
struct JsonSubject<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    program: Option<&'a str>,
    #[serde(rename = "crate", skip_serializing_if = "Option::is_none")]
    krate: Option<&'a str>,
}

impl<'a> JsonSubject<'a> {
    fn of(s: &'a Subject) -> Self {
        match s {
            Subject::Program(n) => JsonSubject { program: Some(n), krate: None },
            Subject::Crate(n) => JsonSubject { program: None, krate: Some(n) },
        }
    }
}

#[derive(Serialize)]
struct JsonWidening<'a> {
    #[serde(flatten)]
    subject: JsonSubject<'a>,
    capabilities: &'a BTreeSet<Capability>,
    /// Granted capabilities used through APIs the crate's pins do not list.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    apis: &'a BTreeMap<Capability, BTreeSet<String>>,
    new: bool,
    findings: Vec<JsonFinding<'a>>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    #[serde(rename = "crate")]
    krate: &'a str,
    version: &'a str,
    capability: Capability,
    scope: Scope,
    file: &'a str,
    line: u32,
    column: u32,
    path: &'a str,
    /// Through a dependency's API: the hops down to where the capability is used.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    chain: &'a [crate::surface::Hop],
    via: &'a [String],
}

#[derive(Serialize)]
struct JsonNarrowing<'a> {
    #[serde(flatten)]
    subject: JsonSubject<'a>,
    capabilities: &'a BTreeSet<Capability>,
    /// Pinned APIs no longer used.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    apis: &'a BTreeMap<Capability, BTreeSet<String>>,
    gone: bool,
}

/// The JSON document `velaris/check/v1` (docs/baseline-format.md), pretty, with a final
/// newline.
pub fn json(o: &CheckOutcome) -> String {
    json_with(o, &View::default())
}

/// [`json`] under `view` (`strict`, `new_uses`).
pub fn json_with(o: &CheckOutcome, view: &View) -> String {
    let doc = JsonOutcome {
        schema: SCHEMA,
        holds: o.holds,
        stale: o.stale(),
        strict: view.strict,
        passed: passes(o, view),
        new_uses: view.new_uses.map(|nu| JsonNewUses {
            since: &nu.since,
            note: nu.note.as_deref(),
            uses: nu
                .uses
                .iter()
                .map(|u| JsonUse {
                    krate: &u.krate,
                    version: &u.version,
                    capability: u.finding.capability,
                    scope: u.finding.scope,
                    file: &u.finding.file,
                    line: u.finding.line,
                    column: u.finding.column,
                    path: &u.finding.path,
                    chain: &u.finding.chain,
                    item: u.item.as_deref(),
                    source: u.source.as_deref(),
                })
                .collect(),
        }),
        widened: o
            .widened
            .iter()
            .map(|w| JsonWidening {
                subject: JsonSubject::of(&w.subject),
                capabilities: &w.capabilities,
                apis: &w.apis,
                new: w.new_subject,
                findings: w
                    .findings
                    .iter()
                    .map(|e| JsonFinding {
                        krate: &e.crate_name,
                        version: &e.version,
                        capability: e.finding.capability,
                        scope: e.finding.scope,
                        file: &e.finding.file,
                        line: e.finding.line,
                        column: e.finding.column,
                        path: &e.finding.path,
                        chain: &e.finding.chain,
                        via: &e.via,
                    })
                    .collect(),
            })
            .collect(),
        narrowed: o
            .narrowed
            .iter()
            .map(|n| JsonNarrowing {
                subject: JsonSubject::of(&n.subject),
                capabilities: &n.capabilities,
                apis: &n.apis,
                gone: n.gone,
            })
            .collect(),
        target_mismatch: o.target_mismatch.as_ref().map(|t| JsonTarget { baseline: &t.granted, surface: &t.analysed }),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("a check outcome serializes");
    s.push('\n');
    s
}
