//! What the model reads from a case: the Gateway, routes, ReferenceGrants and namespaces, as
//! typed values. Anything the model does not understand is an error naming the case, the
//! object and the field, so an unsupported layout is never silently predicted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::case::Case;
use crate::case::manifests::{self, Object};
use crate::case::template::Vars;
use crate::types::{BackendName, Port};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    Http,
    Https,
    Tls,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http => "HTTP",
            Protocol::Https => "HTTPS",
            Protocol::Tls => "TLS",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsMode {
    Terminate,
    Passthrough,
}

/// A namespace selector as Gateway API writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromNamespaces {
    Same,
    All,
    /// `allowedListeners` only: no namespace.
    None,
    Selector {
        match_labels: BTreeMap<String, String>,
        expressions: Vec<Expression>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// A `tls.certificateRefs` entry as written (group and kind default to a core Secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

/// Where a listener is declared: on the Gateway itself, or in a ListenerSet attached to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    Gateway,
    ListenerSet { namespace: String, name: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Unique among the Gateway's merged listeners: the name for a Gateway listener,
    /// `<listenerset>/<name>` for a ListenerSet's.
    pub id: String,
    pub name: String,
    pub origin: Origin,
    pub port: Port,
    pub protocol: Protocol,
    pub hostname: Option<String>,
    pub tls_mode: Option<TlsMode>,
    pub cert_refs: Vec<CertRef>,
    pub from: FromNamespaces,
    /// Declared allowedRoutes.kinds as (group, kind); empty means the protocol's defaults.
    pub kinds: Vec<(String, String)>,
}

/// A ListenerSet (Gateway API 1.6): listeners declared apart from their Gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSetInput {
    pub name: String,
    pub namespace: String,
    /// The Gateway it names as parent (group and kind already checked to be a Gateway).
    pub parent: Option<(String, String)>,
    /// Its listeners, with `origin` and `id` set.
    pub listeners: Vec<Listener>,
}

pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub section_name: Option<String>,
    pub port: Option<Port>,
}

