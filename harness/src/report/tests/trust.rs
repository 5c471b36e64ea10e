//! The report does not believe a file: it checks its seal, re-judges it from its own
//! observations, checks that it agrees with itself and its lane, counts one run id once, and
//! says when a run never reached its lane. The forgeries issue 18 made, each resealed with a
//! recomputed digest, are refused or flagged; the untouched runs pass.

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

/// The first probe expectation the first case of `doc` stores that `pick` takes.
fn stored_probe(doc: &mut Value, pick: impl Fn(&Value) -> bool) -> &mut Value {
    doc["cases"][0]["expectations"]["probes"].as_array_mut().unwrap().iter_mut().find(|p| pick(p)).expect("a stored probe expectation")
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
            Problem::Inconsistent { .. } => "inconsistent",
            Problem::ExpectationsDiffer { .. } => "expectations",
            _ => "other",
        })
        .collect()
}

fn replay_run(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/replay").join(name)
}

/// A kind run with recordings (hand-made, `harness/tests/data/replay/`).
fn kind_run() -> PathBuf {
    replay_run("worked-example-1.19.5")
}

fn handwritten(name: &str) -> PathBuf {
    data_dir().join("handwritten").join(name)
}

/// The messages of every problem, one string.
fn messages(ps: &[Problem]) -> String {
    ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")
}

/// Every probe of every case sent to `address`, in the record and in each observation.
fn move_probes(doc: &mut Value, address: &str) {
    for c in doc["cases"].as_array_mut().unwrap() {
        for p in c["observed"]["probes"].as_array_mut().unwrap() {
            p["address"] = address.into();
            for o in p["observations"].as_array_mut().unwrap() {
                o["addr"] = address.into();
            }
        }
    }
}

#[test]
fn untouched_runs_of_every_lane_have_no_problem() {
    for runs in [
        vec![data_dir().join("real")],
        vec![data_dir().join("handwritten")],
        vec![replay_run("worked-example-1.19.5"), replay_run("two-gateways-1.20.1")],
    ] {
        let r = report_of(&runs);
        assert!(r.problems.is_empty(), "{runs:?}: {:#?}", r.problems);
    }
}

#[test]
fn a_lane_flipped_to_kind_breaks_the_seal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    let r = report_of(&[write(tmp.path(), "flipped", doc, false)]);
    assert_eq!(kinds(&r.problems), ["digest", "inconsistent", "inconsistent"], "{:#?}", r.problems);
    assert!(r.markdown().contains("was changed after it was written"), "{}", r.markdown());
}

/// Issue 18's first forgery: a model run made gate evidence. Lane `kind`, a kind run id, the
/// probes moved to a Gateway address, the digest recomputed. What the forger did not think of
/// still says "model": the environment, the certificates' CA, the missing recordings. The
/// run is not in the report at all: no kind column, no "the model matches" sentence.
#[test]
fn a_model_run_relabelled_kind_with_kind_addresses_and_a_new_seal_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    doc["run_id"] = doc["run_id"].as_str().unwrap().replace("-model-", "-kind-").into();
    move_probes(&mut doc, "172.18.255.200:443");
    let forged = write(tmp.path(), "forged-kind", doc, true);
    let mut args = vec![forged];
    args.extend(std::fs::read_dir(data_dir().join("real")).unwrap().flatten().map(|e| e.path()));
    let r = report_of(&args);
    assert_eq!(kinds(&r.problems), ["inconsistent", "inconsistent"], "{:#?}", r.problems);
    let text = messages(&r.problems);
    for said in [
        "the environment has \"model\", which only model runs write",
        "the environment lacks \"cilium_chart\", which every kind run that ran writes",
        "certificate(s) api-backend, cdi-uploadproxy-backend, gateway-wildcard, vm-exportproxy-backend were issued by \"CN=layout-gate CA model dns01-default 1.19.6, O=layout-gate\"; a kind run's certificates here are issued by",
        "a kind case keeps the raw recordings its verdicts come from, and this one has none",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
    assert!(r.matrix.columns.keys().all(|c| c.lane != Lane::Kind), "{:?}", r.matrix.columns.keys().collect::<Vec<_>>());
    let md = r.markdown();
    assert!(!md.contains("gate evidence)") && !md.contains("matches every observed fact"), "{md}");
}

/// The same relabelling without moving the probes: loopback addresses are no kind run's.
#[test]
fn a_lane_flipped_to_kind_and_resealed_is_still_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    let r = report_of(&[write(tmp.path(), "flipped-resealed", doc, true)]);
    assert_eq!(kinds(&r.problems), ["inconsistent", "inconsistent"], "{:#?}", r.problems);
    assert!(
        messages(&r.problems).contains("a local address: a kind run probes the Gateway's address on the cluster network"),
        "{:#?}",
        r.problems
    );
}

