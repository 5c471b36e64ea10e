//! `check::<case>` trials: `check` on every case's manifests (rendered as a controller would
//! hand them over, with a real namespace and the case's apex), at every pinned version, compared
//! with the model lane's own answers for that case: the same listener and Gateway conditions,
//! and the same answer wherever both probe the same port and SNI. Plus `check::case_new`:
//! the case `case new` writes passes lint and the model lane as written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use layout_gate::case::template::{self, Vars};
use layout_gate::case::{Backend, Case, CiliumVersion};
use layout_gate::check::answer::Reply;
use layout_gate::check::{self, GatewayCheck, Options};
use layout_gate::judge::{ConditionObs, Outcome};
use layout_gate::lanes::model;
use layout_gate::types::{CertName, Fingerprint};
use layout_gate::versions::Pins;
use libtest_mimic::{Failed, Trial};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The namespace the rendered manifests say; `check` must template it back.
const NAMESPACE: &str = "check-e2e";

pub fn trials() -> Vec<Trial> {
    let cases = match layout_gate::case::lint(&repo().join("cases")) {
        Ok(c) => c,
        Err(problems) => {
            let m = problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n");
            return vec![Trial::test("check::lint", move || Err(Failed::from(m)))];
        }
    };
    // Every case: the product's and the restated Cilium fixtures under cases/cilium/.
    let mut out: Vec<Trial> =
        cases.into_iter().map(|case| Trial::test(format!("check::{}", case.name), move || compare(&case).map_err(Failed::from))).collect();
    out.push(Trial::test("check::case_new_passes_lint_and_the_model_lane", || case_new().map_err(Failed::from)));
    out
}

fn versions() -> Result<Vec<(CiliumVersion, String)>, String> {
    let pins = Pins::load_default().map_err(|ps| ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))?;
    Ok(pins.versions().into_iter().map(|v| (v, "e2e".to_string())).collect())
}

fn options() -> Result<Options, String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    // The trials run beside each other, each starting an Envoy per version on 2 cores: a
    // per-port listener can take seconds to go active, so these trials give convergence more
    // time than a lone `check` needs. An answer that is wrong stays wrong and still fails.
    let mut timeouts = check::timeouts().map_err(|e| e.to_string())?;
    timeouts.converge = timeouts.converge.max(std::time::Duration::from_secs(20));
    // The rendered input carries a Service per backend and a Secret per certificate of the
    // case (below), so one it lacks is one the case means to be missing: check must not stand
    // one in.
    Ok(Options { versions: versions()?, envoy: true, timeouts, complete: true })
}

/// The case's manifests as one rendered file, with the Service each of the case's backends is
/// and the Secret each of its certificates is: what exists for the model lane exists for check
/// too, and `--complete` makes what the case leaves out missing for both.
fn render(case: &Case, dir: &Path) -> Result<PathBuf, String> {
    let vars = Vars { apex: case.apex.clone(), namespace: NAMESPACE.into(), gateway: case.gateway.clone() };
    let mut text = String::new();
    for m in &case.manifests {
        text.push_str(&template::render(&m.text, &vars).map_err(|e| e.to_string())?);
        text.push_str("\n---\n");
    }
    for b in case.backends.keys() {
        text.push_str(&format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {b}, namespace: {NAMESPACE}}}\n---\n"));
    }
    for c in &case.certificates {
        text.push_str(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {}, namespace: {NAMESPACE}}}\ntype: kubernetes.io/tls\n---\n",
            template::secret_name(&c.name)
        ));
    }
    let p = dir.join("rendered.yaml");
    std::fs::write(&p, text).map_err(|e| e.to_string())?;
    Ok(p)
}

fn run_check(paths: &[PathBuf], opts: &Options) -> Result<Vec<GatewayCheck>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let r = rt.block_on(check::check_paths(paths, opts)).map_err(|e| e.to_string())?;
    Ok(r.1)
}

fn conds(cs: &[ConditionObs]) -> Vec<String> {
    let mut v: Vec<String> = cs.iter().map(|c| format!("{}={}/{}", c.type_, c.status, c.reason)).collect();
    v.sort();
    v
}

/// How check names what the model lane saw: a case certificate is the Secret it renders to, or
/// the backend presenting it.
fn label_of(case: &Case, cert: &CertName) -> String {
    for (b, backend) in &case.backends {
        if let Backend::Tls { cert: c } = backend
            && c == cert
        {
            return format!("backend {b}");
        }
    }
    format!("Secret {}", template::secret_name(cert))
}

