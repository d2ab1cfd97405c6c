//! The floor for `velaris surface`: the least work any tool must do to parse the Rust sources
//! of the packages in a lockfile from verified bytes. For each `.crate` file: read it, sha256 it,
//! gunzip and untar it in memory, and `syn::parse_file` the files it is asked to parse. No name
//! resolution, no macro expansion, no rules, no output but the counts and the timing.
//!
//! Two modes:
//!
//! - `--compiled SURFACE_JSON --lock CARGO_LOCK CACHE`: the compiled-files floor. The files of
//!   each crate are the `files` lists of `velaris surface --format json` (the module tree as the
//!   compiler compiles it for the target and features, with the modules declared inside macros
//!   and the files `include!` reads), united over every program that compiles the crate. Each
//!   crate (name, version) is found by its checksum in `CARGO_LOCK` as
//!   `CACHE/crates/sha256/<2 hex>/<64 hex>.crate` (velaris' cache), and the sha256 of the bytes
//!   read must equal that checksum. Only the listed files are kept from the archive (the others
//!   are inflated, since gzip is a stream, but not copied). Crates without a checksum (path and
//!   git packages) are not in this floor.
//! - `DIR...`: the all-files floor: every `.crate` under the directories, every `.rs` file in
//!   each (tests, examples, benches, and the crates not compiled for the target included).
//!   `--lock CARGO_LOCK` only names the crates in `--per-crate`.
//!
//! Built with mimalloc as the global allocator, as velaris is (src/main.rs), so that the time
//! spent allocating and freeing syntax trees is the same kind on both sides of the ratio.
//!
//! Usage: surface-parse-floor [--threads N] [--repeat N] [--no-parse] [--per-crate FILE]
//!                            [--lock CARGO_LOCK] (--compiled SURFACE_JSON CACHE | DIR...)
//! Prints one JSON object per repetition on stdout. `--no-parse` stops after untarring (the
//! unpack floor); `--per-crate FILE` writes one TSV line per .crate (last repetition).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::read::GzDecoder;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// velaris lexes files from this size on before parsing them (`LARGE_SOURCE` in
/// src/surface/analyze/loader.rs); the floor counts what it spends on them apart.
const LARGE: u64 = 128 * 1024;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "crate") {
            out.push(p);
        }
    }
    Ok(())
}

/// `(name, version, checksum)` of every `[[package]]` of a Cargo.lock that has a checksum.
fn lock_checksums(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let (mut name, mut version, mut checksum) = (None, None, None);
    let unquote = |v: &str| v.trim().trim_matches('"').to_string();
    let mut flush = |n: &mut Option<String>, v: &mut Option<String>, c: &mut Option<String>| {
        if let (Some(n), Some(v), Some(c)) = (n.take(), v.take(), c.take()) {
            out.push((n, v, c.to_ascii_lowercase()));
        }
        *n = None;
        *v = None;
        *c = None;
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            flush(&mut name, &mut version, &mut checksum);
        } else if let Some(v) = line.strip_prefix("name = ") {
            name = Some(unquote(v));
        } else if let Some(v) = line.strip_prefix("version = ") {
            version = Some(unquote(v));
        } else if let Some(v) = line.strip_prefix("checksum = ") {
            checksum = Some(unquote(v));
        }
    }
    flush(&mut name, &mut version, &mut checksum);
    out
}

/// One `.crate` to work on.
struct Job {
    path: PathBuf,
    /// `name version`, when known.
    label: String,
    /// The lockfile's checksum the bytes must have (compiled mode).
    checksum: Option<String>,
    /// The package-relative files to parse; `None`: every `.rs` file.
    files: Option<BTreeSet<String>>,
    size: u64,
}

#[derive(Default, Clone)]
struct Stats {
    crates: u64,
    compressed: u64,
    unpacked: u64,
    entries: u64,
    files_listed: u64,
    files: u64,
    bytes: u64,
    large_files: u64,
    large_bytes: u64,
    parse_errors: u64,
    not_utf8: u64,
    /// Listed files that are not in the archive (generated files `include!` reads from
    /// `OUT_DIR`, for instance).
    missing: Vec<String>,
    /// Thread time spent reading, hashing, inflating and untarring.
    unpack: Duration,
    /// Thread time spent in syn::parse_file (and dropping the trees).
    parse: Duration,
    /// The part of `parse` spent on files of `LARGE` bytes or more.
    large_parse: Duration,
    check: u8,
}

