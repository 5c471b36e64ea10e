//! Trackers for the cluster's own pieces: CRDs, Cilium's DaemonSets and Deployment, the
//! GatewayClass, a case's backend pods, and objects that must go away.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::{Event, Progress, Tracker, generation, ident};
use crate::lanes::cluster::names::BACKEND_LABEL;
use crate::types::BackendName;

fn int(v: &Value, p: &str) -> i64 {
    v.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether the controller has seen the current spec (`status.observedGeneration`).
fn observed_current(v: &Value) -> bool {
    match (generation(v), v.pointer("/status/observedGeneration").and_then(Value::as_i64)) {
        (Some(g), Some(o)) => o >= g,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// A DaemonSet whose every scheduled pod is updated, ready and available.
pub struct DaemonSetReady {
    pub namespace: String,
    pub name: String,
    last: Option<Value>,
}

impl DaemonSetReady {
    pub fn new(namespace: &str, name: &str) -> Self {
        DaemonSetReady { namespace: namespace.into(), name: name.into(), last: None }
    }
}

impl Tracker for DaemonSetReady {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        match e {
            Event::Applied(v) if ident(v) == ("DaemonSet", self.namespace.as_str(), self.name.as_str()) => self.last = Some(v.clone()),
            Event::Deleted(v) if ident(v).2 == self.name && ident(v).0 == "DaemonSet" => self.last = None,
            _ => {}
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        let Some(v) = &self.last else { return Progress::Waiting };
        let desired = int(v, "/status/desiredNumberScheduled");
        let ok = observed_current(v)
            && desired > 0
            && int(v, "/status/numberReady") == desired
            && int(v, "/status/updatedNumberScheduled") == desired
            && int(v, "/status/numberAvailable") == desired;
        if ok { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        match &self.last {
            None => format!("DaemonSet {}/{} not seen", self.namespace, self.name),
            Some(v) => format!(
                "DaemonSet {}/{}: {} desired, {} ready, {} updated, {} available{}",
                self.namespace,
                self.name,
                int(v, "/status/desiredNumberScheduled"),
                int(v, "/status/numberReady"),
                int(v, "/status/updatedNumberScheduled"),
                int(v, "/status/numberAvailable"),
                if observed_current(v) { "" } else { " (controller has not seen the current generation)" }
            ),
        }
    }
}

/// A Deployment whose replicas are all updated and available.
pub struct DeploymentAvailable {
    pub namespace: String,
    pub name: String,
    last: Option<Value>,
}

impl DeploymentAvailable {
    pub fn new(namespace: &str, name: &str) -> Self {
        DeploymentAvailable { namespace: namespace.into(), name: name.into(), last: None }
    }
}

impl Tracker for DeploymentAvailable {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        if let Event::Applied(v) = e
            && ident(v) == ("Deployment", self.namespace.as_str(), self.name.as_str())
        {
            self.last = Some(v.clone());
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        let Some(v) = &self.last else { return Progress::Waiting };
        let want = v.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
        let ok = observed_current(v)
            && int(v, "/status/updatedReplicas") >= want
            && int(v, "/status/availableReplicas") >= want
            && int(v, "/status/readyReplicas") >= want;
        if ok { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        match &self.last {
            None => format!("Deployment {}/{} not seen", self.namespace, self.name),
            Some(v) => format!(
                "Deployment {}/{}: {} wanted, {} ready, {} available, {} updated",
                self.namespace,
                self.name,
                v.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1),
                int(v, "/status/readyReplicas"),
                int(v, "/status/availableReplicas"),
                int(v, "/status/updatedReplicas")
            ),
        }
    }
}

fn condition<'a>(v: &'a Value, type_: &str) -> Option<&'a Value> {
    v.pointer("/status/conditions")?.as_array()?.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn cond_text(c: &Value) -> String {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    let mut t = format!("{}={}", s("type"), s("status"));
    if !s("reason").is_empty() {
        t.push_str(&format!("/{}", s("reason")));
    }
    if !s("message").is_empty() {
        t.push_str(&format!(" ({:?})", s("message")));
    }
    t
}

/// Every named CRD reports Established=True. With no names (the dry run cannot know them)
/// it is done at once.
pub struct CrdsEstablished {
    pending: BTreeSet<String>,
    last: BTreeMap<String, String>,
}

impl CrdsEstablished {
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        CrdsEstablished { pending: names.into_iter().collect(), last: BTreeMap::new() }
    }
}

impl Tracker for CrdsEstablished {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        if let Event::Applied(v) = e {
            let (kind, _, name) = ident(v);
            if kind != "CustomResourceDefinition" || !self.pending.contains(name) && !self.last.contains_key(name) {
                return;
            }
            let c = condition(v, "Established");
            self.last.insert(name.to_string(), c.map(cond_text).unwrap_or_else(|| "no Established condition".into()));
            if c.and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True") {
                self.pending.remove(name);
            } else {
                self.pending.insert(name.to_string());
            }
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        if self.pending.is_empty() { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        let lines: Vec<String> =
            self.pending.iter().map(|n| format!("CRD {n}: {}", self.last.get(n).map(String::as_str).unwrap_or("not seen"))).collect();
        lines.join("; ")
    }
}

/// A condition `True` on one object, written for its current generation (the GatewayClass
/// `cilium` Accepted).
pub struct ConditionTrue {
    pub kind: String,
    pub name: String,
    pub type_: String,
    last: Option<Value>,
}

impl ConditionTrue {
    pub fn new(kind: &str, name: &str, type_: &str) -> Self {
        ConditionTrue { kind: kind.into(), name: name.into(), type_: type_.into(), last: None }
    }
}

impl Tracker for ConditionTrue {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        if let Event::Applied(v) = e
            && ident(v).0 == self.kind
            && ident(v).2 == self.name
        {
            self.last = Some(v.clone());
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        let Some(v) = &self.last else { return Progress::Waiting };
        let Some(c) = condition(v, &self.type_) else { return Progress::Waiting };
        let fresh = match (generation(v), c.get("observedGeneration").and_then(Value::as_i64)) {
            (Some(g), Some(o)) => o >= g,
            _ => true,
        };
        if fresh && c.get("status").and_then(Value::as_str) == Some("True") { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        match &self.last {
            None => format!("{} {} not seen", self.kind, self.name),
            Some(v) => {
                let conds: Vec<String> = v
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .map(|cs| cs.iter().map(cond_text).collect())
                    .unwrap_or_default();
                format!(
                    "{} {} (generation {}): {}",
                    self.kind,
                    self.name,
                    generation(v).unwrap_or(0),
                    if conds.is_empty() { "no conditions".into() } else { conds.join(", ") }
                )
            }
        }
    }
}

/// Reasons a container waits that say the image will never come: no point waiting longer.
const HOPELESS: &[&str] = &["InvalidImageName", "ErrImageNeverPull"];
/// Reasons worth naming when time runs out (kubelet keeps retrying these).
const TROUBLE: &[&str] =
    &["ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"];

/// At least one Ready pod per backend (pods carry the backend label).
pub struct PodsReady {
    backends: Vec<BackendName>,
    pods: BTreeMap<String, Value>,
}

impl PodsReady {
    pub fn new(backends: Vec<BackendName>) -> Self {
        PodsReady { backends, pods: BTreeMap::new() }
    }

    fn waiting_reasons(pod: &Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for key in ["/status/initContainerStatuses", "/status/containerStatuses"] {
            for cs in pod.pointer(key).and_then(Value::as_array).into_iter().flatten() {
                if let Some(w) = cs.pointer("/state/waiting") {
                    let reason = w.get("reason").and_then(Value::as_str).unwrap_or("").to_string();
                    let message = w.get("message").and_then(Value::as_str).unwrap_or("").to_string();
                    out.push((reason, message));
                }
            }
        }
        out
    }

    fn ready(pod: &Value) -> bool {
        pod.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
            cs.iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some("Ready") && c.get("status").and_then(Value::as_str) == Some("True"))
        })
    }

    fn backend(pod: &Value) -> &str {
        pod.pointer(&format!("/metadata/labels/{}", BACKEND_LABEL.replace('/', "~1"))).and_then(Value::as_str).unwrap_or("")
    }
}

