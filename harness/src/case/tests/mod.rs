//! Lint over whole case folders: each bad input gets one located problem naming its field.

use std::path::Path;

use super::*;

pub(super) const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {gateway}, namespace: {namespace}}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}
  - {name: tls-api, port: 443, protocol: TLS, hostname: \"api.{apex}\", tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: api}
spec:
  parentRefs: [{name: {gateway}, sectionName: tls-api}]
  hostnames: [\"api.{apex}\"]
  rules: [{backendRefs: [{name: api, port: 443}]}]
";

pub(super) const GOOD: &str = "summary: a test case
certificates:
  wild: [\"*.{apex}\"]
  api-cert: [\"api.{apex}\"]
backends:
  api: {tls: api-cert}
manifests: [gateway.yaml]
expect:
  - cilium: \">=1.19.6, <1.20.0\"
    provenance: reported
    ref: cozystack#3912
    listeners:
      https: {Conflicted: \"True/ProtocolConflict\", Accepted: \"False\"}
    routes:
      api:
        tls-api: {Accepted: \"True\"}
    probes:
      - {port: 443, sni: \"api.{apex}\", answers: api-cert}
      - {port: 443, no_sni: true, answers: nothing, how: reset, provenance: inferred}
    envoy:
      listener: {filter_chains: 2, server_names: [[\"*.{apex}\"], [\"api.{apex}\"]]}
";

pub(super) fn write_case(root: &Path, name: &str, case: &str, gateway: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), case).unwrap();
    std::fs::write(dir.join("gateway.yaml"), gateway).unwrap();
    dir
}

/// Loads a variant of GOOD with one substitution and returns its only problem.
fn problem_of(from: &str, to: &str) -> Problem {
    let tmp = tempfile::tempdir().unwrap();
    assert!(GOOD.contains(from), "test edit {from:?} does not apply");
    let dir = write_case(tmp.path(), "c", &GOOD.replacen(from, to, 1), GATEWAY);
    let problems = load(&dir).expect_err("the edited case should be refused");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.into_iter().next().unwrap()
}

#[test]
fn good_case_loads_with_everything_resolved() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_case(tmp.path(), "good", GOOD, GATEWAY);
    let case = load(&dir).unwrap();
    assert_eq!(case.name, "good");
    assert_eq!(case.gateway, "gw");
    // Certificates come sorted by name.
    assert_eq!(case.certificates[0].dns_names[0].as_str(), "api.example.test");
    let applied = case.applied(&CiliumVersion::parse("1.19.6").unwrap());
    assert_eq!(applied.probes.len(), 2);
    assert_eq!(applied.probes[0].answer, Answer::Cert(crate::types::CertName::new("api-cert").unwrap()));
    assert_eq!(applied.probes[1].provenance.kind, ProvenanceKind::Inferred);
    // It states its own provenance, so the group's ref does not speak for it.
    assert_eq!(applied.probes[1].provenance.reference, None);
    assert_eq!(applied.probes[0].provenance.reference.as_deref(), Some("cozystack#3912"));
    assert_eq!(applied.envoy[0].1.server_names.as_ref().unwrap()[0], vec!["*.example.test".to_string()]);
    assert!(case.applied(&CiliumVersion::parse("1.19.5").unwrap()).is_empty());
    assert_eq!(case.hash.len(), 64);
}

#[test]
fn unknown_key_is_named_with_line_and_column() {
    let p = problem_of("    provenance: reported\n", "    provenance: reported\n    provenanse: x\n");
    assert_eq!((p.line, p.column), (11, 5));
    assert!(p.message.contains("unknown field `provenanse`"), "{p}");
    assert_eq!(p.field, "provenanse");
    assert!(p.to_string().starts_with(&format!("{}:11:5: provenanse: unknown field", p.file.display())), "{p}");
}

#[test]
fn probe_naming_an_undeclared_certificate() {
    let p = problem_of("answers: api-cert}", "answers: api-backend}");
    assert_eq!(p.field, "expect[0].probes[0].answers");
    assert_eq!(p.line, 18);
    assert!(p.message.contains("\"api-backend\" is not a declared certificate") && p.message.contains("declared: api-cert, wild"), "{p}");
}

#[test]
fn invalid_version_range() {
    let p = problem_of("\">=1.19.6, <1.20.0\"", "\"1.19.6\"");
    assert_eq!(p.field, "expect[0].cilium");
    assert_eq!(p.line, 9);
    assert!(p.message.contains("=1.19.6"), "{p}");
    let p = problem_of("\">=1.19.6, <1.20.0\"", "\">=one\"");
    assert_eq!(p.field, "expect[0].cilium");
}

#[test]
fn port_outside_range_and_not_on_the_gateway() {
    let p = problem_of("{port: 443, sni", "{port: 70000, sni");
    assert_eq!(p.field, "expect[0].probes[0].port");
    assert!(p.message.contains("outside 1-65535"), "{p}");
    let p = problem_of("{port: 443, sni", "{port: 8443, sni");
    assert!(p.message.contains("not a port of the Gateway (its ports: 443)"), "{p}");
}

#[test]
fn unknown_listener_route_and_condition_values() {
    let p = problem_of("      https: {Conflicted", "      htps: {Conflicted");
    assert_eq!(p.field, "expect[0].listeners.htps");
    assert!(p.message.contains("has https, tls-api"), "{p}");
    let p = problem_of("tls-api: {Accepted: \"True\"}", "tls-apx: {Accepted: \"True\"}");
    assert!(p.message.contains("no parentRef \"tls-apx\""), "{p}");
    let p = problem_of("Accepted: \"False\"", "Accepted: \"Nope\"");
    assert_eq!(p.field, "expect[0].listeners.https.Accepted");
}

#[test]
fn conflicting_probe_fields() {
    let p = problem_of(
        "{port: 443, sni: \"api.{apex}\", answers: api-cert}",
        "{port: 443, sni: \"api.{apex}\", no_sni: true, answers: api-cert}",
    );
    assert!(p.message.contains("either sni or no_sni"), "{p}");
    let p = problem_of("answers: api-cert}", "answers: api-cert, how: reset}");
    assert_eq!(p.field, "expect[0].probes[0].how");
    let p = problem_of("sni: \"api.{apex}\"", "sni: \"*.{apex}\"");
    assert_eq!(p.field, "expect[0].probes[0].sni");
}

#[test]
fn envoy_facts_must_agree() {
    let p = problem_of("filter_chains: 2,", "filter_chains: 3,");
    assert!(p.message.contains("filter_chains is 3 but server_names lists 2 chains"), "{p}");
}

#[test]
fn malformed_yaml_is_located() {
    let p = problem_of("summary: a test case\n", "summary: [a test case\n");
    assert_eq!(p.line, 1);
    assert_eq!(p.field, "summary");
}

#[test]
fn manifest_problems_name_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_case(tmp.path(), "c", GOOD, &GATEWAY.replace("{secret:wild}", "{secret:wilde}"));
    let problems = load(&dir).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].file.ends_with("gateway.yaml"));
    assert_eq!((problems[0].line, problems[0].field.as_str()), (7, "placeholder"));
    let dir = write_case(tmp.path(), "d", GOOD, &GATEWAY.replace("name: {gateway}, namespace", "name: other, namespace"));
    let problems = load(&dir).unwrap_err();
    assert!(problems[0].message.contains("no Gateway named \"gw\""), "{problems:#?}");
}

#[test]
fn lint_reports_every_case() {
    let tmp = tempfile::tempdir().unwrap();
    write_case(tmp.path(), "a", &GOOD.replace("answers: api-cert}", "answers: nope}"), GATEWAY);
    write_case(tmp.path(), "b", &GOOD.replace("provenance: reported", "provenance: rumour"), GATEWAY);
    write_case(tmp.path(), "c", GOOD, GATEWAY);
    let problems = lint(tmp.path()).unwrap_err();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].file.starts_with(tmp.path().join("a")));
    assert!(problems[1].message.contains("rumour"));
}

#[test]
fn the_catalogue_lints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let cases = lint(&root).unwrap_or_else(|p| panic!("{}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")));
    assert!(!cases.is_empty());
}

