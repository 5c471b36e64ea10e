//! Probes against real sockets: the in-process backends and small misbehaving servers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::backends::{HttpBackend, TlsBackend};
use crate::render::certs::{CertSet, CertSpec};
use crate::types::{BackendName, CertName, DnsName};

fn certs() -> CertSet {
    let spec = |name: &str, dns: &[&str]| CertSpec {
        name: CertName::new(name).unwrap(),
        dns_names: dns.iter().map(|d| DnsName::new(*d).unwrap()).collect(),
    };
    CertSet::generate("probe-test", &[spec("gateway-wildcard", &["*.example.test"]), spec("api-backend", &["api.example.test"])]).unwrap()
}

fn cert(name: &str) -> CertName {
    CertName::new(name).unwrap()
}

fn sni(s: &str) -> Option<Sni> {
    Some(Sni::new(s).unwrap())
}

fn quick() -> ProbeOptions {
    ProbeOptions { timeout: Duration::from_secs(2), ..ProbeOptions::default() }
}

/// A listener whose every connection is handed to `handle`.
async fn raw_server<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(handle(tcp));
        }
    });
    addr
}

/// Reads one TLS record (the ClientHello) from the client.
async fn read_client_hello(tcp: &mut TcpStream) -> Vec<u8> {
    let mut header = [0u8; 5];
    tcp.read_exact(&mut header).await.unwrap();
    let len = u16::from_be_bytes([header[3], header[4]]) as usize;
    let mut body = vec![0u8; len];
    tcp.read_exact(&mut body).await.unwrap();
    [header.to_vec(), body].concat()
}

/// The server_name extension's host name in a ClientHello record, `Err` when malformed.
fn sni_in_client_hello(record: &[u8]) -> Result<Option<String>, String> {
    let at = |i: usize| record.get(i).copied().ok_or(format!("short record at {i}"));
    let u16_at = |i: usize| -> Result<usize, String> { Ok(((at(i)? as usize) << 8) | at(i + 1)? as usize) };
    if at(0)? != 0x16 || at(5)? != 0x01 {
        return Err("not a ClientHello".into());
    }
    let mut i = 5 + 4 + 2 + 32; // record header, handshake header, version, random
    i += 1 + at(i)? as usize; // session id
    i += 2 + u16_at(i)?; // cipher suites
    i += 1 + at(i)? as usize; // compression methods
    let end = i + 2 + u16_at(i)?;
    i += 2;
    while i + 4 <= end {
        let (kind, len) = (u16_at(i)?, u16_at(i + 2)?);
        if kind == 0 {
            // server_name_list: list length (2), type (1), name length (2), name
            let name_len = u16_at(i + 4 + 3)?;
            let start = i + 4 + 5;
            let name = record.get(start..start + name_len).ok_or("short server name")?;
            return Ok(Some(String::from_utf8_lossy(name).into_owned()));
        }
        i += 4 + len;
    }
    Ok(None)
}

#[tokio::test]
async fn named_certificate_answers_and_maps_back_to_its_name() {
    let set = certs();
    let backend =
        TlsBackend::start(BackendName::new("api").unwrap(), set.server_config(&cert("api-backend"), &[b"http/1.1"]).unwrap()).unwrap();
    let spec = ProbeSpec { addr: backend.addr(), sni: sni("api.example.test"), http: Some(HttpRequestSpec::get("/").unwrap()) };
    let obs = probe_tls(&spec, &quick()).await;

    let h = obs.handshake().unwrap_or_else(|| panic!("expected a certificate, got {:?}", obs.outcome));
    assert_eq!(set.name_of(&h.leaf.sha256), Some(&cert("api-backend")));
    assert_eq!(h.leaf.sans, vec!["api.example.test"]);
    assert_eq!(h.chain_len, 2, "leaf and CA");
    assert_eq!(h.tls_version, "TLSv1.3");
    assert_eq!(h.alpn.as_deref(), Some("http/1.1"));
    assert!(h.cipher.starts_with("TLS13_"), "{}", h.cipher);

    let answer = obs.http_answer().unwrap_or_else(|| panic!("expected an HTTP answer, got {:?}", h.http));
    assert_eq!(answer.status, 200);
    assert_eq!(answer.served_by.as_deref(), Some("api"));
    assert_eq!(answer.body, "backend=api sni=api.example.test\n");
    assert_eq!(backend.snis_seen(), vec![Some("api.example.test".to_string())]);
    assert_eq!((backend.connections(), backend.handshakes(), backend.requests()), (1, 1, 1));
    assert!(obs.at.ends_with('Z') && obs.at.contains('T'), "{}", obs.at);
}

