//! Merging: shards into one column, agreeing overlaps, and the facts each section derives.

use super::{data_dir, report_of};
use crate::evidence::Lane;
use crate::report::Column;
use crate::report::facts::FactKind;
use crate::report::merge::Cell;

fn column(lane: Lane, v: &str) -> Column {
    Column { lane, cilium: Some(crate::case::CiliumVersion::parse(v).unwrap()) }
}

#[test]
fn shards_of_a_version_are_one_column() {
    let r = report_of(&[data_dir().join("handwritten")]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let col = column(Lane::Kind, "1.20.1");
    let runs: Vec<&str> = r.matrix.columns[&col].iter().map(|x| x.run_id.as_str()).collect();
    assert_eq!(runs, ["kind-fixture-1.20.1-shard-1of2", "kind-fixture-1.20.1-shard-2of2"]);
    // Disjoint cases from both shards land in the same column ...
    assert!(r.matrix.cases["http01-default"].cells.contains_key(&col));
    // ... and a case both shards ran, agreeing (their fingerprints and addresses differ), is
    // shown once with both runs.
    match &r.matrix.cases["dns01-default"].cells[&col] {
        Cell::Observed { runs, .. } => assert_eq!(runs.len(), 2),
        other => panic!("expected an agreed cell, got {other:?}"),
    }
    assert_eq!(r.matrix.columns.keys().filter(|c| c.lane == Lane::Kind).count(), 4);
}

#[test]
fn changes_read_as_release_note_sentences() {
    let r = report_of(&[data_dir().join("handwritten")]);
    let sentences: Vec<&str> = r.changes.iter().map(|c| c.sentence.as_str()).collect();
    assert!(sentences.contains(&"443 api.example.test: api-backend on 1.19.7, nothing (reset) on 1.20.1"), "{sentences:#?}");
    assert!(sentences.contains(&"listener https Conflicted: absent on 1.19.5, True/ProtocolConflict on 1.19.6"), "{sentences:#?}");
    assert!(
        sentences.contains(&"Envoy listener named \"listener\": 5 filter chains on 1.19.6, 4 filter chains on 1.19.7"),
        "{sentences:#?}"
    );
    // Only consecutive versions are compared, and only within a lane.
    assert!(r.changes.iter().all(|c| c.lane == Lane::Kind));
    assert!(!sentences.iter().any(|s| s.contains("on 1.19.5, ") && s.contains("on 1.20.1")), "{sentences:#?}");
    // A fact checked on one side only (tls-vm-exportproxy is not checked on 1.19.5) is no change.
    assert!(!sentences.iter().any(|s| s.starts_with("listener tls-vm-exportproxy") && s.contains("1.19.5")), "{sentences:#?}");
}

#[test]
fn model_against_observation_names_each_differing_fact() {
    let r = report_of(&[data_dir().join("handwritten")]);
    assert_eq!(r.divergences.len(), 1, "{:#?}", r.divergences);
    let d = &r.divergences[0];
    assert_eq!(d.kind, FactKind::Condition);
    assert_eq!(
        d.sentence,
        "listener tls-cdi-uploadproxy Conflicted: model predicted absent, kind observed True/ProtocolConflict on 1.19.6"
    );
}

#[test]
fn inferred_expectations_are_to_confirm_until_a_cluster_saw_them() {
    let r = report_of(&[data_dir().join("handwritten")]);
    let subjects: Vec<(&str, &str)> = r.to_confirm.iter().map(|t| (t.case.as_str(), t.subject.as_str())).collect();
    // http01-default ran on model 1.19.6 only: its inferred expectations wait for a cluster.
    assert!(subjects.contains(&("http01-default", "envoy listener filter_chains")), "{subjects:#?}");
    // dns01-default's inferred envoy expectation on 1.19.6 was observed by kind 1.19.6.
    assert!(!subjects.iter().any(|(c, _)| *c == "dns01-default"), "{subjects:#?}");
    let news: Vec<(&str, &str)> = r.new_facts.iter().map(|f| (f.cilium.as_str(), f.observed.as_str())).collect();
    assert_eq!(news, [("1.19.7", "4"), ("1.20.1", "0")]);
}

#[test]
fn case_details_carry_the_facts_that_matter() {
    let r = report_of(&[data_dir().join("handwritten")]);
    let md = r.markdown();
    // Which certificate answers which SNI on which port, per version; bold where it changed.
    assert!(md.contains("| `443 api.example.test` | api-backend | api-backend | api-backend | **nothing (reset)** |"), "{md}");
    // Conflicted listeners, from listener verdicts with Conflicted=True.
    assert!(
        md.contains(
            "| Conflicted listeners | none | **https (ProtocolConflict), tls-api (ProtocolConflict), tls-cdi-uploadproxy (ProtocolConflict)"
        ),
        "{md}"
    );
    // A name GitHub would turn into a link stays code.
    assert!(md.contains("| `443 www.example.test` | gateway-wildcard, served by web |"), "{md}");
    // A listener Envoy refused, with its address masked.
    assert!(md.contains("refused by Envoy: error adding listener '&lt;address&gt;'"), "{md}");
    // Prediction is labelled as such, separately from gate evidence.
    assert!(md.contains("### model lane: prediction"));
    assert!(md.contains("### kind lane: gate evidence"));
}

#[test]
fn the_matrix_is_one_short_cell_per_case_and_version() {
    let r = report_of(&[data_dir().join("handwritten")]);
    let summary = crate::report::markdown::summary_part(&r.markdown());
    assert!(summary.contains("| `dns01-default` | ✅ pass | ✅ pass **Δ** | ❌ **FAIL 2/19** **Δ** | ✅ pass **Δ** |"), "{summary}");
    assert!(summary.contains("| `http01-default` | not run | not run | not run | ❌ **FAIL 1/3** |"), "{summary}");
    // The facts are folded, not in the summary.
    assert!(!summary.contains("`443 api.example.test` | api-backend"), "{summary}");
    let matrix = &summary[summary.find("## Matrix").unwrap()..summary.find("## Changed between versions").unwrap()];
    assert!(!matrix.contains("<br>"), "{matrix}");
}
