//! What a lockfile change does to capabilities and where each package sits in the graph.
//!
//! The surface engine is a black box here: it runs on the workspace at base and at head (or on
//! a probe workspace when the graph cannot be known), once per target, all runs sharing one
//! [`SourceStore`]. From its graphs come whether each changed package is built, for which
//! targets, whether a member depends on it directly or which package pulls it in, and why an
//! unbuilt one is not built; from its findings come the capabilities each package gains and
//! loses, compared by (capability, scope) with every finding kept as it came (fields the
//! engine adds to findings flow through); from its surfaces come the programs' gains and
//! losses, and [`crate::baseline::check`] says whether head widens the committed baseline.

use std::collections::{BTreeSet, VecDeque};

use crate::baseline::{self, Addition, CheckOutcome};
use crate::lockfile::LockedPackage;
use crate::registry::FetchOptions;
use crate::surface::engine::{self, SourceStore, SurfaceError};
use crate::surface::{Capability, Finding, Scope, Surface};
use crate::workspace::{Graph, PackageId};

use super::workspaces::WorkspaceDir;

/// One engine run: a side of the change for one target.
pub struct Run {
    pub target: String,
    pub graph: Graph,
    /// Per unit of `graph`; `None` when only the graph was resolved.
    pub findings: Option<Vec<Vec<Finding>>>,
    pub surface: Option<Surface>,
    pub members: Vec<PackageId>,
}

/// How a side's graph was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphMode {
    /// The repository's own workspace: what is built is known.
    Workspace,
    /// A probe depending on every changed package: what is built is not known.
    Probe,
}

/// Every run of one side (base or head) of one lockfile.
pub struct Side {
    pub mode: GraphMode,
    pub runs: Vec<Run>,
    /// Why capabilities could not be analysed on this side, when they could not.
    pub error: Option<String>,
}

impl Side {
    pub fn empty(mode: GraphMode, error: Option<String>) -> Side {
        Side { mode, runs: Vec::new(), error }
    }

    pub fn run_for(&self, target: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.target == target)
    }
}

/// Run the engine on `dir` for each target. With `analyse` false only the graph is resolved;
/// with `lockfile_led` (the probe of two lockfiles) what the lockfile does not lock is not built.
pub fn run_side(
    dir: &WorkspaceDir,
    targets: &[String],
    fetch: &FetchOptions,
    store: &SourceStore,
    analyse: bool,
    lockfile_led: bool,
) -> Result<Vec<Run>, SurfaceError> {
    let mut runs = Vec::new();
    for t in targets {
        let config = engine::Config { root: dir.root.clone(), target: t.clone(), fetch: fetch.clone() };
        if analyse {
            let d = if lockfile_led { engine::run_lockfile_led(&config, store)? } else { engine::run_with(&config, store)? };
            runs.push(Run {
                target: t.clone(),
                graph: d.graph,
                findings: Some(d.findings),
                surface: Some(d.analysis.surface),
                members: d.members,
            });
        } else {
            let (graph, members) = engine::graph_with(&config, store)?;
            runs.push(Run { target: t.clone(), graph, findings: None, surface: None, members });
        }
    }
    Ok(runs)
}

/// The same package: name, version and source as written in the lockfile.
pub fn same(id: &PackageId, p: &LockedPackage) -> bool {
    id.name == p.name && id.version == p.version.to_string() && id.source == p.source
}

fn units_of(graph: &Graph, p: &LockedPackage) -> Vec<usize> {
    (0..graph.units.len()).filter(|&i| same(&graph.units[i].package, p)).collect()
}

/// Every finding of the package on this side, over all targets; `None` when no run built it
/// (or no run analysed).
pub fn findings_of(side: &Side, p: &LockedPackage) -> Option<BTreeSet<Finding>> {
    let mut out: Option<BTreeSet<Finding>> = None;
    for r in &side.runs {
        let Some(f) = &r.findings else { continue };
        for u in units_of(&r.graph, p) {
            out.get_or_insert_with(BTreeSet::new).extend(f[u].iter().cloned());
        }
    }
    out
}

/// Whether each run's package, for one side, is built and where it sits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// `None`: the graph is unknown.
    pub built: Option<bool>,
    /// The targets it is compiled for.
    pub targets: Vec<String>,
    /// Members that depend on it directly (normal or build dependency).
    pub direct: Vec<String>,
    /// One shortest path of package names from a member to it, both included.
    pub via: Vec<String>,
    /// Not built: why (`cfg(windows)`, `optional, feature off`, ...), its stable code, and the
    /// package whose declaration was not taken.
    pub not_built: Option<(String, &'static str, Option<String>)>,
}

