//! A checked case: every name resolved, every range parsed, every SNI valid. Built only by
//! [`super::load`], so holding a `Case` means it passed lint.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::version::{CiliumVersion, VersionRange};
use crate::render::certs::CertSpec;
use crate::types::{BackendName, CertName, Port, Sni};

/// The longest SUFFIX of a case's other namespaces (`{namespace}-SUFFIX`). `check` derives
/// suffixes from application namespaces, which can be long; the cluster lanes leave room for
/// the usual short ones (`lanes/cluster/names.rs` FAMILY_SUFFIX_ROOM).
pub const NAMESPACE_SUFFIX_MAX: usize = 40;

#[derive(Debug, Clone)]
pub struct Case {
    /// The folder name, e.g. `dns01-default`; a case in a group folder is `cilium/<fixture>`.
    pub name: String,
    pub dir: PathBuf,
    pub file: PathBuf,
    pub summary: String,
    pub refs: Vec<String>,
    pub apex: String,
    /// The Gateway whose status and listeners the expectations speak of.
    pub gateway: String,
    pub certificates: Vec<CertSpec>,
    pub backends: BTreeMap<BackendName, Backend>,
    /// Backends that live in another namespace the case creates, `{namespace}-SUFFIX`: name
    /// -> SUFFIX. Every other backend lives in the case's own namespace.
    pub backend_namespaces: BTreeMap<BackendName, String>,
    /// Backends whose Service port carries an `appProtocol` (`app_protocol:`): name -> it.
    pub backend_app_protocols: BTreeMap<BackendName, String>,
    /// Certificates whose Secret lives in another namespace the case creates,
    /// `{namespace}-SUFFIX`: name -> SUFFIX. Every other Secret is in the case's namespace.
    pub certificate_namespaces: BTreeMap<CertName, String>,
    pub manifests: Vec<ManifestFile>,
    pub groups: Vec<ExpectGroup>,
    /// SHA-256 over case.yaml and every manifest, so evidence says which text was run.
    pub hash: String,
    /// SHA-256 of each file by name (case.yaml and each manifest), recorded in evidence.
    pub file_digests: BTreeMap<String, String>,
    /// Kinds of cluster-scoped objects the case declares (`cluster_scoped:`): the kind lane
    /// registers each such object for deletion before it applies it.
    pub cluster_scoped: Vec<String>,
    /// The steps after the first (`steps:`), in order. `manifests` and `groups` are the first
    /// step; a case without `steps:` is that one step alone.
    pub steps: Vec<Step>,
}

/// One later step of a case: applied after every step before it, waited on and judged on its
/// own expectations.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the step does, in a few words.
    pub name: String,
    /// Line of the step in case.yaml, for messages.
    pub line: u64,
    /// Files applied in this step, in order (an object an earlier step applied is updated).
    pub apply: Vec<ManifestFile>,
    /// Files an earlier step applied whose objects this step deletes, in order.
    pub delete: Vec<PathBuf>,
    pub groups: Vec<ExpectGroup>,
}

/// The name of the first step in evidence and reports: the case's own `manifests:` and
/// `expect:`.
pub const FIRST_STEP: &str = "manifests";

#[derive(Debug, Clone)]
pub struct ManifestFile {
    pub path: PathBuf,
    /// The text before substitution.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Backend {
    /// Terminates TLS with this certificate and names itself in its HTTP answer.
    Tls { cert: CertName },
    /// Plain HTTP; names itself.
    Http,
}

/// Where an expectation comes from. A kind-lane run that disagrees with an `Inferred`
/// expectation is news, not a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProvenanceKind {
    /// Read in Cilium's source.
    Source,
    /// Stated in an upstream issue or PR, or seen on a live cluster by someone else.
    Reported,
    /// Our inference, still to be confirmed on a cluster.
    Inferred,
    /// Seen by layout-gate's kind lane on real Cilium; [`Provenance::observed`] says which run.
    /// Only `run --lane kind --record` writes it; a model run never does.
    Observed,
}

impl ProvenanceKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "source" => Some(Self::Source),
            "reported" => Some(Self::Reported),
            "inferred" => Some(Self::Inferred),
            "observed" => Some(Self::Observed),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Source => "source",
            Self::Reported => "reported",
            Self::Inferred => "inferred",
            Self::Observed => "observed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub kind: ProvenanceKind,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For [`ProvenanceKind::Observed`] (and only for it): the kind-lane run that saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedBy>,
}

