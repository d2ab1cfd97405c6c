//! The publication of each new version: when it was published (its release age, from the
//! index's `pubtime` or crates.io's `created_at`, measured against the head commit's date so a
//! review is reproducible, or `--as-of`), who published it (crates.io's `published_by` and
//! `trustpub_data`, for crates.io packages only), and, with `--verify-source`, whether the
//! package's files are the repository's at the commit `.cargo_vcs_info.json` names.
//!
//! This module owns the facts of a publication and the flags they raise: `fresh` (younger than
//! the cooldown), `publisher-changed`, `trusted-publishing-lost`, `publisher-new`,
//! `trusted-publishing-repository`, `files-not-in-repository` and `vcs-commit-not-found`. What
//! could not be asked is said per package ([`PublisherCheck::NotChecked`],
//! [`SourceCheck::NotChecked`]), never left out. The requests themselves are
//! [`crate::registry::api`]'s and [`crate::gitdeps`]'s; scoring is [`super::risk`]'s.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, Utc};
use sha1::{Digest, Sha1};

use super::flags::{Flag, FlagKind, MAX_EVIDENCE, norm_repo};
use crate::lockfile::{ChangeKind, SemverBump};
use crate::package::FileTree;
use crate::registry::api::{ApiOptions, CrateFacts, VersionFacts};

/// The default cooldown: a version younger than this is `fresh`.
pub const DEFAULT_FRESH_DAYS: u32 = 7;

/// What the publication checks do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The time ages are measured against (seconds since the Unix epoch): `--as-of`. `None`:
    /// the head commit's committer date, else (a work tree, two files) now.
    pub as_of: Option<i64>,
    /// A new version younger than this many days is `fresh`.
    pub fresh_days: u32,
    /// Ask crates.io who published each new crates.io version. `None`: not asked
    /// (`--no-publisher`). Its `cache_dir` and `offline` are taken from the fetch options.
    pub api: Option<ApiOptions>,
    /// Compare each new package's files with its repository at the commit it names.
    pub verify_source: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { as_of: None, fresh_days: DEFAULT_FRESH_DAYS, api: Some(ApiOptions::default()), verify_source: false }
    }
}

/// What release ages are measured against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AsOf {
    /// Seconds since the Unix epoch.
    pub time: i64,
    pub from: AsOfFrom,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AsOfFrom {
    /// `--as-of`.
    Given,
    /// The head commit's committer date.
    HeadCommit(String),
    /// The time of the run (no head commit: a work tree or two files).
    #[default]
    Now,
}

impl AsOfFrom {
    pub fn code(&self) -> &'static str {
        match self {
            AsOfFrom::Given => "as-of",
            AsOfFrom::HeadCommit(_) => "head-commit",
            AsOfFrom::Now => "now",
        }
    }
}

impl AsOf {
    /// "the head commit (2026-07-19 10:00 UTC)".
    pub fn describe(&self) -> String {
        let when = format_time(self.time);
        match &self.from {
            AsOfFrom::Given => format!("--as-of {when}"),
            AsOfFrom::HeadCommit(_) => format!("the head commit ({when})"),
            AsOfFrom::Now => format!("now ({when})"),
        }
    }
}

/// The run's publication settings, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub as_of: AsOf,
    pub fresh_days: u32,
    /// crates.io was to be asked who published (not `--no-publisher`).
    pub publisher_asked: bool,
    /// Requests sent to crates.io's API this run (cached answers send none).
    pub api_requests: usize,
    pub verify_source: bool,
}

/// `2026-07-19T10:00:00Z`, `2026-07-19` (midnight UTC), or an RFC 3339 time with an offset.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp());
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc().timestamp())
}

/// `2026-07-19 10:00 UTC`.
pub fn format_time(t: i64) -> String {
    DateTime::<Utc>::from_timestamp(t, 0).map_or_else(|| t.to_string(), |d| d.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// The current time, for [`AsOfFrom::Now`].
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// When the new version was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// As the source wrote it (RFC 3339).
    pub time: String,
    /// Seconds before the reference time ([`AsOf`]); negative when published after it.
    pub age: i64,
    /// `index` (`pubtime`) or `api` (crates.io's `created_at`).
    pub from: &'static str,
}

/// Who published a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publisher {
    /// A user's API token; `None` when crates.io recorded no user (versions from before 2019).
    Token(Option<String>),
    /// A trusted-publishing workflow.
    Trusted { provider: String, repository: Option<String>, run: Option<String> },
}

