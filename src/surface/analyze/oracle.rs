//! The two pieces of outside knowledge the analyzer consults, behind small traits so the
//! unit tests can use doubles: the cfg set ([`CfgEnv`]) and the rules table ([`Rules`]).

use proc_macro2::TokenStream;

use crate::surface::cfg::CfgEnv;
use crate::surface::model::Capability;
use crate::surface::rules::{Rule, RuleKind, Rules, canonical_path};

/// Evaluates the inside of `#[cfg(...)]`. `None`: the predicate could not be parsed.
pub(crate) trait CfgEval {
    fn eval(&self, predicate: &TokenStream) -> Option<bool>;
}

impl CfgEval for CfgEnv {
    fn eval(&self, predicate: &TokenStream) -> Option<bool> {
        self.eval_tokens(predicate)
    }
}

/// What the rules say. `None`: no rule; `Some(empty)`: a rule marks it safe.
pub(crate) trait RuleSource {
    fn path(&self, segments: &[&str]) -> Option<Vec<Capability>>;
    fn method(&self, type_path: &str, method: &str) -> Option<Vec<Capability>>;
    fn symbol(&self, symbol: &str) -> Vec<Capability>;
    /// What system call `name` (without `SYS_`) does: `None` when no rule knows it,
    /// `Some(empty)` when it is harmless.
    fn syscall(&self, name: &str) -> Option<Vec<Capability>>;
    /// The type a function (a resolved path) returns, when the rules say.
    fn returns(&self, path: &str) -> Option<String>;
    /// The builder a constructor (a resolved path) makes, when the rules say.
    fn builder(&self, _path: &str) -> Option<std::sync::Arc<crate::surface::rules::Builder>> {
        None
    }
}

fn rule_caps(r: &Rule) -> Vec<Capability> {
    if r.safe { Vec::new() } else { r.capabilities.clone() }
}

impl RuleSource for Rules {
    /// All the capabilities of the rule; a path that resolved through the symbol table (a
    /// path into a `symbol_crates` crate such as `libc::system`) is also `ffi`.
    fn path(&self, segments: &[&str]) -> Option<Vec<Capability>> {
        let r = self.lookup_path(segments)?;
        let mut caps = rule_caps(r);
        if r.kind == RuleKind::Symbol && !r.safe && !caps.contains(&Capability::Ffi) {
            caps.push(Capability::Ffi);
        }
        Some(caps)
    }
    /// Only a rule for exactly this method: a type's floor rule (`std::process::Command`)
    /// is shown where the value came from (`Command::new`), and the analyzer's builder-chain
    /// guess must not turn `.unwrap()` on a result into a use of the type.
    fn method(&self, type_path: &str, method: &str) -> Option<Vec<Capability>> {
        let r = self.lookup_method(type_path, method)?;
        let mut segs: Vec<&str> = type_path.split("::").collect();
        segs.push(method);
        (r.key == canonical_path(&segs)).then(|| rule_caps(r))
    }
    fn symbol(&self, symbol: &str) -> Vec<Capability> {
        self.lookup_symbol(symbol).map(rule_caps).unwrap_or_default()
    }
    fn syscall(&self, name: &str) -> Option<Vec<Capability>> {
        self.lookup_syscall(name).map(rule_caps)
    }
    fn returns(&self, path: &str) -> Option<String> {
        Rules::returns(self, path).map(str::to_string)
    }
    fn builder(&self, path: &str) -> Option<std::sync::Arc<crate::surface::rules::Builder>> {
        Rules::builder(self, path)
    }
}

#[cfg(test)]
pub(crate) mod doubles {
    //! Tiny stand-ins for the cfg evaluator and the rules table.

    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Atoms that are true (`unix`, `feature = "net"` as `feature=net`), `all`/`any`/`not`.
    pub struct TestCfg(pub BTreeSet<String>);

