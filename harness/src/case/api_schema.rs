//! The Gateway API's own limits and patterns, read from the pinned CRD bundles' schemas rather
//! than re-typed: at most 64 listeners, hostnames lower-case RFC 1123 with at most a leading
//! `*.` (so no bare `*`), at most 16 route hostnames, and so on. A manifest that breaks one is
//! refused by the API server at apply time; lint refuses it first, located in the manifest.
//!
//! How the facts reach the binary: `gateway_api_schema.json` beside this file holds, for every
//! bundle version `kind-config/versions.yaml` pins, the constraints (`maxItems`, `minItems`,
//! `maxLength`, `minLength`, `pattern`) found at the [`CHECKED`] paths of each kind's OpenAPI
//! schema, and every CRD's scope, with the SHA-256 of each CRD file and the module's `h1:` sum.
//! It is written by [`extract`] from the `sigs.k8s.io/gateway-api` Go module at that version
//! (`config/crd/experimental/`, the channel the kind lane installs) and embedded at build time;
//! the test `the_schema_facts_are_the_pinned_bundles_own` extracts them again from the module
//! (`go mod download`) and fails when the file differs or a pinned bundle is missing
//! (`LAYOUT_GATE_BLESS=1` rewrites it after a bundle bump). Only the list of paths is ours.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifests::Object;
use super::problem::Problem;

/// Where lint looks, by kind: the schema paths whose constraints are checked. `[]` steps into
/// the items of an array. The constraints themselves are the schema's.
pub const CHECKED: &[(&str, &[&str])] = &[
    ("Gateway", &["spec.listeners", "spec.listeners[].name", "spec.listeners[].hostname", "spec.addresses"]),
    ("ListenerSet", &["spec.listeners", "spec.listeners[].name", "spec.listeners[].hostname"]),
    ("XListenerSet", &["spec.listeners", "spec.listeners[].name", "spec.listeners[].hostname"]),
    ("HTTPRoute", &["spec", "spec.hostnames", "spec.hostnames[]", "spec.parentRefs", "spec.rules"]),
    ("GRPCRoute", &["spec", "spec.hostnames", "spec.hostnames[]", "spec.parentRefs", "spec.rules"]),
    ("TLSRoute", &["spec", "spec.hostnames", "spec.hostnames[]", "spec.parentRefs", "spec.rules"]),
];

/// The CRD folder of the channel the kind lane installs (`experimental-install.yaml`).
pub const CRD_DIR: &str = "config/crd/experimental";
/// The Go module the bundles come from.
pub const MODULE: &str = "sigs.k8s.io/gateway-api";

/// The embedded facts file (see the module comment).
const FACTS_JSON: &str = include_str!("gateway_api_schema.json");

/// Every pinned bundle's facts, by bundle version (`v1.4.1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// How the file was made, for a reader of it.
    pub made_by: String,
    pub bundles: BTreeMap<String, Bundle>,
}

/// One bundle: its module and every CRD in its folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bundle {
    /// `sigs.k8s.io/gateway-api@v1.4.1`.
    pub module: String,
    /// The module's `h1:` sum, as `go mod download -json` gives it.
    pub sum: String,
    pub crds: Vec<Crd>,
}

/// One CustomResourceDefinition of a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crd {
    pub group: String,
    pub kind: String,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// The file inside the module and its SHA-256.
    pub file: String,
    pub sha256: String,
    /// The version objects are stored at.
    pub storage: String,
    /// Served version -> checked path -> its constraints.
    pub versions: BTreeMap<String, BTreeMap<String, Constraints>>,
}

/// The schema keywords lint applies, as the schema states them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraints {
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "maxItems")]
    pub max_items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "minItems")]
    pub min_items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "maxLength")]
    pub max_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "minLength")]
    pub min_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The fields an object at this path must have (`required`). Lint does not refuse a
    /// missing one (a case may mean the refusal): the API server does, at apply time, and
    /// [`refusals`] predicts it for the version a lane applies the object at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
}

impl Constraints {
    fn of(node: &Value) -> Constraints {
        let n = |k: &str| node.get(k).and_then(Value::as_u64);
        Constraints {
            max_items: n("maxItems"),
            min_items: n("minItems"),
            max_length: n("maxLength"),
            min_length: n("minLength"),
            pattern: node.get("pattern").and_then(Value::as_str).map(str::to_string),
            required: node
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        }
    }
    fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }
}

