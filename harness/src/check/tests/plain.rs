//! Plain HTTP in `check`'s answer, without Envoy: the rows the derivation adds for HTTP
//! listeners, the answers computed from the chains (status, redirect `Location`, backend), and
//! how the table, Markdown, JSON, verdicts, `--fail-on unreachable`, `--sni` and `case new` say
//! them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::super::answer::Reply;
use super::super::format::{self, Report};
use super::super::outcome::FailOn;
use super::super::predict::model_gateway;
use super::super::*;
use crate::case::NothingHow;
use crate::lanes::model;
use crate::types::Port;

fn layout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check/http-redirect-and-backend.yaml")
}

fn opts() -> Options {
    let pins = crate::versions::Pins::load_default().unwrap();
    let (versions, _) = model::checked::default_selection(model::resolve_versions(&pins, &[]).unwrap(), false, None);
    Options::computed(versions, true).unwrap()
}

fn run(opts: &Options) -> GatewayCheck {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[layout()], opts)).unwrap();
    let [c] = checks.try_into().unwrap();
    c
}

fn report<'a>(checks: &'a [GatewayCheck], fail_on: &[FailOn]) -> Report<'a> {
    Report {
        checks,
        skipped: None,
        skipped_counts: Default::default(),
        envoy: false,
        envoy_version: None,
        fail_on: fail_on.iter().copied().collect::<BTreeSet<_>>(),
        baseline: Some(("1.19.5".into(), "test".into())),
    }
}

fn plain(c: &GatewayCheck, version: &str, host: &str) -> Reply {
    let r = c.versions.iter().find(|r| r.version == version).unwrap();
    r.answers.iter().find(|(k, _)| k.plain && k.sni.as_ref().is_some_and(|s| s.as_str() == host)).map(|(_, a)| a.clone()).unwrap()
}

fn http(status: u16, location: Option<&str>, backend: Option<&str>) -> Reply {
    Reply::Http { status, location: location.map(str::to_string), backend: backend.map(str::to_string) }
}

#[test]
fn http_listeners_get_plain_rows_for_the_names_they_and_their_routes_claim() {
    let c = run(&opts());
    let d = &c.derived;
    let rows: Vec<String> = d.matrix.iter().filter(|k| k.plain).map(|k| k.to_string()).collect();
    assert_eq!(rows, ["http://www.example.com on 80", "http://app.example.com on 80", "http://unrelated.invalid on 80"]);
    // The TLS rows stay as they were: every port, every name, no SNI.
    assert_eq!(d.matrix.iter().filter(|k| !k.plain).count(), 2 * 5);
    let claim =
        |host: &str| d.claims.get(&derive::MatrixKey::plain(Port::new(80).unwrap(), crate::types::Sni::new(host).unwrap())).cloned();
    assert_eq!(claim("www.example.com"), Some(vec!["HTTPRoute to-https".to_string()]));
    assert_eq!(claim("app.example.com"), Some(vec!["HTTPRoute plain-app".to_string()]));
    assert_eq!(claim("unrelated.invalid"), None);
}

#[test]
fn computed_plain_answers_say_status_location_and_backend() {
    let c = run(&opts());
    for v in ["1.19.5", "1.20.1"] {
        assert_eq!(plain(&c, v, "www.example.com"), http(301, Some("https://www.example.com:443/"), None), "{v}");
        assert_eq!(plain(&c, v, "app.example.com"), http(200, None, Some("app")), "{v}");
        assert_eq!(plain(&c, v, "unrelated.invalid"), http(404, None, None), "{v}");
    }
}

#[test]
fn a_catch_all_redirect_claims_every_name_of_the_gateway_on_its_port() {
    // cozystack's dns01 layout: `http` without hostname, the redirect route without hostnames.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cases/rendered/cozystack-tenantgateway-dns01.yaml");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[path], &Options { complete: false, ..opts() })).unwrap();
    let c = &checks[0];
    let hosts: Vec<String> = c.derived.matrix.iter().filter(|k| k.plain).map(|k| k.name()).collect();
    assert!(
        hosts.contains(&"http://dashboard.example.org".to_string()) && hosts.last().unwrap() == "http://unrelated.invalid",
        "{hosts:?}"
    );
    assert_eq!(plain(c, "1.19.5", "dashboard.example.org"), http(301, Some("https://dashboard.example.org:443/"), None));
}

