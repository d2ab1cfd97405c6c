//! The `--cfg` values the workspace's rustflags pass to every crate: what cargo would give
//! rustc for the target, read from the environment and the cargo configuration files as data.
//!
//! cargo takes rustflags from the first of these that is set: `CARGO_ENCODED_RUSTFLAGS`,
//! `RUSTFLAGS`, the `target.<triple>.rustflags` and matching `target.'cfg(..)'.rustflags`
//! entries (and `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`) joined, `build.rustflags` (and
//! `CARGO_BUILD_RUSTFLAGS`). Configuration files are those cargo reads for the directory:
//! `.cargo/config.toml` (or `.cargo/config`) in it and every parent, then `CARGO_HOME`'s;
//! lists from several files are joined, as cargo joins them.
//!
//! Architecture invariant: nothing here runs a program (no `rustc --print cfg`: target cfg
//! keys are evaluated with [`CfgEnv::matches_target_key`]); only `rustflags` is read of the
//! configuration.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use cargo_platform::Cfg;
use toml::{Table, Value};

use super::CfgEnv;

/// Where rustflags come from.
pub struct FlagSources<'a> {
    /// The directory cargo would run in (the workspace root).
    pub cwd: &'a Path,
    /// `CARGO_HOME` (its `config.toml` is read last).
    pub cargo_home: Option<&'a Path>,
    /// The environment cargo would see.
    pub env: &'a [(String, String)],
}

/// A problem with the configuration, naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagsError(pub String);

/// The `--cfg` values of the rustflags cargo would use for `cfg`'s target, deduplicated and
/// sorted. A `--cfg` value that does not parse is an error (rustc would refuse it too).
pub fn workspace_cfgs(src: &FlagSources, cfg: &CfgEnv) -> Result<Vec<Cfg>, FlagsError> {
    let flags = rustflags(src, cfg)?;
    let mut out = cfg_values(&flags)?;
    out.sort();
    out.dedup();
    Ok(out)
}

fn env<'a>(src: &'a FlagSources, key: &str) -> Option<&'a str> {
    src.env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn split_space(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The rustflags cargo would use, by its precedence.
fn rustflags(src: &FlagSources, cfg: &CfgEnv) -> Result<Vec<String>, FlagsError> {
    if let Some(v) = env(src, "CARGO_ENCODED_RUSTFLAGS") {
        return Ok(v.split('\u{1f}').filter(|s| !s.is_empty()).map(str::to_string).collect());
    }
    if let Some(v) = env(src, "RUSTFLAGS") {
        return Ok(split_space(v));
    }
    let files = config_tables(src)?;
    let mut target_flags: Option<Vec<String>> = None;
    let env_key = format!("CARGO_TARGET_{}_RUSTFLAGS", cfg.triple().to_ascii_uppercase().replace(['-', '.'], "_"));
    if let Some(v) = env(src, &env_key) {
        target_flags.get_or_insert_with(Vec::new).extend(split_space(v));
    }
    for (path, t) in &files {
        let Some(Value::Table(targets)) = t.get("target") else { continue };
        for (key, v) in targets {
            let Value::Table(entry) = v else { continue };
            let Some(flags) = entry.get("rustflags") else { continue };
            if key == cfg.triple() || (key.starts_with("cfg(") && cfg.matches_target_key(key)) {
                target_flags.get_or_insert_with(Vec::new).extend(list(flags, path, &format!("target.{key}.rustflags"))?);
            }
        }
    }
    if let Some(f) = target_flags {
        return Ok(f);
    }
    if let Some(v) = env(src, "CARGO_BUILD_RUSTFLAGS") {
        return Ok(split_space(v));
    }
    let mut out = Vec::new();
    for (path, t) in &files {
        if let Some(Value::Table(build)) = t.get("build")
            && let Some(flags) = build.get("rustflags")
        {
            out.extend(list(flags, path, "build.rustflags")?);
        }
    }
    Ok(out)
}

/// A string (space separated) or an array of strings.
fn list(v: &Value, path: &Path, key: &str) -> Result<Vec<String>, FlagsError> {
    match v {
        Value::String(s) => Ok(split_space(s)),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                _ => Err(FlagsError(format!("{}: `{key}` must hold strings", path.display()))),
            })
            .collect(),
        _ => Err(FlagsError(format!("{}: `{key}` must be a string or an array of strings", path.display()))),
    }
}

