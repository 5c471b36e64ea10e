//! The CiliumEnvoyConfig Cilium wrote for each Gateway of a case (`cilium-gateway-<name>`: what
//! it intends), and what every lane's live Envoy view shares: Envoy names a CEC's listeners
//! `<ns>/<cec>/<listener>`, so each live listener is attributed to its Gateway by that prefix
//! ([`crate::judge::ListenerFact::gateway`]), and `<gateway>/<listener>` keys find theirs. Where
//! the live listeners come from is the lane's data plane.

use serde_json::Value;

use super::driver::{Driver, ObjRef, Selection};
use super::failure::PhaseError;
use crate::evidence::recording::{Recording, recorded_object};
use crate::judge::ListenerFact;
use crate::observe::envoy_dump::{self, DumpSummary};

/// The listeners of a live dump whose name starts with one of `prefixes` (`<ns>/<cec>/`): the
/// case's.
pub fn ours_only(summary: DumpSummary, prefixes: &[String]) -> DumpSummary {
    DumpSummary { listeners: summary.listeners.into_iter().filter(|l| prefixes.iter().any(|p| l.name.starts_with(p.as_str()))).collect() }
}

/// The live summary as evidence keeps it: what is judged, with Cilium's intent (the CECs
/// summarized) riding along under `intended`.
pub fn summary_value(live: &DumpSummary, intended: Option<&DumpSummary>) -> Value {
    let mut v = serde_json::to_value(live).unwrap_or(Value::Null);
    if let (Some(obj), Some(i)) = (v.as_object_mut(), intended) {
        obj.insert("intended".into(), serde_json::to_value(i).unwrap_or(Value::Null));
    }
    v
}

/// The CECs as recorded: the one CEC of a case with one Gateway (as before several existed),
/// a `List` of them with several.
pub fn recorded_cecs(cecs: &[Value], several: bool) -> Option<Value> {
    match (cecs, several) {
        ([], _) => None,
        ([one], false) => Some(recorded_object(one)),
        (all, _) => {
            Some(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": all.iter().map(recorded_object).collect::<Vec<_>>()}))
        }
    }
}

/// What the Envoy phase found: the judged facts and summary, and the raw texts for diagnostics.
#[derive(Default)]
pub struct EnvoyViews {
    pub listeners: Option<Vec<ListenerFact>>,
    pub summary: Option<Value>,
    pub raw_dump: Option<String>,
    pub notes: Vec<String>,
    /// The case's Envoy clusters (those of its CECs), where the lane reads them: the operator
    /// lane from its local Envoy; the kind lane reads none (`cilium-dbg` lists listeners only).
    pub clusters: Option<Vec<crate::observe::envoy_dump::ClusterFact>>,
}

/// The CEC of Gateway `gw`: named `cilium-gateway-<gw>`, or found by its Gateway owner when
/// Cilium shortened a long name.
async fn cec_of<D: Driver>(d: &mut D, ns: &str, gw: &str, all: &mut Option<Vec<Value>>) -> Result<Option<Value>, PhaseError> {
    const P: &str = "Envoy config";
    let name = crate::judge::cilium_gateway_resource(gw);
    let cec = d.get(&ObjRef::new("cilium.io/v2", "CiliumEnvoyConfig", Some(ns), &name)).await.map_err(|e| PhaseError::step(P, e))?;
    if cec.is_some() || d.dry() {
        return Ok(cec);
    }
    if all.is_none() {
        *all = Some(d.list(&Selection::all("cilium.io/v2", "CiliumEnvoyConfig", Some(ns))).await.map_err(|e| PhaseError::step(P, e))?);
    }
    Ok(all
        .iter()
        .flatten()
        .find(|c| {
            c.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|o| o.get("kind").and_then(Value::as_str) == Some("Gateway") && o.get("name").and_then(Value::as_str) == Some(gw))
        })
        .cloned())
}

/// What Cilium intended for a case's Gateways: each one's CiliumEnvoyConfig (recorded into
/// `rec.cec`), the listener-name prefix each Gateway's listeners carry in Envoy
/// (`<ns>/<cec>/`), and those whose CEC holds listeners (a live read waits for them).
pub struct Intended {
    pub cecs: Vec<Value>,
    /// One per Gateway, in the order given.
    pub prefixes: Vec<String>,
    /// The prefixes of the Gateways whose CEC holds any listener.
    pub wanted: Vec<String>,
    /// The CECs summarized (what `intended` shows in the evidence).
    pub summary: Option<DumpSummary>,
    pub notes: Vec<String>,
}

