//! Golden report.md, report.json, report.html and report.svg. `LAYOUT_GATE_BLESS=1 cargo test --lib report::` rewrites
//! them; a mismatch prints a line diff (- golden, + actual).

use std::path::PathBuf;

use super::{data_dir, report_of};
use crate::golden;

/// Compares `actual` with `golden/<name>`, or rewrites it when blessing.
fn check(name: &str, actual: &str) -> Result<(), String> {
    golden::check(&data_dir().join("golden").join(name), actual)
}

fn check_both(stem: &str, args: &[PathBuf]) {
    let r = report_of(args);
    let failures: Vec<String> = [check(&format!("{stem}.md"), &r.markdown()), check(&format!("{stem}.json"), &r.json())]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Real runs: a fixture-lane run and model-lane runs on every pinned version.
#[test]
fn golden_report_of_real_runs() {
    check_both("real", &[data_dir().join("real")]);
    // Its picture: the dns01 listeners Conflicted on 1.19.6 and 1.19.7 marked under the answers.
    let r = report_of(&[data_dir().join("real")]);
    check("real.svg", &r.svg()).unwrap_or_else(|e| panic!("{e}"));
}

/// Hand-written kind runs on four versions (1.20.1 in two shards) and a hand-written model run.
#[test]
fn golden_report_of_handwritten_runs() {
    check_both("handwritten", &[data_dir().join("handwritten")]);
}

/// The same with every kind of bad input beside it: the problems are named, nothing is merged.
/// Its HTML page and SVG picture too: every status (pass, fail, not run, disagree) is in them.
#[test]
fn golden_report_with_problems() {
    let args = [data_dir().join("handwritten"), data_dir().join("bad")];
    check_both("with-problems", &args);
    let r = report_of(&args);
    let failures: Vec<String> =
        [check("with-problems.html", &r.html()), check("with-problems.svg", &r.svg())].into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
