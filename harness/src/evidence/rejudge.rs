//! Re-judging evidence: every verdict recomputed from the raw observations and the stored
//! expectations, with the pure judge, and compared with what the file claims. Pure; `report`
//! lists what comes back as problems, `replay` does the same after re-running the trackers.

use std::collections::BTreeMap;

use super::{CaseEvidence, Evidence, ProbeRecord, RunStatus};
use crate::judge::{self, ListenerFact, Outcome, ProbeFact, Verdict};
use crate::observe::envoy_dump::DumpSummary;
use crate::observe::probe::{Observation, PlainObservation};

/// One way a file's claims do not follow from its own observations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The case, or `None` for the run as a whole.
    pub case: Option<String>,
    pub what: String,
}

/// Re-judges every case of `ev` in place: its verdicts and outcome become what the
/// observations give, and every way the file's claims differed comes back.
pub fn correct(ev: &mut Evidence) -> Vec<Mismatch> {
    let mismatches = rejudge(ev);
    let certs = ev.certificates.clone();
    for c in &mut ev.cases {
        let r = rejudge_case(c, &certs);
        c.verdicts = r.verdicts;
        c.outcome = r.outcome;
    }
    mismatches
}

/// Every mismatch in a run.
pub fn rejudge(ev: &Evidence) -> Vec<Mismatch> {
    let mut out = Vec::new();
    if let RunStatus::NotRun { .. } = ev.status
        && !ev.cases.is_empty()
    {
        out.push(Mismatch {
            case: None,
            what: format!("the run says it did not run, yet it carries {} case(s) with verdicts", ev.cases.len()),
        });
    }
    for c in &ev.cases {
        out.extend(rejudge_case(c, &ev.certificates).mismatches.into_iter().map(|what| Mismatch { case: Some(c.name.clone()), what }));
    }
    out
}

/// The judge's facts of one probe, from its raw observations (and the lane's backend names).
pub fn facts_from_raw(record: &ProbeRecord, served_by: &BTreeMap<String, String>) -> Result<Vec<ProbeFact>, String> {
    record
        .observations
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            let fact = if record.key.plain {
                serde_json::from_value::<PlainObservation>(raw.clone()).map(|o| ProbeFact::from_plain(&o))
            } else {
                serde_json::from_value::<Observation>(raw.clone()).map(|o| ProbeFact::from_observation(&o))
            };
            let mut fact = fact.map_err(|e| format!("probe {}: observation {} is not a probe observation: {e}", record.key, i + 1))?;
            if let Some(b) = fact.served_by.as_ref().and_then(|s| served_by.get(s)) {
                fact.served_by = Some(b.clone());
            }
            Ok(fact)
        })
        .collect()
}

/// The judge's Envoy facts, from the dump summary the evidence keeps.
pub fn listeners_from_summary(summary: &serde_json::Value) -> Result<Vec<ListenerFact>, String> {
    let s: DumpSummary = serde_json::from_value(summary.clone()).map_err(|e| format!("the config-dump summary does not read: {e}"))?;
    Ok(ListenerFact::all(&s))
}

/// One case judged again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejudged {
    pub verdicts: Vec<Verdict>,
    pub outcome: Outcome,
    /// Facts that do not follow from the raw observations, verdicts that do not follow from
    /// the facts and the expectations, an outcome that does not follow from the verdicts.
    pub mismatches: Vec<String>,
}

/// Re-judges one case from its raw observations and stored expectations: the first step from
/// the case's own, each later step from its [`super::StepEvidence`].
pub fn rejudge_case(case: &CaseEvidence, run_certs: &[crate::render::certs::CertRecord]) -> Rejudged {
    let mut out = Vec::new();
    let name_of = case.cert_names(run_certs);
    let observed = rederive(&case.observed, &case.served_by, &mut out);
    // Cilium's agent's part: what the lane said of each CEC, from its rows and the xDS exchange.
    if let Some(agent) = case.recording.as_ref().and_then(|r| r.agent.as_ref()) {
        out.extend(super::agent_xds::recheck(agent));
    }
    let mut verdicts = judge::judge_case(&case.gateway, &case.expectations, &observed.view(), &name_of, case.consecutive);
    for (i, step) in case.steps.iter().enumerate() {
        let mut said = Vec::new();
        if let Some(agent) = step.recording.as_ref().and_then(|r| r.agent.as_ref()) {
            said.extend(super::agent_xds::recheck(agent));
        }
        let observed = rederive(&step.observed, &case.served_by, &mut said);
        out.extend(said.into_iter().map(|m| format!("step {} ({}): {m}", i + 2, step.name)));
        let judged = judge::judge_case(&case.gateway, &step.expectations, &observed.view(), &name_of, case.consecutive);
        verdicts.extend(judge::in_step(judged, i + 2, &step.name));
    }
    out.extend(compare_verdicts(&case.verdicts, &verdicts));
    let outcome = if case.error.is_some() || verdicts.is_empty() { Outcome::Fail } else { judge::overall(&verdicts) };
    if outcome != case.outcome {
        out.push(format!("the case's result is {}, but its verdicts make it {}", word(case.outcome), word(outcome)));
    }
    Rejudged { verdicts, outcome, mismatches: out }
}

