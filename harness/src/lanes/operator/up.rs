//! What an operator-lane command's cases run on: a control plane of its own, started for it and
//! stopped with it, or a warm one (`layout-gate operator up`, [`super::warm`]) that can be
//! trusted and runs this very pin's binaries, used and left running. The choice is made here
//! once, for `run` (through the bring-up seam, [`super::lane::OperatorCluster`]) and `check`.
//!
//! On a warm plane a command removes what it applied (each case's namespaces and cluster-scoped
//! objects, as on its own plane) and never stops the plane; its evidence `environment` is the
//! plane's own (what `operator up` recorded when it started it, the same keys a cold start
//! records) plus [`WARM_KEY`]: the holder and the binaries' digests the plane was matched on.

use std::collections::BTreeMap;

use super::binaries::{self, ControlPlaneBinaries};
use super::control_plane::{self, ControlPlane};
use super::procs::log_tail;
use super::warm::{self, InUse};
use crate::lanes::cluster::driver::{Driver, KubeTarget};
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::lane::NotAlive;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::setup::Setup;

/// The evidence `environment` key saying a run's cases ran on a warm plane (holder pid, since
/// when); `warm_plane.<binary>_sha256` beside it name each binary's digest.
pub const WARM_KEY: &str = "warm_plane";

/// The phase a run on a warm plane records instead of the bring-up.
pub const WARM_PHASE: &str = "warm control plane: connect";

/// An operator-lane command's control plane.
pub enum OperatorUp {
    /// Started for this command; stopped (every process, its folder removed) when dropped.
    Own(Box<ControlPlane>),
    /// A warm plane this command uses; dropping it only ends the use (the holder's idle clock
    /// starts again): the plane stays up.
    Warm(Box<WarmPlane>),
}

/// A warm plane in use.
pub struct WarmPlane {
    in_use: InUse,
    kube: KubeTarget,
    environment: BTreeMap<String, String>,
}

impl WarmPlane {
    pub fn holder_pid(&self) -> u32 {
        self.in_use.state.holder_pid
    }
}

/// What the evidence of a run on the warm plane `s` records beyond the plane's own environment.
pub fn warm_environment(s: &warm::State) -> BTreeMap<String, String> {
    let mut env = s.environment.clone();
    env.insert(
        WARM_KEY.into(),
        format!("holder pid {} (`layout-gate operator up`, up since {}); used and left running", s.holder_pid, s.started_at),
    );
    for (name, b) in &s.binaries {
        env.insert(format!("{WARM_KEY}.{name}_sha256"), format!("{} ({})", b.sha256, b.path.display()));
    }
    env
}

impl OperatorUp {
    pub fn kube(&self) -> &KubeTarget {
        match self {
            OperatorUp::Own(cp) => &cp.kube,
            OperatorUp::Warm(w) => &w.kube,
        }
    }

    /// The namespace the operator syncs Gateway TLS Secrets into.
    pub fn secrets_namespace(&self) -> &str {
        match self {
            OperatorUp::Own(cp) => &cp.secrets_namespace,
            OperatorUp::Warm(w) => &w.in_use.state.secrets_namespace,
        }
    }

    /// What the evidence `environment` records of the control plane.
    pub fn environment(&self) -> &BTreeMap<String, String> {
        match self {
            OperatorUp::Own(cp) => &cp.environment,
            OperatorUp::Warm(w) => &w.environment,
        }
    }

    /// The same, to be told what the run's agent step makes real ([`super::plane::AgentStep::say_in`]).
    pub fn environment_mut(&mut self) -> &mut BTreeMap<String, String> {
        match self {
            OperatorUp::Own(cp) => &mut cp.environment,
            OperatorUp::Warm(w) => &mut w.environment,
        }
    }

    /// The plane this command started, when it started one.
    pub fn own(&self) -> Option<&ControlPlane> {
        match self {
            OperatorUp::Own(cp) => Some(cp.as_ref()),
            OperatorUp::Warm(_) => None,
        }
    }

