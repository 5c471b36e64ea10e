//! Unit tests per input shape and edge. Fixture-based ones read the committed real dumps;
//! edge cases use small inline documents so each test shows exactly what it exercises.

use std::path::{Path, PathBuf};

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/envoy-dumps").join(name)
}

fn load(name: &str) -> DumpSummary {
    summarize_path(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(doc: &str) -> Result<DumpSummary, DumpError> {
    summarize_bytes(doc.as_bytes(), "dump.json", false)
}

fn err(doc: &str) -> String {
    match json(doc) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e.to_string(),
    }
}

const DYN: &str = "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener";

/// A `?resource=dynamic_listeners` dump with the given entries.
fn dynamic(entries: &[String]) -> String {
    format!("{{\"configs\": [{}]}}", entries.join(","))
}

fn listener_json(name: &str, port: u32, chains: &str) -> String {
    format!(
        r#"{{"name": "{name}", "address": {{"socket_address": {{"address": "127.0.0.1", "port_value": {port}}}}}, "filter_chains": [{chains}]}}"#
    )
}

fn tcp_chain(sni: &str, cluster: &str) -> String {
    format!(
        r#"{{"filter_chain_match": {{"server_names": ["{sni}"], "transport_protocol": "tls"}}, "filters": [{{"name": "envoy.filters.network.tcp_proxy", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", "cluster": "{cluster}"}}}}]}}"#
    )
}

// ---- full /config_dump ----

#[test]
fn full_dump_static_listener_with_default_chain_and_file_certs() {
    let s = load("envoy-static-full.json");
    assert_eq!(s.listeners.len(), 1);
    let l = s.listener("listener-secure").expect("listener");
    assert_eq!(l.source, ListenerSource::Static);
    assert_eq!(l.state, ListenerState::Active);
    assert_eq!(l.addresses, vec!["127.0.0.1:20443"]);
    assert_eq!(l.filter_chain_count(), 2);
    let pass = &l.filter_chains[0];
    assert_eq!(pass.name.as_deref(), Some("passthrough-api.example.test"));
    assert_eq!(pass.filter_chain_match.server_names, vec!["api.example.test"]);
    assert_eq!(pass.filter_chain_match.transport_protocol.as_deref(), Some("tls"));
    assert_eq!(pass.action.target().as_deref(), Some("backend-api"));
    assert_eq!(pass.action.kind(), "tcp_proxy");
    assert!(pass.tls.is_none());
    let term = &l.filter_chains[1];
    assert_eq!(term.action, ChainAction::Http { route_config: Some("wildcard".into()), rds: false });
    let tls = term.tls.as_ref().expect("terminating chain");
    assert_eq!(tls.alpn, vec!["h2", "http/1.1"]);
    assert!(matches!(&tls.certificates[..], [CertificateSource::File { path }] if path.ends_with("/wildcard.crt")));
    let default = l.default_filter_chain.as_ref().expect("default chain");
    assert_eq!(default.tls.as_ref().expect("tls").certificates[0].label(), "default.crt");
}

#[test]
fn full_dump_dynamic_listener_keeps_active_chains_and_rejection() {
    let s = load("envoy-lds-v2-full.json");
    assert_eq!(s.listeners.len(), 1, "nameless entry must not become a listener: {s:?}");
    let l = &s.listeners[0];
    assert_eq!((l.source, l.state), (ListenerSource::Dynamic, ListenerState::Active));
    assert_eq!(l.version_info.as_deref(), Some("1"));
    assert_eq!(l.filter_chains[1].filter_chain_match.server_names, vec!["*.example.test"]);
    assert!(l.error.as_deref().is_some_and(|e| e.contains("has the same matching rules")));
}

#[test]
fn config_types_other_than_listeners_are_ignored() {
    let doc = r#"{"configs": [
        {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap": {"node": {"id": "x"}}},
        {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "version_info": "7", "static_clusters": [{"cluster": {"name": "c"}}]},
        {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump", "dynamic_route_configs": [{"route_config": {"name": "r"}}]}
    ]}"#;
    assert_eq!(json(doc).expect("summary").listeners, vec![]);
}

// ---- ?resource= views ----

#[test]
fn static_listeners_resource_view() {
    let s = load("envoy-static-listeners.json");
    let l = s.listener("listener-secure").expect("listener");
    assert_eq!(l.source, ListenerSource::Static);
    assert_eq!(l.filter_chain_count(), 2);
    assert!(l.default_filter_chain.is_some());
}

#[test]
fn nameless_error_entry_is_folded_into_the_named_listener() {
    for f in ["envoy-lds-v2-dynamic.json", "ref-lds-v2-bad-duplicate-server_names.json"] {
        let s = load(f);
        assert_eq!(s.listeners.len(), 1, "{f}: {s:?}");
        let l = &s.listeners[0];
        assert_eq!(l.name, "listener-secure");
        assert_eq!(l.state, ListenerState::Active, "{f}");
        assert_eq!(l.filter_chain_count(), 2, "{f}: chains of the accepted version");
        assert!(l.error.as_deref().is_some_and(|e| e.starts_with("error adding listener")), "{f}");
    }
}

#[test]
fn nameless_error_entry_folds_even_when_listed_first() {
    let details = "error adding listener '127.0.0.1:1': boom";
    let nameless = format!(r#"{{"@type": "{DYN}", "error_state": {{"failed_configuration": {{"name": "l"}}, "details": "{details}"}}}}"#);
    let named = format!(
        r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"version_info": "1", "listener": {}}}}}"#,
        listener_json("l", 1, &tcp_chain("a.test", "c"))
    );
    let s = json(&dynamic(&[nameless, named])).expect("summary");
    assert_eq!(s.listeners.len(), 1);
    assert_eq!(s.listeners[0].state, ListenerState::Active);
    assert_eq!(s.listeners[0].error.as_deref(), Some(details));
}

