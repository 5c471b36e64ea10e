//! Cilium-shaped Envoy listeners, as typed values rendered to Envoy v3 JSON.
//!
//! The shapes follow what Cilium's Gateway translation emits (docs/cilium-translation.md §2): one
//! listener with the `tls_inspector` listener filter, unnamed filter chains matched on
//! `server_names` + `transport_protocol`, `tcp_proxy` chains for TLS passthrough and HCM chains
//! for termination. Two differences are deliberate and local: certificates are files instead of
//! SDS secrets (a Secret that does not exist is an SDS secret that never arrives, as under
//! Cilium: [`super::sds`]), and route configs are inline instead of RDS.
//!
//! Nothing here refuses duplicate or overlapping chains: rendering exactly what a layout would
//! make, including what Envoy will reject, is the point.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

pub(crate) const TLS_INSPECTOR_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector";
pub(crate) const HCM_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
pub(crate) const TCP_PROXY_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy";
pub(crate) const ROUTER_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
pub(crate) const DOWNSTREAM_TLS_TYPE: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";
pub(crate) const UPSTREAM_TLS_TYPE: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";
pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

/// One Envoy listener. The primary address is a separate field from the additional ones so a
/// listener without an address cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    pub name: String,
    pub address: SocketAddr,
    /// Rendered as `additional_addresses` (Cilium's hostNetwork mode uses these).
    pub additional_addresses: Vec<SocketAddr>,
    pub chains: Vec<ChainSpec>,
    /// Cilium's Gateway listeners have none: unmatched SNI is reset.
    pub default_chain: Option<ChainSpec>,
}

impl ListenerSpec {
    pub fn new(name: impl Into<String>, address: SocketAddr) -> Self {
        ListenerSpec { name: name.into(), address, additional_addresses: Vec::new(), chains: Vec::new(), default_chain: None }
    }

    /// Every address the listener binds: the primary one, then the additional ones.
    pub fn addresses(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        std::iter::once(self.address).chain(self.additional_addresses.iter().copied())
    }

    pub fn chain(mut self, chain: ChainSpec) -> Self {
        self.chains.push(chain);
        self
    }

    pub fn default_chain(mut self, chain: ChainSpec) -> Self {
        self.default_chain = Some(chain);
        self
    }

    /// The Envoy v3 `Listener` (without `@type`; see [`ListenerSpec::to_resource`]).
    pub fn to_json(&self) -> Value {
        let mut l = Map::new();
        l.insert("name".into(), json!(self.name));
        l.insert("address".into(), socket_address(self.address));
        if !self.additional_addresses.is_empty() {
            let extra: Vec<Value> = self.additional_addresses.iter().map(|a| json!({ "address": socket_address(*a) })).collect();
            l.insert("additional_addresses".into(), Value::Array(extra));
        }
        // SO_REUSEPORT, so Envoy can bind an address layout-gate holds for it from the moment
        // it was chosen (see ports.rs); an address anyone else has bound still fails loudly.
        l.insert("enable_reuse_port".into(), json!(true));
        l.insert(
            "listener_filters".into(),
            json!([{
                "name": "envoy.filters.listener.tls_inspector",
                "typed_config": { "@type": TLS_INSPECTOR_TYPE }
            }]),
        );
        l.insert("filter_chains".into(), Value::Array(self.chains.iter().map(ChainSpec::to_json).collect()));
        if let Some(default) = &self.default_chain {
            l.insert("default_filter_chain".into(), default.to_json());
        }
        Value::Object(l)
    }

    /// The listener as an xDS resource (with `@type`), as in an LDS `DiscoveryResponse`.
    pub fn to_resource(&self) -> Value {
        let mut v = Map::new();
        v.insert("@type".into(), json!(LISTENER_TYPE));
        if let Value::Object(body) = self.to_json() {
            v.extend(body);
        }
        Value::Object(v)
    }
}

/// What a filter chain's `filter_chain_match.transport_protocol` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportProtocol {
    Tls,
    RawBuffer,
}

impl TransportProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            TransportProtocol::Tls => "tls",
            TransportProtocol::RawBuffer => "raw_buffer",
        }
    }
}

/// One filter chain. `name` is `None` by default because Cilium leaves chains unnamed, which is
/// why its duplicate errors read `filter chain '' has the same matching rules defined as ''`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSpec {
    pub name: Option<String>,
    pub server_names: Vec<String>,
    pub transport_protocol: Option<TransportProtocol>,
    pub destination_port: Option<u16>,
    pub action: ChainAction,
    /// Terminate TLS in Envoy with this certificate. `None` for passthrough and plain chains.
    pub tls: Option<Termination>,
}

