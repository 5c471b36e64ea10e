//! How a run ends badly: the phase that failed, what went wrong, the last state seen, and
//! (added by the session) where the diagnostics are and what teardown did. One message with
//! all of it, so a CI log line is enough to start.

use std::fmt;
use std::time::Instant;

use super::driver::{Driver, StepError, WaitEnd, WaitSpec};
use super::timeouts::{Wait, human};
use super::track::Tracker;
use crate::evidence::{Phase, now_rfc3339};

/// A phase that could not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseError {
    pub phase: String,
    pub problem: String,
    pub last_state: Option<String>,
    /// What the user can do about it, when there is something specific.
    pub hint: Option<String>,
}

impl PhaseError {
    pub fn new(phase: &str, problem: impl Into<String>) -> Self {
        PhaseError { phase: phase.into(), problem: problem.into(), last_state: None, hint: None }
    }
    pub fn with_state(mut self, s: impl Into<String>) -> Self {
        let s = s.into();
        if !s.trim().is_empty() {
            self.last_state = Some(s);
        }
        self
    }
    /// The same error in step `number` (counted from 1) of a case with steps, named by it.
    pub fn in_step(mut self, number: usize, name: &str) -> Self {
        self.phase = format!("step {number} ({name}): {}", self.phase);
        self
    }
    pub fn with_hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }
    pub fn step(phase: &str, e: StepError) -> Self {
        PhaseError::new(phase, e.to_string())
    }
    /// A wait that did not end well, as a phase error; `None` when it is done.
    pub fn from_wait(phase: &str, what: &str, wait: Wait, end: WaitEnd) -> Option<Self> {
        match end {
            WaitEnd::Done => None,
            WaitEnd::TimedOut { last } => Some(
                PhaseError::new(
                    phase,
                    format!("{what}: not reached within {} ({}; raise it with {}=...)", human(wait.limit), wait.name, wait.var),
                )
                .with_state(last),
            ),
            WaitEnd::Failed { reason, last } => Some(PhaseError::new(phase, format!("{what}: {reason}")).with_state(last)),
        }
    }
}

impl fmt::Display for PhaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "phase `{}` failed: {}", self.phase, self.problem)?;
        if let Some(s) = &self.last_state {
            write!(f, "\nlast state seen:")?;
            for l in s.lines() {
                write!(f, "\n  {l}")?;
            }
        }
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PhaseError {}

/// What teardown did, for the final message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeardownReport {
    pub done: Vec<String>,
    pub failed: Vec<String>,
    /// Left in place on purpose (asked for, or not ours to delete).
    pub kept: Vec<String>,
}

impl TeardownReport {
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.done.is_empty() {
            parts.push(format!("cleaned up: {}", self.done.join(", ")));
        }
        if !self.kept.is_empty() {
            parts.push(format!("left in place as asked: {}", self.kept.join(", ")));
        }
        if !self.failed.is_empty() {
            parts.push(format!("COULD NOT CLEAN UP (remove by hand): {}", self.failed.join("; ")));
        }
        if parts.is_empty() { "nothing was created".into() } else { parts.join("\n") }
    }
}

/// The message a failed run ends with.
pub fn failure_message(lane: crate::evidence::Lane, err: &PhaseError, diagnostics: Option<&str>, teardown: &TeardownReport) -> String {
    let mut m = format!("layout-gate {} lane: {err}", lane.as_str());
    match diagnostics {
        Some(d) => m.push_str(&format!("\ndiagnostics: {d}")),
        None => m.push_str("\ndiagnostics: none collected (the cluster API was not reachable)"),
    }
    m.push('\n');
    m.push_str(&teardown.summary());
    m
}

/// Timed phases, recorded into evidence in the order they ran.
#[derive(Debug, Default)]
pub struct PhaseLog {
    pub phases: Vec<Phase>,
    open: Vec<(String, String, Instant)>,
}

