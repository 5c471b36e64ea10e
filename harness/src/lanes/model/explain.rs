//! `layout-gate explain`: the predicted layout as a table, each chain with the rule that made
//! it, then the statuses, then the rules that shaped the whole.

use std::fmt::Write;

use super::input::GatewayInput;
use super::input::PathMatch;
use super::rules;
use super::translate::{ChainAction, Prediction, RouteEntry, RouteTarget, Transport};
use crate::judge::ConditionObs;

fn conds(cs: &[ConditionObs]) -> String {
    cs.iter().map(|c| format!("{}={}", c.type_, crate::words::condition_value(&c.status, &c.reason))).collect::<Vec<_>>().join("  ")
}

fn route(r: &RouteEntry) -> String {
    let path = match &r.matcher.path {
        PathMatch::Prefix(p) if p == "/" => String::new(),
        PathMatch::Prefix(p) => format!("{p}*"),
        PathMatch::Exact(p) => format!("={p}"),
        PathMatch::Regex(p) => format!("~{p}"),
    };
    let extra = r.matcher.headers.len() + r.matcher.query.len() + usize::from(r.matcher.method.is_some());
    let m = if extra > 0 { format!("{path}[+{extra}]") } else { path };
    let target = match &r.target {
        RouteTarget::Services { services } => services.iter().map(|(s, _)| s.service.clone()).collect::<Vec<_>>().join("+"),
        RouteTarget::Redirect { scheme, status, .. } => format!("redirect {} {status}", scheme.as_deref().unwrap_or("")),
        RouteTarget::NoBackends => "500".into(),
    };
    if m.is_empty() { target } else { format!("{m}:{target}") }
}

pub fn render(case: &str, gw: &GatewayInput, p: &Prediction) -> String {
    render_at(&format!("case {case}"), &format!("{}/{}", gw.namespace, gw.name), gw, p, None, &|s| s.to_string())
}

/// [`render`] of `what` (`case NAME`, `manifests FILE`) whose Gateway is called `gateway`
/// (`NAMESPACE/NAME`, and where it was read), the chain table fitted to `width` columns
/// (`None`: every cell whole, `--wide`); `rename` turns each of its cells into the reader's
/// names before it is fitted (`check`'s derived namespaces back to the input's). The status
/// lines are never cut: they are the answer.
pub fn render_at(
    what: &str,
    gateway: &str,
    gw: &GatewayInput,
    p: &Prediction,
    width: Option<usize>,
    rename: &dyn Fn(&str) -> String,
) -> String {
    let table = |rows: &[Vec<String>]| {
        let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| rename(c)).collect()).collect();
        crate::table::render_fit(&rows, width)
    };
    let mut s = String::new();
    let _ = writeln!(s, "MODEL PREDICTION (not an observation): {what}, Cilium {}", p.version);
    let _ = writeln!(s, "Gateway {gateway}\n");
    let mut rows = vec![["LISTENER", "PORTS", "SNI", "TRANSPORT", "ACTION", "TARGET", "TLS", "RULE"].map(String::from).to_vec()];
    for l in &p.envoy {
        let ports = l.ports.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");
        if l.chains.is_empty() {
            rows.push(vec![l.name.clone(), ports.clone(), "-".into(), "-".into(), "-".into(), "-".into(), "-".into(), l.rule.id.into()]);
        }
        for c in &l.chains {
            let (action, target) = match &c.action {
                ChainAction::TcpProxy { backends, .. } => ("tcp_proxy", backends.iter().map(|b| b.cluster()).collect::<Vec<_>>().join(",")),
                ChainAction::Http { route_config, vhosts } => {
                    let hosts: Vec<String> = vhosts
                        .iter()
                        .map(|v| format!("{}->{}", v.domains.join("|"), v.routes.iter().map(route).collect::<Vec<_>>().join(" ")))
                        .collect();
                    ("http", if hosts.is_empty() { route_config.clone() } else { format!("{route_config} ({})", hosts.join(", ")) })
                }
            };
            rows.push(vec![
                l.name.clone(),
                ports.clone(),
                if c.server_names.is_empty() { "*".into() } else { c.server_names.join(",") },
                if c.transport == Transport::Tls { "tls".into() } else { "raw_buffer".into() },
                action.into(),
                target,
                match (&c.tls_secret, c.never_served) {
                    (Some(s), true) => format!("{s} (never served)"),
                    (Some(s), false) => s.clone(),
                    (None, _) => "-".into(),
                },
                c.rule.id.into(),
            ]);
        }
    }
    if p.envoy.is_empty() {
        let _ = writeln!(
            s,
            "Envoy gets no listener for this Gateway{}\n",
            p.cec_rejected.as_ref().map(|r| format!(": the agent rejects the CiliumEnvoyConfig ({r})")).unwrap_or_default()
        );
    } else {
        s.push_str(&table(&rows));
        s.push('\n');
    }
    let _ = writeln!(s, "Listener status:");
    let mut rows = Vec::new();
    for l in gw.listeners.iter().filter(|l| l.origin == super::input::Origin::Gateway) {
        rows.push(vec![
            format!("  {}", l.name),
            format!("{}:{}", l.protocol.as_str(), l.port),
            conds(p.listeners.get(&l.name).map(Vec::as_slice).unwrap_or(&[])),
        ]);
    }
    if !rows.is_empty() {
        s.push_str(&crate::table::render(&rows));
    }
    let _ = writeln!(s, "  gateway: {}", conds(&p.gateway));
    for (ls, (own, listeners)) in &p.listener_sets {
        let _ = writeln!(s, "  listenerset {ls}: {}", conds(own));
        for (l, cs) in listeners {
            let _ = writeln!(s, "    {l}: {}", conds(cs));
        }
    }
    if !p.routes.is_empty() {
        let _ = writeln!(s, "\nRoute status:");
        for (r, parents) in &p.routes {
            for (parent, cs) in parents {
                let _ = writeln!(s, "  {r} on {parent}: {}", conds(cs));
            }
        }
    }
    // Why each conflicted or refused listener is so: the pair, the hostnames, Cilium's message,
    // the rule and the upstream function it mirrors.
    let whys = crate::case::CiliumVersion::parse(&p.version).map(|v| super::why::whys(gw, &v)).unwrap_or_default();
    if !whys.is_empty() {
        let _ = writeln!(s, "\nWhy:");
        for w in &whys {
            for line in w.lines(gw) {
                let _ = writeln!(s, "  {line}");
            }
        }
    }
    let _ = writeln!(s, "\nRules that shaped this prediction:");
    for (id, says) in &p.notes {
        let r = rules::ALL.iter().find(|r| r.id == id);
        match r {
            Some(r) => {
                let _ = writeln!(s, "  {id} [{}; {}: {}]: {says}", r.versions, r.provenance.as_str(), r.source);
            }
            None => {
                let _ = writeln!(s, "  {id}: {says}");
            }
        }
    }
    let mut used: Vec<&str> = p.envoy.iter().flat_map(|l| l.chains.iter().map(|c| c.rule.id)).collect();
    used.sort();
    used.dedup();
    // A rule already said among the notes (invalid-listener-chain-kept) is said once.
    used.retain(|id| !p.notes.iter().any(|(n, _)| n == id));
    for id in used {
        if let Some(r) = rules::ALL.iter().find(|r| r.id == id) {
            let _ = writeln!(s, "  {id} [{}; {}: {}]: {}", r.versions, r.provenance.as_str(), r.source, r.says);
        }
    }
    s
}
