//! The library a build script calls, as models: `std` (environment, files in OUT_DIR and
//! the package, `Command` with the compiler-version probe, strings, collections,
//! iterators) and the build dependencies whose answers come from the toolchain version
//! (`autocfg`, `version_check`, `rustc_version`). Nothing here runs a process or reads
//! outside the package: a call that would is a stop, or an unknown value.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use proc_macro2::Span;

use super::interp::{Flow, Interp, R, range_bounds, size_of_value, type_name};
use super::value::*;
use super::{EnvEntry, MANIFEST_DIR_VALUE, OUT_DIR_VALUE};

/// Methods that may change their receiver (it is then evaluated as a place).
pub fn mutating(name: &str) -> bool {
    matches!(
        name,
        "push" | "push_str" | "insert" | "insert_str" | "remove" | "pop" | "clear" | "truncate" | "extend" | "extend_from_slice" | "append"
            | "sort" | "sort_by" | "sort_by_key" | "sort_unstable" | "sort_unstable_by" | "sort_unstable_by_key" | "dedup" | "dedup_by_key"
            | "retain" | "reverse" | "drain" | "set_extension" | "set_file_name" | "swap" | "fill" | "resize" | "entry" | "iter_mut"
            | "get_mut" | "last_mut" | "first_mut" | "as_mut" | "take" | "replace" | "store" | "fetch_add" | "fetch_or" | "set"
            | "borrow_mut" | "arg" | "args" | "env" | "envs" | "env_remove" | "env_clear" | "current_dir" | "stdin" | "stdout" | "create" | "create_new" | "read"
            | "stderr" | "field" | "entries" | "get_or_insert_with" | "values_mut" | "pop_front" | "push_front" | "push_back" | "pop_back"
            | "write_all" | "write" | "flush" | "index_mut"
    )
}

/// Where a path points.
enum Loc {
    /// Relative to OUT_DIR (`""`: OUT_DIR itself).
    Out(String),
    /// Relative to the package root.
    Pkg(String),
}

fn norm(rel: &str) -> Option<String> {
    crate::surface::syntax::paths::join("", rel.trim_start_matches('/'))
}

impl<'a> Interp<'a> {
    // ---- environment ----

    /// The state of an environment variable the build script reads.
    fn env_entry(&self, name: &str) -> EnvEntry {
        if let Some(e) = self.input.env.get(name) {
            return e.clone();
        }
        // cargo sets every CARGO_CFG_, CARGO_FEATURE_ and CARGO_PKG_ variable there is; any
        // other name comes from the environment cargo runs in, or from a dependency's links
        // metadata (DEP_), which the evaluation does not know.
        if name.starts_with("CARGO_CFG_") || name.starts_with("CARGO_FEATURE_") || name.starts_with("CARGO_PKG_") {
            return EnvEntry::Unset;
        }
        EnvEntry::Maybe
    }

    /// Decide on this path whether an unknown variable is set: `Unset` or `Present` (a first
    /// look), refined into `Set` or `NotUnicode` when `unicode` is asked.
    fn env_state(&mut self, name: &str, unicode: bool, span: Span) -> super::interp::EnvState {
        use super::interp::EnvState::*;
        let what = format!("env {name} ({})", self.at(span));
        let cur = self.st.env.get(name).copied();
        let s = match cur {
            Some(s) => s,
            None => {
                let s = if self.choose(2, &what) == 0 { Unset } else { Set };
                // `Set` stands for present until refined.
                self.st.env.insert(format!("{name}\u{0}present"), s);
                s
            }
        };
        if s == Unset {
            self.st.env.insert(name.to_string(), Unset);
            return Unset;
        }
        if unicode && !self.st.env.contains_key(&format!("{name}\u{0}refined")) {
            let r = if self.choose(2, &format!("whether env {name} is unicode ({})", self.at(span))) == 0 { Set } else { NotUnicode };
            self.st.env.insert(format!("{name}\u{0}refined"), r);
            self.st.env.insert(name.to_string(), r);
            return r;
        }
        self.st.env.insert(name.to_string(), s);
        s
    }

    fn env_var(&mut self, name: &str, os: bool, span: Span) -> V {
        use super::interp::EnvState::*;
        let unknown = |n: &str| V::unknown(&format!("env {n}"), Kind::Str);
        match self.env_entry(name) {
            EnvEntry::Value(v) => {
                if os {
                    V::some(V::str(&v))
                } else {
                    V::ok(V::str(&v))
                }
            }
            EnvEntry::Unset => {
                if os {
                    V::Option(None)
                } else {
                    V::err(V::obj(Obj::VarError(Rc::from("NotPresent"))))
                }
            }
            EnvEntry::Opaque(origin) => {
                let v = V::unknown(&origin, Kind::Str);
                if os { V::some(v) } else { V::ok(v) }
            }
            EnvEntry::Maybe => {
                let s = self.env_state(name, !os, span);
                match (s, os) {
                    (Unset, true) => V::Option(None),
                    (Unset, false) => V::err(V::obj(Obj::VarError(Rc::from("NotPresent")))),
                    (_, true) => V::some(unknown(name)),
                    (NotUnicode, false) => V::err(V::obj(Obj::VarError(Rc::from("NotUnicode")))),
                    (_, false) => V::ok(unknown(name)),
                }
            }
        }
    }

    /// `env!`/`option_env!` when the build script is compiled: `Ok(None)` unset, `Err(())`
    /// not known whether set.
    pub fn compile_env(&self, name: &str) -> Result<Option<V>, ()> {
        if name == "OUT_DIR" {
            return Ok(None);
        }
        if name == "CARGO_CRATE_NAME" {
            return Ok(Some(V::str("build_script_build")));
        }
        match self.env_entry(name) {
            EnvEntry::Value(v) if name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_MANIFEST_") => Ok(Some(V::str(&v))),
            EnvEntry::Unset if name.starts_with("CARGO_PKG_") => Ok(None),
            _ => Err(()),
        }
    }

    // ---- paths ----

    fn locate(&self, v: &V, span: Span) -> R<Result<Loc, String>> {
        let v = deref(v);
        let s = match &v {
            V::Str(s) => s.to_string(),
            V::Sym(_) | V::Unknown(_) => return Ok(Err("a path that depends on values the evaluation does not know".into())),
            other => return self.stop(span, format!("a path that is {}", other.kind_name())),
        };
        let s = s.replace('\\', "/");
        if let Some(rest) = s.strip_prefix(OUT_DIR_VALUE) {
            if !(rest.is_empty() || rest.starts_with('/')) {
                return Ok(Err(format!("path {s}")));
            }
            return Ok(norm(rest).map(Loc::Out).ok_or_else(|| format!("path {s} leaves OUT_DIR")));
        }
        if let Some(rest) = s.strip_prefix(MANIFEST_DIR_VALUE) {
            if !(rest.is_empty() || rest.starts_with('/')) {
                return Ok(Err(format!("path {s}")));
            }
            return Ok(norm(rest).map(Loc::Pkg).ok_or_else(|| format!("path {s} leaves the package")));
        }
        if s.starts_with('/') || s.as_bytes().get(1) == Some(&b':') {
            return Ok(Err(format!("{s}, outside the package")));
        }
        // Relative: the build script runs in the package directory.
        Ok(crate::surface::syntax::paths::join("", &s).map(Loc::Pkg).ok_or_else(|| format!("{s}, outside the package")))
    }

    fn pkg_is_file(&self, rel: &str) -> bool {
        self.input.files.contains_key(rel)
    }

    fn pkg_is_dir(&self, rel: &str) -> bool {
        if rel.is_empty() {
            return true;
        }
        let pre = format!("{rel}/");
        self.input.files.range(pre.clone()..).next().is_some_and(|(k, _)| k.starts_with(&pre))
    }

    fn tainted(&self, rel: &str) -> bool {
        self.st.tainted.iter().any(|t| t.is_empty() || rel == t || rel.starts_with(&format!("{t}/")))
    }

    /// Whether a path exists: `None` when not known.
    fn exists(&self, loc: &Loc) -> Option<(bool, bool)> {
        match loc {
            Loc::Pkg(r) => Some((self.pkg_is_file(r), self.pkg_is_dir(r))),
            Loc::Out(r) => {
                if r.is_empty() {
                    return Some((false, true));
                }
                if self.st.clobbered.is_some() || self.tainted(r) {
                    return None;
                }
                let file = self.st.files.contains_key(r);
                let pre = format!("{r}/");
                let dir = self.st.dirs.contains(r) || self.st.files.keys().any(|k| k.starts_with(&pre));
                Some((file, dir))
            }
        }
    }

    fn read_text(&mut self, path: &V, span: Span) -> R<V> {
        let loc = match self.locate(path, span)? {
            Ok(l) => l,
            Err(why) => return self.stop(span, format!("a read of {why}")),
        };
        match loc {
            Loc::Pkg(r) => {
                if self.st.tainted.iter().any(|t| t.is_empty()) {
                    return self.stop(span, "a read of a package file after a compiler run that may write there");
                }
                match self.input.files.get(&r) {
                    Some(b) => match std::str::from_utf8(b) {
                        Ok(t) => Ok(V::ok(V::str(t))),
                        Err(_) => Ok(V::err(V::obj(Obj::IoError(Rc::from("InvalidData"))))),
                    },
                    None => Ok(V::err(V::obj(Obj::IoError(Rc::from("NotFound"))))),
                }
            }
            Loc::Out(r) => {
                if self.st.clobbered.is_some() || self.tainted(&r) {
                    return self.stop(span, format!("a read of $OUT_DIR/{r}, which is not known"));
                }
                match self.st.files.get(&r) {
                    Some(f) => {
                        let segs: Sym = f.chunks.iter().flat_map(|c| c.text.iter().cloned()).collect();
                        Ok(V::ok(V::from_segs(segs)))
                    }
                    None => Ok(V::err(V::obj(Obj::IoError(Rc::from("NotFound"))))),
                }
            }
        }
    }

    /// Write `text` to a file (replacing it, or appending).
    fn write_file(&mut self, path: &V, text: Sym, append: bool, origin: Rc<str>, span: Span) -> R<V> {
        let loc = match self.locate(path, span)? {
            Ok(l) => l,
            Err(why) => {
                if self.st.clobbered.is_none() {
                    self.st.clobbered = Some(format!("{}: a write to {why}", self.at(span)));
                }
                return Ok(V::ok(V::Unit));
            }
        };
        match loc {
            Loc::Out(r) => {
                if r.is_empty() {
                    return Ok(V::err(V::obj(Obj::IoError(Rc::from("IsADirectory")))));
                }
                let n: usize = text.iter().map(|s| if let Seg::Lit(l) = s { l.len() } else { 1 }).sum();
                if n > self.budget.bytes {
                    return self.stop(span, "the evaluation's budget of bytes written is spent");
                }
                self.budget.bytes -= n;
                let f = self.st.files.entry(r).or_default();
                if !append {
                    f.chunks.clear();
                }
                f.chunks.push(super::interp::Chunk { text, origin });
                Ok(V::ok(V::Unit))
            }
            Loc::Pkg(r) => self.stop(span, format!("a write into the package ({r}), outside OUT_DIR")),
        }
    }

    pub fn write_file_handle(&mut self, h: usize, text: Sym, origin: Rc<str>, span: Span) -> R<()> {
        let Some(rel) = self.st.open.get(h).cloned() else { return self.stop(span, "a write to a file that is not open") };
        self.write_file(&V::string(format!("{OUT_DIR_VALUE}/{rel}")), text, true, origin, span)?;
        Ok(())
    }

    fn open_for_write(&mut self, path: &V, truncate: bool, span: Span) -> R<V> {
        match self.locate(path, span)? {
            Ok(Loc::Out(r)) if !r.is_empty() => {
                let f = self.st.files.entry(r.clone()).or_default();
                if truncate {
                    f.chunks.clear();
                }
                self.st.open.push(r);
                Ok(V::ok(V::obj(Obj::File(self.st.open.len() - 1))))
            }
            Ok(Loc::Out(_)) => Ok(V::err(V::obj(Obj::IoError(Rc::from("IsADirectory"))))),
            Ok(Loc::Pkg(r)) => self.stop(span, format!("a file created in the package ({r}), outside OUT_DIR")),
            Err(why) => self.stop(span, format!("a file created at {why}")),
        }
    }

    // ---- processes ----

    /// Run a command, as a model: the compiler's version, or an unknown result.
    fn run_command(&mut self, cmd: &Cmd, mode: &str, span: Span) -> R<V> {
        let prog = deref(&cmd.program);
        let is_rustc = |v: &V| matches!(v, V::Unknown(u) if &*u.origin == "RUSTC") || matches!(v, V::Str(s) if &**s == "rustc");
        let is_wrapper = |v: &V| matches!(v, V::Unknown(u) if &*u.origin == "env RUSTC_WRAPPER" || &*u.origin == "env RUSTC_WORKSPACE_WRAPPER");
        let mut args: Vec<V> = cmd.args.iter().map(deref).collect();
        let rustc = if is_rustc(&prog) {
            true
        } else if is_wrapper(&prog) && args.first().is_some_and(|a| is_rustc(a) || is_wrapper(a)) {
            // A wrapper runs the compiler it is given (cargo's contract for RUSTC_WRAPPER).
            while args.first().is_some_and(is_wrapper) {
                args.remove(0);
            }
            args.remove(0);
            true
        } else {
            false
        };
        let at = self.at(span);
        if !rustc {
            let name = match &prog {
                V::Str(s) => format!("`{s}`"),
                V::Unknown(u) => format!("a program from {}", u.origin),
                _ => "a program".into(),
            };
            // Another program may do anything with OUT_DIR, and print directives itself when
            // its output is not captured.
            if self.st.clobbered.is_none() {
                self.st.clobbered = Some(format!("{at}: {name} runs, and may write any file"));
            }
            let origin = format!("the result of {name} at {at}");
            if mode != "output" {
                self.write_stdout(vec![Seg::Hole(Class::Any), Seg::Lit("\n".into())], Rc::from(at.as_str()));
            }
            return Ok(self.process_result(mode, V::unknown(&origin, Kind::Bool), V::unknown(&origin, Kind::Str), cmd));
        }
        let lit: Vec<Option<String>> = args.iter().map(|a| a.as_str().map(str::to_string)).collect();
        let flags: Vec<&str> = lit.iter().map(|a| a.as_deref().unwrap_or("\u{0}")).filter(|a| *a != "--rustc").collect();
        let version = matches!(flags.as_slice(), ["--version"] | ["-V"]);
        let verbose = matches!(flags.as_slice(), ["-vV"] | ["-Vv"] | ["--version", "--verbose"] | ["--verbose", "--version"] | ["-V", "-v"] | ["-v", "-V"] | ["-vV", "--version"]);
        if version || verbose {
            let out = self.input.toolchain.version_output(verbose, &self.input.host);
            return Ok(self.process_result(mode, V::Bool(true), V::from_segs(out), cmd));
        }
        // A compile probe: whether it compiles is not known. It writes its outputs where it is
        // told (`--out-dir`, `-o`), else in the package directory.
        let mut wrote = false;
        for (i, a) in lit.iter().enumerate() {
            let target = match a.as_deref() {
                Some("--out-dir") | Some("-o") => args.get(i + 1).cloned(),
                Some(s) if s.starts_with("--out-dir=") => Some(V::str(&s["--out-dir=".len()..])),
                _ => None,
            };
            if let Some(t) = target {
                wrote = true;
                match self.locate(&t, span)? {
                    Ok(Loc::Out(r)) => self.st.tainted.push(r),
                    Ok(Loc::Pkg(_)) => self.st.tainted.push(String::new()),
                    Err(why) => {
                        if self.st.clobbered.is_none() {
                            self.st.clobbered = Some(format!("{at}: the compiler writes to {why}"));
                        }
                    }
                }
            }
        }
        if !wrote {
            self.st.tainted.push(String::new());
        }
        if lit.iter().any(|a| a.as_deref().is_some_and(|a| a.starts_with("--print"))) && mode != "output" {
            self.write_stdout(vec![Seg::Hole(Class::Any), Seg::Lit("\n".into())], Rc::from(at.as_str()));
        }
        let origin = format!("the compile probe at {at}");
        Ok(self.process_result(mode, V::unknown(&origin, Kind::Bool), V::unknown(&origin, Kind::Str), cmd))
    }

