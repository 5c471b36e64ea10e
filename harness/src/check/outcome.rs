//! What a check found that `--fail-on` can fail on, and what changes between versions, as
//! sentences a release note can quote (`1.19.6: https and tls-api Conflicted (ProtocolConflict)`,
//! `1.20.1: api.example.test on 443 stops answering (reset)`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::answer::Reply;
use super::types::{GatewayCheck, VersionResult};
use crate::judge::ConditionObs;

/// The things `--fail-on` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailOn {
    Conflicted,
    NotAccepted,
    NotProgrammed,
    RouteNotAccepted,
    EnvoyRejected,
    AnswerChanged,
    /// A route's backends are not resolved on some parent (`ResolvedRefs` not True).
    RouteNotResolved,
    /// A hostname a listener or a route claims answers nothing on a port it is published on (no
    /// certificate on a TLS port, no HTTP answer at all on an HTTP port).
    Unreachable,
    /// An answer differs from the baseline version's.
    TrafficChanged,
    /// A Gateway, listener or route condition differs from the baseline version's.
    StatusChanged,
}

impl FailOn {
    pub const ALL: [FailOn; 10] = [
        FailOn::Conflicted,
        FailOn::NotAccepted,
        FailOn::NotProgrammed,
        FailOn::RouteNotAccepted,
        FailOn::EnvoyRejected,
        FailOn::AnswerChanged,
        FailOn::RouteNotResolved,
        FailOn::Unreachable,
        FailOn::TrafficChanged,
        FailOn::StatusChanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Conflicted => "conflicted",
            FailOn::NotAccepted => "not-accepted",
            FailOn::NotProgrammed => "not-programmed",
            FailOn::RouteNotAccepted => "route-not-accepted",
            FailOn::EnvoyRejected => "envoy-rejected",
            FailOn::AnswerChanged => "answer-changed",
            FailOn::RouteNotResolved => "route-not-resolved",
            FailOn::Unreachable => "unreachable",
            FailOn::TrafficChanged => "traffic-changed",
            FailOn::StatusChanged => "status-changed",
        }
    }

    pub fn parse(s: &str) -> Result<FailOn, String> {
        FailOn::ALL
            .iter()
            .copied()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("--fail-on {s:?}: not one of {}", FailOn::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")))
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing that happened, on one version, of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub kind: FailOn,
    pub version: String,
    pub what: String,
}

fn cond<'a>(cs: &'a [ConditionObs], t: &str) -> Option<&'a ConditionObs> {
    cs.iter().find(|c| c.type_ == t)
}

fn reason(c: &ConditionObs) -> String {
    crate::words::condition_value(&c.status, &c.reason)
}

pub use crate::words::and_list;
use crate::words::envoy_listener;

