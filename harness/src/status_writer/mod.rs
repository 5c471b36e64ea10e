//! `layout-gate status-writer --cilium V`: does Cilium's route-status merge fight another
//! controller's entry on the same route and parentRef (cozystack#4199, second question)?
//!
//! On the operator lane's control plane (a warm `operator up` plane that matches, else one of
//! its own: [`crate::lanes::operator::up::attach_or_start`], one seam with `run`, `check` and
//! `conformance`), an HTTPRoute and a TLSRoute are attached to a Gateway Cilium accepts, twice:
//! once with Cilium's entry written first, once with a second writer's entry written first
//! ([`route::Order`]). The second writer is layout-gate's stand-in for cozystack's TenantGateway
//! controller ([`writer`]): its own controllerName, its own entry for the parentRef the route
//! names, written through the status subresource with resourceVersion-checked updates, and
//! written again whenever it is missing or changed. Every version of each route over a bounded
//! window is recorded ([`route`]) and judged ([`judge`], pure): how often the resourceVersion
//! moved and who moved it, whether either entry was overwritten or removed by the other, and
//! whether the route settled.
//!
//! What Cilium does, read at every pinned tag (v1.19.5 to v1.20.2, the same code):
//! `operator/pkg/gateway-api/routechecks/httproute.go` and `tlsroute.go`,
//! `mergeStatusConditions`, finds the route's entry by parentRef alone (the first entry whose
//! parentRef is deeply equal, whatever its controllerName) and merges Cilium's conditions into
//! it, appending an entry of its own only when none matched; `status_route.go:
//! pruneRouteParentStatuses` drops only Cilium's own entries whose parentRef left the spec; the
//! update (`updateHTTPRouteStatus`, `updateTLSRouteStatus`) is skipped when nothing but a
//! transition time changed; and the Gateway reconciler watches HTTPRoutes and TLSRoutes with no
//! predicate (`gateway.go`), so every status write to a route, another controller's too, makes
//! Cilium reconcile its Gateway again.

pub mod judge;
pub mod route;
pub mod writer;

use std::path::PathBuf;
use std::time::Duration;

use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use crate::case::CiliumVersion;
use crate::evidence::Lane;
use crate::lanes::cluster::driver::{Driver, ObjRef};
use crate::lanes::cluster::failure::PhaseLog;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::operator::{session, up};
use crate::versions::Pins;
use judge::{Record, Verdict};
use route::{Order, Plan};

/// What is said as the command using a warm plane.
pub const WHO: &str = "status-writer";

/// Cilium's controllerName at every pinned tag (`operator/pkg/gateway-api/controller.go` at
/// v1.19.x, the default `defaultControllerName` of `cell.go` at v1.20.x).
pub const CILIUM_CONTROLLER: &str = "io.cilium/gateway-controller";

/// The window each route is watched for after the stand-in begins, unless `--window` says.
pub const WINDOW: Duration = Duration::from_secs(30);

/// How long Cilium may take to write its first entry on a route (cilium-first), and the
/// stand-in its first (stand-in-first), before the route is said unmeasured.
pub const ENTRY_WAIT: Duration = Duration::from_secs(60);

/// What the evidence says is real and emulated.
pub const REAL: &str = "Cilium's operator built from the tag, its Gateway reconciler and every route status it writes; kube-apiserver and etcd (resourceVersions, managedFields, the status subresource's conflict checks)";
pub const EMULATED: &str = "the second status writer: layout-gate's stand-in for cozystack's TenantGateway controller (its own controllerName, one Accepted condition in its own entry for the route's parentRef, re-written whenever missing or changed), not cozystack's code";

/// How a run goes (the CLI maps its flags onto it).
#[derive(Debug, Clone)]
pub struct Options {
    pub pins: Pins,
    pub version: CiliumVersion,
    /// Where `status-writer.json` goes.
    pub out: PathBuf,
    pub window: Duration,
    pub settings: crate::run::Settings,
}

/// Why a run did not happen.
#[derive(Debug, thiserror::Error)]
pub enum StatusWriterError {
    /// Bad input, or the control plane not built for the pin (exit 2): the message says what and
    /// how to build it.
    #[error("{0}")]
    Input(String),
    /// The control plane did not come up, or a route could not be created or watched (exit 1).
    #[error("{0}")]
    Run(String),
}

/// One route's record and verdict.
#[derive(Debug)]
pub struct Measured {
    pub record: Record,
    pub verdict: Verdict,
}

