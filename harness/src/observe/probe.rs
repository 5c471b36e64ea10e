//! The probe: one real TLS handshake (or one plain HTTP exchange) against an address, recorded
//! as an [`Observation`] whatever happens.
//!
//! A probe never judges. A strange certificate, an alert, a reset or silence are all
//! observations the judge compares with a case's expectations, so every way a connection can
//! end maps onto an [`Outcome`] and nothing here returns an error or panics on network input.
//!
//! * [`probe_tls`]: TCP connect, TLS handshake with or without SNI, the presented chain recorded
//!   by a verifier that accepts anything but still checks the handshake signatures, then
//!   optionally one HTTP/1.1 `GET`.
//! * [`probe_plain_http`]: the same `GET` over plain TCP, for port-80 checks.
//! * [`contract_json`] and [`render_human`]: the `layout-gate probe` CLI output.

mod classify;
mod http;
pub mod reach;
pub(crate) mod report;
#[cfg(test)]
mod tests;
mod verifier;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::ServerName;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsConnector;

use crate::observe::leaf::{self, LeafInfo};
use crate::types::Sni;

use classify::{Failure, classify_io};
pub use http::{BACKEND_HEADER, BODY_LIMIT, HttpAnswer, HttpExchange, HttpRequestSpec, ServedBy};
pub use report::{contract_json, render_human, render_human_plain};
use verifier::RecordingVerifier;

/// How long one probe may take in all (connect, handshake and HTTP) unless told otherwise.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// At most this many probes are in flight at once in the whole process (each holds one
/// socket). A case with many probe keys, or `layout-gate probe` with many SNIs, waits for a
/// slot instead of exhausting file descriptors; the wait is not counted against a probe's
/// timeout.
pub const MAX_CONCURRENT_PROBES: usize = 64;

static IN_FLIGHT: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CONCURRENT_PROBES);

/// A slot among [`MAX_CONCURRENT_PROBES`]; the semaphore is never closed, so acquiring only waits.
async fn slot() -> Option<tokio::sync::SemaphorePermit<'static>> {
    IN_FLIGHT.acquire().await.ok()
}

/// Where to probe and what to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    pub addr: SocketAddr,
    /// The SNI to send; `None` sends no server_name extension at all.
    pub sni: Option<Sni>,
    /// One HTTP/1.1 request after the handshake, if wanted.
    pub http: Option<HttpRequestSpec>,
}

/// How to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The probe's whole budget: connect, handshake and HTTP exchange together. Named and
    /// overridable like every wait in the harness.
    pub timeout: Duration,
    /// ALPN protocols offered, in preference order. Empty offers none.
    pub alpn: Vec<Vec<u8>>,
}

impl Default for ProbeOptions {
    /// 3 s, offering `http/1.1` only: the probe speaks HTTP/1.1, so it must not let a server
    /// pick h2.
    fn default() -> Self {
        ProbeOptions { timeout: DEFAULT_PROBE_TIMEOUT, alpn: vec![b"http/1.1".to_vec()] }
    }
}

/// Where a probe stopped when it failed in a way that has no class of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Building the client (no packet sent).
    Setup,
    /// The probing machine itself failed (out of file descriptors, socket buffers or memory):
    /// says nothing about the server, and is never read as `refused`.
    Local,
    /// Opening the TCP connection.
    Connect,
    /// The TLS handshake.
    Handshake,
    /// Decoding the certificate the server presented.
    Certificate,
    /// The HTTP exchange of a plain probe.
    Http,
}

/// A completed TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshake {
    pub leaf: LeafInfo,
    /// Certificates the server presented, leaf included.
    pub chain_len: usize,
    /// `TLSv1.3` or `TLSv1.2`, as OpenSSL prints it.
    pub tls_version: String,
    /// The protocol the server selected, if any.
    pub alpn: Option<String>,
    /// IANA-style suite name, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: String,
    /// The HTTP exchange, when the probe asked for one.
    pub http: Option<HttpExchange>,
}

/// How a TLS probe ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The handshake completed and the server presented a certificate.
    Certificate(Box<Handshake>),
    /// The server sent a fatal TLS alert, named as in RFC 8446 (`unrecognized_name`).
    Alert { alert: String },
    /// The peer reset the connection (RST) before the handshake completed.
    Reset,
    /// The peer closed the connection (EOF) before the handshake completed.
    Closed,
    /// Nothing conclusive happened within the probe's timeout.
    Timeout,
    /// Nothing accepted the TCP connection.
    Refused,
    /// Anything else, e.g. a server that answers a ClientHello with something that is not TLS.
    Failed { stage: Stage, error: String },
}

