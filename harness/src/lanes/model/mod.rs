//! The model lane: layout-gate's prediction of Cilium's Gateway translation, version by
//! version, rendered into a real local Envoy and probed like a cluster would be. Everything it
//! produces says `model`.
//!
//! * [`input`]: the case's manifests as typed values (unsupported kinds and fields refused);
//! * [`rules`]: each rule with its version range and source;
//! * [`status`], [`translate`]: the prediction (statuses, Envoy listeners and chains), pure;
//! * [`clusters`]: the upstream protocol of each backend cluster (operator's or agent's), pure;
//! * [`serve`]: backends + a real Envoy serving the prediction;
//! * [`explain`]: the prediction as a table.

pub mod admission;
pub mod checked;
pub mod clusters;
pub mod differential_figures;
pub mod explain;
pub mod history;
pub mod hostnames;
pub mod input;
pub mod installed;
pub mod rules;
pub mod serve;
pub mod status;
pub mod translate;
pub mod upstream;
pub mod why;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::case::{Case, CiliumVersion};
use crate::evidence::{self, CaseEvidence, CiliumInfo, Evidence, Lane, Observed, Phase, ToolInfo};
use crate::judge::{ListenerFact, Outcome};
use crate::observe::envoy_dump;
use crate::progress::Progress;
use crate::render::certs::CertSet;
use crate::run::{self, Profile, RunEnd, Settings, Signal, Signals, Timeouts};
use crate::versions::Pins;

/// The model lane's own defaults: those of a lane whose data plane is a local Envoy
/// ([`Timeouts::local_envoy`]). Every setting (flag, environment, config file) still wins.
pub fn model_defaults() -> Timeouts {
    Timeouts::local_envoy()
}

/// The model lane's waits from `settings` over [`model_defaults`].
pub fn model_timeouts_from(settings: &Settings) -> Result<Timeouts, String> {
    Timeouts::from_settings(Profile::Local, settings)
}

/// The model lane's waits from the environment only (the e2e trials and the bench).
pub fn model_timeouts() -> Result<Timeouts, run::TimeoutsError> {
    Timeouts::from_lookup_over(model_defaults(), |k| std::env::var(k).ok())
}

/// The Gateway a case's expectations speak of.
pub fn case_gateway(case: &Case, input: input::ModelInput) -> Result<input::GatewayInput, String> {
    input
        .gateways
        .into_iter()
        .find(|g| g.name == case.gateway)
        .ok_or_else(|| format!("case {}: no Gateway named {} among the manifests", case.name, case.gateway))
}

/// What the model predicts for every Gateway of a case, in the shape the judge reads: with one
/// Gateway, listeners by name and route parents by sectionName; with several, every key
/// prefixed by its Gateway (`<gateway>/<listener>`).
pub fn observed_of(case: &Case, predictions: &[(&input::GatewayInput, translate::Prediction)]) -> Observed {
    let several = predictions.len() > 1;
    let mut o = Observed::default();
    for (gw, p) in predictions {
        if gw.name == case.gateway {
            o.gateway = Some(p.gateway.clone());
        }
        o.gateways.insert(gw.name.clone(), p.gateway.clone());
        for (l, cs) in &p.listeners {
            let key = if several { format!("{}/{l}", gw.name) } else { l.clone() };
            o.listeners.insert(key, cs.clone());
        }
        for (ls, (own, listeners)) in &p.listener_sets {
            o.listener_sets.insert(ls.clone(), own.clone());
            for (l, cs) in listeners {
                o.listener_set_listeners.insert(format!("{ls}/{l}"), cs.clone());
            }
        }
        for r in &p.refused {
            if !o.refused.contains(r) {
                o.refused.push(r.clone());
            }
        }
        for (r, parents) in &p.routes {
            let slot = o.routes.entry(r.clone()).or_default();
            for (k, cs) in parents {
                slot.entry(k.clone()).or_insert_with(|| cs.clone());
            }
        }
    }
    if !several {
        o.gateways.clear();
    }
    o
}

