//! An L4 forwarding stand-in for Cilium's BPF load balancer, used only by `layout-gate
//! conformance --traffic` (issue #39 item 3, the 1.20 line). Emulated, not Cilium's.
//!
//! Cilium 1.20's operator serves a Gateway's TCP and UDP listeners without Envoy: it writes no
//! CiliumEnvoyConfig for them (`cilium@v1.20.2:operator/pkg/gateway-api/gateway_reconcile.go`,
//! `ensureEnvoyConfig`) and instead gives the Gateway's own Service EndpointSlices naming the
//! routes' backends (`cilium@v1.20.2:operator/pkg/model/translation/gateway-api/endpointslices.go`),
//! which a node's BPF load balancer serves at the Gateway's address. The agent here runs DryMode's
//! fake datapath: no BPF. This module reads the agent's own load-balancer state (its `frontends`
//! and `services` tables of `cilium@v1.20.2:pkg/loadbalancer`, and its `/redirects` and `/binds`,
//! through agent-plane's read-only dump socket) and, for every LoadBalancer frontend at an address
//! of the plane's LB IPAM block that the agent does not redirect to its L7 proxy (xds-bridge binds
//! those), binds that address and port and forwards each TCP connection, or each UDP flow, to one
//! of the frontend's backends.
//!
//! Backend choice, as the datapath's: uniformly at random among the active backends (the random
//! algorithm, `cilium@v1.20.2:bpf/lib/lb.h`, `lb4_select_backend_id_random`, which ignores
//! weights); for a Service annotated `service.cilium.io/lb-algorithm: maglev` (which the 1.20
//! operator sets on a Gateway whose L4 routes carry weights, `translator.go`, "Maglev is required
//! for Cilium's datapath to honor backend weights"), at random in proportion to each backend's
//! weight (the EndpointSlice's `service.cilium.io/weight`, `cilium@v1.20.2:pkg/k8s/endpoints.go`),
//! standing for Maglev's weighted lookup table (`cilium@v1.20.2:pkg/maglev/maglev.go`): a new flow
//! lands on a backend with the share of the table that backend holds. Terminating backends serve
//! only when none is active; quarantined and maintenance ones (weight 0) never.
//!
//! Nothing leaves the machine: it binds only addresses of the plane's own block (loopback), and
//! forwards only to addresses [`reach::check`] lets through (loopback, or a network namespace
//! network the run holds: the pod stand-in's /24s of 10.244.0.0/16); any other backend is refused
//! and said in the log. Every frontend added, changed or removed is one line of the log
//! (`l4-rules.jsonl` beside `xds-bridge.jsonl` in the run's `--out`).

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::JoinHandle;

use crate::lanes::cluster::subnet::PoolBlock;
use crate::observe::probe::reach;

/// How often the agent's tables are read again while the suite runs (routes come and go).
pub const POLL: Duration = Duration::from_millis(500);
/// How long a connection to a backend may take to open.
const CONNECT: Duration = Duration::from_secs(5);
/// A UDP flow with no datagram either way for this long is forgotten (the agent's conntrack
/// would keep it longer; the suite's UDP clients open a socket per request).
const UDP_IDLE: Duration = Duration::from_secs(30);
/// The most UDP flows one frontend keeps at once; a datagram of a new flow beyond it is dropped.
const MAX_FLOWS: usize = 4096;
/// The largest UDP datagram forwarded.
const MAX_DATAGRAM: usize = 65535;

/// What the evidence says of this stand-in (comparison.json `emulated`, docs/conformance.md).
pub const SAID: &str = "Cilium's BPF load balancer for L4 routes (1.20 serves TCPRoute and UDPRoute without Envoy): an L4 forwarding stand-in (lanes::operator::l4), emulated, not Cilium's BPF, reads the agent's own frontends and backends (its statedb tables) and, for each LoadBalancer frontend at the plane's LB IPAM address that the agent does not redirect to its proxy, binds that address and port and forwards each TCP connection or UDP flow to one of the frontend's backends in the run's network namespaces (at random, or weighted for a Maglev Service, as the datapath chooses); every rule it followed is in l4-rules.jsonl";

/// The transport of a frontend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
        }
    }
}

/// A backend's state as the agent's table says it (`BackendState`, `cilium@v1.20.2:
/// pkg/loadbalancer/loadbalancer.go`: 0 active, 1 terminating, 2 terminating-not-serving,
/// 3 quarantined, 4 maintenance), with its `Unhealthy` flag folded in (quarantined).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendState {
    Active,
    Terminating,
    Out,
}

/// One backend of a frontend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub addr: SocketAddr,
    pub weight: u16,
    pub state: BackendState,
}

/// One frontend the stand-in serves: where it binds, the agent's backends for it, and whether its
/// Service asks for Maglev (weights honoured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontend {
    pub addr: SocketAddr,
    pub proto: Proto,
    pub service: String,
    pub maglev: bool,
    pub backends: Vec<Backend>,
}

/// Where a frontend is bound: its transport and address.
pub type Key = (Proto, SocketAddr);

impl Frontend {
    pub fn key(&self) -> Key {
        (self.proto, self.addr)
    }

    /// The backends a new flow may go to: the active ones, else (none active) the terminating
    /// ones, as the datapath falls back.
    pub fn eligible(&self) -> Vec<&Backend> {
        let active: Vec<&Backend> = self.backends.iter().filter(|b| b.state == BackendState::Active).collect();
        if !active.is_empty() {
            return active;
        }
        self.backends.iter().filter(|b| b.state == BackendState::Terminating).collect()
    }

