//! Sound cfg evaluation: the configuration code is compiled under, for evaluating
//! `#[cfg(..)]`, `#[cfg_attr(..)]`, `cfg!(..)`, `cfg_if!`/`cfg_select!` arms and cargo's
//! `[target.'cfg(..)'.dependencies]` keys from source alone.
//!
//! Each known target carries exactly what `rustc 1.95 --print cfg --target <triple>` prints,
//! minus `debug_assertions`: the analysis describes what ships, so release semantics apply
//! (`debug_assertions`, `overflow_checks`, `test`, `doc`, `doctest`, `miri` and `proc_macro`
//! are all false unless added with [`CfgEnv::with_cfg`]). `panic` is the target's default
//! (`"unwind"`, `"abort"` on wasm). Features are the crate's enabled ones, as
//! `feature = "x"`.
//!
//! Every predicate evaluates to true, false or unknown (`None`). The names the compiler decides
//! itself ([`is_compiler_name`]: `target_*`, `unix`, `windows`, `panic`, `feature`, ...) are
//! known. `--cfg` values from the workspace's rustflags ([`flags`]) are true. Any other name
//! is decided by [`Others`]: in a package with a build script it is unknown (the script may
//! set it, however it prints it), unless the script was evaluated exactly; elsewhere it is
//! false, as rustc has it. Code under an unknown predicate is analysed (a superset, never
//! nothing); an exact value may narrow the superset, never the reverse.
//!
//! Architecture invariant: no evaluation turns an unknown name into a known one without
//! evidence: the compiler's own set for the target, the resolved features, the workspace's
//! rustflags, or an exact evaluation of the package's build script.
//!
//! Evaluation uses cargo-platform's `CfgExpr`, whose tokenizer only skips spaces and knows
//! plain `"..."` strings, so token streams are re-printed in that form first (raw strings,
//! newlines and comments in the source are fine).

pub mod flags;

use std::collections::BTreeSet;
use std::str::FromStr;

use cargo_platform::{Cfg, CfgExpr, Platform};
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The target analysed when none is given.
pub const DEFAULT_TARGET: &str = "x86_64-unknown-linux-gnu";