#[test]
fn kind_evidence_with_its_recordings_removed_is_refused() {
    assert!(report_of(&[kind_run()]).problems.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&kind_run());
    doc["cases"][0].as_object_mut().unwrap().remove("recording");
    let r = report_of(&[write(tmp.path(), "no-recordings", doc, true)]);
    assert_eq!(kinds(&r.problems), ["inconsistent"], "{:#?}", r.problems);
    assert!(r.problems[0].message().contains("this one has none: it cannot be replayed"), "{}", r.problems[0]);
    assert!(r.matrix.cases.is_empty());
}

/// A failing gate run relabelled as a model prediction, to hide it.
#[test]
fn a_kind_run_relabelled_model_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&kind_run());
    doc["lane"] = "model".into();
    doc["run_id"] = doc["run_id"].as_str().unwrap().replace("-kind-", "-model-").into();
    move_probes(&mut doc, "127.0.0.1:41253");
    let r = report_of(&[write(tmp.path(), "kind-as-model", doc, true)]);
    let text = messages(&r.problems);
    for said in [
        "the environment has \"cilium_chart\", which only kind runs write",
        "the environment lacks \"model\", which every model run that ran writes",
        "a model run records no cluster, yet this case carries kind-lane recordings",
        "certificate(s) api-backend, gateway-wildcard were issued by \"CN=layout-gate CA 20261201T100000.000Z-kind-1.19.5-handmade, O=layout-gate\"",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
    assert!(r.matrix.cases.is_empty());
}

#[test]
fn a_model_run_relabelled_fixture_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    doc["lane"] = "fixture".into();
    let r = report_of(&[write(tmp.path(), "model-as-fixture", doc, true)]);
    let text = messages(&r.problems);
    for said in [
        "a fixture run runs no Cilium, yet this one names Cilium 1.19.6",
        "the environment has \"model\", which only model runs write",
        "a fixture run's certificates here are issued by \"CN=layout-gate CA fixture, O=layout-gate\"",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
    assert!(r.matrix.cases.is_empty());
}

/// A failing case taken out of a run: the run still says it selected it.
#[test]
fn a_failing_case_deleted_from_a_run_is_named() {
    let run = handwritten("kind-fixture-1.20.1-shard-2of2");
    let r = report_of(std::slice::from_ref(&run));
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    assert_eq!(r.matrix.cases["http01-default"].cells.values().next().unwrap().observed().unwrap().0.outcome, crate::judge::Outcome::Fail);
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&run);
    doc["cases"].as_array_mut().unwrap().retain(|c| c["name"] != "http01-default");
    let r = report_of(&[write(tmp.path(), "pruned", doc, true)]);
    assert_eq!(kinds(&r.problems), ["inconsistent"], "{:#?}", r.problems);
    assert!(
        r.problems[0].message().contains("case http01-default was selected, but the run neither has its result nor says it did not run"),
        "{}",
        r.problems[0]
    );
    assert!(r.matrix.cases.is_empty(), "none of a pruned run is shown");
}

/// A 1.20.1 run relabelled 1.19.5 (the chart, the CRD bundle and the images say 1.20.1), or a
/// version no pin has.
#[test]
fn a_run_relabelled_to_another_version_is_refused() {
    let run = handwritten("kind-fixture-1.20.1-shard-1of2");
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&run);
    doc["cilium"]["version"] = "1.19.5".into();
    let r = report_of(&[write(tmp.path(), "as-1.19.5", doc.clone(), true)]);
    let text = messages(&r.problems);
    for said in [
        "chart 1.20.1 was installed, where Cilium 1.19.5 installs chart 1.19.5",
        "Cilium 1.19.5 installs the CRD bundle v1.4.1 experimental",
        "the running image is not tagged v1.19.5",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
    doc["cilium"]["version"] = "9.9.9".into();
    let r = report_of(&[write(tmp.path(), "as-9.9.9", doc, true)]);
    assert!(
        messages(&r.problems).contains("Cilium 9.9.9 is not a pinned version (1.19.5, 1.19.6, 1.19.7, 1.20.0, 1.20.1, 1.20.2)"),
        "{:#?}",
        r.problems
    );
    assert!(r.matrix.cases.is_empty());
}

/// Leaves presented by a CA that is not the run's, or that contradict the run's records.
#[test]
fn answers_from_another_runs_ca_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&handwritten("kind-fixture-1.19.6"));
    let other = "CN=layout-gate CA kind-fixture-1.19.5, O=layout-gate";
    for p in doc["cases"][0]["observed"]["probes"].as_array_mut().unwrap() {
        for o in p["observations"].as_array_mut().unwrap() {
            if o["outcome"]["leaf"].is_object() {
                o["outcome"]["leaf"]["issuer"] = other.into();
            }
        }
    }
    let r = report_of(&[write(tmp.path(), "other-ca", doc, true)]);
    let text = messages(&r.problems);
    assert!(text.contains(&format!("was answered with a certificate issued by {other:?}, not by this kind run's CA")), "{text}");
    assert!(text.contains("but its presented subject and issuer differ from the run's record of it"), "{text}");
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

