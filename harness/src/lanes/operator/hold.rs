//! The holder of a warm control plane (`layout-gate operator hold`, started by `operator up`):
//! brings the plane up, writes its state file ([`super::warm`]), and keeps it until `operator
//! down` (SIGTERM), a signal, a process of the plane exiting, the state file removed or changed,
//! or the idle time passing with no command using it. The state file goes first; the plane's
//! processes die with the holder however it ends (`crate::child`). It holds its version's
//! lock ([`super::lock`]) for its whole life, and answers for its state file on its socket
//! ([`super::identity`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::identity::{self, Token};
use super::lock::HolderLock;
use super::session;
use super::warm::{self, Refusal, State};
use crate::case::CiliumVersion;
use crate::evidence::{self, Lane};
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::Gathered;
use crate::run::Settings;
use crate::versions::Pins;

/// Why the holder stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    Idle(Duration),
    Exited(crate::lanes::cluster::lane::NotAlive),
    Removed,
}

/// The API server's port, from the kubeconfig the plane wrote (`server: https://127.0.0.1:P`).
fn apiserver_port(kubeconfig: &Path) -> Option<u16> {
    let text = crate::input::read_text(kubeconfig, crate::input::CASE_FILE).ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("server:"))?;
    line.rsplit(':').next()?.trim().trim_end_matches('/').parse().ok()
}

