//! `junit.xml`: one testsuite per case, one testcase per verdict, for CI test tabs. Written
//! with quick-junit (nextest's JUnit writer), which escapes, counts and orders attributes the
//! way Jenkins, GitLab and GitHub's reporters read them.
//!
//! What CI history keys on stays stable across runs and edits: a testcase is named
//! `<aspect> <subject>` (`probe 443 api.example.test`, `listener https Conflicted`) and its
//! classname is `<lane>/cilium-<version with _ for .>/<case>` (Jenkins splits classnames on
//! dots into packages). Provenance, expected and observed are properties and failure text, so
//! editing a note or a reference never renames a test.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{CaseEvidence, Evidence};
use crate::judge::{Aspect, Verdict};

/// One run's `junit.xml`; `folder` is where its evidence is, named in every suite's
/// system-out. The hostname is this machine's: a run's files are written where it ran.
pub fn render_junit(ev: &Evidence, folder: &Path) -> String {
    let folder = folder.display().to_string();
    junit_of(&[(ev, folder.as_str())], &this_hostname())
}

/// One JUnit document for several runs (`report --junit`): every run's suites, each naming its
/// evidence folder. Evidence does not record the host a run ran on, so `hostname` says what
/// is known (the caller's choice, e.g. `unknown`).
pub fn junit_of(runs: &[(&Evidence, &str)], hostname: &str) -> String {
    let mut report = Report::new(match runs {
        [(ev, _)] => format!("layout-gate {}", column_words(ev)),
        _ => format!("layout-gate: {} runs", runs.len()),
    });
    if let Some(ts) = runs.iter().filter_map(|(ev, _)| parse_time(&ev.started_at)).min() {
        report.set_timestamp(ts);
    }
    let total_ms: u64 = runs.iter().map(|(ev, _)| run_ms(ev)).sum();
    report.set_time(Duration::from_millis(total_ms));
    for (ev, folder) in runs {
        for case in &ev.cases {
            report.add_test_suite(suite(ev, case, folder, hostname));
        }
        // A case that was not run is an error, never a pass or a skip: CI must not go green on it.
        for nr in &ev.not_run {
            report.add_test_suite(not_run_suite(ev, &nr.name, &nr.reason, folder, hostname));
        }
    }
    report.to_string().unwrap_or_else(|e| {
        // quick-junit writes into a Vec; it fails only on invalid UTF-8, which our strings are not.
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- junit.xml could not be written: {} -->\n<testsuites/>\n", e)
    })
}

fn column_words(ev: &Evidence) -> String {
    match &ev.cilium {
        Some(c) => format!("{} lane, Cilium {}", ev.lane.as_str(), c.version),
        None => format!("{} lane (no Cilium)", ev.lane.as_str()),
    }
}

/// `model/cilium-1_19_5/dns01-default`: no dots, so Jenkins keeps it one class.
pub fn classname(ev: &Evidence, case: &str) -> String {
    let version = match &ev.cilium {
        Some(c) => format!("cilium-{}", c.version),
        None => "no-cilium".into(),
    };
    format!("{}/{}/{}", ev.lane.as_str(), version, case).replace('.', "_")
}

/// `<aspect> <subject>`; subjects of conditions and Envoy facts already begin with their aspect.
pub fn testcase_name(v: &Verdict) -> String {
    let aspect = aspect_word(v.aspect);
    if v.subject.split(' ').next().is_some_and(|w| w.eq_ignore_ascii_case(aspect)) {
        v.subject.clone()
    } else {
        format!("{aspect} {}", v.subject)
    }
}

fn aspect_word(a: Aspect) -> &'static str {
    match a {
        Aspect::Gateway => "gateway",
        Aspect::Listener => "listener",
        Aspect::Route => "route",
        Aspect::Probe => "probe",
        Aspect::Envoy => "envoy",
        Aspect::Admission => "admission",
    }
}

