//! The operator lane's data plane: in-process backends behind the case's Services, and once
//! Cilium's operator has written its CiliumEnvoyConfig, the emulated agent step
//! ([`super::agent`]) onto a real local Envoy: every Gateway port a local address, every
//! listener on the ports its CEC's Services send to it, the Secrets the operator synced served
//! under their SDS names. Probes go to those local addresses; the live Envoy view is that
//! Envoy's own `/config_dump`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};

use super::agent::{self, Addresses, AgentChecks, AgentOutput, ServiceKey};
use super::binaries::AgentBinaries;
use super::real_agent::RealAgent;
use crate::backends::{HttpBackend, TlsBackend};
use crate::case::{Applied, Backend, ProbeKey};
use crate::envoy::{self, AdminSpec, Bootstrap, EnvoyProcess, HeldAddrs, LdsDir, LdsOutcome, StartOptions, relaunch};
use crate::evidence::agent_xds;
use crate::evidence::recording::RecordedAgent;
use crate::evidence::recording::RecordedExec;
use crate::evidence::{ProbeRecord, Recording};
use crate::lanes::cluster::cec::{self, EnvoyViews, Intended};
use crate::lanes::cluster::driver::{Driver, ObjRef, ProbeTargets, Selection};
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::manifests::{self, SecretMaterial};
use crate::lanes::cluster::plane::{DataPlane, PlaneCase};
use crate::observe::envoy_dump;
use crate::run;

const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// What one case's data plane holds while it runs; dropped when the case ends (Envoy killed,
/// backends stopped, ports released, the work folder and its key files removed).
#[derive(Default)]
struct CaseState {
    backends: BTreeMap<ServiceKey, SocketAddr>,
    _tls: Vec<TlsBackend>,
    _http: Vec<HttpBackend>,
    /// (Gateway, port) -> the local address standing for it.
    ports: BTreeMap<(String, u16), SocketAddr>,
    intended: Option<Intended>,
    agent: AgentOutput,
    envoy: Option<EnvoyProcess>,
    lds: Option<LdsOutcome>,
    /// Every local address standing for a Gateway port, held from its choice until the case
    /// ends: Envoy binds beside the hold, and a port nothing serves refuses connections.
    _held: Vec<HeldAddrs<(ServiceKey, u16)>>,
    _held_probe_ports: Vec<HeldAddrs<(String, u16)>>,
    _work: Option<crate::scratch::Scratch>,
    /// What starting Cilium's agent said, for the data path's notes.
    agent_notes: Vec<String>,
    /// Where the case's slice of the bridge's log starts.
    bridge_log_from: u64,
    /// The namespace the case's backends listen in (with Cilium's agent); removed after them.
    _backends_netns: Option<crate::netns::Netns>,
    /// The emulated agent's CEC table across the case's steps.
    cec_table: agent::CecTable,
}

pub struct OperatorPlane {
    /// Where the operator syncs Gateway TLS Secrets (`gateway-api-secrets-namespace`).
    pub secrets_namespace: String,
    /// How long a local Envoy may take to start and take its listeners.
    pub envoy_ready: Duration,
    /// What the emulated agent step checks at the run's Cilium version.
    pub checks: AgentChecks,
    /// Whose agent step turns the CECs into what Envoy serves.
    pub step: AgentStep,
    state: CaseState,
}

/// The agent step of a plane: Cilium's own agent, or layout-gate's emulation of it.
#[derive(Clone)]
pub enum AgentStep {
    /// [`super::agent`]: the model's agent step, on an Envoy of each case's own.
    Emulated {
        /// Why not Cilium's own (not built for the version, not root, or asked so).
        why: String,
    },
    /// Cilium's own agent control plane ([`RealAgent`]), started at the first case of the
    /// control plane and serving every case after it, one case at a time (the planes of one
    /// run share it).
    Real(Box<RealStep>),
}

/// Cilium's own agent for a control plane, shared by the planes of its cases.
#[derive(Clone)]
pub struct RealStep {
    pub kubeconfig: std::path::PathBuf,
    pub binaries: AgentBinaries,
    /// Names the agent's work folder.
    pub label: String,
    running: std::sync::Arc<tokio::sync::OnceCell<RealAgent>>,
    /// The run's own network: each case's backends listen in a namespace of it, at an address
    /// an EndpointSlice may name (the API server refuses loopback ones), so EDS is the agent's.
    network: std::sync::Arc<std::sync::OnceLock<crate::netns::RunNetwork>>,
}

impl RealStep {
    pub fn new(kubeconfig: std::path::PathBuf, binaries: AgentBinaries, label: String) -> Self {
        RealStep { kubeconfig, binaries, label, running: Default::default(), network: Default::default() }
    }

    fn running(&self) -> Option<&RealAgent> {
        self.running.get()
    }

    fn network(&self) -> Result<&crate::netns::RunNetwork, crate::netns::NetError> {
        if let Some(n) = self.network.get() {
            return Ok(n);
        }
        let made = crate::netns::RunNetwork::create("backends")?;
        Ok(self.network.get_or_init(|| made))
    }
}

impl AgentStep {
    pub fn is_real(&self) -> bool {
        matches!(self, AgentStep::Real(_))
    }