#[test]
fn error_only_listener_has_state_error_and_no_chains() {
    for f in ["envoy-lds-v3-dynamic.json", "ref-lds-v3-good-plus-new-bad-listener.json"] {
        let s = load(f);
        assert_eq!(s.listeners.len(), 2, "{f}: {s:?}");
        let good = s.listener("listener-secure").expect("listener-secure");
        assert_eq!((good.state, good.error.as_ref()), (ListenerState::Active, None), "{f}");
        let bad = s.listener("listener-two").expect("listener-two");
        assert_eq!(bad.state, ListenerState::Error, "{f}");
        assert_eq!(bad.filter_chain_count(), 0, "{f}: rejected chains are not served");
        assert!(bad.addresses[0].ends_with(":20446") || bad.addresses[0].ends_with(":10446"));
        assert!(bad.error.as_deref().is_some_and(|e| e.contains("same matching rules")));
    }
}

#[test]
fn nameless_error_without_named_entry_is_its_own_error_listener() {
    let nameless = format!(
        r#"{{"@type": "{DYN}", "error_state": {{"failed_configuration": {}, "details": "rejected"}}}}"#,
        listener_json("ns/cec/listener", 8443, &tcp_chain("a.test", "c"))
    );
    let s = json(&dynamic(&[nameless])).expect("summary");
    assert_eq!(s.listeners.len(), 1);
    let l = &s.listeners[0];
    assert_eq!((l.name.as_str(), l.state), ("ns/cec/listener", ListenerState::Error));
    assert_eq!(l.addresses, vec!["127.0.0.1:8443"]);
    assert_eq!(l.error.as_deref(), Some("rejected"));
    assert_eq!(l.filter_chain_count(), 0);
}

#[test]
fn warming_and_draining_states() {
    let s = load("envoy-lds-v4-dynamic.json");
    let secure = s.listener("listener-secure").expect("listener-secure");
    assert_eq!(secure.state, ListenerState::Active);
    assert_eq!(secure.other_states, vec![ListenerState::Draining]);
    assert_eq!(secure.version_info.as_deref(), Some("4"), "chains come from the active version");
    assert!(secure.default_filter_chain.is_none(), "v4 dropped the default chain");
    let three = s.listener("listener-three").expect("listener-three");
    assert_eq!(three.state, ListenerState::Warming);
    assert_eq!(three.filter_chains[0].action, ChainAction::Http { route_config: Some("listener-insecure".into()), rds: true });
}

#[test]
fn warming_only_and_draining_only_listeners() {
    let entry = |state: &str| {
        format!(
            r#"{{"@type": "{DYN}", "name": "{state}", "{state}_state": {{"version_info": "9", "listener": {}}}}}"#,
            listener_json(state, 1, "")
        )
    };
    let s = json(&dynamic(&[entry("warming"), entry("draining")])).expect("summary");
    assert_eq!(s.listener("warming").expect("w").state, ListenerState::Warming);
    assert_eq!(s.listener("draining").expect("d").state, ListenerState::Draining);
    assert_eq!(s.listener("draining").expect("d").version_info.as_deref(), Some("9"));
}

#[test]
fn additional_pipe_and_ipv6_addresses() {
    let s = load("envoy-lds-v4-dynamic.json");
    let three = s.listener("listener-three").expect("listener-three");
    assert_eq!(three.addresses, vec!["127.0.0.1:20448", "127.0.0.2:20448"]);

    let doc = format!(
        r#"{{"configs": [{{"@type": "{DYN}", "name": "p", "active_state": {{"listener": {{"name": "p",
            "address": {{"pipe": {{"path": "/run/admin.sock"}}}},
            "additional_addresses": [{{"address": {{"socket_address": {{"address": "::1", "port_value": 443}}}}}}]}}}}}}]}}"#
    );
    let s = json(&doc).expect("summary");
    assert_eq!(s.listeners[0].addresses, vec!["pipe:/run/admin.sock", "[::1]:443"]);
}

// ---- CiliumEnvoyConfig ----

