//! The emulated agent step: what cilium-agent does to a CiliumEnvoyConfig before cilium-envoy
//! gets it, done here so the CEC Cilium's own operator wrote can be served by an upstream Envoy.
//! A pure function of the CECs and the local addresses standing for Services and backends.
//!
//! What it mirrors, at the tag (`cilium@v1.19.6`; the same functions at v1.20.x):
//!
//! * Names are qualified as `ResourceQualifiedName` does (`pkg/policy/api/utils.go`): a name
//!   without `/` becomes `<cec namespace>/<cec name>/<name>`; listener, route configuration and
//!   virtual host names are qualified even when they hold a `/` (`ForceNamespace`) unless they
//!   already start with the CEC's namespace; cluster references in routes and TCP proxies,
//!   and SDS secret names, only when they hold no `/` (`pkg/ciliumenvoyconfig/
//!   cec_resource_parser.go: ParseResources, qualifyRouteConfigurationResourceNames,
//!   qualifyTcpProxyResourceNames, qualifySdsSecretConfig`).
//! * A listener, route configuration or cluster name twice in one CEC (after qualifying) rejects
//!   the whole CEC, as `ParseResources` returns an error for it (`duplicate Listener name`), so
//!   none of its resources reach Envoy (cilium#48269 is this on per-port Gateways).
//! * A listener without an address gets a proxy port, and every Service port the CEC's
//!   `services` send to it is redirected there (`controller.go: getProxyRedirect`: a
//!   ServiceListener names its listener, or the first one; no `ports` means every frontend
//!   port; `pkg/loadbalancer/service.go: ProxyRedirects.ForPort`: a port two entries name goes
//!   to the first naming it, so the other listener keeps its proxy port, unreached). Here the
//!   listener listens on the local addresses standing for those Gateway ports instead: the
//!   Service frontend and the BPF redirect are emulated together.
//! * RDS is Cilium's xDS server: each HCM's `rds` becomes the CEC's own route configuration,
//!   inline. SDS is served from the Secrets the operator synced to its secrets namespace; here
//!   static secrets of the same names, and a Secret that is not there is never served
//!   (`never_served`: Envoy keeps the listener, the chains using it reset TLS handshakes). EDS is the Service's endpoints: here each `EDS` cluster
//!   becomes a `STATIC` one whose endpoint is the in-process backend standing for the Service
//!   (none when the Service has no backend, as a Service without pods has no endpoints).
//! * From v1.20.0, a listener with two filter chains whose `filterChainMatch` are the same
//!   message (compared whole, in order, as `proto.Equal` does; a chain without one equals only
//!   another without one) rejects the whole CEC too, after every name is qualified and checked
//!   (cilium#46848; `cec_resource_parser.go: listenerHasDuplicateFilterChainMatch` at v1.20.0,
//!   absent at v1.19.7): where upstream Envoy would refuse only that listener, nothing of the
//!   Gateway is served ([`AgentChecks`]).
//! * Filters named `cilium.*` (`cilium.bpf_metadata`, `cilium.network`, `cilium.l7policy`:
//!   the agent injects them into cilium-envoy, which upstream Envoy does not have) are removed and
//!   listed. The operator's own CECs carry none of them.
//!
//! Not emulated (listed in every output of the lane): BPF and policy enforcement, the agent's
//! circuit-breaker defaults on clusters (`fillInCircuitBreakers`), the proxy-port allocator, and
//! protoc-gen-validate checks beyond what Envoy itself refuses.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use serde_json::{Map, Value, json};

/// The `@type` URLs the step reads.
const LISTENER: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
const ROUTE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
const CLUSTER: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
const HCM: &str = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const TCP_PROXY: &str = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy";
const DOWNSTREAM_TLS: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";
const UPSTREAM_TLS: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";

/// A Service, by namespace and name.
pub type ServiceKey = (String, String);

/// Everything the step needs besides the CECs.
#[derive(Debug, Clone, Default)]
pub struct Addresses {
    /// The frontend ports of each Service a CEC redirects (the Gateway's `cilium-gateway-*`).
    pub service_ports: BTreeMap<ServiceKey, Vec<u16>>,
    /// The local address standing for each (Service, frontend port).
    pub frontends: BTreeMap<(ServiceKey, u16), SocketAddr>,
    /// The in-process backend standing for each backend Service.
    pub backends: BTreeMap<ServiceKey, SocketAddr>,
}

/// What Envoy gets, and what the step did that a reader should know.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOutput {
    /// Listeners, named and addressed as cilium-envoy would hold them, routes inline.
    pub listeners: Vec<Value>,
    pub clusters: Vec<Value>,
    /// The SDS secret names the listeners use (to be served as static secrets, or never when
    /// the Secret is missing: `never_served`).
    pub secrets: BTreeSet<String>,
    /// The local addresses each listener listens on, by its qualified name.
    pub bound: BTreeMap<String, Vec<SocketAddr>>,
    /// CECs the agent would refuse whole, with why (`ns/name: duplicate Listener name ...`).
    pub rejected: Vec<String>,
    /// `cilium.*` filters removed, as `<listener>: <filter>`.
    pub removed_filters: Vec<String>,
    /// Other things said once per case (a listener no Service port reaches, a missing route
    /// configuration).
    pub notes: Vec<String>,
}

/// `ResourceQualifiedName` (`pkg/policy/api/utils.go`).
pub fn qualify(ns: &str, cec: &str, name: &str, force: bool) -> String {
    let slash = name.find('/');
    if name.is_empty() || slash.is_some() && (!force || (slash == Some(ns.len()) && name.starts_with(ns))) {
        return name.to_string();
    }
    format!("{ns}/{cec}/{name}")
}

/// A field by its protobuf JSON name (lowerCamelCase, as the operator writes it) or by its
/// proto name (snake_case); Envoy accepts both.
fn field<'a>(o: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    o.get(camel).or_else(|| o.get(snake))
}

fn field_mut<'a>(o: &'a mut Value, camel: &str, snake: &str) -> Option<&'a mut Value> {
    if o.get(camel).is_some() { o.get_mut(camel) } else { o.get_mut(snake) }
}

fn type_url(v: &Value) -> &str {
    v.get("@type").and_then(Value::as_str).unwrap_or("")
}

fn socket_address(a: SocketAddr) -> Value {
    json!({ "socketAddress": { "address": a.ip().to_string(), "portValue": a.port() } })
}

/// One CEC's resources after the step, before they are merged with the other CECs'.
struct Parsed {
    listeners: Vec<Value>,
    routes: BTreeMap<String, Value>,
    clusters: Vec<Value>,
}

