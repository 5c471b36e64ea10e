//! What a failure leaves for a person to read, collected before anything is deleted: the
//! Gateway and routes with status, the namespace's events and pods, the CiliumEnvoyConfig,
//! and the operator, agent and cilium-envoy logs since the case started. Written next to the
//! evidence files as `diagnostics/<case>/`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::driver::{Driver, ObjRef, Selection};
use super::manifests::to_yaml;
use super::timeouts::ClusterTimeouts;
use crate::case::manifests::ROUTE_KINDS;

/// Files of one diagnostics folder, in memory until written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Diagnostics {
    pub files: Vec<(String, String)>,
}

impl Diagnostics {
    pub fn add(&mut self, name: &str, text: String) {
        if !text.trim().is_empty() {
            self.files.push((name.to_string(), text));
        }
    }
}

/// Objects as YAML with managedFields dropped (noise for a reader).
fn yaml(mut objects: Vec<Value>) -> String {
    for o in &mut objects {
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
    }
    to_yaml(&objects)
}

/// Events as one line each, oldest first.
pub fn events_text(events: &[Value]) -> String {
    let s = |e: &Value, p: &str| e.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let mut rows: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            let when = [s(e, "/lastTimestamp"), s(e, "/eventTime"), s(e, "/metadata/creationTimestamp")]
                .into_iter()
                .find(|t| !t.is_empty())
                .unwrap_or_default();
            let line = format!(
                "{when} {} {} {}/{}: {}",
                s(e, "/type"),
                s(e, "/reason"),
                s(e, "/involvedObject/kind"),
                s(e, "/involvedObject/name"),
                s(e, "/message").trim()
            );
            (when, line)
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, l)| l).collect::<Vec<_>>().join("\n")
}

async fn logs_of<D: Driver>(d: &mut D, dg: &mut Diagnostics, labels: &str, container: Option<&str>, file: &str, since: Option<i64>) {
    match d.list(&Selection::labelled("v1", "Pod", Some("kube-system"), labels)).await {
        Ok(pods) => {
            for p in pods {
                let Some(name) = p.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string) else { continue };
                let node = p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("?").to_string();
                let r = ObjRef::new("v1", "Pod", Some("kube-system"), &name);
                let text = match d.logs(&r, container, since).await {
                    Ok(t) => t,
                    Err(e) => format!("(could not read: {e})"),
                };
                dg.add(&format!("{file}-{node}-{name}.log"), text);
            }
        }
        Err(e) => dg.add(&format!("{file}.log"), format!("(could not list pods {labels}: {e})")),
    }
}

