//! `differential::1.19.6::*`: `layout-gate differential` end to end on Cilium 1.19.6's own
//! operator (the control plane of the operator lane; a missing build fails naming the command).

use std::path::PathBuf;
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn runnable() -> Result<(), String> {
    runnable_at("1.19.6")
}

fn runnable_at(version: &str) -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(version).map_err(|e| e.0)?;
    match layout_gate::check::operator::not_runnable(&pins, &v) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

fn differential(args: &[&str]) -> Result<(Output, String), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(repo())
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(["differential", "--cilium", "1.19.6"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if text.contains('\u{1b}') {
        return Err("ANSI escape codes in a pipe".into());
    }
    Ok((out, text))
}

/// `--seed 1 --count 3`: every field class is reported with its Gateways compared, the layouts
/// that agree are counted, and the exit status says the same as the report.
pub fn seed_1_count_3() -> Result<(), String> {
    runnable()?;
    let (out, text) = differential(&["--seed", "1", "--count", "3"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !text.contains("Cilium 1.19.6: ") || !text.contains(" of 3 layouts agree") {
        return Err(format!("no per-version line:\n{text}\n{err}"));
    }
    for class in layout_gate::differential::compare::Class::ALL {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(class.as_str()))
            .ok_or_else(|| format!("no {} line:\n{text}", class.as_str()))?;
        if line.contains(" 0/0 ") {
            return Err(format!("nothing compared in {}:\n{text}", class.as_str()));
        }
    }
    match (out.status.code(), text.contains("\nno disagreement")) {
        (Some(0), true) | (Some(1), false) => Ok(()),
        (code, _) => Err(format!("exit {code:?} does not match the report:\n{text}\n{err}")),
    }
}

/// A deliberately wrong model (1.19.5's rules predicting 1.19.6, through the hidden
/// `--model-as` hook) disagrees with Cilium 1.19.6's operator and exits 1: on the first seed
/// whose layout the two versions' rules answer differently (found here without Envoy). The same
/// layout is also put to the right model: the wrong one must agree in fewer Gateways in some
/// field class, so the trial fails if the wrong rule goes unnoticed even where the layout has
/// other, known differences.
pub fn a_wrong_model_rule_is_a_disagreement() -> Result<(), String> {
    runnable()?;
    let seed = seed_where_1_19_5_and_1_19_6_differ()?.to_string();
    // With --record-figures, which a wrong model must not write: the report is printed first
    // all the same (a refusal once lost a 21-minute --count 200 report), then the refusal, exit 2,
    // and the figures file is untouched.
    let figures = repo().join(layout_gate::lanes::model::differential_figures::PATH);
    let before = std::fs::read_to_string(&figures).map_err(|e| e.to_string())?;
    let (out, wrong) = differential(&["--seed", &seed, "--count", "1", "--model-as", "1.19.5", "--record-figures"])?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if out.status.code() != Some(2) || !wrong.contains("DISAGREEMENT") || !wrong.contains("first ") || !err.contains("--model-as") {
        return Err(format!("seed {seed}: exit {:?}, want 2 after a report with a disagreement:\n{wrong}\n{err}", out.status.code()));
    }
    if std::fs::read_to_string(&figures).map_err(|e| e.to_string())? != before {
        return Err("a wrong model's figures were recorded".into());
    }
    let (out, right) = differential(&["--seed", &seed, "--count", "1"])?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!("seed {seed}, the right model: exit {:?}:\n{right}", out.status.code()));
    }
    let (w, r) = (agreeing(&wrong), agreeing(&right));
    if r.is_empty() || !w.iter().any(|(class, n)| r.get(class).is_some_and(|m| n < m)) {
        return Err(format!("seed {seed}: the wrong model agrees wherever the right one does:\nwrong:\n{wrong}\nright:\n{right}"));
    }
    Ok(())
}

