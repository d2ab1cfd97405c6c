//! The rules of `velaris::package::unpack_crate`, one test per rule, against archives
//! built by `support/archives.rs`.

#[path = "support/archives.rs"]
mod archives;

use std::collections::BTreeSet;

use archives::{Hostile, RawTar, crate_bytes, crate_bytes_bin, gzip, hostile, tar_bytes};
use tar::EntryType;
use velaris::package::{ArchiveError, FileTree, Limits, Unpacked, unpack_crate};

const NAME: &str = "demo";
const VERSION: &str = "1.2.3";
const PREFIX: &str = "demo-1.2.3";

/// Limits small enough for the size variants of `archives::Hostile`.
fn small() -> Limits {
    Limits {
        max_total: 1024 * 1024,
        max_file: 64 * 1024,
        max_entries: 32,
    }
}

fn unpack(bytes: &[u8]) -> Result<Unpacked, ArchiveError> {
    unpack_crate(
        bytes,
        NAME,
        VERSION,
        &Limits::for_compressed(bytes.len() as u64),
    )
}

fn unpack_small(bytes: &[u8]) -> Result<Unpacked, ArchiveError> {
    unpack_crate(bytes, NAME, VERSION, &small())
}

/// Asserts `result` failed with `rule`, and that the message says so and is printable.
#[track_caller]
fn assert_rule(result: Result<Unpacked, ArchiveError>, rule: &str) -> ArchiveError {
    let err = match result {
        Ok(u) => panic!("expected rule {rule}, got a tree of {:?}", u.files.keys()),
        Err(e) => e,
    };
    assert_eq!(err.rule(), rule, "{err}");
    let msg = err.to_string();
    assert!(msg.ends_with(&format!("(rule: {rule})")), "{msg}");
    assert!(
        !msg.chars().any(char::is_control),
        "raw control char in {msg:?}"
    );
    assert!(ArchiveError::RULES.contains(&err.rule()));
    err
}

#[track_caller]
fn assert_hostile(kind: Hostile) -> ArchiveError {
    let bytes = hostile(kind, NAME, VERSION);
    let result = if kind.needs_small_limits() {
        unpack_small(&bytes)
    } else {
        unpack(&bytes)
    };
    assert_rule(result, kind.expected_rule())
}

fn tree(files: &[(&str, &str)]) -> FileTree {
    files
        .iter()
        .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
        .collect()
}

// ---- well-formed crates ------------------------------------------------------------

#[test]
fn good_crate_round_trips() {
    let long = format!("src/{}/deep.rs", "nested_module_name".repeat(8));
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"1.2.3\"\n",
        ),
        ("Cargo.toml.orig", "[package]\nname = \"demo\"\n"),
        ("src/lib.rs", "pub mod a;\n"),
        ("src/a/mod.rs", "pub fn a() {}\n"),
        ("src/a/ünïcödé.rs", "// ok\n"),
        ("README.md", ""),
        (".cargo_vcs_info.json", "{}"),
        (long.as_str(), "fn deep() {}\n"),
    ];
    let bytes = crate_bytes(NAME, VERSION, &files);
    let u = unpack(&bytes).unwrap();
    assert_eq!(u.files, tree(&files));
    let sum: usize = files.iter().map(|(_, c)| c.len()).sum();
    assert_eq!(u.unpacked_bytes, sum as u64);
    assert!(!u.files.contains_key("src"));
    assert!(!u.files.contains_key("src/a"));
}

#[test]
fn binary_contents_are_kept_exactly() {
    let blob: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let bytes = crate_bytes_bin(NAME, VERSION, &[("data/blob.bin", &blob), ("e", b"")]);
    let u = unpack(&bytes).unwrap();
    assert_eq!(u.files["data/blob.bin"], blob);
    assert_eq!(u.files["e"], b"");
    assert_eq!(u.unpacked_bytes, 10_000);
}

