//! What `check --live` reads from the cluster, through [`ReadOnly`] only: every object of the
//! kinds `check` reads from manifests in scope, turned into the same in-memory manifest
//! documents ([`Object`]) `check` reads from files, so the prediction is `check`'s own; the
//! Gateways' statuses and addresses as the cluster reports them; the referenced Secrets'
//! certificates (never their keys); and the running Cilium version.

use std::collections::BTreeSet;
use std::path::PathBuf;

use kube::api::ApiResource;
use serde_json::{Map, Value};

use super::client::{CertOnly, ClusterId, LiveError, ReadOnly, Resource};
use crate::case::CiliumVersion;
use crate::case::manifests::Object;

/// The kinds read by listing, by API group; the version is the one the server prefers.
pub const LISTED: &[(&str, &str)] = &[
    ("gateway.networking.k8s.io", "Gateway"),
    ("gateway.networking.k8s.io", "HTTPRoute"),
    ("gateway.networking.k8s.io", "TLSRoute"),
    ("gateway.networking.k8s.io", "GRPCRoute"),
    ("gateway.networking.k8s.io", "ReferenceGrant"),
    ("gateway.networking.k8s.io", "ListenerSet"),
    ("gateway.networking.x-k8s.io", "XListenerSet"),
];

/// A Gateway as the cluster reports it.
#[derive(Debug, Clone)]
pub struct LiveGateway {
    pub namespace: String,
    pub name: String,
    /// `status` as the API server returned it (`conditions`, `listeners`, `addresses`).
    pub status: Value,
}

impl LiveGateway {
    /// The addresses the cluster gave the Gateway (`status.addresses[].value`).
    pub fn addresses(&self) -> Vec<String> {
        self.status
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.get("value").and_then(Value::as_str).map(str::to_string))
            .collect()
    }
}

/// A referenced Secret's certificate as read (`tls.crt` only).
#[derive(Debug, Clone)]
pub struct LiveCert {
    pub namespace: String,
    pub name: String,
    /// The PEM of `tls.crt`; `None` when the Secret has none (a key alone, or neither).
    pub pem: Option<String>,
}

/// The running Cilium version and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub version: CiliumVersion,
    pub source: String,
}

/// Everything read from the cluster.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub id: ClusterId,
    /// In `check`'s input form.
    pub objects: Vec<Object>,
    pub gateways: Vec<LiveGateway>,
    pub certs: Vec<LiveCert>,
    /// `Err`: why the version could not be read (a 403, no Cilium found).
    pub running: Result<Running, String>,
    /// What the reading left out, for standard error.
    pub notes: Vec<String>,
}

/// Reads the cluster: `namespaces` (empty: all).
pub async fn read(c: &ReadOnly, namespaces: &[String]) -> Result<Snapshot, LiveError> {
    let scopes: Vec<Option<&str>> = if namespaces.is_empty() { vec![None] } else { namespaces.iter().map(|n| Some(n.as_str())).collect() };
    let mut objects = Vec::new();
    let mut notes = Vec::new();
    let mut gateways = Vec::new();
    let mut raw: Vec<Value> = Vec::new();
    for (group, kind) in LISTED {
        let Some(r) = c.resource(group, kind).await? else {
            // ListenerSet and XListenerSet are alternatives: only a missing required kind is news.
            if matches!(*kind, "Gateway" | "HTTPRoute") {
                notes.push(format!("the cluster does not serve {kind} ({group}): none read"));
            }
            continue;
        };
        for ns in &scopes {
            for v in c.list(&r, *ns).await? {
                if *kind == "Gateway" {
                    gateways.push(LiveGateway {
                        namespace: text(&v, "/metadata/namespace"),
                        name: text(&v, "/metadata/name"),
                        status: v.get("status").cloned().unwrap_or(Value::Null),
                    });
                }
                raw.push(with_kind(v, &r.api));
            }
        }
    }
    let core = |api: ApiResource| Resource { api, namespaced: true };
    let services = core(ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()));
    for ns in &scopes {
        for v in c.list(&services, *ns).await? {
            raw.push(with_kind(v, &services.api));
        }
    }
    // Namespaces: their labels decide `allowedRoutes.namespaces.selector`.
    let ns_kind = Resource { api: ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()), namespaced: false };
    if namespaces.is_empty() {
        raw.extend(c.list(&ns_kind, None).await?.into_iter().map(|v| with_kind(v, &ns_kind.api)));
    } else {
        for n in namespaces {
            raw.extend(c.get(&ns_kind, None, n).await?.map(|v| with_kind(v, &ns_kind.api)));
        }
    }
    let mut certs = Vec::new();
    for (ns, name) in secret_refs(&raw) {
        match c.secret_certificate(&ns, &name).await? {
            None => notes.push(format!("Secret {ns}/{name} is referenced and does not exist: missing")),
            Some(s) => {
                let cert = cert_of(&ns, &name, &s);
                match &cert.pem {
                    Some(_) => raw.push(secret_object(&ns, &name, &s)),
                    None => notes.push(format!(
                        "Secret {ns}/{name} holds no tls.crt{}: Cilium cannot serve it, so the model is given it as missing",
                        if s.data.has_key { " (only a key)" } else { "" }
                    )),
                }
                certs.push(cert);
            }
        }
    }
    for v in raw {
        objects.push(object(&c.id.context, v));
    }
    let running = running(c).await;
    Ok(Snapshot { id: c.id.clone(), objects, gateways, certs, running, notes })
}

