//! `layout-gate replay`: a kind run judged again from its raw recordings, offline. The
//! recorded watch events go through the same trackers the live wait used, the exact
//! `cilium-dbg` output and the CiliumEnvoyConfig through the same summarizer, the raw probe
//! answers through the same reduction and backend naming, and everything through the judge; the
//! result is compared with what the evidence recorded at each step.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cec::{ours_only, summary_value};
use super::driver::ProbeTargets;
use super::manifests::backend_of_pod;
use super::track::record::feed;
use super::track::{CaseConditions, GatewayAddress, PodsReady, Progress};
use crate::evidence::recording::{RecordedKind, RecordedWait, Recording, TrackerKind};
use crate::evidence::rejudge::{compare_verdicts, facts_from_raw};
use crate::evidence::{CaseEvidence, Evidence, Lane, Observed};
use crate::judge::{self, ListenerFact, Outcome, Verdict};
use crate::observe::envoy_dump;
use crate::types::BackendName;

/// One case replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReplay {
    pub case: String,
    /// What the recordings show, in the shapes the judge reads.
    pub observed: Observed,
    /// The verdicts the recordings give now.
    pub verdicts: Vec<Verdict>,
    pub outcome: Outcome,
    /// Where the replay differs from what the evidence recorded (empty: it agrees).
    pub differences: Vec<String>,
}

impl CaseReplay {
    pub fn agrees(&self) -> bool {
        self.differences.is_empty()
    }
}

/// A whole run replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReplay {
    pub run_id: String,
    pub cases: Vec<CaseReplay>,
}

impl RunReplay {
    pub fn agrees(&self) -> bool {
        self.cases.iter().all(CaseReplay::agrees)
    }
}

/// Why a run cannot be replayed at all (`replay` exits 2 on it).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    /// The evidence file does not parse: the file, the field's path and serde's message.
    #[error("{}: {}: {}", .file.display(), .source.path(), .source.inner())]
    Parse { file: PathBuf, source: serde_path_to_error::Error<serde_json::Error> },
    /// The run is not one that can be replayed; `file` when it was read from one.
    #[error("{}{why}", .file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
    Unreplayable { file: Option<PathBuf>, why: Unreplayable },
}

/// What makes a run one that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreplayable {
    #[error("lane {}: only kind and operator runs carry recordings to replay", .0.as_str())]
    Lane(Lane),
    #[error("the run did not run ({0}); there is nothing to replay")]
    NotRun(String),
    #[error("the run has no case")]
    NoCase,
}

/// Reads `dir/evidence.json` (a kind or operator run) and replays every case. An unreadable file, another
/// lane, or a run without any recorded case is an error.
pub fn replay_dir(dir: &Path) -> Result<RunReplay, ReplayError> {
    let file = if dir.is_dir() { dir.join("evidence.json") } else { dir.to_path_buf() };
    let text = crate::input::read_text(&file, crate::input::EVIDENCE)?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let ev: Evidence = match serde_path_to_error::deserialize(&mut de) {
        Ok(ev) => ev,
        Err(source) => return Err(ReplayError::Parse { file, source }),
    };
    replay(&ev).map_err(|e| match e {
        ReplayError::Unreplayable { why, .. } => ReplayError::Unreplayable { file: Some(file), why },
        other => other,
    })
}

/// Replays every case of a kind or operator run.
pub fn replay(ev: &Evidence) -> Result<RunReplay, ReplayError> {
    let refuse = |why| Err(ReplayError::Unreplayable { file: None, why });
    if !matches!(ev.lane, Lane::Kind | Lane::Operator) {
        return refuse(Unreplayable::Lane(ev.lane));
    }
    if let Some(r) = ev.not_run_reason() {
        return refuse(Unreplayable::NotRun(r.to_string()));
    }
    if ev.cases.is_empty() {
        return refuse(Unreplayable::NoCase);
    }
    Ok(RunReplay { run_id: ev.run_id.clone(), cases: ev.cases.iter().map(|c| replay_case(ev, c)).collect() })
}

