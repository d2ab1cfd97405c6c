//! Reading and validating a baseline, with every problem at its line and column.
//!
//! The TOML is read with `toml`'s recovering parser, which keeps the span of every key and value
//! and reports every duplicate key; the grants are then checked against the format. Layout and
//! comments do not matter here (see `layout.rs` for those).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Baseline, BaselineError, FORMAT_VERSION, Grant, Location, Problem};
use crate::surface::Capability;

/// The byte offsets where lines start, so that a place is found by binary search: the whole
/// file is read once, not once per place (which made a large baseline quadratic).
pub(crate) struct Lines(Vec<usize>);

impl Lines {
    pub(crate) fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    pub(crate) fn location(&self, text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.0.partition_point(|&start| start <= offset);
        let start = self.0[line - 1];
        Location { line, column: text[start..offset].chars().count() + 1 }
    }
}

fn valid_capabilities() -> String {
    Capability::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

pub(crate) fn unknown_capability(name: &str) -> String {
    format!("unknown capability `{name}`; valid capabilities: {}", valid_capabilities())
}

struct Checker<'t> {
    text: &'t str,
    lines: Lines,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn at(&self, span: Range<usize>) -> Location {
        self.lines.location(self.text, span.start)
    }

    fn problem(&mut self, span: Range<usize>, message: impl Into<String>) {
        let at = self.at(span);
        self.problems.push(Problem { line: at.line, column: at.column, message: message.into() });
    }

    fn wrong_type(&mut self, what: &str, expected: &str, v: &Spanned<DeValue<'_>>) {
        self.problem(v.span(), format!("{what} must be {expected}, found {}", v.get_ref().type_str()));
    }

    fn string(&mut self, what: &str, v: &Spanned<DeValue<'_>>) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong_type(what, "a string", v);
                None
            }
        }
    }

    /// A duplicate-key error from the TOML parser, said in the baseline's terms. For a table
    /// header, returns the extent of that table (up to the next header).
    fn duplicate(&mut self, span: Range<usize>) -> Option<Range<usize>> {
        let line_start = self.text[..span.start].rfind('\n').map_or(0, |nl| nl + 1);
        let line_end = self.text[span.start..].find('\n').map_or(self.text.len(), |n| span.start + n);
        let line = &self.text[line_start..line_end];
        let key = &self.text[span.clone()];
        let (message, table) = match (line.trim_start().starts_with('['), line.find(']')) {
            (true, Some(close)) => {
                let header = line[..=close].trim_start();
                let next = self.text[line_end..]
                    .match_indices('\n')
                    .map(|(i, _)| line_end + i + 1)
                    .find(|&start| self.text[start..].trim_start_matches([' ', '\t']).starts_with('['))
                    .unwrap_or(self.text.len());
                (format!("duplicate table `{header}`: each program and crate is listed once"), Some(line_end..next))
            }
            _ => (format!("duplicate key `{key}`: each key is written once per table"), None),
        };
        self.problem(span, message);
        table
    }

    fn root(&mut self, root: &Spanned<DeTable<'_>>, origin: &str) -> Baseline {
        let mut baseline = Baseline {
            origin: origin.to_string(),
            version: FORMAT_VERSION,
            target: None,
            programs: BTreeMap::new(),
            crates: BTreeMap::new(),
        };
        let mut version_seen = false;
        for (k, v) in root.get_ref().iter() {
            match k.get_ref().as_ref() {
                "version" => {
                    version_seen = true;
                    match v.get_ref() {
                        DeValue::Integer(i) => {
                            let n = i64::from_str_radix(i.as_str(), i.radix()).ok();
                            if n != Some(i64::from(FORMAT_VERSION)) {
                                self.problem(
                                    v.span(),
                                    format!(
                                        "unsupported baseline version {}; this velaris reads version {FORMAT_VERSION}",
                                        &self.text[v.span()]
                                    ),
                                );
                            }
                        }
                        _ => self.wrong_type("`version`", "an integer", v),
                    }
                }
                "target" => baseline.target = self.string("`target`", v),
                "program" | "crate" => {
                    let is_program = k.get_ref() == "program";
                    let DeValue::Table(entries) = v.get_ref() else {
                        self.wrong_type(&format!("`{}`", k.get_ref()), "a table", v);
                        continue;
                    };
                    for (name, entry) in entries.iter() {
                        if let Some(grant) = self.entry(is_program, name, entry) {
                            let map = if is_program { &mut baseline.programs } else { &mut baseline.crates };
                            map.insert(name.get_ref().to_string(), grant);
                        }
                    }
                }
                other => self.problem(
                    k.span(),
                    format!("unknown key `{other}`; expected `version`, `target`, `program` or `crate`"),
                ),
            }
        }
        if !version_seen {
            self.problems.push(Problem {
                line: 1,
                column: 1,
                message: format!("missing `version = {FORMAT_VERSION}`: the format version of the baseline"),
            });
        }
        baseline
    }

    fn entry(
        &mut self,
        is_program: bool,
        name: &Spanned<std::borrow::Cow<'_, str>>,
        entry: &Spanned<DeValue<'_>>,
    ) -> Option<Grant> {
        let kind = if is_program { "program" } else { "crate" };
        let subject = format!("{kind} `{}`", name.get_ref());
        if name.get_ref().is_empty() {
            self.problem(name.span(), format!("empty {kind} name"));
        }
        let DeValue::Table(table) = entry.get_ref() else {
            self.wrong_type(&subject, "a table", entry);
            return None;
        };
        let mut grant = Grant { at: self.at(name.span()), ..Grant::default() };
        let mut capabilities_seen = false;
        let mut reasons: Vec<(Capability, Range<usize>, String)> = Vec::new();
        let mut apis: Vec<(Capability, Range<usize>, BTreeSet<String>)> = Vec::new();
        for (k, v) in table.iter() {
            match k.get_ref().as_ref() {
                "package" if is_program => grant.package = self.string(&format!("`package` of {subject}"), v),
                "reason" => grant.reason = self.string(&format!("`reason` of {subject}"), v),
                "capabilities" => {
                    capabilities_seen = true;
                    let DeValue::Array(list) = v.get_ref() else {
                        self.wrong_type(&format!("`capabilities` of {subject}"), "an array of capability names", v);
                        continue;
                    };
                    for item in list.iter() {
                        let DeValue::String(s) = item.get_ref() else {
                            self.wrong_type(
                                &format!("each capability of {subject}"),
                                "a capability name (a string)",
                                item,
                            );
                            continue;
                        };
                        let Ok(cap) = s.parse::<Capability>() else {
                            self.problem(item.span(), unknown_capability(s));
                            continue;
                        };
                        let here = self.at(item.span());
                        if let Some(first) = grant.capability_at.get(&cap) {
                            let first = *first;
                            self.problem(
                                item.span(),
                                format!("`{cap}` is listed twice in the capabilities of {subject} (first at {first})"),
                            );
                            continue;
                        }
                        grant.capabilities.insert(cap);
                        grant.capability_at.insert(cap, here);
                    }
                }
                "reasons" => {
                    let DeValue::Table(t) = v.get_ref() else {
                        self.wrong_type(&format!("`reasons` of {subject}"), "a table of capability = \"reason\"", v);
                        continue;
                    };
                    for (ck, cv) in t.iter() {
                        let Ok(cap) = ck.get_ref().parse::<Capability>() else {
                            self.problem(ck.span(), unknown_capability(ck.get_ref()));
                            continue;
                        };
                        if let Some(r) = self.string(&format!("the reason for `{cap}` of {subject}"), cv) {
                            reasons.push((cap, ck.span(), r));
                        }
                    }
                }
                "apis" if is_program => self.problem(
                    k.span(),
                    format!("API pins are per crate: move `apis` of {subject} to `[crate.NAME.apis]`"),
                ),
                "apis" => {
                    let DeValue::Table(t) = v.get_ref() else {
                        self.wrong_type(&format!("`apis` of {subject}"), "a table of capability = [\"API\", ...]", v);
                        continue;
                    };
                    for (ck, cv) in t.iter() {
                        let Ok(cap) = ck.get_ref().parse::<Capability>() else {
                            self.problem(ck.span(), unknown_capability(ck.get_ref()));
                            continue;
                        };
                        if !super::layout::pinnable(cap) {
                            self.problem(ck.span(), format!("`{cap}` cannot be pinned to APIs: its findings name no API"));
                            continue;
                        }
                        if let Some(list) = self.api_list(&format!("the APIs of `{cap}` of {subject}"), cv) {
                            apis.push((cap, ck.span(), list));
                        }
                    }
                }
                other => {
                    let expected = if is_program {
                        "`package`, `capabilities`, `reason` or `reasons`"
                    } else {
                        "`capabilities`, `reason`, `reasons` or `apis`"
                    };
                    self.problem(k.span(), format!("unknown key `{other}` in {subject}; expected {expected}"));
                }
            }
        }
        if !capabilities_seen {
            self.problem(
                name.span(),
                format!("{subject} has no `capabilities` (write `capabilities = []` to grant none)"),
            );
        }
        // A reason for a capability that is not granted is only reported when the list itself
        // was readable; otherwise it would repeat the list's problem.
        let list_ok = capabilities_seen && table.get("capabilities").is_some_and(|v| list_is_clean(v.get_ref()));
        for (cap, span, reason) in reasons {
            if grant.capabilities.contains(&cap) {
                grant.reasons.insert(cap, reason);
            } else if list_ok {
                self.problem(span, format!("a reason for `{cap}`, which {subject} is not granted"));
            }
        }
        for (cap, span, list) in apis {
            if grant.capabilities.contains(&cap) {
                grant.apis_at.insert(cap, self.at(span));
                grant.apis.insert(cap, list);
            } else if list_ok {
                self.problem(span, format!("APIs for `{cap}`, which {subject} is not granted"));
            }
        }
        Some(grant)
    }

    /// An array of API paths: non-empty strings, each once.
    fn api_list(&mut self, what: &str, v: &Spanned<DeValue<'_>>) -> Option<BTreeSet<String>> {
        let DeValue::Array(list) = v.get_ref() else {
            self.wrong_type(what, "an array of API paths (strings)", v);
            return None;
        };
        let mut out = BTreeSet::new();
        let mut ok = true;
        for item in list.iter() {
            match item.get_ref() {
                DeValue::String(s) if s.trim().is_empty() => {
                    self.problem(item.span(), format!("an empty API path in {what}"));
                    ok = false;
                }
                DeValue::String(s) => {
                    if !out.insert(s.to_string()) {
                        self.problem(item.span(), format!("`{s}` is listed twice in {what}"));
                        ok = false;
                    }
                }
                _ => {
                    self.wrong_type(&format!("each of {what}"), "an API path (a string)", item);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }
}

fn list_is_clean(v: &DeValue<'_>) -> bool {
    let DeValue::Array(list) = v else { return false };
    list.iter().all(|i| matches!(i.get_ref(), DeValue::String(s) if s.parse::<Capability>().is_ok()))
}

pub(crate) fn parse(text: &str, origin: &str) -> Result<Baseline, BaselineError> {
    let (root, mut errors) = DeTable::parse_recoverable(text);
    errors.sort_by_key(|e| e.span().map_or(usize::MAX, |s| s.start));
    let mut checker = Checker { text, lines: Lines::new(text), problems: Vec::new() };
    let mut syntax_error = false;
    // The keys of a table written twice are reported with the table, not once more each.
    let mut repeated_table = 0..0;
    for e in &errors {
        let span = e.span().unwrap_or(0..0);
        if e.message() == "duplicate key" && span.end <= text.len() {
            if repeated_table.contains(&span.start) {
                continue;
            }
            if let Some(table) = checker.duplicate(span) {
                repeated_table = table;
            }
        } else {
            // What follows a syntax error cannot be read reliably: stop at the first one.
            checker.problem(span, e.message().trim().to_string());
            syntax_error = true;
            break;
        }
    }
    let baseline = if syntax_error { None } else { Some(checker.root(&root, origin)) };
    let mut problems = checker.problems;
    problems.sort_by_key(|p| (p.line, p.column));
    problems.dedup();
    match baseline {
        Some(b) if problems.is_empty() => Ok(b),
        _ => Err(BaselineError { origin: origin.to_string(), problems }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_counts_characters() {
        let t = "ab\nçé x";
        let lines = Lines::new(t);
        assert_eq!(lines.location(t, 0), Location { line: 1, column: 1 });
        assert_eq!(lines.location(t, 3), Location { line: 2, column: 1 });
        assert_eq!(lines.location(t, t.find('x').unwrap()), Location { line: 2, column: 4 });
        assert_eq!(lines.location(t, t.len()), Location { line: 2, column: 5 });
    }

    #[test]
    fn minimal_file() {
        let b = parse("version = 1\n", "f").unwrap();
        assert!(b.programs.is_empty() && b.crates.is_empty() && b.target.is_none());
    }

    #[test]
    fn stops_at_first_syntax_error() {
        let e = parse("version = 1\n[program.a]\ncapabilities = [\"fs.read\"\n[crate.b]\nx = = 1\n", "f").unwrap_err();
        assert_eq!(e.problems.len(), 1, "{e}");
    }
}
