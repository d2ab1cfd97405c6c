//! The graph a lockfile itself records: each `[[package]]` entry's `dependencies`, which are
//! the edges cargo resolved for every target and feature the workspace enables.
//!
//! Used where no manifest is at hand (`deps-diff --old/--new`) to say where a package sits
//! (which local packages depend on it directly, one shortest path to it) and, in every mode,
//! which changed package brought each package the change adds (an edge the head's entry has and
//! the base's entry of the same package had not). No IO: lockfile text in.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use crate::lockfile::LockedPackage;
use crate::workspace::PackageId;

/// One lockfile as a graph.
#[derive(Debug, Clone, Default)]
pub struct LockView {
    pub packages: Vec<PackageId>,
    /// Per package: the packages its entry depends on.
    pub deps: Vec<Vec<usize>>,
}

impl LockView {
    /// The graph of a lockfile's text; `None` when it does not resolve (a dependency that names
    /// no entry): the review then has no lockfile edges, never wrong ones.
    pub fn parse(text: &str, origin: &str) -> Option<LockView> {
        let g = crate::workspace::load_lock(text, Path::new(origin)).ok()?;
        Some(LockView { packages: g.packages, deps: g.deps })
    }

    pub fn index_of(&self, p: &LockedPackage) -> Option<usize> {
        let v = p.version.to_string();
        self.packages.iter().position(|x| x.name == p.name && x.version == v && x.source == p.source)
    }

    /// The package names the entry of `p` depends on.
    pub fn dep_names(&self, p: &LockedPackage) -> Option<BTreeSet<String>> {
        let i = self.index_of(p)?;
        Some(self.deps[i].iter().map(|&d| self.packages[d].name.clone()).collect())
    }

    fn is_local(&self, i: usize) -> bool {
        self.packages[i].source.is_none() || self.packages[i].source.as_deref().is_some_and(|s| s.starts_with("path+"))
    }

    /// Local packages (workspace members, path dependencies) whose entry depends on `p`.
    pub fn direct(&self, p: &LockedPackage) -> Vec<String> {
        let Some(t) = self.index_of(p) else { return Vec::new() };
        let mut out: Vec<String> =
            (0..self.packages.len()).filter(|&i| self.is_local(i) && i != t && self.deps[i].contains(&t)).map(|i| self.packages[i].name.clone()).collect();
        out.sort();
        out.dedup();
        out
    }

    /// One shortest path of package names from a local package to `p`, both included; empty
    /// when none reaches it.
    pub fn via(&self, p: &LockedPackage) -> Vec<String> {
        let Some(t) = self.index_of(p) else { return Vec::new() };
        let n = self.packages.len();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut queue = VecDeque::new();
        for i in (0..n).filter(|&i| self.is_local(i)) {
            seen[i] = true;
            queue.push_back(i);
        }
        while let Some(u) = queue.pop_front() {
            if u == t {
                let mut path = vec![u];
                let mut cur = u;
                while let Some(q) = parent[cur] {
                    path.push(q);
                    cur = q;
                }
                path.reverse();
                return path.into_iter().map(|i| self.packages[i].name.clone()).collect();
            }
            for &d in &self.deps[u] {
                if !seen[d] {
                    seen[d] = true;
                    parent[d] = Some(u);
                    queue.push_back(d);
                }
            }
        }
        Vec::new()
    }
}

/// For each package name the change adds, the packages whose head entry newly depends on it
/// (their base entry, under the same name, did not): who brought it. A package new to the
/// lockfile whose dependent is itself new is brought by that dependent.
pub fn brought_by(old: &LockView, new: &LockView, added: &BTreeSet<String>) -> BTreeMap<String, Vec<String>> {
    let mut old_deps: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (i, p) in old.packages.iter().enumerate() {
        old_deps.entry(p.name.as_str()).or_default().extend(old.deps[i].iter().map(|&d| old.packages[d].name.as_str()));
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, p) in new.packages.iter().enumerate() {
        for &d in &new.deps[i] {
            let dep = &new.packages[d].name;
            if !added.contains(dep) || dep == &p.name {
                continue;
            }
            let had = old_deps.get(p.name.as_str()).is_some_and(|s| s.contains(dep.as_str()));
            if !had {
                let e = out.entry(dep.clone()).or_default();
                if !e.contains(&p.name) {
                    e.push(p.name.clone());
                }
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"http\"]\n\n[[package]]\nname = \"http\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"0000000000000000000000000000000000000000000000000000000000000000\"\n";
    const NEW: &str = "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"http\"]\n\n[[package]]\nname = \"http\"\nversion = \"1.0.1\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"1111111111111111111111111111111111111111111111111111111111111111\"\ndependencies = [\"curl\"]\n\n[[package]]\nname = \"curl\"\nversion = \"0.4.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"2222222222222222222222222222222222222222222222222222222222222222\"\ndependencies = [\"curl-sys\"]\n\n[[package]]\nname = \"curl-sys\"\nversion = \"0.4.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"3333333333333333333333333333333333333333333333333333333333333333\"\n";

    #[test]
    fn placement_and_who_brought_what() {
        let (o, n) = (LockView::parse(OLD, "old").unwrap(), LockView::parse(NEW, "new").unwrap());
        let lock = crate::lockfile::parse_lockfile(NEW, "new").unwrap();
        let p = |name: &str| lock.packages.iter().find(|p| p.name == name).unwrap().clone();
        assert_eq!(n.direct(&p("http")), ["app"]);
        assert!(n.direct(&p("curl")).is_empty());
        assert_eq!(n.via(&p("curl-sys")), ["app", "http", "curl", "curl-sys"]);
        let added = BTreeSet::from(["curl".to_string(), "curl-sys".to_string()]);
        let b = brought_by(&o, &n, &added);
        assert_eq!(b["curl"], ["http"]);
        assert_eq!(b["curl-sys"], ["curl"]);
        assert_eq!(n.dep_names(&p("http")).unwrap(), BTreeSet::from(["curl".to_string()]));
    }
}
