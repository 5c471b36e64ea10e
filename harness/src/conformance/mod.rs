//! `layout-gate conformance --cilium V`: the upstream Gateway API conformance suite (the
//! version the tag's `go.mod` names, [`suite`]) run against Cilium's own operator at that tag on
//! the operator lane's control plane (a warm `operator up` plane that matches, else one of its
//! own: [`crate::lanes::operator::up::attach_or_start`], one seam with `run` and `check`), with
//! the flags and profiles Cilium's own conformance-profile job uses at the tag, minus what cannot
//! run here, each skip named with why ([`skips`]). Writes the suite's own ConformanceReport and
//! a comparison, test by test, with Cilium's published report for the nearest release of the
//! line ([`compare`]).
//!
//! Real: the suite (upstream's code, unchanged), Cilium's operator, the API server, every status
//! the suite checks. Emulated: nothing the suite reads; what is missing is the data plane, so
//! every test that sends traffic is skipped by name. The suite talks only to the local
//! kube-apiserver on 127.0.0.1.
//!
//! `--traffic` (issue #39 item 3) runs the traffic tests too, with Cilium's own agent control
//! plane as the data plane ([`crate::lanes::operator::real_agent`]: agent-plane, xds-bridge and
//! upstream Envoy, each listener bound at the Gateway's LB IPAM address, in the plane's own /16 of 127.18-127.33) and the
//! suite's own echo-basic pods run by the pod stand-in in the run's own network namespaces, whose
//! EndpointSlices kube-controller-manager writes: EDS is the agent's. The suite dials the
//! Gateway's address from its own process; Envoy reaches the pods over the run's bridge. Mesh
//! tests and tests that need a container runtime are skipped by name
//! ([`skips::left_out_of_traffic`]); each traffic failure is a finding ([`findings`]).

pub mod compare;
pub mod findings;
pub mod results;
pub mod skips;
pub mod suite;

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use crate::case::CiliumVersion;
use crate::evidence::Lane;
use crate::lanes::cluster::failure::PhaseLog;
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::live::kube_api::Kube;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::operator::control_plane::Controllers;
use crate::lanes::operator::pods::{Images, PodStandIn};
use crate::lanes::operator::{session, up};
use crate::versions::Pins;
use compare::Comparison;
use results::{Outcome, Report, Results};
use skips::Skip;

/// What is said as the command using a warm plane.
pub const WHO: &str = "conformance";

/// The flags Cilium's conformance-profile job passes at every pinned tag
/// (`.github/workflows/conformance-gateway-api.yaml`: `GATEWAY_TEST_FLAGS` and the profile
/// branch), but `--skip-tests`, `--conformance-profiles`, `--version` and `--report-output`,
/// which the run sets.
pub const CILIUM_FLAGS: &[&str] = &[
    "--gateway-class=cilium",
    "--all-features",
    "--allow-crds-mismatch",
    "--cleanup-base-resources=false",
    "--organization=cilium",
    "--project=cilium",
    "--url=github.com/cilium/cilium",
    "--contact=https://github.com/cilium/community/blob/main/roles/Maintainers.md",
];

/// What the run's evidence says is real and emulated.
pub const REAL: &str = "the upstream conformance suite at the version the tag's go.mod names (unchanged); Cilium's operator built from the tag; kube-apiserver, etcd, kube-controller-manager; every status the suite checks";
pub const EMULATED: &str = "no data plane: every test that sends traffic is skipped by name (issue #39 item 3); no kubelet or scheduler: the suite's Deployments get no pods";
/// What is emulated in the traffic run (`--traffic`): the agent step is Cilium's own
/// (`lanes::operator::real_agent`), the backends are the suite's own pods in the run's network.
pub const TRAFFIC_EMULATED: &str = "the data plane: Cilium's own agent control plane (agent-plane, DryMode's fake datapath: no BPF, no TPROXY) serves the operator's CiliumEnvoyConfigs, its EDS from kube-controller-manager's EndpointSlices of the suite's pods; xds-bridge strips Cilium's own Envoy filters (cilium.*) and binds each listener at the Gateway's LB IPAM address (the plane's own /16 of 127.18-127.33) and Service port, where a node's TPROXY would deliver it; upstream Envoy 1.40 stands in for cilium-envoy; no kubelet, scheduler or images: the pod stand-in (lanes::operator::pods) binds the suite's pods to one Node and runs each image's program built from the same source (echo-basic from the suite's own module at its version), each in a network namespace of the run (a private /24 on the run's bridge, which Envoy reaches from the host) with an address of its own; mesh tests and tests that need a container runtime (pod logs, exec) are skipped by name";
/// What the evidence says is emulated: with the L4 stand-in (`lanes::operator::l4`) said too
/// when it ran.
fn emulated(traffic: bool, needs_pods: bool, l4: bool) -> String {
    match (traffic, l4) {
        (true, true) => format!("{TRAFFIC_EMULATED}; {}", crate::lanes::operator::l4::SAID),
        (true, false) => TRAFFIC_EMULATED.to_string(),
        _ if needs_pods => EMULATED_WITH_PODS.to_string(),
        _ => EMULATED.to_string(),
    }
}
/// What is emulated when the suite's setup needs pods and the pod stand-in runs them.
pub const EMULATED_WITH_PODS: &str = "no data plane: every test that sends traffic is skipped by name (issue #39 item 3); no kubelet, scheduler or images: the pod stand-in (lanes::operator::pods) binds the suite's pods to one Node and runs each image's program built from the same source (echo-basic from the suite's own module at its version, whatever the image's tag), each in a network namespace of the run with an address of its own, its volumes written to a folder rather than mounted; kube-controller-manager's deployment, replicaset, serviceaccount and endpointslice controllers are real";

