//! The operator lane's pods: a scheduler and kubelet stand-in, so that workloads others wrote
//! (the Gateway API conformance suite's echo-basic Deployments) get real pods with addresses of
//! their own on a control plane that has no kubelet.
//!
//! kube-controller-manager's deployment and replicaset controllers make the pods
//! ([`super::control_plane::Controllers::Workloads`]); this stand-in watches every pod and, as a
//! scheduler would, binds each unscheduled one to the lane's Node (one is made, with the run's
//! /24 as its podCIDR and the bridge's gateway as its InternalIP, when the cluster has none);
//! then, as a kubelet would, runs each container's program in a network namespace of its own
//! ([`crate::netns`]), with its environment as the API server's downward API would set it, and
//! writes the pod's status: its podIP (the namespace's address), phase Running, and Ready once
//! the program listens (a TCP connection to a port it listens on, at the pod's address,
//! succeeds, or it has a UDP socket bound on a port the pod declares for UDP). kube-controller-manager's endpointslice controller then makes real EndpointSlices
//! from those pod IPs (kube-apiserver refuses loopback ones; these are not). A deleted pod's
//! programs are stopped and its namespace removed, and the pod is then deleted for good, as a
//! kubelet confirms a graceful deletion.
//!
//! What is emulated, and said so: there are no images. An image is run only when a program built
//! from the same source is named for it ([`Images`]: echo-basic from the conformance suite's own
//! module at the suite's version, whatever the image's tag); any other pod stays Pending with a
//! container status and an Event that say why. A volume is not mounted: a secret, configMap or
//! emptyDir volume is written into the pod's folder, and every environment value, command and
//! argument under its mountPath is pointed there. A program that exits is not restarted (its
//! status says how it ended). No probes but the listening check, no resource limits, no
//! `$(VAR)` expansion, no init containers (such a pod stays Pending, saying so).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Container, Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::netns::{Netns, RunNetwork};

/// Who writes the statuses and events (the field manager and the events' source).
pub const WHO: &str = "layout-gate-pod-stand-in";
/// The Node the stand-in makes when the cluster has none.
pub const NODE: &str = "layout-gate-node";
/// How often pods waiting for something (a Secret, their program's listening socket) are looked
/// at again.
const TICK: Duration = Duration::from_millis(500);

/// The programs the stand-in can run, by image repository (the image name without its tag or
/// digest), and for every image it cannot, why.
#[derive(Debug, Clone, Default)]
pub struct Images {
    programs: BTreeMap<String, Result<PathBuf, String>>,
}

impl Images {
    /// `repository` runs `program` (a built binary); its tag is not looked at.
    pub fn with(mut self, repository: &str, program: Result<PathBuf, String>) -> Images {
        self.programs.insert(repository.to_string(), program);
        self
    }

