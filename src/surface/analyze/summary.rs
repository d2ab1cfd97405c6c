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
    /// Calls through a trait the item makes, itself or through what it calls, that only the
    /// program can resolve (the trait's implementations may be in any crate of it): `TRAIT::m`
    /// (see [`open_key`]) with the chain to the call.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub open: BTreeMap<String, Vec<Hop>>,
    /// More calls through traits than a summary keeps ([`MAX_OPEN`]): the rest are counted as
    /// unresolved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_truncated: bool,
}

/// A trait method's implementation (or a trait's provided method), as the program step sees
/// it: which call through a trait it may answer, what it reaches, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImplSummary {
    /// [`open_key`]: the trait's id and the method.
    pub key: String,
    /// The implementing type's id (`NAME@VERSION#crate::..` for the crate's own, the path for
    /// another's); `*` for a blanket implementation, `<default>` for a provided method.
    pub self_ty: String,
    /// How the method is shown in a chain (`hyper_util::client::legacy::connect::HttpConnector::call`).
    pub display: String,
    pub file: String,
    pub line: u32,
    pub summary: std::sync::Arc<Summary>,
}

/// A place in a crate's code whose call goes on through a trait: where the program step adds
/// what the trait's implementations in the program reach.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct OpenSite {
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// What the code calls (a dependency's function whose summary has the open call, or
    /// `dyn Trait::method` for a call through a trait here).
    pub path: String,
    pub scope: crate::surface::model::Scope,
    /// [`open_key`] of the call through the trait.
    pub key: String,
    /// The hops from the called function down to the call through the trait (empty when the
    /// call is here).
    pub chain: Vec<Hop>,
}

/// Serde for a crate's shared summaries (its exports by public path, its implementations):
/// each summary once (one per item: its public paths, re-exports and implementations share
/// it), and each hop once (chains share their tails), chains as indices into the hops. The
/// cache then holds one copy of each, and a warm run reads them back shared again.
/// Deterministic: summaries in the order of their first use, hops likewise.
pub(crate) mod shared {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Arc;

    use serde::{Deserialize, Serialize};

    use super::{Capability, Hop, Summary};

    #[derive(Serialize)]
    pub(super) struct SummaryOut<'a> {
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        caps: BTreeMap<Capability, Vec<u32>>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        open: BTreeMap<&'a str, Vec<u32>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        open_truncated: bool,
    }

    #[derive(Deserialize)]
    pub(super) struct SummaryIn {
        #[serde(default)]
        caps: BTreeMap<Capability, Vec<u32>>,
        #[serde(default)]
        open: BTreeMap<String, Vec<u32>>,
        #[serde(default)]
        open_truncated: bool,
    }

    /// What is being written: the hops and summaries met so far.
    #[derive(Default)]
    pub(super) struct Table<'a> {
        pub hops: Vec<&'a Hop>,
        hop_at: HashMap<&'a Hop, u32>,
        pub items: Vec<SummaryOut<'a>>,
        item_at: HashMap<*const Summary, u32>,
    }

    impl<'a> Table<'a> {
        fn chain(&mut self, c: &'a [Hop]) -> Vec<u32> {
            c.iter()
                .map(|h| {
                    *self.hop_at.entry(h).or_insert_with(|| {
                        self.hops.push(h);
                        (self.hops.len() - 1) as u32
                    })
                })
                .collect()
        }

        /// The index of `s`, written the first time it is met.
        pub fn summary(&mut self, s: &'a Arc<Summary>) -> u32 {
            if let Some(&i) = self.item_at.get(&Arc::as_ptr(s)) {
                return i;
            }
            let caps = s.caps.iter().map(|(c, chain)| (*c, self.chain(chain))).collect();
            let open = s.open.iter().map(|(k, chain)| (k.as_str(), self.chain(chain))).collect();
            self.items.push(SummaryOut { caps, open, open_truncated: s.open_truncated });
            let i = (self.items.len() - 1) as u32;
            self.item_at.insert(Arc::as_ptr(s), i);
            i
        }
    }

    /// The summaries read back, each once, their chains sharing the hops' strings.
    pub(super) fn read(hops: Vec<Hop>, items: Vec<SummaryIn>) -> Result<Vec<Arc<Summary>>, String> {
        let chain = |c: Vec<u32>| -> Result<Vec<Hop>, String> {
            c.into_iter().map(|i| hops.get(i as usize).cloned().ok_or_else(|| format!("hop index {i} out of range"))).collect()
        };
        items
            .into_iter()
            .map(|x| {
                let caps = x.caps.into_iter().map(|(c, v)| Ok((c, chain(v)?))).collect::<Result<_, String>>()?;
                let open = x.open.into_iter().map(|(k, v)| Ok((k, chain(v)?))).collect::<Result<_, String>>()?;
                Ok(Arc::new(Summary { caps, open, open_truncated: x.open_truncated }))
            })
            .collect()
    }

    pub(super) fn item(items: &[Arc<Summary>], i: u32) -> Result<Arc<Summary>, String> {
        items.get(i as usize).cloned().ok_or_else(|| format!("summary index {i} out of range"))
    }
}