/// Two versions asked together: the second one's control plane comes up while the first is
/// compared, and its `check` takes it (said with its phases) instead of starting its own; both
/// versions are answered.
pub fn versions_asked_together_come_up_side_by_side() -> Result<(), String> {
    use layout_gate::lanes::operator::batch::{PLANE_BYTES, mem_available, planes_at_once};
    runnable_at("1.19.5")?;
    runnable_at("1.19.6")?;
    if planes_at_once(mem_available()) < 2 {
        return Err(format!("two control planes need {} MiB free; this machine has {:?} bytes", 2 * (PLANE_BYTES >> 20), mem_available()));
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(repo())
        // No warm plane of the user's is used.
        .env(layout_gate::lanes::operator::warm::DIR_ENV, tmp.path().join("warm"))
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(["differential", "--cilium", "1.19.5", "--cilium", "1.19.6", "--seed", "1", "--count", "2"])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    let mut problems = Vec::new();
    for v in ["1.19.5", "1.19.6"] {
        if !text.contains(&format!("Cilium {v}: ")) || text.contains(&format!("Cilium {v}: not runnable")) {
            problems.push(format!("no answer at {v}"));
        }
    }
    if !matches!(out.status.code(), Some(0 | 1)) || text.contains("NOT ANSWERED") {
        problems.push(format!("exit {:?}: a version was not answered", out.status.code()));
    }
    let early = |v: &str| {
        err.lines()
            .find(|l| l.contains(&format!("Cilium {v}: control plane came up beside the previous version's cases")))
            .map(str::to_string)
    };
    match early("1.19.6") {
        Some(l) if l.contains("start etcd and kube-apiserver") && l.contains("start cilium-operator") => {}
        other => problems.push(format!("1.19.6's early bring-up and its phases are not said: {other:?}")),
    }
    if let Some(l) = early("1.19.5") {
        problems.push(format!("the first version has no previous one to come up beside: {l}"));
    }
    if !problems.is_empty() {
        return Err(format!("{}\n{text}\n{err}", problems.join("\n")));
    }
    Ok(())
}

/// Per field class, how many Gateways agree (`  CLASS  N/M Gateways agree`).
fn agreeing(text: &str) -> std::collections::BTreeMap<String, usize> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let class = w.next()?;
            let n = w.next()?.split('/').next()?.parse().ok()?;
            (w.next()? == "Gateways").then(|| (class.to_string(), n))
        })
        .collect()
}

fn seed_where_1_19_5_and_1_19_6_differ() -> Result<u64, String> {
    use layout_gate::case::CiliumVersion;
    use layout_gate::check::{self, Options};
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = CiliumVersion::parse("1.19.6").map_err(|e| e.0)?;
    let old = CiliumVersion::parse("1.19.5").map_err(|e| e.0)?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let opts = |assume: bool| Options {
        versions: vec![(v.clone(), "test".into())],
        envoy: false,
        timeouts: check::timeouts().unwrap_or_else(|_| check::check_defaults()),
        plan: check::EnvoyPlan::Shared,
        complete: true,
        assume: if assume { [(v.clone(), old.clone())].into_iter().collect() } else { Default::default() },
        extra_sni: Vec::new(),
        operator: None,
        each_file: true,
    };
    for seed in 1..400u64 {
        let layouts = layout_gate::differential::layouts_for(&pins, &v, seed, 1);
        let paths = layout_gate::differential::write_layouts(tmp.path(), &layouts)?;
        let (_, a) = rt.block_on(check::check_paths(&paths, &opts(false))).map_err(|e| e.to_string())?;
        let (_, b) = rt.block_on(check::check_paths(&paths, &opts(true))).map_err(|e| e.to_string())?;
        if layout_gate::differential::tally("1.19.6", 1, &a, &b).disagrees() {
            return Ok(seed);
        }
    }
    Err("no seed below 400 whose layout 1.19.5's and 1.19.6's rules answer differently".into())
}
