//! The lanes: where a case's Gateway runs and where its observations come from. Everything
//! else (case, certificates, probe, dump summary, judge, evidence) is shared.
//!
//! * [`model`]: layout-gate's model of Cilium's Gateway translation per version, rendered into
//!   a real local Envoy. A prediction; its evidence says `lane: model`.
//! * [`kind`]: real Cilium on a kind cluster the harness creates. The gate.

pub mod kind;
pub mod model;