impl PhaseLog {
    pub fn begin(&mut self, name: &str) {
        self.open.push((name.to_string(), now_rfc3339(), Instant::now()));
    }
    /// Ends the most recent open phase.
    pub fn end(&mut self) {
        if let Some((name, started_at, t)) = self.open.pop() {
            self.phases.push(Phase { name, started_at, duration_ms: t.elapsed().as_millis() as u64 });
        }
    }
}

/// Waits on `spec` with `tr`; a wait that does not end well is an error of `phase`.
pub async fn wait_ok<D: Driver>(d: &mut D, phase: &str, spec: &WaitSpec, tr: &mut dyn Tracker) -> Result<(), PhaseError> {
    let end = d.wait(spec, tr).await.map_err(|e| PhaseError::step(phase, e))?;
    match PhaseError::from_wait(phase, &spec.what, spec.wait, end) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::timeouts::ClusterTimeouts;

    #[test]
    fn helm_timeout_message_names_phase_state_diagnostics_and_teardown() {
        let t = ClusterTimeouts::default();
        let e = PhaseError::from_wait(
            "install Cilium",
            "agent, operator and cilium-envoy ready",
            t.cilium_ready,
            WaitEnd::TimedOut { last: "DaemonSet kube-system/cilium: 2 desired, 1 ready, 2 updated, 1 available".into() },
        )
        .unwrap();
        let report = TeardownReport { done: vec!["kind cluster layout-gate-1-19-5".into()], ..TeardownReport::default() };
        let m =
            failure_message(crate::evidence::Lane::Kind, &e, Some("evidence/20260101T000000Z-kind-1.19.5/diagnostics/cluster/"), &report);
        assert_eq!(
            m,
            "layout-gate kind lane: phase `install Cilium` failed: agent, operator and cilium-envoy ready: not reached within 10m (Cilium ready; raise it with LAYOUT_GATE_CILIUM_READY_TIMEOUT=...)\n\
             last state seen:\n  DaemonSet kube-system/cilium: 2 desired, 1 ready, 2 updated, 1 available\n\
             diagnostics: evidence/20260101T000000Z-kind-1.19.5/diagnostics/cluster/\n\
             cleaned up: kind cluster layout-gate-1-19-5"
        );
    }

    #[test]
    fn failures_without_api_and_failed_cleanup_say_so() {
        let e = PhaseError::new("create cluster", "kind create cluster exited with status 1")
            .with_state("ERROR: failed to create cluster: node(s) already exist")
            .with_hint("x");
        let report = TeardownReport {
            failed: vec!["kind cluster layout-gate-1-19-5: kind delete cluster exited with status 1".into()],
            kept: vec![],
            done: vec![],
        };
        let m = failure_message(crate::evidence::Lane::Kind, &e, None, &report);
        assert!(m.contains("diagnostics: none collected"), "{m}");
        assert!(m.contains("COULD NOT CLEAN UP (remove by hand): kind cluster layout-gate-1-19-5"), "{m}");
        assert!(m.contains("\nhint: x"), "{m}");
        assert_eq!(TeardownReport::default().summary(), "nothing was created");
        assert!(PhaseError::from_wait("p", "w", ClusterTimeouts::default().api_ready, WaitEnd::Done).is_none());
        let f = PhaseError::from_wait(
            "backends",
            "pods ready",
            ClusterTimeouts::default().backends_ready,
            WaitEnd::Failed { reason: "pod a: InvalidImageName: x".into(), last: "backend a: pod a Pending".into() },
        )
        .unwrap();
        assert_eq!(
            f.to_string(),
            "phase `backends` failed: pods ready: pod a: InvalidImageName: x\nlast state seen:\n  backend a: pod a Pending"
        );
    }

    #[test]
    fn phases_are_timed_in_order() {
        let mut p = PhaseLog::default();
        p.begin("a");
        p.begin("b");
        p.end();
        p.end();
        p.end(); // nothing open: no phase invented
        let names: Vec<&str> = p.phases.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, vec!["b", "a"]);
    }
}
