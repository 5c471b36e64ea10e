//! Bringing a cluster up for a Cilium version: create (or reuse, or take an existing context
//! explicitly), install the Gateway API CRDs and the pinned Cilium, wait for it, and give the
//! Gateway an address on the kind network. Each step is timed into the run's phases; each
//! failure names its phase and the last state seen.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::lanes::cluster::config::KindFiles;
use crate::lanes::cluster::driver::{Driver, KubeTarget, ObjRef, Selection, WaitSpec};
use crate::lanes::cluster::failure::{PhaseError, PhaseLog, wait_ok};
use crate::lanes::cluster::install;
use crate::lanes::cluster::manifests::Marker;
use crate::lanes::cluster::names::{ClusterName, MARKER_NAME, MARKER_NAMESPACE};
use crate::lanes::cluster::setup::Setup;
use crate::lanes::cluster::subnet::{self, PoolBlock};
use crate::lanes::cluster::teardown::{CreatedCluster, Teardown};
use crate::lanes::cluster::timeouts::ClusterTimeouts;
use crate::lanes::cluster::tools::{self, Engine, RunPaths};
use crate::lanes::cluster::track::{AllOf, DaemonSetReady, DeploymentAvailable};
use crate::versions::{CiliumPin, Pins};

/// Which cluster the run uses. Only `Create` can lead to a deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Create `name`; delete it at the end unless `keep`.
    Create { name: ClusterName, keep: bool },
    /// A cluster an earlier run created and kept; never deleted.
    Reuse { name: ClusterName },
    /// A context the user named explicitly; nothing cluster-wide is installed or deleted.
    Existing { context: String },
}

impl Target {
    pub fn describe(&self) -> String {
        match self {
            Target::Create { name, .. } => format!("kind cluster {name}"),
            Target::Reuse { name } => format!("kind cluster {name} (reused)"),
            Target::Existing { context } => format!("existing cluster, context {context}"),
        }
    }
}

/// Everything the bring-up needs.
pub struct Plan<'a> {
    pub pins: &'a Pins,
    pub pin: &'a CiliumPin,
    pub files: &'a KindFiles,
    pub target: Target,
    pub engine: Engine,
    pub paths: RunPaths,
    pub run_id: String,
    pub timeouts: ClusterTimeouts,
}

/// A cluster ready for cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReady {
    pub kube: KubeTarget,
    pub target: Target,
    /// Versions and image digests, for evidence `environment`.
    pub environment: BTreeMap<String, String>,
}

impl<'a> Plan<'a> {
    /// The bring-up of `setup`'s version on `target`.
    pub fn new(setup: &'a Setup, target: Target, engine: Engine, paths: RunPaths, run_id: &str) -> Result<Self, String> {
        let pin = setup.pins.get(&setup.version).ok_or_else(|| format!("Cilium {} is not pinned", setup.version))?;
        Ok(Plan {
            pins: &setup.pins,
            pin,
            files: &setup.files,
            target,
            engine,
            paths,
            run_id: run_id.to_string(),
            timeouts: setup.timeouts,
        })
    }

    fn marker(&self) -> Marker {
        let cluster = match &self.target {
            Target::Create { name, .. } | Target::Reuse { name } => name.to_string(),
            Target::Existing { context } => context.clone(),
        };
        Marker {
            cluster,
            cilium: self.pin.version.to_string(),
            chart: self.pin.chart.clone(),
            values_sha256: self.files.values_digest(),
            gateway_api: self.pin.gateway_api.url.clone(),
            node_image: self.pin.node.image().to_string(),
            run: self.run_id.clone(),
        }
    }
}

/// Runs one phase: heading, timing, and the phase name on any error.
macro_rules! phase {
    ($d:expr, $log:expr, $name:expr, $body:expr) => {{
        $d.section($name);
        $log.begin($name);
        let r: Result<_, PhaseError> = $body.await;
        $log.end();
        r?
    }};
}

