//! `check --lane operator`: the statuses, the Envoy layout and the probe answers of each version
//! computed by **Cilium's own operator at that version** and served on a real Envoy by the
//! operator lane's agent step, instead of predicted by the model.
//!
//! One seam, no copy: each Gateway's derived case (the same derivation and probe matrix as the
//! model's `check`) runs through the operator lane's control plane ([`session::bring_up`]) and the
//! shared cluster code ([`crate::lanes::cluster::session::run_cases`], the kind lane's
//! Kubernetes stages) with the operator lane's data plane ([`crate::lanes::operator::plane::OperatorPlane`]); the evidence each case writes is read back
//! into `check`'s per-version result. One control plane per version serves every Gateway of the
//! input. A version whose operator cannot be built here (blocked by the Go module proxy) or is
//! not built yet is said per version, with the modules refused or the install command: never
//! answered by the model instead.

use std::collections::BTreeMap;

use super::casefile::Group;
use super::observe::{EnvoyObservation, VersionObservation};
use super::predict::{self, Prepared};
use super::types::{ChainRow, CheckError, EnvoyRow, Options, VersionResult};
use crate::case::{Case, ChainKind, CiliumVersion};
use crate::evidence::{CaseEvidence, Lane};
use crate::lanes::cluster::live::LiveDriver;
use crate::lanes::cluster::one_case::Expecting;
use crate::lanes::cluster::progress::Progress;
use crate::lanes::cluster::session::Gathered;
use crate::lanes::cluster::setup::CaseRun;
use crate::lanes::cluster::teardown::Teardown;
use crate::lanes::operator::batch;
use crate::lanes::operator::binaries;
use crate::lanes::operator::session;
use crate::lanes::operator::up;
use crate::types::{CertName, Fingerprint};
use crate::versions::Pins;

pub use super::types::{OperatorCheck, Timings, VersionTiming};

/// What `check` (and `differential`, which runs it) is called in what a warm plane's use says.
pub const CHECK: &str = "check";

/// The rule name an operator-answered Envoy listener carries (the model names its own rule).
pub const OPERATOR_RULE: &str = "cilium-operator";

/// Why `version`'s operator cannot answer here, if it cannot: blocked by the Go module proxy
/// (the modules it refuses), or not built (the command that builds it).
pub fn not_runnable(pins: &Pins, version: &CiliumVersion) -> Option<String> {
    let blocked = binaries::blocked(pins, version);
    let built = if blocked.is_some() { Ok(()) } else { binaries::find(pins, version).map(|_| ()).map_err(|e| e.to_string()) };
    not_runnable_line(version, blocked.as_deref(), built)
}

/// The line for a version that is blocked (the modules the proxy refuses) or not built (why,
/// with the install command); `None` when its operator can run.
pub fn not_runnable_line(version: &CiliumVersion, blocked: Option<&[String]>, built: Result<(), String>) -> Option<String> {
    if let Some(refused) = blocked {
        return Some(format!("not answered: {}", binaries::blocked_message(version, refused)));
    }
    built.err().map(|e| {
        let hint = binaries::install_hint(version);
        if e.contains(&hint) {
            format!("not answered: Cilium {version}'s operator is not built here: {e}")
        } else {
            format!("not answered: Cilium {version}'s operator is not built here: {e}; {hint}")
        }
    })
}

/// The case the operator runs for one prepared Gateway: the model's statuses, Envoy layout and
/// answers as its expectations, one group per version (`=V`), so that every subject the model
/// speaks of is watched and every key of the matrix probed. The expectations only drive the
/// run: what is reported is what the operator and the Envoy it fed said.
fn operator_case(i: usize, p: &Prepared) -> Result<Case, CheckError> {
    let groups: Vec<Group> = p
        .results
        .iter()
        .map(|r| {
            let mut g = predict::group_of(r);
            g.range = format!("={}", r.version);
            g
        })
        .collect();
    // Each Gateway's case its own name, so each runs in namespaces of its own.
    predict::load_derived_as(&format!("{}-{i}", predict::CASE_NAME), &p.derived, &groups)
}

