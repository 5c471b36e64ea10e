//! The report on evidence from real runs: model-lane runs on every pinned version and a
//! fixture-lane run, as the harness wrote them.

use super::{data_dir, report_of};
use crate::evidence::Lane;

#[test]
fn real_runs_merge_without_problems() {
    let r = report_of(&[data_dir().join("real")]);
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    let pins = crate::versions::Pins::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::versions::VERSIONS_FILE)).unwrap();
    let model: Vec<String> = r.matrix.columns.keys().filter(|c| c.lane == Lane::Model).map(|c| c.version_label()).collect();
    // The model runs only where it has been checked (lanes/model/checked.rs).
    let pinned: Vec<String> =
        pins.versions().iter().filter(|v| crate::lanes::model::checked::is_checked(v)).map(|v| v.to_string()).collect();
    assert_eq!(model, pinned, "one model column per pinned version the model has been checked at");
    assert!(r.matrix.columns.keys().any(|c| c.lane == Lane::Fixture && c.cilium.is_none()));
}

#[test]
fn real_model_runs_show_the_1_20_change() {
    let r = report_of(&[data_dir().join("real")]);
    let sentences: Vec<&str> = r.changes.iter().filter(|c| c.lane == Lane::Model).map(|c| c.sentence.as_str()).collect();
    // 1.20.0 is the first checked version of the 1.20 line.
    assert!(sentences.contains(&"443 api.example.test: api-backend on 1.19.7, nothing (reset) on 1.20.0"), "{sentences:#?}");
    // Without a kind run, every inferred expectation the model checked waits for a cluster.
    assert!(r.to_confirm.iter().any(|t| t.checked.iter().any(|c| c.starts_with("model 1.20.0"))), "{:#?}", r.to_confirm);
    assert!(r.divergences.is_empty() && r.new_facts.is_empty());
}
