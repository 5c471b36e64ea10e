//! Judge: pure functions from expectations and recorded observations to verdicts.
//!
//! Nothing here does I/O or waits; every decision can be re-made from evidence alone. Inputs
//! are small projections of what the lanes observed ([`ConditionObs`], [`ProbeFact`],
//! [`ListenerFact`]), so the judge does not care which lane or tool produced them.

mod admission;
mod case;
mod clusters;
mod conditions;
mod envoy;
mod facts;
mod probes;

use serde::{Deserialize, Serialize};

use crate::case::Provenance;

pub use admission::{Refused, is_unexpected as is_unexpected_refusal, judge_refused, unexpected as unexpected_refusal};
pub use case::{CaseView, judge_case};
pub use clusters::judge_cluster;
pub use conditions::{ConditionObs, judge_condition};
pub use envoy::{CILIUM_GATEWAY_PREFIX, ListenerFact, cilium_gateway_resource, judge_envoy_listener};
pub use facts::{OutcomeClass, ProbeFact};
pub use probes::{DEFAULT_CONSECUTIVE, describe as describe_probe, judge_probe, matches as probe_matches};

/// What an expectation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    Gateway,
    Listener,
    Route,
    Probe,
    Envoy,
    /// Whether the API server admitted an object (a 422 refusal).
    Admission,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
}

/// One expectation judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub aspect: Aspect,
    /// What is judged, e.g. `443 api.example.test` or `listener https Conflicted`.
    pub subject: String,
    pub expected: String,
    pub observed: String,
    pub outcome: Outcome,
    pub provenance: Provenance,
    /// A sentence for a failure, e.g. `expected api-backend, got gateway-wildcard (sha256
    /// ab12…) in 3 of 3 observations`; for a pass, how it held.
    pub detail: String,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Pass
    }
    /// A failing expectation that was only inferred: a new fact about Cilium (or the model),
    /// not necessarily a regression.
    pub fn contradicts_inference(&self) -> bool {
        !self.passed() && self.provenance.kind == crate::case::ProvenanceKind::Inferred
    }
    /// The one line a person reads first.
    pub fn line(&self) -> String {
        let mark = if self.passed() { "ok  " } else { "FAIL" };
        // Subjects and details quote what was observed (SNIs, Envoy's error text): escaped for
        // the terminal, line breaks of a diff kept.
        crate::term::text(&format!("{mark} {}: {}", crate::term::line(&self.subject), self.detail)).into_owned()
    }
}

/// Overall result for a case from its verdicts. A case without any verdict did not check
/// anything, which is a failure, not a pass.
/// Names every verdict of a case's step `number` (counted from 1, the case's own manifests)
/// in its subject, `step 2 (a second route): 443 api.example.test`, so one list holds every
/// step's verdicts and reports, JUnit and merges tell them apart. The first step's verdicts
/// keep their subjects, so a case without steps reads as it always did.
pub fn in_step(verdicts: Vec<Verdict>, number: usize, name: &str) -> Vec<Verdict> {
    if number <= 1 {
        return verdicts;
    }
    verdicts.into_iter().map(|v| Verdict { subject: format!("step {number} ({name}): {}", v.subject), ..v }).collect()
}

pub fn overall(verdicts: &[Verdict]) -> Outcome {
    if !verdicts.is_empty() && verdicts.iter().all(Verdict::passed) { Outcome::Pass } else { Outcome::Fail }
}

/// A unified-style diff of two line lists: lines only expected are `-`, only observed `+`.
/// Used where a list is compared as a whole (server_names of chains), as chainsaw does.
pub fn diff_lines(expected: &[String], observed: &[String]) -> String {
    let mut out = String::new();
    let mut rest: Vec<&String> = observed.iter().collect();
    for e in expected {
        if let Some(i) = rest.iter().position(|o| *o == e) {
            rest.remove(i);
            out.push_str(&format!("  {e}\n"));
        } else {
            out.push_str(&format!("- {e}\n"));
        }
    }
    for o in rest {
        out.push_str(&format!("+ {o}\n"));
    }
    out
}
