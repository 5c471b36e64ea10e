//! Many layouts per control plane on the operator lane (`lanes::operator::batch`). Prints, at the
//! version in `LAYOUT_GATE_OPERATOR_CILIUM` (default 1.19.6):
//!
//! * per-layout cost alone (`--batch 1`) and batched (`--batch B`, default: the memory-based
//!   default), over the same `LAYOUT_GATE_BENCH_SMALL` generated layouts (default 8; seed 3);
//!   the control plane's bring-up is timed apart and not counted;
//! * `differential --count N` (`LAYOUT_GATE_BENCH_COUNT`, default 40; seed 3) at batch B: its
//!   wall after the control plane is up (the model, then the operator's cases), and the
//!   bring-up;
//! * peak memory: the highest sum of resident memory over this process and every process it
//!   started (etcd, kube-apiserver, kube-controller-manager, cilium-operator, the local Envoys),
//!   sampled every 100 ms.
//!
//! `cargo bench --bench operator_batch -- [--batch B] [--count N] [--small M] [--no-alone]`.
//!
//! With `--warm`, instead: `check --lane operator` on the cozystack dns01 layout at that version
//! cold (its own control plane), then `operator up` (each bring-up phase) and the same check on
//! the warm plane (best and median of 3), then `operator down`.
//!
//! Targets (issue #25): `--count 200` in under 4 minutes after the control plane is up, peak
//! memory under 2 GiB; `check --lane operator` on a warm plane in under 10 s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use layout_gate::case::CiliumVersion;
use layout_gate::differential::{self, DiffOptions, VersionReport};
use layout_gate::lanes::operator::batch::Batch;
use layout_gate::versions::Pins;

const SEED: u64 = 3;