/// Known targets and their cfg values, as printed by `rustc --print cfg` (whitespace
/// separated, `debug_assertions` removed).
const TARGETS: &[(&str, &str)] = &[
    (
        "x86_64-unknown-linux-gnu",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little"
            target_env="gnu" target_family="unix" target_feature="fxsr" target_feature="sse"
            target_feature="sse2" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr" target_os="linux"
            target_pointer_width="64" target_vendor="unknown" unix"#,
    ),
    (
        "aarch64-unknown-linux-gnu",
        r#"panic="unwind" target_abi="" target_arch="aarch64" target_endian="little"
            target_env="gnu" target_family="unix" target_feature="neon" target_has_atomic="128"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="linux"
            target_pointer_width="64" target_vendor="unknown" unix"#,
    ),
    (
        "x86_64-unknown-linux-musl",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little"
            target_env="musl" target_family="unix" target_feature="crt-static"
            target_feature="fxsr" target_feature="sse" target_feature="sse2"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="linux"
            target_pointer_width="64" target_vendor="unknown" unix"#,
    ),
    (
        "i686-unknown-linux-gnu",
        r#"panic="unwind" target_abi="" target_arch="x86" target_endian="little" target_env="gnu"
            target_family="unix" target_feature="fxsr" target_feature="sse" target_feature="sse2"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="linux"
            target_pointer_width="32" target_vendor="unknown" unix"#,
    ),
    (
        "armv7-unknown-linux-gnueabihf",
        r#"panic="unwind" target_abi="eabihf" target_arch="arm" target_endian="little"
            target_env="gnu" target_family="unix" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr" target_os="linux"
            target_pointer_width="32" target_vendor="unknown" unix"#,
    ),
    (
        "riscv64gc-unknown-linux-gnu",
        r#"panic="unwind" target_abi="" target_arch="riscv64" target_endian="little"
            target_env="gnu" target_family="unix" target_feature="a" target_feature="c"
            target_feature="m" target_feature="zaamo" target_feature="zalrsc" target_feature="zca"
            target_feature="zicsr" target_feature="zifencei" target_has_atomic="16"
            target_has_atomic="32" target_has_atomic="64" target_has_atomic="8"
            target_has_atomic="ptr" target_os="linux" target_pointer_width="64"
            target_vendor="unknown" unix"#,
    ),
    (
        "x86_64-apple-darwin",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little" target_env=""
            target_family="unix" target_feature="cmpxchg16b" target_feature="fxsr"
            target_feature="sse" target_feature="sse2" target_feature="sse3"
            target_feature="sse4.1" target_feature="ssse3" target_has_atomic="128"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="macos"
            target_pointer_width="64" target_vendor="apple" unix"#,
    ),
    (
        "aarch64-apple-darwin",
        r#"panic="unwind" target_abi="" target_arch="aarch64" target_endian="little"
            target_env="" target_family="unix" target_feature="aes" target_feature="crc"
            target_feature="dit" target_feature="dotprod" target_feature="dpb"
            target_feature="dpb2" target_feature="fcma" target_feature="fhm"
            target_feature="flagm" target_feature="fp16" target_feature="frintts"
            target_feature="jsconv" target_feature="lor" target_feature="lse"
            target_feature="neon" target_feature="paca" target_feature="pacg" target_feature="pan"
            target_feature="pmuv3" target_feature="ras" target_feature="rcpc"
            target_feature="rcpc2" target_feature="rdm" target_feature="sb" target_feature="sha2"
            target_feature="sha3" target_feature="ssbs" target_feature="vh"
            target_has_atomic="128" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr" target_os="macos"
            target_pointer_width="64" target_vendor="apple" unix"#,
    ),
    (
        "aarch64-apple-ios",
        r#"panic="unwind" target_abi="" target_arch="aarch64" target_endian="little"
            target_env="" target_family="unix" target_feature="aes" target_feature="neon"
            target_feature="pmuv3" target_feature="sha2" target_has_atomic="128"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="ios"
            target_pointer_width="64" target_vendor="apple" unix"#,
    ),
    (
        "x86_64-pc-windows-msvc",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little"
            target_env="msvc" target_family="windows" target_feature="cmpxchg16b"
            target_feature="fxsr" target_feature="sse" target_feature="sse2" target_feature="sse3"
            target_has_atomic="128" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr"
            target_os="windows" target_pointer_width="64" target_vendor="pc" windows"#,
    ),
    (
        "i686-pc-windows-msvc",
        r#"panic="unwind" target_abi="" target_arch="x86" target_endian="little"
            target_env="msvc" target_family="windows" target_feature="fxsr" target_feature="sse"
            target_feature="sse2" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr"
            target_os="windows" target_pointer_width="32" target_vendor="pc" windows"#,
    ),
    (
        "aarch64-pc-windows-msvc",
        r#"panic="unwind" target_abi="" target_arch="aarch64" target_endian="little"
            target_env="msvc" target_family="windows" target_feature="neon"
            target_has_atomic="128" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr"
            target_os="windows" target_pointer_width="64" target_vendor="pc" windows"#,
    ),
    (
        "x86_64-pc-windows-gnu",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little"
            target_env="gnu" target_family="windows" target_feature="cmpxchg16b"
            target_feature="fxsr" target_feature="sse" target_feature="sse2" target_feature="sse3"
            target_has_atomic="128" target_has_atomic="16" target_has_atomic="32"
            target_has_atomic="64" target_has_atomic="8" target_has_atomic="ptr"
            target_os="windows" target_pointer_width="64" target_vendor="pc" windows"#,
    ),
    (
        "x86_64-unknown-freebsd",
        r#"panic="unwind" target_abi="" target_arch="x86_64" target_endian="little" target_env=""
            target_family="unix" target_feature="fxsr" target_feature="sse" target_feature="sse2"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="freebsd"
            target_pointer_width="64" target_vendor="unknown" unix"#,
    ),
    (
        "aarch64-linux-android",
        r#"panic="unwind" target_abi="" target_arch="aarch64" target_endian="little"
            target_env="" target_family="unix" target_feature="neon" target_has_atomic="128"
            target_has_atomic="16" target_has_atomic="32" target_has_atomic="64"
            target_has_atomic="8" target_has_atomic="ptr" target_os="android"
            target_pointer_width="64" target_vendor="unknown" unix"#,
    ),
    (
        "wasm32-unknown-unknown",
        r#"panic="abort" target_abi="" target_arch="wasm32" target_endian="little" target_env=""
            target_family="wasm" target_feature="bulk-memory" target_feature="multivalue"
            target_feature="mutable-globals" target_feature="nontrapping-fptoint"
            target_feature="reference-types" target_feature="sign-ext" target_has_atomic="16"
            target_has_atomic="32" target_has_atomic="64" target_has_atomic="8"
            target_has_atomic="ptr" target_os="unknown" target_pointer_width="32"
            target_vendor="unknown""#,
    ),
    (
        "wasm32-wasip1",
        r#"panic="abort" target_abi="" target_arch="wasm32" target_endian="little"
            target_env="p1" target_family="wasm" target_feature="bulk-memory"
            target_feature="crt-static" target_feature="multivalue"
            target_feature="mutable-globals" target_feature="nontrapping-fptoint"
            target_feature="reference-types" target_feature="sign-ext" target_has_atomic="16"
            target_has_atomic="32" target_has_atomic="64" target_has_atomic="8"
            target_has_atomic="ptr" target_os="wasi" target_pointer_width="32"
            target_vendor="unknown""#,
    ),
];

