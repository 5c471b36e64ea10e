//! What the run passes to the suite besides the flags Cilium's workflow uses: the tests it skips
//! (`--skip-tests`, each named here with why, so the report stays fair) and the profiles.
//!
//! Four reasons, nothing else:
//!
//! * **Cilium skips it** at the tag: its conformance-profile job
//!   (`.github/workflows/conformance-gateway-api.yaml`) or its conformance test
//!   (`operator/pkg/gateway-api/conformance_test.go`). Each is checked against the tag's file
//!   before the run ([`check_cilium_skips`]): a skip the tag no longer names is refused.
//! * **Cilium's operator leaves its feature out** of its GatewayClass status at the tag
//!   (`exemptFeatures`, [`exempt_features`]), which is what Cilium's published report lists
//!   unsupported, where `--all-features` would select it: left out through the suite's own
//!   `--exempt-features` (suite v1.6), or, where the suite ignores that flag beside
//!   `--all-features` (v1.4.0-rc.2), its tests skipped by name and not counted there.
//! * **It needs addresses the suite takes only from code** (`GatewayStaticAddresses`).
//! * **It needs the data plane**: its source sends requests (it imports one of the suite's
//!   traffic clients or a network client library), which the lane cannot answer yet (issue #39
//!   item 3), or calls a function of its package declared where one is imported. Read from the
//!   suite's own `tests/*.go` ([`traffic_tests`]), never listed by hand.

use std::collections::{BTreeMap, BTreeSet};
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
    let names = declared(source).into_iter().map(|(name, _)| name).collect();
    let traffic = TRAFFIC_IMPORTS.iter().copied().find(|i| source.contains(i));
    (names, traffic)
}

/// The tests a source file declares, each with the features its `Features:` list names (the
/// `X` of each `features.SupportX`: the suite's feature constants are named `Support` and
/// their value, `pkg/features`).
fn declared(source: &str) -> Vec<(String, Vec<String>)> {
    source
        .split("ShortName:")
        .skip(1)
        .filter_map(|rest| {
            let body = rest.trim_start().strip_prefix('"')?;
            let name = body[..body.find('"')?].to_string();
            let features = rest
                .find("Features:")
                .map(|at| {
                    let list = &rest[at..];
                    let list = &list[..list.find('}').unwrap_or(list.len())];
                    support_names(list)
                })
                .unwrap_or_default();
            Some((name, features))
        })
        .collect()
}

