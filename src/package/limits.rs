//! Size limits for unpacking and the reader that enforces them on the decompressed stream.

use std::cell::Cell;
use std::io::{self, Read};

const MIB: u64 = 1024 * 1024;

/// Floor of [`Limits::max_total`]: cargo's own `max(512 MiB, 20 x compressed)` rule.
pub const MIN_TOTAL: u64 = 512 * MIB;
/// Decompression ratio allowed before the floor applies (cargo uses 20).
pub const RATIO: u64 = 20;
/// Ceiling of [`Limits::max_file`].
pub const FILE_CAP: u64 = 128 * MIB;
/// Default [`Limits::max_entries`].
pub const MAX_ENTRIES: usize = 100_000;

/// Bounds applied while unpacking one `.crate`.
///
/// * `max_total` bounds the *decompressed tar stream* (headers, padding, extension
///   headers, end-of-archive blocks and file contents alike), exactly like cargo's
///   `LimitErrorReader` around the `GzDecoder`. Since file contents are part of the
///   stream it also bounds [`Unpacked::unpacked_bytes`](super::Unpacked). Rule `too-large`.
/// * `max_file` bounds one regular file's size. Rule `file-too-large`.
/// * `max_entries` bounds the number of tar entries (files, directories and any
///   other entry the tar reader yields; GNU long-name and pax headers that the tar
///   reader folds into the following entry are not counted). Rule `too-many-entries`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_total: u64,
    pub max_file: u64,
    pub max_entries: usize,
}

impl Limits {
    /// The limits for a `.crate` of `len` compressed bytes.
    ///
    /// * `max_total = max(512 MiB, 20 x len)` (saturating), the rule cargo applies
    ///   when it extracts a downloaded crate, so anything cargo would unpack we unpack.
    /// * `max_file = min(max_total, 128 MiB)`: cargo has no per-file limit, but every
    ///   file here is held in one allocation and later diffed; 128 MiB is far above any
    ///   source file and a quarter of the floor, so a single entry cannot claim the
    ///   whole budget of an ordinary crate.
    /// * `max_entries = 100_000`: the largest crates on crates.io hold a few tens of
    ///   thousands of files; this bounds per-entry bookkeeping for tiny-entry bombs.
    pub fn for_compressed(len: u64) -> Limits {
        let max_total = len.saturating_mul(RATIO).max(MIN_TOTAL);
        Limits {
            max_total,
            max_file: max_total.min(FILE_CAP),
            max_entries: MAX_ENTRIES,
        }
    }
}

/// A reader that fails (instead of truncating, as `Read::take` would) once more than
/// `remaining` bytes come out of `inner`, and records that in `tripped` so the caller
/// can tell the limit apart from other IO errors however the tar crate wraps them.
pub(super) struct LimitedReader<'a, R> {
    inner: R,
    remaining: u64,
    tripped: &'a Cell<bool>,
}

impl<'a, R: Read> LimitedReader<'a, R> {
    pub(super) fn new(inner: R, limit: u64, tripped: &'a Cell<bool>) -> Self {
        LimitedReader {
            inner,
            remaining: limit,
            tripped,
        }
    }

    pub(super) fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for LimitedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.tripped.get() {
            return Err(limit_error());
        }
        if buf.is_empty() {
            return Ok(0);
        }
        // Ask for one byte more than allowed so reaching the limit exactly is fine but
        // passing it is seen.
        let want = usize::try_from(self.remaining.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.remaining {
            self.tripped.set(true);
            return Err(limit_error());
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

fn limit_error() -> io::Error {
    io::Error::other("decompressed size limit exceeded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_crates_get_the_floor() {
        for len in [0, 1, 10 * MIB, MIN_TOTAL / RATIO] {
            let l = Limits::for_compressed(len);
            assert_eq!(l.max_total, MIN_TOTAL, "len {len}");
            assert_eq!(l.max_file, FILE_CAP);
            assert_eq!(l.max_entries, 100_000);
        }
    }

    #[test]
    fn large_crates_get_twenty_times() {
        let len = MIN_TOTAL / RATIO + 1;
        assert_eq!(Limits::for_compressed(len).max_total, len * 20);
        let l = Limits::for_compressed(100 * MIB);
        assert_eq!(l.max_total, 2000 * MIB);
        assert_eq!(l.max_file, 128 * MIB);
    }

    #[test]
    fn ratio_saturates() {
        let l = Limits::for_compressed(u64::MAX);
        assert_eq!(l.max_total, u64::MAX);
        assert_eq!(l.max_file, FILE_CAP);
        assert_eq!(Limits::for_compressed(u64::MAX / 10).max_total, u64::MAX);
    }

    #[test]
    fn limited_reader_allows_exact_limit_and_errors_past_it() {
        let tripped = Cell::new(false);
        let mut out = Vec::new();
        LimitedReader::new(&[7u8; 10][..], 10, &tripped)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out.len(), 10);
        assert!(!tripped.get());

        let mut out = Vec::new();
        let err = LimitedReader::new(&[7u8; 11][..], 10, &tripped)
            .read_to_end(&mut out)
            .unwrap_err();
        assert!(tripped.get());
        assert!(err.to_string().contains("limit"));
        assert!(out.len() <= 10);
    }

    #[test]
    fn limited_reader_zero_limit() {
        let tripped = Cell::new(false);
        let mut r = LimitedReader::new(&b""[..], 0, &tripped);
        assert_eq!(r.read(&mut [0; 4]).unwrap(), 0);
        let mut r = LimitedReader::new(&b"x"[..], 0, &tripped);
        assert!(r.read(&mut [0; 4]).is_err());
        assert!(tripped.get());
    }
}
