//! Envoy bootstraps (static listeners, or listeners from a watched LDS file) and LDS
//! `DiscoveryResponse`s, rendered to JSON. Envoy accepts JSON for both, so no YAML writer is
//! involved and the golden files are plain `serde_json` pretty output.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::listener::{ListenerSpec, UPSTREAM_TLS_TYPE, socket_address};

/// The file name inside an LDS directory that the bootstrap points at.
pub const LDS_FILE: &str = "lds.json";

/// The admin interface. The port is always 0 (the kernel picks one, Envoy writes it to
/// `--admin-address-path`), so no admin port is ever guessed or shared between Envoys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminSpec {
    pub ip: IpAddr,
}

impl Default for AdminSpec {
    fn default() -> Self {
        AdminSpec { ip: IpAddr::V4(Ipv4Addr::LOCALHOST) }
    }
}

/// A STATIC cluster (the model lane's backends are fixed local sockets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    pub name: String,
    pub endpoints: Vec<SocketAddr>,
    /// Envoy originates TLS to the endpoints (no verification). Off for passthrough clusters,
    /// whose TLS is the client's own.
    pub upstream_tls: bool,
    /// The upstream HTTP protocol options Cilium would give the cluster (`None`: none).
    pub protocol: crate::types::UpstreamProtocol,
}

impl ClusterSpec {
    pub fn new(name: impl Into<String>, endpoints: Vec<SocketAddr>) -> Self {
        ClusterSpec { name: name.into(), endpoints, upstream_tls: false, protocol: crate::types::UpstreamProtocol::None }
    }

    pub fn to_json(&self) -> Value {
        let lb_endpoints: Vec<Value> = self.endpoints.iter().map(|a| json!({ "endpoint": { "address": socket_address(*a) } })).collect();
        let mut c = Map::new();
        c.insert("name".into(), json!(self.name));
        c.insert("type".into(), json!("STATIC"));
        // Short, because every upstream is on loopback: a refused backend should show up as a
        // fast reset in a probe, not as a probe timeout.
        c.insert("connect_timeout".into(), json!("1s"));
        c.insert("load_assignment".into(), json!({ "cluster_name": self.name, "endpoints": [{ "lb_endpoints": lb_endpoints }] }));
        if self.upstream_tls {
            c.insert(
                "transport_socket".into(),
                json!({
                    "name": "envoy.transport_sockets.tls",
                    "typed_config": { "@type": UPSTREAM_TLS_TYPE }
                }),
            );
        }
        if let Some(opts) = http_protocol_options(self.protocol) {
            c.insert("typed_extension_protocol_options".into(), json!({ "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": opts }));
        }
        Value::Object(c)
    }
}

/// `HttpProtocolOptions` holding `p` as its upstream protocol; `None` for no options at all.
fn http_protocol_options(p: crate::types::UpstreamProtocol) -> Option<Value> {
    use crate::types::UpstreamProtocol as U;
    let (key, value) = match p {
        U::None => return None,
        U::Downstream => ("use_downstream_protocol_config", json!({ "http2_protocol_options": {} })),
        U::DownstreamHttp1 => ("use_downstream_protocol_config", json!({ "http_protocol_options": {} })),
        U::Http1 => ("explicit_http_config", json!({ "http_protocol_options": {} })),
        U::Http2 => ("explicit_http_config", json!({ "http2_protocol_options": {} })),
        U::Http3 => ("explicit_http_config", json!({ "http3_protocol_options": {} })),
        U::Auto => ("auto_config", json!({})),
    };
    let mut m = Map::new();
    m.insert("@type".into(), json!("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"));
    m.insert(key.into(), value);
    Some(Value::Object(m))
}

/// Where listeners come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ListenerSource {
    Static(Vec<ListenerSpec>),
    /// `lds_config.path_config_source` on `<dir>/lds.json`, watching `<dir>` so that an atomic
    /// rename into it (see lds.rs) is noticed.
    FileLds {
        dir: PathBuf,
    },
    /// Listeners and clusters over gRPC from a Cilium agent's xDS server (through the operator
    /// lane's xds-bridge, on a unix socket), as cilium-envoy's bootstrap asks for them in the
    /// agent's `mode`: the `xds-grpc-cilium` cluster, cilium-envoy's node id
    /// (cilium@v1.19.6:pkg/envoy/embedded_envoy.go `createBootstrap`, reduced to what upstream
    /// Envoy needs: no Cilium bpf_metadata or access-log sockets).
    CiliumXds {
        socket: PathBuf,
        mode: CiliumXdsMode,
    },
}

