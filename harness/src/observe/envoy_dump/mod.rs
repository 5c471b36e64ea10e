//! Envoy config dump summaries: "which listeners, in which state, with which filter chains",
//! like `istioctl proxy-config listeners`, read from whatever a lane can get hold of.
//!
//! Accepted inputs (the shape is detected, anything else is an error naming the field):
//!
//! * a full admin `/config_dump` (the `ListenersConfigDump` entry; other entries are skipped);
//! * `/config_dump?resource=dynamic_listeners` or `?resource=static_listeners`, which is what
//!   `cilium-dbg envoy admin config listeners` prints;
//! * a `CiliumEnvoyConfig` (or `CiliumClusterwideEnvoyConfig`, or a `List` of them) as JSON or,
//!   when asked, YAML. Those listeners are what Cilium *intends*, so they are reported as
//!   source `cec`, state `active`, and named `<namespace>/<cec>/<listener>` as Envoy names them.
//!
//! The file is parsed once, straight into small typed structs (no generic JSON tree), because
//! Cilium dumps with thousands of chains are tens of megabytes and every lane summarizes them
//! repeatedly while waiting for convergence.

mod build;
pub mod clusters;
mod decode;
mod error;
mod json;
mod parse;
mod table;
mod unique_keys;

#[cfg(test)]
mod tests;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use clusters::{ClusterFact, UpstreamProtocol, clusters_from_dump};
pub use error::DumpError;
pub use json::to_contract_json;
pub use table::render_table;

/// Every listener found in one dump, sorted by full name (stable, so equal names keep dump
/// order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DumpSummary {
    pub listeners: Vec<ListenerSummary>,
}

impl DumpSummary {
    /// Looks a listener up by its full name first, then by its short name (the last `/`
    /// segment), because expectations are written against short names while two Gateways'
    /// listeners in one dump can share a short name: an exact full name must win.
    pub fn listener(&self, short_or_full_name: &str) -> Option<&ListenerSummary> {
        self.listeners
            .iter()
            .find(|l| l.name == short_or_full_name)
            .or_else(|| self.listeners.iter().find(|l| l.short_name() == short_or_full_name))
    }
}

/// Where a listener summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenerSource {
    /// Envoy bootstrap `static_resources`.
    Static,
    /// Delivered over LDS (Cilium's xDS, or a file-based LDS in the model lane).
    Dynamic,
    /// Read from a CiliumEnvoyConfig: intended by Cilium, not necessarily accepted by Envoy.
    Cec,
}

/// The state a listener is reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenerState {
    Active,
    Warming,
    Draining,
    Error,
}

impl ListenerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ListenerState::Active => "active",
            ListenerState::Warming => "warming",
            ListenerState::Draining => "draining",
            ListenerState::Error => "error",
        }
    }
}

/// One listener.
///
/// Which config the chains come from: the active one if there is one, else the warming one,
/// else the draining one. A listener that exists only as a rejected update (state `error`)
/// reports the addresses of the rejected config but **no** chains, because Envoy serves none
/// of them; counting them would make a NACKed layout look like it has its chains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerSummary {
    /// Full name as Envoy knows it, e.g. `ns/cilium-gateway-gw/listener`.
    pub name: String,
    pub source: ListenerSource,
    pub state: ListenerState,
    /// Further states Envoy lists for this listener besides `state`, e.g. `draining` next to
    /// `active` while an update replaces the old listener. Empty in the common case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_states: Vec<ListenerState>,
    /// LDS version of the config the chains come from (dynamic listeners only).
    pub version_info: Option<String>,
    /// `ip:port` (IPv6 as `[ip]:port`), `pipe:PATH` or `internal:NAME`, main address first.
    pub addresses: Vec<String>,
    pub filter_chains: Vec<ChainSummary>,
    pub default_filter_chain: Option<ChainSummary>,
    /// Envoy's rejection text (`error_state.details`) when the last update was rejected.
    pub error: Option<String>,
}

impl ListenerSummary {
    /// Number of filter chains, not counting the default chain.
    pub fn filter_chain_count(&self) -> usize {
        self.filter_chains.len()
    }

    /// The last `/` segment of the name: `listener`, `listener-443`.
    pub fn short_name(&self) -> &str {
        short_name(&self.name)
    }
}

pub(crate) fn short_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// One filter chain (or the default chain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainSummary {
    /// Chain name; Cilium leaves chains unnamed.
    pub name: Option<String>,
    pub filter_chain_match: ChainMatch,
    pub action: ChainAction,
    /// Present when the chain terminates TLS itself (a `DownstreamTlsContext`).
    pub tls: Option<TlsSummary>,
}

