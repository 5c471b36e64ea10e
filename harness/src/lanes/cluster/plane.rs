//! The data-plane seam: how a lane that runs Cilium on an API server reaches what Cilium
//! configured. Everything else a case does (namespace, Secrets, manifests, conditions, the
//! CiliumEnvoyConfig read, judging) is the same code for every such lane ([`super::one_case`]).
//!
//! * The kind lane: backend pods behind their Services, probes to each Gateway's address on the
//!   kind network, Envoy's listeners read with `cilium-dbg` in an agent.
//! * The operator lane: in-process backends behind the same Services, the CiliumEnvoyConfig the
//!   operator wrote put through an emulated agent step onto a local Envoy, probes to the local
//!   addresses standing for each Gateway port, and that Envoy's own `/config_dump`.

#![allow(async_fn_in_trait)] // used with concrete planes only, never as `dyn`

use std::collections::BTreeMap;

use serde_json::Value;

use super::cec::EnvoyViews;
use super::driver::{Driver, ProbeTargets};
use super::failure::{PhaseError, TeardownReport};
use super::manifests::SecretMaterial;
use super::timeouts::ClusterTimeouts;
use crate::case::{Applied, Case};
use crate::evidence::{ProbeRecord, Recording};
use crate::run::Timeouts;

/// What a plane needs of the case when it acts.
pub struct PlaneCase<'a> {
    pub case: &'a Case,
    pub namespace: &'a str,
    /// Every Gateway of the case, its own first.
    pub gateways: &'a [String],
    pub certs: &'a SecretMaterial<'a>,
    pub timeouts: &'a ClusterTimeouts,
    pub probe_timeouts: &'a Timeouts,
}

pub trait DataPlane {
    /// The objects that stand for the case's backends in the API server (applied with its
    /// Secrets, before its manifests), so Cilium resolves every backendRef to a Service.
    fn backend_objects(&self, c: &PlaneCase<'_>) -> Vec<Value>;

    /// Makes the backends serve: waits for them, or starts them. Waits it made are recorded.
    async fn backends_ready<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<(), PhaseError>;

    /// Whether the data path needs a step of its own once the conditions settled and the
    /// Gateways have addresses (a local Envoy to start); the phase is shown only then.
    fn has_data_path_step(&self) -> bool;

    /// That step: what Cilium configured becomes reachable. Notes for diagnostics come back.
    async fn data_path<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<Vec<String>, PhaseError>;

    /// Where the probes of a Gateway without an address go, said in the run's notes.
    fn unaddressed_probes(&self) -> &'static str;

    /// Probes every (Gateway, port, SNI) the expectations name.
    async fn probe<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, applied: &Applied, targets: &ProbeTargets) -> Vec<ProbeRecord>;

    /// Both Envoy views of every Gateway: what Cilium intended (its CiliumEnvoyConfig) and what
    /// Envoy holds, recorded raw for replay.
    async fn envoy_views<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<EnvoyViews, PhaseError>;

    /// Whether a case's cleanup waits until its namespace is gone before the next case starts
    /// (a cluster that outlives the run must be left clean; a throwaway one need not be).
    fn awaits_namespace_deletion(&self) -> bool;

    /// What the plane lets go of at the end of a case, before its `namespaces` are deleted, so
    /// the cases after it do not meet it; what it did (or failed to) goes into `report`. Nothing
    /// by default.
    async fn release<D: Driver>(&mut self, _d: &mut D, _c: &PlaneCase<'_>, _namespaces: &[&str], _report: &mut TeardownReport) {}

    /// What the evidence `environment` gains from the data plane (backend image digests).
    async fn environment<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>) -> BTreeMap<String, String>;
}