    fn process_result(&mut self, mode: &str, success: V, stdout: V, cmd: &Cmd) -> V {
        match mode {
            "output" => V::ok(V::obj(Obj::Output { success, stdout, stderr: V::unknown("a program's error output", Kind::Str) })),
            "status" => V::ok(V::obj(Obj::Status(success))),
            _ => {
                let mut c = cmd.clone();
                c.env.push((V::str("\u{0}success"), Some(success)));
                c.env.push((V::str("\u{0}stdout"), Some(stdout)));
                V::ok(V::obj(Obj::Child(Box::new(c))))
            }
        }
    }

    // ---- functions and constants by path ----

    /// A path used as a value.
    pub fn ext_value(&mut self, path: &str, span: Span) -> R<V> {
        let p = path;
        let last = p.rsplit("::").next().unwrap_or(p);
        let int_ty = p.strip_prefix("std::").and_then(|r| r.split("::").next()).filter(|t| int_bits(t, self.input.pointer_width).is_some());
        if let Some(t) = int_ty {
            let (bits, signed) = int_bits(t, self.input.pointer_width).unwrap();
            match last {
                "MAX" => return Ok(V::Int(if signed { (1i128 << (bits - 1)) - 1 } else if bits >= 127 { i128::MAX } else { (1i128 << bits) - 1 })),
                "MIN" => return Ok(V::Int(if signed { -(1i128 << (bits - 1)) } else { 0 })),
                "BITS" => return Ok(V::Int(bits as i128)),
                _ => {}
            }
        }
        Ok(match p {
            "std::option::Option::None" => V::Option(None),
            "std::path::MAIN_SEPARATOR" => V::Char('/'),
            "std::path::MAIN_SEPARATOR_STR" => V::str("/"),
            "std::env::consts::OS" => V::str(&self.input.target_os),
            "std::env::consts::FAMILY" => V::str(&self.input.target_family),
            "std::env::consts::ARCH" => V::str(&self.input.target_arch),
            "std::env::consts::EXE_SUFFIX" => V::str(if self.input.target_os == "windows" { ".exe" } else { "" }),
            "std::env::VarError::NotPresent" => V::obj(Obj::VarError(Rc::from("NotPresent"))),
            "std::sync::atomic::Ordering::Relaxed" | "std::sync::atomic::Ordering::SeqCst" | "std::sync::atomic::Ordering::Acquire" | "std::sync::atomic::Ordering::Release" | "std::sync::atomic::Ordering::AcqRel" => V::Unit,
            "std::cmp::Ordering::Less" | "std::cmp::Ordering::Equal" | "std::cmp::Ordering::Greater" => ordering_value(last),
            _ if p.starts_with("std::io::ErrorKind::") => V::obj(Obj::IoError(Rc::from(last))),
            _ if last.chars().next().is_some_and(|c| c.is_lowercase()) || p.starts_with("std::option::Option::") || p.starts_with("std::result::Result::") => V::Fn(Rc::new(FnRef::Path(Rc::from(p)))),
            _ => match super::deps::value(p) {
                Some(v) => v,
                None => return self.stop(span, format!("`{p}`")),
            },
        })
    }

    /// A call of a function outside the script.
    pub fn call_ext(&mut self, path: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
        let at: Rc<str> = Rc::from(self.at(span).as_str());
        let a = |i: usize| args.get(i).cloned().unwrap_or(V::Unit);
        // Constructors of the script's own types, named as values.
        if let Some(name) = path.strip_prefix("struct ") {
            return Ok(V::Adt(Rc::new(Adt { ty: Rc::from(name), variant: None, fields: args.into_iter().enumerate().map(|(i, v)| (Rc::from(i.to_string().as_str()), v)).collect(), tuple: true })));
        }
        if let Some(rest) = path.strip_prefix("variant ") {
            let (ty, var) = rest.split_once("::").unwrap_or((rest, ""));
            return Ok(V::Adt(Rc::new(Adt { ty: Rc::from(ty), variant: Some(Rc::from(var)), fields: args.into_iter().enumerate().map(|(i, v)| (Rc::from(i.to_string().as_str()), v)).collect(), tuple: true })));
        }
        if let Some(rest) = path.strip_prefix("method ") {
            let (ty, m) = rest.split_once("::").unwrap_or((rest, ""));
            let Some(f) = self.script.methods.get(&(Rc::from(ty), m.to_string())).cloned() else { return self.stop(span, format!("`{rest}`")) };
            let takes_self = matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
            if takes_self {
                let mut it = args.into_iter();
                let recv = it.next().unwrap_or(V::Unit);
                return self.call_fn(&f, it.collect(), Some(recv));
            }
            return self.call_fn(&f, args, None);
        }
        // `Type::method(recv, ..)` of std types: the method on the first argument.
        let last = path.rsplit("::").next().unwrap_or(path).to_string();
        match path {
            "std::option::Option::Some" => return Ok(V::some(a(0))),
            "std::result::Result::Ok" => return Ok(V::ok(a(0))),
            "std::result::Result::Err" => return Ok(V::err(a(0))),
            "std::env::var" => {
                let Some(n) = deref(&a(0)).as_str().map(str::to_string) else { return self.stop(span, "`env::var` of a name that is not known") };
                return Ok(self.env_var(&n, false, span));
            }
            "std::env::var_os" => {
                let Some(n) = deref(&a(0)).as_str().map(str::to_string) else { return self.stop(span, "`env::var_os` of a name that is not known") };
                return Ok(self.env_var(&n, true, span));
            }
            "std::env::current_dir" => return Ok(V::ok(V::str(MANIFEST_DIR_VALUE))),
            "std::fs::write" => {
                let text = match deref(&a(1)) {
                    V::Bytes(b) => match String::from_utf8((*b).clone()) {
                        Ok(s) => vec![Seg::Lit(s)],
                        Err(_) => vec![Seg::Hole(Class::Any)],
                    },
                    V::Vec(v) => match bytes_of(&v).and_then(|b| String::from_utf8(b).ok()) {
                        Some(s) => vec![Seg::Lit(s)],
                        None => vec![Seg::Hole(Class::Any)],
                    },
                    other => segs_of(&other).ok_or_else(|| Flow::Stop(format!("{at}: `fs::write` of {}", other.kind_name())))?,
                };
                return self.write_file(&a(0), text, false, at, span);
            }
            "std::fs::read_to_string" => return self.read_text(&a(0), span),
            "std::fs::read" => {
                let r = self.read_text(&a(0), span)?;
                return Ok(match r {
                    V::Result(Ok(s)) => match deref(&s) {
                        V::Str(t) => V::ok(V::Bytes(Rc::new(t.as_bytes().to_vec()))),
                        other => V::ok(other),
                    },
                    other => other,
                });
            }
            "std::fs::create_dir" | "std::fs::create_dir_all" => {
                return match self.locate(&a(0), span)? {
                    Ok(Loc::Out(r)) => {
                        let existed = self.st.dirs.contains(&r) || r.is_empty();
                        if !r.is_empty() {
                            self.st.dirs.insert(r);
                        }
                        if existed && path.ends_with("create_dir") {
                            Ok(V::err(V::obj(Obj::IoError(Rc::from("AlreadyExists")))))
                        } else {
                            Ok(V::ok(V::Unit))
                        }
                    }
                    Ok(Loc::Pkg(r)) => self.stop(span, format!("a directory created in the package ({r})")),
                    Err(why) => self.stop(span, format!("a directory created at {why}")),
                };
            }
            "std::fs::remove_file" | "std::fs::remove_dir_all" | "std::fs::remove_dir" => {
                return match self.locate(&a(0), span)? {
                    Ok(Loc::Out(r)) => {
                        let pre = format!("{r}/");
                        let had = self.st.files.contains_key(&r) || self.st.dirs.contains(&r) || self.tainted(&r);
                        self.st.files.retain(|k, _| !(k == &r || k.starts_with(&pre)));
                        self.st.dirs.retain(|k| !(k == &r || k.starts_with(&pre)));
                        self.st.tainted.retain(|k| !(k == &r || k.starts_with(&pre)));
                        Ok(if had { V::ok(V::Unit) } else { V::err(V::obj(Obj::IoError(Rc::from("NotFound")))) })
                    }
                    Ok(Loc::Pkg(r)) => self.stop(span, format!("a removal in the package ({r})")),
                    Err(why) => self.stop(span, format!("a removal of {why}")),
                };
            }
            "std::fs::copy" => {
                let r = self.read_text(&a(0), span)?;
                let V::Result(Ok(text)) = r else { return Ok(r) };
                let segs = segs_of(&text).unwrap_or_default();
                self.write_file(&a(1), segs, false, at, span)?;
                return Ok(V::ok(V::Int(0)));
            }
            "std::fs::metadata" | "std::fs::symlink_metadata" => {
                let loc = match self.locate(&a(0), span)? {
                    Ok(l) => l,
                    Err(why) => return self.stop(span, format!("metadata of {why}")),
                };
                return match self.exists(&loc) {
                    Some((f, d)) if f || d => Ok(V::ok(V::obj(Obj::Error(Rc::from(if d { "dir" } else { "file" }))))),
                    Some(_) => Ok(V::err(V::obj(Obj::IoError(Rc::from("NotFound"))))),
                    None => Ok(V::unknown(&format!("whether a file exists ({at})"), Kind::Any)),
                };
            }
            "std::fs::read_dir" => return self.read_dir(&a(0), span),
            "std::fs::File::create" => return self.open_for_write(&a(0), true, span),
            "std::fs::File::open" => {
                let r = self.read_text(&a(0), span)?;
                return Ok(match r {
                    V::Result(Ok(t)) => V::ok(V::obj(Obj::Reader(t.as_ref().clone()))),
                    other => other,
                });
            }
            "std::fs::OpenOptions::new" => return Ok(V::obj(Obj::OpenOptions(false, false))),
            "std::io::BufWriter::new" | "std::io::LineWriter::new" | "std::io::BufReader::new" | "std::io::BufWriter::with_capacity" => {
                return Ok(args.into_iter().last().unwrap_or(V::Unit));
            }
            "std::io::stdout" => return Ok(V::obj(Obj::Stdout)),
            "std::io::stderr" => return Ok(V::obj(Obj::Stderr)),
            "std::io::Error::new" | "std::io::Error::other" => return Ok(V::obj(Obj::IoError(Rc::from("Other")))),
            "std::path::Path::new" | "std::path::PathBuf::from" | "std::ffi::OsString::from" | "std::ffi::OsStr::new" | "std::string::String::from" | "std::borrow::Cow::from" | "std::convert::From::from" | "std::convert::Into::into" | "std::convert::identity" | "std::boxed::Box::new" | "std::rc::Rc::new" | "std::sync::Arc::new" | "std::cell::RefCell::new" | "std::cell::Cell::new" | "std::sync::atomic::AtomicBool::new" | "std::sync::atomic::AtomicUsize::new" | "std::sync::Mutex::new" | "std::vec::Vec::from" | "std::hint::black_box" | "std::mem::drop" | "std::convert::AsRef::as_ref" | "std::borrow::Borrow::borrow" | "std::string::String::from_str" => {
                return Ok(if path == "std::mem::drop" { V::Unit } else { a(0) });
            }
            "std::path::PathBuf::new" | "std::string::String::new" | "std::ffi::OsString::new" | "std::string::String::with_capacity" => return Ok(V::str("")),
            "std::vec::Vec::new" | "std::vec::Vec::with_capacity" | "std::collections::VecDeque::new" => return Ok(V::vec(Vec::new())),
            "std::collections::HashMap::new" | "std::collections::BTreeMap::new" | "std::collections::HashMap::with_capacity" => return Ok(V::Map(Rc::new(BTreeMap::new()), false)),
            "std::collections::HashSet::new" | "std::collections::BTreeSet::new" | "std::collections::HashSet::with_capacity" => return Ok(V::Map(Rc::new(BTreeMap::new()), true)),
            "std::string::String::from_utf8" | "std::str::from_utf8" => {
                return Ok(match deref(&a(0)) {
                    V::Bytes(b) => match String::from_utf8((*b).clone()) {
                        Ok(s) => V::ok(V::string(s)),
                        Err(_) => V::err(V::obj(Obj::Error(Rc::from("invalid utf-8")))),
                    },
                    V::Vec(v) => match bytes_of(&v).and_then(|b| String::from_utf8(b).ok()) {
                        Some(s) => V::ok(V::string(s)),
                        None => V::err(V::obj(Obj::Error(Rc::from("invalid utf-8")))),
                    },
                    // Output of a program as modelled: text (a program's unknown output may not
                    // be UTF-8).
                    V::Unknown(u) => V::Unknown(u),
                    other => V::ok(other),
                });
            }
            "std::string::String::from_utf8_lossy" => {
                return Ok(match deref(&a(0)) {
                    V::Bytes(b) => V::string(String::from_utf8_lossy(&b).into_owned()),
                    other => other,
                });
            }
            "std::process::Command::new" => {
                return Ok(V::obj(Obj::Command(Box::new(Cmd { program: a(0), args: Vec::new(), env: Vec::new(), stdin: Vec::new(), at }))));
            }
            "std::process::exit" => {
                return match deref(&a(0)) {
                    V::Int(0) => Err(Flow::Exit),
                    V::Int(c) => Err(Flow::Fail(format!("{at}: process::exit({c})"))),
                    _ => self.stop(span, "`process::exit` with a code that is not known"),
                };
            }
            "std::process::abort" => return Err(Flow::Fail(format!("{at}: process::abort"))),
            "std::process::Stdio::null" | "std::process::Stdio::piped" | "std::process::Stdio::inherit" => return Ok(V::Unit),
            // A thread runs its closure; the script waits for it (`join`): run it here.
            "std::thread::spawn" => {
                let r = self.call_value(&a(0), Vec::new(), span)?;
                return Ok(V::obj(Obj::Join(r)));
            }
            "std::thread::Builder::new" => return Ok(V::obj(Obj::ThreadBuilder)),
            "std::iter::once" => return Ok(V::iter([a(0)])),
            "std::iter::empty" => return Ok(V::iter([])),
            "std::mem::replace" | "std::mem::take" | "std::mem::swap" => return self.stop(span, format!("`{path}`")),
            "std::cmp::max" | "std::cmp::min" => {
                let o = value_cmp(&a(0), &a(1));
                return match o {
                    Some(o) => Ok(if (o == std::cmp::Ordering::Greater) == (last == "max") { a(0) } else { a(1) }),
                    None => Ok(V::unknown("a comparison of unknown values", Kind::Any)),
                };
            }
            "std::char::from_u32" => return Ok(match deref(&a(0)) {
                V::Int(i) => V::Option(u32::try_from(i).ok().and_then(char::from_u32).map(|c| Rc::new(V::Char(c)))),
                _ => V::unknown("a char from an unknown number", Kind::Any),
            }),
            "std::char::from_digit" => return Ok(match (deref(&a(0)), deref(&a(1))) {
                (V::Int(d), V::Int(r)) => V::Option(char::from_digit(d as u32, r as u32).map(|c| Rc::new(V::Char(c)))),
                _ => V::unknown("a char from an unknown number", Kind::Any),
            }),
            "std::fmt::Debug::fmt" | "std::fmt::Display::fmt" | "std::fmt::LowerHex::fmt" => {
                let V::Obj(o) = deref(&a(1)) else { return self.stop(span, format!("`{path}` without a formatter")) };
                let Obj::Formatter(buf, alt) = &*o else { return self.stop(span, format!("`{path}` without a formatter")) };
                let s = if last == "fmt" && path.contains("Debug") { self.debug(&a(0), *alt, 0, span)? } else { self.display(&a(0), span)? };
                buf.borrow_mut().extend(s);
                return Ok(V::ok(V::Unit));
            }
            "std::default::Default::default" => return Ok(default_of(hint)),
            "std::string::ToString::to_string" => return self.call_method_value(a(0), None, "to_string", Vec::new(), span, None),
            "std::iter::Iterator::next" => return self.call_method_value(a(0), None, "next", Vec::new(), span, None),
            "std::num::NonZeroU32::new" | "std::num::NonZeroU64::new" | "std::num::NonZeroUsize::new" | "std::num::NonZeroU8::new" | "std::num::NonZeroU16::new" => {
                return Ok(match deref(&a(0)) {
                    V::Int(0) => V::Option(None),
                    V::Int(i) => V::some(V::Int(i)),
                    other => V::unknown(&format!("a number from {}", other.kind_name()), Kind::Any),
                });
            }
            _ => {}
        }
        // Associated functions of number types: `u32::from_str_radix`, `u8::try_from`.
        if let Some(rest) = path.strip_prefix("std::") {
            let mut parts = rest.splitn(2, "::");
            let ty = parts.next().unwrap_or("");
            let f = parts.next().unwrap_or("");
            if let Some(bits) = int_bits(ty, self.input.pointer_width) {
                match f {
                    "from_str_radix" => {
                        return Ok(match (deref(&a(0)), deref(&a(1))) {
                            (V::Str(s), V::Int(r)) => match i128::from_str_radix(&s, r as u32) {
                                Ok(v) if fits(v, bits) => V::ok(V::Int(v)),
                                _ => V::err(V::obj(Obj::Error(Rc::from("invalid digit")))),
                            },
                            _ => V::unknown("a number parsed from unknown text", Kind::Any),
                        });
                    }
                    "try_from" => {
                        return Ok(match deref(&a(0)) {
                            V::Int(v) if fits(v, bits) => V::ok(V::Int(v)),
                            V::Int(_) => V::err(V::obj(Obj::Error(Rc::from("out of range")))),
                            V::Char(c) if fits(c as i128, bits) => V::ok(V::Int(c as i128)),
                            other => V::unknown(&format!("a conversion of {}", other.kind_name()), Kind::Any),
                        });
                    }
                    "from" => return Ok(match deref(&a(0)) {
                        V::Char(c) => V::Int(c as i128),
                        V::Bool(b) => V::Int(b as i128),
                        other => other,
                    }),
                    "max" | "min" | "pow" | "abs" | "checked_add" | "checked_sub" | "saturating_sub" | "wrapping_add" => {
                        let mut it = args.into_iter();
                        let recv = it.next().unwrap_or(V::Unit);
                        return self.call_method_value(recv, None, f, it.collect(), span, hint);
                    }
                    _ => {}
                }
            }
            if ty == "char" && f == "from" {
                return Ok(match deref(&a(0)) {
                    V::Int(i) => V::Char(char::from_u32(i as u32).unwrap_or('\u{fffd}')),
                    other => other,
                });
            }
            // `str::trim(s)`, `String::len(&s)`, `Vec::len(&v)`, `Option::is_some(&o)`: the
            // method on the first argument.
            let method_types = ["str", "string::String", "vec::Vec", "option::Option", "result::Result", "path::Path", "path::PathBuf", "ffi::OsStr", "ffi::OsString", "iter::Iterator", "clone::Clone", "string::ToString", "borrow::ToOwned", "convert::Into"];
            for t in method_types {
                if let Some(m) = rest.strip_prefix(t).and_then(|r| r.strip_prefix("::")) {
                    if !m.contains("::") && !args.is_empty() {
                        let mut it = args.into_iter();
                        let recv = it.next().unwrap();
                        return self.call_method_value(recv, None, m, it.collect(), span, hint);
                    }
                }
            }
        }
        super::deps::call(self, path, args, span, hint)
    }

