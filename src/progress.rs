//! Progress of a long run, for the person waiting for it: how many crates were fetched and
//! analysed of how many known so far, and which one is being worked on.
//!
//! The pipelines report through a [`Progress`] handle carried in
//! [`crate::registry::FetchOptions`] (so every run of one command, and every resolution round
//! of each, adds to the same counts: one bar for the whole command, never one that restarts at
//! zero). What is shown is the caller's choice: a bar redrawn in place on a terminal
//! ([`Bar`], indicatif), a line every few seconds in a log ([`Lines`], for CI), or nothing
//! ([`Progress::none`], the default, and what `--quiet` and JSON written to a pipe get).
//!
//! Progress goes to stderr only and never changes what a command prints on stdout or writes to
//! a file: reports stay byte-identical whatever the clock says.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a unit of work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Fetching and verifying a package's source.
    Fetch,
    /// Analysing one crate target.
    Analyse,
}

/// Where progress goes. Implementations must be cheap: they are called from worker threads
/// once per package and per crate.
pub trait Sink: Send + Sync {
    /// `n` more items of `stage` are known to be coming.
    fn add(&self, stage: Stage, n: u64);
    /// Work on `item` (`name version`) of `stage` started.
    fn start(&self, stage: Stage, item: &str);
    /// One item of `stage` is done.
    fn done(&self, stage: Stage);
    /// The command is over: clear the bar, or print the last line.
    fn finish(&self);
}

/// A handle the pipelines report to; [`Progress::none`] (the default) reports nowhere.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Sink>>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Progress(on)" } else { "Progress(off)" })
    }
}

impl Progress {
    pub fn none() -> Progress {
        Progress(None)
    }

    pub fn new(sink: Arc<dyn Sink>) -> Progress {
        Progress(Some(sink))
    }

    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    pub fn add(&self, stage: Stage, n: u64) {
        if let Some(s) = &self.0 {
            if n > 0 {
                s.add(stage, n);
            }
        }
    }

    /// `item` is only formatted when someone listens.
    pub fn start(&self, stage: Stage, item: impl FnOnce() -> String) {
        if let Some(s) = &self.0 {
            s.start(stage, &item());
        }
    }

    pub fn done(&self, stage: Stage) {
        if let Some(s) = &self.0 {
            s.done(stage);
        }
    }

    pub fn finish(&self) {
        if let Some(s) = &self.0 {
            s.finish();
        }
    }
}

/// The counts both renderings show.
#[derive(Default)]
struct Counts {
    fetch_total: AtomicU64,
    fetch_done: AtomicU64,
    analyse_total: AtomicU64,
    analyse_done: AtomicU64,
    current: Mutex<String>,
}

impl Counts {
    fn pair(&self, stage: Stage) -> (&AtomicU64, &AtomicU64) {
        match stage {
            Stage::Fetch => (&self.fetch_total, &self.fetch_done),
            Stage::Analyse => (&self.analyse_total, &self.analyse_done),
        }
    }

    fn get(&self) -> [u64; 4] {
        [
            self.fetch_done.load(Ordering::Relaxed),
            self.fetch_total.load(Ordering::Relaxed),
            self.analyse_done.load(Ordering::Relaxed),
            self.analyse_total.load(Ordering::Relaxed),
        ]
    }

    fn current(&self) -> String {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `fetched 12 of 40 crates, analysed 3 of 200`: the stages seen so far.
    fn text(&self) -> String {
        let [fd, ft, ad, at] = self.get();
        let n = crate::text::thousands;
        let mut parts = Vec::new();
        if ft > 0 {
            parts.push(format!("fetched {} of {} {}", n(fd), n(ft), if ft == 1 { "crate" } else { "crates" }));
        }
        if at > 0 {
            parts.push(format!("analysed {} of {}", n(ad), n(at)));
        }
        parts.join(", ")
    }
}

/// A bar redrawn in place on stderr, for a terminal.
pub struct Bar {
    bar: indicatif::ProgressBar,
    counts: Counts,
}

impl Bar {
    /// A bar on stderr; indicatif draws nothing when stderr is not a terminal.
    pub fn stderr() -> Bar {
        let bar = indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} [{bar:24}] {pos}/{len} {wide_msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Bar { bar, counts: Counts::default() }
    }

    fn redraw(&self) {
        let [fd, ft, ad, at] = self.counts.get();
        self.bar.set_length(ft + at);
        self.bar.set_position(fd + ad);
        let current = self.counts.current();
        let text = self.counts.text();
        // The crate's name comes from a lockfile: escaped before it reaches the terminal.
        let current = crate::text::escape::line(&crate::message::clip_to(&current, 60));
        self.bar.set_message(if current.is_empty() { text } else { format!("{text} · {current}") });
    }
}

impl Sink for Bar {
    fn add(&self, stage: Stage, n: u64) {
        self.counts.pair(stage).0.fetch_add(n, Ordering::Relaxed);
        self.redraw();
    }

