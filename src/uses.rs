//! The capability uses of a workspace's own code, and the ones a change adds.
//!
//! A grant says what kind of thing a crate may do (`process.spawn`); once it is granted, a new
//! place that does it passes the ratchet unseen. For the workspace's members (the code a pull
//! request changes), this module lists every *use*: a finding of the surface (file, line,
//! capability, the API the code calls, the chain down to the primitive), with the item it sits
//! in and its source line; and, given the uses at a base revision, the ones the change adds.
//!
//! # Matching
//!
//! A use is identified by its **key**: the member crate (by name), the capability, the scope
//! (run time or build time), the API the code calls (`std::process::Command::new`,
//! `tokio::fs::write`) and the primitive the chain ends at (`std::fs::write`; the API itself for
//! a direct use). The places in between are left out on purpose: a dependency that reorganises
//! its internals moves no use of the member. File, line, column and the enclosing item are not
//! part of the key either, so a refactor that shifts lines, moves a call to another function
//! or another file of the same crate, or renames the function around it, adds nothing.
//!
//! Per key the change adds `max(0, head - base)` uses. Which of the head's uses are the new
//! ones is decided by pairing each head use with a base use of the same key, the closest first:
//! the same file, item and source text; then the same item and text; the same file and text;
//! the same text (the call moved); the same item (the line was edited); then any. What is left
//! unpaired is new. A use added next to an identical one in the same function is still one new
//! use (the count grew); a use that only moved is none.
//!
//! The source text compared is the line, trimmed and with runs of whitespace as one space.
//! Items come from parsing the member's files (under [`crate::surface::guard`], like the
//! analysis); a file that does not parse gives no items, which only makes pairing less precise.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;

use crate::surface::{Capability, Finding, Scope, Surface};

/// One capability use in a member's code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    /// The member package.
    pub krate: String,
    pub version: String,
    pub finding: Finding,
    /// The item the use is in: `main`, `Config::load`, `<Cache as Drop>::drop`, `util::run`.
    pub item: Option<String>,
    /// The source line, trimmed.
    pub source: Option<String>,
}

/// The uses a change adds, as `check --base` and the action report them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewUses {
    /// The revision compared with, as the user named it (or a short commit id).
    pub since: String,
    /// Sorted by crate, file, line and column; empty when `note` says why nothing was compared.
    pub uses: Vec<Use>,
    /// Why the uses could not be listed (the base could not be analysed, the workspace is new).
    pub note: Option<String>,
}

impl Use {
    /// (crate, capability, scope, API, primitive): what a use is, wherever it is.
    fn key(&self) -> (&str, Capability, Scope, &str, &str) {
        let f = &self.finding;
        let primitive = f.chain.last().map_or(f.path.as_str(), |h| &*h.path);
        (&self.krate, f.capability, f.scope, &f.path, primitive)
    }

    /// The trimmed source with whitespace runs as one space.
    fn text(&self) -> String {
        self.source.as_deref().map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default()
    }
}

/// Every capability use in the members of a workspace: each member crate's findings in
/// `surface` (once, however many programs compile it), with the enclosing item and source line
/// read from the member's directory in `members` (package name → directory). Sorted.
pub fn member_uses(surface: &Surface, members: &BTreeMap<String, PathBuf>) -> Vec<Use> {
    let mut found: BTreeSet<(String, String, Finding)> = BTreeSet::new();
    for p in &surface.programs {
        for c in p.crates.iter().filter(|c| members.contains_key(&c.name)) {
            for f in c.findings.iter() {
                found.insert((c.name.clone(), c.version.clone(), f.clone()));
            }
        }
    }
    // Each member file with a use, read and parsed once.
    let files: Vec<(String, String)> = found.iter().map(|(k, _, f)| (k.clone(), f.file.clone())).collect::<BTreeSet<_>>().into_iter().collect();
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let read = crate::surface::guard::parallel_map(&files, jobs, |(krate, file)| read_file(&members[krate], file));
    let by_file: HashMap<(String, String), FileInfo> = files.into_iter().zip(read).collect();
    found
        .into_iter()
        .map(|(krate, version, finding)| {
            let info = by_file.get(&(krate.clone(), finding.file.clone()));
            let item = info.and_then(|i| i.item_at(finding.line));
            let source = info.and_then(|i| i.lines.get((finding.line as usize).wrapping_sub(1))).map(|l| l.trim().to_string());
            Use { krate, version, finding, item, source }
        })
        .collect()
}

