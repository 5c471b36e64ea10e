//! `layout-gate conformance --cilium V`: see `crate::conformance`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::check::{bad, pins_and_version};
use crate::conformance::{self, ConformanceError, Options};

#[derive(Debug, Clone, Args)]
pub struct ConformanceArgs {
    /// The Cilium version (default: the pins' default).
    #[arg(long, value_name = "VERSION")]
    pub cilium: Option<String>,
    /// Where report.yaml (the suite's own), suite.log, comparison.md and comparison.json go
    /// (default: conformance/<VERSION>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only this test of the suite (its `--run-test`); the others are said as not run.
    #[arg(long, value_name = "TEST")]
    pub run_test: Option<String>,
    /// Run the suite's traffic tests too, through Cilium's own agent control plane (built with
    /// `scripts/install-control-plane.sh --agent VERSION`; needs root): mesh tests and tests
    /// that need a container runtime are skipped by name. L4 routes (TCPRoute, UDPRoute), which
    /// Cilium 1.20 serves with its BPF load balancer, go through an emulated stand-in for it
    /// (l4-rules.jsonl in --out).
    #[arg(long)]
    pub traffic: bool,
    /// The pinned versions file to read instead of the one found from the current folder.
    #[arg(long, value_name = "FILE")]
    pub versions_file: Option<PathBuf>,
}

pub fn run(args: ConformanceArgs) -> ExitCode {
    let cmd = "conformance";
    let (pins, version) = match pins_and_version(cmd, args.versions_file.as_deref(), args.cilium.as_deref()) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let opts = Options {
        out: args.out.unwrap_or_else(|| PathBuf::from("conformance").join(version.to_string())),
        version,
        pins,
        run_test: args.run_test,
        traffic: args.traffic,
        settings: crate::run::Settings::from_env(&crate::lanes::operator::known_settings()),
    };
    match conformance::run(&opts) {
        Err(ConformanceError::Input(e)) => bad(cmd, &e),
        Err(ConformanceError::Run(e)) => {
            eprintln!("layout-gate {cmd}: {e}");
            ExitCode::FAILURE
        }
        Ok(done) => {
            for f in &done.files {
                eprintln!("layout-gate {cmd}: wrote {}", f.display());
            }
            let code = super::emit(&done.text);
            if code != ExitCode::SUCCESS {
                return code;
            }
            if done.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
    }
}