impl ParentRef {
    /// The key expectations and statuses use for this parentRef: see
    /// [`crate::case::manifests::parent_key`].
    pub fn key(&self, single_gateway: Option<&str>) -> String {
        crate::case::manifests::parent_key(&self.kind, &self.name, self.section_name.as_deref(), single_gateway)
    }
    pub fn is_gateway(&self) -> bool {
        self.group == GATEWAY_GROUP && self.kind == "Gateway"
    }
    pub fn is_listener_set(&self) -> bool {
        self.group == GATEWAY_GROUP && self.kind == "ListenerSet"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendRef {
    pub name: String,
    pub namespace: Option<String>,
    pub port: u16,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatch {
    Exact(String),
    Prefix(String),
    Regex(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueMatch {
    pub name: String,
    pub value: String,
    pub regex: bool,
}

/// One `matches` entry of an HTTPRoute (or GRPCRoute) rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch {
    pub path: PathMatch,
    pub headers: Vec<ValueMatch>,
    pub query: Vec<ValueMatch>,
    pub method: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathModifier {
    Full(String),
    Prefix(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    RequestRedirect {
        scheme: Option<String>,
        hostname: Option<String>,
        path: Option<PathModifier>,
        port: Option<u16>,
        status: u16,
    },
    UrlRewrite {
        hostname: Option<String>,
        path: Option<PathModifier>,
    },
    /// Header modifiers: (set, add, remove), for request or response.
    Headers {
        response: bool,
        set: Vec<(String, String)>,
        add: Vec<(String, String)>,
        remove: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRule {
    pub matches: Vec<RouteMatch>,
    pub filters: Vec<Filter>,
    pub backends: Vec<BackendRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub parent_refs: Vec<ParentRef>,
    pub hostnames: Vec<String>,
    pub rules: Vec<RouteRule>,
    /// The API server's message refusing it, by the CRD installation that refuses it
    /// ([`super::admission::Installed::key`]); empty when every installation admits it.
    pub refused: BTreeMap<String, String>,
}

impl Route {
    /// Every backendRef of every rule.
    pub fn backends(&self) -> impl Iterator<Item = &BackendRef> {
        self.rules.iter().flat_map(|r| r.backends.iter())
    }
}

/// A ReferenceGrant entry: who may refer (`from`), and to what (`to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantFrom {
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantTo {
    pub group: String,
    pub kind: String,
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceGrant {
    pub namespace: String,
    pub from: Vec<GrantFrom>,
    pub to: Vec<GrantTo>,
}

impl ReferenceGrant {
    /// `helpers.IsBackendReferenceAllowed` / `IsSecretReferenceAllowed`: a grant in the
    /// target's namespace whose `from` names the referrer's group, kind and namespace, and whose
    /// `to` names the target's group and kind (and name, if it gives one).
    pub fn allows(&self, from: (&str, &str, &str), to: (&str, &str, &str, &str)) -> bool {
        let (fg, fk, fns) = from;
        let (tg, tk, tns, tname) = to;
        self.namespace == tns
            && self.from.iter().any(|f| f.group == fg && f.kind == fk && f.namespace == fns)
            && self.to.iter().any(|t| t.group == tg && t.kind == tk && t.name.as_deref().is_none_or(|n| n == tname))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayInput {
    pub name: String,
    pub namespace: String,
    /// The Gateway's own listeners, then those of every ListenerSet it allows, in precedence
    /// order.
    pub listeners: Vec<Listener>,
    /// `spec.allowedListeners.namespaces`; `None` is the default (no ListenerSet allowed).
    pub allowed_listeners: Option<FromNamespaces>,
    /// Every ListenerSet naming this Gateway as parent, allowed or not, in precedence order.
    pub listener_sets: Vec<ListenerSetInput>,
    pub routes: Vec<Route>,
    pub grants: Vec<ReferenceGrant>,
    /// Namespace name -> labels (the case's own namespace always exists).
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// (namespace, name) of Services that exist.
    pub services: BTreeSet<(String, String)>,
    /// The ports of the Services whose ports are known (a case's backends, as the cluster
    /// lanes create them); a Service not here is not port-checked (rules::BACKEND_PORT_CHECKED).
    pub service_ports: BTreeMap<(String, String), Vec<u16>>,
    /// (namespace, name) of Secrets that exist.
    pub secrets: BTreeSet<(String, String)>,
    /// The Gateway the case's plain keys speak of, when the manifests have only one.
    pub single: Option<String>,
}

/// A manifest the model cannot predict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("case {case}: {file}:{line}: {kind} {name}: {message}")]
pub struct ModelInputError {
    pub case: String,
    pub file: String,
    pub line: u64,
    pub kind: String,
    pub name: String,
    pub message: String,
}

const SUPPORTED_KINDS: &[&str] = &["Gateway", "ListenerSet", "HTTPRoute", "GRPCRoute", "TLSRoute", "ReferenceGrant"];

/// The namespace the model places a case in; the kind lane uses a unique one instead.
pub fn model_namespace(case: &Case) -> String {
    format!("lg-{}", case.slug())
}

/// What the model knows besides the manifests: where namespace-less objects live, and the
/// Services and Secrets that exist without being among them (a case's `backends:` and
/// `certificates:`; nothing, for manifests read on their own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadContext {
    /// Names the input in errors (a case name, a folder).
    pub label: String,
    /// The namespace of objects that name none.
    pub namespace: String,
    /// (namespace, name) of Services that exist.
    pub services: BTreeSet<(String, String)>,
    /// The ports of those whose ports are known (see [`GatewayInput::service_ports`]).
    pub service_ports: BTreeMap<(String, String), Vec<u16>>,
    /// (namespace, name) of Secrets that exist.
    pub secrets: BTreeSet<(String, String)>,
}

/// Every Gateway of the manifests, each with the world it sees (routes, grants, namespaces,
/// Services, Secrets), in manifest order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInput {
    pub gateways: Vec<GatewayInput>,
}

impl ModelInput {
    pub fn gateway(&self, name: &str) -> Option<&GatewayInput> {
        self.gateways.iter().find(|g| g.name == name)
    }
}

/// Reads a case's manifests into a model input: renders them, then [`from_objects`].
pub fn read(case: &Case) -> Result<ModelInput, Box<ModelInputError>> {
    let namespace = model_namespace(case);
    let vars = Vars { apex: case.apex.clone(), namespace: namespace.clone(), gateway: case.gateway.clone() };
    let mut objects = Vec::new();
    for m in &case.manifests {
        let objs = manifests::parse_file(&m.path, &m.text, &vars).map_err(|p| {
            Box::new(ModelInputError {
                case: case.name.clone(),
                file: p.file.display().to_string(),
                line: p.line,
                kind: "manifest".into(),
                name: p.field,
                message: p.message,
            })
        })?;
        objects.extend(objs);
    }
    let cx = ReadContext {
        label: case.name.clone(),
        services: case.backends.keys().map(|b: &BackendName| (case.backend_namespace(b, &namespace), b.to_string())).collect(),
        // The one port each backend's Service has where the cluster lanes create it
        // (lanes/cluster/manifests.rs backend): 443 for a TLS backend, 80 for a plain one.
        service_ports: case
            .backends
            .iter()
            .map(|(b, kind)| {
                let port = match kind {
                    crate::case::Backend::Tls { .. } => 443,
                    crate::case::Backend::Http => 80,
                };
                ((case.backend_namespace(b, &namespace), b.to_string()), vec![port])
            })
            .collect(),
        secrets: case
            .certificates
            .iter()
            .map(|c| (case.certificate_namespace(&c.name, &namespace), crate::case::template::secret_name(&c.name)))
            .collect(),
        namespace,
    };
    from_objects(&objects, &cx)
}

/// `check`'s reading of a derived case: its backends stand in for the input's Services, whose
/// ports the derived case does not carry, so no Service's ports are known and none is
/// port-checked (rules::BACKEND_PORT_CHECKED is then not predicted: a limit of `check`).
pub fn read_derived(case: &Case) -> Result<ModelInput, Box<ModelInputError>> {
    let mut m = read(case)?;
    for g in &mut m.gateways {
        g.service_ports.clear();
    }
    Ok(m)
}

/// Reads already-parsed manifest objects (with their file and line) into a model input. Any
/// kind or field the model cannot predict is an error naming the file, line, object and field.
pub fn from_objects(objects: &[Object], cx: &ReadContext) -> Result<ModelInput, Box<ModelInputError>> {
    let namespace = cx.namespace.clone();
    let mut world = GatewayInput {
        name: String::new(),
        namespace: namespace.clone(),
        listeners: Vec::new(),
        allowed_listeners: None,
        listener_sets: Vec::new(),
        routes: Vec::new(),
        grants: Vec::new(),
        namespaces: BTreeMap::from([(namespace.clone(), BTreeMap::from([("kubernetes.io/metadata.name".to_string(), namespace.clone())]))]),
        services: cx.services.clone(),
        service_ports: cx.service_ports.clone(),
        secrets: cx.secrets.clone(),
        single: None,
    };
    let mut gateways: Vec<GatewayInput> = Vec::new();
    let mut sets: Vec<ListenerSetInput> = Vec::new();
    for o in objects {
        let err = |message: String| {
            Box::new(ModelInputError {
                case: cx.label.clone(),
                file: o.file.display().to_string(),
                line: o.line,
                kind: o.kind.clone(),
                name: o.name.clone(),
                message,
            })
        };
        let ns = o.namespace.clone().unwrap_or_else(|| namespace.clone());
        let group = o.group();
        match (group, o.kind.as_str()) {
            (GATEWAY_GROUP, "Gateway") => {
                if gateways.iter().any(|g| g.name == o.name && g.namespace == ns) {
                    return Err(err(format!("Gateway {ns}/{} is declared twice", o.name)));
                }
                let (listeners, allowed) = gateway(o).map_err(err)?;
                gateways.push(GatewayInput { name: o.name.clone(), namespace: ns, listeners, allowed_listeners: allowed, ..world.clone() });
            }
            (GATEWAY_GROUP, "ListenerSet") => sets.push(listener_set(o, ns).map_err(err)?),
            (GATEWAY_GROUP, "HTTPRoute" | "TLSRoute" | "GRPCRoute") => world.routes.push(route(o, ns).map_err(err)?),
            (GATEWAY_GROUP, "ReferenceGrant") => world.grants.push(grant(o, ns).map_err(err)?),
            ("", "Namespace") => {
                let mut labels: BTreeMap<String, String> = string_map(o.value.pointer("/metadata/labels")).map_err(err)?;
                labels.insert("kubernetes.io/metadata.name".into(), o.name.clone());
                world.namespaces.insert(o.name.clone(), labels);
            }
            // Existence is what the model needs of a Service or Secret: the backends serve
            // in-process, the certificates are the case's.
            ("", "Service") => {
                // Its own ports, where it names them, are what Cilium checks a backendRef's
                // port against (rules::BACKEND_PORT_CHECKED), over a stand-in's.
                let ports: Vec<u16> = o
                    .value
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()))
                    .collect();
                if !ports.is_empty() {
                    world.service_ports.insert((ns.clone(), o.name.clone()), ports);
                }
                world.services.insert((ns, o.name.clone()));
            }
            ("", "Secret") => {
                world.secrets.insert((ns, o.name.clone()));
            }
            (g, k) => {
                let shown = if g.is_empty() { k.to_string() } else { format!("{k} ({g})") };
                return Err(err(format!(
                    "the model does not understand kind {shown}; it models {} (gateway.networking.k8s.io) and Service, Secret, Namespace (core)",
                    SUPPORTED_KINDS.join(", ")
                )));
            }
        }
    }
    // An object's namespace exists (the API server refuses an object in a namespace that does
    // not), and carries the label every namespace has, `kubernetes.io/metadata.name`: a
    // listener selecting on it admits a route there even when the manifests do not declare the
    // Namespace.
    for o in objects {
        if let Some(ns) = &o.namespace {
            world.namespaces.entry(ns.clone()).or_insert_with(|| BTreeMap::from([("kubernetes.io/metadata.name".to_string(), ns.clone())]));
        }
    }
    // ListenerSets merge after the Gateway's own listeners, oldest first; manifests carry no
    // creation time, so the tie-break of Gateway API (namespace/name, alphabetical) orders them.
    sets.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let single = (gateways.len() == 1).then(|| gateways[0].name.clone());
    for g in &mut gateways {
        g.routes = world.routes.clone();
        g.grants = world.grants.clone();
        g.namespaces = world.namespaces.clone();
        g.services = world.services.clone();
        g.service_ports = world.service_ports.clone();
        g.secrets = world.secrets.clone();
        g.single = single.clone();
        g.listener_sets =
            sets.iter().filter(|s| s.parent.as_ref().is_some_and(|(n, ns)| *n == g.name && *ns == g.namespace)).cloned().collect();
        let allowed: Vec<Listener> =
            g.listener_sets.iter().filter(|s| listener_set_allowed(g, s)).flat_map(|s| s.listeners.iter().cloned()).collect();
        g.listeners.extend(allowed);
    }
    Ok(ModelInput { gateways })
}

/// `allowedListeners.namespaces` of the Gateway admits the ListenerSet's namespace
/// (Gateway API 1.6; Cilium's `helpers.ListenerSetAllowed`).
pub fn listener_set_allowed(gw: &GatewayInput, ls: &ListenerSetInput) -> bool {
    match &gw.allowed_listeners {
        None => false,
        Some(from) => namespace_selected(from, &gw.namespace, &ls.namespace, &gw.namespaces),
    }
}

/// Whether `from` (Same, All, Selector) admits namespace `ns` for an owner in `owner_ns`.
pub fn namespace_selected(
    from: &FromNamespaces,
    owner_ns: &str,
    ns: &str,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> bool {
    match from {
        FromNamespaces::Same => ns == owner_ns,
        FromNamespaces::All => true,
        FromNamespaces::None => false,
        FromNamespaces::Selector { match_labels, expressions } => {
            let empty = BTreeMap::new();
            let labels = namespaces.get(ns).unwrap_or(&empty);
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

fn check_fields(v: &Value, what: &str, known: &[&str]) -> Result<(), String> {
    if let Some(obj) = v.as_object() {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                return Err(format!("{what}.{k} is a field the model does not understand (it reads {})", known.join(", ")));
            }
        }
    }
    Ok(())
}

fn string_map(v: Option<&Value>) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    if let Some(obj) = v.and_then(Value::as_object) {
        for (k, v) in obj {
            out.insert(k.clone(), v.as_str().ok_or_else(|| format!("label {k} is not a string"))?.to_string());
        }
    }
    Ok(out)
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|h| h.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn selector(v: &Value, at: &str) -> Result<FromNamespaces, String> {
    check_fields(v, at, &["matchLabels", "matchExpressions"])?;
    let match_labels = string_map(v.get("matchLabels"))?;
    let mut expressions = Vec::new();
    for e in v.get("matchExpressions").and_then(Value::as_array).cloned().unwrap_or_default() {
        expressions.push(Expression {
            key: text(&e, "key").unwrap_or_default(),
            operator: text(&e, "operator").unwrap_or_default(),
            values: strings(e.get("values")),
        });
    }
    Ok(FromNamespaces::Selector { match_labels, expressions })
}

fn gateway(gw: &Object) -> Result<(Vec<Listener>, Option<FromNamespaces>), String> {
    let spec = gw.value.get("spec").unwrap_or(&Value::Null);
    check_fields(spec, "spec", &["gatewayClassName", "listeners", "allowedListeners"])?;
    let facts = manifests::gateway_listeners(gw).map_err(|p| format!("{}: {}", p.field, p.message))?;
    let raw = gw.value.pointer("/spec/listeners").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (i, (f, l)) in facts.iter().zip(raw.iter()).enumerate() {
        out.push(listener(l, &format!("spec.listeners[{i}]"), &f.name, f.port, &f.protocol, f.hostname.clone(), Origin::Gateway)?);
    }
    let allowed = match spec.get("allowedListeners") {
        None => None,
        Some(a) => {
            check_fields(a, "spec.allowedListeners", &["namespaces"])?;
            let ns = a.get("namespaces").unwrap_or(&Value::Null);
            check_fields(ns, "spec.allowedListeners.namespaces", &["from", "selector"])?;
            Some(match ns.get("from").and_then(Value::as_str) {
                None | Some("None") => FromNamespaces::None,
                Some("Same") => FromNamespaces::Same,
                Some("All") => FromNamespaces::All,
                Some("Selector") => selector(ns.get("selector").unwrap_or(&Value::Null), "spec.allowedListeners.namespaces.selector")?,
                Some(o) => return Err(format!("spec.allowedListeners.namespaces.from {o} is not None, Same, All or Selector")),
            })
        }
    };
    Ok((out, allowed))
}

fn listener_set(o: &Object, namespace: String) -> Result<ListenerSetInput, String> {
    let spec = o.value.get("spec").cloned().unwrap_or(Value::Null);
    check_fields(&spec, "spec", &["parentRef", "listeners"])?;
    let p = spec.get("parentRef").cloned().unwrap_or(Value::Null);
    check_fields(&p, "spec.parentRef", &["group", "kind", "name", "namespace"])?;
    let group = text(&p, "group").unwrap_or_else(|| GATEWAY_GROUP.into());
    let kind = text(&p, "kind").unwrap_or_else(|| "Gateway".into());
    let parent = match (group == GATEWAY_GROUP && kind == "Gateway", text(&p, "name")) {
        (true, Some(n)) => Some((n, text(&p, "namespace").unwrap_or_else(|| namespace.clone()))),
        (_, None) => return Err("spec.parentRef.name is missing".into()),
        (false, _) => None,
    };
    let mut listeners = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, l) in spec.get("listeners").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        let at = format!("spec.listeners[{i}]");
        let name = text(l, "name").ok_or_else(|| format!("{at}.name is missing"))?;
        if !seen.insert(name.clone()) {
            return Err(format!("{at}.name {name:?} is used twice"));
        }
        let port = l.get("port").and_then(Value::as_u64).ok_or_else(|| format!("{at}.port is missing or not a number"))?;
        let port = Port::new(port).map_err(|e| format!("{at}.port: {}", e.0))?;
        let protocol = text(l, "protocol").ok_or_else(|| format!("{at}.protocol is missing"))?;
        let origin = Origin::ListenerSet { namespace: namespace.clone(), name: o.name.clone() };
        let mut li = listener(l, &at, &name, port, &protocol, text(l, "hostname"), origin)?;
        li.id = format!("{}/{}", o.name, name);
        listeners.push(li);
    }
    Ok(ListenerSetInput { name: o.name.clone(), namespace, parent, listeners })
}

fn listener(
    l: &Value,
    at: &str,
    name: &str,
    port: Port,
    protocol: &str,
    hostname: Option<String>,
    origin: Origin,
) -> Result<Listener, String> {
    check_fields(l, at, &["name", "port", "protocol", "hostname", "tls", "allowedRoutes"])?;
    let protocol = match protocol {
        "HTTP" => Protocol::Http,
        "HTTPS" => Protocol::Https,
        "TLS" => Protocol::Tls,
        p => {
            return Err(format!(
                "{at}.protocol {p} is not modelled (HTTP, HTTPS, TLS): TCP and UDP listeners take L4 routes the model does not predict"
            ));
        }
    };
    let tls = l.get("tls");
    if let Some(t) = tls {
        check_fields(t, &format!("{at}.tls"), &["mode", "certificateRefs"])?;
    }
    let tls_mode = match (protocol, tls.and_then(|t| t.get("mode")).and_then(Value::as_str)) {
        (Protocol::Http, _) => None,
        (_, Some("Passthrough")) => Some(TlsMode::Passthrough),
        (Protocol::Tls, None) => return Err(format!("{at}: a TLS listener needs tls.mode (the model reads Passthrough)")),
        (Protocol::Tls, Some("Terminate")) => {
            return Err(format!("{at}.tls.mode Terminate on a TLS listener is not modelled (Cilium marks it UnsupportedValue)"));
        }
        (_, Some("Terminate") | None) => Some(TlsMode::Terminate),
        (_, Some(m)) => return Err(format!("{at}.tls.mode {m} is not a TLS mode")),
    };
    let mut cert_refs = Vec::new();
    for (ci, r) in tls.and_then(|t| t.get("certificateRefs")).and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        let cat = format!("{at}.tls.certificateRefs[{ci}]");
        check_fields(r, &cat, &["group", "kind", "name", "namespace"])?;
        cert_refs.push(CertRef {
            group: text(r, "group").unwrap_or_default(),
            kind: text(r, "kind").unwrap_or_else(|| "Secret".into()),
            name: text(r, "name").ok_or_else(|| format!("{cat}.name is missing"))?,
            namespace: text(r, "namespace"),
        });
    }
    let allowed = l.get("allowedRoutes");
    if let Some(a) = allowed {
        check_fields(a, &format!("{at}.allowedRoutes"), &["namespaces", "kinds"])?;
    }
    let ns = allowed.and_then(|a| a.get("namespaces"));
    let from = match ns.and_then(|n| n.get("from")).and_then(Value::as_str) {
        None | Some("Same") => FromNamespaces::Same,
        Some("All") => FromNamespaces::All,
        Some("Selector") => {
            selector(ns.and_then(|n| n.get("selector")).unwrap_or(&Value::Null), &format!("{at}.allowedRoutes.namespaces.selector"))?
        }
        Some(other) => return Err(format!("{at}.allowedRoutes.namespaces.from {other} is not Same, All or Selector")),
    };
    let kinds = allowed
        .and_then(|a| a.get("kinds"))
        .and_then(Value::as_array)
        .map(|ks| ks.iter().filter_map(|k| Some((text(k, "group").unwrap_or_else(|| GATEWAY_GROUP.into()), text(k, "kind")?))).collect())
        .unwrap_or_default();
    Ok(Listener { id: name.to_string(), name: name.to_string(), origin, port, protocol, hostname, tls_mode, cert_refs, from, kinds })
}

fn value_matches(v: Option<&Value>, at: &str) -> Result<Vec<ValueMatch>, String> {
    let mut out = Vec::new();
    for (i, m) in v.and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        check_fields(m, &format!("{at}[{i}]"), &["type", "name", "value"])?;
        let regex = match text(m, "type").as_deref() {
            None | Some("Exact") => false,
            Some("RegularExpression") => true,
            Some(t) => return Err(format!("{at}[{i}].type {t} is not Exact or RegularExpression")),
        };
        out.push(ValueMatch {
            name: text(m, "name").ok_or_else(|| format!("{at}[{i}].name is missing"))?,
            value: text(m, "value").unwrap_or_default(),
            regex,
        });
    }
    Ok(out)
}

fn path_modifier(v: &Value, at: &str) -> Result<PathModifier, String> {
    check_fields(v, at, &["type", "replaceFullPath", "replacePrefixMatch"])?;
    match text(v, "type").as_deref() {
        Some("ReplaceFullPath") => Ok(PathModifier::Full(text(v, "replaceFullPath").unwrap_or_default())),
        Some("ReplacePrefixMatch") => Ok(PathModifier::Prefix(text(v, "replacePrefixMatch").unwrap_or_default())),
        other => Err(format!("{at}.type {other:?} is not ReplaceFullPath or ReplacePrefixMatch")),
    }
}

fn header_filter(v: &Value, at: &str, response: bool) -> Result<Filter, String> {
    check_fields(v, at, &["set", "add", "remove"])?;
    let pairs = |k: &str| -> Vec<(String, String)> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|h| Some((text(h, "name")?, text(h, "value").unwrap_or_default()))).collect())
            .unwrap_or_default()
    };
    Ok(Filter::Headers { response, set: pairs("set"), add: pairs("add"), remove: strings(v.get("remove")) })
}

fn filters(rule: &Value, at: &str) -> Result<Vec<Filter>, String> {
    let mut out = Vec::new();
    for (fi, f) in rule.get("filters").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        let fat = format!("{at}.filters[{fi}]");
        check_fields(f, &fat, &["type", "requestRedirect", "urlRewrite", "requestHeaderModifier", "responseHeaderModifier"])?;
        let empty = Value::Null;
        let filter = match text(f, "type").as_deref() {
            Some("RequestRedirect") => {
                let r = f.get("requestRedirect").unwrap_or(&empty);
                check_fields(r, &format!("{fat}.requestRedirect"), &["scheme", "hostname", "path", "port", "statusCode"])?;
                let status = r.get("statusCode").and_then(Value::as_u64).unwrap_or(302);
                if ![301, 302, 303, 307, 308].contains(&status) {
                    return Err(format!("{fat}.requestRedirect.statusCode {status} is not a redirect status"));
                }
                Filter::RequestRedirect {
                    scheme: text(r, "scheme"),
                    hostname: text(r, "hostname"),
                    path: r.get("path").map(|p| path_modifier(p, &format!("{fat}.requestRedirect.path"))).transpose()?,
                    port: r.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()),
                    status: status as u16,
                }
            }
            Some("URLRewrite") => {
                let r = f.get("urlRewrite").unwrap_or(&empty);
                check_fields(r, &format!("{fat}.urlRewrite"), &["hostname", "path"])?;
                Filter::UrlRewrite {
                    hostname: text(r, "hostname"),
                    path: r.get("path").map(|p| path_modifier(p, &format!("{fat}.urlRewrite.path"))).transpose()?,
                }
            }
            Some("RequestHeaderModifier") => {
                header_filter(f.get("requestHeaderModifier").unwrap_or(&empty), &format!("{fat}.requestHeaderModifier"), false)?
            }
            Some("ResponseHeaderModifier") => {
                header_filter(f.get("responseHeaderModifier").unwrap_or(&empty), &format!("{fat}.responseHeaderModifier"), true)?
            }
            other => {
                return Err(format!(
                    "{fat}.type {} is not modelled (RequestRedirect, URLRewrite, RequestHeaderModifier, ResponseHeaderModifier): mirroring, external auth and extension filters change what answers in ways the model does not predict",
                    other.unwrap_or("(missing)")
                ));
            }
        };
        out.push(filter);
    }
    Ok(out)
}

