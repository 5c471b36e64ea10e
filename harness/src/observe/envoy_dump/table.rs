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
        let addresses = dash_if_empty(list(&l.addresses));
        let head = |rest: [String; 6]| -> [String; 9] {
            let [sni, transport, dport, action, target, tls] = rest;
            [cell(&l.name), state.clone(), addresses.clone(), sni, transport, dport, action, target, tls]
        };
        for c in &l.filter_chains {
            let sni = if c.filter_chain_match.server_names.is_empty() { "*".to_string() } else { list(&c.filter_chain_match.server_names) };
            rows.push(head(chain_cells(c, sni)));
        }
        if let Some(d) = &l.default_filter_chain {
            rows.push(head(chain_cells(d, "(default)".to_string())));
        }
        if l.filter_chains.is_empty() && l.default_filter_chain.is_none() {
            rows.push(head(std::array::from_fn(|_| "-".to_string())));
        }
    }

    // Every value from the dump went through `cell`: quoted when it holds a space, a quote or a
    // comma (it would read as a column break or another list item), control characters escaped.
    let mut table: Vec<Vec<String>> = vec![HEADER.map(str::to_string).to_vec()];
    table.extend(rows.into_iter().map(|r| r.to_vec()));
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

/// A value from the dump, for a cell (see [`crate::term::cell`]).
fn cell(s: &str) -> String {
    crate::term::cell(s).into_owned()
}

/// Values from the dump, comma-separated in one cell.
fn list(items: &[String]) -> String {
    items.iter().map(|s| cell(s)).collect::<Vec<_>>().join(",")
}

fn chain_cells(c: &ChainSummary, sni: String) -> [String; 6] {
    let m = &c.filter_chain_match;
    let transport = m.transport_protocol.as_deref().map_or_else(|| "*".to_string(), cell);
    let dport = m.destination_port.map_or_else(|| "*".to_string(), |p| p.to_string());
    let target = match &c.action {
        super::ChainAction::Other { filters } => dash_if_empty(list(filters)),
        super::ChainAction::TcpProxy { cluster: None, weighted_clusters } if !weighted_clusters.is_empty() => weighted_clusters
            .iter()
            .map(|w| match w.weight {
                Some(weight) => format!("{}({weight})", cell(&w.name)),
                None => cell(&w.name),
            })
            .collect::<Vec<_>>()
            .join(","),
        action => action.target().map_or_else(|| "-".to_string(), |t| cell(&t)),
    };
    let tls = match &c.tls {
        None => "-".to_string(),
        Some(t) if t.certificates.is_empty() => "(no certificate)".to_string(),
        Some(t) => list(&t.certificates.iter().map(|s| s.label()).collect::<Vec<_>>()),
    };
    [sni, transport, dport, c.action.kind().to_string(), target, tls]
}

fn dash_if_empty(s: String) -> String {
    if s.is_empty() { "-".to_string() } else { s }
}
