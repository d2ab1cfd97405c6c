//! The floor for `velaris deps-diff`: the least work any tool must do to review a lockfile change
//! from verified bytes. For every `.crate` file under the given directories: read it, sha256 it,
//! gunzip it into a sink. No tar parsing, no diffing, no output but the timing.
//!
//! Usage: deps-diff-floor [--threads N] [--repeat N] DIR...
//! Prints one JSON object per repetition on stdout; the `seconds` of the fastest is the floor.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use flate2::read::GzDecoder;
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

/// Work on one file: (compressed bytes, uncompressed bytes, first digest byte to keep the hash live).
fn one(path: &Path) -> io::Result<(u64, u64, u8)> {
    let bytes = std::fs::read(path)?;
    let digest = Sha256::digest(&bytes);
    let mut dec = GzDecoder::new(&bytes[..]);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = dec.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        io::sink().write_all(&buf[..n])?;
    }
    Ok((bytes.len() as u64, total, digest[0]))
}

fn main() {
    let mut threads = 1usize;
    let mut repeat = 1usize;
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).expect("--threads N"),
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).expect("--repeat N"),
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    assert!(!dirs.is_empty(), "usage: deps-diff-floor [--threads N] [--repeat N] DIR...");
    let mut files = Vec::new();
    for d in &dirs {
        collect(d, &mut files).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    files.sort();
    for _ in 0..repeat {
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let parts: Vec<(u64, u64, u8)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads.max(1))
                .map(|_| {
                    s.spawn(|| {
                        let mut acc = (0u64, 0u64, 0u8);
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(p) = files.get(i) else { break acc };
                            let (c, u, d) = one(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                            acc = (acc.0 + c, acc.1 + u, acc.2 ^ d);
                        }
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("worker panicked")).collect()
        });
        let secs = start.elapsed().as_secs_f64();
        let (c, u) = parts.iter().fold((0, 0), |a, p| (a.0 + p.0, a.1 + p.1));
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        println!(
            "{{\"files\":{},\"threads\":{},\"compressed_bytes\":{},\"uncompressed_bytes\":{},\"seconds\":{:.6},\"compressed_mib_per_s\":{:.1},\"uncompressed_mib_per_s\":{:.1},\"check\":{}}}",
            files.len(),
            threads,
            c,
            u,
            secs,
            mib(c) / secs,
            mib(u) / secs,
            parts.iter().fold(0u8, |a, p| a ^ p.2)
        );
    }
}
