//! The values the evaluator computes with: known values, strings with unknown parts, and
//! unknown values that remember where they came from.
//!
//! Values have Rust's value semantics: composite values are shared behind `Rc` and copied on
//! write (`Rc::make_mut`), so a move shares and a mutation never shows through another name.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// What an unknown part of a string may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Anything, newlines included (an environment variable's value).
    Any,
    /// An integer: ASCII digits and a sign.
    Int,
    /// A commit hash: lowercase hexadecimal digits.
    Hex,
    /// A date: digits and `-`.
    Date,
    /// A version: digits and `.`.
    Version,
    /// `true` or `false`.
    Bool,
}

impl Class {
    pub fn may_contain(self, c: char) -> bool {
        match self {
            Class::Any => true,
            Class::Int => c.is_ascii_digit() || c == '-',
            Class::Hex => c.is_ascii_digit() || ('a'..='f').contains(&c),
            Class::Date => c.is_ascii_digit() || c == '-',
            Class::Version => c.is_ascii_digit() || c == '.',
            Class::Bool => "truefals".contains(c),
        }
    }

    /// Whether the part may be empty.
    fn may_be_empty(self) -> bool {
        matches!(self, Class::Any)
    }
}

/// A part of a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Lit(String),
    Hole(Class),
}

/// A string some of whose parts are unknown. Never fully literal (that is [`V::Str`]).
pub type Sym = Vec<Seg>;

/// Where an unknown value comes from, and what it can be.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unknown {
    /// `env FOO`, `the compile probe at build.rs:12`, `the output of emcc at build.rs:40`.
    pub origin: Rc<str>,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Bool,
    Int,
    /// A string (any content).
    Str,
    /// Anything.
    Any,
    /// The rest of an iterator: an unknown number of unknown items (always last).
    Rest,
}

/// The chars a hole of `class` may hold, when they are few.
pub fn class_chars(class: Class) -> Option<&'static str> {
    match class {
        Class::Any => None,
        Class::Int => Some("0123456789-"),
        Class::Hex => Some("0123456789abcdef"),
        Class::Date => Some("0123456789-"),
        Class::Version => Some("0123456789."),
        Class::Bool => Some("truefals"),
    }
}

/// Split at chars for which `is_sep` holds, as far as that is known: the pieces before the
/// first hole that may hold a separator, and whether an unknown rest follows.
pub fn sym_split_prefix(segs: &[Seg], is_sep: &dyn Fn(char) -> bool) -> (Vec<Sym>, bool) {
    let mut out: Vec<Sym> = vec![Vec::new()];
    for s in segs {
        match s {
            Seg::Lit(l) => {
                let mut cur = String::new();
                for ch in l.chars() {
                    if is_sep(ch) {
                        out.last_mut().unwrap().push(Seg::Lit(std::mem::take(&mut cur)));
                        out.push(Vec::new());
                    } else {
                        cur.push(ch);
                    }
                }
                out.last_mut().unwrap().push(Seg::Lit(cur));
            }
            Seg::Hole(c) => {
                let clean = class_chars(*c).is_some_and(|cs| cs.chars().all(|ch| !is_sep(ch)));
                if !clean {
                    // The piece being built and everything after it are not known.
                    out.pop();
                    return (out.into_iter().map(normalize).collect(), true);
                }
                out.last_mut().unwrap().push(s.clone());
            }
        }
    }
    (out.into_iter().map(normalize).collect(), false)
}

/// The unknown rest of an iterator.
pub fn rest_marker() -> V {
    V::unknown("an unknown number of items", Kind::Rest)
}

pub fn is_rest(v: &V) -> bool {
    matches!(v, V::Unknown(u) if u.kind == Kind::Rest)
}

/// A reference to a place that can be written through (`&mut x`).
#[derive(Debug, Clone)]
pub enum Place {
    Var(Rc<std::cell::RefCell<V>>),
    Field(Rc<Place>, Rc<str>),
    Index(Rc<Place>, usize),
    /// A map's value under a key.
    MapKey(Rc<Place>, Key),
}

