//! Temporary folders the tool makes (private keys, Envoy work folders, `check`'s derived case,
//! kind run folders, evidence and cases being staged), each owned by the process that made it
//! and never left behind:
//!
//! * **removed on drop** (every orderly exit, error and panic unwinding through the owner);
//! * **removed on a handled signal**: every live [`Scratch`] of the process is in a registry
//!   that [`remove_all_own`] empties (the signal handlers call it through
//!   [`crate::child::run_cleanups`]), since `process::exit` runs no destructor;
//! * **swept by the next run** when the owner died unannounced (SIGKILL, the OOM killer, a
//!   power cut): the folder's name carries its [`Owner`], the pid *and* the kernel's start time
//!   of that process, so the first [`Scratch`] a process makes in a folder first removes every
//!   scratch folder there whose owner is gone. A pid reused by another process has another start
//!   time, so a reused pid cannot keep a dead run's keys on disk, and a live owner is never
//!   mistaken for a dead one.
//!
//! Names: `layout-gate-<kind>-<pid>.<start>-[<label>-]<random>` (`.`-prefixed, hidden, when
//! made beside a destination with [`Scratch::new_in`], so a half-written case or evidence folder
//! is never read as a finished one). Folders are 0700; only folders of this user are swept.
//!
//! ```no_run
//! use layout_gate::scratch::{Kind, Scratch};
//! const ETCD: Kind = Kind::new("etcd"); // checked when compiled
//! let data = Scratch::labelled(ETCD, "1.19.5")?; // $TMPDIR/layout-gate-etcd-4242.98765-1-19-5-Xy12Ab
//! std::fs::write(data.path().join("member"), b"")?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Every scratch folder's name starts with this (after an optional `.`).
pub const NAME_PREFIX: &str = "layout-gate-";

/// What a scratch folder is for: lower-case ASCII letters only, so a name parses back
/// unambiguously. Make one as a `const` (`const ETCD: Kind = Kind::new("etcd");`) and a bad name
/// fails to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind(&'static str);

impl Kind {
    /// Panics (at compile time, in a `const`) unless `name` is 1-16 lower-case ASCII letters.
    pub const fn new(name: &'static str) -> Kind {
        let b = name.as_bytes();
        assert!(!b.is_empty() && b.len() <= 16, "a scratch kind is 1-16 lower-case letters");
        let mut i = 0;
        while i < b.len() {
            assert!(b[i].is_ascii_lowercase(), "a scratch kind is 1-16 lower-case letters");
            i += 1;
        }
        Kind(name)
    }
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

/// Private keys of a run's certificates.
pub const CERTS: Kind = Kind::new("certs");
/// A model-lane Envoy's work folder (bootstrap, LDS files, log).
pub const MODEL: Kind = Kind::new("model");
/// The operator lane's local control plane (etcd's data, certificates and keys, kubeconfigs,
/// the operator's configuration) and each case's local Envoy work folder.
pub const OPERATOR: Kind = Kind::new("operator");
/// `check`'s derived case and its Envoys.
pub const CHECK: Kind = Kind::new("check");
/// The conformance suite's working folder (`layout-gate conformance`).
pub const CONFORMANCE: Kind = Kind::new("conformance");
/// A kind run's files (cluster config, Helm values, kubeconfig).
pub const KIND: Kind = Kind::new("kind");
/// A run's evidence being written, beside its destination.
pub const EVIDENCE: Kind = Kind::new("evidence");
/// A case being written by `case new` (or derived by `check`), beside its destination.
pub const CASE: Kind = Kind::new("case");
/// Diagnostics being written into a kind run's evidence folder.
pub const DIAGNOSTICS: Kind = Kind::new("diagnostics");

/// The process a scratch folder belongs to: its pid and its start time (clock ticks after
/// boot, `/proc/<pid>/stat` field 22), which together name one process for the machine's
/// uptime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// 0 when unknown (no `/proc`): then only the pid is compared.
    pub start: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner { pid, start: stat_of(pid).map(|s| s.start).unwrap_or(0) }
    }

    /// Whether the process is still running (a zombie is not). When it cannot be told, alive:
    /// a folder is only ever removed when its owner is known to be gone.
    pub fn is_alive(&self) -> bool {
        match stat_of(self.pid) {
            Ok(s) => !s.dead && (self.start == 0 || s.start == self.start),
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(_) => pid_exists(self.pid),
        }
    }

    /// `<pid>.<start>`, as in folder names.
    pub fn token(&self) -> String {
        format!("{}.{}", self.pid, self.start)
    }

    /// The owner named by a scratch folder's name (see the module docs), with its kind. A
    /// name of the form before start times were recorded (`layout-gate-certs-<pid>-<random>`)
    /// gives start 0.
    pub fn of_name(name: &str) -> Option<(&str, Owner)> {
        let rest = name.strip_prefix('.').unwrap_or(name).strip_prefix(NAME_PREFIX)?;
        let (kind, rest) = rest.split_once('-')?;
        if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_lowercase()) {
            return None;
        }
        let token = rest.split('-').next()?;
        let (pid, start) = match token.split_once('.') {
            Some((p, s)) => (p, s.parse::<u64>().ok()?),
            // The old key folders carried the pid alone.
            None if kind == CERTS.as_str() => (token, 0),
            None => return None,
        };
        let pid = pid.parse::<u32>().ok().filter(|p| *p > 0)?;
        Some((kind, Owner { pid, start }))
    }
}