    fn start(&self, _stage: Stage, item: &str) {
        *self.counts.current.lock().unwrap_or_else(|p| p.into_inner()) = item.to_string();
        self.redraw();
    }

    fn done(&self, stage: Stage) {
        self.counts.pair(stage).1.fetch_add(1, Ordering::Relaxed);
        self.redraw();
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A line on a writer (stderr) at most every `every`, for logs (CI), and one at the end.
pub struct Lines {
    counts: Counts,
    every: Duration,
    /// When the last line was written (the start, before the first).
    last: Mutex<Instant>,
    printed: AtomicU64,
    out: Mutex<Box<dyn Write + Send>>,
}

/// How often [`Lines`] writes by default.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

impl Lines {
    pub fn new(out: Box<dyn Write + Send>, every: Duration) -> Lines {
        Lines { counts: Counts::default(), every, last: Mutex::new(Instant::now()), printed: AtomicU64::new(0), out: Mutex::new(out) }
    }

    /// Lines on stderr every [`LINE_EVERY`], or every `VELARIS_PROGRESS_INTERVAL` seconds.
    pub fn stderr() -> Lines {
        let every = std::env::var("VELARIS_PROGRESS_INTERVAL")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map_or(LINE_EVERY, |s| Duration::from_secs_f64(s.min(3600.0)));
        Lines::new(Box::new(std::io::stderr()), every)
    }

    fn write(&self, line: &str) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn tick(&self) {
        {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() < self.every {
                return;
            }
            *last = Instant::now();
        }
        let text = self.counts.text();
        if text.is_empty() {
            return;
        }
        let current = self.counts.current();
        let current = crate::text::escape::line(&crate::message::clip_to(&current, 120));
        self.printed.fetch_add(1, Ordering::Relaxed);
        self.write(&if current.is_empty() { format!("velaris: {text}") } else { format!("velaris: {text}; now {current}") });
    }
}

impl Sink for Lines {
    fn add(&self, stage: Stage, n: u64) {
        self.counts.pair(stage).0.fetch_add(n, Ordering::Relaxed);
        self.tick();
    }

    fn start(&self, _stage: Stage, item: &str) {
        *self.counts.current.lock().unwrap_or_else(|p| p.into_inner()) = item.to_string();
        self.tick();
    }

    fn done(&self, stage: Stage) {
        self.counts.pair(stage).1.fetch_add(1, Ordering::Relaxed);
        self.tick();
    }

    fn finish(&self) {
        // A run short enough to print nothing on the way stays silent.
        if self.printed.load(Ordering::Relaxed) > 0 {
            let text = self.counts.text();
            self.write(&format!("velaris: done: {text}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_accumulate_over_rounds_and_name_the_current_crate() {
        let out = Shared::default();
        let lines = Arc::new(Lines::new(Box::new(out.clone()), Duration::ZERO));
        let p = Progress::new(lines.clone());
        // Two resolution rounds: the totals grow, the counts never restart.
        p.add(Stage::Fetch, 2);
        p.start(Stage::Fetch, || "serde 1.0.0".into());
        p.done(Stage::Fetch);
        p.add(Stage::Fetch, 1_500);
        p.add(Stage::Analyse, 3);
        p.start(Stage::Analyse, || "tok\u{1b}[2Jio 1.0.0".into());
        p.done(Stage::Analyse);
        p.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("velaris: fetched 1 of 1,502 crates, analysed 0 of 3; now serde 1.0.0\n"), "{text}");
        assert!(text.contains("velaris: fetched 1 of 1,502 crates, analysed 1 of 3; now tok\\u{1b}[2Jio 1.0.0\n"), "escaped: {text}");
        assert!(text.ends_with("velaris: done: fetched 1 of 1,502 crates, analysed 1 of 3\n"), "{text}");
    }

    #[test]
    fn lines_wait_for_their_interval_and_a_short_run_prints_nothing() {
        let out = Shared::default();
        let lines = Arc::new(Lines::new(Box::new(out.clone()), Duration::from_secs(3600)));
        let p = Progress::new(lines);
        p.add(Stage::Analyse, 10);
        for _ in 0..10 {
            p.start(Stage::Analyse, || "x 1.0.0".into());
            p.done(Stage::Analyse);
        }
        p.finish();
        assert!(out.0.lock().unwrap().is_empty());
        // And nothing at all when no one listens.
        let none = Progress::none();
        none.add(Stage::Fetch, 1);
        none.start(Stage::Fetch, || unreachable!("not formatted when off"));
        none.finish();
    }
}
