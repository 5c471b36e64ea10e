//! `check --live`: a platform's own cluster as the input of `check`, read-only.
//!
//! * [`client`]: [`client::ReadOnly`], the only client: list and get, nothing that writes.
//! * [`fetch`]: the objects `check` reads from manifests, read from the cluster in scope and
//!   turned into the same in-memory manifest documents; the Gateways' statuses and addresses;
//!   the referenced Secrets' certificates (never a key); the running Cilium version.
//! * [`drift`]: the cluster's statuses against the prediction at the running version.
//! * [`answers`]: the live Gateway addresses probed (real TLS handshakes, plain HTTP) against
//!   the predicted answers at the running version.
//! * [`fake_api`]: a fake API server on loopback, broken or lying on purpose, for the tests.
//!
//! The prediction and the per-version verdict are `check`'s own ([`crate::check::check_inputs`]);
//! this module only brings the cluster to it. Nothing here is gate evidence: it says `lane:
//! live` with the cluster's name and server digest, and `--evidence-dir` keeps it as
//! `live.json` ([`crate::evidence::live`]), which `report` names and never merges.

pub mod answers;
pub mod client;
pub mod drift;
pub mod fake_api;
pub mod fetch;

/// The lane name results of `check --live` carry (its evidence: [`crate::evidence::live`]).
pub const LANE: &str = crate::evidence::live::LANE;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The ClusterRole the docs give grants reading only, and covers every kind `check
    /// --live` reads.
    #[test]
    fn the_readonly_clusterrole_only_reads_and_covers_every_kind_read() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kind-config/live-readonly-clusterrole.yaml");
        let role: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(role["kind"], "ClusterRole");
        let mut granted = std::collections::BTreeSet::new();
        for rule in role["rules"].as_array().unwrap() {
            for verb in rule["verbs"].as_array().unwrap() {
                assert!(matches!(verb.as_str(), Some("get" | "list" | "watch")), "a verb that is not a read: {verb}");
            }
            for g in rule["apiGroups"].as_array().unwrap() {
                for r in rule["resources"].as_array().unwrap() {
                    granted.insert((g.as_str().unwrap().to_string(), r.as_str().unwrap().to_string()));
                }
            }
        }
        let mut needed: Vec<(String, String)> =
            super::fetch::LISTED.iter().map(|(g, k)| (g.to_string(), format!("{}s", k.to_ascii_lowercase()))).collect();
        for r in ["services", "namespaces", "secrets"] {
            needed.push((String::new(), r.into()));
        }
        needed.push(("apps".into(), "daemonsets".into()));
        needed.push(("apps".into(), "deployments".into()));
        for n in &needed {
            assert!(granted.contains(n), "the ClusterRole does not grant {n:?}");
        }
    }
}
