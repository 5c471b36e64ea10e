//! Probe throughput against a real local Envoy: full TLS handshakes per second through the
//! probe's own code path (its connector and recording verifier, resumption off), with 4
//! concurrent connections, compared in the same run with a loop of `openssl s_client`.
//!
//! The target is >= 1,500 handshakes/s at 4 connections on the 2-core reference machine.
//! Envoy is started here from a minimal static bootstrap (one listener, tls_inspector, one
//! chain for `*.example.test` terminating with a run certificate, HCM direct_response 200), so
//! the bench depends only on the probe, the certificates and an Envoy binary.
//!
//! Run: `cargo bench --bench handshake`. Knobs: `ENVOY_BIN`, `LAYOUT_GATE_BENCH_SECS` (3),
//! `LAYOUT_GATE_BENCH_CONNS` (4).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use layout_gate::observe::probe::{HttpRequestSpec, Outcome, ProbeOptions, ProbeSpec, probe_tls};
use layout_gate::render::certs::{CertSet, CertSpec};
use layout_gate::types::{CertName, DnsName, Fingerprint, Sni};
use serde_json::json;

const TARGET_RATE: f64 = 1500.0;
const SNI: &str = "www.example.test";
const WARM_UP: Duration = Duration::from_secs(1);
const OPENSSL_MAX_RUNS: u32 = 400;
const ENVOY_READY_TIMEOUT: Duration = Duration::from_secs(15);
const ENVOY_INSTALL: &str = "scripts/install-envoy.sh (or set ENVOY_BIN)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("handshake bench failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let secs: u64 = env_number("LAYOUT_GATE_BENCH_SECS", 3)?;
    let conns: usize = env_number("LAYOUT_GATE_BENCH_CONNS", 4)?;
    let measure = Duration::from_secs(secs.max(1));
    let envoy_bin = find_envoy()?;
    check_openssl()?;

    let wildcard = CertName::new("gateway-wildcard")?;
    let certs = CertSet::generate(
        "bench",
        &[CertSpec { name: wildcard.clone(), dns_names: vec![DnsName::new("*.example.test")?] }],
    )
    .context("generating certificates")?;
    let cert = certs.get(&wildcard)?;
    let expected = cert.fingerprint();

    let work = tempfile::Builder::new().prefix("layout-gate-bench-").tempdir().context("creating a work directory")?;
    let envoy = Envoy::start(&envoy_bin, work.path(), &cert.chain_path, &cert.key_path)?;
    let listener = envoy.listener_addr()?;
    println!("envoy {} listening on {listener} (admin {})", envoy_bin.display(), envoy.admin);

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("tokio runtime")?;

    // One probe with HTTP first: the bench only means something if Envoy really terminates
    // with our certificate and answers.
    let sanity = runtime.block_on(probe_tls(
        &ProbeSpec { addr: listener, sni: Some(Sni::new(SNI)?), http: Some(HttpRequestSpec::get("/")?) },
        &ProbeOptions::default(),
    ));
    let answer_ok = sanity.http_answer().is_some_and(|a| a.status == 200 && a.body.contains("terminated-by-envoy"));
    match &sanity.outcome {
        Outcome::Certificate(h) if h.leaf.sha256 == expected && answer_ok => {}
        other => bail!("sanity probe against Envoy did not get the wildcard certificate and a 200: {other:?}"),
    }

    runtime.block_on(hammer(listener, conns, WARM_UP, expected));
    let probe = runtime.block_on(hammer(listener, conns, measure, expected));
    drop(runtime);

    let openssl = openssl_loop(listener.port(), measure)?;
    let stopped = envoy.stop();

    let probe_rate = probe.ok as f64 / probe.elapsed.as_secs_f64();
    let openssl_rate = openssl.ok as f64 / openssl.elapsed.as_secs_f64();
    println!();
    println!("probe:   {} full handshakes in {:.2} s at {conns} connections = {probe_rate:.0}/s", probe.ok, probe.elapsed.as_secs_f64());
    if !probe.failures.is_empty() {
        println!("         failures: {:?}", probe.failures);
    }
    println!(
        "openssl: {} s_client runs in {:.2} s (sequential, one process each) = {openssl_rate:.1}/s",
        openssl.ok,
        openssl.elapsed.as_secs_f64()
    );
    if openssl.failed > 0 {
        println!("         {} runs failed", openssl.failed);
    }
    println!("ratio:   probe / openssl = {:.1}x", probe_rate / openssl_rate.max(f64::MIN_POSITIVE));
    println!(
        "target:  >= {TARGET_RATE:.0}/s at 4 connections: {}",
        if conns == 4 && probe_rate >= TARGET_RATE { "met" } else if conns != 4 { "n/a (not 4 connections)" } else { "NOT MET" }
    );
    stopped?;
    if !probe.failures.is_empty() || openssl.failed > 0 {
        bail!("some handshakes failed (see above)");
    }
    Ok(())
}