/// A profile left out of the run, with why.
pub type LeftOut = (String, String);

/// The MESH profiles, left out when the suite's setup would wait for mesh pods the stand-in
/// cannot run (suite v1.6's mesh manifests run Istio's echo server, `echo-advanced`): with pods
/// required, the setup of a MESH profile waits (`MeshNamespacesMustBeReady`) for every pod of the
/// mesh manifests. Every mesh test needs the data plane anyway (issue #39: mesh tests stay out);
/// each profile left out is said with why, and the comparison names it (`profile in the
/// published report only`).
fn mesh_left_out(profiles: Vec<String>, images: &Images, s: &suite::Suite) -> Result<(Vec<String>, Vec<LeftOut>), ConformanceError> {
    if !profiles.iter().any(|p| p.starts_with("MESH-")) {
        return Ok((profiles, Vec::new()));
    }
    let cannot: Vec<String> = suite::images(&s.suite_dir, suite::MESH_MANIFESTS)
        .map_err(ConformanceError::Input)?
        .iter()
        .filter(|i| images.program(i).is_err())
        .cloned()
        .collect();
    if cannot.is_empty() {
        return Ok((profiles, Vec::new()));
    }
    let why = format!(
        "its setup waits until every pod of the suite's {} is Ready, and the pod stand-in runs no program for {}; every mesh test needs the data plane too (issue #39: mesh tests stay out)",
        suite::MESH_MANIFESTS,
        cannot.join(", ")
    );
    let (mesh, rest): (Vec<String>, Vec<String>) = profiles.into_iter().partition(|p| p.starts_with("MESH-"));
    Ok((rest, mesh.into_iter().map(|p| (p, why.clone())).collect()))
}

/// The feature whose support makes the suite's setup apply and wait for its mesh manifests.
pub const MESH_FEATURE: &str = "Mesh";

/// The images the suite's backends name, by repository: echo-basic's release repository (suite
/// v1.6's manifests) and its staging one (suite v1.4.0-rc.2's name
/// `gcr.io/k8s-staging-gateway-api/echo-basic:v20240412-…`), both built from the suite's own
/// `conformance/echo-basic`.
pub const ECHO_BASIC: &str = "registry.k8s.io/gateway-api/echo-basic";
pub const ECHO_BASIC_STAGING: &str = "gcr.io/k8s-staging-gateway-api/echo-basic";
pub const COREDNS: &str = "registry.k8s.io/coredns/coredns";

