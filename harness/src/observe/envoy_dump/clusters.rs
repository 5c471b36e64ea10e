//! Envoy's clusters as an admin `/config_dump` holds them: per cluster its name, where Envoy
//! got it (bootstrap or CDS), whether it is active or still warming, and the upstream HTTP
//! protocol Envoy will speak to it. One job: the `ClustersConfigDump` entry of a dump, read into
//! [`ClusterFact`]s; nothing about listeners.
//!
//! The protocol is read from the cluster's
//! `typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]`
//! (its `upstream_protocol_options` oneof), the field Cilium's operator sets in
//! `operator/pkg/model/translation/envoy_cluster.go` and Cilium's agent fills in
//! `pkg/ciliumenvoyconfig/cec_resource_parser.go` when it is unset. Envoy's dump writes proto
//! field names (`use_downstream_protocol_config`); the JSON names (`useDownstreamProtocolConfig`)
//! are read too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DumpError;
pub use crate::types::UpstreamProtocol;

/// The `@type` of Envoy's admin dump entry holding the clusters.
const CLUSTERS_DUMP: &str = "type.googleapis.com/envoy.admin.v3.ClustersConfigDump";
/// The key of the upstream HTTP protocol options in `typed_extension_protocol_options`.
pub const HTTP_PROTOCOL_OPTIONS: &str = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
/// The bootstrap's own cluster to Cilium's agent (the operator lane's xDS source): not a
/// Gateway's, never reported.
const XDS_CLUSTER: &str = "xds-grpc-cilium";

/// Where Envoy got a cluster from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterSource {
    /// The bootstrap's `static_resources` (the model lane and the emulated agent step).
    Static,
    /// CDS (Cilium's agent through the bridge).
    Dynamic,
}

/// Whether Envoy uses the cluster yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterState {
    Active,
    /// Waiting for its endpoints (EDS) or its initial fetch timeout.
    Warming,
}

/// One cluster of the dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterFact {
    /// As Envoy names it: `<ns>/cilium-gateway-<gw>/<ns>:<svc>:<port>` from Cilium's agent,
    /// `<ns>:<svc>:<port>` from the model.
    pub name: String,
    pub source: ClusterSource,
    pub state: ClusterState,
    pub protocol: UpstreamProtocol,
}

impl ClusterFact {
    /// The backend the cluster is for, `<service>:<port>` (Cilium's cluster names end in
    /// `<namespace>:<service>:<port>`); `None` for a name of another shape.
    pub fn backend(&self) -> Option<String> {
        let last = self.name.rsplit('/').next().unwrap_or(&self.name);
        let mut parts = last.rsplitn(3, ':');
        let port = parts.next()?;
        let service = parts.next()?;
        parts.next()?;
        (port.parse::<u16>().is_ok() && !service.is_empty()).then(|| format!("{service}:{port}"))
    }
}

/// Every cluster of a full admin `/config_dump` (or of `?resource=` one of the cluster
/// sections): static, dynamic active and dynamic warming, in dump order, without the bootstrap's
/// xDS cluster. A dump without a clusters entry has none. `origin` names the input in errors.
pub fn clusters_from_dump(bytes: &[u8], origin: &str) -> Result<Vec<ClusterFact>, DumpError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| DumpError::Parse {
        origin: origin.to_string(),
        path: None,
        message: e.to_string(),
        line: Some(e.line()),
        column: Some(e.column()),
    })?;
    let Some(configs) = v.get("configs").and_then(Value::as_array) else {
        return Err(DumpError::shape(origin, None, "not an Envoy config dump: no `configs` list"));
    };
    let mut out = Vec::new();
    for (i, entry) in configs.iter().enumerate() {
        let ty = entry.get("@type").and_then(Value::as_str).unwrap_or_default();
        let at = format!("configs[{i}]");
        if ty == CLUSTERS_DUMP {
            for (section, source, state) in [
                ("static_clusters", ClusterSource::Static, ClusterState::Active),
                ("dynamic_active_clusters", ClusterSource::Dynamic, ClusterState::Active),
                ("dynamic_warming_clusters", ClusterSource::Dynamic, ClusterState::Warming),
            ] {
                read_section(origin, &format!("{at}.{section}"), entry.get(section), source, state, &mut out)?;
            }
        } else if ty.ends_with(".ClustersConfigDump.StaticCluster") || ty.ends_with(".ClustersConfigDump.DynamicCluster") {
            // `?resource=dynamic_active_clusters` (and the others) list the entries themselves.
            let source = if ty.ends_with("StaticCluster") { ClusterSource::Static } else { ClusterSource::Dynamic };
            read_one(origin, &at, entry, source, ClusterState::Active, &mut out)?;
        }
    }
    Ok(out)
}