/// The configuration code is compiled under: a target's cfg values and the crate's enabled
/// features, the workspace's `--cfg` flags, and how other names are decided ([`Others`]).
#[derive(Debug, Clone)]
pub struct CfgEnv {
    triple: String,
    /// The target's own cfgs (what `[target.'cfg(..)']` keys see).
    target: Vec<Cfg>,
    /// Added with `with_cfg` (`debug_assertions`, `proc_macro`, ...).
    extra: Vec<Cfg>,
    features: BTreeSet<String>,
    /// `target` + `extra` + features: what `#[cfg]` sees.
    all: Vec<Cfg>,
    /// `--cfg` values of the workspace's rustflags: true for every crate.
    flags: Vec<Cfg>,
    /// Names the flags set, unknown instead of true (build scripts and proc macros: rustflags
    /// reach host units only when cargo builds without `--target`).
    flags_unknown: bool,
    /// How every other name is decided.
    others: Others,
}

/// How a cfg name that neither the compiler nor the workspace's flags decide evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Others {
    /// False, as rustc has unset names: a package without a build script.
    False,
    /// Unknown: a package with a build script, which may set any name.
    Unknown,
    /// Exactly these, as an evaluation of the package's build script found them (every
    /// `rustc-cfg` it can print); every other name is false.
    Exact(BTreeSet<Cfg>),
}

/// Names whose value the compiler decides for every crate: a build script cannot set them
/// (rustc refuses `--cfg` of a built-in name) and the workspace's flags do not reach them.
pub fn is_compiler_name(name: &str) -> bool {
    name.starts_with("target_")
        || matches!(
            name,
            "unix"
                | "windows"
                | "panic"
                | "feature"
                | "debug_assertions"
                | "overflow_checks"
                | "test"
                | "doc"
                | "doctest"
                | "miri"
                | "proc_macro"
                | "relocation_model"
                | "sanitize"
                | "sanitizer_cfi_generalize_pointers"
                | "sanitizer_cfi_normalize_integers"
                | "fmt_debug"
                | "ub_checks"
                | "contract_checks"
                | "emscripten_wasm_eh"
                | "clippy"
                | "rustfmt"
        )
}

impl Default for CfgEnv {
    /// [`DEFAULT_TARGET`] with no features.
    fn default() -> Self {
        CfgEnv::for_target(DEFAULT_TARGET, &BTreeSet::new()).expect("the default target is known")
    }
}

