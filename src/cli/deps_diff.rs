//! `velaris deps-diff`: flags, and their resolution into [`velaris::depsdiff::Config`].

use std::path::PathBuf;

use anyhow::{Context, bail};
use velaris::depsdiff::{self, Input, review};
use velaris::diff::DiffOptions;
use velaris::gate::FailOn;
use velaris::report::{self, Detail, HumanOptions, MarkdownOptions};

/// Output formats of deps-diff: the shared ones and SARIF.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Markdown,
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Schema {
    V1,
    V2,
}

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
    /// JSON document version: v2 (the review) or v1 (the previous release's document).
    #[arg(long, value_enum, default_value_t = Schema::V2)]
    schema: Schema,
    /// Human format: the headline, the table and one line per package.
    #[arg(long, conflicts_with_all = ["diff", "files"])]
    stat: bool,
    /// Human format: add each package's changed files.
    #[arg(long)]
    files: bool,
    /// Show unified diffs (human and markdown; JSON gains a `patch` per file).
    #[arg(long)]
    diff: bool,
    /// Lines of context around each change in diffs.
    #[arg(long, default_value_t = 3, value_name = "N")]
    context: usize,
    /// Target whose graph decides what is built (and whose cfg the analysis uses); repeatable.
    /// [default: the host]
    #[arg(long, value_name = "TRIPLE")]
    target: Vec<String>,
    /// Count packages built for none of the targets in the audit cost.
    #[arg(long)]
    all_targets: bool,
    /// Do not analyse capabilities (what is built is still resolved).
    #[arg(long)]
    no_capabilities: bool,
    /// Exit 1 when any of these holds (comma-separated or repeated): widened, baseline-widened,
    /// new-capability, build-script, proc-macro, native, yanked, unverifiable, unknown,
    /// license-change, advisory, name-squat, fresh; or never (the default: informational).
    #[arg(long, value_name = "CONDITIONS")]
    fail_on: Vec<String>,
    #[command(flatten)]
    fetch: super::fetch::FetchArgs,
    #[command(flatten)]
    publication: super::fetch::PublicationArgs,
    /// Markdown format: size budget in characters.
    #[arg(long, default_value_t = 20_000, value_name = "CHARS")]
    markdown_budget: usize,
    /// A local copy of the RustSec advisory database (a checkout of rustsec/advisory-db, or
    /// its unpacked archive): advisories affecting each version the change locks, and those it
    /// fixes.
    #[arg(long, value_name = "DIR", env = "VELARIS_ADVISORY_DB")]
    advisory_db: Option<PathBuf>,
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

/// The `--fail-on` list, parsed as the action parses its `fail-on` input; none given: never.
fn fail_on(args: &Args) -> anyhow::Result<FailOn> {
    if args.fail_on.is_empty() {
        return Ok(FailOn::never());
    }
    FailOn::parse(&args.fail_on.join(",")).map_err(|e| anyhow::anyhow!("--fail-on: {e}"))
}

fn targets(args: &Args) -> anyhow::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for t in &args.target {
        velaris::surface::cfg::CfgEnv::for_target(t, &Default::default()).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    if out.is_empty() {
        out.push(depsdiff::host_target());
    }
    Ok(out)
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let fail_on = fail_on(&args)?;
    if args.schema == Schema::V1 && args.format != Format::Json {
        bail!("--schema applies to --format json only");
    }
    let progress = super::progress(args.format == Format::Json);
    let config = depsdiff::Config {
        input: input(&args)?,
        cwd,
        fetch: args.fetch.options(progress.handle()),
        diff: DiffOptions {
            context: args.context,
            want_patch: args.diff,
            ..DiffOptions::default()
        },
        targets: targets(&args)?,
        all_targets: args.all_targets,
        capabilities: !args.no_capabilities,
        advisory_db: args.advisory_db.clone(),
        publication: args.publication.options(),
    };
    let report = depsdiff::run(&config)?;
    drop(progress);
    let text = match (args.format, args.schema) {
        (Format::Json, Schema::V1) => report::render_json_v1(&report),
        (Format::Json, Schema::V2) => report::render_json_with(&report, &report::JsonOptions { patches: args.diff }),
        (Format::Sarif, _) => report::render_sarif(&report),
        (Format::Markdown, _) => report::render_markdown(
            &report,
            &MarkdownOptions { diffs: args.diff, budget: args.markdown_budget },
        ),
        (Format::Human, _) => {
            let detail = if args.stat {
                Detail::Stat
            } else if args.diff {
                Detail::Diff
            } else if args.files {
                Detail::Files
            } else {
                Detail::Review
            };
            report::render_human(&report, &HumanOptions { detail })
        }
    };
    super::emit(&text)?;
    let failed = review::failures(&report, &fail_on);
    if failed.is_empty() {
        return Ok(velaris::exit_codes::OK);
    }
    let mut err = anstream::stderr();
    for f in &failed {
        use std::io::Write;
        let _ = writeln!(err, "deps-diff: --fail-on {}:", f.condition);
        for w in &f.what {
            let _ = writeln!(err, "  {}", velaris::text::escape::line(w));
        }
    }
    Ok(velaris::exit_codes::WIDENED)
}
