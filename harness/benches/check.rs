//! `check` on a generated Gateway with 64 listeners and 200 routes at every pinned Cilium
//! version: wall time and peak memory of the process doing it, as `layout-gate check` runs it
//! (one real Envoy per distinct configuration, versions with byte-identical configurations
//! sharing one; each key confirmed by one observation once the Envoy's listeners are ready).
//! Target (issue #10): under 2 s and under 200 MiB.
//!
//! In the same run and alternating with it: `check` as it would go if no two versions'
//! configurations were identical (`EnvoyPlan::PerVersion`), and the previous way, for the ratio
//! (one Envoy per version and 3 consecutive observations per key).
//!
//! Then `check` on 1,000 Gateways (issue #18: under 60 s), each a tenant's layout (HTTP on 80,
//! a terminated wildcard and a passthrough name on 443, an HTTPRoute and a TLSRoute, in 50
//! namespaces), at every pinned version: Envoys are shared between Gateways, each Gateway under
//! its own names on its own held addresses.
//!
//! The parent writes the manifests and re-executes itself as a child that runs one check and
//! reports its own peak RSS (VmHWM), several times; the Envoy processes are children of the
//! child and their memory is not in the figure (it is printed apart, from their VmHWM while
//! they run, when /proc allows).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use layout_gate::check::{self, EnvoyPlan, Options};
use layout_gate::versions::Pins;

const CHILD_FLAG: &str = "--check-child";
const RUNS: usize = 5;
const MANY_RUNS: usize = 3;

fn main() {
    // Nothing a benchmark sends leaves the machine: its probes, and those of every layout-gate it
    // starts, go only to loopback (layout_gate::observe::probe::reach).
    // SAFETY: the first statement of main, before any thread starts.
    unsafe { std::env::set_var(layout_gate::observe::probe::reach::LOCAL_ONLY_ENV, "1") };
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == CHILD_FLAG) {
        let mode = args.get(i + 2).map(String::as_str).unwrap_or("shared");
        match child(Path::new(&args[i + 1]), mode) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("check bench child: {e}");
                std::process::exit(1);
            }
        }
    }
    if let Err(e) = parent() {
        eprintln!("check bench: {e}");
        std::process::exit(1);
    }
}

/// 64 listeners (1 HTTP, 32 HTTPS wildcards with their own Secrets, 31 TLS passthrough) and
/// 200 routes (169 HTTPRoutes under the wildcards, 31 TLSRoutes).
pub fn manifests() -> String {
    let mut s = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: big, namespace: bench}\nspec:\n  gatewayClassName: cilium\n  listeners:\n  - {name: http, port: 80, protocol: HTTP}\n",
    );
    for i in 0..32 {
        let _ = writeln!(
            s,
            "  - {{name: https-{i}, port: 443, protocol: HTTPS, hostname: \"*.app{i}.example.test\", tls: {{mode: Terminate, certificateRefs: [{{name: app{i}-tls}}]}}}}"
        );
    }
    for i in 0..31 {
        let _ = writeln!(s, "  - {{name: tls-{i}, port: 443, protocol: TLS, hostname: tls{i}.example.test, tls: {{mode: Passthrough}}}}");
    }
    for j in 0..169 {
        let _ = write!(
            s,
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: web-{j}, namespace: bench}}\nspec:\n  parentRefs: [{{name: big, sectionName: https-{l}}}]\n  hostnames: [r{j}.app{l}.example.test]\n  rules:\n  - backendRefs: [{{name: web-{b}, port: 80}}]\n",
            l = j % 32,
            b = j % 8
        );
    }
    for i in 0..31 {
        let _ = write!(
            s,
            "---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: tls-{i}, namespace: bench}}\nspec:\n  parentRefs: [{{name: big, sectionName: tls-{i}}}]\n  hostnames: [tls{i}.example.test]\n  rules:\n  - backendRefs: [{{name: pass-{i}, port: 443}}]\n"
        );
    }
    s
}

/// How many Gateways the second figure checks.
const MANY: usize = 1000;

/// `MANY` Gateways, each with 3 listeners, an HTTPRoute and a TLSRoute, in 50 namespaces.
pub fn many_manifests() -> String {
    let mut s = String::new();
    for i in 0..MANY {
        let ns = format!("tenant-{}", i % 50);
        let _ = write!(
            s,
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw-{i}, namespace: {ns}}}\nspec:\n  gatewayClassName: cilium\n  listeners:\n  - {{name: http, port: 80, protocol: HTTP, hostname: \"*.t{i}.example.test\"}}\n  - {{name: https, port: 443, protocol: HTTPS, hostname: \"*.t{i}.example.test\", tls: {{mode: Terminate, certificateRefs: [{{name: t{i}-tls}}]}}}}\n  - {{name: api, port: 443, protocol: TLS, hostname: api.t{i}.example.test, tls: {{mode: Passthrough}}}}\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: web-{i}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw-{i}, sectionName: https}}]\n  hostnames: [www.t{i}.example.test]\n  rules:\n  - backendRefs: [{{name: web, port: 80}}]\n---\napiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TLSRoute\nmetadata: {{name: api-{i}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw-{i}, sectionName: api}}]\n  hostnames: [api.t{i}.example.test]\n  rules:\n  - backendRefs: [{{name: api-{i}, port: 443}}]\n"
        );
    }
    s
}

