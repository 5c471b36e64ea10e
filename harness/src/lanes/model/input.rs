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
    Selector { match_labels: BTreeMap<String, String>, expressions: Vec<Expression> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub port: Port,
    pub protocol: Protocol,
    pub hostname: Option<String>,
    pub tls_mode: Option<TlsMode>,
    /// Secret names of certificateRefs (same namespace).
    pub certificate_refs: Vec<String>,
    pub from: FromNamespaces,
    /// Declared allowedRoutes.kinds; empty means the protocol's defaults.
    pub kinds: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentRef {
    pub name: String,
    pub namespace: Option<String>,
    pub section_name: Option<String>,
    pub port: Option<Port>,
}

impl ParentRef {
    /// The key expectations and statuses use for this parentRef.
    pub fn key(&self) -> String {
        self.section_name.clone().unwrap_or_else(|| self.name.clone())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendRef {
    pub name: String,
    pub namespace: Option<String>,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// RequestRedirect to https with a status code.
    RedirectHttps { status: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub parent_refs: Vec<ParentRef>,
    pub hostnames: Vec<String>,
    pub backends: Vec<BackendRef>,
    pub filters: Vec<Filter>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceGrant {
    pub namespace: String,
    /// (group, kind, namespace) allowed to refer.
    pub from: Vec<(String, String, String)>,
    /// kinds (and optional names) that may be referred to.
    pub to: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayInput {
    pub name: String,
    pub namespace: String,
    pub listeners: Vec<Listener>,
    pub routes: Vec<Route>,
    pub grants: Vec<ReferenceGrant>,
    /// Namespace name -> labels (the case's own namespace always exists).
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// (namespace, name) of Services that exist.
    pub services: BTreeSet<(String, String)>,
    /// (namespace, name) of Secrets that exist.
    pub secrets: BTreeSet<(String, String)>,
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

const SUPPORTED_KINDS: &[&str] = &["Gateway", "HTTPRoute", "TLSRoute", "ReferenceGrant", "Namespace"];

/// The namespace the model places a case in; the kind lane uses a unique one instead.
pub fn model_namespace(case: &Case) -> String {
    format!("lg-{}", case.name)
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
        services: case.backends.keys().map(|b: &BackendName| (namespace.clone(), b.to_string())).collect(),
        secrets: case.certificates.iter().map(|c| (namespace.clone(), crate::case::template::secret_name(&c.name))).collect(),
        namespace,
    };
    from_objects(&objects, &cx)
}

/// Reads already-parsed manifest objects (with their file and line) into a model input. Any
/// kind or field the model cannot predict is an error naming the file, line, object and field.
pub fn from_objects(objects: &[Object], cx: &ReadContext) -> Result<ModelInput, Box<ModelInputError>> {
    let namespace = cx.namespace.clone();
    let mut world = GatewayInput {
        name: String::new(),
        namespace: namespace.clone(),
        listeners: Vec::new(),
        routes: Vec::new(),
        grants: Vec::new(),
        namespaces: BTreeMap::from([(namespace.clone(), BTreeMap::from([("kubernetes.io/metadata.name".to_string(), namespace.clone())]))]),
        services: cx.services.clone(),
        secrets: cx.secrets.clone(),
    };
    let mut gateways: Vec<(String, String, Vec<Listener>)> = Vec::new();
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
        match o.kind.as_str() {
            "Gateway" if gateways.is_empty() => gateways.push((o.name.clone(), ns, listeners(o).map_err(err)?)),
            "Gateway" => return Err(err("a second Gateway; the model predicts one Gateway per case".into())),
            "HTTPRoute" | "TLSRoute" => world.routes.push(route(o, ns).map_err(err)?),
            "ReferenceGrant" => world.grants.push(grant(o, ns).map_err(err)?),
            "Namespace" => {
                let mut labels: BTreeMap<String, String> = string_map(o.value.pointer("/metadata/labels")).map_err(err)?;
                labels.insert("kubernetes.io/metadata.name".into(), o.name.clone());
                world.namespaces.insert(o.name.clone(), labels);
            }
            other => {
                return Err(err(format!("the model does not understand kind {other}; it models {}", SUPPORTED_KINDS.join(", "))));
            }
        }
    }
    let gateways =
        gateways.into_iter().map(|(name, ns, listeners)| GatewayInput { name, namespace: ns, listeners, ..world.clone() }).collect();
    Ok(ModelInput { gateways })
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

fn listeners(gw: &Object) -> Result<Vec<Listener>, String> {
    let facts = manifests::gateway_listeners(gw).map_err(|p| format!("{}: {}", p.field, p.message))?;
    let raw = gw.value.pointer("/spec/listeners").and_then(Value::as_array).cloned().unwrap_or_default();
    check_fields(gw.value.get("spec").unwrap_or(&Value::Null), "spec", &["gatewayClassName", "listeners"])?;
    let mut out = Vec::new();
    for (i, (f, l)) in facts.iter().zip(raw.iter()).enumerate() {
        let at = format!("spec.listeners[{i}]");
        check_fields(l, &at, &["name", "port", "protocol", "hostname", "tls", "allowedRoutes"])?;
        let protocol = match f.protocol.as_str() {
            "HTTP" => Protocol::Http,
            "HTTPS" => Protocol::Https,
            "TLS" => Protocol::Tls,
            p => return Err(format!("{at}.protocol {p} is not modelled (HTTP, HTTPS, TLS)")),
        };
        let tls = l.get("tls");
        if let Some(t) = tls {
            check_fields(t, &format!("{at}.tls"), &["mode", "certificateRefs"])?;
        }
        let tls_mode = match (protocol, tls.and_then(|t| t.get("mode")).and_then(Value::as_str)) {
            (Protocol::Http, _) => None,
            (_, Some("Passthrough")) => Some(TlsMode::Passthrough),
            (Protocol::Tls, None) => return Err(format!("{at}: a TLS listener needs tls.mode (the model reads Passthrough)")),
            (_, Some("Terminate") | None) => Some(TlsMode::Terminate),
            (_, Some(m)) => return Err(format!("{at}.tls.mode {m} is not a TLS mode")),
        };
        let certificate_refs = tls
            .and_then(|t| t.get("certificateRefs"))
            .and_then(Value::as_array)
            .map(|refs| refs.iter().filter_map(|r| text(r, "name")).collect())
            .unwrap_or_default();
        let allowed = l.get("allowedRoutes");
        if let Some(a) = allowed {
            check_fields(a, &format!("{at}.allowedRoutes"), &["namespaces", "kinds"])?;
        }
        let ns = allowed.and_then(|a| a.get("namespaces"));
        let from = match ns.and_then(|n| n.get("from")).and_then(Value::as_str) {
            None | Some("Same") => FromNamespaces::Same,
            Some("All") => FromNamespaces::All,
            Some("Selector") => {
                let sel = ns.and_then(|n| n.get("selector")).cloned().unwrap_or(Value::Null);
                check_fields(&sel, &format!("{at}.allowedRoutes.namespaces.selector"), &["matchLabels", "matchExpressions"])?;
                let match_labels = string_map(sel.get("matchLabels"))?;
                let mut expressions = Vec::new();
                for e in sel.get("matchExpressions").and_then(Value::as_array).cloned().unwrap_or_default() {
                    let values = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|vs| vs.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                        .unwrap_or_default();
                    expressions.push(Expression {
                        key: text(&e, "key").unwrap_or_default(),
                        operator: text(&e, "operator").unwrap_or_default(),
                        values,
                    });
                }
                FromNamespaces::Selector { match_labels, expressions }
            }
            Some(other) => return Err(format!("{at}.allowedRoutes.namespaces.from {other} is not Same, All or Selector")),
        };
        let kinds = allowed
            .and_then(|a| a.get("kinds"))
            .and_then(Value::as_array)
            .map(|ks| ks.iter().filter_map(|k| text(k, "kind")).collect())
            .unwrap_or_default();
        out.push(Listener {
            name: f.name.clone(),
            port: f.port,
            protocol,
            hostname: f.hostname.clone(),
            tls_mode,
            certificate_refs,
            from,
            kinds,
        });
    }
    Ok(out)
}

fn route(o: &Object, namespace: String) -> Result<Route, String> {
    let spec = o.value.get("spec").cloned().unwrap_or(Value::Null);
    check_fields(&spec, "spec", &["parentRefs", "hostnames", "rules"])?;
    let mut parent_refs = Vec::new();
    for (i, p) in spec.get("parentRefs").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        check_fields(p, &format!("spec.parentRefs[{i}]"), &["group", "kind", "name", "namespace", "sectionName", "port"])?;
        let port = match p.get("port").and_then(Value::as_u64) {
            Some(n) => Some(Port::new(n).map_err(|e| format!("spec.parentRefs[{i}].port: {e}"))?),
            None => None,
        };
        parent_refs.push(ParentRef {
            name: text(p, "name").ok_or_else(|| format!("spec.parentRefs[{i}] has no name"))?,
            namespace: text(p, "namespace"),
            section_name: text(p, "sectionName"),
            port,
        });
    }
    let hostnames = spec
        .get("hostnames")
        .and_then(Value::as_array)
        .map(|h| h.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let mut backends = Vec::new();
    let mut filters = Vec::new();
    for (ri, rule) in spec.get("rules").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
        check_fields(rule, &format!("spec.rules[{ri}]"), &["backendRefs", "filters", "matches"])?;
        if let Some(matches) = rule.get("matches").and_then(Value::as_array) {
            // The model routes by hostname only; a path other than the catch-all would change
            // which backend answers.
            for m in matches {
                let ok = m.as_object().is_some_and(|mm| mm.keys().all(|k| k == "path"))
                    && m.pointer("/path/value").and_then(Value::as_str).is_none_or(|v| v == "/");
                if !ok {
                    return Err(format!(
                        "spec.rules[{ri}].matches: the model routes by hostname only; matches other than path \"/\" are not modelled"
                    ));
                }
            }
        }
        for (bi, b) in rule.get("backendRefs").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
            check_fields(b, &format!("spec.rules[{ri}].backendRefs[{bi}]"), &["group", "kind", "name", "namespace", "port", "weight"])?;
            let port = b
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("spec.rules[{ri}].backendRefs[{bi}].port is missing or invalid"))?;
            backends.push(BackendRef { name: text(b, "name").unwrap_or_default(), namespace: text(b, "namespace"), port });
        }
        for (fi, f) in rule.get("filters").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
            match (text(f, "type").as_deref(), f.pointer("/requestRedirect/scheme").and_then(Value::as_str)) {
                (Some("RequestRedirect"), Some("https")) => {
                    let status = f.pointer("/requestRedirect/statusCode").and_then(Value::as_u64).unwrap_or(302) as u16;
                    filters.push(Filter::RedirectHttps { status });
                }
                _ => return Err(format!("spec.rules[{ri}].filters[{fi}]: only RequestRedirect to scheme https is modelled")),
            }
        }
    }
    Ok(Route { kind: o.kind.clone(), name: o.name.clone(), namespace, parent_refs, hostnames, backends, filters })
}

fn grant(o: &Object, namespace: String) -> Result<ReferenceGrant, String> {
    let spec = o.value.get("spec").cloned().unwrap_or(Value::Null);
    check_fields(&spec, "spec", &["from", "to"])?;
    let from = spec
        .get("from")
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .map(|f| {
                    (text(f, "group").unwrap_or_default(), text(f, "kind").unwrap_or_default(), text(f, "namespace").unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default();
    let to = spec
        .get("to")
        .and_then(Value::as_array)
        .map(|ts| ts.iter().map(|t| (text(t, "kind").unwrap_or_default(), text(t, "name"))).collect())
        .unwrap_or_default();
    Ok(ReferenceGrant { namespace, from, to })
}