/// The embedded facts, read once. An unreadable file is a build of layout-gate gone wrong
/// (the test reads it on every run), said as such rather than a panic.
pub fn facts() -> Result<&'static Facts, String> {
    static FACTS: OnceLock<Result<Facts, String>> = OnceLock::new();
    FACTS
        .get_or_init(|| {
            serde_json::from_str(FACTS_JSON)
                .map_err(|e| format!("the built-in Gateway API schema facts do not read ({e}): a layout-gate bug"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Facts {
    /// The scope a bundle's CRD gives `group`/`kind` (`Namespaced`, `Cluster`), from any bundle.
    pub fn scope(&self, group: &str, kind: &str) -> Option<&str> {
        self.bundles.values().flat_map(|b| &b.crds).find(|c| c.group == group && c.kind == kind).map(|c| c.scope.as_str())
    }
}

/// Reads the CRDs of the module folder `module_dir` (the module at `version`, with its `h1:`
/// sum) into the facts lint checks.
pub fn extract(module_dir: &Path, version: &str, sum: &str) -> Result<Bundle, String> {
    let dir = module_dir.join(CRD_DIR);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        use sha2::Digest;
        let sha256 = crate::types::Fingerprint(sha2::Sha256::digest(text.as_bytes()).into()).hex();
        let file = format!("{CRD_DIR}/{}", f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        for doc in docs.iter().filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")) {
            crds.push(crd_facts(doc, &file, &sha256));
        }
    }
    Ok(Bundle { module: format!("{MODULE}@{version}"), sum: sum.to_string(), crds })
}

/// One CRD's scope, versions and the constraints at the [`CHECKED`] paths of its kind.
fn crd_facts(doc: &Value, file: &str, sha256: &str) -> Crd {
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let kind = s("/spec/names/kind");
    let paths = CHECKED.iter().find(|(k, _)| *k == kind).map(|(_, p)| *p).unwrap_or(&[]);
    let mut versions = BTreeMap::new();
    let mut storage = String::new();
    for v in doc.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
        let name = v.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage = name.clone();
        }
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let root = v.pointer("/schema/openAPIV3Schema").unwrap_or(&Value::Null);
        let found: BTreeMap<String, Constraints> = paths
            .iter()
            .filter_map(|p| schema_at(root, p).map(|node| (p.to_string(), Constraints::of(node))))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        versions.insert(name, found);
    }
    Crd { group: s("/spec/group"), kind, scope: s("/spec/scope"), file: file.to_string(), sha256: sha256.to_string(), storage, versions }
}

/// The schema node at `path` (`spec.listeners[].hostname`) below an OpenAPI object schema.
fn schema_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = root;
    for seg in path.split('.') {
        let (name, items) = match seg.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (seg, false),
        };
        node = node.get("properties")?.get(name)?;
        if items {
            node = node.get("items")?;
        }
    }
    Some(node)
}

/// Every value of `obj` at `path`, with its concrete place (`spec.listeners[3].hostname`).
fn values_at<'a>(obj: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let mut at: Vec<(String, &Value)> = vec![(String::new(), obj)];
    for seg in path.split('.') {
        let (name, items) = match seg.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (seg, false),
        };
        let mut next = Vec::new();
        for (place, v) in at {
            let Some(child) = v.get(name) else { continue };
            let place = if place.is_empty() { name.to_string() } else { format!("{place}.{name}") };
            if items {
                for (i, item) in child.as_array().into_iter().flatten().enumerate() {
                    next.push((format!("{place}[{i}]"), item));
                }
            } else {
                next.push((place, child));
            }
        }
        at = next;
    }
    at
}

/// The schema's pattern `p`, compiled once per process (lint applies it to every hostname).
fn compiled(p: &str) -> Result<regex_lite::Regex, String> {
    static CACHE: OnceLock<std::sync::Mutex<BTreeMap<String, Result<regex_lite::Regex, String>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    cache.entry(p.to_string()).or_insert_with(|| regex_lite::Regex::new(p).map_err(|e| e.to_string())).clone()
}