fn assert_worked_example(s: &DumpSummary) {
    assert_eq!(s.listeners.len(), 1, "route configs and clusters are not listeners");
    let l = s.listener("listener").expect("by short name");
    assert_eq!(l.name, "ns/cilium-gateway-gw/listener");
    assert_eq!(l.short_name(), "listener");
    assert_eq!((l.source, l.state), (ListenerSource::Cec, ListenerState::Active));
    assert!(l.addresses.is_empty(), "Cilium leaves the address to the agent");
    assert_eq!(l.filter_chain_count(), 3);
    let [plain, wild, api] = &l.filter_chains[..] else { panic!("3 chains") };
    assert_eq!(plain.filter_chain_match.transport_protocol.as_deref(), Some("raw_buffer"));
    assert_eq!(plain.action, ChainAction::Http { route_config: Some("listener-insecure".into()), rds: true });
    assert_eq!(wild.filter_chain_match.server_names, vec!["*.example.com"]);
    assert_eq!(wild.tls.as_ref().expect("terminates").certificates, vec![CertificateSource::Sds { name: "cilium-secrets/ns-wild".into() }]);
    assert_eq!(api.action.target().as_deref(), Some("ns:api:443"), "cilium.network is skipped");
    assert!(api.tls.is_none());
}

#[test]
fn cec_json_in_camel_case() {
    let s = load("cec-worked-example.json");
    assert_worked_example(&s);
    assert!(s.listener("ns/cilium-gateway-gw/listener").is_some(), "by full name");
}

#[test]
fn cec_yaml_list() {
    assert_worked_example(&load("cec-worked-example-list.yaml"));
}

#[test]
fn cec_json_and_yaml_fixtures_agree() {
    assert_eq!(load("cec-worked-example.json"), load("cec-worked-example-list.yaml"));
}

#[test]
fn clusterwide_cec_and_qualified_names() {
    let doc = r#"
kind: CiliumClusterwideEnvoyConfig
metadata: {name: ccec}
spec:
  resources:
  - "@type": type.googleapis.com/envoy.config.listener.v3.Listener
    name: l1
  - "@type": type.googleapis.com/envoy.config.listener.v3.Listener
    name: already/qualified/l2
"#;
    let s = summarize_bytes(doc.as_bytes(), "c.yaml", true).expect("summary");
    let names: Vec<&str> = s.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, vec!["already/qualified/l2", "ccec/l1"]);
}

#[test]
fn list_with_a_non_cec_item_is_an_error() {
    let e = err(r#"{"kind": "List", "items": [{"kind": "Gateway", "metadata": {"name": "gw"}}]}"#);
    assert!(e.contains("items[0].kind"), "{e}");
    assert!(e.contains("\"Gateway\""), "{e}");
}

// ---- chain details ----

#[test]
fn weighted_clusters() {
    let chain = r#"{"filters": [{"name": "cilium.network"}, {"name": "envoy.filters.network.tcp_proxy", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
        "weighted_clusters": {"clusters": [{"name": "ns:a:443", "weight": 70}, {"name": "ns:b:443", "weight": 30}]}}}]}"#;
    let doc = dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 1, chain))]);
    let s = json(&doc).expect("summary");
    let action = &s.listeners[0].filter_chains[0].action;
    assert_eq!(
        *action,
        ChainAction::TcpProxy {
            cluster: None,
            weighted_clusters: vec![
                WeightedCluster { name: "ns:a:443".into(), weight: Some(70) },
                WeightedCluster { name: "ns:b:443".into(), weight: Some(30) },
            ],
        }
    );
    assert_eq!(action.target().as_deref(), Some("ns:a:443(70),ns:b:443(30)"));
}

#[test]
fn certificate_sources_file_inline_and_sds() {
    let chain = r#"{"transport_socket": {"name": "envoy.transport_sockets.tls", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
        "common_tls_context": {
          "tls_certificates": [
            {"certificate_chain": {"filename": "/certs/a.crt"}, "private_key": {"filename": "/certs/a.key"}},
            {"certificate_chain": {"inline_string": "-----BEGIN CERTIFICATE-----"}, "private_key": {"inline_string": "[redacted]"}}],
          "tls_certificate_sds_secret_configs": [{"name": "cilium-secrets/ns-wild", "sds_config": {"ads": {}}}]}}},
      "filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "route_config": {"name": "inline-routes", "virtual_hosts": []}}}]}"#;
    let doc = dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 1, chain))]);
    let s = json(&doc).expect("summary");
    let c = &s.listeners[0].filter_chains[0];
    let certs = &c.tls.as_ref().expect("tls").certificates;
    assert_eq!(
        *certs,
        vec![
            CertificateSource::File { path: "/certs/a.crt".into() },
            CertificateSource::Inline,
            CertificateSource::Sds { name: "cilium-secrets/ns-wild".into() },
        ]
    );
    let labels: Vec<String> = certs.iter().map(CertificateSource::label).collect();
    assert_eq!(labels, vec!["a.crt", "inline", "sds:cilium-secrets/ns-wild"]);
    assert_eq!(c.action, ChainAction::Http { route_config: Some("inline-routes".into()), rds: false });
    assert!(!serde_json::to_string(&s).expect("ser").contains("BEGIN CERTIFICATE"));
}

