//! The baseline as a document: grants plus the comments reviewers attached to them, read with
//! `toml_edit` (which keeps every comment as the "decor" of a key, value or table) and written
//! back in one canonical layout.
//!
//! A comment belongs to what follows it (the key, table header or capability on the next
//! lines), or, when it is on the same line, to what precedes it on that line. Reading collects
//! them per entry, key and capability; writing puts each back next to its owner wherever
//! sorting moves it. An owner that is dropped (an entry no longer in the surface, a capability
//! no longer used) takes its comments with it. Comments at the very top of the file (the file
//! header) and after the last entry stay where they are.
//!
//! Canonical layout: `version`, `target`; then `[program.NAME]` tables sorted by name, then
//! `[crate.NAME]` tables sorted by name, each preceded by one blank line, with `package`,
//! `capabilities` (one per line, in canonical capability order, trailing comma), `reason`, a
//! `[KIND.NAME.reasons]` table when there are reasons, and a `[crate.NAME.apis]` table when the
//! crate's APIs are pinned (each capability's APIs one per line, sorted); runs of blank lines
//! between comments become one blank line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use toml_edit::{Array, Decor, DocumentMut, Item, TableLike};

use super::FORMAT_VERSION;
use crate::surface::{Capability, Surface};

/// The header comment of a fresh baseline.
const HEADER: &[&str] = &[
    "# velaris.capabilities: what each program, and each crate compiled into one, is granted.",
    "# `velaris check` fails when the code uses more; widen a grant only by a reviewed change.",
    "# `velaris bless` rewrites this file from the code and keeps reasons and comments.",
    "# Format: https://github.com/velaris/ratchet/blob/main/docs/baseline-format.md",
];

const INDENT: &str = "    ";

/// One line of a comment block.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    /// A comment, starting with `#`, without trailing whitespace.
    Comment(String),
    Blank,
}

/// Comment lines with canonical blank lines: none before the first comment, runs collapsed to
/// one, none at all without a comment.
fn normalize(lines: Vec<Line>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::with_capacity(lines.len());
    for l in lines {
        match l {
            Line::Blank if matches!(out.last(), None | Some(Line::Blank)) => {}
            l => out.push(l),
        }
    }
    out
}

fn without_trailing_blanks(mut lines: Vec<Line>) -> Vec<Line> {
    while matches!(lines.last(), Some(Line::Blank)) {
        lines.pop();
    }
    lines
}

fn comment_in(segment: &str) -> Option<String> {
    let t = segment.trim();
    t.starts_with('#').then(|| t.to_string())
}

/// Whole lines of decor text: every segment ended by a newline. The text after the last
/// newline is the indentation of the owner's own line and carries no comment.
fn whole_lines(raw: &str) -> Vec<Line> {
    let mut segments: Vec<&str> = raw.split('\n').collect();
    segments.pop();
    segments.into_iter().map(|s| comment_in(s).map_or(Line::Blank, Line::Comment)).collect()
}

/// Decor text that starts on the line of something earlier (an array's `[`, or the previous
/// element): that first segment's comment, and the whole lines after it.
fn split_first_line(raw: &str) -> (Option<String>, Vec<Line>) {
    match raw.find('\n') {
        Some(nl) => (comment_in(&raw[..nl]), whole_lines(&raw[nl + 1..])),
        None => (None, Vec::new()),
    }
}

fn text_of(raw: Option<&toml_edit::RawString>) -> &str {
    raw.and_then(|r| r.as_str()).unwrap_or("")
}

/// The comments that belong to one key, table header or capability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Notes {
    /// Whole-line comments above it.
    above: Vec<Line>,
    /// The comment at the end of its line.
    inline: Option<String>,
}

impl Notes {
    fn is_empty(&self) -> bool {
        self.above.is_empty() && self.inline.is_none()
    }

    fn from_decor(d: &Decor) -> Notes {
        Notes {
            above: normalize(whole_lines(text_of(d.prefix()))),
            inline: comment_in(text_of(d.suffix()).split('\n').next().unwrap_or("")),
        }
    }

