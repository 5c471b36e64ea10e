//! `check`: the model lane without a case. Rendered manifests in; a case derived from them in
//! memory ([`derive`], written by [`casefile`] and read back by the case loader); the same model,
//! local Envoy, probe and dump summary as `run --lane model`, one Envoy per distinct
//! configuration, probed once it listens ([`observe`]); out the answer
//! matrix per pinned version and the sentences of what changes between versions ([`outcome`]),
//! as a table, JSON or Markdown ([`format`]). Everything it prints is a model prediction.
//!
//! A thin room over what exists: it imports the case, the model lane, the run glue, the judge
//! and the evidence types; nothing lower imports it.

pub mod answer;
pub mod casefile;
pub mod compare;
pub mod compare_format;
pub mod derive;
pub mod format;
pub mod http_port;
pub mod observe;
pub mod operator;
pub mod outcome;
pub mod read;
pub mod record;
pub mod verdict;
pub mod why;

#[cfg(test)]
mod compare_tests;
#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod namespaces_tests;
#[cfg(test)]
mod plain_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod why_tests;

use std::collections::BTreeMap;
use std::path::Path;

use crate::case::{Case, CiliumVersion};
use crate::judge::ConditionObs;
use crate::lanes::model::{self, explain, input, translate};
use crate::run::Timeouts;
use crate::types::{CertName, Fingerprint, Port};

use answer::Reply;
use casefile::{EnvoyWant, Group};
use derive::{Derived, MatrixKey};
pub use observe::EnvoyPlan;

/// The folder name (and so the case name) of the in-memory case; the model places it in the
/// namespace `lg-check`, which results map back to the input's own namespace.
pub const CASE_NAME: &str = "check";

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
    pub operator: Option<operator::OperatorCheck>,
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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
    pub why: Vec<why::WhyRow>,
    /// The ids of the Gateway-level rules that shaped the prediction (the model's notes), so a
    /// verdict can name the rules that hold here and not on the baseline.
    pub rules: Vec<String>,
    /// Who answered: the model, or Cilium's own operator (`check --lane operator`).
    pub answered_by: crate::evidence::Lane,
    /// The operator's dependencies built at another version than its tag requires (the heads
    /// `module required -> substitute` its evidence names, issue #24); empty for the model.
    pub substituted: Vec<String>,
    /// Objects the API server refuses at this version, its message in the input's own names: the
    /// model predicts them from the CRD schema, the operator lane records them. They do not
    /// exist, so they have no conditions above.
    pub refused: Vec<crate::judge::Refused>,
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
    /// A model answer at `version` with nothing in it yet: the start of a test's result, so a
    /// field added to VersionResult is defaulted once here rather than in every test.
    #[cfg(test)]
    pub(crate) fn blank(version: &str) -> VersionResult {
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
            answered_by: crate::evidence::Lane::Model,
            substituted: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// The replies `key` may get when the model says it is one of several (`may_answer`).
    pub fn may(&self, key: &MatrixKey) -> Option<&[Reply]> {
        self.may_answer.iter().find(|m| &m.key == key).map(|m| m.replies.as_slice())
    }
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

/// Writes the derived case (with `groups`) into `root/check` and loads it.
fn load_derived(root: &Path, d: &Derived, groups: &[Group]) -> Result<Case, CheckError> {
    load_derived_as(root, CASE_NAME, d, groups)
}

/// [`load_derived`] under the case name `name` (the operator lane runs each Gateway's case in
/// namespaces named after it, so each needs its own).
fn load_derived_as(root: &Path, name: &str, d: &Derived, groups: &[Group]) -> Result<Case, CheckError> {
    let dir = root.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| CheckError::Io(format!("{}: {e}", dir.display())))?;
    }
    let text =
        casefile::case_yaml(d, "", &format!("check of Gateway {}/{}", d.namespace, d.gateway), groups, "computed by layout-gate check");
    casefile::write_case_dir(&dir, &text, d).map_err(|e| CheckError::Io(format!("{}: {e}", dir.display())))?;
    crate::case::load(&dir).map_err(|ps| relocated(d, &dir, &ps))
}

