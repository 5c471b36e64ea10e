//! One case on a ready cluster: its namespace, Secrets and backends, its manifests by
//! server-side apply, the conditions it names (watched), the Gateways' addresses, probes, both
//! Envoy views, the judgement, diagnostics when it failed, and its namespace deleted. The same
//! code for every lane that runs Cilium on an API server; what reaches the data plane is the
//! lane's [`DataPlane`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::diagnostics::{self, Diagnostics};
use super::driver::{Driver, Gvk, ObjRef, ProbeTargets, Selection, WaitEnd, WaitSpec};
use super::failure::{PhaseError, PhaseLog, TeardownReport};
use super::manifests::{self, SecretMaterial};
use super::plane::{DataPlane, PlaneCase};
use super::subjects::{GATEWAY_GROUP, Subjects};
use super::teardown::Teardown;
use super::timeouts::{ClusterTimeouts, human};
use super::track::record::Recorder;
use super::track::{CaseConditions, CecSettled, GatewayAddress};
use crate::case::manifests::{ROUTE_KINDS, parse_file};
use crate::case::template::Vars;
use crate::case::{Applied, Case, CiliumVersion};
use crate::evidence::recording::TrackerKind;
use crate::evidence::{CaseEvidence, Observed, Phase, Recording, rejudge};
use crate::run::{self, Timeouts};

/// What a case's expectations are to the run that waits on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expecting {
    /// The case's own: its conditions get until the wait's limit to reach them, and are then
    /// judged against them.
    Asserted,
    /// Another lane's prediction, only steering what is watched and probed (`check --lane
    /// operator`): the conditions wait also ends once they stopped changing for the quiet
    /// window, and what was seen is the answer. Without it, each disagreement would wait out
    /// the whole limit.
    Predicted,
}

pub struct CaseInput<'a> {
    pub case: &'a Case,
    pub version: &'a CiliumVersion,
    pub namespace: String,
    pub run_id: &'a str,
    pub certs: SecretMaterial<'a>,
    pub timeouts: &'a ClusterTimeouts,
    pub probe_timeouts: &'a Timeouts,
    pub keep_namespace: bool,
    /// The TLSRoute version the installed CRD bundle stores (versions.yaml `tlsroute`).
    pub tlsroute_version: &'a str,
    pub expecting: Expecting,
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

/// The namespaces a case lives in besides its own: every Namespace its manifests declare, and
/// every namespace of the case's family (`{namespace}-SUFFIX`) one of its objects or backends
/// lives in, declared or not (a route beside its Service in `{namespace}-default`). Each is
/// created before the case's backends, watched for routes, collected in diagnostics and deleted
/// with the case. A namespace outside the family that is not declared (the cluster's own) is
/// never created or deleted.
pub fn created_namespaces(case: &Case, namespace: &str) -> Vec<String> {
    created_namespace_objects(case, namespace).into_iter().map(|(n, _)| n).collect()
}

/// [`created_namespaces`], each with the Namespace object to apply: the manifests' own
/// declaration (its labels are what listeners select on) or, for one only implied, a
/// Namespace labelled as the run's.
fn created_namespace_objects(case: &Case, namespace: &str) -> Vec<(String, Option<Value>)> {
    let vars = Vars { apex: case.apex.clone(), namespace: namespace.to_string(), gateway: case.gateway.clone() };
    let mut out: Vec<(String, Option<Value>)> = Vec::new();
    let mut implied: Vec<String> = Vec::new();
    let family = format!("{namespace}-");
    for m in case.all_manifests() {
        for o in parse_file(&m.path, &m.text, &vars).unwrap_or_default() {
            if o.kind == "Namespace" && o.api_version == "v1" {
                if o.name != namespace && !out.iter().any(|(n, _)| *n == o.name) {
                    out.push((o.name.clone(), Some(o.value.clone())));
                }
            } else if let Some(ns) = o.namespace.as_ref().filter(|ns| ns.starts_with(&family)) {
                implied.push(ns.clone());
            }
        }
    }
    implied.extend(case.backends.keys().map(|b| case.backend_namespace(b, namespace)).filter(|ns| ns != namespace));
    implied.extend(case.certificates.iter().map(|c| case.certificate_namespace(&c.name, namespace)).filter(|ns| ns != namespace));
    for ns in implied {
        if !out.iter().any(|(n, _)| *n == ns) {
            out.push((ns, None));
        }
    }
    out
}

