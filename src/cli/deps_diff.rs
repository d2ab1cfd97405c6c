//! `velaris deps-diff`: flags, and their resolution into [`velaris::depsdiff::Config`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use velaris::depsdiff::{self, Input};
use velaris::diff::DiffOptions;
use velaris::report::{self, Detail, HumanOptions, MarkdownOptions};

use super::Format;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `BASE..HEAD` to compare two revisions, or `REV` (same as `REV..`) to compare a revision
    /// with the work tree. Defaults to `HEAD`.
    range: Option<String>,
    /// The old lockfile, read from disk instead of git (use with --new).
    #[arg(long, value_name = "PATH", requires = "new", conflicts_with = "range")]
    old: Option<PathBuf>,
    /// The new lockfile, read from disk instead of git (use with --old).
    #[arg(long, value_name = "PATH", requires = "old")]
    new: Option<PathBuf>,
    /// A lockfile to compare, relative to the repository root; repeatable. By default every
    /// tracked Cargo.lock the range changes.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["old", "new"])]
    lockfile: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Human format: one line per package, no file list.
    #[arg(long, conflicts_with = "diff")]
    stat: bool,
    /// Show unified diffs (human and markdown; JSON gains a `patch` per file).
    #[arg(long)]
    diff: bool,
    /// Lines of context around each change in diffs.
    #[arg(long, default_value_t = 3, value_name = "N")]
    context: usize,
    #[command(flatten)]
    fetch: super::fetch::FetchArgs,
    /// Markdown format: size budget in characters.
    #[arg(long, default_value_t = 60_000, value_name = "CHARS")]
    markdown_budget: usize,
}

fn input(args: &Args) -> anyhow::Result<Input> {
    if let (Some(old), Some(new)) = (&args.old, &args.new) {
        return Ok(Input::Files { old: old.clone(), new: new.clone() });
    }
    let range = args.range.as_deref().unwrap_or("HEAD");
    let (base, head) = match range.split_once("..") {
        Some((_, h)) if h.starts_with('.') => bail!("{range:?}: three-dot ranges are not supported; use BASE..HEAD"),
        Some(("", _)) => bail!("{range:?}: the range needs a base revision"),
        Some((b, "")) => (b.to_string(), None),
        Some((b, h)) => (b.to_string(), Some(h.to_string())),
        None => (range.to_string(), None),
    };
    Ok(Input::Git { base, head, lockfiles: args.lockfile.clone() })
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let config = depsdiff::Config {
        input: input(&args)?,
        cwd,
        fetch: args.fetch.options(),
        diff: DiffOptions {
            context: args.context,
            timeout: Duration::from_secs(2),
            want_patch: args.diff,
        },
    };
    let report = depsdiff::run(&config)?;
    let text = match args.format {
        Format::Json => report::render_json(&report),
        Format::Markdown => report::render_markdown(
            &report,
            &MarkdownOptions { diffs: args.diff, budget: args.markdown_budget },
        ),
        Format::Human => {
            let detail = if args.stat {
                Detail::Stat
            } else if args.diff {
                Detail::Diff
            } else {
                Detail::Files
            };
            report::render_human(&report, &HumanOptions { detail })
        }
    };
    super::emit(&text)?;
    Ok(velaris::exit_codes::OK)
}
