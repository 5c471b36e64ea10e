//! What Cilium's agent does when Envoy refuses a listener: it withdraws every resource of the
//! listener's CiliumEnvoyConfig (CEC), not only the refused listener.
//!
//! The agent sends a CEC's resources to Envoy as one update and waits for Envoy's answer. A NACK
//! completes that update with an error (cilium@v1.19.6 `pkg/envoy/xds/ack.go`), and the revert
//! the update registered (`pkg/envoy/xds_server.go` `UpdateEnvoyResources`: one revert function
//! per listener, cluster, route and secret it upserted) puts back what the CEC had before: for a
//! CEC Envoy never accepted, nothing. The agent then installs no proxy redirect for the CEC's
//! Services (`pkg/ciliumenvoyconfig/reconciler.go`) and retries after
//! `envoy-config-retry-interval`, with the same answer. At cilium@v1.20.2 the split server is the
//! same code and the ADS server restores the resources an update changed
//! (`pkg/envoy/xds_server_ads.go` `buildRevert`), which for a new CEC is the same withdrawal.
//! Seen on Cilium's own agent through the operator lane (trial
//! `operator_agent::1.19.6::a_listener_envoy_refuses_is_reverted_and_said`).
//!
//! Upstream Envoy given the same listeners by file keeps each listener it accepts and marks only
//! the refused one (`error_state`): this module is what the model and the emulated agent step
//! share to answer as the agent does. A CEC is recognised by its resources' names: the agent
//! qualifies each as `<cec namespace>/<cec name>/<name>` (`pkg/policy/api/utils.go`
//! `ResourceQualifiedName`), so a listener's CEC is its name up to the last `/`.

use std::collections::BTreeSet;

use super::admin::{AdminClient, AdminError};

/// The CEC a qualified listener name belongs to (with any scope prefix the caller put before
/// the qualified name: the same prefix for every listener of one CEC).
pub fn cec_of(listener: &str) -> &str {
    listener.rsplit_once('/').map_or(listener, |(cec, _)| cec)
}

/// The listeners of `listeners` the agent withdraws once Envoy refused `refused`: every listener
/// of a CEC one of whose listeners was refused.
pub fn withdrawn<'a>(refused: &[String], listeners: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let cecs: BTreeSet<&str> = refused.iter().map(|r| cec_of(r)).collect();
    listeners.into_iter().filter(|l| cecs.contains(cec_of(l))).map(str::to_string).collect()
}

/// The names of the dynamic listeners Envoy refused (`error_state` in its dump), with Envoy's
/// reason.
pub async fn refused(admin: &AdminClient) -> Result<Vec<(String, String)>, AdminError> {
    let dump = admin.config_dump_json(Some("resource=dynamic_listeners")).await?;
    Ok(refused_in(&dump))
}

fn refused_in(dump: &serde_json::Value) -> Vec<(String, String)> {
    let configs = dump.get("configs").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
    configs
        .iter()
        .filter_map(|c| {
            let err = c.get("error_state")?;
            let name = c.get("name").and_then(serde_json::Value::as_str)?;
            let details = err.get("details").and_then(serde_json::Value::as_str).unwrap_or_default();
            Some((name.to_string(), details.to_string()))
        })
        .collect()
}

/// What a caller says of a withdrawal, for the notes of its output.
pub fn say(refused: &[(String, String)], withdrawn: &BTreeSet<String>) -> Vec<String> {
    let cecs: BTreeSet<&str> = refused.iter().map(|(r, _)| cec_of(r)).collect();
    cecs.into_iter()
        .map(|cec| {
            let why: Vec<String> =
                refused.iter().filter(|(r, _)| cec_of(r) == cec).map(|(r, d)| format!("{r} ({})", first_line(d))).collect();
            let gone: Vec<&str> = withdrawn.iter().filter(|w| cec_of(w) == cec).map(String::as_str).collect();
            format!(
                "Envoy refused listener {}; Cilium's agent reverts every resource of CiliumEnvoyConfig {cec} on that NACK, so none of its listeners is served (withdrawn: {})",
                why.join(", "),
                gone.join(", ")
            )
        })
        .collect()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_listener_takes_every_listener_of_its_cec_and_no_other() {
        let names = ["ns/cilium-gateway-a/listener", "ns/cilium-gateway-a/listener-443", "ns/cilium-gateway-b/listener"];
        let gone = withdrawn(&["ns/cilium-gateway-a/listener".to_string()], names);
        assert_eq!(gone.into_iter().collect::<Vec<_>>(), ["ns/cilium-gateway-a/listener", "ns/cilium-gateway-a/listener-443"]);
        assert!(withdrawn(&[], names).is_empty());
        // A scope prefix (an Envoy serving several cases) is part of the CEC's name.
        let scoped = ["c1-ns/cilium-gateway-a/listener", "c2-ns/cilium-gateway-a/listener"];
        assert_eq!(withdrawn(&["c1-ns/cilium-gateway-a/listener".to_string()], scoped).len(), 1);
    }

    #[test]
    fn only_listeners_in_error_state_are_refused() {
        let dump = json!({"configs": [
            {"name": "ns/gw/listener", "error_state": {"details": "error adding listener: 'x' has the same matching rules\nmore"}},
            {"name": "ns/gw/listener-443", "active_state": {}},
        ]});
        let refused = refused_in(&dump);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, "ns/gw/listener");
        let said = say(&refused, &withdrawn(&["ns/gw/listener".into()], ["ns/gw/listener", "ns/gw/listener-443"]));
        assert_eq!(said.len(), 1);
        assert!(said[0].contains("same matching rules") && !said[0].contains("more") && said[0].contains("ns/gw/listener-443"), "{said:?}");
    }
}
