//! Benchmark for the config dump summarizer: time and peak memory on a Cilium-sized dump.
//!
//! `cargo bench --bench summarize` writes a ~20 MB `?resource=dynamic_listeners` dump with
//! thousands of Cilium-shaped chains to a temp file, times `summarize_path` on it (best and
//! median of several runs), then re-executes itself as a child that only reads and summarizes
//! the file and reports its own peak RSS (VmHWM), so the figure is not polluted by the
//! generator. Targets: < 0.5 s per summary, peak RSS < 5x the file size. Exits 1 if missed.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use layout_gate::observe::envoy_dump::summarize_path;

const CHILD_FLAG: &str = "--summarize-child";
const TARGET_BYTES: usize = 20 * 1024 * 1024;
const CHAINS_PER_LISTENER: usize = 200;
const RUNS: usize = 7;
const TIME_TARGET: Duration = Duration::from_millis(500);
const MEMORY_RATIO_TARGET: f64 = 5.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == CHILD_FLAG) {
        let Some(path) = args.get(pos + 1) else {
            eprintln!("{CHILD_FLAG} needs a path");
            std::process::exit(2);
        };
        child(Path::new(path));
        return;
    }
    // libtest-style filters and `--bench` are accepted and ignored: this is the only bench.
    if let Err(e) = parent() {
        eprintln!("summarize bench failed: {e}");
        std::process::exit(1);
    }
}

/// Child: read + summarize once, then print the peak RSS the kernel recorded for us.
fn child(path: &Path) {
    let summary = match summarize_path(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let chains: usize = summary.listeners.iter().map(|l| l.filter_chain_count()).sum();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("vmhwm_kb={hwm_kb} listeners={} chains={chains}", summary.listeners.len());
}

fn parent() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let path = dir.path().join("dynamic-listeners.json");
    let (listeners, chains) = write_dump(&path).map_err(|e| format!("writing dump: {e}"))?;
    let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();

    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let summary = summarize_path(&path).map_err(|e| e.to_string())?;
        times.push(start.elapsed());
        let got: usize = summary.listeners.iter().map(|l| l.filter_chain_count()).sum();
        if summary.listeners.len() != listeners || got != chains {
            return Err(format!("summary has {} listeners / {got} chains, generated {listeners} / {chains}", summary.listeners.len()));
        }
    }
    times.sort();
    let best = times[0];
    let median = times[times.len() / 2];

    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let out = Command::new(exe).arg(CHILD_FLAG).arg(&path).output().map_err(|e| format!("spawning child: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let hwm_kb: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("vmhwm_kb="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("child printed no VmHWM: {stdout}"))?;
    let rss = hwm_kb * 1024;
    let ratio = rss as f64 / size as f64;

    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let time_ok = median < TIME_TARGET;
    let mem_ok = ratio < MEMORY_RATIO_TARGET;
    println!("summarize: dynamic_listeners dump, {listeners} listeners, {chains} filter chains");
    println!("  file size      {:>8.1} MiB ({size} bytes)", mb(size));
    println!("  time best      {:>8.1} ms   median {:.1} ms over {RUNS} runs", ms(best), ms(median));
    println!("  peak RSS       {:>8.1} MiB (child VmHWM, read + summarize)", mb(rss));
    println!("  RSS / file     {ratio:>8.2}x");
    println!(
        "  targets        time < {} ms: {}; RSS < {MEMORY_RATIO_TARGET}x file: {}",
        TIME_TARGET.as_millis(),
        if time_ok { "met" } else { "NOT MET" },
        if mem_ok { "met" } else { "NOT MET" },
    );
    if time_ok && mem_ok { Ok(()) } else { Err("targets not met".to_string()) }
}

/// Writes listeners shaped like Cilium's Gateway listeners (cilium.network + HCM with RDS and
/// SDS certificates, or tcp_proxy passthrough, plus the raw_buffer chain) until the file
/// reaches the target size. Returns (listeners, chains).
fn write_dump(path: &Path) -> std::io::Result<(usize, usize)> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0usize;
    fn put(out: &mut impl std::io::Write, written: &mut usize, s: &str) -> std::io::Result<()> {
        *written += s.len();
        out.write_all(s.as_bytes())
    }
    put(&mut out, &mut written, "{\n \"configs\": [\n")?;
    let (mut listeners, mut chains) = (0usize, 0usize);
    while written < TARGET_BYTES {
        if listeners > 0 {
            put(&mut out, &mut written, ",\n")?;
        }
        let name = format!("ns-{listeners}/cilium-gateway-gw/listener");
        let mut body = String::with_capacity(CHAINS_PER_LISTENER * 2600);
        for c in 0..CHAINS_PER_LISTENER {
            if c > 0 {
                body.push_str(",\n");
            }
            body.push_str(&chain_json(listeners, c));
        }
        chains += CHAINS_PER_LISTENER;
        let entry = format!(
            r#"  {{
   "@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump.DynamicListener",
   "name": "{name}",
   "active_state": {{
    "version_info": "2026-11-30T11:00:00Z/{listeners}",
    "listener": {{
     "@type": "type.googleapis.com/envoy.config.listener.v3.Listener",
     "name": "{name}",
     "address": {{"socket_address": {{"address": "127.0.0.1", "port_value": {port}}}}},
     "filter_chains": [
{body}
     ],
     "listener_filters": [
      {{"name": "cilium.bpf_metadata", "typed_config": {{"@type": "type.googleapis.com/cilium.BpfMetadata", "bpf_root": "/sys/fs/bpf", "is_ingress": true}}}},
      {{"name": "envoy.filters.listener.tls_inspector", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"}}}}
     ],
     "socket_options": [{{"description": "Enable TCP keep-alive", "level": "1", "name": "9", "int_value": "1"}}]
    }},
    "last_updated": "2026-11-30T11:00:00.000Z"
   }}
  }}"#,
            port = 10000 + listeners
        );
        put(&mut out, &mut written, &entry)?;
        listeners += 1;
    }
    put(&mut out, &mut written, "\n ]\n}\n")?;
    out.flush()?;
    Ok((listeners, chains))
}