/// The programs the pod stand-in runs for the suite's images: echo-basic from the suite's own
/// module at the suite's version, coredns at the tag the base manifests name. Refused (exit 2,
/// with the command that builds them) when an image of the base manifests has none: the suite's
/// setup waits for every pod there to be Ready.
fn images(pins: &Pins, v: &CiliumVersion, s: &suite::Suite) -> Result<Images, ConformanceError> {
    use crate::lanes::operator::binaries::pod_program;
    let echo = pod_program(pins, v, "echo-basic", &s.version).map(|b| b.path);
    let mut images = Images::default().with(ECHO_BASIC, echo.clone()).with(ECHO_BASIC_STAGING, echo);
    if let Some(tag) = suite::base_image_tags(&s.suite_dir, COREDNS).map_err(ConformanceError::Input)?.first() {
        images = images.with(COREDNS, pod_program(pins, v, "coredns", tag).map(|b| b.path));
    }
    let missing: Vec<String> = suite::images(&s.suite_dir, suite::BASE_MANIFESTS)
        .map_err(ConformanceError::Input)?
        .iter()
        .filter_map(|image| images.program(image).err())
        .collect();
    if !missing.is_empty() {
        return Err(ConformanceError::Input(format!(
            "suite {}'s setup waits until every pod of its base manifests is Ready, and the pod stand-in cannot run them all:\n  {}",
            s.version,
            missing.join("\n  ")
        )));
    }
    Ok(images)
}

/// How a run goes (the CLI maps its flags onto it).
#[derive(Debug, Clone)]
pub struct Options {
    pub pins: Pins,
    pub version: CiliumVersion,
    /// Where `report.yaml`, `suite.log`, `comparison.md` and `comparison.json` go.
    pub out: PathBuf,
    /// Only this test (the suite's `--run-test`).
    pub run_test: Option<String>,
    /// Run the suite's traffic tests too, through Cilium's own agent ([`TRAFFIC_EMULATED`]).
    pub traffic: bool,
    pub settings: crate::run::Settings,
}

/// Why a run did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// Bad input or something missing to build (exit 2): the message says what and how.
    #[error("{0}")]
    Input(String),
    /// The control plane did not come up, or the suite could not be started (exit 1).
    #[error("{0}")]
    Run(String),
}

/// A finished run.
#[derive(Debug)]
pub struct Finished {
    pub comparison: Comparison,
    pub results: Results,
    /// The suite's own report (`None` when it stopped before writing one).
    pub report: Option<Report>,
    pub suite_version: String,
    pub seconds: f64,
    /// Every test that ran passed, and the suite itself did not fail.
    pub passed: bool,
    /// The comparison as text, for standard output.
    pub text: String,
    pub files: Vec<PathBuf>,
}

/// The flags one run passes to the suite. `warm`: on a warm plane, which outlives the run, the
/// suite removes its base resources (namespaces, Gateways, backends) at the end, where Cilium's
/// job keeps them (`--cleanup-base-resources=false`); no test reads that flag.
pub fn suite_args(
    version: &CiliumVersion,
    profiles: &[String],
    skips: &[Skip],
    report: &Path,
    run_test: Option<&str>,
    warm: bool,
) -> Vec<String> {
    let mut a: Vec<String> = ["-test.v", "-test.run=^TestConformance$", "-test.timeout=29m"].map(String::from).to_vec();
    a.extend(
        CILIUM_FLAGS.iter().map(|f| {
            if warm && *f == "--cleanup-base-resources=false" { "--cleanup-base-resources=true".to_string() } else { f.to_string() }
        }),
    );
    a.push(format!("--version=v{version}"));
    a.push(format!("--conformance-profiles={}", profiles.join(",")));
    a.push(format!("--skip-tests={}", skips.iter().map(|s| s.test.as_str()).collect::<Vec<_>>().join(",")));
    a.push(format!("--report-output={}", report.display()));
    if let Some(t) = run_test {
        a.push(format!("--run-test={t}"));
    }
    a
}

/// How many of the agent's last log lines the traffic run keeps (`agent.log`).
const AGENT_LOG_LINES: usize = 2000;

/// Replaces `--all-features` in `args` by `--supported-features=` every feature of `declared`
/// (each with the file of the suite's `pkg/features` that declares it) but the mesh ones.
fn all_features_but_mesh(args: &mut [String], declared: &[(String, String)]) {
    let without_mesh: Vec<&str> = declared.iter().filter(|(_, file)| file != skips::MESH_FEATURES_FILE).map(|(f, _)| f.as_str()).collect();
    for a in args.iter_mut().filter(|a| *a == "--all-features") {
        *a = format!("--supported-features={}", without_mesh.join(","));
    }
}

/// The most of the suite's output kept in memory to read the results from (it is all in
/// `suite.log`).
const LOG_KEPT: usize = 64 << 20;