/// Replaces every prepared result with the operator's answer, version by version (one control
/// plane each, shared by every Gateway of the input).
pub(super) async fn observe(prepared: &mut [Prepared], opts: &Options, op: &OperatorCheck) -> Result<(), CheckError> {
    let cases = prepared.iter().enumerate().map(|(i, p)| operator_case(i, p)).collect::<Result<Vec<Case>, CheckError>>()?;
    // The versions' control planes side by side, as many as the free memory holds; each
    // version's answers in order.
    use futures::StreamExt;
    let at_once = batch::planes_at_once(batch::mem_available());
    let answers: Vec<Result<Answered, String>> =
        futures::stream::iter(opts.versions.iter()).map(|(v, source)| one_version(&cases, v, source, op)).buffered(at_once).collect().await;
    for (i, ((v, _), answer)) in opts.versions.iter().zip(answers).enumerate() {
        match answer {
            Ok((outcomes, names, environment, step)) => {
                let subs = substituted(&environment);
                for (p, ev) in prepared.iter_mut().zip(outcomes) {
                    let r = &mut p.results[i];
                    match ev {
                        Some(ev) => {
                            into_result(r, &p.derived, v, &ev, &names);
                            r.substituted = subs.clone();
                            r.agent_step = Some(step.clone());
                        }
                        None => operator_failed(r, format!("the operator lane did not run the case of Gateway {}", p.derived.gateway)),
                    }
                }
            }
            Err(e) => {
                for p in prepared.iter_mut() {
                    operator_failed(&mut p.results[i], e.clone());
                }
            }
        }
    }
    Ok(())
}

/// The heads (`module required -> substitute`) of the substitutions the operator that answered
/// ran a version was built with, as the run's environment names them (empty: built as the tag
/// requires).
pub fn substituted(environment: &BTreeMap<String, String>) -> Vec<String> {
    let Some(text) = environment.get(crate::lanes::operator::control_plane::SUBSTITUTIONS_KEY) else { return Vec::new() };
    text.lines()
        .map(|l| match binaries::Substitution::head_of(l) {
            Some((m, v, s)) => format!("{m} {v} -> {s}"),
            // Not a line the lane writes: shown whole rather than dropped.
            None => l.to_string(),
        })
        .collect()
}

/// A version the operator did not answer: nothing of the model's prediction is kept.
pub(super) fn operator_failed(r: &mut VersionResult, why: String) {
    r.error = Some(why);
    r.answered_by = Lane::Operator;
    r.substituted.clear();
    r.gateway.clear();
    for (_, cs) in &mut r.listeners {
        cs.clear();
    }
    r.routes.clear();
    r.envoy.clear();
    r.answers.clear();
    r.chains_disagree.clear();
    r.why.clear();
    r.rules.clear();
    r.cec_rejected = None;
    r.shared_envoy.clear();
    r.refused.clear();
}

type Answered = (Vec<Option<CaseEvidence>>, BTreeMap<Fingerprint, CertName>, BTreeMap<String, String>, String);

