//! `velaris surface`, `velaris explain`, and the ratchet commands `check`, `bless`, `fmt`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use velaris::baseline;
use velaris::exit_codes;
use velaris::surface::engine::{self, Analysis};
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
    fn analyze(&self) -> anyhow::Result<Analysis> {
        self.analyze_for(None)
    }

    /// Analyze for `--target`, else `fallback` (a baseline's target), else the default.
    fn analyze_for(&self, fallback: Option<&str>) -> anyhow::Result<Analysis> {
        let target = self.target.as_deref().or(fallback).unwrap_or(engine::DEFAULT_TARGET).to_string();
        let root = workspace_root(self.workspace.as_deref())?;
        let config = engine::Config {
            root,
            target,
            fetch: self.fetch.options(),
        };
        Ok(engine::run(&config)?)
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
    let analysis = args.ws.analyze()?;
    let text = match args.format {
        SurfaceFormat::Json => render::json(&analysis.surface),
        SurfaceFormat::Human => render::human(&analysis.surface, args.verbose),
    };
    super::emit(&text)?;
    Ok(exit_codes::OK)
}

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The program (binary target name).
    program: String,
    /// The capability, e.g. net.connect.
    capability: String,
    #[command(flatten)]
    ws: WorkspaceArgs,
}

pub fn explain(args: ExplainArgs) -> anyhow::Result<i32> {
    let cap: Capability = args.capability.parse().map_err(|e| {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        anyhow::anyhow!("{e}; capabilities are: {}", names.join(", "))
    })?;
    let analysis = args.ws.analyze()?;
    let Some(p) = analysis.surface.programs.iter().find(|p| p.name == args.program) else {
        let names: Vec<&str> = analysis.surface.programs.iter().map(|p| p.name.as_str()).collect();
        bail!("no program {:?} in the workspace; programs are: {}", args.program, names.join(", "));
    };
    let excerpt = |name: &str, version: &str, file: &str, line: u32| analysis.source_line(name, version, file, line);
    super::emit(&render::explain(p, cap, &excerpt))?;
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
    // The grants were reviewed for the baseline's target: check that one unless told otherwise.
    let analysis = args.ws.analyze_for(base.target.as_deref())?;
    let outcome = baseline::check(&base, &analysis.surface);
    let out = match args.format {
        Format::Json => baseline::render::json(&outcome),
        Format::Markdown => baseline::render::markdown(&outcome),
        Format::Human => baseline::render::human(&outcome, true),
    };
    super::emit(&out)?;
    Ok(if !outcome.holds || (args.strict && outcome.stale()) { exit_codes::WIDENED } else { exit_codes::OK })
}

#[derive(clap::Args, Debug)]
pub struct BlessArgs {
    #[command(flatten)]
    ws: WorkspaceArgs,
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
    let analysis = args.ws.analyze_for(target.as_deref())?;
    let new = baseline::bless(existing.as_deref(), &analysis.surface);
    if existing.as_deref() == Some(new.as_str()) {
        eprintln!("{} is up to date", path.display());
        return Ok(exit_codes::OK);
    }
    write_baseline(&root, &path, &new)?;
    eprintln!("wrote {}", path.display());
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
        let shown: Vec<String> = unified.lines().map(velaris::report::escape::line).collect();
        super::emit(&(shown.join("\n") + "\n"))?;
        eprintln!("{} is not in canonical form: run `velaris fmt`", path.display());
        return Ok(exit_codes::WIDENED);
    }
    write_baseline(&root, &path, &tidy)?;
    Ok(exit_codes::OK)
}
