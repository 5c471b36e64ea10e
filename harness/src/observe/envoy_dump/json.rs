//! The machine-readable summary printed by `layout-gate envoy summarize --json`. Its shape is a
//! CLI contract that scripts and CI parse, so it is built field by field here rather than
//! derived from the Rust types, which may grow.

use serde_json::{Value, json};

use super::{ChainSummary, DumpSummary};

/// `{"listeners":[{"name","addresses","state","filter_chains","chains":[...],
/// "default_filter_chain","error"}]}`, listeners in summary order.
pub fn to_contract_json(summary: &DumpSummary) -> Value {
    let listeners: Vec<Value> = summary
        .listeners
        .iter()
        .map(|l| {
            json!({
                "name": l.name,
                "addresses": l.addresses,
                "state": l.state.as_str(),
                "filter_chains": l.filter_chain_count(),
                "chains": l.filter_chains.iter().map(chain).collect::<Vec<_>>(),
                "default_filter_chain": l.default_filter_chain.is_some(),
                "error": l.error,
            })
        })
        .collect();
    json!({ "listeners": listeners })
}

fn chain(c: &ChainSummary) -> Value {
    json!({
        "server_names": c.filter_chain_match.server_names,
        "transport_protocol": c.filter_chain_match.transport_protocol,
        "action": c.action.kind(),
        "target": c.action.target(),
        "tls_terminated": c.tls.is_some(),
    })
}
