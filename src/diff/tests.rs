use super::*;

fn tree(files: &[(&str, &[u8])]) -> FileTree {
    files
        .iter()
        .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
        .collect()
}

fn patch_opts() -> DiffOptions {
    DiffOptions {
        want_patch: true,
        ..DiffOptions::default()
    }
}

fn file<'a>(d: &'a PackageDiff, path: &str) -> &'a FileDiff {
    d.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

const VCS_A: &[u8] = br#"{"git":{"sha1":"aaaa"},"path_in_vcs":"crates/x"}"#;
const VCS_A_DIRTY: &[u8] = br#"{"git":{"sha1":"aaaa","dirty":true},"path_in_vcs":"crates/x"}"#;
const VCS_B: &[u8] = br#"{"git":{"sha1":"bbbb","dirty":false},"path_in_vcs":""}"#;

#[test]
fn defaults() {
    let o = DiffOptions::default();
    assert_eq!(o.context, 3);
    assert_eq!(o.limits, DiffLimits::default());
    assert_eq!(o.limits.file_bytes, 8 << 20);
    assert!(!o.want_patch);
}

#[test]
fn added_package_counts_all_lines() {
    let new = tree(&[
        ("src/lib.rs", b"fn a() {}\nfn b() {}\n"),
        ("README.md", b"one\ntwo\nthree"), // no trailing newline: still 3
        ("empty.txt", b""),
        (".cargo_vcs_info.json", VCS_A),
    ]);
    let d = diff_trees(None, Some(&new), &DiffOptions::default());
    assert_eq!(d.files.len(), 4);
    assert!(d.files.iter().all(|f| f.status == FileStatus::Added));
    assert_eq!(d.files_added, 4);
    assert_eq!(file(&d, "src/lib.rs").lines_added, 2);
    assert_eq!(file(&d, "README.md").lines_added, 3);
    assert_eq!(file(&d, "empty.txt").lines_added, 0);
    let vcs = file(&d, ".cargo_vcs_info.json");
    assert!(vcs.packaging);
    assert_eq!(vcs.lines_added, 1);
    assert_eq!(d.lines_added, 6);
    assert_eq!(d.lines_removed, 0);
    assert_eq!(d.audit_lines, 5, "vcs info is packaging");
    assert_eq!(file(&d, "src/lib.rs").old_size, None);
    assert_eq!(file(&d, "src/lib.rs").new_size, Some(20));
    assert!(d.old_vcs.is_none());
    assert_eq!(d.new_vcs.as_ref().unwrap().sha1.as_deref(), Some("aaaa"));
    assert!(!d.vcs_changed);
    assert_eq!(d.too_large_files, 0);
    assert!(
        file(&d, "src/lib.rs").patch.is_none(),
        "no patch unless asked"
    );
}

#[test]
fn removed_package_counts_removed_lines_but_no_audit() {
    let old = tree(&[("src/lib.rs", b"a\nb\nc\n"), ("x.bin", b"\0\x01")]);
    let d = diff_trees(Some(&old), None, &patch_opts());
    assert_eq!(d.files_removed, 2);
    assert!(d.files.iter().all(|f| f.status == FileStatus::Removed));
    assert_eq!(d.lines_removed, 3);
    assert_eq!(d.lines_added, 0);
    assert_eq!(d.audit_lines, 0);
    assert_eq!(d.binary_files, 1);
    let lib = file(&d, "src/lib.rs");
    assert_eq!(lib.old_size, Some(6));
    assert_eq!(lib.new_size, None);
    assert_eq!(
        lib.patch.as_deref(),
        Some("--- a/src/lib.rs\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n")
    );
}

