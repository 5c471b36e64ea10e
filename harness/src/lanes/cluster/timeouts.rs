//! Every wait of the lanes that run Cilium on an API server (kind, operator), named, with its
//! default and the `LAYOUT_GATE_*` variable that overrides it. Kept beside those lanes (not in
//! `run::Timeouts`) because only they wait on clusters, charts and controllers.

use std::time::Duration;

use crate::run::{TimeoutsError, parse_duration};

/// One named wait: what the messages and the dry run call it, and how to override it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub name: &'static str,
    pub var: &'static str,
    pub limit: Duration,
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.name, human(self.limit), self.var)
    }
}

pub use crate::run::human;

macro_rules! cluster_timeouts {
    ($( $(#[$doc:meta])* $field:ident = ($name:literal, $var:literal, $secs:expr) ),* $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct ClusterTimeouts {
            $( $(#[$doc])* pub $field: Wait, )*
        }

        impl Default for ClusterTimeouts {
            fn default() -> Self {
                ClusterTimeouts { $( $field: Wait { name: $name, var: $var, limit: Duration::from_secs($secs) }, )* }
            }
        }

        impl ClusterTimeouts {
            /// Defaults, overridden by every variable that is set.
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, TimeoutsError> {
                Self::from_lookup_over(Self::default(), get)
            }

            /// A lane's own defaults (`base`), overridden by every variable that is set.
            pub fn from_lookup_over(base: Self, get: impl Fn(&str) -> Option<String>) -> Result<Self, TimeoutsError> {
                let mut t = base;
                $(
                    if let Some(v) = get($var) {
                        t.$field.limit = parse_duration(&v).map_err(|message| TimeoutsError { var: $var, value: v.clone(), message })?;
                    }
                )*
                Ok(t)
            }

            pub fn all(&self) -> Vec<Wait> {
                vec![$( self.$field ),*]
            }
        }
    };
}

cluster_timeouts! {
    /// A quick tool query: a preflight version, `kind get clusters`, `docker network inspect`.
    tool_query = ("tool query", "LAYOUT_GATE_TOOL_QUERY_TIMEOUT", 20),
    /// `kind create cluster` (pulls the node image on first use).
    cluster_create = ("cluster create", "LAYOUT_GATE_CLUSTER_CREATE_TIMEOUT", 600),
    /// `kind delete cluster`.
    cluster_delete = ("cluster delete", "LAYOUT_GATE_CLUSTER_DELETE_TIMEOUT", 180),
    /// The API server answering after `kind create cluster` returned.
    api_ready = ("API server ready", "LAYOUT_GATE_API_READY_TIMEOUT", 120),
    /// Downloading the Gateway API CRD bundle.
    crd_download = ("CRD download", "LAYOUT_GATE_CRD_DOWNLOAD_TIMEOUT", 120),
    /// Every applied CRD reporting Established.
    crds_established = ("CRDs established", "LAYOUT_GATE_CRDS_ESTABLISHED_TIMEOUT", 120),
    /// `helm upgrade --install` with `--wait` (image pulls included); also passed to helm.
    helm_install = ("helm install", "LAYOUT_GATE_HELM_INSTALL_TIMEOUT", 900),
    /// Quick helm queries (`helm get values`, `helm list`).
    helm_query = ("helm query", "LAYOUT_GATE_HELM_QUERY_TIMEOUT", 60),
    /// Agent and cilium-envoy DaemonSets ready, operator Deployment available.
    cilium_ready = ("Cilium ready", "LAYOUT_GATE_CILIUM_READY_TIMEOUT", 600),
    /// GatewayClass `cilium` Accepted=True.
    gatewayclass_accepted = ("GatewayClass accepted", "LAYOUT_GATE_GATEWAYCLASS_TIMEOUT", 300),
    /// Cilium's LB IPAM and L2 CRDs present, so the pool and policy can be applied.
    lb_crds = ("LB IPAM CRDs", "LAYOUT_GATE_LB_CRDS_TIMEOUT", 180),
    /// A case's backend pods ready (image pulls included).
    backends_ready = ("backends ready", "LAYOUT_GATE_BACKENDS_TIMEOUT", 300),
    /// A case's conditions, on every Gateway and ListenerSet it defines and its routes, reaching
    /// what it expects (otherwise judged as last seen): one wait for all of them.
    gateway_conditions = ("Gateway conditions", "LAYOUT_GATE_GATEWAY_TIMEOUT", 120),
    /// How long matching conditions must hold unchanged before they count (flapping guard).
    conditions_settle = ("conditions settle", "LAYOUT_GATE_SETTLE", 3),
    /// When the expectations are another lane's prediction (`check --lane operator`, the
    /// differential): conditions that stopped changing for this long, on every Gateway of the
    /// case, are the answer, whether or not they match the prediction.
    conditions_quiet = ("conditions quiet", "LAYOUT_GATE_QUIET", 5),
    /// Every probed Gateway's status.addresses carrying an IP (each Gateway has its own), when
    /// the case probes: one wait for all of them.
    gateway_address = ("Gateway address", "LAYOUT_GATE_GATEWAY_ADDRESS_TIMEOUT", 180),
    /// Reading the CiliumEnvoyConfig and exec'ing `cilium-dbg envoy admin config listeners`.
    envoy_config = ("Envoy config", "LAYOUT_GATE_ENVOY_CONFIG_TIMEOUT", 60),
    /// One API request (apply, get, list, delete, logs).
    api_request = ("API request", "LAYOUT_GATE_API_REQUEST_TIMEOUT", 30),
    /// A case namespace gone after deletion.
    namespace_delete = ("namespace delete", "LAYOUT_GATE_NAMESPACE_DELETE_TIMEOUT", 180),
    /// Collecting diagnostics after a failure.
    diagnostics = ("diagnostics", "LAYOUT_GATE_DIAGNOSTICS_TIMEOUT", 60),
    /// Operator lane: etcd and kube-apiserver serving on loopback, kube-system created.
    control_plane_start = ("control plane start", "LAYOUT_GATE_CONTROL_PLANE_TIMEOUT", 90),
    /// Operator lane: `helm template` of the pinned chart.
    chart_render = ("chart render", "LAYOUT_GATE_CHART_RENDER_TIMEOUT", 60),
    /// Operator lane: cilium-operator answering `/healthz`.
    operator_ready = ("operator ready", "LAYOUT_GATE_OPERATOR_READY_TIMEOUT", 90),
}

impl ClusterTimeouts {
    /// The operator lane's defaults: its operator reconciles a case within a second or two, so
    /// conditions it has not reached after 30 s will not be reached (judged as last seen), where
    /// a kind cluster waits on pods, the datapath and L2 announcements.
    pub fn operator_defaults() -> Self {
        let mut t = Self::default();
        t.gateway_conditions.limit = Duration::from_secs(30);
        t.gateway_address.limit = Duration::from_secs(30);
        t
    }

    pub fn from_env() -> Result<Self, TimeoutsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }
}

/// Every setting a run of a cluster lane (kind, operator) reads: the probes' waits and the
/// cluster waits.
pub fn known_settings() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = crate::run::TIMEOUT_VARS.iter().map(|(var, _)| *var).collect();
    v.extend(ClusterTimeouts::default().all().iter().map(|w| w.var));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_errors() {
        let t = ClusterTimeouts::from_lookup(|k| (k == "LAYOUT_GATE_HELM_INSTALL_TIMEOUT").then(|| "20m".to_string())).unwrap();
        assert_eq!(t.helm_install.limit, Duration::from_secs(1200));
        assert_eq!(t.cluster_create, ClusterTimeouts::default().cluster_create);
        let e = ClusterTimeouts::from_lookup(|k| (k == "LAYOUT_GATE_SETTLE").then(|| "soon".to_string())).unwrap_err();
        assert_eq!(e.var, "LAYOUT_GATE_SETTLE");
        // Every variable is distinct and named like the others.
        let vars: std::collections::BTreeSet<_> = t.all().iter().map(|w| w.var).collect();
        assert_eq!(vars.len(), t.all().len());
        assert!(vars.iter().all(|v| v.starts_with("LAYOUT_GATE_")));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_secs(900)), "15m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::from_secs(3)), "3s");
        assert_eq!(human(Duration::from_millis(1500)), "1500ms");
    }
}
