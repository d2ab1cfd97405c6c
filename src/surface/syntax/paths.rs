//! Package-relative file paths: where `mod x;`, `#[path]` and `include!` look.
//!
//! All paths are '/'-separated and relative to the package root; the root directory is "".

/// The directory part of `file` ("src/a/b.rs" → "src/a", "build.rs" → "").
pub(crate) fn dir_of(file: &str) -> &str {
    match file.rfind('/') {
        Some(i) => &file[..i],
        None => "",
    }
}

/// `dir` joined with a relative `rel` (which may contain `.`, `..` and `\`), normalized.
/// `None` when the result would leave the package or `rel` is absolute.
pub(crate) fn join(dir: &str, rel: &str) -> Option<String> {
    let rel = rel.replace('\\', "/");
    if rel.starts_with('/') || rel.as_bytes().get(1) == Some(&b':') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// Whether a module file is a "mod-rs" file: its child modules live next to it rather than
/// in a directory named after it. Crate roots, `mod.rs` files and files loaded through
/// `#[path]` are.
pub(crate) fn is_mod_rs(file: &str, is_root_or_path_attr: bool) -> bool {
    is_root_or_path_attr || file == "mod.rs" || file.ends_with("/mod.rs")
}

/// The directory where `mod x;` items of a module file look for `x.rs` / `x/mod.rs`.
pub(crate) fn child_dir(file: &str, mod_rs: bool) -> String {
    let dir = dir_of(file);
    if mod_rs {
        return dir.to_string();
    }
    let name = &file[dir.len()..].trim_start_matches('/');
    let stem = name.strip_suffix(".rs").unwrap_or(name);
    if dir.is_empty() { stem.to_string() } else { format!("{dir}/{stem}") }
}

/// The candidates for `mod name;` without a `#[path]`, in the order rustc tries them.
pub(crate) fn module_candidates(child_dir: &str, name: &str) -> [String; 2] {
    let prefix = if child_dir.is_empty() { String::new() } else { format!("{child_dir}/") };
    [format!("{prefix}{name}.rs"), format!("{prefix}{name}/mod.rs")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_and_join() {
        assert_eq!(dir_of("src/a/b.rs"), "src/a");
        assert_eq!(dir_of("build.rs"), "");
        assert_eq!(join("src/a", "x.rs").as_deref(), Some("src/a/x.rs"));
        assert_eq!(join("src/a", "../common/mod.rs").as_deref(), Some("src/common/mod.rs"));
        assert_eq!(join("src", "./x\\y.rs").as_deref(), Some("src/x/y.rs"));
        assert_eq!(join("", "gen.rs").as_deref(), Some("gen.rs"));
        assert_eq!(join("src", "../../x.rs"), None);
        assert_eq!(join("src", "/etc/passwd"), None);
        assert_eq!(join("src", "C:\\x.rs"), None);
    }

    #[test]
    fn mod_rs_and_non_mod_rs_children() {
        // The crate root and mod.rs files: children next to the file.
        assert_eq!(child_dir("src/lib.rs", is_mod_rs("src/lib.rs", true)), "src");
        assert_eq!(child_dir("src/a/mod.rs", is_mod_rs("src/a/mod.rs", false)), "src/a");
        // A non-mod-rs file `a.rs` keeps its children in `a/`.
        assert_eq!(child_dir("src/a.rs", is_mod_rs("src/a.rs", false)), "src/a");
        assert_eq!(child_dir("src/a/b.rs", false), "src/a/b");
        assert_eq!(child_dir("build.rs", true), "");
        // A file loaded through #[path] counts as mod-rs.
        assert_eq!(child_dir("src/other/x.rs", is_mod_rs("src/other/x.rs", true)), "src/other");
        assert_eq!(
            module_candidates("src/a", "b"),
            ["src/a/b.rs".to_string(), "src/a/b/mod.rs".to_string()]
        );
        assert_eq!(module_candidates("", "b"), ["b.rs".to_string(), "b/mod.rs".to_string()]);
    }
}
