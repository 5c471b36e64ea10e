//! A real operator-lane run, kept in `harness/tests/data/operator/real-1.19.5/` (Cilium 1.19.5's
//! own operator on this machine, `run --lane operator --case dns01-default --case
//! cilium/gateway-invalid-tls-configuration`): it replays offline to the verdicts it recorded,
//! `report`'s consistency checks accept it as an operator run and refuse it relabelled, and
//! `--record` confirms exactly the groups it answered.

use std::path::{Path, PathBuf};

use crate::evidence::{Evidence, Lane};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/operator/real-1.19.5")
}

fn evidence() -> Evidence {
    serde_json::from_str(&std::fs::read_to_string(data().join("evidence.json")).unwrap()).unwrap()
}

#[test]
fn the_real_run_is_ciliums_operator_at_the_pin() {
    let ev = evidence();
    assert_eq!(ev.lane, Lane::Operator);
    assert_eq!(ev.cilium.as_ref().map(|c| c.version.as_str()), Some("1.19.5"));
    let op = &ev.environment["cilium_operator"];
    assert!(op.starts_with("github.com/cilium/cilium v1.19.5 h1:"), "{op}");
    assert!(ev.environment["real"].contains("Cilium's own operator"), "{:?}", ev.environment);
    assert!(ev.environment["emulated"].contains("agent step"), "{:?}", ev.environment);
    assert!(ev.cases.len() >= 2 && ev.cases.iter().all(|c| c.outcome == crate::judge::Outcome::Pass));
}

#[test]
fn a_real_operator_run_replays_to_the_verdicts_it_recorded() {
    let r = crate::lanes::cluster::replay::replay_dir(&data()).unwrap();
    assert!(r.agrees(), "{:#?}", r.cases.iter().map(|c| (&c.case, &c.differences)).collect::<Vec<_>>());
    assert_eq!(r.cases.len(), evidence().cases.len());
}

#[test]
fn the_consistency_checks_accept_it_and_refuse_it_relabelled() {
    let ev = evidence();
    assert!(crate::evidence::consistency::check(&ev, None).is_empty(), "{:#?}", crate::evidence::consistency::check(&ev, None));
    // Relabelled as the gate lane, its loopback probes, its environment and its missing kind
    // keys all speak against it.
    let mut kind = ev.clone();
    kind.lane = Lane::Kind;
    let said: Vec<String> = crate::evidence::consistency::check(&kind, None).into_iter().map(|m| m.what).collect();
    assert!(said.iter().any(|m| m.contains("only operator runs write")), "{said:#?}");
    assert!(said.iter().any(|m| m.contains("loopback") || m.contains("127.0.0.1")), "{said:#?}");
    // Relabelled to another version, the operator module names the real one.
    let mut other = ev;
    other.cilium.as_mut().unwrap().version = "1.19.6".into();
    let said: Vec<String> = crate::evidence::consistency::check(&other, None).into_iter().map(|m| m.what).collect();
    assert!(said.iter().any(|m| m.contains("not built from github.com/cilium/cilium v1.19.6")), "{said:#?}");
}

/// `--record` on the real run: each group at 1.19.5 it answered in full gains a `confirmed:`
/// entry naming the operator module; the result loads, and recording again changes nothing.
#[test]
fn recording_the_run_confirms_the_groups_the_operator_answered() {
    let ev = evidence();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/dns01-default");
    // Inside the repository, so the case's `docs/` references resolve as they do in `cases/`.
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    std::fs::create_dir_all(&target).unwrap();
    let tmp = tempfile::tempdir_in(&target).unwrap();
    let dir = tmp.path().join("dns01-default");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let case = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}"));
    let text = std::fs::read_to_string(&case.file).unwrap();
    let r = crate::check::record::record_operator(&case, &text, &ev).unwrap();
    let v = crate::case::CiliumVersion::parse("1.19.5").unwrap();
    let at_version = case.groups.iter().filter(|g| g.range.matches(&v)).count();
    assert_eq!(r.changed.len(), at_version, "{:#?}\n{:#?}", r.changed, r.not_rewritten);
    assert!(r.not_rewritten.is_empty(), "{:#?}", r.not_rewritten);
    std::fs::write(&case.file, &r.text).unwrap();
    let again = crate::case::load(&dir).unwrap_or_else(|p| panic!("{p:#?}\n{}", r.text));
    let module = ev.environment["cilium_operator"].split_whitespace().nth(2).unwrap().to_string();
    // (The catalogue's own case may already carry confirmations of other runs and versions:
    // this run's entry replaces the one for its version and leaves the others.)
    for g in &again.groups {
        let at: Vec<_> = g.confirmed.iter().filter(|c| c.cilium == "1.19.5").collect();
        if g.range.matches(&v) {
            assert_eq!(at.len(), 1, "group {}", g.range.as_str());
            assert_eq!((at[0].module.as_str(), at[0].run.as_str()), (module.as_str(), ev.run_id.as_str()));
        } else {
            assert!(at.is_empty(), "group {} is not about 1.19.5", g.range.as_str());
        }
    }
    // Idempotent: the entry for the version is replaced, not added again.
    let r2 = crate::check::record::record_operator(&again, &r.text, &ev).unwrap();
    assert_eq!(r2.text, r.text);
    // Only operator evidence confirms.
    let mut model = ev.clone();
    model.lane = Lane::Model;
    assert!(crate::check::record::record_operator(&case, &text, &model).unwrap_err().contains("not an operator run"));
}

