//! The run's own network: Linux network namespaces the run creates, addresses of their own, and
//! nothing that leaves the machine.
//!
//! Some programs must listen at an address that is not loopback: kube-apiserver refuses loopback
//! addresses in EndpointSlices, and the conformance suite's backends listen on every address of
//! their host. So a run makes its own network: one host-side Linux bridge (`lgb…`) with a gateway
//! address in a private /24 under 10.244.0.0/16 that no host route covers, and one network
//! namespace per program, each with a veth on that bridge, an address of its own, `lo` up and a
//! default route via the gateway.
//!
//! **Nothing leaves the machine.** The bridge has no port but the run's veths, so what the host
//! sends to the /24 reaches only the run's namespaces. What a namespace sends elsewhere reaches
//! the host through its default route and stops there: forwarding is turned off on the bridge
//! (`net.ipv4.conf.<bridge>.forwarding = 0`, which the kernel checks on the interface a packet
//! came in on before it forwards it), so even on a host that forwards (a Docker host) nothing
//! from the run's namespaces is routed on. While the network lives, the run holds a
//! [`NamespaceGrant`] for its /24, so the probe's confinement (`observe::probe::reach`) lets
//! probes reach it and nothing else.
//!
//! **Nothing is left behind.** Everything is removed on drop, in reverse order: each namespace's
//! processes (those [`Netns::command`] started, and any other) are killed, its veth and the
//! namespace removed, then the bridge. A run killed before its drops ran (SIGKILL, the OOM killer)
//! leaves them; the next [`RunNetwork::create`] on the machine sweeps them: every name carries the
//! owning process (namespaces `lg-<pid>.<start>-…`; interfaces `lg<kind><pid in hex>x<n>`, their
//! alias `layout-gate <pid>.<start>`), and only those whose owner is gone are removed
//! ([`crate::scratch::Owner`]: a reused pid has another start time).
//!
//! Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and `ip` (iproute2); every error names the command
//! that failed and what it printed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::observe::probe::reach::{NamespaceGrant, NamespaceNet};
use crate::scratch::Owner;

/// Every interface the run makes starts with this, and nothing else on a machine should: the
/// sweep and `scripts/offbox-counter.sh` (which does not count what goes to them) rely on it.
pub const IF_PREFIX: &str = "lg";
/// Every network namespace the run makes starts with this (`ip netns list`).
pub const NS_PREFIX: &str = "lg-";
/// The range the run's /24 is taken from.
const RANGE: [u8; 2] = [10, 244];
/// Where `ip netns` keeps its namespaces' handles.
const NETNS_DIR: &str = "/run/netns";
/// The alias every interface of the run carries, before its owner's `<pid>.<start>`.
const ALIAS_PREFIX: &str = "layout-gate ";
/// At most this much of a failed command's standard error goes into its error.
const STDERR_MAX: usize = 2048;

/// Why the run's network could not be made (or a namespace in it).
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error(
        "the run's network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN to make a bridge and network namespaces): \
         run as root (sudo, or the e2e runner's container, which runs as root)"
    )]
    NotRoot,
    #[error("`ip` (iproute2) is missing, which makes the run's network namespaces: apt-get install iproute2")]
    NoIp,
    #[error("`{command}` failed ({status}): {stderr}")]
    Command { command: String, status: String, stderr: String },
    #[error("no free /24 in 10.244.0.0/16 for the run's network: every one overlaps a host route ({routes})")]
    NoNetwork { routes: String },
    #[error("the run's network {net} is full: every address is in use by a namespace")]
    Full { net: String },
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetError {
    let what = what.into();
    move |source| NetError::Io { what, source }
}