    /// The notes of `key` in `parent`: a table header's decor, or the key's decor and the
    /// value's same-line comment.
    fn of_key(parent: &dyn TableLike, key: &str) -> Notes {
        let key_prefix = parent.key(key).map(|k| text_of(k.leaf_decor().prefix())).unwrap_or("");
        match parent.get(key) {
            Some(Item::Table(t)) if !t.is_dotted() => Notes::from_decor(t.decor()),
            Some(Item::Value(v)) => Notes {
                above: normalize(whole_lines(key_prefix)),
                inline: comment_in(text_of(v.decor().suffix()).split('\n').next().unwrap_or("")),
            },
            _ => Notes { above: normalize(whole_lines(key_prefix)), inline: None },
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Field<T> {
    notes: Notes,
    value: T,
}

/// What a list holds: capabilities (`capabilities = [...]`) or API paths (`[crate.N.apis]`).
trait ListItem: Ord + Clone {
    fn from_value(v: &toml_edit::Value) -> Option<Self>;
    fn text(&self) -> &str;
}

impl ListItem for Capability {
    fn from_value(v: &toml_edit::Value) -> Option<Self> {
        v.as_str().and_then(|s| s.parse().ok())
    }
    fn text(&self) -> &str {
        self.as_str()
    }
}

impl ListItem for String {
    fn from_value(v: &toml_edit::Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
    fn text(&self) -> &str {
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Elem<T> {
    value: T,
    notes: Notes,
}

/// A `capabilities = [...]` list, or a capability's list of APIs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct List<T> {
    /// The key's notes; `inline` is the comment after the closing `]`.
    notes: Notes,
    /// A comment after the opening `[`.
    open: Option<String>,
    /// In canonical order, each value once.
    elems: Vec<Elem<T>>,
    /// Whole-line comments before the closing `]`.
    end: Vec<Line>,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List { notes: Notes::default(), open: None, elems: Vec::new(), end: Vec::new() }
    }
}

impl<T: ListItem> List<T> {
    fn read(notes: Notes, array: &Array) -> List<T> {
        let mut list = List { notes, ..List::default() };
        let mut pending: Vec<Line> = Vec::new();
        // Where a same-line comment at the start of the next decor goes: `None` is the `[`.
        let mut last: Option<usize> = None;
        for v in array.iter() {
            let (first, rest) = split_first_line(text_of(v.decor().prefix()));
            list.attach_inline(last, first);
            pending.extend(rest);
            let (inline, after) = split_first_line(&format!("{}\n", text_of(v.decor().suffix())));
            match T::from_value(v) {
                Some(value) if !list.elems.iter().any(|e| e.value == value) => {
                    let above = normalize(std::mem::take(&mut pending));
                    list.elems.push(Elem { value, notes: Notes { above, inline } });
                    last = Some(list.elems.len() - 1);
                }
                // Not a value of the list's kind (only in files that do not parse) or a repeat:
                // its comments join the next one's.
                _ => pending.extend(inline.map(Line::Comment)),
            }
            // `after` is empty unless the comma is on a later line than the value.
            pending.extend(without_trailing_blanks(after));
        }
        let (first, rest) = split_first_line(text_of(Some(array.trailing())));
        list.attach_inline(last, first);
        pending.extend(rest);
        list.end = without_trailing_blanks(normalize(pending));
        list.elems.sort_by(|a, b| a.value.cmp(&b.value));
        list
    }

    fn attach_inline(&mut self, to: Option<usize>, comment: Option<String>) {
        let Some(c) = comment else { return };
        let slot = match to {
            Some(i) => &mut self.elems[i].notes.inline,
            None => &mut self.open,
        };
        *slot = Some(match slot.take() {
            Some(prev) => format!("{prev} {c}"),
            None => c,
        });
    }

    /// Keep the values in `values` with their comments, add the others.
    fn bless(&mut self, values: &BTreeSet<T>) {
        self.elems.retain(|e| values.contains(&e.value));
        for v in values {
            if !self.elems.iter().any(|e| &e.value == v) {
                self.elems.push(Elem { value: v.clone(), notes: Notes::default() });
            }
        }
        self.elems.sort_by(|a, b| a.value.cmp(&b.value));
    }
}

/// A `[KIND.NAME.apis]` table: per capability, the APIs the crate may use for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Apis {
    /// The table header's notes.
    notes: Notes,
    items: BTreeMap<Capability, List<String>>,
}

/// Whether a capability's findings name an API that can be pinned (`unanalyzed` findings name
/// an error, not an API).
pub fn pinnable(cap: Capability) -> bool {
    cap != Capability::Unanalyzed
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Reasons {
    /// The `[KIND.NAME.reasons]` header's notes.
    notes: Notes,
    items: BTreeMap<Capability, Field<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Entry {
    /// The `[KIND.NAME]` header's notes.
    notes: Notes,
    package: Option<Field<String>>,
    capabilities: List<Capability>,
    reason: Option<Field<String>>,
    reasons: Reasons,
    apis: Apis,
}

impl Entry {
    fn read(notes: Notes, table: &dyn TableLike, is_program: bool) -> Entry {
        let string = |key: &str| {
            let value = table.get(key)?.as_str()?.to_string();
            Some(Field { notes: Notes::of_key(table, key), value })
        };
        let mut entry = Entry {
            notes,
            package: if is_program { string("package") } else { None },
            reason: string("reason"),
            ..Entry::default()
        };
        if let Some(array) = table.get("capabilities").and_then(Item::as_array) {
            entry.capabilities = List::read(Notes::of_key(table, "capabilities"), array);
        } else {
            entry.capabilities.notes = Notes::of_key(table, "capabilities");
        }
        if let Some(reasons) = table.get("reasons").and_then(Item::as_table_like) {
            entry.reasons.notes = Notes::of_key(table, "reasons");
            for (k, v) in reasons.iter() {
                let (Ok(cap), Some(s)) = (k.parse::<Capability>(), v.as_str()) else { continue };
                entry.reasons.items.insert(cap, Field { notes: Notes::of_key(reasons, k), value: s.to_string() });
            }
        }
        if !is_program {
            if let Some(apis) = table.get("apis").and_then(Item::as_table_like) {
                entry.apis.notes = Notes::of_key(table, "apis");
                for (k, v) in apis.iter() {
                    let (Ok(cap), Some(array)) = (k.parse::<Capability>(), v.as_array()) else { continue };
                    entry.apis.items.insert(cap, List::read(Notes::of_key(apis, k), array));
                }
            }
        }
        entry
    }

    /// Whether the entry pins APIs (it has an `apis` table).
    fn pins(&self) -> bool {
        !self.apis.items.is_empty()
    }

    /// Grant `caps`; with `apis`, pin each pinnable capability to the APIs given for it.
    fn bless(&mut self, package: Option<&str>, caps: &BTreeSet<Capability>, apis: Option<&BTreeMap<Capability, BTreeSet<String>>>) {
        self.package = package
            .map(|p| Field { notes: self.package.take().map(|f| f.notes).unwrap_or_default(), value: p.to_string() });
        self.capabilities.bless(caps);
        let had_reasons = !self.reasons.items.is_empty();
        self.reasons.items.retain(|c, _| caps.contains(c));
        if had_reasons && self.reasons.items.is_empty() {
            self.reasons.notes = Notes::default();
        }
        match apis {
            Some(apis) => {
                let mut old = std::mem::take(&mut self.apis.items);
                for &cap in caps.iter().filter(|c| pinnable(**c)) {
                    let mut list = old.remove(&cap).unwrap_or_default();
                    list.bless(apis.get(&cap).unwrap_or(&BTreeSet::new()));
                    self.apis.items.insert(cap, list);
                }
                if self.apis.items.is_empty() {
                    self.apis.notes = Notes::default();
                }
            }
            None => self.apis = Apis::default(),
        }
    }
}

/// `[program]` or `[crate]` and their entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Section {
    /// Comments of an explicit `[program]` / `[crate]` header: kept as that header.
    notes: Notes,
    entries: BTreeMap<String, Entry>,
}

impl Section {
    fn read(root: &dyn TableLike, key: &str) -> Section {
        let mut section = Section::default();
        let Some(table) = root.get(key).and_then(Item::as_table_like) else { return section };
        if matches!(root.get(key), Some(Item::Table(t)) if !t.is_implicit() && !t.is_dotted()) {
            section.notes = Notes::of_key(root, key);
        }
        for (name, item) in table.iter() {
            let Some(entry) = item.as_table_like() else { continue };
            let notes = Notes::of_key(table, name);
            section.entries.insert(name.to_string(), Entry::read(notes, entry, key == "program"));
        }
        section
    }
}

/// A baseline document: grants and comments, ready to be written in canonical form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Doc {
    /// The comments at the top of the file.
    head: Vec<Line>,
    version: Notes,
    target: Option<Field<String>>,
    programs: Section,
    crates: Section,
    /// The comments after the last entry.
    tail: Vec<Line>,
}

impl Doc {
    /// Read a TOML text, valid baseline or not; `None` when it is not TOML.
    pub(crate) fn read(text: &str) -> Option<Doc> {
        let doc: DocumentMut = text.parse().ok()?;
        let root = doc.as_table();
        let mut out = Doc {
            version: Notes::of_key(root, "version"),
            programs: Section::read(root, "program"),
            crates: Section::read(root, "crate"),
            tail: without_trailing_blanks(normalize(whole_lines(&format!("{}\n", text_of(Some(doc.trailing())))))),
            ..Doc::default()
        };
        if let Some(t) = root.get("target").and_then(Item::as_str) {
            out.target = Some(Field { notes: Notes::of_key(root, "target"), value: t.to_string() });
        }
        // The comments above whatever comes first are the file's header.
        match root.iter().next() {
            Some(("version", Item::Value(_))) => out.head = std::mem::take(&mut out.version.above),
            Some(("target", Item::Value(_))) => {
                if let Some(t) = out.target.as_mut() {
                    out.head = std::mem::take(&mut t.notes.above);
                }
            }
            _ => {}
        }
        Some(out)
    }

    fn fresh() -> Doc {
        let mut head: Vec<Line> = HEADER.iter().map(|l| Line::Comment(l.to_string())).collect();
        head.push(Line::Blank);
        Doc { head, ..Doc::default() }
    }

    /// The document granting exactly `surface`, keeping what `old` says about what remains;
    /// the crates named in `pin` and those `old` pins have their APIs pinned.
    pub(crate) fn bless(old: Option<Doc>, surface: &Surface, pin: &BTreeSet<String>) -> Doc {
        let mut doc = old.unwrap_or_else(Doc::fresh);
        let target_notes = doc.target.take().map(|t| t.notes).unwrap_or_default();
        doc.target = Some(Field { notes: target_notes, value: surface.target.clone() });

        let mut programs: BTreeMap<&str, (&str, BTreeSet<Capability>)> = BTreeMap::new();
        let mut crates: BTreeMap<&str, BTreeSet<Capability>> = BTreeMap::new();
        // The APIs each crate uses per capability: what a pin grants.
        let mut apis: BTreeMap<&str, BTreeMap<Capability, BTreeSet<String>>> = BTreeMap::new();
        for p in &surface.programs {
            let slot = programs.entry(&p.name).or_insert((&p.package, BTreeSet::new()));
            slot.0 = slot.0.min(&p.package);
            for c in &p.crates {
                // The same rule as `check`: a program is granted what counts for it.
                slot.1.extend(c.findings.iter().filter(|f| f.counts_for_program() && f.granted()).map(|f| f.capability));
                if !c.capabilities.is_empty() {
                    crates.entry(&c.name).or_default().extend(c.capabilities.iter().copied());
                    let used = apis.entry(&c.name).or_default();
                    for f in c.findings.iter().filter(|f| f.granted()) {
                        used.entry(f.capability).or_default().insert(f.path.clone());
                    }
                }
            }
        }
        let mut old_programs = std::mem::take(&mut doc.programs.entries);
        for (name, (package, caps)) in programs {
            let mut e = old_programs.remove(name).unwrap_or_default();
            e.bless(Some(package), &caps, None);
            doc.programs.entries.insert(name.to_string(), e);
        }
        let mut old_crates = std::mem::take(&mut doc.crates.entries);
        for (name, caps) in crates {
            let mut e = old_crates.remove(name).unwrap_or_default();
            let pinned = (e.pins() || pin.contains(name)).then(|| &apis[name]);
            e.bless(None, &caps, pinned);
            doc.crates.entries.insert(name.to_string(), e);
        }
        doc
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        lines(&mut out, "", &self.head);
        lines(&mut out, "", &self.version.above);
        let _ = writeln!(out, "version = {FORMAT_VERSION}{}", inline(&self.version.inline));
        if let Some(t) = &self.target {
            field(&mut out, "target", &t.value, &t.notes);
        }
        for (kind, section) in [("program", &self.programs), ("crate", &self.crates)] {
            if !section.notes.is_empty() {
                header(&mut out, kind, &section.notes);
            }
            for (name, entry) in &section.entries {
                let path = format!("{kind}.{}", key(name));
                header(&mut out, &path, &entry.notes);
                if let Some(p) = &entry.package {
                    field(&mut out, "package", &p.value, &p.notes);
                }
                list(&mut out, "capabilities", &entry.capabilities);
                if let Some(r) = &entry.reason {
                    field(&mut out, "reason", &r.value, &r.notes);
                }
                if !entry.reasons.items.is_empty() || !entry.reasons.notes.is_empty() {
                    header(&mut out, &format!("{path}.reasons"), &entry.reasons.notes);
                    for (cap, r) in &entry.reasons.items {
                        field(&mut out, &key(cap.as_str()), &r.value, &r.notes);
                    }
                }
                if !entry.apis.items.is_empty() {
                    header(&mut out, &format!("{path}.apis"), &entry.apis.notes);
                    for (cap, l) in &entry.apis.items {
                        list(&mut out, &key(cap.as_str()), l);
                    }
                }
            }
        }
        if !self.tail.is_empty() {
            out.push('\n');
            lines(&mut out, "", &self.tail);
        }
        out
    }
}

/// A key as the file writes it: bare when it can be (`A-Za-z0-9_-`), else a basic string.
fn key(name: &str) -> String {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        name.to_string()
    } else {
        string(name)
    }
}

/// A TOML basic string on one line: `"` and `\` escaped, control characters as `\b`, `\t`,
/// `\n`, `\f`, `\r` or `\uXXXX`, and every invisible or direction-changing character
/// (`U+202E` and the like) as `\uXXXX` or `\UXXXXXXXX`, so that the file shows what it says.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if crate::text::escape::is_dangerous(c) => {
                if u32::from(c) <= 0xFFFF {
                    let _ = write!(out, "\\u{:04X}", u32::from(c));
                } else {
                    let _ = write!(out, "\\U{:08X}", u32::from(c));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A comment as the file writes it: an invisible or direction-changing character (which TOML
/// allows in comments) becomes the text `\u{202e}`, so that no line reads differently from
/// what it is.
fn comment(c: &str) -> std::borrow::Cow<'_, str> {
    if !c.chars().any(|ch| ch != '\t' && crate::text::escape::is_dangerous(ch)) {
        return std::borrow::Cow::Borrowed(c);
    }
    let mut out = String::with_capacity(c.len() + 8);
    for ch in c.chars() {
        if ch != '\t' && crate::text::escape::is_dangerous(ch) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(ch));
        } else {
            out.push(ch);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn inline(c: &Option<String>) -> String {
    c.as_ref().map(|c| format!(" {}", comment(c))).unwrap_or_default()
}

fn lines(out: &mut String, indent: &str, lines: &[Line]) {
    for l in lines {
        match l {
            Line::Comment(c) => {
                let _ = writeln!(out, "{indent}{}", comment(c));
            }
            Line::Blank => out.push('\n'),
        }
    }
}

fn header(out: &mut String, path: &str, notes: &Notes) {
    out.push('\n');
    lines(out, "", &notes.above);
    let _ = writeln!(out, "[{path}]{}", inline(&notes.inline));
}

fn field(out: &mut String, key: &str, value: &str, notes: &Notes) {
    lines(out, "", &notes.above);
    let _ = writeln!(out, "{key} = {}{}", string(value), inline(&notes.inline));
}

fn list<T: ListItem>(out: &mut String, key: &str, l: &List<T>) {
    lines(out, "", &l.notes.above);
    if l.elems.is_empty() && l.open.is_none() && l.end.is_empty() {
        let _ = writeln!(out, "{key} = []{}", inline(&l.notes.inline));
        return;
    }
    let _ = writeln!(out, "{key} = [{}", inline(&l.open));
    for e in &l.elems {
        lines(out, INDENT, &e.notes.above);
        let _ = writeln!(out, "{INDENT}{},{}", string(e.value.text()), inline(&e.notes.inline));
    }
    lines(out, INDENT, &l.end);
    let _ = writeln!(out, "]{}", inline(&l.notes.inline));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Line {
        Line::Comment(s.into())
    }

    #[test]
    fn decor_lines() {
        assert_eq!(whole_lines("\n# a\n\n\n# b\n  "), vec![Line::Blank, c("# a"), Line::Blank, Line::Blank, c("# b")]);
        assert_eq!(normalize(whole_lines("\n# a\n\n\n# b\n\n")), vec![c("# a"), Line::Blank, c("# b"), Line::Blank]);
        assert_eq!(split_first_line(" # x\n    # y\n    "), (Some("# x".into()), vec![c("# y")]));
        assert_eq!(split_first_line(" "), (None, vec![]));
    }

    #[test]
    fn array_comments_follow_their_capability() {
        let text = "version = 1\n[crate.a]\ncapabilities = [ # open\n    # about unsafe\n    \"unsafe\", # u\n    \"fs.read\", # f\n    # end\n] # after\n";
        let doc = Doc::read(text).unwrap();
        let l = &doc.crates.entries["a"].capabilities;
        assert_eq!(l.open.as_deref(), Some("# open"));
        assert_eq!(l.elems[0].value, Capability::FsRead);
        assert_eq!(l.elems[0].notes.inline.as_deref(), Some("# f"));
        assert_eq!(l.elems[1].notes.above, vec![c("# about unsafe")]);
        assert_eq!(l.elems[1].notes.inline.as_deref(), Some("# u"));
        assert_eq!(l.end, vec![c("# end")]);
        assert_eq!(l.notes.inline.as_deref(), Some("# after"));
        let once = doc.render();
        assert_eq!(Doc::read(&once).unwrap().render(), once);
    }

    #[test]
    fn strings_and_keys_are_quoted_when_needed() {
        assert_eq!(key("velaris"), "velaris");
        assert_eq!(key("x-y_z9"), "x-y_z9");
        assert_eq!(key("a.b"), "\"a.b\"");
        assert_eq!(key("it's"), "\"it's\"", "a basic string, never a literal one");
        assert_eq!(string("plain"), "\"plain\"");
        let nasty = "a\"b\\c\nd\te\u{7f}f\u{202e}g\u{200b}h\u{e0041}i\u{1b}[2J";
        let written = string(nasty);
        assert_eq!(written, r#""a\"b\\c\nd\te\u007Ff\u202Eg\u200Bh\U000E0041i\u001B[2J""#);
        let doc: DocumentMut = format!("x = {written}").parse().unwrap();
        assert_eq!(doc["x"].as_str(), Some(nasty));
        assert_eq!(comment("# ok\tfine"), "# ok\tfine");
        assert_eq!(comment("# a\u{202e}b"), "# a\\u{202e}b");
    }
}