/// Runs one case on one Cilium version in the model lane. Never panics on the case's account:
/// anything that stops it (an unsupported manifest, Envoy refusing its bootstrap) becomes the
/// case's `error`.
pub async fn run_case(case: &Case, version: &CiliumVersion, timeouts: &Timeouts) -> (CaseEvidence, Vec<Phase>) {
    run_case_as(case, version, version, timeouts).await
}

/// [`run_case`] at `version`, predicted with `behaviour`'s rules (the same version, or the
/// checked version `--assume-like` names for an unchecked one).
pub async fn run_case_as(
    case: &Case,
    version: &CiliumVersion,
    behaviour: &CiliumVersion,
    timeouts: &Timeouts,
) -> (CaseEvidence, Vec<Phase>) {
    let started = Instant::now();
    let mut phases = Vec::new();
    let k = timeouts.consecutive.value.get() as usize;
    let fail =
        |error: String, started: Instant| run::case_evidence(case, version, Observed::default(), Vec::new(), Some(error), started, k);

    let certs = match CertSet::generate(&format!("model {} {version}", case.name), &case.certificates) {
        Ok(c) => c,
        Err(e) => return (fail(format!("certificates: {e}"), started), phases),
    };
    // Each step is predicted from what exists after it, the agent's CEC table carried across
    // (history): a case without steps is its first step alone.
    let mut table = history::AgentTable::default();
    let mut first: Option<Observed> = None;
    let mut verdicts = Vec::new();
    let mut steps = Vec::new();
    let mut error = None;
    for i in 0..case.step_count() {
        let view = case.at_step(i);
        let step = match predict_step(&view, i, version, behaviour, timeouts, &certs, &mut table, &mut phases).await {
            Ok(s) => s,
            Err(e) => {
                let e = if i == 0 { e } else { format!("step {} ({}): {e}", i + 1, case.step_name(i)) };
                error = Some(e);
                break;
            }
        };
        let applied = view.applied(version);
        verdicts.extend(crate::judge::in_step(run::judge_all(&view, &applied, &step.observed, &certs, k), i + 1, case.step_name(i)));
        if step.dump_error.is_some() && error.is_none() {
            error = step.dump_error.map(|e| if i == 0 { e } else { format!("step {} ({}): {e}", i + 1, case.step_name(i)) });
        }
        match i {
            0 => first = Some(step.observed),
            _ => steps.push(evidence::StepEvidence {
                name: case.step_name(i).to_string(),
                applied_files: case.steps[i - 1].apply.iter().map(|m| file_name(&m.path)).collect(),
                deleted_files: case.steps[i - 1].delete.iter().map(|p| file_name(p)).collect(),
                expectations: applied,
                observed: step.observed,
                recording: None,
            }),
        }
    }
    let mut ev = run::case_evidence(case, version, first.unwrap_or_default(), verdicts, error, started, k);
    ev.steps = steps;
    ev.certificates = certs.records();
    (ev, phases)
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

/// What one step of a case showed: its observations, and why the config dump could not be
/// read, if it could not.
struct StepSeen {
    observed: Observed,
    dump_error: Option<String>,
}

/// One step of a case (`view`: the case as it stands after step `i`), predicted with the agent's
/// CEC table of the steps before, served by a fresh Envoy and probed.
#[allow(clippy::too_many_arguments)]
async fn predict_step(
    view: &Case,
    i: usize,
    version: &CiliumVersion,
    behaviour: &CiliumVersion,
    timeouts: &Timeouts,
    certs: &CertSet,
    table: &mut history::AgentTable,
    phases: &mut Vec<Phase>,
) -> Result<StepSeen, String> {
    let label = if i == 0 { view.name.clone() } else { format!("{} step {}", view.name, i + 1) };
    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let model = input::read(view).map_err(|e| e.to_string())?;
    if i == 0 && model.gateway(&view.gateway).is_none() {
        return Err(format!("case {}: no Gateway named {} among the manifests", view.name, view.gateway));
    }
    let mut predictions: Vec<(input::GatewayInput, translate::Prediction)> =
        model.gateways.iter().map(|g| (g.clone(), translate::predict(g, behaviour))).collect();
    let kept = table.step(&mut predictions, behaviour);
    phases.push(Phase { name: format!("{label}: model"), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });

    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let pairs: Vec<(&input::GatewayInput, &translate::Prediction)> = predictions.iter().chain(&kept).map(|(g, p)| (g, p)).collect();
    // A port taken between choosing and binding it is the harness's race, not an observation:
    // try again with new ports.
    let mut attempt = 0;
    let served = loop {
        attempt += 1;
        match serve::serve(view, &pairs, certs, timeouts.envoy_ready.limit).await {
            Ok(s) => break s,
            Err(serve::ServeError::PortTaken(p)) if attempt < 3 => tracing::warn!("case {label}: port race on {p}; retrying"),
            Err(e) => return Err(format!("case {label} on model {version}: {e}")),
        }
    };
    phases.push(Phase { name: format!("{label}: envoy"), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });

    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let applied = view.applied(version);
    let ports = served.ports.clone();
    let primary = view.gateway.clone();
    let addr_of = move |k: &crate::case::ProbeKey| ports.get(&(k.gateway.clone().unwrap_or_else(|| primary.clone()), k.port)).copied();
    let probes = run::probe_all_keyed(&applied, &addr_of, certs, timeouts).await;
    let dump = served.envoy.admin().dynamic_listeners_dump().await;
    // The clusters, from the whole dump (the model's are the bootstrap's static ones).
    let clusters =
        served.envoy.admin().config_dump().await.ok().and_then(|d| envoy_dump::clusters_from_dump(&d, "model envoy /config_dump").ok());
    phases.push(Phase { name: format!("{label}: probes"), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });
    let (envoy_listeners, envoy_summary, dump_error) = match dump
        .map_err(|e| e.to_string())
        .and_then(|d| envoy_dump::summarize_bytes(&d, "model envoy /config_dump", false).map_err(|e| e.to_string()))
    {
        // One Envoy carries every Gateway's listeners; each fact names its Gateway, so the
        // `<gateway>/<listener>` keys of a case with several find theirs (ListenerFact::answers_to).
        Ok(s) => (Some(ListenerFact::all(&s)), serde_json::to_value(&s).ok(), None),
        Err(e) => (None, None, Some(format!("config dump: {e}"))),
    };
    let refs: Vec<(&input::GatewayInput, translate::Prediction)> = predictions.iter().map(|(g, p)| (g, p.clone())).collect();
    let mut observed = observed_of(view, &refs);
    observed.probes = probes;
    observed.envoy_listeners = envoy_listeners;
    observed.envoy_summary = envoy_summary;
    observed.envoy_clusters = clusters;
    drop(served);
    Ok(StepSeen { observed, dump_error })
}

/// How a model-lane run goes, decided by the caller (the CLI maps its flags onto it).
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// How many cases (times versions) run at once; each has its own Envoy and backends.
    pub jobs: NonZeroUsize,
    /// After the first failing case, start no new one (those already running finish).
    pub fail_fast: bool,
    pub timeouts: Timeouts,
    /// The shard this run is (`2/3`), written into the run ids so shards never collide.
    pub shard: Option<String>,
    /// Versions the model has not been checked at -> the checked version whose behaviour is
    /// predicted for each (`--assume-like`, see [`checked`]); the evidence says so.
    pub assume: BTreeMap<CiliumVersion, CiliumVersion>,
}