/// Problems of the derived case, in the user's terms: a problem in its manifests is the input
/// object's (each derived document is preceded by `# FILE:LINE` of its origin), so it is
/// located there and is a refusal of the input; only a problem the derivation itself made (in
/// its `case.yaml`) is a layout-gate bug. Never a path in the temporary folder.
fn relocated(d: &Derived, dir: &Path, ps: &[crate::case::Problem]) -> CheckError {
    let manifests = dir.join(casefile::MANIFESTS);
    let mut input = Vec::new();
    let mut ours = Vec::new();
    for p in ps {
        if p.file == manifests {
            let at = origin_of_line(&d.manifests, p.line.saturating_sub(casefile::MANIFEST_HEADER_LINES))
                .unwrap_or_else(|| format!("{}:{}", d.origin.file, d.origin.line));
            input.push(format!("{at}: {}: {}", p.field, unmap(d, &p.message)));
        } else {
            let file = p.file.strip_prefix(dir).unwrap_or(&p.file);
            ours.push(format!("derived {}:{}: {}: {}", file.display(), p.line, p.field, unmap(d, &p.message)));
        }
    }
    if input.is_empty() { CheckError::Derived(ours.join("; ")) } else { CheckError::Model(input.join("\n")) }
}

/// The `FILE:LINE` comment above line `line` (1-based) of the derived manifests text.
fn origin_of_line(text: &str, line: u64) -> Option<String> {
    let upto = usize::try_from(line).ok()?;
    text.lines().take(upto).collect::<Vec<_>>().into_iter().rev().find_map(|l| l.strip_prefix("# ").map(str::to_string))
}

/// The model's error, in the user's terms (their file and line, their namespace).
fn model_error(d: &Derived, e: &input::ModelInputError) -> CheckError {
    let origin = d.origins.get(&(e.kind.clone(), e.name.clone())).or_else(|| {
        // The Gateway is `{gateway}` in the derived case; its name is the input's.
        (e.kind == "Gateway").then_some(&d.origin)
    });
    let at = origin.map(|o| format!("{}:{}", o.file, o.line)).unwrap_or_else(|| format!("{}:{}", e.file, e.line));
    CheckError::Model(format!("{at}: {} {}: {} (the model cannot predict this)", e.kind, e.name, unmap(d, &e.message)))
}

/// The model's namespaces for the case, back to the input's: `lg-check-SUFFIX` to the input
/// namespace with that suffix (longest first, so `lg-check-a-b` is not read as `lg-check-a`),
/// then `lg-check` to the Gateway's.
fn unmap(d: &Derived, s: &str) -> String {
    let base = format!("lg-{CASE_NAME}");
    if !s.contains(&base) {
        return s.to_string();
    }
    let mut suffixes: Vec<(&String, &String)> = d.namespaces.iter().collect();
    suffixes.sort_by_key(|(suffix, _)| std::cmp::Reverse(suffix.len()));
    let mut out = s.to_string();
    for (suffix, input) in suffixes {
        out = out.replace(&format!("{base}-{suffix}"), input);
    }
    out.replace(&base, &d.namespace)
}

/// Certificate of a Secret of the derived case (rendered as `CERT-tls`).
fn cert_of_secret(case: &Case, secret: &str) -> Option<CertName> {
    case.certificates.iter().map(|c| c.name.clone()).find(|n| crate::case::template::secret_name(n) == secret)
}

fn cert_of_service(d: &Derived, service: &str) -> Option<CertName> {
    d.backends.iter().find(|(b, _)| b.as_str() == service).and_then(|(_, c)| c.clone())
}

