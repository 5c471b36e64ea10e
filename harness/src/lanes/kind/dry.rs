//! The dry-run driver: prints, in order, every command the run would execute, every file it
//! would write, every object it would apply and every wait, and executes nothing. Outputs a
//! later step reads are stand-ins (empty), and the text is stable: no times, no random names.

use std::path::Path;

use serde_json::Value;

use crate::case::{Applied, Case};
use crate::evidence::ProbeRecord;
use crate::lanes::cluster::driver::{Driver, Gvk, KubeTarget, ObjRef, ProbeTargets, Selection, StepError, WaitEnd, WaitSpec};
use crate::lanes::cluster::manifests::{SecretMaterial, to_yaml};
use crate::lanes::cluster::names::FIELD_MANAGER;
use crate::lanes::cluster::timeouts::{Wait, human};
use crate::lanes::cluster::tools::ToolCall;
use crate::lanes::cluster::track::Tracker;
use crate::run::Timeouts;
use crate::types::BackendName;

#[derive(Debug, Default)]
pub struct DryRun {
    pub out: String,
    /// Kinds answered as not served, so a test can follow the lane's path on a cluster without
    /// their CRDs; the dry run itself leaves it empty (it assumes every kind is served).
    pub unserved: Vec<Gvk>,
}

fn bound(w: Wait) -> String {
    format!("at most {} ({})", human(w.limit), w.var)
}

impl Driver for DryRun {
    fn dry(&self) -> bool {
        true
    }
    fn section(&mut self, title: &str) {
        self.out.push_str(&format!("\n## {title}\n"));
    }
    fn note(&mut self, text: &str) {
        for l in text.lines() {
            self.out.push_str(&format!("# {l}\n"));
        }
    }
    async fn tool(&mut self, call: &ToolCall) -> Result<String, StepError> {
        self.out.push_str(&format!("$ {call}\n  # {}\n", bound(call.wait)));
        Ok(String::new())
    }
    async fn write_file(&mut self, path: &Path, contents: &str) -> Result<(), StepError> {
        self.out.push_str(&format!("write {} (mode 0600):\n", path.display()));
        for l in contents.lines() {
            self.out.push_str(&format!("  | {l}\n"));
        }
        Ok(())
    }
    async fn connect(&mut self, target: &KubeTarget, wait: Wait) -> Result<(), StepError> {
        let file = target.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the default kubeconfig".into());
        self.out.push_str(&format!(
            "connect to the API server: context {} in {file}; wait until it answers, {}\n",
            target.context,
            bound(wait)
        ));
        Ok(())
    }
    async fn apply(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError> {
        let ns = default_namespace.map(|n| format!("; namespace {n} where none is given")).unwrap_or_default();
        self.out.push_str(&format!("apply (server-side, field manager {FIELD_MANAGER}, forced{ns}):\n"));
        self.out.push_str(&to_yaml(objects));
        Ok(())
    }
    async fn apply_file(&mut self, path: &Path) -> Result<Vec<ObjRef>, StepError> {
        self.out.push_str(&format!(
            "apply (server-side, field manager {FIELD_MANAGER}, forced) every object of {} (the downloaded bundle, not shown)\n",
            path.display()
        ));
        Ok(Vec::new())
    }
    async fn get(&mut self, r: &ObjRef) -> Result<Option<Value>, StepError> {
        self.out.push_str(&format!("get {r}\n"));
        Ok(None)
    }
    async fn list(&mut self, s: &Selection) -> Result<Vec<Value>, StepError> {
        self.out.push_str(&format!("list {s}\n"));
        Ok(Vec::new())
    }
    async fn wait(&mut self, spec: &WaitSpec, _tracker: &mut dyn Tracker) -> Result<WaitEnd, StepError> {
        let watches: Vec<String> = spec.watches.iter().map(|w| w.to_string()).collect();
        self.out.push_str(&format!("wait for {}, {}\n  watching: {}\n", spec.what, bound(spec.wait), watches.join("; ")));
        Ok(WaitEnd::Done)
    }
    async fn serves(&mut self, gvk: &Gvk) -> Result<bool, StepError> {
        self.out.push_str(&format!("ask the API server whether it serves {} {}\n", gvk.api_version, gvk.kind));
        Ok(!self.unserved.contains(gvk))
    }
    async fn delete(&mut self, r: &ObjRef) -> Result<bool, StepError> {
        self.out.push_str(&format!("delete {r} (foreground)\n"));
        Ok(true)
    }
    async fn exec(&mut self, pod: &ObjRef, container: &str, command: &[String], wait: Wait) -> Result<String, StepError> {
        self.out.push_str(&format!("exec in {pod}, container {container}: {}\n  # {}\n", command.join(" "), bound(wait)));
        Ok(String::new())
    }
    async fn logs(&mut self, pod: &ObjRef, container: Option<&str>, _since: Option<i64>) -> Result<String, StepError> {
        self.out.push_str(&format!("logs of {pod}{}\n", container.map(|c| format!(", container {c}")).unwrap_or_default()));
        Ok(String::new())
    }
    async fn probe(
        &mut self,
        applied: &Applied,
        targets: &ProbeTargets,
        _certs: &SecretMaterial<'_>,
        t: &Timeouts,
        _backends: &[BackendName],
    ) -> Vec<ProbeRecord> {
        for k in Case::probe_keys(applied) {
            let addr = match (targets.address(&k), &k.gateway) {
                (Some(a), _) => a.to_string(),
                (None, Some(g)) => format!("<Gateway {g} address>"),
                (None, None) => "<Gateway address>".into(),
            };
            let path = k.path.as_deref().unwrap_or("/");
            let line = if k.plain {
                let host = k.sni.as_ref().map(|s| format!(", Host {s}")).unwrap_or_default();
                format!("plain HTTP GET {path}{host} (backend named by the JSON field `pod`)")
            } else {
                let sni = k.sni.as_ref().map(|s| format!("SNI {s}")).unwrap_or_else(|| "no SNI".into());
                let http = if k.http { format!(", then GET {path} (backend named by the JSON field `pod`)") } else { String::new() };
                format!("TLS handshake, {sni}{http}")
            };
            self.out.push_str(&format!("probe {addr}:{}: {line}\n", k.port));
        }
        self.out.push_str(&format!(
            "  # each until {} consecutive observations agree, at most {} (LAYOUT_GATE_CONVERGE_TIMEOUT)\n",
            t.consecutive.value,
            human(t.converge.limit)
        ));
        Vec::new()
    }
}
