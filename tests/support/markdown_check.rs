//! Checks that markdown meant for GitHub is inert: parsed as CommonMark with GitHub's tables
//! (pulldown-cmark), it may only link where it is allowed to, render no image, use no HTML but a
//! few known tags, keep every `<details>` balanced, and hold text that GitHub would turn into a
//! mention (`@name`), a reference (`#12`) or a link (`www.`, `http`) only inside code, where
//! GitHub leaves it alone.
#![allow(dead_code)]

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

const TAGS: &[&str] = &["<details>", "</details>", "<summary>", "</summary>", "<sub>", "</sub>", "<code>", "</code>", "<br>"];

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// Text GitHub would turn into something: a mention, a reference, a link.
fn live(text: &str) -> Option<String> {
    let b = text.as_bytes();
    for i in 0..b.len() {
        let next = b.get(i + 1).copied().unwrap_or(b' ');
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if b[i] == b'@' && boundary && next.is_ascii_alphanumeric() {
            return Some(format!("a mention at {:?}", &text[i..]));
        }
        if b[i] == b'#' && boundary && next.is_ascii_digit() {
            return Some(format!("a reference at {:?}", &text[i..]));
        }
    }
    let lower = text.to_ascii_lowercase();
    for l in ["http://", "https://", "www."] {
        if lower.contains(l) {
            return Some(format!("a link ({l}) in {text:?}"));
        }
    }
    None
}

/// Split HTML into tags and the text between them; the text inside `<code>` is dropped.
fn html_outside_code(html: &str) -> (Vec<String>, String) {
    let mut tags = Vec::new();
    let mut text = String::new();
    let mut in_code = 0usize;
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        if in_code == 0 {
            text.push_str(&rest[..start]);
        }
        let end = rest[start..].find('>').map(|e| start + e + 1).unwrap_or(rest.len());
        let tag = &rest[start..end];
        match tag {
            "<code>" => in_code += 1,
            "</code>" => in_code = in_code.saturating_sub(1),
            _ => {}
        }
        tags.push(tag.to_string());
        rest = &rest[end..];
    }
    if in_code == 0 {
        text.push_str(rest);
    }
    (tags, text)
}

/// Panic unless `md` is inert. `links` are the URL prefixes it may link to; `words` must not
/// appear outside code.
pub fn assert_inert(md: &str, links: &[String], words: &[&str]) {
    let mut code_block = 0usize;
    let mut details = 0isize;
    let mut head_cells = 0usize;
    let mut row_cells = 0usize;
    let mut in_head = false;
    for ev in Parser::new_ext(md, options()) {
        match ev {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_) | CodeBlockKind::Indented)) => code_block += 1,
            Event::End(TagEnd::CodeBlock) => code_block -= 1,
            Event::Start(Tag::Link { dest_url, .. }) => {
                assert!(links.iter().any(|l| dest_url.starts_with(l.as_str())), "a link to {dest_url:?} in:\n{md}");
            }
            Event::Start(Tag::Image { dest_url, .. }) => panic!("an image ({dest_url:?}) in:\n{md}"),
            Event::Start(Tag::TableHead) => {
                in_head = true;
                head_cells = 0;
            }
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableRow) => row_cells = 0,
            Event::End(TagEnd::TableRow) => assert_eq!(row_cells, head_cells, "a table row with another number of cells in:\n{md}"),
            Event::Start(Tag::TableCell) => {
                if in_head {
                    head_cells += 1
                } else {
                    row_cells += 1
                }
            }
            Event::Text(t) if code_block == 0 => {
                if let Some(what) = live(&t) {
                    panic!("{what} outside code in:\n{md}");
                }
                for w in words {
                    assert!(!t.contains(w), "{w:?} outside code in text {t:?} of:\n{md}");
                }
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                if h.trim_start().starts_with("<!-- velaris-ratchet:v1 ") {
                    continue;
                }
                let (tags, text) = html_outside_code(&h);
                for t in &tags {
                    assert!(TAGS.contains(&t.as_str()), "HTML tag {t:?} in:\n{md}");
                    if t == "<details>" {
                        details += 1;
                    } else if t == "</details>" {
                        details -= 1;
                    }
                }
                assert!(details >= 0, "a </details> without its <details> in:\n{md}");
                if let Some(what) = live(&text) {
                    panic!("{what} in HTML outside code in:\n{md}");
                }
                for w in words {
                    assert!(!text.contains(w), "{w:?} in HTML outside code in:\n{md}");
                }
            }
            _ => {}
        }
    }
    assert_eq!(details, 0, "unbalanced <details> in:\n{md}");
}

/// Every table row (header rows too) as the plain text of its cells, code included.
pub fn table_rows(md: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row: Option<Vec<String>> = None;
    for ev in Parser::new_ext(md, options()) {
        match ev {
            Event::Start(Tag::TableRow | Tag::TableHead) => row = Some(Vec::new()),
            Event::End(TagEnd::TableRow | TagEnd::TableHead) => rows.extend(row.take()),
            Event::Start(Tag::TableCell) => {
                if let Some(r) = row.as_mut() {
                    r.push(String::new())
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = row.as_mut().and_then(|r| r.last_mut()) {
                    c.push_str(&t);
                }
            }
            _ => {}
        }
    }
    rows
}

#[test]
fn the_checker_catches_what_it_must() {
    let ok = "### t\n\n`@a #1 <img> https://x` and [run](https://ok/1)\n\n<details><summary><code>@x</code></summary>\n\n| a | b |\n| --- | --- |\n| `x\\|y` | z |\n\n</details>\n";
    assert_inert(ok, &["https://ok/".to_string()], &["<img"]);
    assert_eq!(table_rows(ok)[1], vec!["x|y".to_string(), "z".to_string()]);
    for bad in ["hi @octocat", "see #12", "go to www.evil.example", "![i](https://ok/i.png)", "[x](https://evil)", "<img src=x>", "</details>"] {
        let r = std::panic::catch_unwind(|| assert_inert(bad, &["https://ok/".to_string()], &[]));
        assert!(r.is_err(), "not caught: {bad:?}");
    }
}
