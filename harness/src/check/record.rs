//! `run --lane kind --record`: a kind-lane run's observations turn the case's `inferred`
//! expectations for that version into `observed` ones, by surgical edits of `case.yaml` at the
//! lines the loader located (comments and layout stay as written). A group whose every
//! expectation held becomes `provenance: observed` with the run beside it; otherwise each
//! one-line probe is marked (held) or rewritten to what answered (when the group speaks of this
//! version alone among the pinned ones). Only kind evidence is accepted: a model run never
//! produces `observed`.
//!
//! `run --lane operator --record` ([`record_operator`]): an operator-lane run adds a
//! `confirmed:` entry to each group Cilium's own operator answered in full at its version.
//!
//! What a run says is decided here; the edits of `case.yaml`'s text are `case::edit`'s.

use std::collections::BTreeMap;

use super::answer::Reply;
use crate::case::edit::{edit_probe, provenance_line, upsert_confirmed};
use crate::case::{Applied, Case, CiliumVersion, ExpectGroup, ProvenanceKind};
use crate::evidence::{Evidence, Lane};
use crate::judge::{self, Aspect};
use crate::types::{CertName, Fingerprint};

/// What one recording did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    /// The new case.yaml text.
    pub text: String,
    /// `case.yaml:LINE: ...` for every edit.
    pub changed: Vec<String>,
    /// Observations that differ from an inferred expectation but were not written, and why.
    pub not_rewritten: Vec<String>,
}

/// Applies `ev` (a kind-lane run) to `case`, whose case.yaml reads `text`.
pub fn record(case: &Case, text: &str, ev: &Evidence, pinned: &[CiliumVersion]) -> Result<Recorded, String> {
    if ev.lane != Lane::Kind {
        return Err(format!(
            "run {} is a {} run; only the kind lane observes Cilium, so only its evidence is recorded",
            ev.run_id,
            ev.lane.as_str()
        ));
    }
    let version = ev.cilium.as_ref().ok_or_else(|| format!("run {} names no Cilium version", ev.run_id))?;
    let v = CiliumVersion::parse(&version.version).map_err(|e| e.0)?;
    let c = ev.cases.iter().find(|c| c.name == case.name).ok_or_else(|| format!("run {} has no case {}", ev.run_id, case.name))?;
    if let Some(e) = &c.error {
        return Err(format!("run {} did not observe case {}: {e}; nothing is recorded", ev.run_id, case.name));
    }
    let date = ev.started_at.split('T').next().unwrap_or(&ev.started_at).to_string();
    let stamp = format!("{{lane: kind, cilium: \"{v}\", date: \"{date}\", run: {}}}", ev.run_id);
    let names: BTreeMap<Fingerprint, CertName> =
        ev.certificates.iter().chain(&c.certificates).map(|r| (r.leaf.sha256, r.name.clone())).collect();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut out = Recorded::default();
    let file = case.file.display().to_string();
    for g in case.groups.iter().filter(|g| g.range.matches(&v)) {
        let only_this = pinned.iter().filter(|p| g.range.matches(p)).count() == 1;
        let group_inferred = g.provenance.kind == ProvenanceKind::Inferred;
        let (held_all, failures) = judge_group(case, g, &c.observed, &names);
        if group_inferred && held_all {
            match provenance_line(&lines, g.line) {
                Some((i, indent)) => {
                    lines[i] = format!("{indent}provenance: observed");
                    inserts.push((i + 1, format!("{indent}observed: {stamp}")));
                    out.changed.push(format!(
                        "{file}:{}: group {:?}: inferred -> observed (every expectation held on {v})",
                        i + 1,
                        g.range.as_str()
                    ));
                }
                None => out.not_rewritten.push(format!(
                    "{file}:{}: group {:?}: held, but its provenance line was not found",
                    g.line,
                    g.range.as_str()
                )),
            }
            continue;
        }
        for p in g.probes.iter().filter(|p| p.provenance.kind == ProvenanceKind::Inferred) {
            let record = c.observed.probes.iter().find(|r| r.key == p.key);
            let facts = record.map(|r| r.facts.as_slice()).unwrap_or(&[]);
            let verdict = judge::judge_probe(p, facts, 1, &|fp| names.get(fp).cloned());
            let idx = (p.line as usize).saturating_sub(1);
            let Some(line) = lines.get(idx).cloned() else { continue };
            if verdict.passed() {
                match edit_probe(&line, None, &stamp) {
                    Some(new) => {
                        lines[idx] = new;
                        out.changed.push(format!("{file}:{}: {}: inferred -> observed ({})", p.line, p.key, verdict.expected));
                    }
                    None => out.not_rewritten.push(format!("{file}:{}: {}: held, but it is not a one-line flow mapping", p.line, p.key)),
                }
                continue;
            }
            let Some(last) = facts.last() else {
                out.not_rewritten.push(format!("{file}:{}: {}: not observed", p.line, p.key));
                continue;
            };
            let answer = answer_text(&Reply::from_fact(last, &|fp| names.get(fp).cloned()));
            if !only_this {
                out.not_rewritten.push(format!(
                    "{file}:{}: {}: inferred {}, observed {} on {v}; not rewritten: the group ({}) also speaks of other pinned versions (split it by hand)",
                    p.line, p.key, verdict.expected, verdict.observed, g.range.as_str()
                ));
                continue;
            }
            if p.served_by.is_some() || p.status.is_some() || answer.is_none() {
                out.not_rewritten.push(format!(
                    "{file}:{}: {}: inferred {}, observed {}; not rewritten (HTTP expectations are edited by hand)",
                    p.line, p.key, verdict.expected, verdict.observed
                ));
                continue;
            }
            match edit_probe(&line, answer.as_deref(), &stamp) {
                Some(new) => {
                    lines[idx] = new;
                    out.changed
                        .push(format!("{file}:{}: {}: inferred {} -> observed {}", p.line, p.key, verdict.expected, verdict.observed));
                }
                None => out.not_rewritten.push(format!("{file}:{}: {}: differs, but it is not a one-line flow mapping", p.line, p.key)),
            }
        }
        if group_inferred {
            for f in failures.iter().filter(|f| f.aspect != Aspect::Probe) {
                out.not_rewritten.push(format!(
                    "{file}:{}: {}: inferred {}, observed {} on {v}; not rewritten (conditions and Envoy facts are recorded with their whole group)",
                    g.line, f.subject, f.expected, f.observed
                ));
            }
        }
    }
    inserts.sort_by_key(|i| std::cmp::Reverse(i.0));
    for (at, l) in inserts {
        lines.insert(at, l);
    }
    out.text = lines.join("\n");
    if text.ends_with('\n') {
        out.text.push('\n');
    }
    Ok(out)
}

