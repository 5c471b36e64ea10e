//! The operator lane's cluster: etcd and kube-apiserver on loopback with the run's own
//! certificates and free ports (the pinned chart rendering meanwhile), the Gateway API CRDs from
//! the pinned module and Cilium's own CRDs as its operator would create them ([`cilium_crds`]),
//! the objects of the pinned chart the operator needs, cilium-operator configured exactly as the
//! chart configures it, and the LB IPAM pool. Every step is a named phase with a named wait; a
//! failure says what was last seen (the process's log tail). Dropping the [`ControlPlane`] stops
//! the operator, the API server and etcd (in that order) and removes the run folder.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::binaries::ControlPlaneBinaries;
use super::chart::{self, Rendered};
use super::cilium_crds;
use super::pki::{self, Pki};
use super::procs::{Keeper, Proc, ProcSpec};
use crate::lanes::cluster::config::KindFiles;
use crate::lanes::cluster::driver::{Driver, KubeTarget, ObjRef};
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::install;
use crate::lanes::cluster::lane::NotAlive;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::subnet::PoolBlock;
use crate::lanes::cluster::timeouts::{ClusterTimeouts, Wait, human};
use crate::lanes::cluster::tools;
use crate::versions::{CiliumPin, Pins};

/// The evidence key naming the dependencies the operator was built with at another version than
/// its tag requires, one [`super::binaries::Substitution::line`] per line; absent when none.
pub const SUBSTITUTIONS_KEY: &str = "cilium_operator.substitutions";

/// The kubeconfig context layout-gate uses.
pub const CONTEXT: &str = "layout-gate-operator";
/// What `spec.nodeName` is for the operator (it runs on no node).
pub const NODE_NAME: &str = "layout-gate-operator";
/// The LB IPAM pool: loopback addresses, so a Gateway's address stays on this machine. Nothing
/// listens there unless a caller serves it (`check --live`'s trials do, at addresses of pools of
/// their own); a Gateway's address only has to exist, as it does on kind, for Cilium to mark the
/// Gateway Programmed, and the lane's probes go to the local Envoy. It was kind's usual network,
/// 172.18.0.0/16, until a `check --live` trial was found probing it: nothing here serves that
/// network, so the probes took the default route off the machine and something else answered.
///
/// All of a /16: cases run side by side on one control plane (`--batch`), and a case's
/// namespace is still being deleted while later ones run, its Gateways keeping their addresses
/// until then. Running out would answer Programmed False (`AddressNotAssigned`) for a Gateway
/// because of the cases beside it; LB IPAM's allocator keeps only the addresses handed out
/// (`pkg/ipalloc/ipalloc.go: NewHashAllocator` at cilium v1.19.6), so the block's size costs
/// nothing ([`super::batch::pool_holds`]). 127.18.0.0/16 is not one of the loopback blocks the
/// trials hand out (127.66 and 127.67) nor 127.0.0.1, where held ports live.
pub const POOL_BLOCK: &str = POOL_BLOCKS[0];

/// Every block a control plane may take ([`PoolLease`]): one per plane living on this machine,
/// all of [`POOL_BLOCK`]'s size. Through Cilium's own agent, Envoy listens at each Gateway's
/// address: two planes handing out the same addresses would bind the same sockets.
pub const POOL_BLOCKS: [&str; 16] = [
    "127.18.0.0/16",
    "127.19.0.0/16",
    "127.20.0.0/16",
    "127.21.0.0/16",
    "127.22.0.0/16",
    "127.23.0.0/16",
    "127.24.0.0/16",
    "127.25.0.0/16",
    "127.26.0.0/16",
    "127.27.0.0/16",
    "127.28.0.0/16",
    "127.29.0.0/16",
    "127.30.0.0/16",
    "127.31.0.0/16",
    "127.32.0.0/16",
    "127.33.0.0/16",
];

/// Whether `address` (an IPv4 address, or `IP:port`) is in one of [`POOL_BLOCKS`]: where a
/// Gateway of some living plane may have its address.
pub fn in_pool_blocks(address: &str) -> bool {
    let ip = match address.parse::<std::net::SocketAddr>() {
        Ok(std::net::SocketAddr::V4(a)) => *a.ip(),
        Ok(std::net::SocketAddr::V6(_)) => return false,
        Err(_) => match address.parse::<std::net::Ipv4Addr>() {
            Ok(ip) => ip,
            Err(_) => return false,
        },
    };
    POOL_BLOCKS.iter().filter_map(|b| b.parse::<PoolBlock>().ok()).any(|block| {
        let mask = u32::MAX << (32 - u32::from(block.prefix));
        u32::from(ip) & mask == u32::from(block.addr) & mask
    })
}

/// One of [`POOL_BLOCKS`], held for a control plane's life: an exclusive lock on the block's
/// folder under the machine's temporary folder ([`super::lock::HolderLock`]); the kernel lets go
/// when the plane's process ends, however it ends.
#[derive(Debug)]
pub struct PoolLease {
    pub block: PoolBlock,
    _lock: super::lock::HolderLock,
}

impl PoolLease {
    /// The first block no living plane on this machine holds.
    pub fn take() -> Result<PoolLease, String> {
        Self::take_in(&std::env::temp_dir().join("layout-gate-lb-pools"))
    }

