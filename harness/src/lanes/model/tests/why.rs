//! `why`: the pair, the meeting hostname, Cilium's message, the rule, its upstream function,
//! and the catalogue cases that show a layout without it.

use super::super::input::{self, GatewayInput};
use super::super::rules;
use super::super::why::{self, WhyKind};
use super::load_case;
use crate::case::{self, CiliumVersion};

const CASE: &str = "summary: why test
certificates:
  wild: [\"*.example.com\"]
backends:
  api: {}
  vm: {}
manifests: [m.yaml]
expect:
  - cilium: \"*\"
    provenance: inferred
    gateway: {Accepted: \"True\"}
apex: example.com
";

/// dns01's shape: a wildcard terminate listener and two passthrough listeners under it on 443.
const DNS01: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS, hostname: '*.example.com', tls: {certificateRefs: [{name: '{secret:wild}'}]}}
  - {name: tls-api, port: 443, protocol: TLS, hostname: api.example.com, tls: {mode: Passthrough}}
  - {name: tls-vm, port: 443, protocol: TLS, hostname: vm.example.com, tls: {mode: Passthrough}}
";

fn gateway(manifest: &str) -> GatewayInput {
    input::read(&load_case(CASE, manifest)).unwrap().gateways.remove(0)
}

fn v(s: &str) -> CiliumVersion {
    CiliumVersion::parse(s).unwrap()
}

#[test]
fn one_wildcard_against_two_passthrough_listeners_is_one_cause() {
    let gw = gateway(DNS01);
    assert!(why::whys(&gw, &v("1.19.5")).is_empty(), "1.19.5 has no conflict check");
    let ws = why::whys(&gw, &v("1.19.6"));
    assert_eq!(ws.len(), 1, "{ws:#?}");
    let w = &ws[0];
    assert_eq!(w.listeners, ["https"]);
    let WhyKind::Conflict { reason, port, hostname, others } = &w.kind else { panic!("{w:?}") };
    assert_eq!((reason.as_str(), *port, hostname.as_str()), ("ProtocolConflict", 443, "*.example.com"));
    let met: Vec<(&str, &str)> = others.iter().map(|m| (m.other.as_str(), m.hostname.as_str())).collect();
    assert_eq!(met, [("tls-api", "api.example.com"), ("tls-vm", "vm.example.com")]);
    // Cilium's message on https names the last listener it was paired with.
    assert_eq!(
        w.messages,
        ["Listener conflicts with listener \"tls-vm\": same port 443 has overlapping HTTPS and TLS passthrough hostnames."]
    );
    assert_eq!(w.rule.id, rules::PROTOCOL_CONFLICT.id);
    assert_eq!(w.upstream.map(|u| (u.tag, u.function)), Some(("v1.19.6", "samePortCrossProtocolConflictedListeners")));
    let text = w.lines(&gw).join("\n");
    for want in [
        "listener https conflicts with tls-api and tls-vm on port 443: Conflicted ProtocolConflict",
        "hostnames: https *.example.com meets api.example.com (tls-api) and vm.example.com (tls-vm)",
        "Cilium: \"Listener conflicts with listener \\\"tls-vm\\\"",
        "rule: protocol-conflict [>=1.19.6; source]",
        "upstream: samePortCrossProtocolConflictedListeners in operator/pkg/gateway-api/gateway_reconcile.go at cilium v1.19.6 (9a8982433e18)",
        "a layout without it: cases/dns01-recommended-option1",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // 1.20 decides it in another function.
    let w = &why::whys(&gw, &v("1.20.1"))[0];
    assert_eq!(w.upstream.map(|u| (u.tag, u.function)), Some(("v1.20.1", "conflictsWithinSource")));
}

#[test]
fn a_pair_of_equals_is_one_line_not_two() {
    let m = DNS01.replace("  - {name: tls-vm, port: 443, protocol: TLS, hostname: vm.example.com, tls: {mode: Passthrough}}\n", "");
    let ws = why::whys(&gateway(&m), &v("1.19.7"));
    assert_eq!(ws.len(), 1, "{ws:#?}");
    assert_eq!(ws[0].listeners, ["https"]);
}

#[test]
fn a_refused_listener_says_what_validation_found() {
    let m = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: '{gateway}'}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {kinds: [{kind: InvalidRoute}]}}
";
    let gw = gateway(m);
    let ws = why::whys(&gw, &v("1.20.1"));
    assert_eq!(ws.len(), 1, "{ws:#?}");
    let w = &ws[0];
    assert_eq!(w.kind, WhyKind::Refused { conditions: vec!["ResolvedRefs False/InvalidRouteKinds".into()], invalid: true, kept: false });
    assert!(w.messages.iter().any(|m| m == "None of the Allowed Route Kinds are supported."), "{:?}", w.messages);
    assert_eq!(w.rule.id, rules::ROUTE_KINDS_CHECKED.id);
    assert_eq!(w.upstream.map(|u| u.function), Some("validateListener"));
    assert!(w.lines(&gw)[0].starts_with("listener http refused (not translated): ResolvedRefs False/InvalidRouteKinds"));
    // Two listeners refused the same way are one cause.
    let two = format!("{m}  - {{name: http2, port: 8080, protocol: HTTP, allowedRoutes: {{kinds: [{{kind: InvalidRoute}}]}}}}\n");
    let gw2 = gateway(&two);
    let ws = why::whys(&gw2, &v("1.20.1"));
    assert_eq!(ws.len(), 1, "{ws:#?}");
    assert_eq!(ws[0].listeners, ["http", "http2"]);
    assert!(ws[0].lines(&gw2)[0].starts_with("listeners http and http2 refused"), "{:?}", ws[0].lines(&gw2));
    // 1.19.x checks an HTTP listener's kinds too (Cilium's operator at v1.19.5 and v1.19.6
    // refuses it the same way, the operator lane showed), through setListenerStatus there.
    let ws = why::whys(&gw, &v("1.19.6"));
    assert_eq!(ws.len(), 1, "{ws:#?}");
    assert_eq!(ws[0].upstream.map(|u| u.function), Some("setListenerStatus"));
}