/// Every case on one control plane at `version`: each case's evidence (in `cases` order), the
/// run's certificate names by fingerprint and the control plane's environment (what was built
/// how).
async fn one_version(cases: &[Case], version: &CiliumVersion, source: &str, op: &OperatorCheck) -> Result<Answered, String> {
    // A warm plane (`operator up`) that can be trusted and runs these very binaries answers
    // (`up::attach_or_start`, as for `run`); without one, a version that cannot be built here
    // is said as such.
    let warm_answers = crate::lanes::operator::warm::attach(&op.pins, version).ok().flatten().is_some();
    if !warm_answers && let Some(why) = not_runnable(&op.pins, version) {
        return Err(why);
    }
    let setup = session::setup(&op.pins, version.clone(), source.to_string(), cases, &op.settings).map_err(|e| e.to_string())?;
    let run_id = crate::evidence::run_id(Lane::Operator, Some(&version.to_string()), Some("check"));
    let progress = Progress::from_env_results_on_stderr();
    progress.set_total(setup.cases.len());
    let mut d = LiveDriver::new(progress.clone(), setup.timeouts);
    let mut st = Gathered::default();
    let t = std::time::Instant::now();
    // A plane the caller started ahead for this version (`differential`) is taken as it is.
    let early = op.ahead.take(version);
    let adopted = early.is_some();
    let mut cp = match early {
        Some(early) => up::adopt_early(&mut d, &setup, early, &mut st.log).await,
        None => up::attach_or_start(&mut d, &setup, &run_id, &mut st.log, Some(CHECK)).await,
    }
    .map_err(|e| format!("Cilium {version}'s control plane did not come up: {e}"))?;
    let secrets_namespace = cp.secrets_namespace().to_string();
    let control_plane = t.elapsed();
    // Each phase of the bring-up (on a warm plane: the connection), as `operator up` prints them.
    // (One that came up ahead has said its phases already.)
    let phases = if adopted {
        "it came up beside the previous version's cases".to_string()
    } else {
        st.log.phases.iter().map(|p| format!("{} {:.2}s", p.name, p.duration_ms as f64 / 1000.0)).collect::<Vec<_>>().join(", ")
    };
    // The agent step, as `run --lane operator` chooses it: Cilium's own agent unless the
    // emulated one is asked for; with Cilium's, the Gateways go one at a time.
    let step = crate::lanes::operator::plane::AgentStep::choose(&op.pins, version, cp.kube().kubeconfig.as_deref(), &run_id)
        .map_err(|e| format!("Cilium {version}'s agent step: {e}"))?;
    step.say_in(cp.environment_mut());
    let at_once = step.cases_at_once(op.batch);
    let t = std::time::Instant::now();
    let mut teardown = Teardown::default();
    let plane = batch::PlaneSpec {
        secrets_namespace,
        envoy_ready: setup.probe_timeouts.envoy_ready.limit,
        checks: crate::lanes::operator::agent::AgentChecks::at(version),
        step,
    };
    // The cases' expectations are the model's prediction: the operator's settled conditions
    // are the answer whether or not they match it.
    let common = CaseRun { expecting: Expecting::Predicted, ..setup.common(Lane::Operator) };
    // A plane that stopped (its operator lost its lease and exited) answers no further layout:
    // the version is then said as not answered, never judged on the layouts after it.
    let still_up = || cp.check_alive();
    let r =
        batch::run_cases(&d, &plane, &setup.cases, &run_id, &common, &mut teardown, &mut st, &progress, false, at_once, &still_up).await;
    let ran = t.elapsed();
    let described = plane.step.describe();
    op.timings.push(VersionTiming { version: version.clone(), control_plane, cases: ran, batch: at_once, agent_step: described.clone() });
    progress.note(&format!(
        "layout-gate check: Cilium {version}: control plane ready in {:.1}s ({}), {} Gateway(s) in {:.1}s, {} at once; agent step: {described}",
        control_plane.as_secs_f64(),
        phases,
        setup.cases.len(),
        ran.as_secs_f64(),
        at_once
    ));
    let left = teardown.run(&mut d, &setup.timeouts).await;
    // Cilium's agent, its bridge and Envoy stop before the plane they read.
    drop(plane);
    let environment = cp.environment().clone();
    // A plane of its own is stopped; a warm one is left running.
    drop(cp);
    r.map_err(|e| format!("Cilium {version}'s operator lane: {e}"))?;
    if !left.failed.is_empty() {
        eprintln!("layout-gate check: Cilium {version}: cleanup failed: {}", left.failed.join("; "));
    }
    let names = st.certs.iter().map(|c| (c.leaf.sha256, c.name.clone())).collect();
    let mut by_name: BTreeMap<String, CaseEvidence> = st.outcomes.into_iter().map(|o| (o.evidence.name.clone(), o.evidence)).collect();
    Ok((cases.iter().map(|c| by_name.remove(&c.name)).collect(), names, environment, described))
}

