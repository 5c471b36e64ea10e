//! `operator_batch::1.19.6::*`: many layouts on one control plane at once answer as each does
//! alone (`lanes::operator::batch` says why they should, from the operator's code). Generated
//! layouts go through `check --lane operator` twice: one at a time, then all side by side; every
//! Gateway's answer is compared in every field class the differential compares, and in whether
//! it was answered at all. Catalogue cases go through `run --lane operator` (the shared
//! cluster-lane session) both ways, and each case's recorded facts are compared.

use std::collections::BTreeMap;

use layout_gate::case::CiliumVersion;
use layout_gate::check::{self, GatewayCheck, Options};
use layout_gate::differential::{self, compare};
use layout_gate::evidence::{Evidence, facts};
use layout_gate::lanes::cluster::batch::CASES_AT_ONCE_KEY;
use layout_gate::lanes::cluster::names::run_suffix;
use layout_gate::lanes::operator::OperatorOptions;
use layout_gate::lanes::operator::batch::Batch;
use layout_gate::versions::Pins;

const VERSION: &str = "1.19.6";
/// Seed 3's first layouts: one, two and three Gateways, TLS passthrough beside terminate,
/// missing Secrets and Services, cross-namespace grants.
const SEED: u64 = 3;
const COUNT: usize = 8;

fn runnable(pins: &Pins, v: &CiliumVersion) -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    match check::operator::not_runnable(pins, v) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

fn options(pins: &Pins, v: &CiliumVersion, batch: Batch) -> Result<Options, String> {
    Ok(Options {
        versions: vec![(v.clone(), "--cilium".into())],
        envoy: true,
        timeouts: check::timeouts().map_err(|e| e.to_string())?,
        plan: check::EnvoyPlan::Shared,
        complete: true,
        assume: Default::default(),
        extra_sni: Vec::new(),
        operator: Some(check::operator::OperatorCheck {
            pins: pins.clone(),
            settings: layout_gate::run::Settings::from_env(&layout_gate::lanes::operator::known_settings()),
            batch,
            timings: Default::default(),
            ahead: Default::default(),
        }),
        each_file: true,
    })
}

fn answers(paths: &[std::path::PathBuf], opts: &Options) -> Result<BTreeMap<String, GatewayCheck>, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let (_, checks) = runtime.block_on(check::check_paths(paths, opts)).map_err(|e| e.to_string())?;
    Ok(checks.into_iter().map(|c| (format!("{}/{}", c.derived.namespace, c.derived.gateway), c)).collect())
}

/// Every Gateway of the generated layouts answers the same, in every field class, whether its
/// layout ran alone or beside all the others.
pub fn batched_answers_equal_alone() -> Result<(), String> {
    let pins = Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    runnable(&pins, &v)?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let paths = differential::write_version_layouts(tmp.path(), &pins, &v, SEED, COUNT)?;
    let alone = answers(&paths, &options(&pins, &v, Batch::ONE)?)?;
    let batched = answers(&paths, &options(&pins, &v, Batch::new(COUNT).map_err(|e| e.to_string())?)?)?;
    if alone.len() < COUNT || alone.keys().ne(batched.keys()) {
        return Err(format!("Gateways alone {:?}, batched {:?}", alone.keys().collect::<Vec<_>>(), batched.keys().collect::<Vec<_>>()));
    }
    let mut problems = Vec::new();
    let mut compared = 0;
    for (key, a) in &alone {
        let (Some(ar), Some(br)) = (a.versions.first(), batched.get(key).and_then(|b| b.versions.first())) else {
            problems.push(format!("{key}: no result"));
            continue;
        };
        match (&ar.error, &br.error) {
            (None, None) => {}
            (a, b) => {
                problems.push(format!("{key}: not answered (alone: {a:?}; batched: {b:?})"));
                continue;
            }
        }
        if ar.gateway.is_empty() {
            problems.push(format!("{key}: the operator gave no Gateway condition"));
        }
        compared += 1;
        for d in compare::differences(ar, br) {
            // `differences` names its sides model and operator: here alone and batched.
            problems.push(format!(
                "{key} [{}]: {}",
                d.class.as_str(),
                d.what.replacen("model", "alone", 1).replacen("operator", "batched", 1)
            ));
        }
    }
    if !problems.is_empty() {
        return Err(format!("{} of {compared} Gateways answered otherwise beside other layouts:\n{}", problems.len(), problems.join("\n")));
    }
    Ok(())
}

