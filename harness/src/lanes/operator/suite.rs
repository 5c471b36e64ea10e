//! The operator lane under `cargo test --test e2e`: the shared cluster-lane suite
//! ([`crate::lanes::cluster::suite`]) on one local control plane per Cilium version, started by
//! the first trial that runs and stopped when the suite is dropped (or with the process,
//! whatever ends it: every process of it dies with layout-gate).

use std::path::{Path, PathBuf};

use super::binaries;
use super::lane::OperatorCluster;
use crate::case::CiliumVersion;
use crate::lanes::cluster::driver::KubeTarget;
use crate::versions::Pins;

pub type Suite = crate::lanes::cluster::suite::Suite<OperatorCluster>;

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

/// Why the e2e suite could not be prepared, in the words the failing trial shows.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The versions file: each problem on a line.
    #[error("{0}")]
    Pins(String),
    /// `LAYOUT_GATE_OPERATOR_CILIUM` names no pinned version.
    #[error("{0}")]
    Version(String),
    /// The case catalogue could not be read.
    #[error("{0}")]
    Cases(String),
    #[error(transparent)]
    Setup(#[from] super::session::SetupError),
}

impl Suite {
    /// Every case under `cases_dir` for `version` (none: the versions file's default).
    pub fn prepare(cases_dir: &Path, evidence_root: &Path, version: Option<&str>) -> Result<Suite, PrepareError> {
        let pins =
            Pins::load_default().map_err(|ps| PrepareError::Pins(ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))?;
        let (version, source): (CiliumVersion, String) = match version {
            Some(v) => (pins.pick(v).map_err(PrepareError::Version)?.version.clone(), "LAYOUT_GATE_OPERATOR_CILIUM".into()),
            None => (pins.default.clone(), pins.file_label()),
        };
        let cases = crate::run::select(cases_dir, &crate::run::Selection::all(), None).map_err(PrepareError::Cases)?;
        let settings = crate::run::Settings::from_env(&super::known_settings());
        let setup = super::session::setup(&pins, version, source, &cases, &settings)?;
        Ok(Suite::new(setup, OperatorCluster::default(), evidence_root))
    }

    /// Whether the control plane for this version is built here; why not.
    pub fn prerequisites(&self) -> Result<(), Missing> {
        binaries::find(&self.setup.pins, &self.setup.version).map(|_| ()).map_err(|e| {
            let no_go = !go_available();
            let reason = if no_go {
                format!("Go is not on the PATH, so the operator lane's control plane cannot be built: install Go >= 1.26 (https://go.dev/dl/), then run scripts/install-control-plane.sh {} ({e})", self.setup.version)
            } else {
                e.to_string()
            };
            Missing { reason, no_go }
        })
    }

    /// The control plane's processes, by name, while it runs.
    pub fn pids(&self) -> Vec<(String, u32)> {
        self.with_up(|up| up.own().map(|cp| cp.pids())).flatten().unwrap_or_default()
    }

    /// Once the control plane is up: Cilium's CRDs created before the operator started, the
    /// operator's log file, and how to reach the API server.
    pub fn cilium_crds(&self) -> Option<(Vec<String>, PathBuf, KubeTarget)> {
        self.with_up(|up| up.own().map(|cp| (cp.cilium_crds.clone(), cp.operator_log().to_path_buf(), cp.kube.clone()))).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::{PrepareError, Suite};

    /// A version the pins do not hold is said as the pins say it, typed as such.
    #[test]
    fn an_unpinned_version_is_a_version_error() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let tmp = tempfile::tempdir().unwrap();
        match Suite::prepare(&root.join("cases"), tmp.path(), Some("9.9.9")) {
            Err(e @ PrepareError::Version(_)) => assert!(e.to_string().contains("9.9.9"), "{e}"),
            Err(e) => panic!("not a version error: {e:?}"),
            Ok(_) => panic!("9.9.9 is not pinned"),
        }
    }
}