/// One constraint a value breaks, in words, and the needle that finds it in the manifest.
fn broken(c: &Constraints, v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(items) = v.as_array() {
        let n = items.len() as u64;
        if let Some(max) = c.max_items.filter(|m| n > *m) {
            out.push((format!("{n} items; the Gateway API allows at most {max} (maxItems)"), String::new()));
        }
        if let Some(min) = c.min_items.filter(|m| n < *m) {
            out.push((format!("{n} items; the Gateway API needs at least {min} (minItems)"), String::new()));
        }
    }
    if let Some(s) = v.as_str() {
        let n = s.chars().count() as u64;
        if let Some(max) = c.max_length.filter(|m| n > *m) {
            out.push((format!("{s:?} is {n} characters; the Gateway API allows at most {max} (maxLength)"), s.to_string()));
        }
        if let Some(min) = c.min_length.filter(|m| n < *m) {
            out.push((format!("{s:?} is {n} characters; the Gateway API needs at least {min} (minLength)"), s.to_string()));
        }
        if let Some(p) = &c.pattern {
            match compiled(p) {
                Ok(re) if !re.is_match(s) => {
                    out.push((format!("{s:?} does not match the Gateway API's pattern {p} (lower case, no bare `*`)"), s.to_string()))
                }
                Ok(_) => {}
                Err(e) => out.push((format!("the schema's pattern {p} does not compile here ({e}): a layout-gate bug"), String::new())),
            }
        }
    }
    out
}

/// Every Gateway API object of the manifests checked against every pinned bundle's schema
/// facts; one problem per broken constraint, naming the bundles that refuse it. `texts`: the
/// rendered manifest texts by file, to locate values.
pub fn check_objects(objects: &[Object], texts: &BTreeMap<PathBuf, String>) -> Vec<Problem> {
    let facts = match facts() {
        Ok(f) => f,
        Err(e) => {
            let file = objects.first().map(|o| o.file.clone()).unwrap_or_default();
            return vec![Problem { file, line: 0, column: 0, field: "manifests".into(), message: e }];
        }
    };
    let mut out: Vec<Problem> = Vec::new();
    // (file, line, field, message) -> bundles, so one broken limit shared by every bundle is one problem.
    let mut found: BTreeMap<(PathBuf, u64, u64, String, String), Vec<String>> = BTreeMap::new();
    for o in objects {
        let version = o.api_version.rsplit_once('/').map(|(_, v)| v).unwrap_or("");
        for (bundle_version, bundle) in &facts.bundles {
            let Some(crd) = bundle.crds.iter().find(|c| c.group == o.group() && c.kind == o.kind) else { continue };
            // The object's version when the bundle serves it, else the stored one (the kind lane
            // applies TLSRoutes at the bundle's stored version).
            let Some(checks) = crd.versions.get(version).or_else(|| crd.versions.get(&crd.storage)) else { continue };
            for (path, c) in checks {
                for (place, v) in values_at(&o.value, path) {
                    for (what, needle) in broken(c, v) {
                        let key = place.rsplit('.').next().unwrap_or(&place).split('[').next().unwrap_or_default().to_string();
                        let needle = if needle.is_empty() { format!("{key}:") } else { needle };
                        let (line, column) = texts.get(&o.file).map(|t| super::problem::locate(t, o.line, &needle)).unwrap_or((o.line, 1));
                        found
                            .entry((o.file.clone(), line, column, format!("{} {}: {place}", o.kind, o.name), what))
                            .or_default()
                            .push(bundle_version.clone());
                    }
                }
            }
        }
    }
    for ((file, line, column, field, what), bundles) in found {
        out.push(Problem {
            file,
            line,
            column,
            field,
            message: format!("{what}; from the CRD schema of gateway-api {} (the pinned bundles)", bundles.join(", ")),
        });
    }
    out
}

/// Why the API server refuses `o` when it is applied at `version` of its kind with `bundle`'s
/// CRDs installed (`v1.6.1`, `v1`): each required field the object lacks, in the API server's
/// words (`spec.hostnames: Required value`), from the `required` lists of that version's schema
/// at the [`CHECKED`] paths. Empty when it is admitted, or when the bundle or version is not in
/// the facts (nothing is known, nothing is predicted). The CRD's structural schema is what
/// refuses it (HTTP 422, reason Invalid), before any controller sees the object.
pub fn refusals(o: &Object, bundle: &str, version: &str) -> Vec<String> {
    let Ok(facts) = facts() else { return Vec::new() };
    let Some(crd) = facts.bundles.get(bundle).and_then(|b| b.crds.iter().find(|c| c.group == o.group() && c.kind == o.kind)) else {
        return Vec::new();
    };
    let Some(checks) = crd.versions.get(version) else { return Vec::new() };
    let mut out = Vec::new();
    for (path, c) in checks.iter().filter(|(_, c)| !c.required.is_empty()) {
        for (place, v) in values_at(&o.value, path) {
            for r in c.required.iter().filter(|r| v.get(r.as_str()).is_none_or(Value::is_null)) {
                out.push(format!("{place}.{r}: Required value"));
            }
        }
    }
    out
}