/// The configuration files, lowest precedence first (so that later ones are cargo's
/// stronger ones; for lists the order does not matter here).
fn config_tables(src: &FlagSources) -> Result<Vec<(PathBuf, Table)>, FlagsError> {
    let files = crate::registry::config_files_for(src.cwd, src.cargo_home);
    let mut out = Vec::new();
    for path in files.into_iter().rev() {
        let text = crate::fsio::read_text(&path, crate::fsio::TEXT_CAP, "a cargo configuration file")
            .map_err(|e| FlagsError(crate::message::chain(&e)))?;
        let table: Table = toml::from_str(&text).map_err(|e| FlagsError(format!("{}: {}", path.display(), e.message())))?;
        out.push((path, table));
    }
    Ok(out)
}

/// The values of `--cfg X`, `--cfg=X` in a list of flags.
fn cfg_values(flags: &[String]) -> Result<Vec<Cfg>, FlagsError> {
    let mut out = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        let value = if f == "--cfg" {
            match it.next() {
                Some(v) => v.as_str(),
                None => return Err(FlagsError("rustflags end with `--cfg` and no value".into())),
            }
        } else if let Some(v) = f.strip_prefix("--cfg=") {
            v
        } else {
            continue;
        };
        let c = Cfg::from_str(value.trim()).map_err(|e| FlagsError(format!("rustflags `--cfg {value}`: {e}")))?;
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(files: &[(&str, &str)], env: &[(&str, &str)]) -> Result<Vec<String>, FlagsError> {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        std::fs::create_dir_all(ws.join(".cargo")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        for (rel, text) in files {
            let p = if let Some(r) = rel.strip_prefix("home/") { home.join(r) } else { ws.join(rel) };
            std::fs::write(p, text).unwrap();
        }
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let src = FlagSources { cwd: &ws, cargo_home: Some(&home), env: &env };
        workspace_cfgs(&src, &CfgEnv::default()).map(|v| v.iter().map(|c| c.to_string()).collect())
    }

    #[test]
    fn build_rustflags_from_every_file() {
        let got = run(
            &[
                (".cargo/config.toml", "[build]\nrustflags = [\"--cfg\", \"tokio_unstable\", \"-C\", \"opt-level=2\"]\n"),
                ("home/config.toml", "[build]\nrustflags = \"--cfg=loom --cfg level=\\\"3\\\"\"\n"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(got, ["loom", "tokio_unstable", "level = \"3\""]);
    }

    #[test]
    fn cargo_precedence() {
        let cfg = (".cargo/config.toml", "[build]\nrustflags = [\"--cfg\", \"from_build\"]\n[target.x86_64-unknown-linux-gnu]\nrustflags = [\"--cfg\", \"from_triple\"]\n[target.'cfg(unix)']\nrustflags = [\"--cfg\", \"from_unix\"]\n[target.'cfg(windows)']\nrustflags = [\"--cfg\", \"from_windows\"]\n");
        assert_eq!(run(&[cfg], &[]).unwrap(), ["from_triple", "from_unix"], "target entries win over build");
        assert_eq!(run(&[cfg], &[("RUSTFLAGS", "--cfg from_env")]).unwrap(), ["from_env"]);
        assert_eq!(run(&[cfg], &[("CARGO_ENCODED_RUSTFLAGS", "--cfg\u{1f}enc")]).unwrap(), ["enc"], "encoded flags split on 0x1f");
        let only_build = (".cargo/config.toml", "[build]\nrustflags = [\"--cfg\", \"from_build\"]\n");
        assert_eq!(run(&[only_build], &[]).unwrap(), ["from_build"]);
        assert_eq!(run(&[only_build], &[("CARGO_BUILD_RUSTFLAGS", "--cfg b_env")]).unwrap(), ["b_env"]);
        assert_eq!(
            run(&[only_build], &[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS", "--cfg t_env")]).unwrap(),
            ["t_env"]
        );
        assert!(run(&[], &[]).unwrap().is_empty());
    }

    #[test]
    fn bad_values_are_errors_naming_the_file() {
        let e = run(&[(".cargo/config.toml", "[build]\nrustflags = 3\n")], &[]).unwrap_err();
        assert!(e.0.contains("config.toml") && e.0.contains("build.rustflags"), "{e}");
        let e = run(&[], &[("RUSTFLAGS", "--cfg")]).unwrap_err();
        assert!(e.0.contains("--cfg"), "{e}");
        let e = run(&[], &[("RUSTFLAGS", "--cfg a(b")]).unwrap_err();
        assert!(e.0.contains("a(b"), "{e}");
    }
}