#[tokio::test]
async fn no_sni_probe_sends_no_server_name() {
    let set = certs();
    let backend = TlsBackend::start(BackendName::new("web").unwrap(), set.server_config(&cert("gateway-wildcard"), &[]).unwrap()).unwrap();
    let spec = ProbeSpec { addr: backend.addr(), sni: None, http: Some(HttpRequestSpec::get("/").unwrap()) };
    let obs = probe_tls(&spec, &quick()).await;
    assert_eq!(set.name_of(&obs.handshake().expect("certificate").leaf.sha256), Some(&cert("gateway-wildcard")));
    assert_eq!(obs.handshake().unwrap().alpn, None, "the server offers no ALPN");
    let answer = obs.http_answer().expect("answer");
    assert_eq!(answer.body, "backend=web sni=none\n");
    assert_eq!(answer.served_by.as_deref(), Some("web"));
    assert_eq!(backend.snis_seen(), vec![None]);
    assert_eq!(contract_json(&obs, "x")["sni"], serde_json::Value::Null);
}

#[tokio::test]
async fn client_hello_carries_sni_only_when_asked() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let addr = raw_server(move |mut tcp| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(read_client_hello(&mut tcp).await);
        }
    })
    .await;
    let opts = ProbeOptions { timeout: Duration::from_millis(500), ..ProbeOptions::default() };
    probe_tls(&ProbeSpec { addr, sni: None, http: None }, &opts).await;
    assert_eq!(sni_in_client_hello(&rx.recv().await.unwrap()), Ok(None));
    probe_tls(&ProbeSpec { addr, sni: sni("www.example.test"), http: None }, &opts).await;
    assert_eq!(sni_in_client_hello(&rx.recv().await.unwrap()), Ok(Some("www.example.test".into())));
}

#[tokio::test]
async fn closed_port_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("a.example.test"), http: None }, &quick()).await;
    assert_eq!(obs.outcome, Outcome::Refused);
    assert_eq!(contract_json(&obs, "x")["outcome"], "refused");
    let plain = probe_plain_http(addr, &HttpRequestSpec::get("/").unwrap(), &quick()).await;
    assert_eq!(plain.outcome, PlainOutcome::Refused);
}

#[tokio::test]
async fn reset_on_accept_is_reset() {
    let addr = raw_server(|tcp| async move {
        // SO_LINGER 0: close sends RST instead of FIN.
        let _ = tcp.set_zero_linger();
        drop(tcp);
    })
    .await;
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("a.example.test"), http: None }, &quick()).await;
    assert_eq!(obs.outcome, Outcome::Reset);
    assert_eq!(contract_json(&obs, "x")["outcome"], "reset");
}

#[tokio::test]
async fn close_after_client_hello_is_closed() {
    // Read the ClientHello first: closing with unread data would send RST, not FIN.
    let addr = raw_server(|mut tcp| async move {
        read_client_hello(&mut tcp).await;
        drop(tcp);
    })
    .await;
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("a.example.test"), http: None }, &quick()).await;
    assert_eq!(obs.outcome, Outcome::Closed);
    assert_eq!(contract_json(&obs, "x")["outcome"], "closed");
}

