//! The kind lane's data plane: the case's backends as pods of the Gateway API conformance echo
//! image behind their Services, probes to each Gateway's address on the kind network (the live
//! driver's, or the dry run's listing), and the listeners the node's Envoy really holds, read with
//! `cilium-dbg envoy admin config listeners` in a Cilium agent.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use super::lifecycle::pod_images;
use crate::case::Applied;
use crate::evidence::ProbeRecord;
use crate::evidence::Recording;
use crate::evidence::recording::{RecordedExec, TrackerKind};
use crate::lanes::cluster::cec::{self, EnvoyViews};
use crate::lanes::cluster::driver::{Driver, ObjRef, ProbeTargets, Selection, WaitSpec};
use crate::lanes::cluster::failure::PhaseError;
use crate::lanes::cluster::manifests;
use crate::lanes::cluster::names::MANAGED_BY;
use crate::lanes::cluster::one_case::backend_namespaces;
use crate::lanes::cluster::plane::{DataPlane, PlaneCase};
use crate::lanes::cluster::track::PodsReady;
use crate::lanes::cluster::track::record::Recorder;
use crate::observe::envoy_dump;

/// Backend pods run this image (versions.yaml `echo_image`).
pub struct KindPlane {
    pub echo_image: String,
}

fn backend_selector() -> String {
    format!("{}={}", MANAGED_BY.0, MANAGED_BY.1)
}

impl DataPlane for KindPlane {
    fn backend_objects(&self, c: &PlaneCase<'_>) -> Vec<Value> {
        c.case
            .backends
            .iter()
            .flat_map(|(b, kind)| {
                manifests::backend(
                    &c.case.backend_namespace(b, c.namespace),
                    b,
                    kind,
                    c.case.backend_app_protocols.get(b).map(String::as_str),
                    &self.echo_image,
                )
            })
            .collect()
    }

    async fn backends_ready<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<(), PhaseError> {
        const P: &str = "namespace, Secrets and backends";
        if c.case.backends.is_empty() {
            return Ok(());
        }
        let spec = WaitSpec {
            what: format!("backend pods ready ({})", c.case.backends.keys().map(|b| b.as_str()).collect::<Vec<_>>().join(", ")),
            wait: c.timeouts.backends_ready,
            watches: backend_namespaces(c.case, c.namespace)
                .iter()
                .map(|bns| Selection::labelled("v1", "Pod", Some(bns), &backend_selector()))
                .collect(),
        };
        let names = manifests::backend_names(&c.case.backends);
        let mut tr = PodsReady::new(names.clone());
        let kind = TrackerKind::BackendPods { backends: names.iter().map(|b| b.to_string()).collect() };
        let mut recorder = Recorder::new(&mut tr, &spec.what, kind);
        let end = d.wait(&spec, &mut recorder).await;
        rec.waits.push(recorder.wait);
        let end = end.map_err(|e| PhaseError::step(P, e))?;
        match PhaseError::from_wait(P, &spec.what, spec.wait, end) {
            None => Ok(()),
            Some(e) => Err(
                e.with_hint(format!("the echo image is {}; a pull failure shows above as ErrImagePull/ImagePullBackOff", self.echo_image))
            ),
        }
    }

    fn has_data_path_step(&self) -> bool {
        false
    }

    /// A kind cluster can be kept, reused or be the user's own: each case leaves it as it was.
    fn awaits_namespace_deletion(&self) -> bool {
        true
    }

    async fn data_path<D: Driver>(&mut self, _d: &mut D, _c: &PlaneCase<'_>, _rec: &mut Recording) -> Result<Vec<String>, PhaseError> {
        Ok(Vec::new())
    }

