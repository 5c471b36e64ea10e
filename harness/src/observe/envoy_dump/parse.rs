//! Raw serde shapes: only the fields the summary needs, everything else skipped unparsed.
//!
//! One set of structs serves Envoy's snake_case dumps and Cilium's camelCase CRDs (via
//! aliases), and each entry struct is the union of the fields of the entry kinds that can sit in
//! the same array, decided afterwards from `@type`. That avoids untagged enums and `flatten`,
//! which buffer whole subtrees and lose the field path in errors.
//!
//! The structural fields (lists of configs, listeners, chains, filters) are strict, so a wrong
//! type there is reported with its path. Inside a filter's `typed_config` the meaning of a
//! field depends on the filter, so those fields are lenient: a `route_config` that is a list
//! (Dubbo) or a `cluster` that is an object must not fail the whole dump.
//! `expecting` texts are what a reader sees in "invalid type: ..., expected X" errors.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Top level: an Envoy config dump (`configs`), a CiliumEnvoyConfig (`kind`, `metadata`,
/// `spec`) or a Kubernetes `List` of them (`items`).
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "an Envoy config dump or CiliumEnvoyConfig object")]
pub(super) struct RawRoot {
    pub configs: Option<Vec<ObjectOnly<RawConfig>>>,
    pub kind: Option<String>,
    pub metadata: Option<RawMeta>,
    pub spec: Option<RawCecSpec>,
    pub items: Option<Vec<RawCecObject>>,
}

