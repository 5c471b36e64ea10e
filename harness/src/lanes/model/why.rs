//! Why a listener is conflicted or refused, in the words a reviewer needs: the pair, where
//! their hostnames meet, Cilium's own message, the model rule, the upstream function it
//! mirrors at a tag, and the catalogue cases that show a layout without it. Pure: computed from
//! the model's input and a version, so `explain` and `check` say the same thing.

use super::hostnames::sni_intersection;
use super::input::{GatewayInput, Listener, Origin};
use super::rules::{self, Rule};
use super::status::{self, ConflictPair};
use super::upstream::{self, Upstream};
use crate::case::CiliumVersion;

/// Catalogue cases (`cases/NAME`) that show a layout without a rule's outcome: a near miss that
/// the rule leaves alone. The unit tests load each one and check that, at every pinned version
/// the rule holds for, the model finds nothing of the rule there while the case has the shape
/// the rule looks at.
pub const WITHOUT: &[(&str, &[&str])] = &[
    // Per-hostname terminate listeners that leave the passthrough names out; passthrough moved
    // to its own port; terminate and passthrough on one port with no hostname in common.
    ("protocol-conflict", &["dns01-recommended-option1", "passthrough-second-port-split", "http01-after-withdrawal"]),
    // Several HTTP listeners on one port, each with its own hostname.
    ("hostname-conflict", &["edge-mode"]),
];

/// The cases that show a layout without `rule`'s outcome.
pub fn without(rule: &Rule) -> &'static [&'static str] {
    WITHOUT.iter().find(|(id, _)| *id == rule.id).map(|(_, cs)| *cs).unwrap_or(&[])
}

/// One listener the other conflicts with, and the name where their hostnames meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meets {
    pub other: String,
    pub hostname: String,
    /// Kept by an earlier source; only the listener the [`Why`] is about loses.
    pub across_sources: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhyKind {
    /// Conflicted with each of `others` on `port`.
    Conflict { reason: String, port: u16, hostname: String, others: Vec<Meets> },
    /// Refused by validation: the conditions it gets (`ResolvedRefs False/InvalidRouteKinds`),
    /// whether validation invalidates the listener, and whether an invalid one still reaches
    /// translation with its certificate (1.19.x: rules::INVALID_CHAIN_KEPT).
    Refused { conditions: Vec<String>, invalid: bool, kept: bool },
}

/// One root cause, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Why {
    /// The listener's id (`ls/name` for a ListenerSet's): for a conflict the one most pairs
    /// share; for a refusal every listener refused the same way, in the Gateway's order.
    pub listeners: Vec<String>,
    pub kind: WhyKind,
    /// Cilium's message(s) on the listener.
    pub messages: Vec<String>,
    pub rule: &'static Rule,
    pub upstream: Option<&'static Upstream>,
    pub without: &'static [&'static str],
}

fn host(l: &Listener) -> String {
    l.hostname.clone().unwrap_or_else(|| "(no hostname: every name)".into())
}

/// Conflicts, each unordered pair once, grouped around the listener with most of them (a
/// wildcard that meets three passthrough listeners is one cause, not six lines).
fn conflict_whys(gw: &GatewayInput, v: &CiliumVersion) -> Vec<Why> {
    let pairs: Vec<ConflictPair> = status::conflict_pairs(gw, v);
    // Cilium's message on each listener is the last pair's (its status map is overwritten).
    let message_of = |id: &str| pairs.iter().rev().find(|p| p.listener == id).map(|p| p.message.clone()).unwrap_or_default();
    let mut open: Vec<&ConflictPair> = Vec::new();
    for p in &pairs {
        if !open.iter().any(|q| q.listener == p.other && q.other == p.listener) {
            open.push(p);
        }
    }
    let by_id = |id: &str| gw.listeners.iter().find(|l| l.id == id);
    let order = |id: &str| gw.listeners.iter().position(|l| l.id == id).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    while !open.is_empty() {
        let count = |id: &str| open.iter().filter(|p| p.listener == id || p.other == id).count();
        let mut ids: Vec<&str> = open.iter().flat_map(|p| [p.listener.as_str(), p.other.as_str()]).collect();
        ids.sort_by_key(|id| (std::cmp::Reverse(count(id)), order(id)));
        let hub = ids[0].to_string();
        let (mine, rest): (Vec<&ConflictPair>, Vec<&ConflictPair>) = open.into_iter().partition(|p| p.listener == hub || p.other == hub);
        open = rest;
        let Some(h) = by_id(&hub) else { continue };
        let first = mine[0];
        let others: Vec<Meets> = mine
            .iter()
            .filter_map(|p| {
                let other = if p.listener == hub { &p.other } else { &p.listener };
                let o = by_id(other)?;
                Some(Meets {
                    other: o.id.clone(),
                    hostname: sni_intersection(h.hostname.as_deref(), o.hostname.as_deref()).unwrap_or_else(|| "*".into()),
                    across_sources: p.across_sources,
                })
            })
            .collect();
        let mut messages = vec![message_of(&hub)];
        messages.retain(|m| !m.is_empty());
        if first.across_sources {
            messages.push("Listener has a conflict".into());
        }
        out.push(Why {
            listeners: vec![hub.clone()],
            kind: WhyKind::Conflict { reason: first.reason.clone(), port: h.port.get(), hostname: host(h), others },
            messages,
            rule: first.rule,
            upstream: upstream::mirrored(first.rule, v, first.across_sources),
            without: without(first.rule),
        });
    }
    out
}

