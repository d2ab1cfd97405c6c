//! Builders of `.crate` archives for tests: well-formed ones ([`crate_bytes`]) and
//! hostile ones ([`hostile`], [`RawTar`]).
//!
//! Standalone (only `tar`, `flate2` and std) so any test can include it:
//! `#[path = "support/archives.rs"] mod archives;`. Output is deterministic: mtime 0,
//! mode 0o644, uid/gid 0, and a gzip header with mtime 0, no file name and OS 255, so
//! the same input gives the same bytes (for a given flate2 backend).
//!
//! Size-rule variants are small: they break the rule only under the small `Limits` a
//! test passes (see the constants), never under `Limits::for_compressed`.
#![allow(dead_code)]

use std::io::Write;

use flate2::{Compression, GzBuilder};
use tar::{EntryType, Header};

/// Number of files in [`Hostile::TooManyEntries`] (plus its `Cargo.toml`): more than a
/// test's `max_entries` of, say, 32.
pub const MANY_ENTRIES: usize = 64;
/// Size of the one big file in [`Hostile::FileTooLarge`]: more than a test's
/// `max_file` of, say, 64 KiB.
pub const BIG_FILE_LEN: usize = 256 * 1024;
/// Zero bytes appended to the tar stream of [`Hostile::GzipBomb`] (they compress
/// about 1000:1, far past cargo's 20x ratio).
pub const BOMB_PADDING: usize = 8 * 1024 * 1024;
/// Size claimed by the header of [`Hostile::LyingSize`] (1 TiB); the entry really
/// holds [`LYING_SIZE_DATA`] bytes.
pub const LYING_SIZE_CLAIM: u64 = 1 << 40;
pub const LYING_SIZE_DATA: usize = 16;

/// The `Cargo.toml` every hostile archive starts with, so rejection is not just
/// "the first entry was odd".
pub const CARGO_TOML: &str = "[package]\nname = \"demo\"\n";

/// A well-formed `.crate`: each `(path, contents)` is stored as a regular file at
/// `NAME-VERSION/path` (paths over 100 bytes get a GNU long-name header, as cargo does).
pub fn crate_bytes(name: &str, version: &str, files: &[(&str, &str)]) -> Vec<u8> {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (*p, c.as_bytes())).collect();
    crate_bytes_bin(name, version, &files)
}

/// [`crate_bytes`] with binary contents.
pub fn crate_bytes_bin(name: &str, version: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    gzip(&tar_bytes(name, version, files))
}

/// The uncompressed tar stream of [`crate_bytes_bin`].
pub fn tar_bytes(name: &str, version: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, contents) in files {
        let mut header = Header::new_gnu();
        header.set_entry_type(EntryType::Regular);
        header.set_size(contents.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        builder
            .append_data(&mut header, format!("{name}-{version}/{path}"), *contents)
            .expect("append to an in-memory tar");
    }
    builder.into_inner().expect("finish an in-memory tar")
}

/// Gzips `data` deterministically (one member, fixed header).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::default());
    encoder.write_all(data).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

/// A tar stream written header by header, with no validation: names and link
/// targets are copied straight into the old-style 100-byte fields (the way past
/// `Header::set_path`, which refuses `..` and absolute paths), and the checksum is
/// recomputed with `set_cksum`.
#[derive(Default, Clone)]
pub struct RawTar {
    buf: Vec<u8>,
}

impl RawTar {
    pub fn new() -> Self {
        RawTar::default()
    }

    /// An entry of `kind` whose header size is `data.len()`.
    pub fn entry(&mut self, name: &[u8], kind: EntryType, data: &[u8]) -> &mut Self {
        self.entry_claiming(name, kind, data.len() as u64, data)
    }

    /// A regular file.
    pub fn file(&mut self, name: &str, data: &[u8]) -> &mut Self {
        self.entry(name.as_bytes(), EntryType::Regular, data)
    }