    fn take_in(root: &Path) -> Result<PoolLease, String> {
        for b in POOL_BLOCKS {
            let dir = root.join(b.replace('/', "_"));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            if let Some(lock) = super::lock::HolderLock::try_take(&dir)? {
                let block = b.parse().map_err(|e: crate::lanes::cluster::subnet::SubnetError| e.to_string())?;
                return Ok(PoolLease { block, _lock: lock });
            }
        }
        Err(format!(
            "every LB IPAM block of this machine ({} to {}) is held by a living control plane ({}): stop one (`layout-gate operator down`) and run again",
            POOL_BLOCKS[0],
            POOL_BLOCKS[POOL_BLOCKS.len() - 1],
            root.display()
        ))
    }
}

/// Which of kube-controller-manager's controllers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controllers {
    /// The namespace controller finishes a deleted case namespace, the garbage collector what a
    /// Gateway owns: without them a deleted namespace stays Terminating. All a case needs.
    Lane,
    /// Those, and what turns workloads others wrote into pods and endpoints: the deployment and
    /// replicaset controllers (a Deployment's pods), serviceaccount (each namespace's `default`
    /// ServiceAccount, without which the API server admits no pod) and endpointslice (a
    /// Service's EndpointSlices from its Ready pods' addresses). For the pod stand-in
    /// ([`super::pods`]) that runs the conformance suite's backends.
    Workloads,
}

impl Controllers {
    /// kube-controller-manager's `--controllers` value.
    pub fn flag(self) -> &'static str {
        match self {
            Controllers::Lane => "--controllers=namespace,garbagecollector",
            Controllers::Workloads => "--controllers=namespace,garbagecollector,serviceaccount,deployment,replicaset,endpointslice",
        }
    }
}

/// Everything the bring-up needs.
pub struct Plan<'a> {
    pub pins: &'a Pins,
    pub pin: &'a CiliumPin,
    pub files: &'a KindFiles,
    pub binaries: &'a ControlPlaneBinaries,
    pub timeouts: ClusterTimeouts,
    pub run_id: String,
    pub controllers: Controllers,
}

/// A running control plane.
pub struct ControlPlane {
    // Dropped in this order: the operator, the controller manager, the API server, etcd, the
    // keeper thread, then the folder.
    operator: Proc,
    controller_manager: Proc,
    apiserver: Proc,
    etcd: Proc,
    _keeper: Keeper,
    dir: crate::scratch::Scratch,
    /// Its LB IPAM block, held until the processes above have stopped.
    _pool: PoolLease,
    pub kube: KubeTarget,
    /// Versions, module sums and digests, for evidence `environment`.
    pub environment: BTreeMap<String, String>,
    /// The namespace the operator syncs Gateway TLS Secrets into (`gateway-api-secrets-namespace`).
    pub secrets_namespace: String,
    pub operator_health: SocketAddr,
    /// Cilium's CRDs created before the operator started (none: it created them itself).
    pub cilium_crds: Vec<String>,
}

impl ControlPlane {
    /// The LB IPAM block this plane holds: its Gateways' addresses.
    pub fn pool_block(&self) -> super::super::cluster::subnet::PoolBlock {
        self._pool.block
    }
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
    /// cilium-operator's log file.
    pub fn operator_log(&self) -> &Path {
        &self.operator.log
    }
    /// The last lines of each process's log, for diagnostics.
    pub fn log_tails(&self, n: usize) -> Vec<(String, String)> {
        [&self.operator, &self.controller_manager, &self.apiserver, &self.etcd]
            .iter()
            .map(|p| (format!("{}.log", p.name), p.tail(n)))
            .collect()
    }
    /// The processes (cilium-operator, kube-apiserver, etcd) by name.
    pub fn pids(&self) -> Vec<(String, u32)> {
        [&self.operator, &self.controller_manager, &self.apiserver, &self.etcd]
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.pid()?)))
            .collect()
    }
    /// Whether every process still runs; the first that stopped, with its log tail.
    pub fn check_alive(&self) -> Result<(), NotAlive> {
        for p in [&self.operator, &self.controller_manager, &self.apiserver, &self.etcd] {
            if let Some(status) = p.exited() {
                return Err(NotAlive::Exited { name: p.name.to_string(), status: status.to_string(), tail: p.tail(20) });
            }
        }
        Ok(())
    }
}

macro_rules! phase {
    ($d:expr, $log:expr, $name:expr, $body:expr) => {{
        $d.section($name);
        $log.begin($name);
        let r: Result<_, PhaseError> = async { $body }.await;
        $log.end();
        r?
    }};
}

fn io(phase: &str, what: &str) -> impl Fn(std::io::Error) -> PhaseError {
    let (phase, what) = (phase.to_string(), what.to_string());
    move |e| PhaseError::new(&phase, format!("{what}: {e}"))
}

