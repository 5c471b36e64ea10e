//! Every wait of the lanes that run Cilium on an API server (kind, operator), named, with its
//! defaults and the `LAYOUT_GATE_*` variable that overrides it. Kept beside those lanes (not in
//! `run::Timeouts`) because only they wait on clusters, charts and controllers; written in the
//! one table shape every lane's waits share (`run::waits_table`), and listed with the probe
//! waits in docs/waits.md, which a unit test below keeps equal to the tables.

use std::time::Duration;

pub use crate::run::{Wait, human};

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

crate::run::waits_table! {
    /// The cluster waits. Their `Local` defaults are the operator lane's: its operator
    /// reconciles a case within a second or two, so conditions it has not reached after 30 s
    /// will not be reached (judged as last seen), where a kind cluster waits on pods, the
    /// datapath and L2 announcements.
    pub struct ClusterTimeouts {
        tool_query: Wait = ("tool query", "LAYOUT_GATE_TOOL_QUERY_TIMEOUT", secs(20), secs(20),
            "A quick tool query: a preflight version, `kind get clusters`, `docker network inspect`."),
        cluster_create: Wait = ("cluster create", "LAYOUT_GATE_CLUSTER_CREATE_TIMEOUT", secs(600), secs(600),
            "`kind create cluster` (pulls the node image on first use)."),
        cluster_delete: Wait = ("cluster delete", "LAYOUT_GATE_CLUSTER_DELETE_TIMEOUT", secs(180), secs(180),
            "`kind delete cluster`."),
        api_ready: Wait = ("API server ready", "LAYOUT_GATE_API_READY_TIMEOUT", secs(120), secs(120),
            "The API server answering after `kind create cluster` returned."),
        crd_download: Wait = ("CRD download", "LAYOUT_GATE_CRD_DOWNLOAD_TIMEOUT", secs(120), secs(120),
            "Downloading the Gateway API CRD bundle."),
        crds_established: Wait = ("CRDs established", "LAYOUT_GATE_CRDS_ESTABLISHED_TIMEOUT", secs(120), secs(120),
            "Every applied CRD reporting Established."),
        helm_install: Wait = ("helm install", "LAYOUT_GATE_HELM_INSTALL_TIMEOUT", secs(900), secs(900),
            "`helm upgrade --install` with `--wait` (image pulls included); also passed to helm."),
        helm_query: Wait = ("helm query", "LAYOUT_GATE_HELM_QUERY_TIMEOUT", secs(60), secs(60),
            "Quick helm queries (`helm get values`, `helm list`)."),
        cilium_ready: Wait = ("Cilium ready", "LAYOUT_GATE_CILIUM_READY_TIMEOUT", secs(600), secs(600),
            "Agent and cilium-envoy DaemonSets ready, operator Deployment available."),
        gatewayclass_accepted: Wait = ("GatewayClass accepted", "LAYOUT_GATE_GATEWAYCLASS_TIMEOUT", secs(300), secs(300),
            "GatewayClass `cilium` Accepted=True."),
        lb_crds: Wait = ("LB IPAM CRDs", "LAYOUT_GATE_LB_CRDS_TIMEOUT", secs(180), secs(180),
            "Cilium's LB IPAM and L2 CRDs present, so the pool and policy can be applied."),
        backends_ready: Wait = ("backends ready", "LAYOUT_GATE_BACKENDS_TIMEOUT", secs(300), secs(300),
            "A case's backend pods ready (image pulls included)."),
        gateway_conditions: Wait = ("Gateway conditions", "LAYOUT_GATE_GATEWAY_TIMEOUT", secs(120), secs(30),
            "A case's conditions, on every Gateway and ListenerSet it defines and its routes, reaching what it expects (otherwise judged as last seen): one wait for all of them."),
        conditions_settle: Wait = ("conditions settle", "LAYOUT_GATE_SETTLE", secs(3), secs(3),
            "How long matching conditions must hold unchanged before they count (flapping guard)."),
        conditions_quiet: Wait = ("conditions quiet", "LAYOUT_GATE_QUIET", secs(5), secs(5),
            "When the expectations are another lane's prediction (`check --lane operator`, the differential): conditions that stopped changing for this long, on every Gateway of the case, are the answer, whether or not they match the prediction."),
        gateway_address: Wait = ("Gateway address", "LAYOUT_GATE_GATEWAY_ADDRESS_TIMEOUT", secs(180), secs(30),
            "Every probed Gateway's status.addresses carrying an IP (each Gateway has its own), when the case probes: one wait for all of them."),
        envoy_config: Wait = ("Envoy config", "LAYOUT_GATE_ENVOY_CONFIG_TIMEOUT", secs(60), secs(60),
            "Reading the CiliumEnvoyConfig and exec'ing `cilium-dbg envoy admin config listeners`."),
        api_request: Wait = ("API request", "LAYOUT_GATE_API_REQUEST_TIMEOUT", secs(30), secs(30),
            "One API request (apply, get, list, delete, logs)."),
        namespace_delete: Wait = ("namespace delete", "LAYOUT_GATE_NAMESPACE_DELETE_TIMEOUT", secs(180), secs(180),
            "A case namespace gone after deletion."),
        diagnostics: Wait = ("diagnostics", "LAYOUT_GATE_DIAGNOSTICS_TIMEOUT", secs(60), secs(60),
            "Collecting diagnostics after a failure."),
        control_plane_start: Wait = ("control plane start", "LAYOUT_GATE_CONTROL_PLANE_TIMEOUT", secs(90), secs(90),
            "Operator lane: etcd and kube-apiserver serving on loopback, kube-system created."),
        chart_render: Wait = ("chart render", "LAYOUT_GATE_CHART_RENDER_TIMEOUT", secs(60), secs(60),
            "Operator lane: `helm template` of the pinned chart."),
        operator_ready: Wait = ("operator ready", "LAYOUT_GATE_OPERATOR_READY_TIMEOUT", secs(90), secs(90),
            "Operator lane: cilium-operator answering `/healthz`."),
    }
}

