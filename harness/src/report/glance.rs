//! The report at a glance: one short status per case and column, and whether a case's facts
//! changed since the lane's previous version. The one place that decides what a matrix cell
//! says, so report.md, report.html and report.svg never disagree. Pure, over the report.

use std::collections::BTreeSet;

use super::Report;
use super::column::Column;
use super::facts::{CaseFacts, FactKey, FactKind};
use super::merge::{CaseRow, Cell};
use crate::evidence::Lane;
use crate::judge::Outcome;

/// Lanes in the order every output shows them.
pub const LANES: [Lane; 4] = [Lane::Kind, Lane::Operator, Lane::Model, Lane::Fixture];

/// What one matrix cell says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass {
        checks: usize,
    },
    /// Passed, but every expectation is an inference the model itself wrote (`case new
    /// --from`), judged on the model lane: the model agrees with its own inference, which says
    /// nothing about Cilium until a cluster confirms it.
    OwnInference {
        checks: usize,
    },
    /// Judged and failed: `failures` of `checks` expectations did not hold.
    Fail {
        failures: usize,
        checks: usize,
    },
    /// The case ran but could not be judged (Envoy refused to start, ...).
    Error,
    /// Runs of this column disagree: shown as such, never as one of them.
    Disagree,
    /// No run of this column has the case.
    NotRun,
    /// The case has no expectation at this column's version (a fixture of another release
    /// line): left out, neither run nor missing.
    LeftOut,
}

impl Status {
    /// The status of `cell` in a column of `lane`.
    pub fn of(cell: Option<&Cell>, lane: Lane) -> Status {
        match cell {
            // Selected but never reached (the reason is under Problems), or not selected at all.
            None | Some(Cell::NotRun { .. }) => Status::NotRun,
            Some(Cell::Disagreeing { .. }) => Status::Disagree,
            Some(Cell::Observed { facts, .. }) => Status::of_facts(facts, lane),
        }
    }

    fn of_facts(f: &CaseFacts, lane: Lane) -> Status {
        match f.outcome {
            Outcome::Pass if f.own_inference && lane == Lane::Model => Status::OwnInference { checks: f.checks },
            Outcome::Pass => Status::Pass { checks: f.checks },
            Outcome::Fail if f.error.is_some() && f.failures == 0 => Status::Error,
            Outcome::Fail => Status::Fail { failures: f.failures, checks: f.checks },
        }
    }

    /// The cell's words: `pass`, `FAIL 2/19`, `error`, `disagree`, `not run`.
    pub fn words(self) -> String {
        match self {
            Status::Pass { .. } => "pass".into(),
            Status::OwnInference { .. } => "own inference".into(),
            Status::Fail { failures, checks } => format!("FAIL {failures}/{checks}"),
            Status::Error => "error".into(),
            Status::Disagree => "disagree".into(),
            Status::NotRun => "not run".into(),
            Status::LeftOut => "—".into(),
        }
    }

    /// A class name for HTML and SVG styling.
    pub fn class(self) -> &'static str {
        match self {
            Status::Pass { .. } => "pass",
            Status::OwnInference { .. } => "owninference",
            Status::Fail { .. } => "fail",
            Status::Error => "error",
            Status::Disagree => "disagree",
            Status::NotRun => "notrun",
            Status::LeftOut => "leftout",
        }
    }

    /// What the status means, for legends and tooltips.
    pub fn meaning(self) -> &'static str {
        match self {
            Status::Pass { .. } => "every expectation held",
            Status::OwnInference { .. } => {
                "agrees with its own inference: every expectation is the model's own prediction (case new --from), not yet seen on a cluster"
            }
            Status::Fail { .. } => "failed expectations of all checked",
            Status::Error => "ran but could not be judged",
            Status::Disagree => "runs of this column disagree (see Problems)",
            Status::NotRun => "no run of this column has the case",
            Status::LeftOut => "left out: the case has no expectation at this version",
        }
    }
}

