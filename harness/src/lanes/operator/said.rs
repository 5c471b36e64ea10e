//! What the operator lane says is real and what is emulated, in one place: the evidence's
//! `real`, `emulated` and `lb_ipam_block` entries. The control plane says them for the emulated
//! agent step when it comes up ([`control_plane`](super::control_plane)); a run through Cilium's
//! own agent says them again for what that step makes real
//! ([`AgentStep::say_in`](super::plane::AgentStep::say_in)).

use std::collections::BTreeMap;

/// What Cilium's operator makes real, whichever agent step runs.
pub const OPERATOR_REAL: &str = "Cilium's own operator: every Gateway, listener, route and ListenerSet status and the CiliumEnvoyConfig";

/// What stays emulated with layout-gate's agent step (`agent.rs`).
pub const EMULATED_STEP: &str = "the agent step (pkg/ciliumenvoyconfig: names qualified, addresses from the CEC's services, routes inline, SDS from the synced Secrets, EDS from in-process backends), upstream Envoy instead of cilium-envoy, in-process backends instead of pods; no cilium-agent, no BPF datapath";

/// What stays emulated with Cilium's own agent control plane.
pub const AGENT_EMULATED: &str = "DryMode's fake datapath (no BPF, no TPROXY: layout-gate's bridge binds each listener at the Gateway addresses the agent redirects to its proxy port), upstream Envoy instead of cilium-envoy without Cilium's own filters (cilium.bpf_metadata, cilium.network, cilium.l7policy, removed by the bridge), backends in the run's network namespace instead of pods";

/// What Cilium's own agent control plane at `version` makes real, beside the operator.
pub fn agent_real(version: &str) -> String {
    format!(
        "Cilium's own operator (every Gateway, listener, route and ListenerSet status and the CiliumEnvoyConfig) and Cilium's own agent control plane {version} (its parsing and validation of the CiliumEnvoyConfig, the filters it injects, proxy ports and redirects, SDS, EDS from EndpointSlices, and its accounting of Envoy's ACKs and NACKs with the revert)"
    )
}

/// Whose addresses the plane's LB IPAM block holds: nothing serves them with the emulated step;
/// Cilium's agent redirects them to its proxy port, where the bridge has Envoy listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockServed {
    ByNothing,
    ByAgentRedirect,
}

const KEY_BLOCK: &str = "lb_ipam_block";

/// Says the plane's LB IPAM block (a CIDR) and who serves it.
pub fn say_block(env: &mut BTreeMap<String, String>, block: &str, served: BlockServed) {
    let how = match served {
        BlockServed::ByNothing => "loopback, served by nothing: probes go to the local Envoy",
        BlockServed::ByAgentRedirect => {
            "loopback: Envoy listens at each Gateway's address, where the agent's redirect points, and the probes go there"
        }
    };
    env.insert(KEY_BLOCK.into(), format!("{block} ({how})"));
}

/// The block [`say_block`] said (its CIDR), if any.
pub fn block_said(env: &BTreeMap<String, String>) -> Option<&str> {
    env.get(KEY_BLOCK).and_then(|b| b.split_whitespace().next())
}

/// Says what the emulated agent step leaves real and emulated.
pub fn say_emulated_step(env: &mut BTreeMap<String, String>) {
    env.insert("real".into(), OPERATOR_REAL.into());
    env.insert("emulated".into(), EMULATED_STEP.into());
}

/// Says what Cilium's own agent at `version` makes real, and what stays emulated; the block
/// said before is now served by the agent's redirects.
pub fn say_agent(env: &mut BTreeMap<String, String>, version: &str) {
    env.insert("real".into(), agent_real(version));
    env.insert("emulated".into(), AGENT_EMULATED.into());
    if let Some(block) = block_said(env).map(str::to_string) {
        say_block(env, &block, BlockServed::ByAgentRedirect);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block said by the control plane is read back unchanged, and a run through the agent
    /// says the same block served by the agent's redirects, and the agent as real.
    #[test]
    fn the_agent_says_the_planes_block_served_by_its_redirects() {
        let mut env = BTreeMap::new();
        say_block(&mut env, "127.21.0.0/16", BlockServed::ByNothing);
        say_emulated_step(&mut env);
        assert_eq!(block_said(&env), Some("127.21.0.0/16"));
        assert!(env["emulated"].contains("no cilium-agent"));
        say_agent(&mut env, "1.19.6");
        assert_eq!(block_said(&env), Some("127.21.0.0/16"));
        assert!(env["lb_ipam_block"].contains("the agent's redirect points"), "{env:?}");
        assert!(env["real"].contains("agent control plane 1.19.6"));
        assert!(!env["emulated"].contains("no cilium-agent"));
        let mut bare = BTreeMap::new();
        say_agent(&mut bare, "1.19.6");
        assert!(!bare.contains_key("lb_ipam_block"), "no block said, none made up");
    }
}
