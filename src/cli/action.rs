//! `velaris action`: flags, resolved into [`velaris::github::Config`]. The runner's environment
//! (`GITHUB_*`, and the token, which is never a flag) is read by the library.

use std::path::PathBuf;

use anyhow::Context;
use velaris::gate::FailOn;
use velaris::github::{self, api, env::ActionEnv};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A workspace to review, relative to the repository root; repeatable. Default: every
    /// workspace with a committed baseline, and every one whose Cargo.lock the change touches.
    #[arg(long, value_name = "DIR")]
    workspace: Vec<String>,
    /// The baseline's path relative to each workspace.
    #[arg(long, value_name = "PATH", default_value = velaris::baseline::FILE_NAME)]
    baseline: String,
    /// The commit to compare with, instead of the event's base.
    #[arg(long, value_name = "REV")]
    base: Option<String>,
    /// The commit under review; must be the checked-out commit.
    #[arg(long, value_name = "REV")]
    head: Option<String>,
    /// Post (and keep up to date) one comment per pull request and workspace.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    comment: bool,
    /// The login comments are posted as, when GraphQL cannot tell the token's identity.
    #[arg(long, value_name = "LOGIN")]
    comment_author: Option<String>,
    /// What fails the run: `widened`, `never`, `baseline-widened`, or the deps-diff conditions
    /// (new-capability, build-script, proc-macro, native, yanked, unverifiable, unknown),
    /// separated by commas.
    #[arg(long, value_name = "LIST", default_value = "widened", value_parser = parse_fail_on)]
    fail_on: FailOn,
    /// Target triple whose cfg values the analysis uses [default: each baseline's `target`].
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    /// Where report.json, comment.md and comments.json are written [default:
    /// $RUNNER_TEMP/velaris-ratchet].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Ignored, with a warning: earlier releases posted this comments.json on workflow_run;
    /// now the workflow_run side reviews the pull request itself.
    #[arg(long, value_name = "FILE")]
    comments_from: Option<PathBuf>,
    #[command(flatten)]
    fetch: super::fetch::FetchArgs,
    #[command(flatten)]
    publication: super::fetch::PublicationArgs,
}

fn parse_fail_on(s: &str) -> Result<FailOn, String> {
    FailOn::parse(s).map_err(|e| e.to_string())
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let env = ActionEnv::from_process()?;
    let cwd = std::env::current_dir().context("failed to read the current directory")?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        env.runner_temp.clone().unwrap_or_else(std::env::temp_dir).join("velaris-ratchet")
    });
    // The log is the runner's: a line every few seconds there (the bar on a terminal).
    let progress = super::progress(false);
    let config = github::Config {
        env,
        workspaces: args.workspace,
        baseline: args.baseline,
        base: args.base,
        head: args.head,
        comment: args.comment,
        comment_author: args.comment_author,
        // A cooldown given to the action is a gate: a younger version fails the run.
        fail_on: match args.publication.cooldown() {
            Some(_) => args.fail_on.with(velaris::gate::Condition::Fresh),
            None => args.fail_on,
        },
        target: args.target,
        fetch: args.fetch.options(progress.handle()),
        publication: args.publication.options(),
        out_dir,
        comments_from: args.comments_from,
        policy: api::Policy::default(),
        cwd,
    };
    let mut out = anstream::stdout();
    let outcome = github::run(&config, &mut out)?;
    Ok(outcome.exit_code)
}
