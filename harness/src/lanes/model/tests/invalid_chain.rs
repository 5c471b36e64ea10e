//! rules::INVALID_CHAIN_KEPT: on 1.19.x an invalid HTTPS listener of a Gateway with a valid
//! listener keeps its terminating chain, whose missing Secret never arrives; on 1.20 it is
//! dropped before translation. Cilium's operator at v1.19.6 answers so in the operator lane
//! (cases/missing-secret-beside-catch-all).

use super::super::input;
use super::super::rules;
use super::super::tests::{cond, gw_cond, layout, load_case, predict_for};
use super::super::translate::{Chain, Prediction};
use super::super::why;
use crate::case::CiliumVersion;

/// `https-missing` (`*.example.com`, a Secret that does not exist) on `missing_port`, beside a
/// valid catch-all HTTPS listener on 443 and plain HTTP on 80.
fn layout_with_missing_secret(missing_port: u16, cert_ref: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: {{gateway}}}}
spec:
  gatewayClassName: cilium
  listeners:
  - {{name: https-missing, port: {missing_port}, protocol: HTTPS, hostname: \"*.example.com\", tls: {{certificateRefs: [{cert_ref}]}}}}
  - {{name: https-all, port: 443, protocol: HTTPS, tls: {{certificateRefs: [{{name: {{secret:wild}}}}]}}}}
  - {{name: http, port: 80, protocol: HTTP}}
"
    )
}

fn never_served(p: &Prediction) -> Vec<&Chain> {
    p.envoy.iter().flat_map(|l| l.chains.iter()).filter(|c| c.never_served).collect()
}

fn statuses_are_the_invalid_listeners(p: &Prediction) {
    assert_eq!(cond(p, "https-missing", "ResolvedRefs").as_deref(), Some("False/InvalidCertificateRef"));
    assert_eq!(cond(p, "https-missing", "Accepted").as_deref(), Some("False/Invalid"));
    assert_eq!(cond(p, "https-all", "Accepted").as_deref(), Some("True/Accepted"));
    assert_eq!(gw_cond(p, "Accepted").as_deref(), Some("True/Accepted"));
}

#[test]
fn on_1_19_6_the_invalid_listener_keeps_a_chain_whose_secret_never_arrives() {
    let p = predict_for(&layout_with_missing_secret(443, "{name: nosuch-tls}"), "1.19.6");
    statuses_are_the_invalid_listeners(&p);
    // One Envoy listener: plain HTTP, the catch-all's chain, and the invalid listener's chain
    // for its hostname (a longer match than the catch-all, so its names reset).
    assert_eq!(p.envoy.len(), 1, "{:?}", layout(&p));
    assert_eq!(p.envoy[0].chains.len(), 3, "{:?}", layout(&p));
    let kept = never_served(&p);
    assert_eq!(kept.len(), 1, "{:?}", layout(&p));
    assert_eq!(kept[0].server_names, ["*.example.com"]);
    assert_eq!(kept[0].tls_secret.as_deref(), Some("nosuch-tls"));
    assert_eq!(kept[0].rule.id, rules::INVALID_CHAIN_KEPT.id);
    assert!(p.notes.iter().any(|(id, _)| id == rules::INVALID_CHAIN_KEPT.id), "{:?}", p.notes);
    // The catch-all's Secret exists: served as before.
    let served: Vec<&Chain> = p.envoy[0].chains.iter().filter(|c| c.tls_secret.is_some() && !c.never_served).collect();
    assert_eq!(served.len(), 1);
    assert!(served[0].server_names.is_empty());
    // 1.19.5 (one listener, no per-port code) and 1.19.7 answer the same.
    for v in ["1.19.5", "1.19.7"] {
        let p = predict_for(&layout_with_missing_secret(443, "{name: nosuch-tls}"), v);
        assert_eq!(never_served(&p).iter().map(|c| c.server_names.clone()).collect::<Vec<_>>(), [["*.example.com"]], "{v}");
    }
}

#[test]
fn on_1_20_1_the_invalid_listener_is_dropped_before_translation() {
    let p = predict_for(&layout_with_missing_secret(443, "{name: nosuch-tls}"), "1.20.1");
    statuses_are_the_invalid_listeners(&p);
    assert_eq!(p.envoy.len(), 1, "{:?}", layout(&p));
    assert_eq!(p.envoy[0].chains.len(), 2, "{:?}", layout(&p));
    assert!(never_served(&p).is_empty(), "{:?}", layout(&p));
    assert!(!p.notes.iter().any(|(id, _)| id == rules::INVALID_CHAIN_KEPT.id), "{:?}", p.notes);
}

