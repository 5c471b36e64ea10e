//! `operator_warm::1.19.6::*`: `layout-gate operator up|status|down` end to end, each trial with
//! a warm folder of its own (`LAYOUT_GATE_WARM_DIR`): the plane answers `check --lane
//! operator`, stops on `down` and when unused, and a holder killed outright leaves no process
//! behind and a state file that is refused, never used.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use layout_gate::lanes::operator::warm;

use crate::operator_rig::{Down, VERSION, lg, repo, text, up};

fn runnable() -> Result<(), String> {
    crate::operator_rig::runnable(false)
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
    // Its bring-up phases are printed: on a warm plane, the one connection.
    if !t.lines().any(|l| l.contains("control plane ready in") && l.contains("(warm control plane: connect ")) {
        return Err(format!("check did not print its control plane's phases:\n{t}"));
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

/// The catalogue case `run --lane operator` runs on the warm plane in
/// [`run_uses_the_warm_plane_and_leaves_it_up`].
const RUN_CASE: &str = "dns01-default";

/// `run --lane operator --case RUN_CASE` with `evidence_dir` (created): its exit, what it said,
/// and its one evidence.
fn run_case(warm_dir: &Path, evidence_dir: &Path) -> Result<(Output, layout_gate::evidence::Evidence), String> {
    let shown = evidence_dir.to_string_lossy().into_owned();
    let o = lg(warm_dir, &["run", "--lane", "operator", "--case", RUN_CASE, "--cilium", VERSION, "--evidence-dir", &shown])?;
    let files: Vec<PathBuf> = std::fs::read_dir(evidence_dir)
        .map_err(|e| format!("{shown}: {e}\n{}", text(&o)))?
        .flatten()
        .map(|e| e.path().join("evidence.json"))
        .filter(|f| f.is_file())
        .collect();
    let [file] = files.as_slice() else {
        return Err(format!("{} evidence files under {shown}; the run said:\n{}", files.len(), text(&o)));
    };
    let t = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let ev = serde_json::from_str(&t).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((o, ev))
}

/// The case's recorded facts (`evidence::facts`), the run's namespace suffix masked.
fn facts_of(ev: &layout_gate::evidence::Evidence) -> Result<Vec<String>, String> {
    let [c] = ev.cases.as_slice() else { return Err(format!("{} cases in the evidence of {}", ev.cases.len(), ev.run_id)) };
    let suffix = layout_gate::lanes::cluster::names::run_suffix(&ev.run_id);
    Ok(layout_gate::evidence::facts::case_facts(c, &ev.certificates, &suffix))
}

/// The namespaces the run `run_id` created that the plane still holds, after waiting up to
/// `limit` for the controller manager to finish deleting them (those it is still deleting are
/// marked so).
fn namespaces_left(s: &warm::State, run_id: &str, limit: Duration) -> Result<Vec<String>, String> {
    use layout_gate::lanes::cluster::driver::{Driver, Selection};
    use layout_gate::lanes::cluster::names::{RUN_LABEL, label_value};
    let timeouts = layout_gate::lanes::cluster::timeouts::ClusterTimeouts::operator_defaults();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut d =
            layout_gate::lanes::cluster::live::LiveDriver::new(layout_gate::lanes::cluster::progress::Progress::from_env(), timeouts);
        d.connect(&s.kube(), timeouts.api_ready).await.map_err(|e| format!("the warm plane does not answer: {e}"))?;
        let selection = Selection::labelled("v1", "Namespace", None, &format!("{RUN_LABEL}={}", label_value(run_id)));
        let deadline = Instant::now() + limit;
        loop {
            let left: Vec<String> = d
                .list(&selection)
                .await
                .map_err(|e| e.to_string())?
                .iter()
                .map(|n| {
                    let name = n.pointer("/metadata/name").and_then(|v| v.as_str()).unwrap_or("?");
                    let deleting = n.pointer("/metadata/deletionTimestamp").is_some();
                    format!("{name}{}", if deleting { " (being deleted)" } else { "" })
                })
                .collect();
            if left.is_empty() || Instant::now() > deadline {
                return Ok(left);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// `up`, then `run --lane operator --case RUN_CASE`: the run uses the warm plane (says so on
/// stderr, and its evidence records the holder, every binary's digest and the plane's own
/// environment), removes the namespaces it applied, and leaves the plane up and usable (every
/// process alive, its state file trusted, a second run answers on it). After `down`, a state file
/// that cannot be trusted is refused and the run starts its own plane; that cold run's evidence
/// records the same facts as the warm ones.
pub fn run_uses_the_warm_plane_and_leaves_it_up() -> Result<(), String> {
    runnable()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _down = Down(tmp.path().to_path_buf());
    let s = up(tmp.path(), "10m")?;
    let mut problems = Vec::new();
    let (o, warm_ev) = run_case(tmp.path(), &tmp.path().join("warm"))?;
    let said = text(&o);
    if !o.status.success() {
        problems.push(format!("the run on the warm plane exited {:?}", o.status.code()));
    }
    if !said.contains(&format!("layout-gate run: Cilium {VERSION}: on the warm control plane (holder pid {})", s.holder_pid)) {
        problems.push("the run did not say it ran on the warm plane".into());
    }
    // The run's first line, before it connects, already names the plane it runs on.
    if !said.contains(&format!("Cilium {VERSION} on the warm control plane (holder pid {}, up since ", s.holder_pid)) {
        problems.push("the run's first line does not name the warm plane".into());
    }
    if !said.contains(&format!("warm control plane (holder pid {}) left running", s.holder_pid)) {
        problems.push("the run's summary does not say the warm plane was left running".into());
    }
    let env = &warm_ev.environment;
    let key = layout_gate::lanes::operator::up::WARM_KEY;
    if !env.get(key).is_some_and(|v| v.starts_with(&format!("holder pid {} ", s.holder_pid))) {
        problems.push(format!("evidence environment {key}: {:?}", env.get(key)));
    }
    for (name, b) in &s.binaries {
        let k = format!("{key}.{name}_sha256");
        if !env.get(&k).is_some_and(|v| v.starts_with(&b.sha256)) {
            problems.push(format!("evidence environment {k}: {:?}, the plane runs {}", env.get(&k), b.sha256));
        }
    }
    for (k, v) in &s.environment {
        if env.get(k) != Some(v) {
            problems.push(format!("evidence environment {k}: {:?}, the plane recorded {v:?}", env.get(k)));
        }
    }
    if !warm_ev.phases.iter().any(|p| p.name == layout_gate::lanes::operator::up::WARM_PHASE) {
        problems.push(format!("no {:?} phase in the evidence", layout_gate::lanes::operator::up::WARM_PHASE));
    }
    // The plane is still up: the holder and every process, and its state file.
    let gone_now: Vec<u32> = all_pids(&s).into_iter().filter(|p| gone(*p)).collect();
    if !gone_now.is_empty() {
        return Err(format!("after the run, processes of the warm plane are gone: {gone_now:?}\n{}", problems.join("\n")));
    }
    match warm::read_trusted(&tmp.path().join(format!("v{VERSION}/state.json"))) {
        Ok(after) if after.holder_pid == s.holder_pid => {}
        other => problems.push(format!("after the run, the state file: {other:?}")),
    }
    let left = namespaces_left(&s, &warm_ev.run_id, Duration::from_secs(60))?;
    if !left.is_empty() {
        problems.push(format!("namespaces the run applied are still on the warm plane: {left:?}"));
    }
    // Usable: a second run answers on it.
    let (o2, again) = run_case(tmp.path(), &tmp.path().join("again"))?;
    if !o2.status.success() || !text(&o2).contains(&format!("on the warm control plane (holder pid {})", s.holder_pid)) {
        problems.push(format!("a second run on the warm plane: exit {:?}\n{}", o2.status.code(), text(&o2)));
    }
    let down = lg(tmp.path(), &["operator", "down", "--cilium", VERSION])?;
    if !down.status.success() {
        problems.push(format!("down: {}", text(&down)));
    }
    let left = wait_gone(&all_pids(&s), Duration::from_secs(10));
    if !left.is_empty() {
        return Err(format!("after down, still running: {left:?}"));
    }
    // A state file that cannot be trusted is refused, never used: the run starts its own plane.
    let state = tmp.path().join(format!("v{VERSION}/state.json"));
    std::fs::create_dir_all(tmp.path().join(format!("v{VERSION}"))).map_err(|e| e.to_string())?;
    std::fs::write(&state, "{\"schema\": 1, \"not\": \"a state\"}\n").map_err(|e| e.to_string())?;
    let (o3, cold) = run_case(tmp.path(), &tmp.path().join("cold"))?;
    let said = text(&o3);
    if !said.contains("not using the warm control plane") || !said.contains("refused") || said.contains("on the warm control plane") {
        problems.push(format!("a run beside a foreign state file did not refuse it and start its own:\n{said}"));
    }
    if cold.environment.keys().any(|k| k.starts_with(key)) || !o3.status.success() {
        problems.push(format!("the cold run: exit {:?}, environment {:?}", o3.status.code(), cold.environment.keys().collect::<Vec<_>>()));
    }
    let cold_facts = facts_of(&cold)?;
    for (name, ev) in [("warm", &warm_ev), ("second warm", &again)] {
        for d in layout_gate::evidence::facts::differences(&cold_facts, &facts_of(ev)?, "cold", name) {
            problems.push(format!("{RUN_CASE}: {d}"));
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    Ok(())
}

/// The processes whose command line runs `operator hold` with `warm_dir` as their warm folder.
fn holders_of(warm_dir: &Path) -> Vec<u32> {
    let env = format!("{}={}", warm::DIR_ENV, warm_dir.display()).into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmd.windows(b"operator\0hold".len()).any(|w| w == b"operator\0hold") && environ.split(|b| *b == 0).any(|v| v == env.as_slice())
        })
        .collect()
}

/// Issue 36, item 4. A foreign process started as `layout-gate operator hold` and named by a
/// state file (its pid and start time right) is refused by `status` and survives `down`. Two
/// `operator up` at once bring up exactly one plane: the second waits for the first's and says
/// it is already up. A state file edited to another version is never shown as that version (the
/// holder, finding its file changed, stops).
pub fn only_a_holder_that_proves_itself_is_trusted_or_stopped() -> Result<(), String> {
    runnable()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _down = Down(tmp.path().to_path_buf());
    let vdir = tmp.path().join(format!("v{VERSION}"));
    std::fs::create_dir_all(&vdir).map_err(|e| e.to_string())?;
    let state_file = vdir.join("state.json");

    // A foreign process that looks like a holder.
    let mut foreign =
        Command::new("bash").args(["-c", "exec -a 'layout-gate operator hold' sleep 600"]).spawn().map_err(|e| format!("bash: {e}"))?;
    let pid = foreign.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"layout-gate operator hold")) {
        if Instant::now() > deadline {
            let _ = foreign.kill();
            return Err("the foreign process did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let forged = warm::State {
        schema: warm::SCHEMA,
        tool: warm::TOOL.into(),
        version: VERSION.into(),
        holder_pid: pid,
        holder_start: warm::start_time(pid).unwrap_or(0),
        token: layout_gate::lanes::operator::identity::Token::new()?,
        started_at: "2026-12-05T00:00:00Z".into(),
        idle_seconds: 600,
        kubeconfig: tmp.path().join("admin.kubeconfig"),
        context: "layout-gate-operator".into(),
        secrets_namespace: "cilium-secrets".into(),
        pids: Default::default(),
        ports: Default::default(),
        binaries: Default::default(),
        environment: Default::default(),
        phases: Vec::new(),
    };
    let mut problems = Vec::new();
    warm::write_state(&state_file, &forged).map_err(|e| e.to_string())?;
    let st = lg(tmp.path(), &["operator", "status"])?;
    if st.status.success() || !text(&st).contains("REFUSED") || !text(&st).contains("does not prove it is the holder") {
        problems.push(format!("status of a foreign holder: exit {:?}\n{}", st.status.code(), text(&st)));
    }
    let down = lg(tmp.path(), &["operator", "down"])?;
    std::thread::sleep(Duration::from_millis(300));
    let survived = foreign.try_wait().map_err(|e| e.to_string())?.is_none();
    let _ = foreign.kill();
    let _ = foreign.wait();
    if !survived || down.status.code() != Some(2) {
        problems.push(format!("down signalled a foreign holder (it survived: {survived}): exit {:?}\n{}", down.status.code(), text(&down)));
    }
    std::fs::remove_file(&state_file).map_err(|e| e.to_string())?;

    // Two `operator up` at once: exactly one plane.
    let spawn_up = || {
        Command::new(env!("CARGO_BIN_EXE_layout-gate"))
            .current_dir(repo())
            .env(warm::DIR_ENV, tmp.path())
            .env_remove("LAYOUT_GATE_PROGRESS")
            .args(["operator", "up", "--cilium", VERSION, "--idle", "10m"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())
    };
    let (a, b) = (spawn_up()?, spawn_up()?);
    let (a, b) = (a.wait_with_output().map_err(|e| e.to_string())?, b.wait_with_output().map_err(|e| e.to_string())?);
    let (ta, tb) = (text(&a), text(&b));
    let started = [&ta, &tb].iter().filter(|t| t.contains("warm control plane up in")).count();
    let waited = [&ta, &tb].iter().filter(|t| t.contains("waiting for it, not starting a second") && t.contains("already up")).count();
    if !a.status.success() || !b.status.success() || started != 1 || waited != 1 {
        problems.push(format!(
            "two `operator up` at once: exit {:?} and {:?}\n--- first:\n{ta}\n--- second:\n{tb}",
            a.status.code(),
            b.status.code()
        ));
    }
    let s = warm::read_trusted(&state_file).map_err(|r| format!("after two ups: {r}\n{}", problems.join("\n")))?;
    let holders = holders_of(tmp.path());
    if holders != [s.holder_pid] {
        problems.push(format!("holders running: {holders:?}, the state names {}", s.holder_pid));
    }

    // The state edited to another version: never shown as that version.
    let written = std::fs::read_to_string(&state_file).map_err(|e| e.to_string())?;
    std::fs::write(&state_file, written.replace(&format!("\"version\": \"{VERSION}\""), "\"version\": \"1.19.5\""))
        .map_err(|e| e.to_string())?;
    let st = text(&lg(tmp.path(), &["operator", "status"])?);
    if st.contains("Cilium 1.19.5: up since") || st.contains(&format!("Cilium {VERSION}: up since")) {
        problems.push(format!("status of an edited state file:\n{st}"));
    }
    let left = wait_gone(&all_pids(&s), Duration::from_secs(20));
    if !left.is_empty() {
        problems.push(format!("the holder whose state file was edited still runs: {left:?}"));
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    Ok(())
}