pub async fn bring_up<D: Driver>(
    d: &mut D,
    plan: &Plan<'_>,
    teardown: &mut Teardown,
    log: &mut PhaseLog,
) -> Result<ClusterReady, PhaseError> {
    let t = &plan.timeouts;
    let kube = match &plan.target {
        Target::Create { name, keep } => {
            phase!(d, log, "create cluster", create(d, plan, name, *keep, teardown))
        }
        Target::Reuse { name } => {
            teardown.keep(format!("kind cluster {name} (reused)"));
            phase!(d, log, "reuse cluster", reuse(d, plan, name))
        }
        Target::Existing { context } => {
            teardown.keep(format!("existing cluster {context} (not created by layout-gate)"));
            let kube = KubeTarget { kubeconfig: None, context: context.clone() };
            phase!(d, log, "connect to existing cluster", async {
                d.connect(&kube, t.api_ready).await.map_err(|e| PhaseError::step("connect to existing cluster", e))?;
                Ok(kube.clone())
            })
        }
    };
    let mut environment = BTreeMap::new();
    environment.insert("cluster".to_string(), plan.target.describe());
    if let Target::Create { .. } = plan.target {
        phase!(d, log, "install Gateway API CRDs", install_crds(d, plan));
        phase!(d, log, "install Cilium", install_cilium(d, plan, &kube.context));
    } else {
        phase!(d, log, "check Cilium version", check_running_version(d, plan));
    }
    phase!(d, log, "wait for Cilium", wait_cilium(d, plan));
    if !matches!(plan.target, Target::Existing { .. }) {
        let block = phase!(d, log, "LB IPAM pool and L2 policy", lb(d, plan));
        environment.insert("lb_ipam_block".into(), block.to_string());
    }
    environment.insert("cilium_chart".into(), format!("cilium {} from {}", plan.pin.chart, plan.pins.helm.repo));
    environment.insert(
        "gateway_api_crds".into(),
        format!("{} {} {}", plan.pin.gateway_api.version, plan.pin.gateway_api.channel, plan.pin.gateway_api.url),
    );
    environment.insert("helm_values_sha256".into(), plan.files.values_digest());
    if !matches!(plan.target, Target::Existing { .. }) {
        environment.insert("kind_node_image".into(), plan.pin.node.image().to_string());
        // Next to the image, so no reader of the evidence takes an untested pairing for a
        // tested one.
        environment.insert("kind_node_kubernetes".into(), plan.pin.node.pairing());
    }
    environment.extend(running_images(d).await);
    Ok(ClusterReady { kube, target: plan.target.clone(), environment })
}

async fn create<D: Driver>(
    d: &mut D,
    plan: &Plan<'_>,
    name: &ClusterName,
    keep: bool,
    teardown: &mut Teardown,
) -> Result<KubeTarget, PhaseError> {
    const P: &str = "create cluster";
    let t = &plan.timeouts;
    let listed = d.tool(&tools::kind_get_clusters(plan.engine, t.tool_query)).await.map_err(|e| PhaseError::step(P, e))?;
    if listed.lines().any(|l| l.trim() == name.as_str()) {
        return Err(PhaseError::new(P, format!("a kind cluster named {name} already exists"))
            .with_state(format!("kind get clusters:\n{}", listed.trim()))
            .with_hint(format!("reuse it with --reuse-cluster {name}, or delete it with `kind delete cluster --name {name}`")));
    }
    d.write_file(&plan.paths.kind_config(), &plan.files.cluster_yaml).await.map_err(|e| PhaseError::step(P, e))?;
    // Registered before creating: from here on, a cluster of this name is ours, even one a
    // killed `kind create` left half-made.
    let created = CreatedCluster::about_to_create(name, plan.engine, &plan.paths, t.cluster_delete);
    if keep {
        teardown.keep(format!("kind cluster {name} (--keep-cluster; delete with `kind delete cluster --name {name}`)"));
    } else {
        teardown.push_cluster(created);
    }
    d.tool(&tools::kind_create(plan.engine, name, plan.pin.node.image(), &plan.paths, t.cluster_create))
        .await
        .map_err(|e| PhaseError::step(P, e))?;
    let kube = KubeTarget { kubeconfig: Some(plan.paths.kubeconfig()), context: name.context() };
    d.connect(&kube, t.api_ready).await.map_err(|e| PhaseError::step(P, e))?;
    d.apply(&[plan.marker().to_object()], None).await.map_err(|e| PhaseError::step(P, e))?;
    Ok(kube)
}