/// How Cilium's agent serves xDS (its `envoy-xds-mode`), and so how cilium-envoy's bootstrap
/// asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiliumXdsMode {
    /// One gRPC stream per type: `lds_config` and `cds_config` each an `api_config_source` on
    /// `xds-grpc-cilium` (the only mode before 1.20; `split`, or unset, at 1.20).
    Split,
    /// One Aggregated Discovery Service stream: `ads_config` on `xds-grpc-cilium`, `lds_config`
    /// and `cds_config` each `ads: {}` (`ads` or `strict-ads` from 1.20,
    /// cilium@v1.20.2:install/kubernetes/cilium/files/cilium-envoy/configmap/bootstrap-config.yaml).
    Ads,
}

impl CiliumXdsMode {
    /// The mode a `cilium-config` value of `envoy-xds-mode` names (`None`: the key is absent,
    /// which cilium-agent reads as split).
    pub fn from_config(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") | Some("split") => Ok(CiliumXdsMode::Split),
            Some("ads") | Some("strict-ads") => Ok(CiliumXdsMode::Ads),
            Some(other) => Err(format!("envoy-xds-mode {other:?} is none of split, ads, strict-ads (cilium-agent's modes)")),
        }
    }

    /// As xds-bridge's `--xds-mode` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            CiliumXdsMode::Split => "split",
            CiliumXdsMode::Ads => "ads",
        }
    }
}

/// The node id cilium-envoy presents (`host~127.0.0.1~no-id~localdomain`,
/// cilium@v1.19.6:pkg/envoy/embedded_envoy.go); the agent serves any node, this one as its own.
pub const CILIUM_ENVOY_NODE_ID: &str = "host~127.0.0.1~no-id~localdomain";

/// The name of the static cluster cilium-envoy reaches the agent's xDS server through.
pub const CILIUM_XDS_CLUSTER: &str = "xds-grpc-cilium";

/// A complete bootstrap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    admin: AdminSpec,
    listeners: ListenerSource,
    clusters: Vec<ClusterSpec>,
    /// Clusters and static secrets given as Envoy JSON as they are (the operator lane serves
    /// what Cilium wrote, not a spec of ours).
    raw_clusters: Vec<Value>,
    secrets: Vec<Value>,
}

impl Bootstrap {
    pub fn static_listeners(admin: AdminSpec, listeners: Vec<ListenerSpec>, clusters: Vec<ClusterSpec>) -> Self {
        Bootstrap { admin, listeners: ListenerSource::Static(listeners), clusters, raw_clusters: Vec::new(), secrets: Vec::new() }
    }

