//! What the run passes to the suite besides the flags Cilium's workflow uses: the tests it skips
//! (`--skip-tests`, each named here with why, so the report stays fair) and the profiles.
//!
//! Three reasons, nothing else:
//!
//! * **Cilium skips it** at the tag: its conformance-profile job
//!   (`.github/workflows/conformance-gateway-api.yaml`) or its conformance test
//!   (`operator/pkg/gateway-api/conformance_test.go`). Each is checked against the tag's file
//!   before the run ([`check_cilium_skips`]): a skip the tag no longer names is refused.
//! * **It needs addresses the suite takes only from code** (`GatewayStaticAddresses`).
//! * **It needs the data plane**: its source sends requests (it imports one of the suite's
//!   traffic clients or a network client library), which the lane cannot answer yet (issue #39
//!   item 3). Read from the suite's own `tests/*.go` ([`traffic_tests`]), never listed by hand.

use std::collections::BTreeMap;
use std::path::Path;

use crate::case::CiliumVersion;

/// The reason given for every test that needs the data plane.
pub const NEEDS_DATA_PLANE: &str = "needs the data plane: issue #39 item 3";

/// The workflow and the test file Cilium skips tests in, at each tag.
pub const WORKFLOW: &str = ".github/workflows/conformance-gateway-api.yaml";
pub const CILIUM_TEST: &str = "operator/pkg/gateway-api/conformance_test.go";

/// One test skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skip {
    pub test: String,
    pub why: String,
    /// Whether Cilium's published report counts the test (false: a feature Cilium's
    /// GatewayClass status exempts, which the published report lists as unsupported).
    pub counted_there: bool,
}

/// The file Cilium's operator lists the features it exempts from its GatewayClass status in.
pub const CILIUM_GATEWAYCLASS: &str = "operator/pkg/gateway-api/gatewayclass_status.go";

/// One test Cilium skips at a tag: the test, the file at the tag that shows it, the word that
/// file must hold, why, and whether the published report counts it.
pub type CiliumSkip = (&'static str, &'static str, &'static str, &'static str, bool);

/// The tests Cilium itself skips at `version`.
pub fn cilium_skips(version: &CiliumVersion) -> Vec<CiliumSkip> {
    let job = "Cilium's conformance-profile job skips it (--skip-tests)";
    let mut v = vec![
        ("MeshConsumerRoute", WORKFLOW, "MeshConsumerRoute", job, true),
        ("HTTPRouteListenerPortMatching", WORKFLOW, "HTTPRouteListenerPortMatching", job, true),
    ];
    if version.parts().1 == 19 {
        // The 1.19 line's test skips both until they are deflaked upstream (its comment: GH-42456).
        let flaky = "Cilium's conformance test skips it until it is deflaked upstream";
        v.push(("MeshGRPCRouteWeight", CILIUM_TEST, "MeshGRPCRouteWeight", flaky, true));
        v.push(("MeshHTTPRouteMatching", CILIUM_TEST, "MeshHTTPRouteMatching", flaky, true));
        // Suite v1.4.0-rc.2's --all-features makes every feature supported and ignores exempt
        // ones (utils/suite/suite.go: NewConformanceTestSuite), so it selects this status test
        // of a feature the 1.19 operator exempts; it writes no BackendTLSPolicy status, and the
        // published report lists BackendTLSPolicy as neither supported nor counted.
        v.push((
            "BackendTLSPolicyObservedGenerationBump",
            CILIUM_GATEWAYCLASS,
            "features.BackendTLSPolicyFeature,",
            "Cilium 1.19 exempts BackendTLSPolicy from its GatewayClass status (exemptFeatures) and writes no BackendTLSPolicy status; suite v1.4.0-rc.2's --all-features selects the test anyway (it ignores exempt features), where the published report does not count it",
            false,
        ));
    }
    v
}

/// Every test of [`cilium_skips`] must be named in its file at the tag (`cilium_dir`).
pub fn check_cilium_skips(version: &CiliumVersion, cilium_dir: &Path) -> Result<Vec<Skip>, String> {
    let mut files: BTreeMap<&str, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (test, file, needle, why, counted_there) in cilium_skips(version) {
        if !files.contains_key(file) {
            let text = crate::input::read_text(&cilium_dir.join(file), crate::input::DOCUMENT).map_err(|e| e.to_string())?;
            files.insert(file, text);
        }
        if !files[file].contains(needle) {
            return Err(format!(
                "cilium@v{version}:{file} does not name {needle}: the skips layout-gate takes from Cilium (conformance/skips.rs) no longer match the tag"
            ));
        }
        out.push(Skip { test: test.into(), why: format!("{why} (cilium@v{version}:{file})"), counted_there });
    }
    Ok(out)
}