/// Catalogue cases of different shapes at `VERSION`: a conflict, two Gateways with routes and
/// Services in other namespaces, a Secret across a ReferenceGrant, a namespace policy, an
/// invalid listener beside a valid one.
const CATALOGUE_CASES: &[&str] = &[
    "dns01-default",
    "passthrough-second-gateway",
    "cilium/gateway-secret-reference-grant-specific",
    "route-served-past-namespace-policy",
    "missing-secret-beside-catch-all",
];

/// `run --lane operator` over `names` at `VERSION`, `batch` at once: the run's evidence.
fn run_catalogue(pins: &Pins, names: &[&str], batch: Batch, evidence_dir: &std::path::Path) -> Result<Evidence, String> {
    let cases_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let patterns: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let selection = layout_gate::run::Selection::new(&patterns, &[])?;
    let cases = layout_gate::run::select(&cases_dir, &selection, None)?;
    let options = OperatorOptions {
        cilium: vec![VERSION.into()],
        shard: None,
        fail_fast: false,
        batch,
        settings: layout_gate::run::Settings::from_env(&layout_gate::lanes::operator::known_settings()),
    };
    let end = layout_gate::lanes::operator::session::run(cases, pins, &options, evidence_dir).map_err(|e| e.to_string())?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(evidence_dir).map_err(|e| e.to_string())?.flatten() {
        let file = entry.path().join("evidence.json");
        if file.is_file() {
            found.push(file);
        }
    }
    let [file] = found.as_slice() else {
        return Err(format!("batch {batch}: {} evidence files under {} (the run ended {end:?})", found.len(), evidence_dir.display()));
    };
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))
}

/// Each case's first and last phase start (fixed-width UTC times, which sort as they read).
fn case_spans(ev: &Evidence) -> BTreeMap<String, (String, String)> {
    let mut spans: BTreeMap<String, (String, String)> = BTreeMap::new();
    for c in &ev.cases {
        let prefix = format!("{}: ", c.name);
        for p in ev.phases.iter().filter(|p| p.name.starts_with(&prefix)) {
            let span = spans.entry(c.name.clone()).or_insert_with(|| (p.started_at.clone(), p.started_at.clone()));
            span.0 = span.0.clone().min(p.started_at.clone());
            span.1 = span.1.clone().max(p.started_at.clone());
        }
    }
    spans
}

/// Whether some two cases of the run were in flight at the same time.
fn overlapped(ev: &Evidence) -> bool {
    let spans: Vec<(String, String)> = case_spans(ev).into_values().collect();
    spans.iter().enumerate().any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1))
}

/// `run --lane operator` over catalogue cases, all at once on one control plane and then one at
/// a time: each case's evidence records the same facts (outcome, verdicts, every condition, the
/// Envoy listeners, each probe's settled answer; `evidence::facts`) both ways, the batched run
/// really had its cases in flight together, and each run's evidence says how many ran at once.
pub fn catalogue_batched_evidence_equals_alone() -> Result<(), String> {
    let pins = Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    runnable(&pins, &v)?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let at_once = Batch::new(CATALOGUE_CASES.len()).map_err(|e| e.to_string())?;
    let batched = run_catalogue(&pins, CATALOGUE_CASES, at_once, &tmp.path().join("batched"))?;
    let alone = run_catalogue(&pins, CATALOGUE_CASES, Batch::ONE, &tmp.path().join("alone"))?;
    let mut problems = Vec::new();
    for (ev, want) in [(&batched, at_once), (&alone, Batch::ONE)] {
        let said = ev.environment.get(CASES_AT_ONCE_KEY).cloned().unwrap_or_default();
        if said != want.to_string() {
            problems.push(format!("the run of {want} at once says {CASES_AT_ONCE_KEY}: {said:?}"));
        }
        if ev.cases.len() != CATALOGUE_CASES.len() {
            problems.push(format!(
                "the run of {want} at once has evidence for {} of {} cases; not run: {:?}",
                ev.cases.len(),
                CATALOGUE_CASES.len(),
                ev.not_run
            ));
        }
    }
    if !overlapped(&batched) {
        problems.push(format!("no two cases of the batched run were in flight together: {:?}", case_spans(&batched)));
    }
    if overlapped(&alone) {
        problems.push(format!("cases of the run one at a time overlapped: {:?}", case_spans(&alone)));
    }
    let (sb, sa) = (run_suffix(&batched.run_id), run_suffix(&alone.run_id));
    let mut probed = 0;
    for a in &alone.cases {
        let Some(b) = batched.cases.iter().find(|b| b.name == a.name) else {
            problems.push(format!("{}: no evidence in the batched run", a.name));
            continue;
        };
        let (fa, fb) = (facts::case_facts(a, &alone.certificates, &sa), facts::case_facts(b, &batched.certificates, &sb));
        if fa.iter().any(|l| l.starts_with("probe ")) {
            probed += 1;
        }
        for d in facts::differences(&fa, &fb, "alone", "batched") {
            problems.push(format!("{}: {d}", a.name));
        }
    }
    // Most of these cases are probed (one speaks of statuses only): answers were compared.
    if probed < CATALOGUE_CASES.len() - 1 {
        problems.push(format!("only {probed} of {} cases recorded a probe answer alone", CATALOGUE_CASES.len()));
    }
    if !problems.is_empty() {
        return Err(format!("catalogue cases at {VERSION}, {at_once} at once against one at a time:\n{}", problems.join("\n")));
    }
    Ok(())
}

