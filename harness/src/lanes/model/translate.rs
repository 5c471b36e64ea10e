//! The prediction: which Envoy listeners and filter chains Cilium makes of a Gateway, and which
//! statuses it writes, for one Cilium version. Pure: no Envoy, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::hostnames::compute_hosts;
use super::input::{Filter, GatewayInput, Listener, PathMatch, PathModifier, Protocol, Route, RouteMatch, TlsMode};
use super::rules::{self, Rule};
use super::status::{self, Attachment};
use crate::case::CiliumVersion;
use crate::judge::ConditionObs;
use crate::types::Port;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Tls,
    RawBuffer,
}

/// A backend Service port: `<namespace>:<service>:<port>`, Cilium's cluster name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ServiceKey {
    pub namespace: String,
    pub service: String,
    pub port: u16,
}

impl ServiceKey {
    pub fn cluster(&self) -> String {
        format!("{}:{}:{}", self.namespace, self.service, self.port)
    }
}

/// What one Envoy route does with a request it matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "to")]
pub enum RouteTarget {
    /// Forward to these Services, weighted, after the rule's rewrites.
    Services { services: Vec<(ServiceKey, u32)> },
    /// A RequestRedirect filter.
    Redirect {
        scheme: Option<String>,
        hostname: Option<String>,
        path: Option<String>,
        prefix: Option<String>,
        port: Option<u16>,
        status: u16,
        /// The route also asks that `X-Forwarded-Proto` is NOT the redirect's scheme (ignoring
        /// case), so a request that already came in over that scheme passes it by
        /// (rules::REDIRECT_PROTO_GUARD); a request without the header still matches.
        #[serde(skip)]
        proto_guard: bool,
    },
    /// A rule whose backends are all invalid: Envoy answers 500 itself.
    NoBackends,
}

/// One Envoy route: a rule's match, its target and the filters that change the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteEntry {
    pub route: String,
    #[serde(skip)]
    pub matcher: RouteMatch,
    pub target: RouteTarget,
    #[serde(skip)]
    pub filters: Vec<Filter>,
    /// The rule and the match within it this entry came from (Cilium's `SourceRule`).
    #[serde(skip)]
    pub rule: (usize, usize),
    /// Other targets Cilium may give this Envoy route instead: it merged the rules of several
    /// HTTPRoutes that joined through one Gateway listener, whose order there is the informer's
    /// and not fixed, and the first decides (rules::ROUTE_ORDER_UNFIXED). Empty when that order
    /// cannot change what the route does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub may_instead: Vec<RouteTarget>,
    /// Merged from several rules that match alike (of several HTTPRoutes, whose names
    /// `route` joins with `+`, or of one: rules::SAME_MATCH_MERGED).
    #[serde(skip)]
    pub merged: bool,
}

type Order = (u8, std::cmp::Reverse<usize>, u8, std::cmp::Reverse<usize>, std::cmp::Reverse<usize>);

impl RouteEntry {
    /// A `/` prefix route to `target` and nothing else (for tests of what reads routes).
    #[cfg(test)]
    pub fn for_test(target: RouteTarget) -> Self {
        RouteEntry {
            route: "r".into(),
            matcher: RouteMatch { path: PathMatch::Prefix("/".into()), headers: Vec::new(), query: Vec::new(), method: None },
            target,
            filters: Vec::new(),
            rule: (0, 0),
            may_instead: Vec::new(),
            merged: false,
        }
    }