/// The profiles Cilium's conformance-profile job runs at the tag: its `--conformance-profiles`.
pub fn profiles(workflow: &str) -> Option<Vec<String>> {
    let at = workflow.find("--conformance-profiles ")? + "--conformance-profiles ".len();
    let list: String = workflow[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == ',').collect();
    let v: Vec<String> = list.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
    (!v.is_empty()).then_some(v)
}

/// The imports that make a test a traffic test: the suite's own clients for requests to a
/// Gateway or a mesh service, and the network client libraries a test could dial with itself.
const TRAFFIC_IMPORTS: &[&str] = &[
    "\"sigs.k8s.io/gateway-api/conformance/utils/http\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/grpc\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/tls\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/tcp\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/udp\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/echo\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/roundtripper\"",
    "\"sigs.k8s.io/gateway-api/conformance/utils/weight\"",
    "\"github.com/miekg/dns\"",
    "\"google.golang.org/grpc\"",
    "\"golang.org/x/net/websocket\"",
    "\"net/http\"",
    "\"net\"",
];

/// One test source file: the `ShortName`s it declares, and the first traffic import it has.
pub fn classify(source: &str) -> (Vec<String>, Option<&'static str>) {
    let names = source
        .split("ShortName:")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.trim_start().strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect();
    let traffic = TRAFFIC_IMPORTS.iter().copied().find(|i| source.contains(i));
    (names, traffic)
}

