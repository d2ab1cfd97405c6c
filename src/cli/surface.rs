//! `velaris surface`, `velaris explain`, and the ratchet commands `check`, `bless`, `fmt`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use velaris::baseline;
use velaris::exit_codes;
use velaris::surface::engine;
use velaris::surface::{Capability, render};

use super::Format;

/// Where to find the workspace and how to fetch its dependencies.
#[derive(clap::Args, Debug)]
pub struct WorkspaceArgs {
    /// The workspace root (the directory with the root Cargo.toml and Cargo.lock) [default:
    /// found from the current directory, as cargo finds it].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Target triple whose cfg values the analysis uses [default: the baseline's `target` for
    /// check and bless, else x86_64-unknown-linux-gnu].
    #[arg(long, value_name = "TRIPLE")]
    target: Option<String>,
    #[command(flatten)]
    fetch: super::fetch::FetchArgs,
}

impl WorkspaceArgs {
    /// The engine's configuration for `--target`, else `fallback` (a baseline's target), else
    /// the default, reporting progress to `progress`.
    fn config(&self, fallback: Option<&str>, progress: &super::ProgressGuard) -> anyhow::Result<engine::Config> {
        let target = self.target.as_deref().or(fallback).unwrap_or(engine::DEFAULT_TARGET).to_string();
        let root = workspace_root(self.workspace.as_deref())?;
        Ok(engine::Config { root, target, fetch: self.fetch.options(progress.handle()) })
    }

    fn root(&self) -> anyhow::Result<PathBuf> {
        workspace_root(self.workspace.as_deref())
    }
}

/// The workspace root: `--workspace DIR` as given (it must hold a Cargo.toml), or found from
/// the current directory upwards as cargo finds it.
fn workspace_root(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    use velaris::workspace::{WorkspaceError, find_root};
    match given {
        Some(dir) => {
            if dir.join("Cargo.toml").symlink_metadata().is_err() {
                return Err(WorkspaceError::NoManifest { start: dir.to_path_buf(), explicit: true }.into());
            }
            Ok(std::fs::canonicalize(dir)?)
        }
        None => {
            let cwd = std::env::current_dir().context("failed to read the current directory")?;
            Ok(find_root(&cwd)?)
        }
    }
}

/// The formats `velaris surface` writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SurfaceFormat {
    Human,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct SurfaceArgs {
    #[command(flatten)]
    ws: WorkspaceArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SurfaceFormat::Human)]
    format: SurfaceFormat,
    /// Human format: every finding, not only the first per crate and capability.
    #[arg(long, short)]
    verbose: bool,
}

pub fn surface(args: SurfaceArgs) -> anyhow::Result<i32> {
    let progress = super::progress(args.format == SurfaceFormat::Json);
    let analysis = engine::run(&args.ws.config(None, &progress)?)?;
    drop(progress);
    let text = match args.format {
        SurfaceFormat::Json => render::json(&analysis.surface),
        SurfaceFormat::Human => render::human(&analysis.surface, args.verbose),
    };
    super::emit(&text)?;
    Ok(exit_codes::OK)
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// A program (binary target) or a crate, by name. When both have the name, the program;
    /// --crate or --program says which.
    name: String,
    /// The capability, e.g. net.connect.
    capability: String,
    /// NAME is a crate: every finding of the capability in it, all versions, every program.
    #[arg(long = "crate", conflicts_with = "program")]
    krate: bool,
    /// NAME is a program: every finding of the capability compiled into it.
    #[arg(long)]
    program: bool,
    #[command(flatten)]
    ws: WorkspaceArgs,
}

