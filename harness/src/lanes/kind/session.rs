//! A whole kind-lane run from the command line: choose the version, cases and cluster; then
//! either print the dry run, or run the shared cluster-lane session
//! ([`crate::lanes::cluster::session::live`]) with this lane's side of the seam ([`KindCluster`]).

use std::path::Path;

use super::KindOptions;
use super::dry::DryRun;
use super::lane::KindCluster;
use super::lifecycle::{self, NotPinned, Plan, Target};
use super::plane::KindPlane;
use super::preflight;
use crate::case::{Case, CiliumVersion};
use crate::evidence::Lane;
use crate::lanes::cluster::driver::Driver;
use crate::lanes::cluster::failure::{PhaseError, PhaseLog};
use crate::lanes::cluster::manifests::SecretMaterial;
use crate::lanes::cluster::names::{ClusterName, NotOurCluster, namespace_for};
use crate::lanes::cluster::one_case::{self, CaseInput};
use crate::lanes::cluster::session::{self as cluster_session, RunEnd, RunError};
use crate::lanes::cluster::setup::{Setup, SetupError};
use crate::lanes::cluster::teardown::Teardown;
use crate::lanes::cluster::tools::{Engine, RunPaths};
use crate::run::Settings;
use crate::versions::Pins;

/// Everything a kind run is about, decided before anything runs: what every cluster-lane run
/// is about, and the cluster it runs on.
pub struct KindSetup {
    pub setup: Setup,
    pub target: Target,
}

/// What `run --lane kind` did: printed the dry run's text, or ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindEnd {
    DryRun(String),
    Ran(RunEnd),
}

/// Why a kind run's setup could not be made: what was asked for and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum KindSetupError {
    /// The versions file: every problem, a line each.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Pins(Vec<crate::case::Problem>),
    #[error("the kind lane runs one Cilium version per run (one cluster); got {}; run it once per version", .0.join(", "))]
    ManyVersions(Vec<String>),
    /// A version the versions file does not pin (or not a version), as the pins say it.
    #[error("{0}")]
    Version(String),
    /// The cases could not be selected (the e2e suite selects them itself).
    #[error("{0}")]
    Cases(String),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Reuse(#[from] NotOurCluster),
}

/// The Cilium version: the flag, else `LAYOUT_GATE_CILIUM`, else the versions file's default.
pub fn pick_version(pins: &Pins, flags: &[String], env: Option<String>) -> Result<(CiliumVersion, String), KindSetupError> {
    let (text, source) = match (flags, env) {
        ([], None) => return Ok((pins.default.clone(), pins.file_label())),
        ([], Some(e)) => (e, "LAYOUT_GATE_CILIUM".to_string()),
        ([one], _) => (one.clone(), "--cilium flag".to_string()),
        (many, _) => return Err(KindSetupError::ManyVersions(many.to_vec())),
    };
    Ok((pins.pick(&text).map_err(KindSetupError::Version)?.version.clone(), source))
}

impl KindSetup {
    /// What every kind run loads the same way, whether the CLI or the e2e suite asks: the pins,
    /// the version (`cilium_flags`, else `LAYOUT_GATE_CILIUM`, else the default), the
    /// kind-config files and the named waits. `target` chooses the cluster for that version.
    pub fn load(
        cilium_flags: &[String],
        cases: impl FnOnce() -> Result<Vec<Case>, KindSetupError>,
        cilium_debug: bool,
        target: impl FnOnce(&CiliumVersion) -> Result<Target, KindSetupError>,
        keep_namespaces: bool,
        settings: &Settings,
    ) -> Result<KindSetup, KindSetupError> {
        let pins = Pins::load_default().map_err(KindSetupError::Pins)?;
        let (version, version_source) = pick_version(&pins, cilium_flags, std::env::var("LAYOUT_GATE_CILIUM").ok())?;
        let setup = Setup::load(Lane::Kind, pins, version, version_source, cilium_debug, cases()?, settings, keep_namespaces)?;
        let target = target(&setup.version)?;
        Ok(KindSetup { setup, target })
    }

