//! Evidence: what a run observed and decided, for machines (`evidence.json`), release notes
//! (`summary.md`) and CI (`junit.xml`).
//!
//! A run's three files are written into a hidden temporary folder next to the destination and
//! the folder is renamed into place, so a reader sees all of a run or none of it.

mod junit;
mod markdown;
mod write;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::case::ProbeKey;
use crate::judge::{ConditionObs, ListenerFact, Outcome, ProbeFact, Verdict};
use crate::render::certs::CertRecord;

pub use junit::render_junit;
pub use markdown::render_summary;
pub use write::{EvidenceError, write_run};

/// Bumped whenever a reader of an older file would misread a newer one.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the observations came from. Every output names it, so a prediction is never read as a
/// gate result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Real Cilium on a kind cluster: the gate.
    Kind,
    /// layout-gate's model of Cilium, served by a real local Envoy: a prediction.
    Model,
    /// A hand-written, Cilium-shaped config on a real local Envoy: the harness checking itself.
    Fixture,
}

impl Lane {
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Kind => "kind",
            Lane::Model => "model",
            Lane::Fixture => "fixture",
        }
    }
    /// The sentence every human-readable output carries about this lane.
    pub fn banner(self) -> &'static str {
        match self {
            Lane::Kind => "lane: kind (real Cilium on a kind cluster; this is gate evidence)",
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub run_id: String,
    pub lane: Lane,
    pub cilium: Option<CiliumInfo>,
    pub started_at: String,
    pub finished_at: String,
    pub phases: Vec<Phase>,
    /// Versions of what ran: Envoy, images with digests, kind node image, CRD bundle, ...
    pub environment: BTreeMap<String, String>,
    pub certificates: Vec<CertRecord>,
    pub cases: Vec<CaseEvidence>,
}

impl Evidence {
    pub fn outcome(&self) -> Outcome {
        if !self.cases.is_empty() && self.cases.iter().all(|c| c.outcome == Outcome::Pass) { Outcome::Pass } else { Outcome::Fail }
    }
}

/// Now, as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    now.format(&fmt).unwrap_or_else(|_| now.unix_timestamp().to_string())
}

/// A run id that sorts by time and says what ran: `20261130T120501Z-model-1.19.5`.
pub fn run_id(lane: Lane, cilium: Option<&str>) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let stamp = now.format(&fmt).unwrap_or_else(|_| now.unix_timestamp().to_string());
    match cilium {
        Some(v) => format!("{stamp}-{}-{v}", lane.as_str()),
        None => format!("{stamp}-{}", lane.as_str()),
    }
}