impl Stats {
    fn add(mut self, o: &Stats) -> Stats {
        self.crates += o.crates;
        self.compressed += o.compressed;
        self.unpacked += o.unpacked;
        self.entries += o.entries;
        self.files_listed += o.files_listed;
        self.files += o.files;
        self.bytes += o.bytes;
        self.large_files += o.large_files;
        self.large_bytes += o.large_bytes;
        self.parse_errors += o.parse_errors;
        self.not_utf8 += o.not_utf8;
        self.missing.extend(o.missing.iter().cloned());
        self.unpack += o.unpack;
        self.parse += o.parse;
        self.large_parse += o.large_parse;
        self.check ^= o.check;
        self
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn one(job: &Job, parse: bool) -> io::Result<Stats> {
    let t0 = Instant::now();
    let bytes = std::fs::read(&job.path)?;
    let digest = Sha256::digest(&bytes);
    if let Some(want) = &job.checksum {
        let got = hex(&digest);
        if &got != want {
            return Err(io::Error::other(format!("sha256 {got}, Cargo.lock says {want}")));
        }
    }
    let mut st = Stats {
        crates: 1,
        compressed: bytes.len() as u64,
        files_listed: job.files.as_ref().map_or(0, |f| f.len() as u64),
        check: digest[0],
        ..Stats::default()
    };
    let mut archive = tar::Archive::new(GzDecoder::new(&bytes[..]));
    let mut sources: Vec<Vec<u8>> = Vec::new();
    let mut found: BTreeSet<String> = BTreeSet::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        st.entries += 1;
        st.unpacked += entry.size();
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let wanted = match &job.files {
            None => entry.path_bytes().ends_with(b".rs"),
            Some(set) => {
                // Package-relative: without the `NAME-VERSION/` prefix.
                let raw = entry.path_bytes();
                let rel = raw.iter().position(|&b| b == b'/').map(|i| &raw[i + 1..]).unwrap_or(&[]);
                match std::str::from_utf8(rel).ok().filter(|r| set.contains(*r)) {
                    Some(r) => found.insert(r.to_string()),
                    None => false,
                }
            }
        };
        if !wanted {
            continue; // the tar reader skips the entry's bytes (still inflated: gzip is a stream)
        }
        let mut buf = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut buf)?;
        st.files += 1;
        st.bytes += buf.len() as u64;
        if buf.len() as u64 >= LARGE {
            st.large_files += 1;
            st.large_bytes += buf.len() as u64;
        }
        sources.push(buf);
    }
    if let Some(set) = &job.files {
        st.missing = set.difference(&found).map(|f| format!("{} {f}", job.label)).collect();
    }
    st.unpack = t0.elapsed();
    if parse {
        let t1 = Instant::now();
        for src in &sources {
            let t = Instant::now();
            match std::str::from_utf8(src) {
                Ok(text) => {
                    if syn::parse_file(text).is_err() {
                        st.parse_errors += 1;
                    }
                }
                Err(_) => st.not_utf8 += 1,
            }
            if src.len() as u64 >= LARGE {
                st.large_parse += t.elapsed();
            }
        }
        // As velaris does after each crate: drop proc-macro2's per-thread source map.
        #[cfg(feature = "span-locations")]
        proc_macro2::extra::invalidate_current_thread_spans();
        st.parse = t1.elapsed();
    }
    Ok(st)
}

