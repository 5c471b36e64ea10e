//! What differs: between consecutive versions of one lane ("changed between versions"), and
//! between the model and a kind cluster on the same version ("model against observation").
//! Pure functions over the matrix; every result carries a sentence a release note can quote.

use serde::Serialize;

use super::column::Column;
use super::facts::{CaseFacts, FactKey, FactKind};
use super::load::short;
use super::merge::{Cell, Matrix};
use crate::case::CiliumVersion;
use crate::evidence::Lane;

/// A fact that differs between two consecutive versions of one lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub case: String,
    pub lane: Lane,
    pub kind: FactKind,
    pub subject: String,
    pub from_version: CiliumVersion,
    pub from: String,
    pub to_version: CiliumVersion,
    pub to: String,
    /// e.g. `443 api.example.test: api-backend on 1.19.7, nothing (reset) on 1.20.1`.
    pub sentence: String,
}

/// One step of one case in one lane (a version to the next that differs), in `check`'s words:
/// the verdict (`status-only regression`, ...) and the listeners that became, or stopped
/// being, Conflicted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub case: String,
    pub lane: Lane,
    pub from_version: CiliumVersion,
    pub to_version: CiliumVersion,
    /// [`crate::words::verdict`] of the step: answers changed, else conditions, else neither.
    pub verdict: &'static str,
    /// `https and tls-api Conflicted (ProtocolConflict)`, `tls-api no longer Conflicted`.
    pub conflicts: Vec<String>,
}

impl Step {
    /// `1.19.5 → 1.19.6: status-only regression; https and tls-api Conflicted (ProtocolConflict)`.
    pub fn line(&self) -> String {
        let mut s = format!("{} → {}: {}", self.from_version, self.to_version, self.verdict);
        if self.verdict == crate::words::STATUS_ONLY_REGRESSION {
            s.push_str(&format!(" ({})", crate::words::TRAFFIC_UNCHANGED));
        }
        for c in &self.conflicts {
            s.push_str(&format!("; {c}"));
        }
        s
    }
}

/// The steps of `changes` (as [`changes`] lists them: by case, lane, then version pair), each
/// once, in order.
pub fn steps(changes: &[Change]) -> Vec<Step> {
    let mut out: Vec<(Step, Vec<&Change>)> = Vec::new();
    for c in changes {
        let same = |s: &Step| s.case == c.case && s.lane == c.lane && s.from_version == c.from_version && s.to_version == c.to_version;
        match out.iter_mut().find(|(s, _)| same(s)) {
            Some((_, cs)) => cs.push(c),
            None => out.push((
                Step {
                    case: c.case.clone(),
                    lane: c.lane,
                    from_version: c.from_version.clone(),
                    to_version: c.to_version.clone(),
                    verdict: crate::words::NO_CHANGE,
                    conflicts: Vec::new(),
                },
                vec![c],
            )),
        }
    }
    out.into_iter()
        .map(|(mut step, cs)| {
            let traffic = cs.iter().any(|c| c.kind == FactKind::Answer);
            let status = cs.iter().any(|c| c.kind == FactKind::Condition);
            step.verdict = crate::words::verdict(traffic, status);
            // Listeners that became Conflicted, grouped by reason; those that stopped being.
            let mut new: std::collections::BTreeMap<&str, Vec<String>> = std::collections::BTreeMap::new();
            let mut gone = Vec::new();
            for c in cs.iter().filter(|c| c.kind == FactKind::Condition) {
                let Some(listener) = c.subject.strip_prefix("listener ").and_then(|s| s.strip_suffix(" Conflicted")) else { continue };
                match (crate::words::conflicted_reason(&c.from), crate::words::conflicted_reason(&c.to)) {
                    (_, Some(reason)) => new.entry(reason).or_default().push(listener.to_string()),
                    (Some(_), None) => gone.push(listener.to_string()),
                    (None, None) => {}
                }
            }
            step.conflicts = new.into_iter().map(|(reason, ls)| crate::words::conflicted(&ls, reason)).collect();
            if !gone.is_empty() {
                step.conflicts.push(crate::words::no_longer_conflicted(&gone));
            }
            step
        })
        .collect()
}

/// A fact where the model's prediction and a kind cluster's observation differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    pub case: String,
    pub cilium: CiliumVersion,
    pub kind: FactKind,
    pub subject: String,
    pub model: String,
    pub observed: String,
    pub sentence: String,
}

