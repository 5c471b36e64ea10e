//! The human table, in the spirit of `istioctl proxy-config listeners -o wide`: one row per
//! filter chain, so a reader sees at a glance which SNI goes where and who holds the
//! certificate.

use super::{ChainSummary, DumpSummary, ListenerSummary};

const HEADER: [&str; 9] = ["LISTENER", "STATE", "ADDRESSES", "SNI", "TRANSPORT", "DPORT", "ACTION", "TARGET", "TLS"];

/// Renders the summary; listeners sorted by name (stable), chains in dump order, the default
/// chain last as `(default)`, then one `LISTENER: error: ...` line per rejected listener.
pub fn render_table(summary: &DumpSummary) -> String {
    let mut listeners: Vec<&ListenerSummary> = summary.listeners.iter().collect();
    listeners.sort_by(|a, b| a.name.cmp(&b.name));

    let mut rows: Vec<[String; 9]> = Vec::new();
    for l in &listeners {
        let state = std::iter::once(l.state).chain(l.other_states.iter().copied()).map(|s| s.as_str()).collect::<Vec<_>>().join("+");
        let addresses = dash_if_empty(l.addresses.join(","));
        let head = |rest: [String; 6]| -> [String; 9] {
            let [sni, transport, dport, action, target, tls] = rest;
            [l.name.clone(), state.clone(), addresses.clone(), sni, transport, dport, action, target, tls]
        };
        for c in &l.filter_chains {
            let sni =
                if c.filter_chain_match.server_names.is_empty() { "*".to_string() } else { c.filter_chain_match.server_names.join(",") };
            rows.push(head(chain_cells(c, sni)));
        }
        if let Some(d) = &l.default_filter_chain {
            rows.push(head(chain_cells(d, "(default)".to_string())));
        }
        if l.filter_chains.is_empty() && l.default_filter_chain.is_none() {
            rows.push(head(std::array::from_fn(|_| "-".to_string())));
        }
    }

    // Names and server_names come from the dump: escape control characters before measuring.
    let mut table: Vec<Vec<String>> = vec![HEADER.map(str::to_string).to_vec()];
    table.extend(rows.into_iter().map(|r| r.iter().map(|c| crate::term::line(c).into_owned()).collect()));
    let mut out = crate::table::render(&table);
    let errors: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.error.as_ref().map(|e| crate::term::line(&format!("{}: error: {e}", l.name)).into_owned()))
        .collect();
    if !errors.is_empty() {
        out.push('\n');
        for e in errors {
            out.push_str(&e);
            out.push('\n');
        }
    }
    out
}

fn chain_cells(c: &ChainSummary, sni: String) -> [String; 6] {
    let m = &c.filter_chain_match;
    let transport = m.transport_protocol.clone().unwrap_or_else(|| "*".to_string());
    let dport = m.destination_port.map_or_else(|| "*".to_string(), |p| p.to_string());
    let target = match &c.action {
        super::ChainAction::Other { filters } => dash_if_empty(filters.join(",")),
        action => action.target().unwrap_or_else(|| "-".to_string()),
    };
    let tls = match &c.tls {
        None => "-".to_string(),
        Some(t) if t.certificates.is_empty() => "(no certificate)".to_string(),
        Some(t) => t.certificates.iter().map(|s| s.label()).collect::<Vec<_>>().join(","),
    };
    [sni, transport, dport, c.action.kind().to_string(), target, tls]
}

fn dash_if_empty(s: String) -> String {
    if s.is_empty() { "-".to_string() } else { s }
}
