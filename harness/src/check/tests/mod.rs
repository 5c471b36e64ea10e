//! `check` without Envoy: the derivation, the matrix computed from the chains, the change
//! sentences, `--fail-on`, and located errors for bad input.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::derive::MatrixKey;
use super::format::{self, Report};
use super::outcome::{self, FailOn};
use super::predict::observe_into;
use super::*;
use crate::lanes::model;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example() -> PathBuf {
    repo().join("cases/rendered/cozystack-tenantgateway-dns01.yaml")
}

fn opts() -> Options {
    let pins = crate::versions::Pins::load_default().unwrap();
    // As the command line selects by default: the pins the model has been checked at.
    let (versions, _) = model::checked::default_selection(model::resolve_versions(&pins, &[]).unwrap(), false, None);
    Options::computed(versions, false).unwrap()
}

fn check(paths: &[PathBuf]) -> Result<(read::Inputs, Vec<GatewayCheck>), CheckError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(check_paths(paths, &opts()))
}

#[test]
fn the_derived_case_puts_placeholders_in() {
    let inputs = read::read(&[example()]).unwrap();
    let [d] = derive::derive(&inputs.objects).unwrap().try_into().unwrap();
    assert_eq!((d.namespace.as_str(), d.gateway.as_str(), d.apex.as_str()), ("tenant-root", "cozystack", "example.org"));
    assert!(d.manifests.contains("namespace: '{namespace}'") || d.manifests.contains("namespace: \"{namespace}\""), "{}", d.manifests);
    assert!(d.manifests.contains("{secret:cozystack-gateway}"), "{}", d.manifests);
    assert!(d.manifests.contains("api.{apex}"), "{}", d.manifests);
    assert!(!d.manifests.contains("tenant-root"), "every mention of the namespace is templated:\n{}", d.manifests);
    assert!(!d.manifests.contains("Issuer"), "skipped kinds stay out");
    let keys: Vec<String> = d.matrix.iter().filter(|k| k.port.get() == 443).map(|k| k.to_string()).collect();
    assert_eq!(
        keys,
        [
            "www.example.org on 443",
            "example.org on 443",
            "api.example.org on 443",
            "vm-exportproxy.example.org on 443",
            "cdi-uploadproxy.example.org on 443",
            "dashboard.example.org on 443",
            "unrelated.invalid on 443",
            "no SNI on 443"
        ]
    );
    assert!(d.notes.iter().any(|n| n.contains("Secret cozystack-gateway-tls") && n.contains("not in the input")), "{:?}", d.notes);
}