/// Applies `ev` (an operator-lane run) to `case`: every group speaking of the run's version
/// whose every expectation Cilium's own operator answered gets a `confirmed:` entry for that
/// version (lane, version, the operator module's sum, date, run), replacing an older entry for
/// the same version. The group's provenance (where the expectation came from) is kept: the
/// entry says who answered it. A group that did not hold is named, never edited.
pub fn record_operator(case: &Case, text: &str, ev: &Evidence) -> Result<Recorded, String> {
    if ev.lane != Lane::Operator {
        return Err(format!("run {} is a {} run, not an operator run", ev.run_id, ev.lane.as_str()));
    }
    let version = ev.cilium.as_ref().ok_or_else(|| format!("run {} names no Cilium version", ev.run_id))?;
    let v = CiliumVersion::parse(&version.version).map_err(|e| e.0)?;
    let c = ev.cases.iter().find(|c| c.name == case.name).ok_or_else(|| format!("run {} has no case {}", ev.run_id, case.name))?;
    if let Some(e) = &c.error {
        return Err(format!("run {} did not answer case {}: {e}; nothing is recorded", ev.run_id, case.name));
    }
    // `github.com/cilium/cilium v1.19.5 h1:... (...)`, as the control plane writes it.
    let module =
        ev.environment.get("cilium_operator").and_then(|s| s.split_whitespace().nth(2)).filter(|m| m.starts_with("h1:")).ok_or_else(
            || format!("run {} does not say which module its operator was built from (environment cilium_operator)", ev.run_id),
        )?;
    let date = ev.started_at.split('T').next().unwrap_or(&ev.started_at).to_string();
    let entry = format!("{{lane: operator, cilium: \"{v}\", module: \"{module}\", date: \"{date}\", run: {}}}", ev.run_id);
    let names: BTreeMap<Fingerprint, CertName> =
        ev.certificates.iter().chain(&c.certificates).map(|r| (r.leaf.sha256, r.name.clone())).collect();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut out = Recorded::default();
    let file = case.file.display().to_string();
    // Bottom-up, so the line numbers of the groups above stay right while lines are inserted.
    // Each group with what its step observed: the case's own groups the first step, each later
    // step's groups that step (a run that stopped before a step has none of it to confirm).
    let first = std::iter::once((&case.groups, &c.observed));
    let later = case.steps.iter().zip(&c.steps).map(|(s, seen)| (&s.groups, &seen.observed));
    let mut groups: Vec<(&ExpectGroup, &crate::evidence::Observed)> =
        first.chain(later).flat_map(|(gs, o)| gs.iter().map(move |g| (g, o))).filter(|(g, _)| g.range.matches(&v)).collect();
    groups.sort_by_key(|(g, _)| std::cmp::Reverse(g.line));
    for (g, observed) in groups {
        let (held_all, failures) = judge_group(case, g, observed, &names);
        if !held_all {
            for f in failures {
                out.not_rewritten.push(format!(
                    "{file}:{}: group {:?}: {} expected {}, Cilium's operator {v} answered {}; not confirmed",
                    g.line,
                    g.range.as_str(),
                    f.subject,
                    f.expected,
                    f.observed
                ));
            }
            continue;
        }
        match upsert_confirmed(&mut lines, g.line, &v.to_string(), &entry) {
            Some(at) => out.changed.push(format!("{file}:{}: group {:?}: confirmed by Cilium's operator {v}", at + 1, g.range.as_str())),
            None => out.not_rewritten.push(format!("{file}:{}: group {:?}: held, but its keys were not found", g.line, g.range.as_str())),
        }
    }
    out.text = lines.join("\n");
    if text.ends_with('\n') {
        out.text.push('\n');
    }
    Ok(out)
}

