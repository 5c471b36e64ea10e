//! The lint rules of `lint_rules.rs`, each on a case that would fail or could never pass
//! without it; every problem located at the real line and column.

use std::path::Path;

use super::super::*;
use crate::case::lint_rules::admission_warnings;

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
    // `lint`: every rule, those for cases that run on a cluster too.
    lint(&dir).err().unwrap_or_default()
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
    // The API itself wants at least one listener (minItems, from the CRD schema), and with no
    // listener nothing presents the probe's certificate.
    assert_eq!(
        fields,
        ["Gateway gw: spec.listeners", "expect[0].probes[0].answers", "expect[0].listeners.https", "expect[0].probes[0].port"],
        "{p:#?}"
    );
    assert!(p[0].message.contains("0 items; the Gateway API needs at least 1 (minItems)"), "{}", p[0]);
    assert_eq!((p[2].line, p[3].line), (9, 11));
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

/// Two groups; `second` is the second's range, `a` and `b` what each says (indented as group
/// items).
fn two_groups(second: &str, a: &str, b: &str) -> String {
    format!(
        "summary: s
certificates:
  wild: [\"*.{{apex}}\"]
manifests: [gateway.yaml]
expect:
  - cilium: \"<1.20.0\"
    provenance: inferred
{a}
  - cilium: \"{second}\"
    provenance: inferred
{b}
"
    )
}

const FIRST: &str = "    gateway: {Programmed: \"True\"}
    listeners:
      https: {Accepted: \"True\"}
    probes:
      - {port: 443, sni: \"a.{apex}\", answers: wild}
    envoy:
      listener: {filter_chains: 2}";

const SECOND: &str = "    gateway: {Programmed: \"False\"}
    listeners:
      https: {Accepted: \"False\"}
    probes:
      - {port: 443, sni: \"a.{apex}\", answers: nothing}
    envoy:
      listener: {filter_chains: 3}";

/// Two groups that both speak of 1.19.6 and want different things there: the model lane then
/// fails every version they share. Each contradiction is named at the later group's line.
#[test]
fn groups_that_contradict_at_a_version_they_share_are_refused() {
    let p = problems(&two_groups(">=1.19.6", FIRST, SECOND), GATEWAY);
    let found: Vec<(u64, &str)> = p.iter().map(|p| (p.line, p.field.as_str())).collect();
    assert_eq!(
        found,
        [
            (17, "expect[1].gateway.Programmed"),
            (19, "expect[1].listeners.https.Accepted"),
            (21, "expect[1].probes[0]"),
            (23, "expect[1].envoy.listener.filter_chains"),
        ],
        "{p:#?}"
    );
    for x in &p {
        assert!(x.message.contains("expect[0]") && x.message.contains("at Cilium 1.19.6"), "{x}");
        assert!(x.message.contains("both groups cover (<1.20.0 and >=1.19.6)"), "{x}");
    }
    // Groups that share no version may say anything.
    assert_eq!(problems(&two_groups(">=1.20.0", FIRST, SECOND), GATEWAY), vec![]);
    // The same thing said twice, or said more precisely, is no contradiction.
    let precise =
        FIRST.replace("{Accepted: \"True\"}", "{Accepted: \"True/Accepted\"}").replace("answers: wild}", "answers: wild, how: reset}");
    let agreeing = two_groups(">=1.19.6", FIRST, &precise.replace(", how: reset", ""));
    assert_eq!(problems(&agreeing, GATEWAY), vec![]);
}

/// A shared version is found from the ranges themselves, not only among the pinned versions.
#[test]
fn a_shared_version_outside_the_pins_is_found_too() {
    let case = two_groups(">=1.30.0", FIRST, SECOND).replace("\"<1.20.0\"", "\">=1.29.2\"");
    let p = problems(&case, GATEWAY);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(p[0].message.contains("at Cilium 1.30.0"), "{}", p[0]);
}

#[test]
fn server_names_that_disagree_with_chains_are_refused() {
    let case = CASE.to_string()
        + "    envoy:\n      listener: {server_names: [[\"a.{apex}\"]], chains: [{kind: https, server_names: [\"b.{apex}\"]}]}\n";
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (13, "expect[0].envoy.listener"), "{p}");
    assert!(p.message.contains("server_names and chains describe different chains"), "{p}");
    let ok = case.replace("[\"b.{apex}\"]}]", "[\"a.{apex}\"]}]");
    assert_eq!(problems(&ok, GATEWAY), vec![]);
}

#[test]
fn a_certificate_nothing_presents_is_refused() {
    let case = CASE.replace("  wild: [\"*.{apex}\"]\n", "  wild: [\"*.{apex}\"]\n  spare: [\"b.{apex}\"]\n")
        + "      - {port: 443, sni: \"b.{apex}\", answers: spare}\n";
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (13, "expect[0].probes[1].answers"), "{p}");
    assert!(p.message.contains("no listener or backend presents certificate spare"), "{p}");
    // A backend presenting it, named by no route, presents it to nobody.
    let backend = case.replace("manifests:", "backends:\n  b: {tls: spare}\nmanifests:");
    assert!(only(&backend, GATEWAY).message.contains("no listener or backend presents certificate spare"));
    // Passed traffic by a TLSRoute, it is presented for the route's hostnames.
    let passthrough = format!(
        "{}  - {{name: tls-b, port: 443, protocol: TLS, hostname: \"b.{{apex}}\", tls: {{mode: Passthrough}}}}\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: b}}\nspec:\n  parentRefs: [{{name: {{gateway}}, sectionName: tls-b}}]\n  hostnames: [\"b.{{apex}}\"]\n  rules: [{{backendRefs: [{{name: b, port: 443}}]}}]\n",
        GATEWAY
    );
    assert_eq!(problems(&backend, &passthrough), vec![]);
}

#[test]
fn a_certificate_presented_only_for_other_names_is_refused() {
    let case = CASE.to_string() + "      - {port: 443, sni: \"a.other.test\", answers: wild}\n";
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (12, "expect[0].probes[1].answers"), "{p}");
    assert!(
        p.message.contains(
            "no listener or backend presenting certificate wild is chosen for a.other.test: it is presented for *.example.test only"
        ),
        "{p}"
    );
    // A wildcard listener is chosen for a name two labels down, whatever the certificate covers.
    let deep = CASE.to_string() + "      - {port: 443, sni: \"deep.a.{apex}\", answers: wild}\n";
    assert_eq!(problems(&deep, GATEWAY), vec![]);
    // A listener without a hostname presents its certificate for every name.
    let catch_all = GATEWAY.replace(" hostname: \"*.{apex}\",", "");
    assert_eq!(problems(&case, &catch_all), vec![]);
}

fn listeners(n: usize) -> String {
    let mut gw = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: {gateway}}\nspec:\n  gatewayClassName: cilium\n  listeners:\n  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}\n".to_string();
    for i in 1..n {
        gw.push_str(&format!("  - {{name: l{i}, port: 443, protocol: HTTPS, hostname: \"h{i}.{{apex}}\", tls: {{certificateRefs: [{{name: {{secret:wild}}}}]}}}}\n"));
    }
    gw
}

