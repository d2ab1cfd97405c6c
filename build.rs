//! Fingerprints the analyzer's source (src/surface, src/resources, data/, src/package, src/workspace, and
//! Cargo.lock for the parser's versions) into `VELARIS_ANALYZER_DIGEST`, part
//! of every analysis cache key: a changed analyzer never reads results an older one cached.
//! Reads files only; builds and runs nothing.

use std::hash::Hasher;
use std::path::Path;

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let mut files = Vec::new();
    // The analyzer, its rules, what decides which files and cfgs it sees (package, workspace),
    // and the locked versions of the parser it is built with.
    for d in ["src/surface", "src/resources", "data", "src/package", "src/workspace", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={d}");
        let p = Path::new(d);
        if p.is_dir() {
            walk(p, &mut files);
        } else {
            files.push(p.to_path_buf());
        }
    }
    files.sort();
    // FNV-1a, 64 bits: stable across toolchains, and enough to tell builds apart.
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for f in &files {
        h.write(f.to_string_lossy().as_bytes());
        h.write(&[0]);
        h.write(&std::fs::read(f).unwrap_or_default());
        h.write(&[0]);
    }
    println!("cargo:rustc-env=VELARIS_ANALYZER_DIGEST={:016x}", h.finish());
}
