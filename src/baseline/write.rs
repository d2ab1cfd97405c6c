//! Replacing the baseline on disk atomically.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Write `contents` to `path` so that the file is, at every moment, either the old one or the
/// new one: a temporary file in the same directory, flushed to disk, then renamed over `path`.
///
/// - A read-only target file is refused (`PermissionDenied`) and left as it is, checked from
///   its permission bits, so that the refusal holds even for root, whom the bits do not stop.
/// - The new file gets the old one's permissions.
/// - A directory at `path` is an error: the rename fails.
/// - When `path` is a symbolic link, the file it points to is replaced and the link kept.
/// - On any error the old file is intact and no temporary file is left behind.
pub fn write_atomic(path: &Path, contents: &str) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let old = match fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if old.as_ref().is_some_and(|m| m.is_file() && m.permissions().readonly()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is read-only; not overwriting it", target.display()),
        ));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Named so that the next run recognises and removes it if this one is killed
    // (`fsio::sweep_baseline_temps`).
    let (prefix, suffix) = crate::fsio::baseline_temp_affixes(&name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(suffix).rand_bytes(6);
    // A new file gets the usual permissions (0o666 less the umask), not a temporary file's 0o600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(contents.as_bytes())?;
    if let Some(m) = old.as_ref().filter(|m| m.is_file()) {
        tmp.as_file().set_permissions(m.permissions())?;
    }
    tmp.as_file().sync_all()?;
    // On failure the temporary file is handed back and removed when dropped.
    tmp.persist(&target)
        .map_err(|e| io::Error::new(e.error.kind(), format!("replacing {}: {}", target.display(), e.error)))?;
    // The rename is durable once the directory is; not every platform can sync one.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
