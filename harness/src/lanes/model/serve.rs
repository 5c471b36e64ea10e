//! Serving a prediction: in-process backends for the case's Services, the predicted listeners
//! rendered into a real Envoy through file-based LDS (so Envoy's own refusals show as
//! `error_state`, as they do under Cilium's xDS), and a local port for every Gateway port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use super::input::GatewayInput;
use super::translate::{Chain, ChainAction as PAction, Prediction, Transport, VhostTarget};
use crate::backends::{HttpBackend, TlsBackend};
use crate::case::{Backend, Case};
use crate::envoy::{
    self, AdminSpec, Bootstrap, ChainAction, ChainSpec, ClusterSpec, EnvoyProcess, LdsDir, LdsOutcome, ListenerSpec, RedirectCode,
    RouteAction, StartOptions, TlsTermination, TransportProtocol, VirtualHostSpec,
};
use crate::render::certs::CertSet;
use crate::types::{CertName, Port};

/// A running model: drop it and the Envoy process and every backend stop.
pub struct Served {
    pub envoy: EnvoyProcess,
    /// Gateway port -> the local address standing in for it.
    pub ports: BTreeMap<Port, SocketAddr>,
    /// Whether Envoy accepted the listeners (a rejection is an observation, not a fault).
    pub lds: LdsOutcome,
    _tls: Vec<TlsBackend>,
    _http: Vec<HttpBackend>,
    _work: tempfile::TempDir,
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
    format!("{}/cilium-gateway-{}/{}", gw.namespace, gw.name, short)
}

fn cert_of_secret(case: &Case, secret: &str) -> Option<CertName> {
    case.certificates.iter().map(|c| c.name.clone()).find(|n| crate::case::template::secret_name(n) == secret)
}