    /// The agent step for `version` on the control plane `kubeconfig` reaches: Cilium's own
    /// agent by default (unset or `LAYOUT_GATE_AGENT_STEP=cilium`; an error naming the install
    /// command when it is not built, or the reason it cannot run here), layout-gate's emulation
    /// of it when asked (`emulated`). Cilium's agent is the default since the catalogue's answers
    /// through it equal the confirmed ones at every pin (docs/operator-lane.md); the emulated
    /// step stays the model's agent step and is asked for by name.
    pub fn choose(
        pins: &crate::versions::Pins,
        version: &crate::case::CiliumVersion,
        kubeconfig: Option<&std::path::Path>,
        label: &str,
    ) -> Result<AgentStep, String> {
        let asked = std::env::var(STEP_ENV).unwrap_or_default();
        let real = || -> Result<AgentStep, String> {
            let binaries = super::binaries::find_agent(pins, version).map_err(|e| e.to_string())?;
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } != 0 {
                return Err(super::real_agent::AgentStartError::NotRoot.to_string());
            }
            let kubeconfig = kubeconfig.ok_or("the control plane has no kubeconfig file for the agent")?;
            Ok(AgentStep::Real(Box::new(RealStep::new(kubeconfig.to_path_buf(), binaries, label.to_string()))))
        };
        Self::pick(&asked, real)
    }

    /// [`AgentStep::choose`] for the value `asked` of [`STEP_ENV`], `real` starting Cilium's own.
    fn pick(asked: &str, real: impl FnOnce() -> Result<AgentStep, String>) -> Result<AgentStep, String> {
        match asked {
            "emulated" => Ok(AgentStep::Emulated { why: format!("{STEP_ENV}=emulated") }),
            "cilium" => real(),
            "" => real().map_err(|e| {
                format!(
                    "{e} (Cilium's own agent is the operator lane's agent step by default; {STEP_ENV}=emulated runs layout-gate's emulation of it instead, said as such in the evidence)"
                )
            }),
            other => Err(format!("{STEP_ENV}={other:?}: want `cilium` (Cilium's own agent, the default) or `emulated` (layout-gate's agent step)")),
        }
    }

    /// Whose step this is, in a line: said by `check` and `differential` beside their answers.
    pub fn describe(&self) -> String {
        match self {
            AgentStep::Real(r) => format!(
                "Cilium's own agent control plane {} (on a fake datapath: no BPF, no TPROXY; its xDS through layout-gate's bridge)",
                r.binaries.agent.build.version
            ),
            AgentStep::Emulated { why } => format!("emulated (layout-gate's agent step, lanes/operator/agent.rs): {why}"),
        }
    }

    /// Tells the run's `environment` what this step makes real and what stays emulated: the
    /// control plane says it for the emulated step, and Cilium's own agent makes more of the
    /// answer Cilium's (and serves the Gateways' LB IPAM addresses, which nothing serves
    /// otherwise).
    pub fn say_in(&self, env: &mut BTreeMap<String, String>) {
        if let AgentStep::Real(r) = self {
            super::said::say_agent(env, &r.binaries.agent.build.version);
        }
    }

    /// How many cases run at once on this step: one with Cilium's own agent (it serves every
    /// CEC of its control plane, and an update Envoy refuses is reverted together with whatever
    /// else was pending in it: docs/operator-lane.md), else `asked`.
    pub fn cases_at_once(&self, asked: crate::lanes::cluster::batch::Batch) -> crate::lanes::cluster::batch::Batch {
        if self.is_real() { crate::lanes::cluster::batch::Batch::ONE } else { asked }
    }
}

/// Chooses the operator lane's agent step (see [`AgentStep::choose`]).
pub const STEP_ENV: &str = "LAYOUT_GATE_AGENT_STEP";

impl OperatorPlane {
    pub fn new(secrets_namespace: String, envoy_ready: Duration, checks: AgentChecks) -> Self {
        let step = AgentStep::Emulated { why: "asked for".into() };
        OperatorPlane { secrets_namespace, envoy_ready, checks, step, state: CaseState::default() }
    }

    pub fn with_step(mut self, step: AgentStep) -> Self {
        self.step = step;
        self
    }
}

/// How long Cilium's agent may take to take a case's CECs and have Envoy answer them.
const AGENT_RECONCILE: Duration = Duration::from_secs(20);

/// How long an earlier case's CECs may take to leave the agent once their namespace is gone.
const AGENT_FORGET: Duration = Duration::from_secs(30);

impl DataPlane for OperatorPlane {
    /// The Services the kind lane gives each backend (the same objects, without their pods):
    /// Cilium resolves every backendRef against them.
    fn backend_objects(&self, c: &PlaneCase<'_>) -> Vec<Value> {
        c.case
            .backends
            .iter()
            // In the backend's own namespace (`{namespace}-SUFFIX`), as the kind lane places it.
            .map(|(b, kind)| {
                manifests::backend(
                    &c.case.backend_namespace(b, c.namespace),
                    b,
                    kind,
                    c.case.backend_app_protocols.get(b).map(String::as_str),
                    "",
                )
                .into_iter()
                .nth(1)
                .unwrap_or_default()
            })
            .collect()
    }

