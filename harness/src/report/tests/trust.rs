//! The report does not believe a file: it checks its seal, re-judges it from its own
//! observations, counts one run id once, and says when a run never reached its lane.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{data_dir, report_of};
use crate::evidence::{Lane, digest};
use crate::report::Problem;
use crate::report::merge::Cell;

fn real_model_run() -> PathBuf {
    let real = data_dir().join("real");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&real).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter().find(|d| d.to_string_lossy().ends_with("-1.19.6") && d.to_string_lossy().contains("model-lane")).unwrap()
}

fn read(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("evidence.json")).unwrap()).unwrap()
}

/// Writes `doc` as a run folder `name` under `root`; `reseal` recomputes the digest (an editor
/// who knows the format), otherwise the old one stays.
fn write(root: &Path, name: &str, mut doc: Value, reseal: bool) -> PathBuf {
    if reseal {
        digest::seal(&mut doc);
    }
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("evidence.json"), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    dir
}

fn kinds(ps: &[Problem]) -> Vec<&'static str> {
    ps.iter()
        .map(|p| match p {
            Problem::DigestMismatch { .. } => "digest",
            Problem::NoDigest { .. } => "no digest",
            Problem::Rejudged { .. } => "rejudged",
            Problem::DuplicateRun { .. } => "duplicate",
            Problem::NotRun { .. } => "not run",
            Problem::Disagreement { .. } => "disagreement",
            _ => "other",
        })
        .collect()
}

#[test]
fn an_untouched_real_run_has_no_problem() {
    let r = report_of(&[real_model_run()]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
}

#[test]
fn a_lane_flipped_to_kind_breaks_the_seal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    let r = report_of(&[write(tmp.path(), "flipped", doc, false)]);
    assert_eq!(kinds(&r.problems), ["digest", "rejudged"], "{:#?}", r.problems);
    assert!(r.markdown().contains("was changed after it was written"), "{}", r.markdown());
}

#[test]
fn a_lane_flipped_to_kind_and_resealed_is_still_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    let r = report_of(&[write(tmp.path(), "flipped-resealed", doc, true)]);
    assert_eq!(kinds(&r.problems), ["rejudged"], "{:#?}", r.problems);
    assert!(r.problems[0].message().contains("a local address: not a kind-lane observation"), "{}", r.problems[0]);
}

#[test]
fn an_edited_verdict_is_re_judged_even_with_a_new_seal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    // The 1.19.6 story: https is Conflicted. Claim the listener was accepted instead.
    let v = doc["cases"][0]["verdicts"].as_array_mut().unwrap().iter_mut().find(|v| v["subject"] == "listener https Accepted").unwrap();
    assert_eq!(v["outcome"], "pass");
    v["observed"] = "True/Accepted".into();
    let run = write(tmp.path(), "edited", doc, true);
    let r = report_of(&[run]);
    assert_eq!(kinds(&r.problems), ["rejudged"], "{:#?}", r.problems);
    let text = r.problems[0].message();
    assert!(
        text.contains("listener https Accepted: the file says pass (observed True/Accepted), re-judged pass (observed False/"),
        "{text}"
    );
    // The matrix shows what the observations give, not the claim.
    let row = &r.matrix.cases["dns01-default"];
    let (_, verdicts) = row.cells.values().next().unwrap().observed().unwrap();
    let v = verdicts.iter().find(|v| v.subject == "listener https Accepted").unwrap();
    assert!(v.observed.starts_with("False/"), "{v:?}");
}

#[test]
fn raw_observations_replaced_by_resets_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    let probes = doc["cases"][0]["observed"]["probes"].as_array_mut().unwrap();
    let api = probes.iter_mut().find(|p| p["key"]["sni"] == "api.example.test" && p["key"]["port"] == 443).unwrap();
    for o in api["observations"].as_array_mut().unwrap() {
        o["outcome"] = serde_json::json!({"outcome": "reset"});
    }
    let r = report_of(&[write(tmp.path(), "resets", doc, true)]);
    assert_eq!(kinds(&r.problems), ["rejudged"], "{:#?}", r.problems);
    let text = r.problems[0].message();
    assert!(
        text.contains(
            "probe 443 api.example.test: the recorded facts (3 certificate) do not follow from its 3 raw observation(s) (3 reset)"
        ),
        "{text}"
    );
    assert!(text.contains("443 api.example.test: the file says pass"), "{text}");
    assert_eq!(r.matrix.cases["dns01-default"].cells.values().next().unwrap().observed().unwrap().0.outcome, crate::judge::Outcome::Fail);
}

#[test]
fn a_file_without_a_digest_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc.as_object_mut().unwrap().remove("digest");
    let r = report_of(&[write(tmp.path(), "unsealed", doc, false)]);
    assert_eq!(kinds(&r.problems), ["no digest"], "{:#?}", r.problems);
}