impl Provenance {
    /// Our own inference, with no reference or note.
    pub fn inferred() -> Self {
        Provenance { kind: ProvenanceKind::Inferred, reference: None, note: None, observed: None }
    }
}

/// Which run observed an expectation: lane (always `kind`), Cilium version, date, run id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedBy {
    pub lane: String,
    pub cilium: String,
    pub date: String,
    pub run: String,
}

/// An operator-lane run that answered every expectation of a group: Cilium's own operator at
/// `cilium`, built from the github.com/cilium/cilium module with sum `module`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmedBy {
    pub lane: String,
    pub cilium: String,
    pub module: String,
    pub date: String,
    pub run: String,
}

impl fmt::Display for ConfirmedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "confirmed by Cilium's operator {} ({}) on {}, run {}", self.cilium, self.module, self.date, self.run)
    }
}

/// How the note of every expectation `case new --from` writes begins: the model's own
/// prediction, written down as an inference. A model run that passes such a case only agrees
/// with itself, and the report says so.
pub const MODEL_INFERENCE_NOTE: &str = "produced by the layout-gate model";

impl Provenance {
    /// Whether this is an inference the model itself made (`case new --from`), not a reading of
    /// Cilium's source or of an upstream report.
    pub fn is_model_inference(&self) -> bool {
        self.kind == ProvenanceKind::Inferred && self.note.as_deref().is_some_and(|n| n.starts_with(MODEL_INFERENCE_NOTE))
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.as_str())?;
        if let Some(r) = &self.reference {
            write!(f, " ({r})")?;
        }
        if let Some(o) = &self.observed {
            write!(f, " ({} {} {}, run {})", o.lane, o.cilium, o.date, o.run)?;
        }
        Ok(())
    }
}

/// A ListenerSet's own conditions and its listeners' (listener name -> conditions).
pub type ListenerSetExpect = (Vec<CondExpect>, BTreeMap<String, Vec<CondExpect>>);

/// The expectations for one Cilium version range.
#[derive(Debug, Clone)]
pub struct ExpectGroup {
    pub range: VersionRange,
    pub provenance: Provenance,
    /// Cilium's own operator answered every expectation of the group, at these versions
    /// (`run --lane operator --record`): who answered, beside where the expectation came from.
    pub confirmed: Vec<ConfirmedBy>,
    /// Line of the group in case.yaml, for messages.
    pub line: u64,
    pub gateway: Vec<CondExpect>,
    /// Gateway name -> conditions (`gateways:`), for cases with several Gateways.
    pub gateways: BTreeMap<String, Vec<CondExpect>>,
    /// ListenerSet name -> (its conditions, listener name -> conditions).
    pub listener_sets: BTreeMap<String, ListenerSetExpect>,
    /// Listener key (`<listener>`, or `<gateway>/<listener>` with several Gateways) ->
    /// conditions.
    pub listeners: BTreeMap<String, Vec<CondExpect>>,
    /// route name -> parent (listener sectionName, or the Gateway's name for a parentRef
    /// without one) -> conditions.
    pub routes: BTreeMap<String, BTreeMap<String, Vec<CondExpect>>>,
    pub probes: Vec<ProbeExpect>,
    pub envoy: BTreeMap<String, EnvoyListenerExpect>,
    /// `<service>:<port>` -> what Envoy holds of that backend's cluster (`clusters:`).
    pub clusters: BTreeMap<String, ClusterExpect>,
    /// Objects the API server refuses to create (`refused:`), with what its message says.
    pub refused: Vec<RefusedExpect>,
}

/// One expected Envoy cluster: the upstream HTTP protocol Envoy holds for a backend's cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterExpect {
    pub protocol: crate::types::UpstreamProtocol,
    pub provenance: Provenance,
    pub line: u64,
}

/// An object the API server must refuse (HTTP 422): `Kind/name` in the manifests, and a part of
/// the API server's message (`spec.hostnames: Required value`) that says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedExpect {
    pub kind: String,
    pub name: String,
    pub message_contains: String,
}

