//! `check` on a generated Gateway with 64 listeners and 200 routes at every pinned Cilium
//! version: wall time (each version on its own real Envoy, every matrix probe converging on 3
//! consecutive observations, as `layout-gate check` runs it) and peak memory of the process
//! doing it. Target (issue #10): under 2 s and under 200 MiB.
//!
//! The parent writes the manifests and re-executes itself as a child that runs one check and
//! reports its own peak RSS (VmHWM), several times; the Envoy processes are children of the
//! child and their memory is not in the figure (it is printed apart, from their VmHWM while
//! they run, when /proc allows).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use layout_gate::check::{self, Options};
use layout_gate::versions::Pins;

const CHILD_FLAG: &str = "--check-child";
const RUNS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == CHILD_FLAG) {
        match child(Path::new(&args[i + 1])) {
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

fn child(path: &Path) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let pins = Pins::load_default().map_err(|p| format!("{p:?}"))?;
    let versions = layout_gate::lanes::model::resolve_versions(&pins, &[])?;
    let opts = Options { versions, envoy: true, timeouts: check::timeouts().map_err(|e| e.to_string())?, complete: false };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let (_, checks) = rt.block_on(check::check_paths(&[path.to_path_buf()], &opts)).map_err(|e| e.to_string())?;
    let wall = t.elapsed().as_secs_f64();
    let c = &checks[0];
    let probes: usize = c.versions.iter().map(|v| v.answers.len()).sum();
    let disagree: usize = c.versions.iter().map(|v| v.chains_disagree.len()).sum();
    let errors: Vec<&String> = c.versions.iter().filter_map(|v| v.error.as_ref()).collect();
    if !errors.is_empty() {
        return Err(format!("versions not observed: {errors:?}"));
    }
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches(" kB").trim().to_string())
        .unwrap_or_default();
    println!("wall {wall} hwm_kb {hwm} versions {} keys {probes} disagree {disagree}", c.versions.len());
    Ok(())
}

fn parent() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path: PathBuf = dir.path().join("big.yaml");
    std::fs::write(&path, manifests()).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut walls = Vec::new();
    let mut hwms = Vec::new();
    let mut last = String::new();
    for _ in 0..RUNS {
        let out = Command::new(&exe).arg(CHILD_FLAG).arg(&path).output().map_err(|e| format!("spawning child: {e}"))?;
        if !out.status.success() {
            return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let field = |k: &str| line.split_whitespace().skip_while(|w| *w != k).nth(1).and_then(|v| v.parse::<f64>().ok());
        walls.push(field("wall").ok_or_else(|| format!("child said {line}"))?);
        hwms.push(field("hwm_kb").ok_or_else(|| format!("child said {line}"))? / 1024.0);
        last = line;
    }
    walls.sort_by(|a, b| a.total_cmp(b));
    hwms.sort_by(|a, b| a.total_cmp(b));
    println!("check: generated Gateway, 64 listeners, 200 routes, every pinned version on a real Envoy ({RUNS} runs)");
    println!("  last child     {last}");
    println!("  wall time      best {:.2} s   median {:.2} s   worst {:.2} s", walls[0], walls[RUNS / 2], walls[RUNS - 1]);
    println!(
        "  peak RSS       median {:.1} MiB   worst {:.1} MiB (layout-gate process; Envoys not included)",
        hwms[RUNS / 2],
        hwms[RUNS - 1]
    );
    println!(
        "  target         < 2 s: {}; < 200 MiB: {}",
        if walls[RUNS / 2] < 2.0 { "met" } else { "NOT MET" },
        if hwms[RUNS - 1] < 200.0 { "met" } else { "NOT MET" }
    );
    Ok(())
}
