//! The command lines the lane runs: kind, helm, the container engine and curl. Built here as
//! values, so the dry run prints exactly what the live run executes, and tests check them.

use std::fmt;
use std::path::{Path, PathBuf};

use super::names::ClusterName;
use super::timeouts::{Wait, human};
use crate::versions::{CiliumPin, HelmPin, NodeImage};

/// The container engine kind runs nodes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Docker,
    Podman,
}

impl Engine {
    pub fn program(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }
    /// kind talks to podman only when told to.
    fn kind_env(self) -> Vec<(String, String)> {
        match self {
            Engine::Docker => Vec::new(),
            Engine::Podman => vec![("KIND_EXPERIMENTAL_PROVIDER".into(), "podman".into())],
        }
    }
}

/// Why a command runs; the dry run uses it to stand in for the output a later step reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    KindListClusters,
    KindCreate,
    KindExportKubeconfig,
    KindDelete,
    NetworkInspect,
    CrdDownload,
    HelmInstall,
    HelmGetValues,
    HelmList,
    /// The operator lane renders the pinned chart with the Helm it built.
    HelmTemplate,
}

/// One command line, with its environment additions and the named wait that bounds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub purpose: Purpose,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub wait: Wait,
}

impl fmt::Display for ToolCall {
    /// As a shell line a person can paste.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.env {
            write!(f, "{k}={} ", quote(v))?;
        }
        f.write_str(&self.program)?;
        for a in &self.args {
            write!(f, " {}", quote(a))?;
        }
        Ok(())
    }
}

/// Single-quotes an argument when a shell would otherwise split or expand it. `$RUN_DIR`
/// stays unquoted on purpose: the dry run names the run folder that way.
fn quote(s: &str) -> String {
    let safe = |t: &str| t.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@+%".contains(&b));
    let plain = !s.is_empty() && (safe(s) || s.strip_prefix("$RUN_DIR").is_some_and(safe));
    if plain { s.to_string() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

/// The files a run keeps in its private folder (0700; the kubeconfig holds credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPaths {
    pub root: PathBuf,
}

impl RunPaths {
    /// The dry run's stand-in for the private folder made at run time.
    pub fn dry() -> Self {
        RunPaths { root: PathBuf::from("$RUN_DIR") }
    }
    pub fn kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }
    pub fn kind_config(&self) -> PathBuf {
        self.root.join("kind-cluster.yaml")
    }
    pub fn values(&self) -> PathBuf {
        self.root.join("cilium-values.yaml")
    }
    pub fn crds(&self) -> PathBuf {
        self.root.join("gateway-api-crds.yaml")
    }
}