/// Runs `ip ARGS`, returning its standard output, or an error naming the command and its stderr.
fn ip(args: &[&str]) -> Result<String, NetError> {
    let out = match Command::new("ip").args(args).stdin(std::process::Stdio::null()).output() {
        Ok(out) => out,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(NetError::NoIp),
        Err(e) => return Err(io_err(format!("starting `ip {}`", args.join(" ")))(e)),
    };
    if !out.status.success() {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if stderr.len() > STDERR_MAX {
            let cut = (0..=STDERR_MAX).rev().find(|i| stderr.is_char_boundary(*i)).unwrap_or(0);
            stderr.truncate(cut);
            stderr.push_str(" …");
        }
        return Err(NetError::Command { command: format!("ip {}", args.join(" ")), status: out.status.to_string(), stderr });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Best effort, for removal: a failure is logged (the next run's sweep retries), never returned.
fn ip_quiet(args: &[&str]) {
    if let Err(e) = ip(args) {
        tracing::warn!("removing part of the run's network: {e}");
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The process-wide counter that makes every interface and namespace name of this process unique.
static SEQ: AtomicU32 = AtomicU32::new(0);

fn next_seq() -> u32 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// `lg<kind><pid hex>x<n hex>`: at most 2 + 1 + 6 + 1 + 5 = 15 bytes, the kernel's limit
/// (IFNAMSIZ - 1), for any pid (at most 2^22) and the first 2^20 names of a process.
fn if_name(kind: char, pid: u32, n: u32) -> String {
    format!("{IF_PREFIX}{kind}{pid:x}x{:x}", n & 0xf_ffff)
}

/// The owning pid of an interface name of ours (`lgb1a2bx3` → 0x1a2b), else `None`.
fn pid_of_if_name(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(IF_PREFIX)?;
    let mut chars = rest.chars();
    if !matches!(chars.next()?, 'b' | 'v' | 'p') {
        return None;
    }
    let (pid, n) = chars.as_str().split_once('x')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(pid, 16).ok().filter(|p| *p > 0)
}

/// The start time an interface's alias records (`layout-gate <pid>.<start>`), for its pid.
fn start_of_alias(alias: &str, pid: u32) -> Option<u64> {
    let (p, s) = alias.strip_prefix(ALIAS_PREFIX)?.split_whitespace().next()?.split_once('.')?;
    (p.parse::<u32>().ok()? == pid).then_some(())?;
    s.parse().ok()
}

/// `lg-<pid>.<start>-<n>-<label>`, the label cut to lower-case letters, digits and `-`.
fn ns_name(owner: Owner, n: u32, label: &str) -> String {
    let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(48).collect();
    format!("{NS_PREFIX}{}-{n}-{label}", owner.token())
}

/// The owner a namespace name of ours records.
fn owner_of_ns_name(name: &str) -> Option<Owner> {
    let token = name.strip_prefix(NS_PREFIX)?.split('-').next()?;
    let (pid, start) = token.split_once('.')?;
    Some(Owner { pid: pid.parse().ok().filter(|p| *p > 0)?, start: start.parse().ok()? })
}

/// An IPv4 network, `base/prefix`, with `base` masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct V4Net {
    base: u32,
    prefix: u8,
}

impl V4Net {
    fn parse(s: &str) -> Option<V4Net> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, p.parse::<u8>().ok().filter(|p| *p <= 32)?),
            None => (s, 32),
        };
        let base = u32::from(addr.parse::<Ipv4Addr>().ok()?);
        Some(V4Net { base: base & Self::mask(prefix), prefix })
    }
    fn mask(prefix: u8) -> u32 {
        if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) }
    }
    fn contains(&self, ip: u32) -> bool {
        ip & Self::mask(self.prefix) == self.base
    }
    fn overlaps(&self, other: &V4Net) -> bool {
        self.contains(other.base) || other.contains(self.base)
    }
}

/// The routes of every table (`ip -j -4 route show table all`), as networks; `default` (which
/// covers everything and so is no route *into* a /24 of ours) is left out.
fn host_routes() -> Result<Vec<V4Net>, NetError> {
    let text = ip(&["-j", "-4", "route", "show", "table", "all"])?;
    parse_routes(&text).map_err(|e| io_err("reading `ip -j -4 route show table all`")(io::Error::new(io::ErrorKind::InvalidData, e)))
}