#[test]
fn one_run_id_twice_is_one_run_and_a_problem_when_the_copies_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let doc = read(&real_model_run());
    let a = write(tmp.path(), "copy-a", doc.clone(), false);
    let b = write(tmp.path(), "copy-b", doc.clone(), false);
    let r = report_of(&[a.clone(), b]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    assert_eq!(r.matrix.columns.values().map(Vec::len).sum::<usize>(), 1, "two copies of one run are one run");

    let mut other = doc;
    other["finished_at"] = "2026-12-01T00:00:00.000Z".into();
    let c = write(tmp.path(), "copy-c", other, true);
    let r = report_of(&[a, c]);
    assert_eq!(kinds(&r.problems), ["duplicate"], "{:#?}", r.problems);
    assert!(r.matrix.cases.is_empty(), "neither copy is believed");
}

/// A kind run that never reached its lane, as the kind lane writes it now.
fn not_run_kind(version: &str) -> Value {
    let mut doc = read(&real_model_run());
    let m = doc.as_object_mut().unwrap();
    m.insert("lane".into(), "kind".into());
    m.insert("status".into(), "not_run".into());
    m.insert("reason".into(), "preflight failed: docker: not found".into());
    m.insert("not_run".into(), serde_json::json!([{"name": "dns01-default", "reason": "preflight failed: docker: not found"}]));
    m.insert("cases".into(), Value::Array(Vec::new()));
    m.insert("run_id".into(), format!("20261201T000000.000Z-kind-{version}-abcdef").into());
    doc
}

#[test]
fn a_run_that_did_not_reach_its_lane_is_not_a_result() {
    let tmp = tempfile::tempdir().unwrap();
    let kind = write(tmp.path(), "kind-not-run", not_run_kind("1.19.6"), true);
    let r = report_of(&[kind, real_model_run()]);
    assert_eq!(kinds(&r.problems), ["not run"], "{:#?}", r.problems);
    assert!(r.problems[0].message().contains("did not run: preflight failed: docker: not found"), "{}", r.problems[0]);
    let cell = r.matrix.cases["dns01-default"].cells.iter().find(|(c, _)| c.lane == Lane::Kind).map(|(_, c)| c).unwrap();
    assert!(matches!(cell, Cell::NotRun { reason, .. } if reason.contains("docker")), "{cell:?}");
    let md = r.markdown();
    assert!(md.contains("**not run**: preflight failed"), "{md}");
    assert!(!md.contains("matches every observed fact"), "{md}");
    assert!(!md.contains("observed on a kind cluster too"), "{md}");
}

#[test]
fn agreement_is_never_claimed_without_an_observation() {
    // Evidence as the kind lane wrote it before `not_run` existed: the case is there, failed,
    // with an error and no verdict. Nothing was observed, so nothing may be said to agree.
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    doc["run_id"] = "20261201T000000.000Z-kind-1.19.6-abcdef".into();
    let c = &mut doc["cases"][0];
    c["verdicts"] = Value::Array(Vec::new());
    c["outcome"] = "fail".into();
    c["error"] = "not run: preflight failed: docker: not found".into();
    c["observed"] =
        serde_json::json!({"gateway": null, "listeners": {}, "routes": {}, "probes": [], "envoy_listeners": null, "envoy_summary": null});
    c["expectations"] = serde_json::json!({"ranges": [], "gateway": [], "listeners": [], "routes": [], "probes": [], "envoy": []});
    let kind = write(tmp.path(), "kind-empty", doc, true);
    let r = report_of(&[kind, real_model_run()]);
    assert_eq!(r.compared_facts, 0);
    let md = r.markdown();
    assert!(!md.contains("matches every observed fact"), "{md}");
    assert!(md.contains("nothing was compared"), "{md}");
}

#[test]
fn kind_recordings_are_replayed_by_the_report() {
    let replay = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/replay/worked-example-1.19.5");
    let r = report_of(std::slice::from_ref(&replay));
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    // A recorded Gateway version edited (and the file resealed): the judged conditions no longer
    // follow from the recorded objects.
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&replay);
    let events = doc["cases"][0]["recording"]["waits"][1]["events"].as_array_mut().unwrap();
    let last = events.last_mut().unwrap();
    last["object"]["status"]["conditions"][0]["status"] = "False".into();
    let r = report_of(&[write(tmp.path(), "edited-recording", doc, true)]);
    assert_eq!(kinds(&r.problems), ["rejudged"], "{:#?}", r.problems);
    assert!(r.problems[0].message().contains("conditions: the recorded watch events give other conditions"), "{}", r.problems[0]);
}

#[test]
fn case_files_that_changed_since_the_run_are_named() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let loaded = crate::report::load_all(&[real_model_run()], &super::show);
    assert!(crate::report::load::check_case_files(&loaded.runs, &cases).is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("dns01-default");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(cases.join("dns01-default")).unwrap().flatten() {
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let yaml = copy.join("case.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    std::fs::write(&yaml, text + "\n# edited after the run\n").unwrap();
    let p = crate::report::load::check_case_files(&loaded.runs, tmp.path());
    assert!(
        matches!(&p[..], [Problem::CaseChanged { case, differences, .. }] if case == "dns01-default" && differences[0].starts_with("case.yaml: sha256")),
        "{p:#?}"
    );
}
