//! `report.html`: the report as one self-contained page (inline style and pictures; no script,
//! font, image or style from anywhere else), for a CI artifact or a browser. The matrix cells
//! carry `data-case` and `data-column`, so a test reading the page a browser rendered can find
//! each cell and compare it with the report.

use std::fmt::Write;

use super::Report;
use super::column::{Column, lane_title};
use super::glance::{self, GlanceCell, LANES, Status};
use super::load::short;
use super::merge::{Cell, RunInfo, outcome_word};
use super::problem::Problem;
use super::svg;
use crate::evidence::Lane;
use crate::judge::Outcome;

pub use super::svg::esc;

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f2328; margin: 0 auto; padding: 16px 24px 48px; max-width: 1400px; }
h1 { font-size: 22px; margin: 4px 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 18px 0 6px; }
code { font: 12.5px "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.banner { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; }
.problems { background: #ffebe9; border: 1px solid #cf222e; border-radius: 6px; padding: 8px 12px; margin-top: 16px; }
.problems h2 { margin-top: 4px; border-bottom-color: #ff818266; }
table.changes td:first-child, table.changes td:nth-child(2) { white-space: nowrap; }
table { border-collapse: collapse; margin: 6px 0 10px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
table.matrix td { text-align: center; white-space: nowrap; min-width: 84px; font-weight: 600; }
table.matrix th[scope=row] { font-weight: normal; }
th[scope=row] { white-space: nowrap; }
td.pass { background: #dafbe1; color: #116329; }
td.owninference { background: #f0fff4; color: #116329; font-style: italic; }
td.fail { background: #ffebe9; color: #a40e26; }
td.error { background: #fff1e5; color: #953800; }
td.disagree { background: #fff8c5; color: #7d4e00; }
td.notrun { background: #f6f8fa; color: #57606a; font-weight: normal; }
td.leftout { background: #ffffff; color: #8c959f; font-weight: normal; }
.delta { margin-left: 6px; padding: 0 4px; border-radius: 3px; background: #1f2328; color: #fff; font-size: 11px; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -1px; margin-right: 4px; }
td.changed { font-weight: 700; background: #ddf4ff; }
details { margin: 6px 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 4px 10px; }
details[open] { padding-bottom: 10px; }
summary { cursor: pointer; }
figure { margin: 8px 0 18px; overflow-x: auto; }
figcaption { font-weight: 600; margin-bottom: 4px; }
.muted { color: #57606a; }
"#;

pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>layout-gate report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    header(&mut s, r);
    problems(&mut s, &r.problems);
    matrix(&mut s, r);
    pictures(&mut s, r);
    changes(&mut s, r);
    model_against_observation(&mut s, r);
    model_against_operator(&mut s, r);
    to_confirm(&mut s, r);
    cases(&mut s, r);
    provenance(&mut s, r);
    s.push_str("</body>\n</html>\n");
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn code(t: &str) -> String {
    format!("<code>{}</code>", esc(t))
}

fn header(s: &mut String, r: &Report) {
    let runs: usize = r.matrix.columns.values().map(Vec::len).sum();
    let mut lanes = Vec::new();
    for lane in LANES {
        let versions: Vec<String> = r.matrix.columns.keys().filter(|c| c.lane == lane).map(Column::version_label).collect();
        if !versions.is_empty() {
            lanes.push(format!("<b>{}</b> on {}", lane.as_str(), esc(&versions.join(", "))));
        }
    }
    let _ = writeln!(s, "<h1>layout-gate report</h1>");
    let _ = writeln!(
        s,
        "<p>{runs} run{} of {} case{}: {}.</p>",
        plural(runs),
        r.matrix.cases.len(),
        plural(r.matrix.cases.len()),
        if lanes.is_empty() { "no lane".into() } else { lanes.join("; ") }
    );
    let _ = writeln!(
        s,
        "<p class=\"banner\">Only <b>kind</b> columns are gate evidence: real Cilium on a kind cluster. <b>model</b> columns are \
         layout-gate's prediction of Cilium on a real local Envoy; <b>fixture</b> columns check the harness itself.</p>"
    );
}

fn problems(s: &mut String, problems: &[Problem]) {
    if problems.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "<section id=\"problems\" class=\"problems\"><h2>Problems</h2>\n<p>{} problem{} with the input. Nothing below merges them away.</p>\n<ul>",
        problems.len(),
        plural(problems.len())
    );
    for p in problems {
        match p {
            Problem::Disagreement { case, column, runs, differences } => {
                let _ = writeln!(
                    s,
                    "<li><b>{}</b> on {}: {} runs disagree, so the matrix shows neither ({}):<ul>{}</ul></li>",
                    code(case),
                    esc(column),
                    runs.len(),
                    runs.iter().map(|r| code(r)).collect::<Vec<_>>().join(", "),
                    differences.iter().map(|d| format!("<li>{}</li>", code(d))).collect::<String>()
                );
            }
            other => {
                let _ = writeln!(s, "<li>{}: {}</li>", code(&other.place()), esc(&other.message()));
            }
        }
    }
    let _ = writeln!(s, "</ul></section>");
}

fn matrix(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<section id=\"matrix\"><h2>Matrix</h2>");
    let lanes = glance::lanes(r);
    if lanes.is_empty() {
        let _ = writeln!(s, "<p>No case was read.</p></section>");
        return;
    }
    let (pass, fail, not_run) = glance::totals(&lanes);
    let notes = glance::totals_notes(&lanes);
    let _ =
        writeln!(s, "<p>{pass} passed, {fail} failed, {not_run} not run or disagreeing (cells over every lane and version{notes}).</p>");
    for lane in &lanes {
        let _ = writeln!(s, "<h3>{}</h3>", esc(lane_title(lane.lane)));
        let _ = writeln!(s, "<table class=\"matrix\" data-lane=\"{}\">\n<thead><tr><th>Case</th>", lane.lane.as_str());
        for c in &lane.columns {
            let _ = write!(s, "<th>{}</th>", esc(&c.version_label()));
        }
        let _ = writeln!(s, "</tr></thead>\n<tbody>");
        for row in &lane.rows {
            let _ = write!(s, "<tr><th scope=\"row\"><a href=\"#{}\">{}</a></th>", esc(&case_id(&row.case)), code(&row.case));
            for c in &row.cells {
                matrix_cell(s, &row.case, c);
            }
            let _ = writeln!(s, "</tr>");
        }
        let _ = writeln!(s, "</tbody></table>");
    }
    let _ = write!(s, "<p class=\"legend\">");
    for st in svg::legend(&lanes) {
        let (fill, _) = svg::status_colours(st);
        let word = if let Status::Fail { .. } = st { "FAIL n/m".to_string() } else { st.words() };
        let _ = write!(s, "<span><i style=\"background:{fill}\"></i>{}: {}</span>", esc(&word), esc(st.meaning()));
    }
    let _ = writeln!(s, "<span><span class=\"delta\">Δ</span> some fact differs from the lane's previous version</span></p>\n</section>");
}

fn matrix_cell(s: &mut String, case: &str, c: &GlanceCell) {
    let tip = format!(
        "{case} on {}: {}{}",
        c.column,
        c.status.meaning(),
        if c.changed { "; some fact differs from the previous version" } else { "" }
    );
    let _ = write!(
        s,
        "<td class=\"{}\" data-case=\"{}\" data-column=\"{}\" title=\"{}\">{}{}</td>",
        c.status.class(),
        esc(case),
        esc(&c.column.to_string()),
        esc(&tip),
        esc(&c.status.words()),
        if c.changed { "<span class=\"delta\">Δ</span>" } else { "" }
    );
}

/// The anchor of a case's details.
fn case_id(case: &str) -> String {
    format!("case-{}", case.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect::<String>())
}

fn pictures(s: &mut String, r: &Report) {
    let pictures = svg::pictures(r);
    if pictures.is_empty() {
        return;
    }
    let _ = writeln!(s, "<section id=\"pictures\"><h2>Pictures</h2>");
    for p in &pictures {
        let _ = writeln!(s, "<figure>\n<figcaption>{}</figcaption>\n{}\n</figure>", esc(&p.title), p.inline());
    }
    let _ = writeln!(s, "</section>");
}

fn changes(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<section id=\"changes\"><h2>Changed between versions</h2>");
    if r.changes.is_empty() {
        let _ = writeln!(s, "<p>No fact differs between consecutive versions of any lane.</p></section>");
        return;
    }
    for lane in LANES {
        let of_lane: Vec<_> = r.changes.iter().filter(|c| c.lane == lane).collect();
        if of_lane.is_empty() {
            continue;
        }
        let _ = writeln!(s, "<h3>{}</h3>", esc(lane_title(lane)));
        let _ =
            writeln!(s, "<table class=\"changes\"><thead><tr><th>Case</th><th>Fact</th><th>Before</th><th>After</th></tr></thead><tbody>");
        let steps = super::diff::steps(r.changes.as_slice());
        let mut step = None;
        for c in of_lane {
            if step != Some((&c.case, &c.from_version, &c.to_version)) {
                step = Some((&c.case, &c.from_version, &c.to_version));
                if let Some(st) = steps
                    .iter()
                    .find(|st| st.case == c.case && st.lane == c.lane && st.from_version == c.from_version && st.to_version == c.to_version)
                {
                    let _ = writeln!(
                        s,
                        "<tr class=\"step\"><td>{}</td><td colspan=\"3\"><strong>{}</strong></td></tr>",
                        code(&c.case),
                        esc(&st.line())
                    );
                }
            }
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{} <span class=\"muted\">on {}</span></td><td>{} <span class=\"muted\">on {}</span></td></tr>",
                code(&c.case),
                code(&c.subject),
                esc(&c.from),
                esc(&c.from_version.to_string()),
                esc(&c.to),
                esc(&c.to_version.to_string())
            );
        }
        let _ = writeln!(s, "</tbody></table>");
    }
    let _ = writeln!(s, "</section>");
}

fn model_against_observation(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<section id=\"model-against-observation\"><h2>Model against observation</h2>");
    if r.divergences.is_empty() {
        let both = r.matrix.cases.values().any(|row| {
            row.cells.iter().any(|(c, cell)| {
                c.lane == Lane::Kind
                    && cell.observed().is_some()
                    && row.cells.get(&Column { lane: Lane::Model, cilium: c.cilium.clone() }).and_then(Cell::observed).is_some()
            })
        });
        let _ = writeln!(
            s,
            "<p>{}</p></section>",
            if both {
                "The model's prediction matches every observed fact where both lanes ran."
            } else {
                "No case has agreed results in both the model and the kind lane on the same version."
            }
        );
        return;
    }
    let _ = writeln!(
        s,
        "<table><thead><tr><th>Case</th><th>Cilium</th><th>Fact</th><th>Model predicted</th><th>Kind observed</th></tr></thead><tbody>"
    );
    for d in &r.divergences {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            code(&d.case),
            esc(&d.cilium.to_string()),
            code(&d.subject),
            esc(&d.model),
            esc(&d.observed)
        );
    }
    let _ = writeln!(s, "</tbody></table></section>");
}

/// The model against Cilium's own operator, when an operator run is loaded.
fn model_against_operator(s: &mut String, r: &Report) {
    if !r.matrix.columns.keys().any(|c| c.lane == Lane::Operator) {
        return;
    }
    let _ = writeln!(s, "<section id=\"model-against-operator\"><h2>Model against Cilium's operator</h2>");
    if r.operator_divergences.is_empty() {
        let _ = writeln!(
            s,
            "<p>{}</p></section>",
            if r.operator_compared_facts > 0 {
                format!(
                    "The model's prediction matches Cilium's operator on every fact both lanes have ({} compared).",
                    r.operator_compared_facts
                )
            } else {
                "No fact was computed by both the model and the operator lane, so nothing was compared.".to_string()
            }
        );
        return;
    }
    let _ = writeln!(
        s,
        "<table><thead><tr><th>Case</th><th>Cilium</th><th>Fact</th><th>Model predicted</th><th>Operator computed</th></tr></thead><tbody>"
    );
    for d in &r.operator_divergences {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            code(&d.case),
            esc(&d.cilium.to_string()),
            code(&d.subject),
            esc(&d.model),
            esc(&d.observed)
        );
    }
    let _ = writeln!(s, "</tbody></table></section>");
}

fn to_confirm(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<section id=\"to-confirm\"><h2>To confirm on a cluster</h2>");
    if r.to_confirm.is_empty() {
        let _ = writeln!(s, "<p>Every inferred expectation that was checked has been observed on a kind cluster too.</p>");
    } else {
        let _ = writeln!(
            s,
            "<details><summary>{} expectation{} marked <code>inferred</code> that no kind-lane run has observed yet</summary>",
            r.to_confirm.len(),
            plural(r.to_confirm.len())
        );
        let _ = writeln!(
            s,
            "<table><thead><tr><th>Case</th><th>Expectation</th><th>Expected</th><th>Inferred from</th><th>Checked only in</th></tr></thead><tbody>"
        );
        for t in &r.to_confirm {
            let from = t.inferred_from();
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                code(&t.case),
                code(&t.subject),
                esc(&t.expected),
                esc(&from),
                t.checked.iter().map(|c| esc(c)).collect::<Vec<_>>().join("<br>")
            );
        }
        let _ = writeln!(s, "</tbody></table></details>");
    }
    if !r.new_facts.is_empty() {
        let _ = writeln!(s, "<h3>Inferences a cluster contradicted (new facts)</h3>");
        let _ = writeln!(
            s,
            "<table><thead><tr><th>Case</th><th>Cilium</th><th>Expectation</th><th>Inferred</th><th>Observed on kind</th><th>Ref</th></tr></thead><tbody>"
        );
        for f in &r.new_facts {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                code(&f.case),
                esc(&f.cilium),
                code(&f.subject),
                esc(&f.expected),
                esc(&f.observed),
                esc(f.reference.as_deref().unwrap_or("-"))
            );
        }
        let _ = writeln!(s, "</tbody></table>");
    }
    let _ = writeln!(s, "</section>");
}

fn cases(s: &mut String, r: &Report) {
    if r.matrix.cases.is_empty() {
        return;
    }
    let _ = writeln!(s, "<section id=\"cases\"><h2>Cases</h2>");
    for row in r.matrix.cases.values() {
        let _ = writeln!(s, "<details id=\"{}\"><summary>{}: {}</summary>", esc(&case_id(&row.name)), code(&row.name), esc(&row.summary));
        if !row.refs.is_empty() {
            let _ = writeln!(s, "<p class=\"muted\">Refs: {}</p>", esc(&row.refs.join(", ")));
        }
        for lane in LANES {
            let columns: Vec<&Column> = r.matrix.columns.keys().filter(|c| c.lane == lane && row.cells.contains_key(*c)).collect();
            if columns.is_empty() {
                continue;
            }
            let _ = writeln!(s, "<h3>{}</h3>\n<table><thead><tr><th>Fact</th>", esc(lane_title(lane)));
            for c in &columns {
                let _ = write!(s, "<th>{}</th>", esc(&c.version_label()));
            }
            let _ = write!(s, "</tr></thead><tbody>\n<tr><th scope=\"row\">result</th>");
            for c in &columns {
                let st = Status::of(row.cells.get(*c), c.lane);
                let _ = write!(s, "<td class=\"{}\">{}</td>", st.class(), esc(&st.words()));
            }
            let _ = writeln!(s, "</tr>");
            for fact in glance::fact_rows(row, &columns) {
                let name = if fact.subject { code(&fact.name) } else { esc(&fact.name) };
                let _ = write!(s, "<tr><th scope=\"row\">{name}</th>");
                for (v, differs) in fact.values.iter().zip(glance::differs_from_previous(&fact.values)) {
                    match v {
                        Some(v) if differs => {
                            let _ = write!(s, "<td class=\"changed\" title=\"differs from the previous version\">{}</td>", esc(v));
                        }
                        Some(v) => {
                            let _ = write!(s, "<td>{}</td>", esc(v));
                        }
                        None => s.push_str("<td class=\"muted\">-</td>"),
                    }
                }
                let _ = writeln!(s, "</tr>");
            }
            let _ = writeln!(s, "</tbody></table>");
            let failures = glance::failures(row, &columns);
            if !failures.is_empty() {
                let _ = writeln!(s, "<p>Failed expectations:</p><ul>");
                for (c, subject, detail) in failures {
                    let _ = writeln!(s, "<li>{}: {}: {}</li>", esc(&c.version_label()), code(subject), esc(detail));
                }
                let _ = writeln!(s, "</ul>");
            }
        }
        let _ = writeln!(s, "</details>");
    }
    let _ = writeln!(s, "</section>");
}

fn provenance(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<section id=\"provenance\"><h2>Provenance</h2>");
    let runs: Vec<&RunInfo> = r.matrix.columns.values().flatten().collect();
    if runs.is_empty() {
        let _ = writeln!(s, "<p>No run was read.</p></section>");
        return;
    }
    let _ = writeln!(
        s,
        "<table><thead><tr><th>Lane</th><th>Cilium</th><th>Run</th><th>Cases</th><th>Result</th><th>Harness</th></tr></thead><tbody>"
    );
    for run in &runs {
        let commit = match &run.harness_commit {
            Some(c) => format!(
                "{} {}{}",
                esc(&run.tool_version),
                code(&short(c.trim_end_matches("-dirty"))),
                if c.ends_with("-dirty") { " (uncommitted changes)" } else { "" }
            ),
            None => format!("{} (commit unknown)", esc(&run.tool_version)),
        };
        let cilium = match &run.cilium_source {
            Some(src) => format!("{}<br><span class=\"muted\">from {}</span>", esc(&run.column.version_label()), esc(src)),
            None => esc(&run.column.version_label()),
        };
        let result = if run.outcome == Outcome::Pass { "pass" } else { "fail" };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{cilium}</td><td>{}<br><span class=\"muted\">{}</span></td><td>{}</td><td class=\"{result}\">{}</td><td>{commit}</td></tr>",
            run.column.lane.as_str(),
            code(&run.run_id),
            esc(&run.started_at),
            run.cases.len(),
            outcome_word(run.outcome)
        );
    }
    let _ = writeln!(s, "</tbody></table>");
    let timings: usize = runs.iter().map(|r| r.phases.len()).sum();
    let _ = writeln!(s, "<details><summary>Cases and phases of each run ({timings} timing{})</summary><ul>", plural(timings));
    for run in &runs {
        let phases: Vec<String> = run.phases.iter().map(|p| format!("{} {} ms", esc(&p.name), p.duration_ms)).collect();
        let _ = writeln!(
            s,
            "<li>{}: cases {}; phases: {}</li>",
            code(&run.run_id),
            run.cases.iter().map(|c| code(c)).collect::<Vec<_>>().join(", "),
            if phases.is_empty() { "none recorded".into() } else { phases.join(", ") }
        );
    }
    let _ = writeln!(s, "</ul></details>");
    let _ = writeln!(s, "<details><summary>Environment: Envoy, chart and image digests, node image, CRD bundle</summary>");
    let mut any = false;
    for run in &runs {
        if run.environment.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(s, "<h3>{}</h3><table><tbody>", code(&run.run_id));
        for (k, v) in &run.environment {
            let _ = writeln!(s, "<tr><th scope=\"row\">{}</th><td>{}</td></tr>", esc(k), code(v));
        }
        let _ = writeln!(s, "</tbody></table>");
    }
    if !any {
        let _ = writeln!(s, "<p>The runs recorded no environment.</p>");
    }
    let _ = writeln!(s, "</details></section>");
}
