//! The bring-up seam: what a lane that runs Cilium on an API server does around its cases, and
//! the only thing (with its [`DataPlane`]) in which the kind and operator lanes differ. The
//! session ([`super::session::live`]) and the e2e suite ([`super::suite::Suite`]) are written
//! once against it, so every operator-lane run goes through the lifecycle, the case loop and the
//! evidence path a kind run uses.
//!
//! * kind: preflight of the tools, then create (or reuse, or take an existing context) a kind
//!   cluster and install the pinned Cilium; the cluster is on the teardown list, so teardown
//!   deletes it.
//! * operator: no tool preflight (a missing build is a failed phase); etcd, kube-apiserver,
//!   kube-controller-manager and cilium-operator started as local processes, stopped when the
//!   lane's hold on them is dropped.

#![allow(async_fn_in_trait)] // used with concrete lanes only, never as `dyn`

use std::collections::BTreeMap;

use super::batch::Batch;
use super::diagnostics::{self, Diagnostics};
use super::driver::{Driver, KubeTarget};
use super::failure::{PhaseError, PhaseLog};
use super::live::LiveDriver;
use super::plane::DataPlane;
use super::progress::Progress;
use super::setup::Setup;
use super::teardown::Teardown;
use crate::evidence::Lane;

/// Why a lane did not get as far as bringing a cluster up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// This machine cannot run the lane (a tool is missing): every case is `not run` with
    /// `reason`, and `message` (every problem, with how to fix it) is shown in full.
    NotRun { message: String, reason: String },
    /// Something of the run's own failed before any cluster existed (its run folder): no
    /// evidence is written.
    Failed(String),
}

/// A cluster that is up, as the shared code needs it.
pub struct Ready<'a> {
    /// How to reach its API server.
    pub kube: &'a KubeTarget,
    /// What the bring-up recorded (versions, digests) for evidence `environment`.
    pub environment: &'a BTreeMap<String, String>,
}

/// Asked before each case starts: whether the cluster still runs
/// ([`ClusterLane::check_alive`]). A case started after its control plane stopped waits out every
/// timeout and is then judged on an answer nobody gave (a differential at 1.19.7 ran an hour
/// after its operator exited): the run stops instead, and the cases left are not run, with why.
pub type StillUp<'a> = &'a dyn Fn() -> Result<(), NotAlive>;

/// The error that stops a run whose cluster was found stopped before `case` started.
pub fn stopped_before(case: &str, e: NotAlive) -> PhaseError {
    PhaseError::new(&format!("case {case}: the cluster before it"), format!("not started: the cluster stopped: {e}"))
}

/// What stopped in a cluster that was up (`ClusterLane::check_alive`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAlive {
    /// A process of a plane of the lane's own exited.
    #[error("{name} exited ({status}); its log ends:\n{tail}")]
    Exited { name: String, status: String, tail: String },
    /// The holder of a warm plane (which stops the plane when one of its processes exits).
    #[error("the warm control plane's holder (pid {0}) stopped")]
    HolderStopped(u32),
    /// A process of a warm plane, found gone by its pid.
    #[error("the warm control plane's {name} (pid {pid}) stopped")]
    Stopped { name: String, pid: u32 },
}

/// How a lane brings a cluster up and down.
pub trait ClusterLane {
    /// The lane's hold on a cluster that is up. Dropping it releases what the lane holds outside
    /// the teardown list (the operator lane's processes; the kind cluster an e2e suite adopted).
    type Up;
    /// How the cases reach what Cilium configured on this cluster.
    type Plane: DataPlane;

    const LANE: Lane;

    /// What the cases run on, for the run's first result line (`kind cluster layout-gate-1-19-5`,
    /// `the warm control plane (holder pid 4242)`).
    fn describe(&self, setup: &Setup) -> String;

    /// Before anything is created: whether this machine can run the lane; what the evidence
    /// `environment` gains from finding out (tool versions).
    async fn preflight(&mut self, setup: &Setup, progress: &Progress) -> Result<BTreeMap<String, String>, Refusal>;

    /// Brings the cluster up and connects `d` to it, each step timed into `log`. Whatever it
    /// creates that a later step must remove goes on `teardown`.
    async fn bring_up(
        &mut self,
        d: &mut LiveDriver,
        setup: &Setup,
        run_id: &str,
        teardown: &mut Teardown,
        log: &mut PhaseLog,
    ) -> Result<Self::Up, PhaseError>;

    /// What is ready.
    fn ready(up: &Self::Up) -> Ready<'_>;

    /// The data plane the cases of this cluster use (one per case when cases run at once).
    fn plane(&self, setup: &Setup, up: &Self::Up) -> Self::Plane;

    /// How many cases the session runs on this cluster at once, each in namespaces of its own
    /// on a data plane of its own ([`super::batch::run_cases`]). One by default, one after
    /// another: the kind lane's cases share the cluster's one cilium-agent and cilium-envoy
    /// (each case reads their whole dump, filtered by its own CiliumEnvoyConfig's prefix), and
    /// side by side they have not been tried on a real cluster. The operator lane's cases each
    /// have their own Envoy, and why their answers cannot depend on each other is argued from
    /// the operator's code in `lanes/operator/batch.rs`.
    fn cases_at_once(&self) -> Batch {
        Batch::ONE
    }

    /// After a failed bring-up or case: what the API server can still tell, when it is reachable.
    async fn diagnostics(&self, d: &mut LiveDriver, setup: &Setup) -> Option<Diagnostics> {
        if !d.connected() {
            return None;
        }
        d.section("diagnostics (cluster)");
        Some(diagnostics::collect_cluster(d, &setup.timeouts).await)
    }

    /// The last lines of the logs the lane itself keeps (the operator lane's processes), named
    /// by file, for the diagnostics of a failure. None by default.
    fn log_tails(_up: &Self::Up) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Whether the cluster still runs; what stopped, when it does not.
    fn check_alive(_up: &Self::Up) -> Result<(), NotAlive> {
        Ok(())
    }

    /// The e2e suite keeps one cluster for all its trials: what `teardown` would remove when the
    /// trial that brought it up ends becomes `up`'s to remove when the suite is dropped (or on a
    /// signal).
    fn adopt(up: &mut Self::Up, teardown: &mut Teardown);

    /// Shuts down what the teardown list does not hold; what was done, for the run's report.
    fn shut_down(up: Self::Up) -> Vec<String>;
}

#[cfg(test)]
mod tests {
    use super::NotAlive;

    /// The words are the ones the lanes said as plain strings before the type: trials and a
    /// user's log read them.
    #[test]
    fn what_stopped_is_said_as_before() {
        let e = NotAlive::Exited { name: "cilium-operator".into(), status: "exit status: 1".into(), tail: "panic: x".into() };
        assert_eq!(e.to_string(), "cilium-operator exited (exit status: 1); its log ends:\npanic: x");
        assert_eq!(NotAlive::HolderStopped(42).to_string(), "the warm control plane's holder (pid 42) stopped");
        assert_eq!(NotAlive::Stopped { name: "etcd".into(), pid: 7 }.to_string(), "the warm control plane's etcd (pid 7) stopped");
    }
}
