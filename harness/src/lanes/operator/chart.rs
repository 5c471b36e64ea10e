//! The operator's configuration, exactly as the kind lane's Helm install gives it: the pinned
//! chart (inside the Cilium module at the tag) rendered by Helm (built from its module) with
//! `kind-config/cilium-values.yaml`, the Gateway API CRDs declared present as the kind lane has
//! installed them first. From the render: the `cilium-config` ConfigMap the operator reads as its
//! config folder, the arguments and environment of the `cilium-operator` Deployment's
//! container, and the cluster objects the operator needs (its RBAC, the secrets namespace, the
//! GatewayClass). Workloads are not applied: there is no kubelet to run them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// Kinds of the render that are applied to the local API server: what the operator reads or
/// needs permission from. Everything else (DaemonSets, Deployments, their Services, webhooks)
/// would be Pending without a kubelet.
pub const APPLIED_KINDS: &[&str] =
    &["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "GatewayClass"];

/// What the render says about the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// Every object of the render, in order.
    pub objects: Vec<Value>,
    /// `cilium-config` data: one file per key in the operator's config folder.
    pub config: BTreeMap<String, String>,
    /// The operator container's `args`, `$(VAR)` expanded from its environment.
    pub args: Vec<String>,
    /// The operator container's environment, resolved (field references as the lane stands for
    /// them, ConfigMap keys from the render).
    pub env: Vec<(String, String)>,
    /// The operator container's command (`cilium-operator-generic`).
    pub command: Vec<String>,
}

/// `Kind name` of a rendered object, for lines a person reads.
pub fn object_name(o: &Value) -> String {
    format!(
        "{} {}",
        o.get("kind").and_then(Value::as_str).unwrap_or("?"),
        o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?")
    )
}

impl Rendered {
    /// The objects the lane applies ([`APPLIED_KINDS`]).
    pub fn applied(&self) -> Vec<Value> {
        self.objects.iter().filter(|o| o.get("kind").and_then(Value::as_str).is_some_and(|k| APPLIED_KINDS.contains(&k))).cloned().collect()
    }

    /// What the render holds that is not applied, as `Kind name` lines.
    pub fn not_applied(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|o| !o.get("kind").and_then(Value::as_str).is_some_and(|k| APPLIED_KINDS.contains(&k)))
            .map(object_name)
            .collect()
    }

    /// The digest of what configures the operator (config data, args, env), for the evidence.
    pub fn digest(&self) -> String {
        let doc = serde_json::json!({ "config": self.config, "args": self.args, "env": self.env, "command": self.command });
        crate::types::sha256_hex(doc.to_string().as_bytes())
    }
}

/// `helm template` arguments for the chart at `chart` with `values`.
pub fn helm_args(chart: &Path, values: &Path, kube_version: &str) -> Vec<String> {
    vec![
        "template".into(),
        "cilium".into(),
        chart.display().to_string(),
        "--namespace".into(),
        "kube-system".into(),
        "--values".into(),
        values.display().to_string(),
        "--kube-version".into(),
        kube_version.into(),
        // The kind lane installs the Gateway API CRDs before Cilium, so the chart sees them
        // (`gatewayAPI.gatewayClass.create: auto` then creates the GatewayClass).
        "--api-versions".into(),
        "gateway.networking.k8s.io/v1/GatewayClass".into(),
    ]
}

