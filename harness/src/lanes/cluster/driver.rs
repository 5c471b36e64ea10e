//! What the lifecycle asks of the world, as one trait: run a tool, write a run file, talk to
//! the API server (apply, get, list, watch, exec, logs, delete), probe the Gateway. The live
//! driver does it; the dry-run driver prints it.

#![allow(async_fn_in_trait)] // used with concrete drivers only, never as `dyn`

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::Value;

use super::manifests::SecretMaterial;
use super::timeouts::Wait;
use super::tools::ToolCall;
use super::track::Tracker;
use crate::case::{Applied, ProbeKey};
use crate::evidence::ProbeRecord;
use crate::judge::Refused;
use crate::run::Timeouts;
use crate::types::BackendName;

/// An API group/version and kind, as written in manifests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    pub api_version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(api_version: &str, kind: &str) -> Self {
        Gvk { api_version: api_version.into(), kind: kind.into() }
    }
    /// The kind of a manifest object.
    pub fn of(v: &Value) -> Option<Gvk> {
        Some(Gvk::new(v.get("apiVersion")?.as_str()?, v.get("kind")?.as_str()?))
    }
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
    pub fn version(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(_, v)| v).unwrap_or(&self.api_version)
    }
}

/// One object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    pub gvk: Gvk,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjRef {
    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        ObjRef { gvk: Gvk::new(api_version, kind), namespace: namespace.map(str::to_string), name: name.into() }
    }
    pub fn of(v: &Value) -> Option<ObjRef> {
        Some(ObjRef {
            gvk: Gvk::of(v)?,
            namespace: v.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_string),
            name: v.pointer("/metadata/name")?.as_str()?.to_string(),
        })
    }
}

impl fmt::Display for ObjRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.gvk.kind, self.name),
            None => write!(f, "{} {}", self.gvk.kind, self.name),
        }
    }
}

/// A set of objects of one kind, to list or watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub gvk: Gvk,
    pub namespace: Option<String>,
    pub labels: Option<String>,
    pub fields: Option<String>,
}

impl Selection {
    pub fn all(api_version: &str, kind: &str, namespace: Option<&str>) -> Self {
        Selection { gvk: Gvk::new(api_version, kind), namespace: namespace.map(str::to_string), labels: None, fields: None }
    }
    pub fn named(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        Selection { fields: Some(format!("metadata.name={name}")), ..Selection::all(api_version, kind, namespace) }
    }
    pub fn labelled(api_version: &str, kind: &str, namespace: Option<&str>, labels: &str) -> Self {
        Selection { labels: Some(labels.into()), ..Selection::all(api_version, kind, namespace) }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.gvk.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(l) = &self.labels {
            write!(f, " with labels {l}")?;
        }
        if let Some(fs) = &self.fields {
            write!(f, " where {fs}")?;
        }
        Ok(())
    }
}

/// A watch-based wait: what it waits for, its named limit, and the objects it watches.
#[derive(Debug, Clone)]
pub struct WaitSpec {
    pub what: String,
    pub wait: Wait,
    pub watches: Vec<Selection>,
}

/// How a wait ended (errors talking to the API are [`StepError`]s instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitEnd {
    Done,
    TimedOut { last: String },
    Failed { reason: String, last: String },
}

/// Where the API server is: a kubeconfig file (the run's own for kind clusters; `None` means
/// the user's default, only with `--existing-cluster`) and the context to use in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeTarget {
    pub kubeconfig: Option<PathBuf>,
    pub context: String,
}

/// A step that could not be done, with what was being done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    pub action: String,
    pub message: String,
}

impl StepError {
    pub fn new(action: impl Into<String>, message: impl fmt::Display) -> Self {
        StepError { action: action.into(), message: message.to_string() }
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.action, self.message)
    }
}

impl std::error::Error for StepError {}

/// Where each probe goes: the address of the Gateway it names, the case's own when it names
/// none (each Gateway has its own Service `cilium-gateway-<name>`, so its own address).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeTargets {
    /// The case's Gateway.
    pub primary: String,
    pub addresses: BTreeMap<String, IpAddr>,
}

impl ProbeTargets {
    pub fn gateway_of<'a>(&'a self, k: &'a ProbeKey) -> &'a str {
        k.gateway.as_deref().unwrap_or(&self.primary)
    }
    pub fn address(&self, k: &ProbeKey) -> Option<IpAddr> {
        self.addresses.get(self.gateway_of(k)).copied()
    }
}

pub trait Driver {
    /// True for the dry run: nothing is executed, outputs are stand-ins.
    fn dry(&self) -> bool;
    /// A heading (phase) and a remark, for progress or the dry-run listing.
    fn section(&mut self, title: &str);
    fn note(&mut self, text: &str);

    /// Runs a tool; its stdout. A non-zero exit or the named wait running out is an error
    /// carrying the end of stderr.
    async fn tool(&mut self, call: &ToolCall) -> Result<String, StepError>;
    /// Writes a file of the run folder (kind config, Helm values).
    async fn write_file(&mut self, path: &std::path::Path, contents: &str) -> Result<(), StepError>;

    /// Connects to the API server, waiting up to `wait` for it to answer.
    async fn connect(&mut self, target: &KubeTarget, wait: Wait) -> Result<(), StepError>;
    /// Server-side applies each object in order (field manager `layout-gate`, forced).
    /// Objects without a namespace go to `default_namespace` when their kind is namespaced.
    async fn apply(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError>;
    /// [`Driver::apply`] for a case's own objects: one the API server refuses as invalid (HTTP
    /// 422) is returned, with the server's status, and the others are still applied; any other
    /// failure is an error. The dry run refuses nothing.
    async fn apply_admitting(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<Vec<Refused>, StepError> {
        self.apply(objects, default_namespace).await.map(|()| Vec::new())
    }
    /// Creates objects that do not exist yet and do not depend on one another (CRDs into a
    /// cluster made for the run): all at once where the driver can; as applies in order
    /// otherwise.
    async fn create_concurrently(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError> {
        self.apply(objects, default_namespace).await
    }
    /// Server-side applies every object of a YAML file of the run folder; what was applied.
    async fn apply_file(&mut self, path: &std::path::Path) -> Result<Vec<ObjRef>, StepError>;
    async fn get(&mut self, r: &ObjRef) -> Result<Option<Value>, StepError>;
    async fn list(&mut self, s: &Selection) -> Result<Vec<Value>, StepError>;
    /// Watches until the tracker is done or failed, or the wait's limit passes.
    async fn wait(&mut self, spec: &WaitSpec, tracker: &mut dyn Tracker) -> Result<WaitEnd, StepError>;
    /// Whether the API server serves this kind (its CRD is installed and established).
    async fn serves(&mut self, gvk: &Gvk) -> Result<bool, StepError>;
    /// Deletes an object (foreground); `Ok(false)` when it did not exist.
    async fn delete(&mut self, r: &ObjRef) -> Result<bool, StepError>;
    /// Runs a command in a container; its stdout.
    async fn exec(&mut self, pod: &ObjRef, container: &str, command: &[String], wait: Wait) -> Result<String, StepError>;
    /// A container's log, since `since_seconds` ago when given.
    async fn logs(&mut self, pod: &ObjRef, container: Option<&str>, since_seconds: Option<i64>) -> Result<String, StepError>;

    /// Probes every (Gateway, port, SNI) the expectations name at its Gateway's address.
    async fn probe(
        &mut self,
        applied: &Applied,
        targets: &ProbeTargets,
        certs: &SecretMaterial<'_>,
        timeouts: &Timeouts,
        backends: &[BackendName],
    ) -> Vec<ProbeRecord>;
}
