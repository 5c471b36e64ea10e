//! A whole operator-lane run: for each Cilium version asked for, the control plane built for it
//! is started, every case runs through the shared cluster code with the operator lane's data
//! plane, evidence is written, and the control plane is stopped, also on Ctrl-C or SIGTERM. A
//! version whose control plane is not built, or does not come up, is `not run` with the reason:
//! never a verdict.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use super::OperatorOptions;
use super::batch::{self, Batch};
use super::binaries::{self, ControlPlaneBinaries};
use super::control_plane::{self, ControlPlane};
use crate::case::{Case, CiliumVersion};
use crate::evidence::{self, Lane};
use crate::lanes::cluster::config::KindFiles;
use crate::lanes::cluster::diagnostics;
use crate::lanes::cluster::driver::Driver;
use crate::lanes::cluster::failure::{PhaseError, TeardownReport};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::{self as cluster_session, CaseRun, Gathered, Outcomes, RunLabel};
use crate::lanes::cluster::teardown::Teardown;
use crate::lanes::cluster::timeouts::KindTimeouts;
use crate::run::{Settings, Signals, Timeouts};
use crate::versions::Pins;

/// Everything a run of one version is about, decided before anything runs.
pub struct Setup {
    pub pins: Pins,
    pub version: CiliumVersion,
    pub version_source: String,
    pub files: KindFiles,
    pub cases: Vec<Case>,
    pub timeouts: KindTimeouts,
    pub probe_timeouts: Timeouts,
}

impl Setup {
    /// The pins, the kind-config files, the cases expecting something at `version`, the waits.
    pub fn load(pins: &Pins, version: CiliumVersion, version_source: String, cases: &[Case], settings: &Settings) -> Result<Setup, String> {
        let dir = pins.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let files = KindFiles::load(&dir, false)?;
        let (cases, elsewhere): (Vec<Case>, Vec<Case>) = cases.iter().cloned().partition(|c| c.expects_at(&version));
        if !elsewhere.is_empty() {
            let names: Vec<&str> = elsewhere.iter().map(|c| c.name.as_str()).collect();
            eprintln!(
                "{}",
                crate::table::list_line(&format!("layout-gate operator {version}: no expectation at this version, left out:"), &names)
            );
        }
        Ok(Setup {
            pins: pins.clone(),
            version,
            version_source,
            files,
            cases,
            timeouts: KindTimeouts::from_lookup_over(KindTimeouts::operator_defaults(), |k| settings.lookup(k))
                .map_err(|e| settings.explain(&e))?,
            // The data plane is a local Envoy, as in the model lane.
            probe_timeouts: Timeouts::from_lookup_over(Timeouts::local_envoy(), |k| settings.lookup(k))
                .map_err(|e| settings.explain(&e))?,
        })
    }

    pub fn tlsroute_version(&self) -> &str {
        self.pins.get(&self.version).map_or("v1alpha2", |p| p.gateway_api.tlsroute.as_str())
    }

    pub fn common(&self) -> CaseRun<'_> {
        CaseRun {
            lane: Lane::Operator,
            version: &self.version,
            timeouts: &self.timeouts,
            probe_timeouts: &self.probe_timeouts,
            keep_namespaces: false,
            tlsroute_version: self.tlsroute_version(),
            expecting: crate::lanes::cluster::session::Expecting::Asserted,
        }
    }
}

/// The versions a run is for: the flags, else the versions file's default.
pub fn versions(pins: &Pins, flags: &[String]) -> Result<Vec<(CiliumVersion, String)>, String> {
    if flags.is_empty() {
        return Ok(vec![(pins.default.clone(), pins.file_label())]);
    }
    flags.iter().map(|f| Ok((pins.pick(f)?.version.clone(), "--cilium flag".to_string()))).collect()
}

/// Brings the control plane for `setup` up: its binaries found, then started. On failure, the
/// phase error (and the diagnostics the API server could still give).
pub async fn bring_up(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    st: &mut Gathered,
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
    match control_plane::bring_up(d, &plan, &mut st.log).await {
        Ok(cp) => Ok((cp, bins)),
        Err(e) => {
            if d.connected() {
                d.section("diagnostics (cluster)");
                st.cluster_diag = Some(diagnostics::collect_cluster(d, &setup.timeouts).await);
            }
            Err(e)
        }
    }
}

/// `layout-gate run --lane operator` over the selected `cases`: each version in turn.
pub fn run(cases: Vec<Case>, pins: &Pins, options: &OperatorOptions, evidence_dir: &Path) -> ExitCode {
    let versions = match versions(pins, &options.cilium) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("layout-gate run --lane operator: {e}");
            return ExitCode::from(2);
        }
    };
    // A selection with nothing to run at the chosen versions is bad input, not "0 passed".
    let chosen: Vec<CiliumVersion> = versions.iter().map(|(v, _)| v.clone()).collect();
    if let Some(why) = crate::run::nothing_to_run(&cases, &chosen, !options.cilium.is_empty(), &pins.versions()) {
        eprintln!("layout-gate run --lane operator: {why}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("layout-gate run --lane operator: starting the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let mut worst = ExitCode::SUCCESS;
    for (version, source) in versions {
        let setup = match Setup::load(pins, version, source, &cases, &options.settings) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("layout-gate run --lane operator: {e}");
                return ExitCode::from(2);
            }
        };
        let code = runtime.block_on(live(&setup, evidence_dir, options.fail_fast, options.shard.as_deref(), options.batch));
        if code != ExitCode::SUCCESS {
            // An interruption ends the run; other failures let the next version run.
            if code == ExitCode::from(130) || code == ExitCode::from(143) {
                return code;
            }
            worst = code;
        }
    }
    worst
}