    /// A directory entry (`name` should end with `/`).
    pub fn dir(&mut self, name: &str) -> &mut Self {
        self.entry(name.as_bytes(), EntryType::Directory, b"")
    }

    /// An entry whose header claims `claimed` bytes while only `data` follows.
    pub fn entry_claiming(
        &mut self,
        name: &[u8],
        kind: EntryType,
        claimed: u64,
        data: &[u8],
    ) -> &mut Self {
        let header = raw_header(name, kind, claimed, b"");
        self.block(header.as_bytes()).data(data)
    }

    /// A symlink or hard link (`kind`) to `target`.
    pub fn link(&mut self, name: &[u8], kind: EntryType, target: &[u8]) -> &mut Self {
        let header = raw_header(name, kind, 0, target);
        self.block(header.as_bytes())
    }

    /// A character or block device (`kind`) with the given numbers.
    pub fn device(&mut self, name: &[u8], kind: EntryType, major: u32, minor: u32) -> &mut Self {
        let mut header = raw_header(name, kind, 0, b"");
        header
            .set_device_major(major)
            .expect("gnu header has device fields");
        header
            .set_device_minor(minor)
            .expect("gnu header has device fields");
        header.set_cksum();
        self.block(header.as_bytes())
    }

    /// A GNU long-name (`L`) header: the next entry is named `name` whatever its own
    /// header says.
    pub fn gnu_long_name(&mut self, name: &[u8]) -> &mut Self {
        let mut data = name.to_vec();
        data.push(0);
        self.entry(b"././@LongLink", EntryType::GNULongName, &data)
    }

    /// A pax extended (`x`) header with the given records, for the next entry.
    pub fn pax(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        let data = pax_records(records);
        self.entry(b"PaxHeaders/next", EntryType::XHeader, &data)
    }

    /// A pax global (`g`) header, as `git archive` writes first.
    pub fn pax_global(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        let data = pax_records(records);
        self.entry(b"pax_global_header", EntryType::XGlobalHeader, &data)
    }

    /// Raw bytes, as they are (no padding).
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(bytes);
        self
    }

    /// The stream so far with the end-of-archive marker (two zero blocks).
    pub fn finish(&self) -> Vec<u8> {
        let mut out = self.buf.clone();
        out.resize(out.len() + 1024, 0);
        out
    }

    /// The stream so far without the end-of-archive marker.
    pub fn unterminated(&self) -> Vec<u8> {
        self.buf.clone()
    }

    /// `gzip(self.finish())`.
    pub fn crate_bytes(&self) -> Vec<u8> {
        gzip(&self.finish())
    }

    fn block(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(bytes);
        self
    }

    /// `data` padded to a whole number of 512-byte blocks.
    fn data(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        let padded = self.buf.len().div_ceil(512) * 512;
        self.buf.resize(padded, 0);
        self
    }
}

/// A GNU header with `name` and `link` copied unchecked into the name fields.
pub fn raw_header(name: &[u8], kind: EntryType, size: u64, link: &[u8]) -> Header {
    let mut header = Header::new_gnu();
    {
        let old = header.as_old_mut();
        assert!(
            name.len() <= old.name.len(),
            "use gnu_long_name for long names"
        );
        assert!(link.len() <= old.linkname.len(), "link target too long");
        old.name[..name.len()].copy_from_slice(name);
        old.linkname[..link.len()].copy_from_slice(link);
    }
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header.set_cksum();
    header
}

/// Pax records `"<len> key=value\n"`, where `<len>` counts the whole record.
pub fn pax_records(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in records {
        let body_len = 1 + key.len() + 1 + value.len() + 1; // ' ' key '=' value '\n'
        let mut len = body_len + 1;
        while len != body_len + len.to_string().len() {
            len = body_len + len.to_string().len();
        }
        out.extend_from_slice(format!("{len} {key}=").as_bytes());
        out.extend_from_slice(value);
        out.push(b'\n');
    }
    out
}