impl ChainSpec {
    /// A chain matching `{server_names, transport_protocol: tls}` (Cilium's
    /// `toFilterChainMatch`) with the given action and no termination.
    pub fn tls_match(server_names: &[&str], action: ChainAction) -> Self {
        ChainSpec {
            name: None,
            server_names: server_names.iter().map(|s| s.to_string()).collect(),
            transport_protocol: Some(TransportProtocol::Tls),
            destination_port: None,
            action,
            tls: None,
        }
    }

    /// TLS passthrough: `tcp_proxy` to `cluster`, stat prefix `tls-passthrough:<names>` as
    /// Cilium writes it.
    pub fn passthrough(server_names: &[&str], cluster: impl Into<String>) -> Self {
        let stat_prefix = format!("tls-passthrough:{}", server_names.join(","));
        Self::tls_match(server_names, ChainAction::TcpProxy { cluster: cluster.into(), stat_prefix })
    }

    /// HTTPS termination in Envoy, then HTTP handling.
    pub fn terminate(server_names: &[&str], tls: TlsTermination, action: ChainAction) -> Self {
        ChainSpec { tls: Some(Termination::Files(tls)), ..Self::tls_match(server_names, action) }
    }

    /// HTTPS termination with a Secret that never arrives (see [`super::sds`]): Envoy keeps the
    /// chain and resets every handshake it matches.
    pub fn terminate_never_served(server_names: &[&str], tls: NeverServed, action: ChainAction) -> Self {
        ChainSpec { tls: Some(Termination::NeverServed(tls)), ..Self::tls_match(server_names, action) }
    }

    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    pub fn to_json(&self) -> Value {
        let mut c = Map::new();
        if let Some(name) = &self.name {
            c.insert("name".into(), json!(name));
        }
        let mut m = Map::new();
        if let Some(port) = self.destination_port {
            m.insert("destination_port".into(), json!(port));
        }
        if !self.server_names.is_empty() {
            m.insert("server_names".into(), json!(self.server_names));
        }
        if let Some(tp) = self.transport_protocol {
            m.insert("transport_protocol".into(), json!(tp.as_str()));
        }
        // An empty match is "match everything"; Envoy treats a missing one the same way.
        if !m.is_empty() {
            c.insert("filter_chain_match".into(), Value::Object(m));
        }
        if let Some(tls) = &self.tls {
            c.insert("transport_socket".into(), tls.to_json());
        }
        c.insert("filters".into(), json!([self.action.to_json()]));
        Value::Object(c)
    }
}

/// How a terminating chain gets its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Termination {
    /// From files: a Secret that exists.
    Files(TlsTermination),
    /// Over SDS from a source that never answers: a Secret that does not exist.
    NeverServed(NeverServed),
}

impl Termination {
    fn to_json(&self) -> Value {
        match self {
            Termination::Files(t) => t.to_json(),
            Termination::NeverServed(t) => t.to_json(),
        }
    }
}

/// A certificate Secret Envoy asks for over SDS and never gets ([`super::sds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeverServed {
    /// The SDS secret name Envoy waits for.
    pub secret: String,
    /// The empty discovery file ([`super::sds::write_empty_sds`]).
    pub empty_sds: PathBuf,
    pub alpn: Vec<String>,
}

impl NeverServed {
    fn to_json(&self) -> Value {
        downstream_tls(
            &self.alpn,
            "tls_certificate_sds_secret_configs",
            json!([{ "name": self.secret, "sds_config": super::sds::never_answering_source(&self.empty_sds) }]),
        )
    }
}

/// A downstream TLS transport socket: `alpn` (when any) and the certificates under `key`
/// (`tls_certificates` by file, `tls_certificate_sds_secret_configs` over SDS).
fn downstream_tls(alpn: &[String], key: &str, certificates: Value) -> Value {
    let mut ctx = Map::new();
    if !alpn.is_empty() {
        ctx.insert("alpn_protocols".into(), json!(alpn));
    }
    ctx.insert(key.into(), certificates);
    json!({
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": DOWNSTREAM_TLS_TYPE,
            "common_tls_context": Value::Object(ctx)
        }
    })
}

/// A certificate Envoy terminates with, by file (Cilium uses SDS; files are the local stand-in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsTermination {
    pub cert_chain: PathBuf,
    pub private_key: PathBuf,
    /// Cilium sets `h2,http/1.1` when `gatewayAPI.enableAlpn` is on, nothing otherwise.
    pub alpn: Vec<String>,
}

impl TlsTermination {
    fn to_json(&self) -> Value {
        downstream_tls(
            &self.alpn,
            "tls_certificates",
            json!([{
                "certificate_chain": { "filename": self.cert_chain.display().to_string() },
                "private_key": { "filename": self.private_key.display().to_string() }
            }]),
        )
    }
}