/// Why `operator hold` did not hold a plane: `cli/` says it.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("Cilium {version}'s warm control plane is already up (holder pid {pid})")]
    AlreadyUp { version: CiliumVersion, pid: u32 },
    /// Another holder (or an `operator up` starting one) holds the version's lock.
    #[error("{}: another holder of Cilium {version}'s plane holds it", .lock.display())]
    Locked { version: CiliumVersion, lock: PathBuf },
    /// The lock handed over, the token, the socket.
    #[error("{0}")]
    Identity(String),
    /// The state file there is not one to trust or replace.
    #[error(transparent)]
    Untrusted(Refusal),
    /// The run's setup (the kind-config files, the waits).
    #[error("{0}")]
    Setup(String),
    #[error("starting the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The plane did not come up: the phase and its problem.
    #[error("{}: {}", .0.phase, .0.problem)]
    BringUp(#[source] PhaseError),
    #[error(transparent)]
    State(#[from] warm::WarmFileError),
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> HoldError + use<> {
    let path = path.to_path_buf();
    move |source| HoldError::Io { path, source }
}

/// Brings `version`'s plane up and holds it; returns why it stopped. `lock`: the version's
/// lock as `operator up` handed it over (else it is taken here, and refused when another holds
/// it).
pub fn hold(
    pins: &Pins,
    version: &CiliumVersion,
    idle: Duration,
    settings: &Settings,
    lock: Option<HolderLock>,
) -> Result<Stopped, HoldError> {
    let dir = warm::version_dir(pins, version);
    std::fs::create_dir_all(&dir).map_err(at(&dir))?;
    let _lock = match lock {
        Some(l) => l,
        None => HolderLock::try_take(&dir)
            .map_err(HoldError::Identity)?
            .ok_or_else(|| HoldError::Locked { version: version.clone(), lock: dir.join(super::lock::FILE) })?,
    };
    let path = dir.join("state.json");
    // With the lock held no other holder lives: a state file here is stale or not ours.
    if path.exists() {
        match warm::read_trusted(&path) {
            Ok(s) => return Err(HoldError::AlreadyUp { version: version.clone(), pid: s.holder_pid }),
            Err(Refusal::Stale(_)) => std::fs::remove_file(&path).map_err(at(&path))?,
            Err(r) => return Err(HoldError::Untrusted(r)),
        }
    }
    let token = Token::new().map_err(HoldError::Identity)?;
    let listener = identity::bind(&dir).map_err(HoldError::Identity)?;
    let setup = session::setup(pins, version.clone(), "operator up".into(), &[], settings).map_err(|e| HoldError::Setup(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(HoldError::Runtime)?;
    runtime.block_on(async {
        let run_id = evidence::run_id(Lane::Operator, Some(&version.to_string()), Some("warm"));
        let progress = Progress::from_env();
        let mut d = LiveDriver::new(progress, setup.timeouts);
        let mut st = Gathered::default();
        let started = std::time::Instant::now();
        let (cp, bins) = session::bring_up(&mut d, &setup, &run_id, &mut st).await.map_err(HoldError::BringUp)?;
        let me = std::process::id();
        let kubeconfig = cp.kube.kubeconfig.clone().unwrap_or_default();
        let mut ports = std::collections::BTreeMap::new();
        if let Some(p) = apiserver_port(&kubeconfig) {
            ports.insert("kube-apiserver".to_string(), p);
        }
        ports.insert("cilium-operator health".to_string(), cp.operator_health.port());
        let mut phases: Vec<(String, u64)> = st.log.phases.iter().map(|p| (p.name.clone(), p.duration_ms)).collect();
        phases.push(("ready, in all".into(), started.elapsed().as_millis() as u64));
        let state = State {
            schema: warm::SCHEMA,
            tool: warm::TOOL.into(),
            version: version.to_string(),
            holder_pid: me,
            holder_start: warm::start_time(me).unwrap_or(0),
            token: token.clone(),
            started_at: evidence::now_rfc3339(),
            idle_seconds: idle.as_secs(),
            kubeconfig,
            context: cp.kube.context.clone(),
            secrets_namespace: cp.secrets_namespace.clone(),
            pids: cp.pids().into_iter().collect(),
            ports,
            binaries: warm::stamps(&bins)?,
            environment: cp.environment.clone(),
            phases,
        };
        let written = warm::write_state(&path, &state)?;
        identity::serve(listener, token, identity::digest(&written)).map_err(HoldError::Identity)?;
        // A signal ends the process (`cli::signals::exit_on_signal`): the state file goes with it.
        let (on_signal, socket): (PathBuf, PathBuf) = (path.clone(), dir.join(identity::SOCKET));
        crate::child::on_signal(move || {
            let _ = std::fs::remove_file(on_signal);
            let _ = std::fs::remove_file(socket);
        });
        eprintln!(
            "layout-gate operator hold: Cilium {version}: ready in {:.1}s; stopping after {}s unused",
            started.elapsed().as_secs_f64(),
            idle.as_secs()
        );
        let why = loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Err(e) = cp.check_alive() {
                break Stopped::Exited(e);
            }
            // Removed, replaced or edited: this holder no longer answers for the plane (the
            // file read as a state file is, bounded; anything else is not what it wrote).
            let now = crate::input::read_text(&path, crate::input::CASE_FILE).ok();
            if now.as_deref() != Some(written.as_str()) {
                break Stopped::Removed;
            }
            let unused = warm::idle_for(&dir);
            if unused >= idle && !warm::in_use(&dir) {
                break Stopped::Idle(unused);
            }
        };
        if why != Stopped::Removed {
            let _ = std::fs::remove_file(&path);
        }
        let _ = std::fs::remove_file(dir.join(identity::SOCKET));
        eprintln!("layout-gate operator hold: Cilium {version}: stopping: {why:?}");
        drop(cp);
        Ok(why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plane_that_did_not_come_up_is_said_by_its_phase_and_keeps_the_phase_error() {
        let e =
            HoldError::BringUp(PhaseError::new("start etcd and kube-apiserver", "etcd exited (exit status: 1)").with_hint("free a port"));
        assert_eq!(e.to_string(), "start etcd and kube-apiserver: etcd exited (exit status: 1)");
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<PhaseError>()).map(|p| p.hint.clone());
        assert_eq!(source, Some(Some("free a port".to_string())));
    }

    #[test]
    fn the_api_servers_port_is_read_from_the_kubeconfig() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("admin.kubeconfig");
        std::fs::write(&p, "clusters:\n- cluster:\n    server: https://127.0.0.1:40123\n  name: x\n").unwrap();
        assert_eq!(apiserver_port(&p), Some(40123));
        std::fs::write(&p, "clusters: []\n").unwrap();
        assert_eq!(apiserver_port(&p), None);
    }
}
