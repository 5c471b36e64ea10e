//! The API server through kube-rs: dynamic objects resolved by discovery, server-side apply,
//! watches feeding a tracker, exec into pods and logs. Every call is bounded by the API
//! request wait; watches by their own named wait.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, AttachParams, DeleteParams, DynamicObject, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::config::KubeConfigOptions;
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::runtime::watcher;
use kube::{Client, Config};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::judge::Refused;
use crate::lanes::cluster::driver::{Gvk, KubeTarget, ObjRef, Selection, StepError, WaitEnd, WaitSpec};
use crate::lanes::cluster::names::FIELD_MANAGER;
use crate::lanes::cluster::timeouts::{Wait, human};
use crate::lanes::cluster::track::{Event, Progress, Tracker};

/// Cheap to clone: the client is shared, each clone keeps its own discovery cache.
#[derive(Clone)]
pub struct Kube {
    client: Client,
    resources: HashMap<Gvk, (ApiResource, bool)>,
    request: Duration,
}

fn err(action: &str, e: impl std::fmt::Display) -> StepError {
    StepError::new(action, e)
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

impl Kube {
    /// Connects with exactly the context named (never the kubeconfig's current one), and waits
    /// for the API server to answer.
    pub async fn connect(target: &KubeTarget, wait: Wait, request: Duration) -> Result<Kube, StepError> {
        let action = format!("connecting to context {}", target.context);
        let kubeconfig = match &target.kubeconfig {
            Some(p) => super::kubeconfig::read(p).map_err(|e| err(&action, format!("reading the kubeconfig {e}")))?,
            None => super::kubeconfig::read_default().map_err(|e| err(&action, format!("reading the default kubeconfig {e}")))?,
        };
        if !kubeconfig.contexts.iter().any(|c| c.name == target.context) {
            let known: Vec<&str> = kubeconfig.contexts.iter().map(|c| c.name.as_str()).collect();
            return Err(err(&action, format!("no context {:?} in the kubeconfig (contexts: {})", target.context, known.join(", "))));
        }
        let options = KubeConfigOptions { context: Some(target.context.clone()), ..KubeConfigOptions::default() };
        let config = Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(|e| err(&action, e))?;
        let client = Client::try_from(config).map_err(|e| err(&action, e))?;
        let deadline = Instant::now() + wait.limit;
        let mut last;
        loop {
            match tokio::time::timeout(request, client.apiserver_version()).await {
                Ok(Ok(_)) => break,
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = format!("no answer within {}s", request.as_secs()),
            }
            if Instant::now() >= deadline {
                return Err(err(&action, format!("the API server did not answer within {} ({}): {last}", human(wait.limit), wait.var)));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok(Kube { client, resources: HashMap::new(), request })
    }

    /// The client itself, for a command that talks to the API server in ways the [`Driver`]
    /// does not (`status-writer`: a route's watch events and status writes with their
    /// resourceVersion; the operator lane's pod stand-in: kube's typed APIs), on the same
    /// connection and credentials.
    ///
    /// [`Driver`]: crate::lanes::cluster::driver::Driver
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    async fn bounded<T>(
        &self,
        action: &str,
        f: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<Result<T, kube::Error>, StepError> {
        tokio::time::timeout(self.request, f)
            .await
            .map_err(|_| err(action, format!("no answer within {}s (LAYOUT_GATE_API_REQUEST_TIMEOUT)", self.request.as_secs())))
    }

    /// The resource behind a kind, by discovery (cached), and whether it is namespaced.
    async fn resource(&mut self, gvk: &Gvk) -> Result<(ApiResource, bool), StepError> {
        if let Some(r) = self.resources.get(gvk) {
            return Ok(r.clone());
        }
        let action = format!("discovering {} {}", gvk.api_version, gvk.kind);
        let q = GroupVersionKind::gvk(gvk.group(), gvk.version(), &gvk.kind);
        let (ar, caps) = self.bounded(&action, kube::discovery::pinned_kind(&self.client, &q)).await?.map_err(|e| err(&action, e))?;
        let r = (ar, caps.scope == Scope::Namespaced);
        self.resources.insert(gvk.clone(), r.clone());
        Ok(r)
    }

    /// Whether the API server serves `gvk`: a kind it does not know (its CRD not installed, or
    /// a group version it does not serve at all) is `false`, not an error.
    pub async fn serves(&mut self, gvk: &Gvk) -> Result<bool, StepError> {
        if self.resources.contains_key(gvk) {
            return Ok(true);
        }
        let action = format!("discovering {} {}", gvk.api_version, gvk.kind);
        let q = GroupVersionKind::gvk(gvk.group(), gvk.version(), &gvk.kind);
        match self.bounded(&action, kube::discovery::pinned_kind(&self.client, &q)).await? {
            Ok((ar, caps)) => {
                self.resources.insert(gvk.clone(), (ar, caps.scope == Scope::Namespaced));
                Ok(true)
            }
            Err(kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(_))) => Ok(false),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(err(&action, e)),
        }
    }

    async fn api(&mut self, gvk: &Gvk, namespace: Option<&str>, action: &str) -> Result<(Api<DynamicObject>, ApiResource), StepError> {
        let (ar, namespaced) = self.resource(gvk).await?;
        let api = match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            (true, None) => Api::all_with(self.client.clone(), &ar),
            (false, _) => Api::all_with(self.client.clone(), &ar),
        };
        let _ = action;
        Ok((api, ar))
    }

    pub async fn apply(&mut self, obj: &Value, default_namespace: Option<&str>) -> Result<(), StepError> {
        let (api, name, action) = self.apply_target(obj, default_namespace).await?;
        self.patch_apply(&api, &name, &action, obj).await
    }

    /// [`Kube::apply`], but an object the API server refuses as invalid (HTTP 422, a CRD
    /// schema's `required` field missing) is an observation, not an error: it is returned with
    /// the server's own status. Anything else stays an error.
    pub async fn apply_admitting(&mut self, obj: &Value, default_namespace: Option<&str>) -> Result<Option<Refused>, StepError> {
        let (api, name, action) = self.apply_target(obj, default_namespace).await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        match self.bounded(&action, api.patch(&name, &params, &Patch::Apply(obj))).await? {
            Ok(_) => Ok(None),
            Err(kube::Error::Api(s)) if s.code == 422 => {
                let r = ObjRef::of(obj);
                Ok(Some(Refused {
                    kind: r.as_ref().map(|r| r.gvk.kind.clone()).unwrap_or_default(),
                    namespace: api.namespace().map(str::to_string).or_else(|| default_namespace.map(str::to_string)),
                    name,
                    code: s.code,
                    reason: s.reason.clone(),
                    message: s.message.clone(),
                }))
            }
            Err(e) => Err(err(&action, e)),
        }
    }

    /// Creates every object at once (POST, as cilium-operator creates its CRDs; each must not
    /// exist yet): for objects that do not depend on one another, in a cluster made for the run.
    /// Discovery goes first, in order (it is cached); the first error is returned after every
    /// request has ended.
    pub async fn create_concurrently(&mut self, objects: &[Value], default_namespace: Option<&str>) -> Result<(), StepError> {
        let mut targets = Vec::new();
        for o in objects {
            let (api, _, action) = self.apply_target(o, default_namespace).await?;
            let obj: DynamicObject = serde_json::from_value(o.clone()).map_err(|e| err(&action, e))?;
            targets.push((api, action.replacen("applying", "creating", 1), obj));
        }
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_string()), ..PostParams::default() };
        let results = futures::future::join_all(targets.iter().map(|(api, action, obj)| async {
            self.bounded(action, api.create(&params, obj)).await?.map(|_| ()).map_err(|e| err(action, e))
        }))
        .await;
        results.into_iter().collect()
    }

    async fn apply_target(
        &mut self,
        obj: &Value,
        default_namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, String, String), StepError> {
        let r = ObjRef::of(obj).ok_or_else(|| err("apply", format!("object without apiVersion, kind or metadata.name: {}", short(obj))))?;
        let action = format!("applying {r}");
        let (_, namespaced) = self.resource(&r.gvk).await?;
        let ns = match (namespaced, r.namespace.as_deref(), default_namespace) {
            (true, Some(ns), _) | (true, None, Some(ns)) => Some(ns.to_string()),
            (true, None, None) => return Err(err(&action, "a namespaced object without a namespace")),
            (false, _, _) => None,
        };
        let (api, _) = self.api(&r.gvk, ns.as_deref(), &action).await?;
        Ok((api, r.name, action))
    }

    async fn patch_apply(&self, api: &Api<DynamicObject>, name: &str, action: &str, obj: &Value) -> Result<(), StepError> {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.bounded(action, api.patch(name, &params, &Patch::Apply(obj))).await?.map_err(|e| err(action, e))?;
        Ok(())
    }

    pub async fn get(&mut self, r: &ObjRef) -> Result<Option<Value>, StepError> {
        let action = format!("reading {r}");
        let (api, ar) = match self.api(&r.gvk, r.namespace.as_deref(), &action).await {
            Ok(x) => x,
            // A kind the server does not know (CRD not installed) has no objects.
            Err(e) if ["404", "not found", "Missing"].iter().any(|m| e.message.contains(m)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let o = self.bounded(&action, api.get_opt(&r.name)).await?.map_err(|e| err(&action, e))?;
        Ok(o.map(|o| value_of(&o, &ar)))
    }

    pub async fn list(&mut self, s: &Selection) -> Result<Vec<Value>, StepError> {
        let action = format!("listing {s}");
        let (api, ar) = self.api(&s.gvk, s.namespace.as_deref(), &action).await?;
        let mut lp = ListParams::default();
        if let Some(l) = &s.labels {
            lp = lp.labels(l);
        }
        if let Some(f) = &s.fields {
            lp = lp.fields(f);
        }
        let list = self.bounded(&action, api.list(&lp)).await?.map_err(|e| err(&action, e))?;
        Ok(list.items.iter().map(|o| value_of(o, &ar)).collect())
    }

    pub async fn delete(&mut self, r: &ObjRef) -> Result<bool, StepError> {
        let action = format!("deleting {r}");
        let (api, _) = self.api(&r.gvk, r.namespace.as_deref(), &action).await?;
        match self.bounded(&action, api.delete(&r.name, &DeleteParams::foreground())).await? {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(err(&action, e)),
        }
    }

    /// Watches every selection, feeding each event to the tracker, until it is done or failed
    /// or the wait runs out. Watch errors are retried (the watcher re-lists); the last one is
    /// reported if nothing was ever seen.
    pub async fn wait(&mut self, spec: &WaitSpec, tracker: &mut dyn Tracker) -> Result<WaitEnd, StepError> {
        let action = format!("waiting for {}", spec.what);
        let mut streams = Vec::new();
        for s in &spec.watches {
            let (api, ar) = self.api(&s.gvk, s.namespace.as_deref(), &action).await?;
            let mut cfg = watcher::Config::default();
            if let Some(l) = &s.labels {
                cfg = cfg.labels(l);
            }
            if let Some(f) = &s.fields {
                cfg = cfg.fields(f);
            }
            let stream = watcher(api, cfg).map(move |ev| match ev {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Ok((true, Some(value_of(&o, &ar)))),
                Ok(watcher::Event::Delete(o)) => Ok((false, Some(value_of(&o, &ar)))),
                Ok(watcher::Event::InitDone) => Ok((true, None)),
                Ok(watcher::Event::Init) => Ok((false, None)),
                Err(e) => Err(e.to_string()),
            });
            streams.push(stream.boxed());
        }
        let mut merged = futures::stream::select_all(streams);
        let started = Instant::now();
        let deadline = started + spec.wait.limit;
        let mut last_error = None;
        loop {
            let now = started.elapsed();
            match tracker.progress(now) {
                Progress::Done => return Ok(WaitEnd::Done),
                Progress::Failed(reason) => return Ok(WaitEnd::Failed { reason, last: tracker.last_state() }),
                Progress::Waiting => {}
            }
            if Instant::now() >= deadline {
                let mut last = tracker.last_state();
                if let Some(e) = &last_error {
                    last.push_str(&format!("\nlast watch error: {e}"));
                }
                return Ok(WaitEnd::TimedOut { last });
            }
            // Wake at least twice a second: settle windows pass without events.
            let tick = (Instant::now() + Duration::from_millis(500)).min(deadline);
            match tokio::time::timeout_at(tick, merged.next()).await {
                Ok(Some(Ok((true, Some(v))))) => tracker.observe(started.elapsed(), Event::Applied(&v)),
                Ok(Some(Ok((false, Some(v))))) => tracker.observe(started.elapsed(), Event::Deleted(&v)),
                Ok(Some(Ok((true, None)))) => tracker.observe(started.elapsed(), Event::Listed),
                Ok(Some(Ok((false, None)))) => {}
                Ok(Some(Err(e))) => {
                    last_error = Some(e);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Ok(None) => return Err(err(&action, "the watch ended")),
                Err(_) => {}
            }
        }
    }

    pub async fn exec(&mut self, pod: &ObjRef, container: &str, command: &[String], wait: Wait) -> Result<String, StepError> {
        let action = format!("exec `{}` in {pod}", command.join(" "));
        let ns = pod.namespace.as_deref().unwrap_or("default");
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(self.client.clone(), ns);
        let run = async {
            let ap = AttachParams::default().container(container).stdin(false).stdout(true).stderr(true);
            let mut proc = pods.exec(&pod.name, command.to_vec(), &ap).await.map_err(|e| err(&action, e))?;
            let mut out = proc.stdout().ok_or_else(|| err(&action, "no stdout"))?;
            let mut errs = proc.stderr().ok_or_else(|| err(&action, "no stderr"))?;
            let status = proc.take_status();
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            let (a, b) = tokio::join!(out.read_to_end(&mut stdout), errs.read_to_end(&mut stderr));
            a.map_err(|e| err(&action, e))?;
            b.map_err(|e| err(&action, e))?;
            let status = match status {
                Some(s) => s.await,
                None => None,
            };
            let _ = proc.join().await;
            if let Some(s) = status
                && s.status.as_deref() == Some("Failure")
            {
                return Err(err(&action, format!("{}{}", s.message.unwrap_or_default(), tail_text(&stderr))));
            }
            Ok(String::from_utf8_lossy(&stdout).into_owned())
        };
        tokio::time::timeout(wait.limit, run)
            .await
            .map_err(|_| err(&action, format!("no result within {} ({})", human(wait.limit), wait.var)))?
    }

    pub async fn logs(&mut self, pod: &ObjRef, container: Option<&str>, since: Option<i64>) -> Result<String, StepError> {
        let action = format!("reading the log of {pod}");
        let ns = pod.namespace.as_deref().unwrap_or("default");
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(self.client.clone(), ns);
        let lp = LogParams {
            container: container.map(str::to_string),
            since_seconds: since,
            tail_lines: Some(5000),
            timestamps: true,
            ..LogParams::default()
        };
        self.bounded(&action, pods.logs(&pod.name, &lp)).await?.map_err(|e| err(&action, e))
    }
}

fn tail_text(stderr: &[u8]) -> String {
    let t = super::process::tail(&String::from_utf8_lossy(stderr), 5);
    if t.is_empty() { String::new() } else { format!(": {t}") }
}

/// An object as JSON, with apiVersion and kind filled in (list items come without them).
fn value_of(o: &DynamicObject, ar: &ApiResource) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
        m.insert("kind".into(), Value::String(ar.kind.clone()));
    }
    v
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 200 { format!("{}...", &s[..s.char_indices().nth(200).map(|(i, _)| i).unwrap_or(s.len())]) } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warm plane's kubeconfig is whatever path its state file names: a FIFO there is refused
    /// at once, by name (kube's own reader blocked on it forever), and so is `/dev/zero` (read
    /// until the kernel killed the process).
    #[test]
    fn a_kubeconfig_that_is_no_regular_file_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("admin.kubeconfig");
        crate::output::dest::testing::fifo(&fifo);
        let zero = d.path().join("zero.kubeconfig");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let wait = Wait { name: "api server", var: "X", limit: Duration::from_secs(1) };
        for (path, kind) in [(fifo, "a FIFO"), (zero, "a character device")] {
            let target = KubeTarget { kubeconfig: Some(path.clone()), context: "layout-gate".into() };
            // Run on a thread of its own: a blocked open would never yield to a timeout here.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let _ = tx.send(rt.block_on(Kube::connect(&target, wait, Duration::from_secs(1))).err());
            });
            let e = rx.recv_timeout(Duration::from_secs(10)).expect("reading the kubeconfig did not end").expect("it connected");
            let s = e.to_string();
            assert!(s.contains(&format!("{}: path: {kind}, not a regular file", path.display())), "{s}");
        }
    }
}
