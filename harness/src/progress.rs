//! What a long run shows while it works, shared by every lane: on a terminal, a live line on
//! stderr (case × version runs done / total, passed, failed, elapsed, the current phase) drawn by indicatif;
//! one result line per finished case and version on stdout as it finishes; and a final count.
//!
//! When stderr is not a terminal the display is off (no bar, no phase chatter, no ANSI codes),
//! so CI logs hold the result lines, not the chatter; `LAYOUT_GATE_PROGRESS=1` turns on plain
//! `[   3.2s] ...` lines instead, `LAYOUT_GATE_PROGRESS=0` silences a terminal too. Results go
//! through [`crate::output::Stdout`], so a closed stdout never panics and never stops the run.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output::Stdout;

#[derive(Debug)]
enum Mode {
    /// A terminal: an indicatif line on stderr.
    Bar(ProgressBar),
    /// Plain lines on stderr (forced with `LAYOUT_GATE_PROGRESS=1`).
    Lines,
    /// Nothing on stderr.
    Quiet,
}

/// What the count counts: one case on one Cilium version is one run (`[12/81 case×version
/// runs]`), so a model run over four versions counts to cases × versions, not to cases.
pub const UNIT: &str = "case×version runs";

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
}

impl Counts {
    pub fn done(&self) -> usize {
        self.passed + self.failed
    }
    /// The progress line: `[12/81 case×version runs] 10 passed, 2 failed`.
    pub fn progress_line(&self) -> String {
        format!("[{}/{} {UNIT}] {} passed, {} failed", self.done(), self.total, self.passed, self.failed)
    }

    /// The run's last line: `N passed, M failed, K not run`.
    pub fn final_line(&self) -> String {
        format!("{} passed, {} failed, {} not run", self.passed, self.failed, self.total.saturating_sub(self.done()))
    }
}

#[derive(Debug)]
struct Inner {
    mode: Mode,
    start: Instant,
    out: Stdout,
    counts: Mutex<Counts>,
    phase: Mutex<String>,
    /// Whether per-case results are the command's output (stdout); else they are progress,
    /// shown on stderr with the rest of the display (a command whose stdout is its own report).
    results_out: bool,
}

/// A run's progress display and result stream. Cheap to clone; every clone is the same display.
#[derive(Debug, Clone)]
pub struct Progress {
    inner: Arc<Inner>,
}

impl Progress {
    /// The display this process's stderr calls for (see the module documentation).
    pub fn from_env() -> Self {
        let forced = std::env::var("LAYOUT_GATE_PROGRESS").ok();
        let tty = std::io::stderr().is_terminal();
        let mode = match (forced.as_deref(), tty) {
            (Some("0"), _) => Mode::Quiet,
            (_, true) => Mode::Bar(bar()),
            (Some("1"), false) => Mode::Lines,
            _ => Mode::Quiet,
        };
        Self::with_mode(mode)
    }

    /// No display; results still go to stdout.
    pub fn quiet() -> Self {
        Self::with_mode(Mode::Quiet)
    }

    /// [`Progress::from_env`] for a command whose stdout is a report of its own (`check
    /// --lane operator`): each case's result lines are progress on stderr (when shown), never
    /// mixed into stdout.
    pub fn from_env_results_on_stderr() -> Self {
        let mut p = Self::from_env();
        if let Some(inner) = Arc::get_mut(&mut p.inner) {
            inner.results_out = false;
        }
        p
    }

    fn with_mode(mode: Mode) -> Self {
        Progress {
            inner: Arc::new(Inner {
                mode,
                start: Instant::now(),
                out: Stdout::new(),
                counts: Mutex::default(),
                phase: Mutex::default(),
                results_out: true,
            }),
        }
    }

    /// Whether anything is drawn on stderr.
    pub fn is_shown(&self) -> bool {
        !matches!(self.inner.mode, Mode::Quiet)
    }

    /// How many cases (times versions) the run will take.
    pub fn set_total(&self, total: usize) {
        self.counts_mut(|c| c.total = total);
        if let Mode::Bar(b) = &self.inner.mode {
            b.set_length(total as u64);
        }
        self.redraw();
    }