    impl TestCfg {
        pub fn linux(features: &[&str]) -> TestCfg {
            let mut set: BTreeSet<String> =
                ["unix", "target_os=linux"].iter().map(|s| s.to_string()).collect();
            set.extend(features.iter().map(|f| format!("feature={f}")));
            TestCfg(set)
        }
    }

    impl CfgEval for TestCfg {
        fn eval(&self, predicate: &TokenStream) -> Option<bool> {
            let s: String = predicate.to_string().chars().filter(|c| !c.is_whitespace()).collect();
            self.eval_str(&s)
        }
    }

    impl TestCfg {
        fn eval_str(&self, s: &str) -> Option<bool> {
            for (op, all) in [("all(", true), ("any(", false)] {
                if let Some(inner) = s.strip_prefix(op).and_then(|r| r.strip_suffix(')')) {
                    let parts = split_top(inner);
                    let mut out = all;
                    for p in parts.iter().filter(|p| !p.is_empty()) {
                        let v = self.eval_str(p)?;
                        out = if all { out && v } else { out || v };
                    }
                    return Some(out);
                }
            }
            if let Some(inner) = s.strip_prefix("not(").and_then(|r| r.strip_suffix(')')) {
                return self.eval_str(inner).map(|v| !v);
            }
            if s.is_empty() || !s.chars().all(|c| c.is_alphanumeric() || "_=\"".contains(c)) {
                return None;
            }
            Some(self.0.contains(&s.replace('"', "")))
        }
    }

    fn split_top(s: &str) -> Vec<String> {
        let (mut depth, mut cur, mut out) = (0, String::new(), Vec::new());
        for c in s.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        out.push(cur);
        out
    }

    /// Longest-prefix path rules, method rules and symbols.
    #[derive(Default)]
    pub struct TestRules {
        pub paths: BTreeMap<String, Capability>,
        pub methods: BTreeMap<(String, String), Capability>,
        pub symbols: BTreeMap<String, Capability>,
    }

    impl TestRules {
        pub fn small() -> TestRules {
            let mut r = TestRules::default();
            for (p, c) in [
                ("std::fs::write", Capability::FsWrite),
                ("std::fs::read", Capability::FsRead),
                ("std::fs::File", Capability::FsRead),
                ("std::fs::OpenOptions", Capability::FsRead),
                ("std::process::Command", Capability::ProcessSpawn),
                ("std::env::var", Capability::EnvRead),
                ("std::arch::asm", Capability::Asm),
            ] {
                r.paths.insert(p.to_string(), c);
            }
            r.methods.insert(
                ("std::fs::OpenOptions".into(), "write".into()),
                Capability::FsWrite,
            );
            r.methods.insert(("std::path::Path".into(), "exists".into()), Capability::FsRead);
            r.methods.insert(("std::os::unix::fs::FileExt".into(), "write_at".into()), Capability::FsWrite);
            r.symbols.insert("system".into(), Capability::ProcessSpawn);
            r.symbols.insert("syscall".into(), Capability::Unanalyzed);
            r
        }
    }

    impl RuleSource for TestRules {
        fn path(&self, segments: &[&str]) -> Option<Vec<Capability>> {
            (1..=segments.len())
                .rev()
                .find_map(|n| self.paths.get(&segments[..n].join("::")))
                .map(|c| vec![*c])
        }
        fn method(&self, type_path: &str, method: &str) -> Option<Vec<Capability>> {
            self.methods
                .get(&(type_path.to_string(), method.to_string()))
                .map(|c| vec![*c])
        }
        fn symbol(&self, symbol: &str) -> Vec<Capability> {
            self.symbols.get(symbol).copied().into_iter().collect()
        }
        fn returns(&self, path: &str) -> Option<String> {
            (path == "std::fs::File::options").then(|| "std::fs::OpenOptions".to_string())
        }
        fn syscall(&self, name: &str) -> Option<Vec<Capability>> {
            match name {
                "futex" => Some(Vec::new()),
                "execve" => Some(vec![Capability::ProcessSpawn]),
                _ => None,
            }
        }
    }
}
