//! A report you can paste: `report.md` of a catalogue fits a pull-request comment (the long
//! parts left to `report.html`), and a case with no expectation at a version is left out of
//! that column (`—`), not "not run", in every matrix and count.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{data_dir, report_of, show};
use crate::evidence::digest;
use crate::report::markdown::PASTE_LIMIT;
use crate::report::{Report, load_all};

fn real(suffix: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data_dir().join("real")).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter().find(|d| d.to_string_lossy().contains("model-lane") && d.to_string_lossy().ends_with(suffix)).unwrap()
}

#[test]
fn a_catalogue_sized_report_fits_a_pull_request_comment_and_the_html_keeps_the_rest() {
    // The real runs' one case, as 150 cases (the catalogue has 35; each of its cases has more
    // facts than this one): the whole document would not fit.
    let mut r = report_of(&[real("-1.19.5"), real("-1.19.6"), real("-1.19.7"), real("-1.20.1")]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let row = r.matrix.cases.values().next().unwrap().clone();
    for i in 0..150 {
        let mut copy = row.clone();
        copy.name = format!("{}-{i:03}", row.name);
        r.matrix.cases.insert(copy.name.clone(), copy);
    }
    let md = r.markdown();
    assert!(md.chars().count() < PASTE_LIMIT, "report.md has {} characters", md.chars().count());
    // What is left out is said where it would be, and is in the HTML.
    assert!(md.contains("## Cases\n\nEach case's facts per version, and its failed expectations, are in `report.html`"), "{md}");
    assert!(!md.contains("<summary><code>dns01-default-149</code>"));
    let html = r.html();
    assert!(html.contains("dns01-default-149"));
    // Every case is still in the summary matrix.
    assert!(md.contains("| `dns01-default-149` |"));
    // A small report stays whole: each case's facts folded in the Markdown itself.
    let small = report_of(&[real("-1.19.5"), real("-1.20.1")]).markdown();
    assert!(small.contains("<summary><code>dns01-default</code>"), "{small}");
}

/// Writes `doc` (resealed) as run folder `name` under `root`.
fn write(root: &Path, name: &str, mut doc: Value) -> PathBuf {
    digest::seal(&mut doc);
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("evidence.json"), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn a_case_with_no_expectation_at_a_version_is_left_out_not_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The 1.19.5 run without the case (a model run selects only cases with an expectation at
    // its version), beside the 1.20.1 run that has it.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(real("-1.19.5").join("evidence.json")).unwrap()).unwrap();
    doc["cases"].as_array_mut().unwrap().clear();
    doc["selected"] = Value::Array(Vec::new());
    let runs = [write(tmp.path(), "model-1.19.5", doc), real("-1.20.1")];
    // The case folder says it has expectations from 1.20.0 on only.
    let cases = tmp.path().join("cases");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/cilium/gateway-invalid-route-kind"), &cases.join("dns01-default"));

    // Without the case folder the report cannot tell: not run.
    let r = Report::build(load_all(&runs, &show));
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let md = r.markdown();
    assert!(md.contains("| `dns01-default` | not run | ✅ pass"), "{md}");
    assert!(md.contains("1 passed, 0 failed, 1 not run or disagreeing"), "{md}");

    let mut loaded = load_all(&runs, &show);
    crate::report::load::find_left_out(&mut loaded, &cases);
    let r = Report::build(loaded);
    let md = r.markdown();
    assert!(md.contains("| `dns01-default` | — | ✅ pass"), "{md}");
    assert!(md.contains("1 passed, 0 failed, 0 not run or disagreeing (cells over every lane and version; 1 left out"), "{md}");
    assert!(md.contains("—: left out, the case has no expectation at that version"), "{md}");
    let html = r.html();
    assert!(html.contains("1 left out") && html.contains("class=\"leftout\""), "{html}");
    assert!(!html.contains("<td class=\"notrun\""), "{html}");
    let svg = r.svg();
    assert!(svg.contains("dns01-default on model 1.19.5: —"), "{svg}");
}
