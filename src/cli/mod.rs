//! Command-line definitions (clap) and the mapping of outcomes to exit codes.
//!
//! This module owns the flags, their validation and their resolution into the library's
//! configuration types. It holds no behaviour of its own: each subcommand resolves its flags and
//! calls the library. Nothing outside this module imports clap.

mod action;
mod deps_diff;
mod fetch;
mod surface;

use std::io::Write;

use clap::{Parser, Subcommand, ValueEnum};

use velaris::{exit_codes, message};

#[derive(Parser, Debug)]
#[command(name = "velaris", version, about = "Keep a sandbox's grants honest: capability ratchet and dependency diff")]
struct Cli {
    /// When to colour output.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true)]
    color: ColorWhen,
    /// Memory the crates analysed side by side may hold at once, as estimated: a crate that
    /// needs more waits for others to finish (e.g. 2GiB, 512MiB; default 2GiB).
    #[arg(long, value_name = "SIZE", env = "VELARIS_ANALYSIS_MEMORY", global = true, value_parser = parse_size)]
    analysis_memory: Option<u64>,
    /// No progress and no notes on stderr (warnings and errors are still printed).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Review a lockfile change: what it adds, removes and upgrades, with hash-checked source diffs.
    DepsDiff(deps_diff::Args),
    /// Every program's capability surface, derived from source, with evidence.
    Surface(surface::SurfaceArgs),
    /// Why a program has a capability: every finding, with a source excerpt and the dependency path.
    Explain(surface::ExplainArgs),
    /// Compare the surface with velaris.capabilities: exit 1 if any grant widened.
    Check(surface::CheckArgs),
    /// Write or refresh velaris.capabilities from the current surface.
    Bless(surface::BlessArgs),
    /// Put velaris.capabilities in canonical form (--check: fail if it is not).
    Fmt(surface::FmtArgs),
    /// Run as the GitHub Action: gate, review, comment, summary, annotations, outputs.
    Action(action::Args),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Human,
    Markdown,
    Json,
}

/// The stack of the thread a command runs on.
const COMMAND_STACK: usize = 512 * 1024 * 1024;

/// Parse the process arguments, run, and return the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit_codes::USAGE } else { exit_codes::OK };
            let _ = e.print();
            return code;
        }
    };
    let choice = match cli.color {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
    if let Some(bytes) = cli.analysis_memory {
        velaris::surface::guard::set_analysis_memory(bytes);
    }
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let run = move || match cli.command {
        Command::DepsDiff(args) => deps_diff::run(args),
        Command::Surface(args) => surface::surface(args),
        Command::Explain(args) => surface::explain(args),
        Command::Check(args) => surface::check(args),
        Command::Bless(args) => surface::bless(args),
        Command::Fmt(args) => surface::fmt(args),
        Command::Action(args) => action::run(args),
    };
    // On a thread with a large stack: manifests, lockfiles and dependency graphs come from
    // untrusted packages, and the parts of velaris that walk them by recursion are bounded in
    // depth, not in frames (only pages actually used take memory).
    let result = match std::thread::Builder::new().name("velaris".into()).stack_size(COMMAND_STACK).spawn(run) {
        Ok(handle) => handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        Err(e) => Err(anyhow::anyhow!("cannot start the command's thread: {e}")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let code = exit_codes::for_error(&e);
            let mut err = anstream::stderr();
            // Each cause once, credentials out of URLs, no line of echoed input longer than a
            // screenful, control characters escaped.
            let text = message::chain(e.as_ref());
            let text = message::clip_lines(&message::redact(&text)).into_owned();
            let _ = writeln!(err, "error: {}", velaris::text::escape::source(&text));
            code
        }
    }
}

/// A size: a number of bytes, or a number with `KiB`, `MiB` or `GiB` (or `K`, `M`, `G`, with or
/// without a `B`: all binary multiples).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size (e.g. 2GiB, 512MiB, 1073741824)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{s:?} is not a size: the unit must be KiB, MiB or GiB")),
    };
    match n.checked_mul(mult) {
        Some(0) => Err("the size must be more than zero".to_string()),
        Some(b) => Ok(b),
        None => Err(format!("{s:?} is too large")),
    }
}

/// `--quiet`.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A note for the person at the terminal (`wrote velaris.capabilities`), unless `--quiet`.
pub(crate) fn note(text: &str) {
    if !quiet() {
        let mut err = anstream::stderr();
        let _ = writeln!(err, "{text}");
    }
}

/// The progress display of one command, finished (the bar cleared, the last line printed) when
/// dropped, on success and on error alike.
pub(crate) struct ProgressGuard(velaris::progress::Progress);

impl ProgressGuard {
    pub(crate) fn handle(&self) -> velaris::progress::Progress {
        self.0.clone()
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Whether the environment says this is a CI job (`CI`, `GITHUB_ACTIONS`).
fn in_ci() -> bool {
    ["CI", "GITHUB_ACTIONS"].iter().any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0"))
}

/// How a command shows its progress on stderr: a bar on a terminal, a line every few seconds
/// in CI, nothing with `--quiet`, nothing when the only output is a machine document written to
/// a pipe (`machine`: `--format json`), nothing elsewhere.
pub(crate) fn progress(machine: bool) -> ProgressGuard {
    use std::io::IsTerminal;
    use velaris::progress::{Bar, Lines, Progress};
    let p = if quiet() || (machine && !std::io::stdout().is_terminal()) {
        Progress::none()
    } else if std::io::stderr().is_terminal() {
        Progress::new(std::sync::Arc::new(Bar::stderr()))
    } else if in_ci() {
        Progress::new(std::sync::Arc::new(Lines::stderr()))
    } else {
        Progress::none()
    };
    ProgressGuard(p)
}

/// Write a rendered document to stdout; a closed pipe is not an error.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    // Text without an escape sequence has nothing for anstream to strip: written as it is
    // (a 40 MB JSON document is not scanned byte by byte).
    let written = if text.as_bytes().contains(&0x1b) {
        let mut out = anstream::stdout();
        out.write_all(text.as_bytes()).and_then(|_| out.flush())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|_| out.flush())
    };
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("64 KiB"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("2TiB").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999GiB").is_err());
    }
}
