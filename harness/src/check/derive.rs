//! From rendered manifests to a case: the manifests with the case's placeholders put in
//! (`{namespace}`, `{gateway}`, `{apex}`, `{secret:CERT}`), a certificate for every Secret a
//! listener references, a backend for every backendRef, and the probe matrix (every Gateway
//! port x every hostname a listener or route names, a wildcard standing for one concrete name
//! under it, one unrelated name, no SNI). `check` runs this derivation in memory; `case new`
//! writes it down.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::read::InputError;
use crate::case::manifests::Object;
use crate::lanes::model::input::{GATEWAY_GROUP, ReferenceGrant};
use crate::types::{BackendName, CertName, Port, Sni};

/// The label every namespace carries with its own name.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A kept `kubernetes.io/tls` Secret's data in a derived case: base64 of `not a certificate
/// (layout-gate check)`.
pub const PLACEHOLDER_B64: &str = "bm90IGEgY2VydGlmaWNhdGUgKGxheW91dC1nYXRlIGNoZWNrKQ==";

/// The name a probe sends that no listener or route names.
pub const UNRELATED: &str = "unrelated.invalid";

/// Where an object came from, for messages in the user's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: String,
    pub line: u64,
}

/// A certificate the derivation generates, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedCert {
    pub name: CertName,
    /// Concrete DNS names (wildcards allowed), not templated.
    pub dns_names: Vec<String>,
    pub source: CertSource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// A Secret a listener references; `in_input` says whether the input had the Secret (its
    /// key is never used: a generated certificate with the listener's names stands in).
    /// `namespace`: the Secret's namespace in the input when it is not the Gateway's.
    Secret { secret: String, namespace: Option<String>, in_input: bool, listeners: Vec<String> },
    /// What a passthrough backend presents.
    Backend { service: String },
}

impl DerivedCert {
    /// How results name this certificate: the user's Secret or Service, not the case name.
    pub fn label(&self) -> String {
        match &self.source {
            CertSource::Secret { secret, namespace: Some(ns), .. } => format!("Secret {ns}/{secret}"),
            CertSource::Secret { secret, namespace: None, .. } => format!("Secret {secret}"),
            CertSource::Backend { service } => format!("backend {service}"),
        }
    }
}

/// One row of the matrix: a TLS handshake on a port with an SNI (`sni: None`: without SNI),
/// or, `plain`, an HTTP/1.1 `GET /` without TLS whose Host header is `sni`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MatrixKey {
    pub port: Port,
    pub sni: Option<Sni>,
    /// A plain HTTP request (no TLS) with `sni` as its Host header.
    pub plain: bool,
}

impl MatrixKey {
    /// A TLS handshake on `port` with `sni`.
    pub fn tls(port: Port, sni: Option<Sni>) -> MatrixKey {
        MatrixKey { port, sni, plain: false }
    }

    /// A plain HTTP request on `port` with Host `host`.
    pub fn plain(port: Port, host: Sni) -> MatrixKey {
        MatrixKey { port, sni: Some(host), plain: true }
    }

    /// The name of the row in a sentence or a cell: the SNI, `(no SNI)`, or `http://HOST` for a
    /// plain HTTP request.
    pub fn name(&self) -> String {
        match (&self.sni, self.plain) {
            (Some(s), true) => format!("http://{s}"),
            (Some(s), false) => s.to_string(),
            (None, _) => "(no SNI)".into(),
        }
    }
}

impl std::fmt::Display for MatrixKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.sni, self.plain) {
            (Some(_), _) => write!(f, "{} on {}", self.name(), self.port),
            (None, _) => write!(f, "no SNI on {}", self.port),
        }
    }
}

/// The derivation for one Gateway.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The Gateway's name and namespace as the input writes them.
    pub gateway: String,
    pub namespace: String,
    pub origin: Origin,
    /// The apex `{apex}` stands for: the longest DNS suffix every hostname shares (or the
    /// case default when they share none).
    pub apex: String,
    pub certs: Vec<DerivedCert>,
    /// Backend name -> the certificate it presents (`None`: plain HTTP).
    pub backends: BTreeMap<BackendName, Option<CertName>>,
    /// Backends whose Service is in a namespace other than the Gateway's: name -> the input's
    /// namespace.
    pub backend_namespaces: BTreeMap<BackendName, String>,
    /// Every namespace of the input other than the Gateway's, by the suffix it has in the
    /// derived case (`{namespace}-SUFFIX`): SUFFIX -> the input's name.
    pub namespaces: BTreeMap<String, String>,
    /// The manifests with placeholders, as one multi-document YAML text.
    pub manifests: String,
    pub matrix: Vec<MatrixKey>,
    /// Keys of the matrix a listener or a route attached to one claims, with who claims each
    /// (`listener tls-api`, `TLSRoute api`): TLS keys for TLS and HTTPS listeners, plain HTTP
    /// keys for HTTP listeners.
    pub claims: BTreeMap<MatrixKey, Vec<String>>,
    /// What the output must say about the derivation (generated certificates, backends).
    pub notes: Vec<String>,
    /// Ports where every listener of the Gateway is plain HTTP: a TLS answer there comes from
    /// another port's chains, on versions that build one Envoy listener for every port.
    pub http_ports: Vec<Port>,
    /// (kind, name) -> where the object was in the input.
    pub origins: BTreeMap<(String, String), Origin>,
}

impl Derived {
    /// `{apex}`-templated form of a concrete name, for case.yaml.
    pub fn templated(&self, name: &str) -> String {
        template_apex(name, &self.apex)
    }

    pub fn cert(&self, name: &CertName) -> Option<&DerivedCert> {
        self.certs.iter().find(|c| &c.name == name)
    }
}

