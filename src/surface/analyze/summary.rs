//! Per-function summaries: what each function, method, static and constant of a crate
//! reaches, directly or through the crate's own functions it calls, with one shortest chain of
//! evidence per capability. The crate's public API exports them (in [`super::Exports`]), so a
//! crate that calls `tokio::fs::write` gets `fs.write` at its own call site, with the chain
//! down to the `std::fs::write` tokio uses.
//!
//! What travels is what a call *does*: file, network, process and environment capabilities,
//! foreign calls and dynamic loading. `unsafe` and `asm` describe the callee's code, not what
//! the caller does, and stay with the crate that has them; so does `unanalyzed`, which the
//! callee's crate already carries in the program's grant.
//!
//! Everything is bounded: a chain keeps at most [`MAX_CHAIN`] hops (the first ones and the
//! last, where the capability is used), and a crate exports at most [`MAX_SUMMARIES`]
//! summaries. The fixpoint is a breadth-first search, so recursion and cycles terminate and
//! each capability gets its shortest chain.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::surface::model::{Capability, Hop};

/// The capabilities a call carries to its caller.
pub(crate) const CARRIED: &[Capability] = &[
    Capability::FsRead,
    Capability::FsWrite,
    Capability::NetConnect,
    Capability::NetListen,
    Capability::ProcessSpawn,
    Capability::EnvRead,
    Capability::EnvWrite,
    Capability::Ffi,
    Capability::DynamicLoad,
];

/// The most hops a chain keeps.
pub(crate) const MAX_CHAIN: usize = 8;

/// The most summaries a crate exports.
pub(crate) const MAX_SUMMARIES: usize = 50_000;

/// What an item reaches: for each capability, the chain that shows it, the first hop in the
/// item's own body, the last where the capability is used.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub caps: BTreeMap<Capability, Vec<Hop>>,
}

/// `first` then `rest`, at most [`MAX_CHAIN`] hops: the middle goes first.
pub(crate) fn chain(first: Hop, rest: &[Hop]) -> Vec<Hop> {
    let mut out = Vec::with_capacity((rest.len() + 1).min(MAX_CHAIN));
    out.push(first);
    if rest.len() < MAX_CHAIN {
        out.extend(rest.iter().cloned());
    } else {
        out.extend(rest[..MAX_CHAIN - 2].iter().cloned());
        out.push(rest[rest.len() - 1].clone());
    }
    out
}

/// The crate's items and how they use capabilities and one another, collected while the
/// crate is visited.
#[derive(Default)]
pub(crate) struct CallGraph {
    index: HashMap<String, usize>,
    keys: Vec<String>,
    /// Per item: for each capability, its shortest chain of a use in the item's own body.
    direct: Vec<BTreeMap<Capability, Vec<Hop>>>,
    /// Per item: the crate's items it uses (callee key, the hop of the use).
    calls: Vec<Vec<(String, Hop)>>,
    /// Items that run without being called (pre-main statics and functions).
    roots: Vec<String>,
}

