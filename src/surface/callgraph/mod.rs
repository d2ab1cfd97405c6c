//! Dispatch resolution: the program-level step that resolves calls through traits.
//!
//! A crate's summaries cannot close a call through a trait (`connector.call(uri)` on a
//! generic `C: Service<Uri>`, `reader.read(buf)` on a `dyn Read`): the implementation that
//! runs is usually in a crate downstream, which the calling crate never sees. So summaries
//! keep such calls *open* ([`Summary::open`]: the trait's id and the method, with the chain
//! down to the call), and this module, which sees every crate of one program, resolves each
//! to the implementations of that trait method in the program's graph (class-hierarchy
//! analysis), narrowed to implementations whose type some crate of the program constructs
//! (a coarse rapid type analysis: a type no code of the program makes, and no derive can
//! make, never runs its methods), then follows what those reach, their own open calls
//! included, to a fixpoint. A trait's provided methods and blanket implementations are
//! always candidates.
//!
//! It produces two things: findings at the places in the workspace's own code whose calls
//! go on through a trait (the chain shows the dispatch hop: `dyn
//! tower_service::Service::call -> reqwest::connect::Connector::call`), and each program's
//! *reachable* grant: what its entry points (a binary's `main`, a library's public items)
//! and the code that runs without a call reach.
//!
//! Architecture invariant: a call through a trait is never dropped. Every implementation the
//! program has is a candidate; a bound that is hit ([`MAX_CALLEES`], [`MAX_KEYS`]), or a
//! summary that kept fewer open calls than it made, makes the call counted as unresolved,
//! never as "reaches nothing". Everything here is bounded by counts, never by time, and
//! reads only the analyses: no source, no IO. The bounds are [`crate::resources::meter`] limits: the
//! implementations one call resolves to ([`CALLEES`]), the calls followed from one
//! ([`KEYS`]), and the work of the whole program's resolution ([`STEPS`]: each implementation
//! and each call through a trait it makes, looked at, counts one; past it every call not yet
//! resolved is unresolved). Chains are cut as summaries cut them, so what one resolution
//! holds is bounded by [`KEYS`] too.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::analyze::CrateAnalysis;
use super::analyze::summary::{self, ImplSummary, OpenSite, Summary};
use super::model::{Capability, Finding, Hop};
use crate::resources::meter::{Limit, Meter, Unit};

/// The most implementations one call through a trait is resolved to; past it the call is
/// counted unresolved (and the first ones are still followed).
pub const CALLEES: Limit = Limit::new("implementations per call through a trait", Unit::Items, 256);
pub const MAX_CALLEES: usize = CALLEES.max as usize;

/// The most calls through traits followed from one: past it the rest are unresolved.
pub const KEYS: Limit = Limit::new("calls through traits followed from one", Unit::Items, 4096);
pub const MAX_KEYS: usize = KEYS.max as usize;

/// The work of resolving one program's calls through traits. The largest real use (uv's
/// programs) is far below it; a graph built to make every call fan out to thousands of
/// implementations stops here instead of running for hours.
pub const STEPS: Limit = Limit::new("dispatch resolution steps per program", Unit::Steps, 200_000_000);

/// One implementation, with the crate it is in.
struct Candidate<'a> {
    imp: &'a ImplSummary,
    krate: &'a str,
    version: &'a str,
}

/// What a call through a trait reaches in one program: per capability, the shortest chain
/// from the dispatch hop down; and whether a bound was hit on the way.
#[derive(Default)]
struct Reach {
    caps: BTreeMap<Capability, Vec<Hop>>,
    unresolved: bool,
}

/// The implementations of every trait method in one program's graph.
pub struct Dispatch<'a> {
    impls: HashMap<String, Vec<Candidate<'a>>>,
    /// Every type some crate of the program constructs.
    constructed: HashSet<&'a str>,
    /// Path of a trait as crates name it (`tokio::io::AsyncRead`) → its id.
    ids: HashMap<String, String>,
    /// A crate's re-exports of other crates' items (`tower::Service` →
    /// `tower_service::Service`), to find a trait named through one.
    aliases: HashMap<String, String>,
    memo: RefCell<HashMap<String, Arc<Reach>>>,
    /// The program's resolution work ([`STEPS`]).
    work: RefCell<Meter>,
}

/// A unit of the program: its analysis, with its crate's name as code names it and version.
pub struct UnitRef<'a> {
    pub analysis: &'a CrateAnalysis,
    pub krate: &'a str,
    pub version: &'a str,
}