fn read_section(
    origin: &str,
    at: &str,
    section: Option<&Value>,
    source: ClusterSource,
    state: ClusterState,
    out: &mut Vec<ClusterFact>,
) -> Result<(), DumpError> {
    let Some(section) = section else { return Ok(()) };
    let Some(list) = section.as_array() else {
        return Err(DumpError::shape(origin, Some(at.to_string()), "expected a list of clusters"));
    };
    for (j, e) in list.iter().enumerate() {
        read_one(origin, &format!("{at}[{j}]"), e, source, state, out)?;
    }
    Ok(())
}

fn read_one(
    origin: &str,
    at: &str,
    e: &Value,
    source: ClusterSource,
    state: ClusterState,
    out: &mut Vec<ClusterFact>,
) -> Result<(), DumpError> {
    let Some(cluster) = e.get("cluster") else {
        return Err(DumpError::shape(origin, Some(at.to_string()), "no `cluster`"));
    };
    let Some(name) = cluster.get("name").and_then(Value::as_str) else {
        return Err(DumpError::shape(origin, Some(format!("{at}.cluster.name")), "a cluster without a name"));
    };
    if name == XDS_CLUSTER {
        return Ok(());
    }
    let protocol = protocol_of(cluster)
        .map_err(|m| DumpError::shape(origin, Some(format!("{at}.cluster.{m}")), "not an upstream protocol Envoy knows"))?;
    out.push(ClusterFact { name: name.to_string(), source, state, protocol });
    Ok(())
}

/// `a.b` in proto field names, or its JSON name.
fn field<'a>(v: &'a Value, proto: &str, json: &str) -> Option<&'a Value> {
    v.get(proto).or_else(|| v.get(json))
}

