//! Why a traffic test Cilium's published report counts as passed fails in the traffic run
//! (`--traffic`), per line: each a named finding (docs/conformance.md), an emulation gap or a
//! real difference shown from the run's own evidence (`suite.log`, `xds-bridge.jsonl`). A
//! failure not explained here is said as unexplained, never hidden.

use std::collections::BTreeMap;

use crate::case::CiliumVersion;

/// What the comparison says of a traffic failure nobody has explained yet.
pub const UNEXPLAINED: &str = "not explained yet: a finding to make (suite.log, xds-bridge.jsonl, l4-rules.jsonl and agent.log of the run)";

/// When an explanation holds: always, or only in a run without the L4 stand-in for the agent's
/// BPF load balancer (`lanes::operator::l4`), whose absence it explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    Always,
    WithoutL4StandIn,
}

/// One explained traffic failure: the line (`(1, 20)`), the feature a test needs for the
/// explanation to hold, when it holds, why.
pub type Known = ((u64, u64), &'static str, Holds, &'static str);

/// Cilium 1.20 serves L4 routes without Envoy: the operator writes no CiliumEnvoyConfig for a
/// Gateway's TCP or UDP listeners (`cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go:
/// ensureEnvoyConfig`, "No Envoy config is needed (e.g. the Gateway only has L4 TCP/UDP Routes
/// attached)") but an EndpointSlice of the Gateway's own Service naming the route's backends
/// (`reconcileEndpointSlices`; `operator/pkg/gateway-api/testdata/gateway/tcproute-simple-same-namespace/output/`),
/// which the agent's BPF load balancer serves at the Gateway's address. A traffic run stands in
/// for that load balancer (`lanes::operator::l4`); this explains a run without the stand-in only:
/// with it, an L4 failure is a finding still to make.
const L4_BY_BPF: &str = "an emulation gap: Cilium 1.20 serves TCPRoute and UDPRoute with its BPF load balancer, not Envoy (cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go: ensureEnvoyConfig writes no CiliumEnvoyConfig for L4 listeners; reconcileEndpointSlices points the Gateway's own Service at the route's backends), and the agent here runs DryMode's fake datapath (no BPF) and this run had no L4 stand-in for it (lanes::operator::l4, no l4-rules.jsonl): nothing answers the Gateway's L4 ports (suite.log: connection refused)";

/// The traffic failures explained so far.
pub const KNOWN: &[Known] =
    &[((1, 20), "TCPRoute", Holds::WithoutL4StandIn, L4_BY_BPF), ((1, 20), "UDPRoute", Holds::WithoutL4StandIn, L4_BY_BPF)];

/// Why `test` (which needs `features`, by test) fails through Cilium's agent at `version`'s
/// line, when that is known; `l4_stand_in`: whether the run had the L4 stand-in.
pub fn traffic(version: &CiliumVersion, test: &str, features: &BTreeMap<String, Vec<String>>, l4_stand_in: bool) -> Option<&'static str> {
    let (major, minor, _) = version.parts();
    let needs = features.get(test)?;
    KNOWN
        .iter()
        .filter(|(_, _, holds, _)| *holds == Holds::Always || !l4_stand_in)
        .find(|((ma, mi), f, _, _)| *ma == major && *mi == minor && needs.iter().any(|n| n == f))
        .map(|(_, _, _, why)| *why)
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
        assert_eq!(traffic(&v("1.20.0"), "TCPRouteSimpleSameNamespace", &features, false), Some(L4_BY_BPF));
        assert_eq!(traffic(&v("1.20.2"), "UDPRouteWeightedRouting", &features, false), Some(L4_BY_BPF));
        assert_eq!(traffic(&v("1.20.0"), "HTTPRouteWeight", &features, false), None);
        assert_eq!(traffic(&v("1.19.6"), "TCPRouteSimpleSameNamespace", &features, false), None);
        assert_eq!(traffic(&v("1.20.0"), "Unknown", &features, false), None);
    }

    /// With the L4 stand-in running, the 1.20 L4 explanation (nothing answers: no BPF) no longer
    /// holds: an L4 failure is a finding still to make, said as unexplained.
    #[test]
    fn the_l4_explanation_is_not_claimed_when_the_stand_in_ran() {
        let v = CiliumVersion::parse("1.20.2").unwrap();
        let features: BTreeMap<String, Vec<String>> =
            [("TCPRouteSimpleSameNamespace".to_string(), vec!["Gateway".to_string(), "TCPRoute".to_string()])].into_iter().collect();
        assert_eq!(traffic(&v, "TCPRouteSimpleSameNamespace", &features, true), None);
        assert_eq!(traffic(&v, "TCPRouteSimpleSameNamespace", &features, false), Some(L4_BY_BPF));
        assert!(UNEXPLAINED.contains("l4-rules.jsonl"));
    }
}
