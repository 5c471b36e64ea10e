//! What installing Cilium on an API server looks like the same in every lane that does it:
//! the Gateway API CRDs Established, the GatewayClass `cilium` Accepted by the operator, and the
//! LB IPAM pool (with the L2 announcement policy) once the operator has registered Cilium's CRDs.
//! How the CRDs and Cilium get there (kind + Helm, or a local control plane) is the lane's.

use super::config::KindFiles;
use super::driver::{Driver, Selection, WaitSpec};
use super::failure::{PhaseError, wait_ok};
use super::subnet::PoolBlock;
use super::timeouts::ClusterTimeouts;
use super::track::{ConditionTrue, CrdsEstablished};

/// The CRDs LB IPAM and L2 announcements need, which cilium-operator registers.
pub const CILIUM_LB_CRDS: [&str; 2] = ["ciliumloadbalancerippools.cilium.io", "ciliuml2announcementpolicies.cilium.io"];

/// Waits until every CRD of `names` is Established.
pub async fn crds_established<D: Driver>(
    d: &mut D,
    phase: &str,
    what: &str,
    names: Vec<String>,
    t: &ClusterTimeouts,
) -> Result<(), PhaseError> {
    let spec = WaitSpec {
        what: what.into(),
        wait: t.crds_established,
        watches: vec![Selection::all("apiextensions.k8s.io/v1", "CustomResourceDefinition", None)],
    };
    wait_ok(d, phase, &spec, &mut CrdsEstablished::new(names)).await
}

/// Waits until Cilium's operator accepts the GatewayClass `cilium`.
pub async fn gatewayclass_accepted<D: Driver>(d: &mut D, phase: &str, t: &ClusterTimeouts) -> Result<(), PhaseError> {
    let spec = WaitSpec {
        what: "GatewayClass cilium Accepted=True".into(),
        wait: t.gatewayclass_accepted,
        watches: vec![Selection::named("gateway.networking.k8s.io/v1", "GatewayClass", None, "cilium")],
    };
    wait_ok(d, phase, &spec, &mut ConditionTrue::new("GatewayClass", "cilium", "Accepted")).await
}

/// Applies the LB IPAM pool for `block` and the L2 announcement policy, once their CRDs are
/// Established.
pub async fn lb_pool<D: Driver>(
    d: &mut D,
    phase: &str,
    files: &KindFiles,
    block: &PoolBlock,
    t: &ClusterTimeouts,
) -> Result<(), PhaseError> {
    let spec = WaitSpec {
        what: "Cilium's LB IPAM and L2 announcement CRDs Established".into(),
        wait: t.lb_crds,
        watches: vec![Selection::all("apiextensions.k8s.io/v1", "CustomResourceDefinition", None)],
    };
    wait_ok(d, phase, &spec, &mut CrdsEstablished::new(CILIUM_LB_CRDS.iter().map(|s| s.to_string()))).await?;
    let pool = files.pool(block).map_err(|e| PhaseError::new(phase, e.to_string()))?;
    d.apply(&[pool, files.policy.clone()], None).await.map_err(|e| PhaseError::step(phase, e))?;
    Ok(())
}