/// `r` (the model's prediction for one version) replaced by what the operator lane observed.
fn into_result(
    r: &mut VersionResult,
    d: &super::derive::Derived,
    v: &CiliumVersion,
    ev: &CaseEvidence,
    names: &BTreeMap<Fingerprint, CertName>,
) {
    let o = &ev.observed;
    let unmap = |s: &str| predict::unmap(d, s);
    r.answered_by = Lane::Operator;
    r.gateway = o.gateway.clone().or_else(|| o.gateways.get(&d.gateway).cloned()).unwrap_or_default();
    for (l, cs) in &mut r.listeners {
        *cs = o.listeners.get(l.as_str()).cloned().unwrap_or_default();
    }
    r.routes = o.routes.iter().flat_map(|(route, ps)| ps.iter().map(move |(p, cs)| (route.clone(), p.clone(), cs.clone()))).collect();
    r.refused = o.refused.iter().map(|x| super::predict::unmapped_refusal(d, x)).collect();
    r.envoy = o.envoy_listeners.as_deref().unwrap_or_default().iter().map(|f| envoy_row(f, &unmap)).collect();
    // The model's own reasons and rules do not explain Cilium's answer.
    r.why.clear();
    r.rules.clear();
    r.cec_rejected = None;
    r.assumed_like = None;
    if o.probes.is_empty() {
        r.error = Some(ev.error.as_deref().map(unmap).unwrap_or_else(|| "the operator lane observed no answer".into()));
        r.answers.clear();
        return;
    }
    let observed = EnvoyObservation {
        probes: o.probes.clone(),
        listeners: o.envoy_listeners.clone(),
        dump_error: None,
        withdrawn: Default::default(),
    };
    let v = VersionObservation { version: v.clone(), shared_with: Vec::new(), observed: Ok(std::sync::Arc::new(observed)) };
    // The Envoy rows are already the operator's: `observe_into` fills their state and counts.
    predict::observe_into(r, d, &v, names);
    // The model's chains say nothing of the operator's answers.
    r.chains_disagree.clear();
}