#[test]
fn alone_on_its_port_the_chain_gets_a_listener_of_its_own_from_1_19_6() {
    // Two HTTPS ports make the per-port split (NeedsPerPortListeners counts the invalid
    // listener's port: it has TLS Secrets); 1.19.5 has one listener for every port.
    let m = layout_with_missing_secret(8443, "{name: nosuch-tls}");
    let p = predict_for(&m, "1.19.6");
    let l = p.envoy.iter().find(|l| l.name == "listener-8443").unwrap_or_else(|| panic!("{:?}", layout(&p)));
    assert_eq!(l.chains.len(), 1);
    assert!(l.chains[0].never_served && l.chains[0].server_names == ["*.example.com"], "{:?}", layout(&p));
    let p = predict_for(&m, "1.19.5");
    assert_eq!(p.envoy.len(), 1, "{:?}", layout(&p));
    assert_eq!(never_served(&p).len(), 1, "{:?}", layout(&p));
    let p = predict_for(&m, "1.20.1");
    assert!(p.envoy.iter().all(|l| l.name != "listener-8443") && never_served(&p).is_empty(), "{:?}", layout(&p));
}

#[test]
fn a_ref_a_grant_forbids_is_dropped_by_ingestion_and_makes_no_chain() {
    // toTLS drops a cross-namespace ref without a ReferenceGrant: no TLS Secret, no chain.
    let p = predict_for(&layout_with_missing_secret(443, "{name: nosuch-tls, namespace: elsewhere}"), "1.19.6");
    assert_eq!(cond(&p, "https-missing", "ResolvedRefs").as_deref(), Some("False/RefNotPermitted"));
    assert!(never_served(&p).is_empty(), "{:?}", layout(&p));
    assert_eq!(p.envoy[0].chains.len(), 2, "{:?}", layout(&p));
    // A ref that is not a Secret is kept by toTLS and never synced: never served.
    let p = predict_for(&layout_with_missing_secret(443, "{name: nosuch-tls, kind: ConfigMap}"), "1.19.6");
    assert_eq!(never_served(&p).len(), 1, "{:?}", layout(&p));
}

#[test]
fn without_a_valid_listener_nothing_reaches_envoy_at_any_version() {
    let m = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https-missing, port: 443, protocol: HTTPS, hostname: \"*.example.com\", tls: {certificateRefs: [{name: nosuch-tls}]}}
";
    for v in ["1.19.5", "1.19.6", "1.20.1"] {
        let p = predict_for(m, v);
        assert_eq!(gw_cond(&p, "Accepted").as_deref(), Some("False/ListenersNotValid"), "{v}");
        assert!(p.envoy.is_empty(), "{v}: {:?}", layout(&p));
        assert!(!p.notes.iter().any(|(id, _)| id == rules::INVALID_CHAIN_KEPT.id), "{v}: {:?}", p.notes);
    }
}

#[test]
fn the_why_lines_name_the_rule_where_it_holds() {
    let case = load_case(
        "summary: t\ncertificates:\n  wild: [\"*.example.com\"]\nmanifests: [m.yaml]\nexpect:\n  - cilium: \"*\"\n    provenance: inferred\n    gateway: {Accepted: \"True\"}\napex: example.com\n",
        &layout_with_missing_secret(443, "{name: nosuch-tls}"),
    );
    let gw = input::read(&case).unwrap().gateways.remove(0);
    let lines = |v: &str| -> Vec<String> { why::whys(&gw, &CiliumVersion::parse(v).unwrap()).iter().flat_map(|w| w.lines(&gw)).collect() };
    let old = lines("1.19.6");
    assert!(old[0].starts_with("listener https-missing refused (still translated, with its TLS chain)"), "{old:#?}");
    assert!(old.iter().any(|l| l.starts_with("  translated: invalid-listener-chain-kept [<1.20.1; source]")), "{old:#?}");
    assert!(
        old.iter().any(|l| l == "  upstream: toTLS in operator/pkg/model/ingestion/gateway.go at cilium v1.19.6 (9a8982433e18)"),
        "{old:#?}"
    );
    let new = lines("1.20.1");
    assert!(new[0].starts_with("listener https-missing refused (not translated)"), "{new:#?}");
    assert!(!new.iter().any(|l| l.contains("invalid-listener-chain-kept")), "{new:#?}");
}