/// Every `features.SupportX` in `text`, as `X`.
fn support_names(text: &str) -> Vec<String> {
    text.split("features.Support")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The top-level functions a Go source file declares (`func name(`; methods are not), each
/// with its body (up to the next top-level `func`, `var`, `type` or `const`).
fn functions(source: &str) -> Vec<(String, &str)> {
    let mut starts: Vec<usize> = source.match_indices("\nfunc ").map(|(at, _)| at + 1).collect();
    if source.starts_with("func ") {
        starts.insert(0, 0);
    }
    starts
        .into_iter()
        .filter_map(|at| {
            let rest = &source[at + "func ".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.is_empty() || !rest[name.len()..].starts_with('(') {
                return None;
            }
            let end = ["\nfunc ", "\nvar ", "\ntype ", "\nconst "].iter().filter_map(|w| rest.find(w)).min().unwrap_or(rest.len());
            Some((name, &rest[..end]))
        })
        .collect()
}

/// Whether `body` uses the package an import names (`"net/http"`: `http.`), as a whole word.
fn uses(body: &str, import: &str) -> bool {
    let package = import.trim_matches('"').rsplit('/').next().unwrap_or_default();
    appears(body, &format!("{package}."))
}

/// Whether `source` calls `function` (the name, not as part of a longer one, then `(`).
fn calls(source: &str, function: &str) -> bool {
    appears(source, &format!("{function}("))
}

/// Whether `pattern` appears in `source` not as the tail of a longer name or a selector, nor as
/// a declaration.
fn appears(source: &str, pattern: &str) -> bool {
    source.match_indices(pattern).any(|(at, _)| {
        let before = source[..at].chars().next_back();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') && !source[..at].ends_with("func ")
    })
}

/// What the suite's `tests/` declare: how many tests, those that send traffic (each with why),
/// and each test's features.
#[derive(Debug, Default)]
pub struct SuiteTests {
    pub declared: usize,
    pub traffic: BTreeMap<String, String>,
    pub features: BTreeMap<String, Vec<String>>,
    /// The file that declares each test, under `tests/` (`mesh/…` for the mesh tests).
    pub files: BTreeMap<String, String>,
}

/// One Go source file: its path under the folder read, its package (its folder) and its text.
type GoSource = (String, std::path::PathBuf, String);

/// Every `.go` file (not `_test.go`) under `dir` and its subfolders, in path order.
fn go_sources(dir: &Path, what: &str) -> Result<Vec<GoSource>, String> {
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e} ({what})", folder.display()))?;
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if p.is_dir() {
                folders.push(p);
            } else if p.extension().is_some_and(|x| x == "go") && !p.to_string_lossy().ends_with("_test.go") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut sources = Vec::new();
    for f in files {
        let text = crate::input::read_text(&f, crate::input::CASE_FILE).map_err(|e| e.to_string())?;
        let file = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
        // A function is shared within its Go package: its folder.
        let package = f.parent().map(Path::to_path_buf).unwrap_or_default();
        sources.push((file, package, text));
    }
    Ok(sources)
}

/// Why the traffic run (`--traffic`) leaves a mesh test out.
pub const MESH_TEST: &str = "a mesh test: issue #39 leaves mesh tests out (their client is Istio's echo server, echo-advanced, which the pod stand-in runs no program for, reached by exec)";

/// What of a container runtime the suite's helpers reach through the API server, which proxies
/// it to the pod's kubelet: the pod stand-in is no kubelet and serves neither.
const RUNTIME_CALLS: &[(&str, &str)] = &[("GetLogs(", "pod logs (pods/log)"), ("SubResource(\"exec\")", "exec (pods/exec)")];

/// The traffic tests the traffic run leaves out, each with why: the mesh tests (declared under
/// `tests/mesh/`), and every test whose file calls a helper of the suite's `utils/` that reads
/// pod logs or execs into a pod, directly or through another helper of `utils/` (suite
/// v1.4.0-rc.2: `HTTPRouteRequestMirror` calls `http.ExpectMirroredRequest`, which calls
/// `kubernetes.DumpEchoLogs`, which calls `GetLogs`). Read from the suite's sources, never
/// listed by hand.
pub fn left_out_of_traffic(suite_dir: &Path, tests: &SuiteTests) -> Result<BTreeMap<String, String>, String> {
    let utils = go_sources(&suite_dir.join("utils"), "the suite's helpers")?;
    // (function, file, what it reaches): those that reach a runtime call, then their callers.
    let mut runtime: Vec<(String, String, &str)> = Vec::new();
    for (file, _, text) in &utils {
        for (f, body) in functions(text) {
            if let Some((_, what)) = RUNTIME_CALLS.iter().find(|(call, _)| body.contains(call)) {
                runtime.push((f, file.clone(), what));
            }
        }
    }
    loop {
        let mut more = Vec::new();
        for (file, _, text) in &utils {
            for (f, body) in functions(text) {
                if runtime.iter().chain(&more).any(|(r, _, _)| *r == f) {
                    continue;
                }
                if let Some((_, _, what)) = runtime.iter().find(|(r, _, _)| names_call(body, r)) {
                    more.push((f, file.clone(), *what));
                }
            }
        }
        if more.is_empty() {
            break;
        }
        runtime.extend(more);
    }
    let sources = go_sources(&suite_dir.join("tests"), "the suite's tests")?;
    let mut out = BTreeMap::new();
    for test in tests.traffic.keys() {
        let Some(file) = tests.files.get(test) else { continue };
        if file.starts_with("mesh/") {
            out.insert(test.clone(), MESH_TEST.to_string());
            continue;
        }
        let Some((_, _, text)) = sources.iter().find(|(f, _, _)| f == file) else { continue };
        if let Some((f, at, what)) = runtime.iter().find(|(f, _, _)| names_call(text, f)) {
            out.insert(
                test.clone(),
                format!("needs a container runtime: {what}, through {f} (utils/{at}), which kube-apiserver proxies to the pod's kubelet; the pod stand-in is no kubelet"),
            );
        }
    }
    Ok(out)
}

/// The file of the suite's `pkg/features` that declares the mesh features.
pub const MESH_FEATURES_FILE: &str = "mesh.go";

/// Every feature the suite's `pkg/features` declares (`SupportX FeatureName = "X"`), each with
/// its file. `suite_dir` is the suite's `conformance/` folder: `pkg/features` is beside it in
/// the `sigs.k8s.io/gateway-api` module (the suite before v1.5, whose `--all-features` ignores
/// `--exempt-features`).
pub fn declared_features(suite_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let dir = suite_dir.parent().unwrap_or(suite_dir).join("pkg/features");
    let mut out = Vec::new();
    for (file, _, text) in go_sources(&dir, "the suite's features")? {
        for rest in text.split("FeatureName = \"").skip(1) {
            if let Some(end) = rest.find('"') {
                out.push((rest[..end].to_string(), file.clone()));
            }
        }
    }
    if out.is_empty() {
        return Err(format!("{}: declares no FeatureName: not the suite's features", dir.display()));
    }
    Ok(out)
}

/// Whether `source` calls `function` by its bare name or qualified by a package (`pkg.f(`).
fn names_call(source: &str, function: &str) -> bool {
    calls(source, function) || source.contains(&format!(".{function}("))
}

/// The tests of the suite at `suite_dir`: which send traffic, each with the file and the import
/// that shows it, and which features each needs. A test sends traffic when its file imports a
/// traffic client, or calls a function of the package declared in a file that does (suite
/// v1.6's `UDPRouteMultipleRoutesAttachment` sends with `udpEchoSendOnce`, declared in
/// `udproute-weighted-routing.go`, which imports "net").
pub fn traffic_tests(suite_dir: &Path) -> Result<SuiteTests, String> {
    let dir = suite_dir.join("tests");
    let sources = go_sources(&dir, "the suite's tests")?;
    // The functions of each package that send: declared in a file that imports a traffic
    // client, and using it in their own body.
    let mut senders: Vec<(std::path::PathBuf, String, String)> = Vec::new();
    for (file, package, text) in &sources {
        let imports: Vec<&str> = TRAFFIC_IMPORTS.iter().copied().filter(|i| text.contains(i)).collect();
        for (f, body) in functions(text) {
            if let Some(import) = imports.iter().find(|i| uses(body, i)) {
                senders.push((package.clone(), f, format!("{file} imports {import}")));
            }
        }
    }
    let mut out = SuiteTests::default();
    for (file, package, text) in &sources {
        let tests = declared(text);
        out.declared += tests.len();
        let why = match classify(text).1 {
            Some(import) => Some(format!("{file} imports {import}")),
            None => senders
                .iter()
                .find(|(p, f, _)| p == package && calls(text, f))
                .map(|(_, f, shown)| format!("{file} calls {f}, which uses what {shown}")),
        };
        for (name, features) in tests {
            if let Some(why) = &why {
                out.traffic.insert(name.clone(), why.clone());
            }
            out.files.insert(name.clone(), file.clone());
            out.features.insert(name, features);
        }
    }
    if out.declared == 0 {
        return Err(format!("{}: no test declares a ShortName: not the conformance suite's tests", dir.display()));
    }
    Ok(out)
}

/// The features Cilium's operator leaves out of its GatewayClass status at the tag: the
/// `exemptFeatures` list of `gatewayclass_status.go`, each `features.<Name>Feature` (or
/// `features.<Name>`) read as the suite's feature name, matched without regard to case against
/// `known` (`BackendTLSPolicySanValidationFeature` is `BackendTLSPolicySANValidation`).
pub fn exempt_features(status_go: &str, known: &BTreeSet<String>) -> Result<Vec<String>, String> {
    let at = status_go.find("exemptFeatures = []features.Feature{").ok_or("declares no exemptFeatures = []features.Feature{...}")?;
    let list = &status_go[at..];
    let list = &list[..list.find("\n}").ok_or("its exemptFeatures list does not end")?];
    Ok(list
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().strip_prefix("features."))
        .map(|c| {
            let c = c.trim_end_matches(',');
            let c = c.strip_suffix("Feature").unwrap_or(c);
            known.iter().find(|k| k.eq_ignore_ascii_case(c)).cloned().unwrap_or_else(|| c.to_string())
        })
        .collect())
}

