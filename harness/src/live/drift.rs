//! Today, checked: the cluster's own Gateway statuses against the prediction at the running
//! version. Each difference is one [`Disagreement`] naming the field, said as "the model and
//! your cluster disagree" (or Cilium's operator, with `--lane operator`).

use serde_json::Value;

use super::fetch::LiveGateway;
use crate::check::{GatewayCheck, VersionResult};
use crate::evidence::Lane;
use crate::judge::ConditionObs;

/// One field where the prediction and the cluster differ.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    /// `NAMESPACE/NAME` of the Gateway.
    pub gateway: String,
    /// `status.conditions[Accepted]`, `status.listeners[https].conditions[Programmed]`,
    /// `probe 443 sni a.example.com` ...
    pub field: String,
    /// Who predicted: `model` or `operator`.
    pub predicted_by: String,
    pub predicted: String,
    pub cluster: String,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = if self.predicted_by == "operator" { "Cilium's operator" } else { "the model" };
        write!(
            f,
            "{who} and your cluster disagree: Gateway {} {}: {who} says {}, your cluster says {}",
            self.gateway, self.field, self.predicted, self.cluster
        )
    }
}

fn said(c: Option<&ConditionObs>) -> String {
    match c {
        None => "nothing".into(),
        Some(c) if c.reason.is_empty() => c.status.clone(),
        Some(c) => format!("{}/{}", c.status, c.reason),
    }
}

fn live_conditions(v: Option<&Value>) -> Vec<ConditionObs> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            ConditionObs { type_: s("type"), status: s("status"), reason: s("reason"), message: s("message"), observed_generation: None }
        })
        .collect()
}

/// Each condition type either side states, against the other's condition of that type. The
/// model states a condition only where Cilium sets one (Cilium sets `Conflicted` only when
/// True, for one), as the differential holds it to the operator over the union of types
/// (`differential::compare::conditions`): a condition the cluster has and the prediction lacks is
/// a disagreement too.
fn compare(field: &str, predicted: &[ConditionObs], cluster: &[ConditionObs], out: &mut Vec<(String, String, String)>) {
    for p in predicted {
        let c = cluster.iter().find(|c| c.type_ == p.type_);
        let same = c.is_some_and(|c| c.status == p.status && (p.reason.is_empty() || c.reason == p.reason));
        if !same {
            out.push((format!("{field}.conditions[{}]", p.type_), said(Some(p)), said(c)));
        }
    }
    for c in cluster.iter().filter(|c| !c.type_.is_empty() && !predicted.iter().any(|p| p.type_ == c.type_)) {
        out.push((format!("{field}.conditions[{}]", c.type_), said(None), said(Some(c))));
    }
}

/// The disagreements of one Gateway's prediction at the running version `r` with `live`.
pub fn statuses(r: &VersionResult, live: &LiveGateway) -> Vec<Disagreement> {
    let mut found = Vec::new();
    compare("status", &r.gateway, &live_conditions(live.status.get("conditions")), &mut found);
    let listeners: Vec<&Value> = live.status.get("listeners").and_then(Value::as_array).into_iter().flatten().collect();
    for (name, predicted) in &r.listeners {
        let cluster = listeners.iter().find(|l| l.get("name").and_then(Value::as_str) == Some(name.as_str()));
        let field = format!("status.listeners[{name}]");
        match cluster {
            None if !predicted.is_empty() => found.push((field, "a status".into(), "no status for this listener".into())),
            None => {}
            Some(l) => compare(&field, predicted, &live_conditions(l.get("conditions")), &mut found),
        }
    }
    let by = if r.answered_by == Lane::Operator { "operator" } else { "model" };
    found
        .into_iter()
        .map(|(field, predicted, cluster)| Disagreement {
            gateway: format!("{}/{}", live.namespace, live.name),
            field,
            predicted_by: by.into(),
            predicted,
            cluster,
        })
        .collect()
}

/// Every checked Gateway's statuses at `running` against the cluster's.
pub fn all_statuses(checks: &[GatewayCheck], running: &str, gateways: &[LiveGateway]) -> Vec<Disagreement> {
    let mut out = Vec::new();
    for c in checks {
        let Some(live) = gateways.iter().find(|g| g.namespace == c.derived.namespace && g.name == c.derived.gateway) else { continue };
        let Some(r) = c.versions.iter().find(|r| r.version == running) else { continue };
        if r.error.is_some() && r.gateway.is_empty() {
            continue;
        }
        out.extend(statuses(r, live));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(t: &str, s: &str, r: &str) -> ConditionObs {
        ConditionObs { type_: t.into(), status: s.into(), reason: r.into(), message: String::new(), observed_generation: None }
    }

    fn result(gateway: Vec<ConditionObs>, listeners: Vec<(String, Vec<ConditionObs>)>) -> VersionResult {
        VersionResult { gateway, listeners, ..VersionResult::blank("1.19.6") }
    }

    #[test]
    fn a_drifted_listener_condition_names_the_field() {
        let r = result(
            vec![cond("Accepted", "True", "Accepted")],
            vec![
                ("https".into(), vec![cond("Conflicted", "True", "ProtocolConflict")]),
                ("http".into(), vec![cond("Accepted", "True", "")]),
            ],
        );
        let live = LiveGateway {
            namespace: "ns".into(),
            name: "gw".into(),
            status: serde_json::json!({"conditions":[{"type":"Accepted","status":"True","reason":"Accepted"}],
                "listeners":[{"name":"https","conditions":[{"type":"Conflicted","status":"False","reason":"NoConflicts"}]},
                             {"name":"http","conditions":[{"type":"Accepted","status":"True","reason":"Accepted"}]}]}),
        };
        let d = statuses(&r, &live);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].to_string(),
            "the model and your cluster disagree: Gateway ns/gw status.listeners[https].conditions[Conflicted]: the model says True/ProtocolConflict, your cluster says False/NoConflicts"
        );
        // A condition only the cluster states: Cilium 1.19.6 marks a listener Conflicted where
        // the prediction (at 1.19.5) has no such condition.
        let extra = LiveGateway {
            status: serde_json::json!({"conditions":[{"type":"Accepted","status":"True","reason":"Accepted"}],
                "listeners":[{"name":"https","conditions":[{"type":"Conflicted","status":"True","reason":"ProtocolConflict"}]},
                             {"name":"http","conditions":[{"type":"Accepted","status":"True","reason":"Accepted"},
                                                          {"type":"Conflicted","status":"True","reason":"ProtocolConflict"}]}]}),
            ..live.clone()
        };
        let d = statuses(&r, &extra);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].to_string(),
            "the model and your cluster disagree: Gateway ns/gw status.listeners[http].conditions[Conflicted]: the model says nothing, your cluster says True/ProtocolConflict"
        );
        let none = LiveGateway { status: Value::Null, ..live };
        let d = statuses(&r, &none);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].to_string().contains("your cluster says nothing"), "{}", d[0]);
    }
}