fn main() {
    let r = if std::env::args().any(|a| a == "--warm") { warm() } else { bench() };
    if let Err(e) = r {
        eprintln!("operator_batch bench: {e}");
        std::process::exit(1);
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn number(flag: &str, env: &str, default: usize) -> Result<usize, String> {
    match arg(flag).or_else(|| std::env::var(env).ok()) {
        Some(s) => s.parse().map_err(|_| format!("{flag}/{env}: {s:?} is not a number")),
        None => Ok(default),
    }
}

/// Resident memory of `pid` and everything below it, in KiB, now.
fn tree_rss_kib(root: u32) -> u64 {
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    let mut rss: BTreeMap<u32, u64> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { continue };
        let field = |k: &str| status.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
        if let Some(pp) = field("PPid:") {
            parent.insert(pid, pp as u32);
        }
        rss.insert(pid, field("VmRSS:").unwrap_or(0));
    }
    let mut mine: BTreeSet<u32> = BTreeSet::from([root]);
    // Descendants: whose parent chain reaches `root`.
    for &pid in parent.keys() {
        let mut p = pid;
        for _ in 0..64 {
            if p == root {
                mine.insert(pid);
                break;
            }
            match parent.get(&p) {
                Some(&pp) if pp != 0 && pp != p => p = pp,
                _ => break,
            }
        }
    }
    mine.iter().filter_map(|p| rss.get(p)).sum()
}

/// Samples the process tree's memory until dropped; the peak so far.
struct PeakMemory {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakMemory {
    fn start() -> PeakMemory {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let me = std::process::id();
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                p.fetch_max(tree_rss_kib(me), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        PeakMemory { peak, stop, thread: Some(thread) }
    }
    fn take(&mut self) -> u64 {
        self.peak.swap(0, Ordering::SeqCst)
    }
}

impl Drop for PeakMemory {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn one(pins: &Pins, v: &CiliumVersion, count: usize, batch: Batch) -> Result<(VersionReport, Duration), String> {
    let opts = DiffOptions {
        seed: SEED,
        count,
        versions: vec![(v.clone(), "--cilium".into())],
        pins: pins.clone(),
        settings: layout_gate::run::Settings::from_env(&layout_gate::lanes::operator::known_settings()),
        timeouts: layout_gate::check::timeouts().map_err(|e| e.to_string())?,
        model_as: None,
        batch,
        timings: Default::default(),
    };
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut reports = runtime.block_on(differential::run(&opts, work.path()))?;
    let wall = t.elapsed();
    let r = reports.pop().ok_or("no report")?;
    if let Some(why) = &r.not_runnable {
        return Err(why.clone());
    }
    if !r.errors.is_empty() {
        return Err(format!("{} Gateway(s) not answered: {:?}", r.errors.len(), r.errors.first()));
    }
    Ok((r, wall))
}

fn bench() -> Result<(), String> {
    let pins = Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = CiliumVersion::parse(&std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").unwrap_or_else(|_| "1.19.6".into())).map_err(|e| e.0)?;
    let batch = match arg("--batch") {
        Some(b) => b.parse::<Batch>()?,
        None => Batch::default_here(),
    };
    let count = number("--count", "LAYOUT_GATE_BENCH_COUNT", 40)?;
    let small = number("--small", "LAYOUT_GATE_BENCH_SMALL", 8)?;
    let alone = !std::env::args().any(|a| a == "--no-alone");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "operator lane, many layouts per control plane: Cilium {v}, seed {SEED}, batch {batch}; {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let mut peak = PeakMemory::start();
    if alone && small > 0 {
        let (a, _) = one(&pins, &v, small, Batch::ONE)?;
        let alone_peak = peak.take();
        let (b, _) = one(&pins, &v, small, batch)?;
        let batched_peak = peak.take();
        println!(
            "per layout, {small} layouts: alone {:.2} s, batched ({batch} at once) {:.2} s: {:.1}x",
            a.per_layout_seconds,
            b.per_layout_seconds,
            a.per_layout_seconds / b.per_layout_seconds.max(1e-9)
        );
        println!("  agreeing with the model: alone {} of {small}, batched {} of {small}", a.agreed, b.agreed);
        println!("  peak memory: alone {:.0} MiB, batched {:.0} MiB", alone_peak as f64 / 1024.0, batched_peak as f64 / 1024.0);
    }
    if count > 0 {
        let (r, wall) = one(&pins, &v, count, batch)?;
        let after = wall.as_secs_f64() - r.control_plane_seconds;
        println!(
            "differential --count {count} --batch {batch}: {:.1} s after the control plane was up ({:.1} s to come up; {:.1} s in all); {:.2} s per layout on the operator lane",
            after,
            r.control_plane_seconds,
            wall.as_secs_f64(),
            r.per_layout_seconds
        );
        println!("  {} of {count} layouts agree with the model", r.agreed);
        println!("  peak memory (this process and every process it started): {:.0} MiB", peak.take() as f64 / 1024.0);
    }
    Ok(())
}

fn lg(warm_dir: &std::path::Path, args: &[&str]) -> Result<(std::process::Output, Duration), String> {
    let t = Instant::now();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env(layout_gate::lanes::operator::warm::DIR_ENV, warm_dir)
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    Ok((o, t.elapsed()))
}

/// Cold and warm `check --lane operator` on the cozystack dns01 layout.
fn warm() -> Result<(), String> {
    let v = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").unwrap_or_else(|_| "1.19.6".into());
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = format!("{}/harness/tests/data/check/cozystack-dns01-app-namespaces.yaml", env!("CARGO_MANIFEST_DIR"));
    let check: Vec<&str> = vec!["check", "--lane", "operator", &file, "--cilium", &v, "--baseline", &v];
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "check --lane operator, cozystack dns01, Cilium {v}; load average {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let answered = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).contains("tls-api");
    let (o, cold) = lg(dir.path(), &check)?;
    if !answered(&o) {
        return Err(format!("cold check gave no answer:\n{}", String::from_utf8_lossy(&o.stderr)));
    }
    println!("cold (its own control plane): {:.1} s", cold.as_secs_f64());
    let (o, up) = lg(dir.path(), &["operator", "up", "--cilium", &v, "--idle", "10m"])?;
    if !o.status.success() {
        return Err(format!("operator up:\n{}", String::from_utf8_lossy(&o.stderr)));
    }
    println!("operator up: {:.1} s", up.as_secs_f64());
    for l in String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with("  ") && l.contains(": ") && !l.contains("kubeconfig")) {
        println!("  {}", l.trim());
    }
    let mut times = Vec::new();
    let mut failure = None;
    for _ in 0..3 {
        let (o, t) = lg(dir.path(), &check)?;
        if !answered(&o) || !String::from_utf8_lossy(&o.stderr).contains("on the warm control plane") {
            failure = Some(String::from_utf8_lossy(&o.stderr).into_owned());
            break;
        }
        times.push(t.as_secs_f64());
    }
    let _ = lg(dir.path(), &["operator", "down"]);
    if let Some(f) = failure {
        return Err(format!("warm check did not answer on the warm plane:\n{f}"));
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!("warm (operator up): best {:.1} s, median {:.1} s of {}", times[0], times[times.len() / 2], times.len());
    Ok(())
}
