//! A whole run of a lane that runs Cilium on an API server, the same for the kind and operator
//! lanes ([`live`], over the lane's [`ClusterLane`] seam): run id, signals, preflight, bring-up,
//! each case through [`super::one_case`] with the lane's data plane (one after another, or as
//! many at once as the lane says, [`ClusterLane::cases_at_once`]) and the result line of each
//! as it finishes, teardown also on Ctrl-C or SIGTERM, and at the end the evidence (every
//! selected case, run or not, with why), the diagnostics, the summary and how the run ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::batch::{Batch, CASES_AT_ONCE_KEY};
use super::diagnostics::{self, Diagnostics};
use super::driver::Driver;
use super::failure::{PhaseError, TeardownReport, failure_message};
use super::lane::{ClusterLane, Refusal, StillUp, stopped_before};
use super::live::LiveDriver;
use super::manifests::SecretMaterial;
use super::names::{namespace_for, run_suffix};
use super::one_case::{self, CaseInput};
use super::plane::DataPlane;
use super::progress::Progress;
use super::setup::{CaseRun, Setup};
pub use super::setup::{Gathered, result_lines};
use super::teardown::Teardown;
use crate::case::Case;
use crate::evidence::{self, CaseEvidence, CiliumInfo, Evidence, Lane, NotRunCase, Phase, RunStatus, ToolInfo};
use crate::judge::Outcome;
use crate::render::certs::{CertRecord, CertSet};
use crate::run::{Signal, Signals};

/// How a run ended, the same for every lane (`run::RunEnd`); `cli/` turns it into an exit status.
pub use crate::run::RunEnd;

/// Why a run of a cluster lane did not start, or stopped before any cluster existed; `cli/`
/// says it and picks the exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// What the run was asked for does not make a run (a version, a case, a wait): the lane's
    /// own error.
    #[error("{0}")]
    Setup(Box<dyn std::error::Error + Send + Sync>),
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The kind lane's dry run could not be shown.
    #[error("{0}")]
    DryRun(String),
    /// Something of the run's own failed before any cluster existed (its run folder).
    #[error("{0}")]
    Local(String),
}

