//! `layout-gate operator up|status|down`: warm control planes (see `lanes::operator::warm`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};

use super::check::{bad, pins};
use crate::case::CiliumVersion;
use crate::lanes::operator::lock::HolderLock;
use crate::lanes::operator::warm::{self, Refusal};
use crate::versions::Pins;

#[derive(Debug, Clone, Subcommand)]
pub enum OperatorCommand {
    /// Start the control plane of each version asked for and leave it running, for `run --lane
    /// operator`, `check --lane operator` and `differential` to use (versions asked together
    /// come up side by side, as far as the free memory allows).
    Up(UpArgs),
    /// Say which warm control planes run, and refuse any state file that cannot be trusted.
    Status(CommonArgs),
    /// Stop the warm control planes (of the versions named; none named: all).
    Down(DownArgs),
    /// The process holding one version's plane (started by `up`).
    #[command(hide = true)]
    Hold(HoldArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    /// Cilium version; repeat for several (default: the pins' default).
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: Vec<String>,
    /// Stop a plane nobody used for this long (`90s`, `30m`, `2h`; at most 168h).
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub idle: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Args)]
pub struct DownArgs {
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Args)]
pub struct HoldArgs {
    #[arg(long = "cilium", value_name = "VERSION")]
    pub cilium: String,
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=MAX_IDLE_SECONDS))]
    pub idle_seconds: u64,
    /// The version's lock, taken by `up` and inherited (`lanes::operator::lock`).
    #[arg(long, value_name = "FD")]
    pub lock_fd: Option<i32>,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(command: OperatorCommand) -> ExitCode {
    match command {
        OperatorCommand::Up(a) => up(a),
        OperatorCommand::Status(a) => status(a),
        OperatorCommand::Down(a) => down(a),
        OperatorCommand::Hold(a) => hold(a),
    }
}

/// The longest a warm plane may stay up unused (`--idle`): a week. A plane is memory held for
/// commands to come; one left for longer is forgotten, and the seconds must not overflow.
pub const MAX_IDLE_SECONDS: u64 = 7 * 24 * 3600;

/// `90s`, `30m`, `2h`, or plain seconds, up to [`MAX_IDLE_SECONDS`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: u64 = n.parse().map_err(|_| format!("{s:?} is not a duration like 90s, 30m or 2h"))?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => return Err(format!("{s:?} is not a duration like 90s, 30m or 2h")),
    };
    match secs {
        Some(0) => Err("--idle must be longer than 0".into()),
        Some(secs) if secs <= MAX_IDLE_SECONDS => Ok(Duration::from_secs(secs)),
        _ => Err(format!("{s:?} is longer than the most a plane may idle, {}h", MAX_IDLE_SECONDS / 3600)),
    }
}

fn versions(cmd: &str, pins: &Pins, flags: &[String]) -> Result<Vec<CiliumVersion>, ExitCode> {
    crate::lanes::operator::session::versions(pins, flags)
        .map(|v| v.into_iter().map(|(v, _)| v).collect())
        .map_err(|e| bad(cmd, &format!("--cilium: {e}")))
}