/// The upstream protocol of one cluster (Envoy JSON). `Err` names the field that holds an
/// options message of no known shape.
pub fn protocol_of(cluster: &Value) -> Result<UpstreamProtocol, String> {
    let Some(opts) =
        field(cluster, "typed_extension_protocol_options", "typedExtensionProtocolOptions").and_then(|m| m.get(HTTP_PROTOCOL_OPTIONS))
    else {
        return Ok(UpstreamProtocol::None);
    };
    let at = "typed_extension_protocol_options";
    if let Some(d) = field(opts, "use_downstream_protocol_config", "useDownstreamProtocolConfig") {
        return Ok(if field(d, "http2_protocol_options", "http2ProtocolOptions").is_some() {
            UpstreamProtocol::Downstream
        } else {
            UpstreamProtocol::DownstreamHttp1
        });
    }
    if field(opts, "auto_config", "autoConfig").is_some() {
        return Ok(UpstreamProtocol::Auto);
    }
    if let Some(e) = field(opts, "explicit_http_config", "explicitHttpConfig") {
        for (proto, json, p) in [
            ("http_protocol_options", "httpProtocolOptions", UpstreamProtocol::Http1),
            ("http2_protocol_options", "http2ProtocolOptions", UpstreamProtocol::Http2),
            ("http3_protocol_options", "http3ProtocolOptions", UpstreamProtocol::Http3),
        ] {
            if field(e, proto, json).is_some() {
                return Ok(p);
            }
        }
        return Err(format!("{at}.explicit_http_config"));
    }
    Ok(UpstreamProtocol::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape Envoy 1.40's admin `/config_dump` writes (trimmed to the clusters entry and a
    /// listeners entry), with a cluster from Cilium's agent as the operator lane saw it.
    fn dump() -> Value {
        json!({"configs": [
            {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap": {}},
            {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
             "version_info": "3",
             "static_clusters": [
                {"cluster": {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "xds-grpc-cilium", "type": "STATIC",
                    "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {"@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "explicit_http_config": {"http2_protocol_options": {}}}}},
                 "last_updated": "2026-12-06T18:00:00.000Z"}
             ],
             "dynamic_active_clusters": [
                {"version_info": "3", "cluster": {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                    "name": "ns/cilium-gateway-gw/ns:api:443", "type": "EDS",
                    "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {
                        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                        "use_downstream_protocol_config": {"http2_protocol_options": {}},
                        "http_filters": [{"name": "envoy.filters.http.upstream_codec", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec"}}]}}},
                 "last_updated": "2026-12-06T18:00:01.000Z"},
                {"version_info": "3", "cluster": {"name": "ns/cilium-gateway-gw/ns:web:80", "type": "EDS",
                    "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {
                        "common_http_protocol_options": {"idle_timeout": "60s"},
                        "explicit_http_config": {"http_protocol_options": {}}}}}},
                {"version_info": "3", "cluster": {"name": "ns/cilium-gateway-gw/ns:grpc:8080", "type": "EDS",
                    "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {"explicit_http_config": {"http2_protocol_options": {}}}}}}
             ],
             "dynamic_warming_clusters": [
                {"version_info": "4", "cluster": {"name": "ns/cilium-gateway-gw/ns:empty:80", "type": "EDS"}}
             ]},
            {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"}
        ]})
    }

    #[test]
    fn every_cluster_with_its_protocol_and_state_without_the_xds_cluster() {
        let facts = clusters_from_dump(dump().to_string().as_bytes(), "dump.json").unwrap();
        let got: Vec<(&str, UpstreamProtocol, ClusterState, ClusterSource)> =
            facts.iter().map(|f| (f.name.as_str(), f.protocol, f.state, f.source)).collect();
        assert_eq!(
            got,
            [
                ("ns/cilium-gateway-gw/ns:api:443", UpstreamProtocol::Downstream, ClusterState::Active, ClusterSource::Dynamic),
                ("ns/cilium-gateway-gw/ns:web:80", UpstreamProtocol::Http1, ClusterState::Active, ClusterSource::Dynamic),
                ("ns/cilium-gateway-gw/ns:grpc:8080", UpstreamProtocol::Http2, ClusterState::Active, ClusterSource::Dynamic),
                ("ns/cilium-gateway-gw/ns:empty:80", UpstreamProtocol::None, ClusterState::Warming, ClusterSource::Dynamic),
            ]
        );
        assert_eq!(facts[0].backend().as_deref(), Some("api:443"));
    }

    #[test]
    fn the_model_lanes_static_clusters_are_read_and_named_by_backend() {
        let d = json!({"configs": [{"@type": CLUSTERS_DUMP, "static_clusters": [
            {"cluster": {"name": "lg-x:web:80", "type": "STATIC",
                "typedExtensionProtocolOptions": {HTTP_PROTOCOL_OPTIONS: {"useDownstreamProtocolConfig": {}}}}},
            {"cluster": {"name": "lg-x:api:443", "type": "STATIC",
                "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {"auto_config": {}}}}}
        ]}]});
        let facts = clusters_from_dump(d.to_string().as_bytes(), "dump.json").unwrap();
        assert_eq!(facts[0].protocol, UpstreamProtocol::DownstreamHttp1);
        assert_eq!(facts[0].source, ClusterSource::Static);
        assert_eq!(facts[0].backend().as_deref(), Some("web:80"));
        assert_eq!(facts[1].protocol, UpstreamProtocol::Auto);
    }

    #[test]
    fn a_resource_query_lists_the_clusters_themselves() {
        let d = json!({"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster",
            "cluster": {"name": "ns/cilium-gateway-gw/ns:api:443"}}]});
        let facts = clusters_from_dump(d.to_string().as_bytes(), "q.json").unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].protocol, UpstreamProtocol::None);
    }

    #[test]
    fn bad_input_names_the_origin_and_the_field() {
        let e = clusters_from_dump(b"{\"configs\": 3}", "dump.json").unwrap_err().to_string();
        assert!(e.starts_with("dump.json: not an Envoy config dump"), "{e}");
        let d = json!({"configs": [{"@type": CLUSTERS_DUMP, "dynamic_active_clusters": [{"cluster": {"type": "EDS"}}]}]});
        let e = clusters_from_dump(d.to_string().as_bytes(), "dump.json").unwrap_err().to_string();
        assert_eq!(e, "dump.json: configs[0].dynamic_active_clusters[0].cluster.name: a cluster without a name");
        let d = json!({"configs": [{"@type": CLUSTERS_DUMP, "dynamic_active_clusters": [{"cluster": {"name": "c",
            "typed_extension_protocol_options": {HTTP_PROTOCOL_OPTIONS: {"explicit_http_config": {}}}}}]}]});
        let e = clusters_from_dump(d.to_string().as_bytes(), "dump.json").unwrap_err().to_string();
        assert!(e.contains("configs[0].dynamic_active_clusters[0].cluster.typed_extension_protocol_options.explicit_http_config"), "{e}");
        let e = clusters_from_dump(b"{", "dump.json").unwrap_err().to_string();
        assert!(e.starts_with("dump.json: ") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn the_protocol_names_round_trip_and_are_seven() {
        for p in UpstreamProtocol::ALL {
            assert_eq!(UpstreamProtocol::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), json!(p.as_str()));
        }
        assert_eq!(UpstreamProtocol::parse("h2"), None);
        assert_eq!(UpstreamProtocol::names(), "none, downstream, downstream-http1, http1, http2, http3, auto");
    }
}
