//! The model lane: layout-gate's prediction of Cilium's Gateway translation, version by
//! version, rendered into a real local Envoy and probed like a cluster would be. Everything it
//! produces says `model`.
//!
//! * [`input`]: the case's manifests as typed values (unsupported kinds and fields refused);
//! * [`rules`]: each rule with its version range and source;
//! * [`status`], [`translate`]: the prediction (statuses, Envoy listeners and chains), pure;
//! * [`serve`]: backends + a real Envoy serving the prediction;
//! * [`explain`]: the prediction as a table.

pub mod explain;
pub mod hostnames;
pub mod input;
pub mod rules;
pub mod serve;
pub mod status;
pub mod translate;

#[cfg(test)]
mod rule_refs;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::case::{Case, CiliumVersion};
use crate::cli::run::RunArgs;
use crate::evidence::{self, CaseEvidence, CiliumInfo, Evidence, Lane, Observed, Phase, ToolInfo};
use crate::judge::{ListenerFact, Outcome};
use crate::observe::envoy_dump;
use crate::render::certs::CertSet;
use crate::run::{self, Timeouts};
use crate::versions::Pins;

/// The model lane's waits: a local Envoy is ready when it says so, so probes converge fast.
pub fn model_timeouts() -> Result<Timeouts, run::TimeoutsError> {
    let defaults = Timeouts {
        converge: Duration::from_secs(5),
        interval: Duration::from_millis(20),
        probe: Duration::from_secs(2),
        ..Timeouts::default()
    };
    // Explicit LAYOUT_GATE_* settings still win.
    let env = Timeouts::from_env()?;
    let base = Timeouts::default();
    Ok(Timeouts {
        probe: if env.probe != base.probe { env.probe } else { defaults.probe },
        converge: if env.converge != base.converge { env.converge } else { defaults.converge },
        interval: if env.interval != base.interval { env.interval } else { defaults.interval },
        consecutive: env.consecutive,
        envoy_ready: env.envoy_ready,
    })
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
    let started = Instant::now();
    let mut phases = Vec::new();
    let fail = |error: String, started: Instant| run::case_evidence(case, version, Observed::default(), Vec::new(), Some(error), started);

    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let certs = match CertSet::generate(&format!("model {} {version}", case.name), &case.certificates) {
        Ok(c) => c,
        Err(e) => return (fail(format!("certificates: {e}"), started), phases),
    };
    let model = match input::read(case) {
        Ok(m) => m,
        Err(e) => return (fail(e.to_string(), started), phases),
    };
    if model.gateway(&case.gateway).is_none() {
        return (fail(format!("case {}: no Gateway named {} among the manifests", case.name, case.gateway), started), phases);
    }
    let predictions: Vec<(&input::GatewayInput, translate::Prediction)> =
        model.gateways.iter().map(|g| (g, translate::predict(g, version))).collect();
    phases.push(Phase { name: format!("{}: model", case.name), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });

    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let pairs: Vec<(&input::GatewayInput, &translate::Prediction)> = predictions.iter().map(|(g, p)| (*g, p)).collect();
    // A port taken between choosing and binding it is the harness's race, not an observation:
    // try again with new ports.
    let mut attempt = 0;
    let served = loop {
        attempt += 1;
        match serve::serve(case, &pairs, &certs, timeouts.envoy_ready).await {
            Ok(s) => break s,
            Err(serve::ServeError::PortTaken(p)) if attempt < 3 => tracing::warn!("case {}: port race on {p}; retrying", case.name),
            Err(e) => return (fail(format!("case {} on model {version}: {e}", case.name), started), phases),
        }
    };
    phases.push(Phase { name: format!("{}: envoy", case.name), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });

    let at = evidence::now_rfc3339();
    let t = Instant::now();
    let applied = case.applied(version);
    let ports = served.ports.clone();
    let primary = case.gateway.clone();
    let addr_of = move |k: &crate::case::ProbeKey| ports.get(&(k.gateway.clone().unwrap_or_else(|| primary.clone()), k.port)).copied();
    let probes = run::probe_all_keyed(&applied, &addr_of, &certs, timeouts).await;
    let dump = served.envoy.admin().dynamic_listeners_dump().await;
    phases.push(Phase { name: format!("{}: probes", case.name), started_at: at, duration_ms: t.elapsed().as_millis() as u64 });
    let several = predictions.len() > 1;
    let (envoy_listeners, envoy_summary, dump_error) = match dump
        .map_err(|e| e.to_string())
        .and_then(|d| envoy_dump::summarize_bytes(&d, "model envoy /config_dump", false).map_err(|e| e.to_string()))
    {
        Ok(s) => {
            let mut facts = ListenerFact::all(&s);
            if several {
                // One Envoy carries every Gateway's listeners: name them `<gateway>/<short>`, as
                // the case's `envoy:` keys do.
                for (f, l) in facts.iter_mut().zip(s.listeners.iter()) {
                    if let Some(gw) = l.name.split('/').nth(1).and_then(|c| c.strip_prefix("cilium-gateway-")) {
                        f.name = format!("{gw}/{}", f.name);
                    }
                }
            }
            (Some(facts), serde_json::to_value(&s).ok(), None)
        }
        Err(e) => (None, None, Some(format!("config dump: {e}"))),
    };
    let mut observed = observed_of(case, &predictions);
    observed.probes = probes;
    observed.envoy_listeners = envoy_listeners;
    observed.envoy_summary = envoy_summary;
    let verdicts = run::judge_all(case, &applied, &observed, &certs, timeouts.consecutive.get() as usize);
    drop(served);
    let mut ev = run::case_evidence(case, version, observed, verdicts, dump_error, started);
    ev.certificates = certs.records();
    (ev, phases)
}

