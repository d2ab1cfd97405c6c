//! Local origins of `.crate` bytes: cargo's download cache, velaris' content-addressed cache,
//! and digest helpers. Nothing here interprets the bytes.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::FetchError;
use super::source::RegistryId;

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).expect("nibble"));
        out.push(char::from_digit(u32::from(b & 0xf), 16).expect("nibble"));
    }
    out
}

/// Directory names cargo may have used under `$CARGO_HOME/registry/{index,cache}` for `ids`:
/// the stable hash (cargo ≥ 1.85) and the legacy one, computed by tame-index, in order and
/// without duplicates. The legacy hash depends on the URL exactly as written, so both the
/// with- and without-trailing-slash spellings are tried (harmless: bytes are verified).
pub(crate) fn cargo_cache_dir_names(ids: &[RegistryId]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for id in ids {
        let url = id.url();
        let toggled = match url.strip_suffix('/') {
            Some(stripped) => stripped.to_owned(),
            None => format!("{url}/"),
        };
        for stable in [true, false] {
            for u in [url, toggled.as_str()] {
                if let Ok(dir) = tame_index::utils::url_to_local_dir(u, stable) {
                    if !names.contains(&dir.dir_name) {
                        names.push(dir.dir_name);
                    }
                }
            }
        }
    }
    names
}

/// `<root>/crates/sha256/<first 2 hex>/<64 hex>.crate`.
pub(crate) fn velaris_cache_path(root: &Path, checksum: &str) -> PathBuf {
    root.join("crates")
        .join("sha256")
        .join(&checksum[..2])
        .join(format!("{checksum}.crate"))
}

/// Reads a whole file, `Ok(None)` if it does not exist, refusing files over `cap` bytes.
pub(crate) fn read_file_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, FetchError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FetchError::io("cannot open", path, e)),
    };
    let len = file
        .metadata()
        .map_err(|e| FetchError::io("cannot stat", path, e))?
        .len();
    if len > cap {
        return Err(too_large(path, cap));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FetchError::io("cannot read", path, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(path, cap));
    }
    Ok(Some(bytes))
}

fn too_large(path: &Path, limit: u64) -> FetchError {
    FetchError::TooLarge {
        what: format!("file {}", path.display()),
        limit,
    }
}

/// Writes `bytes` to `dest` atomically: a temporary file in the same directory, flushed, then
/// renamed over `dest`. Readers see either the old file, no file, or the complete new one.
pub(crate) fn write_atomic(dest: &Path, bytes: &[u8]) -> Result<(), FetchError> {
    let dir = dest.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(dir).map_err(|e| FetchError::io("cannot create directory", dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".velaris-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| FetchError::io("cannot create a temporary file in", dir, e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| FetchError::io("cannot write", tmp.path().to_owned(), e))?;
    tmp.persist(dest)
        .map_err(|e| FetchError::io("cannot move a temporary file to", dest, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn velaris_layout() {
        let sum = "ab".repeat(32);
        assert_eq!(
            velaris_cache_path(Path::new("/c"), &sum),
            PathBuf::from(format!("/c/crates/sha256/ab/{sum}.crate"))
        );
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x/y.crate");
        write_atomic(&dest, b"one").unwrap();
        write_atomic(&dest, b"two").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"two");
        let entries: Vec<_> = std::fs::read_dir(dest.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);
    }

    #[test]
    fn capped_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        assert!(read_file_capped(&p, 10).unwrap().is_none());
        std::fs::write(&p, b"0123456789A").unwrap();
        assert!(matches!(
            read_file_capped(&p, 10),
            Err(FetchError::TooLarge { .. })
        ));
        assert_eq!(read_file_capped(&p, 11).unwrap().unwrap().len(), 11);
    }
}
