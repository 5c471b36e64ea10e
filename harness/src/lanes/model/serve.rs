//! Serving a prediction: in-process backends for the case's Services, the predicted listeners
//! rendered into a real Envoy through file-based LDS (so Envoy's own refusals show as
//! `error_state`, as they do under Cilium's xDS), and a local port for every Gateway port, held
//! from its choice until the Envoy serving it stops (see [`crate::envoy::HeldAddrs`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;

use super::input::GatewayInput;
use super::input::{Filter, PathMatch, PathModifier, RouteMatch};
use super::translate::{Chain, ChainAction as PAction, Prediction, RouteEntry, RouteTarget, ServiceKey, Transport};
use crate::backends::{HttpBackend, TlsBackend};
use crate::case::{Backend, Case};
use crate::envoy::{
    self, AdminSpec, Bootstrap, ChainAction, ChainSpec, ClusterSpec, EnvoyProcess, HeldAddrs, LdsDir, LdsOutcome, ListenerSpec,
    NeverServed, RedirectCode, RouteAction, StartOptions, TlsTermination, TransportProtocol, VirtualHostSpec,
};
use crate::render::certs::CertSet;
use crate::types::{CertName, Port};

/// A running model: drop it and the Envoy process and every backend stop.
pub struct Served {
    pub envoy: EnvoyProcess,
    /// (Gateway name, Gateway port) -> the local address standing in for it, held while this
    /// lives. Each Gateway has its own addresses, as each has its own Service in a cluster.
    pub ports: PortMap,
    /// Whether Envoy accepted the listeners (a rejection is an observation, not a fault).
    pub lds: LdsOutcome,
    /// What Cilium's agent withdrew after Envoy refused a listener ([`crate::envoy::revert`]).
    pub revert: Revert,
    /// The backends and the stand-in certificates for Secrets that exist only as manifest objects.
    _stage: Stage,
    _work: crate::scratch::Scratch,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("starting backend {name}: {message}")]
    Backend { name: String, message: String },
    #[error("finding a free local port: {0}")]
    Port(std::io::Error),
    #[error("{0}")]
    Envoy(#[from] envoy::EnvoyError),
    #[error("pushing listeners to Envoy: {0}")]
    Lds(#[from] envoy::LdsError),
    #[error("a local port was taken between choosing and binding it ({0}); run again")]
    PortTaken(String),
    #[error("work folder: {0}")]
    Io(std::io::Error),
    #[error("certificate: {0}")]
    Cert(#[from] crate::render::certs::CertError),
}

/// Envoy's full name for a listener of the Gateway, as the Cilium agent qualifies it.
pub fn qualified(gw: &GatewayInput, short: &str) -> String {
    format!("{}/{}/{}", gw.namespace, crate::judge::cilium_gateway_resource(&gw.name), short)
}

fn string_match(value: &str, regex: bool) -> serde_json::Value {
    if regex { json!({ "safe_regex": { "regex": value } }) } else { json!({ "exact": value }) }
}

fn route_match(m: &RouteMatch) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    match &m.path {
        PathMatch::Exact(p) => out.insert("path".into(), json!(p)),
        // Gateway API prefixes match whole segments: `/foo` matches `/foo` and `/foo/x`, not
        // `/foobar`; Envoy's path_separated_prefix says exactly that (`/` stays a prefix).
        PathMatch::Prefix(p) if p == "/" => out.insert("prefix".into(), json!("/")),
        PathMatch::Prefix(p) => out.insert("path_separated_prefix".into(), json!(p.trim_end_matches('/'))),
        PathMatch::Regex(p) => out.insert("safe_regex".into(), json!({ "regex": p })),
    };
    let mut headers: Vec<serde_json::Value> =
        m.headers.iter().map(|h| json!({ "name": h.name.to_ascii_lowercase(), "string_match": string_match(&h.value, h.regex) })).collect();
    if let Some(method) = &m.method {
        headers.push(json!({ "name": ":method", "string_match": { "exact": method } }));
    }
    if !headers.is_empty() {
        out.insert("headers".into(), json!(headers));
    }
    if !m.query.is_empty() {
        let q: Vec<serde_json::Value> =
            m.query.iter().map(|q| json!({ "name": q.name, "string_match": string_match(&q.value, q.regex) })).collect();
        out.insert("query_parameters".into(), json!(q));
    }
    serde_json::Value::Object(out)
}

fn header_values(pairs: &[(String, String)], append: bool) -> Vec<serde_json::Value> {
    let action = if append { "APPEND_IF_EXISTS_OR_ADD" } else { "OVERWRITE_IF_EXISTS_OR_ADD" };
    pairs.iter().map(|(k, v)| json!({ "header": { "key": k, "value": v }, "append_action": action })).collect()
}

/// A cluster's name in an Envoy that serves several cases side by side: `scope` (empty when the
/// Envoy serves one) before it, so no two cases' clusters share a name. A chain with no backend
/// names the empty cluster, which stays empty whatever the scope.
fn scoped(scope: &str, name: String) -> String {
    if scope.is_empty() || name.is_empty() { name } else { format!("{scope}{name}") }
}

/// One Envoy route for a rule's match, as Cilium's `envoy_virtual_host.go` writes it.
pub(super) fn envoy_route(e: &RouteEntry, scope: &str) -> serde_json::Value {
    let mut r = serde_json::Map::new();
    r.insert("match".into(), route_match(&e.matcher));
    match &e.target {
        RouteTarget::NoBackends => {
            r.insert("direct_response".into(), json!({ "status": 500 }));
        }
        RouteTarget::Redirect { scheme, hostname, path, prefix, port, status, proto_guard } => {
            if let (true, Some(s), Some(m)) = (*proto_guard, scheme, r.get_mut("match").and_then(|m| m.as_object_mut())) {
                let guard =
                    json!({ "name": "X-Forwarded-Proto", "string_match": { "exact": s, "ignore_case": true }, "invert_match": true });
                match m.get_mut("headers").and_then(|h| h.as_array_mut()) {
                    Some(h) => h.push(guard),
                    None => {
                        m.insert("headers".into(), json!([guard]));
                    }
                }
            }
            let mut d = serde_json::Map::new();
            if let Some(s) = scheme {
                d.insert("scheme_redirect".into(), json!(s));
            }
            if let Some(h) = hostname {
                d.insert("host_redirect".into(), json!(h));
            }
            if let Some(p) = path {
                d.insert("path_redirect".into(), json!(p));
            }
            if let Some(p) = prefix {
                d.insert("prefix_rewrite".into(), json!(p));
            }
            if let Some(p) = port {
                d.insert("port_redirect".into(), json!(p));
            }
            let code = RedirectCode::from_status(*status).unwrap_or(RedirectCode::Found);
            d.insert("response_code".into(), json!(code.as_envoy()));
            r.insert("redirect".into(), serde_json::Value::Object(d));
        }
        RouteTarget::Services { services } => {
            let mut action = serde_json::Map::new();
            if services.len() == 1 {
                action.insert("cluster".into(), json!(scoped(scope, services[0].0.cluster())));
            } else {
                let clusters: Vec<serde_json::Value> =
                    services.iter().map(|(s, w)| json!({ "name": scoped(scope, s.cluster()), "weight": w })).collect();
                action.insert("weighted_clusters".into(), json!({ "clusters": clusters }));
            }
            for f in &e.filters {
                if let Filter::UrlRewrite { hostname, path } = f {
                    if let Some(h) = hostname {
                        action.insert("host_rewrite_literal".into(), json!(h));
                    }
                    match path {
                        Some(PathModifier::Prefix(p)) => {
                            action.insert("prefix_rewrite".into(), json!(p));
                        }
                        Some(PathModifier::Full(p)) => {
                            action.insert("regex_rewrite".into(), json!({ "pattern": { "regex": "^/.*$" }, "substitution": p }));
                        }
                        None => {}
                    }
                }
            }
            r.insert("route".into(), serde_json::Value::Object(action));
        }
    }
    for f in &e.filters {
        if let Filter::Headers { response, set, add, remove } = f {
            let (to_add, to_remove) = if *response {
                ("response_headers_to_add", "response_headers_to_remove")
            } else {
                ("request_headers_to_add", "request_headers_to_remove")
            };
            let mut values = header_values(set, false);
            values.extend(header_values(add, true));
            if !values.is_empty() {
                r.insert(to_add.into(), json!(values));
            }
            if !remove.is_empty() {
                r.insert(to_remove.into(), json!(remove));
            }
        }
    }
    serde_json::Value::Object(r)
}

fn cert_of_secret(case: &Case, secret: &str) -> Option<CertName> {
    case.certificates.iter().map(|c| c.name.clone()).find(|n| crate::case::template::secret_name(n) == secret)
}

/// A Secret among the manifests carries no key material the model can serve, yet Cilium
/// terminates with it: the model serves a stand-in certificate (named `model-secret-<n>`, for the
/// chain's names) so the chain exists as Cilium builds it. No probe can expect it by name.
fn standins(case: &Case, gateways: &[(&GatewayInput, &Prediction)]) -> Result<(Option<CertSet>, BTreeMap<String, CertName>), ServeError> {
    let mut specs = Vec::new();
    let mut names = BTreeMap::new();
    for (_, p) in gateways {
        for c in p.envoy.iter().flat_map(|l| l.chains.iter()) {
            let Some(secret) = &c.tls_secret else { continue };
            if c.never_served || cert_of_secret(case, secret).is_some() || names.contains_key(secret) {
                continue;
            }
            let bad = |e: crate::types::InvalidValue| ServeError::Backend { name: secret.clone(), message: e.to_string() };
            let name = CertName::new(format!("model-secret-{}", names.len())).map_err(bad)?;
            let mut dns: Vec<crate::types::DnsName> =
                c.server_names.iter().filter_map(|n| crate::types::DnsName::new(n.clone()).ok()).collect();
            if dns.is_empty() {
                dns.push(crate::types::DnsName::new("model-secret.invalid").map_err(bad)?);
            }
            specs.push(crate::render::certs::CertSpec { name: name.clone(), dns_names: dns });
            names.insert(secret.clone(), name);
        }
    }
    if specs.is_empty() {
        return Ok((None, names));
    }
    Ok((Some(CertSet::generate(&format!("model {} stand-ins", case.name), &specs)?), names))
}

fn render_chain(case: &Case, certs: &CertSet, stage: &Stage, c: &Chain, scope: &str) -> Result<ChainSpec, ServeError> {
    let standin = &stage.standin;
    let names: Vec<&str> = c.server_names.iter().map(String::as_str).collect();
    let action = match &c.action {
        PAction::TcpProxy { backends, .. } => {
            let cluster = scoped(scope, backends.first().map(|b| b.cluster()).unwrap_or_default());
            return Ok(ChainSpec::passthrough(&names, cluster));
        }
        PAction::Http { route_config, vhosts } => ChainAction::Http {
            route_name: route_config.clone(),
            virtual_hosts: vhosts
                .iter()
                .map(|v| {
                    let domains: Vec<&str> = v.domains.iter().map(String::as_str).collect();
                    let name = v.domains.first().cloned().unwrap_or_else(|| v.route.clone());
                    VirtualHostSpec::new(name, &domains, RouteAction::Routes(v.routes.iter().map(|r| envoy_route(r, scope)).collect()))
                })
                .collect(),
        },
    };
    match (c.transport, &c.tls_secret) {
        (Transport::RawBuffer, _) => Ok(ChainSpec {
            name: None,
            server_names: Vec::new(),
            transport_protocol: Some(TransportProtocol::RawBuffer),
            destination_port: None,
            action,
            tls: None,
        }),
        (Transport::Tls, Some(secret)) if c.never_served => {
            // Cilium's SDS never serves a Secret that does not exist: the same source the
            // operator lane's agent step gives cilium-envoy (`crate::envoy::sds`).
            let Some(empty_sds) = &stage.never_served else {
                return Err(ServeError::Backend { name: secret.clone(), message: "no empty SDS file staged for this Secret".into() });
            };
            let tls = NeverServed { secret: secret.clone(), empty_sds: empty_sds.1.clone(), alpn: vec!["http/1.1".into()] };
            Ok(ChainSpec::terminate_never_served(&names, tls, action))
        }
        (Transport::Tls, Some(secret)) => {
            // A case certificate, or the stand-in for a Secret that is only a manifest object.
            let cert = match (cert_of_secret(case, secret), &standin.0, standin.1.get(secret)) {
                (Some(name), _, _) => certs.get(&name)?,
                (None, Some(set), Some(name)) => set.get(name)?,
                _ => return Err(ServeError::Backend { name: secret.clone(), message: "no certificate for this Secret".into() }),
            };
            let tls =
                TlsTermination { cert_chain: cert.chain_path.clone(), private_key: cert.key_path.clone(), alpn: vec!["http/1.1".into()] };
            Ok(ChainSpec::terminate(&names, tls, action))
        }
        (Transport::Tls, None) => Ok(ChainSpec::tls_match(&names, action)),
    }
}

/// What every Envoy of one case can share: the in-process backends for its Services and the
/// stand-ins for Secrets that are only manifest objects. Dropping the last holder stops the
/// backends.
pub struct Stage {
    /// (namespace, Service) -> the in-process backend serving it.
    backend_addr: BTreeMap<(String, String), SocketAddr>,
    standin: (Option<CertSet>, BTreeMap<String, CertName>),
    /// The empty SDS discovery file (and the folder holding it) that chains whose Secret never
    /// arrives ask, when any chain does.
    never_served: Option<(crate::scratch::Scratch, std::path::PathBuf)>,
    _tls: Vec<TlsBackend>,
    _http: Vec<HttpBackend>,
}

/// (Gateway name, Gateway port) -> the local address standing in for it. Every address is held
/// (nothing else can bind it, a connection to it is refused) until the last clone is dropped,
/// whether Envoy serves it or not: a Gateway port the prediction serves nothing on (a listener
/// the version does not translate, one Envoy refused) would otherwise be free for any program
/// on the machine to bind, and a probe expecting "nothing" would be answered by it.
pub type PortMap = HeldAddrs<(String, Port)>;

/// Starts the case's backends and makes the stand-ins for every Secret the chains of
/// `gateways` terminate with (pass the predictions of every version that will be served from
/// this stage). Must run inside a tokio runtime.
pub fn stage(case: &Case, gateways: &[(&GatewayInput, &Prediction)], certs: &CertSet) -> Result<Stage, ServeError> {
    let mut tls = Vec::new();
    let mut http = Vec::new();
    let mut backend_addr: BTreeMap<(String, String), SocketAddr> = BTreeMap::new();
    let namespace = super::input::model_namespace(case);
    for (name, backend) in &case.backends {
        let key = (case.backend_namespace(name, &namespace), name.to_string());
        let err = |e: std::io::Error| ServeError::Backend { name: name.to_string(), message: e.to_string() };
        match backend {
            Backend::Tls { cert } => {
                let b = TlsBackend::start(name.clone(), certs.server_config(cert, &[b"http/1.1"])?).map_err(err)?;
                backend_addr.insert(key, b.addr());
                tls.push(b);
            }
            Backend::Http => {
                let b = HttpBackend::start(name.clone()).map_err(err)?;
                backend_addr.insert(key, b.addr());
                http.push(b);
            }
        }
    }
    let never_served = if gateways.iter().any(|(_, p)| p.envoy.iter().flat_map(|l| l.chains.iter()).any(|c| c.never_served)) {
        let dir = crate::scratch::Scratch::labelled(crate::scratch::MODEL, "sds").map_err(ServeError::Io)?;
        let file = envoy::sds::write_empty_sds(dir.path()).map_err(ServeError::Io)?;
        Some((dir, file))
    } else {
        None
    };
    Ok(Stage { backend_addr, standin: standins(case, gateways)?, never_served, _tls: tls, _http: http })
}

/// A free local address for every port of every Gateway, held.
pub fn free_ports(gateways: &[&GatewayInput]) -> Result<PortMap, ServeError> {
    let keys = gateways.iter().flat_map(|gw| gw.listeners.iter().map(|l| (gw.name.clone(), l.port)));
    HeldAddrs::reserve(keys).map_err(ServeError::Port)
}

/// The Envoy configuration serving one set of predictions: exactly what [`start`] gives Envoy.
pub struct Config {
    pub ports: PortMap,
    pub listeners: Vec<ListenerSpec>,
    clusters: Vec<ClusterSpec>,
}

impl Config {
    /// Whether `self` and `other` give Envoy the same listeners and clusters. Both are rendered
    /// to JSON by pure functions of these specs, so equal specs are byte-identical [`bytes`]
    /// (comparing the specs spares serializing a large configuration twice).
    ///
    /// [`bytes`]: Config::bytes
    pub fn same_as(&self, other: &Config) -> bool {
        self.listeners == other.listeners && self.clusters == other.clusters
    }

    /// The listeners (as pushed over LDS) and the clusters (as written into the bootstrap), as
    /// bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let listeners: Vec<serde_json::Value> = self.listeners.iter().map(ListenerSpec::to_json).collect();
        let clusters: Vec<serde_json::Value> = self.clusters.iter().map(ClusterSpec::to_json).collect();
        serde_json::to_vec(&json!({ "listeners": listeners, "clusters": clusters })).unwrap_or_default()
    }
}

