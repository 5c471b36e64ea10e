//! A later step of a case changes what the operator writes, a moment after the step's objects
//! are applied: Cilium's operator sets the routes' statuses before it writes the Gateway's
//! CiliumEnvoyConfig in the same reconcile (cilium@v1.20.2:operator/pkg/gateway-api/
//! gateway_reconcile.go: Reconcile), and a step may expect no condition at all. So before a
//! step's data path reads the CECs, this waits until the case's CECs changed since the step
//! began and then held still for the settle window, or held still that long from the start (the
//! step changed no CEC).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::{Event, Progress, Tracker, ident};

/// The case's CiliumEnvoyConfigs, by name, against their resourceVersions before the step.
pub struct CecSettled {
    before: BTreeMap<String, String>,
    now: BTreeMap<String, String>,
    settle: Duration,
    listed: bool,
    /// When the CECs last changed from what the step began with, or changed again since.
    changed_at: Option<Duration>,
}

fn version(v: &Value) -> String {
    v.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string()
}

impl CecSettled {
    /// `before`: each CEC of the case's namespace as read before the step was applied.
    pub fn new(before: &[Value], settle: Duration) -> Self {
        let before: BTreeMap<String, String> = before.iter().map(|v| (ident(v).2.to_string(), version(v))).collect();
        CecSettled { now: before.clone(), before, settle, listed: false, changed_at: None }
    }

    /// Whether any CEC differs from before the step.
    pub fn changed(&self) -> bool {
        self.now != self.before
    }
}

impl Tracker for CecSettled {
    fn observe(&mut self, at: Duration, event: Event<'_>) {
        let was = self.now.clone();
        match event {
            Event::Applied(v) => {
                self.now.insert(ident(v).2.to_string(), version(v));
            }
            Event::Deleted(v) => {
                self.now.remove(ident(v).2);
            }
            Event::Listed => self.listed = true,
        }
        if self.now != was && self.changed() {
            self.changed_at = Some(at);
        }
    }

    fn progress(&self, now: Duration) -> Progress {
        if !self.listed {
            return Progress::Waiting;
        }
        let since = self.changed_at.unwrap_or_default();
        if now.saturating_sub(since) >= self.settle { Progress::Done } else { Progress::Waiting }
    }

    fn last_state(&self) -> String {
        let list = |m: &BTreeMap<String, String>| m.iter().map(|(n, v)| format!("{n}@{v}")).collect::<Vec<_>>().join(", ");
        format!("CiliumEnvoyConfigs before the step: [{}]; now: [{}]", list(&self.before), list(&self.now))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cec(name: &str, rv: &str) -> Value {
        json!({"kind": "CiliumEnvoyConfig", "metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}})
    }

    const SETTLE: Duration = Duration::from_secs(3);
    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_changed_cec_is_waited_for_then_the_settle_window() {
        let mut t = CecSettled::new(&[cec("gw", "1")], SETTLE);
        t.observe(at(0), Event::Applied(&cec("gw", "1")));
        t.observe(at(0), Event::Listed);
        assert_eq!(t.progress(at(2000)), Progress::Waiting);
        // The operator writes the step's generation at 2.5 s: the window starts again there.
        t.observe(at(2500), Event::Applied(&cec("gw", "2")));
        assert_eq!(t.progress(at(3100)), Progress::Waiting, "{}", t.last_state());
        assert_eq!(t.progress(at(5500)), Progress::Done);
    }

    #[test]
    fn a_step_that_changes_no_cec_ends_after_the_window() {
        let mut t = CecSettled::new(&[cec("gw", "1")], SETTLE);
        assert_eq!(t.progress(at(4000)), Progress::Waiting, "not listed yet");
        t.observe(at(10), Event::Applied(&cec("gw", "1")));
        t.observe(at(10), Event::Listed);
        assert_eq!(t.progress(at(2999)), Progress::Waiting);
        assert_eq!(t.progress(at(3000)), Progress::Done);
        assert!(!t.changed());
    }

    #[test]
    fn a_deleted_or_new_cec_is_a_change() {
        let mut t = CecSettled::new(&[cec("gw", "1")], SETTLE);
        t.observe(at(0), Event::Listed);
        t.observe(at(1000), Event::Deleted(&cec("gw", "1")));
        assert!(t.changed());
        assert_eq!(t.progress(at(3500)), Progress::Waiting);
        t.observe(at(1500), Event::Applied(&cec("other", "7")));
        assert_eq!(t.progress(at(4499)), Progress::Waiting);
        assert_eq!(t.progress(at(4500)), Progress::Done);
    }
}
