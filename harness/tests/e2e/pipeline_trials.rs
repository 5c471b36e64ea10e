//! The whole pipeline on a real Envoy: case -> certificates -> backends -> Envoy -> probes and
//! config dump -> judge -> evidence. The Envoy config is written by hand in Cilium's shape
//! (the `fixture` lane), so these trials check the harness itself, end to end.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use layout_gate::backends::{HttpBackend, TlsBackend};
use layout_gate::case::{self, Case, CiliumVersion};
use layout_gate::envoy::{
    AdminSpec, Bootstrap, ChainAction, ChainSpec, ClusterSpec, EnvoyProcess, ListenerSpec, RouteAction, StartOptions, TlsTermination,
    VirtualHostSpec,
};
use layout_gate::evidence::{self, Evidence, Lane, Observed, Phase, ToolInfo};
use layout_gate::judge::{ListenerFact, Outcome, Verdict};
use layout_gate::observe::envoy_dump;
use layout_gate::render::certs::CertSet;
use layout_gate::run::{self, Timeouts};
use layout_gate::types::{BackendName, CertName, Port};

use crate::envoy_rig::envoy_binary;

/// Runs `body` on a two-worker runtime: backends, Envoy's upstream connections and the probes
/// all make progress at once.
fn block_on<T>(body: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("building a tokio runtime: {e}"))?
        .block_on(body)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where e2e runs leave their evidence: `LAYOUT_GATE_EVIDENCE_DIR`, else
/// `target/layout-gate-evidence` in the repository.
fn evidence_root() -> PathBuf {
    std::env::var_os("LAYOUT_GATE_EVIDENCE_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/layout-gate-evidence"))
}

/// The fixture lane pins no Cilium; expectations for `*` apply. The version recorded says so.
const FIXTURE_VERSION: &str = "0.0.0";

/// Which hand-written layout to serve.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// As Cilium 1.19.5 translates the worked example: one listener, three chains.
    AsCilium,
    /// The same without the passthrough chain: the harness must notice.
    MissingPassthrough,
}

struct Served {
    _backends: (Vec<TlsBackend>, Vec<HttpBackend>),
    envoy: EnvoyProcess,
    ports: BTreeMap<Port, SocketAddr>,
    _tmp: tempfile::TempDir,
}

