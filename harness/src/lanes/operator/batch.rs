//! Many cases on one control plane at once: up to [`Batch`] cases in flight, each with its own
//! namespaces, Gateways, in-process backends and local Envoy, each read (statuses, then its
//! CiliumEnvoyConfig through the agent step) as the operator settles it. The per-case code is
//! the shared one ([`crate::lanes::cluster::one_case`]); only the scheduling differs from
//! [`crate::lanes::cluster::session::run_cases`], which runs one case after another.
//!
//! # Why a case's answer does not depend on the cases beside it
//!
//! What Cilium's operator computes for a Gateway, at `cilium@v1.19.6`:
//!
//! * `operator/pkg/gateway-api/gateway_reconcile.go: Reconcile` is called per Gateway
//!   (namespace/name). It lists the routes through field indexes keyed by that Gateway's own
//!   namespace/name (`gatewayHTTPRouteIndex`, `gatewayTLSRouteIndex`, `gatewayGRPCRouteIndex`),
//!   so only routes whose parentRefs name it; a case's routes name only its own Gateways (a
//!   parentRef's namespace defaults to the route's, and a case's namespaces are its own family
//!   `lg-<case>-<run>[-<suffix>]`). It also lists every Service, ReferenceGrant and (with a
//!   namespace selector) Namespace of the cluster, but the ingestion
//!   (`operator/pkg/model/ingestion/gateway.go`: `getServiceSpec`, `getBackendServiceName`) looks
//!   a Service up by the route's backendRef namespace and name, and a grant is matched on the
//!   from/to namespaces (`operator/pkg/gateway-api/helpers/referencegrants.go:
//!   IsBackendReferenceAllowed`); a listener's namespace selector widens which namespaces may
//!   attach, but a route of another case never names this Gateway. So the ingestion model, the
//!   listener and route statuses (`setListenerStatus`, `setHTTPRouteStatuses`,
//!   `setTLSRouteStatuses`) and the translation are functions of the case's own objects.
//! * What it writes is named per Gateway, in the Gateway's namespace: the CiliumEnvoyConfig, the
//!   Service and the EndpointSlice are `cilium-gateway-<gateway>`
//!   (`operator/pkg/model/translation/gateway-api/translator.go: Translate, desiredService`).
//! * The Secrets it syncs for TLS listeners are copies in one shared namespace
//!   (`cilium-secrets`): named from a hash of the source namespace and name at 1.19.6
//!   (`pkg/secretsync/names/names.go: SyncedSecretName`), `<namespace>-<name>` at 1.19.5
//!   (`operator/pkg/secretsync/secretsync_reconcile.go: desiredSyncSecret`). The second could
//!   collide only if one case's namespace began with another's followed by a dash; every
//!   case namespace ends with the run's suffix after its own (distinct) case name, and
//!   [`families_disjoint`] refuses to put two such cases side by side all the same.
//! * Shared by every case: the GatewayClass `cilium`, whose status the GatewayClass reconciler
//!   sets from the class alone (`gatewayclass_reconcile.go`); controller-runtime's shared
//!   informers and work queue, which change when a Gateway is reconciled, not what a reconcile
//!   of the same objects computes (each reconcile reads the current objects: the conditions wait
//!   takes only conditions whose `observedGeneration` is the object's generation, and waits
//!   for them to stop changing); and the LB IPAM pool (`operator/pkg/lbipam`), whose only
//!   influence on a Gateway is running out of addresses (Programmed False,
//!   `AddressNotAssigned`): the pool is a /16 ([`super::control_plane::POOL_BLOCK`]; its
//!   allocator is a hash map, `pkg/ipalloc: NewHashAllocator`, so its size costs nothing), far
//!   more than the Gateways of the largest batch, even with every earlier case's namespace
//!   still being deleted.
//! * Cluster-scoped objects a case declares are named after its namespace (lint refuses any
//!   other), so they never meet another case's.
//!
//! The data plane is per case too: each case starts its own Envoy (hot restart disabled, its own
//! admin address file) on local ports held for that case alone, and its own backends.
//!
//! The e2e trial `operator_batch::1.19.6::batched_answers_equal_alone` runs generated layouts
//! both ways and compares every field class.

use std::num::NonZeroUsize;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;