/// Where `p` sits in this side's graphs.
pub fn placement(side: &Side, p: &LockedPackage) -> Placement {
    if side.mode != GraphMode::Workspace || side.runs.is_empty() {
        return Placement::default();
    }
    let mut pl = Placement { built: Some(false), ..Placement::default() };
    for r in &side.runs {
        let g = &r.graph;
        let units = units_of(g, p);
        if units.is_empty() {
            if pl.not_built.is_none() {
                if let Some(n) = g.not_built.iter().find(|n| same(&n.package, p)) {
                    let reason = match &n.reason {
                        crate::workspace::NotBuiltReason::OptionalOff { feature } => {
                            format!("optional, feature off ({feature})")
                        }
                        other => other.to_string(),
                    };
                    pl.not_built = Some((reason, n.reason.code(), n.from.as_ref().map(|f| f.name.clone())));
                }
            }
            continue;
        }
        pl.built = Some(true);
        pl.targets.push(r.target.clone());
        let is_member = |id: &PackageId| r.members.iter().any(|m| m == id);
        for (i, u) in g.units.iter().enumerate() {
            if !is_member(&u.package) || units.contains(&i) {
                continue;
            }
            if u.deps.iter().any(|(_, d)| units.contains(d)) && !pl.direct.contains(&u.package.name) {
                pl.direct.push(u.package.name.clone());
            }
        }
        if pl.via.is_empty() {
            pl.via = shortest_path(g, &is_member, &units);
        }
    }
    if pl.built == Some(true) {
        pl.not_built = None;
    }
    pl.direct.sort();
    pl
}

/// Package names along one shortest unit path from a member's unit to one of `targets`.
fn shortest_path(g: &Graph, is_member: &dyn Fn(&PackageId) -> bool, targets: &[usize]) -> Vec<String> {
    let n = g.units.len();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut queue = VecDeque::new();
    for (i, u) in g.units.iter().enumerate() {
        if is_member(&u.package) {
            seen[i] = true;
            queue.push_back(i);
        }
    }
    while let Some(u) = queue.pop_front() {
        if targets.contains(&u) {
            let mut path = vec![u];
            let mut cur = u;
            while let Some(p) = parent[cur] {
                path.push(p);
                cur = p;
            }
            path.reverse();
            let mut names: Vec<String> = Vec::new();
            for i in path {
                let name = &g.units[i].package.name;
                if names.last() != Some(name) {
                    names.push(name.clone());
                }
            }
            return names;
        }
        for &(_, d) in &g.units[u].deps {
            if d < n && !seen[d] {
                seen[d] = true;
                parent[d] = Some(u);
                queue.push_back(d);
            }
        }
    }
    Vec::new()
}

/// A capability at a scope that one side has and the other has not, with the findings behind
/// it on the side that has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapDelta {
    pub capability: Capability,
    pub scope: Scope,
    pub findings: Vec<Evidence>,
}

/// One finding, and the diff hunk where it appears (gained capabilities only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub finding: Finding,
    pub hunk: Option<crate::diff::Hunk>,
}

/// Gained and lost (capability, scope) pairs between two finding sets.
pub fn delta(old: &BTreeSet<Finding>, new: &BTreeSet<Finding>) -> (Vec<CapDelta>, Vec<CapDelta>) {
    let keys = |s: &BTreeSet<Finding>| s.iter().map(|f| (f.capability, f.scope)).collect::<BTreeSet<_>>();
    let (ok, nk) = (keys(old), keys(new));
    let pick = |s: &BTreeSet<Finding>, k: &(Capability, Scope)| CapDelta {
        capability: k.0,
        scope: k.1,
        findings: s
            .iter()
            .filter(|f| (f.capability, f.scope) == *k)
            .map(|f| Evidence { finding: f.clone(), hunk: None })
            .collect(),
    };
    let mut added: Vec<CapDelta> = nk.difference(&ok).map(|k| pick(new, k)).collect();
    let mut removed: Vec<CapDelta> = ok.difference(&nk).map(|k| pick(old, k)).collect();
    added.sort_by_key(|d| (cap_rank(d.capability, d.scope), d.capability, d.scope));
    removed.sort_by_key(|d| (cap_rank(d.capability, d.scope), d.capability, d.scope));
    (added, removed)
}

/// How much a gained capability matters, lower first: build-time code and writing files,
/// network, spawning, foreign and dynamically loaded code, then reading, the environment, and
/// the rest.
pub fn cap_rank(c: Capability, scope: Scope) -> u8 {
    use Capability::*;
    let base = match c {
        BuildScript | BuildProcMacro | BuildNative => 0,
        FsWrite | NetConnect | NetListen | ProcessSpawn | Ffi | DynamicLoad | PreMain => 1,
        FsRead | EnvRead | EnvWrite | Unanalyzed => 3,
        Unsafe | Asm => 4,
    };
    if scope == Scope::Build && base > 0 { base.min(2) } else { base }
}

/// The effect of the change on one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramEffect {
    /// The lockfile (workspace) it belongs to.
    pub lockfile: String,
    pub name: String,
    pub package: String,
    /// `changed`, `new` or `gone`.
    pub status: &'static str,
    pub gained: BTreeSet<Capability>,
    pub lost: BTreeSet<Capability>,
    /// The crates behind each gained capability: (crate, version, finding, via).
    pub evidence: Vec<(String, String, Finding, Vec<String>)>,
    /// The target the effect was computed for.
    pub target: String,
}

