//! What the added lines of a package's Rust sources say about intent, beyond the capabilities
//! they reach: secret-shaped paths and variables (`.env`, `.ssh`, `.aws`, wallets and keys,
//! `/proc/self/environ`, registry and CI tokens, the whole environment), the conditions an
//! attack waits for (a branch on CI or host variables, the clock, the OS), code that reads a
//! binary file the package ships (`include_bytes!` or a path naming it), and string literals
//! that decode or join into a URL or a command.
//!
//! Added lines are the new file's lines that the old file does not have (every line of a new
//! package). Each signal carries its place and the line. No IO: trees in, signals out; the
//! work is bounded by the files' sizes (each line is looked at once, joined strings per file
//! are capped).

use std::collections::{BTreeMap, HashSet};

use crate::package::FileTree;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SignalKind {
    /// A secret-shaped path or variable.
    Secret,
    /// A condition on CI, the host, the clock or the OS.
    Trigger,
    /// Code that reads a binary file of the package.
    BinaryRead,
    /// String literals that decode (base64, hex) or join into a URL or a command.
    Hidden,
}

impl SignalKind {
    pub fn code(self) -> &'static str {
        match self {
            SignalKind::Secret => "secret-access",
            SignalKind::Trigger => "trigger-condition",
            SignalKind::BinaryRead => "binary-read",
            SignalKind::Hidden => "hidden-string",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub kind: SignalKind,
    /// What it is: "`.ssh`", "`GITLAB_CI`", "the clock".
    pub what: String,
    pub file: String,
    pub line: u32,
    /// The line, trimmed and clipped.
    pub text: String,
}

/// Secret-shaped paths and variables, with how each is shown.
const SECRETS: &[(&str, &str)] = &[
    (".env", "`.env`"),
    (".ssh", "`.ssh`"),
    ("id_rsa", "an SSH key"),
    ("id_ed25519", "an SSH key"),
    ("id_ecdsa", "an SSH key"),
    (".aws", "`.aws`"),
    (".git-credentials", "`.git-credentials`"),
    (".npmrc", "`.npmrc`"),
    (".pypirc", "`.pypirc`"),
    (".cargo/credentials", "cargo's credentials"),
    (".docker/config.json", "docker's credentials"),
    (".kube/config", "`.kube/config`"),
    (".gnupg", "`.gnupg`"),
    ("wallet.dat", "a wallet"),
    ("keystore", "a keystore"),
    (".bitcoin", "a wallet"),
    (".ethereum", "a wallet"),
    (".electrum", "a wallet"),
    ("solana/id.json", "a wallet key"),
    ("Login Data", "browser passwords"),
    ("/proc/self/environ", "`/proc/self/environ`"),
    ("/etc/shadow", "`/etc/shadow`"),
    (".bash_history", "shell history"),
    (".zsh_history", "shell history"),
    ("CARGO_REGISTRY_TOKEN", "`CARGO_REGISTRY_TOKEN`"),
    ("GITHUB_TOKEN", "`GITHUB_TOKEN`"),
    ("GH_TOKEN", "`GH_TOKEN`"),
    ("NPM_TOKEN", "`NPM_TOKEN`"),
    ("AWS_SECRET_ACCESS_KEY", "`AWS_SECRET_ACCESS_KEY`"),
    ("AWS_SESSION_TOKEN", "`AWS_SESSION_TOKEN`"),
    ("CI_JOB_TOKEN", "`CI_JOB_TOKEN`"),
    ("ACTIONS_RUNTIME_TOKEN", "`ACTIONS_RUNTIME_TOKEN`"),
    ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "`ACTIONS_ID_TOKEN_REQUEST_TOKEN`"),
    ("VAULT_TOKEN", "`VAULT_TOKEN`"),
    ("env::vars()", "every environment variable"),
    ("env::vars_os()", "every environment variable"),
];