impl CallGraph {
    /// The item with this key (`crate::fs::write`, `crate::net::Conn::open`).
    pub fn item(&mut self, key: &str) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.keys.len();
        self.keys.push(key.to_string());
        self.index.insert(key.to_string(), i);
        self.direct.push(BTreeMap::new());
        self.calls.push(Vec::new());
        i
    }

    /// A use of `cap` in item `i`'s body, shown by `chain` (its first hop is the place in the
    /// body).
    pub fn uses(&mut self, i: usize, cap: Capability, chain: Vec<Hop>) {
        if !CARRIED.contains(&cap) {
            return;
        }
        match self.direct[i].get(&cap) {
            Some(c) if c.len() <= chain.len() => {}
            _ => {
                self.direct[i].insert(cap, chain);
            }
        }
    }

    /// The item `key` runs without being called (a `.init_array` static, a `#[ctor]` fn).
    pub fn root(&mut self, key: &str) {
        if !self.roots.iter().any(|r| r == key) {
            self.roots.push(key.to_string());
        }
    }

    /// The items that run without being called.
    #[allow(dead_code)]
    pub fn roots(&self) -> &[String] {
        &self.roots
    }

    /// Item `i` uses the crate's item `callee` at `hop`.
    pub fn calls(&mut self, i: usize, callee: String, hop: Hop) {
        if self.keys[i] != callee {
            self.calls[i].push((callee, hop));
        }
    }

    /// Every item's summary: its direct uses and, through the calls, those of what it calls.
    /// Items that reach nothing are left out.
    pub fn solve(self) -> BTreeMap<String, Summary> {
        let n = self.keys.len();
        // Callers of each item, with the hop of the call.
        let mut callers: Vec<Vec<(usize, Hop)>> = vec![Vec::new(); n];
        for (i, calls) in self.calls.into_iter().enumerate() {
            for (callee, hop) in calls {
                if let Some(&c) = self.index.get(&callee) {
                    callers[c].push((i, hop));
                }
            }
        }
        let mut best: Vec<BTreeMap<Capability, Vec<Hop>>> = self.direct;
        // Breadth-first by chain length: the first chain an item gets for a capability is a
        // shortest one, and is never replaced, so this terminates on any graph.
        let mut queue: VecDeque<(usize, Capability)> = VecDeque::new();
        let mut order: Vec<(usize, Capability, usize)> = Vec::new();
        for (i, caps) in best.iter().enumerate() {
            for (cap, c) in caps {
                order.push((i, *cap, c.len()));
            }
        }
        order.sort_by_key(|x| x.2);
        queue.extend(order.into_iter().map(|(i, c, _)| (i, c)));
        while let Some((callee, cap)) = queue.pop_front() {
            let tail = best[callee][&cap].clone();
            for (caller, hop) in &callers[callee] {
                if best[*caller].contains_key(&cap) {
                    continue;
                }
                best[*caller].insert(cap, chain(hop.clone(), &tail));
                queue.push_back((*caller, cap));
            }
        }
        self.keys
            .into_iter()
            .zip(best)
            .filter(|(_, caps)| !caps.is_empty())
            .map(|(k, caps)| (k, Summary { caps }))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(path: &str, line: u32) -> Hop {
        Hop { path: path.into(), krate: "me".into(), version: "1.0.0".into(), file: "src/lib.rs".into(), line }
    }

    #[test]
    fn summaries_follow_calls_through_cycles_with_shortest_chains() {
        let mut g = CallGraph::default();
        let write = g.item("crate::write");
        let a = g.item("crate::a");
        let b = g.item("crate::b");
        let pure = g.item("crate::pure");
        g.uses(write, Capability::FsWrite, vec![hop("std::fs::write", 1)]);
        g.uses(write, Capability::Unsafe, vec![hop("unsafe block", 2)]);
        // a -> b -> a (a cycle), b -> write
        g.calls(a, "crate::b".into(), hop("me::b", 10));
        g.calls(b, "crate::a".into(), hop("me::a", 20));
        g.calls(b, "crate::write".into(), hop("me::write", 21));
        g.calls(pure, "crate::nothing".into(), hop("me::nothing", 30));
        let s = g.solve();
        assert_eq!(s["crate::write"].caps.keys().collect::<Vec<_>>(), [&Capability::FsWrite], "unsafe does not travel");
        let via_a: Vec<u32> = s["crate::a"].caps[&Capability::FsWrite].iter().map(|h| h.line).collect();
        assert_eq!(via_a, [10, 21, 1]);
        assert_eq!(s["crate::b"].caps[&Capability::FsWrite].len(), 2);
        assert!(!s.contains_key("crate::pure"));
    }

    #[test]
    fn long_chains_keep_their_ends() {
        let mut g = CallGraph::default();
        let ids: Vec<usize> = (0..20).map(|i| g.item(&format!("crate::f{i}"))).collect();
        g.uses(ids[19], Capability::ProcessSpawn, vec![hop("std::process::Command::new", 99)]);
        for i in 0..19 {
            g.calls(ids[i], format!("crate::f{}", i + 1), hop(&format!("me::f{}", i + 1), i as u32));
        }
        let s = g.solve();
        let c = &s["crate::f0"].caps[&Capability::ProcessSpawn];
        assert_eq!(c.len(), MAX_CHAIN);
        assert_eq!(c[0].line, 0);
        assert_eq!(c.last().unwrap().path, "std::process::Command::new");
    }
}
