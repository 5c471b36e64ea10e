//! The `layout-gate` command line: one file per subcommand.

mod case;
mod check;
mod conformance;
mod differential;
mod envoy;
mod explain;
mod lint;
mod live;
mod operator;
mod probe;
mod replay;
mod report;
pub mod run;
pub mod signals;
mod status_writer;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "layout-gate", version = VERSION, max_term_width = 100, about = "Conformance gate for Gateway API listener layouts on Cilium")]
pub struct Cli {
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
        /// The pinned versions file to read instead of the one found from the current folder.
        #[arg(long, value_name = "FILE")]
        versions_file: Option<PathBuf>,
    },
    /// Open real TLS handshakes to ADDRESS:PORT and report which certificate answers.
    Probe(probe::ProbeArgs),
    /// Work with Envoy configuration.
    Envoy {
        #[command(subcommand)]
        command: envoy::EnvoyCommand,
    },
    /// Run cases in a lane and record evidence.
    Run(Box<run::RunArgs>),
    /// Merge evidence folders into one report (Markdown for release notes, and JSON).
    Report(report::ReportArgs),
    /// Judge a kind or operator run again from its recordings, offline: trackers, summarizer, judge.
    Replay(replay::ReplayArgs),
    /// Print the pinned Cilium versions (kind-config/versions.yaml).
    Versions(report::VersionsArgs),
    /// Show the model's predicted layout for a case: Envoy listeners, chains, statuses, rules.
    Explain(explain::ExplainArgs),
    /// Predict what every pinned Cilium does with rendered manifests (a model prediction).
    Check(check::CheckArgs),
    /// Put seeded generated layouts to the model and to Cilium's own operator at each pin it can
    /// run, and compare them field class by field class (exit 1 on any disagreement).
    Differential(differential::DiffArgs),
    /// Warm control planes of the operator lane: `up` leaves one running for `run`, `check`
    /// and `differential` to use; `status`; `down`.
    Operator {
        #[command(subcommand)]
        command: operator::OperatorCommand,
    },
    /// Run the upstream Gateway API conformance suite (the version the Cilium tag's go.mod
    /// names) against Cilium's own operator at a pin, and compare with Cilium's published report.
    Conformance(conformance::ConformanceArgs),
    /// Run a second route-status writer (a stand-in for another controller, its own
    /// controllerName) beside Cilium's own operator at a pin, and say whether their entries on
    /// one route and parentRef fight (cozystack#4199).
    StatusWriter(status_writer::StatusWriterArgs),
    /// Work with cases.
    Case {
        #[command(subcommand)]
        command: case::CaseCommand,
    },
}

/// `layout-gate --version`: the crate version and the commit it was built from (embedded by
/// build.rs; "unknown commit" when built outside a git checkout).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("LAYOUT_GATE_GIT_COMMIT"), ")");

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    // One crypto provider, chosen explicitly: a second provider pulled in by a dependency
    // would otherwise make rustls panic at the first handshake.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        // kube's client logs every failed request at ERROR (`client::builder`); each is said
        // once by layout-gate's own error, with the verb, resource and server, so not twice.
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LAYOUT_GATE_LOG")
                .unwrap_or_else(|_| "warn,kube_client::client::builder=off".into()),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal: never into a pipe or a CI log.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    // `run` stops gracefully on its own (it writes the evidence of finished cases); any other
    // command stopped by a signal still removes its temporary folders on the way out.
    if !matches!(cli.command, Command::Run(_)) {
        signals::exit_on_signal("layout-gate");
    }
    match cli.command {
        Command::Lint { dir, versions_file } => {
            if let Some(f) = &versions_file {
                crate::versions::use_versions_file(f);
            }
            lint::run(dir)
        }
        Command::Probe(args) => probe::run(args),
        Command::Envoy { command } => envoy::run(command),
        Command::Run(args) => run::run(*args),
        Command::Report(args) => report::run(args),
        Command::Versions(args) => report::versions(args),
        Command::Replay(args) => replay::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Check(args) if args.live.live => live::run(args),
        Command::Check(args) => check::run(args),
        Command::Case { command } => case::run(command),
        Command::Differential(args) => differential::run(args),
        Command::Operator { command } => operator::run(command),
        Command::Conformance(args) => conformance::run(args),
        Command::StatusWriter(args) => status_writer::run(args),
    }
}

/// A whole-number flag within `LO..=HI` (a clap value parser): anything else is refused before
/// the command starts (exit 2), with the bound named, so no number from the command line sizes
/// an allocation, a semaphore or a wait beyond what the command can use.
pub(crate) fn whole_within<const LO: usize, const HI: usize>(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("{:?} is not a whole number from {LO} to {HI}", crate::term::line(s)))?;
    if !(LO..=HI).contains(&n) {
        return Err(format!("{n} is out of bounds: from {LO} to {HI}"));
    }
    Ok(n)
}

/// Writes a command's whole output; a closed pipe ends it quietly (exit 0), another write
/// error is exit 1. In `cli/`, the only place that picks exit statuses.
pub(crate) fn emit(text: &str) -> std::process::ExitCode {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "layout-gate: writing output: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: `differential --count 18446744073709551615` panicked (capacity overflow) and
    /// `--count 1000000000` aborted allocating 40 GB; `run --jobs` that large overflowed the
    /// runtime's semaphore. Every whole-number flag has a stated bound: exit 2, the bound named.
    #[test]
    fn numbers_on_the_command_line_are_bounded_and_the_bound_is_named() {
        for (args, bound) in [
            (&["differential", "--count", "18446744073709551615"][..], "from 1 to 10000"),
            (&["differential", "--count", "1000000000"][..], "from 1 to 10000"),
            (&["differential", "--count", "0"][..], "from 1 to 10000"),
            (&["differential", "--count=-1"][..], "from 1 to 10000"),
            (&["run", "--lane", "model", "--jobs", "18446744073709551615"][..], "from 1 to 256"),
            (&["operator", "up", "--idle", "18446744073709551615h"][..], "168h"),
            (&["operator", "hold", "--cilium", "1.19.6", "--idle-seconds", "18446744073709551615"][..], "1..=604800"),
        ] {
            let e = match Cli::try_parse_from(std::iter::once("layout-gate").chain(args.iter().copied())) {
                Err(e) => e,
                // `--idle` is read by the command (it names the flag); the rest by clap.
                Ok(Cli { command: Command::Operator { command: operator::OperatorCommand::Up(a) } }) => {
                    let e = operator::parse_duration(&a.idle).unwrap_err();
                    assert!(e.contains(bound), "{args:?}: {e}");
                    continue;
                }
                Ok(_) => panic!("{args:?} was taken"),
            };
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(bound), "{args:?}: {e}");
        }
        let ok = Cli::try_parse_from(["layout-gate", "differential", "--count", "10000"]);
        assert!(matches!(ok, Ok(Cli { command: Command::Differential(a) }) if a.count == 10_000));
    }
}
