//! A warm control plane: `layout-gate operator up` leaves one version's control plane running in
//! a holder process of its own, so `check --lane operator` and `differential` answer without
//! bringing one up (20-25 s a version).
//!
//! The holder (`layout-gate operator hold`, started detached by `up`) owns the processes as any
//! run does: they are killed when it exits, however it exits (`crate::child`). It writes the
//! state file `<warm dir>/v<version>/state.json` (0600) once the plane is ready: its own pid and
//! start time, every process's pid, the API server's and the operator's ports, the kubeconfig,
//! and each binary's digest, size and modification time. It removes the file before it stops:
//! on `operator down` (SIGTERM), on a signal, when a process of the plane exits, or when no
//! command used the plane for the idle time (`--idle`).
//!
//! A command uses a plane only when the state file is trusted and matches: written by this
//! layout-gate (schema and version), owned by this user and writable by no one else, its holder
//! alive (the pid's start time as recorded) and proving it is the holder that wrote this very
//! file (the token only it and the file know, over its socket: [`super::identity`]; a command
//! line proves nothing), the version the one asked for, and every binary's recorded digest,
//! size and time the ones its `build.json` and file say now. Anything else is refused with why, and the command starts its own plane.
//! While a command uses a plane it holds a user file (`users/<pid>`), which the holder's idle
//! stop waits for.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::binaries::{self, Binary, ControlPlaneBinaries};
use super::identity::{self, Token};
use crate::case::CiliumVersion;
use crate::lanes::cluster::driver::KubeTarget;
use crate::versions::Pins;

/// The state file's layout; a file of another is refused. (2: the holder's token.)
pub const SCHEMA: u32 = 2;
/// This layout-gate, as a state file names its writer.
pub const TOOL: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("LAYOUT_GATE_GIT_COMMIT"), ")");
/// The environment variable naming another folder for warm planes' state.
pub const DIR_ENV: &str = "LAYOUT_GATE_WARM_DIR";
/// How long a plane nobody uses stays up, by default.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);
/// Where warm planes keep their state: `LAYOUT_GATE_WARM_DIR`, else `.tools/warm` of the
/// repository the pins file belongs to (beside `.tools/control-plane`).
pub fn root(pins: &Pins) -> PathBuf {
    if let Some(d) = std::env::var_os(DIR_ENV) {
        return PathBuf::from(d);
    }
    let repo = pins.file.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    repo.join(".tools/warm")
}

/// One version's folder.
pub fn version_dir(pins: &Pins, v: &CiliumVersion) -> PathBuf {
    root(pins).join(format!("v{v}"))
}

/// Why a warm plane's file (a binary's stamp, the state file) could not be read or written:
/// the path and the io error.
#[derive(Debug, thiserror::Error)]
pub enum WarmFileError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: no folder", .0.display())]
    NoFolder(PathBuf),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> WarmFileError + use<> {
    let path = path.to_path_buf();
    move |source| WarmFileError::Io { path, source }
}

/// A binary as the plane was started with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub path: PathBuf,
    pub sha256: String,
    pub bytes: u64,
    /// Modification time, seconds and nanoseconds since the epoch.
    pub mtime: (i64, i64),
}

impl Stamp {
    /// `b` as its file is now: the digest its build.json records (checked against the bytes
    /// when `binaries::find` found it), its size and time.
    pub fn of(b: &Binary) -> Result<Stamp, WarmFileError> {
        let m = std::fs::metadata(&b.path).map_err(at(&b.path))?;
        Ok(Stamp { path: b.path.clone(), sha256: b.build.binary_sha256.clone(), bytes: m.len(), mtime: (m.mtime(), m.mtime_nsec()) })
    }
}

/// Every binary of a plane, by component.
pub fn stamps(b: &ControlPlaneBinaries) -> Result<BTreeMap<String, Stamp>, WarmFileError> {
    [
        ("etcd", &b.etcd),
        ("kube-apiserver", &b.apiserver),
        ("kube-controller-manager", &b.controller_manager),
        ("cilium-operator", &b.operator),
    ]
    .into_iter()
    .map(|(n, b)| Ok((n.to_string(), Stamp::of(b)?)))
    .collect()
}