fn chain_json(listener: usize, c: usize) -> String {
    let cilium_network = r#"{"name": "cilium.network", "typed_config": {"@type": "type.googleapis.com/cilium.NetworkFilter"}}"#;
    if c == 0 {
        return format!(
            r#"      {{"filter_chain_match": {{"transport_protocol": "raw_buffer"}}, "filters": [{cilium_network}, {}]}}"#,
            hcm("listener-insecure")
        );
    }
    let host = format!("app-{c}.tenant-{listener}.example.com");
    if c.is_multiple_of(3) {
        return format!(
            r#"      {{"filter_chain_match": {{"server_names": ["{host}"], "transport_protocol": "tls"}}, "filters": [{cilium_network}, {{"name": "envoy.filters.network.tcp_proxy", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", "stat_prefix": "tls-passthrough:{host}", "cluster": "ns-{listener}:app-{c}:443"}}}}]}}"#
        );
    }
    format!(
        r#"      {{"filter_chain_match": {{"server_names": ["{host}", "*.{host}"], "transport_protocol": "tls"}}, "filters": [{cilium_network}, {}], "transport_socket": {{"name": "envoy.transport_sockets.tls", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext", "common_tls_context": {{"alpn_protocols": ["h2", "http/1.1"], "tls_certificate_sds_secret_configs": [{{"name": "cilium-secrets/ns-{listener}-cert-{c}", "sds_config": {{"ads": {{}}, "resource_api_version": "V3"}}}}]}}}}}}}}"#,
        hcm("listener-secure")
    )
}

fn hcm(route: &str) -> String {
    format!(
        r#"{{"name": "envoy.filters.network.http_connection_manager", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager", "stat_prefix": "{route}", "rds": {{"config_source": {{"ads": {{}}, "resource_api_version": "V3"}}, "route_config_name": "{route}"}}, "http_filters": [{{"name": "cilium.l7policy", "typed_config": {{"@type": "type.googleapis.com/cilium.L7Policy", "access_log_path": "/var/run/cilium/envoy/sockets/access_log.sock"}}}}, {{"name": "envoy.filters.http.grpc_web", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb"}}}}, {{"name": "envoy.filters.http.grpc_stats", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig", "emit_filter_state": true, "enable_upstream_stats": true}}}}, {{"name": "envoy.filters.http.router", "typed_config": {{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}}}], "upgrade_configs": [{{"upgrade_type": "websocket"}}], "use_remote_address": true, "internal_address_config": {{}}, "common_http_protocol_options": {{"max_stream_duration": "0s"}}, "stream_idle_timeout": "300s"}}}}"#
    )
}
