//! Errors of running Envoy. Each carries the command line that ran and, when Envoy itself
//! refused, Envoy's own words: a test failure should read like the Envoy log, not like ours.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use super::admin::AdminError;
use super::binary::BinaryError;

#[derive(Debug, thiserror::Error)]
pub enum EnvoyError {
    #[error(transparent)]
    Binary(#[from] BinaryError),

    #[error("cannot prepare Envoy work directory {}: {source}", path.display())]
    Workdir { path: PathBuf, source: std::io::Error },

    #[error("cannot start `{command}`: {source}")]
    Spawn { command: String, source: std::io::Error },

    #[error("Envoy exited ({status}) before it was ready\n  command: {command}\n  Envoy said:\n{envoy_error}\n  full log: {}", log.display())]
    Exited { command: String, status: ExitStatus, envoy_error: String, log: PathBuf },

    #[error(
        "wait `envoy-ready` timed out after {timeout:?} (StartOptions::ready_timeout): {last_seen}\n  command: {command}\n  log tail:\n{log_tail}"
    )]
    NotReady { command: String, timeout: Duration, last_seen: String, log_tail: String },

    #[error("Envoy rejected {} ({status})\n  command: {command}\n  Envoy said:\n{envoy_error}", config.display())]
    Invalid { config: PathBuf, command: String, status: ExitStatus, envoy_error: String },

    #[error("`{command}` did not finish within {timeout:?}")]
    ValidateTimeout { command: String, timeout: Duration },

    #[error("waiting on Envoy (pid {pid}): {source}")]
    Wait { pid: u32, source: std::io::Error },

    #[error(transparent)]
    Admin(#[from] AdminError),
}

impl EnvoyError {
    /// Envoy's own error text, when the failure came from Envoy.
    pub fn envoy_text(&self) -> Option<&str> {
        match self {
            EnvoyError::Exited { envoy_error, .. } | EnvoyError::Invalid { envoy_error, .. } => Some(envoy_error),
            _ => None,
        }
    }
}

/// The lines of an Envoy log that explain a failure: `[critical]` lines, else `[error]` lines,
/// else the last lines (e.g. a command-line parse error, which is not in log format).
pub fn envoy_error_text(log: &str) -> String {
    for marker in ["[critical]", "[error]"] {
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(marker)).collect();
        if !lines.is_empty() {
            return indent(&lines);
        }
    }
    tail(log, 15)
}

/// The last `n` lines, indented, for messages.
pub fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.len().saturating_sub(n);
    if lines.is_empty() {
        return "    (empty)".to_string();
    }
    indent(&lines[start..])
}

fn indent(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_critical_lines() {
        let log = "[info][main] starting\n[critical][main] [server.cc:76] error adding listener 'x': filter chain '' has the same matching rules defined as ''\n[info][main] exiting\n";
        let t = envoy_error_text(log);
        assert!(t.contains("has the same matching rules defined as"));
        assert!(!t.contains("exiting"));
        assert_eq!(envoy_error_text(""), "    (empty)");
        assert!(envoy_error_text("PARSE ERROR: bad flag\n").contains("PARSE ERROR"));
    }
}