/// The agent's checks on a CEC that differ between the versions the lane runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentChecks {
    /// A listener with two identical filter-chain matches rejects its whole CEC (from v1.20.0).
    pub duplicate_chain_matches: bool,
}

impl AgentChecks {
    /// The checks cilium-agent at `version` makes.
    pub fn at(version: &crate::case::CiliumVersion) -> AgentChecks {
        let from = crate::case::CiliumVersion::parse("1.20.0").is_ok_and(|v| version >= &v);
        AgentChecks { duplicate_chain_matches: from }
    }
}

/// Runs the step over every CEC (`CiliumEnvoyConfig` objects as the API server returned them),
/// with the checks of the agent's version.
pub fn agent_step(cecs: &[Value], addrs: &Addresses, checks: AgentChecks) -> AgentOutput {
    let mut out = AgentOutput::default();
    for cec in cecs {
        let ns = cec.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
        let name = cec.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let resources = cec.pointer("/spec/resources").and_then(Value::as_array).cloned().unwrap_or_default();
        let parsed = parse(ns, name, &resources, &mut out).and_then(|p| validate(&p, checks).map(|()| p));
        let parsed = match parsed {
            Ok(p) => p,
            Err(why) => {
                out.rejected.push(format!("{ns}/{name}: {why}"));
                continue;
            }
        };
        // Every listener with the Gateway ports its CEC's Services send to it. Each `services`
        // entry is a ProxyRedirect of its Service (none when the CEC does not hold its listener:
        // getProxyRedirect), in the CEC's order; a frontend port goes to the first redirect
        // naming it, or else to the first naming no ports (`ProxyRedirects.ForPort`), so a port
        // two entries name reaches one listener only.
        let mut redirects: BTreeMap<ServiceKey, Vec<(String, Vec<u16>)>> = BTreeMap::new();
        let services = cec.pointer("/spec/services").and_then(Value::as_array).cloned().unwrap_or_default();
        for s in &services {
            let svc_ns = s.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(ns);
            let svc = s.get("name").and_then(Value::as_str).unwrap_or_default();
            let key = (svc_ns.to_string(), svc.to_string());
            let target = match s.get("listener").and_then(Value::as_str).filter(|l| !l.is_empty()) {
                Some(l) => qualify(ns, name, l, true),
                None => match parsed.listeners.first().and_then(|l| l.get("name")).and_then(Value::as_str) {
                    Some(first) => first.to_string(),
                    None => continue,
                },
            };
            if !parsed.listeners.iter().any(|l| l.get("name").and_then(Value::as_str) == Some(target.as_str())) {
                out.notes.push(format!("{ns}/{name}: Service {svc_ns}/{svc} names listener {target}, which the CEC does not hold"));
                continue;
            }
            let ports: Vec<u16> = s
                .get("ports")
                .and_then(Value::as_array)
                .map(|p| p.iter().filter_map(|v| v.as_u64().and_then(|n| u16::try_from(n).ok())).collect())
                .unwrap_or_default();
            redirects.entry(key).or_default().push((target, ports));
        }
        let mut ports_of: BTreeMap<String, Vec<SocketAddr>> = BTreeMap::new();
        for (key, entries) in &redirects {
            let (svc_ns, svc) = key;
            let mut ports: BTreeSet<u16> = addrs.service_ports.get(key).into_iter().flatten().copied().collect();
            ports.extend(entries.iter().flat_map(|(_, p)| p.iter().copied()));
            for p in ports {
                let taker = entries.iter().find(|(_, ps)| ps.contains(&p)).or_else(|| entries.iter().find(|(_, ps)| ps.is_empty()));
                let Some((target, _)) = taker else { continue };
                match addrs.frontends.get(&(key.clone(), p)) {
                    Some(a) => ports_of.entry(target.clone()).or_default().push(*a),
                    None => out.notes.push(format!("{ns}/{name}: Service {svc_ns}/{svc} has no port {p} to redirect")),
                }
            }
        }
        let inject = !services.is_empty() && !parsed.listeners.is_empty();
        for mut l in parsed.listeners {
            let lname = l.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            inline_routes(&mut l, &parsed.routes, &lname, &mut out.notes);
            collect_secrets(&l, &mut out.secrets);
            let mut bound = ports_of.remove(&lname).unwrap_or_default();
            bound.sort();
            bound.dedup();
            if field(&l, "address", "address").is_none() {
                match bound.split_first() {
                    Some((first, rest)) => {
                        l["address"] = socket_address(*first);
                        if !rest.is_empty() {
                            l["additionalAddresses"] =
                                Value::Array(rest.iter().map(|a| json!({ "address": socket_address(*a) })).collect());
                        }
                    }
                    None => {
                        // A proxy port nothing redirects to: it listens, unreachable from the
                        // Gateway's ports.
                        out.notes.push(format!("{lname}: no Service port is redirected to this listener"));
                        l["address"] = socket_address(SocketAddr::from(([127, 0, 0, 1], 0)));
                    }
                }
            }
            // The local addresses are held by layout-gate from their choice until the case ends
            // (envoy/ports.rs); Envoy binds beside the hold only when it asks for reuse too.
            l["enableReusePort"] = Value::Bool(true);
            out.bound.insert(lname, bound);
            out.listeners.push(l);
        }
        // The agent injects its upstream filters into every cluster of a CEC whose listeners
        // got its downstream filters (a CEC with `services`), and with them an upstream protocol
        // where the operator set none (`inject_upstream_protocol`).
        for mut c in parsed.clusters {
            if inject {
                inject_upstream_protocol(&mut c);
            }
            out.clusters.push(static_cluster(c, addrs));
        }
    }
    out
}

