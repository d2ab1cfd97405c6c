//! The `dl` template of a registry's `config.json`, expanded the way cargo does.
//!
//! tame-index has its own expansion but it lacks `{sha256-checksum}`, hence this one.

const CRATE: &str = "{crate}";
const VERSION: &str = "{version}";
const PREFIX: &str = "{prefix}";
const LOWER_PREFIX: &str = "{lowerprefix}";
const CHECKSUM: &str = "{sha256-checksum}";

/// cargo's index-directory prefix of a crate name: 1 char → `1`, 2 → `2`,
/// 3 → `3/{first char}`, longer → `{first two}/{next two}`. Case is kept.
pub(crate) fn crate_prefix(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    match chars.len() {
        0 => String::new(),
        1 => "1".to_owned(),
        2 => "2".to_owned(),
        3 => format!("3/{}", chars[0]),
        _ => {
            let first: String = chars[..2].iter().collect();
            let second: String = chars[2..4].iter().collect();
            format!("{first}/{second}")
        }
    }
}

/// Expands `dl` for one package. Without any marker, cargo appends `/{crate}/{version}/download`
/// (literally, without trimming a trailing slash of `dl`), and so does this.
///
/// `name`, `version` and `checksum` must already be validated (no `{`/`}` in them), so a
/// substituted value can never be mistaken for a marker.
pub(crate) fn download_url(dl: &str, name: &str, version: &str, checksum: &str) -> String {
    let has_marker = [CRATE, VERSION, PREFIX, LOWER_PREFIX, CHECKSUM]
        .iter()
        .any(|m| dl.contains(m));
    if !has_marker {
        return format!("{dl}/{name}/{version}/download");
    }
    let prefix = crate_prefix(name);
    dl.replace(CRATE, name)
        .replace(VERSION, version)
        .replace(LOWER_PREFIX, &prefix.to_lowercase())
        .replace(PREFIX, &prefix)
        .replace(CHECKSUM, checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUM: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn prefix_rule() {
        assert_eq!(crate_prefix("a"), "1");
        assert_eq!(crate_prefix("ab"), "2");
        assert_eq!(crate_prefix("abc"), "3/a");
        assert_eq!(crate_prefix("Abc"), "3/A");
        assert_eq!(crate_prefix("serde"), "se/rd");
        assert_eq!(crate_prefix("SeRde"), "Se/Rd");
        assert_eq!(crate_prefix("abcd"), "ab/cd");
    }

    #[test]
    fn no_marker_appends_cargo_default() {
        assert_eq!(
            download_url("https://static.crates.io/crates", "serde", "1.0.0", SUM),
            "https://static.crates.io/crates/serde/1.0.0/download"
        );
        // Like cargo: no trimming of a trailing slash.
        assert_eq!(
            download_url("https://x/api/", "a", "0.1.0", SUM),
            "https://x/api//a/0.1.0/download"
        );
    }

    #[test]
    fn every_marker() {
        let dl =
            "https://x/{prefix}/{lowerprefix}/{crate}/{crate}-{version}.crate?c={sha256-checksum}";
        assert_eq!(
            download_url(dl, "MyCrate", "1.2.3-rc.1+meta", SUM),
            format!("https://x/My/Cr/my/cr/MyCrate/MyCrate-1.2.3-rc.1+meta.crate?c={SUM}")
        );
        assert_eq!(
            download_url("https://x/{lowerprefix}/{crate}", "Abc", "1.0.0", SUM),
            "https://x/3/a/Abc"
        );
        assert_eq!(
            download_url("https://x/{prefix}/{crate}", "ab", "1.0.0", SUM),
            "https://x/2/ab"
        );
    }

    #[test]
    fn a_single_marker_suppresses_the_default_suffix() {
        assert_eq!(
            download_url("https://x/by-sum/{sha256-checksum}", "a", "1.0.0", SUM),
            format!("https://x/by-sum/{SUM}")
        );
        assert_eq!(
            download_url("https://x/{version}", "a", "1.0.0", SUM),
            "https://x/1.0.0"
        );
    }
}
