//! What cilium-agent keeps of a Gateway's CiliumEnvoyConfig (CEC) from one step of a case to the
//! next (rules::REFUSED_CEC_KEEPS_GENERATION). The agent's CEC table is fed by a reflector whose
//! transform parses the CEC's resources: one it refuses at parse time (a duplicate name, from
//! 1.20 a duplicate filter-chain match) yields no object, and the reflector then neither inserts
//! nor deletes. So the generation the agent accepted before stays served, and deleting the CEC
//! later parses the same refused resources and removes nothing either. The rest of the model is
//! a pure function of one state; this is the one piece of history it carries.

use std::collections::BTreeMap;

use super::input::GatewayInput;
use super::rules;
use super::translate::{EnvoyListener, Prediction};
use crate::case::CiliumVersion;

/// A Gateway's CEC as the agent holds it after a step.
#[derive(Debug, Clone)]
struct Held {
    /// The Gateway as last seen and the listeners of the generation the agent serves.
    gateway: GatewayInput,
    envoy: Vec<EnvoyListener>,
    /// The newest generation was refused at parse time: a deletion of the CEC is refused too.
    refused_since: bool,
}

/// The agent's CEC table across a case's steps, by Gateway name.
#[derive(Debug, Clone, Default)]
pub struct AgentTable {
    held: BTreeMap<String, Held>,
}

impl AgentTable {
    /// Carries the table over one step. `predictions` are the Gateways the step's manifests hold,
    /// each predicted on its own: a prediction whose CEC the agent refuses at parse time, for a
    /// Gateway whose earlier generation it served, is served as that generation (its statuses
    /// are the operator's, which reads no history) and says so in its notes. Returns the
    /// Gateways the step deleted whose CEC the agent still serves (their last refused
    /// generation made the deletion fail to parse), with what they serve.
    pub fn step(&mut self, predictions: &mut [(GatewayInput, Prediction)], v: &CiliumVersion) -> Vec<(GatewayInput, Prediction)> {
        let rule = &rules::REFUSED_CEC_KEEPS_GENERATION;
        let nack = &rules::NACK_REVERT_RESTORES_GENERATION;
        let mut kept = Vec::new();
        if !rule.applies(v) {
            return kept;
        }
        for (g, p) in predictions.iter_mut() {
            // Before 1.20 Envoy refuses a listener with two identical chain matches, and the
            // agent's revert restores the generation it accepted before (rules::NACK_REVERT_...).
            if nack.applies(v)
                && let (Some(why), Some(h)) = (super::translate::duplicate_chain_match(g, &p.envoy), self.held.get(&g.name))
            {
                p.envoy = h.envoy.clone();
                p.notes.push((nack.id.into(), format!("{why}: {}", nack.says)));
                continue;
            }
            match (&p.cec_rejected, self.held.get_mut(&g.name)) {
                (Some(why), Some(h)) => {
                    p.envoy = h.envoy.clone();
                    p.notes.push((rule.id.into(), format!("{why}: {}", rule.says)));
                    h.refused_since = true;
                }
                (Some(_), None) => {}
                (None, _) => {
                    self.held.insert(g.name.clone(), Held { gateway: g.clone(), envoy: p.envoy.clone(), refused_since: false });
                }
            }
        }
        let present: Vec<String> = predictions.iter().map(|(g, _)| g.name.clone()).collect();
        self.held.retain(|name, h| present.contains(name) || h.refused_since);
        for (name, h) in &self.held {
            if present.contains(name) {
                continue;
            }
            let p = Prediction {
                version: v.to_string(),
                gateway_name: name.clone(),
                gateway: Vec::new(),
                listeners: BTreeMap::new(),
                listener_sets: BTreeMap::new(),
                routes: BTreeMap::new(),
                envoy: h.envoy.clone(),
                cec_rejected: None,
                notes: vec![(rule.id.into(), format!("Gateway {name} is deleted, but its CEC's last update was refused: {}", rule.says))],
                refused: Vec::new(),
            };
            kept.push((h.gateway.clone(), p));
        }
        kept
    }
}