pub fn explain(args: ExplainArgs) -> anyhow::Result<i32> {
    let cap: Capability = args.capability.parse().map_err(|e| {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        anyhow::anyhow!("{e}; capabilities are: {}", names.join(", "))
    })?;
    let progress = super::progress(false);
    let analysis = engine::run(&args.ws.config(None, &progress)?)?;
    drop(progress);
    let surface = &analysis.surface;
    let program = surface.programs.iter().find(|p| p.name == args.name);
    let is_crate = surface.programs.iter().any(|p| p.crates.iter().any(|c| c.name == args.name));
    let excerpt = |name: &str, version: &str, file: &str, line: u32| analysis.source_line(name, version, file, line);
    let text = match (program, is_crate, args.krate, args.program) {
        (_, true, true, _) => render::explain_crate(surface, &args.name, cap, &excerpt),
        (Some(p), _, false, _) => {
            let mut t = render::explain(p, cap, &excerpt);
            if is_crate && !args.program {
                let name = velaris::text::escape::line(&args.name);
                t.push_str(&format!("\n(crate {name} has this name too: `velaris explain --crate {name} {cap}` explains the crate)\n"));
            }
            t
        }
        (None, true, false, false) => render::explain_crate(surface, &args.name, cap, &excerpt),
        _ => {
            let programs: Vec<&str> = surface.programs.iter().map(|p| p.name.as_str()).collect();
            let what = if args.krate { "no crate" } else if args.program { "no program" } else { "no program or crate" };
            bail!(
                "{what} {:?} in the workspace; programs are: {} (a crate is any crate compiled into one: `velaris surface` lists them)",
                args.name,
                if programs.is_empty() { "none".to_string() } else { programs.join(", ") }
            );
        }
    };
    super::emit(&text)?;
    Ok(exit_codes::OK)
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    ws: WorkspaceArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// A stale baseline (grants no longer used) fails too.
    #[arg(long)]
    strict: bool,
    /// Also list the capability uses the workspace's members add since this revision (file,
    /// line, API, chain), granted or not.
    #[arg(long, value_name = "REV")]
    base: Option<String>,
}

