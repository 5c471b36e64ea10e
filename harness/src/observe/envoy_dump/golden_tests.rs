//! Golden outputs: every fixture in `harness/tests/data/envoy-dumps/` has its table and its
//! contract JSON in `golden/`. `LAYOUT_GATE_BLESS=1 cargo test --lib envoy_dump` rewrites them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{render_table, summarize_path, to_contract_json};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/envoy-dumps")
}

fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("fixture dir readable")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.is_file()
                && matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("json" | "yaml" | "yml")
                )
        })
        .collect();
    out.sort();
    out
}

fn blessing() -> bool {
    std::env::var("LAYOUT_GATE_BLESS").is_ok_and(|v| v == "1")
}

/// Line diff (longest common subsequence); fixtures are small, so O(n*m) is fine.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

#[test]
fn goldens_match_every_fixture() {
    let golden_dir = data_dir().join("golden");
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 10,
        "expected the fixture set, found {fixtures:?}"
    );
    let mut failures = Vec::new();
    let mut expected_files = Vec::new();
    for fixture in &fixtures {
        let stem = fixture
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        let summary = summarize_path(fixture)
            .unwrap_or_else(|e| panic!("fixture {} does not summarize: {e}", fixture.display()));
        let table = render_table(&summary);
        let json = serde_json::to_string_pretty(&to_contract_json(&summary)).expect("json") + "\n";
        for (golden_name, actual) in [
            (format!("{stem}.table.txt"), table),
            (format!("{stem}.contract.json"), json),
        ] {
            let golden = golden_dir.join(&golden_name);
            expected_files.push(golden_name.clone());
            if blessing() {
                std::fs::write(&golden, &actual).expect("write golden");
                continue;
            }
            match std::fs::read_to_string(&golden) {
                Ok(expected) if expected == actual => {}
                Ok(expected) => failures.push(format!(
                    "{golden_name} differs (- golden, + actual):\n{}",
                    diff(&expected, &actual)
                )),
                Err(e) => failures.push(format!(
                    "{golden_name}: cannot read golden ({e}); run with LAYOUT_GATE_BLESS=1 \
                     to create it. Actual output:\n{actual}"
                )),
            }
        }
    }
    // A golden without a fixture is stale: it would silently stop being checked.
    for entry in std::fs::read_dir(&golden_dir).expect("golden dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !expected_files.contains(&name) {
            if blessing() {
                std::fs::remove_file(golden_dir.join(&name)).expect("remove stale golden");
            } else {
                failures.push(format!("golden/{name} has no fixture"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn diff_marks_changed_lines() {
    let d = diff("a\nb\nc\n", "a\nx\nc\n");
    assert_eq!(d, "  a\n- b\n+ x\n  c\n");
}
