//! `check`'s types, below its orchestration: how to check ([`Options`], [`OperatorCheck`]),
//! what it finds ([`GatewayCheck`], [`VersionResult`] and its rows) and why it could not
//! ([`CheckError`]). Every room of `check/` and every caller outside reads these; none of them
//! calls back up into the orchestration.

use std::collections::BTreeMap;

use serde::Serialize;

use super::answer::{self, Reply};
use super::derive::{Derived, MatrixKey};
use super::observe::EnvoyPlan;
use super::read;
use crate::case::CiliumVersion;
use crate::evidence::Lane;
use crate::judge::ConditionObs;
use crate::lanes::model;
use crate::lanes::operator::batch::Batch;
use crate::run::{Settings, Timeouts};
use crate::types::{CertName, Port};
use crate::versions::Pins;

/// How to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The versions, each with where it came from.
    pub versions: Vec<(CiliumVersion, String)>,
    /// Observe the matrix on a real local Envoy (`false`: compute it from the chains).
    pub envoy: bool,
    pub timeouts: Timeouts,
    /// A referenced Secret or Service the input lacks is missing (`--complete`), not stood in.
    pub complete: bool,
    /// How many Envoys serve the versions.
    pub plan: EnvoyPlan,
    /// Versions the model has not been checked at -> the checked version whose behaviour is
    /// predicted for each (`--assume-like`); every output says so.
    pub assume: BTreeMap<CiliumVersion, CiliumVersion>,
    /// Names to probe on every port besides the ones the layout claims (`--sni`).
    pub extra_sni: Vec<crate::types::Sni>,
    /// Answer with Cilium's own operator at each version (`--lane operator`) instead of the
    /// model; `None`: the model.
    pub operator: Option<OperatorCheck>,
    /// Each input file is a layout of its own (`derive::DeriveOptions::each_file`).
    pub each_file: bool,
}

impl Options {
    /// The model at `versions`, answers computed from the chains (no Envoy), nothing assumed or
    /// added, the default waits; `complete` as `--complete`.
    pub fn computed(versions: Vec<(CiliumVersion, String)>, complete: bool) -> Result<Options, crate::run::TimeoutsError> {
        Ok(Options {
            versions,
            envoy: false,
            timeouts: timeouts()?,
            complete,
            plan: EnvoyPlan::Shared,
            assume: BTreeMap::new(),
            extra_sni: Vec::new(),
            operator: None,
            each_file: false,
        })
    }

    /// The version whose behaviour is predicted for `v`.
    pub fn behaviour<'a>(&'a self, v: &'a CiliumVersion) -> &'a CiliumVersion {
        self.assume.get(v).unwrap_or(v)
    }
}

/// `check`'s waits: the model lane's, except that one observation confirms a key. `check`
/// probes only once its Envoy's listeners are ready ([`observe`]), and a ready static local
/// Envoy answers the same ClientHello the same way every time; the catalogue's model runs keep
/// the conformance suite's 3. Every setting (`LAYOUT_GATE_CONSECUTIVE`, ...) still wins.
pub fn check_defaults() -> Timeouts {
    let mut t = model::model_defaults();
    t.consecutive.value = std::num::NonZeroU32::MIN;
    t
}

/// [`check_defaults`], overridden by the environment.
pub fn timeouts() -> Result<Timeouts, crate::run::TimeoutsError> {
    Timeouts::from_lookup_over(check_defaults(), |k| std::env::var(k).ok())
}

/// What `check --lane operator` needs beyond the model's options: the pins (each version's
/// chart, CRDs and operator build) and the named waits.
#[derive(Debug, Clone)]
pub struct OperatorCheck {
    pub pins: Pins,
    pub settings: Settings,
    /// How many Gateways' cases run on one control plane at once (`--batch`).
    pub batch: Batch,
    /// Where each version's times are told (the differential's report and its benchmark).
    pub timings: Timings,
    /// Control planes the caller started ahead for versions it will ask about (`differential`
    /// over several versions); a version with none here brings its own up.
    pub ahead: crate::lanes::operator::up::Ahead,
}

