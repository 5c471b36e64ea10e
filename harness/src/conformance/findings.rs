//! Why a traffic test Cilium's published report counts as passed fails in the traffic run
//! (`--traffic`), per line: each a named finding (docs/conformance.md), an emulation gap or a
//! real difference shown from the run's own evidence (`suite.log`, `xds-bridge.jsonl`). A
//! failure not explained here is said as unexplained, never hidden.

use std::collections::BTreeMap;

use crate::case::CiliumVersion;

/// What the comparison says of a traffic failure nobody has explained yet.
pub const UNEXPLAINED: &str = "not explained yet: a finding to make (suite.log, xds-bridge.jsonl and agent.log of the run)";

/// One explained traffic failure: the line (`(1, 20)`), the feature a test needs for the
/// explanation to hold, why.
pub type Known = ((u64, u64), &'static str, &'static str);

/// Cilium 1.20 serves L4 routes without Envoy: the operator writes no CiliumEnvoyConfig for a
/// Gateway's TCP or UDP listeners (`cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go:
/// ensureEnvoyConfig`, "No Envoy config is needed (e.g. the Gateway only has L4 TCP/UDP Routes
/// attached)") but an EndpointSlice of the Gateway's own Service naming the route's backends
/// (`reconcileEndpointSlices`; `operator/pkg/gateway-api/testdata/gateway/tcproute-simple-same-namespace/output/`),
/// which the agent's BPF load balancer serves at the Gateway's address.
const L4_BY_BPF: &str = "an emulation gap: Cilium 1.20 serves TCPRoute and UDPRoute with its BPF load balancer, not Envoy (cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go: ensureEnvoyConfig writes no CiliumEnvoyConfig for L4 listeners; reconcileEndpointSlices points the Gateway's own Service at the route's backends), and the agent here runs DryMode's fake datapath (no BPF): nothing answers the Gateway's L4 ports (suite.log: connection refused)";

/// The traffic failures explained so far.
pub const KNOWN: &[Known] = &[((1, 20), "TCPRoute", L4_BY_BPF), ((1, 20), "UDPRoute", L4_BY_BPF)];

/// Why `test` (which needs `features`, by test) fails through Cilium's agent at `version`'s
/// line, when that is known.
pub fn traffic(version: &CiliumVersion, test: &str, features: &BTreeMap<String, Vec<String>>) -> Option<&'static str> {
    let (major, minor, _) = version.parts();
    let needs = features.get(test)?;
    KNOWN.iter().find(|((ma, mi), f, _)| *ma == major && *mi == minor && needs.iter().any(|n| n == f)).map(|(_, _, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The L4 explanation holds for a 1.20 test that needs TCPRoute or UDPRoute, and for
    /// nothing else: an HTTP failure at 1.20, or a TCPRoute failure at 1.19, stays unexplained.
    #[test]
    fn an_explanation_holds_only_on_its_line_for_tests_of_its_feature() {
        let v = |s: &str| CiliumVersion::parse(s).unwrap();
        let features: BTreeMap<String, Vec<String>> = [
            ("TCPRouteSimpleSameNamespace", vec!["Gateway", "TCPRoute"]),
            ("UDPRouteWeightedRouting", vec!["Gateway", "UDPRoute"]),
            ("HTTPRouteWeight", vec!["Gateway", "HTTPRoute"]),
        ]
        .into_iter()
        .map(|(t, f)| (t.to_string(), f.into_iter().map(String::from).collect()))
        .collect();
        assert_eq!(traffic(&v("1.20.0"), "TCPRouteSimpleSameNamespace", &features), Some(L4_BY_BPF));
        assert_eq!(traffic(&v("1.20.2"), "UDPRouteWeightedRouting", &features), Some(L4_BY_BPF));
        assert_eq!(traffic(&v("1.20.0"), "HTTPRouteWeight", &features), None);
        assert_eq!(traffic(&v("1.19.6"), "TCPRouteSimpleSameNamespace", &features), None);
        assert_eq!(traffic(&v("1.20.0"), "Unknown", &features), None);
    }
}