#[test]
fn table_markdown_and_json_carry_the_plain_rows() {
    let checks = [run(&opts())];
    let r = report(&checks, &FailOn::ALL);
    // Whole cells (`--wide`): at 120 columns a redirect's Location is cut.
    let table = format::table_text_at(&r, crate::table::width(true));
    assert!(table.contains("Plain HTTP on the HTTP listeners' ports"), "{table}");
    let row = table.lines().find(|l| l.starts_with("80") && l.contains("app.example.com") && l.contains("from")).unwrap_or_default();
    assert_eq!(row.matches("200 from backend app").count(), checks[0].versions.len(), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("80") && l.contains("www.example.com") && l.contains("301 to https://www.example.com:443/")),
        "{table}"
    );
    assert!(table.lines().any(|l| l.starts_with("80") && l.contains("unrelated.invalid") && l.contains("404 (no backend)")), "{table}");
    let md = format::markdown_text(&r);
    assert!(md.contains("| 80 | app.example.com | 200 from backend app |"), "{md}");
    assert!(md.contains("| 80 | www.example.com | 301 to https://www.example.com:443/ |"), "{md}");
    let j = format::json_value(&r);
    assert_eq!(j["schema_version"], 2);
    let v = &j["gateways"][0]["versions"][0];
    assert!(v["answers"].as_array().unwrap().iter().all(|a| a.get("host").is_none() && a["answer"] != "http"), "{v}");
    let http_rows = v["http"].as_array().unwrap();
    let www = http_rows.iter().find(|a| a["host"] == "www.example.com").unwrap();
    assert_eq!((www["port"].as_u64(), www["answer"].as_str(), www["status"].as_u64()), (Some(80), Some("http"), Some(301)));
    assert_eq!(www["location"], "https://www.example.com:443/");
    let app = http_rows.iter().find(|a| a["host"] == "app.example.com").unwrap();
    assert_eq!((app["backend"].as_str(), app["label"].as_str()), (Some("app"), Some("backend app")));
    // Nothing changes between the versions here, and nothing is unreachable.
    assert!(r.failed().is_empty(), "{:?}", r.failed());
}

#[test]
fn a_plain_answer_that_changes_is_a_traffic_regression_and_unreachable() {
    let mut c = run(&opts());
    let r = c.versions.iter_mut().find(|r| r.version == "1.20.1").unwrap();
    for (k, a) in r.answers.iter_mut() {
        if k.plain && k.name() == "http://www.example.com" {
            *a = Reply::nothing(NothingHow::Reset);
        }
        if k.plain && k.name() == "http://app.example.com" {
            *a = http(404, None, None);
        }
    }
    let checks = [c];
    let r = report(&checks, &[FailOn::Unreachable, FailOn::TrafficChanged]);
    let f = r.found(&checks[0]);
    let v = f.verdicts.iter().find(|v| v.version == "1.20.1").unwrap();
    assert_eq!(v.kind, super::super::verdict::Kind::TrafficRegression);
    assert_eq!(
        v.traffic,
        [
            "on 80: http://www.example.com (was 301 to https://www.example.com:443/) stop answering (reset)",
            "on 80: http://app.example.com (was 200 from backend app) answer with 404 (no backend)"
        ]
    );
    let unreachable: Vec<&str> = f.events.iter().filter(|e| e.kind == FailOn::Unreachable).map(|e| e.what.as_str()).collect();
    // A 404 is an answer; only the name that gets none is unreachable.
    assert_eq!(unreachable, ["http://www.example.com on 80 answer nothing (claimed by HTTPRoute to-https)"]);
    assert_eq!(r.failed(), [(FailOn::Unreachable, vec!["1.20.1".to_string()]), (FailOn::TrafficChanged, vec!["1.20.1".to_string()])]);
    assert!(
        f.changes.iter().any(|ch| ch.answer && ch.sentence == "1.20.1: http://www.example.com on 80 stops answering (reset)"),
        "{:?}",
        f.changes
    );
}

