//! `report.md`: the report for people, written to read well rendered on GitHub and to be pasted
//! into release notes. What a reader sees without unfolding anything (the summary part) comes
//! first and stays short: a compact matrix (one short cell per case and version, one table per
//! lane so a prediction never sits in a gate column), what changed between versions, model
//! against observation and what waits for a cluster. Everything long is folded in `<details>`
//! blocks: each case's facts per version, the inferred expectations to confirm, the phases of
//! each run and the environment digests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::Report;
use super::column::{Column, lane_title};
use super::facts::{CaseFacts, FactKind};
use super::glance::{self, GlanceCell, LANES, Status};
use super::html;
use super::load::short;
use super::merge::{CaseRow, Cell, RunInfo, outcome_word};
use super::problem::Problem;
use crate::evidence::Lane;
use crate::judge::Outcome;
use crate::markdown::{cell, code, tcode};

/// At most this many characters in `report.md`, so it can be pasted whole into a pull-request
/// comment (GitHub refuses one over 65,536).
pub const PASTE_LIMIT: usize = 60_000;

/// How much of the long, folded material the document carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// Everything: each case's facts, every expectation to confirm, every run's phases.
    Whole,
    /// Those three left to `report.html` (and `report.json`), each named where it would be.
    Pasteable,
}

/// `report.md`: whole when that fits [`PASTE_LIMIT`]; otherwise without the long folded parts,
/// which `report.html` beside it carries.
pub fn render(r: &Report) -> String {
    let whole = render_with(r, Fold::Whole);
    if whole.chars().count() < PASTE_LIMIT { whole } else { render_with(r, Fold::Pasteable) }
}

fn render_with(r: &Report, fold: Fold) -> String {
    let mut s = String::new();
    header(&mut s, r);
    problems(&mut s, &r.problems);
    matrix(&mut s, r);
    changes(&mut s, r);
    model_against_observation(&mut s, r);
    to_confirm(&mut s, r, fold);
    details(&mut s, r, fold);
    provenance(&mut s, r, fold);
    s
}

/// Where a part left out of a pasteable report is.
const IN_HTML: &str =
    "in `report.html` beside this file (and in `report.json`), left out here so this document fits a pull-request comment";

/// The summary part of a report: the document with every `<details>` block (each opened on a
/// line of its own by this renderer) removed, i.e. what a reader sees before unfolding.
pub fn summary_part(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut depth = 0usize;
    for line in markdown.split_inclusive('\n') {
        if line.starts_with("<details>") {
            depth += 1;
        } else if depth > 0 && line.starts_with("</details>") {
            depth -= 1;
        } else if depth == 0 {
            out.push_str(line);
        }
    }
    out
}

