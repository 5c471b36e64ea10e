//! Golden outputs: every fixture in `harness/tests/data/envoy-dumps/` has its table and its
//! contract JSON in `golden/`. `LAYOUT_GATE_BLESS=1 cargo test --lib envoy_dump` rewrites them.

use std::path::{Path, PathBuf};

use super::super::{render_table, summarize_path, to_contract_json};
use crate::golden;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/envoy-dumps")
}

fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("fixture dir readable")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")))
        .collect();
    out.sort();
    out
}

#[test]
fn goldens_match_every_fixture() {
    let golden_dir = data_dir().join("golden");
    let fixtures = fixtures();
    assert!(fixtures.len() >= 10, "expected the fixture set, found {fixtures:?}");
    let mut failures = Vec::new();
    let mut expected_files = Vec::new();
    for fixture in &fixtures {
        let stem = fixture.file_name().and_then(|n| n.to_str()).expect("utf-8 name");
        let summary = summarize_path(fixture).unwrap_or_else(|e| panic!("fixture {} does not summarize: {e}", fixture.display()));
        let table = render_table(&summary);
        let json = serde_json::to_string_pretty(&to_contract_json(&summary)).expect("json") + "\n";
        for (golden_name, actual) in [(format!("{stem}.table.txt"), table), (format!("{stem}.contract.json"), json)] {
            expected_files.push(golden_name.clone());
            if let Err(e) = golden::check(&golden_dir.join(&golden_name), &actual) {
                failures.push(e);
            }
        }
    }
    // A golden without a fixture is stale: it would silently stop being checked.
    for entry in std::fs::read_dir(&golden_dir).expect("golden dir") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if !expected_files.contains(&name) {
            if golden::blessing() {
                std::fs::remove_file(golden_dir.join(&name)).expect("remove stale golden");
            } else {
                failures.push(format!("golden/{name} has no fixture"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Hand-checked facts of fixtures whose goldens a bless could otherwise get wrong unnoticed:
/// written from reading the fixture, not from the summarizer's output.
#[test]
fn hand_checked_expectations_of_the_untyped_legacy_fixture() {
    let golden_dir = data_dir().join("golden");
    let table = std::fs::read_to_string(golden_dir.join("hand-untyped-legacy-names.json.table.txt")).expect("golden table");
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "one row per chain: {table}");
    // Row order is dump order: passthrough to ns/api:443, then the wildcard terminated by HCM.
    let cols = |r: &str| r.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(cols(rows[0]), ["listener", "active", "0.0.0.0:443", "api.example.test", "tls", "*", "tcp_proxy", "ns/api:443", "-"]);
    assert_eq!(
        cols(rows[1]),
        ["listener", "active", "0.0.0.0:443", "*.example.test", "tls", "*", "http", "listener-secure", "sds:cilium-secrets/ns-wild"]
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir.join("hand-untyped-legacy-names.json.contract.json")).expect("golden json"),
    )
    .expect("json");
    let l = &json["listeners"][0];
    assert_eq!(l["name"], "listener");
    assert_eq!(l["filter_chains"], 2);
    assert_eq!(l["chains"][0]["tls_terminated"], false);
    assert_eq!(l["chains"][1]["tls_terminated"], true);
}
