//! Local addresses for Envoy listeners, held from the moment they are chosen until their holder
//! is dropped, so no other process (and no other choice in this one) can take one before Envoy
//! binds it.
//!
//! Choosing a port by binding port 0 and closing the socket left it free again at once: two of
//! a Gateway's 64 choices could be the same port, or a probe's own connection could take one,
//! and Envoy then failed to bind it (`cannot listen() errno=98`) in about one `check` in four.
//! Envoy cannot be handed a bound socket (not for file-configured listeners), so each address is
//! held by a socket bound with `SO_REUSEPORT` that never listens, and every listener is rendered
//! with `enable_reuse_port: true` (see `listener.rs`): Linux lets Envoy bind the same address
//! beside the hold (both ask for reuse, same user), while any other bind of it fails, and a port
//! chosen by `bind(port 0)` is never one a socket already holds. A socket that never listens
//! takes no connection: a connection to an address only held is refused, exactly as to an
//! address nothing holds, which is what a Gateway port that serves nothing must look like.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use socket2::{Domain, Socket, Type};

/// One local address per key (a Gateway's ports, a listener's names, ...), each held until the
/// last clone of this value is dropped. Derefs to the map of addresses.
///
/// ```no_run
/// use layout_gate::envoy::HeldAddrs;
/// // A fresh loopback port for each Gateway port the listeners stand for.
/// let ports = HeldAddrs::reserve([443u16, 80])?;
/// let https = ports[&443]; // render Envoy's listener on it; keep `ports` alive while it serves
/// // Addresses of your own (e.g. one loopback address per Gateway): held the same way.
/// let fixed = HeldAddrs::hold([("gw-a", "127.0.0.2:8443".parse().unwrap())])?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct HeldAddrs<K: Ord> {
    addrs: BTreeMap<K, SocketAddr>,
    sockets: Arc<Vec<Socket>>,
}

impl<K: Ord + Clone> HeldAddrs<K> {
    /// A fresh port on 127.0.0.1 for every distinct key, held.
    pub fn reserve(keys: impl IntoIterator<Item = K>) -> io::Result<Self> {
        HeldAddrs::reserve_on(IpAddr::V4(Ipv4Addr::LOCALHOST), keys)
    }

    /// A fresh port on `ip` (a local address) for every distinct key, held.
    pub fn reserve_on(ip: IpAddr, keys: impl IntoIterator<Item = K>) -> io::Result<Self> {
        let mut addrs = BTreeMap::new();
        let mut sockets = Vec::new();
        for k in keys {
            if let std::collections::btree_map::Entry::Vacant(slot) = addrs.entry(k) {
                let s = hold_socket(SocketAddr::new(ip, 0))?;
                let addr = s.local_addr()?.as_socket().ok_or_else(|| io::Error::other("a held socket has no IP address"))?;
                slot.insert(addr);
                sockets.push(s);
            }
        }
        Ok(HeldAddrs { addrs, sockets: Arc::new(sockets) })
    }

    /// Holds the given addresses (keys sharing one address hold it once); `Err` (`AddrInUse`,
    /// naming the address) when something else has one of them, another hold included.
    ///
    /// A reuse-port socket may join another's address, so each address is first bound without
    /// reuse (which fails if anything has it) and then held; another process holding the very
    /// same address in the microseconds between the two is not excluded (ports chosen by
    /// [`HeldAddrs::reserve`] have no such gap).
    pub fn hold(pairs: impl IntoIterator<Item = (K, SocketAddr)>) -> io::Result<Self> {
        let addrs: BTreeMap<K, SocketAddr> = pairs.into_iter().collect();
        let mut distinct: Vec<SocketAddr> = addrs.values().copied().collect();
        distinct.sort();
        distinct.dedup();
        let hold = |a: SocketAddr| -> io::Result<Socket> {
            drop(std::net::TcpListener::bind(a)?);
            hold_socket(a)
        };
        let sockets =
            distinct.into_iter().map(|a| hold(a).map_err(|e| io::Error::new(e.kind(), format!("{a}: {e}")))).collect::<io::Result<_>>()?;
        Ok(HeldAddrs { addrs, sockets: Arc::new(sockets) })
    }

    /// Addresses the caller vouches for, holding nothing (a rendering compared with one already
    /// served, a test's fixed map).
    pub fn unheld(addrs: BTreeMap<K, SocketAddr>) -> Self {
        HeldAddrs { addrs, sockets: Arc::new(Vec::new()) }
    }

    pub fn addrs(&self) -> &BTreeMap<K, SocketAddr> {
        &self.addrs
    }

    /// How many addresses are held (not merely named).
    pub fn held(&self) -> usize {
        self.sockets.len()
    }
}

impl<K: Ord> std::ops::Deref for HeldAddrs<K> {
    type Target = BTreeMap<K, SocketAddr>;
    fn deref(&self) -> &Self::Target {
        &self.addrs
    }
}

impl<K: Ord + std::fmt::Debug> std::fmt::Debug for HeldAddrs<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.addrs.fmt(f)
    }
}

/// A socket bound to `addr` with `SO_REUSEPORT`, not listening.
fn hold_socket(addr: SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn held_ports_are_distinct_refused_and_closed_to_others_until_dropped() {
        let many = HeldAddrs::reserve(0..256).unwrap();
        let mut ports: Vec<u16> = many.values().map(|a| a.port()).collect();
        ports.sort();
        ports.dedup();
        assert_eq!((ports.len(), many.held()), (256, 256), "a port chosen twice");
        let a = many[&0];
        // Nothing listens: refused, as an address nobody holds.
        assert_eq!(TcpStream::connect(a).unwrap_err().kind(), io::ErrorKind::ConnectionRefused);
        // Nobody else binds it...
        assert_eq!(TcpListener::bind(a).unwrap_err().kind(), io::ErrorKind::AddrInUse);
        assert_eq!(HeldAddrs::hold([((), a)]).map(|_| ()).unwrap_err().kind(), io::ErrorKind::AddrInUse);
        // ...except a listener that asks for reuse as Envoy does, which then takes the
        // connections.
        let envoy = hold_socket(a).unwrap();
        envoy.listen(8).unwrap();
        let _client = TcpStream::connect(a).unwrap();
        assert!(envoy.accept().is_ok());
        drop(envoy);
        // A clone keeps the hold; the last drop releases it (checked on an address no
        // connection used, which would keep it busy a while).
        let b = many[&1];
        let clone = many.clone();
        drop(many);
        assert_eq!(TcpListener::bind(b).unwrap_err().kind(), io::ErrorKind::AddrInUse);
        drop(clone);
        TcpListener::bind(b).unwrap();
    }

    #[test]
    fn given_addresses_are_held_once_each() {
        // The ports of a hold on 127.0.0.1, on another loopback address nobody uses.
        let free = HeldAddrs::reserve([1, 2]).unwrap();
        let other = |a: SocketAddr| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)), a.port());
        let (a, b) = (other(free[&1]), other(free[&2]));
        let held = HeldAddrs::hold([("x", a), ("y", a), ("z", b)]).unwrap();
        assert_eq!((held.len(), held.held()), (3, 2));
        assert_eq!(HeldAddrs::hold([((), b)]).map(|_| ()).unwrap_err().kind(), io::ErrorKind::AddrInUse, "held twice");
        assert_eq!(HeldAddrs::unheld(held.addrs().clone()).held(), 0);
    }
}
