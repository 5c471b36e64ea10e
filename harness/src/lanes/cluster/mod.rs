//! What the kind and operator lanes share: Cilium on a Kubernetes API server, driven by the same
//! code. Everything a case does against the API server lives here, written once against
//! [`driver::Driver`]: its namespace and Secrets, its manifests by server-side apply, the watched
//! conditions of every Gateway, ListenerSet and route with the observedGeneration guard, the
//! CiliumEnvoyConfig read, the raw recordings `replay` judges again, diagnostics before cleanup
//! and cleanup in reverse order of creation.
//!
//! Only two things differ between the lanes that use it, and each is behind its own seam:
//! bringing the cluster up and down ([`lane::ClusterLane`]: the kind lane's preflight and
//! `lifecycle`, the operator lane's local control plane), and reaching the data plane
//! ([`plane::DataPlane`]: pods and the Gateway's address on the kind network, or the operator's
//! CiliumEnvoyConfig served on a local Envoy). Around them, one session ([`session::live`], a
//! run from the command line) and one e2e suite ([`suite::Suite`]) serve both lanes, with one
//! evidence path. A lane says how many cases its cluster takes at once
//! ([`lane::ClusterLane::cases_at_once`]: kind one, operator many); the session then hands them
//! to [`batch::run_cases`], each case in namespaces and on a data plane of its own.

pub mod batch;
pub mod cec;
pub mod config;
pub mod diagnostics;
pub mod driver;
pub mod failure;
#[cfg(test)]
pub(crate) mod golden;
pub mod install;
pub mod lane;
pub mod live;
pub mod manifests;
pub mod names;
pub mod one_case;
pub mod plane;
pub mod progress;
pub mod replay;
pub mod session;
pub mod setup;
pub mod subjects;
pub mod subnet;
pub mod suite;
pub mod teardown;
pub mod timeouts;
pub mod tools;
pub mod track;
