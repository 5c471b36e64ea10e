//! What the operator-lane trials share (`operator_agent::*`, `operator_warm::*`): the pin they
//! run at, whether this machine can run them, the binary run with or without a warm folder of
//! its own (`LAYOUT_GATE_WARM_DIR`), and a warm plane brought up and always brought down.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use layout_gate::lanes::operator::warm;

pub const VERSION: &str = "1.19.6";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What the trials need: Envoy, the pin's control plane, and with `agent` Cilium's agent built
/// for it (the agent's own needs, root among them, are said when it starts).
pub fn runnable(agent: bool) -> Result<(), String> {
    layout_gate::envoy::EnvoyBinary::find().map_err(|e| e.to_string())?;
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    if let Some(why) = layout_gate::check::operator::not_runnable(&pins, &v) {
        return Err(why);
    }
    if agent {
        layout_gate::lanes::operator::binaries::find_agent(&pins, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `layout-gate args` in the repository, with `env` set and, when given, `warm_dir` as its warm
/// folder; without progress lines.
pub fn lg_env(warm_dir: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Result<Output, String> {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layout-gate"));
    c.current_dir(repo()).env_remove("LAYOUT_GATE_PROGRESS").args(args);
    if let Some(d) = warm_dir {
        c.env(warm::DIR_ENV, d);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().map_err(|e| e.to_string())
}

/// `layout-gate args` with `warm_dir` as its warm folder.
pub fn lg(warm_dir: &Path, args: &[&str]) -> Result<Output, String> {
    lg_env(Some(warm_dir), args, &[])
}

/// Both output streams of a run.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Stops whatever a trial left up in its warm folder, whatever happened.
pub struct Down(pub PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = lg(&self.0, &["operator", "down"]);
    }
}

/// `operator up` at the pin in `dir`, stopped after `idle` unused; its state file.
pub fn up(dir: &Path, idle: &str) -> Result<warm::State, String> {
    let o = lg(dir, &["operator", "up", "--cilium", VERSION, "--idle", idle])?;
    if !o.status.success() || !text(&o).contains("warm control plane up in") {
        return Err(format!("operator up: exit {:?}\n{}", o.status.code(), text(&o)));
    }
    warm::read_trusted(&dir.join(format!("v{VERSION}/state.json"))).map_err(|r| r.to_string())
}