/// The API's own limits, from the pinned CRD bundles' schemas: 64 listeners.
#[test]
fn more_listeners_than_the_api_allows_are_refused() {
    assert_eq!(problems(CASE, &listeners(64)), vec![]);
    for n in [65, 200] {
        let p = only(CASE, &listeners(n));
        assert_eq!((p.line, p.field.as_str()), (6, "Gateway gw: spec.listeners"), "{p}");
        assert!(p.file.ends_with("gateway.yaml"));
        assert!(p.message.contains(&format!("{n} items; the Gateway API allows at most 64 (maxItems)")), "{p}");
        assert!(p.message.contains("gateway-api v1.4.1, v1.6.1"), "{p}");
    }
}

/// Lower-case RFC 1123 hostnames, no bare `*`: the schema's pattern, located at the value.
#[test]
fn hostnames_the_api_pattern_refuses_are_refused() {
    for bad in ["*.EXAMPLE.test", "WWW.x", "*", "DASH BOARD"] {
        let gw = GATEWAY.replace("hostname: \"*.{apex}\"", &format!("hostname: \"{bad}\""));
        let p = problems(CASE, &gw);
        let h = p.iter().find(|p| p.field == "Gateway gw: spec.listeners[0].hostname").unwrap_or_else(|| panic!("{bad}: {p:#?}"));
        assert_eq!((h.line, h.column), (7, 58), "{h:#?}");
        assert!(h.message.contains(&format!("{bad:?} does not match the Gateway API's pattern")), "{h}");
    }
    let route = format!(
        "{GATEWAY}---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs: [{{name: {{gateway}}}}]\n  hostnames: [\"ok.{{apex}}\", \"WWW.x\"]\n"
    );
    let p = only(CASE, &route);
    assert_eq!((p.line, p.column, p.field.as_str()), (14, 35, "HTTPRoute r: spec.hostnames[1]"), "{p}");
}