// Every wait is a small `Copy` value; the lanes hand the whole table around by value.
impl Copy for ClusterTimeouts {}

impl ClusterTimeouts {
    /// The operator lane's defaults (the table's `Local` column).
    pub fn operator_defaults() -> Self {
        Self::defaults(crate::run::Profile::Local)
    }
}

/// Every setting a run of a cluster lane (kind, operator) reads: the probes' waits and the
/// cluster waits.
pub fn known_settings() -> Vec<&'static str> {
    let mut v = crate::run::Timeouts::vars();
    v.extend(ClusterTimeouts::vars());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Row, Timeouts};

    /// docs/waits.md's tables, as the two tables in the code give them.
    fn waits_doc_tables() -> String {
        fn table(rows: Vec<Row>, model: bool) -> String {
            let mut out = String::from("| Setting | Variable | What it bounds | model | operator | kind |\n|---|---|---|---|---|---|\n");
            for r in rows {
                let m = if model { r.local.as_str() } else { "-" };
                out.push_str(&format!("| `{}` | `{}` | {} | {m} | {} | {} |\n", r.key, r.var, r.bounds, r.local, r.cluster));
            }
            out
        }
        format!(
            "### Every lane: probes and the local Envoy (`run::Timeouts`)\n\n{}\n### The cluster lanes (`lanes::cluster::timeouts::ClusterTimeouts`)\n\n{}",
            table(Timeouts::rows(), true),
            table(ClusterTimeouts::rows(), false)
        )
    }

    #[test]
    fn docs_waits_md_lists_every_wait_with_its_defaults() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/waits.md");
        let text = std::fs::read_to_string(&path).expect("docs/waits.md");
        let (begin, end) = ("<!-- waits: generated from the tables, checked by a unit test -->\n", "<!-- waits end -->");
        let from = text.find(begin).expect("docs/waits.md: the begin marker") + begin.len();
        let to = text[from..].find(end).expect("docs/waits.md: the end marker") + from;
        let want = waits_doc_tables();
        assert!(
            text[from..to] == want,
            "docs/waits.md's tables differ from the code's (run::Timeouts, ClusterTimeouts); write between the markers:\n{want}"
        );
    }

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
