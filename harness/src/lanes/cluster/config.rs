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

/// Why the kind-config files could not be used: the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (missing, too large, not text).
    #[error("reading {0}")]
    Read(#[source] crate::input::ReadError),
    #[error("{}: not valid YAML: {source}", .file.display())]
    Yaml { file: PathBuf, source: Box<serde_saphyr::Error> },
    /// The file parses but is not what the lane relies on.
    #[error("{}: {problem}", .file.display())]
    Invalid { file: PathBuf, problem: String },
}

impl ConfigError {
    fn invalid(dir: &Path, name: &str, problem: impl Into<String>) -> Self {
        ConfigError::Invalid { file: dir.join(name), problem: problem.into() }
    }
}

fn read(dir: &Path, name: &str) -> Result<String, ConfigError> {
    let p = dir.join(name);
    crate::input::read_text(&p, crate::input::MANIFEST).map_err(ConfigError::Read)
}

fn parse_yaml(dir: &Path, name: &str, text: &str) -> Result<Value, ConfigError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| ConfigError::Yaml { file: dir.join(name), source: Box::new(e) })
}

impl KindFiles {
    /// Loads the four files from `dir` (the folder of `versions.yaml`).
    pub fn load(dir: &Path, cilium_debug: bool) -> Result<KindFiles, ConfigError> {
        let cluster_yaml = read(dir, CLUSTER_FILE)?;
        check_cluster(dir, &parse_yaml(dir, CLUSTER_FILE, &cluster_yaml)?)?;
        let mut values_yaml = read(dir, VALUES_FILE)?;
        let base = parse_yaml(dir, VALUES_FILE, &values_yaml)?;
        if !base.is_object() {
            return Err(ConfigError::invalid(dir, VALUES_FILE, "the values must be a mapping"));
        }
        if cilium_debug {
            if base.get("debug").is_some() {
                return Err(ConfigError::invalid(dir, VALUES_FILE, "sets `debug` itself; --cilium-debug would override it"));
            }
            values_yaml.push_str(DEBUG_VALUES);
        }
        let values = parse_yaml(dir, VALUES_FILE, &values_yaml)?;
        let pool_template = read(dir, POOL_FILE)?;
        if !pool_template.contains(POOL_PLACEHOLDER) {
            return Err(ConfigError::invalid(
                dir,
                POOL_FILE,
                format!("has no {POOL_PLACEHOLDER} for the block derived from the kind network"),
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
    pub fn pool(&self, block: &PoolBlock) -> Result<Value, ConfigError> {
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
fn check_cluster(dir: &Path, v: &Value) -> Result<(), ConfigError> {
    let broken = |problem: String| Err(ConfigError::invalid(dir, CLUSTER_FILE, problem));
    if v.get("kind").and_then(Value::as_str) != Some("Cluster") {
        return broken("must be a kind `Cluster` config".into());
    }
    if v.pointer("/networking/disableDefaultCNI").and_then(Value::as_bool) != Some(true) {
        return broken("networking.disableDefaultCNI must be true: Cilium is the CNI".into());
    }
    if v.get("name").is_some() {
        return broken("must not set `name`: the harness names clusters after the Cilium version".into());
    }
    let roles: Vec<&str> = v
        .get("nodes")
        .and_then(Value::as_array)
        .map(|ns| ns.iter().filter_map(|n| n.get("role").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    if !roles.contains(&"control-plane") || !roles.contains(&"worker") {
        return broken(format!("needs a control-plane and at least one worker node (the L2 policy announces from workers); has {roles:?}"));
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
        let dir = Path::new("kind-config");
        assert!(check_cluster(dir, &ok).is_ok());
        let mut no_worker = ok.clone();
        no_worker["nodes"] = serde_json::json!([{"role": "control-plane"}]);
        assert!(check_cluster(dir, &no_worker).unwrap_err().to_string().contains("worker"));
        let mut cni = ok.clone();
        cni["networking"]["disableDefaultCNI"] = Value::Bool(false);
        assert!(check_cluster(dir, &cni).unwrap_err().to_string().contains("disableDefaultCNI"));
        let mut named = ok;
        named["name"] = "x".into();
        assert!(check_cluster(dir, &named).is_err());
    }

    #[test]
    fn errors_name_the_file_and_keep_their_cause() {
        let dir = std::env::temp_dir().join(format!("lg-config-errors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(CLUSTER_FILE), "kind: [unclosed").unwrap();
        let e = KindFiles::load(&dir, false).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with(&format!("{}: not valid YAML: ", dir.join(CLUSTER_FILE).display())), "{text}");
        assert!(std::error::Error::source(&e).is_some());
        std::fs::remove_file(dir.join(CLUSTER_FILE)).unwrap();
        let e = KindFiles::load(&dir, false).unwrap_err();
        assert!(matches!(e, ConfigError::Read(_)), "{e:?}");
        assert!(e.to_string().starts_with(&format!("reading {}: ", dir.join(CLUSTER_FILE).display())), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
