//! The kind lane's side of the bring-up seam ([`ClusterLane`]): preflight of the tools, a run
//! folder for the kubeconfig and the files the tools read, and the cluster brought up by
//! [`lifecycle::bring_up`] (created, reused, or an existing context). The cluster it creates is
//! on the teardown list; an e2e suite that adopts it deletes it when it is dropped, or on a
//! signal.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::lifecycle::{self, ClusterReady, Plan, Target};
use super::plane::KindPlane;
use super::preflight::{self, Needs};
use crate::evidence::Lane;
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::lane::{ClusterLane, Ready, Refusal};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::setup::Setup;
use crate::lanes::cluster::teardown::{CreatedCluster, Teardown};
use crate::lanes::cluster::tools::{Engine, RunPaths};

/// A kind-lane run's cluster: which one, and what preflight found.
pub struct KindCluster {
    pub target: Target,
    engine: Option<Engine>,
    // Holds the kubeconfig the cluster's deletion uses: it outlives the cluster (dropped after
    // the run, or after the suite's state).
    run_dir: Option<crate::scratch::Scratch>,
}

impl KindCluster {
    pub fn new(target: Target) -> Self {
        KindCluster { target, engine: None, run_dir: None }
    }

    /// The tools this target needs.
    pub fn needs(&self) -> Needs {
        match self.target {
            Target::Create { .. } => Needs::CREATE,
            Target::Reuse { .. } => Needs::REUSE,
            Target::Existing { .. } => Needs::EXISTING,
        }
    }
}

/// A kind cluster that is up.
pub struct KindUp {
    pub ready: ClusterReady,
    adopted: Adopted,
}

/// The cluster an e2e suite took over from the teardown list (shared with the signal handler):
/// deleted when the suite is done with it.
#[derive(Default)]
struct Adopted(Arc<Mutex<Option<CreatedCluster>>>);

impl Drop for Adopted {
    /// The last trial is done with the suite: delete the shared cluster it created.
    fn drop(&mut self) {
        let Ok(mut slot) = self.0.lock() else { return };
        if let Some(c) = slot.take() {
            eprintln!("layout-gate kind trials: deleting the shared cluster {}", c.name());
            if let Err(e) = c.delete_blocking() {
                eprintln!(
                    "layout-gate kind trials: could not delete kind cluster {}: {e}; delete it with `kind delete cluster --name {}`",
                    c.name(),
                    c.name()
                );
            }
        }
    }
}

impl ClusterLane for KindCluster {
    type Up = KindUp;
    type Plane = KindPlane;
    const LANE: Lane = Lane::Kind;

    fn describe(&self, _setup: &Setup) -> String {
        self.target.describe()
    }

    async fn preflight(&mut self, setup: &Setup, progress: &Progress) -> Result<BTreeMap<String, String>, Refusal> {
        progress.line("preflight");
        let limit = setup.timeouts.tool_query.limit;
        let findings =
            tokio::task::spawn_blocking(move || preflight::gather(limit)).await.map_err(|e| Refusal::Failed(format!("preflight: {e}")))?;
        let ready = preflight::assess(&findings, &setup.pins, self.needs(), preflight::unreachable_ok_from_env())
            .map_err(|e| Refusal::NotRun { message: e.to_string(), reason: format!("preflight failed: {}", e.problems.join("; ")) })?;
        for w in &ready.warnings {
            eprintln!("layout-gate kind lane: warning: {w}");
        }
        let run_dir =
            crate::scratch::Scratch::new(crate::scratch::KIND).map_err(|e| Refusal::Failed(format!("creating the run folder: {e}")))?;
        if setup.pins.get(&setup.version).is_none() {
            return Err(Refusal::Failed(format!("Cilium {} is not pinned", setup.version)));
        }
        self.engine = Some(ready.engine);
        self.run_dir = Some(run_dir);
        Ok(ready.versions.iter().map(|(k, v)| (format!("tool.{k}"), v.clone())).collect())
    }

    async fn bring_up(
        &mut self,
        d: &mut LiveDriver,
        setup: &Setup,
        run_id: &str,
        teardown: &mut Teardown,
        log: &mut PhaseLog,
    ) -> Result<KindUp, PhaseError> {
        let (Some(engine), Some(run_dir)) = (self.engine, &self.run_dir) else {
            return Err(PhaseError::new("preflight", "internal: the cluster was asked for before preflight"));
        };
        let paths = RunPaths { root: run_dir.path().to_path_buf() };
        let plan = Plan::new(setup, self.target.clone(), engine, paths, run_id).map_err(|e| PhaseError::new("preflight", e.to_string()))?;
        let ready = lifecycle::bring_up(d, &plan, teardown, log).await?;
        Ok(KindUp { ready, adopted: Adopted::default() })
    }

    fn ready(up: &KindUp) -> Ready<'_> {
        Ready { kube: &up.ready.kube, environment: &up.ready.environment }
    }

    fn plane(&self, setup: &Setup, _up: &KindUp) -> KindPlane {
        KindPlane { echo_image: setup.pins.echo_image.clone() }
    }

    fn adopt(up: &mut KindUp, teardown: &mut Teardown) {
        if let Ok(mut slot) = up.adopted.0.lock() {
            *slot = teardown.take_cluster();
        }
        // Ctrl-C or SIGTERM during the trials: the test binary's signal handler runs this before
        // it exits (see `crate::child::on_signal`): the shared cluster is deleted.
        let created = up.adopted.0.clone();
        crate::child::on_signal(move || {
            eprintln!("layout-gate kind trials: stopping: deleting the shared cluster");
            if let Ok(mut slot) = created.lock()
                && let Some(c) = slot.take()
                && let Err(e) = c.delete_blocking()
            {
                eprintln!("layout-gate kind trials: could not delete kind cluster {}: {e}", c.name());
            }
        });
    }

    fn shut_down(_up: KindUp) -> Vec<String> {
        // The cluster is on the teardown list (or kept, as asked): nothing else holds it.
        Vec::new()
    }
}