impl CfgEnv {
    /// The cfg set of a known target triple (`x86_64-unknown-linux-gnu` and a handful of
    /// common others), with `features` enabled. Unknown triple: an error naming the ones known.
    pub fn for_target(triple: &str, features: &BTreeSet<String>) -> Result<CfgEnv, String> {
        let triple = triple.trim();
        let Some((_, cfgs)) = TARGETS.iter().find(|(t, _)| *t == triple) else {
            return Err(format!(
                "unknown target `{triple}` (known: {})",
                known_targets().collect::<Vec<_>>().join(", ")
            ));
        };
        let target = cfgs
            .split_whitespace()
            .map(|c| Cfg::from_str(c).map_err(|e| format!("built-in cfg `{c}` of {triple}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut env = CfgEnv {
            triple: triple.to_string(),
            target,
            extra: Vec::new(),
            features: BTreeSet::new(),
            all: Vec::new(),
            flags: Vec::new(),
            flags_unknown: false,
            others: Others::False,
        };
        env.set_features(features);
        Ok(env)
    }

    /// The same target cfgs with another feature set.
    pub fn with_features(&self, features: &BTreeSet<String>) -> CfgEnv {
        let mut env = self.clone();
        env.set_features(features);
        env
    }

    /// The same configuration plus one cfg, `name` or `key = "value"`: `debug_assertions`
    /// for debug-build semantics, `proc_macro` for a proc-macro crate, `test`, ...
    pub fn with_cfg(&self, cfg: &str) -> Result<CfgEnv, String> {
        let c = Cfg::from_str(cfg.trim()).map_err(|e| format!("invalid cfg `{cfg}`: {e}"))?;
        let mut env = self.clone();
        if !env.extra.contains(&c) {
            env.extra.push(c);
        }
        let features = env.features.clone();
        env.set_features(&features);
        Ok(env)
    }

    fn set_features(&mut self, features: &BTreeSet<String>) {
        self.features = features.clone();
        self.all = self.target.iter().chain(&self.extra).cloned().collect();
        self.all.extend(features.iter().map(|f| {
            Cfg::KeyPair(
                cargo_platform::Ident {
                    name: "feature".to_string(),
                    raw: false,
                },
                f.clone(),
            )
        }));
    }

    /// The same configuration with the workspace's `--cfg` flags (see [`flags`]) true.
    pub fn with_flags(&self, flags: &[Cfg]) -> CfgEnv {
        let mut env = self.clone();
        env.flags = flags.iter().filter(|c| !is_compiler_name(cfg_name(c))).cloned().collect();
        env
    }

    /// The same configuration for a unit on the host side (a build script, a proc macro, or
    /// what they depend on): the workspace's flags reach it only when cargo builds without
    /// `--target`, so the names they set are unknown there.
    pub fn for_host_unit(&self) -> CfgEnv {
        let mut env = self.clone();
        env.flags_unknown = !env.flags.is_empty();
        env
    }

    /// The same configuration with other names decided by `others` (see [`Others`]).
    pub fn with_others(&self, others: Others) -> CfgEnv {
        let mut env = self.clone();
        env.others = others;
        env
    }

    /// How names outside the compiler's and the flags' are decided.
    pub fn others(&self) -> &Others {
        &self.others
    }

    /// The workspace's `--cfg` flags in force.
    pub fn flags(&self) -> &[Cfg] {
        &self.flags
    }

    /// Everything besides the target and the features that decides a predicate, as text:
    /// part of an analysis result's cache key.
    pub fn fingerprint(&self) -> String {
        let mut s = String::new();
        for c in &self.extra {
            s.push_str(&format!("extra {c}\n"));
        }
        for c in &self.flags {
            s.push_str(&format!("flag {c}\n"));
        }
        s.push_str(if self.flags_unknown { "flags unknown\n" } else { "flags known\n" });
        match &self.others {
            Others::False => s.push_str("others false\n"),
            Others::Unknown => s.push_str("others unknown\n"),
            Others::Exact(set) => {
                for c in set {
                    s.push_str(&format!("exact {c}\n"));
                }
            }
        }
        s
    }

    /// Evaluate a cfg predicate given as tokens of `#[cfg(...)]`'s inside, e.g.
    /// `all(unix, feature = "fs")`. `None` when it cannot be parsed, or when its value
    /// depends on an unknown cfg (`all(unix, tokio_unstable)`; `all(windows,
    /// tokio_unstable)` is known false).
    pub fn eval_tokens(&self, tokens: &proc_macro2::TokenStream) -> Option<bool> {
        let expr = parse_tokens(tokens)?;
        self.eval3(&expr)
    }

    fn eval3(&self, e: &CfgExpr) -> Option<bool> {
        match e {
            CfgExpr::True => Some(true),
            CfgExpr::False => Some(false),
            CfgExpr::Not(inner) => self.eval3(inner).map(|v| !v),
            CfgExpr::All(v) => {
                let mut unknown = false;
                for x in v {
                    match self.eval3(x) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                (!unknown).then_some(true)
            }
            CfgExpr::Any(v) => {
                let mut unknown = false;
                for x in v {
                    match self.eval3(x) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                (!unknown).then_some(false)
            }
            CfgExpr::Value(c) => {
                let name = cfg_name(c);
                if is_compiler_name(name) {
                    return Some(self.all.contains(c));
                }
                // A name set on the command line may still be set with another value, or
                // again, by a build script.
                if self.flags.contains(c) {
                    return if self.flags_unknown { None } else { Some(true) };
                }
                if self.flags_unknown && self.flags.iter().any(|f| cfg_name(f) == name) {
                    return None;
                }
                match &self.others {
                    Others::False => Some(false),
                    Others::Unknown => None,
                    Others::Exact(set) => Some(set.contains(c)),
                }
            }
        }
    }

    /// Evaluate a cargo `[target.'cfg(...)'.dependencies]` key or a plain triple. Only the
    /// target's cfgs count (cargo ignores features and `debug_assertions` there); a key that
    /// does not parse matches nothing.
    pub fn matches_target_key(&self, key: &str) -> bool {
        // cargo-platform parses by recursion: a key nested deeper than any real one is taken as
        // one that does not parse, before it can exhaust the stack.
        let mut depth = 0usize;
        for b in key.bytes() {
            match b {
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > MAX_TARGET_KEY_DEPTH {
                return false;
            }
        }
        Platform::from_str(key.trim())
            .map(|p| p.matches(&self.triple, &self.target))
            .unwrap_or(false)
    }

    /// Whether `#[cfg_attr(pred, ...)]`-style predicates and `cfg!(...)` use the same rules:
    /// yes; this is a convenience for string input, e.g. `unix`.
    pub fn eval_str(&self, predicate: &str) -> Option<bool> {
        let tokens = TokenStream::from_str(predicate).ok()?;
        self.eval_tokens(&tokens)
    }

    pub fn triple(&self) -> &str {
        &self.triple
    }

    /// The enabled features.
    pub fn features(&self) -> &BTreeSet<String> {
        &self.features
    }

    /// Every cfg that is true: the target's, those added with `with_cfg`, the features.
    pub fn cfgs(&self) -> &[Cfg] {
        &self.all
    }
}

/// The name of a cfg (`unix`, `feature` of `feature = "x"`).
pub fn cfg_name(c: &Cfg) -> &str {
    match c {
        Cfg::Name(i) | Cfg::KeyPair(i, _) => &i.name,
    }
}

/// How deeply a `[target.'cfg(..)']` key may nest (real ones nest two or three levels).
const MAX_TARGET_KEY_DEPTH: usize = 256;

/// The triples [`CfgEnv::for_target`] knows.
pub fn known_targets() -> impl Iterator<Item = &'static str> {
    TARGETS.iter().map(|(t, _)| *t)
}

/// Parse the inside of `#[cfg(..)]` into cargo-platform's expression.
pub fn parse_tokens(tokens: &TokenStream) -> Option<CfgExpr> {
    let mut s = String::new();
    print_tokens(tokens, &mut s)?;
    if s.trim().is_empty() {
        return None;
    }
    CfgExpr::from_str(&s).ok()
}

/// Re-print tokens in the form cargo-platform's tokenizer reads: space separated, strings as
/// plain `"..."` (their value, which may not contain `"`), only `(..)` groups.
fn print_tokens(tokens: &TokenStream, out: &mut String) -> Option<()> {
    for tt in tokens.clone() {
        match tt {
            TokenTree::Ident(i) => {
                let name = i.to_string();
                // rustc reads `r#true` as a cfg named `true` (never set), cargo-platform as
                // the literal `true`: keep rustc's meaning.
                match name.as_str() {
                    "r#true" | "r#false" => out.push_str("__velaris_unset_raw_bool"),
                    _ => out.push_str(&name),
                }
                out.push(' ');
            }
            TokenTree::Punct(p) => match p.as_char() {
                c @ (',' | '=') => {
                    out.push(c);
                    out.push(' ');
                }
                _ => return None,
            },
            TokenTree::Literal(l) => match syn::Lit::new(l) {
                syn::Lit::Str(s) => {
                    let v = s.value();
                    if v.contains('"') {
                        return None;
                    }
                    out.push('"');
                    out.push_str(&v);
                    out.push_str("\" ");
                }
                _ => return None,
            },
            TokenTree::Group(g) => match g.delimiter() {
                Delimiter::Parenthesis => {
                    out.push('(');
                    print_tokens(&g.stream(), out)?;
                    // rustc takes a trailing comma (`not(a,)`), cargo-platform's `not` does not.
                    if out.ends_with(", ") && !out[..out.len() - 2].ends_with('(') {
                        out.truncate(out.len() - 2);
                    }
                    out.push_str(") ");
                }
                Delimiter::None => print_tokens(&g.stream(), out)?,
                Delimiter::Brace | Delimiter::Bracket => return None,
            },
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feats(f: &[&str]) -> BTreeSet<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    fn env(t: &str) -> CfgEnv {
        CfgEnv::for_target(t, &BTreeSet::new()).unwrap()
    }

    #[test]
    fn every_known_target_parses_and_has_the_basics() {
        let required = [
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
            "x86_64-apple-darwin",
            "aarch64-apple-darwin",
            "x86_64-pc-windows-msvc",
            "wasm32-unknown-unknown",
        ];
        for t in required {
            assert!(known_targets().any(|k| k == t), "{t}");
        }
        for t in known_targets() {
            let e = env(t);
            assert_eq!(e.triple(), t);
            for key in [
                "target_os",
                "target_family",
                "target_arch",
                "target_pointer_width",
                "target_endian",
                "target_env",
                "target_vendor",
                "target_has_atomic",
                "panic",
            ] {
                assert!(
                    e.cfgs()
                        .iter()
                        .any(|c| matches!(c, Cfg::KeyPair(k, _) if k == key)),
                    "{t} lacks {key}"
                );
            }
            for off in ["debug_assertions", "test", "doc", "proc_macro", "miri"] {
                assert_eq!(e.eval_str(off), Some(false), "{t} {off}");
            }
        }
        let mut seen = BTreeSet::new();
        assert!(known_targets().all(|t| seen.insert(t)), "duplicate target");
    }

    #[test]
    fn target_values() {
        let linux = CfgEnv::default();
        assert_eq!(linux.triple(), DEFAULT_TARGET);
        for (p, want) in [
            ("unix", true),
            ("target_family = \"unix\"", true),
            ("windows", false),
            ("target_os = \"linux\"", true),
            ("target_os = \"macos\"", false),
            ("target_arch = \"x86_64\"", true),
            ("target_pointer_width = \"64\"", true),
            ("target_endian = \"little\"", true),
            ("target_env = \"gnu\"", true),
            ("target_vendor = \"unknown\"", true),
            ("target_has_atomic = \"64\"", true),
            ("target_has_atomic = \"ptr\"", true),
            ("target_has_atomic = \"128\"", false),
            ("target_feature = \"sse2\"", true),
            ("target_feature = \"avx2\"", false),
            ("panic = \"unwind\"", true),
            ("panic = \"abort\"", false),
            ("some_custom_cfg", false),
            ("tokio_unstable", false),
            ("true", true),
            ("false", false),
            ("all()", true),
            ("any()", false),
        ] {
            assert_eq!(linux.eval_str(p), Some(want), "{p}");
        }
        let mac = env("aarch64-apple-darwin");
        assert_eq!(mac.eval_str("target_os = \"macos\""), Some(true));
        assert_eq!(mac.eval_str("target_vendor = \"apple\""), Some(true));
        assert_eq!(
            mac.eval_str("all(unix, target_arch = \"aarch64\")"),
            Some(true)
        );
        assert_eq!(mac.eval_str("target_env = \"\""), Some(true));
        let win = env("x86_64-pc-windows-msvc");
        assert_eq!(win.eval_str("windows"), Some(true));
        assert_eq!(win.eval_str("target_family = \"windows\""), Some(true));
        assert_eq!(win.eval_str("unix"), Some(false));
        assert_eq!(win.eval_str("target_env = \"msvc\""), Some(true));
        let wasm = env("wasm32-unknown-unknown");
        assert_eq!(wasm.eval_str("target_family = \"wasm\""), Some(true));
        assert_eq!(wasm.eval_str("any(unix, windows)"), Some(false));
        assert_eq!(wasm.eval_str("target_pointer_width = \"32\""), Some(true));
        assert_eq!(wasm.eval_str("panic = \"abort\""), Some(true));
        assert_eq!(
            env("aarch64-unknown-linux-gnu").eval_str("target_arch = \"aarch64\""),
            Some(true)
        );
        assert_eq!(
            env("x86_64-apple-darwin").eval_str("target_os = \"macos\""),
            Some(true)
        );
    }

    #[test]
    fn unknown_target_names_the_known_ones() {
        let err = CfgEnv::for_target("sparc-sun-solaris", &BTreeSet::new()).unwrap_err();
        assert!(err.contains("unknown target `sparc-sun-solaris`"), "{err}");
        assert!(
            err.contains("x86_64-unknown-linux-gnu") && err.contains("wasm32-unknown-unknown"),
            "{err}"
        );
    }

    #[test]
    fn features() {
        let e = CfgEnv::for_target(DEFAULT_TARGET, &feats(&["fs", "net"])).unwrap();
        assert_eq!(e.eval_str("feature = \"fs\""), Some(true));
        assert_eq!(e.eval_str("feature=\"net\""), Some(true));
        assert_eq!(e.eval_str("feature = \"tls\""), Some(false));
        assert_eq!(
            e.eval_str("all(unix, feature = \"fs\", not(feature = \"tls\"))"),
            Some(true)
        );
        let other = e.with_features(&feats(&["tls"]));
        assert_eq!(other.eval_str("feature = \"fs\""), Some(false));
        assert_eq!(other.eval_str("feature = \"tls\""), Some(true));
        assert_eq!(other.triple(), DEFAULT_TARGET);
        assert_eq!(other.features(), &feats(&["tls"]));
        // Feature names are not cfg names.
        assert_eq!(e.eval_str("fs"), Some(false));
    }

    #[test]
    fn tokens_from_syn_attributes() {
        let file: syn::File = syn::parse_str(
            r##"
            #[cfg(all(unix, feature = "fs"))] fn a() {}
            #[cfg(any(windows, target_os = r"linux"))] fn b() {}
            #[cfg(not(
                // a comment
                feature = "fs",
            ))] fn c() {}
            #[cfg(r#true)] fn d() {}
            #[cfg(debug_assertions)] fn e() {}
            "##,
        )
        .unwrap();
        let e = CfgEnv::for_target(DEFAULT_TARGET, &feats(&["fs"])).unwrap();
        let mut got = Vec::new();
        for item in &file.items {
            let syn::Item::Fn(f) = item else {
                unreachable!()
            };
            let syn::Meta::List(list) = &f.attrs[0].meta else {
                unreachable!()
            };
            got.push(e.eval_tokens(&list.tokens));
            // syn prints `feature = "fs"` with spaces: cargo-platform reads that form too.
            let printed = list.tokens.to_string();
            // (Except raw strings, raw idents and trailing commas, which is why tokens are
            // re-printed.)
            if !printed.contains("r\"") && !printed.contains("r#") && !printed.contains(",)") {
                let direct = CfgExpr::from_str(&printed)
                    .map(|x| x.matches(e.cfgs()))
                    .ok();
                assert_eq!(direct, *got.last().unwrap(), "{printed}");
            }
        }
        assert_eq!(
            got,
            [
                Some(true),
                Some(true),
                Some(false),
                Some(false),
                Some(false)
            ]
        );
        assert_eq!(
            e.with_cfg("debug_assertions")
                .unwrap()
                .eval_str("debug_assertions"),
            Some(true)
        );
    }

    #[test]
    fn unparsable_predicates() {
        let e = CfgEnv::default();
        for p in [
            "",
            "all(unix",
            "not(unix, windows)",
            "feature = 3",
            "a::b",
            "unix [x]",
            "feature = b\"x\"",
            "version(\"1.80\")",
            "\"unix\"",
        ] {
            assert_eq!(e.eval_str(p), None, "{p}");
        }
        assert_eq!(e.eval_str("all(unix, windows,)"), Some(false));
        assert_eq!(e.eval_str("not(windows,)"), Some(true));
        assert_eq!(e.eval_str("all(,)"), None);
        assert_eq!(e.eval_str("any(\n unix ,\n\twindows )"), Some(true));
    }

    #[test]
    fn other_names_follow_the_build_script_rule() {
        let closed = CfgEnv::default();
        assert_eq!(closed.eval_str("tokio_unstable"), Some(false), "no build script: false");
        let open = CfgEnv::default().with_others(Others::Unknown);
        let e = |s: &str| open.eval_str(s);
        assert_eq!(e("tokio_unstable"), None);
        assert_eq!(e("not(tokio_unstable)"), None);
        assert_eq!(e("all(windows, tokio_unstable)"), Some(false));
        assert_eq!(e("any(unix, tokio_unstable)"), Some(true));
        assert_eq!(e("unix"), Some(true), "a target cfg stays known");
        assert_eq!(e("target_os = \"macos\""), Some(false));
        assert_eq!(e("feature = \"x\""), Some(false), "features are cargo's");
        assert_eq!(e("debug_assertions"), Some(false));
        assert_eq!(e("aarch64_apple_darwin"), None, "any other name, even shaped like a triple");
        // Flags: true, in a package with a build script or not; a name they set may get
        // another value from the script.
        let flags = vec![Cfg::from_str("tokio_unstable").unwrap(), Cfg::from_str("unix").unwrap()];
        let f = CfgEnv::default().with_flags(&flags);
        assert_eq!(f.eval_str("tokio_unstable"), Some(true));
        assert_eq!(f.eval_str("loom"), Some(false));
        let fo = f.with_others(Others::Unknown);
        assert_eq!(fo.eval_str("tokio_unstable"), Some(true));
        assert_eq!(fo.eval_str("tokio_unstable = \"x\""), None);
        assert_eq!(f.flags().len(), 1, "a built-in name is not a flag");
        // Host units: the flags may not reach them.
        let h = f.for_host_unit();
        assert_eq!(h.eval_str("tokio_unstable"), None);
        assert_eq!(h.eval_str("not(tokio_unstable)"), None);
        assert_eq!(h.eval_str("loom"), Some(false));
        // Exact: what the script sets, nothing else.
        let set: BTreeSet<Cfg> = [Cfg::from_str("linux_raw").unwrap(), Cfg::from_str("lvl = \"2\"").unwrap()].into_iter().collect();
        let x = CfgEnv::default().with_others(Others::Exact(set));
        assert_eq!(x.eval_str("linux_raw"), Some(true));
        assert_eq!(x.eval_str("libc"), Some(false));
        assert_eq!(x.eval_str("lvl = \"2\""), Some(true));
        assert_eq!(x.eval_str("lvl = \"3\""), Some(false));
        assert_ne!(x.fingerprint(), open.fingerprint());
        assert_ne!(open.fingerprint(), closed.fingerprint());
        assert_ne!(f.fingerprint(), h.fingerprint());
    }

    #[test]
    fn with_cfg() {
        let e = CfgEnv::default().with_cfg("proc_macro").unwrap();
        assert_eq!(e.eval_str("proc_macro"), Some(true));
        let e = e.with_cfg("panic = \"abort\"").unwrap();
        assert_eq!(e.eval_str("panic = \"abort\""), Some(true));
        assert!(CfgEnv::default().with_cfg("all(").is_err());
        // Extra cfgs survive a feature change, but are not seen by target keys.
        let e = e.with_features(&feats(&["x"]));
        assert_eq!(e.eval_str("all(proc_macro, feature = \"x\")"), Some(true));
        assert!(!e.matches_target_key("cfg(proc_macro)"));
    }

    #[test]
    fn target_keys() {
        let linux = CfgEnv::for_target(DEFAULT_TARGET, &feats(&["fs"])).unwrap();
        assert!(linux.matches_target_key("cfg(unix)"));
        assert!(linux.matches_target_key(" cfg(target_os = \"linux\") "));
        assert!(linux.matches_target_key("cfg(all(unix, not(target_os = \"macos\")))"));
        assert!(!linux.matches_target_key("cfg(windows)"));
        assert!(linux.matches_target_key("x86_64-unknown-linux-gnu"));
        assert!(!linux.matches_target_key("x86_64-pc-windows-msvc"));
        assert!(
            !linux.matches_target_key("cfg(feature = \"fs\")"),
            "cargo ignores features"
        );
        assert!(!linux.matches_target_key("cfg(debug_assertions)"));
        assert!(!linux.matches_target_key("cfg(unix"));
        assert!(!linux.matches_target_key("not a key"));
        let win = env("x86_64-pc-windows-msvc");
        assert!(win.matches_target_key("cfg(windows)"));
        assert!(win.matches_target_key("cfg(target_env = \"msvc\")"));
        assert!(win.matches_target_key("x86_64-pc-windows-msvc"));
        assert!(!win.matches_target_key("cfg(unix)"));
        let wasm = env("wasm32-unknown-unknown");
        assert!(wasm.matches_target_key("cfg(target_arch = \"wasm32\")"));
        assert!(!wasm.matches_target_key("cfg(any(unix, windows))"));
    }
}