fn envoy_row(f: &crate::judge::ListenerFact, unmap: &dyn Fn(&str) -> String) -> EnvoyRow {
    let chains = f
        .server_names
        .iter()
        .enumerate()
        .map(|(i, names)| {
            let kind = f.chain_kinds.get(i).copied().unwrap_or(ChainKind::Other);
            ChainRow {
                server_names: names.clone(),
                transport: if kind == ChainKind::Https { "tls" } else { "raw_buffer" },
                action: kind.as_str().to_string(),
            }
        })
        .collect();
    EnvoyRow {
        name: f.name.clone(),
        ports: Vec::new(),
        chains,
        state: Some(f.state.clone()),
        error: f.error.as_ref().map(|e| unmap(e)),
        observed_chains: Some(f.filter_chains),
        rule: OPERATOR_RULE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> CiliumVersion {
        CiliumVersion::parse(s).unwrap()
    }

    #[test]
    fn a_blocked_version_names_the_refused_modules_and_a_missing_build_the_install_command() {
        let refused = vec!["github.com/example/mod@v1.2.3 (410 Gone)".to_string()];
        let b = not_runnable_line(&v("1.20.1"), Some(&refused), Ok(())).unwrap();
        assert!(b.starts_with("not answered: Cilium 1.20.1's operator cannot be built here"), "{b}");
        assert!(b.contains("github.com/example/mod@v1.2.3 (410 Gone)") && b.contains("v1.20.1/blocked"), "{b}");
        let m = not_runnable_line(&v("1.19.6"), None, Err("/x/cilium-operator/1.19.6/build.json: not found".into())).unwrap();
        assert!(m.contains("not built here") && m.contains("scripts/install-control-plane.sh 1.19.6"), "{m}");
        assert_eq!(not_runnable_line(&v("1.19.6"), None, Ok(())), None);
    }

    /// A version the operator did not answer keeps nothing of the model's prediction.
    #[test]
    fn a_version_not_answered_keeps_no_model_answer() {
        let mut r = VersionResult {
            gateway: vec![crate::judge::ConditionObs {
                type_: "Accepted".into(),
                status: "True".into(),
                reason: "Accepted".into(),
                message: String::new(),
                observed_generation: None,
            }],
            listeners: vec![("https".into(), Vec::new())],
            routes: vec![("r".into(), "p".into(), Vec::new())],
            cec_rejected: Some("x".into()),
            answers: vec![(
                super::super::derive::MatrixKey::tls(crate::types::Port::new(443).unwrap(), None),
                super::super::answer::Reply::LocalError,
            )],
            rules: vec!["rule".into()],
            substituted: vec!["m v1 -> v2".into()],
            refused: vec![crate::judge::Refused {
                kind: "TLSRoute".into(),
                namespace: None,
                name: "r".into(),
                code: 422,
                reason: "Invalid".into(),
                message: "x".into(),
            }],
            ..VersionResult::blank("1.20.1")
        };
        operator_failed(&mut r, "not answered: blocked".into());
        assert_eq!(r.answered_by, Lane::Operator);
        assert!(r.gateway.is_empty() && r.routes.is_empty() && r.answers.is_empty() && r.rules.is_empty() && r.cec_rejected.is_none());
        assert!(r.refused.is_empty());
        assert!(r.substituted.is_empty());
        assert_eq!(r.error.as_deref(), Some("not answered: blocked"));
    }

    /// Found by `check --lane operator`: the operator lane put every backend's Service in the
    /// case's own namespace, so a route beside its Service in another namespace (cozystack's
    /// layout) was BackendNotFound on the operator and resolved on the model. Each Service is
    /// in its backend's own namespace, as the kind lane places it.
    #[test]
    fn each_backend_service_is_in_its_backends_own_namespace() {
        use crate::lanes::cluster::plane::{DataPlane, PlaneCase};
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
        let inputs = super::super::read::read(&[file]).unwrap();
        let d =
            super::super::derive::derive_with(&inputs.objects, super::super::derive::DeriveOptions { complete: false, each_file: false })
                .unwrap()
                .remove(0);
        let group = Group {
            range: "*".into(),
            probes: vec![(d.matrix[0].clone(), super::super::answer::Reply::nothing(crate::case::NothingHow::Reset))],
            ..Group::default()
        };
        let case = super::super::predict::load_derived(&d, &[group]).unwrap();
        let plane = crate::lanes::operator::plane::OperatorPlane::new(
            "cilium-secrets".into(),
            std::time::Duration::from_secs(1),
            crate::lanes::operator::agent::AgentChecks::default(),
        );
        let gateways = vec![case.gateway.clone()];
        let timeouts = crate::lanes::cluster::timeouts::ClusterTimeouts::default();
        let probe_timeouts = crate::run::Timeouts::local_envoy();
        let pc = PlaneCase {
            case: &case,
            namespace: "lg-x",
            gateways: &gateways,
            certs: &crate::lanes::cluster::manifests::SecretMaterial::DryRun,
            timeouts: &timeouts,
            probe_timeouts: &probe_timeouts,
        };
        let placed: Vec<(String, String)> = plane
            .backend_objects(&pc)
            .iter()
            .map(|o| (o["metadata"]["namespace"].as_str().unwrap().to_string(), o["metadata"]["name"].as_str().unwrap().to_string()))
            .collect();
        let suffix = d.namespaces.iter().find(|(_, n)| n.as_str() == "cozy-dashboard").map(|(s, _)| s.clone()).unwrap();
        assert!(placed.contains(&(format!("lg-x-{suffix}"), "dashboard".into())), "{placed:?}");
        assert!(placed.iter().all(|(ns, _)| ns != "lg-x"), "no backend of this layout is in the Gateway's namespace: {placed:?}");
    }
}
