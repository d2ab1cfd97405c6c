//! Reading the files velaris is pointed at, and cleaning up after its own writes.
//!
//! Every path velaris reads (lockfiles, `--old`/`--new`, the baseline, cargo configuration,
//! cache entries, manifests, the rules overlay) may be broken or hostile: a FIFO that never
//! answers, `/dev/zero`, a directory, a file of many gigabytes, a symbolic link that leads out of
//! the repository. This module owns opening such paths:
//!
//! - only regular files are read, checked on the opened descriptor (the open itself does not
//!   block on a FIFO), and the error says what the path is instead;
//! - never more than a stated number of bytes, checked before reading and while reading;
//! - text must be UTF-8, and an error gives the byte offset, line and column of the first bad
//!   byte;
//! - [`contained`] refuses a path that resolves (through symbolic links) outside a root.
//!
//! It also owns the names of velaris' temporary files and [`sweep_baseline_temps`] /
//! [`sweep_cache_temps`], which remove the ones a killed run left behind.
//!
//! What it does not do: interpret the bytes, or write anything but cache files
//! ([`write_cache_file`]); the baseline's atomic write is `baseline::write_atomic`.

use std::fs::{self, File};
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Cap for the text files velaris reads: lockfiles, manifests, cargo configuration, the rules
/// overlay. The largest real `Cargo.lock` files are a few hundred kilobytes.
pub const TEXT_CAP: u64 = 32 * 1024 * 1024;

/// Cap for `velaris.capabilities` (100,000 entries are about 6 MiB).
pub const BASELINE_CAP: u64 = 64 * 1024 * 1024;

/// A temporary file of a killed run is removed from the cache after this long, whatever
/// process it names.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(60 * 60);

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{} does not exist", .path.display())]
    NotFound { path: PathBuf },
    #[error("{} is {kind}, not a regular file; refusing to read it", .path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{} is larger than the {limit}-byte limit for {what}", .path.display())]
    TooLarge { path: PathBuf, limit: u64, what: &'static str },
    #[error(
        "{} is not valid UTF-8: invalid byte at offset {offset} (line {line}, column {column})",
        .path.display()
    )]
    NotUtf8 { path: PathBuf, offset: usize, line: usize, column: usize },
    #[error(
        "{} leads outside {} (it resolves to {}); refusing to follow it",
        .path.display(), .root.display(), .target.display()
    )]
    Outside { path: PathBuf, root: PathBuf, target: PathBuf },
    #[error("cannot read {}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FileError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::NotFound { .. })
    }

    fn io(path: &Path, source: io::Error) -> FileError {
        if source.kind() == ErrorKind::NotFound {
            FileError::NotFound { path: path.to_path_buf() }
        } else {
            FileError::Io { path: path.to_path_buf(), source }
        }
    }
}

/// What a file type is, for messages.
fn kind_of(ft: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Opens `path` for reading without blocking on a FIFO or a device, and checks on the opened
/// descriptor that it is a regular file; returns it with its size.
fn open_regular(path: &Path) -> Result<(File, u64), FileError> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO opened for reading blocks until a writer appears, unless non-blocking; a
        // terminal must not become the controlling one. Reads of a regular file ignore both.
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) => {
            // A socket cannot be opened at all (ENXIO): say what it is.
            if let Ok(m) = fs::metadata(path) {
                if !m.is_file() {
                    return Err(FileError::NotRegular { path: path.to_path_buf(), kind: kind_of(&m.file_type()) });
                }
            }
            return Err(FileError::io(path, e));
        }
    };
    let meta = file.metadata().map_err(|e| FileError::io(path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotRegular { path: path.to_path_buf(), kind: kind_of(&meta.file_type()) });
    }
    Ok((file, meta.len()))
}