/// Adds `note` unless it is already there (a Secret or Service many listeners or rules name is
/// said once).
fn push_once(notes: &mut Vec<String>, note: String) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}

fn err(o: &Object, field: &str, message: String) -> InputError {
    InputError { file: o.file.display().to_string(), line: o.line, column: 1, field: field.into(), message }
}

/// How the derivation treats what the input lacks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeriveOptions {
    /// The input is the whole namespace (a `kubectl get -o yaml` of it): a referenced Secret or
    /// Service it lacks is missing, as it would be on the cluster, instead of being stood in
    /// by a generated certificate or an in-process backend.
    pub complete: bool,
    /// Each input file is a layout of its own (the differential's generated layouts): a
    /// Gateway's derived case carries only its file's objects, not every file's Namespaces,
    /// Secrets and ReferenceGrants (with 200 layouts that made each case 4,000 namespaces).
    pub each_file: bool,
}

/// One derivation per Gateway of the input, in input order, generating what the input lacks.
pub fn derive(objects: &[Object]) -> Result<Vec<Derived>, InputError> {
    derive_with(objects, DeriveOptions::default())
}

/// [`derive`], with `opts` deciding what a missing Secret means.
pub fn derive_with(objects: &[Object], opts: DeriveOptions) -> Result<Vec<Derived>, InputError> {
    if opts.each_file {
        let mut files: Vec<&std::path::Path> = Vec::new();
        for o in objects {
            if !files.contains(&o.file.as_path()) {
                files.push(&o.file);
            }
        }
        if files.len() > 1 {
            let mut out = Vec::new();
            for f in files {
                let own: Vec<Object> = objects.iter().filter(|o| o.file == f).cloned().collect();
                if own.iter().any(|o| o.kind == "Gateway") {
                    out.extend(derive_with(&own, DeriveOptions { each_file: false, ..opts })?);
                }
            }
            if !out.is_empty() {
                return Ok(out);
            }
        }
    }
    let gateways: Vec<&Object> = objects.iter().filter(|o| o.kind == "Gateway").collect();
    if gateways.is_empty() {
        let file = objects.first().map(|o| o.file.display().to_string()).unwrap_or_else(|| "(input)".into());
        return Err(InputError {
            file,
            line: 0,
            column: 0,
            field: "kind".into(),
            message: "no Gateway among the inputs; check predicts what Cilium does with a Gateway".into(),
        });
    }
    // What the API's schema would refuse (a hostname with a trailing dot or upper case, more than
    // 64 listeners) is the input's error, located in its file; found here rather than in the derived case.
    if let Some(p) = crate::case::api_schema::check_objects(objects, &BTreeMap::new()).into_iter().next() {
        return Err(InputError { file: p.file.display().to_string(), line: p.line, column: p.column, field: p.field, message: p.message });
    }
    let index = Index::new(objects);
    let mut out: Vec<Derived> = gateways.iter().map(|g| derive_one(g, objects, &index, opts)).collect::<Result<_, _>>()?;
    for (d, note) in out.iter_mut().zip(shared_port_notes(&gateways)) {
        d.notes.extend(note);
    }
    Ok(out)
}

/// The ports of a Gateway's listeners (ListenerSets aside), in order, once each.
fn gateway_ports(gw: &Object) -> Vec<u64> {
    let mut ports: Vec<u64> = Vec::new();
    for p in gw.value.pointer("/spec/listeners").and_then(Value::as_array).into_iter().flatten().filter_map(|l| l["port"].as_u64()) {
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    ports
}

/// Per Gateway, the cost of sharing a port with another Gateway of the input: Cilium gives every
/// Gateway its own LoadBalancer Service, `cilium-gateway-<name>`, with its own address
/// (cilium@v1.20.2:operator/pkg/model/translation/gateway-api/translator.go:Translate and
/// desiredService; the same at v1.19.6), and one address serves one listener per port, so two
/// Gateways that both listen on 443 need two addresses, and each name's DNS record must point at
/// the Gateway that serves it. A platform moving passthrough listeners to a second Gateway pays
/// this (issue #24).
fn shared_port_notes(gateways: &[&Object]) -> Vec<Vec<String>> {
    let ports: Vec<Vec<u64>> = gateways.iter().map(|g| gateway_ports(g)).collect();
    gateways
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut notes = Vec::new();
            for p in &ports[i] {
                let others: Vec<String> = gateways
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i && ports[*j].contains(p))
                    .map(|(_, o)| format!("{}/{}", ns_of(o), o.name))
                    .collect();
                if others.is_empty() {
                    continue;
                }
                notes.push(format!(
                    "port {p} is also listened on by Gateway {}: Cilium gives each Gateway its own LoadBalancer Service and address (cilium-gateway-{}), so these Gateways on {p} need {} addresses, and each name's DNS record must point at the address of the Gateway that serves it",
                    others.join(", "),
                    g.name,
                    others.len() + 1
                ));
            }
            notes
        })
        .collect()
}

/// What every Gateway's derivation reads from the whole input, gathered once. Each Gateway
/// scanning every object made the derivation quadratic: 1,000 Gateways (issue #18) spent most
/// of their time in JSON lookups of objects that were not theirs.
struct Index<'a> {
    /// A Gateway's (namespace, name) -> the positions of the routes naming it among their
    /// parents, in input order.
    routes: BTreeMap<(String, String), Vec<usize>>,
    /// (namespace, name) of every Secret and every Service of the input.
    secrets: BTreeSet<(String, String)>,
    services: BTreeSet<(String, String)>,
    grants: Vec<ReferenceGrant>,
    /// Every namespace the input names (where objects live, Namespaces declared, references),
    /// each once, with the first object naming it.
    namespaces: Vec<(String, &'a Object)>,
    /// Positions of the objects every derived case keeps whatever its Gateway
    /// (ReferenceGrants, Namespaces, ListenerSets, Secrets).
    shared: Vec<usize>,
}