/// One TLS probe, with when it started and how long it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub addr: SocketAddr,
    /// The SNI sent; `None` when the ClientHello carried no server_name.
    pub sni: Option<Sni>,
    /// Start of the probe, RFC 3339 UTC.
    pub at: String,
    pub elapsed_ms: u64,
    pub outcome: Outcome,
}

impl Observation {
    pub fn handshake(&self) -> Option<&Handshake> {
        match &self.outcome {
            Outcome::Certificate(h) => Some(h),
            _ => None,
        }
    }
    /// The HTTP answer, if the handshake completed and the server answered.
    pub fn http_answer(&self) -> Option<&HttpAnswer> {
        self.handshake()?.http.as_ref()?.answer()
    }
}

/// How a plain HTTP probe ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PlainOutcome {
    Answered(HttpAnswer),
    Reset,
    Closed,
    Timeout,
    Refused,
    Failed { stage: Stage, error: String },
}

/// One plain HTTP probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainObservation {
    pub addr: SocketAddr,
    /// The Host header sent.
    pub host: String,
    pub at: String,
    pub elapsed_ms: u64,
    pub outcome: PlainOutcome,
}

/// Probes `spec.addr` with a full TLS handshake (never resumed: each probe has its own client).
pub async fn probe_tls(spec: &ProbeSpec, options: &ProbeOptions) -> Observation {
    let _slot = slot().await;
    let at = now_rfc3339();
    let started = Instant::now();
    let outcome = tls_outcome(spec, options, started + options.timeout).await;
    tracing::debug!(addr = %spec.addr, sni = ?spec.sni.as_ref().map(Sni::as_str), ?outcome, "tls probe");
    Observation { addr: spec.addr, sni: spec.sni.clone(), at, elapsed_ms: millis(started), outcome }
}

/// Sends one HTTP/1.1 `GET` over plain TCP. The Host header is the request's host, else the
/// address.
pub async fn probe_plain_http(addr: SocketAddr, request: &HttpRequestSpec, options: &ProbeOptions) -> PlainObservation {
    let _slot = slot().await;
    let at = now_rfc3339();
    let started = Instant::now();
    let deadline = started + options.timeout;
    let host = request.host().map(str::to_string).unwrap_or_else(|| addr.to_string());
    let outcome = match connect(addr, deadline).await {
        Err(f) => plain_failure(f),
        Ok(mut tcp) => match timeout_at(deadline, http::exchange(&mut tcp, request, &host)).await {
            Err(_) => PlainOutcome::Timeout,
            Ok(Ok(answer)) => PlainOutcome::Answered(answer),
            Ok(Err(http::ExchangeError::Io(e))) => plain_failure(classify_io(&e, Stage::Http)),
            Ok(Err(http::ExchangeError::Malformed(m))) => PlainOutcome::Failed { stage: Stage::Http, error: m },
        },
    };
    tracing::debug!(%addr, %host, ?outcome, "plain http probe");
    PlainObservation { addr, host, at, elapsed_ms: millis(started), outcome }
}

async fn tls_outcome(spec: &ProbeSpec, options: &ProbeOptions, deadline: Instant) -> Outcome {
    let verifier = Arc::new(RecordingVerifier::new(provider()));
    let config = match client_config(verifier.clone(), spec.sni.is_some(), &options.alpn) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed { stage: Stage::Setup, error: format!("building the TLS client: {e}") },
    };
    let server_name = match &spec.sni {
        Some(sni) => match ServerName::try_from(sni.as_str().to_string()) {
            Ok(n) => n,
            Err(e) => return Outcome::Failed { stage: Stage::Setup, error: format!("SNI {sni}: {e}") },
        },
        // SNI is disabled in the config; an IP name is never sent as SNI either.
        None => ServerName::IpAddress(spec.addr.ip().into()),
    };
    let tcp = match connect(spec.addr, deadline).await {
        Ok(t) => t,
        Err(f) => return tls_failure(f),
    };
    let mut tls = match timeout_at(deadline, TlsConnector::from(config).connect(server_name, tcp)).await {
        Err(_) => return Outcome::Timeout,
        Ok(Err(e)) => return tls_failure(classify_io(&e, Stage::Handshake)),
        Ok(Ok(tls)) => tls,
    };

    let conn = tls.get_ref().1;
    // The verifier saw the chain as presented; the connection's copy is the fallback should a
    // future rustls skip the verifier (it never does for a full handshake today).
    let chain = verifier.take().or_else(|| conn.peer_certificates().map(<[_]>::to_vec)).unwrap_or_default();
    let Some(leaf_der) = chain.first() else {
        return Outcome::Failed { stage: Stage::Handshake, error: "handshake completed without a server certificate".into() };
    };
    let leaf = match leaf::describe(leaf_der) {
        Ok(l) => l,
        Err(e) => return Outcome::Failed { stage: Stage::Certificate, error: e },
    };
    let tls_version = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
        Some(other) => format!("{other:?}"),
        None => "unknown".to_string(),
    };
    let alpn = conn.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
    let cipher = conn
        .negotiated_cipher_suite()
        .map(|s| s.suite().as_str().map(str::to_string).unwrap_or_else(|| format!("{:?}", s.suite())))
        .unwrap_or_else(|| "unknown".to_string());

    let http = match &spec.http {
        None => None,
        Some(request) => Some(tls_http(&mut tls, request, spec, alpn.as_deref(), deadline).await),
    };
    // Say goodbye properly (close_notify) so servers log a clean close; the observation is
    // complete either way, so errors here do not matter.
    let _ = timeout_at(deadline, tls.shutdown()).await;
    Outcome::Certificate(Box::new(Handshake { leaf, chain_len: chain.len(), tls_version, alpn, cipher, http }))
}