struct Tally {
    ok: u64,
    failures: BTreeMap<String, u64>,
    elapsed: Duration,
}

/// `conns` tasks probing back to back until `duration` has passed.
async fn hammer(addr: SocketAddr, conns: usize, duration: Duration, expected: Fingerprint) -> Tally {
    let spec = Arc::new(ProbeSpec { addr, sni: Sni::new(SNI).ok(), http: None });
    let options = Arc::new(ProbeOptions::default());
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..conns {
        let (spec, options) = (spec.clone(), options.clone());
        tasks.spawn(async move {
            let mut ok = 0u64;
            let mut failures = BTreeMap::<String, u64>::new();
            while Instant::now() < deadline {
                let obs = probe_tls(&spec, &options).await;
                match &obs.outcome {
                    Outcome::Certificate(h) if h.leaf.sha256 == expected => ok += 1,
                    Outcome::Certificate(h) => *failures.entry(format!("wrong certificate {}", h.leaf.subject)).or_default() += 1,
                    other => *failures.entry(format!("{other:?}")).or_default() += 1,
                }
            }
            (ok, failures)
        });
    }
    let mut tally = Tally { ok: 0, failures: BTreeMap::new(), elapsed: Duration::ZERO };
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((ok, failures)) => {
                tally.ok += ok;
                for (k, v) in failures {
                    *tally.failures.entry(k).or_default() += v;
                }
            }
            Err(e) => *tally.failures.entry(format!("task failed: {e}")).or_default() += 1,
        }
    }
    tally.elapsed = started.elapsed();
    tally
}

struct OpensslTally {
    ok: u32,
    failed: u32,
    elapsed: Duration,
}

/// `openssl s_client ... </dev/null`, one process at a time, for `duration` or
/// [`OPENSSL_MAX_RUNS`] runs. The first run's output must show our certificate.
fn openssl_loop(port: u16, duration: Duration) -> anyhow::Result<OpensslTally> {
    let connect = format!("127.0.0.1:{port}");
    let args = ["s_client", "-connect", connect.as_str(), "-servername", SNI];
    let first = Command::new("openssl").args(args).stdin(Stdio::null()).output().context("running openssl s_client")?;
    let text = String::from_utf8_lossy(&first.stdout);
    if !first.status.success() || !text.lines().any(|l| l.starts_with("subject=") && l.contains("*.example.test")) {
        bail!("openssl s_client did not get the wildcard certificate ({}):\n{text}", first.status);
    }
    let started = Instant::now();
    let (mut ok, mut failed) = (0u32, 0u32);
    while started.elapsed() < duration && ok + failed < OPENSSL_MAX_RUNS {
        let status = Command::new("openssl")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("running openssl s_client")?;
        if status.success() { ok += 1 } else { failed += 1 }
    }
    Ok(OpensslTally { ok, failed, elapsed: started.elapsed() })
}

/// A running Envoy; killed and reaped on drop so no error path leaves it behind.
struct Envoy {
    child: Child,
    admin: SocketAddr,
    log: PathBuf,
}

impl Envoy {
    fn start(bin: &Path, dir: &Path, chain: &Path, key: &Path) -> anyhow::Result<Envoy> {
        let config = dir.join("envoy.json");
        let admin_path = dir.join("admin-address");
        let log = dir.join("envoy.log");
        std::fs::write(&config, serde_json::to_vec_pretty(&bootstrap(chain, key))?).context("writing the bootstrap")?;
        let log_file = std::fs::File::create(&log).context("creating envoy.log")?;
        let child = Command::new(bin)
            .arg("-c")
            .arg(&config)
            .arg("--disable-hot-restart")
            .arg("--concurrency")
            .arg("2")
            .arg("--log-level")
            .arg("warn")
            .arg("--admin-address-path")
            .arg(&admin_path)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut envoy = Envoy { child, admin: SocketAddr::from(([127, 0, 0, 1], 0)), log };
        envoy.wait_ready(&admin_path)?;
        Ok(envoy)
    }

