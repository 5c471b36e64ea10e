//! `operator_agent::1.19.6::*`: the operator lane with Cilium's own agent as its agent step
//! (`LAYOUT_GATE_AGENT_STEP=cilium`): agent-plane, xds-bridge and upstream Envoy per control
//! plane, the backends in a network namespace of the run's own behind EndpointSlices. Each
//! trial runs one catalogue case and reads what the evidence recorded of the agent.

use serde_json::Value;

use crate::operator_rig::{VERSION, lg_env, text};

fn runnable() -> Result<(), String> {
    crate::operator_rig::runnable(true)
}

/// Runs `case` through Cilium's agent at the pin; its exit code and the one case's evidence.
fn run_case(case: &str) -> Result<(Option<i32>, String, Value), String> {
    runnable()?;
    let evidence = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ev_arg = evidence.path().to_string_lossy().into_owned();
    let out = lg_env(
        None,
        &["run", "--lane", "operator", "--cilium", VERSION, "--case", case, "--evidence-dir", &ev_arg],
        &[("LAYOUT_GATE_AGENT_STEP", "cilium")],
    )?;
    let text = text(&out);
    let dir = std::fs::read_dir(evidence.path())
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("evidence.json").is_file())
        .ok_or_else(|| format!("no evidence written:\n{text}"))?;
    let ev: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evidence.json")).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let one = ev.pointer("/cases/0").cloned().ok_or_else(|| format!("the evidence has no case:\n{text}"))?;
    let env_ok = ev.get("environment").and_then(Value::as_object).is_some_and(|m| {
        m.iter().any(|(k, v)| k.starts_with("agent_step") && v.as_str().is_some_and(|v| v.starts_with("Cilium's own agent control plane")))
    });
    if !env_ok {
        return Err(format!(
            "the evidence's environment does not say Cilium's own agent answered: {}",
            ev.get("environment").unwrap_or(&Value::Null)
        ));
    }
    Ok((out.status.code(), text, one))
}

fn agent_of(case: &Value) -> Result<&Value, String> {
    case.pointer("/recording/agent").ok_or_else(|| "the case's recording has no `agent` part: the agent step was not Cilium's".to_string())
}

/// A case the catalogue confirmed on Cilium's operator passes through Cilium's own agent: the
/// agent took its CEC (the spec the API server holds), Envoy accepted it, the bridge bound the
/// listener at the Gateway's LB IPAM address, and the xDS both ways is recorded.
pub fn answers_through_ciliums_agent() -> Result<(), String> {
    let (code, text, case) = run_case("dns01-default")?;
    if code != Some(0) {
        return Err(format!("dns01-default through Cilium's agent: exit {code:?}\n{text}"));
    }
    let agent = agent_of(&case)?;
    let cecs = agent.get("cecs").and_then(Value::as_array).cloned().unwrap_or_default();
    if cecs.is_empty()
        || !cecs.iter().all(|c| c.get("taken") == Some(&Value::Bool(true)) && c.get("status").and_then(Value::as_str) == Some("Done"))
    {
        return Err(format!("not every CEC was taken and accepted: {cecs:?}"));
    }
    let binds = agent.get("binds").and_then(Value::as_array).cloned().unwrap_or_default();
    if !binds.iter().any(|b| {
        b.get("address").and_then(Value::as_str).is_some_and(layout_gate::lanes::operator::control_plane::in_pool_blocks)
            && b.get("installed") == Some(&Value::Bool(true))
    }) {
        return Err(format!("no listener was bound at the Gateway's LB IPAM address with the redirect installed: {binds:?}"));
    }
    let xds = agent.get("xds").and_then(Value::as_array).cloned().unwrap_or_default();
    let saw = |event: &str, type_suffix: &str| {
        xds.iter().any(|x| {
            x.get("event").and_then(Value::as_str) == Some(event)
                && x.get("type_url").and_then(Value::as_str).is_some_and(|t| t.ends_with(type_suffix))
        })
    };
    for (event, t) in [("from_agent", "Listener"), ("to_envoy", "Listener"), ("from_envoy", "Listener"), ("from_agent", "Secret")] {
        if !saw(event, t) {
            return Err(format!("the case's xDS record has no {event} {t} message ({} lines)", xds.len()));
        }
    }
    if !xds.iter().any(|x| x.get("kind").and_then(Value::as_str) == Some("strip")) {
        return Err("the bridge removed no cilium.* filter: the agent's injected filters are not in the record".into());
    }
    Ok(())
}

/// A listener Envoy refuses (two filter chains with one match: the case's catch-all HTTPS and
/// passthrough on one port) takes its whole CEC with it on Cilium's agent at 1.19: the agent
/// completes the update with Envoy's NACK, reverts the CEC's resources, and the evidence says
/// so ("refused by Envoy ..., reverted"), with Envoy's NACK in the xDS record.
pub fn a_listener_envoy_refuses_is_reverted_and_said() -> Result<(), String> {
    let (_, text, case) = run_case("catch-all-https-and-passthrough")?;
    let agent = agent_of(&case)?;
    let cecs = agent.get("cecs").and_then(Value::as_array).cloned().unwrap_or_default();
    let nacked = cecs.iter().any(|c| {
        c.get("status").and_then(Value::as_str) == Some("Error")
            && c.get("error").and_then(Value::as_str).is_some_and(|e| e.contains("NACK"))
    });
    if !nacked {
        return Err(format!("no CEC's update was completed with Envoy's NACK: {cecs:?}\n{text}"));
    }
    let said = agent.get("said").and_then(Value::as_array).cloned().unwrap_or_default();
    if !said.iter().any(|s| s.as_str().is_some_and(|s| s.contains("refused by Envoy") && s.contains("reverted by Cilium's agent"))) {
        return Err(format!("the evidence does not say the update was refused and reverted: {said:?}"));
    }
    let xds = agent.get("xds").and_then(Value::as_array).cloned().unwrap_or_default();
    if !xds.iter().any(|x| {
        x.get("event").and_then(Value::as_str) == Some("from_envoy")
            && x.get("nack").and_then(Value::as_str).is_some_and(|n| n.contains("same matching rules"))
    }) {
        return Err(format!("Envoy's NACK is not in the case's xDS record ({} lines)", xds.len()));
    }
    Ok(())
}
