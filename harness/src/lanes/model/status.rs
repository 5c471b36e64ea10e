//! Statuses as Cilium writes them, version by version: the listener conflict checks, listener
//! validation (route kinds, certificate references), listener, ListenerSet and Gateway
//! conditions, and route attachment with its conditions.

use std::collections::{BTreeMap, BTreeSet};

use super::hostnames::{compute_hosts, route_matches_listener, sni_intersect};
use super::input::{self, BackendRef, CertRef, GATEWAY_GROUP, GatewayInput, Listener, ListenerSetInput, Origin, Protocol, Route, TlsMode};
use super::rules::{self, Rule};
use crate::case::CiliumVersion;
use crate::judge::ConditionObs;

fn cond(t: &str, status: &str, reason: &str, message: &str) -> ConditionObs {
    ConditionObs { type_: t.into(), status: status.into(), reason: reason.into(), message: message.into(), observed_generation: Some(1) }
}

/// Why a listener is conflicted, and the rule that says so.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub reason: String,
    pub message: String,
    pub rule: &'static Rule,
}

fn is_terminate(l: &Listener) -> bool {
    l.protocol == Protocol::Https
}

fn is_passthrough(l: &Listener) -> bool {
    l.protocol == Protocol::Tls && l.tls_mode == Some(TlsMode::Passthrough)
}

/// `listenerPairConflict` (1.20) or `samePortCrossProtocolConflictedListeners` (1.19.6+): the
/// reason two listeners conflict, if they do.
fn pair_conflict(a: &Listener, b: &Listener, v: &CiliumVersion) -> Option<(&'static str, &'static Rule)> {
    if a.port != b.port {
        return None;
    }
    let cross = (is_terminate(a) && is_passthrough(b)) || (is_terminate(b) && is_passthrough(a));
    if cross {
        return (rules::PROTOCOL_CONFLICT.applies(v) && sni_intersect(a.hostname.as_deref(), b.hostname.as_deref()))
            .then_some(("ProtocolConflict", &rules::PROTOCOL_CONFLICT));
    }
    (rules::HOSTNAME_CONFLICT.applies(v)
        && a.protocol == b.protocol
        && a.hostname.as_deref().unwrap_or("*") == b.hostname.as_deref().unwrap_or("*"))
    .then_some(("HostnameConflict", &rules::HOSTNAME_CONFLICT))
}

fn conflict_message(reason: &str, me: &Listener, other: &Listener) -> String {
    if reason == "HostnameConflict" {
        format!("Listener conflicts with listener \"{}\": same port {} has overlapping hostnames.", other.name, me.port)
    } else {
        format!(
            "Listener conflicts with listener \"{}\": same port {} has overlapping HTTPS and TLS passthrough hostnames.",
            other.name, me.port
        )
    }
}

/// One listener losing to another: who, against whom, why, and what Cilium writes. Several
/// pairs may name one listener; Cilium's status keeps the message of the last.
#[derive(Debug, Clone)]
pub struct ConflictPair {
    /// The listener marked Conflicted (its id).
    pub listener: String,
    /// The listener it conflicts with (its id).
    pub other: String,
    pub reason: String,
    /// Cilium's message on `listener` (empty across sources, where Cilium records none of its
    /// own beyond "Listener has a conflict").
    pub message: String,
    pub rule: &'static Rule,
    /// The other listener came from an earlier source (the Gateway, or a ListenerSet of higher
    /// precedence) and was kept; only `listener` loses.
    pub across_sources: bool,
}

