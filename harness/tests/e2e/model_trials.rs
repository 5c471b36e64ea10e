//! Model-lane trials: one per case and pinned Cilium version, named `model::<version>::<case>`.
//! Each runs the model's prediction on a real local Envoy, probes it, judges the case's
//! expectations for that version and writes its evidence (labelled `lane: model`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use layout_gate::case::{Case, CiliumVersion};
use layout_gate::evidence::{self, CiliumInfo, Evidence, Lane, ToolInfo};
use layout_gate::judge::Outcome;
use layout_gate::lanes::model;
use layout_gate::versions::Pins;
use libtest_mimic::{Failed, Trial};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn evidence_root() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_EVIDENCE_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/layout-gate-evidence"))
}

/// A trial that fails with `message`: setup problems must show, not hide the model trials.
fn broken(name: &str, message: String) -> Trial {
    Trial::test(name, move || Err(Failed::from(message)))
}

pub fn trials() -> Vec<Trial> {
    let pins = match Pins::load_default() {
        Ok(p) => p,
        Err(problems) => return vec![broken("model::versions", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))],
    };
    let cases = match layout_gate::case::lint(&repo().join("cases")) {
        Ok(c) => c,
        Err(problems) => return vec![broken("model::lint", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))],
    };
    let mut out = Vec::new();
    for pin in &pins.cilium {
        // A pin the model has not been checked at is answered only with --assume-like: it has
        // no trials (said once), rather than trials that pass with another version's answers.
        if !layout_gate::lanes::model::checked::is_checked(&pin.version) {
            eprintln!(
                "model::{}:: no trials: the model has not been checked at Cilium {} (lanes/model/checked.rs)",
                pin.version, pin.version
            );
            continue;
        }
        // A case with no expectation at a version (a Cilium fixture that speaks only for the
        // release line it was read at) has no trial there, rather than a trial that must fail.
        for case in cases.iter().filter(|c| c.expects_at(&pin.version)) {
            let (case, version) = (case.clone(), pin.version.clone());
            let source = format!("{} (e2e: every pinned version)", pins.file.display());
            out.push(Trial::test(format!("model::{version}::{}", case.name), move || run(&case, &version, &source).map_err(Failed::from)));
        }
    }
    out.push(Trial::test("model::a_gateway_port_served_nothing_is_held", || unserved_port_is_held().map_err(Failed::from)));
    out
}

/// On 1.19.5 nothing serves the ListenerSet's port 8080 of `two-gateways-listenerset-paths`: while
/// the model is served, that stand-in address refuses connections and no other process can bind
/// it (before, a test elsewhere on the machine could take it and answer the probe that expects
/// nothing: seen once in CI as "expected nothing, got HTTP 200").
fn unserved_port_is_held() -> Result<(), String> {
    use layout_gate::lanes::model::{input, serve, translate};
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let case = layout_gate::case::load(&repo().join("cases/two-gateways-listenerset-paths")).map_err(|p| format!("{p:?}"))?;
    let version = CiliumVersion::parse("1.19.5").map_err(|e| e.0)?;
    let certs = layout_gate::render::certs::CertSet::generate("held-port trial", &case.certificates).map_err(|e| e.to_string())?;
    let model = input::read(&case).map_err(|e| e.to_string())?;
    let predictions: Vec<(&input::GatewayInput, translate::Prediction)> =
        model.gateways.iter().map(|g| (g, translate::predict(g, &version))).collect();
    let pairs: Vec<(&input::GatewayInput, &translate::Prediction)> = predictions.iter().map(|(g, p)| (*g, p)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let served = rt.block_on(serve::serve(&case, &pairs, &certs, std::time::Duration::from_secs(20))).map_err(|e| e.to_string())?;
    let port = layout_gate::types::Port::new(8080).map_err(|e| e.to_string())?;
    let addr = *served.ports.get(&("gw".to_string(), port)).ok_or_else(|| format!("no stand-in for gw:8080 in {:?}", served.ports))?;
    if std::net::TcpListener::bind(addr).is_ok() {
        return Err(format!("{addr} (gw:8080, served nothing on 1.19.5) could be bound by another process"));
    }
    match std::net::TcpStream::connect(addr) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
        other => return Err(format!("a connection to {addr} should be refused, got {other:?}")),
    }
    drop(served);
    // Released at once; a few tries only so that another trial's socket that briefly took the
    // freed port by chance (the kernel hands freed ports out again) cannot fail this one.
    for _ in 0..20 {
        if std::net::TcpListener::bind(addr).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(format!("{addr} is still held after the model stopped"))
}

fn run(case: &Case, version: &CiliumVersion, source: &str) -> Result<(), String> {
    let timeouts = model::model_timeouts().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let started_at = evidence::now_rfc3339();
    let (ev, phases) = runtime.block_on(model::run_case(case, version, &timeouts));
    drop(runtime);
    let outcome = ev.outcome;
    let mut report: Vec<String> = ev.verdicts.iter().filter(|v| !v.passed()).map(|v| v.line()).collect();
    if let Some(e) = &ev.error {
        report.push(format!("error: {e}"));
    }
    let evidence = Evidence {
        schema_version: evidence::SCHEMA_VERSION,
        tool: ToolInfo::current(),
        run_id: format!("{}-{}", evidence::run_id(Lane::Model, Some(&version.to_string()), None), case.slug()),
        lane: Lane::Model,
        status: evidence::RunStatus::Ran,
        selected: Some(vec![case.name.clone()]),
        not_run: Vec::new(),
        interrupted: false,
        cilium: Some(CiliumInfo { version: version.to_string(), source: source.to_string() }),
        started_at,
        finished_at: evidence::now_rfc3339(),
        phases,
        environment: BTreeMap::new(),
        certificates: Vec::new(),
        cases: vec![ev],
        digest: None,
    };
    let written = evidence::write_run(&evidence_root(), &evidence).map_err(|e| e.to_string())?;
    if outcome == Outcome::Pass {
        Ok(())
    } else {
        Err(format!("model {version} {}:\n{}\nevidence: {}", case.name, report.join("\n"), written.display()))
    }
}