fn text(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// A listed item carries no `apiVersion`/`kind` of its own in every client: set them.
fn with_kind(mut v: Value, r: &ApiResource) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(r.api_version.clone()));
        m.insert("kind".into(), Value::String(r.kind.clone()));
    }
    v
}

/// Every Secret a Gateway or ListenerSet listener names (`certificateRefs`, core group,
/// kind Secret), as (namespace, name), once each, sorted.
pub fn secret_refs(objects: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for o in objects {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        if !matches!(kind, "Gateway" | "ListenerSet" | "XListenerSet") {
            continue;
        }
        let ns = text(o, "/metadata/namespace");
        for l in o.pointer("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
            for r in l.pointer("/tls/certificateRefs").and_then(Value::as_array).into_iter().flatten() {
                let group = r.get("group").and_then(Value::as_str).unwrap_or("");
                let k = r.get("kind").and_then(Value::as_str).unwrap_or("Secret");
                let Some(name) = r.get("name").and_then(Value::as_str) else { continue };
                if group.is_empty() && k == "Secret" {
                    out.insert((r.get("namespace").and_then(Value::as_str).unwrap_or(&ns).to_string(), name.to_string()));
                }
            }
        }
    }
    out
}

fn cert_of(ns: &str, name: &str, s: &CertOnly) -> LiveCert {
    let pem = s.data.crt.as_ref().and_then(|b| String::from_utf8(b.0.clone()).ok()).filter(|p| p.contains("BEGIN CERTIFICATE"));
    LiveCert { namespace: ns.to_string(), name: name.to_string(), pem }
}

/// The Secret as `check` is given it: that it exists, its type, and its certificate. No key.
fn secret_object(ns: &str, name: &str, s: &CertOnly) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": s.type_.clone().unwrap_or_else(|| "kubernetes.io/tls".into()),
        "data": {"tls.crt": s.data.crt.as_ref().and_then(|b| serde_json::to_value(b).ok()).unwrap_or_default()},
    })
}

/// The cluster's object as a manifest document: what a user would have written (kind, name,
/// namespace, labels, annotations, spec), without the server's bookkeeping and status. Its
/// place is `CONTEXT:KIND/NAMESPACE/NAME`, which every message of `check` names instead of a
/// file and line.
pub fn object(context: &str, v: Value) -> Object {
    let mut out = Map::new();
    for k in ["apiVersion", "kind", "spec", "type"] {
        if let Some(x) = v.get(k) {
            out.insert(k.into(), x.clone());
        }
    }
    let mut meta = Map::new();
    for k in ["name", "namespace", "labels", "annotations"] {
        if let Some(x) = v.pointer(&format!("/metadata/{k}")) {
            meta.insert(k.into(), x.clone());
        }
    }
    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        // kubectl's copy of the last applied object is a second spec; it says nothing the spec does not.
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    out.insert("metadata".into(), Value::Object(meta));
    if let Some(d) = v.get("data").filter(|_| v.get("kind").and_then(Value::as_str) == Some("Secret")) {
        out.insert("data".into(), d.clone());
    }
    let kind = text(&v, "/kind");
    let name = text(&v, "/metadata/name");
    let namespace = v.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_string);
    let place = match &namespace {
        Some(ns) => format!("{context}:{kind}/{ns}/{name}"),
        None => format!("{context}:{kind}/{name}"),
    };
    Object { file: PathBuf::from(place), line: 1, api_version: text(&v, "/apiVersion"), kind, name, namespace, value: Value::Object(out) }
}