fn chain_rows(d: &Derived, case: &Case, l: &translate::EnvoyListener) -> Vec<ChainRow> {
    use translate::{ChainAction, RouteTarget, Transport};
    l.chains
        .iter()
        .map(|c| {
            let action = match (&c.action, &c.tls_secret) {
                (ChainAction::TcpProxy { backends, .. }, _) => {
                    let b: Vec<String> = backends
                        .iter()
                        .map(|b| match b.namespace == input::model_namespace(case) {
                            true => format!("backend {}", b.service),
                            // In another namespace: `lg-check-SUFFIX`, which unmap names.
                            false => format!("backend {}/{}", b.namespace, b.service),
                        })
                        .collect();
                    format!("passthrough -> {}", if b.is_empty() { "nothing".into() } else { b.join(", ") })
                }
                (ChainAction::Http { vhosts, .. }, secret) => {
                    let hosts: Vec<String> = vhosts
                        .iter()
                        .map(|v| {
                            let targets: Vec<String> = v
                                .routes
                                .iter()
                                .map(|r| match &r.target {
                                    RouteTarget::Services { services } => {
                                        services.iter().map(|(s, _)| s.service.clone()).collect::<Vec<_>>().join("+")
                                    }
                                    RouteTarget::Redirect { scheme, status, .. } => {
                                        format!("{} {status}", scheme.as_deref().unwrap_or("redirect"))
                                    }
                                    RouteTarget::NoBackends => "500".into(),
                                })
                                .collect();
                            format!("{} -> {}", v.domains.join("|"), targets.join(", "))
                        })
                        .collect();
                    let tls = secret
                        .as_ref()
                        .map(|s| match cert_of_secret(case, s).and_then(|c| d.cert(&c).map(|c| c.label())) {
                            Some(l) => format!("terminate {l}, "),
                            None => format!("terminate {s}, "),
                        })
                        .unwrap_or_default();
                    format!("{tls}HTTP [{}]", hosts.join("; "))
                }
            };
            ChainRow {
                server_names: c.server_names.clone(),
                transport: if c.transport == Transport::Tls { "tls" } else { "raw_buffer" },
                action: unmap(d, &action),
            }
        })
        .collect()
}

/// The prediction's statuses and layout for one version, without observations.
fn predicted(d: &Derived, case: &Case, gw: &input::GatewayInput, p: &translate::Prediction) -> VersionResult {
    VersionResult {
        version: p.version.clone(),
        gateway: p.gateway.clone(),
        listeners: gw.listeners.iter().map(|l| (l.name.clone(), p.listeners.get(&l.name).cloned().unwrap_or_default())).collect(),
        routes: p.routes.iter().flat_map(|(r, ps)| ps.iter().map(move |(parent, cs)| (r.clone(), parent.clone(), cs.clone()))).collect(),
        envoy: p
            .envoy
            .iter()
            .map(|l| EnvoyRow {
                name: l.name.clone(),
                ports: l.ports.clone(),
                chains: chain_rows(d, case, l),
                state: None,
                error: answer::duplicate_match(l),
                observed_chains: None,
                rule: l.rule.id,
            })
            .collect(),
        cec_rejected: p.cec_rejected.as_ref().map(|r| unmap(d, r)),
        answers: Vec::new(),
        chains_disagree: Vec::new(),
        may_answer: Vec::new(),
        error: None,
        shared_envoy: Vec::new(),
        assumed_like: None,
        why: Vec::new(),
        rules: p.notes.iter().map(|(id, _)| id.clone()).collect(),
        answered_by: crate::evidence::Lane::Model,
        substituted: Vec::new(),
        refused: p.refused.iter().map(|r| unmapped_refusal(d, r)).collect(),
    }
}

/// How `check` names a refused object: `TLSRoute api: 422 Invalid: <the API server's message>`.
pub fn refused_line(r: &crate::judge::Refused) -> String {
    format!("{} {}: {} {}: {}", r.kind, r.name, r.code, r.reason, r.message)
}

/// `r` with its namespace and message in the input's own names.
pub(crate) fn unmapped_refusal(d: &Derived, r: &crate::judge::Refused) -> crate::judge::Refused {
    crate::judge::Refused { namespace: r.namespace.as_deref().map(|n| unmap(d, n)), message: unmap(d, &r.message), ..r.clone() }
}

/// The derived case as Envoy is asked about it: its groups, per version, the matrix as the
/// chains answer it. These drive the probes (which converge when Envoy agrees); what Envoy
/// really answers is read from the observations, not from these. Built in memory from the case
/// `prepare` loaded: writing it out and loading it again cost most of a 1,000-Gateway check.
fn probe_case(loaded: &Case, computed: &[(CiliumVersion, Vec<(MatrixKey, Reply)>)]) -> Result<Case, CheckError> {
    let mut case = loaded.clone();
    case.groups = computed
        .iter()
        .map(|(v, replies)| {
            let range = crate::case::VersionRange::parse(&format!("={v}"))
                .map_err(|e| CheckError::Derived(format!("the probe group of {v}: {}", e.0)))?;
            let probes = replies.iter().filter_map(|(k, r)| probe_expect(loaded, k, r)).collect();
            Ok(crate::case::ExpectGroup { probes, ..crate::case::ExpectGroup::empty(range) })
        })
        .collect::<Result<_, CheckError>>()?;
    Ok(case)
}