    /// The program for `image`, or why there is none.
    pub fn program(&self, image: &str) -> Result<&Path, String> {
        let repo = repository(image);
        match self.programs.get(repo) {
            Some(Ok(p)) => Ok(p),
            Some(Err(why)) => Err(format!("no program for image {image}: {why}")),
            None => Err(format!(
                "no program for image {image}: the operator lane's pod stand-in runs only {} (there are no images here; each is a program built from the same source)",
                self.programs.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// `registry.k8s.io/gateway-api/echo-basic:v1.5.1` → `registry.k8s.io/gateway-api/echo-basic`
/// (a `:` after the last `/` starts the tag; `@` the digest).
fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[slash..].find(':') {
        Some(i) => &image[..slash + i],
        None => image,
    }
}

/// Why the stand-in could not start.
#[derive(Debug, thiserror::Error)]
pub enum PodsError {
    #[error("the run's network for the pods: {0}")]
    Net(#[from] crate::netns::NetError),
    #[error("{action}: {error}")]
    Api { action: String, error: String },
    #[error("the pods' folder: {0}")]
    Io(#[from] std::io::Error),
}

fn api_err(action: &str) -> impl FnOnce(kube::Error) -> PodsError + '_ {
    move |e| PodsError::Api { action: action.to_string(), error: e.to_string() }
}

/// The running stand-in: stopped (every program killed, every namespace removed) by
/// [`PodStandIn::stop`] or on drop.
pub struct PodStandIn {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The node pods are bound to.
    pub node: String,
    /// The run's network, `a.b.c.0/24`.
    pub net: String,
}

impl PodStandIn {
    /// Makes the run's network and the Node (when the cluster has none), then watches pods on
    /// a task of the current runtime until stopped. `dir`: where each pod's folder (volumes,
    /// logs) goes.
    pub async fn start(client: kube::Client, images: Images, dir: &Path) -> Result<PodStandIn, PodsError> {
        let network = tokio::task::spawn_blocking(|| RunNetwork::create("pods"))
            .await
            .map_err(|e| PodsError::Io(std::io::Error::other(format!("making the run's network: {e}"))))??;
        let nodes: Api<Node> = Api::all(client.clone());
        let existing = nodes.list(&Default::default()).await.map_err(api_err("listing Nodes"))?;
        let node = match existing.items.first().and_then(|n| n.metadata.name.clone()) {
            Some(name) => name,
            None => {
                make_node(&nodes, &network).await?;
                NODE.to_string()
            }
        };
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let net = network.net().to_string();
        let kubelet = Kubelet { client, images, dir: dir.to_path_buf(), node: node.clone(), network, pods: HashMap::new() };
        let task = tokio::spawn(kubelet.run(stopped));
        Ok(PodStandIn { stop: Some(stop), task: Some(task), node, net })
    }

    /// Stops watching, kills every program and removes every namespace and the network.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for PodStandIn {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            // The task owns the namespaces; aborting it drops them (every program killed).
            t.abort();
        }
    }
}

async fn make_node(nodes: &Api<Node>, network: &RunNetwork) -> Result<(), PodsError> {
    let cidr = network.net().to_string();
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
    }))
    .map_err(|e| PodsError::Api { action: "the Node".into(), error: e.to_string() })?;
    nodes.create(&PostParams::default(), &node).await.map_err(api_err("creating the Node"))?;
    let now = now();
    let status = json!({"status": {
        "addresses": [{"type": "InternalIP", "address": network.gateway().to_string()}, {"type": "Hostname", "address": NODE}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "StandIn", "message": format!("{WHO}: the lane's kubelet stand-in runs here"),
                        "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "capacity": {"pods": "253"}, "allocatable": {"pods": "253"},
    }});
    nodes.patch_status(NODE, &PatchParams::default(), &Patch::Merge(&status)).await.map_err(api_err("writing the Node's status"))?;
    Ok(())
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// One pod the stand-in looks after.
enum Tracked {
    /// Not started: waiting for something, or refused (the reason said once).
    Waiting {
        said: Option<String>,
    },
    Running(Box<Running>),
    /// Its program ended, or it cannot run: nothing more to do until it is deleted.
    Done,
}

struct Running {
    netns: Netns,
    children: Vec<(String, tokio::process::Child)>,
    ready: bool,
}

struct Kubelet {
    client: kube::Client,
    images: Images,
    dir: PathBuf,
    node: String,
    network: RunNetwork,
    /// By uid.
    pods: HashMap<String, (Pod, Tracked)>,
}

fn name_of(p: &Pod) -> (String, String, String) {
    let m = &p.metadata;
    (m.namespace.clone().unwrap_or_default(), m.name.clone().unwrap_or_default(), m.uid.clone().unwrap_or_default())
}

impl Kubelet {
    async fn run(mut self, mut stopped: tokio::sync::oneshot::Receiver<()>) {
        let api: Api<Pod> = Api::all(self.client.clone());
        let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                ev = events.next() => match ev {
                    Some(Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p))) => self.seen(p).await,
                    Some(Ok(watcher::Event::Delete(p))) => self.gone(&p),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!("{WHO}: watching pods: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    None => break,
                },
                _ = tick.tick() => self.tick().await,
            }
        }
        // Every program killed and namespace removed (blocking `ip` calls, a few ms each).
        let pods = std::mem::take(&mut self.pods);
        let _ = tokio::task::spawn_blocking(move || drop(pods)).await;
    }

    async fn seen(&mut self, pod: Pod) {
        let (ns, name, uid) = name_of(&pod);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if pod.metadata.deletion_timestamp.is_some() {
            if node.as_deref() == Some(self.node.as_str()) {
                self.gone(&pod);
                // As a kubelet confirms a graceful deletion once the containers are gone.
                let dp = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions { uid: Some(uid.clone()), resource_version: None }),
                    ..DeleteParams::default()
                };
                if let Err(e) = api.delete(&name, &dp).await {
                    tracing::debug!("{WHO}: deleting {ns}/{name}: {e}");
                }
            }
            return;
        }
        match node {
            None => {
                // As a scheduler: to the lane's one Node.
                let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns},
                                     "target": {"apiVersion": "v1", "kind": "Node", "name": self.node}});
                if let Err(e) = api.create_subresource::<_, Value>("binding", &name, &PostParams::default(), &binding).await {
                    tracing::warn!("{WHO}: binding {ns}/{name} to {}: {e}", self.node);
                }
            }
            Some(n) if n == self.node => {
                let entry = self.pods.entry(uid.clone()).or_insert_with(|| (pod.clone(), Tracked::Waiting { said: None }));
                entry.0 = pod;
                if matches!(entry.1, Tracked::Waiting { .. }) {
                    self.try_start(&uid).await;
                }
            }
            Some(_) => {}
        }
    }

    fn gone(&mut self, pod: &Pod) {
        let uid = name_of(pod).2;
        if let Some((_, tracked)) = self.pods.remove(&uid) {
            // Its programs killed and its namespace removed off the async threads.
            drop(tokio::task::spawn_blocking(move || drop(tracked)));
        }
    }

    async fn tick(&mut self) {
        let uids: Vec<String> = self.pods.keys().cloned().collect();
        for uid in uids {
            let waiting = matches!(self.pods.get(&uid), Some((_, Tracked::Waiting { .. })));
            if waiting {
                self.try_start(&uid).await;
            } else {
                self.check(&uid).await;
            }
        }
    }

    /// Starts the pod's programs, or says (once per reason) why it cannot yet.
    async fn try_start(&mut self, uid: &str) {
        let Some((pod, _)) = self.pods.get(uid) else { return };
        let pod = pod.clone();
        let (ns, name, _) = name_of(&pod);
        match self.start(&pod).await {
            Ok(running) => {
                let ip = running.netns.addr();
                tracing::info!("{WHO}: {ns}/{name} runs at {ip}");
                self.pods.insert(uid.to_string(), (pod.clone(), Tracked::Running(Box::new(running))));
                self.patch(&pod, status_running(&pod, ip, self.network.gateway(), false)).await;
            }
            Err(Start::Never(why)) => {
                self.pods.insert(uid.to_string(), (pod.clone(), Tracked::Done));
                self.patch(&pod, status_waiting(&pod, "NoProgramForImage", &why)).await;
                self.event(&pod, "NoProgramForImage", &why).await;
            }
            Err(Start::NotYet(why)) => {
                let said = match self.pods.get(uid) {
                    Some((_, Tracked::Waiting { said })) => said.clone(),
                    _ => None,
                };
                if said.as_deref() != Some(why.as_str()) {
                    self.patch(&pod, status_waiting(&pod, "ContainerCreating", &why)).await;
                    self.pods.insert(uid.to_string(), (pod, Tracked::Waiting { said: Some(why) }));
                }
            }
        }
    }

    /// A running pod: Ready once its programs listen (a TCP port that accepts, or a UDP socket
    /// bound on a port the pod declares for UDP); its end said when one exits.
    async fn check(&mut self, uid: &str) {
        let Some((pod, Tracked::Running(r))) = self.pods.get_mut(uid) else { return };
        let pod = pod.clone();
        for (container, child) in &mut r.children {
            if let Ok(Some(status)) = child.try_wait() {
                let why = format!("container {container} exited ({status}); the stand-in does not restart it");
                let patch = status_waiting(&pod, "Exited", &why);
                self.pods.insert(uid.to_string(), (pod.clone(), Tracked::Done));
                self.patch(&pod, patch).await;
                self.event(&pod, "Exited", &why).await;
                return;
            }
        }
        if r.ready {
            return;
        }
        let addr = r.netns.addr();
        let pids: Vec<u32> = r.children.iter().filter_map(|(_, c)| c.id()).collect();
        if listens(&pids, addr).await || binds_udp(&pids, &declared_udp_ports(&pod)) {
            r.ready = true;
            self.patch(&pod, status_running(&pod, addr, self.network.gateway(), true)).await;
        }
    }

    async fn start(&self, pod: &Pod) -> Result<Running, Start> {
        let (ns, name, uid) = name_of(pod);
        let spec = pod.spec.as_ref().ok_or_else(|| Start::Never("the pod has no spec".into()))?;
        if spec.init_containers.as_ref().is_some_and(|c| !c.is_empty()) {
            return Err(Start::Never("init containers are not run by the operator lane's pod stand-in".into()));
        }
        let mut programs = Vec::new();
        for c in &spec.containers {
            let image = c.image.clone().unwrap_or_default();
            let program = self.images.program(&image).map_err(Start::Never)?.to_path_buf();
            programs.push((c, program));
        }
        let folder = self.dir.join(format!("{ns}.{name}.{uid}"));
        std::fs::create_dir_all(&folder).map_err(|e| Start::Never(format!("{}: {e}", folder.display())))?;
        let mounts = self.volumes(pod, &folder).await?;
        let netns = self.network.namespace(&format!("{ns}-{name}")).map_err(|e| Start::NotYet(format!("its network namespace: {e}")))?;
        let mut children = Vec::new();
        for (c, program) in programs {
            let env = env_of(pod, c, netns.addr(), self.network.gateway()).map_err(Start::Never)?;
            let args = command_of(c, &program).map_err(Start::Never)?;
            let log = folder.join(format!("{}.log", c.name));
            let out = std::fs::File::create(&log).map_err(|e| Start::Never(format!("{}: {e}", log.display())))?;
            let err = out.try_clone().map_err(|e| Start::Never(format!("{}: {e}", log.display())))?;
            let mut cmd = netns.command(&program);
            cmd.args(args.iter().map(|a| rewrite(a, &mounts)))
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .envs(env.iter().map(|(k, v)| (k, rewrite(v, &mounts))))
                .current_dir(&folder)
                .stdin(std::process::Stdio::null())
                .stdout(out)
                .stderr(err);
            let mut cmd = tokio::process::Command::from(cmd);
            cmd.kill_on_drop(true);
            let child = cmd.spawn().map_err(|e| Start::Never(format!("starting {} for container {}: {e}", program.display(), c.name)))?;
            children.push((c.name.clone(), child));
        }
        Ok(Running { netns, children, ready: false })
    }

    /// Writes each secret, configMap and emptyDir volume into the pod's folder: mountPath →
    /// folder, for [`rewrite`]. A Secret or ConfigMap not there yet: not yet.
    async fn volumes(&self, pod: &Pod, folder: &Path) -> Result<Vec<(String, PathBuf)>, Start> {
        let (ns, _, _) = name_of(pod);
        let spec = pod.spec.as_ref().ok_or_else(|| Start::Never("no spec".into()))?;
        let volumes = spec.volumes.clone().unwrap_or_default();
        let mut mounts = Vec::new();
        for c in &spec.containers {
            for m in c.volume_mounts.iter().flatten() {
                let Some(v) = volumes.iter().find(|v| v.name == m.name) else { continue };
                let dir = folder.join("volumes").join(&v.name);
                let files: Option<BTreeMap<String, Vec<u8>>> = if let Some(s) = &v.secret {
                    let secret = s.secret_name.clone().unwrap_or_default();
                    let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(self.client.clone(), &ns);
                    let got = api.get_opt(&secret).await.map_err(|e| Start::NotYet(format!("reading Secret {ns}/{secret}: {e}")))?;
                    let got = got.ok_or_else(|| Start::NotYet(format!("Secret {ns}/{secret} (volume {}) does not exist yet", v.name)))?;
                    let data: BTreeMap<String, Vec<u8>> = got.data.unwrap_or_default().into_iter().map(|(k, b)| (k, b.0)).collect();
                    Some(pick(data, s.items.as_deref().map(|i| i.iter().map(|i| (i.key.clone(), i.path.clone())).collect())))
                } else if let Some(c) = &v.config_map {
                    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(self.client.clone(), &ns);
                    let got = api.get_opt(&c.name).await.map_err(|e| Start::NotYet(format!("reading ConfigMap {ns}/{}: {e}", c.name)))?;
                    let got =
                        got.ok_or_else(|| Start::NotYet(format!("ConfigMap {ns}/{} (volume {}) does not exist yet", c.name, v.name)))?;
                    let data: BTreeMap<String, Vec<u8>> =
                        got.data.unwrap_or_default().into_iter().map(|(k, s)| (k, s.into_bytes())).collect();
                    Some(pick(data, c.items.as_deref().map(|i| i.iter().map(|i| (i.key.clone(), i.path.clone())).collect())))
                } else if v.empty_dir.is_some() {
                    Some(BTreeMap::new())
                } else {
                    // The service account token's projected volume and the like: nothing the
                    // programs here read; not written.
                    None
                };
                let Some(files) = files else { continue };
                for (path, bytes) in files {
                    if path.split('/').any(|p| p == ".." || p.is_empty()) {
                        return Err(Start::Never(format!("volume {}: item path {path:?} is not a relative path", v.name)));
                    }
                    let file = dir.join(&path);
                    if let Some(parent) = file.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| Start::Never(format!("{}: {e}", parent.display())))?;
                    }
                    std::fs::write(&file, bytes).map_err(|e| Start::Never(format!("{}: {e}", file.display())))?;
                }
                std::fs::create_dir_all(&dir).map_err(|e| Start::Never(format!("{}: {e}", dir.display())))?;
                let sub = m.sub_path.clone().filter(|s| !s.is_empty());
                let target = match sub {
                    Some(s) => dir.join(s),
                    None => dir,
                };
                mounts.push((m.mount_path.clone(), target));
            }
        }
        Ok(mounts)
    }

    async fn patch(&self, pod: &Pod, status: Value) {
        let (ns, name, _) = name_of(pod);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        if let Err(e) = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status }))).await {
            tracing::warn!("{WHO}: writing {ns}/{name}'s status: {e}");
        }
    }

    async fn event(&self, pod: &Pod, reason: &str, message: &str) {
        let (ns, name, uid) = name_of(pod);
        let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(self.client.clone(), &ns);
        let now = now();
        let ev = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": format!("{name}."), "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns, "uid": uid},
            "reason": reason, "message": message, "type": "Warning",
            "source": {"component": WHO, "host": self.node},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        });
        match serde_json::from_value(ev) {
            Ok(ev) => {
                if let Err(e) = api.create(&PostParams::default(), &ev).await {
                    tracing::warn!("{WHO}: an event for {ns}/{name}: {e}");
                }
            }
            Err(e) => tracing::warn!("{WHO}: an event for {ns}/{name}: {e}"),
        }
    }
}

