//! Workflow commands on the step's log: annotations, and the fence around printed text.
//!
//! - Errors go on the source line of each widened finding (or, for a dependency, on its entry
//!   in Cargo.lock), warnings on the Cargo.lock entry of each flagged package. The runner shows
//!   10 of each per step and drops the rest silently, so at most 10 of each are written, run
//!   messages first, and the rest are counted in one notice.
//! - Properties and messages are escaped as the runner reads them (`%`, CR, LF; in properties
//!   also `:` and `,`), after control and invisible characters were made visible.
//! - Text that comes from the analysed code is printed inside `::stop-commands::TOKEN` …
//!   `::TOKEN::` with an unguessable token, so that no line of it can issue a command.

use std::collections::BTreeSet;
use std::io::{self, Write};

use crate::text::escape;

/// Annotations of each level the runner shows per step.
pub const PER_LEVEL: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Notice,
}

impl Level {
    fn command(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
        }
    }
}

/// One annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub level: Level,
    /// Relative to the repository root.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub col: Option<u32>,
    pub title: String,
    pub message: String,
}

/// Escape a command's message.
pub fn escape_data(s: &str) -> String {
    escape::source(s).replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escape a command's property value.
pub fn escape_property(s: &str) -> String {
    escape::line(s).replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A").replace(':', "%3A").replace(',', "%2C")
}

impl Annotation {
    /// The workflow command line, without its newline.
    pub fn command(&self) -> String {
        let mut props = Vec::new();
        if let Some(f) = &self.file {
            props.push(format!("file={}", escape_property(f)));
        }
        if let Some(l) = self.line {
            props.push(format!("line={l}"));
        }
        if let Some(c) = self.col {
            props.push(format!("col={c}"));
        }
        if !self.title.is_empty() {
            props.push(format!("title={}", escape_property(&self.title)));
        }
        let props = if props.is_empty() { String::new() } else { format!(" {}", props.join(",")) };
        format!("::{}{props}::{}", self.level.command(), escape_data(&self.message))
    }
}

/// The annotations of a run, capped per level when written.
#[derive(Debug, Default)]
pub struct Annotations {
    /// About the run (a comment that could not be posted): shown before any finding.
    run: Vec<Annotation>,
    findings: Vec<Annotation>,
    seen: BTreeSet<(Option<String>, Option<u32>, String)>,
}

impl Annotations {
    /// A message about the run itself; these come first.
    pub fn run_message(&mut self, level: Level, title: &str, message: &str) {
        self.run.push(Annotation { level, file: None, line: None, col: None, title: title.into(), message: message.into() });
    }

    /// An annotation at a place; the same place and title only once.
    pub fn add(&mut self, a: Annotation) {
        if self.seen.insert((a.file.clone(), a.line, a.title.clone())) {
            self.findings.push(a);
        }
    }

    pub fn len(&self) -> usize {
        self.run.len() + self.findings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Write at most [`PER_LEVEL`] errors and warnings (and notices), then one notice counting
    /// what was left out.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut shown = [0usize; 3];
        let mut left = [0usize; 3];
        // One place kept for the notice that counts the rest.
        let room = |l: Level| if l == Level::Notice { PER_LEVEL - 1 } else { PER_LEVEL };
        for a in self.run.iter().chain(&self.findings) {
            let i = a.level as usize;
            if shown[i] < room(a.level) {
                writeln!(out, "{}", a.command())?;
                shown[i] += 1;
            } else {
                left[i] += 1;
            }
        }
        if left.iter().any(|&n| n > 0) {
            let mut parts = Vec::new();
            for (n, what) in [(left[0], "error"), (left[1], "warning"), (left[2], "notice")] {
                if n > 0 {
                    parts.push(format!("{} more {what}{}", crate::text::thousands(n as u64), if n == 1 { "" } else { "s" }));
                }
            }
            let a = Annotation {
                level: Level::Notice,
                file: None,
                line: None,
                col: None,
                title: "velaris: more annotations".into(),
                message: format!(
                    "{} than the runner shows per step; every finding is in the job summary and the report file",
                    parts.join(" and ")
                ),
            };
            writeln!(out, "{}", a.command())?;
        }
        Ok(())
    }
}

/// An unguessable token for `::stop-commands::`: 128 bits from the process's random hasher keys.
pub fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut s = String::new();
    for i in 0..2u8 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        s.push_str(&format!("{:016x}", h.finish()));
    }
    s
}

