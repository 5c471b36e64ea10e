//! The objects the lane creates itself (the case's own manifests come from the case): the
//! cluster marker, a case's Namespace, its certificate Secrets, and its backends (the Gateway
//! API conformance echo image, as Deployment + Service named after the backend).
//!
//! Every object is a plain JSON value, so the dry run prints exactly what is applied and the
//! golden tests pin it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::names::{BACKEND_LABEL, CASE_LABEL, MANAGED_BY, MARKER_NAME, MARKER_NAMESPACE, RUN_LABEL, label_value};
use crate::case::Backend;
use crate::case::template::secret_name;
use crate::render::certs::{CertError, CertSet};
use crate::types::{BackendName, CertName};

/// echo-basic's ports (conformance/echo-basic): plain HTTP, and HTTPS when
/// TLS_SERVER_CERT/TLS_SERVER_PRIVKEY name a certificate and key file.
pub const ECHO_HTTP_PORT: u16 = 3000;
pub const ECHO_HTTPS_PORT: u16 = 8443;
/// Where a TLS backend's Secret is mounted.
const TLS_MOUNT: &str = "/etc/layout-gate/tls";

fn managed() -> (String, Value) {
    (MANAGED_BY.0.to_string(), Value::String(MANAGED_BY.1.to_string()))
}

/// What the harness writes into a cluster it created, and reads back before reusing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub cluster: String,
    pub cilium: String,
    pub chart: String,
    pub values_sha256: String,
    pub gateway_api: String,
    pub node_image: String,
    pub run: String,
}

impl Marker {
    pub fn to_object(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": MARKER_NAME, "namespace": MARKER_NAMESPACE, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
            "data": {
                "created-by": "layout-gate",
                "cluster": self.cluster,
                "cilium": self.cilium,
                "chart": self.chart,
                "values-sha256": self.values_sha256,
                "gateway-api": self.gateway_api,
                "node-image": self.node_image,
                "run": self.run,
            }
        })
    }

    /// Reads a marker ConfigMap; `None` when it is not one the harness wrote.
    pub fn from_object(v: &Value) -> Option<Marker> {
        let d = v.get("data")?;
        let f = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        if f("created-by").as_deref() != Some("layout-gate") {
            return None;
        }
        Some(Marker {
            cluster: f("cluster")?,
            cilium: f("cilium")?,
            chart: f("chart")?,
            values_sha256: f("values-sha256")?,
            gateway_api: f("gateway-api")?,
            node_image: f("node-image")?,
            run: f("run").unwrap_or_default(),
        })
    }

    /// Why a cluster carrying `self` cannot be reused for `wanted`; empty when it can. The run
    /// id is not compared: it says who created the cluster, not what it runs.
    pub fn mismatches(&self, wanted: &Marker) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: &str, have: &str, want: &str| {
            if have != want {
                out.push(format!("{what}: the cluster has {have}, this run wants {want}"));
            }
        };
        cmp("cluster name", &self.cluster, &wanted.cluster);
        cmp("Cilium version", &self.cilium, &wanted.cilium);
        cmp("chart version", &self.chart, &wanted.chart);
        cmp("Helm values (sha256)", &self.values_sha256, &wanted.values_sha256);
        cmp("Gateway API CRD bundle", &self.gateway_api, &wanted.gateway_api);
        cmp("node image", &self.node_image, &wanted.node_image);
        out
    }
}

pub fn namespace(name: &str, case: &str, run: &str) -> Value {
    let mut labels: serde_json::Map<String, Value> = [managed()].into_iter().collect();
    labels.insert(CASE_LABEL.into(), label_value(case).into());
    labels.insert(RUN_LABEL.into(), label_value(run).into());
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// A certificate's Secret: its PEM chain and key, or (dry run) a description of them.
pub enum SecretMaterial<'a> {
    Issued(&'a CertSet),
    DryRun,
}

/// The `kubernetes.io/tls` Secret for `cert`, named as manifests reference it
/// (`{secret:CERT}`). The chain is the leaf followed by the run's CA, as a server presents it.
pub fn tls_secret(namespace: &str, cert: &CertName, material: &SecretMaterial<'_>) -> Result<Value, CertError> {
    let (crt, key) = match material {
        SecretMaterial::Issued(certs) => {
            let c = certs.get(cert)?;
            let chain = format!("{}{}", c.cert_pem, certs.ca().cert_pem);
            (b64(chain.as_bytes()), b64(c.key_pem().as_bytes()))
        }
        SecretMaterial::DryRun => (
            Value::String(format!("<base64 PEM: certificate {cert} + the run's CA, generated at run time>")),
            Value::String(format!("<base64 PEM: private key of {cert}, generated at run time>")),
        ),
    };
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(cert), "namespace": namespace, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": crt, "tls.key": key}
    }))
}