/// A closure: its parameters and body, and the scope it captured.
pub struct Closure {
    /// The closure expression as written (kept alive by the script's caches).
    pub code: Rc<syn::ExprClosure>,
    pub scope: Rc<super::interp::Scope>,
    /// Index of the build script file the closure is written in.
    pub file: usize,
    pub module: usize,
}

impl std::fmt::Debug for Closure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closure")
    }
}

/// A user-defined struct or enum value.
#[derive(Debug, Clone, PartialEq)]
pub struct Adt {
    /// The type's name (last path segment).
    pub ty: Rc<str>,
    /// The variant, for an enum.
    pub variant: Option<Rc<str>>,
    /// Named fields, or `0`, `1`, ... for tuple-like ones.
    pub fields: Vec<(Rc<str>, V)>,
    /// Whether the fields are positional.
    pub tuple: bool,
}

/// Values of the standard library and of modelled dependencies that are not plain data.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    /// An open file: index into the path's open-file table.
    File(usize),
    /// The process's standard output or error.
    Stdout,
    Stderr,
    /// `std::process::Command` being built.
    Command(Box<Cmd>),
    /// `std::process::Output`.
    Output { success: V, stdout: V, stderr: V },
    /// `std::process::ExitStatus`.
    Status(V),
    /// A spawned child whose stdin is written to: the command and what it was given.
    Child(Box<Cmd>),
    /// `std::io::Error` of a kind (`NotFound`, `AlreadyExists`, `Other`).
    IoError(Rc<str>),
    /// `std::env::VarError`: `NotPresent` or `NotUnicode`.
    VarError(Rc<str>),
    /// Any other error value whose details do not matter (a parse error).
    Error(Rc<str>),
    /// `std::fmt::Formatter` writing into a buffer, with the alternate flag.
    Formatter(Rc<std::cell::RefCell<Sym>>, bool),
    /// A `debug_struct` (kind 0), `debug_tuple` (1), `debug_list` (2) or `debug_set` (3)
    /// builder: the formatter's buffer, its alternate flag, the name, the fields so far.
    DebugBuilder { out: Rc<std::cell::RefCell<Sym>>, alt: bool, kind: u8, name: Rc<str>, fields: Vec<(Option<Rc<str>>, Sym)> },
    /// `autocfg::AutoCfg`.
    AutoCfg,
    /// A compiler version (`version_check::Version`, `rustc_version::Version`,
    /// `semver::Version`): major, minor, patch (each possibly unknown).
    Version(V, V, V),
    /// A release channel: `stable`, `beta`, `nightly`, `dev`, or unknown.
    Channel(V),
    /// `rustc_version::VersionMeta`.
    VersionMeta,
    /// A directory entry (`fs::read_dir`): its path.
    DirEntry(Rc<str>),
    /// A file open for reading (`File::open`, `BufReader`): its content.
    Reader(V),
    /// A child's standard input: what is written to it is not kept.
    ChildStdin,
    /// `std::fs::OpenOptions` being built: append, truncate.
    OpenOptions(bool, bool),
    /// `std::thread::Builder`.
    ThreadBuilder,
    /// A finished thread (`JoinHandle`): what its closure returned.
    Join(V),
}

/// A command being built.
#[derive(Debug, Clone, PartialEq)]
pub struct Cmd {
    pub program: V,
    pub args: Vec<V>,
    /// Environment changes: `Some(v)` set, `None` removed.
    pub env: Vec<(V, Option<V>)>,
    pub stdin: Vec<u8>,
    /// Where the call was made (for reasons).
    pub at: Rc<str>,
}