impl<'a> Index<'a> {
    fn new(objects: &'a [Object]) -> Self {
        let mut routes: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        let mut shared = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            match o.kind.as_str() {
                k if ROUTES.contains(&k) => {
                    for parent in parents(o) {
                        let at = routes.entry(parent).or_default();
                        if at.last() != Some(&i) {
                            at.push(i);
                        }
                    }
                }
                "ReferenceGrant" | "Namespace" | "ListenerSet" | "XListenerSet" | "Secret" => shared.push(i),
                _ => {}
            }
        }
        let pairs = |kind: &str| objects.iter().filter(|o| o.kind == kind).map(|o| (ns_of(o), o.name.clone())).collect();
        let mut namespaces: Vec<(String, &Object)> = Vec::new();
        let mut seen = BTreeSet::new();
        for (ns, o) in named_namespaces(objects) {
            if seen.insert(ns.clone()) {
                namespaces.push((ns, o));
            }
        }
        Index {
            routes,
            secrets: pairs("Secret"),
            services: pairs("Service"),
            grants: objects
                .iter()
                .filter(|o| o.kind == "ReferenceGrant")
                .filter_map(|o| crate::lanes::model::input::reference_grant(o).ok())
                .collect(),
            namespaces,
            shared,
        }
    }

    /// Positions of the routes attached to `gw`.
    fn routes_of(&self, gw: &Object) -> &[usize] {
        self.routes.get(&(ns_of(gw), gw.name.clone())).map_or(&[], Vec::as_slice)
    }
}