async fn live(setup: &Setup, evidence_dir: &Path, fail_fast: bool, shard: Option<&str>, batch: Batch) -> ExitCode {
    let started_at = evidence::now_rfc3339();
    let run_id = evidence::run_id(Lane::Operator, Some(&setup.version.to_string()), shard);
    let label = RunLabel::new(Lane::Operator, &setup.version, &setup.version_source, &run_id, &started_at);
    let mut signals = Signals::new();
    let progress = Progress::from_env();
    progress.set_total(setup.cases.len());
    progress.result(&format!("{}\nCilium {} on a local control plane", Lane::Operator.banner(), setup.version));
    let mut d = LiveDriver::new(progress.clone(), setup.timeouts);
    let mut teardown = Teardown::default();
    let mut st = Gathered::default();
    let mut result = None;
    let mut control = None;
    // A warm plane (`operator up`) that can be trusted and runs these binaries, else our own.
    let warm = super::warm::attach_or_say(&setup.pins, &setup.version, "run --lane operator");
    let interrupted = {
        let run = async {
            let plane = match &warm {
                Some(w) => {
                    d.connect(&w.state.kube(), setup.timeouts.control_plane_start)
                        .await
                        .map_err(|e| PhaseError::step("warm control plane", e))?;
                    progress.note(&format!("Cilium {}: on the warm control plane (holder pid {})", setup.version, w.state.holder_pid));
                    st.environment.extend(w.state.environment.clone());
                    st.environment.insert("control_plane".into(), format!("warm (operator up; holder pid {})", w.state.holder_pid));
                    batch::PlaneSpec { secrets_namespace: w.state.secrets_namespace.clone(), envoy_ready: setup.probe_timeouts.envoy_ready }
                }
                None => {
                    let (cp, _bins) = bring_up(&mut d, setup, &run_id, &mut st).await?;
                    st.environment.extend(cp.environment.clone());
                    let plane =
                        batch::PlaneSpec { secrets_namespace: cp.secrets_namespace.clone(), envoy_ready: setup.probe_timeouts.envoy_ready };
                    control = Some(cp);
                    plane
                }
            };
            // Up to `batch` cases at once, each in its own namespaces (see `batch` for why they
            // cannot change each other's answers).
            let r =
                batch::run_cases(&d, &plane, &setup.cases, &run_id, &setup.common(), &mut teardown, &mut st, &progress, fail_fast, batch)
                    .await;
            if r.is_err()
                && let Some(cp) = &control
            {
                add_logs(&mut st, cp);
            }
            r
        };
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => { result = Some(r); None }
            s = signals.next() => Some(s),
        }
    };
    if let Some(sig) = interrupted {
        eprintln!("layout-gate operator lane: {sig}: stopping; tearing down {}", teardown.pending().join(", "));
    }
    let report = if control.is_some() || warm.is_some() { teardown.run(&mut d, &setup.timeouts).await } else { TeardownReport::default() };
    drop(warm);
    let mut report = cluster_session::merged_report(report, &mut st);
    if let Some(cp) = control.take() {
        drop(cp);
        report.done.push("local control plane (cilium-operator, kube-apiserver, etcd) stopped, its folder removed".into());
    }
    cluster_session::finish(&label, &setup.cases, evidence_dir, BTreeMap::new(), &mut st, result, interrupted, report, &progress)
}

/// The control plane's log tails, into the cluster diagnostics.
pub fn add_logs(st: &mut Gathered, cp: &ControlPlane) {
    let dg = st.cluster_diag.get_or_insert_with(Default::default);
    for (name, text) in cp.log_tails(200) {
        dg.add(&name, text);
    }
}

/// Evidence for a version that never reached a control plane: every case not run, with why.
pub fn not_run_evidence(setup: &Setup, evidence_dir: &Path, why: &str) -> Result<std::path::PathBuf, String> {
    let started_at = evidence::now_rfc3339();
    let run_id = evidence::run_id(Lane::Operator, Some(&setup.version.to_string()), None);
    let label = RunLabel::new(Lane::Operator, &setup.version, &setup.version_source, &run_id, &started_at);
    let not = setup.cases.iter().map(|c| cluster_session::not_run(c, why)).collect();
    cluster_session::write_evidence(
        &label,
        evidence_dir,
        Vec::new(),
        BTreeMap::new(),
        Vec::new(),
        Outcomes { selected: setup.cases.iter().map(|c| c.name.clone()).collect(), cases: Vec::new(), not_run: not, interrupted: false },
        Vec::new(),
    )
}
