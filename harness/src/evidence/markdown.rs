//! `summary.md`: a table fit for release notes, then the details a reviewer checks.

use std::fmt::Write;

use super::Evidence;
use crate::judge::{Aspect, Outcome};
use crate::markdown::{cell, cell_lines};

fn mark(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "**FAIL**",
    }
}

pub fn render_summary(ev: &Evidence) -> String {
    let mut s = String::new();
    match &ev.cilium {
        Some(c) => {
            let _ = writeln!(s, "# layout-gate: {} lane, Cilium {}\n", ev.lane.as_str(), c.version);
        }
        None => {
            let _ = writeln!(s, "# layout-gate: {} lane (no Cilium)\n", ev.lane.as_str());
        }
    }
    let _ = writeln!(s, "> {}\n", ev.lane.banner());
    let passed = ev.cases.iter().filter(|c| c.outcome == Outcome::Pass).count();
    if let Some(reason) = ev.not_run_reason() {
        let _ =
            writeln!(s, "Result: **not run**: {}. This is not a result: no case was observed or judged.\n", crate::markdown::cell(reason));
    }
    for c in &ev.not_run {
        let _ = writeln!(s, "- not run: {}: {}", crate::markdown::code(&c.name), crate::markdown::cell(&c.reason));
    }
    if !ev.not_run.is_empty() {
        s.push('\n');
    }
    if ev.not_run_reason().is_some() {
        return s;
    }
    let _ = writeln!(
        s,
        "Result: **{}**, {passed} of {} cases passed. Run `{}`, {} to {}, layout-gate {} ({}).\n",
        if ev.outcome() == Outcome::Pass { "pass" } else { "FAIL" },
        ev.cases.len(),
        ev.run_id,
        ev.started_at,
        ev.finished_at,
        ev.tool.version,
        ev.tool.git_commit.as_deref().unwrap_or("commit unknown"),
    );

    let _ = writeln!(s, "| Case | Result | Certificate answers | Envoy | Failures |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for c in &ev.cases {
        let answers: Vec<String> =
            c.verdicts.iter().filter(|v| v.aspect == Aspect::Probe).map(|v| format!("{} → {}", v.subject, v.observed)).collect();
        let envoy: Vec<String> = c
            .observed
            .envoy_listeners
            .as_ref()
            .map(|ls| {
                ls.iter()
                    .map(|l| match &l.error {
                        Some(_) if l.state == "error" => format!("{}: refused", l.name),
                        Some(_) => format!("{}: {} chains, update refused", l.name, l.filter_chains),
                        None => format!("{}: {} chains", l.name, l.filter_chains),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let failures = c.verdicts.iter().filter(|v| !v.passed()).count() + usize::from(c.error.is_some());
        let _ =
            writeln!(s, "| {} | {} | {} | {} | {} |", cell(&c.name), mark(c.outcome), cell_lines(&answers), cell_lines(&envoy), failures);
    }

    for c in &ev.cases {
        let _ = writeln!(s, "\n## {}: {}\n", c.name, mark(c.outcome));
        let _ = writeln!(s, "{}\n", c.summary);
        if !c.refs.is_empty() {
            let _ = writeln!(s, "Refs: {}. ", c.refs.join(", "));
        }
        let _ = writeln!(
            s,
            "Expectations from: {}. Case hash `{}`.\n",
            if c.ranges.is_empty() { "none".into() } else { c.ranges.join("; ") },
            &c.hash[..c.hash.len().min(12)]
        );
        if let Some(e) = &c.error {
            let _ = writeln!(s, "Could not be judged: `{}`\n", e.replace('`', "'"));
        }
        if !c.verdicts.is_empty() {
            let _ = writeln!(s, "| Check | Expected | Observed | Result | Provenance |");
            let _ = writeln!(s, "|---|---|---|---|---|");
            for v in &c.verdicts {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} |",
                    cell(&v.subject),
                    cell(&v.expected),
                    cell(&v.observed),
                    mark(v.outcome),
                    cell(&v.provenance.to_string())
                );
            }
            let failures: Vec<_> = c.verdicts.iter().filter(|v| !v.passed()).collect();
            if !failures.is_empty() {
                let _ = writeln!(s, "\nFailures:\n");
                for v in failures {
                    let new = if v.contradicts_inference() { " (contradicts an inferred expectation: a new fact to record)" } else { "" };
                    let _ = writeln!(s, "```text\n{}: {}{new}\n```", v.subject, v.detail.trim_end());
                }
            }
        }
    }

    let inferred: Vec<(String, String)> = ev
        .cases
        .iter()
        .flat_map(|c| {
            c.verdicts
                .iter()
                .filter(|v| v.provenance.kind == crate::case::ProvenanceKind::Inferred)
                .map(move |v| (c.name.clone(), v.subject.clone()))
        })
        .collect();
    if !inferred.is_empty() {
        let _ = writeln!(s, "\n## To confirm on a cluster\n");
        let _ = writeln!(
            s,
            "Expectations marked `inferred` that this run checked{}:\n",
            if ev.lane == super::Lane::Kind { "" } else { " only outside a cluster" }
        );
        for (case, subject) in inferred {
            let _ = writeln!(s, "- {case}: {subject}");
        }
    }

    if !ev.phases.is_empty() {
        let _ = writeln!(s, "\n## Phases\n\n| Phase | Duration |\n|---|---|");
        for p in &ev.phases {
            let _ = writeln!(s, "| {} | {} ms |", cell(&p.name), p.duration_ms);
        }
    }
    if !ev.environment.is_empty() {
        let _ = writeln!(s, "\n## Environment\n\n| What | Version |\n|---|---|");
        for (k, v) in &ev.environment {
            let _ = writeln!(s, "| {} | {} |", cell(k), cell(v));
        }
    }
    if !ev.certificates.is_empty() {
        let _ = writeln!(s, "\n## Certificates of this run\n\n| Name | DNS names | SHA-256 |\n|---|---|---|");
        for c in &ev.certificates {
            let names: Vec<&str> = c.dns_names.iter().map(|d| d.as_str()).collect();
            let _ = writeln!(s, "| {} | {} | `{}` |", c.name, cell(&names.join(", ")), c.leaf.sha256.hex());
        }
    }
    s
}