/// The Gateways `route` names among its parents, as (namespace, name): a parentRef of kind
/// Gateway (the default), in the route's namespace unless it names another.
fn parents(route: &Object) -> Vec<(String, String)> {
    let rns = ns_of(route);
    route
        .value
        .pointer("/spec/parentRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("kind").and_then(Value::as_str).unwrap_or("Gateway") == "Gateway")
        .filter_map(|p| {
            let name = p.get("name").and_then(Value::as_str)?;
            Some((p.get("namespace").and_then(Value::as_str).unwrap_or(&rns).to_string(), name.to_string()))
        })
        .collect()
}

fn ns_of(o: &Object) -> String {
    o.namespace.clone().unwrap_or_else(|| "default".into())
}

const ROUTES: &[&str] = &["HTTPRoute", "TLSRoute", "GRPCRoute"];

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn derive_one(gw: &Object, objects: &[Object], index: &Index<'_>, opts: DeriveOptions) -> Result<Derived, InputError> {
    let namespace = ns_of(gw);
    // The Gateway's name is the derived case's `gateway:`: one the API server would refuse (a
    // control character, upper case) is the input's error, and one the case format cannot
    // carry is said as check's limit, both at the input's file and line, never as a derived
    // case that does not load.
    if let Err(e) = crate::types::check_object_name(&gw.name) {
        return Err(err(
            gw,
            "metadata.name",
            format!("Gateway {namespace}/{}: {}; the API server refuses it", gw.name.escape_debug(), e.0),
        ));
    }
    if BackendName::new(gw.name.as_str()).is_err() {
        return Err(err(
            gw,
            "metadata.name",
            format!(
                "Gateway {namespace}/{}: check names a Gateway in its derived case with 1-63 lower-case letters, digits and inner hyphens, starting with a letter, and cannot predict one named otherwise yet",
                gw.name
            ),
        ));
    }
    let listeners = gw.value.pointer("/spec/listeners").and_then(Value::as_array).cloned().unwrap_or_default();
    if listeners.is_empty() {
        return Err(err(gw, "spec.listeners", format!("Gateway {namespace}/{} has no listeners; a Gateway needs at least one", gw.name)));
    }
    let facts = crate::case::manifests::gateway_listeners(gw).map_err(|p| err(gw, &p.field, p.message))?;
    let routes: Vec<&Object> = index.routes_of(gw).iter().map(|&i| &objects[i]).collect();

    // Every hostname named, listener's first, in order.
    let mut named: Vec<String> = Vec::new();
    for f in &facts {
        if let Some(h) = &f.hostname {
            named.push(h.to_ascii_lowercase());
        }
    }
    for r in &routes {
        named.extend(strings(r.value.pointer("/spec/hostnames")).into_iter().map(|h| h.to_ascii_lowercase()));
    }
    let apex = apex_of(&named).unwrap_or_else(|| crate::case::load::DEFAULT_APEX.to_string());

    let mut notes = Vec::new();
    // Secrets the listeners reference.
    let secrets_in_input = &index.secrets;
    let mut certs: Vec<DerivedCert> = Vec::new();
    // (namespace, name) of each Secret a listener references -> the certificate standing in.
    // A Secret in another namespace gets one too, in that namespace of the derived case: Cilium
    // reads every referenced Secret's data (cilium@v1.19.6:operator/pkg/gateway-api/
    // gateway_reconcile.go:validateTLSSecret wants PEM in tls.crt and tls.key, else the
    // listener is InvalidCertificateRef), so a placeholder would be a different layout.
    let mut secret_cert: BTreeMap<(String, String), CertName> = BTreeMap::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (f, l) in facts.iter().zip(&listeners) {
        for r in l.pointer("/tls/certificateRefs").and_then(Value::as_array).cloned().unwrap_or_default() {
            let Some(secret) = r.get("name").and_then(Value::as_str).map(str::to_string) else { continue };
            let sns = r.get("namespace").and_then(Value::as_str).unwrap_or(&namespace).to_string();
            let shown = if sns == namespace { secret.clone() } else { format!("{sns}/{secret}") };
            let in_input = secrets_in_input.contains(&(sns.clone(), secret.clone()));
            if opts.complete && !in_input {
                push_once(&mut notes, format!("Secret {shown} is not in the input: missing, as --complete says"));
                continue;
            }
            let key = (sns.clone(), secret.clone());
            let hostname = f.hostname.clone().unwrap_or_else(|| format!("*.{apex}"));
            if let Some(c) = secret_cert.get(&key) {
                let c = certs.iter_mut().find(|x| &x.name == c).expect("recorded above");
                if !c.dns_names.contains(&hostname) {
                    c.dns_names.push(hostname);
                }
                if let CertSource::Secret { listeners, .. } = &mut c.source {
                    listeners.push(f.name.clone());
                }
                continue;
            }
            let base = secret.strip_suffix("-tls").unwrap_or(&secret);
            let name = unique_name(base, "gateway-cert", &mut used);
            secret_cert.insert(key, name.clone());
            let other = (sns != namespace).then_some(sns);
            certs.push(DerivedCert {
                name,
                dns_names: vec![hostname],
                source: CertSource::Secret { in_input, secret, namespace: other, listeners: vec![f.name.clone()] },
            });
        }
    }
    for c in &certs {
        if let CertSource::Secret { in_input, listeners, .. } = &c.source {
            let what = if *in_input { "is in the input, but its key is not used" } else { "is not in the input" };
            notes.push(format!(
                "{} (listener {}) {what}: a generated certificate for {} stands in",
                c.label(),
                listeners.join(", "),
                c.dns_names.join(", ")
            ));
        }
    }

    // Backends for every Service a route may reach, in any namespace: its own namespace, or
    // another whose ReferenceGrant lets the route's kind from the route's namespace refer to the
    // Service, exactly as Cilium decides (cilium@v1.19.5:operator/pkg/gateway-api/routechecks/
    // route_checks.go:CheckAgainstCrossNamespaceBackendReferences, through
    // operator/pkg/gateway-api/helpers/referencegrants.go:IsBackendReferenceAllowed; the same
    // logic at v1.19.6, v1.19.7 and v1.20.1). A reference Cilium refuses (RefNotPermitted) gets
    // no backend: the model then predicts the refusal, as the cluster would.
    let services_in_input = &index.services;
    let grants = &index.grants;
    let mut backends: BTreeMap<BackendName, Option<CertName>> = BTreeMap::new();
    let mut backend_namespaces: BTreeMap<BackendName, String> = BTreeMap::new();
    let mut backend_home: BTreeMap<BackendName, (String, Origin)> = BTreeMap::new();
    let mut backend_names: BTreeMap<BackendName, Vec<String>> = BTreeMap::new();
    let mut backend_tls: BTreeSet<BackendName> = BTreeSet::new();
    for r in &routes {
        let rns = ns_of(r);
        let hosts = strings(r.value.pointer("/spec/hostnames"));
        for rule in r.value.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default() {
            for b in rule.get("backendRefs").and_then(Value::as_array).cloned().unwrap_or_default() {
                let Some(svc) = b.get("name").and_then(Value::as_str) else { continue };
                let bns = b.get("namespace").and_then(Value::as_str).unwrap_or(&rns).to_string();
                if !backend_permitted(grants, &r.kind, &rns, &bns, svc) {
                    push_once(
                        &mut notes,
                        format!(
                            "{} {rns}/{}: backend {bns}/{svc} is not permitted (no ReferenceGrant in {bns} lets a {} from {rns} refer to it): Cilium refuses it (RefNotPermitted), so no backend is stood up",
                            r.kind, r.name, r.kind
                        ),
                    );
                    continue;
                }
                if opts.complete && !services_in_input.contains(&(bns.clone(), svc.to_string())) {
                    push_once(
                        &mut notes,
                        format!("Service {} is not in the input: missing, as --complete says", shown(&namespace, &bns, svc)),
                    );
                    continue;
                }
                let name = BackendName::new(svc).map_err(|e| err(r, "spec.rules.backendRefs.name", e.0))?;
                let here = Origin { file: r.file.display().to_string(), line: r.line };
                match backend_home.get(&name) {
                    Some((ns, first)) if *ns != bns => {
                        return Err(err(
                            r,
                            "spec.rules.backendRefs",
                            format!(
                                "Service {bns}/{svc} and Service {ns}/{svc} (referenced at {}:{}) share a name; check stands up one backend per Service name, so it cannot tell their answers apart",
                                first.file, first.line
                            ),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        backend_home.insert(name.clone(), (bns.clone(), here));
                    }
                }
                if bns != namespace {
                    backend_namespaces.insert(name.clone(), bns.clone());
                }
                backend_names.entry(name.clone()).or_default().extend(hosts.iter().cloned());
                if r.kind == "TLSRoute" {
                    backend_tls.insert(name);
                } else {
                    backend_names.entry(name).or_default();
                }
            }
        }
    }
    for (b, hosts) in backend_names {
        if backend_tls.contains(&b) {
            let mut names: Vec<String> = hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
            names.dedup();
            if names.is_empty() {
                names.push(format!("{b}.{apex}"));
            }
            let cert = unique_name(&format!("{b}-backend"), "backend-cert", &mut used);
            let service = shown(&namespace, backend_namespaces.get(&b).map_or(namespace.as_str(), String::as_str), b.as_str());
            certs.push(DerivedCert { name: cert.clone(), dns_names: names, source: CertSource::Backend { service } });
            backends.insert(b, Some(cert));
        } else {
            backends.insert(b, None);
        }
    }
    if !backends.is_empty() {
        let list: Vec<String> = backends
            .iter()
            .map(|(b, c)| {
                let b = shown(&namespace, backend_namespaces.get(b).map_or(namespace.as_str(), String::as_str), b.as_str());
                match c {
                    Some(_) => format!("{b} (TLS)"),
                    None => format!("{b} (HTTP)"),
                }
            })
            .collect();
        notes.push(format!("backends stood up in process for the backendRefs: {}", list.join(", ")));
    }

    // The manifests with placeholders: every namespace of the input becomes one the case owns
    // (the Gateway's `{namespace}`, any other `{namespace}-NAME`), so a kind run creates and
    // deletes each and never touches a namespace of the cluster's own.
    let namespaces = namespace_suffixes(&index.namespaces, &namespace)?;
    let cx = Templating {
        namespace: &namespace,
        gateway: &gw.name,
        apex: &apex,
        secret_cert: &secret_cert,
        namespaces: &namespaces,
        tls_backends: &backend_tls,
    };
    let mut docs = Vec::new();
    let mut origins = BTreeMap::new();
    // A Secret no certificate stands in for (one in another namespace, or one no listener of
    // this Gateway names) is kept, so the model still sees that it exists; its data is dropped:
    // the model reads existence only, and a user's key has no place in a derived case.
    let stood_in = |o: &Object| secret_cert.contains_key(&(ns_of(o), o.name.clone()));
    // In input order: the Gateway, its routes and the objects every case keeps (Services
    // become backends).
    let mut kept: Vec<usize> = index.routes_of(gw).to_vec();
    kept.extend(objects.iter().position(|o| std::ptr::eq(o, gw)));
    kept.extend(index.shared.iter().copied().filter(|&i| objects[i].kind != "Secret" || !stood_in(&objects[i])));
    kept.sort_unstable();
    for o in kept.into_iter().map(|i| &objects[i]) {
        origins.insert((o.kind.clone(), o.name.clone()), Origin { file: o.file.display().to_string(), line: o.line });
        let mut value = cx.object(o);
        if o.kind == "Secret"
            && let Some(m) = value.as_object_mut()
        {
            m.remove("data");
            m.remove("stringData");
            // The API server refuses a `kubernetes.io/tls` Secret without both keys, so the case
            // a cluster lane applies carries a placeholder that is no certificate: what the
            // model reads (that the Secret exists) holds on a cluster too.
            if m.get("type").and_then(Value::as_str) == Some("kubernetes.io/tls") {
                m.insert("data".into(), serde_json::json!({"tls.crt": PLACEHOLDER_B64, "tls.key": PLACEHOLDER_B64}));
            }
        }
        let yaml = serde_saphyr::to_string(&value).map_err(|e| err(o, "yaml", format!("writing it back: {e}")))?;
        docs.push(format!("# {}:{}\n{yaml}", o.file.display(), o.line));
    }

    // The probe matrix.
    let mut names: Vec<Sni> = Vec::new();
    let named_set: BTreeSet<&str> = named.iter().map(String::as_str).collect();
    let push = |n: String, names: &mut Vec<Sni>| {
        if let Ok(s) = Sni::new(n)
            && !names.contains(&s)
        {
            names.push(s);
        }
    };
    // The name a probe sends for a hostname: itself, or for a wildcard one name under it that
    // nothing names exactly.
    let probe_name = |n: &str| -> Option<String> {
        match n.strip_prefix("*.") {
            Some(rest) => ["www", "any", "lg-wildcard"].iter().map(|l| format!("{l}.{rest}")).find(|c| !named_set.contains(c.as_str())),
            None => Some(n.to_string()),
        }
    };
    for n in &named {
        if let Some(s) = probe_name(n) {
            push(s, &mut names);
        }
    }
    push(UNRELATED.to_string(), &mut names);
    let ports: BTreeSet<Port> = facts.iter().map(|f| f.port).collect();
    let mut matrix = Vec::new();
    for p in &ports {
        matrix.extend(names.iter().map(|n| MatrixKey::tls(*p, Some(n.clone()))));
        matrix.push(MatrixKey::tls(*p, None));
    }

    // Who claims which (port, name): a TLS or HTTPS listener its hostname on its port for TLS,
    // an HTTP listener its hostname on its port for plain HTTP; a route its hostnames on the
    // ports of the listeners it attaches to, TLS on TLS and HTTPS ones, plain HTTP on HTTP ones
    // (an HTTPRoute only: a TLSRoute or GRPCRoute is not asked over HTTP/1.1). Such a name
    // answering nothing there is `unreachable`.
    let mut claims: BTreeMap<MatrixKey, Vec<String>> = BTreeMap::new();
    let tls_port = |f: &crate::case::manifests::ListenerFacts| matches!(f.protocol.as_str(), "HTTPS" | "TLS");
    let http_listener = |f: &crate::case::manifests::ListenerFacts| f.protocol == "HTTP";
    let mut claim = |port: Port, host: &str, plain: bool, who: String| {
        if let Some(sni) = probe_name(&host.to_ascii_lowercase()).and_then(|n| Sni::new(n).ok()) {
            let key = if plain { MatrixKey::plain(port, sni) } else { MatrixKey::tls(port, Some(sni)) };
            let whos = claims.entry(key).or_default();
            if !whos.contains(&who) {
                whos.push(who);
            }
        }
    };
    for f in &facts {
        if let Some(h) = &f.hostname
            && (tls_port(f) || http_listener(f))
        {
            claim(f.port, h, http_listener(f), format!("listener {}", f.name));
        }
    }
    let mut catch_all: Vec<(Port, String)> = Vec::new();
    for r in &routes {
        let sections: Vec<Option<String>> = r
            .value
            .pointer("/spec/parentRefs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| p.get("name").and_then(Value::as_str) == Some(gw.name.as_str()))
            .map(|p| p.get("sectionName").and_then(Value::as_str).map(str::to_string))
            .collect();
        let attached = |f: &crate::case::manifests::ListenerFacts| sections.iter().any(|s| s.as_deref().is_none_or(|s| s == f.name));
        for f in facts.iter().filter(|f| attached(f)) {
            let plain = http_listener(f);
            if !(tls_port(f) || plain && r.kind == "HTTPRoute") {
                continue;
            }
            let hosts = strings(r.value.pointer("/spec/hostnames"));
            if plain && hosts.is_empty() && f.hostname.is_none() {
                // No hostname on either side: the route takes every name on this port, so
                // every name the Gateway's rows probe is claimed here too (the usual http ->
                // https redirect).
                catch_all.push((f.port, format!("{} {}", r.kind, r.name)));
            }
            for h in hosts {
                claim(f.port, &h, plain, format!("{} {}", r.kind, r.name));
            }
        }
    }
    for (port, who) in catch_all {
        for n in names.iter().filter(|n| n.as_str() != UNRELATED) {
            claim(port, n.as_str(), true, who.clone());
        }
    }

    // Plain HTTP rows: on every port with an HTTP listener, an HTTP/1.1 request per name an
    // HTTP listener or an HTTPRoute attached to one claims (on any HTTP port, as the TLS rows
    // probe every name on every port), then the unrelated name (Envoy's own 404 when no
    // virtual host takes it).
    let plain_ports: BTreeSet<Port> = facts.iter().filter(|f| http_listener(f)).map(|f| f.port).collect();
    let mut plain_names: Vec<Sni> = Vec::new();
    for k in claims.keys().filter(|k| k.plain) {
        if let Some(s) = &k.sni
            && !plain_names.contains(s)
        {
            plain_names.push(s.clone());
        }
    }
    // In the order the input names them, as the TLS rows.
    plain_names.sort_by_key(|s| names.iter().position(|n| n == s).unwrap_or(usize::MAX));
    if let Ok(u) = Sni::new(UNRELATED.to_string())
        && !plain_names.contains(&u)
    {
        plain_names.push(u);
    }
    for p in &plain_ports {
        matrix.extend(plain_names.iter().map(|n| MatrixKey::plain(*p, n.clone())));
    }

    let http_ports: Vec<Port> =
        ports.iter().copied().filter(|p| facts.iter().filter(|f| f.port == *p).all(|f| f.protocol == "HTTP")).collect();
    Ok(Derived {
        http_ports,
        claims,
        gateway: gw.name.clone(),
        namespace,
        origin: Origin { file: gw.file.display().to_string(), line: gw.line },
        apex,
        certs,
        backends,
        backend_namespaces,
        namespaces: namespaces.into_iter().map(|(input, suffix)| (suffix, input)).collect(),
        manifests: docs.join("---\n"),
        matrix,
        notes,
        origins,
    })
}

/// How a Service is named in outputs: by name in the Gateway's namespace, `ns/name` elsewhere.
fn shown(gateway_ns: &str, ns: &str, name: &str) -> String {
    if ns == gateway_ns { name.to_string() } else { format!("{ns}/{name}") }
}

/// Whether a route of `kind` in `route_ns` may use Service `name` in `ns`: the same namespace
/// always; another only through a ReferenceGrant there (Cilium's
/// `helpers.IsBackendReferenceAllowed`, see the call above).
fn backend_permitted(grants: &[ReferenceGrant], kind: &str, route_ns: &str, ns: &str, name: &str) -> bool {
    route_ns == ns || grants.iter().any(|g| g.allows((GATEWAY_GROUP, kind, route_ns), ("", "Service", ns, name)))
}

/// Every namespace of the input other than the Gateway's `gw_ns` (where objects live, the
/// Namespaces declared, and the namespaces references name) -> the suffix it has in the derived
/// case: `gw_ns-REST` keeps REST (it reads as the Gateway's own family), any other keeps its
/// name. Two namespaces that would get one suffix are refused rather than merged.
fn namespace_suffixes(named: &[(String, &Object)], gw_ns: &str) -> Result<BTreeMap<String, String>, InputError> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut by_suffix: BTreeMap<String, (String, &Object)> = BTreeMap::new();
    for (ns, o) in named.iter().map(|(ns, o)| (ns.clone(), *o)) {
        if ns == gw_ns || out.contains_key(&ns) {
            continue;
        }
        let suffix = ns.strip_prefix(gw_ns).and_then(|r| r.strip_prefix('-')).unwrap_or(&ns).to_string();
        if let Some((other, first)) = by_suffix.get(&suffix) {
            return Err(err(
                o,
                "metadata.namespace",
                format!(
                    "namespaces {other} (at {}:{}) and {ns} would both be {{namespace}}-{suffix} in the derived case; rename one",
                    first.file.display(),
                    first.line
                ),
            ));
        }
        by_suffix.insert(suffix.clone(), (ns.clone(), o));
        out.insert(ns, suffix);
    }
    Ok(out)
}

/// Every namespace `objects` name, with the object naming it, in input order (repeats kept):
/// where each object lives (a Namespace: its own name), and the namespaces its parentRefs,
/// ReferenceGrant `from`, backendRefs and certificateRefs name.
fn named_namespaces(objects: &[Object]) -> Vec<(String, &Object)> {
    let mut named: Vec<(String, &Object)> = Vec::new();
    for o in objects {
        if o.kind == "Namespace" {
            named.push((o.name.clone(), o));
        } else {
            named.push((ns_of(o), o));
        }
        let v = &o.value;
        let mut refs: Vec<&Value> = Vec::new();
        refs.extend(v.pointer("/spec/parentRefs").and_then(Value::as_array).into_iter().flatten());
        refs.extend(v.pointer("/spec/from").and_then(Value::as_array).into_iter().flatten());
        for rule in v.pointer("/spec/rules").and_then(Value::as_array).into_iter().flatten() {
            refs.extend(rule.get("backendRefs").and_then(Value::as_array).into_iter().flatten());
        }
        for l in v.pointer("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
            refs.extend(l.pointer("/tls/certificateRefs").and_then(Value::as_array).into_iter().flatten());
        }
        for r in refs {
            if let Some(n) = r.get("namespace").and_then(Value::as_str) {
                named.push((n.to_string(), o));
            }
        }
    }
    named
}

/// A case-local name from `base` (lower-cased, cut to fit), unique among `used`.
fn unique_name(base: &str, fallback: &str, used: &mut BTreeSet<String>) -> CertName {
    let cleaned: String = base.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let cleaned = cleaned.trim_matches('-').chars().take(50).collect::<String>();
    let cleaned = cleaned.trim_end_matches('-');
    let start = if cleaned.starts_with(|c: char| c.is_ascii_lowercase()) { cleaned.to_string() } else { format!("c-{cleaned}") };
    let start = if CertName::new(start.clone()).is_ok() { start } else { fallback.to_string() };
    let mut name = start.clone();
    let mut i = 2;
    while used.contains(&name) || name == "nothing" {
        name = format!("{start}-{i}");
        i += 1;
    }
    used.insert(name.clone());
    CertName::new(name).expect("built from a checked name")
}

/// The longest DNS suffix of at least two labels that every name shares (wildcards stripped).
pub fn apex_of(names: &[String]) -> Option<String> {
    let mut common: Option<Vec<&str>> = None;
    for n in names {
        let n = n.strip_prefix("*.").unwrap_or(n);
        let labels: Vec<&str> = n.rsplit('.').collect();
        common = Some(match common {
            None => labels,
            Some(c) => c.iter().zip(&labels).take_while(|(a, b)| a == b).map(|(a, _)| *a).collect(),
        });
    }
    let c = common?;
    if c.len() < 2 {
        return None;
    }
    let apex: Vec<&str> = c.into_iter().rev().collect();
    let apex = apex.join(".");
    crate::types::DnsName::new(apex.clone()).ok().map(|_| apex)
}

/// `api.example.org` -> `api.{apex}`, `example.org` -> `{apex}`, other names unchanged.
pub fn template_apex(name: &str, apex: &str) -> String {
    if name == apex {
        return "{apex}".into();
    }
    match name.strip_suffix(apex).and_then(|p| p.strip_suffix('.')) {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}.{{apex}}"),
        _ => name.to_string(),
    }
}

struct Templating<'a> {
    namespace: &'a str,
    gateway: &'a str,
    apex: &'a str,
    /// (namespace, Secret) -> the certificate standing in for it.
    secret_cert: &'a BTreeMap<(String, String), CertName>,
    /// Input namespace -> its suffix in the derived case (see [`namespace_suffixes`]).
    namespaces: &'a BTreeMap<String, String>,
    /// The backends stood up as TLS servers (referenced by a TLSRoute).
    tls_backends: &'a BTreeSet<BackendName>,
}

impl Templating<'_> {
    fn ns(&self, v: &mut Value) {
        if let Some(s) = v.as_str() {
            if s == self.namespace {
                *v = Value::String("{namespace}".into());
            } else if let Some(suffix) = self.namespaces.get(s) {
                *v = Value::String(format!("{{namespace}}-{suffix}"));
            }
        }
    }

    /// A selector's values for the `kubernetes.io/metadata.name` key name namespaces.
    fn name_values(&self, key: Option<&Value>, values: &mut Value) {
        if key.and_then(Value::as_str) != Some(NAME_LABEL) {
            return;
        }
        for val in values.as_array_mut().into_iter().flatten() {
            self.ns(val);
        }
    }

    fn host(&self, v: &mut Value) {
        if let Some(s) = v.as_str() {
            *v = Value::String(template_apex(s, self.apex));
        }
    }

    /// Label values (and selector values) naming the Gateway's namespace.
    fn label_values(&self, v: Option<&mut Value>) {
        if let Some(m) = v.and_then(Value::as_object_mut) {
            for val in m.values_mut() {
                if val.as_str() == Some(self.namespace) {
                    *val = Value::String("{namespace}".into());
                }
            }
        }
    }

    fn object(&self, o: &Object) -> Value {
        let mut v = o.value.clone();
        if let Some(obj) = v.as_object_mut() {
            obj.remove("status");
        }
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            // Server-side bookkeeping and annotations: the model reads none of it, and free text
            // in braces would read as a placeholder.
            for k in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "annotations", "selfLink"] {
                meta.remove(k);
            }
        }
        if o.kind == "Namespace"
            && let Some(n) = v.pointer_mut("/metadata/name")
        {
            self.ns(n);
        }
        self.label_values(v.pointer_mut("/metadata/labels"));
        match v.pointer_mut("/metadata/namespace") {
            Some(n) => self.ns(n),
            // A namespaced object that names none is in `default` on the cluster; the derived
            // case says which of its namespaces that is.
            None if o.kind != "Namespace" && ns_of(o) != self.namespace => {
                if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                    let mut n = Value::String(ns_of(o));
                    self.ns(&mut n);
                    meta.insert("namespace".into(), n);
                }
            }
            None => {}
        }
        if o.kind == "Gateway"
            && let Some(n) = v.pointer_mut("/metadata/name")
        {
            *n = Value::String("{gateway}".into());
        }
        if let Some(ls) = v.pointer_mut("/spec/listeners").and_then(Value::as_array_mut) {
            for l in ls {
                if let Some(h) = l.get_mut("hostname") {
                    self.host(h);
                }
                for r in l.pointer_mut("/tls/certificateRefs").and_then(Value::as_array_mut).into_iter().flatten() {
                    let sns = r.get("namespace").and_then(Value::as_str).unwrap_or(self.namespace).to_string();
                    if let Some(n) = r.get_mut("name")
                        && let Some(c) = n.as_str().and_then(|s| self.secret_cert.get(&(sns, s.to_string())))
                    {
                        *n = Value::String(format!("{{secret:{c}}}"));
                    }
                    if let Some(n) = r.get_mut("namespace") {
                        self.ns(n);
                    }
                }
                if let Some(sel) = l.pointer_mut("/allowedRoutes/namespaces/selector") {
                    self.label_values(sel.get_mut("matchLabels"));
                    if let Some(m) = sel.get_mut("matchLabels").and_then(Value::as_object_mut)
                        && let Some(val) = m.get_mut(NAME_LABEL)
                    {
                        self.ns(val);
                    }
                    for e in sel.get_mut("matchExpressions").and_then(Value::as_array_mut).into_iter().flatten() {
                        let key = e.get("key").cloned();
                        for val in e.get_mut("values").and_then(Value::as_array_mut).into_iter().flatten() {
                            if val.as_str() == Some(self.namespace) {
                                *val = Value::String("{namespace}".into());
                            }
                        }
                        if let Some(values) = e.get_mut("values") {
                            self.name_values(key.as_ref(), values);
                        }
                    }
                }
            }
        }
        for h in v.pointer_mut("/spec/hostnames").and_then(Value::as_array_mut).into_iter().flatten() {
            self.host(h);
        }
        for p in v.pointer_mut("/spec/parentRefs").and_then(Value::as_array_mut).into_iter().flatten() {
            let is_gw = p.get("kind").and_then(Value::as_str).unwrap_or("Gateway") == "Gateway";
            if is_gw && p.get("name").and_then(Value::as_str) == Some(self.gateway) {
                p["name"] = Value::String("{gateway}".into());
            }
            if let Some(n) = p.get_mut("namespace") {
                self.ns(n);
            }
        }
        for rule in v.pointer_mut("/spec/rules").and_then(Value::as_array_mut).into_iter().flatten() {
            for b in rule.get_mut("backendRefs").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(n) = b.get_mut("namespace") {
                    self.ns(n);
                }
                // The backend that stands in for the Service has one port where the lanes create
                // it (lanes/cluster/manifests.rs: 443 for a TLS backend, 80 for a plain one), so
                // the derived route asks for that port: from 1.20.1 Cilium refuses a port its
                // Service does not expose (rules::BACKEND_PORT_CHECKED), and the input's own port
                // (8080, say) would make the derived case answer BackendNotFound where the
                // user's Service serves it.
                let stand_in = b.get("name").and_then(Value::as_str).and_then(|n| BackendName::new(n).ok());
                if let (Some(port), Some(name)) = (b.get_mut("port"), stand_in) {
                    *port = Value::from(if self.tls_backends.contains(&name) { 443 } else { 80 });
                }
            }
        }
        for f in v.pointer_mut("/spec/from").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(n) = f.get_mut("namespace") {
                self.ns(n);
            }
        }
        // A ReferenceGrant naming a Secret a generated certificate stands in for names it by
        // the Secret's name in the derived case, so the grant still lets exactly it through.
        if o.kind == "ReferenceGrant" {
            let grant_ns = ns_of(o);
            for t in v.pointer_mut("/spec/to").and_then(Value::as_array_mut).into_iter().flatten() {
                let secret = t.get("group").and_then(Value::as_str).unwrap_or("").is_empty()
                    && t.get("kind").and_then(Value::as_str) == Some("Secret");
                if secret
                    && let Some(n) = t.get_mut("name")
                    && let Some(c) = n.as_str().and_then(|s| self.secret_cert.get(&(grant_ns.clone(), s.to_string())))
                {
                    *n = Value::String(format!("{{secret:{c}}}"));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apex_is_the_shared_suffix() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(apex_of(&n(&["*.example.org", "example.org", "api.example.org"])).as_deref(), Some("example.org"));
        assert_eq!(apex_of(&n(&["a.b.example.org", "c.b.example.org"])).as_deref(), Some("b.example.org"));
        assert_eq!(apex_of(&n(&["a.example.org", "b.example.com"])), None);
        assert_eq!(apex_of(&[]), None);
        assert_eq!(template_apex("api.example.org", "example.org"), "api.{apex}");
        assert_eq!(template_apex("*.example.org", "example.org"), "*.{apex}");
        assert_eq!(template_apex("example.org", "example.org"), "{apex}");
        assert_eq!(template_apex("badexample.org", "example.org"), "badexample.org");
    }

    #[test]
    fn unique_names_fit_the_case_format() {
        let mut used = BTreeSet::new();
        assert_eq!(unique_name("cozystack-gateway", "x", &mut used).as_str(), "cozystack-gateway");
        assert_eq!(unique_name("cozystack-gateway", "x", &mut used).as_str(), "cozystack-gateway-2");
        assert_eq!(unique_name("9Wild_Card", "x", &mut used).as_str(), "c-9wild-card");
        assert_eq!(unique_name("nothing", "x", &mut used).as_str(), "nothing-2");
    }
}