/// The namespaces beyond the case's own the conditions wait read, as the live wait did
/// ([`CaseConditions::watching`]): recorded, or for a recording made before they were kept, the
/// namespaces of the events the wait recorded (it recorded only what it was fed).
fn watched(rec: &Recording, w: &RecordedWait) -> Vec<String> {
    if !rec.watched.is_empty() {
        return rec.watched.clone();
    }
    let mut out: Vec<String> = Vec::new();
    for e in &w.events {
        let (RecordedKind::Applied { object } | RecordedKind::Deleted { object }) = &e.event else { continue };
        if let Some(ns) = object.pointer("/metadata/namespace").and_then(serde_json::Value::as_str)
            && ns != rec.namespace
            && !out.iter().any(|o| o == ns)
        {
            out.push(ns.to_string());
        }
    }
    out
}

/// Replays one case: trackers, summarizer, probe reduction, judge, each compared.
pub fn replay_case(ev: &Evidence, case: &CaseEvidence) -> CaseReplay {
    let mut diffs = Vec::new();
    let Some(rec) = &case.recording else {
        return CaseReplay {
            case: case.name.clone(),
            observed: Observed::default(),
            verdicts: Vec::new(),
            outcome: Outcome::Fail,
            differences: vec!["no recording: the evidence keeps no raw observations of this case to replay".into()],
        };
    };
    let observed = rederive_step(ev, case, rec, &case.observed, &case.expectations, &mut diffs);
    let name_of = case.cert_names(&ev.certificates);
    let mut verdicts = judge::judge_case(&case.gateway, &case.expectations, &observed.view(), &name_of, case.consecutive);
    // A case with steps: each later step from its own recordings.
    for (i, step) in case.steps.iter().enumerate() {
        let label = format!("step {} ({})", i + 2, step.name);
        let Some(srec) = &step.recording else {
            diffs.push(format!("{label}: no recording: the evidence keeps no raw observations of this step to replay"));
            continue;
        };
        let mut said = Vec::new();
        let seen = rederive_step(ev, case, srec, &step.observed, &step.expectations, &mut said);
        diffs.extend(said.into_iter().map(|d| format!("{label}: {d}")));
        let judged = judge::judge_case(&case.gateway, &step.expectations, &seen.view(), &name_of, case.consecutive);
        verdicts.extend(judge::in_step(judged, i + 2, &step.name));
    }
    diffs.extend(compare_verdicts(&case.verdicts, &verdicts));
    let outcome = if case.error.is_some() || verdicts.is_empty() { Outcome::Fail } else { judge::overall(&verdicts) };
    if outcome != case.outcome {
        diffs.push(format!("result: the evidence says {:?}, the replay gives {:?}", case.outcome, outcome));
    }
    CaseReplay { case: case.name.clone(), observed, verdicts, outcome, differences: diffs }
}