async fn reuse<D: Driver>(d: &mut D, plan: &Plan<'_>, name: &ClusterName) -> Result<KubeTarget, PhaseError> {
    const P: &str = "reuse cluster";
    let t = &plan.timeouts;
    let listed = d.tool(&tools::kind_get_clusters(plan.engine, t.tool_query)).await.map_err(|e| PhaseError::step(P, e))?;
    if !d.dry() && !listed.lines().any(|l| l.trim() == name.as_str()) {
        return Err(
            PhaseError::new(P, format!("no kind cluster named {name}")).with_state(format!("kind get clusters:\n{}", listed.trim()))
        );
    }
    d.tool(&tools::kind_export_kubeconfig(plan.engine, name, &plan.paths, t.tool_query)).await.map_err(|e| PhaseError::step(P, e))?;
    let kube = KubeTarget { kubeconfig: Some(plan.paths.kubeconfig()), context: name.context() };
    d.connect(&kube, t.api_ready).await.map_err(|e| PhaseError::step(P, e))?;
    let marker_ref = ObjRef::new("v1", "ConfigMap", Some(MARKER_NAMESPACE), MARKER_NAME);
    let found = d.get(&marker_ref).await.map_err(|e| PhaseError::step(P, e))?;
    let values = d.tool(&tools::helm_get_values(&plan.paths, &kube.context, t.helm_query)).await.map_err(|e| PhaseError::step(P, e))?;
    let releases = d.tool(&tools::helm_list(&plan.paths, &kube.context, t.helm_query)).await.map_err(|e| PhaseError::step(P, e))?;
    if d.dry() {
        return Ok(kube);
    }
    let problems = reuse_problems(found.as_ref(), &plan.marker(), &plan.files.values, &values, &releases);
    if !problems.is_empty() {
        return Err(PhaseError::new(P, format!("refusing to reuse {name}: it is not the cluster this run would create"))
            .with_state(problems.join("\n"))
            .with_hint(format!("run without --reuse-cluster to create a fresh cluster (after `kind delete cluster --name {name}`)")));
    }
    Ok(kube)
}

/// Why a cluster cannot be reused: its marker, its Helm values and its chart must all be what
/// this run would install.
pub fn reuse_problems(marker: Option<&Value>, wanted: &Marker, wanted_values: &Value, helm_values: &str, helm_list: &str) -> Vec<String> {
    let mut out = Vec::new();
    match marker.and_then(Marker::from_object) {
        None => {
            out.push(format!("no layout-gate marker (ConfigMap {MARKER_NAMESPACE}/{MARKER_NAME}): layout-gate did not create this cluster"))
        }
        Some(m) => out.extend(m.mismatches(wanted)),
    }
    match serde_json::from_str::<Value>(helm_values.trim()) {
        Ok(v) => out.extend(value_differences("", wanted_values, &v).into_iter().map(|d| format!("Helm values differ: {d}"))),
        Err(e) => out.push(format!("`helm get values` output is not JSON: {e}")),
    }
    let chart = format!("cilium-{}", wanted.chart);
    match serde_json::from_str::<Value>(helm_list.trim()) {
        Ok(Value::Array(rs)) => match rs.iter().find(|r| r.get("name").and_then(Value::as_str) == Some("cilium")) {
            None => out.push("no Helm release `cilium` in kube-system".into()),
            Some(r) => {
                let have = r.get("chart").and_then(Value::as_str).unwrap_or("?");
                if have != chart {
                    out.push(format!("Helm release cilium runs chart {have}, this run wants {chart}"));
                }
                let status = r.get("status").and_then(Value::as_str).unwrap_or("?");
                if status != "deployed" {
                    out.push(format!("Helm release cilium is {status}, not deployed"));
                }
            }
        },
        _ => out.push("`helm list` output is not a JSON list".into()),
    }
    out
}

