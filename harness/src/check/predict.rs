//! One Gateway's prediction, below `check`'s orchestration: its derived case loaded from
//! memory, the model's statuses, Envoy layout and answers per version, the observations of a
//! real Envoy folded in, and the expectation group a result makes. Errors and names are put
//! back into the input's own terms (its file and line, its namespaces).

use std::collections::BTreeMap;
use std::path::Path;

use super::answer::{self, Reply};
use super::casefile::{self, EnvoyWant, Group};
use super::derive::{Derived, MatrixKey};
use super::observe;
use super::types::{ChainRow, CheckError, EnvoyRow, Options, VersionResult};
use super::why;
use crate::case::{Case, CiliumVersion};
use crate::evidence::Lane;
use crate::judge::ConditionObs;
use crate::lanes::model::{self, input, translate};
use crate::types::{CertName, Fingerprint};

/// The folder name (and so the case name) of the in-memory case; the model places it in the
/// namespace `lg-check`, which results map back to the input's own namespace.
pub const CASE_NAME: &str = "check";

/// Loads the derived case (with `groups`) from memory, as the case folder `check` would be.
pub(super) fn load_derived(d: &Derived, groups: &[Group]) -> Result<Case, CheckError> {
    load_derived_as(CASE_NAME, d, groups)
}

/// [`load_derived`] under the case name `name` (the operator lane runs each Gateway's case in
/// namespaces named after it, so each needs its own). The text is exactly what `case new`
/// would write ([`casefile`]), loaded by the case loader without a round trip through disk.
pub(super) fn load_derived_as(name: &str, d: &Derived, groups: &[Group]) -> Result<Case, CheckError> {
    let text =
        casefile::case_yaml(d, "", &format!("check of Gateway {}/{}", d.namespace, d.gateway), groups, "computed by layout-gate check");
    let dir = Path::new(name);
    let manifests = BTreeMap::from([(casefile::MANIFESTS.to_string(), casefile::manifests_text(d))]);
    crate::case::load_text(dir, &text, &manifests).map_err(|ps| relocated(d, dir, &ps))
}