/// A value.
#[derive(Debug, Clone)]
pub enum V {
    Unit,
    Bool(bool),
    Int(i128),
    Float(f64),
    Char(char),
    /// A known string (`&str`, `String`, `OsString`, `Path`, `PathBuf` alike).
    Str(Rc<String>),
    /// A string with unknown parts.
    Sym(Rc<Sym>),
    /// Bytes (`&[u8]`, `Vec<u8>`).
    Bytes(Rc<Vec<u8>>),
    /// Arrays, slices, `Vec`, `VecDeque`.
    Vec(Rc<Vec<V>>),
    Tuple(Rc<Vec<V>>),
    /// `BTreeMap`, `BTreeSet` (value `Unit`); keys compared by their display.
    Map(Rc<BTreeMap<Key, (V, V)>>, bool),
    Option(Option<Rc<V>>),
    Result(Result<Rc<V>, Rc<V>>),
    Range(Option<i128>, Option<i128>, bool),
    Adt(Rc<Adt>),
    Obj(Rc<Obj>),
    /// A function item: (module, name) or a path into std or a dependency.
    Fn(Rc<FnRef>),
    Closure(Rc<Closure>),
    /// An iterator: the items left (always finite; built eagerly).
    Iter(Rc<std::cell::RefCell<std::collections::VecDeque<V>>>),
    Ref(Rc<Place>),
    Unknown(Rc<Unknown>),
}

/// A map key: the value's canonical text, which orders as Rust orders strings and integers
/// of one type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Int(i128),
    Str(String),
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FnRef {
    /// A function declared inside a function body: its index.
    Local(usize),
    /// A function of the build script: its path (module index and name), or a method
    /// (`Type::name`).
    User { module: usize, name: Rc<str> },
    /// A path outside the script: `std::fs::write`, `autocfg::new`.
    Path(Rc<str>),
}

impl PartialEq for V {
    fn eq(&self, other: &V) -> bool {
        matches!(value_eq(self, other), Some(true))
    }
}

impl V {
    pub fn str(s: &str) -> V {
        V::Str(Rc::new(s.to_string()))
    }

    pub fn string(s: String) -> V {
        V::Str(Rc::new(s))
    }

    pub fn some(v: V) -> V {
        V::Option(Some(Rc::new(v)))
    }

    pub fn ok(v: V) -> V {
        V::Result(Ok(Rc::new(v)))
    }

    pub fn err(v: V) -> V {
        V::Result(Err(Rc::new(v)))
    }

    pub fn unknown(origin: &str, kind: Kind) -> V {
        V::Unknown(Rc::new(Unknown { origin: Rc::from(origin), kind }))
    }

    pub fn obj(o: Obj) -> V {
        V::Obj(Rc::new(o))
    }

    pub fn vec(items: Vec<V>) -> V {
        V::Vec(Rc::new(items))
    }

    pub fn iter(items: impl IntoIterator<Item = V>) -> V {
        V::Iter(Rc::new(std::cell::RefCell::new(items.into_iter().collect())))
    }

    /// A string from parts, literal when every part is.
    pub fn from_segs(segs: Sym) -> V {
        let segs = normalize(segs);
        match segs.as_slice() {
            [] => V::str(""),
            [Seg::Lit(s)] => V::str(s),
            _ => V::Sym(Rc::new(segs)),
        }
    }

    /// Whether the value is a string, known or not.
    pub fn is_stringy(&self) -> bool {
        matches!(self, V::Str(_) | V::Sym(_)) || matches!(self, V::Unknown(u) if u.kind == Kind::Str)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            V::Unit => "()",
            V::Bool(_) => "a bool",
            V::Int(_) => "an integer",
            V::Float(_) => "a float",
            V::Char(_) => "a char",
            V::Str(_) | V::Sym(_) => "a string",
            V::Bytes(_) => "bytes",
            V::Vec(_) => "a Vec",
            V::Tuple(_) => "a tuple",
            V::Map(..) => "a map",
            V::Option(_) => "an Option",
            V::Result(_) => "a Result",
            V::Range(..) => "a range",
            V::Adt(_) => "a struct",
            V::Obj(_) => "a library value",
            V::Fn(_) => "a function",
            V::Closure(_) => "a closure",
            V::Iter(_) => "an iterator",
            V::Ref(_) => "a reference",
            V::Unknown(_) => "an unknown value",
        }
    }
}