#[test]
fn computed_matrix_and_changes_for_the_cozystack_example() {
    let (inputs, checks) = check(&[example()]).unwrap();
    assert_eq!(inputs.skipped.values().sum::<usize>(), 2);
    let c = &checks[0];
    let at = |v: &str, sni: &str| -> String {
        let r = c.versions.iter().find(|r| r.version == v).unwrap();
        let (_, a) = r.answers.iter().find(|(k, _)| k.port.get() == 443 && k.sni.as_ref().map(|s| s.as_str()) == Some(sni)).unwrap();
        outcome::reply_text(c, a)
    };
    assert_eq!(at("1.19.6", "api.example.org"), "backend kubernetes-api");
    assert_eq!(at("1.19.6", "www.example.org"), "Secret cozystack-gateway-tls");
    assert_eq!(at("1.19.6", "unrelated.invalid"), "nothing (reset)");
    assert_eq!(at("1.20.1", "api.example.org"), "nothing (reset)");
    assert_eq!(at("1.20.1", "example.org"), "Secret cozystack-gateway-tls");
    let sentences: Vec<String> = outcome::changes(c).into_iter().map(|c| c.sentence).collect();
    assert!(
        sentences.contains(&"1.19.6: https, tls-api, tls-vm-exportproxy and tls-cdi-uploadproxy Conflicted (ProtocolConflict)".to_string()),
        "{sentences:#?}"
    );
    // 1.20.0 is the first checked version that drops the conflicted listeners.
    assert!(sentences.contains(&"1.20.0: api.example.org on 443 stops answering (reset)".to_string()), "{sentences:#?}");
    let report = |fail_on: &[FailOn]| Report {
        checks: &checks,
        skipped: inputs.skipped_line(),
        skipped_counts: inputs.skipped.clone(),
        envoy: false,
        envoy_version: None,
        fail_on: fail_on.iter().copied().collect::<BTreeSet<_>>(),
        baseline: None,
    };
    let all = report(&FailOn::ALL);
    let failed: Vec<FailOn> = all.failed().into_iter().map(|(k, _)| k).collect();
    // 1.20.1 drops the passthrough names their listeners and routes claim: unreachable.
    assert_eq!(failed, [FailOn::Conflicted, FailOn::NotAccepted, FailOn::NotProgrammed, FailOn::AnswerChanged, FailOn::Unreachable]);
    assert!(report(&[FailOn::RouteNotAccepted, FailOn::EnvoyRejected]).failed().is_empty());
    for text in [format::table_text(&all), format::markdown_text(&all), format::json_value(&all).to_string()] {
        assert!(text.contains("MODEL PREDICTION"), "{text}");
        assert!(text.contains("COMPUTED FROM THE CHAINS"), "--no-envoy is labelled: {text}");
    }
    let j = format::json_value(&all);
    assert_eq!(j["schema"], "layout-gate-check");
    assert_eq!(j["schema_version"], 2);
    assert_eq!(j["matrix_source"], "chains");
    assert_eq!(j["gateways"][0]["versions"][3]["answers"][10]["answer"], "nothing");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_gateway_without_listeners_is_located() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "gw.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: a}\nspec: {gatewayClassName: cilium}\n",
    );
    let e = check(std::slice::from_ref(&p)).unwrap_err().to_string();
    assert_eq!(e, format!("{}:5:1: spec.listeners: Gateway a/gw has no listeners; a Gateway needs at least one", p.display()));
}

#[test]
fn no_gateway_and_model_refusals_are_located() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n");
    assert!(check(&[p]).unwrap_err().to_string().contains("no Gateway among the inputs"));
    let p = write(
        d.path(),
        "gw.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  gatewayClassName: cilium\n  listeners: [{name: udp, port: 53, protocol: UDP}]\n",
    );
    let e = check(std::slice::from_ref(&p)).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:1: Gateway gw:", p.display())), "{e}");
    assert!(e.contains("UDP is not modelled"), "{e}");
}

#[test]
fn an_unknown_version_names_the_pinned_ones() {
    let pins = crate::versions::Pins::load_default().unwrap();
    let e = model::resolve_versions(&pins, &["1.18.0".into()]).unwrap_err();
    assert!(e.contains("not pinned in") && e.contains("kind-config/versions.yaml") && e.contains("pinned: 1.19.5"), "{e}");
}

#[test]
fn fail_on_names_are_checked() {
    assert_eq!(FailOn::parse("answer-changed").unwrap(), FailOn::AnswerChanged);
    assert!(FailOn::parse("conflict").unwrap_err().contains("not one of conflicted, not-accepted"));
}

#[test]
fn versions_that_agree_merge_into_ranges() {
    let (_, checks) = check(&[example()]).unwrap();
    let pinned: Vec<CiliumVersion> = opts().versions.into_iter().map(|(v, _)| v).collect();
    let ranges: Vec<String> = expectation_groups(&checks[0], &pinned).into_iter().map(|g| g.range).collect();
    assert_eq!(ranges, ["<1.19.6", ">=1.19.6, <1.20.0", ">=1.20.0"]);
}