/// Conditions an attack waits for: CI and host variables (as string literals), the clock, the
/// OS.
const TRIGGERS: &[(&str, &str)] = &[
    ("\"CI\"", "`CI`"),
    ("\"GITLAB_CI\"", "`GITLAB_CI`"),
    ("\"GITHUB_ACTIONS\"", "`GITHUB_ACTIONS`"),
    ("\"TRAVIS\"", "`TRAVIS`"),
    ("\"CIRCLECI\"", "`CIRCLECI`"),
    ("\"JENKINS_URL\"", "`JENKINS_URL`"),
    ("\"BUILDKITE\"", "`BUILDKITE`"),
    ("\"TF_BUILD\"", "`TF_BUILD`"),
    ("\"RUNNER_OS\"", "`RUNNER_OS`"),
    ("\"HOSTNAME\"", "the host name"),
    ("\"COMPUTERNAME\"", "the host name"),
    ("gethostname", "the host name"),
    ("SystemTime::now", "the clock"),
    ("UNIX_EPOCH", "the clock"),
    ("Utc::now", "the clock"),
    ("Local::now", "the clock"),
    ("OffsetDateTime::now", "the clock"),
    ("env::consts::OS", "the OS"),
    ("cfg!(target_os", "the OS"),
    ("CARGO_CFG_TARGET_OS", "the OS"),
];

/// What decoded or joined strings are searched for.
const HIDDEN: &[&str] = &["http://", "https://", "/bin/sh", "/bin/bash", "cmd.exe", "powershell", "curl ", "wget ", ".onion", "chmod +x"];

/// Signals kept per kind and package.
const MAX_PER_KIND: usize = 12;
/// Bytes of string literals joined at most in one run of consecutive added lines.
const MAX_JOINED: usize = 16 * 1024;
/// Parts joined at most in one stretch.
const MAX_STRETCH: usize = 8;
/// Bytes decoded at most per package, over every literal and stretch: a deterministic budget
/// against a file built to be slow to look at (past it, strings are no longer decoded).
const DECODE_BUDGET: usize = 32 * 1024 * 1024;

fn clip(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() > 160 { format!("{}…", t.chars().take(159).collect::<String>()) } else { t.to_string() }
}