/// Every conflicting pair, in the order Cilium finds them. Sources (the Gateway, then each
/// allowed ListenerSet in precedence order) are taken in turn: a listener that conflicts with
/// one an earlier source kept loses (`conflictsAcrossSources`, 1.20), and pairs within one
/// source both lose (`conflictsWithinSource`, and `samePortCrossProtocolConflictedListeners`
/// on 1.19.6+).
pub fn conflict_pairs(gw: &GatewayInput, v: &CiliumVersion) -> Vec<ConflictPair> {
    let mut out: Vec<ConflictPair> = Vec::new();
    let mut sources: Vec<&Origin> = Vec::new();
    for l in &gw.listeners {
        if !sources.contains(&&l.origin) {
            sources.push(&l.origin);
        }
    }
    let mut accepted: Vec<&Listener> = Vec::new();
    for source in sources {
        let mut eligible = Vec::new();
        for l in gw.listeners.iter().filter(|l| &l.origin == source) {
            if let Some((a, (reason, rule))) = accepted.iter().find_map(|a| pair_conflict(a, l, v).map(|c| (a, c))) {
                out.push(ConflictPair {
                    listener: l.id.clone(),
                    other: a.id.clone(),
                    reason: reason.into(),
                    message: String::new(),
                    rule,
                    across_sources: true,
                });
            } else {
                eligible.push(l);
            }
        }
        for (i, a) in eligible.iter().enumerate() {
            for b in eligible.iter().skip(i + 1) {
                if let Some((reason, rule)) = pair_conflict(a, b, v) {
                    for (me, other) in [(a, b), (b, a)] {
                        out.push(ConflictPair {
                            listener: me.id.clone(),
                            other: other.id.clone(),
                            reason: reason.into(),
                            message: conflict_message(reason, me, other),
                            rule,
                            across_sources: false,
                        });
                    }
                }
            }
        }
        accepted.extend(eligible.into_iter().filter(|l| !out.iter().any(|p| p.listener == l.id)));
    }
    out
}

/// Conflicted listeners by id, as Cilium's status reads: the last pair found for a listener
/// gives its message.
pub fn conflicts(gw: &GatewayInput, v: &CiliumVersion) -> BTreeMap<String, Conflict> {
    conflict_pairs(gw, v).into_iter().map(|p| (p.listener, Conflict { reason: p.reason, message: p.message, rule: p.rule })).collect()
}

/// A certificate Secret a terminating chain uses, as Cilium's ingestion keeps it of a
/// certificateRef (`toTLS`), and whether the Secret exists for Cilium's SDS to serve.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TlsSecret {
    pub namespace: String,
    pub name: String,
    /// The ref names a core Secret that exists; otherwise SDS never serves it
    /// (rules::INVALID_CHAIN_KEPT).
    pub arrives: bool,
}

/// What `validateListener` finds.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    pub valid: bool,
    /// ResolvedRefs=False conditions it set.
    pub conds: Vec<ConditionObs>,
    pub reason: String,
    pub messages: Vec<String>,
    /// The certificate Secret (namespace, name) the listener terminates with, if its refs
    /// resolve.
    pub secret: Option<(String, String)>,
    /// Every certificateRef Cilium's ingestion keeps whatever the validation found (`toTLS`:
    /// each one a ReferenceGrant does not forbid), in order: what an invalid listener that still
    /// reaches ingestion terminates with (rules::INVALID_CHAIN_KEPT).
    pub ingested: Vec<TlsSecret>,
    pub rules: Vec<&'static Rule>,
}

fn owner(l: &Listener, gw: &GatewayInput) -> (&'static str, String) {
    match &l.origin {
        Origin::Gateway => ("Gateway", gw.namespace.clone()),
        Origin::ListenerSet { namespace, .. } => ("ListenerSet", namespace.clone()),
    }
}

fn supported_kinds(p: Protocol) -> &'static [&'static str] {
    match p {
        Protocol::Http | Protocol::Https => &["HTTPRoute", "GRPCRoute"],
        Protocol::Tls => &["TLSRoute"],
    }
}