#[test]
fn plain_http_probes() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = GOOD.replace(
        "      - {port: 443, no_sni: true, answers: nothing, how: reset, provenance: inferred}",
        "      - {port: 443, no_sni: true, answers: nothing, how: reset, provenance: inferred}\n      - {port: 443, plain: true, host: \"www.{apex}\", status: 301}\n      - {port: 443, plain: true, host: \"api.{apex}\", served_by: web}",
    )
    .replace("  api: {tls: api-cert}\n", "  api: {tls: api-cert}\n  web: {}\n");
    let dir = write_case(tmp.path(), "plain", &ok, GATEWAY);
    let case = load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
    let applied = case.applied(&CiliumVersion::parse("1.19.6").unwrap());
    let plain: Vec<_> = applied.probes.iter().filter(|p| p.key.plain).collect();
    assert_eq!(plain.len(), 2);
    assert_eq!(plain[0].answer, Answer::Answered);
    assert_eq!(plain[0].status, Some(301));
    assert!(plain[0].key.http);
    assert_eq!(plain[0].key.to_string(), "443 www.example.test (plain HTTP)");

    let p = problem_of("{port: 443, sni: \"api.{apex}\", answers: api-cert}", "{port: 443, plain: true, status: 301}");
    assert!(p.message.contains("plain HTTP probe needs host"), "{p}");
    let p = problem_of(
        "{port: 443, sni: \"api.{apex}\", answers: api-cert}",
        "{port: 443, plain: true, host: a.test, sni: a.test, status: 301}",
    );
    assert!(p.message.contains("sni has no meaning for a plain HTTP probe"), "{p}");
    let p = problem_of(
        "{port: 443, sni: \"api.{apex}\", answers: api-cert}",
        "{port: 443, plain: true, host: \"api.{apex}\", answers: api-cert}",
    );
    assert!(p.message.contains("presents no certificate"), "{p}");
    let p = problem_of("{port: 443, sni: \"api.{apex}\", answers: api-cert}", "{port: 443, plain: true, host: \"api.{apex}\"}");
    assert!(p.message.contains("say what a plain HTTP probe expects"), "{p}");
    let p = problem_of("answers: api-cert}", "answers: api-cert, status: 999}");
    assert_eq!(p.field, "expect[0].probes[0].status");
    let p = problem_of("answers: api-cert}", "answers: api-cert, host: x.test}");
    assert!(p.message.contains("add plain: true"), "{p}");
}