/// Paths where two JSON values differ, as `path: wanted X, got Y`.
pub fn value_differences(path: &str, want: &Value, got: &Value) -> Vec<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut keys: Vec<&String> = w.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    match (w.get(k), g.get(k)) {
                        (Some(a), Some(b)) => value_differences(&p, a, b),
                        (Some(a), None) => vec![format!("{p}: wanted {a}, not set")],
                        (None, Some(b)) => vec![format!("{p}: not wanted, set to {b}")],
                        (None, None) => vec![],
                    }
                })
                .collect()
        }
        (a, b) if a == b => vec![],
        (a, b) => vec![format!("{}: wanted {a}, got {b}", if path.is_empty() { "(root)" } else { path })],
    }
}

async fn install_crds<D: Driver>(d: &mut D, plan: &Plan<'_>) -> Result<(), PhaseError> {
    const P: &str = "install Gateway API CRDs";
    let t = &plan.timeouts;
    let b = &plan.pin.gateway_api;
    d.note(&format!("Gateway API {} {} channel (Cilium {} needs it: {})", b.version, b.channel, plan.pin.version, b.key));
    d.tool(&tools::crd_download(&b.url, &plan.paths, t.crd_download)).await.map_err(|e| PhaseError::step(P, e))?;
    let applied = d.apply_file(&plan.paths.crds()).await.map_err(|e| PhaseError::step(P, e))?;
    let names: Vec<String> = applied.iter().filter(|r| r.gvk.kind == "CustomResourceDefinition").map(|r| r.name.clone()).collect();
    if !d.dry() && names.is_empty() {
        return Err(PhaseError::new(P, format!("{} holds no CustomResourceDefinition", b.url)));
    }
    install::crds_established(d, P, "every Gateway API CRD Established", names, t).await
}

async fn install_cilium<D: Driver>(d: &mut D, plan: &Plan<'_>, context: &str) -> Result<(), PhaseError> {
    const P: &str = "install Cilium";
    let folder = plan.files.dir.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    d.note(&format!(
        "Cilium {}: chart cilium {} from {}; values {folder}/{}",
        plan.pin.version,
        plan.pin.chart,
        plan.pins.helm.repo,
        crate::lanes::cluster::config::VALUES_FILE
    ));
    d.write_file(&plan.paths.values(), &plan.files.values_yaml).await.map_err(|e| PhaseError::step(P, e))?;
    d.tool(&tools::helm_install(&plan.pins.helm, plan.pin, &plan.paths, context, plan.timeouts.helm_install)).await.map_err(|e| {
        PhaseError::step(P, e).with_hint(
            "an image that cannot be pulled shows as pods stuck in ErrImagePull/ImagePullBackOff in the diagnostics (kube-system pods)",
        )
    })?;
    Ok(())
}

/// Which Cilium version an agent image runs: `quay.io/cilium/cilium:v1.19.5@sha256:...` → 1.19.5.
pub fn image_version(image: &str) -> Option<String> {
    let no_digest = image.split('@').next()?;
    let (_, tag) = no_digest.rsplit_once(':').filter(|(repo, _)| !repo.ends_with('/') && !repo.is_empty())?;
    if tag.contains('/') {
        return None; // a registry port, not a tag
    }
    Some(tag.trim_start_matches('v').to_string())
}

async fn check_running_version<D: Driver>(d: &mut D, plan: &Plan<'_>) -> Result<(), PhaseError> {
    const P: &str = "check Cilium version";
    let ds = d.get(&ObjRef::new("apps/v1", "DaemonSet", Some("kube-system"), "cilium")).await.map_err(|e| PhaseError::step(P, e))?;
    if d.dry() {
        return Ok(());
    }
    let Some(ds) = ds else {
        return Err(PhaseError::new(P, "no DaemonSet kube-system/cilium: Cilium is not installed in this cluster"));
    };
    let images: Vec<&str> = ds
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("image").and_then(Value::as_str))
        .collect();
    let want = plan.pin.version.to_string();
    match images.first().and_then(|i| image_version(i)) {
        Some(v) if v == want => Ok(()),
        Some(v) => Err(PhaseError::new(P, format!("the cluster runs Cilium {v}, this run is for {want}"))
            .with_state(format!("DaemonSet kube-system/cilium images: {}", images.join(", ")))),
        None => Err(PhaseError::new(P, "cannot tell which Cilium the cluster runs")
            .with_state(format!("DaemonSet kube-system/cilium images: {}", images.join(", ")))),
    }
}

