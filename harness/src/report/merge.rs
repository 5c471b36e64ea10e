//! Merging runs into a matrix: cases × columns (lane, version). Shards of one version fill one
//! column; a case seen by several runs of a column is shown once when they agree and not at all
//! (a problem instead) when they do not. Pure: evidence in, matrix and problems out.

use std::collections::BTreeMap;

use serde::Serialize;

use super::column::Column;
use super::facts::{CaseFacts, FactKey};
use super::load::{LoadedRun, short};
use super::problem::Problem;
use crate::evidence::{CaseEvidence, Phase};
use crate::judge::{Outcome, Verdict};

/// What the report keeps of a run besides its cases: where it came from and what ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunInfo {
    pub column: Column,
    pub run_id: String,
    pub source: String,
    pub tool_version: String,
    pub harness_commit: Option<String>,
    pub cilium_source: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    pub outcome: Outcome,
    /// Why the run did not reach its lane, when it did not.
    pub not_run: Option<String>,
    pub cases: Vec<String>,
    pub phases: Vec<Phase>,
    pub environment: BTreeMap<String, String>,
}

/// One case in one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Seen by one run, or by several that agree.
    Observed { facts: CaseFacts, verdicts: Vec<Verdict>, runs: Vec<String> },
    /// Seen by runs that disagree: shown as such, never as one of them.
    Disagreeing { runs: Vec<String> },
    /// Selected, but no run of the column got to it: no result.
    NotRun { reason: String, runs: Vec<String> },
}