/// Issue 36: a probe expecting `served_by` a TLS backend where a listener terminates TLS (or
/// the probe is plain HTTP) passed lint and failed at every pin: the listener forwards plain
/// HTTP, which a backend with `tls:` never answers. Lint names the file, line and field.
#[test]
fn served_by_a_tls_backend_needs_a_passthrough_to_it() {
    let p = problem_of(
        "{port: 443, sni: \"api.{apex}\", answers: api-cert}",
        "{port: 443, sni: \"api.{apex}\", answers: wild, served_by: api}",
    );
    assert_eq!(p.field, "expect[0].probes[0].served_by");
    assert_eq!(p.line, 18, "{p}");
    assert!(p.file.ends_with("c/case.yaml"), "{p}");
    assert!(
        p.message.contains("backend api accepts only TLS (tls: api-cert)")
            && p.message.contains("expects certificate wild, so a listener terminates TLS and forwards plain HTTP")
            && p.message.contains("fails at every pin"),
        "{p}"
    );
    let p =
        problem_of("{port: 443, sni: \"api.{apex}\", answers: api-cert}", "{port: 443, plain: true, host: \"api.{apex}\", served_by: api}");
    assert!(p.message.contains("this probe is plain HTTP"), "{p}");
    // Through a passthrough to it (the probe sees the backend's own certificate) it holds.
    let tmp = tempfile::tempdir().unwrap();
    let ok = GOOD.replacen("answers: api-cert}", "answers: api-cert, served_by: api}", 1);
    load(&write_case(tmp.path(), "ok", &ok, GATEWAY)).unwrap_or_else(|p| panic!("{p:#?}"));
}

#[test]
fn observed_provenance_needs_the_kind_run_that_saw_it() {
    let tmp = tempfile::tempdir().unwrap();
    let obs = "observed: {lane: kind, cilium: \"1.19.6\", date: \"2026-12-01\", run: 20261201T101010Z-kind-1.19.6}";
    // A whole observed group, and one observed probe in a reported group.
    let good = GOOD.replace("    provenance: reported\n", &format!("    provenance: observed\n    {obs}\n")).replace(
        "answers: nothing, how: reset, provenance: inferred}",
        &format!("answers: nothing, how: reset, provenance: observed, {obs}}}"),
    );
    let dir = write_case(tmp.path(), "good", &good, GATEWAY);
    let case = load(&dir).unwrap_or_else(|p| panic!("{p:#?}\n{good}"));
    let g = &case.groups[0];
    assert_eq!(g.provenance.kind, ProvenanceKind::Observed);
    assert_eq!(g.provenance.observed.as_ref().unwrap().cilium, "1.19.6");
    // The first probe inherits the group's run; the second states its own.
    assert_eq!(g.probes[0].provenance.observed.as_ref().unwrap().run, "20261201T101010Z-kind-1.19.6");
    assert_eq!(g.probes[1].provenance.kind, ProvenanceKind::Observed);

    let problem = |case: String| -> Problem {
        let d = write_case(tmp.path(), "bad", &case, GATEWAY);
        let p = load(&d).unwrap_err();
        std::fs::remove_dir_all(&d).unwrap();
        p.into_iter().next().unwrap()
    };
    let p = problem(GOOD.replace("    provenance: reported\n", "    provenance: observed\n"));
    assert_eq!((p.line, p.field.as_str()), (10, "expect[0].observed"), "{p}");
    assert!(p.message.contains("only `run --lane kind --record` writes it"), "{p}");
    let p =
        problem(GOOD.replace(
            "    provenance: reported\n",
            &format!("    provenance: observed\n    {}\n", obs.replace("lane: kind", "lane: model")),
        ));
    assert_eq!(p.field, "expect[0].observed.lane", "{p}");
    assert!(p.message.contains("only the kind lane observes Cilium"), "{p}");
    let p = problem(GOOD.replace(
        "    provenance: reported\n",
        &format!("    provenance: observed\n    {}\n", obs.replace(", run: 20261201T101010Z-kind-1.19.6", "")),
    ));
    assert_eq!(p.field, "expect[0].observed.run", "{p}");
    let p = problem(GOOD.replace("    provenance: reported\n", &format!("    provenance: reported\n    {obs}\n")));
    assert_eq!(p.field, "expect[0].observed", "{p}");
    assert!(p.message.contains("belongs to `provenance: observed`"), "{p}");
}

mod bad_files;
mod clusters;
mod lint_refs;
mod lint_rules;
mod steps;
