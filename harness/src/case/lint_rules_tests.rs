//! The lint rules of `lint_rules.rs`, each on a case that would fail or could never pass
//! without it; every problem located at the real line and column.

use std::path::Path;

use super::*;

const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {gateway}}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}
";

const CASE: &str = "summary: s
certificates:
  wild: [\"*.{apex}\"]
manifests: [gateway.yaml]
expect:
  - cilium: \"*\"
    provenance: inferred
    listeners:
      https: {Accepted: \"True\"}
    probes:
      - {port: 443, sni: \"a.{apex}\", answers: wild}
";

fn problems(case: &str, gateway: &str) -> Vec<Problem> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), case).unwrap();
    std::fs::write(dir.join("gateway.yaml"), gateway).unwrap();
    load(&dir).err().unwrap_or_default()
}

fn only(case: &str, gateway: &str) -> Problem {
    let p = problems(case, gateway);
    assert_eq!(p.len(), 1, "{p:#?}");
    p.into_iter().next().unwrap()
}

#[test]
fn the_base_case_is_clean() {
    assert_eq!(problems(CASE, GATEWAY), vec![]);
}

#[test]
fn a_gateway_without_listeners_keeps_listener_and_port_checks_on() {
    let gw = GATEWAY.replace("  listeners:\n  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}\n", "  listeners: []\n");
    let p = problems(CASE, &gw);
    let fields: Vec<&str> = p.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["expect[0].listeners.https", "expect[0].probes[0].port"], "{p:#?}");
    assert_eq!((p[0].line, p[1].line), (9, 11));
}

#[test]
fn condition_types_outside_gateway_api_are_refused_unless_declared() {
    let case = CASE.replace("{Accepted: \"True\"}", "{Accepted: \"True\", Flurbed: absent}");
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.column, p.field.as_str()), (9, 42, "expect[0].listeners.https.Flurbed"));
    assert!(p.message.contains("not a Gateway API condition type"), "{}", p.message);
    let declared = case.replace("manifests:", "extension_conditions: [Flurbed]\nmanifests:");
    assert_eq!(problems(&declared, GATEWAY), vec![]);
}

#[test]
fn unknown_alert_names_are_refused() {
    let case = CASE
        .replace("answers: wild}", "answers: wild}\n      - {port: 443, sni: \"b.{apex}\", answers: nothing, alert: unrecognised_name}");
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (12, "expect[0].probes[1].alert"));
    assert!(p.message.contains("not a TLS alert name"), "{}", p.message);
    let ok = case.replace("unrecognised_name", "unrecognized_name");
    assert_eq!(problems(&ok, GATEWAY), vec![]);
}

#[test]
fn two_probes_of_one_port_and_name_with_different_answers_can_never_both_hold() {
    let case = CASE.replace("answers: wild}", "answers: wild}\n      - {port: 443, sni: \"a.{apex}\", answers: nothing}");
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (12, "expect[0].probes[1]"));
    assert!(p.message.contains("probes[0] probes the same Gateway, port, name and path"), "{}", p.message);
}

#[test]
fn manifest_hostnames_must_be_dns_names_located_in_the_file() {
    let gw = GATEWAY.replace("hostname: \"*.{apex}\"", "hostname: \"DASH BOARD\"");
    let p = problems(CASE, &gw);
    let h = p.iter().find(|p| p.message.contains("is not a valid hostname")).unwrap_or_else(|| panic!("{p:#?}"));
    assert!(h.file.ends_with("gateway.yaml"));
    assert_eq!((h.line, h.column), (7, 58), "{h:#?}");
    assert_eq!(h.field, "Gateway gw: spec.listeners[0].hostname");
}

#[test]
fn folders_that_look_like_cases_but_are_skipped_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("case.yaml"), CASE).unwrap();
    std::fs::write(good.join("gateway.yaml"), GATEWAY).unwrap();
    let yml = tmp.path().join("typo");
    std::fs::create_dir_all(&yml).unwrap();
    std::fs::write(yml.join("case.yml"), CASE).unwrap();
    // A case inside another case's folder, and one two groups deep, are never run; one group
    // below the root (like cases/cilium/<case>) is.
    for nested in ["good/inner", "group/sub/deep"] {
        let nested = tmp.path().join(nested);
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("case.yaml"), CASE).unwrap();
    }
    let grouped = tmp.path().join("group/ok");
    std::fs::create_dir_all(&grouped).unwrap();
    std::fs::write(grouped.join("case.yaml"), CASE).unwrap();
    std::fs::write(grouped.join("gateway.yaml"), GATEWAY).unwrap();
    let p = lint(tmp.path()).unwrap_err();
    let files: Vec<String> = p.iter().map(|p| p.file.strip_prefix(tmp.path()).unwrap().display().to_string()).collect();
    assert_eq!(files, ["good/inner/case.yaml", "group/sub/deep/case.yaml", "typo/case.yml"], "{p:#?}");
    assert!(p.iter().all(|p| p.message.starts_with("skipped: ")));
    let _ = Path::new("");
}

#[test]
fn a_range_matching_no_pinned_version_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), CASE.replace("cilium: \"*\"", "cilium: \">=1.30.0\"")).unwrap();
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
    let case = load(&dir).unwrap();
    let v = |s: &str| CiliumVersion::parse(s).unwrap();
    let p = lint_rules::ranges_matching_no_version(std::slice::from_ref(&case), &[v("1.19.5"), v("1.19.6")]);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!((p[0].line, p[0].column, p[0].field.as_str()), (6, 5, "expect[0].cilium"));
    assert!(p[0].message.contains("matches no pinned Cilium version (1.19.5, 1.19.6)"), "{}", p[0].message);
    assert!(lint_rules::ranges_matching_no_version(&[case], &[v("1.30.1")]).is_empty());
}

#[test]
fn manifest_fields_the_gateway_api_types_do_not_know_are_named_at_their_line() {
    let gw = format!(
        "{GATEWAY}---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs:\n  - name: {{gateway}}\n    sectionNmae: https\n"
    );
    let p = only(CASE, &gw);
    assert_eq!((p.line, p.column), (15, 5), "{p:#?}");
    assert_eq!(p.field, "HTTPRoute r: spec.parentRefs[0].sectionNmae");
    assert!(p.message.contains("not a field of HTTPRoute"), "{}", p.message);
}
