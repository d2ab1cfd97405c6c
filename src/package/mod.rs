//! Safe, in-memory unpacking of a published `.crate` file.
//!
//! This module owns turning the bytes of a `.crate` (a gzip'd tar whose entries all
//! live under `NAME-VERSION/`) into a [`FileTree`] of regular files, treating those
//! bytes as hostile: every entry name and type is checked, and the decompressed
//! stream, each file and the entry count are bounded by [`Limits`]. Each rejection is
//! an [`ArchiveError`] whose [`rule`](ArchiveError::rule) is a stable code. It does no
//! IO (it never touches the disk, not even a temporary directory), no network and no
//! digest checks: fetching the crate and verifying its sha256 belong to the caller.
//!
//! Decisions beyond what cargo itself enforces, so that every byte of the archive is
//! accounted for and no two readers can see different contents:
//! * only the first gzip member is read (`GzDecoder`, as cargo), and any bytes after it
//!   are rejected (`corrupt-archive`) rather than silently ignored;
//! * after the tar end-of-archive marker only zero bytes may follow (`corrupt-archive`);
//!   they still count towards `max_total`, so a bomb of padding is `too-large`;
//! * names must be canonical: no `.` or empty components, no trailing `/` on a file,
//!   no NUL or backslash, at most 4096 bytes (`bad-name`);
//! * only regular files (`0`/NUL) and directories (`5`) are accepted; pax global
//!   headers (`g`) are skipped (the tar reader does not apply them either); everything
//!   else, including "contiguous" files (`7`), is `special-entry`.
//!
//! Directory entries are checked like files but do not appear in the tree.

mod error;
mod limits;
mod names;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{self, Read};

use tar::EntryType;

pub use error::ArchiveError;
pub use limits::{FILE_CAP, Limits, MAX_ENTRIES, MIN_TOTAL, RATIO};
pub use names::MAX_NAME_LEN;

use limits::LimitedReader;
use names::{Conflict, Layout};

/// The regular files of a package. Key: path relative to the `NAME-VERSION/` prefix,
/// `/`-separated, canonical (no `.`, `..` or empty components).
pub type FileTree = BTreeMap<String, Vec<u8>>;

/// The result of [`unpack_crate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    pub files: FileTree,
    /// Sum of the sizes of the files in `files` (tar headers and padding excluded).
    pub unpacked_bytes: u64,
}

/// Initial buffer for one file; the header's size is never trusted for more.
const PREALLOC: u64 = 64 * 1024;