impl Publisher {
    pub fn of(v: &VersionFacts) -> Publisher {
        match &v.trustpub {
            Some(t) => Publisher::Trusted { provider: t.provider.clone(), repository: t.repository.clone(), run: t.run.clone() },
            None => Publisher::Token(v.published_by.clone()),
        }
    }

    /// "alice (API token)", "trusted publishing: github o/r (run 1234)".
    pub fn describe(&self) -> String {
        match self {
            Publisher::Token(Some(l)) => format!("{l} (API token)"),
            Publisher::Token(None) => "an API token (no user recorded)".to_string(),
            Publisher::Trusted { provider, repository, run } => {
                let repo = repository.as_deref().map(|r| format!(" {r}")).unwrap_or_default();
                let run = run.as_deref().map(|r| format!(" (run {r})")).unwrap_or_default();
                format!("trusted publishing: {provider}{repo}{run}")
            }
        }
    }

    pub fn is_token(&self) -> bool {
        matches!(self, Publisher::Token(_))
    }

    /// Who it is, for comparing two publications: a login, or a workflow's repository.
    fn identity(&self) -> Option<String> {
        match self {
            Publisher::Token(l) => l.clone().map(|l| format!("user {l}")),
            Publisher::Trusted { provider, repository, .. } => repository.as_ref().map(|r| format!("{provider} {}", r.to_ascii_lowercase())),
        }
    }
}

/// What crates.io says of the new version's publication, or why it was not asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublisherCheck {
    Checked(Publishers),
    NotChecked(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publishers {
    pub new: Publisher,
    /// The base version's, for an upgrade or downgrade of a crates.io package.
    pub old: Option<Publisher>,
    /// The crate accepts trusted publishing only.
    pub trustpub_only: Option<bool>,
    /// Versions published before the new one.
    pub earlier_versions: usize,
    /// Users who published an earlier version.
    pub earlier_users: Vec<String>,
    /// Earlier versions published by a trusted-publishing workflow.
    pub earlier_trusted: usize,
}

/// The package's files against its repository at the commit it names (`--verify-source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceCheck {
    /// Every file is the repository's (at its path, or elsewhere in the tree).
    Matched { repository: String, commit: String, files: usize },
    /// Files the repository does not have at that commit.
    Unmatched { repository: String, commit: String, files: usize, only_in_package: Vec<String>, differ: Vec<String> },
    /// The repository has no such commit.
    CommitNotFound { repository: String, commit: String },
    NotChecked(String),
}

/// Everything about one new version's publication.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Publication {
    /// When the new version was published (new registry versions whose time is known).
    pub release: Option<Release>,
    /// Who published it (new registry versions).
    pub publisher: Option<PublisherCheck>,
    /// With `--verify-source`: new registry versions.
    pub source: Option<SourceCheck>,
}

/// The release of `version` from the index's `pubtime`, else crates.io's `created_at`.
pub fn release(pubtime: Option<&str>, facts: Option<&VersionFacts>, as_of: &AsOf) -> Option<Release> {
    let (time, from) = match (pubtime.filter(|t| parse_time(t).is_some()), facts) {
        (Some(t), _) => (t.to_string(), "index"),
        (None, Some(f)) if parse_time(&f.created_at).is_some() => (f.created_at.clone(), "api"),
        _ => return None,
    };
    let t = parse_time(&time)?;
    Some(Release { time, age: as_of.time - t, from })
}