    /// The setup `options` ask for, over the selected `cases`.
    pub fn from_options(cases: Vec<Case>, options: &KindOptions) -> Result<KindSetup, KindSetupError> {
        KindSetup::load(
            &options.cilium,
            || Ok(cases),
            options.cilium_debug,
            |version| {
                Ok(match (&options.reuse_cluster, &options.existing_cluster) {
                    (Some(name), _) => Target::Reuse { name: ClusterName::parse_own(name)? },
                    (None, Some(ctx)) => Target::Existing { context: ctx.clone() },
                    (None, None) => Target::Create { name: ClusterName::for_version(version), keep: options.keep_cluster },
                })
            },
            options.keep_namespaces,
            &options.settings,
        )
    }

    fn plan(&self, engine: Engine, paths: RunPaths, run_id: &str) -> Result<Plan<'_>, NotPinned> {
        Plan::new(&self.setup, self.target.clone(), engine, paths, run_id)
    }
}

/// `layout-gate run --lane kind` over the selected `cases`.
pub fn run(cases: Vec<Case>, options: &KindOptions, evidence_dir: &Path) -> Result<KindEnd, RunError> {
    let KindSetup { setup, target } = KindSetup::from_options(cases, options).map_err(|e| RunError::Setup(e.into()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(RunError::Runtime)?;
    if options.dry_run {
        let text = runtime.block_on(dry_run(&KindSetup { setup, target })).map_err(|e| RunError::DryRun(e.to_string()))?;
        return Ok(KindEnd::DryRun(text));
    }
    let mut lane = KindCluster::new(target);
    let end = runtime.block_on(cluster_session::live(&mut lane, &setup, evidence_dir, options.fail_fast, options.shard.as_deref()))?;
    // The run folder (with the kubeconfig teardown used) goes with the lane, after the evidence.
    drop(lane);
    Ok(KindEnd::Ran(end))
}

/// A path as the dry run shows it: relative to the repository when inside it, so the text is
/// the same on every machine.
fn shown(p: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cwd = std::env::current_dir().unwrap_or_default();
    p.strip_prefix(root).or_else(|_| p.strip_prefix(&cwd)).unwrap_or(p).display().to_string()
}

/// Why the dry run could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    #[error(transparent)]
    NotPinned(#[from] NotPinned),
    /// The bring-up stopped at a phase (the dry run's files could not be made).
    #[error(transparent)]
    Phase(#[from] PhaseError),
}

/// The dry run's text: every command, file, object and wait of a live run, in order.
pub async fn dry_run(kind: &KindSetup) -> Result<String, DryRunError> {
    let setup = &kind.setup;
    let run_id = "dry-run";
    let plan = kind.plan(Engine::Docker, RunPaths::dry(), run_id)?;
    let mut d = DryRun::default();
    let pin = plan.pin;
    d.note(&format!("layout-gate run --lane kind --cilium {} --dry-run", setup.version));
    d.note("Nothing below is run. In order: every command, file, object and wait of a live run.");
    d.note(&format!(
        "Cilium {} ({}): chart cilium {} from {}",
        setup.version,
        if setup.version_source.ends_with("versions.yaml") {
            shown(Path::new(&setup.version_source))
        } else {
            setup.version_source.clone()
        },
        pin.chart,
        setup.pins.helm.repo
    ));
    d.note(&format!("Gateway API CRDs: {} {} channel, {}", pin.gateway_api.version, pin.gateway_api.channel, pin.gateway_api.url));
    d.note(&format!("kind {}, node image {}", setup.pins.kind.version, pin.node.image()));
    d.note(&pin.node.pairing());
    d.note(&format!("helm {}; backends {}", setup.pins.helm.version, setup.pins.echo_image));
    d.note(&format!(
        "Helm values {} (sha256 {})",
        shown(&setup.files.dir.join(crate::lanes::cluster::config::VALUES_FILE)),
        setup.files.values_digest()
    ));
    d.note(&format!("Cluster: {}", kind.target.describe()));
    d.note(
        "$RUN_DIR: a private folder (0700) made at run time for the kubeconfig, kind config, values and CRD bundle; removed at the end.",
    );
    d.note(
        "Commands are shown for docker; with podman, kind runs with KIND_EXPERIMENTAL_PROVIDER=podman and `podman network inspect kind`.",
    );
    d.section("preflight");
    for q in preflight::query_lines() {
        d.out.push_str(&format!("$ {q}\n"));
    }
    d.note("missing tools are all named in one message, each with how to install it");
    let mut teardown = Teardown::default();
    let mut log = PhaseLog::default();
    lifecycle::bring_up(&mut d, &plan, &mut teardown, &mut log).await?;
    for case in &setup.cases {
        let input = CaseInput {
            case,
            version: &setup.version,
            namespace: namespace_for(&case.name, "dryrun"),
            run_id,
            certs: SecretMaterial::DryRun,
            timeouts: &setup.timeouts,
            probe_timeouts: &setup.probe_timeouts,
            keep_namespace: setup.keep_namespaces,
            tlsroute_version: setup.tlsroute_version(),
            expecting: crate::lanes::cluster::one_case::Expecting::Asserted,
        };
        one_case::run_case(&mut d, &mut KindPlane { echo_image: setup.pins.echo_image.clone() }, &input, &mut teardown).await;
    }
    d.section("evidence");
    d.note("write <evidence dir>/<run id>/{evidence.json,summary.md,junit.xml}, then diagnostics/<case>/ for failed cases");
    teardown.run(&mut d, &setup.timeouts).await;
    Ok(d.out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::evidence::{Evidence, RunStatus};
    use crate::lanes::cluster::config::KindFiles;
    use crate::lanes::cluster::golden::check_golden;
    use crate::lanes::cluster::session::{Outcomes, RunLabel};
    use crate::lanes::cluster::timeouts::ClusterTimeouts;
    use crate::run::Timeouts;

    fn pins() -> Pins {
        Pins::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(crate::versions::VERSIONS_FILE)).unwrap()
    }

    #[test]
    fn version_choice() {
        let p = pins();
        assert_eq!(pick_version(&p, &[], None).unwrap().0.to_string(), "1.19.5");
        assert_eq!(
            pick_version(&p, &[], Some("1.19.6".into())).unwrap(),
            (CiliumVersion::parse("1.19.6").unwrap(), "LAYOUT_GATE_CILIUM".to_string())
        );
        assert_eq!(pick_version(&p, &["1.19.7".into()], Some("1.19.6".into())).unwrap().1, "--cilium flag");
        assert!(
            pick_version(&p, &["1.19.5".into(), "1.19.6".into()], None).unwrap_err().to_string().contains("one Cilium version per run")
        );
        assert!(pick_version(&p, &["1.18.0".into()], None).unwrap_err().to_string().contains("not pinned"));
    }

    fn setup(version: &str, target: Option<Target>) -> KindSetup {
        setup_with(pins(), version, target, "worked-example")
    }

    /// A setup running one of the lane's own fixture cases (`harness/tests/data/kind/cases/`),
    /// on `pins`.
    fn setup_with(pins: Pins, version: &str, target: Option<Target>, case: &str) -> KindSetup {
        let version = pins.pick(version).unwrap().version.clone();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let files = KindFiles::load(&root.join("kind-config"), false).unwrap();
        // The lane's own fixture case: the golden must not move when the catalogue does.
        let cases = vec![crate::case::load(&root.join("harness/tests/data/kind/cases").join(case)).unwrap_or_else(|p| panic!("{p:#?}"))];
        let target = target.unwrap_or(Target::Create { name: ClusterName::for_version(&version), keep: false });
        KindSetup {
            setup: Setup {
                version_source: pins.file.display().to_string(),
                pins,
                version,
                files,
                cases,
                timeouts: ClusterTimeouts::default(),
                probe_timeouts: Timeouts::default(),
                keep_namespaces: false,
            },
            target,
        }
    }

    #[test]
    fn a_run_that_reached_no_case_says_so_and_judges_nothing() {
        let s = setup("1.19.5", None).setup;
        let root = tempfile::tempdir().unwrap();
        let why = "preflight failed: docker: not found";
        let run = Outcomes {
            selected: s.cases.iter().map(|c| c.name.clone()).collect(),
            cases: Vec::new(),
            not_run: s.cases.iter().map(|c| cluster_session::not_run(c, why)).collect(),
            interrupted: false,
        };
        let label = RunLabel::new(Lane::Kind, &s.version, &s.version_source, "run-x", "2026-12-01T00:00:00.000Z");
        let dir = cluster_session::write_evidence(&label, root.path(), Vec::new(), BTreeMap::new(), Vec::new(), run, Vec::new()).unwrap();
        let ev: Evidence = serde_json::from_str(&std::fs::read_to_string(dir.join("evidence.json")).unwrap()).unwrap();
        assert_eq!(ev.status, RunStatus::NotRun { reason: why.into() });
        assert!(ev.cases.is_empty(), "no case, so no verdict");
        assert_eq!(ev.not_run.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["worked-example"]);
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(md.contains("Result: **not run**: preflight failed"), "{md}");
        assert!(!md.contains("FAIL"), "{md}");
        let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
        assert!(junit.contains(r#"errors="1""#) && junit.contains("not run: preflight failed"), "{junit}");
    }

    #[tokio::test]
    async fn dry_run_golden_1_19_5() {
        let text = dry_run(&setup("1.19.5", None)).await.unwrap();
        check_golden("dry-run-1.19.5.txt", &text);
    }

    /// The dry run says whether the node's Kubernetes is one the Cilium line is e2e tested on,
    /// and where that list comes from (an unknown list: versions::tests).
    #[tokio::test]
    async fn dry_run_golden_1_20_1() {
        let text = dry_run(&setup("1.20.1", None)).await.unwrap();
        assert!(text.contains("Cilium 1.20 is e2e tested on Kubernetes 1.33, 1.34, 1.35, 1.36 (cilium@v1.20.2:"), "{text}");
        check_golden("dry-run-1.20.1.txt", &text);
    }

    #[tokio::test]
    async fn each_version_creates_its_cluster_from_its_own_node_image() {
        let img_134 = "kindest/node:v1.34.11@sha256:44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d";
        let pins = || crate::versions::pins_with_node("1.19.6", img_134, "1.34").unwrap_or_else(|p| panic!("{p:#?}"));
        let a = dry_run(&setup_with(pins(), "1.19.5", None, "worked-example")).await.unwrap();
        let b = dry_run(&setup_with(pins(), "1.19.6", None, "worked-example")).await.unwrap();
        let image_of = |text: &str| {
            let line = text.lines().find(|l| l.starts_with("$ kind create cluster")).unwrap().to_string();
            line.split(" --image ").nth(1).unwrap().split(' ').next().unwrap().to_string()
        };
        assert_eq!(image_of(&b), img_134);
        assert_eq!(image_of(&a), pins().pick("1.19.5").unwrap().node.image().as_str());
        assert_ne!(image_of(&a), image_of(&b));
        // In the header, on `kind create`, and in the marker the cluster gets (which
        // --reuse-cluster compares).
        assert_eq!(b.matches(img_134).count(), 3, "{b}");
        assert!(b.contains("Kubernetes 1.34.11: Cilium 1.19 is e2e tested on"), "{b}");
    }

    /// Evidence `environment` names the node image and, next to it, whether the pairing is
    /// tested (both lines' lists are known and every pin runs 1.35).
    #[tokio::test]
    async fn evidence_environment_says_whether_the_node_pairing_is_tested() {
        for (version, tested) in [("1.19.5", true), ("1.20.1", true)] {
            let s = setup(version, None);
            let plan = s.plan(Engine::Docker, RunPaths::dry(), "r").unwrap();
            let mut d = DryRun::default();
            let ready = lifecycle::bring_up(&mut d, &plan, &mut Teardown::default(), &mut PhaseLog::default()).await.unwrap();
            let env = &ready.environment;
            assert_eq!(env.get("kind_node_image").map(String::as_str), Some(plan.pin.node.image().as_str()));
            let pairing = env.get("kind_node_kubernetes").unwrap();
            assert_eq!(pairing.contains("UNTESTED/UNKNOWN"), !tested, "{version}: {pairing}");
            assert!(pairing.starts_with("Kubernetes 1.35.8: "), "{pairing}");
        }
    }

    #[tokio::test]
    async fn dry_run_golden_two_gateways_1_20_1() {
        let text = dry_run(&setup_with(pins(), "1.20.1", None, "two-gateways")).await.unwrap();
        check_golden("dry-run-two-gateways-1.20.1.txt", &text);
    }

    /// A case applied in steps: the dry run applies step 1, waits and probes, then applies the
    /// second step's manifest, waits and probes again, then deletes the third step's, in that
    /// order, each step's probes under its own heading.
    #[tokio::test]
    async fn dry_run_golden_stepped_1_20_1() {
        let text = dry_run(&setup_with(pins(), "1.20.1", None, "stepped")).await.unwrap();
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle:?} not in:\n{text}"));
        let first_probe = at("probe <Gateway");
        let second = at("## case stepped step 2: manifests");
        let again = at("name: api-again");
        let third = at("## case stepped step 3: manifests");
        let deleted = at("delete TLSRoute");
        assert!(first_probe < second && second < again && again < third && third < deleted, "{text}");
        assert!(text[second..third].contains("probe <Gateway"), "step 2 probes: {text}");
        assert!(text[third..].contains("probe <Gateway"), "step 3 probes: {text}");
        check_golden("dry-run-stepped-1.20.1.txt", &text);
    }

    #[tokio::test]
    async fn dry_run_watches_every_gateway_and_listenerset_and_probes_each_address() {
        let text = dry_run(&setup_with(pins(), "1.20.1", None, "two-gateways")).await.unwrap();
        let case = &text[text.find("## case two-gateways: manifests").expect("the case runs")..];
        for needle in [
            "ask the API server whether it serves gateway.networking.k8s.io/v1 ListenerSet",
            "watching: Gateway in lg-two-gateways-dryrun where metadata.name=gw; Gateway in lg-two-gateways-dryrun where metadata.name=second; ListenerSet in lg-two-gateways-dryrun where metadata.name=extra",
            "wait for Gateways lg-two-gateways-dryrun/gw, lg-two-gateways-dryrun/second have IP addresses",
            "probe <Gateway gw address>:8080: plain HTTP GET /, Host alt.example.test",
            "probe <Gateway second address>:443: TLS handshake, SNI www.example.test, then GET /",
            "get CiliumEnvoyConfig lg-two-gateways-dryrun/cilium-gateway-gw",
            "get CiliumEnvoyConfig lg-two-gateways-dryrun/cilium-gateway-second",
            "cilium-dbg envoy admin config listeners -n lg-two-gateways-dryrun/cilium-gateway-.*",
        ] {
            assert!(case.contains(needle), "{needle:?} missing:\n{case}");
        }
    }

    #[tokio::test]
    async fn tlsroutes_are_applied_at_the_version_the_bundle_stores() {
        // The fixture case writes TLSRoute v1alpha2; Gateway API 1.6 (Cilium 1.20) stores v1.
        let new = dry_run(&setup("1.20.1", None)).await.unwrap();
        assert!(new.contains("apiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute"), "{new}");
        assert!(!new.contains("v1alpha2\nkind: TLSRoute"), "{new}");
        assert!(new.contains("TLSRoute in lg-worked-example-dryrun"), "{new}");
        let old = dry_run(&setup("1.19.5", None)).await.unwrap();
        assert!(old.contains("apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute"), "{old}");
    }

    #[tokio::test]
    async fn dry_run_order_and_content() {
        let text = dry_run(&setup("1.20.1", None)).await.unwrap();
        let order = [
            "$ kind get clusters",
            "write $RUN_DIR/kind-cluster.yaml",
            "$ kind create cluster --name layout-gate-1-20-1",
            "connect to the API server: context kind-layout-gate-1-20-1",
            "name: layout-gate-cluster",
            "v1.6.1/experimental-install.yaml",
            "every Gateway API CRD Established",
            "write $RUN_DIR/cilium-values.yaml",
            "$ helm upgrade --install cilium cilium --repo https://helm.cilium.io/ --version 1.20.1",
            "DaemonSet cilium",
            "GatewayClass cilium Accepted=True",
            "$ docker network inspect kind",
            "cidr: 172.18.255.192/28",
            "kind: CiliumL2AnnouncementPolicy",
            "kind: Namespace",
            "name: gateway-wildcard-tls",
            "TLS_SERVER_CERT",
            // Routes before the Gateway they attach to (one_case.rs: apply_order).
            "kind: TLSRoute",
            "kind: Gateway",
            "the conditions the case names",
            "TLS handshake, SNI api.example.test",
            "cilium-dbg envoy admin config listeners -n lg-worked-example-dryrun/cilium-gateway-gw/.*",
            "delete Namespace lg-worked-example-dryrun",
            "$ kind delete cluster --name layout-gate-1-20-1",
        ];
        let mut at = 0;
        for needle in order {
            match text[at..].find(needle) {
                Some(i) => at += i + needle.len(),
                None => panic!("{needle:?} missing or out of order after byte {at}:\n{text}"),
            }
        }
        assert!(!text.contains("PRIVATE KEY"));
        assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "absolute paths make the dry run machine-specific");
    }

    #[tokio::test]
    async fn dry_run_keep_reuse_and_existing() {
        let v = CiliumVersion::parse("1.19.5").unwrap();
        let keep = dry_run(&setup("1.19.5", Some(Target::Create { name: ClusterName::for_version(&v), keep: true }))).await.unwrap();
        assert!(!keep.contains("kind delete cluster"), "a kept cluster must not be deleted");
        let reuse = dry_run(&setup("1.19.5", Some(Target::Reuse { name: ClusterName::for_version(&v) }))).await.unwrap();
        assert!(reuse.contains("$ kind export kubeconfig --name layout-gate-1-19-5"));
        assert!(reuse.contains("get ConfigMap kube-system/layout-gate-cluster"));
        assert!(reuse.contains("$ helm get values cilium"));
        assert!(!reuse.contains("kind create cluster") && !reuse.contains("helm upgrade") && !reuse.contains("kind delete cluster"));
        let existing = dry_run(&setup("1.19.5", Some(Target::Existing { context: "prod".into() }))).await.unwrap();
        assert!(existing.contains("context prod in the default kubeconfig"));
        for never in [
            "$ kind get",
            "$ kind create",
            "$ kind delete",
            "$ helm upgrade",
            "$ helm get",
            "$ helm list",
            "$ curl --fail",
            "layout-gate-cluster",
            "CiliumL2AnnouncementPolicy",
        ] {
            assert!(!existing.contains(never), "{never} in an existing-cluster run:\n{existing}");
        }
        assert!(existing.contains("get DaemonSet kube-system/cilium"), "the running version must be checked");
        assert!(!existing.contains("CiliumLoadBalancerIPPool"));
    }
}