impl ExpectGroup {
    /// A group over `range` that expects nothing yet (inferred, at no line of a file): what
    /// code builds in memory, e.g. `check`'s probe groups.
    pub fn empty(range: VersionRange) -> Self {
        ExpectGroup {
            range,
            provenance: Provenance::inferred(),
            confirmed: Vec::new(),
            line: 0,
            gateway: Vec::new(),
            gateways: BTreeMap::new(),
            listener_sets: BTreeMap::new(),
            listeners: BTreeMap::new(),
            routes: BTreeMap::new(),
            probes: Vec::new(),
            envoy: BTreeMap::new(),
            clusters: BTreeMap::new(),
            refused: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CondStatus {
    True,
    False,
    Unknown,
}

impl CondStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// What a condition must look like: a status and optionally a reason, or not there at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CondWant {
    Status { status: CondStatus, reason: Option<String> },
    Absent,
}

impl CondWant {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "absent" {
            return Ok(Self::Absent);
        }
        let (status, reason) = match s.split_once('/') {
            Some((st, r)) if !r.is_empty() && r.bytes().all(|b| b.is_ascii_alphanumeric()) => (st, Some(r.to_string())),
            Some(_) => return Err(format!("{s:?}: the reason after '/' must be a CamelCase word, like True/ProtocolConflict")),
            None => (s, None),
        };
        let status = match status {
            "True" => CondStatus::True,
            "False" => CondStatus::False,
            "Unknown" => CondStatus::Unknown,
            _ => {
                return Err(format!(
                    "{s:?} is not a condition expectation; write \"True\", \"False\", \"Unknown\", \"True/Reason\" or \"absent\" (quote True/False so YAML keeps them strings)"
                ));
            }
        };
        Ok(Self::Status { status, reason })
    }
}

impl fmt::Display for CondWant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Absent => f.write_str("absent"),
            Self::Status { status, reason: None } => f.write_str(status.as_str()),
            Self::Status { status, reason: Some(r) } => write!(f, "{}/{}", status.as_str(), r),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CondExpect {
    #[serde(rename = "type")]
    pub type_: String,
    pub want: CondWant,
}

/// How a probe may fail to get a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NothingHow {
    Reset,
    Alert,
    Closed,
    Timeout,
    Refused,
}

impl NothingHow {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "reset" => Self::Reset,
            "alert" => Self::Alert,
            "closed" => Self::Closed,
            "timeout" => Self::Timeout,
            "refused" => Self::Refused,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reset => "reset",
            Self::Alert => "alert",
            Self::Closed => "closed",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// This certificate of the run answers.
    Cert(CertName),
    /// No certificate answers; optionally how the attempt ends (and which alert).
    Nothing { how: Option<NothingHow>, alert: Option<String> },
    /// A plain HTTP probe is answered (its status and backend are checked beside).
    Answered,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Cert(c) => write!(f, "{c}"),
            Answer::Nothing { how: None, .. } => f.write_str("nothing"),
            Answer::Nothing { how: Some(h), alert: None } => write!(f, "nothing ({})", h.as_str()),
            Answer::Nothing { how: Some(h), alert: Some(a) } => write!(f, "nothing ({} {a})", h.as_str()),
            Answer::Answered => f.write_str("an HTTP answer"),
        }
    }
}