    fn read_dir(&mut self, p: &V, span: Span) -> R<V> {
        let shown = match deref(p) {
            V::Str(s) => s.to_string(),
            _ => return self.stop(span, "`read_dir` of a path that is not known"),
        };
        let rel = match self.locate(p, span)? {
            Ok(Loc::Pkg(r)) => r,
            Ok(Loc::Out(_)) => return self.stop(span, "`read_dir` of OUT_DIR"),
            Err(why) => return self.stop(span, format!("`read_dir` of {why}")),
        };
        if !self.pkg_is_dir(&rel) {
            return Ok(V::err(V::obj(Obj::IoError(Rc::from("NotFound")))));
        }
        let pre = if rel.is_empty() { String::new() } else { format!("{rel}/") };
        let mut names: Vec<String> = Vec::new();
        for k in self.input.files.keys() {
            if let Some(rest) = k.strip_prefix(&pre) {
                let first = rest.split('/').next().unwrap_or(rest).to_string();
                if names.last() != Some(&first) && !names.contains(&first) {
                    names.push(first);
                }
            }
        }
        names.sort();
        self.check_len(names.len(), span)?;
        let base = shown.trim_end_matches('/').to_string();
        Ok(V::ok(V::iter(names.into_iter().map(|n| V::ok(V::obj(Obj::DirEntry(Rc::from(format!("{base}/{n}").as_str()))))))))
    }

    /// `path.join(other)`.
    fn path_join(&self, a: &V, b: &V) -> Option<V> {
        let (sa, sb) = (segs_of(&deref(a))?, segs_of(&deref(b))?);
        if matches!(sb.first(), Some(Seg::Lit(l)) if l.starts_with('/')) {
            return Some(V::from_segs(sb));
        }
        if matches!(sb.first(), Some(Seg::Hole(_))) {
            // An unknown right side may be absolute.
            return Some(V::unknown("a path joined with an unknown one", Kind::Str));
        }
        let mut out = sa.clone();
        let empty = sa.is_empty() || matches!(sa.as_slice(), [Seg::Lit(l)] if l.is_empty());
        if !empty && !matches!(sa.last(), Some(Seg::Lit(l)) if l.ends_with('/')) {
            out.push(Seg::Lit("/".into()));
        }
        out.extend(sb);
        Some(V::from_segs(out))
    }
}

fn ordering_value(name: &str) -> V {
    V::Adt(Rc::new(Adt { ty: Rc::from("Ordering"), variant: Some(Rc::from(name)), fields: Vec::new(), tuple: false }))
}

fn ordering_of(o: std::cmp::Ordering) -> V {
    ordering_value(match o {
        std::cmp::Ordering::Less => "Less",
        std::cmp::Ordering::Equal => "Equal",
        std::cmp::Ordering::Greater => "Greater",
    })
}

fn as_ordering(v: &V) -> Option<std::cmp::Ordering> {
    match deref(v) {
        V::Adt(a) if &*a.ty == "Ordering" => match a.variant.as_deref() {
            Some("Less") => Some(std::cmp::Ordering::Less),
            Some("Equal") => Some(std::cmp::Ordering::Equal),
            Some("Greater") => Some(std::cmp::Ordering::Greater),
            _ => None,
        },
        _ => None,
    }
}

pub fn int_bits(t: &str, ptr: u32) -> Option<(u32, bool)> {
    Some(match t {
        "u8" => (8, false),
        "u16" => (16, false),
        "u32" => (32, false),
        "u64" => (64, false),
        "u128" => (128, false),
        "usize" => (ptr, false),
        "i8" => (8, true),
        "i16" => (16, true),
        "i32" => (32, true),
        "i64" => (64, true),
        "i128" => (128, true),
        "isize" => (ptr, true),
        _ => return None,
    })
}

fn fits(v: i128, (bits, signed): (u32, bool)) -> bool {
    if bits >= 128 {
        return signed || v >= 0;
    }
    if signed { v >= -(1i128 << (bits - 1)) && v < (1i128 << (bits - 1)) } else { v >= 0 && v < (1i128 << bits) }
}

fn bytes_of(v: &[V]) -> Option<Vec<u8>> {
    v.iter().map(|x| if let V::Int(i) = deref(x) { u8::try_from(i).ok() } else { None }).collect()
}

/// The default value of a type, by its name.
pub fn default_of(hint: Option<&syn::Type>) -> V {
    let t = hint.and_then(type_name).unwrap_or_default();
    match t.as_str() {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => V::Int(0),
        "f32" | "f64" => V::Float(0.0),
        "bool" => V::Bool(false),
        "Vec" | "VecDeque" => V::vec(Vec::new()),
        "HashMap" | "BTreeMap" => V::Map(Rc::new(BTreeMap::new()), false),
        "HashSet" | "BTreeSet" => V::Map(Rc::new(BTreeMap::new()), true),
        "Option" => V::Option(None),
        // Strings are what build scripts take a default of.
        _ => V::str(""),
    }
}

/// The first generic argument of a type (`Vec<u8>` → `u8`).
fn generic_arg(t: &syn::Type) -> Option<syn::Type> {
    if let syn::Type::Path(p) = t {
        if let Some(seg) = p.path.segments.last() {
            if let syn::PathArguments::AngleBracketed(a) = &seg.arguments {
                return a.args.iter().find_map(|g| if let syn::GenericArgument::Type(t) = g { Some(t.clone()) } else { None });
            }
        }
    }
    None
}

fn is_pred(name: &str) -> bool {
    name.starts_with("is_") || matches!(name, "contains" | "starts_with" | "ends_with" | "eq" | "ne" | "success" | "contains_key" | "any" | "all" | "exists" | "lt" | "le" | "gt" | "ge" | "eq_ignore_ascii_case")
}

/// A method call on a value.
pub fn method(it: &mut Interp, recv: V, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let recv = deref(&recv);
    // Methods that walk their receiver or argument cost as much as it is large.
    let linear = matches!(
        name,
        "iter" | "into_iter" | "to_vec" | "clone" | "contains" | "join" | "concat" | "sort" | "sort_by" | "sort_by_key" | "sort_unstable" | "dedup" | "retain"
            | "eq" | "ne" | "cmp" | "partial_cmp" | "starts_with" | "ends_with" | "extend" | "extend_from_slice" | "append" | "chars" | "bytes" | "lines"
            | "split" | "replace" | "to_string" | "to_owned" | "collect" | "keys" | "values" | "drain" | "repeat" | "rev" | "iter_mut" | "position" | "find"
    );
    if linear {
        let n = size_of_value(&recv, 1 << 20) + args.iter().map(|a| size_of_value(a, 1 << 20)).sum::<usize>();
        it.work(n as u64 / 4 + 1, span)?;
    }
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    // Methods every value has.
    match name {
        "clone" | "to_owned" | "as_ref" | "borrow" | "as_str" | "as_slice" | "as_path" | "as_os_str" | "deref" | "by_ref" | "to_path_buf" | "into_os_string" | "to_os_string" | "into_boxed_str" | "as_deref" | "cloned" | "copied" | "as_mut_str" | "into_owned" | "as_bytes" | "to_vec" | "into_bytes" | "get_ref" | "fuse" | "peekable" | "into_inner" | "lock"
            if !matches!(recv, V::Unknown(_) | V::Range(..)) =>
        {
            if name == "as_bytes" || name == "into_bytes" {
                if let V::Str(s) = &recv {
                    return Ok(V::Bytes(Rc::new(s.as_bytes().to_vec())));
                }
            }
            if matches!(name, "cloned" | "copied") {
                if let V::Iter(i) = &recv {
                    return Ok(V::iter(i.borrow_mut().drain(..).collect::<Vec<_>>()));
                }
            }
            if name == "lock" {
                return Ok(V::ok(recv));
            }
            // An iterator's copy is its own.
            if let V::Iter(i) = &recv {
                return Ok(V::Iter(Rc::new(std::cell::RefCell::new(i.borrow().clone()))));
            }
            return Ok(recv);
        }
        "into" | "try_into" | "to_os_str" if !matches!(recv, V::Unknown(_)) => {
            return Ok(if name == "try_into" { V::ok(recv) } else { recv });
        }
        "eq" | "ne" => {
            let e = value_eq(&recv, &a(0));
            return Ok(match e {
                Some(b) => V::Bool(if name == "eq" { b } else { !b }),
                None => V::unknown("a comparison with unknown parts", Kind::Bool),
            });
        }
        "cmp" | "partial_cmp" | "total_cmp" => {
            let o = match (&recv, &a(0)) {
                (V::Unknown(_), _) | (_, V::Unknown(_)) => return Ok(V::unknown("a comparison with unknown parts", Kind::Any)),
                (x, y) => value_cmp(x, y),
            };
            let Some(o) = o else { return it.stop(span, format!("`{name}` of {} and {}", recv.kind_name(), a(0).kind_name())) };
            return Ok(if name == "partial_cmp" { V::some(ordering_of(o)) } else { ordering_of(o) });
        }
        "lt" | "le" | "gt" | "ge" => {
            let op = match name {
                "lt" => "<",
                "le" => "<=",
                "gt" => ">",
                _ => ">=",
            };
            return it.arith(op, recv, a(0), span);
        }
        "to_string" => {
            let s = it.display(&recv, span)?;
            return Ok(V::from_segs(s));
        }
        // `AtomicBool`, `Cell`, `RefCell` hold their value directly.
        "load" | "get" if matches!(recv, V::Bool(_) | V::Int(_)) => return Ok(recv),
        "store" | "set" if matches!(recv, V::Bool(_) | V::Int(_)) || place.is_some() && name == "store" => {
            let Some(p) = place else { return it.stop(span, format!("`{name}` on a value that is not a variable")) };
            it.write_place(&p, a(0), span)?;
            return Ok(V::Unit);
        }
        "fetch_add" | "fetch_sub" if matches!(recv, V::Int(_)) => {
            let Some(p) = place else { return it.stop(span, format!("`{name}` on a value that is not a variable")) };
            let nv = it.arith(if name == "fetch_add" { "+" } else { "-" }, recv.clone(), a(0), span)?;
            it.write_place(&p, nv, span)?;
            return Ok(recv);
        }
        _ => {}
    }
    match &recv {
        V::Unknown(u) => unknown_method(it, u.clone(), name, args, span),
        V::Str(_) | V::Sym(_) => str_method(it, recv.clone(), place, name, args, span, hint),
        V::Int(i) => int_method(it, *i, name, args, span),
        V::Float(f) => {
            let f = *f;
            Ok(match name {
                "abs" => V::Float(f.abs()),
                "floor" => V::Float(f.floor()),
                "ceil" => V::Float(f.ceil()),
                "round" => V::Float(f.round()),
                "sqrt" => V::Float(f.sqrt()),
                "max" => match a(0) {
                    V::Float(g) => V::Float(f.max(g)),
                    _ => return it.stop(span, "`max` of a float"),
                },
                "min" => match a(0) {
                    V::Float(g) => V::Float(f.min(g)),
                    _ => return it.stop(span, "`min` of a float"),
                },
                _ => return it.stop(span, format!("method `{name}` of a float")),
            })
        }
        V::Char(c) => char_method(it, *c, name, args, span),
        V::Bool(b) => match name {
            "then" => {
                if *b {
                    let v = it.call_value(&a(0), Vec::new(), span)?;
                    Ok(V::some(v))
                } else {
                    Ok(V::Option(None))
                }
            }
            "then_some" => Ok(if *b { V::some(a(0)) } else { V::Option(None) }),
            "not" => Ok(V::Bool(!b)),
            _ => it.stop(span, format!("method `{name}` of a bool")),
        },
        V::Option(o) => option_method(it, o.clone(), place, name, args, span, hint),
        V::Result(r) => result_method(it, r.clone(), name, args, span, hint),
        V::Vec(_) | V::Bytes(_) => vec_method(it, recv.clone(), place, name, args, span, hint),
        V::Tuple(_) => match entry_method(it, &recv, name, &args, span)? {
            Some(v) => Ok(v),
            None => it.stop(span, format!("method `{name}` of a tuple")),
        },
        V::Map(..) => map_method(it, recv.clone(), place, name, args, span),
        V::Range(lo, hi, incl) => {
            match name {
                "contains" => {
                    let x = a(0);
                    let V::Int(x) = x else { return Ok(V::unknown("a range test of an unknown value", Kind::Bool)) };
                    let ok_lo = lo.is_none_or(|l| x >= l);
                    let ok_hi = hi.is_none_or(|h| if *incl { x <= h } else { x < h });
                    return Ok(V::Bool(ok_lo && ok_hi));
                }
                "len" | "count" => {
                    let (Some(l), Some(h)) = (lo, hi) else { return it.stop(span, "the length of an open range") };
                    return Ok(V::Int((if *incl { h + 1 } else { *h } - l).max(0)));
                }
                "is_empty" => {
                    let (Some(l), Some(h)) = (lo, hi) else { return it.stop(span, "an open range") };
                    return Ok(V::Bool(if *incl { l > h } else { l >= h }));
                }
                _ => {}
            }
            let items = it.into_items(recv.clone(), span)?;
            iter_method(it, VecDeque::from(items), name, args, span, hint)
        }
        V::Iter(i) => {
            let front_rest = i.borrow().front().is_some_and(is_rest);
            if front_rest && matches!(name, "next" | "peek" | "next_back" | "last" | "len") {
                return Ok(V::unknown("an item of an iterator of unknown length", Kind::Any));
            }
            if name == "next" {
                return Ok(V::Option(i.borrow_mut().pop_front().map(Rc::new)));
            }
            if name == "next_back" {
                return Ok(V::Option(i.borrow_mut().pop_back().map(Rc::new)));
            }
            if name == "peek" {
                return Ok(V::Option(i.borrow().front().cloned().map(Rc::new)));
            }
            if name == "len" {
                return Ok(V::Int(i.borrow().len() as i128));
            }
            let items: VecDeque<V> = i.borrow_mut().drain(..).collect();
            iter_method(it, items, name, args, span, hint)
        }
        V::Adt(adt) => match name {
            "fmt" => {
                // `self.0.fmt(f)` in a user impl: Display or Debug, as the caller's trait.
                let V::Obj(o) = a(0) else { return it.stop(span, "`fmt` without a formatter") };
                let Obj::Formatter(buf, alt) = &*o else { return it.stop(span, "`fmt` without a formatter") };
                let s = it.debug(&recv, *alt, 0, span)?;
                buf.borrow_mut().extend(s);
                Ok(V::ok(V::Unit))
            }
            _ => it.stop(span, format!("method `{name}` of `{}`, which the script does not define", adt.ty)),
        },
        V::Obj(o) => obj_method(it, o.clone(), place, name, args, span, hint),
        V::Fn(_) | V::Closure(_) => match name {
            "call" | "call_mut" | "call_once" => {
                let args = match a(0) {
                    V::Tuple(t) => t.to_vec(),
                    V::Unit => Vec::new(),
                    other => vec![other],
                };
                it.call_value(&recv, args, span)
            }
            _ => it.stop(span, format!("method `{name}` of a function")),
        },
        V::Unit => it.stop(span, format!("method `{name}` of `()`")),
        V::Ref(_) => it.stop(span, format!("method `{name}` of a reference")),
    }
}

