//! A real local Envoy: finding the binary, rendering Cilium-shaped configs, running it, asking
//! its admin interface, and pushing listener updates through file-based LDS.
//!
//! Used by the model lane (layout-gate's prediction of Cilium's listeners, served by a real
//! Envoy) and by the e2e trials that check our reading of Envoy itself.

pub mod admin;
pub mod binary;
pub mod bootstrap;
pub mod error;
pub mod lds;
pub mod listener;
pub mod listening;
pub mod ports;
pub mod process;
pub mod relaunch;
pub mod revert;
pub mod sds;

pub use admin::{AdminClient, AdminError, AdminResponse, StatValue, Stats};
pub use binary::{BinaryError, BinarySource, EnvoyBinary, EnvoyVersion, INSTALL_HINT};
pub use bootstrap::{AdminSpec, Bootstrap, CiliumXdsMode, ClusterSpec, LDS_FILE, lds_discovery_response};
pub use error::EnvoyError;
pub use lds::{LdsCounters, LdsDir, LdsError, LdsOutcome, LdsUpdate, lds_counters, wait_for_lds_update};
pub use listener::{
    ChainAction, ChainSpec, ListenerSpec, NeverServed, RedirectCode, RouteAction, Termination, TlsTermination, TransportProtocol,
    VirtualHostSpec,
};
pub use listening::wait_listening;
pub use ports::HeldAddrs;
pub use process::{EnvoyProcess, LogLevel, StartOptions, StoppedEnvoy, validate, validate_with};

#[cfg(test)]
mod tests;
