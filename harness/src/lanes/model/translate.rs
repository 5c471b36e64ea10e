//! The prediction: which Envoy listeners and filter chains Cilium makes of a Gateway, and which
//! statuses it writes, for one Cilium version. Pure: no Envoy, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::hostnames::compute_hosts;
use super::input::{GatewayInput, Listener, Protocol, Route, TlsMode};
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "to")]
pub enum VhostTarget {
    Service(ServiceKey),
    RedirectHttps { status: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vhost {
    pub route: String,
    pub domains: Vec<String>,
    pub target: VhostTarget,
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
    pub gateway: Vec<ConditionObs>,
    pub listeners: BTreeMap<String, Vec<ConditionObs>>,
    /// route -> parent key -> conditions.
    pub routes: BTreeMap<String, BTreeMap<String, Vec<ConditionObs>>>,
    /// What reaches Envoy. Empty when the agent rejects the whole CiliumEnvoyConfig.
    pub envoy: Vec<EnvoyListener>,
    /// Why nothing reached Envoy, when the agent refused the config.
    pub cec_rejected: Option<String>,
    /// Gateway-level rules that shaped the result, with a sentence each.
    pub notes: Vec<(String, String)>,
}

struct Ctx<'a> {
    gw: &'a GatewayInput,
    /// Listener names that reach translation.
    translated: BTreeSet<String>,
    attachments: BTreeMap<String, Attachment>,
}

impl Ctx<'_> {
    /// Routes attached to `listener`, in manifest order, with the attachment.
    fn routes_on(&self, listener: &str) -> Vec<(&Route, &Attachment)> {
        self.gw
            .routes
            .iter()
            .filter_map(|r| self.attachments.get(&route_key(r)).map(|a| (r, a)))
            .filter(|(_, a)| a.listeners.values().any(|ls| ls.iter().any(|l| l == listener)))
            .collect()
    }

    fn https_listeners(&self) -> Vec<&Listener> {
        self.gw
            .listeners
            .iter()
            .filter(|l| l.protocol == Protocol::Https && l.tls_mode == Some(TlsMode::Terminate) && self.translated.contains(&l.name))
            .collect()
    }

    fn tls_listeners(&self) -> Vec<&Listener> {
        self.gw
            .listeners
            .iter()
            .filter(|l| l.protocol == Protocol::Tls && l.tls_mode == Some(TlsMode::Passthrough) && self.translated.contains(&l.name))
            .collect()
    }

    fn service_keys(&self, a: &Attachment) -> Vec<ServiceKey> {
        a.backends
            .iter()
            .map(|b| ServiceKey {
                namespace: b.namespace.clone().unwrap_or_else(|| self.gw.namespace.clone()),
                service: b.name.clone(),
                port: b.port,
            })
            .collect()
    }

