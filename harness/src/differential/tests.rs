//! The generated layouts are valid input: over a few hundred seeds every layout goes through
//! `check`'s reader (the Gateway API schema included), its derivation and the model, at a 1.19
//! pin and, with ListenerSets, at a 1.20 pin. No Envoy.

use std::path::PathBuf;

use super::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn accepted_at(version: &str, seeds: std::ops::Range<u64>) {
    let pins = Pins::load(&repo().join("kind-config/versions.yaml")).unwrap();
    let v = CiliumVersion::parse(version).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut layouts = Vec::new();
    for seed in seeds {
        layouts.extend(layouts_for(&pins, &v, seed, 1));
    }
    let paths = write_layouts(tmp.path(), &layouts).unwrap();
    let opts = Options::computed(vec![(v.clone(), "test".into())], true).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // One layout at a time, so a refusal names its seed.
    for (l, p) in layouts.iter().zip(&paths) {
        let r = rt.block_on(check::check_paths(std::slice::from_ref(p), &opts));
        let (_, checks) = r.unwrap_or_else(|e| panic!("seed {} layout {}: refused: {e}\n{}", l.seed, l.index, l.text()));
        let gateways = l.objects.iter().filter(|o| o["kind"] == "Gateway").count();
        assert_eq!(checks.len(), gateways, "seed {}: every Gateway is checked", l.seed);
        assert!(checks.iter().all(|c| !c.derived.matrix.is_empty()));
    }
}

#[test]
fn every_generated_layout_is_accepted_at_a_1_19_pin() {
    accepted_at("1.19.6", 0..300);
}

#[test]
fn every_generated_layout_with_listener_sets_is_accepted_at_a_1_20_pin() {
    accepted_at("1.20.1", 1000..1100);
}

/// The tally counts a layout as agreeing only when every Gateway of it agrees in every class.
#[test]
fn a_difference_in_one_class_is_one_disagreeing_layout() {
    let pins = Pins::load(&repo().join("kind-config/versions.yaml")).unwrap();
    let v = CiliumVersion::parse("1.19.6").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let layouts = layouts_for(&pins, &v, 1, 3);
    let paths = write_layouts(tmp.path(), &layouts).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut o = Options::computed(vec![(v.clone(), "test".into())], true).unwrap();
    let (_, model) = rt.block_on(check::check_paths(&paths, &o)).unwrap();
    let same = tally("1.19.6", 3, &model, &model);
    assert_eq!(same.agreed, 3);
    assert!(!same.disagrees());
    // The same layouts predicted with 1.19.5's rules, standing in for the operator: the answers
    // move only where 1.19.6 differs (its listener conflict rule).
    o.assume = [(v.clone(), CiliumVersion::parse("1.19.5").unwrap())].into_iter().collect();
    let (_, other) = rt.block_on(check::check_paths(&paths, &o)).unwrap();
    let mut wrong = other.clone();
    wrong[0].versions[0].gateway.clear();
    wrong[0].versions[0].gateway.push(crate::judge::ConditionObs {
        type_: "Accepted".into(),
        status: "False".into(),
        reason: "Invalid".into(),
        message: String::new(),
        observed_generation: None,
    });
    let r = tally("1.19.6", 3, &model, &wrong);
    assert!(r.disagrees());
    assert!(r.agreed < 3);
    assert_eq!(r.classes[&Class::GatewayConditions].0 + 1, r.classes[&Class::GatewayConditions].1);
    assert!(r.first.contains_key(&Class::GatewayConditions));
}

/// A Gateway the operator lane could not answer (its control plane did not come up) is no
/// verdict: not a disagreement, not a pass, and the whole reason (the log tail after the first
/// line) is printed. CI once showed only "cilium-operator exited (exit status: 255)".
#[test]
fn an_unanswered_layout_is_no_verdict_and_says_why_in_full() {
    let r = super::VersionReport {
        version: "1.19.6".into(),
        not_runnable: None,
        layouts: 1,
        agreed: 0,
        classes: super::compare::Class::ALL.iter().map(|c| (*c, (0, 0))).collect(),
        errors: vec![(
            "d0/gw0".into(),
            "control plane did not come up: cilium-operator exited (exit status: 255)\nlast state seen:\n  level=fatal msg=\"bind: address already in use\"".into(),
        )],
        first: Default::default(),
        wall_seconds: 1.0,
        per_layout_seconds: 1.0,
        control_plane_seconds: 0.5,
        batch: 1,
        operator: String::new(),
        agent_step: String::new(),
        examples: Default::default(),
    };
    assert!(!r.disagrees());
    assert!(r.unanswered());
    let text = super::text(5, 1, std::slice::from_ref(&r));
    assert!(text.contains("NOT ANSWERED d0/gw0: control plane did not come up"), "{text}");
    assert!(text.contains("address already in use"), "{text}");
    assert!(!text.contains("DISAGREEMENT"), "{text}");
    assert!(text.contains("NOT ANSWERED at 1 version(s)"), "{text}");
}

/// The operator lane's LB IPAM pool holds a batch of the largest generated layouts: a Gateway
/// left without an address would answer Programmed False because of the batch beside it.
#[test]
fn the_operator_pool_holds_a_batch_of_generated_layouts() {
    assert!(crate::lanes::operator::batch::pool_holds(super::generate::MAX_GATEWAYS));
    let most =
        super::generate::generate(5, 300, &super::generate::GenOptions { tlsroute_version: "v1alpha2".into(), listener_sets: false })
            .iter()
            .map(|l| l.objects.iter().filter(|o| o["kind"] == "Gateway").count())
            .max()
            .unwrap_or(0);
    assert_eq!(most, super::generate::MAX_GATEWAYS, "the bound is the generator's");
}

/// The nightly's differential step, as `.github/workflows/nightly.yaml` runs it at every pin.
fn nightly_differential_step() -> serde_json::Value {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/nightly.yaml");
    let wf: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = wf["jobs"]["operator"]["steps"].as_array().cloned().unwrap_or_default();
    let mut found: Vec<serde_json::Value> =
        steps.into_iter().filter(|s| s["run"].as_str().is_some_and(|r| r.contains("-- differential "))).collect();
    assert_eq!(found.len(), 1, "one differential step in the nightly's operator job");
    found.remove(0)
}

/// The nightly runs the differential batched (16 layouts at once on one control plane) and
/// bounded by a step timeout, and docs/ci.md, whose argument that the six pins take under 30
/// minutes in all rests on both, quotes the same batch and timeout.
#[test]
fn the_nightly_differential_is_batched_and_bounded_as_the_docs_say() {
    let step = nightly_differential_step();
    let run = step["run"].as_str().unwrap();
    let command = run.lines().skip_while(|l| !l.contains("-- differential ")).take(2).collect::<String>();
    assert!(command.contains("--count 200"), "{command}");
    assert!(command.contains("--batch 16"), "the nightly's differential runs 16 layouts at once: {command}");
    let minutes = step["timeout-minutes"].as_u64().expect("the nightly's differential step has a timeout-minutes");
    assert!(minutes > 0 && minutes <= 30, "{minutes}");
    let ci = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md")).unwrap();
    assert!(ci.contains("--batch 16`"), "docs/ci.md quotes the nightly's batch");
    assert!(ci.contains(&format!("`timeout-minutes: {minutes}`")), "docs/ci.md quotes the nightly's differential timeout ({minutes})");
}