/// Ways to break one rule of the unpacker each (and only that one). The comment on a
/// variant says what it breaks and which rule code the unpacker should report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// A second package directory: `other-0.0.1/src/lib.rs` next to the real prefix
    /// (`outside-prefix`).
    OutsidePrefix,
    /// `/etc/passwd`, written raw (`absolute-path`).
    AbsolutePath,
    /// `NAME-VERSION/../../etc/passwd`, written raw (`parent-dir`).
    ParentDir,
    /// The same escape hidden in a GNU long-name header: a name over 100 bytes that
    /// climbs out with `..` (`parent-dir`).
    LongNameParentDir,
    /// A pax `path` record `/etc/passwd` overriding an innocent header name
    /// (`absolute-path`).
    PaxAbsolutePath,
    /// `NAME-VERSION/src/link.rs`, a symlink to `/etc/passwd` (`symlink`).
    Symlink,
    /// `NAME-VERSION/src/hard.rs`, a hard link to `NAME-VERSION/Cargo.toml` (`hard-link`).
    HardLink,
    /// `NAME-VERSION/dev/null`, character device 1:3 (`special-entry`).
    CharDevice,
    /// `NAME-VERSION/dev/sda`, block device 8:0 (`special-entry`).
    BlockDevice,
    /// `NAME-VERSION/pipe`, a fifo (`special-entry`).
    Fifo,
    /// `NAME-VERSION/hole.bin`, a GNU sparse file of 1 GiB made of one 512-byte
    /// block (`special-entry`).
    Sparse,
    /// `NAME-VERSION/fast.rs`, tar type `7` "contiguous" (`special-entry`).
    Contiguous,
    /// `NAME-VERSION/src/\xff\xfe.rs`, not UTF-8 (`non-utf8-name`).
    NonUtf8Name,
    /// `NAME-VERSION/src\..\..\evil.rs`: a backslash, a separator on Windows (`bad-name`).
    Backslash,
    /// A pax `path` record with a NUL inside: `NAME-VERSION/src/a\0b.rs` (`bad-name`).
    NulInName,
    /// `NAME-VERSION/./src/lib.rs`, a non-canonical `.` component (`bad-name`).
    DotComponent,
    /// `NAME-VERSION/src/lib.rs` twice, with different contents (`duplicate-name`).
    DuplicateName,
    /// `NAME-VERSION/src` as a file, then `NAME-VERSION/src/lib.rs` (`duplicate-name`).
    FileDirConflict,
    /// [`MANY_ENTRIES`] tiny files (`too-many-entries` under a small `max_entries`).
    TooManyEntries,
    /// One file of [`BIG_FILE_LEN`] real bytes (`file-too-large` under a small
    /// `max_file`).
    FileTooLarge,
    /// A header claiming [`LYING_SIZE_CLAIM`] bytes (binary size field) followed by
    /// [`LYING_SIZE_DATA`] bytes and the end marker (`file-too-large` under any limits,
    /// without reading or allocating the claim).
    LyingSize,
    /// A tiny valid crate whose tar stream is followed by [`BOMB_PADDING`] zero bytes
    /// inside the gzip member: file contents are small, the decompressed stream is not
    /// (`too-large` under `max_total = 20 x compressed`, i.e. cargo's ratio without
    /// its 512 MiB floor).
    GzipBomb,
    /// A valid gzip of a tar whose second header has a wrong checksum
    /// (`corrupt-archive`).
    Corrupt,
    /// A valid crate followed by bytes that are not part of the gzip member
    /// (`corrupt-archive`).
    TrailingGarbage,
    /// A valid crate cut in the middle of its deflate stream (`corrupt-archive`).
    Truncated,
}