/// What a probe of `key` expects when it answers `reply`, as the case file writes it
/// ([`casefile`]); what was not observed, or cannot be said of such a probe, drives none.
fn probe_expect(case: &Case, key: &MatrixKey, reply: &Reply) -> Option<crate::case::ProbeExpect> {
    use crate::case::Answer;
    let (answer, status, served_by) = match (key.plain, reply) {
        (false, Reply::Certificate { cert }) => (Answer::Cert(cert.clone()), None, None),
        (_, Reply::Nothing { how, alert }) => {
            (Answer::Nothing { how: Some(*how), alert: alert.clone().filter(|_| !key.plain) }, None, None)
        }
        // "Not nothing" is not expressible; nothing is the nearest honest statement.
        (false, Reply::Unknown { .. }) => (Answer::Nothing { how: None, alert: None }, None, None),
        (true, Reply::Http { status, backend, .. }) => {
            let served_by = backend.as_ref().and_then(|b| case.backends.keys().find(|x| x.as_str() == b)).cloned();
            (Answer::Answered, Some(*status), served_by)
        }
        _ => return None,
    };
    Some(crate::case::ProbeExpect {
        key: crate::case::ProbeKey { port: key.port, sni: key.sni.clone(), http: key.plain, plain: key.plain, gateway: None, path: None },
        answer,
        served_by,
        status,
        provenance: crate::case::Provenance::inferred(),
        line: 0,
    })
}

/// One Gateway's check before its Envoy: its derived case (in its own work folder), each
/// version's prediction with the answers its chains give, and the probe groups.
struct Prepared {
    derived: Derived,
    /// The derived case as loaded (its one group a skeleton).
    case: Case,
    results: Vec<VersionResult>,
    /// One group per version Envoy is asked about (the behaviour's version).
    computed: Vec<(CiliumVersion, Vec<(MatrixKey, Reply)>)>,
    /// The derived case's work folder (the operator lane writes its cases there).
    work: crate::scratch::Scratch,
}

/// The derived case of `d`, written into `work` and read back, and its Gateway as the model
/// reads it; a refusal is located in the user's file.
fn model_gateway(d: &Derived, work: &crate::scratch::Scratch) -> Result<(Case, input::GatewayInput), CheckError> {
    // The first load only reads the manifests; its one group exists because a case needs one.
    let skeleton = Group {
        range: "*".into(),
        probes: d.matrix.iter().take(1).map(|k| (k.clone(), Reply::nothing(crate::case::NothingHow::Reset))).collect(),
        ..Group::default()
    };
    let case = load_derived(work.path(), d, &[skeleton])?;
    let gw = input::read_derived(&case).map_err(|e| model_error(d, &e))?;
    let gw = model::case_gateway(&case, gw).map_err(CheckError::Model)?;
    Ok((case, gw))
}

/// `explain FILE...`: every Gateway of rendered manifests, read and derived exactly as `check`
/// reads them (the same reader, the same errors), explained on each of `versions`, in the input's own names, tables fitted to `width`.
pub fn explain_paths(
    paths: &[std::path::PathBuf],
    versions: &[CiliumVersion],
    complete: bool,
    width: Option<usize>,
) -> Result<(read::Inputs, Vec<String>), CheckError> {
    let inputs = read::read(paths)?;
    let derived = derive::derive_with(&inputs.objects, derive::DeriveOptions { complete, each_file: false })?;
    let mut out = Vec::new();
    for d in derived {
        let work = crate::scratch::Scratch::new(crate::scratch::CHECK).map_err(|e| CheckError::Io(format!("work folder: {e}")))?;
        let (_, gw) = model_gateway(&d, &work)?;
        let sources: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let gateway = format!("{}/{} ({}:{})", d.namespace, d.gateway, d.origin.file, d.origin.line);
        for v in versions {
            let p = translate::predict(&gw, v);
            let mut text = explain::render_at(&format!("manifests {}", sources.join(" ")), &gateway, &gw, &p, width, &|c| unmap(&d, c));
            for n in &d.notes {
                text.push_str(&format!("note: {n}\n"));
            }
            out.push(unmap(&d, &text));
        }
    }
    Ok((inputs, out))
}