/// Serde for a crate's exports by public path ([`shared`]): the hops, the summaries, and the
/// index of the paths.
pub(crate) mod shared_map {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::shared::{SummaryIn, SummaryOut, Table};
    use super::{Hop, Summary};

    #[derive(Serialize)]
    struct Out<'a> {
        hops: Vec<&'a Hop>,
        items: Vec<SummaryOut<'a>>,
        paths: BTreeMap<&'a str, u32>,
    }

    #[derive(Deserialize)]
    struct In {
        hops: Vec<Hop>,
        items: Vec<SummaryIn>,
        paths: BTreeMap<String, u32>,
    }

    pub fn serialize<S: Serializer>(map: &BTreeMap<String, Arc<Summary>>, s: S) -> Result<S::Ok, S::Error> {
        let mut t = Table::default();
        let paths = map.iter().map(|(k, v)| (k.as_str(), t.summary(v))).collect();
        Out { hops: t.hops, items: t.items, paths }.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Arc<Summary>>, D::Error> {
        let In { hops, items, paths } = In::deserialize(d)?;
        let items = super::shared::read(hops, items).map_err(D::Error::custom)?;
        paths.into_iter().map(|(k, i)| Ok((k, super::shared::item(&items, i).map_err(D::Error::custom)?))).collect()
    }
}

/// Serde for a crate's [`ImplSummary`]s ([`shared`]): the implementations name their
/// summaries by index.
pub(crate) mod shared_impls {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::shared::{SummaryIn, SummaryOut, Table};
    use super::{Hop, ImplSummary};

    #[derive(Serialize, Deserialize)]
    struct Impl<K> {
        key: K,
        self_ty: K,
        display: K,
        file: K,
        line: u32,
        summary: u32,
    }

    #[derive(Serialize)]
    struct Out<'a> {
        hops: Vec<&'a Hop>,
        items: Vec<SummaryOut<'a>>,
        impls: Vec<Impl<&'a str>>,
    }

    #[derive(Deserialize)]
    struct In {
        hops: Vec<Hop>,
        items: Vec<SummaryIn>,
        impls: Vec<Impl<String>>,
    }

    pub fn serialize<S: Serializer>(v: &[ImplSummary], s: S) -> Result<S::Ok, S::Error> {
        let mut t = Table::default();
        let impls = v
            .iter()
            .map(|x| Impl {
                key: x.key.as_str(),
                self_ty: x.self_ty.as_str(),
                display: x.display.as_str(),
                file: x.file.as_str(),
                line: x.line,
                summary: t.summary(&x.summary),
            })
            .collect();
        Out { hops: t.hops, items: t.items, impls }.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ImplSummary>, D::Error> {
        let In { hops, items, impls } = In::deserialize(d)?;
        let items = super::shared::read(hops, items).map_err(D::Error::custom)?;
        impls
            .into_iter()
            .map(|x| {
                let summary = super::shared::item(&items, x.summary).map_err(D::Error::custom)?;
                Ok(ImplSummary { key: x.key, self_ty: x.self_ty, display: x.display, file: x.file, line: x.line, summary })
            })
            .collect()
    }
}

