//! The floor for `velaris surface`: the least work any tool must do to parse the Rust sources
//! of every package in a lockfile from verified bytes. For every `.crate` file under the given
//! directories: read it, sha256 it, gunzip and untar it in memory, and `syn::parse_file` every
//! `.rs` file in it (all of them: velaris only parses the modules that are compiled for its
//! target, so this is an upper bound on the parsing it must do). No name resolution, no rules,
//! no output but the counts and the timing.
//!
//! Usage: surface-parse-floor [--threads N] [--repeat N] [--no-parse] [--per-crate FILE] DIR...
//! Prints one JSON object per repetition on stdout. `--no-parse` stops after untarring (the
//! unpack floor); `--per-crate FILE` writes one TSV line per .crate (last repetition).

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::read::GzDecoder;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

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

#[derive(Default, Clone)]
struct Stats {
    crates: u64,
    compressed: u64,
    unpacked: u64,
    entries: u64,
    rs_files: u64,
    rs_bytes: u64,
    parse_errors: u64,
    not_utf8: u64,
    /// Thread time spent reading, hashing, inflating and untarring.
    unpack: Duration,
    /// Thread time spent in syn::parse_file.
    parse: Duration,
    check: u8,
}

impl Stats {
    fn add(mut self, o: &Stats) -> Stats {
        self.crates += o.crates;
        self.compressed += o.compressed;
        self.unpacked += o.unpacked;
        self.entries += o.entries;
        self.rs_files += o.rs_files;
        self.rs_bytes += o.rs_bytes;
        self.parse_errors += o.parse_errors;
        self.not_utf8 += o.not_utf8;
        self.unpack += o.unpack;
        self.parse += o.parse;
        self.check ^= o.check;
        self
    }
}

fn one(path: &Path, parse: bool) -> io::Result<Stats> {
    let t0 = Instant::now();
    let bytes = std::fs::read(path)?;
    let digest = Sha256::digest(&bytes);
    let mut st = Stats { crates: 1, compressed: bytes.len() as u64, check: digest[0], ..Stats::default() };
    let mut archive = tar::Archive::new(GzDecoder::new(&bytes[..]));
    let mut sources: Vec<Vec<u8>> = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        st.entries += 1;
        let is_rs = entry.header().entry_type().is_file() && entry.path_bytes().ends_with(b".rs");
        let mut buf = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut buf)?;
        st.unpacked += buf.len() as u64;
        if is_rs {
            st.rs_files += 1;
            st.rs_bytes += buf.len() as u64;
            sources.push(buf);
        }
    }
    st.unpack = t0.elapsed();
    if parse {
        let t1 = Instant::now();
        for src in &sources {
            match std::str::from_utf8(src) {
                Ok(text) => {
                    if syn::parse_file(text).is_err() {
                        st.parse_errors += 1;
                    }
                }
                Err(_) => st.not_utf8 += 1,
            }
        }
        // As velaris does after each crate: drop proc-macro2's per-thread source map.
        #[cfg(feature = "span-locations")]
        proc_macro2::extra::invalidate_current_thread_spans();
        st.parse = t1.elapsed();
    }
    Ok(st)
}

fn main() {
    let mut threads = 1usize;
    let mut repeat = 1usize;
    let mut parse = true;
    let mut per_crate: Option<PathBuf> = None;
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).expect("--threads N"),
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).expect("--repeat N"),
            "--no-parse" => parse = false,
            "--per-crate" => per_crate = Some(args.next().map(PathBuf::from).expect("--per-crate FILE")),
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    assert!(
        !dirs.is_empty(),
        "usage: surface-parse-floor [--threads N] [--repeat N] [--no-parse] [--per-crate FILE] DIR..."
    );
    let mut files = Vec::new();
    for d in &dirs {
        collect(d, &mut files).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    // Largest first, so that no big crate starts last on one thread while the other idles:
    // the best schedule, as a floor should have.
    let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    files.sort_by_cached_key(|p| (std::cmp::Reverse(size(p)), p.clone()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().expect("thread pool");
    let span_locations = cfg!(feature = "span-locations");
    for rep in 0..repeat {
        let start = Instant::now();
        let per: Vec<Stats> = pool.install(|| {
            files
                .par_iter()
                .with_max_len(1)
                .map(|p| one(p, parse).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
                .collect()
        });
        let secs = start.elapsed().as_secs_f64();
        let t = per.iter().fold(Stats::default(), |a, s| a.add(s));
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        println!(
            "{{\"crates\":{},\"threads\":{},\"parse\":{},\"span_locations\":{},\"compressed_bytes\":{},\"unpacked_bytes\":{},\"entries\":{},\"rs_files\":{},\"rs_bytes\":{},\"rs_mib\":{:.1},\"parse_errors\":{},\"not_utf8\":{},\"seconds\":{:.6},\"unpack_thread_seconds\":{:.3},\"parse_thread_seconds\":{:.3},\"rs_mib_per_s\":{:.1},\"check\":{}}}",
            t.crates,
            threads,
            parse,
            span_locations,
            t.compressed,
            t.unpacked,
            t.entries,
            t.rs_files,
            t.rs_bytes,
            mib(t.rs_bytes),
            t.parse_errors,
            t.not_utf8,
            secs,
            t.unpack.as_secs_f64(),
            t.parse.as_secs_f64(),
            mib(t.rs_bytes) / secs,
            t.check
        );
        if rep + 1 == repeat {
            if let Some(out) = &per_crate {
                let mut s = String::from("crate_file\tcompressed_bytes\tunpacked_bytes\trs_files\trs_bytes\tparse_errors\tunpack_s\tparse_s\n");
                for (p, st) in files.iter().zip(&per) {
                    s.push_str(&format!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\n",
                        p.file_name().unwrap_or_default().to_string_lossy(),
                        st.compressed,
                        st.unpacked,
                        st.rs_files,
                        st.rs_bytes,
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
