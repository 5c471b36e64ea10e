//! The on-disk shape of `case.yaml`, exactly as written, with source locations. Unknown keys are
//! refused here (`deny_unknown_fields`); meaning is checked in [`super::load`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

pub type S<T> = Spanned<T>;

/// Condition type -> expectation, as written under a listener, the Gateway or a route parent.
pub type RawConditions = BTreeMap<String, S<String>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCase {
    pub summary: S<String>,
    #[serde(default)]
    pub refs: Vec<S<String>>,
    pub apex: Option<S<String>>,
    pub gateway: Option<S<String>>,
    #[serde(default)]
    pub certificates: BTreeMap<String, S<Vec<S<String>>>>,
    /// Certificates whose Secret lives in another namespace the case creates,
    /// `{namespace}-SUFFIX` (a cross-namespace certificateRef): name -> SUFFIX.
    #[serde(default)]
    pub certificate_namespaces: BTreeMap<String, S<String>>,
    #[serde(default)]
    pub backends: BTreeMap<String, S<RawBackend>>,
    pub manifests: S<Vec<S<String>>>,
    pub expect: S<Vec<S<RawGroup>>>,
    /// Condition types beyond the Gateway API set that expectations may name (an extension's
    /// own conditions); anything else outside the set is refused as a typo.
    #[serde(default)]
    pub extension_conditions: Vec<S<String>>,
    /// Kinds of cluster-scoped objects the manifests create (each named after `{namespace}`);
    /// the kind lane deletes them with the case. Anything cluster-scoped not declared is refused.
    #[serde(default)]
    pub cluster_scoped: Vec<S<String>>,
    /// Later steps, in order: what each applies or deletes after the ones before it, and what
    /// is expected then. `manifests:` and `expect:` above are the first step.
    #[serde(default)]
    pub steps: Vec<S<RawStep>>,
}

impl RawCase {
    /// Every step's expectation groups, each list with the field it is under: `expect`, then
    /// `steps[i].expect`.
    pub fn expect_lists(&self) -> Vec<(String, &S<Vec<S<RawGroup>>>)> {
        let mut out = vec![("expect".to_string(), &self.expect)];
        out.extend(self.steps.iter().enumerate().map(|(i, s)| (format!("steps[{i}].expect"), &s.value.expect)));
        out
    }
}

/// One later step of a case (`steps:`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// What the step does, in a few words (evidence and reports name the step by it).
    pub name: S<String>,
    /// Manifest files applied in this step (created, or updated in place when an earlier step
    /// applied an object of the same kind and name).
    #[serde(default)]
    pub apply: Vec<S<String>>,
    /// Manifest files an earlier step applied whose objects this step deletes.
    #[serde(default)]
    pub delete: Vec<S<String>>,
    pub expect: S<Vec<S<RawGroup>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBackend {
    /// The certificate a TLS backend presents; absent for a plain HTTP backend.
    pub tls: Option<S<String>>,
    /// The backend lives in the namespace `{namespace}-SUFFIX` the case creates beside its own
    /// (a Service in an application's namespace, reached by a route there or through a
    /// ReferenceGrant) instead of the case's own.
    pub namespace_suffix: Option<S<String>>,
    /// The `appProtocol` of the backend's Service port (`kubernetes.io/h2c`), which Cilium's
    /// operator reads for the backend's cluster protocol.
    pub app_protocol: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    pub cilium: S<String>,
    pub provenance: S<String>,
    #[serde(rename = "ref")]
    pub reference: Option<S<String>>,
    pub note: Option<S<String>>,
    /// Which kind-lane run observed it (with `provenance: observed`).
    pub observed: Option<S<RawObserved>>,
    /// Operator-lane runs whose Cilium operator answered every expectation of the group, one per
    /// version (`run --lane operator --record` writes them).
    #[serde(default)]
    pub confirmed: Vec<S<RawConfirmed>>,
    pub gateway: Option<S<RawConditions>>,
    /// Gateway name -> its conditions, for cases with several Gateways.
    #[serde(default)]
    pub gateways: BTreeMap<String, S<RawConditions>>,
    /// ListenerSet name -> its conditions and its listeners' conditions.
    #[serde(default)]
    pub listenersets: BTreeMap<String, S<RawListenerSet>>,
    #[serde(default)]
    pub listeners: BTreeMap<String, S<RawConditions>>,
    #[serde(default)]
    pub routes: BTreeMap<String, S<BTreeMap<String, S<RawConditions>>>>,
    #[serde(default)]
    pub probes: Vec<S<RawProbe>>,
    #[serde(default)]
    pub envoy: BTreeMap<String, S<RawEnvoyListener>>,
    /// `<service>:<port>` -> what Envoy holds of the backend's cluster.
    #[serde(default)]
    pub clusters: BTreeMap<String, S<RawCluster>>,
    /// `Kind/name` -> a part of the API server's message: objects it refuses (HTTP 422).
    #[serde(default)]
    pub refused: BTreeMap<String, S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListenerSet {
    #[serde(default)]
    pub conditions: RawConditions,
    #[serde(default)]
    pub listeners: BTreeMap<String, S<RawConditions>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    pub port: S<i64>,
    /// The Gateway probed; required when the case has several.
    pub gateway: Option<S<String>>,
    /// The HTTP request path (default `/`).
    pub path: Option<S<String>>,
    pub sni: Option<S<String>>,
    #[serde(default)]
    pub no_sni: bool,
    /// A plain HTTP request (no TLS) with this Host, instead of a TLS handshake.
    #[serde(default)]
    pub plain: bool,
    pub host: Option<S<String>>,
    pub answers: Option<S<String>>,
    /// The HTTP status the answer must carry.
    pub status: Option<S<i64>>,
    pub how: Option<S<String>>,
    pub alert: Option<S<String>>,
    pub served_by: Option<S<String>>,
    pub provenance: Option<S<String>>,
    #[serde(rename = "ref")]
    pub reference: Option<S<String>>,
    pub note: Option<S<String>>,
    pub observed: Option<S<RawObserved>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnvoyListener {
    pub filter_chains: Option<S<i64>>,
    pub server_names: Option<S<Vec<Vec<String>>>>,
    /// Per chain, its kind and server_names.
    pub chains: Option<S<Vec<S<RawChain>>>>,
    pub error_contains: Option<S<String>>,
    #[serde(default)]
    pub absent: bool,
    pub provenance: Option<S<String>>,
    #[serde(rename = "ref")]
    pub reference: Option<S<String>>,
    pub note: Option<S<String>>,
    pub observed: Option<S<RawObserved>>,
}

/// One expected Envoy cluster: `{protocol: downstream}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    /// The upstream HTTP protocol Envoy holds for it (`none`, `downstream`, `http1`, ...).
    pub protocol: S<String>,
}

/// `observed: {lane: kind, cilium: "1.19.6", date: "2026-12-01", run: RUN_ID}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawObserved {
    pub lane: Option<S<String>>,
    pub cilium: Option<S<String>>,
    pub date: Option<S<String>>,
    pub run: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfirmed {
    pub lane: Option<S<String>>,
    pub cilium: Option<S<String>>,
    /// The Go module sum of the github.com/cilium/cilium the operator was built from.
    pub module: Option<S<String>>,
    pub date: Option<S<String>>,
    pub run: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawChain {
    pub kind: S<String>,
    #[serde(default)]
    pub server_names: Vec<String>,
}
