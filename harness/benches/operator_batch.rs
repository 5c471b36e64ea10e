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
//! the warm plane (best and median of 3), then `operator down`; and `run --lane operator --case
//! dns01-default` cold and on the warm plane.
//!
//! With `--tree`, instead: the `layout-gate` binary's `differential --seed 3 --count N --batch B
//! --cilium V` (default N 200, B 16) under `/usr/bin/time -v`, its process tree (layout-gate, the
//! control plane's etcd, kube-apiserver, kube-controller-manager and cilium-operator, every local
//! Envoy) read from `/proc` every 200 ms: the highest sum of resident memory seen, and per
//! process its own peak (`VmHWM`) summed by command (an upper bound of the tree's peak: the
//! processes need not peak together). `time -v`'s "Maximum resident set size" is one process's
//! peak, the largest in the tree (`getrusage` over waited-for children), not the tree's. Also the
//! wall time, and the wall after the control plane was up (the differential's own figures).
//!
//! With `--run`, instead: the binary's `run --lane operator --cilium V` over the whole catalogue,
//! `--batch 1` then `--batch B` (default 16): wall time, wall after the control plane was up,
//! cases passed, and the process tree's peak memory for each.
//!
//! With `--agent`, instead: on a warm plane (`operator up`), `run --lane operator` with the
//! emulated agent step and with Cilium's own agent (`LAYOUT_GATE_AGENT_STEP`), in turn, 3 times
//! each: one case (dns01-default; Cilium's agent, its bridge and Envoy start in it) and five
//! cases (the cost of each case after the first), and the agent's own start (`start_ms`, its
//! hive) as the evidence says it.
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
    // Nothing a benchmark sends leaves the machine: its probes, and those of every layout-gate it
    // starts, go only to loopback (layout_gate::observe::probe::reach).
    // SAFETY: the first statement of main, before any thread starts.
    unsafe { std::env::set_var(layout_gate::observe::probe::reach::LOCAL_ONLY_ENV, "1") };
    // The figures of the operator lane's batches are the emulated agent step's (Cilium's own
    // agent runs one case at a time); `--agent` names the step for each of its runs.
    // SAFETY: as above.
    unsafe { std::env::set_var(layout_gate::lanes::operator::plane::STEP_ENV, "emulated") };
    let has = |f: &str| std::env::args().any(|a| a == f);
    let r = if has("--agent") {
        agent_step()
    } else if has("--warm") {
        warm()
    } else if has("--tree") {
        tree_differential()
    } else if has("--run") {
        run_catalogue()
    } else {
        bench()
    };
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

/// One process of a tree: its command, resident memory now and its peak so far, in KiB.
#[derive(Debug, Clone)]
struct Proc {
    comm: String,
    rss: u64,
    hwm: u64,
}

/// `root` and every process below it, now.
fn tree(root: u32) -> BTreeMap<u32, Proc> {
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    let mut procs: BTreeMap<u32, Proc> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return procs };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { continue };
        let field = |k: &str| status.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
        if let Some(pp) = field("PPid:") {
            parent.insert(pid, pp as u32);
        }
        let comm = status.lines().find_map(|l| l.strip_prefix("Name:")).unwrap_or("").trim().to_string();
        procs.insert(pid, Proc { comm, rss: field("VmRSS:").unwrap_or(0), hwm: field("VmHWM:").unwrap_or(0) });
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
    procs.retain(|pid, _| mine.contains(pid));
    procs
}

/// Resident memory of `pid` and everything below it, in KiB, now.
fn tree_rss_kib(root: u32) -> u64 {
    tree(root).values().map(|p| p.rss).sum()
}

/// Per command: how many processes, and their resident memory (KiB) summed.
type ByCommand = BTreeMap<String, (usize, u64)>;

fn by_command(procs: &BTreeMap<u32, Proc>, kib: impl Fn(&Proc) -> u64) -> ByCommand {
    let mut by = ByCommand::new();
    for p in procs.values() {
        let e = by.entry(p.comm.clone()).or_default();
        e.0 += 1;
        e.1 += kib(p);
    }
    by
}

/// A process tree watched every 200 ms until [`TreeWatch::finish`]: the highest sum of resident
/// memory seen and what each command held at that moment, and each process's own peak
/// (`VmHWM`, the highest read: a process on its way out reads none).
struct TreeWatch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<TreeMemory>>,
}

#[derive(Default)]
struct TreeMemory {
    /// The highest sum of resident memory seen (KiB), and per command at that moment.
    peak: u64,
    at_peak: ByCommand,
    /// Per command: processes seen, and the largest own peak of one of them (KiB).
    largest: BTreeMap<String, (usize, u64)>,
}