/// Reads the derived case and predicts every version of `opts` (no Envoy yet).
fn prepare(d: Derived, opts: &Options) -> Result<Prepared, CheckError> {
    let work = crate::scratch::Scratch::new(crate::scratch::CHECK).map_err(|e| CheckError::Io(format!("work folder: {e}")))?;
    let (case, gw) = model_gateway(&d, &work)?;
    let mut results = Vec::new();
    let mut computed = Vec::new();
    for (v, _) in &opts.versions {
        let p = translate::predict(&gw, opts.behaviour(v));
        let replies: Vec<(MatrixKey, Reply)> = d
            .matrix
            .iter()
            .map(|k| (k.clone(), answer::from_chains(&p, k, &|s| cert_of_secret(&case, s), &|s| cert_of_service(&d, s))))
            .collect();
        let mut r = predicted(&d, &case, &gw, &p);
        // The prediction is the assumed version's; the result is this version's, and says so.
        r.version = v.to_string();
        r.assumed_like = opts.assume.get(v).map(|a| a.to_string());
        r.answers = replies.clone();
        r.may_answer = d.matrix.iter().filter_map(|k| answer::plain_alternatives(&p, k)).collect();
        r.why = why::rows(&gw, &model::why::whys(&gw, opts.behaviour(v)), &|s| unmap(&d, s));
        results.push(r);
        // Probed at the behaviour's version: one group per version Envoy is asked about.
        let b = opts.behaviour(v);
        if !computed.iter().any(|(c, _)| c == b) {
            computed.push((b.clone(), replies));
        }
    }
    Ok(Prepared { derived: d, case, results, computed, work })
}

/// Observes every prepared Gateway on real Envoys, shared between the Gateways
/// ([`observe::observe_all`]), when `opts` asks for Envoy; each Gateway's answers are what an
/// Envoy of its own would have given.
async fn finish(prepared: Vec<Prepared>, opts: &Options) -> Result<Vec<GatewayCheck>, CheckError> {
    let mut prepared = prepared;
    if let Some(op) = &opts.operator {
        operator::observe(&mut prepared, opts, op).await?;
    } else if opts.envoy {
        let cases = prepared.iter().map(|p| probe_case(&p.case, &p.computed)).collect::<Result<Vec<Case>, CheckError>>()?;
        // Observed with the behaviour each version is predicted with.
        let versions: Vec<CiliumVersion> = opts.versions.iter().map(|(v, _)| opts.behaviour(v).clone()).collect();
        let refs: Vec<&Case> = cases.iter().collect();
        let observed = observe::observe_all(&refs, &versions, &opts.timeouts, opts.plan).await;
        for (p, o) in prepared.iter_mut().zip(observed) {
            match o {
                Ok(o) => {
                    for (r, v) in p.results.iter_mut().zip(&o.versions) {
                        observe_into(r, &p.derived, v, &o.names);
                    }
                }
                Err(e) => {
                    for r in &mut p.results {
                        r.error = Some(unmap(&p.derived, &e));
                        r.answers.clear();
                    }
                }
            }
        }
    }
    Ok(prepared.into_iter().map(|p| GatewayCheck { derived: p.derived, versions: p.results }).collect())
}

/// Checks one Gateway on every version of `opts`. Must run inside a tokio runtime.
pub async fn check_gateway(d: Derived, opts: &Options) -> Result<GatewayCheck, CheckError> {
    let p = prepare(d, opts)?;
    finish(vec![p], opts).await?.pop().ok_or_else(|| CheckError::Io("no Gateway was checked (a layout-gate bug)".into()))
}