fn parse_routes(json: &str) -> Result<Vec<V4Net>, String> {
    let rows: Vec<serde_json::Value> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    Ok(rows.iter().filter_map(|r| r.get("dst").and_then(|d| d.as_str())).filter(|d| *d != "default").filter_map(V4Net::parse).collect())
}

/// The first 10.244.N.0/24 (N from 1) that overlaps none of `routes`.
fn free_net(routes: &[V4Net]) -> Option<Ipv4Addr> {
    (1..=254u8).map(|n| Ipv4Addr::new(RANGE[0], RANGE[1], n, 0)).find(|a| {
        let net = V4Net { base: u32::from(*a), prefix: 24 };
        !routes.iter().any(|r| r.overlaps(&net))
    })
}

/// Held while a process sweeps and picks its /24, so two runs starting at once never pick the
/// same one (the route the first adds is what the second must see).
fn machine_lock() -> Result<File, NetError> {
    let path = std::env::temp_dir().join("layout-gate-netns.lock");
    let f = File::options().create(true).truncate(false).write(true).open(&path).map_err(io_err(format!("{}", path.display())))?;
    f.lock().map_err(io_err(format!("locking {}", path.display())))?;
    Ok(f)
}

/// The bridge and its /24: shared by the [`RunNetwork`] and every [`Netns`] in it, removed when
/// the last of them is dropped.
#[derive(Debug)]
struct Bridge {
    name: String,
    /// 10.244.N.0
    base: Ipv4Addr,
    /// The host parts (2-254) namespaces hold now.
    used: Mutex<BTreeSet<u8>>,
    grant: Option<NamespaceGrant>,
}

impl Bridge {
    fn gateway(&self) -> Ipv4Addr {
        let o = self.base.octets();
        Ipv4Addr::new(o[0], o[1], o[2], 1)
    }
    fn take_addr(&self) -> Result<Ipv4Addr, NetError> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let host = (2..=254u8).find(|h| !used.contains(h)).ok_or_else(|| NetError::Full { net: format!("{}/24", self.base) })?;
        used.insert(host);
        let o = self.base.octets();
        Ok(Ipv4Addr::new(o[0], o[1], o[2], host))
    }
    fn give_back(&self, addr: Ipv4Addr) {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).remove(&addr.octets()[3]);
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Probes may no longer reach the /24 before it goes.
        self.grant.take();
        ip_quiet(&["link", "del", "dev", &self.name]);
    }
}

/// The run's own network: a bridge with a gateway address in a private /24, and the namespaces
/// made on it with [`RunNetwork::namespace`]. Removed on drop (after every [`Netns`] of it).
#[derive(Debug)]
pub struct RunNetwork {
    bridge: Arc<Bridge>,
    label: String,
}

impl RunNetwork {
    /// Sweeps what dead runs left, picks a /24 in 10.244.0.0/16 that no host route covers, makes
    /// the bridge (`lgb…`) with the gateway `.1`, and holds a [`NamespaceGrant`] for the /24.
    pub fn create(label: &str) -> Result<RunNetwork, NetError> {
        if !is_root() {
            return Err(NetError::NotRoot);
        }
        ip(&["-V"])?;
        let _lock = machine_lock()?;
        sweep()?;
        ON_SIGNAL.call_once(|| crate::child::on_signal(remove_own));
        let routes = host_routes()?;
        let base = free_net(&routes).ok_or_else(|| NetError::NoNetwork {
            routes: routes.iter().map(|r| format!("{}/{}", Ipv4Addr::from(r.base), r.prefix)).collect::<Vec<_>>().join(", "),
        })?;
        let owner = Owner::current();
        let name = if_name('b', owner.pid, next_seq());
        ip(&["link", "add", "name", &name, "type", "bridge"])?;
        let net = NamespaceNet::new(IpAddr::V4(base), 24).expect("10.244.N.0/24 is private");
        // From here the bridge is removed on every error (its drop).
        let mut bridge = Bridge { name, base, used: Mutex::new(BTreeSet::new()), grant: None };
        let alias = format!("{ALIAS_PREFIX}{} {}", owner.token(), crate::term::line(label));
        ip(&["link", "set", "dev", &bridge.name, "alias", &alias])?;
        // Nothing that comes in on the bridge is routed on (see the module's docs).
        let forwarding = format!("/proc/sys/net/ipv4/conf/{}/forwarding", bridge.name);
        std::fs::write(&forwarding, "0").map_err(io_err(format!("writing 0 to {forwarding}")))?;
        ip(&["addr", "add", &format!("{}/24", bridge.gateway()), "dev", &bridge.name])?;
        ip(&["link", "set", "dev", &bridge.name, "up"])?;
        bridge.grant = Some(NamespaceGrant::hold(net));
        tracing::info!(bridge = %bridge.name, net = %net, "the run's network is up");
        Ok(RunNetwork { bridge: Arc::new(bridge), label: label.to_string() })
    }