/// Merge adjacent literals, drop empty ones.
pub fn normalize(segs: Sym) -> Sym {
    let mut out: Sym = Vec::with_capacity(segs.len());
    for s in segs {
        match s {
            Seg::Lit(l) if l.is_empty() => {}
            Seg::Lit(l) => match out.last_mut() {
                Some(Seg::Lit(prev)) => prev.push_str(&l),
                _ => out.push(Seg::Lit(l)),
            },
            h => out.push(h),
        }
    }
    out
}

/// The parts of a string value (`None` for a non-string).
pub fn segs_of(v: &V) -> Option<Sym> {
    match v {
        V::Str(s) => Some(vec![Seg::Lit(s.to_string())]),
        V::Sym(s) => Some((**s).clone()),
        V::Unknown(u) if matches!(u.kind, Kind::Str | Kind::Any) => Some(vec![Seg::Hole(Class::Any)]),
        V::Unknown(u) if u.kind == Kind::Int => Some(vec![Seg::Hole(Class::Int)]),
        V::Unknown(u) if u.kind == Kind::Bool => Some(vec![Seg::Hole(Class::Bool)]),
        _ => None,
    }
}

/// Whether `segs` can spell exactly `text`: `Some(true)` when it surely does, `Some(false)`
/// when it cannot, `None` when that depends on the unknown parts.
pub fn sym_eq(segs: &[Seg], text: &str) -> Option<bool> {
    if segs.iter().all(|s| matches!(s, Seg::Lit(_))) {
        let whole: String = segs.iter().map(|s| if let Seg::Lit(l) = s { l.as_str() } else { "" }).collect();
        return Some(whole == text);
    }
    if can_match(segs, text, false) { None } else { Some(false) }
}

/// Whether `segs` may spell `text` (`prefix`: followed by anything).
pub fn can_match(segs: &[Seg], text: &str, prefix: bool) -> bool {
    let chars: Vec<char> = text.chars().collect();
    // memo over (segment index, offset in segment literal, char index)
    fn go(segs: &[Seg], si: usize, chars: &[char], ci: usize, prefix: bool, memo: &mut std::collections::HashSet<(usize, usize)>) -> bool {
        if prefix && ci == chars.len() {
            return true;
        }
        if si == segs.len() {
            return ci == chars.len();
        }
        if !memo.insert((si, ci)) {
            return false;
        }
        match &segs[si] {
            Seg::Lit(l) => {
                let mut k = ci;
                for c in l.chars() {
                    if k == chars.len() {
                        return prefix;
                    }
                    if chars[k] != c {
                        return false;
                    }
                    k += 1;
                }
                go(segs, si + 1, chars, k, prefix, memo)
            }
            Seg::Hole(class) => {
                let start = if class.may_be_empty() { ci } else { ci + 1 };
                if !class.may_be_empty() && (ci >= chars.len() || !class.may_contain(chars[ci])) {
                    return prefix && ci >= chars.len();
                }
                let mut end = start;
                loop {
                    if end > chars.len() {
                        return false;
                    }
                    if go(segs, si + 1, chars, end, prefix, memo) {
                        return true;
                    }
                    if end < chars.len() && class.may_contain(chars[end]) {
                        end += 1;
                    } else {
                        return false;
                    }
                }
            }
        }
    }
    go(segs, 0, &chars, 0, prefix, &mut std::collections::HashSet::new())
}

/// The known literal prefix of a string.
pub fn known_prefix(segs: &[Seg]) -> &str {
    match segs.first() {
        Some(Seg::Lit(l)) => l,
        _ => "",
    }
}

/// `segs.starts_with(p)`.
pub fn sym_starts_with(segs: &[Seg], p: &str) -> Option<bool> {
    if known_prefix(segs).starts_with(p) {
        return Some(true);
    }
    if segs.iter().all(|s| matches!(s, Seg::Lit(_))) {
        return Some(false);
    }
    if can_match(segs, p, true) { None } else { Some(false) }
}

