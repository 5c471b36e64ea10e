//! Wall time of the whole model lane: every case of the catalogue at every pinned Cilium
//! version, each on its own real Envoy, as `layout-gate run --lane model` runs them.
//! Target (issue #4): under 30 s on a 2-core machine.

use std::path::Path;
use std::time::Instant;

use layout_gate::judge::Outcome;
use layout_gate::lanes::model;
use layout_gate::versions::Pins;

fn main() {
    if let Err(e) = run() {
        eprintln!("model_lane bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = Pins::load(&root.join(layout_gate::versions::VERSIONS_FILE)).map_err(|p| format!("{p:?}"))?;
    let cases = layout_gate::case::lint(&root.join("cases")).map_err(|p| format!("{p:?}"))?;
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let versions = model::resolve_versions(&pins, &[])?;
    let timeouts = model::model_timeouts().map_err(|e| e.to_string())?;
    let parallel: usize = std::env::var("LAYOUT_GATE_BENCH_PARALLEL").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let mut options = model::ModelOptions::new(timeouts);
    options.jobs = std::num::NonZeroUsize::new(parallel).unwrap_or(model::DEFAULT_JOBS);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let mut walls = Vec::new();
    let mut last = (0, 0);
    for _ in 0..3 {
        let t = Instant::now();
        let evs = runtime.block_on(model::run_all(&cases, &versions, &options, |_, _| {}, std::future::pending())).evidence;
        walls.push(t.elapsed().as_secs_f64());
        let runs: usize = evs.iter().map(|e| e.cases.len()).sum();
        let passed: usize = evs.iter().map(|e| e.cases.iter().filter(|c| c.outcome == Outcome::Pass).count()).sum();
        last = (runs, passed);
    }
    walls.sort_by(|a, b| a.total_cmp(b));
    println!("model lane: {} cases x {} versions = {} runs, {} passed, {parallel} at a time", cases.len(), versions.len(), last.0, last.1);
    println!("  wall time  best {:.2} s   median {:.2} s   worst {:.2} s (3 runs)", walls[0], walls[1], walls[2]);
    println!("  target     < 30 s: {}", if walls[1] < 30.0 { "met" } else { "NOT MET" });
    Ok(())
}
