//! One case on a ready cluster: its namespace, Secrets and backends, its manifests by
//! server-side apply, the conditions it names (watched), probes to the Gateway's address, both
//! Envoy views, the judgement, diagnostics when it failed, and its namespace deleted.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

use serde_json::Value;

use super::diagnostics::{self, Diagnostics};
use super::driver::{Driver, ObjRef, Selection, WaitEnd, WaitSpec};
use super::failure::{PhaseError, PhaseLog, TeardownReport};
use super::lifecycle::pod_images;
use super::manifests::{self, SecretMaterial};
use super::names::MANAGED_BY;
use super::teardown::Teardown;
use super::timeouts::{KindTimeouts, human};
use super::track::record::Recorder;
use super::track::{CaseConditions, GatewayAddress, PodsReady};
use crate::case::manifests::{ROUTE_KINDS, parse_file};
use crate::case::template::Vars;
use crate::case::{Applied, Case, CiliumVersion};
use crate::evidence::recording::{RecordedExec, TrackerKind, recorded_object};
use crate::evidence::{CaseEvidence, Observed, Phase, Recording, rejudge};
use crate::judge::ListenerFact;
use crate::observe::envoy_dump::{self, DumpSummary};
use crate::run::{self, Timeouts};

pub struct CaseInput<'a> {
    pub case: &'a Case,
    pub version: &'a CiliumVersion,
    pub namespace: String,
    pub run_id: &'a str,
    pub certs: SecretMaterial<'a>,
    pub echo_image: &'a str,
    pub timeouts: &'a KindTimeouts,
    pub probe_timeouts: &'a Timeouts,
    pub keep_namespace: bool,
    /// The TLSRoute version the installed CRD bundle stores (versions.yaml `tlsroute`).
    pub tlsroute_version: &'a str,
}

pub struct CaseOutcome {
    pub evidence: CaseEvidence,
    /// Collected before the namespace went away, when the case failed.
    pub diagnostics: Option<Diagnostics>,
    /// Backend image digests.
    pub environment: BTreeMap<String, String>,
    pub phases: Vec<Phase>,
    pub cleanup: TeardownReport,
}

/// The Namespaces a case's manifests create besides its own (a route in `{namespace}-dashboard`):
/// each is watched for routes, collected in diagnostics and deleted with the case.
pub fn created_namespaces(case: &Case, namespace: &str) -> Vec<String> {
    let vars = Vars { apex: case.apex.clone(), namespace: namespace.to_string(), gateway: case.gateway.clone() };
    let mut out: Vec<String> = Vec::new();
    for m in &case.manifests {
        for o in parse_file(&m.path, &m.text, &vars).unwrap_or_default() {
            if o.kind == "Namespace" && o.api_version == "v1" && o.name != namespace && !out.contains(&o.name) {
                out.push(o.name);
            }
        }
    }
    out
}

/// A case may write its TLSRoutes at any version Gateway API serves (`v1alpha2`, `v1`); they
/// are applied at the one the pinned CRD bundle stores, so 1.20's bundle (TLSRoute v1) gets v1
/// and 1.19's (v1alpha2) keeps v1alpha2. The fields the cases use are the same in both.
fn at_stored_version(o: &mut crate::case::manifests::Object, stored: &str) {
    if o.kind == "TLSRoute" && o.group() == "gateway.networking.k8s.io" {
        o.api_version = format!("gateway.networking.k8s.io/{stored}");
        o.value["apiVersion"] = Value::String(o.api_version.clone());
    }
}

/// What the steps saw, kept even when a step fails.
#[derive(Default)]
struct Seen {
    observed: Observed,
    environment: BTreeMap<String, String>,
    history: Vec<String>,
    raw_dump: Option<String>,
    notes: Vec<String>,
    /// Raw, for replay: every watched object version, the CEC, the exact cilium-dbg output.
    recording: Recording,
}