#[test]
fn other_filters_and_odd_typed_configs() {
    // A Dubbo-style list-valued route_config and an object-valued cluster belong to other
    // filters: they must not fail the dump.
    let chain = r#"{"filter_chain_match": {"destination_port": 8443}, "filters": [
        {"name": "envoy.filters.network.rbac", "typed_config": {"@type": "x.RBAC", "cluster": {"odd": 1}}},
        {"name": "envoy.filters.network.dubbo_proxy", "typed_config": {"@type": "x.DubboProxy", "route_config": [{"name": "r"}]}}]}"#;
    let doc = dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 1, chain))]);
    let s = json(&doc).expect("summary");
    let c = &s.listeners[0].filter_chains[0];
    assert_eq!(c.filter_chain_match.destination_port, Some(8443));
    assert_eq!(
        c.action,
        ChainAction::Other { filters: vec!["envoy.filters.network.rbac".into(), "envoy.filters.network.dubbo_proxy".into()] }
    );
    assert_eq!(c.action.target(), None);
}

#[test]
fn default_chain_present_absent_and_elided() {
    let s = load("ref-lds-v1-good.json");
    assert!(s.listeners[0].default_filter_chain.is_some(), "\"...\" means a chain was there");
    assert!(load("envoy-lds-v4-dynamic.json").listener("listener-secure").expect("l").default_filter_chain.is_none());
    let e = err(&dynamic(&[format!(
        r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {{"name": "l", "default_filter_chain": "nope"}}}}}}"#
    )]));
    assert!(e.contains("configs[0].active_state.listener.default_filter_chain: invalid type: string \"nope\""), "{e}");
}

// ---- bad shapes ----

#[test]
fn not_json_reports_line_and_column() {
    let e = err("{\n  \"configs\": [\n    oops\n  ]\n}");
    assert!(e.starts_with("dump.json: "), "{e}");
    assert!(e.contains("not valid JSON"), "{e}");
    assert!(e.contains("(line 3, column 5)"), "{e}");
}

#[test]
fn wrong_type_at_a_field_names_the_path() {
    let doc = format!(
        "{{\"configs\": [\n {{\"@type\": \"{DYN}\", \"name\": \"l\",\n  \"active_state\": {{\"listener\": {{\"name\": \"l\",\n   \"filter_chains\": \"oops\"}}}}}}]}}"
    );
    let e = err(&doc);
    assert_eq!(
        e,
        "dump.json: configs[0].active_state.listener.filter_chains: invalid type: string \"oops\", \
         expected a sequence (line 4, column 26)"
    );
}

#[test]
fn wrong_type_deep_in_a_full_dump() {
    let doc = r#"{"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
      "dynamic_listeners": [{"name": "a", "active_state": {"listener": {"name": "a",
        "filter_chains": [{"filter_chain_match": {"server_names": "a.test"}}]}}}]}]}"#;
    let e = err(doc);
    assert!(
        e.contains(
            "configs[0].dynamic_listeners[0].active_state.listener.filter_chains[0].filter_chain_match.server_names: invalid type: string"
        ),
        "{e}"
    );
}

