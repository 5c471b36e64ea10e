//! The shared setup of the Envoy trials: certificates, in-process backends, a Cilium-shaped
//! listener, a real Envoy on free ports, and probes that report certificates by name.
//!
//! Every trial builds its own rig, so trials run in parallel without sharing a port or a
//! process.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use layout_gate::backends::{HttpBackend, TlsBackend};
use layout_gate::envoy::{
    AdminSpec, Bootstrap, ChainAction, ChainSpec, ClusterSpec, EnvoyBinary, EnvoyError, EnvoyProcess, HeldAddrs, ListenerSpec, RouteAction,
    StartOptions, Termination, TlsTermination, VirtualHostSpec,
};
use layout_gate::observe::probe::{HttpRequestSpec, Observation, Outcome, ProbeOptions, ProbeSpec, probe_tls};
use layout_gate::render::certs::{CertSet, CertSpec};
use layout_gate::types::{BackendName, CertName, DnsName, Sni};

pub const WILDCARD_CERT: &str = "gateway-wildcard";
pub const API_CERT: &str = "api-backend";
pub const DEFAULT_CERT: &str = "default-cert";
pub const API_BACKEND: &str = "api";
pub const WEB_BACKEND: &str = "web";
pub const API_CLUSTER: &str = "default:api:443";
pub const WEB_CLUSTER: &str = "default:web:80";
/// Body of the wildcard chain's direct response (hosts other than www).
pub const WILDCARD_BODY: &str = "terminated-by-envoy wildcard\n";
pub const DEFAULT_BODY: &str = "default-chain\n";
/// Cilium's name for its single Gateway listener (1.19.5) and the one the trials use.
pub const LISTENER: &str = "listener";

/// Runs an async trial body on its own runtime. Two workers: the backends, Envoy's upstream
/// connections and the probe all make progress without waiting on each other.
pub fn run_async<F: Future<Output = Result<(), String>>>(body: impl FnOnce() -> F) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("building a tokio runtime: {e}"))?;
    rt.block_on(body())
}

/// The Envoy under test; a missing one fails the trial with the install command.
pub fn envoy_binary() -> Result<EnvoyBinary, String> {
    EnvoyBinary::find().map_err(|e| format!("this trial runs a real Envoy: {e}"))
}

/// Certificates, backends and a temp dir for one trial.
pub struct Rig {
    pub envoy: EnvoyBinary,
    pub certs: CertSet,
    pub api: TlsBackend,
    pub web: HttpBackend,
    pub tmp: tempfile::TempDir,
}

impl Rig {
    /// Must run inside the trial's runtime (the backends spawn onto it).
    pub fn new(label: &str) -> Result<Rig, String> {
        let envoy = envoy_binary()?;
        let spec = |name: &str, dns: &str| -> Result<CertSpec, String> {
            Ok(CertSpec {
                name: CertName::new(name).map_err(|e| e.to_string())?,
                dns_names: vec![DnsName::new(dns).map_err(|e| e.to_string())?],
            })
        };
        let certs = CertSet::generate(
            label,
            &[spec(WILDCARD_CERT, "*.example.test")?, spec(API_CERT, "api.example.test")?, spec(DEFAULT_CERT, "default.invalid")?],
        )
        .map_err(|e| format!("generating certificates: {e}"))?;
        let api_config = certs.server_config(&cert_name(API_CERT)?, &[b"http/1.1"]).map_err(|e| format!("backend TLS config: {e}"))?;
        let api = TlsBackend::start(backend_name(API_BACKEND)?, api_config).map_err(|e| format!("starting the api backend: {e}"))?;
        let web = HttpBackend::start(backend_name(WEB_BACKEND)?).map_err(|e| format!("starting the web backend: {e}"))?;
        let tmp = tempfile::Builder::new().prefix(&format!("layout-gate-{label}-")).tempdir().map_err(|e| format!("temp dir: {e}"))?;
        Ok(Rig { envoy, certs, api, web, tmp })
    }

    pub fn tls(&self, cert: &str, alpn: &[&str]) -> Result<TlsTermination, String> {
        let c = self.certs.get(&cert_name(cert)?).map_err(|e| e.to_string())?;
        Ok(TlsTermination {
            cert_chain: c.chain_path.clone(),
            private_key: c.key_path.clone(),
            alpn: alpn.iter().map(|s| s.to_string()).collect(),
        })
    }

    pub fn clusters(&self) -> Vec<ClusterSpec> {
        vec![ClusterSpec::new(API_CLUSTER, vec![self.api.addr()]), ClusterSpec::new(WEB_CLUSTER, vec![self.web.addr()])]
    }

    /// The dns01 layout as Cilium translates it (docs/cilium-translation.md §2): an unnamed passthrough
    /// chain for `api.example.test` beside an unnamed terminate chain for `*.example.test`, no
    /// default chain unless asked for.
    pub fn listener(&self, addr: SocketAddr, with_default: bool) -> Result<ListenerSpec, String> {
        let mut l = ListenerSpec::new(LISTENER, addr)
            .chain(ChainSpec::passthrough(&["api.example.test"], API_CLUSTER))
            .chain(self.wildcard_chain(&["*.example.test"])?);
        if with_default {
            l = l.default_chain(ChainSpec {
                name: None,
                server_names: vec![],
                transport_protocol: None,
                destination_port: None,
                action: http_action(
                    "default",
                    vec![VirtualHostSpec::new("default", &["*"], RouteAction::DirectResponse { status: 404, body: DEFAULT_BODY.into() })],
                ),
                tls: Some(Termination::Files(self.tls(DEFAULT_CERT, &[])?)),
            });
        }
        Ok(l)
    }