impl TreeWatch {
    fn start(root: u32) -> TreeWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut m = TreeMemory::default();
            let mut hwm: BTreeMap<u32, (String, u64)> = BTreeMap::new();
            while !s.load(Ordering::SeqCst) {
                let now = tree(root);
                let sum = now.values().map(|p| p.rss).sum();
                if sum > m.peak {
                    m.peak = sum;
                    m.at_peak = by_command(&now, |p| p.rss);
                }
                for (pid, p) in now {
                    let e = hwm.entry(pid).or_insert_with(|| (p.comm.clone(), 0));
                    e.1 = e.1.max(p.hwm);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            for (comm, peak) in hwm.into_values() {
                let e = m.largest.entry(comm).or_default();
                e.0 += 1;
                e.1 = e.1.max(peak);
            }
            m
        });
        TreeWatch { stop, thread: Some(thread) }
    }

    fn finish(mut self) -> TreeMemory {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

/// The tree's peak, what each command held then, and each command's largest own peak.
fn print_tree(m: &TreeMemory) {
    println!("  peak of the tree's summed resident memory (sampled every 200 ms): {}; at that moment:", mib(m.peak));
    let mut rows: Vec<(&String, &(usize, u64))> = m.at_peak.iter().collect();
    rows.sort_by_key(|(_, (_, kib))| std::cmp::Reverse(*kib));
    for (comm, (n, kib)) in rows {
        println!("    {comm}{}: {}", if *n == 1 { String::new() } else { format!(" x{n}") }, mib(*kib));
    }
    let largest: Vec<String> = m
        .largest
        .iter()
        .map(|(comm, (n, peak))| format!("{comm} {}{}", mib(*peak), if *n == 1 { String::new() } else { format!(" (largest of {n})") }))
        .collect();
    println!("  each command's own peak (VmHWM): {}", largest.join(", "));
}

/// `command` (a layout-gate command line) under `/usr/bin/time -v`, its tree watched; its
/// stdout, time's report (stderr), exit code, wall, and the tree's memory.
struct Timed {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    wall: Duration,
    memory: TreeMemory,
}

fn timed(args: &[String]) -> Result<Timed, String> {
    const TIME: &str = "/usr/bin/time";
    if !std::path::Path::new(TIME).is_file() {
        return Err(format!("{TIME} is missing: install GNU time (apt-get install time)"));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let file = |p: &std::path::Path| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    let t = Instant::now();
    let mut child = std::process::Command::new(TIME)
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_layout-gate"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("LAYOUT_GATE_PROGRESS")
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .spawn()
        .map_err(|e| format!("{TIME}: {e}"))?;
    let watch = TreeWatch::start(child.id());
    let status = child.wait().map_err(|e| e.to_string())?;
    let wall = t.elapsed();
    let memory = watch.finish();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    Ok(Timed { stdout: read(&out), stderr: read(&err), code: status.code(), wall, memory })
}

/// A line of `time -v`'s report, by its label.
fn time_field<'a>(stderr: &'a str, label: &str) -> Option<&'a str> {
    stderr.lines().find_map(|l| l.trim().strip_prefix(label)).map(|v| v.trim_start_matches(':').trim())
}

fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// `differential --count N --batch B` under `/usr/bin/time -v`, its process tree's memory.
fn tree_differential() -> Result<(), String> {
    let v = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").unwrap_or_else(|_| "1.19.6".into());
    let count = number("--count", "LAYOUT_GATE_BENCH_COUNT", 200)?;
    let batch: Batch = arg("--batch")
        .unwrap_or_else(|| "16".into())
        .parse()
        .map_err(|e: layout_gate::lanes::cluster::batch::BatchSizeError| e.to_string())?;
    let args: Vec<String> =
        ["differential", "--seed", &SEED.to_string(), "--count", &count.to_string(), "--batch", &batch.to_string(), "--cilium", &v]
            .iter()
            .map(|s| s.to_string())
            .collect();
    println!("layout-gate {} under /usr/bin/time -v; {} cores, load average {}", args.join(" "), cores(), load_average());
    let t = timed(&args)?;
    // `Cilium V: A of N layouts agree (Ws; control plane Us, then Ps per layout on the operator
    // lane, B at once)`, the differential's own summary line.
    let prefix = format!("Cilium {v}: ");
    let summary = t
        .stdout
        .lines()
        .find(|l| l.starts_with(&prefix) && l.contains("layouts agree ("))
        .ok_or_else(|| format!("no summary line in the differential's output; exit {:?}\n{}", t.code, tail(&t.stderr)))?;
    let seconds = |after: &str| -> f64 {
        summary.split(after).nth(1).and_then(|r| r.split('s').next()).and_then(|n| n.trim().parse().ok()).unwrap_or(0.0)
    };
    let (wall, up) = (seconds("agree ("), seconds("control plane "));
    println!("  exit {:?}: {summary}", t.code);
    // Whatever did not agree, as the differential says it.
    for l in t.stdout.lines().skip_while(|l| *l != summary).skip(1).take_while(|l| l.starts_with("  ")).take(40) {
        println!("  | {l}");
    }
    println!(
        "  wall: {:.1} s in all (the process); the differential {wall:.1} s, of it the control plane {up:.1} s: {:.1} s after it was up",
        t.wall.as_secs_f64(),
        wall - up
    );
    println!(
        "  /usr/bin/time -v: Maximum resident set size {} kB (one process, the largest in the tree); Elapsed {}",
        time_field(&t.stderr, "Maximum resident set size (kbytes)").unwrap_or("?"),
        time_field(&t.stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)").unwrap_or("?")
    );
    print_tree(&t.memory);
    Ok(())
}

