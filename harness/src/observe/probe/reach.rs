//! Where a probe may send: the one check every probe's connection passes before a packet leaves.
//!
//! On a developer's machine and in CI nothing may leave the machine: every address a test, lane
//! or benchmark sends to is in 127.0.0.0/8, ::1, or a network namespace the run created. A
//! private address outside such a namespace (10/8, 172.16/12, 192.168/16) takes the default route
//! off the machine, and whatever answers there is not ours: a trial once probed the operator
//! lane's LB IPAM pool (172.18.0.0/16, served by nothing here) about 95 times per run.
//!
//! [`LOCAL_ONLY_ENV`] turns the confinement on for this process and every process it starts
//! (they inherit the environment): a probe to any other address is then not sent, its
//! observation says why (`Failed` at stage `setup`), and the refusal is appended to the file the
//! variable names, so a test runner can fail the run that tried (the e2e runner's last trial
//! reads it). Unit tests are always confined, and a refused probe fails the test at once.
//! `check --live` on a platform's own cluster, `probe` and the kind lane run unconfined unless
//! the variable is set: their Gateways really are elsewhere.
//!
//! An address inside a network namespace the run created is reachable only while the run holds a
//! [`NamespaceGrant`] for that namespace's network.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Set (to the path of a file refusals are appended to, or to `1`), every probe of this process
/// and of the processes it starts goes only to loopback or a network of the run's own namespaces.
pub const LOCAL_ONLY_ENV: &str = "LAYOUT_GATE_LOCAL_ONLY";

/// A probe refused because its address is off this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not sent to {addr}: it is off this machine ({LOCAL_ONLY_ENV} confines every probe to 127.0.0.0/8, ::1 and the run's own network namespaces{held})"
)]
pub struct OffMachine {
    pub addr: SocketAddr,
    /// `; held now: …` when the run holds namespace networks, else empty.
    held: String,
}

/// A network (address and prefix length) inside a network namespace the run created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceNet {
    base: IpAddr,
    prefix: u8,
}