/// A method of a value the evaluation does not know: the result is unknown too. Closures
/// the method would call are called (or not: a choice) for what they do.
fn unknown_method(it: &mut Interp, u: Rc<Unknown>, name: &str, args: Vec<V>, span: Span) -> R<V> {
    let kind = if is_pred(name) {
        Kind::Bool
    } else if matches!(name, "len" | "count" | "parse") {
        if name == "parse" { Kind::Any } else { Kind::Int }
    } else if matches!(name, "to_string" | "trim" | "to_lowercase" | "to_uppercase" | "replace" | "display" | "to_string_lossy" | "into_string" | "unwrap" | "expect" | "unwrap_or_default") && u.kind == Kind::Str {
        Kind::Str
    } else if matches!(name, "map_or" | "unwrap_or") {
        // The result has the type of the default (Rust types both branches alike).
        match args.first().map(deref) {
            Some(V::Bool(_)) => Kind::Bool,
            Some(V::Int(_)) => Kind::Int,
            Some(V::Unknown(d)) if matches!(d.kind, Kind::Bool | Kind::Int) => d.kind,
            _ => Kind::Any,
        }
    } else {
        Kind::Any
    };
    let closures: Vec<V> = args.iter().filter(|a| matches!(deref(a), V::Closure(_) | V::Fn(_))).cloned().collect();
    if !closures.is_empty() && !matches!(name, "unwrap_or_else" | "or_else" | "ok_or_else" | "map_or_else") || matches!(name, "unwrap_or_else" | "or_else" | "map_or_else" | "for_each") {
        let what = format!("whether `{name}` on {} calls its closure ({})", u.origin, it.at(span));
        if it.choose(2, &what) == 0 {
            for c in closures {
                let n = match deref(&c) {
                    V::Closure(cl) => cl.code.inputs.len(),
                    _ => 1,
                };
                let cargs = vec![V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind: Kind::Any })); n];
                it.call_value(&c, cargs, span)?;
            }
        }
    }
    Ok(V::Unknown(Rc::new(Unknown { origin: u.origin.clone(), kind })))
}

fn char_method(it: &mut Interp, c: char, name: &str, args: Vec<V>, span: Span) -> R<V> {
    let a0 = args.first().map(deref);
    Ok(match name {
        "is_ascii_digit" => V::Bool(c.is_ascii_digit()),
        "is_ascii_hexdigit" => V::Bool(c.is_ascii_hexdigit()),
        "is_alphabetic" => V::Bool(c.is_alphabetic()),
        "is_ascii_alphabetic" => V::Bool(c.is_ascii_alphabetic()),
        "is_alphanumeric" => V::Bool(c.is_alphanumeric()),
        "is_ascii_alphanumeric" => V::Bool(c.is_ascii_alphanumeric()),
        "is_numeric" => V::Bool(c.is_numeric()),
        "is_whitespace" => V::Bool(c.is_whitespace()),
        "is_ascii_whitespace" => V::Bool(c.is_ascii_whitespace()),
        "is_uppercase" => V::Bool(c.is_uppercase()),
        "is_lowercase" => V::Bool(c.is_lowercase()),
        "is_ascii_uppercase" => V::Bool(c.is_ascii_uppercase()),
        "is_ascii_lowercase" => V::Bool(c.is_ascii_lowercase()),
        "is_ascii_punctuation" => V::Bool(c.is_ascii_punctuation()),
        "is_ascii" => V::Bool(c.is_ascii()),
        "is_control" => V::Bool(c.is_control()),
        "to_ascii_uppercase" => V::Char(c.to_ascii_uppercase()),
        "to_ascii_lowercase" => V::Char(c.to_ascii_lowercase()),
        "to_uppercase" => V::iter(c.to_uppercase().map(V::Char)),
        "to_lowercase" => V::iter(c.to_lowercase().map(V::Char)),
        "len_utf8" => V::Int(c.len_utf8() as i128),
        "to_digit" => match a0 {
            Some(V::Int(r)) => V::Option(c.to_digit(r as u32).map(|d| Rc::new(V::Int(d as i128)))),
            _ => return it.stop(span, "`to_digit` with a radix that is not known"),
        },
        "eq_ignore_ascii_case" => match a0 {
            Some(V::Char(d)) => V::Bool(c.eq_ignore_ascii_case(&d)),
            _ => return it.stop(span, "`eq_ignore_ascii_case`"),
        },
        _ => return it.stop(span, format!("method `{name}` of a char")),
    })
}

fn int_method(it: &mut Interp, i: i128, name: &str, args: Vec<V>, span: Span) -> R<V> {
    let a0 = args.first().map(deref);
    let other = match a0 {
        Some(V::Int(x)) => Some(x),
        Some(V::Unknown(u)) => return Ok(V::Unknown(u)),
        _ => None,
    };
    let need = |o: Option<i128>| o.ok_or(());
    let r: Result<V, ()> = (|| {
        Ok(match name {
            "pow" => V::Int(i.checked_pow(u32::try_from(need(other)?).map_err(|_| ())?).ok_or(())?),
            "abs" => V::Int(i.abs()),
            "signum" => V::Int(i.signum()),
            "min" => V::Int(i.min(need(other)?)),
            "max" => V::Int(i.max(need(other)?)),
            "abs_diff" => V::Int((i - need(other)?).abs()),
            "checked_add" => V::Option(i.checked_add(need(other)?).map(|v| Rc::new(V::Int(v)))),
            "checked_sub" => {
                let v = i - need(other)?;
                // Unsigned arithmetic is what build scripts check.
                V::Option(if v < 0 { None } else { Some(Rc::new(V::Int(v))) })
            }
            "checked_mul" => V::Option(i.checked_mul(need(other)?).map(|v| Rc::new(V::Int(v)))),
            "checked_div" => V::Option(i.checked_div(need(other)?).map(|v| Rc::new(V::Int(v)))),
            "saturating_sub" => V::Int((i - need(other)?).max(0)),
            "saturating_add" | "wrapping_add" => V::Int(i + need(other)?),
            "wrapping_sub" => V::Int(i - need(other)?),
            "saturating_mul" | "wrapping_mul" => V::Int(i * need(other)?),
            "rem_euclid" => V::Int(i.checked_rem_euclid(need(other)?).ok_or(())?),
            "div_euclid" => V::Int(i.checked_div_euclid(need(other)?).ok_or(())?),
            "count_ones" => V::Int(i.count_ones() as i128),
            "trailing_zeros" => V::Int(if i == 0 { 64 } else { i.trailing_zeros() as i128 }),
            "is_power_of_two" => V::Bool(i > 0 && (i & (i - 1)) == 0),
            "next_power_of_two" => V::Int(if i <= 1 { 1 } else { 1i128 << (128 - (i - 1).leading_zeros()) }),
            "clamp" => {
                let lo = need(other)?;
                let hi = match args.get(1).map(deref) {
                    Some(V::Int(h)) => h,
                    _ => return Err(()),
                };
                V::Int(i.clamp(lo, hi))
            }
            "is_positive" => V::Bool(i > 0),
            "is_negative" => V::Bool(i < 0),
            "hash" => return Err(()),
            _ => return Err(()),
        })
    })();
    match r {
        Ok(v) => Ok(v),
        Err(()) => it.stop(span, format!("method `{name}` of an integer")),
    }
}

/// The pattern argument of `split`, `contains`, `find`: the chars a hole must not hold.
enum StrPat {
    Str(String),
    Chars(Vec<char>),
    Closure(V),
}

fn str_pat(v: &V) -> Option<StrPat> {
    match deref(v) {
        V::Str(s) => Some(StrPat::Str(s.to_string())),
        V::Char(c) => Some(StrPat::Chars(vec![c])),
        V::Vec(items) => items.iter().map(|x| if let V::Char(c) = deref(x) { Some(c) } else { None }).collect::<Option<Vec<_>>>().map(StrPat::Chars),
        V::Closure(_) | V::Fn(_) => Some(StrPat::Closure(v.clone())),
        _ => None,
    }
}