/// How long one version took: its control plane to come up, then every case on it.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionTiming {
    pub version: CiliumVersion,
    pub control_plane: std::time::Duration,
    pub cases: std::time::Duration,
    pub batch: Batch,
    /// Whose agent step answered ([`crate::lanes::operator::plane::AgentStep::describe`]).
    pub agent_step: String,
}

/// Each version's [`VersionTiming`], as the versions finish; clones share them.
#[derive(Debug, Clone, Default)]
pub struct Timings(std::sync::Arc<std::sync::Mutex<Vec<VersionTiming>>>);

impl Timings {
    pub(super) fn push(&self, t: VersionTiming) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(t);
    }
    /// Every version's timing so far.
    pub fn all(&self) -> Vec<VersionTiming> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// Why a check could not be made (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Input(#[from] read::InputError),
    /// The model refuses the input: located in the user's file.
    #[error("{0}")]
    Model(String),
    /// The derived case does not load: a bug of the derivation, shown with the case text.
    #[error("the case derived from the input does not load (a layout-gate bug; please report it): {0}")]
    Derived(String),
    #[error("{0}")]
    Io(String),
}

/// One Envoy listener of the prediction, and what the real Envoy said of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvoyRow {
    pub name: String,
    pub ports: Vec<Port>,
    pub chains: Vec<ChainRow>,
    /// `active`, `error` ...: from the real Envoy's dump (absent with `--no-envoy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Envoy's refusal (observed), or the duplicate match that would make Envoy refuse it
    /// (`--no-envoy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many filter chains the real Envoy carries for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_chains: Option<usize>,
    /// The model rule that laid the listener out (`single-listener`, `per-port-split`).
    pub rule: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainRow {
    pub server_names: Vec<String>,
    pub transport: &'static str,
    /// `terminate Secret X -> HTTP`, `passthrough -> backend api`, `HTTP`.
    pub action: String,
}

/// The prediction for one Gateway on one version.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionResult {
    pub version: String,
    pub gateway: Vec<ConditionObs>,
    /// In the Gateway's listener order.
    pub listeners: Vec<(String, Vec<ConditionObs>)>,
    /// (route, parent, conditions).
    pub routes: Vec<(String, String, Vec<ConditionObs>)>,
    pub envoy: Vec<EnvoyRow>,
    /// Why the agent would refuse the whole CiliumEnvoyConfig.
    pub cec_rejected: Option<String>,
    pub answers: Vec<(MatrixKey, Reply)>,
    /// Keys where the real Envoy answered otherwise than the chains say (computed reply).
    pub chains_disagree: Vec<(MatrixKey, Reply)>,
    /// Keys the model says may get any of several replies (a weighted pick, or an order Cilium
    /// does not fix), with every one of them: any is Cilium's answer. Empty on the operator
    /// lane, whose answers are what one run of Cilium gave.
    pub may_answer: Vec<answer::MayAnswer>,
    /// Why this version could not be observed.
    pub error: Option<String>,
    /// The other versions whose Envoy configuration is byte-identical to this one's: one Envoy
    /// served them all, and its answers are each one's (empty with `--no-envoy`).
    pub shared_envoy: Vec<String>,
    /// The checked version whose behaviour was predicted for this unchecked one
    /// (`--assume-like`).
    pub assumed_like: Option<String>,
    /// Why each conflicted or refused listener is so (the model's rules).
    pub why: Vec<WhyRow>,
    /// The ids of the Gateway-level rules that shaped the prediction (the model's notes), so a
    /// verdict can name the rules that hold here and not on the baseline.
    pub rules: Vec<String>,
    /// Who answered: the model, or Cilium's own operator (`check --lane operator`).
    pub answered_by: Lane,
    /// The operator's dependencies built at another version than its tag requires (the heads
    /// `module required -> substitute` its evidence names, issue #24); empty for the model.
    pub substituted: Vec<String>,
    /// Objects the API server refuses at this version, its message in the input's own names: the
    /// model predicts them from the CRD schema, the operator lane records them. They do not
    /// exist, so they have no conditions above.
    pub refused: Vec<crate::judge::Refused>,
    /// Whose agent step turned the operator's CiliumEnvoyConfig into what Envoy served
    /// (`check --lane operator`): Cilium's own agent, or the emulated one and why; `None` for
    /// the model.
    pub agent_step: Option<String>,
}