    fn unaddressed_probes(&self) -> &'static str {
        "the kind lane has nowhere to send them: each is recorded with no address and no answer"
    }

    async fn probe<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, applied: &Applied, targets: &ProbeTargets) -> Vec<ProbeRecord> {
        let backends = manifests::backend_names(&c.case.backends);
        d.probe(applied, targets, c.certs, c.probe_timeouts, &backends).await
    }

    async fn envoy_views<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<EnvoyViews, PhaseError> {
        agent_views(d, c, rec).await
    }

    async fn environment<D: Driver>(&mut self, d: &mut D, c: &PlaneCase<'_>) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let mut pods = Vec::new();
        for bns in backend_namespaces(c.case, c.namespace) {
            if let Ok(more) = d.list(&Selection::labelled("v1", "Pod", Some(&bns), &backend_selector())).await {
                pods.extend(more);
            }
        }
        let images = pod_images(&pods);
        if !images.is_empty() {
            env.insert("image.backends".into(), images.join(", "));
        }
        env
    }
}

/// Cilium's intent (the CECs), then Envoy's listeners read in the agent on the node holding the
/// case's Gateway Service's L2 announcement lease (any agent otherwise: every node's Envoy
/// receives the same listeners, every Gateway's).
async fn agent_views<D: Driver>(d: &mut D, c: &PlaneCase<'_>, rec: &mut Recording) -> Result<EnvoyViews, PhaseError> {
    const P: &str = "Envoy config";
    let (ns, gateways, t) = (c.namespace, c.gateways, c.timeouts);
    let intended = cec::read_intended(d, ns, gateways, rec).await?;
    let mut notes = intended.notes.clone();
    let primary_cec = crate::judge::cilium_gateway_resource(&gateways[0]);
    let lease = d
        .get(&ObjRef::new("coordination.k8s.io/v1", "Lease", Some("kube-system"), &format!("cilium-l2announce-{ns}-{primary_cec}")))
        .await
        .map_err(|e| PhaseError::step(P, e))?;
    let node = lease.as_ref().and_then(|l| l.pointer("/spec/holderIdentity")).and_then(Value::as_str).map(str::to_string);
    let agents =
        d.list(&Selection::labelled("v1", "Pod", Some("kube-system"), "k8s-app=cilium")).await.map_err(|e| PhaseError::step(P, e))?;
    let on_node = |p: &&Value| node.as_deref().is_none_or(|n| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(n));
    let agent = agents
        .iter()
        .find(on_node)
        .or(agents.first())
        .and_then(|p| p.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let agent = match (agent, d.dry()) {
        (Some(a), _) => a,
        (None, true) => "<cilium agent pod on the Gateway's node>".to_string(),
        (None, false) => return Err(PhaseError::new(P, "no Cilium agent pod (k8s-app=cilium) in kube-system")),
    };
    if node.is_none() && !d.dry() {
        notes.push(format!("no L2 announcement lease for {ns}/{primary_cec}; read Envoy's listeners in agent {agent}"));
    }
    // One read for every Gateway: with one, exactly its CEC's listeners; with several, every
    // Gateway CEC of the namespace, kept by prefix.
    let prefixes = &intended.prefixes;
    let filter = if gateways.len() > 1 { format!("{ns}/cilium-gateway-.*") } else { format!("{}.*", prefixes[0]) };
    let command: Vec<String> =
        ["cilium-dbg", "envoy", "admin", "config", "listeners", "-n", &filter].iter().map(|s| s.to_string()).collect();
    let pod = ObjRef::new("v1", "Pod", Some("kube-system"), &agent);
    // The agent may still be pushing the CECs to Envoy: read until every Gateway whose CEC holds
    // listeners shows some (without any CEC: until any of ours shows), within the named wait.
    let started = Instant::now();
    loop {
        let at = crate::evidence::now_rfc3339();
        let raw = d.exec(&pod, "cilium-agent", &command, t.envoy_config).await.map_err(|e| PhaseError::step(P, e))?;
        if d.dry() {
            return Ok(EnvoyViews { notes, ..EnvoyViews::default() });
        }
        let summary = envoy_dump::summarize_bytes(raw.as_bytes(), &format!("cilium-dbg envoy admin config listeners ({agent})"), false)
            .map_err(|e| {
                PhaseError::new(P, format!("summarizing the live listeners: {e}")).with_state(raw.chars().take(2000).collect::<String>())
            })?;
        rec.cilium_dbg = Some(RecordedExec {
            pod: agent.clone(),
            container: "cilium-agent".into(),
            command: command.clone(),
            at,
            output: raw.clone(),
            listener_prefix: prefixes[0].clone(),
            other_prefixes: prefixes[1..].to_vec(),
        });
        let ours = cec::ours_only(summary.clone(), prefixes);
        let shown = |p: &String| ours.listeners.iter().any(|l| l.name.starts_with(p.as_str()));
        let complete = if intended.cecs.is_empty() { !ours.listeners.is_empty() } else { intended.wanted.iter().all(shown) };
        if complete || started.elapsed() >= t.envoy_config.limit {
            return Ok(cec::live_views(summary, &intended, raw, notes));
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::CiliumVersion;
    use crate::lanes::cluster::driver::Gvk;
    use crate::lanes::cluster::manifests::SecretMaterial;
    use crate::lanes::cluster::one_case::{CaseInput, run_case};
    use crate::lanes::cluster::teardown::Teardown;
    use crate::lanes::cluster::timeouts::ClusterTimeouts;
    use crate::run::Timeouts;

    /// A dry run's input for `case` in namespace `lg-x`.
    fn dry_input<'a>(
        case: &'a crate::case::Case,
        version: &'a CiliumVersion,
        timeouts: &'a ClusterTimeouts,
        probe_timeouts: &'a Timeouts,
    ) -> CaseInput<'a> {
        CaseInput {
            case,
            version,
            namespace: "lg-x".into(),
            run_id: "test",
            certs: SecretMaterial::DryRun,
            timeouts,
            probe_timeouts,
            keep_namespace: false,
            tlsroute_version: "v1alpha2",
            expecting: crate::lanes::cluster::one_case::Expecting::Asserted,
        }
    }

    /// The catalogue or fixture case at `rel` (from the repository root).
    fn load_case(rel: &str) -> crate::case::Case {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        crate::case::load(&root.join(rel)).unwrap_or_else(|p| panic!("{p:#?}"))
    }

    /// What a dry run of `case` at 1.19.5 prints, every kind served.
    async fn dry_run_of(case: &crate::case::Case) -> String {
        let version = CiliumVersion::parse("1.19.5").unwrap();
        let (timeouts, probe_timeouts) = (ClusterTimeouts::default(), Timeouts::default());
        let input = dry_input(case, &version, &timeouts, &probe_timeouts);
        let mut d = crate::lanes::kind::dry::DryRun::default();
        run_case(&mut d, &mut KindPlane { echo_image: "echo".into() }, &input, &mut Teardown::default()).await;
        d.out
    }

    #[tokio::test]
    async fn a_cluster_without_listenersets_gets_none_applied_nor_watched() {
        use crate::lanes::kind::dry::DryRun;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let case = crate::case::load(&root.join("harness/tests/data/kind/cases/two-gateways")).unwrap_or_else(|p| panic!("{p:#?}"));
        let version = CiliumVersion::parse("1.19.5").unwrap();
        let (timeouts, probe_timeouts) = (ClusterTimeouts::default(), Timeouts::default());
        let input = dry_input(&case, &version, &timeouts, &probe_timeouts);
        let run = |unserved: Vec<Gvk>| {
            let input = &input;
            async move {
                let mut d = DryRun { unserved, ..DryRun::default() };
                run_case(&mut d, &mut KindPlane { echo_image: "echo".into() }, input, &mut Teardown::default()).await;
                d.out
            }
        };
        let without = run(vec![Gvk::new("gateway.networking.k8s.io/v1", "ListenerSet")]).await;
        assert!(without.contains("# not applied: ListenerSet extra (the cluster serves no ListenerSet)"), "{without}");
        let applied_set = "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet";
        assert!(!without.contains(applied_set), "{without}");
        assert!(!without.contains("ListenerSet in lg-x where metadata.name=extra"), "{without}");
        // The routes and both Gateways are still applied and watched.
        assert!(without.contains("Gateway in lg-x where metadata.name=second"), "{without}");
        let with = run(Vec::new()).await;
        assert!(with.contains(applied_set) && with.contains("ListenerSet in lg-x where metadata.name=extra"), "{with}");
    }

    /// Cases run one after another stop at the first whose cluster is found stopped: that case
    /// and every later one are left unstarted (no namespace applied, no verdict), and the run
    /// ends with what stopped. Before, a run went on after its operator exited, each case
    /// waiting out its timeouts and then judged on nothing.
    #[tokio::test]
    async fn a_case_whose_cluster_stopped_is_never_started() {
        use crate::evidence::Lane;
        use crate::lanes::cluster::lane::NotAlive;
        use crate::lanes::cluster::one_case::Expecting;
        use crate::lanes::cluster::session::{Gathered, run_cases};
        use crate::lanes::cluster::setup::CaseRun;
        use crate::lanes::kind::dry::DryRun;
        use std::cell::Cell;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let cases: Vec<_> = ["two-gateways", "cluster-scoped"]
            .iter()
            .map(|n| crate::case::load(&root.join("harness/tests/data/kind/cases").join(n)).unwrap_or_else(|p| panic!("{p:#?}")))
            .collect();
        let version = CiliumVersion::parse("1.19.5").unwrap();
        let (timeouts, probe_timeouts) = (ClusterTimeouts::default(), Timeouts::default());
        let common = CaseRun {
            lane: Lane::Kind,
            version: &version,
            timeouts: &timeouts,
            probe_timeouts: &probe_timeouts,
            keep_namespaces: false,
            tlsroute_version: "v1alpha2",
            expecting: Expecting::Asserted,
        };
        // Results are progress here, and no progress is shown off a terminal.
        let progress = crate::progress::Progress::from_env_results_on_stderr();
        // Alive for the first case, stopped before the second.
        let asked = Cell::new(0);
        let still_up = || {
            asked.set(asked.get() + 1);
            if asked.get() == 1 { Ok(()) } else { Err(NotAlive::Stopped { name: "cilium-operator".into(), pid: 7 }) }
        };
        let (mut d, mut st, mut teardown) = (DryRun::default(), Gathered::default(), Teardown::default());
        let r = run_cases(
            &mut d,
            &mut KindPlane { echo_image: "echo".into() },
            &cases,
            "test-run",
            &common,
            &mut teardown,
            &mut st,
            &progress,
            false,
            &still_up,
        )
        .await;
        let e = r.expect_err("the run stops");
        assert!(e.problem.contains("cilium-operator (pid 7) stopped"), "{e:?}");
        assert!(e.phase.contains("cluster-scoped"), "{e:?}");
        assert_eq!(st.outcomes.iter().map(|o| o.evidence.name.as_str()).collect::<Vec<_>>(), ["two-gateways"]);
        assert!(!d.out.contains("lg-x-reader"), "the second case applied nothing: {}", d.out);
        // Alive throughout: both cases run.
        let (mut d, mut st) = (DryRun::default(), Gathered::default());
        run_cases(
            &mut d,
            &mut KindPlane { echo_image: "echo".into() },
            &cases,
            "test-run",
            &common,
            &mut teardown,
            &mut st,
            &progress,
            false,
            &|| Ok(()),
        )
        .await
        .expect("both cases run");
        assert_eq!(st.outcomes.len(), 2);
    }

    /// A cluster-scoped object the case declares is registered before it is applied and
    /// deleted with the case, before its namespace; a run stopped in between still deletes it.
    #[tokio::test]
    async fn a_declared_cluster_scoped_object_is_created_and_deleted_with_the_case() {
        use crate::lanes::cluster::driver::ObjRef;
        use crate::lanes::cluster::one_case::cluster_objects;
        use crate::lanes::kind::dry::DryRun;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let case = crate::case::load(&root.join("harness/tests/data/kind/cases/cluster-scoped")).unwrap_or_else(|p| panic!("{p:#?}"));
        assert_eq!(cluster_objects(&case, "lg-x"), [ObjRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", None, "lg-x-reader")]);
        let version = CiliumVersion::parse("1.19.5").unwrap();
        let (timeouts, probe_timeouts) = (ClusterTimeouts::default(), Timeouts::default());
        let input = dry_input(&case, &version, &timeouts, &probe_timeouts);
        let mut d = DryRun::default();
        let mut teardown = Teardown::default();
        let outcome = run_case(&mut d, &mut KindPlane { echo_image: "echo".into() }, &input, &mut teardown).await;
        let applied = d.out.find("kind: ClusterRole\nmetadata:\n  name: lg-x-reader").unwrap_or_else(|| panic!("{}", d.out));
        let deleted = d.out.find("delete ClusterRole lg-x-reader").unwrap_or_else(|| panic!("{}", d.out));
        let namespace_deleted = d.out.find("delete Namespace lg-x ").unwrap_or_else(|| panic!("{}", d.out));
        assert!(applied < deleted && deleted < namespace_deleted, "{}", d.out);
        assert!(outcome.cleanup.done.iter().any(|c| c == "ClusterRole lg-x-reader"), "{:?}", outcome.cleanup);
        assert!(teardown.pending().is_empty(), "{:?}", teardown.pending());
        // Registered before the apply: a teardown that runs first (a signal, a failed step)
        // deletes it too.
        let mut early = Teardown::default();
        early.push_object(cluster_objects(&case, "lg-x").remove(0));
        let mut d = DryRun::default();
        let report = early.run(&mut d, &timeouts).await;
        assert!(d.out.contains("delete ClusterRole lg-x-reader"), "{}", d.out);
        assert_eq!(report.done, ["ClusterRole lg-x-reader"]);
    }

    /// A case's referents (its Namespace, Service and ReferenceGrants) are applied before the
    /// Gateway and the route that need them, though the file gives the grants last: Cilium's
    /// operator then never sees the route before its grant (`apply_order` in
    /// lanes/cluster/one_case.rs says why that transient once became an answer).
    #[tokio::test]
    async fn referents_are_applied_before_what_the_operator_reconciles() {
        let out = dry_run_of(&load_case("cases/cilium/tlsroute-invalid-reference-grant")).await;
        let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("{needle:?} not in:\n{out}"));
        let gateway = at("\nkind: Gateway\n");
        let route = at("\nkind: TLSRoute\n");
        for referent in
            ["\nkind: ReferenceGrant\nmetadata:\n  name: grant-in-the-wrong-namespace", "\nkind: Service\nmetadata:\n  name: tls-backend"]
        {
            let r = at(referent);
            assert!(r < gateway && r < route, "{referent:?} is applied after the Gateway or the route:\n{out}");
        }
        // Every grant, the last of the file's included.
        assert_eq!(out.matches("\nkind: ReferenceGrant\n").count(), 7, "{out}");
        assert!(out.rfind("\nkind: ReferenceGrant\n").unwrap_or(usize::MAX) < gateway, "{out}");
    }

    #[tokio::test]
    async fn a_case_s_other_namespaces_are_created_before_its_backends_and_deleted_after() {
        let case = load_case("harness/tests/data/kind/cases/app-namespaces");
        assert_eq!(crate::lanes::cluster::one_case::created_namespaces(&case, "lg-x"), ["lg-x-default"]);
        let out = dry_run_of(&case).await;
        let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("{needle:?} not in:\n{out}"));
        let created = at(
            "kind: Namespace\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: layout-gate\n    layout-gate.dev/case: app-namespaces\n    layout-gate.dev/run: test\n  name: lg-x-default",
        );
        // The backend, and the Secret it mounts, in the route's namespace; its pods watched there.
        let backend = at("layout-gate.dev/backend: kubernetes\n  name: kubernetes\n  namespace: lg-x-default");
        assert!(created < backend, "the namespace exists before anything is placed in it:\n{out}");
        at("name: api-tls\n  namespace: lg-x-default");
        at("; Pod in lg-x-default with labels app.kubernetes.io/managed-by=layout-gate");
        let deleted = at("delete Namespace lg-x-default (foreground)");
        assert!(deleted < at("delete Namespace lg-x (foreground)"), "{out}");
    }
}