pub async fn run_case<D: Driver>(d: &mut D, input: &CaseInput<'_>, teardown: &mut Teardown) -> CaseOutcome {
    let started = Instant::now();
    let mut log = PhaseLog::default();
    let mut seen = Seen::default();
    seen.recording.namespace = input.namespace.clone();
    seen.recording.settle_ms = input.timeouts.conditions_settle.limit.as_millis() as u64;
    let applied = input.case.applied(input.version);
    let others = created_namespaces(input.case, &input.namespace);
    let result = steps(d, input, &applied, &others, teardown, &mut log, &mut seen).await;
    let verdicts = match &input.certs {
        SecretMaterial::Issued(certs) => {
            run::judge_all(input.case, &applied, &seen.observed, certs, input.probe_timeouts.consecutive.get() as usize)
        }
        SecretMaterial::DryRun => Vec::new(),
    };
    let error = result.err().map(|e| e.to_string());
    let k = input.probe_timeouts.consecutive.get() as usize;
    let mut evidence = run::case_evidence(input.case, input.version, std::mem::take(&mut seen.observed), verdicts, error, started, k);
    // How pod names became backend names, so a reader re-judges the raw answers the same way.
    evidence.served_by = rejudge::served_by_map(&evidence.observed.probes);
    if !d.dry() {
        evidence.recording = Some(std::mem::take(&mut seen.recording));
    }
    let failed = evidence.outcome == crate::judge::Outcome::Fail;
    let mut diag = None;
    if d.dry() {
        d.note(&format!(
            "if the case fails: collect diagnostics of namespace {} into <evidence>/<run>/diagnostics/{}/",
            input.namespace, input.case.name
        ));
        for o in &others {
            d.note(&format!("if the case fails: collect diagnostics of namespace {o} (created by the case) too"));
        }
    } else if failed {
        d.section(&format!("case {}: diagnostics", input.case.name));
        let since = started.elapsed().as_secs() as i64 + 5;
        let mut dg = diagnostics::collect_case(d, &input.namespace, &input.case.gateway, since, input.timeouts).await;
        for o in &others {
            for (file, text) in diagnostics::collect_case(d, o, &input.case.gateway, since, input.timeouts).await.files {
                dg.add(&format!("namespace-{o}-{file}"), text);
            }
        }
        dg.add("conditions-history.txt", seen.history.join("\n\n"));
        if let Some(raw) = seen.raw_dump.take() {
            dg.add("envoy-listeners.json", raw);
        }
        if !seen.notes.is_empty() {
            dg.add("notes.txt", seen.notes.join("\n"));
        }
        if let Some(e) = &mut evidence.error {
            e.push_str(&format!("\ndiagnostics: diagnostics/{}/", input.case.name));
        }
        diag = Some(dg);
    }
    let mut cleanup = TeardownReport::default();
    for o in others.iter().rev() {
        teardown.finish_namespace(d, o, input.keep_namespace, input.timeouts, &mut cleanup).await;
    }
    teardown.finish_namespace(d, &input.namespace, input.keep_namespace, input.timeouts, &mut cleanup).await;
    CaseOutcome { evidence, diagnostics: diag, environment: seen.environment, phases: log.phases, cleanup }
}

macro_rules! phase {
    ($d:expr, $log:expr, $case:expr, $name:expr, $body:expr) => {{
        $d.section(&format!("case {}: {}", $case, $name));
        $log.begin(&format!("{}: {}", $case, $name));
        let r: Result<_, PhaseError> = $body.await;
        $log.end();
        r?
    }};
}

