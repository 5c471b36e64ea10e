//! Local ports for Envoy listeners.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// A loopback address whose port was free a moment ago.
///
/// Binds `127.0.0.1:0`, reads the port the kernel chose, and closes the socket so Envoy can
/// bind it. Between the close and Envoy's bind another process could take the port: a race we
/// accept because
/// - the kernel hands out ephemeral ports spread over a large range, so an immediate reuse by
///   another test in this process is rare;
/// - when it happens it is loud, not silent: listeners are rendered with
///   `enable_reuse_port: false` (listener.rs), so Envoy fails to bind and `start` returns its
///   error instead of two processes sharing the port;
/// - the alternative (handing Envoy a pre-bound socket) is not available for file-configured
///   listeners.
///
/// In-process backends do not need this: they bind port 0 themselves and keep the socket.
pub fn free_local_port() -> std::io::Result<u16> {
    Ok(free_local_addr()?.port())
}

/// [`free_local_port`] as a full `127.0.0.1:<port>` address.
pub fn free_local_addr() -> std::io::Result<SocketAddr> {
    let socket = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    socket.local_addr()
}

/// A local address held by a bound socket that does not listen. A connection to it is refused,
/// exactly as to an address nothing holds, but no other process can take it while a lane serves:
/// a Gateway port the prediction (or Cilium's config) serves nothing on (a listener the version does not
/// translate, one Envoy refused) would otherwise be free for any test or program on the machine
/// to bind, and a probe expecting "nothing" would be answered by it.
pub struct Held(#[allow(dead_code)] socket2::Socket);

/// Holds `addr` (see [`Held`]); `Err` when something else already has it.
pub fn hold(addr: SocketAddr) -> std::io::Result<Held> {
    let s = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    s.bind(&addr.into())?;
    Ok(Held(s))
}
