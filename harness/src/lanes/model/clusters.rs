//! The upstream HTTP protocol Envoy holds for each backend cluster of a Gateway: who sets it
//! (Cilium's operator, or cilium-agent where the operator set none) and to what. Pure: from the
//! predicted Envoy listeners, which backends an HTTP route reaches and which a TLS passthrough
//! chain does.
//!
//! * [`rules::CLUSTER_PROTOCOL_OPERATOR`] mirrors `operator/pkg/model/translation/envoy_cluster.go`
//!   (`httpCluster`, `clusterMutators`) and `envoy_cluster_mutator.go` (`withProtocol`) at
//!   v1.19.5 through v1.20.2: an HTTP backend's cluster gets the operator's protocol. The lanes'
//!   chart values turn `gatewayAPI.enableAlpn` on, which sets `enable-gateway-api-app-protocol`
//!   (`install/kubernetes/cilium/templates/cilium-configmap.yaml`), so the operator's
//!   `use_downstream_protocol_config` is replaced by explicit HTTP/1.1, or explicit HTTP/2 for a
//!   backend whose Service port says `appProtocol: kubernetes.io/h2c` (a case's
//!   `backends.<name>.app_protocol`). Not modelled: a GRPCRoute backend (explicit HTTP/2; the
//!   model reads no GRPCRoute rule) and a Service the manifests write themselves with an
//!   `appProtocol`.
//! * [`rules::CLUSTER_PROTOCOL_AGENT`] mirrors `pkg/ciliumenvoyconfig/cec_resource_parser.go`
//!   (`ParseResources`, `injectCiliumUpstreamL7Filter`): a passthrough backend's cluster
//!   (`tcpCluster`, no protocol options) gets `use_downstream_protocol_config` with HTTP/2
//!   options from the agent, since every Gateway CEC has `services`. The operator's clusters
//!   carry no transport socket at these tags for the catalogue's backends, so `auto_config`
//!   (behind TLS) does not arise.

use std::collections::BTreeMap;

use super::rules::{self, Rule};
use super::translate::{ChainAction, EnvoyListener, RouteTarget, ServiceKey};
use crate::types::UpstreamProtocol;

/// The `appProtocol` Cilium's operator asks for HTTP/2 with (`AppProtocolH2C`,
/// `operator/pkg/model/translation/cec_translator.go`).
pub const H2C: &str = "kubernetes.io/h2c";

/// Every backend cluster of `envoy` with the protocol Envoy holds for it and the rule that says
/// so; `app_protocol` is the `appProtocol` of a backend Service's port, if it has one.
pub fn cluster_protocols(
    envoy: &[EnvoyListener],
    app_protocol: &dyn Fn(&ServiceKey) -> Option<String>,
) -> BTreeMap<ServiceKey, (UpstreamProtocol, &'static Rule)> {
    let mut out: BTreeMap<ServiceKey, (UpstreamProtocol, &'static Rule)> = BTreeMap::new();
    let mut passthrough: Vec<ServiceKey> = Vec::new();
    for c in envoy.iter().flat_map(|l| l.chains.iter()) {
        match &c.action {
            ChainAction::TcpProxy { backends, .. } => passthrough.extend(backends.iter().cloned()),
            ChainAction::Http { vhosts, .. } => {
                for r in vhosts.iter().flat_map(|v| v.routes.iter()) {
                    if let RouteTarget::Services { services } = &r.target {
                        for (k, _) in services {
                            let p = if app_protocol(k).as_deref() == Some(H2C) { UpstreamProtocol::Http2 } else { UpstreamProtocol::Http1 };
                            out.insert(k.clone(), (p, &rules::CLUSTER_PROTOCOL_OPERATOR));
                        }
                    }
                }
            }
        }
    }
    // desiredEnvoyCluster writes the TLS backends' clusters after the HTTP ones, by name: a
    // Service both reach ends up a tcpCluster, which the agent fills in.
    for k in passthrough {
        out.insert(k, (UpstreamProtocol::Downstream, &rules::CLUSTER_PROTOCOL_AGENT));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::model::translate::{Chain, Transport, Vhost};

    fn key(s: &str, port: u16) -> ServiceKey {
        ServiceKey { namespace: "ns".into(), service: s.into(), port }
    }

    fn listener(chains: Vec<ChainAction>) -> EnvoyListener {
        EnvoyListener {
            name: "listener".into(),
            ports: Vec::new(),
            chains: chains
                .into_iter()
                .map(|action| Chain {
                    server_names: Vec::new(),
                    transport: Transport::Tls,
                    action,
                    tls_secret: None,
                    never_served: false,
                    rule: &rules::INSECURE_CHAIN,
                })
                .collect(),
            rule: &rules::NO_SPLIT,
        }
    }

    fn http_to(k: ServiceKey) -> ChainAction {
        let route = crate::lanes::model::translate::RouteEntry::for_test(RouteTarget::Services { services: vec![(k, 1)] });
        ChainAction::Http {
            route_config: "listener-secure".into(),
            vhosts: vec![Vhost { route: "web".into(), domains: vec!["*".into()], routes: vec![route] }],
        }
    }

    #[test]
    fn the_operator_sets_http_backends_and_the_agent_fills_passthrough_ones() {
        let envoy =
            [listener(vec![http_to(key("web", 80)), ChainAction::TcpProxy { route: "api".into(), backends: vec![key("api", 443)] }])];
        let got = cluster_protocols(&envoy, &|_| None);
        assert_eq!(got[&key("web", 80)].0, UpstreamProtocol::Http1);
        assert_eq!(got[&key("web", 80)].1.id, "cluster-protocol-operator");
        assert_eq!(got[&key("api", 443)].0, UpstreamProtocol::Downstream);
        assert_eq!(got[&key("api", 443)].1.id, "cluster-protocol-agent-injected");
    }

    #[test]
    fn a_service_both_route_kinds_reach_is_the_passthrough_cluster() {
        let envoy =
            [listener(vec![http_to(key("api", 443)), ChainAction::TcpProxy { route: "api".into(), backends: vec![key("api", 443)] }])];
        assert_eq!(cluster_protocols(&envoy, &|_| None)[&key("api", 443)].0, UpstreamProtocol::Downstream);
    }

    #[test]
    fn an_h2c_app_protocol_makes_the_operator_ask_for_http2() {
        let envoy = [listener(vec![http_to(key("h2c", 8080)), http_to(key("web", 80))])];
        let got = cluster_protocols(&envoy, &|k: &ServiceKey| (k.service == "h2c").then(|| H2C.to_string()));
        assert_eq!(got[&key("h2c", 8080)], (UpstreamProtocol::Http2, &rules::CLUSTER_PROTOCOL_OPERATOR));
        assert_eq!(got[&key("web", 80)].0, UpstreamProtocol::Http1);
    }
}