/// Why a pod did not start: never (it stays Pending, saying why) or not yet (tried again).
enum Start {
    Never(String),
    NotYet(String),
}

/// The keys of `data` as files: all of them by their names, or only `items` (key → path).
fn pick(data: BTreeMap<String, Vec<u8>>, items: Option<Vec<(String, String)>>) -> BTreeMap<String, Vec<u8>> {
    match items {
        None => data,
        Some(items) => items.into_iter().filter_map(|(k, p)| data.get(&k).map(|b| (p, b.clone()))).collect(),
    }
}

/// `value` with a leading mountPath replaced by the folder the volume was written to.
fn rewrite(value: &str, mounts: &[(String, PathBuf)]) -> String {
    for (mount, dir) in mounts {
        let mount = mount.trim_end_matches('/');
        if value == mount {
            return dir.display().to_string();
        }
        if let Some(rest) = value.strip_prefix(mount).and_then(|r| r.strip_prefix('/')) {
            return dir.join(rest).display().to_string();
        }
    }
    value.to_string()
}

/// The container's arguments: its `command` must name the program the image runs (by file
/// name; the rest of it comes first), then its `args`.
fn command_of(c: &Container, program: &Path) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    if let Some(cmd) = c.command.as_ref().filter(|c| !c.is_empty()) {
        let wanted = program.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        let named = Path::new(&cmd[0]).file_name().and_then(|f| f.to_str()).unwrap_or_default();
        if named != wanted {
            return Err(format!(
                "container {} runs {:?}, but its image's program here is {wanted}: only the image's own entrypoint can be run",
                c.name, cmd[0]
            ));
        }
        args.extend(cmd[1..].iter().cloned());
    }
    args.extend(c.args.iter().flatten().cloned());
    Ok(args)
}

