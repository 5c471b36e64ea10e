//! What answers one (port, SNI): read from a real Envoy's answer (the probe's facts), or, with
//! `--no-envoy`, computed from the predicted chains the way Envoy picks a filter chain.

use serde::Serialize;

use super::derive::MatrixKey;
use crate::case::NothingHow;
use crate::judge::{OutcomeClass, ProbeFact};
use crate::lanes::model::input::PathMatch;
use crate::lanes::model::translate::{ChainAction, EnvoyListener, Prediction, RouteEntry, RouteTarget, Transport, Vhost};
use crate::types::{CertName, Fingerprint};

/// The answer to one handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "answer")]
pub enum Reply {
    /// This generated certificate answered.
    Certificate { cert: CertName },
    /// No certificate answered, and how the attempt ended.
    Nothing {
        how: NothingHow,
        #[serde(skip_serializing_if = "Option::is_none")]
        alert: Option<String>,
    },
    /// A plain HTTP request was answered: the status, the redirect's `Location` when there is
    /// one, and the backend that named itself (none: Envoy answered itself, e.g. 404 when no
    /// virtual host or route takes the request).
    Http {
        status: u16,
        #[serde(skip_serializing_if = "Option::is_none")]
        location: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        backend: Option<String>,
    },
    /// A certificate the run did not generate (should not happen; kept rather than hidden).
    Unknown { sha256: String },
    /// This machine failed the probe (out of file descriptors, memory): nothing was observed,
    /// so nothing is claimed about what the server would answer.
    LocalError,
}

impl Reply {
    pub fn nothing(how: NothingHow) -> Reply {
        Reply::Nothing { how, alert: None }
    }

    pub fn is_nothing(&self) -> bool {
        matches!(self, Reply::Nothing { .. })
    }

    /// `nothing (reset)`, `nothing (alert unrecognized_name)`.
    pub fn how_text(&self) -> String {
        match self {
            Reply::Nothing { how, alert: Some(a) } => format!("{} {a}", how.as_str()),
            Reply::Nothing { how, alert: None } => how.as_str().to_string(),
            _ => String::new(),
        }
    }

    /// `nothing (reset)`, in the words `report` uses too ([`crate::words::nothing`]).
    pub fn nothing_text(&self) -> String {
        match self {
            Reply::Nothing { how, alert } => crate::words::nothing(how.as_str(), alert.as_deref()),
            _ => String::new(),
        }
    }

    /// The judge's facts of one observation, read as a reply.
    pub fn from_fact(f: &ProbeFact, name_of: &dyn Fn(&Fingerprint) -> Option<CertName>) -> Reply {
        let how = match f.outcome {
            OutcomeClass::Certificate => {
                return match f.leaf.as_ref() {
                    Some(fp) => match name_of(fp) {
                        Some(cert) => Reply::Certificate { cert },
                        None => Reply::Unknown { sha256: fp.hex() },
                    },
                    None => Reply::Unknown { sha256: String::new() },
                };
            }
            // Only a plain HTTP probe is answered without a handshake.
            OutcomeClass::Answered => {
                return Reply::Http { status: f.http_status.unwrap_or(0), location: None, backend: f.served_by.clone() };
            }
            OutcomeClass::Closed => NothingHow::Closed,
            OutcomeClass::Alert => NothingHow::Alert,
            OutcomeClass::Reset => NothingHow::Reset,
            OutcomeClass::Timeout => NothingHow::Timeout,
            OutcomeClass::Refused => NothingHow::Refused,
            OutcomeClass::LocalError => return Reply::LocalError,
        };
        Reply::Nothing { how, alert: f.alert.clone() }
    }
}

/// The reply of a probe's last observation: [`Reply::from_fact`], with a plain HTTP answer's
/// `Location` read from the raw observation (the judge's facts do not keep it). `None`: nothing
/// was observed.
pub fn from_record(rec: &crate::evidence::ProbeRecord, name_of: &dyn Fn(&Fingerprint) -> Option<CertName>) -> Option<Reply> {
    let mut reply = Reply::from_fact(rec.facts.last()?, name_of);
    if let Reply::Http { location, .. } = &mut reply {
        *location = rec.observations.last().and_then(plain_location);
    }
    Some(reply)
}

/// The `Location` header of a raw plain HTTP observation's answer.
fn plain_location(raw: &serde_json::Value) -> Option<String> {
    use crate::observe::probe::{PlainObservation, PlainOutcome};
    match serde_json::from_value::<PlainObservation>(raw.clone()).ok()?.outcome {
        PlainOutcome::Answered(a) => a.headers.get("location").cloned(),
        _ => None,
    }
}