/// The members of the workspace at `root`: package name → directory.
pub fn members(root: &Path) -> Result<BTreeMap<String, PathBuf>, crate::workspace::WorkspaceError> {
    let ws = crate::workspace::Workspace::load(root)?;
    Ok(ws.members().map(|m| (m.id.name.clone(), m.dir.clone())).collect())
}

/// The uses the workspace whose head surface is `head` (its members read from `head_root`)
/// adds since `commit`: the workspace at `dir` (relative to the repository root, `""` for the
/// root) is written from `commit`'s git objects into a temporary directory, analysed for
/// `target` with `fetch`, and its members' uses compared with the head's. `since` names the
/// revision in messages. When the base cannot be had or analysed, `note` says why.
#[allow(clippy::too_many_arguments)]
pub fn added_since(
    repo: &crate::git::Repo,
    commit: &str,
    dir: &str,
    since: &str,
    head_root: &Path,
    head: &Surface,
    target: &str,
    fetch: &crate::registry::FetchOptions,
) -> NewUses {
    let mut out = NewUses { since: since.to_string(), ..NewUses::default() };
    let base_dir = match crate::depsdiff::materialize(repo, commit, dir) {
        Ok(Some(d)) => d,
        Ok(None) => {
            out.note = Some(format!("the workspace does not exist at {since}: everything in it is new"));
            return out;
        }
        Err(e) => {
            out.note = Some(format!("the workspace at {since} could not be read: {e}"));
            return out;
        }
    };
    let config = crate::surface::engine::Config { root: base_dir.root.clone(), target: target.to_string(), fetch: fetch.clone() };
    let base = match crate::surface::engine::run(&config) {
        Ok(a) => a,
        Err(e) => {
            out.note = Some(format!("the workspace at {since} could not be analysed: {}", crate::message::chain(&e)));
            return out;
        }
    };
    let (base_members, head_members) = match (members(&base_dir.root), members(head_root)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            out.note = Some(format!("the workspace's members could not be read: {}", crate::message::chain(&e)));
            return out;
        }
    };
    out.uses = added(&member_uses(&base.surface, &base_members), &member_uses(head, &head_members));
    out
}

/// The uses of `head` that `base` does not account for (see the module's "Matching"), sorted
/// by crate, file, line and column.
pub fn added(base: &[Use], head: &[Use]) -> Vec<Use> {
    type Key<'a> = (&'a str, Capability, Scope, &'a str, &'a str);
    let mut groups: BTreeMap<Key, (Vec<&Use>, Vec<&Use>)> = BTreeMap::new();
    for u in base {
        groups.entry(u.key()).or_default().0.push(u);
    }
    for u in head {
        groups.entry(u.key()).or_default().1.push(u);
    }
    let mut out: Vec<Use> = Vec::new();
    for (_, (b, h)) in groups {
        if h.len() <= b.len() {
            // Every head use pairs with a base use (the last tier pairs any two).
            continue;
        }
        out.extend(unpaired(&b, &h).into_iter().cloned());
    }
    out.sort_by(|a, b| {
        (&a.krate, &a.finding.file, a.finding.line, a.finding.column, &a.finding).cmp(&(&b.krate, &b.finding.file, b.finding.line, b.finding.column, &b.finding))
    });
    out
}