/// Runs the suite binary with `args` against `kubeconfig`, its output into `log` and each
/// test's result said on standard error as it comes; returns the output kept.
fn run_suite(binary: &Path, args: &[String], kubeconfig: &Path, workdir: &Path, log: &Path) -> Result<String, String> {
    let mut file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let reader = crate::child::dies_with_parent(duct::cmd(binary, args))
        .env("KUBECONFIG", kubeconfig)
        .dir(workdir)
        .stdin_null()
        .stderr_to_stdout()
        .unchecked()
        .reader()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let mut reader = std::io::BufReader::new(reader);
    let mut kept = String::new();
    let mut line = Vec::new();
    let (mut passed, mut failed) = (0, 0);
    loop {
        line.clear();
        // One line at a time, at most 1 MiB each (a longer one is cut; the file keeps it all).
        let n = std::io::Read::take(&mut reader, 1 << 20)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("reading the suite's output: {e}"))?;
        if n == 0 {
            break;
        }
        file.write_all(&line).map_err(|e| format!("{}: {e}", log.display()))?;
        let text = String::from_utf8_lossy(&line);
        let t = text.trim();
        for (word, what) in [("--- PASS: TestConformance/", "passed"), ("--- FAIL: TestConformance/", "FAILED")] {
            if let Some(rest) = t.strip_prefix(word)
                && let Some(name) = rest.split(' ').next().filter(|n| !n.contains('/'))
            {
                if what == "passed" {
                    passed += 1;
                } else {
                    failed += 1;
                }
                eprintln!("layout-gate conformance: {name}: {what} ({passed} passed, {failed} failed so far)");
            }
        }
        if kept.len() + text.len() <= LOG_KEPT {
            kept.push_str(&text);
        }
    }
    Ok(kept)
}

