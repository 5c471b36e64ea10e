//! The two signals a run answers by stopping cleanly (SIGINT, SIGTERM): which one came, and the
//! exit status that says so (128 + the signal number, as shells report it).

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }
    /// 130 for SIGINT, 143 for SIGTERM.
    pub fn exit_status(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.exit_status())
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Listens for SIGINT and SIGTERM from the moment it is made (a signal between two waits is not
/// lost: tokio keeps it for the next `next()`).
pub struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Must be called inside a tokio runtime. A signal that cannot be listened for is never
    /// reported (the default action, ending the process, then applies to it).
    pub fn new() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals { int: signal(SignalKind::interrupt()).ok(), term: signal(SignalKind::terminate()).ok() }
    }

    /// The next SIGINT or SIGTERM.
    pub async fn next(&mut self) -> Signal {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.int) => Signal::Interrupt,
            _ = recv(&mut self.term) => Signal::Terminate,
        }
    }
}

impl Default for Signals {
    fn default() -> Self {
        Signals::new()
    }
}