#[test]
fn the_cases_named_as_layouts_without_a_rule_show_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = crate::versions::Pins::load(&root.join(crate::versions::VERSIONS_FILE)).unwrap_or_else(|p| panic!("{p:?}"));
    for (rule_id, cases) in why::WITHOUT {
        let rule = rules::ALL.iter().find(|r| r.id == *rule_id).unwrap_or_else(|| panic!("{rule_id}: no such rule"));
        for name in *cases {
            let case = case::load(&root.join("cases").join(name)).unwrap_or_else(|p| panic!("cases/{name}: {p:?}"));
            let gws = input::read(&case).unwrap_or_else(|e| panic!("cases/{name}: {e}")).gateways;
            assert!(!gws.is_empty(), "cases/{name}: no Gateway");
            // The shape the rule looks at is there (a near miss, not an unrelated layout) ...
            let near_miss = gws.iter().any(|gw| {
                let ls = &gw.listeners;
                match *rule_id {
                    "protocol-conflict" => {
                        ls.iter().any(|l| l.protocol == input::Protocol::Https)
                            && ls.iter().any(|l| l.protocol == input::Protocol::Tls && l.tls_mode == Some(input::TlsMode::Passthrough))
                    }
                    "hostname-conflict" => {
                        ls.iter().enumerate().any(|(i, a)| ls[i + 1..].iter().any(|b| a.port == b.port && a.protocol == b.protocol))
                    }
                    other => panic!("{other}: say what a near miss of it is"),
                }
            });
            assert!(near_miss, "cases/{name} does not have the shape {rule_id} looks at");
            // ... and the rule finds nothing there at any pinned version it holds for.
            let mut checked = 0;
            for pin in pins.cilium.iter().filter(|p| rule.applies(&p.version)) {
                for gw in &gws {
                    let hits = why::whys(gw, &pin.version).into_iter().filter(|w| w.rule.id == *rule_id).count();
                    assert_eq!(hits, 0, "cases/{name} on {}: {rule_id} holds there", pin.version);
                }
                checked += 1;
            }
            assert!(checked > 0, "{rule_id}: no pinned version it holds for");
        }
    }
}
