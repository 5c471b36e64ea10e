//! The operator lane's side of the bring-up seam ([`ClusterLane`]): nothing to preflight (a
//! control plane that is not built is a failed phase, with the command that builds it); the
//! control plane built for the version started as local processes ([`control_plane`]), stopped
//! when the lane's hold on it is dropped: every process of it dies with layout-gate.

use std::collections::BTreeMap;

use super::binaries::{self, ControlPlaneBinaries};
use super::control_plane::{self, ControlPlane};
use super::plane::OperatorPlane;
use crate::evidence::Lane;
use crate::lanes::cluster::batch::Batch;
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::lane::{ClusterLane, Ready, Refusal};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::setup::Setup;
use crate::lanes::cluster::teardown::Teardown;

/// An operator-lane run's cluster: a local control plane.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperatorCluster {
    /// How many cases run on it at once (`run --lane operator --batch`); the e2e suite runs one
    /// case per trial.
    pub cases_at_once: Batch,
}

/// Starts the control plane for `setup`'s version: its binaries found, then each process
/// started and waited for, phase by phase.
pub async fn start(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    log: &mut PhaseLog,
) -> Result<(ControlPlane, ControlPlaneBinaries), PhaseError> {
    let pin = setup
        .pins
        .get(&setup.version)
        .ok_or_else(|| PhaseError::new("control plane", format!("Cilium {} is not pinned", setup.version)))?;
    let bins = binaries::find(&setup.pins, &setup.version).map_err(|e| PhaseError::new("find the control plane's binaries", e))?;
    let plan = control_plane::Plan {
        pins: &setup.pins,
        pin,
        files: &setup.files,
        binaries: &bins,
        timeouts: setup.timeouts,
        run_id: run_id.to_string(),
    };
    let cp = control_plane::bring_up(d, &plan, log).await?;
    Ok((cp, bins))
}

impl ClusterLane for OperatorCluster {
    type Up = ControlPlane;
    type Plane = OperatorPlane;
    const LANE: Lane = Lane::Operator;

    fn describe(&self) -> String {
        "a local control plane".into()
    }

    async fn preflight(&mut self, _setup: &Setup, _progress: &Progress) -> Result<BTreeMap<String, String>, Refusal> {
        Ok(BTreeMap::new())
    }

    async fn bring_up(
        &mut self,
        d: &mut LiveDriver,
        setup: &Setup,
        run_id: &str,
        _teardown: &mut Teardown,
        log: &mut PhaseLog,
    ) -> Result<ControlPlane, PhaseError> {
        start(d, setup, run_id, log).await.map(|(cp, _)| cp)
    }

    fn ready(cp: &ControlPlane) -> Ready<'_> {
        Ready { kube: &cp.kube, environment: &cp.environment }
    }

    fn plane(&self, setup: &Setup, cp: &ControlPlane) -> OperatorPlane {
        OperatorPlane::new(cp.secrets_namespace.clone(), setup.probe_timeouts.envoy_ready.limit)
    }

    fn cases_at_once(&self) -> Batch {
        self.cases_at_once
    }

    fn log_tails(cp: &ControlPlane) -> Vec<(String, String)> {
        cp.log_tails(200)
    }

    fn check_alive(cp: &ControlPlane) -> Result<(), String> {
        cp.check_alive()
    }

    fn adopt(_cp: &mut ControlPlane, _teardown: &mut Teardown) {
        // Nothing of the control plane is on the teardown list: its processes stop when the
        // suite drops it, or with the process, whatever ends it.
    }

    fn shut_down(cp: ControlPlane) -> Vec<String> {
        drop(cp);
        vec!["local control plane (cilium-operator, kube-apiserver, etcd) stopped, its folder removed".into()]
    }
}
