//! Writing a command's results to stdout without ever panicking: a closed pipe (`run ... | head
//! -1`) or a full disk ends the printing, not the run, so evidence is still written and the run
//! still exits with its own status. `println!` would panic (exit 101) on the first failed write.

pub mod dest;

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Stdout for results, shared by a whole command. After the first failed write it stops
/// writing; a failure other than a closed pipe is reported once on stderr.
#[derive(Debug, Default)]
pub struct Stdout {
    closed: AtomicBool,
}

impl Stdout {
    pub fn new() -> Self {
        Stdout::default()
    }

    /// Writes `text` as is (add the newline yourself); false once stdout is gone.
    pub fn write(&self, text: &str) -> bool {
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        let mut out = std::io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => true,
            Err(e) => {
                self.closed.store(true, Ordering::Relaxed);
                if e.kind() != ErrorKind::BrokenPipe {
                    // Best effort: stderr may be gone too, and that must not panic either.
                    let _ = writeln!(std::io::stderr(), "layout-gate: writing output: {e}; the run goes on without printing");
                }
                false
            }
        }
    }

    /// One line.
    pub fn line(&self, text: &str) -> bool {
        self.write(&format!("{text}\n"))
    }

    /// Whether a write failed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// A message on stderr that never panics (`eprintln!` does when stderr is closed).
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