#[test]
fn directory_entries_are_checked_but_not_files() {
    let mut t = RawTar::new();
    t.dir(&format!("{PREFIX}/"))
        .dir(&format!("{PREFIX}/src/"))
        .file(&format!("{PREFIX}/src/lib.rs"), b"fn f() {}\n")
        .dir(&format!("{PREFIX}/src/"))
        .dir(&format!("{PREFIX}/empty"));
    let u = unpack(&t.crate_bytes()).unwrap();
    assert_eq!(u.files, tree(&[("src/lib.rs", "fn f() {}\n")]));
}

#[test]
fn builder_is_deterministic() {
    let files = [("src/lib.rs", "fn f() {}\n")];
    let a = crate_bytes(NAME, VERSION, &files);
    assert_eq!(a, crate_bytes(NAME, VERSION, &files));
    assert_eq!(
        &a[..4],
        &[0x1f, 0x8b, 8, 0],
        "gzip magic, deflate, no flags"
    );
    assert_eq!(&a[4..8], &[0, 0, 0, 0], "gzip mtime 0");
    assert_eq!(a[9], 255, "gzip os unknown");
    let tar = tar_bytes(NAME, VERSION, &[("x", b"y")]);
    let mut archive = tar::Archive::new(&tar[..]);
    let entry = archive.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(entry.header().mtime().unwrap(), 0);
    assert_eq!(entry.header().mode().unwrap(), 0o644);
}

#[test]
fn pax_global_header_is_ignored() {
    let mut t = RawTar::new();
    t.pax_global(&[("comment", b"made by git archive")])
        .file(&format!("{PREFIX}/src/lib.rs"), b"x");
    let u = unpack(&t.crate_bytes()).unwrap();
    assert_eq!(u.files, tree(&[("src/lib.rs", "x")]));
}

#[test]
fn pax_path_is_used_when_valid() {
    let long = format!("{PREFIX}/{}.rs", "p".repeat(150));
    let mut t = RawTar::new();
    t.pax(&[("path", long.as_bytes())])
        .file(&format!("{PREFIX}/short.rs"), b"x");
    let u = unpack(&t.crate_bytes()).unwrap();
    let key = long.strip_prefix(&format!("{PREFIX}/")).unwrap();
    assert_eq!(u.files.keys().collect::<Vec<_>>(), [key]);
}

#[test]
fn missing_end_marker_is_accepted() {
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/a"), b"x");
    let u = unpack(&gzip(&t.unterminated())).unwrap();
    assert_eq!(u.files, tree(&[("a", "x")]));
}

#[test]
fn every_rule_is_covered_by_a_hostile_archive() {
    let seen: BTreeSet<&str> = Hostile::ALL
        .iter()
        .map(|&kind| assert_hostile(kind).rule())
        .collect();
    let all: BTreeSet<&str> = ArchiveError::RULES.iter().copied().collect();
    assert_eq!(seen, all);
}

// ---- outside-prefix ----------------------------------------------------------------

#[test]
fn rule_outside_prefix_two_prefixes() {
    let err = assert_hostile(Hostile::OutsidePrefix);
    assert_eq!(err.path(), Some("other-0.0.1/src/lib.rs"));
    assert!(err.to_string().contains("\"demo-1.2.3/\""), "{err}");
}

#[test]
fn rule_outside_prefix_top_level_file() {
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/src/lib.rs"), b"x")
        .file("build.rs", b"x");
    assert_rule(unpack(&t.crate_bytes()), "outside-prefix");
}

#[test]
fn rule_outside_prefix_wrong_name_or_version() {
    let bytes = crate_bytes(NAME, VERSION, &[("src/lib.rs", "x")]);
    assert_rule(
        unpack_crate(&bytes, NAME, "1.2.4", &Limits::for_compressed(0)),
        "outside-prefix",
    );
    assert_rule(
        unpack_crate(&bytes, "demo-x", VERSION, &Limits::for_compressed(0)),
        "outside-prefix",
    );
}

#[test]
fn rule_outside_prefix_file_named_like_the_prefix() {
    let mut t = RawTar::new();
    t.file(PREFIX, b"x");
    assert_rule(unpack(&t.crate_bytes()), "outside-prefix");
}

// ---- absolute-path, parent-dir -----------------------------------------------------

