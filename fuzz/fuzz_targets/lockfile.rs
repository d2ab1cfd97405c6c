//! The lockfile loader: any text either parses or is reported, with places inside the text;
//! a parsed lockfile diffs with itself to nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use velaris::lockfile::{diff_lockfiles, parse_lockfile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_lockfile(text, "fuzz.lock") {
        Ok(lock) => {
            assert!(diff_lockfiles(&lock, &lock).is_empty(), "a lockfile differs from itself");
            let empty = parse_lockfile("version = 3\n", "empty").unwrap();
            let _ = diff_lockfiles(&empty, &lock);
        }
        Err(e) => {
            let lines = text.lines().count().max(1) + 1;
            for p in &e.problems {
                if let Some((line, column)) = p.at {
                    assert!(line >= 1 && line <= lines && column >= 1, "{e}");
                }
            }
        }
    }
});
