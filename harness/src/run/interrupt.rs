//! The signals a run answers by stopping cleanly (SIGINT, SIGTERM, SIGHUP, SIGQUIT): which one
//! came, and the exit status that says so (128 + the signal number, as shells report it).
//!
//! Commands that stop gracefully (`run`, in both lanes) listen with [`Signals`]; every other
//! command, and the e2e test binary, calls `cli::signals::exit_on_signal` so a signal still
//! removes what the process made (its temporary folders, a kind cluster the e2e suite created)
//! before the process ends; only `cli/` ends the process.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal closed).
    Hangup,
    /// SIGQUIT (Ctrl-\).
    Quit,
}

impl Signal {
    pub const ALL: [Signal; 4] = [Signal::Interrupt, Signal::Terminate, Signal::Hangup, Signal::Quit];

    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
            Signal::Quit => "SIGQUIT",
        }
    }

    /// The signal's number on Linux.
    pub fn number(self) -> i32 {
        match self {
            Signal::Interrupt => libc::SIGINT,
            Signal::Terminate => libc::SIGTERM,
            Signal::Hangup => libc::SIGHUP,
            Signal::Quit => libc::SIGQUIT,
        }
    }

    /// 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT.
    pub fn exit_status(self) -> u8 {
        // Signal numbers are below 32.
        128 + self.number() as u8
    }

    /// Whether the signal usually reaches our children too. The terminal sends Ctrl-C, Ctrl-\
    /// and a hangup to the whole foreground process group, Envoys included, so a case still
    /// running would be judged on a dying Envoy; SIGTERM is sent to layout-gate alone.
    pub fn reaches_children(self) -> bool {
        self != Signal::Terminate
    }

    fn kind(self) -> tokio::signal::unix::SignalKind {
        use tokio::signal::unix::SignalKind;
        match self {
            Signal::Interrupt => SignalKind::interrupt(),
            Signal::Terminate => SignalKind::terminate(),
            Signal::Hangup => SignalKind::hangup(),
            Signal::Quit => SignalKind::quit(),
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Listens for every [`Signal`] from the moment it is made (a signal between two waits is not
/// lost: tokio keeps it for the next `next()`).
pub struct Signals {
    listeners: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Must be called inside a tokio runtime. A signal that cannot be listened for is never
    /// reported (the default action, ending the process, then applies to it).
    pub fn new() -> Signals {
        Signals { listeners: Signal::ALL.iter().filter_map(|&s| tokio::signal::unix::signal(s.kind()).ok().map(|l| (s, l))).collect() }
    }

    /// The next signal.
    pub async fn next(&mut self) -> Signal {
        if self.listeners.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.listeners.iter_mut().map(|(s, l)| {
            let s = *s;
            Box::pin(async move {
                l.recv().await;
                s
            })
        });
        futures::future::select_all(waits).await.0
    }
}

impl Default for Signals {
    fn default() -> Self {
        Signals::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_128_plus_the_number() {
        let got: Vec<(&str, u8)> = Signal::ALL.iter().map(|s| (s.name(), s.exit_status())).collect();
        assert_eq!(got, [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129), ("SIGQUIT", 131)]);
        assert!(!Signal::Terminate.reaches_children() && Signal::Quit.reaches_children());
    }
}