/// The tests of the suite at `suite_dir` whose source sends traffic, each with its file and the
/// import that shows it; and how many tests the suite declares in all.
pub fn traffic_tests(suite_dir: &Path) -> Result<(BTreeMap<String, String>, usize), String> {
    let dir = suite_dir.join("tests");
    // The tests' folder and its subfolders (the mesh tests are in tests/mesh/).
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut folders = vec![dir.clone()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e} (the suite's tests)", folder.display()))?;
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if p.is_dir() {
                folders.push(p);
            } else if p.extension().is_some_and(|x| x == "go") && !p.to_string_lossy().ends_with("_test.go") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut traffic = BTreeMap::new();
    let mut all = 0;
    for f in files {
        let text = crate::input::read_text(&f, crate::input::CASE_FILE).map_err(|e| e.to_string())?;
        let (names, import) = classify(&text);
        all += names.len();
        if let Some(import) = import {
            let file = f.strip_prefix(&dir).unwrap_or(&f).display().to_string();
            for n in names {
                traffic.insert(n, format!("{file} imports {import}"));
            }
        }
    }
    if all == 0 {
        return Err(format!("{}: no test declares a ShortName: not the conformance suite's tests", dir.display()));
    }
    Ok((traffic, all))
}

/// The test that needs a pool of usable and unusable addresses, which the suite takes only from
/// code: Cilium's conformance test reads them from `GATEWAY_API_CONFORMANCE_USABLE_NETWORK_ADDRESSES`
/// and `..._UNUSABLE_...` (its kind network's LB range) and skips it without them; upstream's
/// `RunConformance`, which the suite binary runs, has no flag for them.
pub const STATIC_ADDRESSES: (&str, &str) = (
    "GatewayStaticAddresses",
    "needs usable and unusable Gateway addresses, which the suite takes only from code (Cilium's conformance_test.go reads them from GATEWAY_API_CONFORMANCE_USABLE_NETWORK_ADDRESSES and skips the test without them; upstream's RunConformance has no flag for them)",
);

/// Every skip for a run, each test once, in order: Cilium's, the addresses test, then the
/// traffic tests (a test Cilium skips keeps Cilium's reason).
pub fn all(cilium: Vec<Skip>, traffic: &BTreeMap<String, String>) -> Vec<Skip> {
    let mut out = cilium;
    let mut add = |test: &str, why: String| {
        if !out.iter().any(|s| s.test == test) {
            out.push(Skip { test: test.to_string(), why, counted_there: true });
        }
    };
    add(STATIC_ADDRESSES.0, STATIC_ADDRESSES.1.to_string());
    for (test, shown_by) in traffic {
        add(test, format!("{NEEDS_DATA_PLANE} ({shown_by})"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_file_is_traffic_when_it_imports_a_client_and_its_names_are_read() {
        let status = "import (\n\t\"sigs.k8s.io/gateway-api/conformance/utils/kubernetes\"\n)\nvar X = suite.ConformanceTest{\n\tShortName: \"GatewayModifyListeners\",\n}";
        assert_eq!(classify(status), (vec!["GatewayModifyListeners".to_string()], None));
        let traffic = "import (\n\t\"sigs.k8s.io/gateway-api/conformance/utils/http\"\n)\nvar A = T{ShortName: \"HTTPRouteA\"}\nvar B = T{ShortName:   \"HTTPRouteB\"}";
        let (names, import) = classify(traffic);
        assert_eq!(names, ["HTTPRouteA", "HTTPRouteB"]);
        assert_eq!(import, Some("\"sigs.k8s.io/gateway-api/conformance/utils/http\""));
        let dns = "import (\n\t\"github.com/miekg/dns\"\n)\nvar U = T{ShortName: \"UDPRoute\"}";
        assert_eq!(classify(dns).1, Some("\"github.com/miekg/dns\""));
    }

    #[test]
    fn the_tests_of_subfolders_are_read_too() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("tests/mesh")).unwrap();
        std::fs::write(tmp.path().join("tests/a.go"), "var A = T{ShortName: \"GatewayA\"}").unwrap();
        std::fs::write(
            tmp.path().join("tests/mesh/b.go"),
            "import \"sigs.k8s.io/gateway-api/conformance/utils/echo\"\nvar B = T{ShortName: \"MeshB\"}",
        )
        .unwrap();
        let (traffic, all) = traffic_tests(tmp.path()).unwrap();
        assert_eq!(all, 2);
        assert_eq!(traffic.keys().collect::<Vec<_>>(), ["MeshB"]);
        assert!(traffic["MeshB"].starts_with("mesh/b.go imports"), "{traffic:?}");
    }

    #[test]
    fn the_profiles_are_read_from_the_workflows_flags() {
        let wf = r#"GATEWAY_TEST_FLAGS="$GATEWAY_TEST_FLAGS --skip-tests \"x\" --conformance-profiles GATEWAY-HTTP,GATEWAY-TLS,MESH-GRPC --organization cilium""#;
        assert_eq!(profiles(wf).unwrap(), ["GATEWAY-HTTP", "GATEWAY-TLS", "MESH-GRPC"]);
        assert_eq!(profiles("no flags here"), None);
    }

    #[test]
    fn cilium_skips_are_per_line_and_a_skip_the_tag_does_not_name_is_refused() {
        let v119 = CiliumVersion::parse("1.19.6").unwrap();
        let v120 = CiliumVersion::parse("1.20.2").unwrap();
        let names = |v: &CiliumVersion| cilium_skips(v).into_iter().map(|(t, ..)| t).collect::<Vec<_>>();
        assert_eq!(
            names(&v119),
            [
                "MeshConsumerRoute",
                "HTTPRouteListenerPortMatching",
                "MeshGRPCRouteWeight",
                "MeshHTTPRouteMatching",
                "BackendTLSPolicyObservedGenerationBump"
            ]
        );
        assert_eq!(names(&v120), ["MeshConsumerRoute", "HTTPRouteListenerPortMatching"]);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/workflows")).unwrap();
        std::fs::write(tmp.path().join(WORKFLOW), "SKIPPED_TESTS=\",MeshConsumerRoute,HTTPRouteListenerPortMatching\"").unwrap();
        let skips = check_cilium_skips(&v120, tmp.path()).unwrap();
        assert_eq!(skips.len(), 2);
        assert!(skips[0].why.contains("cilium@v1.20.2:.github/workflows/conformance-gateway-api.yaml"), "{skips:?}");
        std::fs::write(tmp.path().join(WORKFLOW), "SKIPPED_TESTS=\",MeshConsumerRoute\"").unwrap();
        let e = check_cilium_skips(&v120, tmp.path()).unwrap_err();
        assert!(e.contains("does not name HTTPRouteListenerPortMatching"), "{e}");
    }

    #[test]
    fn every_test_is_skipped_once_with_the_first_reason() {
        let cilium = vec![Skip { test: "MeshConsumerRoute".into(), why: "Cilium".into(), counted_there: true }];
        let traffic = BTreeMap::from([
            ("MeshConsumerRoute".to_string(), "m.go imports echo".to_string()),
            ("HTTPRouteSimpleSameNamespace".to_string(), "h.go imports http".to_string()),
        ]);
        let all = all(cilium, &traffic);
        let tests: Vec<&str> = all.iter().map(|s| s.test.as_str()).collect();
        assert_eq!(tests, ["MeshConsumerRoute", "GatewayStaticAddresses", "HTTPRouteSimpleSameNamespace"]);
        assert_eq!(all[0].why, "Cilium");
        assert_eq!(all[2].why, "needs the data plane: issue #39 item 3 (h.go imports http)");
    }
}
