//! Comparing a surface with a baseline.

use std::collections::{BTreeMap, BTreeSet};

use super::{Baseline, Location, Subject};
use crate::surface::{Capability, Finding, Surface};

/// One place in the code behind a widened capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The crate the finding is in.
    pub crate_name: String,
    pub version: String,
    pub finding: Finding,
    /// Package names from the program's package to the crate, both included.
    pub via: Vec<String>,
}

/// A subject that uses capabilities its grant does not cover: the gate fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widening {
    pub subject: Subject,
    /// Used but not granted.
    pub capabilities: BTreeSet<Capability>,
    /// Granted capabilities used through APIs the grant's pins do not list (crates whose
    /// `apis` pin them), by capability.
    pub apis: BTreeMap<Capability, BTreeSet<String>>,
    /// Every finding of those capabilities, and of those APIs, sorted by crate, version, then
    /// finding.
    pub findings: Vec<Evidence>,
    /// The baseline has no entry for the subject at all.
    pub new_subject: bool,
    /// Where the subject's entry is in the baseline; `None` for a new subject.
    pub at: Option<Location>,
}

/// A grant that is no longer used: the baseline is stale (`velaris bless` narrows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowing {
    pub subject: Subject,
    /// Granted but no longer used (for a gone subject: everything it was granted).
    pub capabilities: BTreeSet<Capability>,
    /// Pinned APIs no longer used, of capabilities still used.
    pub apis: BTreeMap<Capability, BTreeSet<String>>,
    /// The program or crate is no longer there (or, for a crate, no longer has a capability).
    pub gone: bool,
    /// Where the first unused grant (or the gone entry) is in the baseline.
    pub at: Option<Location>,
}

/// The baseline was reviewed for another target than the surface was analysed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetMismatch {
    /// The baseline's `target`.
    pub granted: String,
    /// The surface's target.
    pub analysed: String,
}

/// The result of [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The baseline's origin, for messages.
    pub origin: String,
    /// Nothing widened.
    pub holds: bool,
    /// Program widenings sorted by name, then crate widenings sorted by name.
    pub widened: Vec<Widening>,
    /// Same order as `widened`.
    pub narrowed: Vec<Narrowing>,
    pub target_mismatch: Option<TargetMismatch>,
}

impl Widening {
    /// Every (capability, API) the widening is about, for one line each: the capabilities not
    /// granted (no API), then the APIs not pinned.
    pub fn what(&self) -> Vec<(Capability, Option<&str>)> {
        let mut out: Vec<(Capability, Option<&str>)> = self.capabilities.iter().map(|c| (*c, None)).collect();
        for (c, apis) in &self.apis {
            out.extend(apis.iter().map(|a| (*c, Some(a.as_str()))));
        }
        out
    }

