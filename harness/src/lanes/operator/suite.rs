//! The operator lane under `cargo test --test e2e`: one trial per case for one Cilium version,
//! all sharing one local control plane, started by the first trial that runs and stopped when
//! the suite is dropped (or with the process, whatever ends it: every process of it dies with
//! layout-gate).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::binaries;
use super::control_plane::ControlPlane;
use super::plane::OperatorPlane;
use super::session::{self, Setup};
use crate::case::{Case, CiliumVersion};
use crate::evidence::{CaseEvidence, Lane, Phase};
use crate::judge::Outcome;
use crate::lanes::cluster::driver::Driver;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::{self as cluster_session, Gathered, Outcomes, RunLabel};
use crate::lanes::cluster::teardown::Teardown;
use crate::versions::Pins;

enum State {
    NotStarted,
    Up {
        // Boxed: the control plane is large and the other states are small.
        cp: Box<ControlPlane>,
        phases: Vec<Phase>,
    },
    /// Bringing the control plane up failed; every trial fails with this.
    Broken(String),
}

pub struct Suite {
    pub setup: Setup,
    evidence_root: PathBuf,
    state: Mutex<State>,
}

/// Why the suite cannot run here, and whether that is a failure or an ignored trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub reason: String,
    /// True when Go itself is missing (the reason then says how to install it).
    pub no_go: bool,
}