async fn steps<D: Driver>(
    d: &mut D,
    input: &CaseInput<'_>,
    applied: &Applied,
    others: &[String],
    teardown: &mut Teardown,
    log: &mut PhaseLog,
    seen: &mut Seen,
) -> Result<(), PhaseError> {
    let case = input.case;
    let ns = input.namespace.as_str();
    let t = input.timeouts;
    let name = case.name.as_str();

    phase!(d, log, name, "namespace, Secrets and backends", async {
        const P: &str = "namespace, Secrets and backends";
        // Registered first: an apply that fails after the server created it still gets undone.
        teardown.push_namespace(ns);
        d.apply(&[manifests::namespace(ns, name, input.run_id)], None).await.map_err(|e| PhaseError::step(P, e))?;
        let mut objects = Vec::new();
        for c in &case.certificates {
            objects.push(manifests::tls_secret(ns, &c.name, &input.certs).map_err(|e| PhaseError::new(P, e))?);
        }
        for (b, kind) in &case.backends {
            objects.extend(manifests::backend(ns, b, kind, input.echo_image));
        }
        d.apply(&objects, Some(ns)).await.map_err(|e| PhaseError::step(P, e))?;
        if case.backends.is_empty() {
            return Ok(());
        }
        let spec = WaitSpec {
            what: format!("backend pods ready ({})", case.backends.keys().map(|b| b.as_str()).collect::<Vec<_>>().join(", ")),
            wait: t.backends_ready,
            watches: vec![Selection::labelled("v1", "Pod", Some(ns), &format!("{}={}", MANAGED_BY.0, MANAGED_BY.1))],
        };
        let names = manifests::backend_names(&case.backends);
        let mut tr = PodsReady::new(names.clone());
        let kind = TrackerKind::BackendPods { backends: names.iter().map(|b| b.to_string()).collect() };
        let mut rec = Recorder::new(&mut tr, &spec.what, kind);
        let end = d.wait(&spec, &mut rec).await;
        seen.recording.waits.push(rec.wait);
        let end = end.map_err(|e| PhaseError::step(P, e))?;
        match PhaseError::from_wait(P, &spec.what, spec.wait, end) {
            None => Ok(()),
            Some(e) => Err(
                e.with_hint(format!("the echo image is {}; a pull failure shows above as ErrImagePull/ImagePullBackOff", input.echo_image))
            ),
        }
    });

    let vars = Vars { apex: case.apex.clone(), namespace: ns.to_string(), gateway: case.gateway.clone() };
    let mut route_kinds: Vec<(String, String)> = Vec::new();
    phase!(d, log, name, "manifests", async {
        const P: &str = "manifests";
        // Registered before the apply, like the case's own namespace: undone even if the apply
        // fails half way.
        for o in others {
            teardown.push_namespace(o);
        }
        for m in &case.manifests {
            let objects = parse_file(&m.path, &m.text, &vars)
                .map_err(|e| PhaseError::new(P, format!("{}:{}:{}: {}: {}", m.path.display(), e.line, e.column, e.field, e.message)))?;
            let mut objects = objects;
            for o in &mut objects {
                at_stored_version(o, input.tlsroute_version);
            }
            for o in &objects {
                if ROUTE_KINDS.contains(&o.kind.as_str()) && !route_kinds.iter().any(|(_, k)| k == &o.kind) {
                    route_kinds.push((o.api_version.clone(), o.kind.clone()));
                }
            }
            let file = m.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            d.note(&format!("{name}/{file}"));
            let values: Vec<Value> = objects.into_iter().map(|o| o.value).collect();
            d.apply(&values, Some(ns)).await.map_err(|e| PhaseError::step(P, e))?;
        }
        Ok(())
    });

    let wants_conditions = !(applied.gateway.is_empty() && applied.listeners.is_empty() && applied.routes.is_empty());
    if wants_conditions {
        phase!(d, log, name, "conditions", async {
            let mut watches = vec![Selection::named("gateway.networking.k8s.io/v1", "Gateway", Some(ns), &case.gateway)];
            for route_ns in std::iter::once(ns).chain(others.iter().map(String::as_str)) {
                watches.extend(route_kinds.iter().map(|(av, k)| Selection::all(av, k, Some(route_ns))));
            }
            let spec = WaitSpec { what: "the conditions the case names, settled".into(), wait: t.gateway_conditions, watches };
            let mut tr = CaseConditions::new(ns, &case.gateway, applied, t.conditions_settle.limit).watching(others);
            let mut rec = Recorder::new(&mut tr, &spec.what, TrackerKind::Conditions);
            let end = d.wait(&spec, &mut rec).await;
            seen.recording.waits.push(rec.wait);
            let end = end.map_err(|e| PhaseError::step("conditions", e))?;
            let snap = tr.snapshot();
            seen.observed.gateway = snap.gateway;
            seen.observed.listeners = snap.listeners;
            seen.observed.routes = snap.routes;
            seen.history = std::mem::take(&mut tr.history);
            if let WaitEnd::TimedOut { last } = end {
                // Not an error: the judge fails each expectation against what was last seen.
                seen.notes.push(format!(
                    "conditions did not all reach the expected values within {} ({}); judged as last seen:\n{last}",
                    human(t.gateway_conditions.limit),
                    t.gateway_conditions.var
                ));
            }
            Ok(())
        });
    }

    let mut address: Option<IpAddr> = None;
    if !applied.probes.is_empty() {
        phase!(d, log, name, "Gateway address", async {
            const P: &str = "Gateway address";
            let spec = WaitSpec {
                what: format!("Gateway {ns}/{} has an IP address (LB IPAM + L2 announcement)", case.gateway),
                wait: t.gateway_address,
                watches: vec![Selection::named("gateway.networking.k8s.io/v1", "Gateway", Some(ns), &case.gateway)],
            };
            let mut tr = GatewayAddress::new(ns, &case.gateway);
            let mut rec = Recorder::new(&mut tr, &spec.what, TrackerKind::GatewayAddress);
            let end = d.wait(&spec, &mut rec).await;
            seen.recording.waits.push(rec.wait);
            let end = end.map_err(|e| PhaseError::step(P, e))?;
            if let Some(e) = PhaseError::from_wait(P, &spec.what, spec.wait, end) {
                return Err(e.with_hint("LB IPAM assigns from the pool in kind-config/lb-pool.yaml; check the pool's status and the Service cilium-gateway-<gateway> in the diagnostics"));
            }
            address = tr.address();
            Ok(())
        });
        phase!(d, log, name, "probes", async {
            let backends = manifests::backend_names(&case.backends);
            seen.observed.probes = d.probe(applied, address, &input.certs, input.probe_timeouts, &backends).await;
            Ok(())
        });
    }

    phase!(d, log, name, "Envoy config", async {
        match envoy_views(d, input, seen).await {
            Ok(()) => Ok(()),
            // Only an error when the case has Envoy expectations; otherwise it is a note.
            Err(e) if applied.envoy.is_empty() => {
                seen.notes.push(e.to_string());
                Ok(())
            }
            Err(e) => Err(e),
        }
    });

    if let Ok(pods) = d.list(&Selection::labelled("v1", "Pod", Some(ns), &format!("{}={}", MANAGED_BY.0, MANAGED_BY.1))).await {
        let images = pod_images(&pods);
        if !images.is_empty() {
            seen.environment.insert("image.backends".into(), images.join(", "));
        }
    }
    Ok(())
}

