//! The `layout-gate` command line.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use layout_gate::observe::envoy_dump;
use layout_gate::observe::probe::{self, ProbeOptions, ProbeSpec};
use layout_gate::types::Sni;

#[derive(Parser)]
#[command(name = "layout-gate", version, about = "Conformance gate for Gateway API listener layouts on Cilium")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every case (case.yaml and its manifests) without any cluster.
    Lint {
        /// A folder of cases, or one case folder.
        #[arg(default_value = "cases")]
        dir: PathBuf,
    },
    /// Open real TLS handshakes to ADDRESS:PORT and report which certificate answers.
    Probe(ProbeArgs),
    /// Work with Envoy configuration.
    Envoy {
        #[command(subcommand)]
        command: EnvoyCommand,
    },
}

#[derive(Args)]
struct ProbeArgs {
    /// Where to connect, e.g. 172.18.255.200:443.
    address: SocketAddr,
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

#[derive(Subcommand)]
enum EnvoyCommand {
    /// Summarize a config dump (/config_dump, `cilium-dbg envoy admin config listeners`, or a
    /// CiliumEnvoyConfig) as one row per filter chain.
    Summarize {
        file: PathBuf,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // One crypto provider, chosen explicitly: a second provider pulled in by a dependency
    // would otherwise make rustls panic at the first handshake.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("LAYOUT_GATE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Lint { dir } => lint(dir),
        Command::Probe(args) => run_probe(args),
        Command::Envoy { command: EnvoyCommand::Summarize { file, json } } => summarize(file, json),
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends the command quietly instead of panicking.
fn emit(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("layout-gate: writing output: {e}");
            ExitCode::FAILURE
        }
    }
}

fn lint(dir: PathBuf) -> ExitCode {
    match layout_gate::case::lint(&dir) {
        Ok(cases) => {
            let mut text = String::new();
            for c in &cases {
                let groups: Vec<&str> = c.groups.iter().map(|g| g.range.as_str()).collect();
                text.push_str(&format!("ok  {} ({} expectation groups: {})\n", c.name, c.groups.len(), groups.join("; ")));
            }
            text.push_str(&format!("{} cases valid\n", cases.len()));
            emit(&text)
        }
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            eprintln!("{} problem(s)", problems.len());
            ExitCode::FAILURE
        }
    }
}

fn run_probe(args: ProbeArgs) -> ExitCode {
    let mut snis = Vec::new();
    for s in &args.sni {
        match Sni::new(s.to_ascii_lowercase()) {
            Ok(sni) => snis.push(Some(sni)),
            Err(e) => {
                eprintln!("layout-gate probe: --sni {s}: {e}");
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
                let spec = ProbeSpec { addr: args.address, sni, http: None };
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
    let label = args.address.to_string();
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

fn summarize(file: PathBuf, json: bool) -> ExitCode {
    match envoy_dump::summarize_path(&file) {
        Ok(summary) => {
            if json {
                emit(&format!("{:#}\n", envoy_dump::to_contract_json(&summary)))
            } else {
                emit(&envoy_dump::render_table(&summary))
            }
        }
        Err(e) => {
            eprintln!("layout-gate envoy summarize: {e}");
            ExitCode::FAILURE
        }
    }
}