/// The container's environment as the kubelet would set it: plain values and the downward API's
/// fields; anything else (a Secret's or ConfigMap's key, resource fields, `envFrom`) refused.
fn env_of(pod: &Pod, c: &Container, ip: Ipv4Addr, host: Ipv4Addr) -> Result<Vec<(String, String)>, String> {
    if c.env_from.as_ref().is_some_and(|e| !e.is_empty()) {
        return Err(format!("container {}: envFrom is not supported by the operator lane's pod stand-in", c.name));
    }
    let mut out = Vec::new();
    for e in c.env.iter().flatten() {
        let value = match (&e.value, &e.value_from) {
            (Some(v), _) => v.clone(),
            (None, None) => String::new(),
            (None, Some(from)) => {
                let field = from.field_ref.as_ref().map(|f| f.field_path.as_str()).ok_or_else(|| {
                    format!(
                        "container {}: env {} takes its value from a source the pod stand-in does not read (only fieldRef)",
                        c.name, e.name
                    )
                })?;
                field_value(field, pod, ip, host)
                    .ok_or_else(|| format!("container {}: env {}: fieldRef {field} is not supported", c.name, e.name))?
            }
        };
        out.push((e.name.clone(), value));
    }
    Ok(out)
}

/// A downward API field (`metadata.name`, `status.podIP`, `metadata.labels['app']`, ...).
fn field_value(field: &str, pod: &Pod, ip: Ipv4Addr, host: Ipv4Addr) -> Option<String> {
    let m = &pod.metadata;
    let spec = pod.spec.as_ref();
    let keyed = |prefix: &str, map: &Option<BTreeMap<String, String>>| {
        let key = field.strip_prefix(prefix)?.strip_prefix("['")?.strip_suffix("']")?;
        Some(map.as_ref().and_then(|m| m.get(key)).cloned().unwrap_or_default())
    };
    match field {
        "metadata.name" => m.name.clone(),
        "metadata.namespace" => m.namespace.clone(),
        "metadata.uid" => m.uid.clone(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => Some(spec.and_then(|s| s.service_account_name.clone()).unwrap_or_default()),
        "status.podIP" | "status.podIPs" => Some(ip.to_string()),
        "status.hostIP" | "status.hostIPs" => Some(host.to_string()),
        _ => keyed("metadata.labels", &m.labels).or_else(|| keyed("metadata.annotations", &m.annotations)),
    }
}

fn condition(kind: &str, ok: bool, now: &str) -> Value {
    json!({"type": kind, "status": if ok { "True" } else { "False" }, "lastTransitionTime": now, "lastProbeTime": null})
}

fn container_names(pod: &Pod) -> Vec<(String, String)> {
    pod.spec.iter().flat_map(|s| s.containers.iter()).map(|c| (c.name.clone(), c.image.clone().unwrap_or_default())).collect()
}

/// Running at `ip`; Ready when `ready`.
fn status_running(pod: &Pod, ip: Ipv4Addr, host: Ipv4Addr, ready: bool) -> Value {
    let now = now();
    let started = pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0.to_string()).unwrap_or_else(|| now.clone());
    json!({
        "phase": "Running",
        "podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}],
        "hostIP": host.to_string(), "hostIPs": [{"ip": host.to_string()}],
        "startTime": started,
        "conditions": [condition("PodScheduled", true, &now), condition("Initialized", true, &now),
                       condition("ContainersReady", ready, &now), condition("Ready", ready, &now)],
        "containerStatuses": container_names(pod).into_iter().map(|(name, image)| json!({
            "name": name, "image": image, "imageID": "", "ready": ready, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started}},
        })).collect::<Vec<_>>(),
    })
}