#[test]
fn removed_file_in_modified_package_counts_for_audit() {
    let old = tree(&[("a.rs", b"1\n2\n"), ("b.rs", b"x\n")]);
    let new = tree(&[("b.rs", b"x\n")]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert_eq!(d.files.len(), 1);
    assert_eq!(d.audit_lines, 2);
}

#[test]
fn both_absent_is_empty() {
    let d = diff_trees(None, None, &patch_opts());
    assert!(d.files.is_empty());
    assert_eq!(d.audit_lines, 0);
}

#[test]
fn modified_numstat_hand_computed() {
    // b->B, d deleted, f appended: LCS = a,c,e,g so `git diff --numstat` says 2 2.
    let old = tree(&[("f.txt", b"a\nb\nc\nd\ne\ng\n")]);
    let new = tree(&[("f.txt", b"a\nB\nc\ne\ng\nf\n")]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    let f = file(&d, "f.txt");
    assert_eq!(f.status, FileStatus::Modified);
    assert_eq!((f.lines_added, f.lines_removed), (2, 2));
    assert_eq!(d.files_modified, 1);
    assert_eq!(d.audit_lines, 4);
    assert!(!f.binary && !f.packaging);
}

#[test]
fn unchanged_files_not_listed_and_sorted() {
    let old = tree(&[("z", b"1\n"), ("same", b"s\n"), ("a", b"1\n")]);
    let new = tree(&[("z", b"2\n"), ("same", b"s\n"), ("m", b"new\n")]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    let paths: Vec<&str> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a", "m", "z"]);
    assert_eq!(
        (d.files_added, d.files_removed, d.files_modified),
        (1, 1, 1)
    );
}

#[test]
fn missing_trailing_newline() {
    // git: the last line changed from "y" to "y\n": 1 added, 1 removed.
    let old = tree(&[("f", b"x\ny")]);
    let new = tree(&[("f", b"x\ny\n")]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let f = file(&d, "f");
    assert_eq!((f.lines_added, f.lines_removed), (1, 1));
    assert_eq!(
        f.patch.as_deref(),
        Some("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n")
    );
}

#[test]
fn added_file_patch_without_trailing_newline() {
    let new = tree(&[("f", b"only")]);
    let d = diff_trees(None, Some(&new), &patch_opts());
    assert_eq!(
        file(&d, "f").patch.as_deref(),
        Some("--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+only\n\\ No newline at end of file\n")
    );
}

#[test]
fn bare_cr_does_not_split_lines() {
    let old = tree(&[("f", b"a\rb\nc\n")]);
    let new = tree(&[("f", b"a\rB\nc\n")]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    let f = file(&d, "f");
    assert_eq!((f.lines_added, f.lines_removed), (1, 1));
    let added = diff_trees(None, Some(&new), &DiffOptions::default());
    assert_eq!(added.lines_added, 2);
}

#[test]
fn crlf_lines() {
    let old = tree(&[("f", b"a\r\nb\r\n")]);
    let new = tree(&[("f", b"a\r\nc\r\n")]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let f = file(&d, "f");
    assert_eq!((f.lines_added, f.lines_removed), (1, 1));
    assert!(f.patch.as_deref().unwrap().ends_with("-b\r\n+c\r\n"));
}

#[test]
fn binary_by_nul() {
    let old = tree(&[("img.png", b"\x89PNG\0\0one\ntwo\n")]);
    let new = tree(&[("img.png", b"\x89PNG\0\0one\nthree\n")]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let f = file(&d, "img.png");
    assert!(f.binary);
    assert_eq!((f.lines_added, f.lines_removed), (0, 0));
    assert!(f.patch.is_none());
    assert_eq!(d.binary_files, 1);
    assert_eq!(d.audit_lines, 0);
    assert_eq!((f.old_size, f.new_size), (Some(14), Some(16)));
}

#[test]
fn text_becoming_binary_is_binary() {
    let old = tree(&[("f", b"text\n")]);
    let new = tree(&[("f", b"te\0xt\n")]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    assert!(file(&d, "f").binary);
    assert_eq!(d.audit_lines, 0);
}

#[test]
fn nul_after_sniff_window_is_text() {
    // git only looks at the first 8000 bytes; a late NUL is valid UTF-8 text.
    let mut bytes = vec![b'a'; 8000];
    bytes.extend_from_slice(b"\0\n");
    let new = tree(&[("f", &bytes)]);
    let d = diff_trees(None, Some(&new), &DiffOptions::default());
    assert!(!file(&d, "f").binary);
    assert_eq!(d.audit_lines, 1);
}

#[test]
fn invalid_utf8_is_binary() {
    let old = tree(&[("latin1.txt", b"caf\xe9\n")]);
    let new = tree(&[("latin1.txt", b"caf\xe9s\n")]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let f = file(&d, "latin1.txt");
    assert!(f.binary);
    assert_eq!((f.lines_added, f.lines_removed), (0, 0));
    assert!(f.patch.is_none());
    let added = diff_trees(None, Some(&new), &patch_opts());
    assert!(file(&added, "latin1.txt").binary);
    assert_eq!(added.lines_added, 0);
}

#[test]
fn packaging_files_flagged_and_excluded() {
    let old = tree(&[
        (
            "Cargo.toml",
            b"[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
        ),
        ("Cargo.toml.orig", b"[package]\nversion = \"0.1.0\"\n"),
        ("Cargo.lock", b"# lock\nv1\n"),
        (".cargo_vcs_info.json", VCS_A),
        ("sub/Cargo.lock", b"fixture\n"),
    ]);
    let new = tree(&[
        (
            "Cargo.toml",
            b"[package]\nname = \"x\"\nversion = \"0.2.0\"\n",
        ),
        ("Cargo.toml.orig", b"[package]\nversion = \"0.2.0\"\n"),
        ("Cargo.lock", b"# lock\nv2\n"),
        (".cargo_vcs_info.json", VCS_B),
        ("sub/Cargo.lock", b"fixture 2\n"),
    ]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert_eq!(d.files.len(), 5);
    assert!(file(&d, "Cargo.toml").packaging);
    assert!(file(&d, "Cargo.lock").packaging);
    assert!(file(&d, ".cargo_vcs_info.json").packaging);
    assert!(!file(&d, "Cargo.toml.orig").packaging);
    assert!(
        !file(&d, "sub/Cargo.lock").packaging,
        "only the root lockfile"
    );
    // Cargo.toml.orig: 1+1, sub/Cargo.lock: 1+1.
    assert_eq!(d.audit_lines, 4);
    // Totals still include packaging files: Cargo.toml 1, Cargo.lock 1, vcs 1.
    assert_eq!(d.lines_added, 5);
    assert_eq!(d.lines_removed, 5);
}

#[test]
fn cargo_toml_counts_without_orig() {
    let old = tree(&[("Cargo.toml", b"[package]\nversion = \"0.1.0\"\n")]);
    let new = tree(&[("Cargo.toml", b"[package]\nversion = \"0.2.0\"\n")]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert!(!file(&d, "Cargo.toml").packaging);
    assert_eq!(d.audit_lines, 2);

    let added = diff_trees(None, Some(&new), &DiffOptions::default());
    assert!(!file(&added, "Cargo.toml").packaging);
    assert_eq!(added.audit_lines, 2);

    let mut with_orig = new.clone();
    with_orig.insert("Cargo.toml.orig".into(), b"[package]\n".to_vec());
    let added = diff_trees(None, Some(&with_orig), &DiffOptions::default());
    assert!(file(&added, "Cargo.toml").packaging);
    assert_eq!(added.audit_lines, 1, "only Cargo.toml.orig counts");
}

#[test]
fn vcs_changed_on_sha1() {
    let old = tree(&[(".cargo_vcs_info.json", VCS_A)]);
    let new = tree(&[(".cargo_vcs_info.json", VCS_B)]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert!(d.vcs_changed);
    assert_eq!(
        d.old_vcs,
        Some(VcsInfo {
            sha1: Some("aaaa".into()),
            dirty: false,
            path_in_vcs: Some("crates/x".into()),
        })
    );
    assert_eq!(d.new_vcs.as_ref().unwrap().path_in_vcs.as_deref(), Some(""));
}

#[test]
fn vcs_changed_on_dirty() {
    let old = tree(&[(".cargo_vcs_info.json", VCS_A)]);
    let new = tree(&[(".cargo_vcs_info.json", VCS_A_DIRTY)]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert!(d.vcs_changed);
    assert!(d.new_vcs.as_ref().unwrap().dirty);
}

#[test]
fn vcs_unchanged_missing_or_garbage() {
    // Same sha, different formatting: the file is listed but vcs is unchanged.
    let old = tree(&[(".cargo_vcs_info.json", VCS_A)]);
    let new = tree(&[(
        ".cargo_vcs_info.json",
        b"{\n  \"git\": {\"sha1\": \"aaaa\"},\n  \"path_in_vcs\": \"crates/x\"\n}\n",
    )]);
    let d = diff_trees(Some(&old), Some(&new), &DiffOptions::default());
    assert!(!d.vcs_changed);

    let garbage = tree(&[(".cargo_vcs_info.json", b"{not json\xff")]);
    let d = diff_trees(Some(&old), Some(&garbage), &DiffOptions::default());
    assert!(d.new_vcs.is_none());
    assert!(!d.vcs_changed, "one side unknown: no claim");

    let wrong_types = tree(&[(
        ".cargo_vcs_info.json",
        br#"{"git":{"sha1":7,"dirty":"yes"}}"#,
    )]);
    let d = diff_trees(None, Some(&wrong_types), &DiffOptions::default());
    assert_eq!(
        d.new_vcs,
        Some(VcsInfo {
            sha1: None,
            dirty: false,
            path_in_vcs: None
        })
    );
    let array = tree(&[(".cargo_vcs_info.json", b"[1,2]")]);
    assert!(
        diff_trees(None, Some(&array), &DiffOptions::default())
            .new_vcs
            .is_none()
    );

    let none = tree(&[("a", b"a\n")]);
    let d = diff_trees(Some(&old), Some(&none), &DiffOptions::default());
    assert!(d.old_vcs.is_some() && d.new_vcs.is_none() && !d.vcs_changed);
}

fn numbered(n: usize, changed: &[usize]) -> String {
    (1..=n)
        .map(|i| {
            if changed.contains(&i) {
                format!("CHANGED {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect()
}

#[test]
fn patch_headers_and_context_radius() {
    let old = tree(&[("src/lib.rs", numbered(20, &[]).as_bytes())]);
    let new = tree(&[("src/lib.rs", numbered(20, &[10]).as_bytes())]);
    let opts = DiffOptions {
        context: 2,
        ..patch_opts()
    };
    let d = diff_trees(Some(&old), Some(&new), &opts);
    assert_eq!(
        file(&d, "src/lib.rs").patch.as_deref(),
        Some(
            "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -8,5 +8,5 @@\n line 8\n line 9\n-line 10\n\
             +CHANGED 10\n line 11\n line 12\n"
        )
    );

    // Default radius 3; changes 10 lines apart give two hunks, 4 apart merge.
    let new = tree(&[("src/lib.rs", numbered(20, &[3, 14]).as_bytes())]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let p = file(&d, "src/lib.rs").patch.clone().unwrap();
    let hunks: Vec<&str> = p.lines().filter(|l| l.starts_with("@@")).collect();
    assert_eq!(hunks, ["@@ -1,6 +1,6 @@", "@@ -11,7 +11,7 @@"]);
    let new = tree(&[("src/lib.rs", numbered(20, &[3, 7]).as_bytes())]);
    let d = diff_trees(Some(&old), Some(&new), &patch_opts());
    let p = file(&d, "src/lib.rs").patch.clone().unwrap();
    assert_eq!(p.lines().filter(|l| l.starts_with("@@")).count(), 1);

    // Zero context: just the changed line.
    let opts = DiffOptions {
        context: 0,
        ..patch_opts()
    };
    let new = tree(&[("src/lib.rs", numbered(20, &[10]).as_bytes())]);
    let d = diff_trees(Some(&old), Some(&new), &opts);
    assert!(
        file(&d, "src/lib.rs")
            .patch
            .as_deref()
            .unwrap()
            .ends_with("@@ -10 +10 @@\n-line 10\n+CHANGED 10\n")
    );
}

#[test]
fn huge_context_does_not_panic() {
    let old = tree(&[("f", b"a\nb\nc\n")]);
    let new = tree(&[("f", b"a\nB\nc\n")]);
    let opts = DiffOptions {
        context: usize::MAX,
        ..patch_opts()
    };
    let d = diff_trees(Some(&old), Some(&new), &opts);
    assert_eq!(
        file(&d, "f").patch.as_deref(),
        Some("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    );
}

#[test]
fn empty_added_file_patch_is_headers_only() {
    let new = tree(&[("e", b"")]);
    let d = diff_trees(None, Some(&new), &patch_opts());
    assert_eq!(
        file(&d, "e").patch.as_deref(),
        Some("--- /dev/null\n+++ b/e\n")
    );
}

/// Limits small enough for a test.
fn small_limits(file_bytes: u64, file_steps: u64, package_steps: u64) -> DiffOptions {
    DiffOptions {
        limits: DiffLimits {
            file_bytes,
            file_steps: FILE_STEPS.with_max(file_steps),
            package_steps: PACKAGE_STEPS.with_max(package_steps),
        },
        ..patch_opts()
    }
}

fn sha(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(b))
}

#[test]
fn a_file_past_the_size_limit_is_listed_with_its_digests_not_diffed() {
    // One line, changed in one byte.
    let a = vec![b'a'; 1001];
    let mut b = a.clone();
    b[500] = b'b';
    let opts = small_limits(1000, 1_000_000, 1_000_000);
    let d = diff_trees(Some(&tree(&[("blob.rs", &a)])), Some(&tree(&[("blob.rs", &b)])), &opts);
    let f = file(&d, "blob.rs");
    let t = f.too_large.as_ref().expect("too large");
    assert_eq!(t.reason, "larger than the 1,000-byte limit of a file diff");
    assert_eq!(t.old_sha256.as_deref(), Some(sha(&a).as_str()));
    assert_eq!(t.new_sha256.as_deref(), Some(sha(&b).as_str()));
    assert_eq!((f.old_size, f.new_size), (Some(1001), Some(1001)));
    // Every line of each side counts, and no patch is made.
    assert_eq!((f.lines_removed, f.lines_added), (1, 1));
    assert!(f.patch.is_none());
    assert_eq!(d.too_large_files, 1);
    // An added file past the limit is counted, not shown.
    let added = diff_trees(None, Some(&tree(&[("blob.rs", &b)])), &opts);
    assert!(file(&added, "blob.rs").patch.is_none() && file(&added, "blob.rs").too_large.is_some());
    assert_eq!(file(&added, "blob.rs").lines_added, 1);

    // Its twin at the limit is diffed.
    let (a, b) = (&a[..1000], &b[..1000]);
    let d = diff_trees(Some(&tree(&[("blob.rs", a)])), Some(&tree(&[("blob.rs", b)])), &opts);
    let f = file(&d, "blob.rs");
    assert!(f.too_large.is_none());
    assert!(f.patch.as_deref().is_some_and(|p| p.starts_with("--- a/blob.rs\n+++ b/blob.rs\n@@ -1 +1 @@\n-aaa")));
    assert_eq!(d.too_large_files, 0);
}

/// `n` lines `0` to `n - 1`, in the order `order` gives.
fn lines_in(n: usize, order: impl Fn(usize) -> usize) -> String {
    (0..n).map(|i| format!("line {}\n", order(i))).collect()
}

#[test]
fn a_diff_past_the_work_limit_is_too_large_and_one_under_it_is_exact() {
    // 20,000 lines in another order: every line is on both sides, and the shortest edit
    // script is long (a hard case for Myers: seconds without a limit on larger files).
    let n = 20_000;
    let old = lines_in(n, |i| i);
    let shuffled = lines_in(n, |i| (i * 7_919) % n);
    let d = diff_trees(Some(&tree(&[("gen.rs", old.as_bytes())])), Some(&tree(&[("gen.rs", shuffled.as_bytes())])), &patch_opts());
    let f = file(&d, "gen.rs");
    let t = f.too_large.as_ref().expect("too large");
    assert_eq!(t.reason, "its line diff would take more than the line diff per file budget (50,000,000 steps)");
    assert_eq!((f.lines_removed, f.lines_added), (n as u64, n as u64));
    assert!(f.patch.is_none());

    // The same size with 1% of the lines changed, and with every line changed: diffed
    // exactly.
    let changed = lines_in(n, |i| if i % 100 == 0 { i + n } else { i });
    let d = diff_trees(Some(&tree(&[("gen.rs", old.as_bytes())])), Some(&tree(&[("gen.rs", changed.as_bytes())])), &patch_opts());
    let f = file(&d, "gen.rs");
    assert!(f.too_large.is_none());
    assert_eq!((f.lines_removed, f.lines_added), (200, 200));
    let all = lines_in(n, |i| i + n);
    let d = diff_trees(Some(&tree(&[("gen.rs", old.as_bytes())])), Some(&tree(&[("gen.rs", all.as_bytes())])), &DiffOptions::default());
    let f = file(&d, "gen.rs");
    assert!(f.too_large.is_none());
    assert_eq!((f.lines_removed, f.lines_added), (n as u64, n as u64));
}

#[test]
fn the_work_estimate_counts_the_edit_script_and_stops_at_the_budget() {
    let w = |a: &str, b: &str, budget: u64| Lines::of(a, b).work(budget);
    // Equal after the common start and end, once the changed line is set aside: only the
    // pass over the lines.
    assert_eq!(w("a\nb\nc\n", "a\nX\nc\n", 100), Some(6));
    // A swap: the greedy pass runs to d = 2.
    let swapped = w("a\nb\nc\nd\n", "a\nc\nb\nd\n", 100).unwrap();
    assert!(swapped > 8, "{swapped}");
    assert_eq!(w("a\nb\nc\nd\n", "a\nc\nb\nd\n", swapped - 1), None);
    assert_eq!(w("a\nb\nc\nd\n", "a\nc\nb\nd\n", swapped), Some(swapped));
}

#[test]
fn a_package_shares_one_work_budget_in_path_order() {
    // Ten files each needing some work: with a package budget for about two of them, the
    // first ones (by path) are diffed and the rest listed as too large.
    let old: Vec<(String, String)> = (0..10).map(|i| (format!("f{i}.rs"), lines_in(50, |j| j))).collect();
    let new: Vec<(String, String)> = (0..10).map(|i| (format!("f{i}.rs"), lines_in(50, |j| (j * 7) % 50))).collect();
    let t = |v: &[(String, String)]| -> FileTree { v.iter().map(|(p, s)| (p.clone(), s.clone().into_bytes())).collect() };
    let one = Lines::of(&old[0].1, &new[0].1).work(u64::MAX).unwrap();
    let opts = small_limits(1 << 20, 1_000_000, 2 * one + one / 2);
    let d = diff_trees(Some(&t(&old)), Some(&t(&new)), &opts);
    let big: Vec<&str> = d.files.iter().filter(|f| f.too_large.is_some()).map(|f| f.path.as_str()).collect();
    assert_eq!(big, ["f2.rs", "f3.rs", "f4.rs", "f5.rs", "f6.rs", "f7.rs", "f8.rs", "f9.rs"]);
    assert_eq!(d.too_large_files, 8);
    assert_eq!(
        file(&d, "f2.rs").too_large.as_ref().unwrap().reason,
        format!("{} is spent", PACKAGE_STEPS.with_max(2 * one + one / 2))
    );
    // The same trees give the same result every time.
    let again = diff_trees(Some(&t(&old)), Some(&t(&new)), &opts);
    assert_eq!(serde_json::to_string(&d).unwrap(), serde_json::to_string(&again).unwrap());
}

#[test]
fn serializes_kebab_case_without_patch() {
    let new = tree(&[("f", b"x\n")]);
    let d = diff_trees(None, Some(&new), &patch_opts());
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["files"][0]["status"], "added");
    assert!(v["files"][0].get("patch").is_none());
    assert_eq!(v["audit_lines"], 1);
}

#[test]
fn hunk_around_a_line() {
    use super::hunk_around;
    let t = &DiffLimits::default();
    let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let new = "a\nb\nc\nd\nNET\ne\nf\ng\nh\n";
    let h = hunk_around(Some(old), new, 5, 1, t).unwrap();
    assert!(h.changed);
    assert_eq!(h.text, "@@ -4,2 +4,3 @@\n d\n+NET\n e\n");
    let h = hunk_around(Some(old), new, 2, 1, t).unwrap();
    assert!(!h.changed);
    assert_eq!(h.text, "@@ +1,3 @@ (unchanged)\n a\n b\n c\n");
    let h = hunk_around(None, "x\ny\n", 2, 3, t).unwrap();
    assert!(h.changed && h.text.contains("+y\n"), "{}", h.text);
    assert!(hunk_around(Some(old), new, 99, 1, t).is_none());
}

#[test]
fn no_hunk_past_the_limits() {
    let n = 20_000;
    let old = lines_in(n, |i| i);
    let shuffled = lines_in(n, |i| (i * 7_919) % n);
    assert!(hunk_around(Some(&old), &shuffled, 10, 3, &DiffLimits::default()).is_none());
    let small = DiffLimits { file_bytes: 10, ..DiffLimits::default() };
    assert!(hunk_around(Some("a\n"), "a\nb\nc\nd\ne\nf\n", 2, 1, &small).is_none());
    assert!(hunk_around(Some("a\n"), "a\nb\nc\nd\ne\nf\n", 2, 1, &DiffLimits::default()).is_some());
}