/// A kind run that never reached its lane, as the kind lane writes it now: the tools
/// preflight found, no case.
fn not_run_kind(version: &str) -> Value {
    let mut doc = read(&real_model_run());
    let m = doc.as_object_mut().unwrap();
    m.insert("lane".into(), "kind".into());
    m.insert("environment".into(), serde_json::json!({"tool.kind": "kind v0.33.0 go1.25.1 linux/amd64"}));
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
    let mut doc = read(&handwritten("kind-fixture-1.19.6"));
    let c = &mut doc["cases"][0];
    c["verdicts"] = Value::Array(Vec::new());
    c["outcome"] = "fail".into();
    c["error"] = "not run: preflight failed: docker: not found".into();
    c["observed"] =
        serde_json::json!({"gateway": null, "listeners": {}, "routes": {}, "probes": [], "envoy_listeners": null, "envoy_summary": null});
    c["expectations"] = serde_json::json!({"ranges": [], "gateway": [], "listeners": [], "routes": [], "probes": [], "envoy": []});
    c["recording"] = serde_json::json!({"namespace": "lg-dns01-default", "settle_ms": 3000, "waits": []});
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
    let mut loaded = crate::report::load_all(&[real_model_run()], &super::show);
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Given(&cases));
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("dns01-default");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(cases.join("dns01-default")).unwrap().flatten() {
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let yaml = copy.join("case.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    std::fs::write(&yaml, text + "\n# edited after the run\n").unwrap();
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Given(tmp.path()));
    let p = &loaded.problems;
    assert!(
        matches!(&p[..], [Problem::CaseChanged { case, differences, .. }] if case == "dns01-default" && differences[0].starts_with("case.yaml: sha256")),
        "{p:#?}"
    );
    // A case file read like lint reads it: one that became a FIFO is named, never waited on.
    let mut loaded = crate::report::load_all(&[real_model_run()], &super::show);
    std::fs::remove_file(&yaml).unwrap();
    crate::output::dest::testing::fifo(&yaml);
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Given(tmp.path()));
    assert!(messages(&loaded.problems).contains("case.yaml: a FIFO, not a regular file"), "{:#?}", loaded.problems);
}

/// Issue 18: a stored expectation edited to match the observation, the verdicts re-judged and
/// the file resealed, so the file agrees with itself. The case files it names are the ones
/// in `cases/` (their digests match), and they say otherwise at that version: with `--cases`
/// the run is named and left out. (Without the case files nothing in the file can tell; that
/// is what the attestation of the evidence archive is for.)
#[test]
fn an_expectation_edited_to_match_the_observation_is_caught_with_the_case_files() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    let probe = stored_probe(&mut doc, |p| p["key"]["sni"] == "api.example.test" && p["key"]["port"] == 443);
    // The run saw api-backend; claim the case expected it all along through another route:
    // the expectation now says the wildcard... and the observation is made to match.
    probe["answer"] = serde_json::json!({"cert": "gateway-wildcard"});
    let mut ev: crate::evidence::Evidence = serde_json::from_value(doc).unwrap();
    let wildcard = ev.cases[0].certificates.iter().find(|c| c.name.as_str() == "gateway-wildcard").unwrap().leaf.clone();
    for p in ev.cases[0]
        .observed
        .probes
        .iter_mut()
        .filter(|p| p.key.sni.as_ref().is_some_and(|s| s.as_str() == "api.example.test") && p.key.port.get() == 443)
    {
        for o in &mut p.observations {
            o["outcome"]["leaf"] = serde_json::to_value(&wildcard).unwrap();
        }
    }
    crate::evidence::rejudge::correct(&mut ev);
    for c in &mut ev.cases {
        c.observed.probes.iter_mut().for_each(|p| p.facts = crate::evidence::rejudge::facts_from_raw(p, &c.served_by).unwrap());
    }
    crate::evidence::rejudge::correct(&mut ev);
    let forged = write(tmp.path(), "edited-expectation", serde_json::to_value(&ev).unwrap(), true);
    let mut loaded = crate::report::load_all(std::slice::from_ref(&forged), &super::show);
    assert!(loaded.problems.is_empty(), "the file agrees with itself: {:#?}", loaded.problems);
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Given(&cases));
    assert_eq!(kinds(&loaded.problems), ["expectations"], "{:#?}", loaded.problems);
    assert!(loaded.problems[0].message().contains("not what they give at Cilium 1.19.6"), "{}", loaded.problems[0]);
    assert!(loaded.runs.is_empty(), "the run is left out");
}