fn suite(ev: &Evidence, case: &CaseEvidence, folder: &str, hostname: &str) -> TestSuite {
    let version = ev.cilium.as_ref().map_or("no Cilium", |c| c.version.as_str());
    let mut suite = TestSuite::new(format!("{} {version} {}", ev.lane.as_str(), case.name));
    let started = case_start(ev, case);
    match parse_time(started) {
        Some(ts) => {
            suite.set_timestamp(ts);
        }
        // Evidence is input: an unparsable time is shown as recorded rather than invented.
        None => {
            suite.extra.insert("timestamp".into(), started.into());
        }
    }
    suite.set_time(Duration::from_millis(case.duration_ms));
    suite.extra.insert("hostname".into(), hostname.into());
    suite.add_properties([
        Property::new("lane", ev.lane.as_str()),
        Property::new("cilium", version),
        Property::new("run_id", ev.run_id.as_str()),
        Property::new("case_hash", case.hash.as_str()),
        Property::new("expectations_from", case.ranges.join("; ")),
    ]);
    suite.set_system_out(format!(
        "evidence folder: {folder}\nevidence.json and summary.md there hold every observation of case {} ({}).\n",
        case.name,
        ev.lane.banner()
    ));
    let class = classname(ev, &case.name);
    if let Some(e) = &case.error {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status.set_message(first_line(e)).set_type("not-judged").set_description(e.as_str());
        let mut tc = TestCase::new(format!("run {}", case.name), status);
        tc.set_classname(class.as_str()).set_time(Duration::ZERO);
        suite.add_test_case(tc);
    } else if case.verdicts.is_empty() {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status.set_message("the case checked nothing").set_type("no-checks");
        let mut tc = TestCase::new(format!("run {}", case.name), status);
        tc.set_classname(class.as_str()).set_time(Duration::ZERO);
        suite.add_test_case(tc);
    }
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for v in &case.verdicts {
        let mut name = testcase_name(v);
        // Two verdicts on one subject would be one test in CI history; number the repeats.
        let n = seen.entry(name.clone()).or_default();
        *n += 1;
        if *n > 1 {
            name = format!("{name} #{n}");
        }
        let status = if v.passed() {
            TestCaseStatus::success()
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let ty = if v.contradicts_inference() { "inferred-expectation-contradicted" } else { "expectation-failed" };
            s.set_message(first_line(&v.detail)).set_type(ty).set_description(format!(
                "{}\nexpected: {}\nobserved: {}\nprovenance: {}",
                v.detail.trim_end(),
                v.expected,
                v.observed,
                v.provenance
            ));
            s
        };
        let mut tc = TestCase::new(name, status);
        tc.set_classname(class.as_str()).set_time(verdict_time(case, v));
        tc.add_properties([
            Property::new("aspect", aspect_word(v.aspect)),
            Property::new("expected", v.expected.as_str()),
            Property::new("observed", v.observed.as_str()),
            Property::new("provenance", v.provenance.to_string()),
        ]);
        if let Some(note) = &v.provenance.note {
            tc.add_property(Property::new("provenance_note", note.as_str()));
        }
        suite.add_test_case(tc);
    }
    suite
}

/// The suite of a selected case the run never reached: one errored testcase saying why.
fn not_run_suite(ev: &Evidence, name: &str, reason: &str, folder: &str, hostname: &str) -> TestSuite {
    let version = ev.cilium.as_ref().map_or("no Cilium", |c| c.version.as_str());
    let mut suite = TestSuite::new(format!("{} {version} {name}", ev.lane.as_str()));
    if let Some(ts) = parse_time(&ev.started_at) {
        suite.set_timestamp(ts);
    }
    suite.set_time(Duration::ZERO);
    suite.extra.insert("hostname".into(), hostname.into());
    suite.add_properties([
        Property::new("lane", ev.lane.as_str()),
        Property::new("cilium", version),
        Property::new("run_id", ev.run_id.as_str()),
    ]);
    suite.set_system_out(format!("evidence folder: {folder}\ncase {name} was not run: {reason}\n"));
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(format!("not run: {}", first_line(reason))).set_type("not-run").set_description(reason);
    let mut tc = TestCase::new(format!("run {name}"), status);
    tc.set_classname(classname(ev, name).as_str()).set_time(Duration::ZERO);
    suite.add_test_case(tc);
    suite
}

