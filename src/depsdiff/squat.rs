//! Name-squats: a dependency new to the graph whose name imitates a popular crate's.
//!
//! The popular names are data/popular-crates.txt (compiled in; data/README.md says where they
//! come from and how to refresh them). A name resembles a popular one when, compared after
//! lower-casing and taking `_` for `-` (crates.io treats them as one name):
//!
//! - it is the same once separators are dropped (`rustdecimal`, `rust-decimal2`... for
//!   `rust_decimal`: `separator`);
//! - it adds or drops a final `s` (`chronos` for `chrono`: `plural`);
//! - it adds or drops a common affix (`rust-`, `-rs`, `-rust`, `lib`, `-lib`, `-sys` is *not*
//!   one: a `-sys` crate is the normal companion of a binding): `affix`;
//! - its Damerau-Levenshtein distance is 1 (names of 5 to 8 characters) or at most 2 (9 or
//!   more): `edit`. Names shorter than 5 characters are only compared by the other rules: one
//!   edit away from a short name is most short names.
//!
//! A name that is itself in the list is never a squat. No IO.

use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The shipped list.
pub const POPULAR_CRATES: &str = include_str!("../../data/popular-crates.txt");

/// Why a name looks like another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Squat {
    /// The popular crate it resembles.
    pub resembles: String,
    /// `separator`, `plural`, `affix` or `edit`.
    pub how: &'static str,
    /// The edit distance, for `edit`.
    pub distance: usize,
}

impl Squat {
    /// "2 edits from `fast_log`", "`rust_decimal` without its separator".
    pub fn describe(&self) -> String {
        match self.how {
            "separator" => format!("the name of {} with its separators changed", self.resembles),
            "plural" => format!("the name of {} with a plural s added or dropped", self.resembles),
            "affix" => format!("the name of {} with a prefix or suffix added or dropped", self.resembles),
            _ => format!("{} from {}", crate::text::plural(self.distance as u64, "edit", "edits"), self.resembles),
        }
    }
}

struct Popular {
    /// Normalized names.
    names: BTreeSet<String>,
    /// (normalized, as listed), for the edit-distance pass.
    listed: Vec<(String, String)>,
}

fn popular() -> &'static Popular {
    static P: OnceLock<Popular> = OnceLock::new();
    P.get_or_init(|| {
        let mut names = BTreeSet::new();
        let mut listed = Vec::new();
        for line in POPULAR_CRATES.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let n = normalize(line);
            if names.insert(n.clone()) {
                listed.push((n, line.to_string()));
            }
        }
        Popular { names, listed }
    })
}

fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace('_', "-")
}

fn squash(name: &str) -> String {
    name.chars().filter(|c| *c != '-').collect()
}

const AFFIXES: &[(&str, bool)] = &[("rust-", true), ("lib", true), ("-rs", false), ("-rust", false), ("-lib", false), ("rs", false)];

fn strip_affixes(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (a, prefix) in AFFIXES {
        let s = if *prefix { name.strip_prefix(a) } else { name.strip_suffix(a) };
        if let Some(s) = s.filter(|s| s.len() >= 3) {
            out.push(s.trim_matches('-').to_string());
        }
    }
    out
}

/// Two names that differ in exactly one `-`-separated part, where that part is another word
/// rather than a misspelling (`openssl-src` and `openssl-sys`): siblings, not a squat.
fn another_word(a: &str, b: &str) -> bool {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('-').collect(), b.split('-').collect());
    if pa.len() != pb.len() {
        return false;
    }
    let differing: Vec<(&str, &str)> = pa.into_iter().zip(pb).filter(|(x, y)| x != y).collect();
    match differing.as_slice() {
        [(x, y)] => strsim::damerau_levenshtein(x, y) * 2 > x.len().max(y.len()),
        _ => false,
    }
}

/// The popular crate `name` imitates, if it does.
pub fn resembles(name: &str) -> Option<Squat> {
    let p = popular();
    let n = normalize(name);
    if p.names.contains(&n) {
        return None;
    }
    let found = |how: &'static str, distance: usize, listed: &str| Some(Squat { resembles: listed.to_string(), how, distance });
    let squashed = squash(&n);
    for (pn, listed) in &p.listed {
        if squash(pn) == squashed {
            return found("separator", 0, listed);
        }
    }
    for (pn, listed) in &p.listed {
        if n.strip_suffix('s') == Some(pn.as_str()) || pn.strip_suffix('s') == Some(n.as_str()) {
            return found("plural", 0, listed);
        }
    }
    let cores = strip_affixes(&n);
    for (pn, listed) in &p.listed {
        if cores.iter().any(|c| c == pn) || strip_affixes(pn).contains(&n) {
            return found("affix", 0, listed);
        }
    }
    let len = n.chars().count();
    let limit = match len {
        0..=4 => return None,
        5..=8 => 1,
        _ => 2,
    };
    let mut best: Option<(usize, &String)> = None;
    for (pn, listed) in &p.listed {
        if pn.len().abs_diff(n.len()) > limit || pn.chars().count() < 5 {
            continue;
        }
        let d = strsim::damerau_levenshtein(&n, pn);
        if d <= limit && !another_word(&n, pn) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, listed));
        }
    }
    best.and_then(|(d, listed)| found("edit", d, listed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_of_real_squats_are_found() {
        let s = resembles("faster_log").unwrap();
        assert_eq!((s.resembles.as_str(), s.how, s.distance), ("fast_log", "edit", 2));
        assert_eq!(resembles("rustdecimal").unwrap().how, "separator");
        assert_eq!(resembles("rustdecimal").unwrap().resembles, "rust_decimal");
        assert_eq!(resembles("chronos").unwrap().how, "plural");
        assert_eq!(resembles("serde-rs").unwrap().how, "affix");
        assert_eq!(resembles("rust-reqwest").unwrap().resembles, "reqwest");
        assert_eq!(resembles("tokio-utill").unwrap().resembles, "tokio-util");
        assert_eq!(resembles("reqwets").unwrap().resembles, "reqwest", "a transposition is one edit");
        assert!(resembles("faster_log").unwrap().describe().contains("2 edits from fast_log"));
    }

    #[test]
    fn popular_names_and_distant_ones_are_not_squats() {
        for name in ["serde", "serde_json", "serde-json", "tokio", "rust_decimal", "windows-sys", "syn"] {
            assert_eq!(resembles(name), None, "{name}");
        }
        // Short names: one edit is most names.
        for name in ["lag", "logg", "sin", "rnd"] {
            assert_eq!(resembles(name), None, "{name}");
        }
        for name in ["velaris", "my-company-internal-http", "zxqv-kernel", "openssl-src"] {
            assert_eq!(resembles(name), None, "{name}");
        }
    }
}
