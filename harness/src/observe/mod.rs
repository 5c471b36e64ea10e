//! Observation: probes, config dumps, convergence.

pub mod converge;
pub mod envoy_dump;
pub mod leaf;
pub mod probe;