fn route(o: &Object, namespace: String) -> Result<Route, String> {
    let spec = o.value.get("spec").cloned().unwrap_or(Value::Null);
    let grpc = o.kind == "GRPCRoute";
    check_fields(&spec, "spec", &["parentRefs", "hostnames", "rules"])?;
    let mut parent_refs = Vec::new();
    for (i, p) in spec.get("parentRefs").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        check_fields(p, &format!("spec.parentRefs[{i}]"), &["group", "kind", "name", "namespace", "sectionName", "port"])?;
        let port = match p.get("port").and_then(Value::as_u64) {
            Some(n) => Some(Port::new(n).map_err(|e| format!("spec.parentRefs[{i}].port: {e}"))?),
            None => None,
        };
        parent_refs.push(ParentRef {
            group: text(p, "group").unwrap_or_else(|| GATEWAY_GROUP.into()),
            kind: text(p, "kind").unwrap_or_else(|| "Gateway".into()),
            name: text(p, "name").ok_or_else(|| format!("spec.parentRefs[{i}] has no name"))?,
            namespace: text(p, "namespace"),
            section_name: text(p, "sectionName"),
            port,
        });
    }
    let hostnames = strings(spec.get("hostnames"));
    let mut rules = Vec::new();
    for (ri, rule) in spec.get("rules").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        let at = format!("spec.rules[{ri}]");
        if o.kind == "TLSRoute" {
            check_fields(rule, &at, &["name", "backendRefs"])?;
        } else {
            check_fields(rule, &at, &["name", "backendRefs", "filters", "matches"])?;
        }
        let mut matches = Vec::new();
        for (mi, m) in rule.get("matches").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
            let mat = format!("{at}.matches[{mi}]");
            if grpc {
                // A GRPCRoute method match is a path on Envoy: /<service>/<method>.
                check_fields(m, &mat, &["method", "headers"])?;
                let path = match m.get("method") {
                    None => PathMatch::Prefix("/".into()),
                    Some(me) => {
                        check_fields(me, &format!("{mat}.method"), &["type", "service", "method"])?;
                        if text(me, "type").is_some_and(|t| t != "Exact") {
                            return Err(format!("{mat}.method.type: only Exact method matches are modelled"));
                        }
                        match (text(me, "service"), text(me, "method")) {
                            (Some(s), Some(m)) => PathMatch::Exact(format!("/{s}/{m}")),
                            (Some(s), None) => PathMatch::Prefix(format!("/{s}/")),
                            (None, Some(m)) => PathMatch::Regex(format!("/[^/]+/{m}")),
                            (None, None) => PathMatch::Prefix("/".into()),
                        }
                    }
                };
                matches.push(RouteMatch {
                    path,
                    headers: value_matches(m.get("headers"), &format!("{mat}.headers"))?,
                    query: Vec::new(),
                    method: None,
                });
                continue;
            }
            check_fields(m, &mat, &["path", "headers", "queryParams", "method"])?;
            let path = match m.get("path") {
                None => PathMatch::Prefix("/".into()),
                Some(p) => {
                    check_fields(p, &format!("{mat}.path"), &["type", "value"])?;
                    let v = text(p, "value").unwrap_or_else(|| "/".into());
                    match text(p, "type").as_deref() {
                        None | Some("PathPrefix") => PathMatch::Prefix(v),
                        Some("Exact") => PathMatch::Exact(v),
                        Some("RegularExpression") => PathMatch::Regex(v),
                        Some(t) => return Err(format!("{mat}.path.type {t} is not Exact, PathPrefix or RegularExpression")),
                    }
                }
            };
            matches.push(RouteMatch {
                path,
                headers: value_matches(m.get("headers"), &format!("{mat}.headers"))?,
                query: value_matches(m.get("queryParams"), &format!("{mat}.queryParams"))?,
                method: text(m, "method"),
            });
        }
        let mut backends = Vec::new();
        for (bi, b) in rule.get("backendRefs").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
            let bat = format!("{at}.backendRefs[{bi}]");
            check_fields(b, &bat, &["group", "kind", "name", "namespace", "port", "weight"])?;
            if text(b, "group").is_some_and(|g| !g.is_empty()) || text(b, "kind").is_some_and(|k| k != "Service") {
                return Err(format!("{bat}: only Service backends are modelled"));
            }
            let port = b
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("{bat}.port is missing or invalid"))?;
            let weight = b.get("weight").and_then(Value::as_u64).unwrap_or(1) as u32;
            backends.push(BackendRef { name: text(b, "name").unwrap_or_default(), namespace: text(b, "namespace"), port, weight });
        }
        let filters = if o.kind == "TLSRoute" { Vec::new() } else { filters(rule, &at)? };
        rules.push(RouteRule { matches, filters, backends });
    }
    let refused = super::installed::refusals_of(o);
    Ok(Route { kind: o.kind.clone(), name: o.name.clone(), namespace, parent_refs, hostnames, rules, refused })
}

/// A ReferenceGrant object as the model reads it (namespace-less: in `default`).
pub fn reference_grant(o: &Object) -> Result<ReferenceGrant, String> {
    grant(o, o.namespace.clone().unwrap_or_else(|| "default".into()))
}

fn grant(o: &Object, namespace: String) -> Result<ReferenceGrant, String> {
    let spec = o.value.get("spec").cloned().unwrap_or(Value::Null);
    check_fields(&spec, "spec", &["from", "to"])?;
    let list = |k: &str| spec.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let from = list("from")
        .iter()
        .map(|f| GrantFrom {
            group: text(f, "group").unwrap_or_default(),
            kind: text(f, "kind").unwrap_or_default(),
            namespace: text(f, "namespace").unwrap_or_default(),
        })
        .collect();
    let to = list("to")
        .iter()
        .map(|t| GrantTo { group: text(t, "group").unwrap_or_default(), kind: text(t, "kind").unwrap_or_default(), name: text(t, "name") })
        .collect();
    Ok(ReferenceGrant { namespace, from, to })
}
