//! Inferred expectations and clusters: which were checked only outside a cluster ("to confirm
//! on a cluster"), and which a cluster contradicted ("new facts"). Pure, over the matrix.

use std::collections::BTreeMap;

use serde::Serialize;

use super::column::Column;
use super::merge::{Matrix, outcome_word};
use crate::case::ProvenanceKind;
use crate::evidence::Lane;
use crate::judge::Verdict;

/// An inferred expectation no kind-lane run has observed yet, with where it was checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToConfirm {
    pub case: String,
    pub subject: String,
    pub expected: String,
    /// The inference's reference (`cilium#47306`), if it has one.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub note: Option<String>,
    /// Where it was checked instead: `model 1.20.1: pass`.
    pub checked: Vec<String>,
}

impl ToConfirm {
    /// Where the inference came from, as both report renderers show it: `ref: note`, either
    /// alone, or `-`.
    pub fn inferred_from(&self) -> String {
        match (&self.reference, &self.note) {
            (Some(r), Some(n)) => format!("{r}: {n}"),
            (Some(r), None) => r.clone(),
            (None, Some(n)) => n.clone(),
            (None, None) => "-".into(),
        }
    }
}

/// An inferred expectation a kind cluster contradicted: a new fact about Cilium.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewFact {
    pub case: String,
    pub cilium: String,
    pub subject: String,
    pub expected: String,
    pub observed: String,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
}

/// Inferred expectations checked in a non-kind column whose case+version (any version, for the
/// fixture lane's version-less column) has no kind-lane verdict on the same subject.
pub fn to_confirm(m: &Matrix) -> Vec<ToConfirm> {
    // (case, subject, expected, ref) -> entry, so one inference checked on several versions is
    // one line listing them.
    let mut found: BTreeMap<(String, String, String, Option<String>), ToConfirm> = BTreeMap::new();
    for row in m.cases.values() {
        let on_cluster = |col: &Column, subject: &str| {
            row.cells.iter().any(|(c, cell)| {
                c.lane == Lane::Kind
                    && (col.cilium.is_none() || c.cilium == col.cilium)
                    && cell.observed().is_some_and(|(_, vs)| vs.iter().any(|v| v.subject == subject))
            })
        };
        for (col, cell) in &row.cells {
            if col.lane == Lane::Kind {
                continue;
            }
            let Some((_, verdicts)) = cell.observed() else { continue };
            for v in verdicts.iter().filter(|v| inferred(v) && !on_cluster(col, &v.subject)) {
                let key = (row.name.clone(), v.subject.clone(), v.expected.clone(), v.provenance.reference.clone());
                let entry = found.entry(key).or_insert_with(|| ToConfirm {
                    case: row.name.clone(),
                    subject: v.subject.clone(),
                    expected: v.expected.clone(),
                    reference: v.provenance.reference.clone(),
                    note: v.provenance.note.clone(),
                    checked: Vec::new(),
                });
                entry.checked.push(format!("{col}: {}", outcome_word(v.outcome)));
            }
        }
    }
    found.into_values().collect()
}

/// Inferred expectations that failed on a kind cluster.
pub fn new_facts(m: &Matrix) -> Vec<NewFact> {
    let mut out = Vec::new();
    for row in m.cases.values() {
        for (col, cell) in row.cells.iter().filter(|(c, _)| c.lane == Lane::Kind) {
            let Some((_, verdicts)) = cell.observed() else { continue };
            for v in verdicts.iter().filter(|v| v.contradicts_inference()) {
                out.push(NewFact {
                    case: row.name.clone(),
                    cilium: col.version_label(),
                    subject: v.subject.clone(),
                    expected: v.expected.clone(),
                    observed: super::facts::answer_words(&v.observed),
                    reference: v.provenance.reference.clone(),
                });
            }
        }
    }
    out
}

fn inferred(v: &Verdict) -> bool {
    v.provenance.kind == ProvenanceKind::Inferred
}

/// Inferred expectations a kind run really observed (passed or not): the ground of "observed
/// on a kind cluster too".
pub fn confirmed(m: &Matrix) -> usize {
    m.cases
        .values()
        .flat_map(|row| row.cells.iter().filter(|(c, _)| c.lane == Lane::Kind))
        .filter_map(|(_, cell)| cell.observed())
        .flat_map(|(_, vs)| vs.iter())
        .filter(|v| inferred(v) && super::diff::is_observation(&v.observed))
        .count()
}
