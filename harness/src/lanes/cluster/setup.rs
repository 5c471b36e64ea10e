//! What a run of a cluster lane (kind, operator) is about, decided before anything runs: the
//! same fields for both; each lane fills them its own way (its defaults, its version choice).

use std::collections::BTreeMap;

use super::config::{ConfigError, KindFiles};
use super::diagnostics::Diagnostics;
use super::failure::{PhaseLog, TeardownReport};
use super::one_case::CaseOutcome;
use super::one_case::Expecting;
use super::timeouts::ClusterTimeouts;
use crate::case::{Case, CiliumVersion};
use crate::evidence::CaseEvidence;
use crate::evidence::Lane;
use crate::judge::Outcome;
use crate::render::certs::CertRecord;
use crate::run::{Profile, Settings, Timeouts};
use crate::versions::Pins;

/// Why a run's setup could not be made from its files and settings.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A kind-config file beside the pins file: which one and what is wrong.
    #[error(transparent)]
    Files(#[from] ConfigError),
    /// A wait in the settings (the key, its value and the allowed form, as `run::Settings` says).
    #[error("{0}")]
    Waits(String),
}

pub struct Setup {
    pub pins: Pins,
    pub version: CiliumVersion,
    /// Where the version was picked (the versions file, a flag, a variable).
    pub version_source: String,
    /// The kind-config files: Helm values, LB pool, kind cluster.
    pub files: KindFiles,
    /// The cases with an expectation at `version` ([`cases_at`]).
    pub cases: Vec<Case>,
    pub timeouts: ClusterTimeouts,
    pub probe_timeouts: Timeouts,
    /// Leave each case's namespace in place after it ran.
    pub keep_namespaces: bool,
}

impl Setup {
    /// One version's setup for a run of `lane`: the kind-config files beside the pins file, the
    /// cases that expect something at `version`, and the lane's waits from `settings` over its
    /// defaults (kind: a real cluster's; operator: the local ones, everything runs on loopback;
    /// docs/waits.md).
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        lane: Lane,
        pins: Pins,
        version: CiliumVersion,
        version_source: String,
        cilium_debug: bool,
        cases: Vec<Case>,
        settings: &Settings,
        keep_namespaces: bool,
    ) -> Result<Setup, SetupError> {
        let dir = pins.file.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let files = KindFiles::load(&dir, cilium_debug)?;
        let cases = cases_at(lane, &version, cases);
        let profile = if lane == Lane::Kind { Profile::Cluster } else { Profile::Local };
        Ok(Setup {
            pins,
            version,
            version_source,
            files,
            cases,
            timeouts: ClusterTimeouts::from_settings(profile, settings).map_err(SetupError::Waits)?,
            probe_timeouts: Timeouts::from_settings(profile, settings).map_err(SetupError::Waits)?,
            keep_namespaces,
        })
    }

    /// The TLSRoute version the pinned CRD bundle of this run's Cilium stores.
    pub fn tlsroute_version(&self) -> &str {
        self.pins.get(&self.version).map_or("v1alpha2", |p| p.gateway_api.tlsroute.as_str())
    }

    /// What every case of a run of `lane` shares; the expectations are asserted.
    pub fn common(&self, lane: Lane) -> CaseRun<'_> {
        CaseRun {
            lane,
            version: &self.version,
            timeouts: &self.timeouts,
            probe_timeouts: &self.probe_timeouts,
            keep_namespaces: self.keep_namespaces,
            tlsroute_version: self.tlsroute_version(),
            expecting: Expecting::Asserted,
        }
    }
}

/// What every case of a run shares.
pub struct CaseRun<'a> {
    pub lane: Lane,
    pub version: &'a CiliumVersion,
    pub timeouts: &'a ClusterTimeouts,
    pub probe_timeouts: &'a Timeouts,
    pub keep_namespaces: bool,
    /// The TLSRoute version the installed CRD bundle stores.
    pub tlsroute_version: &'a str,
    pub expecting: Expecting,
}

/// The cases that expect something at `version`. A Cilium fixture restated for another release
/// line expects nothing at this version: it is left out (and said so) rather than run into "no
/// expectation applies".
pub fn cases_at(lane: Lane, version: &CiliumVersion, cases: Vec<Case>) -> Vec<Case> {
    let (cases, elsewhere): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(|c| c.expects_at(version));
    if !elsewhere.is_empty() {
        let names: Vec<&str> = elsewhere.iter().map(|c| c.name.as_str()).collect();
        eprintln!(
            "{}",
            crate::table::list_line(&format!("layout-gate {} {version}: no expectation at this version, left out:", lane.as_str()), &names)
        );
    }
    cases
}

/// What a live run gathered, kept outside the run's future so an interrupted run still
/// reports and tears down.
#[derive(Default)]
pub struct Gathered {
    pub log: PhaseLog,
    pub outcomes: Vec<CaseOutcome>,
    pub certs: Vec<CertRecord>,
    pub cluster_diag: Option<Diagnostics>,
    pub cleanup: TeardownReport,
    /// What the cluster's bring-up recorded (versions, digests) for evidence `environment`.
    pub environment: BTreeMap<String, String>,
}

/// A finished case's lines: `ok   dns01-default`, then each failed check and the error.
pub fn result_lines(c: &CaseEvidence) -> String {
    let mark = if c.outcome == Outcome::Pass { "ok  " } else { "FAIL" };
    let mut out = format!("{mark} {}", c.name);
    for v in c.verdicts.iter().filter(|v| !v.passed()) {
        out.push_str(&format!("\n     {}", v.line()));
    }
    if let Some(e) = &c.error {
        out.push_str(&format!("\n     error: {}", e.replace('\n', "\n            ")));
    }
    out
}
