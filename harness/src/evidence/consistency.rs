//! What cannot agree in a forged evidence file. A run's lane, Cilium version, environment,
//! certificates, probe addresses, recordings and selected cases are written by different parts
//! of the harness, and each lane writes them its own way: someone who relabels a model run as
//! kind (or a kind run as model, or 1.20.1 as 1.19.5) and reseals the digest must rewrite all
//! of them consistently, and whatever they forget is named here. It catches careless forgery,
//! not a careful one: only an attestation of the archive proves where it came from
//! (docs/evidence.md, "Trusting gate evidence").
//!
//! Every lane is one row of [`shape`]: where its probes connect, which CA issues its
//! certificates, whether its cases carry recordings, whether it names a Cilium version, and
//! which environment keys only it writes. A new lane is a new row (the `match` makes it
//! mandatory).

use std::collections::BTreeSet;
use std::net::SocketAddr;

use serde_json::Value;

use super::rejudge::Mismatch;
use super::{CaseEvidence, Evidence, Lane, RunStatus};
use crate::case::CiliumVersion;

/// Where a lane's probes connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A local Envoy the lane started: loopback only.
    Loopback,
    /// A Gateway's address on a cluster network: never loopback.
    Network,
}

/// Which CA issues the certificates a lane's cases are answered with (the CA's common name is
/// `layout-gate CA <label>`, `render::certs::CertSet::generate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// One CA per run, labelled with the run id.
    RunCa,
    /// One CA per case and version, labelled `<lane> <case> <version>` (and `<lane> <case>
    /// stand-ins` for the Secrets a case's manifests define themselves).
    PerCase,
    /// One fixed label.
    Fixed(&'static str),
}

/// Where a lane's environment names the Cilium version it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionIn {
    /// `cilium <chart> from <repo>`: the chart pinned for the version.
    Chart,
    /// `<version> <channel> <url>`: the Gateway API CRD bundle pinned for the version.
    CrdBundle,
    /// `<image>:v<version> (<image id>)`: the running image's tag.
    ImageTag,
    /// `layout-gate <tool version> model of Cilium <version>`.
    ModelOf,
    /// `github.com/cilium/cilium v<version> h1:...`: the module a binary was built from.
    CiliumModule,
}

/// How every run of one lane looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneShape {
    pub reach: Reach,
    pub issuer: Issuer,
    /// Each case of a run that ran carries the raw recordings `replay` needs; other lanes' never do.
    pub recordings: bool,
    /// The run is about one pinned Cilium version; other lanes name none.
    pub versioned: bool,
    /// Environment keys a run of this lane that ran always writes.
    pub requires: &'static [&'static str],
    /// Environment keys (a trailing `.` is a prefix) only runs of this lane write.
    pub owns: &'static [&'static str],
    /// Environment keys naming the version, and how each names it.
    pub version_in: &'static [(&'static str, VersionIn)],
}

const KIND: LaneShape = LaneShape {
    reach: Reach::Network,
    issuer: Issuer::RunCa,
    recordings: true,
    versioned: true,
    // lanes/kind/lifecycle.rs bring_up: always, once the cluster is up.
    requires: &["cilium_chart", "gateway_api_crds", "helm_values_sha256"],
    owns: &[
        "cilium_chart",
        "gateway_api_crds",
        "helm_values_sha256",
        "kind_node_image",
        "kind_node_kubernetes",
        "lb_ipam_block",
        "cluster",
        "image.cilium-agent",
        "image.cilium-operator",
        "image.cilium-envoy",
        "image.backends.",
    ],
    version_in: &[
        ("cilium_chart", VersionIn::Chart),
        ("gateway_api_crds", VersionIn::CrdBundle),
        ("image.cilium-agent", VersionIn::ImageTag),
    ],
};