fn compare(case: &Case) -> Result<(), String> {
    let opts = options()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = render(case, tmp.path())?;
    let checks = run_check(&[file], &opts)?;
    let check = checks.iter().find(|c| c.derived.gateway == case.gateway).ok_or("check found no Gateway of the case")?;
    // Backends the case does not declare are stood up by check (the input lacks them): the model
    // lane's answers for those routes cannot be compared.
    let undeclared: Vec<&String> = check.derived.notes.iter().collect::<Vec<_>>();
    let check_backends: Vec<String> = check.derived.backends.keys().map(|b| b.to_string()).collect();
    let differs_by_backends = check_backends.iter().any(|b| !case.backends.keys().any(|k| k.as_str() == b));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    let mut compared = 0;
    // With several Gateways the model lane keys listeners `<gateway>/<listener>`.
    let several = model::input::read(case).map_err(|e| e.to_string())?.gateways.len() > 1;
    let key = |l: &str| if several { format!("{}/{l}", case.gateway) } else { l.to_string() };
    for (v, r) in opts.versions.iter().map(|(v, _)| v).zip(&check.versions) {
        let (ev, _) = rt.block_on(model::run_case(case, v, &opts.timeouts));
        if let Some(e) = &r.error {
            problems.push(format!("{v}: check did not observe: {e}"));
        }
        let names: BTreeMap<Fingerprint, CertName> = ev.certificates.iter().map(|c| (c.leaf.sha256, c.name.clone())).collect();
        if !differs_by_backends {
            for (l, cs) in &r.listeners {
                let lane = ev.observed.listeners.get(&key(l)).map(|c| conds(c)).unwrap_or_default();
                compared += 1;
                if conds(cs) != lane {
                    problems.push(format!("{v}: listener {l}: check {:?}, model lane {:?}", conds(cs), lane));
                }
            }
            if ev.observed.gateway.as_deref().map(conds).unwrap_or_default() != conds(&r.gateway) {
                problems.push(format!("{v}: Gateway conditions differ"));
            }
        }
        for rec in ev.observed.probes.iter().filter(|p| !p.key.plain) {
            let Some((_, reply)) = r.answers.iter().find(|(k, _)| k.port == rec.key.port && k.sni == rec.key.sni) else { continue };
            let Some(fact) = rec.facts.last() else { continue };
            let lane = Reply::from_fact(fact, &|fp| names.get(fp).cloned());
            let lane_text = match &lane {
                Reply::Certificate { cert } => label_of(case, cert),
                other => layout_gate::check::outcome::reply_text(check, other),
            };
            let check_text = layout_gate::check::outcome::reply_text(check, reply);
            if differs_by_backends && (lane_text.starts_with("backend") || check_text.starts_with("backend") || lane.is_nothing()) {
                continue;
            }
            compared += 1;
            if lane_text != check_text {
                problems.push(format!(
                    "{v}: {} {}: check says {check_text}, the model lane answered {lane_text}",
                    rec.key.port,
                    rec.key.sni.as_ref().map(|s| s.to_string()).unwrap_or_else(|| "(no SNI)".into())
                ));
            }
        }
    }
    if compared == 0 {
        problems.push("no listener and no (port, SNI) in common between check and the model lane: nothing was compared".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n(check's notes: {})", problems.join("\n"), undeclared.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ")))
    }
}

fn case_new() -> Result<(), String> {
    let opts = options()?;
    let input = repo().join("cases/rendered/cozystack-tenantgateway-dns01.yaml");
    let checks = run_check(std::slice::from_ref(&input), &opts)?;
    let [check] = checks.as_slice() else { return Err(format!("{} Gateways", checks.len())) };
    let pinned: Vec<CiliumVersion> = opts.versions.iter().map(|(v, _)| v.clone()).collect();
    let text = check::case_text(check, &[input], &pinned);
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().join("tenantgateway-dns01");
    check::casefile::write_case_dir(&dir, &text, &check.derived).map_err(|e| e.to_string())?;
    // lint: the loader is lint.
    let case = layout_gate::case::load(&dir)
        .map_err(|ps| format!("{}\n---\n{text}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))?;
    if !case.groups.iter().all(|g| g.provenance.kind == layout_gate::case::ProvenanceKind::Inferred) {
        return Err("every written group must be provenance: inferred".into());
    }
    if case.groups.iter().all(|g| g.probes.is_empty()) {
        return Err("the written case has no probes".into());
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    for v in &pinned {
        let (ev, _) = rt.block_on(model::run_case(&case, v, &opts.timeouts));
        if ev.outcome != Outcome::Pass {
            let lines: Vec<String> = ev.verdicts.iter().filter(|x| !x.passed()).map(|x| x.line()).collect();
            failures.push(format!("{v}: {} {}", lines.join("\n"), ev.error.unwrap_or_default()));
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(format!("{}\n---\n{text}", failures.join("\n"))) }
}
