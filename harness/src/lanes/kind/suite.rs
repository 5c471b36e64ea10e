//! The kind lane under `cargo test --test e2e`: one trial per case for one Cilium version, all
//! sharing one cluster. The cluster is created by the first trial that runs and deleted when
//! the last trial is done with the suite (the suite's `Drop`), or on Ctrl-C/SIGTERM; a kept
//! cluster (`LAYOUT_GATE_KEEP_CLUSTER=1`) stays.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::lifecycle::{self, ClusterReady, Target};
use super::plane::KindPlane;
use super::preflight::{self, Needs};
use super::session::Setup;
use crate::case::Case;
use crate::evidence::{self, CiliumInfo, Evidence, Lane, ToolInfo};
use crate::judge::Outcome;
use crate::lanes::cluster::driver::Driver;
use crate::lanes::cluster::failure::{PhaseLog, failure_message};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::manifests::SecretMaterial;
use crate::lanes::cluster::names::{ClusterName, namespace_for, run_suffix};
use crate::lanes::cluster::one_case::{self, CaseInput};
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::teardown::{CreatedCluster, Teardown};
use crate::lanes::cluster::tools::RunPaths;
use crate::render::certs::CertSet;

enum State {
    NotStarted,
    Up {
        ready: ClusterReady,
        _run_dir: crate::scratch::Scratch,
        phases: Vec<crate::evidence::Phase>,
    },
    /// Bringing the cluster up failed; every trial fails with this.
    Broken(String),
}

pub struct Suite {
    pub setup: Setup,
    evidence_root: PathBuf,
    state: Mutex<State>,
    /// The cluster to delete when the suite is dropped (shared with the signal thread).
    created: std::sync::Arc<Mutex<Option<CreatedCluster>>>,
}

impl Suite {
    /// Every case under `cases_dir` for the version in `LAYOUT_GATE_CILIUM` (default: the
    /// versions file's).
    pub fn prepare(cases_dir: &Path, evidence_root: &Path) -> Result<Suite, String> {
        let setup = Setup::load(
            &[],
            || crate::run::select(cases_dir, &crate::run::Selection::all(), None),
            std::env::var("LAYOUT_GATE_CILIUM_DEBUG").is_ok_and(|v| v == "1"),
            |version| {
                Ok(Target::Create {
                    name: ClusterName::for_version(version),
                    keep: std::env::var("LAYOUT_GATE_KEEP_CLUSTER").is_ok_and(|v| v == "1"),
                })
            },
            std::env::var("LAYOUT_GATE_KEEP_NAMESPACES").is_ok_and(|v| v == "1"),
            &crate::run::Settings::from_env(&super::known_settings()),
        )?;
        Ok(Suite { setup, evidence_root: evidence_root.to_path_buf(), state: Mutex::new(State::NotStarted), created: Default::default() })
    }

    /// Whether this machine can run the kind lane at all; the reason when not.
    pub fn prerequisites(&self) -> Result<(), String> {
        let f = preflight::gather(self.setup.timeouts.tool_query.limit);
        preflight::assess(&f, &self.setup.pins, Needs::CREATE, preflight::unreachable_ok_from_env()).map(|_| ()).map_err(|e| e.to_string())
    }

    /// The cases of the suite; `Setup::load` already left out those with no expectation at its
    /// version.
    pub fn case_names(&self) -> Vec<String> {
        self.setup.cases.iter().map(|c| c.name.clone()).collect()
    }