/// `run --lane operator --cilium 1.19.5 --cilium 1.19.6`: the second version's control plane
/// comes up while the first version's cases run (said when its turn comes, with each phase; its
/// evidence records them), both versions answer, and the second's plane was up before the first
/// finished. Needs two planes' memory free (`batch::PLANE_BYTES` each).
pub fn versions_asked_together_come_up_side_by_side() -> Result<(), String> {
    use layout_gate::lanes::operator::batch::{PLANE_BYTES, mem_available, planes_at_once};
    let pins = Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let (first, second) = (CiliumVersion::parse("1.19.5").map_err(|e| e.0)?, CiliumVersion::parse(VERSION).map_err(|e| e.0)?);
    runnable(&pins, &first)?;
    runnable(&pins, &second)?;
    if planes_at_once(mem_available()) < 2 {
        return Err(format!("two control planes need {} MiB free; this machine has {:?} bytes", 2 * (PLANE_BYTES >> 20), mem_available()));
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let evidence = tmp.path().join("evidence");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // No warm plane of the user's is used.
        .env(layout_gate::lanes::operator::warm::DIR_ENV, tmp.path().join("warm"))
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(["run", "--lane", "operator", "--case", "dns01-default", "--cilium", "1.19.5", "--cilium", VERSION, "--evidence-dir"])
        .arg(&evidence)
        .output()
        .map_err(|e| e.to_string())?;
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let mut problems = Vec::new();
    if !o.status.success() {
        problems.push(format!("exit {:?}", o.status.code()));
    }
    let line = said.lines().find(|l| l.contains(&format!("Cilium {VERSION}: control plane came up beside the previous version's cases")));
    match line {
        Some(l) if l.contains("start etcd and kube-apiserver") && l.contains("start cilium-operator") => {}
        other => problems.push(format!("the second version's early bring-up and its phases are not said: {other:?}")),
    }
    let mut runs: Vec<Evidence> = Vec::new();
    for entry in std::fs::read_dir(&evidence).map_err(|e| format!("{}: {e}\n{said}", evidence.display()))?.flatten() {
        let file = entry.path().join("evidence.json");
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        runs.push(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?);
    }
    runs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let [a, b] = runs.as_slice() else { return Err(format!("{} evidence files, not 2:\n{said}", runs.len())) };
    for ev in [a, b] {
        if ev.cases.len() != 1 || ev.cases.iter().any(|c| c.outcome != layout_gate::judge::Outcome::Pass) {
            problems.push(format!(
                "{}: cases {:?}, not run {:?}",
                ev.run_id,
                ev.cases.iter().map(|c| (&c.name, c.outcome)).collect::<Vec<_>>(),
                ev.not_run
            ));
        }
    }
    // The second plane's operator started before the first version's run ended.
    match b.phases.iter().find(|p| p.name == "start cilium-operator") {
        Some(p) if p.started_at < a.finished_at => {}
        other => problems.push(format!(
            "the second version's operator started at {:?}, the first run ended {}",
            other.map(|p| &p.started_at),
            a.finished_at
        )),
    }
    if !problems.is_empty() {
        return Err(format!("{}\n{said}", problems.join("\n")));
    }
    Ok(())
}