    /// The terminate chain: `www.example.test` routed to the web backend, every other host
    /// answered by Envoy itself.
    pub fn wildcard_chain(&self, server_names: &[&str]) -> Result<ChainSpec, String> {
        Ok(ChainSpec::terminate(
            server_names,
            self.tls(WILDCARD_CERT, &["h2", "http/1.1"])?,
            http_action(
                "listener-secure",
                vec![
                    VirtualHostSpec::new("www", &["www.example.test"], RouteAction::Cluster(WEB_CLUSTER.into())),
                    VirtualHostSpec::new("wildcard", &["*"], RouteAction::DirectResponse { status: 200, body: WILDCARD_BODY.into() }),
                ],
            ),
        ))
    }

    /// Cilium's NACK case: the passthrough chain and a terminate chain with identical matches.
    pub fn duplicate_listener(&self, addr: SocketAddr) -> Result<ListenerSpec, String> {
        Ok(ListenerSpec::new(LISTENER, addr)
            .chain(ChainSpec::passthrough(&["api.example.test"], API_CLUSTER))
            .chain(self.wildcard_chain(&["api.example.test"])?))
    }

    pub fn write_bootstrap(&self, bootstrap: &Bootstrap) -> Result<PathBuf, String> {
        let path = self.tmp.path().join("bootstrap.json");
        bootstrap.write(&path).map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(path)
    }

    pub fn static_bootstrap(&self, listeners: Vec<ListenerSpec>) -> Bootstrap {
        Bootstrap::static_listeners(AdminSpec::default(), listeners, self.clusters())
    }

    /// Starts Envoy on `bootstrap`; the error is Envoy's own (command line and `[critical]`
    /// lines included).
    pub async fn start(&self, bootstrap: &Bootstrap) -> Result<EnvoyProcess, String> {
        self.start_raw(bootstrap).await?.map_err(|e| e.to_string())
    }

    /// Like [`Rig::start`], keeping Envoy's error typed (outer error: our own setup failed).
    pub async fn start_raw(&self, bootstrap: &Bootstrap) -> Result<Result<EnvoyProcess, EnvoyError>, String> {
        let cfg = self.write_bootstrap(bootstrap)?;
        Ok(EnvoyProcess::start_async(&cfg, &self.tmp.path().join("envoy"), self.start_options()).await)
    }

    pub fn start_options(&self) -> StartOptions {
        StartOptions { binary: Some(self.envoy.clone()), ..StartOptions::default() }
    }

    /// The name of the certificate a probe was answered with, or why there is none.
    pub fn cert_of(&self, obs: &Observation) -> Result<String, String> {
        let hs = obs.handshake().ok_or_else(|| format!("no certificate: {}", describe(obs)))?;
        match self.certs.name_of(&hs.leaf.sha256) {
            Some(name) => Ok(name.to_string()),
            None => {
                Err(format!("a certificate that is not one of this run's: subject {} sha256 {}", hs.leaf.subject, hs.leaf.sha256.hex()))
            }
        }
    }

    /// Fails unless the probe's handshake presented the certificate named `want`.
    pub fn expect_cert(&self, obs: &Observation, want: &str) -> Result<(), String> {
        let got = self.cert_of(obs)?;
        if got == want { Ok(()) } else { Err(format!("SNI {}: answered with {got}, expected {want}", sni_label(obs))) }
    }
}

pub fn http_action(route_name: &str, virtual_hosts: Vec<VirtualHostSpec>) -> ChainAction {
    ChainAction::Http { route_name: route_name.into(), virtual_hosts }
}

pub fn cert_name(name: &str) -> Result<CertName, String> {
    CertName::new(name).map_err(|e| e.to_string())
}

pub fn backend_name(name: &str) -> Result<BackendName, String> {
    BackendName::new(name).map_err(|e| e.to_string())
}

/// A free local address for an Envoy listener, held (so nothing else takes it) until the
/// returned hold is dropped.
pub fn free_addr() -> Result<(SocketAddr, HeldAddrs<()>), String> {
    let held = HeldAddrs::reserve([()]).map_err(|e| format!("finding a free port: {e}"))?;
    Ok((held[&()], held))
}

/// One TLS probe; `sni: None` sends no server_name; `http` adds a `GET /` after the handshake.
pub async fn probe(addr: SocketAddr, sni: Option<&str>, http: bool) -> Result<Observation, String> {
    let sni = sni.map(Sni::new).transpose().map_err(|e| e.to_string())?;
    let http = if http { Some(HttpRequestSpec::get("/").map_err(|e| e.to_string())?) } else { None };
    let options = ProbeOptions { timeout: Duration::from_secs(5), ..ProbeOptions::default() };
    Ok(probe_tls(&ProbeSpec { addr, sni, http }, &options).await)
}

/// A probe's outcome in one line, for failure messages.
pub fn describe(obs: &Observation) -> String {
    match &obs.outcome {
        Outcome::Certificate(hs) => format!("certificate {} ({})", hs.leaf.subject, hs.leaf.sha256.short()),
        other => format!("{other:?}"),
    }
}

pub fn sni_label(obs: &Observation) -> String {
    obs.sni.as_ref().map_or_else(|| "(none)".to_string(), |s| s.to_string())
}

/// The HTTP answer after a handshake, or why there is none.
pub fn http_answer(obs: &Observation) -> Result<&layout_gate::observe::probe::HttpAnswer, String> {
    let hs = obs.handshake().ok_or_else(|| format!("SNI {}: no handshake: {}", sni_label(obs), describe(obs)))?;
    match &hs.http {
        Some(x) => x.answer().ok_or_else(|| format!("SNI {}: HTTP exchange failed: {x:?}", sni_label(obs))),
        None => Err(format!("SNI {}: no HTTP exchange was asked for", sni_label(obs))),
    }
}