#[test]
fn a_group_that_checks_nothing_is_refused() {
    let case = CASE.to_string() + "  - {cilium: \">=1.20.0\", provenance: inferred, ref: cilium#1}\n";
    let p = only(&case, GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (12, "expect[1]"), "{p}");
    assert!(p.message.contains("checks nothing"), "{p}");
}

fn observed(range: &str, cilium: &str, date: &str) -> String {
    CASE.replace("cilium: \"*\"\n    provenance: inferred", &format!("cilium: \"{range}\"\n    provenance: observed\n    observed: {{lane: kind, cilium: \"{cilium}\", date: \"{date}\", run: 20261201T121259.300Z-kind-{cilium}-3956e1}}"))
}

#[test]
fn observed_dates_and_versions_must_be_real_and_in_range() {
    assert_eq!(problems(&observed("<1.20.0", "1.19.6", "2026-12-01"), GATEWAY), vec![]);
    let p = only(&observed("<1.20.0", "1.19.6", "2026-13-45"), GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (8, "expect[0].observed.date"), "{p}");
    assert!(p.message.contains("\"2026-13-45\" is not a date"), "{p}");
    let p = only(&observed("<1.19.6", "1.19.6", "2026-12-01"), GATEWAY);
    assert_eq!((p.line, p.field.as_str()), (8, "expect[0].observed.cilium"), "{p}");
    assert!(p.message.contains("1.19.6 is outside this group's range <1.19.6"), "{p}");
    // A version no pinned Cilium is: lint with the pins says so.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), observed("*", "9.9.9", "2026-12-01")).unwrap();
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
    let case = load(&dir).unwrap();
    let v = |s: &str| CiliumVersion::parse(s).unwrap();
    let p = lint_rules::with_pins(std::slice::from_ref(&case), &[v("1.19.5"), v("1.19.6")]);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!((p[0].line, p[0].field.as_str()), (8, "expect[0].observed.cilium"), "{}", p[0]);
    assert!(p[0].message.contains("9.9.9 is not a pinned Cilium version (1.19.5, 1.19.6)"), "{}", p[0]);
}

const SECRET_ELSEWHERE: &str = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: kube-system}\n";
const BINDING: &str = "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: NAME}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: \"{namespace}\"}]\n";

/// A manifest reaching outside the case: `run --lane kind --existing-cluster` would apply it
/// to a cluster layout-gate does not own, and nothing would delete it.
#[test]
fn objects_outside_the_case_namespaces_are_refused() {
    let p = only(CASE, &format!("{GATEWAY}{SECRET_ELSEWHERE}"));
    assert_eq!((p.line, p.field.as_str()), (11, "Secret s: metadata.namespace"), "{p}");
    assert!(p.message.contains("\"kube-system\" is not one of the case's namespaces ({namespace})"), "{p}");
    // A namespace the case creates is one of its own.
    let own = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: \"{namespace}-web\"}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: \"{namespace}-web\"}\n";
    assert_eq!(problems(CASE, &format!("{GATEWAY}{own}")), vec![]);
    let foreign_ns = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kube-public}\n";
    let p = only(CASE, &format!("{GATEWAY}{foreign_ns}"));
    assert!(p.message.contains("a Namespace the case creates is named after it: {namespace} or {namespace}-<suffix>"), "{p}");
}

#[test]
fn cluster_scoped_objects_are_refused_unless_declared_and_named_for_the_run() {
    let gw = format!("{GATEWAY}{}", BINDING.replace("NAME", "lg-admin"));
    let p = only(CASE, &gw);
    assert_eq!((p.line, p.field.as_str()), (11, "ClusterRoleBinding lg-admin"), "{p}");
    assert!(p.message.contains("cluster-scoped: declare its kind under `cluster_scoped:`"), "{p}");
    let declared = CASE.replace("manifests:", "cluster_scoped: [ClusterRoleBinding]\nmanifests:");
    let p = only(&declared, &gw);
    assert!(p.message.contains("name it after the case's namespace"), "{p}");
    let named = format!("{GATEWAY}{}", BINDING.replace("NAME", "\"{namespace}-admin\""));
    assert_eq!(problems(&declared, &named), vec![]);
    let case = {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("case.yaml"), &declared).unwrap();
        std::fs::write(dir.join("gateway.yaml"), &named).unwrap();
        load(&dir).unwrap()
    };
    assert_eq!(case.cluster_scoped, ["ClusterRoleBinding"]);
}

