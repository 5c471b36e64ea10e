//! The probe matrix of a derived Gateway: the ports and names it is probed on, and names added
//! to it (`--sni`). Below both `check`'s orchestration, which adds the names, and `--compare`,
//! which probes both layouts on the union of theirs.

use super::derive::{Derived, MatrixKey};
use crate::types::{Port, Sni};

/// The ports of a derived Gateway (those its matrix probes with TLS: every port).
pub fn ports(d: &Derived) -> Vec<Port> {
    let mut out: Vec<Port> = d.matrix.iter().filter(|k| !k.plain).map(|k| k.port).collect();
    out.dedup();
    out
}

/// The ports its matrix probes with plain HTTP (those of its HTTP listeners).
pub fn plain_ports(d: &Derived) -> Vec<Port> {
    let mut out: Vec<Port> = d.matrix.iter().filter(|k| k.plain).map(|k| k.port).collect();
    out.sort();
    out.dedup();
    out
}

/// The names of `d`'s rows of one kind (TLS SNIs or plain HTTP Hosts), in order.
pub fn names(d: &Derived, plain: bool) -> Vec<Sni> {
    d.matrix.iter().filter(|k| k.plain == plain).filter_map(|k| k.sni.clone()).collect()
}

/// Adds each of `extra` on every port of `d` (before the handshake without SNI, kept last), and
/// as a Host on every HTTP port.
pub fn add_names(d: &mut Derived, extra: &[Sni]) {
    if extra.is_empty() {
        return;
    }
    let with = |mut n: Vec<Sni>| {
        n.extend(extra.iter().cloned());
        n
    };
    d.matrix = matrix(&ports(d), &with(names(d, false)), &plain_ports(d), &with(names(d, true)));
}

/// Every port x every name, each port's names in order and then no SNI; then every HTTP port x
/// every plain HTTP name.
pub fn matrix(ports: &[Port], names: &[Sni], plain_ports: &[Port], plain_names: &[Sni]) -> Vec<MatrixKey> {
    let uniq = |names: &[Sni]| {
        let mut out: Vec<Sni> = Vec::new();
        for n in names {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
        out
    };
    let (names, plain_names) = (uniq(names), uniq(plain_names));
    let mut out = Vec::new();
    for p in ports {
        out.extend(names.iter().map(|n| MatrixKey::tls(*p, Some(n.clone()))));
        out.push(MatrixKey::tls(*p, None));
    }
    for p in plain_ports {
        out.extend(plain_names.iter().map(|n| MatrixKey::plain(*p, n.clone())));
    }
    out
}
