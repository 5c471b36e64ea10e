//! `check_operator::<version>::...`: `check --lane operator` as a user runs it, on layouts of
//! `harness/tests/data/check/` (one that conflicts at 1.19.6, one whose HTTPRoutes merge into one
//! Envoy route): Cilium's own operator at the version answers, and its conflicts, route statuses
//! and probe answers (TLS and plain HTTP) equal the model's. The control
//! plane is the operator lane's (`LAYOUT_GATE_CONTROL_PLANE_DIR` or `.tools/control-plane`); when
//! it is not built the trial fails naming the command that builds it, as the operator trials do.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const LAYOUT: &str = "cozystack-dns01-app-namespaces.yaml";
const VERSION: &str = "1.19.6";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `check --format json` over `layout` at `VERSION` (baseline too) by `lane`.
fn check_json(lane: &str, layout: &str) -> Result<(Option<i32>, Value, String), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(repo())
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(["check", "--lane", lane, "--cilium", VERSION, "--baseline", VERSION, "--format", "json", "--versions-file"])
        .arg(repo().join("kind-config/versions.yaml"))
        .arg(repo().join("harness/tests/data/check").join(layout))
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("check --lane {lane}: not JSON ({e}); exit {:?}\n{stderr}", out.status.code()))?;
    Ok((out.status.code(), v, stderr))
}

/// Per listener, route and probe key: the comparable words of one version of one Gateway.
fn facts(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let conds = |cs: &Value| -> String {
        let mut w: Vec<String> = cs
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{}={}/{}",
                    c["type"].as_str().unwrap_or(""),
                    c["status"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                )
            })
            .collect();
        w.sort();
        w.join(",")
    };
    out.push(format!("gateway {}", conds(&v["gateway"])));
    for l in v["listeners"].as_array().into_iter().flatten() {
        out.push(format!("listener {} {}", l["name"].as_str().unwrap_or(""), conds(&l["conditions"])));
    }
    for r in v["routes"].as_array().into_iter().flatten() {
        out.push(format!("route {} {} {}", r["route"].as_str().unwrap_or(""), r["parent"].as_str().unwrap_or(""), conds(&r["conditions"])));
    }
    for a in v["answers"].as_array().into_iter().flatten() {
        out.push(format!(
            "answer {} {} {} {}",
            a["port"],
            a["sni"].as_str().unwrap_or("(no SNI)"),
            a["answer"].as_str().unwrap_or(""),
            a["cert"].as_str().or(a["how"].as_str()).unwrap_or("")
        ));
    }
    for a in v["http"].as_array().into_iter().flatten() {
        out.push(format!(
            "http {} {} {} {}",
            a["port"],
            a["host"].as_str().unwrap_or(""),
            a["status"],
            a["backend"].as_str().or(a["location"].as_str()).unwrap_or("(Envoy)")
        ));
    }
    out.sort();
    out
}

/// An Envoy is found and the operator lane can run at `VERSION`, or why not.
fn runnable() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    match layout_gate::check::operator::not_runnable(&pins, &v) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

fn version_of(j: &Value, gw: usize) -> Result<&Value, String> {
    j["gateways"][gw]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["version"] == VERSION))
        .ok_or_else(|| format!("no version {VERSION} for gateway {gw} in {j:#}"))
}

/// The operator answers the layout at 1.19.6: the https listener is Conflicted (ProtocolConflict),
/// as Cilium 1.19.6 decides; every condition and probe answer equals the model's; the output
/// says who answered.
pub fn conflict_and_answers_equal_the_models() -> Result<(), String> {
    runnable()?;
    let (op_code, op, op_err) = check_json("operator", LAYOUT)?;
    let (model_code, model, _) = check_json("model", LAYOUT)?;
    if op["answered_by"] != "operator" || model["answered_by"] != "model" {
        return Err(format!("answered_by: operator run {}, model run {}", op["answered_by"], model["answered_by"]));
    }
    if !op["prediction"].as_str().unwrap_or("").starts_with("CILIUM'S OPERATOR") {
        return Err(format!("banner: {}", op["prediction"]));
    }
    let gateways = op["gateways"].as_array().map(Vec::len).unwrap_or(0);
    if gateways == 0 || gateways != model["gateways"].as_array().map(Vec::len).unwrap_or(0) {
        return Err(format!("{gateways} Gateways by the operator\n{op:#}\n{op_err}"));
    }
    let mut conflicted = false;
    for g in 0..gateways {
        let (o, m) = (version_of(&op, g)?, version_of(&model, g)?);
        if o["answered_by"] != "operator" || !o["error"].is_null() {
            return Err(format!("operator version result: answered_by {}, error {}\n{op_err}", o["answered_by"], o["error"]));
        }
        if o["answers"].as_array().is_none_or(Vec::is_empty) {
            return Err("the operator lane answered no probe".into());
        }
        let (fo, fm) = (facts(o), facts(m));
        same_facts(&fo, &fm)?;
        conflicted |= fo.iter().any(|f| f.starts_with("listener https ") && f.contains("Conflicted=True/ProtocolConflict"));
    }
    if !conflicted {
        return Err(format!("no Conflicted https listener at {VERSION}:\n{op:#}"));
    }
    // Both exit 1: the layout conflicts, whoever answers.
    if op_code != Some(1) || model_code != Some(1) {
        return Err(format!("exit codes: operator {op_code:?}, model {model_code:?} (want 1 and 1)\n{op_err}"));
    }
    Ok(())
}