use super::plane::OperatorPlane;
use crate::case::Case;
use crate::judge::Outcome;
use crate::lanes::cluster::driver::ObjRef;
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::manifests::SecretMaterial;
use crate::lanes::cluster::names::{namespace_for, run_suffix};
use crate::lanes::cluster::one_case::{self, CaseInput, CaseOutcome};
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::{Gathered, result_lines};
use crate::lanes::cluster::setup::CaseRun;
use crate::lanes::cluster::teardown::Teardown;
use crate::render::certs::{CertRecord, CertSet};

/// The most cases in flight at once that `--batch` accepts.
pub const MAX_BATCH: usize = 64;
/// The default's ceiling: past it, a 2-core machine gains nothing (the operator reconciles one
/// Gateway at a time, and every case starts an Envoy).
pub const DEFAULT_CEILING: usize = 16;
/// What one case in flight may take, for the default: its Envoy (concurrency 1, 25-40 MiB
/// resident), its backends, its objects in the API server's, etcd's and the operator's caches;
/// with room to spare.
pub const PER_CASE_BYTES: u64 = 128 << 20;

/// How many cases run on one control plane at once (1..=[`MAX_BATCH`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch(NonZeroUsize);

impl Batch {
    pub const ONE: Batch = Batch(NonZeroUsize::MIN);

    pub fn new(n: usize) -> Result<Batch, String> {
        match NonZeroUsize::new(n) {
            Some(n) if n.get() <= MAX_BATCH => Ok(Batch(n)),
            _ => Err(format!("{n} is not a batch size: from 1 to {MAX_BATCH} cases at once")),
        }
    }

    pub fn get(self) -> usize {
        self.0.get()
    }

    /// The default for `available` bytes of memory: half of it, [`PER_CASE_BYTES`] a case, at
    /// most [`DEFAULT_CEILING`]; 4 when the memory is unknown.
    pub fn for_memory(available: Option<u64>) -> Batch {
        let n = match available {
            Some(bytes) => ((bytes / 2) / PER_CASE_BYTES).clamp(1, DEFAULT_CEILING as u64) as usize,
            None => 4,
        };
        Batch(NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN))
    }

    /// The default on this machine (its `MemAvailable`).
    pub fn default_here() -> Batch {
        Batch::for_memory(mem_available())
    }
}