/// Whether `key` is answered the same by version `a` (`was`) and `b` (`now`): the same reply,
/// or both may give any of the same several replies (a weighted pick, an order Cilium does not
/// fix), so two picks of one set are no change between versions.
pub fn same_answer(a: &VersionResult, b: &VersionResult, key: &MatrixKey, was: &Reply, now: &Reply) -> bool {
    if was == now {
        return true;
    }
    match (a.may(key), b.may(key)) {
        (Some(x), Some(y)) => x == y && x.contains(was) && y.contains(now),
        _ => false,
    }
}

impl VersionResult {
    /// A result at `version`, answered by `answered_by`, with nothing in it yet. Every result
    /// starts here (the model's prediction, the operator's answer, a test's), so a field added
    /// to VersionResult is defaulted in one place.
    pub fn new(version: impl Into<String>, answered_by: Lane) -> VersionResult {
        VersionResult {
            version: version.into(),
            gateway: Vec::new(),
            listeners: Vec::new(),
            routes: Vec::new(),
            envoy: Vec::new(),
            cec_rejected: None,
            answers: Vec::new(),
            chains_disagree: Vec::new(),
            may_answer: Vec::new(),
            error: None,
            shared_envoy: Vec::new(),
            assumed_like: None,
            why: Vec::new(),
            rules: Vec::new(),
            answered_by,
            substituted: Vec::new(),
            refused: Vec::new(),
            agent_step: None,
        }
    }

    /// A model answer at `version` with nothing in it yet: the start of a test's result.
    #[cfg(test)]
    pub(crate) fn blank(version: &str) -> VersionResult {
        VersionResult::new(version, Lane::Model)
    }

    /// The replies `key` may get when the model says it is one of several (`may_answer`).
    pub fn may(&self, key: &MatrixKey) -> Option<&[Reply]> {
        self.may_answer.iter().find(|m| &m.key == key).map(|m| m.replies.as_slice())
    }
}

/// One cause on one version, ready to print and to serialise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyRow {
    pub listeners: Vec<String>,
    /// `conflict` or `refused`.
    pub kind: &'static str,
    /// The conflict's reason (`ProtocolConflict`), or the refusal's conditions.
    pub reason: String,
    /// For a conflict: each listener it meets, and the hostname where they meet.
    pub meets: Vec<Meets>,
    /// Cilium's own message(s) on the listener.
    pub messages: Vec<String>,
    pub rule: &'static str,
    pub rule_versions: &'static str,
    /// The upstream function the rule mirrors on this version, at a tag and commit.
    pub upstream: String,
    /// Catalogue cases (`cases/NAME`) that show a layout without it.
    pub without: Vec<String>,
    /// The human text: a headline, then indented details.
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Meets {
    pub listener: String,
    pub hostname: String,
}

/// Everything `check` found for one Gateway.
#[derive(Debug, Clone)]
pub struct GatewayCheck {
    pub derived: Derived,
    pub versions: Vec<VersionResult>,
}

impl GatewayCheck {
    /// How a certificate of the run is named in results.
    pub fn label(&self, cert: &CertName) -> String {
        self.derived.cert(cert).map(|c| c.label()).unwrap_or_else(|| cert.to_string())
    }

    /// How a backend that named itself in an HTTP answer is named in results: `backend web`, or
    /// `backend NAMESPACE/web` for a Service in another namespace than the Gateway's.
    pub fn backend_label(&self, name: &str) -> String {
        match self.derived.backend_namespaces.iter().find(|(b, _)| b.as_str() == name) {
            Some((_, ns)) => format!("backend {ns}/{name}"),
            None => format!("backend {name}"),
        }
    }
}

/// How `check` names a refused object: `TLSRoute api: 422 Invalid: <the API server's message>`.
pub fn refused_line(r: &crate::judge::Refused) -> String {
    format!("{} {}: {} {}: {}", r.kind, r.name, r.code, r.reason, r.message)
}
