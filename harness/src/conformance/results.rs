//! What the suite said, read back: each test's result from `go test -v` output (the report
//! counts per profile but names no passed test), and its own ConformanceReport YAML.

use std::collections::BTreeMap;

/// A test's result as `go test -v` prints it (`--- PASS: TestConformance/<name> (1.2s)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

/// The results of one run: each test directly under `TestConformance` (its own subtests are
/// the test's business), the whole test's result, and the lines saying why it failed when it
/// failed outside any test (the suite's setup).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Results {
    pub tests: BTreeMap<String, Outcome>,
    pub whole: Option<Outcome>,
    /// `Error Trace`/`Error:`/`Messages:` lines testify printed outside any test.
    pub setup_errors: Vec<String>,
}

/// Reads `go test -v` output.
pub fn parse(log: &str) -> Results {
    let mut r = Results::default();
    let mut in_test = false;
    for line in log.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("=== RUN   TestConformance/") {
            in_test = !rest.is_empty();
            continue;
        }
        for (word, outcome) in [("--- PASS: ", Outcome::Pass), ("--- FAIL: ", Outcome::Fail), ("--- SKIP: ", Outcome::Skip)] {
            let Some(rest) = t.strip_prefix(word) else { continue };
            let name = rest.split(' ').next().unwrap_or_default();
            if name == "TestConformance" {
                r.whole = Some(outcome);
            } else if let Some(test) = name.strip_prefix("TestConformance/")
                && !test.contains('/')
            {
                r.tests.insert(test.to_string(), outcome);
                in_test = false;
            }
        }
        if !in_test && (t.starts_with("Error:") || t.starts_with("Messages:") || t.contains("error waiting for")) {
            r.setup_errors.push(t.to_string());
        }
    }
    r
}

/// A ConformanceReport (`sigs.k8s.io/gateway-api/conformance/apis/v1`), the fields compared.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    #[serde(default, rename = "gatewayAPIVersion")]
    pub gateway_api_version: String,
    #[serde(default, rename = "gatewayAPIChannel")]
    pub gateway_api_channel: String,
    #[serde(default)]
    pub implementation: Implementation,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub profiles: Vec<Profile>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub succeeded_provisional_tests: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Implementation {
    #[serde(default)]
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Profile {
    pub name: String,
    pub core: Status,
    #[serde(default)]
    pub extended: Option<Status>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(default)]
    pub result: String,
    pub statistics: Statistics,
    #[serde(default)]
    pub skipped_tests: Vec<String>,
    #[serde(default)]
    pub failed_tests: Vec<String>,
    #[serde(default)]
    pub supported_features: Vec<String>,
    #[serde(default)]
    pub unsupported_features: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Statistics {
    #[serde(rename = "Passed", default)]
    pub passed: u32,
    #[serde(rename = "Failed", default)]
    pub failed: u32,
    #[serde(rename = "Skipped", default)]
    pub skipped: u32,
}

/// A list the suite may write as `null` (v1.6.2 writes `profiles: null` when its setup failed).
fn null_as_empty<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    <Option<Vec<T>> as serde::Deserialize>::deserialize(d).map(Option::unwrap_or_default)
}

impl Statistics {
    pub fn total(&self) -> u32 {
        self.passed + self.failed + self.skipped
    }
}

impl Report {
    pub fn parse(text: &str, what: &str) -> Result<Report, String> {
        serde_saphyr::from_str(text).map_err(|e| format!("{what}: not a ConformanceReport: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "=== RUN   TestConformance
    conformance.go:127: Running conformance tests with:
=== RUN   TestConformance/GatewayClassObservedGenerationBump
=== RUN   TestConformance/GatewayClassObservedGenerationBump/observedGeneration_should_increment
--- PASS: TestConformance (30.01s)
    --- PASS: TestConformance/GatewayClassObservedGenerationBump (1.02s)
        --- PASS: TestConformance/GatewayClassObservedGenerationBump/observedGeneration_should_increment (1.00s)
    --- SKIP: TestConformance/HTTPRouteSimpleSameNamespace (0.00s)
    --- FAIL: TestConformance/GatewayModifyListeners (60.00s)
";

    #[test]
    fn each_test_under_test_conformance_is_read_once_and_its_subtests_are_not() {
        let r = parse(LOG);
        assert_eq!(r.whole, Some(Outcome::Pass));
        assert_eq!(
            r.tests.into_iter().collect::<Vec<_>>(),
            [
                ("GatewayClassObservedGenerationBump".to_string(), Outcome::Pass),
                ("GatewayModifyListeners".to_string(), Outcome::Fail),
                ("HTTPRouteSimpleSameNamespace".to_string(), Outcome::Skip),
            ]
        );
    }

    #[test]
    fn a_setup_that_failed_is_said_by_its_error_lines() {
        let log = "=== RUN   TestConformance
    helpers.go:312:
        \tError Trace:\t/x/helpers.go:312
        \tError:      \tReceived unexpected error:
        \t            \tcontext deadline exceeded
        \tMessages:   \terror waiting for gateway-conformance-infra, gateway-conformance-app-backend namespaces to be ready
--- FAIL: TestConformance (300.00s)
";
        let r = parse(log);
        assert_eq!(r.whole, Some(Outcome::Fail));
        assert!(r.tests.is_empty());
        assert!(r.setup_errors.iter().any(|l| l.contains("namespaces to be ready")), "{:?}", r.setup_errors);
    }

    #[test]
    fn a_report_whose_setup_failed_has_no_profiles() {
        let r = Report::parse("gatewayAPIVersion: v1.6.1\nkind: ConformanceReport\nmode: default\nprofiles: null\n", "r").unwrap();
        assert!(r.profiles.is_empty());
    }

    #[test]
    fn the_published_reports_are_read() {
        for (name, text) in super::super::compare::PUBLISHED {
            let r = Report::parse(text, name).unwrap();
            assert!(!r.profiles.is_empty() && r.gateway_api_version.starts_with("v1."), "{name}: {r:?}");
            assert!(r.profiles.iter().all(|p| p.core.statistics.failed == 0 && p.core.statistics.skipped == 0), "{name}");
        }
    }
}
