//! Cleanup in reverse order of creation (chainsaw style): every namespace and the cluster are
//! registered when they are created, so an error, a timeout or Ctrl-C mid-run still leaves
//! nothing behind that the user did not ask to keep.
//!
//! Only a [`CreatedCluster`] can be deleted, and only the lifecycle makes one, right before it
//! runs `kind create cluster` for a name it has just seen absent: a cluster the harness did not
//! create is never deleted.

use super::driver::{Driver, ObjRef, Selection, WaitSpec};
use super::failure::TeardownReport;
use super::names::ClusterName;
use super::timeouts::{ClusterTimeouts, Wait};
use super::tools::{self, Engine, RunPaths};
use super::track::Gone;

/// A cluster this run created (or was about to create).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedCluster {
    name: ClusterName,
    engine: Engine,
    paths: RunPaths,
    wait: Wait,
}

impl CreatedCluster {
    /// Only the lifecycle calls this, after seeing that no cluster of this name existed.
    pub(crate) fn about_to_create(name: &ClusterName, engine: Engine, paths: &RunPaths, wait: Wait) -> Self {
        CreatedCluster { name: name.clone(), engine, paths: paths.clone(), wait }
    }
    pub fn name(&self) -> &ClusterName {
        &self.name
    }
    pub fn delete_call(&self) -> tools::ToolCall {
        tools::kind_delete(self.engine, &self.name, &self.paths, self.wait)
    }
    /// Deletes it without an async runtime (the e2e trials' last owner does this on drop).
    pub fn delete_blocking(&self) -> Result<(), super::live::process::ToolError> {
        super::live::process::run_blocking(&self.delete_call()).map(|_| ())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Undo {
    Namespace(String),
    /// A cluster-scoped object a case declared (`cluster_scoped:`) and applied.
    Object(ObjRef),
    Cluster(CreatedCluster),
}

#[derive(Debug, Default)]
pub struct Teardown {
    steps: Vec<Undo>,
    kept: Vec<String>,
}

impl Teardown {
    pub fn push_namespace(&mut self, name: &str) {
        self.steps.push(Undo::Namespace(name.to_string()));
    }
    /// Registers a cluster-scoped object of a case before it is applied: undone with the case,
    /// or by [`Teardown::run`] if the run stops first.
    pub fn push_object(&mut self, r: ObjRef) {
        self.steps.push(Undo::Object(r));
    }
    pub fn push_cluster(&mut self, c: CreatedCluster) {
        self.steps.push(Undo::Cluster(c));
    }
    /// Records something left in place on purpose (a kept or reused cluster, a kept namespace).
    pub fn keep(&mut self, what: String) {
        self.kept.push(what);
    }
    /// Hands the cluster over to another owner (the e2e trials share one), so this teardown
    /// does not delete it.
    pub fn take_cluster(&mut self) -> Option<CreatedCluster> {
        let i = self.steps.iter().position(|s| matches!(s, Undo::Cluster(_)))?;
        match self.steps.remove(i) {
            Undo::Cluster(c) => Some(c),
            Undo::Namespace(_) | Undo::Object(_) => None,
        }
    }
    /// Forgets a namespace registered here that another teardown has since ended (a case run
    /// beside others registers with the run's teardown too, so an interrupted batch still
    /// undoes it).
    pub fn forget_namespace(&mut self, name: &str) {
        self.steps.retain(|s| s != &Undo::Namespace(name.to_string()));
    }
    /// As [`Teardown::forget_namespace`], for a cluster-scoped object.
    pub fn forget_object(&mut self, r: &ObjRef) {
        self.steps.retain(|s| s != &Undo::Object(r.clone()));
    }
    /// Takes over what `other` still has to undo or has kept.
    pub fn absorb(&mut self, mut other: Teardown) {
        self.steps.append(&mut other.steps);
        self.kept.append(&mut other.kept);
    }
    pub fn pending(&self) -> Vec<String> {
        self.steps.iter().map(describe).collect()
    }

    /// Ends a case: deletes its namespace (and, when `wait`, waits until it is gone) unless kept.
    pub async fn finish_namespace<D: Driver>(
        &mut self,
        d: &mut D,
        name: &str,
        keep: bool,
        wait: bool,
        t: &ClusterTimeouts,
        report: &mut TeardownReport,
    ) {
        self.steps.retain(|s| s != &Undo::Namespace(name.to_string()));
        if keep {
            report.kept.push(format!("namespace {name}"));
            return;
        }
        let r = if wait {
            delete_namespace(d, name, t).await
        } else {
            d.delete(&ObjRef::new("v1", "Namespace", None, name)).await.map(|_| ()).map_err(|e| e.to_string())
        };
        match r {
            Ok(()) if wait => report.done.push(format!("namespace {name}")),
            Ok(()) => report.done.push(format!("namespace {name} (deletion started)")),
            Err(e) => report.failed.push(format!("namespace {name}: {e}")),
        }
    }

    /// Ends a case's cluster-scoped object: deletes it unless the case's namespace is kept
    /// (`--keep-namespaces` keeps what the case made, for a look afterwards).
    pub async fn finish_object<D: Driver>(&mut self, d: &mut D, r: &ObjRef, keep: bool, report: &mut TeardownReport) {
        self.steps.retain(|s| s != &Undo::Object(r.clone()));
        if keep {
            report.kept.push(r.to_string());
            return;
        }
        match d.delete(r).await {
            Ok(_) => report.done.push(r.to_string()),
            Err(e) => report.failed.push(format!("{r}: {e}")),
        }
    }

    /// Undoes everything still registered, newest first.
    pub async fn run<D: Driver>(&mut self, d: &mut D, t: &ClusterTimeouts) -> TeardownReport {
        let mut report = TeardownReport { kept: std::mem::take(&mut self.kept), ..TeardownReport::default() };
        if !self.steps.is_empty() {
            d.section("teardown (reverse order of creation)");
        }
        while let Some(step) = self.steps.pop() {
            let what = describe(&step);
            let r = match step {
                Undo::Namespace(n) => delete_namespace(d, &n, t).await,
                Undo::Object(r) => d.delete(&r).await.map(|_| ()).map_err(|e| e.to_string()),
                Undo::Cluster(c) => d.tool(&c.delete_call()).await.map(|_| ()).map_err(|e| e.to_string()),
            };
            match r {
                Ok(()) => report.done.push(what),
                Err(e) => report.failed.push(format!("{what}: {e}")),
            }
        }
        report
    }
}

fn describe(u: &Undo) -> String {
    match u {
        Undo::Namespace(n) => format!("namespace {n}"),
        Undo::Object(r) => r.to_string(),
        Undo::Cluster(c) => format!("kind cluster {}", c.name),
    }
}

async fn delete_namespace<D: Driver>(d: &mut D, name: &str, t: &ClusterTimeouts) -> Result<(), String> {
    let r = ObjRef::new("v1", "Namespace", None, name);
    d.delete(&r).await.map_err(|e| e.to_string())?;
    let spec = WaitSpec {
        what: format!("namespace {name} gone"),
        wait: t.namespace_delete,
        watches: vec![Selection::named("v1", "Namespace", None, name)],
    };
    let mut gone = Gone::new("Namespace", name);
    match d.wait(&spec, &mut gone).await.map_err(|e| e.to_string())? {
        super::driver::WaitEnd::Done => Ok(()),
        super::driver::WaitEnd::TimedOut { last } | super::driver::WaitEnd::Failed { last, .. } => {
            Err(format!("not gone within {}: {last}", super::timeouts::human(t.namespace_delete.limit)))
        }
    }
}