#[tokio::test]
async fn silent_server_times_out_on_time() {
    let addr = raw_server(|tcp| async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(tcp);
    })
    .await;
    let opts = ProbeOptions { timeout: Duration::from_millis(300), ..ProbeOptions::default() };
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("a.example.test"), http: None }, &opts).await;
    assert_eq!(obs.outcome, Outcome::Timeout);
    assert!((300..1500).contains(&obs.elapsed_ms), "elapsed {} ms", obs.elapsed_ms);
}

#[derive(Debug)]
struct NoCertificate;

impl rustls::server::ResolvesServerCert for NoCertificate {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }
}

#[tokio::test]
async fn rustls_server_without_certificate_sends_an_alert() {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(NoCertificate));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let addr = raw_server(move |tcp| {
        let acceptor = acceptor.clone();
        async move {
            let _ = acceptor.accept(tcp).await;
        }
    })
    .await;
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("nobody.example.test"), http: None }, &quick()).await;
    // rustls answers a failed certificate lookup with access_denied.
    assert_eq!(obs.outcome, Outcome::Alert { alert: "access_denied".into() });
    let json = contract_json(&obs, "x");
    assert_eq!((json["outcome"].as_str(), json["alert"].as_str()), (Some("alert"), Some("access_denied")));
}

#[tokio::test]
async fn unrecognized_name_alert_is_named() {
    let addr = raw_server(|mut tcp| async move {
        read_client_hello(&mut tcp).await;
        // A fatal (2) unrecognized_name (112) alert record, as some SNI routers send.
        let _ = tcp.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112]).await;
        let _ = tcp.shutdown().await;
    })
    .await;
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("other.invalid"), http: None }, &quick()).await;
    assert_eq!(obs.outcome, Outcome::Alert { alert: "unrecognized_name".into() });
    assert!(render_human(&obs, "lb:443").contains("alert unrecognized_name"), "{}", render_human(&obs, "lb:443"));
}

#[tokio::test]
async fn plain_http_server_on_a_tls_port_is_a_failed_handshake() {
    let addr = raw_server(|mut tcp| async move {
        read_client_hello(&mut tcp).await;
        let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
    })
    .await;
    let obs = probe_tls(&ProbeSpec { addr, sni: sni("a.example.test"), http: None }, &quick()).await;
    assert!(matches!(obs.outcome, Outcome::Failed { stage: Stage::Handshake, .. }), "{:?}", obs.outcome);
    assert_eq!(contract_json(&obs, "x")["outcome"], "closed");
}

#[tokio::test]
async fn plain_http_backend_names_itself() {
    let backend = HttpBackend::start(BackendName::new("web").unwrap()).unwrap();
    let request = HttpRequestSpec::get("/hello").unwrap().with_host("www.example.test").unwrap();
    let obs = probe_plain_http(backend.addr(), &request, &quick()).await;
    match &obs.outcome {
        PlainOutcome::Answered(a) => {
            assert_eq!(a.status, 200);
            assert_eq!(a.served_by.as_deref(), Some("web"));
            assert_eq!(a.body, "backend=web sni=none\n");
        }
        other => panic!("expected an answer, got {other:?}"),
    }
    assert_eq!(obs.host, "www.example.test");
    assert_eq!((backend.connections(), backend.requests()), (1, 1));
    assert!(render_human_plain(&obs, "a").contains("served_by=web"));
}

#[tokio::test]
async fn backend_survives_garbage_and_stops_on_drop() {
    let set = certs();
    let backend = TlsBackend::start(BackendName::new("api").unwrap(), set.server_config(&cert("api-backend"), &[]).unwrap()).unwrap();
    let addr = backend.addr();
    let mut junk = TcpStream::connect(addr).await.unwrap();
    junk.write_all(b"GET / HTTP/1.1\r\n\r\n\x00\xff garbage").await.unwrap();
    let mut rest = Vec::new();
    // The backend drops the connection (its TLS alert, if any, is all we get).
    let _ = tokio::time::timeout(Duration::from_secs(2), junk.read_to_end(&mut rest)).await.expect("backend closes garbage");

    let obs = probe_tls(&ProbeSpec { addr, sni: sni("api.example.test"), http: None }, &quick()).await;
    assert!(obs.handshake().is_some(), "{:?}", obs.outcome);
    assert_eq!(backend.connections(), 2);

    drop(backend);
    let mut refused = false;
    for _ in 0..50 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "backend still accepting after drop");
}