/// One summary for several items together (a library's public items): per capability and
/// per call through a trait, the shortest chain among them.
pub(crate) fn merge<'a>(items: impl Iterator<Item = &'a Summary>) -> Summary {
    let mut out = Summary::default();
    for s in items {
        for (c, chain) in &s.caps {
            if out.caps.get(c).is_none_or(|x| x.len() > chain.len()) {
                out.caps.insert(*c, chain.clone());
            }
        }
        for (k, chain) in &s.open {
            if out.open.get(k).is_none_or(|x| x.len() > chain.len()) {
                out.open.insert(k.clone(), chain.clone());
            }
        }
        out.open_truncated |= s.open_truncated;
    }
    out
}

/// The most calls through traits a summary keeps.
pub(crate) const MAX_OPEN: usize = 64;

/// The key of a call through a trait: the trait's id and the method.
pub(crate) fn open_key(trait_id: &str, method: &str) -> String {
    format!("{trait_id}::{method}")
}

/// A trait's id and a method, from an [`open_key`].
pub(crate) fn split_open(key: &str) -> (&str, &str) {
    key.rsplit_once("::").unwrap_or((key, ""))
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
    /// Per item: its calls through traits ([`open_key`]), with the hop of the call.
    open: Vec<BTreeMap<String, Vec<Hop>>>,
    /// The crate's own implementations of trait methods: open key → the implementing
    /// item's key and display name.
    impls: HashMap<String, Vec<(String, String, String)>>,
    /// The types the crate constructs (ids), when known: a call through a trait reaches the
    /// crate's own implementations for these only (and blanket, provided and foreign-type
    /// ones). The call stays open either way, so an implementation for a type made in
    /// another crate is the program's to find.
    made: Option<std::collections::BTreeSet<String>>,
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
        self.open.push(BTreeMap::new());
        i
    }

    /// Item `i` calls method `key` ([`open_key`]) through a trait, shown by `chain` (its first
    /// hop the place in the body).
    pub fn open(&mut self, i: usize, key: String, chain: Vec<Hop>) {
        match self.open[i].get(&key) {
            Some(c) if c.len() <= chain.len() => {}
            _ => {
                self.open[i].insert(key, chain);
            }
        }
    }

    /// The crate implements `key` ([`open_key`]) with its item `item` (shown as `display`)
    /// for the type `self_id` (an id, `*` for a blanket implementation, `<default>` for a
    /// provided method, a path for a foreign type).
    pub fn implements(&mut self, key: String, item: String, display: String, self_id: String) {
        let v = self.impls.entry(key).or_default();
        if !v.iter().any(|(k, _, _)| *k == item) {
            v.push((item, display, self_id));
        }
    }

    /// The types the crate constructs (see [`CallGraph::made`]).
    pub fn constructs(&mut self, made: std::collections::BTreeSet<String>) {
        self.made = Some(made);
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

    /// Every item's summary: its direct uses and, through the calls, those of what it calls;
    /// its calls through traits, resolved to the crate's own implementations where it has
    /// some (a call edge through the trait) and kept open for the program to resolve.
    /// Items that reach nothing are left out.
    pub fn solve(mut self) -> BTreeMap<String, Summary> {
        let n = self.keys.len();
        // A call through a trait reaches the crate's own implementations of it.
        for i in 0..n {
            let opens: Vec<(String, Vec<Hop>)> = self.open[i].iter().map(|(k, c)| (k.clone(), c.clone())).collect();
            for (key, chain) in opens {
                let Some(targets) = self.impls.get(&key) else { continue };
                let Some(first) = chain.first() else { continue };
                for (item, display, self_id) in targets.clone() {
                    if let Some(made) = &self.made
                        && self_id.contains('#')
                        && !made.contains(&self_id)
                    {
                        continue;
                    }
                    let hop = Hop { path: format!("{} -> {display}", first.path).into(), ..first.clone() };
                    if self.keys[i] != item {
                        self.calls[i].push((item, hop));
                    }
                }
            }
        }
        // Callers of each item, with the hop of the call.
        let mut callers: Vec<Vec<(usize, Hop)>> = vec![Vec::new(); n];
        for (i, calls) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            for (callee, hop) in calls {
                if let Some(&c) = self.index.get(&callee) {
                    callers[c].push((i, hop));
                }
            }
        }
        let caps = bfs(std::mem::take(&mut self.direct), &callers, None);
        let mut truncated = vec![false; n];
        let open = bfs(std::mem::take(&mut self.open), &callers, Some((MAX_OPEN, &mut truncated)));
        self.keys
            .into_iter()
            .zip(caps.into_iter().zip(open).zip(truncated))
            .filter(|(_, ((c, o), t))| !c.is_empty() || !o.is_empty() || *t)
            .map(|(k, ((caps, open), open_truncated))| (k, Summary { caps, open, open_truncated }))
            .collect()
    }
}