/// Renders every Gateway's prediction onto `ports`, with the stage's backends and stand-ins.
pub fn render(
    case: &Case,
    gateways: &[(&GatewayInput, &Prediction)],
    certs: &CertSet,
    stage: &Stage,
    ports: &PortMap,
) -> Result<Config, ServeError> {
    render_scoped(case, gateways, certs, stage, ports, "")
}

/// [`render`], for an Envoy that serves several cases side by side (see [`start_merged`]):
/// every listener and cluster name starts with `scope`, which no other case of that Envoy
/// uses. The scope is the only difference: the same chains, on the case's own addresses.
pub fn render_scoped(
    case: &Case,
    gateways: &[(&GatewayInput, &Prediction)],
    certs: &CertSet,
    stage: &Stage,
    ports: &PortMap,
    scope: &str,
) -> Result<Config, ServeError> {
    let mut clusters: BTreeMap<String, ClusterSpec> = BTreeMap::new();
    let mut listeners = Vec::new();
    for (gw, prediction) in gateways {
        let namespace = super::input::model_namespace(case);
        let app_protocol = |k: &ServiceKey| {
            case.backend_app_protocols
                .iter()
                .find(|(b, _)| b.as_str() == k.service && case.backend_namespace(b, &namespace) == k.namespace)
                .map(|(_, ap)| ap.clone())
        };
        let protocols = super::clusters::cluster_protocols(&prediction.envoy, &app_protocol);
        for l in &prediction.envoy {
            // A listener no Gateway port is sent to (rules::PORT_FIRST_SERVICE_ENTRY) still
            // exists in cilium-envoy, on a proxy port of its own: here an ephemeral local port,
            // as the operator lane's agent step gives it, which no probe reaches.
            let addrs: Vec<SocketAddr> = if l.ports.is_empty() {
                vec![UNREACHED]
            } else {
                l.ports.iter().filter_map(|p| ports.get(&(gw.name.clone(), *p)).copied()).collect()
            };
            let Some((first, rest)) = addrs.split_first() else { continue };
            let mut spec = ListenerSpec::new(format!("{scope}{}", qualified(gw, &l.name)), *first);
            spec.additional_addresses = rest.to_vec();
            for c in &l.chains {
                spec = spec.chain(render_chain(case, certs, stage, c, scope)?);
                let keys: Vec<ServiceKey> = match &c.action {
                    PAction::TcpProxy { backends, .. } => backends.clone(),
                    PAction::Http { vhosts, .. } => vhosts
                        .iter()
                        .flat_map(|v| v.routes.iter())
                        .flat_map(|r| match &r.target {
                            RouteTarget::Services { services } => services.iter().map(|(s, _)| s.clone()).collect(),
                            _ => Vec::new(),
                        })
                        .collect(),
                };
                for k in keys {
                    // A Service the case runs a backend for (in whichever namespace the case
                    // places it) answers; one that only exists among the manifests has no
                    // endpoints, so Envoy answers 503 as a cluster would.
                    let addr = stage.backend_addr.get(&(k.namespace.clone(), k.service.clone())).copied();
                    let name = scoped(scope, k.cluster());
                    let protocol = protocols.get(&k).map(|(p, _)| *p).unwrap_or(crate::types::UpstreamProtocol::None);
                    clusters
                        .entry(name.clone())
                        .or_insert_with(|| ClusterSpec { protocol, ..ClusterSpec::new(name, addr.into_iter().collect()) });
                }
            }
            listeners.push(spec);
        }
    }
    Ok(Config { ports: ports.clone(), listeners, clusters: clusters.into_values().collect() })
}