/// What one step's recordings show (`rec`, beside what the evidence recorded as observed and
/// judged against `expectations`), each re-derivation that differs said in `diffs`.
fn rederive_step(
    ev: &Evidence,
    case: &CaseEvidence,
    rec: &Recording,
    recorded: &Observed,
    expectations: &crate::case::Applied,
    diffs: &mut Vec<String>,
) -> Observed {
    // The API server's refusals are raw already (its status, as it answered the apply): nothing
    // to re-derive, carried as recorded.
    // The Envoy clusters are carried as recorded too: the recording keeps no raw cluster dump
    // to re-derive them from (the facts are what `observe::envoy_dump::clusters` read).
    let mut observed =
        Observed { refused: recorded.refused.clone(), envoy_clusters: recorded.envoy_clusters.clone(), ..Observed::default() };

    // The Gateways and ListenerSets the lane watched (recordings from before it watched several
    // name none: the case's Gateway alone).
    let gateways: Vec<String> = if rec.gateways.is_empty() { vec![case.gateway.clone()] } else { rec.gateways.clone() };

    // Conditions: the recorded events through a fresh CaseConditions.
    match rec.waits.iter().find(|w| w.tracker == TrackerKind::Conditions) {
        Some(w) => {
            let mut tr = CaseConditions::new(&rec.namespace, &case.gateway, expectations, Duration::from_millis(rec.settle_ms))
                .watching(&watched(rec, w))
                .with_subjects(&gateways, &rec.listener_sets)
                .listener_sets_not_served(rec.listener_sets_not_served.as_deref());
            feed(&mut tr, w);
            let snap = tr.snapshot();
            observed.gateway = snap.gateway;
            observed.gateways = snap.gateways;
            observed.listeners = snap.listeners;
            observed.listener_sets = snap.listener_sets;
            observed.listener_set_listeners = snap.listener_set_listeners;
            observed.routes = snap.routes;
            if observed.gateway != recorded.gateway
                || observed.gateways != recorded.gateways
                || observed.listeners != recorded.listeners
                || observed.listener_sets != recorded.listener_sets
                || observed.listener_set_listeners != recorded.listener_set_listeners
                || observed.routes != recorded.routes
            {
                diffs.push("conditions: the recorded watch events give other conditions than the evidence judged".into());
            }
        }
        None if recorded.gateway.is_some()
            || !recorded.gateways.is_empty()
            || !recorded.listeners.is_empty()
            || !recorded.listener_sets.is_empty()
            || !recorded.listener_set_listeners.is_empty()
            || !recorded.routes.is_empty() =>
        {
            diffs.push("conditions: the evidence judged conditions, but no conditions wait was recorded".into());
        }
        None => {}
    }

    // Where the probes went: each to the address the recorded events give its Gateway. The
    // operator lane's Gateway addresses are not routed (its probes go to the local Envoy
    // standing for them, on loopback; `evidence::consistency` holds it to that).
    let probes_reach_the_gateway = ev.lane == Lane::Kind;
    if let Some((w, waited)) = rec.waits.iter().filter(|_| probes_reach_the_gateway).find_map(|w| match &w.tracker {
        TrackerKind::GatewayAddress { gateways } => Some((w, gateways)),
        _ => None,
    }) {
        let waited = if waited.is_empty() { vec![case.gateway.clone()] } else { waited.clone() };
        let mut tr = GatewayAddress::for_all(&rec.namespace, &waited);
        feed(&mut tr, w);
        let targets = ProbeTargets { primary: case.gateway.clone(), addresses: tr.addresses() };
        for p in &recorded.probes {
            let address = targets.address(&p.key);
            let went: Option<IpAddr> = p.address.parse::<std::net::SocketAddr>().ok().map(|a| a.ip());
            if went.is_some() && went != address {
                diffs.push(format!(
                    "probe {} went to {}, but the recorded address of Gateway {} is {}",
                    p.key,
                    p.address,
                    targets.gateway_of(&p.key),
                    address.map(|a| a.to_string()).unwrap_or_else(|| "none".into())
                ));
            }
        }
    }

    // Backend names: the kind lane's rule (pod <backend>-<hash>-<hash>) over the recorded
    // backends, on the raw answers.
    let backends: Vec<BackendName> = rec
        .waits
        .iter()
        .find_map(|w| match &w.tracker {
            TrackerKind::BackendPods { backends } => Some(backends.iter().filter_map(|b| BackendName::new(b).ok()).collect()),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(w) = rec.waits.iter().find(|w| matches!(w.tracker, TrackerKind::BackendPods { .. })) {
        let mut tr = PodsReady::new(backends.clone());
        if feed(&mut tr, w) != Progress::Done && case.error.is_none() {
            diffs.push("backend pods: the recorded events never show every backend ready, yet the case ran".into());
        }
    }
    for r in &recorded.probes {
        let mut r = r.clone();
        match facts_from_raw(&r, &BTreeMap::new()) {
            Ok(mut facts) => {
                for f in &mut facts {
                    if let Some(b) = f.served_by.as_deref().and_then(|pod| backend_of_pod(pod, &backends)) {
                        f.served_by = Some(b.to_string());
                    }
                }
                if facts != r.facts {
                    diffs.push(format!("probe {}: the raw answers give other facts than the evidence judged", r.key));
                }
                r.facts = facts;
            }
            Err(e) => {
                diffs.push(e);
                r.facts.clear();
            }
        }
        observed.probes.push(r);
    }

    // Envoy: the exact cilium-dbg output and the CEC through the summarizer.
    match envoy_views(rec) {
        Ok(Some((listeners, summary))) => {
            if !recorded.envoy_listeners.as_deref().is_some_and(|r| crate::judge::ListenerFact::all_agree(r, &listeners)) {
                diffs.push("Envoy: the recorded cilium-dbg output gives other listeners than the evidence judged".into());
            }
            if recorded.envoy_summary.as_ref() != Some(&summary) {
                diffs.push(
                    "Envoy: the recorded cilium-dbg output and CiliumEnvoyConfig give another summary than the evidence keeps".into(),
                );
            }
            observed.envoy_listeners = Some(listeners);
            observed.envoy_summary = Some(summary);
        }
        Ok(None) if recorded.envoy_listeners.is_some() => {
            diffs.push("Envoy: the evidence judged Envoy listeners, but no cilium-dbg output was recorded".into());
        }
        Ok(None) => {}
        Err(e) => diffs.push(e.to_string()),
    }

    // Cilium's agent: what the lane said of each CEC and what Envoy served, from the agent's
    // rows and the recorded xDS exchange, by the rule the lane said them with.
    if let Some(agent) = &rec.agent {
        diffs.extend(crate::evidence::agent_xds::recheck(agent));
    }

    observed
}

/// A recording of Envoy's configuration that the summarizer refuses: which one, and why.
#[derive(Debug, thiserror::Error)]
#[error("Envoy: the recorded {what} does not summarize: {source}")]
struct Unsummarized {
    what: &'static str,
    source: envoy_dump::DumpError,
}

/// The live listeners (the case's only) and the summary as evidence keeps it.
fn envoy_views(rec: &Recording) -> Result<Option<(Vec<ListenerFact>, serde_json::Value)>, Unsummarized> {
    let Some(dbg) = &rec.cilium_dbg else { return Ok(None) };
    let live = envoy_dump::summarize_bytes(dbg.output.as_bytes(), "recorded cilium-dbg output", false)
        .map_err(|source| Unsummarized { what: "cilium-dbg output", source })?;
    let live = ours_only(live, &dbg.prefixes());
    let intended = match &rec.cec {
        Some(c) => Some(
            envoy_dump::summarize_bytes(c.to_string().as_bytes(), "recorded CiliumEnvoyConfig", false)
                .map_err(|source| Unsummarized { what: "CiliumEnvoyConfig", source })?,
        ),
        None => None,
    };
    Ok(Some((ListenerFact::all(&live), summary_value(&live, intended.as_ref()))))
}

/// The replay as text: per case, whether it agrees, each difference, each failing verdict.
pub fn render(r: &RunReplay) -> String {
    let mut out = format!("replay of run {} (offline, from its recordings)\n", r.run_id);
    for c in &r.cases {
        let mark = match (c.agrees(), c.outcome) {
            (true, Outcome::Pass) => "ok  ",
            (true, Outcome::Fail) => "FAIL",
            (false, _) => "DIFF",
        };
        let agreement = if c.agrees() { "agrees with the recorded verdicts" } else { "DIFFERS from the recorded evidence" };
        out.push_str(&format!("{mark} {}: {} verdict(s) re-derived, {agreement}\n", c.case, c.verdicts.len()));
        for d in &c.differences {
            out.push_str(&format!("     differs: {}\n", d.replace('\n', "\n       ")));
        }
        for v in c.verdicts.iter().filter(|v| !v.passed()) {
            out.push_str(&format!("     {}\n", v.line().replace('\n', "\n     ")));
        }
    }
    out
}

#[cfg(test)]
mod tests;
