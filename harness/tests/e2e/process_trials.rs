//! What is left when a run is killed: `layout-gate run --lane model` is SIGKILLed while its Envoy
//! serves; no Envoy may survive it, and the next run's sweep must leave no private key and no
//! temporary folder of the killed run behind.

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

/// The binary with `tmp` as its temporary folder and `envoy` as its Envoy; no stdin or stdout.
fn layout_gate(tmp: &Path, envoy: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).env("TMPDIR", tmp).env("ENVOY_BIN", envoy).stdin(Stdio::null()).stdout(Stdio::null());
    c
}

fn run_cmd(tmp: &Path, evidence: &Path, envoy: &Path, slow: bool) -> Command {
    let mut c = layout_gate(tmp, envoy);
    c.args(["run", "--lane", "model", "--case", "dns01-default", "--cilium", "1.19.6", "--evidence-dir"])
        .arg(evidence)
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
    if !stale.iter().all(|k| k.to_string_lossy().contains(&format!("layout-gate-certs-{pid}."))) {
        return Err(format!("key files outside the owner-pid folder: {stale:?}"));
    }

    // Its Envoy's work folder too.
    if !scratch_folders(&tmp).iter().any(|n| n.starts_with(&format!("layout-gate-model-{pid}."))) {
        return Err(format!("no model work folder of the killed run in {:?}", scratch_folders(&tmp)));
    }

    // The next run sweeps them, and removes its own.
    let status = run_cmd(&tmp, &evidence, envoy.path(), false).status().map_err(|e| e.to_string())?;
    let left = key_files(&tmp);
    if !left.is_empty() {
        return Err(format!("key files left after the next run ({status}): {left:?}"));
    }
    let left = scratch_folders(&tmp);
    if !left.is_empty() {
        return Err(format!("temporary folders left after the next run ({status}): {left:?}"));
    }
    Ok(())
}

/// The names of the layout-gate folders in `dir`.
pub fn scratch_folders(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.trim_start_matches('.').starts_with("layout-gate-"))
        .collect();
    out.sort();
    out
}

/// A valid Gateway with `n` HTTP listeners, one port each (the API allows 64).
pub fn many_listeners(n: usize) -> String {
    let mut s = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: wide, namespace: ns}\nspec:\n  gatewayClassName: cilium\n  listeners:\n",
    );
    for i in 0..n {
        s.push_str(&format!("  - {{name: l{i}, port: {}, protocol: HTTP, hostname: app.example.test}}\n", 10000 + i));
    }
    s
}

fn check_cmd(tmp: &Path, input: &Path, envoy: &Path) -> Command {
    let mut c = layout_gate(tmp, envoy);
    c.args(["check", "--cilium", "1.20.1"]).arg(input).stderr(Stdio::piped());
    c
}

