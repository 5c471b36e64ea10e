//! The kind lane: real Cilium, pinned by version, on a kind cluster the harness creates. The
//! gate.
//!
//! One run: preflight → cluster (create, reuse by name, or an explicitly named existing
//! context) → Gateway API CRDs → Cilium by Helm → wait for agent, operator, cilium-envoy and
//! the GatewayClass → LB IPAM pool and L2 policy → per case (namespace, Secrets, backends,
//! manifests by server-side apply, watched conditions of every Gateway and ListenerSet of the
//! case, probes to each Gateway's address, both Envoy views per Gateway, judge, diagnostics on
//! failure, namespace deleted) → evidence → teardown in reverse order of creation.
//!
//! What a case does against the API server is the shared [`crate::lanes::cluster`] code; this
//! lane adds creating the cluster and installing Cilium ([`lifecycle`], written once against the
//! driver: the live driver runs the tools and talks to the API server, the dry-run driver prints
//! every command and manifest instead, so `--dry-run` shows exactly what a live run does), and
//! its data plane ([`plane`]: backend pods, probes to the Gateway's address on the kind network,
//! Envoy's listeners read with `cilium-dbg` in an agent).

pub mod dry;
pub mod lane;
pub mod lifecycle;
pub mod plane;
pub mod preflight;
pub mod session;
pub mod suite;

use crate::run::Settings;

/// How a kind-lane run goes, decided by the caller (the CLI maps its flags onto it).
#[derive(Debug, Clone, Default)]
pub struct KindOptions {
    /// The Cilium version asked for (at most one; none: `LAYOUT_GATE_CILIUM`, else the default).
    pub cilium: Vec<String>,
    /// Print every command and manifest the run would apply, in order, and run nothing.
    pub dry_run: bool,
    /// Leave the cluster the run created in place.
    pub keep_cluster: bool,
    /// Reuse a cluster an earlier run created and kept.
    pub reuse_cluster: Option<String>,
    /// Run in a cluster layout-gate did not create, by kubeconfig context.
    pub existing_cluster: Option<String>,
    /// Leave each case's namespace in place after it ran.
    pub keep_namespaces: bool,
    /// Install Cilium with debug.verbose=envoy.
    pub cilium_debug: bool,
    /// The shard this run is (`2/3`), written into the run id so shards never collide.
    pub shard: Option<String>,
    /// After the first failing case, start no further case.
    pub fail_fast: bool,
    /// Every named wait (the lane's and the probes'), layered flag > env > file > default.
    pub settings: Settings,
}

pub use crate::lanes::cluster::timeouts::known_settings;