    /// The last `n` lines of each process's log (a warm plane's are in its folder, beside its
    /// kubeconfig, named as the processes are).
    pub fn log_tails(&self, n: usize) -> Vec<(String, String)> {
        match self {
            OperatorUp::Own(cp) => cp.log_tails(n),
            OperatorUp::Warm(w) => {
                let s = &w.in_use.state;
                let Some(dir) = s.kubeconfig.parent() else { return Vec::new() };
                s.pids.keys().map(|name| (format!("{name}.log"), log_tail(&dir.join(format!("{name}.log")), n))).collect()
            }
        }
    }

    /// Whether every process still runs (a warm plane: its holder, which stops the plane when
    /// one of them exits, and each process by pid).
    pub fn check_alive(&self) -> Result<(), NotAlive> {
        match self {
            OperatorUp::Own(cp) => cp.check_alive(),
            OperatorUp::Warm(w) => {
                let s = &w.in_use.state;
                if warm::start_time(s.holder_pid) != Some(s.holder_start) {
                    return Err(NotAlive::HolderStopped(s.holder_pid));
                }
                match s.pids.iter().find(|(_, pid)| warm::start_time(**pid).is_none()) {
                    Some((name, pid)) => Err(NotAlive::Stopped { name: name.clone(), pid: *pid }),
                    None => Ok(()),
                }
            }
        }
    }

    /// What was done with the plane at the end, for the run's report.
    pub fn shut_down(self) -> String {
        match self {
            OperatorUp::Own(cp) => {
                drop(cp);
                "local control plane (cilium-operator, kube-apiserver, etcd) stopped, its folder removed".into()
            }
            OperatorUp::Warm(w) => {
                let pid = w.holder_pid();
                drop(w);
                format!("warm control plane (holder pid {pid}) left running: `layout-gate operator down` stops it")
            }
        }
    }
}

/// Starts the control plane for `setup`'s version: its binaries found, then each process
/// started and waited for, phase by phase.
pub async fn start(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    log: &mut PhaseLog,
) -> Result<(ControlPlane, ControlPlaneBinaries), PhaseError> {
    start_with(d, setup, run_id, log, control_plane::Controllers::Lane).await
}

/// [`start`], with `controllers` in kube-controller-manager (`conformance` asks for
/// [`control_plane::Controllers::Workloads`], for its pods).
pub async fn start_with(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    log: &mut PhaseLog,
    controllers: control_plane::Controllers,
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
        controllers,
    };
    let cp = control_plane::bring_up(d, &plan, log).await?;
    Ok((cp, bins))
}

/// The control plane for `setup`'s version. `warm_for`: the command (`run`, `check`) when a warm
/// plane may serve it: one that can be trusted and matches the pin and the binaries here is
/// connected to (said on standard error, recorded in `log` as [`WARM_PHASE`]); one that is
/// refused, or does not answer, is said with why, and a plane of the command's own is started,
/// as it is when none is up or `warm_for` is `None` (the e2e suite, which measures the lane's
/// own bring-up).
pub async fn attach_or_start(
    d: &mut LiveDriver,
    setup: &Setup,
    run_id: &str,
    log: &mut PhaseLog,
    warm_for: Option<&str>,
) -> Result<OperatorUp, PhaseError> {
    let version = &setup.version;
    if let Some(who) = warm_for
        && let Some(in_use) = warm::attach_or_say(&setup.pins, version, who)
    {
        let s = &in_use.state;
        let kube = s.kube();
        log.begin(WARM_PHASE);
        let connected = d.connect(&kube, setup.timeouts.control_plane_start).await;
        log.end();
        match connected {
            Ok(()) => {
                d.progress().note(&format!(
                    "layout-gate {who}: Cilium {version}: on the warm control plane (holder pid {}); it stays up after this {who}",
                    s.holder_pid
                ));
                let environment = warm_environment(s);
                return Ok(OperatorUp::Warm(Box::new(WarmPlane { in_use, kube, environment })));
            }
            Err(e) => d.progress().note(&format!(
                "layout-gate {who}: Cilium {version}: the warm control plane (holder pid {}) does not answer: {e}; starting one",
                s.holder_pid
            )),
        }
    }
    let (cp, _) = start(d, setup, run_id, log).await?;
    Ok(OperatorUp::Own(Box::new(cp)))
}

