//! The live driver: tools through duct ([`process`]), the API server through kube-rs
//! ([`kube_api`]), with its kubeconfig read bounded ([`kubeconfig`]), probes through the
//! shared probe stage.

pub mod kube_api;
pub mod kubeconfig;
pub mod process;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::judge::Refused;
use serde_json::Value;

use super::driver::{Driver, Gvk, KubeTarget, ObjRef, ProbeTargets, Selection, StepError, WaitEnd, WaitSpec};
use super::manifests::{SecretMaterial, backend_of_pod};
use super::progress::Progress;
use super::timeouts::{ClusterTimeouts, Wait, human};
use super::tools::ToolCall;
use super::track::Tracker;
use crate::case::Applied;
use crate::evidence::ProbeRecord;
use crate::observe::probe::{BACKEND_HEADER, ServedBy};
use crate::run::{self, ServedByRules, Timeouts};
use crate::types::BackendName;

pub struct LiveDriver {
    progress: Progress,
    kube: Option<kube_api::Kube>,
    timeouts: ClusterTimeouts,
}

impl LiveDriver {
    pub fn new(progress: Progress, timeouts: ClusterTimeouts) -> Self {
        LiveDriver { progress, kube: None, timeouts }
    }
    /// A driver on the same connection and display, for a case run beside others on the same
    /// cluster (the operator lane's batches): each case its own `&mut` driver.
    pub fn fork(&self) -> LiveDriver {
        LiveDriver { progress: self.progress.clone(), kube: self.kube.clone(), timeouts: self.timeouts }
    }
    pub fn connected(&self) -> bool {
        self.kube.is_some()
    }
    /// The display it writes to, for a lane's own messages.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }
    /// The API server's client once connected (see [`kube_api::Kube::client`]).
    pub fn client(&self) -> Option<kube::Client> {
        self.kube.as_ref().map(kube_api::Kube::client)
    }
    fn kube(&mut self, action: &str) -> Result<&mut kube_api::Kube, StepError> {
        self.kube.as_mut().ok_or_else(|| StepError::new(action, "not connected to a cluster yet"))
    }
}

impl Driver for LiveDriver {
    fn dry(&self) -> bool {
        false
    }
    fn section(&mut self, title: &str) {
        self.progress.line(&format!("== {title}"));
    }
    fn note(&mut self, text: &str) {
        self.progress.line(text);
    }
    async fn tool(&mut self, call: &ToolCall) -> Result<String, StepError> {
        self.progress.line(&format!("$ {call}"));
        process::run(call).await.map_err(|e| StepError::new(call.program_line(), e))
    }
    async fn write_file(&mut self, path: &Path, contents: &str) -> Result<(), StepError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let action = format!("writing {}", path.display());
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| StepError::new(&action, e))?;
        f.write_all(contents.as_bytes()).map_err(|e| StepError::new(&action, e))
    }
    async fn connect(&mut self, target: &KubeTarget, wait: Wait) -> Result<(), StepError> {
        self.progress.line(&format!("connecting to {}", target.context));
        self.kube = Some(kube_api::Kube::connect(target, wait, self.timeouts.api_request.limit).await?);
        Ok(())
    }
    async fn apply(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError> {
        let k = self.kube("apply")?;
        for o in objects {
            k.apply(o, default_namespace).await?;
        }
        Ok(())
    }
    async fn create_concurrently(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError> {
        self.kube("create")?.create_concurrently(objects, default_namespace).await
    }
    async fn apply_admitting(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<Vec<Refused>, StepError> {
        let k = self.kube("apply")?;
        let mut refused = Vec::new();
        for o in objects {
            refused.extend(k.apply_admitting(o, default_namespace).await?);
        }
        Ok(refused)
    }
    async fn apply_file(&mut self, path: &Path) -> Result<Vec<ObjRef>, StepError> {
        let action = format!("applying {}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| StepError::new(&action, e))?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| StepError::new(&action, format!("not valid YAML: {e}")))?;
        let k = self.kube(&action)?;
        let mut out = Vec::new();
        for d in docs.into_iter().filter(|d| d.is_object()) {
            k.apply(&d, None).await?;
            if let Some(r) = ObjRef::of(&d) {
                out.push(r);
            }
        }
        Ok(out)
    }
    async fn get(&mut self, r: &ObjRef) -> Result<Option<Value>, StepError> {
        self.kube("get")?.get(r).await
    }
    async fn list(&mut self, s: &Selection) -> Result<Vec<Value>, StepError> {
        self.kube("list")?.list(s).await
    }
    async fn wait(&mut self, spec: &WaitSpec, tracker: &mut dyn Tracker) -> Result<WaitEnd, StepError> {
        self.progress.line(&format!("waiting for {} (at most {})", spec.what, human(spec.wait.limit)));
        self.kube("wait")?.wait(spec, tracker).await
    }
    async fn serves(&mut self, gvk: &Gvk) -> Result<bool, StepError> {
        self.kube("discovery")?.serves(gvk).await
    }
    async fn delete(&mut self, r: &ObjRef) -> Result<bool, StepError> {
        self.progress.line(&format!("deleting {r}"));
        self.kube("delete")?.delete(r).await
    }
    async fn exec(&mut self, pod: &ObjRef, container: &str, command: &[String], wait: Wait) -> Result<String, StepError> {
        self.kube("exec")?.exec(pod, container, command, wait).await
    }
    async fn logs(&mut self, pod: &ObjRef, container: Option<&str>, since: Option<i64>) -> Result<String, StepError> {
        self.kube("logs")?.logs(pod, container, since).await
    }
    async fn probe(
        &mut self,
        applied: &Applied,
        targets: &ProbeTargets,
        certs: &SecretMaterial<'_>,
        t: &Timeouts,
        backends: &[BackendName],
    ) -> Vec<ProbeRecord> {
        let SecretMaterial::Issued(certs) = certs else {
            return Vec::new();
        };
        let shown: Vec<String> =
            targets.addresses.iter().map(|(g, a)| if targets.addresses.len() == 1 { a.to_string() } else { format!("{g} {a}") }).collect();
        self.progress.line(&format!("probing {}", if shown.is_empty() { "(no address)".to_string() } else { shown.join(", ") }));
        let names = backends.to_vec();
        // echo-basic names its pod in the JSON field `pod`; pods are <backend>-<hash>-<hash>.
        let rules = ServedByRules {
            rules: vec![ServedBy::JsonField("pod".into()), ServedBy::Header(BACKEND_HEADER.into())],
            backend_of: Arc::new(move |pod: &str| backend_of_pod(pod, &names).map(|b| b.to_string())),
        };
        run::probe_keys_with(applied, &|k| targets.address(k).map(|a| SocketAddr::new(a, k.port.get())), certs, t, Some(&rules)).await
    }
}