fn render_chain(case: &Case, certs: &CertSet, c: &Chain) -> Result<ChainSpec, ServeError> {
    let names: Vec<&str> = c.server_names.iter().map(String::as_str).collect();
    let action = match &c.action {
        PAction::TcpProxy { backends, .. } => {
            let cluster = backends.first().map(|b| b.cluster()).unwrap_or_default();
            return Ok(ChainSpec::passthrough(&names, cluster));
        }
        PAction::Http { route_config, vhosts } => ChainAction::Http {
            route_name: route_config.clone(),
            virtual_hosts: vhosts
                .iter()
                .map(|v| {
                    let domains: Vec<&str> = v.domains.iter().map(String::as_str).collect();
                    let action = match &v.target {
                        VhostTarget::Service(s) => RouteAction::Cluster(s.cluster()),
                        VhostTarget::RedirectHttps { status } => {
                            RouteAction::Redirect { https: true, status: RedirectCode::from_status(*status).unwrap_or(RedirectCode::Found) }
                        }
                    };
                    VirtualHostSpec::new(v.route.clone(), &domains, action)
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
        (Transport::Tls, Some(secret)) => {
            // The Secret exists only if a case certificate renders to its name (the model checks).
            let name = cert_of_secret(case, secret)
                .ok_or_else(|| ServeError::Backend { name: secret.clone(), message: "no certificate for this Secret".into() })?;
            let cert = certs.get(&name)?;
            let tls =
                TlsTermination { cert_chain: cert.chain_path.clone(), private_key: cert.key_path.clone(), alpn: vec!["http/1.1".into()] };
            Ok(ChainSpec::terminate(&names, tls, action))
        }
        (Transport::Tls, None) => Ok(ChainSpec::tls_match(&names, action)),
    }
}

/// Starts backends and Envoy for `prediction`, waiting until Envoy has taken (or refused) the
/// listeners. Must run inside a tokio runtime.
pub async fn serve(
    case: &Case,
    gw: &GatewayInput,
    certs: &CertSet,
    prediction: &Prediction,
    ready: Duration,
) -> Result<Served, ServeError> {
    let mut tls = Vec::new();
    let mut http = Vec::new();
    let mut backend_addr: BTreeMap<String, SocketAddr> = BTreeMap::new();
    for (name, backend) in &case.backends {
        let err = |e: std::io::Error| ServeError::Backend { name: name.to_string(), message: e.to_string() };
        match backend {
            Backend::Tls { cert } => {
                let b = TlsBackend::start(name.clone(), certs.server_config(cert, &[b"http/1.1"])?).map_err(err)?;
                backend_addr.insert(name.to_string(), b.addr());
                tls.push(b);
            }
            Backend::Http => {
                let b = HttpBackend::start(name.clone()).map_err(err)?;
                backend_addr.insert(name.to_string(), b.addr());
                http.push(b);
            }
        }
    }
    let mut ports = BTreeMap::new();
    for l in &gw.listeners {
        if let std::collections::btree_map::Entry::Vacant(slot) = ports.entry(l.port) {
            slot.insert(envoy::free_local_addr().map_err(ServeError::Port)?);
        }
    }
    let mut clusters: BTreeMap<String, ClusterSpec> = BTreeMap::new();
    let mut listeners = Vec::new();
    for l in &prediction.envoy {
        let addrs: Vec<SocketAddr> = l.ports.iter().filter_map(|p| ports.get(p).copied()).collect();
        let Some((first, rest)) = addrs.split_first() else { continue };
        let mut spec = ListenerSpec::new(qualified(gw, &l.name), *first);
        spec.additional_addresses = rest.to_vec();
        for c in &l.chains {
            spec = spec.chain(render_chain(case, certs, c)?);
            let keys: Vec<_> = match &c.action {
                PAction::TcpProxy { backends, .. } => backends.clone(),
                PAction::Http { vhosts, .. } => {
                    vhosts.iter().filter_map(|v| if let VhostTarget::Service(s) = &v.target { Some(s.clone()) } else { None }).collect()
                }
            };
            for k in keys {
                if k.namespace == gw.namespace
                    && let Some(addr) = backend_addr.get(&k.service)
                {
                    clusters.entry(k.cluster()).or_insert_with(|| ClusterSpec::new(k.cluster(), vec![*addr]));
                }
            }
        }
        listeners.push(spec);
    }

    let work = tempfile::Builder::new().prefix(&format!("layout-gate-model-{}-", case.slug())).tempdir().map_err(ServeError::Io)?;
    let lds = LdsDir::create(&work.path().join("lds"))?;
    // The first LDS version must exist when Envoy starts, or its file watch has nothing to read.
    lds.push("0", &[])?;
    let cfg = work.path().join("bootstrap.json");
    Bootstrap::file_lds(AdminSpec::default(), lds.path(), clusters.into_values().collect()).write(&cfg).map_err(ServeError::Io)?;
    let envoy =
        EnvoyProcess::start_async(&cfg, &work.path().join("envoy"), StartOptions { ready_timeout: ready, ..StartOptions::default() })
            .await?;
    let admin = envoy.admin();
    let before = envoy::lds_counters(&admin).await?;
    lds.push("1", &listeners)?;
    let update = envoy::wait_for_lds_update(&admin, before, ready).await?;
    if update.outcome == LdsOutcome::Rejected {
        let dump = admin.dynamic_listeners_dump().await.unwrap_or_default();
        let text = String::from_utf8_lossy(&dump);
        if text.contains("cannot bind") || text.contains("Address already in use") {
            return Err(ServeError::PortTaken(ports.values().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")));
        }
    }
    Ok(Served { envoy, ports, lds: update.outcome, _tls: tls, _http: http, _work: work })
}

/// `443->127.0.0.1:40123, 80->127.0.0.1:40125`, for messages.
pub fn describe_ports(served: &Served) -> String {
    served.ports.iter().map(|(p, a)| format!("{p}->{a}")).collect::<Vec<_>>().join(", ")
}
