//! Rendering the deps-diff review: human (terminal), markdown (what a PR comment reuses), JSON
//! and SARIF.
//!
//! This module is the renderer of the deps-diff review and owns how it looks; the escaping of
//! text that comes from a package is [`crate::text::escape`]'s. It computes nothing: every
//! number comes from the report it is handed.

mod human;
mod json;
mod json_v1;
mod markdown;
mod publication;
mod sarif;

pub use human::{Detail, HumanOptions, headline, render_human};
pub use json::{JsonOptions, SCHEMA, render_json, render_json_with};
pub use json_v1::{SCHEMA_V1, render_json_v1};
pub use markdown::{MarkdownOptions, render_markdown};
pub use sarif::{SARIF_SCHEMA, render_sarif};

/// Why a package is not built, for people: `cfg(windows) in anstream`, `only needed by tonic
/// (not built)`. A long cfg expression is shortened (the JSON has it whole).
pub fn not_built_text(reason: &str, code: &str, from: Option<&str>) -> String {
    let reason = if reason.chars().count() > 72 {
        format!("{}…", reason.chars().take(71).collect::<String>())
    } else {
        reason.to_string()
    };
    match (code, from) {
        ("only-via", Some(f)) => format!("only needed by {f} (not built)"),
        (_, Some(f)) => format!("{reason} in {f}"),
        (_, None) => reason,
    }
}

/// What the review says of advisories: the database used, or how to ask for one.
pub fn advisory_db_line(report: &crate::depsdiff::Report) -> String {
    match &report.advisory_db {
        None => "not checked (--advisory-db DIR: a copy of the RustSec advisory database)".to_string(),
        Some(db) => {
            let affected = report.packages.iter().filter(|p| !p.advisories.affecting.is_empty()).count() as u64;
            format!(
                "RustSec advisory database {}{}, {}; {} affected",
                db.path,
                db.commit.as_deref().map(|c| format!(" at {}", &c[..c.len().min(12)])).unwrap_or_default(),
                crate::text::plural(db.advisories as u64, "advisory", "advisories"),
                crate::text::plural(affected, "package", "packages"),
            )
        }
    }
}

/// The licences of the packages a change adds, counted: `MIT OR Apache-2.0 (12), MIT (3), none
/// (1: foo)`; `None` when it adds none.
pub fn new_licences(report: &crate::depsdiff::Report) -> Option<String> {
    let mut by: std::collections::BTreeMap<String, Vec<&str>> = std::collections::BTreeMap::new();
    for p in report.packages.iter().filter(|p| p.change == crate::lockfile::ChangeKind::Added) {
        let l = p.license.1.clone().unwrap_or_else(|| "none".to_string());
        by.entry(l).or_default().push(&p.name);
    }
    if by.is_empty() {
        return None;
    }
    let mut list: Vec<(String, Vec<&str>)> = by.into_iter().collect();
    list.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    Some(
        list.iter()
            .map(|(l, names)| if names.len() <= 3 { format!("{l} ({})", names.join(", ")) } else { format!("{l} ({})", names.len()) })
            .collect::<Vec<_>>()
            .join("; "),
    )
}