    async fn backends_ready<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, _rec: &mut Recording) -> Result<(), PhaseError> {
        const P: &str = "namespace, Secrets and backends";
        self.state = CaseState::default();
        // Cilium's agent, its bridge and Envoy come up before the case's manifests are applied:
        // an Envoy that connects after a CEC exists takes it in its first fetch, and a cluster
        // without endpoints then holds Envoy's start for the 30 s initial fetch; and an update
        // made while no Envoy is connected is completed by the agent at once, unanswered.
        if let AgentStep::Real(step) = &self.step {
            let envoy_ready = self.envoy_ready;
            let mut started = None;
            step.running
                .get_or_try_init(|| async {
                    let a = RealAgent::start(d, &step.kubeconfig, step.binaries.clone(), &step.label, envoy_ready).await?;
                    started = Some(format!(
                        "agent step: Cilium's own agent control plane {} started in {} ms (Node {}), with its bridge and Envoy",
                        a.binaries.agent.build.version, a.start_ms, a.node
                    ));
                    Ok::<_, super::real_agent::AgentStartError>(a)
                })
                .await
                .map_err(|e| PhaseError::new(P, e.to_string()))?;
            self.state.agent_notes.extend(started);
            // The case's slice of the bridge's log starts before its manifests are applied: the
            // agent takes the case's CEC as soon as Cilium's operator writes it.
            self.state.bridge_log_from = step.running().map(RealAgent::bridge_log_len).unwrap_or(0);
        }
        let SecretMaterial::Issued(certs) = c.certs else { return Ok(()) };
        // With Cilium's agent, the backends listen in a namespace of the run's own network and
        // an EndpointSlice names each: the agent's EDS sends Envoy there.
        let netns = match &self.step {
            AgentStep::Real(step) if !c.case.backends.is_empty() => {
                let net = step.network().map_err(|e| PhaseError::new(P, format!("the run's network for the backends: {e}")))?;
                Some(net.namespace("backends").map_err(|e| PhaseError::new(P, format!("a network namespace for the backends: {e}")))?)
            }
            _ => None,
        };
        let mut slices = Vec::new();
        for (name, backend) in &c.case.backends {
            let fail = |e: std::io::Error| PhaseError::new(P, format!("starting backend {name}: {e}"));
            let listener = match &netns {
                Some(ns) => Some(ns.tcp_listener(SocketAddr::new(ns.addr().into(), 0)).map_err(fail)?),
                None => None,
            };
            let (addr, port_name) = match backend {
                Backend::Tls { cert } => {
                    let config = certs.server_config(cert, &[b"http/1.1"]).map_err(|e| PhaseError::new(P, e.to_string()))?;
                    let b = match listener {
                        Some(l) => TlsBackend::start_on(name.clone(), config, l),
                        None => TlsBackend::start(name.clone(), config),
                    }
                    .map_err(fail)?;
                    let a = b.addr();
                    self.state._tls.push(b);
                    (a, "https")
                }
                Backend::Http => {
                    let b = match listener {
                        Some(l) => HttpBackend::start_on(name.clone(), l),
                        None => HttpBackend::start(name.clone()),
                    }
                    .map_err(fail)?;
                    let a = b.addr();
                    self.state._http.push(b);
                    (a, "http")
                }
            };
            let ns = c.case.backend_namespace(name, c.namespace);
            if netns.is_some() {
                slices.push(endpoint_slice(&ns, name.as_str(), port_name, addr));
            }
            self.state.backends.insert((ns, name.to_string()), addr);
        }
        if !slices.is_empty() {
            d.apply(&slices, None).await.map_err(|e| PhaseError::step(P, e))?;
        }
        self.state._backends_netns = netns;
        Ok(())
    }

    fn has_data_path_step(&self) -> bool {
        true
    }

    /// The local control plane is thrown away with the run, and the next case uses a namespace
    /// and Gateways of its own: its deletion is started, not waited for (each wait costs the
    /// namespace controller's round trip, about as long as a whole case here).
    ///
    /// So too with Cilium's own agent, which serves every CEC of the plane: the next case must
    /// not meet an earlier case's listeners, and [`DataPlane::release`] has let go of them
    /// (the namespace controller's sweep took 5-10 s a case here, most of a case's time).
    fn awaits_namespace_deletion(&self) -> bool {
        false
    }

    /// With Cilium's own agent: deletes the case's Gateways, so Cilium's CECs for them go (their
    /// owner reference, kube-controller-manager's garbage collector), and waits, bounded, until
    /// the agent holds no CEC of the case's namespaces; the next case then starts on an agent
    /// (and an Envoy) that serves nothing of this one. A CEC still held is said in the report,
    /// and the next case's own wait ([`RealAgent::wait_others_gone`]) bounds what it costs.
    async fn release<D: Driver>(
        &mut self,
        d: &mut D,
        _c: &PlaneCase<'_>,
        namespaces: &[&str],
        report: &mut crate::lanes::cluster::failure::TeardownReport,
    ) {
        let AgentStep::Real(step) = &self.step else { return };
        let Some(agent) = step.running() else { return };
        for ns in namespaces {
            let gateways = match d.list(&Selection::all("gateway.networking.k8s.io/v1", "Gateway", Some(ns))).await {
                Ok(g) => g,
                Err(e) => {
                    report.failed.push(format!("Gateways of namespace {ns} (for Cilium's agent to let go of their CECs): {e}"));
                    continue;
                }
            };
            for g in gateways.iter().filter_map(ObjRef::of) {
                match d.delete(&g).await {
                    Ok(_) => report.done.push(format!("{g} (for Cilium's agent to let go of its CEC)")),
                    Err(e) => report.failed.push(format!("{g}: {e}")),
                }
            }
        }
        let t = std::time::Instant::now();
        match agent.wait_gone(|ns| namespaces.contains(&ns), AGENT_FORGET).await {
            Ok(left) if left.is_empty() => {
                report.done.push(format!("Cilium's agent let go of the case's CiliumEnvoyConfigs in {} ms", t.elapsed().as_millis()))
            }
            Ok(left) => report.failed.push(format!("Cilium's agent still holds {} after {AGENT_FORGET:?}", left.join(", "))),
            Err(e) => report.failed.push(format!("reading Cilium's agent: {e}")),
        }
    }

    async fn data_path<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<Vec<String>, PhaseError> {
        if self.step.is_real() {
            return self.real_data_path(d, c, rec).await;
        }
        const P: &str = "data path";
        let intended = cec::read_intended(d, c.namespace, c.gateways, rec).await?;
        let mut notes = intended.notes.clone();
        // What the agent serves after the steps so far: a generation it refuses when parsed
        // leaves the one before it served.
        let (cecs, kept) = self.state.cec_table.update(&intended.cecs, self.checks);
        notes.extend(kept.into_iter().map(|n| format!("agent step: {n}")));

        // Every Service a CEC redirects: its frontend ports, each given a local address.
        let mut addrs = Addresses { backends: self.state.backends.clone(), ..Addresses::default() };
        for (key, ports) in redirected_services(d, &cecs, c.namespace, &mut notes).await? {
            let held = HeldAddrs::reserve(ports.iter().map(|p| (key.clone(), *p)))
                .map_err(|e| PhaseError::new(P, format!("holding local ports for Service {}/{}: {e}", key.0, key.1)))?;
            addrs.frontends.extend(held.iter().map(|(k, a)| (k.clone(), *a)));
            self.state._held.push(held);
            addrs.service_ports.insert(key, ports);
        }
        // Probes name Gateways: each Gateway's Service is `cilium-gateway-<name>` (shortened as
        // Cilium shortens it).
        for gw in c.gateways {
            let svc = (c.namespace.to_string(), crate::judge::cilium_gateway_resource(gw));
            for ((key, port), a) in &addrs.frontends {
                if *key == svc {
                    self.state.ports.insert((gw.clone(), *port), *a);
                }
            }
        }
        let started = start_envoy(d, &cecs, &addrs, self.envoy_ready, self.checks, &mut notes).await?;
        self.state.intended = Some(intended);
        self.state.agent = started.agent;
        self.state.envoy = Some(started.envoy);
        self.state.lds = Some(started.lds);
        self.state._work = Some(started.work);
        Ok(notes)
    }

    fn unaddressed_probes(&self) -> &'static str {
        "the operator lane sends them to a local address held for each of its ports, where nothing listens"
    }

    async fn probe<D: Driver>(&mut self, _d: &mut D, c: &PlaneCase<'_>, applied: &Applied, targets: &ProbeTargets) -> Vec<ProbeRecord> {
        let SecretMaterial::Issued(certs) = c.certs else { return Vec::new() };
        // A Gateway port the Gateway's Service does not carry (a listener Cilium dropped) is a
        // held local address: refused, as a connection to a port nothing serves on the Gateway's
        // address is.
        for k in crate::case::Case::probe_keys(applied) {
            let key = (targets.gateway_of(&k).to_string(), k.port.get());
            if self.state.ports.contains_key(&key) {
                continue;
            }
            if let Ok(h) = HeldAddrs::reserve([key.clone()]) {
                let a = h[&key];
                self.state.ports.insert(key, a);
                self.state._held_probe_ports.push(h);
            }
        }
        let ports = self.state.ports.clone();
        let primary = targets.primary.clone();
        let addr_of = move |k: &ProbeKey| ports.get(&(k.gateway.clone().unwrap_or_else(|| primary.clone()), k.port.get())).copied();
        run::probe_all_keyed(applied, &addr_of, certs, c.probe_timeouts).await
    }

    async fn envoy_views<D: Driver>(&mut self, _d: &mut D, _c: &PlaneCase<'_>, rec: &mut Recording) -> Result<EnvoyViews, PhaseError> {
        const P: &str = "Envoy config";
        let real = match &self.step {
            AgentStep::Real(r) => r.running().map(RealAgent::envoy),
            AgentStep::Emulated { .. } => None,
        };
        let (Some(envoy), Some(intended)) = (real.or(self.state.envoy.as_ref()), &self.state.intended) else {
            return Err(PhaseError::new(P, "the local Envoy was not started (the data path step did not run)"));
        };
        let admin = envoy.admin();
        let at = crate::evidence::now_rfc3339();
        let raw = admin.dynamic_listeners_dump().await.map_err(|e| PhaseError::new(P, format!("the local Envoy's /config_dump: {e}")))?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let summary = envoy_dump::summarize_bytes(&raw, "local Envoy /config_dump", false)
            .map_err(|e| PhaseError::new(P, format!("summarizing the local Envoy's listeners: {e}")))?;
        rec.cilium_dbg = Some(RecordedExec {
            pod: "local-envoy".into(),
            container: "envoy".into(),
            command: vec!["GET".into(), format!("http://{}/config_dump?resource=dynamic_listeners", admin.addr())],
            at,
            output: text.clone(),
            listener_prefix: intended.prefixes.first().cloned().unwrap_or_default(),
            other_prefixes: intended.prefixes.iter().skip(1).cloned().collect(),
        });
        let mut views = cec::live_views(summary, intended, text, Vec::new());
        // The clusters Envoy holds for the case's CECs, from the whole dump: CDS through
        // Cilium's agent, the bootstrap's static ones on the emulated step.
        match admin.config_dump().await {
            Ok(d) => match envoy_dump::clusters_from_dump(&d, "local Envoy /config_dump") {
                Ok(cs) => views.clusters = Some(cec::our_clusters(cs, &intended.prefixes)),
                Err(e) => views.notes.push(format!("the local Envoy's clusters: {e}")),
            },
            Err(e) => views.notes.push(format!("the local Envoy's /config_dump (clusters): {e}")),
        }
        Ok(views)
    }

    async fn environment<D: Driver>(&mut self, _d: &mut D, _c: &PlaneCase<'_>) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        match &self.step {
            AgentStep::Real(r) => match r.running() {
                Some(a) => env.extend(a.environment()),
                None => {
                    env.insert(
                        "agent_step".into(),
                        format!(
                            "Cilium's own agent control plane {} (not started: no case reached its data path)",
                            r.binaries.agent.build.version
                        ),
                    );
                }
            },
            AgentStep::Emulated { why } => {
                env.insert(
                    "agent_step".into(),
                    format!("emulated (layout-gate's agent step, lanes/operator/agent.rs), not Cilium's agent: {why}"),
                );
            }
        }
        env.insert("backends".into(), "in-process TLS and HTTP servers (layout-gate's), behind the case's Services".into());
        // Upstream Envoy serves the CiliumEnvoyConfig here, not cilium-envoy: its version is part
        // of the answer.
        if let Some(v) = crate::envoy::EnvoyBinary::find().ok().and_then(|b| b.version().ok()) {
            env.insert("envoy".into(), format!("{} (upstream Envoy, standing in for cilium-envoy)", v.raw));
        }
        env
    }
}