impl ModelOptions {
    pub fn new(timeouts: Timeouts) -> Self {
        ModelOptions { jobs: DEFAULT_JOBS, fail_fast: false, timeouts, shard: None, assume: BTreeMap::new() }
    }
}

/// Cases run 4 at a time unless `--jobs` says otherwise: on 2 cores this keeps every Envoy
/// answering within the probe timeout.
pub const DEFAULT_JOBS: NonZeroUsize = NonZeroUsize::new(4).expect("4 is not zero");

/// What [`run_all`] ended with.
#[derive(Debug)]
pub struct RunResult {
    /// One per version, holding the cases that finished.
    pub evidence: Vec<Evidence>,
    /// Cases (times versions) that never ran: stopped by a signal or `fail_fast`.
    pub not_run: usize,
    /// The signal that stopped the run, if one did.
    pub interrupted: Option<Signal>,
}

/// A case that finished, as its task sends it back.
type Finished = (CiliumVersion, Box<CaseEvidence>, Vec<Phase>);

/// Runs every case on every version, `options.jobs` at a time, and calls `on_done` for each
/// case as it finishes (not at the end). A `stop` signal starts no new case; SIGINT aborts the
/// running ones (their Envoys are killed as their tasks drop), SIGTERM lets them finish (a model
/// case takes about a second) unless a second signal comes. Every finished case is kept in the
/// result, with `interrupted` set.
pub async fn run_all(
    cases: &[Case],
    versions: &[(CiliumVersion, String)],
    options: &ModelOptions,
    mut on_done: impl FnMut(&CiliumVersion, &CaseEvidence),
    stop: impl std::future::Future<Output = Signal> + Send + 'static,
) -> RunResult {
    let sem = Arc::new(tokio::sync::Semaphore::new(options.jobs.get()));
    let stopping = Arc::new(AtomicBool::new(false));
    let running: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Finished>();
    let all_cases = cases;
    // A Cilium fixture speaks only for the release line it was read at: at another version it
    // has nothing to check, and is left out rather than failed (cases/README.md says where).
    let jobs: Vec<(CiliumVersion, Case)> =
        versions.iter().flat_map(|(v, _)| cases.iter().filter(|c| c.expects_at(v)).map(move |c| (v.clone(), c.clone()))).collect();
    let total = jobs.len();
    // Cases start in order (version, then name), each when a permit is free: `--fail-fast`
    // and a signal then stop a predictable rest.
    let feeder = {
        let (sem, stopping, running, timeouts) = (sem.clone(), stopping.clone(), running.clone(), options.timeouts.clone());
        let fail_fast = options.fail_fast;
        let assume = options.assume.clone();
        tokio::spawn(async move {
            for (v, c) in jobs {
                let Ok(permit) = sem.clone().acquire_owned().await else { break };
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let (tx, t, stopping, sem) = (done_tx.clone(), timeouts.clone(), stopping.clone(), sem.clone());
                let behaviour = assume.get(&v).cloned().unwrap_or_else(|| v.clone());
                let task = tokio::spawn(async move {
                    let (ev, phases) = run_case_as(&c, &v, &behaviour, &t).await;
                    // Decided before the permit is released, so the feeder cannot start the
                    // next case in between.
                    if fail_fast && ev.outcome != Outcome::Pass {
                        stopping.store(true, Ordering::SeqCst);
                        sem.close();
                    }
                    drop(permit);
                    let _ = tx.send((v, Box::new(ev), phases));
                });
                if let Ok(mut r) = running.lock() {
                    r.push(task.abort_handle());
                }
            }
        })
    };
    let started_at = evidence::now_rfc3339();
    let mut by_version: BTreeMap<CiliumVersion, (Vec<CaseEvidence>, Vec<Phase>)> = BTreeMap::new();
    let mut finished = 0;
    let mut interrupted = None;
    let (signal_tx, mut signal_rx) = tokio::sync::mpsc::unbounded_channel();
    // The caller's stop future fires once; a second signal is awaited through a fresh listener.
    let watcher = tokio::spawn(async move {
        let first = stop.await;
        let _ = signal_tx.send(first);
        let mut more = Signals::new();
        loop {
            let s = more.next().await;
            if signal_tx.send(s).is_err() {
                break;
            }
        }
    });
    let stop_new = || {
        stopping.store(true, Ordering::SeqCst);
        // A feeder waiting for a permit wakes up and stops.
        sem.close();
    };
    let abort_running = || {
        feeder.abort();
        if let Ok(r) = running.lock() {
            r.iter().for_each(|h| h.abort());
        }
    };
    loop {
        tokio::select! {
            // None: the feeder and every case task are gone (each holds a sender).
            done = done_rx.recv() => match done {
                None => break,
                Some((v, ev, phases)) => {
                    finished += 1;
                    on_done(&v, &ev);
                    let e = by_version.entry(v).or_default();
                    e.0.push(*ev);
                    e.1.extend(phases);
                }
            },
            Some(sig) = signal_rx.recv() => {
                let first = interrupted.is_none();
                if first {
                    interrupted = Some(sig);
                    stop_new();
                }
                // Ctrl-C, Ctrl-\ and a hangup at a terminal reach the whole process group, our
                // Envoys included: the running cases would be judged on dying Envoys, so they
                // are aborted, not finished. SIGTERM is sent to us alone: the running cases
                // finish, unless a second signal comes.
                if !first || sig.reaches_children() {
                    abort_running();
                }
            }
        }
    }
    watcher.abort();
    let not_run = total - finished;
    let envoy_version =
        crate::envoy::EnvoyBinary::find().ok().and_then(|b| b.version().ok()).map(|v| v.raw).unwrap_or_else(|| "unknown".into());
    let evidence = versions
        .iter()
        .map(|(v, source)| {
            let (mut cases, phases) = by_version.remove(v).unwrap_or_default();
            cases.sort_by(|a, b| a.name.cmp(&b.name));
            // Every selected case that did not finish is named, with why: never silently absent.
            let why = match interrupted {
                Some(sig) => format!("stopped by {sig} before it finished"),
                None => "not started: --fail-fast after an earlier failure".to_string(),
            };
            let not_run: Vec<evidence::NotRunCase> = all_cases
                .iter()
                .filter(|c| c.expects_at(v) && !cases.iter().any(|e| e.name == c.name))
                .map(|c| evidence::NotRunCase { name: c.name.clone(), reason: why.clone() })
                .collect();
            // A version whose selected cases were all stopped before one finished did not
            // reach its lane: its evidence says so and carries no verdict, rather than vanish.
            let status = if cases.is_empty() && !not_run.is_empty() {
                evidence::RunStatus::NotRun { reason: format!("no case finished on model {v}: {why}") }
            } else {
                evidence::RunStatus::Ran
            };
            Evidence {
                schema_version: evidence::SCHEMA_VERSION,
                tool: ToolInfo::current(),
                run_id: evidence::run_id(Lane::Model, Some(&v.to_string()), options.shard.as_deref()),
                status,
                selected: Some(all_cases.iter().filter(|c| c.expects_at(v)).map(|c| c.name.clone()).collect()),
                not_run,
                lane: Lane::Model,
                cilium: Some(CiliumInfo { version: v.to_string(), source: source.clone() }),
                started_at: started_at.clone(),
                finished_at: evidence::now_rfc3339(),
                phases,
                environment: environment(&envoy_version, v, options.assume.get(v)),
                certificates: Vec::new(),
                cases,
                interrupted: interrupted.is_some(),
                digest: None,
            }
        })
        .collect();
    RunResult { evidence, not_run, interrupted }
}

