//! The job summary (`GITHUB_STEP_SUMMARY`), appended section by section under
//! [`SUMMARY_BUDGET`] (100 KB): a section that would pass it is replaced by a note, so the write
//! never fails the step for its size (the runner fails a step whose summary passes 1 MiB) and
//! the page stays quick to open.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::budget::SUMMARY_BUDGET;

/// The step summary, written under a byte budget.
pub struct Summary {
    path: PathBuf,
    left: usize,
    cut: bool,
}

const CUT_NOTE: &str = "\n> [!NOTE]\n> The rest of this summary is left out to keep it under 100 KB; the report file (`report` output) has everything.\n";

impl Summary {
    /// The summary at `path`; what is already in it counts against the budget.
    pub fn open(path: &Path) -> Summary {
        let used = std::fs::metadata(path).map(|m| m.len() as usize).unwrap_or(0);
        Summary { path: path.to_path_buf(), left: SUMMARY_BUDGET.saturating_sub(used + CUT_NOTE.len()), cut: false }
    }

    /// Room left, in bytes.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Append a section if it fits; otherwise append the note (once) and report `false`.
    pub fn append(&mut self, section: &str) -> io::Result<bool> {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        if self.cut {
            return Ok(false);
        }
        if section.len() > self.left {
            self.cut = true;
            f.write_all(CUT_NOTE.as_bytes())?;
            return Ok(false);
        }
        self.left -= section.len();
        f.write_all(section.as_bytes())?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_cut_never_failed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.md");
        std::fs::write(&p, "x".repeat(SUMMARY_BUDGET - 2_000)).unwrap();
        let mut s = Summary::open(&p);
        assert!(s.append("small\n").unwrap());
        assert!(!s.append(&"y".repeat(5_000)).unwrap());
        assert!(!s.append("more\n").unwrap());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.len() < crate::github::budget::SUMMARY_LIMIT);
        assert_eq!(text.matches("left out to keep it under").count(), 1);
    }
}
