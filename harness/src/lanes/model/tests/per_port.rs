//! Per-port mode (1.19.6 on) as Cilium's translation sees a listener: HTTPS means a certificate
//! Secret (`len(l.TLS) > 0`), every other listener ingestion takes is a plain port, and
//! cilium-agent sends a Gateway port to the first of the CEC's services entries naming it.
//! Found by `layout-gate differential --seed 1 --count 10 --cilium 1.19.6` (layout 4, d4/gw0 and
//! d4/gw2), reduced to the smallest Gateways below. Cilium's operator at v1.19.6 answers the
//! first three as asserted here (`check --lane operator --complete --cilium 1.19.6` on each, its
//! names under `l4.example.test`: the same conditions, Envoy listeners, chain counts and probe
//! answers as the model lane; for the ReferenceGrant one, the layout and answers: the operator
//! lane does not show route configurations); the fourth is d4/gw2's port 443, confirmed
//! through the whole layout (the differential agrees on it after the fix). The first is also
//! case `tls-listener-takes-https-port`, confirmed at 1.19.5, 1.19.6 and 1.19.7.

use super::super::rules;
use super::super::tests::{layout, predict_for};
use super::super::translate::{ChainAction, Prediction, Transport};

fn listener<'a>(p: &'a Prediction, name: &str) -> &'a super::super::translate::EnvoyListener {
    p.envoy.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("no {name}: {:?}", layout(p)))
}

fn ports(p: &Prediction, name: &str) -> Vec<u16> {
    listener(p, name).ports.iter().map(|p| p.get()).collect()
}

fn noted(p: &Prediction, rule: &rules::Rule) -> bool {
    p.notes.iter().any(|(id, _)| id == rule.id)
}

/// d4/gw0 reduced: two HTTPS ports (per-port mode) and a TLS listener without routes beside the
/// HTTPS listener on 8443, hostnames apart (no conflict).
const TLS_WITHOUT_ROUTES: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https-a, port: 443, protocol: HTTPS, hostname: example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: https-b, port: 8443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: tls-c, port: 8443, protocol: TLS, hostname: b.example.com, tls: {mode: Passthrough}}
";

#[test]
fn a_tls_listener_without_routes_is_a_plain_port_and_takes_its_port_to_listener() {
    // Cilium's operator at v1.19.6: `listener` (1 chain, plain HTTP) answers 8443, every TLS
    // handshake there resets; `listener-8443` keeps its chain, unreached.
    for v in ["1.19.6", "1.19.7", "1.20.1"] {
        let p = predict_for(TLS_WITHOUT_ROUTES, v);
        let base = listener(&p, "listener");
        assert_eq!(base.chains.len(), 1, "{v}: {:?}", layout(&p));
        assert_eq!(base.chains[0].transport, Transport::RawBuffer, "{v}");
        assert_eq!(ports(&p, "listener"), [8443], "{v}: {:?}", layout(&p));
        assert_eq!(ports(&p, "listener-443"), [443], "{v}");
        assert_eq!(listener(&p, "listener-8443").chains.len(), 1, "{v}: {:?}", layout(&p));
        assert!(ports(&p, "listener-8443").is_empty(), "{v}: {:?}", layout(&p));
        assert!(noted(&p, &rules::PORT_FIRST_SERVICE_ENTRY), "{v}: {:?}", p.notes);
    }
    // 1.19.5: one listener for every port, the HTTPS chain answers 8443.
    let p = predict_for(TLS_WITHOUT_ROUTES, "1.19.5");
    assert_eq!(p.envoy.len(), 1, "{:?}", layout(&p));
    assert_eq!(ports(&p, "listener"), [443, 8443]);
}

/// d4/gw2 reduced: HTTPS and TLS on both 443 and 8443, one TLSRoute on both TLS listeners
/// whose only backend does not exist (with both listeners' hostnames, which TLSRoute v1 needs
/// from 1.20.0: rule tlsroute-v1-hostnames-required).
const TLS_ROUTES_WITHOUT_BACKENDS: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https-a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: https-b, port: 8443, protocol: HTTPS, hostname: b.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: tls-c, port: 443, protocol: TLS, hostname: c.example.com, tls: {mode: Passthrough}}
  - {name: tls-d, port: 8443, protocol: TLS, hostname: d.example.com, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: route}
spec:
  parentRefs: [{name: '{gateway}'}]
  hostnames: [c.example.com, d.example.com]
  rules: [{backendRefs: [{name: nosuch, port: 443}]}]
";

