//! The model lane over the whole catalogue: every case (the cozystack cases under `cases/` and
//! Cilium's restated fixtures under `cases/cilium/`, when present) at every pinned Cilium
//! version, each on its own real Envoy, as `layout-gate run --lane model` runs them. Prints the
//! wall time of the whole lane (3 rounds), per version, the median of one case run, and the time
//! of `explain` (input, prediction, table) on the largest case.
//! Target (issue #4): the whole lane under 30 s on a 2-core machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use layout_gate::case::Case;
use layout_gate::judge::Outcome;
use layout_gate::lanes::model::{self, explain, input, translate};
use layout_gate::versions::Pins;

fn main() {
    // Nothing a benchmark sends leaves the machine: its probes, and those of every layout-gate it
    // starts, go only to loopback (layout_gate::observe::probe::reach).
    // SAFETY: the first statement of main, before any thread starts.
    unsafe { std::env::set_var(layout_gate::observe::probe::reach::LOCAL_ONLY_ENV, "1") };
    if let Err(e) = run() {
        eprintln!("model_lane bench: {e}");
        std::process::exit(1);
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

/// Every case under `cases/` and `cases/cilium/`, once each.
fn catalogue(root: &Path) -> Result<Vec<Case>, String> {
    let mut seen = BTreeSet::new();
    let mut cases = Vec::new();
    for dir in [root.join("cases"), root.join("cases").join("cilium")] {
        if !dir.is_dir() {
            continue;
        }
        for c in layout_gate::case::lint(&dir).map_err(|p| format!("{}: {p:?}", dir.display()))? {
            if seen.insert(c.dir.clone()) {
                cases.push(c);
            }
        }
    }
    Ok(cases)
}

fn run() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = Pins::load(&root.join(layout_gate::versions::VERSIONS_FILE)).map_err(|p| format!("{p:?}"))?;
    let cases = catalogue(root)?;
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let versions = model::resolve_versions(&pins, &[])?;
    let timeouts = model::model_timeouts().map_err(|e| e.to_string())?;
    let parallel: usize = std::env::var("LAYOUT_GATE_BENCH_PARALLEL").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let mut options = model::ModelOptions::new(timeouts.clone());
    options.jobs = std::num::NonZeroUsize::new(parallel).unwrap_or(model::DEFAULT_JOBS);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;

    // The whole lane, all versions at once, as `run --lane model` does it.
    let mut walls = Vec::new();
    let mut per_run = Vec::new();
    let mut last = (0, 0);
    for _ in 0..3 {
        let t = Instant::now();
        let evs = runtime.block_on(model::run_all(&cases, &versions, &options, |_, _| {}, std::future::pending())).evidence;
        walls.push(t.elapsed().as_secs_f64());
        per_run.extend(evs.iter().flat_map(|e| e.cases.iter().map(|c| c.duration_ms as f64 / 1000.0)));
        let runs: usize = evs.iter().map(|e| e.cases.len()).sum();
        let passed: usize = evs.iter().map(|e| e.cases.iter().filter(|c| c.outcome == Outcome::Pass).count()).sum();
        last = (runs, passed);
    }
    walls.sort_by(|a, b| a.total_cmp(b));
    println!("model lane: {} cases x {} versions = {} runs, {} passed, {parallel} at a time", cases.len(), versions.len(), last.0, last.1);
    println!("  wall time  best {:.2} s   median {:.2} s   worst {:.2} s (3 rounds)", walls[0], walls[1], walls[2]);
    println!("  one case run (model + Envoy + probes): median {:.3} s over {} runs", median(&mut per_run), per_run.len());
    println!("  target     < 30 s: {}", if walls[1] < 30.0 { "met" } else { "NOT MET" });

    // Each pinned version on its own.
    let mut by_version: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (v, source) in &versions {
        let one = [(v.clone(), source.clone())];
        let t = Instant::now();
        runtime.block_on(model::run_all(&cases, &one, &options, |_, _| {}, std::future::pending()));
        by_version.entry(v.to_string()).or_default().push(t.elapsed().as_secs_f64());
    }
    for (v, t) in &by_version {
        println!("  Cilium {v}: {:.2} s for {} cases", t[0], cases.len());
    }

    // `explain` on the largest case (most manifest text), every version, 20 rounds.
    let largest = cases.iter().max_by_key(|c| c.manifests.iter().map(|m| m.text.len()).sum::<usize>()).ok_or("no case")?;
    let mut times = Vec::new();
    let mut lines = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let model = input::read(largest).map_err(|e| e.to_string())?;
        let text: Vec<String> = versions
            .iter()
            .flat_map(|(v, _)| {
                model.gateways.iter().map(|g| explain::render(&largest.name, g, &translate::predict(g, v))).collect::<Vec<_>>()
            })
            .collect();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        lines = text.iter().map(|t| t.lines().count()).sum();
    }
    println!("  explain {} ({} versions, {lines} lines): median {:.2} ms over 20 rounds", largest.name, versions.len(), median(&mut times));
    Ok(())
}
