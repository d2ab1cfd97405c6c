//! What source the analyzer may parse, and the threads it parses on.
//!
//! syn parses, the analyzer visits and Rust drops a syntax tree by recursion, so valid Rust
//! that is nested deeply enough (`((((…1))))`, `Option<Option<…>>`, `1 + 1 + … + 1`, a long
//! `else if` chain) overflows a thread's stack, and a stack overflow aborts the whole process:
//! one published file could stop every gate downstream. This module prevents that two ways:
//!
//! - [`parallel_map`] runs analysis on threads with a large stack ([`STACK_SIZE`]), sized so
//!   that everything rustc itself accepts is analyzed (see the figures at [`STACK_LIMIT`]).
//! - [`admit`], called before each file is parsed, estimates in one pass over the bytes (no
//!   parsing, no recursion) how much stack the deepest point of the file needs, and refuses a
//!   file whose estimate exceeds what the current thread can give. It also refuses a file
//!   larger than [`MAX_SOURCE_BYTES`]. A refused file becomes an `unanalyzed` finding for that
//!   file, at the place that was too deep, and the run goes on.
//!
//! The estimate is an upper bound by construction: every level of a syntax tree consumes a
//! delimiter, an operator, a keyword or a generic `<` from the text, and each of those is
//! counted with a weight at least as large as the stack the analyzer was measured to use for
//! one level of that shape (benchmark/hostile, debug build, whose frames are the largest). What
//! is counted is dropped again only where the syntax tree returns to a sibling: after `;`,
//! `=>`, a `,` outside generic arguments and closure parameters, and a new statement after a
//! `}`.
//!
//! It also bounds memory, per crate and for the whole run:
//!
//! - Per crate, deterministically: the source one crate's analysis parses
//!   ([`SOURCE_PER_CRATE`]; a file past it is refused like a file too large), and the output of
//!   its macro expansions (`analyze::macros`' limits).
//! - For the run: what the analyses in flight hold, as estimated (a syntax tree takes about
//!   [`SOURCE_MEMORY_FACTOR`] times the bytes of its source; held macro output is counted by
//!   the expander), is counted against one account shared by every worker of
//!   [`parallel_map`] ([`DEFAULT_ANALYSIS_MEMORY`], changed with [`set_analysis_memory`]). A
//!   worker whose crate needs more than is left waits until other crates are done, so N
//!   hostile crates analysed side by side cannot multiply the peak; a lone worker may go on
//!   past it (it is bounded by the per-crate limits), so the account never deadlocks. Waiting
//!   changes when a crate is analysed, never what is found.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::resources::budget::{Budget, Lease};
use crate::resources::meter::{Exhausted, Limit, Meter, Unit};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The stack of an analysis thread. Only what a file actually uses is ever touched.
pub const STACK_SIZE: usize = 256 * 1024 * 1024;

/// The most stack (as estimated) a file may need on a thread of [`STACK_SIZE`]: a quarter of
/// it, a margin for frames the estimate does not model. The deepest shapes rustc 1.95 accepts
/// with its default stack are estimated at: generics (4,100 levels) 56 MiB, nested macro
/// tokens (10,500) 52 MiB, `else if` chains (12,700) 37 MiB, nested attributes (4,700)
/// 23 MiB, method chains (5,300) 15 MiB, fn pointers (2,200) 15 MiB, patterns (2,400)
/// 12 MiB, references (2,900) 11 MiB, binary operators (5,300) 10 MiB, blocks (780) 8 MiB,
/// parentheses (1,200) 6 MiB.
pub const STACK_LIMIT: u64 = 64 * MIB;

/// The estimate limit on a thread that is not an analysis thread: none, since its stack size is
/// unknown. Only analysis threads ([`parallel_map`]) are protected against deep nesting, and
/// the engine runs every analysis on one.
const DEFAULT_LIMIT: u64 = u64::MAX;

/// Largest source file analyzed. A 10 MB file takes the analyzer about 1.5 GB; real source
/// files, generated ones included, are rarely above 2 MB.
pub const MAX_SOURCE_BYTES: usize = 4 * 1024 * 1024;