/// Reads the CiliumEnvoyConfig of every Gateway of `gateways` (the case's own first) in `ns`,
/// recording them into `rec`.
pub async fn read_intended<D: Driver>(d: &mut D, ns: &str, gateways: &[String], rec: &mut Recording) -> Result<Intended, PhaseError> {
    const P: &str = "Envoy config";
    let several = gateways.len() > 1;
    let mut all = None;
    let mut out = Intended { cecs: Vec::new(), prefixes: Vec::new(), wanted: Vec::new(), summary: None, notes: Vec::new() };
    for gw in gateways {
        let cec = cec_of(d, ns, gw, &mut all).await?;
        let name = cec.as_ref().and_then(|c| c.pointer("/metadata/name")).and_then(Value::as_str).map(str::to_string);
        let prefix = format!("{ns}/{}/", name.unwrap_or_else(|| crate::judge::cilium_gateway_resource(gw)));
        match &cec {
            Some(c) => {
                let s = envoy_dump::summarize_bytes(c.to_string().as_bytes(), &format!("CiliumEnvoyConfig of Gateway {ns}/{gw}"), false)
                    .map_err(|e| PhaseError::new(P, format!("summarizing the CiliumEnvoyConfig of Gateway {ns}/{gw}: {e}")))?;
                if !s.listeners.is_empty() {
                    out.wanted.push(prefix.clone());
                }
                out.cecs.push(c.clone());
            }
            None if d.dry() => {}
            None => out.notes.push(format!("no CiliumEnvoyConfig for Gateway {ns}/{gw}")),
        }
        out.prefixes.push(prefix);
    }
    rec.cec = recorded_cecs(&out.cecs, several);
    out.summary = match &rec.cec {
        Some(c) => Some(
            envoy_dump::summarize_bytes(c.to_string().as_bytes(), &format!("CiliumEnvoyConfig(s) in {ns}"), false)
                .map_err(|e| PhaseError::new(P, format!("summarizing the CiliumEnvoyConfig: {e}")))?,
        ),
        None => None,
    };
    if out.wanted.is_empty() {
        out.wanted = out.prefixes.clone();
    }
    Ok(out)
}

/// The judged facts and the evidence summary of a live read: the case's listeners only, with
/// Cilium's intent riding along.
pub fn live_views(summary: DumpSummary, intended: &Intended, raw: String, notes: Vec<String>) -> EnvoyViews {
    let ours = ours_only(summary, &intended.prefixes);
    EnvoyViews {
        listeners: Some(ListenerFact::all(&ours)),
        summary: Some(summary_value(&ours, intended.summary.as_ref())),
        raw_dump: Some(raw),
        notes,
        clusters: None,
    }
}

/// The clusters of a dump whose name starts with one of `prefixes` (`<ns>/<cec>/`): the case's.
pub fn our_clusters(
    clusters: Vec<crate::observe::envoy_dump::ClusterFact>,
    prefixes: &[String],
) -> Vec<crate::observe::envoy_dump::ClusterFact> {
    clusters.into_iter().filter(|c| prefixes.iter().any(|p| c.name.starts_with(p.as_str()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listeners_are_kept_and_attributed_per_gateway() {
        let configs: Vec<Value> = ["gw", "second", "elsewhere"]
            .iter()
            .map(|g| {
                json!({
                "@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener",
                "name": format!("ns/cilium-gateway-{g}/listener"),
                "active_state": {"listener": {"name": format!("ns/cilium-gateway-{g}/listener"), "filterChains": []}}})
            })
            .collect();
        let dump = json!({ "configs": configs });
        let s = envoy_dump::summarize_bytes(dump.to_string().as_bytes(), "test", false).unwrap();
        let prefixes = ["ns/cilium-gateway-gw/".to_string(), "ns/cilium-gateway-second/".to_string()];
        let facts = ListenerFact::all(&ours_only(s.clone(), &prefixes));
        assert_eq!(facts.iter().map(|f| f.gateway.as_deref()).collect::<Vec<_>>(), [Some("gw"), Some("second")]);
        assert!(facts[1].answers_to("second/listener") && !facts[0].answers_to("second/listener"));
        // The case's Gateway alone (the lane before): the second Gateway's listener is not ours.
        assert_eq!(ours_only(s, &prefixes[..1]).listeners.len(), 1);
    }

    #[test]
    fn one_cec_is_kept_as_is_and_several_as_a_list() {
        let cec = |n: &str| json!({"kind": "CiliumEnvoyConfig", "metadata": {"name": n, "namespace": "ns", "managedFields": []}});
        assert_eq!(
            recorded_cecs(&[cec("a")], false),
            Some(json!({"kind": "CiliumEnvoyConfig", "metadata": {"name": "a", "namespace": "ns"}}))
        );
        let list = recorded_cecs(&[cec("a"), cec("b")], true).unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(2));
        assert_eq!(recorded_cecs(&[], true), None);
    }
}