    /// The bridge's name (`lgb…`).
    pub fn bridge(&self) -> &str {
        &self.bridge.name
    }

    /// The gateway: the host's address on the bridge, every namespace's default route.
    pub fn gateway(&self) -> Ipv4Addr {
        self.bridge.gateway()
    }

    /// The /24, as the probe's confinement names it.
    pub fn net(&self) -> NamespaceNet {
        NamespaceNet::new(IpAddr::V4(self.bridge.base), 24).expect("10.244.N.0/24 is private")
    }

    /// A network namespace on the bridge with an address of its own from the /24, `lo` up and a
    /// default route via the gateway. `name` is part of its name (`ip netns list`).
    pub fn namespace(&self, name: &str) -> Result<Netns, NetError> {
        let owner = Owner::current();
        let n = next_seq();
        let ns = ns_name(owner, n, &format!("{}-{name}", self.label));
        let addr = self.bridge.take_addr()?;
        let veth = if_name('v', owner.pid, n);
        let peer = if_name('p', owner.pid, n);
        if let Err(e) = ip(&["netns", "add", &ns]) {
            self.bridge.give_back(addr);
            return Err(e);
        }
        let handle = Path::new(NETNS_DIR).join(&ns);
        // From here the namespace (and the veth, once made) are removed on every error.
        let mut made = Netns { name: ns, veth: None, addr, handle: None, bridge: Arc::clone(&self.bridge) };
        made.handle = Some(File::open(&handle).map_err(io_err(format!("opening {}", handle.display())))?);
        ip(&["link", "add", "name", &veth, "type", "veth", "peer", "name", &peer])?;
        made.veth = Some(veth.clone());
        let alias = format!("{ALIAS_PREFIX}{} {}", owner.token(), made.name);
        ip(&["link", "set", "dev", &veth, "alias", &alias])?;
        ip(&["link", "set", "dev", &peer, "netns", &made.name])?;
        ip(&["link", "set", "dev", &veth, "master", &self.bridge.name, "up"])?;
        let n = ["-n", made.name.as_str()];
        ip(&[&n[..], &["link", "set", "dev", &peer, "name", "eth0"]].concat())?;
        ip(&[&n[..], &["addr", "add", &format!("{addr}/24"), "dev", "eth0"]].concat())?;
        ip(&[&n[..], &["link", "set", "dev", "eth0", "up"]].concat())?;
        ip(&[&n[..], &["link", "set", "dev", "lo", "up"]].concat())?;
        ip(&[&n[..], &["route", "add", "default", "via", &self.bridge.gateway().to_string(), "dev", "eth0"]].concat())?;
        Ok(made)
    }
}

/// One network namespace of the run's network. Dropping it kills every process in it, then
/// removes its veth and the namespace.
#[derive(Debug)]
pub struct Netns {
    name: String,
    veth: Option<String>,
    addr: Ipv4Addr,
    /// `/run/netns/<name>`, open: what `setns` enters.
    handle: Option<File>,
    bridge: Arc<Bridge>,
}