/// The publishers of `new` (and `old`) from what crates.io says of the crate.
pub fn publishers(facts: &CrateFacts, new: &str, old: Option<&str>) -> Option<Publishers> {
    let n = facts.version(new)?;
    let published = parse_time(&n.created_at);
    let earlier: Vec<&VersionFacts> = facts
        .versions
        .iter()
        .filter(|v| v.num != new && matches!((parse_time(&v.created_at), published), (Some(a), Some(b)) if a < b))
        .collect();
    let mut users: Vec<String> = earlier.iter().filter_map(|v| v.published_by.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    users.sort();
    Some(Publishers {
        new: Publisher::of(n),
        old: old.and_then(|o| facts.version(o)).map(Publisher::of),
        trustpub_only: facts.trustpub_only,
        earlier_versions: earlier.len(),
        earlier_users: users,
        earlier_trusted: earlier.iter().filter(|v| v.trustpub.is_some()).count(),
    })
}

/// The repository a trusted publisher's workflow ran in, as a URL to compare with `repository`.
fn trusted_repo_url(provider: &str, repository: &str) -> Option<String> {
    match provider {
        "github" => Some(format!("https://github.com/{repository}")),
        "gitlab" => Some(format!("https://gitlab.com/{repository}")),
        _ => None,
    }
}

/// The flags of one package's publication. `declared`: the new manifest's `repository`;
/// `fresh_days`: the cooldown; `as_of`: what ages are measured against.
pub fn flags(
    name: &str,
    version: &str,
    publication: &Publication,
    declared: Option<&str>,
    fresh_days: u32,
    as_of: &AsOf,
) -> Vec<Flag> {
    let mut out = Vec::new();
    if let Some(r) = &publication.release {
        if r.age < i64::from(fresh_days) * 86_400 {
            let when = if r.age < 0 {
                format!("published after {} ({})", as_of.describe(), r.time)
            } else {
                format!("published {} before {}", crate::text::age(r.age), as_of.describe())
            };
            out.push(Flag {
                kind: FlagKind::Fresh,
                message: format!("{version} is {when}: younger than the {}-day cooldown", fresh_days),
                evidence: vec![match r.from {
                    "index" => format!("index entry of {name} {version}: \"pubtime\": \"{}\"", r.time),
                    _ => format!("crates.io: {name} {version} \"created_at\": \"{}\"", r.time),
                }],
            });
        }
    }
    if let Some(PublisherCheck::Checked(p)) = &publication.publisher {
        let ev_new = format!("crates.io: {name} {version} published by {}", p.new.describe());
        match (&p.old, &p.new) {
            (Some(old @ Publisher::Trusted { .. }), Publisher::Token(_)) => out.push(Flag {
                kind: FlagKind::TrustedPublishingLost,
                message: format!("published with an API token where the previous version came from a trusted-publishing workflow ({})", old.describe()),
                evidence: vec![ev_new.clone(), format!("crates.io: the base version was published by {}", old.describe())],
            }),
            (_, Publisher::Token(_)) if p.trustpub_only == Some(true) => out.push(Flag {
                kind: FlagKind::TrustedPublishingLost,
                message: "published with an API token, though the crate accepts trusted publishing only".to_string(),
                evidence: vec![ev_new.clone(), format!("crates.io: {name} \"trustpub_only\": true")],
            }),
            _ => {}
        }
        if let (Some(old), new) = (&p.old, &p.new) {
            let same_kind = old.is_token() == new.is_token();
            if let (Some(a), Some(b), true) = (old.identity(), new.identity(), same_kind) {
                if a != b {
                    out.push(Flag {
                        kind: FlagKind::PublisherChanged,
                        message: format!("published by {} where the base version was published by {}", new.describe(), old.describe()),
                        evidence: vec![ev_new.clone()],
                    });
                }
            }
        }
        // New to the crate: earlier versions name their publishers, and this user is none of
        // them (versions from before crates.io recorded publishers say nothing).
        if let Publisher::Token(Some(login)) = &p.new {
            if (!p.earlier_users.is_empty() || p.earlier_trusted > 0) && !p.earlier_users.contains(login) {
                let mut earlier: Vec<String> = p.earlier_users.iter().take(MAX_EVIDENCE).cloned().collect();
                if p.earlier_trusted > 0 {
                    earlier.push(format!("trusted publishing ({})", crate::text::plural(p.earlier_trusted as u64, "version", "versions")));
                }
                out.push(Flag {
                    kind: FlagKind::PublisherNew,
                    message: format!("published by {login}, who published none of the {} earlier versions", p.earlier_versions),
                    evidence: vec![ev_new.clone(), format!("earlier publishers: {}", earlier.join(", "))],
                });
            }
        }
        if let (Publisher::Trusted { provider, repository: Some(repo), .. }, Some(declared)) = (&p.new, declared) {
            if let Some(url) = trusted_repo_url(provider, repo) {
                if norm_repo(&url) != norm_repo(declared) {
                    out.push(Flag {
                        kind: FlagKind::TrustedPublishingRepository,
                        message: format!("published by a workflow in {url}, not the repository the manifest declares ({declared})"),
                        evidence: vec![ev_new.clone(), format!("Cargo.toml: repository = {declared:?}")],
                    });
                }
            }
        }
    }
    match &publication.source {
        Some(SourceCheck::Unmatched { repository, commit, only_in_package, differ, .. }) => {
            let mut evidence: Vec<String> = only_in_package.iter().map(|f| format!("{f}: not in the repository")).collect();
            evidence.extend(differ.iter().map(|f| format!("{f}: differs from the repository's")));
            evidence.truncate(MAX_EVIDENCE);
            let mut parts = Vec::new();
            if !only_in_package.is_empty() {
                parts.push(crate::text::plural(only_in_package.len() as u64, "file is only in the package", "files are only in the package"));
            }
            if !differ.is_empty() {
                parts.push(crate::text::plural(differ.len() as u64, "file differs", "files differ"));
            }
            out.push(Flag {
                kind: FlagKind::FilesNotInRepository,
                message: format!("{} from {repository} at {}", parts.join(", "), short(commit)),
                evidence,
            });
        }
        Some(SourceCheck::CommitNotFound { repository, commit }) => out.push(Flag {
            kind: FlagKind::VcsCommitNotFound,
            message: format!("the commit it says it was published from ({}) is in no branch or tag of {repository}", short(commit)),
            evidence: vec![format!(".cargo_vcs_info.json: \"sha1\": \"{commit}\"")],
        }),
        _ => {}
    }
    out
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// A fresh patch release published with an API token: the shape of a stolen-token release.
pub fn fresh_token_patch(change: ChangeKind, semver: Option<SemverBump>, publication: &Publication, fresh: bool) -> bool {
    fresh
        && change == ChangeKind::Upgraded
        && semver == Some(SemverBump::Patch)
        && matches!(&publication.publisher, Some(PublisherCheck::Checked(p)) if p.new.is_token())
}

/// Files `cargo package` writes rather than copies: never compared.
fn generated(path: &str) -> bool {
    matches!(path, ".cargo_vcs_info.json" | "Cargo.toml" | "Cargo.lock")
}

/// Git's object id of a blob with these bytes.
fn blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Files listed per kind in a [`SourceCheck::Unmatched`].
const MAX_LISTED: usize = 50;

/// Compare a package's files with the tree of its repository at the commit it names. `tree`:
/// (path, blob id) of every file of that commit; `path_in_vcs`: the package's directory there.
/// A file matches when the repository has the same bytes at its path, or anywhere in the
/// tree (a README or license `cargo package` copies from a parent directory); `Cargo.toml.orig`
/// is the repository's `Cargo.toml`.
pub fn compare_source(files: &FileTree, tree: &[(String, String)], path_in_vcs: &str, repository: &str, commit: &str) -> SourceCheck {
    let prefix = path_in_vcs.trim_matches('/');
    let at: BTreeMap<&str, &str> = tree.iter().map(|(p, o)| (p.as_str(), o.as_str())).collect();
    let anywhere: BTreeSet<&str> = tree.iter().map(|(_, o)| o.as_str()).collect();
    let (mut only, mut differ, mut compared) = (Vec::new(), Vec::new(), 0);
    for (path, bytes) in files {
        if generated(path) {
            continue;
        }
        compared += 1;
        let repo_path = if path == "Cargo.toml.orig" { "Cargo.toml" } else { path.as_str() };
        let full = if prefix.is_empty() { repo_path.to_string() } else { format!("{prefix}/{repo_path}") };
        let id = blob_id(bytes);
        match at.get(full.as_str()) {
            Some(o) if *o == id => {}
            _ if anywhere.contains(id.as_str()) => {}
            Some(_) => differ.push(path.clone()),
            None => only.push(path.clone()),
        }
    }
    let (repository, commit) = (repository.to_string(), commit.to_string());
    if only.is_empty() && differ.is_empty() {
        return SourceCheck::Matched { repository, commit, files: compared };
    }
    only.truncate(MAX_LISTED);
    differ.truncate(MAX_LISTED);
    SourceCheck::Unmatched { repository, commit, files: compared, only_in_package: only, differ }
}

/// The URL `--verify-source` fetches for a declared `repository`: on the well-known forges the
/// repository itself (`/tree/main/sub` dropped), elsewhere the URL as declared.
pub fn fetch_url(declared: &str) -> String {
    let n = norm_repo(declared);
    let forge = ["github.com/", "gitlab.com/", "codeberg.org/", "bitbucket.org/"].iter().any(|f| n.starts_with(f));
    if forge { format!("https://{n}") } else { declared.trim().to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::api::TrustPub;

    fn as_of() -> AsOf {
        AsOf { time: parse_time("2026-07-20T00:00:00Z").unwrap(), from: AsOfFrom::Given }
    }

    fn v(num: &str, at: &str, by: Option<&str>, repo: Option<&str>) -> VersionFacts {
        VersionFacts {
            num: num.into(),
            created_at: at.into(),
            published_by: by.map(str::to_string),
            trustpub: repo.map(|r| TrustPub { provider: "github".into(), repository: Some(r.into()), run: Some("1".into()), sha: None }),
        }
    }

    fn facts(versions: Vec<VersionFacts>, only: bool) -> CrateFacts {
        CrateFacts { name: "demo".into(), trustpub_only: Some(only), versions }
    }

    fn codes(p: &Publication, declared: Option<&str>) -> Vec<&'static str> {
        flags("demo", "1.0.1", p, declared, 7, &as_of()).iter().map(|f| f.kind.code()).collect()
    }

    fn checked(f: &CrateFacts) -> Publication {
        Publication { publisher: Some(PublisherCheck::Checked(publishers(f, "1.0.1", Some("1.0.0")).unwrap())), ..Publication::default() }
    }

    #[test]
    fn times_parse_as_documented() {
        assert_eq!(parse_time("1970-01-02"), Some(86_400));
        assert_eq!(parse_time("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_time("2026-07-18T23:05:13.123456Z"), parse_time("2026-07-18T23:05:13Z"));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
    }

    #[test]
    fn fresh_below_the_cooldown_and_not_above() {
        let at = as_of();
        let two_hours = release(Some("2026-07-19T22:00:00Z"), None, &at).unwrap();
        assert_eq!((two_hours.age, two_hours.from), (7200, "index"));
        let fresh = flags("demo", "1.0.1", &Publication { release: Some(two_hours), ..Default::default() }, None, 7, &at);
        assert_eq!(fresh[0].kind, FlagKind::Fresh);
        assert!(fresh[0].message.contains("published 2 hours before --as-of 2026-07-20 00:00 UTC"), "{}", fresh[0].message);
        // The benign twin: an old release.
        let old = release(Some("2026-07-01T00:00:00Z"), None, &at).unwrap();
        assert!(flags("demo", "1.0.1", &Publication { release: Some(old.clone()), ..Default::default() }, None, 7, &at).is_empty());
        // The threshold is the cooldown given.
        assert_eq!(flags("demo", "1.0.1", &Publication { release: Some(old), ..Default::default() }, None, 30, &at).len(), 1);
        // Published after the reference time: fresh, and said so.
        let later = release(Some("2026-07-21T00:00:00Z"), None, &at).unwrap();
        let f = flags("demo", "1.0.1", &Publication { release: Some(later), ..Default::default() }, None, 7, &at);
        assert!(f[0].message.contains("published after"), "{}", f[0].message);
        // No pubtime: crates.io's created_at; neither: no release, no flag.
        let api = v("1.0.1", "2026-07-19T00:00:00Z", Some("a"), None);
        assert_eq!(release(None, Some(&api), &at).unwrap().from, "api");
        assert_eq!(release(Some("garbage"), None, &at), None);
    }

    #[test]
    fn trusted_publishing_lost_and_kept() {
        let lost = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", None, Some("o/demo")), v("1.0.1", "2026-07-19T00:00:00Z", Some("mallory"), None)], false);
        assert_eq!(codes(&checked(&lost), Some("https://github.com/o/demo")), ["trusted-publishing-lost", "publisher-new"]);
        let kept = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", None, Some("o/demo")), v("1.0.1", "2026-07-19T00:00:00Z", None, Some("o/demo"))], false);
        assert!(codes(&checked(&kept), Some("https://github.com/o/demo")).is_empty());
        // A crate that accepts trusted publishing only, published with a token.
        let only = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", Some("alice"), None), v("1.0.1", "2026-07-19T00:00:00Z", Some("alice"), None)], true);
        assert_eq!(codes(&checked(&only), None), ["trusted-publishing-lost"]);
    }

    #[test]
    fn publisher_changed_new_and_the_same() {
        let changed = facts(
            vec![
                v("0.9.0", "2025-01-01T00:00:00Z", Some("bob"), None),
                v("1.0.0", "2026-01-01T00:00:00Z", Some("alice"), None),
                v("1.0.1", "2026-07-19T00:00:00Z", Some("bob"), None),
            ],
            false,
        );
        assert_eq!(codes(&checked(&changed), None), ["publisher-changed"]);
        let new = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", Some("alice"), None), v("1.0.1", "2026-07-19T00:00:00Z", Some("mallory"), None)], false);
        assert_eq!(codes(&checked(&new), None), ["publisher-changed", "publisher-new"]);
        let same = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", Some("alice"), None), v("1.0.1", "2026-07-19T00:00:00Z", Some("alice"), None)], false);
        assert!(codes(&checked(&same), None).is_empty());
        // A later version by someone else does not make the publisher new.
        let later = facts(vec![v("1.0.1", "2026-07-19T00:00:00Z", Some("alice"), None), v("1.0.2", "2026-07-19T01:00:00Z", Some("bob"), None)], false);
        assert!(codes(&checked(&later), None).is_empty());
        // Moving from a token to trusted publishing is no change of publisher.
        let better = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", Some("alice"), None), v("1.0.1", "2026-07-19T00:00:00Z", None, Some("o/demo"))], false);
        assert!(codes(&checked(&better), Some("https://github.com/o/demo/tree/main/demo")).is_empty());
    }

    #[test]
    fn trusted_publishing_from_another_repository() {
        let other = facts(vec![v("1.0.0", "2026-01-01T00:00:00Z", None, Some("evil/demo")), v("1.0.1", "2026-07-19T00:00:00Z", None, Some("evil/demo"))], false);
        assert_eq!(codes(&checked(&other), Some("https://github.com/o/demo")), ["trusted-publishing-repository"]);
        assert!(codes(&checked(&other), Some("https://github.com/Evil/demo.git")).is_empty());
    }

    #[test]
    fn source_comparison_finds_files_only_in_the_package() {
        let files: FileTree = [
            ("Cargo.toml", "normalized"),
            ("Cargo.toml.orig", "[package]\n"),
            (".cargo_vcs_info.json", "{}"),
            ("src/lib.rs", "pub fn f() {}\n"),
            ("README.md", "readme\n"),
        ]
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect();
        let tree = vec![
            ("crates/demo/Cargo.toml".to_string(), blob_id(b"[package]\n")),
            ("crates/demo/src/lib.rs".to_string(), blob_id(b"pub fn f() {}\n")),
            ("README.md".to_string(), blob_id(b"readme\n")),
        ];
        assert_eq!(compare_source(&files, &tree, "crates/demo", "r", "c"), SourceCheck::Matched { repository: "r".into(), commit: "c".into(), files: 3 });
        let mut evil = files.clone();
        evil.insert("src/backdoor.rs".into(), b"fn steal() {}\n".to_vec());
        evil.insert("src/lib.rs".into(), b"pub fn f() {} mod backdoor;\n".to_vec());
        match compare_source(&evil, &tree, "crates/demo/", "r", "c") {
            SourceCheck::Unmatched { only_in_package, differ, .. } => {
                assert_eq!(only_in_package, ["src/backdoor.rs"]);
                assert_eq!(differ, ["src/lib.rs"]);
            }
            other => panic!("{other:?}"),
        }
        // Git's blob ids, as `git hash-object` computes them.
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn fetch_urls() {
        assert_eq!(fetch_url("https://github.com/o/r/tree/main/sub"), "https://github.com/o/r");
        assert_eq!(fetch_url("https://git.example.org/r.git"), "https://git.example.org/r.git");
    }
}