/// Whether the suite's `--exempt-features` takes features out of `--all-features` (suite v1.6:
/// `utils/suite/suite.go: NewConformanceTestSuite` subtracts them; v1.4.0-rc.2 ignores them).
pub fn all_features_honour_exempt(suite_dir: &Path) -> Result<bool, String> {
    let file = suite_dir.join("utils/suite/suite.go");
    let text = crate::input::read_text(&file, crate::input::CASE_FILE).map_err(|e| e.to_string())?;
    Ok(text.contains("SetsToNamesSet(features.AllFeatures).Difference("))
}

/// The features this run leaves out, each with why, and the tests it skips by name for them
/// (when the suite cannot leave a feature out of `--all-features`, `honoured` false).
pub fn exempt(version: &CiliumVersion, exempt: &[String], tests: &SuiteTests, honoured: bool) -> (Vec<(String, String)>, Vec<Skip>) {
    let source = format!("cilium@v{version}:{CILIUM_GATEWAYCLASS} exemptFeatures");
    let features = exempt
        .iter()
        .map(|f| {
            (f.clone(), format!("Cilium {version}'s operator leaves it out of its GatewayClass status ({source}); Cilium's published report, whose features are that status's, lists it unsupported"))
        })
        .collect();
    if honoured {
        return (features, Vec::new());
    }
    let skips = tests
        .features
        .iter()
        .filter_map(|(test, needs)| {
            let f = needs.iter().find(|n| exempt.contains(n))?;
            Some(Skip {
                test: test.clone(),
                why: format!("needs {f}, which Cilium {version}'s operator leaves out of its GatewayClass status ({source}) and the published report lists unsupported; this suite's --all-features ignores --exempt-features (utils/suite/suite.go: NewConformanceTestSuite), so it is skipped by name"),
                counted_there: false,
            })
        })
        .collect();
    (Vec::new(), skips)
}