/// Breadth-first by chain length from each item's own entries to its callers: the first chain
/// an item gets for a key is a shortest one, and is never replaced, so this terminates on any
/// graph. `limit`: at most that many keys per item, the items that hit it marked.
fn bfs<K: Ord + Clone>(
    mut best: Vec<BTreeMap<K, Vec<Hop>>>,
    callers: &[Vec<(usize, Hop)>],
    mut limit: Option<(usize, &mut Vec<bool>)>,
) -> Vec<BTreeMap<K, Vec<Hop>>> {
    let mut queue: VecDeque<(usize, K)> = VecDeque::new();
    let mut order: Vec<(usize, K, usize)> = Vec::new();
    for (i, m) in best.iter().enumerate() {
        for (k, c) in m {
            order.push((i, k.clone(), c.len()));
        }
    }
    order.sort_by_key(|x| x.2);
    queue.extend(order.into_iter().map(|(i, k, _)| (i, k)));
    while let Some((callee, key)) = queue.pop_front() {
        let tail = best[callee][&key].clone();
        for (caller, hop) in &callers[callee] {
            if best[*caller].contains_key(&key) {
                continue;
            }
            if let Some((max, hit)) = limit.as_mut()
                && best[*caller].len() >= *max
            {
                hit[*caller] = true;
                continue;
            }
            best[*caller].insert(key.clone(), chain(hop.clone(), &tail));
            queue.push_back((*caller, key.clone()));
        }
    }
    best
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
    fn exports_serialize_each_shared_summary_once_and_read_back_shared() {
        let mut g = CallGraph::default();
        let w = g.item("crate::write");
        g.uses(w, Capability::FsWrite, vec![hop("std::fs::write_marker_a", 1)]);
        let one = std::sync::Arc::new(g.solve().remove("crate::write").unwrap());
        let mut other = (*one).clone();
        // Its chain ends in the same hop: the hop is written once.
        let tail = other.caps[&Capability::FsWrite][0].clone();
        other.caps.insert(Capability::FsWrite, vec![hop("std::fs::write_marker_b", 2), tail]);
        let other = std::sync::Arc::new(other);
        // One item under three public paths, another under one.
        let mut ex = crate::surface::analyze::Exports::default();
        for p in ["fs::write", "prelude::write", "write"] {
            ex.summaries.insert(p.to_string(), one.clone());
        }
        ex.summaries.insert("fs::other".to_string(), other.clone());
        ex.impls = ["a::T::m", "b::T::m"]
            .iter()
            .map(|k| ImplSummary { key: k.to_string(), self_ty: "*".into(), display: "x".into(), file: "src/lib.rs".into(), line: 1, summary: one.clone() })
            .collect();
        let json = serde_json::to_string(&ex).unwrap();
        assert_eq!(json.matches("write_marker_a").count(), 2, "once in summaries' hops, once in impls': {json}");
        assert_eq!(json.matches("write_marker_b").count(), 1, "{json}");
        let back: crate::surface::analyze::Exports = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ex);
        assert!(std::sync::Arc::ptr_eq(&back.summaries["fs::write"], &back.summaries["write"]));
        assert!(!std::sync::Arc::ptr_eq(&back.summaries["fs::write"], &back.summaries["fs::other"]));
        assert!(std::sync::Arc::ptr_eq(&back.impls[0].summary, &back.impls[1].summary));
        assert_eq!(serde_json::to_string(&back).unwrap(), json, "the same bytes again: the same digest");
        // An index out of range is an error, not a summary.
        let bad = json.replace("\"write\":1", "\"write\":7");
        assert_ne!(bad, json);
        assert!(serde_json::from_str::<crate::surface::analyze::Exports>(&bad).is_err());
        let bad = json.replacen("\"fs.write\":[0]", "\"fs.write\":[9]", 1);
        assert_ne!(bad, json);
        assert!(serde_json::from_str::<crate::surface::analyze::Exports>(&bad).is_err());
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
        assert_eq!(&*c.last().unwrap().path, "std::process::Command::new");
    }
}