const MODEL: LaneShape = LaneShape {
    reach: Reach::Loopback,
    issuer: Issuer::PerCase,
    recordings: false,
    versioned: true,
    // lanes/model/mod.rs run_all.
    requires: &["envoy", "model"],
    owns: &["model", "model_assumed"],
    version_in: &[("model", VersionIn::ModelOf)],
};

const OPERATOR: LaneShape = LaneShape {
    // The Gateway addresses LB-IPAM gives are loopback ones nothing serves: probes go to the
    // local Envoy.
    reach: Reach::Loopback,
    issuer: Issuer::RunCa,
    recordings: true,
    versioned: true,
    // lanes/operator/control_plane.rs start: always, once the control plane is up.
    requires: &["cilium_operator", "cilium_chart", "gateway_api_crds", "helm_values_sha256", "real", "emulated"],
    owns: &[
        "cilium_operator",
        "cilium_operator.",
        "cilium_commit",
        "cilium_chart",
        "gateway_api_crds",
        "helm_values_sha256",
        "lb_ipam_block",
        "cluster",
        "kube_apiserver",
        "etcd",
        "helm",
        "go",
        "operator_config_sha256",
        "operator_overrides",
        "real",
        "emulated",
    ],
    version_in: &[
        ("cilium_operator", VersionIn::CiliumModule),
        ("cilium_chart", VersionIn::Chart),
        ("gateway_api_crds", VersionIn::CrdBundle),
    ],
};

const FIXTURE: LaneShape = LaneShape {
    reach: Reach::Loopback,
    issuer: Issuer::Fixed("fixture"),
    recordings: false,
    versioned: false,
    requires: &["envoy"],
    owns: &[],
    version_in: &[],
};

/// The row of `lane`.
pub fn shape(lane: Lane) -> &'static LaneShape {
    match lane {
        Lane::Kind => &KIND,
        Lane::Operator => &OPERATOR,
        Lane::Model => &MODEL,
        Lane::Fixture => &FIXTURE,
    }
}

/// Every lane, for the keys the others own.
const LANES: [Lane; 4] = [Lane::Kind, Lane::Operator, Lane::Model, Lane::Fixture];

/// What a pinned Cilium version installs (from `kind-config/versions.yaml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub version: CiliumVersion,
    pub chart: String,
    /// `v1.4.1 experimental`.
    pub crd_bundle: String,
}

fn owned_by(key: &str, owns: &[&str]) -> bool {
    owns.iter().any(|o| if o.ends_with('.') { key.starts_with(o) } else { key == *o })
}

