//! Size budgets: a comment holds at most 65,536 characters; GitHub takes a step summary of up
//! to 1 MiB, and the action keeps its own under 100 KB, a page a reviewer can still open.
//!
//! A [`Budget`] hands out room piece by piece: a piece fits whole or is refused, so a document
//! never ends in the middle of a table, a code block or a `<details>`.

/// GitHub's limit for a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// What the action aims at for a comment, leaving room below [`COMMENT_LIMIT`].
pub const COMMENT_BUDGET: usize = 64_000;

/// GitHub's limit for one step's summary, in bytes: a larger summary fails the step.
pub const SUMMARY_LIMIT: usize = 1024 * 1024;

/// What the action writes to the step summary at most, in bytes: the same sections as the
/// comment, with more room for evidence and diffs, and still a page that opens quickly.
pub const SUMMARY_BUDGET: usize = 100_000;

/// Characters, as GitHub counts a comment's length.
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Room left in a document, in characters (a comment) or bytes (a summary).
#[derive(Debug, Clone)]
pub struct Budget {
    left: usize,
    bytes: bool,
}

impl Budget {
    /// A budget in characters.
    pub fn new(limit: usize) -> Budget {
        Budget { left: limit, bytes: false }
    }

    /// A budget in bytes.
    pub fn bytes(limit: usize) -> Budget {
        Budget { left: limit, bytes: true }
    }

    /// The size of `s` in this budget's unit.
    pub fn size(&self, s: &str) -> usize {
        if self.bytes { s.len() } else { chars(s) }
    }

    pub fn left(&self) -> usize {
        self.left
    }

    /// Set `n` characters aside; false (and nothing set aside) if they do not fit.
    pub fn take(&mut self, n: usize) -> bool {
        if n > self.left {
            return false;
        }
        self.left -= n;
        true
    }

    /// Append `piece` to `out` if it fits whole.
    pub fn push(&mut self, out: &mut String, piece: &str) -> bool {
        if self.take(self.size(piece)) {
            out.push_str(piece);
            true
        } else {
            false
        }
    }

    /// Give back room set aside earlier.
    pub fn give_back(&mut self, n: usize) {
        self.left += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fit_whole_or_not_at_all() {
        let mut b = Budget::new(10);
        let mut out = String::new();
        assert!(b.push(&mut out, "héllo"));
        assert!(!b.push(&mut out, "world!"));
        assert!(b.push(&mut out, "world"));
        assert_eq!(out, "hélloworld");
        assert_eq!(b.left(), 0);
        let mut by = Budget::bytes(5);
        assert!(!by.push(&mut out, "héllo"), "six bytes");
        b.give_back(3);
        assert!(b.take(3));
        assert!(!b.take(1));
    }
}