struct Stat {
    start: u64,
    dead: bool,
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid ... starttime(22) ...`; comm may hold spaces and
/// parentheses, so fields are counted after the last `)`.
fn stat_of(pid: u32) -> io::Result<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat: unexpected format"));
    let after = text.rfind(')').map(|i| &text[i + 1..]).ok_or_else(bad)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is field 3 (state), so field 22 is fields[19].
    let state = fields.first().ok_or_else(bad)?;
    let start = fields.get(19).and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    Ok(Stat { start, dead: matches!(*state, "Z" | "X" | "x") })
}

fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn own_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Live scratch folders of this process, for [`remove_all_own`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Folders this process has swept already (one sweep per folder per process is enough: a
/// folder left by a run that died later is swept by the next process).
static SWEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// A temporary folder owned by this process: removed when dropped, on a handled signal, or by
/// the next process's sweep if this one is killed.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    owned: bool,
}

impl Scratch {
    /// A new folder in the system's temporary folder (`$TMPDIR`, else `/tmp`).
    pub fn new(kind: Kind) -> io::Result<Scratch> {
        Scratch::make(&std::env::temp_dir(), kind, "", false)
    }

    /// [`Scratch::new`] with `label` in the name for people (sanitized: lower-case letters,
    /// digits and `-`, at most 40 characters), e.g. a case's name.
    pub fn labelled(kind: Kind, label: &str) -> io::Result<Scratch> {
        Scratch::make(&std::env::temp_dir(), kind, label, false)
    }

    /// A hidden folder (`.layout-gate-...`) in `parent`, for staging a result that is then
    /// renamed into place beside it ([`Scratch::keep`]); `parent` is swept like the temporary
    /// folder.
    pub fn new_in(parent: &Path, kind: Kind, label: &str) -> io::Result<Scratch> {
        Scratch::make(parent, kind, label, true)
    }

    fn make(parent: &Path, kind: Kind, label: &str, hidden: bool) -> io::Result<Scratch> {
        sweep_once(parent);
        let label = sanitize(label);
        let prefix = format!(
            "{}{NAME_PREFIX}{}-{}-{}{}",
            if hidden { "." } else { "" },
            kind.as_str(),
            Owner::current().token(),
            label,
            if label.is_empty() { "" } else { "-" }
        );
        let dir = {
            use std::os::unix::fs::PermissionsExt;
            tempfile::Builder::new().prefix(&prefix).permissions(std::fs::Permissions::from_mode(0o700)).tempdir_in(parent)?
        };
        let path = dir.keep();
        if let Ok(mut live) = LIVE.lock() {
            live.push(path.clone());
        }
        Ok(Scratch { path, owned: true })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops owning the folder and returns its path: it is no longer removed on drop or on a
    /// signal (for a staged result about to be renamed into place; if that fails, the caller
    /// removes it).
    pub fn keep(mut self) -> PathBuf {
        self.owned = false;
        forget(&self.path);
        std::mem::take(&mut self.path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.owned {
            let _ = std::fs::remove_dir_all(&self.path);
            forget(&self.path);
        }
    }
}

fn forget(path: &Path) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|p| p != path);
    }
}

fn sanitize(label: &str) -> String {
    let s: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(40).collect();
    s.trim_matches('-').to_string()
}

fn sweep_once(parent: &Path) {
    let first = SWEPT.lock().map(|mut s| s.insert(parent.to_path_buf())).unwrap_or(true);
    if first {
        sweep(parent);
    }
}

/// Removes the scratch folders directly in `parent` whose owner is gone; what was removed. A
/// folder of a live process, of another user, a symbolic link, or a name that is not a scratch
/// folder's, stays.
pub fn sweep(parent: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(parent) else { return removed };
    let uid = own_uid();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some((_, owner)) = name.to_str().and_then(Owner::of_name) else { continue };
        // DirEntry::metadata does not follow a symbolic link.
        let ours = e.metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours && !owner.is_alive() && std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Removes every scratch folder this process still owns. For a signal handler about to exit
/// the process, when no destructor will run; a [`Scratch`] dropped later finds nothing to do.
pub fn remove_all_own() {
    remove_registered(|_| true);
}

/// Removes (and forgets) the live folders `which` picks.
fn remove_registered(which: impl Fn(&Path) -> bool) {
    let picked: Vec<PathBuf> = match LIVE.lock() {
        Ok(mut v) => {
            let (picked, rest) = std::mem::take(&mut *v).into_iter().partition(|p| which(p));
            *v = rest;
            picked
        }
        Err(_) => Vec::new(),
    };
    for p in picked {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A pid that existed a moment ago and is now gone (reaped).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn names_carry_the_owner_and_parse_back() {
        let me = Owner::current();
        assert!(me.start > 0, "no start time read from /proc/self/stat");
        assert!(me.is_alive());
        let s = Scratch::labelled(MODEL, "cilium/Gateway Multi").unwrap();
        let name = s.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!("layout-gate-model-{}-cilium-gateway-multi-", me.token())), "{name}");
        assert_eq!(Owner::of_name(&name), Some(("model", me)));
        assert_eq!(std::fs::metadata(s.path()).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(Owner::of_name(".layout-gate-case-12.34-XyZ"), Some(("case", Owner { pid: 12, start: 34 })));
        // The old key folders (pid only) still parse; old unowned names do not.
        assert_eq!(Owner::of_name("layout-gate-certs-12-XyZ"), Some(("certs", Owner { pid: 12, start: 0 })));
        for other in ["layout-gate-model-dns01-default-XyZ", "layout-gate-kind-AbC", "layout-gate-model-0.5-x", "someone-12.34-x"] {
            assert_eq!(Owner::of_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_reused_pid_or_a_zombie_is_not_the_owner() {
        let me = Owner::current();
        assert!(!Owner { start: me.start + 1, ..me }.is_alive());
        assert!(!Owner { pid: dead_pid(), start: 0 }.is_alive());
        let mut zombie = std::process::Command::new("true").spawn().unwrap();
        let pid = zombie.id();
        // Not reaped yet: a zombie until wait().
        while stat_of(pid).is_ok_and(|s| !s.dead) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!Owner { pid, start: 0 }.is_alive());
        zombie.wait().unwrap();
    }

    #[test]
    fn the_sweep_removes_dead_owners_folders_only() {
        let tmp = tempfile::tempdir().unwrap();
        let me = Owner::current();
        let dead = Owner { pid: dead_pid(), start: 1 };
        let reused = Owner { start: me.start + 1, ..me };
        let stale = tmp.path().join(format!("layout-gate-certs-{}-abc123", dead.token()));
        let hidden = tmp.path().join(format!(".layout-gate-evidence-{}-run-x", reused.token()));
        let legacy = tmp.path().join(format!("layout-gate-certs-{}-abc123", dead.pid));
        let live = tmp.path().join(format!("layout-gate-model-{}-def456", me.token()));
        let other = tmp.path().join("layout-gate-model-dns01-default-AbC123");
        for d in [&stale, &hidden, &legacy, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("k.key"), "KEY").unwrap();
        }
        // A symbolic link named like a dead owner's folder is not followed or removed.
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let link = tmp.path().join(format!("layout-gate-kind-{}-lnk", dead.token()));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut removed = sweep(tmp.path());
        removed.sort();
        let mut want = vec![stale.clone(), hidden.clone(), legacy.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(live.exists() && other.exists() && link.exists() && target.exists());
    }

    #[test]
    fn dropped_kept_and_signalled_folders() {
        let a = Scratch::new(CHECK).unwrap();
        let pa = a.path().to_path_buf();
        drop(a);
        assert!(!pa.exists(), "removed on drop");
        let b = Scratch::new_in(&std::env::temp_dir(), EVIDENCE, "run").unwrap();
        assert!(b.path().file_name().unwrap().to_string_lossy().starts_with(".layout-gate-evidence-"));
        let kept = b.keep();
        assert!(kept.exists(), "kept by its new owner");
        std::fs::remove_dir_all(&kept).unwrap();
        // What a signal handler does (`remove_all_own`, limited here to this test's folder so
        // the tests beside it keep theirs): the folder goes, and its owner's later drop finds
        // nothing to do.
        let c = Scratch::new(KIND).unwrap();
        let pc = c.path().to_path_buf();
        assert!(LIVE.lock().unwrap().contains(&pc));
        remove_registered(|p| p == pc);
        assert!(!pc.exists());
        drop(c);
    }
}
