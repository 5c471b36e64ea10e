//! A whole case judged: every applied expectation against what was observed. The one place the
//! lanes, `report` (re-judging evidence) and `replay` (re-judging recordings) get verdicts from.

use std::collections::BTreeMap;

use super::{
    Aspect, ConditionObs, ListenerFact, ProbeFact, Refused, Verdict, judge_condition, judge_envoy_listener, judge_probe, judge_refused,
    unexpected_refusal,
};
use crate::case::{Applied, ProbeKey};
use crate::types::{CertName, Fingerprint};

/// What one case showed, in the projections the judge reads.
pub struct CaseView<'a> {
    pub gateway: Option<&'a [ConditionObs]>,
    /// Each Gateway's conditions by name, in a case with several.
    pub gateways: &'a BTreeMap<String, Vec<ConditionObs>>,
    /// ListenerSet name -> its conditions.
    pub listener_sets: &'a BTreeMap<String, Vec<ConditionObs>>,
    /// `<listenerset>/<listener>` -> that listener's conditions.
    pub listener_set_listeners: &'a BTreeMap<String, Vec<ConditionObs>>,
    pub listeners: &'a BTreeMap<String, Vec<ConditionObs>>,
    pub routes: &'a BTreeMap<String, BTreeMap<String, Vec<ConditionObs>>>,
    /// Every observation of each probe key, in time order.
    pub probes: BTreeMap<&'a ProbeKey, &'a [ProbeFact]>,
    /// `None` when no config dump was taken.
    pub envoy: Option<&'a [ListenerFact]>,
    /// What the API server refused to create (HTTP 422).
    pub refused: &'a [Refused],
    /// The Envoy clusters; `None` when the lane read none.
    pub clusters: Option<&'a [crate::observe::envoy_dump::ClusterFact]>,
}

/// Judges every expectation of `applied`, in the order the expectations are listed.
pub fn judge_case(
    gateway: &str,
    applied: &Applied,
    seen: &CaseView<'_>,
    name_of: &dyn Fn(&Fingerprint) -> Option<CertName>,
    consecutive: usize,
) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    // What the API server refused first: a refused object is absent, so its conditions below
    // read as never observed.
    for (e, prov) in &applied.refused {
        verdicts.push(judge_refused(e, seen.refused, prov));
    }
    for r in seen.refused.iter().filter(|r| !applied.refused.iter().any(|(e, _)| e.kind == r.kind && e.name == r.name)) {
        verdicts.push(unexpected_refusal(r));
    }
    for (c, prov) in &applied.gateway {
        verdicts.push(judge_condition(Aspect::Gateway, &format!("gateway {gateway}"), c, seen.gateway, None, prov));
    }
    for (g, c, prov) in &applied.gateways {
        let conds = seen.gateways.get(g).map(Vec::as_slice);
        verdicts.push(judge_condition(Aspect::Gateway, &format!("gateway {g}"), c, conds, None, prov));
    }
    for (ls, c, prov) in &applied.listener_sets {
        let conds = seen.listener_sets.get(ls).map(Vec::as_slice);
        verdicts.push(judge_condition(Aspect::Gateway, &format!("listenerset {ls}"), c, conds, None, prov));
    }
    for (ls, l, c, prov) in &applied.listener_set_listeners {
        let conds = seen.listener_set_listeners.get(&format!("{ls}/{l}")).map(Vec::as_slice);
        verdicts.push(judge_condition(Aspect::Listener, &format!("listenerset {ls} listener {l}"), c, conds, None, prov));
    }
    for (l, c, prov) in &applied.listeners {
        let conds = seen.listeners.get(l).map(Vec::as_slice);
        verdicts.push(judge_condition(Aspect::Listener, &format!("listener {l}"), c, conds, None, prov));
    }
    for (r, parent, c, prov) in &applied.routes {
        let conds = seen.routes.get(r).and_then(|p| p.get(parent)).map(Vec::as_slice);
        verdicts.push(judge_condition(Aspect::Route, &format!("route {r} on {parent}"), c, conds, None, prov));
    }
    for p in &applied.probes {
        let facts = seen.probes.get(&p.key).copied().unwrap_or(&[]);
        verdicts.push(judge_probe(p, facts, consecutive, name_of));
    }
    for (name, e) in &applied.envoy {
        verdicts.extend(judge_envoy_listener(name, e, seen.envoy));
    }
    for (key, c) in &applied.clusters {
        verdicts.push(super::judge_cluster(key, c, seen.clusters));
    }
    verdicts
}
