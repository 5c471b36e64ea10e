//! Cilium's own CRDs, installed before its operator starts, exactly as the operator would create
//! them, so that it finds them present and up to date instead of creating them one after
//! another (about 1 s each: cilium@v1.19.6 `pkg/k8s/apis/crdhelpers/register.go`
//! `CreateUpdateCRD` creates, then `waitForV1CRD` polls with `wait.Poll(500ms, ...)`, whose first
//! look comes after one interval; a CRD found up to date costs only that wait).
//!
//! Everything is read from the Cilium module at the tag, never copied into the repository:
//!
//! * which CRDs the operator registers for the rendered `cilium-config`: the rule of
//!   `pkg/k8s/synced/crd.go` `AllCiliumCRDResourceNames` (with `agentCRDResourceNames` and
//!   `GatewayAPIResourceNames`), mirrored by [`registered`]. The rule holds for the file it was
//!   read from ([`SELECTION_SOURCE_SHA256`]); at a tag whose file differs nothing is
//!   pre-installed and the operator creates its CRDs itself;
//! * each CRD's body: the YAML files the operator embeds (`pkg/k8s/apis/cilium.io/client/crds/
//!   v2`, `crds/v2alpha1`, `client/register.go` `GetPregeneratedCRD`), shaped as
//!   `client/register.go` `constructV1CRD` shapes them (only the name, the names, scope,
//!   versions and conversion are kept);
//! * the schema-version label the operator compares (`crdhelpers` `NeedsUpdateV1Factory`): key
//!   and value are the constants `CustomResourceDefinitionSchemaVersionKey` and
//!   `CustomResourceDefinitionSchemaVersion` of `pkg/k8s/apis/cilium.io/register.go`. When they
//!   cannot be read, nothing is pre-installed (never a guessed label: a CRD labelled lower than
//!   the operator's version is rewritten by it).
//!
//! After the operator is up, its log says what it did with each ([`read_log`], [`check`]): a
//! pre-installed CRD it updated (its label was wrong) or never registered (the selection was
//! wrong) fails the bring-up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::chart::Rendered;

/// sha256 of `pkg/k8s/synced/crd.go` at cilium v1.19.6 (the same at v1.19.5 and v1.19.7), the
/// file [`registered`] mirrors.
pub const SELECTION_SOURCE_SHA256: &str = "13041889d10a7859fc9c3fb3710f1305780af924fb117d5eae61282584d8d623";
/// The selection's source, inside the module.
pub const SELECTION_SOURCE: &str = "pkg/k8s/synced/crd.go";
/// The label's source, inside the module.
pub const LABEL_SOURCE: &str = "pkg/k8s/apis/cilium.io/register.go";
/// The CRD files' folders, inside the module.
pub const CRD_FOLDERS: &[&str] = &["pkg/k8s/apis/cilium.io/client/crds/v2", "pkg/k8s/apis/cilium.io/client/crds/v2alpha1"];

/// The schema-version label the operator writes and compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaLabel {
    pub key: String,
    pub value: String,
}

/// What the lane does about Cilium's CRDs.
#[derive(Debug, Clone, PartialEq)]
pub enum Preinstall {
    /// These objects, created before the operator starts.
    Objects { objects: Vec<Value>, names: Vec<String>, label: SchemaLabel },
    /// Nothing: the operator creates them itself, for this reason.
    LeftToOperator(String),
}

impl Preinstall {
    pub fn names(&self) -> &[String] {
        match self {
            Preinstall::Objects { names, .. } => names,
            Preinstall::LeftToOperator(_) => &[],
        }
    }
}

