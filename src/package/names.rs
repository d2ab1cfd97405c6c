//! Entry-name rules, and the file/directory layout used to find name conflicts.

use std::collections::HashMap;

use super::ArchiveError;

/// Longest entry name accepted (Linux `PATH_MAX`): cargo could not extract a longer
/// one under `~/.cargo/registry/src` anyway, and it bounds per-entry work and messages.
pub const MAX_NAME_LEN: usize = 4096;

/// Checks the raw name of an entry and returns its path relative to `prefix`
/// (`NAME-VERSION`), or `None` for the package directory itself (only allowed as a
/// directory entry). `is_dir` allows one trailing `/`.
///
/// Order of the checks, so each hostile name gets one predictable rule: utf-8, then
/// NUL / backslash / length (`bad-name`), then a leading `/` (`absolute-path`), then
/// any `..` component (`parent-dir`), then `.` or empty components (`bad-name`), and
/// last the first component against the prefix (`outside-prefix`).
pub(super) fn relative_path<'a>(
    raw: &'a [u8],
    prefix: &str,
    is_dir: bool,
) -> Result<Option<&'a str>, ArchiveError> {
    let name =
        std::str::from_utf8(raw).map_err(|_| ArchiveError::NonUtf8Name { name: raw.to_vec() })?;
    let bad = |reason| ArchiveError::BadName {
        path: name.to_owned(),
        reason,
    };
    if name.contains('\0') {
        return Err(bad("it contains a nul byte"));
    }
    if name.contains('\\') {
        return Err(bad("it contains a backslash"));
    }
    if name.chars().any(char::is_control) {
        // A newline in a file name could forge lines of a diff or a report.
        return Err(bad("it contains a control character"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(bad("it is longer than 4096 bytes"));
    }
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.starts_with('/') {
        return Err(ArchiveError::AbsolutePath {
            path: name.to_owned(),
        });
    }
    let body = match name.strip_suffix('/') {
        Some(body) if is_dir => body,
        _ => name,
    };
    if body.split('/').any(|c| c == "..") {
        return Err(ArchiveError::ParentDir {
            path: name.to_owned(),
        });
    }
    if body.split('/').any(|c| c == ".") {
        return Err(bad("it has a \".\" component"));
    }
    if body.split('/').any(str::is_empty) {
        return Err(bad(if is_dir || !name.ends_with('/') {
            "it has an empty component"
        } else {
            "a file name ends with \"/\""
        }));
    }
    let (first, rest) = match body.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (body, None),
    };
    let outside = || ArchiveError::OutsidePrefix {
        path: name.to_owned(),
        prefix: prefix.to_owned(),
    };
    if first != prefix {
        return Err(outside());
    }
    match rest {
        Some(rest) => Ok(Some(rest)),
        None if is_dir => Ok(None),
        // A file named like the package directory itself.
        None => Err(outside()),
    }
}

/// What [`Layout::add`] found in the way.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Conflict {
    /// The same file (or a directory over a file) again.
    Duplicate,
    /// A file where earlier entries put something inside, or a directory entry where
    /// a file already is.
    FileAndDir,
    /// An ancestor (relative path given) is already a file.
    InsideFile(String),
}

/// A trie of the names seen so far, stored flat (nodes refer to children by index) so
/// deep paths cost neither quadratic time nor recursion on drop. Adding a path costs
/// O(its length).
pub(super) struct Layout {
    nodes: Vec<Node>,
}

struct Node {
    is_file: bool,
    children: HashMap<String, usize>,
}

impl Layout {
    pub(super) fn new() -> Self {
        Layout {
            nodes: vec![Node {
                is_file: false,
                children: HashMap::new(),
            }],
        }
    }