/// Listeners validation refuses or leaves unresolved, with Cilium's messages.
fn refused_whys(gw: &GatewayInput, v: &CiliumVersion) -> Vec<Why> {
    let mut out = Vec::new();
    let translated = status::listener_statuses(gw, v, &status::conflicts(gw, v)).translated;
    for l in &gw.listeners {
        let val = status::validate(gw, l, v);
        if val.valid && val.conds.is_empty() {
            continue;
        }
        // The rule that decided the listener's fate: what invalidates it, else what it reports.
        let rule = if !val.valid && rules::CERT_REF_INVALIDATES.applies(v) && val.rules.contains(&&rules::CERT_REF_CHECK) {
            &rules::CERT_REF_INVALIDATES
        } else {
            match val.rules.last() {
                Some(r) => *r,
                None => continue,
            }
        };
        let mut messages: Vec<String> = val.conds.iter().map(|c| c.message.clone()).chain(val.messages.iter().cloned()).collect();
        messages.dedup();
        let kind = WhyKind::Refused {
            conditions: val.conds.iter().map(|c| format!("{} {}/{}", c.type_, c.status, c.reason)).collect(),
            invalid: !val.valid,
            kept: !val.valid && translated.get(&l.id).is_some_and(|secrets| !secrets.is_empty()),
        };
        // Listeners refused the same way are one cause, said once.
        if let Some(same) = out.iter_mut().find(|w: &&mut Why| w.kind == kind && w.messages == messages && w.rule.id == rule.id) {
            same.listeners.push(l.id.clone());
            continue;
        }
        out.push(Why {
            listeners: vec![l.id.clone()],
            kind,
            messages,
            rule,
            upstream: upstream::mirrored(rule, v, false),
            without: without(rule),
        });
    }
    out
}

/// Every conflicted or refused listener of the Gateway on `v`, one cause once.
pub fn whys(gw: &GatewayInput, v: &CiliumVersion) -> Vec<Why> {
    let mut out = conflict_whys(gw, v);
    out.extend(refused_whys(gw, v));
    out
}

fn listener_text(gw: &GatewayInput, id: &str) -> String {
    match gw.listeners.iter().find(|l| l.id == id).map(|l| &l.origin) {
        Some(Origin::ListenerSet { namespace, name }) => {
            format!("{} of ListenerSet {namespace}/{name}", id.rsplit('/').next().unwrap_or(id))
        }
        _ => id.to_string(),
    }
}

fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

impl Why {
    /// The headline and its indented details, as `explain` and `check` print them.
    pub fn lines(&self, gw: &GatewayInput) -> Vec<String> {
        let all: Vec<String> = self.listeners.iter().map(|l| listener_text(gw, l)).collect();
        let me = and_list(&all);
        let mut out = Vec::new();
        match &self.kind {
            WhyKind::Conflict { reason, port, hostname, others } => {
                let names: Vec<String> = others.iter().map(|m| listener_text(gw, &m.other)).collect();
                let verb = if others.iter().all(|m| m.across_sources) {
                    format!("listener {me} loses to {} (an earlier source, kept)", and_list(&names))
                } else {
                    format!("listener {me} conflicts with {}", and_list(&names))
                };
                out.push(format!("{verb} on port {port}: Conflicted {reason}"));
                let meets: Vec<String> = others.iter().map(|m| format!("{} ({})", m.hostname, listener_text(gw, &m.other))).collect();
                out.push(format!("  hostnames: {me} {hostname} meets {}", and_list(&meets)));
            }
            WhyKind::Refused { conditions, invalid, kept } => {
                let fate = match (invalid, kept) {
                    (true, true) => "refused (still translated, with its TLS chain)",
                    (true, false) => "refused (not translated)",
                    _ => "unresolved (still translated)",
                };
                let noun = if all.len() > 1 { "listeners" } else { "listener" };
                out.push(format!("{noun} {me} {fate}: {}", conditions.join(", ")));
            }
        }
        for m in &self.messages {
            out.push(format!("  Cilium: {m:?}"));
        }
        out.push(format!("  rule: {} [{}; {}]: {}", self.rule.id, self.rule.versions, self.rule.provenance.as_str(), self.rule.says));
        match self.upstream {
            Some(u) => out.push(format!("  upstream: {}", u.text())),
            None => out.push(format!("  upstream: {}", self.rule.source)),
        }
        if let WhyKind::Refused { kept: true, .. } = self.kind {
            let r = &rules::INVALID_CHAIN_KEPT;
            out.push(format!("  translated: {} [{}; {}]: {}", r.id, r.versions, r.provenance.as_str(), r.says));
            let at = |v: &str| CiliumVersion::parse(v).ok();
            // The rule holds on 1.19.x only; its function is the same at every tag read there.
            let up = at("1.19.6").and_then(|v| upstream::mirrored(r, &v, false));
            out.push(format!("  upstream: {}", up.map(|u| u.text()).unwrap_or_else(|| r.source.to_string())));
        }
        if !self.without.is_empty() {
            let cases: Vec<String> = self.without.iter().map(|c| format!("cases/{c}")).collect();
            out.push(format!("  a layout without it: {}", cases.join(", ")));
        }
        out
    }
}