/// The last lines of a long text.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// `run --lane operator` over the catalogue, one case at a time and then batched.
fn run_catalogue() -> Result<(), String> {
    let v = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").unwrap_or_else(|_| "1.19.6".into());
    let batch: Batch = arg("--batch")
        .unwrap_or_else(|| "16".into())
        .parse()
        .map_err(|e: layout_gate::lanes::cluster::batch::BatchSizeError| e.to_string())?;
    println!("run --lane operator --cilium {v}, the whole catalogue; {} cores, load average {}", cores(), load_average());
    let mut walls = Vec::new();
    for b in [Batch::ONE, batch] {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let args: Vec<String> = ["run", "--lane", "operator", "--cilium", &v, "--batch", &b.to_string(), "--evidence-dir"]
            .iter()
            .map(|s| s.to_string())
            .chain([dir.path().display().to_string()])
            .collect();
        let t = timed(&args)?;
        let file = std::fs::read_dir(dir.path())
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.path().join("evidence.json"))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("--batch {b}: no evidence (exit {:?})\n{}", t.code, tail(&t.stderr)))?;
        let ev: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let cases = ev["cases"].as_array().cloned().unwrap_or_default();
        let passed = cases.iter().filter(|c| c["outcome"] == "pass").count();
        // The bring-up's phases are the ones not named after a case (`<case>: <phase>`).
        let up_ms: u64 = ev["phases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| !p["name"].as_str().unwrap_or("").contains(": "))
            .filter_map(|p| p["duration_ms"].as_u64())
            .sum();
        let up = up_ms as f64 / 1000.0;
        println!(
            "--batch {b}: {:.1} s in all, control plane {:.1} s, {:.1} s after it was up; {passed} of {} cases passed (exit {:?}; evidence {}: {})",
            t.wall.as_secs_f64(),
            up,
            t.wall.as_secs_f64() - up,
            cases.len(),
            t.code,
            layout_gate::lanes::cluster::batch::CASES_AT_ONCE_KEY,
            ev["environment"][layout_gate::lanes::cluster::batch::CASES_AT_ONCE_KEY]
        );
        print_tree(&t.memory);
        walls.push(t.wall.as_secs_f64() - up);
    }
    if let [alone, batched] = walls[..] {
        println!(
            "after the control plane was up: one at a time {alone:.1} s, {batch} at once {batched:.1} s: {:.1}x",
            alone / batched.max(1e-9)
        );
    }
    Ok(())
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
        Some(b) => b.parse::<Batch>().map_err(|e| e.to_string())?,
        None => layout_gate::lanes::operator::batch::default_here(),
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
    lg_with(warm_dir, args, &[])
}

