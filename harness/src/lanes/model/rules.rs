//! The model's rules, each with the Cilium versions it holds for and where it comes from.
//! Every predicted chain and status names the rule that produced it, so `explain` can say why.

use crate::case::{CiliumVersion, ProvenanceKind, VersionRange};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    /// Semver range of Cilium versions the rule holds for.
    pub versions: &'static str,
    pub provenance: ProvenanceKind,
    /// Upstream issue or PR, upstream file at a commit with the function, or a section of a
    /// document in this repository.
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

// Sources: `cilium@<commit>:<path>:<function>` is the upstream file at that commit of
// cilium/cilium with the function that does it; `cilium#N` an upstream issue or PR;
// `docs/cilium-translation.md#anchor` this repository's per-version notes.
rules! {
    INSECURE_CHAIN = "insecure-chain", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:httpFilterChain; cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/ingestion/gateway.go:GatewayAPI",
        "one raw_buffer chain to the HCM listener-insecure on the Envoy listener that carries plain-HTTP ports; every HTTP, HTTPS and TLS listener counts as an HTTP port";
    HTTPS_PER_SECRET = "https-chain-per-secret", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:httpsFilterChains",
        "one TLS-terminating chain per certificate Secret, server_names = the sorted listener hostnames using it";
    HTTPS_CATCH_ALL = "https-catch-all", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:toFilterChainMatch",
        "an HTTPS listener without hostname makes its Secret's chain match every SNI (no server_names)";
    PASSTHROUGH_PER_ROUTE = "passthrough-chain-per-route", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:tlsPassthroughFilterChains",
        "one tcp_proxy chain per TLS listener and attached route, server_names from ComputeHosts";
    PASSTHROUGH_NO_BACKENDS = "passthrough-no-backends", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:tlsPassthroughFilterChains",
        "a route whose backends are all missing (no Service, or cross-namespace without ReferenceGrant) makes no passthrough chain; an HTTP rule without valid backends answers 500";
    PASSTHROUGH_NO_ROUTES = "passthrough-no-routes", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/model.go:TLSPassthroughPorts; cozystack#3342",
        "a TLS passthrough listener without routes makes no chain";
    COMPUTE_HOSTS = "compute-hosts", "*", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/helpers.go:ComputeHosts",
        "route hostnames are narrowed by the listener hostname; names another same-protocol listener claims are dropped";
    SINGLE_LISTENER = "single-listener", "<1.19.6", Inferred, "cozystack#3342; cilium#46826",
        "one Envoy listener `listener` for every Gateway port; chains do not match on port";
    NO_SPLIT = "one-listener-no-split", ">=1.19.6", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/model.go:NeedsPerPortListeners",
        "no per-port split needed: one Envoy listener `listener` for every Gateway port";
    PER_PORT = "per-port-split", ">=1.19.6", Source, "cilium#44889; cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/translation/envoy_listener.go:desiredEnvoyListener; cilium#46826",
        "more than one HTTPS port, more than one TLS port with routes, or an HTTPS/TLS hostname overlap across ports: `listener` for HTTP (and TLS unless several TLS ports), `listener-<port>` per HTTPS port";
    PER_PORT_TLS = "per-port-tls", ">=1.19.6", Source, "cilium@66382ef3c815b20fffa95ee5fafe4709933903f3:operator/pkg/model/model.go:NeedsPerPortTLSPassthroughListeners",
        "with more than one TLS port, one `listener-<port>` per TLS port";
    PER_PORT_NO_INSECURE = "per-port-no-insecure-chain", ">=1.19.6", Source, "cilium@v1.19.6:operator/pkg/model/translation/envoy_listener.go:desiredEnvoyListenerPerPort; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:GatewayAPI; cilium@v1.20.1:operator/pkg/model/translation/envoy_listener.go:desiredEnvoyListenerPerPort",
        "in per-port mode `listener` gets the plain-HTTP chain only when a listener that reaches ingestion without a certificate Secret (`len(l.TLS) == 0`: an HTTP listener, a TLS passthrough listener, an HTTPS listener whose refs toTLS dropped) is on a port where no TLS listener has routes; ingestion puts every HTTP, HTTPS and TLS listener in the model's HTTP listeners, so a TLS listener without routes counts (found by layout-gate differential, seed 1, layout 4)";
    PORT_FIRST_SERVICE_ENTRY = "port-to-first-service-entry", ">=1.19.6", Source, "cilium@v1.19.6:operator/pkg/model/translation/cec_translator.go:desiredServicesWithPortsSplit; cilium@v1.19.6:pkg/loadbalancer/service.go:ForPort; cilium@v1.19.6:pkg/ciliumenvoyconfig/controller.go:getProxyRedirect; cilium@v1.20.1:operator/pkg/model/translation/cec_translator.go:desiredServicesWithPortsSplit",
        "in per-port mode the CiliumEnvoyConfig's services name `listener` for every plain port (a listener without a certificate Secret, on a port where no TLS listener has routes) first, then `listener-<port>` per HTTPS port, then the TLS ports; cilium-agent sends a Gateway port to the first entry naming it (ProxyRedirects.ForPort), so an HTTPS port that also has a plain listener is answered by `listener` (TLS handshakes reset there) and `listener-<port>` is kept with its chains, unreached (found by layout-gate differential, seed 1, layout 4)";
    PER_PORT_TLS_EMPTY_SKIPPED = "per-port-tls-without-chains-skipped", ">=1.19.6", Source, "cilium@v1.19.6:operator/pkg/model/translation/envoy_listener.go:desiredEnvoyListenerPerPort; cilium@v1.19.6:operator/pkg/model/translation/envoy_listener.go:tlsPassthroughFilterChainsForPort; cilium@v1.20.1:operator/pkg/model/translation/envoy_listener.go:desiredEnvoyListenerPerPort",
        "with several TLS ports, a TLS port whose routes have no backends gets no `listener-<port>` (no chain: skipped), so it does not collide with the HTTPS `listener-<port>` of the same port; it still counts as a TLS port with routes (TLSPassthroughPorts counts routes, not backends) (found by layout-gate differential, seed 1, layout 4)";
    HTTPS_WITHOUT_SECRET_PLAIN = "https-without-secret-is-plain", ">=1.19.6", Source, "cilium@v1.19.6:operator/pkg/model/translation/envoy_route_configuration.go:desiredEnvoyHTTPRouteConfiguration; cilium@v1.19.6:operator/pkg/model/model.go:HTTPSPortsSorted; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toTLS; cilium@v1.19.5:operator/pkg/model/translation/envoy_route_configuration.go:desiredEnvoyHTTPRouteConfiguration",
        "from 1.19.6 the translation asks `len(l.TLS) > 0`, so an HTTPS listener that reaches ingestion without a certificate Secret (toTLS dropped every ref: no ReferenceGrant; 1.19.x only, 1.20 drops the invalid listener first) is plain HTTP to it: its routes join the insecure route configuration, its port is no HTTPS port (NeedsPerPortListeners, NeedsCrossProtocolSplit) and in per-port mode joins `listener`; 1.19.5 asks `l.TLS != nil` and keeps its routes in the secure route configuration";
    REDIRECT_PORT_EXPLICIT = "redirect-port-explicit", "*", Source, "cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toHTTPRequestRedirectFilter; cilium@v1.19.6:operator/pkg/model/translation/envoy_virtual_host.go:getRouteRedirect; cilium@v1.20.2:operator/pkg/model/translation/envoy_virtual_host.go:getRouteRedirect",
        "a RequestRedirect without a port still sets Envoy's port_redirect: the listener's port when it names no scheme, else 443 for https and 80 for http; Envoy writes that port into Location, so an HTTP-to-HTTPS redirect reads `https://<host>:443/`";
    HTTPROUTE_ON_EVERY_LISTENER = "httproute-on-every-listener", "*", Source, "cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:GatewayAPI; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toHTTPRoutes; cilium@v1.19.6:operator/pkg/gateway-api/gateway_reconcile.go:filterHTTPRoutesByGateway; cilium@v1.20.0:operator/pkg/model/ingestion/gateway.go:GatewayAPI; cilium@v1.20.1:operator/pkg/model/ingestion/gateway.go:FilterHTTPRoutes; cilium@v1.20.2:operator/pkg/model/ingestion/gateway.go:toHTTPRoutes",
        "ingestion runs toHTTPRoutes for every HTTP, HTTPS and TLS listener, which checks the parentRef (section, port; from 1.20 also its kind and name against the listener's source, FilterHTTPRoutes), the listener's namespace policy (from 1.19.6: ingest-namespace-unchecked; at 1.20.2 through the loader's AllowedNamespaces) and ComputeHosts but not the route kinds the listener allows: an HTTPRoute attached to the Gateway rides on a TLS listener too, whose hostname then gets a virtual host in the insecure route configuration (read at v1.19.5, v1.19.6, v1.19.7, v1.20.0, v1.20.1 and v1.20.2; at 1.20 found by layout-gate differential --seed 3 --cilium 1.20.2)";
    ATTACHABLE_ACCEPTED_ONLY = "attachable-accepted-only", ">=1.20.0", Source, "cilium@v1.20.0:operator/pkg/gateway-api/helpers/routes.go:IsParentAttachable; cilium@v1.20.1:operator/pkg/gateway-api/gateway_reconcile.go:filterHTTPRoutesByGateway; cilium@v1.20.2:operator/pkg/gateway-api/loading/loading.go:AttachedHTTPRoutes; cilium@v1.19.6:operator/pkg/gateway-api/gateway_reconcile.go:isAttachable",
        "from 1.20 the reconciler hands ingestion the routes with Accepted=True on a parent naming this Gateway or one of its attached ListenerSets, and nothing else: 1.19.x also hands over a route whose only mark there is ResolvedRefs=False, and only when some listener allows its kind and namespace (isAllowed)";
    INGEST_NAMESPACE_UNCHECKED = "ingest-namespace-unchecked", "<1.19.6", Source, "cilium@v1.19.5:operator/pkg/model/ingestion/gateway.go:toHTTPRoutes; cilium@v1.19.5:operator/pkg/model/ingestion/gateway.go:toTLSRoutes; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toHTTPRoutes",
        "at 1.19.5 ingestion puts a route the reconciler hands it on every listener its parentRef names whose hostnames meet the route's, without asking the listener's namespace policy (helpers.IsListenerNamespaceAllowed joins toHTTPRoutes and toTLSRoutes in 1.19.6): an accepted HTTPRoute from another namespace whose sectionName names a listener admitting only its own namespace (accepted because the namespace check read no listener, namespace-check-isolated-hosts) is still served there (found by layout-gate differential, seed 3, layout 50)";
    SAME_MATCH_MERGED = "same-match-routes-merged", "*", Source, "cilium@v1.19.6:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes; cilium@v1.19.6:operator/pkg/model/model.go:GetMatchKey; cilium@v1.19.6:operator/pkg/model/translation/envoy_route_configuration.go:desiredEnvoyHTTPRouteConfiguration; cilium@v1.20.2:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes",
        "in one virtual host the rules with the same match (method, path, headers, query), of one HTTPRoute or of several, become one Envoy route at the first one's place: it does what the first says (its redirect, its filters) and forwards to the backends of all of them, weighted; before 1.20.2 it answers 500 only when none of them has a backend";
    SAME_MATCH_FIRST_DIRECT_RESPONSE = "same-match-first-direct-response", ">=1.20.2", Source, "cilium@v1.20.2:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes; cilium@v1.20.2:operator/pkg/model/ingestion/gateway.go:extractRoutes; cilium@v1.20.1:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes",
        "from 1.20.2 a merged Envoy route whose first rule has no valid backend (and no redirect) answers 500 itself, though the rules merged after it have backends; 1.20.1 and before forward to those";
    DUPLICATE_RULES_KEPT = "duplicate-rules-kept", ">=1.20.1", Source, "cilium#46696; cilium@v1.20.1:operator/pkg/model/ingestion/gateway.go:retainDuplicateRuleSources; cilium@v1.20.1:operator/pkg/model/model.go:GetBackendAggregationKey; cilium#42964",
        "from 1.20.1 rules of one HTTPRoute that have the same match stay separate Envoy routes, in rule order (the first wins), where 1.20.0 and before merge them into one weighted route; rules of different HTTPRoutes still merge";
    ROUTE_ORDER_UNFIXED = "route-order-unfixed", "*", Source, "cilium@v1.19.6:operator/pkg/gateway-api/gateway_reconcile.go:Reconcile; kubernetes-sigs/controller-runtime@v0.23.3:pkg/cache/internal/cache_reader.go:List; kubernetes/client-go@v0.35.6:tools/cache/thread_safe_store.go:ByIndex; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toHTTPRoutes",
        "the HTTPRoutes of one listener reach the translation in the order the operator's informer index lists them (a Go map's), not by age and name as Gateway API asks: where they merge into one Envoy route and which comes first decides what it does, the answer may be any of theirs and can change at the next reconcile";
    DUPLICATE_LISTENER_NAME = "duplicate-listener-name", ">=1.19.6", Inferred, "cilium#48269; cilium#48278",
        "a port with both HTTPS and TLS in per-port TLS mode gives two `listener-<port>`; the agent rejects the whole CiliumEnvoyConfig";
    DUPLICATE_CHAIN_MATCH = "duplicate-chain-match-cec-rejected", ">=1.20.0", Source, "cilium#46848; cilium@v1.20.0:pkg/ciliumenvoyconfig/cec_resource_parser.go:listenerHasDuplicateFilterChainMatch; cilium@v1.20.0:pkg/ciliumenvoyconfig/k8s_reflector.go:toStructs; cilium@v1.19.7:pkg/ciliumenvoyconfig/cec_resource_parser.go:ParseResources",
        "from 1.20 cilium-agent refuses a whole CiliumEnvoyConfig when one of its listeners has two filter chains with the same match (transport, and the same server names in the same order): nothing of the Gateway reaches Envoy, on any port; 1.19.x hands it to Envoy, which refuses only that listener";
    REFUSED_CEC_KEEPS_GENERATION = "refused-cec-keeps-generation", "*", Source, "cilium@v1.20.2:pkg/ciliumenvoyconfig/k8s_reflector.go:registerCECK8sReflector; cilium@v1.20.2:pkg/k8s/statedb.go:RegisterReflector; cilium@v1.19.5:pkg/ciliumenvoyconfig/k8s_reflector.go:registerCECK8sReflector; cilium@v1.19.5:pkg/k8s/statedb.go:RegisterReflector",
        "a CiliumEnvoyConfig update cilium-agent refuses at parse time (ParseResources: a duplicate name, from 1.20 a duplicate filter-chain match) yields no object, so the agent's CEC table neither inserts nor deletes: the generation it accepted before stays served, and deleting the CEC afterwards removes nothing either (the same code at every pinned tag)";
    NACK_REVERT_RESTORES_GENERATION = "nack-revert-restores-generation", "<1.20.0", Source, "cilium@v1.19.6:pkg/envoy/xds_server.go:UpdateEnvoyResources; cilium@v1.19.6:pkg/envoy/xds/ack.go:HandleResourceVersionAck",
        "before 1.20 the agent hands an update with two identical chain matches to Envoy, which refuses the listener (NACK); the agent's revert puts back every resource of the CEC as it was before the update, so a Gateway whose earlier generation Envoy accepted keeps serving it (seen through Cilium's own agent at 1.19.6, case refused-update-keeps-generation); a CEC Envoy never accepted is withdrawn";
    PROTOCOL_CONFLICT = "protocol-conflict", ">=1.19.6", Source, "cilium#44889; cilium#46826; cozystack#3912",
        "same port, HTTPS terminate and TLS passthrough with intersecting hostnames: both Conflicted=True/ProtocolConflict, Accepted=False/Invalid, Programmed=False/Pending, no ResolvedRefs";
    HOSTNAME_CONFLICT = "hostname-conflict", ">=1.20.0", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:listenerPairConflict; cilium#47457",
        "same port, same protocol, same hostname: both Conflicted=True/HostnameConflict";
    CONFLICTED_TRANSLATED = "conflicted-still-translated", ">=1.19.6, <1.20.0", Reported, "cilium#46917",
        "conflicted listeners are still translated into Envoy on 1.19.x";
    CONFLICTED_DROPPED = "conflicted-dropped", ">=1.20.0", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:filterOutConflictedListeners; cilium#47306; cilium#47457",
        "conflicted listeners are dropped before translation";
    HOSTNAMES_ANY_LISTENER = "route-hostnames-any-listener", "*", Source, "cilium@v1.19.6:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayMatchingHostnames; cilium@v1.19.6:operator/pkg/gateway-api/routechecks/hostnames.go:computeHosts; cilium@v1.20.1:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayMatchingHostnames",
        "a route's hostnames are matched against every listener of its parent (computeHosts over all of them), not only the sectionName's: a route whose hostnames meet no hostname of its section but meet another listener's is Accepted=True (and attaches nowhere); only a route meeting no listener of the parent is NoMatchingListenerHostname (found by layout-gate differential, seed 1)";
    ROUTE_CHECKS_SEPARATE = "route-checks-separate", "*", Source, "cilium@v1.19.6:operator/pkg/gateway-api/gateway_reconcile.go:runCommonRouteChecks; cilium@v1.19.6:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayMatchingProtocol; cilium@v1.19.6:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayAllowedForNamespace; cilium@v1.20.1:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayAllowedForNamespace",
        "a route's parent is judged by separate checks, each over the parent's listeners on its own, not listener by listener (the same checks in the same order at v1.19.5, v1.19.6, v1.19.7 and v1.20.1): some listener of the parent has a protocol for the route's kind; the section's explicit allowedRoutes.kinds (without kinds, no restriction: a protocol's default kinds are not applied); the route's hostnames meet some listener; and some listener of the section the namespace check reads (namespace-check-isolated-hosts) admits the route's namespace, whatever its protocol (none read: no restriction). So a TLSRoute from another namespace is Accepted=True when an HTTPS listener without a hostname admits All namespaces and the TLS listeners only their own; it attaches to no listener (found by layout-gate differential, seed 1, layout 5)";
    KINDS_ANY_UNRESTRICTED = "route-kinds-any-unrestricted", ">=1.20.0", Source, "cilium@v1.20.1:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayRouteKindAllowed; cilium@v1.19.6:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayRouteKindAllowed",
        "from 1.20 a listener of the route's section without allowedRoutes.kinds admits any kind at once; on 1.19.6 and 1.19.7 one listener of the section whose kinds do not name the route's kind refuses it unless another listener's kinds name it (1.19.5 reads every listener's kinds, section or not: route-kinds-last-listener-decides)";
    KINDS_LAST_LISTENER_DECIDES = "route-kinds-last-listener-decides", "<1.19.6", Source, "cilium@v1.19.5:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayRouteKindAllowed; cilium#45559; cilium#45693",
        "at 1.19.5 the kinds check reads every listener of the Gateway with explicit allowedRoutes.kinds, the route's section or not, and each writes the route's Accepted in turn (True when its kinds name the route's kind, else False/NotAllowedByListeners) without stopping the checks: the last such listener in the Gateway's order decides, and a later check's refusal (hostnames, section, namespace) still overwrites it. An HTTPRoute pinned to an HTTPS listener with kinds [HTTPRoute] is refused when a later listener's kinds name only TLSRoute (cozystack#3070's collapse; case per-listener-kinds-shared-port)";
    FIRST_SELECTOR_MISS = "first-selector-miss", "<1.19.6", Reported, "cilium#42159; cozystack#3721; cilium#45693; cilium#46826; cilium@v1.19.5:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayAllowedForNamespace",
        "a route is refused (NotAllowedByListeners) when, of the listeners the namespace check reads in order, the first that decides has a namespace selector that misses, even if a later listener admits it (at v1.19.5 a From=All listener, or a From=Same one of the route's namespace, decides for it first; a From=Same one of another namespace is passed over)";
    NAMESPACE_CHECK_ISOLATED = "namespace-check-isolated-hosts", "*", Source, "cilium@v1.19.6:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayAllowedForNamespace; cilium@v1.19.6:operator/pkg/model/helpers.go:ComputeHosts; cilium@v1.19.6:operator/pkg/model/helpers.go:checkHostNameIsolation; cilium@v1.20.2:operator/pkg/gateway-api/routechecks/gateway_checks.go:CheckGatewayAllowedForNamespace",
        "the namespace check passes over a listener with a hostname where the route keeps no name once every other listener hostname of the owner took its own (computeHostsForListener with all of the owner's listener hostnames): a route for api.example.com from another namespace is refused (NotAllowedByListeners) by an api.example.com listener admitting only its own namespace, although a *.example.com listener admits every namespace; the same at v1.19.5, v1.19.7, v1.20.0 and v1.20.2 (found by layout-gate differential, seed 3, layout 44)";
    ROUTE_KINDS_CHECKED = "route-kinds-checked", "*", Source, "cilium@v1.19.5:operator/pkg/gateway-api/gateway_reconcile.go:setListenerStatus; cilium@0245a654c0a06afba585897f29e5e1c018ea4ddc:operator/pkg/gateway-api/testdata/gateway/gateway-invalid-route-kind/output/gateway-only-invalid-route-kind.yaml",
        "every listener's allowedRoutes.kinds is checked against its protocol's kinds: any unsupported kind is ResolvedRefs=False/InvalidRouteKinds; none supported makes the listener invalid (Accepted=False/Invalid); on every pinned tag (Cilium's operator at v1.19.5 answers so, for HTTPS listeners too)";
    CERT_REF_CHECK = "certificate-ref-check", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:validateListener; cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/helpers/secrets.go:IsSecretReferenceAllowed",
        "a certificateRef that is not a core Secret, or whose Secret does not exist, is ResolvedRefs=False/InvalidCertificateRef; one in another namespace without a ReferenceGrant (from Gateway, to Secret) is RefNotPermitted; on 1.20 no terminating chain uses it (on 1.19.x the listener still gets one: invalid-listener-chain-kept)";
    CERT_REF_INVALIDATES = "certificate-ref-invalidates-listener", "*", Source, "cilium@v1.19.5:operator/pkg/gateway-api/gateway_reconcile.go:setListenerStatus; cilium#47457",
        "a listener with a bad certificateRef is Accepted=False/Invalid (\"Listener not valid. Invalid CertificateRef, ...\") and Programmed=False/Pending on every pinned tag (Cilium's operator at v1.19.5 answers so; the older fixtures with the listener Accepted predate the tags)";
    INVALID_NOT_TRANSLATED = "invalid-listener-not-translated", ">=1.20.1", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:filterOutInvalidListeners; cilium#47457; cilium@v1.20.1:operator/pkg/gateway-api/gateway_reconcile.go:filterOutInvalidListeners; cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go:resolveAllowedListeners",
        "an invalid listener is filtered out before ingestion from 1.20.1 (1.20.0's resolveAllowedListeners drops only a Gateway's own conflicted listeners: invalid ones are still translated, as on 1.19.x; found by run --lane operator --cilium 1.20.0, case missing-secret-beside-catch-all); on 1.19.x ingestion (cilium@v1.19.5:operator/pkg/model/ingestion/gateway.go:GatewayAPI) takes every listener of a Gateway that has a valid one";
    INVALID_CHAIN_KEPT = "invalid-listener-chain-kept", "<1.20.1", Source, "cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:GatewayAPI; cilium@v1.19.6:operator/pkg/model/ingestion/gateway.go:toTLS; cilium@v1.19.6:operator/pkg/model/translation/envoy_listener.go:httpsFilterChains; cilium@v1.19.5:operator/pkg/model/translation/envoy_listener.go:httpsFilterChains; cilium@v1.19.6:pkg/ciliumenvoyconfig/cec_resource_parser.go:qualifySdsSecretConfig",
        "on 1.19.x (read at v1.19.5, v1.19.6, v1.19.7) an invalid HTTPS listener of a Gateway that has a valid listener still reaches ingestion, and toTLS keeps every certificateRef a ReferenceGrant does not forbid, whether its Secret exists or not: the listener's hostname gets a terminating chain per Secret as a valid listener's would (server_names its hostname; none for a listener without one), and its routes join the secure route configuration; a Secret that does not exist (or a ref that is not a Secret) never arrives over SDS, so Envoy keeps the listener with every chain and resets each handshake that chain matches; on 1.20 the listener is dropped first (invalid-listener-not-translated)";
    NO_VALID_LISTENER = "no-valid-listener", "*", Source, "cilium@v1.19.5:operator/pkg/gateway-api/gateway_reconcile.go:Reconcile; cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:Reconcile; cilium@v1.20.2:operator/pkg/gateway-api/status_listener.go:setGatewayListenerStatus",
        "a Gateway with no valid listener is Accepted=False and Programmed=False, both ListenersNotValid (message No Accepted Listeners); Reconcile returns there, before Translate and ensureEnvoyConfig, so no CiliumEnvoyConfig and no Envoy listener exist for it, on every pinned tag (Cilium's operator at v1.19.5 answers so); from 1.20 only the Gateway's own listeners count, so a Gateway whose own listeners are all invalid or conflicted writes no CiliumEnvoyConfig even when an attached ListenerSet has a valid listener";
    TLSROUTE_V1_ADMISSION = "tlsroute-v1-hostnames-required", ">=1.20.0", Source, "cilium@v1.20.0:operator/pkg/gateway-api/helpers/schemes.go:RequiredGVKs; cilium@v1.20.0:go.mod; kubernetes-sigs/gateway-api@v1.6.1:config/crd/experimental/gateway.networking.k8s.io_tlsroutes.yaml; cilium@v1.19.6:operator/pkg/gateway-api/cell.go",
        "from 1.20.0 Cilium watches TLSRoute at v1 (RequiredGVKs) and its go.mod pins Gateway API v1.6.1, whose TLSRoute v1 schema requires spec.hostnames (minItems 1): the API server refuses a TLSRoute without hostnames (422 Invalid, `spec.hostnames: Required value`) before Cilium sees it, so it has no status, attaches to no listener and makes no chain; 1.19.x watches TLSRoute v1alpha2 (Gateway API v1.4.1), which does not require them (found by run --lane operator --cilium 1.20.x: catch-all-https-and-passthrough, tlsroute-no-hostnames)";
    REDIRECT_PROTO_GUARD = "redirect-forwarded-proto-guard", ">=1.20.0", Source, "cilium@v1.20.0:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes; cilium@v1.20.0:operator/pkg/model/translation/envoy_virtual_host.go:getRouteRedirectMatch; cilium@v1.20.2:operator/pkg/model/translation/envoy_virtual_host.go:getRouteRedirectMatch; cilium@v1.19.6:operator/pkg/model/translation/envoy_virtual_host.go:envoyHTTPRoutes",
        "from 1.20.0 the Envoy route of a redirect with a scheme also matches the header X-Forwarded-Proto, inverted and ignoring case: a request that says it already came over that scheme is not redirected (it falls to the next route), one without the header is; 1.19.x redirects every request the match takes";
    BACKEND_PORT_CHECKED = "backend-port-checked", ">=1.20.1", Source, "cilium@v1.20.1:operator/pkg/gateway-api/routechecks/route_checks.go:CheckBackendIsExistingService; cilium@v1.20.1:operator/pkg/gateway-api/routechecks/route_checks.go:checkBackendServicePort; cilium@v1.20.2:operator/pkg/gateway-api/routechecks/route_checks.go:checkBackendServicePort; cilium@v1.20.0:operator/pkg/gateway-api/routechecks/route_checks.go:CheckBackendIsExistingService",
        "from 1.20.1 a backendRef whose port is not one of its Service's ports makes the route ResolvedRefs=False/BackendNotFound (`Service port P could not be resolved for backend NS/NAME`); it stays Accepted and its backends are translated as before; 1.20.0 and 1.19.x ask only that the Service exists (found by run --lane operator --cilium 1.20.2: the cilium/ fixture cases reach port 8080 of a backend whose Service the lanes expose on 80)";
    BACKEND_GRANT = "backend-reference-grant", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/helpers/referencegrants.go:IsBackendReferenceAllowed",
        "a backendRef to another namespace needs a ReferenceGrant there whose from names the route's group, kind and namespace and whose to names group \"\" kind Service (and the name, if given); else ResolvedRefs=False/RefNotPermitted";
    PARENT_REF_KIND = "parent-ref-kind", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/helpers/routes.go",
        "a route parentRef attaches to a Gateway only with group gateway.networking.k8s.io and kind Gateway (the defaults); kind ListenerSet attaches to that ListenerSet's listeners only";
    LISTENERSET = "listenerset-merge", ">=1.20.0", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:conflictsAcrossSources",
        "ListenerSets the Gateway's allowedListeners admits add their listeners after the Gateway's (oldest first, then namespace/name); a listener conflicting with an earlier source's loses with Accepted/Programmed=False, Conflicted=True and ResolvedRefs=True (\"Listener has a conflict\")";
    LISTENERSET_UNFILTERED = "listenerset-listeners-unfiltered", "=1.20.0", Source, "cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go:resolveAllowedListeners; cilium@v1.20.0:operator/pkg/gateway-api/gateway_reconcile.go:conflictedGatewayListeners; cilium@v1.20.1:operator/pkg/gateway-api/gateway_reconcile.go:filterOutConflictedListeners",
        "on 1.20.0 every listener of an allowed ListenerSet reaches translation, Conflicted or invalid (only the Gateway's own conflicted listeners are left out): a ListenerSet listener that conflicts with the Gateway's gets its chain beside the Gateway's, and two chains with one match make Envoy refuse the listener (found by run --lane operator --cilium 1.20.0, case cilium/listenerset-tls-protocol-conflict); from 1.20.1 conflicted and invalid listeners of every source are filtered out";
    LISTENERSET_NOT_ALLOWED = "listenerset-not-allowed", ">=1.20.0", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:setListenerSetStatuses",
        "a ListenerSet whose namespace the Gateway's allowedListeners does not admit (the default is None) is Accepted=False/NotAllowed and contributes no listener";
    HTTP_ROUTING = "http-route-matching", "*", Source, "cilium@de839566fe1806ec35d2a69ee569de3f139836c5:operator/pkg/model/translation/envoy_virtual_host.go:SortableRoute",
        "one virtual host per hostname; each HTTPRoute/GRPCRoute rule and match becomes an Envoy route (path, headers, query, method; GRPC method as /service/method), exact before regex before longest prefix, then more header and query matches; redirects, rewrites and header filters as written";
    SEVERAL_GATEWAYS = "one-cec-per-gateway", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:Reconcile",
        "each Gateway is translated on its own, into its own Envoy listeners and address";
    ROUTE_ATTACHMENT = "route-attachment", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:filterHTTPRoutesByListener",
        "routes attach by sectionName, port, allowedRoutes namespaces and kinds, and hostname intersection";
    LISTENER_STATUS = "listener-status", "*", Source, "cilium@00159e53f7a94f6ac9189b3de335083bbfb22672:operator/pkg/gateway-api/gateway_reconcile.go:setListenerStatus",
        "a valid listener is ResolvedRefs, Accepted and Programmed; a conflicted one is Programmed=False/Pending";
    CLUSTER_PROTOCOL_OPERATOR = "cluster-protocol-operator", "*", Source, "cilium@v1.19.6:operator/pkg/model/translation/envoy_cluster.go:httpCluster; cilium@v1.19.6:operator/pkg/model/translation/envoy_cluster.go:clusterMutators; cilium@v1.19.6:operator/pkg/model/translation/envoy_cluster_mutator.go:withProtocol; cilium@v1.19.6:install/kubernetes/cilium/templates/cilium-configmap.yaml; cilium@v1.20.2:operator/pkg/model/translation/envoy_cluster.go:clusterMutators",
        "the operator writes every HTTP backend's cluster with an upstream protocol of its own: use_downstream_protocol_config with HTTP/2 options, replaced, when enable-gateway-api-app-protocol is on (the chart turns it on with gatewayAPI.enableAlpn, as the lanes' values do), by explicit HTTP/1.1, or explicit HTTP/2 for a Service port whose appProtocol is kubernetes.io/h2c and for a GRPCRoute backend; the agent leaves a protocol the operator set (read at v1.19.5 through v1.20.2)";
    CLUSTER_PROTOCOL_AGENT = "cluster-protocol-agent-injected", "*", Source, "cilium@v1.19.6:pkg/ciliumenvoyconfig/cec_resource_parser.go:ParseResources; cilium@v1.19.6:pkg/ciliumenvoyconfig/cec_resource_parser.go:injectCiliumUpstreamL7Filter; cilium@v1.19.6:operator/pkg/model/translation/envoy_cluster.go:tcpCluster; cilium@v1.20.2:pkg/ciliumenvoyconfig/cec_resource_parser.go:injectCiliumUpstreamL7Filter",
        "the operator writes a TLS passthrough backend's cluster without HTTP protocol options (and a Service both an HTTP and a TLS route reach gets that cluster: the TLS loop writes it last); cilium-agent, parsing a CEC with services, injects its upstream filters into every cluster and, where no upstream protocol is set, use_downstream_protocol_config with HTTP/2 options (auto_config behind a TLS or QUIC transport socket) (read at v1.19.5 through v1.20.2)";
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
    fn every_source_resolves_from_the_repository() {
        // An upstream issue/PR, an upstream file at a commit, or a document in this repository.
        for r in ALL {
            for part in r.source.split("; ") {
                let ok = part.starts_with("cilium#")
                    || part.starts_with("cozystack#")
                    || (part.starts_with("cilium@") && part.contains(':'))
                    // Another upstream's file at a tag: owner/repo@tag:path (the libraries Cilium's
                    // operator is built with, at the versions its go.mod pins).
                    || (part.split_once('@').is_some_and(|(repo, rest)| repo.contains('/') && rest.contains(':')))
                    || part.starts_with("docs/");
                assert!(ok, "{}: source part {part:?} is neither an upstream issue/PR nor a file at a commit", r.id);
            }
            // A repository document must exist and have the section named (the cases' resolver;
            // `tests::citation_guard` keeps the private notes out of every tracked file).
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate::case::refs::classify_all(r.source, Some(root)).unwrap_or_else(|e| panic!("{}: {e}", r.id));
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