/// Pending, each container waiting for `reason`.
fn status_waiting(pod: &Pod, reason: &str, message: &str) -> Value {
    let now = now();
    json!({
        "phase": "Pending",
        "conditions": [condition("PodScheduled", true, &now), condition("ContainersReady", false, &now), condition("Ready", false, &now)],
        "containerStatuses": container_names(pod).into_iter().map(|(name, image)| json!({
            "name": name, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}},
        })).collect::<Vec<_>>(),
    })
}

/// The ports of sockets in the namespace of `pid` (`/proc/<pid>/net/<files>`) in `state`:
/// `0A` (listening) in the TCP tables, `07` (bound, unconnected) in the UDP ones.
fn socket_ports(pid: u32, files: [&str; 2], state: &str) -> Vec<u16> {
    let mut ports = Vec::new();
    for file in files {
        use std::io::Read as _;
        let mut text = String::new();
        // A few lines per socket; 1 MiB is thousands of them.
        let read = std::fs::File::open(format!("/proc/{pid}/net/{file}")).and_then(|f| f.take(1 << 20).read_to_string(&mut text));
        if read.is_ok() {
            ports.extend(parse_ports(&text, state));
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

fn parse_ports(text: &str, wanted: &str) -> Vec<u16> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1)?;
            let state = f.nth(1)?;
            (state == wanted).then(|| u16::from_str_radix(local.rsplit(':').next()?, 16).ok()).flatten()
        })
        .collect()
}

