//! `report.json`: the report for machines. Maps keyed by column become lists (JSON keys are
//! strings), and every list keeps the order the Markdown shows.

use serde::Serialize;

use super::column::Column;
use super::confirm::{NewFact, ToConfirm};
use super::diff::{Change, Divergence, Step};
use super::facts::FactKind;
use super::merge::{Cell, RunInfo};
use super::problem::Problem;
use super::{REPORT_SCHEMA_VERSION, Report};
use crate::judge::Outcome;

#[derive(Serialize)]
struct Doc<'a> {
    report_schema_version: u32,
    columns: Vec<ColumnDoc<'a>>,
    cases: Vec<CaseDoc<'a>>,
    changes: &'a [Change],
    /// Each step of a case in a lane, in `check`'s verdict words, with its Conflicted listeners.
    steps: Vec<Step>,
    model_against_observation: &'a [Divergence],
    /// Where the model and Cilium's own operator differ (present once an operator run is loaded).
    #[serde(skip_serializing_if = "<[Divergence]>::is_empty")]
    model_against_operator: &'a [Divergence],
    to_confirm: &'a [ToConfirm],
    new_facts: &'a [NewFact],
    runs: Vec<&'a RunInfo>,
    problems: Vec<ProblemDoc<'a>>,
}

#[derive(Serialize)]
struct ColumnDoc<'a> {
    #[serde(flatten)]
    column: &'a Column,
    /// Only kind columns are gate evidence.
    gate: bool,
    runs: Vec<&'a str>,
}

#[derive(Serialize)]
struct CaseDoc<'a> {
    name: &'a str,
    summary: &'a str,
    refs: &'a [String],
    cells: Vec<CellDoc<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum CellState<'a> {
    Observed {
        outcome: Outcome,
        error: Option<&'a str>,
        checks: usize,
        failures: usize,
        answers: Vec<Fact<'a>>,
        conflicted: Vec<Conflicted<'a>>,
        envoy_listeners: Vec<Fact<'a>>,
        facts: Vec<KindFact<'a>>,
        /// A model-lane pass of expectations the model itself inferred (`case new --from`):
        /// it agrees with its own inference.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        own_inference: bool,
    },
    Disagreeing {},
    NotRun {
        reason: &'a str,
    },
}

#[derive(Serialize)]
struct CellDoc<'a> {
    #[serde(flatten)]
    column: &'a Column,
    runs: &'a [String],
    #[serde(flatten)]
    state: CellState<'a>,
}

#[derive(Serialize)]
struct Fact<'a> {
    subject: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct KindFact<'a> {
    kind: FactKind,
    subject: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct Conflicted<'a> {
    listener: &'a str,
    condition: &'a str,
}

#[derive(Serialize)]
struct ProblemDoc<'a> {
    #[serde(flatten)]
    problem: &'a Problem,
    place: String,
    message: String,
}

pub fn render(r: &Report) -> String {
    let doc = Doc {
        report_schema_version: REPORT_SCHEMA_VERSION,
        columns: r
            .matrix
            .columns
            .iter()
            .map(|(c, runs)| ColumnDoc { column: c, gate: c.is_gate(), runs: runs.iter().map(|r| r.run_id.as_str()).collect() })
            .collect(),
        cases: r
            .matrix
            .cases
            .values()
            .map(|row| CaseDoc {
                name: &row.name,
                summary: &row.summary,
                refs: &row.refs,
                cells: row.cells.iter().map(|(c, cell)| cell_doc(c, cell)).collect(),
            })
            .collect(),
        changes: &r.changes,
        steps: super::diff::steps(&r.changes),
        model_against_observation: &r.divergences,
        model_against_operator: &r.operator_divergences,
        to_confirm: &r.to_confirm,
        new_facts: &r.new_facts,
        runs: r.matrix.columns.values().flatten().collect(),
        problems: r.problems.iter().map(|p| ProblemDoc { problem: p, place: p.place(), message: p.message() }).collect(),
    };
    // Serializing plain structs of strings and numbers cannot fail; if it ever did, the JSON
    // still says so rather than the command panicking.
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
    s.push('\n');
    s
}

fn cell_doc<'a>(column: &'a Column, cell: &'a Cell) -> CellDoc<'a> {
    match cell {
        Cell::Observed { facts, runs, .. } => CellDoc {
            column,
            runs,
            state: CellState::Observed {
                outcome: facts.outcome,
                error: facts.error.as_deref(),
                checks: facts.checks,
                failures: facts.failures,
                answers: facts.answers().map(|(subject, value)| Fact { subject, value }).collect(),
                conflicted: facts.conflicted.iter().map(|(l, c)| Conflicted { listener: l, condition: c }).collect(),
                envoy_listeners: facts.envoy_listeners().map(|(subject, value)| Fact { subject, value }).collect(),
                facts: facts.facts.iter().map(|(k, v)| KindFact { kind: k.kind, subject: &k.subject, value: v }).collect(),
                own_inference: matches!(super::glance::Status::of(Some(cell), column.lane), super::glance::Status::OwnInference { .. }),
            },
        },
        Cell::Disagreeing { runs } => CellDoc { column, runs, state: CellState::Disagreeing {} },
        Cell::NotRun { reason, runs } => CellDoc { column, runs, state: CellState::NotRun { reason } },
    }
}
