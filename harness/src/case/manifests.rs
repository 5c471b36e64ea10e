//! A case's manifests: multi-document YAML, rendered, split into objects with their source
//! line, plus the few facts of the Gateway and routes that lint and the lanes need.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_saphyr::Spanned;

use super::template::{self, Vars};
use crate::types::Port;

/// One Kubernetes object from a manifest file.
#[derive(Debug, Clone)]
pub struct Object {
    pub file: PathBuf,
    pub line: u64,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub value: Value,
}

impl Object {
    /// `group/kind`, the form Gateway API uses for kinds (core group is empty).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

/// One listener of the case's Gateway, as far as layout-gate needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerFacts {
    pub name: String,
    pub port: Port,
    pub protocol: String,
    pub hostname: Option<String>,
}

/// A route and the parents it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFacts {
    pub kind: String,
    pub name: String,
    /// The key expectations use per parentRef: its sectionName, or the Gateway name when the
    /// parentRef has none.
    pub parents: Vec<String>,
}

/// A problem in a manifest, located in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProblem {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

pub const ROUTE_KINDS: &[&str] = &["HTTPRoute", "TLSRoute", "GRPCRoute", "TCPRoute", "UDPRoute"];

/// Renders and parses one manifest file into objects.
pub fn parse_file(path: &Path, text: &str, vars: &Vars) -> Result<Vec<Object>, ManifestProblem> {
    let problem = |line: u64, column: u64, field: &str, message: String| ManifestProblem {
        file: path.to_path_buf(),
        line,
        column,
        field: field.into(),
        message,
    };
    let rendered = template::render(text, vars).map_err(|e| problem(e.line as u64, e.column as u64, "placeholder", e.message))?;
    parse_text(path, &rendered)
}

/// Parses manifest text that needs no rendering (e.g. what a controller rendered) into objects.
pub fn parse_text(path: &Path, rendered: &str) -> Result<Vec<Object>, ManifestProblem> {
    parse_with(path, rendered, serde_saphyr::Budget::default())
}

/// [`parse_text`] for a whole platform's rendered manifests (what `check` reads: a `helm
/// template` or `kubectl get -o yaml` output of up to its 64 MiB input limit): the parser's
/// default budget stops at 1,024 documents and 250,000 nodes, which a thousand Gateways with
/// their routes pass. Alias expansion stays bounded as by default.
pub fn parse_text_large(path: &Path, rendered: &str) -> Result<Vec<Object>, ManifestProblem> {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 1 << 20;
    budget.max_nodes = 1 << 26;
    budget.max_events = 1 << 27;
    parse_with(path, rendered, budget)
}

fn parse_with(path: &Path, rendered: &str, budget: serde_saphyr::Budget) -> Result<Vec<Object>, ManifestProblem> {
    let problem = |line: u64, column: u64, field: &str, message: String| ManifestProblem {
        file: path.to_path_buf(),
        line,
        column,
        field: field.into(),
        message,
    };
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    let docs: Vec<Spanned<Value>> = serde_saphyr::from_multiple_with_options(rendered, options).map_err(|e| {
        let (l, c) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        problem(l, c, "yaml", super::problem::short_yaml_message(&e))
    })?;
    let mut out = Vec::new();
    for doc in docs {
        let line = doc.referenced.line();
        let value = doc.value;
        if value.is_null() {
            continue; // an empty document between `---` markers
        }
        let Some(obj) = value.as_object() else {
            return Err(problem(line, 1, "document", "each YAML document must be a Kubernetes object (a mapping)".into()));
        };
        let text_field = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_string);
        let api_version = text_field("apiVersion").ok_or_else(|| problem(line, 1, "apiVersion", "missing or not a string".into()))?;
        let kind = text_field("kind").ok_or_else(|| problem(line, 1, "kind", "missing or not a string".into()))?;
        let meta = obj.get("metadata").and_then(Value::as_object);
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            // A `List` (what `kubectl get -o yaml` prints) has no name of its own.
            .or_else(|| is_list(&kind, &value).then(String::new))
            .ok_or_else(|| problem(line, 1, "metadata.name", format!("{kind} has no metadata.name")))?;
        let namespace = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).map(str::to_string);
        out.push(Object { file: path.to_path_buf(), line, api_version, kind, name, namespace, value });
    }
    Ok(out)
}

