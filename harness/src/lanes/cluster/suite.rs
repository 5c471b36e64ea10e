//! A cluster lane under `cargo test --test e2e`: one trial per case for one Cilium version, all
//! sharing one cluster, brought up by the first trial that runs and released when the suite is
//! dropped (the lane's hold on it, [`ClusterLane::adopt`]). Each trial runs its case through the
//! same case loop and evidence path as `run` ([`super::session`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::diagnostics;
use super::driver::Driver;
use super::failure::{PhaseLog, failure_message};
use super::lane::{ClusterLane, Refusal};
use super::live::LiveDriver;
use super::progress::Progress;
use super::session::{Gathered, Outcomes, RunLabel, run_cases, write_evidence};
use super::setup::Setup;
use super::teardown::Teardown;
use crate::case::Case;
use crate::evidence::{self, CaseEvidence, Phase};
use crate::judge::Outcome;

/// Why a suite's trial has no case evidence, or why its case failed: what the e2e trials say.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("a previous {} trial panicked while holding the cluster", .0.as_str())]
    Poisoned(crate::evidence::Lane),
    #[error("no case {0}")]
    NoCase(String),
    #[error("internal: cluster not started")]
    NotStarted,
    /// The shared cluster's bring-up failed: what [`failure_message`] said, with the end of the
    /// diagnostics (said as it is by [`Suite::start`]).
    #[error("{0}")]
    BringUp(String),
    /// The same, said by a case's trial.
    #[error("the shared cluster could not be brought up:\n{0}")]
    Down(String),
    /// The cluster is no longer alive (a process of it exited), as the lane says.
    #[error(transparent)]
    NotAlive(super::lane::NotAlive),
    #[error(transparent)]
    Connect(super::driver::StepError),
    /// The case's run stopped at a phase.
    #[error(transparent)]
    Phase(super::failure::PhaseError),
    #[error("the case did not run")]
    DidNotRun,
    #[error("evidence NOT written: {0}")]
    Evidence(#[source] super::session::EvidenceWriteError),
    /// The case ran and failed: its failed verdicts and its error, a line each.
    #[error("{}", .0.join("\n"))]
    Failed(Vec<String>),
}

/// The e2e trials say the error as it is.
impl From<SuiteError> for String {
    fn from(e: SuiteError) -> String {
        e.to_string()
    }
}

enum State<U> {
    NotStarted,
    Up {
        // Boxed: a lane's hold on its cluster may be large, the other states are small.
        up: Box<U>,
        /// The bring-up's phases, at the head of every trial's evidence.
        phases: Vec<Phase>,
        /// What preflight and bring-up recorded, for every trial's evidence `environment`.
        environment: BTreeMap<String, String>,
    },
    /// Bringing the cluster up failed; every trial fails with this.
    Broken(String),
}

struct Shared<L: ClusterLane> {
    // Dropped first: the cluster goes before what the lane holds (the kind lane's run folder,
    // with the kubeconfig its deletion uses).
    state: State<L::Up>,
    lane: L,
}

pub struct Suite<L: ClusterLane> {
    pub setup: Setup,
    evidence_root: PathBuf,
    // Cases run one at a time on the shared cluster: one Gateway's config at a time keeps each
    // case's Envoy dump and logs its own.
    shared: Mutex<Shared<L>>,
}

/// The last lines of a long text (a diagnostics file), whole characters.
fn tail(text: &str, chars: usize) -> String {
    text.chars().rev().take(chars).collect::<String>().chars().rev().collect()
}

impl<L: ClusterLane> Suite<L> {
    pub fn new(setup: Setup, lane: L, evidence_root: &Path) -> Self {
        Suite { setup, evidence_root: evidence_root.to_path_buf(), shared: Mutex::new(Shared { state: State::NotStarted, lane }) }
    }

    /// The cases of the suite (those with an expectation at its version).
    pub fn case_names(&self) -> Vec<String> {
        self.setup.cases.iter().map(|c| c.name.clone()).collect()
    }

