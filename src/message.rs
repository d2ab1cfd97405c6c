//! Turning errors and echoed input into the text users see.
//!
//! - [`chain`]: an error and its causes, each said once (a cause whose text its parent already
//!   contains is not repeated).
//! - [`redact_url`] and [`redact`]: credentials never reach a message, a log or a report. The
//!   user part of a URL (`user:password@`) becomes `***@` and every query value becomes `***`
//!   (`?token=***`), except the `branch`, `tag` and `rev` of a cargo git source, which are not
//!   secrets and say which commit is meant.
//! - [`clip`]: input echoed back in a message (a version string, a name) is cut at
//!   [`ECHO_MAX`] characters, saying how much was left out.
//!
//! Nothing here decides what is an error; it only shapes the words.

use std::borrow::Cow;
use std::error::Error;

/// How many characters of an echoed input value a message shows.
pub const ECHO_MAX: usize = 120;

/// How many characters one line of an error message may have before the rest is cut.
pub const LINE_MAX: usize = 1000;

/// `s`, or its first [`ECHO_MAX`] characters and a note of how many more there were.
pub fn clip(s: &str) -> Cow<'_, str> {
    clip_to(s, ECHO_MAX)
}

/// `s`, or its first `max` characters and a note of how many more there were.
pub fn clip_to(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((cut, _)) => {
            let rest = s[cut..].chars().count();
            Cow::Owned(format!("{}… ({rest} more characters)", &s[..cut]))
        }
    }
}

/// Every line of `text` clipped to [`LINE_MAX`] characters.
pub fn clip_lines(text: &str) -> Cow<'_, str> {
    if text.lines().all(|l| l.len() <= LINE_MAX) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(1 << 20));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&clip_to(line, LINE_MAX));
    }
    Cow::Owned(out)
}

/// An error and its causes, `: `-separated; a cause whose text is already part of the message
/// so far is left out, so nothing is said twice.
pub fn chain(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

/// Query keys of a cargo git source (`git+URL?branch=..#commit`), shown as they are.
const GIT_KEYS: &[&str] = &["branch", "tag", "rev"];

/// A URL with its user part and its query values replaced by `***`. Text that is not a URL
/// comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_string() };
    let after = scheme_end + 3;
    let rest = &url[after..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..after]);
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            out.push_str("***");
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_end..];
    let (before_fragment, fragment) = match tail.find('#') {
        Some(h) => tail.split_at(h),
        None => (tail, ""),
    };
    match before_fragment.split_once('?') {
        None => out.push_str(before_fragment),
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let git = url.starts_with("git+");
            for (i, param) in query.split('&').enumerate() {
                if i > 0 {
                    out.push('&');
                }
                match param.split_once('=') {
                    Some((k, _)) if git && GIT_KEYS.contains(&k) => out.push_str(param),
                    Some((k, _)) => {
                        out.push_str(k);
                        out.push_str("=***");
                    }
                    None if param.is_empty() => {}
                    None => out.push_str("***"),
                }
            }
        }
    }
    out.push_str(fragment);
    out
}

/// Characters that end a URL inside running text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

fn scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// `text` with every URL in it passed through [`redact_url`].
pub fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find("://") {
        let sep = search + found;
        let start = text[..sep].char_indices().rev().take_while(|&(_, c)| scheme_char(c)).last().map_or(sep, |(i, _)| i);
        let end = text[sep..].char_indices().find(|&(_, c)| ends_url(c)).map_or(text.len(), |(i, _)| sep + i);
        // Punctuation that closes the sentence is not part of the URL.
        let url = text[start..end].trim_end_matches(['.', ',', ';', ':', ')', ']']);
        if start < sep && start >= copied {
            out.push_str(&text[copied..start]);
            out.push_str(&redact_url(url));
            copied = start + url.len();
        }
        search = end.max(sep + 3);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_query_values_are_hidden() {
        assert_eq!(redact_url("sparse+http://user:PASSWORD@host:8/index/"), "sparse+http://***@host:8/index/");
        assert_eq!(redact_url("https://h/dl/a?token=SECRET&x=1#frag"), "https://h/dl/a?token=***&x=***#frag");
        assert_eq!(redact_url("https://TOKEN@h/x?SECRET"), "https://***@h/x?***");
        assert_eq!(redact_url("https://h/p@q/x"), "https://h/p@q/x", "an @ in the path is not userinfo");
        assert_eq!(redact_url("https://index.crates.io/"), "https://index.crates.io/");
        assert_eq!(redact_url("git+https://g/r?branch=main#abc"), "git+https://g/r?branch=main#abc");
        assert_eq!(redact_url("git+https://u:p@g/r?token=x&rev=1#abc"), "git+https://***@g/r?token=***&rev=1#abc");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn urls_inside_text() {
        let t = "HTTP request to sparse+http://u:PW@127.0.0.1:9/index/config.json failed (redirected to https://x/y?t=PW2).";
        let r = redact(t);
        assert!(!r.contains("PW"), "{r}");
        assert_eq!(
            r,
            "HTTP request to sparse+http://***@127.0.0.1:9/index/config.json failed (redirected to https://x/y?t=***)."
        );
        assert_eq!(redact("no urls here"), "no urls here");
        assert_eq!(redact("`https://a:b@c/`, and \"http://d/?e=f\""), "`https://***@c/`, and \"http://d/?e=***\"");
        assert_eq!(redact("odd :// alone"), "odd :// alone");
    }

    #[test]
    fn clipping() {
        assert_eq!(clip("short"), "short");
        let long = "1.0.0-".to_string() + &"a".repeat(100_000);
        let c = clip(&long);
        assert!(c.len() < 200, "{c}");
        assert!(c.ends_with("… (99886 more characters)"), "{c}");
        let lines = format!("ok\n{}\nok", "x".repeat(LINE_MAX + 10));
        let c = clip_lines(&lines);
        assert!(c.starts_with("ok\n") && c.ends_with("(10 more characters)\nok"), "{c}");
    }

    #[test]
    fn causes_are_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read x: {source}")]
        struct Echo {
            source: std::io::Error,
        }
        let e = Echo { source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file") };
        assert_eq!(chain(&e), "cannot read x: no such file");
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read y")]
        struct Plain {
            #[source]
            source: std::io::Error,
        }
        let e = Plain { source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file") };
        assert_eq!(chain(&e), "cannot read y: no such file");
    }
}