/// Which (port, SNI) a probe targets; two expectations on the same key are one probe.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProbeKey {
    pub port: Port,
    /// The SNI of a TLS probe; for a plain HTTP probe, the Host header.
    pub sni: Option<Sni>,
    /// Whether an HTTP request follows the handshake (always, for a plain probe).
    pub http: bool,
    /// A plain HTTP request without TLS (e.g. to tell :80's redirect from a leak).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain: bool,
    /// The Gateway probed, in a case with several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// The HTTP request's path, when not `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl fmt::Display for ProbeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.gateway {
            write!(f, "{g} ")?;
        }
        self.fmt_rest(f)?;
        if let Some(p) = &self.path {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

impl ProbeKey {
    fn fmt_rest(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.sni, self.plain) {
            (Some(s), true) => write!(f, "{} {} (plain HTTP)", self.port, s),
            (None, true) => write!(f, "{} (plain HTTP)", self.port),
            (Some(s), false) => write!(f, "{} {}", self.port, s),
            (None, false) => write!(f, "{} (no SNI)", self.port),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeExpect {
    pub key: ProbeKey,
    pub answer: Answer,
    pub served_by: Option<BackendName>,
    /// The HTTP status the answer after the handshake (or the plain answer) must carry.
    #[serde(default)]
    pub status: Option<u16>,
    pub provenance: Provenance,
    pub line: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvoyListenerExpect {
    pub filter_chains: Option<u32>,
    /// Per chain, its server_names (an empty list is a chain without server_names); compared
    /// as a multiset, since Envoy does not promise an order.
    pub server_names: Option<Vec<Vec<String>>>,
    /// Per chain, what it does and its server_names; a multiset like `server_names`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chains: Option<Vec<ChainExpect>>,
    pub error_contains: Option<String>,
    pub absent: bool,
    pub provenance: Provenance,
    pub line: u64,
}

/// What a filter chain does with a connection, as a case names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainKind {
    /// An HTTP connection manager without TLS (Cilium's `listener-insecure` chain).
    Http,
    /// An HTTP connection manager behind a TLS-terminating transport socket.
    Https,
    /// A `tcp_proxy` that passes the TLS stream through (TLS passthrough).
    TcpProxy,
    /// Anything else (another network filter, or a chain a trimmed dump elided).
    Other,
}

impl ChainKind {
    /// The kinds a case may write; `other` is only ever observed.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "http" => Self::Http,
            "https" => Self::Https,
            "tcp_proxy" => Self::TcpProxy,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
            Self::TcpProxy => "tcp_proxy",
            Self::Other => "other",
        }
    }
}

/// One expected filter chain: its kind and server_names (empty: no server_names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainExpect {
    pub kind: ChainKind,
    pub server_names: Vec<String>,
}

/// Every expectation that applies to one Cilium version, merged from the matching groups.
/// Evidence stores it as judged, so a reader re-judges the run without the case files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub ranges: Vec<String>,
    pub gateway: Vec<(CondExpect, Provenance)>,
    /// (Gateway name, condition) from `gateways:`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateways: Vec<(String, CondExpect, Provenance)>,
    /// (ListenerSet name, condition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listener_sets: Vec<(String, CondExpect, Provenance)>,
    /// (ListenerSet name, listener name, condition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listener_set_listeners: Vec<(String, String, CondExpect, Provenance)>,
    pub listeners: Vec<(String, CondExpect, Provenance)>,
    pub routes: Vec<(String, String, CondExpect, Provenance)>,
    pub probes: Vec<ProbeExpect>,
    pub envoy: Vec<(String, EnvoyListenerExpect)>,
    /// `<service>:<port>` -> the expected cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<(String, ClusterExpect)>,
    /// Objects the API server must refuse.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<(RefusedExpect, Provenance)>,
}

impl Applied {
    pub fn is_empty(&self) -> bool {
        self.gateway.is_empty()
            && self.gateways.is_empty()
            && self.listener_sets.is_empty()
            && self.listener_set_listeners.is_empty()
            && self.listeners.is_empty()
            && self.routes.is_empty()
            && self.probes.is_empty()
            && self.envoy.is_empty()
            && self.clusters.is_empty()
            && self.refused.is_empty()
    }
}

impl Case {
    /// The namespace backend `b` lives in, for a case placed in `namespace`.
    pub fn backend_namespace(&self, b: &BackendName, namespace: &str) -> String {
        match self.backend_namespaces.get(b) {
            Some(suffix) => format!("{namespace}-{suffix}"),
            None => namespace.to_string(),
        }
    }

    /// The namespace certificate `c`'s Secret lives in, for a case run in `namespace`.
    pub fn certificate_namespace(&self, c: &CertName, namespace: &str) -> String {
        match self.certificate_namespaces.get(c) {
            Some(suffix) => format!("{namespace}-{suffix}"),
            None => namespace.to_string(),
        }
    }

    /// The name as one path segment or DNS label part (`cilium/x` -> `cilium-x`), for
    /// namespaces, temporary folders and run ids.
    pub fn slug(&self) -> String {
        self.name.replace('/', "-")
    }

    /// Whether any expectation speaks of `v`. A Cilium fixture speaks only for the release line
    /// it was read at: at another version it has nothing to check, and is left out rather than
    /// failed.
    pub fn expects_at(&self, v: &CiliumVersion) -> bool {
        (0..self.step_count()).any(|i| !self.at_step(i).applied(v).is_empty())
    }