/// The command reference's example of a refused forgery (docs/commands.md, `report`;
/// `harness/tests/data/readme/forged-kind`): the real 1.19.6 model run relabelled kind, with a kind run id and the probes moved to a Gateway
/// address, resealed; made here from the real run (`LAYOUT_GATE_BLESS=1` rewrites it).
#[test]
fn the_readme_forgery_is_the_real_model_run_relabelled_and_refused() {
    let mut doc = read(&real_model_run());
    doc["lane"] = "kind".into();
    doc["run_id"] = doc["run_id"].as_str().unwrap().replace("-model-", "-kind-").into();
    move_probes(&mut doc, "172.18.255.200:443");
    digest::seal(&mut doc);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/readme/forged-kind");
    crate::golden::assert(&dir.join("evidence.json"), &(serde_json::to_string_pretty(&doc).unwrap() + "\n"));
    let r = report_of(&[dir]);
    assert_eq!(kinds(&r.problems), ["inconsistent", "inconsistent"], "{:#?}", r.problems);
    assert!(r.matrix.cases.is_empty());
}

/// Issue 36: a symlink loop (or a dangling link) beside the run folders was skipped without a
/// word, and the report went on as if it were not there. It is named.
#[test]
fn a_run_folder_that_is_a_symlink_loop_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "run", read(&real_model_run()), false);
    std::os::unix::fs::symlink("loop", tmp.path().join("loop")).unwrap();
    std::os::unix::fs::symlink("nowhere", tmp.path().join("dangling")).unwrap();
    let r = report_of(&[tmp.path().to_path_buf()]);
    let text = messages(&r.problems);
    assert_eq!(r.problems.len(), 2, "{text}");
    assert!(text.contains("loop") && text.contains("dangling") && text.contains("not a readable folder"), "{text}");
    assert_eq!(r.matrix.columns.values().map(Vec::len).sum::<usize>(), 1, "the real run is still read");
}

/// Issue 36: an expectation's provenance raised from `inferred` to `source` (the stored
/// expectation and, re-judged, its verdict alike), the file resealed. It agrees with itself:
/// the seal is new and the verdicts follow from the edited expectations, so only the case
/// files the run names by digest can tell. `report` consults the repository's own catalogue
/// without being asked, where the case's files are still the ones the run judged, and leaves
/// the run out, saying what was raised.
#[test]
fn a_provenance_raised_from_inferred_to_source_and_resealed_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = read(&real_model_run());
    let probe = stored_probe(&mut doc, |p| p["provenance"]["kind"] == "inferred");
    probe["provenance"] = serde_json::json!({"kind": "source", "ref": "cilium#1"});
    let mut ev: crate::evidence::Evidence = serde_json::from_value(doc).unwrap();
    crate::evidence::rejudge::correct(&mut ev);
    let forged = write(tmp.path(), "raised", serde_json::to_value(&ev).unwrap(), true);
    let mut loaded = crate::report::load_all(std::slice::from_ref(&forged), &super::show);
    assert!(loaded.problems.is_empty(), "the file agrees with itself: {:#?}", loaded.problems);
    let catalogue = crate::report::load::catalogue().expect("the repository's cases/");
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Catalogue(&catalogue));
    assert_eq!(kinds(&loaded.problems), ["expectations"], "{:#?}", loaded.problems);
    let text = loaded.problems[0].message();
    assert!(text.contains(".provenance.kind: stored \"source\", the case gives \"inferred\""), "{text}");
    assert!(loaded.runs.is_empty(), "the run is left out");
    // The untouched run, held to the same catalogue: nothing to say.
    let mut untouched = crate::report::load_all(&[real_model_run()], &super::show);
    crate::report::load::check_case_files(&mut untouched, crate::report::load::CaseFiles::Catalogue(&catalogue));
    assert!(untouched.problems.is_empty() && untouched.runs.len() == 1, "{:#?}", untouched.problems);
    // A case the catalogue changed since the run is not compared, and not a problem either.
    let mut doc = read(&real_model_run());
    let files = doc["cases"][0]["case_files"].as_object_mut().unwrap();
    let first = files.keys().next().unwrap().clone();
    files.insert(first, "0".repeat(64).into());
    let older = write(tmp.path(), "older-case", doc, true);
    let mut loaded = crate::report::load_all(&[older], &super::show);
    crate::report::load::check_case_files(&mut loaded, crate::report::load::CaseFiles::Catalogue(&catalogue));
    assert!(loaded.problems.is_empty() && loaded.runs.len() == 1, "{:#?}", loaded.problems);
}
