//! Steps (`steps:`): what each applies and deletes, what exists after it, and every mistake
//! located at its file, line and field.

use std::collections::BTreeMap;
use std::path::Path;

use super::super::*;

const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {gateway}, namespace: {namespace}}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: tls-api, port: 443, protocol: TLS, hostname: \"api.{apex}\", tls: {mode: Passthrough}}
";

const ROUTE: &str = "apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: NAME}
spec:
  parentRefs: [{name: {gateway}, sectionName: tls-api}]
  hostnames: [\"api.{apex}\"]
  rules: [{backendRefs: [{name: api, port: 443}]}]
";

const CASE: &str = "summary: two steps
certificates:
  api-cert: [\"api.{apex}\"]
backends:
  api: {tls: api-cert}
manifests: [gateway.yaml, first.yaml]
expect:
  - cilium: \"*\"
    provenance: inferred
    routes:
      first:
        tls-api: {Accepted: \"True\"}
steps:
  - name: a second route
    apply: [second.yaml]
    expect:
      - cilium: \"*\"
        provenance: inferred
        routes:
          second:
            tls-api: {Accepted: \"True\"}
  - name: the first route deleted
    delete: [first.yaml]
    expect:
      - cilium: \"*\"
        provenance: inferred
        probes:
          - {port: 443, sni: \"api.{apex}\", answers: api-cert}
";

fn files() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("gateway.yaml".to_string(), GATEWAY.to_string()),
        ("first.yaml".to_string(), ROUTE.replace("NAME", "first")),
        ("second.yaml".to_string(), ROUTE.replace("NAME", "second")),
        ("again.yaml".to_string(), ROUTE.replace("NAME", "first")),
    ])
}

fn load_case(text: &str) -> Result<Case, Vec<Problem>> {
    load_text(Path::new("/cases/stepped"), text, &files())
}

fn only_problem(from: &str, to: &str) -> Problem {
    assert!(CASE.contains(from), "test edit {from:?} does not apply");
    let problems = load_case(&CASE.replacen(from, to, 1)).expect_err("the edited case should be refused");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.into_iter().next().unwrap()
}

/// The first problem of an edit whose mistake also leaves later expectations pointing at nothing.
fn first_problem(from: &str, to: &str) -> Problem {
    let problems = load_case(&CASE.replacen(from, to, 1)).expect_err("the edited case should be refused");
    problems.into_iter().next().unwrap()
}

fn names(c: &Case) -> Vec<String> {
    c.manifests.iter().map(|m| m.path.file_name().unwrap().to_string_lossy().into_owned()).collect()
}

#[test]
fn each_step_is_what_exists_after_it_with_its_own_expectations() {
    let c = load_case(CASE).unwrap();
    assert_eq!(c.step_count(), 3);
    assert_eq!((c.step_name(0), c.step_name(1), c.step_name(2)), (FIRST_STEP, "a second route", "the first route deleted"));
    assert_eq!(names(&c.at_step(0)), ["gateway.yaml", "first.yaml"]);
    assert_eq!(names(&c.at_step(1)), ["gateway.yaml", "first.yaml", "second.yaml"]);
    assert_eq!(names(&c.at_step(2)), ["gateway.yaml", "second.yaml"]);
    let v = CiliumVersion::parse("1.20.2").unwrap();
    assert_eq!(c.at_step(1).applied(&v).routes[0].0, "second");
    assert_eq!(c.at_step(2).applied(&v).probes.len(), 1);
    assert!(c.at_step(2).steps.is_empty(), "a step's view is one step");
    // Every file any step applies is the case's, for lint, hashing and the namespace scan.
    assert_eq!(c.all_manifests().len(), 3);
    assert!(c.file_digests.contains_key("second.yaml"));
}

#[test]
fn a_case_without_steps_is_one_step() {
    let c = load_case(&CASE[..CASE.find("steps:").unwrap()]).unwrap();
    assert_eq!(c.step_count(), 1);
    assert_eq!(names(&c.at_step(0)), names(&c));
}

#[test]
fn a_step_expects_only_what_exists_after_it() {
    // `first` is deleted by the last step: a condition on it there names a route that is gone.
    let p = only_problem(
        "          - {port: 443, sni: \"api.{apex}\", answers: api-cert}",
        "          - {port: 443, sni: \"api.{apex}\", answers: api-cert}\n        routes:\n          first:\n            tls-api: {Accepted: \"True\"}",
    );
    assert!(p.field.starts_with("steps[1].expect[0].routes"), "{p}");
    assert_eq!(p.file, Path::new("/cases/stepped/case.yaml"));
    assert!(p.line > 20, "{p}");
}

#[test]
fn step_mistakes_are_located() {
    let p = only_problem("delete: [first.yaml]", "delete: [second.yaml, first.yaml, first.yaml]");
    // second.yaml is applied by step 0 and so present; the second first.yaml is gone by then.
    assert_eq!(p.field, "steps[1].delete", "{p}");
    assert!(p.message.contains("\"first.yaml\" is not applied at this step"), "{p}");

    let p = first_problem("apply: [second.yaml]", "apply: [first.yaml]");
    assert_eq!((p.field.as_str(), p.line), ("steps[0].apply", 15), "{p}");
    assert!(p.message.contains("already applied"), "{p}");

    let p = first_problem("apply: [second.yaml]", "apply: [again.yaml]");
    assert!(p.message.contains("TLSRoute first is already applied"), "{p}");

    let p = first_problem("apply: [second.yaml]", "apply: [missing.yaml]");
    assert_eq!(p.field, "steps[0].apply", "{p}");

    let p = only_problem("name: a second route", "name: \" \"");
    assert_eq!(p.field, "steps[0].name", "{p}");

    let p = only_problem("    delete: [first.yaml]\n", "");
    assert_eq!(p.field, "steps[1]", "{p}");
    assert!(p.message.contains("applies or deletes"), "{p}");

    let p = only_problem("    apply: [second.yaml]", "    apply: [second.yaml]\n    wait: 5s");
    assert!(p.message.contains("wait"), "{p}");
}
