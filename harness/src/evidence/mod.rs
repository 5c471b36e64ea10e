//! Evidence: what a run observed and decided, for machines (`evidence.json`), release notes
//! (`summary.md`) and CI (`junit.xml`).
//!
//! A run's three files are written into a hidden temporary folder next to the destination and
//! the folder is renamed into place, so a reader sees all of a run or none of it.

pub mod agent_xds;
pub mod consistency;
pub mod digest;
pub mod facts;
pub mod junit;
pub mod live;
mod markdown;
pub mod recording;
pub mod rejudge;
mod write;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::case::{Applied, ProbeKey};
use crate::judge::{ConditionObs, ListenerFact, Outcome, ProbeFact, Verdict};
use crate::render::certs::CertRecord;

pub use digest::{DigestCheck, check_digest, content_digest};
pub use junit::{junit_of, render_junit};
pub use markdown::render_summary;
pub use recording::Recording;
pub use write::{EvidenceError, write_run};

/// Bumped whenever a reader of an older file would misread a newer one. 2: `status`
/// (`not_run` with its reason), `digest`, the applied expectations and everything else a
/// reader needs to re-judge a case, unique run ids, kind-lane recordings.
pub const SCHEMA_VERSION: u32 = 2;

/// Where the observations came from. Every output names it, so a prediction is never read as a
/// gate result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Real Cilium on a kind cluster: the gate.
    Kind,
    /// Cilium's own operator built from the tag on a local API server; the agent step Cilium's
    /// own agent control plane (DryMode) where it is built, else emulated; upstream Envoy: the
    /// oracle the model is held to.
    Operator,
    /// layout-gate's model of Cilium, served by a real local Envoy: a prediction.
    Model,
    /// A hand-written, Cilium-shaped config on a real local Envoy: the harness checking itself.
    Fixture,
}

impl Lane {
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Kind => "kind",
            Lane::Operator => "operator",
            Lane::Model => "model",
            Lane::Fixture => "fixture",
        }
    }
    /// The sentence every human-readable output carries about this lane.
    pub fn banner(self) -> &'static str {
        match self {
            Lane::Kind => "lane: kind (real Cilium on a kind cluster; this is gate evidence)",
            Lane::Operator => {
                "lane: operator (Cilium's own operator built from the tag, on a local kube-apiserver: its statuses and CiliumEnvoyConfig are real; the agent step is Cilium's own agent control plane on a fake datapath, or emulated where the run's agent_step says so; upstream Envoy stands in for cilium-envoy; not gate evidence)"
            }
            Lane::Model => "lane: model (layout-gate's prediction of Cilium, served by a real local Envoy; not gate evidence)",
            Lane::Fixture => {
                "lane: fixture (hand-written Cilium-shaped config on a real local Envoy; harness self-check, not gate evidence)"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// `git rev-parse HEAD` of the harness, with `-dirty` when the tree had changes.
    pub git_commit: Option<String>,
}

impl ToolInfo {
    pub fn current() -> ToolInfo {
        ToolInfo { name: "layout-gate".into(), version: env!("CARGO_PKG_VERSION").into(), git_commit: git_commit() }
    }
}

fn git_commit() -> Option<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let head = duct::cmd!("git", "-C", root, "rev-parse", "HEAD").stdout_capture().stderr_null().unchecked().run().ok()?;
    if !head.status.success() {
        return None;
    }
    let mut commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let dirty = duct::cmd!("git", "-C", root, "status", "--porcelain", "--untracked-files=no")
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    if dirty {
        commit.push_str("-dirty");
    }
    Some(commit)
}

/// Which Cilium the run is about and where that version came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiliumInfo {
    pub version: String,
    /// e.g. `--cilium flag`, `kind-config/versions.yaml`, `LAYOUT_GATE_CILIUM`.
    pub source: String,
}

/// One timed phase (cluster creation, Envoy start, probes, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub started_at: String,
    pub duration_ms: u64,
}