    fn wait_ready(&mut self, admin_path: &Path) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut last = String::from("no admin address yet");
        while started.elapsed() < ENVOY_READY_TIMEOUT {
            if let Some(status) = self.child.try_wait()? {
                bail!("envoy exited during start-up ({status}); log:\n{}", self.log_tail());
            }
            if self.admin.port() == 0
                && let Some(addr) = std::fs::read_to_string(admin_path).ok().and_then(|s| s.trim().parse().ok())
            {
                self.admin = addr;
            }
            if self.admin.port() != 0 {
                match admin_get(self.admin, "/ready") {
                    Ok((200, _)) => return Ok(()),
                    Ok((code, body)) => last = format!("/ready answered {code} {}", body.trim()),
                    Err(e) => last = format!("/ready: {e:#}"),
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        bail!("envoy not ready after {ENVOY_READY_TIMEOUT:?} (last: {last}); log:\n{}", self.log_tail())
    }

    /// The listener's real address (it was bound on port 0), from the admin `/listeners`.
    fn listener_addr(&self) -> anyhow::Result<SocketAddr> {
        let (code, body) = admin_get(self.admin, "/listeners?format=json")?;
        if code != 200 {
            bail!("/listeners answered {code}: {body}");
        }
        let v: serde_json::Value = serde_json::from_str(&body).context("parsing /listeners")?;
        let sa = &v["listener_statuses"][0]["local_address"]["socket_address"];
        let (Some(ip), Some(port)) = (sa["address"].as_str(), sa["port_value"].as_u64()) else {
            bail!("no listener address in /listeners: {body}");
        };
        Ok(SocketAddr::new(ip.parse()?, u16::try_from(port)?))
    }

    fn stop(mut self) -> anyhow::Result<()> {
        self.child.kill().context("stopping envoy")?;
        self.child.wait().context("reaping envoy")?;
        Ok(())
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        // After stop() these fail harmlessly (already reaped).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bootstrap(chain: &Path, key: &Path) -> serde_json::Value {
    let local0 = json!({"socket_address": {"address": "127.0.0.1", "port_value": 0}});
    json!({
        "admin": {"address": local0},
        "static_resources": {"listeners": [{
            "name": "listener-secure",
            "address": local0,
            "listener_filters": [{
                "name": "envoy.filters.listener.tls_inspector",
                "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}
            }],
            "filter_chains": [{
                "name": "terminate-wildcard.example.test",
                "filter_chain_match": {"server_names": ["*.example.test"]},
                "transport_socket": {
                    "name": "envoy.transport_sockets.tls",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                        "common_tls_context": {
                            "tls_certificates": [{
                                "certificate_chain": {"filename": chain},
                                "private_key": {"filename": key}
                            }],
                            "alpn_protocols": ["h2", "http/1.1"]
                        }
                    }
                },
                "filters": [{
                    "name": "envoy.filters.network.http_connection_manager",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                        "stat_prefix": "bench",
                        "route_config": {"name": "bench", "virtual_hosts": [{
                            "name": "all",
                            "domains": ["*"],
                            "routes": [{"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "terminated-by-envoy wildcard\n"}}}]
                        }]},
                        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]
                    }
                }]
            }]
        }]}
    })
}

/// A one-shot GET to the admin interface (Envoy answers HTTP/1.0 with 426).
fn admin_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    tcp.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(tcp, "GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let code = text.split(' ').nth(1).and_then(|c| c.parse().ok()).with_context(|| format!("no status in {text:?}"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Ok((code, if chunked { dechunk(body) } else { body.to_string() }))
}

/// Joins the chunks of a chunked body (the admin answers JSON that way).
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

fn find_envoy() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("ENVOY_BIN") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { bail!("ENVOY_BIN={} does not exist; install Envoy with {ENVOY_INSTALL}", p.display()) };
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/envoy-venv/bin/envoy");
    if local.is_file() {
        return Ok(local);
    }
    if let Some(found) = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("envoy")).find(|p| p.is_file())) {
        return Ok(found);
    }
    bail!("no Envoy binary (looked at ENVOY_BIN, {}, PATH); install it with {ENVOY_INSTALL}", local.display())
}

fn check_openssl() -> anyhow::Result<()> {
    match Command::new("openssl").arg("version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!("openssl not found or not working; install it with `apt-get install openssl`"),
    }
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| anyhow::anyhow!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}