/// Two HTTPRoutes of one listener that match alike, one without a valid backend
/// (`two-httproutes-one-match.yaml`): Cilium's operator merges them into one Envoy route with
/// the valid backend, so plain HTTP to the host reaches it; the model says the same (it answered
/// 500 before: differential, seed 2, layout 16).
pub fn merged_routes_answer_as_the_models() -> Result<(), String> {
    runnable()?;
    let layout = "two-httproutes-one-match.yaml";
    let (_, op, op_err) = check_json("operator", layout)?;
    let (_, model, _) = check_json("model", layout)?;
    let (o, m) = (version_of(&op, 0)?, version_of(&model, 0)?);
    if o["answered_by"] != "operator" || !o["error"].is_null() {
        return Err(format!("operator version result: answered_by {}, error {}\n{op_err}", o["answered_by"], o["error"]));
    }
    let want = "http 80 app.example.test 200 web";
    let (fo, fm) = (facts(o), facts(m));
    if !fo.iter().any(|f| f == want) {
        return Err(format!("the operator's Envoy did not answer `{want}`: {fo:#?}\n{op_err}"));
    }
    same_facts(&fo, &fm)
}

/// The facts of the operator's answer equal the model's, or the difference both ways.
fn same_facts(fo: &[String], fm: &[String]) -> Result<(), String> {
    if fo != fm {
        let only_op: Vec<&String> = fo.iter().filter(|f| !fm.contains(f)).collect();
        let only_model: Vec<&String> = fm.iter().filter(|f| !fo.contains(f)).collect();
        return Err(format!("the operator and the model differ:\noperator only: {only_op:#?}\nmodel only: {only_model:#?}"));
    }
    Ok(())
}

/// `namespace-check-isolated-host.yaml`, three Gateways: a route from another namespace whose
/// hostname a listener admitting only its own namespace names exactly is refused although a
/// wildcard listener admits every namespace (an HTTPRoute on `gw`, a TLSRoute on `second`), as
/// Cilium's namespace check reads hostnames (differential, seed 3, layout 44); and `unaccepted`,
/// with no valid listener, gets no address, and the lane answers its probes (nothing listens)
/// instead of waiting for one. Every Gateway answered by the operator equals the model's.
pub fn isolated_hostnames_and_unaccepted_gateway_as_the_models() -> Result<(), String> {
    runnable()?;
    let layout = "namespace-check-isolated-host.yaml";
    let (_, op, op_err) = check_json("operator", layout)?;
    let (_, model, _) = check_json("model", layout)?;
    let gateways = op["gateways"].as_array().map(Vec::len).unwrap_or(0);
    if gateways != 3 {
        return Err(format!("{gateways} Gateways answered by the operator, want 3\n{op:#}\n{op_err}"));
    }
    let mut all = Vec::new();
    for g in 0..gateways {
        let (o, m) = (version_of(&op, g)?, version_of(&model, g)?);
        if o["answered_by"] != "operator" || !o["error"].is_null() {
            return Err(format!("Gateway {g}: answered_by {}, error {}\n{op_err}", o["answered_by"], o["error"]));
        }
        let (fo, fm) = (facts(o), facts(m));
        same_facts(&fo, &fm).map_err(|e| format!("Gateway {g}: {e}"))?;
        all.extend(fo);
    }
    for want in [
        "route api gw Accepted=False/NotAllowedByListeners,ResolvedRefs=True/ResolvedRefs",
        "route www gw Accepted=True/Accepted,ResolvedRefs=True/ResolvedRefs",
        "route api-tls second Accepted=False/NotAllowedByListeners,ResolvedRefs=True/ResolvedRefs",
        "gateway Accepted=False/ListenersNotValid,Programmed=False/ListenersNotValid",
    ] {
        if !all.iter().any(|f| f == want) {
            return Err(format!("the operator did not answer `{want}`: {all:#?}"));
        }
    }
    Ok(())
}