/// A running Envoy serving one [`Config`]: drop it and the process stops (the backends stop
/// with the last holder of their [`Stage`]).
pub struct Running {
    pub envoy: EnvoyProcess,
    pub lds: LdsOutcome,
    /// What Cilium's agent withdrew after Envoy refused a listener ([`crate::envoy::revert`]).
    pub revert: Revert,
    /// The addresses Envoy was given, held (served or not) until this drops.
    pub ports: PortMap,
    _work: crate::scratch::Scratch,
}

/// Starts one Envoy with `config`, waiting until it has taken (or refused) the listeners.
pub async fn start(case: &Case, config: &Config, ready: Duration) -> Result<Running, ServeError> {
    let (l, revert) = launch(&case.slug(), config.listeners.clone(), config.clusters.clone(), || describe_addrs(config), ready).await?;
    Ok(Running { envoy: l.envoy, lds: l.lds, revert, ports: config.ports.clone(), _work: l.work })
}

/// One Envoy serving several configurations side by side, each rendered by [`render_scoped`]
/// with a scope of its own onto addresses of its own: drop it and the process stops (the
/// addresses stay held by the configurations).
pub struct Merged {
    pub envoy: EnvoyProcess,
    pub lds: LdsOutcome,
    /// What Cilium's agent withdrew after Envoy refused a listener ([`crate::envoy::revert`]).
    pub revert: Revert,
    _work: crate::scratch::Scratch,
}

