//! `operator_warm::1.19.6::*`: `layout-gate operator up|status|down` end to end, each trial with
//! a warm folder of its own (`LAYOUT_GATE_WARM_DIR`): the plane answers `check --lane
//! operator`, stops on `down` and when unused, and a holder killed outright leaves no process
//! behind and a state file that is refused, never used.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use layout_gate::lanes::operator::warm;

const VERSION: &str = "1.19.6";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn runnable() -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    match layout_gate::check::operator::not_runnable(&pins, &v) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

fn lg(warm_dir: &Path, args: &[&str]) -> Result<Output, String> {
    Command::new(env!("CARGO_BIN_EXE_layout-gate"))
        .current_dir(repo())
        .env(warm::DIR_ENV, warm_dir)
        .env_remove("LAYOUT_GATE_PROGRESS")
        .args(args)
        .output()
        .map_err(|e| e.to_string())
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.contains(") Z "),
    }
}

/// Waits up to `limit` for every pid to be gone; the ones left.
fn wait_gone(pids: &[u32], limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| !gone(*p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stops whatever a trial left up, whatever happened.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = lg(&self.0, &["operator", "down"]);
    }
}

fn up(dir: &Path, idle: &str) -> Result<warm::State, String> {
    let o = lg(dir, &["operator", "up", "--cilium", VERSION, "--idle", idle])?;
    if !o.status.success() || !text(&o).contains("warm control plane up in") {
        return Err(format!("operator up: exit {:?}\n{}", o.status.code(), text(&o)));
    }
    warm::read_trusted(&dir.join(format!("v{VERSION}/state.json"))).map_err(|r| r.to_string())
}

fn all_pids(s: &warm::State) -> Vec<u32> {
    std::iter::once(s.holder_pid).chain(s.pids.values().copied()).collect()
}

/// `up`, then `check --lane operator` answers on it (and says so), `status` names it, `down`
/// stops the holder and every process of the plane.
pub fn up_check_status_down() -> Result<(), String> {
    runnable()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _down = Down(tmp.path().to_path_buf());
    let s = up(tmp.path(), "10m")?;
    if s.pids.len() != 4 || s.binaries.len() != 4 || !s.ports.contains_key("kube-apiserver") {
        return Err(format!("the state file lacks pids, ports or digests: {s:?}"));
    }
    let file = repo().join("harness/tests/data/check/cozystack-dns01-app-namespaces.yaml");
    let file = file.to_string_lossy();
    let o = lg(tmp.path(), &["check", "--lane", "operator", &file, "--cilium", VERSION, "--baseline", VERSION])?;
    let t = text(&o);
    if !t.contains(&format!("on the warm control plane (holder pid {})", s.holder_pid)) || !t.contains("tls-api") {
        return Err(format!("check did not answer on the warm plane:\n{t}"));
    }
    let st = text(&lg(tmp.path(), &["operator", "status"])?);
    if !st.contains(&format!("Cilium {VERSION}: up since")) || !st.contains(&s.holder_pid.to_string()) {
        return Err(format!("status:\n{st}"));
    }
    let o = lg(tmp.path(), &["operator", "down", "--cilium", VERSION])?;
    if !o.status.success() || !text(&o).contains("stopped") {
        return Err(format!("down: {}", text(&o)));
    }
    let left = wait_gone(&all_pids(&s), Duration::from_secs(10));
    if !left.is_empty() {
        return Err(format!("after down, still running: {left:?}"));
    }
    if tmp.path().join(format!("v{VERSION}/state.json")).exists() {
        return Err("down left the state file".into());
    }
    Ok(())
}

/// A holder killed with SIGKILL (no code of its own runs) takes every process of its plane with
/// it; its state file is then stale: `status` refuses it (as `check` does before starting its
/// own plane: the same `warm::read_trusted`), and `down` removes it without killing anything.
pub fn a_killed_holder_leaves_nothing_running_and_its_state_refused() -> Result<(), String> {
    runnable()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _down = Down(tmp.path().to_path_buf());
    let s = up(tmp.path(), "10m")?;
    // SAFETY: kill has no memory effects; the pid is the holder this trial started.
    if unsafe { libc::kill(s.holder_pid as libc::pid_t, libc::SIGKILL) } != 0 {
        return Err(format!("kill: {}", std::io::Error::last_os_error()));
    }
    let left = wait_gone(&all_pids(&s), Duration::from_secs(15));
    if !left.is_empty() {
        return Err(format!("the holder was killed, these still run (orphaned): {left:?}"));
    }
    let st = lg(tmp.path(), &["operator", "status"])?;
    let st_text = text(&st);
    if st.status.success() || !st_text.contains("REFUSED") || !st_text.contains("no longer running") {
        return Err(format!("status of a stale state: exit {:?}\n{st_text}", st.status.code()));
    }
    let down = text(&lg(tmp.path(), &["operator", "down"])?);
    if !down.contains("state file removed (nothing was running)") || tmp.path().join(format!("v{VERSION}/state.json")).exists() {
        return Err(format!("down of a stale state:\n{down}"));
    }
    Ok(())
}

/// `--idle 3s`: a plane nobody uses stops itself, its state file removed, nothing left running.
pub fn an_unused_plane_stops_itself() -> Result<(), String> {
    runnable()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _down = Down(tmp.path().to_path_buf());
    let s = up(tmp.path(), "3s")?;
    let left = wait_gone(&all_pids(&s), Duration::from_secs(30));
    if !left.is_empty() {
        return Err(format!("unused for 30s with --idle 3s, still running: {left:?}"));
    }
    if tmp.path().join(format!("v{VERSION}/state.json")).exists() {
        return Err("the idle stop left the state file".into());
    }
    Ok(())
}