/// The test that needs a pool of usable and unusable addresses, which the suite takes only from
/// code: Cilium's conformance test reads them from `GATEWAY_API_CONFORMANCE_USABLE_NETWORK_ADDRESSES`
/// and `..._UNUSABLE_...` (its kind network's LB range) and skips it without them; upstream's
/// `RunConformance`, which the suite binary runs, has no flag for them.
pub const STATIC_ADDRESSES: (&str, &str) = (
    "GatewayStaticAddresses",
    "needs usable and unusable Gateway addresses, which the suite takes only from code (Cilium's conformance_test.go reads them from GATEWAY_API_CONFORMANCE_USABLE_NETWORK_ADDRESSES and skips the test without them; upstream's RunConformance has no flag for them)",
);

/// Every skip for a run, each test once, in order: Cilium's, the tests of features Cilium's
/// GatewayClass status leaves out (when the suite cannot leave them out itself), the addresses
/// test, then the traffic tests (a test keeps the first reason).
pub fn all(cilium: Vec<Skip>, exempt: Vec<Skip>, traffic: &BTreeMap<String, String>) -> Vec<Skip> {
    let why: BTreeMap<String, String> =
        traffic.iter().map(|(test, shown_by)| (test.clone(), format!("{NEEDS_DATA_PLANE} ({shown_by})"))).collect();
    all_with(cilium, exempt, &why)
}

/// [`all`], the last skips given with their whole reason (`--traffic`: the traffic tests left
/// out, [`left_out_of_traffic`]).
pub fn all_with(cilium: Vec<Skip>, exempt: Vec<Skip>, last: &BTreeMap<String, String>) -> Vec<Skip> {
    let mut out: Vec<Skip> = Vec::new();
    for s in cilium.into_iter().chain(exempt) {
        if !out.iter().any(|o| o.test == s.test) {
            out.push(s);
        }
    }
    let mut add = |test: &str, why: String| {
        if !out.iter().any(|s| s.test == test) {
            out.push(Skip { test: test.to_string(), why, counted_there: true });
        }
    };
    add(STATIC_ADDRESSES.0, STATIC_ADDRESSES.1.to_string());
    for (test, why) in last {
        add(test, why.clone());
    }
    out
}