/// Starts one Envoy with the listeners and clusters of every configuration of `configs`,
/// waiting until it has taken (or refused) the listeners. Envoy takes or refuses each listener
/// on its own, so a listener of one configuration that Envoy refuses is that listener's
/// observation, as it would be in an Envoy of its own.
pub async fn start_merged(label: &str, configs: &[&Config], ready: Duration) -> Result<Merged, ServeError> {
    let listeners: Vec<ListenerSpec> = configs.iter().flat_map(|c| c.listeners.iter().cloned()).collect();
    let mut clusters: Vec<ClusterSpec> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for c in configs.iter().flat_map(|c| c.clusters.iter()) {
        if seen.insert(c.name.clone()) {
            clusters.push(c.clone());
        }
    }
    let describe = || configs.iter().map(|c| describe_addrs(c)).collect::<Vec<_>>().join(", ");
    let (l, revert) = launch(label, listeners, clusters, describe, ready).await?;
    Ok(Merged { envoy: l.envoy, lds: l.lds, revert, _work: l.work })
}

fn describe_addrs(config: &Config) -> String {
    config.ports.values().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
}

/// Listeners Envoy is given one `envoy_ready` wait for. A case's few listeners are applied in
/// milliseconds; a shared Envoy of `check` takes thousands at once (1,000 Gateways), and building
/// each one's TLS contexts took longer than one wait on a loaded machine (the update was still
/// being applied, not refused). The bound grows with the work, one wait per this many.
const LISTENERS_PER_READY_WAIT: usize = 500;