async fn collect_case_inner<D: Driver>(d: &mut D, ns: &str, gateways: &[String], since: i64, dg: &mut Diagnostics) {
    // Every Gateway of the case, in one file (the case's own first).
    let mut text = Vec::new();
    for gateway in gateways {
        let get = ObjRef::new("gateway.networking.k8s.io/v1", "Gateway", Some(ns), gateway);
        text.push(match d.get(&get).await {
            Ok(Some(g)) => yaml(vec![g]),
            Ok(None) => format!("# Gateway {ns}/{gateway} does not exist\n"),
            Err(e) => format!("# {e}\n"),
        });
    }
    dg.add("gateway.yaml", text.join("---\n"));
    // A cluster without the ListenerSet kind answers the listing with an error: said so.
    match d.list(&Selection::all("gateway.networking.k8s.io/v1", "ListenerSet", Some(ns))).await {
        Ok(l) => dg.add("listenersets.yaml", yaml(l)),
        Err(e) => dg.add("listenersets.yaml", format!("# {e}\n")),
    }
    let mut routes = Vec::new();
    for kind in ROUTE_KINDS {
        // The newest version first: Gateway API 1.6 serves TLSRoute at v1, 1.4 only at v1alpha2;
        // the first version that answers is the one listed, so no route shows twice.
        let versions: &[&str] = match *kind {
            "HTTPRoute" | "GRPCRoute" => &["v1"],
            "TLSRoute" => &["v1", "v1alpha2"],
            _ => &["v1alpha2"],
        };
        for v in versions {
            if let Ok(list) = d.list(&Selection::all(&format!("gateway.networking.k8s.io/{v}"), kind, Some(ns))).await {
                routes.extend(list);
                break;
            }
        }
    }
    dg.add("routes.yaml", yaml(routes));
    if let Ok(ev) = d.list(&Selection::all("v1", "Event", Some(ns))).await {
        dg.add("events.txt", events_text(&ev));
    }
    if let Ok(pods) = d.list(&Selection::all("v1", "Pod", Some(ns))).await {
        dg.add("pods.yaml", yaml(pods));
    }
    if let Ok(svcs) = d.list(&Selection::all("v1", "Service", Some(ns))).await {
        dg.add("services.yaml", yaml(svcs));
    }
    match d.list(&Selection::all("cilium.io/v2", "CiliumEnvoyConfig", Some(ns))).await {
        Ok(c) => dg.add("ciliumenvoyconfig.yaml", yaml(c)),
        Err(e) => dg.add("ciliumenvoyconfig.yaml", format!("# {e}\n")),
    }
    if let Ok(pools) = d.list(&Selection::all("cilium.io/v2", "CiliumLoadBalancerIPPool", None)).await {
        dg.add("lb-pools.yaml", yaml(pools));
    }
    logs_of(d, dg, "io.cilium/app=operator", None, "cilium-operator", Some(since)).await;
    logs_of(d, dg, "k8s-app=cilium-envoy", None, "cilium-envoy", Some(since)).await;
    logs_of(d, dg, "k8s-app=cilium", Some("cilium-agent"), "cilium-agent", Some(since)).await;
}

/// A failed case's diagnostics; never fails itself (what could not be read says so), and is
/// bounded by the diagnostics wait.
pub async fn collect_case<D: Driver>(d: &mut D, ns: &str, gateways: &[String], since_seconds: i64, t: &ClusterTimeouts) -> Diagnostics {
    let mut dg = Diagnostics::default();
    if tokio::time::timeout(t.diagnostics.limit, collect_case_inner(d, ns, gateways, since_seconds, &mut dg)).await.is_err() {
        dg.add("notes.txt", format!("collection stopped after {}s ({})", t.diagnostics.limit.as_secs(), t.diagnostics.var));
    }
    dg
}

async fn collect_cluster_inner<D: Driver>(d: &mut D, dg: &mut Diagnostics) {
    if let Ok(pods) = d.list(&Selection::all("v1", "Pod", Some("kube-system"))).await {
        dg.add("kube-system-pods.yaml", yaml(pods));
    }
    if let Ok(ev) = d.list(&Selection::all("v1", "Event", Some("kube-system"))).await {
        dg.add("kube-system-events.txt", events_text(&ev));
    }
    if let Ok(nodes) = d.list(&Selection::all("v1", "Node", None)).await {
        dg.add("nodes.yaml", yaml(nodes));
    }
    if let Ok(gc) = d.list(&Selection::all("gateway.networking.k8s.io/v1", "GatewayClass", None)).await {
        dg.add("gatewayclasses.yaml", yaml(gc));
    }
    logs_of(d, dg, "io.cilium/app=operator", None, "cilium-operator", None).await;
    logs_of(d, dg, "k8s-app=cilium-envoy", None, "cilium-envoy", None).await;
    logs_of(d, dg, "k8s-app=cilium", Some("cilium-agent"), "cilium-agent", None).await;
}

/// Diagnostics of a cluster phase that failed (kube-system, nodes, Cilium logs).
pub async fn collect_cluster<D: Driver>(d: &mut D, t: &ClusterTimeouts) -> Diagnostics {
    let mut dg = Diagnostics::default();
    if tokio::time::timeout(t.diagnostics.limit, collect_cluster_inner(d, &mut dg)).await.is_err() {
        dg.add("notes.txt", format!("collection stopped after {}s ({})", t.diagnostics.limit.as_secs(), t.diagnostics.var));
    }
    dg
}