/// Inputs for `--complete`: a Gateway whose HTTPS listener names a Secret the input lacks and
/// whose second listener names one in another namespace that the input has (with a grant), and
/// a route to a Service the input lacks beside one it has.
const COMPLETE_INPUT: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: app}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: www.example.org, tls: {certificateRefs: [{name: missing-tls}]}}
  - {name: shared, port: 443, protocol: HTTPS, hostname: shop.example.org, tls: {certificateRefs: [{name: shared-tls, namespace: certs}]}}
---
apiVersion: v1
kind: Secret
metadata: {name: shared-tls, namespace: certs}
type: kubernetes.io/tls
data: {tls.crt: c2VjcmV0, tls.key: c2VjcmV0}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: gw-to-certs, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: app}]
  to: [{group: "", kind: Secret}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: app}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: web, port: 80}]
  - backendRefs: [{name: gone, port: 80}]
"#;

fn complete_input() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("in.yaml");
    std::fs::write(&p, COMPLETE_INPUT).unwrap();
    (dir, p)
}

#[test]
fn by_default_what_the_input_lacks_is_stood_in() {
    let (_d, p) = complete_input();
    let inputs = read::read(&[p]).unwrap();
    let [d] = derive::derive(&inputs.objects).unwrap().try_into().unwrap();
    assert!(d.certs.iter().any(|c| c.label() == "Secret missing-tls"), "{:?}", d.certs);
    assert!(d.backends.keys().any(|b| b.as_str() == "gone"), "{:?}", d.backends);
}

#[test]
fn complete_input_leaves_what_it_lacks_missing_and_stands_in_for_other_namespaces_secrets() {
    let (_d, p) = complete_input();
    let inputs = read::read(&[p]).unwrap();
    let [d] = derive::derive_with(&inputs.objects, derive::DeriveOptions { complete: true, each_file: false }).unwrap().try_into().unwrap();
    assert!(!d.certs.iter().any(|c| c.label() == "Secret missing-tls"), "{:?}", d.certs);
    assert!(d.notes.iter().any(|n| n.contains("Secret missing-tls is not in the input: missing")), "{:?}", d.notes);
    assert!(!d.backends.keys().any(|b| b.as_str() == "gone"), "{:?}", d.backends);
    assert!(d.backends.keys().any(|b| b.as_str() == "web"), "{:?}", d.backends);
    assert!(d.notes.iter().any(|n| n.contains("Service gone is not in the input: missing")), "{:?}", d.notes);
    // The other namespace's Secret, referenced and in the input, is stood in for by a generated
    // certificate in its namespace: Cilium reads its PEM (validateTLSSecret), so a placeholder
    // would make the listener InvalidCertificateRef on a cluster (found by the differential).
    // Its key never reaches the derived case.
    assert!(d.certs.iter().any(|c| c.label() == "Secret certs/shared-tls"), "{:?}", d.certs);
    assert!(!d.manifests.contains("c2VjcmV0"), "a Secret's data never reaches the derived case:\n{}", d.manifests);
    assert!(!d.manifests.contains(derive::PLACEHOLDER_B64), "{}", d.manifests);

    // What the model makes of it: the missing Secret invalidates its listener, the permitted
    // one in another namespace resolves.
    let mut o = opts();
    o.complete = true;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[_d.path().join("in.yaml")], &o)).unwrap();
    let r = checks[0].versions.iter().find(|r| r.version == "1.19.6").unwrap();
    let cond = |l: &str, t: &str| -> String {
        let cs = &r.listeners.iter().find(|(n, _)| n == l).unwrap().1;
        cs.iter().find(|c| c.type_ == t).map(|c| format!("{}/{}", c.status, c.reason)).unwrap_or_default()
    };
    assert_eq!(cond("https", "ResolvedRefs"), "False/InvalidCertificateRef");
    assert_eq!(cond("shared", "ResolvedRefs"), "True/ResolvedRefs");
    // On 1.19.x the invalid listener keeps its chain, whose Secret never arrives: the computed
    // answer is Envoy's, a reset (not a handshake closed for want of a certificate).
    let www = r.answers.iter().find(|(k, _)| k.to_string() == "www.example.org on 443").map(|(_, a)| a.clone());
    assert_eq!(www, Some(answer::Reply::nothing(crate::case::NothingHow::Reset)), "{:?}", r.answers);
}