/// One whole run: the suite found, the skips decided, the plane up, the suite run, the report
/// read and compared, the files written.
pub fn run(opts: &Options) -> Result<Finished, ConformanceError> {
    let v = &opts.version;
    let started = std::time::Instant::now();
    let suite = suite::find(&opts.pins, v).map_err(ConformanceError::Input)?;
    let workflow = crate::input::read_text(&suite.cilium_dir.join(skips::WORKFLOW), crate::input::DOCUMENT)
        .map_err(|e| ConformanceError::Input(e.to_string()))?;
    let profiles = skips::profiles(&workflow)
        .ok_or_else(|| ConformanceError::Input(format!("cilium@v{v}:{} names no --conformance-profiles", skips::WORKFLOW)))?;
    let cilium_skips = skips::check_cilium_skips(v, &suite.cilium_dir).map_err(ConformanceError::Input)?;
    let tests = skips::traffic_tests(&suite.suite_dir).map_err(ConformanceError::Input)?;
    let status_go = crate::input::read_text(&suite.cilium_dir.join(skips::CILIUM_GATEWAYCLASS), crate::input::DOCUMENT)
        .map_err(|e| ConformanceError::Input(e.to_string()))?;
    let known: std::collections::BTreeSet<String> = tests.features.values().flatten().cloned().collect();
    let exempt = skips::exempt_features(&status_go, &known)
        .map_err(|e| ConformanceError::Input(format!("cilium@v{v}:{}: {e}", skips::CILIUM_GATEWAYCLASS)))?;
    let honoured = skips::all_features_honour_exempt(&suite.suite_dir).map_err(ConformanceError::Input)?;
    let (exempt_features, exempt_skips) = skips::exempt(v, &exempt, &tests, honoured);
    let skips = if opts.traffic {
        let out = skips::left_out_of_traffic(&suite.suite_dir, &tests).map_err(ConformanceError::Input)?;
        skips::all_with(cilium_skips, exempt_skips, &out)
    } else {
        skips::all(cilium_skips, exempt_skips, &tests.traffic)
    };
    let skips = skips::uncounted(skips, &tests, &exempt);
    // The traffic run's agent step: Cilium's own, refused before anything starts when it is
    // not built (with the command that builds it).
    let agent = match opts.traffic {
        true => Some(crate::lanes::operator::binaries::find_agent(&opts.pins, v).map_err(|e| ConformanceError::Input(e.to_string()))?),
        false => None,
    };
    let (published_file, published_source, published_text) = compare::published_for(v).ok_or_else(|| {
        ConformanceError::Input(format!("no published Cilium conformance report for the {}.{} line", v.parts().0, v.parts().1))
    })?;
    let published = Report::parse(published_text, published_file).map_err(ConformanceError::Input)?;
    crate::output::dest::ensure_dir(&opts.out).map_err(|e| ConformanceError::Input(e.to_string()))?;
    eprintln!(
        "layout-gate conformance: Cilium {v}: suite {} ({} tests declared; {} skipped by name; {} send traffic{}), profiles {}; features left out as Cilium's GatewayClass status leaves them out: {}",
        suite.version,
        tests.declared,
        skips.len(),
        tests.traffic.len(),
        if opts.traffic { ", run through Cilium's own agent" } else { ", skipped: no data plane" },
        profiles.join(","),
        if honoured {
            exempt.join(",")
        } else {
            format!(
                "none by flag (suite {} ignores --exempt-features beside --all-features; their tests are skipped by name)",
                suite.version
            )
        }
    );

    // The traffic tests' backends are the suite's own pods.
    let needs_pods = opts.traffic || suite::needs_pods(&suite.suite_dir).map_err(ConformanceError::Input)?;
    let images = if needs_pods { Some(images(&opts.pins, v, &suite)?) } else { None };
    let (profiles, left_out) = match &images {
        Some(images) => mesh_left_out(profiles, images, &suite)?,
        None => (profiles, Vec::new()),
    };
    for (p, why) in &left_out {
        eprintln!("layout-gate conformance: Cilium {v}: profile {p} left out: {why}");
    }
    let setup = session::setup(&opts.pins, v.clone(), "--cilium flag".into(), &[], &opts.settings)
        .map_err(|e| ConformanceError::Input(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ConformanceError::Run(format!("starting the async runtime: {e}")))?;
    let run_id = crate::evidence::run_id(Lane::Operator, Some(&v.to_string()), Some(WHO));
    let mut log = PhaseLog::default();
    let mut d = LiveDriver::new(Progress::from_env(), setup.timeouts);
    let plane = runtime
        .block_on(async {
            if needs_pods {
                // A warm plane runs neither the workload controllers nor the pod stand-in.
                d.progress().note(&format!(
                    "layout-gate conformance: Cilium {v}: suite {}'s setup waits for Ready pods: a control plane of its own with kube-controller-manager's workload controllers, and the pod stand-in",
                    suite.version
                ));
                up::start_with(&mut d, &setup, &run_id, &mut log, Controllers::Workloads).await.map(|(cp, _)| up::OperatorUp::Own(Box::new(cp)))
            } else {
                up::attach_or_start(&mut d, &setup, &run_id, &mut log, Some(WHO)).await
            }
        })
        .map_err(|e| ConformanceError::Run(format!("Cilium {v}'s control plane did not come up: {}: {}", e.phase, e.problem)))?;
    let plane_ready = started.elapsed().as_secs_f64();
    let kubeconfig = plane.kube().kubeconfig.clone().ok_or_else(|| ConformanceError::Run("the control plane has no kubeconfig".into()))?;
    let work = crate::scratch::Scratch::new(crate::scratch::CONFORMANCE).map_err(|e| ConformanceError::Run(format!("work folder: {e}")))?;
    let stand_in = match images {
        Some(images) => {
            let pods_dir = work.path().join("pods");
            let target = plane.kube().clone();
            let started = runtime.block_on(async {
                let kube = Kube::connect(&target, setup.timeouts.control_plane_start, setup.timeouts.api_request.limit)
                    .await
                    .map_err(|e| e.to_string())?;
                PodStandIn::start(kube.client(), images, &pods_dir).await.map_err(|e| e.to_string())
            });
            let s = started.map_err(|e| ConformanceError::Run(format!("the pod stand-in did not start: {e}")))?;
            eprintln!("layout-gate conformance: Cilium {v}: the pod stand-in binds pods to Node {} and runs them in {}", s.node, s.net);
            Some(s)
        }
        None => None,
    };
    // Cilium's agent, its bridge and Envoy are up before the suite writes its first Gateway:
    // an update made while no Envoy is connected is completed by the agent unanswered.
    let agent = match agent {
        Some(binaries) => {
            let started = runtime.block_on(crate::lanes::operator::real_agent::RealAgent::start(
                &mut d,
                &kubeconfig,
                binaries,
                WHO,
                setup.probe_timeouts.envoy_ready.limit,
            ));
            let a = started.map_err(|e| ConformanceError::Run(format!("Cilium's agent did not start: {e}")))?;
            eprintln!(
                "layout-gate conformance: Cilium {v}: Cilium's own agent {} up in {} ms (Node {}), its bridge and Envoy serving; the suite's traffic runs through it",
                a.binaries.agent.build.version, a.start_ms, a.node
            );
            Some(a)
        }
        None => None,
    };
    // The stand-in for the agent's BPF load balancer (traffic runs only): Cilium 1.20 serves L4
    // routes with it, not Envoy; at 1.19 every Gateway's frontend is the proxy's, and it binds
    // nothing.
    let l4_log = opts.out.join("l4-rules.jsonl");
    let _ = std::fs::remove_file(&l4_log);
    let l4 = match (&agent, plane.own()) {
        (Some(a), Some(cp)) => {
            let dump = a.dump_socket().to_path_buf();
            let block = cp.pool_block();
            let started = runtime.block_on(async { crate::lanes::operator::l4::L4StandIn::start(dump, block, &l4_log) });
            let s = started.map_err(|e| ConformanceError::Run(format!("the L4 stand-in did not start: {}: {e}", l4_log.display())))?;
            eprintln!(
                "layout-gate conformance: Cilium {v}: the L4 stand-in (emulated, not Cilium's BPF) forwards the agent's L4 frontends in {block} ({})",
                l4_log.display()
            );
            Some(s)
        }
        _ => None,
    };
    let report_path = opts.out.join("report.yaml");
    let _ = std::fs::remove_file(&report_path);
    let mut args = suite_args(v, &profiles, &skips, &report_path, opts.run_test.as_deref(), plane.own().is_none());
    if !left_out.is_empty() && !honoured {
        // This suite's `--all-features` ignores `--exempt-features`, and it applies its mesh
        // manifests and waits for their pods whenever `Mesh` is supported
        // (`utils/suite/suite.go: Setup`): every feature the suite declares but the mesh ones,
        // named, is what `--all-features` with `Mesh` exempt would be.
        let all = skips::declared_features(&suite.suite_dir).map_err(ConformanceError::Input)?;
        all_features_but_mesh(&mut args, &all);
    }
    let mut exempt_flag: Vec<String> = exempt_features.iter().map(|(f, _)| f.clone()).collect();
    if !left_out.is_empty() && honoured {
        // `--all-features` supports every feature but those exempt, and the suite's mesh setup
        // runs whenever the feature `Mesh` is supported, whatever the profiles
        // (`conformance@v1.6.1:utils/suite/suite.go: Setup`).
        exempt_flag.push(MESH_FEATURE.to_string());
    }
    if !exempt_flag.is_empty() {
        args.push(format!("--exempt-features={}", exempt_flag.join(",")));
    }
    eprintln!("layout-gate conformance: Cilium {v}: control plane ready after {plane_ready:.1}s; running the suite");
    let suite_started = std::time::Instant::now();
    let log_path = opts.out.join("suite.log");
    let output = run_suite(&suite.binary.path, &args, &kubeconfig, work.path(), &log_path);
    let suite_seconds = suite_started.elapsed().as_secs_f64();
    let mut environment = plane.environment().clone();
    // The agent's side of the evidence outlives its work folder: every xDS message both ways
    // as the bridge logged it (no private key), and the agent's log tail.
    let mut agent_files = Vec::new();
    let l4_ran = l4.is_some();
    if let Some(s) = l4 {
        runtime.block_on(s.stop());
        agent_files.push(l4_log.clone());
    }
    if let Some(a) = agent {
        environment.extend(a.environment());
        let bridge = opts.out.join("xds-bridge.jsonl");
        let agent_log = opts.out.join("agent.log");
        let copied =
            std::fs::copy(a.bridge_log(), &bridge).map(|_| ()).and_then(|()| std::fs::write(&agent_log, a.log_tail(AGENT_LOG_LINES)));
        match copied {
            Ok(()) => agent_files.extend([bridge, agent_log]),
            Err(e) => eprintln!("layout-gate conformance: Cilium {v}: keeping the agent's logs in {}: {e}", opts.out.display()),
        }
        drop(a);
    }
    if let Some(s) = stand_in {
        runtime.block_on(s.stop());
    }
    let stopped = plane.shut_down();
    drop(runtime);
    eprintln!("layout-gate conformance: Cilium {v}: {stopped}");
    let output = output.map_err(ConformanceError::Run)?;

    let results = results::parse(&output);
    let report = match crate::input::read_text(&report_path, crate::input::DOCUMENT) {
        Ok(text) => Some(Report::parse(&text, &report_path.display().to_string()).map_err(ConformanceError::Run)?),
        Err(_) => None,
    };
    // The suite stopped before its tests (its setup failed): suite v1.6.2 still writes a report,
    // without profiles; it is kept, and compared as no report.
    let stopped = results.tests.is_empty() && results.whole != Some(Outcome::Pass);
    let compared = if stopped { None } else { report.as_ref() };
    let compared = compare::Run {
        report: compared,
        results: &results,
        skips: &skips,
        traffic: &tests.traffic,
        version: v,
        features: &tests.features,
        l4_stand_in: l4_ran,
    };
    let comparison = compare::compare(&compared, &published, (published_file, published_source));
    let failed = results.tests.values().any(|o| *o == Outcome::Fail);
    let passed = !failed && !stopped && results.whole == Some(Outcome::Pass) && report.is_some();
    let seconds = started.elapsed().as_secs_f64();

    let evidence = serde_json::json!({
        "schema": "layout-gate-conformance",
        "cilium": v.to_string(),
        "lane": "operator",
        "real": REAL,
        "emulated": emulated(opts.traffic, needs_pods, l4_ran),
        "traffic": opts.traffic,
        "suite": {
            "version": suite.version,
            "module": suite.binary.build.source(),
            "binary": suite.binary.path,
            "binary_sha256": suite.binary.build.binary_sha256,
            "args": args,
        },
        "profiles": profiles,
        "profiles_left_out": left_out.iter().map(|(p, why)| serde_json::json!({"profile": p, "why": why})).collect::<Vec<_>>(),
        "skipped_by_name": skips,
        "features_exempt": exempt_features.iter().map(|(f, why)| serde_json::json!({"feature": f, "why": why})).collect::<Vec<_>>(),
        "control_plane": environment,
        "phases": log.phases.iter().map(|p| (p.name.clone(), p.duration_ms)).collect::<Vec<_>>(),
        "seconds": {"plane": plane_ready, "suite": suite_seconds, "all": seconds},
        "passed": passed,
        "setup_errors": if stopped { results.setup_errors.clone() } else { Vec::new() },
        "comparison": comparison,
    });
    let text = text(v, &suite.version, &comparison, &results, !stopped, suite_seconds, opts.traffic);
    let mut files = vec![log_path];
    files.extend(agent_files);
    let json_path = opts.out.join("comparison.json");
    let md_path = opts.out.join("comparison.md");
    for (path, body) in [(&json_path, format!("{evidence:#}\n")), (&md_path, markdown(v, &suite.version, &comparison, &text))] {
        crate::case::edit::write_atomically(path, &body).map_err(|e| ConformanceError::Run(format!("{}: {e}", path.display())))?;
        files.push(path.clone());
    }
    if report.is_some() {
        files.push(report_path);
    }
    Ok(Finished { comparison, results, report, suite_version: suite.version, seconds, passed, text, files })
}

/// The comparison as plain text (no ANSI): counts, each finding, the profiles.
pub fn text(v: &CiliumVersion, suite: &str, c: &Comparison, r: &Results, ran: bool, seconds: f64, traffic: bool) -> String {
    let count = |o: Outcome| r.tests.values().filter(|x| **x == o).count();
    let by_kind = |k: compare::Kind| c.tests.iter().filter(|t| t.kind == k).count();
    let mut s = format!(
        "Gateway API conformance suite {suite} against Cilium {v}'s operator (operator lane; {})\n\
         ran {} tests in {seconds:.0}s: {} passed, {} failed; {} skipped by name; {} not compared (skipped by the suite itself, or not counted in the published report)\n",
        if traffic {
            "traffic through Cilium's own agent, upstream Envoy 1.40 and the suite's own pods in the run's network"
        } else {
            "no data plane: traffic tests skipped by name"
        },
        count(Outcome::Pass) + count(Outcome::Fail),
        count(Outcome::Pass),
        count(Outcome::Fail),
        c.tests.iter().filter(|t| matches!(t.here, compare::Here::Skipped(_))).count(),
        c.not_selected,
    );
    if !ran {
        s.push_str("the suite stopped before its tests (its setup failed)");
        if let Some(e) = r.setup_errors.iter().rev().find(|l| l.contains("Messages:") || l.contains("error waiting")) {
            s.push_str(&format!(": {}", e.trim_start_matches("Messages:").trim()));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "against {} ({}): {} passed on both, {} passed here only, {} passed there only, {} passed on neither\n",
        c.published,
        c.published_source,
        by_kind(compare::Kind::PassedOnBoth),
        by_kind(compare::Kind::PassedHereOnly),
        by_kind(compare::Kind::PassedThereOnly),
        by_kind(compare::Kind::PassedOnNeither),
    ));
    let mut rows: Vec<Vec<String>> = vec![vec!["profile".into(), "here".into(), "published".into()]];
    rows.extend(c.profiles.iter().map(|p| {
        let st = |x: Option<results::Statistics>| {
            x.map(|x| format!("{} passed, {} failed, {} skipped", x.passed, x.failed, x.skipped)).unwrap_or_else(|| "-".into())
        };
        vec![p.profile.clone(), st(p.here), st(p.there)]
    }));
    s.push_str(&crate::table::render(&rows));
    let not_data_plane: Vec<&String> = c.findings.iter().filter(|f| !f.contains(skips::NEEDS_DATA_PLANE)).collect();
    let data_plane = c.findings.len() - not_data_plane.len();
    if data_plane > 0 {
        s.push_str(&format!(
            "{data_plane} tests passed there only, skipped here because each {} (comparison.md lists them)\n",
            skips::NEEDS_DATA_PLANE
        ));
    }
    for f in not_data_plane {
        s.push_str(&format!("FINDING: {f}\n"));
    }
    s
}

/// `comparison.md`: the text, then every test in a table.
fn markdown(v: &CiliumVersion, suite: &str, c: &Comparison, text: &str) -> String {
    let mut s = format!(
        "# Gateway API conformance {suite} on Cilium {v} (operator lane)\n\n```\n{text}```\n\n| test | here | published | |\n|---|---|---|---|\n"
    );
    for t in &c.tests {
        let here = match &t.here {
            compare::Here::Passed => "passed".to_string(),
            compare::Here::Failed => "FAILED".to_string(),
            compare::Here::NotRun => "not run".to_string(),
            compare::Here::Skipped(why) => format!("skipped: {why}"),
        };
        s.push_str(&format!(
            "| {} | {} | {:?} | {} |\n",
            crate::markdown::cell(&t.test),
            crate::markdown::cell(&here),
            t.there,
            t.kind.words()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_gets_ciliums_flags_and_cleans_up_only_on_a_warm_plane() {
        let v = CiliumVersion::parse("1.19.6").unwrap();
        let skips = vec![
            Skip { test: "A".into(), why: "x".into(), counted_there: true },
            Skip { test: "B".into(), why: "y".into(), counted_there: true },
        ];
        let own = suite_args(&v, &["GATEWAY-HTTP".into(), "MESH-HTTP".into()], &skips, Path::new("/o/report.yaml"), None, false);
        for f in [
            "--gateway-class=cilium",
            "--all-features",
            "--allow-crds-mismatch",
            "--cleanup-base-resources=false",
            "--version=v1.19.6",
            "--conformance-profiles=GATEWAY-HTTP,MESH-HTTP",
            "--skip-tests=A,B",
            "--report-output=/o/report.yaml",
        ] {
            assert!(own.iter().any(|a| a == f), "{f} not in {own:?}");
        }
        let warm = suite_args(&v, &[], &skips, Path::new("r"), Some("A"), true);
        assert!(warm.iter().any(|a| a == "--cleanup-base-resources=true") && warm.iter().any(|a| a == "--run-test=A"), "{warm:?}");
    }

    /// Suite v1.4.0-rc.2 applies its mesh manifests and waits for their pods whenever `Mesh` is
    /// supported, and its `--all-features` ignores `--exempt-features`: with the pods the
    /// traffic run needs, the mesh profiles are left out by naming every other feature.
    #[test]
    fn the_mesh_features_are_left_out_by_naming_every_other_one() {
        let v = CiliumVersion::parse("1.19.6").unwrap();
        let mut args = suite_args(&v, &["GATEWAY-HTTP".into()], &[], Path::new("r"), None, false);
        let declared: Vec<(String, String)> =
            [("Gateway", "gateway.go"), ("Mesh", "mesh.go"), ("HTTPRoute", "httproute.go"), ("MeshConsumerRoute", "mesh.go")]
                .map(|(f, file)| (f.to_string(), file.to_string()))
                .to_vec();
        all_features_but_mesh(&mut args, &declared);
        assert!(!args.iter().any(|a| a == "--all-features"), "{args:?}");
        assert_eq!(
            args.iter().filter(|a| a.starts_with("--supported-features=")).collect::<Vec<_>>(),
            ["--supported-features=Gateway,HTTPRoute"]
        );
    }
}