#[tokio::test]
async fn contract_json_has_exactly_the_contract_fields() {
    let set = certs();
    let backend =
        TlsBackend::start(BackendName::new("api").unwrap(), set.server_config(&cert("gateway-wildcard"), &[b"http/1.1"]).unwrap()).unwrap();
    let obs = probe_tls(&ProbeSpec { addr: backend.addr(), sni: sni("www.example.test"), http: None }, &quick()).await;
    let json = contract_json(&obs, "gw:443");
    let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["address", "alert", "alpn", "leaf", "outcome", "sni", "tls_version"]);
    let mut leaf_keys: Vec<_> = json["leaf"].as_object().unwrap().keys().cloned().collect();
    leaf_keys.sort();
    assert_eq!(leaf_keys, ["issuer", "not_after", "sans", "serial", "sha256", "subject"]);
    let fp = set.get(&cert("gateway-wildcard")).unwrap().fingerprint().hex();
    assert_eq!(json["sha256"], serde_json::Value::Null);
    assert_eq!(json["leaf"]["sha256"], fp.as_str());
    assert_eq!(json["leaf"]["sans"], serde_json::json!(["*.example.test"]));
    assert_eq!((json["address"].as_str(), json["sni"].as_str()), (Some("gw:443"), Some("www.example.test")));
    assert_eq!((json["outcome"].as_str(), json["alert"].as_str()), (Some("certificate"), None));
    assert_eq!((json["tls_version"].as_str(), json["alpn"].as_str()), (Some("TLSv1.3"), Some("http/1.1")));
    let human = render_human(&obs, "gw:443");
    assert!(human.contains(&fp[..12]) && human.contains("TLSv1.3") && human.contains("sni=www.example.test"), "{human}");
    // The observation itself round-trips through serde for evidence.
    let back: Observation = serde_json::from_value(serde_json::to_value(&obs).unwrap()).unwrap();
    assert_eq!(back, obs);
}

/// A server that accepts and never answers: however many probes are started, at most
/// MAX_CONCURRENT_PROBES connect before any of them can finish. The probes' timeout is long, so
/// no connection closes while the server counts; it counts until no new connection has come
/// for a while (the rest are waiting for a slot), then hangs up on all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_in_flight_are_bounded() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(async move {
        let mut live: Vec<TcpStream> = Vec::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((s, _)) => live.push(s),
                    Err(_) => break,
                },
                // Quiet for a while with connections open: the others wait for a slot.
                _ = tokio::time::sleep(Duration::from_millis(400)), if !live.is_empty() => break,
            }
        }
        let _ = tx.send(live.len());
        // Dropping `live` and the listener ends every probe (closed, or refused).
    });
    let options = ProbeOptions { timeout: Duration::from_secs(20), ..ProbeOptions::default() };
    let request = HttpRequestSpec::get("/").expect("request");
    let n = MAX_CONCURRENT_PROBES + 40;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (options, request) = (options.clone(), request.clone());
            tokio::spawn(async move { probe_plain_http(addr, &request, &options).await })
        })
        .collect();
    let open = rx.await.expect("the server counted");
    for t in tasks {
        t.await.expect("probe task");
    }
    server.abort();
    // Unbounded, all MAX_CONCURRENT_PROBES + 40 would be connected at once.
    assert!(open <= MAX_CONCURRENT_PROBES, "{open} connections were open at once");
    assert!(open > 0);
}
