//! The `layout-gate` binary as a user runs it: output into a closed pipe, Ctrl-C and SIGTERM
//! mid-run, stderr into a pipe, and every command the README shows.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use layout_gate::evidence::Evidence;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    // A developer's progress setting must not change what the trials see.
    c.env_remove("LAYOUT_GATE_PROGRESS");
    c
}

fn envoy_check() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map(|_| ()).map_err(|e| e.to_string())
}

/// Every evidence.json under `root`.
fn evidences(root: &Path) -> Result<Vec<Evidence>, String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))? {
        let p = entry.map_err(|e| e.to_string())?.path().join("evidence.json");
        if p.is_file() {
            let text = std::fs::read_to_string(&p).map_err(|e| e.to_string())?;
            out.push(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?);
        }
    }
    Ok(out)
}

/// `run --lane model | head -1`: the first line is read, stdout closes, and the run still
/// writes every version's evidence and exits with its own status (it panicked with 101 after
/// the first version before).
pub fn closed_stdout_keeps_evidence() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = bin()
        .args(["run", "--lane", "model", "--case", "dns01-default", "--evidence-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut first = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        out.read_line(&mut first).map_err(|e| e.to_string())?;
        // Dropping the reader closes the pipe, as `head -1` does.
    }
    let mut stderr = String::new();
    child.stderr.take().ok_or("no stderr")?.read_to_string(&mut stderr).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !first.starts_with("ok   model ") {
        return Err(format!("first line {first:?}"));
    }
    if status.code() != Some(0) || stderr.contains("panicked") {
        return Err(format!("exit {status} after stdout closed; stderr:\n{stderr}"));
    }
    let evs = evidences(dir.path())?;
    let pinned = layout_gate::versions::Pins::load_default().map_err(|p| format!("{p:?}"))?.cilium.len();
    if evs.len() != pinned || evs.iter().any(|e| e.cases.len() != 1) {
        return Err(format!("{} evidence folders for {pinned} versions", evs.len()));
    }
    Ok(())
}

/// A signal once the first case has finished: no new case starts, the evidence of every
/// finished case is written with `interrupted: true`, and the exit status names the signal.
fn interrupted_by(signal: &str, want: i32) -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = bin()
        .args(["run", "--lane", "model", "--jobs", "1", "--evidence-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut lines = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).map_err(|e| e.to_string())? > 0 {
        let finished = line.starts_with("ok   model ") || line.starts_with("FAIL model ");
        lines.push(std::mem::take(&mut line));
        if finished {
            break;
        }
    }
    let killed = Command::new("kill").args([signal, &child.id().to_string()]).status().map_err(|e| format!("kill: {e}"))?;
    if !killed.success() {
        return Err("kill failed".into());
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest).map_err(|e| e.to_string())?;
    let mut stderr = String::new();
    child.stderr.take().ok_or("no stderr")?.read_to_string(&mut stderr).map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.code() != Some(want) {
        return Err(format!("exit {status}, want {want}; stdout:\n{}{rest}\nstderr:\n{stderr}", lines.concat()));
    }
    let evs = evidences(dir.path())?;
    let finished: usize = evs.iter().map(|e| e.cases.len()).sum();
    let total = layout_gate::case::lint(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("cases")).map_err(|p| format!("{p:?}"))?.len()
        * layout_gate::versions::Pins::load_default().map_err(|p| format!("{p:?}"))?.cilium.len();
    if finished == 0 || finished >= total {
        return Err(format!("{finished} of {total} cases in the evidence; want the finished ones only"));
    }
    if evs.iter().any(|e| !e.interrupted) {
        return Err("evidence of an interrupted run without interrupted: true".into());
    }
    if !rest.contains(" not run") || !rest.contains("evidence (lane: model") {
        return Err(format!("no final count or evidence line after the signal:\n{rest}"));
    }
    Ok(())
}

pub fn sigint_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-INT", 130)
}

pub fn sigterm_keeps_finished_cases() -> Result<(), String> {
    interrupted_by("-TERM", 143)
}

/// Log lines into a pipe carry no colour codes, and nothing on stderr or stdout has ANSI
/// escapes when neither is a terminal.
pub fn no_ansi_codes_in_pipes() -> Result<(), String> {
    envoy_check()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = bin()
        .args(["run", "--lane", "model", "--case", "edge-mode", "--cilium", "1.19.6", "--evidence-dir"])
        .arg(dir.path())
        .env("LAYOUT_GATE_LOG", "debug")
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.lines().count() < 3 {
        return Err(format!("expected debug log lines on stderr, got:\n{stderr}"));
    }
    if stderr.contains('\u{1b}') || String::from_utf8_lossy(&out.stdout).contains('\u{1b}') {
        return Err(format!("ANSI escape codes in a pipe:\n{}", stderr.lines().take(5).collect::<Vec<_>>().join("\n")));
    }
    Ok(())
}

/// `layout-gate --version` names the commit it was built from.
pub fn version_names_the_commit() -> Result<(), String> {
    let out = bin().arg("--version").output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(h) if h.status.success() => {
            let commit = String::from_utf8_lossy(&h.stdout).trim().to_string();
            if text.contains(&commit) { Ok(()) } else { Err(format!("--version says {text:?}; HEAD is {commit}")) }
        }
        _ => if text.contains("unknown commit") { Ok(()) } else { Err(format!("--version says {text:?} outside git")) },
    }
}
