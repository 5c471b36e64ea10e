//! The listening side shared by both backends: a loopback listener, one task per connection,
//! counters, and teardown on drop.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use super::http1;
use crate::types::BackendName;

/// How many recent SNIs a TLS backend remembers (older ones are dropped first).
const SNI_HISTORY: usize = 256;

/// What a backend has seen so far.
#[derive(Debug)]
struct Shared {
    name: BackendName,
    connections: AtomicU64,
    handshakes: AtomicU64,
    requests: AtomicU64,
    snis: Mutex<VecDeque<Option<String>>>,
}

impl Shared {
    fn new(name: BackendName) -> Arc<Self> {
        Arc::new(Shared {
            name,
            connections: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            snis: Mutex::new(VecDeque::new()),
        })
    }
    fn record_sni(&self, sni: Option<String>) {
        let mut snis = self.snis.lock().unwrap_or_else(|p| p.into_inner());
        if snis.len() == SNI_HISTORY {
            snis.pop_front();
        }
        snis.push_back(sni);
    }
}

#[derive(Clone)]
enum Mode {
    Plain,
    Tls(TlsAcceptor),
}

/// The running server: its address, counters, and the accept task. Dropping it aborts the
/// accept task, whose [`JoinSet`] aborts every connection task with it.
#[derive(Debug)]
struct Running {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Running {
    fn start(name: BackendName, mode: Mode) -> io::Result<Running> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| io::Error::new(e.kind(), format!("backend {name}: binding 127.0.0.1:0: {e}")))?;
        Running::start_on(name, mode, std_listener)
    }

    /// Serves on a socket the caller bound (e.g. inside a network namespace of the run's own,
    /// where an EndpointSlice may name its address).
    fn start_on(name: BackendName, mode: Mode, std_listener: std::net::TcpListener) -> io::Result<Running> {
        let handle =
            Handle::try_current().map_err(|e| io::Error::other(format!("backend {name}: must be started inside a tokio runtime: {e}")))?;
        let _entered = handle.enter();
        std_listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(std_listener)?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(name);
        let task = handle.spawn(accept_loop(listener, shared.clone(), mode));
        tracing::debug!(backend = %shared.name, %addr, "backend listening");
        Ok(Running { addr, shared, task })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mode: Mode) {
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connection tasks so the set does not grow with every connection.
        while connections.try_join_next().is_some() {}
        match listener.accept().await {
            Ok((tcp, peer)) => {
                shared.connections.fetch_add(1, Ordering::Relaxed);
                connections.spawn(serve(tcp, peer, shared.clone(), mode.clone()));
            }
            Err(e) => {
                // E.g. out of file descriptors: wait a little rather than spin on the error.
                tracing::debug!(backend = %shared.name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve(tcp: TcpStream, peer: SocketAddr, shared: Arc<Shared>, mode: Mode) {
    let _ = tcp.set_nodelay(true);
    let count_request = || {
        shared.requests.fetch_add(1, Ordering::Relaxed);
    };
    let result = match mode {
        Mode::Plain => http1::serve(tcp, &shared.name, None, count_request).await,
        Mode::Tls(acceptor) => match acceptor.accept(tcp).await {
            Ok(tls) => {
                let sni = tls.get_ref().1.server_name().map(str::to_string);
                shared.handshakes.fetch_add(1, Ordering::Relaxed);
                shared.record_sni(sni.clone());
                http1::serve(tls, &shared.name, sni.as_deref(), count_request).await
            }
            Err(e) => Err(e),
        },
    };
    if let Err(e) = result {
        tracing::debug!(backend = %shared.name, %peer, error = %e, "connection ended with an error");
    }
}

/// A TLS server on 127.0.0.1 that terminates with the given config and answers every HTTP/1.1
/// request with 200, `x-layout-gate-backend: <name>` and `backend=<name> sni=<sni|none>`.
#[derive(Debug)]
pub struct TlsBackend(Running);

impl TlsBackend {
    /// Binds 127.0.0.1:0 and starts serving. Must be called inside a tokio runtime.
    pub fn start(name: BackendName, server_config: Arc<rustls::ServerConfig>) -> io::Result<TlsBackend> {
        Running::start(name, Mode::Tls(TlsAcceptor::from(server_config))).map(TlsBackend)
    }
    /// [`TlsBackend::start`] on a socket the caller bound.
    pub fn start_on(
        name: BackendName,
        server_config: Arc<rustls::ServerConfig>,
        listener: std::net::TcpListener,
    ) -> io::Result<TlsBackend> {
        Running::start_on(name, Mode::Tls(TlsAcceptor::from(server_config)), listener).map(TlsBackend)
    }
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }
    pub fn name(&self) -> &BackendName {
        &self.0.shared.name
    }
    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.0.shared.connections.load(Ordering::Relaxed)
    }
    /// TLS handshakes completed.
    pub fn handshakes(&self) -> u64 {
        self.0.shared.handshakes.load(Ordering::Relaxed)
    }
    /// HTTP requests answered.
    pub fn requests(&self) -> u64 {
        self.0.shared.requests.load(Ordering::Relaxed)
    }
    /// The SNI of each completed handshake (`None`: the client sent none), oldest first, the
    /// last 256 at most.
    pub fn snis_seen(&self) -> Vec<Option<String>> {
        self.0.shared.snis.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
    }
}

/// A plain HTTP server on 127.0.0.1 answering like [`TlsBackend`] (with `sni=none`).
#[derive(Debug)]
pub struct HttpBackend(Running);

impl HttpBackend {
    /// Binds 127.0.0.1:0 and starts serving. Must be called inside a tokio runtime.
    pub fn start(name: BackendName) -> io::Result<HttpBackend> {
        Running::start(name, Mode::Plain).map(HttpBackend)
    }
    /// [`HttpBackend::start`] on a socket the caller bound.
    pub fn start_on(name: BackendName, listener: std::net::TcpListener) -> io::Result<HttpBackend> {
        Running::start_on(name, Mode::Plain, listener).map(HttpBackend)
    }
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }
    pub fn name(&self) -> &BackendName {
        &self.0.shared.name
    }
    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.0.shared.connections.load(Ordering::Relaxed)
    }
    /// HTTP requests answered.
    pub fn requests(&self) -> u64 {
        self.0.shared.requests.load(Ordering::Relaxed)
    }
}
