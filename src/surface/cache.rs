//! The analysis result cache: `<cache>/surface/<key>.json`, one entry per analyzed unit.
//!
//! The cache directory may be shared (a CI cache restored from another run), so an entry is
//! untrusted input. Each one carries an integrity tag bound to its key: HMAC-SHA256 over the key
//! (the digest of every input that produced the result) and the result's bytes. On read, an
//! entry whose key or tag does not match, that is truncated, unreadable, not a regular file or
//! not a result is ignored (with a warning), removed, and the unit analyzed again; it is never
//! used.
//!
//! The HMAC key is `VELARIS_CACHE_SECRET` when that is set, else empty. Without a secret the
//! tag is a plain digest: it stops corruption, truncation and an entry copied under another
//! key, but anyone who can write the cache can also compute it. With a secret that only trusted
//! runs have, an entry written by anyone else is not accepted. docs/cache.md has the trust
//! model of every cache directory.
//!
//! Entries are written through `fsio::write_cache_file` (a temporary file under `<cache>/tmp`,
//! then a rename), with every control and invisible character escaped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::analyze::CrateAnalysis;
use super::engine::ANALYZER_VERSION;
use crate::workspace::Unit;

/// The first word of every entry, and the domain of its tag.
const MAGIC: &str = "velaris-surface-cache/v1";

/// The environment variable holding the HMAC key of the tags.
pub const SECRET_ENV: &str = "VELARIS_CACHE_SECRET";

/// Largest entry read.
const ENTRY_CAP: u64 = 64 * 1024 * 1024;

type HmacSha256 = Hmac<Sha256>;

/// Where analysis results are cached: `<cache>/surface/<key>.json`.
pub(crate) struct ResultCache {
    pub(crate) dir: Option<PathBuf>,
    /// sha256 of the rules in force (built-in table and overlay): new rules, new results.
    pub(crate) rules: String,
}

impl ResultCache {
    /// `deps`: every crate the unit sees (extern names and `$crate` markers) with the digest
    /// of what it exports.
    pub(crate) fn key(&self, checksum: &str, unit: &Unit, target: &str, deps: &[(String, String)]) -> String {
        let mut h = Sha256::new();
        for part in [ANALYZER_VERSION, self.rules.as_str(), checksum, target, unit.root.as_str(), unit.crate_name.as_str()] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(format!("{:?}{:?}", unit.kind, unit.scope).as_bytes());
        for f in &unit.features {
            h.update(f.as_bytes());
            h.update([1]);
        }
        // What a crate resolves through its dependencies is part of its result.
        for (name, digest) in deps {
            h.update(name.as_bytes());
            h.update([0]);
            h.update(digest.as_bytes());
            h.update([1]);
        }
        format!("{:x}", h.finalize())
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        // Keys are hex digests; anything else never names a file.
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.as_ref()?.join(format!("{key}.json")))
    }

    /// The cached result for `key`, if there is one whose tag verifies.
    pub(crate) fn get(&self, key: &str) -> Option<CrateAnalysis> {
        let path = self.path(key)?;
        match read_entry(&path, key, &secret()) {
            Ok(Some(a)) => Some(a),
            Ok(None) => None,
            Err(why) => {
                eprintln!(
                    "warning: ignoring the analysis cache entry {}: {why}; analyzing again",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    pub(crate) fn put(&self, key: &str, a: &CrateAnalysis) {
        let Some(path) = self.path(key) else { return };
        let Some(root) = path.parent().and_then(Path::parent) else { return };
        let Some(bytes) = encode(key, a, &secret()) else { return };
        // A cache that cannot be written costs time next run, not correctness.
        let _ = crate::fsio::write_cache_file(root, &path, &bytes);
    }
}

fn secret() -> Vec<u8> {
    std::env::var_os(SECRET_ENV).map(|s| s.into_encoded_bytes()).unwrap_or_default()
}

fn tag(key: &str, body: &[u8], secret: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(MAGIC.as_bytes());
    mac.update(&[0]);
    mac.update(key.as_bytes());
    mac.update(&[0]);
    mac.update(body);
    mac
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Appends JSON text to `out` with every control and invisible character written as a `\u`
/// escape (they can only occur inside strings, where the escape means the same character).
fn escape_into(json: &str, out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, c) in json.char_indices() {
        if crate::text::escape::is_dangerous(c) {
            out.extend_from_slice(&json.as_bytes()[start..i]);
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.extend_from_slice(format!("\\u{u:04x}").as_bytes());
            }
            start = i + c.len_utf8();
        }
    }
    out.extend_from_slice(&json.as_bytes()[start..]);
}

/// Where the serializer writes an entry's body: escaped ([`escape_into`]) straight into the
/// entry, so that a large result is never held as text twice. A character split between two
/// writes waits for its end.
struct Escaping<'a> {
    out: &'a mut Vec<u8>,
    pending: Vec<u8>,
}

impl std::io::Write for Escaping<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut pending = std::mem::take(&mut self.pending);
        let bytes: &[u8] = if pending.is_empty() {
            buf
        } else {
            pending.extend_from_slice(buf);
            &pending
        };
        let valid = match std::str::from_utf8(bytes) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => return Err(std::io::Error::other("the serializer wrote bytes that are not UTF-8")),
        };
        let text = std::str::from_utf8(&bytes[..valid]).map_err(std::io::Error::other)?;
        escape_into(text, self.out);
        self.pending = bytes[valid..].to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An entry: `MAGIC KEY TAG\n` then the result as JSON.
