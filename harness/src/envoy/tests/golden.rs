//! The rendered JSON is pinned by golden files, and the same shapes are checked by the real
//! Envoy's `--mode validate` (a golden file only says "unchanged"; Envoy says "valid").

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/envoy-bootstrap")
}

/// Compares `value`'s pretty JSON with `harness/tests/data/envoy-bootstrap/<name>`;
/// `LAYOUT_GATE_BLESS=1` rewrites the file instead.
fn assert_golden(name: &str, value: &Value) {
    let actual = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    crate::golden::assert(&golden_dir().join(name), &actual);
}

fn static_bootstrap(certs: &CertPaths, ports: &Ports) -> Bootstrap {
    Bootstrap::static_listeners(AdminSpec::default(), vec![representative_listener(ports, certs, true)], representative_clusters(ports))
}

fn lds_bootstrap(lds_dir: &Path, ports: &Ports) -> Bootstrap {
    Bootstrap::file_lds(AdminSpec::default(), lds_dir, representative_clusters(ports))
}

#[test]
fn golden_static_bootstrap() {
    assert_golden("static-bootstrap.json", &static_bootstrap(&CertPaths::Placeholder, &Ports::fixed()).to_json());
}

#[test]
fn golden_lds_bootstrap_and_response() {
    let ports = Ports::fixed();
    assert_golden("lds-bootstrap.json", &lds_bootstrap(Path::new("/LDS_DIR"), &ports).to_json());
    // The Cilium-like form: no default chain.
    let listener = representative_listener(&ports, &CertPaths::Placeholder, false);
    assert_golden("lds-response.json", &lds_discovery_response("1", &[listener]));
}

#[test]
fn rendering_is_cilium_shaped() {
    let l = representative_listener(&Ports::fixed(), &CertPaths::Placeholder, false).to_resource();
    assert_eq!(l["@type"], "type.googleapis.com/envoy.config.listener.v3.Listener");
    assert_eq!(l["listener_filters"][0]["name"], "envoy.filters.listener.tls_inspector");
    let chains = l["filter_chains"].as_array().unwrap();
    // Cilium leaves chains unnamed.
    assert!(chains.iter().all(|c| c.get("name").is_none()));
    assert_eq!(chains[0]["filter_chain_match"]["transport_protocol"], "tls");
    assert_eq!(chains[2]["filter_chain_match"]["transport_protocol"], "raw_buffer");
    assert_eq!(l["additional_addresses"][0]["address"]["socket_address"]["port_value"], 10080);
    assert!(l.get("default_filter_chain").is_none());
}

#[test]
fn validate_accepts_static_and_lds_configs() {
    let envoy = envoy();
    let certs = certs();
    let tmp = tempfile::tempdir().unwrap();
    let ports = Ports::fixed();

    let path = write_bootstrap(tmp.path(), &static_bootstrap(&CertPaths::Real(&certs), &ports));
    if let Err(e) = validate_with(&envoy, &path) {
        panic!("static bootstrap refused: {e}");
    }

    let lds = LdsDir::create(&tmp.path().join("lds")).unwrap();
    lds.push("1", &[representative_listener(&ports, &CertPaths::Real(&certs), false)]).unwrap();
    let lds_boot = tmp.path().join("lds-bootstrap.json");
    lds_bootstrap(lds.path(), &ports).write(&lds_boot).unwrap();
    if let Err(e) = validate_with(&envoy, &lds_boot) {
        panic!("LDS bootstrap refused: {e}");
    }
}

#[test]
fn validate_rejects_duplicate_chains_with_envoys_words() {
    let envoy = envoy();
    let tmp = tempfile::tempdir().unwrap();
    let boot = Bootstrap::static_listeners(
        AdminSpec::default(),
        vec![duplicate_listener("127.0.0.1:10444".parse().unwrap())],
        representative_clusters(&Ports::fixed()),
    );
    let path = write_bootstrap(tmp.path(), &boot);
    let err = validate_with(&envoy, &path).expect_err("duplicate matchers must be refused");
    let text = err.envoy_text().unwrap_or_default().to_string();
    assert!(text.contains("error adding listener '127.0.0.1:10444': filter chain '' has the same matching rules defined as ''"), "{err}");
    assert!(err.to_string().contains("--mode validate"), "{err}");
}