/// Each program's gains and losses between the two sides for `target`.
pub fn program_effects(lockfile: &str, base: &Side, head: &Side, target: &str) -> Vec<ProgramEffect> {
    let surface = |s: &Side| s.run_for(target).and_then(|r| r.surface.clone());
    let (Some(b), Some(h)) = (surface(base), surface(head)) else { return Vec::new() };
    let mut out = Vec::new();
    // The probe's own library is not a program of anyone's.
    let names: BTreeSet<&String> =
        b.programs.iter().chain(&h.programs).filter(|p| p.package != super::workspaces::PROBE).map(|p| &p.name).collect();
    for name in names {
        let bp = b.programs.iter().find(|p| &p.name == name);
        let hp = h.programs.iter().find(|p| &p.name == name);
        let empty = BTreeSet::new();
        let bc = bp.map_or(&empty, |p| &p.capabilities);
        let hc = hp.map_or(&empty, |p| &p.capabilities);
        let gained: BTreeSet<Capability> = hc.difference(bc).copied().collect();
        let lost: BTreeSet<Capability> = bc.difference(hc).copied().collect();
        let status = match (bp, hp) {
            (None, Some(_)) => "new",
            (Some(_), None) => "gone",
            _ => "changed",
        };
        if gained.is_empty() && lost.is_empty() && status == "changed" {
            continue;
        }
        let mut evidence = Vec::new();
        if let Some(hp) = hp {
            for c in &hp.crates {
                for f in c.findings.iter().filter(|f| f.counts_for_program() && gained.contains(&f.capability)) {
                    evidence.push((c.name.clone(), c.version.clone(), f.clone(), c.via.clone()));
                }
            }
        }
        let package = hp.or(bp).map(|p| p.package.clone()).unwrap_or_default();
        out.push(ProgramEffect {
            lockfile: lockfile.to_string(),
            name: name.clone(),
            package,
            status,
            gained,
            lost,
            evidence,
            target: target.to_string(),
        });
    }
    out
}

/// The committed baseline compared with head, exactly as `velaris check` compares it.
#[derive(Debug, Clone)]
pub struct BaselineEffect {
    pub lockfile: String,
    /// Where the baseline is, relative to the repository (or as read).
    pub origin: String,
    pub state: BaselineState,
    /// Grants the head's baseline adds to the base's (every grant when the base has none), as
    /// the GitHub Action shows them; `None` when the head has no baseline or one of the two
    /// does not parse.
    pub added: Option<Vec<Addition>>,
    /// The line of each table header of head's baseline (`[program.app]` -> 9), to point at
    /// an entry.
    pub header_lines: Vec<(String, u32)>,
}

#[derive(Debug, Clone)]
pub enum BaselineState {
    /// The workspace has no `velaris.capabilities`.
    Missing,
    /// It does not parse: `velaris check` would stop with this.
    Malformed(String),
    /// Head's surface could not be computed.
    Unknown(String),
    Checked {
        target: String,
        /// `velaris check` on head.
        head: Box<CheckOutcome>,
        /// The same baseline against base's surface: whether the widenings are new.
        held_at_base: Option<bool>,
    },
}

/// Compare head's surface (for the baseline's target) with the baseline at head's root.
pub fn baseline_effect(
    lockfile: &str,
    base: &Side,
    head: &Side,
    text: Option<String>,
    base_text: Option<String>,
    origin: String,
    target: &str,
) -> BaselineEffect {
    let mut added = None;
    let header_lines = text
        .as_deref()
        .map(|t| {
            t.lines()
                .enumerate()
                .filter(|(_, l)| l.trim_start().starts_with('['))
                .map(|(i, l)| (l.trim().trim_start_matches('[').trim_end_matches(']').to_string(), i as u32 + 1))
                .collect()
        })
        .unwrap_or_default();
    let state = match text {
        None => BaselineState::Missing,
        Some(t) => match baseline::parse(&t, baseline::FILE_NAME) {
            Err(e) => BaselineState::Malformed(e.to_string()),
            Ok(b) => {
                added = match base_text.as_deref().map(|t| baseline::parse(t, baseline::FILE_NAME)) {
                    None => Some(baseline::additions(None, &b)),
                    Some(Ok(old)) => Some(baseline::additions(Some(&old), &b)),
                    Some(Err(_)) => None,
                };
                match head.run_for(target).and_then(|r| r.surface.as_ref()) {
                    None => BaselineState::Unknown(head.error.clone().unwrap_or_else(|| format!("no analysis for {target}"))),
                    Some(hs) => {
                        let outcome = baseline::check(&b, hs);
                        let held_at_base = base.run_for(target).and_then(|r| r.surface.as_ref()).map(|bs| baseline::check(&b, bs).holds);
                        BaselineState::Checked { target: target.to_string(), head: Box::new(outcome), held_at_base }
                    }
                }
            }
        },
    };
    BaselineEffect { lockfile: lockfile.to_string(), origin, state, added, header_lines }
}

/// The target `velaris check` would analyse for this baseline text (its `target`, else the
/// default), when the text parses.
pub fn baseline_target(text: &str) -> Option<String> {
    baseline::parse(text, baseline::FILE_NAME)
        .ok()
        .map(|b| b.target.unwrap_or_else(|| engine::DEFAULT_TARGET.to_string()))
}
