//! Showing a [`CheckOutcome`]: for a terminal, as markdown (a pull-request comment), as JSON.
//!
//! Names, versions, file names and resolved paths come from the analysed code: they are escaped
//! for the terminal ([`escape::line`]) and for markdown ([`escape::markdown_inline`]).

use std::collections::BTreeSet;
use std::fmt::Write;

use anstyle::{AnsiColor, Style};
use serde::Serialize;

use super::{CheckOutcome, Evidence, Subject, Widening};
use crate::report::escape;
use crate::surface::{Capability, Scope};

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
    let n = o.widened.len();
    format!("{n} {} widened", if n == 1 { "grant" } else { "grants" })
}

/// The terminal rendering. `explain` lists every finding with its dependency path; without it
/// each widened capability shows its first finding and a count of the others.
pub fn human(o: &CheckOutcome, explain: bool) -> String {
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
            format!("no longer uses {}{at}; `velaris bless` narrows the grant", cap_list(&n.capabilities))
        };
        let _ = writeln!(out, "{}: {} {what}", paint(CYAN, "note"), subject_line(&n.subject));
    }
    if o.holds {
        let _ = write!(out, "{}: the code uses nothing {origin} does not grant", paint(BOLD, "holds"));
        if o.stale() {
            let _ = write!(out, " (the file is stale: run `velaris bless` to narrow it)");
        }
        out.push('\n');
    } else {
        let _ = writeln!(
            out,
            "{}: {}; if they are intended, run `velaris bless` and commit {origin} for review with the change",
            paint(RED, "failed"),
            widened_count(o),
        );
    }
    out
}

fn human_widening(out: &mut String, w: &Widening, origin: &str, explain: bool) {
    let caps = cap_list(&w.capabilities);
    if w.new_subject {
        let _ = writeln!(
            out,
            "{}: new {} is not in {origin} and uses: {caps}",
            paint(RED, "error"),
            subject_line(&w.subject)
        );
    } else {
        let _ = writeln!(
            out,
            "{}: {} uses capabilities {origin} does not grant: {caps}",
            paint(RED, "error"),
            subject_line(&w.subject)
        );
        if let Some(at) = w.at {
            let _ = writeln!(out, "  {} {origin}:{at}", paint(DIM, "-->"));
        }
    }
    let width = w.capabilities.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
    for &cap in &w.capabilities {
        let findings: Vec<&Evidence> = w.findings.iter().filter(|e| e.finding.capability == cap).collect();
        if findings.is_empty() {
            let _ = writeln!(out, "  {:<width$}  {}", cap.as_str(), paint(DIM, "(no finding recorded)"));
            continue;
        }
        let shown = if explain { findings.len() } else { findings.len().min(FIRST_FINDINGS) };
        for (i, e) in findings.iter().take(shown).enumerate() {
            let label = if i == 0 { cap.as_str() } else { "" };
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
                paint(DIM, &format!("and {} more (--explain lists them)", findings.len() - shown))
            );
        }
    }
}

/// The markdown rendering, for a pull-request comment.
pub fn markdown(o: &CheckOutcome) -> String {
    let md = escape::markdown_inline;
    let origin = md(&o.origin);
    let mut out = String::new();
    if o.holds {
        let _ = writeln!(out, "### ✅ Capabilities: {origin} holds\n");
        let _ = writeln!(out, "The code uses nothing the baseline does not grant.");
    } else {
        let _ = writeln!(out, "### ❌ Capabilities: {}\n", widened_count(o));
        let _ = writeln!(out, "| subject | not granted | |");
        let _ = writeln!(out, "| --- | --- | --- |");
        for w in &o.widened {
            let caps: Vec<String> = w.capabilities.iter().map(|c| format!("`{c}`")).collect();
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
                cap_list(&w.capabilities)
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
                    let _ = writeln!(out, "\nand {} more findings.", w.findings.len() - MARKDOWN_FINDINGS);
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
            if n.gone {
                let _ = writeln!(out, "- {} is gone", subject_md(&n.subject));
            } else {
                let _ = writeln!(out, "- {} no longer uses {}", subject_md(&n.subject), cap_list(&n.capabilities));
            }
        }
    }
    out
}

#[derive(Serialize)]
struct JsonOutcome<'a> {
    schema: &'static str,
    holds: bool,
    stale: bool,
    widened: Vec<JsonWidening<'a>>,
    narrowed: Vec<JsonNarrowing<'a>>,
    target_mismatch: Option<JsonTarget<'a>>,
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
    gone: bool,
}

/// The JSON document `velaris/check/v1` (docs/baseline-format.md), pretty, with a final
/// newline.
pub fn json(o: &CheckOutcome) -> String {
    let doc = JsonOutcome {
        schema: SCHEMA,
        holds: o.holds,
        stale: o.stale(),
        widened: o
            .widened
            .iter()
            .map(|w| JsonWidening {
                subject: JsonSubject::of(&w.subject),
                capabilities: &w.capabilities,
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
                gone: n.gone,
            })
            .collect(),
        target_mismatch: o.target_mismatch.as_ref().map(|t| JsonTarget { baseline: &t.granted, surface: &t.analysed }),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("a check outcome serializes");
    s.push('\n');
    s
}