/// `segs.ends_with(p)`.
pub fn sym_ends_with(segs: &[Seg], p: &str) -> Option<bool> {
    let rev: Sym = segs.iter().rev().map(|s| match s {
        Seg::Lit(l) => Seg::Lit(l.chars().rev().collect()),
        h => h.clone(),
    }).collect();
    let rp: String = p.chars().rev().collect();
    sym_starts_with(&rev, &rp)
}

/// `segs.contains(p)`.
pub fn sym_contains(segs: &[Seg], p: &str) -> Option<bool> {
    if segs.iter().any(|s| matches!(s, Seg::Lit(l) if l.contains(p))) {
        return Some(true);
    }
    if segs.iter().all(|s| matches!(s, Seg::Lit(_))) {
        let whole: String = segs.iter().map(|s| if let Seg::Lit(l) = s { l.as_str() } else { "" }).collect();
        return Some(whole.contains(p));
    }
    // Could `p` start anywhere: at a char of a literal, or inside a hole (which may then hold
    // fewer chars than it does)?
    for i in 0..segs.len() {
        match &segs[i] {
            Seg::Lit(l) => {
                for (off, _) in l.char_indices() {
                    let mut rest: Sym = vec![Seg::Lit(l[off..].to_string())];
                    rest.extend(segs[i + 1..].iter().cloned());
                    if can_match(&rest, p, true) {
                        return None;
                    }
                }
            }
            Seg::Hole(c) => {
                let mut rest: Sym = vec![Seg::Hole(Class::Any)];
                rest.extend(segs[i + 1..].iter().cloned());
                // Starting inside the hole: its first chars come from its class.
                let n = p.chars().take_while(|ch| c.may_contain(*ch)).count();
                for k in 0..=n {
                    let tail: String = p.chars().skip(k).collect();
                    if can_match(&segs[i + 1..], &tail, true) || (k == n && k == p.chars().count()) {
                        return None;
                    }
                }
                let _ = rest;
            }
        }
    }
    Some(false)
}

/// Split on a separator string of several chars: only literal strings.
pub fn split_str(s: &str, sep: &str) -> Vec<String> {
    s.split(sep).map(str::to_string).collect()
}

/// Trim whitespace at both ends: `None` when an end is a hole that may hold whitespace.
pub fn sym_trim(segs: &[Seg], start: bool, end: bool) -> Option<Sym> {
    let mut v: Sym = segs.to_vec();
    if start {
        loop {
            match v.first_mut() {
                Some(Seg::Lit(l)) => {
                    let t = l.trim_start().to_string();
                    if t.is_empty() {
                        v.remove(0);
                        continue;
                    }
                    *l = t;
                    break;
                }
                Some(Seg::Hole(c)) if c.may_contain(' ') || c.may_contain('\n') => return None,
                _ => break,
            }
        }
    }
    if end {
        loop {
            match v.last_mut() {
                Some(Seg::Lit(l)) => {
                    let t = l.trim_end().to_string();
                    if t.is_empty() {
                        v.pop();
                        continue;
                    }
                    *l = t;
                    break;
                }
                Some(Seg::Hole(c)) if c.may_contain(' ') || c.may_contain('\n') => return None,
                _ => break,
            }
        }
    }
    Some(normalize(v))
}