impl NamespaceNet {
    /// `None` when the prefix is longer than the address, or the network is not private (a
    /// namespace of the run's own holds private addresses only; a public one is never ours).
    pub fn new(base: IpAddr, prefix: u8) -> Option<Self> {
        let max = if base.is_ipv4() { 32 } else { 128 };
        let private = match base {
            IpAddr::V4(v4) => v4.is_private(),
            // Unique local addresses (fc00::/7).
            IpAddr::V6(v6) => v6.segments()[0] & 0xfe00 == 0xfc00,
        };
        (prefix <= max && private).then_some(NamespaceNet { base, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        fn masked(bits: u128, width: u32, prefix: u8) -> u128 {
            if prefix == 0 { 0 } else { bits >> (width - u32::from(prefix)) }
        }
        match (self.base, ip) {
            (IpAddr::V4(b), IpAddr::V4(a)) => masked(u32::from(b).into(), 32, self.prefix) == masked(u32::from(a).into(), 32, self.prefix),
            (IpAddr::V6(b), IpAddr::V6(a)) => masked(u128::from(b), 128, self.prefix) == masked(u128::from(a), 128, self.prefix),
            _ => false,
        }
    }
}

impl std::fmt::Display for NamespaceNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// The namespace networks held now, each with the count of grants holding it.
static HELD: Mutex<Vec<(NamespaceNet, usize)>> = Mutex::new(Vec::new());

fn held() -> MutexGuard<'static, Vec<(NamespaceNet, usize)>> {
    // A holder that panicked left the list whole (every change is one push, one decrement or
    // one removal), so the lock's poison says nothing about its content.
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Probes may reach `net` while this lives: held by the owner of the network namespace that
/// holds `net`, dropped before the namespace is removed.
#[derive(Debug)]
pub struct NamespaceGrant {
    net: NamespaceNet,
}

impl NamespaceGrant {
    pub fn hold(net: NamespaceNet) -> Self {
        let mut h = held();
        match h.iter_mut().find(|(n, _)| *n == net) {
            Some((_, count)) => *count += 1,
            None => h.push((net, 1)),
        }
        NamespaceGrant { net }
    }
}

impl Drop for NamespaceGrant {
    fn drop(&mut self) {
        let mut h = held();
        if let Some(i) = h.iter().position(|(n, _)| *n == self.net) {
            h[i].1 -= 1;
            if h[i].1 == 0 {
                h.remove(i);
            }
        }
    }
}

/// Whether this process confines its probes: [`LOCAL_ONLY_ENV`] set to anything but empty, or a
/// unit test.
fn confined() -> bool {
    cfg!(test) || std::env::var_os(LOCAL_ONLY_ENV).is_some_and(|v| !v.is_empty())
}

fn on_this_machine(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Whether `addr` may be probed under the confinement: loopback, or a network the run holds.
/// Pure of the environment: what [`permit`] asks once it knows the process is confined.
pub fn check(addr: SocketAddr) -> Result<(), OffMachine> {
    if on_this_machine(addr.ip()) {
        return Ok(());
    }
    let h = held();
    if h.iter().any(|(n, _)| n.contains(addr.ip())) {
        return Ok(());
    }
    let held = if h.is_empty() {
        String::new()
    } else {
        format!("; held now: {}", h.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>().join(", "))
    };
    Err(OffMachine { addr, held })
}

/// The check a probe makes before it connects: `Ok` when unconfined or the address is allowed;
/// else the refusal, appended to the file [`LOCAL_ONLY_ENV`] names (when it names one). In a
/// unit test a refused probe panics, so the test that sent it fails where it did.
pub(super) fn permit(addr: SocketAddr) -> Result<(), OffMachine> {
    if !confined() {
        return Ok(());
    }
    let refused = check(addr).err();
    if let Some(e) = &refused {
        tracing::error!(%addr, "{e}");
        record(e);
        if cfg!(test) {
            panic!("a unit test probed an address off this machine: {e}");
        }
    }
    refused.map_or(Ok(()), Err)
}

/// Appends the refusal (with this process's id and command line) to the file the variable names.
/// Best effort: the observation already says it, and a file that cannot be written must not stop
/// the probe's caller. Also said by the L4 stand-in (`lanes::operator::l4`) when a flow's
/// backend is refused.
pub(crate) fn record(e: &OffMachine) {
    let Some(path) = std::env::var_os(LOCAL_ONLY_ENV).filter(|v| v.as_encoded_bytes().first() == Some(&b'/')) else {
        return;
    };
    let argv: Vec<String> = std::env::args().map(|a| crate::term::line(&a).into_owned()).collect();
    let line = format!("pid {} ({}): {e}\n", std::process::id(), argv.join(" "));
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        // One write of one line: appends of a few hundred bytes are not interleaved.
        let _ = f.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_passes_and_private_ranges_do_not() {
        for ok in ["127.0.0.1:443", "127.18.0.0:80", "[::1]:443", "[::ffff:127.0.0.9]:80"] {
            assert_eq!(check(at(ok)), Ok(()), "{ok}");
        }
        for off in ["172.18.0.0:443", "10.96.0.1:443", "192.168.1.1:80", "8.8.8.8:53", "[fd00::2]:443", "0.0.0.0:80"] {
            let e = check(at(off)).unwrap_err();
            assert!(e.to_string().starts_with(&format!("not sent to {off}: it is off this machine")), "{e}");
        }
    }

    #[test]
    fn a_held_namespace_network_passes_until_its_grant_is_dropped() {
        let net = NamespaceNet::new("10.244.7.0".parse().unwrap(), 24).unwrap();
        assert!(check(at("10.244.7.9:8080")).is_err());
        let g1 = NamespaceGrant::hold(net);
        let g2 = NamespaceGrant::hold(net);
        assert_eq!(check(at("10.244.7.9:8080")), Ok(()));
        // Not the neighbouring network.
        let e = check(at("10.244.8.1:8080")).unwrap_err();
        assert!(e.to_string().ends_with("namespaces; held now: 10.244.7.0/24)"), "{e}");
        drop(g1);
        assert_eq!(check(at("10.244.7.9:8080")), Ok(()), "one grant still holds it");
        drop(g2);
        assert!(check(at("10.244.7.9:8080")).is_err());
    }

    #[test]
    fn only_private_networks_can_be_held() {
        assert!(NamespaceNet::new("8.8.8.0".parse().unwrap(), 24).is_none());
        assert!(NamespaceNet::new("10.0.0.0".parse().unwrap(), 33).is_none());
        assert!(NamespaceNet::new("fd00::".parse().unwrap(), 64).is_some());
        assert!(NamespaceNet::new("10.0.0.0".parse().unwrap(), 0).is_some());
    }

    #[tokio::test]
    #[should_panic(expected = "a unit test probed an address off this machine: not sent to 172.18.0.0:443")]
    async fn a_unit_test_that_probes_off_the_machine_fails() {
        let spec = super::super::ProbeSpec { addr: at("172.18.0.0:443"), sni: None, http: None };
        super::super::probe_tls(&spec, &super::super::ProbeOptions::default()).await;
    }
}
