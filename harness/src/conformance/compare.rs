//! The run against Cilium's published report for the nearest release of its line, test by test
//! and profile by profile. Pure: reports and results in, rows and findings out.
//!
//! A published report counts tests per profile and names only those it skipped or failed. Every
//! published Cilium report has Failed 0 and Skipped 0 in every profile, so every test the suite
//! selected there passed there; the tests the suite selected here are those it ran or that this
//! run skipped by name. So a test selected here is "passed there" unless the published report
//! names it failed or skipped. Whether the two selections are the same is checked per profile
//! (the counts) and per feature list; a difference is a finding, never hidden.

use std::collections::{BTreeMap, BTreeSet};

use super::results::{Outcome, Profile, Report, Results, Statistics};
use super::skips::Skip;
use crate::case::CiliumVersion;

/// The published reports kept in `conformance/published/` (README.md there names each source).
pub const PUBLISHED: [(&str, &str); 2] = [
    (
        "v1.4.0-experimental-v1.19.0-pre.2-default-report.yaml",
        include_str!("published/v1.4.0-experimental-v1.19.0-pre.2-default-report.yaml"),
    ),
    ("v1.6-experimental-v1.20.0-default-report.yaml", include_str!("published/v1.6-experimental-v1.20.0-default-report.yaml")),
];

/// The published report for the nearest release of `version`'s line: (file, source, text).
pub fn published_for(version: &CiliumVersion) -> Option<(&'static str, String, &'static str)> {
    let (file, source) = match version.parts() {
        (1, 19, _) => (
            PUBLISHED[0],
            "kubernetes-sigs/gateway-api@v1.6.2:conformance/reports/v1.4.0/cilium/experimental-v1.19.0-pre.2-default-report.yaml",
        ),
        (1, 20, _) => (
            PUBLISHED[1],
            "kubernetes-sigs/gateway-api@01087c64dc0969a7c21ea5812b667508584900c2:conformance/reports/v1.6/cilium/experimental-v1.20.0-default-report.yaml",
        ),
        _ => return None,
    };
    Some((file.0, source.to_string(), file.1))
}

/// A test's result here.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "result", content = "why")]
pub enum Here {
    Passed,
    Failed,
    /// Skipped by this run, by name (`--skip-tests`), with why.
    Skipped(String),
    /// Selected but never reached (the suite stopped first).
    NotRun,
}

/// A test's result in the published report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum There {
    /// Not named failed or skipped in a report whose every profile has Failed 0, Skipped 0.
    Passed,
    Failed,
    Skipped,
}

/// Where a test falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    PassedOnBoth,
    PassedHereOnly,
    PassedThereOnly,
    PassedOnNeither,
}