/// The baseline's text, `None` when there is none. A baseline that leads out of the workspace
/// through a symbolic link, or is not a regular file, is refused. Temporary files a killed
/// `bless` or `fmt` left next to it are removed first.
fn load_baseline(workspace: &Path, path: &Path) -> anyhow::Result<Option<String>> {
    velaris::fsio::sweep_baseline_temps(path.parent().unwrap_or(workspace), baseline::FILE_NAME);
    velaris::fsio::contained(workspace, path)?;
    match velaris::fsio::read_text(path, velaris::fsio::BASELINE_CAP, "a baseline") {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn read_baseline(workspace: &Path, path: &Path) -> anyhow::Result<String> {
    match load_baseline(workspace, path)? {
        Some(t) => Ok(t),
        None => bail!(
            "no baseline at {}: run `velaris bless` to write one from the current surface, review it, and commit it",
            path.display()
        ),
    }
}

/// Writes the baseline, refusing a path that leads out of the workspace.
fn write_baseline(workspace: &Path, path: &Path, text: &str) -> anyhow::Result<()> {
    velaris::fsio::contained(workspace, path)?;
    baseline::write_atomic(path, text).with_context(|| format!("failed to write {}", path.display()))
}

pub fn check(args: CheckArgs) -> anyhow::Result<i32> {
    let root = args.ws.root()?;
    let path = root.join(baseline::FILE_NAME);
    let text = read_baseline(&root, &path)?;
    let base = baseline::parse(&text, baseline::FILE_NAME)?;
    // A revision that does not resolve is an error before any analysis.
    let since = match &args.base {
        Some(rev) => {
            let repo = velaris::git::Repo::discover(&root)?;
            let commit = repo.resolve(rev)?;
            let repo_root = std::fs::canonicalize(repo.root()).unwrap_or_else(|_| repo.root().to_path_buf());
            let rel = root.strip_prefix(&repo_root).unwrap_or(Path::new("")).to_string_lossy().replace('\\', "/");
            Some((repo, commit, rel, rev.clone()))
        }
        None => None,
    };
    // The grants were reviewed for the baseline's target: check that one unless told otherwise.
    let progress = super::progress(args.format == Format::Json);
    let config = args.ws.config(base.target.as_deref(), &progress)?;
    let analysis = engine::run(&config)?;
    let new_uses = since.map(|(repo, commit, rel, rev)| {
        velaris::uses::added_since(&repo, &commit, &rel, &rev, &root, &analysis.surface, &config.target, &config.fetch)
    });
    drop(progress);
    let outcome = baseline::check(&base, &analysis.surface);
    let view = baseline::render::View { explain: true, strict: args.strict, new_uses: new_uses.as_ref() };
    let out = match args.format {
        Format::Json => baseline::render::json_with(&outcome, &view),
        Format::Markdown => baseline::render::markdown_with(&outcome, &view),
        Format::Human => baseline::render::human_with(&outcome, &view),
    };
    super::emit(&out)?;
    Ok(if baseline::render::passes(&outcome, &view) { exit_codes::OK } else { exit_codes::WIDENED })
}

#[derive(clap::Args, Debug)]
pub struct BlessArgs {
    #[command(flatten)]
    ws: WorkspaceArgs,
    /// Also pin the APIs of the workspace's members: each capability they use is granted
    /// through the APIs they use for it now (`[crate.NAME.apis]`), so a new API widens.
    #[arg(long)]
    pin_apis: bool,
}

pub fn bless(args: BlessArgs) -> anyhow::Result<i32> {
    let root = args.ws.root()?;
    let path = root.join(baseline::FILE_NAME);
    let existing = load_baseline(&root, &path)?;
    let mut target = None;
    if let Some(t) = &existing {
        // A broken baseline is reported, not silently replaced.
        target = baseline::parse(t, baseline::FILE_NAME)?.target;
    }
    let progress = super::progress(false);
    let analysis = engine::run(&args.ws.config(target.as_deref(), &progress)?)?;
    drop(progress);
    let mut opts = baseline::BlessOptions::default();
    if args.pin_apis {
        opts.pin_apis = velaris::uses::members(&root)?.into_keys().collect();
    }
    let new = baseline::bless_with(existing.as_deref(), &analysis.surface, &opts);
    if existing.as_deref() == Some(new.as_str()) {
        super::note(&format!("{} is up to date", path.display()));
        return Ok(exit_codes::OK);
    }
    write_baseline(&root, &path, &new)?;
    super::note(&format!("wrote {}", path.display()));
    Ok(exit_codes::OK)
}

#[derive(clap::Args, Debug)]
pub struct FmtArgs {
    /// The workspace root holding velaris.capabilities [default: found from the current
    /// directory, as cargo finds it].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Do not write; exit 1 if the file is not in canonical form.
    #[arg(long)]
    check: bool,
}

pub fn fmt(args: FmtArgs) -> anyhow::Result<i32> {
    let root = workspace_root(args.workspace.as_deref())?;
    let path = root.join(baseline::FILE_NAME);
    let text = read_baseline(&root, &path)?;
    let tidy = baseline::fmt(&text, baseline::FILE_NAME)?;
    if tidy == text {
        return Ok(exit_codes::OK);
    }
    if args.check {
        // What would change, as a unified diff (control characters escaped).
        let diff = similar::TextDiff::from_lines(&text, &tidy);
        let name = baseline::FILE_NAME;
        let unified = diff.unified_diff().context_radius(3).header(name, &format!("{name} (canonical)")).to_string();
        let shown: Vec<String> = unified.lines().map(velaris::text::escape::line).collect();
        super::emit(&(shown.join("\n") + "\n"))?;
        eprintln!("{} is not in canonical form: run `velaris fmt`", path.display());
        return Ok(exit_codes::WIDENED);
    }
    write_baseline(&root, &path, &tidy)?;
    Ok(exit_codes::OK)
}
