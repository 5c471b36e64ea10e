//! Cilium's own agent control plane as the operator lane's agent step (issue #37).
//!
//! Per control plane, one agent (`agent-plane`: daemon/cmd.ControlPlane composed on Cilium's
//! fake datapath in DryMode as cilium@v1.19.6:test/controlplane/suite/agent.go composes it; its
//! differences from the suite are in its build.json), one bridge (`xds-bridge`: reads the agent's
//! xDS as cilium-envoy does, strips only Cilium's own extensions and binds each listener where
//! the agent's redirect sends the Gateway's Service) and one upstream Envoy on the bridge. All
//! three are up before any case's CiliumEnvoyConfig is written, so every update the agent makes
//! is answered by Envoy's ACK or NACK, and the agent's own accounting (completion, revert,
//! retry) runs: with no Envoy connected the agent completes an update at once.
//!
//! What is Cilium's here: the operator, and of the agent its CEC parsing and validation, filter
//! injection, proxy ports, redirects, SDS, EDS, ACK/NACK handling and revert. What is not:
//! DryMode's fake datapath (no BPF, no TPROXY), the bridge's address rewrite, and upstream Envoy
//! 1.40 in place of cilium-envoy, without Cilium's filters.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::binaries::AgentBinaries;
use super::procs::{Keeper, Proc, ProcSpec};
use crate::envoy::{AdminSpec, Bootstrap, CiliumXdsMode, EnvoyProcess, StartOptions};
use crate::evidence::recording::AgentCec;
use crate::lanes::cluster::driver::Driver;
use crate::lanes::cluster::failure::PhaseError;

/// How long the agent may take to start its hive and answer on its dump socket (it starts in
/// about 0.2-0.6 s here; its CRD sync waits for the API server).
pub const AGENT_READY: Duration = Duration::from_secs(60);

/// The initial fetch timeout of Envoy's xDS config sources (`Bootstrap::cilium_xds`, as
/// cilium-envoy's bootstrap sets it).
const INITIAL_FETCH: Duration = Duration::from_secs(30);

/// How long the bridge may take to serve its socket.
const BRIDGE_READY: Duration = Duration::from_secs(10);

/// A unix socket's path must be shorter than this (`sun_path`, 108 bytes on Linux).
const SOCKET_PATH_MAX: usize = 108;

/// The largest answer read from the agent's dump socket.
const MAX_DUMP_BYTES: u64 = 64 * 1024 * 1024;

/// The pod CIDR of the agent's Node (the agent's kubernetes IPAM reads it; without one it stops
/// in pkg/ipam/allocator.go) and the Node's InternalIP. Neither is bound or sent to: DryMode
/// has no datapath.
const NODE_POD_CIDR: &str = "10.244.250.0/24";
const NODE_INTERNAL_IP: &str = "10.244.250.1";

/// Why the real agent step could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentStartError {
    #[error(
        "Cilium's agent control plane needs root here (a private mount namespace with its own bpffs, and Envoy listening on the Gateway's ports 80/443); run as root, or use the emulated agent step (LAYOUT_GATE_AGENT_STEP=emulated)"
    )]
    NotRoot,
    #[error("{0}")]
    Other(String),
}

/// The agent, the bridge and Envoy of one control plane. Dropped in reverse order of start:
/// Envoy, the bridge, the agent, their folder.
pub struct RealAgent {
    envoy: EnvoyProcess,
    _bridge: Proc,
    agent: Proc,
    _keeper: Keeper,
    dump: PathBuf,
    bridge_log: PathBuf,
    /// The agent's Node.
    pub node: String,
    /// How long the agent's hive took to start (its own `start_ms`).
    pub start_ms: u64,
    /// The initial fetch timeout of the agent's xDS config source (its `proxy-initial-fetch-timeout`).
    pub initial_fetch: Duration,
    /// Every flag given beyond the chart's ConfigMap, with why ([`overrides`]).
    overrides: Vec<(String, String)>,
    /// The agent's xDS mode, the chart's, as the evidence says it ([`xds_mode`]).
    mode_said: String,
    pub binaries: AgentBinaries,
    work: crate::scratch::Scratch,
    /// The plane's Gateway addresses, held until everything above has stopped ([`take_addresses`]).
    _addresses: super::lock::HolderLock,
}

/// How long a run waits for another run's Cilium agent on the same control plane to end.
pub const ADDRESSES_WAIT: Duration = Duration::from_secs(30 * 60);