/// The skips whose test needs a feature Cilium's GatewayClass status leaves out (`exempt`)
/// are not counted in the published report, whatever the reason they are skipped for here:
/// its features are that status's, so the suite never selected them there
/// (`HTTPRouteListenerPortMatching` needs `HTTPRouteParentRefPort`, `MeshConsumerRoute` its own
/// feature).
pub fn uncounted(mut skips: Vec<Skip>, tests: &SuiteTests, exempt: &[String]) -> Vec<Skip> {
    for s in &mut skips {
        if tests.features.get(&s.test).is_some_and(|needs| needs.iter().any(|n| exempt.contains(n))) {
            s.counted_there = false;
        }
    }
    skips
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
        let t = traffic_tests(tmp.path()).unwrap();
        assert_eq!(t.declared, 2);
        assert_eq!(t.traffic.keys().collect::<Vec<_>>(), ["MeshB"]);
        assert!(t.traffic["MeshB"].starts_with("mesh/b.go imports"), "{t:?}");
    }

    #[test]
    fn a_test_that_sends_with_a_function_declared_beside_a_traffic_import_is_traffic() {
        // Suite v1.6.1's UDPRouteMultipleRoutesAttachment imports no client; it sends with
        // udpEchoSendOnce, declared in udproute-weighted-routing.go, which imports "net".
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("tests/mesh")).unwrap();
        std::fs::write(
            tmp.path().join("tests/udp-weighted.go"),
            "import (\n\t\"net\"\n)\nvar W = T{ShortName: \"UDPRouteWeightedRouting\"}\nfunc udpEchoSendOnce(ctx context.Context) (string, error) {\n\tvar dialer net.Dialer\n}\nfunc generateKinds() []Kind {\n\treturn nil // no subnet.X\n}\nfunc (s *x) method() {}\n",
        )
        .unwrap();
        std::fs::write(
            tmp.path().join("tests/udp-multiple.go"),
            "var M = T{ShortName: \"UDPRouteMultipleRoutesAttachment\",\n\tFeatures: []features.FeatureName{\n\t\tfeatures.SupportGateway,\n\t\tfeatures.SupportUDPRoute,\n\t},\n\tTest: func() { pod, err := udpEchoSendOnce(ctx, gwAddr, probeTimeout) }}",
        )
        .unwrap();
        // A status test that only names a similar word or calls a function of that file that
        // sends nothing (suite v1.6.1: ListenerSetRouteStatusScopedToParentRef calls
        // generateSupportedRouteKinds), and a mesh test in another package
        // calling a function of the same name, are not.
        std::fs::write(
            tmp.path().join("tests/status.go"),
            "var S = T{ShortName: \"GatewayX\", Test: func() { x.udpEchoSendOnce(1); myudpEchoSendOnce(2); generateKinds() }}",
        )
        .unwrap();
        std::fs::write(tmp.path().join("tests/mesh/m.go"), "var S = T{ShortName: \"MeshX\", Test: func() { udpEchoSendOnce(1) }}").unwrap();
        let t = traffic_tests(tmp.path()).unwrap();
        assert_eq!(t.declared, 4);
        assert_eq!(t.traffic.keys().collect::<Vec<_>>(), ["UDPRouteMultipleRoutesAttachment", "UDPRouteWeightedRouting"]);
        assert_eq!(
            t.traffic["UDPRouteMultipleRoutesAttachment"],
            "udp-multiple.go calls udpEchoSendOnce, which uses what udp-weighted.go imports \"net\""
        );
        assert_eq!(t.features["UDPRouteMultipleRoutesAttachment"], ["Gateway", "UDPRoute"]);
        assert!(t.features["GatewayX"].is_empty());
    }

    const STATUS_GO: &str = "var supportedFeatures = features.AllFeatures\n\n// what we do not support\nvar exemptFeatures = []features.Feature{\n\tfeatures.HTTPRouteParentRefPortFeature,\n\tfeatures.BackendTLSPolicySanValidationFeature,\n\tfeatures.HTTPRouteCORS,\n\tfeatures.TLSRouteModeTerminateFeature,\n}\n\nfunc getSupportedFeatures() {}\n";

    #[test]
    fn the_exempt_features_are_read_from_the_operators_gatewayclass_status_as_the_suite_names_them() {
        let known: BTreeSet<String> = ["BackendTLSPolicySANValidation", "HTTPRouteCORS"].map(String::from).into();
        assert_eq!(
            exempt_features(STATUS_GO, &known).unwrap(),
            ["HTTPRouteParentRefPort", "BackendTLSPolicySANValidation", "HTTPRouteCORS", "TLSRouteModeTerminate"]
        );
        assert!(exempt_features("var x = 1", &known).unwrap_err().contains("no exemptFeatures"));
    }

    #[test]
    fn exempt_features_are_left_out_by_flag_where_the_suite_honours_it_else_their_tests_are_skipped_uncounted() {
        let v = CiliumVersion::parse("1.20.0").unwrap();
        let mut tests = SuiteTests::default();
        tests.features.insert("TLSRouteListenerTerminateSupportedKinds".into(), vec!["Gateway".into(), "TLSRouteModeTerminate".into()]);
        tests.features.insert("GatewayModifyListeners".into(), vec!["Gateway".into()]);
        let exempt_names = vec!["TLSRouteModeTerminate".to_string()];
        let (features, skips) = exempt(&v, &exempt_names, &tests, true);
        assert!(skips.is_empty());
        assert_eq!(features.len(), 1);
        assert!(features[0].1.contains("cilium@v1.20.0:operator/pkg/gateway-api/gatewayclass_status.go exemptFeatures"), "{features:?}");
        let (features, skips) = exempt(&v, &exempt_names, &tests, false);
        assert!(features.is_empty());
        assert_eq!(skips.iter().map(|s| s.test.as_str()).collect::<Vec<_>>(), ["TLSRouteListenerTerminateSupportedKinds"]);
        assert!(!skips[0].counted_there && skips[0].why.starts_with("needs TLSRouteModeTerminate"), "{skips:?}");
    }

    #[test]
    fn a_skip_whose_test_needs_an_exempt_feature_is_not_counted_there_whatever_its_reason() {
        let mut tests = SuiteTests::default();
        tests.features.insert("HTTPRouteListenerPortMatching".into(), vec!["HTTPRoute".into(), "HTTPRouteParentRefPort".into()]);
        tests.features.insert("HTTPRouteSimpleSameNamespace".into(), vec!["HTTPRoute".into()]);
        let skip = |t: &str| Skip { test: t.into(), why: "w".into(), counted_there: true };
        let out = uncounted(
            vec![skip("HTTPRouteListenerPortMatching"), skip("HTTPRouteSimpleSameNamespace"), skip("Unknown")],
            &tests,
            &["HTTPRouteParentRefPort".to_string()],
        );
        assert_eq!(out.iter().map(|s| s.counted_there).collect::<Vec<_>>(), [false, true, true]);
    }

    #[test]
    fn the_suites_are_told_apart_by_whether_all_features_subtract_the_exempt_ones() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("utils/suite")).unwrap();
        let file = tmp.path().join("utils/suite/suite.go");
        std::fs::write(
            &file,
            "supportedFeatures = features.SetsToNamesSet(features.AllFeatures).Difference(sets.New(options.ExemptFeatures...))",
        )
        .unwrap();
        assert!(all_features_honour_exempt(tmp.path()).unwrap());
        std::fs::write(&file, "supportedFeatures = features.SetsToNamesSet(features.AllFeatures)").unwrap();
        assert!(!all_features_honour_exempt(tmp.path()).unwrap());
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
        assert_eq!(names(&v119), ["MeshConsumerRoute", "HTTPRouteListenerPortMatching", "MeshGRPCRouteWeight", "MeshHTTPRouteMatching"]);
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

    /// `--traffic` runs the traffic tests but leaves out the mesh tests and every test that
    /// reaches a container runtime through a helper, even two helpers deep (suite v1.4.0-rc.2:
    /// `http.ExpectMirroredRequest` calls `kubernetes.DumpEchoLogs`, which calls `GetLogs`); a
    /// traffic test that only dials, or a helper that merely names a similar function, is run.
    #[test]
    fn the_traffic_run_leaves_out_mesh_tests_and_tests_that_need_a_container_runtime() {
        let tmp = tempfile::tempdir().unwrap();
        let put = |file: &str, text: String| {
            let path = tmp.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        put(
            "utils/kubernetes/logs.go",
            "package kubernetes\nfunc DumpEchoLogs(ns string) {\n\treq := cs.CoreV1().Pods(ns).GetLogs(name, opts)\n}\nfunc DumpEchoLogsLater() {}\n".into(),
        );
        put(
            "utils/http/mirror.go",
            "package http\nfunc ExpectMirroredRequest(t *T) {\n\tlogs, err := kubernetes.DumpEchoLogs(ns)\n}\nfunc MakeRequest() { kubernetes.DumpEchoLogsLater() }\n".into(),
        );
        let http = "import \"sigs.k8s.io/gateway-api/conformance/utils/http\"\n";
        put(
            "tests/mirror.go",
            format!("{http}var M = T{{ShortName: \"HTTPRouteRequestMirror\", Test: func() {{ http.ExpectMirroredRequest(t) }}}}"),
        );
        put(
            "tests/simple.go",
            format!("{http}var S = T{{ShortName: \"HTTPRouteSimpleSameNamespace\", Test: func() {{ http.MakeRequest() }}}}"),
        );
        put("tests/mesh/m.go", "import \"sigs.k8s.io/gateway-api/conformance/utils/echo\"\nvar S = T{ShortName: \"MeshBasic\"}".into());
        let tests = traffic_tests(tmp.path()).unwrap();
        assert_eq!(tests.traffic.len(), 3);
        let out = left_out_of_traffic(tmp.path(), &tests).unwrap();
        assert_eq!(out.keys().collect::<Vec<_>>(), ["HTTPRouteRequestMirror", "MeshBasic"]);
        assert_eq!(out["MeshBasic"], MESH_TEST);
        let why = &out["HTTPRouteRequestMirror"];
        assert!(
            why.starts_with("needs a container runtime: pod logs (pods/log), through ExpectMirroredRequest (utils/http/mirror.go)"),
            "{why}"
        );
        let skips = all_with(Vec::new(), Vec::new(), &out);
        assert_eq!(
            skips.iter().map(|s| s.test.as_str()).collect::<Vec<_>>(),
            ["GatewayStaticAddresses", "HTTPRouteRequestMirror", "MeshBasic"]
        );
    }

    #[test]
    fn the_suites_features_are_read_with_the_file_that_declares_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("conformance")).unwrap();
        std::fs::create_dir_all(tmp.path().join("pkg/features")).unwrap();
        std::fs::write(
            tmp.path().join("pkg/features/gateway.go"),
            "const (\n\tSupportGateway FeatureName = \"Gateway\"\n\tSupportGatewayPort8080 FeatureName = \"GatewayPort8080\"\n)",
        )
        .unwrap();
        std::fs::write(tmp.path().join("pkg/features/mesh.go"), "const SupportMesh FeatureName = \"Mesh\"").unwrap();
        let f = declared_features(&tmp.path().join("conformance")).unwrap();
        assert_eq!(
            f,
            [
                ("Gateway".to_string(), "gateway.go".to_string()),
                ("GatewayPort8080".into(), "gateway.go".into()),
                ("Mesh".into(), MESH_FEATURES_FILE.into())
            ]
        );
        std::fs::write(tmp.path().join("pkg/features/mesh.go"), "").unwrap();
        std::fs::write(tmp.path().join("pkg/features/gateway.go"), "").unwrap();
        assert!(declared_features(&tmp.path().join("conformance")).is_err());
    }

    #[test]
    fn every_test_is_skipped_once_with_the_first_reason() {
        let cilium = vec![Skip { test: "MeshConsumerRoute".into(), why: "Cilium".into(), counted_there: true }];
        let traffic = BTreeMap::from([
            ("MeshConsumerRoute".to_string(), "m.go imports echo".to_string()),
            ("HTTPRouteSimpleSameNamespace".to_string(), "h.go imports http".to_string()),
        ]);
        let exempt = vec![
            Skip { test: "MeshConsumerRoute".into(), why: "exempt".into(), counted_there: false },
            Skip { test: "BackendTLSPolicyObservedGenerationBump".into(), why: "exempt".into(), counted_there: false },
        ];
        let all = all(cilium, exempt, &traffic);
        let tests: Vec<&str> = all.iter().map(|s| s.test.as_str()).collect();
        assert_eq!(
            tests,
            ["MeshConsumerRoute", "BackendTLSPolicyObservedGenerationBump", "GatewayStaticAddresses", "HTTPRouteSimpleSameNamespace"]
        );
        assert_eq!(all[0].why, "Cilium");
        assert!(all[0].counted_there && !all[1].counted_there);
        assert_eq!(all[3].why, "needs the data plane: issue #39 item 3 (h.go imports http)");
    }
}