async fn wait_cilium<D: Driver>(d: &mut D, plan: &Plan<'_>) -> Result<(), PhaseError> {
    const P: &str = "wait for Cilium";
    let t = &plan.timeouts;
    let spec = WaitSpec {
        what: "agent (DaemonSet cilium), cilium-envoy (DaemonSet) and operator (Deployment cilium-operator) ready".into(),
        wait: t.cilium_ready,
        watches: vec![
            Selection::all("apps/v1", "DaemonSet", Some("kube-system")),
            Selection::all("apps/v1", "Deployment", Some("kube-system")),
        ],
    };
    let mut tr = AllOf(vec![
        Box::new(DaemonSetReady::new("kube-system", "cilium")),
        Box::new(DaemonSetReady::new("kube-system", "cilium-envoy")),
        Box::new(DeploymentAvailable::new("kube-system", "cilium-operator")),
    ]);
    wait_ok(d, P, &spec, &mut tr).await?;
    install::gatewayclass_accepted(d, P, t).await
}

async fn lb<D: Driver>(d: &mut D, plan: &Plan<'_>) -> Result<PoolBlock, PhaseError> {
    const P: &str = "LB IPAM pool and L2 policy";
    let t = &plan.timeouts;
    let out = d.tool(&tools::network_inspect(plan.engine, t.tool_query)).await.map_err(|e| PhaseError::step(P, e))?;
    let block = if d.dry() {
        let example: subnet::Ipv4Net = "172.18.0.0/16".parse().map_err(|e: subnet::SubnetError| PhaseError::new(P, e.to_string()))?;
        d.note("the pool below is shown for kind's usual subnet 172.18.0.0/16; a run derives it from the inspect output");
        subnet::pool_block(&example).map_err(|e| PhaseError::new(P, e.to_string()))?
    } else {
        let net = subnet::parse_inspect(&out).map_err(|e| PhaseError::new(P, e.to_string()))?;
        let block = subnet::pool_block(&net).map_err(|e| PhaseError::new(P, e.to_string()))?;
        d.note(&format!("kind network {net}: LB IPAM block {block}"));
        block
    };
    install::lb_pool(d, P, plan.files, &block, t).await?;
    Ok(block)
}

/// The images (with digests) the Cilium pods really run: `image.cilium-agent` etc.
async fn running_images<D: Driver>(d: &mut D) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (key, labels) in [
        ("image.cilium-agent", "k8s-app=cilium"),
        ("image.cilium-operator", "io.cilium/app=operator"),
        ("image.cilium-envoy", "k8s-app=cilium-envoy"),
    ] {
        if let Ok(pods) = d.list(&Selection::labelled("v1", "Pod", Some("kube-system"), labels)).await {
            let images = pod_images(&pods);
            if !images.is_empty() {
                env.insert(key.to_string(), images.join(", "));
            }
        }
    }
    env
}