/// A finished run.
#[derive(Debug)]
pub struct Finished {
    pub routes: Vec<Measured>,
    pub text: String,
    pub file: PathBuf,
}

const GROUP: &str = "gateway.networking.k8s.io";

fn resource(kind: &str, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, kind), &format!("{}s", kind.to_ascii_lowercase()))
}

/// A Gateway Cilium accepts: plain HTTP on 80 and TLS passthrough on 443.
fn gateway(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"gatewayClassName": "cilium", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80},
            {"name": "tls", "protocol": "TLS", "port": 443, "hostname": "tls.example.test", "tls": {"mode": "Passthrough"}},
        ]},
    })
}

fn route(kind: &str, version: &str, ns: &str, name: &str, gw: &str) -> Value {
    let (section, host, port) = if kind == "HTTPRoute" { ("http", "www.example.test", 8080) } else { ("tls", "tls.example.test", 8443) };
    json!({
        "apiVersion": format!("{GROUP}/{version}"), "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "parentRefs": [{"name": gw, "sectionName": section}],
            "hostnames": [host],
            "rules": [{"backendRefs": [{"name": "backend", "port": port}]}],
        },
    })
}

fn gateway_name(order: Order) -> String {
    format!("gw-{}", order.as_str())
}

fn namespace_name() -> String {
    let ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    format!("status-writer-{:x}", (ms as u64) & 0xff_ffff)
}

/// One whole run: the plane up, the Gateways and routes applied, each route watched over the
/// window while the stand-in writes, the namespace removed, the verdicts and the file written.
pub fn run(opts: &Options) -> Result<Finished, StatusWriterError> {
    let v = &opts.version;
    let setup = session::setup(&opts.pins, v.clone(), "--cilium flag".into(), &[], &opts.settings)
        .map_err(|e| StatusWriterError::Input(e.to_string()))?;
    // Not built is a missing tool (exit 2, with the command that builds it), not a failed run.
    crate::lanes::operator::binaries::find(&opts.pins, v).map_err(|e| StatusWriterError::Input(e.to_string()))?;
    crate::output::dest::ensure_dir(&opts.out).map_err(|e| StatusWriterError::Input(e.to_string()))?;
    let tls_version = setup.tlsroute_version().to_string();
    let request = setup.timeouts.api_request.limit;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| StatusWriterError::Run(format!("starting the async runtime: {e}")))?;
    let run_id = crate::evidence::run_id(Lane::Operator, Some(&v.to_string()), Some(WHO));
    let mut log = PhaseLog::default();
    let mut d = LiveDriver::new(Progress::from_env(), setup.timeouts);
    let started = std::time::Instant::now();
    let plane = runtime
        .block_on(up::attach_or_start(&mut d, &setup, &run_id, &mut log, Some(WHO)))
        .map_err(|e| StatusWriterError::Run(format!("Cilium {v}'s control plane did not come up: {}: {}", e.phase, e.problem)))?;
    let client = d.client().ok_or_else(|| StatusWriterError::Run("the control plane came up but the driver is not connected".into()))?;
    let ns = namespace_name();
    eprintln!(
        "layout-gate {WHO}: Cilium {v}: control plane ready after {:.1}s; namespace {ns}: an HTTPRoute and a TLSRoute, Cilium's entry first and the stand-in's first, {}s each",
        started.elapsed().as_secs_f64(),
        opts.window.as_secs()
    );
    let plans: Vec<Plan> = [Order::CiliumFirst, Order::StandInFirst]
        .into_iter()
        .flat_map(|order| {
            [("HTTPRoute", "v1", "http"), ("TLSRoute", tls_version.as_str(), "tls")].map(|(kind, version, prefix)| Plan {
                resource: resource(kind, version),
                namespace: ns.clone(),
                object: route(kind, version, &ns, &format!("{prefix}-{}", order.as_str()), &gateway_name(order)),
                order,
                cilium_controller: CILIUM_CONTROLLER.into(),
                window: opts.window,
                quiet: opts.window / 3,
                entry_wait: ENTRY_WAIT,
                request,
            })
        })
        .collect();
    let measured = runtime.block_on(measure(&mut d, client, &ns, &plans));
    let removed = runtime.block_on(d.delete(&ObjRef::new("v1", "Namespace", None, &ns)));
    let environment = plane.environment().clone();
    let stopped = plane.shut_down();
    drop(runtime);
    eprintln!("layout-gate {WHO}: Cilium {v}: {stopped}");
    if let Err(e) = removed {
        eprintln!("layout-gate {WHO}: Cilium {v}: removing namespace {ns}: {e}");
    }
    let records = measured.map_err(StatusWriterError::Run)?;
    let routes: Vec<Measured> = records.into_iter().map(|record| Measured { verdict: judge::judge(&record), record }).collect();
    let text = text(v, opts.window, &routes);
    let evidence = json!({
        "schema": "layout-gate-status-writer",
        "cilium": v.to_string(),
        "lane": "operator",
        "real": REAL,
        "emulated": EMULATED,
        "question": "cozystack#4199, second question: does Cilium's route-status merge fight another controller's entry on the same route and parentRef?",
        "stand_in": {
            "controller_name": writer::CONTROLLER,
            "field_manager": writer::MANAGER,
            "entry_key": "controllerName and parentRef",
            "writes": "one Accepted=True condition in its own entry, through the status subresource with the resourceVersion of the version it read, whenever its entry is missing or differs (transition time aside)",
        },
        "cilium_controller": CILIUM_CONTROLLER,
        "window_seconds": opts.window.as_secs(),
        "entry_wait_seconds": ENTRY_WAIT.as_secs(),
        "namespace": ns,
        "control_plane": environment,
        "phases": log.phases.iter().map(|p| (p.name.clone(), p.duration_ms)).collect::<Vec<_>>(),
        "routes": routes.iter().map(|m| json!({"record": m.record, "verdict": m.verdict, "summary": judge::summary(&m.record, &m.verdict)})).collect::<Vec<_>>(),
    });
    let file = opts.out.join("status-writer.json");
    crate::case::edit::write_atomically(&file, &format!("{evidence:#}\n"))
        .map_err(|e| StatusWriterError::Run(format!("{}: {e}", file.display())))?;
    Ok(Finished { routes, text, file })
}