/// The parts of `filter_chain_match` that decide Gateway layouts. Empty means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainMatch {
    pub server_names: Vec<String>,
    pub transport_protocol: Option<String>,
    pub destination_port: Option<u32>,
}

/// What the chain's terminal network filter does. Cilium's own filters (`cilium.*`) are
/// skipped when deciding this, since they only add policy and metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChainAction {
    TcpProxy {
        cluster: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        weighted_clusters: Vec<WeightedCluster>,
    },
    Http {
        /// RDS `route_config_name`, or the inline `route_config.name`.
        route_config: Option<String>,
        /// True when the routes come over RDS rather than inline.
        rds: bool,
    },
    Other {
        /// Names of the chain's non-Cilium network filters, in order. A chain whose body a
        /// trimmed dump replaced with `"..."` has none.
        filters: Vec<String>,
    },
}

impl ChainAction {
    /// `tcp_proxy`, `http` or `other`: the contract's action names.
    pub fn kind(&self) -> &'static str {
        match self {
            ChainAction::TcpProxy { .. } => "tcp_proxy",
            ChainAction::Http { .. } => "http",
            ChainAction::Other { .. } => "other",
        }
    }

    /// Where traffic goes: the cluster, the weighted clusters as `name(weight),...`, or the
    /// route config name. `None` for other filters and for elided chains.
    pub fn target(&self) -> Option<String> {
        match self {
            ChainAction::TcpProxy { cluster: Some(c), .. } => Some(c.clone()),
            ChainAction::TcpProxy { cluster: None, weighted_clusters } if !weighted_clusters.is_empty() => Some(
                weighted_clusters
                    .iter()
                    .map(|w| match w.weight {
                        Some(weight) => format!("{}({weight})", w.name),
                        None => w.name.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ChainAction::TcpProxy { .. } => None,
            ChainAction::Http { route_config, .. } => route_config.clone(),
            ChainAction::Other { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedCluster {
    pub name: String,
    pub weight: Option<u32>,
}

/// TLS termination on a chain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSummary {
    pub certificates: Vec<CertificateSource>,
    pub alpn: Vec<String>,
}

/// Where a terminating chain's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CertificateSource {
    /// `tls_certificates[].certificate_chain.filename`.
    File { path: String },
    /// `inline_string` / `inline_bytes` / anything that is not a file: the content is never
    /// copied into the summary (it goes into evidence files).
    Inline,
    /// `tls_certificate_sds_secret_configs[].name`, e.g. `cilium-secrets/ns-wild`.
    Sds { name: String },
}

impl CertificateSource {
    /// Short label for tables: file basename, `sds:NAME` or `inline`.
    pub fn label(&self) -> String {
        match self {
            CertificateSource::File { path } => path.rsplit('/').next().unwrap_or(path).to_string(),
            CertificateSource::Inline => "inline".to_string(),
            CertificateSource::Sds { name } => format!("sds:{name}"),
        }
    }
}

/// Reads and summarizes one dump file. `.yaml`/`.yml` files are read as YAML, anything else as
/// JSON. Errors name the file, the field path and the line/column.
/// At most [`crate::input::dump_limit`] bytes are read (2 GiB unless overridden), and only from
/// a regular file.
pub fn summarize_path(path: &Path) -> Result<DumpSummary, DumpError> {
    let limit = crate::input::dump_limit().map_err(|message| DumpError::Limit { message })?;
    summarize_path_limited(path, limit)
}

/// [`summarize_path`] with an explicit size limit.
pub fn summarize_path_limited(path: &Path, limit: crate::input::Limit) -> Result<DumpSummary, DumpError> {
    let origin = path.display().to_string();
    let bytes = crate::input::read_bytes(path, limit).map_err(|e| DumpError::Read { origin: origin.clone(), reason: e.reason() })?;
    let yaml = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    summarize_bytes(&bytes, &origin, yaml)
}

/// Summarizes a dump already in memory; `origin` names it in errors.
pub fn summarize_bytes(bytes: &[u8], origin: &str, yaml: bool) -> Result<DumpSummary, DumpError> {
    // Envoy answers `/config_dump?resource=...` with a bare `{}` when it holds no listener of
    // that kind at all (e.g. after the Cilium agent refused a whole CiliumEnvoyConfig). That is
    // zero listeners, not a dump of the wrong shape.
    if !yaml && bytes.iter().filter(|b| !b.is_ascii_whitespace()).eq(b"{}".iter()) {
        return Ok(DumpSummary { listeners: Vec::new() });
    }
    let root = decode::decode(bytes, origin, yaml)?;
    build::summarize(root, origin)
}