/// Unpacks the `.crate` `bytes` of package `name` `version` in memory.
///
/// Every entry must lie under `NAME-VERSION/`; the first broken rule ends the
/// unpacking (see [`ArchiveError`] for the rules).
pub fn unpack_crate(
    bytes: &[u8],
    name: &str,
    version: &str,
    limits: &Limits,
) -> Result<Unpacked, ArchiveError> {
    let prefix = format!("{name}-{version}");
    let tripped = Cell::new(false);
    let stream_error = |err: io::Error, context: &str| -> ArchiveError {
        if tripped.get() {
            ArchiveError::TooLarge {
                limit: limits.max_total,
            }
        } else {
            ArchiveError::Corrupt {
                detail: format!("{context}: {}", describe(&err)),
            }
        }
    };

    let gunzip = flate2::bufread::GzDecoder::new(bytes);
    let mut archive = tar::Archive::new(LimitedReader::new(gunzip, limits.max_total, &tripped));
    let mut files = FileTree::new();
    let mut layout = Layout::new();
    let mut unpacked_bytes: u64 = 0;
    let mut count: usize = 0;

    let entries = archive
        .entries()
        .map_err(|e| stream_error(e, "cannot read the archive"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| stream_error(e, "cannot read an entry header"))?;
        count += 1;
        if count > limits.max_entries {
            return Err(ArchiveError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() {
            continue;
        }
        let raw = entry.path_bytes().into_owned();
        let is_dir = kind.is_dir();
        let rel = names::relative_path(&raw, &prefix, is_dir)?;
        // `relative_path` succeeded, so `raw` is UTF-8.
        let path = String::from_utf8_lossy(&raw).into_owned();
        if pax_path(&mut entry).is_some_and(|pax| pax != raw) {
            // The tar crate prefers a GNU long name to a pax `path`; other readers
            // prefer the pax record. Refuse the ambiguity rather than pick one.
            return Err(ArchiveError::BadName {
                path,
                reason: "its gnu long name and pax path differ",
            });
        }
        let link_target = || entry.link_name_bytes().unwrap_or_default().into_owned();
        match kind {
            EntryType::Regular => {}
            EntryType::Directory => {
                if let Some(rel) = rel {
                    layout
                        .add(rel, false)
                        .map_err(|c| conflict(c, path, &prefix))?;
                }
                continue;
            }
            EntryType::Symlink => {
                return Err(ArchiveError::Symlink {
                    path,
                    target: link_target(),
                });
            }
            EntryType::Link => {
                return Err(ArchiveError::HardLink {
                    path,
                    target: link_target(),
                });
            }
            other => {
                return Err(ArchiveError::SpecialEntry {
                    path,
                    type_byte: other.as_byte(),
                });
            }
        }
        let Some(rel) = rel else {
            unreachable!("relative_path returns a path for every non-directory");
        };

        let size = entry.size();
        if size > limits.max_file {
            return Err(ArchiveError::FileTooLarge {
                path,
                size,
                limit: limits.max_file,
            });
        }
        match unpacked_bytes.checked_add(size) {
            Some(total) if total <= limits.max_total => {}
            _ => {
                return Err(ArchiveError::TooLarge {
                    limit: limits.max_total,
                });
            }
        }
        layout
            .add(rel, true)
            .map_err(|c| conflict(c, path.clone(), &prefix))?;

        // The tar entry yields at most `size` bytes; the extra byte of the cap only
        // guards against that ever changing. The stream under it errors past
        // `max_total`, so a lying header cannot make this read unbounded.
        let mut data = Vec::with_capacity(size.min(PREALLOC) as usize);
        (&mut entry)
            .take(limits.max_file.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|e| stream_error(e, &format!("cannot read entry {path:?}")))?;
        let got = data.len() as u64;
        if got > limits.max_file {
            return Err(ArchiveError::FileTooLarge {
                path,
                size: got,
                limit: limits.max_file,
            });
        }
        if got != size {
            return Err(ArchiveError::Corrupt {
                detail: format!(
                    "entry {path:?} is truncated: its header says {size} bytes, the archive ends after {got}"
                ),
            });
        }
        unpacked_bytes += size;
        files.insert(rel.to_owned(), data);
    }

    // Past the end-of-archive marker: drain to the end of the gzip member (which also
    // makes the decoder check its CRC and length) and insist on zero padding.
    let mut rest = archive.into_inner();
    let mut buf = [0u8; 8192];
    loop {
        let n = rest
            .read(&mut buf)
            .map_err(|e| stream_error(e, "cannot read past the end of the archive"))?;
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|&b| b != 0) {
            return Err(ArchiveError::Corrupt {
                detail: "non-zero data after the end-of-archive marker".into(),
            });
        }
    }
    let trailing = rest.into_inner().into_inner();
    if !trailing.is_empty() {
        return Err(ArchiveError::Corrupt {
            detail: format!(
                "{} bytes of trailing data after the gzip stream",
                trailing.len()
            ),
        });
    }

    Ok(Unpacked {
        files,
        unpacked_bytes,
    })
}

fn conflict(c: Conflict, path: String, prefix: &str) -> ArchiveError {
    match c {
        Conflict::Duplicate => ArchiveError::DuplicateName { path },
        Conflict::FileAndDir => ArchiveError::FileDirConflict { path },
        Conflict::InsideFile(file) => ArchiveError::InsideFile {
            path,
            file: format!("{prefix}/{file}"),
        },
    }
}

/// The pax `path` record of the entry, if any.
fn pax_path<R: Read>(entry: &mut tar::Entry<'_, R>) -> Option<Vec<u8>> {
    let records = entry.pax_extensions().ok()??;
    records
        .filter_map(Result::ok)
        .find(|r| r.key_bytes() == b"path")
        .map(|r| r.value_bytes().to_vec())
}

/// An IO error and its sources as one escaped line.
fn describe(err: &io::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    error::sanitize(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, path, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn unpacks_a_minimal_crate() {
        let bytes = gz(&tar_of(&[("a-1.0.0/src/lib.rs", b"fn x() {}")]));
        let u = unpack_crate(
            &bytes,
            "a",
            "1.0.0",
            &Limits::for_compressed(bytes.len() as u64),
        )
        .unwrap();
        assert_eq!(u.files.len(), 1);
        assert_eq!(u.files["src/lib.rs"], b"fn x() {}");
        assert_eq!(u.unpacked_bytes, 9);
    }

    #[test]
    fn empty_tar_is_an_empty_tree() {
        let bytes = gz(&tar_of(&[]));
        let u = unpack_crate(&bytes, "a", "1.0.0", &Limits::for_compressed(0)).unwrap();
        assert!(u.files.is_empty());
    }

    #[test]
    fn not_gzip_is_corrupt() {
        let err = unpack_crate(b"PK\x03\x04", "a", "1", &Limits::for_compressed(4)).unwrap_err();
        assert_eq!(err.rule(), "corrupt-archive");
        assert!(err.to_string().starts_with("corrupt archive: "), "{err}");
        let err = unpack_crate(b"", "a", "1", &Limits::for_compressed(0)).unwrap_err();
        assert_eq!(err.rule(), "corrupt-archive");
    }

    #[test]
    fn describe_flattens_sources() {
        let inner = io::Error::other("inner\u{1b}");
        let outer = io::Error::new(io::ErrorKind::InvalidData, Wrapper(inner));
        assert_eq!(describe(&outer), "outer: inner\\u{1b}");
    }

    #[derive(Debug)]
    struct Wrapper(io::Error);
    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("outer")
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
}