/// Everything on one version that `--fail-on` names, except `answer-changed` (a change between
/// versions, see [`changes`]).
pub fn events(r: &VersionResult) -> Vec<Event> {
    let mut out = Vec::new();
    let mut ev = |kind: FailOn, what: String| out.push(Event { kind, version: r.version.clone(), what });
    let mut conflicted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (l, cs) in &r.listeners {
        if let Some(c) = cond(cs, "Conflicted").filter(|c| c.status == "True") {
            conflicted.entry(c.reason.clone()).or_default().push(l.clone());
        }
    }
    for (reason, ls) in &conflicted {
        ev(FailOn::Conflicted, crate::words::conflicted(ls, reason));
    }
    for (what, t, kind) in [("Accepted", "Accepted", FailOn::NotAccepted), ("Programmed", "Programmed", FailOn::NotProgrammed)] {
        if let Some(c) = cond(&r.gateway, t).filter(|c| c.status != "True") {
            ev(kind, format!("Gateway {what} {}", reason(c)));
        }
        for (l, cs) in &r.listeners {
            if let Some(c) = cond(cs, t).filter(|c| c.status != "True") {
                ev(kind, format!("listener {l} {what} {}", reason(c)));
            }
        }
    }
    for (route, parent, cs) in &r.routes {
        if let Some(c) = cond(cs, "Accepted").filter(|c| c.status != "True") {
            ev(FailOn::RouteNotAccepted, format!("route {route} on {parent} Accepted {}", reason(c)));
        }
        if let Some(c) = cond(cs, "ResolvedRefs").filter(|c| c.status != "True") {
            ev(FailOn::RouteNotResolved, format!("route {route} on {parent} ResolvedRefs {}", reason(c)));
        }
    }
    // A route the API server refuses is not there at all: as good as not accepted.
    for x in &r.refused {
        ev(FailOn::RouteNotAccepted, format!("refused by the API server: {}", super::refused_line(x)));
    }
    if let Some(e) = &r.cec_rejected {
        ev(FailOn::EnvoyRejected, format!("the agent refuses the CiliumEnvoyConfig ({e})"));
    }
    for e in &r.envoy {
        if let Some(err) = &e.error {
            ev(FailOn::EnvoyRejected, format!("Envoy refuses its {}: {}", envoy_listener(&e.name), first_line(err)));
        }
    }
    out
}

/// Claimed names that answer nothing on one version, one event per port: `api.example.org and
/// dashboard.example.org on 443 answer nothing (claimed by listener tls-api, HTTPRoute dashboard)`;
/// a plain HTTP name that gets no HTTP answer at all is `http://NAME` (a 404 is an answer).
pub fn unreachable(check: &GatewayCheck, r: &VersionResult) -> Vec<Event> {
    let mut per_port: BTreeMap<u16, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for (k, a) in &r.answers {
        let Some(who) = check.derived.claims.get(k) else { continue };
        if !a.is_nothing() {
            continue;
        }
        let slot = per_port.entry(k.port.get()).or_default();
        slot.0.push(k.name());
        for w in who {
            if !slot.1.contains(w) {
                slot.1.push(w.clone());
            }
        }
    }
    per_port
        .into_iter()
        .map(|(port, (names, who))| Event {
            kind: FailOn::Unreachable,
            version: r.version.clone(),
            what: format!("{} on {port} answer nothing (claimed by {})", and_list(&names), who.join(", ")),
        })
        .collect()
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 160 { format!("{}...", l.chars().take(160).collect::<String>()) } else { l.to_string() }
}

/// How an answer reads in a sentence.
pub fn reply_text(check: &GatewayCheck, r: &Reply) -> String {
    match r {
        Reply::Certificate { cert } => check.label(cert),
        Reply::Nothing { .. } => r.nothing_text(),
        Reply::Http { status, backend: Some(b), .. } => format!("{status} from {}", check.backend_label(b)),
        Reply::Http { status, location: Some(l), backend: None } => format!("{status} to {l}"),
        Reply::Http { status, location: None, backend: None } => format!("{status} (no backend)"),
        Reply::Unknown { sha256 } => format!("an unknown certificate (sha256 {sha256})"),
        Reply::LocalError => "not observed (this machine's probe failed)".into(),
    }
}

/// A change between two consecutive versions, as a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub version: String,
    /// Whether it is a change of an answer (what `answer-changed` fails on).
    pub answer: bool,
    pub sentence: String,
}