/// Why Cilium's CRDs cannot be pre-installed as its operator would have them, or why the
/// operator's log says the pre-installed ones were not its own: the file and what it lacks.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("{}: not the chart folder of a Cilium module (<module>/install/kubernetes/cilium)", .0.display())]
    NotChartFolder(PathBuf),
    #[error("{file}: no constant {constant}")]
    NoConstant { file: String, constant: &'static str },
    #[error("{file}: CustomResourceDefinitionSchemaVersionKey is empty")]
    EmptyKey { file: String },
    #[error("{file}: CustomResourceDefinitionSchemaVersion {value:?} is not a version: {source}")]
    NotAVersion { file: String, value: String, source: semver::Error },
    #[error("{}: {source}", .dir.display())]
    Folder { dir: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("{}: not valid YAML: {source}", .file.display())]
    Yaml { file: PathBuf, source: Box<serde_saphyr::Error> },
    #[error("{}: a CustomResourceDefinition without metadata.name", .0.display())]
    Unnamed(PathBuf),
    #[error("{} (sha256 {digest}) is not the file the lane's selection mirrors (cilium v1.19.6, sha256 {SELECTION_SOURCE_SHA256})", .file.display())]
    SelectionChanged { file: PathBuf, digest: String },
    #[error("no file of {} defines {name}", CRD_FOLDERS.join(", "))]
    Undefined { name: String },
    #[error(
        "cilium-operator updated pre-installed CRDs {0:?}: their schema-version label was not the one it compares (the lane's reading of {LABEL_SOURCE} is wrong)"
    )]
    Updated(Vec<String>),
    #[error(
        "pre-installed CRDs {0:?} were never registered by cilium-operator (its log has no \"installed and up-to-date\" for them): the cluster holds CRDs the operator would not have created (the lane's reading of {SELECTION_SOURCE} is wrong)"
    )]
    Unregistered(Vec<String>),
}

/// The Cilium module's folder from the chart folder the operator's build names
/// (`<module>/install/kubernetes/cilium`).
pub fn module_root(chart_dir: &Path) -> Result<PathBuf, CrdError> {
    chart_dir
        .ends_with("install/kubernetes/cilium")
        .then(|| chart_dir.ancestors().nth(3))
        .flatten()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .ok_or_else(|| CrdError::NotChartFolder(chart_dir.to_path_buf()))
}

/// A Go string constant `name = "value"` of a source text.
fn go_string_const(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(name)?.trim_start().strip_prefix('=')?.trim();
        let inner = rest.strip_prefix('"')?;
        let end = inner.find('"')?;
        Some(inner[..end].to_string())
    })
}

/// Reads the label from the text of `pkg/k8s/apis/cilium.io/register.go`; `file` names it in
/// errors. The value must be a version, as `versioncheck.MustVersion` requires.
pub fn schema_label(text: &str, file: &str) -> Result<SchemaLabel, CrdError> {
    let constant =
        |name: &'static str| go_string_const(text, name).ok_or_else(|| CrdError::NoConstant { file: file.into(), constant: name });
    let key = constant("CustomResourceDefinitionSchemaVersionKey")?;
    let value = constant("CustomResourceDefinitionSchemaVersion")?;
    if key.is_empty() {
        return Err(CrdError::EmptyKey { file: file.into() });
    }
    if let Err(source) = semver::Version::parse(&value) {
        return Err(CrdError::NotAVersion { file: file.into(), value, source });
    }
    Ok(SchemaLabel { key, value })
}

/// A boolean option as the operator reads it from its config folder (viper `GetBool`, Go's
/// `strconv.ParseBool`); `None` when the lane cannot say what the operator makes of it.
fn option(rendered: &Rendered, key: &str, default: bool) -> Option<bool> {
    // A flag or environment variable of the Deployment overrides the config folder; none of the
    // options below is set that way by the chart, and if one ever is, the lane does not guess.
    let env = format!("CILIUM_{}", key.replace('-', "_").to_uppercase());
    if rendered.args.iter().any(|a| a == &format!("--{key}") || a.starts_with(&format!("--{key}=")))
        || rendered.env.iter().any(|(k, _)| k == &env)
    {
        return None;
    }
    match rendered.config.get(key).map(String::as_str) {
        None => Some(default),
        Some("1" | "t" | "T" | "TRUE" | "true" | "True") => Some(true),
        Some("0" | "f" | "F" | "FALSE" | "false" | "False") => Some(false),
        Some(_) => None,
    }
}

