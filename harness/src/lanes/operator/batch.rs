//! The operator lane's side of running many cases on one control plane at once: why that is
//! sound (below, from Cilium's operator at the tag), the default batch from the free memory, how
//! many control planes come up side by side, and the LB-IPAM pool's room. The scheduling itself
//! is the cluster lanes' ([`crate::lanes::cluster::batch`]): `run --lane operator` reaches it
//! through the seam ([`crate::lanes::cluster::lane::ClusterLane::cases_at_once`]), `check --lane
//! operator` and `differential` through [`run_cases`] here; each case's data plane is its own
//! [`OperatorPlane`] (its Envoy, its backends, its held ports).
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
//! * **The GatewayClass every case's Gateways share**, `cilium` (every catalogue case and every
//!   generated layout names it). The lane creates it before any case, and no case can write
//!   it: a cluster-scoped object in a case must be named after the case's namespace (lint,
//!   `case/scope.rs`), so a case may bring a class of its own but never touch `cilium`. What the
//!   operator does with a class its Gateways share, at `cilium@v1.19.6`:
//!   - `gatewayclass_reconcile.go: Reconcile` sets the class's status (Accepted, supported
//!     features) and its config checksum from the class and its CiliumGatewayClassConfig
//!     alone; it reads no Gateway.
//!   - `gateway_reconcile.go: Reconcile` Gets the class its Gateway names, checks its
//!     `controllerName` and `parametersRef`, reads its CiliumGatewayClassConfig
//!     (`getGatewayClassConfig`) and hands both to ingestion: the same unchanging input for
//!     every case. It never writes the class and never lists the class's other Gateways.
//!   - Every Gateway of the class is listed only to queue work: `gateway.go:
//!     enqueueRequestForOwningGatewayClass` (when the class changes, which it does not once the
//!     bring-up saw it accepted), and `helpers.go: getGatewaysForSecret`,
//!     `getGatewaysForNamespace`, `controller.go` and `getAllCiliumGatewaysSet` (when a Secret,
//!     Namespace or other watched object changes). That decides which Gateways are reconciled
//!     when, not what a reconcile computes; a Gateway of another case queued again is reconciled
//!     from its own objects, unchanged.
//!
//!   So sharing the class adds nothing a case alone would not see. At the 1.20 line the
//!   reconciler's inputs are gathered by `loading/loading.go: TranslationInputLoader.Load`
//!   (read at `cilium@v1.20.2`): routes and ListenerSets through indexes keyed by the Gateway,
//!   Services by the routes' backendRefs (`loadReferencedBackendResources`), ReferenceGrants and
//!   BackendTLSPolicies listed whole but matched by namespace and name (a policy targets a
//!   Service of its own namespace); the argument holds there too.
//! * Also shared: controller-runtime's shared informers and work queue, which change when a
//!   Gateway is reconciled, not what a reconcile of the same objects computes (each reconcile
//!   reads the current objects: the conditions wait takes only conditions whose
//!   `observedGeneration` is the object's generation, and waits for them to stop changing); and
//!   the LB IPAM pool (`operator/pkg/lbipam`), whose only influence on a Gateway is running out
//!   of addresses (Programmed False, `AddressNotAssigned`): the pool is a /16
//!   ([`super::control_plane::POOL_BLOCK`]; its allocator is a hash map, `pkg/ipalloc:
//!   NewHashAllocator`, so its size costs nothing), far more than the Gateways of the largest
//!   batch, even with every earlier case's namespace still being deleted. A case that asks for
//!   a given address (`spec.addresses`, or the LB-IPAM annotations `lbipam.cilium.io/ips` and
//!   `io.cilium/lb-ipam-ips`, `lbipam.go` reads both) could take it from another that asks for
//!   the same: a run holding one goes one case at a time
//!   ([`crate::lanes::cluster::batch::asks_for_an_address`]; no catalogue case does).
//! * Cluster-scoped objects a case declares are named after its namespace (lint refuses any
//!   other), so they never meet another case's.
//!
//! The data plane is per case too: each case starts its own Envoy (hot restart disabled, its own
//! admin address file) on local ports held for that case alone, and its own backends.
//!
//! The e2e trials `operator_batch::1.19.6::batched_answers_equal_alone` (generated layouts
//! through `check --lane operator`, every field class compared) and
//! `operator_batch::1.19.6::catalogue_batched_evidence_equals_alone` (catalogue cases through
//! `run --lane operator`, each case's recorded facts compared) run them both ways.

use std::time::Duration;

use super::plane::OperatorPlane;
use crate::case::Case;
pub use crate::lanes::cluster::batch::{Batch, MAX_BATCH, families_disjoint};
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::Gathered;
use crate::lanes::cluster::setup::CaseRun;
use crate::lanes::cluster::teardown::Teardown;

/// The default's ceiling: past it, a 2-core machine gains nothing (the operator reconciles one
/// Gateway at a time, and every case starts an Envoy).
pub const DEFAULT_CEILING: usize = 16;
/// What one case in flight may take, for the default: its Envoy (concurrency 1, 25-40 MiB
/// resident), its backends, its objects in the API server's, etcd's and the operator's caches;
/// with room to spare.
pub const PER_CASE_BYTES: u64 = 128 << 20;

/// The default batch for `available` bytes of memory: half of it, [`PER_CASE_BYTES`] a case, at
/// most [`DEFAULT_CEILING`]; 4 when the memory is unknown.
pub fn for_memory(available: Option<u64>) -> Batch {
    let n = match available {
        Some(bytes) => ((bytes / 2) / PER_CASE_BYTES).clamp(1, DEFAULT_CEILING as u64) as usize,
        None => 4,
    };
    Batch::new(n).unwrap_or(Batch::ONE)
}

/// The default batch on this machine (its `MemAvailable`).
pub fn default_here() -> Batch {
    for_memory(mem_available())
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
    /// What the emulated agent step checks at the version.
    pub checks: super::agent::AgentChecks,
    /// Whose agent step serves the cases (one Cilium agent is shared by all of them).
    pub step: super::plane::AgentStep,
}

/// Runs `cases` on the ready control plane `d` is connected to, up to `batch` at once (one
/// with Cilium's own agent), each on an [`OperatorPlane`] of its own ([`crate::lanes::cluster::batch::run_cases`]).
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
    still_up: crate::lanes::cluster::lane::StillUp<'_>,
) -> Result<(), PhaseError> {
    let new_plane = || OperatorPlane::new(plane.secrets_namespace.clone(), plane.envoy_ready, plane.checks).with_step(plane.step.clone());
    let batch = plane.step.cases_at_once(batch);
    crate::lanes::cluster::batch::run_cases(d, &new_plane, cases, run_id, common, teardown, st, progress, fail_fast, batch, still_up).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_batch_follows_the_memory() {
        assert_eq!(for_memory(Some(20 << 30)).get(), DEFAULT_CEILING);
        assert_eq!(for_memory(Some(1 << 30)).get(), 4);
        assert_eq!(for_memory(Some(100 << 20)).get(), 1);
        assert_eq!(for_memory(None).get(), 4);
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