/// `.env` as a path, not `std::env` or `.envelope`.
fn secret_at(line: &str, needle: &str) -> bool {
    let mut start = 0;
    while let Some(i) = line[start..].find(needle) {
        let at = start + i;
        let before = line[..at].chars().last();
        let after = line[at + needle.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let ok = if needle.starts_with('.') || needle.starts_with('/') {
            !word(before) && !word(after)
        } else {
            !word(before) && !word(after) || needle.contains("::") || needle.contains(' ')
        };
        if ok {
            return true;
        }
        start = at + needle.len();
    }
    false
}

/// Every string literal's contents on a line, in order (plain `"..."` only; escapes kept).
fn literals(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    // A line comment ends what code there is.
    let code_end = line.find("//").unwrap_or(line.len());
    while i < code_end {
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = j.min(b.len());
            out.push(&line[start..end]);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

fn decode_b64(s: &str) -> Option<String> {
    let s = s.trim_end_matches('=');
    if s.len() < 12 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in s.as_bytes() {
        acc = (acc << 6) | val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    String::from_utf8(out).ok().filter(|t| t.chars().all(|c| !c.is_control() || c == '\n'))
}

fn decode_hex(s: &str) -> Option<String> {
    if s.len() < 16 || s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Vec<u8> = (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0)).collect();
    String::from_utf8(bytes).ok().filter(|t| t.chars().all(|c| !c.is_control() || c == '\n'))
}

fn hidden_in(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    HIDDEN.iter().copied().find(|h| lower.contains(h))
}

/// Why a string (one literal, or several joined) hides a URL or a command, if it does.
pub fn hidden(s: &str) -> Option<String> {
    for (how, decoded) in [("base64", decode_b64(s)), ("hex", decode_hex(s))] {
        if let Some(d) = decoded {
            if let Some(h) = hidden_in(&d) {
                let shown: String = d.chars().take(60).collect();
                return Some(format!("{how} that decodes to {shown:?} ({})", h.trim()));
            }
        }
    }
    None
}

struct Collector {
    out: Vec<Signal>,
    per_kind: BTreeMap<SignalKind, usize>,
    /// Bytes still to decode (see [`DECODE_BUDGET`]).
    budget: usize,
}

impl Default for Collector {
    fn default() -> Self {
        Collector { out: Vec::new(), per_kind: BTreeMap::new(), budget: DECODE_BUDGET }
    }
}

impl Collector {
    /// [`hidden`] within the decode budget.
    fn hidden(&mut self, s: &str) -> Option<String> {
        if s.len() > self.budget {
            self.budget = 0;
            return None;
        }
        self.budget -= s.len();
        hidden(s)
    }

    fn push(&mut self, s: Signal) {
        let n = self.per_kind.entry(s.kind).or_default();
        if *n < MAX_PER_KIND && !self.out.iter().any(|o| o.kind == s.kind && o.what == s.what && o.file == s.file) {
            *n += 1;
            self.out.push(s);
        }
    }
}

/// String literals of consecutive added lines.
#[derive(Default)]
struct Joined {
    parts: Vec<String>,
    bytes: usize,
    at: Option<(u32, String)>,
}

impl Joined {
    /// Each run of two or more literals written only in the base64 or hex alphabet, joined.
    fn flush(&mut self, c: &mut Collector, path: &str) {
        if let Some((line, text)) = self.at.take() {
            let encoded = |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=-_".contains(&b));
            let mut run: Vec<&str> = Vec::new();
            let mut found = None;
            for part in self.parts.iter().map(String::as_str).chain(std::iter::once("\u{0}")) {
                if encoded(part) {
                    run.push(part);
                    continue;
                }
                // Every stretch of the run: the parts of one string may sit among other literals.
                // The whole run, then every stretch of up to MAX_STRETCH parts, longest first:
                // the one that hides something is shown.
                if run.len() > 1 && found.is_none() {
                    found = c.hidden(&run.concat());
                }
                let longest = run.len().min(MAX_STRETCH);
                'stretches: for len in (2..=longest).rev() {
                    for i in 0..=(run.len() - len) {
                        if found.is_some() {
                            break 'stretches;
                        }
                        found = c.hidden(&run[i..i + len].concat());
                    }
                }
                run.clear();
            }
            if let Some(why) = found {
                c.push(Signal { kind: SignalKind::Hidden, what: format!("string literals joined: {why}"), file: path.to_string(), line, text });
            }
        }
        self.parts.clear();
        self.bytes = 0;
    }
}

/// The signals of one package change.
pub fn scan(old: Option<&FileTree>, new: &FileTree) -> Vec<Signal> {
    let binaries: Vec<&str> = new
        .iter()
        .filter(|(p, b)| !p.ends_with(".rs") && crate::diff::is_binary(p, b))
        .filter(|(p, _)| old.and_then(|o| o.get(*p)).is_none_or(|ob| Some(ob) != new.get(*p)))
        .map(|(p, _)| p.as_str())
        .collect();
    let mut c = Collector::default();
    for (path, bytes) in new {
        if !path.ends_with(".rs") {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else { continue };
        let old_lines: HashSet<&str> =
            old.and_then(|t| t.get(path)).and_then(|b| std::str::from_utf8(b).ok()).map(|t| t.lines().collect()).unwrap_or_default();
        // Literals of consecutive added lines, joined: a URL split into short parts.
        let mut joined = Joined::default();
        for (i, line) in text.lines().enumerate() {
            let n = (i + 1) as u32;
            if old_lines.contains(line) {
                joined.flush(&mut c, path);
                continue;
            }
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for (needle, what) in SECRETS {
                if secret_at(line, needle) {
                    c.push(Signal { kind: SignalKind::Secret, what: what.to_string(), file: path.clone(), line: n, text: clip(line) });
                }
            }
            for (needle, what) in TRIGGERS {
                if line.contains(needle) {
                    c.push(Signal { kind: SignalKind::Trigger, what: what.to_string(), file: path.clone(), line: n, text: clip(line) });
                }
            }
            for b in &binaries {
                let name = b.rsplit('/').next().unwrap_or(b);
                if name.len() >= 3 && line.contains(name) && (line.contains("include_bytes!") || line.contains('"')) {
                    c.push(Signal { kind: SignalKind::BinaryRead, what: format!("`{b}`"), file: path.clone(), line: n, text: clip(line) });
                }
            }
            let lits = literals(line);
            for l in &lits {
                if let Some(why) = c.hidden(l) {
                    c.push(Signal { kind: SignalKind::Hidden, what: why, file: path.clone(), line: n, text: clip(line) });
                }
            }
            if lits.is_empty() {
                joined.flush(&mut c, path);
            } else if joined.bytes < MAX_JOINED {
                if joined.at.is_none() {
                    joined.at = Some((n, clip(line)));
                }
                for l in lits {
                    joined.bytes += l.len();
                    joined.parts.push(l.to_string());
                }
            }
        }
        joined.flush(&mut c, path);
    }
    let mut out = c.out;
    out.sort_by(|a, b| (a.kind, &a.file, a.line).cmp(&(b.kind, &b.file, b.line)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> FileTree {
        files.iter().map(|(p, c)| (p.to_string(), c.as_bytes().to_vec())).collect()
    }

    fn kinds(s: &[Signal]) -> Vec<(&'static str, String)> {
        s.iter().map(|s| (s.kind.code(), s.what.clone())).collect()
    }

    #[test]
    fn secrets_triggers_and_hidden_strings_in_added_lines() {
        let old = tree(&[("src/lib.rs", "pub fn now() -> u64 { 0 }\n")]);
        let new = tree(&[(
            "src/lib.rs",
            "pub fn now() -> u64 { 0 }\nfn sync() {\n    let t = std::fs::read_to_string(\".env\");\n    if std::env::var(\"GITLAB_CI\").is_ok() {}\n    let u = [\"aHR0cHM6Ly9l\", \"eGFtcGxlLmNv\", \"bS9wYXlsb2Fk\"].concat();\n}\n",
        )]);
        let s = scan(Some(&old), &new);
        let k = kinds(&s);
        assert!(k.contains(&("secret-access", "`.env`".into())), "{k:?}");
        assert!(k.contains(&("trigger-condition", "`GITLAB_CI`".into())), "{k:?}");
        assert!(s.iter().any(|s| s.kind == SignalKind::Hidden && s.what.contains("joined") && s.what.contains("https://example.com/payload")), "{k:?}");
        assert_eq!(s.iter().find(|s| s.kind == SignalKind::Secret).unwrap().line, 3);
        // Lines the old version had are not signals.
        assert!(scan(Some(&new), &new).is_empty());
    }

    #[test]
    fn code_that_only_looks_alike_is_not_a_signal() {
        let new = tree(&[(
            "src/lib.rs",
            "use std::env;\nlet e = envelope.env_var;\nlet k = std::env::var(\"NO_COLOR\");\n// see https://lists.example.org/archives/2024/message-id-3f2a9c1d4e5b6a7f8091a2b3c4d5e6f7\nlet s = \"hello world, this is a plain message\";\n",
        )]);
        assert_eq!(kinds(&scan(None, &new)), Vec::<(&str, String)>::new());
    }

    #[test]
    fn decoding_stops_at_its_budget() {
        let mut c = Collector { budget: 40, ..Collector::default() };
        let url = "aHR0cHM6Ly9leGFtcGxlLmNvbS9wYXlsb2Fk";
        assert!(c.hidden(url).is_some());
        assert!(c.hidden(url).is_none(), "the budget is spent: nothing more is decoded");
        assert_eq!(c.budget, 0);
    }

    #[test]
    fn code_reading_a_binary_test_file() {
        let new = tree(&[
            ("tests/files/bad-3-corrupt.xz", "\u{fd}7zXZ\0\0\u{4}\u{e6}\u{d6}\u{b4}F\u{2}\0!\u{1}"),
            ("build.rs", "fn main() {\n    let blob = include_bytes!(\"tests/files/bad-3-corrupt.xz\");\n}\n"),
        ]);
        let s = scan(None, &new);
        assert_eq!(kinds(&s), [("binary-read", "`tests/files/bad-3-corrupt.xz`".to_string())]);
    }
}