#[test]
fn configs_entry_that_is_not_an_object() {
    let e = err(r#"{"configs": [{"@type": "x"}, "listener"]}"#);
    assert!(e.starts_with("dump.json: configs[1]: invalid type: string \"listener\", expected a config dump entry object"), "{e}");
}

#[test]
fn top_level_shapes_that_are_not_dumps() {
    assert!(err("[1, 2]").contains("expected an object (an Envoy config dump"));
    assert!(err("{\"other\": 1}").contains("neither an Envoy config dump"));
    assert!(err(r#"{"kind": "Gateway"}"#).contains("kind: \"Gateway\" is not a CiliumEnvoyConfig"));
    assert!(err(r#"{"configs": []} {"configs": []}"#).contains("trailing characters"));
    assert_eq!(json(r#"{"configs": []}"#).expect("empty dump").listeners, vec![]);
}

#[test]
fn yaml_errors_name_the_field() {
    let doc = "kind: CiliumEnvoyConfig\nmetadata: {name: a, namespace: b}\nspec:\n  resources:\n  - \"@type\": type.googleapis.com/envoy.config.listener.v3.Listener\n    name: l\n    filterChains: oops\n";
    let e = summarize_bytes(doc.as_bytes(), "cec.yaml", true).expect_err("type error").to_string();
    assert!(e.starts_with("cec.yaml: spec.resources[0].filterChains: "), "{e}");
    assert!(e.contains("(line 7, column "), "{e}");
}

/// A listener port is 0-65535 (0: an ephemeral port, what both lanes give a listener no
/// Gateway port reaches) and a chain's `destination_port` 1-65535: outside, an error at its
/// path, in JSON and in YAML.
#[test]
fn ports_outside_their_range_are_errors_at_their_path() {
    for port in [70000u32, 65536] {
        let doc =
            dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", port, ""))]);
        let e = err(&doc);
        assert!(e.starts_with("dump.json: configs[0].active_state.listener.address.socket_address.port_value: "), "{e}");
        assert!(e.contains(&format!("port {port} is outside 0-65535")), "{e}");
    }
    let ephemeral =
        dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 0, ""))]);
    assert_eq!(json(&ephemeral).expect("port 0").listeners[0].addresses, ["127.0.0.1:0"]);
    let chain = r#"{"filter_chain_match": {"destination_port": 0}}"#;
    let doc =
        dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 443, chain))]);
    assert!(err(&doc).contains("filter_chains[0].filter_chain_match.destination_port: port 0 is outside 1-65535"));
    assert_eq!(
        json(&dynamic(&[format!(
            r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#,
            listener_json("l", 65535, "")
        )]))
        .expect("65535")
        .listeners[0]
            .addresses,
        ["127.0.0.1:65535"]
    );
    let chain = r#"{"filter_chain_match": {"destination_port": 70000}}"#;
    let doc =
        dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 443, chain))]);
    assert!(err(&doc).contains("filter_chains[0].filter_chain_match.destination_port: port 70000 is outside 1-65535"));
    let yaml = "kind: CiliumEnvoyConfig\nmetadata: {name: a, namespace: b}\nspec:\n  resources:\n  - \"@type\": type.googleapis.com/envoy.config.listener.v3.Listener\n    name: l\n    address: {socketAddress: {address: 127.0.0.1, portValue: 70000}}\n";
    let e = summarize_bytes(yaml.as_bytes(), "cec.yaml", true).expect_err("port").to_string();
    assert!(e.starts_with("cec.yaml: spec.resources[0].address.socketAddress.portValue: port 70000 is outside 0-65535"), "{e}");
}