/// A loopback port free now, chosen below the kernel's ephemeral range. etcd, kube-apiserver
/// and the operator bind their own sockets without `SO_REUSEPORT`, so they cannot be handed a
/// held port (envoy/ports.rs): the port is released when chosen and bound by the process
/// moments later. A port from `bind(port 0)` is an ephemeral one, which every outgoing
/// connection on the machine may take as its local port in between: CI saw kube-apiserver fail
/// with `bind: address already in use` while another plane started beside it. The kernel never
/// hands out a port below the ephemeral range on its own, so only another explicit choice can
/// take one of these, and the start-up retries on new ports cover that.
fn free_port(phase: &str) -> Result<u16, PhaseError> {
    let below = ephemeral_start();
    let mut seed = [0u8; 64];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut seed)
        .map_err(|_| PhaseError::new(phase, "finding a free local port: the system random source failed"))?;
    for pair in seed.chunks(2) {
        let port = fixed_port_candidate(u16::from_le_bytes([pair[0], pair[1]]), below);
        if std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(PhaseError::new(phase, format!("finding a free local port: 32 random ports between {FIXED_PORTS_FROM} and {below} were all taken")))
}

/// The lowest port layout-gate chooses for a control-plane process: above the well-known and
/// commonly configured ones.
const FIXED_PORTS_FROM: u16 = 10_000;

