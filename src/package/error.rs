//! The rejection reasons of [`unpack_crate`](super::unpack_crate).

use std::fmt;

/// Why a `.crate` was refused. Every message names the rule it enforces
/// (`(rule: …)`), the same code [`ArchiveError::rule`] returns; entry names are
/// printed escaped, never raw.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("entry {path:?} is outside the package directory \"{prefix}/\" (rule: outside-prefix)")]
    OutsidePrefix { path: String, prefix: String },

    #[error("entry {path:?} has an absolute path (rule: absolute-path)")]
    AbsolutePath { path: String },

    #[error("entry {path:?} leaves the package directory (rule: parent-dir)")]
    ParentDir { path: String },

    #[error("entry {path:?} has a bad name: {reason} (rule: bad-name)")]
    BadName { path: String, reason: &'static str },

    #[error("entry {} has a name that is not valid utf-8 (rule: non-utf8-name)", Escaped(.name))]
    NonUtf8Name { name: Vec<u8> },

    #[error("entry {path:?} is a symbolic link (to {}) (rule: symlink)", Escaped(.target))]
    Symlink { path: String, target: Vec<u8> },

    #[error("entry {path:?} is a hard link (to {}) (rule: hard-link)", Escaped(.target))]
    HardLink { path: String, target: Vec<u8> },

    #[error(
        "entry {path:?} is {} (tar type '{}'), not a regular file or directory (rule: special-entry)",
        special_kind(*.type_byte),
        .type_byte.escape_ascii()
    )]
    SpecialEntry { path: String, type_byte: u8 },

    #[error("entry {path:?} appears more than once (rule: duplicate-name)")]
    DuplicateName { path: String },

    #[error("entry {path:?} is both a file and a directory (rule: duplicate-name)")]
    FileDirConflict { path: String },

    #[error("entry {path:?} lies inside {file:?}, which is a file (rule: duplicate-name)")]
    InsideFile { path: String, file: String },

    #[error("the package unpacks to more than {limit} bytes (rule: too-large)")]
    TooLarge { limit: u64 },

    #[error(
        "entry {path:?} is {size} bytes, more than the per-file limit of {limit} bytes (rule: file-too-large)"
    )]
    FileTooLarge { path: String, size: u64, limit: u64 },

    #[error("the archive has more than {limit} entries (rule: too-many-entries)")]
    TooManyEntries { limit: usize },

    #[error("corrupt archive: {detail} (rule: corrupt-archive)")]
    Corrupt { detail: String },
}

impl ArchiveError {
    /// Every code [`rule`](Self::rule) can return.
    pub const RULES: &'static [&'static str] = &[
        "outside-prefix",
        "absolute-path",
        "parent-dir",
        "bad-name",
        "non-utf8-name",
        "symlink",
        "hard-link",
        "special-entry",
        "duplicate-name",
        "too-large",
        "file-too-large",
        "too-many-entries",
        "corrupt-archive",
    ];

    /// Stable kebab-case code of the rule broken.
    pub fn rule(&self) -> &'static str {
        match self {
            ArchiveError::OutsidePrefix { .. } => "outside-prefix",
            ArchiveError::AbsolutePath { .. } => "absolute-path",
            ArchiveError::ParentDir { .. } => "parent-dir",
            ArchiveError::BadName { .. } => "bad-name",
            ArchiveError::NonUtf8Name { .. } => "non-utf8-name",
            ArchiveError::Symlink { .. } => "symlink",
            ArchiveError::HardLink { .. } => "hard-link",
            ArchiveError::SpecialEntry { .. } => "special-entry",
            ArchiveError::DuplicateName { .. }
            | ArchiveError::FileDirConflict { .. }
            | ArchiveError::InsideFile { .. } => "duplicate-name",
            ArchiveError::TooLarge { .. } => "too-large",
            ArchiveError::FileTooLarge { .. } => "file-too-large",
            ArchiveError::TooManyEntries { .. } => "too-many-entries",
            ArchiveError::Corrupt { .. } => "corrupt-archive",
        }
    }

    /// The archive entry name the error is about, when there is one and it is UTF-8.
    pub fn path(&self) -> Option<&str> {
        match self {
            ArchiveError::OutsidePrefix { path, .. }
            | ArchiveError::AbsolutePath { path }
            | ArchiveError::ParentDir { path }
            | ArchiveError::BadName { path, .. }
            | ArchiveError::Symlink { path, .. }
            | ArchiveError::HardLink { path, .. }
            | ArchiveError::SpecialEntry { path, .. }
            | ArchiveError::DuplicateName { path }
            | ArchiveError::FileDirConflict { path }
            | ArchiveError::InsideFile { path, .. }
            | ArchiveError::FileTooLarge { path, .. } => Some(path),
            ArchiveError::NonUtf8Name { .. }
            | ArchiveError::TooLarge { .. }
            | ArchiveError::TooManyEntries { .. }
            | ArchiveError::Corrupt { .. } => None,
        }
    }
}

/// What a tar entry type byte (not a regular file or directory) is, for messages.
fn special_kind(type_byte: u8) -> &'static str {
    match type_byte {
        b'3' => "a character device",
        b'4' => "a block device",
        b'6' => "a fifo",
        b'7' => "a contiguous file",
        b'S' => "a gnu sparse file",
        b'L' | b'K' | b'x' => "a stray extension header",
        _ => "an entry of unknown type",
    }
}

/// Quoted, escaped display of raw name bytes: valid UTF-8 runs escaped as `{:?}`
/// escapes a `str`, other bytes as `\xNN`.
struct Escaped<'a>(&'a [u8]);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                if c == '\'' {
                    f.write_str("'")?;
                } else {
                    write!(f, "{}", c.escape_debug())?;
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        f.write_str("\"")
    }
}

/// Makes free text (an IO error's message, which the tar crate may build from an entry
/// name) safe to print: control and other non-printable characters are escaped.
pub(super) fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '"' | '\'' | '\\') {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_bytes() {
        assert_eq!(Escaped(b"a/b.rs").to_string(), r#""a/b.rs""#);
        assert_eq!(
            Escaped(b"a\xff\x1b\n\"").to_string(),
            r#""a\xff\u{1b}\n\"""#
        );
        assert_eq!(Escaped("é'".as_bytes()).to_string(), "\"é'\"");
    }

    #[test]
    fn sanitize_escapes_controls_only() {
        assert_eq!(sanitize("bad \"x\"\u{1b}[31m\n"), "bad \"x\"\\u{1b}[31m\\n");
        assert_eq!(sanitize("\u{202e}"), "\\u{202e}");
    }

    #[test]
    fn messages_escape_names() {
        let e = ArchiveError::ParentDir {
            path: "x/../../etc/passwd\u{7}".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"entry "x/../../etc/passwd\u{7}" leaves the package directory (rule: parent-dir)"#
        );
        let e = ArchiveError::SpecialEntry {
            path: "p-1.0.0/dev".into(),
            type_byte: b'3',
        };
        assert!(
            e.to_string().contains("a character device (tar type '3')"),
            "{e}"
        );
    }

    #[test]
    fn rules_are_listed_and_end_messages() {
        let samples = [
            ArchiveError::TooLarge { limit: 1 },
            ArchiveError::TooManyEntries { limit: 1 },
            ArchiveError::Corrupt { detail: "x".into() },
            ArchiveError::InsideFile {
                path: "a/b".into(),
                file: "a".into(),
            },
        ];
        for e in samples {
            assert!(ArchiveError::RULES.contains(&e.rule()));
            assert!(e.to_string().ends_with(&format!("(rule: {})", e.rule())));
        }
    }
}
