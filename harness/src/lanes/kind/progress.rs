//! Progress on stderr while a live run works: one line per phase and step, with the time since
//! the run began. Shown when stderr is a terminal (or `LAYOUT_GATE_PROGRESS=1`), quiet
//! otherwise so CI logs hold the result, not the chatter.

use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct Progress {
    enabled: bool,
    start: Instant,
}

impl Progress {
    pub fn from_env() -> Self {
        let forced = std::env::var("LAYOUT_GATE_PROGRESS").ok();
        let enabled = match forced.as_deref() {
            Some("1") => true,
            Some("0") => false,
            _ => std::io::stderr().is_terminal(),
        };
        Progress { enabled, start: Instant::now() }
    }
    pub fn quiet() -> Self {
        Progress { enabled: false, start: Instant::now() }
    }
    pub fn line(&self, text: &str) {
        if self.enabled {
            let _ = writeln!(std::io::stderr().lock(), "[{:>7.1}s] {}", self.start.elapsed().as_secs_f64(), crate::term::line(text));
        }
    }
}