/// Whether two values are equal: `None` when that depends on unknown parts.
pub fn value_eq(a: &V, b: &V) -> Option<bool> {
    match (a, b) {
        (V::Ref(p), _) => value_eq(&deref_place(p), b),
        (_, V::Ref(p)) => value_eq(a, &deref_place(p)),
        (V::Unknown(_), _) | (_, V::Unknown(_)) => None,
        (V::Unit, V::Unit) => Some(true),
        (V::Bool(x), V::Bool(y)) => Some(x == y),
        (V::Int(x), V::Int(y)) => Some(x == y),
        (V::Float(x), V::Float(y)) => Some(x == y),
        (V::Int(x), V::Float(y)) | (V::Float(y), V::Int(x)) => Some(*x as f64 == *y),
        (V::Char(x), V::Char(y)) => Some(x == y),
        (V::Str(x), V::Str(y)) => Some(x == y),
        (V::Sym(s), V::Str(t)) | (V::Str(t), V::Sym(s)) => sym_eq(s, t),
        (V::Sym(x), V::Sym(y)) => {
            if x == y && !x.iter().any(|s| matches!(s, Seg::Hole(_))) {
                Some(true)
            } else {
                // Two strings with unknown parts: equal only if the literals line up; we do not
                // try to decide that.
                None
            }
        }
        (V::Bytes(x), V::Bytes(y)) => Some(x == y),
        (V::Bytes(x), V::Str(y)) | (V::Str(y), V::Bytes(x)) => Some(x.as_slice() == y.as_bytes()),
        (V::Vec(x), V::Vec(y)) | (V::Tuple(x), V::Tuple(y)) | (V::Vec(x), V::Tuple(y)) => seq_eq(x, y),
        (V::Option(x), V::Option(y)) => match (x, y) {
            (None, None) => Some(true),
            (Some(x), Some(y)) => value_eq(x, y),
            _ => Some(false),
        },
        (V::Result(x), V::Result(y)) => match (x, y) {
            (Ok(x), Ok(y)) | (Err(x), Err(y)) => value_eq(x, y),
            _ => Some(false),
        },
        (V::Adt(x), V::Adt(y)) => {
            if x.ty != y.ty || x.variant != y.variant {
                return Some(false);
            }
            let xs: Vec<V> = x.fields.iter().map(|(_, v)| v.clone()).collect();
            let ys: Vec<V> = y.fields.iter().map(|(_, v)| v.clone()).collect();
            seq_eq(&xs, &ys)
        }
        (V::Obj(x), V::Obj(y)) => match (&**x, &**y) {
            (Obj::IoError(a), Obj::IoError(b)) | (Obj::VarError(a), Obj::VarError(b)) => Some(a == b),
            (Obj::Channel(a), Obj::Channel(b)) => value_eq(a, b),
            (Obj::Version(a1, a2, a3), Obj::Version(b1, b2, b3)) => seq_eq(&[a1.clone(), a2.clone(), a3.clone()], &[b1.clone(), b2.clone(), b3.clone()]),
            _ => Some(x == y),
        },
        (V::Map(x, _), V::Map(y, _)) => {
            if x.len() != y.len() || x.keys().ne(y.keys()) {
                return Some(false);
            }
            let xs: Vec<V> = x.values().map(|(_, v)| v.clone()).collect();
            let ys: Vec<V> = y.values().map(|(_, v)| v.clone()).collect();
            seq_eq(&xs, &ys)
        }
        _ => Some(false),
    }
}

fn seq_eq(x: &[V], y: &[V]) -> Option<bool> {
    if x.len() != y.len() {
        return Some(false);
    }
    let mut unknown = false;
    for (a, b) in x.iter().zip(y) {
        match value_eq(a, b) {
            Some(false) => return Some(false),
            None => unknown = true,
            Some(true) => {}
        }
    }
    if unknown { None } else { Some(true) }
}

