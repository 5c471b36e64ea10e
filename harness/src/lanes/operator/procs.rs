//! The control plane's processes (etcd, kube-apiserver, cilium-operator): each started with its
//! log in a file, killed and reaped when its owner goes away, and killed by the kernel when
//! layout-gate dies however it dies (`crate::child::dies_with_parent`).
//!
//! The kernel's parent-death signal watches the *thread* that spawned the child, and a control
//! plane outlives the thread that asked for it (an e2e trial's runtime, a tokio worker). So every
//! process is spawned by one [`Keeper`] thread that lives exactly as long as the control plane.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// A thread that spawns the control plane's processes and lives until it is dropped.
pub struct Keeper {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Job = Box<dyn FnOnce() + Send>;

/// Why a control-plane process was not started: the process (name and command line) and the
/// spawn's own error, or what became of the keeper thread.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error("starting the control plane's keeper thread: {0}")]
    KeeperThread(#[source] std::io::Error),
    #[error("the keeper has stopped")]
    KeeperStopped,
    #[error("the keeper thread is gone")]
    KeeperGone,
    #[error("the keeper thread did not answer")]
    NoAnswer,
    #[error("starting {name}: {source} ({command})")]
    Start { name: String, command: String, source: std::io::Error },
}

impl Keeper {
    pub fn new() -> Result<Keeper, ProcError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("control-plane-keeper".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map_err(ProcError::KeeperThread)?;
        Ok(Keeper { tx: Some(tx), thread: Some(thread) })
    }

    /// Starts `spec` from the keeper thread.
    pub fn start(&self, spec: ProcSpec) -> Result<Proc, ProcError> {
        let (rtx, rrx) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or(ProcError::KeeperStopped)?;
        tx.send(Box::new(move || {
            let _ = rtx.send(Proc::spawn(spec));
        }))
        .map_err(|_| ProcError::KeeperGone)?;
        rrx.recv().map_err(|_| ProcError::NoAnswer)?
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcSpec {
    /// `etcd`, `kube-apiserver`, `cilium-operator`: for messages and the log file's name.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub dir: PathBuf,
}

/// A running process; dropping it kills and reaps it.
pub struct Proc {
    pub name: String,
    handle: Option<duct::Handle>,
    pub log: PathBuf,
    pub command: String,
}

impl Proc {
    fn spawn(spec: ProcSpec) -> Result<Proc, ProcError> {
        let log = spec.dir.join(format!("{}.log", spec.name));
        let command = std::iter::once(spec.program.display().to_string()).chain(spec.args.iter().cloned()).collect::<Vec<_>>().join(" ");
        // Redirections apply from the outside in: stdout to the file first, then stderr joins it.
        let mut e = duct::cmd(&spec.program, &spec.args).dir(&spec.dir).stdin_null().stderr_to_stdout().stdout_path(&log).unchecked();
        for (k, v) in &spec.env {
            e = e.env(k, v);
        }
        let handle = match crate::child::dies_with_parent(e).start() {
            Ok(h) => h,
            Err(source) => return Err(ProcError::Start { name: spec.name, command, source }),
        };
        Ok(Proc { name: spec.name, handle: Some(handle), log, command })
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&self) -> Option<String> {
        let h = self.handle.as_ref()?;
        match h.try_wait() {
            Ok(Some(out)) => Some(out.status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot be waited for: {e}")),
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.handle.as_ref().and_then(|h| h.pids().first().copied())
    }

    /// The last `n` lines of its log.
    pub fn tail(&self, n: usize) -> String {
        log_tail(&self.log, n)
    }
}

/// The last `n` lines of a log file (read bounded: a log can be large).
pub fn log_tail(path: &Path, n: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const MAX: u64 = 256 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut buf = Vec::new();
    let _ = f.take(MAX).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The first `max` bytes of a log file, as text (lossy at a cut character).
pub fn log_head(path: &Path, max: u64) -> String {
    use std::io::Read;
    let Ok(f) = std::fs::File::open(path) else { return String::new() };
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_does_not_start_is_named_with_its_command_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let keeper = Keeper::new().unwrap();
        let spec = ProcSpec {
            name: "etcd".into(),
            program: dir.path().join("no-such-etcd"),
            args: vec!["--name=x".into()],
            env: Vec::new(),
            dir: dir.path().to_path_buf(),
        };
        let Err(e) = keeper.start(spec) else { panic!("a missing program started") };
        let text = e.to_string();
        assert!(text.starts_with("starting etcd: "), "{text}");
        assert!(text.ends_with(&format!("({}/no-such-etcd --name=x)", dir.path().display())), "{text}");
        let kind = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>()).map(std::io::Error::kind);
        assert_eq!(kind, Some(std::io::ErrorKind::NotFound));
    }
}