    /// Records `rel` (already checked by [`relative_path`]) as a file or a directory.
    /// Directories may repeat; everything else that collides is a [`Conflict`].
    pub(super) fn add(&mut self, rel: &str, is_file: bool) -> Result<(), Conflict> {
        let mut cur = 0;
        let mut consumed = 0;
        let mut parts = rel.split('/').peekable();
        while let Some(part) = parts.next() {
            consumed += part.len();
            let last = parts.peek().is_none();
            match self.nodes[cur].children.get(part) {
                Some(&idx) => {
                    let node_is_file = self.nodes[idx].is_file;
                    if last {
                        return match (node_is_file, is_file) {
                            (true, true) => Err(Conflict::Duplicate),
                            (false, false) => Ok(()),
                            _ => Err(Conflict::FileAndDir),
                        };
                    }
                    if node_is_file {
                        return Err(Conflict::InsideFile(rel[..consumed].to_owned()));
                    }
                    cur = idx;
                }
                None => {
                    let idx = self.nodes.len();
                    self.nodes.push(Node {
                        is_file: last && is_file,
                        children: HashMap::new(),
                    });
                    self.nodes[cur].children.insert(part.to_owned(), idx);
                    cur = idx;
                }
            }
            consumed += 1; // the '/'
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "demo-1.2.3";

    fn rule(raw: &[u8], is_dir: bool) -> &'static str {
        relative_path(raw, P, is_dir).unwrap_err().rule()
    }

    #[test]
    fn accepts_normal_names() {
        fn ok(raw: &[u8], dir: bool) -> Option<&str> {
            relative_path(raw, P, dir).unwrap()
        }
        assert_eq!(ok(b"demo-1.2.3/src/lib.rs", false), Some("src/lib.rs"));
        assert_eq!(ok(b"demo-1.2.3/Cargo.toml", false), Some("Cargo.toml"));
        assert_eq!(ok(b"demo-1.2.3/src/", true), Some("src"));
        assert_eq!(ok(b"demo-1.2.3/src", true), Some("src"));
        assert_eq!(ok(b"demo-1.2.3/", true), None);
        assert_eq!(ok(b"demo-1.2.3", true), None);
        assert_eq!(
            ok("demo-1.2.3/ünï cödé.rs".as_bytes(), false),
            Some("ünï cödé.rs")
        );
        assert_eq!(
            ok(b"demo-1.2.3/..foo/.bar...", false),
            Some("..foo/.bar...")
        );
    }

    #[test]
    fn rejects_hostile_names() {
        assert_eq!(rule(b"/etc/passwd", false), "absolute-path");
        assert_eq!(rule(b"/demo-1.2.3/x", false), "absolute-path");
        assert_eq!(rule(b"demo-1.2.3/../../etc/passwd", false), "parent-dir");
        assert_eq!(rule(b"../demo-1.2.3/x", false), "parent-dir");
        assert_eq!(rule(b"demo-1.2.3/..", true), "parent-dir");
        assert_eq!(rule(b"demo-1.2.3/../", true), "parent-dir");
        assert_eq!(rule(b"demo-1.2.3/./x", false), "bad-name");
        assert_eq!(rule(b"./demo-1.2.3/x", false), "bad-name");
        assert_eq!(rule(b"demo-1.2.3//x", false), "bad-name");
        assert_eq!(rule(b"demo-1.2.3/x/", false), "bad-name");
        assert_eq!(rule(b"demo-1.2.3/x//", true), "bad-name");
        assert_eq!(rule(b"demo-1.2.3/a\\..\\..\\x", false), "bad-name");
        assert_eq!(rule(b"demo-1.2.3/a\0b", false), "bad-name");
        assert_eq!(rule(b"", false), "bad-name");
        assert_eq!(rule(b"demo-1.2.3/\xff.rs", false), "non-utf8-name");
        assert_eq!(rule(b"other-1.0.0/x", false), "outside-prefix");
        assert_eq!(rule(b"demo-1.2.4/x", false), "outside-prefix");
        assert_eq!(rule(b"demo-1.2.3x/x", false), "outside-prefix");
        assert_eq!(rule(b"demo-1.2.3", false), "outside-prefix");
        assert_eq!(rule(b"lib.rs", false), "outside-prefix");
        assert_eq!(rule(b"DEMO-1.2.3/x", false), "outside-prefix");
    }

    #[test]
    fn name_length_is_bounded() {
        let mut long = format!("{P}/").into_bytes();
        long.resize(MAX_NAME_LEN, b'a');
        assert!(relative_path(&long, P, false).is_ok());
        long.push(b'a');
        assert_eq!(rule(&long, false), "bad-name");
    }

    #[test]
    fn layout_conflicts() {
        let mut l = Layout::new();
        assert_eq!(l.add("src/lib.rs", true), Ok(()));
        assert_eq!(l.add("src", false), Ok(()));
        assert_eq!(l.add("src/bin", false), Ok(()));
        assert_eq!(l.add("src/bin", false), Ok(()));
        assert_eq!(l.add("src/bin/x.rs", true), Ok(()));
        assert_eq!(l.add("src/lib.rs", true), Err(Conflict::Duplicate));
        assert_eq!(l.add("src", true), Err(Conflict::FileAndDir));
        assert_eq!(l.add("src/lib.rs", false), Err(Conflict::FileAndDir));
        assert_eq!(
            l.add("src/lib.rs/inner.rs", true),
            Err(Conflict::InsideFile("src/lib.rs".into()))
        );
        assert_eq!(
            l.add("src/lib.rs/d/e", false),
            Err(Conflict::InsideFile("src/lib.rs".into()))
        );
        assert_eq!(l.add("srcx", true), Ok(()));
        assert_eq!(l.add("Src", true), Ok(()));
    }

    #[test]
    fn deep_layout_is_cheap() {
        let deep = vec!["a"; MAX_NAME_LEN / 2].join("/");
        let mut l = Layout::new();
        for i in 0..200 {
            l.add(&format!("{i}/{deep}"), true).unwrap();
        }
        drop(l);
    }
}