fn up(args: UpArgs) -> ExitCode {
    let cmd = "operator up";
    let idle = match parse_duration(&args.idle) {
        Ok(d) => d,
        Err(e) => return bad(cmd, &format!("--idle: {e}")),
    };
    let pins = match pins(cmd, args.common.versions_file.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let vs = match versions(cmd, &pins, &args.cilium) {
        Ok(v) => v,
        Err(c) => return c,
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return bad(cmd, &format!("finding this program: {e}")),
    };
    // Side by side as far as the free memory holds; the rest wait for them.
    let at_once = crate::lanes::operator::batch::planes_at_once(crate::lanes::operator::batch::mem_available());
    let mut worst = ExitCode::SUCCESS;
    let mut pending: Vec<(CiliumVersion, HolderLock)> = Vec::new();
    let mut busy: Vec<CiliumVersion> = Vec::new();
    for v in vs {
        if let Some(why) = crate::check::operator::not_runnable(&pins, &v) {
            eprintln!("layout-gate {cmd}: Cilium {v}: {why}");
            worst = ExitCode::from(2);
            continue;
        }
        match take(&pins, &v) {
            Ok(Some(lock)) => pending.push((v, lock)),
            Ok(None) => busy.push(v),
            Err(e) => {
                eprintln!("layout-gate {cmd}: Cilium {v}: {e}");
                worst = ExitCode::from(2);
            }
        }
    }
    for chunk in pending.chunks(at_once) {
        let started = Instant::now();
        let mut holders = Vec::new();
        for (v, lock) in chunk {
            match spawn_holder(&exe, &pins, v, idle, args.common.versions_file.as_deref(), lock) {
                Ok(h) => holders.push((v.clone(), h)),
                Err(e) => {
                    eprintln!("layout-gate {cmd}: Cilium {v}: {e}");
                    worst = ExitCode::from(2);
                }
            }
        }
        for (v, mut child) in holders {
            match wait_ready(&pins, &v, &mut child) {
                Ok(state) => {
                    println!(
                        "Cilium {v}: warm control plane up in {:.1}s (holder pid {})",
                        started.elapsed().as_secs_f64(),
                        state.holder_pid
                    );
                    for (name, ms) in &state.phases {
                        println!("  {name}: {:.2}s", *ms as f64 / 1000.0);
                    }
                    println!("  kubeconfig {} (context {}); stops after {} unused", state.kubeconfig.display(), state.context, args.idle);
                }
                Err(e) => {
                    eprintln!("layout-gate {cmd}: Cilium {v}: {e}");
                    worst = ExitCode::from(2);
                }
            }
        }
    }
    // The holders have their locks now (each inherited its own): ours go.
    drop(pending);
    for v in busy {
        if let Err(e) = wait_for_other(&pins, &v) {
            eprintln!("layout-gate {cmd}: Cilium {v}: {e}");
            worst = ExitCode::from(2);
        }
    }
    worst
}

/// Takes `v`'s lock for a holder to start: `Ok(None)` when a holder lives or another `operator
/// up` is starting one. With the lock taken no holder lives, so a state file left there is
/// stale and removed; one that is not ours is refused.
fn take(pins: &Pins, v: &CiliumVersion) -> Result<Option<HolderLock>, String> {
    let dir = warm::version_dir(pins, v);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let Some(lock) = HolderLock::try_take(&dir)? else { return Ok(None) };
    let path = dir.join("state.json");
    if path.exists() {
        match warm::read_trusted(&path) {
            Err(Refusal::Stale(m)) => {
                eprintln!("layout-gate operator up: {m}; removed, starting a new one");
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Err(r) => return Err(r.to_string()),
            // A live holder holds the lock, so this cannot be one: said, not started over.
            Ok(s) => {
                return Err(format!("{}: holder pid {} answers, but not holding {}", path.display(), s.holder_pid, lock.path().display()));
            }
        }
    }
    Ok(Some(lock))
}

/// The plane another holder has (or another `operator up` is bringing up) for `v`: waited for,
/// and said as already up; never a second one started beside it.
fn wait_for_other(pins: &Pins, v: &CiliumVersion) -> Result<(), String> {
    let dir = warm::version_dir(pins, v);
    let path = dir.join("state.json");
    let mut said = false;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        // No state file yet: the other is still bringing its plane up.
        match path.exists().then(|| warm::read_trusted(&path)) {
            Some(Ok(s)) => {
                println!("Cilium {v}: already up (holder pid {}, kubeconfig {})", s.holder_pid, s.kubeconfig.display());
                return Ok(());
            }
            // Refused while its holder lives: said as it is, nothing started beside it.
            Some(Err(r @ Refusal::Foreign(_))) => return Err(r.to_string()),
            Some(Err(_)) | None => {}
        }
        // Free again with no plane trusted: the other bring-up ended without one.
        if HolderLock::try_take(&dir)?.is_some() {
            return Err(format!(
                "another `layout-gate operator up` was bringing its plane up and stopped without one (see {}); nothing started here: run `operator up` again",
                dir.join("holder.log").display()
            ));
        }
        if !said {
            eprintln!(
                "layout-gate operator up: Cilium {v}: another `layout-gate operator up` is bringing its plane up ({} is held); waiting for it, not starting a second",
                dir.join(crate::lanes::operator::lock::FILE).display()
            );
            said = true;
        }
        if Instant::now() > deadline {
            return Err(format!("the other bring-up is not ready within 300s (see {})", dir.join("holder.log").display()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn spawn_holder(
    exe: &std::path::Path,
    pins: &Pins,
    v: &CiliumVersion,
    idle: Duration,
    versions_file: Option<&std::path::Path>,
    lock: &HolderLock,
) -> Result<std::process::Child, String> {
    use std::os::unix::process::CommandExt;
    let dir = warm::version_dir(pins, v);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Only the one who holds the lock writes this log: two bring-ups never share it.
    let log_path = dir.join("holder.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut c = std::process::Command::new(exe);
    let fd = lock.fd();
    c.args(["operator", "hold", "--cilium", &v.to_string(), "--idle-seconds", &idle.as_secs().to_string(), "--lock-fd", &fd.to_string()]);
    if let Some(f) = versions_file {
        c.arg("--versions-file").arg(f);
    }
    c.env("LAYOUT_GATE_PROGRESS", "1").stdin(std::process::Stdio::null()).stdout(log).stderr(err);
    // SAFETY: setsid is async-signal-safe; the holder leaves this command's session so a
    // Ctrl-C here does not stop it: it stops on `operator down`, a signal sent to it, or idle.
    // The lock's fd is made inheritable in the child only (fcntl is async-signal-safe too):
    // the holder holds the lock from its first instruction, with no moment where it is free.
    unsafe {
        c.pre_exec(move || {
            if libc::setsid() < 0 || libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.spawn().map_err(|e| format!("starting the holder: {e}"))
}

fn wait_ready(pins: &Pins, v: &CiliumVersion, child: &mut std::process::Child) -> Result<warm::State, String> {
    let dir = warm::version_dir(pins, v);
    let path = dir.join("state.json");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(s) = warm::read_trusted(&path)
            && s.holder_pid == child.id()
        {
            return Ok(s);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join("holder.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(25).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(format!("the control plane did not come up (holder {status}); its log ends:\n{}", tail.join("\n")));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("not ready within 300s (see {})", dir.join("holder.log").display()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn status(args: CommonArgs) -> ExitCode {
    let cmd = "operator status";
    let pins = match pins(cmd, args.versions_file.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let all = warm::all(&pins);
    if all.is_empty() {
        println!("no warm control plane (start one with `layout-gate operator up --cilium VERSION`)");
        return ExitCode::SUCCESS;
    }
    let mut code = ExitCode::SUCCESS;
    for (v, path) in all {
        match warm::read_trusted(&path) {
            Ok(s) => {
                let dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
                let idle = warm::idle_for(&dir).as_secs();
                println!(
                    "Cilium {}: up since {} (holder pid {}); unused for {idle}s of {}s{}",
                    s.version,
                    s.started_at,
                    s.holder_pid,
                    s.idle_seconds,
                    if warm::in_use(&dir) { "; in use now" } else { "" }
                );
                let pids: Vec<String> = s.pids.iter().map(|(n, p)| format!("{n} {p}")).collect();
                let ports: Vec<String> = s.ports.iter().map(|(n, p)| format!("{n} {p}")).collect();
                println!("  pids: {}; ports: {}", pids.join(", "), ports.join(", "));
                println!("  kubeconfig {} (context {})", s.kubeconfig.display(), s.context);
                for (n, b) in &s.binaries {
                    println!("  {n}: {} sha256 {}", b.path.display(), b.sha256);
                }
            }
            Err(r) => {
                println!("Cilium {v}: REFUSED: {r}");
                code = ExitCode::FAILURE;
            }
        }
    }
    code
}

fn down(args: DownArgs) -> ExitCode {
    let cmd = "operator down";
    let pins = match pins(cmd, args.common.versions_file.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let all = warm::all(&pins);
    let wanted: Vec<String> = args.cilium.iter().map(|c| c.trim_start_matches('v').to_string()).collect();
    let chosen: Vec<(String, PathBuf)> = all.into_iter().filter(|(v, _)| wanted.is_empty() || wanted.contains(v)).collect();
    if chosen.is_empty() {
        println!("no warm control plane to stop");
        return ExitCode::SUCCESS;
    }
    let mut code = ExitCode::SUCCESS;
    for (v, path) in chosen {
        match warm::read_trusted(&path) {
            Ok(_) => match warm::stop(&path) {
                Ok((s, t)) => println!("Cilium {v}: stopped in {:.1}s (holder pid {} and its processes)", t.as_secs_f64(), s.holder_pid),
                Err(e) => {
                    eprintln!("layout-gate {cmd}: Cilium {v}: {e}");
                    code = ExitCode::from(2);
                }
            },
            Err(Refusal::Stale(m)) => {
                // Nothing of it runs: the file alone goes, and nothing is killed.
                let _ = std::fs::remove_file(&path);
                println!("Cilium {v}: {m}; state file removed (nothing was running)");
            }
            Err(r) => {
                eprintln!("layout-gate {cmd}: Cilium {v}: {r}");
                code = ExitCode::from(2);
            }
        }
    }
    code
}

fn hold(args: HoldArgs) -> ExitCode {
    let cmd = "operator hold";
    let pins = match pins(cmd, args.common.versions_file.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let v = match pins.pick(&args.cilium) {
        Ok(p) => p.version.clone(),
        Err(e) => return bad(cmd, &format!("--cilium: {e}")),
    };
    let lock = match args.lock_fd {
        // SAFETY: `up` passes the fd of the lock it took and made inheritable for this process;
        // nothing else here owns it (adopt checks it is the version's lock file).
        Some(fd) => match unsafe { HolderLock::adopt(fd, &warm::version_dir(&pins, &v)) } {
            Ok(l) => Some(l),
            Err(e) => return bad(cmd, &e),
        },
        None => None,
    };
    let settings = crate::run::Settings::from_env(&crate::lanes::operator::known_settings());
    match crate::lanes::operator::hold::hold(&pins, &v, Duration::from_secs(args.idle_seconds), &settings, lock) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => bad(cmd, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_times_read_as_written() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5d").unwrap_err().contains("like 90s"));
        assert!(parse_duration("m").is_err());
        // Bounded: no overflow (a panic before), the bound named.
        assert_eq!(parse_duration("168h"), Ok(Duration::from_secs(MAX_IDLE_SECONDS)));
        for long in ["169h", "18446744073709551615h", "99999999999999999m"] {
            assert!(parse_duration(long).unwrap_err().contains("168h"), "{long}");
        }
    }
}