/// A probe's time is the sum of its observations' handshakes and requests, as recorded;
/// conditions and the config dump are read once per case (their wait is in the suite's time),
/// so judging one of them takes no time of its own.
fn verdict_time(case: &CaseEvidence, v: &Verdict) -> Duration {
    if v.aspect != Aspect::Probe {
        return Duration::ZERO;
    }
    let ms: u64 = case
        .observed
        .probes
        .iter()
        .filter(|p| p.key.to_string() == v.subject)
        .flat_map(|p| &p.observations)
        .filter_map(|o| o.get("elapsed_ms").and_then(serde_json::Value::as_u64))
        .sum();
    Duration::from_millis(ms)
}

/// When the case started: its first phase (phases are named `<case>: <what>`), else the run's start.
fn case_start<'a>(ev: &'a Evidence, case: &CaseEvidence) -> &'a str {
    let prefix = format!("{}: ", case.name);
    ev.phases.iter().find(|p| p.name.starts_with(&prefix)).map_or(ev.started_at.as_str(), |p| p.started_at.as_str())
}

fn run_ms(ev: &Evidence) -> u64 {
    match (parse_time(&ev.started_at), parse_time(&ev.finished_at)) {
        (Some(a), Some(b)) if b >= a => (b - a).num_milliseconds().max(0) as u64,
        _ => ev.cases.iter().map(|c| c.duration_ms).sum(),
    }
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(s).ok()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// This machine's name, for `hostname`: the kernel's, else `uname -n`, else `unknown`.
pub fn this_hostname() -> String {
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            return h.to_string();
        }
    }
    duct::cmd!("uname", "-n")
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .read()
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn handwritten(run: &str) -> Evidence {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/report/handwritten").join(run).join("evidence.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn names_are_aspect_and_subject_and_classnames_have_no_dots() {
        let ev = handwritten("kind-fixture-1.19.7");
        let xml = render_junit(&ev, Path::new("evidence/kind-fixture-1.19.7"));
        assert!(
            xml.contains("<testcase name=\"probe 443 api.example.test\" classname=\"kind/cilium-1_19_7/dns01-default\" time=\""),
            "{xml}"
        );
        assert!(xml.contains("<testcase name=\"listener https Conflicted\""), "{xml}");
        // Provenance is a property, never part of the name.
        assert!(!xml.contains("name=\"probe 443 api.example.test ["), "{xml}");
        assert!(xml.contains("<property name=\"provenance\" value=\""), "{xml}");
        let failure = xml.find("<failure ").expect("kind 1.19.7 fails");
        let tag = &xml[failure..failure + xml[failure..].find('>').unwrap()];
        assert!(tag.contains(" message=\"") && tag.contains(" type=\""), "{tag}");
        let suite = xml.find("<testsuite ").unwrap();
        let suite = &xml[suite..suite + xml[suite..].find('>').unwrap()];
        assert!(suite.starts_with("<testsuite name=\"kind 1.19.7 dns01-default\""), "{suite}");
        for attr in ["tests", "failures", "errors", "skipped", "time", "timestamp", "hostname"] {
            assert!(suite.contains(&format!(" {attr}=\"")), "{attr} missing in {suite}");
        }
        assert!(xml.contains("evidence folder: evidence/kind-fixture-1.19.7"), "{xml}");
    }

    #[test]
    fn a_case_that_could_not_be_judged_is_an_error_with_a_type() {
        let mut ev = handwritten("kind-fixture-1.19.5");
        ev.cases[0].error = Some("Envoy refused to start: duplicate matcher\nmore".into());
        ev.cases[0].verdicts.clear();
        let xml = render_junit(&ev, Path::new("x"));
        assert!(xml.contains("<testcase name=\"run dns01-default\""), "{xml}");
        assert!(xml.contains("<error message=\"Envoy refused to start: duplicate matcher\" type=\"not-judged\">"), "{xml}");
        assert!(xml.contains("errors=\"1\""), "{xml}");
    }

    #[test]
    fn a_probe_takes_the_time_of_its_observations() {
        let ev = handwritten("kind-fixture-1.19.5");
        let case = &ev.cases[0];
        let v = case.verdicts.iter().find(|v| v.aspect == Aspect::Probe).unwrap();
        let recorded: u64 = case
            .observed
            .probes
            .iter()
            .filter(|p| p.key.to_string() == v.subject)
            .flat_map(|p| &p.observations)
            .filter_map(|o| o["elapsed_ms"].as_u64())
            .sum();
        assert_eq!(verdict_time(case, v), Duration::from_millis(recorded));
    }
}