/// How long the update of `listeners` listeners may take: `ready` per started
/// [`LISTENERS_PER_READY_WAIT`].
fn lds_bound(ready: Duration, listeners: usize) -> Duration {
    let waits = u32::try_from(listeners.div_ceil(LISTENERS_PER_READY_WAIT).max(1)).unwrap_or(u32::MAX);
    ready.saturating_mul(waits)
}

/// What one Envoy start made: the Envoy, its listener update's outcome and its work folder.
struct Launched {
    envoy: EnvoyProcess,
    lds: LdsOutcome,
    work: crate::scratch::Scratch,
}

impl crate::envoy::relaunch::Launched for Launched {
    fn envoy(&self) -> &EnvoyProcess {
        &self.envoy
    }
    fn lds(&self) -> LdsOutcome {
        self.lds
    }
}

/// The listeners Envoy refused and every listener Cilium's agent withdrew with them.
pub use crate::envoy::relaunch::Revert;

/// Starts Envoy on `listeners`, answering a refused listener as Cilium's agent makes
/// cilium-envoy answer it (`crate::envoy::relaunch`: a fresh Envoy on what the revert leaves).
async fn launch(
    label: &str,
    listeners: Vec<ListenerSpec>,
    clusters: Vec<ClusterSpec>,
    addrs: impl Fn() -> String,
    ready: Duration,
) -> Result<(Launched, Revert), ServeError> {
    crate::envoy::relaunch::launch_reverting(
        listeners,
        |l: &ListenerSpec| Some(l.name.as_str()),
        |_, listeners| launch_once(label, listeners, clusters.clone(), &addrs, ready),
        |e| ServeError::Envoy(e.into()),
    )
    .await
}