/// Source bytes one crate's analysis may parse, all its files together (a file parsed twice
/// counts twice). The most a crate of six large applications parses is 7.7 MB (aws-lc-sys 0.39 and 0.44,
/// whose bindings for every target are read while their cfgs are unknown).
pub const SOURCE_PER_CRATE: Limit = Limit::new("source parsed per crate", Unit::Bytes, 8 * MIB);

/// Memory a parsed source file takes per byte of source, as estimated for the run's account.
pub const SOURCE_MEMORY_FACTOR: u64 = 150;

/// What the analyses in flight may hold at once, as estimated, unless the command line says
/// otherwise: with the rest of a run on a large application (the package sources, the graph,
/// the results: about 600 MiB for nushell's 1,000 packages), and one crate over it at most by
/// its own limits, this fits a CI runner with 7 GiB of memory with room to spare.
pub const DEFAULT_ANALYSIS_MEMORY: u64 = 2048 * MIB;

static MEMORY: Budget = Budget::new(DEFAULT_ANALYSIS_MEMORY);

/// Sets what the analyses in flight may hold at once, as estimated (see the module
/// documentation); for the whole process.
pub fn set_analysis_memory(bytes: u64) {
    MEMORY.set_limit(bytes.max(1));
}

/// What the analyses in flight may hold at once, as estimated.
pub fn analysis_memory() -> u64 {
    MEMORY.limit()
}

/// The most the analyses in flight held at once, as estimated, since the process started.
pub fn analysis_memory_peak() -> u64 {
    MEMORY.peak()
}

thread_local! {
    /// The estimate limit of this thread.
    static LIMIT: Cell<u64> = const { Cell::new(DEFAULT_LIMIT) };
    /// What this analysis thread holds of the run's memory account, while it analyzes one item.
    static LEASE: RefCell<Option<Lease<'static>>> = const { RefCell::new(None) };
    /// The source the crate being analysed on this thread has parsed.
    static CRATE_SOURCE: RefCell<Meter> = const { RefCell::new(Meter::new(SOURCE_PER_CRATE)) };
}

/// A crate's analysis starts on this thread: its per-crate source account starts from zero.
pub fn begin_crate() {
    begin_crate_with(SOURCE_PER_CRATE);
}

/// [`begin_crate`] with another limit (tests).
pub fn begin_crate_with(limit: Limit) {
    CRATE_SOURCE.with(|m| *m.borrow_mut() = Meter::new(limit));
}

/// The source the current crate has parsed, for `VELARIS_DEBUG_BUDGETS`.
pub fn crate_source() -> u64 {
    CRATE_SOURCE.with(|m| m.borrow().used())
}

/// Counts `bytes` more (an estimate of memory the current analysis now holds) against the
/// run's account, waiting while it is spent. Nothing on a thread that is not an analysis
/// thread.
pub fn hold(bytes: u64) {
    LEASE.with(|l| {
        if let Some(lease) = l.borrow_mut().as_mut() {
            lease.grow(bytes);
        }
    });
}

/// Gives back `bytes` of what [`hold`] counted.
pub fn unhold(bytes: u64) {
    LEASE.with(|l| {
        if let Some(lease) = l.borrow_mut().as_mut() {
            lease.shrink(bytes);
        }
    });
}