/// Order two values: `None` when unknown or not comparable.
pub fn value_cmp(a: &V, b: &V) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    match (a, b) {
        (V::Ref(p), _) => value_cmp(&deref_place(p), b),
        (_, V::Ref(p)) => value_cmp(a, &deref_place(p)),
        (V::Int(x), V::Int(y)) => Some(x.cmp(y)),
        (V::Float(x), V::Float(y)) => x.partial_cmp(y),
        (V::Int(x), V::Float(y)) => (*x as f64).partial_cmp(y),
        (V::Float(x), V::Int(y)) => x.partial_cmp(&(*y as f64)),
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::Char(x), V::Char(y)) => Some(x.cmp(y)),
        (V::Str(x), V::Str(y)) => Some(x.cmp(y)),
        (V::Unit, V::Unit) => Some(Ordering::Equal),
        (V::Vec(x), V::Vec(y)) | (V::Tuple(x), V::Tuple(y)) => {
            for (a, b) in x.iter().zip(y.iter()) {
                match value_cmp(a, b)? {
                    Ordering::Equal => {}
                    o => return Some(o),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        (V::Option(x), V::Option(y)) => match (x, y) {
            (None, None) => Some(Ordering::Equal),
            (None, Some(_)) => Some(Ordering::Less),
            (Some(_), None) => Some(Ordering::Greater),
            (Some(a), Some(b)) => value_cmp(a, b),
        },
        (V::Obj(x), V::Obj(y)) => match (&**x, &**y) {
            (Obj::Version(a1, a2, a3), Obj::Version(b1, b2, b3)) => {
                value_cmp(&V::Tuple(Rc::new(vec![a1.clone(), a2.clone(), a3.clone()])), &V::Tuple(Rc::new(vec![b1.clone(), b2.clone(), b3.clone()])))
            }
            _ => None,
        },
        (V::Adt(x), V::Adt(y)) if x.ty == y.ty && x.variant == y.variant => {
            let xs: Vec<V> = x.fields.iter().map(|(_, v)| v.clone()).collect();
            let ys: Vec<V> = y.fields.iter().map(|(_, v)| v.clone()).collect();
            value_cmp(&V::Tuple(Rc::new(xs)), &V::Tuple(Rc::new(ys)))
        }
        _ => None,
    }
}

/// The value a place holds now.
pub fn deref_place(p: &Place) -> V {
    match p {
        Place::Var(c) => c.borrow().clone(),
        Place::Field(parent, name) => match deref_place(parent) {
            V::Obj(o) if matches!(&*o, Obj::Child(_)) && &**name == "stdin" => V::some(V::obj(Obj::ChildStdin)),
            V::Adt(a) => a.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap_or(V::Unit),
            V::Tuple(t) => name.parse::<usize>().ok().and_then(|i| t.get(i).cloned()).unwrap_or(V::Unit),
            V::Ref(inner) => deref_place(&Place::Field(inner, name.clone())),
            other => other,
        },
        Place::Index(parent, i) => match deref_place(parent) {
            V::Vec(v) => v.get(*i).cloned().unwrap_or(V::Unit),
            V::Ref(inner) => deref_place(&Place::Index(inner, *i)),
            other => other,
        },
        Place::MapKey(parent, k) => match deref_place(parent) {
            V::Map(m, _) => m.get(k).map(|(_, v)| v.clone()).unwrap_or(V::Unit),
            V::Ref(inner) => deref_place(&Place::MapKey(inner, k.clone())),
            other => other,
        },
    }
}

/// Follow references to the value.
pub fn deref(v: &V) -> V {
    let mut cur = v.clone();
    for _ in 0..64 {
        match cur {
            V::Ref(p) => cur = deref_place(&p),
            other => return other,
        }
    }
    cur
}

/// A map key for a value: `None` for a value that cannot be one here (unknown).
pub fn key_of(v: &V) -> Option<Key> {
    match deref(v) {
        V::Int(i) => Some(Key::Int(i)),
        V::Str(s) => Some(Key::Str(s.to_string())),
        V::Char(c) => Some(Key::Str(c.to_string())),
        V::Bool(b) => Some(Key::Other(b.to_string())),
        V::Tuple(t) => {
            let mut s = String::new();
            for x in t.iter() {
                match key_of(x)? {
                    Key::Int(i) => write!(s, "i{i:040}\u{1}").ok()?,
                    Key::Str(t) | Key::Other(t) => write!(s, "s{t}\u{1}").ok()?,
                }
            }
            Some(Key::Other(s))
        }
        V::Adt(a) if a.fields.is_empty() => Some(Key::Other(format!("{}::{}", a.ty, a.variant.as_deref().unwrap_or("")))),
        _ => None,
    }
}