impl Tracker for PodsReady {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        match e {
            Event::Applied(v) if ident(v).0 == "Pod" => {
                self.pods.insert(ident(v).2.to_string(), v.clone());
            }
            Event::Deleted(v) if ident(v).0 == "Pod" => {
                self.pods.remove(ident(v).2);
            }
            _ => {}
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        for (name, pod) in &self.pods {
            for (reason, message) in Self::waiting_reasons(pod) {
                if HOPELESS.contains(&reason.as_str()) {
                    return Progress::Failed(format!("pod {name}: {reason}: {message}"));
                }
            }
        }
        let all = self.backends.iter().all(|b| self.pods.values().any(|p| Self::backend(p) == b.as_str() && Self::ready(p)));
        if all { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        let mut lines = Vec::new();
        for b in &self.backends {
            let pods: Vec<(&String, &Value)> = self.pods.iter().filter(|(_, p)| Self::backend(p) == b.as_str()).collect();
            if pods.is_empty() {
                lines.push(format!("backend {b}: no pod yet"));
            }
            for (name, p) in pods {
                let phase = p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Unknown");
                let mut t = format!("backend {b}: pod {name} {phase}, {}", if Self::ready(p) { "ready" } else { "not ready" });
                for (reason, message) in Self::waiting_reasons(p) {
                    if TROUBLE.contains(&reason.as_str()) || HOPELESS.contains(&reason.as_str()) {
                        t.push_str(&format!("; {reason}: {message}"));
                    } else if !reason.is_empty() {
                        t.push_str(&format!("; waiting: {reason}"));
                    }
                }
                lines.push(t);
            }
        }
        lines.join("\n")
    }
}

/// One object gone: a Deleted event, or a listing that does not contain it.
pub struct Gone {
    pub kind: String,
    pub name: String,
    seen: Option<Value>,
    gone: bool,
}

impl Gone {
    pub fn new(kind: &str, name: &str) -> Self {
        Gone { kind: kind.into(), name: name.into(), seen: None, gone: false }
    }
}

impl Tracker for Gone {
    fn observe(&mut self, _at: Duration, e: Event<'_>) {
        match e {
            Event::Applied(v) if ident(v).0 == self.kind && ident(v).2 == self.name => {
                self.seen = Some(v.clone());
                self.gone = false;
            }
            Event::Deleted(v) if ident(v).0 == self.kind && ident(v).2 == self.name => self.gone = true,
            Event::Listed if self.seen.is_none() => self.gone = true,
            _ => {}
        }
    }
    fn progress(&self, _now: Duration) -> Progress {
        if self.gone { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        let phase = self.seen.as_ref().and_then(|v| v.pointer("/status/phase")).and_then(Value::as_str).unwrap_or("present");
        let conds: Vec<String> = self
            .seen
            .as_ref()
            .and_then(|v| v.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .map(|cs| cs.iter().filter(|c| c.get("status").and_then(Value::as_str) == Some("True")).map(cond_text).collect())
            .unwrap_or_default();
        format!(
            "{} {} still {phase}{}",
            self.kind,
            self.name,
            if conds.is_empty() { String::new() } else { format!(": {}", conds.join(", ")) }
        )
    }
}

/// Done when every part is; failed when any part fails.
pub struct AllOf(pub Vec<Box<dyn Tracker>>);

impl Tracker for AllOf {
    fn observe(&mut self, at: Duration, e: Event<'_>) {
        for t in &mut self.0 {
            t.observe(at, e);
        }
    }
    fn progress(&self, now: Duration) -> Progress {
        let mut all = true;
        for t in &self.0 {
            match t.progress(now) {
                Progress::Failed(m) => return Progress::Failed(m),
                Progress::Waiting => all = false,
                Progress::Done => {}
            }
        }
        if all { Progress::Done } else { Progress::Waiting }
    }
    fn last_state(&self) -> String {
        let now = Duration::MAX;
        let lines: Vec<String> = self.0.iter().filter(|t| t.progress(now) != Progress::Done).map(|t| t.last_state()).collect();
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::track::replay;
    use serde_json::json;

    fn at(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn daemonset_needs_every_pod_and_the_current_generation() {
        let ds = |generation: i64, og: i64, ready: i64| {
            Some(json!({"kind": "DaemonSet", "metadata": {"namespace": "kube-system", "name": "cilium", "generation": generation},
                "status": {"observedGeneration": og, "desiredNumberScheduled": 2, "numberReady": ready, "updatedNumberScheduled": 2, "numberAvailable": ready}}))
        };
        let mut t = DaemonSetReady::new("kube-system", "cilium");
        let seq = [(at(1), ds(1, 1, 0)), (at(2), ds(1, 1, 1)), (at(3), ds(2, 1, 2)), (at(4), ds(2, 2, 2))];
        assert_eq!(replay(&mut t, &seq), vec![Progress::Waiting, Progress::Waiting, Progress::Waiting, Progress::Done]);
        let mut t = DaemonSetReady::new("kube-system", "cilium");
        replay(&mut t, &seq[..3]);
        assert_eq!(
            t.last_state(),
            "DaemonSet kube-system/cilium: 2 desired, 2 ready, 2 updated, 2 available (controller has not seen the current generation)"
        );
    }

    #[test]
    fn deployment_available() {
        let d = |avail: i64| {
            Some(json!({"kind": "Deployment", "metadata": {"namespace": "kube-system", "name": "cilium-operator", "generation": 1},
            "spec": {"replicas": 1}, "status": {"observedGeneration": 1, "readyReplicas": avail, "availableReplicas": avail, "updatedReplicas": 1}}))
        };
        let mut t = DeploymentAvailable::new("kube-system", "cilium-operator");
        assert_eq!(replay(&mut t, &[(at(1), d(0)), (at(2), d(1))]), vec![Progress::Waiting, Progress::Done]);
    }

    #[test]
    fn crds_and_gatewayclass() {
        let crd = |n: &str, s: &str| {
            Some(
                json!({"kind": "CustomResourceDefinition", "metadata": {"name": n}, "status": {"conditions": [{"type": "Established", "status": s, "reason": "InitialNamesAccepted"}]}}),
            )
        };
        let mut t =
            CrdsEstablished::new(["gateways.gateway.networking.k8s.io".to_string(), "tlsroutes.gateway.networking.k8s.io".to_string()]);
        let p = replay(
            &mut t,
            &[(at(1), crd("gateways.gateway.networking.k8s.io", "True")), (at(2), crd("tlsroutes.gateway.networking.k8s.io", "False"))],
        );
        assert_eq!(p, vec![Progress::Waiting, Progress::Waiting]);
        assert_eq!(t.last_state(), "CRD tlsroutes.gateway.networking.k8s.io: Established=False/InitialNamesAccepted");
        assert_eq!(replay(&mut t, &[(at(3), crd("tlsroutes.gateway.networking.k8s.io", "True"))]), vec![Progress::Done]);

        let gc = |generation: i64, og: i64, s: &str| {
            Some(json!({"kind": "GatewayClass", "metadata": {"name": "cilium", "generation": generation},
            "status": {"conditions": [{"type": "Accepted", "status": s, "reason": "Accepted", "observedGeneration": og}]}}))
        };
        let mut t = ConditionTrue::new("GatewayClass", "cilium", "Accepted");
        // Stale True (written for generation 1 while the class is at 2) does not count.
        assert_eq!(
            replay(&mut t, &[(at(1), gc(2, 1, "True")), (at(2), gc(2, 2, "Unknown")), (at(3), gc(2, 2, "True"))]),
            vec![Progress::Waiting, Progress::Waiting, Progress::Done]
        );
    }

    #[test]
    fn backend_pods_report_pull_failures() {
        let pod = |name: &str, backend: &str, ready: bool, waiting: Option<(&str, &str)>| {
            let mut p = json!({"kind": "Pod", "metadata": {"namespace": "ns", "name": name, "labels": {BACKEND_LABEL: backend}},
                "status": {"phase": if ready { "Running" } else { "Pending" }, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
            if let Some((r, m)) = waiting {
                p["status"]["containerStatuses"] = json!([{"name": "echo", "state": {"waiting": {"reason": r, "message": m}}}]);
            }
            Some(p)
        };
        let bs = vec![BackendName::new("api").unwrap(), BackendName::new("web").unwrap()];
        let mut t = PodsReady::new(bs.clone());
        let p = replay(
            &mut t,
            &[
                (at(1), pod("api-1-a", "api", false, Some(("ErrImagePull", "pull access denied")))),
                (at(2), pod("web-1-b", "web", true, None)),
            ],
        );
        assert_eq!(p, vec![Progress::Waiting, Progress::Waiting]);
        assert_eq!(
            t.last_state(),
            "backend api: pod api-1-a Pending, not ready; ErrImagePull: pull access denied\nbackend web: pod web-1-b Running, ready"
        );
        assert_eq!(replay(&mut t, &[(at(3), pod("api-1-a", "api", true, None))]), vec![Progress::Done]);
        let mut t = PodsReady::new(bs);
        let p = replay(&mut t, &[(at(1), pod("api-1-a", "api", false, Some(("InvalidImageName", "couldn't parse image name"))))]);
        assert_eq!(p, vec![Progress::Failed("pod api-1-a: InvalidImageName: couldn't parse image name".into())]);
    }

    #[test]
    fn gone_by_delete_or_by_absence_from_the_listing() {
        let ns = json!({"kind": "Namespace", "metadata": {"name": "lg-a"}, "status": {"phase": "Terminating"}});
        let mut t = Gone::new("Namespace", "lg-a");
        t.observe(at(1), Event::Applied(&ns));
        t.observe(at(1), Event::Listed);
        assert_eq!(t.progress(at(1)), Progress::Waiting);
        assert_eq!(t.last_state(), "Namespace lg-a still Terminating");
        t.observe(at(2), Event::Deleted(&ns));
        assert_eq!(t.progress(at(2)), Progress::Done);
        let mut t = Gone::new("Namespace", "lg-b");
        t.observe(at(1), Event::Listed);
        assert_eq!(t.progress(at(1)), Progress::Done);
    }
}