/// Print `text` so that none of its lines is read as a workflow command.
pub fn write_fenced(out: &mut dyn Write, text: &str) -> io::Result<()> {
    let mut token = random_token();
    while text.contains(&token) {
        token = random_token();
    }
    writeln!(out, "::stop-commands::{token}")?;
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    writeln!(out, "::{token}::")
}

/// The line (1-based) of `name = "NAME"` in the `[[package]]` entry of `name` `version` in a
/// lockfile's text.
pub fn lockfile_line(text: &str, name: &str, version: &str) -> Option<u32> {
    let want_name = format!("name = \"{name}\"");
    let want_version = format!("version = \"{version}\"");
    let mut name_line = None;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l == "[[package]]" {
            name_line = None;
        } else if l == want_name {
            name_line = Some(i as u32 + 1);
        } else if l == want_version && name_line.is_some() {
            return name_line;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(level: Level, line: u32) -> Annotation {
        Annotation { level, file: Some("src/a,b:c.rs".into()), line: Some(line), col: Some(2), title: "t".into(), message: "m".into() }
    }

    #[test]
    fn commands_are_escaped() {
        let a = Annotation {
            level: Level::Error,
            file: Some("src/x,y::z%.rs".into()),
            line: Some(3),
            col: None,
            title: "cap: a,b".into(),
            message: "line1\nline2 100%\r::set-output name=x::y\u{1b}[2J".into(),
        };
        assert_eq!(
            a.command(),
            "::error file=src/x%2Cy%3A%3Az%25.rs,line=3,title=cap%3A a%2Cb::line1%0Aline2 100%25\\r::set-output name=x::y\\u{1b}[2J"
        );
    }

    #[test]
    fn ten_per_level_and_one_notice_for_the_rest() {
        let mut a = Annotations::default();
        a.run_message(Level::Warning, "fork", "read-only token");
        for i in 0..15 {
            a.add(at(Level::Error, i));
            a.add(at(Level::Warning, 100 + i));
        }
        a.add(at(Level::Error, 0)); // the same place: once
        let mut out = Vec::new();
        a.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().filter(|l| l.starts_with("::error ")).count(), 10);
        assert_eq!(text.lines().filter(|l| l.starts_with("::warning")).count(), 10);
        assert!(text.lines().next().unwrap().starts_with("::warning title=fork::"), "run messages first: {text}");
        let notice: Vec<&str> = text.lines().filter(|l| l.starts_with("::notice")).collect();
        assert_eq!(notice.len(), 1);
        assert!(notice[0].contains("5 more errors and 6 more warnings"), "{}", notice[0]);
    }

    #[test]
    fn fenced_text_cannot_issue_commands() {
        let mut out = Vec::new();
        write_fenced(&mut out, "::error::fake\n").unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let token = lines[0].strip_prefix("::stop-commands::").unwrap();
        assert_eq!(token.len(), 32);
        assert_eq!(lines[1], "::error::fake");
        assert_eq!(lines[2], format!("::{token}::"));
        assert_ne!(random_token(), random_token());
    }

    #[test]
    fn lockfile_entries_are_found_by_name_and_version() {
        let lock = "version = 4\n\n[[package]]\nname = \"a\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"a\"\nversion = \"2.0.0\"\nsource = \"x\"\n";
        assert_eq!(lockfile_line(lock, "a", "2.0.0"), Some(8));
        assert_eq!(lockfile_line(lock, "a", "1.0.0"), Some(4));
        assert_eq!(lockfile_line(lock, "b", "1.0.0"), None);
    }
}