    /// The backend a new flow goes to, for the random number `r`: uniform among the eligible
    /// backends, or in proportion to their weights when the Service asks for Maglev.
    pub fn choose(&self, r: u64) -> Option<SocketAddr> {
        let eligible = self.eligible();
        if eligible.is_empty() {
            return None;
        }
        if !self.maglev {
            return Some(eligible[(r % eligible.len() as u64) as usize].addr);
        }
        let total: u64 = eligible.iter().map(|b| u64::from(b.weight)).sum();
        if total == 0 {
            return None;
        }
        let mut at = r % total;
        for b in &eligible {
            let w = u64::from(b.weight);
            if at < w {
                return Some(b.addr);
            }
            at -= w;
        }
        None
    }
}

/// `127.18.0.4:9311/TCP` (or `[::1]:80/UDP`, with `/i` for an internal scope), as the agent's
/// tables write an `L3n4Addr` (`cilium@v1.20.2:pkg/loadbalancer/loadbalancer.go`,
/// `StringWithProtocol`): the address, the protocol, whether the scope is internal.
pub fn parse_l3n4(s: &str) -> Option<(SocketAddr, String, bool)> {
    let mut parts = s.split('/');
    let addr: SocketAddr = parts.next()?.parse().ok()?;
    let proto = parts.next()?.to_string();
    let internal = match parts.next() {
        None => false,
        Some("i") => true,
        Some(_) => return None,
    };
    parts.next().is_none().then_some((addr, proto, internal))
}

fn backend_state(row: &Value) -> BackendState {
    if row.get("Unhealthy").and_then(Value::as_bool) == Some(true) {
        return BackendState::Out;
    }
    match row.get("State").and_then(Value::as_u64) {
        Some(0) | None => BackendState::Active,
        Some(1) => BackendState::Terminating,
        Some(_) => BackendState::Out,
    }
}

/// The frontends the stand-in serves, from the agent's tables as its dump socket answers them:
/// `frontends` and `services` (`{"<table>": [rows]}`), `/redirects` and `/binds` (lists).
/// A LoadBalancer frontend of external scope at an address of `block`, TCP or UDP, neither
/// redirected to a proxy port nor about to be (xds-bridge binds those).
pub fn desired(frontends: &Value, services: &Value, redirects: &Value, binds: &Value, block: &PoolBlock) -> Vec<Frontend> {
    let rows = |v: &Value, table: &str| v.get(table).and_then(Value::as_array).cloned().unwrap_or_default();
    let maglev: HashMap<String, bool> = rows(services, "services")
        .iter()
        .filter_map(|s| {
            let name = s.get("Name")?.as_str()?.to_string();
            let alg = s.pointer("/Annotations/service.cilium.io~1lb-algorithm").and_then(Value::as_str).unwrap_or_default();
            Some((name, alg.eq_ignore_ascii_case("maglev")))
        })
        .collect();
    // Every (service, service port) the agent redirects, or is about to, to its proxy.
    let mut proxied: Vec<(String, u64)> = Vec::new();
    for r in redirects.as_array().into_iter().flatten() {
        if r.get("proxy_port").and_then(Value::as_u64).unwrap_or(0) != 0 {
            proxied.push((str_of(r, "service"), r.get("service_port").and_then(Value::as_u64).unwrap_or(0)));
        }
    }
    for b in binds.as_array().into_iter().flatten() {
        proxied.push((str_of(b, "service"), b.get("service_port").and_then(Value::as_u64).unwrap_or(0)));
    }
    let mut out: BTreeMap<Key, Frontend> = BTreeMap::new();
    for fe in rows(frontends, "frontends") {
        if fe.get("Type").and_then(Value::as_str) != Some("LoadBalancer") {
            continue;
        }
        let Some((addr, proto, internal)) = fe.get("Address").and_then(Value::as_str).and_then(parse_l3n4) else { continue };
        let proto = match proto.as_str() {
            "TCP" => Proto::Tcp,
            "UDP" => Proto::Udp,
            _ => continue,
        };
        let in_block = matches!(addr.ip(), IpAddr::V4(ip) if block.contains(ip));
        if internal || !in_block {
            continue;
        }
        let service = str_of(&fe, "ServiceName");
        let port = fe.get("ServicePort").and_then(Value::as_u64).unwrap_or(u64::from(addr.port()));
        if proxied.iter().any(|(s, p)| *s == service && *p == port) {
            continue;
        }
        let backends = fe
            .get("Backends")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|b| {
                let (baddr, bproto, _) = parse_l3n4(b.get("Address")?.as_str()?)?;
                (bproto == proto.name()).then(|| Backend {
                    addr: baddr,
                    weight: b.get("Weight").and_then(Value::as_u64).map_or(0, |w| w.min(u64::from(u16::MAX)) as u16),
                    state: backend_state(b),
                })
            })
            .collect();
        let f = Frontend { addr, proto, maglev: maglev.get(&service).copied().unwrap_or(false), service, backends };
        out.insert(f.key(), f);
    }
    out.into_values().collect()
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// What changes between the frontends served and those desired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(Frontend),
    Changed(Frontend),
    Removed(Key),
}

/// The changes that take `served` to `desired`, removals first (a port freed before it is bound
/// again).
pub fn diff(served: &BTreeMap<Key, Frontend>, desired: &[Frontend]) -> Vec<Change> {
    let want: BTreeMap<Key, &Frontend> = desired.iter().map(|f| (f.key(), f)).collect();
    let mut out: Vec<Change> = served.keys().filter(|k| !want.contains_key(k)).map(|k| Change::Removed(*k)).collect();
    for (k, f) in want {
        match served.get(&k) {
            None => out.push(Change::Added(f.clone())),
            Some(old) if old != f => out.push(Change::Changed(f.clone())),
            Some(_) => {}
        }
    }
    out
}

/// A frontend's backends split into those the stand-in may forward to and those it refuses
/// ([`reach::check`]: loopback or a network namespace network the run holds), with why.
pub fn permitted(f: &Frontend) -> (Frontend, Vec<(SocketAddr, String)>) {
    let mut ok = f.clone();
    let mut refused = Vec::new();
    ok.backends.retain(|b| match reach::check(b.addr) {
        Ok(()) => true,
        Err(e) => {
            refused.push((b.addr, e.to_string()));
            false
        }
    });
    (ok, refused)
}