/// One `configs[]` entry: a `ListenersConfigDump`, a `ListenersConfigDump.DynamicListener` or
/// `.StaticListener` (from `?resource=`), or any other config type (skipped).
#[derive(Debug, Deserialize)]
#[serde(expecting = "a config dump entry object")]
pub(super) struct RawConfig {
    #[serde(rename = "@type")]
    pub type_url: Option<String>,
    // ListenersConfigDump
    pub static_listeners: Option<Vec<RawStaticListener>>,
    pub dynamic_listeners: Option<Vec<RawDynamicListener>>,
    // DynamicListener
    pub name: Option<String>,
    pub active_state: Option<RawListenerState>,
    pub warming_state: Option<RawListenerState>,
    pub draining_state: Option<RawListenerState>,
    pub error_state: Option<RawErrorState>,
    // StaticListener
    pub listener: Option<RawListener>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a StaticListener object")]
pub(super) struct RawStaticListener {
    pub listener: Option<RawListener>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a DynamicListener object")]
pub(super) struct RawDynamicListener {
    pub name: Option<String>,
    pub active_state: Option<RawListenerState>,
    pub warming_state: Option<RawListenerState>,
    pub draining_state: Option<RawListenerState>,
    pub error_state: Option<RawErrorState>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a listener state object")]
pub(super) struct RawListenerState {
    pub version_info: Option<String>,
    pub listener: Option<RawListener>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an error_state object")]
pub(super) struct RawErrorState {
    pub failed_configuration: Option<RawListener>,
    pub details: Option<String>,
}

/// `envoy.config.listener.v3.Listener`, from a dump or a CEC resource (which may also be any
/// other resource type: `type_url` tells).
#[derive(Debug, Deserialize)]
#[serde(expecting = "a Listener object")]
pub(super) struct RawListener {
    #[serde(rename = "@type")]
    pub type_url: Option<String>,
    pub name: Option<String>,
    pub address: Option<RawAddress>,
    #[serde(alias = "additionalAddresses")]
    pub additional_addresses: Option<Vec<RawAdditionalAddress>>,
    #[serde(alias = "filterChains")]
    pub filter_chains: Option<Vec<RawChain>>,
    #[serde(alias = "defaultFilterChain")]
    pub default_filter_chain: Option<MaybeElided<RawChain>>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an Address object")]
pub(super) struct RawAddress {
    #[serde(alias = "socketAddress")]
    pub socket_address: Option<RawSocketAddress>,
    pub pipe: Option<RawPipe>,
    #[serde(alias = "envoyInternalAddress")]
    pub envoy_internal_address: Option<RawInternalAddress>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a SocketAddress object")]
pub(super) struct RawSocketAddress {
    pub address: Option<String>,
    #[serde(alias = "portValue")]
    pub port_value: Option<BindPort>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a Pipe object")]
pub(super) struct RawPipe {
    pub path: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an EnvoyInternalAddress object")]
pub(super) struct RawInternalAddress {
    #[serde(alias = "serverListenerName")]
    pub server_listener_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an AdditionalAddress object")]
pub(super) struct RawAdditionalAddress {
    pub address: Option<RawAddress>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a FilterChain object")]
pub(super) struct RawChain {
    pub name: Option<String>,
    #[serde(alias = "filterChainMatch")]
    pub filter_chain_match: Option<RawChainMatch>,
    pub filters: Option<Vec<RawFilter>>,
    #[serde(alias = "transportSocket")]
    pub transport_socket: Option<RawTransportSocket>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a FilterChainMatch object")]
pub(super) struct RawChainMatch {
    #[serde(alias = "serverNames")]
    pub server_names: Option<Vec<String>>,
    #[serde(alias = "transportProtocol")]
    pub transport_protocol: Option<String>,
    #[serde(alias = "destinationPort")]
    pub destination_port: Option<PortNumber>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a Filter object")]
pub(super) struct RawFilter {
    pub name: Option<String>,
    #[serde(alias = "typedConfig")]
    pub typed_config: Option<RawFilterConfig>,
}

/// The union of the `TcpProxy` and `HttpConnectionManager` fields we read; any other filter's
/// config lands here too and is judged by `type_url`/name afterwards.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a typed_config object")]
pub(super) struct RawFilterConfig {
    #[serde(rename = "@type", default)]
    pub type_url: Lenient<String>,
    #[serde(default)]
    pub cluster: Lenient<String>,
    #[serde(alias = "weightedClusters", default)]
    pub weighted_clusters: Lenient<RawWeightedClusters>,
    #[serde(default)]
    pub rds: Lenient<RawRds>,
    #[serde(alias = "routeConfig", default)]
    pub route_config: Lenient<RawNamed>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a weighted_clusters object")]
pub(super) struct RawWeightedClusters {
    pub clusters: Option<Vec<RawWeightedCluster>>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a ClusterWeight object")]
pub(super) struct RawWeightedCluster {
    pub name: Option<String>,
    pub weight: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an rds object")]
pub(super) struct RawRds {
    #[serde(alias = "routeConfigName")]
    pub route_config_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an object with a name")]
pub(super) struct RawNamed {
    pub name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a TransportSocket object")]
pub(super) struct RawTransportSocket {
    pub name: Option<String>,
    #[serde(alias = "typedConfig")]
    pub typed_config: Option<RawTlsContext>,
}

/// `DownstreamTlsContext`, or whatever other transport socket config (lenient inside).
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a transport socket typed_config object")]
pub(super) struct RawTlsContext {
    #[serde(rename = "@type", default)]
    pub type_url: Lenient<String>,
    #[serde(alias = "commonTlsContext", default)]
    pub common_tls_context: Lenient<RawCommonTls>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a CommonTlsContext object")]
pub(super) struct RawCommonTls {
    #[serde(alias = "alpnProtocols")]
    pub alpn_protocols: Option<Vec<String>>,
    #[serde(alias = "tlsCertificates")]
    pub tls_certificates: Option<Vec<RawTlsCertificate>>,
    #[serde(alias = "tlsCertificateSdsSecretConfigs")]
    pub tls_certificate_sds_secret_configs: Option<Vec<RawNamed>>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a TlsCertificate object")]
pub(super) struct RawTlsCertificate {
    #[serde(alias = "certificateChain")]
    pub certificate_chain: Option<RawDataSource>,
}

/// Only the file name is kept: inline certificate bodies are skipped without being copied.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a DataSource object")]
pub(super) struct RawDataSource {
    pub filename: Option<String>,
}

// ---- CiliumEnvoyConfig ----

#[derive(Debug, Deserialize)]
#[serde(expecting = "a CiliumEnvoyConfig object")]
pub(super) struct RawCecObject {
    pub kind: Option<String>,
    pub metadata: Option<RawMeta>,
    pub spec: Option<RawCecSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "an ObjectMeta object")]
pub(super) struct RawMeta {
    pub name: Option<String>,
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(expecting = "a CiliumEnvoyConfig spec object")]
pub(super) struct RawCecSpec {
    /// Listeners, route configurations, clusters...: all parsed as `RawListener` (unknown
    /// fields skipped) and told apart by `@type`.
    pub resources: Option<Vec<RawListener>>,
}

// ---- helpers ----

/// A port, 1-65535: `port_value: 70000` (or 0) is an error at its path, not an address
/// nothing can bind.
#[derive(Debug, Clone, Copy)]
pub(super) struct PortNumber(pub u16);

impl<'de> Deserialize<'de> for PortNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(deserializer)?;
        crate::types::Port::new(n).map(|p| PortNumber(p.get())).map_err(|e| de::Error::custom(e.0))
    }
}

/// A listener's port, 0-65535: 0 asks the kernel for an ephemeral port, which Envoy binds and
/// echoes as 0 in its dump; both lanes give it to a listener no Gateway port is sent to (a
/// cilium-agent proxy port nothing redirects to). `port_value: 70000` is an error at its path.
#[derive(Debug, Clone, Copy)]
pub(super) struct BindPort(pub u16);

impl<'de> Deserialize<'de> for BindPort {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(deserializer)?;
        u16::try_from(n).map(BindPort).map_err(|_| de::Error::custom(format!("port {n} is outside 0-65535")))
    }
}

/// A field whose wrong-typed value is skipped rather than an error (see the module docs).
/// Strings are kept when the value is a string, structs when it is a map.
#[derive(Debug)]
pub(super) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

/// What a lenient field accepts.
pub(super) trait LenientTarget: Sized {
    fn from_str(s: &str) -> Option<Self>;
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error>;
}

impl LenientTarget for String {
    fn from_str(s: &str) -> Option<Self> {
        Some(s.to_string())
    }
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        IgnoredAny::deserialize(MapAccessDeserializer::new(map))?;
        Ok(None)
    }
}

macro_rules! lenient_struct {
    ($($t:ty),*) => {$(
        impl LenientTarget for $t {
            fn from_str(_: &str) -> Option<Self> {
                None
            }
            fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
                <$t>::deserialize(MapAccessDeserializer::new(map)).map(Some)
            }
        }
    )*};
}
lenient_struct!(RawWeightedClusters, RawRds, RawNamed, RawCommonTls);

impl<'de, T: LenientTarget> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: LenientTarget> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Lenient(T::from_str(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::from_map(map).map(Lenient)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(Lenient(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                Lenient::<T>::deserialize(d)
            }
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

/// A value that trimmed dumps (such as `ref-*.json` in `harness/tests/data/envoy-dumps/`) may replace with the string
/// `"..."`. The marker says "there was something here"; any other string is a type error.
#[derive(Debug)]
pub(super) enum MaybeElided<T> {
    Present(T),
    Elided,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MaybeElided<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = MaybeElided<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a filter chain object (or \"...\" in a trimmed dump)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if v == "..." { Ok(MaybeElided::Elided) } else { Err(E::invalid_type(de::Unexpected::Str(v), &self)) }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(MaybeElided::Present)
            }
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

/// Derived struct visitors also accept arrays (fields by position), which turns "this is not
/// an object" into a confusing error about the first field; this wrapper insists on a map.
#[derive(Debug)]
pub(super) struct ObjectOnly<T>(pub T);

/// What an [`ObjectOnly`] error says was expected.
pub(super) trait ObjectName {
    const EXPECTING: &'static str;
}

impl ObjectName for RawRoot {
    const EXPECTING: &'static str = "an object (an Envoy config dump, a CiliumEnvoyConfig or a List of them)";
}

impl ObjectName for RawConfig {
    const EXPECTING: &'static str = "a config dump entry object";
}

impl<'de, T: Deserialize<'de> + ObjectName> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + ObjectName> Visitor<'de> for V<T> {
            type Value = ObjectOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::EXPECTING)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(ObjectOnly)
            }
        }
        deserializer.deserialize_map(V(PhantomData))
    }
}