impl OperatorPlane {
    /// The data path through Cilium's own agent: started at the plane's first case; waits until
    /// the agent has forgotten every earlier case's CEC, then until it has taken this case's
    /// (the generation the API server holds) and Envoy has answered its update (ACK, or NACK
    /// and the agent's revert); the Gateway ports are the frontends the agent redirects.
    async fn real_data_path<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<Vec<String>, PhaseError> {
        const P: &str = "data path";
        let envoy_ready = self.envoy_ready;
        let AgentStep::Real(step) = &self.step.clone() else {
            return Err(PhaseError::new(P, "not Cilium's agent"));
        };
        let mut notes = std::mem::take(&mut self.state.agent_notes);
        let agent = step.running().ok_or_else(|| PhaseError::new(P, "Cilium's agent was not started (the backends step did not run)"))?;
        let left = agent
            .wait_others_gone(c.namespace, AGENT_FORGET)
            .await
            .map_err(|e| PhaseError::new(P, format!("reading Cilium's agent: {e}")))?;
        if !left.is_empty() {
            notes.push(format!(
                "agent step: Cilium's agent still holds earlier cases' CiliumEnvoyConfigs after {AGENT_FORGET:?}: {}",
                left.join(", ")
            ));
        }
        let log_from = self.state.bridge_log_from;
        let intended = cec::read_intended(d, c.namespace, c.gateways, rec).await?;
        notes.extend(intended.notes.iter().cloned());
        let done = agent.wait_reconciled(&intended.cecs, AGENT_RECONCILE).await?;
        let binds: Vec<Value> = match agent.get("/binds").await {
            Ok(Value::Array(b)) => b,
            Ok(other) => return Err(PhaseError::new(P, format!("Cilium's agent's /binds is not a list: {other}"))),
            Err(e) => return Err(PhaseError::new(P, format!("reading Cilium's agent: {e}"))),
        };
        // Each Gateway's ports: the frontends of its Service that the agent redirects.
        for gw in c.gateways {
            let svc = format!("{}/{}", c.namespace, crate::judge::cilium_gateway_resource(gw));
            for b in binds.iter().filter(|b| b.get("service").and_then(Value::as_str) == Some(svc.as_str())) {
                let addr = b.get("address").and_then(Value::as_str).and_then(|a| a.parse::<SocketAddr>().ok());
                let port = b.get("service_port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok());
                if let (Some(addr), Some(port)) = (addr, port) {
                    self.state.ports.insert((gw.clone(), port), addr);
                }
            }
        }
        // Wait until Envoy listens where the bridge bound each listener it took.
        let listening: Vec<(String, Vec<SocketAddr>)> = listening_of(&done, &binds, &self.state.ports);
        // A listener waits for the agent's initial fetch (a Secret it never serves) before Envoy
        // activates it: the wait outlasts that (RealAgent::listening_limit).
        if let Err(e) = envoy::wait_listening(agent.envoy(), &listening, agent.listening_limit(envoy_ready)).await {
            notes.push(e);
        }
        // What the lane says of each CEC: the one rule `report` and `replay` judge the
        // recording with, over the agent's rows and the exchange the bridge logged.
        let (xds, _) = agent.bridge_log_since(log_from);
        // A case's next step reads the exchange from here on: its own, not this step's again
        // (found replaying refused-update-keeps-generation: step 3's recording held step 2's
        // NACK beside the agent's `Done`, and the re-check said it contradicted itself).
        self.state.bridge_log_from = agent.bridge_log_len();
        let reading = agent_xds::read(&done.cecs, &xds, AGENT_RECONCILE);
        notes.extend(reading.said.iter().cloned());
        notes.extend(reading.conflicts.iter().map(|c| format!("agent step: Cilium's agent's rows and the xDS exchange disagree: {c}")));
        rec.agent = Some(RecordedAgent {
            step: format!("Cilium's own agent control plane {} (agent-plane, DryMode)", agent.binaries.agent.build.version),
            cecs: done.cecs.clone(),
            binds: binds.clone(),
            xds,
            settled: done.settled,
            said: reading.said,
            served: reading.served,
            waited_ms: u64::try_from(done.waited.as_millis()).unwrap_or(u64::MAX),
            limit_ms: u64::try_from(AGENT_RECONCILE.as_millis()).unwrap_or(u64::MAX),
        });
        self.state.intended = Some(intended);
        Ok(notes)
    }
}

/// The EndpointSlice of backend Service `ns/name`: its one endpoint `addr`, ready, under the
/// Service's port name (Cilium matches a slice's ports to the Service's by name). Managed by
/// layout-gate, so kube-controller-manager's EndpointSlice controller leaves it alone.
fn endpoint_slice(ns: &str, name: &str, port_name: &str, addr: SocketAddr) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": format!("{name}-layout-gate"),
            "namespace": ns,
            "labels": {"kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "layout-gate"}
        },
        "addressType": if addr.is_ipv4() { "IPv4" } else { "IPv6" },
        "endpoints": [{"addresses": [addr.ip().to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": port_name, "port": addr.port(), "protocol": "TCP"}]
    })
}

/// The listeners Envoy should be listening for: each Gateway address the agent redirects, under
/// the name of the listener its proxy port belongs to when known (only CECs Envoy accepted).
fn listening_of(
    done: &super::real_agent::Reconciled,
    binds: &[Value],
    ports: &BTreeMap<(String, u16), SocketAddr>,
) -> Vec<(String, Vec<SocketAddr>)> {
    let accepted: BTreeSet<&str> = done.cecs.iter().filter(|s| s.status.as_deref() == Some("Done")).map(|s| s.name.as_str()).collect();
    let mut by_port: BTreeMap<u64, Vec<SocketAddr>> = BTreeMap::new();
    for b in binds {
        if !b.get("cec").and_then(Value::as_str).is_some_and(|c| accepted.contains(c)) {
            continue;
        }
        let (Some(p), Some(a)) =
            (b.get("proxy_port").and_then(Value::as_u64), b.get("address").and_then(Value::as_str).and_then(|a| a.parse().ok()))
        else {
            continue;
        };
        if ports.values().any(|x| *x == a) {
            by_port.entry(p).or_default().push(a);
        }
    }
    by_port
        .into_iter()
        .filter_map(|(p, a)| done.listeners.iter().find(|(_, lp)| u64::from(*lp) == p).map(|(name, _)| (name.clone(), a)))
        .collect()
}

/// A synced Secret's file that could not be written for Envoy.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {source}", .path.display())]
struct WriteError {
    path: std::path::PathBuf,
    source: std::io::Error,
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), WriteError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |source| WriteError { path: path.to_path_buf(), source };
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(failed)?;
    f.write_all(bytes).map_err(failed)
}

