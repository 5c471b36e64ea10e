//! A whole operator-lane run: for each Cilium version asked for, the shared cluster-lane session
//! ([`crate::lanes::cluster::session::live`]) with this lane's side of the seam
//! ([`OperatorCluster`]): a warm control plane (`operator up`) that matches the pin and the
//! binaries is used, else the control plane built for it is started; every case runs through the
//! shared cluster code with the operator lane's data plane (`--batch` of them at once, each on
//! its own Envoy), evidence is written, and a control plane the run started is stopped, also on
//! Ctrl-C or SIGTERM (a warm one is left running, the run's namespaces removed). A version whose
//! control plane is not built, or does not come up, is `not run` with the reason: never a
//! verdict.

use std::path::Path;
use std::sync::Arc;

use super::OperatorOptions;
use super::binaries::ControlPlaneBinaries;
use super::control_plane::ControlPlane;
use super::lane::OperatorCluster;
use super::up;
use crate::case::{Case, CiliumVersion};
use crate::evidence::Lane;
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::lane::ClusterLane;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::session::{self as cluster_session, Gathered, RunEnd, RunError};
pub use crate::lanes::cluster::setup::{Setup, SetupError};
use crate::run::{Settings, Signal};
use crate::versions::Pins;

/// The setup of one version's run: the pins, the kind-config files, the cases expecting
/// something at `version`, and the lane's waits.
pub fn setup(
    pins: &Pins,
    version: CiliumVersion,
    version_source: String,
    cases: &[Case],
    settings: &Settings,
) -> Result<Setup, SetupError> {
    Setup::load(Lane::Operator, pins.clone(), version, version_source, false, cases.to_vec(), settings, false)
}

/// The versions a run is for: the flags, else the versions file's default.
pub fn versions(pins: &Pins, flags: &[String]) -> Result<Vec<(CiliumVersion, String)>, String> {
    if flags.is_empty() {
        return Ok(vec![(pins.default.clone(), pins.file_label())]);
    }
    flags.iter().map(|f| Ok((pins.pick(f)?.version.clone(), "--cilium flag".to_string()))).collect()
}

/// Brings the control plane for `setup` up: its binaries found, then started. On failure, the
/// phase error (and, in `st`, the diagnostics the API server could still give).
pub async fn bring_up(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    st: &mut Gathered,
) -> Result<(ControlPlane, ControlPlaneBinaries), PhaseError> {
    match up::start(d, setup, run_id, &mut st.log).await {
        Ok(up) => Ok(up),
        Err(e) => {
            st.cluster_diag = OperatorCluster::default().diagnostics(d, setup).await;
            Err(e)
        }
    }
}

/// What `run` is called in what a warm plane's use says.
const WARM_FOR: &str = "run";

/// `layout-gate run --lane operator` over the selected `cases`: each version in turn, the next
/// versions' control planes coming up beside it as far as the free memory allows. An
/// interruption ends the run; another failure lets the next version run, and the run ends as
/// the last version that did not pass.
pub fn run(cases: Vec<Case>, pins: &Pins, options: &OperatorOptions, evidence_dir: &Path) -> Result<RunEnd, RunError> {
    let versions = versions(pins, &options.cilium).map_err(|e| RunError::Setup(e.into()))?;
    // A selection with nothing to run at the chosen versions is bad input, not "0 passed".
    let chosen: Vec<CiliumVersion> = versions.iter().map(|(v, _)| v.clone()).collect();
    if let Some(why) = crate::run::nothing_to_run(&cases, &chosen, !options.cilium.is_empty(), &pins.versions()) {
        return Err(RunError::Setup(why.into()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(RunError::Runtime)?;
    let setups = versions
        .into_iter()
        .map(|(version, source)| setup(pins, version, source, &cases, &options.settings).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RunError::Setup(e.into()))?;
    // Versions asked together: the next ones' control planes come up while a version's cases
    // run, as many as the free memory holds beside it (each is said, with its phases, when its
    // turn comes).
    let ahead = super::batch::planes_at_once(super::batch::mem_available()).saturating_sub(1);
    let early = up::Ahead::default();
    let mut worst = RunEnd::Passed;
    for (i, setup) in setups.iter().enumerate() {
        for later in setups.iter().skip(i + 1).take(ahead) {
            let run_id = || crate::evidence::run_id(Lane::Operator, Some(&later.version.to_string()), options.shard.as_deref());
            early.start(runtime.handle(), later, run_id, WARM_FOR);
        }
        let mut lane =
            OperatorCluster { cases_at_once: options.batch, warm_for: Some(WARM_FOR), early: early.take(&setup.version), step: None };
        let end = runtime.block_on(cluster_session::live(&mut lane, setup, evidence_dir, options.fail_fast, options.shard.as_deref()))?;
        match end {
            // Ctrl-C and SIGTERM end the run (as before this seam: a SIGHUP or SIGQUIT
            // ends this version only).
            RunEnd::Interrupted(Signal::Interrupt | Signal::Terminate) => return Ok(end),
            RunEnd::Passed => {}
            _ => worst = end,
        }
    }
    Ok(worst)
}
