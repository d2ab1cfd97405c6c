//! Local origins of `.crate` bytes: cargo's download cache, velaris' content-addressed cache,
//! and digest helpers. Nothing here interprets the bytes.

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

/// Reads a whole cache file, `Ok(None)` if it does not exist, refusing files over `cap` bytes
/// and anything that is not a regular file (a FIFO there would otherwise block forever).
pub(crate) fn read_file_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, FetchError> {
    match crate::fsio::read_bytes_if_exists(path, cap, "a .crate file") {
        Ok(b) => Ok(b),
        Err(crate::fsio::FileError::TooLarge { .. }) => Err(too_large(path, cap)),
        Err(e) => Err(FetchError::file(e)),
    }
}

fn too_large(path: &Path, limit: u64) -> FetchError {
    FetchError::TooLarge {
        what: format!("file {}", path.display()),
        limit,
    }
}

/// Writes `bytes` to `dest` under the cache `root` atomically (see
/// [`crate::fsio::write_cache_file`]). Readers see either the old file, no file, or the
/// complete new one.
pub(crate) fn write_atomic(root: &Path, dest: &Path, bytes: &[u8]) -> Result<(), FetchError> {
    crate::fsio::write_cache_file(root, dest, bytes).map_err(|e| FetchError::io("cannot write", dest, e))
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
        write_atomic(dir.path(), &dest, b"one").unwrap();
        write_atomic(dir.path(), &dest, b"two").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"two");
        let entries: Vec<_> = std::fs::read_dir(dest.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);
        assert_eq!(std::fs::read_dir(crate::fsio::cache_temp_dir(dir.path())).unwrap().count(), 0);
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