/// Whether one of the TCP ports the programs listen on accepts a connection at the pod's address.
async fn listens(pids: &[u32], ip: Ipv4Addr) -> bool {
    for pid in pids {
        for port in socket_ports(*pid, ["tcp", "tcp6"], "0A") {
            let addr = SocketAddr::new(IpAddr::V4(ip), port);
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await {
                return true;
            }
        }
    }
    false
}

/// The UDP ports the pod's containers declare (`ports[].protocol: UDP`).
fn declared_udp_ports(pod: &Pod) -> Vec<u16> {
    let containers = pod.spec.iter().flat_map(|s| s.containers.iter());
    containers
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.protocol.as_deref() == Some("UDP"))
        .filter_map(|p| u16::try_from(p.container_port).ok())
        .collect()
}

/// Whether the programs have a UDP socket bound on a port the pod declares for UDP. A UDP server
/// (echo-basic with `UDP_ECHO_SERVER`, the suite's UDPRoute backends) listens on no TCP port,
/// and a socket of its own is all there is to see: nothing answers a probe that says nothing.
fn binds_udp(pids: &[u32], declared: &[u16]) -> bool {
    !declared.is_empty() && pids.iter().any(|pid| socket_ports(*pid, ["udp", "udp6"], "07").iter().any(|p| declared.contains(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: Value) -> Pod {
        serde_json::from_value(yaml).unwrap()
    }

    #[test]
    fn an_image_runs_the_program_named_for_its_repository_whatever_its_tag() {
        let images = Images::default()
            .with("registry.k8s.io/gateway-api/echo-basic", Ok(PathBuf::from("/cp/echo-basic/v1.6.1/echo-basic")))
            .with("registry.k8s.io/coredns/coredns", Err("not built: scripts/install-control-plane.sh --only-conformance".into()));
        assert_eq!(images.program("registry.k8s.io/gateway-api/echo-basic:v1.5.1").unwrap(), Path::new("/cp/echo-basic/v1.6.1/echo-basic"));
        assert_eq!(
            images.program("registry.k8s.io/gateway-api/echo-basic@sha256:ab").unwrap(),
            Path::new("/cp/echo-basic/v1.6.1/echo-basic")
        );
        let e = images.program("registry.k8s.io/coredns/coredns:v1.12.2").unwrap_err();
        assert!(e.contains("not built"), "{e}");
        let e = images.program("localhost:5000/nginx:1").unwrap_err();
        assert!(e.contains("runs only registry.k8s.io/coredns/coredns, registry.k8s.io/gateway-api/echo-basic"), "{e}");
        assert_eq!(repository("localhost:5000/nginx"), "localhost:5000/nginx");
    }

    #[test]
    fn the_environment_is_the_downward_apis_and_mounts_are_pointed_at_the_pods_folder() {
        let p = pod(json!({
            "metadata": {"name": "infra-backend-v1-abc", "namespace": "gateway-conformance-infra", "uid": "u1", "labels": {"app": "x"}},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "echo-basic", "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "TLS_SERVER_CERT", "value": "/etc/secret-volume/crt"}]}]},
        }));
        let c = &p.spec.as_ref().unwrap().containers[0];
        let env = env_of(&p, c, Ipv4Addr::new(10, 244, 1, 2), Ipv4Addr::new(10, 244, 1, 1)).unwrap();
        let env: BTreeMap<_, _> = env.into_iter().collect();
        assert_eq!(env["POD_NAME"], "infra-backend-v1-abc");
        assert_eq!(env["NAMESPACE"], "gateway-conformance-infra");
        assert_eq!(env["IP"], "10.244.1.2");
        assert_eq!(env["APP"], "x");
        let mounts = vec![("/etc/secret-volume".to_string(), PathBuf::from("/w/p/volumes/secret-volume"))];
        assert_eq!(rewrite(&env["TLS_SERVER_CERT"], &mounts), "/w/p/volumes/secret-volume/crt");
        assert_eq!(rewrite("/etc/secret-volumes", &mounts), "/etc/secret-volumes", "only the mount path itself or under it");
        assert_eq!(rewrite("-conf", &mounts), "-conf");

        let secret = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "env": [
            {"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}}));
        let e = env_of(&secret, &secret.spec.as_ref().unwrap().containers[0], Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST).unwrap_err();
        assert!(e.contains("only fieldRef"), "{e}");
    }

    #[test]
    fn a_command_must_be_the_images_own_program() {
        let c: Container = serde_json::from_value(json!({"name": "coredns", "args": ["-conf", "/root/Corefile"]})).unwrap();
        assert_eq!(command_of(&c, Path::new("/cp/coredns")).unwrap(), vec!["-conf", "/root/Corefile"]);
        let c: Container = serde_json::from_value(json!({"name": "c", "command": ["/bin/sh", "-c", "x"]})).unwrap();
        assert!(command_of(&c, Path::new("/cp/echo-basic")).unwrap_err().contains("only the image's own entrypoint"));
        let c: Container = serde_json::from_value(json!({"name": "c", "command": ["/echo-basic"], "args": ["a"]})).unwrap();
        assert_eq!(command_of(&c, Path::new("/cp/echo-basic")).unwrap(), vec!["a"]);
    }

    #[test]
    fn listening_sockets_are_read_from_procs_tcp_table() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                    0: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
                    1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2\n";
        assert_eq!(parse_ports(text, "0A"), vec![3000]);
        let six = "  sl  local_address                         remote_address                        st\n\
                   0: 00000000000000000000000000000000:2382 00000000000000000000000000000000:0000 0A\n";
        assert_eq!(parse_ports(six, "0A"), vec![9090]);
    }

    #[test]
    fn a_udp_server_is_seen_by_a_socket_bound_on_a_port_its_pod_declares_for_udp() {
        // The suite's UDPRoute backends: echo-basic with UDP_ECHO_SERVER binds UDP 8080 only.
        let p = pod(serde_json::json!({
            "metadata": {"name": "udp-attach-backend-1-x", "namespace": "gateway-conformance-infra", "uid": "u"},
            "spec": {"containers": [{"name": "udp-backend", "image": "registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2",
                "ports": [{"containerPort": 8080, "protocol": "UDP"}, {"containerPort": 3000}]}]}
        }));
        assert_eq!(declared_udp_ports(&p), vec![8080]);
        // A socket of this process, bound as the server binds its own: seen on its port only.
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let me = [std::process::id()];
        assert!(binds_udp(&me, &[port]));
        assert!(!binds_udp(&me, &[]), "a pod that declares no UDP port is not Ready by a UDP socket");
        drop(socket);
        assert!(!binds_udp(&me, &[port]), "a socket closed is not bound");
        let udp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
                   1: 00000000:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0 0\n\
                   2: 0100007F:A000 0200007F:0035 01 00000000:00000000 00:00000000 00000000     0        0 4 2 0 0\n";
        assert_eq!(parse_ports(udp, "07"), vec![8080]);
    }

    #[test]
    fn a_pod_that_cannot_run_is_pending_and_says_why() {
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.2"}]}}),
        );
        let s = status_waiting(&p, "NoProgramForImage", "no program for image registry.k8s.io/coredns/coredns:v1.12.2: not built");
        assert_eq!(s["phase"], "Pending");
        assert_eq!(s["containerStatuses"][0]["state"]["waiting"]["reason"], "NoProgramForImage");
        assert_eq!(s["conditions"][2]["type"], "Ready");
        assert_eq!(s["conditions"][2]["status"], "False");
        let r = status_running(&p, Ipv4Addr::new(10, 244, 1, 2), Ipv4Addr::new(10, 244, 1, 1), true);
        assert_eq!(r["podIP"], "10.244.1.2");
        assert_eq!(r["conditions"][3]["status"], "True");
    }
}
