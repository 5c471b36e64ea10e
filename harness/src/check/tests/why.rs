//! `check` says why a listener is conflicted or refused in every output (issue #17 items 2
//! and 6): the pair, the meeting hostnames, Cilium's message, the rule, the upstream function,
//! the cases without it; in the table and Markdown, not only in JSON.

use std::path::PathBuf;

use super::super::*;

fn report_of(checks: &[GatewayCheck]) -> format::Report<'_> {
    format::Report {
        checks,
        skipped: None,
        skipped_counts: Default::default(),
        envoy: false,
        envoy_version: None,
        fail_on: outcome::FailOn::ALL.into_iter().collect(),
        baseline: Some(("1.19.5".into(), "test".into())),
    }
}

fn dns01() -> GatewayCheck {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let opts = super::namespaces::opts_with(Vec::new());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let p = repo.join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
    let (_, checks) = rt.block_on(check_paths(&[p], &opts)).unwrap_or_else(|e| panic!("{e}"));
    checks.into_iter().next().unwrap()
}

const PAIR: &str =
    "listener https conflicts with tls-api, tls-vm-exportproxy and tls-cdi-uploadproxy on port 443: Conflicted ProtocolConflict";

#[test]
fn the_table_and_markdown_say_why_grouped_by_versions() {
    let checks = [dns01()];
    let r = report_of(&checks);
    // Whole lines (`--wide`): at the default width the long ones wrap.
    let table = format::table_text_at(&r, None);
    let md = format::markdown_text(&r);
    // Markdown escapes what it must (`[`, `<`, `>`): its wants are escaped the same way.
    for (text, esc) in [(&table, false), (&md, true)] {
        for want in [
            PAIR,
            "*.example.org meets api.example.org (tls-api), vm-exportproxy.example.org (tls-vm-exportproxy) and cdi-uploadproxy.example.org (tls-cdi-uploadproxy)",
            "Listener conflicts with listener",
            "rule: protocol-conflict [>=1.19.6; source]",
            "upstream: samePortCrossProtocolConflictedListeners in operator/pkg/gateway-api/gateway_reconcile.go at cilium v1.19.6",
            "upstream: conflictsWithinSource in operator/pkg/gateway-api/gateway_reconcile.go at cilium v1.20.1",
            "a layout without it: cases/dns01-recommended-option1",
            "because: rule conflicted-dropped",
        ] {
            let want = if esc { crate::markdown::cell(want) } else { want.to_string() };
            assert!(text.contains(&want), "missing {want:?} in\n{text}");
        }
    }
    // 1.19.6 and 1.19.7 share their causes: said once under both.
    assert!(table.contains("\n  1.19.6 and 1.19.7:\n"), "{table}");
    assert!(md.contains("\n1.19.6 and 1.19.7:\n"), "{md}");
    assert_eq!(table.matches("upstream: samePortCrossProtocolConflictedListeners").count(), 1, "{table}");
}

#[test]
fn json_carries_the_same_why() {
    let checks = [dns01()];
    let j = format::json_value(&report_of(&checks));
    let v6 = &j["gateways"][0]["versions"].as_array().unwrap().iter().find(|v| v["version"] == "1.19.6").unwrap()["why"];
    let conflict = v6.as_array().unwrap().iter().find(|w| w["kind"] == "conflict").expect("a conflict");
    assert_eq!(conflict["listeners"], serde_json::json!(["https"]));
    assert_eq!(conflict["reason"], "ProtocolConflict");
    assert_eq!(conflict["meets"][0], serde_json::json!({"listener": "tls-api", "hostname": "api.example.org"}));
    assert_eq!(conflict["rule"], "protocol-conflict");
    assert!(conflict["upstream"].as_str().unwrap().starts_with("samePortCrossProtocolConflictedListeners"));
    assert_eq!(conflict["lines"][0], PAIR);
    let verdict = j["gateways"][0]["verdicts"].as_array().unwrap().iter().find(|v| v["version"] == "1.19.6").unwrap();
    assert_eq!(verdict["causes"][0], PAIR);
}