fn lg_with(warm_dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Result<(std::process::Output, Duration), String> {
    let t = Instant::now();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .envs(env.iter().copied())
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
    let evidence = dir.path().join("evidence");
    let evidence = evidence.to_string_lossy();
    let run: Vec<&str> = vec!["run", "--lane", "operator", "--case", "dns01-default", "--cilium", &v, "--evidence-dir", &evidence];
    let (o, run_cold) = lg(dir.path(), &run)?;
    if !o.status.success() {
        return Err(format!("cold run:\n{}", String::from_utf8_lossy(&o.stderr)));
    }
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
    let run_warm = match lg(dir.path(), &run) {
        Ok((o, t)) if o.status.success() && String::from_utf8_lossy(&o.stderr).contains("on the warm control plane") => Some(t),
        Ok((o, _)) => {
            failure.get_or_insert_with(|| format!("run on the warm plane:\n{}", String::from_utf8_lossy(&o.stderr)));
            None
        }
        Err(e) => {
            failure.get_or_insert(e);
            None
        }
    };
    let _ = lg(dir.path(), &["operator", "down"]);
    if let Some(f) = failure {
        return Err(format!("warm check did not answer on the warm plane:\n{f}"));
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!("warm (operator up): best {:.1} s, median {:.1} s of {}", times[0], times[times.len() / 2], times.len());
    if let Some(t) = run_warm {
        println!(
            "run --lane operator --case dns01-default: cold {:.1} s, on the warm plane {:.1} s",
            run_cold.as_secs_f64(),
            t.as_secs_f64()
        );
    }
    Ok(())
}

/// `run --lane operator` on a warm plane through the emulated agent step and through Cilium's
/// own agent, one case and five, in turn.
fn agent_step() -> Result<(), String> {
    let v = std::env::var("LAYOUT_GATE_OPERATOR_CILIUM").unwrap_or_else(|_| "1.19.6".into());
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("run --lane operator, Cilium {v}, warm plane; load average {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let (o, _) = lg(dir.path(), &["operator", "up", "--cilium", &v, "--idle", "10m"])?;
    if !o.status.success() {
        return Err(format!("operator up:\n{}", String::from_utf8_lossy(&o.stderr)));
    }
    let evidence = dir.path().join("evidence");
    let evidence = evidence.to_string_lossy().into_owned();
    let one = ["dns01-default"];
    let five = ["dns01-default", "edge-mode", "https-two-ports-one-secret", "passthrough-no-route", "tlsroute-no-hostnames"];
    let mut times: BTreeMap<(&str, usize), Vec<f64>> = BTreeMap::new();
    let mut failure = None;
    'rounds: for _ in 0..3 {
        for step in ["emulated", "cilium"] {
            for cases in [&one[..], &five[..]] {
                let mut args = vec!["run", "--lane", "operator", "--cilium", &v, "--evidence-dir", &evidence];
                for c in cases {
                    args.extend(["--case", c]);
                }
                let (o, t) = lg_with(dir.path(), &args, &[("LAYOUT_GATE_AGENT_STEP", step)])?;
                let err = String::from_utf8_lossy(&o.stderr);
                if !err.contains("on the warm control plane")
                    || !String::from_utf8_lossy(&o.stdout).contains(&format!("{} passed", cases.len()))
                        && !err.contains(&format!("{} passed", cases.len()))
                {
                    // Both streams: a failed case is said on stdout (its phase and why), the run's
                    // own errors on stderr.
                    failure = Some(format!(
                        "{step}, {} case(s): exit {:?}\n{}\n{err}",
                        cases.len(),
                        o.status.code(),
                        tail(&String::from_utf8_lossy(&o.stdout))
                    ));
                    break 'rounds;
                }
                times.entry((step, cases.len())).or_default().push(t.as_secs_f64());
            }
        }
    }
    let _ = lg(dir.path(), &["operator", "down"]);
    if let Some(f) = failure {
        return Err(f);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    for step in ["emulated", "cilium"] {
        let m1 = median(times.get_mut(&(step, 1)).ok_or("no one-case time")?);
        let m5 = median(times.get_mut(&(step, 5)).ok_or("no five-case time")?);
        println!(
            "agent step {step}: one case {m1:.1} s, five cases {m5:.1} s (median of 3), each case after the first {:.1} s",
            (m5 - m1) / 4.0
        );
    }
    // The agent's own start, from the evidence of the runs through it.
    let mut starts = Vec::new();
    for e in std::fs::read_dir(&evidence).map_err(|e| e.to_string())?.flatten() {
        let text = std::fs::read_to_string(e.path().join("evidence.json")).unwrap_or_default();
        let ev: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let env = ev.get("environment").and_then(serde_json::Value::as_object).cloned().unwrap_or_default();
        // One figure per run (each case's environment repeats it).
        if let Some(ms) = env
            .iter()
            .find(|(k, _)| k.starts_with("agent_step.start"))
            .and_then(|(_, v)| v.as_str()?.split(" ms").next()?.parse::<u64>().ok())
        {
            starts.push(ms);
        }
    }
    if !starts.is_empty() {
        starts.sort();
        println!("Cilium's agent hive start: {} ms median of {}", starts[starts.len() / 2], starts.len());
    }
    Ok(())
}