/// A Secret's `data` value (standard base64).
fn decode_b64(s: &str) -> Option<Vec<u8>> {
    serde_json::from_value::<k8s_openapi::ByteString>(Value::String(s.to_string())).ok().map(|b| b.0)
}

/// Every Service a CEC redirects (its `spec.services`, namespaced to the CEC's own namespace
/// when they name none, `default_ns` when the CEC has none), with its frontend ports as the API
/// server holds them; a Service that does not exist has no port and is said in `notes`.
async fn redirected_services<D: Driver>(
    d: &mut D,
    cecs: &[Value],
    default_ns: &str,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<ServiceKey, Vec<u16>>, PhaseError> {
    const P: &str = "data path";
    let mut services: BTreeSet<ServiceKey> = BTreeSet::new();
    for cec_obj in cecs {
        let cec_ns = cec_obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(default_ns);
        for s in cec_obj.pointer("/spec/services").and_then(Value::as_array).into_iter().flatten() {
            let ns = s.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(cec_ns);
            if let Some(name) = s.get("name").and_then(Value::as_str) {
                services.insert((ns.to_string(), name.to_string()));
            }
        }
    }
    let mut out = BTreeMap::new();
    for key in services {
        let svc = d.get(&ObjRef::new("v1", "Service", Some(&key.0), &key.1)).await.map_err(|e| PhaseError::step(P, e))?;
        let ports: Vec<u16> = svc
            .as_ref()
            .and_then(|s| s.pointer("/spec/ports"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok()))
            .collect();
        if svc.is_none() {
            notes.push(format!("Service {}/{} that a CiliumEnvoyConfig redirects does not exist", key.0, key.1));
        }
        out.insert(key, ports);
    }
    Ok(out)
}

/// A local Envoy serving what the agent step made of some CECs, with what it needs to live:
/// killed, and its work folder (the Secrets' keys among it) removed, when dropped.
struct Started {
    agent: AgentOutput,
    envoy: EnvoyProcess,
    lds: LdsOutcome,
    work: crate::scratch::Scratch,
}

/// The emulated agent step over `cecs` onto a real local Envoy: the listeners on the addresses
/// `addrs` gives the redirected Service ports, the synced Secrets as static secrets (a missing
/// one never served), every `cilium.*` filter and refused CEC said in `notes`. Returns once
/// Envoy took the listeners (or refused them, said in `notes`).
async fn start_envoy<D: Driver>(
    d: &mut D,
    cecs: &[Value],
    addrs: &Addresses,
    envoy_ready: Duration,
    checks: AgentChecks,
    notes: &mut Vec<String>,
) -> Result<Started, PhaseError> {
    const P: &str = "data path";
    let mut out = agent::agent_step(cecs, addrs, checks);
    for r in &out.rejected {
        notes.push(format!(
            "agent step: CiliumEnvoyConfig {r}: refused whole, as cilium-agent refuses it (none of its resources reach Envoy)"
        ));
    }
    for f in &out.removed_filters {
        notes.push(format!("agent step: removed {f} (a filter of cilium-envoy that upstream Envoy does not have)"));
    }
    notes.extend(out.notes.iter().map(|n| format!("agent step: {n}")));

    // The work folder: bootstrap, LDS file, the synced Secrets' certificates and keys (0600).
    let work = crate::scratch::Scratch::labelled(crate::scratch::OPERATOR, "envoy")
        .map_err(|e| PhaseError::new(P, format!("creating the Envoy work folder: {e}")))?;
    let mut secrets = Vec::new();
    let mut missing = BTreeSet::new();
    for name in &out.secrets {
        let Some((ns, secret)) = name.split_once('/') else { continue };
        let obj = d.get(&ObjRef::new("v1", "Secret", Some(ns), secret)).await.map_err(|e| PhaseError::step(P, e))?;
        let data = |k: &str| obj.as_ref().and_then(|o| o.get("data")).and_then(|d| d.get(k)).and_then(Value::as_str).and_then(decode_b64);
        match (data("tls.crt"), data("tls.key")) {
            (Some(crt), Some(key)) => {
                let base = work.path().join(format!("secret-{}", secrets.len()));
                write_private(&base.with_extension("crt"), &crt).map_err(|e| PhaseError::new(P, e.to_string()))?;
                write_private(&base.with_extension("key"), &key).map_err(|e| PhaseError::new(P, e.to_string()))?;
                secrets.push(json!({
                    "name": name,
                    "tls_certificate": {
                        "certificate_chain": {"filename": base.with_extension("crt").display().to_string()},
                        "private_key": {"filename": base.with_extension("key").display().to_string()}
                    }
                }));
            }
            _ => {
                notes.push(format!(
                    "Secret {name} that a listener uses is not in the secrets namespace: cilium-agent's SDS never answers for it, so Envoy keeps the listener and the chains using it reset TLS handshakes"
                ));
                missing.insert(name.clone());
            }
        }
    }
    if !missing.is_empty() {
        let empty = crate::envoy::sds::write_empty_sds(work.path()).map_err(|e| PhaseError::new(P, format!("the empty SDS file: {e}")))?;
        agent::never_served(&mut out.listeners, &missing, &empty);
    }

    let resources: Vec<Value> = out
        .listeners
        .iter()
        .map(|l| {
            let mut l = l.clone();
            if let Some(o) = l.as_object_mut() {
                o.insert("@type".into(), json!(LISTENER_TYPE));
            }
            l
        })
        .collect();
    // Where Envoy refuses a listener, what Cilium's agent does on the NACK: every listener of
    // the refused one's CEC withdrawn (crate::envoy::relaunch, as the model's serve.rs).
    let ((envoy, outcome), revert) = relaunch::launch_reverting(
        resources,
        |r: &Value| r.get("name").and_then(Value::as_str),
        |attempt, kept| {
            let tag = match attempt {
                relaunch::Attempt::First => "1",
                relaunch::Attempt::AfterRevert => "2",
            };
            launch(work.path(), tag, &out.clusters, &secrets, kept, envoy_ready)
        },
        |e| PhaseError::new(P, format!("the local Envoy's dump: {e}")),
    )
    .await?;
    if outcome == LdsOutcome::Rejected || !revert.withdrawn.is_empty() {
        notes.push("the local Envoy refused the listeners (see the Envoy view's error_state)".into());
    }
    notes.extend(revert.notes().into_iter().map(|n| format!("agent step: {n}")));
    out.bound.retain(|n, _| !revert.withdrawn.contains(n));
    let listening: Vec<(String, Vec<SocketAddr>)> = out.bound.iter().map(|(n, a)| (n.clone(), a.clone())).collect();
    if let Err(e) = envoy::wait_listening(&envoy, &listening, envoy_ready).await {
        notes.push(e);
    }
    Ok(Started { agent: out, envoy, lds: outcome, work })
}

/// One local Envoy on the agent step's clusters and secrets (in its bootstrap) and `resources`
/// pushed as the first listener update through a file of its own (`lds-<tag>` in `work`).
async fn launch(
    work: &std::path::Path,
    tag: &str,
    clusters: &[Value],
    secrets: &[Value],
    resources: Vec<Value>,
    envoy_ready: Duration,
) -> Result<(EnvoyProcess, LdsOutcome), PhaseError> {
    const P: &str = "data path";
    let lds = LdsDir::create(&work.join(format!("lds-{tag}"))).map_err(|e| PhaseError::new(P, e.to_string()))?;
    lds.push("0", &[]).map_err(|e| PhaseError::new(P, e.to_string()))?;
    let cfg = work.join(format!("bootstrap-{tag}.json"));
    Bootstrap::file_lds(AdminSpec::default(), lds.path(), Vec::new())
        .with_raw(clusters.to_vec(), secrets.to_vec())
        .write(&cfg)
        .map_err(|e| PhaseError::new(P, format!("writing the bootstrap: {e}")))?;
    let envoy = EnvoyProcess::start_async(
        &cfg,
        &work.join(format!("envoy-{tag}")),
        StartOptions { ready_timeout: envoy_ready, ..StartOptions::default() },
    )
    .await
    .map_err(|e| PhaseError::new(P, format!("the local Envoy: {e}")))?;
    let admin = envoy.admin();
    let before = envoy::lds_counters(&admin).await.map_err(|e| PhaseError::new(P, e.to_string()))?;
    lds.push_value(&json!({ "version_info": "1", "resources": resources })).map_err(|e| PhaseError::new(P, e.to_string()))?;
    let update = envoy::wait_for_lds_update(&admin, before, envoy_ready).await.map_err(|e| PhaseError::new(P, e.to_string()))?;
    Ok((envoy, update.outcome))
}

/// One Gateway of a running control plane served as a cluster serves it at its address: the
/// CiliumEnvoyConfig Cilium's operator wrote for it, through the emulated agent step, on a real
/// local Envoy listening at `ip` on every port of the Gateway's Service. Envoy stops (and its
/// work folder goes) when this is dropped.
pub struct ServedGateway {
    /// What the agent step and Envoy said (a refused CEC, a Secret never served, a listener
    /// that did not bind), as the lane's own data path says them.
    pub notes: Vec<String>,
    /// The addresses Envoy listens on, by qualified listener name.
    pub bound: BTreeMap<String, Vec<SocketAddr>>,
    _started: Started,
}

/// Serves Gateway `ns/gateway` of the control plane `d` reaches at `ip` (see [`ServedGateway`]):
/// what `check --live`'s probes meet when the operator lane's control plane stands in for a
/// cluster. `backends` stands for the backend Services' endpoints (a Service without one has
/// none, as a Service without pods). The same agent step and Envoy start-up as the lane's own
/// data path (with `checks`, the agent's at the operator's version); only the addresses differ
/// (the caller's, not held local ones).
pub async fn serve_gateway<D: Driver>(
    d: &mut D,
    ns: &str,
    gateway: &str,
    ip: std::net::IpAddr,
    backends: BTreeMap<ServiceKey, SocketAddr>,
    envoy_ready: Duration,
    checks: AgentChecks,
) -> Result<ServedGateway, PhaseError> {
    let intended = cec::read_intended(d, ns, &[gateway.to_string()], &mut Recording::default()).await?;
    if intended.cecs.is_empty() {
        return Err(PhaseError::new("data path", format!("Cilium's operator wrote no CiliumEnvoyConfig for Gateway {ns}/{gateway}")));
    }
    let mut notes = intended.notes.clone();
    let own = (ns.to_string(), crate::judge::cilium_gateway_resource(gateway));
    let mut addrs = Addresses { backends, ..Addresses::default() };
    for (key, ports) in redirected_services(d, &intended.cecs, ns, &mut notes).await? {
        if key == own {
            addrs.frontends.extend(ports.iter().map(|p| ((key.clone(), *p), SocketAddr::new(ip, *p))));
        } else {
            notes.push(format!("Service {}/{} is not Gateway {ns}/{gateway}'s: not served here", key.0, key.1));
        }
        addrs.service_ports.insert(key, ports);
    }
    let started = start_envoy(d, &intended.cecs, &addrs, envoy_ready, checks, &mut notes).await?;
    Ok(ServedGateway { notes, bound: started.agent.bound.clone(), _started: started })
}

#[cfg(test)]
mod step_tests {
    use super::*;
    use crate::lanes::cluster::batch::Batch;

    /// Cilium's own agent is the default: unset asks for it as `cilium` does, and when it cannot
    /// run the error says how the emulated step is asked for; `emulated` is taken only by name.
    #[test]
    fn ciliums_agent_is_the_default_and_the_emulated_step_is_asked_by_name() {
        let not_built =
            || Err::<AgentStep, String>("Cilium 1.19.6's agent is not built here: scripts/install-control-plane.sh --agent 1.19.6".into());
        let e = AgentStep::pick("", not_built).err().expect("the default is Cilium's agent, which is not built");
        assert!(
            e.contains("install-control-plane.sh --agent 1.19.6")
                && e.contains("by default")
                && e.contains(&format!("{STEP_ENV}=emulated")),
            "{e}"
        );
        let e = AgentStep::pick("cilium", not_built).err().unwrap();
        assert!(!e.contains("by default"), "{e}");
        let mut asked_real = false;
        let emulated = AgentStep::pick("emulated", || {
            asked_real = true;
            not_built()
        })
        .unwrap();
        assert!(!asked_real && !emulated.is_real());
        assert!(emulated.describe().starts_with("emulated"), "{}", emulated.describe());
        assert_eq!(emulated.cases_at_once(Batch::new(4).unwrap()), Batch::new(4).unwrap());
        let e = AgentStep::pick("real", not_built).err().unwrap();
        assert!(e.contains("want `cilium`"), "{e}");
    }
}