#[test]
fn sni_extras_are_asked_over_plain_http_too() {
    let c = run(&Options { extra_sni: vec![crate::types::Sni::new("extra.example.com").unwrap()], ..opts() });
    let rows: Vec<String> = c.derived.matrix.iter().filter(|k| k.plain).map(|k| k.name()).collect();
    assert_eq!(rows, ["http://www.example.com", "http://app.example.com", "http://unrelated.invalid", "http://extra.example.com"]);
    assert_eq!(plain(&c, "1.19.5", "extra.example.com"), http(404, None, None));
}

#[test]
fn compare_shows_plain_rows_side_by_side() {
    let c = run(&opts());
    let d = c.derived.clone();
    let keys = compare::union(Some(&d), None, &[]);
    assert_eq!(keys.iter().filter(|k| k.plain).count(), 3);
    let mut gone = c.clone();
    for r in &mut gone.versions {
        r.answers.retain(|(k, _)| !k.plain);
    }
    gone.derived.matrix.retain(|k| !k.plain);
    let pair = compare::Pair { namespace: "shop".into(), name: "web".into(), old: Some(c), new: Some(gone), keys };
    let www = pair.keys.iter().find(|k| k.plain && k.name() == "http://www.example.com").unwrap();
    assert_eq!(compare::cell(&pair, "1.19.5", www), "301 to https://www.example.com:443/ -> nothing (no HTTP listener on this port)");
    let d = compare::delta(&pair, "1.19.5");
    assert!(d.takes.iter().any(|t| t.contains("http://www.example.com") && t.starts_with("on 80:")), "{d:?}");
}