/// What one Envoy answered for every key of `keys`: a reset each.
fn resets(keys: &[MatrixKey]) -> observe::EnvoyObservation {
    let fact =
        crate::judge::ProbeFact { outcome: crate::judge::OutcomeClass::Reset, leaf: None, alert: None, served_by: None, http_status: None };
    let probes = keys
        .iter()
        .map(|k| crate::evidence::ProbeRecord {
            key: crate::case::ProbeKey { port: k.port, sni: k.sni.clone(), http: k.plain, plain: k.plain, gateway: None, path: None },
            address: "127.0.0.1:1".into(),
            observations: Vec::new(),
            facts: vec![fact.clone()],
        })
        .collect();
    observe::EnvoyObservation { probes, listeners: None, dump_error: None, withdrawn: Default::default() }
}

fn shared(version: &str, with: &str, o: observe::EnvoyObservation) -> observe::VersionObservation {
    observe::VersionObservation {
        version: CiliumVersion::parse(version).unwrap(),
        shared_with: vec![CiliumVersion::parse(with).unwrap()],
        observed: Ok(std::sync::Arc::new(o)),
    }
}

#[test]
fn a_version_served_by_a_shared_envoy_gets_every_answer_or_says_which_it_lacks() {
    let (_, checks) = check(&[example()]).unwrap();
    let c = &checks[0];
    let d = &c.derived;
    let names = BTreeMap::new();
    let one = |o: observe::VersionObservation| {
        let mut r = c.versions.iter().find(|r| r.version == "1.19.7").unwrap().clone();
        observe_into(&mut r, d, &o, &names);
        r
    };
    // The Envoy that served 1.19.6 answered every key: 1.19.7 reports all of them, as observed.
    let r = one(shared("1.19.7", "1.19.6", resets(&d.matrix)));
    assert_eq!(r.error, None);
    assert_eq!(r.shared_envoy, ["1.19.6"]);
    assert_eq!(r.answers.len(), d.matrix.len());
    assert!(r.answers.iter().all(|(_, a)| a.how_text() == "reset"), "{:?}", r.answers);
    // An observation lacking a key is not reported as complete.
    let r = one(shared("1.19.7", "1.19.6", resets(&d.matrix[1..])));
    assert_eq!(r.answers.len(), d.matrix.len() - 1);
    assert_eq!(r.error, Some(format!("no observation of {}", d.matrix[0])));
    // Another version's observations are never taken for this one.
    let r = one(shared("1.19.6", "1.19.7", resets(&d.matrix)));
    assert!(r.answers.is_empty() && r.error.as_deref().is_some_and(|e| e.contains("offered for 1.19.7")), "{:?}", r.error);
    // A shared Envoy that did not start leaves every version it was for without answers.
    let r = one(observe::VersionObservation {
        version: CiliumVersion::parse("1.19.7").unwrap(),
        shared_with: vec![CiliumVersion::parse("1.19.6").unwrap()],
        observed: Err("Envoy refused its bootstrap".into()),
    });
    assert!(r.answers.is_empty());
    assert_eq!(r.error.as_deref(), Some("Envoy refused its bootstrap"));
}