    fn runtime() -> Result<tokio::runtime::Runtime, SuiteError> {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(SuiteError::Runtime)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Shared<L>>, SuiteError> {
        self.shared.lock().map_err(|_| SuiteError::Poisoned(L::LANE))
    }

    /// Brings the shared cluster up now (if no trial has); how long that took, or why it could
    /// not.
    pub fn start(&self) -> Result<std::time::Duration, SuiteError> {
        let runtime = Self::runtime()?;
        let mut shared = self.lock()?;
        let t = std::time::Instant::now();
        if matches!(shared.state, State::NotStarted) {
            let Shared { state, lane } = &mut *shared;
            *state = runtime.block_on(self.bring_up(lane));
        }
        match &shared.state {
            State::Broken(e) => Err(SuiteError::BringUp(e.clone())),
            _ => Ok(t.elapsed()),
        }
    }

    /// The bring-up's phases (name, milliseconds), once the cluster is up.
    pub fn phases(&self) -> Vec<(String, u64)> {
        match self.shared.lock().as_deref() {
            Ok(Shared { state: State::Up { phases, .. }, .. }) => phases.iter().map(|p| (p.name.clone(), p.duration_ms)).collect(),
            _ => Vec::new(),
        }
    }

    /// `f` of the lane's hold on the cluster, while it is up.
    pub fn with_up<R>(&self, f: impl FnOnce(&L::Up) -> R) -> Option<R> {
        match self.shared.lock().as_deref() {
            Ok(Shared { state: State::Up { up, .. }, .. }) => Some(f(up)),
            _ => None,
        }
    }

    /// Runs one case (bringing the shared cluster up first if no trial has), writes its
    /// evidence, and says why it failed.
    pub fn run_case(&self, name: &str) -> Result<(), SuiteError> {
        let ev = self.run_case_evidence(name)?;
        if ev.outcome == Outcome::Pass {
            return Ok(());
        }
        let mut lines: Vec<String> = ev.verdicts.iter().filter(|v| !v.passed()).map(|v| v.line()).collect();
        if let Some(e) = &ev.error {
            lines.push(format!("error: {e}"));
        }
        Err(SuiteError::Failed(lines))
    }

    /// Runs one case and returns its evidence (written under the evidence root too). A cleanup
    /// that failed makes the returned case fail, with what was left behind.
    pub fn run_case_evidence(&self, name: &str) -> Result<CaseEvidence, SuiteError> {
        let case = self.setup.cases.iter().find(|c| c.name == name).ok_or_else(|| SuiteError::NoCase(name.to_string()))?;
        let runtime = Self::runtime()?;
        let mut shared = self.lock()?;
        let Shared { state, lane } = &mut *shared;
        if matches!(state, State::NotStarted) {
            *state = runtime.block_on(self.bring_up(lane));
        }
        match &*state {
            State::NotStarted => Err(SuiteError::NotStarted),
            State::Broken(e) => Err(SuiteError::Down(e.clone())),
            State::Up { up, phases, environment } => {
                L::check_alive(up).map_err(SuiteError::NotAlive)?;
                runtime.block_on(self.one(lane, case, up, phases.clone(), environment))
            }
        }
    }

    async fn bring_up(&self, lane: &mut L) -> State<L::Up> {
        let progress = Progress::from_env();
        let mut environment = match lane.preflight(&self.setup, &progress).await {
            Ok(env) => env,
            Err(Refusal::NotRun { message, .. }) => return State::Broken(message),
            Err(Refusal::Failed(e)) => return State::Broken(e),
        };
        let run_id = evidence::run_id(L::LANE, Some(&self.setup.version.to_string()), None);
        let mut d = LiveDriver::new(progress, self.setup.timeouts);
        let mut teardown = Teardown::default();
        let mut log = PhaseLog::default();
        match lane.bring_up(&mut d, &self.setup, &run_id, &mut teardown, &mut log).await {
            Ok(mut up) => {
                // The suite owns the cluster from here: it outlives this trial.
                L::adopt(&mut up, &mut teardown);
                environment.extend(L::ready(&up).environment.clone());
                State::Up { up: Box::new(up), phases: log.phases, environment }
            }
            Err(e) => {
                let diag = lane.diagnostics(&mut d, &self.setup).await;
                let report = teardown.run(&mut d, &self.setup.timeouts).await;
                let mut where_ = None;
                let mut inline = None;
                if let Some(dg) = diag {
                    inline = Some(dg.files.iter().map(|(n, t)| format!("--- {n}\n{t}")).collect::<Vec<_>>().join("\n"));
                    let dir = self.evidence_root.join(format!("{run_id}-cluster-diagnostics"));
                    if std::fs::create_dir_all(&dir).is_ok()
                        && let Ok(Some(p)) = diagnostics::write_all(&dir, &[("cluster".into(), dg)])
                    {
                        where_ = Some(p.display().to_string());
                    }
                }
                let mut msg = failure_message(L::LANE, &e, where_.as_deref(), &report);
                // The end of what the API server said, so a CI log is enough to start.
                if let Some(text) = inline {
                    msg.push_str(&format!("\n{}", tail(&text, 4000)));
                }
                State::Broken(msg)
            }
        }
    }

    async fn one(
        &self,
        lane: &L,
        case: &Case,
        up: &L::Up,
        cluster_phases: Vec<Phase>,
        cluster_environment: &BTreeMap<String, String>,
    ) -> Result<CaseEvidence, SuiteError> {
        let started_at = evidence::now_rfc3339();
        let run_id = format!("{}-{}", evidence::run_id(L::LANE, Some(&self.setup.version.to_string()), None), case.slug());
        let mut d = LiveDriver::new(Progress::from_env(), self.setup.timeouts);
        d.connect(L::ready(up).kube, self.setup.timeouts.api_ready).await.map_err(SuiteError::Connect)?;
        let mut teardown = Teardown::default();
        let mut plane = lane.plane(&self.setup, up);
        let mut st = Gathered::default();
        let progress = Progress::from_env();
        let r = run_cases(
            &mut d,
            &mut plane,
            std::slice::from_ref(case),
            &run_id,
            &self.setup.common(L::LANE),
            &mut teardown,
            &mut st,
            &progress,
            false,
            &|| L::check_alive(up),
        )
        .await;
        drop(plane);
        let leftovers = teardown.run(&mut d, &self.setup.timeouts).await;
        if let Err(e) = r {
            return Err(SuiteError::Phase(e));
        }
        let outcome = st.outcomes.pop().ok_or(SuiteError::DidNotRun)?;
        let mut environment = cluster_environment.clone();
        environment.extend(outcome.environment.clone());
        let mut phases = cluster_phases;
        phases.extend(outcome.phases.clone());
        let label = RunLabel::new(L::LANE, &self.setup.version, &self.setup.version_source, &run_id, &started_at);
        let folders: Vec<_> = outcome
            .diagnostics
            .clone()
            .map(|mut dg| {
                for (n, t) in L::log_tails(up) {
                    dg.add(&n, t);
                }
                (case.name.clone(), dg)
            })
            .into_iter()
            .collect();
        let written = write_evidence(
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
            Err(e) => return Err(SuiteError::Evidence(e)),
        }
        Ok(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::SuiteError;

    #[test]
    fn a_trial_says_the_bring_up_failure_and_the_failed_verdicts_as_before() {
        assert_eq!(
            SuiteError::Down("etcd did not start".into()).to_string(),
            "the shared cluster could not be brought up:\netcd did not start"
        );
        assert_eq!(SuiteError::BringUp("etcd did not start".into()).to_string(), "etcd did not start");
        assert_eq!(String::from(SuiteError::Failed(vec!["a".into(), "error: b".into()])), "a\nerror: b");
        let e = SuiteError::Runtime(std::io::Error::other("no threads"));
        assert_eq!(e.to_string(), "tokio runtime: no threads");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn a_tail_keeps_whole_characters_at_the_end() {
        assert_eq!(super::tail("ab€cd", 3), "€cd");
        assert_eq!(super::tail("ab", 10), "ab");
    }
}