    /// `process.spawn, fs.write via std::fs::remove_dir_all`.
    pub fn summary(&self) -> String {
        self.what()
            .iter()
            .map(|(c, api)| match api {
                Some(a) => format!("{c} via {a}"),
                None => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl CheckOutcome {
    /// The baseline grants more than is used, names what is gone, or was made for another
    /// target: `velaris bless` would change it. `--strict` fails on this.
    pub fn stale(&self) -> bool {
        !self.narrowed.is_empty() || self.target_mismatch.is_some()
    }
}

#[derive(Default)]
struct Used {
    capabilities: BTreeSet<Capability>,
    /// The APIs used per capability (the findings' resolved paths).
    apis: BTreeMap<Capability, BTreeSet<String>>,
    /// (crate, version, finding) → via, the shortest seen.
    findings: BTreeMap<(String, String, Finding), Vec<String>>,
}

impl Used {
    fn add_finding(&mut self, name: &str, version: &str, f: &Finding, via: &[String]) {
        self.apis.entry(f.capability).or_default().insert(f.path.clone());
        let slot =
            self.findings.entry((name.to_string(), version.to_string(), f.clone())).or_insert_with(|| via.to_vec());
        if (via.len(), via) < (slot.len(), slot.as_slice()) {
            *slot = via.to_vec();
        }
    }

    /// The findings of `caps`, and of the APIs in `apis`.
    fn evidence(&self, caps: &BTreeSet<Capability>, apis: &BTreeMap<Capability, BTreeSet<String>>) -> Vec<Evidence> {
        self.findings
            .iter()
            .filter(|((_, _, f), _)| caps.contains(&f.capability) || apis.get(&f.capability).is_some_and(|a| a.contains(&f.path)))
            .map(|((name, version, finding), via)| Evidence {
                crate_name: name.clone(),
                version: version.clone(),
                finding: finding.clone(),
                via: via.clone(),
            })
            .collect()
    }
}

/// What the surface uses, per program and per crate name.
fn used(surface: &Surface) -> (BTreeMap<&str, Used>, BTreeMap<&str, Used>) {
    let mut programs: BTreeMap<&str, Used> = BTreeMap::new();
    let mut crates: BTreeMap<&str, Used> = BTreeMap::new();
    for p in &surface.programs {
        let prog = programs.entry(&p.name).or_default();
        for c in &p.crates {
            // A program is granted what it does at run time (and that its build runs code);
            // what build scripts and proc macros do while building is in their crates' grants.
            for f in c.findings.iter().filter(|f| f.counts_for_program() && f.granted()) {
                prog.capabilities.insert(f.capability);
                prog.add_finding(&c.name, &c.version, f, &c.via);
            }
            if c.capabilities.is_empty() {
                continue;
            }
            let krate = crates.entry(&c.name).or_default();
            krate.capabilities.extend(c.capabilities.iter().copied());
            // What dispatch found at a member's calls is informational (not in the grant).
            for f in c.findings.iter().filter(|f| f.granted()) {
                krate.add_finding(&c.name, &c.version, f, &c.via);
            }
        }
    }
    (programs, crates)
}

fn compare(
    subject: impl Fn(&str) -> Subject,
    used: &BTreeMap<&str, Used>,
    granted: &BTreeMap<String, super::Grant>,
    widened: &mut Vec<Widening>,
    narrowed: &mut Vec<Narrowing>,
) {
    for (&name, u) in used {
        let grant = granted.get(name);
        let empty = BTreeSet::new();
        let allowed = grant.map_or(&empty, |g| &g.capabilities);
        let extra: BTreeSet<Capability> = u.capabilities.difference(allowed).copied().collect();
        // A granted capability pinned to APIs widens through any other API.
        let mut new_apis: BTreeMap<Capability, BTreeSet<String>> = BTreeMap::new();
        let mut unused_apis: BTreeMap<Capability, BTreeSet<String>> = BTreeMap::new();
        if let Some(g) = grant {
            for (cap, pinned) in &g.apis {
                let Some(apis) = u.apis.get(cap).filter(|_| u.capabilities.contains(cap)) else { continue };
                let unlisted: BTreeSet<String> = apis.difference(pinned).cloned().collect();
                if !unlisted.is_empty() {
                    new_apis.insert(*cap, unlisted);
                }
                let gone: BTreeSet<String> = pinned.difference(apis).cloned().collect();
                if !gone.is_empty() {
                    unused_apis.insert(*cap, gone);
                }
            }
        }
        if !extra.is_empty() || !new_apis.is_empty() {
            widened.push(Widening {
                subject: subject(name),
                findings: u.evidence(&extra, &new_apis),
                capabilities: extra,
                apis: new_apis,
                new_subject: grant.is_none(),
                at: grant.map(|g| g.at),
            });
        }
        if let Some(g) = grant {
            let unused: BTreeSet<Capability> = g.capabilities.difference(&u.capabilities).copied().collect();
            if !unused.is_empty() || !unused_apis.is_empty() {
                let first = unused
                    .iter()
                    .filter_map(|c| g.capability_at.get(c))
                    .chain(unused_apis.keys().filter_map(|c| g.apis_at.get(c)))
                    .min()
                    .copied();
                narrowed.push(Narrowing {
                    subject: subject(name),
                    capabilities: unused,
                    apis: unused_apis,
                    gone: false,
                    at: Some(first.unwrap_or(g.at)),
                });
            }
        }
    }
    for (name, g) in granted {
        if !used.contains_key(name.as_str()) {
            narrowed.push(Narrowing {
                subject: subject(name),
                capabilities: g.capabilities.clone(),
                apis: BTreeMap::new(),
                gone: true,
                at: Some(g.at),
            });
        }
    }
}

/// Compare `surface` with `baseline`.
///
/// A program widens when the capabilities compiled into it are not all in its grant; a crate
/// widens when its capabilities, over every program and every version of that name, are not
/// all in the crate's grant. The two are separate: a new dependency that brings `net.connect`
/// into a program already granted `net.connect` is still a crate widening. A subject without
/// an entry that uses any capability is a widening with `new_subject`; `unanalyzed` counts like
/// any capability. A crate whose grant pins a capability to APIs (`[crate.NAME.apis]`) also
/// widens when it uses that capability through an API the pins do not list. Grants (and pinned
/// APIs) no longer used, and entries whose subject is gone, are narrowings.
pub fn check(baseline: &Baseline, surface: &Surface) -> CheckOutcome {
    let (programs, crates) = used(surface);
    let mut widened = Vec::new();
    let mut narrowed = Vec::new();
    compare(|n| Subject::Program(n.to_string()), &programs, &baseline.programs, &mut widened, &mut narrowed);
    compare(|n| Subject::Crate(n.to_string()), &crates, &baseline.crates, &mut widened, &mut narrowed);
    widened.sort_by(|a, b| a.subject.cmp(&b.subject));
    narrowed.sort_by(|a, b| a.subject.cmp(&b.subject));
    let target_mismatch = baseline
        .target
        .as_ref()
        .filter(|t| **t != surface.target)
        .map(|t| TargetMismatch { granted: t.clone(), analysed: surface.target.clone() });
    CheckOutcome { origin: baseline.origin.clone(), holds: widened.is_empty(), widened, narrowed, target_mismatch }
}