/// Every observation of one (port, SNI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub key: ProbeKey,
    /// Where the probe really went (the local port or the Gateway address).
    pub address: String,
    /// Each observation as the probe recorded it (timestamps, leaf, outcome).
    pub observations: Vec<serde_json::Value>,
    /// The same observations reduced to what the judge reads.
    pub facts: Vec<ProbeFact>,
}

/// Everything observed for one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    pub gateway: Option<Vec<ConditionObs>>,
    /// Every Gateway's conditions by name, in a case with several.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gateways: BTreeMap<String, Vec<ConditionObs>>,
    /// ListenerSet name -> its conditions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub listener_sets: BTreeMap<String, Vec<ConditionObs>>,
    /// `<listenerset>/<listener>` -> the ListenerSet listener's conditions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub listener_set_listeners: BTreeMap<String, Vec<ConditionObs>>,
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    pub routes: BTreeMap<String, BTreeMap<String, Vec<ConditionObs>>>,
    pub probes: Vec<ProbeRecord>,
    /// The Envoy listeners as the judge read them.
    pub envoy_listeners: Option<Vec<ListenerFact>>,
    /// The full config-dump summary.
    pub envoy_summary: Option<serde_json::Value>,
    /// The Envoy clusters as the judge read them (`None`: the lane read none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envoy_clusters: Option<Vec<crate::observe::envoy_dump::ClusterFact>>,
    /// Objects the API server refused to create (HTTP 422 Invalid), with its message: they do
    /// not exist, so they have no conditions. Predicted from the CRD schema by the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<crate::judge::Refused>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEvidence {
    pub name: String,
    pub summary: String,
    pub refs: Vec<String>,
    /// SHA-256 over case.yaml and its manifests.
    pub hash: String,
    /// The version ranges whose expectations applied.
    pub ranges: Vec<String>,
    pub outcome: Outcome,
    /// Why the case could not be judged at all (Envoy refused to start, ...), if so.
    pub error: Option<String>,
    pub duration_ms: u64,
    pub verdicts: Vec<Verdict>,
    pub observed: Observed,
    /// Public records of the certificates this case's run made (when each case makes its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertRecord>,
    /// The Gateway the expectations speak of (subjects name it).
    pub gateway: String,
    /// The expectations that applied, as judged: with the observations, enough to re-judge.
    pub expectations: Applied,
    /// K: how many consecutive matching observations a probe expectation needs.
    pub consecutive: usize,
    /// SHA-256 of each case file judged (case.yaml and every manifest), by file name.
    pub case_files: BTreeMap<String, String>,
    /// How the lane named the serving backend: what an answer said (a pod name) -> the backend.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub served_by: BTreeMap<String, String>,
    /// The kind lane's raw recordings (watched objects, the CiliumEnvoyConfig, the exact
    /// `cilium-dbg` output), for `layout-gate replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<Recording>,
    /// A case with `steps:`: each later step as it was observed, in order. `expectations`,
    /// `observed` and `recording` above are the first step's; `verdicts` holds every step's,
    /// each later step's subjects named by [`crate::judge::in_step`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepEvidence>,
}

/// One later step of a case: what applied after it, what was seen, and the raw recordings,
/// enough to re-judge it on its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepEvidence {
    /// The step's name in case.yaml.
    pub name: String,
    /// The files the step applied and deleted, by name.
    pub applied_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted_files: Vec<String>,
    pub expectations: Applied,
    pub observed: Observed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<Recording>,
}

impl CaseEvidence {
    /// Every certificate name by leaf fingerprint, from the run's and the case's records.
    pub fn cert_names<'a>(&'a self, run: &'a [CertRecord]) -> impl Fn(&crate::types::Fingerprint) -> Option<crate::types::CertName> + 'a {
        move |fp| run.iter().chain(&self.certificates).find(|c| &c.leaf.sha256 == fp).map(|c| c.name.clone())
    }
}

impl Observed {
    /// The judge's view of these observations.
    pub fn view(&self) -> crate::judge::CaseView<'_> {
        crate::judge::CaseView {
            gateway: self.gateway.as_deref(),
            gateways: &self.gateways,
            listener_sets: &self.listener_sets,
            listener_set_listeners: &self.listener_set_listeners,
            listeners: &self.listeners,
            routes: &self.routes,
            probes: self.probes.iter().map(|r| (&r.key, r.facts.as_slice())).collect(),
            envoy: self.envoy_listeners.as_deref(),
            refused: &self.refused,
            clusters: self.envoy_clusters.as_deref(),
        }
    }
}

