//! A column of the matrix: one lane on one Cilium version. Shards of a version are several runs
//! in one column.

use std::fmt;

use serde::Serialize;

use crate::case::CiliumVersion;
use crate::evidence::Lane;

/// Lane first (kind, then operator, then model, then fixture), then version ascending: the order columns,
/// changes and provenance rows are shown in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Column {
    pub lane: Lane,
    /// None only for the fixture lane, which pins no Cilium.
    pub cilium: Option<CiliumVersion>,
}

impl Column {
    /// The version as a column header: `1.19.6`, or `no Cilium` for the fixture lane.
    pub fn version_label(&self) -> String {
        match &self.cilium {
            Some(v) => v.to_string(),
            None => "no Cilium".into(),
        }
    }

    /// Whether this column is gate evidence (real Cilium) rather than a prediction or self-check.
    pub fn is_gate(&self) -> bool {
        self.lane == Lane::Kind
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cilium {
            Some(v) => write!(f, "{} {v}", self.lane.as_str()),
            None => write!(f, "{} (no Cilium)", self.lane.as_str()),
        }
    }
}

/// What each lane's columns are, in the words every output uses.
pub fn lane_title(lane: Lane) -> &'static str {
    match lane {
        Lane::Kind => "kind lane: gate evidence (real Cilium on a kind cluster)",
        Lane::Operator => {
            "operator lane: Cilium's own operator from the tag on a local API server (statuses and CiliumEnvoyConfig real; agent step and Envoy emulated), not gate evidence"
        }
        Lane::Model => "model lane: prediction (layout-gate's model of Cilium on a real local Envoy), not gate evidence",
        Lane::Fixture => "fixture lane: harness self-check (hand-written Cilium-shaped config), not gate evidence",
    }
}
