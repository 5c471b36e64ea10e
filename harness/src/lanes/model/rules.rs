//! The model's rules, each with the Cilium versions it holds for and where it comes from.
//! Every predicted chain and status names the rule that produced it, so `explain` can say why.

use crate::case::{CiliumVersion, ProvenanceKind, VersionRange};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    /// Semver range of Cilium versions the rule holds for.
    pub versions: &'static str,
    pub provenance: ProvenanceKind,
    /// Issue, PR or reference section.
    pub source: &'static str,
    pub says: &'static str,
}

impl Rule {
    pub fn applies(&self, v: &CiliumVersion) -> bool {
        // The ranges below are constants checked by a unit test, so parsing cannot fail here.
        VersionRange::parse(self.versions).map(|r| r.matches(v)).unwrap_or(false)
    }
}

macro_rules! rules {
    ($($name:ident = $id:literal, $versions:literal, $prov:ident, $source:literal, $says:literal;)*) => {
        $(pub const $name: Rule = Rule { id: $id, versions: $versions, provenance: ProvenanceKind::$prov, source: $source, says: $says };)*
        /// Every rule, for `explain` and for the test that checks the ranges.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    INSECURE_CHAIN = "insecure-chain", "*", Source, "cilium-gateway.md §1-2 (ingestion, envoy_listener.go)",
        "one raw_buffer chain to the HCM listener-insecure on the Envoy listener that carries plain-HTTP ports; every HTTP, HTTPS and TLS listener counts as an HTTP port";
    HTTPS_PER_SECRET = "https-chain-per-secret", "*", Source, "cilium-gateway.md §2 (httpsFilterChains)",
        "one TLS-terminating chain per certificate Secret, server_names = the sorted listener hostnames using it";
    HTTPS_CATCH_ALL = "https-catch-all", "*", Source, "cilium-gateway.md §2 (toFilterChainMatch)",
        "an HTTPS listener without hostname makes its Secret's chain match every SNI (no server_names)";
    PASSTHROUGH_PER_ROUTE = "passthrough-chain-per-route", "*", Source, "cilium-gateway.md §2 (tlsPassthroughFilterChains)",
        "one tcp_proxy chain per TLS listener and attached route, server_names from ComputeHosts";
    PASSTHROUGH_NO_BACKENDS = "passthrough-no-backends", "*", Source, "cilium-gateway.md §2",
        "a route whose backends are all missing (no Service, or cross-namespace without ReferenceGrant) makes no chain";
    PASSTHROUGH_NO_ROUTES = "passthrough-no-routes", "*", Source, "cilium-gateway.md §2 (0ac732c4f3); cozystack#3342",
        "a TLS passthrough listener without routes makes no chain";
    COMPUTE_HOSTS = "compute-hosts", "*", Source, "cilium-gateway.md §3 (ComputeHosts, checkHostNameIsolation)",
        "route hostnames are narrowed by the listener hostname; names another same-protocol listener claims are dropped";
    SINGLE_LISTENER = "single-listener", "<1.19.6", Inferred, "cilium-gateway.md §4; cozystack#3342 (live on 1.19.5)",
        "one Envoy listener `listener` for every Gateway port; chains do not match on port";
    NO_SPLIT = "one-listener-no-split", ">=1.19.6", Source, "cilium-gateway.md §4 (NeedsPerPortListeners false)",
        "no per-port split needed: one Envoy listener `listener` for every Gateway port";
    PER_PORT = "per-port-split", ">=1.19.6", Source, "cilium-gateway.md §4 (#44889, backport #46826)",
        "more than one HTTPS port, more than one TLS port with routes, or an HTTPS/TLS hostname overlap across ports: `listener` for HTTP (and TLS unless several TLS ports), `listener-<port>` per HTTPS port";
    PER_PORT_TLS = "per-port-tls", ">=1.19.6", Source, "cilium-gateway.md §4",
        "with more than one TLS port, one `listener-<port>` per TLS port";
    DUPLICATE_LISTENER_NAME = "duplicate-listener-name", ">=1.19.6", Inferred, "cilium#48269 (source; reported on 1.20.0)",
        "a port with both HTTPS and TLS in per-port TLS mode gives two `listener-<port>`; the agent rejects the whole CiliumEnvoyConfig";
    PROTOCOL_CONFLICT = "protocol-conflict", ">=1.19.6", Reported, "cozystack#3912; cilium#44889 (51ebb84427)",
        "same port, HTTPS terminate and TLS passthrough with intersecting hostnames: both Conflicted=True/ProtocolConflict, Accepted=False";
    HOSTNAME_CONFLICT = "hostname-conflict", ">=1.20.0", Inferred, "cilium-gateway.md §6 (later main, listenerPairConflict)",
        "same port, same protocol, same hostname: both Conflicted=True/HostnameConflict";
    CONFLICTED_TRANSLATED = "conflicted-still-translated", ">=1.19.6, <1.20.0", Reported, "cilium#46917",
        "conflicted listeners are still translated into Envoy on 1.19.x";
    CONFLICTED_DROPPED = "conflicted-dropped", ">=1.20.0", Reported, "cilium#47306, cilium#47457",
        "conflicted listeners are dropped before translation";
    FIRST_SELECTOR_MISS = "first-selector-miss", "<1.19.6", Reported, "cilium#42159; cozystack#3721",
        "a route without sectionName is refused (NotAllowedByListeners) when the first listener's namespace selector misses, even if a later listener admits it";
    INVALID_ROUTE_KINDS = "invalid-route-kinds", "<1.20.0", Reported, "cozystack#3343 (supportedKinds length check)",
        "a TLS listener that declares HTTPRoute among its kinds gets ResolvedRefs=False/InvalidRouteKinds";
    ROUTE_ATTACHMENT = "route-attachment", "*", Source, "Gateway API; cilium-gateway.md §6",
        "routes attach by sectionName, port, allowedRoutes namespaces and kinds, and hostname intersection";
    LISTENER_STATUS = "listener-status", "*", Source, "cilium-gateway.md §6 (setListenerStatus)",
        "a valid listener is ResolvedRefs, Accepted and Programmed; a conflicted one is Programmed=False/Pending";
}

/// The rules that hold for `v`.
pub fn for_version(v: &CiliumVersion) -> Vec<&'static Rule> {
    ALL.iter().filter(|r| r.applies(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_parses_and_ids_are_unique() {
        let mut ids = std::collections::BTreeSet::new();
        for r in ALL {
            VersionRange::parse(r.versions).unwrap_or_else(|e| panic!("{}: {e}", r.id));
            assert!(ids.insert(r.id), "duplicate rule id {}", r.id);
        }
    }

    #[test]
    fn version_gates() {
        let v = |s: &str| CiliumVersion::parse(s).unwrap();
        assert!(SINGLE_LISTENER.applies(&v("1.19.5")) && !SINGLE_LISTENER.applies(&v("1.19.6")));
        assert!(PROTOCOL_CONFLICT.applies(&v("1.19.7")) && !PROTOCOL_CONFLICT.applies(&v("1.19.5")));
        assert!(CONFLICTED_DROPPED.applies(&v("1.20.1")) && !CONFLICTED_DROPPED.applies(&v("1.19.7")));
    }
}
