//! Statuses as Cilium writes them, version by version: the listener conflict checks, listener
//! and Gateway conditions, and route attachment with its conditions.

use std::collections::{BTreeMap, BTreeSet};

use super::hostnames::{route_matches_listener, sni_intersect};
use super::input::{BackendRef, FromNamespaces, GatewayInput, Listener, Protocol, Route, TlsMode};
use super::rules::{self, Rule};
use crate::case::CiliumVersion;
use crate::judge::ConditionObs;

fn cond(t: &str, status: &str, reason: &str, message: &str) -> ConditionObs {
    ConditionObs { type_: t.into(), status: status.into(), reason: reason.into(), message: message.into(), observed_generation: Some(1) }
}

/// Listeners marked conflicted, with the reason and the rule.
pub fn conflicts(gw: &GatewayInput, v: &CiliumVersion) -> BTreeMap<String, (String, String, &'static Rule)> {
    let mut out = BTreeMap::new();
    let ls = &gw.listeners;
    for (i, a) in ls.iter().enumerate() {
        for b in ls.iter().skip(i + 1) {
            if a.port != b.port {
                continue;
            }
            let is_terminate = |l: &Listener| l.protocol == Protocol::Https;
            let is_passthrough = |l: &Listener| l.protocol == Protocol::Tls && l.tls_mode == Some(TlsMode::Passthrough);
            let cross = (is_terminate(a) && is_passthrough(b)) || (is_terminate(b) && is_passthrough(a));
            if cross && rules::PROTOCOL_CONFLICT.applies(v) && sni_intersect(a.hostname.as_deref(), b.hostname.as_deref()) {
                let msg = |other: &Listener| {
                    format!(
                        "Listener conflicts with listener \"{}\": same port {} has overlapping HTTPS and TLS passthrough hostnames.",
                        other.name, a.port
                    )
                };
                out.entry(a.name.clone()).or_insert(("ProtocolConflict".to_string(), msg(b), &rules::PROTOCOL_CONFLICT));
                out.entry(b.name.clone()).or_insert(("ProtocolConflict".to_string(), msg(a), &rules::PROTOCOL_CONFLICT));
            } else if a.protocol == b.protocol && a.hostname == b.hostname && rules::HOSTNAME_CONFLICT.applies(v) {
                let msg =
                    |other: &Listener| format!("Listener conflicts with listener \"{}\": same port {} and hostname.", other.name, a.port);
                out.entry(a.name.clone()).or_insert(("HostnameConflict".to_string(), msg(b), &rules::HOSTNAME_CONFLICT));
                out.entry(b.name.clone()).or_insert(("HostnameConflict".to_string(), msg(a), &rules::HOSTNAME_CONFLICT));
            }
        }
    }
    out
}