async fn launch_once(
    label: &str,
    listeners: Vec<ListenerSpec>,
    clusters: Vec<ClusterSpec>,
    addrs: &impl Fn() -> String,
    ready: Duration,
) -> Result<Launched, ServeError> {
    let work = crate::scratch::Scratch::labelled(crate::scratch::MODEL, label).map_err(ServeError::Io)?;
    let lds = LdsDir::create(&work.path().join("lds"))?;
    // The first LDS version must exist when Envoy starts, or its file watch has nothing to read.
    lds.push("0", &[])?;
    let cfg = work.path().join("bootstrap.json");
    Bootstrap::file_lds(AdminSpec::default(), lds.path(), clusters).write(&cfg).map_err(ServeError::Io)?;
    let envoy =
        EnvoyProcess::start_async(&cfg, &work.path().join("envoy"), StartOptions { ready_timeout: ready, ..StartOptions::default() })
            .await?;
    let admin = envoy.admin();
    let before = envoy::lds_counters(&admin).await?;
    let count = listeners.len();
    lds.push("1", &listeners)?;
    let t = std::time::Instant::now();
    let update = envoy::wait_for_lds_update(&admin, before, lds_bound(ready, count)).await?;
    tracing::debug!(label, listeners = count, elapsed_ms = t.elapsed().as_millis() as u64, "Envoy applied the listener update");
    if update.outcome == LdsOutcome::Rejected {
        let dump = admin.dynamic_listeners_dump().await.unwrap_or_default();
        let text = String::from_utf8_lossy(&dump);
        // Held addresses cannot be taken; one that was not held (a rendering onto addresses
        // the caller vouched for) can, and that is the harness's port race, never an
        // observation.
        if text.contains("cannot bind") || text.contains("Address already in use") {
            return Err(ServeError::PortTaken(addrs()));
        }
    }
    Ok(Launched { envoy, lds: update.outcome, work })
}