    /// Passthrough chains of the given TLS listeners.
    fn passthrough_chains(&self, listeners: &[&Listener]) -> Vec<Chain> {
        let mut out = Vec::new();
        for l in listeners {
            let others = status::other_hosts(self.gw, l, &self.translated);
            for (r, a) in self.routes_on(&l.name) {
                if a.backends.is_empty() {
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
                    action: ChainAction::TcpProxy { route: r.name.clone(), backends: self.service_keys(a) },
                    tls_secret: None,
                    rule: &rules::PASSTHROUGH_PER_ROUTE,
                });
            }
        }
        out
    }

    /// HTTP virtual hosts of the HTTPRoutes attached to `listeners`.
    fn vhosts(&self, listeners: &[&Listener]) -> Vec<Vhost> {
        let mut out: Vec<Vhost> = Vec::new();
        let mut used: BTreeSet<String> = BTreeSet::new();
        for l in listeners {
            let others = status::other_hosts(self.gw, l, &self.translated);
            for (r, a) in self.routes_on(&l.name).into_iter().filter(|(r, _)| r.kind == "HTTPRoute") {
                let target = if let Some(super::input::Filter::RedirectHttps { status }) = r.filters.first() {
                    VhostTarget::RedirectHttps { status: *status }
                } else if let Some(svc) = self.service_keys(a).into_iter().next() {
                    VhostTarget::Service(svc)
                } else {
                    continue;
                };
                // Envoy refuses a domain twice in one route config; Cilium merges such routes,
                // and the first one wins here.
                let domains: Vec<String> =
                    compute_hosts(&r.hostnames, l.hostname.as_deref(), &others).into_iter().filter(|d| used.insert(d.clone())).collect();
                if !domains.is_empty() {
                    out.push(Vhost { route: r.name.clone(), domains, target });
                }
            }
        }
        out
    }

    /// One terminating chain per Secret of the given HTTPS listeners.
    fn https_chains(&self, listeners: &[&Listener], route_config: &str) -> Vec<Chain> {
        let mut by_secret: BTreeMap<String, Vec<&Listener>> = BTreeMap::new();
        for l in listeners {
            if let Some(s) = l.certificate_refs.first()
                && self.gw.secrets.contains(&(self.gw.namespace.clone(), s.clone()))
            {
                by_secret.entry(s.clone()).or_default().push(l);
            }
        }
        let vhosts = self.vhosts(listeners);
        by_secret
            .into_iter()
            .map(|(secret, ls)| {
                let catch_all = ls.iter().any(|l| l.hostname.is_none());
                let mut names: Vec<String> = ls.iter().filter_map(|l| l.hostname.clone()).collect();
                names.sort();
                names.dedup();
                Chain {
                    server_names: if catch_all { Vec::new() } else { names },
                    transport: Transport::Tls,
                    action: ChainAction::Http { route_config: route_config.to_string(), vhosts: vhosts.clone() },
                    tls_secret: Some(secret),
                    rule: if catch_all { &rules::HTTPS_CATCH_ALL } else { &rules::HTTPS_PER_SECRET },
                }
            })
            .collect()
    }

    fn insecure_chain(&self) -> Chain {
        let http: Vec<&Listener> =
            self.gw.listeners.iter().filter(|l| l.protocol == Protocol::Http && self.translated.contains(&l.name)).collect();
        Chain {
            server_names: Vec::new(),
            transport: Transport::RawBuffer,
            action: ChainAction::Http { route_config: "listener-insecure".into(), vhosts: self.vhosts(&http) },
            tls_secret: None,
            rule: &rules::INSECURE_CHAIN,
        }
    }

    /// `NeedsPerPortListeners` (1.19.6+).
    fn needs_per_port(&self) -> bool {
        let https_ports: BTreeSet<Port> = self.https_listeners().iter().map(|l| l.port).collect();
        let tls_ports = self.tls_ports_with_routes();
        let cross = self.https_listeners().iter().any(|h| {
            self.tls_listeners().iter().filter(|t| t.port != h.port).any(|t| {
                self.routes_on(&t.name).iter().any(|(r, _)| {
                    let hosts: Vec<Option<&str>> = if r.hostnames.is_empty() {
                        vec![t.hostname.as_deref()]
                    } else {
                        r.hostnames.iter().map(|s| Some(s.as_str())).collect()
                    };
                    hosts.into_iter().any(|rh| super::hostnames::sni_intersect(h.hostname.as_deref(), rh))
                })
            })
        });
        https_ports.len() > 1 || tls_ports.len() > 1 || cross
    }

    fn tls_ports_with_routes(&self) -> BTreeSet<Port> {
        self.tls_listeners().iter().filter(|l| !self.routes_on(&l.name).is_empty()).map(|l| l.port).collect()
    }
}

fn route_key(r: &Route) -> String {
    format!("{}/{}", r.kind, r.name)
}