impl Cell {
    pub fn observed(&self) -> Option<(&CaseFacts, &[Verdict])> {
        match self {
            Cell::Observed { facts, verdicts, .. } => Some((facts, verdicts)),
            Cell::Disagreeing { .. } | Cell::NotRun { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseRow {
    pub name: String,
    pub summary: String,
    pub refs: Vec<String>,
    pub cells: BTreeMap<Column, Cell>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Matrix {
    /// Every column with its runs (shards), in column order; runs by run id.
    pub columns: BTreeMap<Column, Vec<RunInfo>>,
    /// Every case by name.
    pub cases: BTreeMap<String, CaseRow>,
    /// (case, column) where the case has no expectation at the column's version: left out
    /// (`—`), never counted as not run. Only where no run of the column has the case.
    pub left_out: std::collections::BTreeSet<(String, Column)>,
}

impl Matrix {
    /// Whether `case` is left out of `column` (no expectation at its version, no cell).
    pub fn is_left_out(&self, case: &str, column: &Column) -> bool {
        self.left_out.contains(&(case.to_string(), column.clone()))
            && self.cases.get(case).is_none_or(|row| !row.cells.contains_key(column))
    }
}

/// Builds the matrix; disagreements come back as problems.
pub fn merge(runs: &[LoadedRun]) -> (Matrix, Vec<Problem>) {
    let mut matrix = Matrix::default();
    // (case, column) -> every run's view of it.
    let mut seen: BTreeMap<(String, Column), Vec<(String, &CaseEvidence)>> = BTreeMap::new();
    let mut ordered: Vec<&LoadedRun> = runs.iter().collect();
    ordered.sort_by(|a, b| (&a.column, &a.evidence.run_id, &a.source).cmp(&(&b.column, &b.evidence.run_id, &b.source)));
    for run in ordered {
        let ev = &run.evidence;
        matrix.columns.entry(run.column.clone()).or_default().push(RunInfo {
            column: run.column.clone(),
            run_id: ev.run_id.clone(),
            source: run.source.clone(),
            tool_version: ev.tool.version.clone(),
            harness_commit: ev.tool.git_commit.clone(),
            cilium_source: ev.cilium.as_ref().map(|c| c.source.clone()),
            started_at: ev.started_at.clone(),
            finished_at: ev.finished_at.clone(),
            outcome: ev.outcome(),
            not_run: ev.not_run_reason().map(str::to_string),
            cases: ev.cases.iter().map(|c| c.name.clone()).collect(),
            phases: ev.phases.clone(),
            environment: ev.environment.clone(),
        });
        for case in &ev.cases {
            seen.entry((case.name.clone(), run.column.clone())).or_default().push((ev.run_id.clone(), case));
        }
    }
    // (case, column) -> why no run of the column ran it, and which runs said so.
    let mut unrun: BTreeMap<(String, Column), (Vec<String>, Vec<String>)> = BTreeMap::new();
    for run in runs {
        for c in &run.evidence.not_run {
            let e = unrun.entry((c.name.clone(), run.column.clone())).or_default();
            if !e.0.contains(&c.reason) {
                e.0.push(c.reason.clone());
            }
            e.1.push(run.evidence.run_id.clone());
        }
    }
    let mut problems = Vec::new();
    for ((name, column), (reasons, run_ids)) in unrun {
        // A case another run (shard, rerun) of the column did run has that run's result.
        if seen.contains_key(&(name.clone(), column.clone())) {
            continue;
        }
        let row = matrix.cases.entry(name.clone()).or_insert_with(|| CaseRow {
            name: name.clone(),
            summary: String::new(),
            refs: Vec::new(),
            cells: BTreeMap::new(),
        });
        row.cells.insert(column, Cell::NotRun { reason: reasons.join("; "), runs: run_ids });
    }
    for ((name, column), views) in seen {
        let row = matrix.cases.entry(name.clone()).or_insert_with(|| CaseRow {
            name: name.clone(),
            summary: String::new(),
            refs: Vec::new(),
            cells: BTreeMap::new(),
        });
        if row.summary.is_empty() {
            row.summary = views[0].1.summary.clone();
            row.refs = views[0].1.refs.clone();
        }
        let facts: Vec<(String, CaseFacts)> = views.iter().map(|(id, c)| (id.clone(), CaseFacts::of(c))).collect();
        let runs: Vec<String> = facts.iter().map(|(id, _)| id.clone()).collect();
        let (first_id, first) = &facts[0];
        let differences: Vec<String> = facts[1..].iter().flat_map(|(id, f)| differences(first_id, first, id, f)).collect();
        let cell = if differences.is_empty() {
            Cell::Observed { facts: first.clone(), verdicts: views[0].1.verdicts.clone(), runs }
        } else {
            problems.push(Problem::Disagreement { case: name.clone(), column: column.to_string(), runs: runs.clone(), differences });
            Cell::Disagreeing { runs }
        };
        row.cells.insert(column, cell);
    }
    (matrix, problems)
}

/// Every way two runs' views of one case differ, as sentences naming both runs.
pub fn differences(a_id: &str, a: &CaseFacts, b_id: &str, b: &CaseFacts) -> Vec<String> {
    let mut out = Vec::new();
    if a.hash != b.hash {
        out.push(format!("case definition: hash {} in {a_id}, {} in {b_id}", short(&a.hash), short(&b.hash)));
    }
    if a.outcome != b.outcome {
        out.push(format!("result: {} in {a_id}, {} in {b_id}", outcome_word(a.outcome), outcome_word(b.outcome)));
    }
    if a.error != b.error {
        let e = |x: &Option<String>| x.clone().unwrap_or_else(|| "judged".into());
        out.push(format!("could not be judged: {} in {a_id}, {} in {b_id}", e(&a.error), e(&b.error)));
    }
    let mut keys: Vec<&FactKey> = a.facts.keys().chain(b.facts.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (va, vb) = (a.value(k), b.value(k));
        if va != vb {
            let w = |v: Option<String>| v.unwrap_or_else(|| "not checked".into());
            out.push(format!("{}: {} in {a_id}, {} in {b_id}", k.subject, w(va), w(vb)));
        }
    }
    out
}

pub fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "FAIL",
    }
}
