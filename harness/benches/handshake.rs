//! Probe throughput against a real local Envoy: full TLS handshakes per second through the
//! probe's own code path (its connector and recording verifier, resumption off), with 4
//! concurrent connections, compared in the same run with a loop of `openssl s_client`.
//!
//! The target is >= 1,500 handshakes/s at 4 connections on the 2-core reference machine.
//! Envoy is started through the harness's own `envoy` module from a minimal static bootstrap
//! (one listener, tls_inspector, one chain for `*.example.test` terminating with a run
//! certificate, HCM direct_response 200).
//!
//! Run: `cargo bench --bench handshake`. Knobs: `ENVOY_BIN`, `LAYOUT_GATE_BENCH_SECS` (3),
//! `LAYOUT_GATE_BENCH_CONNS` (4).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use layout_gate::envoy::{
    AdminSpec, Bootstrap, ChainAction, ChainSpec, EnvoyBinary, EnvoyProcess, HeldAddrs, ListenerSpec, RouteAction, StartOptions,
    TlsTermination, VirtualHostSpec,
};
use layout_gate::observe::probe::{HttpRequestSpec, Outcome, ProbeOptions, ProbeSpec, probe_tls};
use layout_gate::render::certs::{CertSet, CertSpec};
use layout_gate::types::{CertName, DnsName, Fingerprint, Sni};

const TARGET_RATE: f64 = 1500.0;
const SNI: &str = "www.example.test";
const WARM_UP: Duration = Duration::from_secs(1);
const OPENSSL_MAX_RUNS: u32 = 400;
const ENVOY_READY_TIMEOUT: Duration = Duration::from_secs(15);

fn main() -> ExitCode {
    // Nothing a benchmark sends leaves the machine: its probes, and those of every layout-gate it
    // starts, go only to loopback (layout_gate::observe::probe::reach).
    // SAFETY: the first statement of main, before any thread starts.
    unsafe { std::env::set_var(layout_gate::observe::probe::reach::LOCAL_ONLY_ENV, "1") };
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
    let envoy_bin = EnvoyBinary::find()?;
    check_openssl()?;

    let wildcard = CertName::new("gateway-wildcard")?;
    let certs = CertSet::generate("bench", &[CertSpec { name: wildcard.clone(), dns_names: vec![DnsName::new("*.example.test")?] }])
        .context("generating certificates")?;
    let cert = certs.get(&wildcard)?;
    let expected = cert.fingerprint();

    let work = tempfile::Builder::new().prefix("layout-gate-bench-").tempdir().context("creating a work directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("tokio runtime")?;
    let (envoy, listener, _port) = runtime.block_on(start_envoy(work.path(), &cert.chain_path, &cert.key_path))?;
    println!("envoy {} listening on {listener} (admin {})", envoy_bin.path().display(), envoy.admin_addr());

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
    drop(envoy);

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
        if conns == 4 && probe_rate >= TARGET_RATE {
            "met"
        } else if conns != 4 {
            "n/a (not 4 connections)"
        } else {
            "NOT MET"
        }
    );
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
/// A real Envoy with one Cilium-shaped listener: `*.example.test` terminated with the run's
/// certificate, HCM answering 200 itself, on a port held until the returned hold drops.
/// Dropping it kills and reaps Envoy.
async fn start_envoy(work: &Path, chain: &Path, key: &Path) -> anyhow::Result<(EnvoyProcess, SocketAddr, HeldAddrs<()>)> {
    let port = HeldAddrs::reserve([()]).context("choosing a local port")?;
    let addr = port[&()];
    let tls = TlsTermination { cert_chain: chain.to_path_buf(), private_key: key.to_path_buf(), alpn: vec!["http/1.1".into()] };
    let action = ChainAction::Http {
        route_name: "listener-secure".into(),
        virtual_hosts: vec![VirtualHostSpec::new(
            "all",
            &["*"],
            RouteAction::DirectResponse { status: 200, body: "terminated-by-envoy\n".into() },
        )],
    };
    let listener = ListenerSpec::new("listener", addr).chain(ChainSpec::terminate(&["*.example.test"], tls, action));
    let cfg = work.join("bootstrap.json");
    Bootstrap::static_listeners(AdminSpec::default(), vec![listener], Vec::new()).write(&cfg).context("writing the bootstrap")?;
    let opts = StartOptions { ready_timeout: ENVOY_READY_TIMEOUT, ..StartOptions::default() };
    let envoy = EnvoyProcess::start_async(&cfg, &work.join("envoy"), opts).await?;
    Ok((envoy, addr, port))
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
