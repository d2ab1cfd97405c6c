//! The flags every command that fetches packages shares, resolved into
//! [`velaris::registry::FetchOptions`].

use std::path::PathBuf;

use velaris::registry::FetchOptions;

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