/// Whether Envoy would refuse `l`: two chains with the same match (Envoy's "multiple filter
/// chains with the same matching rules"), which the model lane sees as `error_state`.
pub fn duplicate_match(l: &EnvoyListener) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    for c in &l.chains {
        let names: Vec<&str> = if c.server_names.is_empty() { vec![""] } else { c.server_names.iter().map(String::as_str).collect() };
        for n in names {
            if !seen.insert((n, c.transport == Transport::Tls)) {
                let n = if n.is_empty() { "(no server_names)" } else { n };
                return Some(format!("two filter chains of {} match {n} the same way", l.name));
            }
        }
    }
    None
}

/// The chain Envoy picks for a TLS ClientHello with `sni` on one listener: exact server_name,
/// then the longest wildcard suffix, then chains without server_names; among those, the one
/// for transport `tls`. Envoy's matching does not fall back to a less specific level when the
/// more specific one has no chain for the transport.
fn pick<'a>(l: &'a EnvoyListener, sni: Option<&str>) -> Option<&'a crate::lanes::model::translate::Chain> {
    let with_names = |want: &str| l.chains.iter().filter(move |c| c.server_names.iter().any(|n| n == want)).collect::<Vec<_>>();
    let mut level = Vec::new();
    if let Some(s) = sni {
        level = with_names(s);
        let mut rest = s;
        while level.is_empty() {
            let Some((_, tail)) = rest.split_once('.') else { break };
            level = with_names(&format!("*.{tail}"));
            rest = tail;
        }
    }
    if level.is_empty() {
        level = l.chains.iter().filter(|c| c.server_names.is_empty()).collect();
    }
    level.into_iter().find(|c| c.transport == Transport::Tls)
}

/// The reply the predicted chains give `key`, with the names of the case's certificates:
/// `cert_of_secret` maps a Secret to its certificate, `cert_of_service` a passthrough Service.
pub fn from_chains(
    prediction: &Prediction,
    key: &MatrixKey,
    cert_of_secret: &dyn Fn(&str) -> Option<CertName>,
    cert_of_service: &dyn Fn(&str) -> Option<CertName>,
) -> Reply {
    if key.plain {
        return plain_from_chains(prediction, key);
    }
    let Some(l) = prediction.envoy.iter().find(|l| l.ports.contains(&key.port)) else {
        // No listener on the port: nothing is bound there.
        return Reply::nothing(NothingHow::Refused);
    };
    if duplicate_match(l).is_some() {
        // Envoy refuses the whole listener; on a first update nothing was bound before.
        return Reply::nothing(NothingHow::Refused);
    }
    let Some(chain) = pick(l, key.sni.as_ref().map(|s| s.as_str())) else {
        return Reply::nothing(NothingHow::Reset);
    };
    if chain.never_served {
        // Its Secret never arrives: Envoy resets the handshake (rules::INVALID_CHAIN_KEPT).
        return Reply::nothing(NothingHow::Reset);
    }
    let cert = match (&chain.action, &chain.tls_secret) {
        (ChainAction::TcpProxy { backends, .. }, _) => backends.first().and_then(|b| cert_of_service(&b.service)),
        (ChainAction::Http { .. }, Some(secret)) => cert_of_secret(secret),
        (ChainAction::Http { .. }, None) => None,
    };
    match cert {
        Some(cert) => Reply::Certificate { cert },
        // A passthrough to a Service with no backend, or TLS without a certificate: the
        // connection is accepted and then closed.
        None => Reply::nothing(NothingHow::Closed),
    }
}

/// The reply the predicted chains give a plain HTTP `GET /` with Host `key.sni` on `key.port`,
/// the way Envoy answers it: the listener's chain for a connection without TLS (`raw_buffer`,
/// no server_names), its virtual host for the Host, the first of its routes (in Cilium's order)
/// that matches the request, and what that route does.
fn plain_from_chains(prediction: &Prediction, key: &MatrixKey) -> Reply {
    match plain_route(prediction, key) {
        Ok((route, host)) => {
            target_replies(&route.target, host).into_iter().next().unwrap_or(Reply::Http { status: 500, location: None, backend: None })
        }
        Err(reply) => reply,
    }
}

/// A key whose answer is one of several, every reply it may get, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MayAnswer {
    pub key: MatrixKey,
    pub replies: Vec<Reply>,
    pub why: String,
}