/// Distinct `image (imageID)` of the containers of `pods`: the tag asked for and the digest
/// that really runs.
pub fn pod_images(pods: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = pods
        .iter()
        .flat_map(|p| p.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default())
        .map(|cs| {
            let image = cs.get("image").and_then(Value::as_str).unwrap_or("?");
            match cs.get("imageID").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(id) => format!("{image} ({id})"),
                None => image.to_string(),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn marker() -> Marker {
        Marker {
            cluster: "layout-gate-1-19-5".into(),
            cilium: "1.19.5".into(),
            chart: "1.19.5".into(),
            values_sha256: "aa".into(),
            gateway_api: "u".into(),
            node_image: "i".into(),
            run: "r".into(),
        }
    }

    #[test]
    fn reuse_is_refused_with_every_reason() {
        let values = json!({"kubeProxyReplacement": true, "gatewayAPI": {"enabled": true}});
        let list_ok = r#"[{"name":"cilium","namespace":"kube-system","revision":"1","status":"deployed","chart":"cilium-1.19.5","app_version":"1.19.5"}]"#;
        let m = marker().to_object();
        assert!(reuse_problems(Some(&m), &marker(), &values, &values.to_string(), list_ok).is_empty());
        let p = reuse_problems(
            None,
            &marker(),
            &values,
            r#"{"kubeProxyReplacement": false, "gatewayAPI": {"enabled": true}, "debug": {"enabled": true}}"#,
            r#"[{"name":"cilium","status":"failed","chart":"cilium-1.19.6"}]"#,
        );
        assert_eq!(
            p,
            vec![
                "no layout-gate marker (ConfigMap kube-system/layout-gate-cluster): layout-gate did not create this cluster".to_string(),
                "Helm values differ: debug: not wanted, set to {\"enabled\":true}".to_string(),
                "Helm values differ: kubeProxyReplacement: wanted true, got false".to_string(),
                "Helm release cilium runs chart cilium-1.19.6, this run wants cilium-1.19.5".to_string(),
                "Helm release cilium is failed, not deployed".to_string(),
            ]
        );
        assert_eq!(reuse_problems(Some(&m), &marker(), &values, "nope", "[]").len(), 2);
    }

    #[test]
    fn image_versions() {
        assert_eq!(image_version("quay.io/cilium/cilium:v1.19.5@sha256:20fbbc14").as_deref(), Some("1.19.5"));
        assert_eq!(image_version("quay.io/cilium/cilium:v1.20.1").as_deref(), Some("1.20.1"));
        assert_eq!(image_version("localhost:5000/cilium"), None);
        assert_eq!(image_version("cilium"), None);
    }

    #[test]
    fn images_with_digests() {
        let pods = [
            json!({"status": {"containerStatuses": [{"image": "quay.io/cilium/cilium:v1.19.5", "imageID": "quay.io/cilium/cilium@sha256:20fb"}]}}),
            json!({"status": {"containerStatuses": [{"image": "quay.io/cilium/cilium:v1.19.5", "imageID": "quay.io/cilium/cilium@sha256:20fb"}]}}),
        ];
        assert_eq!(pod_images(&pods), vec!["quay.io/cilium/cilium:v1.19.5 (quay.io/cilium/cilium@sha256:20fb)".to_string()]);
    }

    #[test]
    fn a_reused_cluster_must_run_this_versions_own_node_image() {
        let img_134 = "kindest/node:v1.34.11@sha256:44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d";
        let pins = crate::versions::pins_with_node("1.19.6", img_134, "1.34").unwrap_or_else(|p| panic!("{p:#?}"));
        let files = KindFiles::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kind-config"), false).unwrap();
        let plan = |v: &str| {
            let pin = pins.pick(v).unwrap();
            Plan {
                pins: &pins,
                pin,
                files: &files,
                target: Target::Reuse { name: ClusterName::for_version(&pin.version) },
                engine: Engine::Docker,
                paths: RunPaths::dry(),
                run_id: "r".into(),
                timeouts: ClusterTimeouts::default(),
            }
        };
        let (old, new) = (plan("1.19.5").marker(), plan("1.19.6").marker());
        assert_eq!(new.node_image, img_134);
        assert_ne!(old.node_image, new.node_image, "each version's marker names its own image");
        // A cluster whose marker names another image (everything else as this run wants it).
        let mut other = new.clone();
        other.node_image = old.node_image.clone();
        let values = files.values.clone();
        let list = r#"[{"name":"cilium","status":"deployed","chart":"cilium-1.19.6"}]"#;
        assert!(reuse_problems(Some(&new.to_object()), &new, &values, &values.to_string(), list).is_empty());
        assert_eq!(
            reuse_problems(Some(&other.to_object()), &new, &values, &values.to_string(), list),
            vec![format!("node image: the cluster has {}, this run wants {img_134}", old.node_image)]
        );
    }
}