async fn tls_http(
    tls: &mut tokio_rustls::client::TlsStream<TcpStream>,
    request: &HttpRequestSpec,
    spec: &ProbeSpec,
    alpn: Option<&str>,
    deadline: Instant,
) -> HttpExchange {
    if let Some(proto) = alpn.filter(|p| *p != "http/1.1") {
        return HttpExchange::Failed { error: format!("server selected ALPN {proto:?}; the probe speaks HTTP/1.1 only") };
    }
    let host = match (request.host(), &spec.sni) {
        (Some(h), _) => h.to_string(),
        (None, Some(sni)) => sni.to_string(),
        (None, None) => spec.addr.to_string(),
    };
    match timeout_at(deadline, http::exchange(tls, request, &host)).await {
        Err(_) => HttpExchange::Failed { error: "timed out waiting for the HTTP answer".into() },
        Ok(Ok(answer)) => HttpExchange::Answered(answer),
        Ok(Err(http::ExchangeError::Malformed(m))) => HttpExchange::Failed { error: m },
        Ok(Err(http::ExchangeError::Io(e))) => HttpExchange::Failed { error: classify_io(&e, Stage::Http).describe() },
    }
}

async fn connect(addr: SocketAddr, deadline: Instant) -> Result<TcpStream, Failure> {
    // Every probe connects here, so this is where an address off the machine is refused.
    reach::permit(addr).map_err(|e| Failure::Other { stage: Stage::Setup, error: e.to_string() })?;
    match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Err(e)) => Err(classify_io(&e, Stage::Connect)),
        Ok(Ok(tcp)) => {
            // Handshake messages are small and latency-bound; Nagle only delays them.
            let _ = tcp.set_nodelay(true);
            Ok(tcp)
        }
    }
}

fn client_config(verifier: Arc<RecordingVerifier>, send_sni: bool, alpn: &[Vec<u8>]) -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider().clone()))
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.enable_sni = send_sni;
    // Every probe is a full handshake: a resumed session would present no certificate.
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = alpn.to_vec();
    Ok(Arc::new(config))
}

/// The ring provider, built once. The crate is ring-only (`scripts/test.sh` fails if aws-lc-rs
/// enters the dependency tree).
fn provider() -> &'static CryptoProvider {
    static PROVIDER: OnceLock<CryptoProvider> = OnceLock::new();
    PROVIDER.get_or_init(rustls::crypto::ring::default_provider)
}

fn tls_failure(f: Failure) -> Outcome {
    match f {
        Failure::Alert(alert) => Outcome::Alert { alert },
        Failure::Reset => Outcome::Reset,
        Failure::Closed => Outcome::Closed,
        Failure::Timeout => Outcome::Timeout,
        Failure::Refused => Outcome::Refused,
        Failure::Other { stage, error } => Outcome::Failed { stage, error },
    }
}

fn plain_failure(f: Failure) -> PlainOutcome {
    match f {
        // No TLS on a plain connection, so no alert can be parsed; keep the words anyway.
        Failure::Alert(alert) => PlainOutcome::Failed { stage: Stage::Http, error: format!("TLS alert {alert}") },
        Failure::Reset => PlainOutcome::Reset,
        Failure::Closed => PlainOutcome::Closed,
        Failure::Timeout => PlainOutcome::Timeout,
        Failure::Refused => PlainOutcome::Refused,
        Failure::Other { stage, error } => PlainOutcome::Failed { stage, error },
    }
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| now.to_string())
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