/// Why a render of Cilium's chart cannot start the operator: what it lacks or holds that the
/// lane cannot stand for.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the chart's render is not valid YAML: {0}")]
    Yaml(#[source] Box<serde_saphyr::Error>),
    /// An object the lane reads is not in the render (`the render has no ConfigMap cilium-config`).
    #[error("{0}")]
    Missing(&'static str),
    #[error("the operator's environment {name} reads field {field}, which the lane cannot stand for")]
    FieldRef { name: String, field: String },
    #[error("the operator's environment {name} needs ConfigMap {config_map} key {key}, not in the render")]
    ConfigMapKey { name: String, config_map: String, key: String },
}

/// Reads a render: multi-document YAML. `node` stands for `spec.nodeName` in the operator's
/// environment.
pub fn parse(text: &str, node: &str) -> Result<Rendered, RenderError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| RenderError::Yaml(Box::new(e)))?;
    let objects: Vec<Value> = docs.into_iter().filter(|d| d.is_object()).collect();
    let find = |kind: &str, name: &str| {
        objects.iter().find(|o| {
            o.get("kind").and_then(Value::as_str) == Some(kind) && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    };
    let cm = find("ConfigMap", "cilium-config").ok_or(RenderError::Missing("the render has no ConfigMap cilium-config"))?;
    let config: BTreeMap<String, String> = cm
        .get("data")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))).collect())
        .unwrap_or_default();
    let dep = find("Deployment", "cilium-operator").ok_or(RenderError::Missing("the render has no Deployment cilium-operator"))?;
    let container = dep
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("name").and_then(Value::as_str) == Some("cilium-operator")))
        .ok_or(RenderError::Missing("the cilium-operator Deployment has no container cilium-operator"))?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    };
    let mut env = Vec::new();
    for e in container.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str) else { continue };
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            Some(v.to_string())
        } else if let Some(path) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
            match path {
                "spec.nodeName" => Some(node.to_string()),
                "metadata.namespace" => Some("kube-system".to_string()),
                other => return Err(RenderError::FieldRef { name: name.to_string(), field: other.to_string() }),
            }
        } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
            let (cm_name, key) = (r.get("name").and_then(Value::as_str).unwrap_or(""), r.get("key").and_then(Value::as_str).unwrap_or(""));
            let got = find("ConfigMap", cm_name).and_then(|c| c.pointer(&format!("/data/{key}"))).and_then(Value::as_str);
            match (got, r.get("optional").and_then(Value::as_bool).unwrap_or(false)) {
                (Some(v), _) => Some(v.to_string()),
                (None, true) => None,
                (None, false) => {
                    return Err(RenderError::ConfigMapKey {
                        name: name.to_string(),
                        config_map: cm_name.to_string(),
                        key: key.to_string(),
                    });
                }
            }
        } else {
            // secretKeyRef and the like: cloud credentials the generic operator never reads.
            None
        };
        if let Some(v) = value {
            env.push((name.to_string(), v));
        }
    }
    let expand = |a: &str| -> String {
        let mut out = a.to_string();
        for (k, v) in &env {
            out = out.replace(&format!("$({k})"), v);
        }
        out
    };
    let args = strings(container.get("args")).iter().map(|a| expand(a)).collect();
    Ok(Rendered { objects: objects.clone(), config, args, env, command: strings(container.get("command")) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RENDER: &str = r#"
---
apiVersion: v1
kind: Namespace
metadata: {name: cilium-secrets}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data:
  enable-gateway-api: "true"
  debug: "false"
  gateway-api-secrets-namespace: cilium-secrets
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cilium-operator, namespace: kube-system}
spec:
  template:
    spec:
      containers:
      - name: cilium-operator
        command: [cilium-operator-generic]
        args: ["--config-dir=/tmp/cilium/config-map", "--debug=$(CILIUM_DEBUG)"]
        env:
        - {name: K8S_NODE_NAME, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: spec.nodeName}}}
        - {name: CILIUM_K8S_NAMESPACE, valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}}
        - {name: CILIUM_DEBUG, valueFrom: {configMapKeyRef: {key: debug, name: cilium-config, optional: true}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: cilium}
spec: {controllerName: io.cilium/gateway-controller}
"#;

    #[test]
    fn the_operator_is_configured_as_its_deployment_says() {
        let r = parse(RENDER, "node-a").unwrap();
        assert_eq!(r.config["enable-gateway-api"], "true");
        assert_eq!(r.args, ["--config-dir=/tmp/cilium/config-map", "--debug=false"]);
        assert_eq!(
            r.env,
            [
                ("K8S_NODE_NAME".to_string(), "node-a".to_string()),
                ("CILIUM_K8S_NAMESPACE".into(), "kube-system".into()),
                ("CILIUM_DEBUG".into(), "false".into())
            ]
        );
        assert_eq!(r.command, ["cilium-operator-generic"]);
        let applied = r.applied();
        let kinds: Vec<&str> = applied.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["Namespace", "ConfigMap", "GatewayClass"]);
        assert_eq!(r.not_applied(), ["Deployment cilium-operator"]);
        // The digest follows the configuration.
        let mut other = r.clone();
        other.config.insert("debug".into(), "true".into());
        assert_ne!(r.digest(), other.digest());
    }

    #[test]
    fn a_render_without_the_operator_is_refused() {
        let e = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cilium-config}\ndata: {}\n", "n").unwrap_err();
        assert_eq!(e.to_string(), "the render has no Deployment cilium-operator");
        let e = parse("a: [unclosed", "n").unwrap_err();
        assert!(e.to_string().starts_with("the chart's render is not valid YAML: "), "{e}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("unclosed bracket")), "{e:?}");
    }
}