    /// A phase or step of the run (kind: "helm install", "case dns01-default: probes").
    pub fn line(&self, text: &str) {
        if let Ok(mut p) = self.inner.phase.lock() {
            *p = text.to_string();
        }
        match &self.inner.mode {
            Mode::Bar(b) => {
                b.println(format!("[{:>7.1}s] {text}", self.elapsed()));
                self.redraw();
            }
            Mode::Lines => self.stderr_line(text),
            Mode::Quiet => {}
        }
    }

    /// A case finished: `result` (its lines, without a trailing newline) goes to stdout now,
    /// and the counts move.
    pub fn case_done(&self, passed: bool, result: &str) {
        self.counts_mut(|c| if passed { c.passed += 1 } else { c.failed += 1 });
        self.result(result);
        match &self.inner.mode {
            Mode::Bar(b) => {
                b.inc(1);
                self.redraw();
            }
            Mode::Lines => {
                let c = self.counts();
                self.stderr_line(&c.progress_line());
            }
            Mode::Quiet => {}
        }
    }

    /// A line of the command's output on stdout (the bar steps aside while it is written).
    pub fn result(&self, text: &str) {
        if !self.inner.results_out {
            if self.is_shown() {
                self.note(text);
            }
            return;
        }
        let write = || {
            self.inner.out.line(text);
        };
        match &self.inner.mode {
            Mode::Bar(b) => b.suspend(write),
            _ => write(),
        }
    }

    /// A message for people on stderr, above the bar; never panics.
    pub fn note(&self, text: &str) {
        match &self.inner.mode {
            Mode::Bar(b) => b.suspend(|| crate::output::note(text)),
            _ => crate::output::note(text),
        }
    }

    pub fn counts(&self) -> Counts {
        self.inner.counts.lock().map(|c| *c).unwrap_or_default()
    }

    /// Clears the bar and prints the final count on stdout; returns the counts.
    pub fn finish(&self) -> Counts {
        if let Mode::Bar(b) = &self.inner.mode {
            b.finish_and_clear();
        }
        let c = self.counts();
        self.result(&c.final_line());
        c
    }

    /// Whether stdout was closed (or failed) along the way.
    pub fn stdout_closed(&self) -> bool {
        self.inner.out.is_closed()
    }

    fn elapsed(&self) -> f64 {
        self.inner.start.elapsed().as_secs_f64()
    }

    fn counts_mut(&self, f: impl FnOnce(&mut Counts)) {
        if let Ok(mut c) = self.inner.counts.lock() {
            f(&mut c);
        }
    }

    fn stderr_line(&self, text: &str) {
        let _ = writeln!(std::io::stderr().lock(), "[{:>7.1}s] {text}", self.elapsed());
    }

    fn redraw(&self) {
        if let Mode::Bar(b) = &self.inner.mode {
            let c = self.counts();
            let phase = self.inner.phase.lock().map(|p| p.clone()).unwrap_or_default();
            let mut msg = format!("{} passed, {} failed", c.passed, c.failed);
            if !phase.is_empty() {
                msg.push_str(&format!("  {phase}"));
            }
            b.set_message(msg);
        }
    }
}

fn bar() -> ProgressBar {
    let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    // The template is a constant; a mistake in it shows as the default style, not a panic.
    if let Ok(style) =
        ProgressStyle::with_template(&format!("{{spinner}} {{elapsed:>4}} [{{bar:30}}] {{pos}}/{{len}} {UNIT}  {{wide_msg}}"))
    {
        b.set_style(style.progress_chars("=> "));
    }
    b.enable_steady_tick(Duration::from_millis(250));
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_line_counts_what_did_not_run() {
        let p = Progress::quiet();
        p.set_total(5);
        p.counts_mut(|c| {
            c.passed = 2;
            c.failed = 1;
        });
        assert_eq!(p.counts().final_line(), "2 passed, 1 failed, 2 not run");
        assert_eq!(Counts { total: 1, passed: 1, failed: 0 }.final_line(), "1 passed, 0 failed, 0 not run");
    }

    /// The count is of case × version runs, in the words of the plain progress line and the bar.
    #[test]
    fn the_progress_counts_case_by_version_runs() {
        assert_eq!(Counts { total: 81, passed: 10, failed: 2 }.progress_line(), "[12/81 case×version runs] 10 passed, 2 failed");
        assert!(!Counts::default().progress_line().contains(" cases"));
    }
}
