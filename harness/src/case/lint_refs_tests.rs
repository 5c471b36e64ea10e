//! Lint of the parts the Cilium fixtures brought: refs that must resolve, `chains:` kinds, and
//! case folders grouped one level down (`cases/cilium/<fixture>`).

use std::path::Path;

use super::*;

const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: {gateway}, namespace: {namespace}}
spec:
  gatewayClassName: cilium
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\", tls: {certificateRefs: [{name: {secret:wild}}]}}
";

fn case_text(reference: &str, envoy: &str) -> String {
    format!(
        "summary: a test case
certificates:
  wild: [\"*.{{apex}}\"]
manifests: [gateway.yaml]
expect:
  - cilium: \"*\"
    provenance: source
    ref: {reference}
    listeners:
      https: {{Accepted: \"True\"}}
    envoy:
{envoy}
"
    )
}

const CHAINS: &str = "      listener: {chains: [{kind: http}, {kind: https, server_names: [\"*.{apex}\"]}]}";

fn write(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("case.yaml"), text).unwrap();
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
}

#[test]
fn an_unresolvable_ref_is_refused_at_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    write(&dir, &case_text("\"cilium-gateway.md §4\"", CHAINS));
    let problems = load(&dir).expect_err("a ref to a file outside the repository must be refused");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!((p.line, p.column, p.field.as_str()), (8, 10, "expect[0].ref"), "{p}");
    assert!(p.message.contains("cilium-gateway.md"), "{p}");
    // The same case with an upstream issue loads.
    write(&dir, &case_text("cilium#44889", CHAINS));
    load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
}

#[test]
fn chains_parse_and_a_wrong_kind_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    write(&dir, &case_text("cilium#44889", CHAINS));
    let case = load(&dir).unwrap();
    let applied = case.applied(&CiliumVersion::parse("1.20.1").unwrap());
    let chains = applied.envoy[0].1.chains.clone().unwrap();
    assert_eq!(chains[0], ChainExpect { kind: ChainKind::Http, server_names: vec![] });
    assert_eq!(chains[1], ChainExpect { kind: ChainKind::Https, server_names: vec!["*.example.test".into()] });
    write(&dir, &case_text("cilium#44889", "      listener: {chains: [{kind: terminate}]}"));
    let problems = load(&dir).unwrap_err();
    assert!(
        problems.iter().any(|p| p.field == "expect[0].envoy.listener.chains.kind" && p.message.contains("http, https or tcp_proxy")),
        "{problems:#?}"
    );
    write(&dir, &case_text("cilium#44889", "      listener: {filter_chains: 3, chains: [{kind: http}]}"));
    let problems = load(&dir).unwrap_err();
    assert!(problems.iter().any(|p| p.message.contains("filter_chains is 3 but chains lists 1")), "{problems:#?}");
}

#[test]
fn grouped_case_folders_load_under_their_group_name() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cases");
    write(&root.join("top"), &case_text("cilium#44889", CHAINS));
    write(&root.join("cilium").join("fixture-a"), &case_text("cilium#44889", CHAINS));
    let names: Vec<String> = lint(&root).unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["cilium/fixture-a", "top"]);
    // The name does not depend on which folder lint was pointed at.
    let names: Vec<String> = lint(&root.join("cilium")).unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["cilium/fixture-a"]);
    let one = load(&root.join("cilium").join("fixture-a")).unwrap();
    assert_eq!((one.name.as_str(), one.slug().as_str()), ("cilium/fixture-a", "cilium-fixture-a"));
}