/// What a model run records of its environment: the Envoy that served the prediction, and
/// which model of which Cilium made it (`report` checks a model run has both, and names the
/// version it claims).
/// `assumed`: the checked version whose behaviour predicted `v` (`--assume-like`), said in its
/// own key so the `model` key keeps naming the version the run is about.
pub fn environment(envoy_version: &str, v: &CiliumVersion, assumed: Option<&CiliumVersion>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("envoy".to_string(), envoy_version.to_string()),
        ("model".to_string(), format!("layout-gate {} model of Cilium {v}", env!("CARGO_PKG_VERSION"))),
    ]);
    if let Some(like) = assumed {
        env.insert("model_assumed".to_string(), checked::assumed_line(v, like));
    }
    env
}

/// The versions a run asks for, with where each came from.
pub fn resolve_versions(pins: &Pins, asked: &[String]) -> Result<Vec<(CiliumVersion, String)>, String> {
    if asked.is_empty() {
        return Ok(pins.versions().into_iter().map(|v| (v, format!("{} (every pinned version)", pins.file_label()))).collect());
    }
    asked.iter().map(|a| pins.pick(a).map(|p| (p.version.clone(), "--cilium".to_string()))).collect()
}

/// The lines a finished case prints: `ok   model 1.19.6 dns01-default`, and for a failure each
/// failed check and the error, indented.
pub fn result_lines(version: &CiliumVersion, c: &CaseEvidence) -> String {
    let mark = if c.outcome == Outcome::Pass { "ok  " } else { "FAIL" };
    let mut out = format!("{mark} model {version} {}", c.name);
    for v in c.verdicts.iter().filter(|v| !v.passed()) {
        out.push_str(&format!("\n       {}", v.line().replace('\n', "\n       ")));
    }
    if let Some(e) = &c.error {
        out.push_str(&format!("\n       error: {}", crate::term::line(e)));
    }
    out
}