/// Conditions of every listener and of the Gateway.
pub fn listener_conditions(
    gw: &GatewayInput,
    v: &CiliumVersion,
    conflicted: &BTreeMap<String, (String, String, &'static Rule)>,
) -> (BTreeMap<String, Vec<ConditionObs>>, Vec<ConditionObs>) {
    let mut out = BTreeMap::new();
    let mut any_valid = false;
    for l in &gw.listeners {
        let conds = if let Some((reason, message, _)) = conflicted.get(&l.name) {
            let mut c = vec![
                cond("Conflicted", "True", reason, message),
                cond(
                    "Accepted",
                    "False",
                    if rules::CONFLICTED_DROPPED.applies(v) { reason } else { "Invalid" },
                    &format!("Listener not valid. {message}"),
                ),
                cond("Programmed", "False", "Pending", "Address not ready yet"),
            ];
            if rules::CONFLICTED_DROPPED.applies(v) {
                c.push(cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved Refs"));
            }
            c
        } else {
            any_valid = true;
            let missing_secret = l.certificate_refs.iter().find(|s| !gw.secrets.contains(&(gw.namespace.clone(), s.to_string())));
            let resolved =
                if l.protocol == Protocol::Tls && l.kinds.iter().any(|k| k == "HTTPRoute") && rules::INVALID_ROUTE_KINDS.applies(v) {
                    cond("ResolvedRefs", "False", "InvalidRouteKinds", "Invalid route kinds")
                } else if let Some(s) = missing_secret {
                    cond("ResolvedRefs", "False", "InvalidCertificateRef", &format!("Secret {s} does not exist"))
                } else {
                    cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved Refs")
                };
            vec![
                resolved,
                cond("Accepted", "True", "Accepted", "Listener Accepted"),
                cond("Programmed", "True", "Programmed", "Listener Programmed"),
            ]
        };
        out.insert(l.name.clone(), conds);
    }
    let gateway = if any_valid {
        vec![
            cond("Accepted", "True", "Accepted", "Gateway successfully scheduled"),
            cond("Programmed", "True", "Programmed", "Gateway successfully reconciled"),
        ]
    } else {
        vec![
            cond("Accepted", "False", "ListenersNotValid", "no valid listener"),
            cond("Programmed", "False", "Invalid", "no valid listener"),
        ]
    };
    (out, gateway)
}

fn namespace_admitted(gw: &GatewayInput, l: &Listener, route_ns: &str) -> bool {
    match &l.from {
        FromNamespaces::Same => route_ns == gw.namespace,
        FromNamespaces::All => true,
        FromNamespaces::Selector { match_labels, expressions } => {
            let empty = BTreeMap::new();
            let labels = gw.namespaces.get(route_ns).unwrap_or(&empty);
            match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
                && expressions.iter().all(|e| match e.operator.as_str() {
                    "In" => labels.get(&e.key).is_some_and(|v| e.values.contains(v)),
                    "NotIn" => labels.get(&e.key).is_none_or(|v| !e.values.contains(v)),
                    "Exists" => labels.contains_key(&e.key),
                    "DoesNotExist" => !labels.contains_key(&e.key),
                    _ => false,
                })
        }
    }
}

fn kind_admitted(l: &Listener, kind: &str) -> bool {
    let protocol_ok = match kind {
        "HTTPRoute" => matches!(l.protocol, Protocol::Http | Protocol::Https),
        "TLSRoute" => l.protocol == Protocol::Tls,
        _ => false,
    };
    protocol_ok && (l.kinds.is_empty() || l.kinds.iter().any(|k| k == kind))
}

/// Where a route attached, and what Cilium writes on it.
#[derive(Debug, Clone, Default)]
pub struct Attachment {
    /// parent key -> listener names the route attached to through that parentRef.
    pub listeners: BTreeMap<String, Vec<String>>,
    pub conditions: BTreeMap<String, Vec<ConditionObs>>,
    /// Backends that exist and may be referenced.
    pub backends: Vec<BackendRef>,
    /// The rules that decided a refusal, for explain.
    pub rules: Vec<&'static Rule>,
}

/// Attaches `route` to the Gateway's listeners and computes its conditions per parentRef.
pub fn attach(gw: &GatewayInput, route: &Route, v: &CiliumVersion) -> Attachment {
    let mut a = Attachment::default();
    // Backends first: ResolvedRefs is the same for every parent.
    let mut resolved = cond("ResolvedRefs", "True", "ResolvedRefs", "Service reference is valid");
    for b in &route.backends {
        let ns = b.namespace.clone().unwrap_or_else(|| route.namespace.clone());
        if ns != route.namespace && !granted(gw, route, &ns, &b.name) {
            resolved =
                cond("ResolvedRefs", "False", "RefNotPermitted", &format!("Cross namespace references are not allowed: {ns}/{}", b.name));
            a.rules.push(&rules::PASSTHROUGH_NO_BACKENDS);
            continue;
        }
        if !gw.services.contains(&(ns.clone(), b.name.clone())) {
            resolved = cond("ResolvedRefs", "False", "BackendNotFound", &format!("Service \"{ns}/{}\" not found", b.name));
            a.rules.push(&rules::PASSTHROUGH_NO_BACKENDS);
            continue;
        }
        a.backends.push(BackendRef { name: b.name.clone(), namespace: Some(ns), port: b.port });
    }
    for p in route.parent_refs.iter().filter(|p| p.name == gw.name && p.namespace.as_deref().is_none_or(|n| n == gw.namespace)) {
        let key = p.key();
        let candidates: Vec<&Listener> = gw
            .listeners
            .iter()
            .filter(|l| p.section_name.as_ref().is_none_or(|s| *s == l.name) && p.port.is_none_or(|port| port == l.port))
            .collect();
        let accepted = if candidates.is_empty() {
            cond("Accepted", "False", "NoMatchingParent", "No matching listener")
        } else if p.section_name.is_none()
            && rules::FIRST_SELECTOR_MISS.applies(v)
            && gw.listeners.first().is_some_and(|first| {
                matches!(first.from, FromNamespaces::Selector { .. }) && !namespace_admitted(gw, first, &route.namespace)
            })
        {
            a.rules.push(&rules::FIRST_SELECTOR_MISS);
            cond(
                "Accepted",
                "False",
                "NotAllowedByListeners",
                "Route is not allowed to attach to this Gateway due to namespace selector restrictions",
            )
        } else {
            let by_ns: Vec<&Listener> = candidates
                .iter()
                .copied()
                .filter(|l| namespace_admitted(gw, l, &route.namespace) && kind_admitted(l, &route.kind))
                .collect();
            let by_host: Vec<&Listener> =
                by_ns.iter().copied().filter(|l| route_matches_listener(&route.hostnames, l.hostname.as_deref())).collect();
            if by_ns.is_empty() {
                cond("Accepted", "False", "NotAllowedByListeners", "Route is not allowed by any listener")
            } else if by_host.is_empty() {
                cond("Accepted", "False", "NoMatchingListenerHostname", "No matching listener hostname")
            } else {
                a.listeners.insert(key.clone(), by_host.iter().map(|l| l.name.clone()).collect());
                cond("Accepted", "True", "Accepted", "Accepted")
            }
        };
        a.conditions.insert(key, vec![accepted, resolved.clone()]);
    }
    a
}

fn granted(gw: &GatewayInput, route: &Route, target_ns: &str, service: &str) -> bool {
    gw.grants.iter().any(|g| {
        g.namespace == target_ns
            && g.from.iter().any(|(group, kind, ns)| group == "gateway.networking.k8s.io" && *kind == route.kind && *ns == route.namespace)
            && g.to.iter().any(|(kind, name)| kind == "Service" && name.as_ref().is_none_or(|n| n == service))
    })
}

/// Hostnames of the other listeners with the same protocol (ComputeHosts' isolation set).
pub fn other_hosts(gw: &GatewayInput, listener: &Listener, translated: &BTreeSet<String>) -> Vec<String> {
    gw.listeners
        .iter()
        .filter(|o| o.name != listener.name && o.protocol == listener.protocol && translated.contains(&o.name))
        .filter_map(|o| o.hostname.clone())
        .collect()
}
