//! Golden outputs: every fixture in `harness/tests/data/envoy-dumps/` has its table and its
//! contract JSON in `golden/`. `LAYOUT_GATE_BLESS=1 cargo test --lib envoy_dump` rewrites them.

use std::path::{Path, PathBuf};

use super::{render_table, summarize_path, to_contract_json};
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
