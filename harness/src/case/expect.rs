//! The expectation groups of a case: per Cilium version range, the conditions of the Gateways,
//! ListenerSets, listeners and routes, the probes and the Envoy listeners, each checked against
//! what the manifests hold ([`Layout`]) and located where it was written.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Spanned;

use super::layout::Layout;
use super::manifests::ROUTE_KINDS;
use super::model::*;
use super::problem::Ctx;
use super::provenance::{confirmed_by, provenance};
use super::raw::*;
use super::template;
use super::version::VersionRange;
use crate::types::{BackendName, CertName, DnsName, Port, Sni, UpstreamProtocol};

/// Every expectation group of `expect`; a group with problems is reported and left out.
pub(super) fn groups(
    cx: &mut Ctx,
    field: &str,
    expect: &Spanned<Vec<Spanned<RawGroup>>>,
    layout: &Layout,
    apex: &str,
    cert_names: &BTreeSet<CertName>,
    backends: &BTreeMap<BackendName, Backend>,
) -> Vec<ExpectGroup> {
    let listener_names = layout.listener_names();
    let gateway_ports = layout.ports_of(&layout.gateway);
    let mut groups = Vec::new();
    if expect.value.is_empty() {
        cx.at(&expect.referenced, field, "a case needs at least one expectation group");
    }
    for (gi, g) in expect.value.iter().enumerate() {
        let gf = format!("{field}[{gi}]");
        let g_loc = g.referenced;
        let g = &g.value;
        let range = match VersionRange::parse(&g.cilium.value) {
            Ok(r) => Some(r),
            Err(e) => {
                cx.at(&g.cilium.referenced, format!("{gf}.cilium"), e.0);
                None
            }
        };
        let Some(provenance) =
            provenance(cx, &format!("{gf}.provenance"), Some(&g.provenance), &g.reference, &g.note, &g.observed, None, range.as_ref())
        else {
            continue;
        };

        let gateway = g.gateway.as_ref().map(|c| conditions(cx, &format!("{gf}.gateway"), &c.value)).unwrap_or_default();
        let mut gmap = BTreeMap::new();
        for (gname, conds) in &g.gateways {
            if layout.has_manifests && !layout.gateways.contains(gname) {
                cx.at(
                    &conds.referenced,
                    format!("{gf}.gateways.{gname}"),
                    format!(
                        "no Gateway named {gname:?} in the manifests; Gateways: {}",
                        join(&layout.gateways.iter().map(String::as_str).collect())
                    ),
                );
            }
            gmap.insert(gname.clone(), conditions(cx, &format!("{gf}.gateways.{gname}"), &conds.value));
        }
        let mut lsmap = BTreeMap::new();
        for (lsname, ls) in &g.listenersets {
            let lf = format!("{gf}.listenersets.{lsname}");
            let known = layout.listener_sets.get(lsname);
            if known.is_none() {
                cx.at(
                    &ls.referenced,
                    &lf,
                    format!(
                        "no ListenerSet named {lsname:?} in the manifests; ListenerSets: {}",
                        join(&layout.listener_sets.keys().map(String::as_str).collect())
                    ),
                );
            }
            let own = conditions(cx, &format!("{lf}.conditions"), &ls.value.conditions);
            let mut lmap = BTreeMap::new();
            for (lname, conds) in &ls.value.listeners {
                if let Some(names) = known
                    && !names.contains(lname)
                {
                    cx.at(
                        &conds.referenced,
                        format!("{lf}.listeners.{lname}"),
                        format!(
                            "ListenerSet {lsname} has no listener {lname:?}; it has {}",
                            join(&names.iter().map(String::as_str).collect())
                        ),
                    );
                }
                lmap.insert(lname.clone(), conditions(cx, &format!("{lf}.listeners.{lname}"), &conds.value));
            }
            lsmap.insert(lsname.clone(), (own, lmap));
        }
        let mut lmap = BTreeMap::new();
        for (lname, conds) in &g.listeners {
            if layout.knows_gateway && !listener_names.contains(lname.as_str()) {
                let message = if layout.several {
                    let hint = if lname.contains('/') { "" } else { " (with several Gateways, write <gateway>/<listener>)" };
                    format!("the Gateways have no listener {lname:?}{hint}; listeners: {}", join(&listener_names))
                } else {
                    let plain: BTreeSet<&str> = listener_names.iter().copied().filter(|n| !n.contains('/')).collect();
                    format!("the Gateway has no listener {lname:?}; it has {}", join(&plain))
                };
                cx.at(&conds.referenced, format!("{gf}.listeners.{lname}"), message);
            }
            lmap.insert(lname.clone(), conditions(cx, &format!("{gf}.listeners.{lname}"), &conds.value));
        }
        let mut rmap = BTreeMap::new();
        for (rname, parents) in &g.routes {
            let rf = format!("{gf}.routes.{rname}");
            let facts = layout.routes.get(rname);
            if facts.is_none() {
                cx.at(
                    &parents.referenced,
                    &rf,
                    format!(
                        "no route named {rname:?} in the manifests; routes: {}",
                        join(&layout.routes.keys().map(String::as_str).collect())
                    ),
                );
            }
            let mut pmap = BTreeMap::new();
            for (parent, conds) in &parents.value {
                if let Some(f) = facts
                    && !f.parents.contains(parent)
                {
                    cx.at(
                        &conds.referenced,
                        format!("{rf}.{parent}"),
                        format!("route {rname} has no parentRef {parent:?}; its parents: {}", f.parents.join(", ")),
                    );
                }
                pmap.insert(parent.clone(), conditions(cx, &format!("{rf}.{parent}"), &conds.value));
            }
            rmap.insert(rname.clone(), pmap);
        }
        let mut probes = Vec::new();
        for (pi, p) in g.probes.iter().enumerate() {
            let pf = format!("{gf}.probes[{pi}]");
            // Which Gateway the probe targets: required when there are several.
            let target = match (&p.value.gateway, layout.several) {
                (Some(gname), _) if !layout.by_gateway.contains_key(&gname.value) => {
                    cx.at(&gname.referenced, format!("{pf}.gateway"), format!("no Gateway named {:?} in the manifests", gname.value));
                    continue;
                }
                (Some(gname), _) => Some(gname.value.clone()),
                (None, true) => {
                    cx.at(&p.referenced, format!("{pf}.gateway"), "the case has several Gateways; name the one probed with `gateway:`");
                    continue;
                }
                (None, false) => None,
            };
            let ports = target.as_deref().map(|g| layout.ports_of(g)).unwrap_or_else(|| gateway_ports.clone());
            if let Some(mut pe) = probe(cx, &pf, p, apex, cert_names, backends, (&provenance, range.as_ref()), &ports, layout.knows_gateway)
            {
                pe.key.gateway = target.filter(|_| layout.several);
                pe.key.path = p.value.path.as_ref().map(|s| s.value.clone());
                if let Some(path) = &p.value.path
                    && (!path.value.starts_with('/') || !pe.key.http)
                {
                    cx.at(
                        &path.referenced,
                        format!("{pf}.path"),
                        "a path starts with '/' and needs an HTTP request (plain: true, served_by: or status:)",
                    );
                }
                probes.push(pe);
            }
        }
        let mut envoy = BTreeMap::new();
        for (lname, e) in &g.envoy {
            let ef = format!("{gf}.envoy.{lname}");
            if layout.several && !lname.contains('/') {
                cx.at(&e.referenced, &ef, "the case has several Gateways; write the Envoy listener as <gateway>/<listener-name>");
            }
            if let Some(ee) = envoy_listener(cx, &ef, e, apex, (&provenance, range.as_ref())) {
                envoy.insert(lname.clone(), ee);
            }
        }
        let mut clusters = BTreeMap::new();
        for (key, c) in &g.clusters {
            if let Some(ce) = cluster(cx, &format!("{gf}.clusters.{key}"), key, c, backends, &provenance) {
                clusters.insert(key.clone(), ce);
            }
        }
        let mut refused = Vec::new();
        for (key, contains) in &g.refused {
            let rf = format!("{gf}.refused.{key}");
            let Some((kind, name)) = key.split_once('/').filter(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('/')) else {
                cx.at(&contains.referenced, &rf, format!("{key:?}: name the refused object as Kind/name, like TLSRoute/api"));
                continue;
            };
            if layout.has_manifests && !layout.objects.contains(&(kind.to_string(), name.to_string())) {
                cx.at(&contains.referenced, &rf, format!("no {kind} named {name:?} in the manifests"));
            }
            if contains.value.trim().is_empty() {
                cx.at(&contains.referenced, &rf, "say what the API server's message names, like \"spec.hostnames: Required value\"");
            }
            if g.routes.contains_key(name) && ROUTE_KINDS.contains(&kind) {
                cx.at(
                    &contains.referenced,
                    &rf,
                    format!("a refused route does not exist, so it has no conditions: drop routes.{name} from this group"),
                );
            }
            refused.push(RefusedExpect { kind: kind.to_string(), name: name.to_string(), message_contains: contains.value.clone() });
        }
        let confirmed = confirmed_by(cx, &gf, &g.confirmed, range.as_ref());
        if let Some(range) = range {
            groups.push(ExpectGroup {
                range,
                provenance,
                confirmed,
                line: g_loc.line(),
                gateway,
                gateways: gmap,
                listener_sets: lsmap,
                listeners: lmap,
                routes: rmap,
                probes,
                envoy,
                clusters,
                refused,
            });
        }
    }
    groups
}