/// Problems of the derived case, in the user's terms: a problem in its manifests is the input
/// object's (each derived document is preceded by `# FILE:LINE` of its origin), so it is
/// located there and is a refusal of the input; only a problem the derivation itself made (in
/// its `case.yaml`) is a layout-gate bug. Never a path in the temporary folder.
pub(super) fn relocated(d: &Derived, dir: &Path, ps: &[crate::case::Problem]) -> CheckError {
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
pub(super) fn origin_of_line(text: &str, line: u64) -> Option<String> {
    let upto = usize::try_from(line).ok()?;
    text.lines().take(upto).collect::<Vec<_>>().into_iter().rev().find_map(|l| l.strip_prefix("# ").map(str::to_string))
}

/// The model's error, in the user's terms (their file and line, their namespace).
pub(super) fn model_error(d: &Derived, e: &input::ModelInputError) -> CheckError {
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
pub(super) fn unmap(d: &Derived, s: &str) -> String {
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
pub(super) fn cert_of_secret(case: &Case, secret: &str) -> Option<CertName> {
    case.certificates.iter().map(|c| c.name.clone()).find(|n| crate::case::template::secret_name(n) == secret)
}

pub(super) fn cert_of_service(d: &Derived, service: &str) -> Option<CertName> {
    d.backends.iter().find(|(b, _)| b.as_str() == service).and_then(|(_, c)| c.clone())
}

pub(super) fn chain_rows(d: &Derived, case: &Case, l: &translate::EnvoyListener) -> Vec<ChainRow> {
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
pub(super) fn predicted(d: &Derived, case: &Case, gw: &input::GatewayInput, p: &translate::Prediction) -> VersionResult {
    VersionResult {
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
        rules: p.notes.iter().map(|(id, _)| id.clone()).collect(),
        refused: p.refused.iter().map(|r| unmapped_refusal(d, r)).collect(),
        ..VersionResult::new(p.version.clone(), Lane::Model)
    }
}

/// `r` with its namespace and message in the input's own names.
pub(super) fn unmapped_refusal(d: &Derived, r: &crate::judge::Refused) -> crate::judge::Refused {
    crate::judge::Refused { namespace: r.namespace.as_deref().map(|n| unmap(d, n)), message: unmap(d, &r.message), ..r.clone() }
}

/// The derived case as Envoy is asked about it: its groups, per version, the matrix as the
/// chains answer it. These drive the probes (which converge when Envoy agrees); what Envoy
/// really answers is read from the observations, not from these. Built in memory from the case
/// `prepare` loaded: writing it out and loading it again cost most of a 1,000-Gateway check.
pub(super) fn probe_case(loaded: &Case, computed: &[(CiliumVersion, Vec<(MatrixKey, Reply)>)]) -> Result<Case, CheckError> {
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
pub(super) fn probe_expect(case: &Case, key: &MatrixKey, reply: &Reply) -> Option<crate::case::ProbeExpect> {
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
pub(super) struct Prepared {
    pub(super) derived: Derived,
    /// The derived case as loaded (its one group a skeleton).
    pub(super) case: Case,
    pub(super) results: Vec<VersionResult>,
    /// One group per version Envoy is asked about (the behaviour's version).
    pub(super) computed: Vec<(CiliumVersion, Vec<(MatrixKey, Reply)>)>,
}

/// The derived case of `d`, loaded, and its Gateway as the model reads it; a refusal is located
/// in the user's file.
pub(super) fn model_gateway(d: &Derived) -> Result<(Case, input::GatewayInput), CheckError> {
    // The first load only reads the manifests; its one group exists because a case needs one.
    let skeleton = Group {
        range: "*".into(),
        probes: d.matrix.iter().take(1).map(|k| (k.clone(), Reply::nothing(crate::case::NothingHow::Reset))).collect(),
        ..Group::default()
    };
    let case = load_derived(d, &[skeleton])?;
    let gw = input::read_derived(&case).map_err(|e| model_error(d, &e))?;
    let gw = model::case_gateway(&case, gw).map_err(CheckError::Model)?;
    Ok((case, gw))
}

/// Reads the derived case and predicts every version of `opts` (no Envoy yet).
pub(super) fn prepare(d: Derived, opts: &Options) -> Result<Prepared, CheckError> {
    let (case, gw) = model_gateway(&d)?;
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
    Ok(Prepared { derived: d, case, results, computed })
}

/// Replaces the computed answers of `r` with what the real Envoy answered in `v`. A version
/// that has no observation of its own for some key of the matrix says so in its error.
pub(super) fn observe_into(r: &mut VersionResult, d: &Derived, v: &observe::VersionObservation, names: &BTreeMap<Fingerprint, CertName>) {
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
        let withdrawn = o.withdrawn.get(&row.name);
        let absent = if withdrawn.is_some() { "withdrawn" } else { "absent" };
        row.state = Some(fact.map(|f| f.state.clone()).unwrap_or_else(|| absent.into()));
        row.observed_chains = fact.map(|f| f.filter_chains);
        // An observed listener speaks for itself: Envoy's own refusal, or none; one Cilium's
        // agent withdrew after Envoy refused it (or a listener of its CiliumEnvoyConfig) says so.
        row.error = fact.and_then(|f| f.error.as_ref().map(|e| unmap(d, e))).or_else(|| withdrawn.map(|w| unmap(d, w)));
    }
    let missing: Vec<String> = d.matrix.iter().filter(|k| !r.answers.iter().any(|(a, _)| a == *k)).map(|k| k.to_string()).collect();
    r.error = match (&o.dump_error, missing.is_empty()) {
        (Some(e), _) => Some(unmap(d, e)),
        (None, false) => Some(format!("no observation of {}", missing.join(", "))),
        (None, true) => None,
    };
}

pub(super) fn not_observed(r: &mut VersionResult, why: String) {
    r.error = Some(why);
    r.answers.clear();
}

pub(super) fn want(c: &ConditionObs) -> (String, String) {
    let w = if c.reason.is_empty() || !c.reason.bytes().all(|b| b.is_ascii_alphanumeric()) {
        c.status.clone()
    } else {
        format!("{}/{}", c.status, c.reason)
    };
    (c.type_.clone(), w)
}

pub(super) fn group_of(r: &VersionResult) -> Group {
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