/// `validateListener`: allowed route kinds and certificate references.
pub fn validate(gw: &GatewayInput, l: &Listener, v: &CiliumVersion) -> Validation {
    let mut res = Validation { valid: true, reason: "Invalid".into(), ..Validation::default() };
    let supported = supported_kinds(l.protocol);
    if !l.kinds.is_empty() {
        let ok = l.kinds.iter().filter(|(g, k)| g == GATEWAY_GROUP && supported.contains(&k.as_str())).count();
        let invalid_kinds = ok != l.kinds.len();
        if invalid_kinds && rules::ROUTE_KINDS_CHECKED.applies(v) {
            res.conds.push(cond("ResolvedRefs", "False", "InvalidRouteKinds", "Unsupported Route Kinds in allowedRoutes.kinds"));
            res.rules.push(&rules::ROUTE_KINDS_CHECKED);
            if ok == 0 {
                res.valid = false;
                res.messages.push("None of the Allowed Route Kinds are supported.".into());
            }
        }
    }
    if l.tls_mode == Some(TlsMode::Terminate) {
        let (owner_kind, owner_ns) = owner(l, gw);
        for r in &l.cert_refs {
            let ns = r.namespace.clone().unwrap_or_else(|| owner_ns.clone());
            // `toTLS` asks only whether a grant forbids the ref (`IsSecretReferenceAllowed`),
            // not whether it is a Secret or exists.
            if ns == owner_ns || gw.grants.iter().any(|g| g.allows((GATEWAY_GROUP, owner_kind, &owner_ns), ("", "Secret", &ns, &r.name))) {
                let arrives = is_secret(r) && gw.secrets.contains(&(ns.clone(), r.name.clone()));
                res.ingested.push(TlsSecret { namespace: ns, name: r.name.clone(), arrives });
            }
        }
        for r in &l.cert_refs {
            let ns = r.namespace.clone().unwrap_or_else(|| owner_ns.clone());
            let fail = |res: &mut Validation, reason: &str, message: &str, why: &str| {
                res.conds.retain(|c| c.type_ != "ResolvedRefs");
                res.conds.push(cond("ResolvedRefs", "False", reason, message));
                res.messages.push(why.to_string());
                res.valid = false;
                res.rules.push(&rules::CERT_REF_CHECK);
            };
            if !is_secret(r) {
                fail(&mut res, "InvalidCertificateRef", "Invalid CertificateRef", "Invalid CertificateRef, must be a Secret.");
                break;
            }
            if ns != owner_ns && !gw.grants.iter().any(|g| g.allows((GATEWAY_GROUP, owner_kind, &owner_ns), ("", "Secret", &ns, &r.name))) {
                fail(&mut res, "RefNotPermitted", "CertificateRef is not permitted", "Invalid CertificateRef, not permitted.");
                break;
            }
            if !gw.secrets.contains(&(ns.clone(), r.name.clone())) {
                // The operator reads Secrets through its cache, whose NotFound names the kind
                // (`Secret "x" not found`, as Cilium's operator at v1.19.5 answers); the fixtures'
                // fake client says `secrets "x"`.
                let why = format!("Invalid CertificateRef, Secret \"{}\" not found", r.name);
                fail(&mut res, "InvalidCertificateRef", "Invalid CertificateRef", &why);
                break;
            }
            res.secret.get_or_insert((ns, r.name.clone()));
        }
        if !res.valid {
            res.secret = None;
        }
        if l.cert_refs.is_empty() {
            res.valid = false;
            res.conds.push(cond("ResolvedRefs", "False", "InvalidCertificateRef", "Invalid CertificateRef"));
            res.messages.push("An HTTPS listener needs a certificateRef.".into());
        }
    }
    if !res.valid && res.conds.iter().any(|c| c.reason != "InvalidRouteKinds") && rules::CERT_REF_INVALIDATES.applies(v) {
        res.rules.push(&rules::CERT_REF_INVALIDATES);
    }
    res
}

fn is_secret(r: &CertRef) -> bool {
    r.group.is_empty() && r.kind == "Secret"
}

/// A ListenerSet's own conditions and its listeners' (listener name -> conditions).
pub type ListenerSetStatus = (Vec<ConditionObs>, BTreeMap<String, Vec<ConditionObs>>);

/// Per listener id: its conditions; and the Gateway's; and which listener ids reach
/// translation.
pub struct ListenerStatuses {
    pub gateway: Vec<ConditionObs>,
    /// Gateway listeners by name.
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    /// ListenerSet name -> (its conditions, listener name -> conditions).
    pub listener_sets: BTreeMap<String, ListenerSetStatus>,
    /// Listener ids that reach translation, with the Secrets each terminates with.
    pub translated: BTreeMap<String, Vec<TlsSecret>>,
    pub rules: Vec<&'static Rule>,
}

/// The Secret a valid listener terminates with.
fn resolved(res: &Validation) -> Vec<TlsSecret> {
    res.secret.iter().map(|(namespace, name)| TlsSecret { namespace: namespace.clone(), name: name.clone(), arrives: true }).collect()
}

