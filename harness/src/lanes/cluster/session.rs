//! What a run of a lane that runs Cilium on an API server does once the cluster is up, the same
//! for the kind and operator lanes: each case in turn through [`super::one_case`] with the
//! lane's data plane, the result line of each as it finishes, and at the end the evidence (every
//! selected case, run or not, with why), the diagnostics, the summary and the exit status.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::diagnostics::{self, Diagnostics};
use super::driver::Driver;
use super::failure::{PhaseError, PhaseLog, TeardownReport, failure_message};
use super::manifests::SecretMaterial;
use super::names::{namespace_for, run_suffix};
pub use super::one_case::Expecting;
use super::one_case::{self, CaseInput, CaseOutcome};
use super::plane::DataPlane;
use super::progress::Progress;
use super::teardown::Teardown;
use super::timeouts::KindTimeouts;
use crate::case::{Case, CiliumVersion};
use crate::evidence::{self, CaseEvidence, CiliumInfo, Evidence, Lane, NotRunCase, Phase, RunStatus, ToolInfo};
use crate::judge::Outcome;
use crate::render::certs::{CertRecord, CertSet};
use crate::run::{Signal, Timeouts};

/// What every case of a run shares.
pub struct CaseRun<'a> {
    pub lane: Lane,
    pub version: &'a CiliumVersion,
    pub timeouts: &'a KindTimeouts,
    pub probe_timeouts: &'a Timeouts,
    pub keep_namespaces: bool,
    /// The TLSRoute version the installed CRD bundle stores.
    pub tlsroute_version: &'a str,
    pub expecting: Expecting,
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

/// Runs `cases` one after another on the ready cluster `d` is connected to.
#[allow(clippy::too_many_arguments)]
pub async fn run_cases<D: Driver, P: DataPlane>(
    d: &mut D,
    plane: &mut P,
    cases: &[Case],
    run_id: &str,
    common: &CaseRun<'_>,
    teardown: &mut Teardown,
    st: &mut Gathered,
    progress: &Progress,
    fail_fast: bool,
) -> Result<(), PhaseError> {
    for case in cases {
        let certs = CertSet::generate(run_id, &case.certificates)
            .map_err(|e| PhaseError::new(&format!("case {}: certificates", case.name), e.to_string()))?;
        st.certs.extend(certs.records());
        let input = CaseInput {
            case,
            version: common.version,
            namespace: namespace_for(&case.name, &run_suffix(run_id)),
            run_id,
            certs: SecretMaterial::Issued(&certs),
            timeouts: common.timeouts,
            probe_timeouts: common.probe_timeouts,
            keep_namespace: common.keep_namespaces,
            tlsroute_version: common.tlsroute_version,
            expecting: common.expecting,
        };
        let outcome = one_case::run_case(d, plane, &input, teardown).await;
        st.cleanup.done.extend(outcome.cleanup.done.iter().cloned());
        st.cleanup.kept.extend(outcome.cleanup.kept.iter().cloned());
        st.cleanup.failed.extend(outcome.cleanup.failed.iter().cloned());
        let passed = outcome.evidence.outcome == Outcome::Pass;
        progress.case_done(passed, &result_lines(&outcome.evidence));
        st.outcomes.push(outcome);
        if fail_fast && !passed {
            progress.note(&format!(
                "layout-gate {} lane: --fail-fast: case {} failed; starting no further case",
                common.lane.as_str(),
                case.name
            ));
            break;
        }
    }
    Ok(())
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

/// A case that never ran (preflight or the cluster failed, or the run was interrupted): named
/// with why, and never given a verdict.
pub fn not_run(case: &Case, why: &str) -> NotRunCase {
    NotRunCase { name: case.name.clone(), reason: why.to_string() }
}

/// What a run did with its cases.
pub struct Outcomes {
    /// Every case the run selected, by name, in order (each is in `cases` or `not_run`).
    pub selected: Vec<String>,
    pub cases: Vec<CaseEvidence>,
    pub not_run: Vec<NotRunCase>,
    pub interrupted: bool,
}

/// Who and what a run's evidence is about.
pub struct RunLabel<'a> {
    pub lane: Lane,
    pub cilium: CiliumInfo,
    pub run_id: &'a str,
    pub started_at: &'a str,
}

impl<'a> RunLabel<'a> {
    /// A run of `lane` at `version` (picked by `source`).
    pub fn new(lane: Lane, version: &crate::case::CiliumVersion, source: &str, run_id: &'a str, started_at: &'a str) -> Self {
        RunLabel { lane, cilium: CiliumInfo { version: version.to_string(), source: source.to_string() }, run_id, started_at }
    }
}