/// One cell at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlanceCell {
    pub column: Column,
    pub status: Status,
    /// Some fact differs from the lane's previous version that has this case.
    pub changed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlanceRow {
    pub case: String,
    pub cells: Vec<GlanceCell>,
}

/// One lane's matrix at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneGlance {
    pub lane: Lane,
    pub columns: Vec<Column>,
    /// Cases with at least one run in this lane, by name.
    pub rows: Vec<GlanceRow>,
}

/// Every lane that has a column, in [`LANES`] order.
pub fn lanes(r: &Report) -> Vec<LaneGlance> {
    // (case, lane, version it changed *to*): a marker goes on the later column.
    let changed: BTreeSet<(&str, Lane, String)> = r.changes.iter().map(|c| (c.case.as_str(), c.lane, c.to_version.to_string())).collect();
    let mut out = Vec::new();
    for lane in LANES {
        let columns: Vec<Column> = r.matrix.columns.keys().filter(|c| c.lane == lane).cloned().collect();
        if columns.is_empty() {
            continue;
        }
        let rows = r
            .matrix
            .cases
            .values()
            .filter(|row| row.cells.keys().any(|c| c.lane == lane))
            .map(|row| GlanceRow {
                case: row.name.clone(),
                cells: columns
                    .iter()
                    .map(|c| GlanceCell {
                        column: c.clone(),
                        status: if r.matrix.is_left_out(&row.name, c) { Status::LeftOut } else { Status::of(row.cells.get(c), lane) },
                        changed: changed.contains(&(row.name.as_str(), lane, c.version_label())),
                    })
                    .collect(),
            })
            .collect();
        out.push(LaneGlance { lane, columns, rows });
    }
    out
}

/// Counts over every cell of every lane: (pass, fail or error, not run or disagreeing). A cell
/// left out (no expectation at that version), or agreeing only with its own inference, is in
/// none of them.
pub fn totals(lanes: &[LaneGlance]) -> (usize, usize, usize) {
    let mut t = (0, 0, 0);
    for cell in lanes.iter().flat_map(|l| &l.rows).flat_map(|r| &r.cells) {
        match cell.status {
            Status::Pass { .. } => t.0 += 1,
            // Neither a pass nor a failure: counted on its own ([`own_inference`]).
            Status::OwnInference { .. } => {}
            Status::Fail { .. } | Status::Error => t.1 += 1,
            Status::Disagree | Status::NotRun => t.2 += 1,
            Status::LeftOut => {}
        }
    }
    t
}

/// Cells where the model agrees only with its own inference, over every lane.
pub fn own_inference(lanes: &[LaneGlance]) -> usize {
    lanes.iter().flat_map(|l| &l.rows).flat_map(|r| &r.cells).filter(|c| matches!(c.status, Status::OwnInference { .. })).count()
}

/// Cells left out (no expectation at that version), over every lane.
pub fn left_out(lanes: &[LaneGlance]) -> usize {
    lanes.iter().flat_map(|l| &l.rows).flat_map(|r| &r.cells).filter(|c| c.status == Status::LeftOut).count()
}

/// What the totals sentence adds in its parenthesis, for Markdown and HTML alike: the cells left
/// out and the ones that agree only with their own inference, each when there are any.
pub fn totals_notes(lanes: &[LaneGlance]) -> String {
    let mut s = String::new();
    let left = left_out(lanes);
    if left > 0 {
        s.push_str(&format!("; {left} left out, where a case has no expectation at that version"));
    }
    let own = own_inference(lanes);
    if own > 0 {
        s.push_str(&format!("; {own} agree only with their own inference"));
    }
    s
}

/// The certificate a probe answer names, for colouring: `gateway-wildcard, served by web` ->
/// `gateway-wildcard`; `nothing (reset)` stays whole (it is its own colour).
pub fn certificate_of(answer: &str) -> &str {
    match answer.find(", ") {
        Some(i) if !answer.starts_with("nothing") && !answer.starts_with("an unknown") => &answer[..i],
        _ => answer,
    }
}

