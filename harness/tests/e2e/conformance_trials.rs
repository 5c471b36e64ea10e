//! `conformance::1.19.6::*`: `layout-gate conformance` end to end at one pin: the upstream suite
//! the tag's go.mod names, on a control plane of the run's own (a warm folder of its own, so no
//! warm plane is used), its report written and compared with Cilium's published one.

use std::path::PathBuf;
use std::process::Command;

const VERSION: &str = "1.19.6";

fn runnable() -> Result<(), String> {
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    if let Some(why) = layout_gate::check::operator::not_runnable(&pins, &v) {
        return Err(why);
    }
    layout_gate::conformance::suite::find(&pins, &v).map(|_| ())
}

/// Runs `layout-gate ARGS --out OUT` on a control plane of its own (a warm folder of its own, so
/// no warm plane is used), with no progress lines: the folder (kept while the caller holds it),
/// OUT and the output. Shared by the operator-lane commands' trials.
pub fn on_a_plane_of_its_own(args: &[&str]) -> Result<(tempfile::TempDir, PathBuf, std::process::Output), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = tmp.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .env(layout_gate::lanes::operator::warm::DIR_ENV, tmp.path().join("warm"))
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .map_err(|e| e.to_string())?;
    Ok((tmp, out, o))
}

/// Every status test the suite selects passes; every test it did not run is skipped by name
/// with a reason, the traffic tests with the data plane's; the suite's own report is written.
pub fn status_tests_pass() -> Result<(), String> {
    runnable()?;
    let (_tmp, out, o) = on_a_plane_of_its_own(&["conformance", "--cilium", VERSION])?;
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        return Err(format!("exit {:?}:\n{said}", o.status.code()));
    }
    let report = std::fs::read_to_string(out.join("report.yaml")).map_err(|e| format!("report.yaml: {e}\n{said}"))?;
    let report = layout_gate::conformance::results::Report::parse(&report, "report.yaml")?;
    if report.profiles.is_empty() {
        return Err(format!("the suite's report has no profiles\n{said}"));
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("comparison.json")).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if json["lane"] != "operator" || json["passed"] != true || !json["emulated"].as_str().unwrap_or_default().contains("no data plane") {
        return Err(format!("comparison.json: lane {}, passed {}, emulated {}", json["lane"], json["passed"], json["emulated"]));
    }
    let tests = json["comparison"]["tests"].as_array().cloned().unwrap_or_default();
    let result = |name: &str| tests.iter().find(|t| t["test"] == name).map(|t| t["here"].clone());
    // A status test (no traffic) that every Cilium passes, and a traffic test skipped by name.
    if result("GatewayClassObservedGenerationBump").map(|h| h["result"].clone()) != Some("passed".into()) {
        return Err(format!("GatewayClassObservedGenerationBump: {:?}\n{said}", result("GatewayClassObservedGenerationBump")));
    }
    let simple = result("HTTPRouteSimpleSameNamespace").unwrap_or_default();
    if simple["result"] != "skipped" || !simple["why"].as_str().unwrap_or_default().starts_with("needs the data plane: issue #39 item 3") {
        return Err(format!("HTTPRouteSimpleSameNamespace: {simple}"));
    }
    for t in &tests {
        let here = &t["here"];
        if here["result"] == "failed" || (here["result"] == "skipped" && here["why"].as_str().unwrap_or_default().is_empty()) {
            return Err(format!("{}: {here}\n{said}", t["test"]));
        }
    }
    Ok(())
}

/// The one traffic test the traffic trial runs: an HTTPRoute to a Service in the Gateway's own
/// namespace, which the suite checks by the echo-basic pod that answered (its name and
/// namespace in the response), so it passes only if a request to the Gateway's address went
/// through Envoy to a pod behind the Service's EndpointSlice.
const TRAFFIC_TEST: &str = "HTTPRouteSimpleSameNamespace";

/// `conformance --traffic`: the suite's own request to the Gateway's LB IPAM address is answered
/// by its own echo-basic pod, through Cilium's agent (its xDS, with the pods' endpoints, as the
/// bridge logged it), xds-bridge and Envoy. Fails if traffic does not flow: the test is the
/// suite's, and it checks which backend pod answered.
pub fn traffic_flows_through_ciliums_agent() -> Result<(), String> {
    runnable()?;
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    layout_gate::lanes::operator::binaries::find_agent(&pins, &v).map_err(|e| e.to_string())?;
    let (_tmp, out, o) = on_a_plane_of_its_own(&["conformance", "--cilium", VERSION, "--traffic", "--run-test", TRAFFIC_TEST])?;
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        return Err(format!("exit {:?}:\n{said}", o.status.code()));
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("comparison.json")).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if json["traffic"] != true || !json["emulated"].as_str().unwrap_or_default().contains("Cilium's own agent") {
        return Err(format!("comparison.json: traffic {}, emulated {}", json["traffic"], json["emulated"]));
    }
    if !json["control_plane"]["agent_step"].as_str().unwrap_or_default().starts_with("Cilium's own agent control plane") {
        return Err(format!("comparison.json: agent_step {}", json["control_plane"]["agent_step"]));
    }
    let tests = json["comparison"]["tests"].as_array().cloned().unwrap_or_default();
    let row = tests.iter().find(|t| t["test"] == TRAFFIC_TEST).cloned().unwrap_or_default();
    if row["here"]["result"] != "passed" || row["sends_traffic"] != true {
        return Err(format!("{TRAFFIC_TEST}: {row}\n{said}"));
    }
    // The agent served the route's cluster its pods' addresses (EDS from their EndpointSlice),
    // and the bridge bound the listener at the Gateway's LB IPAM address.
    let bridge = std::fs::read_to_string(out.join("xds-bridge.jsonl")).map_err(|e| format!("xds-bridge.jsonl: {e}"))?;
    let eds = bridge.lines().any(|l| {
        l.contains("ClusterLoadAssignment")
            && l.contains("\"clusterName\":\"gateway-conformance-infra/")
            && l.contains("\"address\":\"10.244.")
    });
    // In the plane's own LB IPAM block (each plane living on the machine holds one of its own),
    // as the agent's `/binds` told the bridge.
    let bound = bridge.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).any(|l| {
        l["event"] == "agent_binds"
            && l["binds"].as_array().is_some_and(|bs| {
                bs.iter().any(|b| b["address"].as_str().is_some_and(layout_gate::lanes::operator::control_plane::in_pool_blocks))
            })
    });
    if !eds || !bound {
        return Err(format!(
            "xds-bridge.jsonl: endpoints of gateway-conformance-infra sent {eds}, a listener bound at an address of the planes' LB IPAM blocks {bound}"
        ));
    }
    Ok(())
}
