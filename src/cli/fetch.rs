//! The flags every command that fetches packages shares, resolved into
//! [`velaris::registry::FetchOptions`].

use std::path::PathBuf;

use velaris::depsdiff::publish;
use velaris::registry::FetchOptions;
use velaris::registry::api::ApiOptions;

#[derive(clap::Args, Debug)]
pub struct FetchArgs {
    /// Use only cargo's and velaris' caches; never touch the network.
    #[arg(long)]
    offline: bool,
    /// Velaris' content-addressed cache of verified .crate files (and analysis results).
    #[arg(long, value_name = "DIR", env = "VELARIS_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Downloads in flight at once (1 to 32; their bodies share one memory budget).
    #[arg(long, default_value_t = 8, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=32))]
    jobs: u16,
}

/// How `deps-diff` and `action` ask who published a version and when.
#[derive(clap::Args, Debug)]
pub struct PublicationArgs {
    /// Measure release ages against this time (RFC 3339, or YYYY-MM-DD for midnight UTC)
    /// [default: the head commit's date; now for a work tree or --old/--new].
    #[arg(long, value_name = "TIME", value_parser = parse_as_of)]
    as_of: Option<i64>,
    /// A new version published less than this many days before is flagged `fresh` [default:
    /// 7]. `velaris action`: given, it also fails the run on `fresh` (the `cooldown` input).
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=3650))]
    cooldown: Option<u32>,
    /// Do not ask crates.io who published each new version.
    #[arg(long)]
    no_publisher: bool,
    /// Compare each new package's files with its repository at the commit its
    /// .cargo_vcs_info.json names (fetches the repository; network).
    #[arg(long)]
    verify_source: bool,
}

fn parse_as_of(s: &str) -> Result<i64, String> {
    publish::parse_time(s).ok_or_else(|| format!("{s:?} is not a time: write 2026-07-19T10:00:00Z or 2026-07-19"))
}

impl PublicationArgs {
    /// The options; `VELARIS_CRATES_IO_API` names another API root (a mirror, a test double).
    pub fn options(&self) -> publish::Options {
        let api = (!self.no_publisher).then(|| {
            let mut o = ApiOptions::default();
            if let Some(url) = std::env::var("VELARIS_CRATES_IO_API").ok().filter(|u| !u.is_empty()) {
                o.base_url = if url.ends_with('/') { url } else { format!("{url}/") };
            }
            o
        });
        let fresh_days = self.cooldown.unwrap_or(publish::DEFAULT_FRESH_DAYS);
        publish::Options { as_of: self.as_of, fresh_days, api, verify_source: self.verify_source }
    }

    /// `--cooldown`, when given.
    pub fn cooldown(&self) -> Option<u32> {
        self.cooldown
    }
}

impl FetchArgs {
    /// The options, reporting progress to `progress`.
    pub fn options(&self, progress: velaris::progress::Progress) -> FetchOptions {
        FetchOptions {
            cache_dir: self.cache_dir.clone(),
            offline: self.offline,
            jobs: self.jobs as usize,
            progress,
            ..FetchOptions::default()
        }
    }
}