fn header(s: &mut String, r: &Report) {
    let _ = writeln!(s, "# layout-gate report\n");
    let runs: usize = r.matrix.columns.values().map(Vec::len).sum();
    let mut lanes = Vec::new();
    for lane in LANES {
        let versions: Vec<String> = r.matrix.columns.keys().filter(|c| c.lane == lane).map(Column::version_label).collect();
        if !versions.is_empty() {
            let what = match lane {
                Lane::Kind => "gate evidence",
                Lane::Operator => "Cilium's operator, agent step as each run's evidence says (`environment.agent_step`)",
                Lane::Model => "prediction",
                Lane::Fixture => "harness self-check",
            };
            lanes.push(format!("**{}** ({what}) on {}", lane.as_str(), versions.join(", ")));
        }
    }
    let _ = writeln!(
        s,
        "{runs} run{} of {} case{}: {}.\n",
        plural(runs),
        r.matrix.cases.len(),
        plural(r.matrix.cases.len()),
        if lanes.is_empty() { "no lane".into() } else { lanes.join("; ") }
    );
    let _ = writeln!(
        s,
        "> Only **kind** columns are gate evidence: real Cilium on a kind cluster. **model** columns are \
         layout-gate's prediction of Cilium on a real local Envoy; **fixture** columns check the harness itself.\n"
    );
    if !r.problems.is_empty() {
        let _ = writeln!(
            s,
            "**{} problem{} with the input: see [Problems](#problems). Nothing below merges them away.**\n",
            r.problems.len(),
            plural(r.problems.len())
        );
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn problems(s: &mut String, problems: &[Problem]) {
    if problems.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Problems\n");
    for p in problems {
        match p {
            Problem::Disagreement { case, column, runs, differences } => {
                let _ = writeln!(
                    s,
                    "- **{}** on {column}: {} runs disagree, so the matrix shows neither ({}):",
                    cell(case),
                    runs.len(),
                    runs.iter().map(|r| code(r)).collect::<Vec<_>>().join(", ")
                );
                for d in differences {
                    let _ = writeln!(s, "  - {}", code(d));
                }
            }
            other => {
                let _ = writeln!(s, "- {}: {}", code(&other.place()), cell(&other.message()));
            }
        }
    }
    s.push('\n');
}

fn matrix(s: &mut String, r: &Report) {
    let _ = writeln!(s, "## Matrix\n");
    if r.matrix.cases.is_empty() {
        let _ = writeln!(s, "No case was read.\n");
        return;
    }
    let lanes = glance::lanes(r);
    let (pass, fail, not_run) = glance::totals(&lanes);
    let notes = glance::totals_notes(&lanes);
    let _ = writeln!(
        s,
        "{pass} passed, {fail} failed, {not_run} not run or disagreeing (cells over every lane and version{notes}; each case's facts are under [Cases](#cases)).\n"
    );
    for lane in &lanes {
        let _ = writeln!(s, "### {}\n", lane_title(lane.lane));
        let _ = writeln!(s, "| Case | {} |", lane.columns.iter().map(Column::version_label).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(lane.columns.len()));
        for row in &lane.rows {
            let cells: Vec<String> = row.cells.iter().map(short_cell).collect();
            let _ = writeln!(s, "| {} | {} |", tcode(&row.case), cells.join(" | "));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "✅ every expectation held · ❌ FAIL n/m: n of m expectations failed · ❌ error: ran but could not be judged · \
         ⚠️ disagree: the runs of a column disagree (see [Problems](#problems)) · not run: no run of that version has the case · {}\
         **Δ**: some fact differs from the lane's previous version (see [Changed between versions](#changed-between-versions)).\n",
        if glance::left_out(&lanes) > 0 { "—: left out, the case has no expectation at that version · " } else { "" }
    );
    if glance::own_inference(&lanes) > 0 {
        let _ = writeln!(
            s,
            "☑️ own inference: the model **agrees with its own inference**, not a plain pass: every expectation was written by \
             `case new --from` from the model's own prediction (provenance `inferred`); confirm it on a cluster \
             (`layout-gate run --lane kind --record`).\n"
        );
    }
}

/// One compact matrix cell: status, failure count, change marker.
fn short_cell(c: &GlanceCell) -> String {
    let words = c.status.words();
    let text = match c.status {
        Status::Pass { .. } => format!("✅ {words}"),
        Status::OwnInference { .. } => format!("☑️ {words}"),
        Status::Fail { .. } | Status::Error => format!("❌ **{words}**"),
        Status::Disagree => format!("⚠️ {words}"),
        Status::NotRun | Status::LeftOut => words,
    };
    if c.changed { format!("{text} **Δ**") } else { text }
}

/// Each case folded: its summary and references, then per lane one table of facts × versions
/// (a value that differs from the previous version in bold), then its failures.
fn details(s: &mut String, r: &Report, fold: Fold) {
    if r.matrix.cases.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Cases\n");
    if fold == Fold::Pasteable {
        let _ = writeln!(s, "Each case's facts per version, and its failed expectations, are {IN_HTML}.\n");
        return;
    }
    let lanes = glance::lanes(r);
    for row in r.matrix.cases.values() {
        let glances: Vec<String> = lanes
            .iter()
            .filter_map(|l| {
                let g = l.rows.iter().find(|g| g.case == row.name)?;
                let cells: Vec<String> = g
                    .cells
                    .iter()
                    .map(|c| format!("{} {}{}", c.column.version_label(), c.status.words(), if c.changed { " Δ" } else { "" }))
                    .collect();
                Some(format!("{}: {}", l.lane.as_str(), cells.join(", ")))
            })
            .collect();
        let _ = writeln!(s, "<details>\n<summary><code>{}</code> ({})</summary>\n", html::esc(&row.name), html::esc(&glances.join("; ")));
        let refs = if row.refs.is_empty() { String::new() } else { format!(" ({})", row.refs.join(", ")) };
        let _ = writeln!(s, "{}{}\n", cell(&row.summary), cell(&refs));
        for lane in LANES {
            let columns: Vec<&Column> = r.matrix.columns.keys().filter(|c| c.lane == lane && row.cells.contains_key(*c)).collect();
            if columns.is_empty() {
                continue;
            }
            case_table(s, row, lane, &columns, &r.matrix.left_out);
        }
        let _ = writeln!(s, "</details>\n");
    }
}

fn case_table(s: &mut String, row: &CaseRow, lane: Lane, columns: &[&Column], left_out: &BTreeSet<(String, Column)>) {
    let _ = writeln!(s, "{}:\n", lane_title(lane));
    let _ = writeln!(s, "| Fact | {} |", columns.iter().map(|c| c.version_label()).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(s, "|---|{}", "---|".repeat(columns.len()));
    let verdicts: Vec<String> = columns
        .iter()
        .map(|c| match row.cells.get(*c) {
            Some(Cell::Disagreeing { .. }) => "**runs disagree** (see [Problems](#problems))".into(),
            Some(Cell::Observed { facts, .. }) => verdict_line(facts),
            Some(Cell::NotRun { reason, .. }) => format!("**not run**: {} (see [Problems](#problems))", cell(reason)),
            None if left_out.contains(&(row.name.clone(), (*c).clone())) => "— (no expectation at this version)".into(),
            None => "not run".into(),
        })
        .collect();
    let _ = writeln!(s, "| result | {} |", verdicts.join(" | "));
    for fact in glance::fact_rows(row, columns) {
        let name = if fact.subject { tcode(&fact.name) } else { cell(&fact.name) };
        let cells: Vec<String> = fact
            .values
            .iter()
            .zip(glance::differs_from_previous(&fact.values))
            .map(|(v, differs)| match v {
                // Bold where the value differs from the previous version that has one.
                Some(v) if differs => format!("**{}**", cell(v)),
                Some(v) => cell(v),
                None => "-".into(),
            })
            .collect();
        let _ = writeln!(s, "| {name} | {} |", cells.join(" | "));
    }
    s.push('\n');
    let failures: Vec<String> = glance::failures(row, columns)
        .into_iter()
        .map(|(c, subject, detail)| format!("- {}: {}: {}", c.version_label(), code(subject), cell(detail)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(s, "Failed expectations:\n\n{}\n", failures.join("\n"));
    }
}

/// A fact's value: server_names lists as code (they are names, and `www.` would become a link),
/// everything else as text.
fn value(kind: FactKind, v: &str, in_table: bool) -> String {
    match (kind, in_table) {
        (FactKind::EnvoyServerNames, true) => tcode(v),
        (FactKind::EnvoyServerNames, false) => code(v),
        _ => cell(v),
    }
}

fn verdict_line(f: &CaseFacts) -> String {
    match f.outcome {
        Outcome::Pass => format!("**pass**, {} check{}", f.checks, plural(f.checks)),
        Outcome::Fail if f.failures > 0 => format!("**FAIL**, {} of {} checks failed", f.failures, f.checks),
        Outcome::Fail => format!("**FAIL**, {} check{}", f.checks, plural(f.checks)),
    }
}

fn changes(s: &mut String, r: &Report) {
    let _ = writeln!(s, "## Changed between versions\n");
    if r.changes.is_empty() {
        let _ = writeln!(s, "No fact differs between consecutive versions of any lane.\n");
        return;
    }
    for lane in LANES {
        let of_lane: Vec<_> = r.changes.iter().filter(|c| c.lane == lane).collect();
        if of_lane.is_empty() {
            continue;
        }
        let what = match lane {
            Lane::Kind => "observed on real Cilium",
            Lane::Operator => "computed by Cilium's own operator; the agent step and Envoy emulated",
            Lane::Model => "predicted by the model, not observed",
            Lane::Fixture => "harness self-check",
        };
        let _ = writeln!(s, "### {} lane ({what})\n", lane.as_str());
        let steps = super::diff::steps(r.changes.as_slice());
        // One block per case: each step's verdict in `check`'s words shows; the facts behind them
        // are folded. Shown in full, a 53-case catalogue's changes outgrew what the summary part
        // (pasted into a comment or release notes) may hold.
        let mut i = 0;
        while i < of_lane.len() {
            let case = &of_lane[i].case;
            let end = of_lane[i..].iter().position(|c| &c.case != case).map_or(of_lane.len(), |n| i + n);
            let facts = &of_lane[i..end];
            i = end;
            let _ = writeln!(s, "{}{}:\n", if s.ends_with("\n\n") { "" } else { "\n" }, code(case));
            let mut seen: Vec<(&crate::case::CiliumVersion, &crate::case::CiliumVersion)> = Vec::new();
            for c in facts {
                let step = (&c.from_version, &c.to_version);
                if seen.contains(&step) {
                    continue;
                }
                seen.push(step);
                match steps
                    .iter()
                    .find(|st| st.case == c.case && st.lane == c.lane && st.from_version == c.from_version && st.to_version == c.to_version)
                {
                    Some(st) => {
                        let _ = writeln!(s, "- **{}**", cell(&st.line()));
                    }
                    None => {
                        let _ = writeln!(s, "- **{} → {}**", c.from_version, c.to_version);
                    }
                }
            }
            let _ = writeln!(
                s,
                "\n<details>\n<summary>{} fact{} changed in <code>{}</code></summary>\n",
                facts.len(),
                plural(facts.len()),
                html::esc(case)
            );
            // The sentence of report.json, with the subject (and server_names) as code: GitHub
            // would otherwise turn `www.example.test` into a link.
            for c in facts {
                let (from, to) = (value(c.kind, &c.from, false), value(c.kind, &c.to, false));
                let _ = writeln!(s, "- {}: {from} on {}, {to} on {}", code(&c.subject), c.from_version, c.to_version);
            }
            let _ = writeln!(s, "\n</details>\n");
        }
        s.push('\n');
    }
}

fn model_against_observation(s: &mut String, r: &Report) {
    model_against(s, r, Lane::Kind, &r.divergences, r.compared_facts);
    if r.matrix.columns.keys().any(|c| c.lane == Lane::Operator) {
        model_against(s, r, Lane::Operator, &r.operator_divergences, r.operator_compared_facts);
    }
}

/// The model against one lane that ran Cilium (kind: observation; operator: Cilium's own
/// operator, through the agent step each run's evidence names).
fn model_against(s: &mut String, r: &Report, lane: Lane, divergences: &[super::diff::Divergence], compared: usize) {
    let (title, lane_words, seen) = match lane {
        Lane::Operator => ("Model against Cilium's operator", "the operator lane", "Operator computed"),
        _ => ("Model against observation", "the kind lane", "Kind observed"),
    };
    let _ = writeln!(s, "## {title}\n");
    // Versions where both lanes have an agreed cell for some case (only those are compared),
    // and (case, version) pairs left out because one lane's runs disagree.
    let mut both: BTreeSet<String> = BTreeSet::new();
    let mut skipped: Vec<String> = Vec::new();
    for row in r.matrix.cases.values() {
        for (col, kind_cell) in row.cells.iter().filter(|(c, _)| c.lane == lane) {
            let Some(model_cell) = row.cells.get(&Column { lane: Lane::Model, cilium: col.cilium.clone() }) else { continue };
            if kind_cell.observed().is_some() && model_cell.observed().is_some() {
                both.insert(col.version_label());
            } else {
                skipped.push(format!("{} on {}", code(&row.name), col.version_label()));
            }
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(s, "Not compared, because the runs of one lane disagree (see [Problems](#problems)): {}.\n", skipped.join(", "));
    }
    if both.is_empty() {
        let _ = writeln!(s, "No case has agreed results in both the model and {lane_words} on the same version.\n");
        return;
    }
    // Agreement is claimed only over facts both lanes really have: a kind run that observed
    // nothing agrees with nothing.
    if divergences.is_empty() && compared == 0 {
        let _ = writeln!(s, "No fact was observed by both the model and {lane_words}, so nothing was compared.\n");
        return;
    }
    if divergences.is_empty() {
        let _ = writeln!(
            s,
            "The model's prediction matches every observed fact where both lanes ran ({} fact{} compared, on {}).\n",
            compared,
            plural(compared),
            both.into_iter().collect::<Vec<_>>().join(", ")
        );
        return;
    }
    let _ =
        writeln!(s, "Where both lanes ran a case on one version, each fact they see differently: the model is wrong, or Cilium changed.\n");
    let _ = writeln!(s, "| Case | Cilium | Fact | Model predicted | {seen} |\n|---|---|---|---|---|");
    for d in divergences {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            tcode(&d.case),
            d.cilium,
            tcode(&d.subject),
            value(d.kind, &d.model, true),
            value(d.kind, &d.observed, true)
        );
    }
    s.push('\n');
}

fn to_confirm(s: &mut String, r: &Report, fold: Fold) {
    let _ = writeln!(s, "## To confirm on a cluster\n");
    if r.to_confirm.is_empty() && r.confirmed == 0 {
        let _ = writeln!(s, "No inferred expectation was checked.\n");
    } else if r.to_confirm.is_empty() {
        let _ = writeln!(s, "Every inferred expectation that was checked has been observed on a kind cluster too.\n");
    } else {
        // Counted per case in the summary; the list itself (one row per expectation, hundreds
        // for the catalogue) is folded.
        let mut per_case: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &r.to_confirm {
            *per_case.entry(t.case.as_str()).or_default() += 1;
        }
        let _ = writeln!(
            s,
            "{} expectation{} marked `inferred` that no kind-lane run has observed yet: {}.\n",
            r.to_confirm.len(),
            plural(r.to_confirm.len()),
            per_case.iter().map(|(c, n)| format!("{} {n}", code(c))).collect::<Vec<_>>().join(", ")
        );
        if fold == Fold::Pasteable {
            let _ = writeln!(s, "Every expectation to confirm is {IN_HTML}.\n");
        } else {
            to_confirm_list(s, r);
        }
    }
    new_facts(s, r);
}

fn to_confirm_list(s: &mut String, r: &Report) {
    {
        let _ = writeln!(s, "<details>\n<summary>Every expectation to confirm</summary>\n");
        let _ = writeln!(s, "| Case | Expectation | Expected | Inferred from | Checked only in |\n|---|---|---|---|---|");
        for t in &r.to_confirm {
            let from = t.inferred_from();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                tcode(&t.case),
                tcode(&t.subject),
                cell(&t.expected),
                cell(&from),
                t.checked.iter().map(|c| cell(c)).collect::<Vec<_>>().join("<br>")
            );
        }
        let _ = writeln!(s, "\n</details>\n");
    }
}

fn new_facts(s: &mut String, r: &Report) {
    if !r.new_facts.is_empty() {
        let _ = writeln!(s, "### Inferences a cluster contradicted (new facts)\n");
        let _ = writeln!(s, "| Case | Cilium | Expectation | Inferred | Observed on kind | Ref |\n|---|---|---|---|---|---|");
        for f in &r.new_facts {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                tcode(&f.case),
                cell(&f.cilium),
                tcode(&f.subject),
                cell(&f.expected),
                cell(&f.observed),
                cell(f.reference.as_deref().unwrap_or("-"))
            );
        }
        s.push('\n');
    }
}

fn provenance(s: &mut String, r: &Report, fold: Fold) {
    let _ = writeln!(s, "## Provenance\n");
    let runs: Vec<&RunInfo> = r.matrix.columns.values().flatten().collect();
    if runs.is_empty() {
        let _ = writeln!(s, "No run was read.");
        return;
    }
    let _ = writeln!(s, "### Runs\n");
    let _ = writeln!(s, "| Lane | Cilium | Run | Cases | Result | Harness |\n|---|---|---|---|---|---|");
    for run in &runs {
        let commit = match &run.harness_commit {
            Some(c) => {
                let dirty = c.ends_with("-dirty");
                format!(
                    "{} {}{}",
                    cell(&run.tool_version),
                    tcode(&short(c.trim_end_matches("-dirty"))),
                    if dirty { " (uncommitted changes)" } else { "" }
                )
            }
            None => format!("{} (commit unknown)", cell(&run.tool_version)),
        };
        let cilium = match &run.cilium_source {
            Some(src) => format!("{}<br>from {}", run.column.version_label(), cell(src)),
            None => run.column.version_label(),
        };
        let cases = match run.cases.as_slice() {
            [] => "none".to_string(),
            [one] => tcode(one),
            many => format!("{} cases", many.len()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}<br>{} | {cases} | {} | {} |",
            run.column.lane.as_str(),
            cilium,
            tcode(&run.run_id),
            cell(&run.started_at),
            if run.not_run.is_some() { "not run" } else { outcome_word(run.outcome) },
            commit,
        );
    }
    s.push('\n');
    if fold == Fold::Pasteable {
        let _ = writeln!(s, "The cases and timed phases of each run are {IN_HTML}.\n");
    } else {
        phases(s, &runs);
    }
    environment(s, r);
}

/// Every run's cases and timed phases, folded: a catalogue run has dozens.
fn phases(s: &mut String, runs: &[&RunInfo]) {
    let timings: usize = runs.iter().map(|r| r.phases.len()).sum();
    let _ = writeln!(s, "<details>\n<summary>Cases and phases of each run ({timings} timing{})</summary>\n", plural(timings));
    for run in runs {
        let phases: Vec<String> = run.phases.iter().map(|p| format!("{} {}", cell(&p.name), duration(p.duration_ms))).collect();
        let _ = writeln!(
            s,
            "- {}: cases {}; phases: {}",
            code(&run.run_id),
            if run.cases.is_empty() { "none".into() } else { run.cases.iter().map(|c| code(c)).collect::<Vec<_>>().join(", ") },
            if phases.is_empty() { "none recorded".into() } else { phases.join(", ") }
        );
    }
    let _ = writeln!(s, "\n</details>\n");
}

/// The environment (chart and image digests, kind node image, CRD bundle, Envoy), per lane:
/// what every run of the lane shares once, then what differs per version.
fn environment(s: &mut String, r: &Report) {
    let _ = writeln!(s, "<details>\n<summary>Environment: Envoy, chart and image digests, node image, CRD bundle</summary>\n");
    let mut any = false;
    for lane in LANES {
        let columns: Vec<&Column> = r.matrix.columns.keys().filter(|c| c.lane == lane).collect();
        // key -> column -> distinct values (shards of a column may differ, and that must show).
        let mut table: BTreeMap<&str, BTreeMap<&Column, BTreeSet<&str>>> = BTreeMap::new();
        for col in &columns {
            for run in r.matrix.columns.get(*col).into_iter().flatten() {
                for (k, v) in &run.environment {
                    table.entry(k).or_default().entry(*col).or_default().insert(v);
                }
            }
        }
        if table.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(s, "{} lane:\n", lane.as_str());
        let (same, differ): (Vec<_>, Vec<_>) = table.iter().partition(|(_, per)| {
            let values: BTreeSet<&&str> = per.values().flatten().collect();
            values.len() == 1 && per.len() == columns.len() && per.values().all(|v| v.len() == 1)
        });
        if !same.is_empty() {
            let header = if columns.len() == 1 { columns[0].version_label() } else { "every version".into() };
            let _ = writeln!(s, "| What | {header} |\n|---|---|");
            for (k, per) in &same {
                let v = per.values().flatten().next().copied().unwrap_or("");
                let _ = writeln!(s, "| {} | {} |", cell(k), tcode(v));
            }
            s.push('\n');
        }
        if !differ.is_empty() {
            let _ = writeln!(s, "| What | {} |", columns.iter().map(|c| c.version_label()).collect::<Vec<_>>().join(" | "));
            let _ = writeln!(s, "|---|{}", "---|".repeat(columns.len()));
            for (k, per) in &differ {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|c| match per.get(c) {
                        Some(values) if values.len() > 1 => {
                            format!("{} (differs between shards)", values.iter().map(|v| tcode(v)).collect::<Vec<_>>().join("<br>"))
                        }
                        Some(values) => values.iter().map(|v| tcode(v)).collect::<Vec<_>>().join(""),
                        None => "-".into(),
                    })
                    .collect();
                let _ = writeln!(s, "| {} | {} |", cell(k), cells.join(" | "));
            }
            s.push('\n');
        }
    }
    if !any {
        let _ = writeln!(s, "The runs recorded no environment.\n");
    }
    let _ = writeln!(s, "</details>\n");
}

fn duration(ms: u64) -> String {
    if ms < 1000 { format!("{ms} ms") } else { format!("{}.{} s", ms / 1000, (ms % 1000) / 100) }
}