#[test]
fn a_layout_without_conflicts_has_no_why() {
    let mut c = dns01();
    c.versions.retain(|v| v.version == "1.19.5");
    // 1.19.5 only reports the TLS listeners' route kinds, never a conflict.
    assert!(c.versions[0].why.iter().all(|w| w.kind == "refused"), "{:?}", c.versions[0].why);
    let checks = [c];
    assert!(!format::table_text(&report_of(&checks)).contains("conflicts with"));
}

#[test]
fn tls_on_the_http_port_says_why_in_the_matrix() {
    let checks = [dns01()];
    let r = report_of(&checks);
    // Every cell whole (`--wide`): the default output cuts the long ones (below).
    let table = format::table_text_at(&r, None);
    // The port-80 TLS rows carry the marker in the cell; 443 never does.
    let row80 = table.lines().find(|l| l.starts_with("80    www.example.org")).expect("a port-80 row");
    assert!(row80.contains("Secret tenant-root-gateway-tls [shared 80+443 listener]"), "{row80}");
    let row443 = table.lines().find(|l| l.starts_with("443   www.example.org")).expect("a port-443 row");
    assert!(!row443.contains("[shared"), "{row443}");
    // A row that answers nothing needs no reason.
    let none = table.lines().find(|l| l.starts_with("80    unrelated.invalid")).unwrap();
    assert!(!none.contains("[shared"), "{none}");
    // The legend names the rule per group of versions.
    assert!(table.contains("[shared 80+443 listener] on 1.19.5: port 80 has only HTTP listeners, but Envoy listener `listener` serves ports 80, 443 (rule single-listener:"), "{table}");
    assert!(table.contains("on 1.19.6, 1.19.7 and 1.20.1: port 80 has only HTTP listeners"), "{table}");
    let md = format::markdown_text(&r);
    assert!(md.contains(&crate::markdown::cell("[shared 80+443 listener]")), "{md}");
    let j = format::json_value(&r);
    let a80 = j["gateways"][0]["versions"][0]["answers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["port"] == 80 && a["sni"] == "www.example.org")
        .cloned()
        .unwrap();
    assert_eq!(a80["shared_listener"]["rule"], "single-listener");
}

#[test]
fn a_split_listener_gives_no_reason_to_mark() {
    // Passthrough on its own port: from 1.19.6 the HTTPS port gets its own Envoy listener
    // (per-port split), so a handshake on 80 meets no TLS chain and nothing is marked.
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml"))
        .unwrap()
        .replace("{name: tls-api, port: 443,", "{name: tls-api, port: 6443,");
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("split.yaml");
    std::fs::write(&p, text).unwrap();
    let opts = super::namespaces::opts_with(Vec::new());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[p], &opts)).unwrap();
    let c = &checks[0];
    let v6 = c.versions.iter().find(|v| v.version == "1.19.6").unwrap();
    for (k, a) in &v6.answers {
        assert!(http_port::shared(c, v6, k, a).is_none(), "{k}: marked on a split layout: {:?}", v6.envoy);
    }
}

/// The table output fits 120 columns at a fixed width (no terminal involved): the matrix's long
/// cells end in `…`, and `--wide` prints them whole.
#[test]
fn the_tables_fit_120_columns_and_wide_prints_every_cell() {
    let checks = [dns01()];
    let r = report_of(&checks);
    let fitted = format::table_text(&r);
    let rows: Vec<&str> = fitted.lines().filter(|l| l.starts_with("PORT ") || l.starts_with("80 ") || l.starts_with("443 ")).collect();
    assert!(rows.len() > 4, "{fitted}");
    assert!(rows.iter().all(|l| l.chars().count() <= crate::table::WIDTH), "{fitted}");
    assert!(rows.iter().any(|l| l.contains('…')), "{fitted}");
    // Every line fits, the sentences and the Why block wrapped rather than cut.
    let long: Vec<&str> = fitted.lines().filter(|l| l.chars().count() > crate::table::WIDTH).collect();
    assert!(long.is_empty(), "{long:#?}");
    assert!(fitted.contains("hostnames: https *.example.org meets api.example.org (tls-api)"), "{fitted}");
    let wide = format::table_text_at(&r, crate::table::width(true));
    assert!(wide.lines().any(|l| l.starts_with("80 ") && l.chars().count() > crate::table::WIDTH), "{wide}");
    assert!(wide.contains("Secret tenant-root-gateway-tls [shared 80+443 listener]"), "{wide}");
}