#[test]
fn every_output_says_which_versions_share_an_envoy() {
    let (inputs, mut checks) = check(&[example()]).unwrap();
    let report = |checks: &[GatewayCheck]| {
        let r = Report {
            checks,
            skipped: inputs.skipped_line(),
            skipped_counts: inputs.skipped.clone(),
            envoy: true,
            envoy_version: None,
            fail_on: FailOn::ALL.iter().copied().collect(),
            baseline: None,
        };
        (format::table_text(&r), format::markdown_text(&r), format::json_value(&r))
    };
    let (table, md, json) = report(&checks);
    assert!(!table.contains("share one Envoy") && !md.contains("share one Envoy"), "nothing shared, nothing said");
    assert_eq!(json["gateways"][0]["versions"][2]["shared_envoy"], serde_json::json!([]));
    for (v, with) in [("1.19.6", "1.19.7"), ("1.19.7", "1.19.6")] {
        checks[0].versions.iter_mut().find(|r| r.version == v).unwrap().shared_envoy = vec![with.to_string()];
    }
    let (table, md, json) = report(&checks);
    let line = "1.19.6 and 1.19.7 share one Envoy: identical configuration";
    assert!(table.contains(line) && md.contains(line), "{table}\n{md}");
    assert!(table.contains("Envoy on 1.19.7 (model):\n  the same Envoy as 1.19.6 (identical configuration)"), "{table}");
    let versions = &json["gateways"][0]["versions"];
    assert_eq!((versions[1]["version"].as_str(), &versions[1]["shared_envoy"]), (Some("1.19.6"), &serde_json::json!(["1.19.7"])));

    // A version predicted like another (--assume-like) names its stand-in: the lists are not
    // each other's mirror, and one Envoy is still one line.
    let names: Vec<String> = checks[0].versions.iter().map(|r| r.version.clone()).collect();
    let [a, b, c] = [&names[0], &names[1], &names[2]];
    for (v, with) in [(a, vec![b.clone(), b.clone()]), (b, vec![a.clone(), b.clone()]), (c, vec![a.clone(), b.clone()])] {
        checks[0].versions.iter_mut().find(|r| &r.version == v).unwrap().shared_envoy = with;
    }
    let (table, _, _) = report(&checks);
    let lines: Vec<&str> = table.lines().filter(|l| l.contains("share one Envoy")).collect();
    assert_eq!(lines, [format!("  {a}, {b} and {c} share one Envoy: identical configuration")], "{table}");
}

#[test]
fn an_envoy_row_without_gateway_ports_says_none_rather_than_an_empty_list() {
    // The operator lane's rows come from Envoy's dump (local ports only): no `(ports )`.
    let (inputs, mut checks) = check(&[example()]).unwrap();
    let e = &mut checks[0].versions[0].envoy[0];
    e.ports.clear();
    let name = e.name.clone();
    let r = Report {
        checks: &checks,
        skipped: inputs.skipped_line(),
        skipped_counts: inputs.skipped.clone(),
        envoy: false,
        envoy_version: None,
        fail_on: BTreeSet::new(),
        baseline: None,
    };
    let text = format::table_text(&r);
    assert!(!text.contains("(ports )"), "{text}");
    assert!(text.lines().any(|l| l.starts_with(&format!("  {name}: "))), "{text}");
}

/// With `each_file`, a Gateway's derived case carries only its own file's namespaces; without,
/// every file's (the differential's 200 layouts made each case 4,000 namespaces).
#[test]
fn each_file_keeps_a_gateways_case_to_its_own_file() {
    let d = tempfile::tempdir().unwrap();
    let layout = |i: u32| {
        format!(
            "apiVersion: v1
kind: Namespace
metadata: {{name: d{i}-app}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: d{i}}}
spec:
  gatewayClassName: cilium
  listeners: [{{name: http, port: 80, protocol: HTTP}}]
"
        )
    };
    let paths: Vec<std::path::PathBuf> = (0..2)
        .map(|i| {
            let p = d.path().join(format!("layout-{i}.yaml"));
            std::fs::write(&p, layout(i)).unwrap();
            p
        })
        .collect();
    let inputs = read::read(&paths).unwrap();
    let names = |each_file: bool| -> Vec<Vec<String>> {
        derive::derive_with(&inputs.objects, derive::DeriveOptions { complete: false, each_file })
            .unwrap()
            .iter()
            .map(|x| x.namespaces.values().cloned().collect())
            .collect()
    };
    assert_eq!(names(true), [vec!["d0-app".to_string()], vec!["d1-app".to_string()]]);
    let shared = names(false);
    assert_eq!(shared.len(), 2);
    assert!(shared[0].contains(&"d1-app".to_string()), "{shared:?}");
}

