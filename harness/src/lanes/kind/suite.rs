//! The kind lane under `cargo test --test e2e`: the shared cluster-lane suite
//! ([`crate::lanes::cluster::suite`]) on a kind cluster, created by the first trial that runs and
//! deleted when the last trial is done with the suite, or on Ctrl-C/SIGTERM; a kept cluster
//! (`LAYOUT_GATE_KEEP_CLUSTER=1`) stays.

use std::path::Path;

use super::lane::KindCluster;
use super::lifecycle::Target;
use super::preflight;
use super::session::{KindSetup, KindSetupError};
use crate::lanes::cluster::names::ClusterName;

pub type Suite = crate::lanes::cluster::suite::Suite<KindCluster>;

impl Suite {
    /// Every case under `cases_dir` for the version in `LAYOUT_GATE_CILIUM` (default: the versions
    /// file's).
    pub fn prepare(cases_dir: &Path, evidence_root: &Path) -> Result<Suite, KindSetupError> {
        let KindSetup { setup, target } = KindSetup::load(
            &[],
            || crate::run::select(cases_dir, &crate::run::Selection::all(), None).map_err(KindSetupError::Cases),
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
        Ok(Suite::new(setup, KindCluster::new(target), evidence_root))
    }

    /// Whether this machine can run the kind lane at all; the reason when not.
    pub fn prerequisites(&self) -> Result<(), preflight::PreflightError> {
        let f = preflight::gather(self.setup.timeouts.tool_query.limit);
        preflight::assess(&f, &self.setup.pins, preflight::Needs::CREATE, preflight::unreachable_ok_from_env()).map(|_| ())
    }
}