/// Runs every case on every version, `parallel` at a time; one [`Evidence`] per version.
pub async fn run_all(cases: &[Case], versions: &[(CiliumVersion, String)], timeouts: &Timeouts, parallel: usize) -> Vec<Evidence> {
    let sem = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = Vec::new();
    for (v, _) in versions {
        // A Cilium fixture speaks only for the release line it was read at: at another version it
        // has nothing to check, and is left out rather than failed (cases/README.md says where).
        for c in cases.iter().filter(|c| !c.applied(v).is_empty()) {
            let (c, v, t, sem) = (c.clone(), v.clone(), timeouts.clone(), sem.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                let (ev, phases) = run_case(&c, &v, &t).await;
                (v, ev, phases)
            }));
        }
    }
    let started_at = evidence::now_rfc3339();
    let mut by_version: BTreeMap<CiliumVersion, (Vec<CaseEvidence>, Vec<Phase>)> = BTreeMap::new();
    for t in tasks {
        match t.await {
            Ok((v, ev, phases)) => {
                let e = by_version.entry(v).or_default();
                e.0.push(ev);
                e.1.extend(phases);
            }
            Err(e) => tracing::error!("a model task failed: {e}"),
        }
    }
    let envoy_version =
        crate::envoy::EnvoyBinary::find().ok().and_then(|b| b.version().ok()).map(|v| v.raw).unwrap_or_else(|| "unknown".into());
    versions
        .iter()
        .map(|(v, source)| {
            let (mut cases, phases) = by_version.remove(v).unwrap_or_default();
            cases.sort_by(|a, b| a.name.cmp(&b.name));
            Evidence {
                schema_version: evidence::SCHEMA_VERSION,
                tool: ToolInfo::current(),
                run_id: evidence::run_id(Lane::Model, Some(&v.to_string())),
                lane: Lane::Model,
                cilium: Some(CiliumInfo { version: v.to_string(), source: source.clone() }),
                started_at: started_at.clone(),
                finished_at: evidence::now_rfc3339(),
                phases,
                environment: BTreeMap::from([
                    ("envoy".to_string(), envoy_version.clone()),
                    ("model".to_string(), format!("layout-gate {} model of Cilium {v}", env!("CARGO_PKG_VERSION"))),
                ]),
                certificates: Vec::new(),
                cases,
            }
        })
        .collect()
}

/// The versions a run asks for, with where each came from.
pub fn resolve_versions(pins: &Pins, asked: &[String]) -> Result<Vec<(CiliumVersion, String)>, String> {
    if asked.is_empty() {
        return Ok(pins.versions().into_iter().map(|v| (v, format!("{} (every pinned version)", pins.file.display()))).collect());
    }
    asked.iter().map(|a| pins.pick(a).map(|p| (p.version.clone(), "--cilium".to_string()))).collect()
}

/// `layout-gate run --lane model`.
pub fn cli_run(args: &RunArgs) -> ExitCode {
    let fail = |m: String| {
        eprintln!("layout-gate run --lane model: {m}");
        ExitCode::FAILURE
    };
    if args.kind.dry_run {
        return fail("--dry-run belongs to the kind lane; the model lane starts only local processes".into());
    }
    let pins = match Pins::load_default() {
        Ok(p) => p,
        Err(problems) => return fail(problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")),
    };
    let versions = match resolve_versions(&pins, &args.cilium) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let cases = match run::select(&args.cases, &args.case, args.shard) {
        Ok(c) if c.is_empty() => return fail("no case selected".into()),
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let timeouts = match model_timeouts() {
        Ok(t) => t,
        Err(e) => return fail(e.to_string()),
    };
    if let Err(e) = crate::envoy::EnvoyBinary::find() {
        return fail(e.to_string());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(format!("starting the async runtime: {e}")),
    };
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if interactive {
        eprintln!("model: {} case(s) x {} version(s) on a local Envoy ...", cases.len(), versions.len());
    }
    // Ctrl-C or SIGTERM ends the run; dropping the runtime drops every task, and with them every
    // Envoy process (killed and reaped) and backend.
    let outcome = runtime.block_on(async {
        let work = run_all(&cases, &versions, &timeouts, 4);
        tokio::select! {
            evs = work => Some(evs),
            _ = shutdown_signal() => None,
        }
    });
    drop(runtime);
    let Some(evidences) = outcome else {
        return fail("interrupted; every Envoy was stopped and no evidence was written".into());
    };
    let mut all_pass = true;
    for ev in &evidences {
        let version = ev.cilium.as_ref().map(|c| c.version.clone()).unwrap_or_default();
        for c in &ev.cases {
            let mark = if c.outcome == Outcome::Pass { "ok  " } else { "FAIL" };
            println!("{mark} model {version} {}", c.name);
            for v in c.verdicts.iter().filter(|v| !v.passed()) {
                println!("       {}", v.line().replace('\n', "\n       "));
            }
            if let Some(e) = &c.error {
                println!("       error: {e}");
            }
        }
        all_pass &= ev.outcome() == Outcome::Pass;
        match evidence::write_run(&args.evidence_dir, ev) {
            Ok(dir) => println!("     evidence (lane: model, a prediction): {}", dir.display()),
            Err(e) => return fail(e.to_string()),
        }
    }
    if all_pass { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