/// A route's backendRef port becomes the port of the backend standing in for its Service (80
/// plain, 443 TLS): with the input's own port (8080 here) the derived case, run on any lane at
/// 1.20.1+, answered BackendNotFound where the user's Service serves that port (found by
/// workflow::check_layout at 1.20.1 once the model port-checks backends).
#[test]
fn a_derived_route_asks_its_stand_in_backend_for_the_port_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "ports.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: app}\nspec:\n  gatewayClassName: cilium\n  listeners:\n    - {name: http, port: 80, protocol: HTTP, hostname: www.example.com}\n    - {name: tls, port: 443, protocol: TLS, hostname: api.example.com, tls: {mode: Passthrough}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: web, namespace: app}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [www.example.com]\n  rules: [{backendRefs: [{name: site, port: 8080}]}]\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {name: api, namespace: app}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [api.example.com]\n  rules: [{backendRefs: [{name: api, port: 8443}]}]\n",
    );
    let inputs = read::read(&[f]).unwrap();
    let [d] = derive::derive(&inputs.objects).unwrap().try_into().unwrap();
    assert!(!d.manifests.contains("8080") && !d.manifests.contains("8443"), "{}", d.manifests);
    assert!(d.manifests.contains("port: 80"), "{}", d.manifests);
    assert!(d.manifests.contains("port: 443"), "{}", d.manifests);
}

/// A TLSRoute without hostnames: from 1.20.0 the model predicts the API server's refusal (the
/// TLSRoute v1 schema of Gateway API v1.6.1 requires them), and `check` says so per version, in
/// every format, as a route not accepted; on 1.19.x it is served.
#[test]
fn a_tlsroute_the_api_server_refuses_is_said_per_version() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "bare.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: app}\nspec:\n  gatewayClassName: cilium\n  listeners:\n    - {name: tls, port: 443, protocol: TLS, hostname: api.example.com, tls: {mode: Passthrough}}\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {name: api, namespace: app}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: api, port: 443}]}]\n",
    );
    let (inputs, checks) = check(&[f]).unwrap();
    let c = &checks[0];
    let mut said = 0;
    for v in &c.versions {
        let at_1_20 = v.version.starts_with("1.20.");
        assert_eq!(v.refused.len(), usize::from(at_1_20), "{}: {:?}", v.version, v.refused);
        assert_eq!(v.routes.iter().any(|(r, _, _)| r == "api"), !at_1_20, "{}: {:?}", v.version, v.routes);
        if at_1_20 {
            said += 1;
            assert_eq!(v.refused[0].namespace.as_deref(), Some("app"), "in the input's own names");
            let events = outcome::events(v);
            assert!(
                events.iter().any(|e| e.kind == FailOn::RouteNotAccepted && e.what.contains("TLSRoute api: 422 Invalid")),
                "{events:?}"
            );
        }
    }
    assert!(said > 0, "no 1.20 version checked by default");
    let all = Report {
        checks: &checks,
        skipped: inputs.skipped_line(),
        skipped_counts: inputs.skipped.clone(),
        envoy: false,
        envoy_version: None,
        fail_on: FailOn::ALL.iter().copied().collect::<BTreeSet<_>>(),
        baseline: None,
    };
    let table = format::table_text(&all);
    assert!(table.contains("Refused by the API server on 1.20.1") && table.contains("spec.hostnames: Required value"), "{table}");
    assert!(format::markdown_text(&all).contains("refused by the API server: TLSRoute api"));
    assert!(format::json_value(&all).to_string().contains("\"refused\":[{"));
}

mod compare;
mod input;
mod namespaces;
mod plain;
mod why;