impl Hostile {
    pub const ALL: &'static [Hostile] = &[
        Hostile::OutsidePrefix,
        Hostile::AbsolutePath,
        Hostile::ParentDir,
        Hostile::LongNameParentDir,
        Hostile::PaxAbsolutePath,
        Hostile::Symlink,
        Hostile::HardLink,
        Hostile::CharDevice,
        Hostile::BlockDevice,
        Hostile::Fifo,
        Hostile::Sparse,
        Hostile::Contiguous,
        Hostile::NonUtf8Name,
        Hostile::Backslash,
        Hostile::NulInName,
        Hostile::DotComponent,
        Hostile::DuplicateName,
        Hostile::FileDirConflict,
        Hostile::TooManyEntries,
        Hostile::FileTooLarge,
        Hostile::LyingSize,
        Hostile::GzipBomb,
        Hostile::Corrupt,
        Hostile::TrailingGarbage,
        Hostile::Truncated,
    ];

    /// The rule code the unpacker should report for this archive.
    pub fn expected_rule(self) -> &'static str {
        match self {
            Hostile::OutsidePrefix => "outside-prefix",
            Hostile::AbsolutePath | Hostile::PaxAbsolutePath => "absolute-path",
            Hostile::ParentDir | Hostile::LongNameParentDir => "parent-dir",
            Hostile::Symlink => "symlink",
            Hostile::HardLink => "hard-link",
            Hostile::CharDevice
            | Hostile::BlockDevice
            | Hostile::Fifo
            | Hostile::Sparse
            | Hostile::Contiguous => "special-entry",
            Hostile::NonUtf8Name => "non-utf8-name",
            Hostile::Backslash | Hostile::NulInName | Hostile::DotComponent => "bad-name",
            Hostile::DuplicateName | Hostile::FileDirConflict => "duplicate-name",
            Hostile::TooManyEntries => "too-many-entries",
            Hostile::FileTooLarge | Hostile::LyingSize => "file-too-large",
            Hostile::GzipBomb => "too-large",
            Hostile::Corrupt | Hostile::TrailingGarbage | Hostile::Truncated => "corrupt-archive",
        }
    }

    /// Whether the rule only breaks under a test's small `Limits`.
    pub fn needs_small_limits(self) -> bool {
        matches!(
            self,
            Hostile::TooManyEntries | Hostile::FileTooLarge | Hostile::GzipBomb
        )
    }
}