/// Whether `go` runs here.
pub fn go_available() -> bool {
    std::process::Command::new("go")
        .arg("version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Suite {
    /// Every case under `cases_dir` for `version` (none: the versions file's default).
    pub fn prepare(cases_dir: &Path, evidence_root: &Path, version: Option<&str>) -> Result<Suite, String> {
        let pins = Pins::load_default().map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
        let (version, source): (CiliumVersion, String) = match version {
            Some(v) => (pins.pick(v)?.version.clone(), "LAYOUT_GATE_OPERATOR_CILIUM".into()),
            None => (pins.default.clone(), pins.file_label()),
        };
        let cases = crate::run::select(cases_dir, &crate::run::Selection::all(), None)?;
        let settings = crate::run::Settings::from_env(&super::known_settings());
        let setup = Setup::load(&pins, version, source, &cases, &settings)?;
        Ok(Suite { setup, evidence_root: evidence_root.to_path_buf(), state: Mutex::new(State::NotStarted) })
    }

    /// Whether the control plane for this version is built here; why not.
    pub fn prerequisites(&self) -> Result<(), Missing> {
        binaries::find(&self.setup.pins, &self.setup.version).map(|_| ()).map_err(|e| {
            let no_go = !go_available();
            let reason = if no_go {
                format!("Go is not on the PATH, so the operator lane's control plane cannot be built: install Go >= 1.26 (https://go.dev/dl/), then run scripts/install-control-plane.sh {} ({e})", self.setup.version)
            } else {
                e
            };
            Missing { reason, no_go }
        })
    }

    pub fn case_names(&self) -> Vec<String> {
        self.setup.cases.iter().map(|c| c.name.clone()).collect()
    }

    /// Runs one case (bringing the shared control plane up first if no trial has), writes its
    /// evidence, and says why it failed.
    pub fn run_case(&self, name: &str) -> Result<(), String> {
        let ev = self.run_case_evidence(name)?;
        if ev.outcome == Outcome::Pass {
            return Ok(());
        }
        let mut lines: Vec<String> = ev.verdicts.iter().filter(|v| !v.passed()).map(|v| v.line()).collect();
        if let Some(e) = &ev.error {
            lines.push(format!("error: {e}"));
        }
        Err(lines.join("\n"))
    }

    /// Brings the shared control plane up now (if no trial has); how long that took, or why it
    /// could not.
    pub fn start(&self) -> Result<std::time::Duration, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let mut state = self.state.lock().map_err(|_| "a previous operator trial panicked while holding the control plane".to_string())?;
        let t = std::time::Instant::now();
        if matches!(*state, State::NotStarted) {
            *state = runtime.block_on(self.bring_up());
        }
        match &*state {
            State::Broken(e) => Err(e.clone()),
            _ => Ok(t.elapsed()),
        }
    }

    /// The control plane's processes, by name, while it runs.
    pub fn pids(&self) -> Vec<(String, u32)> {
        match self.state.lock().as_deref() {
            Ok(State::Up { cp, .. }) => cp.pids(),
            _ => Vec::new(),
        }
    }

    /// The control plane's phases (name, milliseconds), once it is up.
    pub fn phases(&self) -> Vec<(String, u64)> {
        match self.state.lock().as_deref() {
            Ok(State::Up { phases, .. }) => phases.iter().map(|p| (p.name.clone(), p.duration_ms)).collect(),
            _ => Vec::new(),
        }
    }

    /// Once the control plane is up: Cilium's CRDs created before the operator started, the
    /// operator's log file, and how to reach the API server.
    pub fn cilium_crds(&self) -> Option<(Vec<String>, PathBuf, crate::lanes::cluster::driver::KubeTarget)> {
        match self.state.lock().as_deref() {
            Ok(State::Up { cp, .. }) => Some((cp.cilium_crds.clone(), cp.operator_log().to_path_buf(), cp.kube.clone())),
            _ => None,
        }
    }

    /// Runs one case and returns its evidence (written under the evidence root too).
    pub fn run_case_evidence(&self, name: &str) -> Result<CaseEvidence, String> {
        let case = self.setup.cases.iter().find(|c| c.name == name).ok_or_else(|| format!("no case {name}"))?.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let mut state = self.state.lock().map_err(|_| "a previous operator trial panicked while holding the control plane".to_string())?;
        if matches!(*state, State::NotStarted) {
            *state = runtime.block_on(self.bring_up());
        }
        match &*state {
            State::NotStarted => Err("internal: control plane not started".into()),
            State::Broken(e) => Err(format!("the shared control plane could not be brought up:\n{e}")),
            State::Up { cp, phases } => {
                cp.check_alive()?;
                runtime.block_on(self.one(&case, cp, phases.clone()))
            }
        }
    }

    async fn bring_up(&self) -> State {
        let run_id = crate::evidence::run_id(Lane::Operator, Some(&self.setup.version.to_string()), None);
        let mut d = LiveDriver::new(Progress::from_env(), self.setup.timeouts);
        let mut st = Gathered::default();
        match session::bring_up(&mut d, &self.setup, &run_id, &mut st).await {
            Ok((cp, _)) => State::Up { cp: Box::new(cp), phases: st.log.phases },
            Err(e) => {
                let diag = st.cluster_diag.map(|dg| dg.files.iter().map(|(n, t)| format!("--- {n}\n{t}")).collect::<Vec<_>>().join("\n"));
                let mut msg = crate::lanes::cluster::failure::failure_message(Lane::Operator, &e, None, &Default::default());
                if let Some(d) = diag {
                    msg.push_str(&format!("\n{}", d.chars().rev().take(4000).collect::<String>().chars().rev().collect::<String>()));
                }
                State::Broken(msg)
            }
        }
    }

    async fn one(&self, case: &Case, cp: &ControlPlane, cluster_phases: Vec<Phase>) -> Result<CaseEvidence, String> {
        let started_at = crate::evidence::now_rfc3339();
        let run_id = format!("{}-{}", crate::evidence::run_id(Lane::Operator, Some(&self.setup.version.to_string()), None), case.slug());
        let mut d = LiveDriver::new(Progress::from_env(), self.setup.timeouts);
        d.connect(&cp.kube, self.setup.timeouts.api_ready).await.map_err(|e| e.to_string())?;
        let mut teardown = Teardown::default();
        let mut plane = OperatorPlane::new(cp.secrets_namespace.clone(), self.setup.probe_timeouts.envoy_ready);
        let mut st = Gathered::default();
        let progress = Progress::from_env();
        let r = cluster_session::run_cases(
            &mut d,
            &mut plane,
            std::slice::from_ref(case),
            &run_id,
            &self.setup.common(),
            &mut teardown,
            &mut st,
            &progress,
            false,
        )
        .await;
        drop(plane);
        let leftovers = teardown.run(&mut d, &self.setup.timeouts).await;
        if let Err(e) = r {
            return Err(e.to_string());
        }
        let outcome = st.outcomes.pop().ok_or("the case did not run")?;
        let mut environment = cp.environment.clone();
        environment.extend(outcome.environment.clone());
        let mut phases = cluster_phases;
        phases.extend(outcome.phases.clone());
        let label = RunLabel::new(Lane::Operator, &self.setup.version, &self.setup.version_source, &run_id, &started_at);
        let folders: Vec<_> = outcome
            .diagnostics
            .clone()
            .map(|mut dg| {
                for (n, t) in cp.log_tails(200) {
                    dg.add(&n, t);
                }
                (case.name.clone(), dg)
            })
            .into_iter()
            .collect();
        let written = cluster_session::write_evidence(
            &label,
            &self.evidence_root,
            phases,
            environment,
            std::mem::take(&mut st.certs),
            Outcomes { selected: vec![case.name.clone()], cases: vec![outcome.evidence.clone()], not_run: Vec::new(), interrupted: false },
            folders,
        );
        let mut ev = outcome.evidence;
        let cleanup: Vec<String> = outcome.cleanup.failed.iter().chain(&leftovers.failed).map(|f| format!("cleanup failed: {f}")).collect();
        if !cleanup.is_empty() {
            ev.outcome = Outcome::Fail;
            ev.error = Some([ev.error.unwrap_or_default(), cleanup.join("\n")].join("\n").trim().to_string());
        }
        match written {
            Ok(dir) if ev.outcome != Outcome::Pass => {
                ev.error = Some(format!("{}\nevidence: {}", ev.error.unwrap_or_default(), dir.display()).trim().to_string())
            }
            Ok(_) => {}
            Err(e) => return Err(format!("evidence NOT written: {e}")),
        }
        Ok(ev)
    }
}
