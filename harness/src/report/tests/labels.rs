//! The report in `check`'s words (one place: [`crate::words`]), the Conflicted listeners in
//! "Changed between versions" and the pictures even when no expectation names them, and a
//! model run that only agrees with the model's own inference marked so.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{data_dir, report_of};
use crate::evidence::{Lane, digest};

/// The real model-lane runs, each rewritten by `edit` into `root`.
fn edited_runs(root: &Path, edit: &dyn Fn(&mut Value)) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data_dir().join("real")).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter()
        .filter(|d| d.to_string_lossy().contains("model-lane"))
        .map(|d| {
            let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(d.join("evidence.json")).unwrap()).unwrap();
            edit(&mut doc);
            digest::seal(&mut doc);
            let out = root.join(d.file_name().unwrap());
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join("evidence.json"), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
            out
        })
        .collect()
}

/// Drops every expectation (and its verdict) on a listener's Conflicted condition: a case, like
/// one `case new` scaffolded before 1.19.6, that never asked about it.
fn without_conflicted_expectations(doc: &mut Value) {
    for case in doc["cases"].as_array_mut().unwrap() {
        case["expectations"]["listeners"].as_array_mut().unwrap().retain(|e| e[1]["type"] != "Conflicted");
        case["verdicts"].as_array_mut().unwrap().retain(|v| !v["subject"].as_str().unwrap().ends_with(" Conflicted"));
    }
}

#[test]
fn a_conflict_no_expectation_names_is_still_in_changed_between_versions_and_the_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let r = report_of(&edited_runs(tmp.path(), &without_conflicted_expectations));
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let conflicted: Vec<(&str, &str, &str)> = r
        .changes
        .iter()
        .filter(|c| c.lane == Lane::Model && c.subject.ends_with(" Conflicted"))
        .map(|c| (c.subject.as_str(), c.from.as_str(), c.to.as_str()))
        .collect();
    for l in ["https", "tls-api", "tls-cdi-uploadproxy", "tls-vm-exportproxy"] {
        let subject = format!("listener {l} Conflicted");
        assert!(conflicted.contains(&(subject.as_str(), "absent", "True/ProtocolConflict")), "{conflicted:#?}");
    }
    let md = r.markdown();
    assert!(
        md.contains(
            "- **1.19.5 → 1.19.6: status-only regression (traffic unchanged); https, tls-api, tls-cdi-uploadproxy and \
             tls-vm-exportproxy Conflicted (ProtocolConflict)**"
        ),
        "{md}"
    );
    assert!(md.contains("- `listener https Conflicted`: absent on 1.19.5, True/ProtocolConflict on 1.19.6"), "{md}");
    // The steps show in the summary part; the facts behind them are folded.
    let summary = crate::report::markdown::summary_part(&md);
    assert!(summary.contains("- **1.19.7 → 1.20.0: traffic regression") && !summary.contains("`listener https Conflicted`"), "{summary}");
    assert!(md.contains("- **1.19.7 → 1.20.0: traffic regression"), "{md}");
    // report.json carries the same steps, in the same words, for machines.
    let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
    let verdicts: Vec<&str> = json["steps"].as_array().unwrap().iter().map(|s| s["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["status-only regression", "traffic regression"], "{json:#}");
    // The picture marks the Conflicted listeners on the versions where they are, and only there.
    let svg = r.svg();
    assert!(svg.contains("<title>listener https on model 1.19.6: Conflicted True/ProtocolConflict</title>"), "{svg}");
    assert!(svg.contains("<title>listener https on model 1.19.5: not Conflicted</title>"), "{svg}");
}

#[test]
fn report_and_check_say_the_same_words() {
    use crate::check::answer::Reply;
    use crate::judge::{OutcomeClass, ProbeFact, describe_probe};
    // An answer of no certificate.
    for (outcome, alert) in [(OutcomeClass::Reset, None), (OutcomeClass::Alert, Some("unrecognized_name".to_string()))] {
        let f = ProbeFact { outcome, leaf: None, alert, served_by: None, http_status: None };
        let check = Reply::from_fact(&f, &|_| None).nothing_text();
        let report = crate::report::facts::answer_words(&describe_probe(&f, &|_| None));
        assert_eq!(report, check);
    }
    // The verdict of a step, and a group of Conflicted listeners.
    let tmp = tempfile::tempdir().unwrap();
    let r = report_of(&edited_runs(tmp.path(), &|_| {}));
    let steps = crate::report::diff::steps(&r.changes);
    let verdicts: Vec<&str> = steps.iter().map(|s| s.verdict).collect();
    assert!(verdicts.contains(&crate::check::verdict::Kind::StatusOnlyRegression.as_str()), "{verdicts:?}");
    assert!(verdicts.contains(&crate::check::verdict::Kind::TrafficRegression.as_str()), "{verdicts:?}");
    let first = steps.iter().find(|s| s.to_version.to_string() == "1.19.6").unwrap();
    let check_says =
        crate::check::outcome::and_list(&["https".into(), "tls-api".into(), "tls-cdi-uploadproxy".into(), "tls-vm-exportproxy".into()]);
    assert_eq!(first.conflicts, vec![format!("{check_says} Conflicted (ProtocolConflict)")]);
}

/// Every provenance in `doc` made the model's own inference, as `case new --from` writes it.
fn as_model_inference(doc: &mut Value) {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if m.get("kind").and_then(Value::as_str).is_some_and(|k| ["source", "reported", "inferred", "observed"].contains(&k))
                    && m.keys().all(|k| ["kind", "ref", "note", "observed"].contains(&k.as_str()))
                {
                    let note = format!(
                        "{} (check, layout-gate 0.1.0) on 2026-12-01; not observed on a cluster",
                        crate::case::MODEL_INFERENCE_NOTE
                    );
                    *v = serde_json::json!({"kind": "inferred", "note": note});
                    return;
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    for case in doc["cases"].as_array_mut().unwrap() {
        walk(&mut case["expectations"]);
        walk(&mut case["verdicts"]);
    }
}

#[test]
fn a_model_run_of_a_scaffolded_case_agrees_with_its_own_inference_not_a_plain_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let r = report_of(&edited_runs(&tmp.path().join("own"), &as_model_inference));
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let md = r.markdown();
    assert!(md.contains("| `dns01-default` | ☑️ own inference"), "{md}");
    assert!(!md.contains("✅ pass"), "{md}");
    assert!(
        md.contains(
            "0 passed, 0 failed, 0 not run or disagreeing (cells over every lane and version; 6 agree only with their own inference"
        ),
        "{md}"
    );
    assert!(md.contains("☑️ own inference: the model **agrees with its own inference**"), "{md}");
    let json = r.json();
    assert_eq!(json.matches("\"own_inference\": true").count(), 6, "{json}");
    let html = r.html();
    assert!(html.contains("<td class=\"owninference\""), "{html}");
    assert!(html.contains("agrees with its own inference"), "{html}");
    // The same runs with their own provenance (reported, source): a plain pass.
    let plain = report_of(&edited_runs(&tmp.path().join("plain"), &|_| {}));
    assert!(plain.markdown().contains("| `dns01-default` | ✅ pass"));
}