/// Replaces the computed answers of `r` with what the real Envoy answered in `v`. A version
/// that has no observation of its own for some key of the matrix says so in its error.
fn observe_into(r: &mut VersionResult, d: &Derived, v: &observe::VersionObservation, names: &BTreeMap<Fingerprint, CertName>) {
    let name_of = |fp: &Fingerprint| names.get(fp).cloned();
    let o = match &v.observed {
        Ok(o) if !o.probes.is_empty() => o,
        // Nothing was observed (Envoy did not start, the model refused): say so, keep no answers.
        Ok(_) => return not_observed(r, "nothing was observed".into()),
        Err(e) => return not_observed(r, unmap(d, e)),
    };
    if r.assumed_like.as_deref().unwrap_or(&r.version) != v.version.to_string() {
        return not_observed(r, format!("observations of {} offered for {} (a layout-gate bug)", v.version, r.version));
    }
    r.shared_envoy = v.shared_with.iter().map(|s| s.to_string()).collect();
    let computed: BTreeMap<MatrixKey, Reply> = r.answers.drain(..).collect();
    for rec in &o.probes {
        let key = MatrixKey { port: rec.key.port, sni: rec.key.sni.clone(), plain: rec.key.plain };
        let reply = answer::from_record(rec, &name_of).unwrap_or(Reply::nothing(crate::case::NothingHow::Refused));
        // A key of several possible replies disagrees only with none of them.
        let one_of = r.may(&key).is_some_and(|m| m.contains(&reply));
        if !one_of && computed.get(&key).is_some_and(|want| want != &reply) {
            r.chains_disagree.push((key.clone(), computed[&key].clone()));
        }
        r.answers.push((key, reply));
    }
    let order: BTreeMap<&MatrixKey, usize> = d.matrix.iter().enumerate().map(|(i, k)| (k, i)).collect();
    r.answers.sort_by_key(|(k, _)| order.get(k).copied().unwrap_or(usize::MAX));
    for row in &mut r.envoy {
        let fact = o.listeners.as_ref().and_then(|ls| ls.iter().find(|l| l.name == row.name));
        row.state = Some(fact.map(|f| f.state.clone()).unwrap_or_else(|| "absent".into()));
        row.observed_chains = fact.map(|f| f.filter_chains);
        // An observed listener speaks for itself: Envoy's own refusal, or none.
        row.error = fact.and_then(|f| f.error.as_ref().map(|e| unmap(d, e)));
    }
    let missing: Vec<String> = d.matrix.iter().filter(|k| !r.answers.iter().any(|(a, _)| a == *k)).map(|k| k.to_string()).collect();
    r.error = match (&o.dump_error, missing.is_empty()) {
        (Some(e), _) => Some(unmap(d, e)),
        (None, false) => Some(format!("no observation of {}", missing.join(", "))),
        (None, true) => None,
    };
}

fn not_observed(r: &mut VersionResult, why: String) {
    r.error = Some(why);
    r.answers.clear();
}

/// The expectation groups `case new` writes: each version's observed (or computed) result,
/// versions that agree merged into one range between the pinned neighbours.
pub fn expectation_groups(check: &GatewayCheck, pinned: &[CiliumVersion]) -> Vec<Group> {
    let per_version: Vec<(String, Group)> = check.versions.iter().map(|r| (r.version.clone(), group_of(r))).collect();
    let mut out: Vec<(usize, usize, Group)> = Vec::new();
    for (v, g) in per_version {
        let Some(i) = pinned.iter().position(|p| p.to_string() == v) else { continue };
        match out.last_mut() {
            Some((_, end, last)) if *end + 1 == i && last.same_as(&g) => *end = i,
            _ => out.push((i, i, g)),
        }
    }
    out.into_iter()
        .map(|(a, b, mut g)| {
            let lower = (a > 0).then(|| format!(">={}", pinned[a]));
            let upper = pinned.get(b + 1).map(|n| format!("<{n}"));
            g.range = match (lower, upper) {
                (None, None) => "*".into(),
                (Some(l), None) => l,
                (None, Some(u)) => u,
                (Some(l), Some(u)) => format!("{l}, {u}"),
            };
            g
        })
        .collect()
}

fn want(c: &ConditionObs) -> (String, String) {
    let w = if c.reason.is_empty() || !c.reason.bytes().all(|b| b.is_ascii_alphanumeric()) {
        c.status.clone()
    } else {
        format!("{}/{}", c.status, c.reason)
    };
    (c.type_.clone(), w)
}

fn group_of(r: &VersionResult) -> Group {
    let known_envoy_error = "has the same matching rules";
    Group {
        range: String::new(),
        gateway: r.gateway.iter().map(want).collect(),
        listeners: r.listeners.iter().filter(|(_, cs)| !cs.is_empty()).map(|(l, cs)| (l.clone(), cs.iter().map(want).collect())).collect(),
        routes: {
            let mut m: BTreeMap<String, Vec<(String, casefile::Conds)>> = BTreeMap::new();
            for (route, parent, cs) in &r.routes {
                m.entry(route.clone()).or_default().push((parent.clone(), cs.iter().map(want).collect()));
            }
            m.into_iter().collect()
        },
        probes: r.answers.iter().filter(|(_, a)| !matches!(a, Reply::Unknown { .. } | Reply::LocalError)).cloned().collect(),
        // What the API server says after `is invalid: ` is the part a case expects.
        refused: r
            .refused
            .iter()
            .map(|x| {
                (format!("{}/{}", x.kind, x.name), x.message.rsplit_once("is invalid: ").map_or(x.message.as_str(), |(_, m)| m).to_string())
            })
            .collect(),
        envoy: r
            .envoy
            .iter()
            .map(|e| {
                let w = match (&e.state, &e.error) {
                    (Some(s), _) if s == "absent" => EnvoyWant::Absent,
                    (_, Some(err)) if err.contains(known_envoy_error) => EnvoyWant::Error(known_envoy_error.into()),
                    _ => EnvoyWant::Chains(e.observed_chains.unwrap_or(e.chains.len())),
                };
                (e.name.clone(), w)
            })
            .collect(),
    }
}