/// Every fact that differs between consecutive versions (those where the case has an agreed
/// cell) of each lane. A fact checked on only one side is not a change: it was not compared.
pub fn changes(m: &Matrix) -> Vec<Change> {
    let mut out = Vec::new();
    for row in m.cases.values() {
        for lane in [Lane::Kind, Lane::Operator, Lane::Model, Lane::Fixture] {
            let cells: Vec<(&CiliumVersion, &CaseFacts)> = row
                .cells
                .iter()
                .filter(|(c, _)| c.lane == lane)
                .filter_map(|(c, cell)| Some((c.cilium.as_ref()?, cell.observed()?.0)))
                .collect();
            for pair in cells.windows(2) {
                let [(v1, a), (v2, b)] = pair else { continue };
                let notes = definition_note(a, b, v1, v2);
                for (key, from, to) in differing(a, b) {
                    let sentence = format!("{}: {from} on {v1}, {to} on {v2}{notes}", key.subject);
                    out.push(Change {
                        case: row.name.clone(),
                        lane,
                        kind: key.kind,
                        subject: key.subject.clone(),
                        from_version: (*v1).clone(),
                        from,
                        to_version: (*v2).clone(),
                        to,
                        sentence,
                    });
                }
            }
        }
    }
    out
}

/// Where both the model and kind lanes ran a case on one version, each fact they see
/// differently.
pub fn model_against_observation(m: &Matrix) -> Vec<Divergence> {
    model_against(m, Lane::Kind)
}

/// Where both the model and `lane` (kind, or Cilium's operator) ran a case on one version, each
/// fact they see differently.
pub fn model_against(m: &Matrix, lane: Lane) -> Vec<Divergence> {
    let seen_as = match lane {
        Lane::Operator => "Cilium's operator computed",
        _ => "kind observed",
    };
    let mut out = Vec::new();
    for row in m.cases.values() {
        for (col, cell) in &row.cells {
            let Some(v) = col.cilium.as_ref().filter(|_| col.lane == lane) else { continue };
            let Some((observed, _)) = cell.observed() else { continue };
            let model_col = Column { lane: Lane::Model, cilium: Some(v.clone()) };
            let Some((model, _)) = row.cells.get(&model_col).and_then(Cell::observed) else { continue };
            for (key, predicted, seen) in differing(model, observed) {
                let sentence = format!("{}: model predicted {predicted}, {seen_as} {seen} on {v}", key.subject);
                out.push(Divergence {
                    case: row.name.clone(),
                    cilium: v.clone(),
                    kind: key.kind,
                    subject: key.subject.clone(),
                    model: predicted,
                    observed: seen,
                    sentence,
                });
            }
        }
    }
    out
}

/// How many facts the model and a kind run both have, where the kind run really observed
/// something: the ground any sentence of agreement stands on.
pub fn compared_facts(m: &Matrix) -> usize {
    compared_facts_with(m, Lane::Kind)
}

/// [`compared_facts`] between the model and `lane`.
pub fn compared_facts_with(m: &Matrix, lane: Lane) -> usize {
    let mut n = 0;
    for row in m.cases.values() {
        for (col, cell) in &row.cells {
            let Some(v) = col.cilium.as_ref().filter(|_| col.lane == lane) else { continue };
            let Some((observed, _)) = cell.observed() else { continue };
            let model_col = Column { lane: Lane::Model, cilium: Some(v.clone()) };
            let Some((model, _)) = row.cells.get(&model_col).and_then(Cell::observed) else { continue };
            n +=
                observed.facts.keys().filter(|k| model.value(k).is_some() && observed.value(k).is_some_and(|v| is_observation(&v))).count();
        }
    }
    n
}

/// Whether a fact's value records something seen (not the judge's words for nothing seen).
pub fn is_observation(value: &str) -> bool {
    !matches!(value, "not observed" | "no observation")
}

/// Facts known on both sides with different values, in fact order.
fn differing<'a>(a: &'a CaseFacts, b: &'a CaseFacts) -> Vec<(&'a FactKey, String, String)> {
    let mut keys: Vec<&FactKey> = a.facts.keys().chain(b.facts.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| match (a.value(k), b.value(k)) {
            (Some(x), Some(y)) if x != y => Some((k, x, y)),
            _ => None,
        })
        .collect()
}

/// When the case itself changed between the two runs, a difference may be the case's doing,
/// not Cilium's; the sentence says so.
fn definition_note(a: &CaseFacts, b: &CaseFacts, v1: &CiliumVersion, v2: &CiliumVersion) -> String {
    if a.hash == b.hash {
        String::new()
    } else {
        format!(" (the case definition differs between the runs: {} on {v1}, {} on {v2})", short(&a.hash), short(&b.hash))
    }
}