/// The one network filter a chain ends in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainAction {
    /// TLS passthrough (or any raw TCP forwarding) to a cluster.
    TcpProxy { cluster: String, stat_prefix: String },
    /// An HTTP connection manager with an inline route config named `route_name`; its
    /// `stat_prefix` is the route name too (Cilium uses the listener name for both).
    Http { route_name: String, virtual_hosts: Vec<VirtualHostSpec> },
}

impl ChainAction {
    fn to_json(&self) -> Value {
        match self {
            ChainAction::TcpProxy { cluster, stat_prefix } => json!({
                "name": "envoy.filters.network.tcp_proxy",
                "typed_config": {
                    "@type": TCP_PROXY_TYPE,
                    "stat_prefix": stat_prefix,
                    "cluster": cluster
                }
            }),
            ChainAction::Http { route_name, virtual_hosts } => json!({
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": HCM_TYPE,
                    "stat_prefix": route_name,
                    "route_config": {
                        "name": route_name,
                        "virtual_hosts": virtual_hosts.iter().map(VirtualHostSpec::to_json).collect::<Vec<_>>()
                    },
                    "http_filters": [{
                        "name": "envoy.filters.http.router",
                        "typed_config": { "@type": ROUTER_TYPE }
                    }]
                }
            }),
        }
    }
}

/// A virtual host with a single `prefix: /` route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHostSpec {
    pub name: String,
    pub domains: Vec<String>,
    pub action: RouteAction,
}

impl VirtualHostSpec {
    pub fn new(name: impl Into<String>, domains: &[&str], action: RouteAction) -> Self {
        VirtualHostSpec { name: name.into(), domains: domains.iter().map(|d| d.to_string()).collect(), action }
    }

    fn to_json(&self) -> Value {
        if let RouteAction::Routes(routes) = &self.action {
            return json!({ "name": self.name, "domains": self.domains, "routes": routes });
        }
        let mut route = Map::new();
        route.insert("match".into(), json!({ "prefix": "/" }));
        match &self.action {
            RouteAction::Routes(_) => {}
            RouteAction::DirectResponse { status, body } => {
                route.insert("direct_response".into(), json!({ "status": status, "body": { "inline_string": body } }));
            }
            RouteAction::Cluster(cluster) => {
                route.insert("route".into(), json!({ "cluster": cluster }));
            }
            RouteAction::Redirect { https, status } => {
                let mut r = Map::new();
                if *https {
                    r.insert("https_redirect".into(), json!(true));
                }
                r.insert("response_code".into(), json!(status.as_envoy()));
                route.insert("redirect".into(), Value::Object(r));
            }
        }
        json!({ "name": self.name, "domains": self.domains, "routes": [Value::Object(route)] })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteAction {
    /// Envoy answers itself (Envoy accepts statuses 200-599; it rejects others at load).
    DirectResponse { status: u16, body: String },
    /// Forward to a cluster.
    Cluster(String),
    /// Redirect, optionally to https.
    Redirect { https: bool, status: RedirectCode },
    /// Envoy `routes` entries as rendered by the caller (match and action), in order: for
    /// route tables with path, header and query matches.
    Routes(Vec<Value>),
}

/// The redirect codes Envoy's `RedirectAction.response_code` can express; others cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectCode {
    MovedPermanently,
    Found,
    SeeOther,
    TemporaryRedirect,
    PermanentRedirect,
}

impl RedirectCode {
    pub fn status(self) -> u16 {
        match self {
            RedirectCode::MovedPermanently => 301,
            RedirectCode::Found => 302,
            RedirectCode::SeeOther => 303,
            RedirectCode::TemporaryRedirect => 307,
            RedirectCode::PermanentRedirect => 308,
        }
    }

    /// Gateway API allows 301 and 302 on `RequestRedirect`; Envoy knows these five.
    pub fn from_status(status: u16) -> Option<Self> {
        [
            RedirectCode::MovedPermanently,
            RedirectCode::Found,
            RedirectCode::SeeOther,
            RedirectCode::TemporaryRedirect,
            RedirectCode::PermanentRedirect,
        ]
        .into_iter()
        .find(|c| c.status() == status)
    }

    pub fn as_envoy(self) -> &'static str {
        match self {
            RedirectCode::MovedPermanently => "MOVED_PERMANENTLY",
            RedirectCode::Found => "FOUND",
            RedirectCode::SeeOther => "SEE_OTHER",
            RedirectCode::TemporaryRedirect => "TEMPORARY_REDIRECT",
            RedirectCode::PermanentRedirect => "PERMANENT_REDIRECT",
        }
    }
}

pub(crate) fn socket_address(addr: SocketAddr) -> Value {
    json!({ "socket_address": { "address": addr.ip().to_string(), "port_value": addr.port() } })
}