/// A group the operator did not answer in full is named, never confirmed.
#[test]
fn a_group_the_operator_contradicts_is_not_confirmed() {
    let mut ev = evidence();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/dns01-default");
    let case = crate::case::load(&src).unwrap();
    let text = std::fs::read_to_string(&case.file).unwrap();
    // The operator's answer for the Gateway, turned around.
    let c = ev.cases.iter_mut().find(|c| c.name == "dns01-default").unwrap();
    for cond in c.observed.gateway.iter_mut().flatten() {
        if cond.type_ == "Accepted" {
            cond.status = "False".into();
        }
    }
    let r = crate::check::record::record_operator(&case, &text, &ev).unwrap();
    assert!(r.not_rewritten.iter().any(|l| l.contains("not confirmed")), "{:#?}", r.not_rewritten);
    let v = crate::case::CiliumVersion::parse("1.19.5").unwrap();
    let with_gateway = case.groups.iter().filter(|g| g.range.matches(&v) && !g.gateway.is_empty()).count();
    assert!(with_gateway > 0);
    assert_eq!(r.changed.len(), case.groups.iter().filter(|g| g.range.matches(&v)).count() - with_gateway, "{:#?}", r.changed);
}

/// Every Gateway and listener condition the model predicts at `v` for `case_dir` that the
/// operator's recorded answer (`c`) contradicts: `subject type: model X, operator Y`.
fn model_against_operator(case_dir: &Path, c: &crate::evidence::CaseEvidence, v: &str) -> Vec<String> {
    use crate::judge::ConditionObs;
    let case = crate::case::load(case_dir).unwrap_or_else(|p| panic!("{p:#?}"));
    let model = crate::lanes::model::input::read(&case).unwrap();
    let v = crate::case::CiliumVersion::parse(v).unwrap();
    let several = model.gateways.len() > 1;
    let mut out = Vec::new();
    let mut compare = |subject: &str, predicted: &[ConditionObs], seen: Option<&Vec<ConditionObs>>| {
        let Some(seen) = seen else {
            out.push(format!("{subject}: the operator's answer was not recorded"));
            return;
        };
        for p in predicted {
            match seen.iter().find(|s| s.type_ == p.type_) {
                Some(s) if (s.status.as_str(), s.reason.as_str()) == (p.status.as_str(), p.reason.as_str()) => {}
                Some(s) => out.push(format!("{subject} {}: model {}/{}, operator {}/{}", p.type_, p.status, p.reason, s.status, s.reason)),
                None => out.push(format!("{subject} {}: model {}/{}, operator none", p.type_, p.status, p.reason)),
            }
        }
    };
    for gw in &model.gateways {
        let p = crate::lanes::model::translate::predict(gw, &v);
        let seen = if several { c.observed.gateways.get(&gw.name) } else { c.observed.gateway.as_ref() };
        compare(&format!("gateway {}", gw.name), &p.gateway, seen);
        for (l, conds) in &p.listeners {
            let key = if several { format!("{}/{l}", gw.name) } else { l.clone() };
            compare(&format!("listener {key}"), conds, c.observed.listeners.get(&key));
        }
    }
    out
}

/// The model agrees with Cilium's own operator on every Gateway and listener condition of the
/// recorded run; a rule applied at the wrong version (1.19.6's conflict check, asked of the
/// 1.19.5 answer) makes the same comparison fail, so agreement is not vacuous.
#[test]
fn the_model_agrees_with_the_recorded_operator_and_a_wrong_rule_does_not() {
    let ev = evidence();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    for c in &ev.cases {
        let d = model_against_operator(&root.join(&c.name), c, "1.19.5");
        assert!(d.is_empty(), "{}: the model disagrees with Cilium's operator at 1.19.5:\n{}", c.name, d.join("\n"));
    }
    let dns01 = ev.cases.iter().find(|c| c.name == "dns01-default").unwrap();
    let wrong = model_against_operator(&root.join("dns01-default"), dns01, "1.19.6");
    assert!(wrong.iter().any(|d| d.contains("Conflicted") || d.contains("Accepted")), "{wrong:#?}");
}