/// The listeners of a live dump that belong to the case's Gateway (`<ns>/<cec>/` prefix).
pub fn ours_only(summary: DumpSummary, prefix: &str) -> DumpSummary {
    DumpSummary { listeners: summary.listeners.into_iter().filter(|l| l.name.starts_with(prefix)).collect() }
}

/// The live summary as evidence keeps it: what is judged, with Cilium's intent (the CEC
/// summarized) riding along under `intended`.
pub fn summary_value(live: &DumpSummary, intended: Option<&DumpSummary>) -> Value {
    let mut v = serde_json::to_value(live).unwrap_or(Value::Null);
    if let (Some(obj), Some(i)) = (v.as_object_mut(), intended) {
        obj.insert("intended".into(), serde_json::to_value(i).unwrap_or(Value::Null));
    }
    v
}

/// The CiliumEnvoyConfig Cilium generated for the Gateway (what it intends), and the listeners
/// Envoy really holds, read in the Cilium agent on the node that announces the Gateway.
async fn envoy_views<D: Driver>(d: &mut D, input: &CaseInput<'_>, seen: &mut Seen) -> Result<(), PhaseError> {
    const P: &str = "Envoy config";
    let ns = input.namespace.as_str();
    let gw = input.case.gateway.as_str();
    let t = input.timeouts;
    let cec_name = format!("cilium-gateway-{gw}");

    // Intended: the CEC (named cilium-gateway-<gw>, or found by its Gateway owner when Cilium
    // shortened a long name).
    let mut cec =
        d.get(&ObjRef::new("cilium.io/v2", "CiliumEnvoyConfig", Some(ns), &cec_name)).await.map_err(|e| PhaseError::step(P, e))?;
    if cec.is_none() && !d.dry() {
        let all = d.list(&Selection::all("cilium.io/v2", "CiliumEnvoyConfig", Some(ns))).await.map_err(|e| PhaseError::step(P, e))?;
        cec = all.into_iter().find(|c| {
            c.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|o| o.get("kind").and_then(Value::as_str) == Some("Gateway") && o.get("name").and_then(Value::as_str) == Some(gw))
        });
    }
    seen.recording.cec = cec.as_ref().map(recorded_object);
    let intended = match &cec {
        Some(c) => Some(
            envoy_dump::summarize_bytes(c.to_string().as_bytes(), &format!("CiliumEnvoyConfig {ns}/{cec_name}"), false)
                .map_err(|e| PhaseError::new(P, format!("summarizing the CiliumEnvoyConfig: {e}")))?,
        ),
        None if d.dry() => None,
        None => {
            seen.notes.push(format!("no CiliumEnvoyConfig for Gateway {ns}/{gw}"));
            None
        }
    };

    // Live: the agent on the node holding the Gateway Service's L2 announcement lease; any
    // agent otherwise (every node's Envoy receives the same listeners).
    let lease = d
        .get(&ObjRef::new("coordination.k8s.io/v1", "Lease", Some("kube-system"), &format!("cilium-l2announce-{ns}-{cec_name}")))
        .await
        .map_err(|e| PhaseError::step(P, e))?;
    let node = lease.as_ref().and_then(|l| l.pointer("/spec/holderIdentity")).and_then(Value::as_str).map(str::to_string);
    let agents =
        d.list(&Selection::labelled("v1", "Pod", Some("kube-system"), "k8s-app=cilium")).await.map_err(|e| PhaseError::step(P, e))?;
    let on_node = |p: &&Value| node.as_deref().is_none_or(|n| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(n));
    let agent = agents
        .iter()
        .find(on_node)
        .or(agents.first())
        .and_then(|p| p.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let agent = match (agent, d.dry()) {
        (Some(a), _) => a,
        (None, true) => "<cilium agent pod on the Gateway's node>".to_string(),
        (None, false) => return Err(PhaseError::new(P, "no Cilium agent pod (k8s-app=cilium) in kube-system")),
    };
    if node.is_none() && !d.dry() {
        seen.notes.push(format!("no L2 announcement lease for {ns}/{cec_name}; read Envoy's listeners in agent {agent}"));
    }
    let prefix = format!("{ns}/{cec_name}/");
    let command: Vec<String> =
        ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", &format!("{prefix}.*")].iter().map(|s| s.to_string()).collect();
    let pod = ObjRef::new("v1", "Pod", Some("kube-system"), &agent);
    // The agent may still be pushing the CEC to Envoy: read until our listeners show, within
    // the named wait.
    let started = Instant::now();
    let live = loop {
        let at = crate::evidence::now_rfc3339();
        let out = d.exec(&pod, "cilium-agent", &command, t.envoy_config).await.map_err(|e| PhaseError::step(P, e))?;
        if d.dry() {
            break None;
        }
        let summary = envoy_dump::summarize_bytes(out.as_bytes(), &format!("cilium-dbg envoy admin config listeners ({agent})"), false)
            .map_err(|e| {
                PhaseError::new(P, format!("summarizing the live listeners: {e}")).with_state(out.chars().take(2000).collect::<String>())
            })?;
        let ours = ours_only(summary, &prefix);
        seen.recording.cilium_dbg = Some(RecordedExec {
            pod: agent.clone(),
            container: "cilium-agent".into(),
            command: command.clone(),
            at,
            output: out.clone(),
            listener_prefix: prefix.clone(),
        });
        seen.raw_dump = Some(out);
        if !ours.listeners.is_empty() || started.elapsed() >= t.envoy_config.limit {
            break Some(ours);
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    };
    if let Some(live) = live {
        seen.observed.envoy_listeners = Some(ListenerFact::all(&live));
        seen.observed.envoy_summary = Some(summary_value(&live, intended.as_ref()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespaces_a_catalogue_case_creates_are_found() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/route-without-sectionname-selector");
        let case = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(created_namespaces(&case, "lg-x"), ["lg-x-dashboard"]);
        let plain = crate::case::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/dns01-default")).expect("case");
        assert!(created_namespaces(&plain, "lg-x").is_empty());
    }
}
