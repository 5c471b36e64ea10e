//! The lane's pinned inputs beside `versions.yaml`: the kind cluster config, the Cilium Helm
//! values, and the LB IPAM pool and L2 announcement policy templates. Read once, checked, and
//! handed on as text (what is written for kind and helm) plus parsed values (what is compared).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::subnet::PoolBlock;

pub const CLUSTER_FILE: &str = "cluster.yaml";
pub const VALUES_FILE: &str = "cilium-values.yaml";
pub const POOL_FILE: &str = "lb-pool.yaml";
pub const POLICY_FILE: &str = "l2-policy.yaml";
const POOL_PLACEHOLDER: &str = "${POOL_CIDR}";

/// What `--cilium-debug` adds to the values: Envoy's debug log in the agent and cilium-envoy.
const DEBUG_VALUES: &str = "\n# added by --cilium-debug\ndebug:\n  enabled: true\n  verbose: envoy\n";

#[derive(Debug, Clone)]
pub struct KindFiles {
    pub dir: PathBuf,
    /// The kind cluster config, as kind reads it.
    pub cluster_yaml: String,
    /// The Helm values file, as helm reads it (with `--cilium-debug` additions when asked).
    pub values_yaml: String,
    /// The same values parsed, for comparing with `helm get values` on reuse.
    pub values: Value,
    pool_template: String,
    pub policy: Value,
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    let p = dir.join(name);
    crate::input::read_text(&p, crate::input::MANIFEST).map_err(|e| format!("reading {e}"))
}

fn parse_yaml(dir: &Path, name: &str, text: &str) -> Result<Value, String> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| format!("{}: not valid YAML: {e}", dir.join(name).display()))
}

impl KindFiles {
    /// Loads the four files from `dir` (the folder of `versions.yaml`).
    pub fn load(dir: &Path, cilium_debug: bool) -> Result<KindFiles, String> {
        let cluster_yaml = read(dir, CLUSTER_FILE)?;
        check_cluster(&parse_yaml(dir, CLUSTER_FILE, &cluster_yaml)?).map_err(|e| format!("{}: {e}", dir.join(CLUSTER_FILE).display()))?;
        let mut values_yaml = read(dir, VALUES_FILE)?;
        let base = parse_yaml(dir, VALUES_FILE, &values_yaml)?;
        if !base.is_object() {
            return Err(format!("{}: the values must be a mapping", dir.join(VALUES_FILE).display()));
        }
        if cilium_debug {
            if base.get("debug").is_some() {
                return Err(format!("{}: sets `debug` itself; --cilium-debug would override it", dir.join(VALUES_FILE).display()));
            }
            values_yaml.push_str(DEBUG_VALUES);
        }
        let values = parse_yaml(dir, VALUES_FILE, &values_yaml)?;
        let pool_template = read(dir, POOL_FILE)?;
        if !pool_template.contains(POOL_PLACEHOLDER) {
            return Err(format!(
                "{}: has no {POOL_PLACEHOLDER} for the block derived from the kind network",
                dir.join(POOL_FILE).display()
            ));
        }
        let policy = parse_yaml(dir, POLICY_FILE, &read(dir, POLICY_FILE)?)?;
        Ok(KindFiles { dir: dir.to_path_buf(), cluster_yaml, values_yaml, values, pool_template, policy })
    }

    /// SHA-256 over the values as data (comments and key order do not count), recorded in the
    /// cluster marker and evidence so reuse can refuse a cluster installed with other values.
    pub fn values_digest(&self) -> String {
        digest_values(&self.values)
    }

    /// The pool manifest for a block of the kind network.
    pub fn pool(&self, block: &PoolBlock) -> Result<Value, String> {
        let text = self.pool_template.replace(POOL_PLACEHOLDER, &block.to_string());
        parse_yaml(&self.dir, POOL_FILE, &text)
    }
}

/// Values compared as data: serde_json's map is sorted, so the text is canonical.
pub fn digest_values(v: &Value) -> String {
    crate::types::sha256_hex(v.to_string().as_bytes())
}

/// What the lane relies on in the kind config: no default CNI (Cilium is it) and a worker
/// (the L2 policy announces from workers only).
fn check_cluster(v: &Value) -> Result<(), String> {
    if v.get("kind").and_then(Value::as_str) != Some("Cluster") {
        return Err("must be a kind `Cluster` config".into());
    }
    if v.pointer("/networking/disableDefaultCNI").and_then(Value::as_bool) != Some(true) {
        return Err("networking.disableDefaultCNI must be true: Cilium is the CNI".into());
    }
    if v.get("name").is_some() {
        return Err("must not set `name`: the harness names clusters after the Cilium version".into());
    }
    let roles: Vec<&str> = v
        .get("nodes")
        .and_then(Value::as_array)
        .map(|ns| ns.iter().filter_map(|n| n.get("role").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    if !roles.contains(&"control-plane") || !roles.contains(&"worker") {
        return Err(format!("needs a control-plane and at least one worker node (the L2 policy announces from workers); has {roles:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("kind-config")
    }

    #[test]
    fn the_repository_files_load_and_say_what_the_lane_needs() {
        let f = KindFiles::load(&repo_dir(), false).unwrap();
        assert_eq!(f.values.pointer("/gatewayAPI/enabled"), Some(&Value::Bool(true)));
        assert_eq!(f.values.pointer("/gatewayAPI/enableAlpn"), Some(&Value::Bool(true)));
        assert_eq!(f.values.get("kubeProxyReplacement"), Some(&Value::Bool(true)));
        assert_eq!(f.values.pointer("/l2announcements/enabled"), Some(&Value::Bool(true)));
        assert_eq!(f.values.pointer("/envoy/enabled"), Some(&Value::Bool(true)));
        assert!(f.values.get("debug").is_none());
        let block: PoolBlock = "172.18.255.192/28".parse().unwrap();
        let pool = f.pool(&block).unwrap();
        assert_eq!(pool.pointer("/spec/blocks/0/cidr").and_then(Value::as_str), Some("172.18.255.192/28"));
        assert_eq!(f.policy.pointer("/spec/loadBalancerIPs"), Some(&Value::Bool(true)));
    }

    #[test]
    fn debug_adds_envoy_verbosity_and_changes_the_digest() {
        let plain = KindFiles::load(&repo_dir(), false).unwrap();
        let debug = KindFiles::load(&repo_dir(), true).unwrap();
        assert_eq!(debug.values.pointer("/debug/verbose").and_then(Value::as_str), Some("envoy"));
        assert_ne!(plain.values_digest(), debug.values_digest());
        // Comments and order do not move the digest.
        let reordered: Value = serde_json::from_str(&serde_json::to_string(&plain.values).unwrap()).unwrap();
        assert_eq!(digest_values(&reordered), plain.values_digest());
    }

    #[test]
    fn cluster_config_rules() {
        let ok: Value = serde_json::json!({"kind": "Cluster", "networking": {"disableDefaultCNI": true}, "nodes": [{"role": "control-plane"}, {"role": "worker"}]});
        assert!(check_cluster(&ok).is_ok());
        let mut no_worker = ok.clone();
        no_worker["nodes"] = serde_json::json!([{"role": "control-plane"}]);
        assert!(check_cluster(&no_worker).unwrap_err().contains("worker"));
        let mut cni = ok.clone();
        cni["networking"]["disableDefaultCNI"] = Value::Bool(false);
        assert!(check_cluster(&cni).unwrap_err().contains("disableDefaultCNI"));
        let mut named = ok;
        named["name"] = "x".into();
        assert!(check_cluster(&named).is_err());
    }
}
