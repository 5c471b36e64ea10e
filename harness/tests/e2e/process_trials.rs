//! What is left when a run is killed: `layout-gate run --lane model` is SIGKILLed while its Envoy
//! serves; no Envoy may survive it, and the next run's cleanup must leave no private key behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bounds of the waits below: generous, since a failure is a hang, not a slow machine.
const ENVOY_UP_WITHIN: Duration = Duration::from_secs(90);
const GONE_WITHIN: Duration = Duration::from_secs(20);

/// `(pid, ppid, state, comm)` of every process, from /proc.
fn processes() -> Vec<(u32, u32, char, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_string();
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = rest.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        out.push((pid, ppid, state, comm));
    }
    out
}

/// Live (not zombie) Envoy processes whose parent is `parent`.
fn envoys_of(parent: u32) -> Vec<u32> {
    processes().into_iter().filter(|(_, pp, st, comm)| *pp == parent && *st != 'Z' && comm.starts_with("envoy")).map(|p| p.0).collect()
}

fn alive(pid: u32) -> bool {
    processes().iter().any(|(p, _, st, _)| *p == pid && *st != 'Z')
}

fn key_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(key_files(&p));
        } else if p.extension().is_some_and(|x| x == "key") {
            out.push(p);
        }
    }
    out
}

fn run_cmd(tmp: &Path, evidence: &Path, envoy: &Path, slow: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--lane", "model", "--case", "dns01-default", "--cilium", "1.19.6", "--evidence-dir"])
        .arg(evidence)
        .env("TMPDIR", tmp)
        .env("ENVOY_BIN", envoy)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if slow {
        // Probes that take their time, so the run is still serving when it is killed.
        c.env("LAYOUT_GATE_PROBE_INTERVAL", "5s").env("LAYOUT_GATE_CONVERGE_TIMEOUT", "2m");
    }
    c
}

pub fn sigkill_leaves_no_envoy_and_no_key() -> Result<(), String> {
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;
    let evidence = root.path().join("evidence");

    let mut child = run_cmd(&tmp, &evidence, envoy.path(), true).spawn().map_err(|e| format!("starting layout-gate: {e}"))?;
    let pid = child.id();
    let started = Instant::now();
    let envoys = loop {
        let found = envoys_of(pid);
        if !found.is_empty() {
            break found;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("layout-gate ended ({status}) before its Envoy was seen"));
        }
        if started.elapsed() > ENVOY_UP_WITHIN {
            let _ = child.kill();
            return Err(format!("no Envoy child of layout-gate (pid {pid}) within {ENVOY_UP_WITHIN:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Std's kill() is SIGKILL: no handler, no destructor runs.
    child.kill().map_err(|e| e.to_string())?;
    let _ = child.wait();

    let killed = Instant::now();
    while envoys.iter().any(|&e| alive(e)) {
        if killed.elapsed() > GONE_WITHIN {
            let left: Vec<String> = envoys.iter().filter(|&&e| alive(e)).map(|e| e.to_string()).collect();
            for e in &envoys {
                let _ = Command::new("kill").args(["-9", &e.to_string()]).status();
            }
            return Err(format!(
                "Envoy pid(s) {} outlived their SIGKILLed parent {pid} (orphans, now under another parent)",
                left.join(", ")
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The killed run could not clean up: its keys are still there, in a folder naming its pid.
    let stale = key_files(&tmp);
    if stale.is_empty() {
        return Err("the killed run left no key file at all: this test no longer sees where keys live".into());
    }
    if !stale.iter().all(|k| k.to_string_lossy().contains(&format!("layout-gate-certs-{pid}-"))) {
        return Err(format!("key files outside the owner-pid folder: {stale:?}"));
    }

    // The next run sweeps them.
    let status = run_cmd(&tmp, &evidence, envoy.path(), false).status().map_err(|e| e.to_string())?;
    let left = key_files(&tmp);
    if !left.is_empty() {
        return Err(format!("key files left after the next run ({status}): {left:?}"));
    }
    Ok(())
}
