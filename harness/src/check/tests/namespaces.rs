//! Routes, Services and ReferenceGrants in any namespace (issue #17 item 1), without Envoy: a
//! backend for every Service a route may reach, exactly as Cilium decides, at the versions of a
//! test pins file.

use std::path::{Path, PathBuf};

use super::super::answer::Reply;
use super::super::*;
use crate::lanes::model;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn opts() -> Options {
    opts_with(Vec::new())
}

/// Check's options at every version of the test pins (`harness/tests/data/check/versions.yaml`),
/// without Envoy, probing `extra_sni` too: what the check tests of this folder share.
pub(super) fn opts_with(extra_sni: Vec<crate::types::Sni>) -> Options {
    let pins = crate::versions::Pins::load(&repo().join("harness/tests/data/check/versions.yaml")).unwrap();
    let versions = model::resolve_versions(&pins, &[]).unwrap();
    Options {
        versions,
        envoy: false,
        timeouts: timeouts().unwrap(),
        plan: EnvoyPlan::Shared,
        complete: false,
        assume: Default::default(),
        extra_sni,
        operator: None,
        each_file: false,
    }
}

fn check_one(p: &Path) -> GatewayCheck {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[p.to_path_buf()], &opts())).unwrap_or_else(|e| panic!("{e}"));
    checks.into_iter().next().unwrap()
}

fn route_conds(c: &GatewayCheck, v: &str, route: &str) -> Vec<String> {
    let r = c.versions.iter().find(|r| r.version == v).unwrap();
    let (_, _, cs) = r.routes.iter().find(|(n, _, _)| n == route).unwrap_or_else(|| panic!("{v}: no route {route}: {:?}", r.routes));
    cs.iter().map(|c| format!("{} {}/{}", c.type_, c.status, c.reason)).collect()
}

fn answer(c: &GatewayCheck, v: &str, port: u16, sni: &str) -> String {
    let r = c.versions.iter().find(|r| r.version == v).unwrap();
    let (_, a) = r.answers.iter().find(|(k, _)| k.port.get() == port && k.sni.as_ref().is_some_and(|s| s.as_str() == sni)).unwrap();
    match a {
        Reply::Certificate { cert } => c.label(cert),
        other => format!("{other:?}"),
    }
}