/// Waits until `child` serves on an Envoy (its work folder is in `tmp`: the `envoy --version`
/// asked at start is not it); the Envoys' pids.
fn envoy_of(child: &mut std::process::Child, tmp: &Path) -> Result<Vec<u32>, String> {
    let started = Instant::now();
    let work = format!("layout-gate-model-{}.", child.id());
    loop {
        let found = envoys_of(child.id());
        if !found.is_empty() && scratch_folders(tmp).iter().any(|n| n.starts_with(&work)) {
            return Ok(found);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("layout-gate ended ({status}) before its Envoy was seen"));
        }
        if started.elapsed() > ENVOY_UP_WITHIN {
            let _ = child.kill();
            return Err(format!("no Envoy child of layout-gate (pid {}) within {ENVOY_UP_WITHIN:?}", child.id()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn all_gone(pids: &[u32]) -> Result<(), String> {
    let since = Instant::now();
    while pids.iter().any(|&e| alive(e)) {
        if since.elapsed() > GONE_WITHIN {
            for e in pids {
                let _ = Command::new("kill").args(["-9", &e.to_string()]).status();
            }
            return Err(format!("Envoy pid(s) {pids:?} outlived their parent"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `check` has no graceful stop of its own: SIGINT, SIGTERM, SIGHUP and SIGQUIT each end it
/// with 128 + the signal's number, its Envoy dies with it, and none of its temporary folders
/// (keys, the Envoy's work folder) is left. After a SIGKILL they are, and the next `check` sweeps
/// them. The derived case never touches the disk (`case::load_text`), so no `check` folder
/// exists even then.
pub fn check_stopped_leaves_no_folder() -> Result<(), String> {
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;
    let input = root.path().join("gateway.yaml");
    std::fs::write(&input, many_listeners(64)).map_err(|e| e.to_string())?;
    // SIGINT twice: a second listener for it once raced the process's own handler and exited 2.
    for (signal, want) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129), ("-QUIT", 131), ("-INT", 130)] {
        let mut child = check_cmd(&tmp, &input, envoy.path()).spawn().map_err(|e| e.to_string())?;
        let envoys = envoy_of(&mut child, &tmp)?;
        Command::new("kill").args([signal, &child.id().to_string()]).status().map_err(|e| format!("kill: {e}"))?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(want) || stderr.contains("panicked") {
            return Err(format!("check after {signal}: {}, want exit {want}; stderr:\n{stderr}", out.status));
        }
        all_gone(&envoys)?;
        let left = scratch_folders(&tmp);
        if !left.is_empty() {
            return Err(format!("temporary folders left after {signal}: {left:?}"));
        }
    }
    let mut child = check_cmd(&tmp, &input, envoy.path()).spawn().map_err(|e| e.to_string())?;
    let pid = child.id();
    let envoys = envoy_of(&mut child, &tmp)?;
    child.kill().map_err(|e| e.to_string())?;
    let _ = child.wait();
    all_gone(&envoys)?;
    let left = scratch_folders(&tmp);
    let owned = |kind: &str| left.iter().any(|n| n.starts_with(&format!("layout-gate-{kind}-{pid}.")));
    if !(owned("certs") && owned("model")) || owned("check") {
        return Err(format!("after SIGKILL, expected the certs and model folders of pid {pid} and no check folder: {left:?}"));
    }
    let out = check_cmd(&tmp, &input, envoy.path()).output().map_err(|e| e.to_string())?;
    let left = scratch_folders(&tmp);
    if !out.status.success() || !left.is_empty() {
        return Err(format!("the next check ({}) left {left:?}; stderr:\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// `scripts/local-envoy.sh` started with `tmp` as its temporary folder, once it serves: the
/// script, its stdout so far, and its Envoys.
fn local_envoy(tmp: &Path, envoy: &Path) -> Result<(std::process::Child, String, Vec<u32>), String> {
    use std::io::BufRead;
    let mut child = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/local-envoy.sh"))
        .env("TMPDIR", tmp)
        .env("ENVOY_BIN", envoy)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting scripts/local-envoy.sh: {e}"))?;
    let out = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    loop {
        match rx.recv_timeout(ENVOY_UP_WITHIN) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains("serving TLS") {
                    break;
                }
            }
            Err(_) => {
                let _ = child.kill();
                return Err(format!("local-envoy.sh never said it serves; stdout:\n{seen}"));
            }
        }
    }
    let envoys = envoys_of(child.id());
    if envoys.is_empty() {
        let _ = child.kill();
        return Err(format!("no Envoy child of local-envoy.sh; stdout:\n{seen}"));
    }
    Ok((child, seen, envoys))
}

/// Folders in `dir` holding a private key (`*.key`) at their top.
fn key_folders(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = key_files(dir).into_iter().filter_map(|k| k.parent().map(Path::to_path_buf)).collect();
    out.sort();
    out.dedup();
    out
}

/// `scripts/local-envoy.sh` SIGKILLed: its Envoy dies with it (it kept serving under PID 1
/// before) and its keys stay only until the next start, which sweeps them; SIGTERM (and the
/// others it traps) removes them at once.
pub fn local_envoy_sigkill_leaves_nothing() -> Result<(), String> {
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;

    let (mut first, _, envoys) = local_envoy(&tmp, envoy.path())?;
    let keys = key_folders(&tmp);
    if keys.len() != 1 {
        let _ = first.kill();
        return Err(format!("expected one key folder of the running script, found {keys:?}"));
    }
    first.kill().map_err(|e| e.to_string())?;
    let _ = first.wait();
    all_gone(&envoys).map_err(|e| format!("after SIGKILL of local-envoy.sh: {e}"))?;
    if key_folders(&tmp) != keys {
        return Err(format!("the killed script's keys {keys:?} should stay until the next start; found {:?}", key_folders(&tmp)));
    }

    let (mut second, _, envoys) = local_envoy(&tmp, envoy.path())?;
    let now = key_folders(&tmp);
    if now.len() != 1 || now == keys {
        let _ = second.kill();
        return Err(format!("the next start did not sweep {keys:?}: {now:?}"));
    }
    Command::new("kill").args(["-TERM", &second.id().to_string()]).status().map_err(|e| e.to_string())?;
    let status = second.wait().map_err(|e| e.to_string())?;
    all_gone(&envoys)?;
    let left = std::fs::read_dir(&tmp).map_err(|e| e.to_string())?.count();
    if status.code() != Some(143) || left != 0 {
        return Err(format!("after SIGTERM: {status}, {left} entries left in its temporary folder"));
    }
    Ok(())
}

/// How many times [`wide_check_never_races`] runs `check`, and how many at once.
const WIDE_RUNS: usize = 50;
const WIDE_AT_ONCE: usize = 8;

/// A valid 64-listener Gateway checked at 1.20.1, 50 times, 8 at a time: every run passes.
/// Ports were chosen by binding port 0 and closing the socket, so two of the 64 (or a probe's
/// own port) could be the same, and Envoy failed to bind one (`cannot listen() errno=98`):
/// 3 runs in 12 said "listener absent". Now each port is held from its choice until Envoy has
/// bound it.
pub fn wide_check_never_races() -> Result<(), String> {
    let envoy = layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = root.path().join("gateway.yaml");
    std::fs::write(&input, many_listeners(64)).map_err(|e| e.to_string())?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..WIDE_AT_ONCE {
            s.spawn(|| {
                while next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < WIDE_RUNS {
                    let out = check_cmd(root.path(), &input, envoy.path()).output();
                    let failed = match out {
                        Ok(o) if o.status.success() => None,
                        Ok(o) => Some(format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr).trim())),
                        Err(e) => Some(format!("starting check: {e}")),
                    };
                    if let (Some(f), Ok(mut all)) = (failed, failures.lock()) {
                        all.push(f);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().map_err(|e| e.to_string())?;
    if failures.is_empty() { Ok(()) } else { Err(format!("{} of {WIDE_RUNS} runs failed:\n{}", failures.len(), failures.join("\n"))) }
}