impl Netns {
    /// Its address on the run's network.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Its name (`ip netns exec <name> …` enters it).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> io::Result<OwnedFd> {
        let h = self.handle.as_ref().ok_or_else(|| io::Error::other(format!("the namespace {} is not open", self.name)))?;
        Ok(h.try_clone()?.into())
    }

    /// `program`, to be started inside the namespace (it enters it between fork and exec) and
    /// killed when this process dies ([`crate::child::set_dies_with_parent`]) or when the
    /// namespace is dropped. Spawn it from a thread that outlives it (see [`crate::child`]).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(program);
        crate::child::set_dies_with_parent(&mut cmd);
        let fd = self.fd();
        // SAFETY: the closure runs in the forked child before exec and calls only setns, an
        // async-signal-safe system call, without allocating (its error is made from errno).
        unsafe {
            cmd.pre_exec(move || match &fd {
                Ok(fd) => {
                    if libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                }
                Err(_) => Err(io::Error::from_raw_os_error(libc::EBADF)),
            });
        }
        cmd
    }

    /// A listening socket made inside the namespace: a thread of its own enters the namespace,
    /// binds, and ends; the socket stays in the namespace it was made in, so an in-process
    /// server accepts from it as if it ran there.
    pub fn tcp_listener(&self, addr: SocketAddr) -> io::Result<TcpListener> {
        let fd = self.fd()?;
        let name = self.name.clone();
        std::thread::Builder::new()
            .name("netns-bind".into())
            .spawn(move || {
                // SAFETY: setns on this thread only; the thread ends after the bind.
                if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    let e = io::Error::last_os_error();
                    return Err(io::Error::new(e.kind(), format!("entering network namespace {name}: {e}")));
                }
                TcpListener::bind(addr)
            })?
            .join()
            .map_err(|_| io::Error::other("the thread binding in the namespace panicked"))?
    }

    /// The pids of every process whose network namespace is this one (not this process's).
    fn pids(&self) -> Vec<u32> {
        let Some(h) = &self.handle else { return Vec::new() };
        pids_in(h)
    }
}

/// The pids (other than this process) whose network namespace is the one `handle` is open on.
fn pids_in(handle: &File) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = handle.metadata() else { return Vec::new() };
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev()))
        .collect()
}

/// Kills `pids` and waits (at most 5 s) until none is left in the namespace.
fn kill_all(handle: &File, pids: Vec<u32>) {
    for pid in &pids {
        if let Ok(p) = libc::pid_t::try_from(*pid) {
            // SAFETY: kill only sends a signal.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids.is_empty() && !pids_in(handle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            kill_all(h, self.pids());
        }
        self.handle.take();
        if let Some(v) = &self.veth {
            // Removing one end removes its peer in the namespace.
            ip_quiet(&["link", "del", "dev", v]);
        }
        ip_quiet(&["netns", "delete", &self.name]);
        self.bridge.give_back(self.addr);
    }
}

/// Removes what runs that are gone left: their namespaces (killing what still runs in them)
/// first, then their interfaces. Returns what it removed. Called by [`RunNetwork::create`].
pub fn sweep() -> Result<Vec<String>, NetError> {
    remove_owned(|owner| !owner.is_alive())
}

/// Removes everything of this process's network: on a signal the process ends without its
/// drops, so [`RunNetwork::create`] registers this with [`crate::child::on_signal`] (once).
fn remove_own() {
    let me = Owner::current();
    if let Err(e) = remove_owned(|owner| owner.pid == me.pid && (owner.start == me.start || owner.start == 0)) {
        tracing::warn!("removing this run's network on a signal: {e}");
    }
}

static ON_SIGNAL: std::sync::Once = std::sync::Once::new();

