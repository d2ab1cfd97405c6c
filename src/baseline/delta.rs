//! What one baseline grants that another does not: the grants a change adds to
//! `velaris.capabilities`, so that a reviewer sees them first.

use std::collections::{BTreeMap, BTreeSet};

use super::{Baseline, Grant, Location, Subject};
use crate::surface::Capability;

/// A grant the newer baseline adds: a whole new entry, or capabilities added to an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addition {
    pub subject: Subject,
    /// Granted by the newer baseline and not by the older, in canonical order.
    pub capabilities: BTreeSet<Capability>,
    /// The older baseline has no entry for the subject.
    pub new_subject: bool,
    /// The entry's `reason` in the newer baseline.
    pub reason: Option<String>,
    /// The newer baseline's reasons for the added capabilities.
    pub reasons: BTreeMap<Capability, String>,
    /// Where the entry is in the newer baseline.
    pub at: Location,
    /// Where each added capability is written in the newer baseline.
    pub capability_at: BTreeMap<Capability, Location>,
    /// APIs the newer baseline adds to a capability both pin (`[crate.NAME.apis]`).
    pub apis: BTreeMap<Capability, BTreeSet<String>>,
    /// Capabilities the older baseline pinned to APIs and the newer grants through any API.
    pub unpinned: BTreeSet<Capability>,
}

impl Addition {
    /// `process.spawn, fs.write via std::fs::remove_dir_all, net.connect via any API`.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self.capabilities.iter().map(|c| c.to_string()).collect();
        for (c, apis) in &self.apis {
            parts.extend(apis.iter().map(|a| format!("{c} via {a}")));
        }
        parts.extend(self.unpinned.iter().map(|c| format!("{c} via any API")));
        parts.join(", ")
    }
}

fn added(subject: Subject, old: Option<&Grant>, new: &Grant) -> Option<Addition> {
    let empty = BTreeSet::new();
    let before = old.map_or(&empty, |g| &g.capabilities);
    let capabilities: BTreeSet<Capability> = new.capabilities.difference(before).copied().collect();
    // Pins: on capabilities granted on both sides, a new API widens, and so does a pin
    // removed (any API is allowed again).
    let mut apis: BTreeMap<Capability, BTreeSet<String>> = BTreeMap::new();
    let mut unpinned = BTreeSet::new();
    if let Some(old) = old {
        for cap in new.capabilities.intersection(&old.capabilities) {
            match (old.apis.get(cap), new.apis.get(cap)) {
                (Some(o), Some(n)) => {
                    let more: BTreeSet<String> = n.difference(o).cloned().collect();
                    if !more.is_empty() {
                        apis.insert(*cap, more);
                    }
                }
                (Some(_), None) => {
                    unpinned.insert(*cap);
                }
                _ => {}
            }
        }
    }
    // A new entry that grants nothing still is a new entry, but it widens nothing.
    if capabilities.is_empty() && apis.is_empty() && unpinned.is_empty() {
        return None;
    }
    Some(Addition {
        apis,
        unpinned,
        subject,
        reasons: new.reasons.iter().filter(|(c, _)| capabilities.contains(c)).map(|(c, r)| (*c, r.clone())).collect(),
        capability_at: new.capability_at.iter().filter(|(c, _)| capabilities.contains(c)).map(|(c, l)| (*c, *l)).collect(),
        capabilities,
        new_subject: old.is_none(),
        reason: new.reason.clone(),
        at: new.at,
    })
}

/// The grants `new` adds to `old`: programs sorted by name, then crates sorted by name. With no
/// `old` (the file did not exist), every grant of `new` is an addition.
pub fn additions(old: Option<&Baseline>, new: &Baseline) -> Vec<Addition> {
    let mut out = Vec::new();
    for (name, g) in &new.programs {
        let before = old.and_then(|o| o.programs.get(name));
        out.extend(added(Subject::Program(name.clone()), before, g));
    }
    for (name, g) in &new.crates {
        let before = old.and_then(|o| o.crates.get(name));
        out.extend(added(Subject::Crate(name.clone()), before, g));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::parse;

    const OLD: &str = "version = 1\n\n[program.app]\ncapabilities = [\"fs.read\"]\n\n[crate.netlib]\ncapabilities = [\"net.connect\"]\n";

    #[test]
    fn added_capabilities_and_entries_with_reasons() {
        let old = parse(OLD, "old").unwrap();
        let new = parse(
            "version = 1\n\n[program.app]\ncapabilities = [\"fs.read\", \"process.spawn\"]\nreason = \"runs git\"\n\n[program.app.reasons]\n\"process.spawn\" = \"git only\"\n\n[crate.evil]\ncapabilities = [\"net.connect\"]\n\n[crate.netlib]\ncapabilities = []\n",
            "new",
        )
        .unwrap();
        let a = additions(Some(&old), &new);
        assert_eq!(a.len(), 2, "{a:#?}");
        assert_eq!(a[0].subject, Subject::Program("app".into()));
        assert_eq!(a[0].capabilities.iter().map(|c| c.as_str()).collect::<Vec<_>>(), ["process.spawn"]);
        assert!(!a[0].new_subject);
        assert_eq!(a[0].reasons.get(&Capability::ProcessSpawn).map(String::as_str), Some("git only"));
        assert_eq!(a[0].reason.as_deref(), Some("runs git"));
        assert_eq!(a[0].capability_at[&Capability::ProcessSpawn].line, 4);
        assert_eq!(a[1].subject, Subject::Crate("evil".into()));
        assert!(a[1].new_subject);
    }

    #[test]
    fn narrowing_and_no_change_add_nothing() {
        let old = parse(OLD, "old").unwrap();
        assert!(additions(Some(&old), &old).is_empty());
        let narrower = parse("version = 1\n\n[program.app]\ncapabilities = []\n", "new").unwrap();
        assert!(additions(Some(&old), &narrower).is_empty());
    }

    #[test]
    fn pinned_apis_added_or_unpinned_are_additions_and_new_pins_are_not() {
        let old = parse("version = 1\n[crate.app]\ncapabilities = [\"fs.write\", \"net.connect\"]\n[crate.app.apis]\n\"fs.write\" = [\"std::fs::write\"]\n\"net.connect\" = [\"std::net::TcpStream::connect\"]\n", "old").unwrap();
        let new = parse("version = 1\n[crate.app]\ncapabilities = [\"fs.write\", \"net.connect\"]\n[crate.app.apis]\n\"fs.write\" = [\"std::fs::remove_dir_all\", \"std::fs::write\"]\n", "new").unwrap();
        let a = additions(Some(&old), &new);
        assert_eq!(a.len(), 1, "{a:#?}");
        assert!(a[0].capabilities.is_empty());
        assert_eq!(a[0].summary(), "fs.write via std::fs::remove_dir_all, net.connect via any API");
        // Pinning what was unpinned narrows: nothing is added.
        assert!(additions(Some(&parse("version = 1\n[crate.app]\ncapabilities = [\"fs.write\", \"net.connect\"]\n", "o").unwrap()), &old).is_empty());
    }

    #[test]
    fn without_an_old_baseline_everything_is_added() {
        let new = parse(OLD, "new").unwrap();
        let a = additions(None, &new);
        assert_eq!(a.len(), 2);
        assert!(a.iter().all(|x| x.new_subject));
    }
}