fn b64(bytes: &[u8]) -> Value {
    serde_json::to_value(k8s_openapi::ByteString(bytes.to_vec())).unwrap_or(Value::Null)
}

fn labels(backend: &BackendName) -> Value {
    json!({MANAGED_BY.0: MANAGED_BY.1, BACKEND_LABEL: backend.as_str()})
}

/// A backend as Deployment + Service, both named after the backend (the name manifests use
/// in backendRefs). A TLS backend serves HTTPS with its certificate behind Service port 443; a
/// plain one HTTP behind port 80. Both answer with JSON naming their pod (`pod`), which the
/// probe maps back to the backend.
pub fn backend(namespace: &str, name: &BackendName, backend: &Backend, app_protocol: Option<&str>, image: &str) -> [Value; 2] {
    let mut env = vec![
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
        json!({"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}),
        json!({"name": "SERVICE_NAME", "value": name.as_str()}),
    ];
    let mut container = json!({
        "name": "echo",
        "image": image,
        "ports": [{"name": "http", "containerPort": ECHO_HTTP_PORT}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": ECHO_HTTP_PORT}, "periodSeconds": 2},
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    });
    let mut pod_spec = json!({"enableServiceLinks": false, "terminationGracePeriodSeconds": 1});
    let service_port = match backend {
        Backend::Tls { cert } => {
            env.push(json!({"name": "TLS_SERVER_CERT", "value": format!("{TLS_MOUNT}/tls.crt")}));
            env.push(json!({"name": "TLS_SERVER_PRIVKEY", "value": format!("{TLS_MOUNT}/tls.key")}));
            container["ports"] =
                json!([{"name": "http", "containerPort": ECHO_HTTP_PORT}, {"name": "https", "containerPort": ECHO_HTTPS_PORT}]);
            container["volumeMounts"] = json!([{"name": "tls", "mountPath": TLS_MOUNT, "readOnly": true}]);
            pod_spec["volumes"] = json!([{"name": "tls", "secret": {"secretName": secret_name(cert)}}]);
            json!({"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"})
        }
        Backend::Http => json!({"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}),
    };
    let mut service_port = service_port;
    if let Some(ap) = app_protocol {
        service_port["appProtocol"] = json!(ap);
    }
    container["env"] = Value::Array(env);
    pod_spec["containers"] = json!([container]);
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name.as_str(), "namespace": namespace, "labels": labels(name)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {BACKEND_LABEL: name.as_str()}},
            "template": {"metadata": {"labels": labels(name)}, "spec": pod_spec}
        }
    });
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name.as_str(), "namespace": namespace, "labels": labels(name)},
        "spec": {"selector": {BACKEND_LABEL: name.as_str()}, "ports": [service_port]}
    });
    [deployment, service]
}

/// Which backend a pod belongs to: pods of a Deployment are `<backend>-<rs hash>-<suffix>`;
/// the longest backend name that leaves exactly those two segments wins.
pub fn backend_of_pod(pod: &str, backends: &[BackendName]) -> Option<BackendName> {
    backends
        .iter()
        .filter(|b| {
            pod.strip_prefix(b.as_str()).and_then(|rest| rest.strip_prefix('-')).is_some_and(|rest| {
                let parts: Vec<&str> = rest.split('-').collect();
                parts.len() == 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric()))
            })
        })
        .max_by_key(|b| b.as_str().len())
        .cloned()
}