    /// `lds_dir` should be absolute: Envoy resolves it against its own working directory.
    pub fn file_lds(admin: AdminSpec, lds_dir: &Path, clusters: Vec<ClusterSpec>) -> Self {
        Bootstrap {
            admin,
            listeners: ListenerSource::FileLds { dir: lds_dir.to_path_buf() },
            clusters,
            raw_clusters: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// Listeners and clusters from a Cilium agent's xDS over the unix socket `socket`, asked for
    /// as the agent serves them in `mode` (see [`ListenerSource::CiliumXds`]).
    pub fn cilium_xds(admin: AdminSpec, socket: &Path, mode: CiliumXdsMode) -> Self {
        Bootstrap {
            admin,
            listeners: ListenerSource::CiliumXds { socket: socket.to_path_buf(), mode },
            clusters: Vec::new(),
            raw_clusters: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// Adds clusters and static secrets given as Envoy JSON.
    pub fn with_raw(mut self, clusters: Vec<Value>, secrets: Vec<Value>) -> Self {
        self.raw_clusters = clusters;
        self.secrets = secrets;
        self
    }

    pub fn to_json(&self) -> Value {
        let mut b = Map::new();
        let node = match &self.listeners {
            ListenerSource::CiliumXds { .. } => json!({ "id": CILIUM_ENVOY_NODE_ID, "cluster": "ingress-cluster" }),
            _ => json!({ "id": "layout-gate", "cluster": "layout-gate" }),
        };
        b.insert("node".into(), node);
        b.insert("admin".into(), json!({ "address": socket_address(SocketAddr::new(self.admin.ip, 0)) }));
        let mut statics = Map::new();
        if let ListenerSource::Static(listeners) = &self.listeners {
            statics.insert("listeners".into(), Value::Array(listeners.iter().map(ListenerSpec::to_json).collect()));
        }
        let xds_cluster = match &self.listeners {
            ListenerSource::CiliumXds { socket, .. } => Some(cilium_xds_cluster(socket)),
            _ => None,
        };
        let clusters = self.clusters.iter().map(ClusterSpec::to_json).chain(self.raw_clusters.iter().cloned()).chain(xds_cluster);
        statics.insert("clusters".into(), Value::Array(clusters.collect()));
        if !self.secrets.is_empty() {
            statics.insert("secrets".into(), Value::Array(self.secrets.clone()));
        }
        b.insert("static_resources".into(), Value::Object(statics));
        if let ListenerSource::FileLds { dir } = &self.listeners {
            b.insert(
                "dynamic_resources".into(),
                json!({
                    "lds_config": {
                        "resource_api_version": "V3",
                        "path_config_source": {
                            "path": dir.join(LDS_FILE).display().to_string(),
                            "watched_directory": { "path": dir.display().to_string() }
                        }
                    }
                }),
            );
        }
        if let ListenerSource::CiliumXds { mode, .. } = &self.listeners {
            b.insert("dynamic_resources".into(), cilium_dynamic_resources(*mode));
        }
        Value::Object(b)
    }

    /// Writes the bootstrap as pretty JSON. The extension must be `.json` (Envoy picks the
    /// parser by extension).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_json(path, &self.to_json())
    }
}

/// cilium-envoy's `dynamic_resources` for the agent's `mode`: gRPC to the agent, the node sent on
/// the first message only, a 30 s initial fetch of listeners and clusters (the chart's
/// `envoy.initialFetchTimeoutSeconds`; a resource the agent never sends holds its listener or
/// cluster that long, as on a node). Split: each of LDS and CDS its own gRPC source. ADS: the one
/// gRPC source is `ads_config`, and LDS and CDS are read from it (`ads: {}`).
fn cilium_dynamic_resources(mode: CiliumXdsMode) -> Value {
    let grpc = json!({
        "api_type": "GRPC",
        "transport_api_version": "V3",
        "set_node_on_first_message_only": true,
        "grpc_services": [{ "envoy_grpc": { "cluster_name": CILIUM_XDS_CLUSTER } }]
    });
    let source = |from: (&str, Value)| {
        let mut s = Map::new();
        s.insert("initial_fetch_timeout".into(), json!("30s"));
        s.insert("resource_api_version".into(), json!("V3"));
        s.insert(from.0.into(), from.1);
        Value::Object(s)
    };
    match mode {
        CiliumXdsMode::Split => json!({
            "lds_config": source(("api_config_source", grpc.clone())),
            "cds_config": source(("api_config_source", grpc)),
        }),
        CiliumXdsMode::Ads => json!({
            "ads_config": grpc,
            "lds_config": source(("ads", json!({}))),
            "cds_config": source(("ads", json!({}))),
        }),
    }
}

/// The static cluster of the agent's xDS server: HTTP/2 over the unix socket `socket`.
fn cilium_xds_cluster(socket: &Path) -> Value {
    json!({
        "name": CILIUM_XDS_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "1s",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": { "http2_protocol_options": {} }
            }
        },
        "load_assignment": {
            "cluster_name": CILIUM_XDS_CLUSTER,
            "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": { "pipe": { "path": socket.display().to_string() } } } }] }]
        }
    })
}

/// An LDS `DiscoveryResponse` carrying `listeners` at `version_info`.
pub fn lds_discovery_response(version_info: &str, listeners: &[ListenerSpec]) -> Value {
    json!({
        "version_info": version_info,
        "resources": listeners.iter().map(ListenerSpec::to_resource).collect::<Vec<_>>()
    })
}

/// Pretty JSON with a trailing newline (stable bytes for golden files), flushed before return.
pub(crate) fn write_json(path: &Path, value: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}