/// Whether every expectation of `g` held in `c`'s observations, and the verdicts that did not.
fn judge_group(
    case: &Case,
    g: &ExpectGroup,
    observed: &crate::evidence::Observed,
    names: &BTreeMap<Fingerprint, CertName>,
) -> (bool, Vec<judge::Verdict>) {
    // The one judge every lane, `report` and `replay` use, over every kind of expectation the
    // group holds (Gateways by name and ListenerSets included): a group is only ever marked
    // observed when all of it held.
    let verdicts = judge::judge_case(&case.gateway, &Applied::of_group(g), &observed.view(), &|fp| names.get(fp).cloned(), 1);
    // A refusal no expectation names fails the case, but speaks of no expectation of this group.
    let failures: Vec<judge::Verdict> = verdicts.into_iter().filter(|v| !v.passed() && !judge::is_unexpected_refusal(v)).collect();
    (failures.is_empty(), failures)
}

/// `answers: X` (and `how`, `alert`) as case.yaml writes what answered.
fn answer_text(r: &Reply) -> Option<String> {
    match r {
        Reply::Certificate { cert } => Some(format!("answers: {cert}")),
        Reply::Nothing { how, alert: Some(a) } => Some(format!("answers: nothing, how: {}, alert: {a}", how.as_str())),
        Reply::Nothing { how, alert: None } => Some(format!("answers: nothing, how: {}", how.as_str())),
        Reply::Http { .. } | Reply::Unknown { .. } | Reply::LocalError => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/record")
    }

    fn pinned() -> Vec<CiliumVersion> {
        crate::versions::Pins::load_default().unwrap().versions()
    }

    #[test]
    fn recorded_kind_evidence_rewrites_only_the_matching_inferred_lines() {
        let case = crate::case::load(&data().join("cases/recorded")).unwrap();
        let text = std::fs::read_to_string(&case.file).unwrap();
        let ev: Evidence = serde_json::from_str(&std::fs::read_to_string(data().join("kind-1.19.6/evidence.json")).unwrap()).unwrap();
        let r = record(&case, &text, &ev, &pinned()).unwrap();
        let stamp = format!("{{lane: kind, cilium: \"1.19.6\", date: \"{}\", run: {}}}", &ev.started_at[..10], ev.run_id);
        // The group that held: provenance observed, the run on the next line, nothing else moved.
        assert!(r.text.contains("    ref: cilium#46917\n"));
        assert!(
            r.text.contains(&format!(
                "  - cilium: \">=1.19.6, <1.20.0\"\n    provenance: observed\n    observed: {stamp}\n    ref: cilium#46917\n"
            )),
            "{}",
            r.text
        );
        assert!(r.text.contains("answers: api-backend}   # exact beats the wildcard"), "{}", r.text);
        // The contradicted probe of the one-version group: rewritten to what answered.
        assert!(
            r.text.contains(&format!(
                "{{port: 443, sni: \"www.{{apex}}\", answers: nothing, how: reset, provenance: observed, observed: {stamp}}}"
            )),
            "{}",
            r.text
        );
        // Its sibling held: marked.
        assert!(
            r.text.contains(&format!(
                "{{port: 443, sni: \"other.invalid\", answers: nothing, how: reset, provenance: observed, observed: {stamp}}}"
            )),
            "{}",
            r.text
        );
        // The group that also speaks of 1.20: listed, not rewritten.
        assert!(r.text.contains("      - {port: 443, sni: \"{apex}\", answers: nothing, how: reset}\n"), "{}", r.text);
        assert!(r.not_rewritten.iter().any(|l| l.contains("443 example.test") && l.contains("split it by hand")), "{:#?}", r.not_rewritten);
        assert!(r.not_rewritten.iter().any(|l| l.contains("listener http Accepted")), "{:#?}", r.not_rewritten);
        assert_eq!(r.changed.len(), 3, "{:#?}", r.changed);
        // Every other line, comments included, is as it was.
        for l in text.lines().filter(|l| l.trim_start().starts_with('#')) {
            assert!(r.text.contains(l), "comment lost: {l}");
        }
        assert_eq!(r.text.lines().count(), text.lines().count() + 1);
        // The rewritten case still loads, with observed where it was written.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("recorded");
        std::fs::create_dir(&dir).unwrap();
        for f in ["gateway.yaml", "routes.yaml"] {
            std::fs::copy(data().join("cases/recorded").join(f), dir.join(f)).unwrap();
        }
        std::fs::write(dir.join("case.yaml"), &r.text).unwrap();
        let again = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(again.groups[0].provenance.kind, ProvenanceKind::Observed);
        assert_eq!(again.groups[1].probes[0].provenance.observed.as_ref().unwrap().run, ev.run_id);
        assert_eq!(again.groups[2].provenance.kind, ProvenanceKind::Inferred);
        assert_eq!(again.groups[3].provenance.kind, ProvenanceKind::Reported);
    }

    /// A group holds only when all of it held: an expectation on another Gateway by name that
    /// the run did not see keeps the group inferred (before, `--record` looked at the case's own
    /// Gateway, listeners, routes, probes and Envoy only, and marked such a group observed).
    #[test]
    fn a_group_with_an_unmet_expectation_on_another_gateway_is_not_marked_observed() {
        let mut case = crate::case::load(&data().join("cases/recorded")).unwrap();
        let text = std::fs::read_to_string(&case.file).unwrap();
        let ev: Evidence = serde_json::from_str(&std::fs::read_to_string(data().join("kind-1.19.6/evidence.json")).unwrap()).unwrap();
        let held = record(&case, &text, &ev, &pinned()).unwrap();
        assert!(held.text.contains("  - cilium: \">=1.19.6, <1.20.0\"\n    provenance: observed\n"), "{}", held.text);
        let g = case.groups.iter_mut().find(|g| g.range.to_string() == ">=1.19.6, <1.20.0").unwrap();
        g.gateways.insert(
            "second".into(),
            vec![crate::case::CondExpect { type_: "Accepted".into(), want: crate::case::CondWant::parse("True").unwrap() }],
        );
        let r = record(&case, &text, &ev, &pinned()).unwrap();
        assert!(!r.text.contains("  - cilium: \">=1.19.6, <1.20.0\"\n    provenance: observed\n"), "{}", r.text);
        assert!(r.not_rewritten.iter().any(|l| l.contains("gateway second")), "{:#?}", r.not_rewritten);
    }

    #[test]
    fn model_evidence_is_never_recorded() {
        let case = crate::case::load(&data().join("cases/recorded")).unwrap();
        let text = std::fs::read_to_string(&case.file).unwrap();
        let mut ev: Evidence = serde_json::from_str(&std::fs::read_to_string(data().join("kind-1.19.6/evidence.json")).unwrap()).unwrap();
        ev.lane = Lane::Model;
        let e = record(&case, &text, &ev, &pinned()).unwrap_err();
        assert!(e.contains("only the kind lane observes Cilium"), "{e}");
        ev.lane = Lane::Kind;
        ev.cases[0].error = Some("preflight".into());
        assert!(record(&case, &text, &ev, &pinned()).unwrap_err().contains("nothing is recorded"));
    }
}