    /// How many steps the case has: the first (its own `manifests:`) and each of `steps:`.
    pub fn step_count(&self) -> usize {
        1 + self.steps.len()
    }

    /// Step `i`'s name ([`FIRST_STEP`] for the first).
    pub fn step_name(&self, i: usize) -> &str {
        match i.checked_sub(1) {
            None => FIRST_STEP,
            Some(j) => self.steps.get(j).map(|s| s.name.as_str()).unwrap_or(""),
        }
    }

    /// Every manifest file the case applies in any step, each once, in the order first applied:
    /// what lint, the namespace scan and the cleanup read.
    pub fn all_manifests(&self) -> Vec<&ManifestFile> {
        let mut out: Vec<&ManifestFile> = Vec::new();
        for m in self.manifests.iter().chain(self.steps.iter().flat_map(|s| &s.apply)) {
            if !out.iter().any(|o| o.path == m.path) {
                out.push(m);
            }
        }
        out
    }

    /// The case as it stands after step `i` (0 is the first), as one step: the files whose
    /// objects exist then (applied by step `i` or before, not deleted since), in the order
    /// first applied, with the step's expectations. A file applied again keeps its place and
    /// takes its newest text. Lanes that judge a state read it (the model predicts each
    /// step from it); `i` past the last step is the last.
    pub fn at_step(&self, i: usize) -> Case {
        let mut files: Vec<ManifestFile> = self.manifests.clone();
        let mut groups = self.groups.clone();
        for s in self.steps.iter().take(i) {
            files.retain(|f| !s.delete.contains(&f.path));
            for m in &s.apply {
                match files.iter_mut().find(|f| f.path == m.path) {
                    Some(f) => *f = m.clone(),
                    None => files.push(m.clone()),
                }
            }
            groups = s.groups.clone();
        }
        Case { manifests: files, groups, steps: Vec::new(), ..self.clone() }
    }

    /// The expectations of every group whose range includes `v`. Groups may overlap; a later
    /// group adds to an earlier one.
    pub fn applied(&self, v: &CiliumVersion) -> Applied {
        let mut a = Applied::default();
        for g in self.groups.iter().filter(|g| g.range.matches(v)) {
            a.add(g);
        }
        a
    }

    /// The distinct probes the applied expectations need, in a stable order.
    pub fn probe_keys(applied: &Applied) -> Vec<ProbeKey> {
        let mut keys: Vec<ProbeKey> = applied.probes.iter().map(|p| p.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

impl Applied {
    /// The expectations of one group alone (what `--record` judges a group by).
    pub fn of_group(g: &ExpectGroup) -> Applied {
        let mut a = Applied::default();
        a.add(g);
        a
    }

    /// Adds every expectation of `g`, with its provenance.
    fn add(&mut self, g: &ExpectGroup) {
        let a = self;
        {
            a.ranges.push(g.range.to_string());
            a.gateway.extend(g.gateway.iter().map(|c| (c.clone(), g.provenance.clone())));
            for (gw, cs) in &g.gateways {
                a.gateways.extend(cs.iter().map(|c| (gw.clone(), c.clone(), g.provenance.clone())));
            }
            for (ls, (cs, listeners)) in &g.listener_sets {
                a.listener_sets.extend(cs.iter().map(|c| (ls.clone(), c.clone(), g.provenance.clone())));
                for (l, cs) in listeners {
                    a.listener_set_listeners.extend(cs.iter().map(|c| (ls.clone(), l.clone(), c.clone(), g.provenance.clone())));
                }
            }
            for (l, cs) in &g.listeners {
                a.listeners.extend(cs.iter().map(|c| (l.clone(), c.clone(), g.provenance.clone())));
            }
            for (r, parents) in &g.routes {
                for (p, cs) in parents {
                    a.routes.extend(cs.iter().map(|c| (r.clone(), p.clone(), c.clone(), g.provenance.clone())));
                }
            }
            a.probes.extend(g.probes.iter().cloned());
            a.envoy.extend(g.envoy.iter().map(|(k, v)| (k.clone(), v.clone())));
            a.clusters.extend(g.clusters.iter().map(|(k, v)| (k.clone(), v.clone())));
            a.refused.extend(g.refused.iter().map(|r| (r.clone(), g.provenance.clone())));
        }
    }
}