/// One `clusters:` entry: `<service>:<port>` of a backend the case declares, and a protocol of
/// the closed set ([`UpstreamProtocol`]).
fn cluster(
    cx: &mut Ctx,
    cf: &str,
    key: &str,
    c: &Spanned<RawCluster>,
    backends: &BTreeMap<BackendName, Backend>,
    provenance: &Provenance,
) -> Option<ClusterExpect> {
    let mut ok = true;
    match key.split_once(':') {
        Some((svc, port)) if !svc.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            if !backends.keys().any(|b| b.as_str() == svc) {
                let names: BTreeSet<&str> = backends.keys().map(BackendName::as_str).collect();
                cx.at(&c.referenced, cf, format!("no backend named {svc:?} under `backends:`; backends: {}", join(&names)));
                ok = false;
            }
        }
        _ => {
            cx.at(&c.referenced, cf, format!("{key:?}: name the cluster by its backend as <service>:<port>, like web:80"));
            ok = false;
        }
    }
    let protocol = UpstreamProtocol::parse(&c.value.protocol.value);
    if protocol.is_none() {
        cx.at(
            &c.value.protocol.referenced,
            format!("{cf}.protocol"),
            format!("{:?} is not an upstream protocol; use one of {}", c.value.protocol.value, UpstreamProtocol::names()),
        );
    }
    let protocol = protocol.filter(|_| ok)?;
    Some(ClusterExpect { protocol, provenance: provenance.clone(), line: c.referenced.line() })
}