#[test]
fn the_layout_with_routes_in_their_applications_namespaces_resolves_and_passes_through() {
    let c = check_one(&repo().join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml"));
    for route in ["kubernetes-api", "vm-exportproxy", "cdi-uploadproxy", "dashboard"] {
        for v in ["1.19.5", "1.19.6", "1.20.1"] {
            assert!(
                route_conds(&c, v, route).contains(&"ResolvedRefs True/ResolvedRefs".to_string()),
                "{v} {route}: {:?}",
                route_conds(&c, v, route)
            );
        }
    }
    assert_eq!(answer(&c, "1.19.5", 443, "api.example.org"), "backend default/kubernetes");
    assert_eq!(answer(&c, "1.19.5", 443, "vm-exportproxy.example.org"), "backend cozy-kubevirt/vm-exportproxy");
    assert_eq!(answer(&c, "1.19.6", 443, "cdi-uploadproxy.example.org"), "backend cozy-kubevirt-cdi/cdi-uploadproxy");
    assert!(answer(&c, "1.20.1", 443, "api.example.org").starts_with("Nothing"), "{}", answer(&c, "1.20.1", 443, "api.example.org"));
    // The derived case owns every namespace: the cluster's `default` is never one of them.
    let d = &c.derived;
    assert!(d.manifests.contains("'{namespace}-default'") || d.manifests.contains("\"{namespace}-default\""), "{}", d.manifests);
    assert!(!d.manifests.lines().any(|l| l.trim() == "namespace: default"), "{}", d.manifests);
    let text = case_text(&c, &[PathBuf::from("in.yaml")], &[]);
    assert!(text.contains("kubernetes: {tls: kubernetes-backend, namespace_suffix: default}"), "{text}");
}

const GW: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: edge}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: tls, port: 443, protocol: TLS, hostname: api.example.org, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: api, namespace: edge}
spec:
  parentRefs: [{name: gw}]
  hostnames: [api.example.org]
  rules:
  - backendRefs: [{name: apiserver, namespace: apps, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: apiserver, namespace: apps}
";

fn grant(kind: &str, from_ns: &str, to_name: Option<&str>) -> String {
    let name = to_name.map(|n| format!(", name: {n}")).unwrap_or_default();
    format!(
        "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {{name: g, namespace: apps}}\nspec:\n  from: [{{group: gateway.networking.k8s.io, kind: {kind}, namespace: {from_ns}}}]\n  to: [{{group: \"\", kind: Service{name}}}]\n"
    )
}

fn with(extra: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("in.yaml");
    std::fs::write(&p, format!("{GW}{extra}")).unwrap();
    (d, p)
}

#[test]
fn a_backend_in_another_namespace_needs_a_reference_grant_there_as_cilium_decides() {
    // No grant: Cilium refuses the reference (RefNotPermitted) and no backend is stood up.
    let (_d, p) = with("");
    let c = check_one(&p);
    assert!(
        route_conds(&c, "1.19.5", "api").contains(&"ResolvedRefs False/RefNotPermitted".to_string()),
        "{:?}",
        route_conds(&c, "1.19.5", "api")
    );
    assert!(c.derived.backends.is_empty(), "{:?}", c.derived.backends);
    assert!(c.derived.notes.iter().any(|n| n.contains("not permitted")), "{:?}", c.derived.notes);
    // A grant for TLSRoutes from the route's namespace, for every Service or this one.
    for to in [None, Some("apiserver")] {
        let (_d, p) = with(&grant("TLSRoute", "edge", to));
        let c = check_one(&p);
        assert!(
            route_conds(&c, "1.19.5", "api").contains(&"ResolvedRefs True/ResolvedRefs".to_string()),
            "{to:?}: {:?}",
            route_conds(&c, "1.19.5", "api")
        );
        assert_eq!(answer(&c, "1.19.5", 443, "api.example.org"), "backend apps/apiserver");
    }
    // A grant that names another kind, another namespace or another Service permits nothing.
    for g in [grant("HTTPRoute", "edge", None), grant("TLSRoute", "elsewhere", None), grant("TLSRoute", "edge", Some("other"))] {
        let (_d, p) = with(&g);
        let c = check_one(&p);
        assert!(c.derived.backends.is_empty(), "{g}: {:?}", c.derived.backends);
        assert!(route_conds(&c, "1.19.5", "api").contains(&"ResolvedRefs False/RefNotPermitted".to_string()), "{g}");
    }
}

#[test]
fn two_reachable_services_of_one_name_are_refused_at_the_route() {
    let second = "---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {name: api2, namespace: edge}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [api.example.org]\n  rules:\n  - backendRefs: [{name: apiserver, port: 443}]\n";
    let (_d, p) = with(&format!("{}{second}", grant("TLSRoute", "edge", None)));
    let inputs = read::read(std::slice::from_ref(&p)).unwrap();
    let e = derive::derive(&inputs.objects).unwrap_err();
    assert!(e.message.contains("share a name") && e.message.contains("edge/apiserver") && e.message.contains("apps/apiserver"), "{e}");
}

fn found(c: &GatewayCheck) -> format::Found {
    let checks = [c.clone()];
    let r = format::Report {
        checks: &checks,
        skipped: None,
        skipped_counts: Default::default(),
        envoy: false,
        envoy_version: None,
        fail_on: outcome::FailOn::ALL.into_iter().collect(),
        baseline: Some(("1.19.5".into(), "test".into())),
    };
    r.found(c)
}

#[test]
fn each_version_gets_a_verdict_in_words_against_the_baseline() {
    let c = check_one(&repo().join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml"));
    let f = found(&c);
    let v = |ver: &str| f.verdicts.iter().find(|v| v.version == ver).unwrap().clone();
    assert_eq!(v("1.19.5").kind, verdict::Kind::Baseline);
    let v6 = v("1.19.6");
    assert_eq!(v6.kind, verdict::Kind::StatusOnlyRegression, "{}", v6.line());
    assert!(v6.traffic.is_empty());
    assert!(
        // https allows TLSRoute, which an HTTPS listener does not carry: ResolvedRefs is
        // False/InvalidRouteKinds on every version, so its change reads like the TLS listeners'.
        v6.line().contains("listeners https, tls-api, tls-vm-exportproxy and tls-cdi-uploadproxy Conflicted True/ProtocolConflict"),
        "{}",
        v6.line()
    );
    assert!(v6.line().ends_with("traffic unchanged"), "{}", v6.line());
    let v20 = v("1.20.1");
    assert_eq!(v20.kind, verdict::Kind::TrafficRegression, "{}", v20.line());
    assert!(
        v20.traffic
            == [
                "on 80 and 443: www.example.org and dashboard.example.org (was Secret tenant-root-gateway-tls), api.example.org (was backend default/kubernetes), vm-exportproxy.example.org (was backend cozy-kubevirt/vm-exportproxy), cdi-uploadproxy.example.org (was backend cozy-kubevirt-cdi/cdi-uploadproxy) stop answering (reset)"
            ],
        "names grouped per port, ports with the same change said once: {:?}",
        v20.traffic
    );
    // One root cause once: the conflict, then the rule that turns it into lost traffic.
    assert_eq!(v6.causes.iter().filter(|c| c.contains("conflicts with")).count(), 1, "{:?}", v6.causes);
    assert!(v6.causes.iter().any(|c| c.starts_with("rule conflicted-still-translated")), "{:?}", v6.causes);
    assert!(v20.causes.iter().any(|c| c.starts_with("rule conflicted-dropped")), "{:?}", v20.causes);
    assert!(!v20.causes.iter().any(|c| c.contains("one-listener-no-split")), "{:?}", v20.causes);
    // --fail-on sees them: status-changed on 1.19.6, traffic-changed on 1.20.1 only.
    let on = |k: outcome::FailOn| -> Vec<String> {
        let mut vs: Vec<String> = f.events.iter().filter(|e| e.kind == k).map(|e| e.version.clone()).collect();
        vs.dedup();
        vs
    };
    assert_eq!(on(outcome::FailOn::StatusChanged), ["1.19.6", "1.19.7", "1.20.1"]);
    assert_eq!(on(outcome::FailOn::TrafficChanged), ["1.20.1"]);
    // A claimed name that answers nothing is unreachable: every passthrough name on 1.20.1.
    assert_eq!(on(outcome::FailOn::Unreachable), ["1.20.1"]);
    let u = f.events.iter().find(|e| e.kind == outcome::FailOn::Unreachable).unwrap();
    assert!(
        u.what.contains("api.example.org") && u.what.contains("on 443 answer nothing") && u.what.contains("TLSRoute kubernetes-api"),
        "{}",
        u.what
    );
    assert!(on(outcome::FailOn::RouteNotResolved).is_empty());
}

#[test]
fn an_unresolved_route_is_a_fail_on_kind() {
    let (_d, p) = with("");
    let c = check_one(&p);
    let f = found(&c);
    let e = f.events.iter().find(|e| e.kind == outcome::FailOn::RouteNotResolved).expect("route-not-resolved");
    assert!(e.what.contains("route api") && e.what.contains("RefNotPermitted"), "{}", e.what);
    // The passthrough name its listener claims answers nothing: unreachable as well.
    assert!(f.events.iter().any(|e| e.kind == outcome::FailOn::Unreachable && e.what.contains("api.example.org on 443")), "{:?}", f.events);
}

#[test]
fn a_certificate_in_another_namespace_is_generated_there_and_its_grant_names_it() {
    let c = check_one(&repo().join("harness/tests/data/check/certificate-in-another-namespace.yaml"));
    let d = &c.derived;
    // Both referenced Secrets get a generated certificate, each in its own namespace.
    let labels: Vec<String> = d.certs.iter().map(|x| x.label()).collect();
    assert_eq!(labels, ["Secret certs/wildcard", "Secret elsewhere/nogrant"]);
    let case = casefile::case_yaml(d, "", "t", &[], "n");
    assert!(case.contains("certificate_namespaces:\n  wildcard: certs\n  nogrant: elsewhere\n"), "{case}");
    // No placeholder (not PEM: Cilium would call the listener InvalidCertificateRef) stays
    // for them, and the grant names the Secret that stands in.
    assert!(!d.manifests.contains(derive::PLACEHOLDER_B64), "{}", d.manifests);
    assert!(d.manifests.contains("name: \"{secret:wildcard}\""), "{}", d.manifests);
    for v in ["1.19.5", "1.19.6", "1.20.1"] {
        assert_eq!(answer(&c, v, 443, "www.example.test"), "Secret certs/wildcard", "{v}");
        let r = c.versions.iter().find(|r| r.version == v).unwrap();
        let other = &r.listeners.iter().find(|(l, _)| l == "https-other").unwrap().1;
        assert!(other.iter().any(|c| c.type_ == "ResolvedRefs" && c.reason == "RefNotPermitted"), "{v}: {other:?}");
    }
}

/// The layout platforms move to (issue #24): the passthrough listeners on a second Gateway. Both
/// Gateways are answered, each with its own listeners and routes from the applications'
/// namespaces, and each says the cost: both listen on 443, so they need two addresses. A
/// single-Gateway layout says no such thing.
#[test]
fn a_second_gateway_for_passthrough_is_answered_and_says_it_needs_a_second_address() {
    let file = repo().join("harness/tests/data/check/cozystack-passthrough-second-gateway.yaml");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[file], &opts())).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = checks.iter().map(|c| c.derived.gateway.as_str()).collect();
    assert_eq!(names, ["tenant-root", "tenant-root-passthrough"]);
    for (c, other) in checks.iter().zip(["tenant-root-passthrough", "tenant-root"]) {
        let cost: Vec<&String> = c.derived.notes.iter().filter(|n| n.starts_with("port 443 is also listened on")).collect();
        assert_eq!(cost.len(), 1, "{:?}", c.derived.notes);
        assert!(cost[0].contains(&format!("Gateway tenant-root/{other}")) && cost[0].contains("need 2 addresses"), "{}", cost[0]);
        assert!(!c.derived.notes.iter().any(|n| n.starts_with("port 80 ")), "only tenant-root listens on 80: {:?}", c.derived.notes);
        for v in &c.versions {
            assert!(
                v.listeners.iter().all(|(_, cs)| cs.iter().all(|x| x.type_ != "Conflicted" || x.status == "False")),
                "{}: {:?}",
                v.version,
                v.listeners
            );
            assert!(
                v.routes.iter().all(|(_, _, cs)| cs.iter().any(|x| x.type_ == "Accepted" && x.status == "True")),
                "{}: {:?}",
                v.version,
                v.routes
            );
        }
    }
    let single = check_one(&repo().join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml"));
    assert!(!single.derived.notes.iter().any(|n| n.contains("is also listened on")), "{:?}", single.derived.notes);
}