/// Every reply a plain HTTP `GET /` with Host `key.sni` on `key.port` may get, when there is
/// more than one: Cilium may give the route that takes it another target
/// (`RouteEntry::may_instead`, rules::ROUTE_ORDER_UNFIXED), or it forwards to several backends
/// and Envoy picks one by weight. None when the answer is one.
pub fn plain_alternatives(prediction: &Prediction, key: &MatrixKey) -> Option<MayAnswer> {
    if !key.plain {
        return None;
    }
    let (route, host) = plain_route(prediction, key).ok()?;
    let mut replies: Vec<Reply> = Vec::new();
    for t in std::iter::once(&route.target).chain(&route.may_instead) {
        for r in target_replies(t, host) {
            if !replies.contains(&r) {
                replies.push(r);
            }
        }
    }
    if replies.len() < 2 {
        return None;
    }
    let why = if route.may_instead.is_empty() {
        format!(
            "the route (HTTPRoute {}) forwards to several backends and Envoy picks one by weight for each request",
            route.route.replace('+', ", ")
        )
    } else {
        format!(
            "HTTPRoutes {} match it alike and merge into one Envoy route; which comes first decides, and Cilium does not fix that order (rule {})",
            route.route.replace('+', ", "),
            crate::lanes::model::rules::ROUTE_ORDER_UNFIXED.id
        )
    };
    Some(MayAnswer { key: key.clone(), replies, why })
}

/// The route of the plain-HTTP chain that takes `GET /` with Host `key.sni` on `key.port`, and
/// that host; or the reply when no route does (Envoy refuses, resets or answers 404 itself).
fn plain_route<'a>(prediction: &'a Prediction, key: &'a MatrixKey) -> Result<(&'a RouteEntry, &'a str), Reply> {
    let Some(l) = prediction.envoy.iter().find(|l| l.ports.contains(&key.port)) else {
        return Err(Reply::nothing(NothingHow::Refused));
    };
    if duplicate_match(l).is_some() {
        return Err(Reply::nothing(NothingHow::Refused));
    }
    let host = key.sni.as_ref().map(|s| s.as_str()).unwrap_or("");
    let chain = l.chains.iter().find(|c| c.transport == Transport::RawBuffer && c.server_names.is_empty());
    let Some(ChainAction::Http { vhosts, .. }) = chain.map(|c| &c.action) else {
        // No chain takes a connection without TLS: Envoy closes it.
        return Err(Reply::nothing(NothingHow::Reset));
    };
    let envoy_404 = Reply::Http { status: 404, location: None, backend: None };
    let Some(vhost) = vhost_for(vhosts, host) else { return Err(envoy_404) };
    let Some(route) = vhost.routes.iter().find(|r| matches_get_root(r)) else { return Err(envoy_404) };
    Ok((route, host))
}

/// The replies one route target gives `GET /` with Host `host`: one per backend Envoy may pick
/// (weight above zero), the redirect, or Envoy's own 500.
fn target_replies(target: &RouteTarget, host: &str) -> Vec<Reply> {
    match target {
        RouteTarget::Services { services } => {
            let mut out: Vec<Reply> = Vec::new();
            for (s, _) in services.iter().filter(|(_, w)| *w > 0) {
                let r = Reply::Http { status: 200, location: None, backend: Some(s.service.clone()) };
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            if out.is_empty() {
                // Every weight is zero: no backend named itself (as before this was split out).
                out.push(Reply::Http { status: 200, location: None, backend: None });
            }
            out
        }
        RouteTarget::Redirect { scheme, hostname, path, prefix, port, status, .. } => {
            let scheme = scheme.as_deref().unwrap_or("http");
            // Envoy writes the port_redirect Cilium sets into Location, the scheme's own
            // included (rules::REDIRECT_PORT_EXPLICIT: Cilium's operator's Envoy answered
            // `https://<host>:443/`).
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let path = path.clone().or_else(|| prefix.clone()).unwrap_or_else(|| "/".into());
            vec![Reply::Http {
                status: *status,
                location: Some(format!("{scheme}://{}{port}{path}", hostname.as_deref().unwrap_or(host))),
                backend: None,
            }]
        }
        RouteTarget::NoBackends => vec![Reply::Http { status: 500, location: None, backend: None }],
    }
}

/// Envoy's virtual host for `host`: an exact domain, else the longest `*.suffix` one, else `*`.
fn vhost_for<'a>(vhosts: &'a [Vhost], host: &str) -> Option<&'a Vhost> {
    let has = |d: &str| vhosts.iter().find(|v| v.domains.iter().any(|x| x.eq_ignore_ascii_case(d)));
    if let Some(v) = has(host) {
        return Some(v);
    }
    let mut rest = host;
    while let Some((_, tail)) = rest.split_once('.') {
        if let Some(v) = has(&format!("*.{tail}")) {
            return Some(v);
        }
        rest = tail;
    }
    has("*")
}

/// Whether a route takes the probe's request: `GET /`, Host and nothing else worth matching.
fn matches_get_root(r: &RouteEntry) -> bool {
    let m = &r.matcher;
    let path = match &m.path {
        PathMatch::Exact(p) => p == "/",
        PathMatch::Prefix(p) => p.trim_end_matches('/').is_empty(),
        PathMatch::Regex(re) => regex_lite::Regex::new(&format!("^(?:{re})$")).is_ok_and(|x| x.is_match("/")),
    };
    path && m.method.as_deref().is_none_or(|x| x == "GET") && m.headers.is_empty() && m.query.is_empty()
}