/// The compiled-files jobs: every crate of the surface JSON that has a checksum in the lockfile.
fn compiled_jobs(surface: &Path, lock: &[(String, String, String)], cache: &Path) -> Vec<Job> {
    let text = std::fs::read_to_string(surface).unwrap_or_else(|e| panic!("{}: {e}", surface.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", surface.display()));
    let mut files: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for program in json["programs"].as_array().expect("`programs` in the surface JSON") {
        for c in program["crates"].as_array().expect("`crates` in every program") {
            let key = (c["name"].as_str().unwrap_or_default().to_string(), c["version"].as_str().unwrap_or_default().to_string());
            let set = files.entry(key).or_default();
            for f in c["files"].as_array().expect("`files` in every crate (velaris with files lists)") {
                set.insert(f.as_str().unwrap_or_default().to_string());
            }
        }
    }
    let checksums: BTreeMap<(&str, &str), &str> =
        lock.iter().map(|(n, v, c)| ((n.as_str(), v.as_str()), c.as_str())).collect();
    let mut jobs = Vec::new();
    let mut without = 0usize;
    for ((name, version), set) in files {
        let Some(sum) = checksums.get(&(name.as_str(), version.as_str())) else {
            without += 1; // a path or git package: not in the floor
            continue;
        };
        let path = cache.join("crates/sha256").join(&sum[..2]).join(format!("{sum}.crate"));
        let size = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).len();
        jobs.push(Job { path, label: format!("{name} {version}"), checksum: Some(sum.to_string()), files: Some(set), size });
    }
    eprintln!("surface-parse-floor: {} crates from the surface JSON, {without} without a checksum (path or git: left out)", jobs.len());
    jobs
}

fn main() {
    let mut threads = 1usize;
    let mut repeat = 1usize;
    let mut parse = true;
    let mut per_crate: Option<PathBuf> = None;
    let mut lock: Option<PathBuf> = None;
    let mut compiled: Option<PathBuf> = None;
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).expect("--threads N"),
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).expect("--repeat N"),
            "--no-parse" => parse = false,
            "--per-crate" => per_crate = Some(args.next().map(PathBuf::from).expect("--per-crate FILE")),
            "--lock" => lock = Some(args.next().map(PathBuf::from).expect("--lock CARGO_LOCK")),
            "--compiled" => compiled = Some(args.next().map(PathBuf::from).expect("--compiled SURFACE_JSON")),
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    let usage = "usage: surface-parse-floor [--threads N] [--repeat N] [--no-parse] [--per-crate FILE] [--lock CARGO_LOCK] (--compiled SURFACE_JSON CACHE | DIR...)";
    assert!(!dirs.is_empty(), "{usage}");
    let lock: Vec<(String, String, String)> = lock
        .map(|p| lock_checksums(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))))
        .unwrap_or_default();
    let mut jobs = match &compiled {
        Some(surface) => {
            assert!(!lock.is_empty() && dirs.len() == 1, "--compiled needs --lock CARGO_LOCK and one CACHE directory; {usage}");
            compiled_jobs(surface, &lock, &dirs[0])
        }
        None => {
            let names: BTreeMap<&str, String> = lock.iter().map(|(n, v, c)| (c.as_str(), format!("{n} {v}"))).collect();
            let mut files = Vec::new();
            for d in &dirs {
                collect(d, &mut files).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
            }
            files
                .into_iter()
                .map(|path| {
                    let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
                    let label = names.get(stem.as_str()).cloned().unwrap_or_default();
                    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    Job { path, label, checksum: None, files: None, size }
                })
                .collect()
        }
    };
    // Largest first, so that no big crate starts last on one thread while the others idle:
    // the best schedule, as a floor should have.
    jobs.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().expect("thread pool");
    let mode = if compiled.is_some() { "compiled" } else { "all_rs" };
    for rep in 0..repeat {
        let start = Instant::now();
        let per: Vec<Stats> = pool.install(|| {
            jobs.par_iter()
                .with_max_len(1)
                .map(|j| one(j, parse).unwrap_or_else(|e| panic!("{}: {e}", j.path.display())))
                .collect()
        });
        let secs = start.elapsed().as_secs_f64();
        let t = per.iter().fold(Stats::default(), |a, s| a.add(s));
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let line = serde_json::json!({
            "mode": mode,
            "allocator": "mimalloc",
            "crates": t.crates,
            "threads": threads,
            "parse": parse,
            "span_locations": cfg!(feature = "span-locations"),
            "compressed_bytes": t.compressed,
            "unpacked_bytes": t.unpacked,
            "entries": t.entries,
            "files_listed": t.files_listed,
            "files_missing": t.missing.len(),
            "missing": t.missing.iter().take(50).collect::<Vec<_>>(),
            "files": t.files,
            "bytes": t.bytes,
            "mib": (mib(t.bytes) * 10.0).round() / 10.0,
            "large_files": t.large_files,
            "large_bytes": t.large_bytes,
            "parse_errors": t.parse_errors,
            "not_utf8": t.not_utf8,
            "seconds": (secs * 1e6).round() / 1e6,
            "unpack_thread_seconds": (t.unpack.as_secs_f64() * 1e3).round() / 1e3,
            "parse_thread_seconds": (t.parse.as_secs_f64() * 1e3).round() / 1e3,
            "large_parse_thread_seconds": (t.large_parse.as_secs_f64() * 1e3).round() / 1e3,
            "mib_per_s": (mib(t.bytes) / secs * 10.0).round() / 10.0,
            "check": t.check,
        });
        println!("{line}");
        if rep + 1 == repeat {
            if let Some(out) = &per_crate {
                let mut s = String::from(
                    "crate_file\tpackage\tcompressed_bytes\tunpacked_bytes\tfiles_listed\tfiles\tbytes\tparse_errors\tunpack_s\tparse_s\n",
                );
                for (j, st) in jobs.iter().zip(&per) {
                    s.push_str(&format!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\n",
                        j.path.file_name().unwrap_or_default().to_string_lossy(),
                        j.label,
                        st.compressed,
                        st.unpacked,
                        st.files_listed,
                        st.files,
                        st.bytes,
                        st.parse_errors,
                        st.unpack.as_secs_f64(),
                        st.parse.as_secs_f64()
                    ));
                }
                std::fs::write(out, s).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
            }
        }
    }
}