/// Predicts what Cilium `v` makes of the Gateway.
pub fn predict(gw: &GatewayInput, v: &CiliumVersion) -> Prediction {
    let mut notes = Vec::new();
    let conflicted = status::conflicts(gw, v);
    let (listener_conds, gateway_conds) = status::listener_conditions(gw, v, &conflicted);
    let dropped = rules::CONFLICTED_DROPPED.applies(v);
    let translated: BTreeSet<String> =
        gw.listeners.iter().filter(|l| !(dropped && conflicted.contains_key(&l.name))).map(|l| l.name.clone()).collect();
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
    let cx = Ctx { gw, translated, attachments };

    let mut envoy = Vec::new();
    let mut cec_rejected = None;
    let all_ports = |ls: &[&Listener]| -> Vec<Port> {
        let set: BTreeSet<Port> = ls.iter().map(|l| l.port).collect();
        set.into_iter().collect()
    };
    let translated_listeners: Vec<&Listener> = gw.listeners.iter().filter(|l| cx.translated.contains(&l.name)).collect();
    for l in cx.tls_listeners() {
        if cx.routes_on(&l.name).is_empty() {
            notes.push((rules::PASSTHROUGH_NO_ROUTES.id.into(), format!("{}: {}", l.name, rules::PASSTHROUGH_NO_ROUTES.says)));
        }
    }
    if translated_listeners.is_empty() {
        notes.push(("no-listeners".into(), "no listener reaches translation: Envoy gets no listener".into()));
    } else if rules::SINGLE_LISTENER.applies(v) || !cx.needs_per_port() {
        let rule = if rules::SINGLE_LISTENER.applies(v) { &rules::SINGLE_LISTENER } else { &rules::NO_SPLIT };
        let mut chains = vec![cx.insecure_chain()];
        chains.extend(cx.https_chains(&cx.https_listeners(), "listener-secure"));
        chains.extend(cx.passthrough_chains(&cx.tls_listeners()));
        envoy.push(EnvoyListener { name: "listener".into(), ports: all_ports(&translated_listeners), chains, rule });
        notes.push((rule.id.into(), rule.says.into()));
    } else {
        notes.push((rules::PER_PORT.id.into(), rules::PER_PORT.says.into()));
        let tls_ports = cx.tls_ports_with_routes();
        let several_tls = tls_ports.len() > 1;
        let http: Vec<&Listener> = translated_listeners.iter().copied().filter(|l| l.protocol == Protocol::Http).collect();
        let mut main_ports: Vec<&Listener> = http.clone();
        let mut main_chains = vec![cx.insecure_chain()];
        if !several_tls {
            main_ports.extend(cx.tls_listeners());
            main_chains.extend(cx.passthrough_chains(&cx.tls_listeners()));
        }
        if !main_ports.is_empty() {
            envoy.push(EnvoyListener {
                name: "listener".into(),
                ports: all_ports(&main_ports),
                chains: main_chains,
                rule: &rules::PER_PORT,
            });
        }
        let https_ports: BTreeSet<Port> = cx.https_listeners().iter().map(|l| l.port).collect();
        for port in &https_ports {
            let ls: Vec<&Listener> = cx.https_listeners().into_iter().filter(|l| l.port == *port).collect();
            let name = format!("listener-{port}");
            envoy.push(EnvoyListener {
                name: name.clone(),
                ports: vec![*port],
                chains: cx.https_chains(&ls, &name),
                rule: &rules::PER_PORT,
            });
        }
        if several_tls {
            notes.push((rules::PER_PORT_TLS.id.into(), rules::PER_PORT_TLS.says.into()));
            for port in &tls_ports {
                let ls: Vec<&Listener> = cx.tls_listeners().into_iter().filter(|l| l.port == *port).collect();
                envoy.push(EnvoyListener {
                    name: format!("listener-{port}"),
                    ports: vec![*port],
                    chains: cx.passthrough_chains(&ls),
                    rule: &rules::PER_PORT_TLS,
                });
            }
            let mut seen = BTreeSet::new();
            if let Some(dup) = envoy.iter().find(|l| !seen.insert(l.name.clone())) {
                let text = format!("duplicate Listener name \"{}/cilium-gateway-{}/{}\"", gw.namespace, gw.name, dup.name);
                notes.push((rules::DUPLICATE_LISTENER_NAME.id.into(), format!("{text}: {}", rules::DUPLICATE_LISTENER_NAME.says)));
                cec_rejected = Some(text);
                envoy.clear();
            }
        }
    }
    for a in cx.attachments.values() {
        for r in &a.rules {
            if !notes.iter().any(|(id, _)| id == r.id) {
                notes.push((r.id.into(), r.says.into()));
            }
        }
    }
    Prediction { version: v.to_string(), gateway: gateway_conds, listeners: listener_conds, routes, envoy, cec_rejected, notes }
}