/// The namespaces the case's backends live in, its own first.
pub fn backend_namespaces(case: &Case, namespace: &str) -> Vec<String> {
    let mut out = vec![namespace.to_string()];
    for b in case.backends.keys() {
        let bns = case.backend_namespace(b, namespace);
        if !out.contains(&bns) {
            out.push(bns);
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
    for m in case.all_manifests() {
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

/// Gateway API versions, newest first: a kind a case writes at a version the installed bundle
/// does not serve is applied at the newest one it does (ReferenceGrant is served at v1 only from
/// Gateway API 1.5; before, at v1beta1). The fields the cases use are the same at each.
const GATEWAY_API_VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha2"];

async fn at_served_version<D: Driver>(
    d: &mut D,
    o: &mut crate::case::manifests::Object,
    asked: &mut BTreeMap<Gvk, bool>,
) -> Result<(), super::driver::StepError> {
    // ListenerSet is left to its own rule (not applied at all when not served), TLSRoute to the pins.
    if o.group() != GATEWAY_GROUP || o.kind == "ListenerSet" || o.kind == "TLSRoute" {
        return Ok(());
    }
    let gvk = Gvk::new(&o.api_version, &o.kind);
    let served = match asked.get(&gvk) {
        Some(s) => *s,
        None => {
            let s = d.serves(&gvk).await?;
            if d.dry() {
                d.note(&format!("if not: {} objects are applied at the newest of {} it serves", o.kind, GATEWAY_API_VERSIONS.join(", ")));
            }
            asked.insert(gvk, s);
            s
        }
    };
    if served {
        return Ok(());
    }
    for v in GATEWAY_API_VERSIONS {
        let api_version = format!("{GATEWAY_GROUP}/{v}");
        if api_version != o.api_version && d.serves(&Gvk::new(&api_version, &o.kind)).await? {
            d.note(&format!("{} {}: applied at {api_version} (the installed Gateway API serves no {})", o.kind, o.name, o.api_version));
            o.api_version = api_version.clone();
            o.value["apiVersion"] = Value::String(api_version);
            return Ok(());
        }
    }
    Ok(())
}

/// When a case's manifest object is applied: referents (Namespaces, ReferenceGrants, Services,
/// Secrets: whatever Cilium's operator only reads) first, then routes, then the Gateways and
/// ListenerSets they attach to, whatever order the files give.
///
/// Referents first: the answer a lane records is the one Cilium settles on, and for statuses
/// that does not depend on the order: a ReferenceGrant that arrives after its route makes Cilium
/// enqueue every Gateway again (`enqueueRequestForReferenceGrant` in
/// operator/pkg/gateway-api/gateway.go at cilium v1.19.7). But until that second reconcile the
/// route reads `ResolvedRefs False/RefNotPermitted`, and with sixteen layouts on one loaded
/// control plane it once held unchanged past the quiet window (`differential --seed 20791` at
/// 1.19.7, layout 124): the operator lane took the transient for the answer. Applied first, the
/// grant is in the operator's cache before the route is.
///
/// Gateways last: what Envoy serves does depend on the order, through Cilium's agent. The
/// operator writes a Gateway's CiliumEnvoyConfig on each reconcile; a Gateway applied before its
/// routes is often reconciled before the routes reach the operator's cache, so a generation
/// without them reaches the agent and Envoy first, and when the final one is refused the agent
/// reverts to that earlier generation (cilium@v1.19.6 `pkg/envoy/xds_server.go`
/// `UpdateEnvoyResources`; docs/operator-lane.md, "The catalogue through Cilium's agent"). With
/// the routes in the operator's cache first, its first CEC for the Gateway is the layout's whole
/// answer, and a refusal shows as what it does to a layout applied at once, every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApplyOrder {
    Referent,
    Route,
    Gateway,
}

fn apply_order(o: &crate::case::manifests::Object) -> ApplyOrder {
    if o.group() != GATEWAY_GROUP {
        return ApplyOrder::Referent;
    }
    if o.kind == "Gateway" || o.kind == "ListenerSet" {
        ApplyOrder::Gateway
    } else if ROUTE_KINDS.contains(&o.kind.as_str()) {
        ApplyOrder::Route
    } else {
        ApplyOrder::Referent
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

pub async fn run_case<D: Driver, P: DataPlane>(d: &mut D, plane: &mut P, input: &CaseInput<'_>, teardown: &mut Teardown) -> CaseOutcome {
    let started = Instant::now();
    let mut log = PhaseLog::default();
    let quiet = (input.expecting == Expecting::Predicted).then_some(input.timeouts.conditions_quiet.limit);
    let fresh = || {
        let mut seen = Seen::default();
        seen.recording.namespace = input.namespace.clone();
        seen.recording.settle_ms = input.timeouts.conditions_settle.limit.as_millis() as u64;
        seen.recording.quiet_ms = quiet.map(|q| q.as_millis() as u64);
        seen
    };
    let others = created_namespaces(input.case, &input.namespace);
    // Each step is applied after the ones before it, waited on and judged on its own (a case
    // without steps is its first alone); the first's observations are the case's own.
    let mut seen = fresh();
    let mut later: Vec<(Seen, Applied)> = Vec::new();
    let mut verdicts = Vec::new();
    let mut result = Ok(());
    for i in 0..input.case.step_count() {
        let view = input.case.at_step(i);
        let applied = view.applied(input.version);
        let subjects = Subjects::of(&view, &input.namespace);
        let mut step_seen = if i == 0 { std::mem::take(&mut seen) } else { fresh() };
        step_seen.recording.gateways = subjects.gateways.clone();
        step_seen.recording.watched = others.clone();
        step_seen.recording.listener_sets = subjects.listener_set_names();
        let at = StepAt { index: i, view: &view, applied: &applied, subjects: &subjects };
        let r = steps(d, plane, input, &at, &others, teardown, &mut log, &mut step_seen).await;
        if let SecretMaterial::Issued(certs) = &input.certs {
            let judged = run::judge_all(&view, &applied, &step_seen.observed, certs, input.probe_timeouts.consecutive.value.get() as usize);
            verdicts.extend(crate::judge::in_step(judged, i + 1, input.case.step_name(i)));
        }
        if i == 0 {
            seen = step_seen;
        } else {
            // A later step's diagnostics are the case's, in one place.
            seen.history.extend(step_seen.history.drain(..).map(|h| format!("step {}: {h}", i + 1)));
            seen.notes.extend(step_seen.notes.iter().map(|n| format!("step {} ({}): {n}", i + 1, input.case.step_name(i))));
            if let Some(raw) = step_seen.raw_dump.take() {
                seen.raw_dump = Some(raw);
            }
            seen.environment.extend(std::mem::take(&mut step_seen.environment));
            later.push((step_seen, applied));
        }
        if let Err(e) = r {
            result = Err(if i == 0 { e } else { e.in_step(i + 1, input.case.step_name(i)) });
            break;
        }
    }
    let error = result.err().map(|e| e.to_string());
    let k = input.probe_timeouts.consecutive.value.get() as usize;
    let mut evidence = run::case_evidence(input.case, input.version, std::mem::take(&mut seen.observed), verdicts, error, started, k);
    // How pod names became backend names, so a reader re-judges the raw answers the same way.
    evidence.served_by = rejudge::served_by_map(&evidence.observed.probes);
    for (i, (mut s, applied)) in later.into_iter().enumerate() {
        let step = &input.case.steps[i];
        evidence.served_by.extend(rejudge::served_by_map(&s.observed.probes));
        evidence.steps.push(crate::evidence::StepEvidence {
            name: step.name.clone(),
            applied_files: step.apply.iter().map(|m| file_name(&m.path)).collect(),
            deleted_files: step.delete.iter().map(|p| file_name(p)).collect(),
            expectations: applied,
            observed: std::mem::take(&mut s.observed),
            recording: (!d.dry()).then(|| std::mem::take(&mut s.recording)),
        });
    }
    if !d.dry() {
        evidence.recording = Some(std::mem::take(&mut seen.recording));
    }
    let failed = evidence.outcome == crate::judge::Outcome::Fail;
    // The Gateways as the last step left them, for the diagnostics.
    let subjects = Subjects::of(&input.case.at_step(input.case.steps.len()), &input.namespace);
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
    // First what the plane lets go of for the cases after this one (Cilium's agent: this case's
    // CiliumEnvoyConfigs), whether or not the namespaces' deletion is awaited.
    if !input.keep_namespace && !d.dry() {
        let pc = PlaneCase {
            case: input.case,
            namespace: &input.namespace,
            gateways: &subjects.gateways,
            certs: &input.certs,
            timeouts: input.timeouts,
            probe_timeouts: input.probe_timeouts,
        };
        let namespaces: Vec<&str> = std::iter::once(input.namespace.as_str()).chain(others.iter().map(String::as_str)).collect();
        plane.release(d, &pc, &namespaces, &mut cleanup).await;
    }
    for r in cluster_objects(input.case, &input.namespace).iter().rev() {
        teardown.finish_object(d, r, input.keep_namespace, &mut cleanup).await;
    }
    for o in others.iter().rev() {
        teardown.finish_namespace(d, o, input.keep_namespace, plane.awaits_namespace_deletion(), input.timeouts, &mut cleanup).await;
    }
    teardown
        .finish_namespace(d, &input.namespace, input.keep_namespace, plane.awaits_namespace_deletion(), input.timeouts, &mut cleanup)
        .await;
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

/// Which step [`steps`] runs: its index (0 is the case's own manifests), the case as it stands
/// after it, and what is expected then.
struct StepAt<'a> {
    index: usize,
    view: &'a Case,
    applied: &'a Applied,
    subjects: &'a Subjects,
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
}

/// One step of a case: the first creates its namespaces, Secrets and backends; each applies
/// its manifests (a later step first deletes the objects of the files it deletes), then waits
/// on and observes what the step expects.
#[allow(clippy::too_many_arguments)]
async fn steps<D: Driver, P: DataPlane>(
    d: &mut D,
    plane: &mut P,
    input: &CaseInput<'_>,
    at: &StepAt<'_>,
    others: &[String],
    teardown: &mut Teardown,
    log: &mut PhaseLog,
    seen: &mut Seen,
) -> Result<(), PhaseError> {
    let case = at.view;
    let (applied, subjects) = (at.applied, at.subjects);
    let ns = input.namespace.as_str();
    let t = input.timeouts;
    let label = if at.index == 0 { case.name.clone() } else { format!("{} step {}", case.name, at.index + 1) };
    let name = label.as_str();
    let pc = PlaneCase {
        case,
        namespace: ns,
        gateways: &subjects.gateways,
        certs: &input.certs,
        timeouts: t,
        probe_timeouts: input.probe_timeouts,
    };

    if at.index == 0 {
        phase!(d, log, name, "namespace, Secrets and backends", async {
            const P: &str = "namespace, Secrets and backends";
            // Registered first: an apply that fails after the server created it still gets undone.
            teardown.push_namespace(ns);
            d.apply(&[manifests::namespace(ns, name, input.run_id)], None).await.map_err(|e| PhaseError::step(P, e))?;
            // The case's other namespaces, before anything lives in them: as the manifests declare
            // them (the manifests phase applies the same object again, unchanged), or labelled as
            // the run's when only implied.
            let mut namespaces = Vec::new();
            for (o, declared) in created_namespace_objects(case, ns) {
                teardown.push_namespace(&o);
                namespaces.push(declared.unwrap_or_else(|| manifests::namespace(&o, name, input.run_id)));
            }
            if !namespaces.is_empty() {
                d.apply(&namespaces, None).await.map_err(|e| PhaseError::step(P, e))?;
            }
            let mut objects = Vec::new();
            for c in &case.certificates {
                let cns = case.certificate_namespace(&c.name, ns);
                objects.push(manifests::tls_secret(&cns, &c.name, &input.certs).map_err(|e| PhaseError::new(P, e.to_string()))?);
            }
            for (b, kind) in &case.backends {
                let bns = case.backend_namespace(b, ns);
                // A TLS backend's certificate Secret goes where the backend is (a pod mounts it).
                if let (true, crate::case::Backend::Tls { cert }) = (bns != ns, kind) {
                    objects.push(manifests::tls_secret(&bns, cert, &input.certs).map_err(|e| PhaseError::new(P, e.to_string()))?);
                }
            }
            objects.extend(plane.backend_objects(&pc));
            d.apply(&objects, Some(ns)).await.map_err(|e| PhaseError::step(P, e))?;
            plane.backends_ready(d, &pc, &mut seen.recording).await
        });
    }

    let vars = Vars { apex: case.apex.clone(), namespace: ns.to_string(), gateway: case.gateway.clone() };
    let mut route_kinds: Vec<(String, String)> = Vec::new();
    // Whether the cluster serves ListenerSet, asked when the first one is applied.
    let mut listener_sets_served: Option<bool> = None;
    // Which Gateway API kinds at which versions the cluster serves, asked once each.
    let mut asked: BTreeMap<Gvk, bool> = BTreeMap::new();
    let cec_selection = Selection::all("cilium.io/v2", "CiliumEnvoyConfig", Some(ns));
    // A later step: the case's CECs as they were before it, to know when the operator has
    // written what the step changes (track::CecSettled).
    let cecs_before = match at.index {
        0 => None,
        _ => Some(d.list(&cec_selection).await.map_err(|e| PhaseError::step("manifests", e))?),
    };
    phase!(d, log, name, "manifests", async {
        const P: &str = "manifests";
        // Registered before the apply, like the case's namespaces: undone even if the apply
        // fails half way.
        let files: Vec<&crate::case::ManifestFile> = match at.index.checked_sub(1) {
            None => {
                for r in cluster_objects(input.case, ns) {
                    teardown.push_object(r);
                }
                input.case.manifests.iter().collect()
            }
            Some(j) => {
                let step = &input.case.steps[j];
                // The files this step deletes: every object of theirs, in reverse order.
                for path in &step.delete {
                    let Some(m) = input.case.all_manifests().into_iter().find(|m| &m.path == path) else { continue };
                    let objects = parse_file(&m.path, &m.text, &vars).map_err(|e| {
                        PhaseError::new(P, format!("{}:{}:{}: {}: {}", m.path.display(), e.line, e.column, e.field, e.message))
                    })?;
                    for o in objects.iter().rev() {
                        let Some(mut r) = ObjRef::of(&o.value) else { continue };
                        if r.namespace.is_none() && !input.case.cluster_scoped.contains(&o.kind) {
                            r.namespace = Some(ns.to_string());
                        }
                        d.note(&format!("delete {} {} ({})", o.kind, o.name, file_name(path)));
                        d.delete(&r).await.map_err(|e| PhaseError::step(P, e))?;
                    }
                }
                step.apply.iter().collect()
            }
        };
        let (mut referents, mut routes, mut gateways): (Vec<Value>, Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new(), Vec::new());
        for m in files {
            let objects = parse_file(&m.path, &m.text, &vars)
                .map_err(|e| PhaseError::new(P, format!("{}:{}:{}: {}: {}", m.path.display(), e.line, e.column, e.field, e.message)))?;
            let mut objects = objects;
            for o in &mut objects {
                at_stored_version(o, input.tlsroute_version);
                at_served_version(d, o, &mut asked).await.map_err(|e| PhaseError::step(P, e))?;
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
                if d.dry() {
                    d.note("if not: the ListenerSets are not applied, and read as not installed");
                }
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
            for o in objects {
                match apply_order(&o) {
                    ApplyOrder::Referent => referents.push(o.value),
                    ApplyOrder::Route => routes.push(o.value),
                    ApplyOrder::Gateway => gateways.push(o.value),
                }
            }
        }
        // Every file's referents first, then its routes, then its Gateways and ListenerSets (see
        // [`apply_order`]); each in the files' order.
        for values in [referents, routes, gateways] {
            // An object the API server refuses (422: its CRD schema wants a field it lacks) is
            // what this version does with the case, not a failed run: recorded, and judged.
            for r in d.apply_admitting(&values, Some(ns)).await.map_err(|e| PhaseError::step(P, e))? {
                d.note(&format!("refused by the API server: {} {} ({} {}): {}", r.kind, r.name, r.code, r.reason, r.message));
                seen.notes.push(format!("refused by the API server: {} {}: {}", r.kind, r.name, r.message));
                seen.observed.refused.push(r);
            }
        }
        Ok(())
    });

    if let Some(before) = cecs_before {
        phase!(d, log, name, "CiliumEnvoyConfig settled", async {
            const P: &str = "CiliumEnvoyConfig settled";
            let what = "the case's CiliumEnvoyConfigs changed by the step and settled, or unchanged".to_string();
            let spec = WaitSpec { what, wait: t.gateway_conditions, watches: vec![cec_selection.clone()] };
            let mut tr = CecSettled::new(&before, t.conditions_settle.limit);
            let mut rec = Recorder::new(&mut tr, &spec.what, TrackerKind::CecSettled);
            let end = d.wait(&spec, &mut rec).await;
            seen.recording.waits.push(rec.wait);
            let end = end.map_err(|e| PhaseError::step(P, e))?;
            if let Some(e) = PhaseError::from_wait(P, &spec.what, spec.wait, end) {
                return Err(e);
            }
            if !tr.changed() {
                seen.notes.push("the step changed no CiliumEnvoyConfig within the settle window".into());
            }
            Ok(())
        });
    }

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
                .listener_sets_not_served(seen.recording.listener_sets_not_served.as_deref())
                .ending_when_quiet(seen.recording.quiet_ms.map(Duration::from_millis));
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
            for (g, why) in tr.refused() {
                seen.notes.push(format!(
                    "Gateway {ns}/{g} has no address: {why}; Cilium creates no Service for a Gateway it does not accept, so its probes find nothing listening ({})",
                    plane.unaddressed_probes()
                ));
            }
            Ok(())
        });
        if plane.has_data_path_step() {
            phase!(d, log, name, "data path", async {
                let notes = plane.data_path(d, &pc, &mut seen.recording).await?;
                seen.notes.extend(notes);
                Ok(())
            });
        }
        phase!(d, log, name, "probes", async {
            seen.observed.probes = plane.probe(d, &pc, applied, &targets).await;
            Ok(())
        });
    } else if plane.has_data_path_step() {
        phase!(d, log, name, "data path", async {
            let notes = plane.data_path(d, &pc, &mut seen.recording).await?;
            seen.notes.extend(notes);
            Ok(())
        });
    }

    phase!(d, log, name, "Envoy config", async {
        match plane.envoy_views(d, &pc, &mut seen.recording).await {
            Ok(v) => {
                seen.observed.envoy_listeners = v.listeners;
                seen.observed.envoy_summary = v.summary;
                seen.observed.envoy_clusters = v.clusters;
                seen.raw_dump = v.raw_dump;
                seen.notes.extend(v.notes);
                Ok(())
            }
            // Only an error when the case has Envoy expectations; otherwise it is a note.
            Err(e) if applied.envoy.is_empty() && applied.clusters.is_empty() => {
                seen.notes.push(e.to_string());
                Ok(())
            }
            Err(e) => Err(e),
        }
    });

    seen.environment.extend(plane.environment(d, &pc).await);
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

    #[test]
    fn referents_go_first_then_routes_then_the_gateways_they_attach_to() {
        let obj = |api: &str, kind: &str| crate::case::manifests::Object {
            file: "x.yaml".into(),
            line: 1,
            api_version: api.into(),
            kind: kind.into(),
            name: "n".into(),
            namespace: None,
            value: Value::Null,
        };
        assert_eq!(apply_order(&obj("v1", "Service")), ApplyOrder::Referent);
        assert_eq!(apply_order(&obj("gateway.networking.k8s.io/v1beta1", "ReferenceGrant")), ApplyOrder::Referent);
        assert_eq!(apply_order(&obj("gateway.networking.k8s.io/v1", "HTTPRoute")), ApplyOrder::Route);
        assert_eq!(apply_order(&obj("gateway.networking.k8s.io/v1alpha2", "TLSRoute")), ApplyOrder::Route);
        assert_eq!(apply_order(&obj("gateway.networking.k8s.io/v1", "Gateway")), ApplyOrder::Gateway);
        assert_eq!(apply_order(&obj("gateway.networking.x-k8s.io/v1alpha1", "XListenerSet")), ApplyOrder::Referent);
        // A kind named Gateway outside Gateway API's group is only read.
        assert_eq!(apply_order(&obj("example.com/v1", "Gateway")), ApplyOrder::Referent);
    }
}
