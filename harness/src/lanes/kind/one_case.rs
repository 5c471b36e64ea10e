//! One case on a ready cluster: its namespace, Secrets and backends, its manifests by
//! server-side apply, the conditions it names (watched), probes to the Gateway's address, both
//! Envoy views, the judgement, diagnostics when it failed, and its namespace deleted.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use super::diagnostics::{self, Diagnostics};
use super::driver::{Driver, Gvk, ObjRef, ProbeTargets, Selection, WaitEnd, WaitSpec};
use super::envoy_view;
use super::failure::{PhaseError, PhaseLog, TeardownReport};
use super::lifecycle::pod_images;
use super::manifests::{self, SecretMaterial};
use super::names::MANAGED_BY;
use super::subjects::{GATEWAY_GROUP, Subjects};
use super::teardown::Teardown;
use super::timeouts::{KindTimeouts, human};
use super::track::record::Recorder;
use super::track::{CaseConditions, GatewayAddress, PodsReady};
use crate::case::manifests::{ROUTE_KINDS, parse_file};
use crate::case::template::Vars;
use crate::case::{Applied, Case, CiliumVersion};
use crate::evidence::recording::TrackerKind;
use crate::evidence::{CaseEvidence, Observed, Phase, Recording, rejudge};
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

/// The cluster-scoped objects a case declares (`cluster_scoped:`) and its manifests create,
/// rendered for `namespace`: each is registered for deletion before it is applied, and deleted
/// with the case (lint refuses any other cluster-scoped object).
pub fn cluster_objects(case: &Case, namespace: &str) -> Vec<ObjRef> {
    let vars = Vars { apex: case.apex.clone(), namespace: namespace.to_string(), gateway: case.gateway.clone() };
    let mut out: Vec<ObjRef> = Vec::new();
    for m in &case.manifests {
        for o in parse_file(&m.path, &m.text, &vars).unwrap_or_default() {
            if case.cluster_scoped.contains(&o.kind)
                && let Some(r) = ObjRef::of(&o.value)
                && !out.contains(&r)
            {
                out.push(r);
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
    let subjects = Subjects::of(input.case, &input.namespace);
    seen.recording.gateways = subjects.gateways.clone();
    seen.recording.listener_sets = subjects.listener_set_names();
    let result = steps(d, input, &applied, &others, &subjects, teardown, &mut log, &mut seen).await;
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
        let mut dg = diagnostics::collect_case(d, &input.namespace, &subjects.gateways, since, input.timeouts).await;
        for o in &others {
            for (file, text) in diagnostics::collect_case(d, o, &subjects.gateways, since, input.timeouts).await.files {
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
    for r in cluster_objects(input.case, &input.namespace).iter().rev() {
        teardown.finish_object(d, r, input.keep_namespace, &mut cleanup).await;
    }
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

#[allow(clippy::too_many_arguments)]
async fn steps<D: Driver>(
    d: &mut D,
    input: &CaseInput<'_>,
    applied: &Applied,
    others: &[String],
    subjects: &Subjects,
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
    // Whether the cluster serves ListenerSet, asked when the first one is applied.
    let mut listener_sets_served: Option<bool> = None;
    phase!(d, log, name, "manifests", async {
        const P: &str = "manifests";
        // Registered before the apply, like the case's own namespace: undone even if the apply
        // fails half way.
        for o in others {
            teardown.push_namespace(o);
        }
        for r in cluster_objects(case, ns) {
            teardown.push_object(r);
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
            let is_listener_set = |o: &crate::case::manifests::Object| o.kind == "ListenerSet" && o.group() == GATEWAY_GROUP;
            if let Some(first) = objects.iter().find(|o| is_listener_set(o))
                && listener_sets_served.is_none()
            {
                let gvk = Gvk::new(&first.api_version, "ListenerSet");
                let served = d.serves(&gvk).await.map_err(|e| PhaseError::step(P, e))?;
                if !served {
                    // Gateway API before 1.6 has no ListenerSet: what the cluster shows is that
                    // none exists, so none is applied, and the conditions wait says so.
                    seen.recording.listener_sets_not_served =
                        Some(format!("the API server serves no {} ListenerSet: the installed Gateway API CRDs have none", gvk.api_version));
                }
                listener_sets_served = Some(served);
            }
            if listener_sets_served == Some(false) {
                for o in objects.iter().filter(|o| is_listener_set(o)) {
                    d.note(&format!("not applied: ListenerSet {} (the cluster serves no ListenerSet)", o.name));
                }
                objects.retain(|o| !is_listener_set(o));
            }
            let values: Vec<Value> = objects.into_iter().map(|o| o.value).collect();
            d.apply(&values, Some(ns)).await.map_err(|e| PhaseError::step(P, e))?;
        }
        Ok(())
    });

    let wants_conditions = !(applied.gateway.is_empty()
        && applied.gateways.is_empty()
        && applied.listener_sets.is_empty()
        && applied.listener_set_listeners.is_empty()
        && applied.listeners.is_empty()
        && applied.routes.is_empty());
    if wants_conditions {
        phase!(d, log, name, "conditions", async {
            // Every Gateway of the case and every ListenerSet (when the cluster has the kind):
            // an expectation on any of them is observed, with observedGeneration guards alike.
            let mut watches: Vec<Selection> =
                subjects.gateways.iter().map(|g| Selection::named("gateway.networking.k8s.io/v1", "Gateway", Some(ns), g)).collect();
            if seen.recording.listener_sets_not_served.is_none() {
                watches.extend(
                    subjects.listener_sets.iter().map(|l| Selection::named(&l.api_version, "ListenerSet", Some(&l.namespace), &l.name)),
                );
            }
            for route_ns in std::iter::once(ns).chain(others.iter().map(String::as_str)) {
                watches.extend(route_kinds.iter().map(|(av, k)| Selection::all(av, k, Some(route_ns))));
            }
            let spec = WaitSpec { what: "the conditions the case names, settled".into(), wait: t.gateway_conditions, watches };
            let mut tr = CaseConditions::new(ns, &case.gateway, applied, t.conditions_settle.limit)
                .watching(others)
                .with_subjects(&subjects.gateways, &subjects.listener_set_names())
                .listener_sets_not_served(seen.recording.listener_sets_not_served.as_deref());
            let mut rec = Recorder::new(&mut tr, &spec.what, TrackerKind::Conditions);
            let end = d.wait(&spec, &mut rec).await;
            seen.recording.waits.push(rec.wait);
            let end = end.map_err(|e| PhaseError::step("conditions", e))?;
            let snap = tr.snapshot();
            seen.observed.gateway = snap.gateway;
            seen.observed.gateways = snap.gateways;
            seen.observed.listeners = snap.listeners;
            seen.observed.listener_sets = snap.listener_sets;
            seen.observed.listener_set_listeners = snap.listener_set_listeners;
            seen.observed.routes = snap.routes;
            seen.history = std::mem::take(&mut tr.history);
            if let Some(why) = &seen.recording.listener_sets_not_served {
                seen.notes.push(format!("ListenerSet not installed: {why}; the case's ListenerSets were not applied"));
            }
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

    let mut targets = ProbeTargets { primary: case.gateway.clone(), addresses: BTreeMap::new() };
    if !applied.probes.is_empty() {
        // Each probed Gateway has its own address: wait for every one of them.
        // The case's Gateways in order, then any Gateway a probe names that the manifests do
        // not define (its wait then says it was never seen).
        let mut probed: Vec<String> = Vec::new();
        let named = applied.probes.iter().map(|p| targets.gateway_of(&p.key));
        for g in subjects.gateways.iter().map(String::as_str).chain(named) {
            if applied.probes.iter().any(|p| targets.gateway_of(&p.key) == g) && !probed.iter().any(|x| x == g) {
                probed.push(g.to_string());
            }
        }
        phase!(d, log, name, "Gateway address", async {
            const P: &str = "Gateway address";
            let what = match probed.as_slice() {
                [one] => format!("Gateway {ns}/{one} has an IP address (LB IPAM + L2 announcement)"),
                all => format!(
                    "Gateways {} have IP addresses (LB IPAM + L2 announcement)",
                    all.iter().map(|g| format!("{ns}/{g}")).collect::<Vec<_>>().join(", ")
                ),
            };
            let watches = probed.iter().map(|g| Selection::named("gateway.networking.k8s.io/v1", "Gateway", Some(ns), g)).collect();
            let spec = WaitSpec { what, wait: t.gateway_address, watches };
            let mut tr = GatewayAddress::for_all(ns, &probed);
            let mut rec = Recorder::new(&mut tr, &spec.what, TrackerKind::GatewayAddress { gateways: probed.clone() });
            let end = d.wait(&spec, &mut rec).await;
            seen.recording.waits.push(rec.wait);
            let end = end.map_err(|e| PhaseError::step(P, e))?;
            if let Some(e) = PhaseError::from_wait(P, &spec.what, spec.wait, end) {
                return Err(e.with_hint("LB IPAM assigns from the pool in kind-config/lb-pool.yaml; check the pool's status and the Service cilium-gateway-<gateway> in the diagnostics"));
            }
            targets.addresses = tr.addresses();
            Ok(())
        });
        phase!(d, log, name, "probes", async {
            let backends = manifests::backend_names(&case.backends);
            seen.observed.probes = d.probe(applied, &targets, &input.certs, input.probe_timeouts, &backends).await;
            Ok(())
        });
    }

    phase!(d, log, name, "Envoy config", async {
        match envoy_view::read(d, ns, &subjects.gateways, t, &mut seen.recording).await {
            Ok(v) => {
                seen.observed.envoy_listeners = v.listeners;
                seen.observed.envoy_summary = v.summary;
                seen.raw_dump = v.raw_dump;
                seen.notes.extend(v.notes);
                Ok(())
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A dry run's input for `case` in namespace `lg-x`.
    fn dry_input<'a>(
        case: &'a Case,
        version: &'a CiliumVersion,
        timeouts: &'a KindTimeouts,
        probe_timeouts: &'a Timeouts,
    ) -> CaseInput<'a> {
        CaseInput {
            case,
            version,
            namespace: "lg-x".into(),
            run_id: "test",
            certs: SecretMaterial::DryRun,
            echo_image: "echo",
            timeouts,
            probe_timeouts,
            keep_namespace: false,
            tlsroute_version: "v1alpha2",
        }
    }

    #[tokio::test]
    async fn a_cluster_without_listenersets_gets_none_applied_nor_watched() {
        use crate::lanes::kind::dry::DryRun;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let case = crate::case::load(&root.join("harness/tests/data/kind/cases/two-gateways")).unwrap_or_else(|p| panic!("{p:#?}"));
        let (version, timeouts, probe_timeouts) = (CiliumVersion::parse("1.19.5").unwrap(), KindTimeouts::default(), Timeouts::default());
        let input = dry_input(&case, &version, &timeouts, &probe_timeouts);
        let run = |unserved: Vec<Gvk>| {
            let input = &input;
            async move {
                let mut d = DryRun { unserved, ..DryRun::default() };
                run_case(&mut d, input, &mut Teardown::default()).await;
                d.out
            }
        };
        let without = run(vec![Gvk::new("gateway.networking.k8s.io/v1", "ListenerSet")]).await;
        assert!(without.contains("# not applied: ListenerSet extra (the cluster serves no ListenerSet)"), "{without}");
        let applied_set = "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet";
        assert!(!without.contains(applied_set), "{without}");
        assert!(!without.contains("ListenerSet in lg-x where metadata.name=extra"), "{without}");
        // The routes and both Gateways are still applied and watched.
        assert!(without.contains("Gateway in lg-x where metadata.name=second"), "{without}");
        let with = run(Vec::new()).await;
        assert!(with.contains(applied_set) && with.contains("ListenerSet in lg-x where metadata.name=extra"), "{with}");
    }

    /// A cluster-scoped object the case declares is registered before it is applied and
    /// deleted with the case, before its namespace; a run stopped in between still deletes it.
    #[tokio::test]
    async fn a_declared_cluster_scoped_object_is_created_and_deleted_with_the_case() {
        use crate::lanes::kind::dry::DryRun;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let case = crate::case::load(&root.join("harness/tests/data/kind/cases/cluster-scoped")).unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(cluster_objects(&case, "lg-x"), [ObjRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", None, "lg-x-reader")]);
        let (version, timeouts, probe_timeouts) = (CiliumVersion::parse("1.19.5").unwrap(), KindTimeouts::default(), Timeouts::default());
        let input = dry_input(&case, &version, &timeouts, &probe_timeouts);
        let mut d = DryRun::default();
        let mut teardown = Teardown::default();
        let outcome = run_case(&mut d, &input, &mut teardown).await;
        let applied = d.out.find("kind: ClusterRole\nmetadata:\n  name: lg-x-reader").unwrap_or_else(|| panic!("{}", d.out));
        let deleted = d.out.find("delete ClusterRole lg-x-reader").unwrap_or_else(|| panic!("{}", d.out));
        let namespace_deleted = d.out.find("delete Namespace lg-x ").unwrap_or_else(|| panic!("{}", d.out));
        assert!(applied < deleted && deleted < namespace_deleted, "{}", d.out);
        assert!(outcome.cleanup.done.iter().any(|c| c == "ClusterRole lg-x-reader"), "{:?}", outcome.cleanup);
        assert!(teardown.pending().is_empty(), "{:?}", teardown.pending());
        // Registered before the apply: a teardown that runs first (a signal, a failed step)
        // deletes it too.
        let mut early = Teardown::default();
        early.push_object(cluster_objects(&case, "lg-x").remove(0));
        let mut d = DryRun::default();
        let report = early.run(&mut d, &timeouts).await;
        assert!(d.out.contains("delete ClusterRole lg-x-reader"), "{}", d.out);
        assert_eq!(report.done, ["ClusterRole lg-x-reader"]);
    }

    #[test]
    fn the_namespaces_a_catalogue_case_creates_are_found() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/route-without-sectionname-selector");
        let case = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(created_namespaces(&case, "lg-x"), ["lg-x-dashboard"]);
        let plain = crate::case::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/dns01-default")).expect("case");
        assert!(created_namespaces(&plain, "lg-x").is_empty());
    }
}