fn child(path: &Path, mode: &str) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // LAYOUT_GATE_LOG=layout_gate::check=debug prints where the time goes.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("LAYOUT_GATE_LOG") {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
    }
    let pins = Pins::load_default().map_err(|p| format!("{p:?}"))?;
    let versions = layout_gate::lanes::model::resolve_versions(&pins, &[])?;
    let mut timeouts = check::timeouts().map_err(|e| e.to_string())?;
    let plan = match mode {
        "shared" | "many" => EnvoyPlan::Shared,
        "apart" => EnvoyPlan::PerVersion,
        "baseline" => {
            timeouts.consecutive.value = std::num::NonZeroU32::new(3).ok_or("3 is not zero")?;
            EnvoyPlan::PerVersion
        }
        other => return Err(format!("unknown mode {other}")),
    };
    let opts = Options {
        versions,
        envoy: true,
        timeouts,
        plan,
        complete: false,
        assume: Default::default(),
        extra_sni: Vec::new(),
        operator: None,
        each_file: false,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let (_, checks) = rt.block_on(check::check_paths(&[path.to_path_buf()], &opts)).map_err(|e| e.to_string())?;
    let wall = t.elapsed().as_secs_f64();
    let c = checks.first().ok_or("no Gateway was checked")?;
    let probes: usize = checks.iter().flat_map(|c| &c.versions).map(|v| v.answers.len()).sum();
    let disagree: usize = checks.iter().flat_map(|c| &c.versions).map(|v| v.chains_disagree.len()).sum();
    let errors: Vec<&String> = checks.iter().flat_map(|c| &c.versions).filter_map(|v| v.error.as_ref()).collect();
    if !errors.is_empty() {
        return Err(format!("{} version(s) not observed, the first: {}", errors.len(), errors[0]));
    }
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches(" kB").trim().to_string())
        .unwrap_or_default();
    // Each version names the others its Envoy also served: count the distinct Envoys (of the
    // first Gateway; the Gateways share them).
    let mut envoys: Vec<Vec<String>> = c
        .versions
        .iter()
        .map(|v| {
            let mut g = v.shared_envoy.clone();
            g.push(v.version.clone());
            g.sort();
            g
        })
        .collect();
    envoys.sort();
    envoys.dedup();
    println!(
        "wall {wall} hwm_kb {hwm} gateways {} versions {} envoys {} consecutive {} keys {probes} disagree {disagree}",
        checks.len(),
        c.versions.len(),
        envoys.len(),
        opts.timeouts.consecutive.value
    );
    Ok(())
}

fn parent() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path: PathBuf = dir.path().join("big.yaml");
    std::fs::write(&path, manifests()).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut now = Figures::default();
    let mut apart = Figures::default();
    let mut before = Figures::default();
    // Alternating, so every way sees the same machine load.
    for _ in 0..RUNS {
        for (mode, figures) in [("shared", &mut now), ("apart", &mut apart), ("baseline", &mut before)] {
            figures.run(&exe, &path, mode)?;
        }
    }
    println!("check: generated Gateway, 64 listeners, 200 routes, every pinned version on a real Envoy ({RUNS} runs each)");
    now.print("check (one Envoy per distinct configuration, 1 observation per key after readiness)");
    apart.print("check with no two versions sharing (one Envoy per version, 1 observation per key after readiness)");
    before.print("previous (one Envoy per version, 3 consecutive observations per key)");
    println!("  ratio          median {:.1}x faster", before.median() / now.median());
    println!(
        "  target         < 2 s: {}; < 200 MiB: {}",
        if now.median() < 2.0 { "met" } else { "NOT MET" },
        if now.worst_hwm() < 200.0 { "met" } else { "NOT MET" }
    );
    let many_path = dir.path().join("many.yaml");
    std::fs::write(&many_path, many_manifests()).map_err(|e| e.to_string())?;
    let mut many = Figures::default();
    for _ in 0..MANY_RUNS {
        many.run(&exe, &many_path, "many")?;
    }
    println!("check: {MANY} generated Gateways (3 listeners, 2 routes each, 50 namespaces), every pinned version ({MANY_RUNS} runs)");
    many.print("check (Envoys shared between Gateways, one per distinct configuration slot)");
    println!("  target         < 60 s: {}", if many.median() < 60.0 { "met" } else { "NOT MET" });
    Ok(())
}

#[derive(Default)]
struct Figures {
    walls: Vec<f64>,
    hwms: Vec<f64>,
    last: String,
}

impl Figures {
    /// One child run of `mode` on `path`, its figures added.
    fn run(&mut self, exe: &Path, path: &Path, mode: &str) -> Result<(), String> {
        let out = Command::new(exe).arg(CHILD_FLAG).arg(path).arg(mode).output().map_err(|e| format!("spawning child: {e}"))?;
        if !out.status.success() {
            return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let field = |k: &str| line.split_whitespace().skip_while(|w| *w != k).nth(1).and_then(|v| v.parse::<f64>().ok());
        self.walls.push(field("wall").ok_or_else(|| format!("child said {line}"))?);
        self.hwms.push(field("hwm_kb").ok_or_else(|| format!("child said {line}"))? / 1024.0);
        self.last = line;
        Ok(())
    }

    fn sorted(v: &[f64]) -> Vec<f64> {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }

    fn median(&self) -> f64 {
        Self::sorted(&self.walls)[self.walls.len() / 2]
    }

    fn worst_hwm(&self) -> f64 {
        Self::sorted(&self.hwms).last().copied().unwrap_or(f64::NAN)
    }

    fn print(&self, what: &str) {
        let w = Self::sorted(&self.walls);
        let h = Self::sorted(&self.hwms);
        println!("  {what}");
        println!("    last child   {}", self.last);
        println!("    wall time    best {:.2} s   median {:.2} s   worst {:.2} s", w[0], w[w.len() / 2], w[w.len() - 1]);
        println!(
            "    peak RSS     median {:.1} MiB   worst {:.1} MiB (layout-gate process; Envoys not included)",
            h[h.len() / 2],
            h[h.len() - 1]
        );
    }
}