/// Whether the run reached its lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// At least one case was run (cases that were not are listed in `not_run`).
    Ran,
    /// Nothing was run: preflight, the cluster or the install failed first. Such evidence
    /// carries no case and no verdict.
    NotRun { reason: String },
}

/// A selected case the run never got to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRunCase {
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// Unique across concurrent runs, shards and versions (see [`run_id`]).
    pub run_id: String,
    pub lane: Lane,
    #[serde(flatten)]
    pub status: RunStatus,
    /// Every case the run selected at its version: each is in `cases` or in `not_run`, so a
    /// case deleted from the file is told (`None` only in files from before it existed, which
    /// `report` names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<Vec<String>>,
    /// Selected cases that were not run, with why (empty when every case ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRunCase>,
    /// The run was stopped by a signal; the cases it finished are here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub cilium: Option<CiliumInfo>,
    pub started_at: String,
    pub finished_at: String,
    pub phases: Vec<Phase>,
    /// Versions of what ran: Envoy, images with digests, kind node image, CRD bundle, ...
    pub environment: BTreeMap<String, String>,
    pub certificates: Vec<CertRecord>,
    pub cases: Vec<CaseEvidence>,
    /// `sha256:<hex>` of this document without this field (see [`digest`]); set by
    /// [`write_run`].
    #[serde(default)]
    pub digest: Option<String>,
}

impl Evidence {
    /// Pass only when every selected case ran and passed.
    pub fn outcome(&self) -> Outcome {
        let ran = matches!(self.status, RunStatus::Ran) && self.not_run.is_empty() && !self.cases.is_empty();
        if ran && self.cases.iter().all(|c| c.outcome == Outcome::Pass) { Outcome::Pass } else { Outcome::Fail }
    }
    /// Why nothing ran, when nothing did.
    pub fn not_run_reason(&self) -> Option<&str> {
        match &self.status {
            RunStatus::NotRun { reason } => Some(reason),
            RunStatus::Ran => None,
        }
    }
}

/// Now, as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    now.format(&fmt).unwrap_or_else(|_| now.unix_timestamp().to_string())
}

/// A run id that sorts by time, says what ran and cannot collide:
/// `20261130T120501.123Z-model-1.19.5-shard-2of3-9f3a1c04be72`. Milliseconds, the shard and
/// twelve random hex digits, so two runs (or shards, or versions) started in the same millisecond still get
/// folders of their own.
pub fn run_id(lane: Lane, cilium: Option<&str>, shard: Option<&str>) -> String {
    run_id_named(lane.as_str(), cilium, shard)
}

/// [`run_id`] for a lane named by its string: `live` ([`live::LANE`]), which is not a [`Lane`]
/// of run evidence.
pub fn run_id_named(lane: &str, cilium: Option<&str>, shard: Option<&str>) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second].[subsecond digits:3]Z");
    let stamp = now.format(&fmt).unwrap_or_else(|_| now.unix_timestamp().to_string());
    let mut id = format!("{stamp}-{lane}");
    if let Some(v) = cilium {
        id.push_str(&format!("-{v}"));
    }
    if let Some(s) = shard {
        // `2/3` cannot go into a folder name.
        id.push_str(&format!("-shard-{}", s.replace('/', "of")));
    }
    id.push_str(&format!("-{}", random_suffix()));
    id
}

/// Twelve hex digits from the system's random source (ring's, already in the tree for TLS).
/// Six were too few: 2,000 ids drawn at once collided about one time in eight (the birthday
/// bound over 2^24), which made the id test flaky; over 2^48 that is about one in 10^8.
fn random_suffix() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 6];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No random source: the pid and the nanoseconds still tell concurrent runs apart.
        let (p, n) = (std::process::id(), time::OffsetDateTime::now_utc().nanosecond());
        b = [(p >> 16) as u8, (p >> 8) as u8, p as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests;