#[test]
fn tls_ports_whose_routes_have_no_backends_get_no_listener_and_no_duplicate() {
    // Cilium's operator at v1.19.6: `listener-443` and `listener-8443`, the HTTPS ones, each
    // answering its port; no `listener` (both ports are TLS ports with routes), no rejection.
    for v in ["1.19.6", "1.19.7", "1.20.1"] {
        let p = predict_for(TLS_ROUTES_WITHOUT_BACKENDS, v);
        assert!(p.cec_rejected.is_none(), "{v}: {:?}", p.cec_rejected);
        let names: Vec<&str> = p.envoy.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["listener-443", "listener-8443"], "{v}: {:?}", layout(&p));
        assert_eq!(ports(&p, "listener-443"), [443], "{v}");
        assert_eq!(ports(&p, "listener-8443"), [8443], "{v}");
        assert!(noted(&p, &rules::PER_PORT_TLS_EMPTY_SKIPPED), "{v}: {:?}", p.notes);
    }
}

/// An HTTPS listener whose certificateRef is in another namespace without a ReferenceGrant:
/// toTLS drops the ref, so it reaches ingestion (1.19.x) with no certificate Secret.
const HTTPS_REF_NOT_PERMITTED: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https-a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: https-x, port: 8443, protocol: HTTPS, hostname: x.example.com, tls: {certificateRefs: [{name: wild, namespace: elsewhere}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web}
spec:
  parentRefs: [{name: '{gateway}', sectionName: https-x}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
";

fn vhost_domains(p: &Prediction, route_config: &str) -> Vec<String> {
    p.envoy
        .iter()
        .flat_map(|l| l.chains.iter())
        .filter_map(|c| match &c.action {
            ChainAction::Http { route_config: rc, vhosts } if rc == route_config => Some(vhosts.clone()),
            _ => None,
        })
        .flatten()
        .flat_map(|v| v.domains)
        .collect()
}

#[test]
fn an_https_listener_without_a_secret_is_plain_http_from_1_19_6() {
    // One HTTPS port with a Secret: no per-port split (8443 is no HTTPS port to Cilium), one
    // `listener`; the route of https-x joins the insecure route configuration.
    for v in ["1.19.6", "1.19.7"] {
        let p = predict_for(HTTPS_REF_NOT_PERMITTED, v);
        assert_eq!(p.envoy.len(), 1, "{v}: {:?}", layout(&p));
        assert_eq!(ports(&p, "listener"), [443, 8443], "{v}");
        assert_eq!(vhost_domains(&p, "listener-insecure"), ["x.example.com"], "{v}: {:?}", layout(&p));
        assert!(vhost_domains(&p, "listener-secure").is_empty(), "{v}");
        assert!(noted(&p, &rules::HTTPS_WITHOUT_SECRET_PLAIN), "{v}: {:?}", p.notes);
    }
    // 1.19.5 asks `l.TLS != nil`: the route stays in the secure route configuration.
    let p = predict_for(HTTPS_REF_NOT_PERMITTED, "1.19.5");
    assert_eq!(vhost_domains(&p, "listener-secure"), ["x.example.com"], "{:?}", layout(&p));
    assert!(vhost_domains(&p, "listener-insecure").is_empty());
}

/// d4/gw2's port 443: a TLSRoute without sectionName whose hostname another TLS listener (on
/// 8443) claims by name; the catch-all TLS listener on 443 gets no route from ingestion.
const ROUTE_NAME_CLAIMED_ELSEWHERE: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https-a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: https-b, port: 8443, protocol: HTTPS, hostname: b.example.com, tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: tls-all, port: 443, protocol: TLS, tls: {mode: Passthrough}}
  - {name: tls-n, port: 8443, protocol: TLS, hostname: n.example.com, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: route}
spec:
  parentRefs: [{name: '{gateway}'}]
  hostnames: [n.example.com]
  rules: [{backendRefs: [{name: nosuch, port: 443}]}]
";

#[test]
fn a_tls_port_counts_routes_only_where_compute_hosts_leaves_them_a_name() {
    // TLSPassthroughPorts is 8443 alone: 443 is a plain port (tls-all has no route in the
    // model), so `listener` answers 443 and `listener-443` is kept, unreached; 8443 is
    // `listener-8443`'s (its services entry precedes the TLS ports'). tls-all and https-a
    // conflict on 443: still translated on 1.19.x (conflicted-still-translated), dropped on 1.20.
    for v in ["1.19.6", "1.19.7"] {
        let p = predict_for(ROUTE_NAME_CLAIMED_ELSEWHERE, v);
        assert_eq!(ports(&p, "listener"), [443], "{v}: {:?}", layout(&p));
        assert!(ports(&p, "listener-443").is_empty(), "{v}: {:?}", layout(&p));
        assert_eq!(ports(&p, "listener-8443"), [8443], "{v}: {:?}", layout(&p));
    }
}