/// The version in an image reference: `quay.io/cilium/cilium:v1.19.6@sha256:...` -> 1.19.6.
pub fn version_of_image(image: &str) -> Option<CiliumVersion> {
    let no_digest = image.split('@').next()?;
    let tag = no_digest.rsplit_once(':').map(|(_, t)| t).filter(|t| !t.contains('/'))?;
    CiliumVersion::parse(tag.trim_start_matches('v')).ok()
}

/// The running Cilium: the `cilium` DaemonSet's agent image in kube-system, else the
/// `cilium-operator` Deployment's image there. (`cilium-config` carries no version key, so it
/// cannot say one.)
async fn running(c: &ReadOnly) -> Result<Running, String> {
    let ds = Resource { api: ApiResource::erase::<k8s_openapi::api::apps::v1::DaemonSet>(&()), namespaced: true };
    let dep = Resource { api: ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()), namespaced: true };
    let mut why = Vec::new();
    for (r, name) in [(&ds, "cilium"), (&dep, "cilium-operator")] {
        match c.get(r, Some("kube-system"), name).await {
            Ok(Some(v)) => {
                let images: Vec<String> = v
                    .pointer("/spec/template/spec/containers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("image").and_then(Value::as_str).map(str::to_string))
                    .collect();
                if let Some((img, v)) = images.iter().find_map(|i| version_of_image(i).map(|v| (i, v))) {
                    return Ok(Running { version: v, source: format!("{} kube-system/{name}: image {img}", r.api.kind) });
                }
                why.push(format!("{} kube-system/{name} has no image with a version tag ({})", r.api.kind, images.join(", ")));
            }
            Ok(None) => why.push(format!("no {} kube-system/{name}", r.api.kind)),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_give_the_version() {
        let v = |s: &str| version_of_image(s).map(|v| v.to_string());
        assert_eq!(v("quay.io/cilium/cilium:v1.19.6@sha256:abc").as_deref(), Some("1.19.6"));
        assert_eq!(v("localhost:5000/cilium/operator-generic:v1.18.2").as_deref(), Some("1.18.2"));
        assert_eq!(v("localhost:5000/cilium/cilium"), None);
        assert_eq!(v("quay.io/cilium/cilium:latest"), None);
    }

    #[test]
    fn an_object_keeps_what_a_user_wrote_and_is_placed_in_the_cluster() {
        let o = object(
            "prod",
            serde_json::json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway",
                "metadata":{"name":"gw","namespace":"ns","uid":"u","managedFields":[{}],"labels":{"a":"b"},
                    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","x":"y"}},
                "spec":{"gatewayClassName":"cilium"},"status":{"conditions":[]}}),
        );
        assert_eq!(o.file, PathBuf::from("prod:Gateway/ns/gw"));
        assert_eq!(
            o.value,
            serde_json::json!({"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway",
                "metadata":{"name":"gw","namespace":"ns","labels":{"a":"b"},"annotations":{"x":"y"}},
                "spec":{"gatewayClassName":"cilium"}})
        );
    }

    #[test]
    fn secret_refs_default_to_the_listeners_namespace() {
        let gw = serde_json::json!({"kind":"Gateway","metadata":{"name":"g","namespace":"a"},"spec":{"listeners":[
            {"tls":{"certificateRefs":[{"name":"s"},{"name":"t","namespace":"b"},{"name":"x","kind":"ConfigMap"}]}}]}});
        let got: Vec<(String, String)> = secret_refs(&[gw]).into_iter().collect();
        assert_eq!(got, [("a".to_string(), "s".to_string()), ("b".to_string(), "t".to_string())]);
    }
}
