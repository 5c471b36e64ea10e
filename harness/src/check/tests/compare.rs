//! `check --compare` (issue #17 item 3), without Envoy: both layouts probed on the union of
//! their names plus `--sni` extras, and what the new one gives and takes away in words.

use std::path::PathBuf;

use super::super::compare::{self, Compared};
use super::super::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data(name: &str) -> PathBuf {
    repo().join("harness/tests/data/check").join(name)
}

const OLD: &str = "cozystack-dns01-app-namespaces.yaml";
const NEW: &str = "cozystack-dns01-option1-app-namespaces.yaml";

fn opts(extra: &[&str]) -> Options {
    super::namespaces::opts_with(extra.iter().map(|n| crate::types::Sni::new(*n).unwrap()).collect())
}

fn compared(old: &[&str], new: &[&str], extra: &[&str]) -> Result<Compared, CheckError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let paths = |ns: &[&str]| ns.iter().map(|n| data(n)).collect::<Vec<_>>();
    rt.block_on(compare::compare_paths(&paths(old), &paths(new), &opts(extra)))
}

#[test]
fn the_unclaimed_name_under_the_old_wildcard_is_taken_away() {
    let c = compared(&[OLD], &[NEW], &["other.example.org"]).unwrap();
    assert_eq!(c.pairs.len(), 1, "one Gateway, paired by namespace and name");
    let p = &c.pairs[0];
    assert!(p.old.is_some() && p.new.is_some());
    // The union: www.example.org only the old layout claims (through its wildcard), plus the
    // extra name, on both ports; the new layout is probed on them too.
    for port in [80, 443] {
        for name in ["www.example.org", "other.example.org", "dashboard.example.org"] {
            let k = p.keys.iter().find(|k| k.port.get() == port && k.sni.as_ref().is_some_and(|s| s.as_str() == name));
            let k = k.unwrap_or_else(|| panic!("{name} on {port} not in {:?}", p.keys));
            assert!(p.new.as_ref().unwrap().derived.matrix.contains(k), "the new layout is not probed on {name} on {port}");
        }
    }
    let www = p.keys.iter().find(|k| k.port.get() == 443 && k.sni.as_ref().is_some_and(|s| s.as_str() == "www.example.org")).unwrap();
    assert_eq!(compare::cell(p, "1.19.5", www), "Secret tenant-root-gateway-tls -> nothing (reset)");
    let d = compare::delta(p, "1.19.5");
    assert_eq!(
        d.takes,
        ["on 80 and 443: www.example.org and other.example.org (was Secret tenant-root-gateway-tls) stop answering (reset)"]
    );
    assert!(d.gives.is_empty() && d.changes.is_empty(), "{d:?}");
    // On 1.19.6 the conflict is gone as well, said once with its pair.
    let d = compare::delta(p, "1.19.6");
    assert_eq!(d.status_gone.iter().filter(|s| s.contains("conflicts with")).count(), 1, "{d:?}");
    assert!(d.status_gone.iter().any(|s| s.starts_with("listener https conflicts with tls-api")), "{d:?}");
    // 1.20 dropped the conflicted listeners: the new layout gives the passthrough names back.
    let d = compare::delta(p, "1.20.1");
    assert!(d.gives.iter().any(|g| g == "on 80 and 443: api.example.org answer with backend default/kubernetes"), "{d:?}");
    // 1.19.6 and 1.19.7 agree: one group.
    let groups = compare::grouped_deltas(p);
    assert!(groups.iter().any(|(vs, _)| vs == &["1.19.6", "1.19.7"]), "{groups:?}");
}

#[test]
fn one_layout_against_itself_changes_nothing() {
    // The same objects on both sides are expected across the two inputs, never an error.
    let c = compared(&[OLD], &[OLD], &[]).unwrap();
    let p = &c.pairs[0];
    for (vs, d) in compare::grouped_deltas(p) {
        assert!(d.is_empty(), "{vs:?}: {d:?}");
    }
    let r = compare_format::CompareReport { compared: &c, old_label: "a".into(), new_label: "b".into(), banner: "B".into(), extra: vec![] };
    assert!(!r.differs());
    let table = compare_format::table_text(&r);
    assert!(table.contains("  1.19.5, 1.19.6, 1.19.7 and 1.20.1: nothing"), "{table}");
}

#[test]
fn two_objects_of_one_name_within_one_side_are_still_an_error() {
    let Err(e) = compared(&[OLD, NEW], &[NEW], &[]) else { panic!("accepted a side holding two Gateways tenant-root/tenant-root") };
    let e = e.to_string();
    assert!(e.contains(OLD) && e.contains(NEW), "names both files: {e}");
}

#[test]
fn a_gateway_only_the_old_layout_has_takes_everything_away() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other.yaml");
    std::fs::write(
        &other,
        std::fs::read_to_string(data(OLD))
            .unwrap()
            .replace("name: tenant-root\n  namespace: tenant-root", "name: renamed\n  namespace: tenant-root"),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = rt.block_on(compare::compare_paths(&[data(OLD)], &[other], &opts(&[]))).unwrap();
    let gone = c.pairs.iter().find(|p| p.name == "tenant-root").unwrap();
    assert!(gone.new.is_none());
    let d = compare::delta(gone, "1.19.5");
    assert!(d.takes.iter().any(|t| t.contains("api.example.org") && t.contains("stop answering (no such Gateway)")), "{d:?}");
}

#[test]
fn markdown_and_json_say_the_same() {
    let c = compared(&[OLD], &[NEW], &[]).unwrap();
    let r = compare_format::CompareReport { compared: &c, old_label: OLD.into(), new_label: NEW.into(), banner: "B".into(), extra: vec![] };
    assert!(r.differs());
    let md = compare_format::markdown_text(&r);
    assert!(md.contains("takes away: on 80 and 443: www.example.org (was Secret tenant-root-gateway-tls) stop answering (reset)"), "{md}");
    let j = compare_format::json_value(&r);
    assert_eq!(j["schema"], "layout-gate-check-compare");
    assert_eq!(j["differs"], true);
    let deltas = j["gateways"][0]["deltas"].as_array().unwrap();
    assert!(deltas.iter().any(|d| d["takes"][0].as_str().is_some_and(|t| t.contains("www.example.org"))), "{deltas:?}");
}