impl<'a> Dispatch<'a> {
    /// The implementations and constructed types of `units` (every unit compiled into the
    /// program).
    pub fn new(units: &[UnitRef<'a>]) -> Dispatch<'a> {
        Dispatch::with_steps(units, STEPS)
    }

    /// [`Dispatch::new`] with another work limit (tests use small ones).
    pub fn with_steps(units: &[UnitRef<'a>], steps: Limit) -> Dispatch<'a> {
        let mut ids = HashMap::new();
        let mut aliases = HashMap::new();
        for u in units {
            let ex = &u.analysis.exports;
            for (public, id) in &ex.trait_ids {
                ids.insert(format!("{}::{public}", ex.crate_name), id.clone());
            }
            for (public, target) in &ex.aliases {
                if !target.starts_with("extern:") {
                    aliases.insert(format!("{}::{public}", ex.crate_name), target.clone());
                }
            }
        }
        let mut d = Dispatch { impls: HashMap::new(), constructed: HashSet::new(), ids, aliases, memo: RefCell::new(HashMap::new()), work: RefCell::new(Meter::new(steps)) };
        for u in units {
            for imp in &u.analysis.exports.impls {
                let key = d.normalize(&imp.key);
                d.impls.entry(key).or_default().push(Candidate { imp, krate: u.krate, version: u.version });
            }
            d.constructed.extend(u.analysis.constructed.iter().map(String::as_str));
        }
        for v in d.impls.values_mut() {
            v.sort_by(|a, b| (a.krate, a.version, &a.imp.display).cmp(&(b.krate, b.version, &b.imp.display)));
        }
        d
    }

    /// A call's key with its trait named by id (a path another crate exports an id for).
    fn normalize(&self, key: &str) -> String {
        let (tr, m) = summary::split_open(key);
        if tr.contains('#') {
            return key.to_string();
        }
        let mut path = tr;
        for _ in 0..8 {
            if let Some(id) = self.ids.get(path) {
                return summary::open_key(id, m);
            }
            match self.aliases.get(path) {
                Some(next) => path = next,
                None => break,
            }
        }
        summary::open_key(path, m)
    }

    /// The implementations a call may run: those of types the program constructs, provided
    /// methods, blanket and foreign-type implementations.
    fn candidates(&self, key: &str) -> impl Iterator<Item = &Candidate<'a>> {
        self.impls.get(key).into_iter().flatten().filter(|c| {
            let t = c.imp.self_ty.as_str();
            !t.contains('#') || self.constructed.contains(t)
        })
    }

    /// What the call `key` reaches through the program's implementations, memoized.
    fn reach(&self, key: &str) -> Arc<Reach> {
        let key = self.normalize(key);
        if let Some(r) = self.memo.borrow().get(&key) {
            return r.clone();
        }
        let mut out = Reach::default();
        let mut seen: HashSet<String> = HashSet::from([key.clone()]);
        let mut queue: VecDeque<(String, Vec<Hop>)> = VecDeque::from([(key.clone(), Vec::new())]);
        let mut work = self.work.borrow_mut();
        'keys: while let Some((k, prefix)) = queue.pop_front() {
            // The chain down to the call ends with its `dyn Trait::method` hop: the
            // implementation is the next one.
            for (n, c) in self.candidates(&k).enumerate() {
                if n >= MAX_CALLEES {
                    out.unresolved = true;
                    break;
                }
                if work.charge(1 + c.imp.summary.open.len() as u64).is_err() {
                    out.unresolved = true;
                    break 'keys;
                }
                let hop = Hop {
                    path: c.imp.display.as_str().into(),
                    krate: c.krate.into(),
                    version: c.version.into(),
                    file: c.imp.file.as_str().into(),
                    line: c.imp.line,
                };
                let mut here = prefix.clone();
                here.push(hop);
                for (cap, chain) in &c.imp.summary.caps {
                    if !out.caps.contains_key(cap) {
                        out.caps.insert(*cap, join(&here, chain));
                    }
                }
                out.unresolved |= c.imp.summary.open_truncated;
                for (k2, chain) in &c.imp.summary.open {
                    let k2 = self.normalize(k2);
                    if seen.len() >= MAX_KEYS {
                        out.unresolved = true;
                        break;
                    }
                    if seen.insert(k2.clone()) {
                        queue.push_back((k2, join(&here, chain)));
                    }
                }
            }
        }
        drop(work);
        let out = Arc::new(out);
        self.memo.borrow_mut().insert(key, out.clone());
        out
    }

    /// The resolution work spent so far ([`STEPS`]).
    pub fn steps(&self) -> u64 {
        self.work.borrow().used()
    }

    /// Findings at the places whose calls go on through a trait: what the implementations
    /// reach, with the chain through the dispatch hop. Also how many of those places hit a
    /// bound.
    pub fn findings(&self, sites: &[OpenSite]) -> (Vec<Finding>, u64) {
        let mut out = Vec::new();
        let mut unresolved = 0;
        for s in sites {
            let r = self.reach(&s.key);
            unresolved += u64::from(r.unresolved);
            for (cap, chain) in &r.caps {
                out.push(Finding {
                    capability: *cap,
                    scope: s.scope,
                    file: s.file.clone(),
                    line: s.line,
                    column: s.column,
                    path: s.path.clone(),
                    chain: join(&s.chain, chain),
                    expanded_from: None,
                    through_trait: true,
                });
            }
        }
        out.sort();
        out.dedup();
        (out, unresolved)
    }

    /// What `summaries` reach together, their calls through traits resolved: the
    /// capabilities, and how many of their calls through traits could not be resolved
    /// whole.
    pub fn reachable(&self, summaries: &[&Summary]) -> (BTreeSet<Capability>, u64, u64) {
        let mut caps = BTreeSet::new();
        let mut unresolved = 0;
        let mut opens = BTreeSet::new();
        for s in summaries {
            caps.extend(s.caps.keys().copied());
            unresolved += u64::from(s.open_truncated);
            opens.extend(s.open.keys().cloned());
        }
        for k in &opens {
            let r = self.reach(k);
            caps.extend(r.caps.keys().copied());
            unresolved += u64::from(r.unresolved);
        }
        (caps, unresolved, opens.len() as u64)
    }
}

/// `a` then `b`, cut as chains are.
fn join(a: &[Hop], b: &[Hop]) -> Vec<Hop> {
    match a.split_first() {
        Some((first, rest)) => {
            let mut tail = rest.to_vec();
            tail.extend(b.iter().cloned());
            summary::chain(first.clone(), &tail)
        }
        None => match b.split_first() {
            Some((first, rest)) => summary::chain(first.clone(), rest),
            None => Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests;
