//! Step outputs (`GITHUB_OUTPUT`), which the runner reads after the step.
//!
//! Outputs are written in the multi-line form `name<<DELIMITER`, with a random delimiter that
//! the value does not contain, so no value can end early and set another output.

use std::io::{self, Write};
use std::path::Path;

use super::annotations::random_token;

/// Append `name=value` pairs to the outputs file.
pub fn write_outputs(path: &Path, pairs: &[(&str, &str)]) -> io::Result<()> {
    let mut text = String::new();
    for (name, value) in pairs {
        let mut delim = format!("ghadelimiter_{}", random_token());
        while value.contains(&delim) {
            delim = format!("ghadelimiter_{}", random_token());
        }
        text.push_str(&format!("{name}<<{delim}\n{value}\n{delim}\n"));
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_use_a_delimiter_the_value_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        write_outputs(&p, &[("widened", "true"), ("body", "a\nb<<EOF\nc")]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let d = lines[0].strip_prefix("widened<<").unwrap();
        assert!(d.starts_with("ghadelimiter_") && d.len() > 30);
        assert_eq!(lines[1], "true");
        assert_eq!(lines[2], d);
        assert!(lines[3].starts_with("body<<"));
        assert_eq!(&lines[4..7], ["a", "b<<EOF", "c"]);
    }
}
