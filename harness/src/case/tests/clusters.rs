//! `clusters:` expectations and `backends.<name>.app_protocol`: good input loads, and each bad
//! input is one problem naming file, line and field.

use super::super::*;
use super::{GATEWAY, GOOD, write_case};

/// GOOD with a `clusters:` block and an `app_protocol` backend.
fn with_clusters(clusters: &str, app_protocol: &str) -> String {
    GOOD.replacen("  api: {tls: api-cert}\n", &format!("  api: {{tls: api-cert}}\n  web: {{app_protocol: {app_protocol}}}\n"), 1)
        + "    clusters:\n"
        + clusters
}

fn load_it(text: &str) -> Result<Case, Vec<Problem>> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_case(tmp.path(), "c", text, GATEWAY);
    load(&dir)
}

/// The only problem of `text`, with the 1-based line of the first line containing `at`.
fn only(text: &str, at: &str) -> (Problem, u64) {
    let problems = load_it(text).expect_err("the case should be refused");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let line = text.lines().position(|l| l.contains(at)).expect("marker") as u64 + 1;
    (problems.into_iter().next().unwrap(), line)
}

#[test]
fn a_clusters_expectation_and_an_app_protocol_load() {
    let case =
        load_it(&with_clusters("      api:443: {protocol: downstream}\n      web:80: {protocol: http2}\n", "kubernetes.io/h2c")).unwrap();
    let applied = case.applied(&CiliumVersion::parse("1.19.6").unwrap());
    let got: Vec<(&str, crate::types::UpstreamProtocol)> = applied.clusters.iter().map(|(k, c)| (k.as_str(), c.protocol)).collect();
    assert_eq!(got, [("api:443", crate::types::UpstreamProtocol::Downstream), ("web:80", crate::types::UpstreamProtocol::Http2)]);
    assert_eq!(applied.clusters[0].1.provenance.kind, ProvenanceKind::Reported);
    assert_eq!(
        case.backend_app_protocols.get(&crate::types::BackendName::new("web").unwrap()).map(String::as_str),
        Some("kubernetes.io/h2c")
    );
}

#[test]
fn an_unknown_protocol_is_named_with_its_field_and_the_values() {
    let text = with_clusters("      api:443: {protocol: h2}\n", "kubernetes.io/h2c");
    let (p, line) = only(&text, "protocol: h2}");
    assert_eq!(p.field, "expect[0].clusters.api:443.protocol");
    assert_eq!(p.line, line);
    assert!(p.file.ends_with("c/case.yaml"), "{}", p.file.display());
    assert!(
        p.message.contains("\"h2\" is not an upstream protocol; use one of none, downstream, downstream-http1, http1, http2, http3, auto"),
        "{p}"
    );
}

#[test]
fn a_cluster_key_must_be_a_declared_backend_and_port() {
    let text = with_clusters("      api: {protocol: downstream}\n", "kubernetes.io/h2c");
    let (p, line) = only(&text, "api: {protocol");
    assert_eq!((p.field.as_str(), p.line), ("expect[0].clusters.api", line));
    assert!(p.message.contains("as <service>:<port>"), "{p}");
    let text = with_clusters("      nope:80: {protocol: http1}\n", "kubernetes.io/h2c");
    let (p, line) = only(&text, "nope:80");
    assert_eq!((p.field.as_str(), p.line), ("expect[0].clusters.nope:80", line));
    assert!(p.message.contains("no backend named \"nope\" under `backends:`; backends: api, web"), "{p}");
    let text = with_clusters("      api:0: {protocol: http1}\n", "kubernetes.io/h2c");
    assert_eq!(only(&text, "api:0").0.field, "expect[0].clusters.api:0");
}

#[test]
fn a_cluster_without_a_protocol_or_with_another_key_is_refused() {
    let text = with_clusters("      api:443: {protocl: http1}\n", "kubernetes.io/h2c");
    let problems = load_it(&text).unwrap_err();
    assert!(problems.iter().any(|p| p.message.contains("unknown field `protocl`")), "{problems:#?}");
}

#[test]
fn a_bad_app_protocol_is_named() {
    let text = with_clusters("      api:443: {protocol: downstream}\n", "\"h2 c\"");
    let (p, line) = only(&text, "app_protocol");
    assert_eq!((p.field.as_str(), p.line), ("backends.web.app_protocol", line));
    assert!(p.message.contains("is not an appProtocol"), "{p}");
}