    /// Cilium's route order within a virtual host: exact paths, then regular expressions, then
    /// prefixes longest first; then a method match, more header matches, more query matches
    /// (`SortableRoute`, `operator/pkg/model/translation/envoy_virtual_host.go`).
    fn order(&self) -> Order {
        let (rank, len) = match &self.matcher.path {
            PathMatch::Exact(p) => (0, p.len()),
            PathMatch::Regex(p) => (1, p.len()),
            PathMatch::Prefix(p) => (2, p.len()),
        };
        (
            rank,
            std::cmp::Reverse(len),
            u8::from(self.matcher.method.is_none()),
            std::cmp::Reverse(self.matcher.headers.len()),
            std::cmp::Reverse(self.matcher.query.len()),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vhost {
    /// The routes contributing, comma-separated.
    pub route: String,
    pub domains: Vec<String>,
    pub routes: Vec<RouteEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ChainAction {
    Http { route_config: String, vhosts: Vec<Vhost> },
    TcpProxy { route: String, backends: Vec<ServiceKey> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chain {
    /// Empty: matches every SNI of its transport.
    pub server_names: Vec<String>,
    pub transport: Transport,
    pub action: ChainAction,
    /// The Secret whose certificate terminates TLS here.
    pub tls_secret: Option<String>,
    /// The Secret never arrives (it does not exist): Cilium's SDS never serves it, Envoy keeps
    /// the chain and resets every handshake it matches (rules::INVALID_CHAIN_KEPT).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub never_served: bool,
    #[serde(serialize_with = "rule_id")]
    pub rule: &'static Rule,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvoyListener {
    /// Short name as Cilium writes it: `listener`, `listener-<port>`.
    pub name: String,
    pub ports: Vec<Port>,
    pub chains: Vec<Chain>,
    #[serde(serialize_with = "rule_id")]
    pub rule: &'static Rule,
}

fn rule_id<S: serde::Serializer>(r: &&'static Rule, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.id)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub version: String,
    pub gateway_name: String,
    pub gateway: Vec<ConditionObs>,
    /// The Gateway's own listeners by name.
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    /// ListenerSet name -> (its conditions, listener name -> conditions).
    pub listener_sets: BTreeMap<String, status::ListenerSetStatus>,
    /// route -> parent key -> conditions.
    pub routes: BTreeMap<String, BTreeMap<String, Vec<ConditionObs>>>,
    /// What reaches Envoy. Empty when the agent rejects the whole CiliumEnvoyConfig.
    pub envoy: Vec<EnvoyListener>,
    /// Why nothing reached Envoy, when the agent refused the config.
    pub cec_rejected: Option<String>,
    /// Gateway-level rules that shaped the result, with a sentence each.
    pub notes: Vec<(String, String)>,
    /// The routes the API server refuses at this version (rules::TLSROUTE_V1_ADMISSION): they
    /// do not exist on the cluster, so nothing above counts them.
    pub refused: Vec<crate::judge::Refused>,
}

struct Ctx<'a> {
    gw: &'a GatewayInput,
    /// Listener ids that reach translation, with the Secrets each terminates with.
    translated: BTreeMap<String, Vec<status::TlsSecret>>,
    attachments: BTreeMap<String, Attachment>,
    /// The translation asks `len(l.TLS) > 0` (1.19.6 on), not `l.TLS != nil` (1.19.5), which
    /// route configuration a listener's routes join (rules::HTTPS_WITHOUT_SECRET_PLAIN).
    tls_by_secrets: bool,
    /// How the rules of one virtual host with the same match become one Envoy route.
    merge: Merge,
    /// A redirect with a scheme matches only when X-Forwarded-Proto is not that scheme
    /// (rules::REDIRECT_PROTO_GUARD).
    redirect_proto_guard: bool,
}

/// How Cilium's `envoyHTTPRoutes` merges the rules of a virtual host that share a match, at one
/// version (rules::SAME_MATCH_MERGED and the rules it names).
#[derive(Debug, Clone, Copy)]
struct Merge {
    /// Rules of one HTTPRoute with the same match stay separate (rules::DUPLICATE_RULES_KEPT).
    rule_identity: bool,
    /// The first rule's direct response (no backend: 500) wins even when others have backends
    /// (rules::SAME_MATCH_FIRST_DIRECT_RESPONSE); before, 500 only when none has one.
    first_direct_response: bool,
}

impl Merge {
    fn at(v: &CiliumVersion) -> Merge {
        Merge {
            rule_identity: rules::DUPLICATE_RULES_KEPT.applies(v),
            first_direct_response: rules::SAME_MATCH_FIRST_DIRECT_RESPONSE.applies(v),
        }
    }

    /// What the merged Envoy route does when `first` comes first and `union` holds every
    /// backend of the merged rules.
    fn target(self, first: &RouteEntry, union: &[(ServiceKey, u32)]) -> RouteTarget {
        match &first.target {
            RouteTarget::Redirect { .. } => first.target.clone(),
            RouteTarget::NoBackends if self.first_direct_response => RouteTarget::NoBackends,
            _ if union.is_empty() => RouteTarget::NoBackends,
            _ => RouteTarget::Services { services: union.to_vec() },
        }
    }
}

/// One entry of a virtual host with the position of the listener it joined through (`via`).
type Joined = (usize, RouteEntry);

/// Cilium's match key (`HTTPRoute.GetMatchKey`): method, path, and the header and query
/// matches in sorted order.
fn match_key(m: &RouteMatch) -> String {
    let sorted = |v: &[super::input::ValueMatch]| {
        let mut x: Vec<String> = v.iter().map(|h| format!("{h:?}")).collect();
        x.sort();
        x
    };
    format!("{:?}|{:?}|{:?}|{:?}", m.method, m.path, sorted(&m.headers), sorted(&m.query))
}

/// The entries of one virtual host, in the order Cilium appends them (listener by listener,
/// each listener's routes in manifest order here), merged the way `envoyHTTPRoutes` does:
/// one Envoy route per match key, at its first rule's place, doing what that first rule says
/// with the backends of all (rules::SAME_MATCH_MERGED). Within one listener Cilium's order of
/// HTTPRoutes is the informer's, not the manifest's: where another of them coming first would
/// change the route, `may_instead` says how (rules::ROUTE_ORDER_UNFIXED).
fn merge_same_match(joined: Vec<Joined>, merge: Merge) -> Vec<RouteEntry> {
    // From 1.20.1 a match that one HTTPRoute has in two or more rules keys by rule and match.
    let mut rules_per_match: BTreeMap<(String, String), BTreeSet<usize>> = BTreeMap::new();
    for (_, e) in &joined {
        rules_per_match.entry((e.route.clone(), match_key(&e.matcher))).or_default().insert(e.rule.0);
    }
    let key = |e: &RouteEntry| -> String {
        let k = match_key(&e.matcher);
        if merge.rule_identity && rules_per_match.get(&(e.route.clone(), k.clone())).is_some_and(|r| r.len() > 1) {
            format!("{}#{}#{}#{k}", e.route, e.rule.0, e.rule.1)
        } else {
            k
        }
    };
    let mut groups: Vec<(String, Vec<Joined>)> = Vec::new();
    for (via, e) in joined {
        let k = key(&e);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push((via, e)),
            None => groups.push((k, vec![(via, e)])),
        }
    }
    groups
        .into_iter()
        .map(|(_, members)| {
            let union: Vec<(ServiceKey, u32)> = members
                .iter()
                .flat_map(|(_, e)| match &e.target {
                    RouteTarget::Services { services } => services.clone(),
                    _ => Vec::new(),
                })
                .collect();
            let (first_via, first) = (&members[0].0, &members[0].1);
            let target = merge.target(first, &union);
            // Any other HTTPRoute of the first's listener may come first instead.
            let mut may_instead: Vec<RouteTarget> = Vec::new();
            let mut seen: BTreeSet<&str> = BTreeSet::from([first.route.as_str()]);
            for (via, e) in &members {
                if via == first_via && seen.insert(e.route.as_str()) {
                    let t = merge.target(e, &union);
                    if t != target && !may_instead.contains(&t) {
                        may_instead.push(t);
                    }
                }
            }
            let route = members.iter().map(|(_, e)| e.route.as_str()).fold(Vec::<&str>::new(), |mut v, r| {
                if !v.contains(&r) {
                    v.push(r);
                }
                v
            });
            RouteEntry { route: route.join("+"), target, may_instead, merged: members.len() > 1, ..first.clone() }
        })
        .collect()
}

impl Ctx<'_> {
    fn translated_ids(&self) -> BTreeSet<String> {
        self.translated.keys().cloned().collect()
    }

    /// Routes attached to `listener` (an id), in manifest order, with the attachment.
    fn routes_on(&self, listener: &str) -> Vec<(&Route, &Attachment)> {
        self.gw
            .routes
            .iter()
            .filter_map(|r| self.attachments.get(&route_key(r)).map(|a| (r, a)))
            .filter(|(_, a)| a.listeners.values().any(|ls| ls.iter().any(|l| l == listener)))
            .collect()
    }

    /// HTTPRoutes and GRPCRoutes whose rules join `listener`'s virtual hosts, in manifest order.
    fn http_routes_on(&self, listener: &str) -> Vec<(&Route, &Attachment)> {
        self.gw
            .routes
            .iter()
            .filter(|r| r.kind == "HTTPRoute" || r.kind == "GRPCRoute")
            .filter_map(|r| self.attachments.get(&route_key(r)).map(|a| (r, a)))
            // Every listener ingestion puts them on, not only those their status accepts them
            // on (rules::HTTPROUTE_ON_EVERY_LISTENER).
            .filter(|(_, a)| a.ingested.values().any(|ls| ls.iter().any(|l| l == listener)))
            .collect()
    }

    fn translated_listeners(&self) -> Vec<&Listener> {
        self.gw.listeners.iter().filter(|l| self.translated.contains_key(&l.id)).collect()
    }

    fn https_listeners(&self) -> Vec<&Listener> {
        self.translated_listeners()
            .into_iter()
            .filter(|l| l.protocol == Protocol::Https && l.tls_mode == Some(TlsMode::Terminate))
            .collect()
    }

    fn tls_listeners(&self) -> Vec<&Listener> {
        self.translated_listeners()
            .into_iter()
            .filter(|l| l.protocol == Protocol::Tls && l.tls_mode == Some(TlsMode::Passthrough))
            .collect()
    }

    /// Cilium's `len(l.TLS) > 0`: the listeners ingestion gives a certificate Secret (toTLS keeps
    /// every ref a ReferenceGrant does not forbid). What the translation calls HTTPS listeners:
    /// their ports are the HTTPS ports, their Secrets make the terminating chains.
    fn terminating(&self) -> Vec<&Listener> {
        self.translated_listeners().into_iter().filter(|l| self.translated.get(&l.id).is_some_and(|s| !s.is_empty())).collect()
    }

    /// The listeners without a certificate Secret (`len(l.TLS) == 0`): every HTTP and TLS
    /// listener, and an HTTPS listener whose refs toTLS dropped. Ingestion puts all of them in
    /// the model's HTTP listeners, so per-port mode counts them as plain ports.
    fn plain(&self) -> Vec<&Listener> {
        self.translated_listeners().into_iter().filter(|l| self.translated.get(&l.id).is_none_or(|s| s.is_empty())).collect()
    }

    /// The listeners whose HTTP routes join the insecure route configuration: no certificate
    /// Secret from 1.19.6 (`len(l.TLS) == 0`), no `tls` block before (`l.TLS == nil`).
    fn insecure_route_listeners(&self) -> Vec<&Listener> {
        if self.tls_by_secrets { self.plain() } else { self.translated_listeners().into_iter().filter(|l| l.tls_mode.is_none()).collect() }
    }

    /// The complement: the listeners whose routes join the secure route configuration(s).
    fn secure_route_listeners(&self) -> Vec<&Listener> {
        let insecure: BTreeSet<&str> = self.insecure_route_listeners().iter().map(|l| l.id.as_str()).collect();
        self.translated_listeners().into_iter().filter(|l| !insecure.contains(l.id.as_str())).collect()
    }

    fn service_key(&self, b: &super::input::BackendRef) -> ServiceKey {
        ServiceKey { namespace: b.namespace.clone().unwrap_or_else(|| self.gw.namespace.clone()), service: b.name.clone(), port: b.port }
    }

    /// Passthrough chains of the given TLS listeners.
    fn passthrough_chains(&self, listeners: &[&Listener]) -> Vec<Chain> {
        let mut out = Vec::new();
        let ids = self.translated_ids();
        for l in listeners {
            let others = status::other_hosts(self.gw, l, &ids);
            for (r, a) in self.routes_on(&l.id) {
                let backends: Vec<ServiceKey> = a.all_backends().map(|b| self.service_key(b)).collect();
                if backends.is_empty() {
                    continue; // passthrough-no-backends
                }
                let hosts = compute_hosts(&r.hostnames, l.hostname.as_deref(), &others);
                if hosts.is_empty() {
                    continue;
                }
                let server_names = if hosts == ["*"] { Vec::new() } else { hosts };
                out.push(Chain {
                    server_names,
                    transport: Transport::Tls,
                    action: ChainAction::TcpProxy { route: r.name.clone(), backends },
                    tls_secret: None,
                    never_served: false,
                    rule: &rules::PASSTHROUGH_PER_ROUTE,
                });
            }
        }
        out
    }

    /// The Envoy routes of one HTTPRoute or GRPCRoute: one per rule and match.
    /// `listener_port`: the port of the Gateway listener the route joined through, which a
    /// redirect without scheme or port keeps.
    fn route_entries(&self, r: &Route, a: &Attachment, listener_port: u16) -> Vec<RouteEntry> {
        let mut out = Vec::new();
        for (i, rule) in r.rules.iter().enumerate() {
            let valid = a.backends.get(i).cloned().unwrap_or_default();
            let redirect = rule.filters.iter().find_map(|f| match f {
                Filter::RequestRedirect { scheme, hostname, path, port, status } => Some(RouteTarget::Redirect {
                    scheme: scheme.clone(),
                    hostname: hostname.clone(),
                    path: match path {
                        Some(PathModifier::Full(p)) => Some(p.clone()),
                        _ => None,
                    },
                    prefix: match path {
                        Some(PathModifier::Prefix(p)) => Some(p.clone()),
                        _ => None,
                    },
                    // Envoy's port_redirect as Cilium sets it (ingestion/gateway.go:
                    // toHTTPRequestRedirectFilter, translation/envoy_virtual_host.go:
                    // getRouteRedirect, the same at v1.19.5-v1.20.2): the filter's port, else
                    // the listener's when no scheme is given, else the scheme's own (443, 80).
                    // Envoy then writes it into Location, `:443` included (rule
                    // redirect-port-explicit).
                    port: port.or(match scheme.as_deref() {
                        None => Some(listener_port),
                        Some("https") => Some(443),
                        Some("http") => Some(80),
                        Some(_) => None,
                    }),
                    status: *status,
                    proto_guard: self.redirect_proto_guard && scheme.is_some(),
                }),
                _ => None,
            });
            let target = match redirect {
                Some(t) => t,
                None if valid.is_empty() => RouteTarget::NoBackends,
                None => RouteTarget::Services { services: valid.iter().map(|b| (self.service_key(b), b.weight)).collect() },
            };
            let matches = if rule.matches.is_empty() {
                vec![RouteMatch { path: PathMatch::Prefix("/".into()), headers: Vec::new(), query: Vec::new(), method: None }]
            } else {
                rule.matches.clone()
            };
            for (j, m) in matches.into_iter().enumerate() {
                out.push(RouteEntry {
                    route: r.name.clone(),
                    matcher: m,
                    target: target.clone(),
                    filters: rule.filters.clone(),
                    rule: (i, j),
                    may_instead: Vec::new(),
                    merged: false,
                });
            }
        }
        out
    }

    /// HTTP virtual hosts of the HTTPRoutes and GRPCRoutes attached to `listeners`: one per
    /// hostname, holding every matching route's rules in Cilium's order.
    fn vhosts(&self, listeners: &[&Listener]) -> Vec<Vhost> {
        let mut by_host: BTreeMap<String, (Vec<String>, Vec<Joined>)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        let ids = self.translated_ids();
        for (via, l) in listeners.iter().enumerate() {
            let others = status::other_hosts(self.gw, l, &ids);
            for (r, a) in self.http_routes_on(&l.id) {
                let entries = self.route_entries(r, a, l.port.get());
                for d in compute_hosts(&r.hostnames, l.hostname.as_deref(), &others) {
                    let slot = by_host.entry(d.clone()).or_insert_with(|| {
                        order.push(d.clone());
                        (Vec::new(), Vec::new())
                    });
                    // A route attached through two listeners of one Envoy listener counts once.
                    if !slot.0.contains(&r.name) {
                        slot.0.push(r.name.clone());
                        slot.1.extend(entries.iter().cloned().map(|e| (via, e)));
                    }
                }
            }
        }
        order
            .into_iter()
            .filter_map(|d| {
                let (names, joined) = by_host.remove(&d)?;
                let mut routes = merge_same_match(joined, self.merge);
                routes.sort_by_key(RouteEntry::order);
                Some(Vhost { route: names.join(","), domains: vec![d], routes })
            })
            .collect()
    }

    /// One terminating chain per Secret of the given HTTPS listeners (`TLSSecretsToHostnames`),
    /// in Secret order (namespace/name), serving the routes of `routes_of`.
    fn https_chains(&self, listeners: &[&Listener], routes_of: &[&Listener], route_config: &str) -> Vec<Chain> {
        let mut by_secret: BTreeMap<(String, String), (bool, Vec<&Listener>)> = BTreeMap::new();
        for l in listeners {
            for s in self.translated.get(&l.id).into_iter().flatten() {
                by_secret.entry((s.namespace.clone(), s.name.clone())).or_insert((s.arrives, Vec::new())).1.push(l);
            }
        }
        let vhosts = self.vhosts(routes_of);
        by_secret
            .into_iter()
            .map(|((_, secret), (arrives, ls))| {
                let catch_all = ls.iter().any(|l| l.hostname.is_none());
                let mut names: Vec<String> = ls.iter().filter_map(|l| l.hostname.clone()).collect();
                names.sort();
                names.dedup();
                Chain {
                    server_names: if catch_all { Vec::new() } else { names },
                    transport: Transport::Tls,
                    action: ChainAction::Http { route_config: route_config.to_string(), vhosts: vhosts.clone() },
                    tls_secret: Some(secret),
                    never_served: !arrives,
                    rule: if !arrives {
                        &rules::INVALID_CHAIN_KEPT
                    } else if catch_all {
                        &rules::HTTPS_CATCH_ALL
                    } else {
                        &rules::HTTPS_PER_SECRET
                    },
                }
            })
            .collect()
    }

    fn insecure_chain(&self) -> Chain {
        Chain {
            server_names: Vec::new(),
            transport: Transport::RawBuffer,
            action: ChainAction::Http { route_config: "listener-insecure".into(), vhosts: self.vhosts(&self.insecure_route_listeners()) },
            tls_secret: None,
            never_served: false,
            rule: &rules::INSECURE_CHAIN,
        }
    }

    /// `NeedsPerPortListeners` (1.19.6+): more than one HTTPS port, more than one TLS port with
    /// routes, or a terminating listener's hostname meeting a TLS route's (computed) hostname on
    /// another port (`NeedsCrossProtocolSplit`). HTTPS means a certificate Secret
    /// (rules::HTTPS_WITHOUT_SECRET_PLAIN).
    fn needs_per_port(&self) -> bool {
        let https_ports: BTreeSet<Port> = self.terminating().iter().map(|l| l.port).collect();
        let tls_ports = self.tls_ports_with_routes();
        let ids = self.translated_ids();
        let cross = self.terminating().iter().any(|h| {
            self.tls_listeners().iter().filter(|t| t.port != h.port).any(|t| {
                let others = status::other_hosts(self.gw, t, &ids);
                self.routes_on(&t.id).iter().any(|(r, _)| {
                    compute_hosts(&r.hostnames, t.hostname.as_deref(), &others).iter().any(|rh| {
                        let rh = if rh == "*" { None } else { Some(rh.as_str()) };
                        super::hostnames::sni_intersect(h.hostname.as_deref(), rh)
                    })
                })
            })
        });
        https_ports.len() > 1 || tls_ports.len() > 1 || cross
    }

    /// `TLSPassthroughPorts`: the ports of TLS listeners with routes in Cilium's model, which
    /// toTLSRoutes gives a listener only where ComputeHosts leaves the route a hostname (a
    /// name another TLS listener claims is not the catch-all's), backends or not.
    fn tls_ports_with_routes(&self) -> BTreeSet<Port> {
        let ids = self.translated_ids();
        self.tls_listeners()
            .iter()
            .filter(|l| {
                let others = status::other_hosts(self.gw, l, &ids);
                self.routes_on(&l.id).iter().any(|(r, _)| !compute_hosts(&r.hostnames, l.hostname.as_deref(), &others).is_empty())
            })
            .map(|l| l.port)
            .collect()
    }
}

/// What cilium-agent says of the first listener with two chains of the same match
/// (`listenerHasDuplicateFilterChainMatch`, rules::DUPLICATE_CHAIN_MATCH): the match is what
/// the chain renders (`toFilterChainMatch`): its transport and, for TLS, its server names in
/// order (a plain chain carries none).
pub(super) fn duplicate_chain_match(gw: &GatewayInput, envoy: &[EnvoyListener]) -> Option<String> {
    let dup = envoy.iter().find(|l| {
        let matches: Vec<(Transport, &[String])> =
            l.chains.iter().map(|c| (c.transport, if c.transport == Transport::Tls { c.server_names.as_slice() } else { &[] })).collect();
        matches.iter().enumerate().any(|(i, m)| matches[..i].contains(m))
    })?;
    Some(format!(
        "Listener \"{}/{}/{}\" contains filter chains with duplicate matching rules",
        gw.namespace,
        crate::judge::cilium_gateway_resource(&gw.name),
        dup.name
    ))
}

/// `desiredEnvoyListenerPerPort` and the CiliumEnvoyConfig's services
/// (`desiredServicesWithPortsSplit`) as cilium-agent sends each Gateway port to the first entry
/// naming it (`ProxyRedirects.ForPort`). Fills `envoy`; says why the agent refuses the whole CEC,
/// if it does (two listeners of one name).
fn per_port(cx: &Ctx, envoy: &mut Vec<EnvoyListener>, notes: &mut Vec<(String, String)>) -> Option<String> {
    notes.push((rules::PER_PORT.id.into(), rules::PER_PORT.says.into()));
    let tls_ports = cx.tls_ports_with_routes();
    let several_tls = tls_ports.len() > 1;
    // `len(l.TLS) == 0 && !tlsPassthroughPorts[l.Port]`: the plain ports `listener` takes.
    let plain_ports: BTreeSet<Port> = cx.plain().iter().map(|l| l.port).filter(|p| !tls_ports.contains(p)).collect();
    let tls_on_base = !several_tls && !tls_ports.is_empty();
    if cx.tls_by_secrets && cx.https_listeners().iter().any(|l| cx.translated.get(&l.id).is_some_and(|s| s.is_empty())) {
        notes.push((rules::HTTPS_WITHOUT_SECRET_PLAIN.id.into(), rules::HTTPS_WITHOUT_SECRET_PLAIN.says.into()));
    }
    if !plain_ports.is_empty() || tls_on_base {
        let mut chains = Vec::new();
        if plain_ports.is_empty() {
            notes.push((rules::PER_PORT_NO_INSECURE.id.into(), rules::PER_PORT_NO_INSECURE.says.into()));
        } else {
            chains.push(cx.insecure_chain());
        }
        if tls_on_base {
            chains.extend(cx.passthrough_chains(&cx.tls_listeners()));
        }
        envoy.push(EnvoyListener { name: "listener".into(), ports: Vec::new(), chains, rule: &rules::PER_PORT });
    } else {
        notes.push((rules::PER_PORT_NO_INSECURE.id.into(), rules::PER_PORT_NO_INSECURE.says.into()));
    }
    let terminating = cx.terminating();
    let https_ports: BTreeSet<Port> = terminating.iter().map(|l| l.port).collect();
    for port in &https_ports {
        let ls: Vec<&Listener> = terminating.iter().copied().filter(|l| l.port == *port).collect();
        let name = format!("listener-{port}");
        envoy.push(EnvoyListener {
            name: name.clone(),
            ports: Vec::new(),
            chains: cx.https_chains(&ls, &ls, &name),
            rule: &rules::PER_PORT,
        });
    }
    if several_tls {
        notes.push((rules::PER_PORT_TLS.id.into(), rules::PER_PORT_TLS.says.into()));
        for port in &tls_ports {
            let ls: Vec<&Listener> = cx.tls_listeners().into_iter().filter(|l| l.port == *port).collect();
            let chains = cx.passthrough_chains(&ls);
            if chains.is_empty() {
                let says = rules::PER_PORT_TLS_EMPTY_SKIPPED.says;
                notes.push((rules::PER_PORT_TLS_EMPTY_SKIPPED.id.into(), format!("TLS port {port}: {says}")));
                continue;
            }
            envoy.push(EnvoyListener { name: format!("listener-{port}"), ports: Vec::new(), chains, rule: &rules::PER_PORT_TLS });
        }
        let mut seen = BTreeSet::new();
        if let Some(dup) = envoy.iter().find(|l| !seen.insert(l.name.clone())) {
            let text = format!(
                "duplicate Listener name \"{}/{}/{}\"",
                cx.gw.namespace,
                crate::judge::cilium_gateway_resource(&cx.gw.name),
                dup.name
            );
            notes.push((rules::DUPLICATE_LISTENER_NAME.id.into(), format!("{text}: {}", rules::DUPLICATE_LISTENER_NAME.says)));
            envoy.clear();
            return Some(text);
        }
    }
    // The services, in the CEC's order: the plain ports to `listener`, each HTTPS port to its
    // `listener-<port>`, then the TLS ports (each to its `listener-<port>`, or all to
    // `listener`). An entry whose listener the CEC does not hold redirects nothing
    // (getProxyRedirect); the first entry naming a port takes it (ForPort).
    let mut entries: Vec<(String, Vec<Port>)> = Vec::new();
    if !plain_ports.is_empty() {
        entries.push(("listener".into(), plain_ports.iter().copied().collect()));
    }
    entries.extend(https_ports.iter().map(|p| (format!("listener-{p}"), vec![*p])));
    if several_tls {
        entries.extend(tls_ports.iter().map(|p| (format!("listener-{p}"), vec![*p])));
    } else if !tls_ports.is_empty() {
        entries.push(("listener".into(), tls_ports.iter().copied().collect()));
    }
    let named: BTreeSet<Port> = entries.iter().flat_map(|(_, ps)| ps.iter().copied()).collect();
    for port in named {
        let mut takers = entries.iter().filter(|(l, ps)| ps.contains(&port) && envoy.iter().any(|e| &e.name == l)).map(|(l, _)| l);
        let Some(first) = takers.next() else { continue };
        let passed: Vec<&String> = takers.filter(|l| *l != first).collect();
        if !passed.is_empty() {
            let names: Vec<&str> = passed.iter().map(|l| l.as_str()).collect();
            notes.push((
                rules::PORT_FIRST_SERVICE_ENTRY.id.into(),
                format!("port {port} goes to {first}; {} kept, unreached: {}", names.join(", "), rules::PORT_FIRST_SERVICE_ENTRY.says),
            ));
        }
        if let Some(l) = envoy.iter_mut().find(|e| &e.name == first) {
            l.ports.push(port);
        }
    }
    None
}

fn route_key(r: &Route) -> String {
    format!("{}/{}", r.kind, r.name)
}

/// Predicts what Cilium `v` makes of the Gateway.
pub fn predict(gw: &GatewayInput, v: &CiliumVersion) -> Prediction {
    let mut notes = Vec::new();
    // What the API server refuses never reaches Cilium: predict over what it admits.
    let refused = super::admission::refused_routes(gw, v);
    let admitted;
    let gw = if refused.is_empty() {
        gw
    } else {
        let r = &rules::TLSROUTE_V1_ADMISSION;
        let which: Vec<String> = refused.iter().map(|x| format!("{} {}", x.kind, x.name)).collect();
        notes.push((r.id.to_string(), format!("refused by the API server: {}; {}", which.join(", "), r.says)));
        admitted = super::admission::admitted(gw, &refused);
        &admitted
    };
    let conflicted = status::conflicts(gw, v);
    let st = status::listener_statuses(gw, v, &conflicted);
    let dropped = rules::CONFLICTED_DROPPED.applies(v);
    let translated = st.translated.clone();
    for r in &st.rules {
        if !notes.iter().any(|(id, _): &(String, String)| id == r.id) {
            notes.push((r.id.to_string(), r.says.to_string()));
        }
    }
    if !conflicted.is_empty() {
        let names: Vec<&str> = conflicted.keys().map(String::as_str).collect();
        let rule = if dropped { &rules::CONFLICTED_DROPPED } else { &rules::CONFLICTED_TRANSLATED };
        notes.push((rule.id.to_string(), format!("conflicted: {}; {}", names.join(", "), rule.says)));
    }

    let mut attachments = BTreeMap::new();
    let mut routes = BTreeMap::new();
    for r in &gw.routes {
        let a = status::attach(gw, r, v);
        routes.insert(r.name.clone(), a.conditions.clone());
        attachments.insert(route_key(r), a);
    }
    let cx = Ctx {
        gw,
        translated,
        attachments,
        tls_by_secrets: rules::HTTPS_WITHOUT_SECRET_PLAIN.applies(v),
        merge: Merge::at(v),
        redirect_proto_guard: rules::REDIRECT_PROTO_GUARD.applies(v),
    };

    let mut envoy = Vec::new();
    let mut cec_rejected = None;
    let all_ports = |ls: &[&Listener]| -> Vec<Port> {
        let set: BTreeSet<Port> = ls.iter().map(|l| l.port).collect();
        set.into_iter().collect()
    };
    let translated_listeners: Vec<&Listener> = cx.translated_listeners();
    for l in cx.tls_listeners() {
        if cx.routes_on(&l.id).is_empty() {
            notes.push((rules::PASSTHROUGH_NO_ROUTES.id.into(), format!("{}: {}", l.id, rules::PASSTHROUGH_NO_ROUTES.says)));
        }
    }
    if translated_listeners.is_empty() {
        notes.push(("no-listeners".into(), "no listener reaches translation: Envoy gets no listener".into()));
    } else if rules::SINGLE_LISTENER.applies(v) || !cx.needs_per_port() {
        let rule = if rules::SINGLE_LISTENER.applies(v) { &rules::SINGLE_LISTENER } else { &rules::NO_SPLIT };
        let mut chains = vec![cx.insecure_chain()];
        chains.extend(cx.https_chains(&cx.terminating(), &cx.secure_route_listeners(), "listener-secure"));
        chains.extend(cx.passthrough_chains(&cx.tls_listeners()));
        envoy.push(EnvoyListener { name: "listener".into(), ports: all_ports(&translated_listeners), chains, rule });
        notes.push((rule.id.into(), rule.says.into()));
        if cx.tls_by_secrets && cx.https_listeners().len() != cx.terminating().iter().filter(|l| l.protocol == Protocol::Https).count() {
            notes.push((rules::HTTPS_WITHOUT_SECRET_PLAIN.id.into(), rules::HTTPS_WITHOUT_SECRET_PLAIN.says.into()));
        }
    } else {
        cec_rejected = per_port(&cx, &mut envoy, &mut notes);
    }
    if cec_rejected.is_none()
        && rules::DUPLICATE_CHAIN_MATCH.applies(v)
        && let Some(text) = duplicate_chain_match(gw, &envoy)
    {
        notes.push((rules::DUPLICATE_CHAIN_MATCH.id.into(), format!("{text}: {}", rules::DUPLICATE_CHAIN_MATCH.says)));
        envoy.clear();
        cec_rejected = Some(text);
    }
    for a in cx.attachments.values() {
        for r in &a.rules {
            if !notes.iter().any(|(id, _)| id == r.id) {
                notes.push((r.id.into(), r.says.into()));
            }
        }
    }
    // Rules of a virtual host that matched alike were merged into one Envoy route: say which
    // routes' rules (an entry merged from several HTTPRoutes carries their names joined by `+`;
    // one merged from rules of one HTTPRoute, before 1.20.1, that route's name).
    let entries: Vec<&RouteEntry> = envoy
        .iter()
        .flat_map(|l| &l.chains)
        .filter_map(|c| match &c.action {
            ChainAction::Http { vhosts, .. } => Some(vhosts),
            ChainAction::TcpProxy { .. } => None,
        })
        .flatten()
        .flat_map(|v| &v.routes)
        .collect();
    let merged: Vec<&&RouteEntry> = entries.iter().filter(|e| e.merged).collect();
    let mut said = |r: &Rule, detail: String| {
        if !notes.iter().any(|(id, _)| id == r.id) {
            notes.push((r.id.into(), format!("{}{detail}", r.says)));
        }
    };
    if !merged.is_empty() {
        let names: BTreeSet<String> = merged.iter().map(|e| e.route.replace('+', ", ")).collect();
        said(&rules::SAME_MATCH_MERGED, format!(" (here: {})", names.into_iter().collect::<Vec<_>>().join("; ")));
        if rules::SAME_MATCH_FIRST_DIRECT_RESPONSE.applies(v) {
            said(&rules::SAME_MATCH_FIRST_DIRECT_RESPONSE, String::new());
        }
    }
    if rules::DUPLICATE_RULES_KEPT.applies(v)
        && entries
            .iter()
            .any(|e| entries.iter().any(|o| o.route == e.route && o.rule.0 != e.rule.0 && match_key(&o.matcher) == match_key(&e.matcher)))
    {
        said(&rules::DUPLICATE_RULES_KEPT, String::new());
    }
    if entries.iter().any(|e| !e.may_instead.is_empty()) {
        said(&rules::ROUTE_ORDER_UNFIXED, String::new());
    }
    if entries.iter().any(|e| matches!(e.target, RouteTarget::Redirect { .. })) {
        said(&rules::REDIRECT_PORT_EXPLICIT, String::new());
    }
    Prediction {
        version: v.to_string(),
        gateway_name: gw.name.clone(),
        gateway: st.gateway,
        listeners: st.listeners,
        listener_sets: st.listener_sets,
        routes,
        envoy,
        cec_rejected,
        notes,
        refused,
    }
}
