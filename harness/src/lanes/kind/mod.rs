//! The kind lane: real Cilium on a kind cluster. (Being built.)

use std::process::ExitCode;

use clap::Args;

use crate::cli::run::RunArgs;

/// Options only the kind lane reads.
#[derive(Debug, Clone, Default, Args)]
pub struct KindArgs {
    /// Print every command and manifest the run would apply, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn cli_run(_args: &RunArgs) -> ExitCode {
    eprintln!("layout-gate run --lane kind: the kind lane is not built yet");
    ExitCode::FAILURE
}