/// The state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: u32,
    /// `layout-gate <version> (<commit>)` that wrote it.
    pub tool: String,
    pub version: String,
    pub holder_pid: u32,
    /// The holder's start time (`/proc/<pid>/stat` field 22), so a reused pid is not it.
    pub holder_start: u64,
    /// What the holder proves it knows ([`identity`]); only this user can read the file.
    pub token: Token,
    pub started_at: String,
    pub idle_seconds: u64,
    pub kubeconfig: PathBuf,
    pub context: String,
    pub secrets_namespace: String,
    /// etcd, kube-apiserver, kube-controller-manager, cilium-operator.
    pub pids: BTreeMap<String, u32>,
    /// kube-apiserver, cilium-operator health.
    pub ports: BTreeMap<String, u16>,
    pub binaries: BTreeMap<String, Stamp>,
    /// What runs on it reports in evidence `environment`.
    pub environment: BTreeMap<String, String>,
    /// How long each phase of the bring-up took, in milliseconds.
    pub phases: Vec<(String, u64)>,
}

/// The start time of `pid` (clock ticks since boot), when it runs: a zombie (killed, not yet
/// reaped by whoever adopted it) runs no more, and answers nothing.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from the last `)`.
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split_whitespace();
    if matches!(fields.next()?, "Z" | "X") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Why a state file is not trusted, said to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not ours: unreadable as a state, another user's, writable by others, another tool's.
    Foreign(String),
    /// Ours, but its holder is gone (the plane stopped without removing it).
    Stale(String),
    /// Ours and alive, but for other binaries than the ones here now.
    Mismatch(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Foreign(s) | Refusal::Stale(s) | Refusal::Mismatch(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Refusal {}

/// Reads and checks the state file at `path`: its owner and mode, its schema and writer, its
/// holder alive and proving it wrote this file ([`identity::ask`]). Not yet whether it matches
/// the binaries ([`State::matches`]).
pub fn read_trusted(path: &Path) -> Result<State, Refusal> {
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path).map_err(|e| Refusal::Foreign(format!("{shown}: {e}")))?;
    if !meta.file_type().is_file() {
        return Err(Refusal::Foreign(format!("{shown}: not a regular file; refused")));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if meta.uid() != uid {
        return Err(Refusal::Foreign(format!("{shown}: owned by uid {}, not this user ({uid}); refused, never trusted", meta.uid())));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(Refusal::Foreign(format!(
            "{shown}: writable by others (mode {:o}); refused, never trusted: remove it",
            meta.permissions().mode() & 0o777
        )));
    }
    let text = crate::input::read_text(path, crate::input::CASE_FILE).map_err(|e| Refusal::Foreign(format!("{e}; refused")))?;
    let state: State = serde_json::from_str(&text).map_err(|e| {
        Refusal::Foreign(format!(
            "{shown}:{}:{}: not a warm-plane state of this layout-gate ({e}); refused: remove it",
            e.line(),
            e.column()
        ))
    })?;
    if state.schema != SCHEMA || state.tool != TOOL {
        return Err(Refusal::Foreign(format!(
            "{shown}: written by layout-gate {} (state schema {}), this is {} (schema {SCHEMA}); refused: stop that plane with the layout-gate that started it",
            state.tool, state.schema, TOOL
        )));
    }
    if start_time(state.holder_pid) != Some(state.holder_start) {
        return Err(Refusal::Stale(format!(
            "{shown}: its holder (pid {}) is no longer running; stale, never trusted (`layout-gate operator down --cilium {}` removes it)",
            state.holder_pid, state.version
        )));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    match identity::ask(dir, &state.token, &text) {
        Ok(pid) if pid == state.holder_pid => Ok(state),
        Ok(pid) => Err(Refusal::Foreign(format!(
            "{shown}: names holder pid {}, but pid {pid} answers for it; refused, never trusted or signalled",
            state.holder_pid
        ))),
        Err(why) => Err(Refusal::Foreign(format!(
            "{shown}: pid {} runs, but does not prove it is the holder that wrote this file ({why}); refused, never trusted or signalled: remove the file if no plane of yours runs",
            state.holder_pid
        ))),
    }
}

impl State {
    /// Whether the plane runs `version` with exactly `here`'s binaries.
    pub fn matches(&self, version: &CiliumVersion, here: &BTreeMap<String, Stamp>) -> Result<(), Refusal> {
        if self.version != version.to_string() {
            return Err(Refusal::Mismatch(format!("it runs Cilium {}, not {version}", self.version)));
        }
        for (name, now) in here {
            match self.binaries.get(name) {
                Some(then) if then == now => {}
                Some(then) => {
                    return Err(Refusal::Mismatch(format!(
                        "its {name} is not the one built here now ({} sha256 {} at start, {} now)",
                        then.path.display(),
                        then.sha256,
                        now.sha256
                    )));
                }
                None => return Err(Refusal::Mismatch(format!("its state names no {name}"))),
            }
        }
        Ok(())
    }

    pub fn kube(&self) -> KubeTarget {
        KubeTarget { kubeconfig: Some(self.kubeconfig.clone()), context: self.context.clone() }
    }
}

/// Writes `state` to `path` (0600), whole or not at all; the text written (what the holder
/// proves it wrote).
pub fn write_state(path: &Path, state: &State) -> Result<String, WarmFileError> {
    let dir = path.parent().ok_or_else(|| WarmFileError::NoFolder(path.to_path_buf()))?;
    std::fs::create_dir_all(dir).map_err(at(dir))?;
    let tmp = dir.join(format!(".state.{}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(state)? + "\n";
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).map_err(at(&tmp))?;
    f.write_all(text.as_bytes()).map_err(at(&tmp))?;
    std::fs::rename(&tmp, path).map_err(at(path))?;
    Ok(text)
}

/// Stops the plane whose state file is `path`: its holder, proven twice to be the one that
/// wrote the file (before and after a pidfd on it is opened, so the process proven is the one
/// signalled), gets SIGTERM through the pidfd; then waits for it and every process of its plane
/// to be gone. A process that does not prove it is never signalled. The state and how long.
pub fn stop(path: &Path) -> Result<(State, Duration), String> {
    let t = std::time::Instant::now();
    let s = read_trusted(path).map_err(|r| r.to_string())?;
    let pid = s.holder_pid;
    let fd = identity::Pidfd::open(pid).map_err(|e| format!("opening a pidfd on the holder (pid {pid}): {e}"))?;
    match read_trusted(path) {
        Ok(again) if again.holder_pid == pid => {}
        Ok(_) => return Err(format!("{}: the holder changed while it was being stopped; nothing signalled", path.display())),
        Err(r) => return Err(format!("{r}; nothing signalled")),
    }
    fd.terminate().map_err(|e| format!("signalling the holder (pid {pid}): {e}"))?;
    let gone = |p: u32| start_time(p).is_none() || std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| s.contains(") Z "));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(gone(pid) && s.pids.values().all(|p| gone(*p))) {
        if std::time::Instant::now() > deadline {
            return Err(format!("the holder (pid {pid}) or a process of its plane still runs after 30s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((s, t.elapsed()))
}

/// A command's use of a warm plane: its user file, removed when dropped; the plane's `used`
/// time is touched on attach and on drop.
pub struct InUse {
    pub state: State,
    file: PathBuf,
    used: PathBuf,
}

impl Drop for InUse {
    fn drop(&mut self) {
        touch(&self.used);
        let _ = std::fs::remove_file(&self.file);
    }
}

fn touch(path: &Path) {
    let _ = std::fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(path);
}

/// The warm plane for `version`, when one runs that can be trusted and matches the binaries
/// here (found without reading them whole: their records, sizes and times). `Ok(None)`: none
/// is up; `Err`: one is there but refused (said to the user; the caller starts its own).
pub fn attach(pins: &Pins, version: &CiliumVersion) -> Result<Option<InUse>, Refusal> {
    let Some(state) = peek(pins, version)? else { return Ok(None) };
    let dir = version_dir(pins, version);
    let users = dir.join("users");
    std::fs::create_dir_all(&users).map_err(|e| Refusal::Foreign(format!("{}: {e}", users.display())))?;
    let me = std::process::id();
    let file = users.join(format!("{me}-{}", start_time(me).unwrap_or(0)));
    touch(&file);
    let used = dir.join("used");
    touch(&used);
    Ok(Some(InUse { state, file, used }))
}

/// The warm plane [`attach`] would use for `version`, looked at without using it (no user file,
/// its idle clock untouched): what a command says it will run on before it connects.
pub fn peek(pins: &Pins, version: &CiliumVersion) -> Result<Option<State>, Refusal> {
    let path = version_dir(pins, version).join("state.json");
    if !path.exists() {
        return Ok(None);
    }
    let state = read_trusted(&path)?;
    let here = binaries::find_recorded(pins, version).map_err(|e| Refusal::Mismatch(e.to_string()))?;
    state.matches(version, &stamps(&here).map_err(|e| Refusal::Mismatch(e.to_string()))?)?;
    Ok(Some(state))
}

/// [`attach`], a refusal said on standard error (`who` is the command): the caller then
/// starts its own plane.
pub fn attach_or_say(pins: &Pins, version: &CiliumVersion, who: &str) -> Option<InUse> {
    match attach(pins, version) {
        Ok(w) => w,
        Err(refused) => {
            eprintln!("layout-gate {who}: Cilium {version}: not using the warm control plane: {refused}; starting one");
            None
        }
    }
}

/// Whether some command is using the plane in `dir` now (a user file of a live process).
pub fn in_use(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join("users")) else { return false };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let live = name
            .split_once('-')
            .and_then(|(p, s)| Some((p.parse::<u32>().ok()?, s.parse::<u64>().ok()?)))
            .is_some_and(|(pid, start)| start_time(pid) == Some(start));
        if !live {
            let _ = std::fs::remove_file(e.path());
        }
        live
    })
}

/// How long ago a command last used the plane in `dir` (its `used` file; the state file's time
/// before any did).
pub fn idle_for(dir: &Path) -> Duration {
    let t = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let last = t(dir.join("used")).or_else(|| t(dir.join("state.json")));
    last.and_then(|l| SystemTime::now().duration_since(l).ok()).unwrap_or_default()
}

/// Every version folder under the warm root, with its state file's path.
pub fn all(pins: &Pins) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(root(pins)) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = name.strip_prefix('v')?.to_string();
            Some((v, e.path().join("state.json")))
        })
        .filter(|(_, p)| p.exists())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A state file's content for a holder `pid`, running 1.19.6.
    pub(crate) fn state(pid: u32) -> State {
        State {
            schema: SCHEMA,
            tool: TOOL.into(),
            version: "1.19.6".into(),
            holder_pid: pid,
            holder_start: start_time(pid).unwrap_or(0),
            token: Token::new().unwrap(),
            started_at: "2026-12-03T00:00:00Z".into(),
            idle_seconds: 60,
            kubeconfig: "/x/admin.kubeconfig".into(),
            context: "layout-gate-operator".into(),
            secrets_namespace: "cilium-secrets".into(),
            pids: BTreeMap::new(),
            ports: BTreeMap::new(),
            binaries: BTreeMap::from([(
                "cilium-operator".to_string(),
                Stamp { path: "/x/op".into(), sha256: "ab".into(), bytes: 3, mtime: (1, 2) },
            )]),
            environment: BTreeMap::new(),
            phases: Vec::new(),
        }
    }

    #[test]
    fn a_state_file_that_cannot_be_written_names_its_folder_and_keeps_the_cause() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let e = write_state(&file.path().join("state.json"), &state(std::process::id())).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: ", file.path().display())), "{e}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()), "{e:?}");
    }

    #[test]
    fn a_state_file_of_a_dead_holder_is_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        dead.wait().unwrap();
        write_state(&p, &state(dead.id())).unwrap();
        match read_trusted(&p) {
            Err(Refusal::Stale(m)) => assert!(m.contains("no longer running") && m.contains("operator down --cilium 1.19.6"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_foreign_or_unreadable_state_file_is_refused_never_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        std::fs::write(&p, "{\"schema\": 1, \"extra\": true}\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        match read_trusted(&p) {
            Err(Refusal::Foreign(m)) => assert!(m.contains("state.json:1:") && m.contains("refused"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut s = state(std::process::id());
        s.tool = "0.0.1 (other)".into();
        std::fs::remove_file(&p).unwrap();
        write_state(&p, &s).unwrap();
        match read_trusted(&p) {
            Err(Refusal::Foreign(m)) => assert!(m.contains("written by layout-gate 0.0.1 (other)"), "{m}"),
            other => panic!("{other:?}"),
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        match read_trusted(&p) {
            Err(Refusal::Foreign(m)) => assert!(m.contains("writable by others"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 36: any process whose command line held `operator hold` (and whose pid and start
    /// time a state file named) was trusted, and `down` sent it SIGTERM. One that does not
    /// prove it wrote the file is refused and never signalled.
    #[test]
    fn a_foreign_process_named_by_a_state_file_is_neither_trusted_nor_signalled() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        let mut foreign = std::process::Command::new("bash")
            .args(["-c", "exec -a 'layout-gate operator hold --cilium 1.19.6' sleep 600"])
            .spawn()
            .unwrap();
        let pid = foreign.id();
        // Its command line reads as a holder's, once exec has happened.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"layout-gate operator hold")) {
            assert!(std::time::Instant::now() < deadline, "the foreign process did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        write_state(&p, &state(pid)).unwrap();
        let refused = read_trusted(&p);
        let stopped = stop(&p);
        let alive = foreign.try_wait().unwrap().is_none();
        let _ = foreign.kill();
        let _ = foreign.wait();
        match refused {
            Err(Refusal::Foreign(m)) => {
                assert!(m.contains("does not prove it is the holder") && m.contains("never trusted or signalled"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        assert!(stopped.is_err_and(|e| e.contains("does not prove")));
        assert!(alive, "the foreign process was signalled");
    }

    /// The holder proves it wrote the file: this process, answering with the file's token, is
    /// trusted; the file edited to another version (or anything else) no longer is.
    #[test]
    fn a_state_file_edited_after_its_holder_wrote_it_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        let s = state(std::process::id());
        let text = write_state(&p, &s).unwrap();
        identity::serve(identity::bind(tmp.path()).unwrap(), s.token.clone(), identity::digest(&text)).unwrap();
        assert_eq!(read_trusted(&p).map(|t| t.version), Ok("1.19.6".to_string()));
        std::fs::write(&p, text.replace("\"1.19.6\"", "\"1.19.5\"")).unwrap();
        match read_trusted(&p) {
            Err(Refusal::Foreign(m)) => assert!(m.contains("wrote another state") && m.contains("refused"), "{m}"),
            other => panic!("an edited state read as {other:?}"),
        }
    }

    #[test]
    fn a_plane_of_other_binaries_or_another_version_does_not_match() {
        let s = state(1);
        let same = s.binaries.clone();
        assert_eq!(s.matches(&CiliumVersion::parse("1.19.6").unwrap(), &same), Ok(()));
        assert!(matches!(s.matches(&CiliumVersion::parse("1.19.5").unwrap(), &same), Err(Refusal::Mismatch(_))));
        let mut rebuilt = same.clone();
        rebuilt.get_mut("cilium-operator").unwrap().sha256 = "cd".into();
        match s.matches(&CiliumVersion::parse("1.19.6").unwrap(), &rebuilt) {
            Err(Refusal::Mismatch(m)) => assert!(m.contains("cilium-operator") && m.contains("cd"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// A holder killed outright and not yet reaped is a zombie: its start time still reads, but
    /// it runs no more, so its state is stale (not a holder that fails to prove itself).
    #[test]
    fn a_zombie_has_no_start_time() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z ")) {
            assert!(std::time::Instant::now() < deadline, "no zombie");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(start_time(pid), None);
        child.wait().unwrap();
        let me = std::process::id();
        assert!(start_time(me).is_some_and(|t| t > 0));
    }

    #[test]
    fn a_user_file_of_a_dead_process_does_not_hold_the_plane() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("users")).unwrap();
        std::fs::write(tmp.path().join("users/999999999-1"), "").unwrap();
        assert!(!in_use(tmp.path()));
        let me = std::process::id();
        std::fs::write(tmp.path().join(format!("users/{me}-{}", start_time(me).unwrap())), "").unwrap();
        assert!(in_use(tmp.path()));
    }
}