/// `helm template` with the Helm binary at `helm` (the operator lane's, built from its module),
/// its caches and config kept in `home` so nothing of the user's Helm setup is read or written.
pub fn helm_template(helm: &Path, args: Vec<String>, home: &Path, wait: Wait) -> ToolCall {
    let env = ["HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"].iter().map(|k| (k.to_string(), s(home))).collect();
    ToolCall { purpose: Purpose::HelmTemplate, program: s(helm), args, env, wait }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn call(purpose: Purpose, program: &str, args: &[&str], env: Vec<(String, String)>, wait: Wait) -> ToolCall {
    ToolCall { purpose, program: program.into(), args: args.iter().map(|a| a.to_string()).collect(), env, wait }
}

pub fn kind_get_clusters(engine: Engine, wait: Wait) -> ToolCall {
    call(Purpose::KindListClusters, "kind", &["get", "clusters"], engine.kind_env(), wait)
}

/// Creates the cluster from the version's own node image (by digest) and writes its kubeconfig
/// into the run folder only: the user's own kubeconfig is never touched, and no other context
/// can be picked up by mistake.
pub fn kind_create(engine: Engine, name: &ClusterName, image: &NodeImage, paths: &RunPaths, wait: Wait) -> ToolCall {
    let (cfg, kc) = (s(&paths.kind_config()), s(&paths.kubeconfig()));
    call(
        Purpose::KindCreate,
        "kind",
        &["create", "cluster", "--name", name.as_str(), "--image", image.as_str(), "--config", &cfg, "--kubeconfig", &kc],
        engine.kind_env(),
        wait,
    )
}

/// For a reused cluster: its kubeconfig, into the run folder.
pub fn kind_export_kubeconfig(engine: Engine, name: &ClusterName, paths: &RunPaths, wait: Wait) -> ToolCall {
    let kc = s(&paths.kubeconfig());
    call(
        Purpose::KindExportKubeconfig,
        "kind",
        &["export", "kubeconfig", "--name", name.as_str(), "--kubeconfig", &kc],
        engine.kind_env(),
        wait,
    )
}

pub fn kind_delete(engine: Engine, name: &ClusterName, paths: &RunPaths, wait: Wait) -> ToolCall {
    let kc = s(&paths.kubeconfig());
    call(Purpose::KindDelete, "kind", &["delete", "cluster", "--name", name.as_str(), "--kubeconfig", &kc], engine.kind_env(), wait)
}

pub fn network_inspect(engine: Engine, wait: Wait) -> ToolCall {
    call(Purpose::NetworkInspect, engine.program(), &["network", "inspect", "kind"], Vec::new(), wait)
}

/// curl is on every Linux runner and dev machine; it follows GitHub's release redirects and
/// retries, which a hand-rolled client here would have to reimplement.
pub fn crd_download(url: &str, paths: &RunPaths, wait: Wait) -> ToolCall {
    let dest = s(&paths.crds());
    let max = wait.limit.as_secs().max(1).to_string();
    call(
        Purpose::CrdDownload,
        "curl",
        &["--fail", "--silent", "--show-error", "--location", "--retry", "3", "--max-time", &max, "--output", &dest, url],
        Vec::new(),
        wait,
    )
}

fn kube_flags(paths: &RunPaths, context: &str) -> Vec<String> {
    vec!["--namespace".into(), "kube-system".into(), "--kubeconfig".into(), s(&paths.kubeconfig()), "--kube-context".into(), context.into()]
}

/// `helm upgrade --install` of the pinned chart with the lane's values, waiting for the
/// release's resources. helm's own timeout is the named wait; the process gets a minute more
/// so helm, not the harness, reports what it was waiting for.
pub fn helm_install(helm: &HelmPin, pin: &CiliumPin, paths: &RunPaths, context: &str, wait: Wait) -> ToolCall {
    let mut args: Vec<String> =
        ["upgrade", "--install", "cilium", "cilium", "--repo", &helm.repo, "--version", &pin.chart].iter().map(|a| a.to_string()).collect();
    args.extend(kube_flags(paths, context));
    args.extend(["--values".to_string(), s(&paths.values()), "--wait".into(), "--timeout".into(), human(wait.limit)]);
    let mut outer = wait;
    outer.limit += std::time::Duration::from_secs(60);
    ToolCall { purpose: Purpose::HelmInstall, program: "helm".into(), args, env: Vec::new(), wait: outer }
}

pub fn helm_get_values(paths: &RunPaths, context: &str, wait: Wait) -> ToolCall {
    let mut args: Vec<String> = vec!["get".into(), "values".into(), "cilium".into()];
    args.extend(kube_flags(paths, context));
    args.extend(["--output".into(), "json".into()]);
    ToolCall { purpose: Purpose::HelmGetValues, program: "helm".into(), args, env: Vec::new(), wait }
}

pub fn helm_list(paths: &RunPaths, context: &str, wait: Wait) -> ToolCall {
    let mut args: Vec<String> = vec!["list".into()];
    args.extend(kube_flags(paths, context));
    args.extend(["--filter".into(), "^cilium$".into(), "--output".into(), "json".into()]);
    ToolCall { purpose: Purpose::HelmList, program: "helm".into(), args, env: Vec::new(), wait }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::timeouts::ClusterTimeouts;
    use crate::versions::Pins;

    #[test]
    fn command_lines() {
        let pins = Pins::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::versions::VERSIONS_FILE)).unwrap();
        let pin = pins.pick("1.19.5").unwrap();
        let t = ClusterTimeouts::default();
        let name = ClusterName::for_version(&pin.version);
        let p = RunPaths::dry();
        assert_eq!(
            kind_create(Engine::Podman, &name, pin.node.image(), &p, t.cluster_create).to_string(),
            format!(
                "KIND_EXPERIMENTAL_PROVIDER=podman kind create cluster --name layout-gate-1-19-5 --image {} --config $RUN_DIR/kind-cluster.yaml --kubeconfig $RUN_DIR/kubeconfig",
                pin.node.image()
            )
        );
        let h = helm_install(&pins.helm, pin, &p, &name.context(), t.helm_install);
        assert_eq!(
            h.to_string(),
            "helm upgrade --install cilium cilium --repo https://helm.cilium.io/ --version 1.19.5 --namespace kube-system --kubeconfig $RUN_DIR/kubeconfig --kube-context kind-layout-gate-1-19-5 --values $RUN_DIR/cilium-values.yaml --wait --timeout 15m"
        );
        assert_eq!(h.wait.limit, t.helm_install.limit + std::time::Duration::from_secs(60));
        assert_eq!(
            helm_list(&p, "c", t.helm_query).to_string(),
            "helm list --namespace kube-system --kubeconfig $RUN_DIR/kubeconfig --kube-context c --filter '^cilium$' --output json"
        );
        assert!(
            crd_download("https://x/y.yaml", &p, t.crd_download)
                .to_string()
                .ends_with("--max-time 120 --output $RUN_DIR/gateway-api-crds.yaml https://x/y.yaml")
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