/// Maps a random number onto `FIXED_PORTS_FROM..below`.
fn fixed_port_candidate(random: u16, below: u16) -> u16 {
    let span = below.saturating_sub(FIXED_PORTS_FROM).max(1);
    FIXED_PORTS_FROM + random % span
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`); Linux's
/// default, 32768, when it cannot be read or leaves no room below it.
fn ephemeral_start() -> u16 {
    const DEFAULT: u16 = 32_768;
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u16>().ok()))
        .filter(|&lo| lo > FIXED_PORTS_FROM + 1_000)
        .unwrap_or(DEFAULT)
}

/// Waits until `addr` accepts a TCP connection while `proc` runs.
async fn wait_port(proc: &Proc, addr: SocketAddr, wait: Wait, phase: &str) -> Result<(), PhaseError> {
    let deadline = Instant::now() + wait.limit;
    loop {
        if let Some(status) = proc.exited() {
            return Err(
                PhaseError::new(phase, format!("{} exited ({status}) before listening on {addr}", proc.name)).with_state(proc.tail(25))
            );
        }
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(PhaseError::new(
                phase,
                format!("{} not listening on {addr} within {} ({})", proc.name, human(wait.limit), wait.var),
            )
            .with_state(proc.tail(25)));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Brings the control plane up, phase by phase, through the live driver `d` (connected to the
/// new API server on return).
pub async fn bring_up(d: &mut LiveDriver, plan: &Plan<'_>, log: &mut PhaseLog) -> Result<ControlPlane, PhaseError> {
    let t = &plan.timeouts;
    let b = plan.binaries;
    // Owned by this process: removed on drop and on a handled signal, swept by the next run
    // after a SIGKILL (scratch.rs).
    let dir = crate::scratch::Scratch::labelled(crate::scratch::OPERATOR, &plan.pin.version.to_string())
        .map_err(io("start etcd and kube-apiserver", "creating the run folder"))?;
    let keeper = Keeper::new().map_err(|e| PhaseError::new("start etcd and kube-apiserver", e.to_string()))?;

    // Helm needs nothing of the API server: the chart renders beside etcd and kube-apiserver
    // starting, and its phase collects the result (what it still had to wait for).
    let mut chart = None;
    let (_pki, etcd, apiserver, controller_manager, kube) = phase!(d, log, "start etcd and kube-apiserver", {
        const P: &str = "start etcd and kube-apiserver";
        let call = render_call(plan, dir.path())?;
        d.note(&format!("rendering Cilium's chart meanwhile: $ {call}"));
        let (api, rendered) = tokio::join!(start_api(d, plan, dir.path(), &keeper), crate::lanes::cluster::live::process::run(&call));
        chart = Some(rendered);
        api.map_err(|e| e.in_phase(P))
    });

    let rendered = phase!(d, log, "render Cilium's chart", {
        const P: &str = "render Cilium's chart";
        let rendered = chart.take().ok_or_else(|| PhaseError::new(P, "internal: the render did not run"))?;
        let text = rendered.map_err(|e| PhaseError::new(P, e.to_string()))?;
        chart::parse(&text, NODE_NAME).map_err(|e| PhaseError::new(P, e.to_string()))
    });

    let module = b
        .operator
        .build
        .chart_dir
        .as_deref()
        .ok_or_else(|| "the operator's build.json names no chart folder".to_string())
        .and_then(|d| cilium_crds::module_root(d).map_err(|e| e.to_string()));
    let preinstall = match &module {
        Ok(m) => cilium_crds::plan(m, &rendered),
        Err(e) => cilium_crds::Preinstall::LeftToOperator(e.clone()),
    };

    phase!(d, log, "install Gateway API and Cilium CRDs", {
        const P: &str = "install Gateway API and Cilium CRDs";
        let crd_dir = b.gateway_api.crd_dir.clone().unwrap_or_default().join(&plan.pin.gateway_api.channel);
        d.note(&format!(
            "Gateway API {} {} channel from {} (module {} {})",
            plan.pin.gateway_api.version,
            plan.pin.gateway_api.channel,
            crd_dir.display(),
            b.gateway_api.module,
            b.gateway_api.module_sum
        ));
        let mut objects = crd_objects(&crd_dir).map_err(|e| PhaseError::new(P, e.to_string()))?;
        match &preinstall {
            cilium_crds::Preinstall::Objects { objects: cilium, names, label } => {
                d.note(&format!(
                    "Cilium's {} CRDs its operator registers for this config, from {} as it embeds them, labelled {}={} ({}): {}",
                    names.len(),
                    module.as_deref().map(|m| m.display().to_string()).unwrap_or_default(),
                    label.key,
                    label.value,
                    cilium_crds::LABEL_SOURCE,
                    names.join(", ")
                ));
                objects.extend(cilium.iter().cloned());
            }
            cilium_crds::Preinstall::LeftToOperator(why) => d.note(&format!("Cilium's CRDs: left to its operator to create ({why})")),
        }
        let names: Vec<String> = objects
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string))
            .collect();
        // Every CRD created at once (as the operator creates its own: POST), then one wait for
        // all of them Established.
        d.create_concurrently(&objects, None).await.map_err(|e| PhaseError::step(P, e))?;
        install::crds_established(d, P, "every Gateway API and Cilium CRD Established", names, t).await
    });

    let ((operator, health), crds_line) = phase!(d, log, "start cilium-operator", {
        const P: &str = "start cilium-operator";
        let applied = rendered.applied();
        d.note(&format!("applying from the chart: {}", applied.iter().map(super::chart::object_name).collect::<Vec<_>>().join(", ")));
        d.apply(&applied, Some("kube-system")).await.map_err(|e| PhaseError::step(P, e))?;
        let started = start_operator(plan, dir.path(), &keeper, &rendered)?;
        wait_healthy(&started.0, started.1, t.operator_ready, P).await?;
        install::gatewayclass_accepted(d, P, t).await.map_err(|e| e.with_state(started.0.tail(25)))?;
        // Its CRD registration (the start hook apis.createCRDs) ends before its Gateway
        // controllers start: by now its log says what it did with each of Cilium's CRDs.
        let text = super::procs::log_head(&started.0.log, 16 << 20);
        let line = cilium_crds::check(preinstall.names(), &cilium_crds::read_log(&text))
            .map_err(|e| PhaseError::new(P, e.to_string()).with_state(started.0.tail(25)))?;
        d.note(&format!("Cilium's CRDs: {line}"));
        Ok((started, line))
    });

    let block = phase!(d, log, "LB IPAM pool and L2 policy", {
        const P: &str = "LB IPAM pool and L2 policy";
        let lease = PoolLease::take().map_err(|e| PhaseError::new(P, e))?;
        let block = lease.block;
        d.note(&format!(
            "LB IPAM block {block}: gives each Gateway an address, as on kind; this plane's alone on the machine while it lives"
        ));
        install::lb_pool(d, P, plan.files, &block, t).await.map_err(|e| e.with_state(operator.tail(25)))?;
        Ok((block, lease))
    });
    let (block, pool) = block;

    let secrets_namespace = rendered.config.get("gateway-api-secrets-namespace").cloned().unwrap_or_else(|| "cilium-secrets".into());
    let mut environment = BTreeMap::new();
    environment.insert(
        "cluster".to_string(),
        format!(
            "local control plane: etcd {}, kube-apiserver {}, no kubelet, no nodes",
            b.etcd.build.version, b.apiserver.build.module_version
        ),
    );
    environment.insert(
        "cilium_operator".into(),
        format!(
            "{} ({} built as cilium-operator-generic, tags {})",
            b.operator.build.source(),
            b.operator.build.module_folder,
            b.operator.build.tags
        ),
    );
    environment.insert("cilium_operator.binary_sha256".into(), b.operator.build.binary_sha256.clone());
    // A dependency built at another version than the tag requires is said in every run's
    // evidence, with why and what was proved at the tag (issue #24).
    if !b.operator.build.substitutions.is_empty() {
        environment.insert(SUBSTITUTIONS_KEY.into(), super::binaries::Substitution::lines(&b.operator.build.substitutions));
    }
    if let Some(c) = &b.operator.build.commit {
        environment.insert("cilium_commit".into(), c.clone());
    }
    environment.insert("kube_apiserver".into(), b.apiserver.build.source());
    environment.insert("etcd".into(), b.etcd.build.source());
    environment.insert("helm".into(), b.helm.build.source());
    environment.insert("go".into(), b.operator.build.go.clone());
    environment
        .insert("cilium_chart".into(), format!("cilium {} from {} install/kubernetes/cilium", plan.pin.chart, b.operator.build.source()));
    environment.insert("helm_values_sha256".into(), plan.files.values_digest());
    environment.insert("kube_controller_manager_controllers".into(), plan.controllers.flag().trim_start_matches("--controllers=").into());
    environment.insert("operator_config_sha256".into(), rendered.digest());
    environment.insert(
        "operator_overrides".into(),
        "--k8s-kubeconfig-path, --config-dir (a local folder holding cilium-config), --operator-api-serve-addr, --operator-prometheus-serve-addr and --gops-port (free loopback ports, so runs side by side do not collide)".into(),
    );
    environment.insert(
        "gateway_api_crds".into(),
        format!(
            "{} {} from {} config/crd/{}",
            plan.pin.gateway_api.version, plan.pin.gateway_api.channel, b.gateway_api.module, plan.pin.gateway_api.channel
        ),
    );
    environment.insert(
        "cilium_crds".into(),
        match &preinstall {
            cilium_crds::Preinstall::Objects { label, .. } => format!(
                "pre-installed before the operator started, from the module's pkg/k8s/apis/cilium.io/client/crds as the operator builds them (constructV1CRD), labelled {}={} ({}); {crds_line}",
                label.key, label.value, cilium_crds::LABEL_SOURCE
            ),
            cilium_crds::Preinstall::LeftToOperator(why) => format!("created by the operator ({why}); {crds_line}"),
        },
    );
    // Said for the emulated agent step; a run through Cilium's agent says it again (`said`).
    super::said::say_block(&mut environment, &block.to_string(), super::said::BlockServed::ByNothing);
    super::said::say_emulated_step(&mut environment);
    Ok(ControlPlane {
        operator,
        controller_manager,
        apiserver,
        etcd,
        _keeper: keeper,
        dir,
        _pool: pool,
        kube,
        environment,
        secrets_namespace,
        operator_health: health,
        cilium_crds: preinstall.names().to_vec(),
    })
}

impl PhaseError {
    fn in_phase(mut self, phase: &str) -> PhaseError {
        self.phase = phase.to_string();
        self
    }
}

/// etcd, then kube-apiserver on it, then the driver connected and `kube-system` present. Ports
/// are chosen free and may be taken between choosing and binding: a process that then exits is
/// started again on new ports (three times at most).
async fn start_api(
    d: &mut LiveDriver,
    plan: &Plan<'_>,
    dir: &Path,
    keeper: &Keeper,
) -> Result<(Pki, Proc, Proc, Proc, KubeTarget), PhaseError> {
    const P: &str = "start etcd and kube-apiserver";
    let t = &plan.timeouts;
    let b = plan.binaries;
    let pki_dir = dir.join("pki");
    std::fs::create_dir(&pki_dir).map_err(io(P, "creating the certificate folder"))?;
    let pki = pki::generate(&pki_dir, &plan.run_id).map_err(|e| PhaseError::new(P, e.to_string()))?;
    let mut last = None;
    for attempt in 1..=3 {
        let (client, peer, secure) = (free_port(P)?, free_port(P)?, free_port(P)?);
        let data = dir.join(format!("etcd-data-{attempt}"));
        let etcd_url = format!("https://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let s = |p: &Path| p.display().to_string();
        let etcd = keeper
            .start(ProcSpec {
                name: "etcd".into(),
                program: b.etcd.path.clone(),
                args: vec![
                    "--name=layout-gate".into(),
                    format!("--data-dir={}", s(&data)),
                    format!("--listen-client-urls={etcd_url}"),
                    format!("--advertise-client-urls={etcd_url}"),
                    format!("--listen-peer-urls={peer_url}"),
                    format!("--initial-advertise-peer-urls={peer_url}"),
                    format!("--initial-cluster=layout-gate={peer_url}"),
                    format!("--cert-file={}", s(&pki.etcd_server.0)),
                    format!("--key-file={}", s(&pki.etcd_server.1)),
                    format!("--trusted-ca-file={}", s(&pki.ca)),
                    "--client-cert-auth".into(),
                    // A throwaway store for one run: no fsync, so a loaded CI box does not
                    // stall writes (etcd's own test clusters do the same).
                    "--unsafe-no-fsync".into(),
                    "--log-level=warn".into(),
                ],
                env: Vec::new(),
                dir: dir.to_path_buf(),
            })
            .map_err(|e| PhaseError::new(P, e.to_string()))?;
        if let Err(e) = wait_port(&etcd, SocketAddr::from(([127, 0, 0, 1], client)), t.control_plane_start, P).await {
            last = Some(e);
            continue;
        }
        let apiserver = keeper
            .start(ProcSpec {
                name: "kube-apiserver".into(),
                program: b.apiserver.path.clone(),
                args: vec![
                    format!("--etcd-servers={etcd_url}"),
                    format!("--etcd-cafile={}", s(&pki.ca)),
                    format!("--etcd-certfile={}", s(&pki.apiserver_etcd_client.0)),
                    format!("--etcd-keyfile={}", s(&pki.apiserver_etcd_client.1)),
                    "--bind-address=127.0.0.1".into(),
                    "--advertise-address=127.0.0.1".into(),
                    format!("--secure-port={secure}"),
                    format!("--tls-cert-file={}", s(&pki.apiserver_serving.0)),
                    format!("--tls-private-key-file={}", s(&pki.apiserver_serving.1)),
                    format!("--client-ca-file={}", s(&pki.ca)),
                    "--service-account-issuer=https://kubernetes.default.svc".into(),
                    format!("--service-account-key-file={}", s(&pki.service_account_public)),
                    format!("--service-account-signing-key-file={}", s(&pki.service_account_key)),
                    "--service-cluster-ip-range=10.96.0.0/16".into(),
                    // RBAC, so the operator runs with exactly the permissions its chart gives it.
                    "--authorization-mode=RBAC".into(),
                    format!("--cert-dir={}", s(&dir.join("apiserver-certs"))),
                    "--profiling=false".into(),
                    "--v=1".into(),
                ],
                env: Vec::new(),
                dir: dir.to_path_buf(),
            })
            .map_err(|e| PhaseError::new(P, e.to_string()))?;
        if let Err(e) = wait_port(&apiserver, SocketAddr::from(([127, 0, 0, 1], secure)), t.control_plane_start, P).await {
            last = Some(e);
            continue;
        }
        let server = format!("https://127.0.0.1:{secure}");
        let admin = dir.join("admin.kubeconfig");
        write_private(&admin, &pki::kubeconfig(&server, &pki.ca, &pki.admin, CONTEXT)).map_err(io(P, "writing the kubeconfig"))?;
        write_private(&dir.join("operator.kubeconfig"), &pki::kubeconfig(&server, &pki.ca, &pki.operator, CONTEXT))
            .map_err(io(P, "writing the operator's kubeconfig"))?;
        let kube = KubeTarget { kubeconfig: Some(admin), context: CONTEXT.into() };
        // The API server may exit after its port answered: a flag it refuses, or its port taken
        // between choosing and binding (then what answered was another process). Connecting
        // gives up as soon as the process is gone, and the start is tried again on new ports.
        tokio::select! {
            r = d.connect(&kube, t.control_plane_start) => r.map_err(|e| PhaseError::step(P, e).with_state(apiserver.tail(25)))?,
            status = exited(&apiserver) => {
                last = Some(PhaseError::new(P, format!("kube-apiserver exited ({status})")).with_state(apiserver.tail(25)));
                continue;
            }
        }
        // The API server answers before its bootstrap controllers made the system namespaces.
        let deadline = Instant::now() + t.control_plane_start.limit;
        let ns = ObjRef::new("v1", "Namespace", None, "kube-system");
        loop {
            if d.get(&ns).await.map_err(|e| PhaseError::step(P, e))?.is_some() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(PhaseError::new(P, format!("namespace kube-system not created within {}", human(t.control_plane_start.limit)))
                    .with_state(apiserver.tail(25)));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // kube-controller-manager gives the API server 10 s to answer `/healthz` with every
        // post-start hook done and exits otherwise (`controllermanager.go`: "failed to wait for
        // apiserver being healthy"); on a loaded machine the `rbac/bootstrap-roles` hook took
        // longer (a 1.19.6 differential, 2026-12-06), so it starts only once `/healthz` is 200.
        let client = d.client().ok_or_else(|| PhaseError::new(P, "not connected to the API server"))?;
        let client = &client;
        // `send`, not `request_text`: the client logs every answer that is not 2xx as a
        // warning with its whole body, and a starting API server answers 500 many times.
        let healthz = move || async move {
            let request = http::Request::get("/healthz?verbose").body(kube::client::Body::empty()).map_err(|e| e.to_string())?;
            match tokio::time::timeout(Duration::from_secs(5), client.send(request)).await {
                Err(_) => Err("no answer within 5s".to_string()),
                Ok(Err(e)) => Err(e.to_string()),
                Ok(Ok(r)) if r.status().is_success() => Ok(()),
                Ok(Ok(r)) => {
                    // The checks that failed, from the verbose body (`[-]name failed: ...`).
                    let status = r.status();
                    let body = http_body_util::BodyExt::collect(r.into_body()).await.map(|b| b.to_bytes()).unwrap_or_default();
                    let failed: Vec<&str> = std::str::from_utf8(&body).unwrap_or("").lines().filter(|l| l.starts_with("[-]")).collect();
                    Err(format!(
                        "answered {status}: {}",
                        if failed.is_empty() { "no failed check named".to_string() } else { failed.join("; ") }
                    ))
                }
            }
        };
        until_ok(healthz, t.control_plane_start, "kube-apiserver's /healthz")
            .await
            .map_err(|e| PhaseError::new(P, e).with_state(apiserver.tail(25)))?;
        // The namespace controller finishes a deleted case namespace, the garbage collector what
        // a Gateway owns: without them a deleted namespace stays Terminating.
        let kcm_config = dir.join("controller-manager.kubeconfig");
        write_private(&kcm_config, &pki::kubeconfig(&server, &pki.ca, &pki.controller_manager, CONTEXT))
            .map_err(io(P, "writing the controller manager's kubeconfig"))?;
        let controller_manager = keeper
            .start(ProcSpec {
                name: "kube-controller-manager".into(),
                program: b.controller_manager.path.clone(),
                args: vec![
                    format!("--kubeconfig={}", s(&kcm_config)),
                    plan.controllers.flag().into(),
                    "--use-service-account-credentials=false".into(),
                    "--leader-elect=false".into(),
                    "--secure-port=0".into(),
                    "--v=1".into(),
                ],
                env: Vec::new(),
                dir: dir.to_path_buf(),
            })
            .map_err(|e| PhaseError::new(P, e.to_string()))?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(status) = controller_manager.exited() {
            return Err(PhaseError::new(P, format!("kube-controller-manager exited ({status})")).with_state(controller_manager.tail(25)));
        }
        return Ok((pki, etcd, apiserver, controller_manager, kube));
    }
    Err(last.unwrap_or_else(|| PhaseError::new(P, "could not start")))
}

/// Calls `check` until it answers `Ok`, every 250 ms, for at most `wait`: the error names
/// `what`, the wait's variable and the last answer.
async fn until_ok<F, Fut>(mut check: F, wait: Wait, what: &str) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + wait.limit;
    loop {
        let last = match check().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(format!("{what} not healthy within {} ({}): {last}", human(wait.limit), wait.var));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Resolves once `proc` has exited, with its status.
async fn exited(proc: &Proc) -> String {
    loop {
        if let Some(s) = proc.exited() {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}

/// Why the Gateway API CRD bundle could not be read: the folder or file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{}: {source}", .dir.display())]
    Folder { dir: PathBuf, source: std::io::Error },
    #[error("{}: no CRD files", .0.display())]
    Empty(PathBuf),
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("{}: not valid YAML: {source}", .file.display())]
    Yaml { file: PathBuf, source: Box<serde_saphyr::Error> },
}

/// The Gateway API CRD bundle of a channel folder of the module: every `*.yaml` but the
/// kustomization, in name order (the order of the release's install file).
pub fn crd_objects(dir: &Path) -> Result<Vec<Value>, BundleError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| BundleError::Folder { dir: dir.to_path_buf(), source })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(BundleError::Empty(dir.to_path_buf()));
    }
    let mut out = Vec::new();
    for f in files {
        let text = crate::input::read_text(&f, crate::input::MANIFEST)?;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).map_err(|e| BundleError::Yaml { file: f.clone(), source: Box::new(e) })?;
        out.extend(docs.into_iter().filter(|d| d.is_object()));
    }
    Ok(out)
}

/// The `helm template` call rendering the pinned chart with the kind lane's values.
fn render_call(plan: &Plan<'_>, dir: &Path) -> Result<tools::ToolCall, PhaseError> {
    const P: &str = "render Cilium's chart";
    let b = plan.binaries;
    let chart_dir =
        b.operator.build.chart_dir.clone().ok_or_else(|| PhaseError::new(P, "the operator's build.json names no chart folder"))?;
    let values = dir.join("cilium-values.yaml");
    write_private(&values, &plan.files.values_yaml).map_err(io(P, "writing the Helm values"))?;
    let home = dir.join("helm-home");
    std::fs::create_dir(&home).map_err(io(P, "creating Helm's home"))?;
    let kube_version = plan.pin.node.image().kubernetes().to_string();
    Ok(tools::helm_template(&b.helm.path, chart::helm_args(&chart_dir, &values, &kube_version), &home, plan.timeouts.chart_render))
}

/// Starts cilium-operator: its config folder is the rendered `cilium-config`, its arguments and
/// environment the Deployment's, plus where the API server is and loopback ports of its own.
fn start_operator(plan: &Plan<'_>, dir: &Path, keeper: &Keeper, rendered: &Rendered) -> Result<(Proc, SocketAddr), PhaseError> {
    const P: &str = "start cilium-operator";
    let config_dir = dir.join("operator-config");
    std::fs::create_dir(&config_dir).map_err(io(P, "creating the operator's config folder"))?;
    for (k, v) in &rendered.config {
        std::fs::write(config_dir.join(k), v).map_err(io(P, "writing the operator's config folder"))?;
    }
    let health = SocketAddr::from(([127, 0, 0, 1], free_port(P)?));
    let gops = free_port(P)?;
    let mut args: Vec<String> = rendered
        .args
        .iter()
        .map(|a| if a.starts_with("--config-dir=") { format!("--config-dir={}", config_dir.display()) } else { a.clone() })
        .collect();
    args.push(format!("--k8s-kubeconfig-path={}", dir.join("operator.kubeconfig").display()));
    args.push(format!("--operator-api-serve-addr={health}"));
    args.push(format!("--gops-port={gops}"));
    // Its inspection shell listens on /var/run/cilium/shell.sock by default, which a second
    // operator running beside it would take over (`--shell-sock-path`, cilium@v1.19.6
    // Documentation/cmdref/cilium-operator-generic.md); each run keeps its own.
    args.push(format!("--shell-sock-path={}", dir.join("shell.sock").display()));
    // The chart serves the operator's metrics on :9963 of every interface; two runs side by side
    // would collide there.
    if rendered.config.get("enable-metrics").is_some_and(|v| v == "true") {
        args.push(format!("--operator-prometheus-serve-addr=127.0.0.1:{}", free_port(P)?));
    }
    let proc = keeper
        .start(ProcSpec {
            name: "cilium-operator".into(),
            program: plan.binaries.operator.path.clone(),
            args,
            env: rendered.env.clone(),
            dir: dir.to_path_buf(),
        })
        .map_err(|e| PhaseError::new(P, e.to_string()))?;
    Ok((proc, health))
}

/// Waits until the operator answers `GET /healthz` with 200.
async fn wait_healthy(proc: &Proc, addr: SocketAddr, wait: Wait, phase: &str) -> Result<(), PhaseError> {
    let deadline = Instant::now() + wait.limit;
    let client = crate::envoy::AdminClient::new(addr).with_timeout(Duration::from_secs(2));
    loop {
        if let Some(status) = proc.exited() {
            return Err(PhaseError::new(phase, format!("cilium-operator exited ({status})")).with_state(proc.tail(30)));
        }
        let last = match client.get("/healthz").await {
            Ok(r) if r.status == 200 => return Ok(()),
            Ok(r) => format!("GET http://{addr}/healthz answered {}: {}", r.status, r.text().trim()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(PhaseError::new(phase, format!("cilium-operator not healthy within {} ({}): {last}", human(wait.limit), wait.var))
                .with_state(proc.tail(30)));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    /// CI failed when kube-apiserver's port, chosen by `bind(port 0)`, was an ephemeral port
    /// another connection took before the API server bound it. Chosen ports stay below the
    /// kernel's ephemeral range, where no connection's local port comes from.
    #[test]
    fn chosen_ports_are_never_ephemeral_ones() {
        let below = super::ephemeral_start();
        for _ in 0..200 {
            let port = super::free_port("test").expect("a free port");
            assert!((super::FIXED_PORTS_FROM..below).contains(&port), "{port} is not below the ephemeral range starting at {below}");
        }
        assert_eq!(super::fixed_port_candidate(0, 32_768), 10_000);
        assert_eq!(super::fixed_port_candidate(u16::MAX, 32_768), 10_000 + u16::MAX % 22_768);
        assert_eq!(super::fixed_port_candidate(7, 10_000), 10_000, "no room below the range: still a valid port");
    }

    use super::*;

    /// kube-controller-manager exited when the API server's `/healthz` failed for 10 s after
    /// start (its rbac bootstrap hook still running): the plane waits for it to pass first, and
    /// a wait that runs out says what failed last.
    #[tokio::test]
    async fn the_controller_manager_waits_for_a_healthy_api_server() {
        let calls = std::cell::Cell::new(0);
        let check = || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 3 { Err("[-]poststarthook/rbac/bootstrap-roles failed".to_string()) } else { Ok(()) } }
        };
        let wait = Wait { name: "control plane start", limit: Duration::from_secs(60), var: "LAYOUT_GATE_CONTROL_PLANE_TIMEOUT" };
        until_ok(check, wait, "kube-apiserver's /healthz").await.expect("healthy on the third answer");
        assert_eq!(calls.get(), 3, "it asked until the answer was healthy");

        let never = || async { Err::<(), _>("[-]poststarthook/rbac/bootstrap-roles failed".to_string()) };
        let wait = Wait { name: "control plane start", limit: Duration::ZERO, var: "LAYOUT_GATE_CONTROL_PLANE_TIMEOUT" };
        let e = until_ok(never, wait, "kube-apiserver's /healthz").await.unwrap_err();
        assert!(
            e.contains("kube-apiserver's /healthz not healthy")
                && e.contains("rbac/bootstrap-roles")
                && e.contains("LAYOUT_GATE_CONTROL_PLANE_TIMEOUT"),
            "{e}"
        );
    }

    /// A Gateway's LB IPAM address is where `check --live` (and anyone reading the Gateway's
    /// status) sends probes: every address of the pool, its first and last included, must stay
    /// on this machine.
    #[test]
    fn every_address_the_pool_hands_out_stays_on_this_machine() {
        let block: crate::lanes::cluster::subnet::PoolBlock = POOL_BLOCK.parse().unwrap();
        let first = u32::from(block.addr);
        let last = first | (u32::MAX >> block.prefix);
        for ip in [first, first + 1, first + 200, last] {
            let addr = std::net::SocketAddr::new(std::net::Ipv4Addr::from(ip).into(), 443);
            assert_eq!(crate::observe::probe::reach::check(addr), Ok(()), "{addr} of {POOL_BLOCK}");
        }
    }

    /// Two planes living at once on one machine hand out different addresses: each holds a
    /// block of its own until it ends, and every block stays on this machine.
    #[test]
    fn each_living_plane_holds_an_lb_block_of_its_own() {
        let root = tempfile::tempdir().unwrap();
        let a = PoolLease::take_in(root.path()).unwrap();
        let b = PoolLease::take_in(root.path()).unwrap();
        assert_ne!(a.block, b.block);
        assert_eq!(a.block.to_string(), POOL_BLOCKS[0]);
        let first_b = b.block;
        drop(a);
        let again = PoolLease::take_in(root.path()).unwrap();
        assert_eq!(again.block.to_string(), POOL_BLOCKS[0], "a plane's block is free once it ends");
        assert_ne!(again.block, first_b);
        let mut all = vec![again, b];
        while all.len() < POOL_BLOCKS.len() {
            all.push(PoolLease::take_in(root.path()).unwrap());
        }
        let e = PoolLease::take_in(root.path()).unwrap_err();
        assert!(e.contains("held by a living control plane"), "{e}");
        assert!(in_pool_blocks("127.18.0.0:443") && in_pool_blocks("127.33.255.255") && in_pool_blocks("127.23.4.5:80"));
        assert!(!in_pool_blocks("127.34.0.1:443") && !in_pool_blocks("127.0.0.1") && !in_pool_blocks("[::1]:443") && !in_pool_blocks("x"));
        for b in POOL_BLOCKS {
            let block: PoolBlock = b.parse().unwrap();
            let last = u32::from(block.addr) | (u32::MAX >> block.prefix);
            let addr = std::net::SocketAddr::new(std::net::Ipv4Addr::from(last).into(), 443);
            assert_eq!(crate::observe::probe::reach::check(addr), Ok(()), "{addr} of {b}");
        }
    }

    #[test]
    fn a_crd_bundle_that_cannot_be_read_names_its_folder_or_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kustomization.yaml"), "resources: []\n").unwrap();
        let e = crd_objects(dir.path()).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no CRD files", dir.path().display()));
        let bad = dir.path().join("gateways.yaml");
        std::fs::write(&bad, "kind: [unclosed").unwrap();
        let e = crd_objects(dir.path()).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: not valid YAML: ", bad.display())), "{e}");
        assert!(std::error::Error::source(&e).is_some(), "{e:?}");
        let e = crd_objects(&dir.path().join("absent")).unwrap_err();
        assert!(matches!(&e, BundleError::Folder { source, .. } if source.kind() == std::io::ErrorKind::NotFound), "{e:?}");
    }
}