/// `recorded` with its facts derived again from the raw observations (each probe's answers,
/// the config-dump summary), saying in `out` where the recorded facts do not follow.
fn rederive(recorded: &super::Observed, served_by: &BTreeMap<String, String>, out: &mut Vec<String>) -> super::Observed {
    let mut observed = recorded.clone();
    for r in &mut observed.probes {
        match facts_from_raw(r, served_by) {
            Ok(facts) => {
                if facts != r.facts {
                    out.push(format!(
                        "probe {}: the recorded facts ({}) do not follow from its {} raw observation(s) ({})",
                        r.key,
                        fact_words(&r.facts),
                        r.observations.len(),
                        fact_words(&facts)
                    ));
                }
                r.facts = facts;
            }
            Err(e) => {
                out.push(e);
                r.facts.clear();
            }
        }
    }
    match (&recorded.envoy_summary, &recorded.envoy_listeners) {
        (Some(summary), recorded) => match listeners_from_summary(summary) {
            Ok(listeners) => {
                if !recorded.as_deref().is_some_and(|r| crate::judge::ListenerFact::all_agree(r, &listeners)) {
                    out.push("the Envoy listeners judged do not follow from the config-dump summary".into());
                }
                observed.envoy_listeners = Some(listeners);
            }
            Err(e) => {
                out.push(e);
                observed.envoy_listeners = None;
            }
        },
        (None, Some(_)) => {
            out.push("Envoy listeners were judged, but the config-dump summary they come from is not in the evidence".into());
            observed.envoy_listeners = None;
        }
        (None, None) => {}
    }
    observed
}

/// Each verdict the file claims that the judge does not give, and the other way round.
pub fn compare_verdicts(claimed: &[Verdict], judged: &[Verdict]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, j) in judged.iter().enumerate() {
        match claimed.get(i) {
            Some(c) if c == j => {}
            Some(c) if c.subject == j.subject && c.outcome == j.outcome && c.observed == j.observed => {
                out.push(format!("{}: the file says {:?}, re-judged {:?}", j.subject, c.detail, j.detail));
            }
            Some(c) => out.push(format!(
                "{}: the file says {} (observed {}), re-judged {} (observed {})",
                j.subject,
                word(c.outcome),
                c.observed,
                word(j.outcome),
                j.observed
            )),
            None => out.push(format!(
                "{}: re-judged {} (observed {}), but the file has no such verdict",
                j.subject,
                word(j.outcome),
                j.observed
            )),
        }
    }
    for c in claimed.iter().skip(judged.len()) {
        out.push(format!("{}: the file claims {}, but no stored expectation gives this verdict", c.subject, word(c.outcome)));
    }
    out
}

fn word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "FAIL",
    }
}

fn fact_words(facts: &[ProbeFact]) -> String {
    if facts.is_empty() {
        return "none".into();
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for f in facts {
        *counts.entry(f.outcome.as_str()).or_default() += 1;
    }
    counts.iter().map(|(o, n)| format!("{n} {o}")).collect::<Vec<_>>().join(", ")
}

/// The backend names a lane gave what answers said (a pod name -> `api`), read off its probe
/// records: each raw observation's own `served_by` beside the fact's.
pub fn served_by_map(records: &[ProbeRecord]) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for r in records {
        let Ok(raw) = facts_from_raw(r, &BTreeMap::new()) else { continue };
        for (raw, fact) in raw.iter().zip(&r.facts) {
            if let (Some(said), Some(backend)) = (&raw.served_by, &fact.served_by)
                && said != backend
            {
                map.insert(said.clone(), backend.clone());
            }
        }
    }
    map
}
