//! Both Envoy views of a case, for every Gateway it has: the CiliumEnvoyConfig Cilium wrote for
//! each (`cilium-gateway-<name>`: what it intends), and the listeners Envoy really holds, read
//! with `cilium-dbg` in a Cilium agent. Envoy names a CEC's listeners `<ns>/<cec>/<listener>`,
//! so each live listener is attributed to its Gateway by that prefix
//! ([`crate::judge::ListenerFact::gateway`]), and `<gateway>/<listener>` keys find theirs.

use std::time::Instant;

use serde_json::Value;

use super::driver::{Driver, ObjRef, Selection};
use super::failure::PhaseError;
use super::timeouts::KindTimeouts;
use crate::evidence::recording::{RecordedExec, Recording, recorded_object};
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

/// Reads both views for `gateways` (the case's own first) in namespace `ns`, recording the CECs
/// and the exact `cilium-dbg` output into `rec`.
pub async fn read<D: Driver>(
    d: &mut D,
    ns: &str,
    gateways: &[String],
    t: &KindTimeouts,
    rec: &mut Recording,
) -> Result<EnvoyViews, PhaseError> {
    const P: &str = "Envoy config";
    let mut out = EnvoyViews::default();
    let several = gateways.len() > 1;
    let mut all = None;
    let mut cecs = Vec::new();
    // Per Gateway: the prefix its listeners carry, and whether its CEC holds any listener (then
    // the live read waits for them).
    let mut prefixes = Vec::new();
    let mut wanted = Vec::new();
    for gw in gateways {
        let cec = cec_of(d, ns, gw, &mut all).await?;
        let name = cec.as_ref().and_then(|c| c.pointer("/metadata/name")).and_then(Value::as_str).map(str::to_string);
        let prefix = format!("{ns}/{}/", name.unwrap_or_else(|| crate::judge::cilium_gateway_resource(gw)));
        match &cec {
            Some(c) => {
                let s = envoy_dump::summarize_bytes(c.to_string().as_bytes(), &format!("CiliumEnvoyConfig of Gateway {ns}/{gw}"), false)
                    .map_err(|e| PhaseError::new(P, format!("summarizing the CiliumEnvoyConfig of Gateway {ns}/{gw}: {e}")))?;
                if !s.listeners.is_empty() {
                    wanted.push(prefix.clone());
                }
                cecs.push(c.clone());
            }
            None if d.dry() => {}
            None => out.notes.push(format!("no CiliumEnvoyConfig for Gateway {ns}/{gw}")),
        }
        prefixes.push(prefix);
    }
    rec.cec = recorded_cecs(&cecs, several);
    let intended = match &rec.cec {
        Some(c) => Some(
            envoy_dump::summarize_bytes(c.to_string().as_bytes(), &format!("CiliumEnvoyConfig(s) in {ns}"), false)
                .map_err(|e| PhaseError::new(P, format!("summarizing the CiliumEnvoyConfig: {e}")))?,
        ),
        None => None,
    };

    // Live: the agent on the node holding the case's Gateway Service's L2 announcement lease;
    // any agent otherwise (every node's Envoy receives the same listeners, every Gateway's).
    let primary_cec = crate::judge::cilium_gateway_resource(&gateways[0]);
    let lease = d
        .get(&ObjRef::new("coordination.k8s.io/v1", "Lease", Some("kube-system"), &format!("cilium-l2announce-{ns}-{primary_cec}")))
        .await
        .map_err(|e| PhaseError::step(P, e))?;
    let node = lease.as_ref().and_then(|l| l.pointer("/spec/holderIdentity")).and_then(Value::as_str).map(str::to_string);
    let agents =
        d.list(&Selection::labelled("v1", "Pod", Some("kube-system"), "k8s-app=cilium")).await.map_err(|e| PhaseError::step(P, e))?;
    let on_node = |p: &&Value| node.as_deref().is_none_or(|n| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(n));
    let agent = agents
        .iter()
        .find(on_node)
        .or(agents.first())
        .and_then(|p| p.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let agent = match (agent, d.dry()) {
        (Some(a), _) => a,
        (None, true) => "<cilium agent pod on the Gateway's node>".to_string(),
        (None, false) => return Err(PhaseError::new(P, "no Cilium agent pod (k8s-app=cilium) in kube-system")),
    };
    if node.is_none() && !d.dry() {
        out.notes.push(format!("no L2 announcement lease for {ns}/{primary_cec}; read Envoy's listeners in agent {agent}"));
    }
    // One read for every Gateway: with one, exactly its CEC's listeners; with several, every
    // Gateway CEC of the namespace, kept by prefix below.
    let filter = if several { format!("{ns}/cilium-gateway-.*") } else { format!("{}.*", prefixes[0]) };
    let command: Vec<String> =
        ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", &filter].iter().map(|s| s.to_string()).collect();
    let pod = ObjRef::new("v1", "Pod", Some("kube-system"), &agent);
    if wanted.is_empty() {
        wanted = prefixes.clone();
    }
    // The agent may still be pushing the CECs to Envoy: read until every Gateway whose CEC holds
    // listeners shows some (without any CEC: until any of ours shows), within the named wait.
    let started = Instant::now();
    loop {
        let at = crate::evidence::now_rfc3339();
        let raw = d.exec(&pod, "cilium-agent", &command, t.envoy_config).await.map_err(|e| PhaseError::step(P, e))?;
        if d.dry() {
            return Ok(out);
        }
        let summary = envoy_dump::summarize_bytes(raw.as_bytes(), &format!("cilium-dbg envoy admin config listeners ({agent})"), false)
            .map_err(|e| {
                PhaseError::new(P, format!("summarizing the live listeners: {e}")).with_state(raw.chars().take(2000).collect::<String>())
            })?;
        let ours = ours_only(summary, &prefixes);
        rec.cilium_dbg = Some(RecordedExec {
            pod: agent.clone(),
            container: "cilium-agent".into(),
            command: command.clone(),
            at,
            output: raw.clone(),
            listener_prefix: prefixes[0].clone(),
            other_prefixes: prefixes[1..].to_vec(),
        });
        out.raw_dump = Some(raw);
        let shown = |p: &String| ours.listeners.iter().any(|l| l.name.starts_with(p.as_str()));
        let complete = if cecs.is_empty() { !ours.listeners.is_empty() } else { wanted.iter().all(shown) };
        if complete || started.elapsed() >= t.envoy_config.limit {
            out.listeners = Some(ListenerFact::all(&ours));
            out.summary = Some(summary_value(&ours, intended.as_ref()));
            return Ok(out);
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
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