/// One row of a case's fact table: what (a subject, or a label), and its value per column
/// (None: not checked there, or the column has no agreed cell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactRow {
    pub name: String,
    /// Whether `name` is a subject from the evidence (shown as code) rather than a label.
    pub subject: bool,
    pub values: Vec<Option<String>>,
}

/// A case's facts over `columns`: every answer, the Conflicted listeners and every Envoy
/// listener any column has, in fact order. Conditions and server_names are in report.json and
/// the run's own evidence; these are what a release note quotes.
pub fn fact_rows(row: &CaseRow, columns: &[&Column]) -> Vec<FactRow> {
    let facts: Vec<Option<&CaseFacts>> = columns.iter().map(|c| row.cells.get(*c).and_then(Cell::observed).map(|(f, _)| f)).collect();
    let mut keys: BTreeSet<&FactKey> = BTreeSet::new();
    for f in facts.iter().flatten() {
        keys.extend(f.facts.keys().filter(|k| matches!(k.kind, FactKind::Answer | FactKind::EnvoyListener)));
    }
    let of = |key: &FactKey| facts.iter().map(|f| f.and_then(|f| f.value(key))).collect::<Vec<_>>();
    let mut rows: Vec<FactRow> = Vec::new();
    if facts.iter().flatten().any(|f| f.error.is_some()) {
        let values = facts.iter().map(|f| f.map(|f| f.error.clone().unwrap_or_else(|| "-".into()))).collect();
        rows.push(FactRow { name: "could not be judged".into(), subject: false, values });
    }
    for key in keys.iter().filter(|k| k.kind == FactKind::Answer) {
        rows.push(FactRow { name: key.subject.clone(), subject: true, values: of(key) });
    }
    if facts.iter().flatten().any(|f| !f.conflicted.is_empty()) {
        let values = facts
            .iter()
            .map(|f| {
                f.map(|f| {
                    if f.conflicted.is_empty() {
                        "none".to_string()
                    } else {
                        f.conflicted.iter().map(|(l, c)| format!("{l} ({})", c.trim_start_matches("True/"))).collect::<Vec<_>>().join(", ")
                    }
                })
            })
            .collect();
        rows.push(FactRow { name: "Conflicted listeners".into(), subject: false, values });
    }
    for key in keys.iter().filter(|k| k.kind == FactKind::EnvoyListener) {
        rows.push(FactRow { name: key.subject.clone(), subject: true, values: of(key) });
    }
    rows
}

/// For each value of a row, whether it differs from the previous column that has a value.
pub fn differs_from_previous(values: &[Option<String>]) -> Vec<bool> {
    let mut previous: Option<&String> = None;
    values
        .iter()
        .map(|v| {
            let d = matches!((previous, v), (Some(p), Some(v)) if p != v);
            if v.is_some() {
                previous = v.as_ref();
            }
            d
        })
        .collect()
}

/// The failed expectations of a case over `columns`: (column, subject, detail).
pub fn failures<'a>(row: &'a CaseRow, columns: &[&'a Column]) -> Vec<(&'a Column, &'a str, &'a str)> {
    columns
        .iter()
        .filter_map(|c| Some((*c, row.cells.get(*c)?.observed()?.1)))
        .flat_map(|(c, verdicts)| verdicts.iter().filter(|v| !v.passed()).map(move |v| (c, v.subject.as_str(), v.detail.as_str())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_short() {
        assert_eq!(Status::Fail { failures: 2, checks: 19 }.words(), "FAIL 2/19");
        assert_eq!(Status::NotRun.words(), "not run");
        assert_eq!(certificate_of("gateway-wildcard, served by web"), "gateway-wildcard");
        assert_eq!(certificate_of("nothing (reset)"), "nothing (reset)");
    }
}