#[test]
fn rule_absolute_path() {
    let err = assert_hostile(Hostile::AbsolutePath);
    assert_eq!(err.path(), Some("/etc/passwd"));
}

#[test]
fn rule_absolute_path_via_pax() {
    assert_hostile(Hostile::PaxAbsolutePath);
}

#[test]
fn rule_parent_dir() {
    let err = assert_hostile(Hostile::ParentDir);
    assert_eq!(
        err.to_string(),
        "entry \"demo-1.2.3/../../etc/passwd\" leaves the package directory (rule: parent-dir)"
    );
}

#[test]
fn rule_parent_dir_via_gnu_long_name() {
    assert_hostile(Hostile::LongNameParentDir);
}

#[test]
fn rule_parent_dir_on_a_directory_entry() {
    let mut t = RawTar::new();
    t.dir(&format!("{PREFIX}/../"));
    assert_rule(unpack(&t.crate_bytes()), "parent-dir");
}

// ---- links and special entries -----------------------------------------------------

#[test]
fn rule_symlink() {
    let err = assert_hostile(Hostile::Symlink);
    assert!(err.to_string().contains("\"/etc/passwd\""), "{err}");
}

#[test]
fn rule_hard_link() {
    assert_hostile(Hostile::HardLink);
}

#[test]
fn rule_special_entry_char_device() {
    let err = assert_hostile(Hostile::CharDevice);
    assert!(err.to_string().contains("character device"), "{err}");
}

#[test]
fn rule_special_entry_block_device() {
    assert_hostile(Hostile::BlockDevice);
}

#[test]
fn rule_special_entry_fifo() {
    assert_hostile(Hostile::Fifo);
}

#[test]
fn rule_special_entry_sparse() {
    assert_hostile(Hostile::Sparse);
}

#[test]
fn rule_special_entry_contiguous() {
    assert_hostile(Hostile::Contiguous);
}

#[test]
fn rule_special_entry_unknown_type() {
    let mut t = RawTar::new();
    t.entry(
        format!("{PREFIX}/x").as_bytes(),
        EntryType::new(b'Z'),
        b"data",
    );
    let err = assert_rule(unpack(&t.crate_bytes()), "special-entry");
    assert!(err.to_string().contains("'Z'"), "{err}");
}

// ---- names ---------------------------------------------------------------------------

#[test]
fn rule_non_utf8_name() {
    let err = assert_hostile(Hostile::NonUtf8Name);
    assert!(err.to_string().contains(r"\xff\xfe.rs"), "{err}");
    assert_eq!(err.path(), None);
}

#[test]
fn rule_bad_name_backslash() {
    assert_hostile(Hostile::Backslash);
}

#[test]
fn rule_bad_name_nul() {
    let err = assert_hostile(Hostile::NulInName);
    assert!(err.to_string().contains(r"a\0b.rs"), "{err}");
}

#[test]
fn rule_bad_name_dot_component() {
    assert_hostile(Hostile::DotComponent);
}

#[test]
fn rule_bad_name_empty_component_and_trailing_slash() {
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}//src/lib.rs"), b"x");
    assert_rule(unpack(&t.crate_bytes()), "bad-name");
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/src/lib.rs/"), b"x");
    assert_rule(unpack(&t.crate_bytes()), "bad-name");
}

#[test]
fn rule_bad_name_pax_path_and_gnu_long_name_disagree() {
    // The tar crate would use the GNU long name; GNU tar and libarchive the pax path.
    let long = format!("{PREFIX}/{}.rs", "l".repeat(120));
    let mut t = RawTar::new();
    t.pax(&[("path", format!("{PREFIX}/src/lib.rs").as_bytes())])
        .gnu_long_name(long.as_bytes())
        .file(&format!("{PREFIX}/short.rs"), b"x");
    let err = assert_rule(unpack(&t.crate_bytes()), "bad-name");
    assert!(err.to_string().contains("pax"), "{err}");
}