/// The four routes measured side by side; the stand-in-first Gateway is created once the
/// stand-in's entries are on its routes (or its wait ran out, said).
async fn measure(d: &mut LiveDriver, client: kube::Client, ns: &str, plans: &[Plan]) -> Result<Vec<Record>, String> {
    let base = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "backend", "namespace": ns},
               "spec": {"ports": [{"name": "http", "port": 8080}, {"name": "tls", "port": 8443}]}}),
        gateway(ns, &gateway_name(Order::CiliumFirst)),
    ];
    d.apply(&base, Some(ns)).await.map_err(|e| e.to_string())?;
    let mut signals = Vec::new();
    let runs = plans.iter().map(|p| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let tx = (p.order == Order::StandInFirst).then(|| {
            signals.push(rx);
            tx
        });
        route::run(client.clone(), p, tx)
    });
    let runs: Vec<_> = runs.collect();
    let late = async {
        let all = futures::future::join_all(signals);
        let said = match tokio::time::timeout(ENTRY_WAIT, all).await {
            Ok(r) if r.iter().all(Result::is_ok) => "after the stand-in's entries".to_string(),
            Ok(_) => "although a stand-in write never stored (see the record's writes)".to_string(),
            Err(_) => format!("after waiting {}s for the stand-in's entries", ENTRY_WAIT.as_secs()),
        };
        eprintln!("layout-gate {WHO}: creating Gateway {ns}/{} {said}", gateway_name(Order::StandInFirst));
        d.apply(&[gateway(ns, &gateway_name(Order::StandInFirst))], Some(ns)).await.map_err(|e| e.to_string())
    };
    let (records, late) = tokio::join!(futures::future::join_all(runs), late);
    late?;
    records.into_iter().collect()
}

/// The verdicts as plain text: one line per route, what is real and what is emulated.
pub fn text(v: &CiliumVersion, window: Duration, routes: &[Measured]) -> String {
    let mut s = format!(
        "Cilium {v}'s operator (operator lane) beside a second route-status writer, {}s per route\nreal: {REAL}\nemulated: {EMULATED}\n",
        window.as_secs()
    );
    for m in routes {
        let who = if m.record.order == Order::CiliumFirst.as_str() { "Cilium's entry first" } else { "the stand-in's entry first" };
        s.push_str(&format!("{} ({who}): {}\n", m.record.kind, judge::summary(&m.record, &m.verdict)));
    }
    s
}