/// Objects as YAML documents, for the dry run and diagnostics.
pub fn to_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        match serde_saphyr::to_string(o) {
            Ok(y) => out.push_str(&y),
            Err(e) => out.push_str(&format!("# cannot render as YAML ({e}); JSON:\n{o}\n")),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The case's backends, sorted by name.
pub fn backend_names(backends: &BTreeMap<BackendName, Backend>) -> Vec<BackendName> {
    backends.keys().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::cluster::golden::check_golden;

    fn bn(s: &str) -> BackendName {
        BackendName::new(s).unwrap()
    }

    #[test]
    fn backend_and_namespace_objects_match_the_goldens() {
        let image = "registry.k8s.io/gateway-api/echo-basic:v1.5.1";
        let tls = backend("lg-x-dryrun", &bn("api"), &Backend::Tls { cert: CertName::new("api-backend").unwrap() }, None, image);
        let http = backend("lg-x-dryrun", &bn("web"), &Backend::Http, None, image);
        let secret = tls_secret("lg-x-dryrun", &CertName::new("api-backend").unwrap(), &SecretMaterial::DryRun).unwrap();
        let ns = namespace("lg-x-dryrun", "x", "dry-run");
        let mut objs = vec![ns, secret];
        objs.extend(tls);
        objs.extend(http);
        check_golden("case-objects.yaml", &to_yaml(&objs));
        // The TLS Service targets the HTTPS port; the plain one HTTP.
        assert_eq!(objs[3].pointer("/spec/ports/0/port"), Some(&json!(443)));
        assert_eq!(objs[5].pointer("/spec/ports/0/port"), Some(&json!(80)));
    }

    #[test]
    fn issued_secrets_carry_the_chain_and_key_base64() {
        let specs = vec![crate::render::certs::CertSpec {
            name: CertName::new("c").unwrap(),
            dns_names: vec![crate::types::DnsName::new("a.example.test").unwrap()],
        }];
        let certs = CertSet::generate("t", &specs).unwrap();
        let s = tls_secret("ns", &CertName::new("c").unwrap(), &SecretMaterial::Issued(&certs)).unwrap();
        assert_eq!(s.pointer("/metadata/name"), Some(&json!("c-tls")));
        let crt: k8s_openapi::ByteString = serde_json::from_value(s.pointer("/data/tls.crt").cloned().unwrap()).unwrap();
        let text = String::from_utf8(crt.0).unwrap();
        assert_eq!(text.matches("BEGIN CERTIFICATE").count(), 2);
        let key: k8s_openapi::ByteString = serde_json::from_value(s.pointer("/data/tls.key").cloned().unwrap()).unwrap();
        assert!(String::from_utf8(key.0).unwrap().contains("PRIVATE KEY"));
        assert!(tls_secret("ns", &CertName::new("nope").unwrap(), &SecretMaterial::Issued(&certs)).is_err());
    }

    #[test]
    fn pods_map_back_to_backends() {
        let bs = [bn("api"), bn("api-v2"), bn("web")];
        assert_eq!(backend_of_pod("api-5d8f7c9b4-x2x7q", &bs), Some(bn("api")));
        assert_eq!(backend_of_pod("api-v2-5d8f7c9b4-x2x7q", &bs), Some(bn("api-v2")));
        assert_eq!(backend_of_pod("web-6c7d-abcde", &bs), Some(bn("web")));
        assert_eq!(backend_of_pod("web", &bs), None);
        assert_eq!(backend_of_pod("other-1-2", &bs), None);
    }

    #[test]
    fn markers_round_trip_and_name_every_mismatch() {
        let m = Marker {
            cluster: "layout-gate-1-19-5".into(),
            cilium: "1.19.5".into(),
            chart: "1.19.5".into(),
            values_sha256: "aa".into(),
            gateway_api: "u".into(),
            node_image: "i".into(),
            run: "r1".into(),
        };
        let back = Marker::from_object(&m.to_object()).unwrap();
        assert_eq!(back, m);
        let mut other = m.clone();
        other.run = "r2".into();
        assert!(m.mismatches(&other).is_empty());
        other.cilium = "1.19.6".into();
        other.values_sha256 = "bb".into();
        assert_eq!(
            m.mismatches(&other),
            vec![
                "Cilium version: the cluster has 1.19.5, this run wants 1.19.6".to_string(),
                "Helm values (sha256): the cluster has aa, this run wants bb".to_string(),
            ]
        );
        assert!(Marker::from_object(&json!({"data": {"created-by": "someone"}})).is_none());
    }
}
