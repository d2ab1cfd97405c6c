//! The words for a new version's publication, shared by the human and markdown renderings:
//! its release age, its publisher (or why it was not checked) and its source against its
//! repository. Plain text, unescaped: each renderer escapes for its medium.

use std::collections::BTreeMap;

use crate::depsdiff::publish::{PublisherCheck, SourceCheck};
use crate::depsdiff::{PackageReport, Report};

/// "release ages against the head commit (2026-07-19 10:00 UTC), cooldown 7 days; publishers
/// from crates.io: 12 checked, 3 not checked (2 requests)".
pub fn summary_line(report: &Report) -> Option<String> {
    let s = &report.publication;
    let with: Vec<&PackageReport> = report.packages.iter().filter(|p| p.publication.publisher.is_some() || p.publication.release.is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let checked = with.iter().filter(|p| matches!(p.publication.publisher, Some(PublisherCheck::Checked(_)))).count();
    let not = with.iter().filter(|p| matches!(p.publication.publisher, Some(PublisherCheck::NotChecked(_)))).count();
    let mut line = format!("release ages against {}, cooldown {}", s.as_of.describe(), crate::text::plural(u64::from(s.fresh_days), "day", "days"));
    if s.publisher_asked {
        line.push_str(&format!(
            "; publishers from crates.io: {checked} checked, {not} not checked ({})",
            crate::text::plural(s.api_requests as u64, "request", "requests")
        ));
    } else {
        line.push_str("; publishers not checked (--no-publisher)");
    }
    Some(line)
}

/// "published 2 hours before the head commit", "release time unknown (the index records
/// none)".
pub fn release_phrase(p: &PackageReport) -> Option<String> {
    if p.publication.publisher.is_none() && p.publication.release.is_none() {
        return None;
    }
    Some(match &p.publication.release {
        Some(r) if r.age < 0 => format!("published {} (after the review's reference time)", r.time),
        Some(r) => format!("published {} before", crate::text::age(r.age)),
        None => "release time unknown (the index records none)".to_string(),
    })
}

/// "by alice (API token)", "by trusted publishing: github o/r (run 1)"; `None` when not
/// checked (see [`not_checked`]).
pub fn publisher_phrase(p: &PackageReport) -> Option<String> {
    match &p.publication.publisher {
        Some(PublisherCheck::Checked(c)) => Some(format!("by {}", c.new.describe())),
        _ => None,
    }
}

/// "source matches github.com/o/r at 1a2b3c4d5e6f (42 files)", ...; `None` without
/// `--verify-source`.
pub fn source_phrase(p: &PackageReport) -> Option<String> {
    let short = |c: &str| c.chars().take(12).collect::<String>();
    Some(match p.publication.source.as_ref()? {
        SourceCheck::Matched { repository, commit, files } => {
            format!("source matches {repository} at {} ({})", short(commit), crate::text::plural(*files as u64, "file", "files"))
        }
        SourceCheck::Unmatched { repository, commit, only_in_package, differ, .. } => format!(
            "source does not match {repository} at {}: {} only in the package, {} differ",
            short(commit),
            only_in_package.len(),
            differ.len()
        ),
        SourceCheck::CommitNotFound { repository, commit } => format!("commit {} not found in {repository}", short(commit)),
        SourceCheck::NotChecked(why) => format!("source not verified: {why}"),
    })
}

/// The package's publication in one line, or `None` when it has none (a removed, git or local
/// package). `with_not_checked`: say why the publisher was not checked (the markdown groups
/// those by reason instead).
pub fn line(p: &PackageReport, with_not_checked: bool) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let release = release_phrase(p);
    match (release, publisher_phrase(p)) {
        (Some(r), Some(b)) => parts.push(format!("{r} {b}")),
        (Some(r), None) => parts.push(r),
        (None, Some(b)) => parts.push(format!("published {b}")),
        (None, None) => {}
    }
    if let (Some(PublisherCheck::NotChecked(why)), true) = (&p.publication.publisher, with_not_checked) {
        parts.push(format!("publisher not checked: {why}"));
    }
    parts.extend(source_phrase(p));
    if parts.is_empty() { None } else { Some(parts.join("; ")) }
}

/// Whether anything about the publication needs a reviewer's eyes.
pub fn flagged(p: &PackageReport) -> bool {
    p.flags.iter().any(|f| f.kind.is_publication())
}

/// The packages whose publisher was not checked, grouped by why.
pub fn not_checked(report: &Report) -> Vec<(String, Vec<&PackageReport>)> {
    let mut by: BTreeMap<String, Vec<&PackageReport>> = BTreeMap::new();
    for p in &report.packages {
        if let Some(PublisherCheck::NotChecked(why)) = &p.publication.publisher {
            by.entry(why.clone()).or_default().push(p);
        }
    }
    by.into_iter().collect()
}

/// Nothing is known of the publication but that the index records no time.
pub fn only_unknown_time(p: &PackageReport) -> bool {
    p.publication.release.is_none()
        && !matches!(p.publication.publisher, Some(PublisherCheck::Checked(_)))
        && p.publication.source.is_none()
        && p.publication.publisher.is_some()
}
