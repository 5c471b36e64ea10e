//! The kind lane: real Cilium, pinned by version, on a kind cluster the harness creates. The
//! gate.
//!
//! One run: preflight → cluster (create, reuse by name, or an explicitly named existing
//! context) → Gateway API CRDs → Cilium by Helm → wait for agent, operator, cilium-envoy and
//! the GatewayClass → LB IPAM pool and L2 policy → per case (namespace, Secrets, backends,
//! manifests by server-side apply, watched conditions, probes to the Gateway address, both
//! Envoy views, judge, diagnostics on failure, namespace deleted) → evidence → teardown in
//! reverse order of creation.
//!
//! The lifecycle is written once against [`driver::Driver`]: the live driver runs the tools
//! (duct) and talks to the API server (kube-rs); the dry-run driver prints every command and
//! manifest instead, so `--dry-run` shows exactly what a live run does.

pub mod config;
pub mod diagnostics;
pub mod driver;
pub mod dry;
pub mod failure;
#[cfg(test)]
mod golden;
pub mod lifecycle;
pub mod live;
pub mod manifests;
pub mod names;
pub mod one_case;
pub mod preflight;
pub mod progress;
pub mod replay;
pub mod session;
pub mod subnet;
pub mod suite;
pub mod teardown;
pub mod timeouts;
pub mod tools;
pub mod track;

use std::process::ExitCode;

use clap::Args;

use crate::cli::run::RunArgs;

/// Options only the kind lane reads.
#[derive(Debug, Clone, Default, Args)]
pub struct KindArgs {
    /// Print every command and manifest the run would apply, in order, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the cluster the run created in place (reuse it later with --reuse-cluster).
    #[arg(long)]
    pub keep_cluster: bool,
    /// Reuse a cluster an earlier run created and kept (e.g. layout-gate-1-19-5). Refused
    /// unless it carries layout-gate's marker with the same Cilium version and Helm values.
    /// A reused cluster is kept.
    #[arg(long, value_name = "NAME", conflicts_with = "existing_cluster")]
    pub reuse_cluster: Option<String>,
    /// Run in a cluster layout-gate did not create, by kubeconfig context. Explicit opt-in:
    /// nothing cluster-wide is installed or deleted there; Cilium must already run the
    /// requested version.
    #[arg(long, value_name = "CONTEXT", conflicts_with = "keep_cluster")]
    pub existing_cluster: Option<String>,
    /// Leave each case's namespace in place after it ran.
    #[arg(long)]
    pub keep_namespaces: bool,
    /// Install Cilium with debug.verbose=envoy (Envoy debug logs in diagnostics).
    #[arg(long)]
    pub cilium_debug: bool,
}

pub fn cli_run(args: &RunArgs) -> ExitCode {
    session::cli_run(args)
}