/// The API server's message for a refusal of `o` (`TLSRoute.gateway.networking.k8s.io "api"
/// is invalid: spec.hostnames: Required value`), as the lanes record it.
pub fn refusal_message(o: &Object, why: &[String]) -> String {
    format!("{}.{} {:?} is invalid: {}", o.kind, o.group(), o.name, why.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Go module folder of the gateway-api module at `version`, and its `h1:` sum, through
    /// `go mod download` (the module cache, or the Go module proxy).
    fn module(version: &str) -> (PathBuf, String) {
        let out = std::process::Command::new("go")
            .args(["mod", "download", "-json", &format!("{MODULE}@{version}")])
            .env("GOFLAGS", "-mod=mod")
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap_or_else(|e| {
                panic!("go: {e}: Go (1.26, on every machine of this project) reads the pinned Gateway API CRD bundles' schemas")
            });
        assert!(out.status.success(), "go mod download {MODULE}@{version}: {}", String::from_utf8_lossy(&out.stderr));
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        (PathBuf::from(j["Dir"].as_str().unwrap()), j["Sum"].as_str().unwrap().to_string())
    }

    /// The embedded facts are exactly what the pinned bundles' CRDs say: every bundle
    /// `kind-config/versions.yaml` pins (and no other), each extracted again from its module.
    /// `LAYOUT_GATE_BLESS=1` rewrites the file (after a bundle bump).
    #[test]
    fn the_schema_facts_are_the_pinned_bundles_own() {
        let pins = crate::versions::Pins::load_default().unwrap();
        let mut facts = Facts {
            made_by: "harness/src/case/api_schema.rs extract() from the sigs.k8s.io/gateway-api module of each bundle pinned in \
                      kind-config/versions.yaml (config/crd/experimental); LAYOUT_GATE_BLESS=1 cargo test --lib api_schema rewrites it"
                .into(),
            bundles: BTreeMap::new(),
        };
        for pin in &pins.cilium {
            let v = &pin.gateway_api.version;
            if !facts.bundles.contains_key(v) {
                let (dir, sum) = module(v);
                facts.bundles.insert(v.clone(), extract(&dir, v, &sum).unwrap());
            }
        }
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/src/case/gateway_api_schema.json");
        crate::golden::assert(&path, &(serde_json::to_string_pretty(&facts).unwrap() + "\n"));
        // What lint reads is that file.
        if !crate::golden::blessing() {
            assert_eq!(super::facts(), Ok(&facts));
        }
    }

    #[test]
    fn the_limits_the_issue_names_are_in_every_bundle() {
        let f = facts().unwrap();
        assert!(f.bundles.len() >= 2, "{:?}", f.bundles.keys());
        for (v, b) in &f.bundles {
            let gw = b.crds.iter().find(|c| c.kind == "Gateway").unwrap_or_else(|| panic!("{v}: no Gateway CRD"));
            let checks = &gw.versions["v1"];
            assert_eq!(checks["spec.listeners"].max_items, Some(64), "{v}");
            let re = regex_lite::Regex::new(checks["spec.listeners[].hostname"].pattern.as_deref().unwrap()).unwrap();
            for ok in ["*.example.test", "www.example.test", "a"] {
                assert!(re.is_match(ok), "{v}: {ok}");
            }
            for bad in ["*", "*.EXAMPLE.test", "WWW.x", "a..b", "-a.b", "a.*.b"] {
                assert!(!re.is_match(bad), "{v}: {bad}");
            }
            assert_eq!(f.scope("gateway.networking.k8s.io", "GatewayClass"), Some("Cluster"));
            assert_eq!(f.scope("gateway.networking.k8s.io", "HTTPRoute"), Some("Namespaced"));
        }
    }
}