    /// Runs one case (bringing the shared cluster up first if no trial has), writes its
    /// evidence, and says why it failed.
    pub fn run_case(&self, name: &str) -> Result<(), String> {
        let case = self.setup.cases.iter().find(|c| c.name == name).ok_or_else(|| format!("no case {name}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        // Cases run one at a time on the shared cluster: one Gateway's config at a time keeps
        // each case's Envoy dump and logs its own.
        let mut state = self.state.lock().map_err(|_| "a previous kind trial panicked while holding the cluster".to_string())?;
        if matches!(*state, State::NotStarted) {
            *state = runtime.block_on(self.bring_up());
        }
        match &*state {
            State::NotStarted => Err("internal: cluster not started".into()),
            State::Broken(e) => Err(format!("the shared cluster could not be brought up:\n{e}")),
            State::Up { ready, phases, .. } => runtime.block_on(self.one(case, ready, phases.clone())),
        }
    }

    async fn bring_up(&self) -> State {
        let ready_tools = match preflight::assess(
            &preflight::gather(self.setup.timeouts.tool_query.limit),
            &self.setup.pins,
            Needs::CREATE,
            preflight::unreachable_ok_from_env(),
        ) {
            Ok(r) => r,
            Err(e) => return State::Broken(e.to_string()),
        };
        let run_dir = match crate::scratch::Scratch::new(crate::scratch::KIND) {
            Ok(d) => d,
            Err(e) => return State::Broken(format!("creating the run folder: {e}")),
        };
        let run_id = evidence::run_id(Lane::Kind, Some(&self.setup.version.to_string()), None);
        let Some(pin) = self.setup.pins.get(&self.setup.version) else {
            return State::Broken(format!("Cilium {} is not pinned", self.setup.version));
        };
        let plan = lifecycle::Plan {
            pins: &self.setup.pins,
            pin,
            files: &self.setup.files,
            target: self.setup.target.clone(),
            engine: ready_tools.engine,
            paths: RunPaths { root: run_dir.path().to_path_buf() },
            run_id,
            timeouts: self.setup.timeouts,
        };
        let mut d = LiveDriver::new(Progress::from_env(), self.setup.timeouts);
        let mut teardown = Teardown::default();
        let mut log = PhaseLog::default();
        match lifecycle::bring_up(&mut d, &plan, &mut teardown, &mut log).await {
            Ok(mut ready) => {
                // The suite owns the cluster from here: it outlives this trial.
                if let Ok(mut slot) = self.created.lock() {
                    *slot = teardown.take_cluster();
                }
                self.watch_signals();
                ready.environment.extend(ready_tools.versions.iter().map(|(k, v)| (format!("tool.{k}"), v.clone())));
                State::Up { ready, _run_dir: run_dir, phases: log.phases }
            }
            Err(e) => {
                let diag = if d.connected() {
                    Some(crate::lanes::cluster::diagnostics::collect_cluster(&mut d, &self.setup.timeouts).await)
                } else {
                    None
                };
                let report = teardown.run(&mut d, &self.setup.timeouts).await;
                let mut where_ = None;
                if let Some(dg) = diag {
                    let dir = self.evidence_root.join(format!("{}-cluster-diagnostics", plan.run_id));
                    if std::fs::create_dir_all(&dir).is_ok()
                        && let Ok(Some(p)) = crate::lanes::cluster::diagnostics::write_all(&dir, &[("cluster".into(), dg)])
                    {
                        where_ = Some(p.display().to_string());
                    }
                }
                State::Broken(failure_message(Lane::Kind, &e, where_.as_deref(), &report))
            }
        }
    }

    /// Ctrl-C or SIGTERM during the trials: the test binary's signal handler runs this before
    /// it exits (see `crate::child::on_signal`): the shared cluster is deleted.
    fn watch_signals(&self) {
        let created = self.created.clone();
        crate::child::on_signal(move || {
            eprintln!("layout-gate kind trials: stopping: deleting the shared cluster");
            if let Ok(mut slot) = created.lock()
                && let Some(c) = slot.take()
                && let Err(e) = c.delete_blocking()
            {
                eprintln!("layout-gate kind trials: could not delete kind cluster {}: {e}", c.name());
            }
        });
    }

    async fn one(&self, case: &Case, ready: &ClusterReady, cluster_phases: Vec<crate::evidence::Phase>) -> Result<(), String> {
        let started_at = evidence::now_rfc3339();
        let run_id = format!("{}-{}", evidence::run_id(Lane::Kind, Some(&self.setup.version.to_string()), None), case.slug());
        let certs = CertSet::generate(&run_id, &case.certificates).map_err(|e| e.to_string())?;
        let mut d = LiveDriver::new(Progress::from_env(), self.setup.timeouts);
        d.connect(&ready.kube, self.setup.timeouts.api_ready).await.map_err(|e| e.to_string())?;
        let mut teardown = Teardown::default();
        let input = CaseInput {
            case,
            version: &self.setup.version,
            namespace: namespace_for(&case.name, &run_suffix(&run_id)),
            run_id: &run_id,
            certs: SecretMaterial::Issued(&certs),
            timeouts: &self.setup.timeouts,
            probe_timeouts: &self.setup.probe_timeouts,
            keep_namespace: self.setup.keep_namespaces,
            tlsroute_version: self.setup.tlsroute_version(),
            expecting: crate::lanes::cluster::session::Expecting::Asserted,
        };
        let outcome =
            one_case::run_case(&mut d, &mut KindPlane { echo_image: self.setup.pins.echo_image.clone() }, &input, &mut teardown).await;
        let leftovers = teardown.run(&mut d, &self.setup.timeouts).await;
        let mut environment = ready.environment.clone();
        environment.extend(outcome.environment.clone());
        let mut phases = cluster_phases;
        phases.extend(outcome.phases.clone());
        let ev = Evidence {
            schema_version: evidence::SCHEMA_VERSION,
            tool: ToolInfo::current(),
            run_id: run_id.clone(),
            lane: Lane::Kind,
            status: evidence::RunStatus::Ran,
            selected: Some(vec![case.name.clone()]),
            not_run: Vec::new(),
            interrupted: false,
            cilium: Some(CiliumInfo { version: self.setup.version.to_string(), source: self.setup.version_source.clone() }),
            started_at,
            finished_at: evidence::now_rfc3339(),
            phases,
            environment,
            certificates: certs.records(),
            cases: vec![outcome.evidence.clone()],
            digest: None,
        };
        let written = evidence::write_run(&self.evidence_root, &ev).map_err(|e| e.to_string()).and_then(|dir| {
            let folders: Vec<(String, crate::lanes::cluster::diagnostics::Diagnostics)> =
                outcome.diagnostics.clone().map(|dg| (case.name.clone(), dg)).into_iter().collect();
            crate::lanes::cluster::diagnostics::write_all(&dir, &folders)?;
            Ok(dir)
        });
        let c = &outcome.evidence;
        if c.outcome == Outcome::Pass && leftovers.failed.is_empty() && outcome.cleanup.failed.is_empty() {
            return written.map(|_| ());
        }
        let mut lines: Vec<String> = c.verdicts.iter().filter(|v| !v.passed()).map(|v| v.line()).collect();
        if let Some(e) = &c.error {
            lines.push(format!("error: {e}"));
        }
        lines.extend(outcome.cleanup.failed.iter().chain(&leftovers.failed).map(|f| format!("cleanup failed: {f}")));
        match written {
            Ok(dir) => lines.push(format!("evidence: {}", dir.display())),
            Err(e) => lines.push(format!("evidence NOT written: {e}")),
        }
        Err(lines.join("\n"))
    }
}

impl Drop for Suite {
    /// The last trial is done with the suite: delete the shared cluster it created.
    fn drop(&mut self) {
        let Ok(mut slot) = self.created.lock() else { return };
        if let Some(c) = slot.take() {
            eprintln!("layout-gate kind trials: deleting the shared cluster {}", c.name());
            if let Err(e) = c.delete_blocking() {
                eprintln!(
                    "layout-gate kind trials: could not delete kind cluster {}: {e}; delete it with `kind delete cluster --name {}`",
                    c.name(),
                    c.name()
                );
            }
        }
    }
}
