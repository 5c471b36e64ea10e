//! Golden report.md and report.json. `LAYOUT_GATE_BLESS=1 cargo test --lib report::` rewrites
//! them; a mismatch prints a line diff (- golden, + actual).

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{data_dir, report_of};

fn blessing() -> bool {
    std::env::var("LAYOUT_GATE_BLESS").is_ok_and(|v| v == "1")
}

/// A line diff by longest common subsequence; reports are small.
fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "{:>5} - {}", i + 1, a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "{:>5} + {}", j + 1, b[j]);
            j += 1;
        }
    }
    out
}

/// Compares `actual` with `golden/<name>`, or rewrites it when blessing.
fn check(name: &str, actual: &str) -> Result<(), String> {
    let path = data_dir().join("golden").join(name);
    if blessing() {
        std::fs::create_dir_all(data_dir().join("golden")).map_err(|e| e.to_string())?;
        return std::fs::write(&path, actual).map_err(|e| format!("writing {}: {e}", path.display()));
    }
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == actual => Ok(()),
        Ok(expected) => Err(format!("golden/{name} differs (- golden, + actual; LAYOUT_GATE_BLESS=1 to accept):\n{}", line_diff(&expected, actual))),
        Err(e) => Err(format!("golden/{name}: cannot read ({e}); run with LAYOUT_GATE_BLESS=1 to create it. Actual:\n{actual}")),
    }
}

fn check_both(stem: &str, args: &[PathBuf]) {
    let r = report_of(args);
    let failures: Vec<String> = [check(&format!("{stem}.md"), &r.markdown()), check(&format!("{stem}.json"), &r.json())].into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Real runs: a fixture-lane run and model-lane runs on every pinned version.
#[test]
fn golden_report_of_real_runs() {
    check_both("real", &[data_dir().join("real")]);
}

/// Hand-written kind runs on four versions (1.20.1 in two shards) and a hand-written model run.
#[test]
fn golden_report_of_handwritten_runs() {
    check_both("handwritten", &[data_dir().join("handwritten")]);
}

/// The same with every kind of bad input beside it: the problems are named, nothing is merged.
#[test]
fn golden_report_with_problems() {
    check_both("with-problems", &[data_dir().join("handwritten"), data_dir().join("bad")]);
}

#[test]
fn the_diff_names_lines() {
    let d = line_diff("a\nb\nc\n", "a\nB\nc\n");
    assert_eq!(d, "    2 - b\n    2 + B\n");
}