// Weights: the stack, in bytes, one level of a shape may take, at least 1.2 times what a debug
// build was measured to use per level (benchmark/hostile `nesting`): parentheses 3.1 KiB,
// brackets 3.1, array types 2.3; blocks 5.1, modules 7.7, `if` 6.4, struct literals 5.1,
// `async` blocks 6.7; generics 7.4, turbofish 11.3, `Box<dyn Fn() -> …>` 12.8; references in
// types 3.1 (in expressions 0.7); `!`, `-`, `*` 1.4; binary operators, casts, fields, `?` 0.7;
// assignments 1.9; calls and indexing 0.8; closures 4.0; `fn() ->` 4.9, `impl Fn() ->` 5.4;
// `return` 2.5; method calls 0.1; `else if` 0.5.
/// Inside `(…)` or `[…]`.
const NEST_PAREN: u64 = 4 * KIB;
/// Inside `{…}` (blocks, modules, bodies, struct literals).
const NEST_BRACE: u64 = 10 * KIB;
/// A group in a chain (`f()()`, `a[0][0]`, `x.f()`).
const GROUP: u64 = KIB;
/// An operator, `.`, `?`, `as`, `else`, `!`, `-`.
const CHAIN: u64 = 2 * KIB;
/// `&` and `*` (references and pointers, in types too).
const REF: u64 = 4 * KIB;
/// `=` and compound assignments.
const ASSIGN: u64 = 5 * KIB / 2;
/// `return`, `break`, `yield`, `become`.
const JUMP: u64 = 7 * KIB / 2;
/// A closure (`|…|`, `||`, `move`).
const CLOSURE: u64 = 5 * KIB;
/// A function type's or closure's `->`.
const ARROW: u64 = 6 * KIB;
/// One open generic `<` (its token also counts as [`CHAIN`]).
const ANGLE: u64 = 12 * KIB;

/// Why a file is not analyzed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub kind: RefusalKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalKind {
    /// Nested more deeply than the analysis stack allows: the estimate in bytes, the limit.
    TooDeep { estimate: u64, limit: u64 },
    /// Larger than [`MAX_SOURCE_BYTES`].
    TooLarge { bytes: usize, limit: usize },
    /// The crate has parsed as much source as it may ([`SOURCE_PER_CRATE`]).
    Budget(Exhausted),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RefusalKind::TooDeep { estimate, limit } => write!(
                f,
                "nested too deeply to analyze safely (an estimated {} KiB of stack here; the limit is {} KiB)",
                estimate / KIB,
                limit / KIB
            ),
            RefusalKind::TooLarge { bytes, limit } => {
                write!(f, "source file of {bytes} bytes is larger than the {limit}-byte limit for one file")
            }
            RefusalKind::Budget(e) => write!(f, "source file not parsed: {e}"),
        }
    }
}

/// Whether the analyzer may parse `bytes` on this thread, counted against the crate's source
/// budget; on an analysis thread, the memory its syntax tree will take is also counted against
/// the run's account (waiting for it when it is spent) until the item being analyzed is done.
pub fn admit(bytes: &[u8]) -> Result<(), Refusal> {
    if bytes.len() > MAX_SOURCE_BYTES {
        return Err(Refusal { line: 1, column: 1, kind: RefusalKind::TooLarge { bytes: bytes.len(), limit: MAX_SOURCE_BYTES } });
    }
    check(bytes, LIMIT.with(Cell::get))?;
    CRATE_SOURCE
        .with(|m| m.borrow_mut().charge(bytes.len() as u64))
        .map_err(|e| Refusal { line: 1, column: 1, kind: RefusalKind::Budget(e) })?;
    hold((bytes.len() as u64).saturating_mul(SOURCE_MEMORY_FACTOR));
    Ok(())
}

/// The estimated stack of the deepest point of `bytes`, refused above `limit`.
pub fn check(bytes: &[u8], limit: u64) -> Result<(), Refusal> {
    let (estimate, at) = estimate(bytes);
    if estimate > limit {
        let (line, column) = position(bytes, at);
        return Err(Refusal { line, column, kind: RefusalKind::TooDeep { estimate, limit } });
    }
    Ok(())
}

/// 1-based line and character column of byte `at`.
fn position(bytes: &[u8], at: usize) -> (u32, u32) {
    let before = &bytes[..at.min(bytes.len())];
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    // Characters: bytes that do not continue a UTF-8 sequence.
    let column = before[line_start..].iter().filter(|&&b| b & 0xC0 != 0x80).count() + 1;
    (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX))
}

/// What the previous token at a level was, for telling a closure's `|` from an operator and a
/// new statement from the rest of an expression.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of the group, or an operator, `,`, `;`, `=>`, a prefix keyword: an operand is
    /// expected next.
    Start,
    /// An operand ended: an identifier, a literal, `)`, `]`, `?`.
    Operand,
    /// A `{…}` group ended.
    Brace,
}