/// What changes from each version to the next, in version order.
pub fn changes(check: &GatewayCheck) -> Vec<Change> {
    let mut out = Vec::new();
    for w in check.versions.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let v = &b.version;
        let mut say = |answer: bool, s: String| out.push(Change { version: v.clone(), answer, sentence: format!("{v}: {s}") });
        // Conflicts that appear and disappear, grouped by reason.
        let conf = |r: &VersionResult| -> BTreeMap<String, String> {
            r.listeners
                .iter()
                .filter_map(|(l, cs)| cond(cs, "Conflicted").filter(|c| c.status == "True").map(|c| (l.clone(), c.reason.clone())))
                .collect()
        };
        let (ca, cb) = (conf(a), conf(b));
        let mut new: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (l, reason) in &cb {
            if ca.get(l) != Some(reason) {
                new.entry(reason).or_default().push(l.clone());
            }
        }
        let order = |ls: &mut Vec<String>| {
            let pos = |n: &String| b.listeners.iter().position(|(l, _)| l == n).unwrap_or(usize::MAX);
            ls.sort_by_key(pos);
        };
        for (reason, mut ls) in new {
            order(&mut ls);
            say(false, crate::words::conflicted(&ls, reason));
        }
        let mut gone: Vec<String> = ca.keys().filter(|l| !cb.contains_key(*l)).cloned().collect();
        if !gone.is_empty() {
            order(&mut gone);
            say(false, crate::words::no_longer_conflicted(&gone));
        }
        // Accepted and Programmed of the Gateway and of listeners that did not just become
        // Conflicted (that sentence already says it).
        for t in ["Accepted", "Programmed"] {
            let g = |r: &VersionResult| cond(&r.gateway, t).map(reason);
            if g(a) != g(b) {
                say(false, format!("Gateway {t} {}", g(b).unwrap_or_else(|| "absent".into())));
            }
            for (l, cs) in &b.listeners {
                let before = a.listeners.iter().find(|(x, _)| x == l).and_then(|(_, cs)| cond(cs, t)).map(reason);
                let after = cond(cs, t).map(reason);
                let just_conflicted = cb.contains_key(l) && !ca.contains_key(l);
                if before != after && !just_conflicted {
                    say(false, format!("listener {l} {t} {}", after.unwrap_or_else(|| "absent".into())));
                }
            }
        }
        for (route, parent, cs) in &b.routes {
            let before =
                a.routes.iter().find(|(r, p, _)| r == route && p == parent).and_then(|(_, _, cs)| cond(cs, "Accepted")).map(reason);
            let after = cond(cs, "Accepted").map(reason);
            if before != after {
                say(false, format!("route {route} on {parent} Accepted {}", after.unwrap_or_else(|| "absent".into())));
            }
        }
        // Envoy's layout.
        for e in &b.envoy {
            let chains = |x: &super::types::EnvoyRow| x.observed_chains.unwrap_or(x.chains.len());
            match a.envoy.iter().find(|x| x.name == e.name) {
                Some(x) if chains(x) != chains(e) => {
                    say(false, format!("{} carries {} filter chains instead of {}", envoy_listener(&e.name), chains(e), chains(x)))
                }
                None => say(false, format!("Envoy gets a new {} ({} filter chains)", envoy_listener(&e.name), chains(e))),
                _ => {}
            }
            if e.error.is_some() && a.envoy.iter().find(|x| x.name == e.name).is_none_or(|x| x.error.is_none()) {
                say(false, format!("Envoy refuses its {}", envoy_listener(&e.name)));
            }
        }
        for x in &a.envoy {
            if !b.envoy.iter().any(|e| e.name == x.name) {
                say(false, format!("Envoy no longer gets its {}", envoy_listener(&x.name)));
            }
        }
        // Answers.
        let before: BTreeMap<_, _> = a.answers.iter().map(|(k, r)| (k, r)).collect();
        for (k, r) in &b.answers {
            let Some(old) = before.get(k) else { continue };
            if super::types::same_answer(a, b, k, old, r) {
                continue;
            }
            let s = match (old.is_nothing(), r.is_nothing()) {
                (false, true) => format!("{k} stops answering ({})", r.how_text()),
                (true, false) => format!("{k} starts answering with {}", reply_text(check, r)),
                (true, true) => format!("{k} now ends {} instead of {}", r.how_text(), old.how_text()),
                (false, false) => format!("{k} answers with {} instead of {}", reply_text(check, r), reply_text(check, old)),
            };
            say(true, s);
        }
    }
    out
}
