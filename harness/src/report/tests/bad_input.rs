//! Bad input: every kind is named with its path, and nothing from it reaches the matrix.

use std::path::PathBuf;

use super::{data_dir, report_of};
use crate::evidence::Lane;
use crate::report::merge::Cell;
use crate::report::{Column, Problem};

fn bad(name: &str) -> PathBuf {
    data_dir().join("bad").join(name)
}

#[test]
fn unknown_schema_version_is_named() {
    let r = report_of(&[bad("unknown-schema")]);
    assert_eq!(r.problems, [Problem::UnknownSchema { path: "bad/unknown-schema/evidence.json".into(), found: Some(3), supported: 2 }]);
    assert!(r.matrix.cases.is_empty());
    assert!(r.problems[0].message().contains("has schema_version 3; this layout-gate reads schema_version 2 only"));
    assert!(r.markdown().contains("`bad/unknown-schema/evidence.json`: evidence.json has schema\\_version 3"), "{}", r.markdown());
}

#[test]
fn truncated_evidence_is_named_with_where_it_ends() {
    let r = report_of(&[bad("truncated")]);
    match &r.problems[..] {
        [Problem::Truncated { path, line, .. }] => {
            assert_eq!(path, "bad/truncated/evidence.json");
            assert!(*line > 1);
        }
        other => panic!("{other:#?}"),
    }
    assert!(r.matrix.cases.is_empty());
}

#[test]
fn missing_evidence_is_named() {
    let r = report_of(&[bad("missing-evidence")]);
    assert_eq!(r.problems, [Problem::MissingEvidence { path: "bad/missing-evidence/evidence.json".into() }]);
    // Inside a folder of run folders too.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("run-a")).unwrap();
    let r = report_of(&[tmp.path().to_path_buf()]);
    assert!(matches!(&r.problems[..], [Problem::MissingEvidence { path }] if path.ends_with("run-a/evidence.json")), "{:#?}", r.problems);
}

/// A `check --live` reading is said with what it holds, wherever it is met (the folder, its
/// file, a folder of runs), and never loaded as a run of any lane.
#[test]
fn a_live_reading_is_said_and_never_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let doc = serde_json::json!({"schema_version": 1, "lane": "live", "context": "prod", "cluster": "c",
        "server_digest": "sha256:ab", "running": {"version": "1.19.6"}, "finished_at": "t", "disagreements": []});
    let run = crate::evidence::live::write(tmp.path(), "20261204T000000.000Z-live-1.19.6-abcdef", &doc).unwrap();
    for arg in [tmp.path().to_path_buf(), run.clone(), run.join("live.json")] {
        let r = report_of(std::slice::from_ref(&arg));
        assert!(r.matrix.cases.is_empty() && r.matrix.columns.is_empty(), "{arg:?}");
        match &r.problems[..] {
            [p @ Problem::LiveReading { path, .. }] => {
                assert!(path.ends_with("live.json"), "{path}");
                let m = p.message();
                assert!(m.contains("context prod (cluster c, API server sha256:ab) running Cilium 1.19.6"), "{m}");
                assert!(m.contains("never gate evidence"), "{m}");
            }
            other => panic!("{arg:?}: {other:#?}"),
        }
    }
}

/// Without the bounded reader, reading a FIFO as evidence.json blocks `report` forever.
#[test]
fn a_fifo_as_evidence_is_unreadable_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run-fifo");
    std::fs::create_dir(&run).unwrap();
    crate::output::dest::testing::fifo(&run.join("evidence.json"));
    let r = report_of(&[run]);
    assert!(
        matches!(&r.problems[..], [Problem::Unreadable { error, .. }] if error.contains("FIFO, not a regular file")),
        "{:#?}",
        r.problems
    );
}

#[test]
fn disagreeing_runs_are_not_merged() {
    let r = report_of(&[data_dir().join("handwritten").join("kind-fixture-1.19.6"), bad("disagreeing-rerun")]);
    let col = Column { lane: Lane::Kind, cilium: Some(crate::case::CiliumVersion::parse("1.19.6").unwrap()) };
    assert!(matches!(r.matrix.cases["dns01-default"].cells[&col], Cell::Disagreeing { .. }));
    match &r.problems[..] {
        [Problem::Disagreement { case, column, runs, differences }] => {
            assert_eq!((case.as_str(), column.as_str()), ("dns01-default", "kind 1.19.6"));
            assert_eq!(runs, &["kind-fixture-1.19.6", "kind-fixture-1.19.6-rerun"]);
            assert!(
                differences.contains(
                    &"443 api.example.test: api-backend in kind-fixture-1.19.6, gateway-wildcard in kind-fixture-1.19.6-rerun".to_string()
                ),
                "{differences:#?}"
            );
        }
        other => panic!("{other:#?}"),
    }
    // A disagreeing cell takes part in no comparison.
    assert!(r.changes.is_empty() && r.divergences.is_empty());
    assert!(r.markdown().contains("**runs disagree** (see [Problems](#problems))"));
}

#[test]
fn a_run_named_twice_is_one_run() {
    let run = data_dir().join("handwritten").join("kind-fixture-1.19.6");
    let r = report_of(&[run.clone(), run.join("evidence.json"), data_dir().join("handwritten")]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let col = Column { lane: Lane::Kind, cilium: Some(crate::case::CiliumVersion::parse("1.19.6").unwrap()) };
    assert_eq!(r.matrix.columns[&col].len(), 1);
}

#[test]
fn wrong_shapes_name_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(data_dir().join("handwritten/kind-fixture-1.19.5/evidence.json")).unwrap();
    let write = |name: &str, text: String| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("evidence.json"), text).unwrap();
        d
    };
    let outcome = write("outcome", good.replacen("\"outcome\": \"pass\"", "\"outcome\": \"maybe\"", 1));
    let version = write("version", good.replacen("\"version\": \"1.19.5\"", "\"version\": \"latest\"", 1));
    let nojson = write("nojson", "<html>not json</html>".into());
    let hidden = tmp.path().join(".kind-fixture-x.AbC123");
    std::fs::create_dir(&hidden).unwrap();
    let r = report_of(&[outcome, version, nojson, tmp.path().to_path_buf()]);
    let fields: Vec<String> = r
        .problems
        .iter()
        .filter_map(|p| match p {
            Problem::Invalid { field, .. } => Some(field.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(fields[..3], ["cases[0].outcome", "cilium.version", "(document)"], "{:#?}", r.problems);
    assert!(
        r.problems.iter().any(|p| matches!(p, Problem::UnfinishedWrite { path } if path.ends_with(".kind-fixture-x.AbC123"))),
        "{:#?}",
        r.problems
    );
}

#[test]
fn not_a_folder_and_empty_folders_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let r = report_of(&[tmp.path().join("nope"), tmp.path().to_path_buf()]);
    assert!(matches!(&r.problems[..], [Problem::NotAFolder { .. }, Problem::NoEvidence { .. }]), "{:#?}", r.problems);
}