/// A run of `lane` over `setup`'s cases: preflight, bring-up, every case, teardown (also on
/// Ctrl-C or SIGTERM) and the evidence. `Err`: something of the run's own failed before any
/// cluster existed (no evidence is written).
pub async fn live<L: ClusterLane>(
    lane: &mut L,
    setup: &Setup,
    evidence_dir: &Path,
    fail_fast: bool,
    shard: Option<&str>,
) -> Result<RunEnd, RunError> {
    let started_at = evidence::now_rfc3339();
    let run_id = evidence::run_id(L::LANE, Some(&setup.version.to_string()), shard);
    let label = RunLabel::new(L::LANE, &setup.version, &setup.version_source, &run_id, &started_at);
    // Listening starts before preflight, so an early Ctrl-C is not lost.
    let mut signals = Signals::new();
    let progress = Progress::from_env();
    progress.set_total(setup.cases.len());
    // What the result lines below are about, before the first of them.
    progress.result(&format!("{}\nCilium {} on {}", L::LANE.banner(), setup.version, lane.describe(setup)));
    let environment = match lane.preflight(setup, &progress).await {
        Ok(env) => env,
        Err(Refusal::NotRun { message, reason }) => {
            eprintln!("{message}");
            let run = Outcomes {
                selected: setup.cases.iter().map(|c| c.name.clone()).collect(),
                cases: Vec::new(),
                not_run: setup.cases.iter().map(|c| not_run(c, &reason)).collect(),
                interrupted: false,
            };
            match write_evidence(&label, evidence_dir, Vec::new(), BTreeMap::new(), Vec::new(), run, Vec::new()) {
                Ok(dir) => eprintln!("evidence: {}", dir.display()),
                Err(e) => eprintln!("evidence NOT written: {e}"),
            }
            return Ok(RunEnd::Broken);
        }
        Err(Refusal::Failed(e)) => return Err(RunError::Local(e)),
    };
    let mut d = LiveDriver::new(progress.clone(), setup.timeouts);
    let mut teardown = Teardown::default();
    let mut st = Gathered::default();
    let mut result = None;
    let mut up: Option<L::Up> = None;
    let interrupted = {
        // A signal aborts the running case where it is (its namespace is on the teardown
        // list); the cases that finished keep their evidence.
        let run = async {
            let ready = match lane.bring_up(&mut d, setup, &run_id, &mut teardown, &mut st.log).await {
                Ok(u) => u,
                Err(e) => {
                    st.cluster_diag = lane.diagnostics(&mut d, setup).await;
                    return Err(e);
                }
            };
            st.environment.extend(L::ready(&ready).environment.clone());
            let ready: &L::Up = up.insert(ready);
            let still_up = || L::check_alive(ready);
            let at_once = lane.cases_at_once();
            let common = setup.common(L::LANE);
            let r = if at_once == Batch::ONE {
                st.environment.insert(CASES_AT_ONCE_KEY.into(), at_once.to_string());
                let mut plane = lane.plane(setup, ready);
                run_cases(&mut d, &mut plane, &setup.cases, &run_id, &common, &mut teardown, &mut st, &progress, fail_fast, &still_up).await
            } else {
                // Each case on a data plane of its own, side by side on the one cluster.
                let lane = &*lane;
                let new_plane = || lane.plane(setup, ready);
                super::batch::run_cases(
                    &d,
                    &new_plane,
                    &setup.cases,
                    &run_id,
                    &common,
                    &mut teardown,
                    &mut st,
                    &progress,
                    fail_fast,
                    at_once,
                    &still_up,
                )
                .await
            };
            if r.is_err() {
                add_log_tails(&mut st, L::log_tails(ready));
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
        eprintln!("layout-gate {} lane: {sig}: stopping; tearing down {}", L::LANE.as_str(), teardown.pending().join(", "));
    }
    let report = teardown.run(&mut d, &setup.timeouts).await;
    let mut report = merged_report(report, &mut st);
    if let Some(u) = up.take() {
        report.done.extend(L::shut_down(u));
    }
    Ok(finish(&label, &setup.cases, evidence_dir, environment, &mut st, result, interrupted, report, &progress))
}

/// The lane's own log tails, into the cluster diagnostics (none: nothing is added).
pub fn add_log_tails(st: &mut Gathered, tails: Vec<(String, String)>) {
    if tails.is_empty() {
        return;
    }
    let dg = st.cluster_diag.get_or_insert_with(Default::default);
    for (name, text) in tails {
        dg.add(&name, text);
    }
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
    still_up: StillUp<'_>,
) -> Result<(), PhaseError> {
    for case in cases {
        still_up().map_err(|e| stopped_before(&case.name, e))?;
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

/// Why a run's evidence (or its diagnostics beside it) was not written.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceWriteError {
    /// The evidence itself; `diagnostics` is where they were still written, if they were.
    #[error("{source}{}", .diagnostics.as_ref().map(|d| format!(" (diagnostics written to {})", d.display())).unwrap_or_default())]
    Evidence { source: crate::evidence::EvidenceError, diagnostics: Option<PathBuf> },
    #[error(transparent)]
    Diagnostics(#[from] diagnostics::WriteError),
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
) -> Result<PathBuf, EvidenceWriteError> {
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
        Err(source) => {
            // The evidence could not be written; the diagnostics still matter.
            let beside = root.join(format!("{}.diagnostics", label.run_id));
            let kept = std::fs::create_dir_all(&beside).is_ok() && diagnostics::write_all(&beside, &folders).is_ok();
            Err(EvidenceWriteError::Evidence { source, diagnostics: kept.then_some(beside) })
        }
    }
}

/// Ends a run: evidence for every selected case (those that never ran say why), the summary
/// of what the per-case lines did not say, the failure message, and how the run ended.
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
) -> RunEnd {
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
        (Some(sig), _) => RunEnd::Interrupted(sig),
        (None, Some(Err(_))) => RunEnd::Broken,
        _ if written.is_err() => RunEnd::Broken,
        _ if skipped.is_empty() && cases.iter().all(|c| c.outcome == Outcome::Pass) => RunEnd::Passed,
        _ => RunEnd::Failed,
    }
}

/// Merges a case-level teardown report into the run's.
pub fn merged_report(mut report: TeardownReport, st: &mut Gathered) -> TeardownReport {
    report.done.splice(0..0, st.cleanup.done.drain(..));
    report.kept.append(&mut st.cleanup.kept);
    report.failed.append(&mut st.cleanup.failed);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing_ran() -> Outcomes {
        Outcomes { selected: Vec::new(), cases: Vec::new(), not_run: Vec::new(), interrupted: false }
    }

    #[test]
    fn evidence_that_cannot_be_written_says_where_the_diagnostics_went() {
        let v = crate::case::CiliumVersion::parse("1.19.5").unwrap();
        let label = RunLabel::new(Lane::Operator, &v, "test", "run-x", "2026-12-01T00:00:00.000Z");
        let mut dg = Diagnostics::default();
        dg.add("a.txt", "b".into());
        // The root is a file: neither the evidence nor the diagnostics beside it can be written.
        let file = tempfile::NamedTempFile::new().unwrap();
        let e = write_evidence(&label, file.path(), Vec::new(), BTreeMap::new(), Vec::new(), nothing_ran(), vec![("c".into(), dg.clone())])
            .unwrap_err();
        assert!(matches!(e, EvidenceWriteError::Evidence { diagnostics: None, .. }), "{e:?}");
        assert!(!e.to_string().contains("diagnostics written to"), "{e}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<crate::evidence::EvidenceError>()), "{e:?}");
        // The evidence is refused (its folder exists already), the diagnostics are kept beside.
        let root = tempfile::tempdir().unwrap();
        write_evidence(&label, root.path(), Vec::new(), BTreeMap::new(), Vec::new(), nothing_ran(), Vec::new()).unwrap();
        let e = write_evidence(&label, root.path(), Vec::new(), BTreeMap::new(), Vec::new(), nothing_ran(), vec![("c".into(), dg)])
            .unwrap_err();
        let beside = root.path().join("run-x.diagnostics");
        assert!(e.to_string().ends_with(&format!(" (diagnostics written to {})", beside.display())), "{e}");
        assert!(beside.join("diagnostics/c/a.txt").exists());
    }
}