#[test]
fn control_characters_are_escaped_in_messages() {
    let mut t = RawTar::new();
    t.file("evil\x1b[2J\r\n/x", b"x");
    // A control character in a name is itself a bad name, checked before the prefix.
    let err = assert_rule(unpack(&t.crate_bytes()), "bad-name");
    assert!(err.to_string().contains(r"evil\u{1b}[2J\r\n/x"), "{err}");
}

// ---- duplicate-name ------------------------------------------------------------------

#[test]
fn rule_duplicate_name() {
    let err = assert_hostile(Hostile::DuplicateName);
    assert_eq!(err.path(), Some("demo-1.2.3/src/lib.rs"));
}

#[test]
fn rule_duplicate_name_file_under_a_file() {
    let err = assert_hostile(Hostile::FileDirConflict);
    assert!(err.to_string().contains("\"demo-1.2.3/src\""), "{err}");
}

#[test]
fn rule_duplicate_name_file_over_a_directory() {
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/src/lib.rs"), b"x")
        .file(&format!("{PREFIX}/src"), b"x");
    assert_rule(unpack(&t.crate_bytes()), "duplicate-name");
    let mut t = RawTar::new();
    t.dir(&format!("{PREFIX}/src/"))
        .file(&format!("{PREFIX}/src"), b"x");
    assert_rule(unpack(&t.crate_bytes()), "duplicate-name");
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/src"), b"x")
        .dir(&format!("{PREFIX}/src/"));
    assert_rule(unpack(&t.crate_bytes()), "duplicate-name");
}

// ---- sizes ---------------------------------------------------------------------------

#[test]
fn rule_too_many_entries() {
    assert_hostile(Hostile::TooManyEntries);
    // The same archive is fine under the real limits.
    let bytes = hostile(Hostile::TooManyEntries, NAME, VERSION);
    assert_eq!(
        unpack(&bytes).unwrap().files.len(),
        archives::MANY_ENTRIES + 1
    );
}

#[test]
fn entry_limit_is_inclusive() {
    let names: Vec<String> = (0..4).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
    let bytes = crate_bytes(NAME, VERSION, &files);
    let at = |max_entries| Limits {
        max_entries,
        ..small()
    };
    assert!(unpack_crate(&bytes, NAME, VERSION, &at(4)).is_ok());
    assert_rule(
        unpack_crate(&bytes, NAME, VERSION, &at(3)),
        "too-many-entries",
    );
}

#[test]
fn rule_file_too_large() {
    let err = assert_hostile(Hostile::FileTooLarge);
    assert!(matches!(
        err,
        ArchiveError::FileTooLarge { size, limit: 65536, .. } if size == archives::BIG_FILE_LEN as u64
    ));
    let bytes = hostile(Hostile::FileTooLarge, NAME, VERSION);
    assert!(unpack(&bytes).is_ok());
}

#[test]
fn file_limit_is_inclusive() {
    let exact = vec![b'a'; 1000];
    let bytes = crate_bytes_bin(NAME, VERSION, &[("a", &exact)]);
    let at = |max_file| Limits {
        max_file,
        ..small()
    };
    assert_eq!(
        unpack_crate(&bytes, NAME, VERSION, &at(1000))
            .unwrap()
            .files["a"],
        exact
    );
    assert_rule(
        unpack_crate(&bytes, NAME, VERSION, &at(999)),
        "file-too-large",
    );
}

#[test]
fn lying_size_field_fails_cleanly_without_allocating() {
    // Claims 1 TiB under the real limits: refused from the header alone.
    let err = assert_hostile(Hostile::LyingSize);
    assert!(
        matches!(err, ArchiveError::FileTooLarge { size, .. } if size == archives::LYING_SIZE_CLAIM)
    );
    // Claims less than the per-file limit but more than the stream holds: the read
    // stops at the end of the stream and the shortfall is reported.
    let mut t = RawTar::new();
    t.entry_claiming(
        format!("{PREFIX}/a").as_bytes(),
        EntryType::Regular,
        50_000,
        b"short",
    );
    let err = assert_rule(unpack(&gzip(&t.unterminated())), "corrupt-archive");
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[test]
fn rule_too_large_from_file_sizes() {
    // Each file is under max_file, together they pass max_total.
    let chunk = vec![b'z'; 60 * 1024];
    let names: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &chunk[..])).collect();
    let bytes = crate_bytes_bin(NAME, VERSION, &files);
    assert_rule(unpack_small(&bytes), "too-large");
}

