//! Escaping attacker-controlled text.
//!
//! A package chooses its file names and its source lines, so before they reach a terminal they
//! lose every control character (escape sequences could rewrite the screen) and every invisible
//! or direction-changing format character (a "trojan source" line reads differently from what it
//! does). Before they reach markdown they also lose their power to become markup or HTML.
//!
//! On GitHub, markdown is rendered and then post-processed: `@name` becomes a mention (a
//! notification), `#12` a reference, `www.x` and `https://x` links. Backslash escapes do not stop
//! that, since the post-processing sees the rendered text. What does stop it is code: GitHub leaves
//! text inside `<code>` alone. So text taken from a package or from source goes, wherever it can,
//! into a code span ([`code_span`], [`code_span_in_table`]) or, in HTML, `<code>` ([`html_code`]);
//! [`markdown_inline`] is for the places where prose must stay prose.

use std::fmt::Write;

/// Characters that are shown as `\u{..}` wherever they appear (and that velaris never writes
/// raw into a file: see `baseline` and `surface::cache`).
pub fn is_dangerous(c: char) -> bool {
    c.is_control() && c != '\t'
        || matches!(c,
            '\u{00AD}'                      // soft hyphen
            | '\u{061C}'                    // Arabic letter mark
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'       // zero width, LRM, RLM
            | '\u{2028}'..='\u{202E}'       // separators, bidi embeddings and overrides
            | '\u{2060}'..='\u{2069}'       // word joiner, bidi isolates
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{034F}'                    // combining grapheme joiner
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{FE00}'..='\u{FE0F}'       // variation selectors
            | '\u{E0000}'..='\u{E007F}'     // tag characters
            | '\u{E0100}'..='\u{E01EF}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// One line of text for a terminal: file names, package names, messages. Tabs and newlines
/// are escaped too, so the value stays on one line.
pub fn line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_dangerous(c) || c == '\t' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Source text for a terminal, such as diff lines: tabs and newlines are kept, every other
/// control or invisible format character (a carriage return included) is escaped.
pub fn source(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_dangerous(c) && c != '\n' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Inline markdown text (a table cell, a heading): escaped as [`line`], then markdown
/// punctuation is backslash-escaped and HTML's special characters become entities. A zero-width
/// space (`&#8203;`) follows `@` and `#` and precedes the `.` of `www.` and the `//` of `://`, so
/// that GitHub finds no mention, issue reference or link in the rendered text.
pub fn markdown_inline(s: &str) -> String {
    const ZWSP: &str = "&#8203;";
    let text = line(s);
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' | '#' => {
                out.push('\\');
                out.push(c);
                out.push_str(ZWSP);
            }
            '.' if out.len() >= 3 && out.as_bytes()[out.len() - 3..].eq_ignore_ascii_case(b"www") => {
                out.push_str(ZWSP);
                out.push_str("\\.");
            }
            ':' => {
                out.push_str("\\:");
                if chars.peek() == Some(&'/') {
                    out.push_str(ZWSP);
                }
            }
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '|' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The longest run of backticks in `s`.
fn longest_backtick_run(s: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

fn code_span_of(body: String) -> String {
    if body.is_empty() {
        return "` `".to_string();
    }
    let fence = "`".repeat(longest_backtick_run(&body) + 1);
    // CommonMark strips one space on each side when both are there, so a body that starts or
    // ends with a backtick or a space is padded and still reads exactly.
    let pad = body.starts_with(['`', ' ']) || body.ends_with(['`', ' ']);
    let sp = if pad { " " } else { "" };
    format!("{fence}{sp}{body}{sp}{fence}")
}

/// Inline code holding `s` literally (after [`line`]): the delimiter is a backtick run longer than
/// any inside, so the text cannot end the span. Inside code nothing is markup, links, images,
/// mentions or references, and entities are not decoded, so none is written. Not for table
/// cells: see [`code_span_in_table`].
pub fn code_span(s: &str) -> String {
    code_span_of(line(s))
}

/// [`code_span`] for a table cell: a `|` would end the cell even inside code, so it is written
/// `\|`, which GitHub's table parser turns back into `|` before the code span is read.
pub fn code_span_in_table(s: &str) -> String {
    code_span_of(line(s).replace('|', "\\|"))
}

/// Text inside HTML (a `<summary>`): HTML-escaped and wrapped in `<code>`, where GitHub makes
/// no mention, reference or link of it.
pub fn html_code(s: &str) -> String {
    let mut out = String::from("<code>");
    for c in line(s).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out.push_str("</code>");
    out
}

/// A fenced markdown code block holding `body` literally: the fence is longer than any run of
/// backticks inside, so the body cannot close it.
pub fn markdown_code_block(info: &str, body: &str) -> String {
    let body = source(body);
    let fence = "`".repeat((longest_backtick_run(&body) + 1).max(3));
    let mut out = format!("{fence}{info}\n{body}");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_neutralised() {
        assert_eq!(line("a\x1b[31mred"), "a\\u{1b}[31mred");
        assert_eq!(line("x\ny\tz"), "x\\ny\\tz");
        assert_eq!(source("\tlet x = 1;\x07\n\r"), "\tlet x = 1;\\u{7}\n\\r");
    }

    #[test]
    fn invisible_characters_are_visible() {
        assert_eq!(line("t\u{E0041}.rs"), "t\\u{e0041}.rs");
        assert_eq!(line("a\u{3164}b"), "a\\u{3164}b");
    }

    #[test]
    fn bidi_overrides_are_visible() {
        assert_eq!(line("access\u{202E}level"), "access\\u{202e}level");
        assert_eq!(source("a\u{2066}b\u{200b}"), "a\\u{2066}b\\u{200b}");
    }

    #[test]
    fn plain_text_is_untouched() {
        assert_eq!(line("src/lib.rs"), "src/lib.rs");
        assert_eq!(source("fn main() { println!(\"héllo\"); }"), "fn main() { println!(\"héllo\"); }");
    }

    #[test]
    fn markdown_inline_cannot_inject() {
        assert_eq!(markdown_inline("<img src=x>"), "&lt;img src=x&gt;");
        assert_eq!(markdown_inline("[a](http://x)"), "\\[a\\]\\(http\\:&#8203;//x\\)");
        assert_eq!(markdown_inline("a|b"), "a\\|b");
        assert_eq!(markdown_inline("@team"), "\\@&#8203;team");
        assert_eq!(markdown_inline("see #12"), "see \\#&#8203;12");
        assert_eq!(markdown_inline("www.evil.example"), "www&#8203;\\.evil.example");
        assert_eq!(markdown_inline("a:b"), "a\\:b");
        assert_eq!(markdown_inline("![i](x)"), "\\!\\[i\\]\\(x\\)");
    }

    #[test]
    fn code_spans_hold_anything() {
        assert_eq!(code_span("src/lib.rs"), "`src/lib.rs`");
        assert_eq!(code_span("a ``` b"), "````a ``` b````");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span("<img src=x> @a #1"), "`<img src=x> @a #1`", "no entity inside code");
        assert_eq!(code_span(""), "` `");
        assert_eq!(code_span("a\nb"), "`a\\nb`");
        assert_eq!(code_span_in_table("a|b"), "`a\\|b`");
        assert_eq!(html_code("</details> @x"), "<code>&lt;/details&gt; @x</code>");
    }

    #[test]
    fn code_block_fence_outgrows_backticks() {
        let b = markdown_code_block("diff", "x ```` y\n");
        assert!(b.starts_with("`````diff\n"), "{b}");
        assert!(b.ends_with("\n`````\n"), "{b}");
        let plain = markdown_code_block("", "z");
        assert_eq!(plain, "```\nz\n```\n");
    }
}