/// A Gateway with a TLS listener and a TLSRoute on it, with or without hostnames.
fn with_tlsroute(hostnames: bool) -> String {
    format!(
        "{GATEWAY}  - {{name: tls, port: 443, protocol: TLS, hostname: \"api.{{apex}}\", tls: {{mode: Passthrough}}}}\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: api}}\nspec:\n  parentRefs: [{{name: {{gateway}}, sectionName: tls}}]\n{}  rules: [{{backendRefs: [{{name: api, port: 443}}]}}]\n",
        if hostnames { "  hostnames: [\"api.{apex}\"]\n" } else { "" }
    )
}

fn loaded(case: &str, gateway: &str) -> super::super::Case {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("case.yaml"), case).unwrap();
    std::fs::write(dir.join("gateway.yaml"), gateway).unwrap();
    super::super::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"))
}

/// Lint warns about a TLSRoute without hostnames at the pins whose lanes apply TLSRoute v1 of
/// Gateway API v1.6.1 (the 1.20 line), from the schema's `required`; not with hostnames, and
/// not where the case expects the refusal.
#[test]
fn a_tlsroute_without_hostnames_is_warned_about_at_the_1_20_pins() {
    let p = crate::versions::Pins::load_default().unwrap();
    let pins: Vec<_> =
        p.cilium.iter().map(|p| (p.version.clone(), p.gateway_api.version.clone(), p.gateway_api.tlsroute.clone())).collect();
    let bare = loaded(CASE, &with_tlsroute(false));
    let w = admission_warnings(std::slice::from_ref(&bare), &pins);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!(w[0].field, "TLSRoute api");
    let m = &w[0].message;
    assert!(m.contains("at Cilium 1.20.0, 1.20.1, 1.20.2") && !m.contains("1.19"), "{m}");
    assert!(m.contains("Gateway API v1.6.1 TLSRoute v1: spec.hostnames: Required value"), "{m}");
    assert!(admission_warnings(&[loaded(CASE, &with_tlsroute(true))], &pins).is_empty());
    // Expected where it happens: nothing to warn about.
    let expecting = format!(
        "{CASE}  - cilium: \">=1.20.0\"\n    provenance: source\n    refused:\n      TLSRoute/api: \"spec.hostnames: Required value\"\n"
    );
    assert!(admission_warnings(&[loaded(&expecting, &with_tlsroute(false))], &pins).is_empty());
}

/// `refused:` names an object of the manifests as Kind/name, says why, and a group does not
/// expect conditions of a route it says is refused.
#[test]
fn refused_entries_are_checked() {
    let group = |body: &str| format!("{CASE}  - cilium: \">=1.20.0\"\n    provenance: source\n{body}");
    let gw = with_tlsroute(false);
    let p = only(&group("    refused:\n      TLSRoute/other: \"spec.hostnames\"\n"), &gw);
    assert!(p.field == "expect[1].refused.TLSRoute/other" && p.message.contains("no TLSRoute named \"other\""), "{p}");
    let p = only(&group("    refused:\n      api: \"spec.hostnames\"\n"), &gw);
    assert!(p.message.contains("Kind/name"), "{p}");
    let p = only(&group("    refused:\n      TLSRoute/api: \"\"\n"), &gw);
    assert!(p.message.contains("say what the API server's message names"), "{p}");
    let p = only(
        &group("    refused:\n      TLSRoute/api: \"spec.hostnames\"\n    routes:\n      api:\n        tls: {Accepted: \"True\"}\n"),
        &gw,
    );
    assert!(p.message.contains("a refused route does not exist"), "{p}");
    let case = loaded(&group("    refused:\n      TLSRoute/api: \"spec.hostnames\"\n"), &gw);
    let a = case.applied(&crate::case::CiliumVersion::parse("1.20.1").unwrap());
    assert_eq!(a.refused.len(), 1);
    assert_eq!((a.refused[0].0.kind.as_str(), a.refused[0].0.name.as_str()), ("TLSRoute", "api"));
    assert!(case.applied(&crate::case::CiliumVersion::parse("1.19.7").unwrap()).refused.is_empty());
}