pub(super) fn join(names: &BTreeSet<&str>) -> String {
    if names.is_empty() { "none".into() } else { names.iter().copied().collect::<Vec<_>>().join(", ") }
}

pub(super) fn declared(certs: &BTreeSet<CertName>) -> String {
    if certs.is_empty() {
        "; none are declared under `certificates:`".into()
    } else {
        format!("; declared: {}", certs.iter().map(CertName::as_str).collect::<Vec<_>>().join(", "))
    }
}

fn conditions(cx: &mut Ctx, field: &str, map: &BTreeMap<String, Spanned<String>>) -> Vec<CondExpect> {
    let mut out = Vec::new();
    for (ty, want) in map {
        let ok_type = !ty.is_empty() && ty.starts_with(|c: char| c.is_ascii_uppercase()) && ty.bytes().all(|b| b.is_ascii_alphanumeric());
        if !ok_type {
            cx.at(&want.referenced, format!("{field}.{ty}"), format!("{ty:?} is not a condition type (CamelCase, like Accepted)"));
            continue;
        }
        match CondWant::parse(&want.value) {
            Ok(w) => out.push(CondExpect { type_: ty.clone(), want: w }),
            Err(e) => cx.at(&want.referenced, format!("{field}.{ty}"), e),
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn probe(
    cx: &mut Ctx,
    pf: &str,
    p: &Spanned<RawProbe>,
    apex: &str,
    certs: &BTreeSet<CertName>,
    backends: &BTreeMap<BackendName, Backend>,
    (group, range): (&Provenance, Option<&VersionRange>),
    gateway_ports: &BTreeSet<Port>,
    knows_gateway: bool,
) -> Option<ProbeExpect> {
    let loc = &p.referenced;
    let p = &p.value;
    let mut ok = true;
    let port = match u64::try_from(p.port.value).map_err(|_| ()).and_then(|n| Port::new(n).map_err(|_| ())) {
        Ok(port) => {
            if knows_gateway && !gateway_ports.contains(&port) {
                let ports: Vec<String> = gateway_ports.iter().map(Port::to_string).collect();
                cx.at(
                    &p.port.referenced,
                    format!("{pf}.port"),
                    format!("{port} is not a port of the Gateway (its ports: {})", ports.join(", ")),
                );
                ok = false;
            }
            Some(port)
        }
        Err(()) => {
            cx.at(&p.port.referenced, format!("{pf}.port"), format!("port {} is outside 1-65535", p.port.value));
            None
        }
    };
    let sni = if p.plain {
        // A plain probe sends no TLS at all; `host` is its Host header.
        for (present, name) in [(p.sni.is_some(), "sni"), (p.no_sni, "no_sni"), (p.alert.is_some(), "alert")] {
            if present {
                cx.at(loc, format!("{pf}.{name}"), format!("{name} has no meaning for a plain HTTP probe (plain: true)"));
                ok = false;
            }
        }
        match &p.host {
            Some(h) => match Sni::new(template::render_apex(&h.value, apex)) {
                Ok(h) => Some(h),
                Err(e) => {
                    cx.at(&h.referenced, format!("{pf}.host"), e.0);
                    ok = false;
                    None
                }
            },
            None => {
                cx.at(loc, pf, "a plain HTTP probe needs host: NAME (its Host header)");
                ok = false;
                None
            }
        }
    } else {
        if let Some(h) = &p.host {
            cx.at(&h.referenced, format!("{pf}.host"), "host: is the Host header of a plain HTTP probe; add plain: true, or use sni:");
            ok = false;
        }
        match (&p.sni, p.no_sni) {
            (Some(s), false) => match Sni::new(template::render_apex(&s.value, apex)) {
                Ok(s) => Some(s),
                Err(e) => {
                    cx.at(&s.referenced, format!("{pf}.sni"), e.0);
                    ok = false;
                    None
                }
            },
            (None, true) => None,
            (Some(s), true) => {
                cx.at(&s.referenced, format!("{pf}.sni"), "give either sni or no_sni: true, not both");
                ok = false;
                None
            }
            (None, false) => {
                cx.at(loc, pf, "a probe needs sni: NAME, or no_sni: true to send none");
                ok = false;
                None
            }
        }
    };
    let status = match &p.status {
        Some(st) => match u16::try_from(st.value) {
            Ok(code) if (100..=599).contains(&code) => Some(code),
            _ => {
                cx.at(&st.referenced, format!("{pf}.status"), format!("{} is not an HTTP status (100-599)", st.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    let how = match &p.how {
        Some(h) => match NothingHow::parse(&h.value) {
            Some(x) => Some(x),
            None => {
                cx.at(&h.referenced, format!("{pf}.how"), format!("{:?}: use reset, alert, closed, timeout or refused", h.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    let answer = match &p.answers {
        Some(ans) if ans.value == "nothing" => {
            if let (Some(a), Some(h)) = (&p.alert, how)
                && h != NothingHow::Alert
            {
                cx.at(&a.referenced, format!("{pf}.alert"), "alert: goes with how: alert");
                ok = false;
            }
            if let Some(st) = &p.status {
                cx.at(&st.referenced, format!("{pf}.status"), "status: needs an answer; nothing answers this probe");
                ok = false;
            }
            let how = if p.alert.is_some() && how.is_none() { Some(NothingHow::Alert) } else { how };
            Some(Answer::Nothing { how, alert: p.alert.as_ref().map(|a| a.value.clone()) })
        }
        other => {
            for (opt, name) in [(&p.how, "how"), (&p.alert, "alert")] {
                if let Some(x) = opt {
                    cx.at(&x.referenced, format!("{pf}.{name}"), format!("{name}: goes with answers: nothing"));
                    ok = false;
                }
            }
            match (other, p.plain) {
                (None, true) if status.is_some() || p.served_by.is_some() => Some(Answer::Answered),
                (None, true) => {
                    cx.at(loc, pf, "say what a plain HTTP probe expects: status:, served_by:, or answers: nothing");
                    None
                }
                (Some(ans), true) => {
                    cx.at(
                        &ans.referenced,
                        format!("{pf}.answers"),
                        "a plain HTTP probe presents no certificate: answers: may only be `nothing`; check status: or served_by:",
                    );
                    None
                }
                (None, false) => {
                    cx.at(loc, pf, "a probe needs answers: CERTIFICATE, or answers: nothing");
                    None
                }
                (Some(ans), false) => match CertName::new(ans.value.clone()) {
                    Ok(c) if certs.contains(&c) => Some(Answer::Cert(c)),
                    _ => {
                        cx.at(
                            &ans.referenced,
                            format!("{pf}.answers"),
                            format!("{:?} is not a declared certificate or `nothing`{}", ans.value, declared(certs)),
                        );
                        None
                    }
                },
            }
        }
    };
    let served_by = match &p.served_by {
        Some(b) => match BackendName::new(b.value.clone()) {
            Ok(n) if backends.contains_key(&n) => {
                if matches!(answer, Some(Answer::Nothing { .. })) {
                    cx.at(&b.referenced, format!("{pf}.served_by"), "served_by needs an answer: nothing can serve a probe nothing answers");
                    ok = false;
                } else if let Some(why) = unreachable_tls_backend(&n, backends.get(&n), answer.as_ref()) {
                    cx.at(&b.referenced, format!("{pf}.served_by"), why);
                    ok = false;
                }
                Some(n)
            }
            _ => {
                let names: Vec<&str> = backends.keys().map(BackendName::as_str).collect();
                cx.at(
                    &b.referenced,
                    format!("{pf}.served_by"),
                    format!(
                        "{:?} is not a declared backend; declared: {}",
                        b.value,
                        if names.is_empty() { "none".into() } else { names.join(", ") }
                    ),
                );
                ok = false;
                None
            }
        },
        None => None,
    };
    let prov = provenance(cx, &format!("{pf}.provenance"), p.provenance.as_ref(), &p.reference, &p.note, &p.observed, Some(group), range);
    match (ok, port, answer, prov) {
        (true, Some(port), Some(answer), Some(provenance)) => {
            let http = p.plain || served_by.is_some() || status.is_some();
            Some(ProbeExpect {
                key: ProbeKey { port, sni, http, plain: p.plain, gateway: None, path: None },
                answer,
                served_by,
                status,
                provenance,
                line: loc.line(),
            })
        }
        _ => None,
    }
}

/// Why `served_by: name` can never hold, when `name` is a TLS backend and the probe does not
/// reach it through a passthrough: a backend with `tls:` accepts TLS only and presents its own
/// certificate, so the one way an HTTP request reaches it is a TLS passthrough to it, where the
/// probe sees that certificate. A probe answered by another certificate was terminated by a
/// listener, which forwards plain HTTP; a plain probe sends plain HTTP: either way the backend
/// never answers, and the probe fails at every pin.
fn unreachable_tls_backend(name: &BackendName, backend: Option<&Backend>, answer: Option<&Answer>) -> Option<String> {
    let Some(Backend::Tls { cert }) = backend else { return None };
    let reached_by = match answer? {
        Answer::Cert(c) if c == cert => return None,
        Answer::Cert(c) => format!("this probe expects certificate {c}, so a listener terminates TLS and forwards plain HTTP"),
        Answer::Answered => "this probe is plain HTTP".to_string(),
        Answer::Nothing { .. } => return None,
    };
    Some(format!(
        "backend {name} accepts only TLS (tls: {cert}): an HTTP request reaches it only through a TLS passthrough, where the probe sees {cert}; {reached_by}, which {name} never answers: this fails at every pin"
    ))
}

fn envoy_listener(
    cx: &mut Ctx,
    ef: &str,
    e: &Spanned<RawEnvoyListener>,
    apex: &str,
    (group, range): (&Provenance, Option<&VersionRange>),
) -> Option<EnvoyListenerExpect> {
    let loc = &e.referenced;
    let e = &e.value;
    let mut ok = true;
    let filter_chains = match &e.filter_chains {
        Some(n) => match u32::try_from(n.value) {
            Ok(v) => Some(v),
            Err(_) => {
                cx.at(&n.referenced, format!("{ef}.filter_chains"), format!("{} is not a count", n.value));
                ok = false;
                None
            }
        },
        None => None,
    };
    if e.absent && (e.filter_chains.is_some() || e.server_names.is_some() || e.chains.is_some() || e.error_contains.is_some()) {
        cx.at(loc, ef, "absent: true cannot be combined with facts about the listener");
        ok = false;
    }
    if !e.absent && e.filter_chains.is_none() && e.server_names.is_none() && e.chains.is_none() && e.error_contains.is_none() {
        cx.at(loc, ef, "say something about the listener: filter_chains, server_names, chains, error_contains or absent: true");
        ok = false;
    }
    let server_names: Option<Vec<Vec<String>>> = e.server_names.as_ref().map(|s| {
        s.value
            .iter()
            .map(|chain| {
                chain
                    .iter()
                    .map(|n| {
                        let r = template::render_apex(n, apex);
                        if let Err(err) = DnsName::new(r.clone()) {
                            cx.at(&s.referenced, format!("{ef}.server_names"), err.0);
                        }
                        r
                    })
                    .collect()
            })
            .collect()
    });
    if let (Some(n), Some(sn)) = (filter_chains, &server_names)
        && n as usize != sn.len()
    {
        cx.at(loc, ef, format!("filter_chains is {n} but server_names lists {} chains", sn.len()));
        ok = false;
    }
    let chains: Option<Vec<ChainExpect>> = e.chains.as_ref().map(|cs| {
        cs.value
            .iter()
            .filter_map(|c| {
                let kind = ChainKind::parse(&c.value.kind.value);
                if kind.is_none() {
                    cx.at(
                        &c.value.kind.referenced,
                        format!("{ef}.chains.kind"),
                        format!("{:?} is not a chain kind; use http, https or tcp_proxy", c.value.kind.value),
                    );
                    ok = false;
                }
                let names = c
                    .value
                    .server_names
                    .iter()
                    .map(|n| {
                        let r = template::render_apex(n, apex);
                        if let Err(err) = DnsName::new(r.clone()) {
                            cx.at(&c.referenced, format!("{ef}.chains.server_names"), err.0);
                        }
                        r
                    })
                    .collect();
                kind.map(|kind| ChainExpect { kind, server_names: names })
            })
            .collect()
    });
    if let (Some(n), Some(cs)) = (filter_chains, &e.chains)
        && n as usize != cs.value.len()
    {
        cx.at(loc, ef, format!("filter_chains is {n} but chains lists {}", cs.value.len()));
        ok = false;
    }
    let prov = provenance(cx, &format!("{ef}.provenance"), e.provenance.as_ref(), &e.reference, &e.note, &e.observed, Some(group), range)?;
    ok.then(|| EnvoyListenerExpect {
        filter_chains,
        server_names,
        chains,
        error_contains: e.error_contains.as_ref().map(|s| s.value.clone()),
        absent: e.absent,
        provenance: prov,
        line: loc.line(),
    })
}