/// A key twice in one object is an error naming the object's path and the key, wherever it is:
/// in a field the summary reads, or in one it skips (whose second value a reader other than
/// this one might take instead).
#[test]
fn duplicate_keys_are_errors_at_their_path() {
    let listener = listener_json("l", 443, &tcp_chain("a.test", "c"));
    let cases = [
        (
            format!(r#"{{"configs": [{{"@type": "{DYN}", "name": "l", "x": 1, "x": 2, "active_state": {{"listener": {listener}}}}}]}}"#),
            "configs[0]",
            "x",
        ),
        (
            format!(
                r#"{{"configs": [{{"@type": "{DYN}", "name": "l", "active_state": {{"version_info": "1", "listener": {listener}, "extra": {{"a": 1, "a": 1}}}}}}]}}"#
            ),
            "configs[0].active_state.extra",
            "a",
        ),
        (
            format!(r#"{{"configs": [{{"@type": "{DYN}", "name": "l", "name": "m", "active_state": {{"listener": {listener}}}}}]}}"#),
            "configs[0]",
            "name",
        ),
    ];
    for (doc, path, key) in cases {
        let e = err(&doc);
        assert!(e.starts_with(&format!("dump.json: {path}: duplicate key `{key}`")), "{e}");
    }
    let yaml = "kind: CiliumEnvoyConfig\nmetadata: {name: a, namespace: b, other: 1, other: 2}\nspec:\n  resources: []\n";
    let e = summarize_bytes(yaml.as_bytes(), "cec.yaml", true).expect_err("duplicate").to_string();
    // Said as JSON's: the key and the object's path, and no option of the YAML library's.
    assert!(e.starts_with("cec.yaml: metadata: duplicate key `other` (line 2"), "{e}");
    assert!(!e.contains("DuplicateKeyPolicy") && !e.contains('?'), "{e}");
    let top = summarize_bytes(b"configs: []\nconfigs: []\n", "dump.yaml", true).expect_err("duplicate").to_string();
    assert!(top.starts_with("dump.yaml: duplicate key `configs` (line 2"), "{top}");
}

/// A name or SNI with spaces (or a comma) in a dump cannot pass for more columns or list items
/// in the table: it is quoted.
#[test]
fn table_values_cannot_forge_columns() {
    let doc = dynamic(&[format!(
        r#"{{"@type": "{DYN}", "name": "l  active", "active_state": {{"listener": {}}}}}"#,
        listener_json("l  active", 443, &tcp_chain("a.test,b.test  raw_buffer", "c"))
    )]);
    let table = render_table(&json(&doc).expect("summary"));
    let row = table.lines().nth(1).expect("a row");
    assert!(row.starts_with("\"l \\u{20}active\"  active"), "{table}");
    assert!(row.contains("  \"a.test,b.test \\u{20}raw_buffer\"  tls"), "{table}");
    // A reader splitting on two spaces, without reading quotes, finds no column inside either.
    assert_eq!(row.split("  ").filter(|c| !c.is_empty()).count(), 9, "{table}");
}

#[test]
fn listener_without_name_is_a_shape_error() {
    let doc = dynamic(&[format!(r#"{{"@type": "{DYN}", "active_state": {{"listener": {{}}}}}}"#)]);
    let e = json(&doc).expect_err("no name");
    assert_eq!(e.path(), Some("configs[0]"));
}

#[test]
fn unreadable_file_names_the_file() {
    let e = summarize_path(Path::new("/nonexistent/dump.json")).expect_err("missing");
    assert!(e.to_string().starts_with("/nonexistent/dump.json: cannot read"), "{e}");
}

#[test]
fn a_fifo_dump_is_refused_without_blocking() {
    // Before the bounded reader, `std::fs::read` blocked forever in `open` waiting for a writer.
    let d = tempfile::tempdir().expect("tmp");
    let fifo = d.path().join("dump.json");
    crate::output::dest::testing::fifo(&fifo);
    let e = summarize_path(&fifo).expect_err("fifo").to_string();
    assert!(e.ends_with("dump.json: cannot read: a FIFO, not a regular file"), "{e}");
}

#[test]
fn a_dump_over_the_limit_names_the_limit_and_how_to_raise_it() {
    let e = summarize_path_limited(&fixture("envoy-lds-v3-dynamic.json"), crate::input::Limit { bytes: 100, knob: Some("--max-bytes") })
        .expect_err("too large")
        .to_string();
    assert!(e.contains("cannot read: larger than the limit of 100 bytes (100 B); set --max-bytes to raise it"), "{e}");
}

/// Every prefix of every fixture, and byte flips, either summarize or fail cleanly; a failure
/// names the input, and a prefix cut inside the document is never taken for a whole dump.
#[test]
fn never_panics_on_truncated_or_mangled_input() {
    let check = |r: Result<DumpSummary, DumpError>, name: &str| {
        if let Err(e) = r {
            assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
        }
    };
    for name in ["envoy-lds-v3-dynamic.json", "cec-worked-example-list.yaml", "ref-lds-v2-bad-duplicate-server_names.json"] {
        let bytes = std::fs::read(fixture(name)).expect("fixture");
        let yaml = name.ends_with(".yaml");
        // The YAML parser is slow in debug builds; fewer, sparser cuts keep this test quick.
        let (cut_step, flip_step) = if yaml { (113, 251) } else { (37, 71) };
        let whole = summarize_bytes(&bytes, name, yaml).expect("the fixture itself summarizes");
        let mut refused = 0;
        for cut in (0..bytes.len()).step_by(cut_step) {
            let r = summarize_bytes(&bytes[..cut], name, yaml);
            if !yaml && cut > 1 {
                // A JSON document cut short is never complete.
                assert!(r.is_err(), "{name} cut at {cut} summarized");
            }
            if let Ok(s) = &r {
                assert!(s.listeners.len() <= whole.listeners.len().max(1) * 2, "{name} cut at {cut}: {s:?}");
            } else {
                refused += 1;
            }
            check(r, name);
        }
        assert!(refused > 0, "{name}: no truncation was refused");
        let mut mangled = bytes.clone();
        for i in (0..mangled.len()).step_by(flip_step) {
            let saved = mangled[i];
            for b in [b'"', b'{', b']', b'0', 0xff] {
                mangled[i] = b;
                check(summarize_bytes(&mangled, name, yaml), name);
            }
            mangled[i] = saved;
        }
    }
}

#[test]
fn deeply_nested_input_does_not_overflow_the_stack() {
    let depth = 100_000;
    let skipped = format!("{{\"configs\": [{{\"bootstrap\": {}{}}}]}}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(json(&skipped).expect("skipped subtree").listeners, vec![]);
    let lenient = format!(
        r#"{{"configs": [{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {{"name": "l", "filter_chains": [{{"filters": [{{"name": "x", "typed_config": {{"cluster": {}{}}}}}]}}]}}}}}}]}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let lenient = json(&lenient).expect("lenient subtree");
    assert_eq!(lenient.listeners[0].name, "l");
    assert_eq!(lenient.listeners[0].filter_chains.len(), 1);
    // A CEC whose spec is 100k nested lists is not a CEC: refused with the file named, not a
    // stack overflow and not an empty success.
    let yaml = format!("kind: CiliumEnvoyConfig\nspec: {}{}\n", "[".repeat(depth), "]".repeat(depth));
    let e = summarize_bytes(yaml.as_bytes(), "deep.yaml", true).expect_err("not a CEC spec").to_string();
    assert!(e.starts_with("deep.yaml: "), "{e}");
    // Nesting inside JSON that is read (not skipped) is refused cleanly too.
    let deep_chains = format!(
        r#"{{"configs": [{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {{"name": "l", "filter_chains": {}{}}}}}}}]}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    assert!(err(&deep_chains).starts_with("dump.json: "));
}

// ---- API helpers ----

#[test]
fn listener_lookup_prefers_full_name() {
    let mk = |name: &str| ListenerSummary {
        name: name.into(),
        source: ListenerSource::Cec,
        state: ListenerState::Active,
        other_states: vec![],
        version_info: None,
        addresses: vec![],
        filter_chains: vec![],
        default_filter_chain: None,
        error: None,
    };
    let s = DumpSummary { listeners: vec![mk("a/gw/listener"), mk("listener")] };
    assert_eq!(s.listener("listener").expect("l").name, "listener");
    assert_eq!(s.listener("a/gw/listener").expect("l").name, "a/gw/listener");
    assert!(s.listener("listener-443").is_none());
    assert_eq!(mk("ns/gw/listener-443").short_name(), "listener-443");
}

#[test]
fn summary_round_trips_through_serde() {
    let s = load("envoy-lds-v4-dynamic.json");
    let text = serde_json::to_string(&s).expect("serialize");
    let back: DumpSummary = serde_json::from_str(&text).expect("deserialize");
    assert_eq!(back, s);
}

#[test]
fn contract_json_shape() {
    let v = to_contract_json(&load("envoy-lds-v3-dynamic.json"));
    let listeners = v["listeners"].as_array().expect("array");
    let l = &listeners[0];
    let mut keys: Vec<&str> = l.as_object().expect("obj").keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["addresses", "chains", "default_filter_chain", "error", "filter_chains", "name", "state"]);
    let c = &l["chains"][0];
    let mut ckeys: Vec<&str> = c.as_object().expect("obj").keys().map(String::as_str).collect();
    ckeys.sort();
    assert_eq!(ckeys, ["action", "server_names", "target", "tls_terminated", "transport_protocol"]);
    assert_eq!(l["filter_chains"], 2);
    assert_eq!(listeners[1]["state"], "error");
    assert!(listeners[1]["error"].is_string());
    assert_eq!(l["error"], serde_json::Value::Null);
}

#[test]
fn table_escapes_control_characters_from_the_dump() {
    let chain = tcp_chain(r"evil\u001b[2J.test", r"c\u0007");
    let doc = dynamic(&[format!(
        r#"{{"@type": "{DYN}", "name": "l\r", "active_state": {{"listener": {}}}, "error_state": {{"details": "bad\u001b]0;x"}}}}"#,
        listener_json(r"l\r", 1, &chain)
    )]);
    let t = render_table(&json(&doc).expect("summary"));
    assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
    assert!(t.contains("evil\\u{1b}[2J.test") && t.contains("c\\u{7}") && t.contains("l\\r"), "{t}");
}

#[test]
fn table_rows_default_chain_empty_listener_and_errors() {
    let t = render_table(&load("envoy-lds-v3-dynamic.json"));
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("LISTENER") && lines[0].ends_with("TLS"), "{t}");
    assert!(lines.iter().any(|l| l.contains("(default)") && l.ends_with("default.crt")), "{t}");
    assert!(lines.iter().any(|l| l.starts_with("listener-two") && l.contains(" error ")), "{t}");
    assert!(lines.iter().any(|l| l.starts_with("listener-two: error: error adding listener")), "{t}");
    let wild = lines.iter().find(|l| l.contains("*.example.test")).expect("wild row");
    assert!(wild.contains(" http ") && wild.contains(" wildcard ") && wild.ends_with("wildcard.crt"), "{wild}");
}

// ---- what a dump says, whichever way it is written ----

#[test]
fn entries_without_type_keep_their_listeners() {
    // Hand-made or filtered dumps drop `@type`; the fields say what the entry is.
    let full = format!(
        r#"{{"configs": [{{"dynamic_listeners": [{{"name": "d", "active_state": {{"listener": {}}}}}], "static_listeners": [{{"listener": {}}}]}}]}}"#,
        listener_json("d", 1, &tcp_chain("a.test", "ca")),
        listener_json("s", 2, &tcp_chain("b.test", "cb"))
    );
    let s = json(&full).expect("full dump without @type");
    let names: Vec<&str> = s.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["d", "s"]);
    assert_eq!(s.listener("d").expect("d").filter_chains[0].filter_chain_match.server_names, ["a.test"]);
    let dynamic = format!(
        r#"{{"configs": [{{"name": "d", "active_state": {{"listener": {}}}}}]}}"#,
        listener_json("d", 1, &tcp_chain("a.test", "ca"))
    );
    assert_eq!(json(&dynamic).expect("dynamic entry").listeners[0].filter_chains.len(), 1);
    let stat = format!(r#"{{"configs": [{{"listener": {}}}]}}"#, listener_json("s", 2, &tcp_chain("b.test", "cb")));
    assert_eq!(json(&stat).expect("static entry").listeners[0].name, "s");
    // Each dynamic-listener field alone marks an untyped entry as a dynamic listener, even a
    // nameless error entry (as Envoy lists a rejected update).
    let error_only =
        format!(r#"{{"configs": [{{"error_state": {{"failed_configuration": {}, "details": "rejected"}}}}]}}"#, listener_json("e", 3, ""));
    let s = json(&error_only).expect("error-only entry");
    assert_eq!(
        (s.listeners[0].name.as_str(), s.listeners[0].state, s.listeners[0].error.as_deref()),
        ("e", ListenerState::Error, Some("rejected"))
    );
    for state in ["warming_state", "draining_state"] {
        let doc = format!(r#"{{"configs": [{{"{state}": {{"listener": {}}}}}]}}"#, listener_json("w", 4, &tcp_chain("a.test", "ca")));
        assert_eq!(json(&doc).expect(state).listeners.len(), 1, "{state}");
    }
    // An entry of some other type is skipped, even with listener-like fields.
    let other = format!(r#"{{"configs": [{{"@type": "x.ClustersConfigDump", "name": "c", "listener": {}}}]}}"#, listener_json("s", 2, ""));
    assert!(json(&other).expect("other").listeners.is_empty());
}

fn action_of(filter: &str) -> ChainAction {
    let chain = format!(r#"{{"filters": [{filter}]}}"#);
    let doc =
        dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 1, &chain))]);
    json(&doc).expect("summary").listeners[0].filter_chains[0].action.clone()
}

#[test]
fn tcp_proxy_and_hcm_are_known_by_name_or_by_type() {
    let tcp = |cluster: &str| ChainAction::TcpProxy { cluster: Some(cluster.into()), weighted_clusters: vec![] };
    // The name alone (old and new spellings), with an untyped or differently typed config.
    assert_eq!(action_of(r#"{"name": "envoy.filters.network.tcp_proxy", "typed_config": {"cluster": "a"}}"#), tcp("a"));
    assert_eq!(action_of(r#"{"name": "envoy.tcp_proxy", "typed_config": {"cluster": "b"}}"#), tcp("b"));
    // The type alone, under any name.
    assert_eq!(
        action_of(
            r#"{"name": "my-proxy", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", "cluster": "c"}}"#
        ),
        tcp("c")
    );
    let hcm = |rc: &str| ChainAction::Http { route_config: Some(rc.into()), rds: true };
    let rds = r#""rds": {"route_config_name": "r"}"#;
    assert_eq!(action_of(&format!(r#"{{"name": "envoy.filters.network.http_connection_manager", "typed_config": {{{rds}}}}}"#)), hcm("r"));
    assert_eq!(action_of(&format!(r#"{{"name": "envoy.http_connection_manager", "typed_config": {{{rds}}}}}"#)), hcm("r"));
    assert_eq!(
        action_of(&format!(
            r#"{{"name": "hcm", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager", {rds}}}}}"#
        )),
        hcm("r")
    );
    // Neither name nor type: some other filter.
    assert_eq!(
        action_of(r#"{"name": "envoy.filters.network.echo", "typed_config": {"cluster": "x"}}"#),
        ChainAction::Other { filters: vec!["envoy.filters.network.echo".into()] }
    );
}

fn tls_of(transport_socket: &str) -> Option<TlsSummary> {
    let chain = format!(r#"{{"transport_socket": {transport_socket}, "filters": []}}"#);
    let doc =
        dynamic(&[format!(r#"{{"@type": "{DYN}", "name": "l", "active_state": {{"listener": {}}}}}"#, listener_json("l", 1, &chain))]);
    json(&doc).expect("summary").listeners[0].filter_chains[0].tls.clone()
}

#[test]
fn only_a_downstream_tls_socket_is_termination() {
    let ctx = r#""common_tls_context": {"tls_certificates": [{"certificate_chain": {"filename": "/c/a.crt"}}]}"#;
    let file = vec![CertificateSource::File { path: "/c/a.crt".into() }];
    // By name (either spelling), untyped.
    assert_eq!(
        tls_of(&format!(r#"{{"name": "envoy.transport_sockets.tls", "typed_config": {{{ctx}}}}}"#)).expect("tls").certificates,
        file
    );
    assert_eq!(tls_of(&format!(r#"{{"name": "tls", "typed_config": {{{ctx}}}}}"#)).expect("tls").certificates, file);
    // By type, under any name.
    let down = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext";
    assert_eq!(tls_of(&format!(r#"{{"name": "x", "typed_config": {{"@type": "{down}", {ctx}}}}}"#)).expect("tls").certificates, file);
    // Not termination: a raw buffer, an unknown socket, an upstream context even under the TLS name.
    assert_eq!(
        tls_of(
            r#"{"name": "envoy.transport_sockets.raw_buffer", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"}}"#
        ),
        None
    );
    assert_eq!(tls_of(&format!(r#"{{"name": "envoy.transport_sockets.alts", "typed_config": {{{ctx}}}}}"#)), None);
    assert_eq!(
        tls_of(&format!(
            r#"{{"name": "envoy.transport_sockets.tls", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", {ctx}}}}}"#
        )),
        None
    );
}

mod golden;