/// A random number for one choice: a fresh SipHash key of the process's random state over a
/// counter.
fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::collections::hash_map::RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The stand-in's log: one JSON line per event.
#[derive(Debug)]
pub struct RuleLog {
    path: PathBuf,
    file: Mutex<Option<std::fs::File>>,
}

impl RuleLog {
    /// Starts `path` afresh.
    pub fn create(path: &Path) -> std::io::Result<RuleLog> {
        let file = std::fs::File::create(path)?;
        Ok(RuleLog { path: path.to_path_buf(), file: Mutex::new(Some(file)) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line (best effort: the run goes on when the disk does not).
    pub fn line(&self, mut v: Value) {
        let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        v["ts_ms"] = json!(ms);
        let mut guard = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = guard.as_mut() {
            let _ = f.write_all(format!("{v}\n").as_bytes());
        }
    }
}

fn frontend_json(event: &str, f: &Frontend, refused: &[(SocketAddr, String)]) -> Value {
    json!({
        "event": event,
        "frontend": format!("{}/{}", f.addr, f.proto.name()),
        "service": f.service,
        "algorithm": if f.maglev { "maglev: weighted random" } else { "random" },
        "backends": f.backends.iter().map(|b| json!({
            "address": b.addr.to_string(),
            "weight": b.weight,
            "state": match b.state { BackendState::Active => "active", BackendState::Terminating => "terminating", BackendState::Out => "out" },
        })).collect::<Vec<_>>(),
        "refused": refused.iter().map(|(a, why)| json!({"address": a.to_string(), "why": why})).collect::<Vec<_>>(),
    })
}

/// One bound frontend: its backends (shared with its task), its task, its flow count.
struct Served {
    frontend: Frontend,
    /// Where it is bound (the frontend's address; its port when that was 0, in tests).
    local: SocketAddr,
    pool: Arc<Mutex<Frontend>>,
    flows: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

/// The frontends bound now, by key, kept in step with the agent's tables by [`Forwarder::apply`].
pub struct Forwarder {
    served: BTreeMap<Key, Served>,
    /// Frontends seen but not bound (every backend refused, none at all, or a failed bind), as
    /// last said, so each is said once per change.
    unbound: BTreeMap<Key, Frontend>,
    log: Arc<RuleLog>,
}

impl Forwarder {
    pub fn new(log: Arc<RuleLog>) -> Self {
        Forwarder { served: BTreeMap::new(), unbound: BTreeMap::new(), log }
    }

    /// The frontends bound now.
    pub fn bound(&self) -> BTreeMap<Key, Frontend> {
        self.served.iter().map(|(k, s)| (*k, s.frontend.clone())).collect()
    }

    /// Where the frontend `key` is bound, if it is.
    pub fn local_addr(&self, key: &Key) -> Option<SocketAddr> {
        self.served.get(key).map(|s| s.local)
    }

    /// Takes the served frontends to `desired`: binds the new ones, updates the backends of the
    /// changed ones, unbinds the gone ones; each said in the log.
    pub async fn apply(&mut self, desired: &[Frontend]) {
        // Compared as desired (before refusals), so a refused frontend is not said again each read.
        let mut current: BTreeMap<Key, Frontend> = self.served.iter().map(|(k, s)| (*k, s.frontend.clone())).collect();
        current.extend(self.unbound.iter().map(|(k, f)| (*k, f.clone())));
        for change in diff(&current, desired) {
            match change {
                Change::Removed(k) => {
                    self.unbound.remove(&k);
                    if let Some(s) = self.served.remove(&k) {
                        unbind(s.task).await;
                        let mut line = frontend_json("removed", &s.frontend, &[]);
                        line["flows"] = json!(s.flows.load(Ordering::Relaxed));
                        self.log.line(line);
                    }
                }
                Change::Changed(f) if self.served.contains_key(&f.key()) => {
                    let (ok, refused) = permitted(&f);
                    if ok.eligible().is_empty() {
                        // Nothing left to forward to: unbound, as the frontend with no backends.
                        if let Some(s) = self.served.remove(&f.key()) {
                            unbind(s.task).await;
                        }
                        self.log.line(frontend_json("removed", &f, &refused));
                        self.unbound.insert(f.key(), f);
                        continue;
                    }
                    let s = self.served.get_mut(&f.key()).expect("checked above");
                    *s.pool.lock().unwrap_or_else(PoisonError::into_inner) = ok;
                    s.frontend = f.clone();
                    self.log.line(frontend_json("changed", &f, &refused));
                }
                Change::Added(f) | Change::Changed(f) => {
                    self.unbound.remove(&f.key());
                    let (ok, refused) = permitted(&f);
                    if ok.eligible().is_empty() {
                        self.log.line(frontend_json("not_bound", &f, &refused));
                        self.unbound.insert(f.key(), f);
                        continue;
                    }
                    match bind(&ok, self.log.clone()).await {
                        Ok((local, pool, flows, task)) => {
                            self.log.line(frontend_json("added", &f, &refused));
                            self.served.insert(f.key(), Served { frontend: f, local, pool, flows, task });
                        }
                        Err(e) => {
                            let mut line = frontend_json("bind_failed", &f, &refused);
                            line["error"] = json!(e.to_string());
                            self.log.line(line);
                            // Not remembered: tried again at the next read.
                        }
                    }
                }
            }
        }
    }

    /// Unbinds everything, saying each frontend's flow count.
    pub fn stop(&mut self) {
        for (_, s) in std::mem::take(&mut self.served) {
            s.task.abort();
            let mut line = frontend_json("stopped", &s.frontend, &[]);
            line["flows"] = json!(s.flows.load(Ordering::Relaxed));
            self.log.line(line);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        for s in self.served.values() {
            s.task.abort();
        }
    }
}

type Bound = (SocketAddr, Arc<Mutex<Frontend>>, Arc<AtomicU64>, JoinHandle<()>);

/// Stops a frontend's task and waits until it has let go of its socket (so the port is free for
/// the next bind).
async fn unbind(task: JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}

async fn bind(f: &Frontend, log: Arc<RuleLog>) -> std::io::Result<Bound> {
    let pool = Arc::new(Mutex::new(f.clone()));
    let flows = Arc::new(AtomicU64::new(0));
    Ok(match f.proto {
        Proto::Tcp => {
            let listener = TcpListener::bind(f.addr).await?;
            let local = listener.local_addr()?;
            (local, pool.clone(), flows.clone(), tokio::spawn(serve_tcp(listener, pool, flows, log)))
        }
        Proto::Udp => {
            let socket = UdpSocket::bind(f.addr).await?;
            let local = socket.local_addr()?;
            (local, pool.clone(), flows.clone(), tokio::spawn(serve_udp(Arc::new(socket), pool, flows, log)))
        }
    })
}

/// The backend for a new flow, checked once more against the confinement (a refusal is said in
/// the log and in [`reach::LOCAL_ONLY_ENV`]'s file, and nothing is sent).
fn pick(pool: &Mutex<Frontend>, log: &RuleLog) -> Option<SocketAddr> {
    let f = pool.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let to = f.choose(random())?;
    match reach::check(to) {
        Ok(()) => Some(to),
        Err(e) => {
            tracing::error!(%to, "l4 stand-in: {e}");
            reach::record(&e);
            log.line(json!({"event": "refused", "frontend": format!("{}/{}", f.addr, f.proto.name()), "backend": to.to_string(), "why": e.to_string()}));
            None
        }
    }
}

async fn serve_tcp(listener: TcpListener, pool: Arc<Mutex<Frontend>>, flows: Arc<AtomicU64>, log: Arc<RuleLog>) {
    loop {
        let Ok((mut client, _)) = listener.accept().await else {
            // Out of descriptors, most likely: let the others finish first.
            tokio::task::yield_now().await;
            continue;
        };
        let Some(to) = pick(&pool, &log) else { continue };
        flows.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let Ok(Ok(mut up)) = tokio::time::timeout(CONNECT, TcpStream::connect(to)).await else { return };
            let _ = tokio::io::copy_bidirectional(&mut client, &mut up).await;
        });
    }
}

async fn serve_udp(socket: Arc<UdpSocket>, pool: Arc<Mutex<Frontend>>, flows: Arc<AtomicU64>, log: Arc<RuleLog>) {
    let table: Arc<Mutex<HashMap<SocketAddr, Arc<UdpSocket>>>> = Arc::new(Mutex::new(HashMap::new()));
    // The flows' reply tasks hold the frontend's socket: owned here, so that unbinding the
    // frontend (aborting this task) ends them too and frees its port.
    let mut replies = tokio::task::JoinSet::new();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        while replies.try_join_next().is_some() {}
        let Ok((n, client)) = socket.recv_from(&mut buf).await else {
            tokio::task::yield_now().await;
            continue;
        };
        let known = table.lock().unwrap_or_else(PoisonError::into_inner).get(&client).cloned();
        let up = match known {
            Some(up) => up,
            None => {
                if table.lock().unwrap_or_else(PoisonError::into_inner).len() >= MAX_FLOWS {
                    continue;
                }
                let Some(to) = pick(&pool, &log) else { continue };
                let Ok(up) = udp_to(to).await else { continue };
                let up = Arc::new(up);
                flows.fetch_add(1, Ordering::Relaxed);
                table.lock().unwrap_or_else(PoisonError::into_inner).insert(client, up.clone());
                replies.spawn(udp_replies(up.clone(), socket.clone(), client, table.clone()));
                up
            }
        };
        let _ = up.send(&buf[..n]).await;
    }
}

/// A socket of the host's own, connected to `to`.
async fn udp_to(to: SocketAddr) -> std::io::Result<UdpSocket> {
    let any: SocketAddr = match to {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = UdpSocket::bind(any).await?;
    s.connect(to).await?;
    Ok(s)
}

/// The backend's answers of one flow, sent back from the frontend's own address (the datapath's
/// reverse NAT), until the flow is idle for [`UDP_IDLE`].
async fn udp_replies(
    up: Arc<UdpSocket>,
    frontend: Arc<UdpSocket>,
    client: SocketAddr,
    table: Arc<Mutex<HashMap<SocketAddr, Arc<UdpSocket>>>>,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while let Ok(Ok(n)) = tokio::time::timeout(UDP_IDLE, up.recv(&mut buf)).await {
        let _ = frontend.send_to(&buf[..n], client).await;
    }
    table.lock().unwrap_or_else(PoisonError::into_inner).remove(&client);
}

/// Reads the agent's tables through its dump socket: what [`desired`] takes.
pub async fn read_tables(dump: &Path, block: &PoolBlock) -> Result<Vec<Frontend>, String> {
    let frontends = super::real_agent::dump_get(dump, "/statedb/dump/frontends").await?;
    let services = super::real_agent::dump_get(dump, "/statedb/dump/services").await?;
    let redirects = super::real_agent::dump_get(dump, "/redirects").await?;
    let binds = super::real_agent::dump_get(dump, "/binds").await?;
    Ok(desired(&frontends, &services, &redirects, &binds, block))
}

/// The stand-in running: its loop reads the agent's tables every [`POLL`] and keeps the
/// forwarding in step, until [`L4StandIn::stop`].
pub struct L4StandIn {
    stop: tokio::sync::watch::Sender<bool>,
    task: JoinHandle<Forwarder>,
    log: Arc<RuleLog>,
}

impl L4StandIn {
    /// Starts the loop on the current runtime; the log `log` is started afresh.
    pub fn start(dump: PathBuf, block: PoolBlock, log: &Path) -> std::io::Result<L4StandIn> {
        let log = Arc::new(RuleLog::create(log)?);
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let mut fwd = Forwarder::new(log.clone());
        let said = log.clone();
        said.line(json!({"event": "started", "block": block.to_string(), "emulated": SAID}));
        let task = tokio::spawn(async move {
            let mut last_error: Option<String> = None;
            loop {
                match read_tables(&dump, &block).await {
                    Ok(want) => {
                        last_error = None;
                        fwd.apply(&want).await;
                    }
                    Err(e) if last_error.as_deref() != Some(e.as_str()) => {
                        said.line(json!({"event": "read_failed", "error": e}));
                        last_error = Some(e);
                    }
                    Err(_) => {}
                }
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = tokio::time::sleep(POLL) => {}
                }
            }
            fwd
        });
        Ok(L4StandIn { stop, task, log })
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// Stops reading and unbinds everything.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Ok(mut fwd) = self.task.await {
            fwd.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn block() -> PoolBlock {
        "127.18.0.0/16".parse().unwrap()
    }

    fn be(addr: &str, weight: u16, state: BackendState) -> Backend {
        Backend { addr: addr.parse().unwrap(), weight, state }
    }

    fn fe(addr: &str, proto: Proto, maglev: bool, backends: Vec<Backend>) -> Frontend {
        Frontend { addr: addr.parse().unwrap(), proto, service: "ns/svc".into(), maglev, backends }
    }

    fn log() -> (tempfile::TempDir, Arc<RuleLog>) {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(RuleLog::create(&dir.path().join("l4-rules.jsonl")).unwrap());
        (dir, log)
    }

    fn lines(log: &RuleLog) -> Vec<Value> {
        std::fs::read_to_string(log.path()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn an_l3n4_address_is_read_as_the_agent_writes_it() {
        assert_eq!(parse_l3n4("127.18.0.4:9311/TCP"), Some(("127.18.0.4:9311".parse().unwrap(), "TCP".into(), false)));
        assert_eq!(parse_l3n4("10.244.3.7:3000/UDP/i"), Some(("10.244.3.7:3000".parse().unwrap(), "UDP".into(), true)));
        assert_eq!(parse_l3n4("[fd00::5]:80/TCP"), Some(("[fd00::5]:80".parse().unwrap(), "TCP".into(), false)));
        for bad in ["127.18.0.4:9311", "127.18.0.4/TCP", "127.18.0.4:9311/TCP/x", "nonsense"] {
            assert_eq!(parse_l3n4(bad), None, "{bad}");
        }
    }

    /// Rows captured from agent-plane's dump socket during a traffic run at 1.20.2 (suite
    /// v1.6.2's UDPRouteWeightedRouting and TCPRouteWeightedRouting Gateways beside an HTTP one;
    /// tests/l4-v1.20.2/): the two weighted L4 frontends are served, with Maglev and their
    /// weights; the HTTP Gateway's frontend (redirected to proxy port 10094) and every NodePort
    /// and ClusterIP row are not. The TCP Gateway's heaviest backend was still in maintenance
    /// (State 4: its EndpointSlice endpoint not yet Ready) and the weight-0 one always is: no flow
    /// goes to either.
    #[test]
    fn rows_captured_at_1_20_2_are_read_as_cilium_wrote_them() {
        let read = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        let got = desired(
            &read(include_str!("tests/l4-v1.20.2/frontends.json")),
            &read(include_str!("tests/l4-v1.20.2/services.json")),
            &read(include_str!("tests/l4-v1.20.2/redirects.json")),
            &read(include_str!("tests/l4-v1.20.2/binds.json")),
            &block(),
        );
        let keys: Vec<String> = got.iter().map(|f| format!("{}/{}", f.addr, f.proto.name())).collect();
        assert_eq!(keys, ["127.18.0.4:9300/TCP", "127.18.0.4:5300/UDP"], "{got:#?}");
        assert!(got.iter().all(|f| f.maglev && f.service.ends_with("-weighted-gateway")));
        let (tcp, udp) = (&got[0], &got[1]);
        let shape = |f: &Frontend| f.backends.iter().map(|b| (b.addr.to_string(), b.weight, b.state)).collect::<Vec<_>>();
        assert_eq!(
            shape(udp),
            [
                ("10.244.1.25:8080".to_string(), 70, BackendState::Active),
                ("10.244.1.26:8080".to_string(), 30, BackendState::Active),
                ("10.244.1.27:8080".to_string(), 0, BackendState::Out)
            ]
        );
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for r in 0..100 {
            *counts.entry(udp.choose(r).unwrap().to_string()).or_default() += 1;
        }
        assert_eq!(counts, [("10.244.1.25:8080".to_string(), 70), ("10.244.1.26:8080".to_string(), 30)].into_iter().collect());
        assert_eq!(tcp.backends[0].state, BackendState::Out, "maintenance (State 4)");
        assert!((0..100).all(|r| tcp.choose(r) == Some("10.244.1.26:3000".parse().unwrap())));
    }

    /// The cases a capture did not hold, in the captured rows' shapes (`cilium@v1.20.2:
    /// pkg/loadbalancer`): the L4 frontend of the plane's block is served with its backends; a
    /// frontend redirected to a proxy port, one about to be (in `/binds`, not yet installed),
    /// one of another plane's block, a ClusterIP row and an internal scope (`/i`) are not.
    #[test]
    fn the_frontends_served_are_read_from_the_agents_tables() {
        let frontends = serde_json::from_str::<Value>(FRONTENDS).unwrap();
        let services = serde_json::from_str::<Value>(SERVICES).unwrap();
        let redirects = serde_json::from_str::<Value>(REDIRECTS).unwrap();
        let binds = serde_json::from_str::<Value>(BINDS).unwrap();
        let got = desired(&frontends, &services, &redirects, &binds, &block());
        let keys: Vec<String> = got.iter().map(|f| format!("{}/{}", f.addr, f.proto.name())).collect();
        assert_eq!(keys, WANT_KEYS, "{got:#?}");
        let weighted = got.iter().find(|f| f.service == WEIGHTED_SERVICE).unwrap();
        assert!(weighted.maglev);
        assert_eq!(weighted.backends.iter().map(|b| b.weight).collect::<Vec<_>>(), WANT_WEIGHTS);
        assert!(got.iter().filter(|f| f.service != WEIGHTED_SERVICE).all(|f| !f.maglev && !f.backends.is_empty()));
    }

    /// The tables are read through the agent's dump socket by the paths agent-plane serves
    /// (statedb's dump of `frontends` and `services` by name, `/redirects`, `/binds`).
    #[tokio::test]
    async fn the_tables_are_read_through_the_agents_dump_socket() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("dump.sock");
        let server = tokio::net::UnixListener::bind(&sock).unwrap();
        let serve = tokio::spawn(async move {
            let mut asked = Vec::new();
            for _ in 0..4 {
                let (mut c, _) = server.accept().await.unwrap();
                let mut req = Vec::new();
                let mut buf = [0u8; 512];
                while !req.ends_with(b"\r\n\r\n") {
                    let n = c.read(&mut buf).await.unwrap();
                    req.extend_from_slice(&buf[..n]);
                }
                let path = String::from_utf8_lossy(&req).split_whitespace().nth(1).unwrap().to_string();
                let body = match path.as_str() {
                    "/statedb/dump/frontends" => FRONTENDS,
                    "/statedb/dump/services" => SERVICES,
                    "/redirects" => REDIRECTS,
                    "/binds" => BINDS,
                    _ => "{}",
                };
                c.write_all(format!("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{body}").as_bytes()).await.unwrap();
                asked.push(path);
            }
            asked
        });
        let got = read_tables(&sock, &block()).await.unwrap();
        assert_eq!(got.iter().map(|f| format!("{}/{}", f.addr, f.proto.name())).collect::<Vec<_>>(), WANT_KEYS);
        let mut asked = serve.await.unwrap();
        asked.sort();
        assert_eq!(asked, ["/binds", "/redirects", "/statedb/dump/frontends", "/statedb/dump/services"]);
    }

    /// Weights are honoured only for a Maglev Service, and in proportion: over every random
    /// number modulo the weights' sum, each backend is chosen exactly its weight's times; a
    /// random Service ignores weights, as the datapath's random algorithm does.
    #[test]
    fn backends_are_chosen_as_the_datapath_chooses_them() {
        let backends = vec![
            be("10.244.1.2:3000", 70, BackendState::Active),
            be("10.244.1.3:3000", 30, BackendState::Active),
            be("10.244.1.4:3000", 0, BackendState::Out),
        ];
        let weighted = fe("127.18.0.9:9000", Proto::Udp, true, backends.clone());
        let mut counts: BTreeMap<SocketAddr, u64> = BTreeMap::new();
        for r in 0..1000 {
            *counts.entry(weighted.choose(r).unwrap()).or_default() += 1;
        }
        assert_eq!(counts.get(&"10.244.1.2:3000".parse().unwrap()), Some(&700));
        assert_eq!(counts.get(&"10.244.1.3:3000".parse().unwrap()), Some(&300));
        assert_eq!(counts.get(&"10.244.1.4:3000".parse().unwrap()), None, "weight 0 (maintenance) is never chosen");

        let random = fe("127.18.0.9:9000", Proto::Udp, false, backends);
        let mut counts: BTreeMap<SocketAddr, u64> = BTreeMap::new();
        for r in 0..1000 {
            *counts.entry(random.choose(r).unwrap()).or_default() += 1;
        }
        assert_eq!(counts.values().copied().collect::<Vec<_>>(), vec![500, 500], "{counts:?}");

        // Terminating backends serve only when none is active.
        let term = fe(
            "127.18.0.9:9000",
            Proto::Tcp,
            false,
            vec![be("10.244.1.2:3000", 100, BackendState::Terminating), be("10.244.1.3:3000", 100, BackendState::Out)],
        );
        assert_eq!(term.choose(7), Some("10.244.1.2:3000".parse().unwrap()));
        let mut both = term.clone();
        both.backends.push(be("10.244.1.5:3000", 100, BackendState::Active));
        assert!((0..10).all(|r| both.choose(r) == Some("10.244.1.5:3000".parse().unwrap())));
        assert_eq!(fe("127.18.0.9:9000", Proto::Tcp, false, vec![]).choose(3), None);
    }

    #[test]
    fn changes_are_followed_removals_first() {
        let a = fe("127.18.0.4:9311", Proto::Tcp, false, vec![be("10.244.1.2:3000", 100, BackendState::Active)]);
        let b = fe("127.18.0.5:9312", Proto::Udp, false, vec![be("10.244.1.3:3000", 100, BackendState::Active)]);
        let mut a2 = a.clone();
        a2.backends.push(be("10.244.1.9:3000", 100, BackendState::Active));
        let served: BTreeMap<Key, Frontend> = [(a.key(), a.clone()), (b.key(), b.clone())].into_iter().collect();
        assert_eq!(diff(&served, &[a.clone(), b.clone()]), vec![]);
        let c = fe("127.18.0.6:53", Proto::Udp, false, vec![]);
        assert_eq!(diff(&served, &[a2.clone(), c.clone()]), vec![Change::Removed(b.key()), Change::Changed(a2), Change::Added(c)]);
    }

    /// A backend outside loopback and the run's namespace networks (the L7 dummy endpoint
    /// 192.192.192.192, a cluster's 10.96/12 or kind's 172.18/16) is refused, said, and its
    /// frontend is not bound; a flow's backend is checked again when it is chosen.
    #[tokio::test]
    async fn a_backend_off_this_machine_is_refused_and_said() {
        let f = fe(
            "127.0.0.1:0",
            Proto::Tcp,
            false,
            vec![be("192.192.192.192:9999", 100, BackendState::Active), be("172.18.0.3:80", 100, BackendState::Active)],
        );
        let (ok, refused) = permitted(&f);
        assert!(ok.backends.is_empty());
        assert_eq!(refused.len(), 2);
        assert!(refused[0].1.contains("off this machine"), "{refused:?}");

        let (_dir, log) = log();
        let mut fwd = Forwarder::new(log.clone());
        fwd.apply(std::slice::from_ref(&f)).await;
        assert!(fwd.bound().is_empty());
        let said = lines(&log);
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0]["event"], "not_bound");
        assert_eq!(said[0]["refused"][0]["address"], "192.192.192.192:9999");
        // Said once, not at every read.
        fwd.apply(std::slice::from_ref(&f)).await;
        assert_eq!(lines(&log).len(), 1);

        let pool = Mutex::new(fe("127.0.0.1:0", Proto::Tcp, false, vec![be("10.96.0.10:53", 100, BackendState::Active)]));
        assert_eq!(pick(&pool, &log), None);
        let said = lines(&log);
        assert_eq!(said.last().unwrap()["event"], "refused");
        assert_eq!(said.last().unwrap()["backend"], "10.96.0.10:53");
    }

    /// An echo server on loopback that answers each connection with its name and what it read.
    async fn tcp_echo(name: &'static str) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut c, _) = l.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    let n = c.read(&mut buf).await.unwrap();
                    let mut out = format!("{name}:").into_bytes();
                    out.extend_from_slice(&buf[..n]);
                    c.write_all(&out).await.unwrap();
                });
            }
        });
        at
    }

    async fn tcp_ask(at: SocketAddr) -> String {
        let mut c = TcpStream::connect(at).await.unwrap();
        c.write_all(b"hi").await.unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).await.unwrap();
        out
    }

    /// A TCP connection to the frontend reaches its backend; a change of backends is followed
    /// by the next connection; a removed frontend is unbound.
    #[tokio::test]
    async fn tcp_is_forwarded_to_the_frontends_backend_and_follows_changes() {
        let (a, b) = (tcp_echo("a").await, tcp_echo("b").await);
        let (_dir, log) = log();
        let mut fwd = Forwarder::new(log.clone());
        let f = Frontend {
            addr: "127.0.0.1:0".parse().unwrap(),
            proto: Proto::Tcp,
            service: "ns/gw".into(),
            maglev: false,
            backends: vec![Backend { addr: a, weight: 100, state: BackendState::Active }],
        };
        fwd.apply(std::slice::from_ref(&f)).await;
        let at = fwd.local_addr(&f.key()).expect("bound");
        assert_eq!(tcp_ask(at).await, "a:hi");

        let mut g = f.clone();
        g.backends = vec![Backend { addr: b, weight: 100, state: BackendState::Active }];
        fwd.apply(std::slice::from_ref(&g)).await;
        assert_eq!(fwd.local_addr(&g.key()), Some(at), "a change keeps the socket");
        assert_eq!(tcp_ask(at).await, "b:hi");

        fwd.apply(&[]).await;
        assert!(fwd.bound().is_empty());
        assert!(TcpStream::connect(at).await.is_err(), "unbound: refused");
        let events: Vec<String> = lines(&log).iter().map(|l| l["event"].as_str().unwrap().to_string()).collect();
        assert_eq!(events, ["added", "changed", "removed"]);
        assert_eq!(lines(&log)[2]["flows"], 2);
    }

    /// A UDP datagram to the frontend reaches its backend, and the backend's answer comes back
    /// from the frontend's address (the client's socket is connected to it).
    #[tokio::test]
    async fn udp_is_forwarded_and_answered_from_the_frontends_address() {
        let echo = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let backend = echo.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 64];
            loop {
                let (n, from) = echo.recv_from(&mut buf).await.unwrap();
                let mut out = b"u:".to_vec();
                out.extend_from_slice(&buf[..n]);
                echo.send_to(&out, from).await.unwrap();
            }
        });
        let (_dir, log) = log();
        let mut fwd = Forwarder::new(log.clone());
        let f = Frontend {
            addr: "127.0.0.1:0".parse().unwrap(),
            proto: Proto::Udp,
            service: "ns/gw".into(),
            maglev: true,
            backends: vec![Backend { addr: backend, weight: 100, state: BackendState::Active }],
        };
        fwd.apply(std::slice::from_ref(&f)).await;
        let at = fwd.local_addr(&f.key()).expect("bound");
        for _ in 0..2 {
            let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            client.connect(at).await.unwrap();
            client.send(b"ping").await.unwrap();
            let mut buf = [0u8; 64];
            let n = client.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"u:ping");
        }
        fwd.apply(&[]).await;
        // Unbound, its flows' sockets too: the port can be bound again.
        UdpSocket::bind(at).await.expect("the frontend's port is free again");
        assert_eq!(lines(&log).last().unwrap()["flows"], 2);
    }

    // Rows of the agent's tables, as agent-plane's dump socket answered them.
    const WEIGHTED_SERVICE: &str = "gateway-conformance-infra/cilium-gateway-udp-weighted-gateway";
    const WANT_WEIGHTS: [u16; 2] = [70, 30];
    const WANT_KEYS: [&str; 2] = ["127.18.0.4:9311/TCP", "127.18.0.7:9330/UDP"];
    const FRONTENDS: &str = r#"{"frontends": [
      {"Address":"127.18.0.4:9311/TCP","Type":"LoadBalancer","ServiceName":"gateway-conformance-infra/cilium-gateway-gateway-tcp","PortName":"port-9311","ServicePort":9311,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[{"ServiceName":"gateway-conformance-infra/cilium-gateway-gateway-tcp","Address":"10.244.3.5:3000/TCP","PortNames":["port-9311"],"Weight":100,"NodeName":"","Zone":null,"ClusterID":0,"Source":"k8s","State":0,"Unhealthy":false,"UnhealthyUpdatedAt":null}],"HealthCheckBackends":[],"ID":7,"RedirectTo":null},
      {"Address":"127.18.0.7:9330/UDP","Type":"LoadBalancer","ServiceName":"gateway-conformance-infra/cilium-gateway-udp-weighted-gateway","PortName":"port-9330-udp","ServicePort":9330,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[{"ServiceName":"gateway-conformance-infra/cilium-gateway-udp-weighted-gateway","Address":"10.244.3.8:3000/UDP","PortNames":["port-9330-udp"],"Weight":70,"NodeName":"","Zone":null,"ClusterID":0,"Source":"k8s","State":0,"Unhealthy":false,"UnhealthyUpdatedAt":null},{"ServiceName":"gateway-conformance-infra/cilium-gateway-udp-weighted-gateway","Address":"10.244.3.9:3000/UDP","PortNames":["port-9330-udp"],"Weight":30,"NodeName":"","Zone":null,"ClusterID":0,"Source":"k8s","State":0,"Unhealthy":false,"UnhealthyUpdatedAt":null}],"HealthCheckBackends":[],"ID":9,"RedirectTo":null},
      {"Address":"127.18.0.2:80/TCP","Type":"LoadBalancer","ServiceName":"gateway-conformance-infra/cilium-gateway-same-namespace","PortName":"port-80","ServicePort":80,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[{"ServiceName":"gateway-conformance-infra/cilium-gateway-same-namespace","Address":"192.192.192.192:9999/TCP","PortNames":["port-80"],"Weight":100,"NodeName":"","Zone":null,"ClusterID":0,"Source":"k8s","State":0,"Unhealthy":false,"UnhealthyUpdatedAt":null}],"HealthCheckBackends":[],"ID":3,"RedirectTo":null},
      {"Address":"127.18.0.3:443/TCP","Type":"LoadBalancer","ServiceName":"gateway-conformance-infra/cilium-gateway-tls","PortName":"port-443","ServicePort":443,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[],"HealthCheckBackends":[],"ID":4,"RedirectTo":null},
      {"Address":"127.19.0.4:9311/TCP","Type":"LoadBalancer","ServiceName":"other/gw","PortName":"port-9311","ServicePort":9311,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[{"ServiceName":"other/gw","Address":"10.244.3.5:3000/TCP","PortNames":["port-9311"],"Weight":100,"NodeName":"","Zone":null,"ClusterID":0,"Source":"k8s","State":0,"Unhealthy":false,"UnhealthyUpdatedAt":null}],"HealthCheckBackends":[],"ID":10,"RedirectTo":null},
      {"Address":"127.18.0.4:9311/TCP/i","Type":"LoadBalancer","ServiceName":"gateway-conformance-infra/cilium-gateway-gateway-tcp","PortName":"port-9311","ServicePort":9311,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[],"HealthCheckBackends":[],"ID":8,"RedirectTo":null},
      {"Address":"10.96.0.14:9311/TCP","Type":"ClusterIP","ServiceName":"gateway-conformance-infra/cilium-gateway-gateway-tcp","PortName":"port-9311","ServicePort":9311,"Status":{"kind":"Done","updated-at":"2026-12-06T18:40:01.1Z","error":""},"Backends":[],"HealthCheckBackends":[],"ID":6,"RedirectTo":null}
    ]}"#;
    const SERVICES: &str = r#"{"services": [
      {"Name":"gateway-conformance-infra/cilium-gateway-udp-weighted-gateway","Source":"k8s","Labels":null,"Annotations":{"service.cilium.io/lb-algorithm":"maglev"},"Selector":null,"NatPolicy":"","ExtTrafficPolicy":"Cluster","IntTrafficPolicy":"Cluster","ForwardingMode":"","SessionAffinity":false,"SessionAffinityTimeout":0,"LoadBalancerClass":null,"ProxyRedirects":null,"HealthCheckNodePort":0,"LoopbackHostPort":false,"SourceRanges":[],"PortNames":{"port-9330-udp":9330},"TrafficDistribution":""},
      {"Name":"gateway-conformance-infra/cilium-gateway-gateway-tcp","Source":"k8s","Labels":null,"Annotations":null,"Selector":null,"NatPolicy":"","ExtTrafficPolicy":"Cluster","IntTrafficPolicy":"Cluster","ForwardingMode":"","SessionAffinity":false,"SessionAffinityTimeout":0,"LoadBalancerClass":null,"ProxyRedirects":null,"HealthCheckNodePort":0,"LoopbackHostPort":false,"SourceRanges":[],"PortNames":{"port-9311":9311},"TrafficDistribution":""}
    ]}"#;
    const REDIRECTS: &str = r#"[
      {"service":"gateway-conformance-infra/cilium-gateway-same-namespace","address":"127.18.0.2:80/TCP","service_port":80,"type":"LoadBalancer","proxy_port":14201,"status":"Done"},
      {"service":"gateway-conformance-infra/cilium-gateway-gateway-tcp","address":"127.18.0.4:9311/TCP","service_port":9311,"type":"LoadBalancer","proxy_port":0,"status":"Done"}
    ]"#;
    const BINDS: &str = r#"[
      {"proxy_port":14202,"address":"127.18.0.3","service":"gateway-conformance-infra/cilium-gateway-tls","service_port":443,"cec":"gateway-conformance-infra/cilium-gateway-tls","installed":false}
    ]"#;
}