fn str_method(it: &mut Interp, recv: V, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let segs = segs_of(&recv).unwrap_or_default();
    let lit: Option<String> = super::fmt::literal(&segs);
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    let unknown = |what: &str, kind: Kind| V::unknown(&format!("{what} of a string with unknown parts"), kind);
    let some_or_unknown = |b: Option<bool>| match b {
        Some(b) => V::Bool(b),
        None => V::unknown("a test of a string with unknown parts", Kind::Bool),
    };
    // Mutations.
    match name {
        "push_str" | "push" | "insert_str" | "insert" | "clear" | "truncate" | "pop" | "remove" | "set_extension" | "set_file_name" | "extend" => {
            let Some(p) = place else { return it.stop(span, format!("`{name}` on a string that is not a variable")) };
            let arg = a(0);
            let joined = if name == "push" && !matches!(arg, V::Char(_)) { it.path_join(&recv, &arg) } else { None };
            let new: V = match name {
                "push_str" => {
                    let mut s = segs.clone();
                    s.extend(segs_of(&arg).ok_or_else(|| Flow::Stop(format!("{}: `push_str` of {}", it.at(span), arg.kind_name())))?);
                    it.check_sym(&s, span)?;
                    V::from_segs(s)
                }
                "push" => match &arg {
                    V::Char(c) => {
                        let mut s = segs.clone();
                        s.push(Seg::Lit(c.to_string()));
                        V::from_segs(s)
                    }
                    // `PathBuf::push`.
                    _ => joined.ok_or_else(|| Flow::Stop(format!("{}: `push` of {}", it.at(span), arg.kind_name())))?,
                },
                "extend" => {
                    let items = it.into_items(arg.clone(), span)?;
                    let mut s = segs.clone();
                    for x in items {
                        match deref(&x) {
                            V::Char(c) => s.push(Seg::Lit(c.to_string())),
                            other => s.extend(segs_of(&other).unwrap_or_default()),
                        }
                    }
                    V::from_segs(s)
                }
                "clear" => V::str(""),
                _ => {
                    let Some(l) = &lit else { return it.stop(span, format!("`{name}` on a string with unknown parts")) };
                    let mut l = l.clone();
                    let ret;
                    match name {
                        "insert_str" | "insert" => {
                            let V::Int(i) = a(0) else { return it.stop(span, "an insert position that is not known") };
                            let ins = match a(1) {
                                V::Char(c) => c.to_string(),
                                V::Str(s) => s.to_string(),
                                _ => return it.stop(span, "an insert of unknown text"),
                            };
                            if !l.is_char_boundary(i as usize) {
                                return Err(Flow::Fail(format!("{}: insert out of bounds", it.at(span))));
                            }
                            l.insert_str(i as usize, &ins);
                            ret = V::Unit;
                        }
                        "truncate" => {
                            let V::Int(i) = a(0) else { return it.stop(span, "a length that is not known") };
                            if (i as usize) < l.len() {
                                l.truncate(i as usize);
                            }
                            ret = V::Unit;
                        }
                        "pop" => {
                            ret = V::Option(l.pop().map(|c| Rc::new(V::Char(c))));
                        }
                        "remove" => {
                            let V::Int(i) = a(0) else { return it.stop(span, "a position that is not known") };
                            if !l.is_char_boundary(i as usize) || i as usize >= l.len() {
                                return Err(Flow::Fail(format!("{}: remove out of bounds", it.at(span))));
                            }
                            ret = V::Char(l.remove(i as usize));
                        }
                        "set_extension" => {
                            let ext = a(0);
                            let Some(e) = ext.as_str() else { return it.stop(span, "an extension that is not known") };
                            l = with_extension(&l, e);
                            ret = V::Bool(true);
                        }
                        _ => {
                            let Some(n) = a(0).as_str().map(str::to_string) else { return it.stop(span, "a file name that is not known") };
                            l = match l.rfind('/') {
                                Some(i) => format!("{}{n}", &l[..=i]),
                                None => n,
                            };
                            ret = V::Unit;
                        }
                    }
                    it.write_place(&p, V::string(l), span)?;
                    return Ok(ret);
                }
            };
            it.write_place(&p, new, span)?;
            return Ok(V::Unit);
        }
        _ => {}
    }
    Ok(match name {
        "len" => match &lit {
            Some(l) => V::Int(l.len() as i128),
            None => unknown("the length", Kind::Int),
        },
        "is_empty" => match &lit {
            Some(l) => V::Bool(l.is_empty()),
            None => some_or_unknown(sym_eq(&segs, "").map(|b| b)),
        },
        "display" | "to_string_lossy" | "to_str" | "into_string" | "to_os_string" => match name {
            "to_str" => V::some(recv),
            "into_string" => V::ok(recv),
            _ => recv,
        },
        "trim" | "trim_start" | "trim_end" => match sym_trim(&segs, name != "trim_end", name != "trim_start") {
            Some(s) => V::from_segs(s),
            None => unknown("the trimmed text", Kind::Str),
        },
        "to_uppercase" | "to_ascii_uppercase" | "to_lowercase" | "to_ascii_lowercase" => {
            let up = name.contains("upper");
            V::from_segs(segs.iter().map(|s| match s {
                Seg::Lit(l) => Seg::Lit(if up { l.to_uppercase() } else { l.to_lowercase() }),
                Seg::Hole(c) => Seg::Hole(if matches!(c, Class::Int | Class::Date | Class::Version) { *c } else { Class::Any }),
            }).collect())
        }
        "starts_with" | "ends_with" | "contains" => match str_pat(&a(0)) {
            Some(StrPat::Str(p)) => some_or_unknown(match name {
                "starts_with" => sym_starts_with(&segs, &p),
                "ends_with" => sym_ends_with(&segs, &p),
                _ => sym_contains(&segs, &p),
            }),
            Some(StrPat::Chars(cs)) => match &lit {
                Some(l) => V::Bool(match name {
                    "starts_with" => l.starts_with(cs.as_slice()),
                    "ends_with" => l.ends_with(cs.as_slice()),
                    _ => l.contains(cs.as_slice()),
                }),
                None => {
                    let mut any = None;
                    for c in cs {
                        let p = c.to_string();
                        let r = match name {
                            "starts_with" => sym_starts_with(&segs, &p),
                            "ends_with" => sym_ends_with(&segs, &p),
                            _ => sym_contains(&segs, &p),
                        };
                        match r {
                            Some(true) => {
                                any = Some(true);
                                break;
                            }
                            None => any = None.or(any).or(None),
                            Some(false) => {
                                if any.is_none() {
                                    any = Some(false);
                                }
                            }
                        }
                    }
                    some_or_unknown(any)
                }
            },
            _ => return it.stop(span, format!("`{name}` with this pattern")),
        },
        "strip_prefix" | "strip_suffix" => {
            let Some(StrPat::Str(p)) = str_pat(&a(0)).or_else(|| if let V::Char(c) = a(0) { Some(StrPat::Str(c.to_string())) } else { None }) else {
                return it.stop(span, format!("`{name}` with this pattern"));
            };
            let test = if name == "strip_prefix" { sym_starts_with(&segs, &p) } else { sym_ends_with(&segs, &p) };
            match test {
                Some(false) => V::Option(None),
                Some(true) => {
                    let mut s = segs.clone();
                    if name == "strip_prefix" {
                        if let Some(Seg::Lit(l)) = s.first_mut() {
                            *l = l[p.len()..].to_string();
                        }
                    } else if let Some(Seg::Lit(l)) = s.last_mut() {
                        *l = l[..l.len() - p.len()].to_string();
                    }
                    V::some(V::from_segs(s))
                }
                None => unknown("a stripped string", Kind::Any),
            }
        }
        "split" | "rsplit" | "split_terminator" | "split_whitespace" | "split_ascii_whitespace" | "lines" => {
            // A multi-char separator: literal strings only.
            if let Some(StrPat::Str(p)) = str_pat(&a(0)).filter(|_| matches!(name, "split" | "rsplit" | "split_terminator")) {
                if p.chars().count() != 1 {
                    let Some(l) = &lit else { return Ok(unknown("the pieces", Kind::Any)) };
                    let mut v: Vec<String> = split_str(l, &p);
                    if name == "split_terminator" && v.last().is_some_and(|x| x.is_empty()) {
                        v.pop();
                    }
                    if name == "rsplit" {
                        v.reverse();
                    }
                    return Ok(V::iter(v.into_iter().map(V::string).collect::<Vec<_>>()));
                }
            }
            // Which chars separate, decided for every char the string may hold.
            let mut chars: std::collections::BTreeSet<char> = std::collections::BTreeSet::new();
            for sg in &segs {
                match sg {
                    Seg::Lit(l) => chars.extend(l.chars()),
                    Seg::Hole(c) => chars.extend(class_chars(*c).unwrap_or("").chars()),
                }
            }
            chars.extend(['\n', '\r']);
            let mut sep: std::collections::HashMap<char, bool> = std::collections::HashMap::new();
            for ch in chars {
                let b = match name {
                    "lines" => ch == '\n',
                    "split_whitespace" | "split_ascii_whitespace" => ch.is_whitespace(),
                    _ => match str_pat(&a(0)) {
                        Some(StrPat::Chars(cs)) => cs.contains(&ch),
                        Some(StrPat::Str(p)) => p.chars().next() == Some(ch),
                        Some(StrPat::Closure(f)) => {
                            let r = it.call_value(&f, vec![V::Char(ch)], span)?;
                            match deref(&r) {
                                V::Bool(b) => b,
                                _ => return it.stop(span, "a split predicate that is not known"),
                            }
                        }
                        None => return it.stop(span, format!("`{name}` with this pattern")),
                    },
                };
                sep.insert(ch, b);
            }
            let (mut pieces, rest) = sym_split_prefix(&segs, &|c| sep.get(&c).copied().unwrap_or(false));
            if name == "lines" {
                if !rest && matches!(pieces.last().map(|s| s.as_slice()), Some([])) {
                    pieces.pop();
                }
                for p in pieces.iter_mut() {
                    if let Some(Seg::Lit(l)) = p.last_mut() {
                        if l.ends_with('\r') {
                            l.pop();
                        }
                    }
                }
            }
            if matches!(name, "split_whitespace" | "split_ascii_whitespace") {
                pieces.retain(|p| !p.is_empty());
            }
            if name == "split_terminator" && !rest && matches!(pieces.last().map(|s| s.as_slice()), Some([])) {
                pieces.pop();
            }
            if name == "rsplit" {
                if rest {
                    return Ok(unknown("the pieces", Kind::Any));
                }
                pieces.reverse();
            }
            it.check_len(pieces.len(), span)?;
            let mut items: Vec<V> = pieces.into_iter().map(|p| V::from_segs(normalize(p))).collect();
            if rest {
                items.push(rest_marker());
            }
            V::iter(items)
        }
        "splitn" | "rsplitn" => {
            let (V::Int(n), Some(l)) = (a(0), &lit) else { return Ok(unknown("the pieces", Kind::Any)) };
            let p = match str_pat(&a(1)) {
                Some(StrPat::Str(p)) => p,
                Some(StrPat::Chars(cs)) if cs.len() == 1 => cs[0].to_string(),
                _ => return it.stop(span, format!("`{name}` with this pattern")),
            };
            let v: Vec<V> = if name == "splitn" { l.splitn(n as usize, p.as_str()).map(V::str).collect() } else { l.rsplitn(n as usize, p.as_str()).map(V::str).collect() };
            V::iter(v)
        }
        "split_once" | "rsplit_once" => {
            let p = match str_pat(&a(0)) {
                Some(StrPat::Str(p)) => p,
                Some(StrPat::Chars(cs)) if cs.len() == 1 => cs[0].to_string(),
                _ => return it.stop(span, format!("`{name}` with this pattern")),
            };
            match &lit {
                Some(l) => {
                    let r = if name == "split_once" { l.split_once(p.as_str()) } else { l.rsplit_once(p.as_str()) };
                    V::Option(r.map(|(x, y)| Rc::new(V::Tuple(Rc::new(vec![V::str(x), V::str(y)])))))
                }
                None => {
                    // Within the known prefix, for `split_once`.
                    let pre = known_prefix(&segs);
                    if name == "split_once" {
                        if let Some(i) = pre.find(p.as_str()) {
                            let mut rest = segs.clone();
                            if let Some(Seg::Lit(l)) = rest.first_mut() {
                                *l = l[i + p.len()..].to_string();
                            }
                            return Ok(V::some(V::Tuple(Rc::new(vec![V::str(&pre[..i]), V::from_segs(rest)]))));
                        }
                    }
                    unknown("a split", Kind::Any)
                }
            }
        }
        "find" if matches!(str_pat(&a(0)), Some(StrPat::Closure(_))) && lit.is_none() => {
            let f = a(0);
            let pre = known_prefix(&segs).to_string();
            for (i, c) in pre.char_indices() {
                let r = it.call_value(&f, vec![V::Char(c)], span)?;
                if it.decide(&r, span)? {
                    return Ok(V::some(V::Int(i as i128)));
                }
            }
            unknown("a position", Kind::Any)
        }
        "find" | "rfind" if matches!(str_pat(&a(0)), Some(StrPat::Closure(_))) && lit.is_some() => {
            let f = a(0);
            let l = lit.clone().unwrap();
            let mut idx: Vec<(usize, char)> = l.char_indices().collect();
            if name == "rfind" {
                idx.reverse();
            }
            for (i, c) in idx {
                let r = it.call_value(&f, vec![V::Char(c)], span)?;
                if it.decide(&r, span)? {
                    return Ok(V::some(V::Int(i as i128)));
                }
            }
            V::Option(None)
        }
        "find" | "rfind" => match (&lit, str_pat(&a(0))) {
            (Some(l), Some(StrPat::Str(p))) => V::Option((if name == "find" { l.find(p.as_str()) } else { l.rfind(p.as_str()) }).map(|i| Rc::new(V::Int(i as i128)))),
            (Some(l), Some(StrPat::Chars(cs))) => V::Option((if name == "find" { l.find(cs.as_slice()) } else { l.rfind(cs.as_slice()) }).map(|i| Rc::new(V::Int(i as i128)))),
            (None, Some(StrPat::Str(p))) if name == "find" && known_prefix(&segs).contains(p.as_str()) => V::some(V::Int(known_prefix(&segs).find(p.as_str()).unwrap() as i128)),
            _ => unknown("a position", Kind::Any),
        },
        "replace" | "replacen" => {
            let from = match a(0) {
                V::Str(s) => s.to_string(),
                V::Char(c) => c.to_string(),
                _ => return it.stop(span, "`replace` of a pattern that is not known"),
            };
            let to = segs_of(&a(1)).ok_or_else(|| Flow::Stop(format!("{}: `replace` with {}", it.at(span), a(1).kind_name())))?;
            let limit = if name == "replacen" { if let V::Int(n) = a(2) { Some(n as usize) } else { return it.stop(span, "a count that is not known") } } else { None };
            if from.is_empty() {
                return it.stop(span, "`replace` of an empty pattern");
            }
            // A hole could hold the pattern: then the result is not known.
            if segs.iter().any(|s| matches!(s, Seg::Hole(c) if from.chars().any(|ch| c.may_contain(ch)))) {
                return Ok(unknown("a replacement", Kind::Str));
            }
            let mut out: Sym = Vec::new();
            let mut count = 0usize;
            for s in &segs {
                match s {
                    Seg::Lit(l) => {
                        let mut rest = l.as_str();
                        while let Some(i) = rest.find(from.as_str()) {
                            if limit.is_some_and(|n| count >= n) {
                                break;
                            }
                            out.push(Seg::Lit(rest[..i].to_string()));
                            out.extend(to.iter().cloned());
                            rest = &rest[i + from.len()..];
                            count += 1;
                        }
                        out.push(Seg::Lit(rest.to_string()));
                    }
                    h => out.push(h.clone()),
                }
            }
            let out = normalize(out);
            it.check_sym(&out, span)?;
            V::from_segs(out)
        }
        "repeat" => match (&lit, a(0)) {
            (Some(l), V::Int(n)) => {
                let total = l.len().saturating_mul(n.max(0) as usize);
                if total > it.budget.max_string {
                    return it.stop(span, format!("a string of more than {} bytes", it.budget.max_string));
                }
                it.spend(total, span)?;
                V::string(l.repeat(n.max(0) as usize))
            }
            _ => unknown("a repetition", Kind::Str),
        },
        "parse" => parse_str(&segs, hint.or(None)),
        "chars" | "bytes" | "char_indices" => match &lit {
            Some(l) => {
                it.check_len(l.len(), span)?;
                match name {
                    "chars" => V::iter(l.chars().map(V::Char)),
                    "bytes" => V::iter(l.bytes().map(|b| V::Int(b as i128))),
                    _ => V::iter(l.char_indices().map(|(i, c)| V::Tuple(Rc::new(vec![V::Int(i as i128), V::Char(c)])))),
                }
            }
            None => unknown("the chars", Kind::Any),
        },
        "get" => match (&lit, a(0)) {
            (Some(l), V::Range(x, y, incl)) => {
                let (x, y) = range_bounds(x, y, incl, l.len());
                V::Option(l.get(x..y).map(|s| Rc::new(V::str(s))))
            }
            _ => unknown("a slice", Kind::Any),
        },
        "is_char_boundary" => match (&lit, a(0)) {
            (Some(l), V::Int(i)) => V::Bool(l.is_char_boundary(i as usize)),
            _ => unknown("a boundary test", Kind::Bool),
        },
        "eq_ignore_ascii_case" => match (&lit, a(0)) {
            (Some(l), V::Str(o)) => V::Bool(l.eq_ignore_ascii_case(&o)),
            _ => unknown("a comparison", Kind::Bool),
        },
        "is_ascii" => match &lit {
            Some(l) => V::Bool(l.is_ascii()),
            None => unknown("a test", Kind::Bool),
        },
        "matches" => match (&lit, str_pat(&a(0))) {
            (Some(l), Some(StrPat::Str(p))) => V::iter(l.matches(p.as_str()).map(V::str).collect::<Vec<_>>()),
            (Some(l), Some(StrPat::Chars(cs))) => V::iter(l.matches(cs.as_slice()).map(V::str).collect::<Vec<_>>()),
            _ => unknown("matches", Kind::Any),
        },
        "trim_start_matches" | "trim_left_matches" if lit.is_none() && matches!(a(0), V::Str(_)) => {
            // Within the known prefix.
            let p = a(0).as_str().unwrap_or("").to_string();
            let mut segs2 = segs.clone();
            if let (Some(Seg::Lit(l)), false) = (segs2.first_mut(), p.is_empty()) {
                let t = l.trim_start_matches(p.as_str()).to_string();
                let done = !t.is_empty();
                *l = t;
                if done {
                    return Ok(V::from_segs(normalize(segs2)));
                }
            }
            unknown("the trimmed text", Kind::Str)
        }
        "trim_matches" | "trim_start_matches" | "trim_end_matches" | "trim_left_matches" | "trim_right_matches" => {
            let Some(l) = &lit else { return Ok(unknown("the trimmed text", Kind::Str)) };
            let r = match str_pat(&a(0)) {
                Some(StrPat::Str(p)) => match name {
                    "trim_matches" => l.trim_start_matches(p.as_str()).trim_end_matches(p.as_str()).to_string(),
                    "trim_start_matches" | "trim_left_matches" => l.trim_start_matches(p.as_str()).to_string(),
                    _ => l.trim_end_matches(p.as_str()).to_string(),
                },
                Some(StrPat::Chars(cs)) => match name {
                    "trim_matches" => l.trim_matches(cs.as_slice()).to_string(),
                    "trim_start_matches" | "trim_left_matches" => l.trim_start_matches(cs.as_slice()).to_string(),
                    _ => l.trim_end_matches(cs.as_slice()).to_string(),
                },
                _ => return it.stop(span, format!("`{name}` with this pattern")),
            };
            V::string(r)
        }
        // Paths.
        "join" => match it.path_join(&recv, &a(0)) {
            Some(v) => v,
            None => return it.stop(span, format!("`join` of {}", a(0).kind_name())),
        },
        "with_extension" => match (&lit, a(0)) {
            (Some(l), V::Str(e)) => V::string(with_extension(l, &e)),
            _ => unknown("a path", Kind::Str),
        },
        "with_file_name" => match (&lit, a(0)) {
            (Some(l), V::Str(n)) => V::string(match l.rfind('/') {
                Some(i) => format!("{}{n}", &l[..=i]),
                None => n.to_string(),
            }),
            _ => unknown("a path", Kind::Str),
        },
        "file_name" | "file_stem" | "extension" | "parent" => match &lit {
            Some(l) => {
                let l = l.trim_end_matches('/');
                let (dir, base) = match l.rfind('/') {
                    Some(i) => (Some(&l[..i]), &l[i + 1..]),
                    None => (None, l),
                };
                match name {
                    "file_name" => V::Option((!base.is_empty() && base != "..").then(|| Rc::new(V::str(base)))),
                    "parent" => V::Option(match dir {
                        Some(d) => Some(Rc::new(V::str(if d.is_empty() { "/" } else { d }))),
                        None if !l.is_empty() => Some(Rc::new(V::str(""))),
                        None => None,
                    }),
                    _ => {
                        let (stem, ext) = match base.rfind('.') {
                            Some(0) | None => (base, None),
                            Some(i) => (&base[..i], Some(&base[i + 1..])),
                        };
                        if name == "file_stem" {
                            V::Option((!base.is_empty()).then(|| Rc::new(V::str(stem))))
                        } else {
                            V::Option(ext.map(|e| Rc::new(V::str(e))))
                        }
                    }
                }
            }
            None => {
                // The last component of `$OUT_DIR/x` style paths with unknown middles.
                unknown("a path component", Kind::Any)
            }
        },
        "exists" | "is_file" | "is_dir" | "try_exists" => {
            let loc = match it.locate(&recv, span)? {
                Ok(l) => l,
                Err(why) => return it.stop(span, format!("a test of {why}")),
            };
            let r = match it.exists(&loc) {
                Some((f, d)) => V::Bool(match name {
                    "is_file" => f,
                    "is_dir" => d,
                    _ => f || d,
                }),
                None => V::unknown(&format!("whether a file exists ({})", it.at(span)), Kind::Bool),
            };
            if name == "try_exists" { V::ok(r) } else { r }
        }
        "is_absolute" | "has_root" => match &lit {
            Some(l) => V::Bool(l.starts_with('/')),
            None => V::Bool(known_prefix(&segs).starts_with('/')),
        },
        "is_relative" => V::Bool(!known_prefix(&segs).starts_with('/') && lit.as_ref().is_some_and(|l| !l.starts_with('/'))),
        "components" | "iter" if lit.is_some() => {
            let l = lit.unwrap();
            V::iter(l.split('/').filter(|s| !s.is_empty()).map(V::str).collect::<Vec<_>>())
        }
        "canonicalize" => V::ok(recv),
        _ => return it.stop(span, format!("method `{name}` of a string")),
    })
}

fn with_extension(l: &str, e: &str) -> String {
    let (dir, base) = match l.rfind('/') {
        Some(i) => (&l[..=i], &l[i + 1..]),
        None => ("", l),
    };
    let stem = match base.rfind('.') {
        Some(0) | None => base,
        Some(i) => &base[..i],
    };
    if e.is_empty() { format!("{dir}{stem}") } else { format!("{dir}{stem}.{e}") }
}