/// Why `run --lane model` could not start; `cli/` says it and picks the exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No Envoy to serve the model's configuration on (the error says how to get one).
    #[error("{0}")]
    NoEnvoy(#[from] crate::envoy::BinaryError),
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// `layout-gate run --lane model`: runs `cases` on `versions`, streams one result per case and
/// version as it finishes, writes one evidence folder per version under `evidence_dir` (also
/// when interrupted: every finished case is kept), and ends with `N passed, M failed, K not
/// run`. [`RunEnd::Passed`] when everything ran and passed, `Failed` when a case failed or did
/// not run, `Broken` when evidence could not be written, `Interrupted` after a signal.
pub fn run(cases: &[Case], versions: &[(CiliumVersion, String)], options: &ModelOptions, evidence_dir: &Path) -> Result<RunEnd, RunError> {
    crate::envoy::EnvoyBinary::find()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(RunError::Runtime)?;
    let progress = Progress::from_env();
    // A case with no expectation at a version (a Cilium fixture of another release line) has
    // nothing to check there: it is left out and said so once, not counted as "not run".
    let applicable = versions.iter().map(|(v, _)| cases.iter().filter(|c| c.expects_at(v)).count()).sum::<usize>();
    progress.set_total(applicable);
    progress.line(&format!("model: {} case(s) x {} version(s) on a local Envoy, {} at a time", cases.len(), versions.len(), options.jobs));
    let left_out = cases.len() * versions.len() - applicable;
    if left_out > 0 {
        progress.note(&format!(
            "layout-gate run --lane model: {left_out} case-version pair(s) without an expectation left out (a fixture speaks only for its release line); {applicable} run"
        ));
    }
    let result = runtime.block_on(async {
        // Listening starts before the first case, so an early Ctrl-C is not lost.
        let mut signals = Signals::new();
        let stop = async move { signals.next().await };
        run_all(cases, versions, options, |v, c| progress.case_done(c.outcome == Outcome::Pass, &result_lines(v, c)), stop).await
    });
    drop(runtime);
    if let Some(sig) = result.interrupted {
        progress.note(&format!(
            "layout-gate run --lane model: {sig}: started no new case; writing the evidence of the {} that finished",
            progress.counts().done()
        ));
    }
    let mut written_all = true;
    for ev in &result.evidence {
        // Nothing selected at this version (no case speaks of it): nothing to record. A version
        // whose cases were all stopped is written, as not run.
        if ev.cases.is_empty() && ev.not_run.is_empty() {
            continue;
        }
        match evidence::write_run(evidence_dir, ev) {
            Ok(dir) => progress.result(&format!("     evidence (lane: model, a prediction): {}", dir.display())),
            Err(e) => {
                progress.note(&format!("layout-gate run --lane model: evidence NOT written: {e}"));
                written_all = false;
            }
        }
    }
    let counts = progress.finish();
    Ok(match result.interrupted {
        Some(sig) => RunEnd::Interrupted(sig),
        None if !written_all => RunEnd::Broken,
        None if counts.failed == 0 && result.not_run == 0 => RunEnd::Passed,
        None => RunEnd::Failed,
    })
}