/// Where a listener no Gateway port reaches listens: port 0, an ephemeral port Envoy picks.
const UNREACHED: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// A listener's addresses a client can connect to (not [`UNREACHED`]'s port 0).
fn reachable(l: &ListenerSpec) -> Vec<SocketAddr> {
    l.addresses().filter(|a| a.port() != 0).collect()
}

/// Waits until Envoy answers on `config` as it will from then on (see
/// [`envoy::wait_listening`]); what was not ready when `timeout` passed.
/// A listener the agent withdrew is not waited for.
pub async fn wait_listening(running: &Running, config: &Config, timeout: Duration) -> Result<(), String> {
    let listeners: Vec<(String, Vec<SocketAddr>)> =
        config.listeners.iter().filter(|l| !running.revert.withdrawn.contains(&l.name)).map(|l| (l.name.clone(), reachable(l))).collect();
    envoy::wait_listening(&running.envoy, &listeners, timeout).await
}

/// [`wait_listening`] for an Envoy serving every configuration of `configs` ([`start_merged`]).
/// A listener the agent withdrew is not waited for.
pub async fn wait_listening_all(running: &Merged, configs: &[&Config], timeout: Duration) -> Result<(), String> {
    let listeners: Vec<(String, Vec<SocketAddr>)> = configs
        .iter()
        .flat_map(|c| c.listeners.iter())
        .filter(|l| !running.revert.withdrawn.contains(&l.name))
        .map(|l| (l.name.clone(), reachable(l)))
        .collect();
    envoy::wait_listening(&running.envoy, &listeners, timeout).await
}