/// `str::parse` into the hinted type (an integer when there is no hint).
fn parse_str(segs: &[Seg], hint: Option<&syn::Type>) -> V {
    let t = hint.and_then(|h| {
        let n = type_name(h)?;
        if matches!(n.as_str(), "Result" | "Option") { generic_arg(h).and_then(|g| type_name(&g)) } else { Some(n) }
    });
    let err = |what: &str| V::err(V::obj(Obj::Error(Rc::from(what))));
    let Some(l) = super::fmt::literal(segs) else {
        // Unknown parts: a number parse fails for sure if a known part is not a digit.
        let numeric = t.as_deref().is_none_or(|t| int_bits(t, 64).is_some() || t.starts_with("NonZero"));
        if numeric && segs.iter().any(|s| matches!(s, Seg::Lit(l) if l.chars().any(|c| !c.is_ascii_digit() && c != '+' && c != '-'))) {
            return err("invalid digit found in string");
        }
        return V::unknown("a number parsed from text with unknown parts", Kind::Any);
    };
    match t.as_deref() {
        Some("String") | Some("PathBuf") | Some("OsString") => V::ok(V::string(l)),
        Some("bool") => match l.as_str() {
            "true" => V::ok(V::Bool(true)),
            "false" => V::ok(V::Bool(false)),
            _ => err("provided string was not `true` or `false`"),
        },
        Some("char") => {
            let mut cs = l.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => V::ok(V::Char(c)),
                _ => err("invalid char"),
            }
        }
        Some("f32") | Some("f64") => match l.parse::<f64>() {
            Ok(f) => V::ok(V::Float(f)),
            Err(_) => err("invalid float literal"),
        },
        Some(t) if t.starts_with("NonZero") => match l.parse::<i128>() {
            Ok(0) | Err(_) => err("invalid number"),
            Ok(v) => V::ok(V::Int(v)),
        },
        Some(t) if int_bits(t, 64).is_some() => match l.parse::<i128>() {
            Ok(v) if fits(v, int_bits(t, 64).unwrap()) => V::ok(V::Int(v)),
            _ => err("invalid digit found in string"),
        },
        _ => match l.parse::<i128>() {
            Ok(v) => V::ok(V::Int(v)),
            Err(_) => match l.parse::<f64>() {
                Ok(f) if l.contains('.') => V::ok(V::Float(f)),
                _ => err("invalid digit found in string"),
            },
        },
    }
}

fn option_method(it: &mut Interp, o: Option<Rc<V>>, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let a = |i: usize| args.get(i).cloned().unwrap_or(V::Unit);
    let inner = o.as_ref().map(|x| (**x).clone());
    Ok(match (name, inner) {
        ("is_some", x) => V::Bool(x.is_some()),
        ("is_none", x) => V::Bool(x.is_none()),
        ("unwrap" | "expect" | "unwrap_unchecked", Some(x)) => x,
        ("unwrap" | "expect" | "unwrap_unchecked", None) => return Err(Flow::Fail(format!("{}: `{name}` on None", it.at(span)))),
        ("unwrap_or", x) => x.unwrap_or_else(|| a(0)),
        ("unwrap_or_default", x) => x.unwrap_or_else(|| default_of(hint)),
        ("unwrap_or_else", Some(x)) => x,
        ("unwrap_or_else", None) => it.call_value(&a(0), Vec::new(), span)?,
        ("map", Some(x)) => V::some(it.call_value(&a(0), vec![x], span)?),
        ("map" | "and_then" | "filter" | "filter_map" | "inspect", None) => V::Option(None),
        ("and_then", Some(x)) => it.call_value(&a(0), vec![x], span)?,
        ("inspect", Some(x)) => {
            it.call_value(&a(0), vec![x.clone()], span)?;
            V::some(x)
        }
        ("filter", Some(x)) => {
            let keep = it.call_value(&a(0), vec![x.clone()], span)?;
            if it.decide(&keep, span)? { V::some(x) } else { V::Option(None) }
        }
        ("is_some_and", Some(x)) => it.call_value(&a(0), vec![x], span)?,
        ("is_some_and", None) => V::Bool(false),
        ("is_none_or", Some(x)) => it.call_value(&a(0), vec![x], span)?,
        ("is_none_or", None) => V::Bool(true),
        ("or", Some(x)) | ("or_else", Some(x)) => V::some(x),
        ("or", None) => a(0),
        ("or_else", None) => it.call_value(&a(0), Vec::new(), span)?,
        ("xor", x) => match (x, deref(&a(0))) {
            (Some(x), V::Option(None)) => V::some(x),
            (None, V::Option(Some(y))) => V::some((*y).clone()),
            (_, V::Option(_)) => V::Option(None),
            _ => V::unknown("an option", Kind::Any),
        },
        ("and", Some(_)) => a(0),
        ("and", None) => V::Option(None),
        ("ok_or", Some(x)) | ("ok_or_else", Some(x)) => V::ok(x),
        ("ok_or", None) => V::err(a(0)),
        ("ok_or_else", None) => V::err(it.call_value(&a(0), Vec::new(), span)?),
        ("map_or", Some(x)) => it.call_value(&a(1), vec![x], span)?,
        ("map_or", None) => a(0),
        ("map_or_else", Some(x)) => it.call_value(&a(1), vec![x], span)?,
        ("map_or_else", None) => it.call_value(&a(0), Vec::new(), span)?,
        ("iter" | "into_iter", x) => V::iter(x),
        ("flatten", Some(x)) => x,
        ("flatten", None) => V::Option(None),
        ("zip", Some(x)) => match deref(&a(0)) {
            V::Option(Some(y)) => V::some(V::Tuple(Rc::new(vec![x, (*y).clone()]))),
            _ => V::Option(None),
        },
        ("zip", None) => V::Option(None),
        ("take", x) => {
            if let Some(p) = place {
                it.write_place(&p, V::Option(None), span)?;
            }
            V::Option(x.map(Rc::new))
        }
        ("replace", x) => {
            if let Some(p) = place {
                it.write_place(&p, V::some(a(0)), span)?;
            }
            V::Option(x.map(Rc::new))
        }
        ("insert" | "get_or_insert", _) => {
            let Some(p) = place else { return it.stop(span, format!("`{name}` on an option that is not a variable")) };
            it.write_place(&p, V::some(a(0)), span)?;
            a(0)
        }
        ("get_or_insert_with", x) => {
            let Some(p) = place else { return it.stop(span, "`get_or_insert_with` on an option that is not a variable") };
            match x {
                Some(v) => v,
                None => {
                    let v = it.call_value(&a(0), Vec::new(), span)?;
                    it.write_place(&p, V::some(v.clone()), span)?;
                    v
                }
            }
        }
        ("as_mut", _) => match place {
            Some(p) => V::Option(o.map(|_| Rc::new(V::Ref(Rc::new(p))))),
            None => V::Option(o),
        },
        _ => return it.stop(span, format!("method `{name}` of an Option")),
    })
}

fn result_method(it: &mut Interp, r: Result<Rc<V>, Rc<V>>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let a = |i: usize| args.get(i).cloned().unwrap_or(V::Unit);
    let ok = r.as_ref().ok().map(|x| (**x).clone());
    let err = r.as_ref().err().map(|x| (**x).clone());
    Ok(match name {
        "is_ok" => V::Bool(ok.is_some()),
        "is_err" => V::Bool(err.is_some()),
        "ok" => V::Option(ok.map(Rc::new)),
        "err" => V::Option(err.map(Rc::new)),
        "unwrap" | "expect" => match ok {
            Some(x) => x,
            None => return Err(Flow::Fail(format!("{}: `{name}` on an error", it.at(span)))),
        },
        "unwrap_err" | "expect_err" => match err {
            Some(x) => x,
            None => return Err(Flow::Fail(format!("{}: `{name}` on Ok", it.at(span)))),
        },
        "unwrap_or" => ok.unwrap_or_else(|| a(0)),
        "unwrap_or_default" => ok.unwrap_or_else(|| default_of(hint)),
        "unwrap_or_else" => match ok {
            Some(x) => x,
            None => it.call_value(&a(0), vec![err.unwrap()], span)?,
        },
        "map" => match ok {
            Some(x) => V::ok(it.call_value(&a(0), vec![x], span)?),
            None => V::Result(r.clone()),
        },
        "map_err" => match err {
            Some(e) => V::err(it.call_value(&a(0), vec![e], span)?),
            None => V::Result(r.clone()),
        },
        "and_then" => match ok {
            Some(x) => it.call_value(&a(0), vec![x], span)?,
            None => V::Result(r.clone()),
        },
        "or_else" => match err {
            Some(e) => it.call_value(&a(0), vec![e], span)?,
            None => V::Result(r.clone()),
        },
        "or" => if ok.is_some() { V::Result(r.clone()) } else { a(0) },
        "and" => if ok.is_some() { a(0) } else { V::Result(r.clone()) },
        "map_or" => match ok {
            Some(x) => it.call_value(&a(1), vec![x], span)?,
            None => a(0),
        },
        "map_or_else" => match ok {
            Some(x) => it.call_value(&a(1), vec![x], span)?,
            None => it.call_value(&a(0), vec![err.unwrap()], span)?,
        },
        "is_ok_and" => match ok {
            Some(x) => it.call_value(&a(0), vec![x], span)?,
            None => V::Bool(false),
        },
        "is_err_and" => match err {
            Some(e) => it.call_value(&a(0), vec![e], span)?,
            None => V::Bool(false),
        },
        "iter" | "into_iter" => V::iter(ok),
        "inspect" => {
            if let Some(x) = &ok {
                it.call_value(&a(0), vec![x.clone()], span)?;
            }
            V::Result(r.clone())
        }
        "inspect_err" => {
            if let Some(e) = &err {
                it.call_value(&a(0), vec![e.clone()], span)?;
            }
            V::Result(r.clone())
        }
        _ => return it.stop(span, format!("method `{name}` of a Result")),
    })
}

fn vec_method(it: &mut Interp, recv: V, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    let items: Vec<V> = match &recv {
        V::Vec(v) => v.to_vec(),
        V::Bytes(b) => b.iter().map(|x| V::Int(*x as i128)).collect(),
        _ => Vec::new(),
    };
    let bytes = matches!(recv, V::Bytes(_));
    let rebuild = |items: Vec<V>| -> V {
        if bytes {
            match bytes_of(&items) {
                Some(b) => V::Bytes(Rc::new(b)),
                None => V::vec(items),
            }
        } else {
            V::vec(items)
        }
    };
    // Mutations.
    if matches!(name, "push" | "push_back" | "insert" | "remove" | "pop" | "pop_back" | "pop_front" | "push_front" | "clear" | "truncate" | "extend" | "extend_from_slice" | "append" | "sort" | "sort_unstable" | "sort_by" | "sort_unstable_by" | "sort_by_key" | "sort_unstable_by_key" | "dedup" | "dedup_by_key" | "retain" | "reverse" | "drain" | "swap" | "fill" | "resize" | "iter_mut" | "get_mut" | "last_mut" | "first_mut" | "index_mut" | "write_all" | "write" | "flush") {
        let Some(p) = place else { return it.stop(span, format!("`{name}` on a list that is not a variable")) };
        let mut v = items.clone();
        let mut ret = V::Unit;
        match name {
            "push" | "push_back" => {
                it.check_len(v.len() + 1, span)?;
                v.push(a(0));
            }
            "push_front" => v.insert(0, a(0)),
            "insert" => {
                let V::Int(i) = a(0) else { return it.stop(span, "an insert position that is not known") };
                if i as usize > v.len() {
                    return Err(Flow::Fail(format!("{}: insert out of bounds", it.at(span))));
                }
                v.insert(i as usize, a(1));
            }
            "remove" => {
                let V::Int(i) = a(0) else { return it.stop(span, "a position that is not known") };
                if i as usize >= v.len() {
                    return Err(Flow::Fail(format!("{}: remove out of bounds", it.at(span))));
                }
                ret = v.remove(i as usize);
            }
            "pop" | "pop_back" => ret = V::Option(v.pop().map(Rc::new)),
            "pop_front" => ret = V::Option(if v.is_empty() { None } else { Some(Rc::new(v.remove(0))) }),
            "clear" => v.clear(),
            "truncate" => {
                let V::Int(i) = a(0) else { return it.stop(span, "a length that is not known") };
                v.truncate(i as usize);
            }
            "extend" | "extend_from_slice" | "append" | "write_all" | "write" => {
                let more = match a(0) {
                    V::Str(s) if bytes || name.starts_with("write") => s.bytes().map(|b| V::Int(b as i128)).collect(),
                    other => it.into_items(other, span)?,
                };
                it.check_len(v.len() + more.len(), span)?;
                if name == "write" {
                    ret = V::ok(V::Int(more.len() as i128));
                } else if name == "write_all" {
                    ret = V::ok(V::Unit);
                }
                v.extend(more);
            }
            "flush" => ret = V::ok(V::Unit),
            "sort" | "sort_unstable" => {
                let mut err = false;
                v.sort_by(|x, y| value_cmp(x, y).unwrap_or_else(|| {
                    err = true;
                    std::cmp::Ordering::Equal
                }));
                if err {
                    return it.stop(span, "a sort of values that are not known");
                }
            }
            "sort_by" | "sort_unstable_by" | "sort_by_key" | "sort_unstable_by_key" => {
                // Insertion sort calling the closure: stable, as `sort_by`.
                let f = a(0);
                let by_key = name.ends_with("key");
                let mut out: Vec<V> = Vec::new();
                for x in v.drain(..) {
                    let mut pos = out.len();
                    while pos > 0 {
                        let o = if by_key {
                            let kx = it.call_value(&f, vec![x.clone()], span)?;
                            let ky = it.call_value(&f, vec![out[pos - 1].clone()], span)?;
                            value_cmp(&ky, &kx)
                        } else {
                            let r = it.call_value(&f, vec![out[pos - 1].clone(), x.clone()], span)?;
                            as_ordering(&r)
                        };
                        match o {
                            Some(std::cmp::Ordering::Greater) => pos -= 1,
                            Some(_) => break,
                            None => return it.stop(span, "a sort by a comparison that is not known"),
                        }
                    }
                    out.insert(pos, x);
                }
                v = out;
            }
            "dedup" => v.dedup_by(|x, y| value_eq(x, y) == Some(true)),
            "dedup_by_key" => {
                let f = a(0);
                let mut out: Vec<V> = Vec::new();
                let mut last_key: Option<V> = None;
                for x in v.drain(..) {
                    let k = it.call_value(&f, vec![x.clone()], span)?;
                    if last_key.as_ref().is_none_or(|l| value_eq(l, &k) != Some(true)) {
                        out.push(x);
                    }
                    last_key = Some(k);
                }
                v = out;
            }
            "retain" => {
                let f = a(0);
                let mut out = Vec::new();
                for x in v.drain(..) {
                    let keep = it.call_value(&f, vec![x.clone()], span)?;
                    if it.decide(&keep, span)? {
                        out.push(x);
                    }
                }
                v = out;
            }
            "reverse" => v.reverse(),
            "drain" => {
                let (x, y) = match a(0) {
                    V::Range(x, y, incl) => range_bounds(x, y, incl, v.len()),
                    _ => (0, v.len()),
                };
                if y > v.len() || x > y {
                    return Err(Flow::Fail(format!("{}: drain out of bounds", it.at(span))));
                }
                ret = V::iter(v.drain(x..y).collect::<Vec<_>>());
            }
            "swap" => {
                let (V::Int(i), V::Int(j)) = (a(0), a(1)) else { return it.stop(span, "positions that are not known") };
                if i as usize >= v.len() || j as usize >= v.len() {
                    return Err(Flow::Fail(format!("{}: swap out of bounds", it.at(span))));
                }
                v.swap(i as usize, j as usize);
            }
            "fill" => {
                let x = a(0);
                for s in v.iter_mut() {
                    *s = x.clone();
                }
            }
            "resize" => {
                let V::Int(n) = a(0) else { return it.stop(span, "a length that is not known") };
                it.new_items(n.max(0) as usize, span)?;
                v.resize(n.max(0) as usize, a(1));
            }
            "iter_mut" => {
                let n = v.len();
                return Ok(V::iter((0..n).map(|i| V::Ref(Rc::new(Place::Index(Rc::new(p.clone()), i))))));
            }
            "index_mut" => {
                let V::Int(i) = a(0) else { return it.stop(span, "a position that is not known") };
                if i < 0 || i as usize >= v.len() {
                    return Err(Flow::Fail(format!("{}: index out of bounds", it.at(span))));
                }
                return Ok(V::Ref(Rc::new(Place::Index(Rc::new(p), i as usize))));
            }
            "get_mut" => {
                let V::Int(i) = a(0) else { return it.stop(span, "a position that is not known") };
                return Ok(if (i as usize) < v.len() { V::some(V::Ref(Rc::new(Place::Index(Rc::new(p), i as usize)))) } else { V::Option(None) });
            }
            "last_mut" | "first_mut" => {
                if v.is_empty() {
                    return Ok(V::Option(None));
                }
                let i = if name == "last_mut" { v.len() - 1 } else { 0 };
                return Ok(V::some(V::Ref(Rc::new(Place::Index(Rc::new(p), i)))));
            }
            _ => unreachable!(),
        }
        it.write_place(&p, rebuild(v), span)?;
        return Ok(ret);
    }
    Ok(match name {
        "len" => V::Int(items.len() as i128),
        "is_empty" => V::Bool(items.is_empty()),
        "iter" | "into_iter" => V::iter(items),
        "first" => V::Option(items.first().cloned().map(Rc::new)),
        "last" => V::Option(items.last().cloned().map(Rc::new)),
        "get" => match a(0) {
            V::Int(i) => V::Option(usize::try_from(i).ok().and_then(|i| items.get(i)).cloned().map(Rc::new)),
            V::Range(x, y, incl) => {
                let (x, y) = range_bounds(x, y, incl, items.len());
                V::Option(items.get(x..y).map(|s| Rc::new(rebuild(s.to_vec()))))
            }
            _ => V::unknown("an element at an unknown position", Kind::Any),
        },
        "contains" => {
            let x = a(0);
            let mut r = Some(false);
            for y in &items {
                match value_eq(y, &x) {
                    Some(true) => {
                        r = Some(true);
                        break;
                    }
                    None => r = None,
                    Some(false) => {}
                }
            }
            match r {
                Some(b) => V::Bool(b),
                None => V::unknown("a membership test of an unknown value", Kind::Bool),
            }
        }
        "join" | "concat" => {
            let sep = if name == "join" { segs_of(&a(0)).unwrap_or_default() } else { Vec::new() };
            let mut out: Sym = Vec::new();
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.extend(sep.iter().cloned());
                }
                match segs_of(&deref(x)) {
                    Some(s) => out.extend(s),
                    None => match deref(x) {
                        V::Vec(_) if name == "concat" => return Ok(V::vec(items.iter().flat_map(|v| if let V::Vec(i) = deref(v) { i.to_vec() } else { Vec::new() }).collect())),
                        _ => {
                            let _ = inner_kind(x);
                            return it.stop(span, format!("`{name}` of a list of {}", deref(x).kind_name()));
                        }
                    },
                }
            }
            let out = normalize(out);
            it.check_sym(&out, span)?;
            V::from_segs(out)
        }
        "starts_with" | "ends_with" => {
            let other = it.into_items(a(0), span)?;
            if other.len() > items.len() {
                V::Bool(false)
            } else {
                let slice = if name == "starts_with" { &items[..other.len()] } else { &items[items.len() - other.len()..] };
                match value_eq(&V::vec(slice.to_vec()), &V::vec(other)) {
                    Some(b) => V::Bool(b),
                    None => V::unknown("a comparison", Kind::Bool),
                }
            }
        }
        "binary_search" => {
            let x = a(0);
            let mut lo = 0usize;
            let mut hi = items.len();
            let mut found = None;
            while lo < hi {
                let mid = (lo + hi) / 2;
                match value_cmp(&items[mid], &x) {
                    Some(std::cmp::Ordering::Less) => lo = mid + 1,
                    Some(std::cmp::Ordering::Greater) => hi = mid,
                    Some(std::cmp::Ordering::Equal) => {
                        found = Some(mid);
                        break;
                    }
                    None => return it.stop(span, "a search with values that are not known"),
                }
            }
            match found {
                Some(i) => V::ok(V::Int(i as i128)),
                None => V::err(V::Int(lo as i128)),
            }
        }
        "binary_search_by" | "binary_search_by_key" => {
            let (f, key) = if name == "binary_search_by" { (a(0), None) } else { (a(1), Some(a(0))) };
            let mut lo = 0usize;
            let mut hi = items.len();
            let mut found = None;
            while lo < hi {
                it.step(span)?;
                let mid = (lo + hi) / 2;
                let o = match &key {
                    None => {
                        let r = it.call_value(&f, vec![items[mid].clone()], span)?;
                        as_ordering(&r)
                    }
                    Some(k) => {
                        let r = it.call_value(&f, vec![items[mid].clone()], span)?;
                        value_cmp(&r, k)
                    }
                };
                match o {
                    Some(std::cmp::Ordering::Less) => lo = mid + 1,
                    Some(std::cmp::Ordering::Greater) => hi = mid,
                    Some(std::cmp::Ordering::Equal) => {
                        found = Some(mid);
                        break;
                    }
                    None => return it.stop(span, "a search by a comparison that is not known"),
                }
            }
            match found {
                Some(i) => V::ok(V::Int(i as i128)),
                None => V::err(V::Int(lo as i128)),
            }
        }
        "windows" | "chunks" | "chunks_exact" => {
            let V::Int(n) = a(0) else { return it.stop(span, "a size that is not known") };
            let n = n.max(1) as usize;
            let out: Vec<V> = if name == "windows" {
                items.windows(n).map(|w| rebuild(w.to_vec())).collect()
            } else if name == "chunks" {
                items.chunks(n).map(|w| rebuild(w.to_vec())).collect()
            } else {
                items.chunks_exact(n).map(|w| rebuild(w.to_vec())).collect()
            };
            V::iter(out)
        }
        "split_first" | "split_last" => {
            if items.is_empty() {
                V::Option(None)
            } else if name == "split_first" {
                V::some(V::Tuple(Rc::new(vec![items[0].clone(), rebuild(items[1..].to_vec())])))
            } else {
                let n = items.len();
                V::some(V::Tuple(Rc::new(vec![items[n - 1].clone(), rebuild(items[..n - 1].to_vec())])))
            }
        }
        "split_at" => {
            let V::Int(i) = a(0) else { return it.stop(span, "a position that is not known") };
            let i = i as usize;
            if i > items.len() {
                return Err(Flow::Fail(format!("{}: split_at out of bounds", it.at(span))));
            }
            V::Tuple(Rc::new(vec![rebuild(items[..i].to_vec()), rebuild(items[i..].to_vec())]))
        }
        "repeat" => {
            let V::Int(n) = a(0) else { return it.stop(span, "a count that is not known") };
            it.new_items(items.len().saturating_mul(n.max(0) as usize), span)?;
            let mut out = Vec::new();
            for _ in 0..n.max(0) {
                out.extend(items.iter().cloned());
            }
            rebuild(out)
        }
        "capacity" => V::Int(items.len() as i128),
        "to_ascii_uppercase" | "to_ascii_lowercase" if bytes => {
            let b = bytes_of(&items).unwrap_or_default();
            V::Bytes(Rc::new(if name.contains("upper") { b.to_ascii_uppercase() } else { b.to_ascii_lowercase() }))
        }
        _ => iter_method(it, VecDeque::from(items), name, args, span, hint)?,
    })
}

