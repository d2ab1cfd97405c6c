//! Rendering reports: human (terminal), markdown (what a PR comment reuses) and JSON.
//!
//! This module owns how results look and how text that comes from a package (file names,
//! source lines, diff hunks) is escaped before it reaches a terminal or markdown. It computes
//! nothing: every number comes from the report it is handed.

pub mod escape;
mod human;
mod json;
mod json_v1;
mod markdown;

pub use human::{Detail, HumanOptions, headline, render_human};
pub use json::{SCHEMA, render_json};
pub use json_v1::{SCHEMA_V1, render_json_v1};
pub use markdown::{MarkdownOptions, render_markdown};

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

/// Group digits of a count in thousands: 12,345.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// "1 package" / "2 packages".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
