//! The operator lane: Cilium's own operator from the tag on a local control plane. Prints, for
//! the version in `LAYOUT_GATE_OPERATOR_CILIUM` (default: the pins' default):
//!
//! * the control plane ready (etcd + kube-apiserver + CRDs + chart + cilium-operator healthy and
//!   the GatewayClass accepted), from nothing running;
//! * one case (the median over the catalogue) and the whole catalogue at that version;
//! * peak memory: the high-water RSS of etcd, kube-apiserver, cilium-operator and this process.
//!
//! With `--control-plane`: the control plane ready and each of its phases, then stop (no
//! catalogue).
//!
//! With `--cold-build`, instead: `scripts/install-control-plane.sh` into a fresh folder with a
//! fresh Go build cache (the module cache kept: downloads are the network's, not the build's),
//! and each binary's build time and size from its build.json.
//!
//! Targets (issue #16): control plane ready < 30 s; the catalogue at one version < 3 min.

use std::path::Path;
use std::time::Instant;

use layout_gate::judge::Outcome;
use layout_gate::lanes::operator::suite::Suite;

fn main() {
    // Nothing a benchmark sends leaves the machine: its probes, and those of every layout-gate it
    // starts, go only to loopback (layout_gate::observe::probe::reach).
    // SAFETY: the first statement of main, before any thread starts.
    unsafe { std::env::set_var(layout_gate::observe::probe::reach::LOCAL_ONLY_ENV, "1") };
    let cold = std::env::args().any(|a| a == "--cold-build");
    let control_plane_only = std::env::args().any(|a| a == "--control-plane");
    let r = if cold { cold_build() } else { lane(control_plane_only) };
    if let Err(e) = r {
        eprintln!("operator_lane bench: {e}");
        std::process::exit(1);
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn lane(control_plane_only: bool) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").ok();
    let evidence = tempfile::tempdir().map_err(|e| e.to_string())?;
    let suite = Suite::prepare(&root.join("cases"), evidence.path(), version.as_deref()).map_err(|e| e.to_string())?;
    suite.prerequisites().map_err(|m| m.reason)?;
    println!("operator lane, Cilium {} ({} cases with an expectation at it)", suite.setup.version, suite.case_names().len());
    let ready = suite.start()?;
    println!("control plane ready: {:.2} s", ready.as_secs_f64());
    for (name, ms) in suite.phases() {
        println!("  {name}: {:.2} s", ms as f64 / 1000.0);
    }
    if control_plane_only {
        return Ok(());
    }
    let started = Instant::now();
    let mut times = Vec::new();
    let (mut passed, mut failed) = (0, Vec::new());
    for name in suite.case_names() {
        let t = Instant::now();
        let ev = suite.run_case_evidence(&name)?;
        times.push(t.elapsed().as_secs_f64());
        if ev.outcome == Outcome::Pass { passed += 1 } else { failed.push(name) }
    }
    let wall = started.elapsed().as_secs_f64();
    times.sort_by(|a, b| a.total_cmp(b));
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!("catalogue: {} cases in {wall:.1} s ({passed} passed, {} failed: {})", times.len(), failed.len(), failed.join(", "));
    println!("one case: median {median:.2} s, best {:.2} s, worst {:.2} s", times.first().unwrap_or(&0.0), times.last().unwrap_or(&0.0));
    let mut total = vm_hwm_kib(std::process::id()).unwrap_or(0);
    println!("peak RSS: layout-gate {:.1} MiB", total as f64 / 1024.0);
    for (name, pid) in suite.pids() {
        let k = vm_hwm_kib(pid).unwrap_or(0);
        total += k;
        println!("peak RSS: {name} {:.1} MiB", k as f64 / 1024.0);
    }
    println!("peak RSS, all together: {:.1} MiB (the local Envoys, one per case, come and go: not counted)", total as f64 / 1024.0);
    println!("end-to-end (control plane + catalogue): {:.1} s", ready.as_secs_f64() + wall);
    Ok(())
}

fn cold_build() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cache = tempfile::tempdir().map_err(|e| e.to_string())?;
    let version: Vec<String> = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").ok().into_iter().collect();
    let t = Instant::now();
    let status = std::process::Command::new(root.join("scripts/install-control-plane.sh"))
        .args(&version)
        .env("LAYOUT_GATE_CONTROL_PLANE_DIR", out.path())
        .env("GOCACHE", cache.path())
        .status()
        .map_err(|e| format!("running scripts/install-control-plane.sh: {e}"))?;
    if !status.success() {
        return Err(format!("scripts/install-control-plane.sh exited {status}"));
    }
    println!("cold build, all of it: {:.0} s", t.elapsed().as_secs_f64());
    for entry in walk(out.path()) {
        let text = std::fs::read_to_string(&entry).map_err(|e| e.to_string())?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        if let Some(secs) = v.get("build_seconds") {
            println!(
                "{} {}: {} s, {:.1} MiB ({} {})",
                v["component"].as_str().unwrap_or("?"),
                v["version"].as_str().unwrap_or("?"),
                secs,
                v["bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
                v["module"].as_str().unwrap_or("?"),
                v["module_version"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.file_name().is_some_and(|n| n == "build.json") {
            out.push(p);
        }
    }
    out.sort();
    out
}