fn inner_kind(_: &V) {}

fn map_method(it: &mut Interp, recv: V, place: Option<Place>, name: &str, args: Vec<V>, span: Span) -> R<V> {
    let V::Map(m, set) = &recv else { unreachable!() };
    let set = *set;
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    let key = |v: &V, it: &Interp| key_of(v).ok_or_else(|| Flow::Stop(format!("{}: a map key that is not known", it.at(span))));
    if matches!(name, "entry" | "get_mut") {
        let Some(p) = place else { return it.stop(span, format!("`{name}` on a map that is not a variable")) };
        let k = key(&a(0), it)?;
        let present = m.contains_key(&k);
        return Ok(if name == "entry" {
            // An entry: the map's place and the key, with the key's value kept.
            V::Tuple(Rc::new(vec![V::str("\u{0}entry"), V::Ref(Rc::new(p)), a(0), V::Bool(present)]))
        } else if present {
            V::some(V::Ref(Rc::new(Place::MapKey(Rc::new(p), k))))
        } else {
            V::Option(None)
        });
    }
    if matches!(name, "insert" | "remove" | "clear" | "extend" | "retain" | "append") {
        let Some(p) = place else { return it.stop(span, format!("`{name}` on a map that is not a variable")) };
        let mut mm = (**m).clone();
        let mut ret = V::Unit;
        match name {
            "insert" => {
                let k = key(&a(0), it)?;
                let v = if set { V::Unit } else { a(1) };
                let old = mm.insert(k, (a(0), v));
                it.check_len(mm.len(), span)?;
                ret = if set { V::Bool(old.is_none()) } else { V::Option(old.map(|(_, v)| Rc::new(v))) };
            }
            "remove" => {
                let k = key(&a(0), it)?;
                let old = mm.remove(&k);
                ret = if set { V::Bool(old.is_some()) } else { V::Option(old.map(|(_, v)| Rc::new(v))) };
            }
            "clear" => mm.clear(),
            "extend" | "append" => {
                for x in it.into_items(a(0), span)? {
                    let (k, v) = if set {
                        (x.clone(), V::Unit)
                    } else {
                        match deref(&x) {
                            V::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                            _ => return it.stop(span, "`extend` of a map with items that are not pairs"),
                        }
                    };
                    mm.insert(key(&k, it)?, (k, v));
                }
                it.check_len(mm.len(), span)?;
            }
            "retain" => {
                let f = a(0);
                let mut out = BTreeMap::new();
                for (k, (kv, v)) in mm {
                    let args = if set { vec![kv.clone()] } else { vec![kv.clone(), v.clone()] };
                    let keep = it.call_value(&f, args, span)?;
                    if it.decide(&keep, span)? {
                        out.insert(k, (kv, v));
                    }
                }
                mm = out;
            }
            _ => unreachable!(),
        }
        it.write_place(&p, V::Map(Rc::new(mm), set), span)?;
        return Ok(ret);
    }
    Ok(match name {
        "len" => V::Int(m.len() as i128),
        "is_empty" => V::Bool(m.is_empty()),
        "get" => {
            let k = key(&a(0), it)?;
            V::Option(m.get(&k).map(|(_, v)| Rc::new(v.clone())))
        }
        "contains_key" | "contains" => {
            let k = key(&a(0), it)?;
            V::Bool(m.contains_key(&k))
        }
        "keys" => V::iter(m.values().map(|(k, _)| k.clone()).collect::<Vec<_>>()),
        "values" | "into_values" => V::iter(m.values().map(|(_, v)| v.clone()).collect::<Vec<_>>()),
        "iter" | "into_iter" => V::iter(m.values().map(|(k, v)| if set { k.clone() } else { V::Tuple(Rc::new(vec![k.clone(), v.clone()])) }).collect::<Vec<_>>()),
        _ => return it.stop(span, format!("method `{name}` of a map")),
    })
}

/// Collect items into the hinted collection.
fn collect(it: &mut Interp, items: Vec<V>, hint: Option<&syn::Type>, span: Span) -> R<V> {
    let t = hint.and_then(type_name).unwrap_or_default();
    match t.as_str() {
        "String" | "OsString" | "PathBuf" => {
            let mut segs = Vec::new();
            for x in items {
                match deref(&x) {
                    V::Char(c) => segs.push(Seg::Lit(c.to_string())),
                    other => segs.extend(segs_of(&other).ok_or_else(|| Flow::Stop(format!("{}: a string collected from {}", it.at(span), other.kind_name())))?),
                }
            }
            let segs = normalize(segs);
            it.check_sym(&segs, span)?;
            Ok(V::from_segs(segs))
        }
        "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" => {
            let set = t.ends_with("Set");
            let mut m = BTreeMap::new();
            for x in items {
                let (k, v) = if set {
                    (x.clone(), V::Unit)
                } else {
                    match deref(&x) {
                        V::Tuple(t) if t.len() == 2 => (t[0].clone(), t[1].clone()),
                        _ => return it.stop(span, "a map collected from items that are not pairs"),
                    }
                };
                let Some(key) = key_of(&k) else { return it.stop(span, "a map key that is not known") };
                m.insert(key, (k, v));
            }
            Ok(V::Map(Rc::new(m), set))
        }
        "Result" | "Option" => {
            let inner = hint.and_then(generic_arg);
            let mut oks = Vec::new();
            for x in items {
                match deref(&x) {
                    V::Result(Ok(v)) | V::Option(Some(v)) => oks.push((*v).clone()),
                    e @ V::Result(Err(_)) => return Ok(e),
                    V::Option(None) => return Ok(V::Option(None)),
                    _ => return it.stop(span, "a Result collected from values that are not known"),
                }
            }
            let v = collect(it, oks, inner.as_ref(), span)?;
            Ok(if t == "Result" { V::ok(v) } else { V::some(v) })
        }
        _ => Ok(V::vec(items)),
    }
}

