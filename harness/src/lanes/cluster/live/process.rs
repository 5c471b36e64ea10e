//! Running kind, helm, the container engine and curl through duct: output captured, bounded by
//! the call's named wait, and killed when the wait runs out or the run is cancelled (Ctrl-C
//! drops the future; the guard kills the child), so no tool outlives the harness.

use std::time::{Duration, Instant};

use crate::lanes::cluster::timeouts::human;
use crate::lanes::cluster::tools::ToolCall;

/// The last lines of a tool's stderr: where kind and helm say what went wrong.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn expression(call: &ToolCall) -> duct::Expression {
    // kind, helm, the engine and curl die with us even on SIGKILL (see `crate::child`).
    let mut e =
        crate::child::dies_with_parent(duct::cmd(&call.program, &call.args)).stdin_null().stdout_capture().stderr_capture().unchecked();
    for (k, v) in &call.env {
        e = e.env(k, v);
    }
    e
}

/// Why a tool did not give its output: the tool's command line and what happened to it.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("`{program}` not found on PATH (run preflight: layout-gate run --lane kind --dry-run lists what is needed)")]
    NotFound { program: String, source: std::io::Error },
    #[error("starting `{program}`: {source}")]
    Start { program: String, source: std::io::Error },
    #[error("waiting for `{line}`: {source}")]
    Wait { line: String, source: std::io::Error },
    #[error("reading the output of `{line}`: {source}")]
    Output { line: String, source: std::io::Error },
    /// The call's wait ran out and the tool was killed; `raise` names the wait and its variable
    /// when the caller can raise it.
    #[error("`{line}` did not finish within {}{}", human(*.limit), .raise.map(|(name, var)| format!(" ({name}; raise it with {var}=...)")).unwrap_or_default())]
    TimedOut { line: String, limit: Duration, raise: Option<(&'static str, &'static str)> },
    /// The tool ended unsuccessfully; the last lines of its stderr say why.
    #[error("`{line}` exited with {status}{}", if .stderr_tail.is_empty() { String::new() } else { format!(":\n{}", .stderr_tail) })]
    Failed { line: String, status: std::process::ExitStatus, stderr_tail: String },
    #[error("internal: tool handle lost")]
    HandleLost,
}

fn judge_output(call: &ToolCall, out: &std::process::Output) -> Result<String, ToolError> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(ToolError::Failed { line: call.program_line(), status: out.status, stderr_tail: tail(&err, 15) })
    }
}

fn spawn_error(call: &ToolCall, source: std::io::Error) -> ToolError {
    let program = call.program.clone();
    if source.kind() == std::io::ErrorKind::NotFound {
        ToolError::NotFound { program, source }
    } else {
        ToolError::Start { program, source }
    }
}

impl ToolCall {
    /// `kind create cluster` etc.: the program and first two arguments, for messages.
    pub fn program_line(&self) -> String {
        let mut parts = vec![self.program.as_str()];
        parts.extend(self.args.iter().take(2).map(String::as_str));
        parts.join(" ")
    }
}

/// Kills the child if the future running it is dropped before it ended.
struct KillOnDrop(Option<duct::Handle>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.kill();
        }
    }
}

/// Runs `call`; its stdout, or a sentence with the end of stderr.
pub async fn run(call: &ToolCall) -> Result<String, ToolError> {
    let handle = expression(call).start().map_err(|e| spawn_error(call, e))?;
    let mut guard = KillOnDrop(Some(handle));
    let started = Instant::now();
    loop {
        let Some(h) = guard.0.as_ref() else { return Err(ToolError::HandleLost) };
        match h.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) => {}
            Err(source) => return Err(ToolError::Wait { line: call.program_line(), source }),
        }
        if started.elapsed() >= call.wait.limit {
            // The guard kills it on the way out.
            return Err(ToolError::TimedOut {
                line: call.program_line(),
                limit: call.wait.limit,
                raise: Some((call.wait.name, call.wait.var)),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let Some(h) = guard.0.take() else { return Err(ToolError::HandleLost) };
    let out = h.into_output().map_err(|source| ToolError::Output { line: call.program_line(), source })?;
    judge_output(call, &out)
}

/// The same, blocking (for teardown where no runtime is left).
pub fn run_blocking(call: &ToolCall) -> Result<String, ToolError> {
    let h = expression(call).start().map_err(|e| spawn_error(call, e))?;
    match h.wait_timeout(call.wait.limit) {
        Ok(Some(out)) => judge_output(call, out),
        Ok(None) => {
            let _ = h.kill();
            Err(ToolError::TimedOut { line: call.program_line(), limit: call.wait.limit, raise: None })
        }
        Err(source) => Err(ToolError::Wait { line: call.program_line(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::timeouts::Wait;
    use crate::lanes::cluster::tools::Purpose;

    fn call(program: &str, args: &[&str], secs: u64) -> ToolCall {
        ToolCall {
            purpose: Purpose::KindListClusters,
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: vec![("LG_TEST".into(), "x".into())],
            wait: Wait { name: "test wait", var: "LAYOUT_GATE_TEST", limit: Duration::from_secs(secs) },
        }
    }

    #[tokio::test]
    async fn output_failure_timeout_and_missing_tools() {
        assert_eq!(run(&call("sh", &["-c", "printf \"$LG_TEST\""], 5)).await.unwrap(), "x");
        let e = run(&call("sh", &["-c", "echo boom >&2; exit 3"], 5)).await.unwrap_err().to_string();
        assert!(e.starts_with("`sh -c echo boom >&2; exit 3` exited with exit status: 3:\nboom"), "{e}");
        let t = Instant::now();
        let e = run(&call("sleep", &["30"], 1)).await.unwrap_err().to_string();
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(e.contains("did not finish within 1s (test wait; raise it with LAYOUT_GATE_TEST=...)"), "{e}");
        let e = run(&call("layout-gate-no-such-tool", &[], 1)).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "`layout-gate-no-such-tool` not found on PATH (run preflight: layout-gate run --lane kind --dry-run lists what is needed)"
        );
        // The spawn's own error stays behind the sentence.
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>()).map(std::io::Error::kind);
        assert_eq!(source, Some(std::io::ErrorKind::NotFound));
        assert_eq!(run_blocking(&call("sh", &["-c", "echo ok"], 5)).unwrap(), "ok\n");
        assert_eq!(run_blocking(&call("sleep", &["30"], 1)).unwrap_err().to_string(), "`sleep 30` did not finish within 1s");
        let e = run_blocking(&call("sh", &["-c", "exit 4"], 5)).unwrap_err();
        assert_eq!(e.to_string(), "`sh -c exit 4` exited with exit status: 4");
    }

    #[tokio::test]
    async fn a_cancelled_run_kills_its_child() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let script = format!("sleep 2; touch {}", marker.display());
        let c = call("sh", &["-c", &script], 30);
        let _ = tokio::time::timeout(Duration::from_millis(300), run(&c)).await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "the tool outlived the cancelled run");
    }

    #[test]
    fn tails() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("", 3), "");
    }
}