/// The head uses of one key left when each is paired with a base use, closest first.
fn unpaired<'a>(base: &[&'a Use], head: &[&'a Use]) -> Vec<&'a Use> {
    type Tier = fn(&Use, &str) -> String;
    let tiers: [Tier; 6] = [
        |u, t| format!("{}\u{0}{}\u{0}{t}", u.finding.file, u.item.as_deref().unwrap_or("")),
        |u, t| format!("{}\u{0}{t}", u.item.as_deref().unwrap_or("")),
        |u, t| format!("{}\u{0}{t}", u.finding.file),
        |_, t| t.to_string(),
        |u, _| u.item.clone().unwrap_or_default(),
        |_, _| String::new(),
    ];
    let base_text: Vec<String> = base.iter().map(|u| u.text()).collect();
    let head_text: Vec<String> = head.iter().map(|u| u.text()).collect();
    let mut base_free = vec![true; base.len()];
    let mut head_free = vec![true; head.len()];
    for tier in tiers {
        // The free base uses by this tier's key, each list in order (the earliest pairs first).
        let mut by: HashMap<String, std::collections::VecDeque<usize>> = HashMap::new();
        for (i, u) in base.iter().enumerate().filter(|(i, _)| base_free[*i]) {
            by.entry(tier(u, &base_text[i])).or_default().push_back(i);
        }
        for (j, u) in head.iter().enumerate() {
            if !head_free[j] {
                continue;
            }
            if let Some(i) = by.get_mut(&tier(u, &head_text[j])).and_then(|q| q.pop_front()) {
                base_free[i] = false;
                head_free[j] = false;
            }
        }
    }
    head.iter().zip(head_free).filter(|(_, free)| *free).map(|(u, _)| *u).collect()
}

/// One member file: its lines and the line span of each item.
#[derive(Default)]
struct FileInfo {
    lines: Vec<String>,
    /// (first line, last line, name), outermost items only.
    items: Vec<(u32, u32, String)>,
}

impl FileInfo {
    /// The innermost item whose lines hold `line`.
    fn item_at(&self, line: u32) -> Option<String> {
        self.items.iter().filter(|(a, b, _)| *a <= line && line <= *b).min_by_key(|(a, b, _)| b - a).map(|(_, _, n)| n.clone())
    }
}

/// Read and parse one member file (on a guard thread: admitted first, like the analysis).
fn read_file(dir: &Path, rel: &str) -> FileInfo {
    // Package-relative and `/`-separated; nothing that leads out of the package is read.
    if rel.split('/').any(|c| c.is_empty() || c == ".." || c == ".") || rel.starts_with('/') {
        return FileInfo::default();
    }
    let path = dir.join(rel);
    if crate::fsio::contained(dir, &path).is_err() {
        return FileInfo::default();
    }
    let Ok(text) = crate::fsio::read_text(&path, crate::package::FILE_CAP, "a source file") else {
        return FileInfo::default();
    };
    let mut info = FileInfo { lines: text.lines().map(str::to_string).collect(), items: Vec::new() };
    if crate::surface::guard::admit(text.as_bytes()).is_ok() {
        if let Ok(file) = syn::parse_file(&text) {
            collect(&file.items, "", &mut info.items);
        }
        proc_macro2::extra::invalidate_current_thread_spans();
    }
    info
}

fn lines_of(s: proc_macro2::Span) -> (u32, u32) {
    (s.start().line as u32, s.end().line as u32)
}

fn type_name(t: &syn::Type) -> String {
    match t {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "_".to_string(),
    }
}

fn collect(items: &[syn::Item], prefix: &str, out: &mut Vec<(u32, u32, String)>) {
    for item in items {
        let (a, b) = lines_of(item.span());
        match item {
            syn::Item::Fn(f) => out.push((a, b, format!("{prefix}{}", f.sig.ident))),
            syn::Item::Const(c) => out.push((a, b, format!("{prefix}{}", c.ident))),
            syn::Item::Static(s) => out.push((a, b, format!("{prefix}{}", s.ident))),
            syn::Item::Impl(i) => {
                let ty = type_name(&i.self_ty);
                let owner = match &i.trait_ {
                    Some((_, path, _)) => format!("<{ty} as {}>", path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()),
                    None => ty,
                };
                for it in &i.items {
                    let (a, b) = lines_of(it.span());
                    let name = match it {
                        syn::ImplItem::Fn(f) => f.sig.ident.to_string(),
                        syn::ImplItem::Const(c) => c.ident.to_string(),
                        _ => continue,
                    };
                    out.push((a, b, format!("{prefix}{owner}::{name}")));
                }
            }
            syn::Item::Trait(t) => {
                for it in &t.items {
                    if let syn::TraitItem::Fn(f) = it {
                        let (a, b) = lines_of(it.span());
                        out.push((a, b, format!("{prefix}{}::{}", t.ident, f.sig.ident)));
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect(inner, &format!("{prefix}{}::", m.ident), out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::Hop;

    fn u(file: &str, line: u32, path: &str, item: &str, source: &str) -> Use {
        Use {
            krate: "app".into(),
            version: "0.1.0".into(),
            finding: Finding { capability: Capability::ProcessSpawn, scope: Scope::Runtime, file: file.into(), line, column: 5, path: path.into(), chain: Vec::new(), expanded_from: None, through_trait: false },
            item: Some(item.into()),
            source: Some(source.into()),
        }
    }

    const CURL: &str = "let _ = std::process::Command::new(\"curl\").status();";
    const GIT: &str = "let _ = std::process::Command::new(\"git\").status();";

    #[test]
    fn a_moved_call_is_not_new() {
        let base = vec![u("src/main.rs", 3, "std::process::Command::new", "main", GIT)];
        // Lines shifted, moved to another function in another file, reindented.
        let head = vec![u("src/run.rs", 40, "std::process::Command::new", "run::spawn_git", &format!("    {GIT}"))];
        assert!(added(&base, &head).is_empty());
        // And the same with its line edited too: the count did not grow.
        let head = vec![u("src/run.rs", 40, "std::process::Command::new", "spawn", "Command::new(\"git\").spawn()?;")];
        assert!(added(&base, &head).is_empty());
    }

    #[test]
    fn a_second_call_of_a_granted_api_is_new_and_the_right_one_is_named() {
        let base = vec![u("src/main.rs", 3, "std::process::Command::new", "main", GIT)];
        let head = vec![
            u("src/main.rs", 4, "std::process::Command::new", "main", CURL),
            u("src/main.rs", 5, "std::process::Command::new", "main", GIT),
        ];
        let new = added(&base, &head);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].finding.line, 4, "the curl call, not the git one that moved down a line");
    }

    #[test]
    fn another_api_or_another_primitive_is_new() {
        let base = [u("src/main.rs", 3, "std::fs::write", "main", "std::fs::write(p, b)?;")];
        let mut other = u("src/main.rs", 3, "std::fs::remove_dir_all", "main", "std::fs::remove_dir_all(\"/home\")?;");
        other.finding.capability = Capability::FsWrite;
        let mut same = base[0].clone();
        same.finding.capability = Capability::FsWrite;
        let base = vec![same.clone()];
        assert_eq!(added(&base, &[same.clone(), other.clone()]), vec![other]);
        // The same API now reaching another primitive through a dependency is a new use; the
        // same primitive through other internal hops is not.
        let hop = |p: &str, line: u32| Hop { path: p.into(), krate: "dep".into(), version: "1.0.0".into(), file: "src/lib.rs".into(), line };
        let mut via = u("src/main.rs", 9, "dep::save", "main", "dep::save()?;");
        via.finding.chain = vec![hop("dep::inner", 3), hop("std::fs::write", 10)];
        let mut rerouted = via.clone();
        rerouted.finding.chain = vec![hop("dep::other_inner", 30), hop("std::fs::write", 44)];
        assert!(added(&[via.clone()], &[rerouted]).is_empty());
        let mut elsewhere = via.clone();
        elsewhere.finding.chain = vec![hop("dep::inner", 3), hop("std::fs::remove_dir_all", 12)];
        assert_eq!(added(&[via], &[elsewhere.clone()]), vec![elsewhere]);
    }

    #[test]
    fn items_are_found_in_impls_traits_and_modules() {
        let text = "fn main() {\n    x();\n}\nimpl Foo {\n    fn load(&self) {\n        y();\n    }\n}\nimpl Drop for Foo {\n    fn drop(&mut self) {}\n}\nmod util {\n    pub fn run() {\n        z();\n    }\n}\n";
        let file = syn::parse_file(text).unwrap();
        let mut info = FileInfo::default();
        collect(&file.items, "", &mut info.items);
        assert_eq!(info.item_at(2).as_deref(), Some("main"));
        assert_eq!(info.item_at(6).as_deref(), Some("Foo::load"));
        assert_eq!(info.item_at(10).as_deref(), Some("<Foo as Drop>::drop"));
        assert_eq!(info.item_at(14).as_deref(), Some("util::run"));
        assert_eq!(info.item_at(8), None);
    }
}