/// A later version's control plane, brought up while an earlier version's cases run (`run
/// --lane operator` with several `--cilium`, `differential` over several versions, as far as the
/// free memory allows).
pub type Early = tokio::task::JoinHandle<EarlyUp>;

/// What an early bring-up gave: the plane (or why not), its timed phases, how long it took, and
/// the command it is for (named in what is said when it is adopted).
pub struct EarlyUp {
    pub up: Result<OperatorUp, PhaseError>,
    pub log: PhaseLog,
    pub took: std::time::Duration,
    pub who: &'static str,
}

/// Starts [`attach_or_start`] for `setup` on `runtime` now, its phase lines not shown (another
/// version's cases own the display); [`adopt_early`] takes it when the version's turn comes.
/// `who` names the command, which may use a warm plane. Dropped unfinished (a signal ended the
/// run), the runtime drops it and the plane with it.
fn start_early(runtime: &tokio::runtime::Handle, setup: std::sync::Arc<Setup>, run_id: String, who: &'static str) -> Early {
    runtime.spawn(async move {
        let mut d = LiveDriver::new(crate::progress::Progress::quiet(), setup.timeouts);
        let mut log = PhaseLog::default();
        let t = std::time::Instant::now();
        let up = attach_or_start(&mut d, &setup, &run_id, &mut log, Some(who)).await;
        EarlyUp { up, log, took: t.elapsed(), who }
    })
}

/// The plane [`start_early`] brought up for `setup`: its phases into `log` and printed, `d`
/// connected to it.
pub async fn adopt_early(d: &mut LiveDriver, setup: &Setup, early: Early, log: &mut PhaseLog) -> Result<OperatorUp, PhaseError> {
    let e = early
        .await
        .map_err(|e| PhaseError::new("control plane", format!("its bring-up beside the previous version did not finish: {e}")))?;
    log.phases.extend(e.log.phases.iter().cloned());
    let up = e.up?;
    d.connect(up.kube(), setup.timeouts.api_ready).await.map_err(|e| PhaseError::step("control plane: connect", e))?;
    let phases: Vec<String> = e.log.phases.iter().map(|p| format!("{} {:.2}s", p.name, p.duration_ms as f64 / 1000.0)).collect();
    d.progress().note(&format!(
        "layout-gate {}: Cilium {}: control plane came up beside the previous version's cases, in {:.1}s: {}",
        e.who,
        setup.version,
        e.took.as_secs_f64(),
        phases.join(", ")
    ));
    Ok(up)
}

/// The planes a command started ahead, by version, for the versions it will come to (clones
/// share them): `run --lane operator` starts the next versions' while a version's cases run,
/// `differential` the next version's while a version is compared; the version's session or
/// `check` takes it ([`Ahead::take`]) instead of bringing one up.
#[derive(Clone, Default)]
pub struct Ahead(std::sync::Arc<std::sync::Mutex<Planes>>);

/// The planes of an [`Ahead`]. When the last clone goes (the command ended, or returned early),
/// a bring-up still under way is aborted and a plane never taken is dropped: either way its
/// processes are stopped then, not when the runtime goes.
#[derive(Default)]
pub struct Planes(BTreeMap<crate::case::CiliumVersion, Early>);

impl Drop for Planes {
    fn drop(&mut self) {
        for early in self.0.values() {
            early.abort();
        }
    }
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.lock().0.keys()).finish()
    }
}

impl Ahead {
    fn lock(&self) -> std::sync::MutexGuard<'_, Planes> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts `setup`'s version's plane on `runtime` for the command `who`, unless one is
    /// already coming up for it.
    pub fn start(
        &self,
        runtime: &tokio::runtime::Handle,
        setup: &std::sync::Arc<Setup>,
        run_id: impl FnOnce() -> String,
        who: &'static str,
    ) {
        let mut planes = self.lock();
        if !planes.0.contains_key(&setup.version) {
            planes.0.insert(setup.version.clone(), start_early(runtime, setup.clone(), run_id(), who));
        }
    }