/// Removes the namespaces, then the interfaces, whose owner `gone` says to remove.
fn remove_owned(gone: impl Fn(Owner) -> bool) -> Result<Vec<String>, NetError> {
    let mut removed = Vec::new();
    let dir = match std::fs::read_dir(NETNS_DIR) {
        Ok(d) => d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_err(format!("reading {NETNS_DIR}"))(e)),
    };
    for name in dir {
        let Some(owner) = owner_of_ns_name(&name) else { continue };
        if !gone(owner) {
            continue;
        }
        if let Ok(h) = File::open(PathBuf::from(NETNS_DIR).join(&name)) {
            kill_all(&h, pids_in(&h));
        }
        ip(&["netns", "delete", &name])?;
        removed.push(name);
    }
    let links: Vec<serde_json::Value> = serde_json::from_str(&ip(&["-j", "link", "show"])?)
        .map_err(|e| io_err("reading `ip -j link show`")(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    for link in links {
        let Some(name) = link.get("ifname").and_then(|n| n.as_str()) else { continue };
        let Some(pid) = pid_of_if_name(name) else { continue };
        let start = link.get("ifalias").and_then(|a| a.as_str()).and_then(|a| start_of_alias(a, pid)).unwrap_or(0);
        if !gone(Owner { pid, start }) {
            continue;
        }
        // A veth's peer went with its namespace above; deleting it again says it does not exist.
        match ip(&["link", "del", "dev", name]) {
            Ok(_) => removed.push(name.to_string()),
            Err(NetError::Command { stderr, .. }) if stderr.contains("Cannot find device") => {}
            Err(e) => return Err(e),
        }
    }
    if !removed.is_empty() {
        tracing::info!(removed = ?removed, "swept the network namespaces and interfaces of runs that are gone");
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn interface_names_fit_the_kernel_and_carry_their_owner() {
        let name = if_name('b', 4_194_304, u32::MAX);
        assert!(name.len() <= 15, "{name}");
        assert_eq!(pid_of_if_name(&name), Some(4_194_304));
        assert_eq!(pid_of_if_name(&if_name('v', 77, 3)), Some(77));
        for not_ours in ["lo", "eth0", "lgbx1", "lgq12x1", "lgb12x", "lgb12", "lxcfoo", "lgbzzx1"] {
            assert_eq!(pid_of_if_name(not_ours), None, "{not_ours}");
        }
        assert_eq!(start_of_alias("layout-gate 77.123 run", 77), Some(123));
        assert_eq!(start_of_alias("layout-gate 78.123 run", 77), None, "another pid's alias");
        assert_eq!(start_of_alias("something else", 77), None);
    }

    #[test]
    fn namespace_names_carry_their_owner() {
        let owner = Owner { pid: 42, start: 9001 };
        let name = ns_name(owner, 7, "Conformance/1.20.0 pod");
        assert_eq!(name, "lg-42.9001-7-conformance-1-20-0-pod");
        assert_eq!(owner_of_ns_name(&name), Some(owner));
        assert_eq!(owner_of_ns_name("cni-1234"), None);
        assert_eq!(owner_of_ns_name("lg-42-7"), None);
    }

    #[test]
    fn the_network_avoids_every_route_that_covers_it() {
        let routes = parse_routes(
            r#"[{"dst":"default","gateway":"192.0.2.1"},{"dst":"10.244.1.0/24"},{"dst":"10.244.2.7"},
                {"dst":"10.244.3.0/25"},{"type":"local","dst":"127.0.0.0/8"}]"#,
        )
        .unwrap();
        assert_eq!(free_net(&routes), Some(Ipv4Addr::new(10, 244, 4, 0)));
        // A wider route covers every /24 under it.
        assert_eq!(free_net(&parse_routes(r#"[{"dst":"10.0.0.0/8"}]"#).unwrap()), None);
        assert_eq!(free_net(&parse_routes(r#"[{"dst":"10.244.0.0/17"}]"#).unwrap()), Some(Ipv4Addr::new(10, 244, 128, 0)));
        // The default route is no route into the range.
        assert_eq!(free_net(&parse_routes(r#"[{"dst":"default"}]"#).unwrap()), Some(Ipv4Addr::new(10, 244, 1, 0)));
        assert!(parse_routes("not json").is_err());
    }

    /// The rest needs root and `ip`; skipped (saying so) elsewhere. The e2e trials
    /// `netns::*` run the same as root, where they fail instead.
    fn root_or_skip(test: &str) -> bool {
        if !is_root() {
            eprintln!("{test}: skipped: needs root (network namespaces); the e2e trial netns:: runs it as root");
            return false;
        }
        true
    }

    /// The namespace's IPv4 routes (`ip -j -4 route show` inside it): `default via G` or the
    /// destination.
    pub(crate) fn routes_inside(ns: &Netns) -> Vec<String> {
        let out = ns.command("ip").args(["-j", "-4", "route", "show"]).output().unwrap();
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        rows.iter()
            .map(|r| match (r["dst"].as_str(), r["gateway"].as_str()) {
                (Some("default"), Some(g)) => format!("default via {g}"),
                (Some(d), _) => d.to_string(),
                _ => format!("{r}"),
            })
            .collect()
    }

    #[test]
    fn a_namespace_serves_at_its_own_address_and_everything_goes_on_drop() {
        if !root_or_skip("netns::a_namespace_serves_at_its_own_address_and_everything_goes_on_drop") {
            return;
        }
        let run = RunNetwork::create("unit").unwrap();
        let bridge = run.bridge().to_string();
        let ns = run.namespace("a").unwrap();
        let other = run.namespace("b").unwrap();
        assert_ne!(ns.addr(), other.addr());
        // Only the /24 and the default route via the gateway, inside.
        assert_eq!(routes_inside(&ns), vec![format!("default via {}", run.gateway()), run.net().to_string()]);
        // An in-process listener made in the namespace answers at the namespace's address.
        let listener = ns.tcp_listener(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"hello").unwrap();
        });
        let mut got = String::new();
        std::net::TcpStream::connect((ns.addr(), port)).unwrap().read_to_string(&mut got).unwrap();
        served.join().unwrap();
        assert_eq!(got, "hello");
        // Not on loopback of the host: the socket is in the namespace.
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        // A program started in it is killed when it goes.
        let mut child = ns.command("sleep").arg("600").spawn().unwrap();
        let name = ns.name().to_string();
        drop(ns);
        assert!(child.wait().is_ok());
        assert!(!Path::new(NETNS_DIR).join(&name).exists(), "{name} left");
        drop(other);
        drop(run);
        let links = ip(&["-j", "link", "show"]).unwrap();
        assert!(!links.contains(&format!("\"{bridge}\"")), "{bridge} left");
    }

    #[test]
    fn the_sweep_removes_what_a_dead_run_left_and_nothing_of_a_live_one() {
        if !root_or_skip("netns::the_sweep_removes_what_a_dead_run_left_and_nothing_of_a_live_one") {
            return;
        }
        let live = RunNetwork::create("sweep-live").unwrap();
        let live_ns = live.namespace("kept").unwrap();
        // What a run killed before its drops leaves: a namespace and a bridge named for it.
        let mut gone = Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let dead = Owner { pid: gone.id(), start: 1 };
        let ns = ns_name(dead, 0, "left");
        let br = if_name('b', dead.pid, 0);
        ip(&["netns", "add", &ns]).unwrap();
        ip(&["link", "add", "name", &br, "type", "bridge"]).unwrap();
        ip(&["link", "set", "dev", &br, "alias", &format!("{ALIAS_PREFIX}{} left", dead.token())]).unwrap();
        let removed = sweep().unwrap();
        assert!(removed.contains(&ns) && removed.contains(&br), "{removed:?}");
        assert!(!Path::new(NETNS_DIR).join(&ns).exists());
        // The live run's are untouched.
        assert!(Path::new(NETNS_DIR).join(live_ns.name()).exists());
        assert!(ip(&["link", "show", "dev", live.bridge()]).is_ok());
        assert!(!removed.iter().any(|r| r == live.bridge() || r == live_ns.name()), "{removed:?}");
    }
}