/// `setListenerStatus` and `setListenerSetStatuses`.
pub fn listener_statuses(gw: &GatewayInput, v: &CiliumVersion, conflicted: &BTreeMap<String, Conflict>) -> ListenerStatuses {
    let mut out = ListenerStatuses {
        gateway: Vec::new(),
        listeners: BTreeMap::new(),
        listener_sets: BTreeMap::new(),
        translated: BTreeMap::new(),
        rules: Vec::new(),
    };
    let dropped = rules::CONFLICTED_DROPPED.applies(v);
    let invalid_dropped = rules::INVALID_NOT_TRANSLATED.applies(v);
    let mut any_valid = false;
    // An invalid listener that still reaches ingestion with a certificate (1.19.x).
    let mut invalid_kept = false;
    for l in gw.listeners.iter().filter(|l| l.origin == Origin::Gateway) {
        let res = validate(gw, l, v);
        out.rules.extend(res.rules.iter().copied());
        let mut conds = Vec::new();
        let conflict = conflicted.get(&l.id);
        let mut messages = Vec::new();
        if let Some(c) = conflict {
            conds.push(cond("Conflicted", "True", &c.reason, &c.message));
            messages.push(c.message.clone());
        }
        conds.extend(res.conds.iter().cloned());
        if conflict.is_some() || !res.valid {
            messages.extend(res.messages.iter().cloned());
            conds.push(cond("Accepted", "False", &res.reason, &format!("Listener not valid. {}", messages.join(" "))));
            conds.push(cond("Programmed", "False", "Pending", "Address not ready yet"));
        } else {
            any_valid = true;
            if !conds.iter().any(|c| c.type_ == "ResolvedRefs") {
                conds.push(cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved Refs"));
            }
            conds.push(cond("Accepted", "True", "Accepted", "Listener Accepted"));
            conds.push(cond("Programmed", "True", "Programmed", "Listener Programmed"));
        }
        out.listeners.insert(l.name.clone(), conds);
        let translate = !(dropped && conflict.is_some() || invalid_dropped && !res.valid);
        if translate {
            let secrets = if res.valid {
                resolved(&res)
            } else if rules::INVALID_CHAIN_KEPT.applies(v) {
                res.ingested.clone()
            } else {
                Vec::new()
            };
            invalid_kept |= !res.valid && !secrets.is_empty();
            out.translated.insert(l.id.clone(), secrets);
        }
    }
    if any_valid && invalid_kept {
        out.rules.push(&rules::INVALID_CHAIN_KEPT);
    }
    out.gateway = if any_valid {
        vec![
            cond("Accepted", "True", "Accepted", "Gateway successfully scheduled"),
            cond("Programmed", "True", "Programmed", "Gateway successfully reconciled"),
        ]
    } else {
        out.rules.push(&rules::NO_VALID_LISTENER);
        // Reconcile returns here, before Translate: none of the Gateway's listeners reaches
        // Envoy (on 1.19.x ingestion would otherwise take invalid listeners too).
        out.translated.clear();
        vec![
            cond("Accepted", "False", "ListenersNotValid", "No Accepted Listeners"),
            cond("Programmed", "False", "ListenersNotValid", "No Accepted Listeners"),
        ]
    };
    for ls in &gw.listener_sets {
        // Before 1.20 no controller writes a ListenerSet's status: it exists with no conditions.
        let status = if rules::LISTENERSET.applies(v) {
            listener_set_status(gw, ls, v, conflicted, &mut out)
        } else {
            (Vec::new(), BTreeMap::new())
        };
        out.listener_sets.insert(ls.name.clone(), status);
    }
    if !any_valid {
        // Reconcile returns before ingestion when none of the Gateway's own listeners is valid,
        // so a valid ListenerSet listener reaches no Envoy either (rules::NO_VALID_LISTENER;
        // found by the differential, seed 3, layouts 25 and 126 at 1.20.2).
        out.translated.clear();
    }
    out
}

fn listener_set_status(
    gw: &GatewayInput,
    ls: &ListenerSetInput,
    v: &CiliumVersion,
    conflicted: &BTreeMap<String, Conflict>,
    out: &mut ListenerStatuses,
) -> ListenerSetStatus {
    if !input::listener_set_allowed(gw, ls) {
        out.rules.push(&rules::LISTENERSET_NOT_ALLOWED);
        let m = "ListenerSet is not allowed by the Gateway's allowedListeners policy";
        return (vec![cond("Accepted", "False", "NotAllowed", m), cond("Programmed", "False", "NotAllowed", m)], BTreeMap::new());
    }
    out.rules.push(&rules::LISTENERSET);
    let mut one_valid = false;
    let mut listeners = BTreeMap::new();
    for l in &ls.listeners {
        // 1.20.0 translates every listener of an allowed ListenerSet, conflicted or invalid,
        // with the Secrets ingestion takes (rules::LISTENERSET_UNFILTERED).
        if rules::LISTENERSET_UNFILTERED.applies(v) {
            let res = validate(gw, l, v);
            let secrets = if res.valid { resolved(&res) } else { res.ingested.clone() };
            out.translated.insert(l.id.clone(), secrets);
            if conflicted.contains_key(&l.id) || !res.valid {
                out.rules.push(&rules::LISTENERSET_UNFILTERED);
            }
        }
        let conds = if let Some(c) = conflicted.get(&l.id) {
            let m = "Listener has a conflict";
            vec![
                cond("Accepted", "False", &c.reason, m),
                cond("Programmed", "False", &c.reason, m),
                cond("Conflicted", "True", &c.reason, m),
                cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved Refs"),
            ]
        } else {
            let res = validate(gw, l, v);
            let mut conds = res.conds.clone();
            if res.valid && res.conds.iter().all(|c| c.reason == "InvalidRouteKinds") {
                one_valid = true;
                if !conds.iter().any(|c| c.type_ == "ResolvedRefs") {
                    conds.push(cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved Refs"));
                }
                conds.push(cond("Accepted", "True", "Accepted", "Listener Accepted"));
                conds.push(cond("Programmed", "True", "Programmed", "Listener Programmed"));
                out.translated.insert(l.id.clone(), resolved(&res));
            } else {
                conds.push(cond("Accepted", "False", &res.reason, &format!("Listener not valid. {}", res.messages.join(" "))));
                conds.push(cond("Programmed", "False", &res.reason, "Listener not valid"));
            }
            conds
        };
        listeners.insert(l.name.clone(), conds);
    }
    let own = if one_valid {
        vec![
            cond("Accepted", "True", "Accepted", "ListenerSet is accepted"),
            cond("Programmed", "True", "Programmed", "ListenerSet is programmed"),
        ]
    } else {
        vec![
            cond("Accepted", "False", "ListenersNotValid", "No valid listeners"),
            cond("Programmed", "False", "ListenersNotValid", "No valid listeners"),
        ]
    };
    (own, listeners)
}

fn namespace_admitted(gw: &GatewayInput, l: &Listener, route_ns: &str) -> bool {
    let (_, owner_ns) = owner(l, gw);
    input::namespace_selected(&l.from, &owner_ns, route_ns, &gw.namespaces)
}

/// `CheckGatewayRouteKindAllowed`: only listeners with explicit `allowedRoutes.kinds` restrict
/// (a protocol's default kinds are not applied there). From 1.20 a listener of the section
/// without kinds admits at once; before, a listener of the section with kinds and none of them
/// naming the route's kind refuses unless another one with kinds names it.
fn explicit_kinds_admit(candidates: &[&Listener], kind: &str, v: &CiliumVersion) -> bool {
    let names = |l: &Listener| l.kinds.iter().any(|(g, k)| g == GATEWAY_GROUP && k == kind);
    let restricting: Vec<&&Listener> = candidates.iter().filter(|l| !l.kinds.is_empty()).collect();
    if rules::KINDS_ANY_UNRESTRICTED.applies(v) && restricting.len() < candidates.len() {
        return true;
    }
    restricting.is_empty() || restricting.iter().any(|l| names(l))
}

/// `CheckGatewayRouteKindAllowed` at v1.19.5: every listener of the Gateway with explicit kinds,
/// in order, overwrites the route's Accepted, so the last one decides; none with kinds leaves
/// it alone (rules::KINDS_LAST_LISTENER_DECIDES).
fn last_kinds_listener_admits(listeners: &[&Listener], kind: &str) -> bool {
    listeners.iter().rev().find(|l| !l.kinds.is_empty()).is_none_or(|l| l.kinds.iter().any(|(g, k)| g == GATEWAY_GROUP && k == kind))
}

fn kind_admitted(l: &Listener, kind: &str) -> bool {
    supported_kinds(l.protocol).contains(&kind) && (l.kinds.is_empty() || l.kinds.iter().any(|(g, k)| g == GATEWAY_GROUP && k == kind))
}

/// The reconciler's gate before ingestion (`isAllowed` over `listenerisAllowed`, read at
/// v1.19.5, v1.19.6 and v1.19.7): some listener of the Gateway admits the route's kind (its
/// explicit kinds, else its protocol's) and its namespace. Without it, a route accepted on its
/// status is never handed to ingestion.
fn reconciler_allows(gw: &GatewayInput, route: &Route) -> bool {
    gw.listeners.iter().filter(|l| l.origin == Origin::Gateway).any(|l| {
        let kind = if l.kinds.is_empty() {
            supported_kinds(l.protocol).contains(&route.kind.as_str())
        } else {
            l.kinds.iter().any(|(g, k)| g == GATEWAY_GROUP && *k == route.kind)
        };
        kind && namespace_admitted(gw, l, &route.namespace)
    })
}

/// Where a route attached, and what Cilium writes on it.
#[derive(Debug, Clone, Default)]
pub struct Attachment {
    /// parent key -> listener ids the route attached to through that parentRef.
    pub listeners: BTreeMap<String, Vec<String>>,
    /// parent key -> listener ids Cilium's ingestion puts the route on: every listener of the
    /// Gateway (from 1.20 also of a ListenerSet) its parentRef names (section, port) that admits
    /// its namespace, whatever kinds the listener allows, once the route is attached to the
    /// Gateway at all (rules::HTTPROUTE_ON_EVERY_LISTENER, rules::ATTACHABLE_ACCEPTED_ONLY).
    pub ingested: BTreeMap<String, Vec<String>>,
    pub conditions: BTreeMap<String, Vec<ConditionObs>>,
    /// Backends that exist and may be referenced, per rule (same order as the route's rules).
    pub backends: Vec<Vec<BackendRef>>,
    /// The rules that decided a refusal, for explain.
    pub rules: Vec<&'static Rule>,
}

impl Attachment {
    pub fn all_backends(&self) -> impl Iterator<Item = &BackendRef> {
        self.backends.iter().flatten()
    }
}

/// Attaches `route` to the Gateway's listeners and computes its conditions per parentRef.
pub fn attach(gw: &GatewayInput, route: &Route, v: &CiliumVersion) -> Attachment {
    let mut a = Attachment::default();
    // Backends first: ResolvedRefs is the same for every parent.
    let mut resolved = cond("ResolvedRefs", "True", "ResolvedRefs", "Service reference is valid");
    for rule in &route.rules {
        let mut ok = Vec::new();
        for b in &rule.backends {
            let ns = b.namespace.clone().unwrap_or_else(|| route.namespace.clone());
            let granted =
                |g: &input::ReferenceGrant| g.allows((GATEWAY_GROUP, &route.kind, &route.namespace), ("", "Service", &ns, &b.name));
            if ns != route.namespace && !gw.grants.iter().any(granted) {
                resolved = cond(
                    "ResolvedRefs",
                    "False",
                    "RefNotPermitted",
                    &format!("Cross namespace references are not allowed: {ns}/{}", b.name),
                );
                a.rules.push(&rules::BACKEND_GRANT);
                continue;
            }
            if !gw.services.contains(&(ns.clone(), b.name.clone())) {
                resolved = cond("ResolvedRefs", "False", "BackendNotFound", &format!("Service \"{ns}/{}\" not found", b.name));
                a.rules.push(&rules::PASSTHROUGH_NO_BACKENDS);
                continue;
            }
            // From 1.20.1 the port must be one of the Service's: a condition only, the
            // backend is still translated (checkBackendServicePort).
            let ports = gw.service_ports.get(&(ns.clone(), b.name.clone()));
            if rules::BACKEND_PORT_CHECKED.applies(v) && ports.is_some_and(|ps| !ps.contains(&b.port)) {
                resolved = cond(
                    "ResolvedRefs",
                    "False",
                    "BackendNotFound",
                    &format!("Service port {} could not be resolved for backend {ns}/{}", b.port, b.name),
                );
                a.rules.push(&rules::BACKEND_PORT_CHECKED);
            }
            ok.push(BackendRef { namespace: Some(ns), ..b.clone() });
        }
        a.backends.push(ok);
    }
    let single = gw.single.as_deref();
    let mut ingest: Vec<(String, Vec<String>)> = Vec::new();
    // The reconciler's gate before ingestion, a fact of the route and the Gateway.
    let allowed = reconciler_allows(gw, route);
    for p in &route.parent_refs {
        let ns = p.namespace.clone().unwrap_or_else(|| route.namespace.clone());
        let candidates: Vec<&Listener> = if p.is_gateway() && p.name == gw.name && ns == gw.namespace {
            gw.listeners.iter().filter(|l| l.origin == Origin::Gateway).collect()
        } else if p.is_listener_set() && rules::LISTENERSET.applies(v) {
            let Some(ls) = gw.listener_sets.iter().find(|s| s.name == p.name && s.namespace == ns) else { continue };
            if !input::listener_set_allowed(gw, ls) {
                continue;
            }
            ls.listeners.iter().collect()
        } else {
            // Another Gateway's, another kind's, or a parent this Cilium does not know.
            continue;
        };
        let key = p.key(single);
        let candidates: Vec<&Listener> = candidates
            .into_iter()
            .filter(|l| p.section_name.as_ref().is_none_or(|s| *s == l.name) && p.port.is_none_or(|port| port == l.port))
            .collect();
        // Before 1.19.6 ingestion does not ask the listener's namespace policy
        // (rules::INGEST_NAMESPACE_UNCHECKED).
        let ns_unchecked = rules::INGEST_NAMESPACE_UNCHECKED.applies(v) && allowed;
        // From 1.20 ingestion filters per listener source, so a ListenerSet parent puts the
        // route on that set's listeners the same way (rules::ATTACHABLE_ACCEPTED_ONLY).
        if p.is_gateway() || rules::ATTACHABLE_ACCEPTED_ONLY.applies(v) {
            let on: Vec<String> =
                candidates.iter().filter(|l| ns_unchecked || namespace_admitted(gw, l, &route.namespace)).map(|l| l.id.clone()).collect();
            ingest.push((key.clone(), on));
        }
        // Cilium matches the route's hostnames against every listener of the parent, not
        // only the section's (rules::HOSTNAMES_ANY_LISTENER).
        let parent_listeners: Vec<&Listener> = if p.is_gateway() {
            gw.listeners.iter().filter(|l| l.origin == Origin::Gateway).collect()
        } else {
            gw.listener_sets.iter().filter(|s| s.name == p.name && s.namespace == ns).flat_map(|s| s.listeners.iter()).collect()
        };
        // The listeners the namespace check reads: a listener of the section with a hostname
        // only when the route keeps a name there once the owner's other listener hostnames
        // took theirs (rules::NAMESPACE_CHECK_ISOLATED); one without a hostname always.
        let owner_hosts: Vec<String> = parent_listeners.iter().filter_map(|l| l.hostname.clone()).collect();
        let meeting: Vec<&Listener> = candidates
            .iter()
            .copied()
            .filter(|l| l.hostname.as_deref().is_none_or(|h| !compute_hosts(&route.hostnames, Some(h), &owner_hosts).is_empty()))
            .collect();
        // Listeners of the section taking the route's kind and hostnames, and of those the ones
        // admitting its namespace: where an accepted route is translated (all of the first
        // before 1.19.6, see ns_unchecked; the second from 1.19.6).
        let by_kind_host: Vec<&Listener> = candidates
            .iter()
            .copied()
            .filter(|l| kind_admitted(l, &route.kind) && route_matches_listener(&route.hostnames, l.hostname.as_deref()))
            .collect();
        let by_host: Vec<&Listener> = by_kind_host.iter().copied().filter(|l| namespace_admitted(gw, l, &route.namespace)).collect();
        // Before 1.19.6 the first of those that decides (admits the namespace, or has a
        // selector) is the answer (rules::FIRST_SELECTOR_MISS).
        let deciding = meeting
            .iter()
            .find(|l| matches!(l.from, input::FromNamespaces::Selector { .. }) || namespace_admitted(gw, l, &route.namespace));
        let accepted = if candidates.is_empty() {
            cond("Accepted", "False", "NoMatchingParent", "No matching listener")
        } else if rules::FIRST_SELECTOR_MISS.applies(v)
            && deciding
                .is_some_and(|l| matches!(l.from, input::FromNamespaces::Selector { .. }) && !namespace_admitted(gw, l, &route.namespace))
        {
            a.rules.push(&rules::FIRST_SELECTOR_MISS);
            cond(
                "Accepted",
                "False",
                "NotAllowedByListeners",
                "Route is not allowed to attach to this Gateway due to namespace selector restrictions",
            )
        } else {
            // Where the route attaches: listeners admitting its namespace, its kind and its
            // hostnames.
            let by_ns: Vec<&Listener> = candidates
                .iter()
                .copied()
                .filter(|l| namespace_admitted(gw, l, &route.namespace) && kind_admitted(l, &route.kind))
                .collect();
            let any_host = parent_listeners.iter().any(|l| route_matches_listener(&route.hostnames, l.hostname.as_deref()));
            // Whether the route is Accepted: Cilium's separate checks, each over the listeners
            // on its own (rules::ROUTE_CHECKS_SEPARATE), in its order.
            let protocol = parent_listeners.iter().any(|l| supported_kinds(l.protocol).contains(&route.kind.as_str()));
            // At 1.19.5 the kinds check refuses without stopping the later checks, which may
            // still write their own refusal over it; from 1.19.6 it stops them.
            let last_decides = rules::KINDS_LAST_LISTENER_DECIDES.applies(v) && p.is_gateway();
            let kinds = last_decides || explicit_kinds_admit(&candidates, &route.kind, v);
            let kinds_overwritten = last_decides && !last_kinds_listener_admits(&parent_listeners, &route.kind);
            // No listener read by the namespace check: no restriction.
            let namespace = meeting.is_empty() || meeting.iter().any(|l| namespace_admitted(gw, l, &route.namespace));
            if !meeting.iter().any(|l| namespace_admitted(gw, l, &route.namespace))
                && candidates.iter().any(|l| namespace_admitted(gw, l, &route.namespace) && !meeting.contains(l))
            {
                a.rules.push(&rules::NAMESPACE_CHECK_ISOLATED);
            }
            if !(protocol && kinds) {
                if !by_ns.is_empty() {
                    a.rules.push(&rules::ROUTE_CHECKS_SEPARATE);
                }
                cond("Accepted", "False", "NotAllowedByListeners", "Route is not allowed by any listener")
            } else if !any_host {
                cond("Accepted", "False", "NoMatchingListenerHostname", "No matching listener hostname")
            } else if !namespace {
                cond("Accepted", "False", "NotAllowedByListeners", "Route is not allowed by any listener")
            } else if kinds_overwritten {
                a.rules.push(&rules::KINDS_LAST_LISTENER_DECIDES);
                let message = format!("{} is not allowed to attach to this Gateway due to route kind restrictions", route.kind);
                cond("Accepted", "False", "NotAllowedByListeners", &message)
            } else if by_ns.is_empty() {
                a.rules.push(&rules::ROUTE_CHECKS_SEPARATE);
                cond("Accepted", "True", "Accepted", "Accepted")
            } else if by_host.is_empty() {
                a.rules.push(&rules::HOSTNAMES_ANY_LISTENER);
                cond("Accepted", "True", "Accepted", "Accepted")
            } else {
                cond("Accepted", "True", "Accepted", "Accepted")
            }
        };
        // An accepted route is translated on the listeners admitting its kind and hostnames,
        // and, from 1.19.6, its namespace.
        if accepted.status == "True" {
            let attach = if ns_unchecked { &by_kind_host } else { &by_host };
            if attach.len() > by_host.len() {
                a.rules.push(&rules::INGEST_NAMESPACE_UNCHECKED);
            }
            if !attach.is_empty() {
                a.listeners.insert(key.clone(), attach.iter().map(|l| l.id.clone()).collect());
            }
        }
        a.conditions.insert(key, vec![accepted, resolved.clone()]);
    }
    // The reconciler hands ingestion every route attachable to the Gateway (Accepted on one of
    // its parentRefs there, or with unresolved refs: `gateway_reconcile.go: isAttachable`) that
    // some listener allows (`isAllowed`).
    // From 1.20 only Accepted=True counts and the `isAllowed` gate is gone
    // (`helpers.IsParentAttachable`, rules::ATTACHABLE_ACCEPTED_ONLY).
    let accepted_only = rules::ATTACHABLE_ACCEPTED_ONLY.applies(v);
    let attachable = a
        .conditions
        .values()
        .flatten()
        .any(|c| (c.type_ == "Accepted" && c.status == "True") || (!accepted_only && c.type_ == "ResolvedRefs" && c.status == "False"));
    if attachable && (allowed || accepted_only) {
        a.ingested = ingest.into_iter().filter(|(_, on)| !on.is_empty()).collect();
    }
    a
}

/// Hostnames of the other translated listeners with the same protocol (ComputeHosts'
/// isolation set).
pub fn other_hosts(gw: &GatewayInput, listener: &Listener, translated: &BTreeSet<String>) -> Vec<String> {
    gw.listeners
        .iter()
        .filter(|o| o.id != listener.id && o.protocol == listener.protocol && translated.contains(&o.id))
        .filter_map(|o| o.hostname.clone())
        .collect()
}