impl FromStr for Batch {
    type Err = String;
    fn from_str(s: &str) -> Result<Batch, String> {
        let n: usize = s.trim().parse().map_err(|_| format!("{s:?} is not a batch size: from 1 to {MAX_BATCH} cases at once"))?;
        Batch::new(n)
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What one control plane may take while it comes up and answers (etcd, kube-apiserver,
/// kube-controller-manager, cilium-operator, and a batch's Envoys).
pub const PLANE_BYTES: u64 = 2 << 30;

/// How many versions' control planes come up side by side with `available` bytes free: one
/// [`PLANE_BYTES`] each, at least one; 1 when the memory is unknown.
pub fn planes_at_once(available: Option<u64>) -> usize {
    available.map_or(1, |m| (m / PLANE_BYTES).max(1) as usize)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (Linux); `None` elsewhere.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Whether no case's namespace begins with another's followed by a dash (then the names Cilium
/// 1.19.5 and earlier give synced Secrets, `<namespace>-<name>`, cannot meet, and no case's
/// namespace family holds another's namespace).
pub fn families_disjoint(namespaces: &[String]) -> bool {
    let mut sorted: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    // Sorted, a namespace followed by `-...` comes right after its prefix or after others
    // that also start with it: checking each against every later one that shares its start.
    sorted.iter().enumerate().all(|(i, a)| {
        let family = format!("{a}-");
        sorted[i + 1..].iter().take_while(|b| b.starts_with(a)).all(|b| !b.starts_with(&family))
    })
}

/// Whether the LB IPAM pool ([`super::control_plane::POOL_BLOCK`]) holds 16 times the
/// addresses of [`MAX_BATCH`] cases of `gateways` Gateways each: room for the batch in flight
/// and for the cases before it whose namespaces are still being deleted.
pub fn pool_holds(gateways: usize) -> bool {
    let Ok(block) = super::control_plane::POOL_BLOCK.parse::<crate::lanes::cluster::subnet::PoolBlock>() else { return false };
    let addresses = (1u64 << (32 - u32::from(block.prefix))) - 2;
    addresses >= (MAX_BATCH * gateways * 16) as u64
}

/// The operator's data plane for each case of a batch.
pub struct PlaneSpec {
    /// Where the operator syncs Gateway TLS Secrets.
    pub secrets_namespace: String,
    pub envoy_ready: Duration,
}

/// What a case registers with the run's teardown while it is in flight.
struct Registered {
    namespaces: Vec<String>,
    objects: Vec<ObjRef>,
}

impl Registered {
    fn of(case: &Case, namespace: &str) -> Registered {
        let mut namespaces = vec![namespace.to_string()];
        namespaces.extend(one_case::created_namespaces(case, namespace));
        Registered { namespaces, objects: one_case::cluster_objects(case, namespace) }
    }
}

type Finished = (usize, Result<(CaseOutcome, Vec<CertRecord>), PhaseError>);

/// Runs `cases` on the ready control plane `d` is connected to, up to `batch` at once (a batch
/// of 1 is one after another). Outcomes land in `st` in the order of `cases`, each case's
/// result line printed as it finishes. While a case is in flight its namespaces and objects are
/// registered with `teardown` too, so a run stopped midway (an error, a signal) still undoes
/// every case it started.
#[allow(clippy::too_many_arguments)]
pub async fn run_cases(
    d: &LiveDriver,
    plane: &PlaneSpec,
    cases: &[Case],
    run_id: &str,
    common: &CaseRun<'_>,
    teardown: &mut Teardown,
    st: &mut Gathered,
    progress: &Progress,
    fail_fast: bool,
    batch: Batch,
) -> Result<(), PhaseError> {
    let suffix = run_suffix(run_id);
    let namespaces: Vec<String> = cases.iter().map(|c| namespace_for(&c.name, &suffix)).collect();
    let batch = if families_disjoint(&namespaces) {
        batch
    } else {
        progress.note("layout-gate operator lane: two cases' namespaces share a prefix; running them one at a time");
        Batch::ONE
    };
    let outer = Mutex::new(teardown);
    let stop = AtomicBool::new(false);
    let finished: Vec<Finished> = {
        let outer = &outer;
        let stop = &stop;
        let mut stream = futures::stream::iter(cases.iter().zip(namespaces).enumerate())
            .map(|(i, (case, namespace))| async move {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
                Some((i, one(d, plane, case, namespace, run_id, common, outer).await))
            })
            .buffer_unordered(batch.get());
        let mut finished = Vec::new();
        while let Some(next) = stream.next().await {
            let Some((i, r)) = next else { continue };
            match &r {
                Ok((outcome, _)) => {
                    let passed = outcome.evidence.outcome == Outcome::Pass;
                    progress.case_done(passed, &result_lines(&outcome.evidence));
                    if fail_fast && !passed && !stop.swap(true, Ordering::SeqCst) {
                        progress.note(&format!(
                            "layout-gate {} lane: --fail-fast: case {} failed; starting no further case",
                            common.lane.as_str(),
                            cases[i].name
                        ));
                    }
                }
                // A case that could not even start (its certificates): the run stops, the
                // cases in flight are dropped, and the teardown undoes what they registered.
                Err(_) => {
                    finished.push((i, r));
                    break;
                }
            }
            finished.push((i, r));
        }
        finished
    };
    let mut finished = finished;
    finished.sort_by_key(|(i, _)| *i);
    for (_, r) in finished {
        let (outcome, certs) = r?;
        st.certs.extend(certs);
        st.cleanup.done.extend(outcome.cleanup.done.iter().cloned());
        st.cleanup.kept.extend(outcome.cleanup.kept.iter().cloned());
        st.cleanup.failed.extend(outcome.cleanup.failed.iter().cloned());
        st.outcomes.push(outcome);
    }
    Ok(())
}

/// One case of a batch, on its own fork of the driver and its own data plane.
async fn one(
    d: &LiveDriver,
    plane: &PlaneSpec,
    case: &Case,
    namespace: String,
    run_id: &str,
    common: &CaseRun<'_>,
    outer: &Mutex<&mut Teardown>,
) -> Result<(CaseOutcome, Vec<CertRecord>), PhaseError> {
    let certs = CertSet::generate(run_id, &case.certificates)
        .map_err(|e| PhaseError::new(&format!("case {}: certificates", case.name), e.to_string()))?;
    let registered = Registered::of(case, &namespace);
    with(outer, |t| {
        for n in &registered.namespaces {
            t.push_namespace(n);
        }
        for o in &registered.objects {
            t.push_object(o.clone());
        }
    });
    let input = CaseInput {
        case,
        version: common.version,
        namespace,
        run_id,
        certs: SecretMaterial::Issued(&certs),
        timeouts: common.timeouts,
        probe_timeouts: common.probe_timeouts,
        keep_namespace: common.keep_namespaces,
        tlsroute_version: common.tlsroute_version,
        expecting: common.expecting,
    };
    let mut d = d.fork();
    let mut data = OperatorPlane::new(plane.secrets_namespace.clone(), plane.envoy_ready);
    let mut own = Teardown::default();
    let outcome = one_case::run_case(&mut d, &mut data, &input, &mut own).await;
    // Envoy, backends and held ports go now, not when the batch ends.
    drop(data);
    with(outer, |t| {
        for n in &registered.namespaces {
            t.forget_namespace(n);
        }
        for o in &registered.objects {
            t.forget_object(o);
        }
        // Whatever the case's own teardown could not end is the run's to end.
        t.absorb(own);
    });
    Ok((outcome, certs.records()))
}

fn with(outer: &Mutex<&mut Teardown>, f: impl FnOnce(&mut Teardown)) {
    let mut guard = outer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut guard);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_from_one_to_the_ceiling() {
        assert_eq!("8".parse::<Batch>().unwrap().get(), 8);
        assert_eq!(Batch::new(MAX_BATCH).unwrap().get(), MAX_BATCH);
        for bad in ["0", "65", "-1", "x", ""] {
            let e = bad.parse::<Batch>().unwrap_err();
            assert!(e.contains("from 1 to 64"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_default_batch_follows_the_memory() {
        assert_eq!(Batch::for_memory(Some(20 << 30)).get(), DEFAULT_CEILING);
        assert_eq!(Batch::for_memory(Some(1 << 30)).get(), 4);
        assert_eq!(Batch::for_memory(Some(100 << 20)).get(), 1);
        assert_eq!(Batch::for_memory(None).get(), 4);
        let meminfo = "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:    2097152 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(2 << 30));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn planes_come_up_side_by_side_as_far_as_the_memory_holds() {
        assert_eq!(planes_at_once(Some(20 << 30)), 10);
        assert_eq!(planes_at_once(Some(3 << 30)), 1);
        assert_eq!(planes_at_once(Some(1 << 30)), 1);
        assert_eq!(planes_at_once(None), 1);
    }

    #[test]
    fn namespaces_one_of_which_begins_another_are_not_disjoint() {
        let ns = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(families_disjoint(&ns(&["lg-check-0-abc123", "lg-check-1-abc123", "lg-check-10-abc123"])));
        // Cilium 1.19.5 would sync Secret `x-tls` of the first and `tls` of the second to the
        // same name `lg-a-abc123-x-tls`.
        assert!(!families_disjoint(&ns(&["lg-a-abc123", "lg-a-abc123-x"])));
        assert!(!families_disjoint(&ns(&["lg-a-abc123-x", "lg-b", "lg-a-abc123"])));
        assert!(families_disjoint(&ns(&["lg-a-abc123", "lg-a-abc1234"])));
    }

    /// The real names: a run's case namespaces (`check`'s per-Gateway cases and the catalogue's)
    /// never begin one another.
    #[test]
    fn the_namespaces_of_a_run_are_disjoint() {
        let suffix = run_suffix("operator-1.19.6-check-20261203T000000Z");
        let check: Vec<String> = (0..300).map(|i| namespace_for(&format!("check-{i}"), &suffix)).collect();
        assert!(families_disjoint(&check));
        let cases = crate::case::load::lint(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap();
        let ns: Vec<String> = cases.iter().map(|c| namespace_for(&c.name, &suffix)).collect();
        assert!(families_disjoint(&ns), "{ns:?}");
    }

    /// The LB IPAM pool holds the Gateways of the largest batch of catalogue cases many times
    /// over (earlier cases' namespaces may still be deleting); the generator's layouts are held
    /// to [`pool_holds`] by the differential's own test.
    #[test]
    fn the_pool_holds_the_largest_batch() {
        let cases = crate::case::load::lint(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap();
        let most = cases.iter().map(|c| crate::lanes::cluster::subjects::Subjects::of(c, "lg-x").gateways.len()).max().unwrap_or(1);
        assert!(pool_holds(most), "a batch of {MAX_BATCH} cases of {most} Gateways");
        assert!(!pool_holds(1 << 16), "the check can fail");
    }
}
