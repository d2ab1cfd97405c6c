//! Escaping attacker-controlled text.
//!
//! A package chooses its file names and its source lines, so before they reach a terminal they
//! lose every control character (escape sequences could rewrite the screen) and every invisible
//! or direction-changing format character (a "trojan source" line reads differently from what it
//! does). Before they reach markdown they also lose their power to become markup or HTML.

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
/// punctuation is backslash-escaped and HTML's special characters become entities.
pub fn markdown_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in line(s).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '#' | '|' | '~' | '@' | ':' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A fenced markdown code block holding `body` literally: the fence is longer than any run of
/// backticks inside, so the body cannot close it.
pub fn markdown_code_block(info: &str, body: &str) -> String {
    let body = source(body);
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
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
        assert_eq!(markdown_inline("[a](http://x)"), "\\[a\\]\\(http\\://x\\)");
        assert_eq!(markdown_inline("a|b"), "a\\|b");
        assert_eq!(markdown_inline("@team"), "\\@team");
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