#[test]
fn rule_too_large_gzip_bomb() {
    let bytes = hostile(Hostile::GzipBomb, NAME, VERSION);
    let ratio = Limits {
        max_total: 20 * bytes.len() as u64,
        max_file: u64::MAX,
        max_entries: 100,
    };
    assert!(ratio.max_total < archives::BOMB_PADDING as u64);
    assert_rule(unpack_crate(&bytes, NAME, VERSION, &ratio), "too-large");
    // Zero padding is legitimate: under cargo's 512 MiB floor it unpacks.
    let u = unpack(&bytes).unwrap();
    assert_eq!(u.files.len(), 2);
}

#[test]
fn rule_too_large_one_compressible_file() {
    let zeros = vec![0u8; 4 * 1024 * 1024];
    let bytes = crate_bytes_bin(NAME, VERSION, &[("zeros.bin", &zeros)]);
    let ratio = Limits {
        max_total: 20 * bytes.len() as u64,
        max_file: u64::MAX,
        max_entries: 100,
    };
    assert_rule(unpack_crate(&bytes, NAME, VERSION, &ratio), "too-large");
}

#[test]
fn stream_limit_counts_headers_too() {
    // Contents fit in max_total, but headers and padding push the stream past it.
    let bytes = crate_bytes(NAME, VERSION, &[("a", "x")]);
    let tight = Limits {
        max_total: 1000,
        ..small()
    };
    assert_rule(unpack_crate(&bytes, NAME, VERSION, &tight), "too-large");
}

// ---- corrupt-archive -----------------------------------------------------------------

#[test]
fn rule_corrupt_archive_bad_header_checksum() {
    let err = assert_hostile(Hostile::Corrupt);
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn rule_corrupt_archive_trailing_garbage() {
    let err = assert_hostile(Hostile::TrailingGarbage);
    assert!(err.to_string().contains("trailing data"), "{err}");
}

#[test]
fn rule_corrupt_archive_second_gzip_member() {
    let mut bytes = crate_bytes(NAME, VERSION, &[("a", "x")]);
    bytes.extend(crate_bytes(NAME, VERSION, &[("b", "smuggled")]));
    assert_rule(unpack(&bytes), "corrupt-archive");
}

#[test]
fn rule_corrupt_archive_truncated() {
    assert_hostile(Hostile::Truncated);
    let bytes = crate_bytes(NAME, VERSION, &[("a", "some contents")]);
    for cut in [0, 1, 10, bytes.len() - 8, bytes.len() - 1] {
        assert_rule(unpack(&bytes[..cut]), "corrupt-archive");
    }
}

#[test]
fn rule_corrupt_archive_flipped_bytes() {
    let body = "fn f() {}\n".repeat(200);
    let bytes = crate_bytes(NAME, VERSION, &[("src/lib.rs", body.as_str())]);
    // Any single flipped byte inside the deflate data or the crc trailer is caught
    // (by the deflate decoder, the crc check, or the tar reader).
    for at in (10..bytes.len()).step_by(7) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        assert_rule(unpack(&bad), "corrupt-archive");
    }
}

#[test]
fn rule_corrupt_archive_not_gzip() {
    let tar = tar_bytes(NAME, VERSION, &[("a", b"x")]);
    assert_rule(unpack(&tar), "corrupt-archive");
    assert_rule(unpack(b""), "corrupt-archive");
}

#[test]
fn rule_corrupt_archive_data_after_end_marker() {
    let mut t = RawTar::new();
    t.file(&format!("{PREFIX}/a"), b"x");
    let mut stream = t.finish();
    // A second archive after the end marker, as `tar --ignore-zeros` would read it.
    stream.extend(RawTar::new().file(&format!("{PREFIX}/b"), b"y").finish());
    let err = assert_rule(unpack(&gzip(&stream)), "corrupt-archive");
    assert!(err.to_string().contains("end-of-archive"), "{err}");
}
