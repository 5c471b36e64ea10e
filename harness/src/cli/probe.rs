//! `layout-gate probe ADDRESS:PORT --sni NAME... [--no-sni] [--json]`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::observe::probe::{self, ProbeOptions, ProbeSpec};
use crate::types::Sni;

#[derive(Args)]
pub struct ProbeArgs {
    /// Where to connect: IP:PORT (172.18.255.200:443, [::1]:443) or HOST:PORT, resolved once
    /// (the first address wins; SNI is only what --sni says, never the host given here).
    address: String,
    /// SNI to send; repeat for several probes.
    #[arg(long = "sni", value_name = "NAME")]
    sni: Vec<String>,
    /// Also probe once without any SNI.
    #[arg(long)]
    no_sni: bool,
    /// One JSON object per probe (JSON Lines) instead of a table.
    #[arg(long)]
    json: bool,
    /// How long one probe may take, in seconds.
    #[arg(long, default_value_t = 3.0)]
    timeout: f64,
}

/// `IP:PORT` as given, or `HOST:PORT` resolved to its first address. Port 0 is refused (no
/// server answers there; a connection to it only fails). Errors echo the argument escaped.
fn resolve(address: &str) -> Result<SocketAddr, String> {
    let shown = crate::term::quoted(address);
    let zero = || format!("{shown}: port 0 is not a port to probe (give 1-65535)");
    if let Ok(a) = address.parse::<SocketAddr>() {
        return if a.port() == 0 { Err(zero()) } else { Ok(a) };
    }
    match address.rsplit_once(':').filter(|(h, _)| !h.is_empty()).map(|(_, p)| p.parse::<u16>()) {
        Some(Ok(0)) => return Err(zero()),
        Some(Ok(_)) => {}
        _ => return Err(format!("{shown} is not ADDRESS:PORT (e.g. 172.18.255.200:443 or gateway.example.test:443)")),
    }
    std::net::ToSocketAddrs::to_socket_addrs(address)
        .map_err(|e| format!("{shown}: cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("{shown}: resolves to no address"))
}

/// One `--sni` value; the error echoes it escaped.
fn sni_arg(s: &str) -> Result<Sni, String> {
    Sni::new(s.to_ascii_lowercase()).map_err(|e| format!("--sni {}: {e}", crate::term::quoted(s)))
}

pub fn run(args: ProbeArgs) -> ExitCode {
    let addr = match resolve(&args.address) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("layout-gate probe: {e}");
            return ExitCode::from(2);
        }
    };
    let mut snis = Vec::new();
    for s in &args.sni {
        match sni_arg(s) {
            Ok(sni) => snis.push(Some(sni)),
            Err(e) => {
                eprintln!("layout-gate probe: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if args.no_sni {
        snis.push(None);
    }
    if snis.is_empty() {
        eprintln!("layout-gate probe: give at least one --sni NAME, or --no-sni");
        return ExitCode::from(2);
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 600.0) {
        eprintln!("layout-gate probe: --timeout must be between 0 and 600 seconds");
        return ExitCode::from(2);
    }
    let options = ProbeOptions { timeout: Duration::from_secs_f64(args.timeout), ..ProbeOptions::default() };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("layout-gate probe: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Probes run concurrently; output keeps the order they were asked for.
    let observations = runtime.block_on(async {
        let tasks: Vec<_> = snis
            .into_iter()
            .map(|sni| {
                let spec = ProbeSpec { addr, sni, http: None };
                let options = options.clone();
                tokio::spawn(async move { probe::probe_tls(&spec, &options).await })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await);
        }
        out
    });
    let label = args.address.clone();
    let mut stdout = std::io::stdout().lock();
    for o in observations {
        let o = match o {
            Ok(o) => o,
            Err(e) => {
                eprintln!("layout-gate probe: a probe task failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let line = if args.json { probe::contract_json(&o, &label).to_string() } else { probe::render_human(&o, &label) };
        match writeln!(stdout, "{line}") {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
            Err(_) => return ExitCode::FAILURE,
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn addresses_and_host_names() {
        assert_eq!(resolve("127.0.0.1:443").unwrap().port(), 443);
        assert_eq!(resolve("[::1]:8443").unwrap().port(), 8443);
        assert_eq!(resolve("localhost:443").unwrap().port(), 443);
        assert!(resolve("localhost").unwrap_err().contains("not ADDRESS:PORT"));
        assert!(resolve("localhost:0").is_err());
        assert!(resolve(":443").is_err());
    }

    /// Port 0 is no port a server answers on: refused, not probed.
    #[test]
    fn port_zero_is_refused() {
        for a in ["127.0.0.1:0", "[::1]:0", "localhost:0"] {
            let e = resolve(a).unwrap_err();
            assert!(e.contains("port 0"), "{a}: {e}");
        }
    }

    /// A bad argument is echoed escaped, and once: an escape sequence or a bidi override in
    /// it never reaches the terminal.
    #[test]
    fn bad_arguments_are_echoed_escaped() {
        let bad = "a\u{1b}[2Jb\u{202e}c";
        for e in [super::sni_arg(bad).unwrap_err(), resolve(&format!("{bad}:443")).unwrap_err(), resolve(bad).unwrap_err()] {
            assert!(!e.chars().any(|c| c.is_control() || c == '\u{202e}'), "{e:?}");
            assert_eq!(e.matches("\\u{1b}[2Jb\\u{202e}c").count(), 1, "{e}");
        }
    }
}