fn encode(key: &str, a: &CrateAnalysis, secret: &[u8]) -> Option<Vec<u8>> {
    // The header has a fixed length (the tag is a SHA-256 HMAC): the body is written after
    // room for it, the header over that room once the tag is known.
    let head_len = MAGIC.len() + 1 + key.len() + 1 + 64 + 1;
    let mut out = vec![b' '; head_len];
    let mut w = Escaping { out: &mut out, pending: Vec::new() };
    serde_json::to_writer(&mut w, a).ok()?;
    if !w.pending.is_empty() {
        return None;
    }
    let t = tag(key, &out[head_len..], secret).finalize().into_bytes();
    let head = format!("{MAGIC} {key} {}\n", hex(&t));
    if head.len() != head_len {
        return None;
    }
    out[..head_len].copy_from_slice(head.as_bytes());
    Some(out)
}

/// `Ok(None)`: no entry. `Err`: an entry that must not be used, and why.
fn read_entry(path: &Path, key: &str, secret: &[u8]) -> Result<Option<CrateAnalysis>, String> {
    let bytes = match crate::fsio::read_bytes_if_exists(path, ENTRY_CAP, "an analysis cache entry") {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(crate::message::chain(&e)),
    };
    let nl = bytes.iter().position(|&b| b == b'\n').ok_or("no header (truncated?)")?;
    let (head, body) = (&bytes[..nl], &bytes[nl + 1..]);
    let head = std::str::from_utf8(head).map_err(|_| "a header that is not text")?;
    let mut words = head.split(' ');
    if words.next() != Some(MAGIC) {
        return Err("not an entry of this format".into());
    }
    if words.next() != Some(key) {
        return Err("it belongs to another key (swapped or copied)".into());
    }
    let given = words.next().and_then(unhex).ok_or("no integrity tag")?;
    if words.next().is_some() {
        return Err("a malformed header".into());
    }
    tag(key, body, secret)
        .verify_slice(&given)
        .map_err(|_| "its integrity tag does not match its content (tampered with, truncated, or written with another secret)")?;
    serde_json::from_slice(body).map(Some).map_err(|e| format!("not an analysis result: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::{Capability, Finding, Scope};
    use crate::surface::analyze::Exports;

    fn analysis(path: &str) -> CrateAnalysis {
        CrateAnalysis {
            findings: vec![Finding {
                capability: Capability::ProcessSpawn,
                scope: Scope::Runtime,
                file: "src/lib.rs".into(),
                line: 3,
                column: 5,
                path: path.into(),
                chain: Vec::new(),
                expanded_from: None,
                through_trait: false,
            }],
            exports: Exports::default().into(),
            files: vec!["src/lib.rs".into()],
            ..CrateAnalysis::default()
        }
    }

    fn store(dir: &Path, key: &str, a: &CrateAnalysis, secret: &[u8]) -> PathBuf {
        let path = dir.join(format!("{key}.json"));
        std::fs::write(&path, encode(key, a, secret).unwrap()).unwrap();
        path
    }

    const K1: &str = "aa11";
    const K2: &str = "bb22";

    #[test]
    fn an_entry_reads_back_only_under_its_key_and_secret() {
        let dir = tempfile::tempdir().unwrap();
        let a = analysis("std::process::Command::new");
        let p = store(dir.path(), K1, &a, b"");
        assert_eq!(read_entry(&p, K1, b"").unwrap(), Some(a.clone()));
        assert!(read_entry(&p, K2, b"").unwrap_err().contains("another key"));
        assert!(read_entry(&p, K1, b"s3cret").unwrap_err().contains("integrity tag"));
        assert_eq!(read_entry(&dir.path().join("none.json"), K1, b"").unwrap(), None);
    }

    #[test]
    fn tampered_truncated_and_swapped_entries_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = analysis("std::process::Command::new");
        let p = store(dir.path(), K1, &a, b"k");
        let good = std::fs::read(&p).unwrap();

        // Tampered: the finding replaced by nothing, as an attacker would, header kept.
        let text = String::from_utf8(good.clone()).unwrap();
        let (head, _) = text.split_once('\n').unwrap();
        std::fs::write(&p, format!("{head}\n{{\"findings\":[],\"exports\":{{\"aliases\":{{}}}}}}")).unwrap();
        assert!(read_entry(&p, K1, b"k").unwrap_err().contains("does not match"));

        // Truncated.
        std::fs::write(&p, &good[..good.len() - 10]).unwrap();
        assert!(read_entry(&p, K1, b"k").unwrap_err().contains("does not match"));
        std::fs::write(&p, &good[..20]).unwrap();
        assert!(read_entry(&p, K1, b"k").is_err());

        // Swapped: a valid entry of another key copied over this one.
        let other = store(dir.path(), K2, &analysis("x"), b"k");
        std::fs::copy(&other, &p).unwrap();
        assert!(read_entry(&p, K1, b"k").unwrap_err().contains("another key"));

        // A forged entry with a recomputed plain digest does not verify under a secret.
        std::fs::write(&p, encode(K1, &CrateAnalysis::default(), b"").unwrap()).unwrap();
        assert!(read_entry(&p, K1, b"k").is_err());
    }

    #[test]
    fn bad_entries_are_ignored_and_removed_by_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResultCache { dir: Some(dir.path().join("surface")), rules: String::new() };
        cache.put(K1, &analysis("a"));
        assert_eq!(cache.get(K1), Some(analysis("a")));
        let p = dir.path().join("surface").join(format!("{K1}.json"));
        std::fs::write(&p, "garbage").unwrap();
        assert_eq!(cache.get(K1), None);
        assert!(!p.exists(), "a bad entry is removed");
        // Keys that are not digests never name a file.
        assert_eq!(cache.get("../../etc/passwd"), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_entry_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("{K1}.json"));
        assert!(std::process::Command::new("mkfifo").arg(&p).status().unwrap().success());
        assert!(read_entry(&p, K1, b"").unwrap_err().contains("FIFO"));
    }

    #[test]
    fn characters_split_between_writes_are_escaped_whole() {
        use std::io::Write as _;
        let text = "a\u{202e}b\u{e9}c\u{e0041}";
        let bytes = text.as_bytes();
        // Every way of cutting the text in two.
        for cut in 0..=bytes.len() {
            let mut out = Vec::new();
            let mut w = Escaping { out: &mut out, pending: Vec::new() };
            w.write_all(&bytes[..cut]).unwrap();
            w.write_all(&bytes[cut..]).unwrap();
            assert!(w.pending.is_empty());
            assert_eq!(String::from_utf8(out).unwrap(), "a\\u202eb\u{e9}c\\udb40\\udc41", "cut at {cut}");
        }
    }

    #[test]
    fn invisible_characters_are_written_escaped() {
        let a = analysis("std::fs::write\u{202e}\u{7f}\u{e0041}");
        let bytes = encode(K1, &a, b"").unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.is_ascii(), "{text}");
        assert!(text.contains("\\u202e") && text.contains("\\u007f") && text.contains("\\udb40\\udc41"), "{text}");
        let dir = tempfile::tempdir().unwrap();
        let p = store(dir.path(), K1, &a, b"");
        assert_eq!(read_entry(&p, K1, b"").unwrap(), Some(a));
    }
}