/// A `.crate` of package `name` `version` that breaks the rule `kind` describes.
pub fn hostile(kind: Hostile, name: &str, version: &str) -> Vec<u8> {
    let p = format!("{name}-{version}");
    let at = |rel: &str| format!("{p}/{rel}");
    let mut t = RawTar::new();
    t.file(&at("Cargo.toml"), CARGO_TOML.as_bytes());
    match kind {
        Hostile::OutsidePrefix => {
            t.file("other-0.0.1/src/lib.rs", b"pub fn other() {}\n");
        }
        Hostile::AbsolutePath => {
            t.file("/etc/passwd", b"root:x:0:0::/root:/bin/sh\n");
        }
        Hostile::ParentDir => {
            t.file(&at("../../etc/passwd"), b"root:x:0:0::/root:/bin/sh\n");
        }
        Hostile::LongNameParentDir => {
            let long = format!("{p}/{}{}etc/passwd", "a/".repeat(60), "../".repeat(62));
            t.gnu_long_name(long.as_bytes());
            t.file(&at("innocent.rs"), b"root:x:0:0::/root:/bin/sh\n");
        }
        Hostile::PaxAbsolutePath => {
            t.pax(&[("path", b"/etc/passwd")]);
            t.file(&at("innocent.rs"), b"root:x:0:0::/root:/bin/sh\n");
        }
        Hostile::Symlink => {
            t.link(
                at("src/link.rs").as_bytes(),
                EntryType::Symlink,
                b"/etc/passwd",
            );
        }
        Hostile::HardLink => {
            let target = at("Cargo.toml");
            t.link(
                at("src/hard.rs").as_bytes(),
                EntryType::Link,
                target.as_bytes(),
            );
        }
        Hostile::CharDevice => {
            t.device(at("dev/null").as_bytes(), EntryType::Char, 1, 3);
        }
        Hostile::BlockDevice => {
            t.device(at("dev/sda").as_bytes(), EntryType::Block, 8, 0);
        }
        Hostile::Fifo => {
            t.entry(at("pipe").as_bytes(), EntryType::Fifo, b"");
        }
        Hostile::Sparse => {
            const REAL: u64 = 1 << 30;
            let mut header = raw_header(at("hole.bin").as_bytes(), EntryType::GNUSparse, 512, b"");
            let gnu = header.as_gnu_mut().expect("gnu header");
            gnu.sparse[0].set_offset(REAL - 512);
            gnu.sparse[0].set_length(512);
            gnu.set_real_size(REAL);
            header.set_cksum();
            t.raw(header.as_bytes()).raw(&[b'x'; 512]);
        }
        Hostile::Contiguous => {
            t.entry(
                at("fast.rs").as_bytes(),
                EntryType::Continuous,
                b"fn f() {}\n",
            );
        }
        Hostile::NonUtf8Name => {
            let mut name = at("src/").into_bytes();
            name.extend_from_slice(b"\xff\xfe.rs");
            t.entry(&name, EntryType::Regular, b"fn f() {}\n");
        }
        Hostile::Backslash => {
            t.file(&at("src\\..\\..\\evil.rs"), b"fn f() {}\n");
        }
        Hostile::NulInName => {
            t.pax(&[("path", at("src/a\0b.rs").as_bytes())]);
            t.file(&at("src/ab.rs"), b"fn f() {}\n");
        }
        Hostile::DotComponent => {
            t.file(&at("./src/lib.rs"), b"fn f() {}\n");
        }
        Hostile::DuplicateName => {
            t.file(&at("src/lib.rs"), b"pub fn seen_by_one_tool() {}\n");
            t.file(&at("src/lib.rs"), b"pub fn seen_by_another() {}\n");
        }
        Hostile::FileDirConflict => {
            t.file(&at("src"), b"not a directory\n");
            t.file(&at("src/lib.rs"), b"fn f() {}\n");
        }
        Hostile::TooManyEntries => {
            for i in 0..MANY_ENTRIES {
                t.file(&at(&format!("src/f{i}.rs")), b"\n");
            }
        }
        Hostile::FileTooLarge => {
            let big: Vec<u8> = b"// padding\n"
                .iter()
                .copied()
                .cycle()
                .take(BIG_FILE_LEN)
                .collect();
            t.file(&at("src/big.rs"), &big);
        }
        Hostile::LyingSize => {
            t.entry_claiming(
                at("src/lib.rs").as_bytes(),
                EntryType::Regular,
                LYING_SIZE_CLAIM,
                &[b'x'; LYING_SIZE_DATA],
            );
        }
        Hostile::GzipBomb => {
            t.file(&at("src/lib.rs"), b"fn f() {}\n");
            let mut stream = t.finish();
            stream.resize(stream.len() + BOMB_PADDING, 0);
            return gzip(&stream);
        }
        Hostile::Corrupt => {
            t.file(&at("src/lib.rs"), b"fn f() {}\n");
            let mut stream = t.finish();
            // Second header (Cargo.toml takes one header and one data block): its
            // checksum field lives at bytes 148..156.
            stream[1024 + 150] ^= 0x01;
            return gzip(&stream);
        }
        Hostile::TrailingGarbage => {
            t.file(&at("src/lib.rs"), b"fn f() {}\n");
            let mut bytes = t.crate_bytes();
            bytes.extend_from_slice(b"hidden trailing bytes");
            return bytes;
        }
        Hostile::Truncated => {
            t.file(&at("src/lib.rs"), b"fn f() {}\n");
            let bytes = t.crate_bytes();
            return bytes[..bytes.len() / 2].to_vec();
        }
    }
    t.crate_bytes()
}
