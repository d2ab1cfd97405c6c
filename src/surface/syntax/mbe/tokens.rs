//! The token view rustc's macro matcher has of a proc-macro2 stream.
//!
//! proc-macro2 splits every multi-character operator into single `Punct`s (`=>` is `=` Joint
//! then `>`), and a lifetime into `'` and an identifier; rustc's macro matcher sees `=>`,
//! `::`, `..=`, `'a` as one token each (a `$t:tt` takes all of `=>`). [`next`] glues them
//! back the way rustc's token cursor does (`Token::glue`), so matching and `tt` fragments see
//! rustc's tokens.

use proc_macro2::{Spacing, TokenTree};

/// One rustc token, as far as matching cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword, as written (`r#type` keeps its `r#`). `_` is an identifier
    /// for proc-macro2 and one here too; callers that care check for it.
    Ident(String),
    /// `'a` (two token trees).
    Lifetime(String),
    /// A punctuation token, glued: `=>`, `::`, `..=`, `#`, `$`.
    Punct(String),
    Literal(String),
    /// A delimited group (`Delimiter::None` ones are groups too: they hold a fragment that an
    /// outer expansion transcribed, which rustc treats as one opaque token).
    Group(proc_macro2::Delimiter),
}

/// How a literal compares: as written, except that a raw string and a plain string with the
/// same text compare equal (`r" SAFETY:"` and `" SAFETY:"`). A doc comment is matched by rustc
/// as `#[doc = r"..."]`, but it reaches us as a plain string (proc-macro2 makes doc comments
/// cooked literals), so zerocopy's `safety_comment!` matcher, `#[doc = r" SAFETY:"]`, would
/// never match its `/// SAFETY:` inputs otherwise.
fn literal_key(text: String) -> String {
    let b = text.as_bytes();
    if b.first() == Some(&b'r') && matches!(b.get(1), Some(b'"' | b'#')) {
        let inner = text[1..].trim_matches('#');
        if let Some(v) = inner.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            if !v.contains(['\\', '"']) {
                return format!("\"{v}\"");
            }
        }
    }
    text
}

/// rustc's `Token::glue`: the operator formed by `a` followed (joint) by `b`.
fn glue(a: &str, b: char) -> Option<&'static str> {
    Some(match (a, b) {
        ("=", '=') => "==",
        ("=", '>') => "=>",
        ("<", '=') => "<=",
        ("<", '<') => "<<",
        ("<<", '=') => "<<=",
        (">", '=') => ">=",
        (">", '>') => ">>",
        (">>", '=') => ">>=",
        ("!", '=') => "!=",
        ("+", '=') => "+=",
        ("-", '=') => "-=",
        ("*", '=') => "*=",
        ("/", '=') => "/=",
        ("%", '=') => "%=",
        ("^", '=') => "^=",
        ("&", '=') => "&=",
        ("|", '=') => "|=",
        ("&", '&') => "&&",
        ("|", '|') => "||",
        ("-", '>') => "->",
        (".", '.') => "..",
        ("..", '.') => "...",
        ("..", '=') => "..=",
        (":", ':') => "::",
        _ => return None,
    })
}

/// The token starting at `tts[i]` and how many token trees it spans.
pub(crate) fn next(tts: &[TokenTree], i: usize) -> Option<(Tok, usize)> {
    Some(match tts.get(i)? {
        TokenTree::Ident(id) => (Tok::Ident(id.to_string()), 1),
        TokenTree::Literal(l) => (Tok::Literal(literal_key(l.to_string())), 1),
        TokenTree::Group(g) => (Tok::Group(g.delimiter()), 1),
        TokenTree::Punct(p) => {
            if p.as_char() == '\''
                && p.spacing() == Spacing::Joint
                && let Some(TokenTree::Ident(id)) = tts.get(i + 1)
            {
                return Some((Tok::Lifetime(format!("'{id}")), 2));
            }
            let mut op = p.as_char().to_string();
            let mut spacing = p.spacing();
            let mut n = 1;
            while spacing == Spacing::Joint {
                let Some(TokenTree::Punct(q)) = tts.get(i + n) else { break };
                let Some(g) = glue(&op, q.as_char()) else { break };
                op = g.to_string();
                spacing = q.spacing();
                n += 1;
            }
            (Tok::Punct(op), n)
        }
    })
}

/// Bytes of text of one token that is not a group (as written; a group's delimiters are
/// counted by [`measure`]).
pub(crate) fn leaf_bytes(tt: &TokenTree) -> u64 {
    struct Count(u64);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len() as u64;
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = match tt {
        TokenTree::Ident(i) => std::fmt::write(&mut c, format_args!("{i}")),
        TokenTree::Literal(l) => std::fmt::write(&mut c, format_args!("{l}")),
        TokenTree::Punct(_) => return 1,
        TokenTree::Group(_) => return 2,
    };
    c.0
}

/// The size of a token stream: every token tree at every depth, and its text. `None` when it
/// has more than `max_tokens` (the walk stops there, so it costs at most that much).
pub(crate) fn measure(ts: &proc_macro2::TokenStream, max_tokens: u64) -> Option<super::Size> {
    let mut size = super::Size::default();
    let mut stack = vec![ts.clone().into_iter()];
    while let Some(top) = stack.last_mut() {
        let Some(tt) = top.next() else {
            stack.pop();
            continue;
        };
        size.tokens += 1;
        if size.tokens > max_tokens {
            return None;
        }
        size.bytes += leaf_bytes(&tt);
        if let TokenTree::Group(g) = tt {
            stack.push(g.stream().into_iter());
        }
    }
    Some(size)
}