/// Writes the run's evidence and its diagnostics folders; where.
pub fn write_evidence(
    label: &RunLabel<'_>,
    root: &Path,
    phases: Vec<Phase>,
    environment: BTreeMap<String, String>,
    certificates: Vec<CertRecord>,
    run: Outcomes,
    folders: Vec<(String, Diagnostics)>,
) -> Result<PathBuf, String> {
    // A run that reached no case is not a result: it says why, and carries no verdict.
    let status = if run.cases.is_empty() {
        let mut reasons: Vec<&str> = run.not_run.iter().map(|c| c.reason.as_str()).collect();
        reasons.dedup();
        RunStatus::NotRun { reason: if reasons.is_empty() { "no case was selected".into() } else { reasons.join("; ") } }
    } else {
        RunStatus::Ran
    };
    let ev = Evidence {
        schema_version: evidence::SCHEMA_VERSION,
        tool: ToolInfo::current(),
        run_id: label.run_id.to_string(),
        lane: label.lane,
        status,
        selected: Some(run.selected),
        not_run: run.not_run,
        interrupted: run.interrupted,
        cilium: Some(label.cilium.clone()),
        started_at: label.started_at.to_string(),
        finished_at: evidence::now_rfc3339(),
        phases,
        environment,
        certificates,
        cases: run.cases,
        digest: None,
    };
    match evidence::write_run(root, &ev) {
        Ok(dir) => {
            diagnostics::write_all(&dir, &folders)?;
            Ok(dir)
        }
        Err(e) => {
            // The evidence could not be written; the diagnostics still matter.
            let beside = root.join(format!("{}.diagnostics", label.run_id));
            if std::fs::create_dir_all(&beside).is_ok() && diagnostics::write_all(&beside, &folders).is_ok() {
                return Err(format!("{e} (diagnostics written to {})", beside.display()));
            }
            Err(e.to_string())
        }
    }
}

/// Ends a run: evidence for every selected case (those that never ran say why), the summary
/// of what the per-case lines did not say, the failure message, and the exit status.
#[allow(clippy::too_many_arguments)]
pub fn finish(
    label: &RunLabel<'_>,
    cases_selected: &[Case],
    evidence_dir: &Path,
    mut environment: BTreeMap<String, String>,
    st: &mut Gathered,
    result: Option<Result<(), PhaseError>>,
    interrupted: Option<Signal>,
    report: TeardownReport,
    progress: &Progress,
) -> ExitCode {
    let why_not = match (&result, interrupted) {
        (_, Some(sig)) => Some(format!("interrupted by {sig}")),
        (Some(Err(e)), _) => Some(format!("phase `{}` failed: {}", e.phase, e.problem)),
        _ => None,
    };
    environment.extend(std::mem::take(&mut st.environment));
    let mut phases = std::mem::take(&mut st.log.phases);
    let mut cases = Vec::new();
    let mut folders = Vec::new();
    let ran: std::collections::BTreeSet<String> = st.outcomes.iter().map(|o| o.evidence.name.clone()).collect();
    for o in std::mem::take(&mut st.outcomes) {
        phases.extend(o.phases);
        for (k, v) in o.environment {
            environment.entry(format!("{k}.{}", o.evidence.name)).or_insert(v);
        }
        if let Some(dg) = o.diagnostics {
            folders.push((o.evidence.name.clone(), dg));
        }
        cases.push(o.evidence);
    }
    let mut skipped = Vec::new();
    for c in cases_selected {
        if !cases.iter().any(|e| e.name == c.name) {
            skipped.push(not_run(c, why_not.as_deref().unwrap_or("the run stopped early")));
        }
    }
    if let Some(dg) = st.cluster_diag.take() {
        folders.push(("cluster".into(), dg));
    }
    let written = write_evidence(
        label,
        evidence_dir,
        phases,
        environment,
        std::mem::take(&mut st.certs),
        Outcomes {
            selected: cases_selected.iter().map(|c| c.name.clone()).collect(),
            cases: cases.clone(),
            not_run: skipped.clone(),
            interrupted: interrupted.is_some(),
        },
        folders,
    );

    // Each finished case was printed as it finished; the cases that never ran are named here.
    let mut out = String::new();
    for c in cases.iter().filter(|c| !ran.contains(&c.name)) {
        out.push_str(&format!("{}\n", result_lines(c)));
    }
    for c in &skipped {
        out.push_str(&format!("not run {}: {}\n", c.name, c.reason));
    }
    match &written {
        Ok(dir) => out.push_str(&format!("evidence: {}\n", dir.display())),
        Err(e) => out.push_str(&format!("evidence NOT written: {e}\n")),
    }
    if let Some(Err(e)) = &result {
        let diag = written
            .as_ref()
            .ok()
            .and_then(|dir| dir.join("diagnostics/cluster").is_dir().then(|| format!("{}/", dir.join("diagnostics/cluster").display())));
        eprintln!("{}", crate::term::text(&failure_message(label.lane, e, diag.as_deref(), &report)));
    } else {
        out.push_str(&format!("{}\n", report.summary()));
    }
    progress.result(&crate::term::text(out.trim_end()));
    progress.finish();
    match (interrupted, &result) {
        (Some(sig), _) => sig.exit_code(),
        (None, Some(Err(_))) => ExitCode::from(2),
        _ if written.is_err() => ExitCode::from(2),
        _ if skipped.is_empty() && cases.iter().all(|c| c.outcome == Outcome::Pass) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Merges a case-level teardown report into the run's.
pub fn merged_report(mut report: TeardownReport, st: &mut Gathered) -> TeardownReport {
    report.done.splice(0..0, st.cleanup.done.drain(..));
    report.kept.append(&mut st.cleanup.kept);
    report.failed.append(&mut st.cleanup.failed);
    report
}