impl Kind {
    pub fn words(self) -> &'static str {
        match self {
            Kind::PassedOnBoth => "passed on both",
            Kind::PassedHereOnly => "passed here only",
            Kind::PassedThereOnly => "passed there only",
            Kind::PassedOnNeither => "passed on neither",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TestRow {
    pub test: String,
    pub here: Here,
    pub there: There,
    pub kind: Kind,
    /// The test sends traffic (read from the suite's sources, `skips::traffic_tests`).
    pub sends_traffic: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProfileRow {
    pub profile: String,
    /// Core and extended together; `None` when the run wrote no report.
    pub here: Option<Statistics>,
    /// `None` when the published report has no such profile.
    pub there: Option<Statistics>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Comparison {
    pub published: String,
    pub published_source: String,
    pub profiles: Vec<ProfileRow>,
    pub tests: Vec<TestRow>,
    /// How many tests the suite itself skipped (a feature not supported or not in a profile):
    /// selected on neither side.
    pub not_selected: usize,
    /// Every difference, one line each with its reason.
    pub findings: Vec<String>,
}

fn both(p: &Profile) -> Statistics {
    let mut s = p.core.statistics;
    if let Some(e) = &p.extended {
        s.passed += e.statistics.passed;
        s.failed += e.statistics.failed;
        s.skipped += e.statistics.skipped;
    }
    s
}

fn named(p: &Profile, pick: fn(&super::results::Status) -> &Vec<String>) -> BTreeSet<String> {
    let mut s: BTreeSet<String> = pick(&p.core).iter().cloned().collect();
    if let Some(e) = &p.extended {
        s.extend(pick(e).iter().cloned());
    }
    s
}

/// What a run compares: its report (`None` when the suite wrote none), each test's result, what
/// it skipped by name, and which tests send traffic (with the reason each known traffic
/// failure of the line is given, [`super::findings`]).
pub struct Run<'a> {
    pub report: Option<&'a Report>,
    pub results: &'a Results,
    pub skips: &'a [Skip],
    pub traffic: &'a BTreeMap<String, String>,
    /// The Cilium version the run is of (the known traffic findings are per line).
    pub version: &'a CiliumVersion,
    /// The features each test needs (the known traffic findings are per feature).
    pub features: &'a BTreeMap<String, Vec<String>>,
    /// Whether the L4 stand-in for the agent's BPF load balancer ran (`lanes::operator::l4`):
    /// with it, the 1.20 L4 explanation no longer holds.
    pub l4_stand_in: bool,
}

/// Compares one run with the published report `there`.
pub fn compare(run: &Run<'_>, there: &Report, published: (&str, String)) -> Comparison {
    let (here, results, skips) = (run.report, run.results, run.skips);
    // A skip the published report does not count is not selected there: no row, like a test
    // the suite itself skipped.
    let skip_why: BTreeMap<&str, &str> = skips.iter().filter(|s| s.counted_there).map(|s| (s.test.as_str(), s.why.as_str())).collect();
    let there_failed: BTreeSet<String> = there.profiles.iter().flat_map(|p| named(p, |s| &s.failed_tests)).collect();
    let there_skipped: BTreeSet<String> = there.profiles.iter().flat_map(|p| named(p, |s| &s.skipped_tests)).collect();
    let mut findings = Vec::new();

    // Selected here: ran (passed or failed), or skipped by this run by name. A test the suite
    // skipped on its own is not selected. Without a report of the run, what it skipped by name
    // is still selected (it was asked for), and a test never reached is `NotRun`.
    let mut tests = Vec::new();
    let mut not_selected = 0;
    let mut seen = BTreeSet::new();
    // The run's report names every test that failed in a profile. A test that failed and is
    // named in none was selected by its features alone, in no profile (suite v1.4.0-rc.2 runs
    // UDPRoute at 1.19, whose profiles have no UDP one): neither report counts it, so it is not
    // compared, but its failure is said.
    let here_failed: Option<BTreeSet<String>> = here.map(|r| r.profiles.iter().flat_map(|p| named(p, |s| &s.failed_tests)).collect());
    let mut outside = Vec::new();
    for (test, outcome) in &results.tests {
        seen.insert(test.clone());
        let here = match (outcome, skip_why.get(test.as_str())) {
            (Outcome::Fail, _) if here_failed.as_ref().is_some_and(|f| !f.contains(test)) => {
                not_selected += 1;
                outside.push(format!(
                    "{test}: FAILED here, in no profile of the run's report (selected by its features alone; not counted in the published report either): not compared"
                ));
                continue;
            }
            (Outcome::Pass, _) => Here::Passed,
            (Outcome::Fail, _) => Here::Failed,
            (Outcome::Skip, Some(why)) => Here::Skipped(why.to_string()),
            (Outcome::Skip, None) => {
                not_selected += 1;
                continue;
            }
        };
        tests.push(row(test, here, &there_failed, &there_skipped, run.traffic.contains_key(test)));
    }
    if here.is_none() {
        // The suite stopped before its tests (its setup failed): nothing here passed.
        for s in skips.iter().filter(|s| s.counted_there) {
            if !seen.contains(&s.test) {
                tests.push(row(&s.test, Here::Skipped(s.why.clone()), &there_failed, &there_skipped, run.traffic.contains_key(&s.test)));
            }
        }
    }
    tests.sort_by(|a, b| (a.kind, &a.test).cmp(&(b.kind, &b.test)));
    for t in &tests {
        match (&t.kind, &t.here) {
            (Kind::PassedThereOnly, Here::Skipped(why)) => findings.push(format!("{}: passed there only: skipped here: {why}", t.test)),
            (Kind::PassedThereOnly, Here::Failed) if t.sends_traffic => findings.push(format!(
                "{}: passed there only: FAILED here through Cilium's agent: {}",
                t.test,
                super::findings::traffic(run.version, &t.test, run.features, run.l4_stand_in).unwrap_or(super::findings::UNEXPLAINED)
            )),
            (Kind::PassedThereOnly, Here::Failed) => findings.push(format!("{}: passed there only: FAILED here (see suite.log)", t.test)),
            (Kind::PassedThereOnly, Here::NotRun) => findings.push(format!("{}: passed there only: not run here", t.test)),
            (Kind::PassedHereOnly, _) => {
                findings.push(format!("{}: passed here only: the published report names it {:?}", t.test, t.there))
            }
            _ => {}
        }
    }

    findings.extend(outside);

    // Per profile: the counts, and whether the suite selected the same tests on both sides.
    let mut names: Vec<String> = there.profiles.iter().map(|p| p.name.clone()).collect();
    for p in here.map(|r| r.profiles.as_slice()).unwrap_or_default() {
        if !names.contains(&p.name) {
            names.push(p.name.clone());
        }
    }
    let mut profiles = Vec::new();
    for name in names {
        let h = here.and_then(|r| r.profiles.iter().find(|p| p.name == name));
        let t = there.profiles.iter().find(|p| p.name == name);
        if let (Some(h), Some(t)) = (h, t) {
            let (hs, ts) = (both(h), both(t));
            if hs.total() != ts.total() {
                findings.push(format!(
                    "{name}: the suite selected {} tests here and {} there (another suite version or other supported features: {} here, {} there)",
                    hs.total(),
                    ts.total(),
                    here.map(|r| r.gateway_api_version.as_str()).unwrap_or("?"),
                    there.gateway_api_version
                ));
            }
            for (what, pick) in [
                ("supported", (|s: &super::results::Status| &s.supported_features) as fn(&super::results::Status) -> &Vec<String>),
                ("unsupported", |s: &super::results::Status| &s.unsupported_features),
            ] {
                let (a, b) = (named(h, pick), named(t, pick));
                let only_here: Vec<&String> = a.difference(&b).collect();
                let only_there: Vec<&String> = b.difference(&a).collect();
                if !only_here.is_empty() || !only_there.is_empty() {
                    findings.push(format!(
                        "{name}: {what} features differ: only here {only_here:?}, only there {only_there:?} (the GatewayClass status Cilium writes at this pin, or the suite version)"
                    ));
                }
            }
        } else if here.is_some() {
            findings.push(format!("{name}: profile {} only", if h.is_some() { "run here" } else { "in the published report" }));
        }
        profiles.push(ProfileRow { profile: name, here: h.map(both), there: t.map(both) });
    }
    Comparison { published: published.0.to_string(), published_source: published.1, profiles, tests, not_selected, findings }
}

fn row(test: &str, here: Here, failed: &BTreeSet<String>, skipped: &BTreeSet<String>, sends_traffic: bool) -> TestRow {
    let there = if failed.contains(test) {
        There::Failed
    } else if skipped.contains(test) {
        There::Skipped
    } else {
        There::Passed
    };
    let kind = match (here == Here::Passed, there == There::Passed) {
        (true, true) => Kind::PassedOnBoth,
        (true, false) => Kind::PassedHereOnly,
        (false, true) => Kind::PassedThereOnly,
        (false, false) => Kind::PassedOnNeither,
    };
    TestRow { test: test.to_string(), here, there, kind, sends_traffic }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(profile: &str, passed: u32, skipped: u32, supported: &[&str]) -> Report {
        report_failed(profile, passed, 0, skipped, supported)
    }

    fn report_failed(profile: &str, passed: u32, failed: u32, skipped: u32, supported: &[&str]) -> Report {
        let yaml = format!(
            "gatewayAPIVersion: v1.4.0\nprofiles:\n- name: {profile}\n  core:\n    result: success\n    statistics:\n      Passed: {passed}\n      Failed: {failed}\n      Skipped: {skipped}\n  extended:\n    result: success\n    statistics:\n      Passed: 0\n      Failed: 0\n      Skipped: 0\n    supportedFeatures: [{}]\n",
            supported.join(", ")
        );
        Report::parse(&yaml, "test").unwrap()
    }

    static NO_TRAFFIC: std::sync::LazyLock<BTreeMap<String, String>> = std::sync::LazyLock::new(BTreeMap::new);
    static NO_FEATURES: std::sync::LazyLock<BTreeMap<String, Vec<String>>> = std::sync::LazyLock::new(BTreeMap::new);
    static V119: std::sync::LazyLock<CiliumVersion> = std::sync::LazyLock::new(|| CiliumVersion::parse("1.19.6").unwrap());

    fn run<'a>(report: Option<&'a Report>, results: &'a Results, skips: &'a [Skip]) -> Run<'a> {
        Run { report, results, skips, traffic: &NO_TRAFFIC, version: &V119, features: &NO_FEATURES, l4_stand_in: false }
    }

    fn results(tests: &[(&str, Outcome)]) -> Results {
        Results { tests: tests.iter().map(|(t, o)| (t.to_string(), *o)).collect(), whole: Some(Outcome::Pass), setup_errors: vec![] }
    }

    #[test]
    fn each_selected_test_falls_in_one_kind_and_every_difference_is_a_finding() {
        let skips = vec![
            Skip { test: "HTTPRouteSimple".into(), why: "needs the data plane: issue #39 item 3".into(), counted_there: true },
            Skip { test: "BackendTLSPolicyObservedGenerationBump".into(), why: "exempt".into(), counted_there: false },
        ];
        let r = results(&[
            ("GatewayModifyListeners", Outcome::Pass),
            ("HTTPRouteSimple", Outcome::Skip),
            ("GatewayObservedGenerationBump", Outcome::Fail),
            ("UDPRoute", Outcome::Skip),
            ("BackendTLSPolicyObservedGenerationBump", Outcome::Skip),
        ]);
        let mut here = report_failed("GATEWAY-HTTP", 1, 1, 1, &["GatewayPort8080"]);
        here.profiles[0].core.failed_tests = vec!["GatewayObservedGenerationBump".into()];
        let there = report("GATEWAY-HTTP", 3, 0, &["GatewayPort8080"]);
        let c = compare(&run(Some(&here), &r, &skips), &there, ("there.yaml", "src".into()));
        let kinds: Vec<(&str, Kind)> = c.tests.iter().map(|t| (t.test.as_str(), t.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("GatewayModifyListeners", Kind::PassedOnBoth),
                ("GatewayObservedGenerationBump", Kind::PassedThereOnly),
                ("HTTPRouteSimple", Kind::PassedThereOnly),
            ]
        );
        assert_eq!(c.not_selected, 2, "UDPRoute was skipped by the suite itself, the exempt test is not counted there");
        assert_eq!(c.findings.len(), 2, "{:?}", c.findings);
        assert!(c.findings[0].contains("GatewayObservedGenerationBump: passed there only: FAILED here"), "{:?}", c.findings);
        assert!(c.findings[1].contains("HTTPRouteSimple: passed there only: skipped here: needs the data plane"), "{:?}", c.findings);
    }

    /// Suite v1.4.0-rc.2 runs UDPRoute at 1.19 by its features, in no profile: its failure is
    /// said, and it is not compared as "passed there" (the published report has no UDP profile).
    #[test]
    fn a_failure_in_no_profile_of_the_run_is_said_and_not_compared() {
        let mut here = report_failed("GATEWAY-HTTP", 1, 1, 0, &[]);
        here.profiles[0].core.failed_tests = vec!["HTTPRouteWeight".into()];
        let there = report("GATEWAY-HTTP", 2, 0, &[]);
        let r = results(&[("GatewayModifyListeners", Outcome::Pass), ("HTTPRouteWeight", Outcome::Fail), ("UDPRoute", Outcome::Fail)]);
        let c = compare(&run(Some(&here), &r, &[]), &there, ("t", "s".into()));
        assert_eq!(c.tests.iter().map(|t| t.test.as_str()).collect::<Vec<_>>(), ["GatewayModifyListeners", "HTTPRouteWeight"]);
        assert_eq!(c.not_selected, 1);
        assert!(c.findings.iter().any(|f| f.starts_with("UDPRoute: FAILED here, in no profile")), "{:?}", c.findings);
        assert!(c.findings.iter().any(|f| f.starts_with("HTTPRouteWeight: passed there only: FAILED here")), "{:?}", c.findings);
    }

    #[test]
    fn another_selection_or_other_features_are_findings() {
        let here = report("GATEWAY-HTTP", 2, 0, &["GatewayPort8080", "ListenerSet"]);
        let there = report("GATEWAY-HTTP", 3, 0, &["GatewayPort8080"]);
        let c = compare(&run(Some(&here), &results(&[]), &[]), &there, ("there.yaml", "src".into()));
        assert!(
            c.findings.iter().any(|f| f.contains("selected 2 tests here and 3 there") && f.contains("v1.4.0 here, v1.4.0 there")),
            "{:?}",
            c.findings
        );
        assert!(c.findings.iter().any(|f| f.contains("supported features differ: only here [\"ListenerSet\"]")), "{:?}", c.findings);
        assert_eq!(c.profiles[0].here.map(|s| s.total()), Some(2));
    }

    #[test]
    fn a_test_the_published_report_names_failed_is_not_passed_there() {
        let mut there = report("GATEWAY-HTTP", 1, 0, &[]);
        there.profiles[0].core.failed_tests = vec!["GatewayModifyListeners".into()];
        let c = compare(&run(None, &results(&[("GatewayModifyListeners", Outcome::Pass)]), &[]), &there, ("t", "s".into()));
        assert_eq!(c.tests[0].kind, Kind::PassedHereOnly);
        assert!(c.findings[0].contains("passed here only: the published report names it Failed"), "{:?}", c.findings);
    }

    #[test]
    fn each_line_is_compared_with_its_own_release() {
        let v = |s: &str| CiliumVersion::parse(s).unwrap();
        assert_eq!(published_for(&v("1.19.7")).unwrap().0, "v1.4.0-experimental-v1.19.0-pre.2-default-report.yaml");
        assert_eq!(published_for(&v("1.20.2")).unwrap().0, "v1.6-experimental-v1.20.0-default-report.yaml");
        assert!(published_for(&v("1.18.3")).is_none());
    }
}