/// Starts backends and one Envoy for every Gateway's prediction, waiting until Envoy has taken
/// (or refused) the listeners. Must run inside a tokio runtime.
pub async fn serve(case: &Case, gateways: &[(&GatewayInput, &Prediction)], certs: &CertSet, ready: Duration) -> Result<Served, ServeError> {
    let stage = stage(case, gateways, certs)?;
    let gws: Vec<&GatewayInput> = gateways.iter().map(|(g, _)| *g).collect();
    let config = render(case, gateways, certs, &stage, &free_ports(&gws)?)?;
    let running = start(case, &config, ready).await?;
    Ok(Served { envoy: running.envoy, ports: running.ports, lds: running.lds, revert: running.revert, _stage: stage, _work: running._work })
}

/// `gw:443->127.0.0.1:40123, gw:80->127.0.0.1:40125`, for messages.
pub fn describe_ports(served: &Served) -> String {
    served.ports.iter().map(|((g, p), a)| format!("{g}:{p}->{a}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_update_wait_grows_with_the_listeners() {
        let ready = Duration::from_secs(10);
        // A case's few listeners: one wait, as before.
        assert_eq!(lds_bound(ready, 0), ready);
        assert_eq!(lds_bound(ready, 3), ready);
        assert_eq!(lds_bound(ready, LISTENERS_PER_READY_WAIT), ready);
        // A shared Envoy of 1,000 Gateways (3,000 listeners): six.
        assert_eq!(lds_bound(ready, LISTENERS_PER_READY_WAIT + 1), ready * 2);
        assert_eq!(lds_bound(ready, 3000), ready * 6);
    }
}