struct Level {
    /// The estimate where this group opened, its own nesting included.
    base: u64,
    /// Weighted chain since the last point where the tree returned to a sibling.
    chain: u64,
    /// Open generic `<`.
    angle: u64,
    /// Between the `|`s of a closure's parameters.
    params: bool,
    prev: Prev,
}

impl Level {
    fn new(base: u64) -> Level {
        Level { base, chain: 0, angle: 0, params: false, prev: Prev::Start }
    }

    fn now(&self) -> u64 {
        self.base + self.chain + self.angle * ANGLE
    }

    fn reset(&mut self) {
        self.chain = 0;
        self.angle = 0;
        self.params = false;
    }
}

/// Keywords after which an operand (and so a closure) is expected.
fn prefix_keyword(w: &[u8]) -> bool {
    matches!(
        w,
        b"return" | b"break" | b"yield" | b"become" | b"move" | b"async" | b"static" | b"in" | b"else" | b"if"
            | b"match" | b"while" | b"let" | b"mut" | b"ref" | b"box" | b"unsafe" | b"const" | b"do" | b"for"
            | b"loop" | b"where" | b"dyn" | b"impl"
    )
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The estimated stack of the deepest point of `src`, and where that point is.
pub fn estimate(src: &[u8]) -> (u64, usize) {
    let mut stack: Vec<Level> = vec![Level::new(0)];
    let mut max = (0u64, 0usize);
    let mut i = 0;
    let n = src.len();
    // A shebang line is not Rust.
    if src.starts_with(b"#!") && !src.starts_with(b"#![") {
        i = src.iter().position(|&b| b == b'\n').unwrap_or(n);
    }
    while i < n {
        let b = src[i];
        let start = i;
        // Whitespace and comments.
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if b == b'/' && src.get(i + 1) == Some(&b'/') {
            i = src[i..].iter().position(|&c| c == b'\n').map_or(n, |p| i + p);
            continue;
        }
        if b == b'/' && src.get(i + 1) == Some(&b'*') {
            // Block comments nest.
            let mut depth = 0usize;
            while i < n {
                if src[i] == b'/' && src.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if src[i] == b'*' && src.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        let level = stack.last_mut().expect("the file level is never popped");

        // A token after a `{…}` that starts a new statement or item: the tree is back at a
        // sibling. (An expression only goes on after `}` with an operator, `.`, `?`, `as`,
        // `else` or a group.)
        if level.prev == Prev::Brace {
            let new_statement = if ident_start(b) {
                let end = src[i..].iter().position(|&c| !ident_continue(c)).map_or(n, |p| i + p);
                !matches!(&src[i..end], b"as" | b"else")
            } else {
                matches!(b, b'#' | b'\'' | b'"' | b'0'..=b'9')
            };
            if new_statement {
                level.reset();
            }
        }

        match b {
            b'(' | b'[' | b'{' => {
                level.chain += GROUP;
                let nest = if b == b'{' { NEST_BRACE } else { NEST_PAREN };
                let base = level.now() + nest;
                stack.push(Level::new(base));
                i += 1;
            }
            b')' | b']' | b'}' => {
                if stack.len() > 1 {
                    stack.pop();
                }
                let outer = stack.last_mut().expect("the file level is never popped");
                outer.prev = if b == b'}' { Prev::Brace } else { Prev::Operand };
                i += 1;
                continue;
            }
            b';' => {
                level.reset();
                level.prev = Prev::Start;
                i += 1;
            }
            b',' => {
                if level.angle == 0 && !level.params {
                    level.reset();
                }
                level.prev = Prev::Start;
                i += 1;
            }
            b'"' => {
                i = skip_string(src, i + 1);
                level.prev = Prev::Operand;
            }
            b'\'' => {
                i = skip_quote(src, i);
                level.prev = Prev::Operand;
            }
            b'0'..=b'9' => {
                // After a `.`, `0.1` is two tuple-field accesses, not a float.
                let after_dot = src[..start].iter().rev().find(|c| !c.is_ascii_whitespace()) == Some(&b'.');
                i += 1;
                while i < n {
                    let c = src[i];
                    // `1.5` and `1e-3` are one literal; `1..2` and `x.0.1` are not.
                    if ident_continue(c)
                        || (c == b'.' && src.get(i + 1).is_some_and(u8::is_ascii_digit) && src[i - 1] != b'.')
                        || ((c == b'-' || c == b'+') && matches!(src[i - 1], b'e' | b'E') && !src[start..i].starts_with(b"0x"))
                    {
                        i += 1;
                    } else {
                        break;
                    }
                }
                if after_dot {
                    level.chain += CHAIN * src[start..i].iter().filter(|&&c| c == b'.').count() as u64;
                }
                level.prev = Prev::Operand;
            }
            _ if ident_start(b) => {
                // Raw strings and byte/C strings and chars come before identifiers.
                if let Some(end) = prefixed_literal(src, i) {
                    i = end;
                    level.prev = Prev::Operand;
                    continue;
                }
                if b == b'r' && src.get(i + 1) == Some(&b'#') {
                    i += 2; // raw identifier
                }
                let end = src[i..].iter().position(|&c| !ident_continue(c)).map_or(n, |p| i + p);
                let word = &src[i..end];
                i = end;
                match word {
                    b"return" | b"break" | b"yield" | b"become" => level.chain += JUMP,
                    b"move" => level.chain += CLOSURE,
                    b"as" | b"else" | b"let" | b"box" | b"raw" => level.chain += CHAIN,
                    _ => {}
                }
                level.prev = if prefix_keyword(word) || word == b"as" { Prev::Start } else { Prev::Operand };
            }
            _ => {
                // Punctuation, longest match first.
                let rest = &src[i..];
                let (len, weight, angle, next): (usize, u64, i64, Prev) = if rest.starts_with(b"=>") {
                    // A match arm's body is a sibling of its pattern.
                    level.reset();
                    (2, 0, 0, Prev::Start)
                } else if rest.starts_with(b"->") {
                    (2, ARROW, 0, Prev::Start)
                } else if rest.starts_with(b"::") {
                    (2, 0, 0, Prev::Start)
                } else if rest.starts_with(b"<<=") || rest.starts_with(b">>=") {
                    (3, ASSIGN, 0, Prev::Start)
                } else if rest.starts_with(b"..=") || rest.starts_with(b"...") {
                    (3, CHAIN, 0, Prev::Start)
                } else if rest.starts_with(b"<<") {
                    // Two generic openings (`Vec<<T as Tr>::A>`) or a shift: counted both ways.
                    (2, CHAIN, 2, Prev::Start)
                } else if rest.starts_with(b">>") {
                    (2, CHAIN, -2, Prev::Start)
                } else if rest.starts_with(b"<=") || rest.starts_with(b">=") || rest.starts_with(b"==") || rest.starts_with(b"!=") {
                    (2, CHAIN, 0, Prev::Start)
                } else if rest.starts_with(b"&&") {
                    // `&&x` is two references.
                    (2, 2 * REF, 0, Prev::Start)
                } else if rest.starts_with(b"||") {
                    let w = if level.prev == Prev::Operand { CHAIN } else { CLOSURE };
                    (2, w, 0, Prev::Start)
                } else if rest.len() >= 2 && rest[1] == b'=' && b"+-*/%^&|".contains(&rest[0]) {
                    (2, ASSIGN, 0, Prev::Start)
                } else if rest.starts_with(b"..") {
                    (2, CHAIN, 0, Prev::Start)
                } else {
                    match b {
                        b'<' => (1, CHAIN, 1, Prev::Start),
                        b'>' => (1, CHAIN, -1, Prev::Start),
                        b'|' => {
                            if level.params {
                                level.params = false;
                                (1, 0, 0, Prev::Start)
                            } else if level.prev == Prev::Operand {
                                (1, CHAIN, 0, Prev::Start)
                            } else {
                                level.params = true;
                                (1, CLOSURE, 0, Prev::Start)
                            }
                        }
                        b'?' => (1, CHAIN, 0, Prev::Operand),
                        b'&' | b'*' => (1, REF, 0, Prev::Start),
                        b'=' => (1, ASSIGN, 0, Prev::Start),
                        b'.' | b'!' | b'-' | b'+' | b'/' | b'%' | b'^' | b'@' => (1, CHAIN, 0, Prev::Start),
                        // `#`, `$`, `~`, `:` and anything else: no nesting of their own.
                        _ => (1, 0, 0, Prev::Start),
                    }
                };
                let level = stack.last_mut().expect("the file level is never popped");
                level.chain += weight;
                level.angle = level.angle.saturating_add_signed(angle);
                level.prev = next;
                i += len;
            }
        }
        let now = stack.last().expect("the file level is never popped").now();
        if now > max.0 {
            max = (now, start);
        }
    }
    max
}

/// After the opening `"`: the index after the closing one.
fn skip_string(src: &[u8], mut i: usize) -> usize {
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    src.len()
}

/// At a `'`: a char literal (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`) or a lifetime / label
/// (`'a`, `'static`); the index after it.
fn skip_quote(src: &[u8], i: usize) -> usize {
    let n = src.len();
    match src.get(i + 1) {
        Some(b'\\') => {
            // An escape: up to the closing quote.
            let mut j = i + 3;
            while j < n && src[j] != b'\'' && src[j] != b'\n' {
                j += 1;
            }
            (j + 1).min(n)
        }
        Some(&c) => {
            // One character, then `'` for a char literal.
            let len = match c {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            if src.get(i + 1 + len) == Some(&b'\'') {
                i + 2 + len
            } else {
                // A lifetime: the identifier after the quote.
                let mut j = i + 1;
                while j < n && ident_continue(src[j]) {
                    j += 1;
                }
                j.max(i + 1)
            }
        }
        None => n,
    }
}

/// A literal with a letter prefix at `i` (`b"…"`, `br#"…"#`, `r"…"`, `r#"…"#`, `c"…"`,
/// `cr"…"`, `b'x'`): the index after it. `None` for anything else (a raw identifier `r#x`
/// included).
fn prefixed_literal(src: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    // At most two prefix letters: b, c, r, br, cr.
    if matches!(src.get(j), Some(b'b' | b'c')) {
        j += 1;
    }
    let raw = src.get(j) == Some(&b'r');
    if raw {
        j += 1;
    }
    if j == i {
        return None;
    }
    if !raw {
        return match src.get(j) {
            Some(b'"') => Some(skip_string(src, j + 1)),
            Some(b'\'') if j == i + 1 && src[i] == b'b' => Some(skip_quote(src, j)),
            _ => None,
        };
    }
    let hashes = src[j..].iter().take_while(|&&c| c == b'#').count();
    if src.get(j + hashes) != Some(&b'"') {
        return None;
    }
    let mut k = j + hashes + 1;
    while k < src.len() {
        if src[k] == b'"' && src[k + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes
            && src.len() >= k + 1 + hashes
        {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(src.len())
}

/// Map `f` over `items` on up to `jobs` analysis threads ([`STACK_SIZE`] each), keeping the
/// order. Each item's parsed source is counted against the shared memory budget until `f`
/// returns. When a thread of that size cannot be created, smaller ones are tried, and
/// [`admit`] refuses on each thread what its stack cannot take.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    parallel_map_with_stack(items, jobs, STACK_SIZE, f)
}

/// [`parallel_map`] on threads of `stack` bytes, where [`admit`] allows an estimate of a
/// quarter of that (at most [`STACK_LIMIT`]).
pub fn parallel_map_with_stack<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    stack: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    parallel_map_with_limit(items, jobs, stack, None, f)
}

/// [`parallel_map`] on threads of `stack` bytes where [`admit`] allows an estimate of `limit`
/// (`None`: a quarter of the stack of the thread that could be created). For measurements and
/// tests of the estimate; production uses [`parallel_map`].
pub fn parallel_map_with_limit<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    stack: usize,
    limit: Option<u64>,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    parallel_map_in(&MEMORY, items, jobs, stack, limit, f)
}

/// [`parallel_map_with_limit`] with `memory` as the account of what the analyses in flight
/// hold (tests give a small one of their own).
pub fn parallel_map_in<T: Sync, R: Send>(
    memory: &'static Budget,
    items: &[T],
    jobs: usize,
    stack: usize,
    limit: Option<u64>,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let workers = jobs.min(items.len()).max(1);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= items.len() {
                break out;
            }
            LEASE.with(|l| *l.borrow_mut() = Some(memory.lease()));
            out.push((i, f(&items[i])));
            LEASE.with(|l| *l.borrow_mut() = None);
        }
    };
    let done: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let requested = stack;
        for _ in 0..workers {
            let mut stack = stack;
            let handle = loop {
                // A quarter of the stack; a given limit only on a stack of the size asked for.
                let limit = match limit {
                    Some(l) if stack == requested => l,
                    _ => (stack as u64 / 4).min(STACK_LIMIT),
                };
                let spawned = std::thread::Builder::new()
                    .name("velaris-analysis".into())
                    .stack_size(stack)
                    .spawn_scoped(scope, move || {
                        LIMIT.with(|l| l.set(limit));
                        work()
                    });
                match spawned {
                    Ok(h) => break Some(h),
                    Err(_) if stack >= 16 * 1024 * 1024 => stack /= 2,
                    Err(_) => break None,
                }
            };
            match handle {
                Some(h) => handles.push(h),
                None => break,
            }
        }
        if handles.is_empty() {
            // Not even a small thread: work here, with the limit of the smallest one tried.
            let limit = LIMIT.with(|l| l.replace(2 * MIB));
            let out = vec![work()];
            LIMIT.with(|l| l.set(limit));
            return out;
        }
        handles.into_iter().map(|h| h.join().expect("analysis worker panicked")).collect()
    });
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (i, r) in done.into_iter().flatten() {
        slots[i] = Some(r);
    }
    slots.into_iter().map(|r| r.expect("every item mapped")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(s: &str) -> u64 {
        estimate(s.as_bytes()).0
    }

    #[test]
    fn nesting_adds_up_and_siblings_do_not() {
        let one = est("fn f() { (1) }");
        let two = est("fn f() { ((1)) }");
        assert!(two > one, "{one} {two}");
        // Siblings after `;` or `,` cost no more than one of them.
        assert_eq!(est("fn f() { a(b(1)); a(b(1)); a(b(1)); }"), est("fn f() { a(b(1)); }"));
        assert_eq!(est("static T: [i32; 3] = [-1, -2, -3];"), est("static T: [i32; 1] = [-1];"));
        // Items one after the other.
        assert_eq!(est("fn a() { x.y() } fn b() { x.y() } fn c() { x.y() }"), est("fn a() { x.y() }"));
        assert_eq!(est("fn f() { if a { b } if a { b } if a { b } }"), est("fn f() { if a { b } }"));
    }

    #[test]
    fn chains_without_delimiters_count() {
        let short = est("fn f() -> i32 { 1 + 1 }");
        let long = est(&format!("fn f() -> i32 {{ 1{} }}", " + 1".repeat(100)));
        assert!(long >= short + 99 * CHAIN, "{short} {long}");
        assert!(est(&format!("fn f() {{ x{} }}", ".f()".repeat(100))) >= 100 * (CHAIN + GROUP));
        assert!(est(&format!("type T = {}i32{};", "Option<".repeat(100), ">".repeat(100))) >= 100 * ANGLE);
        assert!(est(&format!("fn f() {{ if x {{}} {}else {{}} }}", "else if x {} ".repeat(100))) >= 100 * CHAIN);
    }

    #[test]
    fn commas_inside_generics_and_closure_parameters_do_not_reset() {
        let generic = format!("type T = {}i32{};", "HashMap<K, ".repeat(50), ">".repeat(50));
        assert!(est(&generic) >= 50 * ANGLE, "{}", est(&generic));
        let closures = format!("fn f() {{ let g = {}0; }}", "|a, b| ".repeat(50));
        assert!(est(&closures) >= 50 * CLOSURE, "{}", est(&closures));
        // A binary `|` between operands is not a closure.
        let ors = format!("fn f() {{ [{}] }}", "a | b, ".repeat(50));
        assert!(est(&ors) < 4 * CLOSURE + NEST_BRACE + 2 * NEST_PAREN, "{}", est(&ors));
    }

    #[test]
    fn literals_and_comments_hide_their_delimiters() {
        let base = est("fn f() { let s = 1; }");
        for lit in [
            r#""((((((((""#,
            r###"r#"(((("((((("#"###,
            r#"b"[[[[[[""#,
            r###"br##"{{{{"#{{{{"##"###,
            "'('",
            "b'['",
            r"'\u{28}'",
            "'\\''",
        ] {
            assert_eq!(est(&format!("fn f() {{ let s = {lit}; }}")), base, "{lit}");
        }
        assert_eq!(est("fn f() { /* (((( /* nested (( */ (((( */ let s = 1; }"), base);
        assert_eq!(est("fn f() { // ((((((\n let s = 1; }"), base);
        // Lifetimes are not char literals.
        assert!(est("fn f<'a>(x: &'a str) -> &'a str { (((x))) }") > est("fn f<'a>(x: &'a str) -> &'a str { x }"));
    }

    #[test]
    fn refusal_names_the_place() {
        let deep = format!("fn f() {{\n    let x = {}1{};\n}}\n", "(".repeat(400), ")".repeat(400));
        let r = check(deep.as_bytes(), 256 * KIB).unwrap_err();
        assert_eq!(r.line, 2);
        // At the deepest point: the innermost parenthesis.
        assert_eq!(r.column, 12 + 400, "{r:?}");
        assert!(r.to_string().starts_with("nested too deeply to analyze safely"), "{r}");
        assert!(check(deep.as_bytes(), STACK_LIMIT).is_ok());
    }

    #[test]
    fn huge_files_are_refused_by_size() {
        let big = vec![b' '; MAX_SOURCE_BYTES + 1];
        let r = admit(&big).unwrap_err();
        assert!(matches!(r.kind, RefusalKind::TooLarge { .. }), "{r:?}");
        assert!(admit(b"fn main() {}").is_ok());
    }

    #[test]
    fn crates_side_by_side_share_one_memory_account() {
        // Eight crates, each holding 100 units in steps of 10, on four threads, with an
        // account of 150: without it 400 units would be held at once.
        let memory: &'static Budget = Box::leak(Box::new(Budget::new(150)));
        let most = std::sync::atomic::AtomicU64::new(0);
        let items: Vec<u64> = (0..8).collect();
        let out = parallel_map_in(memory, &items, 4, 16 * 1024 * 1024, None, |&i| {
            for _ in 0..10 {
                hold(10);
                most.fetch_max(memory.in_use(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // What a crate gives back early is no longer counted.
            unhold(50);
            i * 2
        });
        // What each crate found does not depend on the account.
        assert_eq!(out, (0..8).map(|i| i * 2).collect::<Vec<u64>>());
        assert_eq!(memory.in_use(), 0);
        // Counted (one crate alone holds 100), and at most one crate over the account, by
        // what it holds itself.
        assert!((100..=150 + 100).contains(&memory.peak()), "peak {}", memory.peak());
        assert!(most.load(Ordering::Relaxed) <= 250);
    }

    #[test]
    fn a_crate_parses_at_most_its_source_budget() {
        begin_crate_with(SOURCE_PER_CRATE.with_max(25));
        assert!(admit(b"fn a() {}").is_ok());
        assert!(admit(b"fn b() {}").is_ok());
        let r = admit(b"fn c() { 1 }").unwrap_err();
        assert!(matches!(r.kind, RefusalKind::Budget(_)), "{r:?}");
        assert_eq!(r.to_string(), "source file not parsed: the source parsed per crate budget (25 bytes) is exhausted");
        // The next crate starts from zero.
        begin_crate();
        assert!(admit(b"fn c() { 1 }").is_ok());
        assert_eq!(crate_source(), 12);
    }

    #[test]
    fn analysis_threads_have_the_large_stack_and_keep_order() {
        let out = parallel_map(&[1, 2, 3, 4, 5], 3, |&x| (x * 10, LIMIT.with(Cell::get)));
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), [10, 20, 30, 40, 50]);
        assert!(out.iter().all(|p| p.1 == STACK_LIMIT), "{out:?}");
        assert_eq!(MEMORY.in_use(), 0);
    }
}
