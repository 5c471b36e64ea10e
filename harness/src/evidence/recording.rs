//! The kind lane's raw recordings: what a real cluster showed, kept in the form it arrived in,
//! so `layout-gate replay` can run the trackers, the dump summarizer and the judge on it again,
//! offline. Probe observations are already raw in [`super::ProbeRecord::observations`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Everything the kind lane observed of one case besides the probes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// The case's namespace on the cluster.
    pub namespace: String,
    /// The settle window of the conditions wait, in milliseconds.
    pub settle_ms: u64,
    /// Set when the case's expectations were another lane's prediction: the conditions wait
    /// also ended once nothing changed for this many milliseconds (what was seen is the answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_ms: Option<u64>,
    /// Every watch-based wait of the case, with every event its tracker was fed.
    pub waits: Vec<RecordedWait>,
    /// Every Gateway of the case the lane watched (the case's own first). Empty in recordings
    /// made before the lane watched several: the case's Gateway alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateways: Vec<String>,
    /// Every ListenerSet of the case the lane watched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listener_sets: Vec<String>,
    /// The namespaces beyond the case's own whose routes and ListenerSets the conditions wait
    /// read (those the case's manifests create). Empty in recordings made before it was kept:
    /// replay then takes the namespaces of the recorded events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watched: Vec<String>,
    /// Why the case's ListenerSets were not applied: the API server serves no ListenerSet kind
    /// (a Gateway API bundle before 1.6). An observation: the ListenerSets carry no status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_sets_not_served: Option<String>,
    /// The CiliumEnvoyConfig as read from the API server (what Cilium intended); with several
    /// Gateways, a `List` of each one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cec: Option<Value>,
    /// The `cilium-dbg envoy admin config listeners` read that was judged, exactly as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cilium_dbg: Option<RecordedExec>,
    /// What Cilium's own agent made of the case's CiliumEnvoyConfigs, when the operator lane's
    /// agent step was Cilium's agent (absent: the emulated step, or another lane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<RecordedAgent>,
}

/// Cilium's own agent's part of a case: where each CEC stood in it, where the bridge bound each
/// proxy port, and every xDS message of the case both ways (what the agent sent, what Envoy got
/// after the bridge's rewrites, Envoy's ACKs and NACKs), as the bridge logged them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedAgent {
    /// Which agent answered (`Cilium's own agent control plane 1.19.6 (agent-plane, DryMode)`).
    pub step: String,
    pub cecs: Vec<AgentCec>,
    /// The agent's `/binds`: each Gateway frontend with the proxy port it is sent to.
    pub binds: Vec<Value>,
    /// The bridge's log lines of the case (bounded by the reader).
    pub xds: Vec<Value>,
    /// Every CEC settled (taken and answered by Envoy) within the wait.
    pub settled: bool,
    /// What the lane said of each CEC from the above ("refused by Envoy (NACK …), reverted by
    /// Cilium's agent …").
    #[serde(default)]
    pub said: Vec<String>,
    /// The listeners Envoy ended up serving, as the exchange gives them (those of the last
    /// listener update Envoy acknowledged; absent in recordings made before the lane said it,
    /// or when Envoy acknowledged none within the case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Vec<String>>,
    pub waited_ms: u64,
    /// How long the lane waited at most for the agent to take and Envoy to answer the case's
    /// CECs (recordings made before it was kept: the lane's 20 s, its only limit then).
    #[serde(default = "RecordedAgent::default_limit_ms")]
    pub limit_ms: u64,
}

impl RecordedAgent {
    fn default_limit_ms() -> u64 {
        20_000
    }

    /// The lane's limit for the agent's wait (see [`RecordedAgent::limit_ms`]).
    pub fn limit(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.limit_ms)
    }
}

/// Where one CiliumEnvoyConfig stood in Cilium's agent when the case's wait ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentCec {
    /// `namespace/name`.
    pub name: String,
    /// The agent holds the spec the API server holds (it parsed this generation).
    pub taken: bool,
    /// The agent holds another spec under the name: an earlier generation it keeps serving
    /// because the current one does not parse (pkg/ciliumenvoyconfig/k8s_reflector.go).
    pub older_held: bool,
    /// The reconciler's status of this generation's resources: `Done`, `Error` or `Pending`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The reconciler's error, e.g. `NACK received: ...` (Envoy refused the update; the agent
    /// reverted the CEC's resources and retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Which tracker a wait fed, with what it needs to be built again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tracker", rename_all = "snake_case")]
pub enum TrackerKind {
    /// Backend pods ready (`track::PodsReady`).
    BackendPods { backends: Vec<String> },
    /// The conditions the case names (`track::CaseConditions`): these are judged.
    Conditions,
    /// A later step's CiliumEnvoyConfigs changed and settled, or held still (`track::CecSettled`).
    CecSettled,
    /// The probed Gateways' addresses (`track::GatewayAddress`): where the probes went.
    GatewayAddress {
        /// The Gateways waited for; empty in recordings made before probes named a Gateway:
        /// the case's Gateway alone.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        gateways: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedWait {
    /// What was waited for, as the progress output said it.
    pub what: String,
    #[serde(flatten)]
    pub tracker: TrackerKind,
    pub events: Vec<RecordedEvent>,
}

/// One watch event as the tracker saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// Milliseconds since the wait began (what the tracker was told).
    pub at_ms: u64,
    /// Wall-clock time it arrived (RFC 3339).
    pub at: String,
    #[serde(flatten)]
    pub event: RecordedKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RecordedKind {
    /// The object as it was (created, changed, or listed when the watch began), without
    /// `metadata.managedFields` (server-side-apply bookkeeping no tracker reads, and most of
    /// an object's size).
    Applied {
        object: Value,
    },
    Deleted {
        object: Value,
    },
    /// The initial listing was complete.
    Listed,
}

/// One command run in a container, with its exact output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedExec {
    pub pod: String,
    pub container: String,
    pub command: Vec<String>,
    /// When the judged read was taken (RFC 3339).
    pub at: String,
    pub output: String,
    /// Only listeners whose name starts with this (the case's Gateway's CEC) or one of
    /// `other_prefixes` (its other Gateways') are the case's.
    pub listener_prefix: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_prefixes: Vec<String>,
}

impl RecordedExec {
    /// Every prefix that marks a listener as the case's.
    pub fn prefixes(&self) -> Vec<String> {
        std::iter::once(self.listener_prefix.clone()).chain(self.other_prefixes.iter().cloned()).collect()
    }
}

/// An object as recorded: `metadata.managedFields` dropped.
pub fn recorded_object(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    v
}