/// Every way `ev` contradicts itself or its lane's shape. `pins`: the pinned versions, when
/// known (a version outside them is named).
pub fn check(ev: &Evidence, pins: Option<&[Pinned]>) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let run = |what: String| Mismatch { case: None, what };
    let s = shape(ev.lane);
    let lane = ev.lane.as_str();
    let ran = ev.status == RunStatus::Ran;

    // The version.
    let version = match (&ev.cilium, s.versioned) {
        (Some(c), true) => match CiliumVersion::parse(&c.version) {
            Ok(v) => Some(v),
            Err(e) => {
                out.push(run(e.0));
                None
            }
        },
        (None, true) => {
            out.push(run(format!("a {lane} run names the Cilium version it ran, and this one names none")));
            None
        }
        (Some(c), false) => {
            out.push(run(format!("a {lane} run runs no Cilium, yet this one names Cilium {}", c.version)));
            None
        }
        (None, false) => None,
    };
    let pin = match (&version, pins) {
        (Some(v), Some(pins)) => match pins.iter().find(|p| &p.version == v) {
            Some(p) => Some(p),
            None => {
                let known: Vec<String> = pins.iter().map(|p| p.version.to_string()).collect();
                out.push(run(format!("Cilium {v} is not a pinned version ({}): no run of this layout-gate runs it", known.join(", "))));
                None
            }
        },
        _ => None,
    };

    // The environment: what only other lanes write, what this lane always writes, and the
    // version it names.
    for other in LANES.iter().filter(|l| **l != ev.lane) {
        for key in ev.environment.keys().filter(|k| owned_by(k, shape(*other).owns) && !owned_by(k, s.owns)) {
            out.push(run(format!("the environment has {key:?}, which only {} runs write", other.as_str())));
        }
    }
    if ran {
        for key in s.requires.iter().filter(|k| !ev.environment.contains_key(**k)) {
            out.push(run(format!("the environment lacks {key:?}, which every {lane} run that ran writes")));
        }
    }
    if let Some(v) = &version {
        for (key, how) in s.version_in {
            let Some(value) = ev.environment.get(*key) else { continue };
            if let Some(why) = names_other_version(value, *how, v, pin) {
                out.push(run(format!("the environment's {key:?} is {value:?}: {why}")));
            }
        }
    }

    // Selected cases: each one ran or is named as not run, and nothing else ran.
    if ran {
        match &ev.selected {
            None => {
                out.push(run("the run does not say which cases it selected (`selected`), so a case deleted from it cannot be told".into()))
            }
            Some(selected) => {
                let present: BTreeSet<&str> =
                    ev.cases.iter().map(|c| c.name.as_str()).chain(ev.not_run.iter().map(|c| c.name.as_str())).collect();
                for name in selected.iter().filter(|n| !present.contains(n.as_str())) {
                    out.push(run(format!("case {name} was selected, but the run neither has its result nor says it did not run")));
                }
                for c in ev.cases.iter().filter(|c| !selected.contains(&c.name)) {
                    out.push(Mismatch { case: Some(c.name.clone()), what: "the run has this case's result, but did not select it".into() });
                }
            }
        }
    }

    for c in &ev.cases {
        let case = |what: String| Mismatch { case: Some(c.name.clone()), what };
        match (&c.recording, s.recordings && ran) {
            (None, true) => out.push(case(format!(
                "a {lane} case keeps the raw recordings its verdicts come from, and this one has none: it cannot be replayed"
            ))),
            (Some(_), false) if !s.recordings => {
                out.push(case(format!("a {lane} run records no cluster, yet this case carries kind-lane recordings")))
            }
            _ => {}
        }
        out.extend(addresses(c, s.reach, lane).into_iter().map(case));
        out.extend(issuers(ev, c, s.issuer, version.as_ref()).into_iter().map(case));
    }
    out
}

/// Why `value` (an environment entry) names another version than `v`, or `None`.
fn names_other_version(value: &str, how: VersionIn, v: &CiliumVersion, pin: Option<&Pinned>) -> Option<String> {
    match how {
        VersionIn::Chart => {
            let chart = value.strip_prefix("cilium ").and_then(|r| r.split_whitespace().next()).unwrap_or_default();
            let want = pin.map(|p| p.chart.clone()).unwrap_or_else(|| v.to_string());
            (chart != want).then(|| format!("chart {chart} was installed, where Cilium {v} installs chart {want}"))
        }
        VersionIn::CrdBundle => {
            let want = pin?.crd_bundle.as_str();
            (!value.starts_with(&format!("{want} "))).then(|| format!("Cilium {v} installs the CRD bundle {want}"))
        }
        VersionIn::ImageTag => (!value.contains(&format!(":v{v}"))).then(|| format!("the running image is not tagged v{v}")),
        VersionIn::ModelOf => {
            (!value.ends_with(&format!("model of Cilium {v}"))).then(|| format!("a model of another version than Cilium {v}"))
        }
        VersionIn::CiliumModule => (!value.starts_with(&format!("github.com/cilium/cilium v{v} ")))
            .then(|| format!("the operator was not built from github.com/cilium/cilium v{v}")),
    }
}