/// The upstream protocol cilium-agent fills into a cluster of a CEC with `services` when the
/// operator set none (`pkg/ciliumenvoyconfig/cec_resource_parser.go`: `ParseResources` and
/// `injectCiliumUpstreamL7Filter`, the same at v1.19.5 through v1.20.2): `auto_config` when the
/// cluster's transport socket is TLS or QUIC (ALPN can choose), else
/// `use_downstream_protocol_config` with HTTP/2 options. A protocol the operator set (its
/// `explicit_http_config` from the app protocol, or its own `use_downstream_protocol_config`) is
/// left as it is. The agent's `cilium.l7policy` upstream filter and Envoy's `upstream_codec`
/// it adds with it are not: the first is Cilium's own (removed as every `cilium.*` filter is),
/// the second what Envoy uses when no upstream filter is listed.
pub fn inject_upstream_protocol(c: &mut Value) {
    use crate::observe::envoy_dump::clusters::HTTP_PROTOCOL_OPTIONS;
    const TYPE: &str = "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
    let alpn = field(c, "transportSocket", "transport_socket")
        .and_then(|ts| field(ts, "typedConfig", "typed_config"))
        .and_then(|tc| tc.get("@type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with(".UpstreamTlsContext") || t.ends_with(".QuicUpstreamTransport"));
    let Some(obj) = c.as_object_mut() else { return };
    let key = if obj.contains_key("typed_extension_protocol_options") {
        "typed_extension_protocol_options"
    } else {
        "typedExtensionProtocolOptions"
    };
    let map = obj.entry(key).or_insert_with(|| json!({}));
    let Some(map) = map.as_object_mut() else { return };
    let opts = map.entry(HTTP_PROTOCOL_OPTIONS).or_insert_with(|| json!({ "@type": TYPE }));
    let Some(opts) = opts.as_object_mut() else { return };
    let set = [
        "useDownstreamProtocolConfig",
        "use_downstream_protocol_config",
        "explicitHttpConfig",
        "explicit_http_config",
        "autoConfig",
        "auto_config",
    ]
    .iter()
    .any(|k| opts.contains_key(*k));
    if !set {
        if alpn {
            opts.insert("autoConfig".into(), json!({}));
        } else {
            opts.insert("useDownstreamProtocolConfig".into(), json!({ "http2ProtocolOptions": {} }));
        }
    }
}

/// Why the agent refuses a whole CEC (cilium@v1.19.6 `pkg/ciliumenvoyconfig/cec_resource_parser.go`
/// `ParseResources`):
/// said in the evidence after the CEC's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Rejection {
    /// A resource without a name (`Listener`, `RouteConfiguration`, `Cluster`).
    #[error("unspecified {0} name")]
    Unnamed(&'static str),
    /// Two resources of a kind (`Listener`, `Route`, `Cluster`) with one qualified name.
    #[error("duplicate {kind} name {name:?}")]
    Duplicate { kind: &'static str, name: String },
    #[error("unsupported type: {0}")]
    Unsupported(String),
    /// From v1.20.0: two filter chains of one listener with the same match.
    #[error("Listener {0:?} contains filter chains with duplicate matching rules")]
    DuplicateChainMatch(String),
}

/// `ParseResources`' validation of the listeners, after every name was qualified and checked:
/// from v1.20.0, two chains of one listener whose matches are the same message.
fn validate(p: &Parsed, checks: AgentChecks) -> Result<(), Rejection> {
    if !checks.duplicate_chain_matches {
        return Ok(());
    }
    for l in &p.listeners {
        let chains = field(l, "filterChains", "filter_chains").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let matches: Vec<Option<&Value>> = chains.iter().map(|c| field(c, "filterChainMatch", "filter_chain_match")).collect();
        let duplicate = matches.iter().enumerate().any(|(i, m)| matches[..i].contains(m));
        if duplicate {
            let name = l.get("name").and_then(Value::as_str).unwrap_or_default();
            return Err(Rejection::DuplicateChainMatch(name.to_string()));
        }
    }
    Ok(())
}

/// `ParseResources` for one CEC: names qualified, duplicates refused, `cilium.*` filters removed.
fn parse(ns: &str, cec: &str, resources: &[Value], out: &mut AgentOutput) -> Result<Parsed, Rejection> {
    let mut p = Parsed { listeners: Vec::new(), routes: BTreeMap::new(), clusters: Vec::new() };
    for r in resources {
        match type_url(r) {
            LISTENER => {
                let mut l = r.clone();
                let raw = l.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                if raw.is_empty() {
                    return Err(Rejection::Unnamed("Listener"));
                }
                let qualified = qualify(ns, cec, &raw, true);
                if p.listeners.iter().any(|x| x.get("name").and_then(Value::as_str) == Some(qualified.as_str())) {
                    return Err(Rejection::Duplicate { kind: "Listener", name: qualified });
                }
                l["name"] = json!(qualified);
                if let Some(obj) = l.as_object_mut() {
                    obj.remove("@type");
                }
                qualify_listener(ns, cec, &mut l, &qualified, out);
                p.listeners.push(l);
            }
            ROUTE => {
                let mut rc = r.clone();
                let raw = rc.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                if raw.is_empty() {
                    return Err(Rejection::Unnamed("RouteConfiguration"));
                }
                qualify_route_config(ns, cec, &mut rc);
                let qualified = rc.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                if p.routes.contains_key(&qualified) {
                    return Err(Rejection::Duplicate { kind: "Route", name: qualified });
                }
                if let Some(obj) = rc.as_object_mut() {
                    obj.remove("@type");
                }
                p.routes.insert(qualified, rc);
            }
            CLUSTER => {
                let mut c = r.clone();
                let raw = c.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                if raw.is_empty() {
                    return Err(Rejection::Unnamed("Cluster"));
                }
                let qualified = qualify(ns, cec, &raw, false);
                if p.clusters.iter().any(|x| x.get("name").and_then(Value::as_str) == Some(qualified.as_str())) {
                    return Err(Rejection::Duplicate { kind: "Cluster", name: qualified });
                }
                c["name"] = json!(qualified);
                if let Some(obj) = c.as_object_mut() {
                    obj.remove("@type");
                }
                if let Some(ts) = field_mut(&mut c, "transportSocket", "transport_socket") {
                    qualify_transport_socket(ns, cec, ts);
                }
                p.clusters.push(c);
            }
            other => return Err(Rejection::Unsupported(other.to_string())),
        }
    }
    Ok(p)
}

fn drop_cilium_filters(list: Option<&mut Value>, owner: &str, out: &mut AgentOutput) {
    if let Some(Value::Array(items)) = list {
        items.retain(|f| {
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let cilium = name.starts_with("cilium.");
            if cilium {
                out.removed_filters.push(format!("{owner}: {name}"));
            }
            !cilium
        });
    }
}

fn qualify_listener(ns: &str, cec: &str, l: &mut Value, lname: &str, out: &mut AgentOutput) {
    drop_cilium_filters(field_mut(l, "listenerFilters", "listener_filters"), lname, out);
    let Some(Value::Array(chains)) = field_mut(l, "filterChains", "filter_chains") else { return };
    for fc in chains {
        if let Some(ts) = field_mut(fc, "transportSocket", "transport_socket") {
            qualify_transport_socket(ns, cec, ts);
        }
        drop_cilium_filters(fc.get_mut("filters"), lname, out);
        let Some(Value::Array(filters)) = fc.get_mut("filters") else { continue };
        for f in filters {
            let Some(tc) = field_mut(f, "typedConfig", "typed_config") else { continue };
            match type_url(tc) {
                HCM => {
                    if let Some(rds) = tc.get_mut("rds")
                        && let Some(n) = field_mut(rds, "routeConfigName", "route_config_name")
                        && let Some(s) = n.as_str().map(str::to_string)
                    {
                        *n = json!(qualify(ns, cec, &s, true));
                    }
                    if let Some(rc) = field_mut(tc, "routeConfig", "route_config") {
                        qualify_route_config(ns, cec, rc);
                    }
                    drop_cilium_filters(field_mut(tc, "httpFilters", "http_filters"), lname, out);
                }
                TCP_PROXY => {
                    if let Some(c) = tc.get_mut("cluster")
                        && let Some(s) = c.as_str().map(str::to_string)
                    {
                        *c = json!(qualify(ns, cec, &s, false));
                    }
                    if let Some(Value::Array(wcs)) =
                        field_mut(tc, "weightedClusters", "weighted_clusters").and_then(|w| w.get_mut("clusters"))
                    {
                        for wc in wcs {
                            if let Some(s) = wc.get("name").and_then(Value::as_str).map(str::to_string) {
                                wc["name"] = json!(qualify(ns, cec, &s, false));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn qualify_route_config(ns: &str, cec: &str, rc: &mut Value) {
    if let Some(n) = rc.get("name").and_then(Value::as_str).map(str::to_string) {
        rc["name"] = json!(qualify(ns, cec, &n, true));
    }
    let Some(Value::Array(vhosts)) = field_mut(rc, "virtualHosts", "virtual_hosts") else { return };
    for vh in vhosts {
        if let Some(n) = vh.get("name").and_then(Value::as_str).map(str::to_string) {
            vh["name"] = json!(qualify(ns, cec, &n, true));
        }
        let Some(Value::Array(routes)) = vh.get_mut("routes") else { continue };
        for r in routes {
            let Some(action) = r.get_mut("route") else { continue };
            if let Some(s) = action.get("cluster").and_then(Value::as_str).map(str::to_string) {
                action["cluster"] = json!(qualify(ns, cec, &s, false));
            }
            if let Some(Value::Array(mirrors)) = field_mut(action, "requestMirrorPolicies", "request_mirror_policies") {
                for m in mirrors {
                    if let Some(s) = m.get("cluster").and_then(Value::as_str).map(str::to_string) {
                        m["cluster"] = json!(qualify(ns, cec, &s, false));
                    }
                }
            }
            if let Some(Value::Array(wcs)) = field_mut(action, "weightedClusters", "weighted_clusters").and_then(|w| w.get_mut("clusters"))
            {
                for wc in wcs {
                    if let Some(s) = wc.get("name").and_then(Value::as_str).map(str::to_string) {
                        wc["name"] = json!(qualify(ns, cec, &s, false));
                    }
                }
            }
        }
    }
}

/// The SDS secret configs of a TLS context: names qualified unless they hold a `/`; no
/// `sdsConfig` (Cilium's xDS server): the name is then a static secret of the bootstrap.
fn qualify_transport_socket(ns: &str, cec: &str, ts: &mut Value) {
    let Some(tc) = field_mut(ts, "typedConfig", "typed_config") else { return };
    if !matches!(type_url(tc), DOWNSTREAM_TLS | UPSTREAM_TLS) {
        return;
    }
    let Some(common) = field_mut(tc, "commonTlsContext", "common_tls_context") else { return };
    for key in [("tlsCertificateSdsSecretConfigs", "tls_certificate_sds_secret_configs")] {
        if let Some(Value::Array(cfgs)) = field_mut(common, key.0, key.1) {
            for c in cfgs {
                if let Some(s) = c.get("name").and_then(Value::as_str).map(str::to_string) {
                    c["name"] = json!(qualify(ns, cec, &s, false));
                }
            }
        }
    }
    if let Some(c) = field_mut(common, "validationContextSdsSecretConfig", "validation_context_sds_secret_config")
        && let Some(s) = c.get("name").and_then(Value::as_str).map(str::to_string)
    {
        c["name"] = json!(qualify(ns, cec, &s, false));
    }
}

fn collect_secrets(l: &Value, into: &mut BTreeSet<String>) {
    let Some(Value::Array(chains)) = field(l, "filterChains", "filter_chains") else { return };
    for fc in chains {
        let names = field(fc, "transportSocket", "transport_socket")
            .and_then(|ts| field(ts, "typedConfig", "typed_config"))
            .and_then(|tc| field(tc, "commonTlsContext", "common_tls_context"))
            .and_then(|c| field(c, "tlsCertificateSdsSecretConfigs", "tls_certificate_sds_secret_configs"))
            .and_then(Value::as_array);
        for c in names.into_iter().flatten() {
            if let Some(n) = c.get("name").and_then(Value::as_str) {
                into.insert(n.to_string());
            }
        }
    }
}

/// Secrets cilium-agent's SDS never answers for (the Secret is not in the secrets namespace,
/// as when the Gateway's certificateRef names a Secret that does not exist): every SDS secret
/// config naming one is pointed at `empty_sds`, a discovery file that holds no resource
/// ([`crate::envoy::sds`], the model's Envoy uses the same source), instead of a static secret
/// of the bootstrap (which Envoy refuses the whole listener for: `Unknown static secret`). This
/// is what cilium-envoy sees: the agent fills every SDS config without a source with Cilium's
/// xDS server (`pkg/ciliumenvoyconfig/cec_resource_parser.go: qualifySdsSecretConfig`, at
/// v1.19.5, v1.19.6, v1.19.7 and v1.20.1), which never answers for it; Envoy then activates the
/// listener with every chain, and the chains using the Secret reset TLS handshakes.
pub fn never_served(listeners: &mut [Value], missing: &BTreeSet<String>, empty_sds: &std::path::Path) {
    for l in listeners {
        let Some(Value::Array(chains)) = field_mut(l, "filterChains", "filter_chains") else { continue };
        for fc in chains {
            let cfgs = field_mut(fc, "transportSocket", "transport_socket")
                .and_then(|ts| field_mut(ts, "typedConfig", "typed_config"))
                .and_then(|tc| field_mut(tc, "commonTlsContext", "common_tls_context"))
                .and_then(|c| field_mut(c, "tlsCertificateSdsSecretConfigs", "tls_certificate_sds_secret_configs"));
            let Some(Value::Array(cfgs)) = cfgs else { continue };
            for c in cfgs {
                if c.get("name").and_then(Value::as_str).is_some_and(|n| missing.contains(n)) {
                    c["sdsConfig"] = crate::envoy::sds::never_answering_source(empty_sds);
                }
            }
        }
    }
}

/// Each HCM's `rds` becomes its route configuration, inline: what Cilium's RDS would send.
fn inline_routes(l: &mut Value, routes: &BTreeMap<String, Value>, lname: &str, notes: &mut Vec<String>) {
    let Some(Value::Array(chains)) = field_mut(l, "filterChains", "filter_chains") else { return };
    for fc in chains {
        let Some(Value::Array(filters)) = fc.get_mut("filters") else { continue };
        for f in filters {
            let Some(tc) = field_mut(f, "typedConfig", "typed_config") else { continue };
            if type_url(tc) != HCM {
                continue;
            }
            let Some(obj) = tc.as_object_mut() else { continue };
            let Some(rds) = obj.remove("rds") else { continue };
            let name = field(&rds, "routeConfigName", "route_config_name").and_then(Value::as_str).unwrap_or_default().to_string();
            let rc = match routes.get(&name) {
                Some(rc) => rc.clone(),
                None => {
                    // Cilium's RDS would never answer for it: no route matches anything.
                    notes.push(format!("{lname}: route configuration {name} is not in the CEC; served empty"));
                    json!({ "name": name })
                }
            };
            obj.insert("routeConfig".into(), rc);
        }
    }
}

/// An `EDS` cluster of `<ns>/<svc>:<port>` as a `STATIC` one on the Service's backend.
fn static_cluster(mut c: Value, addrs: &Addresses) -> Value {
    let eds = field(&c, "type", "type").and_then(Value::as_str) == Some("EDS");
    if !eds {
        return c;
    }
    let service = field(&c, "edsClusterConfig", "eds_cluster_config")
        .and_then(|e| field(e, "serviceName", "service_name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_default();
    let endpoint = service
        .rsplit_once(':')
        .map(|(svc, _port)| svc)
        .and_then(|svc| svc.split_once('/'))
        .and_then(|(ns, name)| addrs.backends.get(&(ns.to_string(), name.to_string())));
    let name = c.get("name").cloned().unwrap_or(Value::Null);
    if let Some(obj) = c.as_object_mut() {
        obj.remove("edsClusterConfig");
        obj.remove("eds_cluster_config");
        obj.insert("type".into(), json!("STATIC"));
        let lb: Vec<Value> = endpoint.into_iter().map(|a| json!({ "endpoint": { "address": socket_address(*a) } })).collect();
        let mut la = Map::new();
        la.insert("clusterName".into(), name);
        la.insert("endpoints".into(), json!([{ "lbEndpoints": lb }]));
        obj.insert("loadAssignment".into(), Value::Object(la));
    }
    c
}

/// Why the agent refuses `cec` when it parses it (the same checks as [`agent_step`]), if it does.
pub fn refusal(cec: &Value, checks: AgentChecks) -> Option<String> {
    let ns = cec.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    let name = cec.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let resources = cec.pointer("/spec/resources").and_then(Value::as_array).cloned().unwrap_or_default();
    parse(ns, name, &resources, &mut AgentOutput::default()).and_then(|p| validate(&p, checks)).err().map(|why| why.to_string())
}

/// The agent's CEC table across the updates of one case's steps, as its reflector fills it
/// (`pkg/ciliumenvoyconfig/k8s_reflector.go: registerCECK8sReflector` with `pkg/k8s/statedb.go:
/// RegisterReflector`, the same at every pinned tag): a CEC the agent refuses when it parses it
/// yields no object, so the table neither inserts nor deletes. The generation taken before
/// stays served, and deleting the CEC then parses the same refused resources and removes
/// nothing (the model's rule refused-cec-keeps-generation).
#[derive(Debug, Clone, Default)]
pub struct CecTable {
    /// `ns/name` -> the generation the agent holds, and whether a newer one was refused since.
    held: BTreeMap<String, (Value, bool)>,
}

impl CecTable {
    /// The CECs the agent serves once it has seen `cecs` (every CEC the API server now holds for
    /// the case), with a sentence for each generation kept. A refused CEC with nothing held is
    /// passed on, for [`agent_step`] to refuse and say so.
    pub fn update(&mut self, cecs: &[Value], checks: AgentChecks) -> (Vec<Value>, Vec<String>) {
        let key = |c: &Value| {
            format!(
                "{}/{}",
                c.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default(),
                c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
            )
        };
        let mut served = Vec::new();
        let mut notes = Vec::new();
        let mut seen = BTreeSet::new();
        for cec in cecs {
            let k = key(cec);
            seen.insert(k.clone());
            // Before 1.20 the agent passes two identical chain matches on to Envoy, which refuses
            // the listener; the agent's NACK revert (pkg/envoy/xds_server.go:
            // UpdateEnvoyResources) puts back the generation Envoy accepted before, if any.
            let envoy_refuses = !checks.duplicate_chain_matches
                && refusal(cec, AgentChecks { duplicate_chain_matches: true }).is_some()
                && refusal(cec, checks).is_none();
            if let (true, Some((older, _))) = (envoy_refuses, self.held.get(&k)) {
                notes.push(format!(
                    "CiliumEnvoyConfig {k}: Envoy refuses this generation (two identical filter-chain matches); the agent's revert puts back the one Envoy accepted before"
                ));
                served.push(older.clone());
                continue;
            }
            match (refusal(cec, checks), self.held.get_mut(&k)) {
                (Some(why), Some((older, refused))) => {
                    *refused = true;
                    notes.push(format!(
                        "CiliumEnvoyConfig {k}: this generation refused when parsed ({why}); the agent keeps serving the one it took before (k8s_reflector.go: no object, so no insert and no delete)"
                    ));
                    served.push(older.clone());
                }
                (Some(_), None) => served.push(cec.clone()),
                (None, _) => {
                    self.held.insert(k, (cec.clone(), false));
                    served.push(cec.clone());
                }
            }
        }
        // A CEC deleted since: gone from the table unless its last update was refused.
        self.held.retain(|k, (_, refused)| seen.contains(k) || *refused);
        for (k, (older, _)) in self.held.iter().filter(|(k, _)| !seen.contains(*k)) {
            notes.push(format!(
                "CiliumEnvoyConfig {k} is deleted, but its last update was refused when parsed: the agent keeps serving the generation it took before"
            ));
            served.push(older.clone());
        }
        (served, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_cecs_reason_reads_as_the_agent_says_it() {
        // The model's rule duplicate-chain-match-cec-rejected says the same words (translate.rs).
        let e = Rejection::DuplicateChainMatch("ns/cilium-gateway-gw/listener".into());
        assert_eq!(e.to_string(), "Listener \"ns/cilium-gateway-gw/listener\" contains filter chains with duplicate matching rules");
        assert_eq!(Rejection::Unnamed("RouteConfiguration").to_string(), "unspecified RouteConfiguration name");
        assert_eq!(Rejection::Unsupported("type.googleapis.com/x".into()).to_string(), "unsupported type: type.googleapis.com/x");
    }

    #[test]
    fn names_are_qualified_as_cilium_does() {
        assert_eq!(qualify("ns", "cec", "listener", true), "ns/cec/listener");
        assert_eq!(qualify("ns", "cec", "ns:svc:443", false), "ns/cec/ns:svc:443");
        // A name with a slash is kept unless forced; forced, kept only when it starts with the
        // CEC's namespace.
        assert_eq!(qualify("ns", "cec", "cilium-secrets/ns-tls", false), "cilium-secrets/ns-tls");
        assert_eq!(qualify("ns", "cec", "other/x", true), "ns/cec/other/x");
        assert_eq!(qualify("ns", "cec", "ns/cec/listener", true), "ns/cec/listener");
        assert_eq!(qualify("ns", "cec", "", true), "");
    }

    fn cec(resources: Value, services: Value) -> Value {
        json!({
            "apiVersion": "cilium.io/v2", "kind": "CiliumEnvoyConfig",
            "metadata": {"namespace": "ns", "name": "cilium-gateway-gw"},
            "spec": {"resources": resources, "services": services}
        })
    }

    fn listener(name: &str, route: &str) -> Value {
        json!({
            "@type": LISTENER, "name": name,
            "listenerFilters": [{"name": "envoy.filters.listener.tls_inspector"}, {"name": "cilium.bpf_metadata"}],
            "filterChains": [
                {"filterChainMatch": {"transportProtocol": "raw_buffer"},
                 "filters": [{"name": "envoy.filters.network.http_connection_manager",
                              "typedConfig": {"@type": HCM, "statPrefix": route, "rds": {"routeConfigName": route}}}]},
                {"filterChainMatch": {"transportProtocol": "tls", "serverNames": ["api.example.test"]},
                 "filters": [{"name": "envoy.filters.network.tcp_proxy",
                              "typedConfig": {"@type": TCP_PROXY, "statPrefix": "p", "cluster": "ns:api:443"}}]},
                {"filterChainMatch": {"transportProtocol": "tls", "serverNames": ["*.example.test"]},
                 "transportSocket": {"name": "envoy.transport_sockets.tls", "typedConfig": {"@type": DOWNSTREAM_TLS,
                     "commonTlsContext": {"tlsCertificateSdsSecretConfigs": [{"name": "cilium-secrets/ns-wild"}]}}},
                 "filters": [{"name": "envoy.filters.network.http_connection_manager",
                              "typedConfig": {"@type": HCM, "statPrefix": "s", "rds": {"routeConfigName": "listener-secure"}}}]}
            ]
        })
    }

    fn addrs() -> Addresses {
        let svc = ("ns".to_string(), "cilium-gateway-gw".to_string());
        let a = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        Addresses {
            service_ports: [(svc.clone(), vec![80, 443])].into_iter().collect(),
            frontends: [((svc.clone(), 80), a(4080)), ((svc, 443), a(4443))].into_iter().collect(),
            backends: [(("ns".to_string(), "api".to_string()), a(5000))].into_iter().collect(),
        }
    }

    /// The upstream protocol of `name` among `out`'s clusters, as the dump reader reads it.
    fn protocol_of(out: &AgentOutput, name: &str) -> crate::types::UpstreamProtocol {
        let c = out.clusters.iter().find(|c| c["name"] == name).expect("the cluster");
        crate::observe::envoy_dump::clusters::protocol_of(c).expect("a known protocol")
    }

    #[test]
    fn a_cec_with_services_gets_the_agents_protocol_where_the_operator_set_none() {
        use crate::types::UpstreamProtocol as U;
        let opts = |o: Value| {
            json!({"envoy.extensions.upstreams.http.v3.HttpProtocolOptions":
            {"@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "explicitHttpConfig": o}})
        };
        let resources = json!([
            listener("listener", "listener-insecure"),
            {"@type": ROUTE, "name": "listener-insecure", "virtualHosts": []},
            {"@type": ROUTE, "name": "listener-secure", "virtualHosts": []},
            {"@type": CLUSTER, "name": "ns:api:443", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/api:443"}},
            {"@type": CLUSTER, "name": "ns:web:80", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/web:80"},
             "typedExtensionProtocolOptions": opts(json!({"httpProtocolOptions": {}}))},
            {"@type": CLUSTER, "name": "ns:h2c:80", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/h2c:80"},
             "typedExtensionProtocolOptions": opts(json!({"http2ProtocolOptions": {}}))},
            {"@type": CLUSTER, "name": "ns:tls:443", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/tls:443"},
             "transportSocket": {"name": "envoy.transport_sockets.tls", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"}}}
        ]);
        let services = json!([{"name": "cilium-gateway-gw", "namespace": "ns"}]);
        let out = agent_step(&[cec(resources.clone(), services)], &addrs(), AgentChecks::default());
        assert_eq!(protocol_of(&out, "ns/cilium-gateway-gw/ns:api:443"), U::Downstream);
        assert_eq!(protocol_of(&out, "ns/cilium-gateway-gw/ns:web:80"), U::Http1);
        assert_eq!(protocol_of(&out, "ns/cilium-gateway-gw/ns:h2c:80"), U::Http2);
        assert_eq!(protocol_of(&out, "ns/cilium-gateway-gw/ns:tls:443"), U::Auto);
        // Without services the agent injects nothing.
        let out = agent_step(&[cec(resources, json!([]))], &addrs(), AgentChecks::default());
        assert_eq!(protocol_of(&out, "ns/cilium-gateway-gw/ns:api:443"), U::None);
    }

    #[test]
    fn one_listener_for_every_port_carries_both_addresses_and_inline_routes() {
        let resources = json!([
            listener("listener", "listener-insecure"),
            {"@type": ROUTE, "name": "listener-insecure", "virtualHosts": [{"name": "*", "domains": ["*"],
                "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "ns:web:80"}}]}]},
            {"@type": ROUTE, "name": "listener-secure", "virtualHosts": []},
            {"@type": CLUSTER, "name": "ns:api:443", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/api:443"}},
            {"@type": CLUSTER, "name": "ns:web:80", "type": "EDS", "edsClusterConfig": {"serviceName": "ns/web:80"}}
        ]);
        let out =
            agent_step(&[cec(resources, json!([{"name": "cilium-gateway-gw", "namespace": "ns"}]))], &addrs(), AgentChecks::default());
        assert!(out.rejected.is_empty(), "{:?}", out.rejected);
        assert_eq!(out.listeners.len(), 1);
        let l = &out.listeners[0];
        assert_eq!(l["name"], "ns/cilium-gateway-gw/listener");
        assert_eq!(l["address"]["socketAddress"]["portValue"], 4080);
        assert_eq!(l["additionalAddresses"][0]["address"]["socketAddress"]["portValue"], 4443);
        assert_eq!(out.removed_filters, ["ns/cilium-gateway-gw/listener: cilium.bpf_metadata"]);
        let hcm = &l["filterChains"][0]["filters"][0]["typedConfig"];
        assert!(hcm.get("rds").is_none());
        assert_eq!(hcm["routeConfig"]["name"], "ns/cilium-gateway-gw/listener-insecure");
        assert_eq!(hcm["routeConfig"]["virtualHosts"][0]["routes"][0]["route"]["cluster"], "ns/cilium-gateway-gw/ns:web:80");
        assert_eq!(l["filterChains"][1]["filters"][0]["typedConfig"]["cluster"], "ns/cilium-gateway-gw/ns:api:443");
        assert_eq!(out.secrets.iter().collect::<Vec<_>>(), ["cilium-secrets/ns-wild"]);
        // The API Service has a backend; the web Service does not (no endpoints).
        let api = out.clusters.iter().find(|c| c["name"] == "ns/cilium-gateway-gw/ns:api:443").expect("api cluster");
        assert_eq!(api["type"], "STATIC");
        assert_eq!(api["loadAssignment"]["endpoints"][0]["lbEndpoints"][0]["endpoint"]["address"]["socketAddress"]["portValue"], 5000);
        let web = out.clusters.iter().find(|c| c["name"] == "ns/cilium-gateway-gw/ns:web:80").expect("web cluster");
        assert_eq!(web["loadAssignment"]["endpoints"][0]["lbEndpoints"], json!([]));
    }

    #[test]
    fn a_missing_secret_is_never_served_and_its_listener_kept() {
        // Seed 1, layout 1 of the differential: the HTTPS listener's Secret does not exist. As a
        // static secret reference Envoy refused the whole listener (no chain, 80 refused too);
        // cilium-agent's SDS instead never answers and Envoy keeps every chain.
        let resources = json!([listener("listener", "listener-insecure")]);
        let mut out =
            agent_step(&[cec(resources, json!([{"name": "cilium-gateway-gw", "namespace": "ns"}]))], &addrs(), AgentChecks::default());
        let missing: BTreeSet<String> = out.secrets.clone();
        assert_eq!(missing.iter().collect::<Vec<_>>(), ["cilium-secrets/ns-wild"]);
        never_served(&mut out.listeners, &missing, std::path::Path::new("/work/sds-never.yaml"));
        let chains = out.listeners[0]["filterChains"].as_array().expect("chains");
        assert_eq!(chains.len(), 3, "no chain is dropped");
        let sds = &chains[2]["transportSocket"]["typedConfig"]["commonTlsContext"]["tlsCertificateSdsSecretConfigs"][0];
        assert_eq!(sds["name"], "cilium-secrets/ns-wild");
        assert_eq!(sds["sdsConfig"]["pathConfigSource"]["path"], "/work/sds-never.yaml");
        // A Secret that exists keeps its static reference.
        let mut present = agent_step(
            &[cec(json!([listener("listener", "listener-insecure")]), json!([{"name": "cilium-gateway-gw", "namespace": "ns"}]))],
            &addrs(),
            AgentChecks::default(),
        );
        never_served(&mut present.listeners, &BTreeSet::new(), std::path::Path::new("/work/sds-never.yaml"));
        let sds = &present.listeners[0]["filterChains"][2]["transportSocket"]["typedConfig"]["commonTlsContext"]["tlsCertificateSdsSecretConfigs"]
            [0];
        assert!(sds.get("sdsConfig").is_none(), "{sds}");
    }

    #[test]
    fn per_port_listeners_get_their_own_ports() {
        let resources = json!([listener("listener", "listener-insecure"), listener("listener-443", "listener-443")]);
        let services = json!([
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener", "ports": [80]},
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener-443", "ports": [443]}
        ]);
        let out = agent_step(&[cec(resources, services)], &addrs(), AgentChecks::default());
        let by_name: BTreeMap<&str, &Value> = out.listeners.iter().map(|l| (l["name"].as_str().unwrap(), l)).collect();
        assert_eq!(by_name["ns/cilium-gateway-gw/listener"]["address"]["socketAddress"]["portValue"], 4080);
        assert_eq!(by_name["ns/cilium-gateway-gw/listener-443"]["address"]["socketAddress"]["portValue"], 4443);
        assert!(by_name["ns/cilium-gateway-gw/listener-443"].get("additionalAddresses").is_none());
        assert!(
            out.notes.iter().any(|n| n.contains("route configuration ns/cilium-gateway-gw/listener-443 is not in the CEC")),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn a_port_two_services_entries_name_goes_to_the_first() {
        // Cilium's operator at v1.19.6 names 443 for `listener` (a plain listener there) and for
        // `listener-443` (seed 1, layout 4 of the differential). ProxyRedirects.ForPort sends 443
        // to `listener`; `listener-443` keeps its proxy port, unreached. Both bound to 443 made
        // Envoy refuse the second for a duplicate address.
        let resources = json!([listener("listener", "listener-insecure"), listener("listener-443", "listener-443")]);
        let services = json!([
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener", "ports": [443]},
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener-443", "ports": [443]}
        ]);
        let out = agent_step(&[cec(resources, services)], &addrs(), AgentChecks::default());
        let by_name: BTreeMap<&str, &Value> = out.listeners.iter().map(|l| (l["name"].as_str().unwrap(), l)).collect();
        assert_eq!(by_name["ns/cilium-gateway-gw/listener"]["address"]["socketAddress"]["portValue"], 4443);
        assert_eq!(by_name["ns/cilium-gateway-gw/listener-443"]["address"]["socketAddress"]["portValue"], 0);
        assert!(out.notes.iter().any(|n| n == "ns/cilium-gateway-gw/listener-443: no Service port is redirected to this listener"));
        // An entry naming the port wins over an earlier one naming no ports.
        let resources = json!([listener("listener", "listener-insecure"), listener("listener-443", "listener-443")]);
        let services = json!([
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener"},
            {"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener-443", "ports": [443]}
        ]);
        let out = agent_step(&[cec(resources, services)], &addrs(), AgentChecks::default());
        assert_eq!(out.bound["ns/cilium-gateway-gw/listener"].iter().map(|a| a.port()).collect::<Vec<_>>(), [4080]);
        assert_eq!(out.bound["ns/cilium-gateway-gw/listener-443"].iter().map(|a| a.port()).collect::<Vec<_>>(), [4443]);
    }

    /// cilium#46848, from v1.20.0: two chains of one listener with the same match (two
    /// catch-all TLS chains, as a hostname-less HTTPS and TLS listener on one port make) reject
    /// the whole CEC, the plain-HTTP listener with it; at 1.19.x only Envoy refuses that listener.
    /// Matches are compared whole and in order: the same names in another order pass, as
    /// upstream says ("strictly weaker than Envoy's").
    #[test]
    fn from_1_20_identical_chain_matches_reject_the_whole_cec() {
        let chain = |m: Value| json!({"filterChainMatch": m, "filters": []});
        let tls_listener = |chains: Vec<Value>| json!({"@type": LISTENER, "name": "listener-443", "filterChains": chains});
        let any_tls = json!({"transportProtocol": "tls"});
        let with = |resources: Value, v: &str| {
            let checks = AgentChecks::at(&crate::case::CiliumVersion::parse(v).unwrap());
            agent_step(&[cec(resources, json!([{"name": "cilium-gateway-gw", "namespace": "ns"}]))], &addrs(), checks)
        };
        let twins = json!([listener("listener", "listener-insecure"), tls_listener(vec![chain(any_tls.clone()), chain(any_tls.clone())])]);
        for v in ["1.20.0", "1.20.2"] {
            let out = with(twins.clone(), v);
            assert_eq!(
                out.rejected,
                [
                    "ns/cilium-gateway-gw: Listener \"ns/cilium-gateway-gw/listener-443\" contains filter chains with duplicate matching rules"
                ],
                "{v}"
            );
            assert!(out.listeners.is_empty(), "{v}: nothing of the CEC reaches Envoy");
        }
        let old = with(twins, "1.19.7");
        assert!(old.rejected.is_empty() && old.listeners.len() == 2, "{:?}", old.rejected);
        // Not the same message: other names, the same names in another order, or one chain
        // without a match beside one with an empty match.
        let a = json!({"transportProtocol": "tls", "serverNames": ["a.test", "b.test"]});
        let b = json!({"transportProtocol": "tls", "serverNames": ["b.test", "a.test"]});
        let apart = json!([tls_listener(vec![chain(a), chain(b), chain(any_tls), json!({"filters": []}), chain(json!({}))])]);
        let out = with(apart, "1.20.2");
        assert!(out.rejected.is_empty(), "{:?}", out.rejected);
        // Two chains without any match are the same (both unset).
        let bare = json!([tls_listener(vec![json!({"filters": []}), json!({"filters": []})])]);
        assert_eq!(with(bare, "1.20.2").rejected.len(), 1);
    }

    #[test]
    fn a_duplicate_listener_name_rejects_the_whole_cec() {
        // cilium#48269: two `listener-443` in one CEC; the agent takes none of its resources.
        let resources = json!([listener("listener-443", "a"), listener("listener-443", "b")]);
        let out = agent_step(&[cec(resources, json!([]))], &addrs(), AgentChecks::default());
        assert!(out.listeners.is_empty() && out.clusters.is_empty());
        assert_eq!(out.rejected, ["ns/cilium-gateway-gw: duplicate Listener name \"ns/cilium-gateway-gw/listener-443\""]);
    }

    #[test]
    fn a_listener_nothing_redirects_to_listens_unreached() {
        let resources = json!([listener("listener", "r"), listener("orphan", "r2")]);
        let services = json!([{"name": "cilium-gateway-gw", "namespace": "ns", "listener": "listener"}]);
        let out = agent_step(&[cec(resources, services)], &addrs(), AgentChecks::default());
        let orphan = out.listeners.iter().find(|l| l["name"] == "ns/cilium-gateway-gw/orphan").unwrap();
        assert_eq!(orphan["address"]["socketAddress"]["portValue"], 0);
        assert!(out.notes.iter().any(|n| n == "ns/cilium-gateway-gw/orphan: no Service port is redirected to this listener"));
        // Without `ports`, every frontend port of the Service goes to the named listener.
        assert_eq!(out.bound["ns/cilium-gateway-gw/listener"].len(), 2);
    }

    #[test]
    fn a_generation_refused_when_parsed_leaves_the_one_before_it_served() {
        let good = cec(json!([listener("listener", "a")]), json!([]));
        let bad = cec(json!([listener("listener", "a"), listener("listener", "b")]), json!([]));
        let checks = AgentChecks::default();
        let mut table = CecTable::default();
        // Nothing held: the refused CEC is passed on, for agent_step to refuse and say.
        assert_eq!(table.update(std::slice::from_ref(&bad), checks).0, std::slice::from_ref(&bad));
        assert_eq!(table.update(std::slice::from_ref(&good), checks), (vec![good.clone()], vec![]));
        let (served, notes) = table.update(std::slice::from_ref(&bad), checks);
        assert_eq!(served, std::slice::from_ref(&good));
        assert!(notes[0].contains("keeps serving the one it took before"), "{notes:?}");
        // Deleted after the refused update: still served.
        let (served, notes) = table.update(&[], checks);
        assert_eq!(served, std::slice::from_ref(&good));
        assert!(notes[0].contains("is deleted"), "{notes:?}");
        // A good generation replaces it; deleted then, it is gone.
        assert_eq!(table.update(std::slice::from_ref(&good), checks).0, std::slice::from_ref(&good));
        assert_eq!(table.update(&[], checks), (vec![], vec![]));
        // Before 1.20 twin chain matches reach Envoy, whose NACK the agent reverts to the
        // generation Envoy accepted before.
        let mut twin = listener("listener", "a");
        let first = twin["filterChains"][1].clone();
        twin["filterChains"].as_array_mut().unwrap().push(first);
        let twins = cec(json!([twin]), json!([]));
        let mut table = CecTable::default();
        assert_eq!(table.update(std::slice::from_ref(&twins), checks).0, std::slice::from_ref(&twins));
        table.update(std::slice::from_ref(&good), checks);
        let (served, notes) = table.update(std::slice::from_ref(&twins), checks);
        assert_eq!(served, std::slice::from_ref(&good));
        assert!(notes[0].contains("revert puts back"), "{notes:?}");
    }
}