/// Takes the control plane's Gateway addresses for one agent: every agent serves every CEC of
/// its plane, and the bridge binds each Gateway's listeners at its LB IPAM address, so two
/// agents on one plane (two runs on one warm plane) would bind the same addresses. (Planes
/// living at once each hold an LB IPAM block of their own: [`super::control_plane::PoolLease`].)
/// The second waits, saying so, at most [`ADDRESSES_WAIT`]; the kernel lets go when the holder
/// ends, however it ends. The lock is a folder beside the plane's kubeconfig.
async fn take_addresses<D: Driver>(d: &mut D, kubeconfig: &Path) -> Result<super::lock::HolderLock, AgentStartError> {
    let dir = kubeconfig.parent().unwrap_or(Path::new(".")).join("agent-step");
    let fail =
        |e: String| AgentStartError::Other(format!("Cilium's agent control plane: the Gateway addresses' lock {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
    let started = Instant::now();
    let mut said = false;
    loop {
        if let Some(lock) = super::lock::HolderLock::try_take(&dir).map_err(fail)? {
            return Ok(lock);
        }
        if started.elapsed() >= ADDRESSES_WAIT {
            return Err(fail(format!("another run's Cilium agent on this control plane held it for {ADDRESSES_WAIT:?}")));
        }
        if !said {
            d.note("agent step: another run's Cilium agent serves this control plane's Gateways; waiting for it to end");
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The folder the control plane's kubeconfig is in holds the `cilium-config` the chart rendered
/// for the lane (`operator-config`), which the agent reads as cilium-agent reads its
/// `--config-dir`.
pub fn config_dir(kubeconfig: &Path) -> PathBuf {
    kubeconfig.parent().unwrap_or(Path::new(".")).join("operator-config")
}

/// The flags given beyond the chart's ConfigMap, each with why (recorded in the evidence).
pub const OVERRIDES: &[(&str, &str)] = &[
    ("--disable-envoy-version-check=true", "upstream Envoy 1.40 stands in for cilium-envoy"),
    ("--envoy-policy-restore-timeout=1s", "restore off hits a nil dereference in daemon/infraendpoints/ingress_endpoint.go"),
    ("--enable-health-checking=false", "no node-to-node health probes: nothing may leave the machine"),
    ("--enable-endpoint-health-checking=false", "as above"),
    ("--enable-hubble=false", "no Hubble server: nothing it observes in DryMode"),
];

/// Every flag given beyond the chart's ConfigMap, each with why: [`OVERRIDES`]. The agent's
/// `envoy-xds-mode` is not among them: it runs in the mode the chart rendered ([`xds_mode`]),
/// ADS from 1.20, which the bridge relays as it relays split mode.
pub fn overrides() -> Vec<(String, String)> {
    OVERRIDES.iter().map(|(f, why)| (f.to_string(), why.to_string())).collect()
}

/// The agent's xDS mode as the chart's `cilium-config` in `config_dir` renders it
/// (`envoy-xds-mode`; from 1.20 `ads`, cilium@v1.20.2:install/kubernetes/cilium/values.yaml
/// `envoy.xdsMode`, for which the agent serves only the aggregated stream, pkg/envoy/grpcnew.go;
/// absent before 1.20, where cilium-agent serves split). With what the evidence says of it.
pub fn xds_mode(config_dir: &Path) -> Result<(CiliumXdsMode, String), String> {
    let path = config_dir.join("envoy-xds-mode");
    let value = match std::fs::read_to_string(&path) {
        Ok(v) => Some(v),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mode = CiliumXdsMode::from_config(value.as_deref()).map_err(|e| format!("{}: {e}", path.display()))?;
    let said = match (&value, mode) {
        (None, _) => "split: the chart's cilium-config names no envoy-xds-mode, which cilium-agent serves as split (one gRPC stream per type, pkg/envoy/xds/); Envoy's bootstrap asks per type".to_string(),
        (Some(v), CiliumXdsMode::Split) => format!("split: the chart's cilium-config says envoy-xds-mode {:?} (one gRPC stream per type, pkg/envoy/xds/); Envoy's bootstrap asks per type", v.trim()),
        (Some(v), CiliumXdsMode::Ads) => format!(
            "ads: the chart's cilium-config says envoy-xds-mode {:?}, run as rendered (one Aggregated Discovery Service stream, pkg/envoy/xds_server_ads.go: a NACK reverts what the update changed, buildRevert); Envoy's bootstrap asks over ads_config and the bridge relays the one stream",
            v.trim()
        ),
    };
    Ok((mode, said))
}

impl RealAgent {
    /// Starts the agent on the control plane `kubeconfig` reaches (creating its Node first),
    /// then the bridge, then Envoy; returns once all three serve.
    pub async fn start<D: Driver>(
        d: &mut D,
        kubeconfig: &Path,
        binaries: AgentBinaries,
        label: &str,
        envoy_ready: Duration,
    ) -> Result<RealAgent, AgentStartError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(AgentStartError::NotRoot);
        }
        let fail = |what: &str, e: &dyn std::fmt::Display| AgentStartError::Other(format!("Cilium's agent control plane: {what}: {e}"));
        let addresses = take_addresses(d, kubeconfig).await?;
        // A short folder name: the agent's xDS socket is four levels under it, and a unix
        // socket's path must fit in 108 bytes.
        let _ = label;
        let work = crate::scratch::Scratch::labelled(crate::scratch::OPERATOR, "agent").map_err(|e| fail("its work folder", &e))?;
        let state = work.path().join("state");
        let xds = state.join("envoy/sockets/xds.sock");
        if xds.as_os_str().len() >= SOCKET_PATH_MAX {
            return Err(fail(
                "its xDS socket",
                &format!(
                    "{} is {} bytes, over the {SOCKET_PATH_MAX}-byte limit of a unix socket's path: set TMPDIR to a shorter folder",
                    xds.display(),
                    xds.as_os_str().len()
                ),
            ));
        }
        std::fs::create_dir_all(&state).map_err(|e| fail("its state folder", &e))?;
        let initial_fetch = initial_fetch_timeout(&config_dir(kubeconfig)).map_err(|e| fail("its configuration", &e))?;
        let overrides = overrides();
        let (mode, mode_said) = xds_mode(&config_dir(kubeconfig)).map_err(|e| fail("its configuration", &e))?;
        let node = format!("layout-gate-agent-{}", std::process::id());
        let node_obj = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}},
            "spec": {"podCIDR": NODE_POD_CIDR, "podCIDRs": [NODE_POD_CIDR]},
            "status": {"addresses": [{"type": "InternalIP", "address": NODE_INTERNAL_IP}, {"type": "Hostname", "address": node}]}
        });
        d.apply(&[node_obj], None).await.map_err(|e| fail(&format!("creating its Node {node}"), &e))?;

        let unshare = crate::child::which("unshare").ok_or_else(|| {
            AgentStartError::Other(
                "Cilium's agent control plane: `unshare` is not on PATH (util-linux: `apt-get install util-linux`)".into(),
            )
        })?;
        let keeper = Keeper::new().map_err(|e| fail("its keeper thread", &e))?;
        let dump = work.path().join("dump.sock");
        let mut args: Vec<String> = vec![
            "--mount".into(),
            "--propagation".into(),
            "private".into(),
            "sh".into(),
            "-c".into(),
            // A bpffs of its own in a private mount namespace: the agent's maps are pinned there
            // and vanish with it; the machine's /sys/fs/bpf is untouched.
            r#"mount -t bpf bpf /sys/fs/bpf && exec "$0" "$@""#.into(),
            binaries.agent.path.display().to_string(),
            format!("--k8s-kubeconfig-path={}", kubeconfig.display()),
            format!("--config-dir={}", config_dir(kubeconfig).display()),
            format!("--plane-node-name={node}"),
            format!("--plane-state-dir={}", state.display()),
            format!("--plane-dump-socket={}", dump.display()),
        ];
        args.extend(overrides.iter().map(|(f, _)| f.clone()));
        let agent = keeper
            .start(ProcSpec { name: "cilium-agent".into(), program: unshare, args, env: Vec::new(), dir: work.path().to_path_buf() })
            .map_err(|e| fail("starting it", &e))?;
        let ready = wait_for_line(&agent, "\"event\":\"ready\"", AGENT_READY).await.map_err(|e| fail("its start", &e))?;
        let start_ms = serde_json::from_str::<Value>(&ready).ok().and_then(|v| v.get("start_ms").and_then(Value::as_u64)).unwrap_or(0);

        let bridge_sock = work.path().join("bridge.sock");
        let bridge_log = work.path().join("bridge.jsonl");
        let bridge = keeper
            .start(ProcSpec {
                name: "xds-bridge".into(),
                program: binaries.bridge.path.clone(),
                args: bridge_args(&xds, &bridge_sock, &bridge_log, &dump, mode),
                env: Vec::new(),
                dir: work.path().to_path_buf(),
            })
            .map_err(|e| fail("starting its xds-bridge", &e))?;
        wait_for_line(&bridge, "\"event\":\"ready\"", BRIDGE_READY).await.map_err(|e| {
            // A bridge built before it relayed ADS does not know --xds-mode.
            let hint = if mode == CiliumXdsMode::Ads {
                format!(
                    " (in ADS mode it needs a bridge that relays ADS: scripts/install-control-plane.sh --agent {} rebuilds it)",
                    binaries.bridge.build.version
                )
            } else {
                String::new()
            };
            fail("its xds-bridge", &format!("{e}{hint}"))
        })?;

        let cfg = work.path().join("envoy-bootstrap.json");
        Bootstrap::cilium_xds(AdminSpec::default(), &bridge_sock, mode).write(&cfg).map_err(|e| fail("writing Envoy's bootstrap", &e))?;
        let envoy = EnvoyProcess::start_async(
            &cfg,
            &work.path().join("envoy"),
            StartOptions { ready_timeout: envoy_start_limit(mode, envoy_ready), ..StartOptions::default() },
        )
        .await
        .map_err(|e| fail("the Envoy it serves", &e))?;
        Ok(RealAgent {
            envoy,
            _bridge: bridge,
            agent,
            _keeper: keeper,
            dump,
            bridge_log,
            node,
            start_ms,
            initial_fetch,
            overrides,
            mode_said,
            binaries,
            work,
            _addresses: addresses,
        })
    }

    pub fn envoy(&self) -> &EnvoyProcess {
        &self.envoy
    }

    /// How long Envoy may take to make a case's listeners active: the lane's own `envoy_ready`
    /// on top of the agent's initial fetch timeout. Every SDS and EDS source the agent gives
    /// Envoy is its `CiliumXDSConfigSource` (cilium@v1.19.6:pkg/envoy/xds_server.go, its
    /// `InitialFetchTimeout` set from `proxy-initial-fetch-timeout` in pkg/envoy/cell.go), so a
    /// listener whose Secret the agent never serves (a missing Secret) warms that long before
    /// Envoy activates it; a shorter wait probes a listener that is still warming (refused).
    pub fn listening_limit(&self, envoy_ready: Duration) -> Duration {
        listening_limit(self.initial_fetch, envoy_ready)
    }

    /// The bridge's log: every message both ways and every rewrite, as JSON lines.
    pub fn bridge_log(&self) -> &Path {
        &self.bridge_log
    }

    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// The agent's log tail, for a failed phase.
    pub fn log_tail(&self, n: usize) -> String {
        self.agent.tail(n)
    }

    /// `Some(status)` once the agent has exited.
    pub fn exited(&self) -> Option<String> {
        self.agent.exited()
    }

    /// The agent's read-only dump socket (`/binds`, `/redirects`, `/statedb/dump/<table>`).
    pub fn dump_socket(&self) -> &Path {
        &self.dump
    }

    /// One answer of the agent's dump socket (`/binds`, `/redirects`, `/statedb/dump/<table>`).
    pub async fn get(&self, path: &str) -> Result<Value, String> {
        dump_get(&self.dump, path).await
    }

    /// Waits until the agent has taken every CEC of `cecs` (as the API server holds them) and
    /// its update is answered by Envoy, or `limit` passes; see [`Reconciled`].
    pub async fn wait_reconciled(&self, cecs: &[Value], limit: Duration) -> Result<Reconciled, PhaseError> {
        const P: &str = "data path";
        let started = Instant::now();
        let pause = Duration::from_millis(50);
        let mut polls = 0u32;
        loop {
            polls += 1;
            let tables = self.tables().await.map_err(|e| PhaseError::new(P, format!("reading Cilium's agent: {e}")))?;
            let each: Vec<CecState> = cecs.iter().map(|c| cec_state(c, &tables)).collect();
            let settled = each.iter().all(settled);
            if settled || started.elapsed() >= limit {
                let listeners = tables
                    .cecs
                    .iter()
                    .filter(|h| {
                        let n = format!(
                            "{}/{}",
                            h.pointer("/Name/Namespace").and_then(Value::as_str).unwrap_or_default(),
                            h.pointer("/Name/Name").and_then(Value::as_str).unwrap_or_default()
                        );
                        each.iter().any(|s| s.name == n)
                    })
                    .flat_map(|h| h.get("Listeners").and_then(Value::as_array).cloned().unwrap_or_default())
                    .filter_map(|kv| Some((kv.get("k")?.as_str()?.to_string(), u16::try_from(kv.get("v")?.as_u64()?).ok()?)))
                    .collect();
                return Ok(Reconciled { cecs: each, listeners, settled, polls, waited: started.elapsed() });
            }
            if let Some(status) = self.exited() {
                return Err(PhaseError::new(P, format!("Cilium's agent control plane exited ({status}): {}", self.log_tail(40))));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Waits until the agent holds no CEC of a namespace other than `keep` (an earlier case's,
    /// deleted with its namespace) and Envoy has let go of its listeners, or `limit` passes.
    /// Returns the names still held at the end.
    pub async fn wait_others_gone(&self, keep: &str, limit: Duration) -> Result<Vec<String>, String> {
        self.wait_gone(|ns| ns != keep, limit).await
    }

    /// Waits until the agent holds no CEC (parsed, or its resources) of a namespace `held`
    /// says, or `limit` passes; the names still held at the end.
    pub async fn wait_gone(&self, held: impl Fn(&str) -> bool, limit: Duration) -> Result<Vec<String>, String> {
        let started = Instant::now();
        loop {
            let tables = self.tables().await?;
            let left: Vec<String> = tables
                .cecs
                .iter()
                .chain(tables.resources.iter().filter(|r| r.pointer("/Name/Origin").and_then(Value::as_str) == Some("cec")))
                .filter_map(|c| {
                    let ns = c.pointer("/Name/Namespace").and_then(Value::as_str)?;
                    let name = c.pointer("/Name/Name").and_then(Value::as_str)?;
                    held(ns).then(|| format!("{ns}/{name}"))
                })
                .collect();
            if left.is_empty() || started.elapsed() >= limit {
                return Ok(left);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn tables(&self) -> Result<Tables, String> {
        let cecs = self.get("/statedb/dump/ciliumenvoyconfigs").await?;
        let resources = self.get("/statedb/dump/envoy-resources").await?;
        let list = |v: &Value, k: &str| v.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(Tables { cecs: list(&cecs, "ciliumenvoyconfigs"), resources: list(&resources, "envoy-resources") })
    }

    /// The bridge's log lines written since byte `from` (bounded), and the new end.
    pub fn bridge_log_since(&self, from: u64) -> (Vec<Value>, u64) {
        read_jsonl_since(&self.bridge_log, from, MAX_DUMP_BYTES)
    }

    /// The bridge log's current length: where a case's slice of it starts.
    pub fn bridge_log_len(&self) -> u64 {
        std::fs::metadata(&self.bridge_log).map(|m| m.len()).unwrap_or(0)
    }

    /// What the evidence `environment` says of the agent step.
    pub fn environment(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let b = &self.binaries.agent.build;
        env.insert(
            "agent_step".into(),
            format!(
                "Cilium's own agent control plane (agent-plane {}, sha256 {}), composed as Cilium's control-plane suite composes it, on DryMode's fake datapath (no BPF, no TPROXY); its differences from the suite: {}",
                b.version,
                b.binary_sha256,
                b.differences.iter().map(|d| d.id.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
        env.extend([start_entry(self.start_ms)]);
        env.insert(
            "agent_step.overrides".into(),
            self.overrides.iter().map(|(f, why)| format!("{f} ({why})")).collect::<Vec<_>>().join("; "),
        );
        env.insert("agent_step.xds_mode".into(), self.mode_said.clone());
        env.insert(
            "agent_step.bridge".into(),
            format!(
                "xds-bridge {} (sha256 {}): the agent's xDS as cilium-envoy reads it, cilium.* filters removed, each listener bound at the Gateway frontends the agent redirects to its proxy port, ACK/NACK passed back",
                self.binaries.bridge.build.version, self.binaries.bridge.build.binary_sha256
            ),
        );
        env
    }
}

/// xds-bridge's arguments. `--xds-mode` is given only for ADS: split is the bridge's default, so
/// a bridge built before it relayed ADS still serves the split pins.
fn bridge_args(xds: &Path, listen: &Path, log: &Path, dump: &Path, mode: CiliumXdsMode) -> Vec<String> {
    let mut args = vec![
        format!("--agent={}", xds.display()),
        format!("--listen={}", listen.display()),
        format!("--log={}", log.display()),
        format!("--binds-from={}", dump.display()),
    ];
    if mode != CiliumXdsMode::Split {
        args.push(format!("--xds-mode={}", mode.as_str()));
    }
    args
}

/// The evidence `environment` entry of the agent's start: its hive's own `start_ms`, leading
/// (`cargo bench --bench operator_batch -- --agent` reads the number before " ms").
fn start_entry(start_ms: u64) -> (String, String) {
    ("agent_step.start".into(), format!("{start_ms} ms (the agent's hive, its own start_ms)"))
}

/// cilium-agent's default `proxy-initial-fetch-timeout`, in seconds
/// (cilium@v1.19.6:pkg/envoy/config/config.go), when the ConfigMap names none.
const INITIAL_FETCH_DEFAULT_SECS: u64 = 30;

/// The agent's `proxy-initial-fetch-timeout` as its `--config-dir` holds it (one file per key,
/// as the chart's `cilium-config` is mounted), or cilium-agent's default when the key is absent.
fn initial_fetch_timeout(config_dir: &Path) -> Result<Duration, String> {
    let path = config_dir.join("proxy-initial-fetch-timeout");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Duration::from_secs(INITIAL_FETCH_DEFAULT_SECS)),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    text.trim()
        .parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|e| format!("{}: proxy-initial-fetch-timeout {:?} is not a whole number of seconds: {e}", path.display(), text.trim()))
}

/// How long Envoy may take to be ready after it starts, before any case's CEC exists. Envoy is
/// ready once its first CDS and then LDS fetches are done. In split mode the agent answers both
/// at once (an empty version); a CEC that already exists (an earlier run's, on a warm plane)
/// with a cluster whose endpoints the agent never sends holds that for one initial fetch, as it
/// holds cilium-envoy. In ADS mode the agent answers nothing until it holds a snapshot for the
/// node: its cache is go-control-plane's snapshot cache, which keeps a watch open while the node
/// has no snapshot (cilium@v1.20.2:pkg/envoy/xdsnew/cache.go `CreateWatch`), and the agent sets
/// the first one with the first resources it serves (pkg/envoy/xds_server_ads.go
/// `updateSnapshot`). With no CEC yet, Envoy waits out the CDS initial fetch, then the LDS one:
/// two (measured at 1.20.2: ready 60 s after start, with 30 s fetches).
fn envoy_start_limit(mode: CiliumXdsMode, envoy_ready: Duration) -> Duration {
    let fetches = match mode {
        CiliumXdsMode::Split => 1,
        CiliumXdsMode::Ads => 2,
    };
    envoy_ready + INITIAL_FETCH * fetches
}

/// See [`RealAgent::listening_limit`].
fn listening_limit(initial_fetch: Duration, envoy_ready: Duration) -> Duration {
    initial_fetch.saturating_add(envoy_ready)
}

/// The agent's two tables a CEC's progress is read from.
struct Tables {
    /// `ciliumenvoyconfigs`: each CEC as the agent parsed it (its spec, its resources).
    cecs: Vec<Value>,
    /// `envoy-resources`: what the agent reconciles with Envoy, with the reconciler's status.
    resources: Vec<Value>,
}

/// Where one CEC stands in the agent (kept in the evidence as it is).
pub type CecState = AgentCec;

/// Taken and answered by Envoy (`Done`, or `Error` after a NACK).
fn settled(s: &CecState) -> bool {
    s.taken && matches!(s.status.as_deref(), Some("Done") | Some("Error"))
}

/// The outcome of [`RealAgent::wait_reconciled`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    pub cecs: Vec<CecState>,
    /// Each listener of those CECs the agent holds, with the proxy port it allocated.
    pub listeners: Vec<(String, u16)>,
    /// Every CEC settled within the limit.
    pub settled: bool,
    pub polls: u32,
    pub waited: Duration,
}

/// Where `cec` (as the API server holds it) stands in `tables`.
fn cec_state(cec: &Value, tables: &Tables) -> CecState {
    let ns = cec.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    let name = cec.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let same_name = |v: &&Value| {
        v.pointer("/Name/Namespace").and_then(Value::as_str) == Some(ns) && v.pointer("/Name/Name").and_then(Value::as_str) == Some(name)
    };
    let held = tables.cecs.iter().find(same_name);
    let taken = held.is_some_and(|h| h.get("Spec") == cec.get("spec"));
    let resource = tables.resources.iter().filter(|r| r.pointer("/Name/Origin").and_then(Value::as_str) == Some("cec")).find(same_name);
    // The status speaks of this generation only once the reconciled row carries the resources
    // the agent parsed from it (the CEC table and envoy-resources are written in turn).
    let current = match (held, resource) {
        (Some(h), Some(r)) if taken => h.get("Resources") == r.get("Resources"),
        _ => false,
    };
    let (status, error) = match resource.filter(|_| current) {
        Some(r) => (
            r.pointer("/Status/kind").and_then(Value::as_str).map(str::to_string),
            r.pointer("/Status/error").and_then(Value::as_str).map(str::to_string),
        ),
        None => (None, None),
    };
    CecState { name: format!("{ns}/{name}"), taken, older_held: held.is_some() && !taken, status, error }
}

/// Waits until the process's log has a line containing `needle`; returns the line.
async fn wait_for_line(p: &Proc, needle: &str, limit: Duration) -> Result<String, String> {
    let started = Instant::now();
    loop {
        let head = super::procs::log_head(&p.log, 1024 * 1024);
        if let Some(line) = head.lines().find(|l| l.contains(needle)) {
            return Ok(line.to_string());
        }
        if let Some(status) = p.exited() {
            return Err(format!("exited ({status}) before it was ready: {}", p.tail(30)));
        }
        if started.elapsed() >= limit {
            return Err(format!("not ready after {limit:?} ({}): {}", p.command, p.tail(30)));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET path` on the agent's dump socket (HTTP/1.0, the answer read to its end, bounded).
pub(super) async fn dump_get(socket: &Path, path: &str) -> Result<Value, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let io = async {
        let mut s = tokio::net::UnixStream::connect(socket).await?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: agent\r\n\r\n").as_bytes()).await?;
        let mut buf = Vec::new();
        (&mut s).take(MAX_DUMP_BYTES + 1).read_to_end(&mut buf).await?;
        Ok::<_, std::io::Error>(buf)
    };
    let buf = tokio::time::timeout(Duration::from_secs(10), io)
        .await
        .map_err(|_| format!("{}: GET {path}: no answer within 10 s", socket.display()))?
        .map_err(|e| format!("{}: GET {path}: {e}", socket.display()))?;
    if buf.len() as u64 > MAX_DUMP_BYTES {
        return Err(format!("{}: GET {path}: the answer is larger than {MAX_DUMP_BYTES} bytes", socket.display()));
    }
    parse_http_json(&buf).map_err(|e| format!("{}: GET {path}: {e}", socket.display()))
}

/// The JSON body of an HTTP/1.x answer with status 200.
fn parse_http_json(buf: &[u8]) -> Result<Value, String> {
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or("the answer has no end of headers")?;
    let head = String::from_utf8_lossy(&buf[..split]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("answered {status:?}: {}", String::from_utf8_lossy(&buf[split + 4..]).chars().take(300).collect::<String>()));
    }
    serde_json::from_slice(&buf[split + 4..]).map_err(|e| format!("the body is not JSON: {e}"))
}

/// The JSON lines of `path` from byte `from` (at most `max` bytes), and the offset after the
/// last whole line read.
fn read_jsonl_since(path: &Path, from: u64, max: u64) -> (Vec<Value>, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return (Vec::new(), from) };
    if f.seek(SeekFrom::Start(from)).is_err() {
        return (Vec::new(), from);
    }
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    let whole = buf.iter().rposition(|b| *b == b'\n').map(|i| i + 1).unwrap_or(0);
    let lines = buf[..whole].split(|b| *b == b'\n').filter(|l| !l.is_empty()).filter_map(|l| serde_json::from_slice(l).ok()).collect();
    (lines, from + whole as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(cecs: Vec<Value>, resources: Vec<Value>) -> Tables {
        Tables { cecs, resources }
    }

    fn api_cec(spec: Value) -> Value {
        json!({"metadata": {"namespace": "demo", "name": "cilium-gateway-gw"}, "spec": spec})
    }

    fn held(spec: Value, resources: Value) -> Value {
        json!({"Name": {"Namespace": "demo", "Name": "cilium-gateway-gw"}, "Spec": spec, "Resources": resources})
    }

    fn row(resources: Value, kind: &str, error: Option<&str>) -> Value {
        let mut status = json!({"kind": kind});
        if let Some(e) = error {
            status["error"] = json!(e);
        }
        json!({"Name": {"Origin": "cec", "Namespace": "demo", "Name": "cilium-gateway-gw"}, "Resources": resources, "Status": status})
    }

    /// The status is this generation's only when the agent holds this spec and the reconciled
    /// row carries what it parsed from it: an older row's `Done` is not an answer.
    #[test]
    fn a_status_counts_only_for_the_generation_the_api_server_holds() {
        let spec = json!({"services": [{"name": "cilium-gateway-gw"}], "resources": [1]});
        let parsed = json!({"Listeners": ["new"]});
        let s =
            cec_state(&api_cec(spec.clone()), &tables(vec![held(spec.clone(), parsed.clone())], vec![row(parsed.clone(), "Done", None)]));
        assert!(s.taken && settled(&s), "{s:?}");
        assert_eq!(s.status.as_deref(), Some("Done"));

        // The row still carries the previous generation's resources: not settled yet.
        let s = cec_state(
            &api_cec(spec.clone()),
            &tables(vec![held(spec.clone(), parsed.clone())], vec![row(json!({"Listeners": ["old"]}), "Done", None)]),
        );
        assert!(s.taken && !settled(&s) && s.status.is_none(), "{s:?}");

        // The agent holds another spec under the name (the current one did not parse).
        let s = cec_state(
            &api_cec(json!({"resources": [2]})),
            &tables(vec![held(spec.clone(), parsed.clone())], vec![row(parsed.clone(), "Done", None)]),
        );
        assert!(!s.taken && s.older_held && !settled(&s), "{s:?}");

        // Envoy's NACK: settled, with the reconciler's error.
        let s = cec_state(
            &api_cec(spec.clone()),
            &tables(vec![held(spec, parsed.clone())], vec![row(parsed, "Error", Some("NACK received: x"))]),
        );
        assert!(settled(&s) && s.error.as_deref() == Some("NACK received: x"), "{s:?}");
    }

    /// A listener whose Secret the agent never serves warms for the agent's initial fetch
    /// timeout (30 s from the chart's `cilium-config`); the wait for it must outlast that, or
    /// the probes meet a warming listener (`missing-secret-beside-catch-all`: every probe
    /// refused after the lane's 10 s `envoy_ready`).
    #[test]
    fn the_listening_wait_outlasts_the_agents_initial_fetch() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(initial_fetch_timeout(dir.path()).unwrap(), Duration::from_secs(30), "cilium-agent's default");
        std::fs::write(dir.path().join("proxy-initial-fetch-timeout"), "45\n").unwrap();
        let fetch = initial_fetch_timeout(dir.path()).unwrap();
        assert_eq!(fetch, Duration::from_secs(45));
        let ready = Duration::from_secs(10);
        assert!(listening_limit(fetch, ready) > fetch && listening_limit(fetch, ready) > ready);
        std::fs::write(dir.path().join("proxy-initial-fetch-timeout"), "soon").unwrap();
        let e = initial_fetch_timeout(dir.path()).unwrap_err();
        assert!(e.contains("proxy-initial-fetch-timeout") && e.contains("soon"), "{e}");
    }

    /// The agent's start is in the evidence's environment, where the benchmark reads it (it
    /// was only a note, lost when the case passed, and the benchmark printed no start).
    #[test]
    fn the_agents_start_is_said_where_the_benchmark_reads_it() {
        let (k, v) = start_entry(236);
        assert!(k.starts_with("agent_step.start"));
        assert_eq!(v.split(" ms").next().and_then(|n| n.parse::<u64>().ok()), Some(236));
    }

    #[test]
    fn a_dump_answer_is_read_only_when_it_says_200() {
        assert_eq!(parse_http_json(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[1]\n").unwrap(), json!([1]));
        let e = parse_http_json(b"HTTP/1.0 404 Not Found\r\n\r\nno such table").unwrap_err();
        assert!(e.contains("404") && e.contains("no such table"), "{e}");
        assert!(parse_http_json(b"HTTP/1.0 200 OK").is_err());
    }

    #[test]
    fn a_half_written_log_line_is_left_for_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"b\":").unwrap();
        let (lines, end) = read_jsonl_since(&p, 0, 1024);
        assert_eq!(lines, vec![json!({"a": 1})]);
        assert_eq!(end, 8);
        std::fs::write(&p, "{\"a\":1}\n{\"b\":2}\n").unwrap();
        let (lines, _) = read_jsonl_since(&p, end, 1024);
        assert_eq!(lines, vec![json!({"b": 2})]);
    }

    /// In ADS mode Envoy's start outlasts two initial fetches (CDS, then LDS, both held by the
    /// agent's snapshot cache until it serves anything): one, as in split mode, timed out at
    /// 1.20.2 with Envoy still `INITIALIZING`.
    #[test]
    fn envoys_start_outlasts_the_fetches_the_agent_holds() {
        let ready = Duration::from_secs(10);
        assert!(envoy_start_limit(CiliumXdsMode::Split, ready) > INITIAL_FETCH);
        assert!(envoy_start_limit(CiliumXdsMode::Ads, ready) > INITIAL_FETCH * 2);
    }

    /// The agent runs in the xDS mode the chart rendered: no `--envoy-xds-mode` override at any
    /// pin (1.20's `ads` was overridden to split while the bridge read split only), Envoy and the
    /// bridge asked in that mode, and the evidence says which and that it is the chart's.
    #[test]
    fn the_agent_runs_the_xds_mode_the_chart_renders() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!overrides().iter().any(|(f, _)| f.starts_with("--envoy-xds-mode")), "{:?}", overrides());
        let bridge = |mode| bridge_args(Path::new("x.sock"), Path::new("b.sock"), Path::new("b.jsonl"), Path::new("d.sock"), mode);
        // 1.19: the chart renders no envoy-xds-mode.
        let (mode, said) = xds_mode(dir.path()).unwrap();
        assert_eq!(mode, CiliumXdsMode::Split);
        assert!(said.starts_with("split: ") && said.contains("names no envoy-xds-mode"), "{said}");
        assert!(!bridge(mode).iter().any(|a| a.starts_with("--xds-mode")), "split is the bridge's default");
        std::fs::write(dir.path().join("envoy-xds-mode"), "split\n").unwrap();
        assert_eq!(xds_mode(dir.path()).unwrap().0, CiliumXdsMode::Split);
        // 1.20: `ads`, run as rendered.
        for v in ["ads", "strict-ads"] {
            std::fs::write(dir.path().join("envoy-xds-mode"), v).unwrap();
            let (mode, said) = xds_mode(dir.path()).unwrap();
            assert_eq!(mode, CiliumXdsMode::Ads);
            assert!(said.starts_with("ads: ") && said.contains(&format!("{v:?}")) && said.contains("run as rendered"), "{said}");
            assert!(bridge(mode).contains(&"--xds-mode=ads".to_string()));
        }
        std::fs::write(dir.path().join("envoy-xds-mode"), "delta").unwrap();
        let e = xds_mode(dir.path()).unwrap_err();
        assert!(e.contains("envoy-xds-mode") && e.contains("\"delta\""), "{e}");
    }
}