/// Probes that went where this lane's probes never go, or whose observations say otherwise.
fn addresses(c: &CaseEvidence, reach: Reach, lane: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in &c.observed.probes {
        match (r.address.parse::<SocketAddr>(), reach) {
            (Err(_), _) => out.push(format!("probe {} went to {:?}, which is not an IP address and port", r.key, r.address)),
            (Ok(a), Reach::Loopback) if !a.ip().is_loopback() => {
                out.push(format!("probe {} went to {}: a {lane} run probes its local Envoy on loopback", r.key, r.address))
            }
            (Ok(a), Reach::Network) if a.ip().is_loopback() || a.ip().is_unspecified() => out.push(format!(
                "probe {} went to {}, a local address: a {lane} run probes the Gateway's address on the cluster network",
                r.key, r.address
            )),
            _ => {}
        }
        for (i, o) in r.observations.iter().enumerate() {
            if let Some(addr) = o.get("addr").and_then(Value::as_str)
                && addr != r.address
            {
                out.push(format!("probe {}: observation {} was made at {addr}, but the probe says it went to {}", r.key, i + 1, r.address));
            }
        }
    }
    out
}

/// The issuer names a case of this lane may be answered with.
fn issuer_names(ev: &Evidence, c: &CaseEvidence, issuer: Issuer, version: Option<&CiliumVersion>) -> Vec<String> {
    let name = |label: &str| format!("CN=layout-gate CA {label}, O=layout-gate");
    match issuer {
        Issuer::RunCa => vec![name(&ev.run_id)],
        Issuer::PerCase => {
            let lane = ev.lane.as_str();
            let v = version.map(ToString::to_string).unwrap_or_default();
            vec![name(&format!("{lane} {} {v}", c.name)), name(&format!("{lane} {} stand-ins", c.name))]
        }
        Issuer::Fixed(label) => vec![name(label)],
    }
}

/// Certificates whose issuer is not the CA this lane's run makes, and presented leaves that
/// contradict the records of the run's certificates.
fn issuers(ev: &Evidence, c: &CaseEvidence, issuer: Issuer, version: Option<&CiliumVersion>) -> Vec<String> {
    let mut out = Vec::new();
    let lane = ev.lane.as_str();
    let ours = issuer_names(ev, c, issuer, version);
    let records: Vec<&crate::render::certs::CertRecord> = ev.certificates.iter().chain(&c.certificates).collect();
    // One line per foreign issuer, naming every certificate it issued.
    let mut foreign: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| !ours.contains(&r.leaf.issuer)) {
        foreign.entry(r.leaf.issuer.as_str()).or_default().push(r.name.as_str());
    }
    for (issued_by, mut names) in foreign {
        names.sort_unstable();
        out.push(format!(
            "certificate(s) {} were issued by {issued_by:?}; a {lane} run's certificates here are issued by {:?}",
            names.join(", "),
            ours[0]
        ));
    }
    let mut seen = BTreeSet::new();
    for p in &c.observed.probes {
        for o in &p.observations {
            let Some(leaf) = o.pointer("/outcome/leaf").filter(|l| l.is_object()) else { continue };
            let text = |k: &str| leaf.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let (issued_by, sha) = (text("issuer"), text("sha256"));
            if issued_by.starts_with("CN=layout-gate CA ") && !ours.contains(&issued_by) && seen.insert(issued_by.clone()) {
                out.push(format!(
                    "probe {} was answered with a certificate issued by {issued_by:?}, not by this {lane} run's CA ({:?})",
                    p.key, ours[0]
                ));
            }
            if let Some(r) = records.iter().find(|r| r.leaf.sha256.hex() == sha)
                && (r.leaf.issuer != issued_by || r.leaf.subject != text("subject"))
                && seen.insert(sha.clone())
            {
                out.push(format!(
                    "probe {} was answered with certificate {} (sha256 {}), but its presented subject and issuer differ from the run's record of it",
                    p.key,
                    r.name,
                    &sha[..12.min(sha.len())]
                ));
            }
        }
    }
    out
}