/// [`measure`] of the token trees from `start` up to `end` (at `start`'s level; `None`: to the
/// end of that level), walked in the
/// parser's buffer, so that no token list is copied.
pub(crate) fn measure_between(start: syn::buffer::Cursor, end: Option<syn::buffer::Cursor>, max_tokens: u64) -> Option<super::Size> {
    let mut size = super::Size::default();
    // Cursors to go on from, outermost first; the first level stops at `end`.
    let mut stack: Vec<syn::buffer::Cursor> = Vec::new();
    let mut c = start;
    loop {
        let at_end = c.eof() || (stack.is_empty() && end.is_some_and(|e| c >= e));
        if at_end {
            match stack.pop() {
                Some(next) => {
                    c = next;
                    continue;
                }
                None => break,
            }
        }
        size.tokens += 1;
        if size.tokens > max_tokens {
            return None;
        }
        if let Some((inside, _, _, after)) = c.any_group() {
            size.bytes += 2;
            stack.push(after);
            c = inside;
            continue;
        }
        // A punctuation mark is a byte (and taking it copies nothing).
        if let Some((_, next)) = c.punct() {
            size.bytes += 1;
            c = next;
            continue;
        }
        let (tt, next) = c.token_tree()?;
        size.bytes += leaf_bytes(&tt);
        c = next;
    }
    Some(size)
}

/// Every token of `tts`, glued.
#[cfg(test)]
pub(crate) fn all(tts: &[TokenTree]) -> Vec<(Tok, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some((t, n)) = next(tts, i) {
        out.push((t, i..i + n));
        i += n;
    }
    out
}

/// Strict and reserved keywords of every edition (rustc's `is_reserved_ident` without the
/// edition split: an identifier that is a keyword in some edition is treated as one).
const RESERVED: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final",
    "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", "_",
];

pub(crate) fn reserved(s: &str) -> bool {
    RESERVED.contains(&s)
}

fn path_segment_keyword(s: &str) -> bool {
    matches!(s, "super" | "self" | "Self" | "crate")
}

/// rustc's `Token::can_begin_expr`.
pub(crate) fn can_begin_expr(t: &Tok) -> bool {
    match t {
        Tok::Ident(s) => {
            let s = s.strip_prefix("r#").map_or(s.as_str(), |_| "x");
            !reserved(s)
                || path_segment_keyword(s)
                || matches!(
                    s,
                    "async" | "do" | "box" | "break" | "const" | "continue" | "false" | "for" | "gen" | "if"
                        | "let" | "loop" | "match" | "move" | "return" | "true" | "try" | "unsafe" | "while"
                        | "yield" | "safe" | "static"
                )
        }
        Tok::Group(_) | Tok::Literal(_) | Tok::Lifetime(_) => true,
        Tok::Punct(p) => matches!(
            p.as_str(),
            "!" | "-" | "*" | "|" | "||" | "&" | "&&" | ".." | "..." | "..=" | "<" | "<<" | "::" | "#"
        ),
    }
}

/// rustc's `Token::can_begin_type`.
pub(crate) fn can_begin_type(t: &Tok) -> bool {
    match t {
        Tok::Ident(s) => {
            let s = s.strip_prefix("r#").map_or(s.as_str(), |_| "x");
            !reserved(s)
                || path_segment_keyword(s)
                || matches!(s, "_" | "for" | "impl" | "fn" | "unsafe" | "extern" | "typeof" | "dyn")
        }
        Tok::Group(d) => *d != proc_macro2::Delimiter::Brace,
        Tok::Lifetime(_) => true,
        Tok::Literal(_) => false,
        Tok::Punct(p) => matches!(p.as_str(), "!" | "*" | "&" | "&&" | "?" | "<" | "<<" | "::"),
    }
}

/// rustc's `Token::can_begin_pattern`; `or`: a top-level or-pattern may start with `|`.
pub(crate) fn can_begin_pattern(t: &Tok, or: bool) -> bool {
    match t {
        Tok::Ident(_) | Tok::Literal(_) => true,
        Tok::Group(d) => *d != proc_macro2::Delimiter::Brace,
        Tok::Lifetime(_) => false,
        Tok::Punct(p) => match p.as_str() {
            "&" | "-" | "&&" | ".." | "..." | "::" | "<" | "<<" => true,
            "|" => or,
            _ => false,
        },
    }
}

/// rustc's `can_begin_literal_maybe_minus`.
pub(crate) fn can_begin_literal(t: &Tok) -> bool {
    match t {
        Tok::Literal(_) => true,
        Tok::Punct(p) => p == "-",
        Tok::Ident(s) => s == "true" || s == "false",
        Tok::Group(d) => *d == proc_macro2::Delimiter::None,
        Tok::Lifetime(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;

    fn toks(s: &str) -> Vec<Tok> {
        let ts: TokenStream = s.parse().unwrap();
        let tts: Vec<TokenTree> = ts.into_iter().collect();
        all(&tts).into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn glues_like_rustc() {
        let p = |s: &str| Tok::Punct(s.to_string());
        assert_eq!(toks("=> :: ..= <<= -> a"), [p("=>"), p("::"), p("..="), p("<<="), p("->"), Tok::Ident("a".into())]);
        assert_eq!(toks("= > : :"), [p("="), p(">"), p(":"), p(":")]);
        // `=>&` is `=>` then `&`; `'a` is one token.
        assert_eq!(toks("=>& 'a"), [p("=>"), p("&"), Tok::Lifetime("'a".into())]);
        assert_eq!(toks("x..."), [Tok::Ident("x".into()), p("...")]);
    }
}