/// Reads `paths`, derives a case per Gateway and checks each. Must run inside a tokio runtime.
pub async fn check_paths(paths: &[std::path::PathBuf], opts: &Options) -> Result<(read::Inputs, Vec<GatewayCheck>), CheckError> {
    check_inputs(read::read(paths)?, opts).await
}

/// Derives a case per Gateway of objects already read (from files, or from a cluster by
/// `check --live`) and checks each. Must run inside a tokio runtime.
pub async fn check_inputs(inputs: read::Inputs, opts: &Options) -> Result<(read::Inputs, Vec<GatewayCheck>), CheckError> {
    let started = std::time::Instant::now();
    let derived = derive::derive_with(&inputs.objects, derive::DeriveOptions { complete: opts.complete, each_file: opts.each_file })?;
    tracing::debug!(gateways = derived.len(), elapsed_ms = started.elapsed().as_millis() as u64, "check: derived");
    // Every Gateway predicted first (a refusal stops the check before any Envoy starts), then
    // all observed together; `--sni` names are probed on each.
    let started = std::time::Instant::now();
    let prepared = derived
        .into_iter()
        .map(|mut d| {
            compare::add_names(&mut d, &opts.extra_sni);
            prepare(d, opts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    tracing::debug!(
        gateways = prepared.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "check: derived cases loaded and predicted"
    );
    Ok((inputs, finish(prepared, opts).await?))
}

/// `check`'s waits: the model lane's, except that one observation confirms a key. `check`
/// probes only once its Envoy's listeners are ready ([`observe`]), and a ready static local
/// Envoy answers the same ClientHello the same way every time; the catalogue's model runs keep
/// the conformance suite's 3. Every setting (`LAYOUT_GATE_CONSECUTIVE`, ...) still wins.
pub fn check_defaults() -> Timeouts {
    Timeouts { consecutive: std::num::NonZeroU32::MIN, ..model::model_defaults() }
}

/// [`check_defaults`], overridden by the environment.
pub fn timeouts() -> Result<Timeouts, crate::run::TimeoutsError> {
    Timeouts::from_lookup_over(check_defaults(), |k| std::env::var(k).ok())
}

/// The `case.yaml` text `case new` writes for `check`: derivation plus the model's prediction
/// per version (observed on Envoy when the check ran one), each group `provenance: inferred`.
pub fn case_text(check: &GatewayCheck, sources: &[std::path::PathBuf], pinned: &[CiliumVersion]) -> String {
    let d = &check.derived;
    let groups = expectation_groups(check, pinned);
    let date = crate::evidence::now_rfc3339();
    let date = date.split('T').next().unwrap_or(&date);
    let from: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
    let mut header = format!(
        "Written by `layout-gate case new` (layout-gate {}) from {} on {date}.\nEvery expectation is the model's prediction (provenance: inferred): confirm it on a cluster\n(`layout-gate run --lane kind --record`) and edit freely.",
        env!("CARGO_PKG_VERSION"),
        from.join(", ")
    );
    for n in &d.notes {
        header.push_str(&format!("\n{n}"));
    }
    for r in &check.versions {
        if let Some(like) = &r.assumed_like {
            header.push_str(&format!(
                "\nCilium {}: the model has not been checked at it; its expectations are {like}'s behaviour (--assume-like {like})",
                r.version
            ));
        }
    }
    let note = format!(
        "{} (check, layout-gate {}) on {date}; not observed on a cluster",
        crate::case::MODEL_INFERENCE_NOTE,
        env!("CARGO_PKG_VERSION")
    );
    casefile::case_yaml(d, &header, &format!("Gateway {}/{} as rendered in {}", d.namespace, d.gateway, from.join(", ")), &groups, &note)
}