fn tls(certs: &CertSet, name: &str, alpn: &[&str]) -> Result<TlsTermination, String> {
    let c = certs.get(&CertName::new(name).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    Ok(TlsTermination {
        cert_chain: c.chain_path.clone(),
        private_key: c.key_path.clone(),
        alpn: alpn.iter().map(|s| s.to_string()).collect(),
    })
}

/// Starts the case's backends and an Envoy serving `layout` on two local ports standing in
/// for the Gateway's 80 and 443, both on one listener as on Cilium 1.19.5.
async fn serve(case: &Case, certs: &CertSet, layout: Layout) -> Result<Served, String> {
    let apex = &case.apex;
    let mut tls_backends = Vec::new();
    let mut http_backends = Vec::new();
    let mut clusters = Vec::new();
    for (name, backend) in &case.backends {
        let addr = match backend {
            case::Backend::Tls { cert } => {
                let cfg = certs.server_config(cert, &[b"http/1.1"]).map_err(|e| e.to_string())?;
                let b = TlsBackend::start(name.clone(), cfg).map_err(|e| format!("backend {name}: {e}"))?;
                let a = b.addr();
                tls_backends.push(b);
                a
            }
            case::Backend::Http => {
                let b = HttpBackend::start(name.clone()).map_err(|e| format!("backend {name}: {e}"))?;
                let a = b.addr();
                http_backends.push(b);
                a
            }
        };
        clusters.push(ClusterSpec::new(cluster_of(name), vec![addr]));
    }
    // Held until this function returns, so nothing else takes them before Envoy binds them.
    let held = layout_gate::envoy::HeldAddrs::reserve([443u16, 80]).map_err(|e| e.to_string())?;
    let (p443, p80) = (held[&443], held[&80]);
    let mut listener = ListenerSpec::new("listener", p443);
    listener.additional_addresses.push(p80);
    listener = listener
        .chain(ChainSpec {
            name: None,
            server_names: vec![],
            transport_protocol: Some(layout_gate::envoy::TransportProtocol::RawBuffer),
            destination_port: None,
            action: ChainAction::Http {
                route_name: "listener-insecure".into(),
                virtual_hosts: vec![VirtualHostSpec::new("www", &[&format!("www.{apex}")], RouteAction::Cluster(cluster_of(&bn("web")?)))],
            },
            tls: None,
        })
        .chain(ChainSpec::terminate(
            &[&format!("*.{apex}")],
            tls(certs, "gateway-wildcard", &["http/1.1"])?,
            ChainAction::Http {
                route_name: "listener-secure".into(),
                virtual_hosts: vec![VirtualHostSpec::new("www", &[&format!("www.{apex}")], RouteAction::Cluster(cluster_of(&bn("web")?)))],
            },
        ));
    if layout == Layout::AsCilium {
        listener = listener.chain(ChainSpec::passthrough(&[&format!("api.{apex}")], cluster_of(&bn("api")?)));
    }
    let tmp = tempfile::Builder::new().prefix("layout-gate-pipeline-").tempdir().map_err(|e| e.to_string())?;
    let cfg = tmp.path().join("bootstrap.json");
    Bootstrap::static_listeners(AdminSpec::default(), vec![listener], clusters)
        .write(&cfg)
        .map_err(|e| format!("writing {}: {e}", cfg.display()))?;
    let envoy = EnvoyProcess::start_async(
        &cfg,
        &tmp.path().join("envoy"),
        StartOptions { binary: Some(envoy_binary()?), ..StartOptions::default() },
    )
    .await
    .map_err(|e| e.to_string())?;
    let port = |n: u64| Port::new(n).map_err(|e| e.to_string());
    let ports = BTreeMap::from([(port(443)?, p443), (port(80)?, p80)]);
    Ok(Served { _backends: (tls_backends, http_backends), envoy, ports, _tmp: tmp })
}

fn bn(s: &str) -> Result<BackendName, String> {
    BackendName::new(s).map_err(|e| e.to_string())
}

/// Cilium's cluster naming: `<namespace>:<service>:<port>`.
fn cluster_of(backend: &BackendName) -> String {
    format!("fixture:{backend}:443")
}

/// Runs the fixture case through the pipeline and returns its evidence (not yet written).
fn run_case(layout: Layout) -> Result<Evidence, String> {
    let dir = repo().join("harness/tests/data/fixture-cases/worked-example");
    let case = case::load(&dir).map_err(|p| p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
    let version = CiliumVersion::parse(FIXTURE_VERSION).map_err(|e| e.to_string())?;
    let started_at = evidence::now_rfc3339();
    let started = Instant::now();
    let mut phases = Vec::new();
    let mut phase = |name: &str, at: String, since: Instant| {
        phases.push(Phase { name: name.into(), started_at: at, duration_ms: since.elapsed().as_millis() as u64 })
    };

    let t = Instant::now();
    let at = evidence::now_rfc3339();
    let certs = CertSet::generate("fixture", &case.certificates).map_err(|e| e.to_string())?;
    phase("certificates", at, t);
    // Fast convergence: a local Envoy is ready when /ready says so.
    // The broken layout never converges; don't wait long to learn that.
    let converge = if layout == Layout::AsCilium { Duration::from_secs(10) } else { Duration::from_millis(1500) };
    let mut timeouts = Timeouts::default();
    timeouts.converge.limit = converge;
    timeouts.interval.limit = Duration::from_millis(50);
    let applied = case.applied(&version);

    let (observed, envoy_version) = block_on(async {
        let at = evidence::now_rfc3339();
        let t = Instant::now();
        let served = serve(&case, &certs, layout).await?;
        let start_phase = (at, t);
        let at = evidence::now_rfc3339();
        let t = Instant::now();
        let ports = served.ports.clone();
        let probes = run::probe_all(&applied, &move |p| ports.get(&p).copied(), &certs, &timeouts).await;
        let probe_phase = (at, t);
        let dump = served.envoy.admin().config_dump().await.map_err(|e| e.to_string())?;
        let summary = envoy_dump::summarize_bytes(&dump, "envoy /config_dump", false).map_err(|e| e.to_string())?;
        let observed = Observed {
            probes,
            envoy_listeners: Some(ListenerFact::all(&summary)),
            envoy_summary: Some(serde_json::to_value(&summary).map_err(|e| e.to_string())?),
            ..Observed::default()
        };
        Ok::<_, String>(((observed, start_phase, probe_phase), envoy_binary()?.version().map(|v| v.raw).unwrap_or_default()))
    })
    .map(|((o, s, p), v)| {
        phase("envoy start", s.0, s.1);
        phase("probes", p.0, p.1);
        (o, v)
    })?;

    let verdicts = run::judge_all(&case, &applied, &observed, &certs, timeouts.consecutive.value.get() as usize);
    let case_ev = run::case_evidence(&case, &version, observed, verdicts, None, started, timeouts.consecutive.value.get() as usize);
    Ok(Evidence {
        schema_version: evidence::SCHEMA_VERSION,
        tool: ToolInfo::current(),
        run_id: evidence::run_id(Lane::Fixture, None, None),
        lane: Lane::Fixture,
        status: evidence::RunStatus::Ran,
        selected: Some(vec![case_ev.name.clone()]),
        not_run: Vec::new(),
        interrupted: false,
        // No Cilium ran: the fixture lane judges the case's "*" expectations only.
        cilium: None,
        started_at,
        finished_at: evidence::now_rfc3339(),
        phases,
        environment: BTreeMap::from([("envoy".to_string(), envoy_version)]),
        certificates: certs.records(),
        cases: vec![case_ev],
        digest: None,
    })
}

fn failures(ev: &Evidence) -> Vec<&Verdict> {
    ev.cases.iter().flat_map(|c| c.verdicts.iter()).filter(|v| !v.passed()).collect()
}

/// The worked example served as Cilium serves it passes every expectation, and its evidence is
/// written whole.
pub fn fixture_case_passes() -> Result<(), String> {
    let ev = run_case(Layout::AsCilium)?;
    let bad = failures(&ev);
    if !bad.is_empty() || ev.outcome() != Outcome::Pass {
        let errors = ev.cases.iter().filter_map(|c| c.error.as_deref());
        return Err(bad.iter().map(|v| v.line()).chain(errors.map(str::to_string)).collect::<Vec<_>>().join("\n"));
    }
    let verdicts = &ev.cases[0].verdicts;
    // 5 probes + filter_chains + server_names: the case was really judged, not skipped.
    if verdicts.len() != 7 {
        return Err(format!("expected 7 verdicts, got {}: {verdicts:#?}", verdicts.len()));
    }
    let dir = evidence::write_run(&evidence_root(), &ev).map_err(|e| e.to_string())?;
    check_written(&dir, &ev)?;
    eprintln!("evidence: {}", dir.display());
    Ok(())
}

/// Without the passthrough chain, the harness reports the wrong certificate by name, the chain
/// count and the server_names diff; a check that cannot fail is no check.
pub fn fixture_case_missing_chain_fails() -> Result<(), String> {
    let ev = run_case(Layout::MissingPassthrough)?;
    if ev.outcome() != Outcome::Fail {
        return Err("the layout without the passthrough chain passed".into());
    }
    let lines: Vec<String> = failures(&ev).iter().map(|v| v.line()).collect();
    let text = lines.join("\n");
    let want = [
        "FAIL 443 api.example.test: expected api-backend, got gateway-wildcard (sha256 ",
        "FAIL 80 api.example.test: expected api-backend, got gateway-wildcard (sha256 ",
        "FAIL envoy listener filter_chains: expected 3 filter chains, got 2",
        "- api.example.test",
    ];
    for w in want {
        if !text.contains(w) {
            return Err(format!("missing {w:?} in the failures:\n{text}"));
        }
    }
    if lines.len() != 4 {
        return Err(format!("expected exactly 4 failures, got:\n{text}"));
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = evidence::write_run(tmp.path(), &ev).map_err(|e| e.to_string())?;
    check_written(&dir, &ev)?;
    let md = std::fs::read_to_string(dir.join("summary.md")).map_err(|e| e.to_string())?;
    if !md.contains("**FAIL**") || !md.contains("expected api-backend, got gateway-wildcard") {
        return Err(format!("summary.md does not show the failure:\n{md}"));
    }
    Ok(())
}

/// The three files exist, the JSON reads back equal, JUnit counts match, no key leaked.
fn check_written(dir: &Path, ev: &Evidence) -> Result<(), String> {
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).map_err(|e| format!("{n}: {e}"));
    let json = read("evidence.json")?;
    let mut back: Evidence = serde_json::from_str(&json).map_err(|e| format!("evidence.json does not read back: {e}"))?;
    // Sealed with its own digest, and nothing else changed.
    let doc: serde_json::Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
    if layout_gate::evidence::check_digest(&doc) != layout_gate::evidence::DigestCheck::Matches {
        return Err("evidence.json does not carry the digest of its content".into());
    }
    back.digest = None;
    if &back != ev {
        return Err("evidence.json does not read back to what was written".into());
    }
    let junit = read("junit.xml")?;
    let fails = failures(ev).len();
    if !junit.contains(&format!("failures=\"{fails}\"")) {
        return Err(format!("junit.xml does not count {fails} failures"));
    }
    let md = read("summary.md")?;
    if !md.contains("lane: fixture") {
        return Err("summary.md does not name its lane".into());
    }
    for text in [&json, &junit, &md] {
        if text.contains("PRIVATE KEY") {
            return Err("a private key reached the evidence".into());
        }
    }
    if std::fs::read_dir(dir.parent().unwrap_or(dir))
        .map_err(|e| e.to_string())?
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with('.'))
    {
        return Err("a temporary evidence folder was left behind".into());
    }
    let _ = ToolInfo::current();
    Ok(())
}