/// The CRDs cilium-operator registers for `rendered`, by name, in its order: the rule of
/// cilium@v1.19.6 `pkg/k8s/synced/crd.go` `AllCiliumCRDResourceNames`, with the option defaults
/// of `operator/cmd/flags.go` and `pkg/option/config.go` `Populate` at the tag. Where the
/// operator would decide from more than the option (a forced value), or the option is not a
/// boolean, the CRD is left out: the operator then creates it itself, which costs time, never
/// correctness. Each entry names the option that put it there.
pub fn registered(rendered: &Rendered) -> Vec<(&'static str, &'static str)> {
    let on = |key: &str, default: bool| option(rendered, key, default) == Some(true);
    let off = |key: &str, default: bool| option(rendered, key, default) == Some(false);
    let mut out: Vec<(&'static str, &'static str)> =
        vec![("ciliumidentities.cilium.io", "always"), ("ciliumpodippools.cilium.io", "always")];
    // `disable-endpoint-crd` (default false, operator/cmd/flags.go); when true, `Populate` may
    // force it back to false (no kvstore and a policy enabled): not guessed.
    if off("disable-endpoint-crd", false) {
        out.push(("ciliumendpoints.cilium.io", "disable-endpoint-crd=false"));
        if on("enable-cilium-endpoint-slice", false) {
            out.push(("ciliumendpointslices.cilium.io", "enable-cilium-endpoint-slice=true"));
        }
    }
    // `enable-ciliumnode-crd` (default true); when false, `PopulateEnableCiliumNodeCRD` may force
    // it back to true: not guessed.
    if on("enable-ciliumnode-crd", true) {
        out.push(("ciliumnodes.cilium.io", "enable-ciliumnode-crd=true"));
    }
    let cnp = option(rendered, "enable-cilium-network-policy", true);
    let ccnp = option(rendered, "enable-cilium-clusterwide-network-policy", true);
    if cnp == Some(true) {
        out.push(("ciliumnetworkpolicies.cilium.io", "enable-cilium-network-policy=true"));
    }
    if ccnp == Some(true) {
        out.push(("ciliumclusterwidenetworkpolicies.cilium.io", "enable-cilium-clusterwide-network-policy=true"));
    }
    if cnp == Some(true) || ccnp == Some(true) {
        out.push(("ciliumcidrgroups.cilium.io", "a Cilium network policy kind enabled"));
    }
    if on("enable-egress-gateway", false) {
        out.push(("ciliumegressgatewaypolicies.cilium.io", "enable-egress-gateway=true"));
    }
    if on("enable-local-redirect-policy", false) {
        out.push(("ciliumlocalredirectpolicies.cilium.io", "enable-local-redirect-policy=true"));
    }
    if on("enable-envoy-config", false) {
        out.push(("ciliumclusterwideenvoyconfigs.cilium.io", "enable-envoy-config=true"));
        out.push(("ciliumenvoyconfigs.cilium.io", "enable-envoy-config=true"));
    }
    if on("enable-bgp-control-plane", false) {
        for n in [
            "ciliumbgpclusterconfigs.cilium.io",
            "ciliumbgpadvertisements.cilium.io",
            "ciliumbgppeerconfigs.cilium.io",
            "ciliumbgpnodeconfigs.cilium.io",
            "ciliumbgpnodeconfigoverrides.cilium.io",
        ] {
            out.push((n, "enable-bgp-control-plane=true"));
        }
    }
    out.push(("ciliumloadbalancerippools.cilium.io", "always"));
    out.push(("ciliuml2announcementpolicies.cilium.io", "always"));
    // `GatewayAPIResourceNames`: operator/option/config.go `enable-gateway-api`.
    if on("enable-gateway-api", false) {
        out.push(("ciliumgatewayclassconfigs.cilium.io", "enable-gateway-api=true"));
    }
    out.push(("ciliumnodeconfigs.cilium.io", "always"));
    out
}

/// The object the operator would create from a CRD file's object `template`: cilium@v1.19.6
/// `pkg/k8s/apis/cilium.io/client/register.go` `constructV1CRD` (name, the schema label, group
/// `cilium.io`, kind/plural/shortNames/singular/categories, scope, versions, conversion).
pub fn construct(name: &str, template: &Value, label: &SchemaLabel) -> Value {
    let spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let mut names = Map::new();
    for k in ["kind", "plural", "shortNames", "singular", "categories"] {
        if let Some(v) = spec.pointer(&format!("/names/{k}")).filter(|v| !v.is_null()) {
            names.insert(k.to_string(), v.clone());
        }
    }
    let mut s = Map::new();
    s.insert("group".into(), json!("cilium.io"));
    s.insert("names".into(), Value::Object(names));
    for k in ["scope", "versions", "conversion"] {
        if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
            s.insert(k.to_string(), v.clone());
        }
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": name, "labels": { label.key.clone(): label.value.clone() } },
        "spec": Value::Object(s),
    })
}

/// Every CRD file of the module's CRD folders, by the CRD's name.
fn crd_files(module: &Path) -> Result<BTreeMap<String, (PathBuf, Value)>, CrdError> {
    let mut out = BTreeMap::new();
    for folder in CRD_FOLDERS {
        let dir = module.join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| CrdError::Folder { dir: dir.clone(), source })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for f in files {
            let text = crate::input::read_text(&f, crate::input::MANIFEST)?;
            let docs: Vec<Value> =
                serde_saphyr::from_multiple(&text).map_err(|e| CrdError::Yaml { file: f.clone(), source: Box::new(e) })?;
            for d in docs.into_iter().filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")) {
                let name = d.pointer("/metadata/name").and_then(Value::as_str).ok_or_else(|| CrdError::Unnamed(f.clone()))?.to_string();
                out.insert(name, (f.clone(), d));
            }
        }
    }
    Ok(out)
}