/// The bytes of the regular file at `path`, at most `cap` of them; `what` names the kind of
/// file in the too-large message ("a lockfile").
pub fn read_bytes(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_regular(path)?;
    let too_large = || FileError::TooLarge { path: path.to_path_buf(), limit: cap, what };
    if len > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| FileError::io(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_bytes`], `Ok(None)` when nothing is at `path`.
pub fn read_bytes_if_exists(path: &Path, cap: u64, what: &'static str) -> Result<Option<Vec<u8>>, FileError> {
    match read_bytes(path, cap, what) {
        Ok(b) => Ok(Some(b)),
        Err(FileError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The UTF-8 text of the regular file at `path`, at most `cap` bytes.
pub fn read_text(path: &Path, cap: u64, what: &'static str) -> Result<String, FileError> {
    text(path, read_bytes(path, cap, what)?)
}

/// Bytes that must be UTF-8 text, named by `path` in the error.
pub fn text(path: &Path, bytes: Vec<u8>) -> Result<String, FileError> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let (line, column) = line_column(&e.as_bytes()[..offset]);
        FileError::NotUtf8 { path: path.to_path_buf(), offset, line, column }
    })
}

/// 1-based line and column (in characters) of the end of `valid`, which is UTF-8.
pub fn line_column(valid: &[u8]) -> (usize, usize) {
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
    (line, column)
}

/// Nothing when `path` does not exist or resolves inside `root`; an [`FileError::Outside`]
/// error when it (or a symbolic link on the way) leads elsewhere. A dangling link is refused
/// too: what it would create is outside anyone's review.
pub fn contained(root: &Path, path: &Path) -> Result<(), FileError> {
    let link = match fs::symlink_metadata(path) {
        Ok(m) => m.file_type().is_symlink(),
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(FileError::io(path, e)),
    };
    let root_real = fs::canonicalize(root).map_err(|e| FileError::io(root, e))?;
    let target = match fs::canonicalize(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound && link => {
            let to = fs::read_link(path).unwrap_or_default();
            return Err(FileError::Outside { path: path.to_path_buf(), root: root_real, target: to });
        }
        Err(e) => return Err(FileError::io(path, e)),
    };
    if target.starts_with(&root_real) {
        Ok(())
    } else {
        Err(FileError::Outside { path: path.to_path_buf(), root: root_real, target })
    }
}

/// The prefix and suffix of the temporary file `baseline::write_atomic` writes next to
/// `file_name`: `.NAME.` + 6 random alphanumerics + `.tmp`.
pub fn baseline_temp_affixes(file_name: &str) -> (String, &'static str) {
    (format!(".{file_name}."), ".tmp")
}

/// Removes the temporary files a killed `bless` or `fmt` left next to `file_name` in `dir`
/// (named as [`baseline_temp_affixes`] says, nothing else); returns how many. Best effort.
pub fn sweep_baseline_temps(dir: &Path, file_name: &str) -> usize {
    let (prefix, suffix) = baseline_temp_affixes(file_name);
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let ours = name
            .strip_prefix(prefix.as_str())
            .and_then(|r| r.strip_suffix(suffix))
            .is_some_and(|mid| mid.len() == 6 && mid.bytes().all(|b| b.is_ascii_alphanumeric()));
        if ours && e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The directory under a cache root where cache files are written before they are renamed
/// into place.
pub fn cache_temp_dir(cache_root: &Path) -> PathBuf {
    cache_root.join("tmp")
}

const CACHE_TEMP_PREFIX: &str = "velaris-";

/// Writes `bytes` to `dest` (a file under `cache_root`) atomically: a temporary file in
/// [`cache_temp_dir`], named after this process, flushed, then renamed over `dest`. Readers
/// see the old file, no file, or the complete new one; a killed run leaves its temporary file
/// where [`sweep_cache_temps`] finds it.
pub fn write_cache_file(cache_root: &Path, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = dest.parent().unwrap_or(cache_root);
    fs::create_dir_all(dir)?;
    let tmp_dir = cache_temp_dir(cache_root);
    fs::create_dir_all(&tmp_dir)?;
    let prefix = format!("{CACHE_TEMP_PREFIX}{}-", std::process::id());
    let mut tmp = tempfile::Builder::new().prefix(&prefix).suffix(".tmp").tempfile_in(&tmp_dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(dest).map_err(|e| e.error)?;
    Ok(())
}

/// Whether process `pid` is gone (so its temporary files are stale).
fn process_gone(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 only checks whether the process exists; nothing is sent.
        let r = unsafe { libc::kill(pid, 0) };
        r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Removes the temporary files of runs that are gone from `cache_root`'s [`cache_temp_dir`]:
/// those whose process no longer exists, and any older than [`STALE_TEMP_AGE`]; also stray
/// temporary files older than that in `cache_root/surface` (where earlier versions wrote
/// them). Only files named as velaris names them are touched. Returns how many were removed.
pub fn sweep_cache_temps(cache_root: &Path) -> usize {
    let now = SystemTime::now();
    let old = |e: &fs::DirEntry| {
        e.metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > STALE_TEMP_AGE))
    };
    let mut removed = 0;
    if let Ok(rd) = fs::read_dir(cache_temp_dir(cache_root)) {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(rest) = name.strip_prefix(CACHE_TEMP_PREFIX).and_then(|r| r.strip_suffix(".tmp")) else {
                continue;
            };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let stale = match pid {
                Some(pid) if pid == std::process::id() => false,
                Some(pid) => process_gone(pid) || old(&e),
                None => old(&e),
            };
            if stale && e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
    }
    if let Ok(rd) = fs::read_dir(cache_root.join("surface")) {
        for e in rd.flatten() {
            let name = e.file_name();
            let ours = name.to_str().is_some_and(|n| n.starts_with(".tmp"));
            if ours && old(&e) && e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, "hello\n").unwrap();
        assert_eq!(read_text(&f, 100, "a test file").unwrap(), "hello\n");
        let e = read_text(dir.path(), 100, "a test file").unwrap_err();
        assert!(e.to_string().contains("is a directory, not a regular file"), "{e}");
        let e = read_text(&dir.path().join("nope"), 100, "a test file").unwrap_err();
        assert!(e.is_not_found(), "{e}");
        let e = read_text(Path::new("/dev/zero"), 100, "a test file").unwrap_err();
        assert!(e.to_string().contains("/dev/zero is a character device"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bytes(&p, 100, "a test file").unwrap_err();
        assert!(matches!(e, FileError::NotRegular { kind: "a FIFO (named pipe)", .. }), "{e}");
    }

    #[test]
    fn size_cap_and_utf8_position() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, "0123456789").unwrap();
        assert!(matches!(read_bytes(&f, 9, "a test file"), Err(FileError::TooLarge { limit: 9, .. })));
        assert_eq!(read_bytes(&f, 10, "a test file").unwrap().len(), 10);
        fs::write(&f, b"ab\nc\xc3\xa9d\xffe").unwrap();
        match read_text(&f, 100, "a test file").unwrap_err() {
            FileError::NotUtf8 { offset, line, column, .. } => assert_eq!((offset, line, column), (7, 2, 4)),
            e => panic!("{e}"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn containment_follows_links() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "x").unwrap();
        fs::create_dir(root.path().join("sub")).unwrap();
        fs::write(root.path().join("sub/real"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("out")).unwrap();
        std::os::unix::fs::symlink("sub/real", root.path().join("in")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.path().join("dangling")).unwrap();
        assert!(contained(root.path(), &root.path().join("in")).is_ok());
        assert!(contained(root.path(), &root.path().join("missing")).is_ok());
        let e = contained(root.path(), &root.path().join("out")).unwrap_err();
        assert!(matches!(e, FileError::Outside { .. }), "{e}");
        assert!(e.to_string().contains("leads outside"), "{e}");
        assert!(matches!(contained(root.path(), &root.path().join("dangling")), Err(FileError::Outside { .. })));
    }

    #[test]
    fn baseline_temp_sweep_removes_only_ours() {
        let dir = tempfile::tempdir().unwrap();
        for n in [".velaris.capabilities.a1B2c3.tmp", ".velaris.capabilities.x.tmp", "velaris.capabilities", ".other.a1B2c3.tmp"] {
            fs::write(dir.path().join(n), "x").unwrap();
        }
        assert_eq!(sweep_baseline_temps(dir.path(), "velaris.capabilities"), 1);
        let mut left: Vec<String> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, [".other.a1B2c3.tmp", ".velaris.capabilities.x.tmp", "velaris.capabilities"]);
    }

    #[test]
    fn cache_temps_of_gone_or_old_runs_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let tmp = cache_temp_dir(root.path());
        fs::create_dir_all(&tmp).unwrap();
        // pid_max is at most 2^22 on Linux: this process cannot exist.
        let gone = tmp.join("velaris-999999999-abc.tmp");
        let mine = tmp.join(format!("velaris-{}-abc.tmp", std::process::id()));
        let old_unknown = tmp.join("velaris-x-abc.tmp");
        let fresh_unknown = tmp.join("velaris-y-abc.tmp");
        let foreign = tmp.join("notes.txt");
        for p in [&gone, &mine, &old_unknown, &fresh_unknown, &foreign] {
            fs::write(p, "x").unwrap();
        }
        let past = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
        File::options().write(true).open(&old_unknown).unwrap().set_modified(past).unwrap();
        assert_eq!(sweep_cache_temps(root.path()), 2);
        assert!(!gone.exists() && !old_unknown.exists());
        assert!(mine.exists() && fresh_unknown.exists() && foreign.exists());
    }

    #[test]
    fn cache_write_goes_through_the_temp_dir() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("a/b/c.json");
        write_cache_file(root.path(), &dest, b"one").unwrap();
        write_cache_file(root.path(), &dest, b"two").unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"two");
        assert_eq!(fs::read_dir(cache_temp_dir(root.path())).unwrap().count(), 0);
    }
}