#[test]
fn case_new_writes_plain_probes_that_load() {
    let c = run(&opts());
    let pinned: Vec<crate::case::CiliumVersion> = opts().versions.into_iter().map(|(v, _)| v).collect();
    let text = case_text(&c, &[layout()], &pinned);
    assert!(text.contains(r#"{port: 80, plain: true, host: "www.{apex}", status: 301}"#), "{text}");
    assert!(text.contains(r#"{port: 80, plain: true, host: "app.{apex}", status: 200, served_by: app}"#), "{text}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shop");
    casefile::write_case_dir(&dir, &text, &c.derived).unwrap();
    let case = crate::case::load(&dir).unwrap_or_else(|ps| panic!("{ps:?}\n{text}"));
    let plain_probes = case.groups.iter().flat_map(|g| &g.probes).filter(|p| p.key.plain).count();
    assert!(plain_probes >= 3, "{text}");
}

fn merged_layout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check/two-httproutes-one-match.yaml")
}

/// `check` (no Envoy) over `merged_layout()` at the default selection.
fn run_merged() -> GatewayCheck {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, checks) = rt.block_on(check_paths(&[merged_layout()], &opts())).unwrap();
    let [c] = checks.try_into().unwrap();
    c
}

/// Two HTTPRoutes of one listener that match alike, one without a valid backend: Cilium merges
/// them into one Envoy route with the backends of all, so the valid one answers at every checked
/// version before 1.20.2 (the model answered 500 before: differential, seed 2, layout 16); Envoy
/// agrees.
#[test]
fn two_routes_with_one_match_answer_with_the_valid_backend() {
    let c = run_merged();
    assert!(c.versions.len() >= 4, "{:?}", c.versions.iter().map(|v| &v.version).collect::<Vec<_>>());
    // From 1.20.2 the first route's own 500 may win instead (the next test).
    let first_wins = crate::case::VersionRange::parse(crate::lanes::model::rules::SAME_MATCH_FIRST_DIRECT_RESPONSE.versions).unwrap();
    for v in c.versions.iter().filter(|v| !first_wins.matches(&crate::case::CiliumVersion::parse(&v.version).unwrap())) {
        assert_eq!(plain(&c, &v.version, "app.example.test"), http(200, None, Some("web")), "{}", v.version);
        assert!(v.may_answer.is_empty(), "{}: {:?}", v.version, v.may_answer);
    }
}

/// Where the order Cilium does not fix decides (1.20.2: the first route's own 500 wins), the
/// answer is either, and `check` says which and why.
#[test]
fn an_answer_the_route_order_decides_is_one_of_several() {
    let inputs = read::read(&[merged_layout()]).unwrap();
    let [d]: [derive::Derived; 1] =
        derive::derive_with(&inputs.objects, derive::DeriveOptions { complete: false, each_file: false }).unwrap().try_into().unwrap();
    let (_, gw) = model_gateway(&d).unwrap();
    let key = derive::MatrixKey::plain(Port::new(80).unwrap(), crate::types::Sni::new("app.example.test").unwrap());
    let at = |v: &str| answer::plain_alternatives(&translate::predict(&gw, &crate::case::CiliumVersion::parse(v).unwrap()), &key);
    assert_eq!(at("1.19.6"), None);
    let m = at("1.20.2").expect("either answer at 1.20.2");
    assert_eq!(m.replies, [http(500, None, None), http(200, None, Some("web"))]);
    assert!(m.why.contains("HTTPRoutes a, b") && m.why.contains("route-order-unfixed"), "{}", m.why);
}

/// Two picks of one set of possible replies are no change between versions; a reply outside the
/// set, or a set that changed, is.
#[test]
fn two_picks_of_one_set_are_the_same_answer() {
    let c = run_merged();
    let (mut a, mut b) = (c.versions[0].clone(), c.versions[1].clone());
    let key = a.answers.iter().find(|(k, _)| k.plain).map(|(k, _)| k.clone()).unwrap();
    let (web, other) = (http(200, None, Some("web")), http(200, None, Some("other")));
    assert!(!same_answer(&a, &b, &key, &web, &other), "no set: a different reply is a change");
    let set = vec![web.clone(), other.clone()];
    a.may_answer = vec![answer::MayAnswer { key: key.clone(), replies: set.clone(), why: String::new() }];
    assert!(!same_answer(&a, &b, &key, &web, &other), "a set on one side only");
    b.may_answer = a.may_answer.clone();
    assert!(same_answer(&a, &b, &key, &web, &other));
    assert!(!same_answer(&a, &b, &key, &web, &http(500, None, None)), "outside the set");
    b.may_answer[0].replies = vec![web.clone(), http(500, None, None)];
    assert!(!same_answer(&a, &b, &key, &web, &other), "the set changed");
}

/// `check --lane operator` says, per version its operator answered, which dependencies that
/// operator was built with at another version than the tag requires (issue #24): in the table,
/// the Markdown and the JSON; a version the model answered says none.
#[test]
fn each_version_the_operator_answered_says_what_its_build_substituted() {
    let mut c = run(&opts());
    let i = c.versions.iter().position(|r| r.version == "1.20.1").unwrap();
    c.versions[i].answered_by = crate::evidence::Lane::Operator;
    c.versions[i].substituted = vec!["github.com/osrg/gobgp/v4 v4.6.1-0.20260630022313-d6dee8360046 -> v4.7.0".into()];
    let checks = [c];
    let r = report(&checks, &[]);
    let text = format::table_text_at(&r, None);
    let line = text.lines().find(|l| l.starts_with("SUBSTITUTED: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("SUBSTITUTED: 1.20.1: Cilium's operator was built from the tag with github.com/osrg/gobgp/v4"), "{line}");
    assert_eq!(text.matches("SUBSTITUTED: ").count(), 1, "{text}");
    assert!(format::markdown_text(&r).contains("> **SUBSTITUTED:** 1.20.1: "));
    let json = format::json_value(&r);
    let versions = json.pointer("/gateways/0/versions").or_else(|| json.pointer("/checks/0/versions")).unwrap_or_else(|| panic!("{json}"));
    let subs: Vec<&serde_json::Value> = versions.as_array().unwrap().iter().map(|v| &v["substituted"]).collect();
    assert!(subs.iter().filter(|s| s.as_array().is_some_and(|a| a.len() == 1)).count() == 1, "{subs:?}");
}