/// What to pre-install for `rendered` from the module at `module`: the objects, or why nothing.
pub fn plan(module: &Path, rendered: &Rendered) -> Preinstall {
    match objects(module, rendered) {
        Ok(p) => p,
        Err(why) => Preinstall::LeftToOperator(why.to_string()),
    }
}

fn objects(module: &Path, rendered: &Rendered) -> Result<Preinstall, CrdError> {
    let selection = module.join(SELECTION_SOURCE);
    let bytes = crate::input::read_bytes(&selection, crate::input::MANIFEST)?;
    let digest = crate::types::sha256_hex(&bytes);
    if digest != SELECTION_SOURCE_SHA256 {
        return Err(CrdError::SelectionChanged { file: selection, digest });
    }
    let label_file = module.join(LABEL_SOURCE);
    let text = crate::input::read_text(&label_file, crate::input::MANIFEST)?;
    let label = schema_label(&text, &label_file.display().to_string())?;
    let files = crd_files(module)?;
    let mut objects = Vec::new();
    let mut names = Vec::new();
    for (name, _) in registered(rendered) {
        let (_, template) = files.get(name).ok_or_else(|| CrdError::Undefined { name: name.to_string() })?;
        objects.push(construct(name, template, &label));
        names.push(name.to_string());
    }
    Ok(Preinstall::Objects { objects, names, label })
}

/// What the operator's log says it did with each CRD (cilium@v1.19.6
/// `pkg/k8s/apis/crdhelpers/register.go`: "Creating CRD (CustomResourceDefinition)...",
/// "Updating CRD (CustomResourceDefinition)...", "CRD (CustomResourceDefinition) is installed and
/// up-to-date", each with the field `name=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogReport {
    pub created: BTreeSet<String>,
    pub updated: BTreeSet<String>,
    pub up_to_date: BTreeSet<String>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    let v = match rest.strip_prefix('"') {
        Some(q) => &q[..q.find('"').unwrap_or(q.len())],
        None => rest.split_whitespace().next().unwrap_or(""),
    };
    Some(v)
}

/// Reads the operator's log text.
pub fn read_log(text: &str) -> LogReport {
    let mut r = LogReport::default();
    for line in text.lines() {
        let Some(name) = field(line, "name") else { continue };
        let set = if line.contains("msg=\"Creating CRD (CustomResourceDefinition)...\"") {
            &mut r.created
        } else if line.contains("msg=\"Updating CRD (CustomResourceDefinition)...\"") {
            &mut r.updated
        } else if line.contains("msg=\"CRD (CustomResourceDefinition) is installed and up-to-date\"") {
            &mut r.up_to_date
        } else {
            continue;
        };
        set.insert(name.to_string());
    }
    r
}

/// Whether the operator left the pre-installed CRDs as they were: an error when it updated one
/// (its label or value was not the operator's) or never registered one (the selection put in a
/// CRD the operator would not have created); otherwise a line for the evidence.
pub fn check(preinstalled: &[String], log: &LogReport) -> Result<String, CrdError> {
    let pre: BTreeSet<String> = preinstalled.iter().cloned().collect();
    let updated: Vec<String> = log.updated.intersection(&pre).cloned().collect();
    if !updated.is_empty() {
        return Err(CrdError::Updated(updated));
    }
    let unregistered: Vec<String> = pre.iter().filter(|n| !log.up_to_date.contains(*n) && !log.created.contains(*n)).cloned().collect();
    if !unregistered.is_empty() {
        return Err(CrdError::Unregistered(unregistered));
    }
    let created_by_operator: Vec<&String> = log.created.iter().filter(|n| !pre.contains(*n)).collect();
    let mut line = if pre.is_empty() {
        "none pre-installed".to_string()
    } else {
        format!("{} pre-installed; cilium-operator found each present and up to date (updated none)", pre.len())
    };
    if !created_by_operator.is_empty() {
        line.push_str(&format!(
            "; it created {} itself: {}",
            created_by_operator.len(),
            created_by_operator.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(line)
}

#[cfg(test)]
mod tests;