/// Whether an object is a list of objects: `kind: List` (what `kubectl get -o yaml` prints for
/// several kinds), or a typed list (`GatewayList`, `HTTPRouteList`: what it prints for one)
/// with its `items`.
pub fn is_list(kind: &str, value: &Value) -> bool {
    kind == "List" || (kind.ends_with("List") && value.get("items").is_some_and(Value::is_array))
}

/// The listeners of a Gateway object, checked against the Gateway API types.
pub fn gateway_listeners(gw: &Object) -> Result<Vec<ListenerFacts>, ManifestProblem> {
    let problem =
        |field: &str, message: String| ManifestProblem { file: gw.file.clone(), line: gw.line, column: 1, field: field.into(), message };
    let spec = gw.value.get("spec").cloned().ok_or_else(|| problem("spec", "Gateway has no spec".into()))?;
    // The typed parse catches shape errors (a port written as a string, a listener without a
    // name) with the same rules the API server applies to types.
    let spec: gateway_api::gateways::GatewaySpec =
        serde_json::from_value(spec).map_err(|e| problem("spec", format!("not a valid Gateway spec: {e}")))?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, l) in spec.listeners.iter().enumerate() {
        if !seen.insert(l.name.clone()) {
            return Err(problem(&format!("spec.listeners[{i}].name"), format!("listener name {:?} is used twice", l.name)));
        }
        let port = Port::new(u64::try_from(l.port).unwrap_or(0)).map_err(|e| problem(&format!("spec.listeners[{i}].port"), e.0))?;
        out.push(ListenerFacts { name: l.name.clone(), port, protocol: l.protocol.clone(), hostname: l.hostname.clone() });
    }
    Ok(out)
}

/// The key of a route parentRef in expectations and statuses. With one Gateway in the case, a
/// parentRef to it is keyed by its `sectionName`, or by the Gateway's name without one (as
/// before several Gateways existed). Any other parent (a second Gateway, a ListenerSet) is
/// `<name>/<sectionName>`, or `<name>` without a sectionName.
pub fn parent_key(kind: &str, name: &str, section: Option<&str>, single_gateway: Option<&str>) -> String {
    match section {
        Some(s) if kind == "Gateway" && single_gateway == Some(name) => s.to_string(),
        Some(s) => format!("{name}/{s}"),
        None => name.to_string(),
    }
}

/// The route facts of a route object (any kind in [`ROUTE_KINDS`]). `single_gateway` is the
/// case's Gateway when the manifests hold exactly one.
pub fn route_facts(obj: &Object, single_gateway: Option<&str>) -> RouteFacts {
    let parents = obj
        .value
        .pointer("/spec/parentRefs")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| {
                    let s = |k: &str| r.get(k).and_then(Value::as_str);
                    parent_key(s("kind").unwrap_or("Gateway"), s("name").unwrap_or_default(), s("sectionName"), single_gateway)
                })
                .collect()
        })
        .unwrap_or_default();
    RouteFacts { kind: obj.kind.clone(), name: obj.name.clone(), parents }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars { apex: "example.test".into(), namespace: "ns".into(), gateway: "gw".into() }
    }

    #[test]
    fn splits_documents_with_lines() {
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: gw\nspec:\n  gatewayClassName: cilium\n  listeners:\n  - {name: https, port: 443, protocol: HTTPS, hostname: \"*.{apex}\"}\n";
        let objs = parse_file(Path::new("m.yaml"), text, &vars()).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].kind, "Gateway");
        assert_eq!(objs[1].line, 6);
        let ls = gateway_listeners(&objs[1]).unwrap();
        assert_eq!(ls[0].hostname.as_deref(), Some("*.example.test"));
        assert_eq!(ls[0].port.get(), 443);
    }

    #[test]
    fn bad_gateway_port_is_named() {
        let text = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\nspec:\n  gatewayClassName: cilium\n  listeners:\n  - {name: a, port: 70000, protocol: HTTP}\n";
        let objs = parse_file(Path::new("m.yaml"), text, &vars()).unwrap();
        let e = gateway_listeners(&objs[0]).unwrap_err();
        assert_eq!(e.field, "spec.listeners[0].port");
        assert!(e.message.contains("outside 1-65535"), "{}", e.message);
    }

    #[test]
    fn objects_without_names_are_refused() {
        let e = parse_file(Path::new("m.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {}\n", &vars()).unwrap_err();
        assert_eq!(e.field, "metadata.name");
        assert_eq!(e.line, 1);
    }
}