fn iter_method(it: &mut Interp, mut items: VecDeque<V>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    // An iterator with an unknown rest: what the known items decide, or unknown.
    if items.back().is_some_and(is_rest) {
        items.pop_back();
        let a0 = args.first().map(deref);
        match name {
            "map" | "filter" | "filter_map" | "enumerate" | "inspect" | "skip_while" | "peekable" | "by_ref" | "fuse" | "cloned" | "copied" | "iter" | "into_iter" => {
                let r = iter_method(it, items, name, args, span, hint)?;
                if let V::Iter(i) = &r {
                    i.borrow_mut().push_back(rest_marker());
                }
                return Ok(r);
            }
            "skip" => {
                let Some(V::Int(n)) = a0 else { return it.stop(span, "`skip` of a count that is not known") };
                let n = (n.max(0) as usize).min(items.len());
                let mut v: VecDeque<V> = items.into_iter().skip(n).collect();
                v.push_back(rest_marker());
                return Ok(V::Iter(Rc::new(std::cell::RefCell::new(v))));
            }
            "take" | "nth" => {
                let Some(V::Int(n)) = a0 else { return it.stop(span, format!("`{name}` of a count that is not known")) };
                let n = n.max(0) as usize;
                if name == "nth" {
                    return Ok(match items.get(n) {
                        Some(x) => V::some(x.clone()),
                        None => V::unknown("an item of an iterator of unknown length", Kind::Any),
                    });
                }
                if n <= items.len() {
                    return Ok(V::iter(items.into_iter().take(n).collect::<Vec<_>>()));
                }
                items.push_back(rest_marker());
                return Ok(V::Iter(Rc::new(std::cell::RefCell::new(items))));
            }
            "find" | "position" | "any" | "all" | "find_map" => {
                let r = iter_method(it, items, name, args, span, hint)?;
                let decided = match (&r, name) {
                    (V::Option(Some(_)), _) => true,
                    (V::Bool(true), "any") | (V::Bool(false), "all") => true,
                    _ => false,
                };
                return Ok(if decided { r } else { V::unknown("a search through an iterator of unknown length", Kind::Any) });
            }
            _ => return Ok(V::unknown("the result over an iterator of unknown length", Kind::Any)),
        }
    }
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    let call1 = |it: &mut Interp, f: &V, x: V| it.call_value(f, vec![x], span);
    Ok(match name {
        "iter" | "into_iter" | "by_ref" | "peekable" | "fuse" | "cloned" | "copied" => V::iter(items),
        "next" => V::Option(items.pop_front().map(Rc::new)),
        "count" => V::Int(items.len() as i128),
        "last" => V::Option(items.pop_back().map(Rc::new)),
        "nth" => {
            let V::Int(n) = a(0) else { return it.stop(span, "`nth` of a position that is not known") };
            V::Option(items.into_iter().nth(n as usize).map(Rc::new))
        }
        "rev" => V::iter(items.into_iter().rev().collect::<Vec<_>>()),
        "skip" | "take" | "step_by" => {
            let V::Int(n) = a(0) else { return it.stop(span, format!("`{name}` of a count that is not known")) };
            let n = n.max(0) as usize;
            match name {
                "skip" => V::iter(items.into_iter().skip(n).collect::<Vec<_>>()),
                "take" => V::iter(items.into_iter().take(n).collect::<Vec<_>>()),
                _ => V::iter(items.into_iter().step_by(n.max(1)).collect::<Vec<_>>()),
            }
        }
        "enumerate" => V::iter(items.into_iter().enumerate().map(|(i, x)| V::Tuple(Rc::new(vec![V::Int(i as i128), x]))).collect::<Vec<_>>()),
        "zip" => {
            let other = it.into_items(a(0), span)?;
            V::iter(items.into_iter().zip(other).map(|(x, y)| V::Tuple(Rc::new(vec![x, y]))).collect::<Vec<_>>())
        }
        "chain" => {
            let other = it.into_items(a(0), span)?;
            items.extend(other);
            it.check_len(items.len(), span)?;
            V::iter(items)
        }
        "map" | "inspect" => {
            let f = a(0);
            let mut out = Vec::with_capacity(items.len());
            for x in items {
                let r = call1(it, &f, x.clone())?;
                out.push(if name == "map" { r } else { x });
            }
            V::iter(out)
        }
        "for_each" => {
            let f = a(0);
            for x in items {
                call1(it, &f, x)?;
            }
            V::Unit
        }
        "filter" | "skip_while" | "take_while" => {
            let f = a(0);
            let mut out = Vec::new();
            let mut skipping = true;
            for x in items {
                if name == "skip_while" && !skipping {
                    out.push(x);
                    continue;
                }
                let r = call1(it, &f, x.clone())?;
                let b = it.decide(&r, span)?;
                match name {
                    "filter" => {
                        if b {
                            out.push(x)
                        }
                    }
                    "skip_while" => {
                        if !b {
                            skipping = false;
                            out.push(x);
                        }
                    }
                    _ => {
                        if !b {
                            break;
                        }
                        out.push(x);
                    }
                }
            }
            V::iter(out)
        }
        "filter_map" | "flat_map" | "flatten" => {
            let f = a(0);
            let mut out = Vec::new();
            for x in items {
                let r = if name == "flatten" { x } else { call1(it, &f, x)? };
                if name == "filter_map" {
                    match deref(&r) {
                        V::Option(Some(v)) => out.push((*v).clone()),
                        V::Option(None) => {}
                        V::Unknown(u) => {
                            let what = format!("{} ({})", u.origin, it.at(span));
                            if it.choose(2, &what) == 0 {
                                out.push(V::Unknown(u));
                            }
                        }
                        other => return it.stop(span, format!("`filter_map` returning {}", other.kind_name())),
                    }
                } else {
                    out.extend(it.into_items(r, span)?);
                    it.check_len(out.len(), span)?;
                }
            }
            V::iter(out)
        }
        "find" | "position" | "rposition" | "any" | "all" | "find_map" => {
            let f = a(0);
            let seq: Vec<(usize, V)> = if name == "rposition" { items.into_iter().enumerate().collect::<Vec<_>>().into_iter().rev().collect() } else { items.into_iter().enumerate().collect() };
            for (i, x) in seq {
                let r = call1(it, &f, x.clone())?;
                if name == "find_map" {
                    match deref(&r) {
                        V::Option(Some(v)) => return Ok(V::some((*v).clone())),
                        V::Option(None) => continue,
                        _ => return it.stop(span, "`find_map` returning a value that is not known"),
                    }
                }
                let b = it.decide(&r, span)?;
                match name {
                    "find" if b => return Ok(V::some(x)),
                    "position" | "rposition" if b => return Ok(V::some(V::Int(i as i128))),
                    "any" if b => return Ok(V::Bool(true)),
                    "all" if !b => return Ok(V::Bool(false)),
                    _ => {}
                }
            }
            match name {
                "any" => V::Bool(false),
                "all" => V::Bool(true),
                _ => V::Option(None),
            }
        }
        "fold" => {
            let mut acc = a(0);
            let f = a(1);
            for x in items {
                acc = it.call_value(&f, vec![acc, x], span)?;
            }
            acc
        }
        "sum" | "product" => {
            let mut acc = V::Int(if name == "sum" { 0 } else { 1 });
            for x in items {
                acc = it.arith(if name == "sum" { "+" } else { "*" }, acc, x, span)?;
            }
            acc
        }
        "min" | "max" => {
            let mut best: Option<V> = None;
            for x in items {
                best = Some(match best {
                    None => x,
                    Some(b) => match value_cmp(&x, &b) {
                        Some(o) => {
                            if (name == "max" && o != std::cmp::Ordering::Less) || (name == "min" && o == std::cmp::Ordering::Less) { x } else { b }
                        }
                        None => return Ok(V::unknown("a minimum or maximum of unknown values", Kind::Any)),
                    },
                });
            }
            V::Option(best.map(Rc::new))
        }
        "min_by_key" | "max_by_key" | "min_by" | "max_by" => {
            let f = a(0);
            let mut best: Option<(V, V)> = None;
            for x in items {
                let k = if name.ends_with("key") { call1(it, &f, x.clone())? } else { x.clone() };
                best = Some(match best {
                    None => (x, k),
                    Some((bx, bk)) => {
                        let o = if name.ends_with("key") {
                            value_cmp(&k, &bk)
                        } else {
                            let r = it.call_value(&f, vec![x.clone(), bx.clone()], span)?;
                            as_ordering(&r)
                        };
                        match o {
                            Some(o) => {
                                let take = if name.starts_with("max") { o != std::cmp::Ordering::Less } else { o == std::cmp::Ordering::Less };
                                if take { (x, k) } else { (bx, bk) }
                            }
                            None => return Ok(V::unknown("a minimum or maximum of unknown values", Kind::Any)),
                        }
                    }
                });
            }
            V::Option(best.map(|(x, _)| Rc::new(x)))
        }
        "collect" => collect(it, items.into_iter().collect(), hint, span)?,
        "unzip" => {
            let mut l = Vec::new();
            let mut r = Vec::new();
            for x in items {
                match deref(&x) {
                    V::Tuple(t) if t.len() == 2 => {
                        l.push(t[0].clone());
                        r.push(t[1].clone());
                    }
                    _ => return it.stop(span, "`unzip` of items that are not pairs"),
                }
            }
            V::Tuple(Rc::new(vec![V::vec(l), V::vec(r)]))
        }
        "partition" => {
            let f = a(0);
            let mut l = Vec::new();
            let mut r = Vec::new();
            for x in items {
                let b = call1(it, &f, x.clone())?;
                if it.decide(&b, span)? {
                    l.push(x)
                } else {
                    r.push(x)
                }
            }
            V::Tuple(Rc::new(vec![V::vec(l), V::vec(r)]))
        }
        "join" => vec_method(it, V::vec(items.into_iter().collect()), None, "join", args, span, hint)?,
        "len" => V::Int(items.len() as i128),
        "sorted" => return it.stop(span, "`sorted` (itertools)"),
        _ => return it.stop(span, format!("iterator method `{name}`")),
    })
}

fn obj_method(it: &mut Interp, o: Rc<Obj>, place: Option<Place>, name: &str, args: Vec<V>, span: Span, hint: Option<&syn::Type>) -> R<V> {
    let a = |i: usize| args.get(i).cloned().map(|v| deref(&v)).unwrap_or(V::Unit);
    match &*o {
        Obj::Command(cmd) => {
            let mut c = (**cmd).clone();
            let builder = match name {
                "arg" => {
                    c.args.push(a(0));
                    true
                }
                "args" => {
                    let items = it.into_items(a(0), span)?;
                    c.args.extend(items);
                    true
                }
                "env" => {
                    c.env.push((a(0), Some(a(1))));
                    true
                }
                "envs" => true,
                "env_remove" => {
                    c.env.push((a(0), None));
                    true
                }
                "env_clear" | "current_dir" | "stdin" | "stdout" | "stderr" => true,
                _ => false,
            };
            if builder {
                let nv = V::obj(Obj::Command(Box::new(c)));
                return match place {
                    Some(p) => {
                        it.write_place(&p, nv, span)?;
                        Ok(V::Ref(Rc::new(p)))
                    }
                    None => Ok(nv),
                };
            }
            match name {
                "output" | "status" | "spawn" => it.run_command(&c, name, span),
                "get_program" => Ok(c.program.clone()),
                "get_args" => Ok(V::iter(c.args.clone())),
                _ => it.stop(span, format!("`Command::{name}`")),
            }
        }
        Obj::Child(cmd) => {
            let get = |k: &str| cmd.env.iter().find(|(n, _)| n.as_str() == Some(k)).and_then(|(_, v)| v.clone()).unwrap_or(V::Unit);
            match name {
                "wait" => Ok(V::ok(V::obj(Obj::Status(get("\u{0}success"))))),
                "wait_with_output" => Ok(V::ok(V::obj(Obj::Output { success: get("\u{0}success"), stdout: get("\u{0}stdout"), stderr: V::unknown("a program's error output", Kind::Str) }))),
                "kill" => Ok(V::ok(V::Unit)),
                "id" => Ok(V::unknown("a process id", Kind::Int)),
                _ => it.stop(span, format!("`Child::{name}`")),
            }
        }
        Obj::ChildStdin => match name {
            "write_all" | "flush" => Ok(V::ok(V::Unit)),
            "write" => Ok(V::ok(V::unknown("bytes written", Kind::Int))),
            "take" => Ok(V::some(V::obj(Obj::ChildStdin))),
            _ => it.stop(span, format!("`ChildStdin::{name}`")),
        },
        Obj::Status(s) => match name {
            "success" => Ok(s.clone()),
            "code" => Ok(match s {
                V::Bool(true) => V::some(V::Int(0)),
                _ => V::unknown("an exit code", Kind::Any),
            }),
            _ => it.stop(span, format!("`ExitStatus::{name}`")),
        },
        Obj::Output { .. } => it.stop(span, format!("`Output::{name}`")),
        Obj::File(h) => match name {
            "write_all" | "write" => {
                let text = match a(0) {
                    V::Bytes(b) => match String::from_utf8((*b).clone()) {
                        Ok(s) => vec![Seg::Lit(s)],
                        Err(_) => vec![Seg::Hole(Class::Any)],
                    },
                    other => segs_of(&other).ok_or_else(|| Flow::Stop(format!("{}: a write of {}", it.at(span), other.kind_name())))?,
                };
                let n = if let Some(l) = super::fmt::literal(&text) { V::Int(l.len() as i128) } else { V::unknown("bytes written", Kind::Int) };
                let at: Rc<str> = Rc::from(it.at(span).as_str());
                it.write_file_handle(*h, text, at, span)?;
                Ok(V::ok(if name == "write" { n } else { V::Unit }))
            }
            "flush" | "sync_all" | "sync_data" => Ok(V::ok(V::Unit)),
            "into_inner" => Ok(V::ok(V::Obj(o.clone()))),
            _ => it.stop(span, format!("`File::{name}`")),
        },
        Obj::Stdout | Obj::Stderr => match name {
            "lock" => Ok(V::Obj(o.clone())),
            "flush" => Ok(V::ok(V::Unit)),
            "write_all" | "write" => {
                let text = match a(0) {
                    V::Bytes(b) => vec![Seg::Lit(String::from_utf8_lossy(&b).into_owned())],
                    other => segs_of(&other).unwrap_or(vec![Seg::Hole(Class::Any)]),
                };
                if matches!(&*o, Obj::Stdout) {
                    let at: Rc<str> = Rc::from(it.at(span).as_str());
                    it.write_stdout(text, at);
                }
                Ok(V::ok(V::Unit))
            }
            _ => it.stop(span, format!("`Stdout::{name}`")),
        },
        Obj::Reader(content) => match name {
            "lines" => {
                let segs = segs_of(content).unwrap_or_default();
                let Some(l) = super::fmt::literal(&segs) else { return Ok(V::unknown("lines of a file with unknown parts", Kind::Any)) };
                it.check_len(l.lines().count(), span)?;
                Ok(V::iter(l.lines().map(|x| V::ok(V::str(x))).collect::<Vec<_>>()))
            }
            "read_to_string" => {
                let V::Ref(p) = args.first().cloned().unwrap_or(V::Unit) else { return it.stop(span, "`read_to_string` into a value that is not a variable") };
                let cur = deref_place(&p);
                let mut s = segs_of(&cur).unwrap_or_default();
                s.extend(segs_of(content).unwrap_or_default());
                it.write_place(&p, V::from_segs(s), span)?;
                Ok(V::ok(V::Int(0)))
            }
            "bytes" => Ok(V::iter(match deref(content) {
                V::Str(s) => s.bytes().map(|b| V::ok(V::Int(b as i128))).collect::<Vec<_>>(),
                _ => return it.stop(span, "bytes of a file with unknown parts"),
            })),
            _ => it.stop(span, format!("`BufReader::{name}`")),
        },
        Obj::IoError(k) => match name {
            "kind" => Ok(V::obj(Obj::IoError(k.clone()))),
            "raw_os_error" => Ok(V::Option(None)),
            _ => it.stop(span, format!("`io::Error::{name}`")),
        },
        Obj::VarError(_) | Obj::Error(_) => match name {
            "kind" => Ok(V::Obj(o.clone())),
            "is_dir" => Ok(V::Bool(matches!(&*o, Obj::Error(e) if &**e == "dir"))),
            "is_file" => Ok(V::Bool(matches!(&*o, Obj::Error(e) if &**e == "file"))),
            "len" => Ok(V::unknown("a file's length", Kind::Int)),
            _ => it.stop(span, format!("method `{name}` of an error")),
        },
        Obj::DirEntry(p) => match name {
            "path" => Ok(V::str(p)),
            "file_name" => Ok(V::str(p.rsplit('/').next().unwrap_or(p))),
            "file_type" | "metadata" => {
                let loc = it.locate(&V::str(p), span)?;
                let dir = matches!(&loc, Ok(Loc::Pkg(r)) if it.pkg_is_dir(r));
                Ok(V::ok(V::obj(Obj::Error(Rc::from(if dir { "dir" } else { "file" })))))
            }
            _ => it.stop(span, format!("`DirEntry::{name}`")),
        },
        Obj::Formatter(..) | Obj::DebugBuilder { .. } => it.formatter_method(&o, place.as_ref(), name, args, span),
        Obj::AutoCfg | Obj::Version(..) | Obj::Channel(_) | Obj::VersionMeta => super::deps::method(it, o.clone(), name, args, span, hint),
        Obj::ThreadBuilder => match name {
            "name" | "stack_size" => Ok(V::Obj(o.clone())),
            "spawn" => {
                let r = it.call_value(&a(0), Vec::new(), span)?;
                Ok(V::ok(V::obj(Obj::Join(r))))
            }
            _ => it.stop(span, format!("`thread::Builder::{name}`")),
        },
        Obj::Join(r) => match name {
            "join" => Ok(V::ok(r.clone())),
            "is_finished" => Ok(V::Bool(true)),
            _ => it.stop(span, format!("`JoinHandle::{name}`")),
        },
        Obj::OpenOptions(append, truncate) => {
            let (mut ap, mut tr) = (*append, *truncate);
            match name {
                "read" | "write" | "create" | "create_new" => {}
                "append" => ap = matches!(a(0), V::Bool(true)),
                "truncate" => tr = matches!(a(0), V::Bool(true)),
                "open" => return it.open_for_write(&a(0), tr && !ap, span),
                _ => return it.stop(span, format!("`OpenOptions::{name}`")),
            }
            let nv = V::obj(Obj::OpenOptions(ap, tr));
            match place {
                Some(p) => {
                    it.write_place(&p, nv, span)?;
                    Ok(V::Ref(Rc::new(p)))
                }
                None => Ok(nv),
            }
        }
    }
}

/// Entry API: `map.entry(k).or_insert(v)` and friends, whose receiver is the tuple
/// `entry` returns.
pub fn entry_method(it: &mut Interp, recv: &V, name: &str, args: &[V], span: Span) -> R<Option<V>> {
    let V::Tuple(t) = deref(recv) else { return Ok(None) };
    if t.len() != 4 || t[0].as_str() != Some("\u{0}entry") {
        return Ok(None);
    }
    let V::Ref(map_place) = &t[1] else { return Ok(None) };
    let kv = t[2].clone();
    let present = matches!(t[3], V::Bool(true));
    let Some(k) = key_of(&kv) else { return it.stop(span, "a map key that is not known").map(Some) };
    let value = match name {
        "or_insert" => args.first().cloned().unwrap_or(V::Unit),
        "or_insert_with" => {
            if present {
                V::Unit
            } else {
                let f = args.first().cloned().unwrap_or(V::Unit);
                it.call_value(&f, Vec::new(), span)?
            }
        }
        "or_default" => V::Unit,
        "and_modify" => {
            if present {
                let f = args.first().cloned().unwrap_or(V::Unit);
                let p = Place::MapKey(map_place.clone(), k.clone());
                it.call_value(&f, vec![V::Ref(Rc::new(p))], span)?;
            }
            return Ok(Some(recv.clone()));
        }
        _ => return Ok(None),
    };
    if !present {
        let value = if name == "or_default" { V::Int(0) } else { value };
        it.modify_place(map_place, span, &mut |slot| {
            let mut cur = std::mem::replace(slot, V::Unit);
            if let V::Map(m, _) = &mut cur {
                Rc::make_mut(m).insert(k.clone(), (kv.clone(), value.clone()));
            }
            *slot = cur;
            Ok(())
        })?;
    }
    Ok(Some(V::Ref(Rc::new(Place::MapKey(map_place.clone(), k)))))
}
