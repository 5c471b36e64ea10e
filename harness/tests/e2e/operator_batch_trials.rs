//! `operator_batch::1.19.6::*`: many layouts on one control plane at once answer as each does
//! alone (`lanes::operator::batch` says why they should, from the operator's code). Generated
//! layouts go through `check --lane operator` twice: one at a time, then all side by side; every
//! Gateway's answer is compared in every field class the differential compares, and in whether
//! it was answered at all.

use std::collections::BTreeMap;

use layout_gate::case::CiliumVersion;
use layout_gate::check::{self, GatewayCheck, Options};
use layout_gate::differential::{self, compare};
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
    let batched = answers(&paths, &options(&pins, &v, Batch::new(COUNT)?)?)?;
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