    /// The plane started ahead for `version`, if any (taken: a second call has none).
    pub fn take(&self, version: &crate::case::CiliumVersion) -> Option<Early> {
        self.lock().0.remove(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run on a warm plane records the plane's own environment (what a cold start records)
    /// and, beside it, the holder and every binary's digest it was matched on.
    #[test]
    fn a_warm_runs_environment_is_the_planes_plus_its_holder_and_digests() {
        let s = warm::State {
            schema: warm::SCHEMA,
            tool: warm::TOOL.into(),
            version: "1.19.6".into(),
            holder_pid: 4242,
            holder_start: 1,
            token: crate::lanes::operator::identity::Token::new().unwrap(),
            started_at: "2026-12-04T09:00:00Z".into(),
            idle_seconds: 60,
            kubeconfig: "/x/admin.kubeconfig".into(),
            context: "layout-gate-operator".into(),
            secrets_namespace: "cilium-secrets".into(),
            pids: BTreeMap::new(),
            ports: BTreeMap::new(),
            binaries: BTreeMap::from([
                ("cilium-operator".to_string(), warm::Stamp { path: "/x/op".into(), sha256: "ab12".into(), bytes: 3, mtime: (1, 2) }),
                ("etcd".to_string(), warm::Stamp { path: "/x/etcd".into(), sha256: "cd34".into(), bytes: 3, mtime: (1, 2) }),
            ]),
            environment: BTreeMap::from([("cilium_operator.binary_sha256".to_string(), "ab12".to_string())]),
            phases: Vec::new(),
        };
        let env = warm_environment(&s);
        assert_eq!(env.get("cilium_operator.binary_sha256").map(String::as_str), Some("ab12"));
        assert!(env[WARM_KEY].starts_with("holder pid 4242 "), "{env:?}");
        assert_eq!(env.get("warm_plane.cilium-operator_sha256").map(String::as_str), Some("ab12 (/x/op)"));
        assert_eq!(env.get("warm_plane.etcd_sha256").map(String::as_str), Some("cd34 (/x/etcd)"));
    }

    /// A plane started ahead and never taken (the command ended or returned early) is stopped
    /// when the last clone of its [`Ahead`] goes, not left coming up until the runtime ends;
    /// a plane taken is the taker's.
    #[test]
    fn a_plane_started_ahead_and_never_taken_is_stopped_with_the_last_clone() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let v = crate::case::CiliumVersion::parse("1.19.6").unwrap();
            // Stands for the plane's processes: held by the bring-up task until it ends.
            let plane = std::sync::Arc::new(());
            let held = plane.clone();
            let ahead = Ahead::default();
            let task = tokio::spawn(async move {
                let _plane = held;
                std::future::pending::<EarlyUp>().await
            });
            ahead.lock().0.insert(v.clone(), task);
            let settle = || async {
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
            };
            settle().await;
            assert_eq!(std::sync::Arc::strong_count(&plane), 2);
            let other = ahead.clone();
            drop(ahead);
            settle().await;
            assert_eq!(std::sync::Arc::strong_count(&plane), 2, "a clone still holds it");
            assert_eq!(other.lock().0.len(), 1);
            drop(other);
            settle().await;
            assert_eq!(std::sync::Arc::strong_count(&plane), 1, "the bring-up outlived every clone");

            let ahead = Ahead::default();
            ahead.lock().0.insert(v.clone(), tokio::spawn(std::future::pending::<EarlyUp>()));
            let taken = ahead.take(&v);
            assert!(taken.is_some() && ahead.take(&v).is_none() && ahead.lock().0.is_empty());
            drop(ahead);
            settle().await;
            assert!(!taken.unwrap().is_finished(), "a taken plane is not stopped with the Ahead");
        });
    }
}
