//! The operator lane's side of the bring-up seam ([`ClusterLane`]): nothing to preflight (a
//! control plane that is not built is a failed phase, with the command that builds it); a warm
//! control plane (`layout-gate operator up`) that matches the pin and the binaries when the
//! command may use one ([`up::attach_or_start`]: used, and left running), else the control plane
//! built for the version started as local processes ([`up::start`]), stopped when the lane's hold
//! on it is dropped: every process of it dies with layout-gate.

use std::collections::BTreeMap;

use super::plane::{AgentStep, OperatorPlane};
use super::up::{self, OperatorUp};
use crate::evidence::Lane;
use crate::lanes::cluster::batch::Batch;
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::lane::{ClusterLane, NotAlive, Ready, Refusal};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::setup::Setup;
use crate::lanes::cluster::teardown::Teardown;

/// An operator-lane run's cluster: a local control plane.
#[derive(Default)]
pub struct OperatorCluster {
    /// How many cases run on it at once (`run --lane operator --batch`); the e2e suite runs one
    /// case per trial.
    pub cases_at_once: Batch,
    /// The command (`run`) when a warm control plane that matches may serve it, named in what
    /// it says; `None` (the e2e suite, which measures and inspects a plane of its own): always
    /// start one.
    pub warm_for: Option<&'static str>,
    /// This version's plane, already coming up beside an earlier version's cases
    /// ([`up::Ahead`]); `None`: brought up when the session asks.
    pub early: Option<up::Early>,
    /// The agent step chosen once the control plane is up ([`AgentStep::choose`]).
    pub step: Option<AgentStep>,
}

/// What a run's first line says it runs on: the warm plane it will use (when it may use one and
/// a trusted one that matches is up: `warm` is only looked at then), else a plane of its own,
/// already coming up beside an earlier version's cases or started now. A warm plane refused
/// later is said then, with why.
fn describe(may_use_warm: bool, early: bool, warm: impl FnOnce() -> Option<super::warm::State>) -> String {
    if early {
        return "a local control plane (coming up beside the previous version's cases)".into();
    }
    match may_use_warm.then(warm).flatten() {
        Some(s) => format!("the warm control plane (holder pid {}, up since {})", s.holder_pid, s.started_at),
        None => "a local control plane".into(),
    }
}

impl ClusterLane for OperatorCluster {
    type Up = OperatorUp;
    type Plane = OperatorPlane;
    const LANE: Lane = Lane::Operator;

    fn describe(&self, setup: &Setup) -> String {
        describe(self.warm_for.is_some(), self.early.is_some(), || super::warm::peek(&setup.pins, &setup.version).ok().flatten())
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
    ) -> Result<OperatorUp, PhaseError> {
        let mut up = match self.early.take() {
            Some(early) => up::adopt_early(d, setup, early, log).await,
            None => up::attach_or_start(d, setup, run_id, log, self.warm_for).await,
        }?;
        let step = AgentStep::choose(&setup.pins, &setup.version, up.kube().kubeconfig.as_deref(), run_id)
            .map_err(|e| PhaseError::new("agent step", e))?;
        step.say_in(up.environment_mut());
        self.step = Some(step);
        Ok(up)
    }

    fn ready(up: &OperatorUp) -> Ready<'_> {
        Ready { kube: up.kube(), environment: up.environment() }
    }

    fn plane(&self, setup: &Setup, up: &OperatorUp) -> OperatorPlane {
        OperatorPlane::new(
            up.secrets_namespace().to_string(),
            setup.probe_timeouts.envoy_ready.limit,
            super::agent::AgentChecks::at(&setup.version),
        )
        .with_step(self.step.clone().unwrap_or(AgentStep::Emulated { why: "no agent step was chosen".into() }))
    }

    /// One at a time with Cilium's own agent: it serves every CEC of the plane, and an update
    /// Envoy refuses is reverted together with whatever else was pending in it (docs/operator-lane.md).
    fn cases_at_once(&self) -> Batch {
        match &self.step {
            Some(s) => s.cases_at_once(self.cases_at_once),
            None => self.cases_at_once,
        }
    }

    fn log_tails(up: &OperatorUp) -> Vec<(String, String)> {
        up.log_tails(200)
    }

    fn check_alive(up: &OperatorUp) -> Result<(), NotAlive> {
        up.check_alive()
    }

    fn adopt(_up: &mut OperatorUp, _teardown: &mut Teardown) {
        // Nothing of the control plane is on the teardown list: its processes stop when the
        // suite drops it, or with the process, whatever ends it (a warm plane: never).
    }

    fn shut_down(up: OperatorUp) -> Vec<String> {
        vec![up.shut_down()]
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    /// The first line names the plane the run will use: found on `run`'s first line saying "a
    /// local control plane" while the run went to the warm one.
    #[test]
    fn the_first_line_names_the_warm_plane_only_when_it_may_be_used() {
        let warm = || Some(super::super::warm::tests::state(4242));
        let said = describe(true, false, warm);
        assert!(said.starts_with("the warm control plane (holder pid 4242, up since 2026-12-03T"), "{said}");
        assert_eq!(describe(false, false, warm), "a local control plane");
        assert_eq!(describe(true, false, || None), "a local control plane");
        assert!(describe(true, true, warm).contains("beside the previous version's cases"));
    }
}