/// Why the diagnostics were not written: what was being done, to which path, and the io error.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{action} {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
    #[error("renaming diagnostics into {}: {source}", .path.display())]
    Place { path: PathBuf, source: crate::output::dest::DestError },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + use<> {
    let path = path.to_path_buf();
    move |source| WriteError::Io { action, path, source }
}

/// Writes every folder under `dest/diagnostics/` through a temporary folder renamed into
/// place, so a reader sees all diagnostics or none. Returns the folder.
pub fn write_all(dest: &Path, folders: &[(String, Diagnostics)]) -> Result<Option<PathBuf>, WriteError> {
    if folders.iter().all(|(_, d)| d.files.is_empty()) {
        return Ok(None);
    }
    let tmp = crate::scratch::Scratch::new_in(dest, crate::scratch::DIAGNOSTICS, "").map_err(io("creating a temporary folder in", dest))?;
    for (folder, dg) in folders {
        let dir = tmp.path().join(safe(folder));
        fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
        for (name, text) in &dg.files {
            let p = dir.join(safe(name));
            fs::write(&p, text).map_err(io("writing", &p))?;
        }
    }
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).map_err(io("permissions of", tmp.path()))?;
    }
    let final_dir = dest.join("diagnostics");
    let kept = tmp.keep();
    crate::output::dest::place_new_dir(&kept, &final_dir).map_err(|source| {
        let _ = fs::remove_dir_all(&kept);
        WriteError::Place { path: final_dir.clone(), source }
    })?;
    Ok(Some(final_dir))
}

/// A file or folder name from free text: no separators, no leading dot.
fn safe(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    s.trim_start_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_sorted_one_per_line() {
        let ev = [
            json!({"lastTimestamp": "2026-01-01T00:00:05Z", "type": "Warning", "reason": "Failed", "involvedObject": {"kind": "Pod", "name": "api-1-a"}, "message": "Failed to pull image \"x\": not found\n"}),
            json!({"lastTimestamp": "2026-01-01T00:00:01Z", "type": "Normal", "reason": "Scheduled", "involvedObject": {"kind": "Pod", "name": "api-1-a"}, "message": "assigned"}),
        ];
        assert_eq!(
            events_text(&ev),
            "2026-01-01T00:00:01Z Normal Scheduled Pod/api-1-a: assigned\n2026-01-01T00:00:05Z Warning Failed Pod/api-1-a: Failed to pull image \"x\": not found"
        );
    }

    #[test]
    fn writes_all_folders_at_once_and_nothing_when_empty() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(write_all(root.path(), &[("c".into(), Diagnostics::default())]).unwrap(), None);
        let mut d = Diagnostics::default();
        d.add("gateway.yaml", "kind: Gateway\n".into());
        d.add("empty.txt", "  ".into());
        d.add("../escape.txt", "x".into());
        let dir = write_all(root.path(), &[("dns01-default".into(), d.clone()), ("cluster".into(), d)]).unwrap().unwrap();
        assert_eq!(fs::read_to_string(dir.join("dns01-default/gateway.yaml")).unwrap(), "kind: Gateway\n");
        assert!(!dir.join("dns01-default/empty.txt").exists());
        assert!(dir.join("cluster/_escape.txt").exists());
        let leftovers: Vec<_> =
            fs::read_dir(root.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with('.')).collect();
        assert!(leftovers.is_empty());
        // A second write refuses to replace recorded diagnostics.
        let e = write_all(root.path(), &[("x".into(), Diagnostics { files: vec![("a".into(), "b".into())] })]).unwrap_err();
        assert!(e.to_string().starts_with(&format!("renaming diagnostics into {}: ", dir.display())), "{e}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<crate::output::dest::DestError>()), "{e:?}");
    }
}
